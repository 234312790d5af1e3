//! Kernel metadata (`meta::KernelMeta`) from the checked kernel and the
//! analyses of its compiled variants: parameters with their vector widths,
//! dims and where they come from, `@aligned`, `@grid`, autotune variants
//! with their entries and `.param` lists, shared plans, barriers and the
//! decision for every memory access.

use super::ir::{AccessId, Mem, PtxSlot, StmtKind};
use super::CompiledVariant;
use crate::ast::BinOp;
use crate::hir::{self, Builtin, CheckedKernel, ConstVal, DimRef, ExprKind, ParamKind};
use crate::meta::{
    AccessMeta, BarrierMeta, DimMeta, DimRefMeta, GridExpr, KernelMeta, ParamKindMeta, ParamMeta,
    PtxParam, SharedBuffer, VariantMeta,
};
use crate::source::LineIndex;

/// Describe a compiled kernel.
pub fn build(
    kernel: &CheckedKernel,
    variants: &[CompiledVariant],
    file_name: &str,
    lines: &LineIndex,
) -> KernelMeta {
    let first = &kernel.variants[0];
    let tuned: Vec<&str> = kernel.autotune.iter().map(|(n, _)| n.as_str()).collect();
    let dim_name = |k: &hir::Kernel, d: hir::DimId| k.dims[d.0 as usize].name.clone();
    let params = first
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| ParamMeta {
            name: p.name.clone(),
            kind: match &p.kind {
                ParamKind::Tensor {
                    elem,
                    dims,
                    written,
                } => ParamKindMeta::Tensor {
                    elem: *elem,
                    dims: dims
                        .iter()
                        .map(|d| match d {
                            DimRef::Named(id) => DimRefMeta::Named(dim_name(first, *id)),
                            DimRef::Const(c) => DimRefMeta::Const(*c),
                        })
                        .collect(),
                    written: *written,
                    vector_bytes: vector_bytes(variants, i as u32),
                },
                ParamKind::Scalar(t) => ParamKindMeta::Scalar(*t),
            },
        })
        .collect();
    let dims = first
        .dims
        .iter()
        .map(|d| DimMeta {
            name: d.name.clone(),
            defined_by: d
                .defined_by
                .iter()
                .map(|(p, axis)| (first.params[p.0 as usize].name.clone(), *axis))
                .collect(),
            autotuned: tuned.contains(&d.name.as_str()),
        })
        .collect();
    KernelMeta {
        name: kernel.name.clone(),
        source_file: file_name.to_string(),
        params,
        dims,
        aligned: first
            .aligned
            .iter()
            .map(|(d, m)| (dim_name(first, *d), *m))
            .collect(),
        threads: first.threads,
        grid: first
            .grid
            .as_ref()
            .map(|g| g.iter().map(|e| grid_expr(first, e)).collect()),
        autotune: kernel.autotune.clone(),
        variants: kernel
            .variants
            .iter()
            .zip(variants)
            .map(|(k, v)| variant(k, v, lines))
            .collect(),
        // One target's compile: the build merges the others' in.
        arch_variants: Vec::new(),
    }
}

/// Whether `acc` is the run of a `store(run, i, v)`, which writes one element.
fn one_element_store(f: &super::ir::Func, acc: super::ir::AccessId) -> bool {
    f.stmts.iter().any(|(_, s)| {
        matches!(
            s.kind,
            super::ir::StmtKind::RunStore { access, only: Some(_), .. } if access == acc
        )
    })
}

/// The widest access any variant makes into tensor parameter `p`, as
/// emitted.
fn vector_bytes(variants: &[CompiledVariant], p: u32) -> u32 {
    let mut w = 0;
    for v in variants {
        for (id, a) in v.func.accesses.iter() {
            if a.mem == Mem::Tensor(hir::ParamId(p)) {
                w = w.max(v.entry.accesses[id.0 as usize].max_bytes);
            }
        }
    }
    w
}

fn variant(k: &hir::Kernel, v: &CompiledVariant, lines: &LineIndex) -> VariantMeta {
    let ptx_params: Vec<PtxParam> = (v.func.ptx_params.iter())
        .map(|slot| match *slot {
            PtxSlot::Param(p) => {
                let p = &k.params[p.0 as usize];
                match &p.kind {
                    ParamKind::Tensor { .. } => PtxParam::TensorPtr(p.name.clone()),
                    ParamKind::Scalar(t) => PtxParam::Scalar(p.name.clone(), *t),
                }
            }
            PtxSlot::Dim(d) => PtxParam::Dim(k.dims[d.0 as usize].name.clone()),
            PtxSlot::TensorMap(i) => {
                let m = v.func.tensor_maps[i as usize];
                PtxParam::TensorMap {
                    tensor: k.params[m.param.0 as usize].name.clone(),
                    box_dims: m.box_dims.to_vec(),
                    swizzle: m.swizzle,
                }
            }
        })
        .collect();
    let shared_plan = v
        .func
        .buffers
        .iter()
        .map(|(id, b)| SharedBuffer {
            name: b.name.clone(),
            offset: v.plan.offset[id.0 as usize],
            // The plan refused anything above the target's limit.
            bytes: u32::try_from(b.bytes).unwrap_or(u32::MAX),
            live_lines: v.plan.lines[id.0 as usize],
            padding: padding_of(&v.func, id),
        })
        .collect();
    let barriers = v
        .barriers
        .iter()
        .map(|b| BarrierMeta {
            line: b.line,
            kept: b.kept,
            reason: b.reason.clone(),
        })
        .collect();
    // Unrolled loops hold copies of their accesses; a copy that was decided
    // and emitted the same way as its original is listed once.
    let mut loads: Vec<AccessMeta> = Vec::new();
    let atomics: std::collections::HashSet<AccessId> = v
        .func
        .stmts
        .iter()
        .filter_map(|(_, s)| match s.kind {
            StmtKind::Atomic { access, .. } => Some(access),
            _ => None,
        })
        .collect();
    // A TMA copy (`emit/tma.rs`) is no thread's memory instruction: one
    // thread hands the box to the copy engine. The report lists none.
    let tma_copies: std::collections::HashSet<AccessId> = v
        .func
        .stmts
        .iter()
        .filter_map(|(_, s)| match s.kind {
            StmtKind::AsyncCopy { access, buffer, .. } => v
                .func
                .rings
                .get(&buffer)
                .filter(|r| v.func.tma_rings.contains_key(&r.looped))
                .map(|_| access),
            _ => None,
        })
        .collect();
    let all = v
        .func
        .accesses
        .iter()
        .filter(|(id, _)| !tma_copies.contains(id))
        .map(|(id, a)| {
            let (line, col) = lines.line_col(a.span.start as usize);
            let info = &v.div.access[id.0 as usize];
            // Widths and lines come from the instructions `emit` wrote.
            let emitted = v.entry.accesses[id.0 as usize];
            let line = if emitted.instructions > 0 {
                emitted.line
            } else {
                line
            };
            let reason = if emitted.instructions == 0 {
                "no memory instruction was emitted for it".to_string()
            } else if emitted.max_bytes < info.width {
                if one_element_store(&v.func, id) {
                    "`store(run, i, v)` writes one element".to_string()
                } else {
                    format!(
                        "emitted {} bytes per instruction where {} were allowed",
                        emitted.max_bytes, info.width
                    )
                }
            } else {
                info.reason.clone()
            };
            let target = match a.mem {
                Mem::Tensor(p) => k.params[p.0 as usize].name.clone(),
                Mem::Buffer(b) => v.func.buffers[b].name.clone(),
                Mem::Local(a) => v.func.arrays[a].name.clone(),
            };
            let elems = a.shape.elems();
            AccessMeta {
                line,
                col,
                target,
                store: a.store,
                atomic: atomics.contains(&id),
                elems,
                width_bytes: emitted.max_bytes,
                align_bytes: info.align,
                reason,
            }
        });
    // A set, not `loads.contains`: a kernel has as many accesses as its
    // source has subscripts, and a scan per access was quadratic.
    let mut seen = std::collections::HashSet::new();
    for m in all {
        if seen.insert(m.clone()) {
            loads.push(m);
        }
    }
    let arrays = v
        .func
        .array_homes
        .iter()
        .map(|h| {
            let (line, _) = lines.line_col(h.span.start as usize);
            let reason = h.dynamic_index.map_or(String::new(), |s| {
                let (l, c) = lines.line_col(s.start as usize);
                format!("the index at {l}:{c} is known only at run time")
            });
            crate::meta::ArrayMeta {
                name: h.name.clone(),
                line,
                elems: h.elems,
                bytes: h.elems * h.elem.size(),
                local: h.dynamic_index.is_some(),
                reason,
            }
        })
        .collect();
    VariantMeta {
        entry: v.func.entry.clone(),
        values: k.variant.clone(),
        threads: k.threads,
        grid: k
            .grid
            .as_ref()
            .map(|g| g.iter().map(|e| grid_expr(k, e)).collect()),
        ptx_params,
        shared_bytes: v.plan.total,
        shared_plan,
        barriers,
        loads,
        arrays,
    }
}

/// A `@grid` expression over dims and constants, for the launcher.
fn grid_expr(k: &hir::Kernel, e: &hir::Expr) -> GridExpr {
    let warps = (k.threads / 32) as i64;
    match &e.kind {
        ExprKind::Const(ConstVal::Int(v)) => GridExpr::Const(*v as i64),
        ExprKind::Dim(d) => GridExpr::Dim(k.dims[d.0 as usize].name.clone()),
        ExprKind::Ctx(crate::ast::CtxField::Warps) => GridExpr::Const(warps),
        ExprKind::Ctx(crate::ast::CtxField::Threads) => GridExpr::Const(k.threads as i64),
        ExprKind::Ctx(crate::ast::CtxField::Lanes) => GridExpr::Const(32),
        ExprKind::Convert(a) => grid_expr(k, a),
        ExprKind::Binary(op, a, b) => {
            GridExpr::Binary(*op, Box::new(grid_expr(k, a)), Box::new(grid_expr(k, b)))
        }
        ExprKind::Builtin(b, args) if args.len() == 2 => {
            let (x, y) = (
                Box::new(grid_expr(k, &args[0])),
                Box::new(grid_expr(k, &args[1])),
            );
            match b {
                Builtin::Cdiv => GridExpr::Cdiv(x, y),
                Builtin::Min => GridExpr::Min(x, y),
                Builtin::Max => GridExpr::Max(x, y),
                _ => GridExpr::Binary(BinOp::Add, x, y),
            }
        }
        _ => GridExpr::Const(1),
    }
}

/// The padding of a tile buffer in bytes (see `backend::padding`).
fn padding_of(f: &super::ir::Func, id: super::ir::BufferId) -> Option<crate::meta::Padding> {
    let unused = *f.tile_padding.get(&id)?;
    let super::ir::BufferKind::Tile { elem, shape } = &f.buffers[id].kind else {
        return None;
    };
    let size = elem.size();
    Some(crate::meta::Padding {
        row_bytes: size * shape.last()?,
        pad_bytes: size * unused,
    })
}
