//! Tensor-core rules shared by the checker and the backend: which operand
//! and accumulator types `dot` takes, the instruction shape each pair uses,
//! how an accumulator tile is spread over the CTA's warps (the warp
//! layout), and the register budget. The checker refuses what these rules
//! refuse; the backend emits exactly the layout [`WarpLayout::choose`]
//! picks, so the two cannot disagree (docs/tensor-cores.md).

use crate::ast::ScalarTy;

/// Rows of one accumulator fragment (`m16n8kK`): every mma.sync shape
/// Phobos uses is 16 x 8.
pub const FRAG_M: u32 = 16;
/// Columns of one accumulator fragment.
pub const FRAG_N: u32 = 8;

/// The most accumulator registers one lane may hold: 128 of the 255 a
/// thread may have, so the operands, addresses and the epilogue fit in the
/// rest without spilling to local memory.
pub const MAX_ACC_REGS: u32 = 128;

/// The element types an accumulator tile may have.
pub fn acc_elem_ok(t: ScalarTy) -> bool {
    matches!(t, ScalarTy::F32 | ScalarTy::F16 | ScalarTy::I32)
}

/// Whether an accumulator of `acc` may be stored converted to `to`
/// (`C[...] = f16(acc)`): an f32 accumulator as f16, bf16 or an 8-bit
/// float (sm_89 and newer: P0812), an f16 one as f32.
pub fn acc_converts(acc: ScalarTy, to: ScalarTy) -> bool {
    matches!(
        (acc, to),
        (
            ScalarTy::F32,
            ScalarTy::F16 | ScalarTy::BF16 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2
        ) | (ScalarTy::F16, ScalarTy::F32)
    )
}

/// What one `dot` of operands of type `op` into an accumulator of type
/// `acc` compiles to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DotKind {
    /// The operands' element type.
    pub op: ScalarTy,
    /// The accumulator's element type.
    pub acc: ScalarTy,
    /// K of the instruction shape (`m16n8k16` for f16/bf16).
    pub k: u32,
    /// The lowest target that has the instruction.
    pub min_arch: u32,
    /// Whether the second operand must be given as `trans(w)` with `w` of
    /// `[N, K]`: `ldmatrix .trans` moves 16-bit elements, so 8-bit
    /// operands are read only in the layout `mma.sync` wants.
    pub b_trans_only: bool,
}

/// The instruction for operands `op` into an accumulator `acc`, or `None`
/// when Phobos has none (the caller says which pairs exist:
/// [`SUPPORTED_PAIRS`]).
pub fn dot_kind(op: ScalarTy, acc: ScalarTy) -> Option<DotKind> {
    match (op, acc) {
        // sm_75 has m16n8k8 f16; the backend issues two of them per k16 step.
        (ScalarTy::F16, ScalarTy::F32) => Some(DotKind {
            op,
            acc,
            k: 16,
            min_arch: 75,
            b_trans_only: false,
        }),
        // f16 accumulation: m16n8k16 .f16.f16.f16.f16 on sm_80+, two
        // m16n8k8 on sm_75, the accumulator two f16 to a register.
        (ScalarTy::F16, ScalarTy::F16) => Some(DotKind {
            op,
            acc,
            k: 16,
            min_arch: 75,
            b_trans_only: false,
        }),
        (ScalarTy::BF16, ScalarTy::F32) => Some(DotKind {
            op,
            acc,
            k: 16,
            min_arch: 80,
            b_trans_only: false,
        }),
        // f32 operands as tf32 (rounded with cvt.rna): m16n8k8, sm_80.
        (ScalarTy::F32, ScalarTy::F32) => Some(DotKind {
            op,
            acc,
            k: 8,
            min_arch: 80,
            b_trans_only: true,
        }),
        // m16n8k32 s8/u8 -> s32 (sm_75 has only m8n8k16 for 8-bit).
        (ScalarTy::I8 | ScalarTy::U8, ScalarTy::I32) => Some(DotKind {
            op,
            acc,
            k: 32,
            min_arch: 80,
            b_trans_only: true,
        }),
        // m16n8k32 .e4m3/.e5m2 -> f32: sm_89 (Ada) and newer, PTX ISA 8.4;
        // the fragments are the 8-bit integer ones.
        (ScalarTy::F8E4M3 | ScalarTy::F8E5M2, ScalarTy::F32) => Some(DotKind {
            op,
            acc,
            k: 32,
            min_arch: 89,
            b_trans_only: true,
        }),
        _ => None,
    }
}

/// The pairs [`dot_kind`] accepts, as the diagnostics list them.
pub const SUPPORTED_PAIRS: &str = "f16 x f16 -> f32 or f16 (sm_75 and newer), bf16 x bf16 -> f32 (sm_80 and newer), f32 x f32 as tf32 -> f32, i8 x i8 and u8 x u8 -> i32 (sm_80 and newer, as `dot(a, trans(w))`), f8e4m3 x f8e4m3 and f8e5m2 x f8e5m2 -> f32 (sm_89 and newer, as `dot(a, trans(w))`)";

/// The PTX type name of an operand or accumulator element in `mma.sync`.
pub fn ptx_name(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::F16 => "f16",
        ScalarTy::BF16 => "bf16",
        ScalarTy::I8 => "s8",
        ScalarTy::U8 => "u8",
        ScalarTy::F8E4M3 => "e4m3",
        ScalarTy::F8E5M2 => "e5m2",
        ScalarTy::I32 => "s32",
        ScalarTy::F32 => "tf32",
        _ => "f32",
    }
}

/// Hopper's warpgroup MMA (`wgmma.mma_async`, sm_90a): the layout of an
/// `[m, n]` accumulator over `threads` threads when `dot` of `op` operands
/// into `acc` can run on it, else `None` (the backend then keeps
/// `mma.sync`). A warpgroup is four consecutive warps; each owns one
/// `m64nNk16` slab of 64 rows and all `n` columns, so `m` must be 64 per
/// warpgroup and `n` a multiple of 8 up to 256 (the PTX ISA's shapes). Warp
/// `w` then holds rows `16 w ..` in the `m16n8` fragment layout repeated
/// along N, which is exactly the [`WarpLayout`] with one warp column and
/// one fragment row per warp, so the epilogue and store code serve both
/// paths. f16, bf16, f32 as tf32 (`m64nNk8`) and 8-bit float operands
/// (`m64nNk32 .e4m3/.e5m2`); tf32 and 8-bit ones K-major only
/// (`dot(a, trans(w))`, as for `mma.sync`). Integers keep `mma.sync`. tf32
/// `wgmma` reads the f32 bits in shared memory as they are, so the copies
/// round them (`cvt.rna`, as `mma.sync` rounds its fragments), which a TMA
/// copy cannot: `lower/mma.rs::wgmma_plan` keeps staged f32 operands on
/// `mma.sync` (docs/tensor-cores.md).
pub fn wgmma_layout(
    m: u32,
    n: u32,
    threads: u32,
    op: ScalarTy,
    acc: ScalarTy,
) -> Option<WarpLayout> {
    let kind = dot_kind(op, acc)?;
    if !matches!(
        kind.op,
        ScalarTy::F16 | ScalarTy::BF16 | ScalarTy::F32 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2
    ) {
        return None;
    }
    warpgroup_layout(m, n, threads)
}

/// The shape half of [`wgmma_layout`]: 64 rows per warpgroup of
/// `threads`, `n` a multiple of 8 up to 256.
pub fn warpgroup_layout(m: u32, n: u32, threads: u32) -> Option<WarpLayout> {
    if !threads.is_multiple_of(128) {
        return None;
    }
    let warps = threads / 32;
    if m != 16 * warps || !n.is_multiple_of(FRAG_N) || n > 256 || n == 0 {
        return None;
    }
    Some(WarpLayout {
        wm: warps,
        wn: 1,
        frag_m: 1,
        frag_n: n / FRAG_N,
    })
}

/// The swizzle span, in bytes, of a `wgmma` operand tile whose rows hold
/// `row_bytes` along their contiguous axis: the widest of the PTX ISA's
/// 128-, 64- and 32-byte swizzles that divides the row (the row is then
/// split into panels of that many bytes), `None` when none does.
pub fn swizzle_span(row_bytes: u32) -> Option<u32> {
    [128, 64, 32]
        .into_iter()
        .find(|w| row_bytes.is_multiple_of(*w))
}

/// Which warp owns which part of an `[m, n]` accumulator: the CTA's warps
/// form a `wm x wn` grid, warp `w` owning rows `(w / wn) * m / wm ..` and
/// columns `(w % wn) * n / wn ..`, a grid of `frag_m x frag_n` fragments of
/// 16 x 8 elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WarpLayout {
    pub wm: u32,
    pub wn: u32,
    /// 16-row fragments per warp.
    pub frag_m: u32,
    /// 8-column fragments per warp.
    pub frag_n: u32,
}

impl WarpLayout {
    /// The layout for an `[m, n]` accumulator over `warps` warps: among
    /// the `wm x wn` grids with `wm * wn = warps` whose sub-tiles are whole
    /// fragments, the one whose warps read the fewest operand rows and
    /// columns per k step (`m / wm + n / wn`, as CUTLASS's warp shape
    /// does), the squarer one on a tie. `None` when no grid divides the
    /// tile (the checker reports it, P0452).
    pub fn choose(m: u32, n: u32, warps: u32) -> Option<WarpLayout> {
        let mut best: Option<(u32, u32, WarpLayout)> = None;
        for wm in 1..=warps {
            if !warps.is_multiple_of(wm) {
                continue;
            }
            let wn = warps / wm;
            if !m.is_multiple_of(FRAG_M * wm) || !n.is_multiple_of(FRAG_N * wn) {
                continue;
            }
            let l = WarpLayout {
                wm,
                wn,
                frag_m: m / FRAG_M / wm,
                frag_n: n / FRAG_N / wn,
            };
            let traffic = m / wm + n / wn;
            let skew = wm.abs_diff(wn);
            if best.is_none_or(|(t, s, _)| (traffic, skew) < (t, s)) {
                best = Some((traffic, skew, l));
            }
        }
        best.map(|(_, _, l)| l)
    }

    /// The first row and column of the part warp `warp` owns: warps are
    /// numbered along the rows of the warp grid, `wn` to a row (the rule
    /// the emitted PTX computes from `%warp`, backend/emit/mma.rs).
    pub fn warp_origin(&self, warp: u32) -> (u32, u32) {
        (
            (warp / self.wn) * self.warp_rows(),
            (warp % self.wn) * self.warp_cols(),
        )
    }

    /// Rows of the accumulator one warp owns.
    pub fn warp_rows(&self) -> u32 {
        self.frag_m * FRAG_M
    }

    /// Columns of the accumulator one warp owns.
    pub fn warp_cols(&self) -> u32 {
        self.frag_n * FRAG_N
    }

    /// Accumulator registers per lane: four per fragment (32-bit elements;
    /// an f16 accumulator packs two per register).
    pub fn regs(&self, acc: ScalarTy) -> u32 {
        let per_frag = if acc.size() == 2 { 2 } else { 4 };
        per_frag * self.frag_m * self.frag_n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_cover_the_tile_with_whole_fragments() {
        for (m, n, warps) in [
            (64, 64, 4),
            (128, 128, 8),
            (16, 8, 1),
            (32, 64, 4),
            (128, 64, 4),
        ] {
            let l = WarpLayout::choose(m, n, warps).unwrap();
            assert_eq!(l.wm * l.wn, warps);
            assert_eq!(l.warp_rows() * l.wm, m);
            assert_eq!(l.warp_cols() * l.wn, n);
        }
        // 64 x 64 over 4 warps: 2 x 2 (32 + 32 rows and columns read),
        // not 4 x 1 (16 + 64).
        let l = WarpLayout::choose(64, 64, 4).unwrap();
        assert_eq!((l.wm, l.wn, l.frag_m, l.frag_n), (2, 2, 2, 4));
        assert_eq!(l.regs(ScalarTy::F32), 32);
        assert_eq!(l.regs(ScalarTy::F16), 16);
        // 16 rows cannot go to two warp rows, nor 8 columns to two warp columns.
        assert_eq!(WarpLayout::choose(16, 8, 2), None);
        assert_eq!(
            WarpLayout::choose(16, 16, 2).map(|l| (l.wm, l.wn)),
            Some((1, 2))
        );
    }

    #[test]
    fn pairs() {
        assert_eq!(dot_kind(ScalarTy::F16, ScalarTy::F32).unwrap().min_arch, 75);
        assert_eq!(
            dot_kind(ScalarTy::BF16, ScalarTy::F32).unwrap().min_arch,
            80
        );
        assert_eq!(dot_kind(ScalarTy::F32, ScalarTy::F32).map(|k| k.k), Some(8));
        assert_eq!(dot_kind(ScalarTy::F64, ScalarTy::F32), None);
        assert_eq!(dot_kind(ScalarTy::F16, ScalarTy::I32), None);
        assert_eq!(
            dot_kind(ScalarTy::F16, ScalarTy::F16).map(|k| k.k),
            Some(16)
        );
        assert_eq!(dot_kind(ScalarTy::BF16, ScalarTy::F16), None);
        let i8 = dot_kind(ScalarTy::I8, ScalarTy::I32).unwrap();
        assert_eq!((i8.k, i8.min_arch, i8.b_trans_only), (32, 80, true));
        assert_eq!(dot_kind(ScalarTy::I8, ScalarTy::F32), None);
    }
}
