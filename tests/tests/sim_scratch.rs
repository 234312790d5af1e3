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
