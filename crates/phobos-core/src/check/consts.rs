//! Compile-time constants: integer ranges of the scalar types, folding of
//! constant integer operators while building the HIR, and reading a
//! checked expression back as a constant (run lengths, widths, `elem`
//! indices need one).

use super::cx::mk;
use crate::ast::{BinOp, ScalarTy, Span};
use crate::hir::{self, ConstVal, Ty};

/// The range of an integer type.
pub(crate) fn int_range(t: ScalarTy) -> (i128, i128) {
    match t {
        ScalarTy::I8 => (i8::MIN.into(), i8::MAX.into()),
        ScalarTy::U8 => (0, u8::MAX.into()),
        ScalarTy::I16 => (i16::MIN.into(), i16::MAX.into()),
        ScalarTy::U16 => (0, u16::MAX.into()),
        ScalarTy::I32 => (i32::MIN.into(), i32::MAX.into()),
        ScalarTy::U32 => (0, u32::MAX.into()),
        ScalarTy::I64 => (i64::MIN.into(), i64::MAX.into()),
        ScalarTy::U64 => (0, u64::MAX.into()),
        _ => (0, 1),
    }
}

pub(crate) fn fits(v: i128, t: ScalarTy) -> bool {
    let (lo, hi) = int_range(t);
    (lo..=hi).contains(&v)
}

/// The value of a checked integer expression, when it is a constant.
pub(crate) fn const_int(e: &hir::Expr) -> Option<i128> {
    match &e.kind {
        hir::ExprKind::Const(ConstVal::Int(v)) => Some(*v),
        _ => None,
    }
}

/// Fold `x op y` when both are integer constants and the result fits its
/// type; otherwise `None` and the operator stays in the HIR (where the
/// backend computes it with the type's wrapping arithmetic).
pub(crate) fn fold_binary(
    op: BinOp,
    x: &hir::Expr,
    y: &hir::Expr,
    ty: Ty,
    span: Span,
) -> Option<hir::Expr> {
    let (a, b) = (const_int(x)?, const_int(y)?);
    let Ty::Scalar(t) = ty else { return None };
    let v = match op {
        BinOp::Add => a.checked_add(b)?,
        BinOp::Sub => a.checked_sub(b)?,
        BinOp::Mul => a.checked_mul(b)?,
        BinOp::Div if b != 0 => a.checked_div(b)?,
        BinOp::Rem if b != 0 => a.checked_rem(b)?,
        BinOp::BitAnd => a & b,
        BinOp::BitOr => a | b,
        BinOp::BitXor => a ^ b,
        BinOp::Shl if (0..32).contains(&b) => a.checked_shl(b as u32)?,
        BinOp::Shr if (0..32).contains(&b) => a >> b,
        _ => return None,
    };
    if t.is_int() && fits(v, t) {
        Some(mk(hir::ExprKind::Const(ConstVal::Int(v)), ty, span))
    } else {
        None
    }
}
