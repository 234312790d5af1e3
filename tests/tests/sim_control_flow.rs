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

/// Issue 26 item 4: a loop whose `i += step` after its last trip leaves
/// i32 wraps and runs on (`range(2147483640, 2147483647, 4)` ran to the
/// step limit instead of making 2 trips). With constant bounds the checker
/// refuses it (P0413, `front_errors.rs`); with bounds or a step known only
/// at run time the PTX's `add.s32` carries a `phobos.step` note, and the
/// simulator reports the step that leaves i32 (nothing changes on the GPU).
const STEPS: &str = r#"
@launch(32)
kernel steps(O: tensor<i32>[32], s: i32, e: i32, k: i32) {
  var up = 0
  for i in range(s, e, 4) {
    up += 1
  }
  var down = 0
  for i in range(e, s, -3) {
    down += 1
  }
  var any = 0
  for i in range(s, e, k) {
    any += 1
  }
  var ones = 0
  for i in range(s, e) {
    ones += 1
  }
  O[ctx.thread] = up * 1000000 + down * 10000 + any * 100 + ones
}
"#;

fn steps(s: i32, e: i32, k: i32) -> Case {
    use phobos_conformance::sim_support::Scalar;
    let mut c = Case::source(STEPS, "steps.pho", "steps")
        .scalar("s", Scalar::I32(s))
        .scalar("e", Scalar::I32(e))
        .scalar("k", Scalar::I32(k));
    c.opts.threads = 1;
    c
}

#[test]
fn a_loop_stepping_past_i32_at_run_time_is_reported_not_wrapped() {
    let ptx = steps(0, 0, 1).kernel.ptx;
    // The loops of step 4, -3 and `k` carry the note; the step-1 loop
    // (`i < e` bounds `i + 1`) does not.
    assert_eq!(ptx.matches("// phobos.step i").count(), 3, "{ptx}");
    // In range: counts as written.
    let o = steps(-7, 101, 5).run([1, 1, 1]);
    o.check_f("O", 32, |_| {
        (27 * 1000000 + 36 * 10000 + 22 * 100 + 108) as f64
    });
    let o = steps(2147483600, 2147483644, 4).run([1, 1, 1]);
    o.check_f("O", 32, |_| {
        (11 * 1000000 + 15 * 10000 + 11 * 100 + 44) as f64
    });
    // Past the top: 2147483644 + 4 (the issue's loop), and a run-time step.
    for (s, e, k, says) in [
        (2147483640, 2147483647, 1, "(2147483644 + 4)"),
        (2147483604, 2147483644, 1 << 30, "(2147483604 + 1073741824)"),
        (-2147483647, -2147483640, 1, "(-2147483646 + -3)"),
    ] {
        let r = steps(s, e, k).report([1, 1, 1]);
        assert_eq!(r.kind, phobos_sim::CheckKind::LoopStep, "{s}..{e}: {r}");
        assert!(
            r.message
                .contains("the loop over `i` steps past the end of i32")
                && r.message.contains(says),
            "{s}..{e}: {r}"
        );
    }
}
