//! From a request to a trace: compile the kernel for the target, bind the
//! inputs to the parameters (dims from the shapes, the autotune variant from
//! the dims, random values for shapes given alone), run the simulator with a
//! recording observer on the traced CTAs, and build their steps.

use crate::model::*;
use crate::record::{CtaEvents, Recorder};
use crate::source_info::{self, Env, SourceInfo};
use crate::steps::{self, BufferMap, Layout};
use crate::{Cta, ExplainError, Input, Request};
use phobos_core::ast::{BinOp, ScalarTy};
use phobos_core::meta::{DimRefMeta, GridExpr, KernelMeta, ParamKindMeta, PtxParam, VariantMeta};
use phobos_core::{CompileOptions, CompiledKernel};
use phobos_sim::{Device, KernelArg, LaunchOptions, Module, SimError};
use std::collections::BTreeMap;

/// The largest tensor `shape:` inputs may ask for (2 GiB).
const MAX_RANDOM_BYTES: u64 = 1 << 31;

/// Events recorded per CTA at most; beyond it the trace is cut short.
const MAX_EVENTS_PER_CTA: usize = 300_000;

/// Compile, run and step through the kernel as the request says.
pub fn trace(req: &Request) -> Result<Trace, ExplainError> {
    let compiled = compile(req)?;
    let meta = &compiled.meta;
    let (bound, variant) = bind_and_pick(meta, req)?;
    let (source, dim_ids, param_ids) = hir_info(req, meta, variant).unwrap_or_default();
    let SourceInfo {
        loops,
        statement_lines,
        tiles: tile_stmts,
        grid: hir_grid,
    } = source;
    let dim_values: Vec<i64> = dim_ids
        .iter()
        .map(|name| bound.dims.get(name).map_or(0, |&v| v as i64))
        .collect();
    let scalar_values: Vec<Option<f64>> = param_ids
        .iter()
        .map(|name| bound.scalars.get(name).copied())
        .collect();
    let grid = match req.grid {
        Some(g) => g,
        None => {
            // The variant's own @grid: the metadata's is the first
            // variant's, which is wrong when a free tuning constant sizes it.
            let env = Env {
                dims: &dim_values,
                scalars: &scalar_values,
                block: [0; 3],
                grid: [1; 3],
                threads: variant.threads,
            };
            match hir_grid.as_ref().map(|g| grid_from_hir(meta, g, &env)) {
                Some(g) => g?,
                None => grid_of(meta, &bound.dims)?,
            }
        }
    };
    let (picked_cta, total_ctas) = resolve_cta(req.cta, grid)?;
    let work = total_ctas.saturating_mul(u64::from(variant.threads));
    if work > req.max_work {
        return Err(ExplainError::Usage(format!(
            "this launch simulates {total_ctas} CTAs x {} threads = {work} threads, more than the \
             budget of {} (give a smaller --grid, or raise the budget with --max-work {work})",
            variant.threads, req.max_work
        )));
    }

    let traced: Vec<u32> = if total_ctas <= u64::from(req.max_ctas.max(1)) {
        (0..total_ctas as u32).collect()
    } else {
        vec![picked_cta]
    };
    let mut recorder = Recorder::new(traced.clone(), MAX_EVENTS_PER_CTA);
    let bases = simulate(&compiled.ptx, variant, grid, &bound, &mut recorder)?;

    let tensors = bound.tensors.clone();
    let buffers: Vec<BufferMap> = bases
        .iter()
        .enumerate()
        .map(|(i, &base)| BufferMap {
            tensor: i,
            base,
            len_bytes: bound.data[i].len() as u64,
        })
        .collect();
    let (shared, barriers) = plan_of(variant);
    let source_lines: Vec<String> = req.source.lines().map(str::to_string).collect();
    let tensor_of = |p: phobos_core::hir::ParamId| {
        let name = param_ids.get(p.0 as usize)?;
        tensors.iter().position(|t| &t.name == name)
    };

    let mut ctas = Vec::with_capacity(traced.len());
    for &c in &traced {
        let events = recorder.ctas.remove(&c).unwrap_or_else(|| CtaEvents {
            cta: c,
            cta_id: cta_id(c, grid),
            ..CtaEvents::default()
        });
        let env = Env {
            dims: &dim_values,
            scalars: &scalar_values,
            block: events.cta_id,
            grid,
            threads: variant.threads,
        };
        let tiles = source_info::tiles_for_cta(&tile_stmts, &env, &tensor_of);
        let layout = Layout {
            tensors: &tensors,
            buffers: &buffers,
            shared: &shared,
            barriers: &barriers,
            loops: &loops,
            statement_lines: &statement_lines,
            tiles: &tiles,
            threads: variant.threads,
            opcodes: &recorder.opcodes,
        };
        ctas.push(steps::build_cta(&layout, &events, req.max_steps));
    }
    let picked = traced.iter().position(|&c| c == picked_cta).unwrap_or(0);
    Ok(Trace {
        version: TRACE_VERSION,
        kernel: meta.name.clone(),
        entry: variant.entry.clone(),
        arch: format!("sm_{}", req.arch),
        source_file: req.file_name.clone(),
        source_lines,
        grid,
        threads: variant.threads,
        warps: variant.threads.div_ceil(32),
        dims: bound.dims.iter().map(|(k, &v)| (k.clone(), v)).collect(),
        tensors,
        shared,
        barriers,
        loops,
        ctas,
        picked,
    })
}

/// Bind the inputs to the parameters and pick the variant: inputs named
/// after a free `@autotune` constant choose its value.
fn bind_and_pick<'m>(
    meta: &'m KernelMeta,
    req: &Request,
) -> Result<(Bound, &'m VariantMeta), ExplainError> {
    let (tuning, inputs): (Vec<_>, Vec<_>) = req.inputs.iter().cloned().partition(|(name, _)| {
        meta.autotune.iter().any(|(n, _)| n == name) && !meta.params.iter().any(|p| &p.name == name)
    });
    let bound = bind(meta, &inputs, req.seed)?;
    let mut wanted = bound.dims.clone();
    for (name, value) in tuning {
        match value {
            Input::Scalar(v) if v >= 0.0 && v.fract() == 0.0 => {
                wanted.insert(name, v as u64);
            }
            _ => {
                return Err(ExplainError::Usage(format!(
                    "`{name}` is an @autotune constant of `{}`: give one of its values, {name}=N",
                    meta.name
                )))
            }
        }
    }
    let variant = pick_variant(meta, &wanted)?;
    Ok((bound, variant))
}

/// The picked CTA's linear index, and the number of CTAs in the grid.
fn resolve_cta(cta: Cta, grid: [u32; 3]) -> Result<(u32, u64), ExplainError> {
    let total_ctas = u64::from(grid[0]) * u64::from(grid[1]) * u64::from(grid[2]);
    if total_ctas == 0 {
        return Err(ExplainError::Usage(
            "the grid has no CTAs: every dimension must be at least 1".into(),
        ));
    }
    let picked_cta = match cta {
        Cta::Linear(c) if u64::from(c) < total_ctas => c,
        Cta::Linear(c) => {
            return Err(ExplainError::Usage(format!(
                "CTA {c} is outside the grid of {total_ctas} CTAs (pick 0 to {})",
                total_ctas - 1
            )))
        }
        Cta::Xyz(id) if (0..3).all(|i| id[i] < grid[i]) => {
            id[0] + id[1] * grid[0] + id[2] * grid[0] * grid[1]
        }
        Cta::Xyz(id) => {
            return Err(ExplainError::Usage(format!(
                "CTA ({}, {}, {}) is outside the grid of {} × {} × {} CTAs",
                id[0], id[1], id[2], grid[0], grid[1], grid[2]
            )))
        }
    };
    Ok((picked_cta, total_ctas))
}

/// The variant's shared-memory plan and barriers, as the trace shows them.
fn plan_of(variant: &VariantMeta) -> (SharedPlan, Vec<Barrier>) {
    let shared = SharedPlan {
        bytes: variant.shared_bytes,
        buffers: variant
            .shared_plan
            .iter()
            .map(|b| SharedBuffer {
                name: b.name.clone(),
                offset: b.offset,
                bytes: b.bytes,
                live_lines: b.live_lines,
            })
            .collect(),
    };
    let barriers: Vec<Barrier> = variant
        .barriers
        .iter()
        .map(|b| Barrier {
            line: b.line,
            kept: b.kept,
            reason: b.reason.clone(),
        })
        .collect();
    (shared, barriers)
}

/// The grid from the variant's `@grid` expressions.
fn grid_from_hir(
    meta: &KernelMeta,
    exprs: &[phobos_core::hir::Expr],
    env: &Env<'_>,
) -> Result<[u32; 3], ExplainError> {
    let mut grid = [1u32; 3];
    for (axis, e) in exprs.iter().take(3).enumerate() {
        let v = source_info::eval(e, env).ok_or_else(|| {
            ExplainError::Usage(format!(
                "the @grid of `{}` cannot be evaluated for these dims",
                meta.name
            ))
        })?;
        grid[axis] = u32::try_from(v).ok().filter(|&g| g >= 1).ok_or_else(|| {
            ExplainError::Usage(format!(
                "the @grid of `{}` gives {v} CTAs along axis {axis} for these dims",
                meta.name
            ))
        })?;
    }
    Ok(grid)
}

/// The grid from the kernel's `@grid` in the metadata, over the launch's
/// dims.
fn grid_of(meta: &KernelMeta, dims: &BTreeMap<String, u64>) -> Result<[u32; 3], ExplainError> {
    let exprs = meta.grid.as_ref().ok_or_else(|| {
        ExplainError::Usage(format!(
            "`{}` has no @grid: give the grid with --grid X[,Y,Z]",
            meta.name
        ))
    })?;
    let mut grid = [1u32; 3];
    for (axis, e) in exprs.iter().take(3).enumerate() {
        let v = eval_grid(e, dims).ok_or_else(|| {
            ExplainError::Usage(format!(
                "the @grid of `{}` cannot be evaluated for these dims",
                meta.name
            ))
        })?;
        grid[axis] = u32::try_from(v).ok().filter(|&g| g >= 1).ok_or_else(|| {
            ExplainError::Usage(format!(
                "the @grid of `{}` gives {v} CTAs along axis {axis} for these dims",
                meta.name
            ))
        })?;
    }
    Ok(grid)
}

fn eval_grid(e: &GridExpr, dims: &BTreeMap<String, u64>) -> Option<i64> {
    Some(match e {
        GridExpr::Const(c) => *c,
        GridExpr::Dim(d) => i64::try_from(*dims.get(d)?).ok()?,
        GridExpr::Binary(op, a, b) => {
            let (a, b) = (eval_grid(a, dims)?, eval_grid(b, dims)?);
            match op {
                BinOp::Add => a.checked_add(b)?,
                BinOp::Sub => a.checked_sub(b)?,
                BinOp::Mul => a.checked_mul(b)?,
                BinOp::Div => a.checked_div(b)?,
                BinOp::Rem => a.checked_rem(b)?,
                BinOp::Shl => a.checked_shl(u32::try_from(b).ok()?)?,
                BinOp::Shr => a.checked_shr(u32::try_from(b).ok()?)?,
                _ => return None,
            }
        }
        GridExpr::Cdiv(a, b) => {
            let (a, b) = (eval_grid(a, dims)?, eval_grid(b, dims)?);
            if b <= 0 {
                return None;
            }
            a.checked_add(b - 1)? / b
        }
        GridExpr::Min(a, b) => eval_grid(a, dims)?.min(eval_grid(b, dims)?),
        GridExpr::Max(a, b) => eval_grid(a, dims)?.max(eval_grid(b, dims)?),
    })
}

/// The 3-D id of a linear CTA index.
pub fn cta_id(c: u32, grid: [u32; 3]) -> [u32; 3] {
    let gx = grid[0].max(1);
    let gy = grid[1].max(1);
    [c % gx, (c / gx) % gy, c / (gx * gy)]
}

fn compile(req: &Request) -> Result<CompiledKernel, ExplainError> {
    let opts = CompileOptions { arch: req.arch };
    let (kernels, diags) = phobos_core::compile(&req.source, &req.file_name, &opts);
    if diags.iter().any(phobos_core::Diagnostic::is_error) {
        return Err(ExplainError::Compile(diags));
    }
    let names: Vec<String> = kernels.iter().map(|k| k.meta.name.clone()).collect();
    kernels
        .into_iter()
        .find(|k| k.meta.name == req.kernel)
        .ok_or_else(|| {
            ExplainError::Usage(if names.is_empty() {
                format!("{} has no kernels", req.file_name)
            } else {
                format!(
                    "{} has no kernel `{}`; it has {}",
                    req.file_name,
                    req.kernel,
                    names.join(", ")
                )
            })
        })
}

/// The inputs bound to the parameters.
struct Bound {
    tensors: Vec<TensorInfo>,
    /// Bytes of each tensor, in `tensors` order.
    data: Vec<Vec<u8>>,
    dims: BTreeMap<String, u64>,
    scalars: BTreeMap<String, f64>,
}

fn describe_param(kind: &ParamKindMeta) -> String {
    match kind {
        ParamKindMeta::Tensor { elem, dims, .. } => {
            let dims: Vec<String> = dims
                .iter()
                .map(|d| match d {
                    DimRefMeta::Named(n) => n.clone(),
                    DimRefMeta::Const(c) => c.to_string(),
                })
                .collect();
            format!("tensor<{}>[{}]", elem.name(), dims.join(", "))
        }
        ParamKindMeta::Scalar(t) => t.name().to_string(),
    }
}

fn bind(meta: &KernelMeta, inputs: &[(String, Input)], seed: u64) -> Result<Bound, ExplainError> {
    for (name, _) in inputs {
        if !meta.params.iter().any(|p| &p.name == name) {
            let names: Vec<&str> = meta.params.iter().map(|p| p.name.as_str()).collect();
            return Err(ExplainError::Usage(format!(
                "`{}` has no parameter `{name}`; its parameters are {}",
                meta.name,
                names.join(", ")
            )));
        }
    }
    let mut bound = Bound {
        tensors: vec![],
        data: vec![],
        dims: BTreeMap::new(),
        scalars: BTreeMap::new(),
    };
    let mut rng = XorShift::new(seed);
    for p in &meta.params {
        let given = inputs.iter().find(|(n, _)| n == &p.name).map(|(_, v)| v);
        let Some(given) = given else {
            let hint = match p.kind {
                ParamKindMeta::Tensor { .. } => format!("{0}=PATH.npy or {0}=shape:AxB", p.name),
                ParamKindMeta::Scalar(_) => format!("{}=VALUE", p.name),
            };
            return Err(ExplainError::Usage(format!(
                "no value for parameter `{}` ({}): give {hint}",
                p.name,
                describe_param(&p.kind)
            )));
        };
        match (&p.kind, given) {
            (
                ParamKindMeta::Tensor {
                    elem,
                    dims,
                    written,
                    ..
                },
                Input::Data {
                    shape,
                    elem: given_elem,
                    bytes,
                },
            ) => {
                if given_elem != elem {
                    return Err(ExplainError::Usage(format!(
                        "`{}` is a {} but its data holds {} elements",
                        p.name,
                        describe_param(&p.kind),
                        given_elem.name()
                    )));
                }
                bind_dims(&p.name, &p.kind, dims, shape, &mut bound.dims)?;
                let want = shape.iter().product::<u64>() * u64::from(elem.size());
                if bytes.len() as u64 != want {
                    return Err(ExplainError::Usage(format!(
                        "`{}` has {} bytes of data for shape {:?}, which needs {want}",
                        p.name,
                        bytes.len(),
                        shape
                    )));
                }
                bound
                    .tensors
                    .push(tensor_info(&p.name, *elem, shape, *written));
                bound.data.push(bytes.clone());
            }
            (
                ParamKindMeta::Tensor {
                    elem,
                    dims,
                    written,
                    ..
                },
                Input::Random { shape },
            ) => {
                bind_dims(&p.name, &p.kind, dims, shape, &mut bound.dims)?;
                let count = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
                let bytes = count
                    .and_then(|c| c.checked_mul(u64::from(elem.size())))
                    .filter(|&b| b <= MAX_RANDOM_BYTES)
                    .ok_or_else(|| {
                        ExplainError::Usage(format!(
                            "`{}` of shape {:?} is too large to simulate",
                            p.name, shape
                        ))
                    })?;
                bound
                    .tensors
                    .push(tensor_info(&p.name, *elem, shape, *written));
                bound
                    .data
                    .push(random_bytes(*elem, bytes as usize, &mut rng));
            }
            (ParamKindMeta::Scalar(_), Input::Scalar(v)) => {
                bound.scalars.insert(p.name.clone(), *v);
            }
            (kind, _) => {
                return Err(ExplainError::Usage(format!(
                    "`{}` is a {}: give {}",
                    p.name,
                    describe_param(kind),
                    match kind {
                        ParamKindMeta::Tensor { .. } => "a .npy file or shape:AxB",
                        ParamKindMeta::Scalar(_) => "a number",
                    }
                )))
            }
        }
    }
    Ok(bound)
}

fn bind_dims(
    name: &str,
    kind: &ParamKindMeta,
    dims: &[DimRefMeta],
    shape: &[u64],
    known: &mut BTreeMap<String, u64>,
) -> Result<(), ExplainError> {
    if dims.len() != shape.len() {
        return Err(ExplainError::Usage(format!(
            "`{name}` is a {} ({} dims) but was given shape {:?}",
            describe_param(kind),
            dims.len(),
            shape
        )));
    }
    for (axis, (d, &n)) in dims.iter().zip(shape).enumerate() {
        match d {
            DimRefMeta::Const(c) if *c != n => {
                return Err(ExplainError::Usage(format!(
                    "axis {axis} of `{name}` must be {c} ({}), not {n}",
                    describe_param(kind)
                )))
            }
            DimRefMeta::Const(_) => {}
            DimRefMeta::Named(dim) => match known.get(dim) {
                Some(&prev) if prev != n => {
                    return Err(ExplainError::Usage(format!(
                    "dim {dim} is {prev} from an earlier tensor but {n} on axis {axis} of `{name}`"
                )))
                }
                _ => {
                    known.insert(dim.clone(), n);
                }
            },
        }
    }
    Ok(())
}

fn tensor_info(name: &str, elem: ScalarTy, shape: &[u64], written: bool) -> TensorInfo {
    let cols = shape.last().copied().unwrap_or(1);
    let rows = shape[..shape.len().saturating_sub(1)]
        .iter()
        .product::<u64>();
    TensorInfo {
        name: name.to_string(),
        elem: elem.name().to_string(),
        elem_bytes: elem.size(),
        shape: shape.to_vec(),
        rows: rows.max(1),
        cols: cols.max(1),
        written,
    }
}

/// The variant whose autotuned dims equal the launch's dims and whose free
/// tuning constants equal the values asked for (`BLOCK=128`); a constant
/// not asked for takes its first candidate.
fn pick_variant<'m>(
    meta: &'m KernelMeta,
    dims: &BTreeMap<String, u64>,
) -> Result<&'m VariantMeta, ExplainError> {
    let fits = |v: &VariantMeta| {
        v.values.iter().all(|(name, value)| match dims.get(name) {
            Some(&d) => d as i64 == *value,
            None => true,
        })
    };
    meta.variants.iter().find(|v| fits(v)).ok_or_else(|| {
        let tuned: Vec<String> = meta
            .autotune
            .iter()
            .filter(|(n, _)| dims.contains_key(n))
            .map(|(n, vals)| {
                let vals: Vec<String> = vals.iter().map(i64::to_string).collect();
                format!(
                    "{n} = {} (compiled for {n} in [{}])",
                    dims.get(n).copied().unwrap_or(0),
                    vals.join(", ")
                )
            })
            .collect();
        ExplainError::Usage(format!(
            "no compiled variant of `{}` fits: {}",
            meta.name,
            tuned.join("; ")
        ))
    })
}

/// Loops and tiles from the checked kernel of this variant, with the dim
/// names by `DimId` and the parameter names by `ParamId`.
type HirInfo = (source_info::SourceInfo, Vec<String>, Vec<String>);

fn hir_info(req: &Request, meta: &KernelMeta, variant: &VariantMeta) -> Option<HirInfo> {
    let (kernels, _) = phobos_core::check_source(&req.source);
    let checked = kernels.into_iter().find(|k| k.name == meta.name)?;
    let kernel = checked
        .variants
        .iter()
        .find(|k| k.variant == variant.values)
        .or_else(|| checked.variants.first())?;
    let info = source_info::collect(kernel, &req.source);
    let dims = kernel.dims.iter().map(|d| d.name.clone()).collect();
    let params = kernel.params.iter().map(|p| p.name.clone()).collect();
    Some((info, dims, params))
}

/// A small, fast generator for the values of `shape:` inputs; statistical
/// quality does not matter, reproducibility does.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Random elements: floats in [-1, 1), integers in [-8, 8) (unsigned in
/// [0, 16)), booleans either way; small so sums stay exact.
fn random_bytes(elem: ScalarTy, len: usize, rng: &mut XorShift) -> Vec<u8> {
    let n = len / elem.size().max(1) as usize;
    let mut out = Vec::with_capacity(len);
    for _ in 0..n {
        let small = (rng.next() % 16) as i64 - if elem.is_signed() { 8 } else { 0 };
        match elem {
            ScalarTy::Bool => out.push((rng.next() & 1) as u8),
            ScalarTy::I8 | ScalarTy::U8 => out.push(small as u8),
            ScalarTy::I16 | ScalarTy::U16 => out.extend((small as i16).to_le_bytes()),
            ScalarTy::I32 | ScalarTy::U32 => out.extend((small as i32).to_le_bytes()),
            ScalarTy::I64 | ScalarTy::U64 => out.extend(small.to_le_bytes()),
            ScalarTy::F16 => out.extend(half::f16::from_f64(rng.unit()).to_le_bytes()),
            ScalarTy::BF16 => out.extend(half::bf16::from_f64(rng.unit()).to_le_bytes()),
            ScalarTy::F32 => out.extend((rng.unit() as f32).to_le_bytes()),
            ScalarTy::F64 => out.extend(rng.unit().to_le_bytes()),
        }
    }
    out.resize(len, 0);
    out
}

/// Run the variant on the simulator; returns each tensor's base address.
/// Tensors are allocated in `bound.tensors` order, so a buffer index is a
/// tensor index.
fn simulate(
    ptx: &str,
    variant: &VariantMeta,
    grid: [u32; 3],
    bound: &Bound,
    recorder: &mut Recorder,
) -> Result<Vec<u64>, ExplainError> {
    let run_err = |e: SimError| ExplainError::Run(e.to_string());
    let module = Module::parse(ptx).map_err(run_err)?;
    let mut device = Device::new();
    let mut ids = Vec::with_capacity(bound.tensors.len());
    let mut bases = Vec::with_capacity(bound.tensors.len());
    for (t, data) in bound.tensors.iter().zip(&bound.data) {
        let id = device.alloc_from(&t.name, data).map_err(run_err)?;
        bases.push(device.address(id).map_err(run_err)?);
        ids.push(id);
    }
    let mut args = Vec::with_capacity(variant.ptx_params.len());
    for p in &variant.ptx_params {
        args.push(match p {
            PtxParam::TensorPtr(name) => {
                let i = bound
                    .tensors
                    .iter()
                    .position(|t| &t.name == name)
                    .ok_or_else(|| {
                        ExplainError::Run(format!(
                            "the PTX takes tensor `{name}`, which the kernel does not declare"
                        ))
                    })?;
                KernelArg::Buffer(ids[i])
            }
            PtxParam::Dim(name) => {
                let v = bound.dims.get(name).copied().unwrap_or(0);
                let v = i32::try_from(v).map_err(|_| {
                    ExplainError::Usage(format!(
                        "dim {name} = {v} does not fit the kernel's 32-bit index arithmetic"
                    ))
                })?;
                KernelArg::I32(v)
            }
            PtxParam::Scalar(name, ty) => {
                scalar_arg(*ty, bound.scalars.get(name).copied().unwrap_or(0.0))
            }
        });
    }
    let block = [variant.threads, 1, 1];
    device
        .launch(
            &module,
            &variant.entry,
            grid,
            block,
            &args,
            &LaunchOptions::default(),
            Some(recorder),
        )
        .map_err(run_err)?;
    Ok(bases)
}

/// A scalar parameter's value as the PTX parameter type wants it.
fn scalar_arg(ty: ScalarTy, v: f64) -> KernelArg {
    match ty {
        ScalarTy::Bool => KernelArg::U8(u8::from(v != 0.0)),
        ScalarTy::I8 => KernelArg::I8(v as i8),
        ScalarTy::U8 => KernelArg::U8(v as u8),
        ScalarTy::I16 => KernelArg::I16(v as i16),
        ScalarTy::U16 => KernelArg::U16(v as u16),
        ScalarTy::I32 => KernelArg::I32(v as i32),
        ScalarTy::U32 => KernelArg::U32(v as u32),
        ScalarTy::I64 => KernelArg::I64(v as i64),
        ScalarTy::U64 => KernelArg::U64(v as u64),
        ScalarTy::F16 => KernelArg::Bits16(half::f16::from_f64(v).to_bits()),
        ScalarTy::BF16 => KernelArg::Bits16(half::bf16::from_f64(v).to_bits()),
        ScalarTy::F32 => KernelArg::F32(v as f32),
        ScalarTy::F64 => KernelArg::F64(v),
    }
}
