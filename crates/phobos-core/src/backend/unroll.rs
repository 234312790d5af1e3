//! Loop unrolling: the one backend pass that rewrites the IR after `lower`.
//!
//! A memory-bound loop reaches bandwidth only when each thread has several
//! independent loads in flight. A loop whose body issues one or two loads
//! per trip, as the seed's matvecs do, gives the scheduler too little to
//! hoist; copying the body `U` times into one trip gives it `U` times as
//! many loads with no dependence between them.
//!
//! Which loops, and by how much:
//!
//! - `unroll N` written on the loop (the factor is in `Func::loop_unroll`):
//!   exactly `N` bodies per trip; `unroll 1` keeps the loop as written.
//! - Otherwise, automatically by [`AUTO_FACTOR`], an innermost loop whose
//!   body reads a tensor and holds nothing that must not be copied freely:
//!   no barrier, tile copy or store, CTA collective or lane exchange, and at
//!   most [`AUTO_MAX_BODY_EXPRS`] expressions. When both bounds are
//!   constants, a trip count below two leaves the loop alone and a smaller
//!   one lowers the factor.
//!
//! The step must be a constant (the checker insists for `unroll N`), so the
//! direction of the loop is known. `for k in range(start, end, c)` becomes
//!
//! ```text
//! k_start = start; k_end = end; k_rest = k_start
//! for k_main in range(k_start, limit, U*c) {     // limit: see below
//!     k = k_main;           body
//!     k = k_main + c;       body (a copy)
//!     ...
//!     k = k_main + (U-1)*c; body (a copy)
//!     k_rest = k_main + U*c
//! }
//! for k in range(k_rest, k_end, c) { body }      // the remainder: < U trips
//! ```
//!
//! A trip of the main loop runs only when all `U` values of `k` are inside
//! the range: `k_main + (U-1)*c < end` (for `c > 0`), which is
//! `k_main < end - (U-1)*c`. That limit is clamped before the subtraction
//! (`max(end, MIN + (U-1)*c) - (U-1)*c`) so it cannot wrap; for `c < 0`,
//! mirrored with `min` and `MAX`. Each copy is a deep copy: new expressions,
//! accesses and candidate barriers (expressions stay trees, every barrier
//! appears once, and a statement's fence is copied with it); vars and
//! buffers are shared, since the copies run one after another. The loop's
//! own fence, after its bounds, becomes a candidate barrier after the
//! statements that now evaluate them. Copies keep their source spans, so every instruction
//! still maps to its `.pho` line.
//!
//! Runs before every analysis, so divisibility, the shared plan and barrier
//! placement see the unrolled loops. Its one diagnostic is P0803: before
//! copying anything it counts the statements and expressions the kernel
//! would have after unrolling (each loop's body times its factor plus one,
//! for the remainder loop, nested loops multiplied), and refuses a kernel
//! above [`MAX_UNROLLED_SIZE`]. Six nested `unroll 32` loops would have made
//! a billion copies of their body.

use super::error::BackendError;
use super::ir::{
    Access, AccessId, Barrier, Combine, Expr, ExprId, ExprKind, ForLoop, Func, Mem, Stmt, StmtId,
    StmtKind, Var, VarId,
};
use crate::ast::{BinOp, ScalarTy, Span};
use crate::hir::{Builtin, ConstVal, Ty};
use std::collections::HashMap;

/// Bodies per trip when a loop is unrolled without `unroll N`.
pub const AUTO_FACTOR: u32 = 8;

/// The largest body (in expressions) unrolled without `unroll N`: code size
/// grows by the factor, and a large body already has loads to overlap.
pub const AUTO_MAX_BODY_EXPRS: usize = 256;

pub use crate::limits::MAX_UNROLLED_SIZE;

/// Unroll the loops of `f` in place (see the module docs) and empty
/// `f.loop_unroll`; or, when the result would exceed [`MAX_UNROLLED_SIZE`],
/// change nothing and say which loop makes it grow (P0803).
pub fn unroll(f: &mut Func, kernel_span: Span) -> Result<(), BackendError> {
    let mut largest = None;
    let size = unrolled_size(f, &f.body, &mut largest);
    if size > MAX_UNROLLED_SIZE {
        return Err(BackendError::UnrolledTooLarge {
            size,
            largest: largest.map(|(s, u, _)| (f.stmt_span(s), u)),
            kernel: kernel_span,
        });
    }
    let body = std::mem::take(&mut f.body);
    f.body = block(f, body);
    f.loop_unroll.clear();
    Ok(())
}

/// The statements and expressions `stmts` hold after unrolling, counted
/// without unrolling (saturating). `largest` gets the unrolled loop that
/// adds the most: the loop, its factor and what it adds.
fn unrolled_size(f: &Func, stmts: &[StmtId], largest: &mut Option<(StmtId, u32, u64)>) -> u64 {
    let mut total: u64 = 0;
    for &s in stmts {
        let (roots, blocks) = parts(f, s);
        let mut own: u64 = 1;
        for e in roots {
            own = own.saturating_add(expr_count(f, e));
        }
        let inner = blocks
            .iter()
            .fold(0u64, |n, b| n.saturating_add(unrolled_size(f, b, largest)));
        let size = match factor(f, s) {
            // `u` copies in the main loop, one in the remainder loop, and
            // the few statements that set their bounds.
            Some((u, _)) => {
                let grown = inner.saturating_mul(u as u64);
                if largest.is_none_or(|(_, _, g)| grown > g) {
                    *largest = Some((s, u, grown));
                }
                own.saturating_add(16)
                    .saturating_add(grown)
                    .saturating_add(inner)
            }
            None => own.saturating_add(inner),
        };
        total = total.saturating_add(size);
    }
    total
}

/// The expressions of the tree at `e`.
fn expr_count(f: &Func, e: ExprId) -> u64 {
    let mut n = 0u64;
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        n += 1;
        stack.extend(f.operands(e));
    }
    n
}

fn block(f: &mut Func, stmts: Vec<StmtId>) -> Vec<StmtId> {
    let mut out = Vec::with_capacity(stmts.len());
    for s in stmts {
        match f.stmts[s].kind.clone() {
            StmtKind::If { cond, then, els } => {
                let then = block(f, then);
                let els = block(f, els);
                f.stmts[s].kind = StmtKind::If { cond, then, els };
                out.push(s);
            }
            StmtKind::For(mut l) => {
                // Inner loops first: a copy of this body copies them unrolled.
                l.body = block(f, l.body);
                f.stmts[s].kind = StmtKind::For(l);
                match factor(f, s) {
                    Some((u, c)) => out.extend(expand(f, s, u, c)),
                    None => out.push(s),
                }
            }
            StmtKind::While { pre, cond, body } => {
                let body = block(f, body);
                f.stmts[s].kind = StmtKind::While { pre, cond, body };
                out.push(s);
            }
            _ => out.push(s),
        }
    }
    out
}

/// The factor for loop `s` and its constant step, or `None` to keep it.
fn factor(f: &Func, s: StmtId) -> Option<(u32, i128)> {
    let StmtKind::For(l) = &f.stmts[s].kind else {
        return None;
    };
    let c = f.const_int(l.step).filter(|c| *c != 0)?;
    if f.vars[l.var].ty != ScalarTy::I32 {
        return None;
    }
    // A loop around a `stages` ring stays as it is: `Func::rings` names
    // the ring's own loop, which a copy would not be.
    let mut ring = false;
    f.walk_stmts(&l.body, &mut |x, _| {
        ring |= matches!(f.stmts[x].kind, StmtKind::AsyncCopy { .. });
    });
    if ring {
        return None;
    }
    let u = match f.loop_unroll.get(&s) {
        Some(&n) => n,
        None => {
            if !auto_candidate(f, &l.body) {
                return None;
            }
            match (f.const_int(l.start), f.const_int(l.end)) {
                (Some(a), Some(b)) => {
                    let trips = trip_count(a, b, c);
                    if trips < 2 {
                        return None;
                    }
                    AUTO_FACTOR.min(trips.min(u32::MAX as i128) as u32)
                }
                _ => AUTO_FACTOR,
            }
        }
    };
    // The main loop's step and the clamp constants must fit an i32.
    let fits = |v: i128| (i32::MIN as i128..=i32::MAX as i128).contains(&v);
    let span = (u as i128 - 1) * c;
    let clamp = if c > 0 {
        i32::MIN as i128 + span
    } else {
        i32::MAX as i128 + span
    };
    (u > 1 && fits(u as i128 * c) && fits(clamp)).then_some((u, c))
}

fn trip_count(start: i128, end: i128, step: i128) -> i128 {
    let dist = if step > 0 { end - start } else { start - end };
    if dist <= 0 {
        0
    } else {
        (dist + step.abs() - 1) / step.abs()
    }
}

/// Whether a loop body is worth unrolling, and safe to copy, without being
/// asked: it reads a tensor and holds only plain statements.
fn auto_candidate(f: &Func, body: &[StmtId]) -> bool {
    let mut reads_tensor = false;
    let mut exprs = 0usize;
    let mut plain = true;
    walk(f, body, &mut |f, item| match item {
        Item::Stmt(s) => {
            if matches!(
                f.stmts[s].kind,
                StmtKind::For(_)
                    | StmtKind::While { .. }
                    | StmtKind::Break
                    | StmtKind::Continue
                    | StmtKind::Return
                    | StmtKind::Barrier(_)
                    | StmtKind::TileCopy { .. }
                    | StmtKind::TileStore { .. }
                    | StmtKind::CtaColl(_)
                    | StmtKind::AccZero(_)
                    | StmtKind::AccMap { .. }
                    | StmtKind::Mma { .. }
                    | StmtKind::AccStore { .. }
                    | StmtKind::AccToTile { .. }
            ) {
                plain = false;
            }
            // A body that writes a tile stays as written: in a loop whose
            // bounds differ between threads, the barrier analysis takes
            // different trips to touch different elements, but copies of
            // the body in one trip would be two writes it cannot tell apart
            // (P0802 on a correct kernel).
            let tile_write = match &f.stmts[s].kind {
                StmtKind::Store(a, _)
                | StmtKind::RunStore { access: a, .. }
                | StmtKind::Atomic { access: a, .. } => {
                    matches!(f.accesses[*a].mem, Mem::Buffer(_))
                }
                _ => false,
            };
            if tile_write {
                plain = false;
            }
        }
        Item::Expr(e) => {
            exprs += 1;
            match &f.exprs[e].kind {
                ExprKind::Load(a) | ExprKind::RunLoad(a) => {
                    if matches!(f.accesses[*a].mem, Mem::Tensor(_)) {
                        reads_tensor = true;
                    }
                }
                ExprKind::LaneColl { .. } | ExprKind::Shuffle { .. } => plain = false,
                _ => {}
            }
        }
    });
    reads_tensor && plain && exprs <= AUTO_MAX_BODY_EXPRS
}

enum Item {
    Stmt(StmtId),
    Expr(ExprId),
}

/// Visit every statement of `stmts` (nested blocks too) and every
/// expression they evaluate, operands included.
fn walk(f: &Func, stmts: &[StmtId], visit: &mut dyn FnMut(&Func, Item)) {
    fn expr(f: &Func, e: ExprId, visit: &mut dyn FnMut(&Func, Item)) {
        visit(f, Item::Expr(e));
        for o in f.operands(e) {
            expr(f, o, visit);
        }
    }
    for &s in stmts {
        visit(f, Item::Stmt(s));
        let (roots, blocks) = parts(f, s);
        for e in roots {
            expr(f, e, visit);
        }
        for b in blocks {
            walk(f, b, visit);
        }
    }
}

/// The expressions statement `s` evaluates itself (the roots of their
/// trees) and the blocks it holds.
fn parts(f: &Func, s: StmtId) -> (Vec<ExprId>, Vec<&[StmtId]>) {
    let access = |a: AccessId| f.accesses[a].index.clone();
    match &f.stmts[s].kind {
        StmtKind::Set(_, e) => (vec![*e], vec![]),
        StmtKind::Store(a, e) => ([access(*a), vec![*e]].concat(), vec![]),
        StmtKind::RunStore {
            access: a,
            value,
            only,
        } => (
            [access(*a), vec![*value], only.iter().copied().collect()].concat(),
            vec![],
        ),
        StmtKind::TileCopy { access: a, .. }
        | StmtKind::TileStore { access: a, .. }
        | StmtKind::AccStore { access: a, .. } => (access(*a), vec![]),
        StmtKind::If { cond, then, els } => (vec![*cond], vec![then, els]),
        StmtKind::For(l) => (vec![l.start, l.end, l.step], vec![&l.body]),
        StmtKind::CtaColl(c) => (
            std::iter::once(c.arg)
                .chain(c.combine.map(|c| c.body))
                .collect(),
            vec![],
        ),
        StmtKind::While { pre, cond, body } => (vec![*cond], vec![pre, body]),
        StmtKind::Atomic {
            access: a, args, ..
        } => ([access(*a), args.clone()].concat(), vec![]),
        StmtKind::AccMap { value, .. } => (vec![*value], vec![]),
        StmtKind::AsyncCopy {
            access: a, stage, ..
        } => ([access(*a), vec![*stage]].concat(), vec![]),
        StmtKind::AsyncCommit | StmtKind::AsyncWait(_) => (vec![], vec![]),
        StmtKind::Barrier(_)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Return
        | StmtKind::Fence
        | StmtKind::AccZero(_)
        | StmtKind::AccToTile { .. }
        | StmtKind::Mma { .. } => (vec![], vec![]),
    }
}

/// Replace loop `s` by the statements that run it `u` bodies per trip
/// (see the module docs); `s` itself becomes the remainder loop.
fn expand(f: &mut Func, s: StmtId, u: u32, c: i128) -> Vec<StmtId> {
    let StmtKind::For(ForLoop {
        var,
        start,
        end,
        step,
        body,
    }) = f.stmts[s].kind.clone()
    else {
        return vec![s];
    };
    let span = f.stmt_span(s);
    let mut b = Builder {
        f,
        span,
        access_map: Vec::new(),
    };
    let name = b.f.vars[var].name.clone();
    let start_v = b.var(format!("{name}_start"));
    let end_v = b.var(format!("{name}_end"));
    let rest_v = b.var(format!("{name}_rest"));
    let main_v = b.var(format!("{name}_main"));

    let set_start = b.stmt(StmtKind::Set(start_v, start));
    let set_end = b.stmt(StmtKind::Set(end_v, end));
    let init_rest = {
        let e = b.var_expr(start_v);
        b.stmt(StmtKind::Set(rest_v, e))
    };

    // limit = clamp(end) - (u-1)*c, never wrapping.
    let reach = (u as i128 - 1) * c;
    let limit = {
        let e = b.var_expr(end_v);
        let (op, bound) = if c > 0 {
            (Builtin::Max, i32::MIN as i128 + reach)
        } else {
            (Builtin::Min, i32::MAX as i128 + reach)
        };
        let bound = b.int(bound);
        let clamped = b.expr(ExprKind::Builtin(op, vec![e, bound]));
        let reach = b.int(reach);
        b.expr(ExprKind::Binary(BinOp::Sub, clamped, reach))
    };

    let shifts = shiftable_accesses(b.f, var, &body);
    let mut main_body = Vec::new();
    for j in 0..u {
        let at = b.offset(main_v, j as i128 * c);
        main_body.push(b.stmt(StmtKind::Set(var, at)));
        if j == 0 {
            main_body.extend(body.iter().copied());
            continue;
        }
        b.access_map.clear();
        for &st in &body {
            let copy = b.clone_stmt(st);
            main_body.push(copy);
        }
        for &(orig, copy) in &b.access_map {
            let Some(&coef) = shifts.get(&orig) else {
                continue;
            };
            if let Ok(d) = i64::try_from(coef * j as i128 * c) {
                b.f.access_shift.insert(copy, (orig, d));
            }
        }
    }
    let next = b.offset(main_v, u as i128 * c);
    main_body.push(b.stmt(StmtKind::Set(rest_v, next)));
    let main_start = b.var_expr(start_v);
    let main_step = b.int(u as i128 * c);
    let main = b.stmt(StmtKind::For(ForLoop {
        var: main_v,
        start: main_start,
        end: limit,
        step: main_step,
        body: main_body,
    }));

    // The original statement runs what is left, on fresh copies of the body
    // (the originals now sit in the main loop's first copy).
    let rest_start = b.var_expr(rest_v);
    let rest_end = b.var_expr(end_v);
    let rest_body = body.iter().map(|&st| b.clone_stmt(st)).collect();
    b.f.stmts[s].kind = StmtKind::For(ForLoop {
        var,
        start: rest_start,
        end: rest_end,
        step,
        body: rest_body,
    });
    // A fence after the loop's bounds (a candidate barrier between reading
    // a tile in them and the body writing it) now goes after the statements
    // that evaluate them; the remainder loop's bounds read only vars.
    let mut out = vec![set_start, set_end];
    if let Some(i) = b.f.fences.iter().position(|(x, _)| *x == s) {
        let (_, bar) = b.f.fences.remove(i);
        out.push(b.stmt(StmtKind::Barrier(bar)));
    }
    out.extend([init_rest, main, s]);
    out
}

/// The tensor accesses of a loop body whose copies can share its address:
/// each maps to `a`, the change of its last index per unit of the loop
/// variable `k` (its other indices do not change between copies).
///
/// Only accesses evaluated on every path through the body qualify: those in
/// the body's own statements, outside nested blocks and outside the
/// short-circuited operands of `&&` and `||`. An index is followed through
/// the body's `let`s: `at = k + lane * 4` changes by 1 per unit of `k`.
fn shiftable_accesses(f: &Func, k: VarId, body: &[StmtId]) -> HashMap<AccessId, i128> {
    let mut sets: HashMap<VarId, usize> = HashMap::new();
    walk(f, body, &mut |f, item| {
        if let Item::Stmt(s) = item {
            match &f.stmts[s].kind {
                StmtKind::Set(v, _) => *sets.entry(*v).or_default() += 1,
                StmtKind::CtaColl(c) => *sets.entry(c.dst).or_default() += 1,
                StmtKind::For(l) => *sets.entry(l.var).or_default() += 2,
                _ => {}
            }
        }
    });
    let mut a = Affine {
        f,
        k,
        sets,
        forms: HashMap::new(),
    };
    let mut out = HashMap::new();
    for &s in body {
        let (accesses, roots): (Vec<AccessId>, Vec<ExprId>) = match &f.stmts[s].kind {
            StmtKind::Set(_, e) => (vec![], vec![*e]),
            StmtKind::Store(acc, e) => (vec![*acc], vec![*e]),
            StmtKind::RunStore {
                access,
                value,
                only,
            } => (
                vec![*access],
                std::iter::once(*value).chain(*only).collect(),
            ),
            _ => (vec![], vec![]),
        };
        let mut found = accesses;
        for r in roots {
            unconditional_accesses(f, r, &mut found);
        }
        for acc in found {
            if let Some(coef) = a.access_coef(acc) {
                out.insert(acc, coef);
            }
        }
        if let StmtKind::Set(v, e) = &f.stmts[s].kind {
            let form = if a.sets.get(v) == Some(&1) {
                a.coef(*e)
            } else {
                None
            };
            a.forms.insert(*v, form);
        }
    }
    out
}

/// The accesses evaluated whenever `e` is, skipping the right side of `&&`
/// and `||` (evaluated only sometimes) and everything below those.
fn unconditional_accesses(f: &Func, e: ExprId, out: &mut Vec<AccessId>) {
    match &f.exprs[e].kind {
        ExprKind::Binary(BinOp::And | BinOp::Or, ..) => {}
        ExprKind::Load(acc) | ExprKind::RunLoad(acc) => {
            out.push(*acc);
            for &i in &f.accesses[*acc].index {
                unconditional_accesses(f, i, out);
            }
        }
        _ => {
            for o in f.operands(e) {
                unconditional_accesses(f, o, out);
            }
        }
    }
}

/// Integer expressions of a loop body as `invariant + coef * k`.
struct Affine<'f> {
    f: &'f Func,
    k: VarId,
    /// How often the body assigns each var.
    sets: HashMap<VarId, usize>,
    /// Vars the body has set so far, with their coefficient (`None`:
    /// unknown).
    forms: HashMap<VarId, Option<i128>>,
}

impl Affine<'_> {
    /// The last index's coefficient of a tensor point or run access whose
    /// other indices are the same in every copy.
    fn access_coef(&self, acc: AccessId) -> Option<i128> {
        let a = &self.f.accesses[acc];
        if !matches!(a.mem, Mem::Tensor(_)) || matches!(a.shape, super::ir::Shape::Tile { .. }) {
            return None;
        }
        let (last, rest) = a.index.split_last()?;
        for &i in rest {
            if self.coef(i)? != 0 {
                return None;
            }
        }
        self.coef(*last)
    }

    /// `Some(c)` when `e` is `invariant + c * k` (the invariant part the
    /// same in every copy of the body), `None` when unknown.
    fn coef(&self, e: ExprId) -> Option<i128> {
        let f = self.f;
        let int32 = f.exprs[e].ty == Ty::Scalar(ScalarTy::I32);
        match &f.exprs[e].kind {
            ExprKind::Const(_) | ExprKind::Param(_) | ExprKind::Dim(_) | ExprKind::Ctx(_) => {
                Some(0)
            }
            ExprKind::Var(v) if *v == self.k => Some(1),
            ExprKind::Var(v) => match self.forms.get(v) {
                Some(form) => *form,
                None if !self.sets.contains_key(v) => Some(0),
                None => None,
            },
            ExprKind::Binary(op, x, y) => {
                let (cx, cy) = (self.coef(*x)?, self.coef(*y)?);
                match op {
                    _ if cx == 0 && cy == 0 => Some(0),
                    BinOp::Add if int32 => cx.checked_add(cy),
                    BinOp::Sub if int32 => cx.checked_sub(cy),
                    BinOp::Mul if int32 && cy == 0 => cx.checked_mul(f.const_int(*y)?),
                    BinOp::Mul if int32 && cx == 0 => cy.checked_mul(f.const_int(*x)?),
                    _ => None,
                }
            }
            ExprKind::Load(_)
            | ExprKind::RunLoad(_)
            | ExprKind::LaneColl { .. }
            | ExprKind::Shuffle { .. } => None,
            _ => {
                let all_invariant = f.operands(e).into_iter().all(|o| self.coef(o) == Some(0));
                all_invariant.then_some(0)
            }
        }
    }
}

/// Pushes new IR nodes, all with one span (the unrolled loop's).
struct Builder<'f> {
    f: &'f mut Func,
    span: Span,
    /// (original, copy) for each access `clone_stmt` copied.
    access_map: Vec<(AccessId, AccessId)>,
}

impl Builder<'_> {
    fn var(&mut self, name: String) -> VarId {
        self.f.vars.push(Var {
            name,
            ty: ScalarTy::I32,
        })
    }

    fn stmt(&mut self, kind: StmtKind) -> StmtId {
        self.f.stmt_spans.push(self.span);
        self.f.stmts.push(Stmt { kind })
    }

    fn expr(&mut self, kind: ExprKind) -> ExprId {
        self.typed(kind, Ty::Scalar(ScalarTy::I32))
    }

    fn typed(&mut self, kind: ExprKind, ty: Ty) -> ExprId {
        self.f.expr_spans.push(self.span);
        self.f.exprs.push(Expr { kind, ty })
    }

    fn int(&mut self, v: i128) -> ExprId {
        self.expr(ExprKind::Const(ConstVal::Int(v)))
    }

    fn var_expr(&mut self, v: VarId) -> ExprId {
        self.expr(ExprKind::Var(v))
    }

    /// `v + by` (just `v` when `by` is 0).
    fn offset(&mut self, v: VarId, by: i128) -> ExprId {
        let e = self.var_expr(v);
        if by == 0 {
            return e;
        }
        let by = self.int(by);
        self.expr(ExprKind::Binary(BinOp::Add, e, by))
    }

    /// A deep copy of a statement: new expressions, accesses, statements and
    /// candidate barriers with the original spans; the same vars and buffers.
    fn clone_stmt(&mut self, s: StmtId) -> StmtId {
        // The copy's operands are fresh copies, cloned in evaluation order.
        let mut kind = self.f.stmts[s].kind.clone();
        match &mut kind {
            StmtKind::Set(_, e) => *e = self.clone_expr(*e),
            StmtKind::Store(a, e) => {
                *a = self.clone_access(*a);
                *e = self.clone_expr(*e);
            }
            StmtKind::RunStore {
                access,
                value,
                only,
            } => {
                *access = self.clone_access(*access);
                *value = self.clone_expr(*value);
                if let Some(o) = only {
                    *o = self.clone_expr(*o);
                }
            }
            StmtKind::TileCopy { access, .. }
            | StmtKind::TileStore { access, .. }
            | StmtKind::AccStore { access, .. } => *access = self.clone_access(*access),
            StmtKind::AccMap { value, .. } => *value = self.clone_expr(*value),
            StmtKind::If { cond, then, els } => {
                *cond = self.clone_expr(*cond);
                *then = self.clone_block(then);
                *els = self.clone_block(els);
            }
            StmtKind::For(l) => {
                l.start = self.clone_expr(l.start);
                l.end = self.clone_expr(l.end);
                l.step = self.clone_expr(l.step);
                l.body = self.clone_block(&l.body);
            }
            StmtKind::CtaColl(c) => {
                c.arg = self.clone_expr(c.arg);
                c.combine = c.combine.map(|x| self.clone_combine(x));
                c.before = self.clone_barrier(c.before);
                c.written = self.clone_barrier(c.written);
                c.read = self.clone_barrier(c.read);
            }
            StmtKind::While { pre, cond, body } => {
                *pre = self.clone_block(pre);
                *cond = self.clone_expr(*cond);
                *body = self.clone_block(body);
            }
            StmtKind::Atomic { access, args, .. } => {
                *access = self.clone_access(*access);
                for a in args.iter_mut() {
                    *a = self.clone_expr(*a);
                }
            }
            StmtKind::AsyncCopy { access, stage, .. } => {
                *access = self.clone_access(*access);
                *stage = self.clone_expr(*stage);
            }
            StmtKind::Barrier(b) => *b = self.clone_barrier(*b),
            StmtKind::AccZero(_)
            | StmtKind::AccToTile { .. }
            | StmtKind::Mma { .. }
            | StmtKind::AsyncCommit
            | StmtKind::AsyncWait(_)
            | StmtKind::Fence
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return => {}
        }
        self.f.stmt_spans.push(self.f.stmt_span(s));
        let copy = self.f.stmts.push(Stmt { kind });
        // The copy's own fence (between its operands and its write, or
        // after its condition or bounds), if the original has one.
        if let Some(fence) = self.f.fence(s) {
            let fence = self.clone_barrier(fence);
            self.f.fences.push((copy, fence));
        }
        if self.f.whole_copies.contains(&s) {
            self.f.whole_copies.insert(copy);
        }
        copy
    }

    fn clone_block(&mut self, b: &[StmtId]) -> Vec<StmtId> {
        b.iter().map(|&t| self.clone_stmt(t)).collect()
    }

    fn clone_barrier(&mut self, b: super::ir::BarrierId) -> super::ir::BarrierId {
        let Barrier { role, span } = self.f.barriers[b].clone();
        self.f.barriers.push(Barrier { role, span })
    }

    fn clone_access(&mut self, a: AccessId) -> AccessId {
        let old = self.f.accesses[a].clone();
        let index = old.index.iter().map(|&e| self.clone_expr(e)).collect();
        let copy = self.f.accesses.push(Access { index, ..old });
        self.access_map.push((a, copy));
        copy
    }

    fn clone_combine(&mut self, c: Combine) -> Combine {
        Combine {
            body: self.clone_expr(c.body),
            ..c
        }
    }

    /// Operands are copied before their user, so the copy keeps the arena's
    /// evaluation order (verifier invariant 3).
    fn clone_expr(&mut self, e: ExprId) -> ExprId {
        // Operands are cloned in evaluation order, as in `clone_stmt`.
        let Expr { mut kind, ty } = self.f.exprs[e].clone();
        match &mut kind {
            ExprKind::Const(_)
            | ExprKind::Var(_)
            | ExprKind::RunVars(_)
            | ExprKind::Param(_)
            | ExprKind::Dim(_)
            | ExprKind::Ctx(_) => {}
            ExprKind::Unary(_, a)
            | ExprKind::Convert(a)
            | ExprKind::RunSum(a)
            | ExprKind::Elem(a, _)
            | ExprKind::Word(a, _) => *a = self.clone_expr(*a),
            ExprKind::Binary(_, a, b) => {
                *a = self.clone_expr(*a);
                *b = self.clone_expr(*b);
            }
            ExprKind::Builtin(_, args) => {
                for a in args.iter_mut() {
                    *a = self.clone_expr(*a);
                }
            }
            ExprKind::Load(a) | ExprKind::RunLoad(a) => *a = self.clone_access(*a),
            ExprKind::Dp4aSum { a, b } => {
                *a = self.clone_expr(*a);
                if let Some(b) = b {
                    *b = self.clone_expr(*b);
                }
            }
            ExprKind::LaneColl { arg, combine, .. } => {
                *arg = self.clone_expr(*arg);
                *combine = combine.map(|c| self.clone_combine(c));
            }
            ExprKind::Shuffle { lane, value, .. } => {
                *lane = self.clone_expr(*lane);
                *value = self.clone_expr(*value);
            }
        }
        self.f.expr_spans.push(self.f.expr_span(e));
        self.f.exprs.push(Expr { kind, ty })
    }
}
