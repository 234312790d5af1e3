//! Diagnostics for people and for tools: `render` draws them like rustc
//! (`error[P0700]: ...`, `--> file.pho:7:9`, the source line, carets,
//! secondary labels and notes) with codespan-reporting; `to_json` gives one
//! object per diagnostic. Pure functions of their inputs: no IO here.

use crate::diag::{Diagnostic, Severity};
use crate::source::LineIndex;
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label as CsLabel};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor};

/// Render diagnostics as text, optionally with ANSI colours.
pub fn render(diags: &[Diagnostic], file_name: &str, src: &str, color: bool) -> String {
    let file = SimpleFile::new(file_name, src);
    // ASCII borders give rustc's `-->` and `|`.
    let config = term::Config {
        chars: term::Chars::ascii(),
        ..term::Config::default()
    };
    let mut out = if color {
        termcolor::Buffer::ansi()
    } else {
        termcolor::Buffer::no_color()
    };
    for d in diags {
        let cs = to_codespan(d, src.len());
        if term::emit(&mut out, &config, &file, &cs).is_err() {
            // A span codespan cannot place: fall back to the bare message.
            out.clear();
            return fallback(diags);
        }
    }
    String::from_utf8_lossy(out.as_slice()).into_owned()
}

fn fallback(diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| format!("{}[{}]: {}\n", severity_name(d.severity), d.code, d.message))
        .collect()
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

/// Clamp a span into the source so rendering never fails on a bad span.
fn clamp(range: std::ops::Range<usize>, len: usize) -> std::ops::Range<usize> {
    let start = range.start.min(len);
    start..range.end.clamp(start, len)
}

fn to_codespan(d: &Diagnostic, len: usize) -> CsDiagnostic<()> {
    let base = match d.severity {
        Severity::Error => CsDiagnostic::error(),
        Severity::Warning => CsDiagnostic::warning(),
    };
    let labels = d
        .labels
        .iter()
        .map(|l| {
            let range = clamp(l.span.range(), len);
            let label = if l.primary {
                CsLabel::primary((), range)
            } else {
                CsLabel::secondary((), range)
            };
            label.with_message(l.message.clone())
        })
        .collect();
    base.with_code(d.code)
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(d.notes.iter().map(|n| format!("help: {n}")).collect())
}

/// One JSON object per diagnostic: code, severity, message, file, line and
/// column of the primary label (1-based, columns in bytes), every label
/// with its own position, and the notes.
pub fn to_json(diags: &[Diagnostic], file_name: &str, src: &str) -> serde_json::Value {
    let index = LineIndex::new(src);
    let pos = |offset: u32| index.line_col((offset as usize).min(src.len()));
    let items = diags
        .iter()
        .map(|d| {
            let primary = d.labels.iter().find(|l| l.primary).or(d.labels.first());
            let (line, col) = primary.map_or((1, 1), |l| pos(l.span.start));
            let labels: Vec<serde_json::Value> = d
                .labels
                .iter()
                .map(|l| {
                    let (line, col) = pos(l.span.start);
                    let (end_line, end_col) = pos(l.span.end);
                    serde_json::json!({
                        "primary": l.primary,
                        "message": l.message,
                        "start": l.span.start,
                        "end": l.span.end,
                        "line": line,
                        "col": col,
                        "end_line": end_line,
                        "end_col": end_col,
                    })
                })
                .collect();
            serde_json::json!({
                "code": d.code,
                "severity": severity_name(d.severity),
                "message": d.message,
                "file": file_name,
                "line": line,
                "col": col,
                "labels": labels,
                "notes": d.notes,
            })
        })
        .collect();
    serde_json::Value::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Span;

    #[test]
    fn renders_like_rustc() {
        let src = "let a = 1\nlet b = oops\n";
        let d = Diagnostic::error("P0200", "cannot find `oops` in this scope")
            .primary(Span::new(18, 22), "not declared")
            .note("declare it first");
        let text = render(std::slice::from_ref(&d), "k.pho", src, false);
        assert!(
            text.starts_with("error[P0200]: cannot find `oops` in this scope"),
            "{text}"
        );
        assert!(text.contains("k.pho:2:9"), "{text}");
        assert!(text.contains("^^^^ not declared"), "{text}");
        let json = to_json(&[d], "k.pho", src);
        assert_eq!(json[0]["line"], 2);
        assert_eq!(json[0]["col"], 9);
    }

    #[test]
    fn out_of_range_spans_do_not_panic() {
        let d = Diagnostic::error("P0001", "x").primary(Span::new(50, 90), "far");
        let text = render(&[d], "k.pho", "short", false);
        assert!(text.contains("P0001"));
    }
}
