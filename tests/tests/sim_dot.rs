//! `dot` on tiles written element by element, in the simulator with
//! racecheck on: the compiler must place a barrier between the element
//! stores and the `ldmatrix` reads of the first product, and another
//! between those reads and the stores that rewrite the tile for the
//! second. A missing one is a racecheck error, not a wrong number.

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
