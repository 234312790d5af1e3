//! `for k in range(a, b, step) stages S { ... }` in lowering: the tile
//! copies of the body go into an `S`-deep ring of `cp.async` copies, in
//! the order of CUTLASS's multistage main loop (one barrier per trip):
//!
//! ```text
//! k0 = a; end = b                        (evaluated once)
//! for j in 0 .. S-1:                     the prologue
//!     if k0 + j*step is a trip: copies of that trip into stage j
//!     commit
//! read = S - 1
//! for k in range(k0, end, step):
//!     write = read;  read = read + 1 == S ? 0 : read + 1
//!     wait_group S-2                     this trip's group has landed
//!     barrier                            (RingWait)
//!     if k + (S-1)*step is a trip: its copies into stage `write`
//!     commit                             (an empty group past the end)
//!     the rest of the body, reading stage `read`
//! wait_group 0
//! ```
//!
//! Stage `write` is the one the previous trip read: the barrier after the
//! wait orders every warp's reads of it before the new copies, and the
//! same barrier orders this trip's copies' landing (at each thread's wait)
//! before any thread reads them. The copies of a trip past the loop's end
//! are not issued (no trip reads them); past a tensor's bounds they are
//! zero-filled by `emit`. Each ring buffer is `S` times its tile
//! (`Func::rings`); `emit` adds `read * stage_bytes` to every other access
//! of it. The checker (`check/stages.rs`) made sure the copies can be
//! computed trips ahead: statements of the body itself, whose starts use
//! only the loop variable and values from before the loop.
//!
//! Used only where the target has `cp.async` (sm_80+) and the loop is at a
//! uniform point; otherwise `stages` is ignored and the loop is lowered as
//! written (plain copies with a barrier before and after each).

use super::Lower;
use crate::ast::{BinOp, ScalarTy, Span};
use crate::backend::ir::{
    BarrierRole, ExprId, ExprKind, ForLoop, PtxSlot, Ring, StmtId, StmtKind, TensorMapSpec,
    TmaRing, Var, VarId,
};
use crate::hir::{self, ConstVal, LocalId, LocalKind, Ty};

/// One tile copy of a staged loop's body.
struct Staged<'h> {
    dst: LocalId,
    src: hir::ParamId,
    starts: &'h [hir::Expr],
    span: Span,
}

impl Lower<'_> {
    /// Whether a loop with `stages` gets its ring here.
    pub(super) fn rings_here(&self) -> bool {
        self.async_copies && self.uniform && self.pred.is_none()
    }

    pub(super) fn staged_for(&mut self, l: &hir::ForLoop, loop_span: Span) -> Vec<StmtId> {
        let span = loop_span;
        // The caller checked `l.stages` is there.
        let stages = l.stages.unwrap_or(2);
        // The checker made sure there is at least one copy.
        let copies: Vec<Staged> = l
            .body
            .stmts
            .iter()
            .filter_map(|s| match &s.kind {
                hir::StmtKind::TileCopy { dst, src, starts } => Some(Staged {
                    dst: *dst,
                    src: *src,
                    starts,
                    span: s.span,
                }),
                _ => None,
            })
            .collect();
        // The checker made sure the step is a constant.
        let step = self.hir_const(&l.step).unwrap_or(1);
        let s = i128::from(stages);
        let mut out = Vec::new();
        let k0 = self.uniform_var("stage_k0", span);
        let e = self.expr(&l.start);
        out.push(self.push_stmt(StmtKind::Set(k0, e), span));
        let end = self.uniform_var("stage_end", span);
        let e = self.expr(&l.end);
        out.push(self.push_stmt(StmtKind::Set(end, e), span));
        let read = self.uniform_var("stage_read", span);
        let write = self.uniform_var("stage_write", span);
        let mut rings = Vec::new();
        // The commits and the final wait: nothing on a TMA ring.
        let mut group_stmts = Vec::new();
        for c in &copies {
            let b = self.tiles[&c.dst];
            let stage_bytes = self.f.buffers[b].bytes;
            self.f.buffers[b].bytes = stage_bytes.saturating_mul(u64::from(stages));
            rings.push((b, stage_bytes));
            // Earlier users of these bytes (the plan may reuse them) are
            // done before the prologue's copies.
            out.push(self.barrier(BarrierRole::BeforeTile(b), c.span));
        }
        for j in 0..s - 1 {
            let kj = self.uniform_var("stage_k", span);
            let at = self.offset(k0, j * step, span);
            out.push(self.push_stmt(StmtKind::Set(kj, at), span));
            let stage = self.int_const(j, ScalarTy::I32, span);
            out.push(self.issue(l.var, (kj, end), step, &copies, stage, Some(span)));
            let commit = self.push_stmt(StmtKind::AsyncCommit, span);
            group_stmts.push(commit);
            out.push(commit);
        }
        let last = self.int_const(s - 1, ScalarTy::I32, span);
        out.push(self.push_stmt(StmtKind::Set(read, last), span));

        // The loop itself.
        let v = self.locals[&l.var];
        self.uniform_vars.insert(v);
        let mut body = Vec::new();
        // The top of a trip is the first copy's line: the statements of a
        // trip are the body's lines, so a step-through (explain) sees one
        // trip where the loop's own line would start another.
        let span = copies[0].span;
        // write = read; read = read + 1, wrapping to 0 at S: a compare and
        // a select, where `% S` cost a division (issue 30).
        let prev = self.var_expr(read, span);
        body.push(self.push_stmt(StmtKind::Set(write, prev), span));
        let next = self.offset(read, 1, span);
        let sc = self.int_const(s, ScalarTy::I32, span);
        let wraps = self.push_expr(
            ExprKind::Binary(BinOp::Eq, next, sc),
            Ty::Scalar(ScalarTy::Bool),
            span,
        );
        let zero = self.int_const(0, ScalarTy::I32, span);
        let next = self.offset(read, 1, span);
        let next = self.push_expr(
            ExprKind::Builtin(hir::Builtin::Select, vec![wraps, zero, next]),
            Ty::Scalar(ScalarTy::I32),
            span,
        );
        body.push(self.push_stmt(StmtKind::Set(read, next), span));
        let wait = self.push_stmt(StmtKind::AsyncWait(stages - 2), span);
        body.push(wait);
        let first = self.tiles[&copies[0].dst];
        body.push(self.barrier(BarrierRole::RingWait(first), span));
        let ahead = self.uniform_var("stage_k", span);
        let at = self.offset(v, (s - 1) * step, span);
        body.push(self.push_stmt(StmtKind::Set(ahead, at), span));
        let stage = self.var_expr(write, span);
        body.push(self.issue(l.var, (ahead, end), step, &copies, stage, None));
        // After the last copy, at its line.
        let last_copy = copies[copies.len() - 1].span;
        let commit = self.push_stmt(StmtKind::AsyncCommit, last_copy);
        group_stmts.push(commit);
        body.push(commit);
        let staged: Vec<Span> = copies.iter().map(|c| c.span).collect();
        let outer = std::mem::replace(&mut self.staged_copies, staged);
        let pre = std::mem::take(&mut self.pre);
        body.extend(self.block(&l.body));
        self.pre = pre;
        self.staged_copies = outer;
        let span = loop_span;
        let start = self.var_expr(k0, span);
        let end_e = self.var_expr(end, span);
        let step_e = self.int_const(step, ScalarTy::I32, span);
        let f = self.push_stmt(
            StmtKind::For(ForLoop {
                var: v,
                start,
                end: end_e,
                step: step_e,
                body,
            }),
            span,
        );
        let drain = self.push_stmt(StmtKind::AsyncWait(0), span);
        if self.tma_ring(&copies) {
            let ring = TmaRing {
                copies: rings.iter().map(|(b, _)| *b).collect(),
            };
            self.f.tma_rings.insert(f, ring);
            self.f.tma_waits.insert(wait, rings[0].0);
            self.f.tma_skip.extend(group_stmts);
            self.f.tma_skip.insert(drain);
        }
        for (b, stage_bytes) in rings {
            let ring = Ring {
                stages,
                stage_bytes,
                read,
                looped: f,
            };
            self.f.rings.insert(b, ring);
        }
        out.push(f);
        out.push(drain);
        out
    }

    /// `if k is a trip { the copies, with the loop variable at k, into
    /// stage }`: the staged copies of one trip, each at its own line, or
    /// all at `line_of_all` (the prologue's, at the loop's line: they run
    /// before the loop's first trip).
    fn issue(
        &mut self,
        var: LocalId,
        (k, end): (VarId, VarId),
        step: i128,
        copies: &[Staged],
        stage: ExprId,
        line_of_all: Option<Span>,
    ) -> StmtId {
        let span = line_of_all.unwrap_or(copies[0].span);
        let own = self.locals.insert(var, k);
        let pre = std::mem::take(&mut self.pre);
        let mut then = Vec::new();
        for (i, c) in copies.iter().enumerate() {
            let buffer = self.tiles[&c.dst];
            let (shape, at) = self.tile_box(c.dst, buffer);
            let line = line_of_all.unwrap_or(c.span);
            let access = self.tensor_box(c.src, c.starts, shape, false, line);
            then.append(&mut self.pre);
            // Each copy its own stage operand: expressions have one user.
            let stage = if i == 0 {
                stage
            } else {
                self.copy_expr(stage, span)
            };
            then.push(self.push_stmt(
                StmtKind::AsyncCopy {
                    access,
                    buffer,
                    at,
                    stage,
                },
                line,
            ));
        }
        self.pre = pre;
        if let Some(own) = own {
            self.locals.insert(var, own);
        }
        let kv = self.var_expr(k, span);
        let ev = self.var_expr(end, span);
        let op = if step > 0 { BinOp::Lt } else { BinOp::Gt };
        let cond = self.push_expr(
            ExprKind::Binary(op, kv, ev),
            Ty::Scalar(ScalarTy::Bool),
            span,
        );
        self.judged.insert(cond);
        self.push_stmt(
            StmtKind::If {
                cond,
                then,
                els: Vec::new(),
            },
            span,
        )
    }

    /// Whether a staged loop's copies go through TMA (sm_90a): each fills
    /// a `wgmma` operand (swizzled, unpadded) from a rank-2 tensor whose
    /// rows are a multiple of 16 bytes (TMA's stride rule: a constant
    /// extent, or an `@aligned` dim), in boxes of at most 256 rows. Each
    /// copy's tensor map (one per tensor, box and swizzle) is added to
    /// `Func::tensor_maps` and the `.param` list.
    fn tma_ring(&mut self, copies: &[Staged]) -> bool {
        let mut specs = Vec::new();
        for c in copies {
            let b = self.tiles[&c.dst];
            let Some(&span) = self.f.swizzle.get(&b) else {
                return false;
            };
            let LocalKind::Tile { elem, shape } = &self.k.locals[c.dst.0 as usize].kind else {
                return false;
            };
            let row_ok = super::mma::row_alignment(self.k, c.src) == Some(16);
            if !row_ok || shape.len() != 2 || shape[0] > 256 {
                return false;
            }
            specs.push(TensorMapSpec {
                param: c.src,
                box_dims: [span / elem.size(), shape[0]],
                swizzle: span,
            });
        }
        for spec in specs {
            if !self.f.tensor_maps.contains(&spec) {
                let i = self.f.tensor_maps.len() as u32;
                self.f.tensor_maps.push(spec);
                self.f.ptx_params.push(PtxSlot::TensorMap(i));
            }
        }
        true
    }

    fn uniform_var(&mut self, name: &str, _span: Span) -> VarId {
        let v = self.f.vars.push(Var {
            name: name.to_string(),
            ty: ScalarTy::I32,
        });
        self.uniform_vars.insert(v);
        v
    }

    fn var_expr(&mut self, v: VarId, span: Span) -> ExprId {
        self.push_expr(ExprKind::Var(v), Ty::Scalar(ScalarTy::I32), span)
    }

    /// `v + d` (i32).
    fn offset(&mut self, v: VarId, d: i128, span: Span) -> ExprId {
        let x = self.var_expr(v, span);
        if d == 0 {
            return x;
        }
        let c = self.int_const(d, ScalarTy::I32, span);
        self.binary(BinOp::Add, x, c, span)
    }

    fn binary(&mut self, op: BinOp, a: ExprId, b: ExprId, span: Span) -> ExprId {
        self.push_expr(ExprKind::Binary(op, a, b), Ty::Scalar(ScalarTy::I32), span)
    }

    /// A copy of a stage operand (a constant or a var).
    fn copy_expr(&mut self, e: ExprId, span: Span) -> ExprId {
        match self.f.exprs[e].kind.clone() {
            ExprKind::Var(v) => self.var_expr(v, span),
            ExprKind::Const(ConstVal::Int(c)) => self.int_const(c, ScalarTy::I32, span),
            _ => e,
        }
    }
}
