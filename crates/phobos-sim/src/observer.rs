//! Hooks through which a caller watches a launch instruction by instruction
//! (used by phobos-explain to draw kernels). Observation is passive: an
//! observer cannot change execution.

/// Memory space of an access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Global,
    Shared,
    Local,
    Param,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Load,
    Store,
    Atomic,
}

/// What kind of operation an executed instruction was, so that observers
/// never parse opcode text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `bar.sync` / `barrier.sync`.
    Barrier,
    /// `shfl.sync`.
    Shuffle,
    /// `vote.sync` (and `bar.warp.sync`, a warp-wide sync).
    WarpSync,
    Load,
    Store,
    Atomic,
    /// `ldmatrix` (a warp-wide shared-memory load of 8×8 matrices).
    MatrixLoad,
    /// `mma.sync`: a warp-wide matrix multiply-accumulate on tensor cores.
    Mma,
    /// `cp.async` or a bulk copy (`cp.async.bulk{.tensor}`): a copy that
    /// completes later.
    AsyncCopy,
    /// `bra`.
    Branch,
    /// `exit` and `ret`.
    Exit,
    /// 32-bit float arithmetic; `flops` per lane as NVIDIA's roofline counts
    /// them: `add`/`sub`/`mul` 1, `fma`/`mad` 2, every other float op 0.
    Float32 {
        flops: u8,
    },
    /// 64-bit float arithmetic, `flops` counted as for [`OpKind::Float32`].
    Float64 {
        flops: u8,
    },
    /// `dp4a` (8 integer operations per lane on 8-bit parts) and `dp2a` (4).
    IntDot {
        ops: u8,
    },
    /// Integer arithmetic, conversions, moves, comparisons and everything else.
    Compute,
}

/// One thread's memory access made by one instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    /// Thread index within the CTA (linear).
    pub thread: u32,
    pub space: Space,
    pub kind: AccessKind,
    /// Global: virtual address; shared: byte offset into the CTA's shared window.
    pub addr: u64,
    /// Bytes accessed (e.g. 16 for `ld.v4.f32`).
    pub bytes: u32,
    /// For global accesses, the buffer (allocation) index it falls in, if any.
    pub buffer: Option<usize>,
}

/// What one warp did in one executed instruction.
#[derive(Clone, Debug)]
pub struct StepInfo<'a> {
    /// CTA index (linear over the grid: x + y*gx + z*gx*gy) and its 3-D id.
    pub cta: u32,
    pub cta_id: [u32; 3],
    pub warp: u32,
    /// Lanes that executed the instruction (bit i = lane i): `lanes` with
    /// the guard predicate applied.
    pub active: u32,
    /// Lanes of the warp at this instruction before its guard predicate
    /// (what Nsight Compute counts as active threads). For a `bra`, a
    /// divergent branch is one with `active != lanes`. An instruction whose
    /// guard is false on every lane is not reported at all.
    pub lanes: u32,
    /// Index of the instruction in the entry's body, and its PTX text.
    pub pc: usize,
    pub opcode: &'a str,
    /// Source position from the nearest preceding `.loc`: (file index, line, column).
    pub loc: Option<(u32, u32, u32)>,
    /// Memory accesses of the active lanes.
    pub accesses: &'a [Access],
    /// For `shfl.sync`: (lane, source lane) for each active lane whose
    /// source was inside its segment.
    pub shuffles: &'a [(u32, u32)],
    /// The kind of instruction.
    pub kind: OpKind,
}

/// A launch observer. All methods have empty defaults.
///
/// `Device::launch` runs the CTAs on the calling thread, in order, when it
/// is given an observer; a [`SplitObserver`] can watch a launch on every
/// core instead (`Device::launch_split`).
pub trait Observer {
    /// Called once per executed warp instruction, in execution order.
    fn step(&mut self, _info: &StepInfo<'_>) {}
    /// Which CTAs to observe (others still run, unobserved). Default: all.
    fn wants_cta(&mut self, _cta: u32) -> bool {
        true
    }
}

/// An observer that can be shared out between the host threads of a
/// launch (`Device::launch_split`): each worker thread gets its own copy,
/// and the copies are joined back when the grid is done. Which copy sees
/// which CTA depends on thread timing (each CTA is seen whole by one copy,
/// and one copy sees its CTAs in increasing order), so `join` must give
/// the same result whatever the split, as sums do.
pub trait SplitObserver: Observer + Send + Sized {
    /// An empty copy with the same settings, for one more worker.
    fn split(&self) -> Self;
    /// Folds what a copy observed into this one.
    fn join(&mut self, other: Self);
}
