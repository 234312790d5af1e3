//! Atomics and fences: `atom` (or `red` when the old value is dropped and
//! PTX has a `red` of the operation) on one element of a tensor (global)
//! or a tile (shared), with the default `.relaxed.gpu` semantics, and
//! `fence()` as `fence.acq_rel.gpu`.

use super::{reg_list, Emitter, Reg, RegClass, V};
use crate::ast::ScalarTy;
use crate::backend::ir::{StmtId, StmtKind};
use crate::hir::AtomicOp;

/// The PTX operation and type suffix of `op` on elements of `t` (the
/// checker admits only pairs the PTX ISA defines, see
/// `AtomicOp::supports`): `.add` takes signedness only for 32 bits (there
/// is no `.add.s64`), floats add with `.noftz` for f16/bf16 (which the
/// ISA requires), the bitwise operations and `exch`/`cas` take `.b` types.
fn op_suffix(op: AtomicOp, t: ScalarTy) -> String {
    use ScalarTy::*;
    let bits = t.size() * 8;
    let op_name = match op {
        AtomicOp::Add => "add",
        AtomicOp::Min => "min",
        AtomicOp::Max => "max",
        AtomicOp::And => "and",
        AtomicOp::Or => "or",
        AtomicOp::Xor => "xor",
        AtomicOp::Exch => "exch",
        AtomicOp::Cas => "cas",
    };
    let ty = match (op, t) {
        (AtomicOp::Add, F16) => "noftz.f16".to_string(),
        (AtomicOp::Add, BF16) => "noftz.bf16".to_string(),
        (AtomicOp::Add, F32) => "f32".to_string(),
        (AtomicOp::Add, F64) => "f64".to_string(),
        (AtomicOp::Add, I32) => "s32".to_string(),
        (AtomicOp::Add, _) => format!("u{bits}"),
        (AtomicOp::Min | AtomicOp::Max, I32 | I64) => format!("s{bits}"),
        (AtomicOp::Min | AtomicOp::Max, _) => format!("u{bits}"),
        _ => format!("b{bits}"),
    };
    format!("{op_name}.{ty}")
}

impl Emitter<'_> {
    /// One atomic statement: its values, the address, the fence (a
    /// candidate barrier after the operands, when they read a tile), then
    /// the instruction.
    pub(crate) fn atomic(&mut self, s: StmtId) {
        let StmtKind::Atomic {
            op,
            access,
            args,
            dst,
        } = self.f.stmts[s].kind.clone()
        else {
            return;
        };
        let t = self.f.accesses[access].elem;
        let vals: Vec<V> = args.iter().map(|&a| self.expr(a)).collect();
        let regs: Vec<Reg> = vals.into_iter().map(|v| self.in_reg(v, t)).collect();
        let (space, addr) = self.atomic_address(access);
        if let Some(b) = self.f.fence(s) {
            self.barrier(b);
        }
        let opty = op_suffix(op, t);
        let srcs = reg_list(&regs);
        // `red` has no `exch` or `cas`: those keep `atom` with a scratch
        // destination.
        let red = dst.is_none() && !matches!(op, AtomicOp::Exch | AtomicOp::Cas);
        if red {
            self.ins(&format!("red{space}.{opty} [{addr}], {srcs};"));
        } else {
            let d = match dst {
                Some(v) => self.var_reg(v),
                None => self.reg(RegClass::of(t)),
            };
            self.ins(&format!("atom{space}.{opty} {d}, [{addr}], {srcs};"));
        }
        self.cur_access = None;
    }

    /// `fence()`: orders this thread's memory accesses before it against
    /// those after it, for every thread of the GPU (PTX ISA, "Memory
    /// Consistency Model": a release and acquire pattern with a relaxed
    /// atomic in between).
    pub(crate) fn fence(&mut self) {
        self.ins("fence.acq_rel.gpu;");
    }
}
