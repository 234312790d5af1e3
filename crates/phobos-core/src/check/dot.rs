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
use super::subscripts::Mem;
use crate::ast::{self, BinOp, ExprKind, ScalarTy, Span};
use crate::diag::Diagnostic;
use crate::hir::{self, LocalId, LocalKind, Memory};
use crate::mma::{self, WarpLayout, FRAG_M, FRAG_N, MAX_ACC_REGS};

const DOT_FORM: &str = "write `acc += dot(a, b)` or `acc += dot(a, trans(b))`, with `a` and `b` shared tiles copied from tensors (`var a = A[r :+ 64, k :+ 32]`)";

impl Cx<'_> {
    /// `var acc = zeros<T>[M, N]`. `None` when `init` is not `zeros`;
    /// `Some(None)` after an error (reported).
    pub fn acc_let(
        &mut self,
        name: &ast::Ident,
        mutable: bool,
        ty: Option<(ScalarTy, Span)>,
        init: &ast::Expr,
    ) -> Option<Option<hir::StmtKind>> {
        let ExprKind::Zeros {
            elem,
            elem_span,
            dims,
        } = &init.kind
        else {
            return None;
        };
        let fail = |cx: &mut Self, d: Diagnostic| {
            cx.report(d);
            cx.bind(&name.name, Binding::Poisoned);
            Some(None)
        };
        if !mutable {
            return fail(
                self,
                Diagnostic::error("P0450", "an accumulator tile is declared with `var`")
                    .primary(name.span, "declared with `let`")
                    .note(format!(
                        "`dot` adds to it: write `var {} = zeros<...>[M, N]`",
                        name.name
                    )),
            );
        }
        if let Some((_, span)) = ty {
            return fail(
                self,
                Diagnostic::error("P0450", "an accumulator tile takes no scalar type")
                    .primary(span, "the element type is in `zeros<...>`"),
            );
        }
        if *elem != ScalarTy::F32 {
            let known = mma::acc_elem_ok(*elem);
            let d = Diagnostic::error(
                "P0451",
                format!("an accumulator tile of {} is not supported", elem.name()),
            )
            .primary(*elem_span, "the accumulator's element type")
            .note(if known {
                format!("accumulate in f32 (`zeros<f32>[M, N]`): the products Phobos compiles today are {}", mma::SUPPORTED_PAIRS)
            } else {
                "an accumulator holds f32 (the element type tensor cores accumulate f16 and bf16 products in)".to_string()
            });
            return fail(self, d);
        }
        let mut shape = Vec::new();
        for d in dims {
            let x = self.index(d)?;
            match const_int(&x) {
                Some(v) if (1..=1 << 16).contains(&v) => shape.push(v as u32),
                _ => {
                    return fail(
                        self,
                        Diagnostic::error("P0450", "an accumulator tile's extents are constants from 1 to 65536")
                            .primary(d.span, "not such a constant")
                            .note("use literals, autotuned names and `ctx.warps`-style constants: the compiler lays the tile out over the warps before the launch"),
                    );
                }
            }
        }
        let [rows, cols] = shape[..] else {
            return fail(
                self,
                Diagnostic::error(
                    "P0450",
                    format!(
                        "an accumulator tile has two extents, rows and columns; found {}",
                        shape.len()
                    ),
                )
                .primary(init.span, "write `zeros<f32>[M, N]`"),
            );
        };
        if !rows.is_multiple_of(FRAG_M) || !cols.is_multiple_of(FRAG_N) {
            return fail(
                self,
                Diagnostic::error(
                    "P0452",
                    format!("an accumulator of [{rows}, {cols}] does not tile the tensor-core instruction"),
                )
                .primary(init.span, format!("{rows} rows, {cols} columns"))
                .note(format!("mma.sync's accumulator fragment is {FRAG_M} x {FRAG_N}: the rows must be a multiple of {FRAG_M} and the columns of {FRAG_N}")),
            );
        }
        let warps = self.threads / 32;
        let Some(layout) = WarpLayout::choose(rows, cols, warps) else {
            return fail(
                self,
                Diagnostic::error(
                    "P0452",
                    format!("an accumulator of [{rows}, {cols}] cannot be split over the CTA's {warps} warps"),
                )
                .primary(init.span, "no grid of warps divides this tile into whole 16 x 8 fragments")
                .note(format!("the warps form a Wm x Wn grid with Wm * Wn = {warps}; each warp owns [{rows} / Wm, {cols} / Wn], which must be a multiple of [16, 8]: change the tile or `@launch`")),
            );
        };
        let regs = layout.regs(*elem);
        if regs > MAX_ACC_REGS {
            return fail(
                self,
                Diagnostic::error(
                    "P0453",
                    format!("an accumulator of [{rows}, {cols}] needs {regs} registers per thread over {warps} warps, above the budget of {MAX_ACC_REGS}"),
                )
                .primary(init.span, format!("each of the {warps} warps owns [{}, {}]", layout.warp_rows(), layout.warp_cols()))
                .note(format!("a thread may have 255 registers, and the accumulator may take {MAX_ACC_REGS} of them so the operands fit without spilling: use a smaller tile or more threads (`@launch`)")),
            );
        }
        let kind = LocalKind::Acc {
            elem: *elem,
            rows,
            cols,
        };
        let acc = self.new_local(&name.name, name.span, true, kind);
        self.bind(&name.name, Binding::Local(acc));
        Some(Some(hir::StmtKind::AccZero { acc }))
    }

    /// `zeros<...>` inside an expression (P0450).
    pub fn zeros_in_expr(&mut self, span: Span) -> Option<hir::Expr> {
        self.report(
            Diagnostic::error(
                "P0450",
                "`zeros<...>[...]` declares an accumulator tile, and is not a value",
            )
            .primary(span, "used inside an expression")
            .note("declare it on its own: `var acc = zeros<f32>[64, 64]`"),
        );
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
        let (Some(BinOp::Add), Some(args)) = (op, dot_args) else {
            self.report(
                Diagnostic::error(
                    "P0454",
                    format!("the accumulator tile `{n}` changes only by `{n} += dot(a, b)`"),
                )
                .primary(target_span, "assigned here")
                .secondary(
                    self.locals[acc.0 as usize].span,
                    "an accumulator tile, declared here",
                )
                .note(DOT_FORM),
            );
            return None;
        };
        if args.len() != 2 {
            self.report(
                Diagnostic::error(
                    "P0204",
                    format!("`dot` takes 2 arguments, found {}", args.len()),
                )
                .primary(value.span, "write `dot(a, b)`"),
            );
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
            self.report(
                Diagnostic::error(
                    "P0456",
                    format!(
                        "no tensor-core product of {} x {} into {}",
                        ta.name(),
                        tb.name(),
                        elem.name()
                    ),
                )
                .primary(
                    value.span,
                    format!(
                        "`{}` holds {}, `{}` holds {}",
                        self.locals[a.0 as usize].name,
                        ta.name(),
                        self.locals[b.0 as usize].name,
                        tb.name()
                    ),
                )
                .note(format!(
                    "the products Phobos compiles are {}",
                    mma::SUPPORTED_PAIRS
                )),
            );
            return None;
        };
        // a: [M, K]; b: [K, N], or [N, K] under `trans`.
        let (m, ka) = (sa[0], sa[1]);
        let (kb, nb) = if b_trans {
            (sb[1], sb[0])
        } else {
            (sb[0], sb[1])
        };
        if m != rows || nb != cols || ka != kb {
            let bshape = if b_trans {
                format!("trans of [{}, {}], so [{kb}, {nb}]", sb[0], sb[1])
            } else {
                format!("[{kb}, {nb}]")
            };
            self.report(
                Diagnostic::error("P0457", "the shapes of `dot` do not match its accumulator")
                    .primary(value.span, format!("[{m}, {ka}] times {bshape}"))
                    .secondary(self.locals[acc.0 as usize].span, format!("the accumulator is [{rows}, {cols}]"))
                    .note("`acc += dot(a, b)` needs `a` of [M, K], `b` of [K, N] (or `trans(b)` with `b` of [N, K]) and `acc` of [M, N]"),
            );
            return None;
        }
        if !ka.is_multiple_of(kind.k) {
            self.report(
                Diagnostic::error("P0452", format!("a `dot` over K = {ka} does not tile the tensor-core instruction"))
                    .primary(value.span, format!("K = {ka}"))
                    .note(format!("{} products step K by {}: make the tiles' K extent a multiple of {} (the copy zero-fills past the tensor's end, so a ragged K needs no care)", ta.name(), kind.k, kind.k)),
            );
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
                _ => {}
            }
        }
        let what = if under_trans { "`trans`" } else { "`dot`" };
        self.report(
            Diagnostic::error("P0455", format!("{what} takes a shared tile of two dims"))
                .primary(e.span, "not a rank-2 shared tile")
                .note(DOT_FORM),
        );
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
        self.report(
            Diagnostic::error(
                "P0455",
                format!("`{name}` is only used as `acc += dot(a, b)`"),
            )
            .primary(span, "used inside an expression")
            .note(DOT_FORM),
        );
        None
    }

    /// An accumulator named where a value or a subscript is needed (P0458).
    pub fn acc_not_value(&mut self, id: LocalId, n: &str, span: Span) {
        self.report(
            Diagnostic::error("P0458", format!("the accumulator tile `{n}` is not element-addressable"))
                .primary(span, "used here")
                .secondary(self.locals[id.0 as usize].span, "an accumulator tile, declared here")
                .note(format!("the compiler spreads it over the warps' registers: add to it with `{n} += dot(a, b)` and store it whole, as in `C[r :+ M, c :+ N] = {n}`")),
        );
    }

    /// The accumulator that a tile store's value names, if it is one.
    pub fn value_acc(&self, value: &ast::Expr) -> Option<LocalId> {
        let ExprKind::Name(n) = &value.kind else {
            return None;
        };
        match self.lookup(n) {
            Some(Binding::Local(id))
                if matches!(self.locals[id.0 as usize].kind, LocalKind::Acc { .. }) =>
            {
                Some(*id)
            }
            _ => None,
        }
    }

    /// `C[s0 :+ M, s1 :+ N] = acc`.
    pub fn acc_store(
        &mut self,
        mem: &Mem,
        starts: Vec<hir::Expr>,
        shape: &[u32],
        op: Option<BinOp>,
        value: &ast::Expr,
        src: LocalId,
    ) -> Option<hir::StmtKind> {
        let LocalKind::Acc { elem, rows, cols } = self.locals[src.0 as usize].kind else {
            return None;
        };
        let Memory::Tensor(dst) = mem.memory else {
            self.report(
                Diagnostic::error("P0509", "an accumulator tile is stored to a tensor")
                    .primary(value.span, "the target is not a tensor"),
            );
            return None;
        };
        if op.is_some() || shape != [rows, cols] || mem.elem != elem {
            self.report(
                Diagnostic::error(
                    "P0509",
                    "the accumulator does not match the target's shape and type",
                )
                .primary(
                    value.span,
                    format!(
                        "the accumulator holds [{rows}, {cols}] {}, the target is {shape:?} {}{}",
                        elem.name(),
                        mem.elem.name(),
                        if op.is_some() {
                            ", with a compound assignment"
                        } else {
                            ""
                        }
                    ),
                ),
            );
            return None;
        }
        Some(hir::StmtKind::AccStore { dst, starts, src })
    }
}
