//! `phobos profile FILE [--kernel NAME] [--grid X[,Y,Z]] [PARAM=VALUE ...]
//! [--max-work N] [--arch sm_90] [--gpu h100|h200|a100|l4|rtx4090] [--format text|json]
//! [--cta-sample N]`: Nsight-Compute-style counters per source line, from
//! the simulator. The inputs are given as for `phobos explain` (a `.npy`
//! file, `shape:AxB` random values, or a number) and bound the same way
//! (`phobos_explain::run_split`, on every core); `phobos-profile` counts
//! and formats.
//! This module reads files, runs ptxas `-v` for the register count when
//! ptxas is found, and writes the output.
//!
//! Exit codes: 0 success, 1 a kernel that does not compile or that the
//! simulator stops, 2 usage and IO errors.

use crate::explain::{explain_failure, request, LaunchArgs};
use crate::failure::Failure;
use phobos_profile::occupancy::{self, CtaResources};
use phobos_profile::report::{LaunchInfo, Profile};
use phobos_profile::roofline;
use phobos_profile::{CtaSample, Profiler};
use std::path::PathBuf;
use std::process::Command;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A per-line table beside the source, then totals.
    Text,
    /// The documented JSON schema (docs/profile.md).
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The .pho file.
    pub file: PathBuf,
    /// The kernel to profile; may be left out when the file has one kernel.
    #[arg(long)]
    pub kernel: Option<String>,
    /// The target (default: the --gpu's architecture, else sm_90).
    #[arg(long)]
    pub arch: Option<String>,
    /// A GPU model for the roofline bound: h100, h200, a100, l4, rtx4090.
    #[arg(long)]
    pub gpu: Option<String>,
    /// What to write.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Count only this many CTAs, spread evenly over the grid (the output
    /// says so); default: every CTA.
    #[arg(long)]
    pub cta_sample: Option<u32>,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

pub fn run(a: Args) -> u8 {
    crate::failure::exit_code(profile(&a))
}

fn profile(a: &Args) -> Result<(), Failure> {
    let source = crate::args::read_source(&a.file).map_err(Failure::usage)?;
    let gpu = match &a.gpu {
        Some(name) => Some(roofline::gpu(name).ok_or_else(|| {
            let known: Vec<&str> = roofline::GPUS.iter().map(|g| g.name).collect();
            Failure::usage(format!(
                "--gpu {name} is not a GPU model this command knows; it knows {}",
                known.join(", ")
            ))
        })?),
        None => None,
    };
    let arch = match &a.arch {
        Some(s) => phobos_core::parse_arch(s).map_err(Failure::usage)?,
        None => gpu.map_or(90, |g| g.arch),
    };
    if a.cta_sample == Some(0) {
        return Err(Failure::usage("--cta-sample must be at least 1"));
    }
    let grid = a.launch.parsed_grid();
    let grid = grid.map_err(|m| Failure::usage(format!("--grid: {m}")))?;
    let req = request(&a.file, &source, a.kernel.as_deref(), arch, grid, &a.launch)?;
    let file_name = req.file_name.clone();
    let sample = a.cta_sample.map_or(CtaSample::All, CtaSample::Spread);
    let progress = crate::progress::Progress::start(format!("profiling {file_name}"));
    // The counters are split over every core, as plain simulation runs.
    let ran = phobos_explain::run_split(&req, |_, grid| {
        Profiler::new(grid.iter().map(|&g| u64::from(g)).product(), sample)
    });
    progress.stop();
    let (ran, profiler) = ran.map_err(|e| explain_failure(e, &file_name, &source))?;
    let registers = registers(&ran.ptx, &ran.variant.entry, arch);
    let occupancy = occupancy::occupancy(
        arch,
        CtaResources {
            threads: ran.variant.threads,
            registers,
            shared_bytes: ran.variant.shared_bytes,
        },
    )
    .map_err(|e| e.to_string());
    let totals = profiler.totals();
    let roofline = gpu.map(|g| {
        roofline::roofline(
            g,
            roofline::Work {
                dram_bytes: totals.dram_bytes,
                fp32_flops: totals.fp32_flops,
                fp64_flops: totals.fp64_flops,
                int8_ops: totals.int8_ops,
            },
        )
    });
    let report = Profile::new(
        &profiler,
        LaunchInfo {
            name: ran.meta.name.clone(),
            entry: ran.variant.entry.clone(),
            arch,
            grid: ran.grid,
            threads_per_cta: ran.variant.threads,
        },
        &source,
        occupancy,
        roofline,
    );
    let out = match a.format {
        Format::Text => report.to_text(&source),
        Format::Json => report.to_json() + "\n",
    };
    match &a.launch.output {
        Some(path) => std::fs::write(path, &out)
            .map_err(|e| Failure::usage(format!("cannot write {}: {e}", path.display()))),
        None => crate::out::print(&out).map_err(Failure::usage),
    }
}

/// Registers per thread of `entry`, from `ptxas -v` when ptxas is found.
fn registers(ptx: &str, entry: &str, arch: u32) -> Option<u32> {
    let ptxas = phobos_build::find_ptxas().ok()??.path;
    let dir = std::env::temp_dir().join(format!("phobos-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let ptx_path = dir.join("kernel.ptx");
    let cubin_path = dir.join("kernel.cubin");
    let result = std::fs::write(&ptx_path, ptx).ok().and_then(|()| {
        Command::new(&ptxas)
            .arg(format!("-arch={}", phobos_core::arch::name(arch)))
            .arg("-v")
            .arg("-o")
            .arg(&cubin_path)
            .arg(&ptx_path)
            .output()
            .ok()
    });
    let _ = std::fs::remove_dir_all(&dir);
    let out = result.filter(|o| o.status.success())?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    occupancy::registers_from_ptxas(&text, entry)
}
