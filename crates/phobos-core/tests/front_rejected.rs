//! The kernels the language page rejects, each rejected at the right line
//! with the page's words, as snapshots of the rendered diagnostics (the
//! source is in the snapshot beside them). Update with `cargo insta review`
//! or `INSTA_UPDATE=always`; CI fails on any difference.

mod common;

use phobos_core::render::render;

/// Check `src`: exactly one error, with `code`, `message`, at `line`.
fn rejected(name: &str, src: &str, code: &str, message: &str, line: u32) {
    insta::assert_snapshot!(name, common::refusal(name, src, code, message, line));
}

/// The page's lane-divergent kernel, exactly as printed.
#[test]
fn lane_divergent_sum() {
    let src = "@launch(128)
kernel k(A: tensor<f32>[1, 128], O: tensor<f32>[1, 1]) {
  let x = A[0, ctx.thread]
  var r = 0.0
  if ctx.lane == 0 {
    r = sum<over ctx.lane>(x)
  }
  if ctx.thread == 0 {
    O[0, 0] = r
  }
}
";
    rejected(
        "lane_divergent_sum",
        src,
        "P0700",
        "`sum<over ctx.lane>` needs every lane of its warp",
        6,
    );
}

/// One row of the page's configuration table, inside a small kernel.
fn table_row(name: &str, x_ty: &str, expr: &str, code: &str, message: &str) {
    let src = format!(
        "@launch(64)
kernel k(A: tensor<{x_ty}>[1, 64], O: tensor<{x_ty}>[1, 64]) {{
  let x = A[0, ctx.thread]
  let r = {expr}
  O[0, ctx.thread] = r
}}
"
    );
    rejected(name, &src, code, message, 4);
}

#[test]
fn table_over_a_warp() {
    table_row(
        "table_over_warp",
        "f32",
        "sum<over ctx.warp>(x)",
        "P0600",
        "over takes ctx.lane or ctx.thread",
    );
}

#[test]
fn table_width_without_over() {
    table_row(
        "table_width_without_over",
        "f32",
        "sum<width 8>(x)",
        "P0601",
        "a collective needs over ctx.lane or over ctx.thread",
    );
}

#[test]
fn table_cta_width() {
    table_row(
        "table_cta_width",
        "f32",
        "sum<over ctx.thread, width 8>(x)",
        "P0602",
        "a CTA collective takes no width",
    );
}

#[test]
fn table_width_three() {
    table_row(
        "table_width_three",
        "f32",
        "sum<over ctx.lane, width 3>(x)",
        "P0603",
        "width must be a power of two",
    );
}

#[test]
fn table_two_shuffle_modes() {
    table_row(
        "table_two_shuffle_modes",
        "f32",
        "shfl<xor 1, down 2>(x)",
        "P0606",
        "a shuffle takes exactly one of from, xor, down and up",
    );
}

#[test]
fn table_any_of_a_float() {
    let src = "@launch(64)
kernel k(A: tensor<f32>[1, 64], O: tensor<i32>[1, 64]) {
  let x = A[0, ctx.thread]
  let r = any<over ctx.lane>(x)
  O[0, ctx.thread] = select(r, 1, 0)
}
";
    rejected(
        "table_any_of_float",
        src,
        "P0607",
        "any and all fold conditions",
        4,
    );
}

#[test]
fn width_must_divide_the_warp() {
    table_row(
        "width_sixty_four",
        "f32",
        "max<over ctx.lane, width 64>(x)",
        "P0605",
        "width must divide ctx.lanes (32)",
    );
}

#[test]
fn width_must_be_constant() {
    table_row(
        "width_not_constant",
        "i32",
        "sum<over ctx.lane, width x>(x)",
        "P0604",
        "width must fold to a constant",
    );
}

#[test]
fn xor_below_the_width() {
    table_row(
        "xor_beyond_width",
        "f32",
        "shfl<xor 8, width 8>(x)",
        "P0608",
        "shfl<xor 8> needs m below the width (8)",
    );
}

#[test]
fn cta_collective_under_warp_control() {
    let src = "@launch(128)
kernel k(A: tensor<f32>[N, 128], O: tensor<f32>[1, N]) {
  let row = ctx.block.x * ctx.warps + ctx.warp
  var t = 0.0
  if row < N {
    t = sum<over ctx.thread>(A[row, ctx.thread])
  }
  O[0, 0] = t
}
";
    rejected(
        "cta_under_warp_control",
        src,
        "P0701",
        "`sum<over ctx.thread>` needs uniform control",
        6,
    );
}

#[test]
fn shuffle_under_a_variable_assigned_per_lane() {
    let src = "@launch(32)
kernel k(A: tensor<f32>[1, 32], O: tensor<f32>[1, 32]) {
  var go = false
  if ctx.lane < 4 {
    go = true
  }
  var v = A[0, ctx.lane]
  if go {
    v = shfl<down 1>(v)
  }
  O[0, ctx.lane] = v
}
";
    rejected(
        "shuffle_under_assigned_var",
        src,
        "P0700",
        "a shuffle needs every lane of its warp",
        9,
    );
}

#[test]
fn lane_collective_in_a_per_lane_loop() {
    let src = "@launch(32)
kernel k(A: tensor<f32>[1, N], O: tensor<f32>[1, 1]) {
  var acc = 0.0
  for i in range(0, ctx.lane) {
    acc += max<over ctx.lane>(A[0, i])
  }
  O[0, 0] = acc
}
";
    rejected(
        "collective_in_lane_loop",
        src,
        "P0700",
        "`max<over ctx.lane>` needs every lane of its warp",
        5,
    );
}

#[test]
fn tile_copy_under_a_condition() {
    let src = "@launch(64)
kernel k(x: tensor<f32>[1, 64], y: tensor<f32>[1, 64]) {
  if ctx.warp == 0 {
    var xs = x[0 :+ 1, :]
    y[0, ctx.thread] = xs[0, ctx.thread]
  }
}
";
    rejected(
        "tile_copy_under_condition",
        src,
        "P0702",
        "a tile copy needs uniform control",
        4,
    );
}

/// Several mistakes in one file: every one reported, in source order.
#[test]
fn several_errors_in_one_report() {
    let src = "fn sq(a) = a * b

@launch(128)
kernel k(A: tensor<f32>[N, K], C: tensor<i32>[1, N]) {
  let x = A[0, ctx.thread]
  let n: i32 = x
  var t = x[0]
  let r = sum(A[0, 0 :+ 4] * A[1, 0 :+ 8])
  if x {
    C[0, 0] = 1
  }
  let q = (1 +
}
";
    let (_, diags) = phobos_core::check_source(src);
    let codes: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(
        codes,
        ["P0200", "P0401", "P0510", "P0505", "P0401", "P0100"]
    );
    let text = render(&diags, "several.pho", src, false);
    insta::assert_snapshot!("several_errors", format!("{src}\n---\n{text}"));
}

/// A load at a uniform index from a tensor the kernel writes is not
/// uniform: another thread may write the element between two threads'
/// reads, so a CTA collective under `if F[0] == 1` could deadlock.
#[test]
fn condition_on_a_written_tensor() {
    let src = "@launch(64)
kernel k(A: tensor<f32>[1, 64], F: tensor<i32>[1, 1], O: tensor<f32>[1, 1]) {
  let x = A[0, ctx.thread]
  if F[0, 0] == 1 {
    O[0, 0] = sum<over ctx.thread>(x)
  }
  if ctx.thread == 0 {
    F[0, 0] = 0
  }
}
";
    rejected(
        "condition_on_a_written_tensor",
        src,
        "P0701",
        "`sum<over ctx.thread>` needs uniform control",
        5,
    );
}

/// The same for a tile the kernel writes element by element.
#[test]
fn condition_on_a_written_tile() {
    let src = "@launch(64)
kernel k(A: tensor<f32>[1, 64], O: tensor<f32>[1, 1]) {
  var t = A[0 :+ 1, 0 :+ 64]
  t[0, ctx.thread] = 2.0 * t[0, ctx.thread]
  if t[0, 0] > 0.0 {
    O[0, 0] = sum<over ctx.thread>(t[0, ctx.thread])
  }
}
";
    rejected(
        "condition_on_a_written_tile",
        src,
        "P0701",
        "`sum<over ctx.thread>` needs uniform control",
        6,
    );
}

/// A CUDA habit: Phobos places barriers itself.
#[test]
fn syncthreads_is_explained() {
    let src = "@launch(64)
kernel k(A: tensor<f32>[1, 64], B: tensor<f32>[1, 64]) {
  var t = A[0 :+ 1, 0 :+ 64]
  __syncthreads()
  B[0, ctx.thread] = t[0, 63 - ctx.thread]
}
";
    rejected(
        "syncthreads",
        src,
        "P0205",
        "Phobos has no `__syncthreads()`: the compiler places barriers itself",
        4,
    );
}

/// Assigning a loop variable: the fix is not `var i`.
#[test]
fn assigning_a_loop_variable() {
    let src = "@launch(64)
kernel k(A: tensor<f32>[1, 64], B: tensor<f32>[1, 64]) {
  for i in range(0, 64) {
    i = i + 1
  }
}
";
    rejected(
        "assigning_a_loop_variable",
        src,
        "P0207",
        "cannot assign to the loop variable `i`",
        4,
    );
}

/// `var acc = 0` makes `acc` an i32; adding an f32 suggests declaring it
/// as a float, and the store of `acc` after it stays quiet.
#[test]
fn float_added_to_an_integer_literal_var() {
    let src = "@launch(64)
kernel k(A: tensor<f32>[64, 64], B: tensor<f32>[1, 64]) {
  var acc = 0
  for i in range(0, 64) {
    acc += A[i, ctx.thread]
  }
  B[0, ctx.thread] = acc
}
";
    rejected(
        "float_added_to_an_integer_literal_var",
        src,
        "P0400",
        "`acc` is i32, so `acc += ...` cannot take f32",
        5,
    );
}

/// A declaration with an unknown type is reported once; the uses of its
/// name after it stay quiet.
#[test]
fn failed_declaration_does_not_cascade() {
    let src = "@launch(64)
kernel k(A: tensor<f32>[1, 64], B: tensor<f32>[1, 64]) {
  var acc: f33 = 0.0
  acc += A[0, ctx.thread]
  B[0, ctx.thread] = acc
}
";
    rejected(
        "failed_declaration_does_not_cascade",
        src,
        "P0104",
        "unknown type `f33`",
        3,
    );
}

/// A tile copy with the wrong number of subscripts is P0500 at the copy,
/// and the tile's later uses (a store, element reads) stay quiet.
#[test]
fn failed_tile_copy_does_not_cascade() {
    let src = "@launch(64)
kernel k(A: tensor<f32>[64, 64], B: tensor<f32>[64, 64]) {
  var t = A[0 :+ 64, 0 :+ 64, 0 :+ 1]
  B[0 :+ 64, 0 :+ 64] = t
  B[0, ctx.thread] = t[0, ctx.thread]
}
";
    rejected(
        "failed_tile_copy_does_not_cascade",
        src,
        "P0500",
        "`A` has 2 dims, found 3 subscripts",
        3,
    );
}
