//! Names, types, subscripts, attributes and `fn` items: what is accepted,
//! and what is rejected with which code. Several errors in one file are all
//! reported; nothing panics or overflows the stack.

mod common;

use common::{accepted, codes};
use phobos_core::hir::{self, ExprKind, ParamKind, StmtKind};

/// A kernel with a few handy parameters around `body`.
fn k(body: &str) -> String {
    format!(
        "@launch(64)
kernel k(A: tensor<f32>[M, N], B: tensor<i8>[1, 64], C: tensor<i32>[1, 64], s: f32) {{
  let i = ctx.thread
{body}
}}
"
    )
}

#[test]
fn literals_adapt_to_their_use() {
    accepted(&k("  var acc: f32 = 0\n  acc += A[0, i] * 2 + s\n  let h: u8 = 255\n  let big: i64 = 3_000_000_000\n  C[0, i] = 0x10 + i32(h) + i32(big)\n  A[0, i] = acc"));
}

#[test]
fn no_implicit_conversions() {
    common::gives_each(
        k,
        &[
            (
                "  let a: f32 = 1.0\n  let b: i32 = 2\n  C[0, i] = a + b",
                "P0400",
            ),
            ("  let a = i + 1.5\n  C[0, i] = a", "P0403"),
            ("  let h: u8 = 300\n  C[0, i] = i32(h)", "P0403"),
            ("  A[0, i] = C[0, i]", "P0401"),
            ("  let c = bool(s)\n  C[0, i] = select(c, 1, 0)", "P0404"),
        ],
    );
}

#[test]
fn conversions_and_math_builtins() {
    accepted(&k("  let x = A[0, i]\n  let y = fma(x, 2.0, sqrt(abs(x))) + exp2(floor(x)) + tanh(ceil(x))\n  let n = cdiv(N, 64) + min(i, 3) + max(1, i)\n  A[0, i] = select(y > 0.0, y, f32(n))\n  C[0, i] = i32(y) + popcount(u32(n))"));
    common::gives_each(
        k,
        &[
            ("  A[0, i] = sqrt(i)", "P0407"),
            ("  A[0, i] = max(s, 1.0, 2.0)", "P0204"),
        ],
    );
}

#[test]
fn names_and_assignment() {
    common::gives_each(
        k,
        &[
            ("  A[0, i] = missing", "P0200"),
            ("  let x = 1\n  x = 2\n  C[0, i] = x", "P0207"),
            ("  N = 3", "P0207"),
            ("  A + 1.0", "P0408"),
            ("  i + 1", "P0411"),
        ],
    );
}

#[test]
fn several_errors_in_one_file() {
    let src = k(
        "  let a = nope\n  let b: i32 = 1.5\n  C[0, i] = a + b\n  let = 4\n  A[0, i] = s + other",
    );
    assert_eq!(codes(&src), ["P0200", "P0403", "P0100", "P0200"]);
}

#[test]
fn runs_and_run_builtins() {
    let ks = accepted(&k("  let k = i * 8\n  let w = word(B[0, k :+ 8], 1)\n  let d = dp4a(w, word(B[0, k :+ 8], 0), 0)\n  let e = elem(i32(B[0, k :+ 8]), 7)\n  store(C[0, k :+ 4], 2, d + e + sum(i32(B[0, k :+ 4])))\n  A[0, k :+ 4] = A[1, k :+ 4] * 2.0"));
    let body = &ks[0].variants[0].body.stmts;
    assert!(body.iter().any(|s| matches!(
        &s.kind,
        StmtKind::RunStore {
            only: Some(_),
            len: 4,
            ..
        }
    )));
    assert!(body
        .iter()
        .any(|s| matches!(&s.kind, StmtKind::RunStore { only: None, .. })));
    common::gives_each(
        k,
        &[
            ("  let n = i\n  A[0, 0] = sum(A[0, 0 :+ n])", "P0501"),
            ("  A[0, 0] = sum(A[0, 0 :+ 4] * A[1, 0 :+ 8])", "P0505"),
            ("  A[0, 0] = sum(A[0, i])", "P0506"),
            ("  A[0, 0] = elem(A[0, 0 :+ 4], 4)", "P0507"),
            ("  C[0, 0] = word(A[0, 0 :+ 4], 0)", "P0508"),
            ("  let r = A[0, 0 :+ 4]", "P0409"),
        ],
    );
}

#[test]
fn subscript_shapes() {
    common::gives_each(
        k,
        &[
            ("  A[0, 0] = A[0]", "P0500"),
            ("  var t = A[0 :+ 1, :]", "P0502"),
            ("  A[0, 0] = sum(A[0 :+ 2, 0 :+ 2])", "P0503"),
            ("  A[0, 0] = s[0]", "P0510"),
        ],
    );
}

#[test]
fn tiles_copy_and_store() {
    let src = "@launch(128)
kernel t(x: tensor<f32>[R, 256], y: tensor<f32>[R, 256]) {
  var xs = x[ctx.block.x :+ 2, :]
  y[ctx.block.x :+ 2, :] = xs
}
";
    let ks = accepted(src);
    let v = &ks[0].variants[0];
    assert!(matches!(v.body.stmts[1].kind, StmtKind::TileStore { .. }));
    let written: Vec<bool> = v
        .params
        .iter()
        .map(|p| matches!(p.kind, ParamKind::Tensor { written: true, .. }))
        .collect();
    assert_eq!(written, [false, true]);
    let bad = "@launch(128)
kernel t(x: tensor<f32>[R, 256], y: tensor<f32>[R, 256]) {
  var xs = x[0 :+ 2, :]
  y[0 :+ 1, :] = xs
}
";
    assert_eq!(codes(bad), ["P0509"]);
}

#[test]
fn attributes() {
    let body = "kernel k(A: tensor<f32>[N, K]) {\n  A[0, 0] = 1.0\n}\n";
    // The attributes before the kernel, and the one code they give.
    common::gives_each(
        |attributes| format!("{attributes}{body}"),
        &[
            ("@launch(100)\n", "P0302"),
            ("", "P0301"),
            ("@launch(64)\n@aligned(Q = 4)\n", "P0304"),
            ("@launch(64)\n@autotune(K in [N])\n", "P0306"),
            ("@launch(64)\n@tile(4)\n", "P0300"),
            ("@launch(64)\n@launch(64)\n", "P0307"),
            ("@launch(64)\n@grid(ctx.lane)\n", "P0308"),
            ("@launch(64, min_ctas = 0)\n", "P0313"),
            ("@launch(64, min_ctas = 33)\n", "P0313"),
            ("@launch(256, min_ctas = 9)\n", "P0313"),
            ("@launch(64, min_ctas = N)\n", "P0313"),
            ("@launch(64, blocks = 2)\n", "P0100"),
            // Skipped to the `)` closing `@launch(`, groups whole: one error
            // (a second at the `)` of `f(x)` before), and no hang at a
            // stray closer.
            ("@launch(64, bad = f(x))\n", "P0100"),
            ("@launch(64, bad = [1, (2)], {3})\n", "P0100"),
        ],
    );
    assert!(codes(&format!("@launch(64, ] )\n{body}")).contains(&"P0100"));
    // `min_ctas` becomes `.minnctapersm`, autotuned or not.
    for (attrs, want) in [
        ("@launch(256, min_ctas = 2)\n", ".minnctapersm 2"),
        ("@launch(256, min_ctas = 8,)\n", ".minnctapersm 8"),
        (
            "@autotune(C in [3])\n@launch(128, min_ctas = C + 1)\n",
            ".minnctapersm 4",
        ),
    ] {
        let (ks, diags) = phobos_core::compile(
            &format!("{attrs}{body}"),
            "k.pho",
            &phobos_core::CompileOptions::default(),
        );
        assert!(diags.iter().all(|d| !d.is_error()), "{attrs}: {diags:?}");
        assert!(ks[0].ptx.contains(want), "{attrs}: {}", ks[0].ptx);
    }
    let ks = accepted(&format!(
        "@launch(64)\n@grid(cdiv(N, ctx.warps), K / 4)\n{body}"
    ));
    let grid = ks[0].variants[0].grid.clone().unwrap_or_default();
    assert!(matches!(
        grid[0].kind,
        ExprKind::Builtin(hir::Builtin::Cdiv, _)
    ));
}

#[test]
fn autotune_variants() {
    let src = "@autotune(BLOCK in [4, 8], T in [64, 128])
@launch(T)
kernel k(A: tensor<f32>[1, K], O: tensor<f32>[1, 1]) {
  var acc = 0.0
  for k in range(ctx.thread * BLOCK, K, ctx.threads * BLOCK) {
    acc += sum(A[0, k :+ BLOCK])
  }
  O[0, 0] = sum<over ctx.thread>(acc)
}
";
    let ks = accepted(src);
    let vs = &ks[0].variants;
    assert_eq!(vs.len(), 4);
    assert_eq!(
        vs.iter().map(|v| v.threads).collect::<Vec<_>>(),
        [64, 128, 64, 128]
    );
    assert_eq!(
        vs[3].variant,
        vec![("BLOCK".to_string(), 8), ("T".to_string(), 128)]
    );
    // An error in only one variant says which.
    let bad = src.replace("[4, 8]", "[4, 2000]");
    let (_, diags) = phobos_core::check_source(&bad);
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, "P0501");
    assert!(
        diags[0].notes.iter().any(|n| n.contains("BLOCK = 2000")),
        "{:?}",
        diags[0].notes
    );
}

#[test]
fn fns_are_generic_and_not_recursive() {
    let src = "fn sq(a) = a * a
fn mx(a, b) = max(a, b)
@launch(32)
kernel k(A: tensor<f32>[1, 32], C: tensor<i32>[1, 32]) {
  A[0, ctx.lane] = sq(A[0, ctx.lane]) + mx(A[0, 0], 1.0)
  C[0, ctx.lane] = sq(ctx.lane) + mx(2, C[0, 0])
}
";
    accepted(src);
    assert_eq!(codes("fn f(a) = g(a)\nfn g(a) = f(a) + 1\n"), ["P0210"]);
    assert_eq!(codes("fn f(a) = f(a)\n"), ["P0210"]);
    assert_eq!(codes("fn f(a) = a + b\n"), ["P0200"]);
    assert_eq!(codes("fn max(a, b) = a\n"), ["P0201"]);
}

#[test]
fn reduce_needs_a_two_parameter_fn() {
    let src = "fn one(a) = a
@launch(32)
kernel k(A: tensor<f32>[1, 32]) {
  A[0, ctx.lane] = reduce<over ctx.lane>(A[0, ctx.lane], one)
}
";
    assert_eq!(codes(src), ["P0612"]);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let parens = format!(
        "@launch(32)\nkernel k(A: tensor<f32>[1, 1]) {{\n  A[0, 0] = {}1.0{}\n}}\n",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    assert_eq!(codes(&parens), ["P0101"]);
    let ifs = format!(
        "@launch(32)\nkernel k(A: tensor<f32>[1, 1]) {{\n{}{}\n}}\n",
        "if true {\n".repeat(5_000),
        "}\n".repeat(5_000)
    );
    assert!(codes(&ifs).contains(&"P0101"));
    let negs = format!("fn f(a) = {}a\n", "-".repeat(50_000));
    assert_eq!(codes(&negs), ["P0101"]);
}

#[test]
fn inlining_that_explodes_is_an_error() {
    let mut src = String::from("fn g0(a) = a\n");
    for i in 1..40 {
        src.push_str(&format!("fn g{i}(a) = g{}(a) + g{}(a)\n", i - 1, i - 1));
    }
    src.push_str("@launch(32)\nkernel k(A: tensor<f32>[1, 1]) {\n  A[0, 0] = g39(1.0)\n}\n");
    let c = codes(&src);
    assert!(c.contains(&"P0211"), "{c:?}");
}

#[test]
fn inlining_cannot_deepen_expressions_without_bound() {
    let negs = "-".repeat(100);
    let mut src = String::from("fn g0(a) = a\n");
    for i in 1..30 {
        src.push_str(&format!("fn g{i}(a) = {negs}g{}(a)\n", i - 1));
    }
    src.push_str("@launch(32)\nkernel k(A: tensor<f32>[1, 1]) {\n  A[0, 0] = g29(1.0)\n}\n");
    assert_eq!(codes(&src), ["P0211"]);
}

#[test]
fn unroll_takes_a_factor_from_1_to_32_on_a_constant_step() {
    accepted(&k("  var a: i32 = 0\n  for j in range(0, 64, 4) unroll 4 {\n    a += C[0, j]\n  }\n  C[0, i] = a"));
    accepted(&k(
        "  for j in range(0, i) unroll 1 {\n    C[0, j] = 0\n  }",
    ));
    common::gives_each(
        k,
        &[
            (
                "  for j in range(0, 64) unroll 0 {\n    C[0, j] = 0\n  }",
                "P0414",
            ),
            (
                "  for j in range(0, 64) unroll 33 {\n    C[0, j] = 0\n  }",
                "P0414",
            ),
            (
                "  for j in range(0, 64, i + 1) unroll 2 {\n    C[0, j] = 0\n  }",
                "P0414",
            ),
            (
                "  for j in range(0, 64) unroll {\n    C[0, j] = 0\n  }",
                "P0100",
            ),
        ],
    );
}

#[test]
fn inf_and_nan_are_float_literals() {
    // They take the float type their use needs, like `1.0`, and stay
    // infinite: `1e39` would not fit in f32, `inf` is meant to.
    let ks = accepted(&k(
        "  var m = -inf\n  m = max(m, A[0, i])\n  let d: f64 = inf\n  let h: f16 = -inf\n  let q = nan\n  A[0, i] = select(m > q, m, f32(d) + f32(h))",
    ));
    let body = &ks[0].variants[0].body.stmts;
    let StmtKind::Let { init, .. } = &body[1].kind else {
        panic!("expected the let of m: {:?}", body[1].kind)
    };
    assert_eq!(init.ty, hir::Ty::Scalar(phobos_core::ast::ScalarTy::F32));
    assert!(
        matches!(init.kind, ExprKind::Const(hir::ConstVal::Float(v)) if v == f64::NEG_INFINITY)
    );
    // Where an integer is needed they are refused as any float literal is;
    // a decimal literal that rounds to infinity still does not fit.
    common::gives_each(
        k,
        &[
            ("  let n: i32 = inf\n  C[0, i] = n", "P0403"),
            ("  C[0, i] = i + nan", "P0403"),
            ("  A[0, i] = 1e39", "P0403"),
            ("  let h: f16 = 1e400\n  A[0, i] = f32(h)", "P0403"),
            // They are reserved words: not a name to bind.
            ("  let inf = 1.0\n  A[0, i] = inf", "P0100"),
        ],
    );
}

#[test]
fn break_and_continue_need_a_loop() {
    common::each_gives(
        k,
        &["P0415"],
        &[
            "  if i > 3 {\n    break\n  }\n  A[0, i] = s",
            "  continue\n  A[0, i] = s",
        ],
    );
    // `return` may go anywhere; `break` leaves the innermost loop, here a `while`.
    accepted(&k("  if i > 3 {\n    return\n  }\n  for j in range(0, 4) {\n    while true {\n      break\n    }\n    continue\n  }\n  A[0, i] = s"));
    // A loop its own break leaves cannot be unrolled; an inner loop's break is not its own.
    assert_eq!(
        codes(&k(
            "  for j in range(0, 8) unroll 2 {\n    if A[0, j] > s {\n      break\n    }\n  }"
        )),
        ["P0414"]
    );
    accepted(&k(
        "  for j in range(0, 8) unroll 2 {\n    while true {\n      break\n    }\n  }",
    ));
    // A while condition is a bool.
    assert_eq!(codes(&k("  while i {\n    A[0, i] = s\n  }")), ["P0401"]);
}

/// Issue 26 item 4: `for i in range(2147483640, 2147483647, 4)` wrapped
/// after its second trip and ran on; a loop of constant bounds whose step
/// after the last trip leaves i32 is refused (P0413), and so is a `stages`
/// ring that would compute a trip's start past it. At the edge it checks.
#[test]
fn a_loop_that_steps_past_i32_is_p0413() {
    common::gives_each(
        k,
        &[
            (
                "  for j in range(2147483640, 2147483647, 4) {\n    C[0, i] = j\n  }",
                "P0413",
            ),
            (
                "  for j in range(2147483600, 2147483647, 40) {\n    C[0, i] = j\n  }",
                "P0413",
            ),
            (
                "  for j in range(-2147483640, -2147483648, -5) {\n    C[0, i] = j\n  }",
                "P0413",
            ),
        ],
    );
    let (_, diags) = phobos_core::check_source(&k(
        "  for j in range(2147483640, 2147483647, 4) {\n    C[0, i] = j\n  }",
    ));
    let text = format!("{:?}", diags[0]);
    assert!(
        text.contains("last trip is 2147483644, and 2147483648 does not fit"),
        "{text}"
    );
    for ok in [
        "  for j in range(2147483640, 2147483647, 7) {\n    C[0, i] = j\n  }",
        "  for j in range(1, 2147483647, 2) {\n    C[0, i] = j\n  }",
        "  for j in range(2147483647, 0, -1) {\n    C[0, i] = j\n  }",
        "  for j in range(2147483640, 2147483640, 4) {\n    C[0, i] = j\n  }",
        "  for j in range(2147483646, 2147483647) {\n    C[0, i] = j\n  }",
    ] {
        assert_eq!(codes(&k(ok)), Vec::<&str>::new(), "{ok}");
    }
}
