//! Atomics and `fence()`: the forms the checker accepts, each error path
//! with its code (P0430 placement, P0431 operation and type, P0432 target,
//! P0810 target architecture), uniformity of their results, what they
//! make of the tensor they write, and the PTX they become.

mod common;

use common::{accepted, codes};
use phobos_core::hir::{ParamKind, StmtKind};
use phobos_core::{compile, CompileOptions};

/// A kernel with a tensor of each atomic type around `body`.
fn k(body: &str) -> String {
    format!(
        "@launch(64)
kernel k(
  I: tensor<i32>[64], U: tensor<u32>[64], L: tensor<i64>[64], Q: tensor<u64>[64],
  F: tensor<f32>[64], D: tensor<f64>[64], H: tensor<f16>[64], B: tensor<bf16>[64],
  S: tensor<i8>[64], W: tensor<u16>[64], P: tensor<bool>[64], R: tensor<f32>[64],
) {{
  let i = ctx.thread
{body}
}}
"
    )
}

fn ptx(src: &str, arch: u32) -> String {
    common::ptx_of(src, arch).remove(0)
}

#[test]
fn every_operation_on_every_type_it_is_defined_on() {
    let mut body = String::new();
    let types = [
        ("I", "i32"),
        ("U", "u32"),
        ("L", "i64"),
        ("Q", "u64"),
        ("F", "f32"),
        ("D", "f64"),
        ("H", "f16"),
    ];
    let ops = [
        ("add", "iulqfdh"),
        ("min", "iulq"),
        ("max", "iulq"),
        ("and", "iulq"),
        ("or", "iulq"),
        ("xor", "iulq"),
        ("exch", "iulqfd"),
    ];
    for (op, on) in ops {
        for (t, _) in types {
            if on.contains(&t.to_lowercase()) {
                body.push_str(&format!("  atomic_{op}({t}[i], {t}[63 - i])\n"));
            }
        }
    }
    for (t, _) in &types[..6] {
        body.push_str(&format!(
            "  let c{t} = atomic_cas({t}[i], {t}[1], {t}[2])\n"
        ));
    }
    let kernels = accepted(&k(&body));
    let atomics = kernels[0].variants[0]
        .body
        .stmts
        .iter()
        .filter(|s| matches!(s.kind, StmtKind::Atomic { .. }))
        .count();
    assert_eq!(atomics, 7 + 5 * 4 + 6 + 6);
    // Every target assembles them (ptxas, when present, checks the PTX in
    // `tests/tests/ptx_ptxas.rs` through the corpus kernel atomic_ops).
    let p = ptx(&k(&body), 75);
    for want in [
        "red.global.add.s32",
        "red.global.add.u32",
        "red.global.add.u64",
        "red.global.add.f32",
        "red.global.add.f64",
        "red.global.add.noftz.f16",
        "red.global.min.s32",
        "red.global.max.u64",
        "red.global.and.b32",
        "red.global.xor.b64",
        "atom.global.exch.b32",
        "atom.global.exch.b64",
        "atom.global.cas.b32",
        "atom.global.cas.b64",
    ] {
        assert!(p.contains(want), "no `{want}` in:\n{p}");
    }
}

#[test]
fn the_old_value_goes_into_a_let_var_or_assigned_var() {
    let kernels = accepted(&k("  let a = atomic_add(I[0], 1)\n  var b: f32 = atomic_exch(F[i], 2.0)\n  b = atomic_add(F[0], b)\n  var c = 0\n  c = atomic_max(I[1], i)\n  I[i] = a + c\n  F[i] = b\n  fence()"));
    let body = &kernels[0].variants[0].body.stmts;
    let results: Vec<bool> = body
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Atomic { result, .. } => Some(result.is_some()),
            _ => None,
        })
        .collect();
    assert_eq!(results, [true, true, true, true]);
    assert!(body.iter().any(|s| matches!(s.kind, StmtKind::Fence)));
    let p = ptx(
        &k("  let a = atomic_add(F[0], 1.0)\n  R[i] = a\n  fence()"),
        75,
    );
    assert!(p.contains("atom.global.add.f32"), "{p}");
    assert!(p.contains("fence.acq_rel.gpu;"), "{p}");
}

#[test]
fn a_tensor_written_only_by_atomics_is_written_and_read_coherently() {
    let src = "@launch(32)\nkernel k(C: tensor<u32>[4], O: tensor<u32>[32]) {\n  atomic_add(C[0], 1)\n  O[ctx.thread] = C[1]\n}\n";
    let kernels = accepted(src);
    let written = matches!(
        kernels[0].variants[0].params[0].kind,
        ParamKind::Tensor { written: true, .. }
    );
    assert!(written, "an atomic writes its tensor");
    let p = ptx(src, 80);
    assert!(
        !p.contains(".nc"),
        "a tensor atomics write is not read through the non-coherent path:\n{p}"
    );
}

#[test]
fn an_atomic_inside_an_expression_is_p0430() {
    common::each_gives(
        k,
        &["P0430"],
        &[
            "  I[i] = atomic_add(I[0], 1) + 1",
            "  if atomic_add(I[0], 1) == 0 {\n    I[i] = 1\n  }",
            "  var a = 0\n  a += atomic_add(I[0], 1)",
            "  let f = fence()",
            "  var a = 0\n  a = fence()",
        ],
    );
    // Inside a fn body it is inside an expression too.
    let src = format!(
        "fn bump(x) = atomic_add(x, 1)\n{}",
        k("  let a = bump(I[0])")
    );
    assert!(codes(&src).contains(&"P0430"), "{:?}", codes(&src));
    // And a fn may not take an atomic's name.
    assert_eq!(
        codes(&format!("fn atomic_add(a, b) = a\n{}", k("  I[i] = 1"))),
        ["P0201"]
    );
}

#[test]
fn an_operation_not_defined_on_the_type_is_p0431() {
    for body in [
        "  atomic_and(F[i], 1.0)",
        "  atomic_min(D[i], 1.0)",
        "  atomic_max(F[i], 1.0)",
        "  atomic_xor(H[i], H[0])",
        "  atomic_exch(H[i], H[0])",
        "  atomic_add(S[i], 1)",
        "  atomic_add(W[i], 1)",
        "  atomic_or(P[i], true)",
        "  atomic_cas(B[i], B[0], B[1])",
    ] {
        assert_eq!(codes(&k(body)), ["P0431"], "{body}");
    }
    let (_, diags) = phobos_core::check_source(&k("  atomic_min(F[i], 1.0)"));
    assert!(
        diags[0].notes[0].contains("i32, u32, i64, u64"),
        "{:?}",
        diags[0].notes
    );
    assert!(
        diags[0].notes[1].contains("PTX has no f32 min or max atomic"),
        "{:?}",
        diags[0].notes
    );
}

#[test]
fn half_precision_min_and_max_say_why_they_are_refused() {
    // ptxas 12.9 has f16/bf16 min/max atomics only as vector atomics on
    // global memory (sm_90): none on one element, so P0431 with the reason.
    for (body, ty, op) in [
        ("  atomic_max(H[i], H[0])", "f16", "max"),
        ("  atomic_min(B[i], B[0])", "bf16", "min"),
    ] {
        let (_, diags) = phobos_core::check_source(&k(body));
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].code, "P0431");
        let note = &diags[0].notes[1];
        assert!(
            note.contains(&format!("atom.global.v2.{op}.noftz.{ty}")) && note.contains("sm_90"),
            "{note}"
        );
        assert!(
            note.contains(&format!("`{op}<over ctx.thread>(x)`")),
            "{note}"
        );
    }
    // Integer min/max take no such note.
    let (_, diags) = phobos_core::check_source(&k("  atomic_and(H[i], H[0])"));
    assert_eq!(diags[0].notes.len(), 1, "{:?}", diags[0].notes);
}

#[test]
fn an_atomic_needs_one_element_of_a_tensor_or_tile() {
    common::gives_each(
        k,
        &[
            ("  var x = 0\n  atomic_add(x, 1)", "P0432"),
            ("  atomic_add(I[0 :+ 4], 1)", "P0432"),
            // A register array is the thread's own: refused, not an internal
            // error in lowering (it panicked once arrays and atomics met).
            (
                "  var acc: i32[4] = 0
  atomic_add(acc[1], 1)
  I[i] = acc[1]",
                "P0432",
            ),
            (
                "  var acc: i32[4] = 0
  let old = atomic_max(acc[i & 3], 1)
  I[i] = old",
                "P0432",
            ),
            ("  atomic_add(I[0, 1], 1)", "P0500"),
            ("  atomic_add(I[0])", "P0204"),
            ("  atomic_cas(I[0], 1)", "P0204"),
            ("  fence(1)", "P0204"),
            ("  atomic_add(I[0], 1.5)", "P0403"),
            ("  atomic_add(I[0], F[0])", "P0401"),
            ("  let a: f32 = atomic_add(I[0], 1)\n  F[i] = a", "P0401"),
            (
                "  var a: f32 = 0.0\n  a = atomic_add(I[0], 1)\n  F[i] = a",
                "P0401",
            ),
        ],
    );
}

#[test]
fn the_old_value_varies_between_threads() {
    let src = "@launch(64)\nkernel k(C: tensor<i32>[1], O: tensor<f32>[64]) {\n  let old = atomic_add(C[0], 1)\n  if old == 0 {\n    O[ctx.thread] = sum<over ctx.lane>(1.0)\n  }\n}\n";
    assert_eq!(codes(src), ["P0700"]);
    // Atomics may stand under any control: each is one thread's own.
    accepted(
        "@launch(64)\nkernel k(C: tensor<i32>[64]) {\n  if ctx.lane < 3 {\n    atomic_add(C[ctx.lane], 1)\n  }\n}\n",
    );
    // A tile written by atomics reads as varying, like one written by stores.
    let src = "@launch(64)\nkernel k(A: tensor<i32>[64], O: tensor<i32>[64]) {\n  var t = A[0 :+ 64]\n  atomic_add(t[0], 1)\n  if t[0] > 3 {\n    O[ctx.thread] = sum<over ctx.thread>(1)\n  }\n}\n";
    assert_eq!(codes(src), ["P0701"]);
}

#[test]
fn bf16_add_needs_sm_90() {
    let src = "@launch(32)\nkernel k(B: tensor<bf16>[32], X: tensor<bf16>[32]) {\n  atomic_add(B[0], X[ctx.thread])\n}\n";
    for arch in [75, 80, 86, 89] {
        let sm = phobos_core::arch::name(arch);
        let (kernels, diags) = compile(src, "k.pho", &CompileOptions::for_arch(arch));
        assert!(kernels.is_empty());
        assert_eq!(
            diags.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(),
            ["P0810"],
            "{sm}"
        );
        assert!(diags[0].message.contains("sm_90"), "{}", diags[0].message);
    }
    for arch in [90, phobos_core::arch::SM_90A, 100, 120] {
        assert!(ptx(src, arch).contains("red.global.add.noftz.bf16"));
    }
    // `phobos check` compiles for every default target, so it reports it.
    let (_, diags) = phobos_core::check_for_targets(src, "k.pho", &phobos_core::ARCHES);
    assert!(diags.iter().any(|d| d.code == "P0810"));
}

#[test]
fn tile_atomics_need_no_barrier_between_them_but_do_before_a_read() {
    let src = "@launch(64)\nkernel k(Z: tensor<u32>[64], X: tensor<i32>[64], H: tensor<u32>[64]) {\n  var bins = Z[0 :+ 64]\n  atomic_add(bins[X[ctx.thread] & 63], 1)\n  atomic_add(bins[(X[ctx.thread] + 1) & 63], 1)\n  H[ctx.thread] = bins[ctx.thread]\n}\n";
    let v = phobos_core::backend::compile_variant(
        &phobos_core::check_source(src).0[0].variants[0],
        &phobos_core::source::LineIndex::new(src),
        75,
    )
    .expect("compiles");
    let p = v.entry.text;
    let reds: Vec<usize> = p
        .match_indices("red.shared.add.u32")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(reds.len(), 2, "{p}");
    let read = p.find("ld.shared.u32").expect("the plain read");
    let bars = |a: usize, b: usize| p[a..b].matches("bar.sync").count();
    // None between the two atomics, one after them before the plain read,
    // and one between the copy and the first atomic.
    assert_eq!(bars(reds[0], reds[1]), 0, "{p}");
    assert_eq!(bars(reds[1], read), 1, "{p}");
    assert_eq!(bars(0, reds[0]), 1, "{p}");
}
