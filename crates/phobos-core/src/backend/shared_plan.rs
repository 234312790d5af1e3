//! The shared-memory plan: every shared buffer (tiles and CTA-collective
//! scratch) gets a 16-byte-aligned offset. Buffers whose live ranges overlap
//! get disjoint bytes; the others may reuse bytes (the barrier analysis then
//! fences the reuse). The total is checked against the target's limit per
//! CTA ([`crate::max_shared_bytes`]); above the 48 KB a `.shared`
//! declaration may hold, the entry declares its buffer `.extern` and the
//! launch passes the size as dynamic shared memory
//! ([`crate::meta::VariantMeta::dynamic_shared_bytes`]).
//!
//! Live ranges are intervals of statement positions in program order; a
//! buffer live across part of a loop is live across the whole loop, since
//! the next iteration comes back to the start of the body.

use super::ir::{BufferId, ExprId, ExprKind, Func, Mem, StmtId, StmtKind};
use crate::diag::Diagnostic;
use crate::source::LineIndex;

pub use crate::pipeline::STATIC_SHARED_LIMIT;

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
) -> Result<SharedPlan, Diagnostic> {
    let n = f.buffers.len();
    let mut walk = Walk {
        f,
        pos: 0,
        live: vec![None; n],
        lines: vec![None; n],
        loops: Vec::new(),
        line_index: lines,
    };
    walk.block(&f.body);
    let mut live: Vec<(u32, u32)> = walk.live.iter().map(|l| l.unwrap_or((0, 0))).collect();
    // A buffer live in part of a loop and outside it is live in all of it.
    loop {
        let mut changed = false;
        for l in live.iter_mut() {
            for &(ls, le) in &walk.loops {
                let touches = l.0 <= le && ls <= l.1;
                let inside = ls <= l.0 && l.1 <= le;
                if touches && !inside {
                    let new = (l.0.min(ls), l.1.max(le));
                    changed |= new != *l;
                    *l = new;
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
            at = at.max(round16(e));
        }
        offset[i] = at;
        total = total.max(round16(at.saturating_add(bytes)));
        active.push(i);
    }
    let line_ranges: Vec<(u32, u32)> = walk.lines.iter().map(|l| l.unwrap_or((0, 0))).collect();
    let limit = crate::max_shared_bytes(arch);
    if total > u64::from(limit) {
        let mut d = Diagnostic::error(
            "P0801",
            format!(
                "kernel `{}` needs {total} bytes of shared memory; sm_{arch} allows at most {limit} bytes per CTA",
                f.entry
            ),
        )
        .primary(kernel_span, "this kernel's shared buffers do not fit");
        for (id, b) in f.buffers.iter() {
            d = d.secondary(b.span, format!("`{}` takes {} bytes", b.name, b.bytes));
            let _ = id;
        }
        return Err(
            d.note("make the tiles smaller (fewer rows or columns per CTA), or split the kernel")
        );
    }
    // Below the limit, every offset and the total fit in 32 bits.
    let narrow = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
    Ok(SharedPlan {
        offset: offset.into_iter().map(narrow).collect(),
        live,
        lines: line_ranges,
        total: narrow(total),
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
    loops: Vec<(u32, u32)>,
    line_index: &'f LineIndex,
}

impl Walk<'_> {
    fn touch(&mut self, b: BufferId, span: crate::ast::Span) {
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
        for &s in block {
            self.pos += 1;
            let span = self.f.stmt_span(s);
            match &self.f.stmts[s].kind {
                StmtKind::Set(_, e) => self.expr(*e),
                StmtKind::Store(acc, e) => {
                    self.access(*acc);
                    self.expr(*e);
                }
                StmtKind::RunStore {
                    access,
                    value,
                    only,
                } => {
                    self.access(*access);
                    self.expr(*value);
                    if let Some(o) = only {
                        self.expr(*o);
                    }
                }
                StmtKind::TileCopy { access, buffer, .. }
                | StmtKind::TileStore { access, buffer } => {
                    self.access(*access);
                    self.touch(*buffer, span);
                }
                StmtKind::If { cond, then, els } => {
                    self.expr(*cond);
                    self.block(then);
                    self.block(els);
                }
                StmtKind::For {
                    start,
                    end,
                    step,
                    body,
                    ..
                } => {
                    self.expr(*start);
                    self.expr(*end);
                    self.expr(*step);
                    let first = self.pos;
                    self.block(body);
                    self.loops.push((first, self.pos));
                }
                StmtKind::While { pre, cond, body } => {
                    let first = self.pos;
                    self.block(pre);
                    self.expr(*cond);
                    self.block(body);
                    self.loops.push((first, self.pos));
                }
                StmtKind::CtaColl { arg, scratch, .. } => {
                    self.expr(*arg);
                    self.touch(*scratch, span);
                }
                StmtKind::Atomic { access, args, .. } => {
                    self.access(*access);
                    for &a in args {
                        self.expr(a);
                    }
                }
                StmtKind::Mma { a, b, .. } => {
                    self.touch(*a, span);
                    self.touch(*b, span);
                }
                StmtKind::AccStore { access, .. } => self.access(*access),
                StmtKind::AccMap { value, .. } => self.expr(*value),
                StmtKind::Barrier(_)
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Return
                | StmtKind::Fence
                | StmtKind::AccZero(_) => {}
            }
        }
    }

    fn access(&mut self, acc: super::ir::AccessId) {
        let a = &self.f.accesses[acc];
        for &ix in &a.index {
            self.expr(ix);
        }
        if let Mem::Buffer(b) = a.mem {
            self.touch(b, a.span);
        }
    }

    fn expr(&mut self, e: ExprId) {
        match &self.f.exprs[e].kind {
            ExprKind::Load(acc) | ExprKind::RunLoad(acc) => self.access(*acc),
            _ => {
                for o in self.f.operands(e) {
                    self.expr(o);
                }
            }
        }
    }
}
