//! Writing outputs into `OUT_DIR`: atomically (a temporary file in the same
//! directory, then a rename), and not at all when the file already holds the
//! same bytes, so rustc's own change tracking sees nothing new.

use crate::BuildError;
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` unless it already holds exactly them.
/// Returns whether the file was (re)written.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool, BuildError> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    write_atomic(path, bytes)?;
    Ok(true)
}

/// Writes `bytes` to a temporary file next to `path` and renames it over
/// `path`, so a reader never sees a half-written file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| BuildError::io(dir, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| BuildError::io(dir, e))?;
    tmp.write_all(bytes).map_err(|e| BuildError::io(path, e))?;
    tmp.persist(path)
        .map_err(|e| BuildError::io(path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_content_is_not_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.txt");
        assert!(write_if_changed(&p, b"one").unwrap());
        assert!(!write_if_changed(&p, b"one").unwrap());
        assert!(write_if_changed(&p, b"two").unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
    }
}
