//! The formatter (`phobos_core::format`): the canonical layout of
//! docs/style.md, comments kept where they were, idempotence, and refusal
//! of files with syntax errors.

mod common;

use phobos_core::ast::File;
use phobos_core::diag::Diagnostic;
use phobos_core::format::{comparable, format_source, FormatError};

fn fmt(src: &str) -> String {
    let out = format_source(src).unwrap_or_else(|e| panic!("{e}"));
    let again = format_source(&out).unwrap_or_else(|e| panic!("second pass: {e}"));
    assert_eq!(out, again, "not idempotent");
    out
}

#[test]
fn spacing_indentation_and_attribute_order() {
    let src = "@aligned(K=4)  @launch( 64 )\n@autotune(K in [4,8])\nkernel k(A:tensor<f32>[N,K],s:f32){\nlet i=ctx.block.x*ctx.threads+ctx.thread\n    if i<N{A[i,0:+4]=A[i,0:+4]*s}\n}\n";
    assert_eq!(
        fmt(src),
        "@autotune(K in [4, 8])\n@launch(64)\n@aligned(K = 4)\nkernel k(A: tensor<f32>[N, K], s: f32) {\n  let i = ctx.block.x * ctx.threads + ctx.thread\n  if i < N {\n    A[i, 0 :+ 4] = A[i, 0 :+ 4] * s\n  }\n}\n"
    );
}

#[test]
fn every_comment_is_kept_in_place() {
    let src = "// header\n\n// about k\n@launch(32) // one warp\nkernel k(A: tensor<f32>[N]) { // body\n  // leading\n  let x = A[0] // trailing\n\n  /* block */\n  A[0] = x\n  // last\n}\n// end\n";
    assert_eq!(fmt(src), src);
}

#[test]
fn a_multi_line_block_comment_moves_with_its_indentation() {
    let src = "@launch(32)\nkernel k(O: tensor<f32>[N]) {\n      /* first\n         second */\n      O[0] = 1.0\n}\n";
    assert_eq!(
        fmt(src),
        "@launch(32)\nkernel k(O: tensor<f32>[N]) {\n  /* first\n     second */\n  O[0] = 1.0\n}\n"
    );
}

#[test]
fn a_comment_inside_a_statement_keeps_it_as_written() {
    let src = "@launch(32)\nkernel k(A: tensor<f32>[N]) {\n    let x = max(A[0], // first\n                A[1])\n  A[0] = x\n}\n";
    let out = fmt(src);
    assert!(
        out.contains("  let x = max(A[0], // first\n              A[1])\n"),
        "{out}"
    );
}

#[test]
fn parentheses_that_matter_stay_and_redundant_ones_are_kept_once() {
    let src = "fn f(a, b, c) = (a + b) * c - (a - (b - c)) + ((a))\n";
    assert_eq!(
        fmt(src),
        "fn f(a, b, c) = (a + b) * c - (a - (b - c)) + (a)\n"
    );
}

#[test]
fn a_comparison_in_a_collective_configuration_keeps_its_parentheses() {
    let src = "@launch(32)\nkernel k(A: tensor<i32>[N]) {\n  A[0] = shfl<from (ctx.lane >> 1)>(A[0])\n}\n";
    assert_eq!(fmt(src), src);
}

#[test]
fn long_lists_break_one_item_per_line_with_a_trailing_comma() {
    let src = "@launch(32)\nkernel k(Alpha: tensor<f32>[N], Beta: tensor<f32>[N], Gamma: tensor<f32>[N], Delta: tensor<f32>[N]) {\n  Alpha[0] = 1.0\n}\n";
    assert_eq!(
        fmt(src),
        "@launch(32)\nkernel k(\n  Alpha: tensor<f32>[N],\n  Beta: tensor<f32>[N],\n  Gamma: tensor<f32>[N],\n  Delta: tensor<f32>[N],\n) {\n  Alpha[0] = 1.0\n}\n"
    );
    let line = "  Alpha[0] = max(max(Alpha[0], Beta[0]), max(Gamma[0], Delta[0])) + max(Alpha[1], Beta[1]) + Gamma[1]\n";
    let out = fmt(&format!(
        "@launch(32)\nkernel k(Alpha: tensor<f32>[N]) {{\n{line}}}\n"
    ));
    assert!(out.lines().all(|l| l.len() <= 100), "{out}");
}

#[test]
fn else_if_chains_and_loops() {
    let src = "@launch(32)\nkernel k(O: tensor<i32>[N]) {\n  for j in range(0,N,-1){\n    if j%3==0 { O[j]=1 } else if j%3==1 { O[j]=2 } else { O[j]+=3 }\n  }\n}\n";
    assert_eq!(
        fmt(src),
        "@launch(32)\nkernel k(O: tensor<i32>[N]) {\n  for j in range(0, N, -1) {\n    if j % 3 == 0 {\n      O[j] = 1\n    } else if j % 3 == 1 {\n      O[j] = 2\n    } else {\n      O[j] += 3\n    }\n  }\n}\n"
    );
}

#[test]
fn literals_are_written_as_in_the_source() {
    let src = "fn f(a) = a + 0x3210 + 1_000 + 1e-3 + 2.50\n";
    assert_eq!(fmt(src), src);
}

#[test]
fn items_are_separated_by_one_empty_line() {
    let src = "fn a(x) = x\nfn b(x) = x\n\n\n\n@launch(32)\nkernel k(O: tensor<f32>[N]) {\n\n\n  O[0] = 1.0\n\n\n  O[1] = 2.0\n}\n@launch(32)\nkernel j(O: tensor<f32>[N]) {\n  O[0] = 1.0\n}";
    assert_eq!(
        fmt(src),
        "fn a(x) = x\nfn b(x) = x\n\n@launch(32)\nkernel k(O: tensor<f32>[N]) {\n  O[0] = 1.0\n\n  O[1] = 2.0\n}\n\n@launch(32)\nkernel j(O: tensor<f32>[N]) {\n  O[0] = 1.0\n}\n"
    );
}

#[test]
fn a_file_with_syntax_errors_is_not_formatted() {
    let Err(FormatError::Syntax(diags)) = format_source("kernel k( {\n let = 1\n}\n") else {
        panic!("a broken file was formatted");
    };
    assert!(!diags.is_empty());
    assert!(diags.iter().all(|d| d.is_error()));
}

#[test]
fn checker_errors_do_not_stop_formatting() {
    // `y` is unknown: a checker error, not a syntax error.
    let out = fmt("@launch(32)\nkernel k(O: tensor<f32>[N]) {\n  O[0]=y\n}\n");
    assert!(out.contains("  O[0] = y\n"));
}

#[test]
fn hostile_input_never_panics() {
    for src in [
        "",
        "\n\n",
        "// only a comment",
        "/* open",
        "kernel",
        "@launch(32) kernel k() {",
        "fn f(a) = ((((a",
        "kernel k() { } } }",
        "\u{feff}kernel k() {}",
        "kernel k() { let x = 1 /* a */ /* b */ // c\n}",
        // Multi-byte whitespace inside a comment copied as written.
        "@launch(32)\nkernel k(O: tensor<f32>[N]) {\n    O[0] = max(1.0, /* a\n\u{3000}\u{3000}b */ 2.0)\n}\n",
    ] {
        let _ = format_source(src);
    }
}

#[test]
fn while_break_continue_return_and_unroll_round_trip() {
    let src = "@launch(32)\nkernel k(A: tensor<f32>[N]) {\n  let i = ctx.thread\n  if i >= N {\n    return\n  }\n  var j = 0\n  while   j<4 {\n    j += 1\n    if j == 2 { continue }\n    if j == 3 {\n      break\n    }\n  }\n  for k in range(0, 8) unroll 4 {\n    A[i] = f32(j + k)\n  }\n}\n";
    let once = phobos_core::format::format_source(src).expect("formats");
    assert!(once.contains("  while j < 4 {\n"), "{once}");
    assert!(once.contains("      continue\n"), "{once}");
    assert!(
        once.contains("for k in range(0, 8) unroll 4 {"),
        "the unroll factor is kept:\n{once}"
    );
    assert_eq!(
        phobos_core::format::format_source(&once).expect("formats"),
        once
    );
}

// ----- the meaning check: trees compared without their spans ---------------

fn tree(src: &str) -> File {
    let (file, diags) = phobos_core::parser::parse(src);
    assert!(!diags.iter().any(Diagnostic::is_error), "{src}: {diags:?}");
    comparable(file)
}

/// Every construct the syntax has, spans everywhere.
const EVERYTHING: &str = "fn f(a, b) = -(a + b) * 2.5 + nan + inf
@grid(4, 2)
@aligned(K = 4)
@autotune(B in [1, 2])
@launch(32)
kernel k(A: tensor<f32>[N, 8], s: f32) {
  let x: f32 = A[0, 0 :+ 4][1] + A[0, :][0] + f(s, 1.0)
  var i = 0
  while i < 4 {
    i += 1
    if i == 2 { continue } else if i == 3 { break } else { return }
  }
  for j in range(0, N, 2) unroll 2 {
    A[j, 0] = sum<over ctx.lane, width 8>(x) + shfl<from (ctx.lane >> 1)>(x) + f32(ctx.block.x)
  }
  store(A[0, 0 :+ 4], 0, x)
}
@mystery(1)
kernel u(A: tensor<f32>[N]) {
  A[0] = 1.0
}
";

/// A span the walk missed would fail formatting wherever that construct
/// appears (the trees would differ): no span may be left, on any
/// construct and on every corpus file.
#[test]
fn comparable_erases_every_span() {
    let mut sources = vec![("everything".to_string(), EVERYTHING.to_string())];
    sources.extend(common::corpus());
    assert!(sources.len() > 10);
    for (name, src) in sources {
        let json = serde_json::to_string(&tree(&src)).expect("json");
        for key in ["\"start\":", "\"end\":"] {
            for (at, _) in json.match_indices(key) {
                // (`Subscript::Span`'s `start` is an expression.)
                let value = &json[at + key.len()..];
                let number = value.split(|c: char| !c.is_ascii_digit()).next();
                assert!(
                    matches!(number, Some("0" | "")),
                    "{name}: a span is left at {}",
                    &json[at.saturating_sub(80)..(at + 40).min(json.len())]
                );
            }
        }
        // Spans of tuple fields (`Dim::Const`, `Subscript::Full`) have
        // no field name in JSON, but they are `Span` structs all the
        // same, so the keys above cover them.
    }
}

#[test]
fn layout_and_spans_do_not_count_but_meaning_does() {
    let same = tree(EVERYTHING);
    let relaid = EVERYTHING.replace("  ", "      ").replace(", ", " , ");
    assert!(tree(&relaid) == same, "only layout changed");
    // Attributes in another order read the same when each is known and
    // appears once.
    let reordered = EVERYTHING.replace(
        "@grid(4, 2)\n@aligned(K = 4)",
        "@aligned(K = 4)\n@grid(4, 2)",
    );
    assert!(tree(&reordered) == same);
    // `nan` equals `nan` here, though NaN never equals NaN.
    assert!(tree("fn g(a) = a + nan") == tree("fn g(a) = a+nan"));
    for changed in [
        EVERYTHING.replace("2.5", "2.6"),
        EVERYTHING.replace("nan + inf", "inf + inf"),
        EVERYTHING.replace("-(a + b) * 2.5", "-(a + b * 2.5)"),
        EVERYTHING.replace("f(s, 1.0)", "f(1.0, s)"),
        EVERYTHING.replace("width 8", "width 4"),
        EVERYTHING.replace("unroll 2", "unroll 4"),
        EVERYTHING.replace("i += 1", "i -= 1"),
        EVERYTHING.replace("0 :+ 4][1]", "0 :+ 4][2]"),
        EVERYTHING.replace("tensor<f32>[N, 8]", "tensor<f32>[N, 9]"),
        EVERYTHING.replace("let x: f32", "let x: f16"),
        EVERYTHING.replace(" else { return }", "\n    return"),
    ] {
        assert!(tree(&changed) != same, "not told apart:\n{changed}");
    }
    // A duplicated attribute is not reordered: order then matters.
    assert!(
        tree("@launch(32)\n@launch(64)\nkernel k(A: tensor<f32>[N]) {\n  A[0] = 1.0\n}\n")
            != tree("@launch(64)\n@launch(32)\nkernel k(A: tensor<f32>[N]) {\n  A[0] = 1.0\n}\n")
    );
}

/// docs/language.md: every list between parentheses or brackets may end
/// with a comma (the formatter writes one when it breaks a list), and a
/// collective's configuration may not.
#[test]
fn a_trailing_comma_is_the_same_list_in_every_bracketed_list() {
    let plain = "fn f(a, b) = max(a, b)
@grid(4, 2)
@aligned(K = 4)
@autotune(B in [1, 2])
@launch(32)
kernel k(A: tensor<f32>[N, 8], s: f32) {
  var t = shared<f32>[4, 8]
  let x = A[0, 0 :+ 4][1] + f(s, 1.0)
  for j in range(0, N, 2) {
    A[j, 0] = x
  }
}
";
    let commas = "fn f(a, b,) = max(a, b,)
@grid(4, 2,)
@aligned(K = 4,)
@autotune(B in [1, 2,],)
@launch(32)
kernel k(A: tensor<f32>[N, 8,], s: f32,) {
  var t = shared<f32>[4, 8,]
  let x = A[0, 0 :+ 4,][1,] + f(s, 1.0,)
  for j in range(0, N, 2,) {
    A[j, 0,] = x
  }
}
";
    assert_eq!(tree(commas), tree(plain));
    let (_, diags) = phobos_core::parser::parse(
        "@launch(32)\nkernel k(A: tensor<f32>[N]) {\n  A[0] = sum<over ctx.lane,>(A[0])\n}\n",
    );
    assert!(diags.iter().any(Diagnostic::is_error), "{diags:?}");
}

/// A block comment after the statement of a one-line block stays after
/// it; it used to move up to the `{` line.
#[test]
fn a_comment_at_the_end_of_a_one_line_block_stays_after_its_statement() {
    let src = "@launch(32)\nkernel k(O: tensor<f32>[N]) {\n  if ctx.thread < 4 { O[0] = 1.0 /* end */ }\n  if ctx.thread < 2 { /* start */ O[1] = 2.0 }\n}\n";
    assert_eq!(
        fmt(src),
        "@launch(32)\nkernel k(O: tensor<f32>[N]) {\n  if ctx.thread < 4 {\n    O[0] = 1.0 /* end */\n  }\n  if ctx.thread < 2 { /* start */\n    O[1] = 2.0\n  }\n}\n"
    );
}

/// Tabs in a block comment are kept: a later line indented with a tab
/// (which the comment's first line does not have) used to lose it.
#[test]
fn tabs_in_a_block_comment_are_kept() {
    let src =
        "@launch(32)\nkernel k(O: tensor<f32>[N]) {\n  /* a\tb\n\tc\n  \td */\n  O[0] = 1.0\n}\n";
    assert_eq!(fmt(src), src);
    // Moved to a new indentation, the spaces it shares move with it.
    let src = "@launch(32)\nkernel k(O: tensor<f32>[N]) {\n      /* a\n      \tb */\n      O[0] = 1.0\n}\n";
    assert_eq!(
        fmt(src),
        "@launch(32)\nkernel k(O: tensor<f32>[N]) {\n  /* a\n  \tb */\n  O[0] = 1.0\n}\n"
    );
}

/// `\r\n` and lone `\r` line breaks format like `\n` ones, to `\n`.
#[test]
fn cr_and_crlf_sources_format_to_lf() {
    let tidy = "@launch(32)\nkernel k(O: tensor<f32>[N]) { // body\n  // leading\n  O[0] = 1.0 // trailing\n}\n";
    for eol in ["\r\n", "\r"] {
        assert_eq!(fmt(&tidy.replace('\n', eol)), tidy, "{eol:?}");
    }
}
