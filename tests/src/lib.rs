//! Shared helpers for the conformance tests: the kernel corpus under
//! `tests/in`, compiling it, the snapshot files under `tests/snapshots`
//! (rewritten only with `PHOBOS_BLESS=1`), and finding NVIDIA's ptxas.
//!
//! Every corpus file starts with header comments saying what the kernel
//! computes, its intended grid and its parameter shapes
//! (`// grid: ...; shapes: ...`), for the simulator tests. A kernel that
//! needs a newer target than sm_75 says so in a header line
//! `// needs: sm_80`: it is compiled, assembled and run for the targets
//! from there up ([`CorpusFile::arches`]).

pub mod corpus_cases;
pub mod differential;
pub mod executor;
pub mod kernels;
pub mod sass;
pub mod sim_support;
pub mod source_lines;

pub use source_lines::line_of;

use phobos_core::{CompileOptions, CompiledKernel};
use std::path::{Path, PathBuf};

/// One corpus file.
pub struct CorpusFile {
    /// The file stem, e.g. `lanes_matvec`.
    pub name: String,
    pub path: PathBuf,
    pub src: String,
}

impl CorpusFile {
    /// The oldest target the file compiles for: `N` from a header line
    /// `// needs: sm_N`, else 75.
    pub fn min_arch(&self) -> u32 {
        min_arch_of(&self.src)
    }

    /// The supported targets the file compiles for (`phobos_core::ARCHES`
    /// from [`CorpusFile::min_arch`] up).
    pub fn arches(&self) -> Vec<u32> {
        let min = self.min_arch();
        phobos_core::ARCHES
            .into_iter()
            .filter(|&a| a >= min)
            .collect()
    }
}

/// `N` from a leading comment line `// needs: sm_N` (`sm_90a` too, as
/// `phobos_core::arch::SM_90A`), else 75.
pub fn min_arch_of(src: &str) -> u32 {
    src.lines()
        .take_while(|l| l.starts_with("//"))
        .find_map(|l| phobos_core::arch::from_name(l.strip_prefix("// needs: sm_")?.trim()))
        .unwrap_or(75)
}

/// The root of the conformance crate (`tests/`).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `tests/in/*.pho`, sorted by name. `PHOBOS_CORPUS_DIR` names
/// another folder: the GPU bundle carries a copy of the corpus, and its
/// differential runner runs where this source tree is not.
pub fn corpus() -> Vec<CorpusFile> {
    let dir = std::env::var_os("PHOBOS_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("in"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pho"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| CorpusFile {
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            src: std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display())),
            path,
        })
        .collect()
}

/// One corpus file by name.
pub fn corpus_file(name: &str) -> CorpusFile {
    corpus()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no corpus file {name}.pho"))
}

/// Compile a corpus file for `sm_<arch>`, panicking with the rendered
/// diagnostics if it does not compile.
pub fn compile(file: &CorpusFile, arch: u32) -> Vec<CompiledKernel> {
    let name = format!("{}.pho", file.name);
    let (kernels, diags) = phobos_core::compile(&file.src, &name, &CompileOptions::for_arch(arch));
    if diags.iter().any(|d| d.is_error()) || kernels.is_empty() {
        panic!(
            "{name} did not compile for {}:\n{}",
            phobos_core::arch::name(arch),
            phobos_core::render::render(&diags, &name, &file.src, false)
        );
    }
    kernels
}

/// The diagnostics of compiling `src` (as file `file`) for sm_75: their
/// codes, and their rendered text for a failing assertion's message.
pub fn diagnostic_codes(src: &str, file: &str) -> (Vec<&'static str>, String) {
    let (_, diags) = phobos_core::compile(src, file, &CompileOptions::for_arch(75));
    let text = phobos_core::render::render(&diags, file, src, false);
    (diags.iter().map(|d| d.code.as_str()).collect(), text)
}

/// Whether snapshots are being rewritten (`PHOBOS_BLESS=1`).
pub fn blessing() -> bool {
    std::env::var("PHOBOS_BLESS").is_ok_and(|v| v == "1")
}

/// Compare `actual` with the snapshot file, or rewrite it when blessing.
/// Returns a description of the difference, if any.
pub fn check_snapshot(path: &Path, actual: &str) -> Option<String> {
    if blessing() {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = std::fs::write(path, actual) {
            return Some(format!("cannot write {}: {e}", path.display()));
        }
        return None;
    }
    let expected = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(_) => {
            return Some(format!(
            "{} is missing; run `PHOBOS_BLESS=1 cargo test -p phobos-conformance` and review it",
            path.display()
        ))
        }
    };
    if expected == actual {
        return None;
    }
    let first = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    let show = |s: &str| s.lines().nth(first).unwrap_or("<end of file>").to_string();
    Some(format!(
        "{} differs at line {}:\n  expected: {}\n  actual:   {}\n(rerun with PHOBOS_BLESS=1 to accept the new output after reviewing it)",
        path.display(),
        first + 1,
        show(&expected),
        show(actual)
    ))
}

/// NVIDIA's ptxas, found as builds find it (`phobos_build::find_ptxas`:
/// `PHOBOS_PTXAS`, `PATH`, `CUDA_PATH`/`CUDA_HOME`, `/usr/local/cuda`).
/// A `PHOBOS_PTXAS` that names a missing or broken file fails the test
/// rather than quietly skipping it.
pub fn find_ptxas() -> Option<PathBuf> {
    match phobos_build::find_ptxas() {
        Ok(found) => found.map(|p| p.path),
        Err(e) => panic!("{e}"),
    }
}

/// ptxas for a test that needs it: `None` (after saying the test is
/// skipped) when it is not found, except in CI, where that fails the test.
pub fn ptxas_or_skip() -> Option<PathBuf> {
    let found = find_ptxas();
    if found.is_none() {
        assert!(
            !in_ci(),
            "ptxas not found (set PHOBOS_PTXAS); CI=true requires it"
        );
        eprintln!("skipping: ptxas not found (set PHOBOS_PTXAS to run this test)");
    }
    found
}

/// Assembles `ptx`, kernel `name`'s, for `sm_{arch}` with the ptxas at
/// `path`, as builds do ([`phobos_build::assemble_ptx`]): the cubin's
/// bytes, or what ptxas said.
pub fn assemble(path: &Path, name: &str, arch: u32, ptx: &str) -> Result<Vec<u8>, String> {
    let ptxas = phobos_build::Ptxas {
        path: path.to_path_buf(),
        version: String::new(),
        targets: None,
        named: true,
    };
    phobos_build::assemble_ptx(&ptxas, name, arch, ptx).map_err(|e| e.to_string())
}

/// Runs `cmd` (a cargo build of a user's crate, say) with `CARGO` the
/// cargo running the tests and no `RUSTFLAGS`; panics with its status and
/// output unless it succeeds, else returns them as text.
pub fn run_checked(cmd: &mut std::process::Command) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = cmd
        .env("CARGO", &cargo)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("the command runs");
    let all = format!(
        "status: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");
    all
}

/// Whether this run is CI (`CI=true` or `CI=1`, as every test in the
/// workspace reads it), where missing tools fail tests.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The header comment line of a corpus file that starts with `// grid:`.
pub fn grid_comment(file: &CorpusFile) -> Option<String> {
    file.src
        .lines()
        .take_while(|l| l.starts_with("//"))
        .find(|l| l.trim_start_matches("//").trim_start().starts_with("grid:"))
        .map(|l| l.trim_start_matches("//").trim().to_string())
}
