//! `dot` on Hopper's warpgroup MMA (sm_90a): each warpgroup (four
//! consecutive warps) issues `wgmma.mma_async.m64nNk16` (`k32` for 8-bit
//! floats) over its 64 rows
//! of the accumulator and all N columns, its operands read straight from
//! the swizzled shared tiles through matrix descriptors (PTX ISA,
//! "Asynchronous Warpgroup Level Matrix Multiply-Accumulate").
//!
//! The accumulator's registers are those of the `mma.sync` path with the
//! warpgroup layout (`mma::warpgroup_layout`): warp `w` holds rows `16 w ..`
//! in the `m16n8` fragment layout repeated along N, which is `wgmma`'s
//! register fragment `d[4 j + r]` for the 8-column block `j`; the epilogue
//! and the store are shared with `mma.sync`.
//!
//! Operand layouts (`Func::swizzle`, written by the tile copies): a tile's
//! contiguous rows are cut into panels of `span` bytes (128, 64 or 32), each
//! panel `rows x span` bytes, swizzled in `span`-byte mode. A K-major
//! operand (`a`, and `b` given as `trans(w)`) advances 32 bytes of K per
//! `k16` step inside a panel (the descriptor's leading offset is unused for
//! swizzled K-major layouts); its stride offset is `8 span`, the distance
//! between 8-row core-matrix groups. A `[K, N]` `b` is MN-major
//! (`imm-trans-b` 1): its leading offset is the panel stride along N
//! (`K span`), its stride offset `8 span`, and a step moves 16 rows.
//!
//! Order: `wgmma.fence` (the accumulator was last written by ordinary
//! instructions), one `wgmma.mma_async` per 16-deep step, `commit_group`,
//! `wait_group 0`: the product has landed, and its operands are free to be
//! overwritten, before the next statement. The copies that wrote the
//! operands end with `fence.proxy.async` (`Emitter::proxy_fence`).

use super::{reg_list, Emitter, RegClass};
use crate::ast::ScalarTy;
use crate::backend::ir::{AccId, BufferId, BufferKind};

/// The descriptor's swizzle-mode field (bits 62-63) for a span in bytes.
fn swizzle_mode(span: u32) -> u64 {
    match span {
        128 => 1,
        64 => 2,
        _ => 3,
    }
}

/// The constant part of a matrix descriptor: leading and stride byte
/// offsets (in 16-byte units, bits 16-29 and 32-45) and the swizzle mode.
fn descriptor_bits(leading: u32, stride: u32, span: u32) -> u64 {
    (u64::from(leading >> 4) << 16) | (u64::from(stride >> 4) << 32) | (swizzle_mode(span) << 62)
}

impl Emitter<'_> {
    pub(super) fn wgmma(
        &mut self,
        acc: AccId,
        (a, b): (BufferId, BufferId),
        b_trans: bool,
        k: u32,
    ) {
        self.need_version(80);
        let t = self.f.accs[acc].clone();
        let shape = |f: &crate::backend::ir::Func, x: BufferId| match &f.buffers[x].kind {
            BufferKind::Tile { shape, .. } => (shape[0], shape.get(1).copied().unwrap_or(1)),
            BufferKind::Scratch { .. } => (1, 1),
        };
        let (rows_a, _) = shape(self.f, a);
        let (rows_b, _) = shape(self.f, b);
        let span_a = self.f.swizzle[&a];
        let span_b = self.f.swizzle[&b];
        let op = match &self.f.buffers[a].kind {
            BufferKind::Tile { elem, .. } => *elem,
            BufferKind::Scratch { .. } => ScalarTy::F16,
        };
        let a_bits = descriptor_bits(16, 8 * span_a, span_a);
        let b_bits = if b_trans {
            descriptor_bits(16, 8 * span_b, span_b)
        } else {
            descriptor_bits(rows_b * span_b, 8 * span_b, span_b)
        };
        // Stage 0's descriptors, at the entry: `a`'s at this warpgroup's
        // 64 rows (64 rows of `span_a` bytes into each panel).
        let a_off = self.an.plan.offset[a.0 as usize];
        let desc_a = self.entry_reg(&format!("wgmma-desc-a{}", a.0), |e| {
            let base = e.smem_at(a_off);
            let wg = e.reg(RegClass::B32);
            let warp = e.warp;
            e.ins(&format!("shr.u32 {wg}, {warp}, 2;"));
            let at = e.reg(RegClass::B32);
            e.ins(&format!("mad.lo.s32 {at}, {wg}, {}, {base};", 64 * span_a));
            e.descriptor(at, a_bits)
        });
        let b_off = self.an.plan.offset[b.0 as usize];
        let desc_b = self.entry_reg(&format!("wgmma-desc-b{}-{b_trans}", b.0), |e| {
            let base = e.smem_at(b_off);
            e.descriptor(base, b_bits)
        });
        // The stage this trip reads, in 16-byte units of the start address.
        let desc_a = self.desc_stage(a, desc_a);
        let desc_b = self.desc_stage(b, desc_b);
        let size = op.size();
        let kstep = 32 / size;
        let ty = crate::mma::ptx_name(op);
        let dty = if t.elem == ScalarTy::F16 {
            "f16"
        } else {
            "f32"
        };
        let n = t.cols;
        let one = self.reg(RegClass::B32);
        self.ins(&format!("mov.b32 {one}, 1;"));
        let scale_d = self.reg(RegClass::Pred);
        self.ins(&format!("setp.ne.b32 {scale_d}, {one}, 0;"));
        let d = reg_list(&self.acc_regs[acc.0 as usize].clone());
        self.ins("wgmma.fence.sync.aligned;");
        for ks in 0..k / kstep {
            let kb = ks * 32;
            let a_off = (kb / span_a) * rows_a * span_a + kb % span_a;
            let b_off = if b_trans {
                (kb / span_b) * rows_b * span_b + kb % span_b
            } else {
                ks * kstep * span_b
            };
            let da = self.desc_at(desc_a, a_off);
            let db = self.desc_at(desc_b, b_off);
            // 16-bit operands take the transpose flags (a `[K, N]` `b` is
            // MN-major); 8-bit ones are K-major only and have none.
            let trans = if size == 2 {
                format!(", 0, {}", u32::from(!b_trans))
            } else {
                String::new()
            };
            self.ins(&format!(
                "wgmma.mma_async.sync.aligned.m64n{n}k{kstep}.{dty}.{ty}.{ty} {{{d}}}, {da}, {db}, {scale_d}, 1, 1{trans};"
            ));
        }
        self.ins("wgmma.commit_group.sync.aligned;");
        self.ins("wgmma.wait_group.sync.aligned 0;");
    }

    /// A matrix descriptor for the shared address in `addr` with the
    /// constant fields `bits`: the start address in 16-byte units in bits
    /// 0-13.
    fn descriptor(&mut self, addr: super::Reg, bits: u64) -> super::Reg {
        let lo = self.reg(RegClass::B32);
        self.ins(&format!("shr.u32 {lo}, {addr}, 4;"));
        self.ins(&format!("and.b32 {lo}, {lo}, 16383;"));
        let wide = self.reg(RegClass::B64);
        self.ins(&format!("cvt.u64.u32 {wide}, {lo};"));
        let d = self.reg(RegClass::B64);
        self.ins(&format!("or.b64 {d}, {wide}, {bits};"));
        d
    }

    /// `desc` (stage 0's) moved to the stage a ring buffer's trip reads:
    /// `read * stage_bytes / 16` further.
    fn desc_stage(&mut self, b: BufferId, desc: super::Reg) -> super::Reg {
        let Some(ring) = self.f.rings.get(&b).copied() else {
            return desc;
        };
        let read = self.var_reg(ring.read);
        let d = self.reg(RegClass::B64);
        self.ins(&format!(
            "mad.wide.u32 {d}, {read}, {}, {desc};",
            ring.stage_bytes >> 4
        ));
        d
    }

    /// `desc` moved `off` bytes further (a multiple of 16).
    fn desc_at(&mut self, desc: super::Reg, off: u32) -> super::Reg {
        if off == 0 {
            return desc;
        }
        let d = self.reg(RegClass::B64);
        self.ins(&format!("add.s64 {d}, {desc}, {};", off >> 4));
        d
    }
}
