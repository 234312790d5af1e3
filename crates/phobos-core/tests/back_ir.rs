//! The backend IR: its text form for the seed kernels (snapshots), the
//! verifier on every corpus kernel, and the verifier catching broken IR.

// Reading the corpus files is the harness, not the IO-free library.
#![allow(clippy::disallowed_methods)]

use phobos_core::backend::ir::{ExprKind, StmtKind};
use phobos_core::backend::{lower, print, verify};

fn variant(src: &str) -> phobos_core::hir::Kernel {
    let (kernels, diags) = phobos_core::check_source(src);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    kernels[0].variants[0].clone()
}

fn corpus() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/in");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("the corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pho"))
        .map(|p| {
            let src = std::fs::read_to_string(&p).expect("read");
            (p.display().to_string(), src)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn lanes_matvec_text_form() {
    let src = include_str!("seed/lanes_matvec.pho");
    let f = lower::lower(&variant(src), "lanes_matvec");
    insta::assert_snapshot!("back_ir_lanes_matvec", print::print(&f));
}

#[test]
fn staged_matvec_text_form_shows_the_copy_and_its_barriers() {
    let src = include_str!("seed/staged_matvec.pho");
    let f = lower::lower(&variant(src), "staged_matvec__K256");
    let text = print::print(&f);
    assert!(text.contains("= tile_copy"), "{text}");
    assert!(text.contains("barrier bar0 (before-tile buf0)"), "{text}");
    assert!(text.contains("barrier bar1 (after-copy buf0)"), "{text}");
    insta::assert_snapshot!("back_ir_staged_matvec", text);
}

#[test]
fn i8_matvec_sum_lowers_to_dp4a() {
    let src = include_str!("seed/i8_matvec.pho");
    let f = lower::lower(&variant(src), "i8_matvec");
    let dp4a = f
        .exprs
        .iter()
        .filter(|(_, e)| matches!(e.kind, ExprKind::Dp4aSum { .. }))
        .count();
    assert_eq!(dp4a, 1);
    assert!(!f
        .exprs
        .iter()
        .any(|(_, e)| matches!(e.kind, ExprKind::RunSum(_))));
}

#[test]
fn verifier_accepts_every_corpus_kernel() {
    for (path, src) in corpus() {
        let (kernels, diags) = phobos_core::check_source(&src);
        assert!(diags.iter().all(|d| !d.is_error()), "{path}: {diags:?}");
        for k in &kernels {
            for v in &k.variants {
                let f = lower::lower(v, &v.name);
                if let Err(errors) = verify::verify(&f) {
                    panic!("{path}: {}", errors.join("\n"));
                }
            }
        }
    }
}

#[test]
fn verifier_reports_a_shared_expression_and_a_misplaced_barrier() {
    let src = include_str!("seed/staged_matvec.pho");
    let mut f = lower::lower(&variant(src), "staged_matvec__K256");
    // Use the condition of the first `if` a second time.
    let (cond, if_stmt) = f
        .stmts
        .iter()
        .find_map(|(id, s)| match &s.kind {
            StmtKind::If { cond, .. } => Some((*cond, id)),
            _ => None,
        })
        .expect("an if");
    let dup = f.stmts.push(phobos_core::backend::ir::Stmt {
        kind: StmtKind::If {
            cond,
            then: vec![],
            els: vec![],
        },
    });
    f.stmt_spans.push(f.stmt_span(if_stmt));
    f.body.push(dup);
    // And repeat the first barrier.
    let first_barrier = f.body[0];
    f.body.push(first_barrier);
    let errors = verify::verify(&f).expect_err("broken IR");
    let text = errors.join("\n");
    assert!(text.contains(&format!("{cond} has 2 users")), "{text}");
    assert!(text.contains("bar0 appears 2 times"), "{text}");
}

#[test]
fn every_snippet_of_the_page_compiles_for_every_target() {
    let src = include_str!("seed/snippets.pho");
    for arch in phobos_core::ARCHES {
        let opts = phobos_core::CompileOptions::for_arch(arch);
        let (kernels, diags) = phobos_core::compile(src, "snippets.pho", &opts);
        assert!(diags.iter().all(|d| !d.is_error()), "sm_{arch}: {diags:?}");
        assert!(kernels.len() >= 4);
        for k in &kernels {
            assert!(k.ptx.contains(&format!(".target sm_{arch}")));
            assert!(k
                .ptx
                .contains(&format!(".visible .entry {}(", k.meta.variants[0].entry)));
        }
    }
}
