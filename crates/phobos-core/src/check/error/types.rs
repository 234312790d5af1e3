//! The errors of `check/types.rs` (expressions): their codes, and the one
//! place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::{ScalarTy, Span};
use crate::check::cx::{ty_name, MAX_EXPR_DEPTH, MAX_EXPR_NODES};
use crate::check::types::conversion_note;
use crate::diag::{Code, Diagnostic};
use crate::hir::Ty;

pass_error! {
    /// An error of `check/types.rs`: expressions.
    pub enum TypeError {
        /// Deeper than [`MAX_EXPR_DEPTH`]. `inlined`: fns were inlined.
        ExprTooDeep { inlined: bool, span: Span } => P0211,
        /// More than [`MAX_EXPR_NODES`] expressions.
        TooManyExprs { inlined: bool, span: Span } => P0211,
        /// `what` must be `want`.
        ExprType {
            what: String,
            want: ScalarTy,
            found: Ty,
            span: Span,
        } => P0401,
        /// A run where a scalar is needed.
        RunNotScalar { found: Ty, span: Span } => P0409,
        IntLiteralRange {
            value: i128,
            ty: ScalarTy,
            span: Span,
        } => P0403,
        FloatLiteralForInt { ty: ScalarTy, span: Span } => P0403,
        /// `text` rounds to infinity in `ty`, whose largest finite
        /// value is `largest`.
        FloatLiteralRange {
            text: String,
            ty: ScalarTy,
            largest: &'static str,
            span: Span,
        } => P0403,
        /// A tile (or register array, `array`) used without subscript.
        LocalNotValue {
            name: String,
            array: bool,
            span: Span,
        } => P0408,
        TensorNotValue { name: String, span: Span } => P0408,
        /// `@grid` names what is not a dim or constant.
        GridName { name: String, span: Span } => P0308,
        UnknownName { name: String, span: Span } => P0200,
        /// `@grid` uses a `ctx` field known only in the kernel.
        GridCtx { span: Span } => P0308,
        /// `op` (`-` or `!`) on `found`.
        UnaryType {
            op: &'static str,
            found: Ty,
            span: Span,
        } => P0402,
        RunLengths {
            left: u32,
            right: u32,
            span: Span,
            right_span: Span,
        } => P0505,
        /// `left op right`.
        OperandTypes {
            left: ScalarTy,
            op: &'static str,
            right: ScalarTy,
            span: Span,
            left_span: Span,
            right_span: Span,
        } => P0400,
        /// `op` on operands of `ty`.
        BinaryType {
            op: &'static str,
            ty: ScalarTy,
            span: Span,
        } => P0402,
        /// An operator or built-in (`what`, as written: `` `+` ``,
        /// `` `sqrt` ``) on the 8-bit float `ty`, which has none.
        F8Operation {
            what: String,
            ty: ScalarTy,
            span: Span,
        } => P0473,
        /// `to(x)` with `x` an f64: PTX converts to 8-bit floats only from
        /// f32 and f16/bf16.
        F8FromF64 { to: ScalarTy, span: Span } => P0473,
    }
}

impl TypeError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use TypeError::*;
        let code = self.code();
        match self {
            ExprTooDeep { inlined, span } => code
                .error(format!("expression nests too deep{}", after_inlining(inlined)))
                .primary(span, format!("more than {MAX_EXPR_DEPTH} levels deep"))
                .note("split the computation with `let`"),
            TooManyExprs { inlined, span } => code
                .error(format!(
                    "the kernel has more than {MAX_EXPR_NODES} expressions{}",
                    after_inlining(inlined)
                ))
                .primary(span, "the limit is reached here")
                .note("split the kernel, or compute repeated values once with `let`"),
            ExprType {
                what,
                want,
                found,
                span,
            } => code
                .error(format!("{what} must be {}, found {}", want.name(), ty_name(found)))
                .primary(span, format!("this is {}", ty_name(found)))
                .note(conversion_note(want)),
            RunNotScalar { found, span } => code
                .error(format!("expected a scalar, found {}", ty_name(found)))
                .primary(span, "a run is not a value on its own")
                .note("use a run inside `sum(...)`, `elem(run, i)`, `word(run, i)` or store it with `A[r, k :+ L] = run`"),
            IntLiteralRange { value, ty, span } => code
                .error(format!("the literal {value} does not fit in {}", ty.name()))
                .primary(span, format!("out of range for {}", ty.name())),
            FloatLiteralForInt { ty, span } => code
                .error(format!("a float literal where {} is needed", ty.name()))
                .primary(span, format!("expected {}", ty.name()))
                .note(format!(
                    "write an integer, or convert with `{}(...)`",
                    ty.name()
                )),
            FloatLiteralRange {
                text,
                ty,
                largest,
                span,
            } => code
                .error(format!(
                    "the literal {text} does not fit in {} ({})",
                    ty.name(),
                    if ty.is_f8() {
                        "8-bit floats saturate to their largest finite value"
                    } else {
                        "it would become infinity"
                    }
                ))
                .primary(span, format!("out of range for {}", ty.name()))
                .note(format!("the largest finite {} is {largest}", ty.name())),
            LocalNotValue { name, array, span } => {
                let (kind, label) = if array {
                    ("register array", "a register array")
                } else {
                    ("tile", "a shared tile")
                };
                code.error(format!("the {kind} `{name}` is not a value"))
                    .primary(span, label)
                    .note(format!("read it with a subscript, as in `{name}[0, i]`"))
            }
            TensorNotValue { name, span } => code
                .error(format!("the tensor `{name}` is not a value"))
                .primary(span, "a tensor")
                .note(format!("read it with a subscript, as in `{name}[i, j]`")),
            GridName { name, span } => code
                .error(format!("`@grid` cannot use `{name}`"))
                .primary(span, "not a dim or an autotuned constant")
                .note("`@grid` is computed before the launch from dims, constants and ctx.threads/ctx.warps"),
            UnknownName { name, span } => code
                .error(format!("cannot find `{name}` in this scope"))
                .primary(span, "not declared"),
            GridCtx { span } => code
                .error("`@grid` can only use dims, constants and ctx.threads/ctx.warps")
                .primary(span, "not known before the launch"),
            UnaryType { op, found, span } => code
                .error(format!("`{op}` does not apply to {}", ty_name(found)))
                .primary(span, format!("this is {}", ty_name(found))),
            RunLengths {
                left,
                right,
                span,
                right_span,
            } => code
                .error(format!("runs of different lengths: {left} and {right}"))
                .primary(span, format!("a run of {left}"))
                .secondary(right_span, format!("a run of {right}"))
                .note("elementwise run expressions combine runs of one length"),
            OperandTypes {
                left,
                op,
                right,
                span,
                left_span,
                right_span,
            } => code
                .error(format!(
                    "mismatched types: {} {op} {}",
                    left.name(),
                    right.name()
                ))
                .primary(span, "the operands of a binary operator must have one type")
                .secondary(left_span, format!("this is {}", left.name()))
                .secondary(right_span, format!("this is {}", right.name()))
                .note(format!(
                    "convert one side explicitly, as in `{}(...)`",
                    left.name()
                )),
            BinaryType { op, ty, span } => code
                .error(format!("`{op}` does not apply to {}", ty.name()))
                .primary(span, format!("operands of type {}", ty.name())),
            F8Operation { what, ty, span } => code
                .error(format!(
                    "{what} does not apply to {}: 8-bit floats are stored, converted and multiplied by `dot`, not computed with",
                    ty.name()
                ))
                .primary(span, format!("operands of type {}", ty.name()))
                .note(format!(
                    "convert first, compute in f32 (or f16), and convert back: as in `{t}(f32(a) * s)`",
                    t = ty.name()
                )),
            F8FromF64 { to, span } => code
                .error(format!("f64 does not convert to {} directly", to.name()))
                .primary(span, "an f64")
                .note(format!(
                    "PTX converts to 8-bit floats only from f32 and f16; write `{}(f32(x))` (it rounds twice: to f32, then to {})",
                    to.name(),
                    to.name()
                )),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<TypeError> {
        use TypeError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            ExprTooDeep {
                inlined: true,
                span,
            },
            TooManyExprs {
                inlined: false,
                span,
            },
            ExprType {
                what: name(),
                want: ScalarTy::I32,
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            RunNotScalar {
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            IntLiteralRange {
                value: 300,
                ty: ScalarTy::I8,
                span,
            },
            FloatLiteralForInt {
                ty: ScalarTy::I32,
                span,
            },
            FloatLiteralRange {
                text: "1e39".into(),
                ty: ScalarTy::F32,
                largest: "3.4028235e38",
                span,
            },
            LocalNotValue {
                name: name(),
                array: true,
                span,
            },
            TensorNotValue { name: name(), span },
            GridName { name: name(), span },
            UnknownName { name: name(), span },
            GridCtx { span },
            UnaryType {
                op: "!",
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            RunLengths {
                left: 4,
                right: 8,
                span,
                right_span: span,
            },
            OperandTypes {
                left: ScalarTy::F32,
                op: "+",
                right: ScalarTy::I32,
                span,
                left_span: span,
                right_span: span,
            },
            BinaryType {
                op: "&",
                ty: ScalarTy::F32,
                span,
            },
            F8Operation {
                what: "`+`".into(),
                ty: ScalarTy::F8E4M3,
                span,
            },
            F8FromF64 {
                to: ScalarTy::F8E5M2,
                span,
            },
        ]
    }
}

/// The end of P0211's message: fns are named only when one was inlined.
fn after_inlining(inlined: bool) -> &'static str {
    if inlined {
        " after inlining fns"
    } else {
        ""
    }
}
