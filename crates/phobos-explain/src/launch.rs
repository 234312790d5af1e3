//! From a request to a trace: compile the kernel for the target, bind the
//! inputs to the parameters (dims from the shapes, the autotune variant from
//! the dims, random values for shapes given alone), run the simulator with a
//! recording observer on the traced CTAs, and build their steps.

use crate::model::*;
use crate::record::{CtaEvents, Recorder};
use crate::source_info::{self, Env, SourceInfo};
use crate::steps::{self, BufferMap, Layout};
use crate::{Cta, ExplainError, Input, Request};
use phobos_core::ast::ScalarTy;
use phobos_core::binding::{describe_param, ArgShape, BindError, LaunchRequest};
use phobos_core::meta::{KernelMeta, ParamKindMeta, VariantMeta};
use phobos_core::scalar_value::ScalarValue;
use phobos_core::{CompileOptions, CompiledKernel};
use phobos_profile::{CtaSample, Profiler};
use phobos_runtime::sim_launch::{self, Plan};
use phobos_sim::{
    Device, KernelArg, LaunchOptions, Module, Observer, SimError, SplitObserver, StepInfo,
};
use std::collections::BTreeMap;

/// The most bytes the `shape:` inputs of one run may ask for, all of them
/// together (2 GiB).
const MAX_RANDOM_BYTES: u64 = 1 << 31;

/// Events recorded per CTA at most; beyond it the trace is cut short.
const MAX_EVENTS_PER_CTA: usize = 300_000;

/// Compile, run and step through the kernel as the request says.
pub fn trace(req: &Request) -> Result<Trace, ExplainError> {
    let compiled = compile(req)?;
    let meta = &compiled.meta;
    let (bound, plan) = bind_and_pick(meta, req)?;
    let (variant, grid) = (plan.variant, plan.grid);
    let (source, dim_ids, param_ids) = hir_info(req, meta, variant).unwrap_or_default();
    let SourceInfo {
        loops,
        statement_lines,
        tiles: tile_stmts,
        accumulators,
        rings: staged,
    } = source;
    let dim_values: Vec<i64> = dim_ids
        .iter()
        .map(|name| bound.dims.get(name).map_or(0, |&v| v as i64))
        .collect();
    let scalar_values: Vec<Option<f64>> = param_ids
        .iter()
        .map(|name| bound.scalars.get(name).map(|v| v.to_f64()))
        .collect();
    let (picked_cta, total_ctas) = resolve_cta(req.cta, grid)?;

    let traced: Vec<u32> = if total_ctas <= u64::from(req.max_ctas.max(1)) {
        (0..total_ctas as u32).collect()
    } else {
        vec![picked_cta]
    };
    // The recorder keeps the traced CTAs' instructions; the profiler counts
    // every CTA's for the heat column.
    let mut watch = RecordAndProfile {
        recorder: Recorder::new(traced.clone(), MAX_EVENTS_PER_CTA),
        profiler: Profiler::new(total_ctas, CtaSample::All),
    };
    let bases = simulate(
        &compiled.ptx,
        &plan,
        &bound,
        Watch::<Profiler>::One(&mut watch),
    )?;
    let RecordAndProfile {
        mut recorder,
        profiler,
    } = watch;
    let heat = profiler
        .lines()
        .into_iter()
        .filter(|&(line, _)| line > 0)
        .map(|(line, c)| LineHeat::new(line, &(&c).into()))
        .collect();

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

    let rings = if req.arch >= 80 {
        rings_of(&staged, &loops, &shared)
    } else {
        Vec::new()
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
        let rings = &rings;
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
            accumulators: &accumulators,
            rings,
        };
        ctas.push(steps::build_cta(&layout, &events, req.max_steps));
    }
    let picked = traced.iter().position(|&c| c == picked_cta).unwrap_or(0);
    Ok(Trace {
        rings,
        version: TRACE_VERSION,
        kernel: meta.name.clone(),
        entry: variant.entry.clone(),
        arch: phobos_core::arch::name(req.arch),
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
        heat,
        accumulators,
    })
}

/// Both observers of [`trace`]: the recorder sees the CTAs it asked for,
/// the profiler every CTA.
struct RecordAndProfile {
    recorder: Recorder,
    profiler: Profiler,
}

impl Observer for RecordAndProfile {
    fn wants_cta(&mut self, cta: u32) -> bool {
        // Both are asked, so each knows which CTAs it will see.
        let recorded = self.recorder.wants_cta(cta);
        self.profiler.wants_cta(cta) || recorded
    }

    fn step(&mut self, info: &StepInfo<'_>) {
        self.recorder.step(info);
        self.profiler.step(info);
    }
}

/// A launch [`run_observed`] made: what was compiled and how it ran.
#[derive(Clone, Debug)]
pub struct Observed {
    pub meta: KernelMeta,
    /// The PTX of every variant, as compiled for the request's target.
    pub ptx: String,
    /// The variant that ran and its grid.
    pub variant: VariantMeta,
    pub grid: [u32; 3],
}

/// Compile, bind and run the kernel as [`trace`] does (the same inputs,
/// binding and variant choice), with the observer `make` builds from the
/// chosen variant and grid watching instead of the step recorder; for
/// tools such as `phobos profile`.
pub fn run_observed<O: Observer>(
    req: &Request,
    make: impl FnOnce(&VariantMeta, [u32; 3]) -> O,
) -> Result<(Observed, O), ExplainError> {
    run_watched(req, make, |o| Watch::<Profiler>::One(o))
}

/// [`run_observed`] with an observer that is split over every core
/// (`phobos_sim::Device::launch_split`), as plain simulation runs.
pub fn run_split<O: SplitObserver>(
    req: &Request,
    make: impl FnOnce(&VariantMeta, [u32; 3]) -> O,
) -> Result<(Observed, O), ExplainError> {
    run_watched(req, make, |o| Watch::Split(o))
}

fn run_watched<O, S: SplitObserver>(
    req: &Request,
    make: impl FnOnce(&VariantMeta, [u32; 3]) -> O,
    watch: impl FnOnce(&mut O) -> Watch<'_, S>,
) -> Result<(Observed, O), ExplainError> {
    let compiled = compile(req)?;
    let (bound, plan) = bind_and_pick(&compiled.meta, req)?;
    let (variant, grid) = (plan.variant.clone(), plan.grid);
    let mut observer = make(&variant, grid);
    simulate(&compiled.ptx, &plan, &bound, watch(&mut observer))?;
    drop(plan);
    let observed = Observed {
        meta: compiled.meta,
        ptx: compiled.ptx,
        variant,
        grid,
    };
    Ok((observed, observer))
}

/// How a launch is watched: by one observer on the calling thread, or by
/// a split observer on every core.
enum Watch<'o, S> {
    One(&'o mut dyn Observer),
    Split(&'o mut S),
}

/// Bind the inputs to the parameters, pick the variant and its grid on the
/// one simulated launch road (`phobos_runtime::sim_launch`, against the
/// target's limits): inputs named after a free `@autotune` constant choose
/// its value.
fn bind_and_pick<'m>(
    meta: &'m KernelMeta,
    req: &Request,
) -> Result<(Bound, Plan<'m>), ExplainError> {
    let (tuning, inputs): (Vec<_>, Vec<_>) = req.inputs.iter().cloned().partition(|(name, _)| {
        meta.autotune.iter().any(|(n, _)| n == name) && !meta.params.iter().any(|p| &p.name == name)
    });
    let mut picked = Vec::new();
    for (name, value) in tuning {
        // Candidates are i32 (the checker refuses larger ones), so the
        // value is exact in f64.
        let parsed = match &value {
            Input::Scalar(text) => ScalarValue::parse(&name, ScalarTy::I32, text).ok(),
            _ => None,
        };
        let Some(v) = parsed else {
            return Err(ExplainError::Usage(format!(
                "`{name}` is an @autotune constant of `{}`: give one of its values, {name}=N",
                meta.name
            )));
        };
        picked.push((name, v.to_f64() as i64));
    }
    let mut bound = read_inputs(meta, &inputs)?;
    let shapes = bound.shapes.clone();
    let args: Vec<ArgShape<'_>> = meta
        .params
        .iter()
        .zip(&shapes)
        .map(|(p, shape)| {
            let tensor = match (&p.kind, shape) {
                (ParamKindMeta::Tensor { elem, .. }, Some(shape)) => Some((*elem, &shape[..])),
                _ => None,
            };
            ArgShape::of_param(&p.kind, tensor)
        })
        .collect();
    // A constant not asked for takes its first candidate.
    let plan = Plan::bind(
        meta,
        &LaunchRequest {
            args: &args,
            grid: req.grid,
            picked: &picked,
            limits: sim_launch::limits(req.arch),
        },
    )
    .map_err(|e| refused(meta, e))?;
    // Every CTA runs (even when one is traced or the profile samples), so
    // the budget is checked before the inputs are made.
    phobos_sim::check_work(
        plan.grid,
        plan.variant.threads,
        req.max_work,
        phobos_sim::max_work_flag,
    )
    .map_err(ExplainError::Usage)?;
    bound.dims = plan
        .binding
        .dims
        .iter()
        .map(|d| (d.name.to_string(), d.value))
        .collect();
    fill_random(meta, &inputs, &mut bound, req.seed)?;
    Ok((bound, plan))
}

/// What explain says when the binding refuses a launch: the binding's
/// words (the one wording of every refusal), and a note naming `--grid`
/// for a grid refusal.
fn refused(meta: &KernelMeta, e: BindError) -> ExplainError {
    let note = match e {
        BindError::MissingGrid | BindError::InvalidGrid(_) | BindError::GridTooLarge { .. } => {
            "\n  note: give the grid with --grid X[,Y,Z]"
        }
        _ => "",
    };
    ExplainError::Usage(format!("kernel `{}`: {e}{note}", meta.name))
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

/// The `stages S` loops as rings on the shared plan (sm_80 and later: on
/// sm_75 the compiler keeps plain copies): each staged tile's buffer holds
/// its `S` stages one after another.
fn rings_of(
    staged: &[source_info::StagedLoop],
    loops: &[LoopInfo],
    shared: &SharedPlan,
) -> Vec<Ring> {
    staged
        .iter()
        .filter_map(|s| {
            let r#loop = loops.iter().position(|l| l.line == s.line)?;
            let buffers = s
                .copies
                .iter()
                .filter_map(|(_, name)| {
                    let b = shared.buffers.iter().find(|b| &b.name == name)?;
                    Some(RingBuffer {
                        name: name.clone(),
                        offset: b.offset,
                        stage_bytes: b.bytes / s.stages.max(1),
                    })
                })
                .collect();
            Some(Ring {
                line: s.line,
                r#loop,
                stages: s.stages,
                copy_lines: s.copies.iter().map(|(l, _)| *l).collect(),
                buffers,
            })
        })
        .collect()
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
                padding: b.padding.and_then(|p| SharedPadding::of(p, b.bytes)),
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

/// The 3-D id of a linear CTA index.
pub fn cta_id(c: u32, grid: [u32; 3]) -> [u32; 3] {
    let gx = grid[0].max(1);
    let gy = grid[1].max(1);
    [c % gx, (c / gx) % gy, c / (gx * gy)]
}

fn compile(req: &Request) -> Result<CompiledKernel, ExplainError> {
    let opts = CompileOptions::for_arch(req.arch);
    let (kernels, diags) = phobos_core::compile(&req.source, &req.file_name, &opts);
    if diags.iter().any(phobos_core::Diagnostic::is_error) {
        return Err(ExplainError::Compile(diags));
    }
    phobos_core::select_kernel(kernels, req.kernel.as_deref(), &req.file_name)
        .map_err(ExplainError::Usage)
}

/// The inputs bound to the parameters.
struct Bound {
    /// Each parameter's shape, `None` for scalars.
    shapes: Vec<Option<Vec<u64>>>,
    tensors: Vec<TensorInfo>,
    /// Bytes of each tensor, in `tensors` order.
    data: Vec<Vec<u8>>,
    dims: BTreeMap<String, u64>,
    scalars: BTreeMap<String, ScalarValue>,
}

/// Reads each parameter's input: its shape and bytes (the data given; a
/// `shape:` input gets its random values once the binding accepted the
/// shapes, in [`fill_random`]), or its scalar value.
fn read_inputs(meta: &KernelMeta, inputs: &[(String, Input)]) -> Result<Bound, ExplainError> {
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
        shapes: vec![],
        tensors: vec![],
        data: vec![],
        dims: BTreeMap::new(),
        scalars: BTreeMap::new(),
    };
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
                ParamKindMeta::Tensor { elem, written, .. },
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
                let want = tensor_bytes(shape, *elem);
                if want != Some(bytes.len() as u64) {
                    return Err(ExplainError::Usage(format!(
                        "`{}` has {} bytes of data for shape {:?}, which needs {}",
                        p.name,
                        bytes.len(),
                        shape,
                        want.map_or("more than 2^64".to_string(), |w| w.to_string())
                    )));
                }
                bound.shapes.push(Some(shape.clone()));
                bound
                    .tensors
                    .push(tensor_info(&p.name, *elem, shape, *written));
                bound.data.push(bytes.clone());
            }
            (ParamKindMeta::Tensor { elem, written, .. }, Input::Random { shape }) => {
                bound.shapes.push(Some(shape.clone()));
                bound
                    .tensors
                    .push(tensor_info(&p.name, *elem, shape, *written));
                bound.data.push(Vec::new());
            }
            (ParamKindMeta::Scalar(ty), Input::Scalar(text)) => {
                let v = ScalarValue::parse(&p.name, *ty, text).map_err(ExplainError::Usage)?;
                bound.shapes.push(None);
                bound.scalars.insert(p.name.clone(), v);
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

/// Bytes of a tensor of this shape, if that fits 64 bits.
fn tensor_bytes(shape: &[u64], elem: ScalarTy) -> Option<u64> {
    shape
        .iter()
        .try_fold(u64::from(elem.size()), |a, &d| a.checked_mul(d))
}

/// Random values for the tensors given as `shape:`, in parameter order.
fn fill_random(
    meta: &KernelMeta,
    inputs: &[(String, Input)],
    bound: &mut Bound,
    seed: u64,
) -> Result<(), ExplainError> {
    let random: Vec<(usize, &str, ScalarTy, &[u64])> = meta
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKindMeta::Tensor { .. }))
        .enumerate()
        .filter_map(
            |(i, p)| match (&p.kind, inputs.iter().find(|(n, _)| n == &p.name)) {
                (ParamKindMeta::Tensor { elem, .. }, Some((_, Input::Random { shape }))) => {
                    Some((i, p.name.as_str(), *elem, &shape[..]))
                }
                _ => None,
            },
        )
        .collect();
    // The limit is on all of them together, checked before any is made:
    // two tensors of 1.5 GiB are 3 GiB of memory.
    let mut total: u64 = 0;
    let mut sizes = Vec::with_capacity(random.len());
    for &(_, name, elem, shape) in &random {
        let bytes = tensor_bytes(shape, elem).filter(|&b| b <= MAX_RANDOM_BYTES);
        let Some(bytes) = bytes else {
            return Err(ExplainError::Usage(format!(
                "`{name}` of shape {shape:?} is too large to simulate (the `shape:` inputs may \
                 take {} GiB together)",
                MAX_RANDOM_BYTES >> 30
            )));
        };
        total += bytes;
        sizes.push(bytes);
    }
    if total > MAX_RANDOM_BYTES {
        let each: Vec<String> = random
            .iter()
            .zip(&sizes)
            .map(|(&(_, name, _, _), &b)| format!("`{name}` {} MiB", b.div_ceil(1 << 20)))
            .collect();
        return Err(ExplainError::Usage(format!(
            "the `shape:` inputs together are too large to simulate: {} MiB ({}), more than \
             the {} GiB they may take together",
            total.div_ceil(1 << 20),
            each.join(", "),
            MAX_RANDOM_BYTES >> 30
        )));
    }
    let mut rng = XorShift::new(seed);
    for (&(i, _, elem, _), &bytes) in random.iter().zip(&sizes) {
        bound.data[i] = random_bytes(elem, bytes as usize, &mut rng);
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
            ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => {
                out.push(phobos_core::f8::encode(rng.unit(), elem))
            }
        }
    }
    out.resize(len, 0);
    out
}

/// Run the planned variant on the simulator; returns each tensor's base
/// address. Tensors are allocated in `bound.tensors` order, so a buffer
/// index is a tensor index.
fn simulate<S: SplitObserver>(
    ptx: &str,
    plan: &Plan<'_>,
    bound: &Bound,
    watch: Watch<'_, S>,
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
    let params = &plan.binding.meta().params;
    let args = plan
        .kernel_args(|i| {
            let name = &params[i].name;
            match bound.tensors.iter().position(|t| &t.name == name) {
                Some(t) => Some(KernelArg::Buffer(ids[t])),
                None => bound
                    .scalars
                    .get(name)
                    .map(|v| KernelArg::Bytes(v.to_le_bytes())),
            }
        })
        .map_err(|e| ExplainError::Run(e.to_string()))?;
    let opts = LaunchOptions::default();
    match watch {
        Watch::One(o) => plan.run(&device, &module, &args, &opts, Some(o)),
        Watch::Split(o) => plan.run_split(&device, &module, &args, &opts, o),
    }
    .map_err(run_err)?;
    Ok(bases)
}
