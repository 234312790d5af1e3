//! Barrier placement: lowering put a candidate barrier at every point where
//! a shared-memory hazard between threads could need one; this pass keeps
//! exactly the candidates some hazard crosses and elides the others, with
//! the reason for each decision.
//!
//! The program is flattened into a stream of shared-memory events in
//! program order: a loop body appears twice (so hazards carried from one
//! iteration to the next are seen), an `if` appears as its then-block
//! followed by its else-block (a superset of the real orders, so the
//! result is conservative). Every access is assumed to be by a different
//! thread than every other access, except a tile copy rewriting a buffer
//! it copied before (each thread writes the same elements both times).
//! Two accesses conflict when their buffers share bytes in the plan and
//! one of them writes. Walking the stream, an access that conflicts with an
//! access since the last kept barrier keeps the latest candidate between
//! the two.

use super::ir::{
    AccessId, BarrierId, BarrierRole, BufferId, ExprId, ExprKind, Func, Mem, StmtId, StmtKind,
};
use super::shared_plan::SharedPlan;
use crate::source::LineIndex;

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
        line: u32,
    },
    Candidate(BarrierId),
}

/// Decide every candidate barrier (result indexed by `BarrierId`).
pub fn place(f: &Func, plan: &SharedPlan, lines: &LineIndex) -> Vec<BarrierDecision> {
    let mut events = Vec::new();
    flatten(f, &f.body, lines, &mut events);
    let mut decisions: Vec<Option<BarrierDecision>> = vec![None; f.barriers.len()];
    let conflict = |p: &Event, x: &Event| match (p, x) {
        (
            Event::Access {
                buffer: pb,
                write: pw,
                copy: pc,
                ..
            },
            Event::Access {
                buffer: xb,
                write: xw,
                copy: xc,
                ..
            },
        ) => (*pw || *xw) && plan.overlap(f, *pb, *xb) && !(*pc && *xc && pb == xb),
        _ => false,
    };
    // Events since the last kept barrier (indices into `events`).
    let mut since: usize = 0;
    for (i, x) in events.iter().enumerate() {
        if let Event::Access { .. } = x {
            let hit = (since..i).find(|&j| conflict(&events[j], x));
            if let Some(j) = hit {
                let cand = (j + 1..i).rev().find_map(|c| match events[c] {
                    Event::Candidate(b) => Some((c, b)),
                    _ => None,
                });
                if let Some((c, b)) = cand {
                    decisions[b.0 as usize] = Some(BarrierDecision {
                        kept: true,
                        reason: hazard_reason(f, &events[j], x),
                        line: 0,
                    });
                    since = c + 1;
                }
            }
        }
    }
    let kept: Vec<bool> = decisions.iter().map(Option::is_some).collect();
    f.barriers
        .iter()
        .map(|(id, b)| {
            let line = lines.line(b.span.start as usize);
            match decisions[id.0 as usize].take() {
                Some(d) => BarrierDecision { line, ..d },
                None => BarrierDecision {
                    kept: false,
                    reason: elision_reason(f, plan, &events, &kept, lines, id),
                    line,
                },
            }
        })
        .collect()
}

fn verb(write: bool, copy: bool) -> &'static str {
    match (write, copy) {
        (true, true) => "copied into",
        (true, false) => "written",
        (false, _) => "read",
    }
}

fn hazard_reason(f: &Func, p: &Event, x: &Event) -> String {
    match (p, x) {
        (
            Event::Access {
                buffer: pb,
                write: pw,
                copy: pc,
                line: pl,
            },
            Event::Access {
                buffer: xb,
                write: xw,
                copy: xc,
                line: xl,
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
        | BarrierRole::AfterTileWrite(b)
        | BarrierRole::CtaWritten(b)
        | BarrierRole::CtaRead(b) => (b, false),
    }
}

fn elision_reason(
    f: &Func,
    plan: &SharedPlan,
    events: &[Event],
    kept: &[bool],
    lines: &LineIndex,
    id: BarrierId,
) -> String {
    let (buf, before_kind) = role_buffer(f.barriers[id].role);
    let name = &f.buffers[buf].name;
    let Some(pos) = events
        .iter()
        .position(|e| matches!(e, Event::Candidate(b) if *b == id))
    else {
        return "unreachable".to_string();
    };
    let touches = |e: &Event| match e {
        Event::Access { buffer, .. } => plan.overlap(f, *buffer, buf),
        _ => false,
    };
    let kept_line = |e: &Event| match e {
        Event::Candidate(b) if kept[b.0 as usize] => {
            Some(lines.line(f.barriers[*b].span.start as usize))
        }
        _ => None,
    };
    if before_kind {
        let Some(last) = events[..pos].iter().rposition(touches) else {
            return format!("nothing before it touched the bytes of `{name}`");
        };
        if let Some(l) = events[last..pos].iter().find_map(kept_line) {
            return format!("the barrier kept at line {l} already separates the earlier accesses to the bytes of `{name}`");
        }
        format!("the earlier accesses to the bytes of `{name}` do not conflict with the later ones")
    } else {
        let Some(next) = events[pos + 1..].iter().position(touches) else {
            return format!("nothing after it touches the bytes of `{name}`");
        };
        if let Some(l) = events[pos + 1..pos + 1 + next].iter().find_map(kept_line) {
            return format!("the barrier kept at line {l} comes first, before the next access to the bytes of `{name}`");
        }
        format!("no later access to the bytes of `{name}` conflicts with the ones before it")
    }
}

fn flatten(f: &Func, block: &[StmtId], lines: &LineIndex, out: &mut Vec<Event>) {
    let line_of = |s: crate::ast::Span| lines.line(s.start as usize);
    for &s in block {
        let span = f.stmt_span(s);
        match &f.stmts[s].kind {
            StmtKind::Set(_, e) => expr(f, *e, lines, out),
            StmtKind::Store(acc, e) => {
                index_exprs(f, *acc, lines, out);
                expr(f, *e, lines, out);
                access(f, *acc, lines, out);
            }
            StmtKind::RunStore {
                access: acc,
                value,
                only,
            } => {
                index_exprs(f, *acc, lines, out);
                expr(f, *value, lines, out);
                if let Some(o) = only {
                    expr(f, *o, lines, out);
                }
                access(f, *acc, lines, out);
            }
            StmtKind::TileCopy {
                access: acc,
                buffer,
            } => {
                index_exprs(f, *acc, lines, out);
                out.push(Event::Access {
                    buffer: *buffer,
                    write: true,
                    copy: true,
                    line: line_of(span),
                });
            }
            StmtKind::TileStore {
                access: acc,
                buffer,
            } => {
                index_exprs(f, *acc, lines, out);
                out.push(Event::Access {
                    buffer: *buffer,
                    write: false,
                    copy: false,
                    line: line_of(span),
                });
            }
            StmtKind::If { cond, then, els } => {
                expr(f, *cond, lines, out);
                flatten(f, then, lines, out);
                flatten(f, els, lines, out);
            }
            StmtKind::For {
                start,
                end,
                step,
                body,
                ..
            } => {
                expr(f, *start, lines, out);
                expr(f, *end, lines, out);
                expr(f, *step, lines, out);
                flatten(f, body, lines, out);
                flatten(f, body, lines, out);
            }
            StmtKind::CtaColl {
                arg,
                scratch,
                before,
                written,
                read,
                ..
            } => {
                expr(f, *arg, lines, out);
                let line = line_of(span);
                out.push(Event::Candidate(*before));
                out.push(Event::Access {
                    buffer: *scratch,
                    write: true,
                    copy: false,
                    line,
                });
                out.push(Event::Candidate(*written));
                out.push(Event::Access {
                    buffer: *scratch,
                    write: false,
                    copy: false,
                    line,
                });
                out.push(Event::Candidate(*read));
            }
            StmtKind::Barrier(b) => out.push(Event::Candidate(*b)),
        }
    }
}

fn index_exprs(f: &Func, acc: AccessId, lines: &LineIndex, out: &mut Vec<Event>) {
    for &ix in &f.accesses[acc].index {
        expr(f, ix, lines, out);
    }
}

fn access(f: &Func, acc: AccessId, lines: &LineIndex, out: &mut Vec<Event>) {
    let a = &f.accesses[acc];
    if let Mem::Buffer(b) = a.mem {
        out.push(Event::Access {
            buffer: b,
            write: a.store,
            copy: false,
            line: lines.line(a.span.start as usize),
        });
    }
}

fn expr(f: &Func, e: ExprId, lines: &LineIndex, out: &mut Vec<Event>) {
    for o in f.operands(e) {
        expr(f, o, lines, out);
    }
    if let ExprKind::Load(acc) | ExprKind::RunLoad(acc) = f.exprs[e].kind {
        access(f, acc, lines, out);
    }
}
