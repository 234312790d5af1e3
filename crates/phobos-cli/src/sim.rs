//! `phobos sim FILE [--kernel NAME] [--grid X[,Y[,Z]]] PARAM=PATH.npy ...
//! PARAM=VALUE ... --out DIR [--no-check] [--max-steps N] [--threads N]`:
//! compile a kernel, run it on the CPU simulator with `.npy` tensors and
//! scalar values, and write every tensor the kernel writes to `DIR/PARAM.npy`.
//!
//! Dims are inferred from the `.npy` shapes (two tensors that disagree on a
//! dim are an error naming both); each `.npy` dtype must match its tensor's
//! element type (`bf16` tensors are read and written as `uint16` bits, since
//! numpy has no bfloat16). The grid is `--grid` or the kernel's `@grid`.
//! Exit codes: 0 success, 1 a compile error, a failed check or a simulator
//! error in the kernel, 2 usage and IO errors.

use crate::failure::Failure;
use phobos_core::ast::ScalarTy;
use phobos_core::binding::{self, ArgShape, BindError, LaunchRequest};
use phobos_core::meta::{KernelMeta, ParamKindMeta};
use phobos_core::scalar_value::ScalarValue;
use phobos_core::CompiledKernel;
use phobos_runtime::sim_launch::{self, Plan};
use phobos_sim::{BufferId, Device, KernelArg, LaunchOptions, LaunchStats, Module, SimError};
use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The .pho file.
    pub file: PathBuf,
    /// Parameter bindings: `TENSOR=PATH.npy` for every tensor parameter
    /// (outputs carry their initial contents) and `SCALAR=VALUE`.
    pub bindings: Vec<String>,
    /// The kernel to run; may be left out when the file has one kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    /// CTAs in the grid, `X`, `X,Y` or `X,Y,Z`; defaults to the kernel's `@grid`.
    #[arg(long, value_parser = crate::args::parse_grid)]
    pub grid: Option<[u32; 3]>,
    /// Directory for the written tensors (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Turn off racecheck, initcheck and the warp-synchronous checks.
    #[arg(long)]
    pub no_check: bool,
    /// The most instructions one warp may issue before the run fails.
    #[arg(long, default_value_t = LaunchOptions::default().max_steps)]
    pub max_steps: u64,
    /// Host threads to simulate on (0: all cores; more than the cores are
    /// not used).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// The most simulated threads (CTAs times threads per CTA) one run may
    /// have; a larger launch is refused before it starts.
    #[arg(long, default_value_t = phobos_sim::DEFAULT_MAX_WORK)]
    pub max_work: u64,
    /// Target, e.g. sm_75 (the default) or 90.
    #[arg(long, default_value = "sm_75")]
    pub arch: String,
    /// Runs the variant with this value of a free `@autotune` constant,
    /// `NAME=V` (repeatable); otherwise each takes its first value.
    #[arg(long = "define", value_name = "NAME=V")]
    pub defines: Vec<String>,
}

pub fn run(a: Args) -> u8 {
    let result = run_inner(&a)
        .and_then(|summary| crate::out::print(&format!("{summary}\n")).map_err(Failure::usage));
    crate::failure::exit_code(result)
}

/// A tensor argument read from its `.npy`.
struct TensorArg {
    elem: ScalarTy,
    shape: Vec<u64>,
    bytes: Vec<u8>,
    written: bool,
}

/// Every parameter's value, by name.
struct Values {
    tensors: BTreeMap<String, TensorArg>,
    scalars: BTreeMap<String, ScalarValue>,
}

/// Read, compile, select, bind, launch, write; each step below.
fn run_inner(a: &Args) -> Result<String, Failure> {
    let arch = phobos_core::parse_arch(&a.arch).map_err(Failure::usage)?;
    let bindings = crate::args::parse_bindings(&a.bindings).map_err(Failure::usage)?;
    // The output directory is checked before the simulation, not after it.
    check_out_dir(&a.out)?;
    let kernels = crate::ptx::compile_file(&a.file, arch)?;
    let file_name = a.file.display().to_string();
    let kernel = phobos_core::select_kernel(kernels, a.kernel.as_deref(), &file_name)
        .map_err(Failure::usage)?;
    let meta = &kernel.meta;
    let Values { tensors, scalars } = read_args(meta, &bind(&bindings, meta)?)?;
    let picked = crate::args::parse_defines(&a.defines).map_err(Failure::usage)?;
    let plan = plan(meta, &tensors, a.grid, &picked, arch, a.max_work)?;
    let (dev, buffers, stats) = simulate(a, &kernel, &plan, &tensors, &scalars)?;
    let wrote = write_outputs(&a.out, &dev, &buffers, &tensors, &stats)?;
    let (variant, grid) = (plan.variant, plan.grid);
    Ok(format!(
        "{}: grid ({}, {}, {}) x {} threads, {} thread instructions, checks {}; wrote {}",
        variant.entry,
        grid[0],
        grid[1],
        grid[2],
        variant.threads,
        stats.thread_instructions,
        if a.no_check { "off" } else { "passed" },
        if wrote.is_empty() {
            "nothing".to_string()
        } else {
            wrote.join(", ")
        }
    ))
}

/// Every parameter's value: tensors read from their `.npy` files, scalars
/// parsed by their type. A parameter without one is an error naming all
/// that lack one.
fn read_args(
    meta: &KernelMeta,
    bindings: &BTreeMap<String, &crate::args::Value>,
) -> Result<Values, Failure> {
    let missing: Vec<String> = meta
        .params
        .iter()
        .filter(|p| !bindings.contains_key(&p.name))
        .map(|p| format!("`{}` ({})", p.name, wanted(&p.kind)))
        .collect();
    if !missing.is_empty() {
        return Err(Failure::usage(format!(
            "missing a value for parameter{} {}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        )));
    }
    let mut tensors = BTreeMap::new();
    let mut scalars = BTreeMap::new();
    for p in &meta.params {
        let Some(value) = bindings.get(&p.name) else {
            continue;
        };
        match &p.kind {
            ParamKindMeta::Tensor { elem, written, .. } => {
                let (shape, bytes) = tensor_npy(value, &p.name, *elem)?;
                tensors.insert(
                    p.name.clone(),
                    TensorArg {
                        elem: *elem,
                        shape,
                        bytes,
                        written: *written,
                    },
                );
            }
            ParamKindMeta::Scalar(ty) => {
                let crate::args::Value::Scalar(text) = value else {
                    return Err(Failure::usage(format!("scalar `{}` needs a value", p.name)));
                };
                let value = ScalarValue::parse(&p.name, *ty, text).map_err(Failure::usage)?;
                scalars.insert(p.name.clone(), value);
            }
        }
    }
    Ok(Values { tensors, scalars })
}

/// The launch bound by the one simulated launch road
/// (`phobos_runtime::sim_launch`) against `sm_{arch}`'s limits: the
/// variant, its grid and block, checked against the `--max-work` budget.
fn plan<'m>(
    meta: &'m KernelMeta,
    tensors: &BTreeMap<String, TensorArg>,
    grid: Option<[u32; 3]>,
    picked: &[(String, i64)],
    arch: u32,
    max_work: u64,
) -> Result<Plan<'m>, Failure> {
    let args: Vec<ArgShape<'_>> = meta
        .params
        .iter()
        .map(|p| {
            let tensor = match (&p.kind, tensors.get(&p.name)) {
                (ParamKindMeta::Tensor { .. }, Some(t)) => Some((t.elem, &t.shape[..])),
                _ => None,
            };
            ArgShape::of_param(&p.kind, tensor)
        })
        .collect();
    let request = LaunchRequest {
        args: &args,
        grid,
        picked,
        limits: sim_launch::limits(arch),
    };
    let plan = Plan::bind(meta, &request).map_err(|e| refusal(meta, tensors, e))?;
    phobos_sim::check_work(
        plan.grid,
        plan.variant.threads,
        max_work,
        phobos_sim::max_work_flag,
    )
    .map_err(Failure::usage)?;
    Ok(plan)
}

/// Loads the PTX, allocates the tensors, and runs the planned launch with
/// its `.param`s in the binding's order.
fn simulate(
    a: &Args,
    kernel: &CompiledKernel,
    plan: &Plan<'_>,
    tensors: &BTreeMap<String, TensorArg>,
    scalars: &BTreeMap<String, ScalarValue>,
) -> Result<(Device, BTreeMap<String, BufferId>, LaunchStats), Failure> {
    let (meta, variant) = (&kernel.meta, plan.variant);
    let module = Module::parse(&kernel.ptx)
        .map_err(|e| Failure::kernel(format!("the simulator cannot load the compiled PTX: {e}")))?;
    let mut dev = Device::new();
    let mut buffers = BTreeMap::new();
    for (name, t) in tensors {
        let id = dev.alloc_from(name, &t.bytes).map_err(Failure::usage)?;
        buffers.insert(name.clone(), id);
    }
    let args = plan
        .kernel_args(|i| {
            let name = &meta.params[i].name;
            match (buffers.get(name), scalars.get(name)) {
                (Some(&id), _) => Some(KernelArg::Buffer(id)),
                (None, Some(v)) => Some(KernelArg::Bytes(v.to_le_bytes())),
                (None, None) => None,
            }
        })
        .map_err(|e| refusal(meta, tensors, e))?;
    // More host threads than cores only costs memory (and 100000 of them
    // fail to spawn).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let opts = LaunchOptions {
        checks: !a.no_check,
        max_steps: a.max_steps,
        threads: a.threads.min(cores),
        ..LaunchOptions::default()
    };
    let grid = plan.grid;
    let ctas = grid.iter().map(|&g| u64::from(g)).product::<u64>();
    let progress = crate::progress::Progress::start(format!(
        "simulating `{}`: {ctas} CTAs x {} threads",
        variant.entry, variant.threads
    ));
    let result = plan.run(&dev, &module, &args, &opts, None);
    progress.stop();
    let stats = result.map_err(|e| match e {
        SimError::Check(mut r) => {
            sim_launch::name_shared_buffer(&mut r, variant);
            if r.kind == phobos_sim::CheckKind::StepLimit {
                // The library names its own option; on the command line
                // the limit is `--max-steps`.
                r.notes.push(format!(
                    "the limit is --max-steps {}: raise it if the kernel is only long",
                    a.max_steps
                ));
            }
            Failure::report(r.to_string())
        }
        other => Failure::kernel(other),
    })?;
    Ok((dev, buffers, stats))
}

/// Writes every tensor the kernel may write (or did write) to
/// `OUT/NAME.npy`; returns the paths written.
fn write_outputs(
    out: &Path,
    dev: &Device,
    buffers: &BTreeMap<String, BufferId>,
    tensors: &BTreeMap<String, TensorArg>,
    stats: &LaunchStats,
) -> Result<Vec<String>, Failure> {
    let mut wrote = Vec::new();
    for (name, t) in tensors {
        let id = buffers[name];
        if !(t.written || stats.written.contains(&id)) {
            continue;
        }
        let bytes = dev.to_vec(id).map_err(Failure::usage)?;
        let path = out.join(format!("{name}.npy"));
        write_npy(&path, &t.shape, t.elem, &bytes)
            .map_err(|e| Failure::usage(format!("cannot write `{}`: {e}", path.display())))?;
        wrote.push(path.display().to_string());
    }
    Ok(wrote)
}

/// What `phobos sim` wants for a parameter: `a tensor<f32>[N], given as
/// PATH.npy` or `a f32 scalar` (the type as `binding::describe_param`
/// writes it).
fn wanted(k: &ParamKindMeta) -> String {
    match k {
        ParamKindMeta::Tensor { .. } => {
            format!("a {}, given as PATH.npy", binding::describe_param(k))
        }
        ParamKindMeta::Scalar(_) => format!("a {} scalar", binding::describe_param(k)),
    }
}

/// The command line's bindings checked against the kernel: each names a
/// parameter, tensors get `.npy` files and scalars values.
fn bind<'b>(
    items: &'b [(String, crate::args::Value)],
    meta: &KernelMeta,
) -> Result<BTreeMap<String, &'b crate::args::Value>, Failure> {
    use crate::args::Value;
    let mut out = BTreeMap::new();
    for (name, value) in items {
        let Some(p) = meta.params.iter().find(|p| &p.name == name) else {
            let known: Vec<&str> = meta.params.iter().map(|p| p.name.as_str()).collect();
            return Err(Failure::usage(format!(
                "kernel `{}` has no parameter `{name}` (its parameters: {})",
                meta.name,
                known.join(", ")
            )));
        };
        match (&p.kind, value) {
            (ParamKindMeta::Tensor { .. }, Value::Npy(_))
            | (ParamKindMeta::Scalar(_), Value::Scalar(_)) => {}
            (ParamKindMeta::Tensor { .. }, Value::Shape(_)) => {
                return Err(Failure::usage(format!(
                    "`{name}`: sim needs the tensor's data as PATH.npy (shape: gives random data to `phobos explain` only)"
                )))
            }
            (kind, _) => {
                return Err(Failure::usage(format!(
                    "`{name}` is {}",
                    wanted(kind)
                )))
            }
        }
        out.insert(name.clone(), value);
    }
    Ok(out)
}

/// Creates the output directory (if missing) and checks that a file can
/// be written in it, before any simulation time is spent.
fn check_out_dir(dir: &Path) -> Result<(), Failure> {
    crate::files::out_dir(dir).map_err(Failure::usage)
}

/// Reads tensor `param`'s C-ordered, little-endian `.npy`, whose dtype must
/// hold `elem`; returns its shape and its data as device bytes.
fn tensor_npy(
    value: &crate::args::Value,
    param: &str,
    elem: ScalarTy,
) -> Result<(Vec<u64>, Vec<u8>), Failure> {
    let crate::args::Value::Npy(path) = value else {
        return Err(Failure::usage(format!(
            "tensor `{param}` needs a .npy file"
        )));
    };
    let shown = path.display();
    let npy = crate::args::read_npy(path, param).map_err(Failure::usage)?;
    let descr = npy.descr.to_string();
    let (order, code) = descr.split_at(1.min(descr.len()));
    let want = crate::args::npy_code(elem);
    let bf16_note = match elem {
        ScalarTy::BF16 => " (bf16 tensors are given as uint16 bits)",
        ScalarTy::F8E4M3 => " (f8e4m3 tensors are given as uint8 bits)",
        ScalarTy::F8E5M2 => " (f8e5m2 tensors are given as uint8 bits)",
        _ => "",
    };
    if code != want {
        return Err(Failure::usage(format!(
            "tensor `{param}` is {}, so `{shown}` must hold {} (dtype {want}){bf16_note}, but it holds {} (dtype {code})",
            elem.name(),
            crate::args::numpy_name(want),
            crate::args::numpy_name(code)
        )));
    }
    if order == ">" && !want.ends_with('1') {
        return Err(Failure::usage(format!(
            "`{shown}` (tensor `{param}`) is big-endian; save it little-endian"
        )));
    }
    let mut bytes = npy.bytes;
    if elem == ScalarTy::Bool {
        // numpy writes 0 and 1, but any nonzero byte is true.
        bytes.iter_mut().for_each(|b| *b = u8::from(*b != 0));
    }
    Ok((npy.shape, bytes))
}

fn write_typed<T: npyz::AutoSerialize>(
    path: &Path,
    shape: &[u64],
    items: impl Iterator<Item = T>,
) -> std::io::Result<()> {
    use npyz::WriterBuilder;
    let file = BufWriter::new(std::fs::File::create(path)?);
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(file)
        .begin_nd()?;
    w.extend(items)?;
    w.finish()
}

fn write_npy(path: &Path, shape: &[u64], elem: ScalarTy, bytes: &[u8]) -> std::io::Result<()> {
    macro_rules! chunks {
        ($t:ty, $n:literal) => {
            bytes.chunks_exact($n).map(|c| {
                let mut a = [0u8; $n];
                a.copy_from_slice(c);
                <$t>::from_le_bytes(a)
            })
        };
    }
    match elem {
        ScalarTy::Bool => write_typed(path, shape, bytes.iter().map(|&b| b != 0)),
        ScalarTy::I8 => write_typed(path, shape, chunks!(i8, 1)),
        ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => {
            write_typed(path, shape, bytes.iter().copied())
        }
        ScalarTy::I16 => write_typed(path, shape, chunks!(i16, 2)),
        ScalarTy::U16 | ScalarTy::BF16 => write_typed(path, shape, chunks!(u16, 2)),
        ScalarTy::I32 => write_typed(path, shape, chunks!(i32, 4)),
        ScalarTy::U32 => write_typed(path, shape, chunks!(u32, 4)),
        ScalarTy::I64 => write_typed(path, shape, chunks!(i64, 8)),
        ScalarTy::U64 => write_typed(path, shape, chunks!(u64, 8)),
        ScalarTy::F16 => write_typed(path, shape, chunks!(half::f16, 2)),
        ScalarTy::F32 => write_typed(path, shape, chunks!(f32, 4)),
        ScalarTy::F64 => write_typed(path, shape, chunks!(f64, 8)),
    }
}

/// What `phobos sim` says when the binding refuses a launch: the binding's
/// own message (the one wording of every refusal), with a note in terms of
/// what the user gave: the `.npy` shapes a shape refusal is about, or
/// `--grid` for a grid refusal.
fn refusal(meta: &KernelMeta, tensors: &BTreeMap<String, TensorArg>, e: BindError) -> Failure {
    let npy = |param: &str| {
        tensors
            .get(param)
            .map(|t| format!("`{param}`'s .npy has shape {}", shape_text(&t.shape)))
    };
    // The tensor a dim comes from, for `@aligned` and autotune refusals.
    let dim_npy = |dim: &str| {
        meta.dims
            .iter()
            .find(|d| d.name == dim)
            .and_then(|d| d.defined_by.first())
            .and_then(|(p, _)| npy(p))
    };
    let note = match &e {
        BindError::Rank { param, .. }
        | BindError::ConstDim { param, .. }
        | BindError::BufferTooShort { param, .. } => npy(param),
        BindError::DimMismatch { first, second, .. } => {
            match (npy(&first.param), npy(&second.param)) {
                (Some(a), Some(b)) => Some(format!("{a}, {b}")),
                (a, b) => a.or(b),
            }
        }
        BindError::AlignedViolated { dim, .. } | BindError::NoVariant { dim, .. } => dim_npy(dim),
        BindError::MissingGrid | BindError::InvalidGrid(_) | BindError::GridTooLarge { .. } => {
            Some("give the grid with --grid X[,Y[,Z]]".to_string())
        }
        _ => None,
    };
    let note = note.map_or(String::new(), |n| format!("\n  note: {n}"));
    Failure::usage(format!("kernel `{}`: {e}{note}", meta.name))
}

fn shape_text(shape: &[u64]) -> String {
    let s: Vec<String> = shape.iter().map(u64::to_string).collect();
    if s.len() == 1 {
        format!("({},)", s[0])
    } else {
        format!("({})", s.join(", "))
    }
}
