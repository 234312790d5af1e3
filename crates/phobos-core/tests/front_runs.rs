//! Math on runs and runs in fns (issue 14, item 4): the elementwise
//! built-ins take runs and broadcast scalars, `fn` items take and return
//! runs, a computed run argument is bound once, and every misuse is a
//! diagnostic with its code.

mod common;

use common::{accepted, codes};
use phobos_core::ast::ScalarTy;
use phobos_core::diag::Diagnostic;
use phobos_core::hir::{self, ExprKind, StmtKind, Ty};

fn diags(src: &str) -> Vec<Diagnostic> {
    phobos_core::check_source(src).1
}

const FNS: &str = "fn gelu(x) = 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
fn lanesum(x) = sum<over ctx.lane>(x)
fn mix(a, b) = a + b
fn twice(x) = 2.0 * x
fn first(x) = elem(x, 0)
";

/// A kernel with the fns above and a few parameters around `body`.
fn k(body: &str) -> String {
    format!(
        "{FNS}@launch(64)
kernel k(A: tensor<f32>[M, N], C: tensor<i32>[1, 64], s: f32) {{
  let i = ctx.thread
{body}
}}
"
    )
}

/// The values of the kernel's run stores, in order.
fn run_store_values(ks: &[hir::CheckedKernel]) -> Vec<hir::Expr> {
    ks[0].variants[0]
        .body
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::RunStore {
                value, only: None, ..
            } => Some((**value).clone()),
            _ => None,
        })
        .collect()
}

const RUN4: Ty = Ty::Run {
    elem: ScalarTy::F32,
    len: 4,
};

#[test]
fn every_elementwise_builtin_takes_runs_and_broadcasts_scalars() {
    let calls = [
        "max(A[0, 0 :+ 4], 0.0)",
        "min(s, A[0, 0 :+ 4])",
        "abs(A[0, 0 :+ 4])",
        "sqrt(A[0, 0 :+ 4])",
        "rsqrt(A[0, 0 :+ 4])",
        "exp(A[0, 0 :+ 4])",
        "exp2(A[0, 0 :+ 4])",
        "log(A[0, 0 :+ 4])",
        "log2(A[0, 0 :+ 4])",
        "sin(A[0, 0 :+ 4])",
        "cos(A[0, 0 :+ 4])",
        "tanh(A[0, 0 :+ 4])",
        "floor(A[0, 0 :+ 4])",
        "ceil(A[0, 0 :+ 4])",
        "fma(A[0, 0 :+ 4], s, 1.0)",
        "fma(s, s, A[1, 0 :+ 4])",
        "select(A[0, 0 :+ 4] > 0.0, A[0, 0 :+ 4], 0.0)",
        "select(s > 0.0, 1.0, A[1, 0 :+ 4])",
        "select(A[0, 0 :+ 4] > s, s, 2.0)",
        "f32(cdiv(C[0, 0 :+ 4], 3))",
        "f32(abs(C[0, 0 :+ 4]) + max(C[0, 0 :+ 4], 1))",
        "f32(popcount(C[0, 0 :+ 4]))",
    ];
    for call in calls {
        let ks = accepted(&k(&format!("  A[1, 0 :+ 4] = {call}")));
        let values = run_store_values(&ks);
        assert_eq!(values.len(), 1, "{call}");
        assert_eq!(values[0].ty, RUN4, "{call}");
    }
    // Scalars stay scalars.
    let ks = accepted(&k("  A[0, i] = max(s, 0.0) + select(s > 0.0, s, 1.0)"));
    assert!(ks[0].variants[0].body.stmts.iter().any(|s| matches!(
        &s.kind,
        StmtKind::Store { value, .. } if value.ty == Ty::Scalar(ScalarTy::F32)
    )));
}

#[test]
fn fns_take_and_return_runs() {
    let ks = accepted(&k("  A[1, 0 :+ 4] = gelu(A[0, 0 :+ 4])\n  A[2, 0 :+ 4] = twice(gelu(A[0, 0 :+ 4] * s))\n  A[0, i] = first(twice(A[0, 0 :+ 4])) + sum(mix(A[0, 0 :+ 4], s))"));
    let values = run_store_values(&ks);
    assert_eq!(values.len(), 2);
    assert!(values.iter().all(|v| v.ty == RUN4));
    // A run load is substituted; a computed run is bound once, as a
    // `Let` whose value is the whole run.
    let run_lets = |e: &hir::Expr| {
        let mut n = 0;
        e.walk(&mut |x| {
            if let ExprKind::Let { value, .. } = &x.kind {
                if value.ty == RUN4 {
                    n += 1;
                }
            }
        });
        n
    };
    assert_eq!(run_lets(&values[0]), 0, "{:?}", values[0]);
    // `A[0, 0 :+ 4] * s` into gelu, gelu's result into twice.
    assert_eq!(run_lets(&values[1]), 2, "{:?}", values[1]);
}

#[test]
fn a_run_where_a_fn_needs_a_scalar_is_reported_inside_the_call() {
    let d = diags(&k("  A[0, i] = lanesum(A[0, 0 :+ 4])"));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].code, "P0615");
    assert!(
        d[0].labels
            .iter()
            .any(|l| !l.primary && l.message == "in this call of `lanesum`"),
        "{d:?}"
    );
    // Runs of different lengths meeting inside a fn body.
    let d = diags(&k("  A[1, 0 :+ 4] = mix(A[0, 0 :+ 4], A[0, 0 :+ 8])"));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].code, "P0505");
    assert!(d[0]
        .labels
        .iter()
        .any(|l| l.message == "in this call of `mix`"));
    // A scalar-only built-in given a run through a fn.
    assert_eq!(
        codes("fn dp(x) = dp4a(x, 1, 0)\n@launch(32)\nkernel k(C: tensor<i32>[1, 64]) {\n  C[0, ctx.lane] = dp(C[0, 0 :+ 4])\n}\n"),
        ["P0409"]
    );
    // A fn that needs a run given a scalar.
    assert_eq!(codes(&k("  A[0, i] = first(s)")), ["P0409"]);
}

#[test]
fn a_run_returned_where_a_scalar_goes_is_p0409() {
    common::each_gives(
        k,
        &["P0409"],
        &[
            "  let r = twice(A[0, 0 :+ 4])",
            "  var v = 0.0\n  v = twice(A[0, 0 :+ 4])\n  A[0, i] = v",
        ],
    );
    let d = diags(&k("  A[0, i] = twice(A[0, 0 :+ 4])"));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].code, "P0409");
    assert!(
        d[0].message.contains("a run of 4 into one element of `A`"),
        "{}",
        d[0].message
    );
    assert_eq!(
        codes(&k(
            "  if twice(A[0, 0 :+ 4]) > 0.0 {\n    A[0, i] = 1.0\n  }"
        )),
        ["P0401"]
    );
}

#[test]
fn run_lengths_and_types_must_agree() {
    // A run of 4 stored into a run of 8.
    let d = diags(&k("  A[1, 0 :+ 8] = twice(A[0, 0 :+ 4])"));
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].code, "P0505");
    assert!(d[0].message.contains("a run of 4 stored into a run of 8"));
    for bad in [
        "select(A[0, 0 :+ 8] > 0.0, A[0, 0 :+ 4], 0.0)",
        "fma(A[0, 0 :+ 4], A[1, 0 :+ 2], 1.0)",
        "max(A[0, 0 :+ 4], A[1, 0 :+ 8])",
    ] {
        assert_eq!(
            codes(&k(&format!("  A[1, 0 :+ 4] = {bad}"))),
            ["P0505"],
            "{bad}"
        );
    }
    common::gives_each(
        k,
        &[
            ("  A[1, 0 :+ 4] = max(A[0, 0 :+ 4], C[0, 0 :+ 4])", "P0400"),
            ("  A[1, 0 :+ 4] = select(A[0, 0 :+ 4], 1.0, 0.0)", "P0401"),
            ("  C[0, 0 :+ 4] = sqrt(C[0, 0 :+ 4])", "P0407"),
            ("  C[0, i] = dp4a(C[0, 0 :+ 4], 1, 0)", "P0409"),
        ],
    );
}
