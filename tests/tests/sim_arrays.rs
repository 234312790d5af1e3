//! Register arrays in the simulator: an array indexed at run time lives in
//! local memory, and an index past its end is memcheck's error there, not
//! a silent write into another array or register; the same kernel with
//! the index in range computes what the language says. (The corpus kernels
//! `reg_gemm` and `reg_local` check the arrays' values on ragged shapes.)

use phobos_conformance::sim_support::{Case, Tensor};
use phobos_core::ast::ScalarTy;

const SPILL: &str = r#"
@launch(32)
kernel spill(I: tensor<i32>[32], O: tensor<f32>[32]) {
  let t = ctx.thread
  var h: f32[4] = 1.0
  h[I[t]] = 5.0
  O[t] = h[0] + h[1] + h[2] + h[3]
}
"#;

fn indices(v: impl Fn(usize) -> i64) -> Tensor {
    let mut t = Tensor::zeros(ScalarTy::I32, &[32]);
    for i in 0..32 {
        t.set_i(i, v(i));
    }
    t
}

#[test]
fn a_dynamic_index_in_range_writes_the_element_it_names() {
    let o = Case::source(SPILL, "spill.pho", "spill")
        .init("I", indices(|i| (i % 4) as i64))
        .run([1, 1, 1]);
    let mut want = o.expect("O");
    for i in 0..32 {
        want.set_f(i, 3.0 + 5.0);
    }
    o.check("O", &want);
}

#[test]
fn a_dynamic_index_past_the_end_is_a_memcheck_error_in_local_memory() {
    let ptx = Case::source(SPILL, "spill.pho", "spill").kernel.ptx;
    assert!(
        ptx.contains("st.local.f32"),
        "the array is not in local memory:\n{ptx}"
    );
    for bad in [4, -1] {
        let r = Case::source(SPILL, "spill.pho", "spill")
            .init("I", indices(|i| if i == 7 { bad } else { 0 }))
            .launch([1, 1, 1]);
        let Err(b) = r else {
            panic!("index {bad} past the array's end ran without an error");
        };
        let text = b.1.to_string();
        assert!(
            text.contains("out-of-bounds local"),
            "index {bad}: not memcheck's local error: {text}"
        );
    }
}

/// Issue 26 item 3: with two arrays in local memory, an index just past
/// the first one's end (or just before the second one's start) wrote into
/// the other array, unreported. Bounds are per array: memcheck reports it.
const TWO: &str = r#"
@launch(32)
kernel two(I: tensor<i32>[32], J: tensor<i32>[32], O: tensor<f32>[32]) {
  let t = ctx.thread
  var h: f32[4] = 1.0
  var g: f32[4] = 2.0
  h[I[t]] = 5.0
  g[J[t]] = 6.0
  O[t] = h[0] + h[1] + h[2] + h[3] + g[0] + g[1] + g[2] + g[3]
}
"#;

#[test]
fn an_index_past_one_local_array_is_a_memcheck_error_not_a_write_into_the_next() {
    let ptx = Case::source(TWO, "two.pho", "two").kernel.ptx;
    assert_eq!(ptx.matches(".local .align").count(), 2, "{ptx}");
    // In range: each array gets its own element.
    let o = Case::source(TWO, "two.pho", "two")
        .init("I", indices(|i| (i % 4) as i64))
        .init("J", indices(|i| (3 - i % 4) as i64))
        .run([1, 1, 1]);
    o.check_f("O", 32, |_| 3.0 + 5.0 + 6.0 + 6.0);
    for (bad_h, bad_g) in [(4, 0), (7, 0), (0, -1), (0, -4)] {
        let r = Case::source(TWO, "two.pho", "two")
            .init("I", indices(|i| if i == 3 { bad_h } else { 0 }))
            .init("J", indices(|i| if i == 3 { bad_g } else { 0 }))
            .launch([1, 1, 1]);
        let Err(b) = r else {
            panic!("h[{bad_h}] / g[{bad_g}] ran without an error");
        };
        let text = b.1.to_string();
        assert!(
            text.contains("out-of-bounds local store"),
            "h[{bad_h}] / g[{bad_g}]: not memcheck's local error: {text}"
        );
    }
}
