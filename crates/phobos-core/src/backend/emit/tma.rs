//! A `stages S` ring on TMA (sm_90a, `Func::tma_rings`): every copy of a
//! trip is one `cp.async.bulk.tensor` per swizzle panel of its tile, issued
//! by thread 0 through the tensor's map (`Func::tensor_maps`, a `.param`
//! the launch encodes), landing in the stage's swizzled layout (the map's
//! swizzle is the tile's) with zero fill past the tensor's edges. Each
//! stage has an mbarrier (`SharedPlan::mbarriers`) initialized with one
//! arrival per copy of a trip; a copy is `mbarrier.arrive.expect_tx` of
//! its bytes then its boxes, whose `complete_tx` finishes the phase. A
//! trip waits (`mbarrier.try_wait.parity`) for the phase of the stage it
//! reads, then passes the ring's barrier as before, which orders every
//! warpgroup's `wgmma.wait_group` of the previous trip before thread 0
//! refills that stage. The parity of each stage's next phase is one bit of
//! a register, flipped after each wait. The `cp.async` groups' commits and
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
        self.need_version(80);
        let tid = self.tid;
        let leader = self.reg(RegClass::Pred);
        self.ins(&format!("setp.eq.u32 {leader}, {tid}, 0;"));
        let skip = self.label("mbar_init_done");
        self.ins(&format!("@!{leader} bra {skip};"));
        let rings: Vec<(StmtId, u32)> = self.f.tma_rings.iter().map(|(k, v)| (*k, *v)).collect();
        for (looped, arrivals) in &rings {
            for s in 0..self.ring_stages(*looped) {
                let a = self.mbarrier(*looped, V::I(i128::from(s), ScalarTy::I32));
                self.ins(&format!("mbarrier.init.shared::cta.b64 [{a}], {arrivals};"));
            }
        }
        self.ins("fence.mbarrier_init.release.cluster;");
        self.place_label(&skip);
        self.ins("bar.sync 0;");
        for (looped, _) in rings {
            let bits = self.reg(RegClass::B32);
            self.ins(&format!("mov.u32 {bits}, 0;"));
            self.tma_phases.insert(looped, bits);
        }
    }

    fn ring_stages(&self, looped: StmtId) -> u32 {
        (self.f.rings.values())
            .find(|r| r.looped == looped)
            .map_or(0, |r| r.stages)
    }

    /// The shared address of the mbarrier of `stage` of the ring `looped`.
    fn mbarrier(&mut self, looped: StmtId, stage: V) -> Reg {
        let off = self.an.plan.mbarriers.get(&looped).copied().unwrap_or(0);
        let a = self.reg(RegClass::B32);
        let smem = self.smem.clone();
        self.ins(&format!("mov.u32 {a}, {smem};"));
        match stage {
            V::I(s, _) => {
                let at = i128::from(off) + 8 * s;
                self.ins(&format!("add.s32 {a}, {a}, {at};"));
            }
            v => {
                let r = self.in_reg(v, ScalarTy::I32);
                self.ins(&format!("add.s32 {a}, {a}, {off};"));
                self.ins(&format!("mad.lo.s32 {a}, {r}, 8, {a};"));
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
        let dst = self.reg(RegClass::B32);
        let smem = self.smem.clone();
        self.ins(&format!("mov.u32 {dst}, {smem};"));
        let base = self.an.plan.offset[buffer.0 as usize];
        if base != 0 {
            self.ins(&format!("add.s32 {dst}, {dst}, {base};"));
        }
        if !matches!(stage_off, V::I(0, _)) {
            let o = self.operand(stage_off);
            self.ins(&format!("add.s32 {dst}, {dst}, {o};"));
        }
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
        let Some(&bits) = self.tma_phases.get(&ring.looped) else {
            return;
        };
        let read = self.var_reg(ring.read);
        let bar = self.mbarrier(ring.looped, V::R(read));
        let parity = self.reg(RegClass::B32);
        self.ins(&format!("shr.u32 {parity}, {bits}, {read};"));
        self.ins(&format!("and.b32 {parity}, {parity}, 1;"));
        let done = self.reg(RegClass::Pred);
        let again = self.label("mbar_wait");
        self.place_label(&again);
        self.ins(&format!(
            "mbarrier.try_wait.parity.shared::cta.b64 {done}, [{bar}], {parity};"
        ));
        self.ins(&format!("@!{done} bra {again};"));
        let one = self.reg(RegClass::B32);
        self.ins(&format!("mov.u32 {one}, 1;"));
        let flip = self.reg(RegClass::B32);
        self.ins(&format!("shl.b32 {flip}, {one}, {read};"));
        self.ins(&format!("xor.b32 {bits}, {bits}, {flip};"));
    }
}
