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

/// Replace the text of the file at `path` (through any symbolic links) and
/// keep everything else about it: its mode, owner and group, its links.
/// The text goes to a uniquely named temporary file in the target's
/// directory, made like the file, which then replaces it, so an
/// interrupted run never leaves half a file. Where that cannot keep the
/// file as it was (another owner we may not give the new file, several
/// hard links), the file is rewritten in place.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let target = std::fs::canonicalize(path)?;
    let meta = std::fs::metadata(&target)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".fmt-tmp")
        .tempfile_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.as_file().sync_all()?;
    std::fs::set_permissions(tmp.path(), meta.permissions())?;
    if !same_owner_possible(tmp.path(), &meta) {
        drop(tmp);
        return std::fs::write(&target, text);
    }
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// Whether the new file at `tmp` can stand for the old one: it has (or can
/// be given) the old file's owner and group, and the old file has no other
/// hard links that a rename would leave behind.
#[cfg(unix)]
fn same_owner_possible(tmp: &Path, old: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    if old.nlink() > 1 {
        return false;
    }
    let Ok(new) = std::fs::metadata(tmp) else {
        return false;
    };
    (new.uid() == old.uid() && new.gid() == old.gid())
        || std::os::unix::fs::chown(tmp, Some(old.uid()), Some(old.gid())).is_ok()
}

#[cfg(not(unix))]
fn same_owner_possible(_tmp: &Path, _old: &std::fs::Metadata) -> bool {
    true
}

/// A unified diff of two texts by lines, with three lines of context, and
/// a note for what a diff of lines cannot show: line ends other than `\n`
/// and a missing final newline.
pub fn unified_diff(name: &str, old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = diff
        .unified_diff()
        .context_radius(3)
        .missing_newline_hint(true)
        .header(name, &format!("{name} (formatted)"))
        .to_string();
    if old.contains('\r') {
        let ends = if old.contains("\r\n") {
            "\\r\\n"
        } else {
            "\\r"
        };
        out.push_str(&format!(
            "note: `{name}` has {ends} line ends; formatted files end lines with \\n\n"
        ));
    }
    out
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

    /// Texts that differ only in line ends or the final newline used to
    /// give a diff with no changed line.
    #[test]
    fn diff_shows_line_ends_and_a_missing_final_newline() {
        let d = unified_diff("k.pho", "a\nb", "a\nb\n");
        assert!(d.contains("\\ No newline at end of file"), "{d}");
        let d = unified_diff("k.pho", "a\r\nb\r\n", "a\nb\n");
        assert!(d.contains("has \\r\\n line ends"), "{d}");
        let d = unified_diff("k.pho", "a\rb\r", "a\nb\n");
        assert!(d.contains("has \\r line ends"), "{d}");
    }
}
