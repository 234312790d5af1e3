//! The checking context of one kernel variant: scopes and bindings, the
//! locals being built, which tensors are written, and the diagnostics. The
//! typing, subscript, collective and statement passes are methods on `Cx`
//! in their own files; this file owns only the shared state.

use super::error::CheckError;
use super::header::Header;
use crate::ast::{FnItem, ScalarTy, Span};
use crate::diag::Diagnostic;
use crate::hir::{self, LocalId, LocalKind, ParamId, Ty};
use std::collections::HashMap;

/// A checked expression, or `None` when its error was already reported
/// (callers then stay quiet, so one mistake gives one diagnostic).
pub(crate) type Ex = Option<hir::Expr>;

/// Deepest chain of `fn` calls inlined into one another.
pub(crate) const MAX_INLINE_DEPTH: usize = 32;
/// Deepest checked expression, counting the bodies of inlined fns.
pub(crate) const MAX_EXPR_DEPTH: usize = 384;
/// Most `fn` calls inlined into one kernel variant.
pub(crate) const INLINE_BUDGET: usize = 50_000;
/// Most expressions checked in one kernel variant, counting the bodies of
/// inlined fns: bounds the checker's time and memory whatever the input.
pub(crate) const MAX_EXPR_NODES: usize = 500_000;
/// Most expressions in all `@autotune` variants of one kernel together
/// (P0311): each variant is checked and compiled for every target, so
/// 256 variants of a large body multiplied the work by 256.
pub(crate) const MAX_TOTAL_EXPR_NODES: usize = 1_000_000;

/// FNV-1a: names are short, and SipHash's protection against crafted keys
/// buys nothing in a compiler's scope table.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// Names bound in one scope.
pub(crate) type Scope = HashMap<String, Binding, std::hash::BuildHasherDefault<Fnv>>;

/// What a name means at one point of a kernel.
#[derive(Clone, Debug)]
pub(crate) enum Binding {
    Local(LocalId),
    Param(ParamId),
    Dim(hir::DimId),
    /// An autotuned constant (or autotuned dim) of this variant.
    Const(i64),
    /// A `fn` parameter, bound to the checked argument it stands for.
    Inline(hir::Expr),
    /// A variable whose declaration had an error: uses stay quiet.
    Poisoned,
}

/// The `fn` items of the file, by name. `broken` fns had errors of their
/// own (reported once, at the definition), so their calls stay quiet.
pub(crate) struct FnTable<'a> {
    pub items: HashMap<&'a str, &'a FnItem>,
    pub broken: std::collections::HashSet<&'a str>,
}

pub(crate) struct Cx<'a> {
    pub src: &'a str,
    pub fns: &'a FnTable<'a>,
    pub header: &'a Header,
    /// This variant's threads per CTA.
    pub threads: u32,
    /// Each dim's value when this variant knows it (autotuned dims).
    pub dim_consts: Vec<Option<i64>>,
    pub scopes: Vec<Scope>,
    pub locals: Vec<hir::Local>,
    /// `let` locals and loop variables cannot be assigned.
    pub written: Vec<bool>,
    /// The `fn` calls being inlined, innermost last: (fn name, call span).
    pub inline_stack: Vec<(String, Span)>,
    pub inline_budget: usize,
    /// Set once inlining hit a limit, so the limit is reported once.
    pub inline_exhausted: bool,
    /// Current depth of `expr` calls.
    pub expr_depth: usize,
    /// Expressions checked so far in this variant (see [`MAX_EXPR_NODES`]).
    pub expr_nodes: usize,
    /// Inside `@grid(...)`: only dims and constants may be named.
    pub grid_mode: bool,
    /// Loop variables, so assigning one is explained as such.
    pub loop_vars: Vec<LocalId>,
    /// Loops around the statement being checked (`break` and `continue`
    /// need one).
    pub loop_depth: u32,
    /// `var x = 0`-style locals: declared from an integer literal without a
    /// type, with the literal's span and value (for the `var x: f32 = 0.0`
    /// hint when a float is added to them).
    pub int_literal_vars: Vec<(LocalId, Span, u64)>,
    pub diags: Vec<Diagnostic>,
}

impl<'a> Cx<'a> {
    pub fn new(src: &'a str, fns: &'a FnTable<'a>, header: &'a Header, threads: u32) -> Cx<'a> {
        Cx {
            src,
            fns,
            header,
            threads,
            dim_consts: vec![None; header.dims.len()],
            scopes: vec![header.bindings.clone()],
            locals: Vec::new(),
            written: vec![false; header.params.len()],
            inline_stack: Vec::new(),
            inline_budget: INLINE_BUDGET,
            inline_exhausted: false,
            expr_depth: 0,
            expr_nodes: 0,
            grid_mode: false,
            loop_vars: Vec::new(),
            loop_depth: 0,
            int_literal_vars: Vec::new(),
            diags: Vec::new(),
        }
    }

    /// Report an error of any pass. Inside an inlined `fn` body the
    /// diagnostic also points at each call being inlined.
    pub fn report(&mut self, e: impl Into<CheckError>) {
        let mut d = e.into().into_diagnostic();
        for (name, span) in self.inline_stack.iter().rev() {
            d = d.secondary(*span, format!("in this call of `{name}`"));
        }
        self.diags.push(d);
    }

    pub fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// Rebind `name` in the scope that declared it (the innermost that has
    /// it), not in the current scope.
    pub fn rebind(&mut self, name: &str, b: Binding) {
        if let Some(scope) = self.scopes.iter_mut().rev().find(|s| s.contains_key(name)) {
            scope.insert(name.to_string(), b);
        }
    }

    pub fn bind(&mut self, name: &str, b: Binding) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), b);
        }
    }

    pub fn push_scope(&mut self) {
        self.scopes.push(Scope::default());
    }

    pub fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    pub fn new_local(&mut self, name: &str, span: Span, mutable: bool, kind: LocalKind) -> LocalId {
        let id = LocalId(self.locals.len() as u32);
        self.locals.push(hir::Local {
            name: name.to_string(),
            span,
            mutable,
            kind,
        });
        id
    }

    pub fn local_ty(&self, id: LocalId) -> Option<Ty> {
        match self.locals.get(id.0 as usize)?.kind {
            LocalKind::Scalar(t) => Some(Ty::Scalar(t)),
            LocalKind::Tile { .. } | LocalKind::Array { .. } | LocalKind::Acc { .. } => None,
        }
    }

    pub fn text(&self, span: Span) -> &'a str {
        self.src.get(span.range()).unwrap_or("")
    }
}

/// `Ty` for messages: `f32`, `a run of 4 f32`.
pub(crate) fn ty_name(t: Ty) -> String {
    match t {
        Ty::Scalar(s) => s.name().to_string(),
        Ty::Run { elem, len } => format!("a run of {len} {}", elem.name()),
        Ty::Unit => "nothing".to_string(),
    }
}

/// The element type of a scalar or run type.
pub(crate) fn elem_of(t: Ty) -> Option<ScalarTy> {
    match t {
        Ty::Scalar(s) | Ty::Run { elem: s, .. } => Some(s),
        Ty::Unit => None,
    }
}

pub(crate) fn mk(kind: hir::ExprKind, ty: Ty, span: Span) -> hir::Expr {
    hir::Expr { kind, ty, span }
}

/// The constant `c` of type `ty`.
pub(crate) fn constant(c: hir::ConstVal, ty: Ty, span: Span) -> hir::Expr {
    mk(hir::ExprKind::Const(c), ty, span)
}

pub(crate) fn const_i32(v: i64, span: Span) -> hir::Expr {
    constant(
        hir::ConstVal::Int(v as i128),
        Ty::Scalar(ScalarTy::I32),
        span,
    )
}
