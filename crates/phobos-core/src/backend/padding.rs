//! Padding of shared tiles: the trailing columns (elements of the last
//! axis) of a tile that no access of the kernel can reach, found by
//! bounding every tile subscript from above. A `shared<f32>[32, 33]` read
//! and written only at `t[k, ctx.lane]` and `t[ctx.lane, k]`, with `k` a
//! loop variable below 32, never touches column 32: each 132-byte row ends
//! in 4 bytes of padding, which `phobos explain` draws on its byte ruler.
//!
//! A side table over the checked HIR: it decides nothing about what is
//! compiled. The bounds are sound upper bounds or nothing: a subscript
//! whose bound is not known (a loaded value, a parameter, a `var` that is
//! assigned, arithmetic that may leave `i32`) makes the whole row count as
//! used, and so does a tile copy or tile store, which touch every element.

use crate::ast::{BinOp, CtxField};
use crate::hir::{self, Builtin, ConstVal, ExprKind, LocalId, LocalKind, Memory, StmtKind};
use std::collections::HashMap;

/// For each tile local that has padding: how many trailing elements of
/// each row (the last axis) no access reaches.
pub fn unused_columns(k: &hir::Kernel) -> HashMap<LocalId, u32> {
    let mut defs = HashMap::new();
    for s in &k.body.stmts {
        collect_defs(s, &mut defs);
    }
    let mut cx = Bounds {
        k,
        defs,
        memo: HashMap::new(),
    };
    // The highest last-axis index each tile's accesses reach; `None`
    // once one is unbounded.
    let mut reach: HashMap<LocalId, Option<i128>> = HashMap::new();
    for s in &k.body.stmts {
        cx.stmt(s, &mut reach);
    }
    let mut out = HashMap::new();
    for (i, local) in k.locals.iter().enumerate() {
        let LocalKind::Tile { shape, .. } = &local.kind else {
            continue;
        };
        let Some(&cols) = shape.last() else { continue };
        let id = LocalId(i as u32);
        let top = match reach.get(&id) {
            Some(Some(top)) => *top,
            // Unbounded, or never accessed (nothing to draw then).
            _ => continue,
        };
        let unused = i128::from(cols) - 1 - top;
        if unused > 0 {
            out.insert(id, unused as u32);
        }
    }
    out
}

/// How a local gets its values.
enum Def<'a> {
    /// `let x = e` (or a `var` never assigned), or a `fn` argument.
    Value(&'a hir::Expr),
    /// A `for` loop variable.
    Loop(&'a hir::ForLoop),
    /// Assigned after its declaration: not bounded here.
    Assigned,
}

fn collect_defs<'a>(s: &'a hir::Stmt, defs: &mut HashMap<LocalId, Def<'a>>) {
    let exprs = |e: &'a hir::Expr, defs: &mut HashMap<LocalId, Def<'a>>| {
        expr_defs(e, defs);
    };
    match &s.kind {
        StmtKind::Let { local, init } => {
            defs.entry(*local).or_insert(Def::Value(init));
            exprs(init, defs);
        }
        StmtKind::Assign { local, value } => {
            defs.insert(*local, Def::Assigned);
            exprs(value, defs);
        }
        StmtKind::Atomic {
            result: Some(local),
            ..
        } => {
            defs.insert(*local, Def::Assigned);
        }
        StmtKind::For(l) => {
            defs.insert(l.var, Def::Loop(l));
            l.body.stmts.iter().for_each(|s| collect_defs(s, defs));
        }
        StmtKind::If { cond, then, els } => {
            exprs(cond, defs);
            then.stmts.iter().for_each(|s| collect_defs(s, defs));
            els.stmts.iter().for_each(|s| collect_defs(s, defs));
        }
        StmtKind::While { cond, body } => {
            exprs(cond, defs);
            body.stmts.iter().for_each(|s| collect_defs(s, defs));
        }
        _ => {}
    }
    // Subscripts and stored values may hold `fn` arguments too.
    s.exprs(&mut |e| expr_defs(e, defs));
}

/// The `fn` arguments bound inside an expression.
fn expr_defs<'a>(e: &'a hir::Expr, defs: &mut HashMap<LocalId, Def<'a>>) {
    if let ExprKind::Let { local, value, body } = &e.kind {
        defs.entry(*local).or_insert(Def::Value(value));
        expr_defs(value, defs);
        expr_defs(body, defs);
        return;
    }
    match &e.kind {
        ExprKind::Unary(_, x) | ExprKind::Convert(x) | ExprKind::RunSum(x) => expr_defs(x, defs),
        ExprKind::Elem { run, .. } | ExprKind::Word { run, .. } => expr_defs(run, defs),
        ExprKind::Binary(_, a, b) => {
            expr_defs(a, defs);
            expr_defs(b, defs);
        }
        ExprKind::Builtin(_, xs) | ExprKind::Load { index: xs, .. } => {
            xs.iter().for_each(|x| expr_defs(x, defs))
        }
        ExprKind::RunLoad { index, .. } => index.iter().for_each(|x| expr_defs(x, defs)),
        ExprKind::Collective { arg, .. } => expr_defs(arg, defs),
        ExprKind::Shuffle { lane, value, .. } => {
            expr_defs(lane, defs);
            expr_defs(value, defs);
        }
        _ => {}
    }
}

/// A closed interval of values; `None` ends are unbounded.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Range {
    lo: Option<i128>,
    hi: Option<i128>,
}

const ANY: Range = Range { lo: None, hi: None };

impl Range {
    fn exact(v: i128) -> Range {
        Range {
            lo: Some(v),
            hi: Some(v),
        }
    }

    /// Index arithmetic is `i32` and wraps: a range that may leave `i32`
    /// bounds nothing.
    fn in_i32(self) -> Range {
        let fits = |v: Option<i128>| v.is_none_or(|v| i32::try_from(v).is_ok());
        if fits(self.lo) && fits(self.hi) {
            self
        } else {
            ANY
        }
    }

    fn non_negative(self) -> bool {
        self.lo.is_some_and(|lo| lo >= 0)
    }
}

struct Bounds<'a> {
    k: &'a hir::Kernel,
    defs: HashMap<LocalId, Def<'a>>,
    /// Ranges of locals; `ANY` while one is being computed (a cycle).
    memo: HashMap<LocalId, Range>,
}

impl Bounds<'_> {
    fn stmt(&mut self, s: &hir::Stmt, reach: &mut HashMap<LocalId, Option<i128>>) {
        match &s.kind {
            StmtKind::Store {
                dst: Memory::Tile(l),
                index,
                ..
            }
            | StmtKind::Atomic {
                dst: Memory::Tile(l),
                index,
                ..
            } => self.point(*l, index, reach),
            StmtKind::RunStore {
                dst: Memory::Tile(l),
                index,
                axis,
                len,
                ..
            } => self.run(*l, index, *axis, *len, reach),
            StmtKind::TileCopy { dst: l, .. } | StmtKind::TileStore { src: l, .. } => {
                reach.insert(*l, None);
            }
            // An accumulator stored into a box writes its columns.
            StmtKind::AccToTile { dst, at, src } => {
                let top = match self.k.locals[src.0 as usize].kind {
                    LocalKind::Acc { cols, .. } => Some(i128::from(at[1]) + i128::from(cols) - 1),
                    _ => None,
                };
                join(reach, *dst, top);
            }
            StmtKind::TileFill { dst, at, shape, .. } => {
                let top = match (at.last(), shape.last()) {
                    (Some(a), Some(n)) => Some(i128::from(*a) + i128::from(*n) - 1),
                    _ => None,
                };
                join(reach, *dst, top);
            }
            StmtKind::If { then, els, .. } => {
                then.stmts.iter().for_each(|s| self.stmt(s, reach));
                els.stmts.iter().for_each(|s| self.stmt(s, reach));
            }
            StmtKind::For(l) => l.body.stmts.iter().for_each(|s| self.stmt(s, reach)),
            StmtKind::While { body, .. } => body.stmts.iter().for_each(|s| self.stmt(s, reach)),
            _ => {}
        }
        let mut reads = Vec::new();
        let mut collect = |e: &hir::Expr| {
            e.walk(&mut |x| match &x.kind {
                ExprKind::Load {
                    src: Memory::Tile(l),
                    index,
                } => reads.push((*l, index.clone(), None)),
                ExprKind::RunLoad {
                    src: Memory::Tile(l),
                    index,
                    axis,
                    len,
                } => reads.push((*l, index.clone(), Some((*axis, *len)))),
                _ => {}
            })
        };
        // Every expression of the statement: subscripts, values, an
        // epilogue's value, a condition, a loop's bounds.
        s.exprs(&mut collect);
        for (l, index, run) in reads {
            match run {
                Some((axis, len)) => self.run(l, &index, axis, len, reach),
                None => self.point(l, &index, reach),
            }
        }
    }

    fn point(
        &mut self,
        l: LocalId,
        index: &[hir::Expr],
        reach: &mut HashMap<LocalId, Option<i128>>,
    ) {
        let top = index.last().and_then(|i| self.range(i).hi);
        join(reach, l, top);
    }

    fn run(
        &mut self,
        l: LocalId,
        index: &[hir::Expr],
        axis: usize,
        len: u32,
        reach: &mut HashMap<LocalId, Option<i128>>,
    ) {
        let last = index.len().saturating_sub(1);
        let top = index.last().and_then(|i| self.range(i).hi);
        let top = if axis == last {
            top.map(|t| t + i128::from(len) - 1)
        } else {
            top
        };
        join(reach, l, top);
    }

    fn local(&mut self, l: LocalId) -> Range {
        if let Some(r) = self.memo.get(&l) {
            return *r;
        }
        self.memo.insert(l, ANY);
        let r = match self.defs.get(&l) {
            Some(Def::Value(e)) => {
                let e: &hir::Expr = e;
                self.range(e)
            }
            Some(Def::Loop(l)) => {
                let l: &hir::ForLoop = l;
                let (s, e) = (self.range(&l.start), self.range(&l.end));
                match const_of(&l.step) {
                    Some(st) if st > 0 => Range {
                        lo: s.lo,
                        hi: e.hi.map(|h| h - 1),
                    },
                    Some(st) if st < 0 => Range {
                        lo: e.lo.map(|l| l + 1),
                        hi: s.hi,
                    },
                    _ => ANY,
                }
            }
            _ => ANY,
        };
        self.memo.insert(l, r);
        r
    }

    fn range(&mut self, e: &hir::Expr) -> Range {
        let threads = i128::from(self.k.threads);
        let r = match &e.kind {
            ExprKind::Const(ConstVal::Int(v)) => Range::exact(*v),
            ExprKind::Ctx(c) => match c {
                CtxField::Thread => Range {
                    lo: Some(0),
                    hi: Some(threads - 1),
                },
                CtxField::Lane => Range {
                    lo: Some(0),
                    hi: Some(31),
                },
                CtxField::Warp => Range {
                    lo: Some(0),
                    hi: Some(threads / 32 - 1),
                },
                CtxField::Lanes => Range::exact(32),
                CtxField::Threads => Range::exact(threads),
                CtxField::Warps => Range::exact(threads / 32),
                _ => Range {
                    lo: Some(0),
                    hi: None,
                },
            },
            ExprKind::Dim(d) => match self.k.dims.get(d.0 as usize).and_then(|d| d.constant) {
                Some(v) => Range::exact(i128::from(v)),
                None => Range {
                    lo: Some(1),
                    hi: None,
                },
            },
            ExprKind::Local(l) => self.local(*l),
            ExprKind::Let { local, value, body } => {
                let v = self.range(value);
                self.memo.insert(*local, v);
                self.range(body)
            }
            // An integer conversion keeps the value only when it fits the
            // new type (`u8(x)` of a negative `x` wraps to a large one).
            ExprKind::Convert(x) => match (x.ty, e.ty) {
                (hir::Ty::Scalar(from), hir::Ty::Scalar(to)) if from.is_int() && to.is_int() => {
                    let r = self.range(x);
                    if fits(r, to) {
                        r
                    } else {
                        ANY
                    }
                }
                _ => ANY,
            },
            ExprKind::Unary(crate::ast::UnOp::Neg, x) => {
                let r = self.range(x);
                Range {
                    lo: r.hi.map(|h| -h),
                    hi: r.lo.map(|l| -l),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (self.range(a), self.range(b));
                binary(*op, x, y)
            }
            ExprKind::Builtin(Builtin::Min, xs) if xs.len() == 2 => {
                let (x, y) = (self.range(&xs[0]), self.range(&xs[1]));
                Range {
                    lo: both(x.lo, y.lo, i128::min),
                    hi: either(x.hi, y.hi, i128::min),
                }
            }
            ExprKind::Builtin(Builtin::Max, xs) if xs.len() == 2 => {
                let (x, y) = (self.range(&xs[0]), self.range(&xs[1]));
                Range {
                    lo: either(x.lo, y.lo, i128::max),
                    hi: both(x.hi, y.hi, i128::max),
                }
            }
            ExprKind::Builtin(Builtin::Select, xs) if xs.len() == 3 => {
                let (x, y) = (self.range(&xs[1]), self.range(&xs[2]));
                Range {
                    lo: both(x.lo, y.lo, i128::min),
                    hi: both(x.hi, y.hi, i128::max),
                }
            }
            _ => ANY,
        };
        r.in_i32()
    }
}

/// Both ends known: `f` of them; else unbounded.
fn both(a: Option<i128>, b: Option<i128>, f: fn(i128, i128) -> i128) -> Option<i128> {
    Some(f(a?, b?))
}

/// Either end known bounds the result (`min` of an unbounded value and 5
/// is at most 5).
fn either(a: Option<i128>, b: Option<i128>, f: fn(i128, i128) -> i128) -> Option<i128> {
    match (a, b) {
        (Some(a), Some(b)) => Some(f(a, b)),
        (a, b) => a.or(b),
    }
}

fn binary(op: BinOp, x: Range, y: Range) -> Range {
    let add = |a: Option<i128>, b: Option<i128>| Some(a? + b?);
    match op {
        BinOp::Add => Range {
            lo: add(x.lo, y.lo),
            hi: add(x.hi, y.hi),
        },
        BinOp::Sub => Range {
            lo: add(x.lo, y.hi.map(|h| -h)),
            hi: add(x.hi, y.lo.map(|l| -l)),
        },
        BinOp::Mul => match (x.lo, x.hi, y.lo, y.hi) {
            (Some(a), Some(b), Some(c), Some(d)) => {
                let p = [a * c, a * d, b * c, b * d];
                Range {
                    lo: p.iter().min().copied(),
                    hi: p.iter().max().copied(),
                }
            }
            _ => ANY,
        },
        BinOp::Div => match (y.lo, y.hi) {
            (Some(c), Some(d)) if c == d && c > 0 && x.non_negative() => Range {
                lo: x.lo.map(|l| l / c),
                hi: x.hi.map(|h| h / c),
            },
            _ => ANY,
        },
        BinOp::Rem => match (y.lo, y.hi) {
            (Some(c), Some(d)) if c == d && c > 0 && x.non_negative() => Range {
                lo: Some(0),
                hi: Some(x.hi.map_or(c - 1, |h| h.min(c - 1))),
            },
            _ => ANY,
        },
        BinOp::BitAnd => match (x, y) {
            (
                r,
                Range {
                    lo: Some(c),
                    hi: Some(d),
                },
            )
            | (
                Range {
                    lo: Some(c),
                    hi: Some(d),
                },
                r,
            ) if c == d && c >= 0 => {
                let hi = if r.non_negative() {
                    r.hi.map_or(c, |h| h.min(c))
                } else {
                    c
                };
                Range {
                    lo: Some(0),
                    hi: Some(hi),
                }
            }
            _ => ANY,
        },
        BinOp::Shr => match (y.lo, y.hi) {
            (Some(s), Some(t)) if s == t && (0..31).contains(&s) && x.non_negative() => Range {
                lo: x.lo.map(|l| l >> s),
                hi: x.hi.map(|h| h >> s),
            },
            _ => ANY,
        },
        _ => ANY,
    }
}

/// Whether every value of `r` is a value of the integer type `t`.
fn fits(r: Range, t: crate::ast::ScalarTy) -> bool {
    let bits = 8 * t.size();
    let (min, max) = if t.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    r.lo.is_some_and(|lo| lo >= min) && r.hi.is_some_and(|hi| hi <= max)
}

fn const_of(e: &hir::Expr) -> Option<i128> {
    match e.kind {
        ExprKind::Const(ConstVal::Int(v)) => Some(v),
        _ => None,
    }
}

/// Raise the tile's highest reached index to `top`; an unbounded access
/// (`None`) makes it unbounded for good.
fn join(reach: &mut HashMap<LocalId, Option<i128>>, l: LocalId, top: Option<i128>) {
    let cur = reach.entry(l).or_insert(Some(i128::MIN));
    *cur = match (*cur, top) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pads(src: &str) -> Vec<(String, u32)> {
        let (checked, diags) = crate::check_source(src);
        assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
        let k = &checked[0].variants[0];
        let mut out: Vec<(String, u32)> = unused_columns(k)
            .into_iter()
            .map(|(l, n)| (k.locals[l.0 as usize].name.clone(), n))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_column_no_subscript_reaches_is_padding() {
        let src = "@launch(256)\nkernel t(A: tensor<f32>[N, M], B: tensor<f32>[M, N]) {\n  var t = shared<f32>[32, 33]\n  for k in range(ctx.warp, 32, ctx.warps) {\n    t[k, ctx.lane] = A[k, ctx.lane]\n  }\n  for k in range(ctx.warp, 32, ctx.warps) {\n    B[k, ctx.lane] = t[ctx.lane, k]\n  }\n}\n";
        assert_eq!(pads(src), vec![("t".to_string(), 1)]);
    }

    #[test]
    fn an_unbounded_or_whole_tile_access_leaves_no_padding() {
        // A subscript from a parameter bounds nothing.
        let src = "@launch(32)\nkernel t(A: tensor<f32>[N], n: i32) {\n  var t = shared<f32>[2, 40]\n  t[0, ctx.lane] = 1.0\n  A[ctx.lane] = t[0, n]\n}\n";
        assert_eq!(pads(src), vec![]);
        // A tile store reads every element.
        let src = "@launch(32)\nkernel t(A: tensor<f32>[2, 40]) {\n  var t = shared<f32>[2, 40]\n  t[0, ctx.lane] = 1.0\n  A[0 :+ 2, 0 :+ 40] = t\n}\n";
        assert_eq!(pads(src), vec![]);
        // `k % 40` reaches 39, the last column.
        let src = "@launch(64)\nkernel t(A: tensor<f32>[N]) {\n  var t = shared<f32>[2, 40]\n  t[0, ctx.thread % 40] = 1.0\n  A[ctx.thread] = t[0, ctx.lane]\n}\n";
        assert_eq!(pads(src), vec![]);
    }

    #[test]
    fn a_conversion_that_may_wrap_bounds_nothing() {
        // `u8(ctx.lane - 8)` is 248 and up for lanes below 8, so the `min`
        // reaches column 39: none of the 40 columns is padding (taking the
        // range through the conversion said 23, and 16 columns of padding).
        let src = "@launch(32)\nkernel t(A: tensor<f32>[N]) {\n  var t = shared<f32>[2, 40]\n  t[0, ctx.lane] = 1.0\n  A[ctx.lane] = t[0, min(i32(u8(ctx.lane - 8)), 39)]\n}\n";
        assert_eq!(pads(src), vec![]);
        // Widening keeps the bound: `i32(u8(ctx.lane))` is below 32.
        let src = "@launch(32)\nkernel t(A: tensor<f32>[N]) {\n  var t = shared<f32>[2, 40]\n  t[0, ctx.lane] = 1.0\n  A[ctx.lane] = t[0, i32(u8(ctx.lane))]\n}\n";
        assert_eq!(pads(src), vec![("t".to_string(), 8)]);
    }

    #[test]
    fn partial_fills_runs_and_fn_arguments_are_bounded() {
        let src = "fn col(i) = i + 2\n@launch(32)\nkernel t(A: tensor<f32>[32, 32], B: tensor<f32>[32, 36]) {\n  var t = shared<f32>[32, 40]\n  t[0 :+ 32, 0 :+ 32] = A[0 :+ 32, 0 :+ 32]\n  B[ctx.lane, 0 :+ 4] = t[ctx.lane, 28 :+ 4]\n  B[ctx.lane, col(ctx.lane)] = t[0, col(ctx.lane)]\n}\n";
        // Columns up to 33 (col(31)) are read: 6 of 40 are padding.
        assert_eq!(pads(src), vec![("t".to_string(), 6)]);
    }

    #[test]
    fn an_accumulator_stored_into_a_tile_reaches_its_box() {
        // The store reaches columns 4 to 19 of 24, the reads only 0 to 3:
        // 4 columns are padding (20 were, before the store counted).
        let src = "@launch(32)\nkernel t(A: tensor<f16>[16, 16], Y: tensor<f32>[16]) {\n  var a = A[0 :+ 16, 0 :+ 16]\n  var acc = zeros<f32>[16, 16]\n  acc += dot(a, trans(a))\n  var s = shared<f32>[16, 24]\n  s[0 :+ 16, 4 :+ 16] = acc\n  Y[ctx.lane % 16] = s[ctx.lane % 16, ctx.lane % 4]\n}\n";
        assert_eq!(pads(src), vec![("s".to_string(), 4)]);
    }

    #[test]
    fn an_epilogue_read_of_a_tile_is_an_access() {
        // An epilogue reads every column of a broadcast row: none of `b`'s
        // 64 columns is padding, though the partial fill reaches only the
        // first 32. Padding's own walk over a statement's expressions
        // skipped the epilogue's value and called 32 columns padding; it
        // now uses the HIR's one walk (`hir::Stmt::exprs`).
        let src = "@launch(32)\nkernel t(A: tensor<f32>[1, 64], C: tensor<f32>[16, 64]) {\n  var b = shared<f32>[1, 64]\n  b[0 :+ 1, 0 :+ 32] = A[0 :+ 1, 0 :+ 32]\n  var acc = zeros<f32>[16, 64]\n  acc = acc + b\n  C[0 :+ 16, 0 :+ 64] = acc\n}\n";
        assert_eq!(pads(src), vec![]);
    }
}
