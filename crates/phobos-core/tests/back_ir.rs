//! The backend IR: its text form for the seed kernels (snapshots), the
//! verifier on every corpus kernel, and the verifier catching broken IR.

mod common;

use common::corpus;
use phobos_core::backend::ir::{ExprKind, StmtKind};
use phobos_core::backend::{lower, print, verify};

/// The IR of the first variant of `src`'s first kernel, lowered under
/// the entry name `entry`.
fn lowered(src: &str, entry: &str) -> phobos_core::backend::ir::Func {
    let (kernels, diags) = phobos_core::check_source(src);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    lower::lower(&kernels[0].variants[0], entry)
}

#[test]
fn lanes_matvec_text_form() {
    let f = lowered(include_str!("seed/lanes_matvec.pho"), "lanes_matvec");
    insta::assert_snapshot!("back_ir_lanes_matvec", print::print(&f));
}

#[test]
fn staged_matvec_text_form_shows_the_copy_and_its_barriers() {
    let text = print::print(&lowered(
        include_str!("seed/staged_matvec.pho"),
        "staged_matvec__K256",
    ));
    assert!(text.contains("= tile_copy"), "{text}");
    assert!(text.contains("barrier bar0 (before-tile buf0)"), "{text}");
    assert!(text.contains("barrier bar1 (after-copy buf0)"), "{text}");
    insta::assert_snapshot!("back_ir_staged_matvec", text);
}

#[test]
fn i8_matvec_sum_lowers_to_dp4a() {
    let f = lowered(include_str!("seed/i8_matvec.pho"), "i8_matvec");
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
                the_param_list_holds_the_parameters_then_the_run_time_dims(&f, v, &path);
            }
        }
    }
}

#[test]
fn verifier_reports_a_shared_expression_and_a_misplaced_barrier() {
    let mut f = lowered(
        include_str!("seed/staged_matvec.pho"),
        "staged_matvec__K256",
    );
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
        let sm = phobos_core::arch::name(arch);
        let opts = phobos_core::CompileOptions::for_arch(arch);
        let (kernels, diags) = phobos_core::compile(src, "snippets.pho", &opts);
        assert!(diags.iter().all(|d| !d.is_error()), "{sm}: {diags:?}");
        assert!(kernels.len() >= 4);
        for k in &kernels {
            let target = format!(".target {}\n", phobos_core::arch::name(arch));
            assert!(k.ptx.contains(&target), "{target}");
            assert!(k
                .ptx
                .contains(&format!(".visible .entry {}(", k.meta.variants[0].entry)));
        }
    }
}

#[test]
fn control_flow_text_form_shows_while_pre_and_else_blocks() {
    let text = print::print(&lowered(
        include_str!("../../../tests/in/control_flow.pho"),
        "control_flow",
    ));
    assert!(text.contains("while {"), "{text}");
    assert!(text.contains("} else {"), "{text}");
    insta::assert_snapshot!("back_ir_control_flow", text);
}

/// `Func::walk_stmts`, `stmt_operands` and `walk_expr` (the IR walks the
/// analyses share) reach every statement and every expression in use once,
/// operands before their users, subscripts before a store's value, and
/// every `break`/`continue` inside a loop.
#[test]
fn the_ir_walks_reach_every_statement_and_expression_once() {
    use phobos_core::backend::ir::{ExprId, Func, StmtId};
    use std::collections::HashMap;
    let mut stores = 0;
    for (path, src) in corpus() {
        let (kernels, diags) = phobos_core::check_source(&src);
        assert!(diags.iter().all(|d| !d.is_error()), "{path}: {diags:?}");
        for k in &kernels {
            for v in &k.variants {
                let f: Func = lower::lower(v, &v.name);
                let mut stmts: Vec<StmtId> = Vec::new();
                f.walk_stmts(&f.body, &mut |s, loops| {
                    if matches!(f.stmts[s].kind, StmtKind::Break | StmtKind::Continue) {
                        assert!(loops > 0, "{path}: {s} outside a loop");
                    }
                    stmts.push(s);
                });
                let mut exprs: Vec<ExprId> = Vec::new();
                for &s in &stmts {
                    let kind = &f.stmts[s].kind;
                    let mut roots = f.stmt_operands(s);
                    if let StmtKind::CtaColl(c) = kind {
                        roots.extend(c.combine.map(|x| x.body));
                    }
                    if let StmtKind::Store(acc, value) = kind {
                        let n = f.accesses[*acc].index.len();
                        assert_eq!(roots[..n], f.accesses[*acc].index[..], "{path}: {s}");
                        assert_eq!(roots[n], *value, "{path}: {s}");
                        stores += 1;
                    }
                    for e in roots {
                        f.walk_expr(e, &mut |x| exprs.push(x));
                    }
                }
                let at: HashMap<ExprId, usize> =
                    exprs.iter().enumerate().map(|(i, &e)| (e, i)).collect();
                assert_eq!(at.len(), exprs.len(), "{path}: an expression walked twice");
                let mut seen: Vec<StmtId> = stmts.clone();
                seen.sort();
                seen.dedup();
                assert_eq!(seen.len(), stmts.len(), "{path}: a statement walked twice");
                // What the verifier counts as used is exactly what the walks reach.
                let used: usize = f
                    .exprs
                    .iter()
                    .filter(|(e, _)| {
                        f.stmts.iter().any(|(_, s)| stmt_uses(&f, &s.kind, *e))
                            || f.exprs.iter().any(|(u, _)| f.operands(u).contains(e))
                    })
                    .count();
                assert_eq!(used, exprs.len(), "{path}: walked {}", exprs.len());
                for &e in &exprs {
                    for o in f.operands(e) {
                        assert!(at[&o] < at[&e], "{path}: {o} after its user {e}");
                    }
                }
            }
        }
    }
    assert!(stores > 10, "only {stores} stores walked");
}

/// Whether statement kind `k` names expression `e` directly.
fn stmt_uses(
    f: &phobos_core::backend::ir::Func,
    k: &StmtKind,
    e: phobos_core::backend::ir::ExprId,
) -> bool {
    let index = |a: &phobos_core::backend::ir::AccessId| f.accesses[*a].index.contains(&e);
    match k {
        StmtKind::Set(_, x) => *x == e,
        StmtKind::Store(a, x) => *x == e || index(a),
        StmtKind::RunStore {
            access,
            value,
            only,
        } => *value == e || *only == Some(e) || index(access),
        StmtKind::TileCopy { access, .. } | StmtKind::TileStore { access, .. } => index(access),
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => *cond == e,
        StmtKind::For(l) => [l.start, l.end, l.step].contains(&e),
        StmtKind::CtaColl(c) => c.arg == e || c.combine.is_some_and(|x| x.body == e),
        StmtKind::Atomic { access, args, .. } => args.contains(&e) || index(access),
        StmtKind::AccStore { access, .. } => index(access),
        StmtKind::AccMap { value, .. } => *value == e,
        StmtKind::AsyncCopy { access, stage, .. } => *stage == e || index(access),
        _ => false,
    }
}

/// The `.param` list is computed once, in lowering: a constant dim is a
/// literal there and has no `.param`, and a `Dim` expression that reads a
/// dim missing from the list is malformed IR (the emitter has no fallback
/// for it).
#[test]
fn verifier_reports_a_dim_without_a_param() {
    use phobos_core::backend::ir::PtxSlot;
    let mut f = lowered(include_str!("seed/lanes_matvec.pho"), "lanes_matvec");
    let (e, d) = f
        .exprs
        .iter()
        .find_map(|(id, e)| match e.kind {
            ExprKind::Dim(d) => Some((id, d)),
            _ => None,
        })
        .expect("a dim read at run time");
    assert!(f.ptx_params.contains(&PtxSlot::Dim(d)));
    f.ptx_params.retain(|s| *s != PtxSlot::Dim(d));
    let errors = verify::verify(&f).expect_err("broken IR");
    let text = errors.join("\n");
    assert!(
        text.contains(&format!("{e}: dim d{} is not a `.param`", d.0)),
        "{text}"
    );
}

/// A constant dim is a literal in the IR and has no `.param`; every other
/// dim has one, after the kernel's parameters in their order, then each
/// tensor map.
fn the_param_list_holds_the_parameters_then_the_run_time_dims(
    f: &phobos_core::backend::ir::Func,
    v: &phobos_core::hir::Kernel,
    path: &str,
) {
    use phobos_core::backend::ir::PtxSlot;
    let n = v.params.len();
    for (i, s) in f.ptx_params.iter().enumerate() {
        match *s {
            PtxSlot::Param(p) => assert_eq!(p.0 as usize, i, "{path}"),
            PtxSlot::Dim(d) => {
                assert!(i >= n, "{path}");
                assert!(v.dims[d.0 as usize].constant.is_none(), "{path}");
            }
            // Tensor maps (sm_90a TMA rings) come last, each once.
            PtxSlot::TensorMap(m) => {
                assert!(i >= n, "{path}");
                assert!((m as usize) < f.tensor_maps.len(), "{path}");
            }
        }
    }
    let run_time = v.dims.iter().filter(|d| d.constant.is_none()).count();
    assert_eq!(
        f.ptx_params.len(),
        n + run_time + f.tensor_maps.len(),
        "{path}"
    );
}
