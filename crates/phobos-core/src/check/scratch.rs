//! Shared scratch: `var s = shared<f32>[ctx.warps, 33]` declares a
//! CTA-wide tile of a constant shape that nothing is copied into. It is a
//! tile like any other from then on (point and run subscripts, element
//! stores, tile stores out of it, barriers placed by the compiler), except
//! that its elements hold nothing until the kernel writes them: the
//! simulator's initcheck reports a read of one nobody wrote.
//!
//! This file checks the declaration (P0440: a shape of constants from 1
//! up, P0441: `shared<...>` anywhere but as a `let`/`var`'s whole value).
//! Its size is checked with the other shared buffers in the backend's
//! shared plan (P0801).

use super::consts::const_int;
use super::cx::{Binding, Cx};
use crate::ast::{self, ExprKind, ScalarTy, Span};
use crate::diag::Diagnostic;
use crate::hir::{self, LocalKind};

/// The largest extent of one axis of a scratch tile (the shared plan
/// bounds the whole).
const MAX_AXIS: i128 = 1 << 20;

impl Cx<'_> {
    /// `let`/`var name = shared<T>[dims]`: declares the tile `name`.
    /// `None` when `init` is not a scratch declaration; `Some(false)`
    /// when it is one with an error (reported).
    pub fn scratch_let(
        &mut self,
        name: &ast::Ident,
        mutable: bool,
        ty: Option<(ScalarTy, Span)>,
        init: &ast::Expr,
    ) -> Option<bool> {
        let ExprKind::Shared { elem, dims, .. } = &init.kind else {
            return None;
        };
        if let Some((_, span)) = ty {
            self.report(
                Diagnostic::error("P0401", "a shared scratch tile takes no scalar type")
                    .primary(span, "the element type is in `shared<...>`"),
            );
            return Some(false);
        }
        let mut shape = Vec::new();
        for d in dims {
            let Some(x) = self.index(d) else {
                return Some(false);
            };
            match const_int(&x) {
                Some(v) if (1..=MAX_AXIS).contains(&v) => shape.push(v as u32),
                Some(v) => {
                    self.report(
                        Diagnostic::error(
                            "P0440",
                            format!(
                                "a scratch tile's extent must be from 1 to {MAX_AXIS}, found {v}"
                            ),
                        )
                        .primary(d.span, "this extent"),
                    );
                    return Some(false);
                }
                None => {
                    self.report(
                        Diagnostic::error("P0440", "a scratch tile's extent must be a compile-time constant")
                            .primary(d.span, "known only at run time")
                            .note("use constants, autotuned names and `ctx.threads`, `ctx.warps`, `ctx.lanes`: the shared plan lays out every buffer before the launch"),
                    );
                    return Some(false);
                }
            }
        }
        if shape.is_empty() {
            self.report(
                Diagnostic::error("P0440", "a scratch tile needs at least one extent")
                    .primary(init.span, "write its shape, as in `shared<f32>[32, 33]`"),
            );
            return Some(false);
        }
        let kind = LocalKind::Tile { elem: *elem, shape };
        let local = self.new_local(&name.name, name.span, mutable, kind);
        self.bind(&name.name, Binding::Local(local));
        Some(true)
    }

    /// `shared<...>` met inside an expression (P0441).
    pub fn scratch_in_expr(&mut self, span: Span) -> Option<hir::Expr> {
        self.report(
            Diagnostic::error("P0441", "`shared<...>[...]` declares a scratch tile, and is not a value")
                .primary(span, "used inside an expression")
                .note("declare it on its own: `var s = shared<f32>[32, 33]`, then read and write `s[i, j]`"),
        );
        None
    }
}
