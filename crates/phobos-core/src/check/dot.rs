//! Accumulator tiles and `dot`: `var acc = zeros<f32>[M, N]` declares a
//! CTA-wide tile held in registers, `acc += dot(a, b)` and
//! `acc += dot(a, trans(b))` add the product of two shared tiles to it, and
//! `C[r :+ M, c :+ N] = acc` stores it, masked at the tensor's bounds.
//!
//! This file checks their forms, shapes and types against the rules of
//! `crate::mma` (P0450-P0458); uniformity (P0702/P0703) is
//! `uniformity.rs`'s, and what a target lacks (bf16 below sm_80, P0811)
//! the backend's `targets.rs`. An accumulator is not element-addressable:
//! the compiler owns its layout over warps and lanes.

use super::consts::const_int;
use super::cx::{Binding, Cx};
use super::error::DotError;
use super::stmts::LetDecl;
use super::subscripts::Mem;
use crate::ast::{self, BinOp, ExprKind, ScalarTy, Span};
use crate::hir::{self, LocalId, LocalKind, Memory};
use crate::mma::{self, WarpLayout, FRAG_M, FRAG_N, MAX_ACC_REGS};

impl Cx<'_> {
    /// `var acc = zeros<T>[M, N]`. `None` when `init` is not `zeros`;
    /// `Some(None)` after an error (reported).
    pub fn acc_let(&mut self, l: LetDecl) -> Option<Option<hir::StmtKind>> {
        let ExprKind::Zeros {
            elem,
            elem_span,
            dims,
        } = &l.init.kind
        else {
            return None;
        };
        let fail = |cx: &mut Self, e: DotError| {
            cx.report(e);
            cx.bind(&l.name.name, Binding::Poisoned);
            Some(None)
        };
        if !l.mutable {
            return fail(
                self,
                DotError::AccWithLet {
                    name: l.name.name.clone(),
                    span: l.name.span,
                },
            );
        }
        if let Some((_, span)) = l.ty {
            return fail(self, DotError::AccTyped { span });
        }
        if !mma::acc_elem_ok(*elem) {
            return fail(
                self,
                DotError::AccElem {
                    elem: *elem,
                    span: *elem_span,
                },
            );
        }
        let mut shape = Vec::new();
        for d in dims {
            let x = self.index(d)?;
            match const_int(&x) {
                Some(v) if (1..=1 << 16).contains(&v) => shape.push(v as u32),
                _ => {
                    return fail(self, DotError::AccExtent { span: d.span });
                }
            }
        }
        let [rows, cols] = shape[..] else {
            return fail(
                self,
                DotError::AccRank {
                    found: shape.len(),
                    span: l.init.span,
                },
            );
        };
        if !rows.is_multiple_of(FRAG_M) || !cols.is_multiple_of(FRAG_N) {
            return fail(
                self,
                DotError::AccNotFragments {
                    rows,
                    cols,
                    span: l.init.span,
                },
            );
        }
        let warps = self.threads / 32;
        let Some(layout) = WarpLayout::choose(rows, cols, warps) else {
            return fail(
                self,
                DotError::AccWarpSplit {
                    rows,
                    cols,
                    warps,
                    span: l.init.span,
                },
            );
        };
        let regs = layout.regs(*elem);
        if regs > MAX_ACC_REGS {
            return fail(
                self,
                DotError::AccTooManyRegs {
                    rows,
                    cols,
                    regs,
                    warps,
                    warp_rows: layout.warp_rows(),
                    warp_cols: layout.warp_cols(),
                    span: l.init.span,
                },
            );
        }
        let kind = LocalKind::Acc {
            elem: *elem,
            rows,
            cols,
        };
        let acc = self.new_local(&l.name.name, l.name.span, true, kind);
        self.bind(&l.name.name, Binding::Local(acc));
        Some(Some(hir::StmtKind::AccZero { acc }))
    }

    /// `zeros<...>` inside an expression (P0450).
    pub fn zeros_in_expr(&mut self, span: Span) -> Option<hir::Expr> {
        self.report(DotError::ZerosInExpr { span });
        None
    }

    /// An assignment to the accumulator `acc` (named `n`): only
    /// `acc += dot(...)`.
    pub fn acc_assign(
        &mut self,
        acc: LocalId,
        n: &str,
        target_span: Span,
        op: Option<BinOp>,
        value: &ast::Expr,
    ) -> Option<hir::StmtKind> {
        let dot_args = match &value.kind {
            ExprKind::Call { callee, args } if callee.name == "dot" => Some(args),
            _ => None,
        };
        if dot_args.is_none() {
            // An epilogue; `acc op= e` is `acc = acc op e`.
            let whole = match op {
                None => value.clone(),
                Some(op) => ast::Expr {
                    kind: ExprKind::Binary(
                        op,
                        Box::new(ast::Expr {
                            kind: ExprKind::Name(n.to_string()),
                            span: target_span,
                        }),
                        Box::new(value.clone()),
                    ),
                    span: target_span.to(value.span),
                },
            };
            return self.acc_epilogue(acc, n, &whole);
        }
        let (Some(BinOp::Add), Some(args)) = (op, dot_args) else {
            self.report(DotError::DotNotAdded {
                name: n.to_string(),
                span: target_span,
                decl: self.locals[acc.0 as usize].span,
            });
            return None;
        };
        if args.len() != 2 {
            self.report(DotError::DotArity {
                found: args.len(),
                span: value.span,
            });
            return None;
        }
        let a = self.dot_operand(&args[0], false)?;
        let (b, b_trans) = match &args[1].kind {
            ExprKind::Call { callee, args: t } if callee.name == "trans" && t.len() == 1 => {
                (self.dot_operand(&t[0], true)?, true)
            }
            _ => (self.dot_operand(&args[1], false)?, false),
        };
        let LocalKind::Acc { elem, rows, cols } = self.locals[acc.0 as usize].kind else {
            return None;
        };
        let (ta, sa) = self.tile_of(a)?;
        let (tb, sb) = self.tile_of(b)?;
        let Some(kind) = mma::dot_kind(ta, elem).filter(|_| ta == tb) else {
            self.report(DotError::DotTypes {
                a: self.locals[a.0 as usize].name.clone(),
                a_elem: ta,
                b: self.locals[b.0 as usize].name.clone(),
                b_elem: tb,
                acc: elem,
                span: value.span,
            });
            return None;
        };
        if kind.b_trans_only && !b_trans {
            self.report(DotError::DotNotTrans {
                a_elem: ta,
                b_elem: tb,
                span: args[1].span,
            });
            return None;
        }
        // a: [M, K]; b: [K, N], or [N, K] under `trans`.
        let (m, ka) = (sa[0], sa[1]);
        let (kb, nb) = if b_trans {
            (sb[1], sb[0])
        } else {
            (sb[0], sb[1])
        };
        if m != rows || nb != cols || ka != kb {
            self.report(DotError::DotShapes {
                a: [m, ka],
                b: sb,
                b_trans,
                rows,
                cols,
                span: value.span,
                decl: self.locals[acc.0 as usize].span,
            });
            return None;
        }
        if !ka.is_multiple_of(kind.k) {
            self.report(DotError::DotK {
                elem: ta,
                k: ka,
                step: kind.k,
                span: value.span,
            });
            return None;
        }
        Some(hir::StmtKind::Dot { acc, a, b, b_trans })
    }

    /// A `dot` operand: the name of a rank-2 shared tile.
    fn dot_operand(&mut self, e: &ast::Expr, under_trans: bool) -> Option<LocalId> {
        if let ExprKind::Name(n) = &e.kind {
            match self.lookup(n).cloned() {
                Some(Binding::Local(id))
                    if matches!(
                        &self.locals[id.0 as usize].kind,
                        LocalKind::Tile { shape, .. } if shape.len() == 2
                    ) =>
                {
                    return Some(id);
                }
                Some(Binding::Poisoned) => return None,
                // A misspelt tile is an unknown name, not a wrong operand.
                None => {
                    self.unknown_name(n, e.span);
                    return None;
                }
                _ => {}
            }
        }
        self.report(DotError::DotOperand {
            under_trans,
            span: e.span,
        });
        None
    }

    fn tile_of(&self, id: LocalId) -> Option<(ScalarTy, [u32; 2])> {
        match &self.locals[id.0 as usize].kind {
            LocalKind::Tile { elem, shape } if shape.len() == 2 => {
                Some((*elem, [shape[0], shape[1]]))
            }
            _ => None,
        }
    }

    /// `dot(...)` or `trans(...)` anywhere but `acc += dot(...)` (P0455).
    pub fn dot_in_expr(&mut self, name: &str, span: Span) -> Option<hir::Expr> {
        self.report(DotError::DotInExpr {
            name: name.to_string(),
            span,
        });
        None
    }

    /// An accumulator named where a value or a subscript is needed (P0458).
    pub fn acc_not_value(&mut self, id: LocalId, n: &str, span: Span) {
        self.report(DotError::AccNotValue {
            name: n.to_string(),
            span,
            decl: self.locals[id.0 as usize].span,
        });
    }

    /// The accumulator that a tile store's value names, if it is one, and
    /// the conversion written around it (`f16(acc)`).
    pub fn value_acc(&self, value: &ast::Expr) -> Option<(LocalId, Option<ScalarTy>)> {
        let (n, to) = match &value.kind {
            ExprKind::Name(n) => (n, None),
            ExprKind::Call { callee, args } if args.len() == 1 => {
                let to = ScalarTy::from_name(&callee.name)?;
                let ExprKind::Name(n) = &args[0].kind else {
                    return None;
                };
                (n, Some(to))
            }
            _ => return None,
        };
        let acc = match self.lookup(n) {
            Some(Binding::Local(id))
                if matches!(self.locals[id.0 as usize].kind, LocalKind::Acc { .. }) =>
            {
                *id
            }
            _ => return None,
        };
        Some((acc, to))
    }

    /// `C[s0 :+ M, s1 :+ N] = acc` into a tensor, or `s[a0 :+ M, a1 :+ N]
    /// = acc` into the box of the rank-2 shared tile `s` at the constant
    /// starts `a0, a1` (P0442); or `= f16(acc)` (a float accumulator stored
    /// as f16 or bf16, each element rounded to nearest even). The target
    /// has the accumulator's shape and element type (P0509 for a tensor,
    /// P0460 for a tile).
    pub fn acc_store(
        &mut self,
        mem: &Mem,
        starts: Vec<hir::Expr>,
        shape: &[u32],
        op: Option<BinOp>,
        value: &ast::Expr,
        (src, to): (LocalId, Option<ScalarTy>),
    ) -> Option<hir::StmtKind> {
        let (elem, rows, cols) = self.stored_acc(src, to, value.span)?;
        let fits = op.is_none() && shape == [rows, cols] && mem.elem == elem;
        match mem.memory {
            Memory::Tensor(dst) if fits => Some(hir::StmtKind::AccStore { dst, starts, src }),
            Memory::Tile(dst) if fits => {
                let [a0, a1] = self.box_at(mem, &starts, shape)?[..] else {
                    return None;
                };
                Some(hir::StmtKind::AccToTile {
                    dst,
                    at: [a0, a1],
                    src,
                })
            }
            Memory::Tensor(_) => {
                self.report(DotError::AccStoreMismatch {
                    rows,
                    cols,
                    elem,
                    shape: shape.to_vec(),
                    target: mem.elem,
                    compound: op.is_some(),
                    span: value.span,
                });
                None
            }
            Memory::Tile(dst) => {
                self.report(DotError::AccTileMismatch {
                    rows,
                    cols,
                    elem,
                    tile: mem.name.clone(),
                    shape: shape.to_vec(),
                    target: mem.elem,
                    compound: op.is_some(),
                    span: value.span,
                    decl: self.locals[dst.0 as usize].span,
                });
                None
            }
            Memory::Array(_) => {
                self.report(DotError::AccStoreNotTensor { span: value.span });
                None
            }
        }
    }
}

impl Cx<'_> {
    /// The element type an accumulator is stored as (its own, or the
    /// conversion `to` written around it) and its shape; `None` after
    /// reporting a conversion that is not offered (P0509).
    fn stored_acc(
        &mut self,
        src: LocalId,
        to: Option<ScalarTy>,
        span: Span,
    ) -> Option<(ScalarTy, u32, u32)> {
        let LocalKind::Acc { elem, rows, cols } = self.locals[src.0 as usize].kind else {
            return None;
        };
        if let Some(t) = to.filter(|&t| t != elem && !mma::acc_converts(elem, t)) {
            self.report(DotError::AccStoreConvert {
                from: elem,
                to: t,
                span,
            });
            return None;
        }
        Some((to.unwrap_or(elem), rows, cols))
    }

    /// `acc = e`: `e` is elementwise over the accumulator (its name stands
    /// for each element), shared tiles of its shape or of one row or
    /// column of it (broadcast), and values the same in every thread.
    fn acc_epilogue(&mut self, acc: LocalId, n: &str, value: &ast::Expr) -> Option<hir::StmtKind> {
        let LocalKind::Acc { elem, rows, cols } = self.locals[acc.0 as usize].kind else {
            return None;
        };
        let decl = self.locals[acc.0 as usize].span;
        let rewritten = self.epilogue_ast(value, [rows, cols])?;
        let elem_local = self.new_local(n, decl, false, LocalKind::Scalar(elem));
        let row = self.new_local(ROW, decl, false, LocalKind::Scalar(ScalarTy::I32));
        let col = self.new_local(COL, decl, false, LocalKind::Scalar(ScalarTy::I32));
        self.push_scope();
        self.bind(n, Binding::Local(elem_local));
        self.bind(ROW, Binding::Local(row));
        self.bind(COL, Binding::Local(col));
        let x = self.expr(&rewritten, Some(elem));
        self.pop_scope();
        let x = x?;
        if x.ty != hir::Ty::Scalar(elem) {
            self.report(DotError::EpilogueType {
                name: n.to_string(),
                elem,
                found: x.ty,
                span: value.span,
            });
            return None;
        }
        let mut bad = None;
        x.walk(&mut |e| {
            if bad.is_none()
                && matches!(
                    e.kind,
                    hir::ExprKind::Collective { .. } | hir::ExprKind::Shuffle { .. }
                )
            {
                bad = Some(e.span);
            }
        });
        if let Some(span) = bad {
            self.report(DotError::EpilogueCollective {
                name: n.to_string(),
                span,
            });
            return None;
        }
        Some(hir::StmtKind::AccMap {
            acc,
            elem: elem_local,
            row,
            col,
            value: x,
        })
    }

    /// `e` with each rank-2 shared tile named whole replaced by its element
    /// at the accumulator's `[row, col]` (a broadcast for one row or
    /// column).
    fn epilogue_ast(&mut self, e: &ast::Expr, shape: [u32; 2]) -> Option<ast::Expr> {
        let kind = match &e.kind {
            ExprKind::Name(t) => {
                let tile = match self.lookup(t) {
                    Some(Binding::Local(id)) => match &self.locals[id.0 as usize].kind {
                        LocalKind::Tile { shape: s, .. } => Some(s.clone()),
                        _ => None,
                    },
                    _ => None,
                };
                match tile {
                    None => e.kind.clone(),
                    Some(s) => {
                        let sub = |fits: bool, name: &str| {
                            let kind = if fits {
                                ExprKind::Name(name.to_string())
                            } else {
                                ExprKind::Int(0)
                            };
                            ast::Subscript::Point(ast::Expr { kind, span: e.span })
                        };
                        match s[..] {
                            [r, c] if (r == shape[0] || r == 1) && (c == shape[1] || c == 1) => {
                                ExprKind::Index {
                                    base: Box::new(e.clone()),
                                    subs: vec![sub(r == shape[0], ROW), sub(c == shape[1], COL)]
                                        .into(),
                                }
                            }
                            _ => return self.epilogue_shape(e, t, &s, shape),
                        }
                    }
                }
            }
            ExprKind::Unary(op, x) => ExprKind::Unary(*op, Box::new(self.epilogue_ast(x, shape)?)),
            ExprKind::Binary(op, a, b) => ExprKind::Binary(
                *op,
                Box::new(self.epilogue_ast(a, shape)?),
                Box::new(self.epilogue_ast(b, shape)?),
            ),
            ExprKind::Call { callee, args } => ExprKind::Call {
                callee: callee.clone(),
                args: args
                    .iter()
                    .map(|a| self.epilogue_ast(a, shape))
                    .collect::<Option<Box<[_]>>>()?,
            },
            other => other.clone(),
        };
        Some(ast::Expr { kind, span: e.span })
    }

    fn epilogue_shape(
        &mut self,
        e: &ast::Expr,
        t: &str,
        s: &[u32],
        shape: [u32; 2],
    ) -> Option<ast::Expr> {
        self.report(DotError::EpilogueTileShape {
            name: t.to_string(),
            tile: s.to_vec(),
            shape,
            span: e.span,
        });
        None
    }
}

/// The names an epilogue binds for an element's row and column (not
/// identifiers a user can write).
const ROW: &str = "%row";
const COL: &str = "%col";
