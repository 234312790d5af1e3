//! What the CLI's test files share: running the built `phobos` binary,
//! writing a source file, and checking what it said.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// 128 KB of shared tiles in kernel `big`: over sm_75's and sm_86's limit
/// (P0801), within sm_80's.
pub const TILES_128K: &str = include_str!("../../../../tests/fixtures/tiles_128k.pho");

/// Runs `phobos ARGS` without colour and waits for it.
pub fn phobos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run phobos")
}

/// Writes `src` to `dir/name`; returns the path as text.
pub fn write(dir: &Path, name: &str, src: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, src).expect("write");
    p.display().to_string()
}

/// Asserts that `text` contains each of `parts`; a failure names the
/// missing part and shows the whole text.
pub fn assert_says(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "no {part:?} in:\n{text}");
    }
}
