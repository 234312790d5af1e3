//! Tensor-core and asynchronous-copy instructions: `mma.sync`, `ldmatrix`
//! and `cp.async` with its groups.
//!
//! **Fragments.** `mma.sync.aligned.m16n8kK.row.col` spreads A (16×K), B
//! (K×8) and C/D (16×8) over the warp's lanes as the PTX ISA's "Matrix
//! Fragments for mma.m16n8kK" sections define them. With `g = lane / 4`,
//! `t = lane % 4` and `e` elements per 32-bit register (2 for f16/bf16, 1
//! for tf32, 4 for s8/u8), element `j` of register `r` (lowest bits first)
//! is:
//! - A: row `g + 8 * (r % 2)`, column `(r / 2) * 4e + e * t + j`;
//! - B: row `r * 4e + e * t + j`, column `g`;
//! - C/D with f32 or s32 elements: row `g + 8 * (r / 2)`, column `2t + r % 2`;
//! - C/D with f16 elements (two per register): row `g + 8r`, column `2t + j`.
//!
//! These reduce to the ISA's per-shape tables (m16n8k8 and m16n8k16 for
//! f16/bf16, m16n8k8 for tf32, m16n8k16 and m16n8k32 for s8/u8).
//!
//! **Arithmetic.** Floating-point products are exact in f64 and summed in
//! f64 with C, then rounded once to the accumulator type (round to nearest
//! even). Hardware sums in an unspecified order and internal precision, so
//! a GPU may differ in the last bits. A tf32 operand is the f32 register
//! with its low 13 bits ignored, as the tensor cores read it. Integer
//! products are summed exactly and wrap to 32 bits, or clamp with
//! `.satfinite`.
//!
//! **`ldmatrix`.** Lanes `8i .. 8i + 7` give the row addresses of matrix `i`
//! (16 bytes each, in shared memory, 16-byte aligned). Lane `l` receives
//! row `l / 4`, elements `2(l % 4)` and `2(l % 4) + 1`; with `.trans` it
//! receives column `l / 4`, rows `2(l % 4)` and `2(l % 4) + 1`.
//!
//! **`cp.async`.** The source is read when the copy is issued; the bytes
//! land in shared memory when the issuing thread's `cp.async.wait_group` or
//! `wait_all` completes its group (or when the CTA ends), the latest moment
//! the ISA allows. Until then any access to the destination bytes by any
//! thread is a racecheck error, so a read of a stage before its wait cannot
//! pass in the simulator and fail on hardware.

use crate::checks::{misaligned, shared_out_of_bounds, Fault};
use crate::decode::{Addr, MemSpace, Slot};
use crate::error::CheckKind;
use crate::exec::{address, MemOp};
use crate::launch::{CtaState, Ctx};
use crate::observer::{Access, AccessKind, Space};
use crate::warp::{lanes, Warp, FULL};

/// An operand element type of `mma`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MmaElem {
    F16,
    Bf16,
    Tf32,
    S8,
    U8,
    /// The 8-bit floats (sm_89 and newer).
    F8(crate::numeric::F8),
}

impl MmaElem {
    pub(crate) fn parse(s: &str) -> Option<MmaElem> {
        Some(match s {
            "f16" => MmaElem::F16,
            "bf16" => MmaElem::Bf16,
            "tf32" => MmaElem::Tf32,
            "s8" => MmaElem::S8,
            "u8" => MmaElem::U8,
            "e4m3" | "e5m2" => MmaElem::F8(crate::numeric::F8::parse(s)?),
            _ => return None,
        })
    }

    /// Elements per 32-bit register.
    pub(crate) fn per_reg(self) -> u32 {
        match self {
            MmaElem::F16 | MmaElem::Bf16 => 2,
            MmaElem::Tf32 => 1,
            MmaElem::S8 | MmaElem::U8 | MmaElem::F8(_) => 4,
        }
    }

    pub(crate) fn is_int(self) -> bool {
        matches!(self, MmaElem::S8 | MmaElem::U8)
    }

    /// Element `j` of register word `w`, as f64 (floats) or exactly (ints).
    fn value(self, w: u32, j: u32) -> f64 {
        match self {
            MmaElem::F16 => half::f16::from_bits((w >> (16 * j)) as u16).to_f64(),
            MmaElem::Bf16 => half::bf16::from_bits((w >> (16 * j)) as u16).to_f64(),
            MmaElem::Tf32 => f64::from(f32::from_bits(w & 0xFFFF_E000)),
            MmaElem::S8 => f64::from((w >> (8 * j)) as u8 as i8),
            MmaElem::U8 => f64::from((w >> (8 * j)) as u8),
            MmaElem::F8(f) => f.value((w >> (8 * j)) as u8),
        }
    }
}

/// An accumulator (C or D) element type of `mma`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MmaAcc {
    F32,
    F16,
    S32,
}

impl MmaAcc {
    pub(crate) fn parse(s: &str) -> Option<MmaAcc> {
        Some(match s {
            "f32" => MmaAcc::F32,
            "f16" => MmaAcc::F16,
            "s32" => MmaAcc::S32,
            _ => return None,
        })
    }

    /// Registers of one lane's C or D fragment (16×8 elements over 32 lanes).
    pub(crate) fn regs(self) -> usize {
        match self {
            MmaAcc::F16 => 2,
            _ => 4,
        }
    }
}

/// A decoded `mma.sync.aligned.m16n8kK.row.col` (kept beside the
/// instruction stream: its 14 operands would make every `Op` larger).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MmaInst {
    pub k: u32,
    pub a_ty: MmaElem,
    pub b_ty: MmaElem,
    pub c_ty: MmaAcc,
    pub d_ty: MmaAcc,
    pub satfinite: bool,
    pub d: Vec<Slot>,
    pub a: Vec<Slot>,
    pub b: Vec<Slot>,
    pub c: Vec<Slot>,
}

impl MmaInst {
    /// Checks a shape and type combination against the ISA's table of
    /// `mma.m16n8kK` forms that the simulator runs; returns why not.
    pub(crate) fn validate(&self) -> Result<(), String> {
        use MmaAcc as A;
        use MmaElem as E;
        let ok = match (self.k, self.a_ty) {
            (8, E::F16) | (16, E::F16) => {
                self.a_ty == self.b_ty
                    && matches!((self.c_ty, self.d_ty), (A::F32 | A::F16, A::F32 | A::F16))
            }
            (8, E::Bf16) | (16, E::Bf16) => {
                self.a_ty == self.b_ty && self.c_ty == A::F32 && self.d_ty == A::F32
            }
            (8, E::Tf32) => self.b_ty == E::Tf32 && self.c_ty == A::F32 && self.d_ty == A::F32,
            (16 | 32, E::S8 | E::U8) => {
                self.b_ty.is_int() && self.c_ty == A::S32 && self.d_ty == A::S32
            }
            // `.e4m3`/`.e5m2` in any pairing, into f32 (PTX 8.4) or f16
            // (PTX 8.7, with the `m16n8k16` shape); the fragments are the
            // 8-bit integer ones.
            (16 | 32, E::F8(_)) => {
                matches!(self.b_ty, E::F8(_))
                    && matches!((self.c_ty, self.d_ty), (A::F32, A::F32) | (A::F16, A::F16))
            }
            _ => false,
        };
        if !ok {
            return Err(format!(
                "mma shape m16n8k{} with types {:?}×{:?} → {:?} (+{:?}) is not supported",
                self.k, self.a_ty, self.b_ty, self.d_ty, self.c_ty
            ));
        }
        if self.satfinite && !self.a_ty.is_int() {
            return Err(".satfinite is supported on integer mma only".into());
        }
        Ok(())
    }

    /// Registers of one lane's A fragment (16×K elements over 32 lanes).
    pub(crate) fn a_regs(k: u32, ty: MmaElem) -> usize {
        (k / (2 * ty.per_reg())) as usize
    }

    /// Registers of one lane's B fragment (K×8 elements over 32 lanes).
    pub(crate) fn b_regs(k: u32, ty: MmaElem) -> usize {
        (k / (4 * ty.per_reg())) as usize
    }
}

/// Row and column of element `j` of A register `r` held by `lane`.
pub(crate) fn a_coord(lane: u32, r: u32, j: u32, e: u32) -> (u32, u32) {
    let (g, t) = (lane / 4, lane % 4);
    (g + 8 * (r % 2), (r / 2) * 4 * e + e * t + j)
}

/// Row and column of element `j` of B register `r` held by `lane`.
pub(crate) fn b_coord(lane: u32, r: u32, j: u32, e: u32) -> (u32, u32) {
    let (g, t) = (lane / 4, lane % 4);
    (r * 4 * e + e * t + j, g)
}

/// Row and column of element `j` of C/D register `r` held by `lane`.
pub(crate) fn c_coord(lane: u32, r: u32, j: u32, acc: MmaAcc) -> (u32, u32) {
    let (g, t) = (lane / 4, lane % 4);
    match acc {
        MmaAcc::F16 => (g + 8 * r, 2 * t + j),
        _ => (g + 8 * (r / 2), 2 * t + r % 2),
    }
}

/// `cvt.rna.tf32.f32`: rounds to 10 mantissa bits, ties away from zero,
/// leaving the low 13 bits zero. Infinities stay; NaN becomes the
/// canonical NaN; a finite value may round up to infinity.
pub(crate) fn tf32_rna(x: u32) -> u32 {
    let f = f32::from_bits(x);
    if f.is_nan() {
        0x7FFF_FFFF
    } else if f.is_infinite() {
        x
    } else {
        x.wrapping_add(0x1000) & 0xFFFF_E000
    }
}

/// One `cp.async` in flight.
#[derive(Clone, Debug)]
pub(crate) struct AsyncCopy {
    /// Issuing thread (linear in the CTA) and instruction.
    pub tid: u32,
    pub pc: u32,
    /// Destination offset in shared memory, and the bytes to land there.
    pub dst: u32,
    pub len: u32,
    pub data: [u8; 16],
    /// The thread's group number once committed.
    pub group: Option<u32>,
}

/// A CTA's `cp.async` state.
#[derive(Default)]
pub(crate) struct AsyncState {
    pub copies: Vec<AsyncCopy>,
    /// Copies in flight per shared byte (sized on the first copy).
    pub pending: Vec<u16>,
    /// Per thread: the number of groups committed so far.
    pub groups: Vec<u32>,
}

impl AsyncState {
    pub(crate) fn reset(&mut self) {
        self.copies.clear();
        self.pending.clear();
        self.groups.clear();
    }

    /// Whether any copy is in flight.
    #[inline(always)]
    pub(crate) fn busy(&self) -> bool {
        !self.copies.is_empty()
    }

    /// The copy in flight that covers a byte of `[off, off + len)`, if any.
    fn covering(&self, off: u32, len: u32) -> Option<&AsyncCopy> {
        let end = (off + len) as usize;
        let hit = (off as usize..end.min(self.pending.len())).any(|b| self.pending[b] != 0);
        if !hit {
            return None;
        }
        self.copies
            .iter()
            .find(|c| c.dst < off + len && off < c.dst + c.len)
    }

    /// Lands the copies of `tid` that `done` selects, in issue order.
    fn complete(
        &mut self,
        shared: &mut [u8],
        mut done: impl FnMut(&AsyncCopy) -> bool,
    ) -> Vec<(u32, u32)> {
        let mut landed = Vec::new();
        let mut i = 0;
        while i < self.copies.len() {
            if done(&self.copies[i]) {
                let c = self.copies.remove(i);
                let (o, n) = (c.dst as usize, c.len as usize);
                if let Some(dst) = shared.get_mut(o..o + n) {
                    dst.copy_from_slice(&c.data[..n]);
                }
                for b in &mut self.pending[o..o + n] {
                    *b = b.saturating_sub(1);
                }
                landed.push((c.dst, c.len));
            } else {
                i += 1;
            }
        }
        landed
    }

    /// Lands every copy still in flight (the CTA has ended).
    pub(crate) fn flush(&mut self, shared: &mut [u8]) {
        self.complete(shared, |_| true);
    }
}

/// One lane's access of the shared bytes `[off, off + len)`, as the
/// racecheck sees it.
#[derive(Clone, Copy)]
pub(crate) struct SharedBytes {
    pub lane: usize,
    pub off: u32,
    pub len: u32,
    pub store: bool,
    /// For a plain store: bit `i` set when byte `off + i` already holds
    /// the value the store writes (see [`Shadow::write`]).
    pub unchanged: u32,
}

impl SharedBytes {
    pub fn new(lane: usize, off: u32, len: u32, store: bool) -> Self {
        SharedBytes {
            lane,
            off,
            len,
            store,
            unchanged: 0,
        }
    }
}

impl Warp {
    /// Racecheck for a shared access of `[off, off + len)` while copies are
    /// in flight: touching bytes that a `cp.async` has not yet delivered is
    /// a race, whoever issued it.
    pub(crate) fn async_guard(
        &self,
        bytes: SharedBytes,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let SharedBytes {
            lane: l,
            off,
            len,
            store,
            ..
        } = bytes;
        if store {
            self.wgmma_guard(l, off, len, cx, cta)?;
        }
        if cta.tma.on {
            crate::bulk::generic_guard(self, (l, off, len, store), pc, cx, cta)?;
        }
        if !cx.checks || !cta.asyncs.busy() {
            return Ok(());
        }
        let Some(c) = cta.asyncs.covering(off, len) else {
            return Ok(());
        };
        let [x, y, z] = cx.thread_xyz(c.tid);
        let mut f = Fault::new(
            CheckKind::Racecheck,
            format!(
                "{} of shared memory that a cp.async has not yet delivered",
                if store { "write" } else { "read" }
            ),
        )
        .at(l, u64::from(off), Space::Shared);
        f.tensor = cx.region_name(Space::Shared, u64::from(off));
        f.notes.push(format!(
            "thread ({x}, {y}, {z}) issued a cp.async to these bytes at {}; they are defined only after that thread's cp.async.wait_group (or wait_all) completes its group, and other threads may use them only after a barrier that follows the wait",
            cx.where_is(c.pc)
        ));
        Err(f)
    }

    /// Shadow check (racecheck and initcheck) for one lane's shared access,
    /// after the check against copies in flight.
    pub(crate) fn shared_check(
        &self,
        bytes: SharedBytes,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        self.async_guard(bytes, pc, cx, cta)?;
        if !cx.checks {
            return Ok(());
        }
        let (l, off, len) = (bytes.lane, bytes.off, bytes.len);
        let st = self.stamp(l, cta.epoch, pc);
        let outcome = if bytes.store {
            cta.shadow
                .write(off, len, &st, bytes.unchanged)
                .map(|()| None)
        } else {
            cta.shadow.read(off, len, &st)
        };
        cx.shadow_outcome(outcome, l, u64::from(off), st.tid, pc, cta)
    }

    /// A shared-memory byte offset for lane `l`'s address, checked for
    /// space, alignment and bounds.
    fn shared_offset(
        &self,
        l: usize,
        (space, addr): (MemSpace, Addr),
        len: u32,
        what: &str,
        cx: &Ctx,
        cta: &CtaState,
    ) -> Result<u32, Fault> {
        let (sp, addr) = Self::resolve(space, address(&self.regs, addr, l));
        if sp != Space::Shared {
            return Err(Fault::new(
                CheckKind::Memcheck,
                format!("{what} address is not in shared memory"),
            )
            .at(l, addr, sp));
        }
        if !addr.is_multiple_of(u64::from(len)) {
            return Err(cx.memcheck_at(misaligned(what, len), l, addr, sp));
        }
        let limit = cta.shared.len() as u64;
        if addr + u64::from(len) > limit {
            return Err(cx.memcheck_at(shared_out_of_bounds(what, len, limit), l, addr, sp));
        }
        Ok(addr as u32)
    }

    pub(crate) fn whole_warp(&self, active: u32, what: &str) -> Result<(), Fault> {
        if active == FULL {
            return Ok(());
        }
        let mut f = Fault::new(
            CheckKind::Synccheck,
            format!(
                "{what} executed by lanes {} only; it needs all 32 lanes of the warp",
                crate::warp::lane_list(active)
            ),
        );
        f.lane = Some((!active).trailing_zeros());
        Err(f)
    }

    /// `ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.b16`: `m.n` matrices
    /// into `m.regs`.
    pub(crate) fn ldmatrix(
        &mut self,
        op: &MemOp,
        trans: bool,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let (num, ds) = (op.n, op.regs);
        self.whole_warp(active, "ldmatrix.sync.aligned")?;
        let mut rows = [[[0u16; 8]; 8]; 4];
        for (i, m) in rows.iter_mut().enumerate().take(num as usize) {
            for (r, row) in m.iter_mut().enumerate() {
                let p = i * 8 + r;
                let off =
                    self.shared_offset(p, (op.space, op.addr), 16, "ldmatrix row read", cx, cta)?;
                self.shared_check(SharedBytes::new(p, off, 16, false), pc, cx, cta)?;
                let bytes = &cta.shared[off as usize..off as usize + 16];
                for (k, v) in row.iter_mut().enumerate() {
                    *v = u16::from_le_bytes([bytes[2 * k], bytes[2 * k + 1]]);
                }
                if cta.observing {
                    cta.accesses.push(Access {
                        thread: self.first_tid + p as u32,
                        space: Space::Shared,
                        kind: AccessKind::Load,
                        addr: u64::from(off),
                        bytes: 16,
                        buffer: None,
                    });
                }
            }
        }
        for (i, m) in rows.iter().enumerate().take(num as usize) {
            let d = ds[i] as usize * 32;
            for l in 0..32 {
                let (g, t) = (l / 4, l % 4);
                let (lo, hi) = if trans {
                    (m[2 * t][g], m[2 * t + 1][g])
                } else {
                    (m[g][2 * t], m[g][2 * t + 1])
                };
                self.regs[d + l] = u64::from(lo) | (u64::from(hi) << 16);
            }
        }
        Ok(())
    }

    /// `mma.sync.aligned.m16n8kK.row.col`: D = A·B + C over the whole warp.
    pub(crate) fn mma(&mut self, m: &MmaInst, active: u32) -> Result<(), Fault> {
        self.whole_warp(active, "mma.sync.aligned")?;
        let k = m.k as usize;
        let (ea, eb) = (m.a_ty.per_reg(), m.b_ty.per_reg());
        let mut a = vec![0f64; 16 * k];
        let mut b = vec![0f64; k * 8];
        let mut c = [0f64; 16 * 8];
        let word = |regs: &[u64], s: Slot, l: u32| regs[s as usize * 32 + l as usize] as u32;
        for l in 0..32u32 {
            for (r, &s) in m.a.iter().enumerate() {
                let w = word(&self.regs, s, l);
                for j in 0..ea {
                    let (row, col) = a_coord(l, r as u32, j, ea);
                    a[row as usize * k + col as usize] = m.a_ty.value(w, j);
                }
            }
            for (r, &s) in m.b.iter().enumerate() {
                let w = word(&self.regs, s, l);
                for j in 0..eb {
                    let (row, col) = b_coord(l, r as u32, j, eb);
                    b[row as usize * 8 + col as usize] = m.b_ty.value(w, j);
                }
            }
            for (r, &s) in m.c.iter().enumerate() {
                let w = word(&self.regs, s, l);
                match m.c_ty {
                    MmaAcc::F16 => {
                        for j in 0..2 {
                            let (row, col) = c_coord(l, r as u32, j, m.c_ty);
                            c[row as usize * 8 + col as usize] =
                                half::f16::from_bits((w >> (16 * j)) as u16).to_f64();
                        }
                    }
                    MmaAcc::F32 => {
                        let (row, col) = c_coord(l, r as u32, 0, m.c_ty);
                        c[row as usize * 8 + col as usize] = f64::from(f32::from_bits(w));
                    }
                    MmaAcc::S32 => {
                        let (row, col) = c_coord(l, r as u32, 0, m.c_ty);
                        c[row as usize * 8 + col as usize] = f64::from(w as i32);
                    }
                }
            }
        }
        // D = A·B + C; integer sums are exact in i64.
        let mut dv = [0u32; 16 * 8];
        for row in 0..16 {
            for col in 0..8 {
                let i = row * 8 + col;
                dv[i] = if m.a_ty.is_int() {
                    let mut s = c[i] as i64;
                    for kk in 0..k {
                        s += a[row * k + kk] as i64 * b[kk * 8 + col] as i64;
                    }
                    if m.satfinite {
                        s.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
                    } else {
                        s as i32 as u32
                    }
                } else {
                    let mut s = c[i];
                    for kk in 0..k {
                        s += a[row * k + kk] * b[kk * 8 + col];
                    }
                    match m.d_ty {
                        MmaAcc::F16 => u32::from(half::f16::from_f64(s).to_bits()),
                        _ => (s as f32).to_bits(),
                    }
                };
            }
        }
        for l in 0..32u32 {
            for (r, &s) in m.d.iter().enumerate() {
                let v = match m.d_ty {
                    MmaAcc::F16 => {
                        let (r0, c0) = c_coord(l, r as u32, 0, m.d_ty);
                        let (r1, c1) = c_coord(l, r as u32, 1, m.d_ty);
                        dv[r0 as usize * 8 + c0 as usize]
                            | (dv[r1 as usize * 8 + c1 as usize] << 16)
                    }
                    _ => {
                        let (row, col) = c_coord(l, r as u32, 0, m.d_ty);
                        dv[row as usize * 8 + col as usize]
                    }
                };
                self.regs[s as usize * 32 + l as usize] = u64::from(v);
            }
        }
        Ok(())
    }

    /// `cp.async.{ca,cg}.shared.global [dst], [src], size{, src_size}`.
    /// `cp.async.ca/cg.shared.global [dst], [src], size[, src_size]`.
    pub(crate) fn cp_async(
        &mut self,
        (size, src_size): (u8, Option<Slot>),
        (dst, src): (Addr, Addr),
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let len = u32::from(size);
        for l in lanes(active) {
            let n = src_size.map_or(len, |s| self.regs[s as usize * 32 + l] as u32);
            if n > len {
                return Err(Fault::new(
                    CheckKind::Memcheck,
                    format!("cp.async src-size {n} exceeds its copy size {len}"),
                )
                .at(l, 0, Space::Global));
            }
            let off = self.shared_offset(
                l,
                (MemSpace::Shared, dst),
                len,
                "cp.async shared write",
                cx,
                cta,
            )?;
            let gaddr = address(&self.regs, src, l);
            if !gaddr.is_multiple_of(u64::from(len)) {
                return Err(cx.memcheck_at(
                    misaligned("cp.async global read", len),
                    l,
                    gaddr,
                    Space::Global,
                ));
            }
            let mut data = [0u8; 16];
            let mut buffer = None;
            if n > 0 {
                let (bi, boff) = cx.dev.locate(gaddr, n).map_err(|e| {
                    cx.global_fault(e, gaddr, n, false)
                        .at(l, gaddr, Space::Global)
                })?;
                let buf = &cx.dev.buffers[bi];
                for (i, byte) in data.iter_mut().enumerate().take(n as usize) {
                    *byte = buf.load(boff + i as u64, 1) as u8;
                }
                buffer = Some(bi);
            }
            self.shared_check(SharedBytes::new(l, off, len, true), pc, cx, cta)?;
            let a = &mut cta.asyncs;
            if a.pending.len() < cta.shared.len() {
                a.pending.resize(cta.shared.len(), 0);
            }
            for b in &mut a.pending[off as usize..(off + len) as usize] {
                *b = b.saturating_add(1);
            }
            a.copies.push(AsyncCopy {
                tid: self.first_tid + l as u32,
                pc,
                dst: off,
                len,
                data,
                group: None,
            });
            if cta.observing {
                let thread = self.first_tid + l as u32;
                if n > 0 {
                    cta.accesses.push(Access {
                        thread,
                        space: Space::Global,
                        kind: AccessKind::Load,
                        addr: gaddr,
                        bytes: n,
                        buffer,
                    });
                }
                cta.accesses.push(Access {
                    thread,
                    space: Space::Shared,
                    kind: AccessKind::Store,
                    addr: u64::from(off),
                    bytes: len,
                    buffer: None,
                });
            }
        }
        Ok(())
    }

    /// `cp.async.commit_group`: the thread's uncommitted copies become its
    /// newest group (possibly empty).
    pub(crate) fn cp_async_commit(&mut self, active: u32, cx: &Ctx, cta: &mut CtaState) {
        let a = &mut cta.asyncs;
        if a.groups.len() < cx.threads_per_cta as usize {
            a.groups.resize(cx.threads_per_cta as usize, 0);
        }
        for l in lanes(active) {
            let tid = self.first_tid + l as u32;
            a.groups[tid as usize] += 1;
            let g = a.groups[tid as usize];
            for c in a
                .copies
                .iter_mut()
                .filter(|c| c.tid == tid && c.group.is_none())
            {
                c.group = Some(g);
            }
        }
    }

    /// `cp.async.wait_group N` (all committed groups but the newest `keep`)
    /// or `cp.async.wait_all` (every copy of the thread, committed or not).
    pub(crate) fn cp_async_wait(
        &mut self,
        keep: Option<u32>,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        if !cta.asyncs.busy() {
            return Ok(());
        }
        for l in lanes(active) {
            let tid = self.first_tid + l as u32;
            let last = cta.asyncs.groups.get(tid as usize).copied().unwrap_or(0);
            let landed = cta.asyncs.complete(&mut cta.shared, |c| {
                c.tid == tid
                    && match keep {
                        None => true,
                        Some(n) => c.group.is_some_and(|g| g + n <= last),
                    }
            });
            // The bytes are written now, by this thread, in this barrier
            // interval: other threads need a barrier before reading them.
            for (off, len) in landed {
                self.shared_check(SharedBytes::new(l, off, len, true), pc, cx, cta)?;
            }
        }
        Ok(())
    }
}
