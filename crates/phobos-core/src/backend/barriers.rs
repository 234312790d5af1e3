//! Barrier placement: lowering put a candidate barrier at every point where
//! a shared-memory hazard between threads could need one; this pass keeps
//! exactly the candidates some hazard crosses and elides the others, with
//! the reason for each decision.
//!
//! The program is flattened into a stream of shared-memory events in
//! evaluation order, one per access: the reads inside a statement's
//! operands (its value, its subscripts, an `if` condition, a loop's bounds,
//! a collective's argument) come before the statement's own write, and a
//! statement's fence (a candidate between its operands and its action) sits
//! between them. A loop body appears twice (so hazards carried from one
//! iteration to the next are seen), an `if` appears as its then-block
//! followed by its else-block (a superset of the real orders, so the
//! result is conservative).
//!
//! Two accesses conflict when their buffers share bytes in the plan, one of
//! them writes, and they may be by different threads touching the same
//! element. Every pair is assumed to be by different threads except:
//! - a tile copy rewriting a buffer it copied before (each thread writes
//!   the same elements both times);
//! - two accesses of one buffer whose subscript on some axis is the same
//!   one-to-one function of `ctx.thread` (`t[ctx.thread]`, `t[0, i + 1]`
//!   with `let i = ctx.thread`), so different threads touch different
//!   elements;
//! - two fills of boxes of one buffer that share no element
//!   (`t[0 :+ 2, 4 :+ 64] = ...` then `t[0 :+ 2, 0 :+ 4] = ...`; an
//!   accumulator stored into a box, `t[0 :+ 64, 0 :+ 64] = acc`, is a
//!   fill written by every thread);
//! - two atomics (`atomic_add(t[i], 1)` in every thread): the hardware
//!   orders atomics on one element, so they need no barrier between them;
//!   an atomic is a read and a write for every plain access;
//! - a read and the write of one statement with the same subscripts
//!   (`t[i] = t[i] * 2`): another thread writing what this thread read
//!   would also be writing what this thread writes, a race no barrier fixes.
//!
//! A barrier inside a then- or else-block or a loop body may not run: the
//! branch may not be taken, the loop may run zero times or stop before
//! that copy of its body. So each candidate records the innermost such
//! block (a *region*) around it, and a candidate separates an earlier
//! access `j` from a later access `i` only if it runs on every path from
//! `j` to `i`: it is outside every region, or its innermost region also
//! holds `j` or `i` (then the candidate lies on the straight line from
//! `j`, or to `i`, through that block).
//!
//! Walking the stream, an access that conflicts with an earlier access
//! that no kept barrier separates from it keeps the latest candidate
//! between the two that runs on every path between them. A conflict
//! with no candidate between (both accesses inside a loop whose bounds
//! differ between threads, where no barrier can go; lowering predicates a
//! varying `if` statement by statement so barriers fit between its
//! statements) is an error, P0802 — except
//! between two iterations of a loop whose bounds differ between threads
//! (`for e in range(ctx.thread, n, ctx.threads)`), whose iterations in
//! different threads are assumed to touch different elements: no barrier
//! could separate them, and the grid-stride loop needs none.

use super::error::{verb, BackendError, HazardAccess, NoBarrierCause};
use super::ir::{
    AccessId, BarrierId, BarrierRole, BufferId, ExprId, ExprKind, Func, Mem, Shape, StmtId,
    StmtKind, VarId, Within,
};
use super::shared_plan::SharedPlan;
use crate::ast::{BinOp, CtxField, Span};
use crate::source::LineIndex;
use std::collections::HashMap;

#[derive(Clone, Debug)]
pub struct BarrierDecision {
    pub kept: bool,
    pub reason: String,
    pub line: u32,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    Access {
        buffer: BufferId,
        write: bool,
        copy: bool,
        /// An atomic (a read and a write of its element): atomics do not
        /// conflict with each other, only with plain accesses.
        atomic: bool,
        /// The tile copy that makes this event, when it fills a box of its
        /// buffer: copies into disjoint boxes do not conflict.
        fill: Option<StmtId>,
        line: u32,
        span: Span,
        /// The point or run access, when the event is one (`None` for tile
        /// copies, tile stores, collective scratch and one-element stores
        /// into a run).
        acc: Option<AccessId>,
        /// Which flattened statement instance the event belongs to.
        inst: u32,
        /// For a ring buffer (`Func::rings`): which flattening of its loop
        /// the event belongs to (its prologue belongs to the flattening
        /// that follows it) and which stage it touches, modulo the stage
        /// count, counting that flattening's first trip as trip 0. Events
        /// of one flattening on different stages of one ring never
        /// conflict; across flattenings (an outer loop's trips) nothing is
        /// known.
        stage: Option<(u32, u32)>,
    },
    /// A candidate barrier and the innermost region (index into
    /// `Flatten::regions`) around it, if any.
    Candidate(BarrierId, Option<u32>),
}

/// Decide every candidate barrier (result indexed by `BarrierId`), or
/// report a hazard no candidate can fence (P0802).
pub fn place(
    f: &Func,
    plan: &SharedPlan,
    lines: &LineIndex,
) -> Result<Vec<BarrierDecision>, BackendError> {
    let mut flat = Flatten {
        f,
        lines,
        out: Vec::new(),
        inst: 0,
        loops: Vec::new(),
        regions: Vec::new(),
        open: Vec::new(),
        trips: HashMap::new(),
        flattenings: HashMap::new(),
    };
    flat.block(&f.body);
    let (events, loops, regions) = (flat.out, flat.loops, flat.regions);
    let across_iterations = |j: usize, i: usize| {
        loops
            .iter()
            .any(|&(a, b, c)| a <= j && j < b && b <= i && i < c)
    };
    let threads = ThreadIndex::new(f);
    let mut decisions: Vec<Option<BarrierDecision>> = vec![None; f.barriers.len()];
    for (i, x) in events.iter().enumerate() {
        if !matches!(x, Event::Access { .. }) {
            continue;
        }
        // Walking back from `i`: every earlier access at or after `fenced`
        // is separated from `i` by a kept barrier that runs on every path
        // between them (see `reach`).
        let mut fenced = usize::MAX;
        for j in (0..i).rev() {
            match events[j] {
                Event::Candidate(b, r) => {
                    if decisions[b.0 as usize].is_some() {
                        fenced = fenced.min(reach(&regions, r, i));
                    }
                }
                Event::Access { .. } => {
                    if fenced <= j || !conflict(f, plan, &threads, &events[j], x) {
                        continue;
                    }
                    let cand = (j + 1..i).rev().find_map(|c| match events[c] {
                        Event::Candidate(b, r) if reach(&regions, r, i) <= j => Some((b, r)),
                        _ => None,
                    });
                    let Some((b, r)) = cand else {
                        if across_iterations(j, i) {
                            continue;
                        }
                        return Err(unfenced(f, &threads, &events[j], x));
                    };
                    decisions[b.0 as usize] = Some(BarrierDecision {
                        kept: true,
                        reason: hazard_reason(f, &events[j], x),
                        line: 0,
                    });
                    fenced = fenced.min(reach(&regions, r, i));
                }
            }
            if fenced == 0 {
                break;
            }
        }
    }
    let kept: Vec<bool> = decisions.iter().map(Option::is_some).collect();
    // Where each candidate sits in the stream (looked up once, not by a
    // scan per elided candidate).
    let mut at: Vec<Option<usize>> = vec![None; f.barriers.len()];
    for (i, e) in events.iter().enumerate() {
        if let Event::Candidate(b, _) = e {
            at[b.0 as usize].get_or_insert(i);
        }
    }
    let elided = Elided {
        f,
        plan,
        events: &events,
        regions: &regions,
        kept: &kept,
        lines,
    };
    Ok(f.barriers
        .iter()
        .map(|(id, b)| {
            let line = lines.line(b.span.start as usize);
            match decisions[id.0 as usize].take() {
                Some(d) => BarrierDecision { line, ..d },
                None => BarrierDecision {
                    kept: false,
                    reason: elided.reason(id, at[id.0 as usize]),
                    line,
                },
            }
        })
        .collect())
}

/// A candidate in region `r` (innermost; `None`: in no region) before the
/// access at stream position `i` runs on every path to `i` from each
/// earlier position `j` at or after the returned one: from every `j` when
/// it is in no region or its region holds `i` (it lies on the straight
/// line into `i`), else only from the `j` inside its region (it lies on
/// the straight line out of `j`). Regions nest, so its innermost region is
/// the only one to test: an outer region holds whatever the inner holds.
fn reach(regions: &[(usize, usize)], r: Option<u32>, i: usize) -> usize {
    match r {
        None => 0,
        Some(r) => {
            let (start, end) = regions[r as usize];
            if start <= i && i < end {
                0
            } else {
                start
            }
        }
    }
}

/// Whether the earlier access `p` and the later access `x` may touch the
/// same bytes from different threads with one of them writing.
fn conflict(f: &Func, plan: &SharedPlan, threads: &ThreadIndex, p: &Event, x: &Event) -> bool {
    let (
        Event::Access {
            buffer: pb,
            write: pw,
            copy: pc,
            atomic: pt,
            fill: pfill,
            acc: pa,
            inst: pi,
            stage: ps,
            ..
        },
        Event::Access {
            buffer: xb,
            write: xw,
            copy: xc,
            atomic: xt,
            fill: xfill,
            acc: xa,
            inst: xi,
            stage: xs,
            ..
        },
    ) = (p, x)
    else {
        return false;
    };
    if !(*pw || *xw) || !plan.overlap(f, *pb, *xb) {
        return false;
    }
    if let (Some((ia, a)), Some((ib, b))) = (ps, xs) {
        if pb == xb && ia == ib && a != b {
            return false;
        }
    }
    // Atomics on one element are ordered by the hardware, whichever
    // threads make them.
    if *pt && *xt {
        return false;
    }
    if let (Some(a), Some(b)) = (pfill, xfill) {
        if pb == xb && disjoint_boxes(f, *a, *b) {
            return false;
        }
    }
    if *pc && *xc && pb == xb {
        return false;
    }
    if let (Some(pa), Some(xa)) = (pa, xa) {
        if pb == xb && threads.disjoint(f, *pa, *xa) {
            return false;
        }
        // One statement that reads and then writes the same elements: each
        // thread writes only what it read itself.
        if pi == xi && !*pw && *xw && f.same_elements(*pa, *xa, Within::Kernel) {
            return false;
        }
    }
    true
}

/// The error for a conflict with no candidate barrier between the two
/// accesses: both lie under control that differs between threads.
fn unfenced(f: &Func, threads: &ThreadIndex, p: &Event, x: &Event) -> BackendError {
    let access = |e: &Event| match e {
        Event::Access {
            buffer,
            write,
            copy,
            span,
            ..
        } => Some(HazardAccess {
            buffer: f.buffers[*buffer].name.clone(),
            write: *write,
            copy: *copy,
            span: *span,
        }),
        _ => None,
    };
    match (access(p), access(x)) {
        (Some(earlier), Some(later)) => {
            let cause = why_no_barrier(f, threads, later.span);
            BackendError::UnfencedHazard {
                earlier,
                later,
                cause,
            }
        }
        _ => BackendError::HazardWithoutAccesses,
    }
}

/// Why no barrier can go before the access at `span`: the innermost loop
/// around it whose bounds or condition may differ between threads, else
/// the innermost loop around it that holds a `break`, `continue` or
/// `return`, else a `return` before it. `None` when none is found.
fn why_no_barrier(f: &Func, threads: &ThreadIndex, span: Span) -> Option<NoBarrierCause> {
    fn holds_exit(f: &Func, b: &[StmtId]) -> Option<Span> {
        b.iter().find_map(|&s| match &f.stmts[s].kind {
            StmtKind::Break | StmtKind::Continue | StmtKind::Return => Some(f.stmt_span(s)),
            k => k.blocks().into_iter().find_map(|b| holds_exit(f, b)),
        })
    }
    fn holds_return(f: &Func, s: StmtId) -> Option<Span> {
        match &f.stmts[s].kind {
            StmtKind::Return => Some(f.stmt_span(s)),
            k => k
                .blocks()
                .into_iter()
                .find_map(|b| b.iter().find_map(|&t| holds_return(f, t))),
        }
    }
    // The statements around `span`, outermost first; `ret` gets the last
    // `return` met before it in program order.
    fn path(
        f: &Func,
        b: &[StmtId],
        span: Span,
        out: &mut Vec<StmtId>,
        ret: &mut Option<Span>,
    ) -> bool {
        for &s in b {
            let ss = f.stmt_span(s);
            let kind = &f.stmts[s].kind;
            // A candidate barrier carries the span of the access it is for.
            let barrier = matches!(kind, StmtKind::Barrier(_));
            if ss.start <= span.start && span.end <= ss.end && !barrier {
                out.push(s);
                for b in kind.blocks() {
                    if path(f, b, span, out, ret) {
                        break;
                    }
                }
                return true;
            }
            if let Some(r) = holds_return(f, s) {
                *ret = Some(r);
            }
        }
        false
    }
    let (mut around, mut ret) = (Vec::new(), None);
    path(f, &f.body, span, &mut around, &mut ret);
    for &s in around.iter().rev() {
        let varying = match &f.stmts[s].kind {
            StmtKind::For(l) => [l.start, l.end, l.step]
                .iter()
                .any(|&e| !threads.same_in_cta(f, e)),
            StmtKind::While { cond, .. } => !threads.same_in_cta(f, *cond),
            _ => false,
        };
        if varying {
            return Some(NoBarrierCause::VaryingLoop(f.stmt_span(s)));
        }
    }
    for &s in around.iter().rev() {
        let kind = &f.stmts[s].kind;
        if kind.is_loop() {
            if let Some(exit) = kind.blocks().into_iter().find_map(|b| holds_exit(f, b)) {
                return Some(NoBarrierCause::LoopLeftEarly {
                    loop_span: f.stmt_span(s),
                    exit,
                });
            }
        }
    }
    ret.map(NoBarrierCause::AfterReturn)
}

fn hazard_reason(f: &Func, p: &Event, x: &Event) -> String {
    match (p, x) {
        (
            Event::Access {
                buffer: pb,
                write: pw,
                copy: pc,
                line: pl,
                ..
            },
            Event::Access {
                buffer: xb,
                write: xw,
                copy: xc,
                line: xl,
                ..
            },
        ) => {
            let pn = &f.buffers[*pb].name;
            let xn = &f.buffers[*xb].name;
            let same = if pb == xb {
                String::new()
            } else {
                format!(" (`{xn}` reuses bytes of `{pn}`)")
            };
            format!(
                "`{pn}` {} at line {pl} is {} by other threads at line {xl}{same}",
                verb(*pw, *pc),
                if *xw {
                    format!("then {}", verb(*xw, *xc))
                } else {
                    "then read".to_string()
                },
            )
        }
        _ => String::new(),
    }
}

fn role_buffer(role: BarrierRole) -> (BufferId, bool) {
    // (buffer, whether the barrier fences accesses *before* a write)
    match role {
        BarrierRole::BeforeTile(b) | BarrierRole::CtaBefore(b) => (b, true),
        BarrierRole::AfterTileCopy(b)
        | BarrierRole::RingWait(b)
        | BarrierRole::AfterTileWrite(b)
        | BarrierRole::AfterRead(b)
        | BarrierRole::CtaWritten(b)
        | BarrierRole::CtaRead(b) => (b, false),
    }
}

/// What the reasons for eliding a candidate read: the decided stream.
struct Elided<'a> {
    f: &'a Func,
    plan: &'a SharedPlan,
    events: &'a [Event],
    regions: &'a [(usize, usize)],
    /// Indexed by `BarrierId`: the candidates kept.
    kept: &'a [bool],
    lines: &'a LineIndex,
}

impl Elided<'_> {
    /// Why the candidate `id`, first at `pos` in the stream, was elided.
    fn reason(&self, id: BarrierId, pos: Option<usize>) -> String {
        let Elided {
            f,
            plan,
            events,
            regions,
            kept,
            lines,
        } = *self;
        let (buf, before_kind) = role_buffer(f.barriers[id].role);
        let name = &f.buffers[buf].name;
        let Some(pos) = pos else {
            return "unreachable".to_string();
        };
        let touches = |e: &Event| match e {
            Event::Access { buffer, .. } => plan.overlap(f, *buffer, buf),
            _ => false,
        };
        // A kept barrier between `j` and `i` that runs on every path from one
        // to the other.
        let kept_line = |j: usize, i: usize| {
            events[j + 1..i].iter().find_map(|e| match e {
                Event::Candidate(b, r) if kept[b.0 as usize] && reach(regions, *r, i) <= j => {
                    Some(lines.line(f.barriers[*b].span.start as usize))
                }
                _ => None,
            })
        };
        if before_kind {
            let Some(last) = events[..pos].iter().rposition(touches) else {
                return format!("nothing before it touched the bytes of `{name}`");
            };
            if let Some(l) = kept_line(last, pos) {
                return format!("the barrier kept at line {l} already separates the earlier accesses to the bytes of `{name}`");
            }
            format!(
                "the earlier accesses to the bytes of `{name}` do not conflict with the later ones"
            )
        } else {
            let Some(next) = events[pos + 1..].iter().position(touches) else {
                return format!("nothing after it touches the bytes of `{name}`");
            };
            if let Some(l) = kept_line(pos, pos + 1 + next) {
                return format!("the barrier kept at line {l} comes first, before the next access to the bytes of `{name}`");
            }
            format!("no later access to the bytes of `{name}` conflicts with the ones before it")
        }
    }
}

/// Builds the event stream; `inst` numbers statement instances (a loop
/// body's two copies are different instances).
struct Flatten<'f> {
    f: &'f Func,
    lines: &'f LineIndex,
    out: Vec<Event>,
    inst: u32,
    /// For each loop: where its body's first copy starts, where the second
    /// starts, where the second ends (indices into `out`).
    loops: Vec<(usize, usize, usize)>,
    /// Each then-block, else-block and copy of a loop body: where it starts
    /// and ends in `out`.
    regions: Vec<(usize, usize)>,
    /// The regions being flattened, innermost last.
    open: Vec<u32>,
    /// The ring loops being flattened (`Func::rings`), with the copy of
    /// their body being flattened (0 or 1).
    trips: HashMap<StmtId, u32>,
    /// How many times each ring loop has been flattened: the number of
    /// the flattening under way, or the next one (for its prologue).
    flattenings: HashMap<StmtId, u32>,
}

impl Flatten<'_> {
    fn block(&mut self, block: &[StmtId]) {
        let f = self.f;
        for &s in block {
            self.inst += 1;
            let span = f.stmt_span(s);
            let fence = f.fence(s);
            let kind = &f.stmts[s].kind;
            // What the statement evaluates before it acts, except a
            // `While`'s condition, which follows its `pre` block.
            if !matches!(kind, StmtKind::While { .. }) {
                for e in f.stmt_operands(s) {
                    self.expr(e);
                }
            }
            match kind {
                StmtKind::Set(..) => {}
                StmtKind::Store(acc, _) => {
                    self.candidate(fence);
                    self.access(*acc, true);
                }
                StmtKind::RunStore {
                    access: acc, only, ..
                } => {
                    self.candidate(fence);
                    self.access(*acc, only.is_none());
                }
                StmtKind::TileCopy { buffer, at, .. } => {
                    // A fill of part of a buffer is a plain write for
                    // conflicts: the "same elements by the same thread"
                    // rule of two copies holds only for whole buffers.
                    self.buffer(*buffer, true, at.is_empty(), span);
                    if !at.is_empty() {
                        if let Some(Event::Access { fill, .. }) = self.out.last_mut() {
                            *fill = Some(s);
                        }
                    }
                }
                StmtKind::TileStore { buffer, .. } => {
                    self.buffer(*buffer, false, false, span);
                }
                // A copy in flight is a write of its stage from when it is
                // issued (that is when the simulator's racecheck starts
                // watching its bytes) to its wait, which comes before the
                // ring's barrier; other threads read the stage after it.
                StmtKind::AsyncCopy { buffer, stage, .. } => {
                    self.buffer(*buffer, true, true, span);
                    let written = self.stage_of(*buffer, Some(*stage));
                    if let Some(Event::Access { stage, .. }) = self.out.last_mut() {
                        *stage = written;
                    }
                }
                StmtKind::AsyncCommit | StmtKind::AsyncWait(_) => {}
                StmtKind::If { then, els, .. } => {
                    self.candidate(fence);
                    self.region(then);
                    self.region(els);
                }
                StmtKind::For(l) => {
                    self.candidate(fence);
                    let ring = f.rings.values().any(|r| r.looped == s);
                    let first = self.out.len();
                    if ring {
                        self.trips.insert(s, 0);
                    }
                    self.region(&l.body);
                    let second = self.out.len();
                    if ring {
                        self.trips.insert(s, 1);
                    }
                    self.region(&l.body);
                    self.trips.remove(&s);
                    if ring {
                        *self.flattenings.entry(s).or_default() += 1;
                    }
                    self.loops.push((first, second, self.out.len()));
                }
                StmtKind::CtaColl(c) => {
                    self.candidate(Some(c.before));
                    self.buffer(c.scratch, true, false, span);
                    self.candidate(Some(c.written));
                    self.buffer(c.scratch, false, false, span);
                    self.candidate(Some(c.read));
                }
                StmtKind::While { pre, cond, body } => {
                    // The first test always runs; each copy of the body and
                    // the test after it may not (a loop body seen twice, as
                    // for a `For`).
                    self.block(pre);
                    self.expr(*cond);
                    self.candidate(fence);
                    let copy = |s: &mut Self| {
                        s.region_with(|s| {
                            s.block(body);
                            s.block(pre);
                            s.expr(*cond);
                            s.candidate(fence);
                        })
                    };
                    let first = self.out.len();
                    copy(self);
                    let second = self.out.len();
                    copy(self);
                    self.loops.push((first, second, self.out.len()));
                }
                StmtKind::Atomic { access, .. } => {
                    self.candidate(fence);
                    self.atomic_access(*access);
                }
                StmtKind::Barrier(b) => self.candidate(Some(*b)),
                // Every warp reads the parts of both operands it needs
                // (`ldmatrix`): whole-buffer reads, by other threads than
                // those that copied the tiles.
                StmtKind::Mma { a, b, .. } => {
                    self.buffer(*a, false, false, span);
                    self.buffer(*b, false, false, span);
                }
                // Every lane writes the elements it holds into the box: a
                // fill, for conflicts.
                StmtKind::AccToTile { buffer, .. } => {
                    self.buffer(*buffer, true, false, span);
                    if let Some(Event::Access { fill, .. }) = self.out.last_mut() {
                        *fill = Some(s);
                    }
                }
                // Their subscripts and values are `stmt_operands`, above.
                StmtKind::AccStore { .. } | StmtKind::AccMap { .. } | StmtKind::AccZero(_) => {}
                // What follows an early exit is inside the region of the
                // branch or loop body that holds the exit, so barriers
                // there already count as ones that may not run.
                StmtKind::Break | StmtKind::Continue | StmtKind::Return | StmtKind::Fence => {}
            }
        }
    }

    /// A block that may not run, or may not run to its end, whenever the
    /// code around it does: a branch or one copy of a loop body.
    fn region(&mut self, block: &[StmtId]) {
        self.region_with(|s| s.block(block));
    }

    /// Like [`Self::region`], for whatever `emit` flattens.
    fn region_with(&mut self, emit: impl FnOnce(&mut Self)) {
        let r = self.regions.len() as u32;
        self.regions.push((self.out.len(), usize::MAX));
        self.open.push(r);
        emit(self);
        self.open.pop();
        self.regions[r as usize].1 = self.out.len();
    }

    fn candidate(&mut self, fence: Option<BarrierId>) {
        if let Some(b) = fence {
            self.out
                .push(Event::Candidate(b, self.open.last().copied()));
        }
    }

    /// The stage of ring buffer `b` an event of the trip being flattened
    /// touches: the trip's own (`read`), or the one a copy fills (`stage`:
    /// a constant in the prologue, the ring's write var in the loop, which
    /// is the stage of the trip before). `None` outside a ring's loop.
    fn stage_of(&self, b: BufferId, written: Option<ExprId>) -> Option<(u32, u32)> {
        let ring = self.f.rings.get(&b)?;
        let n = ring.stages;
        let trip = self.trips.get(&ring.looped).copied();
        let stage = match written {
            None => trip.map(|t| t % n),
            Some(e) => match self.f.exprs[e].kind {
                ExprKind::Const(crate::hir::ConstVal::Int(j)) => Some((j as u32) % n),
                ExprKind::Var(_) => trip.map(|t| (t + n - 1) % n),
                _ => None,
            },
        }?;
        let flattening = self.flattenings.get(&ring.looped).copied().unwrap_or(0);
        Some((flattening, stage))
    }

    /// A whole-buffer event (tile copy, tile store, collective scratch).
    fn buffer(&mut self, buffer: BufferId, write: bool, copy: bool, span: Span) {
        let stage = self.stage_of(buffer, None);
        self.out.push(Event::Access {
            stage,
            buffer,
            write,
            copy,
            atomic: false,
            fill: None,
            line: self.lines.line(span.start as usize),
            span,
            acc: None,
            inst: self.inst,
        });
    }

    /// A point or run access; `exact` is false for a one-element store into
    /// a run, whose elements the access does not say.
    fn access(&mut self, acc: AccessId, exact: bool) {
        self.access_event(acc, exact, false);
    }

    /// An atomic on a tile element.
    fn atomic_access(&mut self, acc: AccessId) {
        self.access_event(acc, true, true);
    }

    fn access_event(&mut self, acc: AccessId, exact: bool, atomic: bool) {
        let a = &self.f.accesses[acc];
        if let Mem::Buffer(b) = a.mem {
            let stage = self.stage_of(b, None);
            self.out.push(Event::Access {
                stage,
                buffer: b,
                write: a.store,
                copy: false,
                atomic,
                fill: None,
                line: self.lines.line(a.span.start as usize),
                span: a.span,
                acc: exact.then_some(acc),
                inst: self.inst,
            });
        }
    }

    /// The loads of `e`, in evaluation order.
    fn expr(&mut self, e: ExprId) {
        let f = self.f;
        f.walk_expr(e, &mut |x| {
            if let Some(acc) = f.load_access(x) {
                self.access(acc, true);
            }
        });
    }
}

/// Which subscripts are one-to-one functions of `ctx.thread`: built from
/// `ctx.thread`, adding or subtracting values the same in every thread
/// (`n - 1 - ctx.thread` too),
/// multiplying by a small nonzero constant, and vars set once outside any
/// loop to such a value.
struct ThreadIndex {
    /// Vars assigned exactly once, outside every loop, with their value.
    defs: HashMap<VarId, ExprId>,
}

impl ThreadIndex {
    fn new(f: &Func) -> ThreadIndex {
        let mut count: HashMap<VarId, u32> = HashMap::new();
        let mut defs = HashMap::new();
        f.walk_stmts(&f.body, &mut |s, loops| {
            // A var set in a loop, or by a collective, an atomic or a loop
            // header, counts as set more than once.
            match &f.stmts[s].kind {
                StmtKind::Set(v, e) => {
                    *count.entry(*v).or_default() += if loops > 0 { 2 } else { 1 };
                    defs.insert(*v, *e);
                }
                StmtKind::Atomic { dst: Some(dst), .. } => *count.entry(*dst).or_default() += 2,
                StmtKind::CtaColl(c) => *count.entry(c.dst).or_default() += 2,
                StmtKind::For(l) => *count.entry(l.var).or_default() += 2,
                _ => {}
            }
        });
        defs.retain(|v, _| count.get(v) == Some(&1));
        ThreadIndex { defs }
    }

    /// Whether `a` and `b` (of one buffer) touch different elements whenever
    /// different threads make them: on some axis (not the axis of a run)
    /// both subscripts are the same one-to-one function of the thread.
    fn disjoint(&self, f: &Func, a: AccessId, b: AccessId) -> bool {
        let (a, b) = (&f.accesses[a], &f.accesses[b]);
        let run_axis = |s: &Shape| match s {
            Shape::Run { axis, .. } => Some(*axis),
            _ => None,
        };
        if a.index.len() != b.index.len() {
            return false;
        }
        (0..a.index.len()).any(|k| {
            if run_axis(&a.shape) == Some(k) || run_axis(&b.shape) == Some(k) {
                return false;
            }
            if f.same_value(a.index[k], b.index[k], Within::Kernel)
                && self.one_to_one(f, a.index[k])
            {
                return true;
            }
            // `t[2 * i]` and `t[2 * i + 1]`: the same stride over a
            // one-to-one function of the thread, at offsets the stride
            // does not divide, never meet, in one thread or two.
            match (self.strided(f, a.index[k]), self.strided(f, b.index[k])) {
                (Some((xa, sa, ca)), Some((xb, sb, cb))) => {
                    sa == sb
                        && (ca - cb).rem_euclid(sa) != 0
                        && f.same_value(xa, xb, Within::Kernel)
                }
                _ => false,
            }
        })
    }

    /// `e` as `s * x + c`: `x` one-to-one in `ctx.thread`, `s` a positive
    /// constant and `c` a constant, both small (no wrap: threads are fewer
    /// than 1024).
    fn strided(&self, f: &Func, e: ExprId) -> Option<(ExprId, i128, i128)> {
        let small = |e: ExprId| f.const_int(e).filter(|c| c.abs() < (1 << 20));
        match &f.exprs[e].kind {
            ExprKind::Var(v) => self.defs.get(v).and_then(|d| self.strided(f, *d)),
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), x, y) => {
                let sign = if *op == BinOp::Sub { -1 } else { 1 };
                if let Some(c) = small(*y) {
                    let (x, s, c0) = self.strided(f, *x)?;
                    return Some((x, s, c0 + sign * c));
                }
                match (small(*x), *op) {
                    (Some(c), BinOp::Add) => {
                        let (y, s, c0) = self.strided(f, *y)?;
                        Some((y, s, c0 + c))
                    }
                    _ => None,
                }
            }
            ExprKind::Binary(BinOp::Mul, x, y) => {
                let (s, x) = match (small(*x), small(*y)) {
                    (_, Some(s)) => (s, *x),
                    (Some(s), _) => (s, *y),
                    _ => return None,
                };
                (s > 0 && self.one_to_one(f, x)).then_some((x, s, 0))
            }
            _ => self.one_to_one(f, e).then_some((e, 1, 0)),
        }
    }

    fn one_to_one(&self, f: &Func, e: ExprId) -> bool {
        match &f.exprs[e].kind {
            ExprKind::Ctx(CtxField::Thread) => true,
            ExprKind::Var(v) => self.defs.get(v).is_some_and(|d| self.one_to_one(f, *d)),
            ExprKind::Binary(BinOp::Add, x, y) => {
                (self.one_to_one(f, *x) && self.same_in_cta(f, *y))
                    || (self.same_in_cta(f, *x) && self.one_to_one(f, *y))
            }
            ExprKind::Binary(BinOp::Sub, x, y) => {
                (self.one_to_one(f, *x) && self.same_in_cta(f, *y))
                    || (self.same_in_cta(f, *x) && self.one_to_one(f, *y))
            }
            ExprKind::Binary(BinOp::Mul, x, y) => {
                // Threads are fewer than 1024, so `t * c` does not wrap.
                let small = |e: ExprId| {
                    f.const_int(e)
                        .is_some_and(|c| c != 0 && c.abs() < (1 << 20))
                };
                (self.one_to_one(f, *x) && small(*y)) || (small(*x) && self.one_to_one(f, *y))
            }
            _ => false,
        }
    }

    fn same_in_cta(&self, f: &Func, e: ExprId) -> bool {
        match &f.exprs[e].kind {
            ExprKind::Const(_) | ExprKind::Param(_) | ExprKind::Dim(_) => true,
            ExprKind::Ctx(c) => !matches!(c, CtxField::Thread | CtxField::Warp | CtxField::Lane),
            ExprKind::Var(v) => self.defs.get(v).is_some_and(|d| self.same_in_cta(f, *d)),
            ExprKind::Unary(_, x) | ExprKind::Convert(x) => self.same_in_cta(f, *x),
            ExprKind::Binary(_, x, y) => self.same_in_cta(f, *x) && self.same_in_cta(f, *y),
            _ => false,
        }
    }
}

/// Whether two tile fills (`TileCopy` with a place in the buffer, or
/// `AccToTile`) write boxes of the buffer that share no element.
fn disjoint_boxes(f: &Func, a: StmtId, b: StmtId) -> bool {
    let box_of = |s: StmtId| match &f.stmts[s].kind {
        StmtKind::TileCopy { access, at, .. } => match &f.accesses[*access].shape {
            Shape::Tile { shape } if shape.len() == at.len() => Some((at.clone(), shape.clone())),
            _ => None,
        },
        StmtKind::AccToTile { acc, at, .. } => {
            Some((at.to_vec(), vec![f.accs[*acc].rows, f.accs[*acc].cols]))
        }
        _ => None,
    };
    let (Some((a0, al)), Some((b0, bl))) = (box_of(a), box_of(b)) else {
        return false;
    };
    // Disjoint when they are apart on some axis.
    (0..a0.len()).any(|k| {
        let (a_end, b_end) = (
            u64::from(a0[k]) + u64::from(al[k]),
            u64::from(b0[k]) + u64::from(bl[k]),
        );
        a_end <= u64::from(b0[k]) || b_end <= u64::from(a0[k])
    })
}
