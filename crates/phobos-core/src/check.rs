//! The checker: `ast::File` → `hir::CheckedKernel`s + diagnostics. Names
//! and scopes, types, subscripts, collective configuration and uniformity.
//! Each kernel is checked once per `@autotune` combination, with the tuned
//! values as constants; a diagnostic that several variants share is
//! reported once. Only kernels without errors are compiled; the ones with
//! errors are kept apart ([`Checked::partial`]) for tools that show what
//! the checker could judge.
//!
//! The passes live in `check/`: `header` (params, dims, attributes),
//! `types` (expressions), `calls` (built-ins and `fn` inlining),
//! `subscripts`, `collectives`, `stmts`, and `uniformity`, which runs on
//! the finished HIR; `names` checks what a kernel's name must be besides
//! an identifier (it is also a PTX entry, a Rust function and file names).
//! Each pass reports errors of its own enum in
//! `error/` (`HeaderError`, `StmtError`, ...), which writes its messages;
//! [`CheckError`] holds any of them.

mod arrays;
mod atomics;
mod calls;
mod collectives;
mod consts;
mod cx;
mod dot;
pub mod error;
mod fns;
mod header;
pub mod names;
mod scratch;
mod stages;
mod stmts;
mod subscripts;
mod types;
pub mod uniformity;

use crate::ast::{self, File, Item};
use crate::diag::Diagnostic;
use crate::hir::{self, CheckedKernel, ParamKind};
use cx::{Binding, Cx, FnTable};
pub use error::CheckError;
use error::KernelError;
use header::Header;
use std::collections::HashMap;

/// Check every kernel of a parsed file.
pub fn check_file(file: &File, src: &str) -> (Vec<CheckedKernel>, Vec<Diagnostic>) {
    let (checked, diags) = check_file_with_partial(file, src);
    (checked.kernels, diags)
}

/// What the checker made of a file's kernels.
#[derive(Debug, Default)]
pub struct Checked {
    /// The kernels that checked without errors.
    pub kernels: Vec<CheckedKernel>,
    /// The kernels with errors, as far as the checker could judge them:
    /// their HIR holds what checked (an expression that did not is left
    /// out or stands in for), and their uniformity facts are the ones the
    /// uniformity pass found. Only for tools that show facts in a broken
    /// file (the language server's hover); never compiled.
    pub partial: Vec<CheckedKernel>,
}

/// [`check_file`], keeping the kernels with errors apart in
/// [`Checked::partial`].
pub fn check_file_with_partial(file: &File, src: &str) -> (Checked, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let fns = fns::fn_table(file, &mut diags);
    let mut kernel_names: HashMap<&str, ast::Span> = HashMap::new();
    let mut entries = names::Entries::default();
    let mut out = Checked::default();
    for item in &file.items {
        let Item::Kernel(k) = item else { continue };
        if let Some(first) = kernel_names.insert(&k.name.name, k.name.span) {
            diags.push(
                KernelError::KernelTwice {
                    name: k.name.name.clone(),
                    span: k.name.span,
                    first,
                }
                .into(),
            );
            continue;
        }
        // A name the kernel cannot have: its body is still checked, for
        // the other diagnostics, but nothing is compiled.
        let bad_name = names::check_kernel_name(&k.name);
        let named_ok = bad_name.is_none();
        diags.extend(bad_name.map(Diagnostic::from));
        match check_kernel(k, src, &fns, &mut diags) {
            Some((checked, false)) if named_ok => match entries.add(&checked, &k.name) {
                Some(e) => {
                    diags.push(e.into());
                    out.partial.push(checked);
                }
                None => out.kernels.push(checked),
            },
            Some((checked, _)) => out.partial.push(checked),
            None => {}
        }
    }
    (out, diags)
}

fn check_kernel(
    k: &ast::Kernel,
    src: &str,
    fns: &FnTable,
    diags: &mut Vec<Diagnostic>,
) -> Option<(CheckedKernel, bool)> {
    let mut header_diags = Vec::new();
    let header = header::check_header(k, &mut header_diags);
    let variants = header.variants();
    let mut per_variant = Vec::with_capacity(variants.len());
    let mut kernels = Vec::with_capacity(variants.len());
    let mut total_nodes = 0usize;
    let mut too_large = None;
    for values in &variants {
        let mut vd = Vec::new();
        let (kernel, nodes) = check_variant(k, src, fns, &header, values, &mut vd);
        kernels.push(kernel);
        per_variant.push(vd);
        // The first variant's size times their number estimates them all
        // (they share the body); stop as soon as the estimate or the sum is
        // over the limit, before checking or compiling the rest.
        total_nodes = total_nodes.saturating_add(nodes);
        let estimate = total_nodes.max(nodes.saturating_mul(variants.len()));
        if variants.len() > 1 && estimate > cx::MAX_TOTAL_EXPR_NODES {
            too_large = Some(too_much_tuning(k, variants.len(), nodes, estimate));
            break;
        }
    }
    let failed = header_diags
        .iter()
        .chain(per_variant.iter().flatten())
        .any(Diagnostic::is_error);
    diags.extend(header_diags);
    merge_variant_diags(&variants, per_variant, diags);
    if let Some(e) = too_large {
        diags.push(e.into());
        return None;
    }
    let checked = CheckedKernel {
        name: k.name.name.clone(),
        span: k.span,
        autotune: header
            .autotune
            .iter()
            .map(|(n, v, _)| (n.clone(), v.clone()))
            .collect(),
        variants: kernels,
    };
    Some((checked, failed))
}

/// Report each distinct diagnostic once; one that only some variants have
/// gets a note naming the first variant it came from.
fn merge_variant_diags(
    variants: &[Vec<(String, i64)>],
    per_variant: Vec<Vec<Diagnostic>>,
    diags: &mut Vec<Diagnostic>,
) {
    let n = per_variant.len();
    let mut merged: Vec<(Diagnostic, usize, usize)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (vi, vd) in per_variant.into_iter().enumerate() {
        for d in vd {
            // Diagnostics hold no floats or pointers: their debug text is a faithful key.
            match index.entry(format!("{d:?}")) {
                std::collections::hash_map::Entry::Occupied(e) => merged[*e.get()].1 += 1,
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(merged.len());
                    merged.push((d, 1, vi));
                }
            }
        }
    }
    for (mut d, count, first) in merged {
        if count < n {
            let values: Vec<String> = variants[first]
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            d.notes
                .push(format!("in the variant with {}", values.join(", ")));
        }
        diags.push(d);
    }
}

fn check_variant(
    k: &ast::Kernel,
    src: &str,
    fns: &FnTable,
    header: &Header,
    values: &[(String, i64)],
    diags: &mut Vec<Diagnostic>,
) -> (hir::Kernel, usize) {
    let threads = header::launch_threads(header, values, diags);
    let min_ctas = header::launch_min_ctas(header, values, threads, diags);
    let mut cx = Cx::new(src, fns, header, threads.unwrap_or(32));
    let mut dims = header.dims.clone();
    for (name, v) in values {
        if let Some(id) = header.dim_id(name) {
            cx.dim_consts[id.0 as usize] = Some(*v);
            dims[id.0 as usize].constant = Some(*v);
        }
        cx.bind(name, Binding::Const(*v));
    }
    let grid = header
        .grid
        .as_ref()
        .and_then(|(es, _)| grid_exprs(&mut cx, es));
    let body = cx.block(&k.body);
    let params = header
        .params
        .iter()
        .zip(&cx.written)
        .map(|(p, &w)| {
            let mut p = p.clone();
            if let ParamKind::Tensor { written, .. } = &mut p.kind {
                *written = w;
            }
            p
        })
        .collect();
    let kernel = hir::Kernel {
        name: k.name.name.clone(),
        span: k.span,
        threads: threads.unwrap_or(32),
        min_ctas,
        params,
        dims,
        aligned: header.aligned.clone(),
        variant: values.to_vec(),
        grid,
        locals: cx.locals,
        body,
        uniformity: uniformity::Facts::default(),
    };
    diags.append(&mut cx.diags);
    let (errors, facts) = uniformity::check(&kernel);
    diags.extend(errors);
    let kernel = hir::Kernel {
        uniformity: facts,
        ..kernel
    };
    (kernel, cx.expr_nodes)
}

/// P0311 for a kernel whose variants together exceed
/// [`cx::MAX_TOTAL_EXPR_NODES`] expressions.
fn too_much_tuning(k: &ast::Kernel, variants: usize, nodes: usize, total: usize) -> KernelError {
    let span = k
        .attrs
        .iter()
        .find(|a| matches!(a.kind, ast::AttrKind::Autotune(_)))
        .map_or(k.name.span, |a| a.span);
    KernelError::TooMuchTuning {
        variants,
        nodes,
        total,
        span,
    }
}

/// `@grid(...)`: i32 expressions over dims and constants only.
fn grid_exprs(cx: &mut Cx, es: &[ast::Expr]) -> Option<Vec<hir::Expr>> {
    cx.grid_mode = true;
    let scope = grid_scope(cx);
    let saved = std::mem::replace(&mut cx.scopes, vec![scope]);
    let out: Vec<Option<hir::Expr>> = es
        .iter()
        .map(|e| {
            let x = cx.expr_of(e, ast::ScalarTy::I32, "a grid size")?;
            if grid_expr_ok(&x) {
                return Some(x);
            }
            cx.report(KernelError::GridNotHost { span: e.span });
            None
        })
        .collect();
    cx.scopes = saved;
    cx.grid_mode = false;
    out.into_iter().collect()
}

/// Dims and autotuned constants: what `@grid` may name.
fn grid_scope(cx: &Cx) -> cx::Scope {
    cx.scopes
        .iter()
        .flat_map(|s| s.iter())
        .filter(|(_, b)| matches!(b, Binding::Dim(_) | Binding::Const(_)))
        .map(|(n, b)| (n.clone(), b.clone()))
        .collect()
}

fn grid_expr_ok(e: &hir::Expr) -> bool {
    use crate::ast::BinOp::*;
    use hir::{Builtin, ExprKind as K};
    match &e.kind {
        K::Const(_) | K::Dim(_) => true,
        K::Binary(Add | Sub | Mul | Div | Rem, a, b) => grid_expr_ok(a) && grid_expr_ok(b),
        K::Builtin(Builtin::Cdiv | Builtin::Min | Builtin::Max, xs) => xs.iter().all(grid_expr_ok),
        _ => false,
    }
}
