//! `tanh`, `sin`, `cos`, `log` and `log2` are accurate to the project's
//! float tolerance (1e-5 relative against float64, with no absolute floor)
//! over small, medium and large arguments, run in the simulator on the
//! emitted PTX. (The simulator computes `.approx` instructions exactly, so
//! these tests check the emitted formulas, which avoid `.approx` wherever
//! its error would exceed the tolerance on a GPU.)

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

const MATH: &str = r#"
@launch(128)
kernel math_all(X: tensor<f32>[N], S: tensor<f32>[N], C: tensor<f32>[N], L: tensor<f32>[N], L2: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    let x = X[i]
    S[i] = sin(x)
    C[i] = cos(x)
    L[i] = log(abs(x))
    L2[i] = log2(abs(x))
  }
}
"#;

#[test]
fn sin_cos_and_log_are_accurate_near_their_zeros_and_far_out() {
    let mut xs: Vec<f32> = Vec::new();
    for e in -10..=14 {
        for m in [1.0f32, 1.37, 2.9, 5.5, 7.77] {
            let x = m * 2f32.powi(e);
            xs.extend([x, -x]);
        }
    }
    // Near the zeros of sin and cos, and near 1 for log.
    for k in 1..=20 {
        let half_pi = std::f32::consts::FRAC_PI_2;
        xs.extend([k as f32 * half_pi, -(k as f32) * half_pi]);
    }
    xs.extend([
        1.0, 1.0000001, 0.9999999, 1.001, 0.999, 2.0, 0.5, 1e-30, 3e38,
    ]);
    let n = xs.len();
    let mut c = Case::source(MATH, "math.pho", "math_all")
        .dims(&[("N", n as i64)])
        .init("X", Tensor::from_f32(&[n], &xs))
        .floor(0.0);
    c.prepare();
    let o = c.run([n.div_ceil(128) as u32, 1, 1]);
    let (mut s, mut co, mut l, mut l2) =
        (o.expect("S"), o.expect("C"), o.expect("L"), o.expect("L2"));
    for (i, &x) in xs.iter().enumerate() {
        let x = f64::from(x);
        s.set_f(i, x.sin());
        co.set_f(i, x.cos());
        l.set_f(i, x.abs().ln());
        l2.set_f(i, x.abs().log2());
    }
    o.check("S", &s);
    o.check("C", &co);
    o.check("L", &l);
    o.check("L2", &l2);
}
