//! NVIDIA's assembler: finding it, asking its version, and turning PTX into
//! cubins — in parallel across architectures, through a content-addressed
//! cache in `OUT_DIR` so an unchanged kernel is never assembled twice.

use crate::output::write_atomic;
use crate::BuildError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a ptxas was found, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptxas {
    pub path: PathBuf,
    /// The last line of `ptxas --version`, part of every cache key.
    pub version: String,
}

/// Finds ptxas the way builds do, for tools outside a build script (the
/// `phobos` CLI): `PHOBOS_PTXAS` (an error when it names a missing or
/// broken file), then `ptxas` on `PATH`, then `$CUDA_PATH/bin/ptxas` and
/// `$CUDA_HOME/bin/ptxas`. `Ok(None)` when none is found.
pub fn find_ptxas() -> Result<Option<Ptxas>, BuildError> {
    find(None, &mut crate::config::Env::default())
}

/// Assembles one PTX module for `sm_{arch}` with `ptxas` (no cache): the
/// cubin's bytes. A ptxas that fails, or that succeeds without writing a
/// cubin, is an error that says so.
pub fn assemble_ptx(
    ptxas: &Ptxas,
    kernel: &str,
    arch: u32,
    ptx: &str,
) -> Result<Vec<u8>, BuildError> {
    assemble(ptxas, &Job { kernel, arch, ptx })
}

/// Candidate locations, in order: the builder's or phobos.toml's path (given
/// as `explicit`), `PHOBOS_PTXAS`, `ptxas` on `PATH`, then
/// `$CUDA_PATH/bin/ptxas` and `$CUDA_HOME/bin/ptxas`.
pub(crate) fn find(
    explicit: Option<PathBuf>,
    env: &mut crate::config::Env,
) -> Result<Option<Ptxas>, BuildError> {
    // An explicitly named ptxas that does not work is an error, not a reason
    // to fall back to PTX only.
    let named = explicit.or_else(|| env.var("PHOBOS_PTXAS").map(PathBuf::from));
    if let Some(path) = named {
        return version(&path).map(Some);
    }
    let path_var = env.var("PATH");
    let mut candidates = Vec::new();
    if let Some(p) = path_var {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        if let Ok(found) = which::which_in("ptxas", Some(p), cwd) {
            candidates.push(found);
        }
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = env.var(var) {
            candidates.push(Path::new(&root).join("bin").join("ptxas"));
        }
    }
    Ok(candidates
        .into_iter()
        .filter(|p| p.is_file())
        .find_map(|p| version(&p).ok()))
}

fn version(path: &Path) -> Result<Ptxas, BuildError> {
    let out = Command::new(path)
        .arg("--version")
        .output()
        .map_err(|e| BuildError::Ptxas {
            message: format!("cannot run {}: {e}", path.display()),
        })?;
    if !out.status.success() {
        return Err(BuildError::Ptxas {
            message: format!(
                "{} --version failed: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("unknown")
        .trim()
        .to_string();
    Ok(Ptxas {
        path: path.to_path_buf(),
        version,
    })
}

/// A cubin and whether it came from the cache.
type CachedCubin = Result<(Vec<u8>, bool), BuildError>;

/// One PTX module to assemble for one architecture.
pub(crate) struct Job<'a> {
    pub kernel: &'a str,
    pub arch: u32,
    pub ptx: &'a str,
}

/// FNV-1a, 64 bits: a stable content hash (std's hasher may change between
/// releases, which would only cost a rebuild, but this never does).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in (part.len() as u64).to_le_bytes().iter().chain(part.iter()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Options passed to every ptxas run (part of the cache key).
const OPTIONS: [&str; 1] = ["-O3"];

/// Assembles every job (architectures in parallel, one thread each) and
/// returns the cubins in job order, plus how many came from the cache.
pub(crate) fn assemble_all(
    ptxas: &Ptxas,
    jobs: &[Job<'_>],
    cache_dir: &Path,
) -> Result<(Vec<Vec<u8>>, usize), BuildError> {
    std::fs::create_dir_all(cache_dir).map_err(|e| BuildError::io(cache_dir, e))?;
    let mut arches: Vec<u32> = jobs.iter().map(|j| j.arch).collect();
    arches.sort_unstable();
    arches.dedup();
    let results: Vec<Vec<(usize, CachedCubin)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = arches
            .iter()
            .map(|&arch| {
                scope.spawn(move || {
                    jobs.iter()
                        .enumerate()
                        .filter(|(_, j)| j.arch == arch)
                        .map(|(i, j)| (i, assemble_cached(ptxas, j, cache_dir)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    vec![(
                        usize::MAX,
                        Err(BuildError::Ptxas {
                            message: "an assembler thread panicked".to_string(),
                        }),
                    )]
                })
            })
            .collect()
    });
    let mut cubins = vec![Vec::new(); jobs.len()];
    let mut cached = 0;
    for (i, result) in results.into_iter().flatten() {
        let (bytes, hit) = result?;
        cached += usize::from(hit);
        if let Some(slot) = cubins.get_mut(i) {
            *slot = bytes;
        }
    }
    Ok((cubins, cached))
}

/// The cubin for one job, from the cache when the same PTX was assembled
/// for the same architecture by the same ptxas before. `true` = cache hit.
fn assemble_cached(
    ptxas: &Ptxas,
    job: &Job<'_>,
    cache_dir: &Path,
) -> Result<(Vec<u8>, bool), BuildError> {
    let key = fnv1a(&[
        job.ptx.as_bytes(),
        job.arch.to_string().as_bytes(),
        ptxas.version.as_bytes(),
        OPTIONS.join(" ").as_bytes(),
    ]);
    let cached = cache_dir.join(format!("{key:016x}.sm_{}.cubin", job.arch));
    if let Ok(bytes) = std::fs::read(&cached) {
        if !bytes.is_empty() {
            return Ok((bytes, true));
        }
    }
    let bytes = assemble(ptxas, job)?;
    write_atomic(&cached, &bytes)?;
    Ok((bytes, false))
}

fn assemble(ptxas: &Ptxas, job: &Job<'_>) -> Result<Vec<u8>, BuildError> {
    let tmp = tempfile::Builder::new()
        .prefix("phobos-ptxas")
        .tempdir()
        .map_err(|e| BuildError::Ptxas {
            message: format!("cannot create a temporary directory: {e}"),
        })?;
    let input = tmp.path().join(format!("{}.ptx", job.kernel));
    let output = tmp
        .path()
        .join(format!("{}.sm_{}.cubin", job.kernel, job.arch));
    std::fs::write(&input, job.ptx).map_err(|e| BuildError::io(&input, e))?;
    let run = Command::new(&ptxas.path)
        .arg(format!("-arch=sm_{}", job.arch))
        .args(OPTIONS)
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output()
        .map_err(|e| BuildError::Ptxas {
            message: format!("cannot run {}: {e}", ptxas.path.display()),
        })?;
    if !run.status.success() {
        return Err(BuildError::Ptxas {
            message: format!(
                "{} rejected the PTX of kernel `{}` for sm_{} (a Phobos compiler bug; \
                 please report it with the kernel):\n{}{}",
                ptxas.path.display(),
                job.kernel,
                job.arch,
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&run.stderr)
            ),
        });
    }
    match std::fs::read(&output) {
        Ok(bytes) if !bytes.is_empty() => Ok(bytes),
        result => Err(BuildError::Ptxas {
            message: format!(
                "{} exited successfully but wrote {} for kernel `{}` (sm_{}); \
                 is it NVIDIA's ptxas? (set PHOBOS_PTXAS to the real one)",
                ptxas.path.display(),
                if result.is_ok() {
                    "an empty cubin"
                } else {
                    "no cubin"
                },
                job.kernel,
                job.arch
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_separates_parts_and_is_stable() {
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        // Pinned values, so a changed hash (which would silently miss every
        // cached cubin) fails here: FNV-1a 64 over each part's length as 8
        // little-endian bytes followed by its bytes, computed independently
        // (Python, checked against the published FNV-1a vector for "a",
        // 0xaf63dc4c8601ec8c).
        assert_eq!(fnv1a(&[b"x"]), 0x529a_64dc_8ff5_92d4);
        assert_eq!(fnv1a(&[b"ab", b"c"]), 0x7e60_470b_f599_cad6);
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
    }
}
