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
use std::collections::HashSet;

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
    pub(super) fn declare_acc(&mut self, id: LocalId, elem: ScalarTy, rows: u32, cols: u32) {
        let local = &self.k.locals[id.0 as usize];
        // The checker refused every accumulator without a layout.
        let layout = WarpLayout::choose(rows, cols, self.k.threads / 32).unwrap_or(WarpLayout {
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
