//! Uniformity: how much each value and each point of control can differ
//! between threads, on three levels — uniform (the same in the whole CTA),
//! warp-uniform (the same within a warp) and varying. Shuffles and lane
//! collectives need warp-uniform control; CTA collectives and tile
//! statements need uniform control.
//!
//! Control is as varying as the conditions and loop bounds that reach it,
//! and a variable assigned under control is at least that varying. Because
//! a loop can carry a variable made varying late in its body back to a
//! condition early in it, the pass first raises every local's level to a
//! fixpoint, then walks the kernel once more to report.

use crate::ast::{CtxField, Span};
use crate::diag::Diagnostic;
use crate::hir::{Block, CollOp, Expr, ExprKind, Group, Kernel, LocalId, ShflMode, Stmt, StmtKind};

/// How much a value or a point of control differs between threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Uniform,
    WarpUniform,
    Varying,
}

impl Level {
    fn between(self) -> &'static str {
        match self {
            Level::Varying => "lanes",
            _ => "warps",
        }
    }
}

/// Why control at some point is not uniform: a condition or a loop.
#[derive(Clone, Copy, Debug)]
struct Ctrl {
    level: Level,
    span: Span,
    is_loop: bool,
    /// The local whose level made the condition vary, when one did.
    via: Option<LocalId>,
}

/// Where a local became as varying as it is.
#[derive(Clone, Copy, Debug)]
struct Cause {
    span: Span,
    under_control: bool,
}

/// Check a kernel variant; returns its uniformity errors.
pub fn check(kernel: &Kernel) -> Vec<Diagnostic> {
    let mut u = Uni {
        kernel,
        level: vec![Level::Uniform; kernel.locals.len()],
        cause: vec![None; kernel.locals.len()],
        ctrl: Vec::new(),
        report: false,
        changed: false,
        diags: Vec::new(),
    };
    loop {
        u.changed = false;
        u.block(&kernel.body);
        if !u.changed {
            break;
        }
    }
    u.report = true;
    u.block(&kernel.body);
    u.diags
}

/// The level of every local after the fixpoint, for tools that show it.
pub fn local_levels(kernel: &Kernel) -> Vec<Level> {
    let mut u = Uni {
        kernel,
        level: vec![Level::Uniform; kernel.locals.len()],
        cause: vec![None; kernel.locals.len()],
        ctrl: Vec::new(),
        report: false,
        changed: true,
        diags: Vec::new(),
    };
    while u.changed {
        u.changed = false;
        u.block(&kernel.body);
    }
    u.level
}

/// Uniformity as tools show it (the language server's hover): each local's
/// level after the fixpoint, and where it became that varying — the span
/// of the statement, and whether it was the control around it that did.
pub struct Facts {
    pub levels: Vec<Level>,
    pub causes: Vec<Option<(Span, bool)>>,
}

pub fn facts(kernel: &Kernel) -> Facts {
    let mut u = Uni {
        kernel,
        level: vec![Level::Uniform; kernel.locals.len()],
        cause: vec![None; kernel.locals.len()],
        ctrl: Vec::new(),
        report: false,
        changed: true,
        diags: Vec::new(),
    };
    while u.changed {
        u.changed = false;
        u.block(&kernel.body);
    }
    let causes = u
        .cause
        .iter()
        .map(|c| c.map(|c| (c.span, c.under_control)))
        .collect();
    Facts {
        levels: u.level,
        causes,
    }
}

/// The level of one expression of `kernel`, given the locals' levels.
pub fn expr_level(kernel: &Kernel, levels: &[Level], e: &Expr) -> Level {
    let mut u = Uni {
        kernel,
        level: levels.to_vec(),
        cause: vec![None; levels.len()],
        ctrl: Vec::new(),
        report: false,
        changed: false,
        diags: Vec::new(),
    };
    u.expr(e)
}

struct Uni<'k> {
    kernel: &'k Kernel,
    level: Vec<Level>,
    cause: Vec<Option<Cause>>,
    ctrl: Vec<Ctrl>,
    report: bool,
    changed: bool,
    diags: Vec<Diagnostic>,
}

impl Uni<'_> {
    fn control(&self) -> Level {
        self.ctrl
            .iter()
            .map(|c| c.level)
            .max()
            .unwrap_or(Level::Uniform)
    }

    /// Raise a local to at least `value` joined with the control level.
    fn raise(&mut self, local: LocalId, value: Level, span: Span) {
        let ctrl = self.control();
        let new = value.max(ctrl);
        let i = local.0 as usize;
        if new > self.level[i] {
            self.level[i] = new;
            self.cause[i] = Some(Cause {
                span,
                under_control: ctrl >= value,
            });
            self.changed = true;
        }
    }

    fn block(&mut self, b: &Block) {
        for s in &b.stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let { local, init } | StmtKind::Assign { local, value: init } => {
                let l = self.expr(init);
                self.raise(*local, l, s.span);
            }
            StmtKind::Store { index, value, .. } => {
                self.all(index);
                self.expr(value);
            }
            StmtKind::RunStore {
                index, value, only, ..
            } => {
                self.all(index);
                self.expr(value);
                if let Some(i) = only {
                    self.expr(i);
                }
            }
            StmtKind::TileCopy { starts, .. } => self.tile_stmt(starts, s.span, "a tile copy"),
            StmtKind::TileStore { starts, .. } => self.tile_stmt(starts, s.span, "a tile store"),
            StmtKind::If { cond, then, els } => {
                let level = self.expr(cond);
                let via = self.varying_local(cond, level);
                self.ctrl.push(Ctrl {
                    level,
                    span: cond.span,
                    is_loop: false,
                    via,
                });
                self.block(then);
                self.block(els);
                self.ctrl.pop();
            }
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let bounds = [start, end, step];
                let level = bounds
                    .iter()
                    .map(|e| self.expr(e))
                    .max()
                    .unwrap_or(Level::Uniform);
                let via = bounds.iter().find_map(|e| self.varying_local(e, level));
                let span = start.span.to(end.span).to(step.span);
                self.ctrl.push(Ctrl {
                    level,
                    span,
                    is_loop: true,
                    via,
                });
                self.raise(*var, level, span);
                self.block(body);
                self.ctrl.pop();
            }
        }
    }

    fn tile_stmt(&mut self, starts: &[Expr], span: Span, what: &str) {
        let start_level = starts
            .iter()
            .map(|e| self.expr(e))
            .max()
            .unwrap_or(Level::Uniform);
        if !self.report {
            return;
        }
        if let Some(c) = self.first_ctrl_above(Level::Uniform) {
            let d = Diagnostic::error("P0702", format!("{what} needs uniform control")).primary(
                span,
                format!("{what} is done by every thread of the CTA together"),
            );
            let d = self.with_cause(d, c).note(
                "move it out of the `if` or loop, to where every thread of the CTA reaches it",
            );
            self.diags.push(d);
        } else if start_level > Level::Uniform {
            let bad = starts
                .iter()
                .find(|e| self.expr_level_quiet(e) > Level::Uniform);
            self.diags.push(
                Diagnostic::error("P0703", format!("the start of {what} must be the same in the whole CTA"))
                    .primary(bad.map_or(span, |e| e.span), format!("this differs between {}", start_level.between()))
                    .note("a tile is one box for the whole CTA: compute its start from ctx.block, dims and constants"),
            );
        }
    }

    fn first_ctrl_above(&self, allowed: Level) -> Option<Ctrl> {
        self.ctrl.iter().find(|c| c.level > allowed).copied()
    }

    fn with_cause(&self, d: Diagnostic, c: Ctrl) -> Diagnostic {
        let what = if c.is_loop {
            format!(
                "the bounds of this loop differ between {}",
                c.level.between()
            )
        } else {
            format!("this condition differs between {}", c.level.between())
        };
        let mut d = d.secondary(c.span, what);
        if let Some(local) = c.via {
            let name = &self.kernel.locals[local.0 as usize].name;
            if let Some(cause) = self.cause[local.0 as usize] {
                let why = if cause.under_control {
                    format!("`{name}` differs between {} because it is assigned here, under control that does", c.level.between())
                } else {
                    format!(
                        "`{name}` gets a value here that differs between {}",
                        c.level.between()
                    )
                };
                d = d.secondary(cause.span, why);
            }
        }
        d
    }

    /// A local in `e` at `level`, which explains why `e` is that varying.
    fn varying_local(&self, e: &Expr, level: Level) -> Option<LocalId> {
        if level == Level::Uniform {
            return None;
        }
        let mut found = None;
        visit_locals(e, &mut |id| {
            if found.is_none()
                && self.level[id.0 as usize] == level
                && self.cause[id.0 as usize].is_some()
            {
                found = Some(id);
            }
        });
        found
    }

    fn expr_level_quiet(&mut self, e: &Expr) -> Level {
        let report = std::mem::replace(&mut self.report, false);
        let l = self.expr(e);
        self.report = report;
        l
    }

    /// The level of a value; reports collectives under control that is too varying.
    fn expr(&mut self, e: &Expr) -> Level {
        match &e.kind {
            ExprKind::Const(_) | ExprKind::Param(_) | ExprKind::Dim(_) => Level::Uniform,
            ExprKind::Local(id) => self
                .level
                .get(id.0 as usize)
                .copied()
                .unwrap_or(Level::Varying),
            ExprKind::Ctx(f) => ctx_level(*f),
            ExprKind::Unary(_, x) | ExprKind::Convert(x) | ExprKind::RunSum(x) => self.expr(x),
            ExprKind::Elem { run, .. } | ExprKind::Word { run, .. } => self.expr(run),
            ExprKind::Binary(_, a, b) => self.expr(a).max(self.expr(b)),
            ExprKind::Builtin(_, xs) => self.all(xs),
            ExprKind::Load { index, .. } | ExprKind::RunLoad { index, .. } => self.all(index),
            ExprKind::Collective { op, group, arg, .. } => {
                self.expr(arg);
                self.collective(*op, *group, e.span)
            }
            ExprKind::Shuffle {
                mode,
                width,
                lane,
                value,
            } => {
                let lane_level = self.expr(lane);
                self.expr(value);
                self.need(Level::WarpUniform, e.span, "a shuffle");
                let broadcast =
                    *mode == ShflMode::From && *width == 32 && lane_level <= Level::WarpUniform;
                if broadcast {
                    Level::WarpUniform
                } else {
                    Level::Varying
                }
            }
        }
    }

    fn all(&mut self, xs: &[Expr]) -> Level {
        xs.iter()
            .map(|x| self.expr(x))
            .max()
            .unwrap_or(Level::Uniform)
    }

    fn collective(&mut self, op: CollOp, group: Group, span: Span) -> Level {
        let name = coll_name(op);
        match group {
            Group::Thread => {
                self.need(Level::Uniform, span, &format!("`{name}<over ctx.thread>`"));
                Level::Uniform
            }
            Group::Lane { width } => {
                self.need(
                    Level::WarpUniform,
                    span,
                    &format!("`{name}<over ctx.lane>`"),
                );
                if width == 32 {
                    Level::WarpUniform
                } else {
                    Level::Varying
                }
            }
        }
    }

    /// Report when control here is more varying than `allowed`.
    fn need(&mut self, allowed: Level, span: Span, what: &str) {
        if !self.report {
            return;
        }
        let Some(c) = self.first_ctrl_above(allowed) else {
            return;
        };
        let d = if allowed == Level::Uniform {
            Diagnostic::error("P0701", format!("{what} needs uniform control"))
                .primary(span, "every thread of the CTA must reach this")
                .note("a CTA collective has three barriers that every thread of the CTA waits at; move it out of the `if` or loop, to where every thread reaches it, and use its result there")
        } else {
            Diagnostic::error("P0700", format!("{what} needs every lane of its warp"))
                .primary(span, "every lane of the warp must reach this")
                .note("a shuffle or lane collective needs control that is the same across a warp; move it out of the `if` or loop, to where every lane reaches it, and use its result under the condition")
        };
        let d = self.with_cause(d, c);
        self.diags.push(d);
    }
}

fn ctx_level(f: CtxField) -> Level {
    match f {
        CtxField::Thread | CtxField::Lane => Level::Varying,
        CtxField::Warp => Level::WarpUniform,
        _ => Level::Uniform,
    }
}

fn coll_name(op: CollOp) -> &'static str {
    match op {
        CollOp::Sum => "sum",
        CollOp::Max => "max",
        CollOp::Min => "min",
        CollOp::Any => "any",
        CollOp::All => "all",
        CollOp::Argmax => "argmax",
        CollOp::Reduce => "reduce",
    }
}

fn visit_locals(e: &Expr, f: &mut dyn FnMut(LocalId)) {
    match &e.kind {
        ExprKind::Local(id) => f(*id),
        ExprKind::Unary(_, x) | ExprKind::Convert(x) | ExprKind::RunSum(x) => visit_locals(x, f),
        ExprKind::Elem { run, .. } | ExprKind::Word { run, .. } => visit_locals(run, f),
        ExprKind::Binary(_, a, b) => {
            visit_locals(a, f);
            visit_locals(b, f);
        }
        ExprKind::Builtin(_, xs)
        | ExprKind::Load { index: xs, .. }
        | ExprKind::RunLoad { index: xs, .. } => {
            xs.iter().for_each(|x| visit_locals(x, f));
        }
        ExprKind::Collective { arg, .. } => visit_locals(arg, f),
        ExprKind::Shuffle { lane, value, .. } => {
            visit_locals(lane, f);
            visit_locals(value, f);
        }
        ExprKind::Const(_) | ExprKind::Param(_) | ExprKind::Dim(_) | ExprKind::Ctx(_) => {}
    }
}
