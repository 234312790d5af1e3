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

/// Formatting rewrites a file's text and nothing else about it: a 0600
/// file stayed 0644 after a rewrite, and its owner and group were lost.
#[cfg(unix)]
#[test]
fn a_rewrite_keeps_mode_owner_and_group() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().expect("tempdir");
    let a = write(dir.path(), "a.pho", MESSY);
    std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // As root, give the file another owner, which a new file would not
    // have (uid and gid 1 are `daemon` on Debian).
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        std::os::unix::fs::chown(&a, Some(1), Some(1)).expect("chown");
    }
    let before = std::fs::metadata(&a).expect("stat");
    let out = phobos(&["fmt", &a]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(read(&a), TIDY);
    let after = std::fs::metadata(&a).expect("stat");
    assert_eq!(after.permissions().mode() & 0o7777, 0o600);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
}

/// A symbolic link to a .pho file stays a link, and the file it points at
/// is the one formatted (the link used to be replaced by a regular file).
#[cfg(unix)]
#[test]
fn a_symlink_stays_a_link_and_its_target_is_formatted() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("real")).expect("mkdir");
    let target = write(&dir.path().join("real"), "k.pho", MESSY);
    let link = dir.path().join("link.pho");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let out = phobos(&["fmt", &link.display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(std::fs::symlink_metadata(&link)
        .expect("lstat")
        .file_type()
        .is_symlink());
    assert_eq!(read(&target), TIDY);
    // The temporary file went to the target's directory and is gone.
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&dir.path().join("real")), ["k.pho"]);
    assert_eq!(names(dir.path()), ["link.pho", "real"]);
}

/// A file of the old temporary name is someone's file: it used to be
/// overwritten and deleted.
#[test]
fn a_file_named_like_the_old_temporary_is_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = write(dir.path(), "a.pho", MESSY);
    let tmp = write(dir.path(), "a.pho.fmt-tmp", "mine\n");
    let out = phobos(&["fmt", &a]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(read(&a), TIDY);
    assert_eq!(read(&tmp), "mine\n");
}

/// `--check` on a file that differs from its formatted text only in line
/// ends, or in the final newline, says so (it exited 1 with an empty diff).
#[test]
fn check_shows_line_end_and_final_newline_differences() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crlf = write(dir.path(), "crlf.pho", &TIDY.replace('\n', "\r\n"));
    let out = phobos(&["fmt", "--check", &crlf]);
    assert_eq!(out.status.code(), Some(1));
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(diff.contains("line ends"), "{diff}");
    let bare = write(dir.path(), "bare.pho", TIDY.trim_end());
    let out = phobos(&["fmt", "--check", &bare]);
    assert_eq!(out.status.code(), Some(1));
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(diff.contains("No newline at end of file"), "{diff}");
}
