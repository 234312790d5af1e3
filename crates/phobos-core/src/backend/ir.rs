//! The backend IR: one kernel variant after lowering, with every node in an
//! arena addressed by a typed handle. Expressions are trees (each expression
//! has exactly one user), statements are structured (`If`, `For`), memory
//! accesses, shared buffers and candidate barriers are separate arenas so the
//! analyses can key their side tables by handle. Spans live in side tables
//! beside the arenas, not inside the nodes.
//!
//! This module only defines the data; `lower` builds it, `verify` checks its
//! invariants, `print` writes its text form, and the analyses and `emit`
//! read it without mutating it.

use crate::ast::{BinOp, CtxField, ScalarTy, Span, UnOp};
use crate::hir::{AtomicOp, Builtin, CollOp, ConstVal, DimId, ParamId, ShflMode, Ty};
use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;

/// A typed index into an [`Arena`].
pub trait Handle: Copy {
    fn from_index(i: usize) -> Self;
    fn index(self) -> usize;
}

macro_rules! handle {
    ($name:ident, $prefix:literal) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl Handle for $name {
            fn from_index(i: usize) -> Self {
                $name(i as u32)
            }
            fn index(self) -> usize {
                self.0 as usize
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

handle!(ExprId, "e");
handle!(StmtId, "s");
handle!(VarId, "v");
handle!(AccessId, "a");
handle!(BufferId, "buf");
handle!(BarrierId, "bar");
handle!(ArrayId, "arr");
handle!(AccId, "acc");

/// A growable vector addressed by one handle type.
#[derive(Clone, Debug)]
pub struct Arena<H, T> {
    items: Vec<T>,
    _h: PhantomData<H>,
}

impl<H: Handle, T> Default for Arena<H, T> {
    fn default() -> Self {
        Arena {
            items: Vec::new(),
            _h: PhantomData,
        }
    }
}

impl<H: Handle, T> Arena<H, T> {
    pub fn push(&mut self, item: T) -> H {
        self.items.push(item);
        H::from_index(self.items.len() - 1)
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn contains(&self, h: H) -> bool {
        h.index() < self.items.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = (H, &T)> {
        self.items
            .iter()
            .enumerate()
            .map(|(i, t)| (H::from_index(i), t))
    }
}

impl<H: Handle, T> std::ops::Index<H> for Arena<H, T> {
    type Output = T;
    fn index(&self, h: H) -> &T {
        &self.items[h.index()]
    }
}

impl<H: Handle, T> std::ops::IndexMut<H> for Arena<H, T> {
    fn index_mut(&mut self, h: H) -> &mut T {
        &mut self.items[h.index()]
    }
}

/// One kernel variant.
#[derive(Clone, Debug, Default)]
pub struct Func {
    /// The PTX entry name (`name` or `name__K256`).
    pub entry: String,
    pub threads: u32,
    /// `@launch(T, min_ctas = C)`'s `C`.
    pub min_ctas: Option<u32>,
    pub exprs: Arena<ExprId, Expr>,
    pub stmts: Arena<StmtId, Stmt>,
    pub vars: Arena<VarId, Var>,
    pub accesses: Arena<AccessId, Access>,
    pub buffers: Arena<BufferId, Buffer>,
    pub barriers: Arena<BarrierId, Barrier>,
    /// Register arrays placed in local memory (`.local`): those some access
    /// indexes with a value known only at run time.
    pub arrays: Arena<ArrayId, LocalArray>,
    /// Side table: where lowering put each register array of the kernel,
    /// in declaration order (what `phobos report` prints).
    pub array_homes: Vec<ArrayHome>,
    /// Accumulator tiles (`zeros<f32>[M, N]`): registers spread over the
    /// warps as their layout says.
    pub accs: Arena<AccId, AccTile>,
    /// Side tables: the source span of each expression and statement.
    pub expr_spans: Vec<Span>,
    pub stmt_spans: Vec<Span>,
    /// Side table filled by lowering (`lower/stages.rs`): the ring buffers
    /// of `stages S` loops. Every access to one but its `AsyncCopy`s (point
    /// and run subscripts, `Mma` reads, tile stores) addresses the stage
    /// its `read` var holds.
    pub rings: BTreeMap<BufferId, Ring>,
    /// Side table: the factor of `unroll N` written on a `For`, read (and
    /// emptied) by the `unroll` pass.
    pub loop_unroll: BTreeMap<StmtId, u32>,
    /// Side table filled by `unroll`: access `x` reads or writes the
    /// elements of access `a` (same tensor, same shape), `d` elements further
    /// along the last axis, and `a` is evaluated before `x` on every path that
    /// reaches `x`. `emit` then computes `x`'s address as `a`'s plus a
    /// constant, which ptxas folds into the load's immediate offset.
    pub access_shift: BTreeMap<AccessId, (AccessId, i64)>,
    /// Side table filled by lowering (`padding`): for a tile buffer whose
    /// rows end in elements no access reaches, how many.
    pub tile_padding: BTreeMap<BufferId, u32>,
    /// Tile copies that write every element of their buffer that an
    /// access may reach, though they fill a box at its start: the copy
    /// that declares a `dot` operand (`var a = A[...]`), whose buffer's
    /// rows are padded past the tile (`lower/mma.rs`). With the copies
    /// whose `at` is empty, the shared plan's overwrites
    /// (`shared_plan.rs`).
    pub whole_copies: BTreeSet<StmtId>,
    /// Side table filled by lowering on sm_90a when every `dot` of the
    /// kernel runs on `wgmma` (`mma::wgmma_layout`): each operand tile's
    /// swizzle span in bytes (128, 64 or 32, `mma::swizzle_span`). Such a
    /// buffer is not padded: its rows, along their contiguous axis, are
    /// cut into panels of the span, each panel `rows x span` bytes stored
    /// one after another, and within a panel byte `o` sits at
    /// `o ^ (((o >> 7) & (span / 16 - 1)) << 4)`: the PTX ISA's swizzled
    /// shared layouts that `wgmma`'s matrix descriptors read
    /// (docs/tensor-cores.md "Hopper"). Every `Mma` of the function then
    /// emits `wgmma`, and the shared plan aligns these buffers to 1024
    /// bytes.
    pub swizzle: BTreeMap<BufferId, u32>,
    /// Side table filled by lowering on sm_90a: the `stages` loops (their
    /// `For`) whose copies all go through TMA (`cp.async.bulk.tensor`, one
    /// thread issuing each box) and complete on one mbarrier per stage
    /// instead of `cp.async` groups. See `emit/tma.rs`.
    pub tma_rings: BTreeMap<StmtId, TmaRing>,
    /// The tensor maps of the entry's TMA copies, each a `.param` after
    /// the dims (`PtxSlot::TensorMap`).
    pub tensor_maps: Vec<TensorMapSpec>,
    /// The `AsyncWait` of each TMA ring's trip (the wait for the stage it
    /// reads), with a buffer of that ring.
    pub tma_waits: BTreeMap<StmtId, BufferId>,
    /// The `AsyncCommit`s and the final `AsyncWait(0)` of TMA rings: they
    /// emit nothing (a ring's groups are its mbarriers' phases).
    pub tma_skip: BTreeSet<StmtId>,
    pub body: Vec<StmtId>,
    /// Candidate barriers inside a statement, between evaluating its
    /// operands (which read a tile) and acting on them: the write of a
    /// `Store`/`RunStore`, the branch of an `If`, the first iteration of a
    /// `For`. At most one per statement.
    pub fences: Vec<(StmtId, BarrierId)>,
    /// The entry's `.param` list, in order: every kernel parameter, then
    /// every dim that is not a constant. Lowering computes it once (a
    /// constant dim becomes a literal there, so it has no `.param`); the
    /// emitter's declarations and loads and the metadata's
    /// `VariantMeta::ptx_params` all read it.
    pub ptx_params: Vec<PtxSlot>,
}

/// A `stages` ring on TMA (`Func::tma_rings`): the buffers a trip's
/// copies fill, in order; each copy is one arrival on the stage's
/// mbarrier, made by its own issuing thread (see `emit/tma.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmaRing {
    pub copies: Vec<BufferId>,
}

/// A tensor map (`PtxSlot::TensorMap`): tensor parameter `param`, tiled,
/// boxes of `box_dims` elements (innermost axis first), `swizzle` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMapSpec {
    pub param: ParamId,
    pub box_dims: [u32; 2],
    pub swizzle: u32,
}

/// One `.param` of an entry (see `Func::ptx_params`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxSlot {
    /// Kernel parameter `p` (`p_NAME`): a tensor's address or a scalar.
    Param(ParamId),
    /// Dim `d`'s run-time value (`d_NAME`, `.s32`).
    Dim(DimId),
    /// Tensor map `i` of `Func::tensor_maps` (`m_NAME_i`, 128 bytes,
    /// 64-byte aligned: a `__grid_constant__` CUtensorMap the launch
    /// encodes).
    TensorMap(u32),
}

impl PtxSlot {
    /// The `.param` list of `kernel`'s entry.
    pub fn list(kernel: &crate::hir::Kernel) -> Vec<PtxSlot> {
        let params = (0..kernel.params.len()).map(|i| PtxSlot::Param(ParamId(i as u32)));
        let dims = (kernel.dims.iter().enumerate())
            .filter(|(_, d)| d.constant.is_none())
            .map(|(i, _)| PtxSlot::Dim(DimId(i as u32)));
        params.chain(dims).collect()
    }
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Const(ConstVal),
    Var(VarId),
    /// A run held in vars, one per element: a run-valued `fn` argument,
    /// evaluated once into them by `Set`s before its statement.
    RunVars(Vec<VarId>),
    /// A scalar kernel parameter.
    Param(ParamId),
    /// A runtime dim (`.param .s32`).
    Dim(DimId),
    /// A `ctx` value that is not a compile-time constant.
    Ctx(CtxField),
    Unary(UnOp, ExprId),
    /// `&&` and `||` whose right side loads memory are short-circuited by
    /// `emit`; the others evaluate both sides.
    Binary(BinOp, ExprId, ExprId),
    Convert(ExprId),
    Builtin(Builtin, Vec<ExprId>),
    /// A point load (`Access::shape` is `Point`).
    Load(AccessId),
    /// A run load (`Access::shape` is `Run`).
    RunLoad(AccessId),
    /// `sum(e)` within the thread, element by element.
    RunSum(ExprId),
    /// `sum(i32(a) * i32(b))` (or `sum(i32(a))` with `b = None`) over i8/u8
    /// runs whose length is a multiple of four: one dp4a per packed word.
    /// The operands are packed-byte expressions (see [`is_packed_operand`]).
    Dp4aSum {
        a: ExprId,
        b: Option<ExprId>,
    },
    Elem(ExprId, u32),
    Word(ExprId, u32),
    /// A lane collective over pieces of `width` lanes.
    LaneColl {
        op: CollOp,
        width: u32,
        arg: ExprId,
        combine: Option<Combine>,
    },
    Shuffle {
        mode: ShflMode,
        width: u32,
        lane: ExprId,
        value: ExprId,
    },
}

/// The inlined combine function of `reduce`: `body` over the vars `a`, `b`.
#[derive(Clone, Copy, Debug)]
pub struct Combine {
    pub a: VarId,
    pub b: VarId,
    pub body: ExprId,
}

#[derive(Clone, Debug)]
pub struct Stmt {
    pub kind: StmtKind,
}

/// A CTA collective, hoisted out of its expression into `dst`: barrier
/// `before`, butterfly per warp, lane 0 writes the warp's result into
/// `scratch`, barrier `written`, every warp folds the scratch, barrier
/// `read`.
#[derive(Clone, Debug)]
pub struct CtaColl {
    pub dst: VarId,
    pub op: CollOp,
    pub arg: ExprId,
    pub combine: Option<Combine>,
    pub scratch: BufferId,
    pub before: BarrierId,
    pub written: BarrierId,
    pub read: BarrierId,
}

/// `for var = start; var < end (or > end for a negative step); var += step { body }`.
#[derive(Clone, Debug)]
pub struct ForLoop {
    pub var: VarId,
    pub start: ExprId,
    pub end: ExprId,
    pub step: ExprId,
    pub body: Vec<StmtId>,
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    /// Set a scalar var (`let`, `var`, assignment).
    Set(VarId, ExprId),
    /// A point store.
    Store(AccessId, ExprId),
    /// A run store; `only` stores one element (`store(run, i, v)`).
    RunStore {
        access: AccessId,
        value: ExprId,
        only: Option<ExprId>,
    },
    /// CTA-wide copy of a tensor box into a tile buffer, zero fill outside.
    /// `at` is where the box starts in the buffer (one constant per axis),
    /// empty when the box is the whole buffer.
    TileCopy {
        access: AccessId,
        buffer: BufferId,
        at: Vec<u32>,
    },
    /// CTA-wide masked store of a tile buffer into a tensor box.
    TileStore {
        access: AccessId,
        buffer: BufferId,
    },
    /// A tile copy into stage `stage` (an `i32` from 0 to the ring's
    /// stages - 1) of a ring buffer (`Func::rings`), issued with
    /// `cp.async` and zero-filled outside the tensor: the bytes land when
    /// the issuing thread's `AsyncWait` completes the group, and before
    /// that no thread may touch them. `at` as for `TileCopy`.
    AsyncCopy {
        access: AccessId,
        buffer: BufferId,
        at: Vec<u32>,
        stage: ExprId,
    },
    /// `cp.async.commit_group`: the thread's copies since the last commit
    /// become its newest group.
    AsyncCommit,
    /// `cp.async.wait_group n`: every group of the thread but the newest
    /// `n` has landed.
    AsyncWait(u32),
    If {
        cond: ExprId,
        then: Vec<StmtId>,
        els: Vec<StmtId>,
    },
    For(ForLoop),
    /// `while cond { body }`: before every trip, `pre` runs (what lowering
    /// hoisted out of the condition), then `cond` decides.
    While {
        pre: Vec<StmtId>,
        cond: ExprId,
        body: Vec<StmtId>,
    },
    /// Leaves the innermost `For` or `While`.
    Break,
    /// Goes to the next trip of the innermost `For` (its step first) or
    /// `While` (its condition).
    Continue,
    /// The thread leaves the kernel.
    Return,
    CtaColl(CtaColl),
    /// A candidate CTA barrier; the barrier analysis keeps or elides it.
    Barrier(BarrierId),
    /// An atomic read-modify-write of one element: `access` is a point
    /// access with `store` set (an atomic both reads and writes), `args`
    /// the value (or `expected, new` for `Cas`), `dst` the var that takes
    /// the old value (`None`: `emit` uses `red` where PTX has one).
    Atomic {
        op: AtomicOp,
        access: AccessId,
        args: Vec<ExprId>,
        dst: Option<VarId>,
    },
    /// `fence()`: `fence.acq_rel.gpu`.
    Fence,
    /// Every element of an accumulator tile becomes 0 (CTA-wide).
    AccZero(AccId),
    /// `acc += dot(a, b)`: the product of the tile buffers `a` (`[M, K]`)
    /// and `b` (`[K, N]`, or `[N, K]` when `b_trans`) added to `acc`, by
    /// every warp for the sub-tile it owns: `ldmatrix` then `mma.sync`
    /// (`backend/emit/mma.rs`). Reads both buffers whole.
    Mma {
        acc: AccId,
        a: BufferId,
        b: BufferId,
        b_trans: bool,
        /// The product's K (the operands' extent along it; their buffers'
        /// rows may be padded beyond it).
        k: u32,
    },
    /// An epilogue: each lane sets `elem` to each element it holds of
    /// `acc`, `row` and `col` to its place in the tile, evaluates `value`
    /// and writes it back.
    AccMap {
        acc: AccId,
        elem: VarId,
        row: VarId,
        col: VarId,
        value: ExprId,
    },
    /// CTA-wide masked store of an accumulator tile into a tensor box
    /// (`access`: a `Tile` access of the accumulator's shape).
    AccStore {
        acc: AccId,
        access: AccessId,
    },
    /// CTA-wide store of an accumulator tile into the box of the rank-2
    /// tile buffer `buffer` that starts at `at` (row, column), each lane
    /// writing the elements it holds: for the barrier analysis, a write of
    /// that box by every thread.
    AccToTile {
        acc: AccId,
        buffer: BufferId,
        at: [u32; 2],
    },
}

/// A tile buffer of a `stages S` loop: `stages` copies of the tile, each
/// `stage_bytes` long (the buffer's `bytes` is their sum); trip `i` of the
/// loop reads stage `i % stages`, which `read` holds.
#[derive(Clone, Copy, Debug)]
pub struct Ring {
    pub stages: u32,
    pub stage_bytes: u64,
    pub read: VarId,
    /// The `For` whose trips take turns in the stages.
    pub looped: StmtId,
}

/// An accumulator tile: `rows x cols` elements of `elem`, spread over the
/// CTA's warps by `layout` (`mma::WarpLayout`).
#[derive(Clone, Debug)]
pub struct AccTile {
    pub name: String,
    pub elem: ScalarTy,
    pub rows: u32,
    pub cols: u32,
    pub layout: crate::mma::WarpLayout,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub ty: ScalarTy,
}

/// Where an access goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mem {
    Tensor(ParamId),
    Buffer(BufferId),
    /// A register array in the thread's local memory.
    Local(ArrayId),
}

/// A register array that lives in local memory: row-major, constant shape,
/// one per thread.
#[derive(Clone, Debug)]
pub struct LocalArray {
    pub name: String,
    pub elem: ScalarTy,
    pub shape: Vec<u32>,
    pub span: Span,
}

impl LocalArray {
    pub fn bytes(&self) -> u64 {
        self.shape
            .iter()
            .fold(u64::from(self.elem.size()), |a, &d| a * u64::from(d))
    }
}

/// Where a register array lives, and why.
#[derive(Clone, Debug)]
pub struct ArrayHome {
    pub name: String,
    /// The declaration.
    pub span: Span,
    pub elem: ScalarTy,
    pub elems: u32,
    /// `None`: one register per element (every index folded to a
    /// constant). `Some(span)`: in local memory, because the index at
    /// `span` is known only at run time.
    pub dynamic_index: Option<Span>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    Point,
    /// `index[axis]` is the first element of `len` elements along `axis`.
    Run {
        axis: usize,
        len: u32,
    },
    /// A box of the given shape starting at `index` (tile copies and stores).
    Tile {
        shape: Vec<u32>,
    },
}

impl Shape {
    /// How many elements an access of this shape reads or writes.
    pub fn elems(&self) -> u32 {
        match self {
            Shape::Point => 1,
            Shape::Run { len, .. } => *len,
            Shape::Tile { shape } => shape.iter().product(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Access {
    pub mem: Mem,
    pub elem: ScalarTy,
    pub index: Vec<ExprId>,
    pub shape: Shape,
    pub store: bool,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum BufferKind {
    /// A tile local: row-major, constant shape.
    Tile { elem: ScalarTy, shape: Vec<u32> },
    /// CTA-collective scratch: one slot per warp.
    Scratch { slot_bytes: u32, slots: u32 },
}

#[derive(Clone, Debug)]
pub struct Buffer {
    pub name: String,
    pub kind: BufferKind,
    /// In 64 bits: a tile's size is only checked against the limit in the
    /// shared plan, and must not wrap before it gets there.
    pub bytes: u64,
    pub span: Span,
}

/// Why lowering put a candidate barrier where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierRole {
    /// Before a tile copy or store rewrites or reads a buffer.
    BeforeTile(BufferId),
    /// After a tile copy, before threads read what others copied.
    AfterTileCopy(BufferId),
    /// After a statement that stores single elements into a tile.
    AfterTileWrite(BufferId),
    /// Inside an `If` or `For`: after its condition or bounds read the
    /// buffer, before the body runs.
    AfterRead(BufferId),
    /// At the top of a trip of a `stages S` loop, after its `AsyncWait`:
    /// before threads read the stage other threads' copies filled, and
    /// before the trip's copies rewrite the stage the last trip read.
    RingWait(BufferId),
    /// The three barriers of a CTA collective.
    CtaBefore(BufferId),
    CtaWritten(BufferId),
    CtaRead(BufferId),
}

#[derive(Clone, Debug)]
pub struct Barrier {
    pub role: BarrierRole,
    pub span: Span,
}

impl Func {
    pub fn expr(&self, e: ExprId) -> &Expr {
        &self.exprs[e]
    }
    pub fn expr_span(&self, e: ExprId) -> Span {
        self.expr_spans[e.index()]
    }
    pub fn stmt_span(&self, s: StmtId) -> Span {
        self.stmt_spans[s.index()]
    }
    /// The candidate barrier between a statement's operands and its action.
    pub fn fence(&self, s: StmtId) -> Option<BarrierId> {
        self.fences.iter().find(|(x, _)| *x == s).map(|(_, b)| *b)
    }
    /// The first tile buffer that evaluating `e` reads.
    pub fn tile_read(&self, e: ExprId) -> Option<BufferId> {
        if let ExprKind::Load(acc) | ExprKind::RunLoad(acc) = self.exprs[e].kind {
            if let Mem::Buffer(b) = self.accesses[acc].mem {
                return Some(b);
            }
        }
        self.operands(e).into_iter().find_map(|o| self.tile_read(o))
    }
    /// The scalar type of a scalar expression (the element type of a run).
    pub fn scalar_ty(&self, e: ExprId) -> ScalarTy {
        match self.exprs[e].ty {
            Ty::Scalar(t) | Ty::Run { elem: t, .. } => t,
            Ty::Unit => ScalarTy::I32,
        }
    }
    /// The integer value of a constant expression.
    pub fn const_int(&self, e: ExprId) -> Option<i128> {
        match self.exprs[e].kind {
            ExprKind::Const(ConstVal::Int(v)) => Some(v),
            _ => None,
        }
    }
    /// The direct operands of an expression, in evaluation order.
    pub fn operands(&self, e: ExprId) -> Vec<ExprId> {
        match &self.exprs[e].kind {
            ExprKind::Const(_)
            | ExprKind::Var(_)
            | ExprKind::RunVars(_)
            | ExprKind::Param(_)
            | ExprKind::Dim(_)
            | ExprKind::Ctx(_) => vec![],
            ExprKind::Unary(_, a)
            | ExprKind::Convert(a)
            | ExprKind::RunSum(a)
            | ExprKind::Elem(a, _)
            | ExprKind::Word(a, _) => vec![*a],
            ExprKind::Binary(_, a, b) => vec![*a, *b],
            ExprKind::Builtin(_, args) => args.clone(),
            ExprKind::Load(acc) | ExprKind::RunLoad(acc) => self.accesses[*acc].index.clone(),
            ExprKind::Dp4aSum { a, b } => std::iter::once(*a).chain(*b).collect(),
            ExprKind::LaneColl { arg, combine, .. } => std::iter::once(*arg)
                .chain(combine.map(|c| c.body))
                .collect(),
            ExprKind::Shuffle { lane, value, .. } => vec![*lane, *value],
        }
    }
    /// True when evaluating `e` reads memory (so `&&`/`||` must not
    /// evaluate it speculatively).
    pub fn reads_memory(&self, e: ExprId) -> bool {
        matches!(self.exprs[e].kind, ExprKind::Load(_) | ExprKind::RunLoad(_))
            || self.operands(e).into_iter().any(|o| self.reads_memory(o))
    }
}

// ---------------------------------------------------------------------------
// Walks: what a statement holds, and every statement or expression below
// one, in evaluation order. The analyses (`shared_plan`, `barriers`,
// `verify`) and the printer build on these instead of matching every kind.

impl StmtKind {
    /// The blocks nested directly in this statement, in evaluation order:
    /// an `If`'s then and else blocks, a `For`'s body, a `While`'s `pre`
    /// and body. Empty for every other statement.
    pub fn blocks(&self) -> Vec<&[StmtId]> {
        match self {
            StmtKind::If { then, els, .. } => vec![then, els],
            StmtKind::For(l) => vec![&l.body],
            StmtKind::While { pre, body, .. } => vec![pre, body],
            _ => Vec::new(),
        }
    }

    /// The access a statement writes (or updates) memory through: a
    /// store's, a tile copy's or tile store's, an accumulator store's, an
    /// atomic's.
    pub fn access(&self) -> Option<AccessId> {
        match self {
            StmtKind::Store(access, _)
            | StmtKind::RunStore { access, .. }
            | StmtKind::TileCopy { access, .. }
            | StmtKind::AsyncCopy { access, .. }
            | StmtKind::TileStore { access, .. }
            | StmtKind::AccStore { access, .. }
            | StmtKind::Atomic { access, .. } => Some(*access),
            _ => None,
        }
    }

    /// True for `For` and `While`.
    pub fn is_loop(&self) -> bool {
        matches!(self, StmtKind::For(_) | StmtKind::While { .. })
    }
}

impl Func {
    /// The expressions statement `s` evaluates itself (not those of its
    /// nested blocks), in evaluation order: its access's subscripts, then
    /// its values (a store's value and `only` index, an atomic's
    /// arguments, a `Set`'s value, an accumulator map's value); an `If`'s
    /// or `While`'s condition; a
    /// `For`'s start, end and step; a CTA collective's argument (its
    /// combine body runs inside the collective and is not among them). The
    /// subscripts of an access that is out of range are left out (the
    /// verifier reports it).
    pub fn stmt_operands(&self, s: StmtId) -> Vec<ExprId> {
        let kind = &self.stmts[s].kind;
        let mut out: Vec<ExprId> = match kind.access() {
            Some(a) if self.accesses.contains(a) => self.accesses[a].index.clone(),
            _ => Vec::new(),
        };
        match kind {
            StmtKind::Set(_, e) | StmtKind::Store(_, e) => out.push(*e),
            StmtKind::RunStore { value, only, .. } => {
                out.extend(std::iter::once(*value).chain(*only))
            }
            StmtKind::Atomic { args, .. } => out.extend(args),
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => out.push(*cond),
            StmtKind::For(l) => out.extend([l.start, l.end, l.step]),
            StmtKind::CtaColl(c) => out.push(c.arg),
            StmtKind::AccMap { value, .. } => out.push(*value),
            StmtKind::AsyncCopy { stage, .. } => out.push(*stage),
            StmtKind::AsyncCommit | StmtKind::AsyncWait(_) => {}
            StmtKind::AccZero(_)
            | StmtKind::Mma { .. }
            | StmtKind::AccStore { .. }
            | StmtKind::AccToTile { .. } => {}
            StmtKind::TileCopy { .. }
            | StmtKind::TileStore { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return
            | StmtKind::Barrier(_)
            | StmtKind::Fence => {}
        }
        out
    }

    /// Calls `visit` for every statement of `block` and of the blocks nested
    /// in it, each before its nested blocks, with the number of loops
    /// (`For`, `While`) around it.
    pub fn walk_stmts(&self, block: &[StmtId], visit: &mut impl FnMut(StmtId, u32)) {
        self.walk_stmts_in(block, 0, visit);
    }

    fn walk_stmts_in(&self, block: &[StmtId], loops: u32, visit: &mut impl FnMut(StmtId, u32)) {
        for &s in block {
            visit(s, loops);
            let kind = &self.stmts[s].kind;
            let inner = loops + u32::from(kind.is_loop());
            for b in kind.blocks() {
                self.walk_stmts_in(b, inner, visit);
            }
        }
    }

    /// Calls `visit` for `e` and every expression it evaluates, operands
    /// before the expression that uses them (a load's subscripts before
    /// the load).
    pub fn walk_expr(&self, e: ExprId, visit: &mut impl FnMut(ExprId)) {
        for o in self.operands(e) {
            self.walk_expr(o, visit);
        }
        visit(e);
    }

    /// The access `e` loads through, when it is a point or run load.
    pub fn load_access(&self, e: ExprId) -> Option<AccessId> {
        match self.exprs[e].kind {
            ExprKind::Load(a) | ExprKind::RunLoad(a) => Some(a),
            _ => None,
        }
    }

    /// Whether `a` and `b` have the same value where `within` says both
    /// are evaluated: structurally equal trees of constants (equal to the
    /// bit), vars, parameters, dims, `ctx` fields and arithmetic. In a
    /// [`Within::Stretch`], built-ins of equal operands and loads of the
    /// same elements are equal too; in [`Within::Kernel`] they never are.
    pub fn same_value(&self, a: ExprId, b: ExprId, within: Within) -> bool {
        let stretch = within == Within::Stretch;
        if stretch && a == b {
            return true;
        }
        let (x, y) = (&self.exprs[a], &self.exprs[b]);
        if x.ty != y.ty {
            return false;
        }
        let same = |p: &ExprId, q: &ExprId| self.same_value(*p, *q, within);
        match (&x.kind, &y.kind) {
            (ExprKind::Const(p), ExprKind::Const(q)) => same_const(p, q),
            (ExprKind::Var(p), ExprKind::Var(q)) => p == q,
            (ExprKind::Param(p), ExprKind::Param(q)) => p == q,
            (ExprKind::Dim(p), ExprKind::Dim(q)) => p == q,
            (ExprKind::Ctx(p), ExprKind::Ctx(q)) => p == q,
            (ExprKind::Unary(o, p), ExprKind::Unary(r, q)) => o == r && same(p, q),
            (ExprKind::Convert(p), ExprKind::Convert(q)) => same(p, q),
            (ExprKind::Binary(o, p1, p2), ExprKind::Binary(r, q1, q2)) => {
                o == r && same(p1, q1) && same(p2, q2)
            }
            (ExprKind::Builtin(o, ps), ExprKind::Builtin(r, qs)) if stretch => {
                o == r && ps.len() == qs.len() && ps.iter().zip(qs).all(|(p, q)| same(p, q))
            }
            (ExprKind::Load(p), ExprKind::Load(q))
            | (ExprKind::RunLoad(p), ExprKind::RunLoad(q))
                if stretch =>
            {
                self.same_elements(*p, *q, within)
            }
            _ => false,
        }
    }

    /// Whether accesses `a` and `b` name the same elements where `within`
    /// says both are evaluated by one thread: same memory and shape, and
    /// subscripts of the same value ([`Func::same_value`]).
    pub fn same_elements(&self, a: AccessId, b: AccessId, within: Within) -> bool {
        let (x, y) = (&self.accesses[a], &self.accesses[b]);
        x.mem == y.mem
            && x.shape == y.shape
            && x.index.len() == y.index.len()
            && x.index
                .iter()
                .zip(&y.index)
                .all(|(i, j)| self.same_value(*i, *j, within))
    }
}

/// Where the two expressions that [`Func::same_value`] compares are
/// evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Within {
    /// Anywhere in the kernel (the barrier placement's view of two
    /// statements): memory may change between them, so no load or
    /// built-in is known to be equal.
    Kernel,
    /// One straight-line stretch that stores nothing and sets no var read
    /// by either (the emitter's load cache).
    Stretch,
}

/// Equal constants: floats by their bits, so that `-0.0` and `0.0`
/// (which `1.0 / x` tells apart) differ.
fn same_const(x: &ConstVal, y: &ConstVal) -> bool {
    match (x, y) {
        (ConstVal::Float(p), ConstVal::Float(q)) => p.to_bits() == q.to_bits(),
        _ => x == y,
    }
}

/// True for an expression `emit` can compute on packed bytes: an i8/u8 run
/// load, `x & c` with `0 <= c < 128`, or `(x >> s) & c` with the kept bits
/// inside the byte (`c < 2^(8-s)`), possibly under conversions to i32.
pub fn is_packed_operand(f: &Func, e: ExprId) -> bool {
    packed_parts(f, e).is_some()
}

/// The pieces of a packed-byte operand: the run load, an optional right
/// shift and an optional mask.
pub fn packed_parts(f: &Func, e: ExprId) -> Option<(AccessId, Option<u32>, Option<u32>)> {
    let e = strip_converts(f, e);
    match &f.exprs[e].kind {
        ExprKind::RunLoad(acc) => {
            let a = &f.accesses[*acc];
            let byte = matches!(a.elem, ScalarTy::I8 | ScalarTy::U8);
            match a.shape {
                Shape::Run { len, .. } if byte && len % 4 == 0 => Some((*acc, None, None)),
                _ => None,
            }
        }
        ExprKind::Binary(BinOp::BitAnd, x, c) => {
            let mask = f.const_int(*c)?;
            if !(0..128).contains(&mask) {
                return None;
            }
            let x = strip_converts(f, *x);
            match &f.exprs[x].kind {
                ExprKind::Binary(BinOp::Shr, y, s) => {
                    let s = f.const_int(*s)?;
                    if !(0..8).contains(&s) || mask >= (1 << (8 - s)) {
                        return None;
                    }
                    let (acc, None, None) = packed_parts(f, *y)? else {
                        return None;
                    };
                    Some((acc, Some(s as u32), Some(mask as u32)))
                }
                _ => {
                    let (acc, None, None) = packed_parts(f, x)? else {
                        return None;
                    };
                    Some((acc, None, Some(mask as u32)))
                }
            }
        }
        _ => None,
    }
}

fn strip_converts(f: &Func, mut e: ExprId) -> ExprId {
    while let ExprKind::Convert(inner) = f.exprs[e].kind {
        let from = f.scalar_ty(inner);
        let to = f.scalar_ty(e);
        // Only widening integer conversions keep the byte values.
        let keeps = from.is_int()
            && to.is_int()
            && (to.size() > from.size() || to == from)
            && (from.is_signed() || !matches!(to, ScalarTy::I8 | ScalarTy::I16));
        if !keeps {
            break;
        }
        e = inner;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_constants_are_the_same_only_with_the_same_bits() {
        // `-0.0 == 0.0`, but `1.0 / x` tells them apart, so neither the
        // load cache nor the barrier placement may treat them as one value.
        assert!(!same_const(&ConstVal::Float(-0.0), &ConstVal::Float(0.0)));
        assert!(same_const(
            &ConstVal::Float(f64::NAN),
            &ConstVal::Float(f64::NAN)
        ));
        assert!(!same_const(
            &ConstVal::Float(f64::NAN),
            &ConstVal::Float(-f64::NAN)
        ));
        assert!(same_const(&ConstVal::Int(3), &ConstVal::Int(3)));
        assert!(!same_const(&ConstVal::Int(3), &ConstVal::Float(3.0)));
    }
}
