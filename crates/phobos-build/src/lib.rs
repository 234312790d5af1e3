#![doc = include_str!("../README.md")]
//!
//! # Inside this crate
//!
//! Build-script helper: compiles a directory of `.pho` kernels into PTX,
//! cubins (when NVIDIA's `ptxas` is found) and the typed Rust bindings that
//! the crate includes with
//! `mod kernels { include!(concat!(env!("OUT_DIR"), "/kernels.rs")); }`.
//!
//! ```text
//! // build.rs
//! fn main() {
//!     phobos_build::compile_dir("kernels");
//! }
//! ```
//!
//! It owns files, processes and the environment for the compiler (which is
//! IO-free): walking the directory, `cargo:` directives, ptxas and its cache,
//! atomic writes into `OUT_DIR`. It decides nothing about what kernels mean.

mod config;
mod output;
mod ptxas;
pub mod read;
pub mod walk;

pub use config::{project_arches, DEFAULT_ARCHES};
pub use ptxas::{assemble_ptx, find_ptxas, Ptxas};

use config::{parse_arch_list, ConfigFile, Env};
use output::write_if_changed;
use phobos_bindgen::{AssetRoot, KernelAssets};
use phobos_core::meta::KernelMeta;
use phobos_core::{arch, CompileOptions, Diagnostic};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// Compiles every `.pho` file under `dir` (relative to the crate's
/// manifest directory) with the default settings, for use as the whole body
/// of a build script. On any error it prints the rendered diagnostics and a
/// one-line summary to stderr and exits the build script with status 1.
pub fn compile_dir(dir: impl AsRef<Path>) -> BuildOutput {
    Builder::new(dir).build_or_exit()
}

/// Options for compiling a directory of kernels.
#[derive(Clone, Debug)]
pub struct Builder {
    dir: PathBuf,
    arches: Option<Vec<u32>>,
    ptxas: Option<PathBuf>,
    ptx_only: Option<bool>,
    defines: Vec<(String, i64)>,
    tuning: Option<PathBuf>,
    config: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    manifest_dir: Option<PathBuf>,
    cargo_directives: bool,
    runtime_crate: String,
}

/// What a build produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildOutput {
    /// Kernel names, in the order the bindings declare them.
    pub kernels: Vec<String>,
    /// The architectures PTX (and cubins, with ptxas) were built for.
    pub arches: Vec<u32>,
    /// The ptxas used; `None` when the build embedded PTX only.
    pub ptxas: Option<Ptxas>,
    /// Architectures the found ptxas is too old to assemble: they embed
    /// PTX only (the driver JITs it), and one warning says so.
    pub ptx_only_arches: Vec<u32>,
    /// Cubins assembled by running ptxas, and cubins taken from the cache.
    pub cubins_assembled: usize,
    pub cubins_cached: usize,
    /// The generated bindings (`OUT_DIR/kernels.rs`).
    pub bindings: PathBuf,
    /// Warnings, one line each (also printed as `cargo:warning`).
    pub warnings: Vec<String>,
}

/// Why a build failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// Kernels with errors: the rendered diagnostics and a one-line summary.
    Diagnostics {
        rendered: String,
        summary: String,
    },
    /// Two files define a kernel of the same name.
    DuplicateKernel {
        name: String,
        first: String,
        second: String,
    },
    /// Two kernels whose names differ only in case: their files would be
    /// one file on a file system that ignores case.
    KernelsDifferInCase {
        first_name: String,
        first: String,
        second_name: String,
        second: String,
    },
    Io {
        path: PathBuf,
        message: String,
    },
    Config {
        path: PathBuf,
        message: String,
    },
    /// An environment variable holds a bad value, or a needed one is missing.
    Env {
        var: String,
        message: String,
    },
    Ptxas {
        message: String,
    },
    /// The name given to [`Builder::runtime_crate`] is not a crate name.
    RuntimeCrate {
        name: String,
    },
    /// A path under the kernel directory (or `phobos.toml`'s) that no
    /// `cargo:rerun-if-changed` line can carry.
    UntrackablePath {
        path: PathBuf,
        reason: Untrackable,
    },
}

/// Why cargo cannot be told to watch a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Untrackable {
    /// A line break in the name (a directive is one line).
    LineBreak,
    /// A name that is not UTF-8 (a directive is text).
    NotUtf8,
}

impl BuildError {
    fn io(path: &Path, e: impl fmt::Display) -> BuildError {
        BuildError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }

    /// A file [`read`] refused: the message names it once (in front).
    pub(crate) fn read(path: &Path, e: read::ReadError) -> BuildError {
        let message = match e {
            read::ReadError::Io(e) => e.to_string(),
            e => e.message("the file"),
        };
        BuildError::io(path, message)
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Diagnostics { rendered, summary } => {
                write!(f, "{}\n{summary}", rendered.trim_end())
            }
            BuildError::DuplicateKernel {
                name,
                first,
                second,
            } => write!(
                f,
                "error: kernel `{name}` is defined in both {first} and {second}; \
                 kernel names must be unique in a crate (each becomes a function of the bindings)"
            ),
            BuildError::KernelsDifferInCase {
                first_name,
                first,
                second_name,
                second,
            } => write!(
                f,
                "error: kernels `{first_name}` ({first}) and `{second_name}` ({second}) differ only \
                 in case; their output files would be one file on a file system that ignores case \
                 (macOS's and Windows' by default): rename one"
            ),
            BuildError::Io { path, message } => {
                write!(f, "error: {}: {message}", path.display())
            }
            BuildError::Config { path, message } => {
                write!(f, "error: {}: {message}", path.display())
            }
            BuildError::Env { var, message } => write!(f, "error: {var}: {message}"),
            BuildError::Ptxas { message } => write!(f, "error: ptxas: {message}"),
            BuildError::UntrackablePath {
                path,
                reason: Untrackable::LineBreak,
            } => write!(
                f,
                "error: {path:?} has a line break in its name; cargo cannot be told to \
                 watch it (a `cargo:rerun-if-changed` directive is one line): rename it"
            ),
            BuildError::UntrackablePath {
                path,
                reason: Untrackable::NotUtf8,
            } => write!(
                f,
                "error: {path:?} is not a UTF-8 name; cargo cannot be told to watch it \
                 (a `cargo:rerun-if-changed` directive is text), so every build would \
                 rerun the build script: rename it"
            ),
            BuildError::RuntimeCrate { name } => write!(
                f,
                "error: runtime crate name {name:?} is not a Rust identifier \
                 (give the name the runtime has in `use` paths, e.g. `phobos_runtime`)"
            ),
        }
    }
}

impl std::error::Error for BuildError {}

/// One `.pho` file, compiled for every architecture.
struct CompiledFile {
    display: String,
    /// Per architecture, ascending: the kernels.
    per_arch: Vec<(u32, Vec<phobos_core::CompiledKernel>)>,
}

impl Builder {
    /// Compile the `.pho` files under `dir`, relative to the manifest
    /// directory (`CARGO_MANIFEST_DIR`) unless absolute.
    pub fn new(dir: impl AsRef<Path>) -> Builder {
        Builder {
            dir: dir.as_ref().to_path_buf(),
            arches: None,
            ptxas: None,
            ptx_only: None,
            defines: Vec::new(),
            tuning: None,
            config: None,
            out_dir: None,
            manifest_dir: None,
            cargo_directives: true,
            runtime_crate: phobos_bindgen::DEFAULT_RUNTIME_CRATE.to_string(),
        }
    }

    /// The name under which the crate depends on the runtime, for a crate
    /// that renames the dependency in its `Cargo.toml`
    /// (`gpu = { package = "phobos-runtime", version = "0.1" }` →
    /// `.runtime_crate("gpu")`). Hyphens become underscores, as in Cargo.
    /// The default is `phobos_runtime`.
    pub fn runtime_crate(mut self, name: &str) -> Builder {
        self.runtime_crate = name.replace('-', "_");
        self
    }

    /// The architectures to build for, as numbers (`80` for sm_80,
    /// `phobos_core::arch::SM_90A` for sm_90a). `PHOBOS_ARCHES` (e.g.
    /// `sm_80,sm_90a`) overrides this.
    pub fn arches(mut self, arches: &[u32]) -> Builder {
        self.arches = Some(arches.to_vec());
        self
    }

    /// The ptxas to use (otherwise `PHOBOS_PTXAS`, `PATH`, `CUDA_PATH`,
    /// `CUDA_HOME`, `/usr/local/cuda/bin`).
    pub fn ptxas(mut self, path: impl AsRef<Path>) -> Builder {
        self.ptxas = Some(path.as_ref().to_path_buf());
        self
    }

    /// Embed PTX only, never running ptxas (the driver JITs on first use).
    pub fn ptx_only(mut self, yes: bool) -> Builder {
        self.ptx_only = Some(yes);
        self
    }

    /// Pins the compile-time constant `name` — an `@autotune` name — to
    /// `value` in every kernel that declares it: only that variant is kept,
    /// so a launch never times the others, and a tuned dim must then equal
    /// it. A value outside the kernel's candidates is a build error; a name
    /// no kernel declares is a warning. Overrides `[build.defines]` of
    /// `phobos.toml`.
    pub fn define(mut self, name: &str, value: i64) -> Builder {
        self.defines.retain(|(n, _)| n != name);
        self.defines.push((name.to_string(), value));
        self
    }

    /// Ships autotune decisions with the kernels: `path` (relative to the
    /// manifest directory unless absolute) is a file
    /// `Device::export_tuning` wrote on the GPUs to tune for. The bindings
    /// embed it, and a launch it decides (same GPU name, compute
    /// capability, kernel content and dims; any driver) runs the chosen
    /// variant without timing. Overrides `tuning` in `phobos.toml`. A
    /// missing or malformed file is a build error.
    pub fn tuning(mut self, path: impl AsRef<Path>) -> Builder {
        self.tuning = Some(path.as_ref().to_path_buf());
        self
    }

    /// Read options from this file instead of `phobos.toml` in the
    /// manifest directory.
    pub fn config_file(mut self, path: impl AsRef<Path>) -> Builder {
        self.config = Some(path.as_ref().to_path_buf());
        self
    }

    /// Write into this directory instead of `OUT_DIR`.
    pub fn out_dir(mut self, path: impl AsRef<Path>) -> Builder {
        self.out_dir = Some(path.as_ref().to_path_buf());
        self
    }

    /// Resolve relative paths against this directory instead of
    /// `CARGO_MANIFEST_DIR`.
    pub fn manifest_dir(mut self, path: impl AsRef<Path>) -> Builder {
        self.manifest_dir = Some(path.as_ref().to_path_buf());
        self
    }

    /// Print `cargo:` directives on stdout (on by default; off for use
    /// outside build scripts).
    pub fn cargo_directives(mut self, yes: bool) -> Builder {
        self.cargo_directives = yes;
        self
    }

    /// Builds, or prints the error to stderr and exits with status 1 (the
    /// way a build script should fail: no panic, no backtrace).
    pub fn build_or_exit(self) -> BuildOutput {
        match self.build() {
            Ok(out) => out,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    }

    /// Compiles the directory and writes PTX, cubins and bindings.
    pub fn build(self) -> Result<BuildOutput, BuildError> {
        let mut env = Env::default();
        let result = self.build_inner(&mut env);
        // Print even on failure: fixing the variable must rerun the script.
        if self.cargo_directives {
            for var in &env.read {
                println!("cargo:rerun-if-env-changed={var}");
            }
        }
        result
    }

    fn build_inner(&self, env: &mut Env) -> Result<BuildOutput, BuildError> {
        if !is_rust_identifier(&self.runtime_crate) {
            return Err(BuildError::RuntimeCrate {
                name: self.runtime_crate.clone(),
            });
        }
        let manifest_dir = match &self.manifest_dir {
            Some(d) => d.clone(),
            None => env
                .var("CARGO_MANIFEST_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(".")),
        };
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => env
                .var("OUT_DIR")
                .map(PathBuf::from)
                .ok_or(BuildError::Env {
                    var: "OUT_DIR".to_string(),
                    message:
                        "not set; phobos-build runs from a build script (or give Builder::out_dir)"
                            .to_string(),
                })?,
        };
        let config_path = self
            .config
            .clone()
            .map(|p| manifest_dir.join(p))
            .unwrap_or_else(|| manifest_dir.join("phobos.toml"));
        // Watched even while it does not exist, so that creating it reruns
        // the build. Cargo treats a watched path that is missing as changed
        // on every build (rust-lang/cargo#4213): without a phobos.toml the
        // script reruns each time, which is cheap (its outputs are cached
        // and rewritten only when they change), and an empty phobos.toml
        // stops it.
        trackable(&config_path)?;
        self.directive(&format!("cargo:rerun-if-changed={}", config_path.display()));
        let config = ConfigFile::read_at(&config_path, self.config.is_some())?;

        let arches_asked = env.var("PHOBOS_ARCHES").is_some()
            || self.arches.is_some()
            || config.build.arches.is_some();
        let arches = match env.var("PHOBOS_ARCHES") {
            Some(v) => parse_arch_list(&v).map_err(|message| BuildError::Env {
                var: "PHOBOS_ARCHES".to_string(),
                message,
            })?,
            None => match (&self.arches, config.arches(&config_path)?) {
                (Some(a), _) => {
                    let text: Vec<String> = a.iter().map(|&a| arch::name(a)).collect();
                    parse_arch_list(&text.join(",")).map_err(|message| BuildError::Config {
                        path: PathBuf::from("Builder::arches"),
                        message,
                    })?
                }
                (None, Some(a)) => a,
                (None, None) => DEFAULT_ARCHES.to_vec(),
            },
        };
        let mut arches = arches;
        arches.sort_unstable();
        arches.dedup();

        let dir = manifest_dir.join(&self.dir);
        let files = self.walk(&dir, &manifest_dir)?;
        let mut defines: BTreeMap<String, i64> = config.build.defines.clone();
        defines.extend(self.defines.iter().cloned());
        let (compiled, mut warnings) = compile_files(&files, &arches, &defines)?;
        warnings.extend(unused_defines(&compiled, &defines));
        check_unique_names(&compiled)?;

        let ptx_only = self.ptx_only.or(config.build.ptx_only).unwrap_or(false);
        let ptxas = if ptx_only {
            None
        } else {
            let explicit = self
                .ptxas
                .clone()
                .or_else(|| config.build.ptxas.clone().map(|p| manifest_dir.join(p)));
            let found = ptxas::find(explicit, env)?;
            if found.is_none() {
                self.directive(
                    "cargo:warning=phobos: ptxas not found (looked at PHOBOS_PTXAS, PATH, \
                     CUDA_PATH, CUDA_HOME, /usr/local/cuda/bin); embedding PTX only, which the driver compiles on \
                     first use. Set PHOBOS_PTXAS to ship cubins.",
                );
            }
            found
        };
        let ptx_only_arches = match &ptxas {
            Some(p) => {
                let (skipped, warning) = too_new_for(p, &arches, arches_asked)?;
                warnings.extend(warning);
                skipped
            }
            None => Vec::new(),
        };
        let warnings = self.report_warnings(&warnings);
        let tuning = match self.tuning.clone().or(config.build.tuning.clone()) {
            Some(path) => Some(self.read_tuning(&manifest_dir.join(path))?),
            None => None,
        };
        let built = self.write_outputs(
            &out_dir,
            &compiled,
            &arches,
            ptxas,
            &ptx_only_arches,
            tuning,
        )?;
        Ok(BuildOutput { warnings, ..built })
    }

    /// The text of a tuning file to embed, checked to be RON with the
    /// shape `Device::export_tuning` writes (`version` and `entries`); the
    /// runtime owns the rest of the format.
    fn read_tuning(&self, path: &Path) -> Result<String, BuildError> {
        self.directive(&format!("cargo:rerun-if-changed={}", path.display()));
        let text = read::file(path, read::TUNING).map_err(|e| BuildError::read(path, e))?;
        let bad = |message: String| BuildError::Config {
            path: path.to_path_buf(),
            message,
        };
        let value: ron::Value = ron::from_str(&text).map_err(|e| {
            bad(format!(
                "not a tuning file (Device::export_tuning writes them): {e}"
            ))
        })?;
        let fields: Vec<String> = match &value {
            ron::Value::Map(m) => m
                .keys()
                .filter_map(|k| match k {
                    ron::Value::String(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if !(fields.iter().any(|f| f == "version") && fields.iter().any(|f| f == "entries")) {
            return Err(bad(
                "not a tuning file: it has no `version` and `entries` (Device::export_tuning writes them)"
                    .to_string(),
            ));
        }
        Ok(text)
    }

    fn directive(&self, line: &str) {
        if self.cargo_directives {
            println!("{line}");
        }
    }

    /// The `.pho` files under `dir`, sorted, through the walker the CLI
    /// uses (links followed, each real file once); prints
    /// `rerun-if-changed` for every directory (so a new file reruns the
    /// script) and every file.
    fn walk(&self, dir: &Path, manifest_dir: &Path) -> Result<Vec<(PathBuf, String)>, BuildError> {
        if !dir.is_dir() {
            return Err(BuildError::io(dir, "no such directory of kernels"));
        }
        let walked = walk::Walker::new()
            .dir(dir)
            .map_err(|e| BuildError::io(&e.path, e.message))?;
        // Refuse before printing anything: a half-printed list of tracked
        // paths would be worse than none.
        for path in walked.dirs.iter().chain(&walked.files) {
            trackable(path)?;
        }
        for d in &walked.dirs {
            self.rerun_if_changed(d);
        }
        let mut files = Vec::new();
        for path in walked.files {
            self.rerun_if_changed(&path);
            // Components joined by `/` on every system: a `\\` is a
            // separator only on Windows, and a character of the name here.
            let display = match path.strip_prefix(manifest_dir) {
                Ok(rel) => rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
                Err(_) => path.to_string_lossy().into_owned(),
            };
            files.push((path, display));
        }
        Ok(files)
    }

    /// `cargo:rerun-if-changed=PATH`, for a path [`trackable`] accepted.
    fn rerun_if_changed(&self, path: &Path) {
        self.directive(&format!("cargo:rerun-if-changed={}", path.display()));
    }

    fn report_warnings(&self, warnings: &[String]) -> Vec<String> {
        for w in warnings {
            // A directive is one line: a line break would start another.
            let w = w.replace(['\n', '\r'], " ");
            self.directive(&format!("cargo:warning={w}"));
        }
        warnings.to_vec()
    }

    fn write_outputs(
        &self,
        out_dir: &Path,
        compiled: &[CompiledFile],
        arches: &[u32],
        ptxas: Option<Ptxas>,
        ptx_only_arches: &[u32],
        tuning: Option<String>,
    ) -> Result<BuildOutput, BuildError> {
        let assets_dir = out_dir.join("phobos");
        let mut written = BTreeSet::new();
        let mut write = |name: String, bytes: &[u8]| -> Result<(), BuildError> {
            write_if_changed(&assets_dir.join(&name), bytes)?;
            written.insert(name);
            Ok(())
        };

        let tuning_file = match &tuning {
            Some(text) => {
                write(TUNING_FILE.to_string(), text.as_bytes())?;
                Some(TUNING_FILE.to_string())
            }
            None => None,
        };
        // Kernels in file order, then source order.
        let mut assets: Vec<KernelAssets> = Vec::new();
        let mut jobs = Vec::new();
        for file in compiled {
            let Some((_, first)) = file.per_arch.first() else {
                continue;
            };
            for (index, kernel) in first.iter().enumerate() {
                let name = &kernel.meta.name;
                // The first target's metadata, with each other target's
                // variants where they differ: a launch binds by the
                // variants of the image it loaded (`KernelMeta::variants_for`).
                let mut meta = kernel.meta.clone();
                for (arch, kernels) in &file.per_arch[1..] {
                    if let Some(k) = kernels.get(index) {
                        meta.add_target(*arch, &k.meta);
                    }
                }
                let meta_file = format!("{name}.meta.ron");
                write(meta_file.clone(), meta_ron(&meta)?.as_bytes())?;
                let mut ptx_files = Vec::new();
                for (arch, kernels) in &file.per_arch {
                    let Some(k) = kernels.get(index) else {
                        continue;
                    };
                    let ptx_file = format!("{name}.{}.ptx", arch::name(*arch));
                    write(ptx_file.clone(), k.ptx.as_bytes())?;
                    ptx_files.push((*arch, ptx_file));
                    if ptx_only_arches.contains(arch) {
                        continue;
                    }
                    jobs.push(ptxas::Job {
                        kernel: name,
                        arch: *arch,
                        ptx: &k.ptx,
                    });
                }
                assets.push(KernelAssets {
                    meta,
                    meta_file,
                    ptx_files,
                    cubin_files: Vec::new(),
                    tuning_file: tuning_file.clone(),
                });
            }
        }

        let (mut assembled, mut cached) = (0, 0);
        if let Some(ptxas) = &ptxas {
            let (cubins, hits) = ptxas::assemble_all(ptxas, &jobs, &out_dir.join("phobos-cache"))?;
            cached = hits;
            assembled = jobs.len() - hits;
            for (job, cubin) in jobs.iter().zip(&cubins) {
                let file = format!("{}.{}.cubin", job.kernel, arch::name(job.arch));
                write(file.clone(), cubin)?;
                if let Some(a) = assets.iter_mut().find(|a| a.meta.name == job.kernel) {
                    a.cubin_files.push((job.arch, file));
                }
            }
        }

        remove_stale(&assets_dir, &written)?;
        let bindings = out_dir.join("kernels.rs");
        let code = phobos_bindgen::generate(
            &assets,
            &AssetRoot::OutDir("phobos".to_string()),
            &self.runtime_crate,
        );
        write_if_changed(&bindings, code.as_bytes())?;
        Ok(BuildOutput {
            kernels: assets.iter().map(|a| a.meta.name.clone()).collect(),
            arches: arches.to_vec(),
            ptxas,
            ptx_only_arches: ptx_only_arches.to_vec(),
            cubins_assembled: assembled,
            cubins_cached: cached,
            bindings,
            warnings: Vec::new(),
        })
    }
}

/// The targets `ptxas` cannot assemble, and the one warning that says
/// so. A ptxas the user named, asked for targets it lacks, is an error: the
/// user wants cubins it cannot make. Otherwise (a ptxas found on `PATH` or
/// in a CUDA installation, or the default targets) those targets embed PTX
/// only, which the driver JITs on first use.
fn too_new_for(
    ptxas: &Ptxas,
    arches: &[u32],
    arches_asked: bool,
) -> Result<(Vec<u32>, Option<String>), BuildError> {
    let skipped: Vec<u32> = arches
        .iter()
        .copied()
        .filter(|&a| !ptxas.supports(a))
        .collect();
    if skipped.is_empty() {
        return Ok((skipped, None));
    }
    let names: Vec<String> = skipped.iter().map(|&a| arch::name(a)).collect();
    let names = names.join(", ");
    if ptxas.named && arches_asked {
        return Err(BuildError::Ptxas {
            message: format!(
                "{} ({}) cannot assemble {names}, which the build asks for; \
                 use a newer ptxas (CUDA 12.8 or later has every Phobos target) \
                 or leave {names} out of the architectures",
                ptxas.path.display(),
                ptxas.version
            ),
        });
    }
    let warning = format!(
        "phobos: {} ({}) cannot assemble {names}; {} embed PTX only, which the \
         driver compiles on first use. Set PHOBOS_PTXAS to a newer ptxas \
         (CUDA 12.8 or later) to ship their cubins.",
        ptxas.path.display(),
        ptxas.version,
        if skipped.len() == 1 {
            "it will"
        } else {
            "they will"
        }
    );
    Ok((skipped, Some(warning)))
}

/// The embedded tuning's name in the asset directory (no kernel's files
/// end in `.ron` without `.meta`).
const TUNING_FILE: &str = "tuning.ron";

/// Refuses a path cargo could not be told to watch. A build script's
/// directives are lines, and cargo has no escape for a line break inside
/// one: `cargo:rerun-if-changed=a<LF>cargo:rustc-link-lib=x` would track
/// `a` and inject a second directive.
fn trackable(path: &Path) -> Result<(), BuildError> {
    let refuse = |reason| {
        Err(BuildError::UntrackablePath {
            path: path.to_path_buf(),
            reason,
        })
    };
    if path
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .any(|b| matches!(b, b'\n' | b'\r'))
    {
        return refuse(Untrackable::LineBreak);
    }
    // A directive is text: a name that is not UTF-8 would be printed
    // lossily, name no file, and make cargo rerun the script every build.
    if path.to_str().is_none() {
        return refuse(Untrackable::NotUtf8);
    }
    Ok(())
}

fn meta_ron(meta: &KernelMeta) -> Result<String, BuildError> {
    ron::ser::to_string_pretty(meta, ron::ser::PrettyConfig::default()).map_err(|e| {
        BuildError::Ptxas {
            message: format!("cannot serialize the metadata of `{}`: {e}", meta.name),
        }
    })
}

/// Compiles every file for every architecture. Returns the compiled files
/// and the warnings (one line each), or every error rendered.
/// Compiles every file for every target, with `defines` pinning
/// `@autotune` constants (phobos-core compiles only the pinned variants).
fn compile_files(
    files: &[(PathBuf, String)],
    arches: &[u32],
    defines: &BTreeMap<String, i64>,
) -> Result<(Vec<CompiledFile>, Vec<String>), BuildError> {
    let mut compiled = Vec::new();
    let mut rendered = String::new();
    let mut warnings = Vec::new();
    let (mut n_errors, mut failed_files) = (0usize, 0usize);
    for (path, display) in files {
        let src = read::file(path, read::SOURCE).map_err(|e| BuildError::read(path, e))?;
        let mut per_arch = Vec::new();
        // Diagnostics are reported once per file, however many architectures
        // produce them.
        let mut seen: Vec<Diagnostic> = Vec::new();
        for &arch in arches {
            let opts = CompileOptions {
                arch,
                defines: defines.iter().map(|(n, v)| (n.clone(), *v)).collect(),
            };
            let (kernels, diags) = phobos_core::compile(&src, display, &opts);
            for d in diags {
                phobos_core::add_once_per_target(&mut seen, d);
            }
            per_arch.push((arch, kernels));
        }
        let errors: Vec<Diagnostic> = seen.iter().filter(|d| d.is_error()).cloned().collect();
        for w in seen.iter().filter(|d| !d.is_error()) {
            warnings.push(one_line(w, display, &src));
        }
        if errors.is_empty() {
            compiled.push(CompiledFile {
                display: display.clone(),
                per_arch,
            });
        } else {
            // A P0006 counts the errors it stands for, not itself.
            n_errors += phobos_core::diag::Counts::of(&errors).errors;
            failed_files += 1;
            rendered.push_str(&phobos_core::render::render(&errors, display, &src, false));
        }
    }
    if n_errors > 0 {
        let summary = format!(
            "error: could not compile the Phobos kernels: {n_errors} error{} in {failed_files} file{}",
            if n_errors == 1 { "" } else { "s" },
            if failed_files == 1 { "" } else { "s" },
        );
        return Err(BuildError::Diagnostics { rendered, summary });
    }
    Ok((compiled, warnings))
}

/// `file:line:col: warning[code]: message`, for a `cargo:warning` line.
fn one_line(d: &Diagnostic, display: &str, src: &str) -> String {
    let index = phobos_core::source::LineIndex::new(src);
    let at = d
        .labels
        .iter()
        .find(|l| l.primary)
        .or(d.labels.first())
        .map(|l| {
            let (line, col) = index.line_col((l.span.start as usize).min(src.len()));
            format!("{display}:{line}:{col}")
        })
        .unwrap_or_else(|| display.to_string());
    let kind = if d.is_error() { "error" } else { "warning" };
    format!("{at}: {kind}[{}]: {}", d.code, d.message.replace('\n', " "))
}

/// A warning per define that no kernel declares as an `@autotune` name.
fn unused_defines(files: &[CompiledFile], defines: &BTreeMap<String, i64>) -> Vec<String> {
    let declared = |name: &str| {
        files.iter().any(|f| {
            f.per_arch
                .iter()
                .flat_map(|(_, kernels)| kernels)
                .any(|k| k.meta.autotune.iter().any(|(n, _)| n == name))
        })
    };
    defines
        .keys()
        .filter(|name| !declared(name))
        .map(|name| format!("phobos: define {name} is not an @autotune name of any kernel"))
        .collect()
}

fn check_unique_names(files: &[CompiledFile]) -> Result<(), BuildError> {
    let mut seen: BTreeMap<String, (&str, &str)> = BTreeMap::new();
    for file in files {
        let Some((_, kernels)) = file.per_arch.first() else {
            continue;
        };
        for k in kernels {
            let name = k.meta.name.as_str();
            let Some((first_name, first)) =
                seen.insert(output_file_key(name), (name, &file.display))
            else {
                continue;
            };
            return Err(if first_name == name {
                BuildError::DuplicateKernel {
                    name: name.to_string(),
                    first: first.to_string(),
                    second: file.display.clone(),
                }
            } else {
                BuildError::KernelsDifferInCase {
                    first_name: first_name.to_string(),
                    first: first.to_string(),
                    second_name: name.to_string(),
                    second: file.display.clone(),
                }
            });
        }
    }
    Ok(())
}

/// What a kernel's output files (`NAME.sm_ARCH.ptx`, ...) are named by on
/// a file system that ignores case: two kernels with one key would write
/// one set of files. Kernel names are ASCII.
pub fn output_file_key(kernel: &str) -> String {
    kernel.to_ascii_lowercase()
}

/// Removes files of kernels that no longer exist, so a renamed kernel's
/// old PTX does not linger.
fn remove_stale(dir: &Path, keep: &BTreeSet<String>) -> Result<(), BuildError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_file() && !keep.contains(&name) {
            std::fs::remove_file(entry.path()).map_err(|e| BuildError::io(&entry.path(), e))?;
        }
    }
    Ok(())
}

/// Whether `name` can stand in a `use ::name` path: an ASCII identifier
/// that is not a keyword Rust reserves for paths.
fn is_rust_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_');
    starts_well
        && name != "_"
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !matches!(name, "crate" | "self" | "super" | "Self")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ptxas(named: bool) -> Ptxas {
        Ptxas {
            path: PathBuf::from("/opt/cuda-11.5/bin/ptxas"),
            version: "Cuda compilation tools, release 11.5, V11.5.119".to_string(),
            targets: Some(vec![75, 80, 86]),
            named,
        }
    }

    #[test]
    fn a_found_ptxas_skips_what_it_lacks_even_when_asked_and_a_named_one_refuses() {
        let (skipped, warning) = too_new_for(&ptxas(false), &[80, 89, 90], true).unwrap();
        assert_eq!(skipped, [89, 90]);
        let warning = warning.expect("one warning");
        assert!(
            warning.contains("cannot assemble sm_89, sm_90"),
            "{warning}"
        );
        assert!(warning.contains("PHOBOS_PTXAS"), "{warning}");
        // Named, with the default targets: skipped too.
        let (skipped, warning) = too_new_for(&ptxas(true), &DEFAULT_ARCHES, false).unwrap();
        assert_eq!(skipped, [89, 90, arch::SM_90A, 100, 120]);
        let warning = warning.expect("one warning");
        assert!(
            warning.contains("cannot assemble sm_89, sm_90, sm_90a, sm_100, sm_120"),
            "{warning}"
        );
        // Named and asked for: refused.
        assert!(too_new_for(&ptxas(true), &[80, 89], true).is_err());
        // Nothing missing: nothing said.
        assert_eq!(
            too_new_for(&ptxas(true), &[75, 86], true).unwrap(),
            (vec![], None)
        );
        // A ptxas whose list is unknown is trusted with every target.
        let unknown = Ptxas {
            targets: None,
            ..ptxas(true)
        };
        assert_eq!(too_new_for(&unknown, &[120], true).unwrap(), (vec![], None));
    }
}
