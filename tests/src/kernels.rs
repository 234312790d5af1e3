//! Kernels that more than one test file runs and that are not corpus
//! kernels (so the PTX snapshot tests do not pin them).

/// Tiles and CTA-collective scratch sharing bytes (the plan reuses offset
/// 0 for `t`, `a`, `max` scratch and `b`), a tile rewritten on every trip
/// of a loop, and the barriers the plan keeps or elides between them.
pub const REUSE: &str = "@launch(128)
kernel reuse(A: tensor<f32>[R, 128], B: tensor<f32>[1, 256], y: tensor<f32>[R, 128], z: tensor<f32>[1, 128]) {
  for r in range(0, R) {
    var t = A[r :+ 1, :]
    let s = sum<over ctx.thread>(t[0, ctx.thread])
    y[r, ctx.thread] = t[0, 127 - ctx.thread] + s
  }
  var a = B[0 :+ 1, :]
  let x = a[0, (ctx.thread * 2 + 1) % 256]
  let m = max<over ctx.thread>(x)
  var b = A[0 :+ 1, :]
  let s2 = sum<over ctx.thread>(b[0, (ctx.thread + 5) % 128])
  z[0, ctx.thread] = b[0, 127 - ctx.thread] + m + s2
}
";
