//! The path a new user takes, outside this workspace:
//!
//! - README's "Adding Phobos to a crate" block, run verbatim with `PHOBOS`
//!   pointed at this checkout, makes a crate that builds and runs;
//! - `scripts/package-check.sh` packages every publishable crate, builds
//!   the starter template against the unpacked `.crate` files (not
//!   workspace paths) and installs `phobos` from the packaged `phobos-cli`.
//!
//! Both run nested `cargo` builds in a target directory shared with
//! phobos-build's `cargo_builds` tests, so dependencies compile once.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the workspace root exists")
}

fn shared_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("crates")
}

/// The shell block of README's "Adding Phobos to a crate" section.
fn readme_block() -> String {
    let readme = std::fs::read_to_string(workspace().join("README.md")).expect("README.md");
    let section = readme
        .split("## Adding Phobos to a crate")
        .nth(1)
        .expect("README has the section");
    let start = section.find("```sh\n").expect("a sh block in the section") + 6;
    let len = section[start..].find("```").expect("the block ends");
    section[start..start + len].to_string()
}

/// Held while a test builds in the shared target folder: the package check
/// deletes the compiled `phobos_*` crates there before it builds (so a
/// repackaged crate is not taken for the old one), which broke the README
/// crate's build running beside it ("could not parse/generate dep info ...
/// No such file or directory", 2026-12-06).
static SHARED_TARGET: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `cmd` on the simulator, building into the shared target folder.
fn run(cmd: &mut Command) -> String {
    let _one_at_a_time = SHARED_TARGET
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cmd = cmd
        .env("CARGO_TARGET_DIR", shared_target())
        .env("PHOBOS_BACKEND", "sim");
    phobos_conformance::run_checked(cmd)
}

#[test]
fn the_readme_block_makes_a_crate_that_runs() {
    let block = readme_block();
    let first = block.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("PHOBOS=\"$HOME/src/phobos\""),
        "the block starts by naming the clone: {first}"
    );
    // The only change: where this clone is.
    let script = block.replacen(
        "PHOBOS=\"$HOME/src/phobos\"",
        &format!("PHOBOS={:?}", workspace().display().to_string()),
        1,
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let all = run(Command::new("bash")
        .arg("-euo")
        .arg("pipefail")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path()));
    assert!(
        all.contains("axpy on simulator: 1000 elements, 0 wrong"),
        "{all}"
    );
}

#[test]
fn packaged_crates_build_and_install_outside_the_workspace() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let all = run(Command::new(workspace().join("scripts/package-check.sh"))
        .arg(scratch.path())
        .current_dir(workspace()));
    assert!(all.contains("package-check: ok"), "{all}");
    assert!(
        all.contains("axpy on simulator: 1000 elements, 0 wrong"),
        "{all}"
    );
}
