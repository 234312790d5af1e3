//! The formatter behind `phobos fmt` and the language server's formatting:
//! source text → the one canonical layout described in docs/style.md.
//!
//! It prints the AST again, with the comments the lexer kept as trivia
//! (`lexer::lex_with_comments`) put back between items and statements, and
//! long bracketed lists broken by a small Wadler-style printer (`Doc`).
//! It decides layout only. It never changes meaning: the output is parsed
//! again and must give the same syntax tree (spans aside) and the same
//! comments, or formatting fails with [`FormatError::Internal`] and the
//! caller keeps the original text. A file with syntax errors is not
//! formatted at all ([`FormatError::Syntax`]).
//!
//! Comments are never moved into or out of a construct. One that sits
//! inside a statement or a kernel header, where the printer has no place
//! for it, makes that statement or header be copied as written (re-indented
//! only), like rustfmt leaves code it cannot format with its comments.

use crate::ast::*;
use crate::diag::Diagnostic;
use crate::lexer::Comment;
use std::borrow::Cow;

/// The line width the printer breaks lists at.
pub const WIDTH: usize = 100;
/// One level of indentation.
pub const INDENT: &str = "  ";

#[derive(Clone, Debug, PartialEq)]
pub enum FormatError {
    /// The text does not parse; these are the lexer's and parser's errors.
    Syntax(Vec<Diagnostic>),
    /// The formatter produced text that parses differently (a bug in the
    /// formatter). The original text must be kept.
    Internal(String),
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormatError::Syntax(d) => write!(f, "{} syntax error(s); not formatted", d.len()),
            FormatError::Internal(m) => write!(f, "internal formatter error: {m}"),
        }
    }
}

/// Format a whole `.pho` file. The output ends lines with `\n`, whatever
/// line breaks (`\r\n`, a lone `\r`) the source used.
pub fn format_source(src: &str) -> Result<String, FormatError> {
    let (mut file, mut comments, errors) = parse_for_format(src);
    if !errors.is_empty() {
        // Diagnostics point into the text as given.
        return Err(FormatError::Syntax(errors));
    }
    let normalized;
    let src = if src.contains('\r') {
        normalized = src.replace("\r\n", "\n").replace('\r', "\n");
        (file, comments, _) = parse_for_format(&normalized);
        normalized.as_str()
    } else {
        src
    };
    let mut fm = Formatter {
        src,
        comments: &comments,
        next_comment: 0,
        out: String::with_capacity(src.len() + src.len() / 8),
        indent: 0,
        last_end: 0,
    };
    fm.file(&file);
    let out = fm.out;
    verify_same_meaning(src, file, &comments, &out)?;
    Ok(out)
}

fn parse_for_format(src: &str) -> (File, Vec<Comment>, Vec<Diagnostic>) {
    let (file, comments, diags) = crate::parser::parse_with_comments(src);
    let errors = diags.into_iter().filter(Diagnostic::is_error).collect();
    (file, comments, errors)
}

/// The formatted text must parse to the same tree, spans aside, with the
/// same comments in the same order.
fn verify_same_meaning(
    src: &str,
    before: File,
    comments: &[Comment],
    out: &str,
) -> Result<(), FormatError> {
    let (after, after_comments, errors) = parse_for_format(out);
    if !errors.is_empty() {
        return Err(FormatError::Internal(format!(
            "the formatted text does not parse: {}",
            errors[0].message
        )));
    }
    if comparable(before) != comparable(after) {
        return Err(FormatError::Internal(
            "the formatted text parses to a different syntax tree".into(),
        ));
    }
    // Re-indenting moves the later lines of a block comment: compare each
    // line without its indentation.
    let same_comments = comments.len() == after_comments.len()
        && comments.iter().zip(&after_comments).all(|(a, b)| {
            comment_text(src, a)
                .lines()
                .map(str::trim)
                .eq(comment_text(out, b).lines().map(str::trim))
        });
    if !same_comments {
        return Err(FormatError::Internal(
            "a comment was lost or changed".into(),
        ));
    }
    Ok(())
}

/// Attributes are put in canonical order only when each kind appears once
/// and all are known: then the checker reads them the same in any order.
fn attrs_reorderable(attrs: &[Attr]) -> bool {
    let mut seen = [false; 5];
    attrs.iter().all(|a| {
        let r = attr_rank(&a.kind) as usize;
        let first = !seen[r];
        seen[r] = true;
        first && !matches!(a.kind, AttrKind::Unknown(_))
    })
}

/// The tree as the formatter must keep it, ready for `==`: every span
/// zeroed, each kernel's attributes in the order the formatter writes them
/// where it reorders them, and NaN literals (`nan`, which `==` never finds
/// equal) as the name `nan`, which the parser never produces.
///
/// A span this walk misses makes two trees differ, so formatting fails
/// with an internal error on that construct: the walk can only be too
/// strict, never let a changed tree through.
pub fn comparable(mut file: File) -> File {
    for item in &mut file.items {
        match item {
            Item::Fn(f) => {
                f.span = Span::default();
                f.name.span = Span::default();
                f.params.iter_mut().for_each(|p| p.span = Span::default());
                erase_expr(&mut f.body);
            }
            Item::Kernel(k) => {
                k.span = Span::default();
                k.name.span = Span::default();
                if attrs_reorderable(&k.attrs) {
                    k.attrs.sort_by_key(|a| attr_rank(&a.kind));
                }
                k.attrs.iter_mut().for_each(erase_attr);
                for p in &mut k.params {
                    p.span = Span::default();
                    p.name.span = Span::default();
                    if let ParamTy::Tensor {
                        elem_span, dims, ..
                    } = &mut p.ty
                    {
                        *elem_span = Span::default();
                        for d in dims {
                            match d {
                                Dim::Name(n) => n.span = Span::default(),
                                Dim::Const(_, span) => *span = Span::default(),
                            }
                        }
                    }
                }
                erase_block(&mut k.body);
            }
        }
    }
    file
}

fn erase_attr(a: &mut Attr) {
    a.span = Span::default();
    match &mut a.kind {
        AttrKind::Launch { threads, min_ctas } => {
            erase_expr(threads);
            min_ctas.iter_mut().for_each(erase_expr);
        }
        AttrKind::Grid(es) => es.iter_mut().for_each(erase_expr),
        AttrKind::Aligned(items) => items.iter_mut().for_each(|(n, e)| {
            n.span = Span::default();
            erase_expr(e);
        }),
        AttrKind::Autotune(items) => items.iter_mut().for_each(|(n, es)| {
            n.span = Span::default();
            es.iter_mut().for_each(erase_expr);
        }),
        AttrKind::Unknown(n) => n.span = Span::default(),
    }
}

fn erase_block(b: &mut Block) {
    b.span = Span::default();
    for s in &mut b.stmts {
        s.span = Span::default();
        match &mut s.kind {
            StmtKind::Let { name, ty, init, .. } => {
                name.span = Span::default();
                if let Some((_, span)) = ty {
                    *span = Span::default();
                }
                erase_expr(init);
            }
            StmtKind::ArrayDecl(a) => {
                a.name.span = Span::default();
                a.elem.1 = Span::default();
                a.shape_span = Span::default();
                a.shape.iter_mut().for_each(erase_expr);
                erase_expr(&mut a.init);
            }
            StmtKind::Assign { target, value, .. } => {
                erase_expr(target);
                erase_expr(value);
            }
            StmtKind::If { cond, then, els } => {
                erase_expr(cond);
                erase_block(then);
                if let Some(els) = els {
                    erase_block(els);
                }
            }
            StmtKind::For(l) => {
                l.var.span = Span::default();
                erase_expr(&mut l.start);
                erase_expr(&mut l.end);
                if let Some(step) = &mut l.step {
                    erase_expr(step);
                }
                l.range_span = Span::default();
                if let Some(unroll) = &mut l.unroll {
                    unroll.1 = Span::default();
                }
                if let Some(stages) = &mut l.stages {
                    erase_expr(&mut stages.0);
                    stages.1 = Span::default();
                }
                erase_block(&mut l.body);
            }
            StmtKind::While { cond, body } => {
                erase_expr(cond);
                erase_block(body);
            }
            StmtKind::Expr(e) => erase_expr(e),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return | StmtKind::Error => {}
        }
    }
}

fn erase_expr(e: &mut Expr) {
    e.span = Span::default();
    match &mut e.kind {
        ExprKind::Float(f) if f.is_nan() => e.kind = ExprKind::Name("nan".into()),
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Name(_)
        | ExprKind::Ctx(_)
        | ExprKind::Error => {}
        ExprKind::Unary(_, inner) => erase_expr(inner),
        ExprKind::Binary(_, lhs, rhs) => {
            erase_expr(lhs);
            erase_expr(rhs);
        }
        ExprKind::Call { callee, args } => {
            callee.span = Span::default();
            args.iter_mut().for_each(erase_expr);
        }
        ExprKind::Index { base, subs } => {
            erase_expr(base);
            for s in subs {
                match s {
                    Subscript::Point(e) => erase_expr(e),
                    Subscript::Span { start, len, span } => {
                        erase_expr(start);
                        erase_expr(len);
                        *span = Span::default();
                    }
                    Subscript::Full(span) => *span = Span::default(),
                }
            }
        }
        ExprKind::Collective(c) => {
            let Collective {
                op,
                config,
                config_span,
                args,
            } = &mut **c;
            op.span = Span::default();
            *config_span = Span::default();
            for c in config {
                c.key_span = Span::default();
                c.span = Span::default();
                erase_expr(&mut c.value);
            }
            args.iter_mut().for_each(erase_expr);
        }
        ExprKind::Shared {
            elem_span, dims, ..
        }
        | ExprKind::Zeros {
            elem_span, dims, ..
        } => {
            *elem_span = Span::default();
            dims.iter_mut().for_each(erase_expr);
        }
    }
}

fn comment_text<'s>(src: &'s str, c: &Comment) -> &'s str {
    src.get(c.span.range()).unwrap_or("").trim_end()
}

// ----- the document printer ------------------------------------------------

/// A layout document: text, places where a line may break, and groups that
/// break all their lines or none.
///
/// Text borrows from the source and the syntax tree where it can, so that
/// printing a file allocates little besides the output.
enum Doc<'a> {
    Text(Cow<'a, str>),
    /// A space when the group is flat, a line break when it is broken.
    Line,
    /// Nothing when flat, a line break when broken.
    SoftLine,
    /// Text only when the group is broken (a trailing comma).
    IfBreak(&'static str),
    Group(Vec<Doc<'a>>),
    /// Contents indented one level more when they break.
    Nest(Vec<Doc<'a>>),
    Concat(Vec<Doc<'a>>),
}

fn text<'a>(s: impl Into<Cow<'a, str>>) -> Doc<'a> {
    Doc::Text(s.into())
}

/// Lay `doc` out starting at column `indent` (which is also the indentation
/// of broken lines before nesting). No trailing newline.
fn layout(doc: &Doc, indent: usize) -> String {
    let mut out = String::new();
    layout_into(&mut out, doc, indent);
    out
}

/// [`layout`], appended to `out`.
fn layout_into(out: &mut String, doc: &Doc, indent: usize) {
    let mut col = indent;
    // (indentation, flat?, doc), the top of the stack is printed next.
    let mut stack: Vec<(usize, bool, &Doc)> = vec![(indent, false, doc)];
    while let Some((ind, flat, d)) = stack.pop() {
        match d {
            Doc::Text(s) => {
                out.push_str(s);
                col += s.chars().count();
            }
            Doc::Line | Doc::SoftLine if flat => {
                if matches!(d, Doc::Line) {
                    out.push(' ');
                    col += 1;
                }
            }
            Doc::Line | Doc::SoftLine => {
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', ind));
                col = ind;
            }
            Doc::IfBreak(s) => {
                if !flat {
                    out.push_str(s);
                    col += s.len();
                }
            }
            Doc::Concat(ds) => stack.extend(ds.iter().rev().map(|d| (ind, flat, d))),
            Doc::Nest(ds) => stack.extend(ds.iter().rev().map(|d| (ind + INDENT.len(), flat, d))),
            Doc::Group(ds) => {
                let as_flat = flat || fits(ds, &stack, WIDTH as isize - col as isize);
                stack.extend(ds.iter().rev().map(|d| (ind, as_flat, d)));
            }
        }
    }
}

/// Whether `group` printed flat, followed by the rest of the stack up to its
/// next line break, fits in `width` columns.
fn fits(group: &[Doc], rest: &[(usize, bool, &Doc)], mut width: isize) -> bool {
    let mut todo: Vec<(bool, &Doc)> = group.iter().rev().map(|d| (true, d)).collect();
    let mut rest = rest.iter().rev();
    loop {
        let (flat, d) = match todo.pop() {
            Some(x) => x,
            None => match rest.next() {
                Some(&(_, flat, d)) => (flat, d),
                None => return true,
            },
        };
        match d {
            Doc::Text(s) => width -= s.chars().count() as isize,
            Doc::Line if flat => width -= 1,
            Doc::SoftLine if flat => {}
            Doc::Line | Doc::SoftLine => return true,
            Doc::IfBreak(s) => {
                if !flat {
                    width -= s.len() as isize
                }
            }
            Doc::Group(ds) | Doc::Nest(ds) | Doc::Concat(ds) => {
                todo.extend(ds.iter().rev().map(|d| (flat, d)))
            }
        }
        if width < 0 {
            return false;
        }
    }
}

/// `open item, item close`, broken one item per line with a trailing comma
/// when it does not fit.
fn list<'a>(open: impl Into<Cow<'a, str>>, items: Vec<Doc<'a>>, close: &'static str) -> Doc<'a> {
    let open = text(open);
    if items.is_empty() {
        return Doc::Concat(vec![open, text(close)]);
    }
    let mut inner = vec![Doc::SoftLine];
    let n = items.len();
    for (i, item) in items.into_iter().enumerate() {
        inner.push(item);
        if i + 1 < n {
            inner.push(text(","));
            inner.push(Doc::Line);
        }
    }
    inner.push(Doc::IfBreak(","));
    Doc::Group(vec![open, Doc::Nest(inner), Doc::SoftLine, text(close)])
}

// ----- expressions ---------------------------------------------------------

/// Binding strength as the parser's `binop` table has it.
fn prec(op: BinOp) -> u8 {
    match op {
        BinOp::Or => 1,
        BinOp::And => 2,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
        BinOp::BitOr => 4,
        BinOp::BitXor => 5,
        BinOp::BitAnd => 6,
        BinOp::Shl | BinOp::Shr => 7,
        BinOp::Add | BinOp::Sub => 8,
        BinOp::Mul | BinOp::Div | BinOp::Rem => 9,
    }
}

pub fn ctx_text(f: CtxField) -> &'static str {
    match f {
        CtxField::Thread => "ctx.thread",
        CtxField::Threads => "ctx.threads",
        CtxField::Warp => "ctx.warp",
        CtxField::Warps => "ctx.warps",
        CtxField::Lane => "ctx.lane",
        CtxField::Lanes => "ctx.lanes",
        CtxField::BlockX => "ctx.block.x",
        CtxField::BlockY => "ctx.block.y",
        CtxField::BlockZ => "ctx.block.z",
        CtxField::GridX => "ctx.grid.x",
        CtxField::GridY => "ctx.grid.y",
        CtxField::GridZ => "ctx.grid.z",
    }
}

/// Where an expression is printed, for deciding on parentheses.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// Anywhere a whole expression goes.
    Top,
    /// Inside a collective's `<...>` outside brackets: `>` and `>>` would
    /// close the configuration.
    Config,
}

struct Formatter<'a> {
    src: &'a str,
    comments: &'a [Comment],
    /// The first comment not yet printed.
    next_comment: usize,
    out: String,
    indent: usize,
    /// End of the last thing printed, in the source.
    last_end: usize,
}

impl<'a> Formatter<'a> {
    fn src_text(&self, span: Span) -> &'a str {
        self.src.get(span.range()).unwrap_or("")
    }

    /// Whether the source wrote parentheses around `e` (the parser keeps
    /// their span but no node).
    fn parenthesized(&self, e: &Expr) -> bool {
        if self.src.as_bytes().get(e.span.start as usize) != Some(&b'(') {
            return false;
        }
        let first_child = match &e.kind {
            ExprKind::Binary(_, lhs, _) => Some(lhs.span.start),
            ExprKind::Index { base, .. } => Some(base.span.start),
            _ => None,
        };
        first_child != Some(e.span.start)
    }

    fn expr(&self, e: &'a Expr, place: Place) -> Doc<'a> {
        let inner = self.expr_inner(e, place);
        let needs = match &e.kind {
            ExprKind::Binary(op, ..) => {
                place == Place::Config && matches!(op, BinOp::Gt | BinOp::Shr)
            }
            _ => false,
        };
        if needs || self.parenthesized(e) {
            Doc::Concat(vec![text("("), inner, text(")")])
        } else {
            inner
        }
    }

    /// An operand: parenthesized when it binds looser than its parent.
    fn operand(&self, e: &'a Expr, parent: u8, right: bool, place: Place) -> Doc<'a> {
        let loose = match &e.kind {
            ExprKind::Binary(op, ..) => prec(*op) < parent || (right && prec(*op) == parent),
            _ => false,
        };
        if loose && !self.parenthesized(e) {
            Doc::Concat(vec![text("("), self.expr_inner(e, Place::Top), text(")")])
        } else {
            self.expr(e, place)
        }
    }

    fn expr_inner(&self, e: &'a Expr, place: Place) -> Doc<'a> {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) => text(
                self.src_text(e.span)
                    .trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace()),
            ),
            ExprKind::Bool(b) => text(if *b { "true" } else { "false" }),
            ExprKind::Name(n) => text(n.as_str()),
            ExprKind::Ctx(f) => text(ctx_text(*f)),
            ExprKind::Unary(op, inner) => {
                let sign = match op {
                    UnOp::Neg => "-",
                    UnOp::Not => "!",
                };
                let operand = if matches!(inner.kind, ExprKind::Binary(..)) {
                    self.operand(inner, u8::MAX, false, Place::Top)
                } else {
                    self.expr(inner, Place::Top)
                };
                Doc::Concat(vec![text(sign), operand])
            }
            ExprKind::Binary(op, lhs, rhs) => {
                // Inside parentheses `>` is a comparison again.
                let place = if self.parenthesized(e) {
                    Place::Top
                } else {
                    place
                };
                let p = prec(*op);
                Doc::Concat(vec![
                    self.operand(lhs, p, false, place),
                    text(format!(" {} ", op.symbol())),
                    self.operand(rhs, p, true, place),
                ])
            }
            ExprKind::Call { callee, args } => list(
                format!("{}(", callee.name),
                args.iter().map(|a| self.expr(a, Place::Top)).collect(),
                ")",
            ),
            ExprKind::Index { base, subs } => {
                let base_doc = match base.kind {
                    ExprKind::Binary(..) | ExprKind::Unary(..) => {
                        self.operand(base, u8::MAX, false, Place::Top)
                    }
                    _ => self.expr(base, Place::Top),
                };
                let subs = subs.iter().map(|s| self.subscript(s)).collect();
                Doc::Concat(vec![base_doc, list("[", subs, "]")])
            }
            ExprKind::Shared { elem, dims, .. } => list(
                format!("shared<{}>[", elem.name()),
                dims.iter().map(|d| self.expr(d, Place::Top)).collect(),
                "]",
            ),
            ExprKind::Zeros { elem, dims, .. } => list(
                format!("zeros<{}>[", elem.name()),
                dims.iter().map(|d| self.expr(d, Place::Top)).collect(),
                "]",
            ),
            ExprKind::Collective(c) => {
                let Collective {
                    op, config, args, ..
                } = &**c;
                let config: Vec<String> = config
                    .iter()
                    .map(|c| {
                        let value = layout(&self.expr(&c.value, Place::Config), 0);
                        format!("{} {}", c.key.name(), value)
                    })
                    .collect();
                list(
                    format!("{}<{}>(", op.name, config.join(", ")),
                    args.iter().map(|a| self.expr(a, Place::Top)).collect(),
                    ")",
                )
            }
            ExprKind::Error => text(self.src_text(e.span)),
        }
    }

    fn subscript(&self, s: &'a Subscript) -> Doc<'a> {
        match s {
            Subscript::Point(e) => self.expr(e, Place::Top),
            Subscript::Span { start, len, .. } => Doc::Concat(vec![
                self.expr(start, Place::Top),
                text(" :+ "),
                self.expr(len, Place::Top),
            ]),
            Subscript::Full(_) => text(":"),
        }
    }

    // ----- comments and lines --------------------------------------------

    fn push_line(&mut self, line: &str) {
        if line.is_empty() {
            self.out.push('\n');
            return;
        }
        for _ in 0..self.indent {
            self.out.push_str(INDENT);
        }
        self.out.push_str(line);
        self.out.push('\n');
    }

    /// Whether the source has an empty line between byte offsets `a` and `b`.
    fn blank_between(&self, a: usize, b: usize) -> bool {
        // The lines strictly inside the gap: after its first line break and
        // before its last.
        let gap = self.src.get(a..b).unwrap_or("");
        match (gap.find('\n'), gap.rfind('\n')) {
            (Some(first), Some(last)) if first < last => gap[first + 1..last]
                .split('\n')
                .any(|l| l.trim().is_empty()),
            _ => false,
        }
    }

    fn same_line(&self, a: usize, b: usize) -> bool {
        !self.src.get(a..b).unwrap_or("\n").contains('\n')
    }

    /// Print the comments that start before `pos`, each on its own line,
    /// keeping one empty line where the source had any. `keep_first_blank`
    /// is false at the start of a block or file. Whether any was printed.
    fn leading_comments(&mut self, pos: usize, mut keep_blank: bool) -> bool {
        let first = self.next_comment;
        while let Some(c) = self.comments.get(self.next_comment).copied() {
            if c.span.start as usize >= pos {
                break;
            }
            if keep_blank && self.blank_between(self.last_end, c.span.start as usize) {
                self.push_line("");
            }
            let body = self.reindent(c.span);
            self.push_line(&body);
            self.last_end = c.span.end as usize;
            self.next_comment += 1;
            keep_blank = true;
        }
        self.next_comment > first
    }

    /// Append the comments on the same source line after `end` to the last
    /// printed line.
    fn trailing_comments(&mut self, end: usize, limit: usize) {
        while let Some(c) = self.comments.get(self.next_comment).copied() {
            let start = c.span.start as usize;
            if start >= limit || !self.same_line(end, start) {
                break;
            }
            if self.out.ends_with('\n') {
                self.out.pop();
            }
            self.out.push(' ');
            let body = self.reindent(c.span);
            self.out.push_str(&body);
            self.out.push('\n');
            self.last_end = c.span.end as usize;
            self.next_comment += 1;
        }
    }

    fn has_comment_in(&self, start: usize, end: usize) -> bool {
        self.comments[self.next_comment..]
            .iter()
            .take_while(|c| (c.span.start as usize) < end)
            .any(|c| c.span.start as usize >= start)
    }

    /// Source text of `span` as written, its later lines shifted so that
    /// the first line's indentation becomes the current one. A later line
    /// that does not start with the first line's indentation, character
    /// for character (a tab where that has spaces), is kept as written.
    fn reindent(&self, span: Span) -> String {
        let text = self.src_text(span).trim_end();
        let line_start = self.src[..span.start as usize]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let before = &self.src[line_start..span.start as usize];
        let base = if before.trim().is_empty() {
            before.len()
        } else {
            before.len() - before.trim_start_matches([' ', '\t']).len()
        };
        let base_ws = &before[..base];
        let pad = INDENT.repeat(self.indent);
        let mut out = String::new();
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                out.push('\n');
                if line.trim().is_empty() {
                    continue;
                }
                let ws = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
                // Whitespace shared with the first line's indentation moves
                // with it; a line indented less keeps the part it has.
                let shared = ws
                    .bytes()
                    .zip(base_ws.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                if shared == ws.len().min(base_ws.len()) {
                    out.push_str(&pad);
                    out.push_str(line[shared..].trim_end());
                } else {
                    out.push_str(line.trim_end());
                }
            } else {
                out.push_str(line.trim_end());
            }
        }
        out
    }

    /// Print a statement or header copied as written.
    fn verbatim(&mut self, span: Span) {
        let body = self.reindent(span);
        self.push_line(&body);
        self.next_comment += self.comments[self.next_comment..]
            .iter()
            .take_while(|c| c.span.start < span.end)
            .count();
    }

    /// Lay `doc` out as one or more lines at the current indentation.
    fn doc_line(&mut self, doc: &Doc) {
        for _ in 0..self.indent {
            self.out.push_str(INDENT);
        }
        layout_into(&mut self.out, doc, self.indent * INDENT.len());
        self.out.push('\n');
    }

    // ----- items ---------------------------------------------------------

    fn file(&mut self, file: &'a File) {
        for (i, item) in file.items.iter().enumerate() {
            let span = item_span(item);
            // One empty line between items; consecutive `fn`s may also be
            // written on adjacent lines.
            let adjacent_fns = matches!(item, Item::Fn(_))
                && matches!(file.items.get(i.wrapping_sub(1)), Some(Item::Fn(_)))
                && !self.blank_between(self.last_end, span.start as usize);
            if i > 0 && !adjacent_fns {
                self.push_line("");
            }
            // The empty line between a leading comment and the item stays.
            if self.leading_comments(span.start as usize, false)
                && self.blank_between(self.last_end, span.start as usize)
            {
                self.push_line("");
            }
            match item {
                Item::Fn(f) => self.fn_item(f),
                Item::Kernel(k) => self.kernel(k),
            }
            self.last_end = span.end as usize;
            let next = file
                .items
                .get(i + 1)
                .map_or(self.src.len(), |n| item_span(n).start as usize);
            self.trailing_comments(span.end as usize, next);
        }
        self.leading_comments(self.src.len() + 1, !file.items.is_empty());
    }

    fn fn_item(&mut self, f: &'a FnItem) {
        if self.has_comment_in(f.span.start as usize, f.span.end as usize) {
            return self.verbatim(f.span);
        }
        let params: Vec<Doc> = f.params.iter().map(|p| text(p.name.clone())).collect();
        let doc = Doc::Concat(vec![
            list(format!("fn {}(", f.name.name), params, ")"),
            text(" = "),
            self.expr(&f.body, Place::Top),
        ]);
        self.doc_line(&doc);
    }

    fn kernel(&mut self, k: &'a Kernel) {
        let mut attrs: Vec<&Attr> = k.attrs.iter().collect();
        let mut prev_end = k.span.start as usize;
        let comment_between_attrs = attrs
            .iter()
            .any(|a| self.has_comment_in(a.span.start as usize, a.span.end as usize))
            || self.has_comment_in(
                k.span.start as usize,
                attrs.last().map_or(k.span.start, |a| a.span.start) as usize,
            );
        if !comment_between_attrs && attrs_reorderable(&k.attrs) {
            attrs.sort_by_key(|a| attr_rank(&a.kind));
        }
        for a in attrs {
            self.leading_comments(a.span.start as usize, false);
            let commented = self.has_comment_in(a.span.start as usize, a.span.end as usize);
            match self.attr_doc(a).filter(|_| !commented) {
                Some(doc) => self.doc_line(&doc),
                None => self.verbatim(a.span),
            }
            self.trailing_comments(a.span.end as usize, k.name.span.start as usize);
            prev_end = prev_end.max(a.span.end as usize);
        }
        let open = k.body.span.start as usize;
        let header_start = if k.attrs.is_empty() {
            k.span.start as usize
        } else {
            self.skip_trivia(prev_end)
        };
        self.leading_comments(header_start, false);
        if self.has_comment_in(header_start, open) {
            let span = Span::new(header_start, open + 1);
            self.verbatim(span);
        } else {
            let params = k.params.iter().map(|p| self.param(p)).collect();
            let doc = Doc::Concat(vec![
                list(format!("kernel {}(", k.name.name), params, ")"),
                text(" {"),
            ]);
            self.doc_line(&doc);
        }
        self.last_end = open + 1;
        self.block_body(&k.body);
    }

    /// The first byte after `pos` that is neither space nor comment.
    fn skip_trivia(&self, mut pos: usize) -> usize {
        let bytes = self.src.as_bytes();
        loop {
            while bytes.get(pos).is_some_and(u8::is_ascii_whitespace) {
                pos += 1;
            }
            match self.comments.iter().find(|c| c.span.start as usize == pos) {
                Some(c) => pos = c.span.end as usize,
                None => return pos,
            }
        }
    }

    fn attr_doc(&self, a: &'a Attr) -> Option<Doc<'a>> {
        let top = |e| self.expr(e, Place::Top);
        Some(match &a.kind {
            // `@launch(` takes the threads, then `min_ctas = C`, and no
            // trailing comma.
            AttrKind::Launch { threads, min_ctas } => {
                let mut parts = vec![text("@launch("), top(threads)];
                if let Some(c) = min_ctas {
                    parts.push(text(", min_ctas = "));
                    parts.push(top(c));
                }
                parts.push(text(")"));
                Doc::Concat(parts)
            }
            AttrKind::Grid(es) => list("@grid(", es.iter().map(top).collect(), ")"),
            AttrKind::Aligned(items) => list(
                "@aligned(",
                items
                    .iter()
                    .map(|(n, e)| Doc::Concat(vec![text(format!("{} = ", n.name)), top(e)]))
                    .collect(),
                ")",
            ),
            AttrKind::Autotune(items) => list(
                "@autotune(",
                items
                    .iter()
                    .map(|(n, vs)| {
                        Doc::Concat(vec![
                            text(format!("{} in ", n.name)),
                            list("[", vs.iter().map(top).collect(), "]"),
                        ])
                    })
                    .collect(),
                ")",
            ),
            AttrKind::Unknown(_) => return None,
        })
    }

    fn param(&self, p: &'a Param) -> Doc<'a> {
        match &p.ty {
            ParamTy::Scalar(t) => text(format!("{}: {}", p.name.name, t.name())),
            ParamTy::Tensor { elem, dims, .. } => {
                let dims = dims
                    .iter()
                    .map(|d| match d {
                        Dim::Name(n) => text(n.name.clone()),
                        Dim::Const(_, span) => text(self.src_text(*span)),
                    })
                    .collect();
                Doc::Concat(vec![
                    text(format!("{}: tensor<{}>", p.name.name, elem.name())),
                    list("[", dims, "]"),
                ])
            }
        }
    }

    // ----- blocks and statements -------------------------------------------

    /// The statements of a block whose `{` has been printed, then its `}`.
    fn block_body(&mut self, b: &'a Block) {
        let close = (b.span.end as usize).saturating_sub(1);
        // Only the comments before the first statement belong on the `{`
        // line: in a one-line block, a comment after a statement stays
        // after it.
        let first_start = b.stmts.first().map_or(close, |s| s.span.start as usize);
        self.trailing_comments(self.last_end, first_start);
        self.indent += 1;
        let mut first = true;
        for (i, s) in b.stmts.iter().enumerate() {
            let start = s.span.start as usize;
            let next = b.stmts.get(i + 1).map_or(close, |n| n.span.start as usize);
            self.leading_comments(start, !first);
            if !first && self.blank_between(self.last_end, start) {
                self.push_line("");
            }
            self.stmt(s);
            self.last_end = s.span.end as usize;
            self.trailing_comments(s.span.end as usize, next);
            first = false;
        }
        self.leading_comments(close, !first);
        self.indent -= 1;
        self.push_line("}");
        self.last_end = close + 1;
    }

    fn stmt(&mut self, s: &'a Stmt) {
        // Comments inside the statement but outside its blocks' braces have
        // no place in the printed form: copy the statement as written.
        let mut gaps = Vec::new();
        header_gaps(s, &mut gaps);
        if gaps
            .iter()
            .any(|&(a, b)| self.has_comment_in(a as usize, b as usize))
        {
            return self.verbatim(s.span);
        }
        match &s.kind {
            StmtKind::Let {
                mutable,
                name,
                ty,
                init,
            } => {
                let doc = Doc::Concat(vec![
                    text(format!("{} = ", let_head(*mutable, name, *ty))),
                    self.expr(init, Place::Top),
                ]);
                self.doc_line(&doc);
            }
            StmtKind::ArrayDecl(a) => {
                let kw = decl_keyword(a.mutable);
                let dims = a.shape.iter().map(|d| self.expr(d, Place::Top)).collect();
                let doc = Doc::Concat(vec![
                    text(format!("{kw} {}: {}", a.name.name, a.elem.0.name())),
                    list("[", dims, "]"),
                    text(" = "),
                    self.expr(&a.init, Place::Top),
                ]);
                self.doc_line(&doc);
            }
            StmtKind::Assign { target, op, value } => {
                let op = op.map_or("=".to_string(), |o| format!("{}=", o.symbol()));
                let doc = Doc::Concat(vec![
                    self.expr(target, Place::Top),
                    text(format!(" {op} ")),
                    self.expr(value, Place::Top),
                ]);
                self.doc_line(&doc);
            }
            StmtKind::Expr(e) => {
                let doc = self.expr(e, Place::Top);
                self.doc_line(&doc);
            }
            StmtKind::If { cond, then, els } => self.if_stmt(cond, then, els.as_deref(), false),
            StmtKind::For(l) => {
                let mut args = vec![
                    self.expr(&l.start, Place::Top),
                    self.expr(&l.end, Place::Top),
                ];
                args.extend(l.step.iter().map(|s| self.expr(s, Place::Top)));
                let mut parts = vec![
                    list(format!("for {} in range(", l.var.name), args, ")"),
                    text(match l.unroll {
                        Some(u) => format!(" unroll {}", u.0),
                        None => String::new(),
                    }),
                ];
                if let Some(stages) = &l.stages {
                    parts.push(text(" stages "));
                    parts.push(self.expr(&stages.0, Place::Top));
                }
                parts.push(text(" {"));
                let doc = Doc::Concat(parts);
                self.doc_line(&doc);
                self.last_end = l.body.span.start as usize + 1;
                self.block_body(&l.body);
            }
            StmtKind::While { cond, body } => {
                let doc = Doc::Concat(vec![
                    text("while "),
                    self.expr(cond, Place::Top),
                    text(" {"),
                ]);
                self.doc_line(&doc);
                self.last_end = body.span.start as usize + 1;
                self.block_body(body);
            }
            StmtKind::Break => self.doc_line(&text("break")),
            StmtKind::Continue => self.doc_line(&text("continue")),
            StmtKind::Return => self.doc_line(&text("return")),
            StmtKind::Error => self.verbatim(s.span),
        }
    }

    /// `if cond { ... } else ...`. When `continued`, `} else if ` is
    /// already on the current, unterminated line.
    fn if_stmt(
        &mut self,
        cond: &'a Expr,
        then: &'a Block,
        els: Option<&'a Block>,
        continued: bool,
    ) {
        let head = Doc::Concat(vec![self.expr(cond, Place::Top), text(" {")]);
        if continued {
            let col = self.current_column();
            layout_into(&mut self.out, &head, col);
            self.out.push('\n');
        } else {
            self.doc_line(&Doc::Concat(vec![text("if "), head]));
        }
        self.last_end = then.span.start as usize + 1;
        self.block_body(then);
        let Some(els) = els else { return };
        // `else if` is an `if` alone in a block spanning exactly that `if`.
        if let [Stmt {
            kind:
                StmtKind::If {
                    cond,
                    then,
                    els: inner_els,
                },
            span,
        }] = els.stmts.as_slice()
        {
            if *span == els.span {
                self.reopen_line("} else if ");
                return self.if_stmt(cond, then, inner_els.as_deref(), true);
            }
        }
        self.reopen_line("} else {");
        self.last_end = els.span.start as usize + 1;
        self.block_body(els);
    }

    /// Replace the `}` line just printed by `text` (`} else {` keeps the
    /// closing brace and the `else` on one line). A trailing newline is
    /// added only when `text` ends a line (`{`).
    fn reopen_line(&mut self, with: &str) {
        let trimmed = self.out.trim_end_matches('\n').len();
        self.out.truncate(trimmed);
        if self.out.ends_with('}') {
            self.out.pop();
            let line_start = self.out.rfind('\n').map_or(0, |i| i + 1);
            self.out.truncate(line_start);
        }
        for _ in 0..self.indent {
            self.out.push_str(INDENT);
        }
        self.out.push_str(with);
        if with.ends_with('{') {
            self.out.push('\n');
        }
    }

    fn current_column(&self) -> usize {
        let line_start = self.out.rfind('\n').map_or(0, |i| i + 1);
        self.out[line_start..].chars().count()
    }
}

/// The source ranges of a statement that are not inside one of its blocks.
fn header_gaps(s: &Stmt, out: &mut Vec<(u32, u32)>) {
    let mut at = s.span.start;
    let mut blocks = Vec::new();
    collect_blocks(&s.kind, &mut blocks);
    for b in blocks {
        out.push((at, b.span.start + 1));
        at = b.span.end.saturating_sub(1);
    }
    out.push((at, s.span.end));
}

fn collect_blocks<'a>(k: &'a StmtKind, out: &mut Vec<&'a Block>) {
    match k {
        StmtKind::If { then, els, .. } => {
            out.push(then);
            if let Some(els) = els {
                match els.stmts.as_slice() {
                    [inner] if inner.span == els.span => collect_blocks(&inner.kind, out),
                    _ => out.push(els),
                }
            }
        }
        StmtKind::For(l) => out.push(&l.body),
        StmtKind::While { body, .. } => out.push(body),
        _ => {}
    }
}

fn item_span(item: &Item) -> Span {
    match item {
        Item::Fn(f) => f.span,
        Item::Kernel(k) => k.span,
    }
}

/// The canonical attribute order: what varies, then the launch shape, the
/// grid, and the alignment promises.
fn attr_rank(a: &AttrKind) -> u8 {
    match a {
        AttrKind::Autotune(_) => 0,
        AttrKind::Launch { .. } => 1,
        AttrKind::Grid(_) => 2,
        AttrKind::Aligned(_) => 3,
        AttrKind::Unknown(_) => 4,
    }
}
