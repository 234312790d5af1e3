//! A warp's state and its scheduler: per-lane program counters in the style
//! of independent thread scheduling.
//!
//! The warp always runs one *group*: the lanes whose PC is the smallest
//! among its runnable lanes. Every lane of the group executes the same
//! instruction together (decoded once, one loop over the lanes). A branch
//! that splits the group stores each lane's PC and reschedules; because the
//! smallest PC runs first, lanes that took a forward branch wait at its
//! target until the others arrive, and then run together again. Lanes at a
//! warp-sync instruction (`shfl.sync`, `vote.sync`, `bar.warp.sync`) wait
//! until every lane named in their member mask is at the same instruction;
//! lanes at `bar.sync` wait for the CTA (see `launch`); lanes whose mbarrier
//! wait failed yield until an mbarrier changes (see `mbarrier`).

use crate::checks::Fault;
use crate::decode::{FloatOp, IntOp, Op, PredSrc, Special};
use crate::error::{CheckKind, SimError};
use crate::launch::{CtaState, Ctx};
use crate::observer::{Observer, OpKind, StepInfo};

pub(crate) const FULL: u32 = u32::MAX;

/// Iterates the set bits of a lane mask.
#[inline(always)]
pub(crate) fn lanes(mut m: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if m == 0 {
            None
        } else {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            Some(l)
        }
    })
}

pub(crate) struct Warp {
    /// Value slots, slot-major: `regs[slot * 32 + lane]`.
    pub regs: Vec<u64>,
    /// Predicate registers as lane masks.
    pub preds: Vec<u32>,
    /// Local memory, lane-major: `local[lane * local_bytes + offset]`.
    pub local: Vec<u8>,
    pcs: [u32; 32],
    /// Lanes that exist (a CTA's last warp may be partial).
    pub exists: u32,
    /// Lanes that have not exited.
    pub live: u32,
    /// Lanes waiting at `bar.sync`.
    pub at_bar: u32,
    /// Lanes waiting at a warp-sync instruction for their member mask.
    pub waiting: u32,
    /// Lanes whose mbarrier wait failed: they run again when an mbarrier
    /// changes state (see `mbarrier`).
    pub yielded: u32,
    group: u32,
    pc: u32,
    other_min: u32,
    pub steps: u64,
    /// Counts warp-level syncs, for racecheck within a warp.
    pub sync_epoch: u32,
    pub index: u32,
    pub first_tid: u32,
    pub thread_instructions: u64,
    pub warp_instructions: u64,
}

impl Warp {
    pub(crate) fn new() -> Warp {
        Warp {
            regs: Vec::new(),
            preds: Vec::new(),
            local: Vec::new(),
            pcs: [0; 32],
            exists: 0,
            live: 0,
            at_bar: 0,
            waiting: 0,
            yielded: 0,
            group: 0,
            pc: 0,
            other_min: u32::MAX,
            steps: 0,
            sync_epoch: 0,
            index: 0,
            first_tid: 0,
            thread_instructions: 0,
            warp_instructions: 0,
        }
    }

    /// Prepares the warp to run warp `index` of CTA `cta`.
    pub(crate) fn reset(&mut self, cx: &Ctx, cta: &CtaState, index: u32) {
        let e = cx.entry;
        if self.regs.len() == cx.template.len() {
            // Immediates never change: clear only what instructions write.
            let declared = e.n_declared as usize * 32;
            self.regs[..declared].fill(0);
            if let Some(s) = e.sink {
                let b = s as usize * 32;
                self.regs[b..b + 32].fill(0);
            }
        } else {
            self.regs.clear();
            self.regs.extend_from_slice(&cx.template);
        }
        self.preds.clear();
        self.preds.resize(e.n_preds as usize, 0);
        self.local.clear();
        self.local.resize(e.local_bytes as usize * 32, 0);
        self.index = index;
        self.first_tid = index * 32;
        let n = cx.threads_per_cta.saturating_sub(self.first_tid).min(32);
        self.exists = if n == 32 { FULL } else { (1u32 << n) - 1 };
        self.live = self.exists;
        self.at_bar = 0;
        self.waiting = 0;
        self.yielded = 0;
        self.pcs = [0; 32];
        self.group = self.exists;
        self.pc = 0;
        self.other_min = u32::MAX;
        self.steps = 0;
        self.sync_epoch = 0;
        let [bx, by, _] = cx.block;
        for &(slot, sp) in &e.specials {
            let base = slot as usize * 32;
            for l in 0..32u32 {
                let t = self.first_tid + l;
                let v: u64 = match sp {
                    Special::Tid(0) => u64::from(t % bx),
                    Special::Tid(1) => u64::from((t / bx) % by),
                    Special::Tid(_) => u64::from(t / (bx * by)),
                    Special::Ntid(d) => u64::from(cx.block[d as usize]),
                    Special::Ctaid(d) => u64::from(cta.id[d as usize]),
                    Special::Nctaid(d) => u64::from(cx.grid[d as usize]),
                    Special::LaneId => u64::from(l),
                    Special::WarpId => u64::from(index),
                    Special::NWarpId => u64::from(cx.n_warps),
                    Special::LaneMask(k) => {
                        let eq = 1u64 << l;
                        match k {
                            0 => eq,
                            1 => eq - 1,
                            2 => (eq << 1) - 1,
                            3 => !((eq << 1) - 1) & 0xFFFF_FFFF,
                            _ => !(eq - 1) & 0xFFFF_FFFF,
                        }
                    }
                };
                self.regs[base + l as usize] = v;
            }
        }
    }

    /// True when some lane can run.
    pub(crate) fn runnable(&self) -> bool {
        self.live & !self.at_bar & !self.waiting & !self.yielded != 0
    }

    /// Stops lanes `m` of the running group, to resume at `next`.
    pub(crate) fn yield_lanes(&mut self, m: u32, next: u32) {
        for l in lanes(m) {
            self.pcs[l] = next;
        }
        self.yielded |= m;
        self.group &= !m;
    }

    /// The PC at which lane `l` is stopped.
    pub(crate) fn pc_of(&self, l: usize) -> u32 {
        self.pcs[l]
    }

    /// Lets the lanes waiting at `bar.sync` continue past it.
    pub(crate) fn release_barrier(&mut self) {
        for l in lanes(self.at_bar) {
            self.pcs[l] += 1;
        }
        self.at_bar = 0;
    }

    #[inline(always)]
    pub(crate) fn pred_mask(&self, p: PredSrc) -> u32 {
        let m = self.preds.get(p.id as usize).copied().unwrap_or(0);
        if p.neg {
            !m
        } else {
            m
        }
    }

    /// Stores the group's PC and picks the lanes with the smallest PC.
    fn reschedule(&mut self) -> bool {
        for l in lanes(self.group) {
            self.pcs[l] = self.pc;
        }
        let runnable = self.live & !self.at_bar & !self.waiting & !self.yielded;
        if runnable == 0 {
            self.group = 0;
            return false;
        }
        let min = lanes(runnable).map(|l| self.pcs[l]).min().unwrap_or(0);
        let mut group = 0;
        let mut other = u32::MAX;
        for l in lanes(runnable) {
            if self.pcs[l] == min {
                group |= 1 << l;
            } else {
                other = other.min(self.pcs[l]);
            }
        }
        self.group = group;
        self.pc = min;
        self.other_min = other;
        true
    }

    /// Runs the warp until none of its lanes can run (all exited, or waiting
    /// at a barrier or warp sync).
    pub(crate) fn run<'o>(
        &mut self,
        cx: &Ctx,
        cta: &mut CtaState,
        mut obs: Option<&mut (dyn Observer + 'o)>,
    ) -> Result<(), SimError> {
        let insts = &cx.entry.insts;
        loop {
            if (self.group == 0 || self.pc >= self.other_min) && !self.reschedule() {
                return Ok(());
            }
            let pc = self.pc;
            let Some(inst) = insts.get(pc as usize) else {
                // Falling off the end of the entry returns.
                self.live &= !self.group;
                self.group = 0;
                continue;
            };
            self.steps += 1;
            if self.steps > cx.max_steps {
                let msg = format!(
                    "warp {} executed more than {} instructions (LaunchOptions::max_steps); the kernel may never end",
                    self.index, cx.max_steps
                );
                return Err(cx.report(
                    cta,
                    pc,
                    self.first_tid + self.group.trailing_zeros(),
                    Fault::new(CheckKind::StepLimit, msg),
                ));
            }
            let active = match inst.guard {
                None => self.group,
                Some(g) => self.pred_mask(g) & self.group,
            };
            // Warp-synchronous instructions count when they execute, not
            // for each group that arrives and waits.
            let syncs = matches!(
                inst.op,
                Op::Shfl { .. }
                    | Op::Vote { .. }
                    | Op::WarpSync { .. }
                    | Op::Ldmatrix { .. }
                    | Op::Mma { .. }
                    | Op::WgmmaFence { .. }
                    | Op::WgmmaCommit { .. }
                    | Op::WgmmaWait { .. }
                    | Op::Wgmma { .. }
                    | Op::Elect { .. }
            );
            if !syncs {
                self.warp_instructions += 1;
                self.thread_instructions += u64::from(self.group.count_ones());
            }
            let mut observed_active = active;
            let mut observed_lanes = self.group;
            match inst.op {
                Op::Bra { target } => {
                    if active == self.group {
                        self.pc = target;
                    } else if active == 0 {
                        self.pc += 1;
                    } else {
                        for l in lanes(active) {
                            self.pcs[l] = target;
                        }
                        for l in lanes(self.group & !active) {
                            self.pcs[l] = pc + 1;
                        }
                        self.group = 0;
                    }
                }
                Op::Exit => {
                    self.live &= !active;
                    self.group &= !active;
                    self.pc += 1;
                }
                Op::Bar => {
                    self.at_bar |= active;
                    for l in lanes(active) {
                        self.pcs[l] = pc;
                    }
                    self.group &= !active;
                    self.pc += 1;
                }
                Op::Shfl { mask, .. }
                | Op::Vote { mask, .. }
                | Op::WarpSync { mask }
                | Op::Ldmatrix { mask, .. }
                | Op::Mma { mask, .. }
                | Op::WgmmaFence { mask }
                | Op::WgmmaCommit { mask }
                | Op::WgmmaWait { mask, .. }
                | Op::Wgmma { mask, .. }
                | Op::Elect { mask, .. } => match self.warp_sync(cx, cta, pc, mask, inst.guard)? {
                    Some(a) => {
                        observed_active = a;
                        observed_lanes = a;
                    }
                    None => continue,
                },
                _ => {
                    if active != 0 {
                        if let Err(f) = self.exec(&inst.op, active, pc, cx, cta) {
                            let lane = f.lane.unwrap_or(active.trailing_zeros());
                            return Err(cx.report(cta, pc, self.first_tid + lane, f));
                        }
                    }
                    self.pc += 1;
                }
            }
            if cta.observing && observed_active != 0 {
                if let Some(o) = obs.as_deref_mut() {
                    let info = &cx.entry.info[pc as usize];
                    o.step(&StepInfo {
                        cta: cta.linear,
                        cta_id: cta.id,
                        warp: self.index,
                        active: observed_active,
                        lanes: observed_lanes,
                        pc: pc as usize,
                        opcode: &info.opcode,
                        loc: info.loc,
                        accesses: &cta.accesses,
                        shuffles: &cta.shuffles,
                        kind: op_kind(&inst.op),
                    });
                }
                cta.accesses.clear();
                cta.shuffles.clear();
            }
        }
    }

    /// A warp-sync instruction at `pc`: executes it when every lane named by
    /// the arrived lanes' member masks has arrived, else parks the group.
    /// Returns the lanes that executed it, or `None` when the group waits.
    fn warp_sync(
        &mut self,
        cx: &Ctx,
        cta: &mut CtaState,
        pc: u32,
        mask: u32,
        guard: Option<PredSrc>,
    ) -> Result<Option<u32>, SimError> {
        let mut arrived = self.group;
        for l in lanes(self.waiting) {
            if self.pcs[l] == pc {
                arrived |= 1 << l;
            }
        }
        let base = mask as usize * 32;
        let mut missing = 0u32;
        for l in lanes(arrived) {
            let m = self.regs[base + l] as u32;
            if cx.checks && m & (1 << l) == 0 {
                let f = Fault::new(
                    CheckKind::Synccheck,
                    format!("lane {l} executes a warp-synchronous instruction with member mask {m:#010x}, which does not include the lane itself"),
                );
                return Err(cx.report(cta, pc, self.first_tid + l as u32, f));
            }
            let gone = m & !self.live;
            if cx.checks && gone != 0 {
                let what = if gone & !self.exists != 0 {
                    format!(
                        "lanes {} do not exist (the CTA has {} threads)",
                        lane_list(gone & !self.exists),
                        cx.threads_per_cta
                    )
                } else {
                    format!("lanes {} have already exited", lane_list(gone))
                };
                let f = Fault::new(
                    CheckKind::Synccheck,
                    format!("warp-synchronous instruction with member mask {m:#010x} can never complete: {what}"),
                );
                return Err(cx.report(cta, pc, self.first_tid + l as u32, f));
            }
            missing |= m & !arrived & self.live;
        }
        if missing != 0 {
            for l in lanes(self.group) {
                self.pcs[l] = pc;
            }
            self.waiting |= self.group;
            self.group = 0;
            return Ok(None);
        }
        self.waiting &= !arrived;
        self.group = arrived;
        let active = match guard {
            None => arrived,
            Some(g) => self.pred_mask(g) & arrived,
        };
        if active != 0 {
            let op = &cx.entry.insts[pc as usize].op;
            if let Err(f) = self.exec(op, active, pc, cx, cta) {
                let lane = f.lane.unwrap_or(active.trailing_zeros());
                return Err(cx.report(cta, pc, self.first_tid + lane, f));
            }
        }
        self.warp_instructions += 1;
        self.thread_instructions += u64::from(arrived.count_ones());
        self.sync_epoch = self.sync_epoch.wrapping_add(1);
        self.pc = pc + 1;
        Ok(Some(active))
    }
}

/// `0-3, 8, 10-31` style list of the lanes in a mask.
pub(crate) fn lane_list(m: u32) -> String {
    let mut parts = Vec::new();
    let mut l = 0;
    while l < 32 {
        if m & (1 << l) != 0 {
            let start = l;
            while l + 1 < 32 && m & (1 << (l + 1)) != 0 {
                l += 1;
            }
            parts.push(if start == l {
                format!("{l}")
            } else {
                format!("{start}-{l}")
            });
        }
        l += 1;
    }
    parts.join(", ")
}

/// The observer's kind of an instruction.
fn op_kind(op: &Op) -> OpKind {
    match op {
        Op::Bar => OpKind::Barrier,
        Op::Shfl { .. } => OpKind::Shuffle,
        Op::Vote { .. }
        | Op::WarpSync { .. }
        | Op::Elect { .. }
        | Op::WgmmaFence { .. }
        | Op::WgmmaCommit { .. }
        | Op::WgmmaWait { .. } => OpKind::WarpSync,
        Op::Ld { .. } => OpKind::Load,
        Op::St { .. } => OpKind::Store,
        Op::Atom { .. } => OpKind::Atomic,
        Op::Ldmatrix { .. } => OpKind::MatrixLoad,
        Op::Mma { .. } | Op::Wgmma { .. } => OpKind::Mma,
        Op::CpAsync { .. } | Op::Tma { copy: true, .. } => OpKind::AsyncCopy,
        Op::Bra { .. } => OpKind::Branch,
        Op::Exit => OpKind::Exit,
        Op::Float { op, f64, .. } => {
            let flops = match op {
                FloatOp::Add | FloatOp::Sub | FloatOp::Mul => 1,
                FloatOp::Fma => 2,
                _ => 0,
            };
            if *f64 {
                OpKind::Float64 { flops }
            } else {
                OpKind::Float32 { flops }
            }
        }
        Op::Int {
            op: IntOp::Dp4a { .. },
            ..
        } => OpKind::IntDot { ops: 8 },
        Op::Int {
            op: IntOp::Dp2a { .. },
            ..
        } => OpKind::IntDot { ops: 4 },
        _ => OpKind::Compute,
    }
}
