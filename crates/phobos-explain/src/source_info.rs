//! What the drawing needs from the checked kernel: its `for` loops (header
//! line and last body line, to number iterations) and its tile copies and
//! tile stores (line, tensor, tile shape and start subscripts, to find the
//! masked elements). Start subscripts are uniform, so they can be evaluated
//! per CTA from the launch's dims, scalars and block index. Also its
//! accumulator tiles, with the warp layout the compiler picks for them
//! (`phobos_core::mma::WarpLayout`, the one rule the backend emits).

use crate::model::{Accumulator, DotInfo, LoopInfo, WarpTile};
use crate::steps::TileOp;
use phobos_core::ast::{CtxField, ScalarTy};
use phobos_core::consteval;
use phobos_core::hir::{
    Block, Builtin, ConstVal, DimId, Expr, ExprKind, Kernel, LocalKind, ParamId, StmtKind, Ty,
};
use phobos_core::mma::{dot_kind, WarpLayout, FRAG_M, FRAG_N};
use phobos_core::source::LineIndex;
use std::collections::{BTreeMap, BTreeSet};

/// A tile statement before evaluation.
#[derive(Clone, Debug)]
pub struct TileStmt {
    pub line: u32,
    pub param: ParamId,
    pub starts: Vec<Expr>,
    pub shape: Vec<u64>,
    pub store: bool,
}

impl TileStmt {
    fn new(line: u32, param: ParamId, starts: &[Expr], shape: Vec<u64>, store: bool) -> TileStmt {
        TileStmt {
            line,
            param,
            starts: starts.to_vec(),
            shape,
            store,
        }
    }
}

/// Loops and tile statements of one kernel variant.
#[derive(Clone, Debug, Default)]
pub struct SourceInfo {
    pub loops: Vec<LoopInfo>,
    /// Lines on which a statement starts.
    pub statement_lines: BTreeSet<u32>,
    pub tiles: Vec<TileStmt>,
    pub accumulators: Vec<Accumulator>,
    /// The `stages S` loops: the `for` line, `S`, and each staged copy's
    /// line and tile name (see `crate::model::Ring`).
    pub rings: Vec<StagedLoop>,
}

/// A `for ... stages S` loop as the source has it.
#[derive(Clone, Debug, Default)]
pub struct StagedLoop {
    pub line: u32,
    pub stages: u32,
    pub copies: Vec<(u32, String)>,
}

/// What the walk finds of one accumulator local.
#[derive(Default)]
struct AccUse {
    lines: BTreeSet<u32>,
    dots: Vec<DotInfo>,
}

/// Collect the loops (outermost first, in source order) and tile statements.
pub fn collect(kernel: &Kernel, src: &str) -> SourceInfo {
    let index = LineIndex::new(src);
    let mut info = SourceInfo::default();
    let mut accs = BTreeMap::new();
    walk(kernel, &kernel.body, &index, &mut info, &mut accs);
    info.loops.sort_by_key(|l| l.line);
    info.accumulators = accs
        .into_iter()
        .filter_map(|(local, uses)| accumulator(kernel, local, uses))
        .collect();
    info
}

/// An accumulator with the warp layout the backend gives it.
fn accumulator(kernel: &Kernel, local: u32, uses: AccUse) -> Option<Accumulator> {
    let l = kernel.locals.get(local as usize)?;
    let LocalKind::Acc { elem, rows, cols } = l.kind else {
        return None;
    };
    let warps = kernel.threads.div_ceil(32);
    let layout = WarpLayout::choose(rows, cols, warps)?;
    let warp_tiles = (0..warps)
        .map(|w| {
            let (row, col) = layout.warp_origin(w);
            WarpTile {
                warp: w,
                row,
                col,
                rows: layout.warp_rows(),
                cols: layout.warp_cols(),
            }
        })
        .collect();
    Some(Accumulator {
        name: l.name.clone(),
        elem: elem.name().to_string(),
        rows,
        cols,
        warp_grid: [layout.wm, layout.wn],
        warp_tiles,
        fragment: [FRAG_M, FRAG_N],
        registers_per_lane: layout.regs(elem),
        lines: uses.lines.into_iter().collect(),
        dots: uses.dots,
    })
}

/// A staged loop's ring as the source has it: its copies are the tile
/// copies of its body (`check/stages.rs` allows no other).
fn staged_loop(
    kernel: &Kernel,
    index: &LineIndex,
    line: u32,
    stages: u32,
    body: &Block,
) -> StagedLoop {
    let copies = body
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::TileCopy { dst, .. } => {
                Some((index.line(s.span.start as usize), local_name(kernel, dst.0)))
            }
            _ => None,
        })
        .collect();
    StagedLoop {
        line,
        stages,
        copies,
    }
}

fn local_name(kernel: &Kernel, local: u32) -> String {
    kernel
        .locals
        .get(local as usize)
        .map_or_else(String::new, |l| l.name.clone())
}

fn tile_elem(kernel: &Kernel, local: u32) -> Option<ScalarTy> {
    match kernel.locals.get(local as usize)?.kind {
        LocalKind::Tile { elem, .. } => Some(elem),
        _ => None,
    }
}

fn walk(
    kernel: &Kernel,
    block: &Block,
    index: &LineIndex,
    info: &mut SourceInfo,
    accs: &mut BTreeMap<u32, AccUse>,
) {
    for stmt in &block.stmts {
        let line = index.line(stmt.span.start as usize);
        info.statement_lines.insert(line);
        match &stmt.kind {
            StmtKind::For(_) | StmtKind::While { .. } => {
                if let StmtKind::For(l) = &stmt.kind {
                    if let Some(stages) = l.stages {
                        info.rings
                            .push(staged_loop(kernel, index, line, stages, &l.body));
                    }
                }
                let end = index.line((stmt.span.end as usize).saturating_sub(1));
                info.loops.push(LoopInfo {
                    line,
                    end_line: end.max(line),
                });
                for b in stmt.blocks() {
                    walk(kernel, b, index, info, accs);
                }
            }
            StmtKind::If { then, els, .. } => {
                walk(kernel, then, index, info, accs);
                walk(kernel, els, index, info, accs);
            }
            // The accumulator panel lights where the accumulator is zeroed
            // and where it is stored into a shared tile.
            StmtKind::AccZero { acc } | StmtKind::AccToTile { src: acc, .. } => {
                accs.entry(acc.0).or_default().lines.insert(line);
            }
            StmtKind::Dot { acc, a, b, b_trans } => {
                let uses = accs.entry(acc.0).or_default();
                uses.lines.insert(line);
                let operand = tile_elem(kernel, a.0);
                let acc_elem = match kernel.locals.get(acc.0 as usize).map(|l| &l.kind) {
                    Some(LocalKind::Acc { elem, .. }) => Some(*elem),
                    _ => None,
                };
                let kind = operand.zip(acc_elem).and_then(|(o, e)| dot_kind(o, e));
                uses.dots.push(DotInfo {
                    line,
                    a: local_name(kernel, a.0),
                    b: local_name(kernel, b.0),
                    b_trans: *b_trans,
                    operand: operand.map_or("", |t| t.name()).to_string(),
                    k_step: kind.map_or(0, |k| k.k),
                });
            }
            StmtKind::TileCopy { dst, src, starts } => {
                if let Some(shape) = tile_shape(kernel, dst.0 as usize) {
                    info.tiles
                        .push(TileStmt::new(line, *src, starts, shape, false));
                }
            }
            StmtKind::TileFill {
                src, starts, shape, ..
            } => {
                // The tensor box a fill reads, as the page draws a copy's.
                let shape = shape.iter().map(|&d| u64::from(d)).collect();
                info.tiles
                    .push(TileStmt::new(line, *src, starts, shape, false));
            }
            StmtKind::TileStore { dst, starts, src } | StmtKind::AccStore { dst, starts, src } => {
                if matches!(stmt.kind, StmtKind::AccStore { .. }) {
                    accs.entry(src.0).or_default().lines.insert(line);
                }
                if let Some(shape) = tile_shape(kernel, src.0 as usize) {
                    info.tiles
                        .push(TileStmt::new(line, *dst, starts, shape, true));
                }
            }
            _ => {}
        }
    }
}

fn tile_shape(kernel: &Kernel, local: usize) -> Option<Vec<u64>> {
    match &kernel.locals.get(local)?.kind {
        LocalKind::Tile { shape, .. } => Some(shape.iter().map(|&d| u64::from(d)).collect()),
        LocalKind::Acc { rows, cols, .. } => Some(vec![u64::from(*rows), u64::from(*cols)]),
        LocalKind::Scalar(_) | LocalKind::Array { .. } => None,
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
/// per-thread or something this evaluator does not know. Integer operators
/// are `phobos_core::consteval`'s, as compiled code computes them (wrapping
/// to the expression's type); what the language leaves undefined is None.
pub fn eval(e: &Expr, env: &Env<'_>) -> Option<i64> {
    i64::try_from(value(e, env)?).ok()
}

fn scalar(e: &Expr) -> Option<ScalarTy> {
    match e.ty {
        Ty::Scalar(t) => Some(t),
        _ => None,
    }
}

fn value(e: &Expr, env: &Env<'_>) -> Option<i128> {
    Some(match &e.kind {
        ExprKind::Const(ConstVal::Int(v)) => *v,
        ExprKind::Const(ConstVal::Bool(b)) => i128::from(*b),
        ExprKind::Const(ConstVal::Float(_)) => return None,
        ExprKind::Dim(DimId(d)) => i128::from(*env.dims.get(*d as usize)?),
        ExprKind::Param(ParamId(p)) => {
            let v = (*env.scalars.get(*p as usize)?)?;
            if v.fract() != 0.0 {
                return None;
            }
            i128::from(v as i64)
        }
        ExprKind::Ctx(field) => i128::from(match field {
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
        }),
        ExprKind::Unary(op, a) => consteval::unary(*op, scalar(e)?, value(a, env)?).ok()?,
        ExprKind::Convert(a) => {
            let (v, to) = (value(a, env)?, scalar(e)?);
            if to.is_float() {
                v
            } else {
                consteval::convert(v, to)
            }
        }
        ExprKind::Binary(op, a, b) => {
            consteval::wrapping(*op, scalar(a)?, value(a, env)?, value(b, env)?).ok()?
        }
        ExprKind::Builtin(f, args) => {
            let v: Option<Vec<i128>> = args.iter().map(|a| value(a, env)).collect();
            let t = scalar(e)?;
            match (f, v?.as_slice()) {
                (Builtin::Min, [a, b]) => *a.min(b),
                (Builtin::Max, [a, b]) => *a.max(b),
                (Builtin::Abs, [a]) if t.is_int() => consteval::wrap(a.abs(), t),
                (Builtin::Cdiv, [a, b]) => consteval::cdiv(t, *a, *b).ok()?,
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

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_core::ast::{BinOp, Span, UnOp};

    fn ex(kind: ExprKind, t: ScalarTy) -> Expr {
        Expr {
            kind,
            ty: Ty::Scalar(t),
            span: Span { start: 0, end: 0 },
        }
    }

    fn int(v: i128, t: ScalarTy) -> Expr {
        ex(ExprKind::Const(ConstVal::Int(v)), t)
    }

    fn run(e: &Expr) -> Option<i64> {
        let env = Env {
            dims: &[],
            scalars: &[],
            block: [0; 3],
            grid: [1; 3],
            threads: 128,
        };
        eval(e, &env)
    }

    #[test]
    fn not_on_an_integer_is_bitwise_as_in_the_compiler() {
        let not = |v, t| ex(ExprKind::Unary(UnOp::Not, Box::new(int(v, t))), t);
        assert_eq!(run(&not(5, ScalarTy::I32)), Some(-6));
        assert_eq!(run(&not(0, ScalarTy::U8)), Some(255));
        let b = ex(ExprKind::Const(ConstVal::Bool(false)), ScalarTy::Bool);
        let not_b = ex(ExprKind::Unary(UnOp::Not, Box::new(b)), ScalarTy::Bool);
        assert_eq!(run(&not_b), Some(1), "on bool it stays logical");
    }

    #[test]
    fn a_conversion_wraps_to_the_target_width() {
        let conv = |v, from, to| ex(ExprKind::Convert(Box::new(int(v, from))), to);
        assert_eq!(run(&conv(300, ScalarTy::I32, ScalarTy::U8)), Some(44));
        assert_eq!(
            run(&conv(-1, ScalarTy::I32, ScalarTy::U32)),
            Some(i64::from(u32::MAX))
        );
        assert_eq!(run(&conv(1 << 40, ScalarTy::I64, ScalarTy::I32)), Some(0));
    }

    #[test]
    fn cdiv_near_the_top_of_the_range_neither_overflows_nor_panics() {
        let cdiv = |a, b, t| {
            ex(
                ExprKind::Builtin(Builtin::Cdiv, vec![int(a, t), int(b, t)]),
                t,
            )
        };
        let max = i128::from(i64::MAX);
        assert_eq!(run(&cdiv(max, 2, ScalarTy::I64)), Some(1 << 62));
        assert_eq!(run(&cdiv(max, max, ScalarTy::I64)), Some(1));
        assert_eq!(run(&cdiv(i32::MAX.into(), 2, ScalarTy::I32)), Some(1 << 30));
        assert_eq!(run(&cdiv(7, 0, ScalarTy::I32)), None);
        assert_eq!(run(&cdiv(-7, 2, ScalarTy::I32)), None);
    }

    #[test]
    fn integer_arithmetic_wraps_to_the_operand_type() {
        let add = ex(
            ExprKind::Binary(
                BinOp::Add,
                Box::new(int(i32::MAX.into(), ScalarTy::I32)),
                Box::new(int(1, ScalarTy::I32)),
            ),
            ScalarTy::I32,
        );
        assert_eq!(run(&add), Some(i64::from(i32::MIN)));
    }
}
