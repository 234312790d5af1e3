//! The 8-bit floats `f8e4m3` and `f8e5m2` (docs/language.md, "Types"):
//! storage types that convert with PTX's saturating `cvt` on sm_89 and
//! newer (P0812 below), refuse arithmetic (P0473), and multiply in `dot`
//! with `mma.sync` m16n8k32 `.e4m3`/`.e5m2` (P0811 below sm_89).

mod common;

use phobos_core::render::render;
use phobos_core::{compile, CompileOptions};

/// A one-element-per-thread kernel around `body`, with f8 tensors `P`,
/// `Q` (e4m3), `R` (e5m2) and wider ones `A` (f32), `H` (f16), `D` (f64).
fn k(body: &str) -> String {
    format!(
        "@launch(128)
kernel k(P: tensor<f8e4m3>[N], Q: tensor<f8e4m3>[N], R: tensor<f8e5m2>[N], A: tensor<f32>[N], H: tensor<f16>[N], D: tensor<f64>[N]) {{
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {{
{body}
  }}
}}
"
    )
}

/// The codes `src` gets compiled for `sm_<arch>`, and the rendered text.
fn compiled_codes(src: &str, arch: u32) -> (Vec<&'static str>, String) {
    let (_, diags) = compile(src, "k.pho", &CompileOptions::for_arch(arch));
    let text = render(&diags, "k.pho", src, false);
    (diags.iter().map(|d| d.code.as_str()).collect(), text)
}

#[test]
fn conversions_use_the_saturating_cvt_and_raise_the_version_on_sm_89() {
    let src = k("    Q[i] = f8e4m3(A[i])
    R[i] = f8e5m2(H[i])
    A[i] = f32(P[i]) + f32(R[i])
    H[i] = f16(P[i])");
    let p = common::ptx_of(&src, 89).concat();
    common::assert_count(&p, "cvt.rn.satfinite.e4m3x2.f32", 1);
    common::assert_count(&p, "cvt.rn.satfinite.e5m2x2.f32", 1);
    common::assert_count(&p, "cvt.rn.f16x2.e4m3x2", 2);
    common::assert_count(&p, "cvt.rn.f16x2.e5m2x2", 1);
    // ptxas 12.9: "cvt with .e4m3x2/.e5m2x2 on sm_89 requires PTX ISA
    // .version 8.1"; sm_90 has them from 7.8, its floor.
    assert!(p.contains(".version 8.1\n"), "{p}");
    let p90 = common::ptx_of(&src, 90).concat();
    assert!(p90.contains(".version 7.8\n"), "{p90}");
    // Bytes in memory.
    assert!(
        p.contains("st.global.u8") && p.contains("ld.global.nc.u8"),
        "{p}"
    );
}

#[test]
fn a_constant_is_encoded_as_the_conversion_would_round_it() {
    // 1.0625 is halfway between 1.0 (0x38) and 1.125 (0x39): even is 0x38.
    // In e5m2, 3.0 is 0x42.
    let p = common::ptx_of(&k("    Q[i] = 1.0625\n    R[i] = 3.0"), 75).concat();
    assert!(p.contains("mov.b32 %r") && p.contains(", 56;"), "{p}");
    assert!(p.contains(", 66;"), "{p}");
    assert!(!p.contains("cvt.rn.satfinite"), "{p}");
}

#[test]
fn copies_compile_for_every_target_and_conversions_need_sm_89() {
    // Loads, stores, select and shuffles move bytes: every target.
    let copy = k("    Q[i] = select(i > 3, P[i], Q[i])");
    for arch in [75, 80, 86, 89] {
        let p = common::ptx_of(&copy, arch).concat();
        assert!(!p.contains("cvt.rn"), "sm_{arch}:\n{p}");
    }
    let convert = k("    A[i] = f32(P[i])");
    for arch in [75, 80, 86] {
        let (codes, text) = compiled_codes(&convert, arch);
        assert_eq!(codes, ["P0812"], "sm_{arch}:\n{text}");
        assert!(
            text.contains(&format!(
                "f8e4m3 needs sm_89 or newer, and this kernel is compiled for sm_{arch}"
            )),
            "{text}"
        );
        assert!(text.contains("`.e4m3x2`"), "{text}");
    }
    let (codes, text) = compiled_codes(&k("    R[i] = f8e5m2(A[i])"), 80);
    assert_eq!(codes, ["P0812"], "{text}");
    assert!(text.contains("f8e5m2 needs sm_89"), "{text}");
}

#[test]
fn arithmetic_comparisons_and_builtins_on_8_bit_floats_are_refused() {
    common::gives_each(
        k,
        &[
            ("    Q[i] = P[i] + Q[i]", "P0473"),
            ("    Q[i] = P[i] * 2.0", "P0473"),
            ("    let b = P[i] < Q[i]", "P0473"),
            ("    let b = P[i] == Q[i]", "P0473"),
            ("    Q[i] = -P[i]", "P0473"),
            ("    Q[i] += P[i]", "P0473"),
            ("    Q[i] = max(P[i], Q[i])", "P0473"),
            ("    Q[i] = abs(P[i])", "P0473"),
            ("    Q[i] = f8e4m3(D[i])", "P0473"),
            ("    R[i] = f8e5m2(D[i])", "P0473"),
            ("    Q[i] = 449.0", "P0403"),
            ("    R[i] = -60000.0", "P0403"),
        ],
    );
    // What the notes suggest instead is accepted.
    common::accepted(&k(
        "    Q[i] = f8e4m3(f32(P[i]) * 2.0)\n    Q[i] = f8e4m3(f32(D[i]))\n    Q[i] = 448.0\n    R[i] = -57344.0\n    Q[i] = f8e4m3(R[i])",
    ));
    let src = k("    Q[i] = P[i] + Q[i]");
    let text = common::refusal(
        "f8_add",
        &src,
        "P0473",
        "`+` does not apply to f8e4m3: 8-bit floats are stored, converted and multiplied by `dot`, not computed with",
        5,
    );
    assert!(text.contains("f8e4m3(f32(a) * s)"), "{text}");
    let text = common::refusal(
        "f8_from_f64",
        &k("    Q[i] = f8e4m3(D[i])"),
        "P0473",
        "f64 does not convert to f8e4m3 directly",
        5,
    );
    assert!(text.contains("f8e4m3(f32(x))"), "{text}");
    let text = common::refusal(
        "f8_literal",
        &k("    Q[i] = 449.0"),
        "P0403",
        "the literal 449.0 does not fit in f8e4m3 (8-bit floats saturate to their largest finite value)",
        5,
    );
    assert!(text.contains("the largest finite f8e4m3 is 448"), "{text}");
}

#[test]
fn sums_and_lane_collectives_of_8_bit_floats_are_refused() {
    let run = "@launch(32)
kernel k(P: tensor<f8e4m3>[32, 8], O: tensor<f32>[32]) {
  let t = ctx.thread
  O[t] = f32(sum(P[t, 0 :+ 8]))
}
";
    assert_eq!(common::codes(run), ["P0473"]);
    let lanes = "@launch(32)
kernel k(P: tensor<f8e5m2>[32], O: tensor<f32>[32]) {
  let t = ctx.thread
  O[t] = f32(max<over ctx.lane>(P[t]))
}
";
    assert_eq!(common::codes(lanes), ["P0473"]);
}

/// An f8 GEMM: `dot(a, trans(w))` on `t` tiles into f32.
fn gemm(t: &str, b: &str) -> String {
    format!(
        "@launch(128)
kernel k(A: tensor<{t}>[M, K], W: tensor<{t}>[N, K], C: tensor<f32>[M, N]) {{
  let r = ctx.block.x * 64
  let c = ctx.block.y * 64
  var acc = zeros<f32>[64, 64]
  var a = A[r :+ 64, 0 :+ 32]
  var w = W[c :+ 64, 0 :+ 32]
  acc += dot(a, {b})
  C[r :+ 64, c :+ 64] = acc
}}
"
    )
}

#[test]
fn f8_products_are_mma_m16n8k32_from_sm_89_and_p0811_below() {
    for (t, ptx) in [("f8e4m3", "e4m3"), ("f8e5m2", "e5m2")] {
        let src = gemm(t, "trans(w)");
        for arch in [89, 90] {
            let p = common::ptx_of(&src, arch).concat();
            common::assert_count(
                &p,
                &format!("mma.sync.aligned.m16n8k32.row.col.f32.{ptx}.{ptx}.f32"),
                8,
            );
            // ptxas 12.9: "mma with FP8 floating point type requires PTX
            // ISA .version 8.4".
            assert!(p.contains(".version 8.4\n"), "{p}");
        }
        for arch in [75, 80, 86] {
            let (codes, text) = compiled_codes(&src, arch);
            assert_eq!(codes, ["P0811"], "{text}");
            assert!(
                text.contains(&format!("a `dot` of {t} tiles needs sm_89 or newer"))
                    && text.contains(".e4m3/.e5m2"),
                "{text}"
            );
        }
        // The 8-bit layout: the second operand only as `trans(w)`.
        let (codes, text) = compiled_codes(&gemm(t, "w"), 89);
        assert_eq!(codes, ["P0456"], "{text}");
    }
}
