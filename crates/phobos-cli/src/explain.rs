//! `phobos explain FILE [--kernel NAME] [--grid X[,Y,Z]] [PARAM=VALUE ...]`:
//! the kernel stepped through as the compiler built it, as a self-contained
//! web page (default), the JSON trace the page is drawn from, or the
//! readout as text. This module reads the files and parses the arguments;
//! `phobos-explain` does the rest.
//!
//! Exit codes: 0 success, 1 a kernel that does not compile or that the
//! simulator stops, 2 usage and IO errors.

use crate::failure::Failure;
use phobos_explain::{Cta, ExplainError, Input, Request};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One self-contained HTML page.
    Html,
    /// The trace the page is drawn from.
    Json,
    /// The readout, one block per step.
    Text,
}

#[derive(clap::Args)]
pub struct Args {
    /// The .pho file.
    pub file: PathBuf,
    /// The kernel to explain; may be left out when the file has one kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    /// The target.
    #[arg(long, default_value = "sm_75")]
    pub arch: String,
    /// The CTA to step through, as a linear index or `x,y,z`.
    #[arg(long, default_value = "0")]
    pub cta: String,
    /// What to write.
    #[arg(long, value_enum, default_value = "html")]
    pub format: Format,
    /// Steps kept per CTA before the trace is cut short.
    #[arg(long, default_value_t = 4000)]
    pub max_steps: usize,
    /// Explains the variant with this value of a free `@autotune`
    /// constant, `NAME=V` (repeatable); otherwise each takes its first value.
    #[arg(long = "define", value_name = "NAME=V")]
    pub defines: Vec<String>,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// What `phobos explain` and `phobos profile` share: the grid, the
/// parameters' values and where the result goes.
#[derive(clap::Args)]
pub struct LaunchArgs {
    /// CTAs along x, y and z: `8`, `4,2` or `4,2,1` (default: the
    /// kernel's `@grid`).
    #[arg(long)]
    pub grid: Option<String>,
    /// The most simulated threads (CTAs times threads per CTA): every CTA
    /// runs, so a larger launch is refused before it starts.
    #[arg(long, default_value_t = phobos_sim::DEFAULT_MAX_WORK)]
    pub max_work: u64,
    /// Seed for the values of `shape:` inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where to write it (default: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// A value per parameter: `W=w.npy` (a .npy file), `W=shape:8x256`
    /// (random values of that shape) or `alpha=0.5` (a scalar).
    #[arg(value_name = "PARAM=VALUE")]
    pub inputs: Vec<String>,
}

impl LaunchArgs {
    /// The `--grid` given, if any, parsed.
    pub(crate) fn parsed_grid(&self) -> Result<Option<[u32; 3]>, String> {
        self.grid
            .as_deref()
            .map(crate::args::parse_grid)
            .transpose()
    }
}

pub fn run(a: Args) -> u8 {
    crate::failure::exit_code(explain(&a))
}

fn explain(a: &Args) -> Result<(), Failure> {
    let source = crate::args::read_source(&a.file).map_err(Failure::usage)?;
    let arch = phobos_core::parse_arch(&a.arch).map_err(Failure::usage)?;
    let grid = a.launch.parsed_grid().map_err(Failure::usage)?;
    let mut req = request(&a.file, &source, a.kernel.as_deref(), arch, grid, &a.launch)?;
    req.cta = parse_cta(&a.cta)?;
    req.max_steps = a.max_steps.max(1);
    for (name, value) in crate::args::parse_defines(&a.defines).map_err(Failure::usage)? {
        if req.inputs.iter().any(|(n, _)| n == &name) {
            return Err(Failure::usage(format!(
                "`{name}` is given both as --define and as {name}=..."
            )));
        }
        req.inputs.push((name, Input::Scalar(value.to_string())));
    }
    let file_name = req.file_name.clone();
    let progress = crate::progress::Progress::start(format!("explaining {file_name}"));
    let trace = phobos_explain::trace(&req);
    progress.stop();
    let trace = trace.map_err(|e| explain_failure(e, &file_name, &source))?;
    let out = match a.format {
        Format::Html => phobos_explain::html::render(&trace),
        Format::Json => phobos_explain::to_json(&trace) + "\n",
        Format::Text => phobos_explain::text::render(&trace),
    };
    match &a.launch.output {
        Some(path) => {
            std::fs::write(path, &out)
                .map_err(|e| Failure::usage(format!("cannot write {}: {e}", path.display())))?;
            let steps = trace.picked_cta().steps.len();
            eprintln!(
                "wrote {} ({} KB): {} steps of CTA {} of `{}` for {}",
                path.display(),
                out.len().div_ceil(1024),
                steps,
                trace.picked_cta().cta,
                trace.kernel,
                trace.arch
            );
        }
        None => crate::out::print(&out).map_err(Failure::usage)?,
    }
    Ok(())
}

/// What `phobos explain` and `phobos profile` say when the explainer
/// refuses: the rendered diagnostics of a kernel that does not compile,
/// else its message.
pub(crate) fn explain_failure(e: ExplainError, file_name: &str, source: &str) -> Failure {
    match e {
        ExplainError::Compile(diags) => Failure::report(
            phobos_core::render::render(&diags, file_name, source, false)
                .trim_end()
                .to_string(),
        ),
        ExplainError::Usage(m) => Failure::usage(m),
        ExplainError::Run(_) => Failure::kernel(e),
    }
}

/// A linear CTA index, or `x,y[,z]`.
fn parse_cta(s: &str) -> Result<Cta, Failure> {
    if !s.contains(',') {
        return s
            .trim()
            .parse()
            .map(Cta::Linear)
            .map_err(|_| Failure::usage(format!("--cta {s} is not a CTA index")));
    }
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(Failure::usage(format!("--cta {s}: give N or X,Y[,Z]")));
    }
    let mut id = [0u32; 3];
    for (i, p) in parts.iter().enumerate() {
        id[i] = p
            .parse()
            .map_err(|_| Failure::usage(format!("--cta {s}: `{p}` is not a number")))?;
    }
    Ok(Cta::Xyz(id))
}

/// The explainer's request for `kernel` of `file` (whose text is `source`)
/// on `arch` over `grid`, with the bindings and seed of `launch`; the rest
/// as [`Request::new`] has it.
pub(crate) fn request(
    file: &Path,
    source: &str,
    kernel: Option<&str>,
    arch: u32,
    grid: Option<[u32; 3]>,
    launch: &LaunchArgs,
) -> Result<Request, Failure> {
    let bindings = crate::args::parse_bindings(&launch.inputs).map_err(Failure::usage)?;
    let file_name = file.display().to_string();
    let mut req = Request::new(
        source.to_string(),
        file_name,
        kernel.map(str::to_string),
        arch,
        grid,
    );
    req.seed = launch.seed;
    req.max_work = launch.max_work;
    for (name, value) in bindings {
        req.inputs.push((name.clone(), input(&name, value)?));
    }
    Ok(req)
}

/// One binding as the explainer's input.
pub(crate) fn input(name: &str, value: crate::args::Value) -> Result<Input, Failure> {
    use crate::args::Value;
    match value {
        Value::Shape(shape) => Ok(Input::Random { shape }),
        // Read against the parameter's type once the kernel is compiled
        // (`phobos_core::scalar_value`, as `phobos sim` reads it).
        Value::Scalar(text) => Ok(Input::Scalar(text)),
        Value::Npy(path) => npy_input(name, &path),
    }
}

/// A .npy file as tensor data: C order, little-endian, a dtype Phobos has.
fn npy_input(name: &str, path: &Path) -> Result<Input, Failure> {
    let npy = crate::args::read_npy(path, name).map_err(Failure::usage)?;
    let ts = &npy.descr;
    if ts.endianness() == npyz::Endianness::Big && ts.size_field() > 1 {
        return Err(Failure::usage(format!(
            "{name}: {} is big-endian; save it little-endian (arr.astype('<{}{}'))",
            path.display(),
            ts.type_char().to_str(),
            ts.size_field()
        )));
    }
    let descr = ts.to_string();
    let Some(elem) = crate::args::npy_elem(descr.get(1..).unwrap_or("")) else {
        return Err(Failure::usage(format!(
            "{name}: {} holds `{ts}` elements, which Phobos tensors cannot hold",
            path.display()
        )));
    };
    // A 0-d array is one element: a tensor of shape [1].
    let shape = if npy.shape.is_empty() {
        vec![1]
    } else {
        npy.shape
    };
    Ok(Input::Data {
        shape,
        elem,
        bytes: npy.bytes,
    })
}
