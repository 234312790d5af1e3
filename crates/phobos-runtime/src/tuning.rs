//! Autotune decisions, kept so that a variant is timed once per GPU,
//! driver, kernel and dims — not once per process.
//!
//! Three sources, consulted in this order before anything is timed:
//! 1. the decisions of this process;
//! 2. decisions shipped with the program — embedded by the build
//!    (`phobos_build::Builder::tuning`, read through `Kernel::with_tuning`)
//!    or given to `Device::preload_tuning` — from a file
//!    `Device::export_tuning` wrote; these match on GPU name,
//!    compute capability, kernel content and dims, not on the driver
//!    version, so a release binary's tuning applies on its users' drivers;
//! 3. the on-disk cache: `$PHOBOS_TUNE_CACHE` (a file path; `off` or `0`
//!    disables it), else `$XDG_CACHE_HOME/phobos/autotune.ron`, else
//!    `~/.cache/phobos/autotune.ron`. Keys hold the GPU name, compute
//!    capability, driver version, the kernel's module, name and content
//!    hash, and the dims, so a rebuilt kernel or a new driver is timed
//!    again and two kernels never share a decision.
//!
//! It owns the file format and its atomic updates; the timing itself is in
//! `launch.rs` (the loop) and `cuda.rs` (events).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// What a decision is keyed by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub(crate) struct TuneKey {
    pub gpu: String,
    pub arch: u32,
    pub driver: i32,
    pub module: String,
    pub kernel: String,
    /// The kernel's content hash, in hex.
    pub hash: String,
    pub dims: Vec<(String, usize)>,
}

impl TuneKey {
    /// The key with the driver version left out, as shipped tuning matches.
    fn shipped(&self) -> TuneKey {
        TuneKey {
            driver: 0,
            ..self.clone()
        }
    }
}

/// One decision: the PTX entry of the variant that was fastest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Entry {
    key: TuneKey,
    entry: String,
}

/// The file format of the on-disk cache and of exported tuning.
#[derive(Debug, Default, Serialize, Deserialize)]
struct TuningFile {
    version: u32,
    entries: Vec<Entry>,
}

const FORMAT_VERSION: u32 = 1;

fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let file: TuningFile = ron::from_str(text).map_err(|e| e.to_string())?;
    if file.version != FORMAT_VERSION {
        return Err(format!(
            "tuning format version {} (this runtime reads {FORMAT_VERSION})",
            file.version
        ));
    }
    Ok(file.entries)
}

fn render(entries: impl IntoIterator<Item = Entry>) -> String {
    let file = TuningFile {
        version: FORMAT_VERSION,
        entries: entries.into_iter().collect(),
    };
    ron::ser::to_string_pretty(&file, ron::ser::PrettyConfig::default())
        .unwrap_or_else(|_| String::new())
}

/// Writes `text` to `path` through a temporary file and a rename, so a
/// reader never sees half a file.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Where the on-disk cache lives, or `None` when it is disabled.
pub(crate) fn cache_path() -> Option<PathBuf> {
    match std::env::var_os("PHOBOS_TUNE_CACHE") {
        Some(v) if v == "off" || v == "0" || v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
            Some(base.join("phobos").join("autotune.ron"))
        }
    }
}

/// A device's autotune decisions.
pub(crate) struct Tuning {
    decided: Mutex<BTreeMap<TuneKey, String>>,
    shipped: Mutex<BTreeMap<TuneKey, String>>,
    cache: Option<PathBuf>,
    /// [`Tuning::generation`].
    generation: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Tuning {
    pub(crate) fn new(cache: Option<PathBuf>) -> Tuning {
        Tuning {
            decided: Mutex::new(BTreeMap::new()),
            shipped: Mutex::new(BTreeMap::new()),
            cache,
            generation: AtomicU64::new(0),
        }
    }

    /// The entry chosen for `key`, from this process, shipped tuning or
    /// the on-disk cache (an unreadable cache is ignored: it only costs a
    /// timing).
    pub(crate) fn lookup(&self, key: &TuneKey) -> Option<String> {
        if let Some(e) = lock(&self.decided).get(key) {
            return Some(e.clone());
        }
        if let Some(e) = lock(&self.shipped).get(&key.shipped()) {
            return Some(e.clone());
        }
        let text = std::fs::read_to_string(self.cache.as_ref()?).ok()?;
        let found = parse(&text)
            .ok()?
            .into_iter()
            .find(|e| e.key == *key)
            .map(|e| e.entry)?;
        lock(&self.decided).insert(key.clone(), found.clone());
        Some(found)
    }

    /// Counts the `preload`s: what [`Tuning::lookup`] returned for a key
    /// stays its answer while this is unchanged (a decision of this
    /// process is never replaced; a shipped one only by a `preload`), so
    /// a launch may remember it (`Kernel`'s settled choices) and skip
    /// building the key.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Keeps a timed decision, in memory and in the on-disk cache (merged
    /// with what other processes wrote there meanwhile).
    pub(crate) fn decide(&self, key: TuneKey, entry: &str) {
        lock(&self.decided).insert(key.clone(), entry.to_string());
        let Some(path) = &self.cache else { return };
        let mut entries = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| parse(&t).ok())
            .unwrap_or_default();
        entries.retain(|e| e.key != key);
        entries.push(Entry {
            key,
            entry: entry.to_string(),
        });
        // Failing to write the cache only means timing again next run.
        let _ = write_atomically(path, &render(entries));
    }

    /// Makes shipped decisions known; returns how many were read.
    pub(crate) fn preload(&self, text: &str) -> Result<usize, String> {
        let entries = parse(text)?;
        let n = entries.len();
        let mut shipped = lock(&self.shipped);
        for e in entries {
            shipped.insert(e.key.shipped(), e.entry);
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(n)
    }

    /// Every decision this device knows — made here, or read from the
    /// cache — as the RON text `preload` reads.
    pub(crate) fn export(&self) -> (String, usize) {
        let mut all: BTreeMap<TuneKey, String> = BTreeMap::new();
        if let Some(text) = self
            .cache
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
        {
            for e in parse(&text).unwrap_or_default() {
                all.insert(e.key, e.entry);
            }
        }
        all.extend(lock(&self.decided).clone());
        let n = all.len();
        let text = render(all.into_iter().map(|(key, entry)| Entry { key, entry }));
        (text, n)
    }
}

/// Tuning a build embedded with a kernel, parsed: decisions keyed as
/// shipped tuning matches them (no driver version).
#[derive(Debug, Default)]
pub(crate) struct Embedded {
    choices: BTreeMap<TuneKey, String>,
}

impl Embedded {
    /// Parses embedded tuning text; an unreadable file (which the build
    /// already refused unless it was hand-edited afterwards) embeds nothing,
    /// so launches time as they would without it.
    pub(crate) fn parse(text: &str) -> Embedded {
        let choices = parse(text)
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.key.shipped(), e.entry))
            .collect();
        Embedded { choices }
    }

    pub(crate) fn lookup(&self, key: &TuneKey) -> Option<&str> {
        self.choices.get(&key.shipped()).map(String::as_str)
    }
}

pub(crate) fn write_export(path: &Path, text: &str) -> std::io::Result<()> {
    write_atomically(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(driver: i32, hash: &str) -> TuneKey {
        TuneKey {
            gpu: "GPU".into(),
            arch: 86,
            driver,
            module: "m.pho".into(),
            kernel: "k".into(),
            hash: hash.into(),
            dims: vec![("N".into(), 1000)],
        }
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("phobos-tuning-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("autotune.ron")
    }

    #[test]
    fn decisions_persist_per_driver_and_kernel_content() {
        let path = temp("persist");
        Tuning::new(Some(path.clone())).decide(key(12090, "aa"), "k_BLOCK_128");
        let fresh = Tuning::new(Some(path.clone()));
        assert_eq!(
            fresh.lookup(&key(12090, "aa")).as_deref(),
            Some("k_BLOCK_128")
        );
        // Another driver, or a rebuilt kernel, is timed again.
        assert_eq!(fresh.lookup(&key(12080, "aa")), None);
        assert_eq!(fresh.lookup(&key(12090, "bb")), None);
        // Decisions of several processes merge.
        fresh.decide(key(12090, "bb"), "k_BLOCK_64");
        let (text, n) = Tuning::new(Some(path)).export();
        assert_eq!(n, 2, "{text}");
    }

    #[test]
    fn shipped_tuning_ignores_the_driver_version() {
        let t = Tuning::new(None);
        t.decide(key(12090, "aa"), "k_BLOCK_128");
        let (text, _) = t.export();
        let user = Tuning::new(None);
        assert_eq!(user.preload(&text), Ok(1));
        assert_eq!(
            user.lookup(&key(13000, "aa")).as_deref(),
            Some("k_BLOCK_128")
        );
        assert_eq!(user.lookup(&key(13000, "cc")), None);
        assert!(user
            .preload("(version: 9, entries: [])")
            .unwrap_err()
            .contains("version 9"));
        assert!(user.preload("not ron").is_err());
    }
}
