//! The errors of `check/collectives.rs` (collective and shuffle
//! configuration): their codes, and the one place their messages, labels
//! and notes are written. [`super::CheckError`] wraps them.

use crate::ast::Span;
use crate::diag::{Code, Diagnostic};

pass_error! {
    /// An error of `check/collectives.rs`: collective and shuffle configuration.
    pub enum CollectiveError {
        ConfigTwice {
            key: &'static str,
            span: Span,
            first: Span,
        } => P0609,
        /// `key` (from, xor, down, up) on collective `op`.
        ShuffleConfigOnCollective {
            key: &'static str,
            op: String,
            span: Span,
        } => P0616,
        NoOver { op: String, span: Span } => P0601,
        CtaWidth { span: Span, over: Span } => P0602,
        BadOver { span: Span } => P0600,
        WidthNotConstant { span: Span } => P0604,
        WidthNotPowerOfTwo { width: i128, span: Span } => P0603,
        WidthAboveWarp { width: i128, span: Span } => P0605,
        /// `any`/`all` of a `found` value.
        AnyAllNotBool { found: &'static str, span: Span } => P0607,
        /// `op` of a condition.
        FoldOfBool { op: String, span: Span } => P0613,
        /// A collective's value of type `found`.
        CollectiveOfRun { found: String, span: Span } => P0615,
        /// The combine is not a fn of two parameters.
        CombineNotFn { span: Span } => P0612,
        /// `name`'s body has type `found`, not `elem`.
        CombineType {
            name: String,
            elem: &'static str,
            found: String,
            span: Span,
            body: Span,
        } => P0612,
        ShuffleOver { span: Span } => P0610,
        /// `given` are the modes written, as `` `xor` ``.
        ShuffleModes { given: Vec<String>, span: Span } => P0606,
        ShuffleArgs { found: usize, span: Span } => P0204,
        XorPastWidth { mask: i128, width: u32, span: Span } => P0608,
    }
}

impl CollectiveError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use CollectiveError::*;
        let code = self.code();
        match self {
            ConfigTwice { key, span, first } => code
                .error(format!("`{key}` is given twice"))
                .primary(span, "second one")
                .secondary(first, "first one"),
            ShuffleConfigOnCollective { key, op, span } => code
                .error(format!("`{key}` configures a shuffle, not a collective"))
                .primary(span, format!("`{op}` takes over and width"))
                .note("from, xor, down and up belong to `shfl<...>(v)`"),
            NoOver { op, span } => code
                .error("a collective needs over ctx.lane or over ctx.thread")
                .primary(span, "no `over`")
                .note(format!("write `{op}<over ctx.lane>(x)` to fold over the warp's lanes, `{op}<over ctx.thread>(x)` over the CTA")),
            CtaWidth { span, over } => code
                .error("a CTA collective takes no width")
                .primary(span, "a width")
                .secondary(over, "this folds over the whole CTA")
                .note("for pieces of a warp write `over ctx.lane, width w`"),
            BadOver { span } => code
                .error("over takes ctx.lane or ctx.thread")
                .primary(span, "nothing else is a group")
                .note("`over ctx.lane` folds over the lanes of a warp, `over ctx.thread` over the threads of the CTA"),
            WidthNotConstant { span } => code
                .error("width must fold to a constant")
                .primary(span, "not a compile-time constant")
                .note("use a number, an autotuned name or an expression of them"),
            WidthNotPowerOfTwo { width, span } => code
                .error("width must be a power of two")
                .primary(span, format!("{width} is not a power of two"))
                .note("width must fold to a constant power of two that divides ctx.lanes (32): 1, 2, 4, 8, 16 or 32"),
            WidthAboveWarp { width, span } => code
                .error("width must divide ctx.lanes (32)")
                .primary(span, format!("{width} lanes is more than a warp")),
            AnyAllNotBool { found, span } => code
                .error("any and all fold conditions")
                .primary(span, format!("this is {found}, not bool"))
                .note("compare to make a condition, as in `any<over ctx.lane>(x > 0.0)`"),
            FoldOfBool { op, span } => code
                .error(format!("`{op}` folds numbers, found bool"))
                .primary(span, "a condition")
                .note("fold conditions with `any` or `all`"),
            CollectiveOfRun { found, span } => code
                .error(format!(
                    "a collective moves one scalar per thread, found {found}"
                ))
                .primary(span, "not a scalar")
                .note("sum the thread's run first with `sum(run)`"),
            CombineNotFn { span } => code
                .error("reduce combines with a fn of two parameters")
                .primary(span, "not a `fn f(a, b)`")
                .note("declare `fn f(a, b) = max(a, b)` at the top level and write `reduce<over ctx.lane>(x, f)`"),
            CombineType {
                name,
                elem,
                found,
                span,
                body,
            } => code
                .error(format!(
                    "`{name}` must combine two {elem} into one, found {found}"
                ))
                .primary(span, "the combine fn")
                .secondary(body, format!("this is {found}")),
            ShuffleOver { span } => code
                .error("a shuffle takes no over")
                .primary(span, "a shuffle always moves values between the lanes of a warp")
                .note("use `width w` to shuffle within pieces of w lanes"),
            ShuffleModes { given, span } => {
                let label = match given.len() {
                    0 => "none of them given".to_string(),
                    _ => format!("{} given; choose one", given.join(" and ")),
                };
                code.error("a shuffle takes exactly one of from, xor, down and up")
                    .primary(span, label)
                    .note("`from s` reads lane s, `xor m` lane ^ m, `down d` lane + d, `up d` lane - d")
            }
            ShuffleArgs { found, span } => code
                .error(format!("`shfl` moves one value, found {found} arguments"))
                .primary(span, "expected one argument"),
            XorPastWidth { mask, width, span } => code
                .error(format!("shfl<xor {mask}> needs m below the width ({width})"))
                .primary(span, format!("lane ^ {mask} leaves the {width}-lane piece")),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<CollectiveError> {
        use CollectiveError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            ConfigTwice {
                key: "width",
                span,
                first: span,
            },
            ShuffleConfigOnCollective {
                key: "xor",
                op: name(),
                span,
            },
            NoOver { op: name(), span },
            CtaWidth { span, over: span },
            BadOver { span },
            WidthNotConstant { span },
            WidthNotPowerOfTwo { width: 3, span },
            WidthAboveWarp { width: 64, span },
            AnyAllNotBool { found: "f32", span },
            FoldOfBool { op: name(), span },
            CollectiveOfRun {
                found: "f32[4]".into(),
                span,
            },
            CombineNotFn { span },
            CombineType {
                name: name(),
                elem: "f32",
                found: "bool".into(),
                span,
                body: span,
            },
            ShuffleOver { span },
            ShuffleModes {
                given: vec![],
                span,
            },
            ShuffleArgs { found: 2, span },
            XorPastWidth {
                mask: 8,
                width: 8,
                span,
            },
        ]
    }
}
