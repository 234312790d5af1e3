//! The simulated device as the environment describes it, read once at
//! `cuInit`. Every variable is optional; a malformed one makes `cuInit`
//! fail with `CUDA_ERROR_INVALID_VALUE` and a message on stderr, so a typo
//! never silently gives another device than the one asked for.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `PHOBOS_FAKE_GPU_NAME` | the device name | `Phobos fake GPU (phobos-sim)` |
//! | `PHOBOS_FAKE_GPU_CC` | compute capability, `8.6` or `86` | `8.6` |
//! | `PHOBOS_FAKE_GPU_MEMORY` | total memory, bytes or `16GiB`/`512MiB`/`64KiB` | `16GiB` |
//! | `PHOBOS_FAKE_GPU_MAX_THREADS` | threads per block | `1024` |
//! | `PHOBOS_FAKE_GPU_MAX_GRID` | grid limit, `x,y,z` | `2147483647,65535,65535` |
//! | `PHOBOS_FAKE_GPU_SHARED_PER_BLOCK` | static shared bytes per block | `49152` |
//! | `PHOBOS_FAKE_GPU_SHARED_PER_BLOCK_OPTIN` | static plus dynamic shared bytes per block once a function opts in (`cuFuncSetAttribute`) | the compute capability's, e.g. `101376` on 8.6 |
//! | `PHOBOS_FAKE_GPU_SMS` | multiprocessors (simulated time only) | `80` |
//! | `PHOBOS_FAKE_GPU_DRIVER_VERSION` | `cuDriverGetVersion` | `12090` |
//! | `PHOBOS_FAKE_GPU_MAX_WORK` | the most simulated threads (CTAs × threads per CTA) one launch may have: a larger launch, which would run for hours on the CPU, fails with `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` and a message naming the value that would allow it | `67108864` (2^26) |
//! | `PHOBOS_FAKE_GPU_OOM_AT` | the Nth `cuMemAlloc` (from 1) fails with out of memory | off |
//! | `PHOBOS_FAKE_GPU_FAIL_LAUNCH` | the Nth `cuLaunchKernel` (from 1) fails asynchronously | off |
//! | `PHOBOS_FAKE_GPU_FAULT_ENTRY` | kernels (entry names, comma-separated) whose every launch faults with `CUDA_ERROR_ILLEGAL_ADDRESS`, sticky as a real fault: one bad kernel, in whatever process runs it | none |
//! | `PHOBOS_FAKE_GPU_HANG_ENTRY` | kernels (entry names, comma-separated) whose launch never returns: a kernel that hangs the GPU | none |
//! | `PHOBOS_FAKE_GPU_FAIL` | entry points (comma-separated, e.g. `cuDeviceGetName`) that fail with `CUDA_ERROR_UNKNOWN` | none |
//! | `PHOBOS_FAKE_GPU_LAUNCH_RENDEZVOUS` | each launch waits until N launches are inside the driver at once (tests of concurrency) | off |
//! | `PHOBOS_FAKE_GPU_LOAD_RENDEZVOUS` | the same for module loads | off |
//! | `PHOBOS_FAKE_GPU_TRACE` | a file each driver call that does work is appended to | off |
//! | `PHOBOS_FAKE_GPU_QUIET` | `1`: do not print sanitizer reports to stderr | off |
//! | `PHOBOS_FAKE_GPU_SKIP_RUN` | `1`: launches are checked, counted and timed as usual but the kernel is not simulated (host launch-overhead benchmarks) | off |

use std::env;

/// The default `PHOBOS_FAKE_GPU_MAX_WORK`: 2^26 simulated threads, 16 times
/// the command line's budget (`phobos_sim::DEFAULT_MAX_WORK`), since a
/// program's launches are its own; a launch of 2^31 - 1 CTAs, which is
/// legal on a GPU, would take hours on the CPU.
pub(crate) const DEFAULT_MAX_WORK: u64 = 1 << 26;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Config {
    pub name: String,
    /// Compute capability as `major * 10 + minor`.
    pub arch: u32,
    pub memory_bytes: u64,
    pub max_threads_per_block: u32,
    pub max_grid: [u32; 3],
    pub shared_per_block: u32,
    /// `MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`: the most a function may use
    /// once its `MAX_DYNAMIC_SHARED_SIZE_BYTES` is raised.
    pub shared_per_block_optin: u32,
    pub sms: u32,
    pub driver_version: i32,
    /// The most simulated threads one launch may have
    /// (`phobos_sim::check_work`).
    pub max_work: u64,
    pub oom_at: Option<u64>,
    pub fail_launch: Option<u64>,
    pub fault_entries: Vec<String>,
    pub hang_entries: Vec<String>,
    pub fail_calls: Vec<String>,
    pub launch_rendezvous: Option<usize>,
    pub load_rendezvous: Option<usize>,
    pub trace: Option<String>,
    pub quiet: bool,
    /// `PHOBOS_FAKE_GPU_SKIP_RUN`: accept launches without simulating them.
    pub skip_run: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            name: "Phobos fake GPU (phobos-sim)".to_string(),
            arch: 86,
            memory_bytes: 16 << 30,
            max_threads_per_block: 1024,
            max_grid: [i32::MAX as u32, 65535, 65535],
            shared_per_block: 48 * 1024,
            shared_per_block_optin: phobos_sim::max_shared_bytes(Some(86)),
            sms: 80,
            driver_version: 12090,
            max_work: DEFAULT_MAX_WORK,
            oom_at: None,
            fail_launch: None,
            fault_entries: Vec::new(),
            hang_entries: Vec::new(),
            fail_calls: Vec::new(),
            launch_rendezvous: None,
            load_rendezvous: None,
            trace: None,
            quiet: false,
            skip_run: false,
        }
    }
}

impl Config {
    /// The configuration the process environment describes.
    pub(crate) fn from_env() -> Result<Config, String> {
        Config::from_lookup(|k| env::var(k).ok())
    }

    pub(crate) fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let mut c = Config::default();
        let var = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        if let Some(v) = var("PHOBOS_FAKE_GPU_NAME") {
            c.name = v;
        }
        if let Some(v) = var("PHOBOS_FAKE_GPU_CC") {
            c.arch = parse_cc(&v).ok_or_else(|| bad("PHOBOS_FAKE_GPU_CC", &v, "`8.6` or `86`"))?;
        }
        if let Some(v) = var("PHOBOS_FAKE_GPU_MEMORY") {
            c.memory_bytes = parse_bytes(&v)
                .ok_or_else(|| bad("PHOBOS_FAKE_GPU_MEMORY", &v, "bytes, or `16GiB`"))?;
        }
        let num = |k: &str| -> Result<Option<u64>, String> {
            match var(k) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| bad(k, &v, "a whole number")),
            }
        };
        let small =
            |k: &str, v: u64| u32::try_from(v).map_err(|_| bad(k, &v.to_string(), "< 2^32"));
        if let Some(v) = num("PHOBOS_FAKE_GPU_MAX_THREADS")? {
            c.max_threads_per_block = small("PHOBOS_FAKE_GPU_MAX_THREADS", v)?;
        }
        if let Some(v) = var("PHOBOS_FAKE_GPU_MAX_GRID") {
            let parts: Vec<Option<u32>> = v.split(',').map(|p| p.trim().parse().ok()).collect();
            match parts.as_slice() {
                [Some(x), Some(y), Some(z)] => c.max_grid = [*x, *y, *z],
                _ => return Err(bad("PHOBOS_FAKE_GPU_MAX_GRID", &v, "`x,y,z`")),
            }
        }
        if let Some(v) = num("PHOBOS_FAKE_GPU_SHARED_PER_BLOCK")? {
            c.shared_per_block = small("PHOBOS_FAKE_GPU_SHARED_PER_BLOCK", v)?;
        }
        c.shared_per_block_optin = phobos_sim::max_shared_bytes(Some(c.arch));
        if let Some(v) = num("PHOBOS_FAKE_GPU_SHARED_PER_BLOCK_OPTIN")? {
            c.shared_per_block_optin = small("PHOBOS_FAKE_GPU_SHARED_PER_BLOCK_OPTIN", v)?;
        }
        if let Some(v) = num("PHOBOS_FAKE_GPU_SMS")? {
            c.sms = small("PHOBOS_FAKE_GPU_SMS", v)?.max(1);
        }
        if let Some(v) = num("PHOBOS_FAKE_GPU_DRIVER_VERSION")? {
            c.driver_version = i32::try_from(v)
                .map_err(|_| bad("PHOBOS_FAKE_GPU_DRIVER_VERSION", &v.to_string(), "< 2^31"))?;
        }
        if let Some(v) = num("PHOBOS_FAKE_GPU_MAX_WORK")? {
            c.max_work = v;
        }
        c.oom_at = num("PHOBOS_FAKE_GPU_OOM_AT")?;
        c.fail_launch = num("PHOBOS_FAKE_GPU_FAIL_LAUNCH")?;
        let list = |name: &str| -> Vec<String> {
            var(name)
                .map(|v| {
                    v.split(',')
                        .map(|c| c.trim().to_string())
                        .filter(|c| !c.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        c.fail_calls = list("PHOBOS_FAKE_GPU_FAIL");
        c.fault_entries = list("PHOBOS_FAKE_GPU_FAULT_ENTRY");
        c.hang_entries = list("PHOBOS_FAKE_GPU_HANG_ENTRY");
        c.launch_rendezvous = num("PHOBOS_FAKE_GPU_LAUNCH_RENDEZVOUS")?.map(|n| n as usize);
        c.load_rendezvous = num("PHOBOS_FAKE_GPU_LOAD_RENDEZVOUS")?.map(|n| n as usize);
        c.trace = var("PHOBOS_FAKE_GPU_TRACE");
        c.quiet = var("PHOBOS_FAKE_GPU_QUIET").is_some_and(|v| v != "0");
        c.skip_run = var("PHOBOS_FAKE_GPU_SKIP_RUN").is_some_and(|v| v != "0");
        if c.arch < 30 {
            return Err(bad(
                "PHOBOS_FAKE_GPU_CC",
                &c.arch.to_string(),
                "3.0 or newer",
            ));
        }
        Ok(c)
    }
}

fn bad(key: &str, value: &str, expected: &str) -> String {
    format!("{key}={value:?} is not {expected}")
}

/// `8.6`, `86` or `sm_86` → 86.
fn parse_cc(v: &str) -> Option<u32> {
    let v = v.trim().trim_start_matches("sm_");
    match v.split_once('.') {
        Some((major, minor)) => {
            let (major, minor): (u32, u32) = (major.parse().ok()?, minor.parse().ok()?);
            (minor < 10).then(|| major * 10 + minor)
        }
        None => v.parse().ok(),
    }
}

/// `1024`, `64KiB`, `512MiB`, `16GiB` (also `K`, `M`, `G`, `KB`, ...; all
/// binary multiples).
fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, unit) = v.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    n.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(pairs: &[(&str, &str)]) -> Result<Config, String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn the_environment_describes_the_device() {
        assert_eq!(with(&[]).unwrap(), Config::default());
        let c = with(&[
            ("PHOBOS_FAKE_GPU_NAME", "Test GPU"),
            ("PHOBOS_FAKE_GPU_CC", "9.0"),
            ("PHOBOS_FAKE_GPU_MEMORY", "512MiB"),
            ("PHOBOS_FAKE_GPU_MAX_GRID", "100, 10, 1"),
            ("PHOBOS_FAKE_GPU_OOM_AT", "3"),
            ("PHOBOS_FAKE_GPU_QUIET", "1"),
            ("PHOBOS_FAKE_GPU_MAX_WORK", "1024"),
        ])
        .unwrap();
        assert_eq!(c.name, "Test GPU");
        assert_eq!(c.arch, 90);
        assert_eq!(c.memory_bytes, 512 << 20);
        assert_eq!(c.max_grid, [100, 10, 1]);
        assert_eq!(c.oom_at, Some(3));
        assert_eq!(c.max_work, 1024);
        assert!(c.quiet);
        assert_eq!(with(&[("PHOBOS_FAKE_GPU_CC", "sm_75")]).unwrap().arch, 75);
    }

    #[test]
    fn a_malformed_variable_is_an_error_that_names_it() {
        for (k, v) in [
            ("PHOBOS_FAKE_GPU_CC", "eight"),
            ("PHOBOS_FAKE_GPU_CC", "8.10"),
            ("PHOBOS_FAKE_GPU_CC", "2.0"),
            ("PHOBOS_FAKE_GPU_MEMORY", "16 parsecs"),
            ("PHOBOS_FAKE_GPU_MEMORY", "99999999999999T"),
            ("PHOBOS_FAKE_GPU_MAX_GRID", "1,2"),
            ("PHOBOS_FAKE_GPU_OOM_AT", "-1"),
            ("PHOBOS_FAKE_GPU_MAX_WORK", "lots"),
            ("PHOBOS_FAKE_GPU_MAX_THREADS", "99999999999"),
        ] {
            let e = with(&[(k, v)]).unwrap_err();
            assert!(e.contains(k), "{e}");
        }
    }
}
