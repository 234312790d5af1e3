//! Barriers the compiler must place for reads of a shared tile that sit
//! inside the expression, condition or loop bounds of a statement that
//! writes the tile (issue 9, defect 1). Each kernel runs in the simulator
//! with racecheck on and with it off, and its results are compared with a
//! Rust reference; the PTX must hold a `bar.sync` between the last shared
//! read and the shared write of the statement. A hazard no barrier can
//! fence (both accesses inside a loop whose bounds differ between threads)
//! is refused with P0802.

use phobos_conformance::line_of;
use phobos_conformance::sim_support::{compile_src, Case, Gen, Tensor};
use phobos_core::ast::ScalarTy;

/// Hillis–Steele inclusive scan over a shared tile, the read of the
/// neighbour inside the statement that writes the tile.
const SCAN: &str = r#"
@launch(256)
kernel scan(X: tensor<f32>[1, 256], Y: tensor<f32>[256]) {
  var t = X[0 :+ 1, 0 :+ 256]
  let i = ctx.thread
  for k in range(0, 8) {
    let d = 1 << k
    t[0, i] = t[0, i] + select(i >= d, t[0, max(i - d, 0)], 0.0)
  }
  Y[i] = t[0, i]
}
"#;

/// Runs `case` with checks on or off and returns the outcome.
fn run(src: &str, file: &str, kernel: &str, checks: bool, init: &[(&str, Tensor)]) -> Case {
    let mut c = Case::source(src, file, kernel);
    for (n, t) in init {
        c = c.init(n, t.clone());
    }
    c.opts.checks = checks;
    c
}

/// Runs `kernel` of `src` on one CTA with `init`, racecheck on and then
/// off, and checks its output `out` against `want` each time.
fn runs_right(src: &str, kernel: &str, init: &[(&str, Tensor)], out: &str, want: &Tensor) {
    for checks in [true, false] {
        let o = run(src, "k.pho", kernel, checks, init).run([1, 1, 1]);
        o.check(out, want);
    }
}

/// Checks scan kernel `src` on input `x` against its inclusive prefix sum.
fn scans_right(src: &str, x: &[f32]) {
    let mut want = x.to_vec();
    for i in 1..256 {
        want[i] += want[i - 1];
    }
    let init = [("X", Tensor::from_f32(&[1, 256], x))];
    runs_right(src, "scan", &init, "Y", &Tensor::from_f32(&[256], &want));
}

/// The PTX lines of the first statement on source line `line` that writes
/// shared memory: every `bar.sync` must come after its shared reads.
fn barrier_between_read_and_write(ptx: &str, line: u32) -> bool {
    let mut on_line = false;
    let mut read = false;
    let mut fenced = false;
    for l in ptx.lines().map(str::trim) {
        if let Some(rest) = l.strip_prefix(".loc") {
            on_line = rest.split_whitespace().nth(1) == Some(&line.to_string());
            continue;
        }
        if !on_line {
            continue;
        }
        if l.starts_with("ld.shared") {
            read = true;
            fenced = false;
        } else if l.starts_with("bar.sync") && read {
            fenced = true;
        } else if l.starts_with("st.shared") && read {
            return fenced;
        }
    }
    false
}

#[test]
fn a_scan_reading_the_tile_inside_the_writing_statement_is_correct() {
    let x: Vec<f32> = (0..256).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
    scans_right(SCAN, &x);
    let ptx = &compile_src(SCAN, "scan.pho")[0].ptx;
    let line = line_of(SCAN, "t[0, i] = t[0, i] +");
    assert!(barrier_between_read_and_write(ptx, line), "{ptx}");
}

/// The tile is read in an `if` condition by every thread, then written in
/// the body by thread 0: the other threads must read before the write.
const COND: &str = r#"
@launch(128)
kernel cond(X: tensor<i32>[128], Y: tensor<i32>[128]) {
  var t = X[0 :+ 128]
  let i = ctx.thread
  if t[0] == 7 {
    t[i] = 100 + i
  }
  Y[i] = t[(i + 1) % 128]
}
"#;

/// The tile is read in a `for` bound by every thread, then written in the
/// body.
const BOUND: &str = r#"
@launch(128)
kernel bound(X: tensor<i32>[128], Y: tensor<i32>[128]) {
  var t = X[0 :+ 128]
  let i = ctx.thread
  for j in range(0, t[0]) {
    t[i] = t[i] + 1
  }
  Y[i] = t[(i + 1) % 128]
}
"#;

#[test]
fn a_tile_read_in_a_condition_or_loop_bound_is_fenced_from_the_body() {
    let mut x: Vec<i32> = (0..128).map(|i| i * 3).collect();
    x[0] = 7;
    let cond: Vec<i32> = (0..128).map(|i| 100 + (i + 1) % 128).collect();
    let bound: Vec<i32> = (0..128).map(|i| x[(i + 1) % 128] + 7).collect();
    let init = [("X", Tensor::from_i32(&[128], &x))];
    for (src, name, want) in [(COND, "cond", cond), (BOUND, "bound", bound)] {
        runs_right(src, name, &init, "Y", &Tensor::from_i32(&[128], &want));
    }
}

/// The scan as a CUDA author writes it: the read of the neighbour and the
/// write under `if i >= d`, a condition that differs between threads. The
/// compiler evaluates the branch's operands, then places the barrier, then
/// stores, each under the saved condition.
const SCAN_IF: &str = r#"
@launch(256)
kernel scan(X: tensor<f32>[1, 256], Y: tensor<f32>[256]) {
  var t = X[0 :+ 1, 0 :+ 256]
  let i = ctx.thread
  for k in range(0, 8) {
    let d = 1 << k
    if i >= d {
      t[0, i] = t[0, i] + t[0, i - d]
    } else {
      t[0, i] = t[0, i] * 1.0
    }
  }
  Y[i] = t[0, i]
}
"#;

#[test]
fn a_scan_reading_and_writing_the_tile_under_a_varying_if_is_correct() {
    let x: Vec<f32> = (0..256).map(|i| ((i * 29) % 13) as f32 - 6.0).collect();
    scans_right(SCAN_IF, &x);
    let ptx = &compile_src(SCAN_IF, "scan.pho")[0].ptx;
    let line = line_of(SCAN_IF, "t[0, i] = t[0, i] +");
    assert!(barrier_between_read_and_write(ptx, line), "{ptx}");
}

#[test]
fn a_hazard_inside_a_loop_whose_bounds_vary_is_refused() {
    // Each iteration reads the neighbour's element and writes its own; the
    // loop's trip count differs per thread, so no barrier can go inside.
    let src = r#"
@launch(64)
kernel shift(X: tensor<f32>[1, 64], Y: tensor<f32>[64]) {
  var t = X[0 :+ 1, 0 :+ 64]
  let i = ctx.thread
  for j in range(0, i) {
    t[0, i] = t[0, i - 1]
  }
  Y[i] = t[0, i]
}
"#;
    let (codes, text) = phobos_conformance::diagnostic_codes(src, "shift.pho");
    assert!(codes.contains(&"P0802"), "{text}");
    assert!(text.contains("`t` read here"), "{text}");
    // The help names the cause it found, with the loop labelled.
    assert!(
        text.contains("this loop's bounds differ between threads"),
        "{text}"
    );
    assert!(!text.contains("`return`"), "{text}");
    // After a `return` only some threads take, the help says so.
    let ret = "@launch(64)
kernel rt(O: tensor<f32>[64]) {
  let t = ctx.thread
  var s = shared<f32>[128]
  if t > 40 {
    return
  }
  s[t] = 1.0
  O[t] = s[t + 1]
}
";
    let (codes, text) = phobos_conformance::diagnostic_codes(ret, "rt.pho");
    assert_eq!(codes, ["P0802"], "{text}");
    assert!(
        text.contains("some threads may leave the kernel here"),
        "{text}"
    );
    assert!(
        text.contains("after a `return` that only some threads may take"),
        "{text}"
    );
    assert!(!text.contains("loop"), "{text}");
}

#[test]
fn a_grid_stride_loop_over_a_tile_still_compiles_without_barriers_inside() {
    // Each thread writes its own elements across iterations; the loop's
    // bounds differ per thread, so no barrier could go inside it.
    let src = r#"
@launch(128)
kernel stride(A: tensor<f32>[1, 512], B: tensor<f32>[1, 512]) {
  var u = A[0 :+ 1, 0 :+ 512]
  for e in range(ctx.thread, 512, ctx.threads) {
    u[0, e] = 2.0 * u[0, e]
  }
  B[0 :+ 1, 0 :+ 512] = u
}
"#;
    let c = Case::source(src, "stride.pho", "stride").gen("A", Gen::Float(-1.0, 1.0));
    let o = c.run([1, 1, 1]);
    let a = o.input("A");
    let mut want = Tensor::zeros(ScalarTy::F32, &[1, 512]);
    for i in 0..512 {
        want.set_f(i, 2.0 * a.f(i));
    }
    o.check("B", &want);
}

/// A varying `if` that reads and writes a tile is lowered statement by
/// statement under its condition; a `fn` argument the statement hoists
/// (arguments are evaluated once) must stay under that condition too: here
/// it loads `W[i - 64]`, in bounds only for the threads that take the
/// branch.
const PREDICATED_FN_ARG: &str = r#"
fn twice(a) = a + a
@launch(128)
kernel shifted(X: tensor<f32>[1, 128], W: tensor<f32>[64], Y: tensor<f32>[128]) {
  var t = X[0 :+ 1, 0 :+ 128]
  let i = ctx.thread
  if i >= 64 {
    t[0, i] = t[0, i - 64] + twice(W[i - 64] * 3.0)
  }
  Y[i] = t[0, i]
}
"#;

#[test]
fn a_hoisted_fn_argument_under_a_varying_if_stays_under_its_condition() {
    let x: Vec<f32> = (0..128).map(|i| i as f32).collect();
    let w: Vec<f32> = (0..64).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut want = x.clone();
    for i in 64..128 {
        want[i] = x[i - 64] + 2.0 * (w[i - 64] * 3.0);
    }
    // Checks on: an unguarded load of W[i - 64] for i < 64 is a memcheck
    // error (before the argument was predicated, it ran for every thread).
    let c = run(PREDICATED_FN_ARG, "shifted.pho", "shifted", true, &[])
        .init("X", Tensor::from_f32(&[1, 128], &x))
        .init("W", Tensor::from_f32(&[64], &w));
    let o = c.run([1, 1, 1]);
    o.check("Y", &Tensor::from_f32(&[128], &want));
}

/// A barrier that sits inside a branch or a loop body may not run: the
/// branch may not be taken, the loop may run zero times. It must not stand
/// in for a barrier between accesses before and after it (found by
/// phobos-fuzz, `tests/fuzz-cases/barrier-in-*.pho`). Each kernel copies a
/// tile, reaches a CTA collective (whose barriers the old analysis took as
/// separating the copy from what follows) only under control that skips
/// it at run time, then reads another thread's element of the tile, or
/// writes the tile after reading it. Run with racecheck on (a missing
/// barrier is a hazard) and off (the values must still be right). Each
/// file's first line says which control skips the collective.
const SKIPPED: [&str; 7] = [
    include_str!("../fixtures/skipped-barrier/untaken-if.pho"),
    include_str!("../fixtures/skipped-barrier/untaken-else.pho"),
    include_str!("../fixtures/skipped-barrier/zero-trip-loop.pho"),
    include_str!("../fixtures/skipped-barrier/untaken-if-in-loop.pho"),
    include_str!("../fixtures/skipped-barrier/untaken-if-calling-fn.pho"),
    include_str!("../fixtures/skipped-barrier/write-after-read-across-untaken-if.pho"),
    include_str!("../fixtures/skipped-barrier/one-trip-loop-untaken-if.pho"),
];

#[test]
fn a_barrier_in_a_branch_or_loop_that_is_skipped_does_not_fence_around_it() {
    use phobos_conformance::sim_support::Scalar;
    let x: Vec<i32> = (0..64).map(|i| 1000 + 7 * i).collect();
    let want: Vec<i32> = (0..64).map(|i| x[(i + 1) % 64]).collect();
    for src in SKIPPED {
        let what = src
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("// ");
        for checks in [true, false] {
            let c = run(
                src,
                "k.pho",
                "k",
                checks,
                &[("X", Tensor::from_i32(&[64], &x))],
            )
            .scalar("n", Scalar::I32(0));
            let o = c
                .launch([1, 1, 1])
                .unwrap_or_else(|b| panic!("{what} (checks {checks}): {}", b.1));
            if let Err(e) = o.compare("Y", &Tensor::from_i32(&[64], &want)) {
                panic!("{what} (checks {checks}): {e}");
            }
        }
    }
}

/// A loop whose bound reads the tile its body writes, unrolled by the
/// compiler (its body reads a tensor): the barrier after the bound must
/// survive unrolling, which moves the bound into statements before the
/// loop. Threads 32..63 write elements 31..0 (`63 - ctx.thread`, one
/// element per thread), element 0 included, which every thread read for
/// the bound. This was refused with P0802.
const UNROLLED_BOUND: &str = r#"
@launch(64)
kernel k(X: tensor<i32>[64], A: tensor<i32>[64], Y: tensor<i32>[64]) {
  var t = X[0 :+ 64]
  for j in range(0, t[0]) {
    if ctx.thread >= 32 {
      t[63 - ctx.thread] = A[j & 63] + j
    }
  }
  Y[ctx.thread] = t[ctx.thread]
}
"#;

#[test]
fn barriers_after_a_tile_read_survive_loop_unrolling() {
    let mut x: Vec<i32> = (0..64).map(|i| 1000 + i).collect();
    x[0] = 3;
    let a: Vec<i32> = (0..64).map(|i| 7 * i - 50).collect();
    let want: Vec<i32> = (0..64)
        .map(|i| if i < 32 { a[2] + 2 } else { x[i] })
        .collect();
    let init = [
        ("X", Tensor::from_i32(&[64], &x)),
        ("A", Tensor::from_i32(&[64], &a)),
    ];
    runs_right(
        UNROLLED_BOUND,
        "k",
        &init,
        "Y",
        &Tensor::from_i32(&[64], &want),
    );
    // The scan unrolled by hand (`unroll 2`): each copy of the statement
    // keeps its barrier between the reads and the write.
    let unrolled_scan = SCAN.replace("range(0, 8) {", "range(0, 8) unroll 2 {");
    let x: Vec<f32> = (0..256).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
    scans_right(&unrolled_scan, &x);
}

/// A varying `if` whose condition reads the tile its branch writes. It is
/// predicated statement by statement, and the condition's read must be
/// fenced from the branch's write. The fence used to hang on the
/// condition's own statement, which debug builds refused (P0901) and
/// release builds dropped (found by the fuzzer, seeds 200318 and 200857).
const PRED_COND: &str = r#"
@launch(64)
kernel pred_if(X: tensor<f32>[64], Y: tensor<f32>[64]) {
  var t = X[0 :+ 64]
  if t[63 - ctx.thread] > 0.0 {
    t[ctx.thread] = t[ctx.thread] + 1.0
    Y[ctx.thread] = t[ctx.thread]
  } else {
    Y[ctx.thread] = -t[ctx.thread]
  }
}
"#;

#[test]
fn a_varying_if_whose_condition_reads_the_tile_it_writes_is_fenced() {
    let x: Vec<f32> = (0..64)
        .map(|i| if i % 3 == 0 { -1.0 } else { 2.0 })
        .collect();
    let want: Vec<f32> = (0..64)
        .map(|i| if x[63 - i] > 0.0 { x[i] + 1.0 } else { -x[i] })
        .collect();
    let init = [("X", Tensor::from_f32(&[64], &x))];
    runs_right(
        PRED_COND,
        "pred_if",
        &init,
        "Y",
        &Tensor::from_f32(&[64], &want),
    );
}

/// Issue 26 item 2: two tile writes under an `if` whose condition differs
/// between threads were refused with P0802, blaming a loop or early exit
/// that is not there. Writes of `2 * t` and `2 * t + 1` never meet, so no
/// barrier goes between them; writes of `t` and `t + 1` do (thread `t`'s
/// second write is thread `t + 1`'s first element), and the `if` is
/// compiled statement by statement so one can.
const TWO_WRITES: &str = "@launch(64)
kernel two(O: tensor<f32>[64]) {
  let t = ctx.thread
  var s = shared<f32>[128]
  if ctx.thread < 32 {
    s[2 * t] = 1.0
    s[2 * t + 1] = 2.0
  }
  O[t] = s[t]
}
";

#[test]
fn two_writes_under_a_varying_if_compile_with_a_barrier_only_where_they_meet() {
    let want =
        |f: &dyn Fn(usize) -> f32| Tensor::from_f32(&[64], &(0..64).map(f).collect::<Vec<_>>());
    let apart = want(&|i| if i % 2 == 0 { 1.0 } else { 2.0 });
    runs_right(TWO_WRITES, "two", &[], "O", &apart);
    let p = &compile_src(TWO_WRITES, "two.pho")[0].ptx;
    // One barrier: after the writes, before the read of line 9.
    assert_eq!(p.matches("bar.sync").count(), 1, "{p}");
    // Elements 1 to 32 are written twice, by two threads: the second write
    // wins only with a barrier between them.
    let meet = TWO_WRITES
        .replace("s[2 * t] = 1.0", "s[t] = 1.0")
        .replace("s[2 * t + 1] = 2.0", "s[t + 1] = 2.0")
        .replace("O[t] = s[t]", "O[t] = s[t % 33]");
    let init: [(&str, Tensor); 0] = [];
    for checks in [true, false] {
        let o = run(&meet, "meet.pho", "two", checks, &init).run([1, 1, 1]);
        for i in 0..33 {
            let v = o.after["O"].f(i);
            assert_eq!(v, if i == 0 { 1.0 } else { 2.0 }, "O[{i}]");
        }
    }
    let p = &compile_src(&meet, "meet.pho")[0].ptx;
    assert_eq!(p.matches("bar.sync").count(), 2, "{p}");
}
