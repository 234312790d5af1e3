//! The trace: what `phobos explain` draws, as plain serde data. This is the
//! stable, public format of the JSON output and of the data embedded in the
//! HTML page, so other tools can draw a kernel too. It owns no logic beyond
//! small lookups; building it is `steps.rs`, drawing it is `html.rs`.
//!
//! Conventions: element and byte ranges are half-open `[start, end)`; a
//! tensor's elements are numbered row-major from 0; every tensor is drawn as
//! a 2-D grid of `rows × cols` where `cols` is its last dim and `rows` the
//! product of the others.

pub use phobos_core::meta::Padding;
use serde::{Deserialize, Serialize};

/// Bumped whenever a field changes meaning or disappears.
pub const TRACE_VERSION: u32 = 1;

/// One kernel launch stepped through, for one or more of its CTAs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub version: u32,
    /// The kernel's name, and the PTX entry of the variant that ran.
    pub kernel: String,
    pub entry: String,
    /// The target, e.g. `sm_75`.
    pub arch: String,
    pub source_file: String,
    /// The source text, one string per line (line 1 first).
    pub source_lines: Vec<String>,
    /// CTAs along x, y and z.
    pub grid: [u32; 3],
    /// Threads per CTA, and warps per CTA.
    pub threads: u32,
    pub warps: u32,
    /// The named dims and their values in this launch.
    pub dims: Vec<(String, u64)>,
    pub tensors: Vec<TensorInfo>,
    pub shared: SharedPlan,
    pub barriers: Vec<Barrier>,
    pub loops: Vec<LoopInfo>,
    /// The traced CTAs; `ctas[picked]` is the one asked for.
    pub ctas: Vec<CtaTrace>,
    pub picked: usize,
    /// The profile counters of each line that executed an instruction,
    /// over every CTA of the launch, in line order: the page's heat column.
    #[serde(default)]
    pub heat: Vec<LineHeat>,
    /// The kernel's accumulator tiles (`zeros<T>[M, N]`), each with the
    /// warp layout the compiler chose for it.
    #[serde(default)]
    pub accumulators: Vec<Accumulator>,
    /// The `stages S` loops that run as a `cp.async` ring (sm_80 and
    /// later; none on sm_75, where they copy plainly).
    #[serde(default)]
    pub rings: Vec<Ring>,
}

/// A `for ... stages S` loop's `cp.async` ring: each tile it copies has
/// `stages` buffers in shared memory, one after another. Before the loop
/// (steps on its line) the copies of trips `0 .. S-2` fill stages
/// `0 .. S-2` (one commit each); trip `i` (from its first copy's line) waits for its own copies (`cp.async.wait_group S-2`), passes
/// the loop's one barrier, issues the copies of trip `i + S - 1` into
/// stage [`Ring::fill_stage`] (the one trip `i - 1` read) and commits, and
/// computes on stage [`Ring::read_stage`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ring {
    /// The `for` line (where the prologue is), and the loop's index in
    /// `Trace::loops`.
    pub line: u32,
    pub r#loop: usize,
    pub stages: u32,
    /// The copies' lines; a trip's wait, barrier and commit are on the
    /// first.
    pub copy_lines: Vec<u32>,
    /// The ring's tiles: each stage of `name` is `stage_bytes` long, stage
    /// `s` at `offset + s * stage_bytes` on the byte ruler.
    pub buffers: Vec<RingBuffer>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RingBuffer {
    pub name: String,
    pub offset: u32,
    pub stage_bytes: u32,
}

impl Ring {
    /// The stage trip `trip` computes on.
    pub fn read_stage(&self, trip: u32) -> u32 {
        trip % self.stages.max(1)
    }

    /// The stage trip `trip`'s copies (those of trip `trip + S - 1`) fill.
    pub fn fill_stage(&self, trip: u32) -> u32 {
        (trip + self.stages.max(1) - 1) % self.stages.max(1)
    }

    /// The stage byte range `[start, end)` of buffer `b` on the ruler.
    pub fn stage_range(&self, b: &RingBuffer, stage: u32) -> [u32; 2] {
        let start = b.offset + stage * b.stage_bytes;
        [start, start + b.stage_bytes]
    }
}

/// An accumulator tile: CTA-wide, held in registers, spread over the
/// CTA's warps by the compiler's warp layout (`phobos_core::mma`). Its
/// `dot` steps read its operands from shared memory with `ldmatrix` (the
/// step's shared reads) and multiply them on tensor cores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Accumulator {
    pub name: String,
    /// Element type, e.g. `f32`.
    pub elem: String,
    pub rows: u32,
    pub cols: u32,
    /// The grid of warps over it: `[warp rows, warp columns]`.
    pub warp_grid: [u32; 2],
    /// The part each warp owns, by warp.
    pub warp_tiles: Vec<WarpTile>,
    /// Rows and columns of one `mma.sync` accumulator fragment.
    pub fragment: [u32; 2],
    /// The accumulator's registers in each lane.
    pub registers_per_lane: u32,
    /// The lines that zero it, add a product to it or store it.
    pub lines: Vec<u32>,
    pub dots: Vec<DotInfo>,
}

/// The rows and columns of an accumulator one warp owns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarpTile {
    pub warp: u32,
    pub row: u32,
    pub col: u32,
    pub rows: u32,
    pub cols: u32,
}

/// One `acc += dot(a, b)` statement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DotInfo {
    pub line: u32,
    /// The operand tiles (shared buffers), and whether `b` is `trans(b)`.
    pub a: String,
    pub b: String,
    pub b_trans: bool,
    /// The operands' element type, and K of one instruction step.
    pub operand: String,
    pub k_step: u32,
}

/// One source line's `phobos profile` counters, summed over every CTA of
/// the launch (the rules are phobos-profile's, `docs/profile.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LineHeat {
    pub line: u32,
    /// Warp-level global loads, stores and atomics.
    pub global_requests: u64,
    /// Their 32-byte sectors, and sectors per request.
    pub global_sectors: u64,
    pub sectors_per_request: Option<f64>,
    /// Warp-level shared loads, stores and atomics, their wavefronts, and
    /// the wavefronts beyond the ideal.
    pub shared_requests: u64,
    pub shared_wavefronts: u64,
    pub bank_conflicts: u64,
    /// Executed warp instructions, and lanes per executed instruction.
    pub warp_instructions: u64,
    pub active_lanes_avg: Option<f64>,
    pub divergent_branches: u64,
}

impl LineHeat {
    /// The heat of one line from the profile's counters.
    pub fn new(line: u32, c: &phobos_profile::report::Counters) -> LineHeat {
        LineHeat {
            line,
            global_requests: c.global_requests,
            global_sectors: c.global_sectors,
            sectors_per_request: c.sectors_per_request,
            shared_requests: c.shared_requests,
            shared_wavefronts: c.shared_wavefronts,
            bank_conflicts: c.bank_conflicts,
            warp_instructions: c.warp_instructions,
            active_lanes_avg: c.active_lanes_avg,
            divergent_branches: c.divergent_branches,
        }
    }
}

/// A tensor parameter as launched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorInfo {
    pub name: String,
    /// Element type, e.g. `f32`.
    pub elem: String,
    pub elem_bytes: u32,
    pub shape: Vec<u64>,
    /// The 2-D view the drawing uses.
    pub rows: u64,
    pub cols: u64,
    /// False when the kernel never stores to it.
    pub written: bool,
}

/// The shared-memory plan of the variant that ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedPlan {
    /// The ruler's length: shared bytes per CTA.
    pub bytes: u32,
    pub buffers: Vec<SharedBuffer>,
}

/// A planned shared buffer as the page draws it: the metadata's buffer, with
/// its padding counted out in rows.
pub type SharedBuffer = phobos_core::meta::SharedBuffer<SharedPadding>;

/// Padding inside a shared buffer: the metadata's row layout (each row of
/// `row_bytes` bytes ends in `pad_bytes` bytes that no access reaches), for
/// `rows` rows, `bytes` in all; drawn hatched on the ruler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedPadding {
    #[serde(flatten)]
    pub layout: Padding,
    pub rows: u32,
    pub bytes: u32,
}

impl SharedPadding {
    /// The padding of a planned buffer of `buffer_bytes` bytes; `None` for a
    /// zero-byte row.
    pub fn of(layout: Padding, buffer_bytes: u32) -> Option<Self> {
        let rows = layout.rows(buffer_bytes)?;
        Some(SharedPadding {
            layout,
            rows,
            bytes: rows * layout.pad_bytes,
        })
    }
}

impl From<SharedPadding> for Padding {
    fn from(p: SharedPadding) -> Padding {
        p.layout
    }
}

/// A barrier the compiler kept or elided.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Barrier {
    pub line: u32,
    pub kept: bool,
    pub reason: String,
}

/// A `for` loop of the source: its header line and the last line of its body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopInfo {
    pub line: u32,
    pub end_line: u32,
}

/// The steps of one CTA.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CtaTrace {
    /// Linear CTA index (`x + y*gx + z*gx*gy`) and its 3-D id.
    pub cta: u32,
    pub cta_id: [u32; 3],
    pub steps: Vec<Step>,
    /// True when the step limit cut the trace short.
    pub truncated: bool,
}

/// One source statement executed by the CTA (one loop iteration of it, one
/// shuffle step of a butterfly, or one barrier).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub line: u32,
    pub kind: StepKind,
    /// The enclosing loops' iterations, outermost first (0-based).
    pub iterations: Vec<LoopIteration>,
    /// Warp instructions the CTA executed in this step.
    pub instructions: u32,
    /// The CTA's threads that took part, as ranges of thread indices.
    pub threads: Vec<[u32; 2]>,
    /// Warps that took part.
    pub warps: Vec<u32>,
    /// Warp 0's lanes that took part (bit i = lane i).
    pub lanes0: u32,
    /// Warp 0's shuffles: `[lane, source lane]` pairs.
    pub shuffles0: Vec<[u32; 2]>,
    /// The shuffle pattern of this step, when it is a shuffle step.
    pub shuffle: Option<ShufflePattern>,
    /// Memory instructions, one entry per instruction (PTX pc).
    pub accesses: Vec<AccessGroup>,
    /// Elements of tensors the CTA touched, per warp and kind.
    pub boxes: Vec<TensorBox>,
    /// Elements in 128-byte lines that a warp's access touched beyond the
    /// fewest possible, per tensor.
    pub extra_lines: Vec<ElementRanges>,
    /// Tile elements past a tensor's end (masked: read as 0 or not stored).
    pub masked: Vec<MaskedBox>,
    /// Shared bytes touched.
    pub shared: Vec<SharedTouch>,
    /// Index into `Trace::barriers` of the barrier this step waits at.
    pub barrier: Option<usize>,
    /// The readout: a sentence or two per line.
    pub readout: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// Ordinary statement.
    Statement,
    /// One shuffle step (`n` of `of`) of a statement's butterfly.
    Shuffle { n: u32, of: u32 },
    /// The CTA waits at a barrier.
    Barrier,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopIteration {
    /// Index into `Trace::loops`.
    pub r#loop: usize,
    pub iteration: u32,
}

/// How warp 0's lanes found their source lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShufflePattern {
    /// Source `lane ^ m`.
    Xor(u32),
    /// Source `lane + d`.
    Down(u32),
    /// Source `lane - d`.
    Up(u32),
    /// Every lane reads lane `s`.
    From(u32),
    /// Any other pattern.
    Mixed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Space {
    Global,
    Shared,
    Local,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    Read,
    Write,
    /// An atomic read-modify-write (`atom`/`red`): the page marks its
    /// boxes apart from plain reads and writes.
    Atomic,
}

/// One memory instruction as the CTA's warps executed it in one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessGroup {
    pub pc: u32,
    pub opcode: String,
    pub space: Space,
    pub kind: AccessKind,
    /// The tensor or shared buffer accessed (the first one, if several).
    pub target: Option<String>,
    /// Bytes each lane moves per instruction (the widest, if they differ).
    pub bytes_per_lane: u32,
    /// Per executing warp, in warp order.
    pub warps: Vec<WarpAccess>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarpAccess {
    pub warp: u32,
    /// Times this warp executed the instruction in the step.
    pub executions: u32,
    /// Lane accesses in all.
    pub lanes: u32,
    /// Distinct bytes touched.
    pub bytes: u64,
    /// 128-byte lines touched (global only; summed over executions), the
    /// fewest that could hold those bytes, and the difference.
    pub lines: u32,
    pub min_lines: u32,
    pub extra_lines: u32,
}

/// Element ranges of one tensor touched by one warp in one way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorBox {
    pub tensor: usize,
    pub warp: u32,
    pub kind: AccessKind,
    pub ranges: Vec<[u64; 2]>,
    /// True when nearby ranges were merged to keep the trace small: the
    /// ranges then cover some elements that were not touched.
    pub approximate: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElementRanges {
    pub tensor: usize,
    pub ranges: Vec<[u64; 2]>,
}

/// A rectangle of a tile, in the tensor's 2-D view, that lies past the
/// tensor's end (rows or columns beyond its shape).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaskedBox {
    pub tensor: usize,
    pub rows: [u64; 2],
    pub cols: [u64; 2],
    /// Masked elements in the rectangle.
    pub elements: u64,
}

/// Shared bytes touched in one way, with the buffer they fall in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedTouch {
    pub buffer: Option<usize>,
    pub kind: AccessKind,
    pub ranges: Vec<[u32; 2]>,
}

impl Trace {
    /// The CTA that was asked for.
    pub fn picked_cta(&self) -> &CtaTrace {
        &self.ctas[self.picked]
    }
    /// The tensor with this name.
    pub fn tensor(&self, name: &str) -> Option<usize> {
        self.tensors.iter().position(|t| t.name == name)
    }
    /// The accumulator a statement on `line` zeroes, multiplies into or
    /// stores, if any.
    pub fn accumulator_at(&self, line: u32) -> Option<&Accumulator> {
        self.accumulators.iter().find(|a| a.lines.contains(&line))
    }
}
