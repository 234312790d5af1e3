//! From recorded warp instructions to steps. Each warp's instruction stream
//! is cut into pieces: a run of instructions on one source line, split
//! further at each shuffle step of a butterfly and at each barrier. Pieces
//! get a key (line, enclosing loop iterations, occurrence, sub-step); the
//! pieces of all warps with the same key form one step of the CTA. Then each
//! step's memory boxes, 128-byte lines, masked tile elements, shared bytes,
//! threads and shuffles are summarized. Sentences are `readout.rs`'s job.

use crate::model::*;
use crate::readout;
use crate::record::{CtaEvents, RawAccess, RawEvent, RawSpace};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Bytes in a global-memory line: the unit in which warps' accesses are
/// counted as "lines".
pub const LINE_BYTES: u64 = 128;

/// More ranges than this in one box are merged into fewer, wider ones
/// (marked approximate) so pages stay small.
pub const MAX_RANGES_PER_BOX: usize = 64;

/// Where a simulator buffer lives: which tensor, at which address.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferMap {
    pub tensor: usize,
    pub base: u64,
    pub len_bytes: u64,
}

/// A tile copy or tile store of the source, evaluated for one CTA.
#[derive(Clone, Debug, PartialEq)]
pub struct TileOp {
    pub line: u32,
    pub tensor: usize,
    /// The tile's first element along each axis, when it could be evaluated.
    pub origin: Option<Vec<i64>>,
    pub shape: Vec<u64>,
    pub store: bool,
}

/// Everything about the launch that steps need besides the events.
pub struct Layout<'a> {
    pub tensors: &'a [TensorInfo],
    /// Indexed by the simulator's buffer index.
    pub buffers: &'a [BufferMap],
    pub shared: &'a SharedPlan,
    pub barriers: &'a [Barrier],
    pub loops: &'a [LoopInfo],
    /// Lines on which a source statement starts; instructions on other
    /// lines (the kernel's prologue, a closing brace) join a neighbouring
    /// step. Empty: every line is a statement's.
    pub statement_lines: &'a BTreeSet<u32>,
    pub tiles: &'a [TileOp],
    pub threads: u32,
    pub opcodes: &'a BTreeMap<u32, String>,
    /// The kernel's accumulator tiles and their warp layouts.
    pub accumulators: &'a [Accumulator],
    /// The `stages S` loops' `cp.async` rings.
    pub rings: &'a [Ring],
}

impl Layout<'_> {
    /// Warps per CTA.
    pub fn warp_count(&self) -> u32 {
        self.threads.div_ceil(32)
    }

    /// The tensor an address falls in, and the element index there.
    fn locate(&self, access: &RawAccess, addr: u64) -> Option<(usize, u64)> {
        let by_buffer = access
            .buffer
            .and_then(|b| self.buffers.get(b))
            .filter(|m| addr >= m.base && addr < m.base + m.len_bytes.max(1));
        let map = by_buffer.or_else(|| {
            self.buffers
                .iter()
                .find(|m| addr >= m.base && addr < m.base + m.len_bytes)
        })?;
        let eb = u64::from(self.tensors[map.tensor].elem_bytes.max(1));
        Some((map.tensor, (addr - map.base) / eb))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PieceKind {
    Statement,
    Shuffle,
    Barrier,
}

/// A run of one warp's instructions that belongs to one step.
#[derive(Clone, Debug)]
struct Piece {
    line: u32,
    kind: PieceKind,
    events: Vec<usize>,
    /// For shuffle pieces: the (lane, source) pairs of the first shuffle.
    signature: Vec<(u32, u32)>,
    iterations: Vec<LoopIteration>,
}

impl Piece {
    fn new(line: u32, kind: PieceKind) -> Piece {
        Piece {
            line,
            kind,
            events: vec![],
            signature: vec![],
            iterations: vec![],
        }
    }
}

/// The identity of a step, the same across warps.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct StepKey {
    line: u32,
    iterations: Vec<(usize, u32)>,
    occurrence: u32,
    kind: u8,
    /// The piece's index among the pieces of its kind in the instance, so
    /// a warp that only waits at a line's barrier matches the warps that
    /// also ran the line's statement.
    sub: u32,
}

/// Build the steps of one CTA.
pub fn build_cta(layout: &Layout<'_>, cta: &CtaEvents, max_steps: usize) -> CtaTrace {
    let mut by_warp: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, e) in cta.events.iter().enumerate() {
        by_warp.entry(e.warp).or_default().push(i);
    }
    let mut order: Vec<StepKey> = Vec::new();
    let mut known: HashSet<StepKey> = HashSet::new();
    let mut members: HashMap<StepKey, Vec<(u32, Piece)>> = HashMap::new();
    for (&warp, events) in &by_warp {
        let pieces = cut_pieces(&cta.events, events);
        let pieces = merge_off_statement_lines(layout.statement_lines, pieces);
        let pieces = assign_iterations(layout.loops, pieces);
        let pieces = merge_loop_headers(layout.loops, &cta.events, pieces);
        let keyed = key_pieces(pieces);
        let mut cursor = 0usize;
        for (key, piece) in keyed {
            if known.contains(&key) {
                if let Some(i) = order[cursor.min(order.len())..]
                    .iter()
                    .position(|k| *k == key)
                {
                    cursor += i + 1;
                }
            } else {
                known.insert(key.clone());
                order.insert(cursor.min(order.len()), key.clone());
                cursor += 1;
            }
            members.entry(key).or_default().push((warp, piece));
        }
    }
    let truncated_steps = order.len() > max_steps;
    order.truncate(max_steps);
    let mut steps = Vec::with_capacity(order.len());
    for key in &order {
        let Some(pieces) = members.get(key) else {
            continue;
        };
        steps.push(summarize(layout, &cta.events, key, pieces));
    }
    number_shuffles(&mut steps);
    for step in &mut steps {
        step.readout = readout::describe(layout, step);
    }
    CtaTrace {
        cta: cta.cta,
        cta_id: cta.cta_id,
        steps,
        truncated: cta.truncated || truncated_steps,
    }
}

/// Cut one warp's events into pieces: a new piece at each change of source
/// line, at each shuffle with a pattern other than the piece's, and around
/// each barrier. Instructions with no line info join the current piece.
fn cut_pieces(all: &[RawEvent], events: &[usize]) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut line = events.iter().find_map(|&i| all[i].line).unwrap_or_default();
    for &i in events {
        let e = &all[i];
        line = e.line.unwrap_or(line);
        let current = pieces.last_mut().filter(|p| p.line == line);
        if e.barrier {
            let mut p = Piece::new(line, PieceKind::Barrier);
            p.events.push(i);
            pieces.push(p);
            continue;
        }
        match current {
            Some(p) if e.shuffle => {
                let signature = shuffle_signature(e);
                match p.kind {
                    PieceKind::Statement => {
                        p.kind = PieceKind::Shuffle;
                        p.signature = signature;
                        p.events.push(i);
                    }
                    PieceKind::Shuffle if p.signature == signature => p.events.push(i),
                    _ => {
                        let mut p = Piece::new(line, PieceKind::Shuffle);
                        p.signature = signature;
                        p.events.push(i);
                        pieces.push(p);
                    }
                }
            }
            Some(p) if p.kind != PieceKind::Barrier => p.events.push(i),
            _ => {
                let kind = if e.shuffle {
                    PieceKind::Shuffle
                } else {
                    PieceKind::Statement
                };
                let mut p = Piece::new(line, kind);
                if e.shuffle {
                    p.signature = shuffle_signature(e);
                }
                p.events.push(i);
                pieces.push(p);
            }
        }
    }
    pieces
}

/// Pieces on lines where no statement starts join the piece before them,
/// or the one after when they come first (the kernel's prologue).
fn merge_off_statement_lines(lines: &BTreeSet<u32>, pieces: Vec<Piece>) -> Vec<Piece> {
    if lines.is_empty() {
        return pieces;
    }
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    let mut pending: Vec<usize> = Vec::new();
    for mut piece in pieces {
        let off = !lines.contains(&piece.line) && piece.kind != PieceKind::Barrier;
        if off {
            match out.last_mut() {
                Some(prev) if prev.kind != PieceKind::Barrier => prev.events.extend(piece.events),
                _ => pending.extend(piece.events),
            }
            continue;
        }
        if !pending.is_empty() {
            pending.append(&mut piece.events);
            piece.events = std::mem::take(&mut pending);
        }
        out.push(piece);
    }
    if let (Some(last), false) = (out.last_mut(), pending.is_empty()) {
        last.events.extend(pending);
    }
    out
}

/// A shuffle's pattern relative to the lane, so the same butterfly step
/// matches whatever lanes were active.
fn shuffle_signature(e: &RawEvent) -> Vec<(u32, u32)> {
    e.shuffles.clone()
}

/// Give each piece the iterations of the loops around it. A loop's
/// iteration advances when the warp enters its body from its header (or
/// from outside), or comes back to the first body line it ran.
fn assign_iterations(loops: &[LoopInfo], mut pieces: Vec<Piece>) -> Vec<Piece> {
    #[derive(Clone, Copy)]
    struct State {
        iteration: Option<u32>,
        in_body: bool,
        first_line: u32,
    }
    let mut states: Vec<Option<State>> = vec![None; loops.len()];
    let mut prev_line = 0;
    for piece in &mut pieces {
        let line = piece.line;
        // A barrier carries the line of the access it protects, which may
        // be inside a loop it precedes: it takes the loops' state as it is
        // and does not move it.
        let moves = piece.kind != PieceKind::Barrier;
        for (li, lp) in loops.iter().enumerate().filter(|_| moves) {
            let state = &mut states[li];
            if line == lp.line {
                let s = state.get_or_insert(State {
                    iteration: None,
                    in_body: false,
                    first_line: 0,
                });
                s.in_body = false;
            } else if line > lp.line && line <= lp.end_line {
                match state {
                    None => {
                        *state = Some(State {
                            iteration: Some(0),
                            in_body: true,
                            first_line: line,
                        })
                    }
                    Some(s) if !s.in_body => {
                        s.iteration = Some(s.iteration.map_or(0, |i| i + 1));
                        s.in_body = true;
                        s.first_line = line;
                    }
                    Some(s) => {
                        if line == s.first_line && prev_line != line {
                            s.iteration = Some(s.iteration.map_or(0, |i| i + 1));
                        }
                    }
                }
            } else {
                *state = None;
            }
        }
        piece.iterations = loops
            .iter()
            .enumerate()
            .filter(|(_, lp)| line > lp.line && line <= lp.end_line)
            .filter_map(|(li, _)| {
                let s = states[li]?;
                // A barrier between a loop's header and its body waits
                // for the iteration about to start.
                let iteration = if s.in_body {
                    s.iteration?
                } else {
                    s.iteration.map_or(0, |i| i + 1)
                };
                Some(LoopIteration {
                    r#loop: li,
                    iteration,
                })
            })
            .collect();
        if moves {
            prev_line = line;
        }
    }
    pieces
}

/// A loop header's bookkeeping between iterations (compare, increment,
/// branch) is not a statement of its own: fold it into the body step
/// before it. The header's first run (the loop's start) stays a step.
fn merge_loop_headers(loops: &[LoopInfo], all: &[RawEvent], pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        let header = loops.iter().find(|lp| lp.line == piece.line);
        let quiet = piece.kind == PieceKind::Statement
            && piece.events.iter().all(|&i| all[i].accesses.is_empty());
        if let (Some(lp), true, Some(prev)) = (header, quiet, out.last_mut()) {
            let li = loops.iter().position(|l| l.line == lp.line);
            if prev.iterations.iter().any(|it| Some(it.r#loop) == li) {
                prev.events.extend(piece.events);
                continue;
            }
        }
        out.push(piece);
    }
    out
}

/// Key each piece: pieces of one statement instance (consecutive pieces on
/// one line) share line, iterations and occurrence and differ in kind and
/// `sub`.
fn key_pieces(pieces: Vec<Piece>) -> Vec<(StepKey, Piece)> {
    let mut seen: HashMap<(u32, Vec<(usize, u32)>), u32> = HashMap::new();
    let mut out: Vec<(StepKey, Piece)> = Vec::with_capacity(pieces.len());
    let mut prev: Option<(u32, Vec<(usize, u32)>)> = None;
    let mut subs = [0u32; 3];
    let mut occurrence = 0;
    for piece in pieces {
        let iterations: Vec<(usize, u32)> = piece
            .iterations
            .iter()
            .map(|it| (it.r#loop, it.iteration))
            .collect();
        let id = (piece.line, iterations.clone());
        if prev.as_ref() != Some(&id) {
            let n = seen.entry(id.clone()).or_insert(0);
            occurrence = *n;
            *n += 1;
            subs = [0; 3];
            prev = Some(id);
        }
        let kind = piece.kind as u8;
        let sub = subs[kind as usize];
        subs[kind as usize] += 1;
        out.push((
            StepKey {
                line: piece.line,
                iterations,
                occurrence,
                kind,
                sub,
            },
            piece,
        ));
    }
    out
}

/// Number each shuffle step within its run of shuffle steps on one line.
fn number_shuffles(steps: &mut [Step]) {
    let mut i = 0;
    while i < steps.len() {
        if !matches!(steps[i].kind, StepKind::Shuffle { .. }) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < steps.len()
            && steps[j].line == steps[i].line
            && steps[j].iterations == steps[i].iterations
            && matches!(steps[j].kind, StepKind::Shuffle { .. })
        {
            j += 1;
        }
        let of = (j - i) as u32;
        for (n, step) in steps[i..j].iter_mut().enumerate() {
            step.kind = StepKind::Shuffle {
                n: n as u32 + 1,
                of,
            };
        }
        i = j;
    }
}

/// Summarize one step from the pieces of every warp that ran it.
fn summarize(
    layout: &Layout<'_>,
    all: &[RawEvent],
    key: &StepKey,
    pieces: &[(u32, Piece)],
) -> Step {
    let first = &pieces[0].1;
    let kind = match first.kind {
        PieceKind::Statement => StepKind::Statement,
        PieceKind::Shuffle => StepKind::Shuffle { n: 1, of: 1 },
        PieceKind::Barrier => StepKind::Barrier,
    };
    let events: Vec<&RawEvent> = pieces
        .iter()
        .flat_map(|(_, p)| p.events.iter().map(|&i| &all[i]))
        .collect();
    // The threads taking part: those that moved data (made a memory
    // access or shuffled) when any did, since a guarded store reaches every
    // lane but only the lanes whose guard holds execute it; else every lane
    // that ran the step's instructions.
    let acts = |e: &RawEvent| e.shuffle || !e.accesses.is_empty();
    let acting = events.iter().any(|e| acts(e));
    let mut thread_set = BTreeSet::new();
    let mut warps = BTreeSet::new();
    let mut lanes0 = 0u32;
    let mut shuffles0 = BTreeSet::new();
    for e in &events {
        if e.warp == 0 {
            shuffles0.extend(e.shuffles.iter().map(|&(l, s)| [l, s]));
        }
        if acting && !acts(e) {
            continue;
        }
        let lanes = if e.shuffle || e.accesses.is_empty() {
            e.active
        } else {
            e.accesses
                .iter()
                .filter(|a| a.thread / 32 == e.warp)
                .fold(0u32, |m, a| m | 1 << (a.thread % 32))
        };
        if lanes != 0 {
            warps.insert(e.warp);
        }
        for lane in 0..32 {
            if lanes & (1 << lane) != 0 {
                let t = e.warp * 32 + lane;
                if t < layout.threads {
                    thread_set.insert(t);
                }
            }
        }
        if e.warp == 0 {
            lanes0 |= lanes;
        }
    }
    let shuffles0: Vec<[u32; 2]> = shuffles0.into_iter().collect();
    let shuffle = (kind != StepKind::Statement || !shuffles0.is_empty())
        .then(|| shuffle_pattern(&shuffles0))
        .flatten();
    let barrier = if kind == StepKind::Barrier {
        find_barrier(layout.barriers, key.line, key.sub as usize)
    } else {
        None
    };
    let accesses = access_groups(layout, &events);
    let (boxes, extra_lines) = tensor_boxes(layout, &events);
    let shared = shared_touches(layout, &events);
    let masked = if kind == StepKind::Statement {
        masked_boxes(layout, key.line, &boxes)
    } else {
        vec![]
    };
    Step {
        line: key.line,
        kind,
        iterations: first.iterations.clone(),
        instructions: events.len() as u32,
        threads: to_ranges32(thread_set.into_iter()),
        warps: warps.into_iter().collect(),
        lanes0,
        shuffles0,
        shuffle,
        accesses,
        boxes,
        extra_lines,
        masked,
        shared,
        barrier,
        readout: vec![],
    }
}

/// The barrier a step waits at: the `nth` kept barrier of its line (a CTA
/// collective has several on one line), else the nearest kept barrier
/// before it.
fn find_barrier(barriers: &[Barrier], line: u32, nth: usize) -> Option<usize> {
    let on_line: Vec<usize> = (0..barriers.len())
        .filter(|&i| barriers[i].kept && barriers[i].line == line)
        .collect();
    on_line
        .get(nth.min(on_line.len().saturating_sub(1)))
        .copied()
        .or_else(|| {
            barriers
                .iter()
                .enumerate()
                .filter(|(_, b)| b.kept && b.line <= line)
                .max_by_key(|(_, b)| b.line)
                .map(|(i, _)| i)
        })
}

/// The shuffle pattern that every pair follows, if any.
pub fn shuffle_pattern(pairs: &[[u32; 2]]) -> Option<ShufflePattern> {
    let &[l0, s0] = pairs.first()?;
    let all = |f: &dyn Fn(u32, u32) -> bool| pairs.iter().all(|&[l, s]| f(l, s));
    let m = l0 ^ s0;
    if m != 0 && all(&|l, s| l ^ s == m) {
        return Some(ShufflePattern::Xor(m));
    }
    if s0 > l0 && all(&|l, s| s == l + (s0 - l0)) {
        return Some(ShufflePattern::Down(s0 - l0));
    }
    if s0 < l0 && all(&|l, s| l == s + (l0 - s0)) {
        return Some(ShufflePattern::Up(l0 - s0));
    }
    if all(&|_, s| s == s0) {
        return Some(ShufflePattern::From(s0));
    }
    Some(ShufflePattern::Mixed)
}

fn space_of(a: &RawAccess) -> Space {
    match a.space {
        RawSpace::Global => Space::Global,
        RawSpace::Shared => Space::Shared,
        RawSpace::Local => Space::Local,
    }
}

fn kind_of(a: &RawAccess) -> AccessKind {
    if a.atomic {
        AccessKind::Atomic
    } else if a.write {
        AccessKind::Write
    } else {
        AccessKind::Read
    }
}

/// Lines touched by one warp instruction's global accesses, with the
/// requested bytes in each.
fn lines_of(accesses: &[&RawAccess]) -> (BTreeMap<u64, u64>, u64) {
    let mut bytes: Vec<[u64; 2]> = accesses
        .iter()
        .map(|a| [a.addr, a.addr + u64::from(a.bytes)])
        .collect();
    bytes.sort_unstable();
    let merged = merge_ranges(bytes);
    let mut per_line: BTreeMap<u64, u64> = BTreeMap::new();
    let mut distinct = 0;
    for [s, e] in merged {
        distinct += e - s;
        let mut at = s;
        while at < e {
            let line = at / LINE_BYTES;
            let end = ((line + 1) * LINE_BYTES).min(e);
            *per_line.entry(line).or_insert(0) += end - at;
            at = end;
        }
    }
    (per_line, distinct)
}

fn access_groups(layout: &Layout<'_>, events: &[&RawEvent]) -> Vec<AccessGroup> {
    let mut groups: BTreeMap<(u32, u8), AccessGroup> = BTreeMap::new();
    for e in events {
        // One instruction may touch several spaces only in theory; group by
        // the space and kind of each access anyway.
        let mut parts: BTreeMap<(u8, bool), Vec<&RawAccess>> = BTreeMap::new();
        for a in &e.accesses {
            parts
                .entry((space_of(a) as u8, a.write))
                .or_default()
                .push(a);
        }
        for ((space_tag, write), accs) in parts {
            let space = space_of(accs[0]);
            let kind = kind_of(accs[0]);
            let target = match space {
                Space::Global => accs[0..1]
                    .iter()
                    .find_map(|a| layout.locate(a, a.addr))
                    .map(|(t, _)| layout.tensors[t].name.clone()),
                Space::Shared => shared_buffer_at(layout.shared, accs[0].addr as u32)
                    .map(|b| layout.shared.buffers[b].name.clone()),
                Space::Local => None,
            };
            let group = groups
                .entry((e.pc, space_tag * 2 + write as u8))
                .or_insert_with(|| AccessGroup {
                    pc: e.pc,
                    opcode: layout.opcodes.get(&e.pc).cloned().unwrap_or_default(),
                    space,
                    kind,
                    target,
                    bytes_per_lane: 0,
                    warps: vec![],
                });
            group.bytes_per_lane = group
                .bytes_per_lane
                .max(accs.iter().map(|a| a.bytes).max().unwrap_or(0));
            let (per_line, distinct) = lines_of(&accs);
            let (lines, min_lines) = if space == Space::Global {
                (per_line.len() as u32, distinct.div_ceil(LINE_BYTES) as u32)
            } else {
                (0, 0)
            };
            let lanes = accs.iter().map(|a| a.thread).collect::<BTreeSet<_>>().len() as u32;
            match group.warps.iter_mut().find(|w| w.warp == e.warp) {
                Some(w) => {
                    w.executions += 1;
                    w.lanes += lanes;
                    w.bytes += distinct;
                    w.lines += lines;
                    w.min_lines += min_lines;
                    w.extra_lines = w.lines - w.min_lines;
                }
                None => group.warps.push(WarpAccess {
                    warp: e.warp,
                    executions: 1,
                    lanes,
                    bytes: distinct,
                    lines,
                    min_lines,
                    extra_lines: lines - min_lines,
                }),
            }
        }
    }
    let mut out: Vec<AccessGroup> = groups.into_values().collect();
    for g in &mut out {
        g.warps.sort_by_key(|w| w.warp);
    }
    out
}

/// Element boxes per (tensor, warp, kind), and the elements of extra lines
/// per tensor: for each warp instruction that touched more lines than its
/// bytes need, the lines carrying the fewest requested bytes are the extra.
fn tensor_boxes(layout: &Layout<'_>, events: &[&RawEvent]) -> (Vec<TensorBox>, Vec<ElementRanges>) {
    let mut boxes: BTreeMap<(usize, u32, AccessKind), Vec<[u64; 2]>> = BTreeMap::new();
    let mut extra: BTreeMap<usize, Vec<[u64; 2]>> = BTreeMap::new();
    for e in events {
        let global: Vec<&RawAccess> = e
            .accesses
            .iter()
            .filter(|a| a.space == RawSpace::Global)
            .collect();
        for a in &global {
            let Some((t, first)) = layout.locate(a, a.addr) else {
                continue;
            };
            let eb = u64::from(layout.tensors[t].elem_bytes.max(1));
            let count = u64::from(a.bytes).div_ceil(eb).max(1);
            boxes
                .entry((t, e.warp, kind_of(a)))
                .or_default()
                .push([first, first + count]);
        }
        for write in [false, true] {
            let accs: Vec<&RawAccess> = global
                .iter()
                .copied()
                .filter(|a| a.write == write)
                .collect();
            if accs.is_empty() {
                continue;
            }
            let (per_line, distinct) = lines_of(&accs);
            let extra_count = per_line
                .len()
                .saturating_sub(distinct.div_ceil(LINE_BYTES) as usize);
            if extra_count == 0 {
                continue;
            }
            let mut lines: Vec<(u64, u64)> = per_line.into_iter().map(|(l, b)| (b, l)).collect();
            lines.sort_unstable();
            for &(_, line) in lines.iter().take(extra_count) {
                let start = line * LINE_BYTES;
                let probe = RawAccess {
                    addr: start,
                    ..(*accs[0]).clone()
                };
                let located = layout
                    .locate(&probe, start)
                    .or_else(|| layout.locate(accs[0], accs[0].addr));
                let Some((t, _)) = located else { continue };
                let Some(map) = layout.buffers.iter().find(|m| m.tensor == t) else {
                    continue;
                };
                let eb = u64::from(layout.tensors[t].elem_bytes.max(1));
                let lo = start.max(map.base);
                let hi = (start + LINE_BYTES).min(map.base + map.len_bytes);
                if hi > lo {
                    extra
                        .entry(t)
                        .or_default()
                        .push([(lo - map.base) / eb, (hi - map.base).div_ceil(eb)]);
                }
            }
        }
    }
    let boxes = boxes
        .into_iter()
        .map(|((tensor, warp, kind), mut ranges)| {
            ranges.sort_unstable();
            let (ranges, approximate) = limit_ranges(merge_ranges(ranges), MAX_RANGES_PER_BOX);
            TensorBox {
                tensor,
                warp,
                kind,
                ranges,
                approximate,
            }
        })
        .collect();
    let extra = extra
        .into_iter()
        .map(|(tensor, mut ranges)| {
            ranges.sort_unstable();
            let (ranges, _) = limit_ranges(merge_ranges(ranges), MAX_RANGES_PER_BOX);
            ElementRanges { tensor, ranges }
        })
        .collect();
    (boxes, extra)
}

fn shared_buffer_at(plan: &SharedPlan, offset: u32) -> Option<usize> {
    plan.buffers
        .iter()
        .position(|b| offset >= b.offset && offset < b.offset + b.bytes)
}

fn shared_touches(layout: &Layout<'_>, events: &[&RawEvent]) -> Vec<SharedTouch> {
    let mut by: BTreeMap<(Option<usize>, AccessKind), Vec<[u64; 2]>> = BTreeMap::new();
    for e in events {
        for a in e.accesses.iter().filter(|a| a.space == RawSpace::Shared) {
            let buffer = shared_buffer_at(layout.shared, a.addr as u32);
            by.entry((buffer, kind_of(a)))
                .or_default()
                .push([a.addr, a.addr + u64::from(a.bytes)]);
        }
    }
    by.into_iter()
        .map(|((buffer, kind), mut ranges)| {
            ranges.sort_unstable();
            let (ranges, _) = limit_ranges(merge_ranges(ranges), MAX_RANGES_PER_BOX);
            SharedTouch {
                buffer,
                kind,
                ranges: ranges
                    .into_iter()
                    .map(|[s, e]| [s as u32, e as u32])
                    .collect(),
            }
        })
        .collect()
}

/// The elements `boxes` touch, from the smallest to one past the largest
/// (each box's ranges are in order); `None` when they touch none.
pub(crate) fn touched_extent(boxes: &[&TensorBox]) -> Option<[u64; 2]> {
    let firsts = boxes.iter().filter_map(|b| b.ranges.first());
    let lasts = boxes.iter().filter_map(|b| b.ranges.last());
    Some([firsts.map(|r| r[0]).min()?, lasts.map(|r| r[1]).max()?])
}

/// The tile elements past the tensor's end for a tile copy or store on
/// this line. The tile's origin comes from its evaluated start subscripts,
/// or else from the smallest element the step touched.
fn masked_boxes(layout: &Layout<'_>, line: u32, boxes: &[TensorBox]) -> Vec<MaskedBox> {
    let mut out = Vec::new();
    for tile in layout.tiles.iter().filter(|t| t.line == line) {
        let info = &layout.tensors[tile.tensor];
        let touched: Vec<&TensorBox> = boxes.iter().filter(|b| b.tensor == tile.tensor).collect();
        if touched.is_empty() && tile.origin.is_none() {
            continue;
        }
        let rank = info.shape.len();
        if rank == 0 || rank > 2 || tile.shape.len() != rank {
            continue;
        }
        let origin: Vec<i64> = match &tile.origin {
            Some(o) if o.len() == rank => o.clone(),
            Some(_) => continue,
            None => {
                let first = touched_extent(&touched).map_or(0, |[first, _]| first);
                if rank == 1 {
                    vec![first as i64]
                } else {
                    let min_col = touched
                        .iter()
                        .flat_map(|b| b.ranges.iter())
                        .map(|r| r[0] % info.cols.max(1))
                        .min()
                        .unwrap_or(0);
                    vec![(first / info.cols.max(1)) as i64, min_col as i64]
                }
            }
        };
        // The 2-D view: rank 1 is one row.
        let (r0, rl, c0, cl) = if rank == 1 {
            (0i64, 1u64, origin[0], tile.shape[0])
        } else {
            (origin[0], tile.shape[0], origin[1], tile.shape[1])
        };
        let (rows, cols) = (info.rows as i64, info.cols as i64);
        let r_end = r0 + rl as i64;
        let c_end = c0 + cl as i64;
        // Columns past the end, for the rows inside the tensor.
        let in_r0 = r0.max(0);
        let in_r1 = r_end.min(rows);
        if c_end > cols && in_r1 > in_r0 {
            let cs = c0.max(cols);
            out.push(MaskedBox {
                tensor: tile.tensor,
                rows: [in_r0 as u64, in_r1 as u64],
                cols: [cs as u64, c_end as u64],
                elements: ((in_r1 - in_r0) * (c_end - cs)) as u64,
            });
        }
        // Rows past the end, all the tile's columns.
        if r_end > rows {
            let rs = r0.max(rows);
            let cs = c0.max(0);
            out.push(MaskedBox {
                tensor: tile.tensor,
                rows: [rs as u64, r_end as u64],
                cols: [cs as u64, c_end.max(cs) as u64],
                elements: ((r_end - rs) * (c_end - cs).max(0)) as u64,
            });
        }
    }
    out
}

/// Sort-merged ranges: overlapping or touching ranges joined. The input
/// must be sorted.
pub fn merge_ranges<T: Copy + Ord>(sorted: Vec<[T; 2]>) -> Vec<[T; 2]> {
    let mut out: Vec<[T; 2]> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match out.last_mut() {
            Some(last) if r[0] <= last[1] => {
                if r[1] > last[1] {
                    last[1] = r[1];
                }
            }
            _ => out.push(r),
        }
    }
    out
}

/// At most `max` ranges: close the smallest gaps first. Returns whether
/// anything was merged.
pub fn limit_ranges(mut ranges: Vec<[u64; 2]>, max: usize) -> (Vec<[u64; 2]>, bool) {
    if ranges.len() <= max || max == 0 {
        return (ranges, false);
    }
    let mut gaps: Vec<u64> = ranges.windows(2).map(|w| w[1][0] - w[0][1]).collect();
    gaps.sort_unstable();
    // Close every gap up to the threshold that leaves at most `max` ranges.
    let threshold = gaps[ranges.len() - max - 1];
    let mut out: Vec<[u64; 2]> = Vec::with_capacity(max);
    for r in ranges.drain(..) {
        match out.last_mut() {
            Some(last) if r[0] - last[1] <= threshold => last[1] = r[1],
            _ => out.push(r),
        }
    }
    (out, true)
}

fn to_ranges32(sorted: impl Iterator<Item = u32>) -> Vec<[u32; 2]> {
    let mut out: Vec<[u32; 2]> = Vec::new();
    for t in sorted {
        match out.last_mut() {
            Some(last) if last[1] == t => last[1] = t + 1,
            _ => out.push([t, t + 1]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_limit() {
        let merged = merge_ranges(vec![[0u64, 4], [4, 8], [10, 12], [11, 20]]);
        assert_eq!(merged, vec![[0, 8], [10, 20]]);
        let many: Vec<[u64; 2]> = (0..100).map(|i| [i * 10, i * 10 + 1]).collect();
        let (limited, approx) = limit_ranges(many, 8);
        assert!(approx);
        assert!(limited.len() <= 8, "{limited:?}");
        assert_eq!(limited.first().map(|r| r[0]), Some(0));
        assert_eq!(limited.last().map(|r| r[1]), Some(991));
    }

    #[test]
    fn shuffle_patterns() {
        let xor: Vec<[u32; 2]> = (0..32).map(|l| [l, l ^ 16]).collect();
        assert_eq!(shuffle_pattern(&xor), Some(ShufflePattern::Xor(16)));
        let down: Vec<[u32; 2]> = (0..31).map(|l| [l, l + 1]).collect();
        assert_eq!(shuffle_pattern(&down), Some(ShufflePattern::Down(1)));
        let from: Vec<[u32; 2]> = (0..32).map(|l| [l, 3]).collect();
        assert_eq!(shuffle_pattern(&from), Some(ShufflePattern::From(3)));
        assert_eq!(shuffle_pattern(&[]), None);
    }
}
