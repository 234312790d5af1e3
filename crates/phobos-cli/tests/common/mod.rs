//! What the CLI's test files share: running the built `phobos` binary and
//! writing a source file.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

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
