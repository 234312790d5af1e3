//! NVIDIA's assembler: finding it, asking its version, and turning PTX into
//! cubins — in parallel across architectures, through a content-addressed
//! cache in `OUT_DIR` so an unchanged kernel is never assembled twice.

use crate::output::write_atomic;
use crate::BuildError;
use phobos_core::arch;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a ptxas was found, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptxas {
    pub path: PathBuf,
    /// The last line of `ptxas --version`, part of every cache key.
    pub version: String,
    /// The targets it can assemble (`sm_90a` as [`arch::SM_90A`]), from the "Allowed values" of
    /// `-arch` in `ptxas --help`; `None` when the help lists none (then
    /// every target is tried, and a refusal is an error).
    pub targets: Option<Vec<u32>>,
    /// Whether it was named (builder, `phobos.toml`, `PHOBOS_PTXAS`)
    /// rather than found on `PATH` or in a CUDA installation. A named
    /// ptxas too old for a target is an error; a found one skips it.
    pub named: bool,
}

impl Ptxas {
    /// Whether it can assemble the target (true when its list is unknown).
    pub fn supports(&self, arch: u32) -> bool {
        self.targets.as_ref().is_none_or(|t| t.contains(&arch))
    }
}

/// Where a CUDA installation puts ptxas when no variable names it: the
/// last place looked, after `PATH`, `CUDA_PATH` and `CUDA_HOME`.
pub const DEFAULT_CUDA_ROOT: &str = "/usr/local/cuda";

/// Finds ptxas the way builds do, for tools outside a build script (the
/// `phobos` CLI): `PHOBOS_PTXAS` (an error when it names a missing or
/// broken file), then `ptxas` on `PATH`, then `$CUDA_PATH/bin/ptxas`,
/// `$CUDA_HOME/bin/ptxas` and `/usr/local/cuda/bin/ptxas`. `Ok(None)` when
/// none is found.
pub fn find_ptxas() -> Result<Option<Ptxas>, BuildError> {
    find(None, &mut crate::config::Env::default())
}

/// Assembles one PTX module for target `arch` with `ptxas` (no cache): the
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
/// `$CUDA_PATH/bin/ptxas`, `$CUDA_HOME/bin/ptxas` and
/// `/usr/local/cuda/bin/ptxas`.
pub(crate) fn find(
    explicit: Option<PathBuf>,
    env: &mut crate::config::Env,
) -> Result<Option<Ptxas>, BuildError> {
    find_with_default(explicit, env, Path::new(DEFAULT_CUDA_ROOT))
}

/// [`find`] with the last CUDA root to look in given (tests point it at a
/// temporary directory).
pub(crate) fn find_with_default(
    explicit: Option<PathBuf>,
    env: &mut crate::config::Env,
    default_root: &Path,
) -> Result<Option<Ptxas>, BuildError> {
    // An explicitly named ptxas that does not work is an error, not a reason
    // to fall back to PTX only.
    let named = explicit.or_else(|| env.var("PHOBOS_PTXAS").map(PathBuf::from));
    if let Some(path) = named {
        return version(&path).map(|p| Some(Ptxas { named: true, ..p }));
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
    candidates.push(default_root.join("bin").join("ptxas"));
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
        targets: targets(path),
        named: false,
    })
}

/// The `sm_NN` values `ptxas --help` allows for `-arch` (its "Allowed
/// values for this option:" list, the same format from CUDA 10 to 13);
/// `None` when it lists none.
fn targets(path: &Path) -> Option<Vec<u32>> {
    let out = Command::new(path).arg("--help").output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_allowed_targets(&String::from_utf8_lossy(&out.stdout))
}

/// The `sm_` targets Phobos can number (`sm_80`, `sm_90a`; not `sm_100a`,
/// `sm_100f`, `compute_NN` or `lto_NN`) in the first "Allowed values" list of a `ptxas --help` text (the one of
/// `--gpu-name`, which comes first in every release's help).
pub(crate) fn parse_allowed_targets(help: &str) -> Option<Vec<u32>> {
    let start = help.find("--gpu-name")?;
    let rest = &help[start..];
    let list_start = rest.find("Allowed values for this option:")?;
    let list = &rest[list_start..];
    let end = list.find("Default value").unwrap_or(list.len());
    let mut arches: Vec<u32> = list[..end]
        .split(|c: char| c == '\'' || c == ',' || c.is_whitespace())
        .filter_map(|w| arch::from_name(w.strip_prefix("sm_")?))
        .collect();
    arches.sort_unstable();
    arches.dedup();
    (!arches.is_empty()).then_some(arches)
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
        arch::name(job.arch).as_bytes(),
        ptxas.version.as_bytes(),
        OPTIONS.join(" ").as_bytes(),
    ]);
    let cached = cache_dir.join(format!("{key:016x}.{}.cubin", arch::name(job.arch)));
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
        .join(format!("{}.{}.cubin", job.kernel, arch::name(job.arch)));
    std::fs::write(&input, job.ptx).map_err(|e| BuildError::io(&input, e))?;
    let run = Command::new(&ptxas.path)
        .arg(format!("-arch={}", arch::name(job.arch)))
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
                "{} rejected the PTX of kernel `{}` for {} (a Phobos compiler bug; \
                 please report it with the kernel):\n{}{}",
                ptxas.path.display(),
                job.kernel,
                arch::name(job.arch),
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&run.stderr)
            ),
        });
    }
    match std::fs::read(&output) {
        Ok(bytes) if !bytes.is_empty() => Ok(bytes),
        result => Err(BuildError::Ptxas {
            message: format!(
                "{} exited successfully but wrote {} for kernel `{}` ({}); \
                 is it NVIDIA's ptxas? (set PHOBOS_PTXAS to the real one)",
                ptxas.path.display(),
                if result.is_ok() {
                    "an empty cubin"
                } else {
                    "no cubin"
                },
                job.kernel,
                arch::name(job.arch)
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Env;

    /// A shell script that answers `--version` with `release` and
    /// `--help` with an `-arch` list of `targets`.
    fn fake_ptxas(dir: &Path, release: &str, targets: &[u32]) -> PathBuf {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let list: Vec<String> = targets
            .iter()
            .flat_map(|&t| {
                let n = &arch::name(t)["sm_".len()..];
                [format!("'compute_{n}'"), format!("'sm_{n}'")]
            })
            .collect();
        let help = bin.join("help.txt");
        std::fs::write(
            &help,
            format!(
                "--gpu-name <gpu name>   (-arch)\n        Allowed values for this option:  {}.\n        Default value:  'sm_52'.\n",
                list.join(",")
            ),
        )
        .unwrap();
        let path = bin.join("ptxas");
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\ncase \"$1\" in\n--version) echo 'Cuda compilation tools, release {release}';;\n--help) cat '{}';;\nesac\n",
                help.display()
            ),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        path
    }

    #[test]
    #[cfg(unix)]
    fn the_default_cuda_root_is_searched_last() {
        let dir = tempfile::tempdir().unwrap();
        let default_root = dir.path().join("usr-local-cuda");
        let at_default = fake_ptxas(&default_root, "12.9", &[75, 80]);
        // Nothing else names a ptxas: the default root's is found.
        let mut env = Env::fixed(&[("PATH", "/nonexistent")]);
        let found = find_with_default(None, &mut env, &default_root)
            .unwrap()
            .expect("found in the default root");
        assert_eq!(found.path, at_default);
        assert!(!found.named);
        assert_eq!(found.version, "Cuda compilation tools, release 12.9");
        assert_eq!(found.targets, Some(vec![75, 80]));
        // CUDA_HOME comes before it.
        let home = dir.path().join("cuda-home");
        let at_home = fake_ptxas(&home, "11.5", &[75]);
        let mut env = Env::fixed(&[("CUDA_HOME", home.to_str().unwrap())]);
        let found = find_with_default(None, &mut env, &default_root).unwrap();
        assert_eq!(found.map(|p| p.path), Some(at_home));
        // The real default is /usr/local/cuda.
        assert_eq!(DEFAULT_CUDA_ROOT, "/usr/local/cuda");
    }

    #[test]
    #[cfg(unix)]
    fn a_named_ptxas_is_marked_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = fake_ptxas(dir.path(), "12.9", &[75]);
        let mut env = Env::fixed(&[("PHOBOS_PTXAS", path.to_str().unwrap())]);
        let found = find_with_default(None, &mut env, dir.path())
            .unwrap()
            .unwrap();
        assert!(found.named);
        assert!(found.supports(75) && !found.supports(80));
    }

    #[test]
    fn allowed_targets_are_read_from_the_help_of_gpu_name() {
        // The shape of ptxas 12.9's help (abridged).
        let help = "--fmad <true|false>\n        Allowed values for this option:  'true','false'.\n\
            --gpu-name <gpu name>                               (-arch)\n\
            \x20       Allowed values for this option:  'compute_100','compute_100a','compute_120',\n\
            \x20       'compute_75','lto_100','sm_100','sm_100a','sm_100f','sm_120','sm_120a',\n\
            \x20       'sm_75','sm_80','sm_86','sm_89','sm_90','sm_90a'.\n\
            \x20       Default value:  'sm_52'.\n\
            --maxrregcount <N>\n";
        assert_eq!(
            parse_allowed_targets(help),
            Some(vec![75, 80, 86, 89, 90, arch::SM_90A, 100, 120])
        );
        assert_eq!(parse_allowed_targets("usage: ptxas [options]"), None);
    }

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
