//! Every error the checker reports, and the one place that turns each into
//! a [`Diagnostic`]: its code, message, labels and notes. The passes build
//! a [`CheckError`] with the spans and the data its message needs and hand
//! it to `Cx::report` (or push it converted); they never write a message
//! themselves. `Cx::report` adds one thing every error shares: a label at
//! each `fn` call being inlined.
//!
//! A code has several variants when its messages differ. The variants are
//! grouped by the pass that reports them.

use super::cx::MAX_TOTAL_EXPR_NODES;
use super::header::MAX_VARIANTS;
use crate::ast::Span;
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

#[derive(Clone, Debug, PartialEq)]
pub enum CheckError {
    // ---- check.rs: items and whole kernels ----
    /// P0201: a second kernel of one name.
    KernelTwice {
        name: String,
        span: Span,
        first: Span,
    },
    /// P0311: all variants together have too many expressions.
    TooMuchTuning {
        variants: usize,
        nodes: usize,
        total: usize,
        span: Span,
    },
    /// P0308: `@grid` computes what the host cannot.
    GridNotHost { span: Span },

    // ---- header.rs: parameters, dims and attributes ----
    /// P0307.
    AttrTwice {
        key: &'static str,
        span: Span,
        first: Span,
    },
    /// P0301.
    NoLaunch { kernel: String, span: Span },
    /// P0311: more than [`MAX_VARIANTS`] combinations.
    TooManyVariants { combos: usize, span: Span },
    /// P0202: a parameter, or a dim, named like an earlier parameter or dim.
    ParamTwice { name: String, span: Span },
    /// P0202: a dim named like a parameter.
    DimNamedLikeParam { name: String, span: Span },
    /// P0203.
    ZeroDim { span: Span },
    /// P0308.
    GridCount { found: usize, span: Span },
    /// P0300.
    UnknownAttr { name: String, span: Span },
    /// P0304.
    AlignedNotDim { name: String, span: Span },
    /// P0305.
    AlignedNotPositive { span: Span },
    /// P0309.
    AutotuneHere { name: String, span: Span },
    /// P0306: a constant value that cannot be a candidate.
    AutotuneValue {
        name: String,
        why: BadTuneValue,
        span: Span,
    },
    /// P0306.
    AutotuneNotConstant { span: Span },
    /// P0310.
    AutotuneNoValues { name: String, span: Span },
    /// P0302.
    LaunchNotWarps { threads: i64, span: Span },
    /// P0303.
    LaunchNotConstant { span: Span },

    // ---- collectives.rs: collective and shuffle configuration ----
    /// P0609.
    ConfigTwice {
        key: &'static str,
        span: Span,
        first: Span,
    },
    /// P0616: `key` (from, xor, down, up) on collective `op`.
    ShuffleConfigOnCollective {
        key: &'static str,
        op: String,
        span: Span,
    },
    /// P0601.
    NoOver { op: String, span: Span },
    /// P0602.
    CtaWidth { span: Span, over: Span },
    /// P0600.
    BadOver { span: Span },
    /// P0604.
    WidthNotConstant { span: Span },
    /// P0603.
    WidthNotPowerOfTwo { width: i128, span: Span },
    /// P0605.
    WidthAboveWarp { width: i128, span: Span },
    /// P0607: `any`/`all` of a `found` value.
    AnyAllNotBool { found: &'static str, span: Span },
    /// P0613: `op` of a condition.
    FoldOfBool { op: String, span: Span },
    /// P0615: a collective's value of type `found`.
    CollectiveOfRun { found: String, span: Span },
    /// P0612: the combine is not a fn of two parameters.
    CombineNotFn { span: Span },
    /// P0612: `name`'s body has type `found`, not `elem`.
    CombineType {
        name: String,
        elem: &'static str,
        found: String,
        span: Span,
        body: Span,
    },
    /// P0610.
    ShuffleOver { span: Span },
    /// P0606: `given` are the modes written, as `` `xor` ``.
    ShuffleModes { given: Vec<String>, span: Span },
    /// P0204.
    ShuffleArgs { found: usize, span: Span },
    /// P0608.
    XorPastWidth { mask: i128, width: u32, span: Span },

    // ---- uniformity.rs: where collectives and tiles may run ----
    /// P0700: `what` (a shuffle or lane collective) under control that
    /// differs between the lanes of a warp. `warp_hint`: the control
    /// varies only through `ctx.thread` taken whole, so `ctx.warp` may be
    /// what was meant.
    LaneCollectiveVarying {
        what: String,
        span: Span,
        cause: VaryingCause,
        warp_hint: bool,
    },
    /// P0701: `what` (a CTA collective) under control that is not uniform.
    CtaCollectiveVarying {
        what: String,
        span: Span,
        cause: VaryingCause,
    },
    /// P0702: `what` (a tile copy or store) under control that is not
    /// uniform.
    TileVarying {
        what: String,
        span: Span,
        cause: VaryingCause,
    },
    /// P0703: the start of `what` differs between `between` ("lanes" or
    /// "warps").
    TileStartVarying {
        what: String,
        between: &'static str,
        span: Span,
    },
    /// P0704: a CTA collective on the right of `op` (`&&` or `||`).
    CtaCollectiveGuarded {
        op: &'static str,
        span: Span,
        left: Span,
    },
    //@@variants
}

impl CheckError {
    pub fn code(&self) -> Code {
        use CheckError::*;
        match self {
            KernelTwice { .. } => Code::P0201,
            TooMuchTuning { .. } | TooManyVariants { .. } => Code::P0311,
            GridNotHost { .. } | GridCount { .. } => Code::P0308,
            AttrTwice { .. } => Code::P0307,
            NoLaunch { .. } => Code::P0301,
            ParamTwice { .. } | DimNamedLikeParam { .. } => Code::P0202,
            ZeroDim { .. } => Code::P0203,
            UnknownAttr { .. } => Code::P0300,
            AlignedNotDim { .. } => Code::P0304,
            AlignedNotPositive { .. } => Code::P0305,
            AutotuneHere { .. } => Code::P0309,
            AutotuneValue { .. } | AutotuneNotConstant { .. } => Code::P0306,
            AutotuneNoValues { .. } => Code::P0310,
            LaunchNotWarps { .. } => Code::P0302,
            LaunchNotConstant { .. } => Code::P0303,
            ConfigTwice { .. } => Code::P0609,
            ShuffleConfigOnCollective { .. } => Code::P0616,
            NoOver { .. } => Code::P0601,
            CtaWidth { .. } => Code::P0602,
            BadOver { .. } => Code::P0600,
            WidthNotConstant { .. } => Code::P0604,
            WidthNotPowerOfTwo { .. } => Code::P0603,
            WidthAboveWarp { .. } => Code::P0605,
            AnyAllNotBool { .. } => Code::P0607,
            FoldOfBool { .. } => Code::P0613,
            CollectiveOfRun { .. } => Code::P0615,
            CombineNotFn { .. } | CombineType { .. } => Code::P0612,
            ShuffleOver { .. } => Code::P0610,
            ShuffleModes { .. } => Code::P0606,
            ShuffleArgs { .. } => Code::P0204,
            XorPastWidth { .. } => Code::P0608,
            LaneCollectiveVarying { .. } => Code::P0700,
            CtaCollectiveVarying { .. } => Code::P0701,
            TileVarying { .. } => Code::P0702,
            TileStartVarying { .. } => Code::P0703,
            CtaCollectiveGuarded { .. } => Code::P0704,
            //@@codes
        }
    }

    pub fn into_diagnostic(self) -> Diagnostic {
        use CheckError::*;
        let code = self.code();
        match self {
            KernelTwice { name, span, first } => code
                .error(format!("kernel `{name}` is defined twice"))
                .primary(span, "second definition")
                .secondary(first, "first definition"),
            TooMuchTuning {
                variants,
                nodes,
                total,
                span,
            } => code
                .error(format!(
                    "`@autotune` makes {variants} variants of a kernel of {nodes} expressions, \
                     {total} or more in all; the limit is {MAX_TOTAL_EXPR_NODES} for all variants together"
                ))
                .primary(span, format!("{variants} variants"))
                .note("tune fewer names or fewer values at once, or tune a smaller kernel"),
            GridNotHost { span } => code
                .error("`@grid` can only use dims, constants, + - * / %, cdiv, min and max")
                .primary(span, "computed before the launch, on the host"),

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
            //@@diags
        }
    }

    /// One error of each variant, so a test can see every checker code
    /// produced and rendered.
    pub fn examples() -> Vec<CheckError> {
        use CheckError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            KernelTwice {
                name: name(),
                span,
                first: span,
            },
            TooMuchTuning {
                variants: 2,
                nodes: 600_000,
                total: 1_200_000,
                span,
            },
            GridNotHost { span },
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
            //@@examples
        ]
    }
}

impl From<CheckError> for Diagnostic {
    fn from(e: CheckError) -> Diagnostic {
        e.into_diagnostic()
    }
}
