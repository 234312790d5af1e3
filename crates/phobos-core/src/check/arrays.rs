//! Register arrays: `var acc: f32[4, 4] = 0.0` declares a per-thread array
//! of constant shape, `acc[i, j]` reads and writes one element. This file
//! checks the declaration (a `var`, constant dims, at most
//! `hir::MAX_ARRAY_ELEMS` elements, a scalar initial value of the element
//! type) and an array's subscripts (point subscripts only, constant ones in
//! range). Where the array lives — registers or local memory — is the
//! backend's decision (`backend/lower/arrays.rs`), not the checker's.

use super::consts::const_int;
use super::cx::{Binding, Cx};
use super::error::ArrayError;
use super::subscripts::{Mem, Shape};
use crate::ast::{self, ScalarTy, Span, Subscript};
use crate::hir::{self, LocalKind, Ty, MAX_ARRAY_ELEMS};

impl Cx<'_> {
    /// `var name: elem[d0, d1, ...] = init`.
    pub fn array_decl(&mut self, a: &ast::ArrayDecl) -> Option<hir::StmtKind> {
        let (mutable, name, elem, init) = (a.mutable, &a.name, a.elem, &a.init);
        let dims = self.array_dims(name, &a.shape, a.shape_span);
        let value = self.expr(init, Some(elem.0));
        if !mutable {
            self.report(ArrayError::ArrayLet {
                name: name.name.clone(),
                elem: elem.0,
                span: name.span,
            });
        }
        let value = match value {
            Some(v) if v.ty == Ty::Scalar(elem.0) => Some(v),
            Some(v) => {
                self.report(ArrayError::ArrayInitType {
                    name: name.name.clone(),
                    elem: elem.0,
                    found: v.ty,
                    span: init.span,
                    elem_span: elem.1,
                });
                None
            }
            None => None,
        };
        let (Some(shape), Some(init), true) = (dims, value, mutable) else {
            self.bind(&name.name, Binding::Poisoned);
            return None;
        };
        let kind = LocalKind::Array {
            elem: elem.0,
            shape,
        };
        let local = self.new_local(&name.name, name.span, true, kind);
        self.bind(&name.name, Binding::Local(local));
        Some(hir::StmtKind::Let { local, init })
    }

    /// The dims of an array: positive constants whose product is at most
    /// `MAX_ARRAY_ELEMS` (P0416).
    fn array_dims(
        &mut self,
        name: &ast::Ident,
        shape: &[ast::Expr],
        shape_span: Span,
    ) -> Option<Vec<u32>> {
        if shape.is_empty() {
            self.report(ArrayError::ArrayNoDims { span: shape_span });
            return None;
        }
        let mut dims = Vec::new();
        for d in shape {
            let x = self.expr(d, Some(ScalarTy::I32))?;
            match const_int(&x) {
                Some(v) if (1..=i128::from(MAX_ARRAY_ELEMS)).contains(&v) => dims.push(v as u32),
                Some(v) => {
                    self.report(ArrayError::ArrayDimRange {
                        value: v,
                        span: d.span,
                    });
                    return None;
                }
                None => {
                    self.report(ArrayError::ArrayDimNotConstant {
                        text: self.text(d.span).to_string(),
                        span: d.span,
                    });
                    return None;
                }
            }
        }
        let elems: u64 = dims.iter().map(|&d| u64::from(d)).product();
        if elems > MAX_ARRAY_ELEMS {
            self.report(ArrayError::ArrayTooLarge {
                name: name.name.clone(),
                elems,
                span: shape_span,
            });
            return None;
        }
        Some(dims)
    }

    /// The subscripts of a register array: one index per dim, each an
    /// `i32`; a constant index must lie inside its dim (P0417). Spans and
    /// `:` are P0418.
    pub fn array_shape(&mut self, mem: &Mem, subs: &[Subscript]) -> Option<Shape> {
        let mut index = Vec::new();
        let mut ok = true;
        for (axis, s) in subs.iter().enumerate() {
            let e = match s {
                Subscript::Point(e) => e,
                Subscript::Span { span, .. } | Subscript::Full(span) => {
                    self.report(ArrayError::ArraySpan {
                        name: mem.name.clone(),
                        span: *span,
                    });
                    ok = false;
                    continue;
                }
            };
            let Some(x) = self.index(e) else {
                ok = false;
                continue;
            };
            let dim = mem.dims.get(axis).copied().flatten().unwrap_or(0);
            if let Some(v) = const_int(&x).filter(|&v| v < 0 || v >= i128::from(dim)) {
                self.report(ArrayError::ArrayIndexRange {
                    index: v,
                    axis,
                    name: mem.name.clone(),
                    dim,
                    span: e.span,
                });
                ok = false;
                continue;
            }
            index.push(x);
        }
        ok.then_some(Shape::Point(index))
    }
}

/// `Mem` of a register array local.
pub(crate) fn array_mem(id: hir::LocalId, elem: ScalarTy, shape: &[u32], name: &str) -> Mem {
    Mem {
        memory: hir::Memory::Array(id),
        elem,
        dims: shape.iter().map(|&s| Some(i64::from(s))).collect(),
        name: name.to_string(),
    }
}
