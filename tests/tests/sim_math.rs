//! `tanh`, `sin`, `cos`, `log` and `log2` are accurate to the project's
//! float tolerance (1e-5 relative against float64, with no absolute floor)
//! over small, medium and large arguments, run in the simulator on the
//! emitted PTX with every `.approx` instruction off by its documented
//! maximum error (`Approx::WorstCase`): a result that is right only
//! because the simulator computes `.approx` exactly fails here, as it could
//! on a GPU. `sin` and `cos` are tested where docs/language.md promises
//! their accuracy, |x| < 1e5.

use phobos_conformance::sim_support::{Case, Tensor};
use phobos_sim::Approx;

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
    c.opts.approx = Approx::WorstCase;
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

/// Runs `math_all` on `xs` with the worst-case `.approx` model (or exact).
fn run_math(xs: &[f32], approx: Approx) -> phobos_conformance::sim_support::Outcome {
    let n = xs.len();
    let mut c = Case::source(MATH, "math.pho", "math_all")
        .dims(&[("N", n as i64)])
        .init("X", Tensor::from_f32(&[n], xs))
        .floor(0.0);
    c.opts.approx = approx;
    c.prepare();
    c.run([n.div_ceil(128) as u32, 1, 1])
}

/// Arguments from 2^-10 to 7.77 * 2^14, both signs.
fn arguments() -> Vec<f32> {
    let mut xs: Vec<f32> = Vec::new();
    for e in -10..=14 {
        for m in [1.0f32, 1.37, 2.9, 5.5, 7.77] {
            let x = m * 2f32.powi(e);
            xs.extend([x, -x]);
        }
    }
    xs
}

#[test]
fn sin_and_cos_are_accurate_near_their_zeros_and_far_out_within_their_range() {
    // Up to the documented limit |x| < 1e5.
    let mut xs: Vec<f32> = arguments().into_iter().filter(|x| x.abs() < 1e5).collect();
    for k in 1..=20 {
        let half_pi = std::f32::consts::FRAC_PI_2;
        xs.extend([k as f32 * half_pi, -(k as f32) * half_pi]);
    }
    xs.extend([99_999.0, -99_999.0, 65_536.5, 1e-30, 0.0]);
    let o = run_math(&xs, Approx::WorstCase);
    let (mut s, mut co) = (o.expect("S"), o.expect("C"));
    for (i, &x) in xs.iter().enumerate() {
        let x = f64::from(x);
        s.set_f(i, x.sin());
        co.set_f(i, x.cos());
    }
    o.check("S", &s);
    o.check("C", &co);
}

#[test]
fn log_and_log2_are_accurate_near_one_and_far_out() {
    let mut xs = arguments();
    xs.extend([
        1.0, 1.0000001, 0.9999999, 1.001, 0.999, 2.0, 0.5, 1e-30, 3e38,
    ]);
    let o = run_math(&xs, Approx::WorstCase);
    let (mut l, mut l2) = (o.expect("L"), o.expect("L2"));
    for (i, &x) in xs.iter().enumerate() {
        let x = f64::from(x);
        l.set_f(i, x.abs().ln());
        l2.set_f(i, x.abs().log2());
    }
    o.check("L", &l);
    o.check("L2", &l2);
}

/// Beyond |x| < 1e5 `sin` falls back to `sin.approx.f32`, whose accuracy
/// PTX documents only for |x| <= 100 pi. The exact simulator hides that;
/// the worst-case model does not.
#[test]
fn the_worst_case_model_exposes_sin_beyond_its_documented_range() {
    let xs = [127_303.68f32, -127_303.68];
    let exact = run_math(&xs, Approx::Exact);
    let worst = run_math(&xs, Approx::WorstCase);
    for (i, &x) in xs.iter().enumerate() {
        let want = f64::from(x).sin();
        assert!((exact.after["S"].f(i) - want).abs() < 1e-5, "exact model");
        assert!(worst.after["S"].f(i).is_nan(), "worst-case model");
    }
}
