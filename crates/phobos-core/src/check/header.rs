//! A kernel's header: parameters, named dims and the attributes
//! (`@launch`, `@aligned`, `@autotune`, `@grid`). Checked once per kernel;
//! `variants` then lists the autotune combinations the body is checked for.

use super::cx::Binding;
use crate::ast::{self, AttrKind, BinOp, Dim, ExprKind, ParamTy, ScalarTy, Span, UnOp};
use crate::consteval;
use crate::diag::Diagnostic;
use crate::hir::{self, DimId, DimInfo, DimRef, ParamId, ParamKind};
use std::collections::HashMap;

/// Most autotune combinations one kernel may have.
pub(crate) const MAX_VARIANTS: usize = 256;

pub(crate) struct Header {
    pub params: Vec<hir::Param>,
    pub dims: Vec<DimInfo>,
    /// Params and dims by name.
    pub bindings: super::cx::Scope,
    /// `@autotune` names, values and the span of the name.
    pub autotune: Vec<(String, Vec<i64>, Span)>,
    pub aligned: Vec<(DimId, u64)>,
    pub launch: Option<ast::Expr>,
    pub grid: Option<(Vec<ast::Expr>, Span)>,
}

impl Header {
    /// Every combination of autotune values, in declaration order.
    pub fn variants(&self) -> Vec<Vec<(String, i64)>> {
        let mut out: Vec<Vec<(String, i64)>> = vec![vec![]];
        for (name, values, _) in &self.autotune {
            let mut next = Vec::with_capacity(out.len() * values.len());
            for prefix in &out {
                for &v in values {
                    let mut combo = prefix.clone();
                    combo.push((name.clone(), v));
                    next.push(combo);
                }
            }
            out = next;
        }
        out
    }

    pub fn dim_id(&self, name: &str) -> Option<DimId> {
        match self.bindings.get(name) {
            Some(Binding::Dim(id)) => Some(*id),
            _ => None,
        }
    }
}

/// Check the parameters and attributes of a kernel.
pub(crate) fn check_header(k: &ast::Kernel, diags: &mut Vec<Diagnostic>) -> Header {
    let mut h = Header {
        params: Vec::new(),
        dims: Vec::new(),
        bindings: super::cx::Scope::default(),
        autotune: Vec::new(),
        aligned: Vec::new(),
        launch: None,
        grid: None,
    };
    for p in &k.params {
        add_param(&mut h, p, diags);
    }
    let mut seen: HashMap<&'static str, Span> = HashMap::new();
    for attr in &k.attrs {
        let key = attr_key(&attr.kind);
        if let (Some(key), Some(first)) = (key, key.and_then(|k| seen.get(k))) {
            diags.push(
                Diagnostic::error("P0307", format!("`@{key}` is given twice"))
                    .primary(attr.span, "second one here")
                    .secondary(*first, "first one here"),
            );
            continue;
        }
        if let Some(key) = key {
            seen.insert(key, attr.span);
        }
        add_attr(&mut h, attr, diags);
    }
    if h.launch.is_none() {
        diags.push(
            Diagnostic::error("P0301", format!("kernel `{}` has no `@launch`", k.name.name))
                .primary(k.name.span, "the threads per CTA are not given")
                .note("write `@launch(128)` above the kernel: the threads per CTA, a multiple of 32 from 32 to 1024"),
        );
    }
    let combos: usize = h
        .autotune
        .iter()
        .map(|(_, v, _)| v.len().max(1))
        .fold(1usize, |a, b| a.saturating_mul(b));
    if combos > MAX_VARIANTS {
        let span = k
            .attrs
            .iter()
            .find(|a| matches!(a.kind, AttrKind::Autotune(_)));
        diags.push(
            Diagnostic::error("P0311", format!("`@autotune` makes {combos} variants"))
                .primary(
                    span.map_or(k.name.span, |a| a.span),
                    format!("at most {MAX_VARIANTS} are allowed"),
                )
                .note("tune fewer names or fewer values at once"),
        );
        h.autotune.clear();
    }
    h
}

fn attr_key(kind: &AttrKind) -> Option<&'static str> {
    match kind {
        AttrKind::Launch(_) => Some("launch"),
        AttrKind::Aligned(_) => Some("aligned"),
        AttrKind::Autotune(_) => Some("autotune"),
        AttrKind::Grid(_) => Some("grid"),
        AttrKind::Unknown(_) => None,
    }
}

fn add_param(h: &mut Header, p: &ast::Param, diags: &mut Vec<Diagnostic>) {
    let id = ParamId(h.params.len() as u32);
    if h.bindings.contains_key(&p.name.name) {
        diags.push(
            Diagnostic::error("P0202", format!("`{}` is declared twice", p.name.name))
                .primary(p.name.span, "a second parameter or dim of this name"),
        );
    }
    let kind = match &p.ty {
        ParamTy::Scalar(t) => ParamKind::Scalar(*t),
        ParamTy::Tensor { elem, dims, .. } => {
            let dims = dims
                .iter()
                .enumerate()
                .map(|(axis, d)| add_dim(h, d, id, axis, diags))
                .collect();
            ParamKind::Tensor {
                elem: *elem,
                dims,
                written: false,
            }
        }
    };
    h.bindings.insert(p.name.name.clone(), Binding::Param(id));
    h.params.push(hir::Param {
        name: p.name.name.clone(),
        span: p.span,
        kind,
    });
}

fn add_dim(
    h: &mut Header,
    d: &Dim,
    param: ParamId,
    axis: usize,
    diags: &mut Vec<Diagnostic>,
) -> DimRef {
    match d {
        Dim::Const(0, span) => {
            diags.push(
                Diagnostic::error("P0203", "a tensor dim cannot be 0")
                    .primary(*span, "an empty axis"),
            );
            DimRef::Const(1)
        }
        Dim::Const(v, span) if *v > i32::MAX as u64 => {
            // Dims are `i32` in the kernel (indices, bounds, strides): a
            // larger constant was truncated in the PTX.
            diags.push(
                Diagnostic::error("P0203", format!("the tensor dim {v} does not fit in i32"))
                    .primary(*span, "above 2147483647")
                    .note("a dim is from 1 to 2147483647: indices are 32-bit"),
            );
            DimRef::Const(1)
        }
        Dim::Const(v, _) => DimRef::Const(*v),
        Dim::Name(name) => match h.bindings.get(&name.name) {
            Some(Binding::Dim(id)) => {
                let id = *id;
                h.dims[id.0 as usize].defined_by.push((param, axis));
                DimRef::Named(id)
            }
            Some(_) => {
                diags.push(
                    Diagnostic::error("P0202", format!("`{}` is declared twice", name.name))
                        .primary(name.span, "a parameter already has this name"),
                );
                DimRef::Const(1)
            }
            None => {
                let id = DimId(h.dims.len() as u32);
                h.dims.push(DimInfo {
                    name: name.name.clone(),
                    defined_by: vec![(param, axis)],
                    constant: None,
                });
                h.bindings.insert(name.name.clone(), Binding::Dim(id));
                DimRef::Named(id)
            }
        },
    }
}

fn add_attr(h: &mut Header, attr: &ast::Attr, diags: &mut Vec<Diagnostic>) {
    match &attr.kind {
        AttrKind::Launch(e) => h.launch = Some(e.clone()),
        AttrKind::Grid(es) => {
            if es.is_empty() || es.len() > 3 {
                diags.push(
                    Diagnostic::error(
                        "P0308",
                        format!("`@grid` takes 1 to 3 expressions, found {}", es.len()),
                    )
                    .primary(
                        attr.span,
                        "write `@grid(x)`, `@grid(x, y)` or `@grid(x, y, z)`",
                    ),
                );
            } else {
                h.grid = Some((es.clone(), attr.span));
            }
        }
        AttrKind::Aligned(entries) => {
            for (name, value) in entries {
                add_aligned(h, name, value, diags);
            }
        }
        AttrKind::Autotune(entries) => {
            for (name, values) in entries {
                add_autotune(h, name, values, diags);
            }
        }
        AttrKind::Unknown(name) => diags.push(
            Diagnostic::error("P0300", format!("unknown attribute `@{}`", name.name))
                .primary(attr.span, "not an attribute")
                .note("the attributes are @launch, @aligned, @autotune and @grid"),
        ),
    }
}

fn add_aligned(h: &mut Header, name: &ast::Ident, value: &ast::Expr, diags: &mut Vec<Diagnostic>) {
    let Some(dim) = h.dim_id(&name.name) else {
        diags.push(
            Diagnostic::error(
                "P0304",
                format!("`@aligned` names `{}`, which is not a dim", name.name),
            )
            .primary(name.span, "no tensor parameter has this dim")
            .note(
                "`@aligned(K = 128)` says the named dim of a tensor parameter is a multiple of 128",
            ),
        );
        return;
    };
    match ast_const(value, &|_| None) {
        Some(v) if v > 0 => h.aligned.push((dim, v as u64)),
        None if has_error(value) => {}
        _ => diags.push(
            Diagnostic::error(
                "P0305",
                "an `@aligned` multiple must be a positive integer constant",
            )
            .primary(value.span, "not a positive constant"),
        ),
    }
}

fn add_autotune(
    h: &mut Header,
    name: &ast::Ident,
    values: &[ast::Expr],
    diags: &mut Vec<Diagnostic>,
) {
    if matches!(h.bindings.get(&name.name), Some(Binding::Param(_)))
        || h.autotune.iter().any(|(n, _, _)| *n == name.name)
    {
        diags.push(
            Diagnostic::error("P0309", format!("`{}` cannot be autotuned here", name.name))
                .primary(name.span, "already a parameter or an autotuned name")
                .note("autotune a dim of a tensor parameter or a new constant name"),
        );
        return;
    }
    // A dim is a positive extent; a free constant may be any `i32`.
    let is_dim = matches!(h.bindings.get(&name.name), Some(Binding::Dim(_)));
    let mut out: Vec<i64> = Vec::new();
    for v in values {
        let bad = |label: String| {
            Diagnostic::error(
                "P0306",
                format!("`{}` cannot be autotuned to this value", name.name),
            )
            .primary(v.span, label)
        };
        match ast_const(v, &|_| None) {
            Some(x) if i32::try_from(x).is_err() => diags.push(
                bad(format!("{x} does not fit in i32"))
                    .note("autotune values are 32-bit: from -2147483648 to 2147483647"),
            ),
            Some(x) if is_dim && x < 1 => {
                diags.push(bad(format!("{x} is not a dim size")).note(format!(
                    "`{}` is a dim of a tensor, so each value must be at least 1",
                    name.name
                )))
            }
            Some(x) if out.contains(&x) => {
                diags.push(bad(format!("{x} is given twice")).note("give each value once"))
            }
            Some(x) => out.push(x),
            None if has_error(v) => {}
            None => diags.push(
                Diagnostic::error("P0306", "an `@autotune` value must be an integer constant")
                    .primary(v.span, "not an integer constant"),
            ),
        }
    }
    if values.is_empty() {
        diags.push(
            Diagnostic::error(
                "P0310",
                format!("`@autotune` gives `{}` no values", name.name),
            )
            .primary(
                name.span,
                "needs at least one value, as in `K in [256, 512]`",
            ),
        );
    }
    if out.len() == values.len() && !values.is_empty() {
        h.autotune.push((name.name.clone(), out, name.span));
    }
}

/// Fold an attribute's integer expression exactly in 64 bits
/// (`consteval::exact`: overflow, division by zero and shifts out of range
/// give `None`). `names` gives the value of a name (the autotuned
/// constants of a variant).
pub(crate) fn ast_const(e: &ast::Expr, names: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(v) => i64::try_from(*v).ok(),
        ExprKind::Name(n) => names(n),
        ExprKind::Unary(UnOp::Neg, x) => {
            let v = consteval::exact_unary(UnOp::Neg, ScalarTy::I64, ast_const(x, names)?.into());
            v.ok().and_then(|v| i64::try_from(v).ok())
        }
        ExprKind::Binary(
            op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem | BinOp::Shl),
            a,
            b,
        ) => {
            let (a, b) = (ast_const(a, names)?, ast_const(b, names)?);
            let v = consteval::exact(*op, ScalarTy::I64, a.into(), b.into());
            v.ok().and_then(|v| i64::try_from(v).ok())
        }
        _ => None,
    }
}

/// Whether an attribute's value holds an expression that already had an
/// error (a number the lexer refused): then "not a constant" would be a
/// second message about the same mistake.
fn has_error(e: &ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Error => true,
        ExprKind::Unary(_, x) => has_error(x),
        ExprKind::Binary(_, a, b) => has_error(a) || has_error(b),
        _ => false,
    }
}

/// The threads per CTA of one variant, checked: a multiple of 32 from 32 to 1024.
pub(crate) fn launch_threads(
    h: &Header,
    variant: &[(String, i64)],
    diags: &mut Vec<Diagnostic>,
) -> Option<u32> {
    let e = h.launch.as_ref()?;
    let lookup = |n: &str| variant.iter().find(|(v, _)| v == n).map(|(_, x)| *x);
    match ast_const(e, &lookup) {
        Some(t) if (32..=1024).contains(&t) && t % 32 == 0 => Some(t as u32),
        Some(t) => {
            diags.push(
                Diagnostic::error(
                    "P0302",
                    format!("`@launch({t})` is not a multiple of 32 from 32 to 1024"),
                )
                .primary(e.span, "threads per CTA")
                .note("a CTA is whole warps of 32 threads, at most 1024 threads"),
            );
            None
        }
        None if has_error(e) => None,
        None => {
            diags.push(
                Diagnostic::error("P0303", "`@launch` needs an integer constant")
                    .primary(e.span, "not a constant")
                    .note("use a number or an autotuned name, as in `@launch(128)`"),
            );
            None
        }
    }
}
