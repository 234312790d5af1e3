//! Executes one decoded instruction for a mask of lanes of a warp.
//!
//! Arithmetic reads whole 32-lane rows of the value file, computes all 32
//! lanes in one tight loop (pure functions, so inactive lanes are harmless)
//! and writes back only the active lanes. Memory operations, shuffles and
//! votes loop over the active lanes only. Control flow and scheduling are
//! `warp`'s job; check reports are assembled by `launch` from a [`Fault`].

use crate::checks::Stamp;
use crate::decode::{
    AtomOp, BoolOp, FloatOp, IntOp, MemSpace, Op, PredLogic, ShflMode, Slot, Ty, VoteMode,
};
use crate::error::CheckKind;
use crate::launch::{CtaState, Ctx};
use crate::memory::{classify_generic, Generic, GlobalFault};
use crate::numeric::*;
use crate::observer::{Access, AccessKind, Space};
use crate::warp::{lanes, Warp, FULL};
use std::sync::atomic::Ordering::Relaxed;

/// A failed check inside one instruction, before location is attached.
#[derive(Debug)]
pub(crate) struct Fault {
    pub kind: CheckKind,
    pub message: String,
    pub lane: Option<u32>,
    pub address: Option<u64>,
    pub space: Option<Space>,
    pub tensor: Option<String>,
    pub notes: Vec<String>,
}

impl Fault {
    pub(crate) fn new(kind: CheckKind, message: impl Into<String>) -> Fault {
        Fault {
            kind,
            message: message.into(),
            lane: None,
            address: None,
            space: None,
            tensor: None,
            notes: Vec::new(),
        }
    }

    pub(crate) fn at(mut self, lane: usize, addr: u64, space: Space) -> Fault {
        self.lane = Some(lane as u32);
        self.address = Some(addr);
        self.space = Some(space);
        self
    }
}

type Row = [u64; 32];

fn kind_word(store: bool) -> &'static str {
    if store {
        "store"
    } else {
        "load"
    }
}

impl Warp {
    #[inline(always)]
    fn row(&self, s: Slot) -> Row {
        let b = s as usize * 32;
        let mut r = [0u64; 32];
        r.copy_from_slice(&self.regs[b..b + 32]);
        r
    }

    #[inline(always)]
    fn put(&mut self, s: Slot, active: u32, v: &Row) {
        let b = s as usize * 32;
        let dst = &mut self.regs[b..b + 32];
        if active == FULL {
            dst.copy_from_slice(v);
        } else {
            for l in lanes(active) {
                dst[l] = v[l];
            }
        }
    }

    /// `d = f(a)` in the active lanes, in place in the value file. Slots
    /// come from the decoder, so they are in range; an out-of-range slot
    /// would be a decoder bug and leaves the file untouched.
    #[inline(always)]
    fn map1(&mut self, active: u32, d: Slot, a: Slot, f: impl Fn(u64) -> u64) {
        let (d, a) = (d as usize * 32, a as usize * 32);
        let r = &mut self.regs[..];
        if d.max(a) + 32 > r.len() {
            return;
        }
        if active == FULL {
            for l in 0..32 {
                r[d + l] = f(r[a + l]);
            }
        } else {
            for l in lanes(active) {
                r[d + l] = f(r[a + l]);
            }
        }
    }

    /// `d = f(a, b)` in the active lanes.
    #[inline(always)]
    fn map2(&mut self, active: u32, d: Slot, a: Slot, b: Slot, f: impl Fn(u64, u64) -> u64) {
        let (d, a, b) = (d as usize * 32, a as usize * 32, b as usize * 32);
        let r = &mut self.regs[..];
        if d.max(a).max(b) + 32 > r.len() {
            return;
        }
        if active == FULL {
            for l in 0..32 {
                r[d + l] = f(r[a + l], r[b + l]);
            }
        } else {
            for l in lanes(active) {
                r[d + l] = f(r[a + l], r[b + l]);
            }
        }
    }

    /// `d = f(a, b, c)` in the active lanes.
    #[inline(always)]
    fn map3(&mut self, active: u32, d: Slot, s: [Slot; 3], f: impl Fn(u64, u64, u64) -> u64) {
        let d = d as usize * 32;
        let [a, b, c] = s.map(|x| x as usize * 32);
        let r = &mut self.regs[..];
        if d.max(a).max(b).max(c) + 32 > r.len() {
            return;
        }
        if active == FULL {
            for l in 0..32 {
                r[d + l] = f(r[a + l], r[b + l], r[c + l]);
            }
        } else {
            for l in lanes(active) {
                r[d + l] = f(r[a + l], r[b + l], r[c + l]);
            }
        }
    }

    fn set_pred(&mut self, p: u32, active: u32, value: u32) {
        if let Some(m) = self.preds.get_mut(p as usize) {
            *m = (*m & !active) | (value & active);
        }
    }

    /// Executes `op` for the lanes in `active`.
    pub(crate) fn exec(
        &mut self,
        op: &Op,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        match *op {
            Op::Mov { d, a, bits } => {
                let m = mask(bits);
                self.map1(active, d, a, |x| x & m);
            }
            Op::AddImm { d, a, k, bits } => {
                let m = mask(bits);
                self.map1(active, d, a, |x| x.wrapping_add(k) & m);
            }
            Op::Pack {
                d,
                srcs,
                n,
                part_bits,
            } => {
                let m = mask(part_bits);
                let mut out = [0u64; 32];
                for (i, &s) in srcs.iter().take(n as usize).enumerate() {
                    let r = self.row(s);
                    for l in 0..32 {
                        out[l] |= (r[l] & m) << (part_bits * i as u32);
                    }
                }
                self.put(d, active, &out);
            }
            Op::Unpack {
                ds,
                n,
                a,
                part_bits,
            } => {
                let m = mask(part_bits);
                let r = self.row(a);
                for (i, &s) in ds.iter().take(n as usize).enumerate() {
                    let mut out = [0u64; 32];
                    for l in 0..32 {
                        out[l] = (r[l] >> (part_bits * i as u32)) & m;
                    }
                    self.put(s, active, &out);
                }
            }
            Op::Int { op, ty, d, s } => self.int(op, ty.bits, ty.signed, d, s, active),
            Op::Float {
                op,
                f64: wide,
                ftz,
                sat,
                d,
                s,
            } => {
                if wide {
                    self.float64(op, sat, d, s, active);
                } else {
                    // Resolve the modifiers at compile time: the plain form
                    // is the hot one.
                    // The input, kept for the worst-case `.approx` model
                    // (the result may overwrite it in place).
                    let approx_input = (cx.approx == crate::launch::Approx::WorstCase
                        && crate::numeric::is_approx_f32(op))
                    .then(|| self.row(s[0]));
                    match (ftz, sat) {
                        (false, false) => self.float32::<false, false>(op, d, s, active),
                        (true, false) => self.float32::<true, false>(op, d, s, active),
                        (false, true) => self.float32::<false, true>(op, d, s, active),
                        (true, true) => self.float32::<true, true>(op, d, s, active),
                    }
                    if let Some(x) = approx_input {
                        self.worst_case_approx(op, d, &x, active);
                    }
                }
            }
            Op::Cvt {
                d,
                a,
                dst,
                src,
                rnd,
                sat,
                ftz,
            } => {
                if !src.is_float() && !dst.is_float() && !sat {
                    // Truncate to the destination type, then extend to the
                    // register by the destination's signedness.
                    let (sb, db) = (src.bits(), dst.bits());
                    let w = sb.min(db);
                    match (src.is_signed() && sb <= db, dst.is_signed()) {
                        (true, _) => self.map1(active, d, a, |x| sx(x, w) as u64),
                        (false, true) if db <= sb => self.map1(active, d, a, |x| sx(x, db) as u64),
                        _ => self.map1(active, d, a, |x| zx(x, w)),
                    }
                } else {
                    self.map1(active, d, a, |x| cvt(x, dst, src, rnd, sat, ftz));
                }
            }
            Op::Setp {
                cmp,
                ty,
                ftz,
                p,
                q,
                a,
                b,
                comb,
            } => {
                let av = self.row(a);
                let bv = self.row(b);
                let mut r = 0u32;
                if ty.is_float() {
                    for l in 0..32 {
                        let (x, y) = (read_float(av[l], ty, ftz), read_float(bv[l], ty, ftz));
                        r |= u32::from(cmp_float(cmp, x, y)) << l;
                    }
                } else {
                    let (bits, signed) = (ty.bits(), ty.is_signed());
                    for l in 0..32 {
                        r |= u32::from(cmp_int(cmp, av[l], bv[l], bits, signed)) << l;
                    }
                }
                let (pv, qv) = match comb {
                    None => (r, !r),
                    Some((op, c)) => {
                        let c = self.pred_mask(c);
                        let f = |x: u32| match op {
                            BoolOp::And => x & c,
                            BoolOp::Or => x | c,
                            BoolOp::Xor => x ^ c,
                        };
                        (f(r), f(!r))
                    }
                };
                self.set_pred(p, active, pv);
                if let Some(q) = q {
                    self.set_pred(q, active, qv);
                }
            }
            Op::Selp { d, a, b, c, bits } => {
                let cm = self.pred_mask(c);
                let m = mask(bits);
                let av = self.row(a);
                let bv = self.row(b);
                let mut out = [0u64; 32];
                for l in 0..32 {
                    out[l] = if cm & (1 << l) != 0 { av[l] } else { bv[l] } & m;
                }
                self.put(d, active, &out);
            }
            Op::PredBool { op, d, a, b } => {
                let (x, y) = (self.pred_mask(a), self.pred_mask(b));
                let v = match op {
                    PredLogic::And => x & y,
                    PredLogic::Or => x | y,
                    PredLogic::Xor => x ^ y,
                    PredLogic::Not => !x,
                    PredLogic::Mov => x,
                };
                self.set_pred(d, active, v);
            }
            Op::PredConst { d, value } => self.set_pred(d, active, if value { FULL } else { 0 }),
            Op::Ld {
                space,
                ty,
                n,
                ds,
                addr,
            } => {
                return self.memory(
                    false,
                    space,
                    ty,
                    n,
                    ds,
                    addr.base,
                    addr.offset,
                    active,
                    pc,
                    cx,
                    cta,
                )
            }
            Op::St {
                space,
                ty,
                n,
                srcs,
                addr,
            } => {
                return self.memory(
                    true,
                    space,
                    ty,
                    n,
                    srcs,
                    addr.base,
                    addr.offset,
                    active,
                    pc,
                    cx,
                    cta,
                )
            }
            Op::Atom {
                space,
                op,
                ty,
                d,
                addr,
                b,
                c,
            } => {
                return self.atom(
                    space,
                    op,
                    ty,
                    d,
                    addr.base,
                    addr.offset,
                    b,
                    c,
                    active,
                    pc,
                    cx,
                    cta,
                )
            }
            Op::Shfl {
                mode,
                d,
                p,
                a,
                b,
                c,
                ..
            } => return self.shfl(mode, d, p, a, b, c, active, cx, cta),
            Op::Vote { mode, d, a, mask } => {
                let ballot = self.pred_mask(a) & active;
                let mm = self.row(mask);
                if mode == VoteMode::Ballot {
                    let mut out = [0u64; 32];
                    for l in 0..32 {
                        out[l] = u64::from(ballot & mm[l] as u32);
                    }
                    self.put(d, active, &out);
                } else {
                    let mut r = 0u32;
                    for l in lanes(active) {
                        let m = mm[l] as u32 & active;
                        let t = ballot & m;
                        let v = match mode {
                            VoteMode::Any => t != 0,
                            VoteMode::All => t == m,
                            _ => t == 0 || t == m,
                        };
                        r |= u32::from(v) << l;
                    }
                    self.set_pred(d, active, r);
                }
            }
            Op::Ldmatrix {
                num,
                trans,
                ds,
                space,
                addr,
                ..
            } => {
                return self.ldmatrix(
                    num,
                    trans,
                    ds,
                    space,
                    addr.base,
                    addr.offset,
                    active,
                    pc,
                    cx,
                    cta,
                )
            }
            Op::Mma { idx, .. } => {
                if let Some(m) = cx.entry.mmas.get(idx as usize) {
                    return self.mma(m, active);
                }
            }
            Op::CpAsync {
                size,
                src_size,
                dst,
                src,
            } => return self.cp_async(size, src_size, dst, src, active, pc, cx, cta),
            Op::CpAsyncCommit => self.cp_async_commit(active, cx, cta),
            Op::CvtTf32 { d, a } => self.map1(active, d, a, |x| {
                u64::from(crate::tensor::tf32_rna(x as u32))
            }),
            Op::CpAsyncWait { keep } => return self.cp_async_wait(keep, active, pc, cx, cta),
            Op::WarpSync { .. } | Op::Nop | Op::Bra { .. } | Op::Exit | Op::Bar => {}
        }
        Ok(())
    }

    fn int(&mut self, op: IntOp, bits: u32, signed: bool, d: Slot, s: [Slot; 4], active: u32) {
        let m = mask(bits);
        let [a, b, c, e] = s;
        match op {
            IntOp::Add => self.map2(active, d, a, b, |x, y| x.wrapping_add(y) & m),
            IntOp::Sub => self.map2(active, d, a, b, |x, y| x.wrapping_sub(y) & m),
            IntOp::MulLo => self.map2(active, d, a, b, |x, y| x.wrapping_mul(y) & m),
            IntOp::MulHi => self.map2(active, d, a, b, |x, y| mul_hi(x, y, bits, signed)),
            IntOp::MulWide => self.map2(active, d, a, b, |x, y| mul_wide(x, y, bits, signed)),
            IntOp::MadLo => self.map3(active, d, [a, b, c], |x, y, z| {
                x.wrapping_mul(y).wrapping_add(z) & m
            }),
            IntOp::MadHi => self.map3(active, d, [a, b, c], |x, y, z| {
                mul_hi(x, y, bits, signed).wrapping_add(z) & m
            }),
            IntOp::MadWide => {
                let wm = mask(bits * 2);
                self.map3(active, d, [a, b, c], |x, y, z| {
                    mul_wide(x, y, bits, signed).wrapping_add(z) & wm
                })
            }
            IntOp::Div => self.map2(active, d, a, b, |x, y| {
                if signed {
                    let (x, y) = (sx(x, bits), sx(y, bits));
                    if y == 0 {
                        m
                    } else {
                        (sx(x.wrapping_div(y) as u64, bits) as u64) & m
                    }
                } else {
                    zx(x, bits).checked_div(zx(y, bits)).unwrap_or(m)
                }
            }),
            IntOp::Rem => self.map2(active, d, a, b, |x, y| {
                if signed {
                    let (x, y) = (sx(x, bits), sx(y, bits));
                    if y == 0 {
                        x as u64 & m
                    } else {
                        x.wrapping_rem(y) as u64 & m
                    }
                } else {
                    let (x, y) = (zx(x, bits), zx(y, bits));
                    x.checked_rem(y).unwrap_or(x)
                }
            }),
            IntOp::Neg => self.map1(active, d, a, |x| x.wrapping_neg() & m),
            IntOp::Abs => self.map1(active, d, a, |x| sx(x, bits).wrapping_abs() as u64 & m),
            IntOp::Min => self.map2(active, d, a, b, |x, y| {
                if signed {
                    sx(x, bits).min(sx(y, bits)) as u64 & m
                } else {
                    zx(x, bits).min(zx(y, bits))
                }
            }),
            IntOp::Max => self.map2(active, d, a, b, |x, y| {
                if signed {
                    sx(x, bits).max(sx(y, bits)) as u64 & m
                } else {
                    zx(x, bits).max(zx(y, bits))
                }
            }),
            IntOp::And => self.map2(active, d, a, b, |x, y| x & y & m),
            IntOp::Or => self.map2(active, d, a, b, |x, y| (x | y) & m),
            IntOp::Xor => self.map2(active, d, a, b, |x, y| (x ^ y) & m),
            IntOp::Not => self.map1(active, d, a, |x| !x & m),
            IntOp::Cnot => self.map1(active, d, a, |x| u64::from(x & m == 0)),
            IntOp::Shl => self.map2(active, d, a, b, |x, y| {
                let s = y as u32;
                if s >= bits {
                    0
                } else {
                    (x << s) & m
                }
            }),
            IntOp::Shr => self.map2(active, d, a, b, |x, y| {
                let s = (y as u32).min(bits);
                if signed {
                    (sx(x, bits) >> s.min(63)) as u64 & m
                } else if s >= bits {
                    0
                } else {
                    zx(x, bits) >> s
                }
            }),
            IntOp::Popc => self.map1(active, d, a, |x| u64::from(zx(x, bits).count_ones())),
            IntOp::Clz => self.map1(active, d, a, |x| {
                u64::from(zx(x, bits).leading_zeros() - (64 - bits))
            }),
            IntOp::Brev => self.map1(active, d, a, |x| zx(x, bits).reverse_bits() >> (64 - bits)),
            IntOp::Bfe => self.map3(active, d, [a, b, c], |x, p, l| {
                bfe(zx(x, bits), p as u32, l as u32, bits, signed)
            }),
            IntOp::Bfi => {
                let ev = self.row(e);
                let av = self.row(a);
                let bv = self.row(b);
                let cv = self.row(c);
                let mut out = [0u64; 32];
                for l in 0..32 {
                    out[l] = bfi(av[l], bv[l], cv[l] as u32, ev[l] as u32, bits);
                }
                self.put(d, active, &out);
            }
            IntOp::Prmt => self.map3(active, d, [a, b, c], |x, y, z| {
                u64::from(prmt(x as u32, y as u32, z as u32))
            }),
            IntOp::Dp4a { sa, sb } => self.map3(active, d, [a, b, c], |x, y, z| {
                u64::from(dp4a(x as u32, y as u32, z as u32, sa, sb))
            }),
            IntOp::Dp2a { hi, sa, sb } => self.map3(active, d, [a, b, c], |x, y, z| {
                u64::from(dp2a(x as u32, y as u32, z as u32, hi, sa, sb))
            }),
        }
    }

    fn float32<const FTZ: bool, const SAT: bool>(
        &mut self,
        op: FloatOp,
        d: Slot,
        s: [Slot; 3],
        active: u32,
    ) {
        let fin = move |x: u64| {
            let f = f32_of(x);
            if FTZ {
                ftz32(f)
            } else {
                f
            }
        };
        let fout = move |f: f32| {
            let f = if FTZ { ftz32(f) } else { f };
            let f = if SAT {
                if f.is_nan() {
                    0.0
                } else {
                    f.clamp(0.0, 1.0)
                }
            } else {
                f
            };
            u64::from(f.to_bits())
        };
        let [a, b, c] = s;
        match op {
            FloatOp::Add => self.map2(active, d, a, b, |x, y| fout(fin(x) + fin(y))),
            FloatOp::Sub => self.map2(active, d, a, b, |x, y| fout(fin(x) - fin(y))),
            FloatOp::Mul => self.map2(active, d, a, b, |x, y| fout(fin(x) * fin(y))),
            FloatOp::Fma => self.map3(active, d, [a, b, c], |x, y, z| {
                fout(fin(x).mul_add(fin(y), fin(z)))
            }),
            FloatOp::Div => self.map2(active, d, a, b, |x, y| fout(fin(x) / fin(y))),
            FloatOp::Rcp => self.map1(active, d, a, |x| fout(1.0 / fin(x))),
            FloatOp::Sqrt => self.map1(active, d, a, |x| fout(fin(x).sqrt())),
            FloatOp::Rsqrt => self.map1(active, d, a, |x| fout(1.0 / fin(x).sqrt())),
            FloatOp::Ex2 => self.map1(active, d, a, |x| fout(fin(x).exp2())),
            FloatOp::Lg2 => self.map1(active, d, a, |x| fout(fin(x).log2())),
            FloatOp::Sin => self.map1(active, d, a, |x| fout(fin(x).sin())),
            FloatOp::Cos => self.map1(active, d, a, |x| fout(fin(x).cos())),
            FloatOp::Tanh => self.map1(active, d, a, |x| fout(fin(x).tanh())),
            FloatOp::Abs => self.map1(active, d, a, |x| fout(fin(x).abs())),
            FloatOp::Neg => self.map1(active, d, a, |x| fout(-fin(x))),
            FloatOp::Min => self.map2(active, d, a, b, |x, y| fout(fin(x).min(fin(y)))),
            FloatOp::Max => self.map2(active, d, a, b, |x, y| fout(fin(x).max(fin(y)))),
        }
    }

    /// Move the result of an f32 `.approx` instruction by its documented
    /// maximum error (`LaunchOptions::approx`).
    fn worst_case_approx(&mut self, op: FloatOp, d: Slot, x: &Row, active: u32) {
        let mut out = self.row(d);
        for (o, x) in out.iter_mut().zip(x) {
            let y = f32::from_bits(*o as u32);
            *o = u64::from(crate::numeric::approx_f32(op, f32::from_bits(*x as u32), y).to_bits());
        }
        self.put(d, active, &out);
    }

    fn float64(&mut self, op: FloatOp, sat: bool, d: Slot, s: [Slot; 3], active: u32) {
        let fout = move |f: f64| if sat { sat_f64(f) } else { f }.to_bits();
        let [a, b, c] = s;
        match op {
            FloatOp::Add => self.map2(active, d, a, b, |x, y| fout(f64_of(x) + f64_of(y))),
            FloatOp::Sub => self.map2(active, d, a, b, |x, y| fout(f64_of(x) - f64_of(y))),
            FloatOp::Mul => self.map2(active, d, a, b, |x, y| fout(f64_of(x) * f64_of(y))),
            FloatOp::Fma => self.map3(active, d, [a, b, c], |x, y, z| {
                fout(f64_of(x).mul_add(f64_of(y), f64_of(z)))
            }),
            FloatOp::Div => self.map2(active, d, a, b, |x, y| fout(f64_of(x) / f64_of(y))),
            FloatOp::Rcp => self.map1(active, d, a, |x| fout(1.0 / f64_of(x))),
            FloatOp::Sqrt => self.map1(active, d, a, |x| fout(f64_of(x).sqrt())),
            FloatOp::Rsqrt => self.map1(active, d, a, |x| fout(1.0 / f64_of(x).sqrt())),
            FloatOp::Ex2 => self.map1(active, d, a, |x| fout(f64_of(x).exp2())),
            FloatOp::Lg2 => self.map1(active, d, a, |x| fout(f64_of(x).log2())),
            FloatOp::Sin => self.map1(active, d, a, |x| fout(f64_of(x).sin())),
            FloatOp::Cos => self.map1(active, d, a, |x| fout(f64_of(x).cos())),
            FloatOp::Tanh => self.map1(active, d, a, |x| fout(f64_of(x).tanh())),
            FloatOp::Abs => self.map1(active, d, a, |x| fout(f64_of(x).abs())),
            FloatOp::Neg => self.map1(active, d, a, |x| fout(-f64_of(x))),
            FloatOp::Min => self.map2(active, d, a, b, |x, y| fout(f64_of(x).min(f64_of(y)))),
            FloatOp::Max => self.map2(active, d, a, b, |x, y| fout(f64_of(x).max(f64_of(y)))),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn shfl(
        &mut self,
        mode: ShflMode,
        d: Slot,
        p: Option<u32>,
        a: Slot,
        b: Slot,
        c: Slot,
        active: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let av = self.row(a);
        let bv = self.row(b);
        let cv = self.row(c);
        let mut out = [0u64; 32];
        let mut pv = 0u32;
        for l in lanes(active) {
            let lane = l as i32;
            let bval = (bv[l] & 31) as i32;
            let cval = (cv[l] & 31) as i32;
            let seg = ((cv[l] >> 8) & 31) as i32;
            let max_lane = (lane & seg) | (cval & !seg);
            let min_lane = lane & seg;
            let (j, ok) = match mode {
                ShflMode::Up => {
                    let j = lane - bval;
                    (j, j >= max_lane)
                }
                ShflMode::Down => {
                    let j = lane + bval;
                    (j, j <= max_lane)
                }
                ShflMode::Bfly => {
                    let j = lane ^ bval;
                    (j, j <= max_lane)
                }
                ShflMode::Idx => {
                    let j = min_lane | (bval & !seg);
                    (j, j <= max_lane)
                }
            };
            let src = if ok { j as usize } else { l };
            if ok {
                if cx.checks && active & (1 << src) == 0 {
                    let mut f = Fault::new(
                        CheckKind::Synccheck,
                        format!("shfl.sync in lane {l} reads lane {src}, which does not execute this shfl.sync"),
                    );
                    f.lane = Some(l as u32);
                    return Err(f);
                }
                pv |= 1 << l;
                if cta.observing {
                    cta.shuffles.push((l as u32, src as u32));
                }
            }
            out[l] = av[src] & 0xFFFF_FFFF;
        }
        self.put(d, active, &out);
        if let Some(p) = p {
            self.set_pred(p, active, pv);
        }
        Ok(())
    }

    pub(crate) fn stamp(&self, lane: usize, epoch: u32, pc: u32) -> Stamp {
        Stamp {
            tid: self.first_tid + lane as u32,
            epoch,
            wep: self.sync_epoch,
            pc,
        }
    }

    /// Resolves a lane's address and its space (generic addresses dispatch
    /// on their window).
    #[inline(always)]
    pub(crate) fn resolve(space: MemSpace, raw: u64) -> (Space, u64) {
        match space {
            MemSpace::Global => (Space::Global, raw),
            MemSpace::Shared => (Space::Shared, raw & 0xFFFF_FFFF),
            MemSpace::Local => (Space::Local, raw & 0xFFFF_FFFF),
            MemSpace::Param => (Space::Param, raw & 0xFFFF_FFFF),
            MemSpace::Generic => match classify_generic(raw) {
                Generic::Global(a) => (Space::Global, a),
                Generic::Shared(o) => (Space::Shared, o),
                Generic::Local(o) => (Space::Local, o),
            },
        }
    }

    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    fn memory(
        &mut self,
        store: bool,
        space: MemSpace,
        ty: Ty,
        n: u8,
        regs: [Slot; 4],
        base: Option<Slot>,
        offset: i64,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let size = ty.bytes();
        let total = size * u32::from(n);
        let n = n as usize;
        let signed = ty.is_signed();
        let bits = ty.bits();
        if space == MemSpace::Global && !store {
            return self.global_load(size, n, signed, bits, regs, base, offset, active, cx, cta);
        }
        for l in lanes(active) {
            let raw = base
                .map_or(0, |b| self.regs[b as usize * 32 + l])
                .wrapping_add(offset as u64);
            let (sp, addr) = Self::resolve(space, raw);
            if addr & (u64::from(total) - 1) != 0 {
                return Err(cx.memcheck_at(format!(
                        "misaligned {} {} of {total} bytes (the address must be a multiple of {total})",
                        space_word(sp),
                        kind_word(store)
                    ), l, addr, sp));
            }
            let mut vals = [0u64; 4];
            if store {
                for k in 0..n {
                    vals[k] = self.regs[regs[k] as usize * 32 + l];
                }
            }
            let buffer = match sp {
                Space::Global => {
                    let (bi, off) = cx
                        .dev
                        .locate(addr, total)
                        .map_err(|e| cx.global_fault(e, addr, total, store).at(l, addr, sp))?;
                    let buf = &cx.dev.buffers[bi];
                    for k in 0..n {
                        let o = off + (k as u32 * size) as u64;
                        if store {
                            buf.store(o, size, vals[k]);
                        } else {
                            vals[k] = buf.load(o, size);
                        }
                    }
                    if store {
                        cta.written[bi] = true;
                    }
                    Some(bi)
                }
                Space::Shared => {
                    let limit = cta.shared.len() as u64;
                    if addr + u64::from(total) > limit {
                        return Err(cx.memcheck_at(format!(
                                "out-of-bounds shared {} of {total} bytes: the CTA has {limit} bytes of shared memory",
                                kind_word(store)
                            ), l, addr, sp));
                    }
                    let off = addr as u32;
                    self.async_guard(l, off, total, store, cx, cta)?;
                    if cx.checks {
                        let st = self.stamp(l, cta.epoch, pc);
                        let r = if store {
                            cta.shadow.write(off, total, &st).map(|()| None)
                        } else {
                            cta.shadow.read(off, total, &st)
                        };
                        match r {
                            Ok(None) => {}
                            Ok(Some(byte)) => {
                                cta.note_uninit(cx, pc, self.first_tid + l as u32, byte, addr)
                            }
                            Err(h) => {
                                let mut f = cx.hazard_fault(h).at(l, addr, sp);
                                f.tensor = cx.region_name(sp, addr);
                                return Err(f);
                            }
                        }
                    }
                    for k in 0..n {
                        let o = off as usize + k * size as usize;
                        let bytes = &mut cta.shared[o..o + size as usize];
                        if store {
                            bytes.copy_from_slice(&vals[k].to_le_bytes()[..size as usize]);
                        } else {
                            vals[k] = le(bytes);
                        }
                    }
                    None
                }
                Space::Local => {
                    let limit = u64::from(cx.entry.local_bytes);
                    if addr + u64::from(total) > limit {
                        return Err(Fault::new(
                            CheckKind::Memcheck,
                            format!(
                                "out-of-bounds local {} of {total} bytes: the thread has {limit} bytes of local memory",
                                kind_word(store)
                            ),
                        )
                        .at(l, addr, sp));
                    }
                    let base = l * limit as usize + addr as usize;
                    for k in 0..n {
                        let o = base + k * size as usize;
                        let bytes = &mut self.local[o..o + size as usize];
                        if store {
                            bytes.copy_from_slice(&vals[k].to_le_bytes()[..size as usize]);
                        } else {
                            vals[k] = le(bytes);
                        }
                    }
                    None
                }
                Space::Param => {
                    let limit = cx.params.len() as u64;
                    if store || addr + u64::from(total) > limit {
                        return Err(Fault::new(
                            CheckKind::Memcheck,
                            format!("out-of-bounds param load of {total} bytes: the kernel has {limit} bytes of parameters"),
                        )
                        .at(l, addr, sp));
                    }
                    for (k, v) in vals.iter_mut().enumerate().take(n) {
                        let o = addr as usize + k * size as usize;
                        *v = le(&cx.params[o..o + size as usize]);
                    }
                    None
                }
            };
            if !store {
                for k in 0..n {
                    let v = if signed {
                        sx(vals[k], bits) as u64
                    } else {
                        vals[k]
                    };
                    self.regs[regs[k] as usize * 32 + l] = v;
                }
            }
            if cta.observing {
                cta.accesses.push(Access {
                    thread: self.first_tid + l as u32,
                    space: sp,
                    kind: if store {
                        AccessKind::Store
                    } else {
                        AccessKind::Load
                    },
                    addr,
                    bytes: total,
                    buffer,
                });
            }
        }
        Ok(())
    }

    /// The common case of `memory`: a load from global space.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn global_load(
        &mut self,
        size: u32,
        n: usize,
        signed: bool,
        bits: u32,
        regs: [Slot; 4],
        base: Option<Slot>,
        offset: i64,
        active: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let total = size * n as u32;
        let dst = regs.map(|r| r as usize * 32);
        for l in lanes(active) {
            let addr = base
                .map_or(0, |b| self.regs[b as usize * 32 + l])
                .wrapping_add(offset as u64);
            if addr & (u64::from(total) - 1) != 0 {
                let mut f = Fault::new(
                    CheckKind::Memcheck,
                    format!("misaligned global load of {total} bytes (the address must be a multiple of {total})"),
                )
                .at(l, addr, Space::Global);
                f.tensor = cx.region_name(Space::Global, addr);
                return Err(f);
            }
            let (bi, off) = cx.dev.locate(addr, total).map_err(|e| {
                cx.global_fault(e, addr, total, false)
                    .at(l, addr, Space::Global)
            })?;
            let buf = &cx.dev.buffers[bi];
            for (k, &d) in dst.iter().enumerate().take(n) {
                let v = buf.load(off + u64::from(k as u32 * size), size);
                self.regs[d + l] = if signed { sx(v, bits) as u64 } else { v };
            }
            if cta.observing {
                cta.accesses.push(Access {
                    thread: self.first_tid + l as u32,
                    space: Space::Global,
                    kind: AccessKind::Load,
                    addr,
                    bytes: total,
                    buffer: Some(bi),
                });
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn atom(
        &mut self,
        space: MemSpace,
        op: AtomOp,
        ty: Ty,
        d: Slot,
        base: Option<Slot>,
        offset: i64,
        b: Slot,
        c: Slot,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let size = ty.bytes();
        for l in lanes(active) {
            let raw = base
                .map_or(0, |r| self.regs[r as usize * 32 + l])
                .wrapping_add(offset as u64);
            let (sp, addr) = Self::resolve(space, raw);
            let bv = self.regs[b as usize * 32 + l];
            let cv = self.regs[c as usize * 32 + l];
            if addr & (u64::from(size) - 1) != 0 {
                return Err(cx.memcheck_at(
                    format!("misaligned {} atomic of {size} bytes", space_word(sp)),
                    l,
                    addr,
                    sp,
                ));
            }
            let old;
            let mut buffer = None;
            match sp {
                Space::Global => {
                    let (bi, off) = cx
                        .dev
                        .locate(addr, size)
                        .map_err(|e| cx.global_fault(e, addr, size, true).at(l, addr, sp))?;
                    let buf = &cx.dev.buffers[bi];
                    cta.written[bi] = true;
                    buffer = Some(bi);
                    if size == 2 {
                        // A 16-bit atomic updates its half of the aligned
                        // 32-bit word around it, leaving the other half.
                        let Some(w) = buf.atomic_word(off & !3) else {
                            return Err(cx.global_fault(
                                GlobalFault::OutOfBounds { buffer: Some(bi) },
                                addr,
                                size,
                                true,
                            ));
                        };
                        let shift = (off & 2) * 8;
                        let prev = w.fetch_update(Relaxed, Relaxed, |x| {
                            let half = u64::from(x >> shift) & 0xFFFF;
                            let new = atom_apply(op, ty, half, bv, cv) as u32 & 0xFFFF;
                            Some((x & !(0xFFFF << shift)) | (new << shift))
                        });
                        old = u64::from(prev.unwrap_or_else(|x| x) >> shift) & 0xFFFF;
                    } else if size == 4 {
                        let global_f32_add = op == AtomOp::Add && ty == Ty::F32;
                        let Some(w) = buf.atomic_word(off) else {
                            return Err(cx.global_fault(
                                GlobalFault::OutOfBounds { buffer: Some(bi) },
                                addr,
                                size,
                                true,
                            ));
                        };
                        let prev = w.fetch_update(Relaxed, Relaxed, |x| {
                            if global_f32_add {
                                return Some(global_add_f32(x, bv as u32));
                            }
                            Some(atom_apply(op, ty, u64::from(x), bv, cv) as u32)
                        });
                        old = u64::from(prev.unwrap_or_else(|x| x));
                    } else {
                        let _guard = cx.dev.atomic64.lock().unwrap_or_else(|e| e.into_inner());
                        let x = buf.load(off, 8);
                        buf.store(off, 8, atom_apply(op, ty, x, bv, cv));
                        old = x;
                    }
                }
                Space::Shared => {
                    let limit = cta.shared.len() as u64;
                    if addr + u64::from(size) > limit {
                        return Err(cx.memcheck_at(format!("out-of-bounds shared atomic of {size} bytes: the CTA has {limit} bytes of shared memory"), l, addr, sp));
                    }
                    self.async_guard(l, addr as u32, size, true, cx, cta)?;
                    if cx.checks {
                        let st = self.stamp(l, cta.epoch, pc);
                        match cta.shadow.atomic(addr as u32, size, &st) {
                            Ok(None) => {}
                            Ok(Some(byte)) => {
                                cta.note_uninit(cx, pc, self.first_tid + l as u32, byte, addr)
                            }
                            Err(h) => {
                                let mut f = cx.hazard_fault(h).at(l, addr, sp);
                                f.tensor = cx.region_name(sp, addr);
                                return Err(f);
                            }
                        }
                    }
                    let o = addr as usize;
                    let bytes = &mut cta.shared[o..o + size as usize];
                    old = le(bytes);
                    let new = atom_apply(op, ty, old, bv, cv);
                    bytes.copy_from_slice(&new.to_le_bytes()[..size as usize]);
                }
                _ => {
                    return Err(
                        Fault::new(CheckKind::Memcheck, "atomic on local or param memory")
                            .at(l, addr, sp),
                    );
                }
            }
            let v = if ty.is_signed() {
                sx(old, ty.bits()) as u64
            } else {
                old
            };
            self.regs[d as usize * 32 + l] = v;
            if cta.observing {
                cta.accesses.push(Access {
                    thread: self.first_tid + l as u32,
                    space: sp,
                    kind: AccessKind::Atomic,
                    addr,
                    bytes: size,
                    buffer,
                });
            }
        }
        Ok(())
    }
}

fn space_word(s: Space) -> &'static str {
    match s {
        Space::Global => "global",
        Space::Shared => "shared",
        Space::Local => "local",
        Space::Param => "param",
    }
}

/// Little-endian value of up to 8 bytes.
#[inline(always)]
fn le(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(b)
}

fn mul_hi(x: u64, y: u64, bits: u32, signed: bool) -> u64 {
    if signed {
        let p = i128::from(sx(x, bits)) * i128::from(sx(y, bits));
        ((p >> bits) as u64) & mask(bits)
    } else {
        let p = u128::from(zx(x, bits)) * u128::from(zx(y, bits));
        ((p >> bits) as u64) & mask(bits)
    }
}

fn mul_wide(x: u64, y: u64, bits: u32, signed: bool) -> u64 {
    if signed {
        (sx(x, bits).wrapping_mul(sx(y, bits)) as u64) & mask(bits * 2)
    } else {
        zx(x, bits).wrapping_mul(zx(y, bits)) & mask(bits * 2)
    }
}

/// The new value of an atomic location.
/// `atom.global.add.f32` as the hardware does it: subnormal inputs and
/// results flushed to zero of their sign (the PTX ISA's `atom` notes; in
/// shared memory the add keeps subnormals).
fn global_add_f32(old: u32, b: u32) -> u32 {
    let ftz = |x: f32| {
        if x.is_subnormal() {
            0.0f32.copysign(x)
        } else {
            x
        }
    };
    ftz(ftz(f32::from_bits(old)) + ftz(f32::from_bits(b))).to_bits()
}

fn atom_apply(op: AtomOp, ty: Ty, old: u64, b: u64, c: u64) -> u64 {
    let bits = ty.bits();
    let m = mask(bits);
    match op {
        AtomOp::Add => match ty {
            Ty::F16 => {
                // The sum of two 16-bit floats is exact in f64 wherever it
                // could round differently, so each rounds once.
                let sum = half::f16::from_bits(old as u16).to_f64()
                    + half::f16::from_bits(b as u16).to_f64();
                u64::from(half::f16::from_f64(sum).to_bits())
            }
            Ty::Bf16 => {
                let sum = half::bf16::from_bits(old as u16).to_f64()
                    + half::bf16::from_bits(b as u16).to_f64();
                u64::from(half::bf16::from_f64(sum).to_bits())
            }
            Ty::F32 => u64::from((f32_of(old) + f32_of(b)).to_bits()),
            Ty::F64 => (f64_of(old) + f64_of(b)).to_bits(),
            _ => old.wrapping_add(b) & m,
        },
        AtomOp::Min => {
            if ty.is_signed() {
                sx(old, bits).min(sx(b, bits)) as u64 & m
            } else {
                zx(old, bits).min(zx(b, bits))
            }
        }
        AtomOp::Max => {
            if ty.is_signed() {
                sx(old, bits).max(sx(b, bits)) as u64 & m
            } else {
                zx(old, bits).max(zx(b, bits))
            }
        }
        AtomOp::Exch => b & m,
        AtomOp::Cas => {
            if zx(old, bits) == zx(b, bits) {
                c & m
            } else {
                old
            }
        }
        AtomOp::And => old & b & m,
        AtomOp::Or => (old | b) & m,
        AtomOp::Xor => (old ^ b) & m,
        AtomOp::Inc => {
            if zx(old, bits) >= zx(b, bits) {
                0
            } else {
                (old + 1) & m
            }
        }
        AtomOp::Dec => {
            if zx(old, bits) == 0 || zx(old, bits) > zx(b, bits) {
                b & m
            } else {
                (old - 1) & m
            }
        }
    }
}
