//! Inlay hints: the inferred type after the name of each `let` and `var`
//! written without one (`let x = A[i]` shows `x: f32`), and, when the
//! client asks for them (`uniformityHints` in the initialization options),
//! each local's and loop variable's uniformity level after its name and
//! type. Types and levels come from the checked kernel (first variant);
//! a kernel that does not check gets no hints.

use crate::analysis::{level_name, Analysis};
use phobos_core::ast::{Block, Item, Span, Stmt, StmtKind};
use phobos_core::hir::LocalKind;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    /// The byte offset the hint is shown at.
    pub at: usize,
    pub label: String,
    pub kind: HintKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HintKind {
    Type,
    Uniformity,
}

impl Analysis {
    /// The hints whose position lies in `range`.
    pub fn inlay_hints(&self, range: Span, uniformity: bool) -> Vec<Hint> {
        let mut out = Vec::new();
        for item in &self.file.items {
            let Item::Kernel(k) = item else { continue };
            if k.span.end < range.start || k.span.start > range.end {
                continue;
            }
            self.block_hints(&k.body, uniformity, &mut out);
        }
        out.retain(|h| range.start as usize <= h.at && h.at <= range.end as usize);
        out
    }

    fn block_hints(&self, b: &Block, uniformity: bool, out: &mut Vec<Hint>) {
        for s in &b.stmts {
            self.stmt_hints(s, uniformity, out);
        }
    }

    fn stmt_hints(&self, s: &Stmt, uniformity: bool, out: &mut Vec<Hint>) {
        match &s.kind {
            StmtKind::Let { name, ty, .. } => {
                let Some(kv) = self.kernel_at(name.span.start as usize) else {
                    return;
                };
                let Some((lid, local)) = kv.local_at(name.span.start as usize) else {
                    return;
                };
                let after_name = name.span.end as usize;
                match (&local.kind, ty) {
                    (LocalKind::Scalar(t), None) => out.push(Hint {
                        at: after_name,
                        label: format!(": {}", t.name()),
                        kind: HintKind::Type,
                    }),
                    (LocalKind::Tile { elem, shape }, _) => {
                        let dims: Vec<String> = shape.iter().map(u32::to_string).collect();
                        out.push(Hint {
                            at: after_name,
                            label: format!(": shared {}[{}]", elem.name(), dims.join(", ")),
                            kind: HintKind::Type,
                        })
                    }
                    _ => {}
                }
                if uniformity && matches!(local.kind, LocalKind::Scalar(_)) {
                    let at = ty.map_or(after_name, |(_, span)| span.end as usize);
                    out.push(Hint {
                        at,
                        label: level_name(kv.level_of_local(lid)).to_string(),
                        kind: HintKind::Uniformity,
                    });
                }
            }
            StmtKind::If { then, els, .. } => {
                self.block_hints(then, uniformity, out);
                if let Some(e) = els {
                    self.block_hints(e, uniformity, out);
                }
            }
            StmtKind::For(l) => {
                let (var, body) = (&l.var, &l.body);
                if uniformity {
                    if let Some(kv) = self.kernel_at(var.span.start as usize) {
                        if let Some((lid, _)) = kv.local_at(var.span.start as usize) {
                            out.push(Hint {
                                at: var.span.end as usize,
                                label: level_name(kv.level_of_local(lid)).to_string(),
                                kind: HintKind::Uniformity,
                            });
                        }
                    }
                }
                self.block_hints(body, uniformity, out);
            }
            StmtKind::While { body, .. } => self.block_hints(body, uniformity, out),
            StmtKind::Assign { .. }
            | StmtKind::ArrayDecl(_)
            | StmtKind::Expr(_)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return
            | StmtKind::Error => {}
        }
    }
}
