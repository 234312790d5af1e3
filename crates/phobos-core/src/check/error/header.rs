//! The errors of `check/header.rs` (parameters, dims and attributes): their
//! codes, and the one place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::Span;
use crate::check::header::MAX_VARIANTS;
use crate::diag::{Code, Diagnostic};

/// Why an `@autotune` value is refused (P0306).
#[derive(Clone, Debug, PartialEq)]
pub enum BadTuneValue {
    /// Outside `i32`.
    TooWide(i64),
    /// Below 1 for a dim.
    NotDimSize(i64),
    /// Given twice.
    Twice(i64),
}

pass_error! {
    /// An error of `check/header.rs`: parameters, dims and attributes.
    pub enum HeaderError {
        AttrTwice {
            key: &'static str,
            span: Span,
            first: Span,
        } => P0307,
        NoLaunch { kernel: String, span: Span } => P0301,
        /// More than [`MAX_VARIANTS`] combinations.
        TooManyVariants { combos: usize, span: Span } => P0311,
        /// A parameter, or a dim, named like an earlier parameter or dim.
        ParamTwice { name: String, span: Span } => P0202,
        /// A dim named like a parameter.
        DimNamedLikeParam { name: String, span: Span } => P0202,
        ZeroDim { span: Span } => P0203,
        /// A constant dim above `i32` (it was truncated in the PTX).
        DimTooWide { dim: u64, span: Span } => P0203,
        /// P0419 (a warning): an operation on constants the language leaves
        /// without a value (`1 / 0`, `1 << 32`), kept for run time.
        UndefinedConstant {
            text: String,
            why: crate::consteval::Undefined,
            span: Span,
        } => P0419,
        GridCount { found: usize, span: Span } => P0308,
        UnknownAttr { name: String, span: Span } => P0300,
        AlignedNotDim { name: String, span: Span } => P0304,
        AlignedNotPositive { span: Span } => P0305,
        AutotuneHere { name: String, span: Span } => P0309,
        /// A constant value that cannot be a candidate.
        AutotuneValue {
            name: String,
            why: BadTuneValue,
            span: Span,
        } => P0306,
        AutotuneNotConstant { span: Span } => P0306,
        AutotuneNoValues { name: String, span: Span } => P0310,
        LaunchNotWarps { threads: i64, span: Span } => P0302,
        LaunchNotConstant { span: Span } => P0303,
        MinCtas { ctas: Option<i64>, threads: i64, span: Span } => P0313,
    }
}

impl HeaderError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use HeaderError::*;
        let code = self.code();
        match self {
            AttrTwice { key, span, first } => code
                .error(format!("`@{key}` is given twice"))
                .primary(span, "second one here")
                .secondary(first, "first one here"),
            NoLaunch { kernel, span } => code
                .error(format!("kernel `{kernel}` has no `@launch`"))
                .primary(span, "the threads per CTA are not given")
                .note("write `@launch(128)` above the kernel: the threads per CTA, a multiple of 32 from 32 to 1024"),
            TooManyVariants { combos, span } => code
                .error(format!("`@autotune` makes {combos} variants"))
                .primary(span, format!("at most {MAX_VARIANTS} are allowed"))
                .note("tune fewer names or fewer values at once"),
            ParamTwice { name, span } => code
                .error(format!("`{name}` is declared twice"))
                .primary(span, "a second parameter or dim of this name"),
            DimNamedLikeParam { name, span } => code
                .error(format!("`{name}` is declared twice"))
                .primary(span, "a parameter already has this name"),
            ZeroDim { span } => code
                .error("a tensor dim cannot be 0")
                .primary(span, "an empty axis"),
            UndefinedConstant { text, why, span } => code
                .warning(format!("`{text}` has no defined value: {why}"))
                .primary(span, "both operands are constants")
                .note("the language leaves integer division by zero, the smallest signed value divided by -1, and a shift by a negative amount or by at least the type's width undefined"),
            DimTooWide { dim, span } => code
                .error(format!("the tensor dim {dim} does not fit in i32"))
                .primary(span, "above 2147483647")
                .note("a dim is from 1 to 2147483647: indices are 32-bit"),
            GridCount { found, span } => code
                .error(format!("`@grid` takes 1 to 3 expressions, found {found}"))
                .primary(span, "write `@grid(x)`, `@grid(x, y)` or `@grid(x, y, z)`"),
            UnknownAttr { name, span } => code
                .error(format!("unknown attribute `@{name}`"))
                .primary(span, "not an attribute")
                .note("the attributes are @launch, @aligned, @autotune and @grid"),
            AlignedNotDim { name, span } => code
                .error(format!("`@aligned` names `{name}`, which is not a dim"))
                .primary(span, "no tensor parameter has this dim")
                .note("`@aligned(K = 128)` says the named dim of a tensor parameter is a multiple of 128"),
            AlignedNotPositive { span } => code
                .error("an `@aligned` multiple must be a positive integer constant")
                .primary(span, "not a positive constant"),
            AutotuneHere { name, span } => code
                .error(format!("`{name}` cannot be autotuned here"))
                .primary(span, "already a parameter or an autotuned name")
                .note("autotune a dim of a tensor parameter or a new constant name"),
            AutotuneValue { name, why, span } => {
                let d = code.error(format!("`{name}` cannot be autotuned to this value"));
                match why {
                    BadTuneValue::TooWide(x) => d
                        .primary(span, format!("{x} does not fit in i32"))
                        .note("autotune values are 32-bit: from -2147483648 to 2147483647"),
                    BadTuneValue::NotDimSize(x) => d
                        .primary(span, format!("{x} is not a dim size"))
                        .note(format!(
                            "`{name}` is a dim of a tensor, so each value must be at least 1"
                        )),
                    BadTuneValue::Twice(x) => d
                        .primary(span, format!("{x} is given twice"))
                        .note("give each value once"),
                }
            }
            AutotuneNotConstant { span } => code
                .error("an `@autotune` value must be an integer constant")
                .primary(span, "not an integer constant"),
            AutotuneNoValues { name, span } => code
                .error(format!("`@autotune` gives `{name}` no values"))
                .primary(span, "needs at least one value, as in `K in [256, 512]`"),
            LaunchNotWarps { threads, span } => code
                .error(format!(
                    "`@launch({threads})` is not a multiple of 32 from 32 to 1024"
                ))
                .primary(span, "threads per CTA")
                .note("a CTA is whole warps of 32 threads, at most 1024 threads"),
            LaunchNotConstant { span } => code
                .error("`@launch` needs an integer constant")
                .primary(span, "not a constant")
                .note("use a number or an autotuned name, as in `@launch(128)`"),
            MinCtas {
                ctas: Some(c),
                threads,
                span,
            } => code
                .error(format!(
                    "`min_ctas = {c}` with {threads} threads per CTA is not 1 to 32 CTAs of at most {} threads in all",
                    super::super::header::MAX_THREADS_PER_SM
                ))
                .primary(span, "CTAs per SM")
                .note(format!(
                    "`min_ctas` asks ptxas to fit that many CTAs on one SM (`.minnctapersm`); no GPU runs more than {} threads on an SM",
                    super::super::header::MAX_THREADS_PER_SM
                )),
            MinCtas {
                ctas: None, span, ..
            } => code
                .error("`min_ctas` needs an integer constant")
                .primary(span, "not a constant")
                .note("use a number or an autotuned name, as in `@launch(256, min_ctas = 2)`"),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<HeaderError> {
        use HeaderError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            AttrTwice {
                key: "launch",
                span,
                first: span,
            },
            NoLaunch {
                kernel: name(),
                span,
            },
            TooManyVariants { combos: 300, span },
            ParamTwice { name: name(), span },
            DimNamedLikeParam { name: name(), span },
            ZeroDim { span },
            DimTooWide { dim: 1 << 40, span },
            UndefinedConstant {
                text: "1 / 0".to_string(),
                why: crate::consteval::Undefined::DivisionByZero,
                span,
            },
            GridCount { found: 4, span },
            UnknownAttr { name: name(), span },
            AlignedNotDim { name: name(), span },
            AlignedNotPositive { span },
            AutotuneHere { name: name(), span },
            AutotuneValue {
                name: name(),
                why: BadTuneValue::TooWide(1 << 40),
                span,
            },
            AutotuneValue {
                name: name(),
                why: BadTuneValue::NotDimSize(0),
                span,
            },
            AutotuneValue {
                name: name(),
                why: BadTuneValue::Twice(2),
                span,
            },
            AutotuneNotConstant { span },
            AutotuneNoValues { name: name(), span },
            LaunchNotWarps { threads: 33, span },
            LaunchNotConstant { span },
            MinCtas {
                ctas: Some(16),
                threads: 256,
                span,
            },
            MinCtas {
                ctas: None,
                threads: 256,
                span,
            },
        ]
    }
}
