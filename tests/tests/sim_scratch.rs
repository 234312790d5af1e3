//! Shared scratch tiles in the simulator: nothing is copied into them, so a
//! read of an element no thread wrote is an initcheck error, reported at
//! the read.

use phobos_conformance::sim_support::Case;
use phobos_sim::{CheckKind, Space};

const HALF_WRITTEN: &str = "@launch(64)
kernel half(B: tensor<f32>[64]) {
  var s = shared<f32>[64]
  if ctx.thread < 32 {
    s[ctx.thread] = 1.0
  }
  B[ctx.thread] = s[63 - ctx.thread]
}
";

#[test]
fn a_scratch_element_read_before_any_write_is_an_initcheck_error() {
    let mut c = Case::source(HALF_WRITTEN, "half.pho", "half");
    c.opts.threads = 1;
    let r = c.report([1, 1, 1]);
    assert_eq!(r.kind, CheckKind::Initcheck, "{r}");
    assert_eq!(r.space, Some(Space::Shared), "{r}");
    assert!(r.instruction.starts_with("ld.shared"), "{r}");
    // The report names the kernel's shared array (one `.shared` array
    // holds every buffer of the plan).
    assert!(r.tensor.is_some(), "{r}");
    // Thread 0 reads s[63], which no thread wrote.
    assert_eq!(r.thread, Some([0, 0, 0]), "{r}");
    // Written everywhere first, the same read is clean.
    let full = HALF_WRITTEN.replace("if ctx.thread < 32 {", "if ctx.thread < 64 {");
    let o = Case::source(&full, "full.pho", "half").run([1, 1, 1]);
    assert!((0..64).all(|i| o.after["B"].f(i) == 1.0));
}

/// Issue 26 item 1: `a` is written on the first trip only and read on every
/// trip, `b` is written and read later in each trip. `a` is live at the
/// loop's back edge, so the plan must not give `b` its bytes (it did: trips
/// 1 to 3 read `b`'s values).
const ACROSS_TRIPS: &str = "@launch(32)
kernel across(O: tensor<f32>[32]) {
  let t = ctx.thread
  var a = shared<f32>[32]
  var acc = 0.0
  for it in range(0, 4) {
    if it == 0 {
      a[t] = 1.0
    }
    acc += a[31 - t]
    var b = shared<f32>[32]
    b[t] = 100.0
    acc += b[31 - t]
  }
  O[t] = acc
}
";

#[test]
fn a_scratch_read_on_later_trips_keeps_its_bytes_for_the_whole_loop() {
    let o = Case::source(ACROSS_TRIPS, "across.pho", "across").run([1, 1, 1]);
    o.check_f("O", 32, |_| 4.0 * 101.0);
    // Declared inside the loop, the tile keeps what the previous trip
    // wrote too (docs/language.md, Scratch).
    let inside = ACROSS_TRIPS
        .replace("  var a = shared<f32>[32]\n", "")
        .replace(
            "  for it in range(0, 4) {\n",
            "  for it in range(0, 4) {\n    var a = shared<f32>[32]\n",
        );
    let o = Case::source(&inside, "inside.pho", "across").run([1, 1, 1]);
    o.check_f("O", 32, |_| 4.0 * 101.0);
}

/// The same shape in a `while` loop, with the write under a branch the
/// other way round: written on the last trips, read on every trip after.
const ACROSS_WHILE: &str = "@launch(32)
kernel across_while(O: tensor<f32>[32]) {
  let t = ctx.thread
  var acc = 0.0
  var it = 0
  while it < 4 {
    var a = shared<f32>[32]
    var b = shared<f32>[32]
    if it == 0 {
      a[t] = 2.0
    } else {
      acc += a[31 - t]
    }
    b[t] = 10.0
    acc += b[31 - t]
    it += 1
  }
  O[t] = acc
}
";

#[test]
fn a_scratch_read_on_later_trips_of_a_while_loop_keeps_its_bytes() {
    let o = Case::source(ACROSS_WHILE, "across_while.pho", "across_while").run([1, 1, 1]);
    o.check_f("O", 32, |_| 3.0 * 2.0 + 4.0 * 10.0);
}

/// The write and the reads in an inner loop: what the inner loop carries
/// reaches the outer loop's earlier trips too, so `a` keeps its bytes over
/// the whole outer loop.
#[test]
fn a_scratch_an_inner_loop_reads_from_earlier_outer_trips_keeps_its_bytes() {
    let nested = ACROSS_TRIPS
        .replace(
            "    if it == 0 {\n      a[t] = 1.0\n    }\n    acc += a[31 - t]\n",
            "    for j in range(0, 2) {\n      if it == 0 && j == 0 {\n        a[t] = 1.0\n      }\n      acc += a[31 - t]\n    }\n",
        );
    assert!(nested.contains("for j in"), "{nested}");
    let o = Case::source(&nested, "nested.pho", "across").run([1, 1, 1]);
    o.check_f("O", 32, |_| 8.0 + 4.0 * 100.0);
}

/// Issue 26 item 3: the plan puts a kernel's shared buffers side by side in
/// one `.shared` array, so a run-time index just past one buffer's edge
/// wrote or read its neighbour under "checks passed". Bounds are per
/// buffer: every shared access Phobos emits carries its buffer's bytes
/// (a `phobos.bounds` note), and memcheck reports an access outside them.
const NEIGHBOURS: &str = r#"
@launch(32)
kernel neighbours(I: tensor<i32>[32], J: tensor<i32>[32], O: tensor<f32>[32]) {
  let t = ctx.thread
  var a = shared<f32>[32]
  var b = shared<f32>[32]
  a[t] = 1.0
  b[t] = 2.0
  a[I[t]] = 5.0
  atomic_add(b[J[t]], 1.0)
  O[t] = a[t] + b[31 - t]
}
"#;

fn neighbour_indices(at: usize, v: i64) -> phobos_conformance::sim_support::Tensor {
    let mut t =
        phobos_conformance::sim_support::Tensor::zeros(phobos_core::ast::ScalarTy::I32, &[32]);
    for i in 0..32 {
        t.set_i(i, if i == at { v } else { i as i64 });
    }
    t
}

#[test]
fn a_run_time_index_past_a_shared_buffer_is_a_memcheck_error_not_a_write_into_the_next() {
    let ptx = Case::source(NEIGHBOURS, "neighbours.pho", "neighbours")
        .kernel
        .ptx;
    assert!(ptx.contains("// phobos.bounds a neighbours$smem"), "{ptx}");
    assert!(ptx.contains("// phobos.bounds b neighbours$smem"), "{ptx}");
    // In range: each buffer gets its own elements.
    let o = Case::source(NEIGHBOURS, "neighbours.pho", "neighbours")
        .init("I", neighbour_indices(0, 0))
        .init("J", neighbour_indices(0, 0))
        .run([1, 1, 1]);
    o.check_f("O", 32, |_| 5.0 + 3.0);
    // Past either edge, by a little or by a whole buffer: in the other
    // buffer's bytes, or outside the kernel's shared memory.
    for bad in [32, 33, 63, -1, -32] {
        for (tile, what) in [("a", "shared store"), ("b", "shared atomic")] {
            let (i, j) = if tile == "a" { (bad, 5) } else { (5, bad) };
            let mut c = Case::source(NEIGHBOURS, "neighbours.pho", "neighbours")
                .init("I", neighbour_indices(5, i))
                .init("J", neighbour_indices(5, j));
            c.opts.threads = 1;
            let r = c.report([1, 1, 1]);
            assert_eq!(r.kind, CheckKind::Memcheck, "{tile}[{bad}]: {r}");
            assert_eq!(r.thread, Some([5, 0, 0]), "{tile}[{bad}]: {r}");
            assert!(
                r.message.contains(&format!(
                    "out-of-bounds {what} of 4 bytes: outside `{tile}`, which has 128 bytes"
                )),
                "{tile}[{bad}]: {r}"
            );
            assert_eq!(r.tensor.as_deref(), Some(tile), "{tile}[{bad}]: {r}");
            let note = if bad < 0 {
                format!("starts {} bytes before the start of `{tile}`", -4 * bad)
            } else {
                format!("({} bytes past its end)", 4 * (bad - 31))
            };
            assert!(
                r.notes.iter().any(|n| n.contains(&note)),
                "{tile}[{bad}]: {note}: {r}"
            );
        }
    }
}
