use phobos_conformance::sim_support::Case;
#[test]
fn dump() {
    for n in ["staged_matvec", "row_sum", "vec_add", "lane_argmax", "math_f32"] {
        let c = Case::corpus(n);
        std::fs::write(format!("/tmp/ptx_{n}.ptx"), &c.kernel.ptx).unwrap();
    }
}
