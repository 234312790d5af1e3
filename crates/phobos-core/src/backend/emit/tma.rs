//! A `stages S` ring on TMA (sm_90a, `Func::tma_rings`): every copy of a
//! trip is one `cp.async.bulk.tensor` per swizzle panel of its tile, issued
//! by thread 0 through the tensor's map (`Func::tensor_maps`, a `.param`
//! the launch encodes), landing in the stage's swizzled layout (the map's
//! swizzle is the tile's) with zero fill past the tensor's edges. Each
//! stage has an mbarrier (`SharedPlan::mbarriers`) expecting one arrival
//! per copy of a trip: a copy is `mbarrier.arrive.expect_tx` of its bytes,
//! then its boxes, whose `complete_tx` finish the phase. A
//! trip waits (`mbarrier.try_wait.parity`) for the phase of the stage it
//! reads, then passes the ring's barrier as before, which orders every
//! warpgroup's `wgmma.wait_group` of the previous trip before thread 0
//! refills that stage. Stages are used in turn, so the parity of the phase
//! a trip waits for flips each time the read stage wraps to 0. The `cp.async` groups' commits and
//! waits emit nothing here; TMA writes through the async proxy, which
//! `wgmma` reads through, so no proxy fence either.

use super::{Emitter, Reg, RegClass, V};
use crate::ast::ScalarTy;
use crate::backend::ir::{AccessId, BufferId, BufferKind, ExprId, Mem, StmtId};

impl Emitter<'_> {
    /// At the entry: thread 0 initializes every TMA ring's mbarriers, and
    /// a barrier publishes them before any copy or wait.
    pub(super) fn init_tma_rings(&mut self) {
        if self.f.tma_rings.is_empty() {
            return;
        }
        // With the entry's other hoisted values (the mbarriers' addresses
        // among them), which land after the prologue.
        self.hoist(|e| e.init_tma_rings_here());
    }

    fn init_tma_rings_here(&mut self) {
        self.need_version(80);
        // Every thread's copy of the mbarriers' base addresses, before
        // the branch only thread 0 takes.
        let looped: Vec<StmtId> = self.f.tma_rings.keys().copied().collect();
        for l in looped {
            let off = self.an.plan.mbarriers.get(&l).copied().unwrap_or(0);
            self.smem_at(off);
        }
        let tid = self.tid;
        let leader = self.reg(RegClass::Pred);
        self.ins(&format!("setp.eq.u32 {leader}, {tid}, 0;"));
        let skip = self.label("mbar_init_done");
        self.ins(&format!("@!{leader} bra {skip};"));
        let rings: Vec<StmtId> = self.f.tma_rings.keys().copied().collect();
        for &looped in &rings {
            let arrivals = self.f.tma_rings[&looped].copies.len();
            for s in 0..self.ring_stages(looped) {
                let a = self.mbarrier(looped, V::I(i128::from(s), ScalarTy::I32));
                self.ins(&format!("mbarrier.init.shared::cta.b64 [{a}], {arrivals};"));
            }
        }
        self.ins("fence.mbarrier_init.release.cluster;");
        self.place_label(&skip);
        self.ins("bar.sync 0;");
        // The parity of the phase the next wait waits for; it flips as the
        // read stage wraps to 0, the first trip's included (from 1 to 0).
        for looped in rings {
            let phase = self.reg(RegClass::B32);
            self.ins(&format!("mov.u32 {phase}, 1;"));
            self.tma_phases.insert(looped, phase);
        }
    }

    fn ring_stages(&self, looped: StmtId) -> u32 {
        (self.f.rings.values())
            .find(|r| r.looped == looped)
            .map_or(0, |r| r.stages)
    }

    /// The shared address of the mbarrier of `stage` of the ring `looped`
    /// (the ring's first, computed at the entry, plus `8 stage`).
    fn mbarrier(&mut self, looped: StmtId, stage: V) -> Reg {
        let off = self.an.plan.mbarriers.get(&looped).copied().unwrap_or(0);
        let first = self.smem_at(off);
        let a = self.reg(RegClass::B32);
        match stage {
            V::I(s, _) => self.ins(&format!("add.s32 {a}, {first}, {};", 8 * s)),
            v => {
                let r = self.in_reg(v, ScalarTy::I32);
                self.ins(&format!("mad.lo.s32 {a}, {r}, 8, {first};"));
            }
        }
        a
    }

    /// One staged copy into `stage` of `buffer` on TMA: thread 0 announces
    /// its bytes on the stage's mbarrier and issues a box per panel.
    pub(crate) fn tma_copy(&mut self, acc: AccessId, buffer: BufferId, stage: ExprId) {
        let a = self.f.accesses[acc].clone();
        let Mem::Tensor(p) = a.mem else { return };
        let BufferKind::Tile { elem, shape } = &self.f.buffers[buffer].kind else {
            return;
        };
        let (elem, rows, cols) = (*elem, shape[0], shape[1]);
        let span = self.f.swizzle[&buffer];
        let width = span / elem.size();
        let Some(map) = (self.f.tensor_maps.iter())
            .position(|m| m.param.0 == p.0 && m.box_dims == [width, rows] && m.swizzle == span)
        else {
            return;
        };
        let looped = self.f.rings[&buffer].looped;
        self.loc(a.span);
        self.cur_access = Some(acc);
        let starts: Vec<V> = a.index.iter().map(|e| self.scalar_expr(*e)).collect();
        let r0 = self.in_reg(starts[0], ScalarTy::I32);
        let c0 = self.in_reg(starts[1], ScalarTy::I32);
        let stage_v = self.scalar_expr(stage);
        let stage_off = self.stage_offset(buffer, Some(stage));
        // Thread 0 issues every copy: one warp's branch around them (when
        // the copies of a trip went to several warps, ptxas predicated one
        // warp's into every warp's path instead).
        let tid = self.tid;
        let leader = self.reg(RegClass::Pred);
        self.ins(&format!("setp.eq.u32 {leader}, {tid}, 0;"));
        let skip = self.label("tma_done");
        self.ins(&format!("@!{leader} bra {skip};"));
        let bar = self.mbarrier(looped, stage_v);
        let bytes = rows * cols * elem.size();
        self.ins(&format!(
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{bar}], {bytes};"
        ));
        let base = self.smem_at(self.an.plan.offset[buffer.0 as usize]);
        let dst = if matches!(stage_off, V::I(0, _)) {
            base
        } else {
            let d = self.reg(RegClass::B32);
            let o = self.operand(stage_off);
            self.ins(&format!("add.s32 {d}, {base}, {o};"));
            d
        };
        let tmap = self.tmaps[map];
        for panel in 0..cols / width {
            let (d, c) = if panel == 0 {
                (dst, c0)
            } else {
                let d = self.reg(RegClass::B32);
                self.ins(&format!("add.s32 {d}, {dst}, {};", panel * rows * span));
                let c = self.reg(RegClass::B32);
                self.ins(&format!("add.s32 {c}, {c0}, {};", panel * width));
                (d, c)
            };
            self.ins(&format!(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{tmap}, {{{c}, {r0}}}], [{bar}];"
            ));
        }
        self.place_label(&skip);
    }

    /// A TMA ring's wait at the top of a trip: for the phase of the
    /// mbarrier of the stage the trip reads.
    pub(crate) fn tma_wait(&mut self, s: StmtId) {
        let buffer = self.f.tma_waits[&s];
        let ring = self.f.rings[&buffer];
        let Some(&phase) = self.tma_phases.get(&ring.looped) else {
            return;
        };
        let read = self.var_reg(ring.read);
        let wrapped = self.reg(RegClass::Pred);
        self.ins(&format!("setp.eq.u32 {wrapped}, {read}, 0;"));
        self.ins(&format!("@{wrapped} xor.b32 {phase}, {phase}, 1;"));
        let bar = self.mbarrier(ring.looped, V::R(read));
        let done = self.reg(RegClass::Pred);
        let again = self.label("mbar_wait");
        self.place_label(&again);
        self.ins(&format!(
            "mbarrier.try_wait.parity.shared::cta.b64 {done}, [{bar}], {phase};"
        ));
        self.ins(&format!("@!{done} bra {again};"));
    }
}
