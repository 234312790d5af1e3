//! `phobos fmt [--check] FILE|DIR|-...`: rewrite .pho files in the
//! canonical layout of docs/style.md (the logic is
//! `phobos_core::format`). Directories are walked for `*.pho`; `-` reads
//! stdin and writes the result to stdout. `--check` changes nothing, prints
//! a diff for each file that is not formatted and exits 1. A file with
//! syntax errors is left untouched and its diagnostics are printed (exit 1).
//! Exit 2 for usage and IO errors.

use phobos_core::format::{format_source, FormatError};
use phobos_core::render::render;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Files or directories of .pho files; `-` for stdin.
    pub paths: Vec<PathBuf>,
    /// Change nothing; print a diff and exit 1 when a file is not formatted.
    #[arg(long)]
    pub check: bool,
}

/// What happened to one input.
enum Outcome {
    Unchanged,
    /// Rewritten, or (with `--check`) would be.
    Changed,
    /// Not formatted: syntax errors or an internal error, already printed.
    Failed,
}

pub fn run(a: Args) -> u8 {
    if a.paths.is_empty() {
        eprintln!("error: give at least one .pho file or directory, or `-` for stdin");
        return 2;
    }
    let mut files = Vec::new();
    for p in &a.paths {
        if p.as_os_str() == "-" {
            files.push(p.clone());
            continue;
        }
        match crate::files::collect(std::slice::from_ref(p)) {
            Ok(found) => files.extend(found),
            Err(msg) => {
                eprintln!("error: {msg}");
                return 2;
            }
        }
    }
    // A file named twice (or reached through a link) is formatted once.
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| {
        f.as_os_str() == "-" || seen.insert(std::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
    });
    let mut failed = false;
    let mut unformatted = false;
    for f in &files {
        let outcome = if f.as_os_str() == "-" {
            stdin(a.check)
        } else {
            file(f, a.check)
        };
        match outcome {
            Ok(Outcome::Unchanged) => {}
            Ok(Outcome::Changed) => unformatted |= a.check,
            Ok(Outcome::Failed) => failed = true,
            Err(msg) => {
                eprintln!("error: {msg}");
                return 2;
            }
        }
    }
    u8::from(failed || unformatted)
}

fn stdin(check: bool) -> Result<Outcome, String> {
    let src = crate::args::read_capped(std::io::stdin(), "stdin")?;
    let Some(out) = format_or_report(&src, "<stdin>") else {
        return Ok(Outcome::Failed);
    };
    if check {
        if out == src {
            return Ok(Outcome::Unchanged);
        }
        crate::out::print(&unified_diff("<stdin>", &src, &out))?;
        return Ok(Outcome::Changed);
    }
    crate::out::print(&out)?;
    Ok(if out == src {
        Outcome::Unchanged
    } else {
        Outcome::Changed
    })
}

fn file(path: &Path, check: bool) -> Result<Outcome, String> {
    let name = path.display().to_string();
    let src = crate::args::read_source(path)?;
    let Some(out) = format_or_report(&src, &name) else {
        return Ok(Outcome::Failed);
    };
    if out == src {
        return Ok(Outcome::Unchanged);
    }
    if check {
        crate::out::print(&unified_diff(&name, &src, &out))?;
    } else {
        write_atomically(path, &out).map_err(|e| format!("cannot write `{name}`: {e}"))?;
    }
    Ok(Outcome::Changed)
}

/// The formatted text, or `None` after printing why there is none.
fn format_or_report(src: &str, name: &str) -> Option<String> {
    match format_source(src) {
        Ok(out) => Some(out),
        Err(FormatError::Syntax(diags)) => {
            let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            eprint!("{}", render(&diags, name, src, color));
            eprintln!("error: `{name}` has syntax errors; left unformatted");
            None
        }
        Err(e @ FormatError::Internal(_)) => {
            eprintln!("error: `{name}`: {e}; left unformatted");
            None
        }
    }
}

/// Write through a temporary file in the same directory, so an interrupted
/// run never leaves half a file.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("pho.fmt-tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// A unified diff of two texts by lines (longest common subsequence), with
/// three lines of context.
pub fn unified_diff(name: &str, old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let ops = diff_ops(&a, &b);
    let mut out = format!("--- {name}\n+++ {name} (formatted)\n");
    const CONTEXT: usize = 3;
    let mut i = 0;
    while i < ops.len() {
        if matches!(ops[i], Op::Same(..)) {
            i += 1;
            continue;
        }
        // A hunk: from CONTEXT lines before the change to CONTEXT after the
        // last change that is within 2 * CONTEXT of the previous one.
        let start = i.saturating_sub(CONTEXT);
        let mut end = i;
        let mut j = i;
        while j < ops.len() {
            if !matches!(ops[j], Op::Same(..)) {
                end = j;
            } else if j - end > 2 * CONTEXT {
                break;
            }
            j += 1;
        }
        let stop = (end + 1 + CONTEXT).min(ops.len());
        let (mut la, mut lb) = (usize::MAX, usize::MAX);
        let (mut na, mut nb) = (0, 0);
        for op in &ops[start..stop] {
            match *op {
                Op::Same(x, y) => {
                    la = la.min(x);
                    lb = lb.min(y);
                    na += 1;
                    nb += 1;
                }
                Op::Del(x) => {
                    la = la.min(x);
                    na += 1;
                }
                Op::Add(y) => {
                    lb = lb.min(y);
                    nb += 1;
                }
            }
        }
        let la = if la == usize::MAX { 0 } else { la + 1 };
        let lb = if lb == usize::MAX { 0 } else { lb + 1 };
        out.push_str(&format!("@@ -{la},{na} +{lb},{nb} @@\n"));
        for op in &ops[start..stop] {
            match *op {
                Op::Same(x, _) => out.push_str(&format!(" {}\n", a[x])),
                Op::Del(x) => out.push_str(&format!("-{}\n", a[x])),
                Op::Add(y) => out.push_str(&format!("+{}\n", b[y])),
            }
        }
        i = stop;
    }
    out
}

#[derive(Clone, Copy)]
enum Op {
    Same(usize, usize),
    Del(usize),
    Add(usize),
}

fn diff_ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    // Past a few million cells the table costs too much memory: show the
    // whole file replaced instead.
    if a.len().saturating_mul(b.len()) > 4_000_000 {
        let mut ops: Vec<Op> = (0..a.len()).map(Op::Del).collect();
        ops.extend((0..b.len()).map(Op::Add));
        return ops;
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push(Op::Same(i, j));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(Op::Del(i));
            i += 1;
        } else {
            ops.push(Op::Add(j));
            j += 1;
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::unified_diff;

    #[test]
    fn diff_shows_changed_lines_with_context() {
        let d = unified_diff("k.pho", "a\nb\nc\n", "a\nB\nc\n");
        assert_eq!(
            d,
            "--- k.pho\n+++ k.pho (formatted)\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
    }
}
