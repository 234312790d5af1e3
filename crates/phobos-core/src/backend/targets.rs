//! What a kernel needs of its target beyond the floor (`sm_75`): today,
//! atomics whose operation and type the target lacks (`bf16` add needs
//! sm_90). Reported as P0810 for each target that lacks it, so `phobos
//! check` (which compiles for every default target) names them all.

use super::error::BackendError;
use super::ir::{Func, Mem, StmtKind};

/// The first atomic of `f` that `sm_{arch}` cannot run, as P0810.
pub fn check(f: &Func, arch: u32) -> Result<(), BackendError> {
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
        return Err(BackendError::AtomicNeedsNewerTarget {
            op: op.name(),
            elem: a.elem.name(),
            space,
            need,
            arch,
            span: f.stmt_span(s),
        });
    }
    Ok(())
}
