//! The text form of the IR, for fixtures and debugging:
//!
//! ```text
//! func lanes_matvec threads=128
//!   buffers: ...
//!   v1 = add.i32(mul.i32(ctx.block.x, 4), ctx.warp)
//!   for v3 in range(0, d0, 128) { ... }
//! ```
//!
//! Expressions print as nested calls; accesses print as `load.<a>` with the
//! target and subscripts; candidate barriers print with their role.

use super::ir::{
    AccessId, BarrierRole, BufferKind, ExprId, ExprKind, Func, Mem, Shape, StmtId, StmtKind,
};
use crate::hir::{ConstVal, Ty};
use std::fmt::Write as _;

/// Print a whole function.
pub fn print(f: &Func) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "func {} threads={}", f.entry, f.threads);
    for (id, b) in f.buffers.iter() {
        let kind = match &b.kind {
            BufferKind::Tile { elem, shape } => format!("tile {}{:?}", elem.name(), shape),
            BufferKind::Scratch { slot_bytes, slots } => format!("scratch {slots}x{slot_bytes}B"),
        };
        let _ = writeln!(out, "  {id} `{}`: {kind}, {} bytes", b.name, b.bytes);
    }
    for (id, v) in f.vars.iter() {
        let _ = writeln!(out, "  {id} `{}`: {}", v.name, v.ty.name());
    }
    block(f, &f.body, 1, &mut out);
    out
}

fn block(f: &Func, b: &[StmtId], depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for &s in b {
        if let Some(fence) = f.fence(s) {
            let _ = writeln!(
                out,
                "{pad}fence {fence} ({}) after the operands of:",
                role(f, fence)
            );
        }
        match &f.stmts[s].kind {
            StmtKind::Set(v, e) => {
                let _ = writeln!(out, "{pad}{v} = {}", expr(f, *e));
            }
            StmtKind::Store(a, e) => {
                let _ = writeln!(out, "{pad}{} = {}", access(f, *a), expr(f, *e));
            }
            StmtKind::RunStore {
                access: a,
                value,
                only,
            } => {
                let only = only
                    .map(|o| format!(" only {}", expr(f, o)))
                    .unwrap_or_default();
                let _ = writeln!(out, "{pad}{}{only} = {}", access(f, *a), expr(f, *value));
            }
            StmtKind::TileCopy {
                access: a,
                buffer,
                at,
            } => {
                let at = placed_at(at);
                let _ = writeln!(out, "{pad}{buffer}{at} = tile_copy {}", access(f, *a));
            }
            StmtKind::TileStore { access: a, buffer } => {
                let _ = writeln!(out, "{pad}{} = tile_store {buffer}", access(f, *a));
            }
            StmtKind::AsyncCopy {
                access: a,
                buffer,
                at,
                stage,
            } => {
                let at = placed_at(at);
                let _ = writeln!(
                    out,
                    "{pad}{buffer}[stage {}]{at} = async_copy {}",
                    expr(f, *stage),
                    access(f, *a)
                );
            }
            StmtKind::AsyncCommit => {
                let _ = writeln!(out, "{pad}async_commit");
            }
            StmtKind::AsyncWait(n) => {
                let _ = writeln!(out, "{pad}async_wait {n}");
            }
            StmtKind::AccZero(acc) => {
                let _ = writeln!(out, "{pad}{acc} = zeros");
            }
            StmtKind::AccMap {
                acc,
                elem,
                row,
                col,
                value,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{acc} = map {elem} at [{row}, {col}] -> {}",
                    expr(f, *value)
                );
            }
            StmtKind::Mma {
                acc,
                a,
                b,
                b_trans,
                k,
            } => {
                let b = if *b_trans {
                    format!("trans({b})")
                } else {
                    b.to_string()
                };
                let _ = writeln!(out, "{pad}{acc} += mma {a}, {b}, k {k}");
            }
            StmtKind::AccStore { acc, access: a } => {
                let _ = writeln!(out, "{pad}{} = acc_store {acc}", access(f, *a));
            }
            StmtKind::AccToTile { acc, buffer, at } => {
                let _ = writeln!(out, "{pad}{buffer} at {at:?} = acc_store {acc}");
            }
            StmtKind::If { cond, .. } => {
                let _ = writeln!(out, "{pad}if {} {{", expr(f, *cond));
            }
            StmtKind::While { .. } => {
                let _ = writeln!(out, "{pad}while {{");
            }
            StmtKind::Break => {
                let _ = writeln!(out, "{pad}break");
            }
            StmtKind::Continue => {
                let _ = writeln!(out, "{pad}continue");
            }
            StmtKind::Return => {
                let _ = writeln!(out, "{pad}return");
            }
            StmtKind::Fence => {
                let _ = writeln!(out, "{pad}fence.gpu");
            }
            StmtKind::Atomic {
                op,
                access: a,
                args,
                dst,
            } => {
                let args: Vec<String> = args.iter().map(|&x| expr(f, x)).collect();
                let call = format!("{}({}, {})", op.name(), access(f, *a), args.join(", "));
                match dst {
                    Some(v) => {
                        let _ = writeln!(out, "{pad}{v} = {call}");
                    }
                    None => {
                        let _ = writeln!(out, "{pad}{call}");
                    }
                }
            }
            StmtKind::For(l) => {
                let _ = writeln!(
                    out,
                    "{pad}for {} in range({}, {}, {}) {{",
                    l.var,
                    expr(f, l.start),
                    expr(f, l.end),
                    expr(f, l.step)
                );
            }
            StmtKind::CtaColl(c) => {
                let _ = writeln!(
                    out,
                    "{pad}{} = cta.{:?}({}) scratch={} barriers=[{}, {}, {}]",
                    c.dst,
                    c.op,
                    expr(f, c.arg),
                    c.scratch,
                    c.before,
                    c.written,
                    c.read
                );
            }
            StmtKind::Barrier(b) => {
                let _ = writeln!(out, "{pad}barrier {b} ({})", role(f, *b));
            }
        }
        nested(f, s, depth, out);
    }
}

/// A statement's nested blocks, after the line that opens the first: the
/// line between two (`} else {`, left out with an empty else block, or a
/// `while`'s `} COND {` after its `pre`), and the closing brace.
fn nested(f: &Func, s: StmtId, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let kind = &f.stmts[s].kind;
    let blocks = kind.blocks();
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            match kind {
                StmtKind::If { .. } if b.is_empty() => continue,
                StmtKind::While { cond, .. } => {
                    let _ = writeln!(out, "{pad}}} {} {{", expr(f, *cond));
                }
                _ => {
                    let _ = writeln!(out, "{pad}}} else {{");
                }
            }
        }
        block(f, b, depth + 1, out);
    }
    if !blocks.is_empty() {
        let _ = writeln!(out, "{pad}}}");
    }
}

/// ` at [0, 0]` for a copy into a box of a larger buffer, nothing for one
/// that fills the whole buffer.
fn placed_at(at: &[u32]) -> String {
    if at.is_empty() {
        String::new()
    } else {
        format!(" at {at:?}")
    }
}

fn role(f: &Func, b: super::ir::BarrierId) -> String {
    match f.barriers[b].role {
        BarrierRole::BeforeTile(x) => format!("before-tile {x}"),
        BarrierRole::AfterTileCopy(x) => format!("after-copy {x}"),
        BarrierRole::AfterTileWrite(x) => format!("after-write {x}"),
        BarrierRole::AfterRead(x) => format!("after-read {x}"),
        BarrierRole::RingWait(x) => format!("ring-wait {x}"),
        BarrierRole::CtaBefore(x) => format!("cta-before {x}"),
        BarrierRole::CtaWritten(x) => format!("cta-written {x}"),
        BarrierRole::CtaRead(x) => format!("cta-read {x}"),
    }
}

fn ty(f: &Func, e: ExprId) -> String {
    match f.exprs[e].ty {
        Ty::Scalar(t) => t.name().to_string(),
        Ty::Run { elem, len } => format!("{}x{len}", elem.name()),
        Ty::Unit => "unit".to_string(),
    }
}

fn access(f: &Func, a: AccessId) -> String {
    let acc = &f.accesses[a];
    let target = match acc.mem {
        Mem::Tensor(p) => format!("param{}", p.0),
        Mem::Buffer(b) => b.to_string(),
        Mem::Local(a) => a.to_string(),
    };
    let subs: Vec<String> = acc
        .index
        .iter()
        .enumerate()
        .map(|(i, e)| match &acc.shape {
            Shape::Run { axis, len } if *axis == i => format!("{} :+ {len}", expr(f, *e)),
            Shape::Tile { shape } => format!("{} :+ {}", expr(f, *e), shape[i]),
            _ => expr(f, *e),
        })
        .collect();
    format!("{a}:{target}[{}]", subs.join(", "))
}

/// Print one expression.
pub fn expr(f: &Func, e: ExprId) -> String {
    let t = ty(f, e);
    let args = |ids: &[ExprId]| {
        ids.iter()
            .map(|&x| expr(f, x))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match &f.exprs[e].kind {
        ExprKind::Const(ConstVal::Int(v)) => format!("{v}"),
        ExprKind::Const(ConstVal::Float(x)) => format!("{x:?}"),
        ExprKind::Const(ConstVal::Bool(b)) => format!("{b}"),
        ExprKind::Var(v) => v.to_string(),
        ExprKind::RunVars(vs) => format!(
            "run({})",
            vs.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ExprKind::Param(p) => format!("param{}", p.0),
        ExprKind::Dim(d) => format!("d{}", d.0),
        ExprKind::Ctx(c) => format!("ctx.{c:?}").to_lowercase(),
        ExprKind::Unary(op, a) => format!("{op:?}.{t}({})", expr(f, *a)).to_lowercase(),
        ExprKind::Binary(op, a, b) => format!(
            "{}.{t}({}, {})",
            format!("{op:?}").to_lowercase(),
            expr(f, *a),
            expr(f, *b)
        ),
        ExprKind::Convert(a) => format!("{t}({})", expr(f, *a)),
        ExprKind::Builtin(b, xs) => format!("{}({})", format!("{b:?}").to_lowercase(), args(xs)),
        ExprKind::Load(a) => format!("load {}", access(f, *a)),
        ExprKind::RunLoad(a) => format!("load_run {}", access(f, *a)),
        ExprKind::RunSum(a) => format!("sum.{t}({})", expr(f, *a)),
        ExprKind::Dp4aSum { a, b } => match b {
            Some(b) => format!("dp4a_sum({}, {})", expr(f, *a), expr(f, *b)),
            None => format!("dp4a_sum({}, ones)", expr(f, *a)),
        },
        ExprKind::Elem(r, i) => format!("elem({}, {i})", expr(f, *r)),
        ExprKind::Word(r, i) => format!("word({}, {i})", expr(f, *r)),
        ExprKind::LaneColl { op, width, arg, .. } => {
            format!(
                "lane.{}<{width}>({})",
                format!("{op:?}").to_lowercase(),
                expr(f, *arg)
            )
        }
        ExprKind::Shuffle {
            mode,
            width,
            lane,
            value,
        } => format!(
            "shfl.{}<{width}>({}, {})",
            format!("{mode:?}").to_lowercase(),
            expr(f, *lane),
            expr(f, *value)
        ),
    }
}
