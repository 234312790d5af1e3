//! Lowering: one `hir::Kernel` variant → the backend IR (`ir::Func`).
//!
//! What lowering decides (and nothing else does): `ctx` values that are
//! compile-time constants (`lanes`, `threads`, `warps`) become constants and
//! integer constant expressions are folded; CTA collectives are hoisted out
//! of their expressions into `CtaColl` statements with their scratch buffer
//! and their three candidate barriers; `sum(i32(a) * i32(b))` over byte runs
//! becomes `Dp4aSum`; tile copies, tile stores and element stores into tiles
//! get candidate barriers around them at the nearest uniform control point;
//! a store into a tile whose operands read a tile, and an `if` or `for`
//! whose condition or bounds read one, get a fence between operands and
//! action; an `if` whose condition varies, at a uniform point, whose
//! branches read and write tiles is predicated statement by statement so
//! candidates fit between its statements. Whether a candidate barrier is
//! kept is decided later by `barriers`.
//!
//! Early exits: control is uniform only where every thread of the CTA
//! arrives. The body of a loop that some threads may leave early (a
//! `break`, `continue` or `return` under a condition that is not known
//! uniform) is not uniform, nor is the rest of the kernel after a `return`
//! that some threads may take, so no candidate barrier goes there; a
//! hazard there is reported by `barriers` (P0802). An `if` that contains
//! an early exit is never predicated.

use super::ir::{
    Access, Barrier, BarrierRole, Buffer, BufferId, BufferKind, Combine, CtaColl, Expr, ExprId,
    ExprKind, ForLoop, Func, Mem, Shape, Stmt, StmtId, StmtKind, Var, VarId,
};
use crate::ast::{BinOp, CtxField, ScalarTy, Span, UnOp};
use crate::check::uniformity::Judge;
use crate::consteval;
use crate::hir::{self, CollOp, ConstVal, Group, LocalKind, Ty};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};

mod arrays;
mod mma;
mod stages;

/// Lower one variant. `entry` is the PTX entry name.
///
/// Register arrays start in registers; an access whose index does not
/// fold to a constant moves its array to local memory, and the variant is
/// lowered again (at most once more per array).
pub fn lower(kernel: &hir::Kernel, entry: &str) -> Func {
    lower_for(kernel, entry, true, false)
}

/// Lower one variant for a target that has `cp.async` (`async_copies`:
/// sm_80+, where `stages S` loops get their ring) or not.
pub fn lower_for(kernel: &hir::Kernel, entry: &str, async_copies: bool, wgmma: bool) -> Func {
    let mut in_local = BTreeMap::new();
    loop {
        let (f, dynamic) = lower_placed(kernel, entry, &in_local, (async_copies, wgmma));
        let mut moved = false;
        for (array, span) in dynamic {
            if let std::collections::btree_map::Entry::Vacant(v) = in_local.entry(array) {
                v.insert(span);
                moved = true;
            }
        }
        if !moved {
            return f;
        }
    }
}

fn lower_placed(
    kernel: &hir::Kernel,
    entry: &str,
    in_local: &BTreeMap<hir::LocalId, Span>,
    (async_copies, wgmma): (bool, bool),
) -> (Func, Vec<(hir::LocalId, Span)>) {
    let mut cx = Lower {
        k: kernel,
        f: Func {
            entry: entry.to_string(),
            threads: kernel.threads,
            min_ctas: kernel.min_ctas,
            ptx_params: super::ir::PtxSlot::list(kernel),
            ..Func::default()
        },
        locals: HashMap::new(),
        tiles: HashMap::new(),
        uniform_vars: HashSet::new(),
        judge: RefCell::new(Judge::new(kernel)),
        judged: HashSet::new(),
        pre: Vec::new(),
        uniform: true,
        pending_tile_writes: Vec::new(),
        cta_count: 0,
        lazy: 0,
        substituted: HashMap::new(),
        pred: None,
        predicated_already: false,
        arrays: HashMap::new(),
        loop_consts: HashMap::new(),
        let_consts: HashMap::new(),
        array_index_depth: 0,
        full_unroll_copies: 1,
        dynamic_arrays: Vec::new(),
        run_locals: HashMap::new(),
        accs: HashMap::new(),
        async_copies,
        staged_copies: Vec::new(),
    };
    let dot_operands = mma::dot_operands(&kernel.body);
    // On sm_90a, `wgmma` when every `dot` can take it: its operands are
    // swizzled, not padded.
    let wgmma = if wgmma { mma::wgmma_plan(kernel) } else { None };
    for (i, local) in kernel.locals.iter().enumerate() {
        let id = hir::LocalId(i as u32);
        match &local.kind {
            LocalKind::Scalar(ty) => {
                let v = cx.f.vars.push(Var {
                    name: local.name.clone(),
                    ty: *ty,
                });
                cx.locals.insert(id, v);
            }
            LocalKind::Tile { elem, shape } => {
                // In 64 bits, saturated: a tile too large for the address
                // space must reach the shared plan's limit, not wrap.
                let span = wgmma.as_ref().and_then(|p| p.spans.get(&id).copied());
                let shape = &if dot_operands.contains(&id) && span.is_none() {
                    mma::padded_shape(*elem, shape)
                } else {
                    shape.clone()
                };
                let bytes = shape
                    .iter()
                    .try_fold(u64::from(elem.size()), |a, &d| a.checked_mul(u64::from(d)))
                    .unwrap_or(u64::MAX);
                let b = cx.f.buffers.push(Buffer {
                    name: local.name.clone(),
                    kind: BufferKind::Tile {
                        elem: *elem,
                        shape: shape.clone(),
                    },
                    bytes,
                    span: local.span,
                });
                cx.tiles.insert(id, b);
                if let Some(span) = span {
                    cx.f.swizzle.insert(b, span);
                }
            }
            LocalKind::Array { .. } => {}
            LocalKind::Acc { elem, rows, cols } => {
                let on_wgmma = wgmma.as_ref().is_some_and(|p| p.accs.contains(&id));
                cx.declare_acc(id, *elem, (*rows, *cols), on_wgmma)
            }
        }
    }
    cx.place_arrays(in_local);
    for (local, unused) in super::padding::unused_columns(kernel) {
        if let Some(b) = cx.tiles.get(&local) {
            cx.f.tile_padding.insert(*b, unused);
        }
    }
    let body = cx.block(&kernel.body);
    cx.f.body = body;
    (cx.f, cx.dynamic_arrays)
}

struct Lower<'k> {
    k: &'k hir::Kernel,
    f: Func,
    locals: HashMap<hir::LocalId, VarId>,
    tiles: HashMap<hir::LocalId, BufferId>,
    /// `let` locals and loop variables known to be uniform over the CTA.
    uniform_vars: HashSet<VarId>,
    /// The checker's uniformity verdicts (`check::uniformity`).
    judge: RefCell<Judge<'k>>,
    /// Lowered conditions and bounds the checker proved uniform.
    judged: HashSet<ExprId>,
    /// Statements hoisted out of the expression being lowered (CTA collectives).
    pre: Vec<StmtId>,
    /// Whether control at the current point is uniform over the CTA.
    uniform: bool,
    /// Tiles written by element stores since the last uniform control point.
    pending_tile_writes: Vec<(BufferId, Span)>,
    cta_count: u32,
    /// Inside the right side of `&&`/`||`, which `emit` may skip: a `fn`
    /// argument there is not hoisted before the statement (that would
    /// evaluate a guarded load unguarded) but substituted at each use.
    lazy: u32,
    /// The `fn` arguments substituted at their uses (see `lazy`).
    substituted: HashMap<hir::LocalId, hir::Expr>,
    /// Inside a predicated `if` (see `predicated_if_under`): the bool var that
    /// says whether this thread takes the branch. Each statement is
    /// wrapped in `if pred`, so barriers can go between them.
    pred: Option<VarId>,
    /// Set by a statement whose lowering is already predicated (a nested
    /// predicated `if`), so that `block` does not wrap it again.
    predicated_already: bool,
    /// Where each register array lives (see `arrays`).
    arrays: HashMap<hir::LocalId, arrays::Home>,
    /// Loop variables of loops being unrolled completely: their value in
    /// the copy being lowered.
    loop_consts: HashMap<hir::LocalId, i128>,
    /// Immutable `let`s whose value lowered to an integer constant, folded
    /// into array indices.
    let_consts: HashMap<hir::LocalId, i128>,
    /// Inside an array index (where `let_consts` fold).
    array_index_depth: u32,
    /// Loop bodies the complete unrolls around this point multiply to.
    full_unroll_copies: u64,
    /// Arrays in registers found indexed by a value known only at run
    /// time, with that index.
    dynamic_arrays: Vec<(hir::LocalId, Span)>,
    /// Run-valued `fn` arguments bound once: one var per element (see
    /// `bind_run`).
    run_locals: HashMap<hir::LocalId, Vec<VarId>>,
    /// Accumulator tiles (see `mma`).
    accs: HashMap<hir::LocalId, super::ir::AccId>,
    /// Whether the target has `cp.async`, so `stages S` loops get a ring
    /// (see `stages`).
    async_copies: bool,
    /// Inside a ring's loop body: its tile copies (by span), which the
    /// ring issues itself.
    staged_copies: Vec<Span>,
}

impl<'k> Lower<'k> {
    fn block(&mut self, b: &hir::Block) -> Vec<StmtId> {
        let mut out = Vec::new();
        for s in &b.stmts {
            let at_uniform = self.uniform;
            let mut lowered = self.stmt(s);
            // After a `return` some threads may take, fewer threads go on.
            let left = at_uniform && self.leaves_varying(std::slice::from_ref(s), false).1;
            let predicated = std::mem::take(&mut self.predicated_already);
            if let (Some(p), false) = (self.pred, predicated) {
                lowered = lowered
                    .into_iter()
                    .map(|x| self.wrap_in_pred(x, p, s.span))
                    .collect();
            }
            let mut pre = std::mem::take(&mut self.pre);
            if let Some(p) = self.pred {
                // `fn` arguments hoisted before the statement run under its
                // predicate too: they may load what only taking threads may.
                pre = pre
                    .into_iter()
                    .map(|x| self.wrap_in_pred(x, p, s.span))
                    .collect();
            }
            if at_uniform && !self.pending_tile_writes.is_empty() {
                let after_ok = !left;
                // Element stores into tiles under this statement: fence them
                // from earlier readers and from later readers in other threads.
                let writes = std::mem::take(&mut self.pending_tile_writes);
                let mut seen = HashSet::new();
                for (buf, span) in writes {
                    if seen.insert(buf) {
                        let before = self.barrier(BarrierRole::BeforeTile(buf), span);
                        pre.push(before);
                        // No barrier after a statement some threads left
                        // the kernel in: the hazard, if any, is reported.
                        if after_ok {
                            let after = self.barrier(BarrierRole::AfterTileWrite(buf), span);
                            lowered.push(after);
                        }
                    }
                }
            }
            out.extend(pre);
            out.extend(lowered);
            if left {
                self.uniform = false;
            }
        }
        out
    }

    /// Whether `stmts`, run under control that is `varying` or not, leave
    /// early under control not known to be uniform: (a `break` or
    /// `continue` of the loop around them, a `return`). An exit makes what
    /// follows it varying; a loop left early has every trip varying.
    fn leaves_varying(&self, stmts: &[hir::Stmt], varying: bool) -> (bool, bool) {
        let (mut own, mut ret) = (false, false);
        let mut v = varying;
        for s in stmts {
            match &s.kind {
                hir::StmtKind::Break | hir::StmtKind::Continue => own |= v,
                hir::StmtKind::Return => ret |= v,
                hir::StmtKind::If { cond, then, els } => {
                    let v2 = v || !self.hir_uniform(cond);
                    let (o1, r1) = self.leaves_varying(&then.stmts, v2);
                    let (o2, r2) = self.leaves_varying(&els.stmts, v2);
                    own |= o1 || o2;
                    ret |= r1 || r2;
                }
                hir::StmtKind::For(l) => {
                    let bounds = [&l.start, &l.end, &l.step]
                        .iter()
                        .all(|e| self.hir_uniform(e));
                    ret |= self.loop_leaves_varying(&l.body.stmts, v || !bounds);
                }
                hir::StmtKind::While { cond, body } => {
                    let v2 = v || !self.hir_uniform(cond);
                    ret |= self.loop_leaves_varying(&body.stmts, v2);
                }
                _ => {}
            }
            v |= own || ret;
        }
        (own, ret)
    }

    /// Whether some threads may leave a loop whose body is `body` early
    /// (by its own `break` or `continue`, or by `return`), so that not every
    /// thread runs every trip.
    fn left_early(&self, body: &[hir::Stmt]) -> bool {
        let (own, ret) = self.leaves_varying(body, false);
        own || ret
    }

    /// Whether a loop body returns under varying control (its own exits
    /// under varying control make every trip varying).
    fn loop_leaves_varying(&self, body: &[hir::Stmt], varying: bool) -> bool {
        let (own, ret) = self.leaves_varying(body, varying);
        ret || ((own || varying) && self.leaves_varying(body, true).1)
    }

    /// Whether a HIR expression is known the same in every thread, as
    /// `is_uniform` judges its lowered form (a local counts when it is a
    /// uniform `let` already lowered).
    fn hir_uniform(&self, e: &hir::Expr) -> bool {
        self.structurally_uniform(e) || self.judge.borrow_mut().uniform(e)
    }

    fn structurally_uniform(&self, e: &hir::Expr) -> bool {
        use hir::ExprKind as K;
        match &e.kind {
            K::Const(_) | K::Param(_) | K::Dim(_) => true,
            K::Ctx(c) => !matches!(c, CtxField::Thread | CtxField::Warp | CtxField::Lane),
            K::Local(id) => self
                .locals
                .get(id)
                .is_some_and(|v| self.uniform_vars.contains(v)),
            K::Unary(_, x) | K::Convert(x) | K::RunSum(x) => self.structurally_uniform(x),
            K::Elem { run, .. } | K::Word { run, .. } => self.structurally_uniform(run),
            K::Binary(_, a, b) => self.structurally_uniform(a) && self.structurally_uniform(b),
            K::Builtin(_, xs) => xs.iter().all(|x| self.structurally_uniform(x)),
            K::Load { .. }
            | K::RunLoad { .. }
            | K::Collective { .. }
            | K::Shuffle { .. }
            | K::Let { .. } => false,
        }
    }

    fn push_stmt(&mut self, kind: StmtKind, span: Span) -> StmtId {
        self.f.stmt_spans.push(span);
        self.f.stmts.push(Stmt { kind })
    }

    fn barrier(&mut self, role: BarrierRole, span: Span) -> StmtId {
        let b = self.f.barriers.push(Barrier { role, span });
        self.push_stmt(StmtKind::Barrier(b), span)
    }

    /// Lower one statement into zero or more IR statements (hoisted ones go
    /// to `self.pre`).
    fn stmt(&mut self, s: &hir::Stmt) -> Vec<StmtId> {
        let span = s.span;
        match &s.kind {
            hir::StmtKind::Let { local, init } if self.arrays.contains_key(local) => {
                self.array_let(*local, init, span)
            }
            hir::StmtKind::Store {
                dst: hir::Memory::Array(array),
                index,
                value,
            } => self.array_store(*array, index, value, span),
            hir::StmtKind::Let { local, init } => {
                let v = self.locals[local];
                let e = self.expr(init);
                self.note_let_const(*local, e);
                let mutable = self.k.locals[local.0 as usize].mutable;
                if self.uniform
                    && ((!mutable && self.is_uniform(e))
                        || self.judge.borrow().local_uniform(*local))
                {
                    self.uniform_vars.insert(v);
                }
                vec![self.push_stmt(StmtKind::Set(v, e), span)]
            }
            hir::StmtKind::Assign { local, value } => {
                let v = self.locals[local];
                let e = self.expr(value);
                vec![self.push_stmt(StmtKind::Set(v, e), span)]
            }
            hir::StmtKind::Store { dst, index, value } if self.pred.is_some() => {
                self.predicated_store(*dst, index, value, span)
            }
            hir::StmtKind::Store { dst, index, value } => {
                let acc = self.access(*dst, index, Shape::Point, true, span);
                let e = self.expr(value);
                self.note_tile_write(*dst, span);
                let s = self.push_stmt(StmtKind::Store(acc, e), span);
                let mut operands = self.f.accesses[acc].index.clone();
                operands.push(e);
                self.fence_store(s, *dst, &operands);
                vec![s]
            }
            hir::StmtKind::RunStore {
                dst,
                index,
                axis,
                len,
                value,
                only,
            } => {
                let access = self.run_access(*dst, index, *axis, *len, true, span);
                let value = self.expr(value);
                let only = only.as_ref().map(|i| self.expr(i));
                self.note_tile_write(*dst, span);
                let s = self.push_stmt(
                    StmtKind::RunStore {
                        access,
                        value,
                        only,
                    },
                    span,
                );
                let mut operands = self.f.accesses[access].index.clone();
                operands.push(value);
                operands.extend(only);
                self.fence_store(s, *dst, &operands);
                vec![s]
            }
            hir::StmtKind::TileCopy { .. } if self.staged_copies.contains(&span) => vec![],
            hir::StmtKind::TileCopy { dst, src, starts } => {
                let buffer = self.tiles[dst];
                // The tile's own shape: a `dot` operand's buffer has padded
                // rows, and the copy fills the box at its start.
                let (shape, at) = self.tile_box(*dst, buffer);
                let stmts = self.tile_copy(buffer, *src, starts, shape, at, span);
                // The declaring copy fills the whole tile; only a buffer's
                // `dot` padding, which no access reaches, stays unwritten.
                self.f.whole_copies.insert(stmts[1]);
                stmts
            }
            hir::StmtKind::TileFill {
                dst,
                at,
                src,
                starts,
                shape,
            } => {
                // Like a tile copy, into a box of the buffer.
                let buffer = self.tiles[dst];
                self.tile_copy(buffer, *src, starts, shape.clone(), at.clone(), span)
            }
            hir::StmtKind::TileStore { dst, starts, src } => {
                let buffer = self.tiles[src];
                let (shape, _) = self.tile_box(*src, buffer);
                let access = self.tensor_box(*dst, starts, shape, true, span);
                let before = self.barrier(BarrierRole::BeforeTile(buffer), span);
                let store = self.push_stmt(StmtKind::TileStore { access, buffer }, span);
                vec![before, store]
            }
            hir::StmtKind::If { cond: c, then, els }
                if self.uniform
                    && self.pred.is_none()
                    && branches_have_tile_hazards(then, els)
                    && !has_exit(then)
                    && !has_exit(els) =>
            {
                let cond = self.judged_expr(c);
                if self.is_uniform(cond) {
                    self.if_stmt(cond, then, els, span)
                } else {
                    self.predicated_if_under(None, cond, then, els, span)
                }
            }
            hir::StmtKind::If { cond: c, then, els }
                if self.pred.is_some()
                    && branches_have_tile_hazards(then, els)
                    && !has_exit(then)
                    && !has_exit(els) =>
            {
                // A varying `if` inside a predicated one: predicated in
                // turn, under both conditions, so barriers can still go
                // between its statements.
                let outer = self.pred.take();
                let cond = self.expr(c);
                let out = self.predicated_if_under(outer, cond, then, els, span);
                self.pred = outer;
                self.predicated_already = true;
                out
            }
            hir::StmtKind::If { cond, then, els } => {
                let cond = self.judged_expr(cond);
                self.if_stmt(cond, then, els, span)
            }
            hir::StmtKind::For(_) | hir::StmtKind::While { .. } if self.pred.is_some() => {
                // A loop under a predicate: its body runs per thread.
                let outer = std::mem::replace(&mut self.uniform, false);
                let pred = self.pred.take();
                let out = self.stmt(s);
                self.pred = pred;
                self.uniform = outer;
                out
            }
            hir::StmtKind::For(l)
                if l.stages.is_some()
                    && self.rings_here()
                    && [&l.start, &l.end].iter().all(|e| self.hir_uniform(e))
                    && !self.left_early(&l.body.stmts) =>
            {
                self.staged_for(l, span)
            }
            hir::StmtKind::For(l) => self.for_stmt(l, span),
            hir::StmtKind::While { cond, body } => self.while_stmt(cond, body, span),
            hir::StmtKind::Atomic {
                op,
                dst,
                index,
                args,
                result,
            } => self.atomic(*op, *dst, index, args, *result, span),
            hir::StmtKind::Fence => vec![self.push_stmt(StmtKind::Fence, span)],
            hir::StmtKind::AccZero { acc } => {
                vec![self.push_stmt(StmtKind::AccZero(self.accs[acc]), span)]
            }
            hir::StmtKind::Dot { acc, a, b, b_trans } => self.dot(*acc, *a, *b, *b_trans, span),
            hir::StmtKind::AccStore { dst, starts, src } => {
                self.acc_store(*dst, starts, *src, span)
            }
            hir::StmtKind::AccToTile { dst, at, src } => self.acc_to_tile(*dst, *at, *src, span),
            hir::StmtKind::AccMap {
                acc,
                elem,
                row,
                col,
                value,
            } => self.acc_map(*acc, [*elem, *row, *col], value, span),
            hir::StmtKind::Break => vec![self.push_stmt(StmtKind::Break, span)],
            hir::StmtKind::Continue => vec![self.push_stmt(StmtKind::Continue, span)],
            hir::StmtKind::Return => vec![self.push_stmt(StmtKind::Return, span)],
        }
    }

    /// A masked copy of the box `starts :+ shape` of tensor `src` into
    /// `buffer` at `at` (the whole buffer when `at` is empty), between
    /// candidate barriers.
    fn tile_copy(
        &mut self,
        buffer: BufferId,
        src: hir::ParamId,
        starts: &[hir::Expr],
        shape: Vec<u32>,
        at: Vec<u32>,
        span: Span,
    ) -> Vec<StmtId> {
        let access = self.tensor_box(src, starts, shape, false, span);
        let before = self.barrier(BarrierRole::BeforeTile(buffer), span);
        let copy = self.push_stmt(StmtKind::TileCopy { access, buffer, at }, span);
        let after = self.barrier(BarrierRole::AfterTileCopy(buffer), span);
        vec![before, copy, after]
    }

    /// `while cond { body }`: what lowering hoists out of `cond` (CTA
    /// collectives, `fn` arguments) runs before every trip, not once.
    fn while_stmt(&mut self, cond: &hir::Expr, body: &hir::Block, span: Span) -> Vec<StmtId> {
        let outer_pre = std::mem::take(&mut self.pre);
        let outer = self.uniform;
        // The condition is evaluated at the head of every trip, under the
        // loop's own control.
        let inner = outer && self.hir_uniform(cond) && !self.left_early(&body.stmts);
        self.uniform = inner;
        let c = self.judged_expr(cond);
        let pre = std::mem::take(&mut self.pre);
        let body = self.block(body);
        self.pre = outer_pre;
        let s = self.push_stmt(StmtKind::While { pre, cond: c, body }, span);
        // The fence after the condition is inside the loop: only where
        // every thread runs every trip.
        self.fence_read(s, &[c], span);
        self.uniform = outer;
        vec![s]
    }

    fn if_stmt(
        &mut self,
        cond: ExprId,
        then: &hir::Block,
        els: &hir::Block,
        span: Span,
    ) -> Vec<StmtId> {
        let outer = self.uniform;
        // Under a predicate, an inner `if` runs per thread.
        let pred = self.pred.take();
        self.uniform = outer && pred.is_none() && self.is_uniform(cond);
        let pre = std::mem::take(&mut self.pre);
        let then = self.block(then);
        let els = self.block(els);
        self.pre = pre;
        self.uniform = outer;
        self.pred = pred;
        let s = self.push_stmt(StmtKind::If { cond, then, els }, span);
        self.fence_read(s, &[cond], span);
        vec![s]
    }

    fn for_stmt(&mut self, l: &hir::ForLoop, span: Span) -> Vec<StmtId> {
        if let Some(copies) = self.full_unroll(l) {
            return copies;
        }
        let v = self.locals[&l.var];
        let start = self.judged_expr(&l.start);
        let end = self.judged_expr(&l.end);
        let step = self.judged_expr(&l.step);
        let outer = self.uniform;
        let uniform_bounds =
            self.is_uniform(start) && self.is_uniform(end) && self.is_uniform(step);
        if outer && uniform_bounds {
            self.uniform_vars.insert(v);
        }
        self.uniform = outer && uniform_bounds && !self.left_early(&l.body.stmts);
        if self.uniform {
            self.uniform_vars.insert(v);
        }
        let pre = std::mem::take(&mut self.pre);
        let body = self.block(&l.body);
        self.pre = pre;
        self.uniform = outer;
        let s = self.push_stmt(
            StmtKind::For(ForLoop {
                var: v,
                start,
                end,
                step,
                body,
            }),
            span,
        );
        self.fence_read(s, &[start, end, step], span);
        if let Some(n) = l.unroll {
            self.f.loop_unroll.insert(s, n);
        }
        vec![s]
    }

    /// An `if` whose condition differs between threads, at a uniform point,
    /// whose branches both read and write tiles: no barrier could go inside
    /// it, so it is lowered statement by statement under a predicate —
    /// `p = cond`, then each statement `s` of the then-branch as
    /// `if p { s }` and of the else-branch as `if !p { s }` — with the
    /// candidate barriers between them at uniform control. A store whose
    /// operands read a tile is split into computing the operands and
    /// storing them, with a candidate between (`t[i] = t[i] + t[i - d]`).
    ///
    /// Inside a predicated `if` whose predicate is `outer` (`Some`), the
    /// condition is evaluated only where `outer` holds (it may load what
    /// only those threads may), the then-branch runs where both hold and
    /// the else-branch where `outer` holds and `cond` does not. The
    /// statements come back already predicated (`block` must not wrap
    /// them again; `predicated_already` says so).
    fn predicated_if_under(
        &mut self,
        outer: Option<VarId>,
        cond: ExprId,
        then: &hir::Block,
        els: &hir::Block,
        span: Span,
    ) -> Vec<StmtId> {
        let bool_ty = Ty::Scalar(ScalarTy::Bool);
        let p = self.f.vars.push(Var {
            name: "if".to_string(),
            ty: ScalarTy::Bool,
        });
        let mut out = Vec::new();
        let set = self.push_stmt(StmtKind::Set(p, cond), span);
        // What lowering hoisted out of the condition (a CTA collective with
        // its barriers, `fn` arguments) runs before `p` is set, with the
        // condition. Left in `pre`, the first branch statement's `block`
        // would take it and run it under `p`, after the condition's fence:
        // a CTA collective there is reached by some threads only (the
        // shuffles of its butterfly and its barriers deadlock).
        let pre = std::mem::take(&mut self.pre);
        match outer {
            None => {
                out.extend(pre);
                out.push(set);
            }
            Some(o) => {
                let no = self.push_expr(ExprKind::Const(ConstVal::Bool(false)), bool_ty, span);
                out.push(self.push_stmt(StmtKind::Set(p, no), span));
                for x in pre {
                    out.push(self.wrap_in_pred(x, o, span));
                }
                out.push(self.wrap_in_pred(set, o, span));
            }
        }
        // The condition may read a tile that the branches write: a
        // candidate barrier after it, as a statement of its own (a `Set`
        // holds no fence: the verifier refuses one, and barrier placement
        // and emission would ignore it).
        if self.uniform {
            if let Some(buf) = self.f.tile_read(cond) {
                out.push(self.barrier(BarrierRole::AfterRead(buf), span));
            }
        }
        let branches = [(then, false), (els, true)];
        for (b, negate) in branches {
            if b.stmts.is_empty() {
                continue;
            }
            let q = if negate {
                let q = self.f.vars.push(Var {
                    name: "else".to_string(),
                    ty: ScalarTy::Bool,
                });
                let pv = self.push_expr(ExprKind::Var(p), bool_ty, span);
                let mut not = self.push_expr(ExprKind::Unary(UnOp::Not, pv), bool_ty, span);
                if let Some(o) = outer {
                    let ov = self.push_expr(ExprKind::Var(o), bool_ty, span);
                    not = self.push_expr(ExprKind::Binary(BinOp::And, ov, not), bool_ty, span);
                }
                out.push(self.push_stmt(StmtKind::Set(q, not), span));
                q
            } else {
                p
            };
            self.pred = Some(q);
            out.extend(self.block(b));
            self.pred = None;
        }
        out
    }

    /// `if pred { s }` (barriers stay outside: they are at uniform control).
    fn wrap_in_pred(&mut self, s: StmtId, pred: VarId, span: Span) -> StmtId {
        if matches!(self.f.stmts[s].kind, StmtKind::Barrier(_)) {
            return s;
        }
        // A predicate differs between threads; a CTA collective needs every
        // thread (the checker refuses one under varying control, P0701), so
        // one here was moved under a predicate by lowering itself.
        debug_assert!(
            !matches!(self.f.stmts[s].kind, StmtKind::CtaColl(_)),
            "a CTA collective put under a predicate at {:?}",
            self.f.stmt_span(s)
        );
        let cond = self.push_expr(ExprKind::Var(pred), Ty::Scalar(ScalarTy::Bool), span);
        self.push_stmt(
            StmtKind::If {
                cond,
                then: vec![s],
                els: vec![],
            },
            self.f.stmt_span(s),
        )
    }

    /// A point store under a predicate: when its operands read a tile and it
    /// writes one, the operands go into vars first, then a candidate
    /// barrier (outside the predicate), then the store of the vars.
    fn predicated_store(
        &mut self,
        dst: hir::Memory,
        index: &[hir::Expr],
        value: &hir::Expr,
        span: Span,
    ) -> Vec<StmtId> {
        let mut out = Vec::new();
        let mut operand = |cx: &mut Self, e: &hir::Expr| {
            let x = cx.expr(e);
            if cx.f.tile_read(x).is_none() || !matches!(dst, hir::Memory::Tile(_)) {
                return x;
            }
            let ty = cx.f.scalar_ty(x);
            let v = cx.f.vars.push(Var {
                name: "operand".to_string(),
                ty,
            });
            out.push(cx.push_stmt(StmtKind::Set(v, x), e.span));
            cx.push_expr(ExprKind::Var(v), Ty::Scalar(ty), e.span)
        };
        let index: Vec<ExprId> = index.iter().map(|e| operand(self, e)).collect();
        let value = operand(self, value);
        if let (hir::Memory::Tile(l), false) = (dst, out.is_empty()) {
            let buf = self.tiles[&l];
            out.push(self.barrier(BarrierRole::BeforeTile(buf), span));
        }
        let acc = self.access_of(dst, index, Shape::Point, true, span);
        self.note_tile_write(dst, span);
        out.push(self.push_stmt(StmtKind::Store(acc, value), span));
        out
    }

    /// A store into a tile whose operands read a tile gets a candidate
    /// barrier between evaluating them and writing (`t[i] = t[i] + t[i - d]`:
    /// other threads' reads of `t` must finish before this thread writes).
    /// Only where control is uniform; elsewhere `barriers` reports a hazard
    /// it cannot fence.
    fn fence_store(&mut self, s: StmtId, dst: hir::Memory, operands: &[ExprId]) {
        let hir::Memory::Tile(l) = dst else {
            return;
        };
        // Under a predicate the statement is wrapped in `if pred`: no
        // barrier may go inside it.
        let at_uniform = self.uniform && self.pred.is_none();
        if at_uniform && operands.iter().any(|&e| self.f.tile_read(e).is_some()) {
            let b = self.f.barriers.push(Barrier {
                role: BarrierRole::BeforeTile(self.tiles[&l]),
                span: self.f.stmt_span(s),
            });
            self.f.fences.push((s, b));
        }
    }

    /// An `if` condition or `for` bounds that read a tile get a candidate
    /// barrier after they are evaluated, before the body may write the tile.
    fn fence_read(&mut self, s: StmtId, operands: &[ExprId], span: Span) {
        if !self.uniform || self.pred.is_some() {
            return;
        }
        if let Some(buf) = operands.iter().find_map(|&e| self.f.tile_read(e)) {
            let b = self.f.barriers.push(Barrier {
                role: BarrierRole::AfterRead(buf),
                span,
            });
            self.f.fences.push((s, b));
        }
    }

    /// An atomic: a point access that both reads and writes its element.
    /// On a tile it is a write for barrier placement (candidates before and
    /// after it, like an element store), and a store whose operands read a
    /// tile gets its fence; `barriers` knows atomics do not conflict with
    /// each other.
    fn atomic(
        &mut self,
        op: hir::AtomicOp,
        dst: hir::Memory,
        index: &[hir::Expr],
        args: &[hir::Expr],
        result: Option<hir::LocalId>,
        span: Span,
    ) -> Vec<StmtId> {
        let access = self.access(dst, index, Shape::Point, true, span);
        let args: Vec<ExprId> = args.iter().map(|a| self.expr(a)).collect();
        self.note_tile_write(dst, span);
        let dst_var = result.map(|l| self.locals[&l]);
        let s = self.push_stmt(
            StmtKind::Atomic {
                op,
                access,
                args: args.clone(),
                dst: dst_var,
            },
            span,
        );
        let mut operands = self.f.accesses[access].index.clone();
        operands.extend(args);
        self.fence_store(s, dst, &operands);
        vec![s]
    }

    /// `v = x` before the statement being lowered (in `pre`): a value an
    /// expression needs once. `v` is uniform where `x` and control are.
    fn set_before(&mut self, v: VarId, x: ExprId, span: Span) {
        if self.uniform && self.is_uniform(x) {
            self.uniform_vars.insert(v);
        }
        let set = self.push_stmt(StmtKind::Set(v, x), span);
        self.pre.push(set);
    }

    fn note_tile_write(&mut self, dst: hir::Memory, span: Span) {
        if let hir::Memory::Tile(l) = dst {
            let b = self.tiles[&l];
            self.pending_tile_writes.push((b, span));
        }
    }

    fn access(
        &mut self,
        mem: hir::Memory,
        index: &[hir::Expr],
        shape: Shape,
        store: bool,
        span: Span,
    ) -> super::ir::AccessId {
        let index = index.iter().map(|e| self.expr(e)).collect();
        self.access_of(mem, index, shape, store, span)
    }

    /// The access of the box `starts :+ shape` of tensor `tensor`: what a
    /// tile copy reads and a tile or accumulator store writes.
    fn tensor_box(
        &mut self,
        tensor: hir::ParamId,
        starts: &[hir::Expr],
        shape: Vec<u32>,
        store: bool,
        span: Span,
    ) -> super::ir::AccessId {
        let shape = Shape::Tile { shape };
        self.access(hir::Memory::Tensor(tensor), starts, shape, store, span)
    }

    /// The access of the `len` elements from `index` along `axis`: what a
    /// run load reads and a run store writes.
    fn run_access(
        &mut self,
        mem: hir::Memory,
        index: &[hir::Expr],
        axis: usize,
        len: u32,
        store: bool,
        span: Span,
    ) -> super::ir::AccessId {
        self.access(mem, index, Shape::Run { axis, len }, store, span)
    }

    fn access_of(
        &mut self,
        mem: hir::Memory,
        index: Vec<ExprId>,
        shape: Shape,
        store: bool,
        span: Span,
    ) -> super::ir::AccessId {
        let (mem, elem) = match mem {
            hir::Memory::Tensor(p) => {
                let elem = match &self.k.params[p.0 as usize].kind {
                    hir::ParamKind::Tensor { elem, .. } => *elem,
                    hir::ParamKind::Scalar(t) => *t,
                };
                (Mem::Tensor(p), elem)
            }
            hir::Memory::Array(l) => match self.arrays[&l] {
                arrays::Home::Local(a) => (Mem::Local(a), self.f.arrays[a].elem),
                // Array elements in registers are never memory accesses.
                arrays::Home::Regs { .. } => unreachable!("an access to an array in registers"),
            },
            hir::Memory::Tile(l) => {
                let b = self.tiles[&l];
                let elem = match &self.f.buffers[b].kind {
                    BufferKind::Tile { elem, .. } => *elem,
                    BufferKind::Scratch { .. } => ScalarTy::U32,
                };
                (Mem::Buffer(b), elem)
            }
        };
        self.f.accesses.push(Access {
            mem,
            elem,
            index,
            shape,
            store,
            span,
        })
    }

    fn push_expr(&mut self, kind: ExprKind, ty: Ty, span: Span) -> ExprId {
        self.f.expr_spans.push(span);
        self.f.exprs.push(Expr { kind, ty })
    }

    fn int_const(&mut self, v: i128, ty: ScalarTy, span: Span) -> ExprId {
        self.push_expr(ExprKind::Const(ConstVal::Int(v)), Ty::Scalar(ty), span)
    }

    /// Whether an expression is the same in every thread of the CTA.
    /// Lowers a condition or a loop bound, remembering whether the checker
    /// proved it uniform.
    fn judged_expr(&mut self, e: &hir::Expr) -> ExprId {
        let id = self.expr(e);
        if self.judge.get_mut().uniform(e) {
            self.judged.insert(id);
        }
        id
    }

    fn is_uniform(&self, e: ExprId) -> bool {
        if self.judged.contains(&e) {
            return true;
        }
        let own = match &self.f.exprs[e].kind {
            ExprKind::Const(_) | ExprKind::Param(_) | ExprKind::Dim(_) => true,
            ExprKind::Ctx(c) => !matches!(c, CtxField::Thread | CtxField::Warp | CtxField::Lane),
            ExprKind::Var(v) => self.uniform_vars.contains(v),
            ExprKind::RunVars(vs) => vs.iter().all(|v| self.uniform_vars.contains(v)),
            ExprKind::Load(_)
            | ExprKind::RunLoad(_)
            | ExprKind::LaneColl { .. }
            | ExprKind::Shuffle { .. } => false,
            _ => true,
        };
        own && self.f.operands(e).into_iter().all(|o| self.is_uniform(o))
    }

    fn expr(&mut self, e: &hir::Expr) -> ExprId {
        let span = e.span;
        let ty = e.ty;
        match &e.kind {
            hir::ExprKind::Const(c) => self.push_expr(ExprKind::Const(c.clone()), ty, span),
            hir::ExprKind::Local(l) if self.known_local(*l).is_some() => {
                let v = self.known_local(*l).unwrap_or(0);
                self.int_const(v, ScalarTy::I32, span)
            }
            hir::ExprKind::Local(l) => match self.substituted.get(l).cloned() {
                Some(value) => self.expr(&value),
                None if self.run_locals.contains_key(l) => {
                    let vars = self.run_locals[l].clone();
                    self.push_expr(ExprKind::RunVars(vars), ty, span)
                }
                None => {
                    let v = self.locals[l];
                    self.push_expr(ExprKind::Var(v), ty, span)
                }
            },
            hir::ExprKind::Let { local, value, body } => {
                if self.lazy > 0 {
                    self.substituted.insert(*local, (**value).clone());
                    return self.expr(body);
                }
                if let Ty::Run { elem, len } = value.ty {
                    self.bind_run(*local, value, elem, len);
                    return self.expr(body);
                }
                // Evaluated once, before the statement that holds it.
                let e = self.expr(value);
                self.set_before(self.locals[local], e, value.span);
                self.expr(body)
            }
            hir::ExprKind::Param(p) => self.push_expr(ExprKind::Param(*p), ty, span),
            hir::ExprKind::Dim(d) => match self.k.dims[d.0 as usize].constant {
                Some(v) => self.int_const(v as i128, ScalarTy::I32, span),
                None => self.push_expr(ExprKind::Dim(*d), ty, span),
            },
            hir::ExprKind::Ctx(c) => {
                let threads = self.k.threads as i128;
                match c {
                    CtxField::Lanes => self.int_const(32, ScalarTy::I32, span),
                    CtxField::Threads => self.int_const(threads, ScalarTy::I32, span),
                    CtxField::Warps => self.int_const(threads / 32, ScalarTy::I32, span),
                    _ => self.push_expr(ExprKind::Ctx(*c), ty, span),
                }
            }
            hir::ExprKind::Unary(op, a) => {
                let a = self.expr(a);
                if let (UnOp::Neg, Some(v), Ty::Scalar(t)) = (op, self.f.const_int(a), ty) {
                    if let Ok(v) = consteval::unary(UnOp::Neg, t, v) {
                        return self.int_const(v, t, span);
                    }
                }
                self.push_expr(ExprKind::Unary(*op, a), ty, span)
            }
            hir::ExprKind::Binary(op, a, b) => {
                let a = self.expr(a);
                let lazy = matches!(op, BinOp::And | BinOp::Or);
                self.lazy += u32::from(lazy);
                let b = self.expr(b);
                self.lazy -= u32::from(lazy);
                if let (Some(x), Some(y), Ty::Scalar(t)) =
                    (self.f.const_int(a), self.f.const_int(b), ty)
                {
                    // Comparisons stay in the IR: only integer results fold.
                    if let (true, Ok(v)) = (t.is_int(), consteval::wrapping(*op, t, x, y)) {
                        return self.int_const(v, t, span);
                    }
                }
                self.push_expr(ExprKind::Binary(*op, a, b), ty, span)
            }
            hir::ExprKind::Convert(a) => {
                let a = self.expr(a);
                if let (Some(v), Ty::Scalar(t)) = (self.f.const_int(a), ty) {
                    if t.is_int() && self.f.scalar_ty(a).is_int() {
                        return self.int_const(consteval::convert(v, t), t, span);
                    }
                }
                self.push_expr(ExprKind::Convert(a), ty, span)
            }
            hir::ExprKind::Builtin(b, args) => {
                let args = args.iter().map(|a| self.expr(a)).collect();
                self.push_expr(ExprKind::Builtin(*b, args), ty, span)
            }
            hir::ExprKind::Load {
                src: hir::Memory::Array(array),
                index,
            } => self.array_load(*array, index, ty, span),
            hir::ExprKind::Load { src, index } => {
                let acc = self.access(*src, index, Shape::Point, false, span);
                self.push_expr(ExprKind::Load(acc), ty, span)
            }
            hir::ExprKind::RunLoad {
                src,
                index,
                axis,
                len,
            } => {
                let acc = self.run_access(*src, index, *axis, *len, false, span);
                self.push_expr(ExprKind::RunLoad(acc), ty, span)
            }
            hir::ExprKind::RunSum(inner) => {
                let inner = self.expr(inner);
                self.run_sum(inner, ty, span)
            }
            hir::ExprKind::Elem { run, i } => {
                let r = self.expr(run);
                self.push_expr(ExprKind::Elem(r, *i), ty, span)
            }
            hir::ExprKind::Word { run, i } => {
                let r = self.expr(run);
                self.push_expr(ExprKind::Word(r, *i), ty, span)
            }
            hir::ExprKind::Collective {
                op,
                group,
                arg,
                combine,
            } => {
                let arg = self.expr(arg);
                let combine = combine.as_ref().map(|c| self.combine(c));
                match group {
                    Group::Lane { width } => self.push_expr(
                        ExprKind::LaneColl {
                            op: *op,
                            width: *width,
                            arg,
                            combine,
                        },
                        ty,
                        span,
                    ),
                    Group::Thread => self.cta_collective(*op, arg, combine, ty, span),
                }
            }
            hir::ExprKind::Shuffle {
                mode,
                width,
                lane,
                value,
            } => {
                let lane = self.expr(lane);
                let value = self.expr(value);
                self.push_expr(
                    ExprKind::Shuffle {
                        mode: *mode,
                        width: *width,
                        lane,
                        value,
                    },
                    ty,
                    span,
                )
            }
        }
    }

    /// A run-valued `fn` argument (`gelu(X[r, j :+ 4] * s)`), evaluated
    /// once before the statement like a scalar one: each element goes into
    /// a var of its own, one `Set` per element, and the body reads the
    /// vars (`RunVars`). The value is split elementwise so that no element
    /// recomputes the others: its scalar parts (and the arguments of fn
    /// calls inside it) are computed once first (`prepare_run`), and each
    /// run load becomes element `i` of an equal run load, which `emit`
    /// loads once for all the `Set`s.
    fn bind_run(&mut self, local: hir::LocalId, value: &hir::Expr, elem: ScalarTy, len: u32) {
        let mut scalars = HashMap::new();
        self.prepare_run(value, &mut scalars);
        let name = self.k.locals[local.0 as usize].name.clone();
        let mut vars = Vec::with_capacity(len as usize);
        for i in 0..len {
            let x = self.run_elem(value, i, &scalars);
            let v = self.f.vars.push(Var {
                name: format!("{name}.{i}"),
                ty: elem,
            });
            self.set_before(v, x, value.span);
            vars.push(v);
        }
        self.run_locals.insert(local, vars);
    }

    /// Before a run's elements are split: compute each scalar part of the
    /// run expression `e` that is not a leaf into a var (keyed by the HIR
    /// node), and bind the arguments of the fn calls inside it.
    fn prepare_run(&mut self, e: &hir::Expr, scalars: &mut HashMap<*const hir::Expr, VarId>) {
        use hir::ExprKind as K;
        if let Ty::Scalar(t) = e.ty {
            if matches!(
                e.kind,
                K::Const(_) | K::Local(_) | K::Param(_) | K::Dim(_) | K::Ctx(_)
            ) {
                return;
            }
            let x = self.expr(e);
            let v = self.f.vars.push(Var {
                name: "operand".to_string(),
                ty: t,
            });
            self.set_before(v, x, e.span);
            scalars.insert(e as *const hir::Expr, v);
            return;
        }
        match &e.kind {
            K::Let { local, value, body } => {
                match value.ty {
                    Ty::Run { elem, len } => self.bind_run(*local, value, elem, len),
                    _ => {
                        let x = self.expr(value);
                        self.set_before(self.locals[local], x, value.span);
                    }
                }
                self.prepare_run(body, scalars);
            }
            K::Unary(_, x) | K::Convert(x) => self.prepare_run(x, scalars),
            K::Binary(_, a, b) => {
                self.prepare_run(a, scalars);
                self.prepare_run(b, scalars);
            }
            K::Builtin(_, xs) => xs.iter().for_each(|x| self.prepare_run(x, scalars)),
            _ => {}
        }
    }

    /// Element `i` of the run expression `e`, after `prepare_run`.
    fn run_elem(
        &mut self,
        e: &hir::Expr,
        i: u32,
        scalars: &HashMap<*const hir::Expr, VarId>,
    ) -> ExprId {
        use hir::ExprKind as K;
        let span = e.span;
        let (elem, len) = match e.ty {
            Ty::Run { elem, len } => (elem, len),
            Ty::Scalar(t) => {
                return match scalars.get(&(e as *const hir::Expr)) {
                    Some(v) => self.push_expr(ExprKind::Var(*v), Ty::Scalar(t), span),
                    None => self.expr(e),
                };
            }
            Ty::Unit => return self.expr(e),
        };
        let ty = Ty::Scalar(elem);
        let kind = match &e.kind {
            K::Local(l) if self.run_locals.contains_key(l) => {
                ExprKind::Var(self.run_locals[l][i as usize])
            }
            K::Let { body, .. } => return self.run_elem(body, i, scalars),
            K::Unary(op, x) => ExprKind::Unary(*op, self.run_elem(x, i, scalars)),
            K::Convert(x) => ExprKind::Convert(self.run_elem(x, i, scalars)),
            K::Binary(op, a, b) => {
                let a = self.run_elem(a, i, scalars);
                ExprKind::Binary(*op, a, self.run_elem(b, i, scalars))
            }
            K::Builtin(b, xs) => {
                let xs = xs.iter().map(|x| self.run_elem(x, i, scalars)).collect();
                ExprKind::Builtin(*b, xs)
            }
            // A run load (and anything else): element `i` of the whole run.
            _ => {
                let r = self.expr(e);
                debug_assert!(len > i);
                ExprKind::Elem(r, i)
            }
        };
        self.push_expr(kind, ty, span)
    }

    fn combine(&mut self, c: &hir::Combine) -> Combine {
        let a = self.locals[&c.a];
        let b = self.locals[&c.b];
        // The combine body runs inside the collective, once per step, so
        // nothing in it may be hoisted before the statement.
        self.lazy += 1;
        let body = self.expr(&c.body);
        self.lazy -= 1;
        Combine { a, b, body }
    }

    /// `sum(e)`: one dp4a per packed word where the page allows it.
    fn run_sum(&mut self, inner: ExprId, ty: Ty, span: Span) -> ExprId {
        if ty == Ty::Scalar(ScalarTy::I32) {
            if let ExprKind::Binary(BinOp::Mul, a, b) = self.f.exprs[inner].kind {
                if super::ir::is_packed_operand(&self.f, a)
                    && super::ir::is_packed_operand(&self.f, b)
                {
                    return self.push_expr(ExprKind::Dp4aSum { a, b: Some(b) }, ty, span);
                }
            }
            if super::ir::is_packed_operand(&self.f, inner) {
                return self.push_expr(ExprKind::Dp4aSum { a: inner, b: None }, ty, span);
            }
        }
        self.push_expr(ExprKind::RunSum(inner), ty, span)
    }

    fn cta_collective(
        &mut self,
        op: CollOp,
        arg: ExprId,
        combine: Option<Combine>,
        ty: Ty,
        span: Span,
    ) -> ExprId {
        let value_ty = self.f.scalar_ty(arg);
        let word = if value_ty.size() == 8 { 8 } else { 4 };
        let slot_bytes = if op == CollOp::Argmax { word * 2 } else { word };
        let slots = (self.k.threads / 32).max(1);
        self.cta_count += 1;
        let name = format!("{}@{}", op.name(), self.cta_count);
        let scratch = self.f.buffers.push(Buffer {
            name,
            kind: BufferKind::Scratch { slot_bytes, slots },
            bytes: u64::from(slot_bytes) * u64::from(slots),
            span,
        });
        let result_ty = match ty {
            Ty::Scalar(t) => t,
            _ => value_ty,
        };
        let dst = self.f.vars.push(Var {
            name: format!("cta{}", self.cta_count),
            ty: result_ty,
        });
        let mk = |s: &mut Self, role| s.f.barriers.push(Barrier { role, span });
        let before = mk(self, BarrierRole::CtaBefore(scratch));
        let written = mk(self, BarrierRole::CtaWritten(scratch));
        let read = mk(self, BarrierRole::CtaRead(scratch));
        let stmt = self.push_stmt(
            StmtKind::CtaColl(CtaColl {
                dst,
                op,
                arg,
                combine,
                scratch,
                before,
                written,
                read,
            }),
            span,
        );
        self.pre.push(stmt);
        self.uniform_vars.insert(dst);
        self.push_expr(ExprKind::Var(dst), ty, span)
    }
}

/// Whether the branches write a tile and also read one, or write tiles in
/// two statements: the hazards a predicated `if` lets barriers separate
/// (two writes of one element by different threads need a barrier between
/// them too, or the element keeps either value).
fn branches_have_tile_hazards(then: &hir::Block, els: &hir::Block) -> bool {
    let (mut reads, mut writes) = (false, 0u32);
    for b in [then, els] {
        scan_block(b, &mut reads, &mut writes);
    }
    (reads && writes > 0) || writes >= 2
}

/// Whether `b` reads a tile, and how many of its statements write one.
fn scan_block(b: &hir::Block, reads: &mut bool, writes: &mut u32) {
    for s in &b.stmts {
        match &s.kind {
            hir::StmtKind::Let { init: e, .. } | hir::StmtKind::Assign { value: e, .. } => {
                *reads |= reads_tile(e);
            }
            hir::StmtKind::Store { dst, index, value }
            | hir::StmtKind::RunStore {
                dst, index, value, ..
            } => {
                *writes += u32::from(matches!(dst, hir::Memory::Tile(_)));
                *reads |= index.iter().any(reads_tile) || reads_tile(value);
                if let hir::StmtKind::RunStore { only: Some(i), .. } = &s.kind {
                    *reads |= reads_tile(i);
                }
            }
            hir::StmtKind::If { cond, then, els } => {
                *reads |= reads_tile(cond);
                scan_block(then, reads, writes);
                scan_block(els, reads, writes);
            }
            hir::StmtKind::For(l) => {
                *reads |= reads_tile(&l.start) || reads_tile(&l.end) || reads_tile(&l.step);
                scan_block(&l.body, reads, writes);
            }
            hir::StmtKind::While { cond, body } => {
                *reads |= reads_tile(cond);
                scan_block(body, reads, writes);
            }
            hir::StmtKind::TileCopy { .. }
            | hir::StmtKind::TileFill { .. }
            | hir::StmtKind::TileStore { .. } => {
                *reads = true;
                *writes += 1;
            }
            hir::StmtKind::Atomic {
                dst, index, args, ..
            } => {
                // An atomic on a tile reads and writes it.
                let tile = matches!(dst, hir::Memory::Tile(_));
                *writes += u32::from(tile);
                *reads |= tile || index.iter().any(reads_tile) || args.iter().any(reads_tile);
            }
            // A `dot` reads its tiles; an accumulator is in registers.
            hir::StmtKind::Dot { .. } => *reads = true,
            hir::StmtKind::AccToTile { .. } => *writes += 1,
            hir::StmtKind::AccMap { value, .. } => *reads |= reads_tile(value),
            hir::StmtKind::Fence
            | hir::StmtKind::AccZero { .. }
            | hir::StmtKind::AccStore { .. }
            | hir::StmtKind::Break
            | hir::StmtKind::Continue
            | hir::StmtKind::Return => {}
        }
    }
}

/// Whether a block holds a `break`, `continue` or `return` at any depth.
fn has_exit(b: &hir::Block) -> bool {
    b.stmts.iter().any(|s| match &s.kind {
        hir::StmtKind::Break | hir::StmtKind::Continue | hir::StmtKind::Return => true,
        _ => s.blocks().into_iter().any(has_exit),
    })
}

fn reads_tile(e: &hir::Expr) -> bool {
    use hir::ExprKind as K;
    match &e.kind {
        K::Load { src, index } | K::RunLoad { src, index, .. } => {
            matches!(src, hir::Memory::Tile(_)) || index.iter().any(reads_tile)
        }
        K::Const(_) | K::Local(_) | K::Param(_) | K::Dim(_) | K::Ctx(_) => false,
        K::Unary(_, x) | K::Convert(x) | K::RunSum(x) => reads_tile(x),
        K::Elem { run, .. } | K::Word { run, .. } => reads_tile(run),
        K::Binary(_, a, b) => reads_tile(a) || reads_tile(b),
        K::Builtin(_, xs) => xs.iter().any(reads_tile),
        K::Collective { arg, combine, .. } => {
            reads_tile(arg) || combine.as_ref().is_some_and(|c| reads_tile(&c.body))
        }
        K::Shuffle { lane, value, .. } => reads_tile(lane) || reads_tile(value),
        K::Let { value, body, .. } => reads_tile(value) || reads_tile(body),
    }
}
