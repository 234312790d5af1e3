//! The kernels the language page rejects, each rejected at the right line
//! with the page's words, as snapshots of the rendered diagnostics (the
//! source is in the snapshot beside them). Whole kernels are the cases of
//! `kernels/rejected.txt`; the configuration table's rows are built here. Update with `cargo insta review`
//! or `INSTA_UPDATE=always`; CI fails on any difference.

mod common;

use phobos_core::render::render;

/// Check `src`: exactly one error, with `code`, `message`, at `line`.
fn rejected(name: &str, src: &str, code: &str, message: &str, line: u32) {
    insta::assert_snapshot!(name, common::refusal(name, src, code, message, line));
}

/// Each kernel of `kernels/rejected.txt` is refused at its marked line.
#[test]
fn every_kernel_of_the_fixture_is_rejected_at_its_marked_line() {
    let cases = common::cases(include_str!("kernels/rejected.txt"));
    assert!(!cases.is_empty(), "the fixture has no case");
    for case in cases {
        rejected(
            &case.name,
            &case.text,
            &case.code,
            &case.message,
            case.line_in(&case.text),
        );
    }
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
