//! Register arrays in lowering: where each array lives, and the full
//! unrolling that lets it live in registers.
//!
//! An array lives in registers — one IR var per element, so one PTX
//! register each — when every access to it has indices that fold to
//! constants. To make that happen for loops over an array, a `for` loop
//! with constant bounds (at most [`MAX_FULL_UNROLL`] trips, no `break`,
//! `continue` or `return` in it) whose body indexes a register array with
//! a non-constant index is unrolled completely here: its body is lowered
//! once per trip with the loop variable replaced by that trip's constant.
//! Any access whose index still does not fold puts its array in local
//! memory (`Mem::Local`, `ld.local`/`st.local`): `lower` then lowers the
//! kernel again with that array placed there (see `lower::lower`), so the
//! decision is made per array, once, from what the code actually does.
//! `Func::array_homes` records each array's home and, for local memory,
//! the index that forced it (`phobos report` prints it).

use super::Lower;
use crate::ast::{Span, UnOp};
use crate::backend::ir::{
    ArrayHome, ArrayId, ExprId, ExprKind, LocalArray, Mem, Shape, StmtId, StmtKind, Var, VarId,
};
use crate::consteval;
use crate::hir::{self, ConstVal, LocalId, Ty};

/// The most trips of a loop unrolled completely for a register array.
pub(crate) const MAX_FULL_UNROLL: i128 = 64;
/// The most loop bodies all complete unrolls of a kernel may lower
/// (nested loops multiply): beyond it, arrays go to local memory.
pub(crate) const FULL_UNROLL_BUDGET: u64 = 4096;

/// Where lowering keeps one array.
#[derive(Clone, Debug)]
pub(crate) enum Home {
    /// One var per element, row-major.
    Regs {
        vars: Vec<VarId>,
        shape: Vec<u32>,
    },
    Local(ArrayId),
}

impl Lower<'_> {
    /// Give each register array of the kernel its home: local memory for
    /// those in `in_local` (with the index that put them there), registers
    /// for the rest.
    pub(super) fn place_arrays(&mut self, in_local: &std::collections::BTreeMap<LocalId, Span>) {
        for (i, local) in self.k.locals.iter().enumerate() {
            let hir::LocalKind::Array { elem, shape } = &local.kind else {
                continue;
            };
            let id = LocalId(i as u32);
            let elems: u32 = shape.iter().product();
            let dynamic_index = in_local.get(&id).copied();
            let home = match dynamic_index {
                Some(_) => Home::Local(self.f.arrays.push(LocalArray {
                    name: local.name.clone(),
                    elem: *elem,
                    shape: shape.clone(),
                    span: local.span,
                })),
                None => Home::Regs {
                    vars: (0..elems)
                        .map(|e| {
                            self.f.vars.push(Var {
                                name: format!("{}{e}", local.name),
                                ty: *elem,
                            })
                        })
                        .collect(),
                    shape: shape.clone(),
                },
            };
            self.f.array_homes.push(ArrayHome {
                name: local.name.clone(),
                span: local.span,
                elem: *elem,
                elems,
                dynamic_index,
            });
            self.arrays.insert(id, home);
        }
    }

    /// `var acc: T[...] = init`: every element takes `init`, evaluated once.
    pub(super) fn array_let(
        &mut self,
        array: LocalId,
        init: &hir::Expr,
        span: Span,
    ) -> Vec<StmtId> {
        let mut out = Vec::new();
        let value = self.expr(init);
        let ty = init.ty;
        // A constant is repeated; anything else is computed once into a var.
        let (value, tmp) = if matches!(self.f.exprs[value].kind, ExprKind::Const(_)) {
            (value, None)
        } else {
            let t = self.f.scalar_ty(value);
            let v = self.f.vars.push(Var {
                name: "init".to_string(),
                ty: t,
            });
            out.push(self.push_stmt(StmtKind::Set(v, value), span));
            (value, Some(v))
        };
        let elems = self.array_elems(array);
        for e in 0..elems {
            let x = match tmp {
                Some(v) => self.push_expr(ExprKind::Var(v), ty, span),
                None if e == 0 => value,
                None => {
                    let kind = self.f.exprs[value].kind.clone();
                    self.push_expr(kind, ty, span)
                }
            };
            out.push(self.array_set(array, e, x, span));
        }
        out
    }

    fn array_elems(&self, array: LocalId) -> u32 {
        match &self.arrays[&array] {
            Home::Regs { vars, .. } => vars.len() as u32,
            Home::Local(a) => self.f.arrays[*a].shape.iter().product(),
        }
    }

    /// Write element `e` (row-major) of an array.
    fn array_set(&mut self, array: LocalId, e: u32, value: ExprId, span: Span) -> StmtId {
        match self.arrays[&array].clone() {
            Home::Regs { vars, .. } => self.push_stmt(StmtKind::Set(vars[e as usize], value), span),
            Home::Local(a) => {
                let shape = self.f.arrays[a].shape.clone();
                let mut rest = e;
                let mut index = vec![0; shape.len()];
                for (i, d) in shape.iter().enumerate().rev() {
                    index[i] = rest % d;
                    rest /= d;
                }
                let index = index
                    .into_iter()
                    .map(|c| self.int_const(i128::from(c), crate::ast::ScalarTy::I32, span))
                    .collect();
                let acc = self.local_access(a, index, true, span);
                self.push_stmt(StmtKind::Store(acc, value), span)
            }
        }
    }

    fn local_access(
        &mut self,
        a: ArrayId,
        index: Vec<ExprId>,
        store: bool,
        span: Span,
    ) -> crate::backend::ir::AccessId {
        let elem = self.f.arrays[a].elem;
        self.f.accesses.push(crate::backend::ir::Access {
            mem: Mem::Local(a),
            elem,
            index,
            shape: Shape::Point,
            store,
            span,
        })
    }

    /// The indices of an array access, lowered with `let`s of constant
    /// value folded; for an array in registers, the element they pick, or
    /// `None` (recorded, so the array goes to local memory) when one is
    /// not a constant.
    fn array_index(&mut self, array: LocalId, index: &[hir::Expr]) -> (Vec<ExprId>, Option<u32>) {
        self.array_index_depth += 1;
        let idx: Vec<ExprId> = index.iter().map(|e| self.expr(e)).collect();
        self.array_index_depth -= 1;
        let Home::Regs { shape, .. } = &self.arrays[&array] else {
            return (idx, None);
        };
        let mut flat: i128 = 0;
        for (i, (&x, &d)) in idx.iter().zip(shape).enumerate() {
            match self.f.const_int(x) {
                Some(c) if (0..i128::from(d)).contains(&c) => flat = flat * i128::from(d) + c,
                _ => {
                    // Out of range can only be a wrapped constant here (the
                    // checker refused the rest): treat it as dynamic, so
                    // the simulator's memcheck sees it in local memory.
                    self.dynamic_arrays.push((array, index[i].span));
                    return (idx, None);
                }
            }
        }
        (idx, Some(flat as u32))
    }

    /// `acc[i, j]` as a value.
    pub(super) fn array_load(
        &mut self,
        array: LocalId,
        index: &[hir::Expr],
        ty: Ty,
        span: Span,
    ) -> ExprId {
        let (idx, flat) = self.array_index(array, index);
        match (self.arrays[&array].clone(), flat) {
            (Home::Regs { vars, .. }, Some(e)) => {
                self.push_expr(ExprKind::Var(vars[e as usize]), ty, span)
            }
            // Found dynamic: this lowering is thrown away and redone with
            // the array in local memory; any well-formed value will do.
            (Home::Regs { vars, .. }, None) => self.push_expr(ExprKind::Var(vars[0]), ty, span),
            (Home::Local(a), _) => {
                let acc = self.local_access(a, idx, false, span);
                self.push_expr(ExprKind::Load(acc), ty, span)
            }
        }
    }

    /// `acc[i, j] = value`.
    pub(super) fn array_store(
        &mut self,
        array: LocalId,
        index: &[hir::Expr],
        value: &hir::Expr,
        span: Span,
    ) -> Vec<StmtId> {
        let (idx, flat) = self.array_index(array, index);
        let value = self.expr(value);
        let s = match (self.arrays[&array].clone(), flat) {
            (Home::Regs { vars, .. }, e) => {
                self.push_stmt(StmtKind::Set(vars[e.unwrap_or(0) as usize], value), span)
            }
            (Home::Local(a), _) => {
                let acc = self.local_access(a, idx, true, span);
                self.push_stmt(StmtKind::Store(acc, value), span)
            }
        };
        vec![s]
    }

    /// The value of a loop variable being unrolled, or of a constant `let`
    /// inside an array index.
    pub(super) fn known_local(&self, l: LocalId) -> Option<i128> {
        if let Some(v) = self.loop_consts.get(&l) {
            return Some(*v);
        }
        if self.array_index_depth > 0 {
            return self.let_consts.get(&l).copied();
        }
        None
    }

    /// The value of an `i32` HIR expression when it is a compile-time
    /// constant here (literals, folded `ctx` values, constant dims, loop
    /// variables being unrolled and `let`s of constant value).
    pub(super) fn hir_const(&self, e: &hir::Expr) -> Option<i128> {
        use hir::ExprKind as K;
        let Ty::Scalar(t) = e.ty else { return None };
        match &e.kind {
            K::Const(ConstVal::Int(v)) => Some(*v),
            K::Local(l) => self
                .loop_consts
                .get(l)
                .or_else(|| self.let_consts.get(l))
                .copied(),
            K::Ctx(crate::ast::CtxField::Lanes) => Some(32),
            K::Ctx(crate::ast::CtxField::Threads) => Some(i128::from(self.k.threads)),
            K::Ctx(crate::ast::CtxField::Warps) => Some(i128::from(self.k.threads / 32)),
            K::Dim(d) => self.k.dims[d.0 as usize].constant.map(i128::from),
            K::Unary(UnOp::Neg, x) => consteval::unary(UnOp::Neg, t, self.hir_const(x)?).ok(),
            K::Binary(op, a, b) if t.is_int() => {
                consteval::wrapping(*op, t, self.hir_const(a)?, self.hir_const(b)?).ok()
            }
            _ => None,
        }
    }

    /// A `for` loop unrolled completely because its body indexes a register
    /// array with what may fold to constants once the loop variable is one:
    /// the body once per trip, the variable replaced by the trip's value.
    /// `None` when the loop is lowered as a loop.
    pub(super) fn full_unroll(&mut self, l: &hir::ForLoop) -> Option<Vec<StmtId>> {
        let (var, body) = (l.var, &l.body);
        if !self.indexes_register_array(&body.stmts) || super::has_exit(body) {
            return None;
        }
        let (start, end, step) = (
            self.hir_const(&l.start)?,
            self.hir_const(&l.end)?,
            self.hir_const(&l.step)?,
        );
        let mut trips = Vec::new();
        let mut i = start;
        while (step > 0 && i < end) || (step < 0 && i > end) {
            if trips.len() as i128 >= MAX_FULL_UNROLL || i32::try_from(i).is_err() {
                return None;
            }
            trips.push(i);
            i += step;
        }
        let copies = self
            .full_unroll_copies
            .saturating_mul(trips.len().max(1) as u64);
        if copies > FULL_UNROLL_BUDGET {
            return None;
        }
        let outer_copies = std::mem::replace(&mut self.full_unroll_copies, copies);
        let mut out = Vec::new();
        for v in trips {
            self.loop_consts.insert(var, v);
            out.extend(self.block(body));
        }
        self.loop_consts.remove(&var);
        self.full_unroll_copies = outer_copies;
        Some(out)
    }

    /// Whether `stmts` access a register array (one not already placed in
    /// local memory) with an index that is not a literal.
    fn indexes_register_array(&self, stmts: &[hir::Stmt]) -> bool {
        let mut found = false;
        for s in stmts {
            s.exprs(&mut |e| {
                e.walk(&mut |x| {
                    if let hir::ExprKind::Load {
                        src: hir::Memory::Array(a),
                        index,
                    } = &x.kind
                    {
                        found |= self.in_registers(*a) && !all_literals(index);
                    }
                });
            });
            if let hir::StmtKind::Store {
                dst: hir::Memory::Array(a),
                index,
                ..
            } = &s.kind
            {
                found |= self.in_registers(*a) && !all_literals(index);
            }
            found |= s
                .blocks()
                .iter()
                .any(|b| self.indexes_register_array(&b.stmts));
            if found {
                return true;
            }
        }
        found
    }

    fn in_registers(&self, a: LocalId) -> bool {
        matches!(self.arrays.get(&a), Some(Home::Regs { .. }))
    }

    /// Record an immutable `let` whose value lowered to an integer
    /// constant, for array indices that name it.
    pub(super) fn note_let_const(&mut self, local: LocalId, e: ExprId) {
        match self.f.const_int(e) {
            Some(v) if !self.k.locals[local.0 as usize].mutable => {
                self.let_consts.insert(local, v);
            }
            _ => {
                self.let_consts.remove(&local);
            }
        }
    }
}

fn all_literals(index: &[hir::Expr]) -> bool {
    index
        .iter()
        .all(|e| matches!(e.kind, hir::ExprKind::Const(_)))
}
