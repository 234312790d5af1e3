//! The IR verifier. Invariants of a well-formed `ir::Func`:
//!
//! 1. Every handle (expression, statement, var, access, buffer, barrier)
//!    refers to an existing arena entry, and the span side tables are as long
//!    as their arenas.
//! 2. Every expression has at most one user (expressions are trees), and so
//!    does every statement (blocks are trees).
//! 3. Operands come before their users in the expression arena (the arena
//!    order is an evaluation order; analyses rely on it).
//! 4. Binary operands have equal element types; comparisons and `&&`/`||`
//!    produce `bool`; `If` conditions are `bool`.
//! 5. A run access has `axis < rank` and `len >= 1`; a tile access has one
//!    start per axis of its shape; a point access indexes every axis of a
//!    buffer; an access to a local-memory array is a point access with one
//!    index per axis of the array.
//! 6. Every candidate barrier appears exactly once (as a `Barrier`
//!    statement, inside one `CtaColl`, or as the fence of one `Store`,
//!    `RunStore`, `If` or `For`), and a statement has at most one fence.
//! 7. A `Dp4aSum`'s operands are packed-byte operands.
//! 8. `Break` and `Continue` are inside a `For` or `While`; a `While`'s
//!    condition is `bool`.
//! 9. A `RunVars` run names one existing var per element.
//! 10. An `Mma` reads two rank-2 tile buffers whose shapes (before the
//!     padding of their rows) fit its accumulator; an `AccStore`'s access
//!     is a tensor tile store of its accumulator's shape; an `AccToTile`'s
//!     box (its start plus the accumulator's shape) lies inside its rank-2
//!     tile buffer.
//! 11. An `AsyncCopy` writes into a ring buffer (`Func::rings`), at an
//!     `i32` stage.
//! 12. A `Dim` expression reads a dim of the `.param` list
//!     (`Func::ptx_params`): lowering made a constant dim a literal.
//!
//! Run after `lower` in debug builds and in the tests.

use super::ir::{
    is_packed_operand, BufferKind, ExprId, ExprKind, Func, Handle, Mem, PtxSlot, Shape, StmtId,
    StmtKind,
};
use crate::ast::{BinOp, ScalarTy};
use crate::hir::Ty;

/// Check every invariant; return all violations.
pub fn verify(f: &Func) -> Result<(), Vec<String>> {
    let mut v = Verifier {
        f,
        errors: Vec::new(),
        expr_users: vec![0; f.exprs.len()],
        stmt_users: vec![0; f.stmts.len()],
        barrier_uses: vec![0; f.barriers.len()],
        loops: 0,
    };
    if f.expr_spans.len() != f.exprs.len() || f.stmt_spans.len() != f.stmts.len() {
        v.errors
            .push("span side tables do not match their arenas".into());
    }
    v.block(&f.body);
    for (i, n) in v.expr_users.iter().enumerate() {
        if *n > 1 {
            v.errors.push(format!("e{i} has {n} users"));
        }
    }
    for (i, n) in v.stmt_users.iter().enumerate() {
        if *n > 1 {
            v.errors.push(format!("s{i} appears {n} times"));
        }
    }
    for (i, n) in v.barrier_uses.iter().enumerate() {
        if *n != 1 {
            v.errors.push(format!("bar{i} appears {n} times"));
        }
    }
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

struct Verifier<'f> {
    f: &'f Func,
    errors: Vec<String>,
    expr_users: Vec<u32>,
    stmt_users: Vec<u32>,
    barrier_uses: Vec<u32>,
    /// Loops around the statement being checked.
    loops: u32,
}

impl Verifier<'_> {
    fn block(&mut self, b: &[StmtId]) {
        for &s in b {
            if !self.f.stmts.contains(s) {
                self.errors.push(format!("{s} out of range"));
                continue;
            }
            self.stmt_users[s.index()] += 1;
            self.stmt(s);
            self.fences(s);
        }
    }

    fn fences(&mut self, s: StmtId) {
        let fences: Vec<_> = self.f.fences.iter().filter(|(x, _)| *x == s).collect();
        if fences.len() > 1 {
            self.errors.push(format!("{s} has {} fences", fences.len()));
        }
        for (_, b) in fences {
            match self.f.stmts[s].kind {
                StmtKind::Store(..)
                | StmtKind::RunStore { .. }
                | StmtKind::If { .. }
                | StmtKind::For(_)
                | StmtKind::While { .. } => self.use_barrier(*b),
                _ => self.errors.push(format!("{s} cannot hold fence {b}")),
            }
        }
    }

    fn use_expr(&mut self, e: ExprId) {
        if !self.f.exprs.contains(e) {
            self.errors.push(format!("{e} out of range"));
            return;
        }
        self.expr_users[e.index()] += 1;
        self.expr(e);
    }

    fn use_barrier(&mut self, b: super::ir::BarrierId) {
        match self.barrier_uses.get_mut(b.index()) {
            Some(n) => *n += 1,
            None => self.errors.push(format!("{b} out of range")),
        }
    }

    fn stmt(&mut self, s: StmtId) {
        let f = self.f;
        let kind = &f.stmts[s].kind;
        if let Some(a) = kind.access() {
            self.check_access(a);
        }
        for e in f.stmt_operands(s) {
            self.use_expr(e);
        }
        match kind {
            StmtKind::Set(var, _) => {
                if !f.vars.contains(*var) {
                    self.errors.push(format!("{s}: {var} out of range"));
                }
            }
            StmtKind::TileCopy { buffer, .. } | StmtKind::TileStore { buffer, .. } => {
                if !f.buffers.contains(*buffer) {
                    self.errors.push(format!("{s}: {buffer} out of range"));
                }
            }
            StmtKind::AsyncCopy { buffer, stage, .. } => {
                if !f.rings.contains_key(buffer) {
                    self.errors.push(format!(
                        "{s}: an async copy into {buffer}, which is no ring"
                    ));
                }
                if f.exprs.contains(*stage) && f.exprs[*stage].ty != Ty::Scalar(ScalarTy::I32) {
                    self.errors
                        .push(format!("{s}: an async copy's stage {stage} is not i32"));
                }
            }
            StmtKind::AsyncCommit | StmtKind::AsyncWait(_) => {}
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => {
                if f.exprs.contains(*cond) && f.exprs[*cond].ty != Ty::Scalar(ScalarTy::Bool) {
                    let what = if kind.is_loop() { "while" } else { "if" };
                    self.errors
                        .push(format!("{s}: {what} condition {cond} is not bool"));
                }
            }
            StmtKind::Break | StmtKind::Continue => {
                if self.loops == 0 {
                    self.errors
                        .push(format!("{s}: break or continue outside a loop"));
                }
            }
            StmtKind::Atomic {
                op,
                access,
                args,
                dst,
            } => {
                let want = if *op == crate::hir::AtomicOp::Cas {
                    2
                } else {
                    1
                };
                if args.len() != want {
                    self.errors.push(format!(
                        "{s}: {} takes {want} values, found {}",
                        op.name(),
                        args.len()
                    ));
                }
                if f.accesses.contains(*access) {
                    let acc = &f.accesses[*access];
                    if acc.shape != Shape::Point || !acc.store {
                        self.errors
                            .push(format!("{s}: an atomic's access is not a point store"));
                    }
                }
                if let Some(v) = dst {
                    if !f.vars.contains(*v) {
                        self.errors.push(format!("{s}: {v} out of range"));
                    }
                }
            }
            StmtKind::CtaColl(c) => {
                if let Some(x) = &c.combine {
                    self.use_expr(x.body);
                }
                if !f.buffers.contains(c.scratch) {
                    self.errors.push(format!("{s}: {} out of range", c.scratch));
                }
                self.use_barrier(c.before);
                self.use_barrier(c.written);
                self.use_barrier(c.read);
            }
            StmtKind::Barrier(b) => self.use_barrier(*b),
            StmtKind::AccZero(acc) => self.acc(s, *acc),
            StmtKind::AccMap {
                acc,
                elem,
                row,
                col,
                ..
            } => {
                self.acc(s, *acc);
                for v in [elem, row, col] {
                    if !self.f.vars.contains(*v) {
                        self.errors.push(format!("{s}: {v} out of range"));
                    }
                }
            }
            StmtKind::Mma {
                acc,
                a,
                b,
                b_trans,
                k,
            } => {
                self.acc(s, *acc);
                self.mma(s, *acc, (*a, *b), *b_trans, *k);
            }
            StmtKind::AccToTile { acc, buffer, at } => {
                self.acc(s, *acc);
                let (accs, buffers) = (&self.f.accs, &self.f.buffers);
                let found = (accs.contains(*acc) && buffers.contains(*buffer))
                    .then(|| (&accs[*acc], &buffers[*buffer]));
                let inside = match found {
                    Some((t, b)) => match &b.kind {
                        BufferKind::Tile { shape, .. } => {
                            shape.len() == 2
                                && u64::from(at[0]) + u64::from(t.rows) <= u64::from(shape[0])
                                && u64::from(at[1]) + u64::from(t.cols) <= u64::from(shape[1])
                        }
                        BufferKind::Scratch { .. } => false,
                    },
                    None => false,
                };
                if !inside {
                    self.errors.push(format!(
                        "{s}: the box {acc} is stored to at {at:?} is not inside the rank-2 tile {buffer}"
                    ));
                }
            }
            StmtKind::AccStore { acc, access } => {
                self.acc(s, *acc);
                if self.f.accs.contains(*acc) && self.f.accesses.contains(*access) {
                    let t = &self.f.accs[*acc];
                    let a = &self.f.accesses[*access];
                    let shape = Shape::Tile {
                        shape: vec![t.rows, t.cols],
                    };
                    if !a.store || !matches!(a.mem, Mem::Tensor(_)) || a.shape != shape {
                        self.errors.push(format!(
                            "{s}: the store of {acc} is not a tensor tile store of its shape"
                        ));
                    }
                }
            }
            StmtKind::Store(..)
            | StmtKind::RunStore { .. }
            | StmtKind::For(_)
            | StmtKind::Return
            | StmtKind::Fence => {}
        }
        // A loop's body is its last block (a `While`'s `pre` is not in it).
        let blocks = kind.blocks();
        let last = blocks.len().saturating_sub(1);
        for (i, b) in blocks.into_iter().enumerate() {
            let body = kind.is_loop() && i == last;
            self.loops += u32::from(body);
            self.block(b);
            self.loops -= u32::from(body);
        }
    }

    fn acc(&mut self, s: StmtId, acc: super::ir::AccId) {
        if !self.f.accs.contains(acc) {
            self.errors.push(format!("{s}: {acc} out of range"));
        }
    }

    fn mma(
        &mut self,
        s: StmtId,
        acc: super::ir::AccId,
        (a, b): (super::ir::BufferId, super::ir::BufferId),
        b_trans: bool,
        k: u32,
    ) {
        let f = self.f;
        let shape = |x: super::ir::BufferId| {
            if !f.buffers.contains(x) {
                return None;
            }
            match &f.buffers[x].kind {
                BufferKind::Tile { shape, .. } if shape.len() == 2 => Some([shape[0], shape[1]]),
                _ => None,
            }
        };
        let (Some(sa), Some(sb)) = (shape(a), shape(b)) else {
            self.errors
                .push(format!("{s}: an mma operand is not a rank-2 tile buffer"));
            return;
        };
        if !f.accs.contains(acc) {
            return;
        }
        let t = &f.accs[acc];
        // Rows may be padded: a buffer's last extent is at least the
        // operand's.
        let fits = sa[0] == t.rows
            && sa[1] >= k
            && if b_trans {
                sb[0] == t.cols && sb[1] >= k
            } else {
                sb[0] == k && sb[1] >= t.cols
            };
        if !fits {
            self.errors.push(format!(
                "{s}: the mma operands {a} and {b} do not fit {acc}"
            ));
        }
    }

    /// Checks what an access refers to, but not its subscripts; false when
    /// the access itself is out of range.
    fn check_access(&mut self, a: super::ir::AccessId) -> bool {
        if !self.f.accesses.contains(a) {
            self.errors.push(format!("{a} out of range"));
            return false;
        }
        let acc = &self.f.accesses[a];
        let rank = acc.index.len();
        match &acc.shape {
            Shape::Run { axis, len } if *axis >= rank || *len == 0 => {
                self.errors.push(format!(
                    "{a}: run axis {axis} / len {len} invalid for rank {rank}"
                ));
            }
            Shape::Tile { shape } if shape.len() != rank => {
                self.errors.push(format!(
                    "{a}: tile of rank {} with {rank} starts",
                    shape.len()
                ));
            }
            _ => {}
        }
        if let Mem::Buffer(b) = acc.mem {
            match self.f.buffers.contains(b).then(|| &self.f.buffers[b]) {
                Some(buf) => {
                    if let BufferKind::Tile { shape, .. } = &buf.kind {
                        if shape.len() != rank {
                            self.errors.push(format!(
                                "{a}: {rank} subscripts into a tile of rank {}",
                                shape.len()
                            ));
                        }
                    }
                }
                None => self.errors.push(format!("{a}: {b} out of range")),
            }
        }
        if let Mem::Local(arr) = acc.mem {
            match self.f.arrays.iter().find(|(id, _)| *id == arr) {
                Some((_, la)) if la.shape.len() != rank || acc.shape != Shape::Point => {
                    self.errors.push(format!(
                        "{a}: {rank} subscripts (or a run) into local array {arr} of rank {}",
                        la.shape.len()
                    ));
                }
                Some(_) => {}
                None => self.errors.push(format!("{a}: {arr} out of range")),
            }
        }
        true
    }

    fn expr(&mut self, e: ExprId) {
        if let Some(a) = self.f.load_access(e) {
            if self.check_access(a) {
                for &ix in &self.f.accesses[a].index {
                    self.use_expr(ix);
                }
            }
            return;
        }
        let ops = self.f.operands(e);
        for &o in &ops {
            if o.index() >= e.index() {
                self.errors
                    .push(format!("{e}: operand {o} does not come before it"));
            }
        }
        match &self.f.exprs[e].kind {
            ExprKind::Binary(op, a, b) => {
                let (ta, tb) = (self.f.scalar_ty(*a), self.f.scalar_ty(*b));
                let shift = matches!(op, BinOp::Shl | BinOp::Shr);
                if ta != tb && !shift {
                    self.errors.push(format!(
                        "{e}: operands {} and {} differ",
                        ta.name(),
                        tb.name()
                    ));
                }
                let cmp = matches!(
                    op,
                    BinOp::Eq
                        | BinOp::Ne
                        | BinOp::Lt
                        | BinOp::Le
                        | BinOp::Gt
                        | BinOp::Ge
                        | BinOp::And
                        | BinOp::Or
                );
                if cmp && self.f.scalar_ty(e) != ScalarTy::Bool {
                    self.errors.push(format!("{e}: comparison is not bool"));
                }
            }
            ExprKind::RunVars(vs) => {
                let len = match self.f.exprs[e].ty {
                    Ty::Run { len, .. } => len as usize,
                    _ => 0,
                };
                if vs.len() != len || vs.iter().any(|v| !self.f.vars.contains(*v)) {
                    self.errors
                        .push(format!("{e}: a run of vars that are not one per element"));
                }
            }
            ExprKind::Dim(d) if !self.f.ptx_params.contains(&PtxSlot::Dim(*d)) => {
                self.errors
                    .push(format!("{e}: dim d{} is not a `.param`", d.0));
            }
            ExprKind::Dp4aSum { a, b } => {
                let bad = !is_packed_operand(self.f, *a)
                    || b.is_some_and(|b| !is_packed_operand(self.f, b));
                if bad {
                    self.errors
                        .push(format!("{e}: dp4a operand is not packed bytes"));
                }
            }
            _ => {}
        }
        for o in ops {
            self.use_expr(o);
        }
    }
}
