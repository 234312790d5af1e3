#![allow(dead_code)] // each test binary uses some of the kernels
//! The kernels the explain tests step through: the three from the language
//! page (collectives-and-shuffles), verbatim, and two small ones that show
//! masked tile elements and extra 128-byte lines.

pub const LANES_MATVEC: &str = "@launch(128)
@aligned(K = 128)
kernel lanes_matvec(W: tensor<f32>[N, K], x: tensor<f32>[1, K], y: tensor<f32>[1, N]) {
  let row = ctx.block.x * ctx.warps + ctx.warp
  var acc: f32 = 0.0
  if row < N {
    for k in range(0, K, ctx.lanes * 4) {
      let at = k + ctx.lane * 4
      acc += sum(W[row, at :+ 4] * x[0, at :+ 4])
    }
  }
  let total = sum<over ctx.lane>(acc)
  if ctx.lane == 0 && row < N {
    y[0, row] = total
  }
}
";

pub const STAGED_MATVEC: &str = "@autotune(K in [256])
@launch(128)
kernel staged_matvec(W: tensor<f32>[N, K], x: tensor<f32>[1, K], y: tensor<f32>[1, N]) {
  var xs = x[0 :+ 1, :]
  let row = ctx.block.x * ctx.warps + ctx.warp
  var acc: f32 = 0.0
  if row < N {
    for k in range(0, K, ctx.lanes * 4) {
      let at = k + ctx.lane * 4
      acc += sum(W[row, at :+ 4] * xs[0, at :+ 4])
    }
  }
  let total = sum<over ctx.lane>(acc)
  if ctx.lane == 0 && row < N {
    y[0, row] = total
  }
}
";

pub const I8_MATVEC: &str = "@launch(256)
@aligned(K = 32)
kernel i8_matvec(A: tensor<i8>[1, K], W: tensor<i8>[N, K], C: tensor<f32>[1, N]) {
  let col = ctx.block.x * ctx.warps + ctx.warp
  var acc: f32 = 0.0
  if col < N {
    for k in range(ctx.lane * 16, K, ctx.lanes * 16) {
      acc += f32(sum(i32(A[0, k :+ 16]) * i32(W[col, k :+ 16])))
    }
  }
  let total = sum<over ctx.lane>(acc)
  if ctx.lane == 0 && col < N {
    C[0, col] = total
  }
}
";

/// Each CTA stages a 256-element tile of x; with N = 300 the second CTA's
/// tile runs 212 elements past the end.
pub const TAIL_TILE: &str = "@launch(64)
kernel tail_tile(x: tensor<f32>[1, N], y: tensor<f32>[1, N]) {
  var t = x[0 :+ 1, ctx.block.x * 256 :+ 256]
  let i = ctx.block.x * 256 + ctx.thread
  if i < N {
    y[0, i] = t[0, ctx.thread]
  }
}
";

/// Lane l reads row l of a 32-column matrix: 32 lanes × 4 bytes, each in
/// its own 128-byte line.
pub const COLUMN_READ: &str = "@launch(32)
kernel column_read(A: tensor<f32>[N, 32], y: tensor<f32>[1, N]) {
  let v = A[ctx.thread, 0]
  y[0, ctx.thread] = v
}
";
