//! Accumulator tiles and `dot` in lowering: each accumulator gets its warp
//! layout (`mma::WarpLayout`, the one the checker validated), a `dot`
//! becomes an `Mma` statement that reads its two tile buffers whole, and
//! an accumulator store becomes an `AccStore` with a tensor tile access,
//! or an `AccToTile` into a box of a tile buffer between candidate
//! barriers.
//!
//! The tiles a `dot` reads get padded rows: 16 bytes more than the row
//! holds, so that the eight 16-byte rows one `ldmatrix` matrix reads fall
//! in eight different groups of four banks (a row of 64 bytes, 32 f16,
//! becomes 80: rows start at 0, 80, 160, ... which are distinct modulo
//! 128). Copies into such a buffer fill the box at its start, and its
//! point and run subscripts use the padded row stride; its tile stores
//! take the box back out.
//!
//! No candidate barrier is added here: the copies that fill the operands
//! already have one after them and one before them (`tile_copy`), and the
//! barrier analysis sees the `Mma` as a read of both buffers by other
//! threads than those that copied them.

use super::Lower;
use crate::ast::{ScalarTy, Span};
use crate::backend::ir::{AccTile, BarrierRole, BufferId, BufferKind, StmtId, StmtKind};
use crate::hir::{self, LocalId, LocalKind};
use crate::mma::WarpLayout;
use std::collections::{HashMap, HashSet};

/// The tile locals some `dot` reads.
pub(super) fn dot_operands(b: &hir::Block) -> HashSet<LocalId> {
    let mut out = HashSet::new();
    walk(b, &mut out);
    out
}

fn walk(b: &hir::Block, out: &mut HashSet<LocalId>) {
    for s in &b.stmts {
        match &s.kind {
            hir::StmtKind::Dot { a, b, .. } => {
                out.insert(*a);
                out.insert(*b);
            }
            _ => s.blocks().into_iter().for_each(|b| walk(b, out)),
        }
    }
}

/// What `wgmma` needs of a kernel on sm_90a: the accumulators its `dot`s
/// add into, and each operand tile's swizzle span (`mma::swizzle_span`).
#[derive(Debug, Default)]
pub(super) struct WgmmaPlan {
    pub accs: HashSet<LocalId>,
    pub spans: HashMap<LocalId, u32>,
}

/// The kernel's `wgmma` plan, when every `dot` in it can run on `wgmma`:
/// its accumulator has a warpgroup layout (`mma::wgmma_layout`), its
/// operands' contiguous rows have a swizzle span, an `[K, N]` `b` has K in
/// whole 16-row steps, and no statement but the copies that declare them
/// and `dot`s touches the operand tiles (their swizzled layout is known to
/// the copies and to `wgmma` only). `None` keeps `mma.sync` for the whole
/// kernel.
pub(super) fn wgmma_plan(k: &hir::Kernel) -> Option<WgmmaPlan> {
    let mut dots = Vec::new();
    collect_dots(&k.body, &mut dots);
    if dots.is_empty() {
        return None;
    }
    let tile = |l: LocalId| match &k.locals[l.0 as usize].kind {
        LocalKind::Tile { elem, shape } if shape.len() == 2 => Some((*elem, shape[0], shape[1])),
        _ => None,
    };
    let mut plan = WgmmaPlan::default();
    for &(acc, a, b, b_trans) in &dots {
        let LocalKind::Acc { elem, rows, cols } = &k.locals[acc.0 as usize].kind else {
            return None;
        };
        let (op, _, ka) = tile(a)?;
        let (_, b0, b1) = tile(b)?;
        crate::mma::wgmma_layout(*rows, *cols, k.threads, op, *elem)?;
        let size = op.size();
        let span_a = crate::mma::swizzle_span(ka * size)?;
        let span_b = if b_trans {
            crate::mma::swizzle_span(b1 * size)?
        } else {
            if !b0.is_multiple_of(16) {
                return None;
            }
            crate::mma::swizzle_span(b1 * size)?
        };
        for (l, span) in [(a, span_a), (b, span_b)] {
            if *plan.spans.entry(l).or_insert(span) != span {
                return None;
            }
        }
        plan.accs.insert(acc);
    }
    // f32 operands are rounded to tf32 by the threads' copies; a staged
    // (`cp.async` or TMA) copy cannot round, so they stay on `mma.sync`.
    let mut staged = HashSet::new();
    staged_tiles(&k.body, false, &mut staged);
    let f32_staged = plan.spans.keys().any(|l| {
        staged.contains(l)
            && matches!(&k.locals[l.0 as usize].kind, LocalKind::Tile { elem, .. } if *elem == ScalarTy::F32)
    });
    if f32_staged {
        return None;
    }
    let mut touched = HashSet::new();
    other_tile_uses(&k.body, &mut touched);
    if plan.spans.keys().any(|l| touched.contains(l)) {
        return None;
    }
    // Copies into a swizzled tile move chunks of at least 8 bytes (or go
    // through TMA): element-by-element copies into the swizzle cost more
    // than `mma.sync` saves (the unaligned `tests/in` GEMMs measured 23
    // instructions per HMMA on sm_90a against 11 on sm_90).
    let mut sources = HashMap::new();
    tile_sources(&k.body, &mut sources);
    let aligned = plan.spans.keys().all(|l| {
        sources
            .get(l)
            .is_some_and(|&p| row_alignment(k, p).is_some_and(|a| a >= 8))
    });
    aligned.then_some(plan)
}

/// The bytes every row of tensor parameter `p` is a multiple of (up to
/// 16; `None` for a tensor of rank below 2 or a scalar): from its last
/// extent, a constant or an `@aligned` dim, times its element size.
pub(super) fn row_alignment(k: &hir::Kernel, p: hir::ParamId) -> Option<u64> {
    let hir::ParamKind::Tensor { elem, dims, .. } = &k.params[p.0 as usize].kind else {
        return None;
    };
    if dims.len() < 2 {
        return None;
    }
    let size = u64::from(elem.size());
    let elems = match dims.last()? {
        hir::DimRef::Const(n) => *n,
        hir::DimRef::Named(d) => k
            .aligned
            .iter()
            .filter(|(x, _)| x == d)
            .map(|(_, a)| *a)
            .max()
            .unwrap_or(1),
    };
    let bytes = elems.saturating_mul(size);
    Some(1u64 << bytes.trailing_zeros().min(4))
}

/// The tile locals copied in the body of a `stages` loop.
fn staged_tiles(b: &hir::Block, in_stages: bool, out: &mut HashSet<LocalId>) {
    for s in &b.stmts {
        match &s.kind {
            hir::StmtKind::TileCopy { dst, .. } if in_stages => {
                out.insert(*dst);
            }
            hir::StmtKind::For(l) => staged_tiles(&l.body, in_stages || l.stages.is_some(), out),
            _ => s
                .blocks()
                .into_iter()
                .for_each(|b| staged_tiles(b, in_stages, out)),
        }
    }
}

/// The tensor each tile local is declared from (`var t = A[...]`).
fn tile_sources(b: &hir::Block, out: &mut HashMap<LocalId, hir::ParamId>) {
    for s in &b.stmts {
        if let hir::StmtKind::TileCopy { dst, src, .. } = &s.kind {
            out.entry(*dst).or_insert(*src);
        }
        s.blocks().into_iter().for_each(|b| tile_sources(b, out));
    }
}

fn collect_dots(b: &hir::Block, out: &mut Vec<(LocalId, LocalId, LocalId, bool)>) {
    for s in &b.stmts {
        if let hir::StmtKind::Dot { acc, a, b, b_trans } = &s.kind {
            out.push((*acc, *a, *b, *b_trans));
        }
        s.blocks().into_iter().for_each(|b| collect_dots(b, out));
    }
}

/// Tile locals that some statement other than a declaring tile copy or a
/// `dot` reads or writes.
fn other_tile_uses(b: &hir::Block, out: &mut HashSet<LocalId>) {
    use hir::{ExprKind, Memory, StmtKind};
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Store {
                dst: Memory::Tile(l),
                ..
            }
            | StmtKind::RunStore {
                dst: Memory::Tile(l),
                ..
            }
            | StmtKind::Atomic {
                dst: Memory::Tile(l),
                ..
            }
            | StmtKind::TileFill { dst: l, .. }
            | StmtKind::TileStore { src: l, .. }
            | StmtKind::AccToTile { dst: l, .. } => {
                out.insert(*l);
            }
            _ => {}
        }
        s.exprs(&mut |e| {
            e.walk(&mut |x| {
                if let ExprKind::Load {
                    src: Memory::Tile(l),
                    ..
                }
                | ExprKind::RunLoad {
                    src: Memory::Tile(l),
                    ..
                } = &x.kind
                {
                    out.insert(*l);
                }
            })
        });
        s.blocks().into_iter().for_each(|b| other_tile_uses(b, out));
    }
}

/// The buffer shape of a `dot` operand of `shape`: its last extent grown by
/// 16 bytes.
pub(super) fn padded_shape(elem: ScalarTy, shape: &[u32]) -> Vec<u32> {
    let mut s = shape.to_vec();
    if let Some(last) = s.last_mut() {
        *last += 16 / elem.size().max(1);
    }
    s
}

impl Lower<'_> {
    /// An accumulator's registers and layout: a warpgroup layout where
    /// the kernel's `dot`s run on `wgmma` (`wgmma`), else the warp layout
    /// the checker validated.
    pub(super) fn declare_acc(
        &mut self,
        id: LocalId,
        elem: ScalarTy,
        (rows, cols): (u32, u32),
        wgmma: bool,
    ) {
        let local = &self.k.locals[id.0 as usize];
        let threads = self.k.threads;
        let chosen = if wgmma {
            crate::mma::warpgroup_layout(rows, cols, threads)
        } else {
            WarpLayout::choose(rows, cols, threads / 32)
        };
        // The checker refused every accumulator without a layout.
        let layout = chosen.unwrap_or(WarpLayout {
            wm: 1,
            wn: 1,
            frag_m: rows / 16,
            frag_n: cols / 8,
        });
        let acc = self.f.accs.push(AccTile {
            name: local.name.clone(),
            elem,
            rows,
            cols,
            layout,
            span: local.span,
        });
        self.accs.insert(id, acc);
    }

    /// The box a tile local occupies in its buffer: its own shape, and
    /// where it starts (empty when it is the whole buffer).
    pub(super) fn tile_box(&self, tile: LocalId, buffer: BufferId) -> (Vec<u32>, Vec<u32>) {
        let own = match &self.k.locals[tile.0 as usize].kind {
            LocalKind::Tile { shape, .. } => shape.clone(),
            _ => vec![],
        };
        let whole = match &self.f.buffers[buffer].kind {
            BufferKind::Tile { shape, .. } => shape.clone(),
            BufferKind::Scratch { .. } => vec![],
        };
        if own == whole {
            (own, vec![])
        } else {
            let at = vec![0; own.len()];
            (own, at)
        }
    }

    pub(super) fn dot(
        &mut self,
        acc: LocalId,
        a: LocalId,
        b: LocalId,
        b_trans: bool,
        span: Span,
    ) -> Vec<StmtId> {
        let k = match &self.k.locals[a.0 as usize].kind {
            LocalKind::Tile { shape, .. } => shape.get(1).copied().unwrap_or(0),
            _ => 0,
        };
        let kind = StmtKind::Mma {
            acc: self.accs[&acc],
            a: self.tiles[&a],
            b: self.tiles[&b],
            b_trans,
            k,
        };
        vec![self.push_stmt(kind, span)]
    }

    /// An epilogue: `value` over the vars of `elem`, `row` and `col`,
    /// which `emit` sets for each element the lane holds. `fn` arguments
    /// in it are substituted at their uses (as on the right of `&&`),
    /// never hoisted: they read the element.
    pub(super) fn acc_map(
        &mut self,
        acc: LocalId,
        [elem, row, col]: [LocalId; 3],
        value: &hir::Expr,
        span: Span,
    ) -> Vec<StmtId> {
        self.lazy += 1;
        let value = self.expr(value);
        self.lazy -= 1;
        let kind = StmtKind::AccMap {
            acc: self.accs[&acc],
            elem: self.locals[&elem],
            row: self.locals[&row],
            col: self.locals[&col],
            value,
        };
        vec![self.push_stmt(kind, span)]
    }

    pub(super) fn acc_store(
        &mut self,
        dst: hir::ParamId,
        starts: &[hir::Expr],
        src: LocalId,
        span: Span,
    ) -> Vec<StmtId> {
        let acc = self.accs[&src];
        let shape = vec![self.f.accs[acc].rows, self.f.accs[acc].cols];
        let access = self.tensor_box(dst, starts, shape, true, span);
        vec![self.push_stmt(StmtKind::AccStore { acc, access }, span)]
    }

    /// `s[at] = acc`: between candidate barriers, like a fill of the box:
    /// earlier readers of the tile must be done before any lane writes,
    /// and the box is read afterwards by threads other than the lane that
    /// held each element.
    pub(super) fn acc_to_tile(
        &mut self,
        dst: LocalId,
        at: [u32; 2],
        src: LocalId,
        span: Span,
    ) -> Vec<StmtId> {
        let acc = self.accs[&src];
        let buffer = self.tiles[&dst];
        let before = self.barrier(BarrierRole::BeforeTile(buffer), span);
        let store = self.push_stmt(StmtKind::AccToTile { acc, buffer, at }, span);
        let after = self.barrier(BarrierRole::AfterTileWrite(buffer), span);
        vec![before, store, after]
    }
}
