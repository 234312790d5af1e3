//! What the drawing needs from the checked kernel: its `for` loops (header
//! line and last body line, to number iterations) and its tile copies and
//! tile stores (line, tensor, tile shape and start subscripts, to find the
//! masked elements). Start subscripts are uniform, so they can be evaluated
//! per CTA from the launch's dims, scalars and block index.

use crate::model::LoopInfo;
use crate::steps::TileOp;
use phobos_core::ast::{CtxField, UnOp};
use phobos_core::hir::{
    Block, Builtin, ConstVal, DimId, Expr, ExprKind, Kernel, LocalKind, ParamId, StmtKind,
};
use phobos_core::source::LineIndex;
use std::collections::BTreeSet;

/// A tile statement before evaluation.
#[derive(Clone, Debug)]
pub struct TileStmt {
    pub line: u32,
    pub param: ParamId,
    pub starts: Vec<Expr>,
    pub shape: Vec<u64>,
    pub store: bool,
}

/// Loops and tile statements of one kernel variant.
#[derive(Clone, Debug, Default)]
pub struct SourceInfo {
    pub loops: Vec<LoopInfo>,
    /// Lines on which a statement starts.
    pub statement_lines: BTreeSet<u32>,
    pub tiles: Vec<TileStmt>,
}

/// Collect the loops (outermost first, in source order) and tile statements.
pub fn collect(kernel: &Kernel, src: &str) -> SourceInfo {
    let index = LineIndex::new(src);
    let mut info = SourceInfo::default();
    walk(kernel, &kernel.body, &index, &mut info);
    info.loops.sort_by_key(|l| l.line);
    info
}

fn walk(kernel: &Kernel, block: &Block, index: &LineIndex, info: &mut SourceInfo) {
    for stmt in &block.stmts {
        let line = index.line(stmt.span.start as usize);
        info.statement_lines.insert(line);
        match &stmt.kind {
            StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                let end = index.line((stmt.span.end as usize).saturating_sub(1));
                info.loops.push(LoopInfo {
                    line,
                    end_line: end.max(line),
                });
                walk(kernel, body, index, info);
            }
            StmtKind::If { then, els, .. } => {
                walk(kernel, then, index, info);
                walk(kernel, els, index, info);
            }
            StmtKind::TileCopy { dst, src, starts } => {
                if let Some(shape) = tile_shape(kernel, dst.0 as usize) {
                    info.tiles.push(TileStmt {
                        line,
                        param: *src,
                        starts: starts.clone(),
                        shape,
                        store: false,
                    });
                }
            }
            StmtKind::TileStore { dst, starts, src } => {
                if let Some(shape) = tile_shape(kernel, src.0 as usize) {
                    info.tiles.push(TileStmt {
                        line,
                        param: *dst,
                        starts: starts.clone(),
                        shape,
                        store: true,
                    });
                }
            }
            _ => {}
        }
    }
}

fn tile_shape(kernel: &Kernel, local: usize) -> Option<Vec<u64>> {
    match &kernel.locals.get(local)?.kind {
        LocalKind::Tile { shape, .. } => Some(shape.iter().map(|&d| u64::from(d)).collect()),
        LocalKind::Scalar(_) => None,
    }
}

/// The values a uniform expression may read.
pub struct Env<'a> {
    pub dims: &'a [i64],
    /// Scalar parameter values by parameter index (None for tensors).
    pub scalars: &'a [Option<f64>],
    pub block: [u32; 3],
    pub grid: [u32; 3],
    pub threads: u32,
}

/// Evaluate the tile statements for one CTA. `tensor_of` maps a parameter
/// to its index among the tensors.
pub fn tiles_for_cta(
    tiles: &[TileStmt],
    env: &Env<'_>,
    tensor_of: &dyn Fn(ParamId) -> Option<usize>,
) -> Vec<TileOp> {
    tiles
        .iter()
        .filter_map(|t| {
            let tensor = tensor_of(t.param)?;
            let origin: Option<Vec<i64>> = t.starts.iter().map(|e| eval(e, env)).collect();
            Some(TileOp {
                line: t.line,
                tensor,
                origin,
                shape: t.shape.clone(),
                store: t.store,
            })
        })
        .collect()
}

/// Integer value of a uniform expression, or None when it reads anything
/// per-thread or something this evaluator does not know.
pub fn eval(e: &Expr, env: &Env<'_>) -> Option<i64> {
    Some(match &e.kind {
        ExprKind::Const(ConstVal::Int(v)) => i64::try_from(*v).ok()?,
        ExprKind::Const(ConstVal::Bool(b)) => i64::from(*b),
        ExprKind::Const(ConstVal::Float(_)) => return None,
        ExprKind::Dim(DimId(d)) => *env.dims.get(*d as usize)?,
        ExprKind::Param(ParamId(p)) => {
            let v = (*env.scalars.get(*p as usize)?)?;
            if v.fract() != 0.0 {
                return None;
            }
            v as i64
        }
        ExprKind::Ctx(field) => match field {
            CtxField::BlockX => i64::from(env.block[0]),
            CtxField::BlockY => i64::from(env.block[1]),
            CtxField::BlockZ => i64::from(env.block[2]),
            CtxField::GridX => i64::from(env.grid[0]),
            CtxField::GridY => i64::from(env.grid[1]),
            CtxField::GridZ => i64::from(env.grid[2]),
            CtxField::Threads => i64::from(env.threads),
            CtxField::Warps => i64::from(env.threads.div_ceil(32)),
            CtxField::Lanes => 32,
            CtxField::Thread | CtxField::Warp | CtxField::Lane => return None,
        },
        ExprKind::Unary(UnOp::Neg, a) => eval(a, env)?.checked_neg()?,
        ExprKind::Unary(UnOp::Not, a) => i64::from(eval(a, env)? == 0),
        ExprKind::Convert(a) => eval(a, env)?,
        ExprKind::Binary(op, a, b) => op.eval_i64(eval(a, env)?, eval(b, env)?)?,
        ExprKind::Builtin(f, args) => {
            let v: Option<Vec<i64>> = args.iter().map(|a| eval(a, env)).collect();
            let v = v?;
            match (f, v.as_slice()) {
                (Builtin::Min, [a, b]) => *a.min(b),
                (Builtin::Max, [a, b]) => *a.max(b),
                (Builtin::Abs, [a]) => a.checked_abs()?,
                (Builtin::Cdiv, [a, b]) if *b != 0 => (a + b - 1).checked_div(*b)?,
                (Builtin::Select, [c, a, b]) => {
                    if *c != 0 {
                        *a
                    } else {
                        *b
                    }
                }
                _ => return None,
            }
        }
        _ => return None,
    })
}
