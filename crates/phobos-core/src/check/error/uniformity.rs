//! The errors of `check/uniformity.rs` (where collectives and tiles may
//! run): their codes, and the one place their messages, labels and notes
//! are written. [`super::CheckError`] wraps them.

use crate::ast::Span;
use crate::diag::{Code, Diagnostic};

/// The control that makes a collective or a tile operation vary
/// (uniformity.rs), as its diagnostic's secondary labels show it.
#[derive(Clone, Debug, PartialEq)]
pub struct VaryingCause {
    /// What the control differs between: "lanes" or "warps".
    pub between: &'static str,
    /// The condition, loop, guard or early exit.
    pub span: Span,
    pub control: Control,
    /// Why the control varies, when a local or a load says so.
    pub origin: Option<Origin>,
}

/// The kind of control of a [`VaryingCause`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Control {
    Loop,
    Cond,
    /// The left side of `&&` or `||`.
    Guard(&'static str),
    /// `break`, `continue` or `return` taken under varying control;
    /// `because` is that condition (`false`) or loop (`true`).
    Exit {
        word: &'static str,
        because: Option<(Span, bool)>,
    },
}

/// Why the control of a [`VaryingCause`] varies.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// The local `name` got a varying value at `span` (assigned under
    /// varying control, when `under_control`).
    Assigned {
        name: String,
        span: Span,
        under_control: bool,
    },
    /// A load at `span` of `name`, which the kernel writes.
    WrittenLoad { name: String, span: Span },
}

impl VaryingCause {
    /// `d` with the cause's secondary labels.
    fn label(self, d: Diagnostic) -> Diagnostic {
        let between = self.between;
        let what = match self.control {
            Control::Loop => format!("the bounds of this loop differ between {between}"),
            Control::Cond => format!("this condition differs between {between}"),
            Control::Guard(op) => format!(
                "this left side of `{op}` differs between {between}, and the right side runs only where it {}",
                if op == "&&" { "holds" } else { "does not hold" }
            ),
            Control::Exit { word, .. } => format!(
                "some {between} leave here with `{word}`, so not all of them reach what follows"
            ),
        };
        let mut d = d.secondary(self.span, what);
        if let Control::Exit {
            because: Some((span, is_loop)),
            ..
        } = self.control
        {
            let why = if is_loop {
                format!("the bounds of this loop differ between {between}")
            } else {
                format!("this condition differs between {between}")
            };
            d = d.secondary(span, why);
        }
        match self.origin {
            Some(Origin::Assigned {
                name,
                span,
                under_control,
            }) => {
                let why = if under_control {
                    format!("`{name}` differs between {between} because it is assigned here, under control that does")
                } else {
                    format!("`{name}` gets a value here that differs between {between}")
                };
                d.secondary(span, why)
            }
            Some(Origin::WrittenLoad { name, span }) => d.secondary(
                span,
                format!("this kernel writes `{name}`, so threads can read different values here"),
            ),
            None => d,
        }
    }
}

pass_error! {
    /// An error of `check/uniformity.rs`: where collectives and tiles may run.
    pub enum UniformityError {
        /// `what` (a shuffle or lane collective) under control that
        /// differs between the lanes of a warp. `warp_hint`: the control
        /// varies only through `ctx.thread` taken whole, so `ctx.warp` may be
        /// what was meant.
        LaneCollectiveVarying {
            what: String,
            span: Span,
            cause: VaryingCause,
            warp_hint: bool,
        } => P0700,
        /// `what` (a CTA collective) under control that is not uniform.
        CtaCollectiveVarying {
            what: String,
            span: Span,
            cause: VaryingCause,
        } => P0701,
        /// `what` (a tile copy or store) under control that is not
        /// uniform.
        TileVarying {
            what: String,
            span: Span,
            cause: VaryingCause,
        } => P0702,
        /// The start of `what` differs between `between` ("lanes" or
        /// "warps").
        TileStartVarying {
            what: String,
            between: &'static str,
            span: Span,
        } => P0703,
        /// A CTA collective on the right of `op` (`&&` or `||`).
        CtaCollectiveGuarded {
            op: &'static str,
            span: Span,
            left: Span,
        } => P0704,
        /// An epilogue's value differs between `between` ("lanes" or
        /// "warps").
        EpilogueVarying { between: &'static str, span: Span } => P0459,
    }
}

impl UniformityError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use UniformityError::*;
        let code = self.code();
        match self {
            LaneCollectiveVarying {
                what,
                span,
                cause,
                warp_hint,
            } => {
                let d = code
                    .error(format!("{what} needs every lane of its warp"))
                    .primary(span, "every lane of the warp must reach this");
                let d = cause.label(d)
                    .note("a shuffle or lane collective needs control that is the same across a warp; move it out of the `if` or loop, to where every lane reaches it, and use its result under the condition");
                if warp_hint {
                    d.note(
                        "`ctx.thread` differs between the lanes of a warp; to pick whole warps, use \
                         `ctx.warp` (the warp's index in the CTA, `ctx.thread / 32`), which is the same \
                         in every lane: `ctx.warp < 2` rather than `ctx.thread < 64`",
                    )
                } else {
                    d
                }
            }
            CtaCollectiveVarying { what, span, cause } => {
                let d = code
                    .error(format!("{what} needs uniform control"))
                    .primary(span, "every thread of the CTA must reach this");
                cause.label(d)
                    .note("a CTA collective has three barriers that every thread of the CTA waits at; move it out of the `if` or loop, to where every thread reaches it, and use its result there")
            }
            TileVarying { what, span, cause } => {
                let d = code
                    .error(format!("{what} needs uniform control"))
                    .primary(span, format!("{what} is done by every thread of the CTA together"));
                cause.label(d).note(
                    "move it out of the `if` or loop, to where every thread of the CTA reaches it",
                )
            }
            TileStartVarying { what, between, span } => code
                .error(format!("the start of {what} must be the same in the whole CTA"))
                .primary(span, format!("this differs between {between}"))
                .note("a tile is one box for the whole CTA: compute its start from ctx.block, dims and constants"),
            CtaCollectiveGuarded { op, span, left } => code
                .error(format!("a CTA collective on the right of `{op}`"))
                .primary(span, "this would run only where the left side allows")
                .secondary(left, format!("the left side of `{op}`"))
                .note("a CTA collective is computed before the statement that holds it, by every thread; bind it with `let` before the condition and use the name here"),
            EpilogueVarying { between, span } => code
                .error("the values an epilogue combines must be the same in the whole CTA")
                .primary(span, format!("this differs between {between}"))
                .note("an element's value may depend on the element and on tiles of the accumulator's shape; compute anything else from ctx.block, dims, parameters and constants"),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<UniformityError> {
        use UniformityError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            LaneCollectiveVarying {
                what: "`sum<over ctx.lane>`".into(),
                span,
                cause: VaryingCause {
                    between: "lanes",
                    span,
                    control: Control::Cond,
                    origin: Some(Origin::Assigned {
                        name: name(),
                        span,
                        under_control: true,
                    }),
                },
                warp_hint: true,
            },
            CtaCollectiveVarying {
                what: "`sum<over ctx.thread>`".into(),
                span,
                cause: VaryingCause {
                    between: "warps",
                    span,
                    control: Control::Exit {
                        word: "break",
                        because: Some((span, true)),
                    },
                    origin: Some(Origin::WrittenLoad { name: name(), span }),
                },
            },
            TileVarying {
                what: "a tile copy".into(),
                span,
                cause: VaryingCause {
                    between: "lanes",
                    span,
                    control: Control::Guard("&&"),
                    origin: None,
                },
            },
            TileStartVarying {
                what: "a tile copy".into(),
                between: "lanes",
                span,
            },
            CtaCollectiveGuarded {
                op: "||",
                span,
                left: span,
            },
            EpilogueVarying {
                between: "lanes",
                span,
            },
        ]
    }
}
