//! Code actions: edits for the diagnostics that have a mechanical fix, and
//! one rewrite.
//!
//! - **Add the type** (P0400 on `x += e` where `x` is a `var` declared
//!   from an integer literal): `var acc = 0` becomes `var acc: f32 = 0.0`,
//!   the fix the diagnostic's help line gives.
//! - **Move a collective before the `if`** (P0700, P0701): the collective
//!   is computed into a new `let` just before the `if` whose condition
//!   differs between lanes (or threads), where every lane reaches it, and
//!   its use under the condition reads that `let`. This changes what is
//!   folded (every lane's value, not only those of lanes that pass the
//!   condition), which is what the diagnostic's note asks for. It is
//!   offered only where moving it cannot change anything else: the
//!   collective sits under `if`s only (no loop between it and that `if`),
//!   its value reads no tensor or tile (a load moved out of its guard could
//!   read out of bounds), calls no `fn`, divides by nothing but a non-zero
//!   literal, and reads no name declared or assigned inside the `if`.
//! - **Use `ctx.warp`** / **use `ctx.lane`**: `ctx.thread / 32` and
//!   `ctx.thread >> 5` are `ctx.warp`; `ctx.thread % 32` and
//!   `ctx.thread & 31` are `ctx.lane` (a warp is 32 consecutive threads
//!   from a multiple of 32, and `ctx.thread` is never negative). Offered as
//!   a rewrite where the cursor is on such an expression.
//!
//! Every action is checked before it is offered: its edit is applied to
//! the kernel's unit and checked again, and the action is dropped unless
//! the diagnostic it fixes is gone and no other error appeared.

use crate::analysis::Analysis;
use crate::unit::Placed;
use phobos_core::ast::{self, BinOp, CtxField, Expr, ExprKind, Span, Stmt, StmtKind};
use phobos_core::diag::Code;
use phobos_core::Diagnostic;

#[derive(Clone, Debug, PartialEq)]
pub struct Action {
    pub title: String,
    pub kind: ActionKind,
    /// Replacements in the document, not overlapping, in any order.
    pub edits: Vec<(Span, String)>,
    /// The index in `Analysis::diagnostics` of the diagnostic it fixes.
    pub fixes: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    QuickFix,
    Rewrite,
}

impl Analysis {
    /// The actions for the document range `range`: fixes for the
    /// diagnostics that touch it, and rewrites of the expressions in it.
    pub fn code_actions(&self, range: Span) -> Vec<Action> {
        let mut out = Vec::new();
        for (i, d) in self.diagnostics.iter().enumerate() {
            let Some(primary) = d.labels.iter().find(|l| l.primary) else {
                continue;
            };
            if primary.span.end < range.start || primary.span.start > range.end {
                continue;
            }
            let candidate = match d.code {
                Code::P0400 => self.add_type(primary.span, d),
                Code::P0700 | Code::P0701 => self.hoist_collective(primary.span, d),
                _ => None,
            };
            if let Some(mut a) = candidate {
                if self.fix_checks(&a, Some(d)) {
                    a.fixes = Some(i);
                    out.push(a);
                }
            }
        }
        for a in self.ctx_rewrites(range) {
            if self.fix_checks(&a, None) {
                out.push(a);
            }
        }
        out
    }

    /// `var x = 0` … `x += e` with `e` of a float type: declare `x` with
    /// that type and a float literal.
    fn add_type(&self, at: Span, d: &Diagnostic) -> Option<Action> {
        // The checker names the value's type last: "... cannot take f32".
        let ty = d.message.rsplit(' ').next()?;
        let float = ast::ScalarTy::ALL
            .iter()
            .find(|t| t.name() == ty)?
            .is_float();
        let stmt = self.stmt_at(at)?;
        let StmtKind::Assign {
            target,
            op: Some(_),
            ..
        } = &stmt.kind
        else {
            return None;
        };
        let ExprKind::Name(name) = &target.kind else {
            return None;
        };
        let def = self.symbols.at(target.span.start as usize)?;
        let decl = self.let_of(self.symbols.defs[def].span)?;
        let StmtKind::Let {
            mutable: true,
            name: decl_name,
            ty: None,
            init,
        } = &decl.kind
        else {
            return None;
        };
        let mut edits = vec![(
            Span::new(decl_name.span.end as usize, decl_name.span.end as usize),
            format!(": {ty}"),
        )];
        if let (ExprKind::Int(v), true) = (&init.kind, float) {
            edits.push((init.span, format!("{v}.0")));
        }
        Some(Action {
            title: format!("Declare `{name}` as `{ty}`"),
            kind: ActionKind::QuickFix,
            edits,
            fixes: None,
        })
    }

    /// Move the collective at `at` before the `if` the diagnostic names as
    /// its cause, where the conditions in the module docs hold.
    fn hoist_collective(&self, at: Span, d: &Diagnostic) -> Option<Action> {
        let cause = d.labels.iter().find(|l| !l.primary)?.span;
        let chain = self.stmt_chain(at)?;
        // The `if` whose condition is the cause, and everything below it.
        let top = chain.iter().position(|s| match &s.kind {
            StmtKind::If { cond, .. } => cond.span.range().contains(&(cause.start as usize)),
            _ => false,
        })?;
        if chain[top..]
            .iter()
            .any(|s| matches!(s.kind, StmtKind::For(_)))
        {
            return None;
        }
        let the_if = chain[top];
        let coll = find_expr(chain.last()?, at)?;
        let ExprKind::Collective(c) = &coll.kind else {
            return None;
        };
        let op = &c.op;
        if !self.movable(coll, the_if.span) {
            return None;
        }
        let line_start = self.src[..the_if.span.start as usize]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let indent = &self.src[line_start..the_if.span.start as usize];
        if !indent.chars().all(char::is_whitespace) {
            return None;
        }
        let name = self.fresh_name(&format!("{}_all", op.name));
        let text = self.src.get(coll.span.range())?;
        Some(Action {
            title: format!(
                "Move `{}` before the `if` (it then folds the value of every lane)",
                short(text)
            ),
            kind: ActionKind::QuickFix,
            edits: vec![
                (
                    Span::new(line_start, line_start),
                    format!("{indent}let {name} = {text}\n"),
                ),
                (coll.span, name),
            ],
            fixes: None,
        })
    }

    /// Whether `coll` can be evaluated before the statement at `outer`
    /// with the same value: no loads, no fn calls, no division by anything
    /// but a non-zero literal, and no name declared or assigned inside
    /// `outer`.
    fn movable(&self, coll: &Expr, outer: Span) -> bool {
        let mut ok = true;
        walk_expr(coll, &mut |e| match &e.kind {
            ExprKind::Index { .. } => ok = false,
            ExprKind::Call { callee, .. } => {
                let user_fn = self
                    .file
                    .items
                    .iter()
                    .any(|i| matches!(i, ast::Item::Fn(f) if f.name.name == callee.name));
                if user_fn {
                    ok = false;
                }
            }
            // Division only by a non-zero literal.
            ExprKind::Binary(BinOp::Div | BinOp::Rem, _, b)
                if !matches!(b.kind, ExprKind::Int(v) if v != 0)
                    && !matches!(b.kind, ExprKind::Float(_)) =>
            {
                ok = false;
            }
            ExprKind::Name(_) => {
                let Some(def) = self.symbols.at(e.span.start as usize) else {
                    ok = false;
                    return;
                };
                let def_span = self.symbols.defs[def].span;
                if outer.range().contains(&(def_span.start as usize))
                    || self.assigned_inside(def, outer)
                {
                    ok = false;
                }
            }
            _ => {}
        });
        ok
    }

    /// Whether symbol `def` is the target of an assignment inside `outer`.
    fn assigned_inside(&self, def: usize, outer: Span) -> bool {
        let mut found = false;
        for item in &self.file.items {
            if let ast::Item::Kernel(k) = item {
                walk_stmts(&k.body, &mut |s| {
                    if let StmtKind::Assign { target, .. } = &s.kind {
                        let base = match &target.kind {
                            ExprKind::Index { base, .. } => base,
                            _ => target,
                        };
                        if outer.range().contains(&(s.span.start as usize))
                            && self.symbols.at(base.span.start as usize) == Some(def)
                        {
                            found = true;
                        }
                    }
                });
            }
        }
        found
    }

    /// `ctx.thread / 32` → `ctx.warp` and friends, for expressions in `range`.
    fn ctx_rewrites(&self, range: Span) -> Vec<Action> {
        let mut out = Vec::new();
        for item in &self.file.items {
            let ast::Item::Kernel(k) = item else { continue };
            if k.span.end < range.start || k.span.start > range.end {
                continue;
            }
            walk_stmts(&k.body, &mut |s| {
                walk_stmt_exprs(s, &mut |e| {
                    let ExprKind::Binary(op, a, b) = &e.kind else {
                        return;
                    };
                    if !matches!(a.kind, ExprKind::Ctx(CtxField::Thread)) {
                        return;
                    }
                    let field = match (op, &b.kind) {
                        (BinOp::Div, ExprKind::Int(32)) | (BinOp::Shr, ExprKind::Int(5)) => {
                            "ctx.warp"
                        }
                        (BinOp::Rem, ExprKind::Int(32)) | (BinOp::BitAnd, ExprKind::Int(31)) => {
                            "ctx.lane"
                        }
                        _ => return,
                    };
                    let touches = e.span.start <= range.end && range.start <= e.span.end;
                    // Parenthesized as written: keep the parentheses' span.
                    let text = self.src.get(e.span.range()).unwrap_or("");
                    if touches {
                        out.push(Action {
                            title: format!("Use `{field}` for `{text}`"),
                            kind: ActionKind::Rewrite,
                            edits: vec![(e.span, field.to_string())],
                            fixes: None,
                        });
                    }
                });
            });
        }
        out
    }

    /// Apply `a` to the unit of its kernel and check again: true when the
    /// errors after are those before, less (at least) `fixed`'s.
    fn fix_checks(&self, a: &Action, fixed: Option<&Diagnostic>) -> bool {
        let Some(first) = a.edits.first() else {
            return false;
        };
        let Some(placed) = self
            .units
            .iter()
            .find(|p| p.kernel.range().contains(&(first.0.start as usize)))
        else {
            return false;
        };
        let Some(text) = apply_in_unit(placed, &a.edits) else {
            return false;
        };
        let (_, after) = phobos_core::check_source(&text);
        let key = |d: &Diagnostic| (d.code, d.message.clone());
        let mut before: Vec<_> = placed
            .unit
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(key)
            .collect();
        if let Some(f) = fixed {
            match before.iter().position(|k| *k == key(f)) {
                Some(i) => {
                    before.remove(i);
                }
                None => return false,
            }
        }
        after.iter().filter(|d| d.is_error()).all(|d| {
            match before.iter().position(|k| *k == key(d)) {
                Some(i) => {
                    before.remove(i);
                    true
                }
                None => false,
            }
        })
    }

    /// The innermost statement whose span holds `at`.
    fn stmt_at(&self, at: Span) -> Option<&Stmt> {
        self.stmt_chain(at)?.last().copied()
    }

    /// The statements around `at`, outermost first.
    fn stmt_chain(&self, at: Span) -> Option<Vec<&Stmt>> {
        fn block<'a>(b: &'a ast::Block, at: Span, out: &mut Vec<&'a Stmt>) {
            for s in &b.stmts {
                if s.span.start <= at.start && at.end <= s.span.end {
                    out.push(s);
                    match &s.kind {
                        StmtKind::If { then, els, .. } => {
                            block(then, at, out);
                            if let Some(e) = els {
                                block(e, at, out);
                            }
                        }
                        StmtKind::For(l) => block(&l.body, at, out),
                        _ => {}
                    }
                    return;
                }
            }
        }
        let k = self.file.items.iter().find_map(|i| match i {
            ast::Item::Kernel(k) if k.span.start <= at.start && at.end <= k.span.end => Some(k),
            _ => None,
        })?;
        let mut out = Vec::new();
        block(&k.body, at, &mut out);
        (!out.is_empty()).then_some(out)
    }

    /// The `let`/`var` statement that declares the name at `name`.
    fn let_of(&self, name: Span) -> Option<&Stmt> {
        let s = self.stmt_at(name)?;
        matches!(&s.kind, StmtKind::Let { name: n, .. } if n.span == name).then_some(s)
    }

    /// `base`, or `base2`, `base3`, ... : a name no definition uses.
    fn fresh_name(&self, base: &str) -> String {
        let taken = |n: &str| self.symbols.defs.iter().any(|d| d.name == n);
        if !taken(base) {
            return base.to_string();
        }
        (2..)
            .map(|i| format!("{base}{i}"))
            .find(|n| !taken(n))
            .unwrap_or_default()
    }
}

/// The unit's text with document `edits` applied, or None when an edit
/// falls outside the unit's copy of the document.
fn apply_in_unit(placed: &Placed, edits: &[(Span, String)]) -> Option<String> {
    let mut unit_edits = Vec::new();
    for (span, text) in edits {
        let start = placed.to_unit(span.start as usize)?;
        let end = placed.to_unit(span.end as usize)?;
        unit_edits.push((start, end, text));
    }
    unit_edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut text = placed.unit.src.clone();
    for (start, end, new) in unit_edits {
        text.replace_range(start..end, new);
    }
    Some(text)
}

fn short(text: &str) -> String {
    if text.chars().count() <= 40 {
        return text.to_string();
    }
    let head: String = text.chars().take(37).collect();
    format!("{head}...")
}

/// The expression spanning exactly `at` inside statement `s`.
fn find_expr(s: &Stmt, at: Span) -> Option<&Expr> {
    let mut found = None;
    walk_stmt_exprs(s, &mut |e| {
        if e.span == at && found.is_none() {
            found = Some(e);
        }
    });
    found
}

/// Every statement of `b`, outer first.
fn walk_stmts<'a>(b: &'a ast::Block, f: &mut dyn FnMut(&'a Stmt)) {
    for s in &b.stmts {
        f(s);
        s.blocks().into_iter().for_each(|b| walk_stmts(b, f));
    }
}

/// The expressions written directly in statement `s` (not in nested
/// blocks), each with everything inside it, outer first.
fn walk_stmt_exprs<'a>(s: &'a Stmt, f: &mut dyn FnMut(&'a Expr)) {
    match &s.kind {
        StmtKind::Let { init, .. } => walk_expr(init, f),
        StmtKind::ArrayDecl(a) => {
            a.shape.iter().for_each(|d| walk_expr(d, f));
            walk_expr(&a.init, f);
        }
        StmtKind::Assign { target, value, .. } => {
            walk_expr(target, f);
            walk_expr(value, f);
        }
        StmtKind::If { cond, .. } => walk_expr(cond, f),
        StmtKind::For(l) => {
            walk_expr(&l.start, f);
            walk_expr(&l.end, f);
            if let Some(st) = &l.step {
                walk_expr(st, f);
            }
        }
        StmtKind::While { cond, .. } => walk_expr(cond, f),
        StmtKind::Expr(e) => walk_expr(e, f),
        StmtKind::Break | StmtKind::Continue | StmtKind::Return | StmtKind::Error => {}
    }
}

/// Every expression written in block `b` and the blocks inside it.
pub(crate) fn walk_block_exprs<'a>(b: &'a ast::Block, f: &mut dyn FnMut(&'a Expr)) {
    walk_stmts(b, &mut |s| walk_stmt_exprs(s, f));
}

pub(crate) fn walk_expr<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    e.walk(f);
}
