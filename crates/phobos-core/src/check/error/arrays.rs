//! The errors of `check/arrays.rs` (register arrays): their codes, and the
//! one place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::{ScalarTy, Span};
use crate::check::cx::ty_name;
use crate::check::types::conversion_note;
use crate::diag::{Code, Diagnostic};
use crate::hir::{Ty, MAX_ARRAY_ELEMS};

pass_error! {
    /// An error of `check/arrays.rs`: register arrays.
    pub enum ArrayError {
        ArrayLet {
            name: String,
            elem: ScalarTy,
            span: Span,
        } => P0418,
        /// The initial value of `name` (elements of `elem`) is `found`.
        ArrayInitType {
            name: String,
            elem: ScalarTy,
            found: Ty,
            span: Span,
            elem_span: Span,
        } => P0401,
        ArrayNoDims { span: Span } => P0416,
        ArrayDimRange { value: i128, span: Span } => P0416,
        /// `text` is the dim's source.
        ArrayDimNotConstant { text: String, span: Span } => P0416,
        ArrayTooLarge {
            name: String,
            elems: u64,
            span: Span,
        } => P0416,
        ArraySpan { name: String, span: Span } => P0418,
        ArrayIndexRange {
            index: i128,
            axis: usize,
            name: String,
            dim: i64,
            span: Span,
        } => P0417,
    }
}

impl ArrayError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use ArrayError::*;
        let code = self.code();
        match self {
            ArrayLet { name, elem, span } => code
                .error(format!("the register array `{name}` must be declared with `var`"))
                .primary(span, "declared with `let`")
                .note(format!(
                    "an array is filled element by element after its declaration: write `var {name}: {}[...] = ...`",
                    elem.name()
                )),
            ArrayInitType {
                name,
                elem,
                found,
                span,
                elem_span,
            } => code
                .error(format!(
                    "the elements of `{name}` are {}, the initial value is {}",
                    elem.name(),
                    ty_name(found)
                ))
                .primary(span, format!("this is {}", ty_name(found)))
                .secondary(elem_span, "the element type")
                .note(conversion_note(elem)),
            ArrayNoDims { span } => code
                .error("a register array needs at least one dim")
                .primary(span, "no dims")
                .note("write the shape in the brackets, as in `f32[4, 4]`"),
            ArrayDimRange { value, span } => code
                .error(format!(
                    "a register array's dim must be from 1 to {MAX_ARRAY_ELEMS}, found {value}"
                ))
                .primary(span, "out of range"),
            ArrayDimNotConstant { text, span } => code
                .error("a register array's dims must be compile-time constants")
                .primary(span, format!("`{text}` is not a constant"))
                .note("use a number, an autotuned name or `ctx.warps`-style constants; a thread's registers are fixed when the kernel is compiled"),
            ArrayTooLarge { name, elems, span } => code
                .error(format!(
                    "the register array `{name}` has {elems} elements, more than the {MAX_ARRAY_ELEMS} a thread may hold"
                ))
                .primary(span, format!("{elems} elements"))
                .note("keep larger data in a shared tile (`var t = x[...]`) or in a tensor"),
            ArraySpan { name, span } => code
                .error(format!("the register array `{name}` takes one index per dim"))
                .primary(span, "a span or `:` on a register array")
                .note(format!(
                    "read or write one element at a time, as in `{name}[i, j]`"
                )),
            ArrayIndexRange {
                index,
                axis,
                name,
                dim,
                span,
            } => code
                .error(format!(
                    "index {index} is out of range for axis {axis} of `{name}`, which has {dim} elements"
                ))
                .primary(span, format!("must be from 0 to {}", dim - 1)),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<ArrayError> {
        use ArrayError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            ArrayLet {
                name: name(),
                elem: ScalarTy::F32,
                span,
            },
            ArrayInitType {
                name: name(),
                elem: ScalarTy::F32,
                found: Ty::Scalar(ScalarTy::I32),
                span,
                elem_span: span,
            },
            ArrayNoDims { span },
            ArrayDimRange { value: 0, span },
            ArrayDimNotConstant {
                text: "n".into(),
                span,
            },
            ArrayTooLarge {
                name: name(),
                elems: 1024,
                span,
            },
            ArraySpan { name: name(), span },
            ArrayIndexRange {
                index: 4,
                axis: 0,
                name: name(),
                dim: 4,
                span,
            },
        ]
    }
}
