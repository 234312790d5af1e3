//! Incremental analysis: a document is checked one kernel at a time, and a
//! kernel whose text (and the text of the `fn`s it calls, which kernels
//! inline) is unchanged since the last analysis is not checked or compiled
//! again.
//!
//! A *unit* is the text one kernel needs: that kernel and the `fn` items it
//! calls, directly or through other fns, copied from the document in
//! document order. One more unit holds every fn, so that errors in fns
//! (two fns of one name, recursion) show even where no kernel calls them. It is checked and compiled
//! as a file of its own (`phobos_core::check_source`, then the backend per
//! kernel), so its spans, lines and metadata are relative to the unit's
//! text. A [`Placed`] unit adds where each copied piece sits in the
//! document now, to convert offsets both ways; the unit itself is cached by
//! its text ([`UnitCache`]) and survives edits that only move it.
//!
//! Two kernels of one name are an error only the whole file shows (P0201),
//! so a document with such a pair is analysed as one unit, as it was
//! written. The diagnostics of all units together are what
//! `phobos_core::check_for_targets` reports for the whole file and the
//! cache's targets (the project's `phobos.toml` `arches`, else sm_75; the
//! front end's, then the backend's for each kernel that checked);
//! `tests/incremental.rs` checks this on the corpus.

use phobos_core::ast::{self, Span};
use phobos_core::check::uniformity::Facts;
use phobos_core::hir::{self, CheckedKernel};
use phobos_core::meta::{KernelMeta, VariantMeta};
use phobos_core::source::LineIndex;
use phobos_core::{CompileOptions, Diagnostic};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What one unit's text checks and compiles to, spans relative to `src`.
pub struct Unit {
    pub src: String,
    pub lines: LineIndex,
    pub kernels: Vec<CheckedKernel>,
    /// The kernels with errors, as far as the checker could judge them
    /// (hover shows their types and uniformity too).
    pub partial: Vec<CheckedKernel>,
    pub metas: Vec<KernelMeta>,
    /// Every diagnostic of the unit: the front end's, then the backend's.
    pub diagnostics: Vec<Diagnostic>,
}

impl Unit {
    /// Check the unit's text and, when it has no errors, compile each
    /// kernel for each of `arches` (the backend reports shared-memory
    /// limits, tile hazards and what a target lacks, each error once as
    /// `phobos check` does; the first target's compile gives hover its
    /// load widths and tile plans).
    pub fn analyse(src: String, arches: &[u32]) -> Unit {
        let (checked, mut diagnostics) = phobos_core::check_source_with_partial(&src);
        phobos_core::diag::cap(&mut diagnostics);
        let phobos_core::check::Checked { kernels, partial } = checked;
        let mut metas = Vec::new();
        if !diagnostics.iter().any(Diagnostic::is_error) {
            for k in &kernels {
                for &arch in arches {
                    let opts = CompileOptions::for_arch(arch);
                    match phobos_core::backend::compile_kernel(k, &src, "<editor>", &opts) {
                        Ok(c) if !metas.iter().any(|m: &KernelMeta| m.name == c.meta.name) => {
                            metas.push(c.meta)
                        }
                        Ok(_) => {}
                        Err(d) => phobos_core::add_once_per_target(&mut diagnostics, d),
                    }
                }
            }
        }
        Unit {
            lines: LineIndex::new(&src),
            src,
            kernels,
            partial,
            metas,
            diagnostics,
        }
    }

    /// The checked kernel (first variant) whose span holds `offset`, with
    /// its uniformity facts (the checker's side table); a kernel with
    /// errors gives what the checker could judge of it.
    pub fn kernel_at(&self, offset: usize) -> Option<(&hir::Kernel, &Facts)> {
        self.kernels
            .iter()
            .chain(&self.partial)
            .find(|k| k.span.range().contains(&offset))
            .and_then(|k| k.variants.first())
            .map(|k| (k, &k.uniformity))
    }

    /// Whether `kernel` (from [`Unit::kernel_at`]) has errors.
    pub fn is_partial(&self, kernel: &hir::Kernel) -> bool {
        self.partial
            .iter()
            .any(|c| c.variants.first().is_some_and(|v| std::ptr::eq(v, kernel)))
    }

    pub fn meta_of(&self, kernel: &hir::Kernel) -> Option<&VariantMeta> {
        self.metas
            .iter()
            .find(|m| m.name == kernel.name)
            .and_then(|m| m.variants.first())
    }
}

/// A piece of the unit's text copied from the document.
#[derive(Clone, Copy, Debug)]
struct Segment {
    unit: usize,
    doc: usize,
    len: usize,
}

/// A unit and where its pieces are in the current document.
pub struct Placed {
    pub unit: Arc<Unit>,
    segments: Vec<Segment>,
    /// The document span of the kernel this unit is for (the whole
    /// document for a whole-document unit; empty for the unit of fns).
    pub kernel: Span,
}

impl Placed {
    /// The unit offset of document offset `doc`, when the unit copied it.
    pub fn to_unit(&self, doc: usize) -> Option<usize> {
        self.segments
            .iter()
            .find(|s| s.doc <= doc && doc <= s.doc + s.len)
            .map(|s| s.unit + doc - s.doc)
    }

    /// The document offset of unit offset `at` (a separator between
    /// pieces maps to the end of the piece before it).
    pub fn to_doc(&self, at: usize) -> usize {
        let i = self.segments.partition_point(|s| s.unit <= at).max(1) - 1;
        match self.segments.get(i) {
            Some(s) => s.doc + (at.saturating_sub(s.unit)).min(s.len),
            None => at,
        }
    }

    pub fn span_to_doc(&self, s: Span) -> Span {
        let start = self.to_doc(s.start as usize);
        let end = self.to_doc(s.end as usize).max(start);
        Span::new(start, end)
    }

    /// A unit diagnostic with every label moved into the document.
    pub fn diagnostic_to_doc(&self, d: &Diagnostic) -> Diagnostic {
        let mut d = d.clone();
        for l in &mut d.labels {
            l.span = self.span_to_doc(l.span);
        }
        d
    }

    /// The document line (1-based) of unit line `line`.
    pub fn line_to_doc(&self, line: u32, doc_lines: &LineIndex) -> u32 {
        match self.unit.lines.line_start(line) {
            Some(at) => doc_lines.line(self.to_doc(at)),
            None => line,
        }
    }
}

/// Units by their text, kept between analyses of a document, checked for
/// one list of targets.
pub struct UnitCache {
    units: HashMap<String, Arc<Unit>>,
    /// How many units were checked (not found in the cache) so far.
    pub checked: usize,
    /// The targets each unit is compiled for.
    arches: Vec<u32>,
}

/// The targets a document is checked for when its project names none:
/// sm_75 alone, the floor every target's rules include but the newer
/// targets' features (a `dot` of bf16 needs sm_80), and one compile per
/// kernel keeps the editor quick.
pub const DEFAULT_ARCHES: [u32; 1] = [75];

impl Default for UnitCache {
    fn default() -> UnitCache {
        UnitCache::for_targets(DEFAULT_ARCHES.to_vec())
    }
}

impl UnitCache {
    /// An empty cache whose units are compiled for `arches` (at least one;
    /// an empty list means [`DEFAULT_ARCHES`]).
    pub fn for_targets(arches: Vec<u32>) -> UnitCache {
        UnitCache {
            units: HashMap::new(),
            checked: 0,
            arches: if arches.is_empty() {
                DEFAULT_ARCHES.to_vec()
            } else {
                arches
            },
        }
    }

    /// The targets units are compiled for.
    pub fn arches(&self) -> &[u32] {
        &self.arches
    }

    fn get(&mut self, text: String, used: &mut HashSet<String>) -> Arc<Unit> {
        used.insert(text.clone());
        if let Some(u) = self.units.get(&text) {
            return u.clone();
        }
        self.checked += 1;
        let u = Arc::new(Unit::analyse(text.clone(), &self.arches));
        self.units.insert(text, u.clone());
        u
    }

    /// Check the units of `texts` that are not cached yet, spread over the
    /// machine's cores: opening a file checks every kernel at once, while
    /// an edit usually checks one (then this does nothing new).
    fn fill<'t>(&mut self, texts: impl Iterator<Item = &'t String>) {
        let mut missing: Vec<&String> = texts.filter(|t| !self.units.contains_key(*t)).collect();
        missing.sort_unstable();
        missing.dedup();
        if missing.len() < 2 {
            return;
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(missing.len());
        let per_thread = missing.len().div_ceil(threads);
        let arches = &self.arches;
        let analysed: Vec<Unit> = std::thread::scope(|scope| {
            let workers: Vec<_> = missing
                .chunks(per_thread)
                .map(|chunk| {
                    scope.spawn(move || {
                        chunk
                            .iter()
                            .map(|t| Unit::analyse((*t).clone(), arches))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| match w.join() {
                    Ok(units) => units,
                    // A panic in the checker: resume it here, as checking
                    // on this thread would have.
                    Err(panic) => std::panic::resume_unwind(panic),
                })
                .collect()
        });
        self.checked += analysed.len();
        for u in analysed {
            self.units.insert(u.src.clone(), Arc::new(u));
        }
    }

    /// Units checked so far (for tests and the benchmark).
    pub fn len(&self) -> usize {
        self.units.len()
    }

    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }
}

/// The units of a parsed document: one per kernel with the fns it calls,
/// plus one of all the fns (so errors in fns show in a file without kernels), or
/// one for the whole document when two kernels share a name. Units the
/// document no longer has are dropped from the cache.
pub fn place(src: &str, file: &ast::File, cache: &mut UnitCache) -> Vec<Placed> {
    let mut used = HashSet::new();
    let mut out = Vec::new();
    let kernels: Vec<&ast::Kernel> = file
        .items
        .iter()
        .filter_map(|i| match i {
            ast::Item::Kernel(k) => Some(k),
            ast::Item::Fn(_) => None,
        })
        .collect();
    let mut names: Vec<&str> = kernels.iter().map(|k| k.name.name.as_str()).collect();
    names.sort_unstable();
    let twice = names.windows(2).any(|w| w[0] == w[1]);
    if twice {
        let unit = cache.get(src.to_string(), &mut used);
        out.push(Placed {
            unit,
            segments: vec![Segment {
                unit: 0,
                doc: 0,
                len: src.len(),
            }],
            kernel: Span::new(0, src.len()),
        });
    } else {
        let has_fns = kernels.len() < file.items.len();
        let mut targets: Vec<Option<&ast::Kernel>> = kernels.into_iter().map(Some).collect();
        if has_fns {
            targets.push(None);
        }
        let texts: Vec<(String, Vec<Segment>)> =
            targets.iter().map(|t| unit_text(src, file, *t)).collect();
        cache.fill(texts.iter().map(|(text, _)| text));
        for (target, (text, segments)) in targets.into_iter().zip(texts) {
            let unit = cache.get(text, &mut used);
            out.push(Placed {
                unit,
                segments,
                kernel: target.map_or(Span::new(0, 0), |k| k.span),
            });
        }
    }
    cache.units.retain(|k, _| used.contains(k));
    out
}

/// The text of the kernel `kernel` and of the fns it calls (directly or
/// through other fns), or of every fn when `kernel` is None, in document
/// order, a blank line apart, and where each piece came from.
fn unit_text(src: &str, file: &ast::File, kernel: Option<&ast::Kernel>) -> (String, Vec<Segment>) {
    let called = kernel.map(|k| called_fns(file, k));
    let mut text = String::new();
    let mut segments = Vec::new();
    for item in &file.items {
        let span = match item {
            ast::Item::Fn(f) => match &called {
                Some(names) if !names.contains(f.name.name.as_str()) => continue,
                _ => f.span,
            },
            ast::Item::Kernel(k) if Some(k.span) == kernel.map(|k| k.span) => k.span,
            ast::Item::Kernel(_) => continue,
        };
        let piece = src.get(span.range()).unwrap_or("");
        segments.push(Segment {
            unit: text.len(),
            doc: span.start as usize,
            len: piece.len(),
        });
        text.push_str(piece);
        text.push_str("\n\n");
    }
    (text, segments)
}

/// The names of the fns kernel `k` calls, directly or through other fns
/// (a name given as a `reduce` combine fn counts as a call).
fn called_fns<'f>(file: &'f ast::File, k: &'f ast::Kernel) -> HashSet<&'f str> {
    let fns: HashMap<&str, Vec<&ast::FnItem>> =
        file.items.iter().fold(HashMap::new(), |mut m, i| {
            if let ast::Item::Fn(f) = i {
                m.entry(f.name.name.as_str()).or_default().push(f);
            }
            m
        });
    let mut names = HashSet::new();
    let mut todo = Vec::new();
    let note = |e: &'f ast::Expr, todo: &mut Vec<&'f str>| {
        crate::actions::walk_expr(e, &mut |x| match &x.kind {
            ast::ExprKind::Call { callee, .. } => todo.push(callee.name.as_str()),
            ast::ExprKind::Name(n) => todo.push(n.as_str()),
            _ => {}
        })
    };
    crate::actions::walk_block_exprs(&k.body, &mut |e| note(e, &mut todo));
    for a in &k.attrs {
        match &a.kind {
            ast::AttrKind::Launch { threads, min_ctas } => {
                note(threads, &mut todo);
                min_ctas.iter().for_each(|e| note(e, &mut todo));
            }
            ast::AttrKind::Grid(es) => es.iter().for_each(|e| note(e, &mut todo)),
            ast::AttrKind::Aligned(items) => items.iter().for_each(|(_, e)| note(e, &mut todo)),
            ast::AttrKind::Autotune(entries) => entries
                .iter()
                .for_each(|(_, vs)| vs.iter().for_each(|e| note(e, &mut todo))),
            ast::AttrKind::Unknown(_) => {}
        }
    }
    while let Some(n) = todo.pop() {
        if let Some(defs) = fns.get(n) {
            if names.insert(n) {
                for f in defs {
                    note(&f.body, &mut todo);
                }
            }
        }
    }
    names
}
