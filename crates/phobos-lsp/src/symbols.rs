//! Names resolved on the syntax tree: every definition (fns and their
//! parameters, kernel parameters, dims, autotune constants, `let`/`var`
//! locals, loop variables) and every use that refers to one. Works on
//! kernels that do not check, so go-to-definition and references never
//! depend on the checker. Scopes follow the language: a local is visible
//! after its statement to the end of its block; a loop variable in the
//! loop's body; parameters, dims and autotune names in the whole kernel;
//! fns in the whole file.

use phobos_core::ast::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Fn,
    FnParam,
    TensorParam,
    ScalarParam,
    Dim,
    Autotune,
    Local,
    LoopVar,
}

impl SymbolKind {
    pub fn describe(self) -> &'static str {
        match self {
            SymbolKind::Fn => "fn, inlined at each use",
            SymbolKind::FnParam => "fn parameter (untyped; typed at each use)",
            SymbolKind::TensorParam => "tensor parameter",
            SymbolKind::ScalarParam => "scalar parameter",
            SymbolKind::Dim => "dim (an i32 given at launch)",
            SymbolKind::Autotune => "autotune constant (one kernel variant per value)",
            SymbolKind::Local => "local",
            SymbolKind::LoopVar => "loop variable",
        }
    }
    pub fn in_kernel(self) -> bool {
        !matches!(self, SymbolKind::Fn | SymbolKind::FnParam)
    }
}

#[derive(Clone, Debug)]
pub struct Def {
    pub name: String,
    pub kind: SymbolKind,
    /// The defining name.
    pub span: Span,
    /// Where the name can be used: its scope.
    pub scope: Span,
    /// How hover shows it, e.g. `let acc: f32` or `W: tensor<f32>[N, K]`.
    pub signature: String,
}

#[derive(Clone, Debug, Default)]
pub struct Symbols {
    pub defs: Vec<Def>,
    /// Each use and the definition it refers to.
    pub uses: Vec<(Span, usize)>,
}

impl Symbols {
    /// The symbol whose definition or use covers `offset`.
    pub fn at(&self, offset: usize) -> Option<usize> {
        let hit = |s: &Span| s.start as usize <= offset && offset <= s.end as usize;
        self.uses
            .iter()
            .find(|(s, _)| hit(s))
            .map(|(_, d)| *d)
            .or_else(|| self.defs.iter().position(|d| hit(&d.span)))
    }

    /// Definitions visible at `offset`, innermost first, one per name.
    pub fn in_scope(&self, offset: usize) -> Vec<&Def> {
        let mut out: Vec<&Def> = Vec::new();
        for d in self.defs.iter().rev() {
            let visible = d.scope.range().contains(&offset) || d.scope.end as usize == offset;
            if visible && !out.iter().any(|o| o.name == d.name) {
                out.push(d);
            }
        }
        out
    }
}

pub fn resolve(file: &File, src: &str) -> Symbols {
    let mut r = Resolver {
        src,
        out: Symbols::default(),
        scopes: vec![],
    };
    let whole = Span::new(0, src.len());
    // fns first: they are visible in the whole file.
    let mut fns = Vec::new();
    for item in &file.items {
        if let Item::Fn(f) = item {
            let params: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
            let sig = format!("fn {}({})", f.name.name, params.join(", "));
            fns.push(r.define(&f.name, SymbolKind::Fn, whole, sig));
        }
    }
    r.scopes.push(fns);
    for item in &file.items {
        match item {
            Item::Fn(f) => r.fn_item(f),
            Item::Kernel(k) => r.kernel(k),
        }
    }
    r.out
}

struct Resolver<'a> {
    src: &'a str,
    out: Symbols,
    /// Visible definitions, innermost scope last.
    scopes: Vec<Vec<usize>>,
}

impl Resolver<'_> {
    fn define(&mut self, name: &Ident, kind: SymbolKind, scope: Span, signature: String) -> usize {
        self.out.defs.push(Def {
            name: name.name.clone(),
            kind,
            span: name.span,
            scope,
            signature,
        });
        self.out.defs.len() - 1
    }

    fn bind(&mut self, id: usize) {
        if let Some(s) = self.scopes.last_mut() {
            s.push(id);
        }
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .copied()
            .find(|&d| self.out.defs[d].name == name)
    }

    fn use_name(&mut self, name: &str, span: Span) {
        if let Some(d) = self.lookup(name) {
            self.out.uses.push((span, d));
        }
    }

    fn fn_item(&mut self, f: &FnItem) {
        self.scopes.push(vec![]);
        for p in &f.params {
            let id = self.define(
                p,
                SymbolKind::FnParam,
                f.span,
                format!("{} (parameter of `{}`)", p.name, f.name.name),
            );
            self.bind(id);
        }
        self.expr(&f.body);
        self.scopes.pop();
    }

    fn kernel(&mut self, k: &Kernel) {
        self.scopes.push(vec![]);
        for p in &k.params {
            let sig = match &p.ty {
                ParamTy::Scalar(t) => format!("{}: {}", p.name.name, t.name()),
                ParamTy::Tensor { elem, dims, .. } => {
                    let dims: Vec<String> = dims
                        .iter()
                        .map(|d| match d {
                            Dim::Name(n) => n.name.clone(),
                            Dim::Const(v, _) => v.to_string(),
                        })
                        .collect();
                    format!(
                        "{}: tensor<{}>[{}]",
                        p.name.name,
                        elem.name(),
                        dims.join(", ")
                    )
                }
            };
            let kind = match p.ty {
                ParamTy::Scalar(_) => SymbolKind::ScalarParam,
                ParamTy::Tensor { .. } => SymbolKind::TensorParam,
            };
            let id = self.define(&p.name, kind, k.span, sig);
            self.bind(id);
            if let ParamTy::Tensor { dims, .. } = &p.ty {
                for d in dims {
                    if let Dim::Name(n) = d {
                        match self
                            .lookup(&n.name)
                            .filter(|&i| self.out.defs[i].kind == SymbolKind::Dim)
                        {
                            Some(i) => self.out.uses.push((n.span, i)),
                            None => {
                                let id = self.define(
                                    n,
                                    SymbolKind::Dim,
                                    k.span,
                                    format!("dim {}", n.name),
                                );
                                self.bind(id);
                            }
                        }
                    }
                }
            }
        }
        for a in &k.attrs {
            if let AttrKind::Autotune(entries) = &a.kind {
                for (name, values) in entries {
                    let vals: Vec<&str> = values
                        .iter()
                        .map(|v| self.src.get(v.span.range()).unwrap_or("?"))
                        .collect();
                    match self
                        .lookup(&name.name)
                        .filter(|&i| self.out.defs[i].kind == SymbolKind::Dim)
                    {
                        Some(i) => {
                            self.out.uses.push((name.span, i));
                            self.out.defs[i].signature =
                                format!("dim {} in [{}] (autotuned)", name.name, vals.join(", "));
                        }
                        None => {
                            let sig = format!("{} in [{}]", name.name, vals.join(", "));
                            let id = self.define(name, SymbolKind::Autotune, k.span, sig);
                            self.bind(id);
                        }
                    }
                    values.iter().for_each(|v| self.expr(v));
                }
            }
        }
        for a in &k.attrs {
            match &a.kind {
                AttrKind::Launch { threads, min_ctas } => {
                    self.expr(threads);
                    min_ctas.iter().for_each(|e| self.expr(e));
                }
                AttrKind::Grid(es) => es.iter().for_each(|e| self.expr(e)),
                AttrKind::Aligned(items) => {
                    for (n, e) in items {
                        self.use_name(&n.name, n.span);
                        self.expr(e);
                    }
                }
                AttrKind::Autotune(_) | AttrKind::Unknown(_) => {}
            }
        }
        self.block(&k.body);
        self.scopes.pop();
    }

    fn block(&mut self, b: &Block) {
        self.scopes.push(vec![]);
        for s in &b.stmts {
            self.stmt(s, b.span);
        }
        self.scopes.pop();
    }

    /// Defines and binds the local `name` that statement `s` declares, in
    /// scope from after `s` to the end of its `block`.
    fn define_local(&mut self, name: &Ident, s: &Stmt, block: Span, detail: String) {
        let scope = Span {
            start: s.span.end,
            end: block.end,
        };
        let id = self.define(name, SymbolKind::Local, scope, detail);
        self.bind(id);
    }

    fn stmt(&mut self, s: &Stmt, block: Span) {
        match &s.kind {
            StmtKind::Let {
                mutable,
                name,
                ty,
                init,
            } => {
                self.expr(init);
                self.define_local(name, s, block, let_head(*mutable, name, *ty));
            }
            StmtKind::ArrayDecl(a) => {
                for d in &a.shape {
                    self.expr(d);
                }
                self.expr(&a.init);
                let kw = decl_keyword(a.mutable);
                let (name, elem, dims) = (&a.name.name, a.elem.0.name(), a.shape.len());
                self.define_local(
                    &a.name,
                    s,
                    block,
                    format!("{kw} {name}: {elem}[{dims} dims]"),
                );
            }
            StmtKind::Assign { target, value, .. } => {
                self.expr(target);
                self.expr(value);
            }
            StmtKind::If { cond, then, els } => {
                self.expr(cond);
                self.block(then);
                if let Some(e) = els {
                    self.block(e);
                }
            }
            StmtKind::While { cond, body } => {
                self.expr(cond);
                self.block(body);
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Return => {}
            StmtKind::For(l) => {
                let (var, body) = (&l.var, &l.body);
                self.expr(&l.start);
                self.expr(&l.end);
                if let Some(st) = &l.step {
                    self.expr(st);
                }
                self.scopes.push(vec![]);
                let id = self.define(
                    var,
                    SymbolKind::LoopVar,
                    body.span,
                    format!("for {} (i32)", var.name),
                );
                self.bind(id);
                self.block(body);
                self.scopes.pop();
            }
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Error => {}
        }
    }

    /// The span of the name itself inside a possibly parenthesized `Name`.
    fn name_span(&self, e: &Expr, name: &str) -> Span {
        let text = self.src.get(e.span.range()).unwrap_or("");
        match text.find(name) {
            Some(i) => Span::new(
                e.span.start as usize + i,
                e.span.start as usize + i + name.len(),
            ),
            None => e.span,
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Name(n) => {
                let span = self.name_span(e, n);
                self.use_name(n, span);
            }
            ExprKind::Call { callee, .. } => self.use_name(&callee.name, callee.span),
            _ => {}
        }
        e.children().into_iter().for_each(|c| self.expr(c));
    }
}
