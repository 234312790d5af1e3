//! `dot` on tiles written element by element, in the simulator with
//! racecheck on: the compiler must place a barrier between the element
//! stores and the `ldmatrix` reads of the first product, and another
//! between those reads and the stores that rewrite the tile for the
//! second. A missing one is a racecheck error, not a wrong number. And
//! an f32 accumulator stored as f16 or bf16, on sm_75 (where bf16 is
//! rounded by hand) and sm_80.

use phobos_conformance::sim_support::Case;

const SQUARES: &str = r#"
@launch(64)
kernel squares(X: tensor<f16>[16, 16], C: tensor<f32>[16, 16]) {
  var s = shared<f16>[16, 16]
  let row = ctx.thread / 4
  let col = (ctx.thread % 4) * 4
  for j in range(0, 4) {
    s[row, col + j] = X[row, col + j]
  }
  var acc = zeros<f32>[16, 16]
  acc += dot(s, trans(s))
  for j in range(0, 4) {
    s[row, col + j] = X[row, col + j] * 2.0
  }
  acc += dot(s, trans(s))
  C[0 :+ 16, 0 :+ 16] = acc
}
"#;

#[test]
fn dot_of_a_tile_written_by_element_stores_is_fenced_both_ways() {
    let src = SQUARES;
    let (kernels, diags) = phobos_core::compile(
        src,
        "squares.pho",
        &phobos_core::CompileOptions::for_arch(80),
    );
    assert!(diags.is_empty(), "{diags:?}");
    // The fill, then a barrier, the first product, a barrier, the refill,
    // a barrier, the second product.
    assert!(
        kernels[0].ptx.matches("bar.sync 0;").count() >= 3,
        "{}",
        kernels[0].ptx
    );
    let o = Case::source(src, "squares.pho", "squares").run([1, 1, 1]);
    let x = o.input("X");
    let mut c = o.expect("C");
    for i in 0..16 {
        for j in 0..16 {
            let s: f64 = (0..16).map(|k| x.f(i * 16 + k) * x.f(j * 16 + k)).sum();
            // X X^T + (2X)(2X)^T.
            c.set_f(i * 16 + j, 5.0 * s);
        }
    }
    o.check("C", &c);
}

const TO_HALF: &str = r#"
@launch(128)
kernel to_half(A: tensor<f16>[M, 16], W: tensor<f16>[N, 16], H: tensor<f16>[M, N], B: tensor<bf16>[M, N]) {
  var a = A[ctx.block.x * 64 :+ 64, 0 :+ 16]
  var w = W[0 :+ 32, 0 :+ 16]
  var acc = zeros<f32>[64, 32]
  acc += dot(a, trans(w))
  H[ctx.block.x * 64 :+ 64, 0 :+ 32] = f16(acc)
  B[ctx.block.x * 64 :+ 64, 0 :+ 32] = bf16(acc)
}
"#;

/// `C[...] = f16(acc)` and `bf16(acc)`: each f32 element rounded to
/// nearest even, masked at ragged bounds. With K = 16 the accumulator is
/// the exact sum rounded once to f32 (one mma step), so the reference
/// rounds the same two times.
#[test]
fn an_f32_accumulator_is_stored_as_f16_and_bf16() {
    for arch_src in [TO_HALF.to_string(), format!("// needs: sm_80\n{TO_HALF}")] {
        let (m, n) = (70usize, 27usize);
        let o = Case::source(&arch_src, "to_half.pho", "to_half")
            .dims(&[("M", m as i64), ("N", n as i64)])
            .run([m.div_ceil(64) as u32, 1, 1]);
        let (a, w) = (o.input("A"), o.input("W"));
        let (mut h, mut b) = (o.expect("H"), o.expect("B"));
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..16).map(|k| a.f(i * 16 + k) * w.f(j * 16 + k)).sum();
                let s = s as f32;
                h.set_f(i * n + j, f64::from(half::f16::from_f32(s)));
                b.set_f(i * n + j, f64::from(half::bf16::from_f32(s)));
            }
        }
        o.check("H", &h);
        o.check("B", &b);
    }
}

/// The stores of `f16(acc)` and `bf16(acc)` assemble for every target
/// (sm_75's bf16 rounding is done by hand).
#[test]
fn half_stores_assemble_with_ptxas() {
    let Some(ptxas) = phobos_conformance::ptxas_or_skip() else {
        return;
    };
    for arch in phobos_core::ARCHES {
        let (kernels, diags) = phobos_core::compile(
            TO_HALF,
            "to_half.pho",
            &phobos_core::CompileOptions::for_arch(arch),
        );
        assert!(diags.is_empty(), "{diags:?}");
        if let Err(e) = phobos_conformance::assemble(&ptxas, "to_half", arch, &kernels[0].ptx) {
            panic!("sm_{arch}: {e}");
        }
    }
}
