//! Atomics in the simulator, through compiled kernels: memcheck checks an
//! atomic's address like a load's, and the result of many threads' atomics
//! on one element is exact for integers.

use phobos_conformance::sim_support::{Case, Tensor};
use phobos_core::ast::ScalarTy;
use phobos_sim::{CheckKind, SimError, Space};

const BUMP: &str = "@launch(64)
kernel bump(I: tensor<i32>[N], H: tensor<u32>[16]) {
  atomic_add(H[I[ctx.thread]], 1)
}
";

#[test]
fn an_atomic_past_the_end_of_its_tensor_is_a_memcheck_error() {
    let mut c = Case::source(BUMP, "bump.pho", "bump")
        .dims(&[("N", 64)])
        .init("H", Tensor::zeros(ScalarTy::U32, &[16]));
    c.prepare();
    let i = c.tensors.get_mut("I").expect("I");
    for t in 0..64 {
        i.set_i(t, (t % 16) as i64);
    }
    // Thread 40 bumps H[16], one element past the end.
    i.set_i(40, 16);
    let r = match c.launch([1, 1, 1]) {
        Ok(_) => panic!("an out-of-bounds atomic ran clean"),
        Err(b) => match b.1 {
            SimError::Check(r) => *r,
            e => panic!("expected a check report, got: {e}"),
        },
    };
    assert_eq!(r.kind, CheckKind::Memcheck, "{r}");
    assert_eq!(r.space, Some(Space::Global), "{r}");
    assert_eq!(r.tensor.as_deref(), Some("H"), "{r}");
    assert_eq!(r.thread, Some([40, 0, 0]), "{r}");
    assert!(r.instruction.starts_with("red.global.add"), "{r}");
}

#[test]
fn every_thread_bumping_one_counter_counts_exactly() {
    let mut c = Case::source(BUMP, "bump.pho", "bump")
        .dims(&[("N", 64)])
        .init("H", Tensor::zeros(ScalarTy::U32, &[16]));
    c.prepare();
    let i = c.tensors.get_mut("I").expect("I");
    for t in 0..64 {
        i.set_i(t, 3);
    }
    let o = c.run([4, 1, 1]);
    let mut want = Tensor::zeros(ScalarTy::U32, &[16]);
    want.set_i(3, 4 * 64);
    o.check("H", &want);
}
