//! The lexer: source text → tokens with byte spans. It never fails: a
//! character it does not know becomes an error diagnostic and is skipped.
//! Words are not classified beyond the few reserved keywords; the parser
//! decides what `over`, `ctx`, `tensor` or `range` mean where they appear.

use crate::ast::Span;
use crate::diag::{Diagnostic, Limited};
use crate::parse_error::ParseError;
use crate::source::is_line_break;

/// One token. `nl_before` records a line break between it and the previous
/// token: statements end at line breaks, so an operator that starts a new
/// line does not continue the previous expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub kind: Tok,
    pub span: Span,
    pub nl_before: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident,
    Int(u64),
    Float(f64),
    /// A number the lexer already reported (too large, or malformed): the
    /// parser reads it as an expression that had an error, so no check
    /// reports the placeholder value it once was (`@launch(0)`).
    BadNumber,
    /// Reserved words.
    Fn,
    Kernel,
    Let,
    Var,
    If,
    Else,
    For,
    While,
    Break,
    Continue,
    Return,
    In,
    True,
    False,
    // Punctuation.
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Dot,
    Colon,
    /// `:+`, the span operator.
    ColonPlus,
    Semi,
    At,
    Assign,
    /// `+=`, `<<=`, ...: the operator's token text without `=`.
    OpAssign(crate::ast::BinOp),
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Amp,
    Pipe,
    Caret,
    Shl,
    Shr,
    Bang,
    EqEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    AndAnd,
    OrOr,
    Eof,
}

impl Tok {
    /// How the token is named in "expected ..., found ..." messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Tok::Ident => "a name",
            Tok::Int(_) => "an integer",
            Tok::Float(_) => "a float",
            Tok::BadNumber => "a number",
            Tok::Fn => "`fn`",
            Tok::Kernel => "`kernel`",
            Tok::Let => "`let`",
            Tok::Var => "`var`",
            Tok::If => "`if`",
            Tok::Else => "`else`",
            Tok::For => "`for`",
            Tok::While => "`while`",
            Tok::Break => "`break`",
            Tok::Continue => "`continue`",
            Tok::Return => "`return`",
            Tok::In => "`in`",
            Tok::True => "`true`",
            Tok::False => "`false`",
            Tok::LParen => "`(`",
            Tok::RParen => "`)`",
            Tok::LBracket => "`[`",
            Tok::RBracket => "`]`",
            Tok::LBrace => "`{`",
            Tok::RBrace => "`}`",
            Tok::Comma => "`,`",
            Tok::Dot => "`.`",
            Tok::Colon => "`:`",
            Tok::ColonPlus => "`:+`",
            Tok::Semi => "`;`",
            Tok::At => "`@`",
            Tok::Assign => "`=`",
            Tok::OpAssign(_) => "a compound assignment",
            Tok::Plus => "`+`",
            Tok::Minus => "`-`",
            Tok::Star => "`*`",
            Tok::Slash => "`/`",
            Tok::Percent => "`%`",
            Tok::Amp => "`&`",
            Tok::Pipe => "`|`",
            Tok::Caret => "`^`",
            Tok::Shl => "`<<`",
            Tok::Shr => "`>>`",
            Tok::Bang => "`!`",
            Tok::EqEq => "`==`",
            Tok::Ne => "`!=`",
            Tok::Lt => "`<`",
            Tok::Le => "`<=`",
            Tok::Gt => "`>`",
            Tok::Ge => "`>=`",
            Tok::AndAnd => "`&&`",
            Tok::OrOr => "`||`",
            Tok::Eof => "the end of the file",
        }
    }
}

fn keyword(word: &str) -> Option<Tok> {
    Some(match word {
        "fn" => Tok::Fn,
        "kernel" => Tok::Kernel,
        "let" => Tok::Let,
        "var" => Tok::Var,
        "if" => Tok::If,
        "else" => Tok::Else,
        "for" => Tok::For,
        "while" => Tok::While,
        "break" => Tok::Break,
        "continue" => Tok::Continue,
        "return" => Tok::Return,
        "in" => Tok::In,
        "true" => Tok::True,
        "false" => Tok::False,
        // The float literals that no digits can spell.
        "inf" => Tok::Float(f64::INFINITY),
        "nan" => Tok::Float(f64::NAN),
        _ => return None,
    })
}

/// Diagnostics the lexer keeps; later ones are only counted.
const LEX_DIAGNOSTICS: usize = 10 * crate::diag::MAX_DIAGNOSTICS;

pub fn lex(src: &str) -> (Vec<Token>, Vec<Diagnostic>) {
    let (toks, _, diags) = lex_with_comments(src);
    (toks, diags)
}

/// A comment the lexer skipped: `//` to the end of the line (the span ends
/// before the line break) or a whole `/* ... */`. Trivia for the formatter
/// and the language server; the parser never sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comment {
    pub span: Span,
    /// `true` for `/* ... */`.
    pub block: bool,
}

/// Like [`lex`], and also the comments in source order.
pub fn lex_with_comments(src: &str) -> (Vec<Token>, Vec<Comment>, Vec<Diagnostic>) {
    let mut lx = Lexer {
        src: src.as_bytes(),
        text: src,
        // A UTF-8 byte-order mark some editors write is not part of the text.
        pos: if src.starts_with('\u{feff}') { 3 } else { 0 },
        nl: false,
        toks: Vec::with_capacity(src.len() / 3 + 1),
        comments: Vec::new(),
        diags: Limited::new(Vec::new(), LEX_DIAGNOSTICS),
    };
    lx.run();
    // The guess above is for short tokens; long statements made the
    // vector double past it. The tokens live as long as the parse.
    lx.toks.shrink_to_fit();
    let diags = lx.diags.finish("bad characters or numbers", "lexer");
    (lx.toks, lx.comments, diags)
}

struct Lexer<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
    nl: bool,
    toks: Vec<Token>,
    comments: Vec<Comment>,
    /// Up to [`LEX_DIAGNOSTICS`].
    diags: Limited,
}

impl Lexer<'_> {
    fn report(&mut self, e: ParseError) {
        self.diags.push(e.diagnostic());
    }

    fn peek(&self, ahead: usize) -> u8 {
        self.src.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn push(&mut self, kind: Tok, start: usize) {
        self.toks.push(Token {
            kind,
            span: Span::new(start, self.pos),
            nl_before: self.nl,
        });
        self.nl = false;
    }

    fn run(&mut self) {
        while self.pos < self.src.len() {
            let c = self.src[self.pos];
            let start = self.pos;
            match c {
                b'\n' | b'\r' if is_line_break(self.src, self.pos) => {
                    self.nl = true;
                    self.pos += 1;
                }
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'/' if self.peek(1) == b'/' => self.line_comment(),
                b'/' if self.peek(1) == b'*' => self.block_comment(),
                b'0'..=b'9' => self.number(),
                b'a'..=b'z' | b'A'..=b'Z' | b'_' => self.word(),
                _ if c.is_ascii() => self.punct(start),
                _ => self.unknown_char(start),
            }
        }
        let end = self.src.len();
        self.toks.push(Token {
            kind: Tok::Eof,
            span: Span::new(end, end),
            nl_before: true,
        });
    }

    fn line_comment(&mut self) {
        let start = self.pos;
        while self.pos < self.src.len() && !matches!(self.src[self.pos], b'\n' | b'\r') {
            self.pos += 1;
        }
        self.comments.push(Comment {
            span: Span::new(start, self.pos),
            block: false,
        });
    }

    /// `/* ... */`, nesting like Rust's.
    fn block_comment(&mut self) {
        let start = self.pos;
        let mut depth = 0usize;
        while self.pos < self.src.len() {
            match (self.src[self.pos], self.peek(1)) {
                (b'/', b'*') => {
                    depth += 1;
                    self.pos += 2;
                }
                (b'*', b'/') => {
                    depth -= 1;
                    self.pos += 2;
                    if depth == 0 {
                        self.comments.push(Comment {
                            span: Span::new(start, self.pos),
                            block: true,
                        });
                        return;
                    }
                }
                (b'\n' | b'\r', _) if is_line_break(self.src, self.pos) => {
                    self.nl = true;
                    self.pos += 1;
                }
                _ => self.pos += 1,
            }
        }
        self.report(ParseError::UnterminatedComment {
            span: Span::new(start, start + 2),
        });
    }

    fn word(&mut self) {
        let start = self.pos;
        while matches!(self.peek(0), b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_') {
            self.pos += 1;
        }
        let kind = keyword(&self.text[start..self.pos]).unwrap_or(Tok::Ident);
        self.push(kind, start);
    }

    fn number(&mut self) {
        let start = self.pos;
        if self.peek(0) == b'0' && matches!(self.peek(1), b'x' | b'X') {
            self.pos += 2;
            let digits = self.take_digits(|c| c.is_ascii_hexdigit());
            let value = u64::from_str_radix(&digits, 16);
            return self.finish_int(start, value.ok(), digits.is_empty());
        }
        let mut text = self.take_digits(|c| c.is_ascii_digit());
        let mut is_float = false;
        if self.peek(0) == b'.' && self.peek(1).is_ascii_digit() {
            self.pos += 1;
            text.push('.');
            text.push_str(&self.take_digits(|c| c.is_ascii_digit()));
            is_float = true;
        }
        if matches!(self.peek(0), b'e' | b'E') {
            let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
            if self.peek(1 + sign).is_ascii_digit() {
                text.push('e');
                if sign == 1 {
                    text.push(self.peek(1) as char);
                }
                self.pos += 1 + sign;
                text.push_str(&self.take_digits(|c| c.is_ascii_digit()));
                is_float = true;
            }
        }
        if matches!(self.peek(0), b'a'..=b'z' | b'A'..=b'Z' | b'_') {
            return self.bad_number(start);
        }
        if is_float {
            let v = text.parse::<f64>().unwrap_or(f64::INFINITY);
            self.push(Tok::Float(v), start);
        } else {
            self.finish_int(start, text.parse::<u64>().ok(), false);
        }
    }

    /// Digits accepted by `ok`, with `_` separators dropped.
    fn take_digits(&mut self, ok: impl Fn(u8) -> bool) -> String {
        let start = self.pos;
        while ok(self.peek(0)) || (self.peek(0) == b'_' && self.pos > start) {
            self.pos += 1;
        }
        self.text[start..self.pos].replace('_', "")
    }

    fn finish_int(&mut self, start: usize, value: Option<u64>, empty: bool) {
        if empty || matches!(self.peek(0), b'a'..=b'z' | b'A'..=b'Z' | b'_') {
            return self.bad_number(start);
        }
        match value {
            Some(v) => self.push(Tok::Int(v), start),
            None => {
                self.report(ParseError::IntegerTooLarge {
                    span: Span::new(start, self.pos),
                });
                self.push(Tok::BadNumber, start);
            }
        }
    }

    fn bad_number(&mut self, start: usize) {
        while matches!(self.peek(0), b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_') {
            self.pos += 1;
        }
        self.report(ParseError::MalformedNumber {
            span: Span::new(start, self.pos),
        });
        self.push(Tok::BadNumber, start);
    }

    fn unknown_char(&mut self, start: usize) {
        let ch = self.text[start..].chars().next().map_or(1, char::len_utf8);
        self.pos += ch;
        self.report_char(start);
    }

    fn report_char(&mut self, start: usize) {
        self.report(ParseError::UnexpectedChar {
            span: Span::new(start, self.pos),
            text: self.text[start..self.pos].to_string(),
        });
    }

    fn punct(&mut self, start: usize) {
        use crate::ast::BinOp;
        let (a, b, c) = (self.peek(0), self.peek(1), self.peek(2));
        let (kind, len) = match (a, b, c) {
            (b'<', b'<', b'=') => (Tok::OpAssign(BinOp::Shl), 3),
            (b'>', b'>', b'=') => (Tok::OpAssign(BinOp::Shr), 3),
            (b':', b'+', _) => (Tok::ColonPlus, 2),
            (b'=', b'=', _) => (Tok::EqEq, 2),
            (b'!', b'=', _) => (Tok::Ne, 2),
            (b'<', b'=', _) => (Tok::Le, 2),
            (b'>', b'=', _) => (Tok::Ge, 2),
            (b'<', b'<', _) => (Tok::Shl, 2),
            (b'>', b'>', _) => (Tok::Shr, 2),
            (b'&', b'&', _) => (Tok::AndAnd, 2),
            (b'|', b'|', _) => (Tok::OrOr, 2),
            (b'+', b'=', _) => (Tok::OpAssign(BinOp::Add), 2),
            (b'-', b'=', _) => (Tok::OpAssign(BinOp::Sub), 2),
            (b'*', b'=', _) => (Tok::OpAssign(BinOp::Mul), 2),
            (b'/', b'=', _) => (Tok::OpAssign(BinOp::Div), 2),
            (b'%', b'=', _) => (Tok::OpAssign(BinOp::Rem), 2),
            (b'&', b'=', _) => (Tok::OpAssign(BinOp::BitAnd), 2),
            (b'|', b'=', _) => (Tok::OpAssign(BinOp::BitOr), 2),
            (b'^', b'=', _) => (Tok::OpAssign(BinOp::BitXor), 2),
            _ => match single_punct(a) {
                Some(k) => (k, 1),
                None => {
                    self.pos += 1;
                    return self.report_char(start);
                }
            },
        };
        self.pos += len;
        self.push(kind, start);
    }
}

fn single_punct(c: u8) -> Option<Tok> {
    Some(match c {
        b'(' => Tok::LParen,
        b')' => Tok::RParen,
        b'[' => Tok::LBracket,
        b']' => Tok::RBracket,
        b'{' => Tok::LBrace,
        b'}' => Tok::RBrace,
        b',' => Tok::Comma,
        b'.' => Tok::Dot,
        b':' => Tok::Colon,
        b';' => Tok::Semi,
        b'@' => Tok::At,
        b'=' => Tok::Assign,
        b'+' => Tok::Plus,
        b'-' => Tok::Minus,
        b'*' => Tok::Star,
        b'/' => Tok::Slash,
        b'%' => Tok::Percent,
        b'&' => Tok::Amp,
        b'|' => Tok::Pipe,
        b'^' => Tok::Caret,
        b'!' => Tok::Bang,
        b'<' => Tok::Lt,
        b'>' => Tok::Gt,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        lex(src).0.into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn numbers() {
        assert_eq!(
            kinds("0x1F 1_000 1.5 1e-3 2"),
            vec![
                Tok::Int(31),
                Tok::Int(1000),
                Tok::Float(1.5),
                Tok::Float(1e-3),
                Tok::Int(2),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn span_operator_and_comments() {
        assert_eq!(
            kinds("a :+ 4 /* x /* nested */ */ // tail\n"),
            vec![Tok::Ident, Tok::ColonPlus, Tok::Int(4), Tok::Eof]
        );
    }

    #[test]
    fn comments_are_kept_as_trivia() {
        let src = "a // tail\n/* x /* y */ */ b";
        let (toks, comments, diags) = lex_with_comments(src);
        assert!(diags.is_empty());
        assert_eq!(toks.len(), 3);
        let texts: Vec<&str> = comments.iter().map(|c| &src[c.span.range()]).collect();
        assert_eq!(texts, ["// tail", "/* x /* y */ */"]);
        assert_eq!(
            comments.iter().map(|c| c.block).collect::<Vec<_>>(),
            [false, true]
        );
    }

    #[test]
    fn errors_do_not_stop_lexing() {
        let (toks, diags) = lex("a $ b 0x 99999999999999999999 /* open");
        assert_eq!(diags.len(), 4);
        assert_eq!(toks.last().map(|t| &t.kind), Some(&Tok::Eof));
    }
}
