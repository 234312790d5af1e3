//! Diagnostics: one struct every stage converts its errors into, rendered
//! like rustc by `codespan-reporting`, or as JSON. Codes are stable and
//! documented in docs/language.md.

use crate::ast::Span;
use serde::Serialize;

/// Diagnostics kept per file; the rest are counted in one last
/// diagnostic (P0006), so a file of a million bad lines reports quickly.
pub const MAX_DIAGNOSTICS: usize = 100;

/// Keeps the first [`MAX_DIAGNOSTICS`] of `diags` and counts the rest.
pub fn cap(diags: &mut Vec<Diagnostic>) {
    if diags.len() <= MAX_DIAGNOSTICS {
        return;
    }
    let dropped = diags.split_off(MAX_DIAGNOSTICS);
    let errors = dropped.iter().filter(|d| d.is_error()).count();
    diags.push(
        Diagnostic::error(
            "P0006",
            format!(
                "{} more diagnostics ({errors} errors) not shown",
                dropped.len()
            ),
        )
        .note(format!(
            "only the first {MAX_DIAGNOSTICS} diagnostics of a file are shown; fix those first"
        )),
    );
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
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            labels: vec![],
            notes: vec![],
        }
    }
    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            code,
            message: message.into(),
            labels: vec![],
            notes: vec![],
        }
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
