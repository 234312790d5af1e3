//! Diagnostics: one struct every stage converts its errors into, rendered
//! like rustc by `codespan-reporting`, or as JSON. Codes are stable and
//! documented in docs/language.md.

use crate::ast::Span;
use serde::Serialize;

/// Diagnostics kept per file; the rest are counted in one last
/// diagnostic (P0006), so a file of a million bad lines reports quickly.
pub const MAX_DIAGNOSTICS: usize = 100;

/// Keeps the first [`MAX_DIAGNOSTICS`] of `diags` and counts the rest.
/// The count is one P0006 diagnostic, sorted last, that stands for the
/// errors and warnings it hides (see [`Diagnostic::hidden`]).
pub fn cap(diags: &mut Vec<Diagnostic>) {
    if diags.len() <= MAX_DIAGNOSTICS {
        return;
    }
    let dropped = diags.split_off(MAX_DIAGNOSTICS);
    let hidden = Counts::of(&dropped);
    diags.push(
        Diagnostic::not_shown(
            format!(
                "{} more diagnostics ({} errors, {} warnings) not shown",
                hidden.total(),
                hidden.errors,
                hidden.warnings
            ),
            hidden,
        )
        .note(format!(
            "only the first {MAX_DIAGNOSTICS} diagnostics of a file are shown; fix those first"
        )),
    );
}

/// How many errors and warnings a list of diagnostics stands for: a P0006
/// count adds the diagnostics it hides, not itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub errors: usize,
    pub warnings: usize,
}

impl Counts {
    pub fn of(diags: &[Diagnostic]) -> Counts {
        let mut c = Counts::default();
        for d in diags {
            c.add(d);
        }
        c
    }
    /// Counts `d` (what it hides, for a P0006).
    pub fn add(&mut self, d: &Diagnostic) {
        match (d.hidden, d.severity) {
            (Some(h), _) => {
                self.errors += h.errors;
                self.warnings += h.warnings;
            }
            (None, Severity::Error) => self.errors += 1,
            (None, Severity::Warning) => self.warnings += 1,
        }
    }
    pub fn total(self) -> usize {
        self.errors + self.warnings
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
    /// The primary label gets the carets; secondary labels point at causes.
    pub primary: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Stable code, `P0001`...
    pub code: &'static str,
    pub message: String,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    /// For a count of diagnostics that are not shown (P0006): the errors
    /// and warnings it stands for. `None` for every other diagnostic.
    pub hidden: Option<Counts>,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            labels: vec![],
            notes: vec![],
            hidden: None,
        }
    }
    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            code,
            message: message.into(),
            labels: vec![],
            notes: vec![],
            hidden: None,
        }
    }
    /// P0006: `hidden` diagnostics were dropped and only counted. It is an
    /// error when any of them is, so "does this file have errors" stays a
    /// look at severities; [`Counts::of`] counts what it hides instead.
    pub fn not_shown(message: impl Into<String>, hidden: Counts) -> Diagnostic {
        let mut d = if hidden.errors > 0 {
            Diagnostic::error("P0006", message)
        } else {
            Diagnostic::warning("P0006", message)
        };
        d.hidden = Some(hidden);
        d
    }
    pub fn primary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: true,
        });
        self
    }
    pub fn secondary(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            primary: false,
        });
        self
    }
    pub fn note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}
