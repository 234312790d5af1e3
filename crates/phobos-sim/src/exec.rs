//! Executes one decoded instruction for a mask of lanes of a warp.
//!
//! Arithmetic reads whole 32-lane rows of the value file, computes all 32
//! lanes in one tight loop (pure functions, so inactive lanes are harmless)
//! and writes back only the active lanes. Memory operations, shuffles and
//! votes loop over the active lanes only. Control flow and scheduling are
//! `warp`'s job; check reports are worded by `checks` from a [`Fault`].

use crate::checks::{access_word, misaligned, shared_out_of_bounds, space_word, Fault, Stamp};
use crate::decode::{
    Addr, AtomOp, BoolOp, Cmp, FloatOp, IntOp, MemSpace, Op, PredId, PredLogic, PredSrc, ShflMode,
    Slot, Ty, VoteMode,
};
use crate::error::CheckKind;
use crate::launch::{CtaState, Ctx};
use crate::memory::{classify_generic, Generic, GlobalFault};
use crate::numeric::*;
use crate::observer::{Access, AccessKind, Space};
use crate::tensor::SharedBytes;
use crate::warp::{lanes, Warp, FULL};
use num_traits::Float;
use std::sync::atomic::Ordering::Relaxed;

/// One load or store of `n` values of `ty` per lane (`ld`, `st`, their
/// vector forms; `ldmatrix` reads `n` 8x8 `b16` matrices the same way):
/// the registers it fills or reads, and the address `[base+offset]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemOp {
    pub store: bool,
    pub space: MemSpace,
    pub ty: Ty,
    pub n: u8,
    pub regs: [Slot; 4],
    pub addr: Addr,
}

impl MemOp {
    /// The bytes one lane moves.
    #[inline(always)]
    fn bytes(&self) -> u32 {
        self.ty.bytes() * u32::from(self.n)
    }

    /// Lane `l`'s raw address.
    #[inline(always)]
    fn raw_address(&self, regs: &[u64], l: usize) -> u64 {
        address(regs, self.addr, l)
    }
}

/// Lane `l`'s address `[base+offset]`, before its space is resolved.
#[inline(always)]
pub(crate) fn address(regs: &[u64], addr: Addr, l: usize) -> u64 {
    addr.base
        .map_or(0, |b| regs[b as usize * 32 + l])
        .wrapping_add(addr.offset as u64)
}

/// One `atom`: `d = old`, the location updated by `op` with `b` (and `c`
/// for `cas`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AtomicOp {
    pub space: MemSpace,
    pub op: AtomOp,
    pub ty: Ty,
    pub d: Slot,
    pub addr: Addr,
    pub b: Slot,
    pub c: Slot,
}

type Row = [u64; 32];

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

    /// Executes `op` for the lanes in `active`: one line per instruction
    /// family, each in its own method below (moves, integer and float
    /// arithmetic, conversions, predicates, memory, warp collectives, and
    /// the tensor-core and `cp.async` operations of `tensor`).
    pub(crate) fn exec(
        &mut self,
        op: &Op,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        if cta.wgmma.on {
            self.wgmma_registers(op, active, pc, cx, cta)?;
        }
        match *op {
            Op::Mov { d, a, bits } => {
                let m = mask(bits);
                self.map1(active, d, a, |x| x & m);
            }
            Op::LoopStep { d, a, b } => self.loop_step(d, a, b, active, pc, cx)?,
            Op::AddImm { d, a, k, bits } => {
                let m = mask(bits);
                self.map1(active, d, a, |x| x.wrapping_add(k) & m);
            }
            Op::Pack {
                d,
                srcs,
                n,
                part_bits,
            } => self.pack(d, srcs, n, part_bits, active),
            Op::Unpack {
                ds,
                n,
                a,
                part_bits,
            } => self.unpack(ds, n, a, part_bits, active),
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
                    self.float(op, (ftz, sat), d, s, active, cx);
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
                    self.cvt_int(d, a, dst, src, active);
                } else {
                    self.map1(active, d, a, |x| cvt(x, dst, src, rnd, sat, ftz));
                }
            }
            Op::CvtPack { d, a, b, dst, rnd } => self.map2(active, d, a, b, |x, y| {
                let half = |v| cvt(v, dst, Ty::F32, rnd, false, false) & 0xFFFF;
                (half(x) << 16) | half(y)
            }),
            Op::CvtF8Pack {
                d,
                a,
                b,
                f8,
                f16x2,
                relu,
            } => self.map2(active, d, a, b, |x, y| {
                let (hi, lo) = if f16x2 {
                    (
                        crate::numeric::read_float(x >> 16, Ty::F16, false),
                        crate::numeric::read_float(x & 0xFFFF, Ty::F16, false),
                    )
                } else {
                    (
                        crate::numeric::read_float(x, Ty::F32, false),
                        crate::numeric::read_float(y, Ty::F32, false),
                    )
                };
                let enc = |v: f64| u64::from(f8.encode_satfinite(v, relu));
                (enc(hi) << 8) | enc(lo)
            }),
            Op::CvtF8Unpack { d, a, f8, relu } => self.map1(active, d, a, |x| {
                let half = |b: u64| u64::from(f8.to_f16_bits(b as u8, relu));
                (half(x >> 8) << 16) | half(x & 0xFF)
            }),
            Op::CvtTf32 { d, a } => self.map1(active, d, a, |x| {
                u64::from(crate::tensor::tf32_rna(x as u32))
            }),
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
                let r = self.compare(cmp, ty, ftz, a, b);
                self.set_compared(r, p, q, comb, active);
            }
            Op::Selp { d, a, b, c, bits } => self.selp(d, [a, b], c, bits, active),
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
                let m = MemOp {
                    store: false,
                    space,
                    ty,
                    n,
                    regs: ds,
                    addr,
                };
                return self.memory(&m, active, pc, cx, cta);
            }
            Op::St {
                space,
                ty,
                n,
                srcs,
                addr,
            } => {
                let m = MemOp {
                    store: true,
                    space,
                    ty,
                    n,
                    regs: srcs,
                    addr,
                };
                return self.memory(&m, active, pc, cx, cta);
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
                let m = AtomicOp {
                    space,
                    op,
                    ty,
                    d,
                    addr,
                    b,
                    c,
                };
                return self.atom(&m, active, pc, cx, cta);
            }
            Op::Shfl {
                mode,
                d,
                p,
                a,
                b,
                c,
                ..
            } => return self.shfl(mode, (d, p), [a, b, c], active, cx, cta),
            Op::Vote { mode, d, a, mask } => self.vote(mode, d, a, mask, active),
            Op::Ldmatrix {
                num,
                trans,
                ds,
                space,
                addr,
                ..
            } => {
                let m = MemOp {
                    store: false,
                    space,
                    ty: Ty::B16,
                    n: num,
                    regs: ds,
                    addr,
                };
                return self.ldmatrix(&m, trans, active, pc, cx, cta);
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
            } => return self.cp_async((size, src_size), (dst, src), active, pc, cx, cta),
            Op::CpAsyncCommit => self.cp_async_commit(active, cx, cta),
            Op::CpAsyncWait { keep } => return self.cp_async_wait(keep, active, pc, cx, cta),
            Op::WgmmaFence { .. } => return self.wgmma_fence(active, pc, cx, cta),
            Op::WgmmaCommit { .. } => return self.wgmma_commit(active, pc, cx, cta),
            Op::WgmmaWait { keep, .. } => return self.wgmma_wait(keep, active, pc, cx, cta),
            Op::Wgmma { idx, .. } => return self.wgmma_issue(idx, active, pc, cx, cta),
            Op::Tma { idx, .. } => return self.tma(idx, active, pc, cx, cta),
            Op::Elect { d, p, mask } => self.elect(d, p, mask, active),
            Op::WarpSync { .. } | Op::Nop | Op::Bra { .. } | Op::Exit | Op::Bar => {}
        }
        Ok(())
    }

    /// `mov.b{16,32,64} d, {a, b, ...}`: `n` parts of `part_bits` each.
    fn pack(&mut self, d: Slot, srcs: [Slot; 4], n: u8, part_bits: u32, active: u32) {
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

    /// `mov.b{16,32,64} {d0, d1, ...}, a`.
    fn unpack(&mut self, ds: [Slot; 4], n: u8, a: Slot, part_bits: u32, active: u32) {
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

    /// An f32 instruction, its modifiers resolved at compile time (the
    /// plain form is the hot one), then moved by `.approx`'s worst case
    /// when the launch asks for it.
    #[inline(always)]
    fn float(
        &mut self,
        op: FloatOp,
        (ftz, sat): (bool, bool),
        d: Slot,
        s: [Slot; 3],
        active: u32,
        cx: &Ctx,
    ) {
        // The input, kept for the worst-case `.approx` model (the result
        // may overwrite it in place).
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

    /// `cvt` between integer types without `.sat`: truncate to the
    /// destination type, then extend to the register by the destination's
    /// signedness.
    fn cvt_int(&mut self, d: Slot, a: Slot, dst: Ty, src: Ty, active: u32) {
        let (sb, db) = (src.bits(), dst.bits());
        let w = sb.min(db);
        match (src.is_signed() && sb <= db, dst.is_signed()) {
            (true, _) => self.map1(active, d, a, |x| sx(x, w) as u64),
            (false, true) if db <= sb => self.map1(active, d, a, |x| sx(x, db) as u64),
            _ => self.map1(active, d, a, |x| zx(x, w)),
        }
    }

    /// `setp`'s comparison in all 32 lanes, as a lane mask.
    fn compare(&self, cmp: Cmp, ty: Ty, ftz: bool, a: Slot, b: Slot) -> u32 {
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
        r
    }

    /// `setp`'s results: `p` (and `q`, the complement), each combined with
    /// the optional `.and`/`.or`/`.xor` predicate.
    fn set_compared(
        &mut self,
        r: u32,
        p: PredId,
        q: Option<PredId>,
        comb: Option<(BoolOp, PredSrc)>,
        active: u32,
    ) {
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

    /// `selp d, a, b, c`: `a` where `c` holds, else `b`.
    fn selp(&mut self, d: Slot, [a, b]: [Slot; 2], c: PredSrc, bits: u32, active: u32) {
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

    /// `vote.sync.{ballot,any,all,uni}`.
    fn vote(&mut self, mode: VoteMode, d: Slot, a: PredSrc, mask: Slot, active: u32) {
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

    /// A loop's `i += step` (`Op::LoopStep`): the language requires the sum
    /// to stay inside i32.
    fn loop_step(
        &mut self,
        d: Slot,
        a: Slot,
        b: Slot,
        active: u32,
        pc: u32,
        cx: &Ctx,
    ) -> Result<(), Fault> {
        let (d, a, b) = (d as usize * 32, a as usize * 32, b as usize * 32);
        if d.max(a).max(b) + 32 > self.regs.len() {
            return Ok(());
        }
        for l in lanes(active) {
            let (x, y) = (
                self.regs[a + l] as u32 as i32,
                self.regs[b + l] as u32 as i32,
            );
            match x.checked_add(y) {
                Some(v) => self.regs[d + l] = u64::from(v as u32),
                None => {
                    let name = cx.entry.info[pc as usize]
                        .loop_var
                        .as_deref()
                        .unwrap_or("?");
                    let mut f = Fault::new(
                        CheckKind::LoopStep,
                        format!(
                            "the loop over `{name}` steps past the end of i32 after its last trip ({x} + {y})"
                        ),
                    );
                    f.lane = Some(l as u32);
                    f.notes.push(
                        "`i += step` after a loop's last trip must stay inside i32 (docs/language.md, `for`): on a GPU the loop would wrap and run on"
                            .to_string(),
                    );
                    return Err(f);
                }
            }
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
        self.float_op(op, d, s, active, fin, fout);
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
        self.float_op(op, d, s, active, f64_of, fout);
    }

    /// One float operation over the active lanes, the same table for both
    /// widths: `fin` reads a register as `F` and `fout` writes a result back,
    /// each applying the instruction's flushing and saturation.
    fn float_op<F: Float>(
        &mut self,
        op: FloatOp,
        d: Slot,
        [a, b, c]: [Slot; 3],
        active: u32,
        fin: impl Fn(u64) -> F + Copy,
        fout: impl Fn(F) -> u64 + Copy,
    ) {
        match op {
            FloatOp::Add => self.map2(active, d, a, b, |x, y| fout(fin(x) + fin(y))),
            FloatOp::Sub => self.map2(active, d, a, b, |x, y| fout(fin(x) - fin(y))),
            FloatOp::Mul => self.map2(active, d, a, b, |x, y| fout(fin(x) * fin(y))),
            FloatOp::Fma => self.map3(active, d, [a, b, c], |x, y, z| {
                fout(fin(x).mul_add(fin(y), fin(z)))
            }),
            FloatOp::Div => self.map2(active, d, a, b, |x, y| fout(fin(x) / fin(y))),
            FloatOp::Rcp => self.map1(active, d, a, |x| fout(F::one() / fin(x))),
            FloatOp::Sqrt => self.map1(active, d, a, |x| fout(fin(x).sqrt())),
            FloatOp::Rsqrt => self.map1(active, d, a, |x| fout(F::one() / fin(x).sqrt())),
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

    /// `shfl.sync.MODE d[|p], a, b, c`.
    fn shfl(
        &mut self,
        mode: ShflMode,
        (d, p): (Slot, Option<PredId>),
        [a, b, c]: [Slot; 3],
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
                Generic::Param(o) => (Space::Param, o),
            },
        }
    }

    /// `ld` and `st` in any space, for every active lane: the address
    /// resolved and checked for alignment, then the space's own access
    /// (bounds, and racecheck/initcheck in shared memory), then the loaded
    /// values written back, sign-extended.
    fn memory(
        &mut self,
        m: &MemOp,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        if m.space == MemSpace::Global && !m.store {
            return self.global_load(m, active, cx, cta);
        }
        let total = m.bytes();
        let n = m.n as usize;
        for l in lanes(active) {
            let (sp, addr) = Self::resolve(m.space, m.raw_address(&self.regs, l));
            if addr & (u64::from(total) - 1) != 0 {
                let what = format!("{} {}", space_word(sp), access_word(m.store));
                return Err(cx.memcheck_at(misaligned(&what, total), l, addr, sp));
            }
            let mut vals = [0u64; 4];
            if m.store {
                for (v, &r) in vals.iter_mut().zip(&m.regs).take(n) {
                    *v = self.regs[r as usize * 32 + l];
                }
            }
            let buffer = match sp {
                Space::Global => Some(self.global_access(m, (l, addr), &mut vals, cx, cta)?),
                Space::Shared => {
                    self.shared_access(m, (l, addr), &mut vals, pc, cx, cta)?;
                    None
                }
                Space::Local => {
                    self.local_access(m, (l, addr), &mut vals, cx)?;
                    None
                }
                Space::Param => {
                    Self::param_load(m, (l, addr), &mut vals, cx)?;
                    None
                }
            };
            if !m.store {
                let (signed, bits) = (m.ty.is_signed(), m.ty.bits());
                for (&v, &r) in vals.iter().zip(&m.regs).take(n) {
                    let v = if signed { sx(v, bits) as u64 } else { v };
                    self.regs[r as usize * 32 + l] = v;
                }
            }
            if cta.observing {
                cta.accesses.push(Access {
                    thread: self.first_tid + l as u32,
                    space: sp,
                    kind: if m.store {
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

    /// Lane `l`'s global load or store of `vals` at `addr`; returns the
    /// buffer it touched.
    fn global_access(
        &self,
        m: &MemOp,
        (l, addr): (usize, u64),
        vals: &mut [u64; 4],
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<usize, Fault> {
        let size = m.ty.bytes();
        let total = m.bytes();
        let (bi, off) = cx.dev.locate(addr, total).map_err(|e| {
            cx.global_fault(e, addr, total, m.store)
                .at(l, addr, Space::Global)
        })?;
        let buf = &cx.dev.buffers[bi];
        for (k, v) in vals.iter_mut().enumerate().take(m.n as usize) {
            let o = off + u64::from(k as u32 * size);
            if m.store {
                buf.store(o, size, *v);
            } else {
                *v = buf.load(o, size);
            }
        }
        if m.store {
            cta.written[bi] = true;
        }
        Ok(bi)
    }

    /// Lane `l`'s shared load or store of `vals` at `addr`, checked for
    /// bounds and by racecheck and initcheck.
    fn shared_access(
        &self,
        m: &MemOp,
        (l, addr): (usize, u64),
        vals: &mut [u64; 4],
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let total = m.bytes();
        let limit = cta.shared.len() as u64;
        cx.buffer_bounds(
            pc,
            &format!("shared {}", access_word(m.store)),
            (l, addr),
            total,
        )?;
        if addr + u64::from(total) > limit {
            let what = format!("shared {}", access_word(m.store));
            return Err(cx.memcheck_at(
                shared_out_of_bounds(&what, total, limit),
                l,
                addr,
                Space::Shared,
            ));
        }
        let off = addr as u32;
        let start = off as usize;
        let mut bytes = SharedBytes::new(l, off, total, m.store);
        if m.store && cx.checks {
            // Which bytes the store leaves as they are: racecheck does not
            // report two unordered writes of the same value.
            let n = total as usize;
            let mut new = [0u8; 32];
            copy_values(&mut new[..n], m, vals);
            for (i, (a, b)) in new[..n]
                .iter()
                .zip(&cta.shared[start..start + n])
                .enumerate()
            {
                bytes.unchanged |= u32::from(a == b) << i;
            }
        }
        self.shared_check(bytes, pc, cx, cta)?;
        copy_values(&mut cta.shared[start..], m, vals);
        Ok(())
    }

    /// Lane `l`'s local load or store of `vals` at `addr`.
    fn local_access(
        &mut self,
        m: &MemOp,
        (l, addr): (usize, u64),
        vals: &mut [u64; 4],
        cx: &Ctx,
    ) -> Result<(), Fault> {
        let total = m.bytes();
        let limit = u64::from(cx.entry.local_bytes);
        if addr + u64::from(total) > limit {
            return Err(Fault::new(
                CheckKind::Memcheck,
                format!(
                    "out-of-bounds local {} of {total} bytes: the thread has {limit} bytes of local memory",
                    access_word(m.store)
                ),
            )
            .at(l, addr, Space::Local));
        }
        // Inside the frame but in no array: in the gap after one (bounds
        // are per array, as the language's are).
        let regions = &cx.entry.local;
        let inside = regions.iter().any(|r| {
            addr >= u64::from(r.offset)
                && addr + u64::from(total) <= u64::from(r.offset) + u64::from(r.bytes)
        });
        if !inside && !regions.is_empty() {
            let before = regions.iter().rev().find(|r| u64::from(r.offset) <= addr);
            let after = regions.iter().find(|r| u64::from(r.offset) > addr);
            let mut what = match before {
                Some(r) => format!("past the end of `{}` ({} bytes)", r.name, r.bytes),
                None => "before the first array".to_string(),
            };
            if let Some(r) = after {
                what.push_str(&format!(" and before `{}`", r.name));
            }
            return Err(Fault::new(
                CheckKind::Memcheck,
                format!(
                    "out-of-bounds local {} of {total} bytes: {what}",
                    access_word(m.store)
                ),
            )
            .at(l, addr, Space::Local));
        }
        let start = l * limit as usize + addr as usize;
        copy_values(&mut self.local[start..], m, vals);
        Ok(())
    }

    /// Lane `l`'s load of `vals` from the parameter block at `addr` (a
    /// store there is out of bounds).
    fn param_load(
        m: &MemOp,
        (l, addr): (usize, u64),
        vals: &mut [u64; 4],
        cx: &Ctx,
    ) -> Result<(), Fault> {
        let size = m.ty.bytes();
        let total = m.bytes();
        let limit = cx.params.len() as u64;
        if m.store || addr + u64::from(total) > limit {
            return Err(Fault::new(
                CheckKind::Memcheck,
                format!("out-of-bounds param load of {total} bytes: the kernel has {limit} bytes of parameters"),
            )
            .at(l, addr, Space::Param));
        }
        for (k, v) in vals.iter_mut().enumerate().take(m.n as usize) {
            let o = addr as usize + k * size as usize;
            *v = le(&cx.params[o..o + size as usize]);
        }
        Ok(())
    }

    /// The common case of `memory`: a load from global space.
    #[inline(always)]
    fn global_load(
        &mut self,
        m: &MemOp,
        active: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let size = m.ty.bytes();
        let n = m.n as usize;
        let (signed, bits) = (m.ty.is_signed(), m.ty.bits());
        let total = m.bytes();
        let dst = m.regs.map(|r| r as usize * 32);
        for l in lanes(active) {
            let addr = m.raw_address(&self.regs, l);
            if addr & (u64::from(total) - 1) != 0 {
                return Err(cx.memcheck_at(
                    misaligned("global load", total),
                    l,
                    addr,
                    Space::Global,
                ));
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

    /// `atom` in global or shared memory, for every active lane.
    fn atom(
        &mut self,
        m: &AtomicOp,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let size = m.ty.bytes();
        for l in lanes(active) {
            let (sp, addr) = Self::resolve(m.space, address(&self.regs, m.addr, l));
            let operands = (
                self.regs[m.b as usize * 32 + l],
                self.regs[m.c as usize * 32 + l],
            );
            if addr & (u64::from(size) - 1) != 0 {
                return Err(cx.memcheck_at(
                    format!("misaligned {} atomic of {size} bytes", space_word(sp)),
                    l,
                    addr,
                    sp,
                ));
            }
            let (old, buffer) = match sp {
                Space::Global => {
                    let (old, bi) = Self::global_atomic(m, l, addr, operands, cx)?;
                    cta.written[bi] = true;
                    (old, Some(bi))
                }
                Space::Shared => (
                    self.shared_atomic(m, (l, addr), operands, pc, cx, cta)?,
                    None,
                ),
                _ => {
                    return Err(
                        Fault::new(CheckKind::Memcheck, "atomic on local or param memory")
                            .at(l, addr, sp),
                    );
                }
            };
            let v = if m.ty.is_signed() {
                sx(old, m.ty.bits()) as u64
            } else {
                old
            };
            self.regs[m.d as usize * 32 + l] = v;
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

    /// Lane `l`'s global atomic at `addr` with operands `(b, c)`: the old
    /// value and the buffer updated.
    fn global_atomic(
        m: &AtomicOp,
        l: usize,
        addr: u64,
        (bv, cv): (u64, u64),
        cx: &Ctx,
    ) -> Result<(u64, usize), Fault> {
        let (op, ty, size) = (m.op, m.ty, m.ty.bytes());
        let (bi, off) = cx.dev.locate(addr, size).map_err(|e| {
            cx.global_fault(e, addr, size, true)
                .at(l, addr, Space::Global)
        })?;
        let buf = &cx.dev.buffers[bi];
        let word = |at: u64| {
            buf.atomic_word(at).ok_or_else(|| {
                cx.global_fault(
                    GlobalFault::OutOfBounds { buffer: Some(bi) },
                    addr,
                    size,
                    true,
                )
            })
        };
        let old = if size == 2 {
            // A 16-bit atomic updates its half of the aligned 32-bit word
            // around it, leaving the other half.
            let w = word(off & !3)?;
            let shift = (off & 2) * 8;
            let prev = w.fetch_update(Relaxed, Relaxed, |x| {
                let half = u64::from(x >> shift) & 0xFFFF;
                let new = atom_apply(op, ty, half, bv, cv) as u32 & 0xFFFF;
                Some((x & !(0xFFFF << shift)) | (new << shift))
            });
            u64::from(prev.unwrap_or_else(|x| x) >> shift) & 0xFFFF
        } else if size == 4 {
            let global_f32_add = op == AtomOp::Add && ty == Ty::F32;
            let w = word(off)?;
            let prev = w.fetch_update(Relaxed, Relaxed, |x| {
                if global_f32_add {
                    return Some(global_add_f32(x, bv as u32));
                }
                Some(atom_apply(op, ty, u64::from(x), bv, cv) as u32)
            });
            u64::from(prev.unwrap_or_else(|x| x))
        } else {
            let _guard = cx.dev.atomic64.lock().unwrap_or_else(|e| e.into_inner());
            let x = buf.load(off, 8);
            buf.store(off, 8, atom_apply(op, ty, x, bv, cv));
            x
        };
        Ok((old, bi))
    }

    /// Lane `l`'s shared atomic at `addr` with operands `(b, c)`, checked
    /// for bounds and by racecheck and initcheck: the old value.
    fn shared_atomic(
        &self,
        m: &AtomicOp,
        (l, addr): (usize, u64),
        (bv, cv): (u64, u64),
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<u64, Fault> {
        let size = m.ty.bytes();
        let limit = cta.shared.len() as u64;
        cx.buffer_bounds(pc, "shared atomic", (l, addr), size)?;
        if addr + u64::from(size) > limit {
            return Err(cx.memcheck_at(
                shared_out_of_bounds("shared atomic", size, limit),
                l,
                addr,
                Space::Shared,
            ));
        }
        self.async_guard(SharedBytes::new(l, addr as u32, size, true), pc, cx, cta)?;
        if cx.checks {
            let st = self.stamp(l, cta.epoch, pc);
            let outcome = cta.shadow.atomic(addr as u32, size, &st);
            cx.shadow_outcome(outcome, l, addr, st.tid, pc, cta)?;
        }
        let o = addr as usize;
        let bytes = &mut cta.shared[o..o + size as usize];
        let old = le(bytes);
        let new = atom_apply(m.op, m.ty, old, bv, cv);
        bytes.copy_from_slice(&new.to_le_bytes()[..size as usize]);
        Ok(old)
    }
}

/// Stores `vals` into `bytes` (from its start) for a store, or loads them
/// from it, `m.n` values of `m.ty`'s size, little-endian.
fn copy_values(bytes: &mut [u8], m: &MemOp, vals: &mut [u64; 4]) {
    let size = m.ty.bytes() as usize;
    for (k, v) in vals.iter_mut().enumerate().take(m.n as usize) {
        let b = &mut bytes[k * size..(k + 1) * size];
        if m.store {
            b.copy_from_slice(&v.to_le_bytes()[..size]);
        } else {
            *v = le(b);
        }
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
