//! Semantic tokens: what each word of the document is (keyword, type,
//! function, parameter, variable, `ctx` field, attribute, number, comment)
//! and, for values inside a checked kernel, how much they differ between
//! threads, as one of three custom modifiers: `uniform`, `warpUniform` and
//! `varying` (declared in [`MODIFIERS`], documented in the crate README;
//! editors/vscode styles `varying` and `warpUniform`).
//!
//! The words come from the lexer; names are classified by the resolver
//! (`symbols`), and a local's level is the checker's level for it in the
//! kernel's first variant (`hir::Kernel::uniformity`), the one hover shows.
//! Kernels that do not check get token types without levels.

use crate::analysis::Analysis;
use crate::symbols::SymbolKind;
use phobos_core::ast::{ScalarTy, Span};
use phobos_core::check::uniformity::Level;
use phobos_core::lexer::{lex_with_comments, Tok};
use std::collections::HashMap;

/// Token types, in legend order.
pub const TYPES: [&str; 9] = [
    "keyword",
    "type",
    "function",
    "parameter",
    "variable",
    "property",
    "number",
    "comment",
    "decorator",
];

/// Token modifiers, in legend order (bit `i` is `MODIFIERS[i]`). The last
/// three are Phobos's own.
pub const MODIFIERS: [&str; 6] = [
    "declaration",
    "readonly",
    "defaultLibrary",
    "uniform",
    "warpUniform",
    "varying",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenType {
    Keyword,
    Type,
    Function,
    Parameter,
    Variable,
    Property,
    Number,
    Comment,
    Decorator,
}

pub const DECLARATION: u32 = 1;
pub const READONLY: u32 = 1 << 1;
pub const DEFAULT_LIBRARY: u32 = 1 << 2;

/// The modifier bit of a uniformity level.
pub fn level_bit(l: Level) -> u32 {
    match l {
        Level::Uniform => 1 << 3,
        Level::WarpUniform => 1 << 4,
        Level::Varying => 1 << 5,
    }
}

/// One classified word (never spanning a line break).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemToken {
    pub span: Span,
    pub ty: TokenType,
    pub modifiers: u32,
}

const BUILTIN_CALLS: [&str; 25] = [
    "min", "max", "abs", "sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh",
    "fma", "floor", "ceil", "select", "cdiv", "dp4a", "byteperm", "popcount", "elem", "word",
    "range", "store", "sum",
];
const CONFIG_WORDS: [&str; 6] = ["over", "width", "from", "xor", "down", "up"];

impl Analysis {
    /// Every classified word of the document, in order.
    pub fn semantic_tokens(&self) -> Vec<SemToken> {
        self.semantic_tokens_in(Span::new(0, self.src.len()))
    }

    /// The classified words that overlap `range`, in order. Only the names
    /// in `range` are looked up, so the cost follows the range (what an
    /// editor shows), apart from lexing the document once.
    pub fn semantic_tokens_in(&self, range: Span) -> Vec<SemToken> {
        // A document the compiler refuses to read (P0005) gets no tokens:
        // lexing it would cost tens of bytes per source byte.
        if self.src.len() > phobos_core::parser::MAX_SOURCE_BYTES {
            return Vec::new();
        }
        let overlaps = |s: Span| s.start < range.end && range.start < s.end;
        let (tokens, comments, _) = lex_with_comments(&self.src);
        let uses: HashMap<u32, usize> = self
            .symbols
            .uses
            .iter()
            .filter(|(s, _)| overlaps(*s))
            .map(|(s, d)| (s.start, *d))
            .collect();
        let defs: HashMap<u32, usize> = self
            .symbols
            .defs
            .iter()
            .enumerate()
            .filter(|(_, d)| overlaps(d.span))
            .map(|(i, d)| (d.span.start, i))
            .collect();
        // Each definition's level, found when a token in range first needs it.
        let mut levels: HashMap<usize, Option<Level>> = HashMap::new();
        let text = |i: usize| self.src.get(tokens[i].span.range()).unwrap_or("");
        let kind = |i: usize| tokens.get(i).map(|t| &t.kind);
        let first = tokens.partition_point(|t| t.span.end <= range.start);
        let mut out = Vec::new();
        for (i, t) in tokens.iter().enumerate().skip(first) {
            if t.span.start >= range.end {
                break;
            }
            let plain = |ty| {
                Some(SemToken {
                    span: t.span,
                    ty,
                    modifiers: 0,
                })
            };
            let tok = match &t.kind {
                Tok::Fn
                | Tok::Kernel
                | Tok::Let
                | Tok::Var
                | Tok::If
                | Tok::Else
                | Tok::For
                | Tok::In
                | Tok::True
                | Tok::False => plain(TokenType::Keyword),
                Tok::Int(_) | Tok::Float(_) | Tok::BadNumber => plain(TokenType::Number),
                Tok::Ident => {
                    let word = text(i);
                    let prev = i.checked_sub(1).and_then(kind);
                    let next = kind(i + 1);
                    let symbol = uses
                        .get(&t.span.start)
                        .map(|&d| (d, false))
                        .or_else(|| defs.get(&t.span.start).map(|&d| (d, true)));
                    if let Some((d, is_def)) = symbol {
                        let def = &self.symbols.defs[d];
                        let (ty, mut modifiers) = match def.kind {
                            SymbolKind::Fn => (TokenType::Function, 0),
                            SymbolKind::FnParam
                            | SymbolKind::TensorParam
                            | SymbolKind::ScalarParam => (TokenType::Parameter, 0),
                            SymbolKind::Dim | SymbolKind::Autotune | SymbolKind::LoopVar => {
                                (TokenType::Variable, READONLY)
                            }
                            SymbolKind::Local if def.signature.starts_with("let") => {
                                (TokenType::Variable, READONLY)
                            }
                            SymbolKind::Local => (TokenType::Variable, 0),
                        };
                        if is_def {
                            modifiers |= DECLARATION;
                        }
                        let level = *levels.entry(d).or_insert_with(|| self.def_level(d));
                        if let Some(l) = level {
                            modifiers |= level_bit(l);
                        }
                        Some(SemToken {
                            span: t.span,
                            ty,
                            modifiers,
                        })
                    } else if prev == Some(&Tok::At) {
                        plain(TokenType::Decorator)
                    } else if word == "ctx" && next == Some(&Tok::Dot) {
                        plain(TokenType::Keyword)
                    } else if prev == Some(&Tok::Dot) && i >= 2 {
                        ctx_field(&tokens, i, &self.src).map(|l| SemToken {
                            span: t.span,
                            ty: TokenType::Property,
                            modifiers: DEFAULT_LIBRARY | level_bit(l),
                        })
                    } else if ScalarTy::ALL.iter().any(|s| s.name() == word) || word == "tensor" {
                        plain(TokenType::Type)
                    } else if CONFIG_WORDS.contains(&word)
                        && matches!(prev, Some(Tok::Lt | Tok::Comma))
                        && matches!(
                            next,
                            Some(Tok::Ident | Tok::Int(_) | Tok::LParen | Tok::Minus)
                        )
                    {
                        plain(TokenType::Keyword)
                    } else if (BUILTIN_CALLS.contains(&word)
                        || phobos_core::parser::COLLECTIVE_OPS.contains(&word))
                        && matches!(next, Some(Tok::LParen | Tok::Lt))
                    {
                        Some(SemToken {
                            span: t.span,
                            ty: TokenType::Function,
                            modifiers: DEFAULT_LIBRARY,
                        })
                    } else if (word == "unroll" && prev == Some(&Tok::RParen))
                        || (word == "stages" && matches!(prev, Some(Tok::RParen | Tok::Int(_))))
                    {
                        plain(TokenType::Keyword)
                    } else {
                        None
                    }
                }
                _ => None,
            };
            out.extend(tok);
        }
        // Comments, one token per line.
        for c in comments.iter().filter(|c| overlaps(c.span)) {
            let mut start = c.span.start as usize;
            let end = c.span.end as usize;
            while start < end {
                let line_end = self.src[start..end].find('\n').map_or(end, |j| start + j);
                if line_end > start && overlaps(Span::new(start, line_end)) {
                    out.push(SemToken {
                        span: Span::new(start, line_end),
                        ty: TokenType::Comment,
                        modifiers: 0,
                    });
                }
                start = line_end + 1;
            }
        }
        out.sort_by_key(|t| t.span.start);
        out
    }

    /// The level of definition `d` when it has one: locals and loop
    /// variables from their kernel's facts, parameters, dims and autotune
    /// names are uniform. None for fns, fn parameters and unchecked kernels.
    fn def_level(&self, d: usize) -> Option<Level> {
        let d = &self.symbols.defs[d];
        match d.kind {
            SymbolKind::Fn | SymbolKind::FnParam => None,
            SymbolKind::TensorParam
            | SymbolKind::ScalarParam
            | SymbolKind::Dim
            | SymbolKind::Autotune => Some(Level::Uniform),
            SymbolKind::Local | SymbolKind::LoopVar => {
                let kv = self.kernel_at(d.span.start as usize)?;
                let (lid, local) = kv.local_at(d.span.start as usize)?;
                matches!(local.kind, phobos_core::hir::LocalKind::Scalar(_))
                    .then(|| kv.level_of_local(lid))
            }
        }
    }
}

/// The level of the `ctx` field whose last word is token `i` (`ctx.lane`,
/// `ctx.block.x`), or None when the words before it are not `ctx.`.
fn ctx_field(tokens: &[phobos_core::lexer::Token], i: usize, src: &str) -> Option<Level> {
    let word = |j: usize| src.get(tokens[j].span.range()).unwrap_or("");
    let dot = |j: usize| tokens[j].kind == Tok::Dot;
    if dot(i - 1) && word(i - 2) == "ctx" {
        return Some(match word(i) {
            "thread" | "lane" => Level::Varying,
            "warp" => Level::WarpUniform,
            _ => Level::Uniform,
        });
    }
    if i >= 4 && dot(i - 1) && dot(i - 3) && word(i - 4) == "ctx" {
        return Some(Level::Uniform);
    }
    None
}
