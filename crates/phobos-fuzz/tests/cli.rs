//! The `phobos-fuzz` command line: bad arguments are refused, never taken
//! as the defaults (a mistyped `--cuont` used to run 100 programs).

use std::process::Command;

fn fuzz(args: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().expect("tempdir");
    Command::new(env!("CARGO_BIN_EXE_phobos-fuzz"))
        .args(["--save", dir.path().to_str().expect("utf-8")])
        .args(args)
        .env_remove("PHOBOS_PTXAS")
        .output()
        .expect("run phobos-fuzz")
}

#[test]
fn unknown_flags_and_bad_numbers_are_refused() {
    for (args, says) in [
        (&["--cuont", "5"][..], "unknown argument `--cuont`"),
        (
            &["--count", "many"][..],
            "--count takes a non-negative integer, not `many`",
        ),
        (
            &["--seed", "-1"][..],
            "--seed takes a non-negative integer, not `-1`",
        ),
        (&["--count"][..], "--count needs a value"),
    ] {
        let out = fuzz(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.contains("usage: phobos-fuzz"), "{args:?}: {err}");
    }
}

#[test]
fn a_small_run_ends_with_the_summary_line() {
    let out = fuzz(&["--seed", "7", "--count", "3"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("3 programs, 0 mismatches"));
}
