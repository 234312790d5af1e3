//! Documents that broke the language server: non-ASCII text before a
//! completion, line ends other than `\n`, a document over the compiler's
//! size limit, and hover in a kernel with errors. Each case asks the
//! analysis what the server would ask it, by byte offset.

use lsp_types::Position;
use phobos_lsp::server::{offset, position};
use phobos_lsp::Analysis;

const KERNEL: &str = "@launch(128)
kernel k(A: tensor<f32>[N, 128], O: tensor<f32>[1, N]) {
  let row = ctx.block.x * ctx.warps + ctx.warp
  let v = A[0, ctx.thread]
  if ctx.lane == 0 {
    O[0, 0] = sum<over ctx.lane>(v)
  }
}
";

/// Completion right after a character of several bytes panicked on a byte
/// index inside it. Every offset of a document full of them must answer,
/// and hover, definition and references too.
#[test]
fn every_offset_after_non_ascii_text_answers() {
    let src = "// naï café 🙂 ünïcödé\n@launch(32)\nkernel k(O: tensor<f32>[32]) {\n  let 🙂 = 1\n  O[ctx.thread] = 1.0 // naï\n}\n/* 🙂é */";
    let a = Analysis::new(src);
    for at in 0..=src.len() {
        let _ = a.completions(at);
        let _ = a.hover(at);
        let _ = a.definition(at);
        let _ = a.references(at);
    }
    // Right after `ï`, the word being typed is empty: every keyword is
    // offered.
    let after = src.find("naï").unwrap() + "naï".len();
    assert!(a.completions(after).iter().any(|c| c.label == "kernel"));
}

/// LSP counts `\n`, `\r\n` and a lone `\r` as line ends; the analysis,
/// the positions it gives and the offsets it reads must agree with that.
#[test]
fn lines_end_at_cr_crlf_and_lf() {
    for (name, eol) in [("LF", "\n"), ("CRLF", "\r\n"), ("CR", "\r")] {
        let src = KERNEL.replace('\n', eol);
        let a = Analysis::new(&src);
        let errors: Vec<_> = a.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert_eq!(errors.len(), 1, "{name}: {errors:?}");
        assert_eq!(errors[0].code.to_string(), "P0700", "{name}");
        let primary = errors[0].labels.iter().find(|l| l.primary).unwrap();
        // `sum<over ctx.lane>` is on the sixth line (0-based line 5).
        let start = position(&a, primary.span.start as usize);
        assert_eq!(start.line, 5, "{name}: {start:?}");
        assert_eq!(start.character, 14, "{name}: {start:?}");
        // And back: the position of `sum` reads as its offset.
        assert_eq!(offset(&a, start), primary.span.start as usize, "{name}");
        // A position past a line's end stops at the line's end, before
        // its line break.
        let line_end = offset(&a, Position::new(0, 999));
        assert_eq!(&src[..line_end], "@launch(128)", "{name}");
    }
}

/// A line comment ends at a lone `\r` too: a CR-only file's comment does
/// not swallow the kernel after it.
#[test]
fn a_line_comment_ends_at_a_lone_cr() {
    let src = format!("// a comment\r{}", KERNEL.replace('\n', "\r"));
    let a = Analysis::new(&src);
    let codes: Vec<String> = a.diagnostics.iter().map(|d| d.code.to_string()).collect();
    assert_eq!(codes, ["P0700"]);
}

/// A document over the compiler's limit gets P0005 and no per-byte work:
/// semantic tokens used to cost about 40 bytes per source byte.
#[test]
fn a_document_over_the_source_limit_gets_p0005_and_no_tokens() {
    let src = format!(
        "{KERNEL}{}",
        "x ".repeat(phobos_core::parser::MAX_SOURCE_BYTES / 2 + 1)
    );
    let a = Analysis::new(&src);
    let codes: Vec<String> = a.diagnostics.iter().map(|d| d.code.to_string()).collect();
    assert_eq!(codes, ["P0005"]);
    assert!(a.semantic_tokens().is_empty());
    assert!(a.hover(KERNEL.find("row").unwrap()).is_none());
}

/// Hover in a kernel with a P0700 shows the type and uniformity of the
/// values the checker could judge: exactly what the error is about.
#[test]
fn hover_in_a_kernel_with_errors_shows_types_and_uniformity() {
    let a = Analysis::new(KERNEL);
    assert_eq!(a.diagnostics.len(), 1, "{:?}", a.diagnostics);
    let at = KERNEL.find("let v").unwrap() + 4;
    let (text, _) = a.hover(at).expect("hover on `v`");
    assert!(text.contains("type `f32`"), "{text}");
    assert!(text.contains("varying"), "{text}");
    assert!(text.contains("The kernel has errors"), "{text}");
    // The condition, the cause of the error, has its uniformity shown.
    let at = KERNEL.find("ctx.lane == 0").unwrap() + "ctx.lane ".len();
    let (text, _) = a.hover(at).expect("hover on `==`");
    assert!(text.contains("type `bool`"), "{text}");
    assert!(text.contains("The kernel has errors"), "{text}");
}
