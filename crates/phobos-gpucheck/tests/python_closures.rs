//! The bundle's Python benchmarks build each case as a closure that the
//! timing loop calls later; one that reads a variable its function assigns
//! again afterwards runs on the later value (the Triton copy row timed a
//! 64 KB copy as 1 GiB: issue 27, defect 5; torch's layer norm read the
//! last GEMM's M). `python/check_closures.py` finds such reads; this test
//! runs it over every script of the bundle, and checks that it does find
//! the pattern it is for.

use std::path::Path;
use std::process::Command;

fn python() -> Option<&'static str> {
    Command::new("python3")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "python3")
}

fn check(files: &[&Path]) -> (bool, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let out = Command::new(python().expect("python3"))
        .arg(dir.join("check_closures.py"))
        .args(files)
        .output()
        .expect("python3 runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn no_benchmark_closure_reads_a_variable_assigned_after_it() {
    if python().is_none() {
        assert!(!phobos_conformance::in_ci(), "CI has python3");
        eprintln!("skipped: no python3");
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("python");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("python/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "the bundle's scripts: {files:?}");
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let (ok, text) = check(&refs);
    assert!(ok, "late-bound closures:\n{text}");
}

#[test]
fn the_check_finds_a_late_bound_closure_and_accepts_a_bound_one() {
    if python().is_none() {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-closures");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let bad = dir.join("bad.py");
    std::fs::write(
        &bad,
        "def main():\n    n = 1 << 28\n    f = lambda: copy(n)\n    n = 16384\n    g = lambda: use(n)\n",
    )
    .expect("write");
    let (ok, text) = check(&[&bad]);
    assert!(!ok);
    assert!(text.contains("bad.py:3: `n`"), "{text}");
    assert!(!text.contains("bad.py:5"), "{text}");
    let good = dir.join("good.py");
    std::fs::write(
        &good,
        "def main():\n    n = 1 << 28\n    f = lambda n=n: copy(n)\n    n = 16384\n\n    def inner(k):\n        n = k\n        return lambda: n\n",
    )
    .expect("write");
    let (ok, text) = check(&[&good]);
    assert!(ok, "{text}");
}
