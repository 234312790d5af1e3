//! The errors of `check/atomics.rs` (atomics and `fence()`): their codes,
//! and the one place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::{ScalarTy, Span};
use crate::check::cx::ty_name;
use crate::diag::{Code, Diagnostic};
use crate::hir::{AtomicOp, Ty};

pass_error! {
    /// An error of `check/atomics.rs`: atomics and `fence()`.
    pub enum AtomicError {
        /// `let name: declared = op(...)` where the element is `elem`.
        AtomicResultDeclared {
            name: String,
            declared: ScalarTy,
            op: AtomicOp,
            elem: ScalarTy,
            span: Span,
            decl: Span,
        } => P0401,
        /// `name = op(...)` where `name` holds `holds`.
        AtomicResultAssigned {
            name: String,
            holds: Ty,
            op: AtomicOp,
            elem: ScalarTy,
            span: Span,
        } => P0401,
        /// The atomic `op` inside an expression.
        AtomicInExpr { op: String, span: Span } => P0430,
        FenceAsValue { span: Span } => P0430,
        /// The target is not a subscript.
        AtomicNotElement { op: AtomicOp, span: Span } => P0432,
        /// The target is an element of the register array `array`.
        AtomicOnArray {
            op: AtomicOp,
            array: String,
            span: Span,
        } => P0432,
        /// The target is a span of `name`.
        AtomicOnSpan {
            op: AtomicOp,
            name: String,
            span: Span,
        } => P0432,
        /// `op` on `name`, which holds `elem`.
        AtomicNotOnType {
            op: AtomicOp,
            name: String,
            elem: ScalarTy,
            span: Span,
        } => P0431,
    }
}

impl AtomicError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use AtomicError::*;
        let code = self.code();
        match self {
            AtomicResultDeclared {
                name,
                declared,
                op,
                elem,
                span,
                decl,
            } => code
                .error(format!(
                    "`{name}` is declared {}, but `{}` gives the old {} element",
                    declared.name(),
                    op.name(),
                    elem.name()
                ))
                .primary(span, format!("this is {}", elem.name()))
                .secondary(decl, "declared here"),
            AtomicResultAssigned {
                name,
                holds,
                op,
                elem,
                span,
            } => code
                .error(format!(
                    "`{name}` holds {}, the old element `{}` gives is {}",
                    ty_name(holds),
                    op.name(),
                    elem.name()
                ))
                .primary(span, format!("this is {}", elem.name())),
            AtomicInExpr { op, span } => code
                .error(format!("`{op}` is a statement, not part of an expression"))
                .primary(span, "used inside an expression")
                .note(format!(
                    "write it alone (`{op}(T[i], v)`), or take the old value whole: `let old = {op}(T[i], v)`, then use `old`"
                )),
            FenceAsValue { span } => code
                .error("`fence()` is a statement and has no value")
                .primary(span, "used as a value")
                .note("write `fence()` on a line of its own"),
            AtomicNotElement { op, span } => code
                .error(format!("`{}` works on one element of a tensor or tile", op.name()))
                .primary(span, "not an element of a tensor or tile")
                .note(format!("write `{}(T[i, j], ...)`", op.name())),
            AtomicOnArray { op, array, span } => code
                .error(format!(
                    "`{}` works on one element of a tensor or tile, and `{array}` is a register array",
                    op.name()
                ))
                .primary(span, "an element of a register array")
                .note(format!(
                    "only this thread sees `{array}`: update it with a plain assignment (`{array}[i] = {array}[i] + v`)"
                )),
            AtomicOnSpan { op, name, span } => code
                .error(format!(
                    "`{}` works on one element, found a span of `{name}`",
                    op.name()
                ))
                .primary(span, "a run or tile, not one element")
                .note("every subscript must be an index; a run needs one atomic per element"),
            AtomicNotOnType {
                op,
                name,
                elem,
                span,
            } => {
                let d = code
                    .error(format!("`{}` is not defined on {}", op.name(), elem.name()))
                    .primary(span, format!("`{name}` holds {}", elem.name()))
                    .note(supported_note(op));
                match float_min_max_note(op, elem) {
                    Some(n) => d.note(n),
                    None => d,
                }
            }
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<AtomicError> {
        use AtomicError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            AtomicResultDeclared {
                name: name(),
                declared: ScalarTy::I32,
                op: AtomicOp::Add,
                elem: ScalarTy::F32,
                span,
                decl: span,
            },
            AtomicResultAssigned {
                name: name(),
                holds: Ty::Scalar(ScalarTy::I32),
                op: AtomicOp::Add,
                elem: ScalarTy::F32,
                span,
            },
            AtomicInExpr {
                op: "atomic_add".into(),
                span,
            },
            FenceAsValue { span },
            AtomicNotElement {
                op: AtomicOp::Add,
                span,
            },
            AtomicOnArray {
                op: AtomicOp::Add,
                array: name(),
                span,
            },
            AtomicOnSpan {
                op: AtomicOp::Add,
                name: name(),
                span,
            },
            AtomicNotOnType {
                op: AtomicOp::Max,
                name: name(),
                elem: ScalarTy::F32,
                span,
            },
        ]
    }
}

/// Why a float `atomic_min`/`atomic_max` is refused, and what to do
/// instead. Checked with ptxas 12.9: PTX has f16/bf16 `min`/`max` atomics
/// only in the vector form on global memory, sm_90 and newer
/// (`atom.global.v2.min.noftz.f16` updates two adjacent elements; the
/// scalar `atom.global.min.noftz.f16` is refused with "Vector modifier
/// required"), and no f32/f64 `min`/`max` atomic at all.
fn float_min_max_note(op: AtomicOp, t: ScalarTy) -> Option<String> {
    if !matches!(op, AtomicOp::Min | AtomicOp::Max) || !t.is_float() {
        return None;
    }
    let which = if matches!(t, ScalarTy::F16 | ScalarTy::BF16) {
        format!(
            "PTX has {} min and max atomics only on two or more adjacent elements of global memory at once (`atom.global.v2.{}.noftz.{}`, sm_90 and newer), which would update the neighbours too, and none on one element",
            t.name(),
            if op == AtomicOp::Min { "min" } else { "max" },
            t.name()
        )
    } else {
        format!("PTX has no {} min or max atomic", t.name())
    };
    Some(format!(
        "{which}: fold the values first (`{}<over ctx.thread>(x)`) and let one thread per CTA update, or keep them in an integer type",
        if op == AtomicOp::Min { "min" } else { "max" }
    ))
}

/// The types an atomic takes, for P0431's note.
fn supported_note(op: AtomicOp) -> String {
    let types = ScalarTy::ALL
        .iter()
        .filter(|t| op.supports(**t))
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(", ");
    let extra = match op {
        AtomicOp::Add => " (bf16 on sm_90 and newer)",
        AtomicOp::Exch | AtomicOp::Cas => " (floats are exchanged and compared as their bits)",
        _ => "",
    };
    format!("`{}` takes elements of {types}{extra}", op.name())
}
