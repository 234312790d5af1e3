//! Diagnostics for people and for tools: `render` draws them like rustc
//! (`error[P0700]: ...`, `--> file.pho:7:9`, the source line, carets,
//! secondary labels and notes) with codespan-reporting; `to_json` gives one
//! object per diagnostic. Pure functions of their inputs: no IO here.

use crate::diag::{Diagnostic, Severity};
use crate::source::{is_line_break, LineIndex};
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label as CsLabel};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor};

/// Render diagnostics as text, optionally with ANSI colours.
pub fn render(diags: &[Diagnostic], file_name: &str, src: &str, color: bool) -> String {
    let src = &lone_cr_as_newline(src);
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
        // Lines longer than `MAX_SHOWN` are shown around the labels only.
        let result = if src.lines().any(|l| l.len() > MAX_SHOWN) {
            let elided = Elided::new(file_name, src, &cs);
            let cs = elided.remap(cs);
            term::emit(&mut out, &config, &elided, &cs)
        } else {
            term::emit(&mut out, &config, &file, &cs)
        };
        if result.is_err() {
            // A span codespan cannot place: fall back to the bare message.
            out.clear();
            return fallback(diags);
        }
    }
    String::from_utf8_lossy(out.as_slice()).into_owned()
}

/// Longest source line shown whole, in bytes.
const MAX_SHOWN: usize = 160;
/// Bytes kept on each side of the labels on a longer line.
const CONTEXT: usize = 40;

/// The source as one diagnostic shows it: each line longer than
/// [`MAX_SHOWN`] cut to a window around that diagnostic's labels (or to its
/// start), the cuts marked `…`. Line numbers are unchanged and the `-->`
/// position is the original's; labels are moved into the shown text.
struct Elided<'a> {
    name: &'a str,
    original: &'a str,
    shown: String,
    /// Per line: original start, shown start, and the window kept
    /// (original offsets) with the bytes of the `…` before it.
    lines: Vec<ElidedLine>,
}

/// `src` with each lone `\r` (a line break, see `source::is_line_break`)
/// turned into `\n`, which codespan-reporting counts: one byte for one, so
/// every span still points at the same text.
fn lone_cr_as_newline(src: &str) -> std::borrow::Cow<'_, str> {
    let bytes = src.as_bytes();
    if !(0..bytes.len()).any(|i| bytes[i] == b'\r' && is_line_break(bytes, i)) {
        return std::borrow::Cow::Borrowed(src);
    }
    let out: String = src
        .char_indices()
        .map(|(i, c)| {
            if c == '\r' && is_line_break(bytes, i) {
                '\n'
            } else {
                c
            }
        })
        .collect();
    std::borrow::Cow::Owned(out)
}

#[derive(Clone, Copy)]
struct ElidedLine {
    orig_start: usize,
    shown_start: usize,
    keep: (usize, usize),
    prefix: usize,
}

impl<'a> Elided<'a> {
    fn new(name: &'a str, src: &'a str, d: &CsDiagnostic<()>) -> Elided<'a> {
        let mut shown = String::with_capacity(src.len().min(1 << 16));
        let mut lines = Vec::new();
        let mut orig_start = 0;
        for line in src.split_inclusive('\n') {
            let body = line.trim_end_matches('\n');
            let end = orig_start + body.len();
            let in_line: Vec<&std::ops::Range<usize>> = d
                .labels
                .iter()
                .map(|l| &l.range)
                .filter(|r| r.start <= end && r.end >= orig_start)
                .collect();
            let (lo, hi) = if body.len() <= MAX_SHOWN {
                (orig_start, end)
            } else {
                let first = in_line.iter().map(|r| r.start.max(orig_start)).min();
                let last = in_line.iter().map(|r| r.end.min(end)).max();
                let lo = first.map_or(orig_start, |f| f.saturating_sub(CONTEXT).max(orig_start));
                let hi = last.map_or(lo, |l| l + CONTEXT).max(lo + CONTEXT).min(end);
                let hi = hi.min(lo + 2 * MAX_SHOWN);
                (floor_char(src, lo), floor_char(src, hi))
            };
            let prefix = if lo > orig_start { "…" } else { "" };
            lines.push(ElidedLine {
                orig_start,
                shown_start: shown.len(),
                keep: (lo, hi),
                prefix: prefix.len(),
            });
            shown.push_str(prefix);
            shown.push_str(&src[lo..hi]);
            if hi < end {
                shown.push('…');
            }
            shown.push_str(&line[body.len()..]);
            orig_start += line.len();
        }
        lines.push(ElidedLine {
            orig_start,
            shown_start: shown.len(),
            keep: (orig_start, orig_start),
            prefix: 0,
        });
        Elided {
            name,
            original: src,
            shown,
            lines,
        }
    }

    fn line_of_orig(&self, pos: usize) -> ElidedLine {
        let i = self.lines.partition_point(|l| l.orig_start <= pos);
        self.lines[i.saturating_sub(1)]
    }

    fn line_of_shown(&self, pos: usize) -> ElidedLine {
        let i = self.lines.partition_point(|l| l.shown_start <= pos);
        self.lines[i.saturating_sub(1)]
    }

    fn to_shown(&self, pos: usize) -> usize {
        let l = self.line_of_orig(pos);
        l.shown_start + l.prefix + pos.clamp(l.keep.0, l.keep.1) - l.keep.0
    }

    fn to_original(&self, pos: usize) -> usize {
        let l = self.line_of_shown(pos);
        let into = pos.saturating_sub(l.shown_start + l.prefix);
        (l.keep.0 + into).min(l.keep.1.max(l.keep.0))
    }

    fn remap(&self, mut d: CsDiagnostic<()>) -> CsDiagnostic<()> {
        for l in &mut d.labels {
            l.range = self.to_shown(l.range.start)..self.to_shown(l.range.end);
        }
        d
    }
}

/// The char boundary at or below `i`.
fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl<'f> codespan_reporting::files::Files<'f> for Elided<'_> {
    type FileId = ();
    type Name = &'f str;
    type Source = &'f str;

    fn name(&'f self, (): ()) -> Result<&'f str, codespan_reporting::files::Error> {
        Ok(self.name)
    }

    fn source(&'f self, (): ()) -> Result<&'f str, codespan_reporting::files::Error> {
        Ok(&self.shown)
    }

    fn line_index(
        &'f self,
        (): (),
        byte_index: usize,
    ) -> Result<usize, codespan_reporting::files::Error> {
        Ok(self
            .lines
            .partition_point(|l| l.shown_start <= byte_index)
            .saturating_sub(1))
    }

    fn line_range(
        &'f self,
        (): (),
        line_index: usize,
    ) -> Result<std::ops::Range<usize>, codespan_reporting::files::Error> {
        let start = self
            .lines
            .get(line_index)
            .ok_or(codespan_reporting::files::Error::LineTooLarge {
                given: line_index,
                max: self.lines.len().saturating_sub(1),
            })?
            .shown_start;
        let end = self
            .lines
            .get(line_index + 1)
            .map_or(self.shown.len(), |l| l.shown_start);
        Ok(start..end)
    }

    /// The position in the original text, so `-->` names the real column.
    fn location(
        &'f self,
        (): (),
        byte_index: usize,
    ) -> Result<codespan_reporting::files::Location, codespan_reporting::files::Error> {
        let line_index = self.line_index((), byte_index)?;
        let original = self.to_original(byte_index);
        let start = self.lines[line_index].orig_start;
        let column = self
            .original
            .get(start..original)
            .map_or(0, |s| s.chars().count());
        Ok(codespan_reporting::files::Location {
            line_number: line_index + 1,
            column_number: column + 1,
        })
    }
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
    base.with_code(d.code.as_str())
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(d.notes.iter().map(|n| format!("help: {n}")).collect())
}

/// One JSON object per diagnostic: code, severity, message, file, line and
/// column of the primary label (1-based, columns in bytes), every label
/// with its own position, and the notes; a count of diagnostics not shown
/// (P0006) adds `hidden: {errors, warnings}`.
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
            let mut item = serde_json::json!({
                "code": d.code,
                "severity": severity_name(d.severity),
                "message": d.message,
                "file": file_name,
                "line": line,
                "col": col,
                "labels": labels,
                "notes": d.notes,
            });
            // P0006: the errors and warnings it stands for.
            if let Some(hidden) = d.hidden {
                item["hidden"] = serde_json::json!(hidden);
            }
            item
        })
        .collect();
    serde_json::Value::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Span;
    use crate::diag::Code;

    #[test]
    fn renders_like_rustc() {
        let src = "let a = 1\nlet b = oops\n";
        let d = Code::P0200
            .error("cannot find `oops` in this scope")
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

    /// A file saved with lone `\r` line ends (or `\r\n`) is drawn and
    /// numbered by its lines, like one with `\n`.
    #[test]
    fn cr_and_crlf_files_are_shown_by_line() {
        for eol in ["\r", "\r\n"] {
            let src = format!("let a = 1{eol}let b = oops{eol}");
            let at = src.find("oops").expect("oops");
            let d = Code::P0200
                .error("cannot find `oops` in this scope")
                .primary(Span::new(at, at + 4), "not declared");
            let text = render(std::slice::from_ref(&d), "k.pho", &src, false);
            assert!(text.contains("k.pho:2:9"), "{eol:?}: {text}");
            assert!(text.contains("2 | let b = oops"), "{eol:?}: {text}");
            assert!(!text.contains("let a = 1\r"), "{eol:?}: {text}");
            let json = to_json(&[d], "k.pho", &src);
            assert_eq!(json[0]["line"], 2, "{eol:?}");
        }
    }

    #[test]
    fn long_lines_are_shown_around_the_caret() {
        let long = format!(
            "let a = {}oops{}\n",
            "x + ".repeat(50_000),
            " + y".repeat(50_000)
        );
        let src = format!("let z = 1\n{long}let w = 2\n");
        let at = src.find("oops").expect("oops");
        let d = Code::P0200
            .error("cannot find `oops` in this scope")
            .primary(Span::new(at, at + 4), "not declared");
        let text = render(std::slice::from_ref(&d), "k.pho", &src, false);
        assert!(
            text.len() < 2_000,
            "{} bytes:\n{}",
            text.len(),
            &text[..2_000.min(text.len())]
        );
        let col = at - src.find("let a").expect("line") + 1;
        assert!(text.contains(&format!("k.pho:2:{col}")), "{text}");
        assert!(text.contains("…"), "{text}");
        assert!(text.contains("oops"), "{text}");
        let caret_line = text.lines().find(|l| l.contains("^^^^")).expect("carets");
        let source_line = text.lines().find(|l| l.starts_with("2 |")).expect("source");
        let oops = source_line.find("oops").expect("oops");
        assert_eq!(
            caret_line.chars().position(|c| c == '^'),
            Some(source_line[..oops].chars().count()),
            "{text}"
        );
    }

    #[test]
    fn out_of_range_spans_do_not_panic() {
        let d = Code::P0001.error("x").primary(Span::new(50, 90), "far");
        let text = render(&[d], "k.pho", "short", false);
        assert!(text.contains("P0001"));
    }
}
