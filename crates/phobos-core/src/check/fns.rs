//! `fn` items: the table of them, and the checks that need no types — a
//! unique name that is not a built-in, unique parameters, names that
//! resolve, and no recursion. Typing happens at each call, where the body
//! is inlined (`calls.rs`).

use super::calls::is_builtin_name;
use super::cx::FnTable;
use super::error::FnError;
use crate::ast::{self, ExprKind, File, FnItem, Item, Span, Subscript};
use crate::diag::Diagnostic;
use std::collections::{HashMap, HashSet};

pub(crate) fn fn_table<'a>(file: &'a File, diags: &mut Vec<Diagnostic>) -> FnTable<'a> {
    let mut table = FnTable {
        items: HashMap::new(),
        broken: HashSet::new(),
    };
    for item in &file.items {
        let Item::Fn(f) = item else { continue };
        let name = f.name.name.as_str();
        if is_builtin_name(name) {
            diags.push(
                FnError::FnNamedLikeBuiltin {
                    name: name.to_string(),
                    span: f.name.span,
                }
                .into(),
            );
            continue;
        }
        if let Some(first) = table.items.get(name) {
            diags.push(
                FnError::FnTwice {
                    name: name.to_string(),
                    span: f.name.span,
                    first: first.name.span,
                }
                .into(),
            );
            continue;
        }
        table.items.insert(name, f);
    }
    let names: HashSet<&str> = table.items.keys().copied().collect();
    let mut calls: HashMap<&str, Vec<(&str, Span)>> = HashMap::new();
    for f in table.items.values() {
        let mut walk = BodyWalk {
            f,
            fns: &names,
            calls: Vec::new(),
            diags: Vec::new(),
        };
        walk.params();
        walk.expr(&f.body);
        if !walk.diags.is_empty() {
            table.broken.insert(f.name.name.as_str());
        }
        diags.extend(walk.diags);
        calls.insert(f.name.name.as_str(), walk.calls);
    }
    find_recursion(&table, &calls, diags)
        .into_iter()
        .for_each(|n| {
            table.broken.insert(n);
        });
    diags.sort_by_key(|d| d.labels.first().map_or(0, |l| l.span.start));
    table
}

struct BodyWalk<'a, 'f> {
    f: &'a FnItem,
    fns: &'f HashSet<&'a str>,
    calls: Vec<(&'a str, Span)>,
    diags: Vec<Diagnostic>,
}

impl<'a> BodyWalk<'a, '_> {
    fn params(&mut self) {
        let mut seen = HashSet::new();
        for p in &self.f.params {
            if !seen.insert(p.name.as_str()) {
                self.diags.push(
                    FnError::FnParamTwice {
                        name: p.name.clone(),
                        span: p.span,
                    }
                    .into(),
                );
            }
        }
    }

    fn is_param(&self, n: &str) -> bool {
        self.f.params.iter().any(|p| p.name == n)
    }

    fn expr(&mut self, e: &'a ast::Expr) {
        match &e.kind {
            ExprKind::Name(n) if self.is_param(n) => {}
            ExprKind::Name(n) => {
                let d = if self.fns.contains(n.as_str()) {
                    FnError::FnAsValue {
                        name: n.clone(),
                        span: e.span,
                    }
                } else {
                    FnError::FnBodyUnknownName {
                        name: n.clone(),
                        span: e.span,
                    }
                };
                self.diags.push(d.into());
            }
            ExprKind::Unary(_, x) => self.expr(x),
            ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Call { callee, args } => {
                self.callee(callee);
                args.iter().for_each(|a| self.expr(a));
            }
            ExprKind::Index { base, subs } => {
                self.expr(base);
                subs.iter().for_each(|s| self.subscript(s));
            }
            ExprKind::Shared { dims, .. } | ExprKind::Zeros { dims, .. } => {
                dims.iter().for_each(|d| self.expr(d))
            }
            ExprKind::Collective(c) => {
                let ast::Collective {
                    op, config, args, ..
                } = &**c;
                config.iter().for_each(|c| self.config_value(&c.value));
                let (value, combine) = match (op.name.as_str(), args.as_slice()) {
                    ("reduce", [x, f]) => (Some(x), Some(f)),
                    (_, [x, ..]) => (Some(x), None),
                    _ => (None, None),
                };
                value.into_iter().for_each(|x| self.expr(x));
                if let Some(ExprKind::Name(n)) = combine.map(|f| &f.kind) {
                    if self.fns.contains(n.as_str()) && !self.is_param(n) {
                        self.calls
                            .push((self.name_of(n), combine.map_or(e.span, |f| f.span)));
                    }
                }
            }
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Ctx(_)
            | ExprKind::Error => {}
        }
    }

    /// `over ctx.lane` is not a use of a name; other values are.
    fn config_value(&mut self, e: &'a ast::Expr) {
        self.expr(e);
    }

    fn subscript(&mut self, s: &'a Subscript) {
        s.exprs().into_iter().for_each(|x| self.expr(x));
    }

    fn name_of(&self, n: &str) -> &'a str {
        self.fns.get(n).copied().unwrap_or("")
    }

    fn callee(&mut self, callee: &'a ast::Ident) {
        let n = callee.name.as_str();
        if self.fns.contains(n) {
            self.calls.push((self.name_of(n), callee.span));
        } else if !is_builtin_name(n) {
            self.diags.push(
                FnError::UnknownFn {
                    name: n.to_string(),
                    span: callee.span,
                }
                .into(),
            );
        }
    }
}

/// Report every fn that reaches itself through calls; returns their names.
fn find_recursion<'a>(
    table: &FnTable<'a>,
    calls: &HashMap<&'a str, Vec<(&'a str, Span)>>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut names: Vec<&str> = table.items.keys().copied().collect();
    names.sort_unstable();
    for start in names {
        // Iterative depth-first search for a path back to `start`.
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(start, vec![start])];
        let mut seen = HashSet::new();
        while let Some((f, path)) = stack.pop() {
            for &(g, span) in calls.get(f).map_or(&[][..], |v| v.as_slice()) {
                if g == start {
                    report_cycle(&path, span, diags);
                    out.push(start);
                    stack.clear();
                    break;
                }
                if seen.insert(g) {
                    let mut p = path.clone();
                    p.push(g);
                    stack.push((g, p));
                }
            }
        }
    }
    out
}

fn report_cycle(path: &[&str], closing_call: Span, diags: &mut Vec<Diagnostic>) {
    let first = path.first().copied().unwrap_or("");
    // One report per cycle: only from its alphabetically first member.
    if path.iter().all(|n| *n >= first) {
        diags.push(
            FnError::Recursion {
                path: path.iter().map(|n| n.to_string()).collect(),
                span: closing_call,
            }
            .into(),
        );
    }
}
