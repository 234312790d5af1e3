//! Atomics in the simulator, through compiled kernels: memcheck checks an
//! atomic's address like a load's, and the result of many threads' atomics
//! on one element is exact for integers.

use phobos_conformance::sim_support::{Case, Tensor};
use phobos_core::ast::ScalarTy;
use phobos_sim::{CheckKind, Space};

const BUMP: &str = "@launch(64)
kernel bump(I: tensor<i32>[N], H: tensor<u32>[16]) {
  atomic_add(H[I[ctx.thread]], 1)
}
";

/// [`BUMP`] over 64 indices, thread `t` bumping `H[index(t)]`.
fn bump(index: impl Fn(usize) -> i64) -> Case {
    let mut c = Case::source(BUMP, "bump.pho", "bump")
        .dims(&[("N", 64)])
        .init("H", Tensor::zeros(ScalarTy::U32, &[16]));
    c.prepare();
    let i = c.tensors.get_mut("I").expect("I");
    for t in 0..64 {
        i.set_i(t, index(t));
    }
    c
}

#[test]
fn an_atomic_past_the_end_of_its_tensor_is_a_memcheck_error() {
    // Thread 40 bumps H[16], one element past the end.
    let c = bump(|t| if t == 40 { 16 } else { (t % 16) as i64 });
    let r = c.report([1, 1, 1]);
    assert_eq!(r.kind, CheckKind::Memcheck, "{r}");
    assert_eq!(r.space, Some(Space::Global), "{r}");
    assert_eq!(r.tensor.as_deref(), Some("H"), "{r}");
    assert_eq!(r.thread, Some([40, 0, 0]), "{r}");
    assert!(r.instruction.starts_with("red.global.add"), "{r}");
}

#[test]
fn every_thread_bumping_one_counter_counts_exactly() {
    let o = bump(|_| 3).run([4, 1, 1]);
    let mut want = Tensor::zeros(ScalarTy::U32, &[16]);
    want.set_i(3, 4 * 64);
    o.check("H", &want);
}
