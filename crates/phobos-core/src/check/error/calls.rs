//! The errors of `check/calls.rs` (built-ins and fn calls): their codes,
//! and the one place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::{ScalarTy, Span};
use crate::check::cx::{elem_of, ty_name, INLINE_BUDGET, MAX_INLINE_DEPTH};
use crate::diag::{Code, Diagnostic};
use crate::hir::Ty;

pass_error! {
    /// An error of `check/calls.rs`: built-ins and fn calls.
    pub enum CallError {
        StoreAsValue { span: Span } => P0412,
        /// `name` (a collective or `shfl`) without `<...>`.
        NoConfig { name: String, span: Span } => P0601,
        /// `callee` takes `want` arguments. `reduce_hint`: the callee is
        /// `reduce`, whose second argument is a fn.
        Arity {
            callee: String,
            want: usize,
            found: usize,
            span: Span,
            reduce_hint: bool,
        } => P0204,
        /// A conversion to `to` with other than one argument.
        ConvertArity {
            to: ScalarTy,
            found: usize,
            span: Span,
        } => P0204,
        ConvertToBool { from: ScalarTy, span: Span } => P0404,
        /// A built-in's arguments of two types.
        ArgTypes {
            first: Option<ScalarTy>,
            found: Ty,
            span: Span,
        } => P0400,
        /// `callee` takes `kind` ("floats" or "integers").
        MathArg {
            callee: String,
            kind: &'static str,
            found: ScalarTy,
            span: Span,
        } => P0407,
        /// `what` must be a packed word.
        WordArg { what: String, found: Ty, span: Span } => P0407,
        PopcountArg { found: Ty, span: Span } => P0407,
        SumOfNonRun { found: Ty, span: Span } => P0506,
        /// `what` (an element or word index) outside `0..limit`.
        RunIndexRange {
            what: String,
            index: i128,
            limit: u32,
            span: Span,
        } => P0507,
        /// `what` is not a constant.
        RunIndexNotConstant { what: String, span: Span } => P0507,
        /// `elem`/`word` (`callee`) of something that is not a run.
        ElemOfNonRun {
            callee: String,
            found: Ty,
            span: Span,
        } => P0409,
        /// `word` of a run of `elem`.
        WordOfNonBytes { elem: ScalarTy, span: Span } => P0508,
        /// `word` of a run of `len` elements.
        WordOfRagged { len: u32, span: Span } => P0508,
        /// A barrier call (`__syncthreads()`...).
        BarrierCall { name: String, span: Span } => P0205,
        /// Inlining `name` exhausted the depth or the budget.
        InlineExhausted { name: String, span: Span } => P0211,
    }
}

impl CallError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use CallError::*;
        let code = self.code();
        match self {
            StoreAsValue { span } => code
                .error("`store(run, i, v)` is a statement, not a value")
                .primary(span, "used as a value"),
            NoConfig { name, span } => code
                .error(format!("`{name}` needs its configuration in angle brackets"))
                .primary(span, "no `<...>`")
                .note(format!(
                    "write `{name}<over ctx.lane>(...)`, or `shfl<xor 1>(v)` for a shuffle"
                )),
            Arity {
                callee,
                want,
                found,
                span,
                reduce_hint,
            } => {
                let d = code
                    .error(format!(
                        "`{callee}` takes {want} argument{}, found {found}",
                        if want == 1 { "" } else { "s" }
                    ))
                    .primary(span, format!("expected {want}"));
                if reduce_hint {
                    d.note("write `reduce<over ctx.lane>(x, f)` with a `fn f(a, b) = ...`")
                } else {
                    d
                }
            }
            ConvertArity { to, found, span } => code
                .error(format!("`{}(...)` converts one value, found {found}", to.name()))
                .primary(span, "expected one argument"),
            ConvertToBool { from, span } => code
                .error(format!("cannot convert {} to bool", from.name()))
                .primary(span, "no conversion to bool")
                .note("compare instead, as in `x != 0`"),
            ArgTypes { first, found, span } => {
                // Runs and scalars mix (a scalar is broadcast): the
                // element types must agree.
                let t0 = first.map(ScalarTy::name).unwrap_or_default();
                let t1 = elem_of(found).map(ScalarTy::name).unwrap_or_default();
                code.error(format!("mismatched argument types: {t0} and {t1}"))
                    .primary(
                        span,
                        format!("this is {}, the first argument is {t0}", ty_name(found)),
                    )
                    .note("the arguments of this built-in must have one type")
            }
            MathArg {
                callee,
                kind,
                found,
                span,
            } => code
                .error(format!("`{callee}` takes {kind}, found {}", found.name()))
                .primary(span, format!("called with {}", found.name())),
            WordArg { what, found, span } => code
                .error(format!(
                    "{what} must be a packed word, i32 or u32, found {}",
                    ty_name(found)
                ))
                .primary(span, format!("this is {}", ty_name(found)))
                .note("`word(run, i)` packs four bytes of an i8 or u8 run into one word"),
            PopcountArg { found, span } => code
                .error(format!("`popcount` takes an integer, found {}", ty_name(found)))
                .primary(span, "not an integer"),
            SumOfNonRun { found, span } => code
                .error(format!("`sum(e)` sums a run of numbers, found {}", ty_name(found)))
                .primary(span, "not a run of numbers")
                .note("a run is a slice with one span, as in `sum(W[row, k :+ 4] * x[0, k :+ 4])`; to fold across threads write `sum<over ctx.lane>(x)`"),
            RunIndexRange {
                what,
                index,
                limit,
                span,
            } => code
                .error(format!("{what} {index} is out of range"))
                .primary(span, format!("must be from 0 to {}", limit.saturating_sub(1))),
            RunIndexNotConstant { what, span } => code
                .error(format!("{what} must be a compile-time constant"))
                .primary(span, "not a constant")
                .note("a run lives in registers, so its elements are picked at compile time"),
            ElemOfNonRun {
                callee,
                found,
                span,
            } => code
                .error(format!("`{callee}` takes a run, found {}", ty_name(found)))
                .primary(span, "not a run")
                .note("a run is a slice with one span, as in `A[0, k :+ 16]`"),
            WordOfNonBytes { elem, span } => code
                .error(format!("`word` packs bytes, found a run of {}", elem.name()))
                .primary(span, "not an i8 or u8 run"),
            WordOfRagged { len, span } => code
                .error(format!(
                    "`word` needs a run whose length is a multiple of 4, found {len}"
                ))
                .primary(span, format!("a run of {len}")),
            BarrierCall { name, span } => code
                .error(format!(
                    "Phobos has no `{name}()`: the compiler places barriers itself"
                ))
                .primary(span, "remove this call")
                .note("the compiler puts a CTA barrier wherever threads read tile elements that other threads wrote, or overwrite elements others read, and a warp is synchronized by each shuffle and collective; `phobos report` lists every barrier it placed and why"),
            InlineExhausted { name, span } => code
                .error(format!("inlining `{name}` goes too deep or grows too large"))
                .primary(span, "in this call")
                .note(format!(
                    "fn calls may nest {MAX_INLINE_DEPTH} deep and inline {INLINE_BUDGET} calls per kernel"
                )),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<CallError> {
        use CallError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            StoreAsValue { span },
            NoConfig { name: name(), span },
            Arity {
                callee: "reduce".into(),
                want: 2,
                found: 1,
                span,
                reduce_hint: true,
            },
            ConvertArity {
                to: ScalarTy::F32,
                found: 2,
                span,
            },
            ConvertToBool {
                from: ScalarTy::I32,
                span,
            },
            ArgTypes {
                first: Some(ScalarTy::F32),
                found: Ty::Scalar(ScalarTy::I32),
                span,
            },
            MathArg {
                callee: "sqrt".into(),
                kind: "floats",
                found: ScalarTy::I32,
                span,
            },
            WordArg {
                what: name(),
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            PopcountArg {
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            SumOfNonRun {
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            RunIndexRange {
                what: "the element index".into(),
                index: 9,
                limit: 4,
                span,
            },
            RunIndexNotConstant {
                what: "the element index".into(),
                span,
            },
            ElemOfNonRun {
                callee: "elem".into(),
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            WordOfNonBytes {
                elem: ScalarTy::F32,
                span,
            },
            WordOfRagged { len: 6, span },
            BarrierCall {
                name: "__syncthreads".into(),
                span,
            },
            InlineExhausted { name: name(), span },
        ]
    }
}
