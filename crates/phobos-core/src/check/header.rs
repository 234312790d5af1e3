//! A kernel's header: parameters, named dims and the attributes
//! (`@launch`, `@aligned`, `@autotune`, `@grid`). Checked once per kernel;
//! `variants` then lists the autotune combinations the body is checked for.

use super::cx::Binding;
use super::error::{BadTuneValue, HeaderError};
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
    /// `min_ctas = C` of `@launch`.
    pub min_ctas: Option<ast::Expr>,
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
        min_ctas: None,
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
                HeaderError::AttrTwice {
                    key,
                    span: attr.span,
                    first: *first,
                }
                .into(),
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
            HeaderError::NoLaunch {
                kernel: k.name.name.clone(),
                span: k.name.span,
            }
            .into(),
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
            HeaderError::TooManyVariants {
                combos,
                span: span.map_or(k.name.span, |a| a.span),
            }
            .into(),
        );
        h.autotune.clear();
    }
    h
}

fn attr_key(kind: &AttrKind) -> Option<&'static str> {
    match kind {
        AttrKind::Launch { .. } => Some("launch"),
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
            HeaderError::ParamTwice {
                name: p.name.name.clone(),
                span: p.name.span,
            }
            .into(),
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
            diags.push(HeaderError::ZeroDim { span: *span }.into());
            DimRef::Const(1)
        }
        Dim::Const(v, span) if *v > i32::MAX as u64 => {
            // Dims are `i32` in the kernel (indices, bounds, strides): a
            // larger constant was truncated in the PTX.
            diags.push(
                HeaderError::DimTooWide {
                    dim: *v,
                    span: *span,
                }
                .into(),
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
                    HeaderError::DimNamedLikeParam {
                        name: name.name.clone(),
                        span: name.span,
                    }
                    .into(),
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
        AttrKind::Launch { threads, min_ctas } => {
            h.launch = Some(threads.clone());
            h.min_ctas = min_ctas.clone();
        }
        AttrKind::Grid(es) => {
            if es.is_empty() || es.len() > 3 {
                diags.push(
                    HeaderError::GridCount {
                        found: es.len(),
                        span: attr.span,
                    }
                    .into(),
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
            HeaderError::UnknownAttr {
                name: name.name.clone(),
                span: attr.span,
            }
            .into(),
        ),
    }
}

fn add_aligned(h: &mut Header, name: &ast::Ident, value: &ast::Expr, diags: &mut Vec<Diagnostic>) {
    let Some(dim) = h.dim_id(&name.name) else {
        diags.push(
            HeaderError::AlignedNotDim {
                name: name.name.clone(),
                span: name.span,
            }
            .into(),
        );
        return;
    };
    match ast_const(value, &|_| None) {
        Some(v) if v > 0 => h.aligned.push((dim, v as u64)),
        None if has_error(value) => {}
        _ => diags.push(HeaderError::AlignedNotPositive { span: value.span }.into()),
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
            HeaderError::AutotuneHere {
                name: name.name.clone(),
                span: name.span,
            }
            .into(),
        );
        return;
    }
    // A dim is a positive extent; a free constant may be any `i32`.
    let is_dim = matches!(h.bindings.get(&name.name), Some(Binding::Dim(_)));
    let mut out: Vec<i64> = Vec::new();
    for v in values {
        let bad = |why| {
            HeaderError::AutotuneValue {
                name: name.name.clone(),
                why,
                span: v.span,
            }
            .into()
        };
        match ast_const(v, &|_| None) {
            Some(x) if i32::try_from(x).is_err() => diags.push(bad(BadTuneValue::TooWide(x))),
            Some(x) if is_dim && x < 1 => diags.push(bad(BadTuneValue::NotDimSize(x))),
            Some(x) if out.contains(&x) => diags.push(bad(BadTuneValue::Twice(x))),
            Some(x) => out.push(x),
            None if has_error(v) => {}
            None => diags.push(HeaderError::AutotuneNotConstant { span: v.span }.into()),
        }
    }
    if values.is_empty() {
        diags.push(
            HeaderError::AutotuneNoValues {
                name: name.name.clone(),
                span: name.span,
            }
            .into(),
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
/// The most threads any GPU runs on one SM (sm_80, sm_90): `@launch`'s
/// threads times `min_ctas` may not exceed it.
pub(crate) const MAX_THREADS_PER_SM: i64 = 2048;

/// `min_ctas` of `@launch(T, min_ctas = C)` in a variant: 1 to 32, and at
/// most [`MAX_THREADS_PER_SM`] threads in all (P0313).
pub(crate) fn launch_min_ctas(
    h: &Header,
    variant: &[(String, i64)],
    threads: Option<u32>,
    diags: &mut Vec<Diagnostic>,
) -> Option<u32> {
    let e = h.min_ctas.as_ref()?;
    let lookup = |n: &str| variant.iter().find(|(v, _)| v == n).map(|(_, x)| *x);
    let threads = i64::from(threads?);
    match ast_const(e, &lookup) {
        Some(c) if (1..=32).contains(&c) && c * threads <= MAX_THREADS_PER_SM => Some(c as u32),
        Some(c) => {
            diags.push(
                HeaderError::MinCtas {
                    ctas: Some(c),
                    threads,
                    span: e.span,
                }
                .into(),
            );
            None
        }
        None if has_error(e) => None,
        None => {
            diags.push(
                HeaderError::MinCtas {
                    ctas: None,
                    threads,
                    span: e.span,
                }
                .into(),
            );
            None
        }
    }
}

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
                HeaderError::LaunchNotWarps {
                    threads: t,
                    span: e.span,
                }
                .into(),
            );
            None
        }
        None if has_error(e) => None,
        None => {
            diags.push(HeaderError::LaunchNotConstant { span: e.span }.into());
            None
        }
    }
}
