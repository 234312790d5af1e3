//! The generated kernels the hostile-input suites feed the compiler:
//! phobos-core's `hostile.rs` compiles them in process and phobos-cli's
//! `hostile.rs` (which includes this file by path) runs the built binary on
//! them, so both suites test the same text. Only `std` is used.

/// A kernel that copies a `rows` by `cols` tile of `A` into shared memory.
pub fn tile_kernel(rows: &str, cols: &str) -> String {
    format!(
        "@launch(32)\nkernel k(A: tensor<f32>[N, {cols}], y: tensor<f32>[N]) {{\n  var a = A[0 :+ {rows}, :]\n  y[ctx.thread] = a[0, 0]\n}}\n"
    )
}

/// `depth` loops nested, each `unroll 32`, around `body` copies of one
/// statement.
pub fn unroll_nest(depth: usize, body: usize) -> String {
    let mut src = String::from("@launch(32)\nkernel k(y: tensor<f32>[N]) {\n  var a = 0.0\n");
    for i in 0..depth {
        src += &format!("for i{i} in range(0, N) unroll 32 {{\n");
    }
    src += &"a = a + 1.0\n".repeat(body);
    src += &"}\n".repeat(depth);
    src + "  y[ctx.thread] = a\n}\n"
}

/// A kernel tuned over `j` values (one variant each) whose body is
/// `stmts` statements of three expressions.
pub fn tuned_kernel(j: usize, stmts: usize) -> String {
    let values: Vec<String> = (1..=j).map(|v| v.to_string()).collect();
    format!(
        "@launch(32)\n@autotune(J in [{}])\nkernel k(y: tensor<f32>[N]) {{\n  var a = 0.0\n{}  y[ctx.thread] = a + f32(J)\n}}\n",
        values.join(", "),
        "  a = a + 1.0\n".repeat(stmts)
    )
}
