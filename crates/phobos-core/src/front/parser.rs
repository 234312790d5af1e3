//! The recovering parser: tokens → `ast::File` + diagnostics. It never
//! fails and never panics: a statement or item that does not parse is
//! reported and skipped, and parsing goes on, so one run reports several
//! errors. Expressions use precedence climbing (Pratt). Nesting deeper than
//! `MAX_DEPTH` is one error, not a stack overflow.
//!
//! Statements end at line breaks (or `;`): an operator that begins a new
//! line starts a new statement, outside of parentheses and brackets.

use crate::ast::*;
use crate::diag::{Diagnostic, Limited};
use crate::lexer::{lex_with_comments, Comment, Tok, Token};
use crate::parse_error::ParseError;
// The parser's limits, at their old paths too.
pub use crate::limits::{MAX_CHAIN, MAX_DEPTH, MAX_SOURCE_BYTES};

/// The collectives and the shuffle: a name of these followed by `<` and a
/// configuration word is a collective, not a comparison.
pub const COLLECTIVE_OPS: [&str; 8] = [
    "sum", "max", "min", "any", "all", "argmax", "reduce", "shfl",
];

/// Parse a whole source file.
pub fn parse(src: &str) -> (File, Vec<Diagnostic>) {
    let (file, _, diags) = parse_with_comments(src);
    (file, diags)
}

/// Parse a whole source file, and return the comments the lexer skipped
/// too (the formatter's trivia), from the same single pass of the lexer.
pub fn parse_with_comments(src: &str) -> (File, Vec<Comment>, Vec<Diagnostic>) {
    if src.len() > MAX_SOURCE_BYTES {
        let d = ParseError::SourceTooLarge { bytes: src.len() }.diagnostic();
        return (File::default(), Vec::new(), vec![d]);
    }
    let (toks, comments, mut diags) = lex_with_comments(src);
    // A file of garbage gives a diagnostic per character: keep what the
    // report will show, and a count of the rest, not millions.
    crate::diag::cap(&mut diags);
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
        nest: 0,
        in_config: false,
        diags: Limited::new(diags, PARSE_DIAGNOSTICS),
    };
    let file = p.file();
    (file, comments, p.diags.finish("syntax errors", "parser"))
}

/// Diagnostics the parser keeps; later ones are only counted, so garbage
/// input cannot fill memory with them.
const PARSE_DIAGNOSTICS: usize = 10 * crate::diag::MAX_DIAGNOSTICS;

/// A parse failure that was already reported; the caller recovers.
struct Reported;
type PResult<T> = Result<T, Reported>;

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    /// Current recursion depth of expressions and blocks.
    depth: usize,
    /// Open parentheses and brackets: inside them line breaks do not end
    /// an expression.
    nest: usize,
    /// Inside a collective's `<...>`, where `>` closes the configuration.
    in_config: bool,
    /// The lexer's, then the parser's, up to [`PARSE_DIAGNOSTICS`].
    diags: Limited,
}

impl<'a> Parser<'a> {
    fn report(&mut self, e: ParseError) {
        self.diags.push(e.diagnostic());
    }

    // ----- token access -------------------------------------------------

    fn tok(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }
    fn kind(&self) -> &Tok {
        &self.tok().kind
    }
    fn nth(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].kind
    }
    fn span(&self) -> Span {
        self.tok().span
    }
    fn prev_end(&self) -> u32 {
        if self.pos == 0 {
            0
        } else {
            self.toks[self.pos - 1].span.end
        }
    }
    fn text(&self, span: Span) -> &'a str {
        self.src.get(span.range()).unwrap_or("")
    }
    fn bump(&mut self) -> Token {
        let t = self.tok().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn at(&self, k: &Tok) -> bool {
        self.kind() == k
    }
    fn eat(&mut self, k: &Tok) -> bool {
        if self.at(k) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn at_word(&self, w: &str) -> bool {
        self.at(&Tok::Ident) && self.text(self.span()) == w
    }

    fn error_expected(&mut self, what: &str) -> Reported {
        let found = self.kind().describe();
        let span = self.span();
        self.report(ParseError::Expected {
            span,
            what: what.to_string(),
            found,
        });
        Reported
    }

    fn expect(&mut self, k: &Tok) -> PResult<Span> {
        if self.at(k) {
            Ok(self.bump().span)
        } else {
            Err(self.error_expected(k.describe()))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        if self.at(&Tok::Ident) {
            let span = self.bump().span;
            Ok(Ident {
                name: self.text(span).to_string(),
                span,
            })
        } else {
            Err(self.error_expected(what))
        }
    }

    // ----- recovery -----------------------------------------------------

    /// Skip one token, or a whole balanced group when it opens one. Iterative,
    /// so arbitrarily deep input cannot overflow the stack.
    fn skip_group(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.kind() {
                Tok::Eof => return,
                Tok::LParen | Tok::LBracket | Tok::LBrace => depth += 1,
                Tok::RParen | Tok::RBracket | Tok::RBrace => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            self.bump();
            if depth == 0 {
                return;
            }
        }
    }

    /// After a failed statement: skip to the start of the next line, `;` or
    /// the `}` that closes the block, whichever comes first.
    fn recover_stmt(&mut self) {
        let start = self.pos;
        loop {
            match self.kind() {
                Tok::Eof | Tok::RBrace => return,
                Tok::Semi => {
                    self.bump();
                    return;
                }
                _ if self.tok().nl_before && self.pos > start => return,
                Tok::RParen | Tok::RBracket => {
                    self.bump();
                }
                _ => self.skip_group(),
            }
        }
    }

    /// After a failed item: skip to the next `@`, `fn` or `kernel` at the top level.
    fn recover_item(&mut self) {
        let start = self.pos;
        loop {
            match self.kind() {
                Tok::Eof => return,
                Tok::At | Tok::Fn | Tok::Kernel if self.pos > start => return,
                Tok::RParen | Tok::RBracket | Tok::RBrace => {
                    self.bump();
                }
                _ => self.skip_group(),
            }
        }
    }

    fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_DEPTH {
            let span = self.span();
            self.report(ParseError::TooDeep { span });
            self.skip_group();
            return Err(Reported);
        }
        self.depth += 1;
        Ok(())
    }

    /// Counts one more operator or subscript of a chain; past
    /// [`MAX_CHAIN`] reports P0101 and skips the rest of the statement.
    fn chain_link(&mut self, chain: &mut usize) -> PResult<()> {
        *chain += 1;
        if *chain <= MAX_CHAIN {
            return Ok(());
        }
        let span = self.span();
        self.report(ParseError::TooLong { span });
        // Skip to the end of the statement: a closing token, or a line
        // break outside brackets.
        loop {
            let closing = matches!(
                self.kind(),
                Tok::Eof | Tok::Semi | Tok::RParen | Tok::RBracket | Tok::RBrace
            );
            if closing || (self.tok().nl_before && self.nest == 0) {
                break;
            }
            self.skip_group();
        }
        Err(Reported)
    }

    // ----- items --------------------------------------------------------

    fn file(&mut self) -> File {
        let mut items = Vec::new();
        while !self.at(&Tok::Eof) {
            match self.item() {
                Ok(item) => items.push(item),
                Err(Reported) => self.recover_item(),
            }
        }
        File { items }
    }

    fn item(&mut self) -> PResult<Item> {
        let start = self.span().start;
        let mut attrs = Vec::new();
        while self.at(&Tok::At) {
            attrs.push(self.attr()?);
        }
        match self.kind() {
            Tok::Kernel => self.kernel(attrs, start).map(Item::Kernel),
            Tok::Fn if attrs.is_empty() => self.fn_item().map(Item::Fn),
            _ if attrs.is_empty() => Err(self.error_expected("`fn`, `kernel` or an attribute")),
            _ => Err(self.error_expected("`kernel` after the attributes")),
        }
    }

    fn fn_item(&mut self) -> PResult<FnItem> {
        let start = self.bump().span;
        let name = self.ident("the fn's name")?;
        self.expect(&Tok::LParen)?;
        let params = self.comma_list(&Tok::RParen, |p| p.ident("a parameter name"))?;
        self.expect(&Tok::Assign)?;
        let body = self.expr()?;
        let span = start.to(body.span);
        Ok(FnItem {
            name,
            params,
            body,
            span,
        })
    }

    fn kernel(&mut self, attrs: Vec<Attr>, start: u32) -> PResult<Kernel> {
        self.bump();
        let name = self.ident("the kernel's name")?;
        self.expect(&Tok::LParen)?;
        let params = self.comma_list(&Tok::RParen, Parser::param)?;
        let body = self.block()?;
        let span = Span {
            start,
            end: body.span.end,
        };
        Ok(Kernel {
            name,
            attrs,
            params,
            body,
            span,
        })
    }

    /// `item, item, ... close` (trailing comma allowed); consumes `close`.
    fn comma_list<T>(
        &mut self,
        close: &Tok,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        let mut out = Vec::new();
        self.nest += 1;
        let result = loop {
            if self.eat(close) {
                // Lists are short and a `Vec` starts at four elements:
                // without this a one-subscript index kept room for four.
                out.shrink_to_fit();
                break Ok(out);
            }
            match item(self) {
                Ok(x) => out.push(x),
                Err(e) => break Err(e),
            }
            if !self.eat(&Tok::Comma) && !self.at(close) {
                let what = format!("`,` or {}", close.describe());
                break Err(self.error_expected(&what));
            }
        };
        self.nest -= 1;
        result
    }

    fn attr(&mut self) -> PResult<Attr> {
        let at = self.bump().span;
        let name = self.ident("an attribute name after `@`")?;
        let kind = match name.name.as_str() {
            "launch" => {
                self.expect(&Tok::LParen)?;
                let threads = self.nested_expr()?;
                let mut min_ctas = None;
                if self.eat(&Tok::Comma) && !self.at(&Tok::RParen) {
                    if self.at_word("min_ctas") {
                        self.bump();
                        self.expect(&Tok::Assign)?;
                        min_ctas = Some(self.nested_expr()?);
                        self.eat(&Tok::Comma);
                    } else {
                        // Reported, and the threads kept: the kernel is not
                        // also "without `@launch`".
                        // Skips to the `)` that closes `@launch(`, over
                        // whole groups: `bad = f(x)` is one error, not a
                        // second at the `)` of `f(x)`.
                        let _ = self.error_expected("`min_ctas = C` or `)`");
                        while !self.at(&Tok::RParen) && !self.at(&Tok::Eof) {
                            let before = self.pos;
                            self.skip_group();
                            if self.pos == before {
                                break;
                            }
                        }
                    }
                }
                self.expect(&Tok::RParen)?;
                AttrKind::Launch { threads, min_ctas }
            }
            "aligned" => {
                self.expect(&Tok::LParen)?;
                AttrKind::Aligned(self.comma_list(&Tok::RParen, |p| {
                    let dim = p.ident("a dim name")?;
                    p.expect(&Tok::Assign)?;
                    Ok((dim, p.expr()?))
                })?)
            }
            "autotune" => {
                self.expect(&Tok::LParen)?;
                AttrKind::Autotune(self.comma_list(&Tok::RParen, Parser::autotune_entry)?)
            }
            "grid" => {
                self.expect(&Tok::LParen)?;
                AttrKind::Grid(self.comma_list(&Tok::RParen, Parser::expr)?)
            }
            _ => {
                if self.at(&Tok::LParen) {
                    self.skip_group();
                }
                AttrKind::Unknown(name)
            }
        };
        Ok(Attr {
            kind,
            span: Span {
                start: at.start,
                end: self.prev_end(),
            },
        })
    }

    fn autotune_entry(&mut self) -> PResult<(Ident, Vec<Expr>)> {
        let name = self.ident("a name to autotune")?;
        self.expect(&Tok::In)?;
        self.expect(&Tok::LBracket)?;
        let values = self.comma_list(&Tok::RBracket, Parser::expr)?;
        Ok((name, values))
    }

    fn param(&mut self) -> PResult<Param> {
        let name = self.ident("a parameter name")?;
        self.expect(&Tok::Colon)?;
        let ty = if self.at_word("tensor") {
            self.bump();
            self.expect(&Tok::Lt)?;
            let (elem, elem_span) = self.scalar_ty()?;
            self.expect(&Tok::Gt)?;
            self.expect(&Tok::LBracket)?;
            let dims = self.comma_list(&Tok::RBracket, Parser::dim)?;
            ParamTy::Tensor {
                elem,
                elem_span,
                dims,
            }
        } else {
            ParamTy::Scalar(self.scalar_ty()?.0)
        };
        let span = name.span.to(Span {
            start: self.prev_end(),
            end: self.prev_end(),
        });
        Ok(Param { name, ty, span })
    }

    fn dim(&mut self) -> PResult<Dim> {
        match *self.kind() {
            Tok::Int(v) => Ok(Dim::Const(v, self.bump().span)),
            // Reported by the lexer; the kernel is not compiled.
            Tok::BadNumber => Ok(Dim::Const(1, self.bump().span)),
            Tok::Ident => Ok(Dim::Name(self.ident("a dim")?)),
            _ => Err(self.error_expected("a dim name or an integer")),
        }
    }

    fn scalar_ty(&mut self) -> PResult<(ScalarTy, Span)> {
        let id = self.ident("a type")?;
        match ScalarTy::from_name(&id.name) {
            Some(t) => Ok((t, id.span)),
            None => {
                self.report(ParseError::UnknownType {
                    span: id.span,
                    name: id.name,
                });
                Err(Reported)
            }
        }
    }

    // ----- statements ---------------------------------------------------

    fn block(&mut self) -> PResult<Block> {
        self.enter()?;
        let result = self.block_inner();
        self.depth -= 1;
        result
    }

    fn block_inner(&mut self) -> PResult<Block> {
        let open = self.expect(&Tok::LBrace)?;
        let saved_nest = std::mem::replace(&mut self.nest, 0);
        let saved_config = std::mem::replace(&mut self.in_config, false);
        let mut stmts = Vec::new();
        while !self.at(&Tok::RBrace) && !self.at(&Tok::Eof) {
            if self.eat(&Tok::Semi) {
                continue;
            }
            let start = self.span();
            match self.stmt() {
                Ok(s) => {
                    stmts.push(s);
                    self.end_of_stmt();
                }
                Err(Reported) => {
                    self.recover_stmt();
                    let span = start.to(Span {
                        start: start.start,
                        end: self.prev_end(),
                    });
                    stmts.push(Stmt {
                        kind: StmtKind::Error,
                        span,
                    });
                }
            }
        }
        self.nest = saved_nest;
        self.in_config = saved_config;
        let close = self.expect(&Tok::RBrace)?;
        // Doubling left up to half of a long block's room unused, for as
        // long as the tree lives (through the whole check).
        stmts.shrink_to_fit();
        Ok(Block {
            stmts,
            span: open.to(close),
        })
    }

    /// A statement must be followed by a line break, `;` or `}`.
    fn end_of_stmt(&mut self) {
        if self.eat(&Tok::Semi) || self.at(&Tok::RBrace) || self.tok().nl_before {
            return;
        }
        let _ = self.error_expected("a line break or `;` after the statement");
        self.recover_stmt();
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        let start = self.span();
        let kind = match self.kind() {
            Tok::Let | Tok::Var => self.let_stmt()?,
            Tok::If => self.if_stmt()?,
            Tok::For => self.for_stmt()?,
            Tok::While => {
                self.bump();
                let cond = self.expr()?;
                let body = self.block()?;
                StmtKind::While { cond, body }
            }
            Tok::Break => {
                self.bump();
                StmtKind::Break
            }
            Tok::Continue => {
                self.bump();
                StmtKind::Continue
            }
            Tok::Return => {
                self.bump();
                StmtKind::Return
            }
            _ => self.expr_stmt()?,
        };
        Ok(Stmt {
            kind,
            span: Span {
                start: start.start,
                end: self.prev_end(),
            },
        })
    }

    fn let_stmt(&mut self) -> PResult<StmtKind> {
        let mutable = self.bump().kind == Tok::Var;
        let name = self.ident("a variable name")?;
        // An unknown type is reported once; the declaration is kept with an
        // erroneous value, so the checker declares the name as poisoned and
        // later uses of it stay quiet.
        let mut bad_ty = false;
        let ty = if self.eat(&Tok::Colon) {
            match self.scalar_ty() {
                Ok(t) => Some(t),
                Err(Reported) => {
                    bad_ty = true;
                    None
                }
            }
        } else {
            None
        };
        // `var acc: f32[4, 4] = 0.0`: a register array.
        let shape = match ty {
            Some(_) if self.at(&Tok::LBracket) => {
                let open = self.bump().span;
                let dims = self.comma_list(&Tok::RBracket, |p| p.expr())?;
                Some((
                    dims,
                    Span {
                        start: open.start,
                        end: self.prev_end(),
                    },
                ))
            }
            _ => None,
        };
        self.expect(&Tok::Assign)?;
        let mut init = self.expr()?;
        if bad_ty {
            init.kind = ExprKind::Error;
        }
        if let (Some((dims, shape_span)), Some(elem)) = (shape, ty) {
            return Ok(StmtKind::ArrayDecl(Box::new(ArrayDecl {
                mutable,
                name,
                elem,
                shape: dims,
                shape_span,
                init,
            })));
        }
        Ok(StmtKind::Let {
            mutable,
            name,
            ty,
            init,
        })
    }

    fn if_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let cond = self.expr()?;
        let then = self.block()?;
        let els = if self.eat(&Tok::Else) {
            if self.at(&Tok::If) {
                let start = self.span();
                self.enter()?;
                let inner = self.if_stmt();
                self.depth -= 1;
                let span = start.to(Span {
                    start: start.start,
                    end: self.prev_end(),
                });
                Some(Block {
                    stmts: vec![Stmt { kind: inner?, span }],
                    span,
                })
            } else {
                Some(self.block()?)
            }
        } else {
            None
        };
        Ok(StmtKind::If {
            cond,
            then,
            els: els.map(Box::new),
        })
    }

    fn for_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let var = self.ident("the loop variable")?;
        self.expect(&Tok::In)?;
        let range_start = self.span();
        if !self.at_word("range") {
            return Err(self.error_expected("`range(start, end[, step])`"));
        }
        self.bump();
        self.expect(&Tok::LParen)?;
        let args = self.comma_list(&Tok::RParen, Parser::expr)?;
        let range_span = range_start.to(Span {
            start: range_start.start,
            end: self.prev_end(),
        });
        if !(2..=3).contains(&args.len()) {
            self.report(ParseError::RangeArgs {
                span: range_span,
                found: args.len(),
            });
            return Err(Reported);
        }
        let mut args = args.into_iter();
        let (start, end, step) = (args.next(), args.next(), args.next());
        let unroll = self.unroll_clause()?;
        let stages = self.stages_clause()?;
        let body = self.block()?;
        match (start, end) {
            (Some(start), Some(end)) => Ok(StmtKind::For(Box::new(ForLoop {
                var,
                start,
                end,
                step,
                range_span,
                unroll,
                stages,
                body,
            }))),
            _ => Err(Reported),
        }
    }

    /// `unroll N` between a loop's `range(...)` and its body; the checker
    /// judges the factor.
    fn unroll_clause(&mut self) -> PResult<Option<(u64, Span)>> {
        if !self.at_word("unroll") {
            return Ok(None);
        }
        let start = self.bump().span;
        match *self.kind() {
            Tok::Int(n) => {
                let end = self.bump().span;
                Ok(Some((n, start.to(end))))
            }
            Tok::BadNumber => {
                // Reported by the lexer; the loop is read without it.
                self.bump();
                Ok(None)
            }
            _ => Err(self.error_expected("an unroll factor (an integer literal)")),
        }
    }

    /// `stages S` after a loop's `range(...)` (and its `unroll N`): `S` is
    /// an integer literal or a name (an `@autotune` constant); the checker
    /// judges it.
    fn stages_clause(&mut self) -> PResult<Option<(Expr, Span)>> {
        if !self.at_word("stages") {
            return Ok(None);
        }
        let start = self.bump().span;
        if !matches!(self.kind(), Tok::Int(_) | Tok::Ident | Tok::LParen) {
            return Err(self.error_expected("a stage count (an integer or a constant's name)"));
        }
        let count = self.primary()?;
        let span = start.to(count.span);
        Ok(Some((count, span)))
    }

    fn expr_stmt(&mut self) -> PResult<StmtKind> {
        let target = self.expr()?;
        let op = match *self.kind() {
            Tok::Assign => None,
            Tok::OpAssign(op) => Some(op),
            _ => return Ok(StmtKind::Expr(target)),
        };
        self.bump();
        let value = self.expr()?;
        Ok(StmtKind::Assign { target, op, value })
    }

    // ----- expressions --------------------------------------------------

    pub(crate) fn expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let result = self.binary(0);
        self.depth -= 1;
        result
    }

    /// An expression inside `(...)` or `[...]`, where line breaks don't
    /// end it and `>` is a comparison again.
    fn nested_expr(&mut self) -> PResult<Expr> {
        self.nest += 1;
        let saved = std::mem::replace(&mut self.in_config, false);
        let result = self.expr();
        self.in_config = saved;
        self.nest -= 1;
        result
    }

    fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut chain = 0usize;
        loop {
            if self.tok().nl_before && self.nest == 0 {
                return Ok(lhs);
            }
            let Some((op, prec)) = binop(self.kind()) else {
                return Ok(lhs);
            };
            if prec < min_prec || (self.in_config && matches!(op, BinOp::Gt | BinOp::Shr)) {
                return Ok(lhs);
            }
            self.chain_link(&mut chain)?;
            self.bump();
            self.enter()?;
            let rhs = self.binary(prec + 1);
            self.depth -= 1;
            let rhs = rhs?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                span,
            };
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.kind() {
            Tok::Minus => UnOp::Neg,
            Tok::Bang => UnOp::Not,
            _ => return self.postfix(),
        };
        let start = self.bump().span;
        self.enter()?;
        let inner = self.unary();
        self.depth -= 1;
        let inner = inner?;
        let span = start.to(inner.span);
        Ok(Expr {
            kind: ExprKind::Unary(op, Box::new(inner)),
            span,
        })
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        let mut chain = 0usize;
        while self.at(&Tok::LBracket) && !(self.tok().nl_before && self.nest == 0) {
            self.chain_link(&mut chain)?;
            self.bump();
            let subs = self.comma_list(&Tok::RBracket, Parser::subscript)?;
            let span = e.span.to(Span {
                start: self.prev_end(),
                end: self.prev_end(),
            });
            e = Expr {
                kind: ExprKind::Index {
                    base: Box::new(e),
                    subs: subs.into_boxed_slice(),
                },
                span,
            };
        }
        Ok(e)
    }

    fn subscript(&mut self) -> PResult<Subscript> {
        if self.at(&Tok::Colon) && matches!(self.nth(1), Tok::Comma | Tok::RBracket) {
            return Ok(Subscript::Full(self.bump().span));
        }
        let start = self.expr()?;
        if !self.eat(&Tok::ColonPlus) {
            return Ok(Subscript::Point(start));
        }
        let len = self.expr()?;
        let span = start.span.to(len.span);
        Ok(Subscript::Span {
            start: Box::new(start),
            len: Box::new(len),
            span,
        })
    }

    fn primary(&mut self) -> PResult<Expr> {
        let tok = self.tok().clone();
        let lit = |kind| {
            Ok(Expr {
                kind,
                span: tok.span,
            })
        };
        match tok.kind {
            Tok::Int(v) => {
                self.bump();
                lit(ExprKind::Int(v))
            }
            Tok::Float(v) => {
                self.bump();
                lit(ExprKind::Float(v))
            }
            Tok::BadNumber => {
                self.bump();
                lit(ExprKind::Error)
            }
            Tok::True | Tok::False => {
                self.bump();
                lit(ExprKind::Bool(tok.kind == Tok::True))
            }
            Tok::LParen => {
                self.bump();
                let inner = self.nested_expr()?;
                let close = self.expect(&Tok::RParen)?;
                Ok(Expr {
                    kind: inner.kind,
                    span: tok.span.to(close),
                })
            }
            Tok::Ident => self.name_expr(),
            _ => Err(self.error_expected("an expression")),
        }
    }

    /// `shared<T>[d0, d1, ...]` after the word `shared`, or
    /// `zeros<T>[d0, d1]` after the word `zeros`.
    fn shared_scratch(&mut self, id: Ident) -> PResult<Expr> {
        self.expect(&Tok::Lt)?;
        let (elem, elem_span) = self.scalar_ty()?;
        self.expect(&Tok::Gt)?;
        self.expect(&Tok::LBracket)?;
        let dims = self.comma_list(&Tok::RBracket, Parser::nested_expr)?;
        let span = id.span.to(Span {
            start: self.prev_end(),
            end: self.prev_end(),
        });
        let kind = if id.name == "zeros" {
            ExprKind::Zeros {
                elem,
                elem_span,
                dims: dims.into_boxed_slice(),
            }
        } else {
            ExprKind::Shared {
                elem,
                elem_span,
                dims: dims.into_boxed_slice(),
            }
        };
        Ok(Expr { kind, span })
    }

    fn name_expr(&mut self) -> PResult<Expr> {
        let id = self.ident("a name")?;
        if id.name == "ctx" && self.at(&Tok::Dot) {
            return self.ctx_field(id.span);
        }
        if COLLECTIVE_OPS.contains(&id.name.as_str())
            && self.at(&Tok::Lt)
            && matches!(self.nth(1), Tok::Ident)
            && config_key(self.text(self.toks[(self.pos + 1).min(self.toks.len() - 1)].span))
                .is_some()
        {
            return self.collective(id);
        }
        if (id.name == "shared" || id.name == "zeros")
            && self.at(&Tok::Lt)
            && matches!(self.nth(1), Tok::Ident)
            && matches!(self.nth(2), Tok::Gt)
        {
            return self.shared_scratch(id);
        }
        if self.at(&Tok::LParen) && !(self.tok().nl_before && self.nest == 0) {
            self.bump();
            let args = self.comma_list(&Tok::RParen, Parser::nested_expr)?;
            let span = id.span.to(Span {
                start: self.prev_end(),
                end: self.prev_end(),
            });
            return Ok(Expr {
                kind: ExprKind::Call {
                    callee: Box::new(id),
                    args: args.into_boxed_slice(),
                },
                span,
            });
        }
        Ok(Expr {
            kind: ExprKind::Name(id.name),
            span: id.span,
        })
    }

    fn ctx_field(&mut self, start: Span) -> PResult<Expr> {
        self.bump();
        let field = self.ident("a ctx field")?;
        let simple = match field.name.as_str() {
            "thread" => Some(CtxField::Thread),
            "threads" => Some(CtxField::Threads),
            "warp" => Some(CtxField::Warp),
            "warps" => Some(CtxField::Warps),
            "lane" => Some(CtxField::Lane),
            "lanes" => Some(CtxField::Lanes),
            _ => None,
        };
        let field_kind = match (simple, field.name.as_str()) {
            (Some(f), _) => f,
            (None, "block" | "grid") => self.ctx_axis(field.name == "block")?,
            _ => {
                self.report(ParseError::NoCtxField {
                    span: field.span,
                    name: field.name,
                });
                return Err(Reported);
            }
        };
        Ok(Expr {
            kind: ExprKind::Ctx(field_kind),
            span: start.to(Span {
                start: self.prev_end(),
                end: self.prev_end(),
            }),
        })
    }

    fn ctx_axis(&mut self, block: bool) -> PResult<CtxField> {
        self.expect(&Tok::Dot)?;
        let axis = self.ident("`x`, `y` or `z`")?;
        Ok(match (block, axis.name.as_str()) {
            (true, "x") => CtxField::BlockX,
            (true, "y") => CtxField::BlockY,
            (true, "z") => CtxField::BlockZ,
            (false, "x") => CtxField::GridX,
            (false, "y") => CtxField::GridY,
            (false, "z") => CtxField::GridZ,
            _ => {
                self.report(ParseError::NoCtxAxis {
                    span: axis.span,
                    name: axis.name,
                });
                return Err(Reported);
            }
        })
    }

    /// `op<key value, ...>(args)`.
    fn collective(&mut self, op: Ident) -> PResult<Expr> {
        let open = self.bump().span;
        let saved = std::mem::replace(&mut self.in_config, true);
        self.nest += 1;
        let config = self.config_items();
        self.nest -= 1;
        self.in_config = saved;
        let config = config?;
        let close = self.expect(&Tok::Gt)?;
        self.expect(&Tok::LParen)?;
        let args = self.comma_list(&Tok::RParen, Parser::nested_expr)?;
        let span = op.span.to(Span {
            start: self.prev_end(),
            end: self.prev_end(),
        });
        Ok(Expr {
            kind: ExprKind::Collective(Box::new(Collective {
                op,
                config,
                config_span: open.to(close),
                args,
            })),
            span,
        })
    }

    fn config_items(&mut self) -> PResult<Vec<ConfigItem>> {
        let mut items = Vec::new();
        loop {
            let key_span = self.span();
            let key = match self
                .at(&Tok::Ident)
                .then(|| config_key(self.text(key_span)))
            {
                Some(Some(k)) => k,
                _ => {
                    let found = self.text(key_span).to_string();
                    self.report(ParseError::UnknownConfig {
                        span: key_span,
                        found,
                    });
                    return Err(Reported);
                }
            };
            self.bump();
            self.enter()?;
            let value = self.binary(0);
            self.depth -= 1;
            let value = value?;
            let span = key_span.to(value.span);
            items.push(ConfigItem {
                key,
                key_span,
                value,
                span,
            });
            if !self.eat(&Tok::Comma) {
                items.shrink_to_fit();
                return Ok(items);
            }
        }
    }
}

/// The configuration words, keywords only inside a collective's `<...>`.
fn config_key(word: &str) -> Option<ConfigKey> {
    Some(match word {
        "over" => ConfigKey::Over,
        "width" => ConfigKey::Width,
        "from" => ConfigKey::From,
        "xor" => ConfigKey::Xor,
        "down" => ConfigKey::Down,
        "up" => ConfigKey::Up,
        _ => return None,
    })
}

/// Binary operators and their precedence (higher binds tighter), as in C
/// but with the bitwise operators above the comparisons, like Rust.
fn binop(t: &Tok) -> Option<(BinOp, u8)> {
    Some(match t {
        Tok::OrOr => (BinOp::Or, 1),
        Tok::AndAnd => (BinOp::And, 2),
        Tok::EqEq => (BinOp::Eq, 3),
        Tok::Ne => (BinOp::Ne, 3),
        Tok::Lt => (BinOp::Lt, 3),
        Tok::Le => (BinOp::Le, 3),
        Tok::Gt => (BinOp::Gt, 3),
        Tok::Ge => (BinOp::Ge, 3),
        Tok::Pipe => (BinOp::BitOr, 4),
        Tok::Caret => (BinOp::BitXor, 5),
        Tok::Amp => (BinOp::BitAnd, 6),
        Tok::Shl => (BinOp::Shl, 7),
        Tok::Shr => (BinOp::Shr, 7),
        Tok::Plus => (BinOp::Add, 8),
        Tok::Minus => (BinOp::Sub, 8),
        Tok::Star => (BinOp::Mul, 9),
        Tok::Slash => (BinOp::Div, 9),
        Tok::Percent => (BinOp::Rem, 9),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(src: &str) -> File {
        let (file, diags) = parse(src);
        assert!(diags.is_empty(), "{diags:?}");
        file
    }

    fn first_stmt(src: &str) -> StmtKind {
        let file = parse_ok(&format!("kernel k() {{\n{src}\n}}"));
        match file.items.into_iter().next() {
            Some(Item::Kernel(k)) => k.body.stmts.into_iter().next().map(|s| s.kind),
            _ => None,
        }
        .unwrap_or(StmtKind::Error)
    }

    #[test]
    fn precedence() {
        let StmtKind::Let { init, .. } = first_stmt("let x = a + b * c == d && e") else {
            panic!("not a let");
        };
        let ExprKind::Binary(BinOp::And, lhs, _) = init.kind else {
            panic!("&& is not the root");
        };
        assert!(matches!(lhs.kind, ExprKind::Binary(BinOp::Eq, _, _)));
    }

    #[test]
    fn from_is_a_variable_outside_brackets() {
        let StmtKind::Let { init, .. } = first_stmt("let v = shfl<from from>(from)") else {
            panic!("not a let");
        };
        assert!(matches!(init.kind, ExprKind::Collective { .. }));
        assert!(matches!(
            first_stmt("let from = 3"),
            StmtKind::Let { name, .. } if name.name == "from"
        ));
    }

    #[test]
    fn comparison_with_a_builtin_name_is_not_a_collective() {
        let StmtKind::Let { init, .. } = first_stmt("let c = max < 3") else {
            panic!("not a let");
        };
        assert!(matches!(init.kind, ExprKind::Binary(BinOp::Lt, _, _)));
    }

    #[test]
    fn line_break_ends_a_statement() {
        let file = parse_ok("kernel k() {\n let a = 1\n -a\n}");
        let Some(Item::Kernel(k)) = file.items.first() else {
            panic!("no kernel");
        };
        assert_eq!(k.body.stmts.len(), 2);
    }

    #[test]
    fn several_errors_are_reported() {
        let (_, diags) = parse("kernel k() {\n let = 1\n let b = )\n}\nfn f(a) = a +\n");
        assert_eq!(diags.len(), 3, "{diags:?}");
    }

    #[test]
    fn deep_nesting_is_one_error() {
        let src = format!("fn f(a) = {}a{}", "(".repeat(10_000), ")".repeat(10_000));
        let (_, diags) = parse(&src);
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].code, "P0101");
    }
}
