//! Statements: `let`/`var`, assignment (compound assignment desugared),
//! stores, `store(run, i, v)`, `if`/`else` and `for ... in range(...)`.

use super::cx::{const_i32, elem_of, mk, Binding, Cx};
use super::error::{StmtError, SubscriptError};
use crate::ast::{self, BinOp, ExprKind, ScalarTy, Span, StmtKind};
use crate::hir::{self, LocalKind, Ty};

/// The largest factor `unroll N` accepts.
pub(crate) const MAX_UNROLL: u64 = 32;

/// A `let` or `var` statement's parts, as each pass that may declare its
/// local (an atomic's old value, an accumulator, a scratch tile, a plain
/// value) takes them.
#[derive(Clone, Copy)]
pub(super) struct LetDecl<'a> {
    /// `var`, not `let`.
    pub mutable: bool,
    pub name: &'a ast::Ident,
    /// The written scalar type, and where it is written.
    pub ty: Option<(ScalarTy, Span)>,
    pub init: &'a ast::Expr,
}

impl Cx<'_> {
    pub fn block(&mut self, b: &ast::Block) -> hir::Block {
        self.push_scope();
        // At most one statement per statement of the tree: room for exactly
        // that many, not the doubling growth of `collect` (filtered).
        let mut stmts = Vec::with_capacity(b.stmts.len());
        stmts.extend(b.stmts.iter().filter_map(|s| self.stmt(s)));
        self.pop_scope();
        hir::Block { stmts }
    }

    fn stmt(&mut self, s: &ast::Stmt) -> Option<hir::Stmt> {
        let kind = match &s.kind {
            StmtKind::Let {
                mutable,
                name,
                ty,
                init,
            } => self.let_stmt(LetDecl {
                mutable: *mutable,
                name,
                ty: *ty,
                init,
            }),
            StmtKind::ArrayDecl(a) => self.array_decl(a),
            StmtKind::Assign { target, op, value } => self.assign(target, *op, value, s.span),
            StmtKind::If { cond, then, els } => {
                let cond = self.expr_of(cond, ScalarTy::Bool, "a condition");
                let then = self.block(then);
                let els = els
                    .as_ref()
                    .map_or(hir::Block { stmts: vec![] }, |b| self.block(b));
                Some(hir::StmtKind::If {
                    cond: Box::new(cond?),
                    then,
                    els,
                })
            }
            StmtKind::For(l) => self.for_stmt(l),
            StmtKind::While { cond, body } => {
                let cond = self.expr_of(cond, ScalarTy::Bool, "a condition");
                self.loop_depth += 1;
                let body = self.block(body);
                self.loop_depth -= 1;
                Some(hir::StmtKind::While {
                    cond: Box::new(cond?),
                    body,
                })
            }
            StmtKind::Break | StmtKind::Continue => {
                let (word, kind) = match s.kind {
                    StmtKind::Break => ("break", hir::StmtKind::Break),
                    _ => ("continue", hir::StmtKind::Continue),
                };
                if self.loop_depth == 0 {
                    self.report(StmtError::ExitOutsideLoop { word, span: s.span });
                    return None;
                }
                Some(kind)
            }
            StmtKind::Return => Some(hir::StmtKind::Return),
            StmtKind::Expr(e) => self.expr_stmt(e),
            StmtKind::Error => None,
        }?;
        Some(hir::Stmt { kind, span: s.span })
    }

    fn let_stmt(&mut self, l: LetDecl) -> Option<hir::StmtKind> {
        if super::atomics::atomic_call(l.init).is_some() {
            let atomic = self.atomic_let(l);
            if atomic.is_none() {
                self.poison(l.name);
            }
            return atomic;
        }
        if let Some(acc) = self.acc_let(l) {
            return acc;
        }
        if let Some(ok) = self.scratch_let(l) {
            if !ok {
                self.poison(l.name);
            }
            // The declaration itself runs nothing.
            return None;
        }
        if let Some(tile) = self.tile_copy(l.name, l.mutable, l.init) {
            if let Some(copy) = tile {
                if let Some((_, span)) = l.ty {
                    self.report(StmtError::TileCopyTyped { span });
                }
                return Some(copy);
            }
        } else {
            self.poison(l.name);
            return None;
        }
        let x = self.expr(l.init, l.ty.map(|t| t.0));
        let Some(x) = x else {
            self.poison(l.name);
            return None;
        };
        let t = match (x.ty, l.ty) {
            (Ty::Scalar(t), None) => t,
            (Ty::Scalar(t), Some((want, _))) if t == want => t,
            (found, Some((want, span))) if matches!(found, Ty::Scalar(_)) => {
                self.report(StmtError::DeclaredType {
                    name: l.name.name.clone(),
                    declared: want,
                    found,
                    span: l.init.span,
                    decl: span,
                });
                self.poison(l.name);
                return None;
            }
            (found, _) => {
                self.report(StmtError::RunInVariable {
                    found,
                    span: l.init.span,
                });
                self.poison(l.name);
                return None;
            }
        };
        let local = self.new_local(&l.name.name, l.name.span, l.mutable, LocalKind::Scalar(t));
        self.bind(&l.name.name, Binding::Local(local));
        if let (true, None, ExprKind::Int(v)) = (l.mutable, l.ty, &l.init.kind) {
            self.int_literal_vars.push((local, l.init.span, *v));
        }
        Some(hir::StmtKind::Let { local, init: x })
    }

    /// A variable whose declaration failed: later uses stay quiet.
    fn poison(&mut self, name: &ast::Ident) {
        self.bind(&name.name, Binding::Poisoned);
    }

    fn assign(
        &mut self,
        target: &ast::Expr,
        op: Option<BinOp>,
        value: &ast::Expr,
        span: Span,
    ) -> Option<hir::StmtKind> {
        match &target.kind {
            ExprKind::Index { base, subs } => self.store(base, subs, op, value, span),
            ExprKind::Name(n) => self.assign_local(n, target.span, op, value, span),
            ExprKind::Error => None,
            _ => {
                self.report(StmtError::AssignToExpr { span: target.span });
                None
            }
        }
    }

    fn assign_local(
        &mut self,
        n: &str,
        target_span: Span,
        op: Option<BinOp>,
        value: &ast::Expr,
        span: Span,
    ) -> Option<hir::StmtKind> {
        let local = match self.lookup(n).cloned() {
            Some(Binding::Local(id)) => id,
            Some(Binding::Poisoned) => return None,
            None => {
                self.expr(
                    &ast::Expr {
                        kind: ExprKind::Name(n.into()),
                        span: target_span,
                    },
                    None,
                );
                return None;
            }
            Some(_) => {
                self.report(StmtError::AssignToNonLocal {
                    name: n.to_string(),
                    span: target_span,
                });
                return None;
            }
        };
        let info = &self.locals[local.0 as usize];
        if matches!(info.kind, LocalKind::Acc { .. }) {
            return self.acc_assign(local, n, target_span, op, value);
        }
        let array = matches!(info.kind, LocalKind::Array { .. });
        if !info.mutable || array || matches!(info.kind, LocalKind::Tile { .. }) {
            let decl = info.span;
            let d = if self.loop_vars.contains(&local) {
                StmtError::AssignToLoopVar {
                    name: n.to_string(),
                    span: target_span,
                    decl,
                }
            } else if array {
                StmtError::AssignToArray {
                    name: n.to_string(),
                    span: target_span,
                    decl,
                }
            } else if matches!(info.kind, LocalKind::Tile { .. }) {
                StmtError::AssignToTile {
                    name: n.to_string(),
                    span: target_span,
                    decl,
                }
            } else {
                StmtError::AssignTwice {
                    name: n.to_string(),
                    span: target_span,
                    decl,
                }
            };
            self.report(d);
            return None;
        }
        if let Some(op) = op {
            if self.float_into_int_literal_var(local, n, op, value) {
                return None;
            }
        }
        if op.is_none() && super::atomics::atomic_call(value).is_some() {
            return self.atomic_assign(local, n, value);
        }
        let ty = self.local_ty(local)?;
        let old = mk(hir::ExprKind::Local(local), ty, target_span);
        let v = match op {
            Some(op) => self.compound(op, old, value, span)?,
            None => self.expr(value, elem_of(ty))?,
        };
        if let (Ty::Run { len, elem }, Ty::Scalar(t)) = (v.ty, ty) {
            if elem == t {
                self.report(SubscriptError::AssignRun {
                    name: n.to_string(),
                    len,
                    elem,
                    span: value.span,
                });
                return None;
            }
        }
        if v.ty != ty {
            self.report(StmtError::AssignType {
                name: n.to_string(),
                holds: ty,
                value: v.ty,
                span: value.span,
            });
            return None;
        }
        Some(hir::StmtKind::Assign { local, value: v })
    }

    /// `var acc = 0` then `acc += <float>`: the literal made `acc` an
    /// integer, and the fix is to declare it as a float, not to convert the
    /// value. Reports that (once; `acc` is then poisoned so its later uses
    /// stay quiet) and returns true.
    fn float_into_int_literal_var(
        &mut self,
        local: hir::LocalId,
        n: &str,
        op: BinOp,
        value: &ast::Expr,
    ) -> bool {
        let Some(&(_, lit_span, lit)) = self.int_literal_vars.iter().find(|(l, ..)| *l == local)
        else {
            return false;
        };
        // Type the value quietly: the usual mismatch error is replaced.
        let before = self.diags.len();
        let v = self.expr(value, None);
        let value_errors = self.diags.len() > before;
        self.diags.truncate(before);
        let Some(Ty::Scalar(vt)) = v.map(|v| v.ty) else {
            return false;
        };
        if value_errors || !vt.is_float() {
            return false;
        }
        let Some(Ty::Scalar(lt)) = self.local_ty(local) else {
            return false;
        };
        self.report(StmtError::FloatIntoIntLiteralVar {
            name: n.to_string(),
            op: op.symbol(),
            holds: lt,
            value: vt,
            literal: lit,
            span: value.span,
            literal_span: lit_span,
        });
        self.rebind(n, Binding::Poisoned);
        true
    }

    /// A loop of constant bounds whose variable would leave `i32` after its
    /// last trip (or whose `stages` ring would compute a start past it) is
    /// refused (P0413): `i += step` would wrap and the loop run on.
    fn step_past_i32(&mut self, bounds: [&Option<hir::Expr>; 3], stages: Option<u32>, span: Span) {
        let c = |x: &Option<hir::Expr>| x.as_ref().and_then(super::consts::const_int);
        let (Some(start), Some(end), Some(step)) = (c(bounds[0]), c(bounds[1]), c(bounds[2]))
        else {
            return;
        };
        if step == 0 {
            return;
        }
        let trips = if step > 0 && start < end {
            (end - start + step - 1) / step
        } else if step < 0 && start > end {
            (start - end - step - 1) / -step
        } else {
            return;
        };
        let last = start + (trips - 1) * step;
        let ahead = stages.map_or(1, |s| i128::from(s.max(2) - 1));
        let next = last + ahead * step;
        if next > i128::from(i32::MAX) || next < i128::from(i32::MIN) {
            self.report(StmtError::StepPastI32 {
                last,
                next,
                stages,
                span,
            });
        }
    }

    fn for_stmt(&mut self, l: &ast::ForLoop) -> Option<hir::StmtKind> {
        let (var, start, end, step) = (&l.var, &l.start, &l.end, l.step.as_ref());
        let s = self.index(start);
        let e = self.index(end);
        let st = match step {
            Some(x) => self.index(x),
            None => Some(const_i32(1, end.span)),
        };
        if let Some(0) = st.as_ref().and_then(super::consts::const_int) {
            self.report(StmtError::ZeroStep {
                span: step.map_or(end.span, |x| x.span),
            });
        }
        let unroll = self.unroll_factor(l.unroll, st.as_ref(), step.map_or(end.span, |x| x.span));
        let count = l.stages.as_ref().map(|(count, span)| {
            let n = self.index(count).and_then(|c| self.stage_count(&c, *span));
            (n, *span)
        });
        self.step_past_i32(
            [&s, &e, &st],
            count.as_ref().and_then(|c| c.0),
            step.map_or(end.span, |x| x.span),
        );
        self.push_scope();
        let local = self.new_local(&var.name, var.span, false, LocalKind::Scalar(ScalarTy::I32));
        self.bind(&var.name, Binding::Local(local));
        self.loop_vars.push(local);
        self.loop_depth += 1;
        let body = self.block(&l.body);
        self.loop_depth -= 1;
        self.pop_scope();
        let unroll = match (unroll, own_exit(&body)) {
            (Some(Some(n)), Some(span)) if n > 1 => {
                self.report(StmtError::UnrollLeft { span });
                None
            }
            _ => unroll,
        };
        let stages = match (count, &st) {
            (None, _) => None,
            (Some((Some(n), span)), Some(step)) => {
                let staged = super::stages::StagedLoop {
                    span,
                    var: local,
                    step,
                    unroll: l.unroll.map(|u| u.1),
                    body: &body,
                };
                if !self.check_staged(&staged) {
                    return None;
                }
                Some(n)
            }
            (Some(_), _) => return None,
        };
        Some(hir::StmtKind::For(Box::new(hir::ForLoop {
            var: local,
            start: s?,
            end: e?,
            step: st?,
            unroll: unroll?,
            stages,
            body,
        })))
    }

    /// The factor of `unroll N`: from 1 to 32, and (above 1) on a loop
    /// whose step is a constant, so the backend knows which way it counts.
    fn unroll_factor(
        &mut self,
        unroll: Option<(u64, Span)>,
        step: Option<&hir::Expr>,
        step_span: Span,
    ) -> Option<Option<u32>> {
        let Some((n, span)) = unroll else {
            return Some(None);
        };
        if !(1..=MAX_UNROLL).contains(&n) {
            self.report(StmtError::UnrollRange { factor: n, span });
            return None;
        }
        if n > 1 && step.and_then(super::consts::const_int).is_none() {
            self.report(StmtError::UnrollStep {
                span,
                step: step_span,
            });
            return None;
        }
        Some(Some(n as u32))
    }

    fn expr_stmt(&mut self, e: &ast::Expr) -> Option<hir::StmtKind> {
        if let ExprKind::Call { callee, args } = &e.kind {
            if callee.name == "store" && self.lookup("store").is_none() {
                return self.store_call(callee, args, e.span);
            }
            if super::atomics::is_atomic_name(&callee.name) {
                return self.atomic_stmt(callee, args, e.span);
            }
        }
        self.expr(e, None)?;
        self.report(StmtError::UselessExpr { span: e.span });
        None
    }

    /// `store(A[r, k :+ L], i, v)`: write element `i` of a run.
    fn store_call(
        &mut self,
        callee: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<hir::StmtKind> {
        if !self.arity(callee, args, 3, span) {
            return None;
        }
        let ExprKind::Index { base, subs } = &args[0].kind else {
            self.report(StmtError::StoreNotSubscript { span: args[0].span });
            return None;
        };
        let mem = self.memory(base)?;
        let Some(super::subscripts::Shape::Run { index, axis, len }) =
            self.shape(&mem, subs, args[0].span)
        else {
            self.report(StmtError::StoreNotRun { span: args[0].span });
            return None;
        };
        self.mark_written(mem.memory);
        let i = self.index(&args[1]);
        let v = self.expr_of(&args[2], mem.elem, "the stored value");
        let (i, v) = (i?, v?);
        if let Some(c) = super::consts::const_int(&i).filter(|&c| c < 0 || c >= i128::from(len)) {
            self.report(StmtError::StoreIndexRange {
                index: c,
                len,
                span: args[1].span,
            });
            return None;
        }
        Some(hir::StmtKind::RunStore {
            dst: mem.memory,
            index,
            axis,
            len,
            value: Box::new(v),
            only: Some(Box::new(i)),
        })
    }
}

/// The span of a `break` or `continue` of the loop whose body is `b`
/// (not one of a loop nested in it).
fn own_exit(b: &hir::Block) -> Option<Span> {
    b.stmts.iter().find_map(|s| match &s.kind {
        hir::StmtKind::Break | hir::StmtKind::Continue => Some(s.span),
        hir::StmtKind::If { then, els, .. } => own_exit(then).or_else(|| own_exit(els)),
        _ => None,
    })
}
