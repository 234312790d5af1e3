//! Atomics (`atomic_add(T[i, j], v)` and the other seven) and `fence()`.
//!
//! An atomic is a statement: written alone (the old value is dropped, and
//! the backend emits `red` where PTX has one), or as the whole value of a
//! `let`/`var` or of an assignment to a scalar `var`, which then takes the
//! element's old value. Anywhere else inside an expression it is P0430, so
//! its place in the evaluation order, and its place among a statement's
//! tile accesses for barrier placement, is always a statement's own.
//!
//! This file decides which calls are atomics, checks the element (one point
//! of a tensor or tile, P0432), the operation against the element type
//! (P0431) and the arguments, and marks a tensor written. Whether the
//! target has the operation (`bf16` add needs sm_90) is the backend's
//! question (P0810), since the front end does not know the target.

use super::cx::Cx;
use super::error::AtomicError;
use super::stmts::LetDecl;
use super::subscripts::Shape;
use crate::ast::{self, ExprKind, Ident, ScalarTy, Span};
use crate::hir::{self, AtomicOp, LocalId, LocalKind};

/// A checked atomic before its result is given a home.
pub(crate) struct AtomicParts {
    pub op: AtomicOp,
    pub dst: hir::Memory,
    pub index: Vec<hir::Expr>,
    pub args: Vec<hir::Expr>,
    pub elem: ScalarTy,
}

/// The atomic or `fence()` call `e` is, if it is one.
pub(crate) fn atomic_call(e: &ast::Expr) -> Option<(&Ident, &[ast::Expr])> {
    match &e.kind {
        ExprKind::Call { callee, args } if is_atomic_name(&callee.name) => {
            Some((&**callee, &**args))
        }
        _ => None,
    }
}

/// `atomic_*` and `fence`: names a `fn` item may not take.
pub(crate) fn is_atomic_name(name: &str) -> bool {
    name == "fence" || AtomicOp::from_name(name).is_some()
}

impl Cx<'_> {
    /// An atomic or `fence()` written as a statement of its own.
    pub fn atomic_stmt(
        &mut self,
        callee: &Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<hir::StmtKind> {
        if callee.name == "fence" {
            return self
                .arity(callee, args, 0, span)
                .then_some(hir::StmtKind::Fence);
        }
        let p = self.atomic_parts(callee, args, span)?;
        Some(hir::StmtKind::Atomic {
            op: p.op,
            dst: p.dst,
            index: p.index,
            args: p.args,
            result: None,
        })
    }

    /// `let old = atomic_add(...)` (or `var`): declares `name` with the
    /// element's type, which a written type must equal.
    pub fn atomic_let(&mut self, l: LetDecl) -> Option<hir::StmtKind> {
        let p = self.atomic_value(l.init)?;
        if let Some((want, tspan)) = l.ty.filter(|(t, _)| *t != p.elem) {
            self.report(AtomicError::AtomicResultDeclared {
                name: l.name.name.clone(),
                declared: want,
                op: p.op,
                elem: p.elem,
                span: l.init.span,
                decl: tspan,
            });
            return None;
        }
        let local = self.new_local(
            &l.name.name,
            l.name.span,
            l.mutable,
            LocalKind::Scalar(p.elem),
        );
        self.bind(&l.name.name, super::cx::Binding::Local(local));
        Some(atomic_into(p, local))
    }

    /// `x = atomic_add(...)` with `x` a scalar `var` of the element's type.
    pub fn atomic_assign(
        &mut self,
        local: LocalId,
        n: &str,
        value: &ast::Expr,
    ) -> Option<hir::StmtKind> {
        let p = self.atomic_value(value)?;
        let ty = self.local_ty(local)?;
        if ty != hir::Ty::Scalar(p.elem) {
            self.report(AtomicError::AtomicResultAssigned {
                name: n.to_string(),
                holds: ty,
                op: p.op,
                elem: p.elem,
                span: value.span,
            });
            return None;
        }
        Some(atomic_into(p, local))
    }

    /// The parts of the atomic call `value` whose old value a `let` or an
    /// assignment takes; `None` when it is no atomic call, or is `fence()`
    /// (which has no value) or refused, both reported.
    fn atomic_value(&mut self, value: &ast::Expr) -> Option<AtomicParts> {
        let (callee, args) = atomic_call(value)?;
        if callee.name == "fence" {
            self.fence_as_value(value.span);
            return None;
        }
        self.atomic_parts(callee, args, value.span)
    }

    /// An atomic or `fence()` met inside an expression (P0430).
    pub fn atomic_in_expr(&mut self, callee: &Ident, span: Span) {
        if callee.name == "fence" {
            self.fence_as_value(span);
            return;
        }
        self.report(AtomicError::AtomicInExpr {
            op: callee.name.clone(),
            span,
        });
    }

    fn fence_as_value(&mut self, span: Span) {
        self.report(AtomicError::FenceAsValue { span });
    }

    /// Check `atomic_op(T[i, j], args...)`.
    fn atomic_parts(
        &mut self,
        callee: &Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> Option<AtomicParts> {
        let op = AtomicOp::from_name(&callee.name)?;
        let n = if op == AtomicOp::Cas { 3 } else { 2 };
        if !self.arity(callee, args, n, span) {
            return None;
        }
        let target = &args[0];
        let ExprKind::Index { base, subs } = &target.kind else {
            self.report(AtomicError::AtomicNotElement {
                op,
                span: target.span,
            });
            self.expr(target, None);
            return None;
        };
        let mem = self.memory(base)?;
        if matches!(mem.memory, hir::Memory::Array(_)) {
            // A register array is the thread's own: no other thread can
            // update it, and it has no address an `atom` could take.
            self.report(AtomicError::AtomicOnArray {
                op,
                array: mem.name.clone(),
                span: target.span,
            });
            return None;
        }
        let shape = self.shape(&mem, subs, target.span)?;
        let Shape::Point(index) = shape else {
            self.report(AtomicError::AtomicOnSpan {
                op,
                name: mem.name.clone(),
                span: target.span,
            });
            return None;
        };
        if !op.supports(mem.elem) {
            self.report(AtomicError::AtomicNotOnType {
                op,
                name: mem.name.clone(),
                elem: mem.elem,
                span: target.span,
            });
            return None;
        }
        self.mark_written(mem.memory);
        let what = format!("the value of `{}`", op.name());
        let values: Vec<Option<hir::Expr>> = args[1..]
            .iter()
            .map(|a| self.expr_of(a, mem.elem, &what))
            .collect();
        let values: Option<Vec<hir::Expr>> = values.into_iter().collect();
        Some(AtomicParts {
            op,
            dst: mem.memory,
            index,
            args: values?,
            elem: mem.elem,
        })
    }
}

fn atomic_into(p: AtomicParts, local: LocalId) -> hir::StmtKind {
    hir::StmtKind::Atomic {
        op: p.op,
        dst: p.dst,
        index: p.index,
        args: p.args,
        result: Some(local),
    }
}
