//! The `.pho` files named on the command line: files as given, directories
//! walked for `*.pho` by `phobos_build::walk` (the walker `compile_dir`
//! uses): links followed, each real directory walked once and each real
//! file listed once, so a link loop ends the walk instead of repeating it.

use phobos_build::walk::Walker;
use std::path::PathBuf;

/// The files under `paths`, in the order given (each directory sorted).
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut walker = Walker::new();
    for p in paths {
        let meta =
            std::fs::metadata(p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))?;
        if !meta.is_dir() {
            if walker.file(p) {
                out.push(p.clone());
            }
            continue;
        }
        let walked = walker
            .dir(p)
            .map_err(|e| format!("cannot read `{}`: {}", e.path.display(), e.message))?;
        if walked.reached == 0 && !walked.dirs.is_empty() {
            return Err(format!("no .pho files in `{}`", p.display()));
        }
        out.extend(walked.files);
    }
    Ok(out)
}

/// Creates the `--out` directory of `sim` and `build` (if missing) and
/// checks that a file can be written in it, so that a path that is a file
/// (`--out /dev/null`) or a directory that cannot be written is refused
/// before any work, with the same words in both commands.
pub fn out_dir(dir: &std::path::Path) -> Result<(), String> {
    let shown = dir.display();
    if dir.exists() && !dir.is_dir() {
        return Err(format!("--out `{shown}` is a file, not a directory"));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create `{shown}`: {e}"))?;
    let probe = dir.join(format!(".phobos-out-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| format!("cannot write in --out `{shown}`: {e}"))
}
