//! `phobos explain FILE --kernel NAME [--grid X[,Y,Z]] [PARAM=VALUE ...]`:
//! the kernel stepped through as the compiler built it, as a self-contained
//! web page (default), the JSON trace the page is drawn from, or the
//! readout as text. This module reads the files and parses the arguments;
//! `phobos-explain` does the rest.
//!
//! Exit codes: 0 success, 1 a kernel that does not compile or that the
//! simulator stops, 2 usage and IO errors.

use phobos_core::ast::ScalarTy;
use phobos_explain::{Cta, ExplainError, Input, Request};
use std::io::Write;
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
    /// The kernel to explain.
    #[arg(long)]
    pub kernel: String,
    /// CTAs along x, y and z: `8`, `4,2` or `4,2,1` (default: the
    /// kernel's `@grid`).
    #[arg(long)]
    pub grid: Option<String>,
    /// The target.
    #[arg(long, default_value = "sm_75")]
    pub arch: String,
    /// The CTA to step through, as a linear index or `x,y,z`.
    #[arg(long, default_value = "0")]
    pub cta: String,
    /// What to write.
    #[arg(long, value_enum, default_value = "html")]
    pub format: Format,
    /// Where to write it (default: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Seed for the values of `shape:` inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Steps kept per CTA before the trace is cut short.
    #[arg(long, default_value_t = 4000)]
    pub max_steps: usize,
    /// A value per parameter: `W=w.npy` (a .npy file), `W=shape:8x256`
    /// (random values of that shape) or `alpha=0.5` (a scalar).
    #[arg(value_name = "PARAM=VALUE")]
    pub inputs: Vec<String>,
}

/// A failure, and the exit code it maps to.
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

fn usage(message: impl Into<String>) -> Failure {
    Failure {
        code: 2,
        message: message.into(),
    }
}

pub fn run(a: Args) -> u8 {
    match explain(&a) {
        Ok(()) => 0,
        Err(f) => {
            eprintln!("{}", f.message);
            f.code
        }
    }
}

fn explain(a: &Args) -> Result<(), Failure> {
    let source = std::fs::read_to_string(&a.file)
        .map_err(|e| usage(format!("error: cannot read {}: {e}", a.file.display())))?;
    let arch = parse_arch(&a.arch)?;
    let grid = a
        .grid
        .as_deref()
        .map(|g| parse_triple(g, "--grid"))
        .transpose()?;
    let cta = parse_cta(&a.cta)?;
    let file_name = a.file.display().to_string();
    let mut req = Request::new(
        source.clone(),
        file_name.clone(),
        a.kernel.clone(),
        arch,
        grid,
    );
    req.cta = cta;
    req.seed = a.seed;
    req.max_steps = a.max_steps.max(1);
    for spec in &a.inputs {
        req.inputs.push(parse_input(spec)?);
    }
    let trace = phobos_explain::trace(&req).map_err(|e| match e {
        ExplainError::Compile(diags) => Failure {
            code: 1,
            message: phobos_core::render::render(&diags, &file_name, &source, false)
                .trim_end()
                .to_string(),
        },
        ExplainError::Usage(m) => usage(format!("error: {m}")),
        ExplainError::Run(_) => Failure {
            code: 1,
            message: format!("error: {e}"),
        },
    })?;
    let out = match a.format {
        Format::Html => phobos_explain::html::render(&trace),
        Format::Json => phobos_explain::to_json(&trace) + "\n",
        Format::Text => phobos_explain::text::render(&trace),
    };
    match &a.output {
        Some(path) => {
            std::fs::write(path, &out)
                .map_err(|e| usage(format!("error: cannot write {}: {e}", path.display())))?;
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
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(out.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(|e| usage(format!("error: cannot write the output: {e}")))?;
        }
    }
    Ok(())
}

pub(crate) fn parse_arch(s: &str) -> Result<u32, Failure> {
    let n = s.strip_prefix("sm_").unwrap_or(s);
    let arch: u32 = n
        .parse()
        .map_err(|_| usage(format!("error: --arch {s} is not a target like sm_75")))?;
    if !phobos_core::ARCHES.contains(&arch) {
        let known: Vec<String> = phobos_core::ARCHES
            .iter()
            .map(|a| format!("sm_{a}"))
            .collect();
        return Err(usage(format!(
            "error: --arch {s} is not supported; the targets are {}",
            known.join(", ")
        )));
    }
    Ok(arch)
}

/// `8`, `4,2` or `4,2,1`: each at least 1.
pub(crate) fn parse_triple(s: &str, what: &str) -> Result<[u32; 3], Failure> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(usage(format!("error: {what} {s}: give X, X,Y or X,Y,Z")));
    }
    let mut out = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        out[i] = p.parse().ok().filter(|&v: &u32| v >= 1).ok_or_else(|| {
            usage(format!(
                "error: {what} {s}: `{p}` is not a count of at least 1"
            ))
        })?;
    }
    Ok(out)
}

/// A linear CTA index, or `x,y[,z]`.
fn parse_cta(s: &str) -> Result<Cta, Failure> {
    if !s.contains(',') {
        return s
            .trim()
            .parse()
            .map(Cta::Linear)
            .map_err(|_| usage(format!("error: --cta {s} is not a CTA index")));
    }
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(usage(format!("error: --cta {s}: give N or X,Y[,Z]")));
    }
    let mut id = [0u32; 3];
    for (i, p) in parts.iter().enumerate() {
        id[i] = p
            .parse()
            .map_err(|_| usage(format!("error: --cta {s}: `{p}` is not a number")))?;
    }
    Ok(Cta::Xyz(id))
}

/// `NAME=path.npy`, `NAME=shape:AxB` or `NAME=number`.
pub(crate) fn parse_input(spec: &str) -> Result<(String, Input), Failure> {
    let (name, value) = spec.split_once('=').ok_or_else(|| {
        usage(format!(
            "error: `{spec}` is not PARAM=VALUE (VALUE: a .npy file, shape:AxB or a number)"
        ))
    })?;
    let name = name.trim();
    if name.is_empty() {
        return Err(usage(format!("error: `{spec}` has no parameter name")));
    }
    if let Some(dims) = value.strip_prefix("shape:") {
        let shape: Result<Vec<u64>, _> = dims
            .split(['x', 'X', ','])
            .map(|d| d.trim().parse::<u64>())
            .collect();
        let shape = shape
            .ok()
            .filter(|s| !s.is_empty() && s.iter().all(|&d| d >= 1))
            .ok_or_else(|| {
                usage(format!(
                    "error: {name}: `{value}` is not a shape like shape:8x256"
                ))
            })?;
        return Ok((name.to_string(), Input::Random { shape }));
    }
    if let Ok(v) = value.trim().parse::<f64>() {
        return Ok((name.to_string(), Input::Scalar(v)));
    }
    match value.trim() {
        "true" => return Ok((name.to_string(), Input::Scalar(1.0))),
        "false" => return Ok((name.to_string(), Input::Scalar(0.0))),
        _ => {}
    }
    let path = Path::new(value);
    Ok((name.to_string(), read_npy(name, path)?))
}

/// A .npy file as tensor data: C order, little-endian, a dtype Phobos has.
fn read_npy(name: &str, path: &Path) -> Result<Input, Failure> {
    let bytes = std::fs::read(path).map_err(|e| {
        usage(format!(
            "error: {name}: cannot read {}: {e}",
            path.display()
        ))
    })?;
    let mut rest: &[u8] = &bytes;
    let header = npyz::NpyHeader::from_reader(&mut rest).map_err(|e| {
        usage(format!(
            "error: {name}: {} is not a .npy file: {e}",
            path.display()
        ))
    })?;
    if header.order() != npyz::Order::C {
        return Err(usage(format!(
            "error: {name}: {} is in Fortran order; save it in C order (np.ascontiguousarray)",
            path.display()
        )));
    }
    let npyz::DType::Plain(ts) = header.dtype() else {
        return Err(usage(format!(
            "error: {name}: {} holds structured records, not numbers",
            path.display()
        )));
    };
    if ts.endianness() == npyz::Endianness::Big && ts.size_field() > 1 {
        return Err(usage(format!(
            "error: {name}: {} is big-endian; save it little-endian (arr.astype('<{}{}'))",
            path.display(),
            ts.type_char().to_str(),
            ts.size_field()
        )));
    }
    let elem = match (ts.type_char(), ts.size_field()) {
        (npyz::TypeChar::Bool, 1) => ScalarTy::Bool,
        (npyz::TypeChar::Int, 1) => ScalarTy::I8,
        (npyz::TypeChar::Uint, 1) => ScalarTy::U8,
        (npyz::TypeChar::Int, 2) => ScalarTy::I16,
        (npyz::TypeChar::Uint, 2) => ScalarTy::U16,
        (npyz::TypeChar::Int, 4) => ScalarTy::I32,
        (npyz::TypeChar::Uint, 4) => ScalarTy::U32,
        (npyz::TypeChar::Int, 8) => ScalarTy::I64,
        (npyz::TypeChar::Uint, 8) => ScalarTy::U64,
        (npyz::TypeChar::Float, 2) => ScalarTy::F16,
        (npyz::TypeChar::Float, 4) => ScalarTy::F32,
        (npyz::TypeChar::Float, 8) => ScalarTy::F64,
        _ => {
            return Err(usage(format!(
                "error: {name}: {} holds `{ts}` elements, which Phobos tensors cannot hold",
                path.display()
            )))
        }
    };
    let shape = header.shape().to_vec();
    let want = shape
        .iter()
        .try_fold(u64::from(elem.size()), |a, &d| a.checked_mul(d))
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| usage(format!("error: {name}: {} is too large", path.display())))?;
    if rest.len() < want {
        return Err(usage(format!(
            "error: {name}: {} is cut short: {} bytes of data for shape {:?}, which needs {want}",
            path.display(),
            rest.len(),
            shape
        )));
    }
    // A 0-d array is one element: a tensor of shape [1].
    let shape = if shape.is_empty() { vec![1] } else { shape };
    Ok(Input::Data {
        shape,
        elem,
        bytes: rest[..want].to_vec(),
    })
}
