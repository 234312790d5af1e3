//! `tanh` is accurate to the project's float tolerance (1e-5 relative
//! against float64, with no absolute floor) over small, medium and large
//! arguments of both signs, run in the simulator on the emitted PTX.

use phobos_conformance::sim_support::{Case, Tensor};

const TANH: &str = r#"
@launch(128)
kernel tanh_all(X: tensor<f32>[N], Y: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    Y[i] = tanh(X[i])
  }
}
"#;

#[test]
fn tanh_is_accurate_for_small_and_large_arguments() {
    let mut xs: Vec<f32> = Vec::new();
    for e in -12..=3 {
        for m in [1.0f32, 1.37, 2.9, 5.5, 7.77] {
            let x = m * 2f32.powi(e);
            xs.extend([x, -x]);
        }
    }
    xs.extend([0.0, -0.0, 0.1249, 0.1251, 9.0, 20.0, 100.0, -100.0]);
    let n = xs.len();
    let mut c = Case::source(TANH, "tanh.pho", "tanh_all")
        .dims(&[("N", n as i64)])
        .init("X", Tensor::from_f32(&[n], &xs))
        .floor(0.0);
    c.prepare();
    let o = c.run([n.div_ceil(128) as u32, 1, 1]);
    let mut want = o.expect("Y");
    for (i, &x) in xs.iter().enumerate() {
        want.set_f(i, f64::from(x).tanh());
    }
    o.check("Y", &want);
}
