//! What the server knows about one document, computed once per version and
//! queried by byte offset: diagnostics, hover text, definitions and
//! references, completions, semantic tokens, inlay hints. No LSP types here
//! (see `server.rs`), so it can be tested on plain strings.
//!
//! Names are resolved on the syntax tree (`symbols`), so definitions work
//! in kernels that do not check. Types and uniformity come from the
//! checked HIR, and load widths, tile offsets and shuffle counts from the
//! backend's metadata, one kernel at a time (`unit`): both exist only for
//! kernels without errors, and hover says so.

use crate::symbols::{self, SymbolKind, Symbols};
use crate::unit::{self, Placed, UnitCache};
use phobos_core::ast::{self, Span};
use phobos_core::check::uniformity::{self, Facts, Level};
use phobos_core::hir::{self, Group, Ty};
use phobos_core::meta::VariantMeta;
use phobos_core::source::LineIndex;
use phobos_core::Diagnostic;
use std::collections::HashSet;

pub struct Analysis {
    pub src: String,
    pub lines: LineIndex,
    pub file: ast::File,
    pub diagnostics: Vec<Diagnostic>,
    pub symbols: Symbols,
    pub(crate) units: Vec<Placed>,
}

/// A checked kernel seen from the document: its unit, where the unit sits,
/// the kernel's first variant and its uniformity facts.
pub(crate) struct KernelView<'a> {
    pub placed: &'a Placed,
    pub k: &'a hir::Kernel,
    pub facts: &'a Facts,
}

impl KernelView<'_> {
    fn src(&self) -> &str {
        &self.placed.unit.src
    }
    fn meta(&self) -> Option<&VariantMeta> {
        self.placed.unit.meta_of(self.k)
    }
    pub fn to_unit(&self, doc: usize) -> Option<usize> {
        self.placed.to_unit(doc)
    }
    pub fn to_doc(&self, s: Span) -> Span {
        self.placed.span_to_doc(s)
    }
    /// The HIR local declared at document offset `doc`.
    pub fn local_at(&self, doc: usize) -> Option<(usize, &hir::Local)> {
        let at = self.to_unit(doc)?;
        self.k
            .locals
            .iter()
            .enumerate()
            .find(|(_, l)| l.span.range().contains(&at))
    }
    pub fn level_of_local(&self, lid: usize) -> Level {
        self.facts
            .levels
            .get(lid)
            .copied()
            .unwrap_or(Level::Varying)
    }
}

/// One completion candidate.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    pub label: String,
    pub detail: String,
    pub kind: CompletionKind,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CompletionKind {
    Field,
    Keyword,
    Function,
    Variable,
}

const CTX_FIELDS: [(&str, &str); 8] = [
    ("thread", "i32, varying: the thread's index in the CTA"),
    ("threads", "i32, uniform: threads per CTA (@launch)"),
    ("warp", "i32, warp-uniform: the warp's index in the CTA"),
    ("warps", "i32, uniform: warps per CTA"),
    ("lane", "i32, varying: the lane's index in its warp (0..31)"),
    ("lanes", "i32, uniform: 32"),
    (
        "block",
        "ctx.block.x|y|z, uniform: the CTA's index in the grid",
    ),
    ("grid", "ctx.grid.x|y|z, uniform: CTAs in the grid"),
];

const BUILTINS: [(&str, &str); 22] = [
    ("min", "min(a, b)"),
    ("max", "max(a, b)"),
    ("abs", "abs(x)"),
    ("sqrt", "sqrt(x)"),
    ("rsqrt", "rsqrt(x)"),
    ("exp", "exp(x)"),
    ("exp2", "exp2(x)"),
    ("log", "log(x)"),
    ("log2", "log2(x)"),
    ("sin", "sin(x)"),
    ("cos", "cos(x)"),
    ("tanh", "tanh(x)"),
    ("fma", "fma(a, b, c)"),
    ("floor", "floor(x)"),
    ("ceil", "ceil(x)"),
    ("select", "select(cond, a, b)"),
    ("cdiv", "cdiv(a, b): ceil(a / b)"),
    ("dp4a", "dp4a(a, b, c): four byte products added to c"),
    ("byteperm", "byteperm(a, b, sel): prmt.b32"),
    ("popcount", "popcount(x)"),
    ("elem", "elem(run, i): element i of a run"),
    ("word", "word(run, i): bytes 4i..4i+3 of an i8/u8 run"),
];

const KEYWORDS: [&str; 18] = [
    "fn", "kernel", "let", "var", "if", "else", "for", "while", "break", "continue", "return",
    "in", "range", "true", "false", "inf", "nan", "ctx",
];

const CONFIG_WORDS: [(&str, &str); 6] = [
    ("over", "over ctx.lane | over ctx.thread: the group"),
    ("width", "width W: pieces of W lanes (2, 4, 8, 16, 32)"),
    ("from", "shfl<from L>: read lane L"),
    ("xor", "shfl<xor M>: read lane ^ M"),
    ("down", "shfl<down D>: read lane + D"),
    ("up", "shfl<up D>: read lane - D"),
];

/// What makes two diagnostics the same: code, message and labels.
type DiagKey = (String, String, Vec<(u32, u32, bool)>);

impl Analysis {
    /// Analyse `src` from scratch.
    pub fn new(src: &str) -> Analysis {
        Analysis::with_cache(src, &mut UnitCache::default())
    }

    /// Analyse `src`, checking and compiling only the kernels whose unit
    /// (the kernel and the fns) is not in `cache` already.
    pub fn with_cache(src: &str, cache: &mut UnitCache) -> Analysis {
        let (file, parse_diags) = phobos_core::parser::parse(src);
        let units = unit::place(src, &file, cache);
        let mut diagnostics = parse_diags;
        let mut seen: HashSet<DiagKey> = diagnostics.iter().map(diag_key).collect();
        for p in &units {
            for d in &p.unit.diagnostics {
                let d = p.diagnostic_to_doc(d);
                if seen.insert(diag_key(&d)) {
                    diagnostics.push(d);
                }
            }
        }
        diagnostics.sort_by_key(|d| {
            d.labels
                .iter()
                .find(|l| l.primary)
                .map_or(0, |l| l.span.start)
        });
        phobos_core::diag::cap(&mut diagnostics);
        let symbols = symbols::resolve(&file, src);
        Analysis {
            src: src.to_string(),
            lines: LineIndex::new(src),
            file,
            diagnostics,
            symbols,
            units,
        }
    }

    /// The definition of the name at `offset`.
    pub fn definition(&self, offset: usize) -> Option<Span> {
        let id = self.symbols.at(offset)?;
        Some(self.symbols.defs[id].span)
    }

    /// Every mention of the name at `offset`, its definition first.
    pub fn references(&self, offset: usize) -> Vec<Span> {
        let Some(id) = self.symbols.at(offset) else {
            return vec![];
        };
        let mut out = vec![self.symbols.defs[id].span];
        out.extend(
            self.symbols
                .uses
                .iter()
                .filter(|(_, s)| *s == id)
                .map(|(span, _)| *span),
        );
        out
    }

    /// Markdown describing what is at `offset`, and the span it describes.
    pub fn hover(&self, offset: usize) -> Option<(String, Span)> {
        if let Some(h) = self.hover_expr(offset) {
            return Some(h);
        }
        let id = self.symbols.at(offset)?;
        let def = &self.symbols.defs[id];
        let span = self
            .symbols
            .uses
            .iter()
            .find(|(s, i)| *i == id && s.range().contains(&offset))
            .map_or(def.span, |(s, _)| *s);
        let mut text = format!("```phobos\n{}\n```\n{}", def.signature, def.kind.describe());
        if let Some(note) = self.symbol_facts(id) {
            text.push_str("\n\n");
            text.push_str(&note);
            text.push_str(self.partial_note(offset));
        } else if self.kernel_at(offset).is_none() && def.kind.in_kernel() {
            text.push_str("\n\n*Types and uniformity are shown once the kernel parses.*");
        }
        Some((text, span))
    }

    /// A note for facts from a kernel with errors, else nothing.
    fn partial_note(&self, offset: usize) -> &'static str {
        match self.kernel_at(offset) {
            Some(kv) if kv.placed.unit.is_partial(kv.k) => {
                "\n\n*The kernel has errors: this is what the checker could judge.*"
            }
            _ => "",
        }
    }

    /// The checked kernel whose span holds document offset `offset`.
    pub(crate) fn kernel_at(&self, offset: usize) -> Option<KernelView<'_>> {
        self.units
            .iter()
            .filter(|p| p.kernel.range().contains(&offset))
            .find_map(|placed| {
                let (k, facts) = placed.unit.kernel_at(placed.to_unit(offset)?)?;
                Some(KernelView { placed, k, facts })
            })
    }

    /// The document line of a unit span's start.
    fn doc_line(&self, kv: &KernelView, span: Span) -> u32 {
        self.lines.line(kv.to_doc(span).start as usize)
    }

    /// Facts about a symbol from the checked kernel: a local's type and
    /// uniformity, a tile's shared offset and size.
    fn symbol_facts(&self, id: usize) -> Option<String> {
        let def = &self.symbols.defs[id];
        let kv = self.kernel_at(def.span.start as usize)?;
        match def.kind {
            SymbolKind::Local | SymbolKind::LoopVar => {
                let (lid, local) = kv.local_at(def.span.start as usize)?;
                match &local.kind {
                    hir::LocalKind::Scalar(t) => {
                        let level = kv.level_of_local(lid);
                        let mut s = format!("type `{}` · **{}**", t.name(), level_name(level));
                        for step in self.local_chain(&kv, lid, 0) {
                            s.push_str("\n- ");
                            s.push_str(&step);
                        }
                        Some(s)
                    }
                    hir::LocalKind::Tile { elem, shape } => {
                        Some(self.tile_facts(&kv, &local.name, *elem, shape))
                    }
                    hir::LocalKind::Acc { elem, rows, cols } => Some(format!(
                        "accumulator tile `{}[{rows}, {cols}]` · in registers, spread over the warps · **uniform** (CTA-wide)",
                        elem.name()
                    )),
                    hir::LocalKind::Array { elem, shape } => {
                        let level = kv.level_of_local(lid);
                        let dims: Vec<String> = shape.iter().map(u32::to_string).collect();
                        Some(format!(
                            "register array `{}[{}]` · **{}**",
                            elem.name(),
                            dims.join(", "),
                            level_name(level)
                        ))
                    }
                }
            }
            SymbolKind::TensorParam | SymbolKind::ScalarParam | SymbolKind::Dim => {
                Some("**uniform** (the same for every thread of the launch)".into())
            }
            _ => None,
        }
    }

    fn tile_facts(
        &self,
        kv: &KernelView,
        name: &str,
        elem: ast::ScalarTy,
        shape: &[u32],
    ) -> String {
        let dims: Vec<String> = shape.iter().map(u32::to_string).collect();
        let mut s = format!("shared tile `{}[{}]`", elem.name(), dims.join(", "));
        match kv
            .meta()
            .and_then(|m| m.shared_plan.iter().find(|b| b.name == name))
        {
            Some(b) => s.push_str(&format!(
                "\n\nshared memory: offset {} bytes, size {} bytes, live lines {}–{}",
                b.offset,
                b.bytes,
                kv.placed.line_to_doc(b.live_lines.0, &self.lines),
                kv.placed.line_to_doc(b.live_lines.1, &self.lines)
            )),
            None => s.push_str("\n\n*shared offset unknown: the kernel did not compile*"),
        }
        s
    }

    /// Why local `lid` is as varying as it is, as a chain of causes.
    fn local_chain(&self, kv: &KernelView, lid: usize, depth: usize) -> Vec<String> {
        let facts = kv.facts;
        let level = facts.levels.get(lid).copied().unwrap_or(Level::Uniform);
        let (Some(Some((span, under_control))), true) =
            (facts.causes.get(lid), level > Level::Uniform)
        else {
            return vec![];
        };
        let name = &kv.k.locals[lid].name;
        let line = self.doc_line(kv, *span);
        if *under_control {
            return vec![format!(
                "`{name}` is assigned on line {line} under an `if` or loop that differs between {}",
                between(level)
            )];
        }
        let mut out = vec![format!(
            "`{name}` gets a value that differs between {} on line {line}",
            between(level)
        )];
        if depth < 6 {
            if let Some(e) = find_assigned_value(&kv.k.body, *span) {
                out.extend(self.expr_chain(kv, e, depth + 1));
            }
        }
        out
    }

    /// The first leaf of `e` that makes it as varying as it is.
    fn expr_chain(&self, kv: &KernelView, e: &hir::Expr, depth: usize) -> Vec<String> {
        let (k, facts) = (kv.k, kv.facts);
        let level = uniformity::expr_level(k, &facts.levels, e);
        if level == Level::Uniform {
            return vec![];
        }
        let mut found = Vec::new();
        visit_hir(e, &mut |x| {
            if !found.is_empty() {
                return;
            }
            match &x.kind {
                hir::ExprKind::Ctx(f) if uniformity::expr_level(k, &facts.levels, x) == level => {
                    found.push(format!(
                        "`{}` differs between {}",
                        phobos_core::format::ctx_text(*f),
                        between(level)
                    ));
                }
                hir::ExprKind::Local(id) => {
                    let i = id.0 as usize;
                    if facts.levels.get(i) == Some(&level) {
                        found.extend(self.local_chain(kv, i, depth));
                        if found.is_empty() {
                            found.push(format!("`{}` is {}", k.locals[i].name, level_name(level)));
                        }
                    }
                }
                hir::ExprKind::Shuffle { .. } => {
                    found.push("a shuffle's result differs between lanes".into())
                }
                hir::ExprKind::Collective {
                    group: Group::Lane { width },
                    ..
                } if *width < 32 => found.push(format!(
                    "a collective over {width}-lane pieces differs between pieces"
                )),
                _ => {}
            }
        });
        found
    }

    /// Hover on an expression of a checked kernel: the innermost one at
    /// `offset` with its type and uniformity, and more for subscripts,
    /// collectives and shuffles.
    fn hover_expr(&self, offset: usize) -> Option<(String, Span)> {
        let kv = self.kernel_at(offset)?;
        let at = kv.to_unit(offset)?;
        let mut best: Option<&hir::Expr> = None;
        visit_kernel_exprs(kv.k, &mut |e| {
            if e.span.range().contains(&at)
                && best.is_none_or(|b| e.span.end - e.span.start <= b.span.end - b.span.start)
            {
                best = Some(e);
            }
        });
        let e = best?;
        // A name resolves to a symbol with more to say (its definition).
        if matches!(
            e.kind,
            hir::ExprKind::Local(_) | hir::ExprKind::Param(_) | hir::ExprKind::Dim(_)
        ) {
            return None;
        }
        let level = uniformity::expr_level(kv.k, &kv.facts.levels, e);
        let shown = kv.src().get(e.span.range()).unwrap_or("");
        let shown: String = shown.chars().take(80).collect();
        let mut text = format!(
            "```phobos\n{shown}\n```\ntype `{}` · **{}**",
            ty_name(e.ty),
            level_name(level)
        );
        for step in self.expr_chain(&kv, e, 0) {
            text.push_str("\n- ");
            text.push_str(&step);
        }
        match &e.kind {
            hir::ExprKind::Load { .. } | hir::ExprKind::RunLoad { .. } => {
                text.push_str(&access_facts(&kv, e, false));
            }
            hir::ExprKind::Collective { op, group, arg, .. } => {
                text.push_str(&collective_cost(*op, *group, arg.ty));
            }
            hir::ExprKind::Shuffle { value, .. } => {
                let words = words(value.ty);
                text.push_str(&format!(
                    "\n\ncost: {words} `shfl.sync` (one per 32-bit word of `{}`)",
                    ty_name(value.ty)
                ));
            }
            _ => {}
        }
        text.push_str(self.partial_note(offset));
        Some((text, kv.to_doc(e.span)))
    }

    /// Completions at `offset`: `ctx.` fields after `ctx.`, configuration
    /// words inside a collective's `<...>`, else keywords, built-ins,
    /// collectives, types and the names in scope.
    pub fn completions(&self, offset: usize) -> Vec<Completion> {
        let before = self.src.get(..offset).unwrap_or("");
        // The word starts after the last character that is not part of a
        // name; that character may take several bytes (`ï`, an emoji).
        let word_start = before
            .char_indices()
            .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let head = &before[..word_start];
        let field = |l: &str, d: &str| Completion {
            label: l.into(),
            detail: d.into(),
            kind: CompletionKind::Field,
        };
        if head.ends_with("ctx.block.") || head.ends_with("ctx.grid.") {
            return ["x", "y", "z"]
                .iter()
                .map(|a| field(a, "uniform, i32"))
                .collect();
        }
        if head.ends_with("ctx.") {
            return CTX_FIELDS.iter().map(|(l, d)| field(l, d)).collect();
        }
        if in_config(head) {
            return CONFIG_WORDS
                .iter()
                .map(|(l, d)| Completion {
                    label: l.to_string(),
                    detail: d.to_string(),
                    kind: CompletionKind::Keyword,
                })
                .collect();
        }
        let mut out: Vec<Completion> = KEYWORDS
            .iter()
            .map(|k| Completion {
                label: k.to_string(),
                detail: "keyword".into(),
                kind: CompletionKind::Keyword,
            })
            .collect();
        out.extend(BUILTINS.iter().map(|(l, d)| Completion {
            label: l.to_string(),
            detail: d.to_string(),
            kind: CompletionKind::Function,
        }));
        for op in phobos_core::parser::COLLECTIVE_OPS {
            if out.iter().any(|c| c.label == op) {
                continue;
            }
            out.push(Completion {
                label: op.to_string(),
                detail: format!("{op}<over ctx.lane>(x): collective"),
                kind: CompletionKind::Function,
            });
        }
        for t in ast::ScalarTy::ALL {
            out.push(Completion {
                label: t.name().into(),
                detail: "type / conversion".into(),
                kind: CompletionKind::Keyword,
            });
        }
        for d in self.symbols.in_scope(offset) {
            out.push(Completion {
                label: d.name.clone(),
                detail: d.signature.clone(),
                kind: match d.kind {
                    SymbolKind::Fn => CompletionKind::Function,
                    _ => CompletionKind::Variable,
                },
            });
        }
        out
    }

    /// The whole document formatted, or why not.
    pub fn format(&self) -> Result<String, String> {
        phobos_core::format::format_source(&self.src).map_err(|e| e.to_string())
    }
}

/// The backend's decision for the access at `e`'s subscript.
fn access_facts(kv: &KernelView, e: &hir::Expr, store: bool) -> String {
    let kind = match &e.kind {
        hir::ExprKind::RunLoad { len, .. } => format!("run of {len} elements"),
        _ => "point".to_string(),
    };
    // The metadata's lines and columns are the unit's.
    let (line, col) = kv.placed.unit.lines.line_col(e.span.start as usize);
    let Some(m) = kv.meta() else {
        return format!(
            "\n\nsubscript: {kind}\n\n*load width unknown: the kernel did not compile*"
        );
    };
    let Some(a) = m
        .loads
        .iter()
        .find(|a| a.line == line && a.col == col && a.store == store)
    else {
        return format!("\n\nsubscript: {kind}");
    };
    let mut s = format!(
        "\n\nsubscript: {kind} of `{}` — {} bytes per instruction, proven {}-byte aligned",
        a.target, a.width_bytes, a.align_bytes
    );
    if !a.reason.is_empty() {
        s.push_str(&format!("\n\nnot wider: {}", a.reason));
    }
    s
}

/// What makes two diagnostics the same one (units repeat the fns' and the
/// parser's).
fn diag_key(d: &Diagnostic) -> DiagKey {
    (
        d.code.to_string(),
        d.message.clone(),
        d.labels
            .iter()
            .map(|l| (l.span.start, l.span.end, l.primary))
            .collect(),
    )
}

/// Whether the text before the cursor is inside an unclosed `op<`.
fn in_config(head: &str) -> bool {
    let Some(lt) = head.rfind('<') else {
        return false;
    };
    let after = &head[lt + 1..];
    if after.contains(['>', '(', ')', '\n']) {
        return false;
    }
    let name_end = head[..lt].trim_end();
    phobos_core::parser::COLLECTIVE_OPS
        .iter()
        .any(|op| name_end.ends_with(op))
        && (after.trim().is_empty() || after.trim_end().ends_with(','))
}

fn collective_cost(op: hir::CollOp, group: Group, arg: Ty) -> String {
    let w = words(arg) + u32::from(op == hir::CollOp::Argmax);
    let per = if op == hir::CollOp::Argmax {
        "value and lane"
    } else {
        "one per 32-bit word of the value"
    };
    match (op, group) {
        (hir::CollOp::Any | hir::CollOp::All, Group::Lane { .. }) => {
            "\n\ncost: one `vote.sync`, no shuffles".into()
        }
        (_, Group::Lane { width }) => {
            let steps = width.max(1).trailing_zeros();
            format!(
                "\n\ncost: {steps} butterfly steps × {w} `shfl.sync.bfly` ({per}) = {} shuffles",
                steps * w
            )
        }
        (_, Group::Thread) => format!(
            "\n\ncost: a 5-step butterfly per warp ({} shuffles), one slot per warp in shared scratch, barriers, and a fold of the slots",
            5 * w
        ),
    }
}

fn words(t: Ty) -> u32 {
    match t {
        Ty::Scalar(s) if s.size() == 8 => 2,
        _ => 1,
    }
}

pub fn level_name(l: Level) -> &'static str {
    match l {
        Level::Uniform => "uniform",
        Level::WarpUniform => "warp-uniform",
        Level::Varying => "varying",
    }
}

fn between(l: Level) -> &'static str {
    match l {
        Level::Varying => "lanes",
        _ => "warps",
    }
}

pub fn ty_name(t: Ty) -> String {
    match t {
        Ty::Scalar(s) => s.name().into(),
        Ty::Run { elem, len } => format!("run of {len} × {}", elem.name()),
        Ty::Unit => "()".into(),
    }
}

fn find_assigned_value(b: &hir::Block, span: Span) -> Option<&hir::Expr> {
    for s in &b.stmts {
        match &s.kind {
            hir::StmtKind::Let { init, .. } | hir::StmtKind::Assign { value: init, .. }
                if s.span == span =>
            {
                return Some(init)
            }
            _ => {
                if let Some(e) = s
                    .blocks()
                    .into_iter()
                    .find_map(|b| find_assigned_value(b, span))
                {
                    return Some(e);
                }
            }
        }
    }
    None
}

/// Every expression of a kernel, outer before inner.
pub fn visit_kernel_exprs<'a>(k: &'a hir::Kernel, f: &mut dyn FnMut(&'a hir::Expr)) {
    fn block<'a>(b: &'a hir::Block, f: &mut dyn FnMut(&'a hir::Expr)) {
        for s in &b.stmts {
            s.exprs(&mut |e| visit_hir(e, f));
            s.blocks().into_iter().for_each(|b| block(b, f));
        }
    }
    block(&k.body, f);
}

/// `e` and every expression inside it, outer first.
pub fn visit_hir<'a>(e: &'a hir::Expr, f: &mut dyn FnMut(&'a hir::Expr)) {
    f(e);
    e.operands().into_iter().for_each(|x| visit_hir(x, f));
}
