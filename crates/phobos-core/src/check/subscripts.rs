//! Subscripts, told apart by shape: point (`A[i, j]`), run (exactly one
//! span `k :+ L` with `L` a constant, `W[row, at :+ 4]`) and tile (every
//! subscript a span or `:`, `x[0 :+ 1, :]`). Point and run subscripts read
//! and write tensors and shared tiles; tile subscripts only copy a tensor
//! into a tile (`var t = x[...]`) and store one back (`A[...] = t`).

use super::consts::const_int;
use super::cx::{const_i32, elem_of, mk, Binding, Cx, Ex};
use super::error::{ArrayError, SubscriptError};
use crate::ast::{self, ExprKind, ScalarTy, Span, Subscript};
use crate::hir::{self, DimRef, LocalKind, Memory, ParamKind, Ty};

/// Longest run a thread may hold in registers.
pub(crate) const MAX_RUN: i128 = 1024;

/// What a subscripted name refers to.
pub(crate) struct Mem {
    pub memory: Memory,
    pub elem: ScalarTy,
    /// Each axis' size when known at compile time.
    pub dims: Vec<Option<i64>>,
    pub name: String,
}

/// A checked subscript list, classified.
pub(crate) enum Shape {
    Point(Vec<hir::Expr>),
    Run {
        index: Vec<hir::Expr>,
        axis: usize,
        len: u32,
    },
    Tile {
        starts: Vec<hir::Expr>,
        shape: Vec<u32>,
    },
}

impl Cx<'_> {
    /// Resolve the base of a subscript to a tensor parameter or tile.
    pub fn memory(&mut self, base: &ast::Expr) -> Option<Mem> {
        if let ExprKind::Shared { .. } = base.kind {
            self.scratch_in_expr(base.span);
            return None;
        }
        let ExprKind::Name(name) = &base.kind else {
            return self.not_subscriptable(base.span);
        };
        match self.lookup(name).cloned() {
            Some(Binding::Param(id)) => match &self.header.params[id.0 as usize].kind {
                ParamKind::Tensor { elem, dims, .. } => Some(Mem {
                    memory: Memory::Tensor(id),
                    elem: *elem,
                    dims: dims.iter().map(|d| self.dim_value(*d)).collect(),
                    name: name.clone(),
                }),
                ParamKind::Scalar(_) => self.not_subscriptable(base.span),
            },
            Some(Binding::Local(id)) => match &self.locals[id.0 as usize].kind {
                LocalKind::Tile { elem, shape } => Some(Mem {
                    memory: Memory::Tile(id),
                    elem: *elem,
                    dims: shape.iter().map(|&s| Some(i64::from(s))).collect(),
                    name: name.clone(),
                }),
                LocalKind::Array { elem, shape } => {
                    Some(super::arrays::array_mem(id, *elem, shape, name))
                }
                LocalKind::Scalar(_) => self.not_subscriptable(base.span),
                LocalKind::Acc { .. } => {
                    self.acc_not_value(id, name, base.span);
                    None
                }
            },
            None => {
                self.expr(base, None);
                None
            }
            Some(Binding::Poisoned) => None,
            Some(_) => self.not_subscriptable(base.span),
        }
    }

    fn not_subscriptable(&mut self, span: Span) -> Option<Mem> {
        self.report(SubscriptError::NotSubscriptable { span });
        None
    }

    /// A dim's size when this variant knows it: a constant or autotuned dim.
    pub fn dim_value(&self, d: DimRef) -> Option<i64> {
        match d {
            DimRef::Const(v) => i64::try_from(v).ok(),
            DimRef::Named(id) => self.dim_consts.get(id.0 as usize).copied().flatten(),
        }
    }

    /// `Some` when `subs` has one subscript per dim of `mem`, else `None`
    /// after reporting P0500 at `span`.
    pub fn subscript_count(&mut self, mem: &Mem, subs: &[Subscript], span: Span) -> Option<()> {
        if subs.len() == mem.dims.len() {
            return Some(());
        }
        self.report(SubscriptError::SubscriptCount {
            name: mem.name.clone(),
            dims: mem.dims.len(),
            found: subs.len(),
            span,
        });
        None
    }

    /// Check and classify a subscript list against `mem`.
    pub fn shape(&mut self, mem: &Mem, subs: &[Subscript], span: Span) -> Option<Shape> {
        self.subscript_count(mem, subs, span)?;
        if let Memory::Array(_) = mem.memory {
            return self.array_shape(mem, subs);
        }
        let spans = subs
            .iter()
            .filter(|s| !matches!(s, Subscript::Point(_)))
            .count();
        let full = subs.iter().any(|s| matches!(s, Subscript::Full(_)));
        if spans == 0 {
            let index = self.indices(subs)?;
            let shape = Shape::Point(index);
            return self.tile_bounds(mem, subs, &shape).then_some(shape);
        }
        if spans == 1 && !full {
            let shape = self.run_shape(subs)?;
            return self.tile_bounds(mem, subs, &shape).then_some(shape);
        }
        self.tile_shape(mem, subs)
    }

    /// A point or run of a shared tile whose index folds to a constant
    /// must lie inside the tile (P0417, as for a register array): the
    /// shared plan packs buffers next to each other, so `s[-1]` would be
    /// the neighbour's last element. False after reporting.
    fn tile_bounds(&mut self, mem: &Mem, subs: &[Subscript], shape: &Shape) -> bool {
        if !matches!(mem.memory, Memory::Tile(_)) {
            return true;
        }
        let (index, run) = match shape {
            Shape::Point(index) => (index, None),
            Shape::Run { index, axis, len } => (index, Some((*axis, *len))),
            Shape::Tile { .. } => return true,
        };
        let mut ok = true;
        for (axis, x) in index.iter().enumerate() {
            let (Some(v), Some(dim)) = (const_int(x), mem.dims.get(axis).copied().flatten()) else {
                continue;
            };
            let len = match run {
                Some((a, len)) if a == axis => i128::from(len),
                _ => 1,
            };
            let bad = if v < 0 { v } else { v + len - 1 };
            if bad < 0 || bad >= i128::from(dim) {
                let span = match &subs[axis] {
                    Subscript::Point(e) => e.span,
                    Subscript::Span { start, .. } => start.span,
                    Subscript::Full(span) => *span,
                };
                self.report(ArrayError::ArrayIndexRange {
                    index: bad,
                    axis,
                    name: mem.name.clone(),
                    dim,
                    span,
                });
                ok = false;
            }
        }
        ok
    }

    fn indices(&mut self, subs: &[Subscript]) -> Option<Vec<hir::Expr>> {
        let out: Vec<Ex> = subs
            .iter()
            .map(|s| match s {
                Subscript::Point(e) => self.index(e),
                Subscript::Span { start, .. } => self.index(start),
                Subscript::Full(span) => Some(const_i32(0, *span)),
            })
            .collect();
        out.into_iter().collect()
    }

    /// An index: i32.
    pub fn index(&mut self, e: &ast::Expr) -> Ex {
        self.expr_of(e, ScalarTy::I32, "an index")
    }

    fn run_shape(&mut self, subs: &[Subscript]) -> Option<Shape> {
        let index = self.indices(subs);
        let mut run = None;
        for (axis, s) in subs.iter().enumerate() {
            if let Subscript::Span { len, .. } = s {
                run = self.span_len(len, "run").map(|l| (axis, l));
            }
        }
        let (axis, len) = run?;
        Some(Shape::Run {
            index: index?,
            axis,
            len,
        })
    }

    /// The length of a span: a positive compile-time constant.
    fn span_len(&mut self, len: &ast::Expr, what: &str) -> Option<u32> {
        let x = self.expr(len, Some(ScalarTy::I32))?;
        match const_int(&x) {
            Some(v)
                if (1..=MAX_RUN).contains(&v)
                    || (what == "tile" && v >= 1 && v <= i128::from(u32::MAX)) =>
            {
                Some(v as u32)
            }
            Some(v) => {
                self.report(SubscriptError::SpanLenRange {
                    what: what.to_string(),
                    value: v,
                    span: len.span,
                });
                None
            }
            None => {
                self.report(SubscriptError::SpanLenNotConstant {
                    what: what.to_string(),
                    text: self.text(len.span).to_string(),
                    span: len.span,
                });
                None
            }
        }
    }

    pub(crate) fn tile_shape(&mut self, mem: &Mem, subs: &[Subscript]) -> Option<Shape> {
        let mut starts = Vec::new();
        let mut shape = Vec::new();
        let mut ok = true;
        for (axis, s) in subs.iter().enumerate() {
            let (start, len) = match s {
                Subscript::Point(e) => {
                    self.report(SubscriptError::TilePoint { span: e.span });
                    ok = false;
                    continue;
                }
                Subscript::Span { start, len, .. } => {
                    (self.index(start), self.span_len(len, "tile"))
                }
                Subscript::Full(span) => {
                    (Some(const_i32(0, *span)), self.full_dim(mem, axis, *span))
                }
            };
            match (start, len) {
                (Some(s), Some(l)) => {
                    starts.push(s);
                    shape.push(l);
                }
                _ => ok = false,
            }
        }
        ok.then_some(Shape::Tile { starts, shape })
    }

    fn full_dim(&mut self, mem: &Mem, axis: usize, span: Span) -> Option<u32> {
        match mem.dims.get(axis).copied().flatten() {
            Some(v) if v > 0 && v <= i64::from(u32::MAX) => Some(v as u32),
            _ => {
                self.report(SubscriptError::FullDimUnknown {
                    axis,
                    name: mem.name.clone(),
                    span,
                });
                None
            }
        }
    }

    /// A subscript in an expression: a point or run load.
    pub fn index_expr(&mut self, base: &ast::Expr, subs: &[Subscript], span: Span) -> Ex {
        let mem = self.memory(base)?;
        match self.shape(&mem, subs, span)? {
            Shape::Point(index) => Some(mk(
                hir::ExprKind::Load {
                    src: mem.memory,
                    index,
                },
                Ty::Scalar(mem.elem),
                span,
            )),
            Shape::Run { index, axis, len } => Some(mk(
                hir::ExprKind::RunLoad {
                    src: mem.memory,
                    index,
                    axis,
                    len,
                },
                Ty::Run {
                    elem: mem.elem,
                    len,
                },
                span,
            )),
            Shape::Tile { .. } => {
                self.report(SubscriptError::TileAsValue { span });
                None
            }
        }
    }

    /// `var t = x[0 :+ 1, :]`: when `init` has a tile's shape, the tile
    /// local and its copy statement. `None` when `init` is not a tile.
    pub fn tile_copy(
        &mut self,
        name: &ast::Ident,
        mutable: bool,
        init: &ast::Expr,
    ) -> Option<Option<hir::StmtKind>> {
        let ExprKind::Index { base, subs } = &init.kind else {
            return Some(None);
        };
        let spans = subs
            .iter()
            .filter(|s| !matches!(s, Subscript::Point(_)))
            .count();
        let is_tile = subs.iter().any(|s| matches!(s, Subscript::Full(_)))
            || spans >= 2
            || (spans == 1 && subs.len() == 1);
        if !is_tile {
            return Some(None);
        }
        let mem = self.memory(base)?;
        let Memory::Tensor(src) = mem.memory else {
            self.report(SubscriptError::TileCopyFromTile { span: base.span });
            return None;
        };
        self.subscript_count(&mem, subs, init.span)?;
        let Shape::Tile { starts, shape } = self.tile_shape(&mem, subs)? else {
            return None;
        };
        let kind = LocalKind::Tile {
            elem: mem.elem,
            shape,
        };
        let dst = self.new_local(&name.name, name.span, mutable, kind);
        self.bind(&name.name, Binding::Local(dst));
        Some(Some(hir::StmtKind::TileCopy { dst, src, starts }))
    }

    /// `target = value` where `target` is a subscript.
    pub fn store(
        &mut self,
        base: &ast::Expr,
        subs: &[Subscript],
        op: Option<crate::ast::BinOp>,
        value: &ast::Expr,
        span: Span,
    ) -> Option<hir::StmtKind> {
        let mem = self.memory(base)?;
        let shape = self.shape(&mem, subs, span)?;
        self.mark_written(mem.memory);
        match shape {
            Shape::Point(index) => {
                let value = self.store_value(&mem, &index, None, op, value, span)?;
                Some(hir::StmtKind::Store {
                    dst: mem.memory,
                    index,
                    value: Box::new(value),
                })
            }
            Shape::Run { index, axis, len } => {
                let value = self.store_value(&mem, &index, Some((axis, len)), op, value, span)?;
                Some(hir::StmtKind::RunStore {
                    dst: mem.memory,
                    index,
                    axis,
                    len,
                    value: Box::new(value),
                    only: None,
                })
            }
            Shape::Tile { starts, shape } => match self.value_acc(value) {
                Some(acc) => self.acc_store(&mem, starts, &shape, op, value, acc),
                None if matches!(mem.memory, Memory::Tile(_)) => {
                    self.tile_fill(&mem, starts, &shape, op, value)
                }
                None => self.tile_store(&mem, starts, &shape, op, value),
            },
        }
    }

    pub fn mark_written(&mut self, memory: Memory) {
        if let Memory::Tensor(id) = memory {
            if let Some(w) = self.written.get_mut(id.0 as usize) {
                *w = true;
            }
        }
    }

    /// The value stored by a point or run store (a compound assignment reads
    /// the old value first). A scalar stored to a run is broadcast.
    fn store_value(
        &mut self,
        mem: &Mem,
        index: &[hir::Expr],
        run: Option<(usize, u32)>,
        op: Option<crate::ast::BinOp>,
        value: &ast::Expr,
        span: Span,
    ) -> Ex {
        let old = match run {
            None => hir::ExprKind::Load {
                src: mem.memory,
                index: index.to_vec(),
            },
            Some((axis, len)) => hir::ExprKind::RunLoad {
                src: mem.memory,
                index: index.to_vec(),
                axis,
                len,
            },
        };
        let target_ty = match run {
            None => Ty::Scalar(mem.elem),
            Some((_, len)) => Ty::Run {
                elem: mem.elem,
                len,
            },
        };
        let v = match op {
            Some(op) => self.compound(op, mk(old, target_ty, span), value, span)?,
            None => self.expr(value, Some(mem.elem))?,
        };
        let ok = v.ty == target_ty || (run.is_some() && v.ty == Ty::Scalar(mem.elem));
        if ok {
            return Some(v);
        }
        // The right elements in the wrong shape: a run into one element,
        // or a run of another length.
        let same_elem = elem_of(v.ty) == Some(mem.elem);
        match (v.ty, target_ty) {
            (Ty::Run { len, .. }, Ty::Scalar(_)) if same_elem => {
                self.report(SubscriptError::StoreRunIntoElement {
                    len,
                    name: mem.name.clone(),
                    elem: mem.elem,
                    span: value.span,
                });
                return None;
            }
            (Ty::Run { len, .. }, Ty::Run { len: want, .. }) if same_elem => {
                self.report(SubscriptError::StoreRunLength {
                    len,
                    want,
                    value: value.span,
                    span,
                });
                return None;
            }
            _ => {}
        }
        self.report(SubscriptError::StoreType {
            value: v.ty,
            name: mem.name.clone(),
            holds: target_ty,
            elem: mem.elem,
            span: value.span,
        });
        None
    }

    fn tile_store(
        &mut self,
        mem: &Mem,
        starts: Vec<hir::Expr>,
        shape: &[u32],
        op: Option<crate::ast::BinOp>,
        value: &ast::Expr,
    ) -> Option<hir::StmtKind> {
        let tile = match (&value.kind, self.value_tile(value)) {
            (_, Some(t)) if op.is_none() => t,
            // A tile whose declaration failed was reported there.
            (ExprKind::Name(n), _) if matches!(self.lookup(n), Some(Binding::Poisoned)) => {
                return None;
            }
            _ => {
                self.report(SubscriptError::TileStoreNotTile { span: value.span });
                return None;
            }
        };
        let Memory::Tensor(dst) = mem.memory else {
            self.report(SubscriptError::TileStoreIntoTile { span: value.span });
            return None;
        };
        if let LocalKind::Tile {
            elem,
            shape: tshape,
        } = &self.locals[tile.0 as usize].kind
        {
            if tshape.as_slice() != shape || *elem != mem.elem {
                self.report(SubscriptError::TileStoreMismatch {
                    tile: (tshape.clone(), *elem),
                    target: (shape.to_vec(), mem.elem),
                    span: value.span,
                });
                return None;
            }
        }
        Some(hir::StmtKind::TileStore {
            dst,
            starts,
            src: tile,
        })
    }

    fn value_tile(&self, value: &ast::Expr) -> Option<hir::LocalId> {
        let ExprKind::Name(n) = &value.kind else {
            return None;
        };
        match self.lookup(n) {
            Some(Binding::Local(id))
                if matches!(self.locals[id.0 as usize].kind, LocalKind::Tile { .. }) =>
            {
                Some(*id)
            }
            _ => None,
        }
    }
}
