//! Finding `.pho` files: the one walker of `compile_dir` and of the `phobos`
//! CLI. Directories are walked sorted by name, following symbolic links;
//! each real directory is walked once and each real file listed once,
//! however many links lead to them, so a link loop (or a ladder of links
//! that would double the walk at every rung) ends instead of repeating it. Only regular files are taken: a `.pho`
//! that is a device or a pipe inside a directory is skipped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The files and directories one walk reached.
#[derive(Debug, Default)]
pub struct Walked {
    /// `.pho` files, each real file once, in the order reached.
    pub files: Vec<PathBuf>,
    /// Every directory walked, `dir` first (a build script tracks these so
    /// a new file reruns it); empty when `dir` itself was walked before.
    pub dirs: Vec<PathBuf>,
    /// `.pho` files reached, those listed before included.
    pub reached: usize,
}

/// A path the walk could not read, with the reason.
#[derive(Debug)]
pub struct WalkError {
    pub path: PathBuf,
    pub message: String,
}

/// Walks directories and takes files, remembering every real file it has
/// listed so that no file is listed twice across calls.
#[derive(Debug, Default)]
pub struct Walker {
    /// Real paths of the files listed.
    seen: HashSet<PathBuf>,
    /// Real paths of the directories walked.
    walked: HashSet<PathBuf>,
}

impl Walker {
    pub fn new() -> Walker {
        Walker::default()
    }

    /// Takes `path` as given (any kind of file: a pipe named on a command
    /// line is read like a file). Returns false when its real file was
    /// already listed.
    pub fn file(&mut self, path: &Path) -> bool {
        self.seen.insert(real(path))
    }

    /// The `.pho` files under `dir` not listed before, and the directories
    /// walked.
    pub fn dir(&mut self, dir: &Path) -> Result<Walked, WalkError> {
        let mut out = Walked::default();
        let walked = &mut self.walked;
        let walk = walkdir::WalkDir::new(dir)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| !e.file_type().is_dir() || walked.insert(real(e.path())));
        let mut files = Vec::new();
        for entry in walk {
            let entry = match entry {
                Ok(e) => e,
                // A link back to an enclosing directory: its files are
                // already being walked.
                Err(e) if e.loop_ancestor().is_some() => continue,
                Err(e) => {
                    return Err(WalkError {
                        path: e.path().unwrap_or(dir).to_path_buf(),
                        message: e.to_string(),
                    })
                }
            };
            let path = entry.path();
            let kind = entry.file_type();
            if kind.is_dir() {
                out.dirs.push(path.to_path_buf());
            } else if kind.is_file() && path.extension().is_some_and(|x| x == "pho") {
                files.push(path.to_path_buf());
            }
        }
        out.reached = files.len();
        for path in files {
            if self.file(&path) {
                out.files.push(path);
            }
        }
        Ok(out)
    }
}

/// The path with every link resolved, or as given when that fails.
fn real(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
