//! `for k in range(a, b, step) stages S { ... }`: the rules a loop must
//! follow for the backend to put its tile copies in an `S`-deep `cp.async`
//! ring (`backend/lower/stages.rs`), checked once the body is.
//!
//! The ring issues the copies of trip `i + S - 1` at the top of trip `i`
//! (and those of the first `S - 1` trips before the loop), so every tile
//! copy of the body must be computable there: it is a statement of the
//! body itself (not under an `if` or an inner loop), its starts use only
//! the loop variable and values from before the loop that the loop does not
//! assign (no memory reads), and its tile (which the copy declares: a tile
//! is never assigned) is written by nothing else. The loop counts by a constant step, is
//! not unrolled, and is not left by `break` or `return` (later trips'
//! copies are in flight when a trip ends). What this module does not
//! decide: whether the target has `cp.async` (sm_75 keeps plain copies,
//! the backend's choice) and where barriers go (`backend/barriers.rs`).

use super::cx::Cx;
use super::error::StmtError;
use crate::ast::Span;
use crate::hir::{self, LocalId};
use std::collections::HashSet;

/// The stage counts a ring may have.
pub(crate) const STAGES: std::ops::RangeInclusive<i128> = 2..=4;

/// What `stages S` was written on.
pub(super) struct StagedLoop<'a> {
    /// The span of `stages S`.
    pub span: Span,
    pub var: LocalId,
    pub step: &'a hir::Expr,
    pub unroll: Option<Span>,
    pub body: &'a hir::Block,
}

impl Cx<'_> {
    /// The stage count of `stages S` (the checked `count`), or `None`
    /// after reporting why it is not one.
    pub(super) fn stage_count(&mut self, count: &hir::Expr, span: Span) -> Option<u32> {
        match super::consts::const_int(count) {
            Some(n) if STAGES.contains(&n) => Some(n as u32),
            found => {
                self.report(StmtError::StagesCount { found, span });
                None
            }
        }
    }

    /// Check a staged loop's body against the ring's rules; false after
    /// reporting the first broken one.
    pub(super) fn check_staged(&mut self, l: &StagedLoop) -> bool {
        if let Some(unroll) = l.unroll {
            self.report(StmtError::StagesUnroll {
                span: l.span,
                unroll,
            });
            return false;
        }
        if super::consts::const_int(l.step).is_none() {
            self.report(StmtError::StagesStep {
                span: l.span,
                step: l.step.span,
            });
            return false;
        }
        if let Some((exit, word)) = leaving_exit(&l.body.stmts) {
            self.report(StmtError::StagesLeft {
                span: l.span,
                exit,
                word,
            });
            return false;
        }
        let mut assigned = HashSet::new();
        written_locals(&l.body.stmts, &mut assigned);
        let copies: Vec<(&hir::Stmt, LocalId, &[hir::Expr])> = l
            .body
            .stmts
            .iter()
            .filter_map(|s| match &s.kind {
                hir::StmtKind::TileCopy { dst, starts, .. } => Some((s, *dst, starts.as_slice())),
                _ => None,
            })
            .collect();
        if copies.is_empty() {
            self.report(StmtError::StagesNoCopy { span: l.span });
            return false;
        }
        if let Some(nested) = nested_copy(&l.body.stmts, true) {
            self.report(StmtError::StagedCopyNested {
                span: nested,
                stages: l.span,
            });
            return false;
        }
        for (s, dst, starts) in &copies {
            let name = self.locals[dst.0 as usize].name.clone();
            if let Some(other) = tile_writer(&l.body.stmts, *dst, s.span) {
                self.report(StmtError::StagedTileWritten {
                    name,
                    span: other,
                    copy: s.span,
                });
                return false;
            }
            for start in *starts {
                if let Some((name, cause)) = self.early_cause(start, l.var, &assigned) {
                    self.report(StmtError::StagedCopyStart {
                        name,
                        span: s.span,
                        cause,
                        stages: l.span,
                    });
                    return false;
                }
            }
        }
        true
    }

    /// The first part of `e` a staged copy cannot compute trips ahead: a
    /// memory read, a collective or shuffle, or a local the loop computes
    /// (the loop variable and `fn` arguments bound inside `e` are fine).
    fn early_cause(
        &self,
        e: &hir::Expr,
        var: LocalId,
        assigned: &HashSet<LocalId>,
    ) -> Option<(Option<String>, Span)> {
        let mut bound = HashSet::new();
        e.walk(&mut |x| {
            if let hir::ExprKind::Let { local, .. } = x.kind {
                bound.insert(local);
            }
        });
        let mut cause = None;
        e.walk(&mut |x| {
            if cause.is_some() {
                return;
            }
            use hir::ExprKind as K;
            match &x.kind {
                // Locals made while checking the body have larger ids
                // than the loop variable.
                K::Local(id)
                    if *id != var
                        && !bound.contains(id)
                        && (id.0 > var.0 || assigned.contains(id)) =>
                {
                    cause = Some((Some(self.locals[id.0 as usize].name.clone()), x.span));
                }
                K::Load { .. } | K::RunLoad { .. } | K::Collective { .. } | K::Shuffle { .. } => {
                    cause = Some((None, x.span));
                }
                _ => {}
            }
        });
        cause
    }
}

/// A `break` of this loop (not of an inner one) or a `return`, anywhere in
/// the body.
fn leaving_exit(stmts: &[hir::Stmt]) -> Option<(Span, &'static str)> {
    stmts.iter().find_map(|s| match &s.kind {
        hir::StmtKind::Break => Some((s.span, "break")),
        hir::StmtKind::Return => Some((s.span, "return")),
        hir::StmtKind::If { .. } => s.blocks().into_iter().find_map(|b| leaving_exit(&b.stmts)),
        // An inner loop's `break` leaves that loop only.
        _ => s
            .blocks()
            .into_iter()
            .find_map(|b| returns(&b.stmts))
            .map(|r| (r, "return")),
    })
}

fn returns(stmts: &[hir::Stmt]) -> Option<Span> {
    stmts.iter().find_map(|s| match s.kind {
        hir::StmtKind::Return => Some(s.span),
        _ => s.blocks().into_iter().find_map(|b| returns(&b.stmts)),
    })
}

/// The scalar locals the statements assign (or take an atomic's old value
/// into), nested blocks included.
fn written_locals(stmts: &[hir::Stmt], out: &mut HashSet<LocalId>) {
    for s in stmts {
        match &s.kind {
            hir::StmtKind::Assign { local, .. }
            | hir::StmtKind::Atomic {
                result: Some(local),
                ..
            } => {
                out.insert(*local);
            }
            _ => {}
        }
        for b in s.blocks() {
            written_locals(&b.stmts, out);
        }
    }
}

/// A tile copy from a tensor below the body's own statements (`top`: the
/// statements are the body's).
fn nested_copy(stmts: &[hir::Stmt], top: bool) -> Option<Span> {
    stmts.iter().find_map(|s| match &s.kind {
        hir::StmtKind::TileCopy { .. } | hir::StmtKind::TileFill { .. } if !top => Some(s.span),
        _ => s
            .blocks()
            .into_iter()
            .find_map(|b| nested_copy(&b.stmts, false)),
    })
}

/// A statement other than the copy at `copy` that writes into `tile`.
fn tile_writer(stmts: &[hir::Stmt], tile: LocalId, copy: Span) -> Option<Span> {
    stmts.iter().find_map(|s| {
        let hit = match &s.kind {
            hir::StmtKind::TileCopy { dst, .. } | hir::StmtKind::TileFill { dst, .. } => {
                *dst == tile && s.span != copy
            }
            hir::StmtKind::AccToTile { dst, .. } => *dst == tile,
            hir::StmtKind::Store { dst, .. }
            | hir::StmtKind::RunStore { dst, .. }
            | hir::StmtKind::Atomic { dst, .. } => *dst == hir::Memory::Tile(tile),
            _ => false,
        };
        if hit {
            return Some(s.span);
        }
        s.blocks()
            .into_iter()
            .find_map(|b| tile_writer(&b.stmts, tile, copy))
    })
}
