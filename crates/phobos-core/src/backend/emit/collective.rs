//! Warp and CTA exchange: shuffles with the page's rule that a source
//! outside the lane's piece reads the lane's own value, lane collectives as
//! xor butterflies of `shfl.sync.bfly` (argmax carrying value and lane,
//! any/all through `vote.sync`), and CTA collectives as a butterfly per warp,
//! one slot per warp in the planned scratch, and a fold of the slots in warp
//! order, between the barriers the barrier analysis kept.
//!
//! Values move between lanes as 32-bit words: sub-word values widened,
//! predicates as 0/1, 64-bit values as two words.

use super::{Emitter, Reg, RegClass, V};
use crate::ast::{BinOp, ScalarTy};
use crate::backend::ir::{BarrierId, Combine, CtaColl, ExprId, ExprKind, StmtId, StmtKind};
use crate::hir::{Builtin, CollOp, ShflMode};

const FULL: &str = "-1";

impl Emitter<'_> {
    /// A value as the bits that move: a B32 register, or a B64 one.
    fn word_bits(&mut self, v: V, t: ScalarTy) -> Reg {
        let r = self.in_reg(v, t);
        match r.class {
            RegClass::Pred => {
                let w = self.reg(RegClass::B32);
                self.ins(&format!("selp.u32 {w}, 1, 0, {r};"));
                w
            }
            RegClass::B16 => {
                let w = self.reg(RegClass::B32);
                self.ins(&format!("cvt.u32.u16 {w}, {r};"));
                w
            }
            RegClass::F32 => {
                let w = self.reg(RegClass::B32);
                self.ins(&format!("mov.b32 {w}, {r};"));
                w
            }
            RegClass::F64 => {
                let w = self.reg(RegClass::B64);
                self.ins(&format!("mov.b64 {w}, {r};"));
                w
            }
            _ => r,
        }
    }

    /// Bits back into a value of type `t`.
    fn bits_to_value(&mut self, w: Reg, t: ScalarTy) -> V {
        let d = self.reg(RegClass::of(t));
        match d.class {
            RegClass::Pred => self.ins(&format!("setp.ne.u32 {d}, {w}, 0;")),
            RegClass::B16 => self.ins(&format!("cvt.u16.u32 {d}, {w};")),
            RegClass::F32 => self.ins(&format!("mov.b32 {d}, {w};")),
            RegClass::F64 => self.ins(&format!("mov.b64 {d}, {w};")),
            _ => return V::R(w),
        }
        V::R(d)
    }

    /// One `shfl.sync` of a value of any type.
    fn shfl(&mut self, mode: &str, v: V, t: ScalarTy, b: &str, c: u32) -> V {
        let w = self.word_bits(v, t);
        if w.class == RegClass::B64 {
            let (lo, hi) = (self.reg(RegClass::B32), self.reg(RegClass::B32));
            self.ins(&format!("mov.b64 {{{lo}, {hi}}}, {w};"));
            let (slo, shi) = (self.reg(RegClass::B32), self.reg(RegClass::B32));
            self.ins(&format!(
                "shfl.sync.{mode}.b32 {slo}, {lo}, {b}, {c}, {FULL};"
            ));
            self.ins(&format!(
                "shfl.sync.{mode}.b32 {shi}, {hi}, {b}, {c}, {FULL};"
            ));
            let d = self.reg(RegClass::B64);
            self.ins(&format!("mov.b64 {d}, {{{slo}, {shi}}};"));
            return self.bits_to_value(d, t);
        }
        let d = self.reg(RegClass::B32);
        self.ins(&format!("shfl.sync.{mode}.b32 {d}, {w}, {b}, {c}, {FULL};"));
        self.bits_to_value(d, t)
    }

    /// Fold two values with a collective's operation.
    fn combine2(&mut self, op: CollOp, t: ScalarTy, combine: Option<Combine>, a: V, b: V) -> V {
        match op {
            CollOp::Sum => self.binary(BinOp::Add, t, t, a, b),
            CollOp::Max | CollOp::Min => {
                let bop = if op == CollOp::Max {
                    Builtin::Max
                } else {
                    Builtin::Min
                };
                self.builtin(bop, t, &[t], &[a, b])
            }
            CollOp::Any => self.binary(BinOp::Or, ScalarTy::Bool, ScalarTy::Bool, a, b),
            CollOp::All => self.binary(BinOp::And, ScalarTy::Bool, ScalarTy::Bool, a, b),
            CollOp::Reduce | CollOp::Argmax => match combine {
                Some(c) => {
                    // The combine body reads `a` and `b`, set anew here.
                    self.load_cache.clear();
                    let (ra, rb) = (self.var_reg(c.a), self.var_reg(c.b));
                    let (ta, tb) = (self.f.vars[c.a].ty, self.f.vars[c.b].ty);
                    self.mov_to(ra, a, ta);
                    self.mov_to(rb, b, tb);
                    self.scalar_expr(c.body)
                }
                None => a,
            },
        }
    }

    /// Argmax step: take the other (value, index) when its value is larger,
    /// or equal with a smaller index.
    fn argmax_step(&mut self, t: ScalarTy, v: V, i: V, ov: V, oi: V) -> (V, V) {
        let gt = self.binary(BinOp::Gt, t, ScalarTy::Bool, ov, v);
        let eq = self.binary(BinOp::Eq, t, ScalarTy::Bool, ov, v);
        let lt = self.binary(BinOp::Lt, ScalarTy::I32, ScalarTy::Bool, oi, i);
        let tie = self.binary(BinOp::And, ScalarTy::Bool, ScalarTy::Bool, eq, lt);
        let take = self.binary(BinOp::Or, ScalarTy::Bool, ScalarTy::Bool, gt, tie);
        let take = self.in_reg(take, ScalarTy::Bool);
        let nv = self.select(t, take, ov, v);
        let ni = self.select(ScalarTy::I32, take, oi, i);
        (nv, ni)
    }

    /// The butterfly over pieces of `width` lanes. Returns the folded value
    /// and, for argmax, the index carried with it.
    fn butterfly(
        &mut self,
        op: CollOp,
        t: ScalarTy,
        combine: Option<Combine>,
        v: V,
        idx: V,
        width: u32,
    ) -> (V, V) {
        if matches!(op, CollOp::Any | CollOp::All) {
            return (self.vote(op, v, width), idx);
        }
        let (mut v, mut idx) = (v, idx);
        let mut off = width / 2;
        while off >= 1 {
            let o = off.to_string();
            let ov = self.shfl("bfly", v, t, &o, 0x1f);
            if op == CollOp::Argmax {
                let oi = self.shfl("bfly", idx, ScalarTy::I32, &o, 0x1f);
                (v, idx) = self.argmax_step(t, v, idx, ov, oi);
            } else {
                v = self.combine2(op, t, combine, v, ov);
            }
            off /= 2;
        }
        (v, idx)
    }

    /// any/all over pieces of `width` lanes through `vote.sync`.
    fn vote(&mut self, op: CollOp, v: V, width: u32) -> V {
        let p = self.in_reg(v, ScalarTy::Bool);
        let d = self.reg(RegClass::Pred);
        let mode = if op == CollOp::Any { "any" } else { "all" };
        if width == 32 {
            self.ins(&format!("vote.sync.{mode}.pred {d}, {p}, {FULL};"));
            return V::R(d);
        }
        let (ballot, start, bits) = (
            self.reg(RegClass::B32),
            self.reg(RegClass::B32),
            self.reg(RegClass::B32),
        );
        let mask = (1u64 << width) - 1;
        let lane = self.lane;
        self.ins(&format!("vote.sync.ballot.b32 {ballot}, {p}, {FULL};"));
        self.ins(&format!("and.b32 {start}, {lane}, {};", 32 - width));
        self.ins(&format!("shr.b32 {bits}, {ballot}, {start};"));
        self.ins(&format!("and.b32 {bits}, {bits}, {mask};"));
        if op == CollOp::Any {
            self.ins(&format!("setp.ne.u32 {d}, {bits}, 0;"));
        } else {
            self.ins(&format!("setp.eq.u32 {d}, {bits}, {mask};"));
        }
        V::R(d)
    }

    /// The lane's position in its piece of `width` lanes (a power of two).
    fn lane_in_piece(&mut self, width: u32) -> Reg {
        if width == 32 {
            return self.lane;
        }
        let r = self.reg(RegClass::B32);
        let lane = self.lane;
        self.ins(&format!("and.b32 {r}, {lane}, {};", width - 1));
        r
    }

    pub(crate) fn lane_collective(&mut self, e: ExprId) -> V {
        let ExprKind::LaneColl {
            op,
            width,
            arg,
            combine,
        } = self.f.exprs[e].kind.clone()
        else {
            return V::I(0, ScalarTy::I32);
        };
        let t = self.ty(arg);
        let v = self.scalar_expr(arg);
        self.loc(self.f.expr_span(e));
        let idx = if op == CollOp::Argmax {
            V::R(self.lane_in_piece(width))
        } else {
            V::I(0, ScalarTy::I32)
        };
        let (v, idx) = self.butterfly(op, t, combine, v, idx, width);
        if op == CollOp::Argmax {
            idx
        } else {
            v
        }
    }

    pub(crate) fn shuffle(&mut self, e: ExprId) -> V {
        let ExprKind::Shuffle {
            mode,
            width,
            lane,
            value,
        } = self.f.exprs[e].kind.clone()
        else {
            return V::I(0, ScalarTy::I32);
        };
        let t = self.ty(value);
        let s = self.scalar_expr(lane);
        let v = self.scalar_expr(value);
        self.loc(self.f.expr_span(e));
        let w = width as i128;
        let seg = (32 - width) << 8;
        // A constant operand that keeps every source inside the piece uses
        // the native mode; PTX then reads the own value exactly where the
        // page says.
        if let V::I(c, _) = s {
            return match mode {
                ShflMode::Xor if c == 0 => v,
                ShflMode::Xor if (1..w).contains(&c) => {
                    self.shfl("bfly", v, t, &c.to_string(), 0x1f)
                }
                ShflMode::Down | ShflMode::Up if c == 0 => v,
                ShflMode::Down if (1..w).contains(&c) => {
                    // The planted bug drops the segment mask, so a lane near
                    // the end of its piece reads the next piece.
                    let clamp = if crate::backend::planted_bug() {
                        0x1f
                    } else {
                        seg | 0x1f
                    };
                    self.shfl("down", v, t, &c.to_string(), clamp)
                }
                ShflMode::Up if (1..w).contains(&c) => self.shfl("up", v, t, &c.to_string(), seg),
                ShflMode::Down if (1..w).contains(&-c) => {
                    self.shfl("up", v, t, &(-c).to_string(), seg)
                }
                ShflMode::Up if (1..w).contains(&-c) => {
                    self.shfl("down", v, t, &(-c).to_string(), seg | 0x1f)
                }
                ShflMode::From if (0..w).contains(&c) => {
                    self.shfl("idx", v, t, &c.to_string(), seg | 0x1f)
                }
                // Every source is outside the piece: the own value.
                _ => v,
            };
        }
        // A varying operand: compute the source's position in the piece,
        // read it with shfl.idx (which wraps), and keep the own value where
        // the position is outside the piece.
        let sr = self.in_reg(s, ScalarTy::I32);
        let lip = self.lane_in_piece(width);
        let pos = self.reg(RegClass::B32);
        match mode {
            ShflMode::From => self.ins(&format!("mov.b32 {pos}, {sr};")),
            ShflMode::Xor => self.ins(&format!("xor.b32 {pos}, {lip}, {sr};")),
            ShflMode::Down => self.ins(&format!("add.s32 {pos}, {lip}, {sr};")),
            ShflMode::Up => self.ins(&format!("sub.s32 {pos}, {lip}, {sr};")),
        }
        let inside = self.reg(RegClass::Pred);
        self.ins(&format!("setp.lt.u32 {inside}, {pos}, {width};"));
        let got = self.shfl("idx", v, t, &pos.to_string(), seg | 0x1f);
        self.select(t, inside, got, v)
    }

    /// Print a candidate barrier as kept (`bar.sync 0`) or elided.
    pub(crate) fn barrier(&mut self, b: BarrierId) {
        let d = &self.an.barriers[b.0 as usize];
        let (kept, reason) = (d.kept, d.reason.clone());
        if kept {
            self.comment(&format!("barrier kept: {reason}"));
            self.ins("bar.sync 0;");
        } else {
            self.comment(&format!("barrier elided: {reason}"));
        }
    }

    pub(crate) fn cta_collective(&mut self, s: StmtId) {
        let StmtKind::CtaColl(c) = &self.f.stmts[s].kind else {
            return;
        };
        let c: CtaColl = c.clone();
        let op = c.op;
        let t = self.ty(c.arg);
        let v = self.scalar_expr(c.arg);
        self.loc(self.f.stmt_span(s));
        self.barrier(c.before);
        let tid = V::R(self.tid);
        let (wv, wi) = self.butterfly(op, t, c.combine, v, tid, 32);
        // Lane 0 of each warp writes the warp's result into its slot.
        let word = if t.size() == 8 { 8u32 } else { 4 };
        let slot = if op == CollOp::Argmax { word * 2 } else { word };
        let off = self.an.plan.offset[c.scratch.0 as usize];
        let base = self.reg(RegClass::B32);
        self.ins(&format!("mov.u32 {base}, {};", self.smem));
        if off != 0 {
            self.ins(&format!("add.s32 {base}, {base}, {off};"));
        }
        let my = self.reg(RegClass::B32);
        let warp = self.warp;
        self.ins(&format!("mad.lo.s32 {my}, {warp}, {slot}, {base};"));
        let lane0 = self.reg(RegClass::Pred);
        let lane = self.lane;
        self.ins(&format!("setp.eq.u32 {lane0}, {lane}, 0;"));
        let bits = if word == 8 { ".b64" } else { ".b32" };
        let w = self.word_bits(wv, t);
        self.ins(&format!("@{lane0} st.shared{bits} [{my}], {w};"));
        if op == CollOp::Argmax {
            let wi = self.in_reg(wi, ScalarTy::I32);
            self.ins(&format!("@{lane0} st.shared.b32 [{my}+{word}], {wi};"));
        }
        self.barrier(c.written);
        // Every thread folds the slots in warp order.
        let warps = (self.f.threads / 32).max(1);
        let mut acc = (V::I(0, t), V::I(0, ScalarTy::I32));
        for w in 0..warps {
            let r = self.reg(if word == 8 {
                RegClass::B64
            } else {
                RegClass::B32
            });
            self.ins(&format!("ld.shared{bits} {r}, [{base}+{}];", w * slot));
            let x = self.bits_to_value(r, t);
            let xi = if op == CollOp::Argmax {
                let ri = self.reg(RegClass::B32);
                self.ins(&format!(
                    "ld.shared.b32 {ri}, [{base}+{}];",
                    w * slot + word
                ));
                V::R(ri)
            } else {
                V::I(0, ScalarTy::I32)
            };
            acc = if w == 0 {
                (x, xi)
            } else if op == CollOp::Argmax {
                // Later warps hold larger thread indices: take only a larger value.
                let gt = self.binary(BinOp::Gt, t, ScalarTy::Bool, x, acc.0);
                let gt = self.in_reg(gt, ScalarTy::Bool);
                let nv = self.select(t, gt, x, acc.0);
                let ni = self.select(ScalarTy::I32, gt, xi, acc.1);
                (nv, ni)
            } else {
                (self.combine2(op, t, c.combine, acc.0, x), xi)
            };
        }
        self.barrier(c.read);
        let d = self.var_reg(c.dst);
        let dt = self.f.vars[c.dst].ty;
        let result = if op == CollOp::Argmax { acc.1 } else { acc.0 };
        self.mov_to(d, result, dt);
    }
}
