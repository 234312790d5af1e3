//! Diagnostics: one struct every stage converts its errors into, rendered
//! like rustc by `codespan-reporting`, or as JSON. Codes are stable, listed
//! by the type [`Code`], and documented in docs/language.md.

use crate::ast::Span;
use serde::Serialize;

macro_rules! codes {
    ($($code:ident,)*) => {
        /// Every diagnostic code the compiler emits: the list of codes is this
        /// type. Each stage's error enum (`ParseError` in the front end,
        /// [`CheckError`](crate::check::CheckError),
        /// [`BackendError`](crate::backend::BackendError)) says which code
        /// each of its variants has; docs/language.md documents each code
        /// (tests/front_docs.rs checks both directions). Serialized, a code
        /// is its name, `"P0307"`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $($code,)*
        }

        impl Code {
            /// Every code, in order.
            pub const ALL: &'static [Code] = &[$(Code::$code,)*];

            /// The stable name, `"P0307"`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$code => stringify!($code),)*
                }
            }
        }
    };
}

codes! {
    P0001,
    P0002,
    P0003,
    P0004,
    P0005,
    P0006,
    P0100,
    P0101,
    P0102,
    P0103,
    P0104,
    P0200,
    P0201,
    P0202,
    P0203,
    P0204,
    P0205,
    P0206,
    P0207,
    P0208,
    P0210,
    P0211,
    P0300,
    P0301,
    P0302,
    P0303,
    P0304,
    P0305,
    P0306,
    P0307,
    P0308,
    P0309,
    P0310,
    P0311,
    P0312,
    P0313,
    P0400,
    P0401,
    P0402,
    P0403,
    P0404,
    P0407,
    P0408,
    P0409,
    P0411,
    P0412,
    P0413,
    P0414,
    P0415,
    P0416,
    P0417,
    P0418,
    P0419,
    P0430,
    P0431,
    P0432,
    P0440,
    P0441,
    P0442,
    P0450,
    P0451,
    P0452,
    P0453,
    P0454,
    P0455,
    P0456,
    P0457,
    P0458,
    P0459,
    P0460,
    P0470,
    P0471,
    P0472,
    P0473,
    P0500,
    P0501,
    P0502,
    P0503,
    P0504,
    P0505,
    P0506,
    P0507,
    P0508,
    P0509,
    P0510,
    P0600,
    P0601,
    P0602,
    P0603,
    P0604,
    P0605,
    P0606,
    P0607,
    P0608,
    P0609,
    P0610,
    P0612,
    P0613,
    P0615,
    P0616,
    P0700,
    P0701,
    P0702,
    P0703,
    P0704,
    P0801,
    P0802,
    P0803,
    P0810,
    P0811,
    P0812,
    P0901,
}

impl Code {
    /// The code named `name` (`"P0307"`), if there is one.
    pub fn parse(name: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == name)
    }

    /// An error diagnostic with this code.
    pub fn error(self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, self, message)
    }

    /// A warning diagnostic with this code.
    pub fn warning(self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, self, message)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

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

/// A stage's diagnostics, kept up to a limit and only counted past it, so
/// garbage input cannot fill memory with them (the lexer's and the
/// parser's).
pub struct Limited {
    diags: Vec<Diagnostic>,
    limit: usize,
    /// Diagnostics past `limit`, counted only.
    unreported: Counts,
}

impl Limited {
    /// Starting from `diags`, which count toward `limit`.
    pub fn new(diags: Vec<Diagnostic>, limit: usize) -> Limited {
        Limited {
            diags,
            limit,
            unreported: Counts::default(),
        }
    }

    /// Keep `d`, or count it once `limit` diagnostics are kept.
    pub fn push(&mut self, d: Diagnostic) {
        if self.diags.len() < self.limit {
            self.diags.push(d);
        } else {
            self.unreported.add(&d);
        }
    }

    /// The diagnostics kept, then the P0006 of
    /// [`Diagnostic::unreported`] for those only counted.
    pub fn finish(self, what: &str, stage: &str) -> Vec<Diagnostic> {
        let mut diags = self.diags;
        diags.extend(Diagnostic::unreported(
            self.unreported,
            what,
            stage,
            self.limit,
        ));
        diags
    }
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
    pub code: Code,
    pub message: String,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    /// For a count of diagnostics that are not shown (P0006): the errors
    /// and warnings it stands for. `None` for every other diagnostic.
    pub hidden: Option<Counts>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
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
            Code::P0006.error(message)
        } else {
            Code::P0006.warning(message)
        };
        d.hidden = Some(hidden);
        d
    }
    /// The P0006 a stage that stops reporting after `limit` diagnostics
    /// adds for the `hidden` ones it only counted ("N more `what` not
    /// reported: the `stage` stops reporting after `limit`"), or `None`
    /// when it hid none.
    pub fn unreported(hidden: Counts, what: &str, stage: &str, limit: usize) -> Option<Diagnostic> {
        (hidden.total() > 0).then(|| {
            let n = hidden.total();
            let message =
                format!("{n} more {what} not reported: the {stage} stops reporting after {limit}");
            Diagnostic::not_shown(message, hidden)
        })
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

/// The indefinite article for `word` in a message, as the word is read
/// aloud: "an i8", "an f16", "an 8-byte", "an 18", "an index"; "a u8", "a
/// bf16", "a 16-byte", "a tile". A word that starts with a letter then a
/// digit (a type name) is spelt out, so its first letter's name decides
/// (ef, aitch, el, em, en, ar, ess, ex and the vowels but u start with a
/// vowel sound); a number is read as one (eight, eleven, eighteen).
pub fn a_or_an(word: &str) -> &'static str {
    let mut chars = word.chars();
    let first = chars.next().unwrap_or(' ').to_ascii_lowercase();
    let second = chars.next().unwrap_or(' ');
    let vowel = if first.is_ascii_digit() {
        let digits: String = word.chars().take_while(|c| c.is_ascii_digit()).collect();
        // 11 and 18 (and 11,000 or 18 million) are read "eleven" and
        // "eighteen"; 8, 80, 800 all start "eight".
        first == '8'
            || ((digits.len() % 3 == 2) && (digits.starts_with("11") || digits.starts_with("18")))
    } else if second.is_ascii_digit() {
        "aefhilmnorsx".contains(first)
    } else {
        "aeio".contains(first)
    };
    if vowel {
        "an"
    } else {
        "a"
    }
}

#[cfg(test)]
mod article_tests {
    use super::a_or_an;

    #[test]
    fn the_article_follows_how_the_word_is_read() {
        for w in [
            "i8", "f16", "f32", "8-byte", "80", "11", "18", "index", "opaque", "s32",
        ] {
            assert_eq!(a_or_an(w), "an", "{w}");
        }
        for w in [
            "u8", "bf16", "tf32", "16-byte", "4-byte", "1", "110", "tile", "b32", "u32",
        ] {
            assert_eq!(a_or_an(w), "a", "{w}");
        }
    }
}
