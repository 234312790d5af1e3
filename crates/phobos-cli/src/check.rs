//! `phobos check FILE|DIR... [--message-format human|json]`: parse and
//! check .pho files (directories are walked for `*.pho`) and report the
//! diagnostics — every error `build` would report for the default targets,
//! the backend's (shared-memory limit, unfenceable tile hazards) included. Human diagnostics go to stderr, rendered like rustc; JSON
//! diagnostics go to stdout, one object per line. Exit 0 when there are no
//! errors, 1 when any file has an error, 2 for usage and IO errors.

use phobos_core::render::{render, to_json};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MessageFormat {
    Human,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// Files or directories of .pho files.
    pub paths: Vec<PathBuf>,
    /// How to print diagnostics: rendered for people, or one JSON object per line.
    #[arg(long, value_enum, default_value = "human")]
    pub message_format: MessageFormat,
}

pub fn run(a: Args) -> u8 {
    if a.paths.is_empty() {
        eprintln!("error: give at least one .pho file or directory to check");
        return 2;
    }
    let mut files = Vec::new();
    for p in &a.paths {
        if let Err(msg) = collect(p, &mut files) {
            eprintln!("error: {msg}");
            return 2;
        }
    }
    let color = a.message_format == MessageFormat::Human
        && std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none();
    let mut errors = 0usize;
    let mut kernels = 0usize;
    for f in &files {
        let src = match std::fs::read_to_string(f) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot read `{}`: {e}", f.display());
                return 2;
            }
        };
        let name = f.display().to_string();
        // Every error `build` would report for the default targets,
        // the backend's included.
        let (checked, diags) = phobos_core::check_for_targets(&src, &name, &phobos_core::ARCHES);
        kernels += checked.len();
        errors += diags.iter().filter(|d| d.is_error()).count();
        match a.message_format {
            MessageFormat::Human => eprint!("{}", render(&diags, &name, &src, color)),
            MessageFormat::Json => {
                if let serde_json::Value::Array(items) = to_json(&diags, &name, &src) {
                    for item in items {
                        println!("{item}");
                    }
                }
            }
        }
    }
    if a.message_format == MessageFormat::Human {
        eprintln!("{}", summary(files.len(), kernels, errors));
    }
    u8::from(errors > 0)
}

fn summary(files: usize, kernels: usize, errors: usize) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    if errors == 0 {
        format!(
            "checked {}, {}: no errors",
            plural(files, "file"),
            plural(kernels, "kernel")
        )
    } else {
        format!(
            "error: {} in {}",
            plural(errors, "error"),
            plural(files, "file")
        )
    }
}

/// A file as given, or every `*.pho` under a directory, sorted.
fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if !meta.is_dir() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let before = out.len();
    walk(path, out).map_err(|e| format!("cannot read the directory `{}`: {e}", path.display()))?;
    if out.len() == before {
        return Err(format!("no .pho files in `{}`", path.display()));
    }
    Ok(())
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "pho") {
            out.push(p);
        }
    }
    Ok(())
}
