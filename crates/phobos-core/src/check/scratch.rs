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
use super::error::ScratchError;
use super::stmts::LetDecl;
use super::subscripts::{Mem, Shape};
use crate::ast::{self, ExprKind, Span};
use crate::hir::{self, LocalKind, Memory};

/// The largest extent of one axis of a scratch tile (the shared plan
/// bounds the whole).
pub(crate) const MAX_AXIS: i128 = 1 << 20;

impl Cx<'_> {
    /// `let`/`var name = shared<T>[dims]`: declares the tile `name`.
    /// `None` when `init` is not a scratch declaration; `Some(false)`
    /// when it is one with an error (reported).
    pub fn scratch_let(&mut self, l: LetDecl) -> Option<bool> {
        let ExprKind::Shared { elem, dims, .. } = &l.init.kind else {
            return None;
        };
        if let Some((_, span)) = l.ty {
            self.report(ScratchError::ScratchTyped { span });
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
                    self.report(ScratchError::ScratchExtentRange {
                        value: v,
                        span: d.span,
                    });
                    return Some(false);
                }
                None => {
                    self.report(ScratchError::ScratchExtentNotConstant { span: d.span });
                    return Some(false);
                }
            }
        }
        if shape.is_empty() {
            self.report(ScratchError::ScratchNoExtent { span: l.init.span });
            return Some(false);
        }
        let kind = LocalKind::Tile { elem: *elem, shape };
        let local = self.new_local(&l.name.name, l.name.span, l.mutable, kind);
        self.bind(&l.name.name, Binding::Local(local));
        Some(true)
    }

    /// `shared<...>` met inside an expression (P0441).
    pub fn scratch_in_expr(&mut self, span: Span) -> Option<hir::Expr> {
        self.report(ScratchError::ScratchInExpr { span });
        None
    }

    /// Where the box `at :+ shape` of tile `mem` starts: constants, with the
    /// box inside the tile (P0442). Shared by fills and accumulator stores.
    pub fn box_at(&mut self, mem: &Mem, at: &[hir::Expr], shape: &[u32]) -> Option<Vec<u32>> {
        let mut starts = Vec::new();
        for (axis, (e, len)) in at.iter().zip(shape).enumerate() {
            let extent = mem.dims[axis].unwrap_or(0);
            match const_int(e) {
                Some(a) if a >= 0 && a + i128::from(*len) <= i128::from(extent) => {
                    starts.push(a as u32)
                }
                Some(a) => {
                    self.report(ScratchError::FillOutside {
                        start: a,
                        len: *len,
                        axis,
                        name: mem.name.clone(),
                        extent,
                        span: e.span,
                    });
                    return None;
                }
                None => {
                    self.report(ScratchError::FillStartNotConstant { span: e.span });
                    return None;
                }
            }
        }
        Some(starts)
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
        let ExprKind::Index { base, subs } = &value.kind else {
            self.report(ScratchError::FillNotBox { span: value.span });
            return None;
        };
        if let Some(bop) = op {
            self.report(ScratchError::FillCompound {
                op: bop.symbol(),
                span: value.span,
            });
            return None;
        }
        let starts = self.box_at(mem, &at, shape)?;
        let src = self.memory(base)?;
        let Memory::Tensor(param) = src.memory else {
            self.report(ScratchError::FillFromTile { span: base.span });
            return None;
        };
        self.subscript_count(&src, subs, value.span)?;
        let Some(Shape::Tile {
            starts: src_starts,
            shape: src_shape,
        }) = self.tile_shape(&src, subs)
        else {
            return None;
        };
        if src_shape != shape || src.elem != mem.elem {
            self.report(ScratchError::FillMismatch {
                from: (src_shape.clone(), src.elem),
                into: (shape.to_vec(), mem.elem),
                span: value.span,
            });
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
