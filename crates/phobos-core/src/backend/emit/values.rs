//! Scalar values: constants, operands, arithmetic, comparisons, conversions
//! and math built-ins, for every scalar type. Run expressions are evaluated
//! element by element through the same `apply`.

use super::{Emitter, Reg, RegClass, V};
use crate::ast::{BinOp, CtxField, ScalarTy, UnOp};
use crate::backend::ir::{ExprId, ExprKind};
use crate::hir::{Builtin, ConstVal, Ty};

/// `.s32`, `.u32`, `.s64`, `.u64` for integer types (and their registers).
pub(crate) fn int_suffix(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::I8 | ScalarTy::I16 | ScalarTy::I32 => ".s32",
        ScalarTy::I64 => ".s64",
        ScalarTy::U64 => ".u64",
        ScalarTy::F32 => ".f32",
        ScalarTy::F64 => ".f64",
        _ => ".u32",
    }
}

/// The `mov` type of a register holding a value of type `t`.
pub(crate) fn mov_ty(t: ScalarTy) -> &'static str {
    RegClass::of(t).decl()
}

fn bits_suffix(t: ScalarTy) -> &'static str {
    if t.size() == 8 {
        ".b64"
    } else {
        ".b32"
    }
}

fn is_half(t: ScalarTy) -> bool {
    matches!(t, ScalarTy::F16 | ScalarTy::BF16)
}

/// The floats computed in f32: the 16-bit ones, and the 8-bit ones (which
/// are only converted: the checker refuses arithmetic on them, P0473).
fn is_narrow(t: ScalarTy) -> bool {
    is_half(t) || t.is_f8()
}

/// The PTX name of an 8-bit float pair (`cvt`'s `e4m3x2`/`e5m2x2`).
pub(crate) fn f8x2_name(t: ScalarTy) -> &'static str {
    if t == ScalarTy::F8E4M3 {
        "e4m3x2"
    } else {
        "e5m2x2"
    }
}

/// The lowest PTX ISA version with the 8-bit float conversions on
/// `sm_<arch>`: 7.8 introduced them for sm_90, 8.1 for sm_89 (ptxas 12.9:
/// "cvt with .e4m3x2/.e5m2x2 on sm_89 requires PTX ISA .version 8.1").
pub(crate) fn f8_cvt_version(arch: u32) -> u32 {
    if arch >= 90 {
        78
    } else {
        81
    }
}

/// f32 → IEEE half bits, round to nearest even.
pub(crate) fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

/// f32 → bfloat16 bits, round to nearest even.
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x40;
    }
    let r = b.wrapping_add(0x7fff + ((b >> 16) & 1));
    (r >> 16) as u16
}

impl Emitter<'_> {
    /// Text of an operand (registers, or immediates in positions that take them).
    pub(crate) fn operand(&self, v: V) -> String {
        match v {
            V::R(r) => r.to_string(),
            V::I(i, t) => {
                if t.size() == 8 || i >= 0 {
                    format!("{i}")
                } else {
                    // Negative 32-bit immediates as two's complement bits.
                    format!("{}", i as i32)
                }
            }
            V::F(x, ScalarTy::F64) => format!("0d{:016X}", x.to_bits()),
            V::F(x, _) => format!("0f{:08X}", (x as f32).to_bits()),
        }
    }

    /// Put a value of type `t` into a register of its class.
    pub(crate) fn in_reg(&mut self, v: V, t: ScalarTy) -> Reg {
        match v {
            V::R(r) => r,
            V::I(i, _) if t == ScalarTy::Bool => {
                let r = self.reg(RegClass::B32);
                self.ins(&format!("mov.u32 {r}, {};", (i != 0) as u32));
                let p = self.reg(RegClass::Pred);
                self.ins(&format!("setp.ne.u32 {p}, {r}, 0;"));
                p
            }
            V::I(i, _) if t.is_float() => self.in_reg(V::F(i as f64, t), t),
            V::F(x, _) if t.is_int() => self.in_reg(V::I(x as i128, t), t),
            V::I(i, _) => {
                let r = self.reg(RegClass::of(t));
                let imm = self.operand(V::I(i, t));
                self.ins(&format!("mov{} {r}, {imm};", bits_suffix(t)));
                r
            }
            V::F(x, _) if t.is_f8() => {
                // The constant's bits, rounded as `cvt.rn.satfinite` would
                // (the checker refused literals beyond the largest finite
                // value, P0403).
                let bits = phobos_meta::f8::encode(x, t);
                let r = self.reg(RegClass::of(t));
                self.ins(&format!("mov.b32 {r}, {bits};"));
                r
            }
            V::F(x, t2) if is_half(t) || is_half(t2) => {
                let bits = if t == ScalarTy::BF16 {
                    bf16_bits(x as f32)
                } else {
                    f16_bits(x as f32)
                };
                let r = self.reg(RegClass::B16);
                self.ins(&format!("mov.b16 {r}, 0x{bits:04X};"));
                r
            }
            V::F(x, _) => {
                let r = self.reg(RegClass::of(t));
                let imm = self.operand(V::F(x, t));
                self.ins(&format!("mov{} {r}, {imm};", mov_ty(t)));
                r
            }
        }
    }

    /// `mov` a value into an existing register.
    pub(crate) fn mov_to(&mut self, dst: Reg, v: V, t: ScalarTy) {
        let src = match v {
            V::R(r) => r,
            _ if t == ScalarTy::Bool || is_narrow(t) => self.in_reg(v, t),
            _ => {
                let imm = self.operand(match v {
                    V::I(i, _) if t.is_float() => V::F(i as f64, t),
                    V::F(x, _) if t.is_int() => V::I(x as i128, t),
                    V::I(i, _) => V::I(i, t),
                    V::F(x, _) => V::F(x, t),
                    V::R(_) => v,
                });
                self.ins(&format!("mov{} {dst}, {imm};", mov_ty(t)));
                return;
            }
        };
        if src != dst {
            self.ins(&format!("mov{} {dst}, {src};", mov_ty(t)));
        }
    }

    /// Re-extend a sub-word integer after an operation that may overflow it.
    pub(crate) fn normalize(&mut self, r: Reg, t: ScalarTy) -> Reg {
        let d = match t {
            ScalarTy::I8 | ScalarTy::I16 | ScalarTy::U8 | ScalarTy::U16 => self.reg(RegClass::B32),
            _ => return r,
        };
        match t {
            ScalarTy::I8 => self.ins(&format!("bfe.s32 {d}, {r}, 0, 8;")),
            ScalarTy::I16 => self.ins(&format!("bfe.s32 {d}, {r}, 0, 16;")),
            ScalarTy::U8 => self.ins(&format!("and.b32 {d}, {r}, 255;")),
            _ => self.ins(&format!("and.b32 {d}, {r}, 65535;")),
        }
        d
    }

    /// f16/bf16 bits (or 8-bit float bits, zero-extended in a 32-bit
    /// register) → f32, exactly.
    pub(crate) fn half_to_f32(&mut self, r: Reg, t: ScalarTy) -> Reg {
        let f = self.reg(RegClass::F32);
        if t.is_f8() {
            // PTX widens 8-bit floats only in pairs, to f16x2; the value is
            // the low byte, so its f16 is the low half.
            self.need_version(f8_cvt_version(self.arch));
            let (b, pair, lo, hi) = (
                self.reg(RegClass::B16),
                self.reg(RegClass::B32),
                self.reg(RegClass::B16),
                self.reg(RegClass::B16),
            );
            self.ins(&format!("cvt.u16.u32 {b}, {r};"));
            self.ins(&format!("cvt.rn.f16x2.{} {pair}, {b};", f8x2_name(t)));
            self.ins(&format!("mov.b32 {{{lo}, {hi}}}, {pair};"));
            self.ins(&format!("cvt.f32.f16 {f}, {lo};"));
        } else if t == ScalarTy::F16 {
            self.ins(&format!("cvt.f32.f16 {f}, {r};"));
        } else {
            let w = self.reg(RegClass::B32);
            self.ins(&format!("cvt.u32.u16 {w}, {r};"));
            self.ins(&format!("shl.b32 {w}, {w}, 16;"));
            self.ins(&format!("mov.b32 {f}, {w};"));
        }
        f
    }

    /// f32 → f16/bf16 bits, round to nearest even; to 8-bit float bits
    /// (zero-extended in a 32-bit register) with PTX's saturation.
    pub(crate) fn f32_to_half(&mut self, f: Reg, t: ScalarTy) -> Reg {
        if t.is_f8() {
            // `cvt ... d, a, b` puts `a` in the high byte and `b` in the
            // low one; the value goes in both and the high byte is dropped.
            self.need_version(f8_cvt_version(self.arch));
            let (pair, w, d) = (
                self.reg(RegClass::B16),
                self.reg(RegClass::B32),
                self.reg(RegClass::B32),
            );
            self.ins(&format!(
                "cvt.rn.satfinite.{}.f32 {pair}, {f}, {f};",
                f8x2_name(t)
            ));
            self.ins(&format!("cvt.u32.u16 {w}, {pair};"));
            self.ins(&format!("and.b32 {d}, {w}, 255;"));
            return d;
        }
        let h = self.reg(RegClass::B16);
        if t == ScalarTy::F16 {
            self.ins(&format!("cvt.rn.f16.f32 {h}, {f};"));
        } else if self.arch >= 80 {
            self.ins(&format!("cvt.rn.bf16.f32 {h}, {f};"));
        } else {
            // sm_75 has no bf16 conversion: round to nearest even by hand.
            let (b, t1, r, nan) = (
                self.reg(RegClass::B32),
                self.reg(RegClass::B32),
                self.reg(RegClass::B32),
                self.reg(RegClass::Pred),
            );
            self.ins(&format!("mov.b32 {b}, {f};"));
            self.ins(&format!("shr.u32 {t1}, {b}, 16;"));
            self.ins(&format!("and.b32 {t1}, {t1}, 1;"));
            self.ins(&format!("add.u32 {t1}, {t1}, 32767;"));
            self.ins(&format!("add.u32 {r}, {b}, {t1};"));
            self.ins(&format!("shr.u32 {r}, {r}, 16;"));
            self.ins(&format!("setp.nan.f32 {nan}, {f}, {f};"));
            self.ins(&format!("selp.b32 {r}, 32704, {r}, {nan};"));
            self.ins(&format!("cvt.u16.u32 {h}, {r};"));
        }
        h
    }

    /// A float value as f32 (or f64) for computing; half types go to f32.
    fn float_in(&mut self, v: V, t: ScalarTy) -> (Reg, ScalarTy) {
        let r = self.in_reg(v, t);
        if is_narrow(t) {
            (self.half_to_f32(r, t), ScalarTy::F32)
        } else {
            (r, t)
        }
    }

    fn float_in_operand(&mut self, v: V, t: ScalarTy) -> (String, ScalarTy) {
        match v {
            V::F(x, _) if !is_narrow(t) => (self.operand(V::F(x, t)), t),
            V::I(i, _) if !is_narrow(t) => (self.operand(V::F(i as f64, t)), t),
            _ => {
                let (r, ct) = self.float_in(v, t);
                (r.to_string(), ct)
            }
        }
    }

    fn float_out(&mut self, r: Reg, t: ScalarTy) -> V {
        if is_narrow(t) {
            V::R(self.f32_to_half(r, t))
        } else {
            V::R(r)
        }
    }

    pub(crate) fn scalar_expr(&mut self, e: ExprId) -> V {
        let t = self.ty(e);
        let span = self.f.expr_span(e);
        self.loc(span);
        match &self.f.exprs[e].kind {
            ExprKind::Const(ConstVal::Int(v)) => V::I(*v, t),
            ExprKind::Const(ConstVal::Float(x)) => V::F(*x, t),
            ExprKind::Const(ConstVal::Bool(b)) => {
                V::R(self.in_reg(V::I(*b as i128, t), ScalarTy::Bool))
            }
            ExprKind::Var(v) => V::R(self.var_reg(*v)),
            ExprKind::Param(p) => match self.params[p.0 as usize] {
                Some(r) => V::R(r),
                None => V::I(0, t),
            },
            // Lowering made a constant dim a literal, so a `Dim` reads a
            // `.param` the prologue loaded (`verify` checks it).
            ExprKind::Dim(d) => {
                V::R(self.dims[d.0 as usize].expect("verify: a `Dim` expression reads a `.param`"))
            }
            ExprKind::Ctx(c) => self.ctx(*c),
            // The checker puts the right side under the left side's control
            // (a lane collective or shuffle there has a warp-uniform guard,
            // and CTA collectives are refused), so the branch is safe.
            ExprKind::Binary(op @ (BinOp::And | BinOp::Or), a, b) if self.f.reads_memory(*b) => {
                self.short_circuit(*op, *a, *b)
            }
            ExprKind::Unary(..)
            | ExprKind::Binary(..)
            | ExprKind::Convert(_)
            | ExprKind::Builtin(..) => {
                let args: Vec<V> = self
                    .f
                    .operands(e)
                    .into_iter()
                    .map(|o| self.scalar_expr(o))
                    .collect();
                self.loc(span);
                self.apply(e, &args)
            }
            ExprKind::Load(acc) => self.load_point(*acc),
            ExprKind::RunLoad(_) | ExprKind::RunVars(_) => {
                // A run where a scalar is expected: only one-element runs.
                let elems = self.run_elems(e);
                elems.first().copied().unwrap_or(V::I(0, t))
            }
            ExprKind::RunSum(inner) => {
                let elems = self.run_elems(*inner);
                self.loc(span);
                self.fold_sum(&elems, t)
            }
            ExprKind::Dp4aSum { a, b } => self.dp4a_sum(*a, *b),
            ExprKind::Elem(run, i) => {
                let elems = self.run_elems(*run);
                elems.get(*i as usize).copied().unwrap_or(V::I(0, t))
            }
            ExprKind::Word(run, i) => {
                let words = self.run_words(*run);
                words
                    .get(*i as usize)
                    .map(|r| V::R(*r))
                    .unwrap_or(V::I(0, t))
            }
            ExprKind::LaneColl { .. } => self.lane_collective(e),
            ExprKind::Shuffle { .. } => self.shuffle(e),
        }
    }

    pub(crate) fn ctx(&mut self, c: CtxField) -> V {
        let special = match c {
            CtxField::Thread => return V::R(self.tid),
            CtxField::Lane => return V::R(self.lane),
            CtxField::Warp => return V::R(self.warp),
            CtxField::Lanes => return V::I(32, ScalarTy::I32),
            CtxField::Threads => return V::I(self.f.threads as i128, ScalarTy::I32),
            CtxField::Warps => return V::I((self.f.threads / 32) as i128, ScalarTy::I32),
            CtxField::BlockX => "%ctaid.x",
            CtxField::BlockY => "%ctaid.y",
            CtxField::BlockZ => "%ctaid.z",
            CtxField::GridX => "%nctaid.x",
            CtxField::GridY => "%nctaid.y",
            CtxField::GridZ => "%nctaid.z",
        };
        let r = self.reg(RegClass::B32);
        self.ins(&format!("mov.u32 {r}, {special};"));
        V::R(r)
    }

    /// `a && b` / `a || b` where `b` reads memory: `b` only runs when needed.
    fn short_circuit(&mut self, op: BinOp, a: ExprId, b: ExprId) -> V {
        let av = self.scalar_expr(a);
        let pa = self.in_reg(av, ScalarTy::Bool);
        let out = self.reg(RegClass::Pred);
        self.ins(&format!("mov.pred {out}, {pa};"));
        let skip = self.label("sc");
        let guard = if op == BinOp::And { "!" } else { "" };
        self.ins(&format!("@{guard}{pa} bra {skip};"));
        let bv = self.scalar_expr(b);
        let pb = self.in_reg(bv, ScalarTy::Bool);
        self.ins(&format!("mov.pred {out}, {pb};"));
        self.place_label(&skip);
        V::R(out)
    }

    /// Apply the operation of `e` (unary, binary, conversion or built-in) to
    /// evaluated operands. Used for scalars and for each element of a run.
    pub(crate) fn apply(&mut self, e: ExprId, args: &[V]) -> V {
        let t = self.ty(e);
        let ops = self.f.operands(e);
        let ot = |i: usize, s: &Self| s.ty(ops[i]);
        match &self.f.exprs[e].kind {
            ExprKind::Unary(op, _) => self.unary(*op, t, args[0]),
            ExprKind::Binary(op, _, _) => self.binary(*op, ot(0, self), t, args[0], args[1]),
            ExprKind::Convert(_) => self.convert(args[0], ot(0, self), t),
            ExprKind::Builtin(b, _) => {
                let tys: Vec<ScalarTy> = (0..ops.len()).map(|i| ot(i, self)).collect();
                self.builtin(*b, t, &tys, args)
            }
            _ => args.first().copied().unwrap_or(V::I(0, t)),
        }
    }

    pub(crate) fn unary(&mut self, op: UnOp, t: ScalarTy, a: V) -> V {
        match (op, t) {
            (UnOp::Not, ScalarTy::Bool) => {
                let p = self.in_reg(a, t);
                let d = self.reg(RegClass::Pred);
                self.ins(&format!("not.pred {d}, {p};"));
                V::R(d)
            }
            (UnOp::Not, _) => {
                let r = self.in_reg(a, t);
                let d = self.reg(RegClass::of(t));
                self.ins(&format!("not{} {d}, {r};", bits_suffix(t)));
                V::R(self.normalize(d, t))
            }
            (UnOp::Neg, _) if t.is_float() => {
                let (r, ct) = self.float_in(a, t);
                let d = self.reg(RegClass::of(ct));
                self.ins(&format!("neg{} {d}, {r};", int_suffix(ct)));
                self.float_out(d, t)
            }
            (UnOp::Neg, _) => {
                let r = self.in_reg(a, t);
                let d = self.reg(RegClass::of(t));
                let s = if t.size() == 8 { ".s64" } else { ".s32" };
                self.ins(&format!("neg{s} {d}, {r};"));
                V::R(self.normalize(d, t))
            }
        }
    }

    /// A binary operation on operands of type `t` with result type `rt`.
    pub(crate) fn binary(&mut self, op: BinOp, t: ScalarTy, rt: ScalarTy, a: V, b: V) -> V {
        if t == ScalarTy::Bool {
            return self.bool_binary(op, a, b);
        }
        if let Some(cmp) = cmp_name(op, t) {
            let p = self.reg(RegClass::Pred);
            if t.is_float() {
                let (ra, ct) = self.float_in(a, t);
                let (rb, _) = self.float_in_operand(b, t);
                self.ins(&format!("setp.{cmp}{} {p}, {ra}, {rb};", int_suffix(ct)));
            } else {
                let ra = self.in_reg(a, t);
                let rb = self.operand(b);
                self.ins(&format!("setp.{cmp}{} {p}, {ra}, {rb};", int_suffix(t)));
            }
            return V::R(p);
        }
        if t.is_float() {
            let (ra, ct) = self.float_in(a, t);
            let (rb, _) = self.float_in_operand(b, t);
            let sfx = int_suffix(ct);
            let d = self.reg(RegClass::of(ct));
            match op {
                BinOp::Add => self.ins(&format!("add{sfx} {d}, {ra}, {rb};")),
                BinOp::Sub => self.ins(&format!("sub{sfx} {d}, {ra}, {rb};")),
                BinOp::Mul => self.ins(&format!("mul{sfx} {d}, {ra}, {rb};")),
                BinOp::Div => self.ins(&format!("div.rn{sfx} {d}, {ra}, {rb};")),
                _ => {
                    // Remainder with the sign of the dividend: a - trunc(a / b) * b.
                    let q = self.reg(RegClass::of(ct));
                    self.ins(&format!("div.rn{sfx} {q}, {ra}, {rb};"));
                    self.ins(&format!("cvt.rzi{sfx}{sfx} {q}, {q};"));
                    self.ins(&format!("neg{sfx} {q}, {q};"));
                    self.ins(&format!("fma.rn{sfx} {d}, {q}, {rb}, {ra};"));
                }
            }
            return self.float_out(d, rt);
        }
        if matches!(
            (op, b),
            (
                BinOp::Add | BinOp::Sub | BinOp::Shl | BinOp::Shr | BinOp::BitOr | BinOp::BitXor,
                V::I(0, _)
            )
        ) {
            return a;
        }
        let ra = self.in_reg(a, t);
        let sfx = int_suffix(t);
        let bits = bits_suffix(t);
        let d = self.reg(RegClass::of(t));
        if matches!(op, BinOp::Div | BinOp::Rem) {
            self.int_divrem(op == BinOp::Rem, sfx, d, ra, b);
            return V::R(self.normalize(d, t));
        }
        let rb = match (op, b) {
            // Shift amounts are always .u32.
            (BinOp::Shl | BinOp::Shr, V::R(r)) if r.class == RegClass::B64 => {
                let c = self.reg(RegClass::B32);
                self.ins(&format!("cvt.u32.u64 {c}, {r};"));
                c.to_string()
            }
            _ => self.operand(b),
        };
        let text = match op {
            BinOp::Add => format!("add{sfx} {d}, {ra}, {rb};"),
            BinOp::Sub => format!("sub{sfx} {d}, {ra}, {rb};"),
            BinOp::Mul => format!("mul.lo{sfx} {d}, {ra}, {rb};"),
            BinOp::BitAnd => format!("and{bits} {d}, {ra}, {rb};"),
            BinOp::BitOr => format!("or{bits} {d}, {ra}, {rb};"),
            BinOp::BitXor => format!("xor{bits} {d}, {ra}, {rb};"),
            BinOp::Shl => format!("shl{bits} {d}, {ra}, {rb};"),
            BinOp::Shr => format!("shr{sfx} {d}, {ra}, {rb};"),
            _ => format!("mov{bits} {d}, {ra};"),
        };
        self.ins(&text);
        V::R(self.normalize(d, t))
    }

    fn bool_binary(&mut self, op: BinOp, a: V, b: V) -> V {
        let pa = self.in_reg(a, ScalarTy::Bool);
        let pb = self.in_reg(b, ScalarTy::Bool);
        let d = self.reg(RegClass::Pred);
        match op {
            BinOp::And | BinOp::BitAnd => self.ins(&format!("and.pred {d}, {pa}, {pb};")),
            BinOp::Or | BinOp::BitOr => self.ins(&format!("or.pred {d}, {pa}, {pb};")),
            BinOp::Ne | BinOp::BitXor => self.ins(&format!("xor.pred {d}, {pa}, {pb};")),
            _ => {
                self.ins(&format!("xor.pred {d}, {pa}, {pb};"));
                self.ins(&format!("not.pred {d}, {d};"));
            }
        }
        V::R(d)
    }

    /// Convert a value of type `from` to type `to`.
    pub(crate) fn convert(&mut self, v: V, from: ScalarTy, to: ScalarTy) -> V {
        if from == to {
            return v;
        }
        if let (V::I(i, _), true) = (v, to.is_int()) {
            if from.is_int() {
                return V::I(wrap_to(i, to), to);
            }
        }
        if from == ScalarTy::Bool {
            let p = self.in_reg(v, from);
            if to.is_float() {
                let f = self.reg(RegClass::F32);
                self.ins(&format!("selp.f32 {f}, 0f3F800000, 0f00000000, {p};"));
                return self.convert(V::R(f), ScalarTy::F32, to);
            }
            let d = self.reg(RegClass::of(to));
            self.ins(&format!("selp{} {d}, 1, 0, {p};", bits_suffix(to)));
            return V::R(d);
        }
        if to == ScalarTy::Bool {
            let d = self.reg(RegClass::Pred);
            if from.is_float() {
                let (r, ct) = self.float_in(v, from);
                let zero = self.operand(V::F(0.0, ct));
                self.ins(&format!("setp.neu{} {d}, {r}, {zero};", int_suffix(ct)));
            } else {
                let r = self.in_reg(v, from);
                self.ins(&format!("setp.ne{} {d}, {r}, 0;", bits_suffix(from)));
            }
            return V::R(d);
        }
        if from.is_int() && to.is_int() {
            let r = self.in_reg(v, from);
            return V::R(match (from.size() == 8, to.size() == 8) {
                (false, false) => self.normalize(r, to),
                (false, true) => {
                    let d = self.reg(RegClass::B64);
                    let s = if from.is_signed() { "s" } else { "u" };
                    self.ins(&format!("cvt.{s}64.{s}32 {d}, {r};"));
                    d
                }
                (true, false) => {
                    let d = self.reg(RegClass::B32);
                    self.ins(&format!("cvt.u32.u64 {d}, {r};"));
                    self.normalize(d, to)
                }
                (true, true) => r,
            });
        }
        if from.is_int() {
            let r = self.in_reg(v, from);
            let (ft, fsfx) = if to == ScalarTy::F64 {
                (ScalarTy::F64, "f64")
            } else {
                (ScalarTy::F32, "f32")
            };
            let d = self.reg(RegClass::of(ft));
            let src = &int_suffix(from)[1..];
            self.ins(&format!("cvt.rn.{fsfx}.{src} {d}, {r};"));
            return self.float_out(d, to);
        }
        if to.is_int() {
            let (r, ct) = self.float_in(v, from);
            let wide = to.size() == 8;
            let dst = if wide {
                &int_suffix(to)[1..]
            } else if to.is_signed() {
                "s32"
            } else {
                "u32"
            };
            let d = self.reg(if wide { RegClass::B64 } else { RegClass::B32 });
            self.ins(&format!("cvt.rzi.{dst}{} {d}, {r};", int_suffix(ct)));
            return V::R(self.normalize(d, to));
        }
        // Float to float.
        let (r, ct) = self.float_in(v, from);
        match (ct, to) {
            (ScalarTy::F32, ScalarTy::F64) => {
                let d = self.reg(RegClass::F64);
                self.ins(&format!("cvt.f64.f32 {d}, {r};"));
                V::R(d)
            }
            (ScalarTy::F64, _) => {
                let d = self.reg(RegClass::F32);
                self.ins(&format!("cvt.rn.f32.f64 {d}, {r};"));
                self.float_out(d, to)
            }
            _ => self.float_out(r, to),
        }
    }

    /// Sum the elements of a run in order: ((e0 + e1) + e2) + ...
    pub(crate) fn fold_sum(&mut self, elems: &[V], t: ScalarTy) -> V {
        let mut acc = match elems.first() {
            Some(v) => *v,
            None => return V::I(0, t),
        };
        for v in &elems[1..] {
            acc = self.binary(BinOp::Add, t, t, acc, *v);
        }
        acc
    }

    /// Evaluate a run expression element by element.
    pub(crate) fn run_elems(&mut self, e: ExprId) -> Vec<V> {
        let len = match self.f.exprs[e].ty {
            Ty::Run { len, .. } => len as usize,
            _ => 1,
        };
        let t = self.ty(e);
        match &self.f.exprs[e].kind {
            ExprKind::RunLoad(acc) => self.load_run_elems(*acc),
            ExprKind::RunVars(vs) => vs.iter().map(|v| V::R(self.var_reg(*v))).collect(),
            ExprKind::Unary(..)
            | ExprKind::Binary(..)
            | ExprKind::Convert(_)
            | ExprKind::Builtin(..) => {
                let ops = self.f.operands(e);
                let cols: Vec<Vec<V>> = ops
                    .iter()
                    .map(|&o| {
                        if matches!(self.f.exprs[o].ty, Ty::Run { .. }) {
                            self.run_elems(o)
                        } else {
                            vec![self.scalar_expr(o)]
                        }
                    })
                    .collect();
                self.loc(self.f.expr_span(e));
                (0..len)
                    .map(|i| {
                        let args: Vec<V> = cols
                            .iter()
                            .map(|c| if c.len() == 1 { c[0] } else { c[i] })
                            .collect();
                        self.apply(e, &args)
                    })
                    .collect()
            }
            _ => {
                let v = self.scalar_expr(e);
                let _ = t;
                vec![v; len]
            }
        }
    }

    /// A built-in on values already computed; `tys` are the arguments'
    /// types (the first decides the instruction's type).
    pub(super) fn builtin(&mut self, b: Builtin, t: ScalarTy, tys: &[ScalarTy], args: &[V]) -> V {
        let at = tys.first().copied().unwrap_or(t);
        match b {
            Builtin::Min | Builtin::Max => {
                let name = if b == Builtin::Min { "min" } else { "max" };
                if at.is_float() {
                    let (ra, ct) = self.float_in(args[0], at);
                    let (rb, _) = self.float_in_operand(args[1], at);
                    let d = self.reg(RegClass::of(ct));
                    self.ins(&format!("{name}{} {d}, {ra}, {rb};", int_suffix(ct)));
                    self.float_out(d, t)
                } else {
                    let ra = self.in_reg(args[0], at);
                    let rb = self.operand(args[1]);
                    let d = self.reg(RegClass::of(at));
                    self.ins(&format!("{name}{} {d}, {ra}, {rb};", int_suffix(at)));
                    V::R(d)
                }
            }
            Builtin::Abs => {
                if at.is_float() {
                    let (r, ct) = self.float_in(args[0], at);
                    let d = self.reg(RegClass::of(ct));
                    self.ins(&format!("abs{} {d}, {r};", int_suffix(ct)));
                    self.float_out(d, t)
                } else if !at.is_signed() {
                    args[0]
                } else {
                    let r = self.in_reg(args[0], at);
                    let d = self.reg(RegClass::of(at));
                    let s = if at.size() == 8 { ".s64" } else { ".s32" };
                    self.ins(&format!("abs{s} {d}, {r};"));
                    V::R(self.normalize(d, at))
                }
            }
            Builtin::Fma => {
                if at.is_float() {
                    let (ra, ct) = self.float_in(args[0], at);
                    let (rb, _) = self.float_in(args[1], at);
                    let (rc, _) = self.float_in(args[2], at);
                    let d = self.reg(RegClass::of(ct));
                    self.ins(&format!("fma.rn{} {d}, {ra}, {rb}, {rc};", int_suffix(ct)));
                    self.float_out(d, t)
                } else {
                    let ra = self.in_reg(args[0], at);
                    let rb = self.in_reg(args[1], at);
                    let rc = self.in_reg(args[2], at);
                    let d = self.reg(RegClass::of(at));
                    self.ins(&format!("mad.lo{} {d}, {ra}, {rb}, {rc};", int_suffix(at)));
                    V::R(self.normalize(d, at))
                }
            }
            Builtin::Select => {
                let c = self.in_reg(args[0], ScalarTy::Bool);
                let vt = tys.get(1).copied().unwrap_or(t);
                self.select(vt, c, args[1], args[2])
            }
            Builtin::Cdiv => {
                let a = self.in_reg(args[0], at);
                let b_v = args[1];
                let bb = self.in_reg(args[1], at);
                let sfx = int_suffix(at);
                // q + (q * b != a): the true ceiling for every a >= 0,
                // b > 0 of the type, as consteval::cdiv gives it.
                // `(a + b - 1) / b` wraps near the top of the width.
                let rc = RegClass::of(at);
                let (q, m, one, d) = (self.reg(rc), self.reg(rc), self.reg(rc), self.reg(rc));
                let p = self.reg(RegClass::Pred);
                self.int_divrem(false, sfx, q, a, b_v);
                self.ins(&format!("mul.lo{sfx} {m}, {q}, {bb};"));
                self.ins(&format!("setp.ne{sfx} {p}, {m}, {a};"));
                self.ins(&format!("selp{sfx} {one}, 1, 0, {p};"));
                self.ins(&format!("add{sfx} {d}, {q}, {one};"));
                V::R(d)
            }
            Builtin::Dp4a => {
                let a = self.in_reg(args[0], tys[0]);
                let bb = self.operand(args[1]);
                let c = self.operand(args[2]);
                let sa = if tys[0].is_signed() { "s32" } else { "u32" };
                let sb = if tys[1].is_signed() { "s32" } else { "u32" };
                let d = self.reg(RegClass::B32);
                self.ins(&format!("dp4a.{sa}.{sb} {d}, {a}, {bb}, {c};"));
                V::R(d)
            }
            Builtin::Byteperm => {
                let a = self.in_reg(args[0], tys[0]);
                let bb = self.in_reg(args[1], tys[1]);
                let sel = self.operand(args[2]);
                let d = self.reg(RegClass::B32);
                self.ins(&format!("prmt.b32 {d}, {a}, {bb}, {sel};"));
                V::R(d)
            }
            Builtin::Popcount => {
                let mut a = self.in_reg(args[0], at);
                // Narrow integers live sign-extended in 32-bit registers:
                // count only the type's own bits.
                if at.size() < 4 {
                    let m = self.reg(RegClass::B32);
                    let mask = (1u32 << (8 * at.size())) - 1;
                    self.ins(&format!("and.b32 {m}, {a}, {mask};"));
                    a = m;
                }
                let d = self.reg(RegClass::B32);
                self.ins(&format!("popc{} {d}, {a};", bits_suffix(at)));
                V::R(d)
            }
            _ => self.math(b, t, at, args[0]),
        }
    }

    /// Transcendental and rounding built-ins on floats. f64 goes through the
    /// f32 approximations except where PTX has an exact f64 instruction.
    fn math(&mut self, b: Builtin, t: ScalarTy, at: ScalarTy, a: V) -> V {
        let (r, ct) = self.float_in(a, at);
        let sfx = int_suffix(ct);
        let d = self.reg(RegClass::of(ct));
        match b {
            Builtin::Sqrt => self.ins(&format!("sqrt.rn{sfx} {d}, {r};")),
            Builtin::Floor => self.ins(&format!("cvt.rmi{sfx}{sfx} {d}, {r};")),
            Builtin::Ceil => self.ins(&format!("cvt.rpi{sfx}{sfx} {d}, {r};")),
            Builtin::Rsqrt if ct == ScalarTy::F64 => {
                self.ins(&format!("sqrt.rn.f64 {d}, {r};"));
                self.ins(&format!("rcp.rn.f64 {d}, {d};"));
            }
            _ => {
                // Through f32 for f64 operands.
                let x = if ct == ScalarTy::F64 {
                    let x = self.reg(RegClass::F32);
                    self.ins(&format!("cvt.rn.f32.f64 {x}, {r};"));
                    x
                } else {
                    r
                };
                let y = self.reg(RegClass::F32);
                match b {
                    Builtin::Rsqrt => self.ins(&format!("rsqrt.approx.f32 {y}, {x};")),
                    Builtin::Exp2 => self.ins(&format!("ex2.approx.f32 {y}, {x};")),
                    Builtin::Exp => {
                        self.ins(&format!("mul.f32 {y}, {x}, 0f3FB8AA3B;"));
                        self.ins(&format!("ex2.approx.f32 {y}, {y};"));
                    }
                    Builtin::Log2 => self.log(y, x, true),
                    Builtin::Log => self.log(y, x, false),
                    Builtin::Sin => self.sin_cos(y, x, false),
                    Builtin::Cos => self.sin_cos(y, x, true),
                    _ => self.tanh(y, x),
                }
                if ct == ScalarTy::F64 {
                    self.ins(&format!("cvt.f64.f32 {d}, {y};"));
                } else {
                    return self.float_out(y, t);
                }
            }
        }
        self.float_out(d, t)
    }
}

impl Emitter<'_> {
    /// `N` fresh registers of one class.
    fn regs<const N: usize>(&mut self, class: RegClass) -> [Reg; N] {
        std::array::from_fn(|_| self.reg(class))
    }

    /// `c ? a : b` for a value of any type: `selp`, or predicate logic
    /// for `bool` (PTX has no `selp.pred`).
    pub(super) fn select(&mut self, t: ScalarTy, c: Reg, a: V, b: V) -> V {
        if t == ScalarTy::Bool {
            let (pa, pb) = (self.in_reg(a, t), self.in_reg(b, t));
            let [x, y, d] = self.regs(RegClass::Pred);
            self.ins(&format!("and.pred {x}, {c}, {pa};"));
            self.ins(&format!("not.pred {y}, {c};"));
            self.ins(&format!("and.pred {y}, {y}, {pb};"));
            self.ins(&format!("or.pred {d}, {x}, {y};"));
            return V::R(d);
        }
        let (ra, rb) = (self.in_reg(a, t), self.in_reg(b, t));
        let d = self.reg(RegClass::of(t));
        let sfx = match d.class {
            RegClass::B16 => ".b16",
            RegClass::B64 => ".b64",
            RegClass::F32 => ".f32",
            RegClass::F64 => ".f64",
            _ => ".b32",
        };
        self.ins(&format!("selp{sfx} {d}, {ra}, {rb}, {c};"));
        V::R(d)
    }

    /// `y = c[0] x^n + c[1] x^(n-1) + ... + c[n]` in f32 by Horner's rule,
    /// one `fma.rn` a coefficient after the first two; the coefficients
    /// are PTX f32 literals, highest power first (at least two).
    fn horner(&mut self, y: Reg, x: Reg, coefficients: &[&str]) {
        let [top, next, rest @ ..] = coefficients else {
            unreachable!("a polynomial of degree 0");
        };
        self.ins(&format!("fma.rn.f32 {y}, {x}, {top}, {next};"));
        for c in rest {
            self.ins(&format!("fma.rn.f32 {y}, {x}, {y}, {c};"));
        }
    }

    /// `y = ln(x)` (or `log2(x)` with `base2`) in f32, accurate to a few
    /// ulp: `lg2.approx.f32` is only good to 2^-22 absolute on (0.5, 2)
    /// (PTX ISA 9.7.3.20), which is no relative accuracy at all near x = 1.
    /// x = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), by
    /// its odd series to s^9 (|s| <= 0.172: the next term is below 4e-10).
    /// Zero, negative, subnormal, infinite and NaN inputs take `lg2.approx`,
    /// which gives -inf, NaN, and (subnormals) a result of large magnitude
    /// whose relative error is tiny.
    fn log(&mut self, y: Reg, x: Reg, base2: bool) {
        let [m, ef, s, s2, poly, exact, rough] = self.regs(RegClass::F32);
        let [bits, e] = self.regs(RegClass::B32);
        let [big, normal, upper] = self.regs(RegClass::Pred);
        self.ins(&format!("mov.b32 {bits}, {x};"));
        self.ins(&format!("shr.u32 {e}, {bits}, 23;"));
        self.ins(&format!("and.b32 {e}, {e}, 255;"));
        self.ins(&format!("and.b32 {bits}, {bits}, 8388607;"));
        self.ins(&format!("or.b32 {bits}, {bits}, 1065353216;"));
        self.ins(&format!("mov.b32 {m}, {bits};"));
        self.ins(&format!("setp.gt.f32 {big}, {m}, 0f3FB504F3;"));
        self.ins(&format!("@{big} mul.f32 {m}, {m}, 0f3F000000;"));
        self.ins(&format!("@{big} add.s32 {e}, {e}, 1;"));
        self.ins(&format!("sub.s32 {e}, {e}, 127;"));
        self.ins(&format!("cvt.rn.f32.s32 {ef}, {e};"));
        self.ins(&format!("sub.f32 {s}, {m}, 0f3F800000;"));
        self.ins(&format!("add.f32 {m}, {m}, 0f3F800000;"));
        self.ins(&format!("div.rn.f32 {s}, {s}, {m};"));
        self.ins(&format!("mul.f32 {s2}, {s}, {s};"));
        self.horner(
            poly,
            s2,
            &[
                "0f3E638E39",
                "0f3E924925",
                "0f3ECCCCCD",
                "0f3F2AAAAB",
                "0f40000000",
            ],
        );
        self.ins(&format!("mul.f32 {poly}, {s}, {poly};"));
        self.ins(&format!("fma.rn.f32 {exact}, {ef}, 0f3F317218, {poly};"));
        self.ins(&format!("lg2.approx.f32 {rough}, {x};"));
        if base2 {
            self.ins(&format!("mul.f32 {exact}, {exact}, 0f3FB8AA3B;"));
        } else {
            self.ins(&format!("mul.f32 {rough}, {rough}, 0f3F317218;"));
        }
        self.ins(&format!("setp.ge.f32 {normal}, {x}, 0f00800000;"));
        self.ins(&format!("setp.lt.f32 {upper}, {x}, 0f7F800000;"));
        self.ins(&format!("and.pred {normal}, {normal}, {upper};"));
        self.ins(&format!("selp.f32 {y}, {exact}, {rough}, {normal};"));
    }

    /// `y = sin(x)` (or `cos(x)`) in f32, accurate to about 1e-7 relative
    /// for |x| < 1e5: `sin.approx.f32` is good to only 2^-20.5 absolute on
    /// [-2 pi, 2 pi], 2^-14.7 up to 100 pi and nothing stated beyond (PTX
    /// ISA 9.7.3.18). Cody-Waite reduction by pi/2 in three parts
    /// (exact products inside `fma`), then the Taylor series of sin (to r^9)
    /// and cos (to r^10) on |r| <= pi/4, picked and signed by the quadrant.
    /// Larger |x|, infinities and NaN take the `.approx` instruction.
    fn sin_cos(&mut self, y: Reg, x: Reg, cos: bool) {
        let [kf, r, r2, sn, cs, v, rough] = self.regs(RegClass::F32);
        let [k, q] = self.regs(RegClass::B32);
        let [odd, neg, small] = self.regs(RegClass::Pred);
        self.ins(&format!("mul.f32 {kf}, {x}, 0f3F22F983;"));
        self.ins(&format!("cvt.rni.f32.f32 {kf}, {kf};"));
        self.ins(&format!("fma.rn.f32 {r}, {kf}, 0fBFC90FDA, {x};"));
        self.ins(&format!("fma.rn.f32 {r}, {kf}, 0fB3A22168, {r};"));
        self.ins(&format!("fma.rn.f32 {r}, {kf}, 0fA7C234C4, {r};"));
        self.ins(&format!("cvt.rzi.s32.f32 {k}, {kf};"));
        self.ins(&format!("mul.f32 {r2}, {r}, {r};"));
        self.horner(
            sn,
            r2,
            &["0f3638EF1D", "0fB9500D01", "0f3C088889", "0fBE2AAAAB"],
        );
        self.ins(&format!("mul.f32 {sn}, {sn}, {r2};"));
        self.ins(&format!("fma.rn.f32 {sn}, {sn}, {r}, {r};"));
        self.horner(
            cs,
            r2,
            &[
                "0fB493F27E",
                "0f37D00D01",
                "0fBAB60B61",
                "0f3D2AAAAB",
                "0fBF000000",
                "0f3F800000",
            ],
        );
        // Quadrant q: sin(x) is sin r, cos r, -sin r, -cos r for q = 0..3;
        // cos(x) is sin(x + pi/2), one quadrant on.
        if cos {
            self.ins(&format!("add.s32 {k}, {k}, 1;"));
        }
        self.ins(&format!("and.b32 {q}, {k}, 1;"));
        self.ins(&format!("setp.ne.u32 {odd}, {q}, 0;"));
        self.ins(&format!("selp.f32 {v}, {cs}, {sn}, {odd};"));
        self.ins(&format!("and.b32 {q}, {k}, 2;"));
        self.ins(&format!("setp.ne.u32 {neg}, {q}, 0;"));
        self.ins(&format!("@{neg} neg.f32 {v}, {v};"));
        let approx = if cos { "cos" } else { "sin" };
        self.ins(&format!("{approx}.approx.f32 {rough}, {x};"));
        self.ins(&format!("abs.f32 {r}, {x};"));
        self.ins(&format!("setp.lt.f32 {small}, {r}, 0f47C35000;"));
        self.ins(&format!("selp.f32 {y}, {v}, {rough}, {small};"));
    }

    /// `y = tanh(x)` in f32, accurate to about 1e-6 relative: PTX's
    /// `tanh.approx.f32` is only good to 2^-11. For |x| < 0.125 the odd
    /// Taylor series to x^9 (the next term is below 1e-11 relative); above,
    /// 1 - 2 / (e^(2|x|) + 1) with the sign of x (e^(2|x|) overflowing to
    /// infinity gives exactly 1).
    fn tanh(&mut self, y: Reg, x: Reg) {
        let [a, big, x2, poly, small] = self.regs(RegClass::F32);
        let [bits, sign] = self.regs(RegClass::B32);
        let p = self.reg(RegClass::Pred);
        self.ins(&format!("abs.f32 {a}, {x};"));
        self.ins(&format!("mul.f32 {big}, {a}, 0f4038AA3B;"));
        self.ins(&format!("ex2.approx.f32 {big}, {big};"));
        self.ins(&format!("add.f32 {big}, {big}, 0f3F800000;"));
        self.ins(&format!("rcp.rn.f32 {big}, {big};"));
        self.ins(&format!("fma.rn.f32 {big}, {big}, 0fC0000000, 0f3F800000;"));
        self.ins(&format!("mov.b32 {bits}, {big};"));
        self.ins(&format!("mov.b32 {sign}, {x};"));
        self.ins(&format!("and.b32 {sign}, {sign}, -2147483648;"));
        self.ins(&format!("or.b32 {bits}, {bits}, {sign};"));
        self.ins(&format!("mov.b32 {big}, {bits};"));
        self.ins(&format!("mul.f32 {x2}, {x}, {x};"));
        self.horner(
            poly,
            x2,
            &["0f3CB327A4", "0fBD5D0DD1", "0f3E088889", "0fBEAAAAAB"],
        );
        self.ins(&format!("mul.f32 {small}, {x2}, {x};"));
        self.ins(&format!("fma.rn.f32 {small}, {small}, {poly}, {x};"));
        self.ins(&format!("setp.lt.f32 {p}, {a}, 0f3E000000;"));
        self.ins(&format!("selp.f32 {y}, {small}, {big}, {p};"));
    }
}

fn cmp_name(op: BinOp, t: ScalarTy) -> Option<&'static str> {
    Some(match op {
        BinOp::Eq => "eq",
        BinOp::Ne if t.is_float() => "neu",
        BinOp::Ne => "ne",
        BinOp::Lt => "lt",
        BinOp::Le => "le",
        BinOp::Gt => "gt",
        BinOp::Ge => "ge",
        _ => return None,
    })
}

/// Wrap an integer constant to the range of `t`.
pub(crate) fn wrap_to(v: i128, t: ScalarTy) -> i128 {
    let bits = t.size() * 8;
    let m = v & ((1i128 << bits) - 1);
    if t.is_signed() && m >= 1i128 << (bits - 1) {
        m - (1i128 << bits)
    } else {
        m
    }
}
