//! The `.pho` files named on the command line: files as given, directories
//! walked (following symbolic links) for `*.pho`. Each real file is listed
//! once, however many links lead to it, and a link back to an enclosing
//! directory is not followed again, so a loop ends the walk instead of
//! repeating it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The files under `paths`, in the order given (each directory sorted).
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for p in paths {
        let meta =
            std::fs::metadata(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
        if !meta.is_dir() {
            push_once(p, &mut seen, &mut out);
            continue;
        }
        let before = out.len();
        for entry in walkdir::WalkDir::new(p)
            .follow_links(true)
            .sort_by_file_name()
        {
            let entry = match entry {
                Ok(e) => e,
                // A link back to an enclosing directory: its files are
                // already being walked.
                Err(e) if e.loop_ancestor().is_some() => continue,
                Err(e) => {
                    let at = e.path().unwrap_or(p).display().to_string();
                    return Err(format!("cannot read `{at}`: {e}"));
                }
            };
            let path = entry.path();
            if entry.file_type().is_file() && path.extension().is_some_and(|x| x == "pho") {
                push_once(path, &mut seen, &mut out);
            }
        }
        if out.len() == before {
            return Err(format!("no .pho files in `{}`", p.display()));
        }
    }
    Ok(out)
}

fn push_once(path: &Path, seen: &mut HashSet<PathBuf>, out: &mut Vec<PathBuf>) {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if seen.insert(real) {
        out.push(path.to_path_buf());
    }
}
