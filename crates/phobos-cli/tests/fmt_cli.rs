//! `phobos fmt` as a user runs it: rewriting files and directories,
//! `--check` with its diff and exit code, stdin, and files with syntax
//! errors left untouched.

use std::io::Write;
use std::process::{Command, Stdio};

mod common;
use common::{phobos, write};

const MESSY: &str = "@launch(32)\nkernel k(O: tensor<f32>[N]) {\nO[ctx.thread]=1.0 // one\n}\n";
const TIDY: &str = "@launch(32)\nkernel k(O: tensor<f32>[N]) {\n  O[ctx.thread] = 1.0 // one\n}\n";
const BROKEN: &str = "@launch(32)\nkernel k(O: tensor<f32>[N] {\n  O[0] = \n}\n";

fn read(p: &str) -> String {
    std::fs::read_to_string(p).expect("read")
}

#[test]
fn rewrites_files_found_in_a_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = write(dir.path(), "a.pho", MESSY);
    let b = write(dir.path(), "b.pho", TIDY);
    let other = write(dir.path(), "notes.txt", MESSY);
    let out = phobos(&["fmt", &dir.path().display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(read(&a), TIDY);
    assert_eq!(read(&b), TIDY);
    assert_eq!(read(&other), MESSY, "only .pho files are formatted");
}

#[test]
fn check_prints_a_diff_and_exits_1_without_writing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = write(dir.path(), "a.pho", MESSY);
    let out = phobos(&["fmt", "--check", &a]);
    assert_eq!(out.status.code(), Some(1));
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(diff.contains("-O[ctx.thread]=1.0 // one"), "{diff}");
    assert!(diff.contains("+  O[ctx.thread] = 1.0 // one"), "{diff}");
    assert_eq!(read(&a), MESSY);
    let b = write(dir.path(), "b.pho", TIDY);
    let out = phobos(&["fmt", "--check", &b]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn dash_reads_stdin_and_writes_stdout() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(["fmt", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(MESSY.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), TIDY);
}

#[test]
fn a_file_with_syntax_errors_is_left_untouched_with_diagnostics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write(dir.path(), "bad.pho", BROKEN);
    let good = write(dir.path(), "good.pho", MESSY);
    let out = phobos(&["fmt", &bad, &good]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("P0100"), "{err}");
    assert!(err.contains("left unformatted"), "{err}");
    assert_eq!(read(&bad), BROKEN);
    assert_eq!(read(&good), TIDY, "the other file is still formatted");
}

#[test]
fn a_missing_path_is_a_usage_error() {
    let out = phobos(&["fmt", "/no/such/dir/k.pho"]);
    assert_eq!(out.status.code(), Some(2));
}
