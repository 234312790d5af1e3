//! Expression typing: names, literals, operators and conversions. Typing
//! is bidirectional: `expr(e, want)` takes the type the context needs, and
//! an untyped literal takes it (integer literals default to i32, float
//! literals to f32). Nothing else converts implicitly.

use super::consts::{fits, fold_binary, undefined_binary};
use super::cx::{
    const_i32, constant, elem_of, mk, Binding, Cx, Ex, INLINE_BUDGET, MAX_EXPR_DEPTH,
    MAX_EXPR_NODES,
};
use super::error::{FnError, HeaderError, TypeError};
use crate::ast::{self, BinOp, CtxField, ExprKind, ScalarTy, Span, UnOp};
use crate::hir::{self, ConstVal, Ty};

/// True for expressions made only of literals (`2`, `-1.5`, `(4 * 8)`):
/// they have no type of their own until their use gives them one.
pub(crate) fn is_untyped(e: &ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Float(_) => true,
        ExprKind::Unary(UnOp::Neg, x) => is_untyped(x),
        ExprKind::Binary(op, a, b) => is_arith(*op) && is_untyped(a) && is_untyped(b),
        _ => false,
    }
}

/// When `v` rounds to infinity in the float type `t`: that type's largest
/// finite value, as text for the note.
fn float_overflows(v: f64, t: ScalarTy) -> Option<&'static str> {
    // The 8-bit floats saturate (PTX's `satfinite`) rather than round to
    // infinity: a literal beyond the largest finite value would silently
    // become it, so it does not fit either.
    match t {
        ScalarTy::F8E4M3 => return (v.abs() > 448.0).then_some("448"),
        ScalarTy::F8E5M2 => return (v.abs() > 57344.0).then_some("57344"),
        _ => {}
    }
    // The smallest magnitude that rounds to infinity is the largest finite
    // value plus half an ulp (round to nearest even goes up from there).
    let (limit, largest) = match t {
        ScalarTy::F16 => (65520.0, "65504"),
        ScalarTy::BF16 => (2f64.powi(128) - 2f64.powi(119), "3.3895314e38"),
        ScalarTy::F32 => (2f64.powi(128) - 2f64.powi(103), "3.4028235e38"),
        _ => (f64::INFINITY, "1.7976931348623157e308"),
    };
    (v.abs() >= limit).then_some(largest)
}

pub(crate) fn has_float_literal(e: &ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Float(_) => true,
        ExprKind::Unary(_, x) => has_float_literal(x),
        ExprKind::Binary(_, a, b) => has_float_literal(a) || has_float_literal(b),
        _ => false,
    }
}

/// The type an untyped literal expression takes when nothing asks for one.
pub(crate) fn literal_default(e: &ast::Expr) -> ScalarTy {
    if has_float_literal(e) {
        ScalarTy::F32
    } else {
        ScalarTy::I32
    }
}

fn is_arith(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem
    )
}

fn is_bitwise(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr
    )
}

fn is_compare(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
    )
}

impl Cx<'_> {
    /// Check an expression; `want` is the scalar type the context needs, if any.
    pub fn expr(&mut self, e: &ast::Expr, want: Option<ScalarTy>) -> Ex {
        // The parser bounds the depth of what was written; inlining fns into
        // each other can multiply it, so the checked depth is bounded too.
        let too_deep = self.expr_depth >= MAX_EXPR_DEPTH;
        if too_deep || self.expr_nodes >= MAX_EXPR_NODES {
            if !self.inline_exhausted {
                self.inline_exhausted = true;
                // Talk about fns only when one was inlined.
                let inlined = self.inline_budget < INLINE_BUDGET;
                let d = if too_deep {
                    TypeError::ExprTooDeep {
                        inlined,
                        span: e.span,
                    }
                } else {
                    TypeError::TooManyExprs {
                        inlined,
                        span: e.span,
                    }
                };
                self.report(d);
            }
            return None;
        }
        self.expr_nodes += 1;
        self.expr_depth += 1;
        let x = self.expr_inner(e, want);
        self.expr_depth -= 1;
        x
    }

    fn expr_inner(&mut self, e: &ast::Expr, want: Option<ScalarTy>) -> Ex {
        match &e.kind {
            ExprKind::Int(v) => self.int_literal(*v as i128, want, e.span),
            ExprKind::Float(v) => self.float_literal(*v, want, e.span),
            ExprKind::Bool(b) => Some(constant(
                ConstVal::Bool(*b),
                Ty::Scalar(ScalarTy::Bool),
                e.span,
            )),
            ExprKind::Name(n) => self.name(n, e.span, want),
            ExprKind::Ctx(f) => self.ctx(*f, e.span),
            ExprKind::Unary(op, x) => self.unary(*op, x, want, e.span),
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, want, e.span),
            ExprKind::Call { callee, args } => self.call(callee, args, want, e.span),
            ExprKind::Index { base, subs } => self.index_expr(base, subs, e.span),
            ExprKind::Collective(c) => {
                self.collective(&c.op, &c.config, c.config_span, &c.args, want, e.span)
            }
            ExprKind::Shared { .. } => self.scratch_in_expr(e.span),
            ExprKind::Zeros { .. } => self.zeros_in_expr(e.span),
            ExprKind::Error => None,
        }
    }

    /// Check an expression that must have type `t` exactly.
    pub fn expr_of(&mut self, e: &ast::Expr, t: ScalarTy, what: &str) -> Ex {
        let x = self.expr(e, Some(t))?;
        if x.ty == Ty::Scalar(t) {
            return Some(x);
        }
        self.report(TypeError::ExprType {
            what: what.to_string(),
            want: t,
            found: x.ty,
            span: e.span,
        });
        None
    }

    /// A scalar expression (not a run).
    pub fn scalar_expr(&mut self, e: &ast::Expr, want: Option<ScalarTy>) -> Ex {
        let x = self.expr(e, want)?;
        match x.ty {
            Ty::Scalar(_) => Some(x),
            t => {
                self.report(TypeError::RunNotScalar {
                    found: t,
                    span: e.span,
                });
                None
            }
        }
    }

    fn int_literal(&mut self, v: i128, want: Option<ScalarTy>, span: Span) -> Ex {
        let t = match want {
            Some(t) if t.is_float() => return self.float_literal(v as f64, Some(t), span),
            Some(t) if t.is_int() => t,
            _ => ScalarTy::I32,
        };
        if !fits(v, t) {
            self.report(TypeError::IntLiteralRange {
                value: v,
                ty: t,
                span,
            });
            return None;
        }
        Some(constant(ConstVal::Int(v), Ty::Scalar(t), span))
    }

    fn float_literal(&mut self, v: f64, want: Option<ScalarTy>, span: Span) -> Ex {
        let t = match want {
            Some(t) if t.is_float() => t,
            Some(t) if t.is_int() => {
                self.report(TypeError::FloatLiteralForInt { ty: t, span });
                return None;
            }
            _ => ScalarTy::F32,
        };
        // `inf` and `nan` are written as words; a decimal literal too large
        // for f64 also lexes as infinity, and that one does not fit.
        let named = v.is_nan() || (v.is_infinite() && self.text(span).trim() == "inf");
        if let Some(largest) = float_overflows(v, t).filter(|_| !named) {
            self.report(TypeError::FloatLiteralRange {
                text: self.text(span).trim().to_string(),
                ty: t,
                largest,
                span,
            });
            return None;
        }
        Some(constant(ConstVal::Float(v), Ty::Scalar(t), span))
    }

    fn name(&mut self, n: &str, span: Span, want: Option<ScalarTy>) -> Ex {
        let Some(b) = self.lookup(n).cloned() else {
            return self.unknown_name(n, span);
        };
        match b {
            Binding::Local(id) => match self.local_ty(id) {
                Some(ty) => Some(mk(hir::ExprKind::Local(id), ty, span)),
                None if matches!(self.locals[id.0 as usize].kind, hir::LocalKind::Acc { .. }) => {
                    self.acc_not_value(id, n, span);
                    None
                }
                None => {
                    let array = matches!(
                        self.locals[id.0 as usize].kind,
                        hir::LocalKind::Array { .. }
                    );
                    self.report(TypeError::LocalNotValue {
                        name: n.to_string(),
                        array,
                        span,
                    });
                    None
                }
            },
            Binding::Param(id) => match self.header.params[id.0 as usize].kind {
                hir::ParamKind::Scalar(t) => {
                    Some(mk(hir::ExprKind::Param(id), Ty::Scalar(t), span))
                }
                hir::ParamKind::Tensor { .. } => {
                    self.report(TypeError::TensorNotValue {
                        name: n.to_string(),
                        span,
                    });
                    None
                }
            },
            Binding::Dim(id) => Some(mk(hir::ExprKind::Dim(id), Ty::Scalar(ScalarTy::I32), span)),
            Binding::Const(v) => {
                let t = want.filter(|t| t.is_int()).unwrap_or(ScalarTy::I32);
                self.int_literal(v as i128, Some(t), span)
            }
            Binding::Inline(x) => Some(hir::Expr { span, ..x }),
            Binding::Poisoned => None,
        }
    }

    /// Report `n`, bound to nothing, as the unknown name it is (P0200), or
    /// as a `fn` used as a value.
    pub(super) fn unknown_name(&mut self, n: &str, span: Span) -> Ex {
        let name = n.to_string();
        if self.fns.items.contains_key(n) {
            self.report(FnError::FnAsValue { name, span });
        } else if self.grid_mode {
            self.report(TypeError::GridName { name, span });
        } else {
            self.report(TypeError::UnknownName { name, span });
        }
        None
    }

    fn ctx(&mut self, f: CtxField, span: Span) -> Ex {
        let warps = i64::from(self.threads / 32);
        let value = match f {
            CtxField::Lanes => Some(32),
            CtxField::Threads => Some(i64::from(self.threads)),
            CtxField::Warps => Some(warps),
            _ => None,
        };
        if let Some(v) = value {
            return Some(const_i32(v, span));
        }
        if self.grid_mode {
            self.report(TypeError::GridCtx { span });
            return None;
        }
        Some(mk(hir::ExprKind::Ctx(f), Ty::Scalar(ScalarTy::I32), span))
    }

    fn unary(&mut self, op: UnOp, x: &ast::Expr, want: Option<ScalarTy>, span: Span) -> Ex {
        if let (UnOp::Neg, ExprKind::Int(v)) = (op, &x.kind) {
            return self.int_literal(-(*v as i128), want, span);
        }
        let inner = self.expr(x, want)?;
        let elem = elem_of(inner.ty)?;
        // A negated literal is a constant (`-448.0` is an f8e4m3).
        if let (UnOp::Neg, hir::ExprKind::Const(ConstVal::Float(v))) = (op, &inner.kind) {
            if elem.is_f8() {
                return Some(constant(ConstVal::Float(-v), inner.ty, span));
            }
        }
        if elem.is_f8() {
            let sym = if op == UnOp::Neg { "`-`" } else { "`!`" };
            self.report(TypeError::F8Operation {
                what: sym.to_string(),
                ty: elem,
                span,
            });
            return None;
        }
        let ok = match op {
            UnOp::Neg => elem.is_float() || elem.is_int(),
            UnOp::Not => elem == ScalarTy::Bool || elem.is_int(),
        };
        if !ok {
            let sym = if op == UnOp::Neg { "-" } else { "!" };
            self.report(TypeError::UnaryType {
                op: sym,
                found: inner.ty,
                span: x.span,
            });
            return None;
        }
        if let (UnOp::Neg, hir::ExprKind::Const(ConstVal::Float(v))) = (op, &inner.kind) {
            return Some(constant(ConstVal::Float(-v), inner.ty, span));
        }
        let ty = inner.ty;
        Some(mk(hir::ExprKind::Unary(op, Box::new(inner)), ty, span))
    }

    /// Check two operands that must share a type: the typed one first, so
    /// an untyped literal on the other side takes its type.
    pub fn operand_pair(
        &mut self,
        a: &ast::Expr,
        b: &ast::Expr,
        want: Option<ScalarTy>,
    ) -> Option<(hir::Expr, hir::Expr)> {
        if is_untyped(a) && !is_untyped(b) {
            let y = self.expr(b, want)?;
            let x = self.expr(a, elem_of(y.ty))?;
            return Some((x, y));
        }
        let want = match (is_untyped(a), want) {
            (true, None) => Some(literal_default(a).max_literal(literal_default(b))),
            _ => want,
        };
        let x = self.expr(a, want);
        let y = self.expr(b, x.as_ref().and_then(|x| elem_of(x.ty)).or(want));
        Some((x?, y?))
    }

    fn binary(
        &mut self,
        op: BinOp,
        a: &ast::Expr,
        b: &ast::Expr,
        want: Option<ScalarTy>,
        span: Span,
    ) -> Ex {
        let operand_want = if is_compare(op) || matches!(op, BinOp::And | BinOp::Or) {
            None
        } else {
            want
        };
        let (x, y) = self.operand_pair(a, b, operand_want)?;
        let ty = self.binary_type(op, &x, &y, span)?;
        if let Some(folded) = fold_binary(op, &x, &y, ty, span) {
            return Some(folded);
        }
        if let Some(why) = undefined_binary(op, &x, &y, ty) {
            self.report(HeaderError::UndefinedConstant {
                text: self.text(span).to_string(),
                why,
                span,
            });
        }
        Some(mk(
            hir::ExprKind::Binary(op, Box::new(x), Box::new(y)),
            ty,
            span,
        ))
    }

    /// `old op value` for a compound assignment: `value` takes `old`'s type.
    pub fn compound(&mut self, op: BinOp, old: hir::Expr, value: &ast::Expr, span: Span) -> Ex {
        let y = self.expr(value, elem_of(old.ty))?;
        let ty = self.binary_type(op, &old, &y, span)?;
        Some(mk(
            hir::ExprKind::Binary(op, Box::new(old), Box::new(y)),
            ty,
            span,
        ))
    }

    /// The result type of `x op y`, or a reported error.
    pub(crate) fn binary_type(
        &mut self,
        op: BinOp,
        x: &hir::Expr,
        y: &hir::Expr,
        span: Span,
    ) -> Option<Ty> {
        let (ex, ey) = (elem_of(x.ty)?, elem_of(y.ty)?);
        let run_len = match (x.ty, y.ty) {
            (Ty::Run { len: l1, .. }, Ty::Run { len: l2, .. }) if l1 != l2 => {
                self.report(TypeError::RunLengths {
                    left: l1,
                    right: l2,
                    span: x.span,
                    right_span: y.span,
                });
                return None;
            }
            (Ty::Run { len, .. }, _) | (_, Ty::Run { len, .. }) => Some(len),
            _ => None,
        };
        if ex != ey {
            self.report(TypeError::OperandTypes {
                left: ex,
                op: op.symbol(),
                right: ey,
                span,
                left_span: x.span,
                right_span: y.span,
            });
            return None;
        }
        if ex.is_f8() {
            self.report(TypeError::F8Operation {
                what: format!("`{}`", op.symbol()),
                ty: ex,
                span,
            });
            return None;
        }
        let ok = if is_arith(op) {
            ex.is_int() || ex.is_float()
        } else if is_bitwise(op) {
            ex.is_int() || (ex == ScalarTy::Bool && !matches!(op, BinOp::Shl | BinOp::Shr))
        } else if is_compare(op) {
            ex != ScalarTy::Bool || matches!(op, BinOp::Eq | BinOp::Ne)
        } else {
            ex == ScalarTy::Bool
        };
        if !ok {
            self.report(TypeError::BinaryType {
                op: op.symbol(),
                ty: ex,
                span,
            });
            return None;
        }
        let res = if is_compare(op) { ScalarTy::Bool } else { ex };
        Some(match run_len {
            Some(len) => Ty::Run { elem: res, len },
            None => Ty::Scalar(res),
        })
    }
}

/// The fix for a type mismatch.
pub(crate) fn conversion_note(t: ScalarTy) -> String {
    if t == ScalarTy::Bool {
        return "a condition is a comparison, as in `x != 0` or `x > 0.0`".to_string();
    }
    format!(
        "Phobos converts only untyped literals implicitly; convert explicitly with `{}(...)`",
        t.name()
    )
}

/// Join of literal defaults: a float anywhere makes the whole f32.
trait LiteralJoin {
    fn max_literal(self, other: Self) -> Self;
}

impl LiteralJoin for ScalarTy {
    fn max_literal(self, other: ScalarTy) -> ScalarTy {
        if self.is_float() || other.is_float() {
            ScalarTy::F32
        } else {
            ScalarTy::I32
        }
    }
}
