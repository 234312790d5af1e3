//! Early exits (`break`, `continue`, `return`) and the barriers the
//! compiler places: none where some threads may have left (a hazard there
//! is refused with P0802, never compiled into a barrier that deadlocks),
//! and the usual ones where every thread is still present. Kernels that
//! compile run in the simulator with racecheck and synccheck on and are
//! compared with a Rust reference.

use phobos_conformance::sim_support::{Case, Tensor};

/// The diagnostic codes of compiling `src` as `k.pho`, and their text.
fn codes(src: &str) -> (Vec<&'static str>, String) {
    phobos_conformance::diagnostic_codes(src, "k.pho")
}

#[test]
fn a_tile_written_after_a_varying_return_is_refused() {
    // Threads past `n` leave; the others write their element and read a
    // neighbour's: the barrier between would wait for threads that left.
    let src = r#"
@launch(64)
kernel k(X: tensor<f32>[1, 64], Y: tensor<f32>[64], n: i32) {
  var t = X[0 :+ 1, 0 :+ 64]
  let i = ctx.thread
  if i >= n {
    return
  }
  t[0, i] = 2.0 * t[0, i]
  Y[i] = t[0, (i + 1) % 64]
}
"#;
    let (codes, text) = codes(src);
    assert_eq!(codes, ["P0802"], "{text}");
    assert!(text.contains("`return`"), "{text}");
}

#[test]
fn a_tile_hazard_in_a_loop_left_by_a_varying_break_is_refused() {
    let src = r#"
@launch(64)
kernel k(X: tensor<f32>[1, 64], Y: tensor<f32>[64]) {
  var t = X[0 :+ 1, 0 :+ 64]
  let i = ctx.thread
  for j in range(0, 4) {
    if t[0, i] > 1.0 {
      break
    }
    t[0, i] = t[0, (i + 1) % 64] + 1.0
  }
  Y[i] = t[0, i]
}
"#;
    let (codes, text) = codes(src);
    assert_eq!(codes, ["P0802"], "{text}");
}

/// Tiles before an early exit keep their barriers: the copy is fenced at
/// uniform control, then some threads leave, the others read neighbours.
const EARLY: &str = r#"
@launch(64)
kernel early(X: tensor<f32>[1, 64], Y: tensor<f32>[64], n: i32) {
  var t = X[0 :+ 1, 0 :+ 64]
  let i = ctx.thread
  t[0, i] = t[0, i] * 2.0
  if i >= n {
    return
  }
  var acc = 0.0
  var j = 0
  while j < 64 {
    if j > i {
      break
    }
    if j % 2 == 1 {
      j += 1
      continue
    }
    acc += t[0, j]
    j += 1
  }
  Y[i] = acc
}
"#;

#[test]
fn tiles_before_an_early_exit_keep_their_barriers_and_run_correctly() {
    let x: Vec<f32> = (0..64).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let n = 50;
    let mut want = vec![-7.0f32; 64];
    for (i, w) in want.iter_mut().enumerate().take(n) {
        *w = (0..=i).filter(|j| j % 2 == 0).map(|j| 2.0 * x[j]).sum();
    }
    let c = Case::source(EARLY, "early.pho", "early")
        .init("X", Tensor::from_f32(&[1, 64], &x))
        .init("Y", Tensor::from_f32(&[64], &[-7.0; 64]))
        .scalar("n", phobos_conformance::sim_support::Scalar::I32(n as i32));
    let o = c.run([1, 1, 1]);
    o.check("Y", &Tensor::from_f32(&[64], &want));
    let (codes, text) = codes(EARLY);
    assert!(codes.is_empty(), "{text}");
}
