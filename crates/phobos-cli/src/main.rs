#![doc = include_str!("../README.md")]
//!
//! # Inside this crate
//!
//! The `phobos` command-line tool. Each subcommand lives in its own module
//! with its own arguments; this file only dispatches. Exit codes: 0 success,
//! 1 errors in the user's kernels (or a failed check), 2 usage and IO errors.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// `eprint!` that cannot panic. The standard library's panics when standard
/// error is full or a pipe nobody reads (`2>/dev/full`, `2>&1 | head -c1`);
/// a message that cannot be shown is no reason to end differently, so these
/// shadow the standard macros in every module of this crate.
macro_rules! eprint {
    ($($arg:tt)*) => {
        $crate::out::to_stderr(format_args!($($arg)*))
    };
}

/// `eprintln!` that cannot panic (see `eprint!`).
macro_rules! eprintln {
    ($($arg:tt)*) => {
        $crate::out::to_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod args;
mod check;
mod explain;
mod failure;
mod files;
mod fmt;
mod out;
mod profile;
mod progress;
mod ptx;
mod sim;

#[derive(Parser)]
#[command(name = "phobos", version, about = "The Phobos GPU kernel compiler")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and check .pho files; report diagnostics.
    Check(check::Args),
    /// Print the PTX of a file's kernels.
    Ptx(ptx::PtxArgs),
    /// Write .ptx, .ron and (with ptxas) .cubin files for each target.
    Build(ptx::BuildArgs),
    /// Print each load's alignment and width, the shared plan and the barriers.
    Report(ptx::ReportArgs),
    /// Run a kernel on the CPU simulator with .npy inputs.
    Sim(sim::Args),
    /// Draw a kernel stepped through as the compiler built it.
    Explain(explain::Args),
    /// Rewrite .pho files in the canonical layout (docs/style.md).
    Fmt(fmt::Args),
    /// Run the language server on stdin/stdout (for editors).
    Lsp,
    /// Nsight-Compute-style counters per source line, from the simulator.
    Profile(profile::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let code = match cli.command {
        Command::Check(a) => check::run(a),
        Command::Ptx(a) => ptx::run_ptx(a),
        Command::Build(a) => ptx::run_build(a),
        Command::Report(a) => ptx::run_report(a),
        Command::Sim(a) => sim::run(a),
        Command::Explain(a) => explain::run(a),
        Command::Fmt(a) => fmt::run(a),
        Command::Lsp => match phobos_lsp::run_stdio() {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: the language server stopped: {e}");
                2
            }
        },
        Command::Profile(a) => profile::run(a),
    };
    ExitCode::from(code)
}
