//! Every error the checker reports, and the one place that turns each into
//! a [`Diagnostic`]: its code, message, labels and notes. The passes build
//! a [`CheckError`] with the spans and the data its message needs and hand
//! it to `Cx::report` (or push it converted); they never write a message
//! themselves. `Cx::report` adds one thing every error shares: a label at
//! each `fn` call being inlined.
//!
//! A code has several variants when its messages differ. The variants are
//! grouped by the pass that reports them.

use super::cx::{
    elem_of, ty_name, INLINE_BUDGET, MAX_EXPR_DEPTH, MAX_EXPR_NODES, MAX_INLINE_DEPTH,
    MAX_TOTAL_EXPR_NODES,
};
use super::header::MAX_VARIANTS;
use super::scratch::MAX_AXIS;
use super::stmts::MAX_UNROLL;
use super::subscripts::MAX_RUN;
use super::types::conversion_note;
use crate::ast::{ScalarTy, Span};
use crate::diag::{Code, Diagnostic};
use crate::hir::{AtomicOp, Ty, MAX_ARRAY_ELEMS};
use crate::mma::{self, FRAG_M, FRAG_N, MAX_ACC_REGS};

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
    /// P0203: a constant dim above `i32` (it was truncated in the PTX).
    DimTooWide { dim: u64, span: Span },
    /// P0419 (a warning): an operation on constants the language leaves
    /// without a value (`1 / 0`, `1 << 32`), kept for run time.
    UndefinedConstant {
        text: String,
        why: crate::consteval::Undefined,
        span: Span,
    },
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
    /// P0459: an epilogue's value differs between `between` ("lanes" or
    /// "warps").
    EpilogueVarying { between: &'static str, span: Span },

    // ---- atomics.rs: atomics and `fence()` ----
    /// P0401: `let name: declared = op(...)` where the element is `elem`.
    AtomicResultDeclared {
        name: String,
        declared: ScalarTy,
        op: AtomicOp,
        elem: ScalarTy,
        span: Span,
        decl: Span,
    },
    /// P0401: `name = op(...)` where `name` holds `holds`.
    AtomicResultAssigned {
        name: String,
        holds: Ty,
        op: AtomicOp,
        elem: ScalarTy,
        span: Span,
    },
    /// P0430: the atomic `op` inside an expression.
    AtomicInExpr { op: String, span: Span },
    /// P0430.
    FenceAsValue { span: Span },
    /// P0432: the target is not a subscript.
    AtomicNotElement { op: AtomicOp, span: Span },
    /// P0432: the target is an element of the register array `array`.
    AtomicOnArray {
        op: AtomicOp,
        array: String,
        span: Span,
    },
    /// P0432: the target is a span of `name`.
    AtomicOnSpan {
        op: AtomicOp,
        name: String,
        span: Span,
    },
    /// P0431: `op` on `name`, which holds `elem`.
    AtomicNotOnType {
        op: AtomicOp,
        name: String,
        elem: ScalarTy,
        span: Span,
    },

    // ---- scratch.rs: shared scratch tiles and partial fills ----
    /// P0401.
    ScratchTyped { span: Span },
    /// P0440.
    ScratchExtentRange { value: i128, span: Span },
    /// P0440.
    ScratchExtentNotConstant { span: Span },
    /// P0440.
    ScratchNoExtent { span: Span },
    /// P0441.
    ScratchInExpr { span: Span },
    /// P0509: a partial fill from something that is not a subscript.
    FillNotBox { span: Span },
    /// P0509: a partial fill from a box of a tile.
    FillFromTile { span: Span },
    /// P0509: a partial fill with `op=`.
    FillCompound { op: &'static str, span: Span },
    /// P0442: the box `start :+ len` outside axis `axis` (of `extent`) of
    /// the tile `name`.
    FillOutside {
        start: i128,
        len: u32,
        axis: usize,
        name: String,
        extent: i64,
        span: Span,
    },
    /// P0442.
    FillStartNotConstant { span: Span },
    /// P0509: the tensor box (`from`) and the tile box (`into`) differ.
    FillMismatch {
        from: (Vec<u32>, ScalarTy),
        into: (Vec<u32>, ScalarTy),
        span: Span,
    },

    // ---- subscripts.rs: tensors, tiles, runs ----
    /// P0510.
    NotSubscriptable { span: Span },
    /// P0500: `name` has `dims` dims and `found` subscripts.
    SubscriptCount {
        name: String,
        dims: usize,
        found: usize,
        span: Span,
    },
    /// P0501: a `what` ("run" or "tile") length out of range.
    SpanLenRange {
        what: String,
        value: i128,
        span: Span,
    },
    /// P0501: a `what` length that is not a constant; `text` is its source.
    SpanLenNotConstant {
        what: String,
        text: String,
        span: Span,
    },
    /// P0504.
    TilePoint { span: Span },
    /// P0502.
    FullDimUnknown {
        axis: usize,
        name: String,
        span: Span,
    },
    /// P0503.
    TileAsValue { span: Span },
    /// P0509: a tile copied from a tile.
    TileCopyFromTile { span: Span },
    /// P0401: a `value` stored into `name`, which holds `holds`
    /// (elements of `elem`).
    /// P0505: two runs of different lengths in one elementwise built-in.
    ArgRunLengths {
        first: u32,
        first_span: Span,
        len: u32,
        span: Span,
    },
    /// P0401: `select`'s condition neither bool nor a run of bool.
    SelectCondition { found: Ty, span: Span },
    /// P0409: a run assigned to a scalar variable.
    AssignRun {
        name: String,
        len: u32,
        elem: ScalarTy,
        span: Span,
    },
    /// P0409: a run stored into one element.
    StoreRunIntoElement {
        len: u32,
        name: String,
        elem: ScalarTy,
        span: Span,
    },
    /// P0505: a run stored into a run of another length.
    StoreRunLength {
        len: u32,
        want: u32,
        value: Span,
        span: Span,
    },
    StoreType {
        value: Ty,
        name: String,
        holds: Ty,
        elem: ScalarTy,
        span: Span,
    },
    /// P0509.
    TileStoreNotTile { span: Span },
    /// P0509.
    TileStoreIntoTile { span: Span },
    /// P0509: the tile (`tile`) and the target (`target`) differ.
    TileStoreMismatch {
        tile: (Vec<u32>, ScalarTy),
        target: (Vec<u32>, ScalarTy),
        span: Span,
    },

    // ---- arrays.rs: register arrays ----
    /// P0418.
    ArrayLet {
        name: String,
        elem: ScalarTy,
        span: Span,
    },
    /// P0401: the initial value of `name` (elements of `elem`) is `found`.
    ArrayInitType {
        name: String,
        elem: ScalarTy,
        found: Ty,
        span: Span,
        elem_span: Span,
    },
    /// P0416.
    ArrayNoDims { span: Span },
    /// P0416.
    ArrayDimRange { value: i128, span: Span },
    /// P0416: `text` is the dim's source.
    ArrayDimNotConstant { text: String, span: Span },
    /// P0416.
    ArrayTooLarge {
        name: String,
        elems: u64,
        span: Span,
    },
    /// P0418.
    ArraySpan { name: String, span: Span },
    /// P0417.
    ArrayIndexRange {
        index: i128,
        axis: usize,
        name: String,
        dim: i64,
        span: Span,
    },

    // ---- stmts.rs: statements ----
    /// P0415: `word` (`break` or `continue`) outside a loop.
    ExitOutsideLoop { word: &'static str, span: Span },
    /// P0401.
    TileCopyTyped { span: Span },
    /// P0401: `name` declared `declared` with a value of type `found`.
    DeclaredType {
        name: String,
        declared: ScalarTy,
        found: Ty,
        span: Span,
        decl: Span,
    },
    /// P0409: a run kept in a variable.
    RunInVariable { found: Ty, span: Span },
    /// P0207: the target is not a variable or a subscript.
    AssignToExpr { span: Span },
    /// P0207: `name` is a parameter, dim or constant.
    AssignToNonLocal { name: String, span: Span },
    /// P0207.
    AssignToLoopVar {
        name: String,
        span: Span,
        decl: Span,
    },
    /// P0207.
    AssignToArray {
        name: String,
        span: Span,
        decl: Span,
    },
    /// P0207.
    AssignToTile {
        name: String,
        span: Span,
        decl: Span,
    },
    /// P0207: a second assignment to a `let`.
    AssignTwice {
        name: String,
        span: Span,
        decl: Span,
    },
    /// P0401: `name` holds `holds`, the value is `value`.
    AssignType {
        name: String,
        holds: Ty,
        value: Ty,
        span: Span,
    },
    /// P0400: `name op= float` where `name` is `var name = literal`, an
    /// integer.
    FloatIntoIntLiteralVar {
        name: String,
        op: &'static str,
        holds: ScalarTy,
        value: ScalarTy,
        literal: u64,
        span: Span,
        literal_span: Span,
    },
    /// P0413.
    ZeroStep { span: Span },
    /// P0414: `unroll` on a loop that `break` or `continue` (at `span`)
    /// leaves.
    UnrollLeft { span: Span },
    /// P0414.
    UnrollRange { factor: u64, span: Span },
    /// P0414.
    UnrollStep { span: Span, step: Span },
    /// P0470: `stages S` whose count is not a constant from 2 to 4
    /// (`found` is `None` when it is not a constant).
    StagesCount { found: Option<i128>, span: Span },
    /// P0470: `stages` on a loop whose step is not a constant.
    StagesStep { span: Span, step: Span },
    /// P0470: `stages` together with `unroll` (at `unroll`).
    StagesUnroll { span: Span, unroll: Span },
    /// P0471: `stages` on a loop whose body copies no tile from a tensor.
    StagesNoCopy { span: Span },
    /// P0471: `stages` on a loop that a `break` or `return` (at `exit`)
    /// leaves.
    StagesLeft {
        span: Span,
        exit: Span,
        word: &'static str,
    },
    /// P0472: a tile copy of a staged loop that is not a statement of the
    /// loop's own body (it is under an `if` or an inner loop).
    StagedCopyNested { span: Span, stages: Span },
    /// P0472: a staged copy whose start uses the local `name`, which the
    /// loop computes, or (`None`) reads memory or other threads' values,
    /// at `cause`: the ring must compute it trips ahead.
    StagedCopyStart {
        name: Option<String>,
        span: Span,
        cause: Span,
        stages: Span,
    },
    /// P0472: a staged tile (`name`) written by another statement (at
    /// `span`) of the loop.
    StagedTileWritten {
        name: String,
        span: Span,
        copy: Span,
    },
    /// P0411.
    UselessExpr { span: Span },
    /// P0409: `store` into something that is not a subscript.
    StoreNotSubscript { span: Span },
    /// P0409: `store` into a subscript that is not a run.
    StoreNotRun { span: Span },
    /// P0507: `store`'s element index `index` outside a run of `len`.
    StoreIndexRange { index: i128, len: u32, span: Span },

    // ---- fns.rs: the fn items ----
    /// P0201.
    FnNamedLikeBuiltin { name: String, span: Span },
    /// P0201.
    FnTwice {
        name: String,
        span: Span,
        first: Span,
    },
    /// P0202.
    FnParamTwice { name: String, span: Span },
    /// P0206.
    FnAsValue { name: String, span: Span },
    /// P0200: a name in a fn body that is not a parameter.
    FnBodyUnknownName { name: String, span: Span },
    /// P0205: an unknown callee.
    UnknownFn { name: String, span: Span },
    /// P0210: the fn `path[0]` calls itself through `path[1..]`.
    Recursion { path: Vec<String>, span: Span },

    // ---- calls.rs: built-ins and fn calls ----
    /// P0412.
    StoreAsValue { span: Span },
    /// P0601: `name` (a collective or `shfl`) without `<...>`.
    NoConfig { name: String, span: Span },
    /// P0204: `callee` takes `want` arguments. `reduce_hint`: the callee is
    /// `reduce`, whose second argument is a fn.
    Arity {
        callee: String,
        want: usize,
        found: usize,
        span: Span,
        reduce_hint: bool,
    },
    /// P0204: a conversion to `to` with other than one argument.
    ConvertArity {
        to: ScalarTy,
        found: usize,
        span: Span,
    },
    /// P0404.
    ConvertToBool { from: ScalarTy, span: Span },
    /// P0400: a built-in's arguments of two types.
    ArgTypes {
        first: Option<ScalarTy>,
        found: Ty,
        span: Span,
    },
    /// P0407: `callee` takes `kind` ("floats" or "integers").
    MathArg {
        callee: String,
        kind: &'static str,
        found: ScalarTy,
        span: Span,
    },
    /// P0407: `what` must be a packed word.
    WordArg { what: String, found: Ty, span: Span },
    /// P0407.
    PopcountArg { found: Ty, span: Span },
    /// P0506.
    SumOfNonRun { found: Ty, span: Span },
    /// P0507: `what` (an element or word index) outside `0..limit`.
    RunIndexRange {
        what: String,
        index: i128,
        limit: u32,
        span: Span,
    },
    /// P0507: `what` is not a constant.
    RunIndexNotConstant { what: String, span: Span },
    /// P0409: `elem`/`word` (`callee`) of something that is not a run.
    ElemOfNonRun {
        callee: String,
        found: Ty,
        span: Span,
    },
    /// P0508: `word` of a run of `elem`.
    WordOfNonBytes { elem: ScalarTy, span: Span },
    /// P0508: `word` of a run of `len` elements.
    WordOfRagged { len: u32, span: Span },
    /// P0205: a barrier call (`__syncthreads()`...).
    BarrierCall { name: String, span: Span },
    /// P0211: inlining `name` exhausted the depth or the budget.
    InlineExhausted { name: String, span: Span },

    // ---- types.rs: expressions ----
    /// P0211: deeper than [`MAX_EXPR_DEPTH`]. `inlined`: fns were inlined.
    ExprTooDeep { inlined: bool, span: Span },
    /// P0211: more than [`MAX_EXPR_NODES`] expressions.
    TooManyExprs { inlined: bool, span: Span },
    /// P0401: `what` must be `want`.
    ExprType {
        what: String,
        want: ScalarTy,
        found: Ty,
        span: Span,
    },
    /// P0409: a run where a scalar is needed.
    RunNotScalar { found: Ty, span: Span },
    /// P0403.
    IntLiteralRange {
        value: i128,
        ty: ScalarTy,
        span: Span,
    },
    /// P0403.
    FloatLiteralForInt { ty: ScalarTy, span: Span },
    /// P0403: `text` rounds to infinity in `ty`, whose largest finite
    /// value is `largest`.
    FloatLiteralRange {
        text: String,
        ty: ScalarTy,
        largest: &'static str,
        span: Span,
    },
    /// P0408: a tile (or register array, `array`) used without subscript.
    LocalNotValue {
        name: String,
        array: bool,
        span: Span,
    },
    /// P0408.
    TensorNotValue { name: String, span: Span },
    /// P0308: `@grid` names what is not a dim or constant.
    GridName { name: String, span: Span },
    /// P0200.
    UnknownName { name: String, span: Span },
    /// P0308: `@grid` uses a `ctx` field known only in the kernel.
    GridCtx { span: Span },
    /// P0402: `op` (`-` or `!`) on `found`.
    UnaryType {
        op: &'static str,
        found: Ty,
        span: Span,
    },
    /// P0505.
    RunLengths {
        left: u32,
        right: u32,
        span: Span,
        right_span: Span,
    },
    /// P0400: `left op right`.
    OperandTypes {
        left: ScalarTy,
        op: &'static str,
        right: ScalarTy,
        span: Span,
        left_span: Span,
        right_span: Span,
    },
    /// P0402: `op` on operands of `ty`.
    BinaryType {
        op: &'static str,
        ty: ScalarTy,
        span: Span,
    },

    // ---- dot.rs: tensor cores (accumulator tiles and `dot`) ----
    /// P0450: the accumulator `name` declared with `let`.
    AccWithLet { name: String, span: Span },
    /// P0450: `var acc: T = zeros<...>[...]`.
    AccTyped { span: Span },
    /// P0451: an accumulator of `elem`.
    AccElem { elem: ScalarTy, span: Span },
    /// P0450: an extent that is not a constant from 1 to 65536.
    AccExtent { span: Span },
    /// P0450: `found` extents, not two.
    AccRank { found: usize, span: Span },
    /// P0452: `[rows, cols]` not a whole number of fragments.
    AccNotFragments { rows: u32, cols: u32, span: Span },
    /// P0452: `[rows, cols]` that no grid of `warps` warps divides.
    AccWarpSplit {
        rows: u32,
        cols: u32,
        warps: u32,
        span: Span,
    },
    /// P0453: `regs` registers per thread; each warp owns
    /// `[warp_rows, warp_cols]`.
    AccTooManyRegs {
        rows: u32,
        cols: u32,
        regs: u32,
        warps: u32,
        warp_rows: u32,
        warp_cols: u32,
        span: Span,
    },
    /// P0450: `zeros<...>[...]` inside an expression.
    ZerosInExpr { span: Span },
    /// P0454: the accumulator `name` (declared at `decl`) assigned a `dot`
    /// other than with `+=`.
    DotNotAdded {
        name: String,
        span: Span,
        decl: Span,
    },
    /// P0204: `dot` with `found` arguments.
    DotArity { found: usize, span: Span },
    /// P0456: `a` of `a_elem` times `b` of `b_elem` into `acc`.
    DotTypes {
        a: String,
        a_elem: ScalarTy,
        b: String,
        b_elem: ScalarTy,
        acc: ScalarTy,
        span: Span,
    },
    /// P0456: a `dot` of `a_elem` tiles whose second operand (of `b_elem`)
    /// is not `trans(w)`.
    DotNotTrans {
        a_elem: ScalarTy,
        b_elem: ScalarTy,
        span: Span,
    },
    /// P0457: `a` is `[a[0], a[1]]`, `b` as written `[b[0], b[1]]` (under
    /// `trans` when `b_trans`), the accumulator (declared at `decl`)
    /// `[rows, cols]`.
    DotShapes {
        a: [u32; 2],
        b: [u32; 2],
        b_trans: bool,
        rows: u32,
        cols: u32,
        span: Span,
        decl: Span,
    },
    /// P0452: K = `k` is not a multiple of `step`, for `elem` products.
    DotK {
        elem: ScalarTy,
        k: u32,
        step: u32,
        span: Span,
    },
    /// P0455: a `dot` (or `trans`, `under_trans`) operand that is not a
    /// rank-2 shared tile.
    DotOperand { under_trans: bool, span: Span },
    /// P0455: `name` (`dot` or `trans`) inside an expression.
    DotInExpr { name: String, span: Span },
    /// P0458: the accumulator `name` (declared at `decl`) used as a value.
    AccNotValue {
        name: String,
        span: Span,
        decl: Span,
    },
    /// P0509: an accumulator of `from` stored as `to`.
    AccStoreConvert {
        from: ScalarTy,
        to: ScalarTy,
        span: Span,
    },
    /// P0509: an accumulator stored to what is not a tensor.
    AccStoreNotTensor { span: Span },
    /// P0509: an accumulator of `[rows, cols]` `elem` stored to a target
    /// of `shape` and `target`, with a compound assignment when
    /// `compound`.
    AccStoreMismatch {
        rows: u32,
        cols: u32,
        elem: ScalarTy,
        shape: Vec<u32>,
        target: ScalarTy,
        compound: bool,
        span: Span,
    },
    /// P0460: an accumulator of `[rows, cols]` `elem` stored into the box
    /// `shape` of the shared tile `tile` (declared at `decl`) of `target`
    /// elements, with a compound assignment when `compound`.
    AccTileMismatch {
        rows: u32,
        cols: u32,
        elem: ScalarTy,
        tile: String,
        shape: Vec<u32>,
        target: ScalarTy,
        compound: bool,
        span: Span,
        decl: Span,
    },
    /// P0401: the epilogue of `name`, which holds `elem`, has a value of
    /// `found`.
    EpilogueType {
        name: String,
        elem: ScalarTy,
        found: Ty,
        span: Span,
    },
    /// P0459: a collective or shuffle in the epilogue of `name`.
    EpilogueCollective { name: String, span: Span },
    /// P0457: the tile `name` of `tile` in an epilogue of an accumulator
    /// of `shape`.
    EpilogueTileShape {
        name: String,
        tile: Vec<u32>,
        shape: [u32; 2],
        span: Span,
    },
}

impl CheckError {
    /// The stable code of this error.
    pub fn code(&self) -> Code {
        use CheckError::*;
        match self {
            KernelTwice { .. } => Code::P0201,
            TooMuchTuning { .. } | TooManyVariants { .. } => Code::P0311,
            GridNotHost { .. } | GridCount { .. } => Code::P0308,
            AttrTwice { .. } => Code::P0307,
            NoLaunch { .. } => Code::P0301,
            ParamTwice { .. } | DimNamedLikeParam { .. } => Code::P0202,
            ZeroDim { .. } | DimTooWide { .. } => Code::P0203,
            UndefinedConstant { .. } => Code::P0419,
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
            AtomicResultDeclared { .. }
            | AtomicResultAssigned { .. }
            | ScratchTyped { .. }
            | StoreType { .. }
            | ArrayInitType { .. } => Code::P0401,
            StoreRunIntoElement { .. } | AssignRun { .. } => Code::P0409,
            StoreRunLength { .. } | ArgRunLengths { .. } => Code::P0505,
            SelectCondition { .. } => Code::P0401,
            AtomicInExpr { .. } | FenceAsValue { .. } => Code::P0430,
            AtomicNotElement { .. } | AtomicOnArray { .. } | AtomicOnSpan { .. } => Code::P0432,
            AtomicNotOnType { .. } => Code::P0431,
            ScratchExtentRange { .. }
            | ScratchExtentNotConstant { .. }
            | ScratchNoExtent { .. } => Code::P0440,
            ScratchInExpr { .. } => Code::P0441,
            FillNotBox { .. }
            | FillFromTile { .. }
            | FillCompound { .. }
            | FillMismatch { .. }
            | TileCopyFromTile { .. }
            | TileStoreNotTile { .. }
            | TileStoreIntoTile { .. }
            | TileStoreMismatch { .. } => Code::P0509,
            FillOutside { .. } | FillStartNotConstant { .. } => Code::P0442,
            NotSubscriptable { .. } => Code::P0510,
            SubscriptCount { .. } => Code::P0500,
            SpanLenRange { .. } | SpanLenNotConstant { .. } => Code::P0501,
            TilePoint { .. } => Code::P0504,
            FullDimUnknown { .. } => Code::P0502,
            TileAsValue { .. } => Code::P0503,
            ArrayLet { .. } | ArraySpan { .. } => Code::P0418,
            ArrayNoDims { .. }
            | ArrayDimRange { .. }
            | ArrayDimNotConstant { .. }
            | ArrayTooLarge { .. } => Code::P0416,
            ArrayIndexRange { .. } => Code::P0417,
            ExitOutsideLoop { .. } => Code::P0415,
            TileCopyTyped { .. } | DeclaredType { .. } | AssignType { .. } => Code::P0401,
            RunInVariable { .. } | StoreNotSubscript { .. } | StoreNotRun { .. } => Code::P0409,
            AssignToExpr { .. }
            | AssignToNonLocal { .. }
            | AssignToLoopVar { .. }
            | AssignToArray { .. }
            | AssignToTile { .. }
            | AssignTwice { .. } => Code::P0207,
            FloatIntoIntLiteralVar { .. } => Code::P0400,
            ZeroStep { .. } => Code::P0413,
            UnrollLeft { .. } | UnrollRange { .. } | UnrollStep { .. } => Code::P0414,
            StagesCount { .. } | StagesStep { .. } | StagesUnroll { .. } => Code::P0470,
            StagesNoCopy { .. } | StagesLeft { .. } => Code::P0471,
            StagedCopyNested { .. } | StagedCopyStart { .. } | StagedTileWritten { .. } => {
                Code::P0472
            }
            UselessExpr { .. } => Code::P0411,
            StoreIndexRange { .. } => Code::P0507,
            FnNamedLikeBuiltin { .. } | FnTwice { .. } => Code::P0201,
            FnParamTwice { .. } => Code::P0202,
            FnAsValue { .. } => Code::P0206,
            FnBodyUnknownName { .. } => Code::P0200,
            UnknownFn { .. } => Code::P0205,
            Recursion { .. } => Code::P0210,
            StoreAsValue { .. } => Code::P0412,
            NoConfig { .. } => Code::P0601,
            Arity { .. } | ConvertArity { .. } => Code::P0204,
            ConvertToBool { .. } => Code::P0404,
            ArgTypes { .. } | OperandTypes { .. } => Code::P0400,
            MathArg { .. } | WordArg { .. } | PopcountArg { .. } => Code::P0407,
            SumOfNonRun { .. } => Code::P0506,
            RunIndexRange { .. } | RunIndexNotConstant { .. } => Code::P0507,
            ElemOfNonRun { .. } | RunNotScalar { .. } => Code::P0409,
            WordOfNonBytes { .. } | WordOfRagged { .. } => Code::P0508,
            BarrierCall { .. } => Code::P0205,
            InlineExhausted { .. } | ExprTooDeep { .. } | TooManyExprs { .. } => Code::P0211,
            ExprType { .. } => Code::P0401,
            IntLiteralRange { .. } | FloatLiteralForInt { .. } | FloatLiteralRange { .. } => {
                Code::P0403
            }
            LocalNotValue { .. } | TensorNotValue { .. } => Code::P0408,
            GridName { .. } | GridCtx { .. } => Code::P0308,
            UnknownName { .. } => Code::P0200,
            UnaryType { .. } | BinaryType { .. } => Code::P0402,
            RunLengths { .. } => Code::P0505,
            EpilogueVarying { .. } | EpilogueCollective { .. } => Code::P0459,
            AccWithLet { .. }
            | AccTyped { .. }
            | AccExtent { .. }
            | AccRank { .. }
            | ZerosInExpr { .. } => Code::P0450,
            AccElem { .. } => Code::P0451,
            AccNotFragments { .. } | AccWarpSplit { .. } | DotK { .. } => Code::P0452,
            AccTooManyRegs { .. } => Code::P0453,
            DotNotAdded { .. } => Code::P0454,
            DotArity { .. } => Code::P0204,
            DotTypes { .. } | DotNotTrans { .. } => Code::P0456,
            DotShapes { .. } | EpilogueTileShape { .. } => Code::P0457,
            DotOperand { .. } | DotInExpr { .. } => Code::P0455,
            AccNotValue { .. } => Code::P0458,
            AccStoreConvert { .. } | AccStoreNotTensor { .. } | AccStoreMismatch { .. } => {
                Code::P0509
            }
            AccTileMismatch { .. } => Code::P0460,
            EpilogueType { .. } => Code::P0401,
        }
    }

    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
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
            EpilogueVarying { between, span } => code
                .error("the values an epilogue combines must be the same in the whole CTA")
                .primary(span, format!("this differs between {between}"))
                .note("an element's value may depend on the element and on tiles of the accumulator's shape; compute anything else from ctx.block, dims, parameters and constants"),

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

            ScratchTyped { span } => code
                .error("a shared scratch tile takes no scalar type")
                .primary(span, "the element type is in `shared<...>`"),
            ScratchExtentRange { value, span } => code
                .error(format!(
                    "a scratch tile's extent must be from 1 to {MAX_AXIS}, found {value}"
                ))
                .primary(span, "this extent"),
            ScratchExtentNotConstant { span } => code
                .error("a scratch tile's extent must be a compile-time constant")
                .primary(span, "known only at run time")
                .note("use constants, autotuned names and `ctx.threads`, `ctx.warps`, `ctx.lanes`: the shared plan lays out every buffer before the launch"),
            ScratchNoExtent { span } => code
                .error("a scratch tile needs at least one extent")
                .primary(span, "write its shape, as in `shared<f32>[32, 33]`"),
            ScratchInExpr { span } => code
                .error("`shared<...>[...]` declares a scratch tile, and is not a value")
                .primary(span, "used inside an expression")
                .note("declare it on its own: `var s = shared<f32>[32, 33]`, then read and write `s[i, j]`"),
            FillNotBox { span } => code
                .error("a box of a tile is filled from a box of a tensor")
                .primary(span, "not a tensor box")
                .note(FILL_NOTE),
            FillFromTile { span } => code
                .error("a box of a tile is filled from a box of a tensor")
                .primary(span, "a tile, not a tensor")
                .note(FILL_NOTE),
            FillCompound { op, span } => code
                .error(format!("a tile box is filled with `=`, not `{op}=`"))
                .primary(span, "a copy, not arithmetic")
                .note(FILL_NOTE),
            FillOutside {
                start,
                len,
                axis,
                name,
                extent,
                span,
            } => code
                .error(format!(
                    "the box {start} :+ {len} does not fit axis {axis} of `{name}`, which has {extent}"
                ))
                .primary(span, "outside the tile"),
            FillStartNotConstant { span } => code
                .error("where a tile box starts must be a compile-time constant")
                .primary(span, "known only at run time")
                .note("the box's place in the tile is fixed; the tensor box may start anywhere"),
            FillMismatch { from, into, span } => code
                .error("the tensor box does not match the tile box")
                .primary(
                    span,
                    format!(
                        "{:?} {} into {:?} {}",
                        from.0,
                        from.1.name(),
                        into.0,
                        into.1.name()
                    ),
                )
                .note(FILL_NOTE),

            NotSubscriptable { span } => code
                .error("only tensors, shared tiles and register arrays can be subscripted")
                .primary(span, "not a tensor, a tile or an array"),
            SubscriptCount {
                name,
                dims,
                found,
                span,
            } => code
                .error(format!("`{name}` has {dims} dims, found {found} subscripts"))
                .primary(span, format!("expected {dims} subscripts")),
            SpanLenRange { what, value, span } => code
                .error(format!(
                    "a {what} length must be from 1 to {MAX_RUN}, found {value}"
                ))
                .primary(span, "out of range"),
            SpanLenNotConstant { what, text, span } => code
                .error(format!("a {what} length must be a compile-time constant"))
                .primary(span, format!("`{text}` is not a constant"))
                .note("use a number, an autotuned name or a constant dim"),
            TilePoint { span } => code
                .error("a tile takes a span or `:` on every axis")
                .primary(span, "an index where a span is needed")
                .note("a run has exactly one span; a tile has spans or `:` everywhere, as in `x[0 :+ 1, :]`"),
            FullDimUnknown { axis, name, span } => code
                .error(format!(
                    "`:` needs a dim known at compile time; axis {axis} of `{name}` is not"
                ))
                .primary(span, "the whole dim")
                .note("give the axis a constant size, autotune its dim (`@autotune(K in [256])`), or use a span `start :+ L`"),
            TileAsValue { span } => code
                .error("a tile subscript cannot be used as a value")
                .primary(span, "a whole tile")
                .note("copy it into shared memory with `var t = x[...]`, or store a tile with `A[...] = t`; inside expressions use point or run subscripts"),
            TileCopyFromTile { span } => code
                .error("a tile is copied from a tensor")
                .primary(span, "a shared tile")
                .note("read a tile's elements with point or run subscripts instead"),
            ArgRunLengths {
                first,
                first_span,
                len,
                span,
            } => code
                .error(format!("runs of different lengths: {first} and {len}"))
                .primary(span, format!("a run of {len}"))
                .secondary(first_span, format!("a run of {first}"))
                .note("an elementwise built-in combines runs of one length, and broadcasts scalars"),
            SelectCondition { found, span } => code
                .error(format!(
                    "the condition of `select` must be bool or a run of bool, found {}",
                    ty_name(found)
                ))
                .primary(span, format!("this is {}", ty_name(found)))
                .note(conversion_note(ScalarTy::Bool)),
            AssignRun {
                name,
                len,
                elem,
                span,
            } => code
                .error(format!(
                    "`{name}` holds a scalar, the value is a run of {len} {}",
                    elem.name()
                ))
                .primary(span, "a run cannot be kept in a variable")
                .note("take one value with `sum(...)` or `elem(run, i)`, or store the run whole with `A[r, k :+ L] = ...`"),
            StoreRunIntoElement {
                len,
                name,
                elem,
                span,
            } => code
                .error(format!("cannot store a run of {len} into one element of `{name}`"))
                .primary(span, format!("a run of {len} {}", elem.name()))
                .note(format!(
                    "store it whole into a run of {len}, as in `{name}[r, k :+ {len}] = ...`, or take one value with `sum(...)` or `elem(run, i)`"
                )),
            StoreRunLength {
                len,
                want,
                value,
                span,
            } => code
                .error(format!(
                    "runs of different lengths: a run of {len} stored into a run of {want}"
                ))
                .primary(value, format!("a run of {len}"))
                .secondary(span, format!("a run of {want}"))
                .note("a run is stored into a run of the same length (a scalar is broadcast)"),
            StoreType {
                value,
                name,
                holds,
                elem,
                span,
            } => code
                .error(format!(
                    "cannot store {} into `{name}`, which holds {}",
                    ty_name(value),
                    ty_name(holds)
                ))
                .primary(span, format!("this is {}", ty_name(value)))
                .note(conversion_note(elem)),
            TileStoreNotTile { span } => code
                .error("a tile subscript is stored to from a whole tile")
                .primary(span, "not a tile")
                .note("write `A[r :+ R, :] = t` with `t` made by `var t = x[...]`"),
            TileStoreIntoTile { span } => code
                .error("a tile is stored to a tensor")
                .primary(span, "cannot copy a tile into a tile"),
            TileStoreMismatch { tile, target, span } => code
                .error("the tile does not match the target's shape and type")
                .primary(
                    span,
                    format!(
                        "the tile holds {:?} {}, the target is {:?} {}",
                        tile.0,
                        tile.1.name(),
                        target.0,
                        target.1.name()
                    ),
                ),

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

            ExitOutsideLoop { word, span } => code
                .error(format!("`{word}` outside a loop"))
                .primary(span, format!("there is no `for` or `while` for this `{word}`"))
                .note("to leave the kernel early, write `return`"),
            TileCopyTyped { span } => code
                .error("a tile copy takes no scalar type")
                .primary(span, "the tile's type is the tensor's"),
            DeclaredType {
                name,
                declared,
                found,
                span,
                decl,
            } => code
                .error(format!(
                    "`{name}` is declared {}, but its value is {}",
                    declared.name(),
                    ty_name(found)
                ))
                .primary(span, format!("this is {}", ty_name(found)))
                .secondary(decl, "declared here")
                .note(conversion_note(declared)),
            RunInVariable { found, span } => code
                .error(format!("a variable holds a scalar, found {}", ty_name(found)))
                .primary(span, "a run cannot be kept in a variable")
                .note("use a run inside `sum(...)`, `elem(run, i)` or `word(run, i)`"),
            AssignToExpr { span } => code
                .error("cannot assign to this expression")
                .primary(span, "not a variable or a subscript"),
            AssignToNonLocal { name, span } => code
                .error(format!("cannot assign to `{name}`"))
                .primary(span, "a parameter, dim or constant")
                .note("declare a variable with `var` to change it"),
            AssignToLoopVar { name, span, decl } => code
                .error(format!("cannot assign to the loop variable `{name}`"))
                .primary(span, "assigned here")
                .secondary(decl, format!("the loop sets `{name}` on every iteration"))
                .note(format!("a loop variable cannot change inside its loop: choose the loop's `range(start, end, step)`, or copy it into a variable, as in `var j = {name}`")),
            AssignToArray { name, span, decl } => code
                .error(format!("cannot assign to the register array `{name}` as a whole"))
                .primary(span, "assigned here")
                .secondary(decl, "a register array, declared here")
                .note(format!(
                    "change an array's elements with subscripts, as in `{name}[i, j] = v`"
                )),
            AssignToTile { name, span, decl } => code
                .error(format!("cannot assign to the tile `{name}`"))
                .primary(span, "assigned here")
                .secondary(decl, "a tile, copied here")
                .note(format!(
                    "change a tile's elements with subscripts, as in `{name}[i, j] = v`"
                )),
            AssignTwice { name, span, decl } => code
                .error(format!("cannot assign twice to `{name}`"))
                .primary(span, "assigned here")
                .secondary(decl, "declared with `let`")
                .note(format!("declare it with `var {name}` to change it")),
            AssignType {
                name,
                holds,
                value,
                span,
            } => code
                .error(format!(
                    "`{name}` holds {}, the value is {}",
                    ty_name(holds),
                    ty_name(value)
                ))
                .primary(span, format!("this is {}", ty_name(value)))
                .note(elem_of(holds).map_or_else(String::new, conversion_note)),
            FloatIntoIntLiteralVar {
                name,
                op,
                holds,
                value,
                literal,
                span,
                literal_span,
            } => code
                .error(format!(
                    "`{name}` is {}, so `{name} {op}= ...` cannot take {}",
                    holds.name(),
                    value.name()
                ))
                .primary(span, format!("this is {}", value.name()))
                .secondary(
                    literal_span,
                    format!(
                        "`{name}` is {} because `{literal}` is an integer literal",
                        holds.name()
                    ),
                )
                .note(format!(
                    "declare it as a float: `var {name}: {} = {literal}.0`",
                    value.name()
                )),
            ZeroStep { span } => code
                .error("a loop's step cannot be 0")
                .primary(span, "the loop would never end"),
            UnrollLeft { span } => code
                .error("`unroll` on a loop left by `break` or `continue`")
                .primary(span, "this leaves the loop")
                .note("unrolling copies the body; remove `unroll`, or the `break`/`continue`"),
            UnrollRange { factor, span } => code
                .error(format!(
                    "an unroll factor must be from 1 to {MAX_UNROLL}, found {factor}"
                ))
                .primary(span, "this factor")
                .note("`unroll 1` keeps the loop as written; `unroll 4` runs four bodies per trip"),
            UnrollStep { span, step } => code
                .error("`unroll` needs a loop whose step is a constant")
                .primary(span, "unrolling asked for here")
                .secondary(step, "this step is known only at run time")
                .note("write the step as a constant expression, or remove `unroll`"),
            StagesCount { found, span } => code
                .error(match found {
                    Some(n) => format!("a loop's stage count must be from 2 to 4, found {n}"),
                    None => "a loop's stage count must be a constant".to_string(),
                })
                .primary(span, "this count")
                .note("`stages 3` keeps three trips' tile copies in flight; the count may be an `@autotune` constant"),
            StagesStep { span, step } => code
                .error("`stages` needs a loop whose step is a constant")
                .primary(span, "a copy ring asked for here")
                .secondary(step, "this step is known only at run time")
                .note("the ring issues the copies of later trips early, at `k + step`, `k + 2 * step`, ...; write the step as a constant expression"),
            StagesUnroll { span, unroll } => code
                .error("a loop cannot have both `unroll` and `stages`")
                .primary(span, "a copy ring asked for here")
                .secondary(unroll, "unrolling asked for here")
                .note("remove one of them"),
            StagesNoCopy { span } => code
                .error("`stages` on a loop whose body copies no tile from a tensor")
                .primary(span, "nothing to stage")
                .note("`stages S` puts the loop's tile copies (`var a = A[r :+ 64, k :+ 32]`) in an S-deep `cp.async` ring; remove it"),
            StagesLeft { span, exit, word } => code
                .error(format!("a loop with `stages` cannot be left by `{word}`"))
                .primary(exit, "this leaves the loop")
                .secondary(span, "a copy ring asked for here")
                .note("the ring has later trips' copies in flight when a trip ends; remove `stages`, or the exit"),
            StagedCopyNested { span, stages } => code
                .error("a staged loop's tile copies must be statements of its own body")
                .primary(span, "this copy is under an `if` or an inner loop")
                .secondary(stages, "a copy ring asked for here")
                .note("the ring issues every trip's copies at the top of an earlier trip; move the copy out of the `if` or inner loop, or remove `stages`"),
            StagedCopyStart {
                name,
                span,
                cause,
                stages,
            } => code
                .error("a staged tile copy's start must be known trips ahead")
                .primary(cause, match name {
                    Some(name) => format!("`{name}` is computed in the loop"),
                    None => "this reads memory or other threads' values".to_string(),
                })
                .secondary(span, "this copy is issued early, for a later trip")
                .secondary(stages, "a copy ring asked for here")
                .note("a staged copy's starts may use the loop variable and values from before the loop"),
            StagedTileWritten { name, span, copy } => code
                .error(format!(
                    "the staged tile `{name}` must be written only by its copy"
                ))
                .primary(span, format!("this writes into `{name}`"))
                .secondary(copy, "its copy, staged: each trip's copy goes to its own buffer of a ring")
                .note("write into a tile the loop does not stage, or remove `stages`"),
            UselessExpr { span } => code
                .error("this expression does nothing")
                .primary(span, "its value is dropped")
                .note("assign it, as in `let v = ...` or `A[i] = ...`"),
            StoreNotSubscript { span } => code
                .error("`store` writes into a run of a tensor or tile")
                .primary(span, "not a run subscript")
                .note("write `store(Y[0, k :+ 4], i, v)`"),
            StoreNotRun { span } => code
                .error("`store` writes into a run")
                .primary(span, "not a run: use one span `k :+ L`"),
            StoreIndexRange { index, len, span } => code
                .error(format!("the element index {index} is out of range"))
                .primary(span, format!("must be from 0 to {}", len - 1)),

            FnNamedLikeBuiltin { name, span } => code
                .error(format!("`{name}` is a built-in and cannot be redefined"))
                .primary(span, "choose another name"),
            FnTwice { name, span, first } => code
                .error(format!("fn `{name}` is defined twice"))
                .primary(span, "second definition")
                .secondary(first, "first definition"),
            FnParamTwice { name, span } => code
                .error(format!("`{name}` is declared twice"))
                .primary(span, "a second parameter of this name"),
            FnAsValue { name, span } => code
                .error(format!("`{name}` is a fn, not a value"))
                .primary(span, "call it with arguments"),
            FnBodyUnknownName { name, span } => code
                .error(format!("cannot find `{name}` in this scope"))
                .primary(span, "not a parameter of this fn")
                .note("a fn body sees only its own parameters"),
            UnknownFn { name, span } => code
                .error(format!("cannot find fn `{name}`"))
                .primary(span, "not a fn, built-in or conversion"),
            Recursion { path, span } => {
                let first = path.first().map_or("", String::as_str);
                let msg = if path.len() <= 1 {
                    format!("fn `{first}` calls itself")
                } else {
                    format!(
                        "fn `{first}` calls itself through {}",
                        path[1..]
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                code.error(msg)
                    .primary(span, "this call closes the cycle")
                    .note("fn items are inlined at each call, so they cannot recurse")
            }

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
                    "the literal {text} does not fit in {} (it would become infinity)",
                    ty.name()
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

            AccWithLet { name, span } => code
                .error("an accumulator tile is declared with `var`")
                .primary(span, "declared with `let`")
                .note(format!("`dot` adds to it: write `var {name} = zeros<...>[M, N]`")),
            AccTyped { span } => code
                .error("an accumulator tile takes no scalar type")
                .primary(span, "the element type is in `zeros<...>`"),
            AccElem { elem, span } => code
                .error(format!("an accumulator tile of {} is not supported", elem.name()))
                .primary(span, "the accumulator's element type")
                .note("an accumulator holds f32 (for f16, bf16 and f32 products), f16 (for f16 products) or i32 (for i8 and u8 products)"),
            AccExtent { span } => code
                .error("an accumulator tile's extents are constants from 1 to 65536")
                .primary(span, "not such a constant")
                .note("use literals, autotuned names and `ctx.warps`-style constants: the compiler lays the tile out over the warps before the launch"),
            AccRank { found, span } => code
                .error(format!(
                    "an accumulator tile has two extents, rows and columns; found {found}"
                ))
                .primary(span, "write `zeros<f32>[M, N]`"),
            AccNotFragments { rows, cols, span } => code
                .error(format!("an accumulator of [{rows}, {cols}] does not tile the tensor-core instruction"))
                .primary(span, format!("{rows} rows, {cols} columns"))
                .note(format!("mma.sync's accumulator fragment is {FRAG_M} x {FRAG_N}: the rows must be a multiple of {FRAG_M} and the columns of {FRAG_N}")),
            AccWarpSplit {
                rows,
                cols,
                warps,
                span,
            } => code
                .error(format!(
                    "an accumulator of [{rows}, {cols}] cannot be split over the CTA's {warps} {}",
                    warp_or_warps(warps)
                ))
                .primary(span, "no grid of warps divides this tile into whole 16 x 8 fragments")
                .note(format!("the warps form a Wm x Wn grid with Wm * Wn = {warps}; each warp owns [{rows} / Wm, {cols} / Wn], which must be a multiple of [16, 8]: change the tile or `@launch`")),
            AccTooManyRegs {
                rows,
                cols,
                regs,
                warps,
                warp_rows,
                warp_cols,
                span,
            } => code
                .error(format!(
                    "an accumulator of [{rows}, {cols}] needs {regs} registers per thread over {warps} {}, above the budget of {MAX_ACC_REGS}",
                    warp_or_warps(warps)
                ))
                .primary(
                    span,
                    if warps == 1 {
                        format!("the warp owns [{warp_rows}, {warp_cols}]")
                    } else {
                        format!("each of the {warps} warps owns [{warp_rows}, {warp_cols}]")
                    },
                )
                .note(format!("a thread may have 255 registers, and the accumulator may take {MAX_ACC_REGS} of them so the operands fit without spilling: use a smaller tile or more threads (`@launch`)")),
            ZerosInExpr { span } => code
                .error("`zeros<...>[...]` declares an accumulator tile, and is not a value")
                .primary(span, "used inside an expression")
                .note("declare it on its own: `var acc = zeros<f32>[64, 64]`"),
            DotNotAdded { name, span, decl } => code
                .error(format!(
                    "`dot` adds to the accumulator tile `{name}`: write `{name} += dot(a, b)`"
                ))
                .primary(span, "assigned here")
                .secondary(decl, "an accumulator tile, declared here")
                .note(DOT_FORM),
            DotArity { found, span } => code
                .error(format!("`dot` takes 2 arguments, found {found}"))
                .primary(span, "write `dot(a, b)`"),
            DotTypes {
                a,
                a_elem,
                b,
                b_elem,
                acc,
                span,
            } => code
                .error(format!(
                    "no tensor-core product of {} x {} into {}",
                    a_elem.name(),
                    b_elem.name(),
                    acc.name()
                ))
                .primary(
                    span,
                    format!(
                        "`{a}` holds {}, `{b}` holds {}",
                        a_elem.name(),
                        b_elem.name()
                    ),
                )
                .note(format!(
                    "the products Phobos compiles are {}",
                    mma::SUPPORTED_PAIRS
                )),
            DotNotTrans {
                a_elem,
                b_elem,
                span,
            } => code
                .error(format!("a `dot` of {} tiles takes its second operand as `trans(w)`", a_elem.name()))
                .primary(span, format!("a [K, N] tile of {}", b_elem.name()))
                .note(format!("8-bit and f32 (tf32) operands are read in the layout the tensor core takes them: store the second operand as [N, K] (rows of K, as LLM weights are) and write `dot(a, trans(w))`; the products Phobos compiles are {}", mma::SUPPORTED_PAIRS)),
            DotShapes {
                a: [m, ka],
                b,
                b_trans,
                rows,
                cols,
                span,
                decl,
            } => {
                let (kb, nb) = if b_trans { (b[1], b[0]) } else { (b[0], b[1]) };
                let bshape = if b_trans {
                    format!("trans of [{}, {}], so [{kb}, {nb}]", b[0], b[1])
                } else {
                    format!("[{kb}, {nb}]")
                };
                code.error("the shapes of `dot` do not match its accumulator")
                    .primary(span, format!("[{m}, {ka}] times {bshape}"))
                    .secondary(decl, format!("the accumulator is [{rows}, {cols}]"))
                    .note("`acc += dot(a, b)` needs `a` of [M, K], `b` of [K, N] (or `trans(b)` with `b` of [N, K]) and `acc` of [M, N]")
            }
            DotK {
                elem,
                k,
                step,
                span,
            } => code
                .error(format!("a `dot` over K = {k} does not tile the tensor-core instruction"))
                .primary(span, format!("K = {k}"))
                .note(format!("{} products step K by {step}: make the tiles' K extent a multiple of {step} (the copy zero-fills past the tensor's end, so a ragged K needs no care)", elem.name())),
            DotOperand { under_trans, span } => code
                .error(format!(
                    "{} takes a shared tile of two dims",
                    if under_trans { "`trans`" } else { "`dot`" }
                ))
                .primary(span, "not a rank-2 shared tile")
                .note(DOT_FORM),
            DotInExpr { name, span } => code
                .error(format!("`{name}` is only used as `acc += dot(a, b)`"))
                .primary(span, "used inside an expression")
                .note(DOT_FORM),
            AccNotValue { name, span, decl } => code
                .error(format!("the accumulator tile `{name}` is not element-addressable"))
                .primary(span, "used here")
                .secondary(decl, "an accumulator tile, declared here")
                .note(format!("the compiler spreads it over the warps' registers: add to it with `{name} += dot(a, b)` and store it whole, as in `C[r :+ M, c :+ N] = {name}`")),
            AccStoreConvert { from, to, span } => code
                .error(format!("an accumulator of {} is not stored as {}", from.name(), to.name()))
                .primary(span, "this conversion")
                .note("an f32 accumulator is stored as f32, or converted with `f16(acc)` or `bf16(acc)`; an f16 one as f16, or as `f32(acc)`; an i32 one as i32"),
            AccStoreNotTensor { span } => code
                .error("an accumulator tile is stored to a tensor")
                .primary(span, "the target is not a tensor"),
            AccStoreMismatch {
                rows,
                cols,
                elem,
                shape,
                target,
                compound,
                span,
            } => code
                .error("the accumulator does not match the target's shape and type")
                .primary(
                    span,
                    format!(
                        "the accumulator holds [{rows}, {cols}] {}, the target is {shape:?} {}{}",
                        elem.name(),
                        target.name(),
                        if compound {
                            ", with a compound assignment"
                        } else {
                            ""
                        }
                    ),
                ),
            AccTileMismatch {
                rows,
                cols,
                elem,
                tile,
                shape,
                target,
                compound,
                span,
                decl,
            } => code
                .error(format!("the accumulator does not fit the box of `{tile}` it is stored into"))
                .primary(
                    span,
                    format!(
                        "the accumulator holds [{rows}, {cols}] {}, the box is {shape:?} of {}{}",
                        elem.name(),
                        target.name(),
                        if compound {
                            ", with a compound assignment"
                        } else {
                            ""
                        }
                    ),
                )
                .secondary(decl, format!("`{tile}` declared here"))
                .note(format!("`{tile}[a :+ M, b :+ N] = acc` stores an [M, N] accumulator, with `=`, into a box of a rank-2 tile of its element type; an f32 accumulator into an f16 or bf16 tile as `f16(acc)` or `bf16(acc)`, an f16 one into an f32 tile as `f32(acc)`")),
            EpilogueType {
                name,
                elem,
                found,
                span,
            } => code
                .error(format!(
                    "the accumulator tile `{name}` holds {}, the value is {}",
                    elem.name(),
                    ty_name(found)
                ))
                .primary(span, "the value of each element")
                .note(conversion_note(elem)),
            EpilogueCollective { name, span } => code
                .error("an epilogue holds no collective or shuffle")
                .primary(span, "evaluated once per element of the accumulator")
                .note(format!(
                    "compute it before, with `let`, and use the value in `{name} = ...`"
                )),
            EpilogueTileShape {
                name,
                tile,
                shape,
                span,
            } => code
                .error(format!("the tile `{name}` does not fit the accumulator's shape"))
                .primary(span, format!("a tile of {tile:?}"))
                .note(format!("an epilogue reads tiles of the accumulator's shape {shape:?}, of one row [1, {}] (the same for every row) or of one column [{}, 1]", shape[1], shape[0])),
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
            EpilogueVarying {
                between: "lanes",
                span,
            },
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
            ScratchTyped { span },
            ScratchExtentRange { value: 0, span },
            ScratchExtentNotConstant { span },
            ScratchNoExtent { span },
            ScratchInExpr { span },
            FillNotBox { span },
            FillFromTile { span },
            FillCompound { op: "+", span },
            FillOutside {
                start: 30,
                len: 4,
                axis: 0,
                name: name(),
                extent: 32,
                span,
            },
            FillStartNotConstant { span },
            FillMismatch {
                from: (vec![4, 4], ScalarTy::F32),
                into: (vec![4, 8], ScalarTy::F32),
                span,
            },
            NotSubscriptable { span },
            SubscriptCount {
                name: name(),
                dims: 2,
                found: 1,
                span,
            },
            SpanLenRange {
                what: "run".into(),
                value: 2048,
                span,
            },
            SpanLenNotConstant {
                what: "run".into(),
                text: "n".into(),
                span,
            },
            TilePoint { span },
            FullDimUnknown {
                axis: 0,
                name: name(),
                span,
            },
            TileAsValue { span },
            TileCopyFromTile { span },
            ArgRunLengths {
                first: 4,
                first_span: span,
                len: 8,
                span,
            },
            SelectCondition {
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            AssignRun {
                name: name(),
                len: 4,
                elem: ScalarTy::F32,
                span,
            },
            StoreRunIntoElement {
                len: 4,
                name: name(),
                elem: ScalarTy::F32,
                span,
            },
            StoreRunLength {
                len: 4,
                want: 8,
                value: span,
                span,
            },
            StoreType {
                value: Ty::Scalar(ScalarTy::F64),
                name: name(),
                holds: Ty::Scalar(ScalarTy::F32),
                elem: ScalarTy::F32,
                span,
            },
            TileStoreNotTile { span },
            TileStoreIntoTile { span },
            TileStoreMismatch {
                tile: (vec![4, 4], ScalarTy::F32),
                target: (vec![4, 8], ScalarTy::F32),
                span,
            },
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
            ExitOutsideLoop {
                word: "break",
                span,
            },
            TileCopyTyped { span },
            DeclaredType {
                name: name(),
                declared: ScalarTy::F32,
                found: Ty::Scalar(ScalarTy::I32),
                span,
                decl: span,
            },
            RunInVariable {
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            AssignToExpr { span },
            AssignToNonLocal { name: name(), span },
            AssignToLoopVar {
                name: name(),
                span,
                decl: span,
            },
            AssignToArray {
                name: name(),
                span,
                decl: span,
            },
            AssignToTile {
                name: name(),
                span,
                decl: span,
            },
            AssignTwice {
                name: name(),
                span,
                decl: span,
            },
            AssignType {
                name: name(),
                holds: Ty::Scalar(ScalarTy::F32),
                value: Ty::Scalar(ScalarTy::I32),
                span,
            },
            FloatIntoIntLiteralVar {
                name: name(),
                op: "+",
                holds: ScalarTy::I32,
                value: ScalarTy::F32,
                literal: 0,
                span,
                literal_span: span,
            },
            ZeroStep { span },
            UnrollLeft { span },
            UnrollRange { factor: 64, span },
            UnrollStep { span, step: span },
            StagesCount {
                found: Some(5),
                span,
            },
            StagesCount { found: None, span },
            StagesStep { span, step: span },
            StagesUnroll { span, unroll: span },
            StagesNoCopy { span },
            StagesLeft {
                span,
                exit: span,
                word: "break",
            },
            StagedCopyNested { span, stages: span },
            StagedCopyStart {
                name: Some(name()),
                span,
                cause: span,
                stages: span,
            },
            StagedCopyStart {
                name: None,
                span,
                cause: span,
                stages: span,
            },
            StagedTileWritten {
                name: name(),
                span,
                copy: span,
            },
            UselessExpr { span },
            StoreNotSubscript { span },
            StoreNotRun { span },
            StoreIndexRange {
                index: 4,
                len: 4,
                span,
            },
            FnNamedLikeBuiltin { name: name(), span },
            FnTwice {
                name: name(),
                span,
                first: span,
            },
            FnParamTwice { name: name(), span },
            FnAsValue { name: name(), span },
            FnBodyUnknownName { name: name(), span },
            UnknownFn { name: name(), span },
            Recursion {
                path: vec![name(), "y".into()],
                span,
            },
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
            AccWithLet { name: name(), span },
            AccTyped { span },
            AccElem {
                elem: ScalarTy::BF16,
                span,
            },
            AccExtent { span },
            AccRank { found: 3, span },
            AccNotFragments {
                rows: 24,
                cols: 64,
                span,
            },
            AccWarpSplit {
                rows: 16,
                cols: 8,
                warps: 4,
                span,
            },
            AccTooManyRegs {
                rows: 256,
                cols: 256,
                regs: 256,
                warps: 8,
                warp_rows: 128,
                warp_cols: 64,
                span,
            },
            ZerosInExpr { span },
            DotNotAdded {
                name: name(),
                span,
                decl: span,
            },
            DotArity { found: 3, span },
            DotTypes {
                a: "a".to_string(),
                a_elem: ScalarTy::F16,
                b: "b".to_string(),
                b_elem: ScalarTy::BF16,
                acc: ScalarTy::F32,
                span,
            },
            DotNotTrans {
                a_elem: ScalarTy::I8,
                b_elem: ScalarTy::I8,
                span,
            },
            DotShapes {
                a: [64, 32],
                b: [64, 16],
                b_trans: true,
                rows: 64,
                cols: 64,
                span,
                decl: span,
            },
            DotK {
                elem: ScalarTy::F16,
                k: 24,
                step: 16,
                span,
            },
            DotOperand {
                under_trans: false,
                span,
            },
            DotInExpr {
                name: "dot".to_string(),
                span,
            },
            AccNotValue {
                name: name(),
                span,
                decl: span,
            },
            AccStoreConvert {
                from: ScalarTy::I32,
                to: ScalarTy::F16,
                span,
            },
            AccStoreNotTensor { span },
            AccStoreMismatch {
                rows: 64,
                cols: 64,
                elem: ScalarTy::F32,
                shape: vec![64, 32],
                target: ScalarTy::F32,
                compound: false,
                span,
            },
            AccTileMismatch {
                rows: 64,
                cols: 64,
                elem: ScalarTy::F32,
                tile: "s".to_string(),
                shape: vec![64, 32],
                target: ScalarTy::F32,
                compound: false,
                span,
                decl: span,
            },
            EpilogueType {
                name: name(),
                elem: ScalarTy::F32,
                found: Ty::Scalar(ScalarTy::I32),
                span,
            },
            EpilogueCollective { name: name(), span },
            EpilogueTileShape {
                name: "t".to_string(),
                tile: vec![64, 32],
                shape: [64, 64],
                span,
            },
        ]
    }
}

/// How `dot` is written, for P0454's and P0455's notes.
const DOT_FORM: &str = "write `acc += dot(a, b)` or `acc += dot(a, trans(b))`, with `a` and `b` shared tiles copied from tensors (`var a = A[r :+ 64, k :+ 32]`)";

/// "warp" or "warps", after a count of `warps`.
fn warp_or_warps(warps: u32) -> &'static str {
    if warps == 1 {
        "warp"
    } else {
        "warps"
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

/// The partial fill's help line.
const FILL_NOTE: &str = "fill part of a tile from a tensor box of the same shape: `s[0 :+ 32, 0 :+ 32] = A[r :+ 32, c :+ 32]`";

/// The types an atomic takes, for P0431's note.
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

impl From<CheckError> for Diagnostic {
    fn from(e: CheckError) -> Diagnostic {
        e.into_diagnostic()
    }
}
