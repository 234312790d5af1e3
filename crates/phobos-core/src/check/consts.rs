//! Compile-time constants: folding of constant integer operators while
//! building the HIR (the arithmetic is `crate::consteval`'s), and reading a
//! checked expression back as a constant (run lengths, widths, `elem`
//! indices need one).

use super::cx::constant;
use crate::ast::{BinOp, Span};
use crate::consteval;
use crate::hir::{self, ConstVal, Ty};

pub(crate) use crate::consteval::fits;

/// The value of a checked integer expression, when it is a constant.
pub(crate) fn const_int(e: &hir::Expr) -> Option<i128> {
    match &e.kind {
        hir::ExprKind::Const(ConstVal::Int(v)) => Some(*v),
        _ => None,
    }
}

/// Fold `x op y` when both are integer constants and the exact result
/// fits its type (`consteval::exact`); otherwise `None` and the operator
/// stays in the HIR (where the backend computes it with the type's
/// wrapping arithmetic).
pub(crate) fn fold_binary(
    op: BinOp,
    x: &hir::Expr,
    y: &hir::Expr,
    ty: Ty,
    span: Span,
) -> Option<hir::Expr> {
    let (a, b) = (const_int(x)?, const_int(y)?);
    let Ty::Scalar(t) = ty else { return None };
    if !t.is_int() {
        return None;
    }
    let v = consteval::exact(op, t, a, b).ok()?;
    Some(constant(ConstVal::Int(v), ty, span))
}

/// Why `x op y` on integer constants has no defined value, when it has
/// none whatever the arithmetic (division by zero, the smallest signed
/// value divided by -1, a shift out of range): not folded, and left to run
/// time, where the language defines no result (P0419). An exact result
/// that only overflows wraps at run time and is defined.
pub(crate) fn undefined_binary(
    op: BinOp,
    x: &hir::Expr,
    y: &hir::Expr,
    ty: Ty,
) -> Option<consteval::Undefined> {
    use consteval::Undefined as U;
    let (a, b) = (const_int(x)?, const_int(y)?);
    let Ty::Scalar(t) = ty else { return None };
    match consteval::exact(op, t, a, b) {
        Err(u @ (U::DivisionByZero | U::DivisionOverflow | U::ShiftOutOfRange)) => Some(u),
        _ => None,
    }
}
