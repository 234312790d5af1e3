//! Shared scratch: `var s = shared<f32>[ctx.warps, 33]` declares a
//! CTA-wide tile of a constant shape that nothing is copied into. It is a
//! tile like any other from then on (point and run subscripts, element
//! stores, tile stores out of it, barriers placed by the compiler), except
//! that its elements hold nothing until the kernel writes them: the
//! simulator's initcheck reports a read of one nobody wrote.
//!
//! This file checks the declaration (P0440: a shape of constants from 1
//! up, P0441: `shared<...>` anywhere but as a `let`/`var`'s whole value)
//! and the partial fill `s[0 :+ 32, 0 :+ 32] = A[r :+ 32, c :+ 32]` of
//! any tile from a tensor box (P0442: a box of the tile at constant
//! starts that fits in it; P0509: a source of another shape or type).
//! Its size is checked with the other shared buffers in the backend's
//! shared plan (P0801).

use super::consts::const_int;
use super::cx::{Binding, Cx};
use super::subscripts::{Mem, Shape};
use crate::ast::{self, ExprKind, ScalarTy, Span};
use crate::diag::Diagnostic;
use crate::hir::{self, LocalKind, Memory};

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

    /// `t[a0 :+ L0, ...] = A[s0 :+ L0, ...]`: a CTA-wide copy of a tensor
    /// box into the box of tile `t` at the constant starts `a0, ...`.
    pub fn tile_fill(
        &mut self,
        mem: &Mem,
        at: Vec<hir::Expr>,
        shape: &[u32],
        op: Option<ast::BinOp>,
        value: &ast::Expr,
    ) -> Option<hir::StmtKind> {
        let Memory::Tile(dst) = mem.memory else {
            return None;
        };
        let fill_note = "fill part of a tile from a tensor box of the same shape: `s[0 :+ 32, 0 :+ 32] = A[r :+ 32, c :+ 32]`";
        let ExprKind::Index { base, subs } = &value.kind else {
            self.report(
                Diagnostic::error("P0509", "a box of a tile is filled from a box of a tensor")
                    .primary(value.span, "not a tensor box")
                    .note(fill_note),
            );
            return None;
        };
        if let Some(bop) = op {
            self.report(
                Diagnostic::error(
                    "P0509",
                    format!("a tile box is filled with `=`, not `{}=`", bop.symbol()),
                )
                .primary(value.span, "a copy, not arithmetic")
                .note(fill_note),
            );
            return None;
        }
        let mut starts = Vec::new();
        for (axis, (e, len)) in at.iter().zip(shape).enumerate() {
            let extent = mem.dims[axis].unwrap_or(0);
            match const_int(e) {
                Some(a) if a >= 0 && a + i128::from(*len) <= i128::from(extent) => {
                    starts.push(a as u32)
                }
                Some(a) => {
                    self.report(
                        Diagnostic::error(
                            "P0442",
                            format!(
                                "the box {a} :+ {len} does not fit axis {axis} of `{}`, which has {extent}",
                                mem.name
                            ),
                        )
                        .primary(e.span, "outside the tile"),
                    );
                    return None;
                }
                None => {
                    self.report(
                        Diagnostic::error("P0442", "where a tile box starts must be a compile-time constant")
                            .primary(e.span, "known only at run time")
                            .note("the box's place in the tile is fixed; the tensor box may start anywhere"),
                    );
                    return None;
                }
            }
        }
        let src = self.memory(base)?;
        let Memory::Tensor(param) = src.memory else {
            self.report(
                Diagnostic::error("P0509", "a box of a tile is filled from a box of a tensor")
                    .primary(base.span, "a tile, not a tensor")
                    .note(fill_note),
            );
            return None;
        };
        if subs.len() != src.dims.len() {
            self.report(
                Diagnostic::error(
                    "P0500",
                    format!(
                        "`{}` has {} dims, found {} subscripts",
                        src.name,
                        src.dims.len(),
                        subs.len()
                    ),
                )
                .primary(
                    value.span,
                    format!("expected {} subscripts", src.dims.len()),
                ),
            );
            return None;
        }
        let Some(Shape::Tile {
            starts: src_starts,
            shape: src_shape,
        }) = self.tile_shape(&src, subs)
        else {
            return None;
        };
        if src_shape != shape || src.elem != mem.elem {
            self.report(
                Diagnostic::error("P0509", "the tensor box does not match the tile box")
                    .primary(
                        value.span,
                        format!(
                            "{:?} {} into {:?} {}",
                            src_shape,
                            src.elem.name(),
                            shape,
                            mem.elem.name()
                        ),
                    )
                    .note(fill_note),
            );
            return None;
        }
        Some(hir::StmtKind::TileFill {
            dst,
            at: starts,
            src: param,
            starts: src_starts,
            shape: shape.to_vec(),
        })
    }
}
