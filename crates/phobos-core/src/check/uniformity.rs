//! Uniformity: how much each value and each point of control can differ
//! between threads, on three levels — uniform (the same in the whole CTA),
//! warp-uniform (the same within a warp) and varying. Shuffles and lane
//! collectives need warp-uniform control; CTA collectives and tile
//! statements need uniform control.
//!
//! A load is as varying as its subscripts, except that a load from a
//! tensor the kernel writes, or from a tile it writes element by element,
//! is varying whatever its subscripts: other threads may write the element
//! between two threads' reads (`if F[0] == 1` where the kernel writes `F`
//! is not a uniform condition).
//!
//! Dividing by a multiple of 32 (or shifting right by 5 or more) a value
//! that is `ctx.thread` plus a uniform multiple of the divisor gives the
//! same result in every lane of a warp, because a warp's threads are 32
//! consecutive `ctx.thread` values starting at a multiple of 32:
//! `ctx.thread / 32`, `ctx.thread >> 5` and
//! `(ctx.block.x * ctx.threads + ctx.thread) / 32` are warp-uniform
//! (`ctx.threads` is a multiple of 32). Division truncates toward zero, so
//! it needs the uniform part to be known non-negative; a shift floors.
//!
//! Control is as varying as the conditions and loop bounds that reach it,
//! and a variable assigned under control is at least that varying. An early
//! exit taken under varying control leaves fewer threads behind it: after a
//! `continue`, the rest of its loop's body is that varying; after a `break`,
//! the whole body of its loop (later trips run without the threads that
//! left); after a `return`, the rest of the kernel and the whole body of
//! every loop around it. Because
//! a loop can carry a variable made varying late in its body back to a
//! condition early in it, the pass first raises every local's level to a
//! fixpoint, then walks the kernel once more to report.

use super::error::{Control, Origin, UniformityError, VaryingCause};
use crate::ast::{BinOp, CtxField, Span};
use crate::diag::Diagnostic;
use crate::hir::ConstVal;
// The checker's verdicts are a contract of the HIR (a side table of
// `hir::Kernel`): they live there, and are named here too.
use crate::hir::{
    Block, CollOp, Expr, ExprKind, Group, Kernel, LocalId, Memory, ParamKind, ShflMode, Stmt,
    StmtKind,
};
pub use crate::hir::{Facts, Level};

impl Level {
    fn between(self) -> &'static str {
        match self {
            Level::Varying => "lanes",
            _ => "warps",
        }
    }
}

/// Why control at some point is not uniform: a condition, a loop or an
/// early exit.
#[derive(Clone, Copy, Debug)]
struct Ctrl {
    level: Level,
    span: Span,
    /// What made control vary: a condition, a loop, the left side of
    /// `&&` or `||` (which guards its right side), or an early exit taken
    /// under varying control, as the diagnostics name it.
    kind: Control,
    /// For an exit, the depth of the loop whose body it affects (`None`
    /// for `return`, which affects the rest of the kernel, and for every
    /// other kind).
    exit_depth: Option<u32>,
    /// The local whose level made the condition vary, when one did.
    via: Option<LocalId>,
    /// A load from memory the kernel writes that made it vary, when one did.
    load: Option<(Span, Memory)>,
    /// It varies only through `ctx.thread` taken whole (`ctx.thread < 64`,
    /// `ctx.thread / 16`), so `ctx.warp` may be what was meant.
    by_thread: bool,
}

/// Where a local became as varying as it is.
#[derive(Clone, Copy, Debug)]
struct Cause {
    span: Span,
    under_control: bool,
}

/// Check a kernel variant: its uniformity errors, and the facts the
/// fixpoint found, which the checker keeps in the HIR
/// (`hir::Kernel::uniformity`) so that lowering and the tools read them
/// instead of running the fixpoint again.
pub fn check(kernel: &Kernel) -> (Vec<Diagnostic>, Facts) {
    let mut u = Uni::new(kernel);
    u.changed = true;
    while u.changed {
        u.changed = false;
        u.pass();
    }
    let facts = Facts {
        levels: u.level.clone(),
        causes: u
            .cause
            .iter()
            .map(|c| c.map(|c| (c.span, c.under_control)))
            .collect(),
    };
    u.report = true;
    u.pass();
    (u.diags, facts)
}

/// The checker's verdicts after the fixpoint, for the backend: lowering
/// asks it whether a condition, a loop bound or a local is uniform, so that
/// it places barriers wherever the checker proved control uniform (its own
/// structural test knows nothing of loads or collectives, and rejected
/// valid kernels with P0802 under `if A[max<over ctx.thread>(x)]` or under
/// an `if` on a `var`). It reads the locals' levels from the HIR's side
/// table; an expression's level follows from them without a fixpoint.
pub struct Judge<'k> {
    u: Uni<'k>,
}

impl<'k> Judge<'k> {
    pub fn new(kernel: &'k Kernel) -> Judge<'k> {
        debug_assert_eq!(
            kernel.uniformity.levels.len(),
            kernel.locals.len(),
            "a kernel reaches lowering with the checker's uniformity facts"
        );
        let mut u = Uni::new(kernel);
        // A local without a level (none, for kernels from the checker)
        // counts as varying, the sound side.
        u.level = kernel.uniformity.levels.clone();
        u.level.resize(kernel.locals.len(), Level::Varying);
        Judge { u }
    }

    /// Whether `e` has the same value in every thread of the CTA.
    pub fn uniform(&mut self, e: &Expr) -> bool {
        self.u.expr_level_quiet(e) == Level::Uniform
    }

    /// Whether every value `local` ever holds is the same in every thread
    /// (its level is the join over all its assignments and the control
    /// around them).
    pub fn local_uniform(&self, local: LocalId) -> bool {
        self.u.level.get(local.0 as usize) == Some(&Level::Uniform)
    }
}

/// The level of one expression of `kernel`, given the locals' levels.
pub fn expr_level(kernel: &Kernel, levels: &[Level], e: &Expr) -> Level {
    let mut u = Uni::new(kernel);
    u.cause = vec![None; levels.len()];
    u.level = levels.to_vec();
    u.expr(e)
}

struct Uni<'k> {
    kernel: &'k Kernel,
    level: Vec<Level>,
    cause: Vec<Option<Cause>>,
    ctrl: Vec<Ctrl>,
    /// Tensors and tiles the kernel writes (tiles: by element or run stores).
    written: Vec<Memory>,
    report: bool,
    changed: bool,
    diags: Vec<Diagnostic>,
    /// The loops around the current statement, by the start of their span.
    loops: Vec<u32>,
    /// Loops left by a `break` or `return` under varying control: every
    /// trip after the first runs without the threads that left, so the
    /// whole body is under that exit. Found during the fixpoint.
    left_loops: std::collections::HashMap<u32, Ctrl>,
    /// Inside an epilogue's value: a tile load there reads the element's
    /// place (or a broadcast row or column of it), the same whichever
    /// lane computes the element, even of a tile written element by
    /// element (the barrier analysis fences the writes from the read).
    in_epilogue: bool,
}

/// The tensors the kernel writes and the tiles it writes element by element
/// (a tile copy writes a whole tile together, fenced by barriers, so a read
/// after it sees the same value in every thread).
impl<'k> Uni<'k> {
    /// A pass over `kernel` starting from "everything uniform", reporting
    /// nothing.
    fn new(kernel: &'k Kernel) -> Uni<'k> {
        Uni {
            kernel,
            level: vec![Level::Uniform; kernel.locals.len()],
            cause: vec![None; kernel.locals.len()],
            ctrl: Vec::new(),
            written: written_memory(kernel),
            report: false,
            changed: false,
            diags: Vec::new(),
            in_epilogue: false,
            loops: Vec::new(),
            left_loops: std::collections::HashMap::new(),
        }
    }
}

fn written_memory(kernel: &Kernel) -> Vec<Memory> {
    fn walk(b: &Block, out: &mut Vec<Memory>) {
        for s in &b.stmts {
            match &s.kind {
                // A register array is the thread's own: no other thread
                // writes it (its level is tracked like a variable's).
                StmtKind::Store {
                    dst: Memory::Array(_),
                    ..
                } => {}
                StmtKind::Store { dst, .. }
                | StmtKind::RunStore { dst, .. }
                | StmtKind::Atomic { dst, .. } => out.push(*dst),
                _ => s.blocks().into_iter().for_each(|b| walk(b, out)),
            }
        }
    }
    let mut out: Vec<Memory> = kernel
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.kind, ParamKind::Tensor { written: true, .. }))
        .map(|(i, _)| Memory::Tensor(crate::hir::ParamId(i as u32)))
        .collect();
    walk(&kernel.body, &mut out);
    out
}

impl Uni<'_> {
    /// One walk over the kernel, from the top: no control around it yet
    /// (an early exit's control lasts until the end of one walk).
    fn pass(&mut self) {
        self.ctrl.clear();
        self.loops.clear();
        let kernel = self.kernel;
        self.block(&kernel.body);
    }

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
            StmtKind::Store {
                dst: Memory::Array(array),
                index,
                value,
            } => {
                // An array is one variable: what is written to any element
                // (and where, and under which control) makes it as varying.
                let l = self.all(index).max(self.expr(value));
                self.raise(*array, l, s.span);
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
            StmtKind::TileFill { starts, .. } => self.tile_stmt(starts, s.span, "a tile fill"),
            StmtKind::TileStore { starts, .. } => self.tile_stmt(starts, s.span, "a tile store"),
            StmtKind::If { cond, then, els } => {
                let level = self.expr(cond);
                let at = self.ctrl.len();
                let c = self.ctrl_by(cond, level, Control::Cond);
                self.ctrl.push(c);
                self.block(then);
                self.block(els);
                // Exits inside the branches stay: they outlive the `if`.
                self.ctrl.remove(at);
            }
            StmtKind::While { cond, body } => {
                // The condition runs before every trip: the first time in
                // every thread that reaches the loop, each later time only
                // in the threads the earlier trips kept, under the loop's
                // own control and the exits that leave it. A collective in
                // it needs every thread (or lane) on every trip, so it is
                // judged under that control (a varying condition with a
                // CTA collective is P0701, not a deadlock).
                let level = self.expr_level_quiet(cond);
                let c = self.ctrl_by(cond, level, Control::Loop);
                let at = self.ctrl.len();
                self.ctrl.push(c);
                if let Some(left) = self.left_loops.get(&s.span.start).copied() {
                    self.ctrl.push(left);
                }
                self.expr(cond);
                self.ctrl.truncate(at);
                self.loop_body(s.span, c, body, None);
            }
            StmtKind::Atomic {
                index,
                args,
                result,
                ..
            } => {
                // Any control may hold an atomic: it is one thread's own
                // read-modify-write. The old value it gives differs between
                // threads whatever its subscripts.
                self.all(index);
                self.all(args);
                if let Some(local) = result {
                    self.raise(*local, Level::Varying, s.span);
                }
            }
            StmtKind::Fence => {}
            StmtKind::AccZero { .. } => self.tile_stmt(&[], s.span, "an accumulator tile"),
            StmtKind::Dot { .. } => self.tile_stmt(&[], s.span, "a `dot`"),
            StmtKind::AccMap { value, .. } => {
                self.tile_stmt(&[], s.span, "an epilogue");
                // Each element is computed by the lane that holds it: the
                // value may differ only through the element, its place
                // and the tiles it reads.
                self.in_epilogue = true;
                let level = self.expr(value);
                self.in_epilogue = false;
                if self.report && level > Level::Uniform {
                    self.diags.push(
                        UniformityError::EpilogueVarying {
                            between: level.between(),
                            span: value.span,
                        }
                        .into(),
                    );
                }
            }
            StmtKind::AccStore { starts, .. } => {
                self.tile_stmt(starts, s.span, "an accumulator store")
            }
            StmtKind::AccToTile { .. } => self.tile_stmt(&[], s.span, "an accumulator store"),
            StmtKind::Break => self.exit("break", s.span),
            StmtKind::Continue => self.exit("continue", s.span),
            StmtKind::Return => self.exit("return", s.span),
            StmtKind::For(l) => {
                let bounds = [&l.start, &l.end, &l.step];
                let level = bounds
                    .iter()
                    .map(|e| self.expr(e))
                    .max()
                    .unwrap_or(Level::Uniform);
                let via = bounds.iter().find_map(|e| self.varying_local(e, level));
                let load = bounds.iter().find_map(|e| self.written_load(e));
                let span = l.start.span.to(l.end.span).to(l.step.span);
                let by_thread = level == Level::Varying
                    && bounds
                        .iter()
                        .all(|e| self.expr_level_quiet(e) != Level::Varying || self.by_thread(e));
                let c = Ctrl {
                    level,
                    span,
                    kind: Control::Loop,
                    exit_depth: None,
                    via,
                    load,
                    by_thread,
                };
                self.loop_body(s.span, c, &l.body, Some(l.var));
            }
        }
    }

    /// A loop's body under the loop's own control `c` and, when the loop
    /// is left early under varying control, under that exit too.
    fn loop_body(&mut self, span: Span, c: Ctrl, body: &Block, var: Option<LocalId>) {
        let at = self.ctrl.len();
        self.ctrl.push(c);
        if let Some(v) = var {
            self.raise(v, c.level, c.span);
        }
        let key = span.start;
        if let Some(left) = self.left_loops.get(&key).copied() {
            self.ctrl.push(left);
        }
        self.loops.push(key);
        self.block(body);
        let depth = self.loops.len() as u32;
        self.loops.pop();
        // Drop this loop's control and the exits that end with this loop;
        // a `return`'s stays for the rest of the kernel.
        let mut i = 0;
        self.ctrl.retain(|x| {
            let keep = i < at || !(i == at || x.exit_depth.is_some_and(|d| d >= depth));
            i += 1;
            keep
        });
    }

    /// `break`, `continue` or `return` at the current control: when that
    /// control is not uniform, what follows runs without the threads that
    /// left (see the module docs).
    fn exit(&mut self, word: &'static str, span: Span) {
        let level = self.control();
        if level == Level::Uniform {
            return;
        }
        let because = self
            .first_ctrl_above(Level::Uniform)
            .map(|c| (c.span, c.kind == Control::Loop));
        let depth = self.loops.len() as u32;
        let c = Ctrl {
            level,
            span,
            kind: Control::Exit { word, because },
            exit_depth: (word != "return").then_some(depth),
            via: None,
            load: None,
            by_thread: false,
        };
        self.ctrl.push(c);
        // Later trips of the loops it leaves run without these threads.
        let all: Vec<(u32, u32)> = (1..).zip(self.loops.iter().copied()).collect();
        let left: Vec<(u32, u32)> = match word {
            "break" => all.last().copied().into_iter().collect(),
            "return" => all,
            _ => vec![],
        };
        for (d, key) in left {
            let known = self
                .left_loops
                .get(&key)
                .map_or(Level::Uniform, |x| x.level);
            if level > known {
                let c = Ctrl {
                    exit_depth: Some(d),
                    ..c
                };
                self.left_loops.insert(key, c);
                self.changed = true;
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
            let cause = self.cause_of(c);
            self.diags.push(
                UniformityError::TileVarying {
                    what: what.to_string(),
                    span,
                    cause,
                }
                .into(),
            );
        } else if start_level > Level::Uniform {
            let bad = starts
                .iter()
                .find(|e| self.expr_level_quiet(e) > Level::Uniform);
            self.diags.push(
                UniformityError::TileStartVarying {
                    what: what.to_string(),
                    between: start_level.between(),
                    span: bad.map_or(span, |e| e.span),
                }
                .into(),
            );
        }
    }

    fn first_ctrl_above(&self, allowed: Level) -> Option<Ctrl> {
        self.ctrl.iter().find(|c| c.level > allowed).copied()
    }

    /// What the diagnostics say about control `c`: its kind, and the local
    /// or load that makes it vary.
    fn cause_of(&self, c: Ctrl) -> VaryingCause {
        let control = c.kind;
        let origin = if let Some(local) = c.via {
            let name = &self.kernel.locals[local.0 as usize].name;
            self.cause[local.0 as usize].map(|cause| Origin::Assigned {
                name: name.clone(),
                span: cause.span,
                under_control: cause.under_control,
            })
        } else if let Some((span, mem)) = c.load {
            let name = match mem {
                Memory::Tensor(p) => &self.kernel.params[p.0 as usize].name,
                Memory::Tile(l) | Memory::Array(l) => &self.kernel.locals[l.0 as usize].name,
            };
            Some(Origin::WrittenLoad {
                name: name.clone(),
                span,
            })
        } else {
            None
        };
        VaryingCause {
            between: c.level.between(),
            span: c.span,
            control,
            origin,
        }
    }

    /// The first load in `e` from memory the kernel writes.
    /// The control of `kind` that the condition `e`, of `level`, makes,
    /// with the local or load it varies through.
    fn ctrl_by(&self, e: &Expr, level: Level, kind: Control) -> Ctrl {
        Ctrl {
            level,
            span: e.span,
            kind,
            exit_depth: None,
            via: self.varying_local(e, level),
            load: self.written_load(e),
            by_thread: level == Level::Varying && self.by_thread(e),
        }
    }

    fn written_load(&self, e: &Expr) -> Option<(Span, Memory)> {
        let mut found = None;
        visit_loads(e, &mut |span, mem| {
            if found.is_none() && self.written.contains(&mem) {
                found = Some((span, mem));
            }
        });
        found
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
            ExprKind::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                // The right side runs only where the left side lets it: it
                // is under the left side's control, like an `if` body.
                let left = self.expr(a);
                if let Some(span) = cta_collective_in(b) {
                    // CTA collectives run as statements before the one
                    // that holds them, so they cannot honour the guard.
                    if self.report {
                        let name = op.symbol();
                        self.diags.push(
                            UniformityError::CtaCollectiveGuarded {
                                op: name,
                                span,
                                left: a.span,
                            }
                            .into(),
                        );
                    }
                    self.expr_level_quiet(b);
                    return Level::Varying;
                }
                let c = self.ctrl_by(a, left, Control::Guard(op.symbol()));
                self.ctrl.push(c);
                let right = self.expr(b);
                self.ctrl.pop();
                left.max(right)
            }
            ExprKind::Binary(op, a, b) => {
                let level = self.expr(a).max(self.expr(b));
                if level == Level::Varying && self.warp_block_index(*op, a, b) {
                    Level::WarpUniform
                } else {
                    level
                }
            }
            ExprKind::Let { local, value, body } => {
                let v = self.expr(value);
                self.raise(*local, v, value.span);
                self.expr(body)
            }
            ExprKind::Builtin(_, xs) => self.all(xs),
            ExprKind::Load {
                src: Memory::Array(array),
                index,
            } => {
                let l = self.all(index);
                l.max(self.level[array.0 as usize])
            }
            ExprKind::Load { src, index } | ExprKind::RunLoad { src, index, .. } => {
                let l = self.all(index);
                let tile_in_epilogue = self.in_epilogue && matches!(src, Memory::Tile(_));
                if self.written.contains(src) && !tile_in_epilogue {
                    Level::Varying
                } else {
                    l
                }
            }
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

    /// Whether `a / b` or `a >> b` is the same across a warp: `b` a constant
    /// divisor `d` that is a multiple of 32 (a shift by 5 or more), and `a`
    /// is `ctx.thread` plus a uniform multiple of `d` (non-negative for `/`).
    fn warp_block_index(&self, op: BinOp, a: &Expr, b: &Expr) -> bool {
        let Some(c) = const_int(b) else {
            return false;
        };
        let (d, floors) = match op {
            BinOp::Div if c > 0 && c % 32 == 0 => (c, false),
            BinOp::Shr if (5..31).contains(&c) => (1i128 << c, true),
            _ => return false,
        };
        match self.thread_plus(a, 0) {
            Some((g, nonneg)) => (g == 0 || g % d == 0) && (floors || nonneg),
            None => false,
        }
    }

    /// When `e` is `ctx.thread + u` with `u` uniform: a known divisor of `u`
    /// (0 when `u` is 0) and whether `u` is known non-negative.
    fn thread_plus(&self, e: &Expr, depth: u32) -> Option<(i128, bool)> {
        if depth > 32 {
            return None;
        }
        match &e.kind {
            ExprKind::Ctx(CtxField::Thread) => Some((0, true)),
            ExprKind::Local(id) => self.thread_plus(self.let_init(*id)?, depth + 1),
            ExprKind::Binary(BinOp::Add, x, y) => {
                let (t, u) = match self.thread_plus(x, depth + 1) {
                    Some(t) => (t, y),
                    None => (self.thread_plus(y, depth + 1)?, x),
                };
                let (g, n) = self.uniform_divisor(u, depth + 1)?;
                Some((gcd(t.0, g), t.1 && n))
            }
            _ => None,
        }
    }

    /// For a uniform `e`: a known divisor (0 for the value 0) and whether
    /// it is known non-negative. None when `e` is not known uniform.
    fn uniform_divisor(&self, e: &Expr, depth: u32) -> Option<(i128, bool)> {
        if depth > 32 {
            return None;
        }
        match &e.kind {
            ExprKind::Const(ConstVal::Int(v)) => Some((v.abs(), *v >= 0)),
            ExprKind::Ctx(f) if ctx_level(*f) == Level::Uniform => Some((1, true)),
            ExprKind::Dim(_) => Some((1, true)),
            ExprKind::Param(_) => Some((1, false)),
            ExprKind::Local(id) => self.uniform_divisor(self.let_init(*id)?, depth + 1),
            ExprKind::Binary(BinOp::Mul, x, y) => {
                let (a, m) = self.uniform_divisor(x, depth + 1)?;
                let (b, n) = self.uniform_divisor(y, depth + 1)?;
                Some((a.saturating_mul(b), m && n))
            }
            ExprKind::Binary(BinOp::Add, x, y) => {
                let (a, m) = self.uniform_divisor(x, depth + 1)?;
                let (b, n) = self.uniform_divisor(y, depth + 1)?;
                Some((gcd(a, b), m && n))
            }
            _ => None,
        }
    }

    /// The value of an immutable `let` local, found in the kernel body.
    fn let_init(&self, id: LocalId) -> Option<&Expr> {
        if self.kernel.locals.get(id.0 as usize)?.mutable {
            return None;
        }
        find_let(&self.kernel.body, id)
    }

    fn all(&mut self, xs: &[Expr]) -> Level {
        xs.iter()
            .map(|x| self.expr(x))
            .max()
            .unwrap_or(Level::Uniform)
    }

    fn collective(&mut self, op: CollOp, group: Group, span: Span) -> Level {
        let name = op.name();
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
        let (what, cause) = (what.to_string(), self.cause_of(c));
        let e = if allowed == Level::Uniform {
            UniformityError::CtaCollectiveVarying { what, span, cause }
        } else {
            UniformityError::LaneCollectiveVarying {
                what,
                span,
                cause,
                warp_hint: c.level == Level::Varying && c.by_thread,
            }
        };
        self.diags.push(e.into());
    }

    /// Whether `e` varies only through `ctx.thread` taken whole: it uses
    /// `ctx.thread` (directly or through `let`s), but not `ctx.lane`, not
    /// `ctx.thread % n` or `ctx.thread & m` (which pick lanes), and no
    /// load, shuffle, collective or `var`, whose values `ctx.warp` would
    /// not replace.
    fn by_thread(&self, e: &Expr) -> bool {
        let (mut thread, mut other) = (false, false);
        self.thread_use(e, 0, &mut thread, &mut other);
        thread && !other
    }

    fn thread_use(&self, e: &Expr, depth: u32, thread: &mut bool, other: &mut bool) {
        if depth > 32 {
            *other = true;
            return;
        }
        let is_thread = |x: &Expr| matches!(x.kind, ExprKind::Ctx(CtxField::Thread));
        match &e.kind {
            ExprKind::Const(_) | ExprKind::Param(_) | ExprKind::Dim(_) => {}
            ExprKind::Ctx(CtxField::Thread) => *thread = true,
            ExprKind::Ctx(f) => *other |= ctx_level(*f) == Level::Varying,
            ExprKind::Local(id) => match self.let_init(*id) {
                Some(init) => self.thread_use(init, depth + 1, thread, other),
                None => *other |= self.level[id.0 as usize] != Level::Uniform,
            },
            ExprKind::Binary(BinOp::Rem | BinOp::BitAnd, a, b) if is_thread(a) || is_thread(b) => {
                *other = true;
            }
            ExprKind::Binary(_, a, b) => {
                self.thread_use(a, depth + 1, thread, other);
                self.thread_use(b, depth + 1, thread, other);
            }
            ExprKind::Unary(_, x) | ExprKind::Convert(x) => {
                self.thread_use(x, depth + 1, thread, other);
            }
            ExprKind::Builtin(_, xs) => {
                for x in xs {
                    self.thread_use(x, depth + 1, thread, other);
                }
            }
            _ => *other = true,
        }
    }
}

fn const_int(e: &Expr) -> Option<i128> {
    match e.kind {
        ExprKind::Const(ConstVal::Int(v)) => Some(v),
        _ => None,
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// The initializer of the `let` that declares `id`.
fn find_let(b: &Block, id: LocalId) -> Option<&Expr> {
    b.stmts.iter().find_map(|s| match &s.kind {
        StmtKind::Let { local, init } if *local == id => Some(init),
        _ => s.blocks().into_iter().find_map(|b| find_let(b, id)),
    })
}

fn ctx_level(f: CtxField) -> Level {
    match f {
        CtxField::Thread | CtxField::Lane => Level::Varying,
        CtxField::Warp => Level::WarpUniform,
        _ => Level::Uniform,
    }
}

/// The span of the first CTA collective (`op<over ctx.thread>`) in `e`.
fn cta_collective_in(e: &Expr) -> Option<Span> {
    let mut found = None;
    e.walk(&mut |x| {
        if let ExprKind::Collective {
            group: Group::Thread,
            ..
        } = x.kind
        {
            found = found.or(Some(x.span));
        }
    });
    found
}

/// Every load in `e`, with its span and what it reads.
fn visit_loads(e: &Expr, f: &mut dyn FnMut(Span, Memory)) {
    if let ExprKind::Load { src, .. } | ExprKind::RunLoad { src, .. } = &e.kind {
        f(e.span, *src);
    }
    e.operands().into_iter().for_each(|x| visit_loads(x, f));
}

/// Every local `e` reads (register arrays included), outside combine bodies.
fn visit_locals(e: &Expr, f: &mut dyn FnMut(LocalId)) {
    match &e.kind {
        ExprKind::Local(id)
        | ExprKind::Load {
            src: Memory::Array(id),
            ..
        } => f(*id),
        _ => {}
    }
    e.operands().into_iter().for_each(|x| visit_locals(x, f));
}
