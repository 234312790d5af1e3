//! Every kernel of the language page (`tests/seed/*.pho`, copied from the
//! page exactly) is accepted, and its HIR has the shape the page describes.

use phobos_core::hir::{self, ExprKind, Group, LocalKind, ParamKind, StmtKind};

/// The page's kernels, compiled into the test: phobos-core's tests stay IO-free.
fn source(name: &str) -> &'static str {
    match name {
        "lanes_matvec.pho" => include_str!("seed/lanes_matvec.pho"),
        "lane_max.pho" => include_str!("seed/lane_max.pho"),
        "i8_matvec.pho" => include_str!("seed/i8_matvec.pho"),
        "staged_matvec.pho" => include_str!("seed/staged_matvec.pho"),
        _ => include_str!("seed/snippets.pho"),
    }
}

fn check(name: &str) -> Vec<hir::CheckedKernel> {
    let src = source(name);
    let (kernels, diags) = phobos_core::check_source(src);
    let shown = phobos_core::render::render(&diags, name, src, false);
    assert!(diags.is_empty(), "{name} was rejected:\n{shown}");
    kernels
}

fn param_written(k: &hir::Kernel, name: &str) -> bool {
    k.params
        .iter()
        .any(|p| p.name == name && matches!(p.kind, ParamKind::Tensor { written: true, .. }))
}

#[test]
fn lanes_matvec() {
    let ks = check("lanes_matvec.pho");
    assert_eq!(ks.len(), 1);
    let k = &ks[0].variants[0];
    assert_eq!(k.threads, 128);
    assert!(param_written(k, "y") && !param_written(k, "W") && !param_written(k, "x"));
    assert_eq!(
        k.dims.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["N", "K"]
    );
    assert_eq!(k.aligned, vec![(hir::DimId(1), 128)]);
}

#[test]
fn lane_max_inlines_the_combine_fn() {
    let ks = check("lane_max.pho");
    let k = &ks[0].variants[0];
    let StmtKind::Let { init, .. } = &k.body.stmts[1].kind else {
        panic!("not a let")
    };
    let ExprKind::Collective {
        group,
        combine: Some(c),
        ..
    } = &init.kind
    else {
        panic!("not a reduce")
    };
    assert_eq!(*group, Group::Lane { width: 32 });
    assert!(matches!(
        c.body.kind,
        ExprKind::Builtin(hir::Builtin::Max, _)
    ));
}

#[test]
fn i8_matvec() {
    let ks = check("i8_matvec.pho");
    assert_eq!(ks[0].variants[0].threads, 256);
}

#[test]
fn staged_matvec_copies_a_tile() {
    let ks = check("staged_matvec.pho");
    assert_eq!(ks[0].autotune, vec![("K".to_string(), vec![256])]);
    let k = &ks[0].variants[0];
    assert_eq!(k.dims[1].constant, Some(256));
    let tile = k
        .locals
        .iter()
        .find(|l| l.name == "xs")
        .map(|l| l.kind.clone());
    assert_eq!(
        tile,
        Some(LocalKind::Tile {
            elem: phobos_core::ast::ScalarTy::F32,
            shape: vec![1, 256]
        })
    );
    assert!(matches!(k.body.stmts[0].kind, StmtKind::TileCopy { .. }));
}

#[test]
fn snippets() {
    let ks = check("snippets.pho");
    assert_eq!(ks.len(), 4);
}
