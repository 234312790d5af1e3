//! The shared-memory plan: every shared buffer (tiles and CTA-collective
//! scratch) gets a 16-byte-aligned offset (1024 for a `wgmma` operand). Buffers whose live ranges overlap
//! get disjoint bytes; the others may reuse bytes (the barrier analysis then
//! fences the reuse). The total is checked against the target's limit per
//! CTA ([`crate::limits::max_shared_bytes`]); above the 48 KB a `.shared`
//! declaration may hold, the entry declares its buffer `.extern` and the
//! launch passes the size as dynamic shared memory
//! ([`crate::meta::VariantMeta::dynamic_shared_bytes`]).
//!
//! Live ranges are intervals of statement positions in program order; a
//! buffer live across part of a loop is live across the whole loop, since
//! the next iteration comes back to the start of the body. So is a buffer
//! used only inside a loop whose value can cross the loop's back edge: one
//! that a trip touches before anything overwrites all of it (a trip that
//! reads what an earlier trip wrote, `if it == 0 { a[t] = 1.0 }` then
//! `a[t]` on every trip). Only a whole-buffer tile copy at the top level
//! of the body overwrites a buffer for sure (element stores may leave
//! elements as the previous trip wrote them, and a statement under an `if`
//! or in an inner loop may not run; a buffer an inner loop overwrites
//! before each use is no use of the outer loop's previous trips): a tile copy or accumulator store
//! whose box covers every element an access may reach (all but the
//! trailing padding of `Func::tile_padding`), or one of
//! `Func::whole_copies`; a CTA collective's scratch is written
//! and read within the collective, so it carries nothing between trips.

use super::error::{BackendError, SharedBuffer};
use super::ir::{BufferId, BufferKind, ExprId, Func, Mem, Shape, StmtId, StmtKind};
use crate::source::LineIndex;

pub use crate::limits::STATIC_SHARED_LIMIT;

#[derive(Clone, Debug, Default)]
pub struct SharedPlan {
    /// Offset of each buffer (by `BufferId`).
    pub offset: Vec<u32>,
    /// Live range of each buffer in statement positions.
    pub live: Vec<(u32, u32)>,
    /// Live range of each buffer in source lines.
    pub lines: Vec<(u32, u32)>,
    /// Total bytes (a multiple of 16).
    pub total: u32,
    /// Each TMA ring's mbarriers (`Func::tma_rings`, by its `For`): the
    /// offset of the first of its 8-byte mbarriers, one per stage, after
    /// every buffer.
    pub mbarriers: std::collections::BTreeMap<StmtId, u32>,
}

impl SharedPlan {
    /// Whether two buffers share at least one byte.
    pub fn overlap(&self, f: &Func, a: BufferId, b: BufferId) -> bool {
        let (oa, ob) = (
            u64::from(self.offset[a.0 as usize]),
            u64::from(self.offset[b.0 as usize]),
        );
        let (ea, eb) = (
            oa.saturating_add(f.buffers[a].bytes),
            ob.saturating_add(f.buffers[b].bytes),
        );
        oa < eb && ob < ea
    }
}

/// Plan the shared memory of one variant. `kernel_span` is where a limit
/// error points.
pub fn plan(
    f: &Func,
    lines: &LineIndex,
    kernel_span: crate::ast::Span,
    arch: u32,
) -> Result<SharedPlan, BackendError> {
    let n = f.buffers.len();
    let mut walk = Walk {
        f,
        pos: 0,
        live: vec![None; n],
        lines: vec![None; n],
        loops: Vec::new(),
        open: Vec::new(),
        carried: Vec::new(),
        depth: 0,
        line_index: lines,
    };
    walk.block(&f.body);
    let mut live: Vec<(u32, u32)> = walk.live.iter().map(|l| l.unwrap_or((0, 0))).collect();
    let mut line_ranges: Vec<(u32, u32)> = walk.lines.iter().map(|l| l.unwrap_or((0, 0))).collect();
    // Where a loop makes a buffer live, its source lines are too (the
    // report and the simulator's messages name buffers by them).
    let widen = |r: &mut (u32, u32), by: (u32, u32)| *r = (r.0.min(by.0), r.1.max(by.1));
    // A buffer live at a loop's back edge is live in all of the loop.
    for (l, carried) in &walk.carried {
        for &b in carried {
            widen(&mut live[b], l.pos);
            widen(&mut line_ranges[b], l.lines);
        }
    }
    // A buffer live in part of a loop and outside it is live in all of it.
    loop {
        let mut changed = false;
        for (b, l) in live.iter_mut().enumerate() {
            for lp in &walk.loops {
                let (ls, le) = lp.pos;
                let touches = l.0 <= le && ls <= l.1;
                let inside = ls <= l.0 && l.1 <= le;
                if touches && !inside {
                    let new = (l.0.min(ls), l.1.max(le));
                    changed |= new != *l;
                    *l = new;
                    widen(&mut line_ranges[b], lp.lines);
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (live[i].0, i));
    // Offsets and the total are computed in 64 bits: a tile of 2^32 bytes
    // must fail the limit below, not wrap to a small plan.
    let mut offset = vec![0u64; n];
    // The placed buffers still live where the next one starts: buffers are
    // placed in order of their start, so one that ends before a start ends
    // before every later one and leaves for good (a scan of every placed
    // buffer per buffer was quadratic in 20,000 collectives).
    let mut active: Vec<usize> = Vec::new();
    let mut total = 0u64;
    for i in order {
        let bytes = f.buffers[BufferId(i as u32)].bytes;
        // A `wgmma` operand's swizzle repeats every 1024 bytes of shared
        // address (`Func::swizzle`): its buffer starts on such a boundary.
        let align = if f.swizzle.contains_key(&BufferId(i as u32)) {
            1024
        } else {
            16
        };
        active.retain(|&j| live[j].1 >= live[i].0);
        let mut busy: Vec<(u64, u64)> = active
            .iter()
            .map(|&j| {
                let b = f.buffers[BufferId(j as u32)].bytes;
                (offset[j], offset[j].saturating_add(b))
            })
            .collect();
        busy.sort();
        let mut at = 0u64;
        for (s, e) in busy {
            if at.saturating_add(bytes) <= s {
                break;
            }
            at = at.max(e.div_ceil(align).saturating_mul(align));
        }
        offset[i] = at;
        total = total.max(round16(at.saturating_add(bytes)));
        active.push(i);
    }
    // The TMA rings' mbarriers, live for the whole kernel.
    let mut mbarriers = std::collections::BTreeMap::new();
    for &looped in f.tma_rings.keys() {
        let stages = f
            .rings
            .values()
            .find(|r| r.looped == looped)
            .map_or(0, |r| r.stages);
        mbarriers.insert(looped, total);
        total = round16(total.saturating_add(8 * u64::from(stages)));
    }
    let limit = crate::limits::max_shared_bytes(arch);
    if total > u64::from(limit) {
        return Err(BackendError::SharedMemoryExceeded {
            entry: f.entry.clone(),
            total,
            arch,
            limit,
            kernel: kernel_span,
            buffers: f
                .buffers
                .iter()
                .map(|(_, b)| SharedBuffer {
                    name: b.name.clone(),
                    bytes: b.bytes,
                    span: b.span,
                })
                .collect(),
        });
    }
    // Below the limit, every offset and the total fit in 32 bits.
    let narrow = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
    Ok(SharedPlan {
        offset: offset.into_iter().map(narrow).collect(),
        live,
        lines: line_ranges,
        total: narrow(total),
        mbarriers: mbarriers.into_iter().map(|(k, v)| (k, narrow(v))).collect(),
    })
}

/// Whether a box of `shape` at `at` (empty: the origin) covers every
/// element of `buffer` that an access may reach: all of it but the
/// trailing columns of each row that no access reaches
/// (`Func::tile_padding`).
fn covers(f: &Func, buffer: BufferId, at: &[u32], shape: &[u32]) -> bool {
    let BufferKind::Tile { shape: whole, .. } = &f.buffers[buffer].kind else {
        return false;
    };
    let pad = f.tile_padding.get(&buffer).copied().unwrap_or(0);
    let n = whole.len();
    at.iter().all(|&x| x == 0)
        && shape.len() == n
        && (0..n).all(|i| {
            let unused = if i + 1 == n { pad } else { 0 };
            u64::from(shape[i]) + u64::from(unused) >= u64::from(whole[i])
        })
}

fn round16(x: u64) -> u64 {
    x.saturating_add(15) & !15
}

struct Walk<'f> {
    f: &'f Func,
    pos: u32,
    live: Vec<Option<(u32, u32)>>,
    lines: Vec<Option<(u32, u32)>>,
    loops: Vec<LoopRange>,
    /// The loops being walked, innermost last.
    open: Vec<OpenLoop>,
    /// Each loop's statement range and the buffers live at its back edge.
    carried: Vec<(LoopRange, Vec<usize>)>,
    /// How many blocks deep the walk is.
    depth: u32,
    line_index: &'f LineIndex,
}

/// Where a loop is: its statement positions and its source lines.
#[derive(Clone, Copy)]
struct LoopRange {
    pos: (u32, u32),
    lines: (u32, u32),
}

/// A loop being walked: which buffers a trip has overwritten whole so far
/// (at the top level of the body) and which it touched before that.
struct OpenLoop {
    /// The block depth of the loop's body.
    body_depth: u32,
    killed: Vec<bool>,
    carried: Vec<bool>,
}

impl Walk<'_> {
    fn touch(&mut self, b: BufferId, span: crate::ast::Span) {
        self.touch_as(b, span, false);
    }

    /// Record a use of `b` at the current statement; `whole` when the
    /// statement overwrites all of `b` before anything reads it.
    fn touch_as(&mut self, b: BufferId, span: crate::ast::Span, whole: bool) {
        let i = b.0 as usize;
        let depth = self.depth;
        // Only the innermost loop sees the use now; an enclosing loop sees
        // what the inner one carries when it ends (`block`).
        if let Some(l) = self.open.last_mut() {
            if !l.killed[i] {
                if whole && depth == l.body_depth {
                    l.killed[i] = true;
                } else {
                    l.carried[i] = true;
                }
            }
        }
        self.extend(b, span);
    }

    /// Extend `b`'s live range to the current statement.
    fn extend(&mut self, b: BufferId, span: crate::ast::Span) {
        let i = b.0 as usize;
        let p = self.pos;
        self.live[i] = Some(match self.live[i] {
            Some((s, e)) => (s.min(p), e.max(p)),
            None => (p, p),
        });
        let line = self.line_index.line(span.start as usize);
        self.lines[i] = Some(match self.lines[i] {
            Some((s, e)) => (s.min(line), e.max(line)),
            None => (line, line),
        });
    }

    fn block(&mut self, block: &[StmtId]) {
        self.depth += 1;
        let f = self.f;
        for &s in block {
            self.pos += 1;
            let span = f.stmt_span(s);
            let kind = &f.stmts[s].kind;
            let first = self.pos;
            if kind.is_loop() {
                let n = f.buffers.len();
                self.open.push(OpenLoop {
                    body_depth: self.depth + 1,
                    killed: vec![false; n],
                    carried: vec![false; n],
                });
            }
            if let StmtKind::While { pre, cond, body } = kind {
                // `pre` runs before the condition.
                self.block(pre);
                self.expr(*cond);
                self.block(body);
            } else {
                if let Some(acc) = kind.access() {
                    self.access(acc);
                }
                for e in f.stmt_operands(s) {
                    self.expr(e);
                }
                for b in kind.blocks() {
                    self.block(b);
                }
            }
            match kind {
                StmtKind::TileCopy { buffer, at, access } => {
                    let whole = f.whole_copies.contains(&s)
                        || match &f.accesses[*access].shape {
                            Shape::Tile { shape } => covers(f, *buffer, at, shape),
                            _ => false,
                        };
                    self.touch_as(*buffer, span, whole)
                }
                StmtKind::AccToTile { acc, buffer, at } => {
                    let shape = [f.accs[*acc].rows, f.accs[*acc].cols];
                    self.touch_as(*buffer, span, covers(f, *buffer, at, &shape))
                }
                StmtKind::AsyncCopy { buffer, .. } | StmtKind::TileStore { buffer, .. } => {
                    self.touch(*buffer, span)
                }
                // Written and read within the collective: nothing it
                // holds outlives the statement.
                StmtKind::CtaColl(c) => self.extend(c.scratch, span),
                StmtKind::Mma { a, b, .. } => {
                    self.touch(*a, span);
                    self.touch(*b, span);
                }
                _ => {}
            }
            if kind.is_loop() {
                let range = LoopRange {
                    pos: (first, self.pos),
                    lines: (
                        self.line_index.line(span.start as usize),
                        self.line_index.line(span.end.saturating_sub(1) as usize),
                    ),
                };
                self.loops.push(range);
                if let Some(l) = self.open.pop() {
                    let carried: Vec<usize> =
                        (0..l.carried.len()).filter(|&i| l.carried[i]).collect();
                    if !carried.is_empty() {
                        self.carried.push((range, carried));
                    }
                }
            }
        }
        self.depth -= 1;
    }

    /// The buffer an access goes to, if it is one (its subscripts are among
    /// the statement's operands).
    fn access(&mut self, acc: super::ir::AccessId) {
        let a = &self.f.accesses[acc];
        if let Mem::Buffer(b) = a.mem {
            self.touch(b, a.span);
        }
    }

    /// Every buffer `e` loads from.
    fn expr(&mut self, e: ExprId) {
        let f = self.f;
        f.walk_expr(e, &mut |x| {
            if let Some(acc) = f.load_access(x) {
                self.access(acc);
            }
        });
    }
}
