//! `phobos check FILE|DIR... [--arch sm_80,sm_90] [--message-format
//! human|json]`: parse and check .pho files (directories are walked for
//! `*.pho`) and report the diagnostics — every error `build` would report
//! for the same targets (`--arch`, else `PHOBOS_ARCHES`, else all),
//! the backend's (shared-memory limit, unfenceable tile hazards) included. Human diagnostics go to stderr, rendered like rustc; JSON
//! diagnostics go to stdout, one object per line. Exit 0 when there are no
//! errors, 1 when any file has an error, 2 for usage and IO errors.

use phobos_core::render::{render, to_json};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MessageFormat {
    Human,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// Files or directories of .pho files.
    pub paths: Vec<PathBuf>,
    /// Targets, comma-separated (e.g. sm_80,sm_90), as for `build`; default
    /// PHOBOS_ARCHES, else every supported target.
    #[arg(long, value_delimiter = ',')]
    pub arch: Vec<String>,
    /// How to print diagnostics: rendered for people, or one JSON object per line.
    #[arg(long, value_enum, default_value = "human")]
    pub message_format: MessageFormat,
}

pub fn run(a: Args) -> u8 {
    if a.paths.is_empty() {
        eprintln!("error: give at least one .pho file or directory to check");
        return 2;
    }
    let arches = match crate::args::target_arches(&a.arch) {
        Ok(arches) => arches,
        Err(msg) => {
            eprintln!("error: {msg}");
            return 2;
        }
    };
    let files = match crate::files::collect(&a.paths) {
        Ok(f) => f,
        Err(msg) => {
            eprintln!("error: {msg}");
            return 2;
        }
    };
    let color = a.message_format == MessageFormat::Human
        && std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    let mut counts = phobos_core::diag::Counts::default();
    let mut failed_files = 0usize;
    let mut kernels = 0usize;
    for f in &files {
        let src = match crate::args::read_source(f) {
            Ok(s) => s,
            Err(msg) => {
                eprintln!("error: {msg}");
                return 2;
            }
        };
        let name = f.display().to_string();
        // Every error `build` would report for the same targets, the
        // backend's included.
        let (checked, diags) = phobos_core::check_for_targets(&src, &name, &arches);
        kernels += checked.len();
        // A P0006 counts the diagnostics it stands for, not itself.
        let these = phobos_core::diag::Counts::of(&diags);
        failed_files += usize::from(these.errors > 0);
        counts.errors += these.errors;
        counts.warnings += these.warnings;
        match a.message_format {
            MessageFormat::Human => eprint!("{}", render(&diags, &name, &src, color)),
            MessageFormat::Json => {
                if let serde_json::Value::Array(items) = to_json(&diags, &name, &src) {
                    let lines: String = items.iter().map(|item| format!("{item}\n")).collect();
                    if let Err(msg) = crate::out::print(&lines) {
                        eprintln!("error: {msg}");
                        return 2;
                    }
                }
            }
        }
    }
    if a.message_format == MessageFormat::Human {
        eprintln!("{}", summary(files.len(), failed_files, kernels, counts));
    }
    u8::from(counts.errors > 0)
}

/// The last line: errors and warnings of every file, those not shown
/// (P0006) included.
fn summary(
    files: usize,
    failed_files: usize,
    kernels: usize,
    counts: phobos_core::diag::Counts,
) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let warnings = if counts.warnings == 0 {
        String::new()
    } else {
        format!(", {}", plural(counts.warnings, "warning"))
    };
    if counts.errors == 0 {
        format!(
            "checked {}, {}: no errors{warnings}",
            plural(files, "file"),
            plural(kernels, "kernel")
        )
    } else {
        format!(
            "error: {} in {}{warnings}",
            plural(counts.errors, "error"),
            plural(failed_files, "file")
        )
    }
}
