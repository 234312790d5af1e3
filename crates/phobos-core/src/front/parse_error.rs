//! The errors of the lexer and the parser, P0001 to P0005 and P0100 to
//! P0104: one variant per mistake, holding its span and the data its
//! message needs. [`ParseError::diagnostic`] is the one place that words
//! them; the lexer and the parser only say which error they found where.

use crate::ast::Span;
use crate::diag::{Code, Diagnostic};
use crate::limits::{MAX_CHAIN, MAX_DEPTH, MAX_SOURCE_BYTES};

#[derive(Clone, Debug, PartialEq)]
pub enum ParseError {
    /// P0001: a character that is no part of the language, as written.
    UnexpectedChar { span: Span, text: String },
    /// P0002: `/*` never closed (`span` is the `/*`).
    UnterminatedComment { span: Span },
    /// P0003: an integer literal above 64 bits.
    IntegerTooLarge { span: Span },
    /// P0004: digits run into letters, or `0x` without digits.
    MalformedNumber { span: Span },
    /// P0005: a source larger than [`MAX_SOURCE_BYTES`], not lexed.
    SourceTooLarge { bytes: usize },
    /// P0100: `expected WHAT, found FOUND` at the token found.
    Expected {
        span: Span,
        what: String,
        found: &'static str,
    },
    /// P0100: `range(...)` with other than 2 or 3 arguments.
    RangeArgs { span: Span, found: usize },
    /// P0101: nesting deeper than [`MAX_DEPTH`].
    TooDeep { span: Span },
    /// P0101: a chain of more than [`MAX_CHAIN`] operators or subscripts.
    TooLong { span: Span },
    /// P0102: `ctx.NAME` that is no field.
    NoCtxField { span: Span, name: String },
    /// P0102: `ctx.block.NAME` or `ctx.grid.NAME` that is no axis.
    NoCtxAxis { span: Span, name: String },
    /// P0103: a collective's configuration word that is none.
    UnknownConfig { span: Span, found: String },
    /// P0104: a type name that is none.
    UnknownType { span: Span, name: String },
}

impl ParseError {
    /// The rendered form: code, message, labels and notes.
    pub fn diagnostic(&self) -> Diagnostic {
        match self {
            ParseError::UnexpectedChar { span, text } => {
                Code::P0001.error( unexpected_char(text))
                    .primary(*span, "not part of the language")
            }
            ParseError::UnterminatedComment { span } => {
                Code::P0002.error( "unterminated block comment")
                    .primary(*span, "this comment is never closed")
                    .note("close it with `*/`")
            }
            ParseError::IntegerTooLarge { span } => {
                Code::P0003.error( "integer literal is too large")
                    .primary(*span, "does not fit in 64 bits")
            }
            ParseError::MalformedNumber { span } => Code::P0004.error( "malformed number")
                .primary(*span, "not a number")
                .note("integers are written `42`, `0x2a` or `1_000`; floats `1.0` or `1e-3`"),
            ParseError::SourceTooLarge { bytes } => Code::P0005.error(
                format!(
                    "the source is {bytes} bytes; the most Phobos compiles in one file is {MAX_SOURCE_BYTES} (1 MiB)"
                ),
            )
            .primary(Span::new(0, 0), "this file is too large")
            .note("split the kernels over several files"),
            ParseError::Expected { span, what, found } => {
                Code::P0100.error( format!("expected {what}, found {found}"))
                    .primary(*span, format!("expected {what}"))
            }
            ParseError::RangeArgs { span, found } => Code::P0100.error(
                format!("`range` takes 2 or 3 arguments, found {found}"),
            )
            .primary(
                *span,
                "write `range(start, end)` or `range(start, end, step)`",
            ),
            ParseError::TooDeep { span } => Code::P0101.error( "nesting is too deep")
                .primary(*span, format!("more than {MAX_DEPTH} levels deep"))
                .note("split the expression or block with `let`"),
            ParseError::TooLong { span } => Code::P0101.error( "expression is too long")
                .primary(
                    *span,
                    format!("more than {MAX_CHAIN} operators in one chain"),
                )
                .note("split the computation with `let`"),
            ParseError::NoCtxField { span, name } => {
                Code::P0102.error( format!("`ctx` has no field `{name}`"))
                    .primary(*span, "unknown field")
                    .note("the fields are thread, threads, warp, warps, lane, lanes, block.x|y|z and grid.x|y|z")
            }
            ParseError::NoCtxAxis { span, name } => {
                Code::P0102.error( format!("`ctx` has no axis `{name}`"))
                    .primary(*span, "expected `x`, `y` or `z`")
            }
            ParseError::UnknownConfig { span, found } => {
                Code::P0103.error( format!("unknown configuration `{found}`"))
                    .primary(*span, "expected over, width, from, xor, down or up")
            }
            ParseError::UnknownType { span, name } => {
                Code::P0104.error( format!("unknown type `{name}`"))
                    .primary(*span, "not a type")
                    .note("the types are bool i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64")
            }
        }
    }
}

impl ParseError {
    /// One error of every variant, with placeholder data: the list of
    /// what this stage can report (`tests/front_docs.rs` checks that every
    /// `Code` is produced by some stage, and snapshots every message).
    pub fn examples() -> Vec<ParseError> {
        let span = Span::new(0, 1);
        vec![
            ParseError::UnexpectedChar {
                span,
                text: "\u{feff}".into(),
            },
            ParseError::UnterminatedComment { span },
            ParseError::IntegerTooLarge { span },
            ParseError::MalformedNumber { span },
            ParseError::SourceTooLarge { bytes: 2 << 20 },
            ParseError::Expected {
                span,
                what: "`)`".into(),
                found: "end of file",
            },
            ParseError::RangeArgs { span, found: 4 },
            ParseError::TooDeep { span },
            ParseError::TooLong { span },
            ParseError::NoCtxField {
                span,
                name: "x".into(),
            },
            ParseError::NoCtxAxis {
                span,
                name: "w".into(),
            },
            ParseError::UnknownConfig {
                span,
                found: "across".into(),
            },
            ParseError::UnknownType {
                span,
                name: "f8".into(),
            },
        ]
    }
}

impl From<ParseError> for Diagnostic {
    fn from(e: ParseError) -> Diagnostic {
        e.diagnostic()
    }
}

/// Characters that print as nothing: zero-width spaces and joiners, the
/// byte-order mark, and other format characters.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{00ad}')
}

/// P0001's message. It names the code point of a character that is not
/// plain ASCII: a NUL, a byte-order mark or a zero-width space is
/// invisible between backticks.
fn unexpected_char(shown: &str) -> String {
    let named = match shown.chars().next() {
        Some(c) if c.is_control() || c.is_whitespace() || !c.is_ascii() => {
            format!("U+{:04X}", u32::from(c))
        }
        _ => String::new(),
    };
    match (named.is_empty(), shown.chars().next()) {
        (true, _) => format!("unexpected character `{shown}`"),
        (false, Some(c)) if c.is_control() || is_invisible(c) => {
            format!("unexpected character {named}")
        }
        _ => format!("unexpected character `{shown}` ({named})"),
    }
}
