//! What a kernel needs of its target beyond the floor (`sm_75`): atomics
//! whose operation and type the target lacks (`bf16` add needs sm_90),
//! reported as P0810, and tensor-core products whose operand type the
//! target lacks (`bf16` needs sm_80; `mma::dot_kind`), P0811. Reported for
//! each target that lacks it, so `phobos check` (which compiles for every
//! default target) names them all.

use super::ir::{BufferKind, Func, Mem, StmtKind};
use crate::diag::Diagnostic;

/// The first atomic or `dot` of `f` that `sm_{arch}` cannot run, as P0810
/// or P0811.
pub fn check(f: &Func, arch: u32) -> Result<(), Diagnostic> {
    dots(f, arch)?;
    for (s, stmt) in f.stmts.iter() {
        let StmtKind::Atomic { op, access, .. } = &stmt.kind else {
            continue;
        };
        let a = &f.accesses[*access];
        let need = op.min_arch(a.elem);
        if arch >= need {
            continue;
        }
        let space = match a.mem {
            Mem::Tensor(_) => "global",
            Mem::Buffer(_) => "shared",
            Mem::Local(_) => "local",
        };
        return Err(Diagnostic::error(
            "P0810",
            format!(
                "`{}` on {} needs sm_{need} or newer, and this kernel is compiled for sm_{arch}",
                op.name(),
                a.elem.name()
            ),
        )
        .primary(
            f.stmt_span(s),
            format!("a {space} {} atomic", a.elem.name()),
        )
        .note(format!(
            "PTX has `atom.add.noftz.{}` from sm_{need}; build for newer targets only, or accumulate in f32 (`atomic_add` on an f32 tensor) and convert afterwards",
            a.elem.name()
        )));
    }
    Ok(())
}

/// The first `dot` whose operands `sm_{arch}` has no tensor-core
/// instruction for, as P0811.
fn dots(f: &Func, arch: u32) -> Result<(), Diagnostic> {
    for (s, stmt) in f.stmts.iter() {
        let StmtKind::Mma { acc, a, .. } = &stmt.kind else {
            continue;
        };
        let BufferKind::Tile { elem, .. } = &f.buffers[*a].kind else {
            continue;
        };
        let Some(kind) = crate::mma::dot_kind(*elem, f.accs[*acc].elem) else {
            continue;
        };
        if arch >= kind.min_arch {
            continue;
        }
        return Err(Diagnostic::error(
            "P0811",
            format!(
                "a `dot` of {} tiles needs sm_{} or newer, and this kernel is compiled for sm_{arch}",
                elem.name(),
                kind.min_arch
            ),
        )
        .primary(f.stmt_span(s), format!("a {} x {} product", elem.name(), elem.name()))
        .note(format!(
            "the m16n8 shape Phobos uses for {} products, mma.sync m16n8k{}, is sm_{}'s; sm_75 has m16n8k8 for f16 only: build for newer targets only{}",
            elem.name(),
            kind.k,
            kind.min_arch,
            if *elem == crate::ast::ScalarTy::BF16 { ", or copy the operands as f16" } else { "" }
        )));
    }
    Ok(())
}
