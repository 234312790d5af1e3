//! What a kernel needs of its target beyond the floor (`sm_75`): atomics
//! whose operation and type the target lacks (`bf16` add needs sm_90),
//! reported as P0810, and tensor-core products whose operand type the
//! target lacks (`bf16` needs sm_80; `mma::dot_kind`), P0811, and
//! conversions to or from the 8-bit floats (sm_89), P0812. Reported for
//! each target that lacks it, so `phobos check` (which compiles for every
//! default target) names them all.

use super::error::BackendError;
use super::ir::{BufferKind, ExprKind, Func, Mem, StmtKind};
use crate::hir::Ty;

/// The first atomic or `dot` of `f` that `sm_{arch}` cannot run, as P0810
/// or P0811.
pub fn check(f: &Func, arch: u32) -> Result<(), BackendError> {
    dots(f, arch)?;
    f8_conversions(f, arch)?;
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

/// The first `dot` whose operands `sm_{arch}` has no tensor-core
/// instruction for, as P0811.
fn dots(f: &Func, arch: u32) -> Result<(), BackendError> {
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
        return Err(BackendError::DotNeedsNewerTarget {
            elem: *elem,
            need: kind.min_arch,
            k: kind.k,
            arch,
            span: f.stmt_span(s),
        });
    }
    Ok(())
}

/// The lowest target with the 8-bit float conversions (`cvt` with
/// `.e4m3x2`/`.e5m2x2`; ptxas 12.9 refuses them below sm_89).
pub const F8_MIN_ARCH: u32 = 89;

/// The first conversion to or from an 8-bit float that `sm_{arch}` has no
/// instruction for, as P0812. Loads, stores and copies of 8-bit floats
/// move bytes and need nothing.
fn f8_conversions(f: &Func, arch: u32) -> Result<(), BackendError> {
    if arch >= F8_MIN_ARCH {
        return Ok(());
    }
    let elem = |ty: Ty| match ty {
        Ty::Scalar(t) | Ty::Run { elem: t, .. } => Some(t),
        Ty::Unit => None,
    };
    // An accumulator stored as an 8-bit float (`C[...] = f8e4m3(acc)`, or
    // into a tile of them) converts each element.
    for (s, stmt) in f.stmts.iter() {
        let elem = match &stmt.kind {
            StmtKind::AccStore { access, .. } => f.accesses[*access].elem,
            StmtKind::AccToTile { buffer, .. } => match &f.buffers[*buffer].kind {
                BufferKind::Tile { elem, .. } => *elem,
                _ => continue,
            },
            _ => continue,
        };
        if elem.is_f8() {
            return Err(BackendError::F8NeedsNewerTarget {
                elem,
                arch,
                span: f.stmt_span(s),
            });
        }
    }
    for (e, x) in f.exprs.iter() {
        let ExprKind::Convert(inner) = x.kind else {
            continue;
        };
        let (from, to) = (elem(f.exprs[inner].ty), elem(x.ty));
        if let Some(t) = [to, from].into_iter().flatten().find(|t| t.is_f8()) {
            return Err(BackendError::F8NeedsNewerTarget {
                elem: t,
                arch,
                span: f.expr_span(e),
            });
        }
    }
    Ok(())
}
