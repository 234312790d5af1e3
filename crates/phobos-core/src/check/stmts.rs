//! Statements: `let`/`var`, assignment (compound assignment desugared),
//! stores, `store(run, i, v)`, `if`/`else` and `for ... in range(...)`.

use super::cx::{const_i32, elem_of, mk, ty_name, Binding, Cx};
use super::types::conversion_note;
use crate::ast::{self, BinOp, ExprKind, ScalarTy, Span, StmtKind};
use crate::diag::Diagnostic;
use crate::hir::{self, LocalKind, Ty};

/// The largest factor `unroll N` accepts.
const MAX_UNROLL: u64 = 32;

impl Cx<'_> {
    pub fn block(&mut self, b: &ast::Block) -> hir::Block {
        self.push_scope();
        let stmts = b.stmts.iter().filter_map(|s| self.stmt(s)).collect();
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
            } => self.let_stmt(*mutable, name, *ty, init),
            StmtKind::ArrayDecl {
                mutable,
                name,
                elem,
                shape,
                shape_span,
                init,
            } => self.array_decl(*mutable, name, *elem, shape, *shape_span, init),
            StmtKind::Assign { target, op, value } => self.assign(target, *op, value, s.span),
            StmtKind::If { cond, then, els } => {
                let cond = self.expr_of(cond, ScalarTy::Bool, "a condition");
                let then = self.block(then);
                let els = els
                    .as_ref()
                    .map_or(hir::Block { stmts: vec![] }, |b| self.block(b));
                Some(hir::StmtKind::If {
                    cond: cond?,
                    then,
                    els,
                })
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                unroll,
                body,
                ..
            } => self.for_stmt(var, start, end, step.as_deref(), *unroll, body),
            StmtKind::While { cond, body } => {
                let cond = self.expr_of(cond, ScalarTy::Bool, "a condition");
                self.loop_depth += 1;
                let body = self.block(body);
                self.loop_depth -= 1;
                Some(hir::StmtKind::While { cond: cond?, body })
            }
            StmtKind::Break | StmtKind::Continue => {
                let (word, kind) = match s.kind {
                    StmtKind::Break => ("break", hir::StmtKind::Break),
                    _ => ("continue", hir::StmtKind::Continue),
                };
                if self.loop_depth == 0 {
                    self.report(
                        Diagnostic::error("P0415", format!("`{word}` outside a loop"))
                            .primary(
                                s.span,
                                format!("there is no `for` or `while` for this `{word}`"),
                            )
                            .note("to leave the kernel early, write `return`"),
                    );
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

    fn let_stmt(
        &mut self,
        mutable: bool,
        name: &ast::Ident,
        ty: Option<(ScalarTy, Span)>,
        init: &ast::Expr,
    ) -> Option<hir::StmtKind> {
        if super::atomics::atomic_call(init).is_some() {
            let atomic = self.atomic_let(mutable, name, ty, init);
            if atomic.is_none() {
                self.poison(name);
            }
            return atomic;
        }
        if let Some(acc) = self.acc_let(name, mutable, ty, init) {
            return acc;
        }
        if let Some(ok) = self.scratch_let(name, mutable, ty, init) {
            if !ok {
                self.poison(name);
            }
            // The declaration itself runs nothing.
            return None;
        }
        if let Some(tile) = self.tile_copy(name, mutable, init) {
            if let Some(copy) = tile {
                if let Some((_, span)) = ty {
                    self.report(
                        Diagnostic::error("P0401", "a tile copy takes no scalar type")
                            .primary(span, "the tile's type is the tensor's"),
                    );
                }
                return Some(copy);
            }
        } else {
            self.poison(name);
            return None;
        }
        let x = self.expr(init, ty.map(|t| t.0));
        let Some(x) = x else {
            self.poison(name);
            return None;
        };
        let t = match (x.ty, ty) {
            (Ty::Scalar(t), None) => t,
            (Ty::Scalar(t), Some((want, _))) if t == want => t,
            (found, Some((want, span))) if matches!(found, Ty::Scalar(_)) => {
                self.report(
                    Diagnostic::error(
                        "P0401",
                        format!(
                            "`{}` is declared {}, but its value is {}",
                            name.name,
                            want.name(),
                            ty_name(found)
                        ),
                    )
                    .primary(init.span, format!("this is {}", ty_name(found)))
                    .secondary(span, "declared here")
                    .note(conversion_note(want)),
                );
                self.poison(name);
                return None;
            }
            (found, _) => {
                self.report(
                    Diagnostic::error(
                        "P0409",
                        format!("a variable holds a scalar, found {}", ty_name(found)),
                    )
                    .primary(init.span, "a run cannot be kept in a variable")
                    .note("use a run inside `sum(...)`, `elem(run, i)` or `word(run, i)`"),
                );
                self.poison(name);
                return None;
            }
        };
        let local = self.new_local(&name.name, name.span, mutable, LocalKind::Scalar(t));
        self.bind(&name.name, Binding::Local(local));
        if let (true, None, ExprKind::Int(v)) = (mutable, ty, &init.kind) {
            self.int_literal_vars.push((local, init.span, *v));
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
                self.report(
                    Diagnostic::error("P0207", "cannot assign to this expression")
                        .primary(target.span, "not a variable or a subscript"),
                );
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
                self.report(
                    Diagnostic::error("P0207", format!("cannot assign to `{n}`"))
                        .primary(target_span, "a parameter, dim or constant")
                        .note("declare a variable with `var` to change it"),
                );
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
                Diagnostic::error("P0207", format!("cannot assign to the loop variable `{n}`"))
                    .primary(target_span, "assigned here")
                    .secondary(decl, format!("the loop sets `{n}` on every iteration"))
                    .note(format!("a loop variable cannot change inside its loop: choose the loop's `range(start, end, step)`, or copy it into a variable, as in `var j = {n}`"))
            } else if array {
                Diagnostic::error(
                    "P0207",
                    format!("cannot assign to the register array `{n}` as a whole"),
                )
                .primary(target_span, "assigned here")
                .secondary(decl, "a register array, declared here")
                .note(format!(
                    "change an array's elements with subscripts, as in `{n}[i, j] = v`"
                ))
            } else if matches!(info.kind, LocalKind::Tile { .. }) {
                Diagnostic::error("P0207", format!("cannot assign to the tile `{n}`"))
                    .primary(target_span, "assigned here")
                    .secondary(decl, "a tile, copied here")
                    .note(format!(
                        "change a tile's elements with subscripts, as in `{n}[i, j] = v`"
                    ))
            } else {
                Diagnostic::error("P0207", format!("cannot assign twice to `{n}`"))
                    .primary(target_span, "assigned here")
                    .secondary(decl, "declared with `let`")
                    .note(format!("declare it with `var {n}` to change it"))
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
        if v.ty != ty {
            self.report(
                Diagnostic::error(
                    "P0401",
                    format!(
                        "`{n}` holds {}, the value is {}",
                        ty_name(ty),
                        ty_name(v.ty)
                    ),
                )
                .primary(value.span, format!("this is {}", ty_name(v.ty)))
                .note(elem_of(ty).map_or_else(String::new, conversion_note)),
            );
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
        self.report(
            Diagnostic::error(
                "P0400",
                format!(
                    "`{n}` is {}, so `{n} {}= ...` cannot take {}",
                    lt.name(),
                    op.symbol(),
                    vt.name()
                ),
            )
            .primary(value.span, format!("this is {}", vt.name()))
            .secondary(
                lit_span,
                format!(
                    "`{n}` is {} because `{lit}` is an integer literal",
                    lt.name()
                ),
            )
            .note(format!(
                "declare it as a float: `var {n}: {} = {lit}.0`",
                vt.name()
            )),
        );
        self.rebind(n, Binding::Poisoned);
        true
    }

    fn for_stmt(
        &mut self,
        var: &ast::Ident,
        start: &ast::Expr,
        end: &ast::Expr,
        step: Option<&ast::Expr>,
        unroll: Option<(u64, Span)>,
        body: &ast::Block,
    ) -> Option<hir::StmtKind> {
        let s = self.index(start);
        let e = self.index(end);
        let st = match step {
            Some(x) => self.index(x),
            None => Some(const_i32(1, end.span)),
        };
        if let Some(0) = st.as_ref().and_then(super::consts::const_int) {
            self.report(
                Diagnostic::error("P0413", "a loop's step cannot be 0").primary(
                    step.map_or(end.span, |x| x.span),
                    "the loop would never end",
                ),
            );
        }
        let unroll = self.unroll_factor(unroll, st.as_ref(), step.map_or(end.span, |x| x.span));
        self.push_scope();
        let local = self.new_local(&var.name, var.span, false, LocalKind::Scalar(ScalarTy::I32));
        self.bind(&var.name, Binding::Local(local));
        self.loop_vars.push(local);
        self.loop_depth += 1;
        let body = self.block(body);
        self.loop_depth -= 1;
        self.pop_scope();
        let unroll = match (unroll, own_exit(&body)) {
            (Some(Some(n)), Some(span)) if n > 1 => {
                self.report(
                    Diagnostic::error("P0414", "`unroll` on a loop left by `break` or `continue`")
                        .primary(span, "this leaves the loop")
                        .note(
                            "unrolling copies the body; remove `unroll`, or the `break`/`continue`",
                        ),
                );
                None
            }
            _ => unroll,
        };
        Some(hir::StmtKind::For {
            var: local,
            start: s?,
            end: e?,
            step: st?,
            unroll: unroll?,
            body,
        })
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
            self.report(
                Diagnostic::error(
                    "P0414",
                    format!("an unroll factor must be from 1 to {MAX_UNROLL}, found {n}"),
                )
                .primary(span, "this factor")
                .note("`unroll 1` keeps the loop as written; `unroll 4` runs four bodies per trip"),
            );
            return None;
        }
        if n > 1 && step.and_then(super::consts::const_int).is_none() {
            self.report(
                Diagnostic::error("P0414", "`unroll` needs a loop whose step is a constant")
                    .primary(span, "unrolling asked for here")
                    .secondary(step_span, "this step is known only at run time")
                    .note("write the step as a constant expression, or remove `unroll`"),
            );
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
        self.report(
            Diagnostic::error("P0411", "this expression does nothing")
                .primary(e.span, "its value is dropped")
                .note("assign it, as in `let v = ...` or `A[i] = ...`"),
        );
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
            self.report(
                Diagnostic::error("P0409", "`store` writes into a run of a tensor or tile")
                    .primary(args[0].span, "not a run subscript")
                    .note("write `store(Y[0, k :+ 4], i, v)`"),
            );
            return None;
        };
        let mem = self.memory(base)?;
        let Some(super::subscripts::Shape::Run { index, axis, len }) =
            self.shape(&mem, subs, args[0].span)
        else {
            self.report(
                Diagnostic::error("P0409", "`store` writes into a run")
                    .primary(args[0].span, "not a run: use one span `k :+ L`"),
            );
            return None;
        };
        self.mark_written(mem.memory);
        let i = self.index(&args[1]);
        let v = self.expr_of(&args[2], mem.elem, "the stored value");
        let (i, v) = (i?, v?);
        if let Some(c) = super::consts::const_int(&i).filter(|&c| c < 0 || c >= i128::from(len)) {
            self.report(
                Diagnostic::error("P0507", format!("the element index {c} is out of range"))
                    .primary(args[1].span, format!("must be from 0 to {}", len - 1)),
            );
            return None;
        }
        Some(hir::StmtKind::RunStore {
            dst: mem.memory,
            index,
            axis,
            len,
            value: v,
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
