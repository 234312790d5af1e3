//! Collectives in conditions (issue 34). A varying `if` whose branches
//! read and write tiles is compiled under a predicate, with a fence after
//! its condition; a CTA collective in that condition is hoisted out of it
//! and must run before the predicate is set, in every thread (it ran under
//! the predicate, after the fence: a deadlock). A collective in the
//! condition of a `while` runs before every trip, so it needs every thread
//! (or lane) on every trip: with a varying condition it is refused. The
//! kernels that compile run in the simulator with racecheck and synccheck
//! on, against a Rust reference.

use phobos_conformance::sim_support::{Case, Tensor};

fn codes(src: &str) -> (Vec<&'static str>, String) {
    phobos_conformance::diagnostic_codes(src, "k.pho")
}

/// 64 values, some negative, from `seed`.
fn input(seed: i32) -> Vec<i32> {
    (0..64).map(|i| (i * 37 + seed) % 23 - 8).collect()
}

fn run(src: &str, kernel: &str, x: &[i32]) -> Case {
    let (codes, text) = codes(src);
    assert!(codes.is_empty(), "{text}");
    Case::source(src, "k.pho", kernel)
        .init("X", Tensor::from_i32(&[64], x))
        .init("Y", Tensor::from_i32(&[64], &[-99; 64]))
}

#[test]
fn a_cta_collective_in_a_predicated_if_condition_runs_before_the_predicate() {
    // `min<over ctx.thread>` in the tile subscript of a varying condition;
    // the branch reads and writes the tile, so the `if` is predicated.
    let src = r#"
@launch(64)
kernel k(X: tensor<i32>[64], Y: tensor<i32>[64]) {
  var t = X[0 :+ 64]
  if t[(min<over ctx.thread>(ctx.thread + 3) + ctx.thread) & 63] > 0 {
    t[63 - ctx.thread] = t[ctx.thread] + 1
  }
  Y[ctx.thread] = t[ctx.thread]
}
"#;
    let x = input(5);
    let mut want = x.clone();
    for i in 0..64 {
        if x[(3 + i) & 63] > 0 {
            want[63 - i] = x[i] + 1;
        }
    }
    let o = run(src, "k", &x).run([1, 1, 1]);
    o.check("Y", &Tensor::from_i32(&[64], &want));
}

#[test]
fn a_cta_collective_in_a_condition_around_a_nested_predicated_if() {
    // The shape of fuzz seed 968394: the outer `if` is predicated because
    // of the inner one, which is predicated in turn; the outer condition's
    // CTA collective was run under the outer predicate.
    let src = r#"
@launch(64)
kernel k(X: tensor<i32>[64], Y: tensor<i32>[64]) {
  var t = X[0 :+ 64]
  var u = X[0 :+ 64]
  if t[(max<over ctx.thread>(ctx.thread) - ctx.thread) & 63] >= 0 {
    if ctx.thread < 32 {
      t[ctx.thread] = u[ctx.thread + 32] * 2
    }
  }
  Y[ctx.thread] = t[ctx.thread]
}
"#;
    let x = input(11);
    let want: Vec<i32> = (0..64)
        .map(|i| {
            if x[63 - i] >= 0 && i < 32 {
                x[i + 32] * 2
            } else {
                x[i]
            }
        })
        .collect();
    let o = run(src, "k", &x).run([1, 1, 1]);
    o.check("Y", &Tensor::from_i32(&[64], &want));
}

#[test]
fn a_cta_reduce_in_a_run_sum_in_a_predicated_if_condition() {
    // The shape of fuzz seed 1030304: `reduce<over ctx.thread>` inside a
    // run `sum` in the subscript.
    let src = r#"
fn big(a, b) = max(a, b)
@launch(64)
kernel k(X: tensor<i32>[64], Y: tensor<i32>[64]) {
  var t = X[0 :+ 64]
  if t[(sum(X[ctx.thread & 31 :+ 2]) + reduce<over ctx.thread>(ctx.thread, big)) & 63] < 3 {
    t[63 - ctx.thread] = X[ctx.thread] - t[ctx.thread]
  }
  Y[ctx.thread] = t[ctx.thread]
}
"#;
    let x = input(2);
    let mut want = x.clone();
    for i in 0..64 {
        let s = x[i & 31] + x[(i & 31) + 1];
        if x[((s + 63) & 63) as usize] < 3 {
            want[63 - i] = 0;
        }
    }
    let o = run(src, "k", &x).run([1, 1, 1]);
    o.check("Y", &Tensor::from_i32(&[64], &want));
}

#[test]
fn lane_collectives_in_predicated_if_conditions_and_guards() {
    // A lane collective in the condition of a predicated `if`, and a
    // shuffle on the right of `&&` behind a warp-uniform left side: both
    // run where every lane of the warp is present.
    let src = r#"
@launch(64)
kernel k(X: tensor<i32>[64], Y: tensor<i32>[64]) {
  var t = X[0 :+ 64]
  if t[(sum<over ctx.lane>(1) + ctx.thread) & 63] > 0 {
    t[63 - ctx.thread] = t[ctx.thread] + 1
  }
  if ctx.warp == 0 && t[shfl<xor 1>(ctx.thread) & 63] > 2 {
    t[ctx.thread ^ 32] = t[ctx.thread] * 3
  }
  Y[ctx.thread] = t[ctx.thread]
}
"#;
    let x = input(7);
    let mut a = x.clone();
    for i in 0..64 {
        if x[(32 + i) & 63] > 0 {
            a[63 - i] = x[i] + 1;
        }
    }
    let mut want = a.clone();
    for i in 0..32 {
        if a[i ^ 1] > 2 {
            want[i ^ 32] = a[i] * 3;
        }
    }
    let o = run(src, "k", &x).run([1, 1, 1]);
    o.check("Y", &Tensor::from_i32(&[64], &want));
}

#[test]
fn a_cta_collective_in_a_uniform_while_condition_runs_every_trip() {
    let src = r#"
@launch(64)
kernel k(X: tensor<i32>[64], Y: tensor<i32>[64]) {
  var j = 0
  var n = 0
  while j < max<over ctx.thread>(X[ctx.thread] & 7) {
    j += 1
    n += sum<over ctx.thread>(1)
  }
  Y[ctx.thread] = n + j
}
"#;
    let x = input(3);
    let m = x.iter().map(|v| v & 7).max().unwrap();
    let o = run(src, "k", &x).run([1, 1, 1]);
    o.check("Y", &Tensor::from_i32(&[64], &[m * 64 + m; 64]));
}

#[test]
fn collectives_in_varying_while_conditions_are_refused() {
    // Threads leave the loop at different trips; the condition of a later
    // trip runs only in those still in it.
    for (cond, code) in [
        ("j < max<over ctx.thread>(X[ctx.thread])", "P0701"),
        ("j < sum<over ctx.lane>(X[ctx.thread])", "P0700"),
        ("shfl<xor 1>(j) < 40", "P0700"),
    ] {
        let src = format!(
            "@launch(64)\nkernel k(X: tensor<i32>[64], Y: tensor<i32>[64]) {{\n  var j = ctx.thread\n  while {cond} {{\n    j += 64\n  }}\n  Y[ctx.thread] = j\n}}\n"
        );
        let (codes, text) = codes(&src);
        assert_eq!(codes, [code], "{cond}:\n{text}");
    }
    // Uniform condition, but a varying `break` leaves some threads behind
    // before a later trip's condition.
    let src = r#"
@launch(64)
kernel k(X: tensor<i32>[64], Y: tensor<i32>[64]) {
  var j = 0
  while j < max<over ctx.thread>(X[ctx.thread]) {
    if X[ctx.thread] == j {
      break
    }
    j += 1
  }
  Y[ctx.thread] = j
}
"#;
    let (codes, text) = codes(src);
    assert_eq!(codes, ["P0701"], "{text}");
    // Bound before the loop, the collective runs once in every thread.
    let src = r#"
@launch(64)
kernel k(X: tensor<i32>[64], Y: tensor<i32>[64]) {
  var j = ctx.thread
  let m = max<over ctx.thread>(X[ctx.thread])
  while j < m {
    j += 64
  }
  Y[ctx.thread] = j
}
"#;
    let x = input(9);
    let m = *x.iter().max().unwrap();
    let want: Vec<i32> = (0..64)
        .map(|i| {
            let mut j = i;
            while j < m {
                j += 64;
            }
            j
        })
        .collect();
    let o = run(src, "k", &x).run([1, 1, 1]);
    o.check("Y", &Tensor::from_i32(&[64], &want));
}
