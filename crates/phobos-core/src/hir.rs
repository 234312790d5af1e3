//! The checked kernel: names resolved, every expression typed, `fn` items
//! inlined, `@autotune` values substituted (one `hir::Kernel` per variant),
//! subscripts classified as point / run / tile. Produced by `check`,
//! consumed by `lower`. Contract between the front end and the backend:
//! anything that reaches the HIR is well-typed and uniformity-checked, so
//! lowering never reports user errors except resource limits (shared memory).

use crate::ast::{BinOp, CtxField, ScalarTy, Span, UnOp};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ParamId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct LocalId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct DimId(pub u32);

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Kernel {
    pub name: String,
    pub span: Span,
    /// Threads per CTA (`@launch`), after autotune substitution.
    pub threads: u32,
    /// `min_ctas` of `@launch`: CTAs ptxas must fit on one SM
    /// (`.minnctapersm`), which bounds the registers per thread.
    pub min_ctas: Option<u32>,
    pub params: Vec<Param>,
    /// Named dims in order of first appearance.
    pub dims: Vec<DimInfo>,
    /// `@aligned` facts: the dim is a multiple of the number.
    pub aligned: Vec<(DimId, u64)>,
    /// The `@autotune` values this variant was built with, in declaration order.
    pub variant: Vec<(String, i64)>,
    /// `@grid(...)`, 1 to 3 expressions (uniform, over dims and constants).
    pub grid: Option<Vec<Expr>>,
    pub locals: Vec<Local>,
    pub body: Block,
    /// Side table: each local's uniformity level after the checker's
    /// fixpoint (`check::uniformity::check`), read by lowering and the
    /// language server.
    #[serde(skip)]
    pub uniformity: Facts,
}

/// How much a value or a point of control differs between threads (see
/// `check::uniformity`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Uniform,
    WarpUniform,
    Varying,
}

/// Uniformity as the checker found it after its fixpoint: each local's
/// level, and where it became that varying — the span of the statement,
/// and whether it was the control around it that did. A side table of the
/// HIR (`hir::Kernel::uniformity`), indexed by `LocalId`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    pub levels: Vec<Level>,
    pub causes: Vec<Option<(Span, bool)>>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Param {
    pub name: String,
    pub span: Span,
    pub kind: ParamKind,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ParamKind {
    Tensor {
        elem: ScalarTy,
        dims: Vec<DimRef>,
        written: bool,
    },
    Scalar(ScalarTy),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DimRef {
    Named(DimId),
    Const(u64),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DimInfo {
    pub name: String,
    /// Every (tensor parameter, axis) that has this dim.
    pub defined_by: Vec<(ParamId, usize)>,
    /// `Some(v)` when the dim is autotuned: compiled as the constant `v`
    /// (the launch must check the actual dim equals it).
    pub constant: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Local {
    pub name: String,
    pub span: Span,
    pub mutable: bool,
    pub kind: LocalKind,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum LocalKind {
    Scalar(ScalarTy),
    /// A shared-memory tile made by `var t = x[...]` (row-major, constant shape).
    Tile {
        elem: ScalarTy,
        shape: Vec<u32>,
    },
    /// A per-thread register array, `var acc: f32[4, 4] = 0.0` (row-major,
    /// constant shape, at most `MAX_ARRAY_ELEMS` elements). Its `Let`
    /// broadcasts a scalar into every element; elements are read with
    /// `Load` and written with `Store` on `Memory::Array`.
    Array {
        elem: ScalarTy,
        shape: Vec<u32>,
    },
    /// An accumulator tile, `var acc = zeros<f32>[M, N]`: CTA-wide, of a
    /// constant shape, held in registers spread over the CTA's warps by
    /// the compiler (`mma::WarpLayout`); not element-addressable. Written
    /// by `AccZero` and `Dot`, read by `AccStore` and `AccToTile`.
    Acc {
        elem: ScalarTy,
        rows: u32,
        cols: u32,
    },
}

/// The most elements a register array may hold (each is a register of its
/// own when its indices fold to constants).
pub const MAX_ARRAY_ELEMS: u64 = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Ty {
    Scalar(ScalarTy),
    /// A thread's run of `len` elements (elementwise run expressions).
    Run {
        elem: ScalarTy,
        len: u32,
    },
    /// Statements-only calls (`store`).
    Unit,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Block {
    pub stmts: Vec<Stmt>,
}

/// `for var in range(start, end, step)`; `step` is a positive or negative i32.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ForLoop {
    pub var: LocalId,
    pub start: Expr,
    pub end: Expr,
    pub step: Expr,
    /// `unroll N` as written (1 to 32; above 1 only with a constant step).
    pub unroll: Option<u32>,
    /// `stages S` (2 to 4): the body's tile copies go into an `S`-deep
    /// `cp.async` ring (`check/stages.rs` has the rules it passed).
    pub stages: Option<u32>,
    pub body: Block,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Memory {
    Tensor(ParamId),
    /// A shared tile local.
    Tile(LocalId),
    /// A per-thread register array local (`LocalKind::Array`).
    Array(LocalId),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum StmtKind {
    /// `let`/`var` of a scalar local.
    Let { local: LocalId, init: Expr },
    /// Assignment to a scalar local (compound assignment already desugared).
    Assign { local: LocalId, value: Expr },
    /// `A[i, j] = v`, one element (not masked).
    Store {
        dst: Memory,
        index: Vec<Expr>,
        value: Box<Expr>,
    },
    /// `A[r, k :+ L] = run` or `store(A[r, k :+ L], i, v)` with `only = Some(i)`.
    RunStore {
        dst: Memory,
        index: Vec<Expr>,
        axis: usize,
        len: u32,
        value: Box<Expr>,
        only: Option<Box<Expr>>,
    },
    /// `var t = A[s0 :+ L0, :]`: CTA-wide copy into shared memory, zero fill
    /// outside the tensor's bounds. `starts[i]` is the first element along
    /// axis i; the tile shape is in the local.
    TileCopy {
        dst: LocalId,
        src: ParamId,
        starts: Vec<Expr>,
    },
    /// `s[a0 :+ L0, a1 :+ L1] = A[s0 :+ L0, s1 :+ L1]`: CTA-wide copy of a
    /// tensor box of `shape` into the box of tile `dst` that starts at the
    /// constant `at`, zero fill outside the tensor's bounds (the rest of
    /// the tile is left as it is).
    TileFill {
        dst: LocalId,
        at: Vec<u32>,
        src: ParamId,
        starts: Vec<Expr>,
        shape: Vec<u32>,
    },
    /// `A[s0 :+ L0, :] = t`: CTA-wide store of a tile, masked at the bounds.
    TileStore {
        dst: ParamId,
        starts: Vec<Expr>,
        src: LocalId,
    },
    If {
        cond: Box<Expr>,
        then: Block,
        els: Block,
    },
    /// `for var in range(start, end, step)`, boxed to keep statements small.
    For(Box<ForLoop>),
    /// `while cond { body }`: `cond` is evaluated before every trip.
    While { cond: Box<Expr>, body: Block },
    /// Leaves the innermost enclosing `for` or `while` (the checker ensures
    /// there is one).
    Break,
    /// Starts the next trip of the innermost enclosing loop (a `for` steps
    /// its variable first).
    Continue,
    /// The thread leaves the kernel.
    Return,
    /// `atomic_add(T[i, j], v)` and the other atomics, on one element of a
    /// tensor or a tile: a statement of its own, or the whole value of a
    /// `let`/`var` or of an assignment to a scalar `var`, which then takes
    /// the element's old value (`result`). `args` holds `v`, or
    /// `expected, new` for `Cas`; each has the element's type.
    Atomic {
        op: AtomicOp,
        dst: Memory,
        index: Vec<Expr>,
        args: Vec<Expr>,
        result: Option<LocalId>,
    },
    /// `fence()`: a memory fence at GPU scope.
    Fence,
    /// `var acc = zeros<T>[M, N]`: every element of the accumulator tile
    /// `acc` becomes 0. CTA-wide.
    AccZero { acc: LocalId },
    /// `acc += dot(a, b)` (`b_trans: false`, `b` is `[K, N]`) or
    /// `acc += dot(a, trans(b))` (`b_trans: true`, `b` is `[N, K]`): the
    /// matrix product of the shared tiles `a` (`[M, K]`) and `b` added to
    /// the accumulator `acc` (`[M, N]`). CTA-wide; the shapes and types are
    /// checked (`mma::dot_kind`).
    Dot {
        acc: LocalId,
        a: LocalId,
        b: LocalId,
        b_trans: bool,
    },
    /// `acc = e`, an epilogue: every element of the accumulator tile `acc`
    /// becomes `value`, evaluated with the scalar local `elem` holding the
    /// element and the `i32` locals `row` and `col` its place in the tile
    /// (a shared tile named in `e` is read at `[row, col]`, or `[0, col]`
    /// and `[row, 0]` when it is one row or column: a broadcast). The
    /// other operands of `value` are the same in every thread (checked).
    AccMap {
        acc: LocalId,
        elem: LocalId,
        row: LocalId,
        col: LocalId,
        value: Expr,
    },
    /// `C[s0 :+ M, s1 :+ N] = acc`: CTA-wide store of an accumulator tile
    /// into a tensor box, masked at the tensor's bounds. When the tensor's
    /// elements are f16 or bf16 and the accumulator's f32 (written
    /// `= f16(acc)`), each element is converted, rounding to nearest even.
    AccStore {
        dst: ParamId,
        starts: Vec<Expr>,
        src: LocalId,
    },
    /// `s[a0 :+ M, a1 :+ N] = acc`: CTA-wide store of an accumulator tile
    /// into the box of the rank-2 shared tile `dst` that starts at the
    /// constants `at` (inside the tile, checked). Each element converted
    /// as for `AccStore` when the tile's type differs (`= f16(acc)`).
    AccToTile {
        dst: LocalId,
        at: [u32; 2],
        src: LocalId,
    },
}

/// The read-modify-write of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum AtomicOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
    Exch,
    Cas,
}

impl AtomicOp {
    pub const ALL: [AtomicOp; 8] = [
        AtomicOp::Add,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Exch,
        AtomicOp::Cas,
    ];

    /// The built-in's name as the language writes it (`atomic_add`).
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "atomic_add",
            AtomicOp::Min => "atomic_min",
            AtomicOp::Max => "atomic_max",
            AtomicOp::And => "atomic_and",
            AtomicOp::Or => "atomic_or",
            AtomicOp::Xor => "atomic_xor",
            AtomicOp::Exch => "atomic_exch",
            AtomicOp::Cas => "atomic_cas",
        }
    }

    pub fn from_name(name: &str) -> Option<AtomicOp> {
        AtomicOp::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether the operation is defined on elements of type `t` (the PTX
    /// ISA's `atom`, as ptxas 12.9 accepts it): `add` on 32- and 64-bit
    /// integers and floats and on `f16`/`bf16`; `min`, `max` and the
    /// bitwise operations on 32- and 64-bit integers; `exch` and `cas` on
    /// any 32- or 64-bit type (floats move as their bits). Whether the
    /// target has it is a separate question (`bf16` needs sm_90).
    pub fn supports(self, t: ScalarTy) -> bool {
        use ScalarTy::*;
        let int = matches!(t, I32 | U32 | I64 | U64);
        match self {
            AtomicOp::Add => int || matches!(t, F32 | F64 | F16 | BF16),
            AtomicOp::Min | AtomicOp::Max | AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => int,
            AtomicOp::Exch | AtomicOp::Cas => int || matches!(t, F32 | F64),
        }
    }

    /// The lowest target (`sm_N`) with this operation on `t`.
    pub fn min_arch(self, t: ScalarTy) -> u32 {
        match (self, t) {
            (AtomicOp::Add, ScalarTy::BF16) => 90,
            _ => 75,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
    pub span: Span,
}

impl Stmt {
    /// The blocks nested directly in this statement: an `if`'s then and
    /// else blocks, a loop's body. Empty for every other statement.
    pub fn blocks(&self) -> Vec<&Block> {
        match &self.kind {
            StmtKind::If { then, els, .. } => vec![then, els],
            StmtKind::For(l) => vec![&l.body],
            StmtKind::While { body, .. } => vec![body],
            _ => Vec::new(),
        }
    }

    /// Calls `f` on each expression written directly in this statement
    /// (not in its nested blocks): subscripts before values, a loop's
    /// bounds, a condition. The one walk over a statement's expressions
    /// (register arrays, padding).
    pub fn exprs<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        match &self.kind {
            StmtKind::Let { init: e, .. } | StmtKind::Assign { value: e, .. } => f(e),
            StmtKind::Store { index, value, .. } => {
                index.iter().for_each(&mut *f);
                f(value);
            }
            StmtKind::RunStore {
                index, value, only, ..
            } => {
                index.iter().for_each(&mut *f);
                f(value);
                if let Some(i) = only {
                    f(i);
                }
            }
            StmtKind::TileCopy { starts, .. }
            | StmtKind::TileStore { starts, .. }
            | StmtKind::AccStore { starts, .. }
            | StmtKind::TileFill { starts, .. } => starts.iter().for_each(f),
            StmtKind::Atomic { index, args, .. } => {
                index.iter().for_each(&mut *f);
                args.iter().for_each(f);
            }
            StmtKind::AccMap { value, .. } => f(value),
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => f(cond),
            StmtKind::For(l) => {
                f(&l.start);
                f(&l.end);
                f(&l.step);
            }
            StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return
            | StmtKind::Fence
            | StmtKind::AccZero { .. }
            | StmtKind::AccToTile { .. }
            | StmtKind::Dot { .. } => {}
        }
    }
}

impl Expr {
    /// The expressions this one evaluates directly, in evaluation order. A
    /// collective's combine body is not among them: it runs inside the
    /// collective, on the combine's own locals.
    pub fn operands(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Unary(_, x) | ExprKind::Convert(x) | ExprKind::RunSum(x) => vec![x],
            ExprKind::Elem { run, .. } | ExprKind::Word { run, .. } => vec![run],
            ExprKind::Binary(_, a, b) => vec![a, b],
            ExprKind::Let { value, body, .. } => vec![value, body],
            ExprKind::Builtin(_, xs)
            | ExprKind::Load { index: xs, .. }
            | ExprKind::RunLoad { index: xs, .. } => xs.iter().collect(),
            ExprKind::Collective { arg, .. } => vec![arg],
            ExprKind::Shuffle { lane, value, .. } => vec![lane, value],
            ExprKind::Const(_)
            | ExprKind::Param(_)
            | ExprKind::Dim(_)
            | ExprKind::Ctx(_)
            | ExprKind::Local(_) => Vec::new(),
        }
    }

    /// Calls `f` on this expression and every expression inside it, outer
    /// first, `reduce` combine bodies included (after the argument).
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        for x in self.operands() {
            x.walk(f);
        }
        if let ExprKind::Collective {
            combine: Some(c), ..
        } = &self.kind
        {
            c.body.walk(f);
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ConstVal {
    Int(i128),
    Float(f64),
    Bool(bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Builtin {
    Min,
    Max,
    Abs,
    Sqrt,
    Rsqrt,
    Exp,
    Exp2,
    Log,
    Log2,
    Sin,
    Cos,
    Tanh,
    Fma,
    Floor,
    Ceil,
    /// `select(c, a, b)`
    Select,
    /// `cdiv(a, b)` = ceil(a / b) for non-negative integers.
    Cdiv,
    /// `dp4a(a, b, c)`: four byte products of the packed words a and b added to c.
    /// Signedness of each word from its type (i32 signed, u32 unsigned). Result i32 (u32 if both unsigned).
    Dp4a,
    /// `byteperm(a, b, sel)`: PTX `prmt.b32`.
    Byteperm,
    /// `popcount(x)`: number of set bits, i32.
    Popcount,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CollOp {
    Sum,
    Max,
    Min,
    Any,
    All,
    Argmax,
    Reduce,
}

impl CollOp {
    pub const ALL: [CollOp; 7] = [
        CollOp::Sum,
        CollOp::Max,
        CollOp::Min,
        CollOp::Any,
        CollOp::All,
        CollOp::Argmax,
        CollOp::Reduce,
    ];

    /// The collective's name as the language writes it (`sum`, `argmax`).
    pub fn name(self) -> &'static str {
        match self {
            CollOp::Sum => "sum",
            CollOp::Max => "max",
            CollOp::Min => "min",
            CollOp::Any => "any",
            CollOp::All => "all",
            CollOp::Argmax => "argmax",
            CollOp::Reduce => "reduce",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Group {
    /// Over the lanes of a warp, in pieces of `width` lanes (32 = whole warp).
    Lane { width: u32 },
    /// Over the CTA.
    Thread,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ShflMode {
    From,
    Xor,
    Down,
    Up,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ExprKind {
    /// A literal, already given its type in `Expr::ty`.
    Const(ConstVal),
    /// A scalar local (tiles are only reached through `Load`/`RunLoad`),
    /// or, with a `Ty::Run` type, a run-valued `fn` argument bound by a
    /// `Let` (its `LocalKind::Scalar` is the element type).
    Local(LocalId),
    /// A scalar parameter.
    Param(ParamId),
    /// A named dim's value (i32). Autotuned dims appear as `Const` instead.
    Dim(DimId),
    Ctx(CtxField),
    Unary(UnOp, Box<Expr>),
    /// Both operands have the same type (run operands: same run length;
    /// a scalar operand of a run op is broadcast). Comparisons give bool.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// Explicit conversion to `Expr::ty` (elementwise on runs).
    Convert(Box<Expr>),
    Builtin(Builtin, Vec<Expr>),
    /// A point load `A[i, j]` from a tensor or a tile (not masked).
    Load {
        src: Memory,
        index: Vec<Expr>,
    },
    /// A run `A[r, k :+ L]`: `index[axis]` is the start of the span.
    RunLoad {
        src: Memory,
        index: Vec<Expr>,
        axis: usize,
        len: u32,
    },
    /// `sum(e)` within a thread over a run expression.
    RunSum(Box<Expr>),
    /// `elem(run, i)`: element `i` of a run (i a constant).
    Elem {
        run: Box<Expr>,
        i: u32,
    },
    /// `word(run, i)`: bytes 4i..4i+3 of an i8/u8 run as one packed i32/u32.
    Word {
        run: Box<Expr>,
        i: u32,
    },
    /// `op<over ...>(arg)`. For `Reduce`, `combine` is the inlined body of the
    /// combine function over the locals `a` and `b`. `Any`/`All` take bool.
    /// `Argmax` gives the lane (or thread) index as i32.
    Collective {
        op: CollOp,
        group: Group,
        arg: Box<Expr>,
        combine: Option<Combine>,
    },
    /// A `fn` argument evaluated once: `local` takes `value`, then `body`
    /// (the inlined fn body) reads it. `value` may be a run: the local then
    /// holds every element. Arguments that are already leaves (constants,
    /// names, `ctx`) and run loads are substituted instead.
    Let {
        local: LocalId,
        value: Box<Expr>,
        body: Box<Expr>,
    },
    /// `shfl<mode s, width w>(value)`.
    Shuffle {
        mode: ShflMode,
        width: u32,
        lane: Box<Expr>,
        value: Box<Expr>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Combine {
    pub a: LocalId,
    pub b: LocalId,
    pub body: Box<Expr>,
}

/// A kernel after checking: one `hir::Kernel` per `@autotune` combination
/// (exactly one when the kernel has no `@autotune`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckedKernel {
    pub name: String,
    pub span: Span,
    /// `@autotune` names with their candidate values, in declaration order.
    pub autotune: Vec<(String, Vec<i64>)>,
    pub variants: Vec<Kernel>,
}
