//! `phobos ptx`, `phobos build` and `phobos report`: compile .pho files and
//! print the PTX, write the build outputs (.ptx, .ron and, when ptxas is
//! found, .cubin per target), or print what the backend decided (each access's
//! proven alignment and width, the shared plan, the barriers). Compile
//! errors are rendered with the source and exit 1; usage and IO errors
//! exit 2.

use crate::failure::Failure;
use phobos_core::meta::KernelMeta;
use phobos_core::{CompileOptions, CompiledKernel};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct PtxArgs {
    /// The .pho file.
    pub file: PathBuf,
    /// Print only this kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Target, e.g. sm_75 (the default) or sm_90.
    #[arg(long, default_value = "sm_75")]
    pub arch: String,
}

#[derive(clap::Args)]
pub struct BuildArgs {
    /// .pho files or directories holding them.
    pub paths: Vec<PathBuf>,
    /// Output directory (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Targets, comma-separated (e.g. sm_75,sm_90); default PHOBOS_ARCHES,
    /// else every supported target.
    #[arg(long, value_delimiter = ',')]
    pub arch: Vec<String>,
    /// Require cubins: an error if ptxas is not found (without this flag,
    /// cubins are written whenever ptxas is found).
    #[arg(long)]
    pub cubin: bool,
}

#[derive(clap::Args)]
pub struct ReportArgs {
    /// The .pho file.
    pub file: PathBuf,
    /// Report only this kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    /// Target, e.g. sm_75 (the default).
    #[arg(long, default_value = "sm_75")]
    pub arch: String,
}

/// Read and compile one file; render diagnostics to stderr.
pub(crate) fn compile_file(path: &Path, arch: u32) -> Result<Vec<CompiledKernel>, Failure> {
    let src = crate::args::read_source(path).map_err(Failure::usage)?;
    let name = path.display().to_string();
    let (kernels, diags) = phobos_core::compile(&src, &name, &CompileOptions::for_arch(arch));
    if !diags.is_empty() {
        let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        eprint!(
            "{}",
            phobos_core::render::render(&diags, &name, &src, color)
        );
    }
    if diags.iter().any(|d| d.is_error()) {
        return Err(Failure::kernel(format!("could not compile `{name}`")));
    }
    Ok(kernels)
}

fn select(
    kernels: Vec<CompiledKernel>,
    name: &Option<String>,
    file: &Path,
) -> Result<Vec<CompiledKernel>, Failure> {
    match name {
        None => Ok(kernels),
        Some(n) => {
            let names: Vec<String> = kernels.iter().map(|k| k.meta.name.clone()).collect();
            let picked: Vec<CompiledKernel> =
                kernels.into_iter().filter(|k| &k.meta.name == n).collect();
            if picked.is_empty() {
                let has = if names.is_empty() {
                    "it has no kernels".to_string()
                } else {
                    format!("it has: {}", names.join(", "))
                };
                Err(Failure::usage(format!(
                    "no kernel `{n}` in `{}` ({has})",
                    file.display()
                )))
            } else {
                Ok(picked)
            }
        }
    }
}

fn finish(r: Result<(), Failure>) -> u8 {
    crate::failure::exit_code(r)
}

pub fn run_ptx(a: PtxArgs) -> u8 {
    finish((|| {
        let arch = phobos_core::parse_arch(&a.arch).map_err(Failure::usage)?;
        let kernels = select(compile_file(&a.file, arch)?, &a.kernel, &a.file)?;
        // One module for the file, so ptxas accepts the output whole.
        crate::out::print(&phobos_core::file_module(&kernels)).map_err(Failure::usage)
    })())
}

pub fn run_report(a: ReportArgs) -> u8 {
    finish((|| {
        let arch = phobos_core::parse_arch(&a.arch).map_err(Failure::usage)?;
        let kernels = select(compile_file(&a.file, arch)?, &a.kernel, &a.file)?;
        let text: String = kernels.iter().map(|k| report(&k.meta)).collect();
        crate::out::print(&text).map_err(Failure::usage)
    })())
}

/// The human-readable report of one kernel's backend decisions.
pub fn report(m: &KernelMeta) -> String {
    let mut s = String::new();
    for v in &m.variants {
        let _ = writeln!(
            s,
            "kernel {} (entry {}, {} threads)",
            m.name, v.entry, v.threads
        );
        let _ = writeln!(s, "  accesses:");
        for l in &v.loads {
            let what = match (l.atomic, l.store) {
                (true, _) => "atomic",
                (false, true) => "store",
                (false, false) => "load",
            };
            let why = if l.reason.is_empty() {
                String::new()
            } else {
                format!(" — not wider: {}", l.reason)
            };
            let _ = writeln!(
                s,
                "    {}:{} {what} {} ({} elem{}): {} bytes per instruction, proven {}-byte aligned{why}",
                l.line,
                l.col,
                l.target,
                l.elems,
                if l.elems == 1 { "" } else { "s" },
                l.width_bytes,
                l.align_bytes
            );
        }
        if !v.arrays.is_empty() {
            let _ = writeln!(s, "  register arrays:");
        }
        for a in &v.arrays {
            let home = if a.local {
                format!(
                    "in local memory ({} bytes per thread): {}",
                    a.bytes, a.reason
                )
            } else {
                format!("in registers (one per element, {} bytes)", a.bytes)
            };
            let _ = writeln!(
                s,
                "    line {}: {} ({} elements) {home}",
                a.line, a.name, a.elems
            );
        }
        let _ = writeln!(s, "  shared memory: {} bytes", v.shared_bytes);
        for b in &v.shared_plan {
            // Padding: the last bytes of each row, which no access reaches.
            let padding = match b.padding {
                Some(p) if p.row_bytes > 0 => format!(
                    " ({} of them padding: the last {} of each {}-byte row, which no access reaches)",
                    b.padding_bytes(),
                    p.pad_bytes,
                    p.row_bytes
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "    {} at offset {}, {} bytes{padding}, live lines {}-{}",
                b.name, b.offset, b.bytes, b.live_lines.0, b.live_lines.1
            );
        }
        let _ = writeln!(s, "  barriers:");
        if v.barriers.is_empty() {
            let _ = writeln!(s, "    (none needed: no shared memory)");
        }
        for b in &v.barriers {
            let kept = if b.kept { "kept  " } else { "elided" };
            let _ = writeln!(s, "    line {}: {kept} {}", b.line, b.reason);
        }
    }
    s
}

pub fn run_build(a: BuildArgs) -> u8 {
    finish(build(&a))
}

fn build(a: &BuildArgs) -> Result<(), Failure> {
    if a.paths.is_empty() {
        return Err(Failure::usage(
            "give at least one .pho file or directory to build",
        ));
    }
    let arches = crate::args::target_arches(&a.arch).map_err(Failure::usage)?;
    // Cubins are written whenever ptxas is found; `--cubin` makes it
    // required. A `PHOBOS_PTXAS` naming a missing file is an error, as in
    // cargo builds (phobos-build finds ptxas for both).
    let ptxas =
        phobos_build::find_ptxas().map_err(|e| Failure::usage(strip_error(&e.to_string())))?;
    if a.cubin && ptxas.is_none() {
        return Err(Failure::usage("--cubin needs NVIDIA's ptxas, which was not found (set PHOBOS_PTXAS, CUDA_PATH or CUDA_HOME, or put ptxas on PATH)",
        ));
    }
    let files = crate::files::collect(&a.paths).map_err(Failure::usage)?;
    // Compile everything first: nothing is written for a build that fails.
    let mut failed = false;
    let mut built: Vec<(u32, CompiledKernel, &Path)> = Vec::new();
    for f in &files {
        for &arch in &arches {
            match compile_file(f, arch) {
                Ok(kernels) => built.extend(kernels.into_iter().map(|k| (arch, k, f.as_path()))),
                Err(f) if f.code == 1 => {
                    failed = true;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    if failed {
        return Err(Failure::kernel("some files did not compile"));
    }
    // Outputs are named by kernel: two files with one kernel name would
    // overwrite each other's, and so would two names that differ only in
    // case on a file system that ignores case.
    let mut first_file: BTreeMap<String, (&str, &Path)> = BTreeMap::new();
    for (_, k, f) in &built {
        let name = k.meta.name.as_str();
        match first_file.get(&phobos_build::output_file_key(name)) {
            Some(&(first_name, first)) if first_name != name => {
                return Err(Failure::kernel(format!(
                    "kernels `{first_name}` (`{}`) and `{name}` (`{}`) differ only in case; their output files would be one file on a file system that ignores case (macOS's and Windows' by default): rename one",
                    first.display(),
                    f.display()
                )))
            }
            Some(&(_, first)) if first != *f => {
                return Err(Failure::kernel(format!(
                        "kernel `{}` is defined in both `{}` and `{}`; kernel names must be unique in a build (outputs are named by kernel)",
                        k.meta.name,
                        first.display(),
                        f.display()
                    ),
                ))
            }
            _ => {
                first_file.insert(phobos_build::output_file_key(name), (name, f));
            }
        }
    }
    // A ptxas too old for some targets (sm_100 and sm_120 need CUDA 12.8)
    // skips their cubins, as cargo builds do; `--cubin` makes that an error.
    let lacking: Vec<String> = match &ptxas {
        Some(p) => arches
            .iter()
            .filter(|&&arch| !p.supports(arch))
            .map(|&arch| phobos_core::arch::name(arch))
            .collect(),
        None => Vec::new(),
    };
    if let (Some(p), false) = (&ptxas, lacking.is_empty()) {
        let what = format!(
            "{} ({}) cannot assemble {}",
            p.path.display(),
            p.version,
            lacking.join(", ")
        );
        if a.cubin {
            return Err(Failure::usage(format!(
                "--cubin: {what}; use a newer ptxas"
            )));
        }
        eprintln!("warning: {what}; writing their PTX only");
    }
    crate::files::out_dir(&a.out).map_err(Failure::usage)?;
    // One metadata file per kernel: the first target's, with every other
    // target's variants where they differ (`KernelMeta::add_target`).
    let mut metas: BTreeMap<&str, phobos_core::meta::KernelMeta> = BTreeMap::new();
    for (arch, k, _) in &built {
        match metas.get_mut(k.meta.name.as_str()) {
            Some(m) => m.add_target(*arch, &k.meta),
            None => {
                metas.insert(&k.meta.name, k.meta.clone());
            }
        }
    }
    for (name, meta) in &metas {
        let ron_text = ron::ser::to_string_pretty(meta, ron::ser::PrettyConfig::default())
            .map_err(|e| Failure::usage(format!("cannot serialize metadata: {e}")))?;
        write(&a.out.join(format!("{name}.ron")), ron_text.as_bytes())?;
    }
    for (arch, k, _) in &built {
        let arch = *arch;
        let target = phobos_core::arch::name(arch);
        let stem = a.out.join(format!("{}.{target}", k.meta.name));
        let ptx_path = stem.with_extension(format!("{target}.ptx"));
        write(&ptx_path, k.ptx.as_bytes())?;
        if let Some(ptxas) = ptxas.as_ref().filter(|p| p.supports(arch)) {
            let cubin = phobos_build::assemble_ptx(ptxas, &k.meta.name, arch, &k.ptx)
                .map_err(|e| Failure::kernel(strip_error(&e.to_string())))?;
            write(&stem.with_extension(format!("{target}.cubin")), &cubin)?;
        }
    }
    Ok(())
}

/// A phobos-build error's text without its own `error: ` (ours adds one).
fn strip_error(text: &str) -> String {
    text.strip_prefix("error: ").unwrap_or(text).to_string()
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, bytes)
        .map_err(|e| Failure::usage(format!("cannot write `{}`: {e}", path.display())))
}
