//! What a kernel needs of its target beyond the floor (`sm_75`): today,
//! atomics whose operation and type the target lacks (`bf16` add needs
//! sm_90). Reported as P0810 for each target that lacks it, so `phobos
//! check` (which compiles for every default target) names them all.

use super::ir::{Func, Mem, StmtKind};
use crate::diag::Diagnostic;

/// The first atomic of `f` that `sm_{arch}` cannot run, as P0810.
pub fn check(f: &Func, arch: u32) -> Result<(), Diagnostic> {
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
