//! The syntax tree produced by the parser: every node carries a byte span
//! into the source. The AST is untyped and unresolved; `check` turns it into
//! the typed `hir`. Contract between the parser and the checker.

use serde::Serialize;
// The scalar types and operators are a contract with compiled kernels'
// metadata and the runtime: they live in phobos-meta.
pub use phobos_meta::{BinOp, ScalarTy, UnOp};

/// A half-open byte range `start..end` into the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct File {
    pub items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Item {
    Fn(FnItem),
    Kernel(Kernel),
}

/// `fn name(a, b) = expr`: untyped parameters, inlined at each use.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FnItem {
    pub name: Ident,
    pub params: Vec<Ident>,
    pub body: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Kernel {
    pub name: Ident,
    pub attrs: Vec<Attr>,
    pub params: Vec<Param>,
    pub body: Block,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attr {
    pub kind: AttrKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum AttrKind {
    /// `@launch(T)` or `@launch(T, min_ctas = C)`
    Launch {
        threads: Expr,
        min_ctas: Option<Expr>,
    },
    /// `@aligned(K = 128, N = 4)`
    Aligned(Vec<(Ident, Expr)>),
    /// `@autotune(K in [256, 512], BLOCK in [64])`
    Autotune(Vec<(Ident, Vec<Expr>)>),
    /// `@grid(x[, y[, z]])`
    Grid(Vec<Expr>),
    /// Any other `@name(...)`, kept so the checker can report it.
    Unknown(Ident),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Param {
    pub name: Ident,
    pub ty: ParamTy,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ParamTy {
    /// `tensor<f32>[N, K]`
    Tensor {
        elem: ScalarTy,
        elem_span: Span,
        dims: Vec<Dim>,
    },
    /// `alpha: f32`
    Scalar(ScalarTy),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Dim {
    Name(Ident),
    Const(u64, Span),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

impl Stmt {
    /// The blocks nested directly in this statement: an `if`'s then block
    /// and its else block when written, a loop's body. Empty for every
    /// other statement.
    pub fn blocks(&self) -> Vec<&Block> {
        match &self.kind {
            StmtKind::If { then, els, .. } => std::iter::once(then).chain(els.as_deref()).collect(),
            StmtKind::For(l) => vec![&l.body],
            StmtKind::While { body, .. } => vec![body],
            _ => Vec::new(),
        }
    }
}

/// `var` for a `mutable` declaration, `let` for the others.
pub fn decl_keyword(mutable: bool) -> &'static str {
    if mutable {
        "var"
    } else {
        "let"
    }
}

/// A `let`/`var` statement as written up to its `=`, as in `var x: f32`.
pub fn let_head(mutable: bool, name: &Ident, ty: Option<(ScalarTy, Span)>) -> String {
    let ty = ty.map_or(String::new(), |(t, _)| format!(": {}", t.name()));
    format!("{} {}{ty}", decl_keyword(mutable), name.name)
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum StmtKind {
    /// `let x = e`, `var x: f32 = e` (`mutable` for `var`).
    Let {
        mutable: bool,
        name: Ident,
        ty: Option<(ScalarTy, Span)>,
        init: Expr,
    },
    /// `var acc: f32[4, 4] = 0.0`: a register array, boxed (rare).
    ArrayDecl(Box<ArrayDecl>),
    /// `x = e`, `x += e`, `y[0, row] = e`, `A[r :+ R, :] = t`.
    /// `op` is the operator of a compound assignment.
    Assign {
        target: Expr,
        op: Option<BinOp>,
        value: Expr,
    },
    /// `if c { } else { }`; `else if` is an `If` alone in the else block.
    If {
        cond: Expr,
        then: Block,
        /// Boxed, as are the rare parts below: a statement is as large as
        /// its largest kind (`tests/node_sizes.rs` pins the sizes).
        els: Option<Box<Block>>,
    },
    /// `for i in range(a, b[, step]) [unroll N] [stages S] { }`. Boxed: inline, its
    /// bounds made every statement of a block 392 bytes.
    For(Box<ForLoop>),
    /// `while cond { }`
    While { cond: Expr, body: Block },
    /// `break`: leaves the innermost loop.
    Break,
    /// `continue`: starts the innermost loop's next trip.
    Continue,
    /// `return`: the thread leaves the kernel.
    Return,
    /// A call used as a statement, e.g. `store(Y[0, k :+ 4], 0, v)`.
    Expr(Expr),
    /// A statement that failed to parse (already reported).
    Error,
}

/// `var acc: f32[4, 4] = 0.0`: a register array (`mutable` is false for
/// the `let` the checker refuses). `shape` holds the dims as written.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArrayDecl {
    pub mutable: bool,
    pub name: Ident,
    pub elem: (ScalarTy, Span),
    pub shape: Vec<Expr>,
    pub shape_span: Span,
    pub init: Expr,
}

/// `for var in range(start, end[, step]) [unroll N] { body }`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ForLoop {
    pub var: Ident,
    pub start: Expr,
    pub end: Expr,
    pub step: Option<Expr>,
    /// `range(...)` as written.
    pub range_span: Span,
    /// `unroll N`: the factor as written and the span of `unroll N`.
    pub unroll: Option<(u64, Span)>,
    /// `stages S`: the count as written (an integer literal or a name,
    /// e.g. an `@autotune` constant) and the span of `stages S`.
    pub stages: Option<(Expr, Span)>,
    pub body: Block,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ExprKind {
    /// Integer literal (untyped until checked).
    Int(u64),
    /// Float literal (untyped until checked).
    Float(f64),
    Bool(bool),
    Name(String),
    /// `ctx.lane`, `ctx.block.x`, ...
    Ctx(CtxField),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `f(args)`: conversions (`f32(x)`), built-ins (`max`, `sum(e)`,
    /// `elem`, ...) and `fn` items.
    /// Lists are boxed slices and rare parts are boxed, so that every
    /// expression is as small as a binary operator (`tests/node_sizes.rs`).
    Call {
        callee: Box<Ident>,
        args: Box<[Expr]>,
    },
    /// `A[i, j]`, `W[row, at :+ 4]`, `x[0 :+ 1, :]`.
    Index {
        base: Box<Expr>,
        subs: Box<[Subscript]>,
    },
    /// `sum<over ctx.lane, width 8>(x)`, `shfl<xor 16>(v)`, `reduce<over ctx.lane>(x, mx)`.
    Collective(Box<Collective>),
    /// `shared<f32>[ctx.warps, 33]`: a CTA-wide shared scratch tile of a
    /// constant shape, not copied from anything (only as the whole value of
    /// a `let`/`var`).
    Shared {
        elem: ScalarTy,
        elem_span: Span,
        dims: Box<[Expr]>,
    },
    /// `zeros<f32>[128, 128]`: a CTA-wide accumulator tile of a constant
    /// shape, held in registers (only as the whole value of a `var`).
    Zeros {
        elem: ScalarTy,
        elem_span: Span,
        dims: Box<[Expr]>,
    },
    /// An expression that failed to parse (already reported).
    Error,
}

impl Expr {
    /// The expressions written directly inside this one, in source order:
    /// operands, a call's arguments, an index's base then its subscripts'
    /// expressions, a collective's config values then its arguments, a
    /// tile's dims.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Unary(_, x) => vec![x],
            ExprKind::Binary(_, a, b) => vec![a, b],
            ExprKind::Call { args, .. } => args.iter().collect(),
            ExprKind::Index { base, subs } => std::iter::once(&**base)
                .chain(subs.iter().flat_map(Subscript::exprs))
                .collect(),
            ExprKind::Collective(c) => c.config.iter().map(|c| &c.value).chain(&c.args).collect(),
            ExprKind::Shared { dims, .. } | ExprKind::Zeros { dims, .. } => dims.iter().collect(),
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Name(_)
            | ExprKind::Ctx(_)
            | ExprKind::Error => Vec::new(),
        }
    }

    /// Calls `f` on this expression and every expression inside it, outer
    /// first, in source order.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Expr)) {
        f(self);
        for c in self.children() {
            c.walk(f);
        }
    }
}

/// `op<config>(args)`: a collective or a shuffle (`ExprKind::Collective`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Collective {
    pub op: Ident,
    pub config: Vec<ConfigItem>,
    pub config_span: Span,
    pub args: Vec<Expr>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Subscript {
    /// An index: `i`.
    Point(Expr),
    /// A span `start :+ len`.
    Span {
        start: Box<Expr>,
        len: Box<Expr>,
        span: Span,
    },
    /// `:`, the whole dim.
    Full(Span),
}

impl Subscript {
    /// The expressions written in this subscript: a point's index, a
    /// span's start and length.
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            Subscript::Point(x) => vec![x],
            Subscript::Span { start, len, .. } => vec![start, len],
            Subscript::Full(_) => Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigItem {
    pub key: ConfigKey,
    pub key_span: Span,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ConfigKey {
    Over,
    Width,
    From,
    Xor,
    Down,
    Up,
}

impl ConfigKey {
    /// The key as written: `over`, `width`, ...
    pub fn name(self) -> &'static str {
        match self {
            ConfigKey::Over => "over",
            ConfigKey::Width => "width",
            ConfigKey::From => "from",
            ConfigKey::Xor => "xor",
            ConfigKey::Down => "down",
            ConfigKey::Up => "up",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub enum CtxField {
    Thread,
    Threads,
    Warp,
    Warps,
    Lane,
    Lanes,
    BlockX,
    BlockY,
    BlockZ,
    GridX,
    GridY,
    GridZ,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The formatter prints this head before ` = `, and the language
    /// server shows it as a local's detail.
    #[test]
    fn let_head_is_the_statement_as_written_up_to_its_value() {
        let name = Ident {
            name: "x".to_string(),
            span: Span::new(4, 5),
        };
        let f32_ty = Some((ScalarTy::F32, Span::new(7, 10)));
        assert_eq!(let_head(true, &name, f32_ty), "var x: f32");
        assert_eq!(let_head(false, &name, None), "let x");
        assert_eq!(decl_keyword(true), "var");
        assert_eq!(decl_keyword(false), "let");
    }
}
