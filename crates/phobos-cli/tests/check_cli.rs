//! `phobos check` as a user runs it: exit codes, human and JSON output.

use std::path::Path;

mod common;
use common::{assert_says, phobos, write};

fn seed_dir() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../phobos-core/tests/seed")
        .display()
        .to_string()
}

const BAD: &str = "@launch(128)
kernel k(A: tensor<f32>[1, 128], O: tensor<f32>[1, 1]) {
  let x = A[0, ctx.thread]
  var r = 0.0
  if ctx.lane == 0 {
    r = sum<over ctx.lane>(x)
  }
  O[0, 0] = r
}
";

#[test]
fn seed_directory_checks_clean() {
    let out = phobos(&["check", &seed_dir()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("no errors"), "{err}");
}

#[test]
fn an_error_exits_1_with_a_rustc_style_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write(dir.path(), "bad.pho", BAD);
    let out = phobos(&["check", &bad]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_says(
        &err,
        &[
            "error[P0700]: `sum<over ctx.lane>` needs every lane of its warp",
            "bad.pho:6:9",
            "this condition differs between lanes",
        ],
    );
}

#[test]
fn json_is_one_object_per_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write(dir.path(), "bad.pho", BAD);
    let out = phobos(&["check", "--message-format", "json", &bad]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).expect("json");
    assert_eq!(v["code"], "P0700");
    assert_eq!(v["line"], 6);
    assert_eq!(v["col"], 9);
    assert_eq!(v["labels"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_missing_file_is_one_line_and_exit_2() {
    let out = phobos(&["check", "/definitely/not/here.pho"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: cannot read `/definitely/not/here.pho`"),
        "{err}"
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(phobos(&["check"]).status.code(), Some(2));
    assert_eq!(
        phobos(&["check", "--message-format", "xml", "a.pho"])
            .status
            .code(),
        Some(2)
    );
    let empty = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        phobos(&["check", &empty.path().display().to_string()])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn directories_are_walked_for_pho_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    write(&dir.path().join("sub"), "bad.pho", BAD);
    write(dir.path(), "notes.txt", "not a kernel");
    let out = phobos(&["check", &dir.path().display().to_string()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("1 error in 1 file"), "{err}");
}

/// Mutated seed kernels: `phobos check` exits 0 or 1, never crashes.
#[test]
fn mutated_kernels_exit_0_or_1() {
    let seed =
        std::fs::read_to_string(Path::new(&seed_dir()).join("lanes_matvec.pho")).expect("seed");
    let dir = tempfile::tempdir().expect("tempdir");
    // A small deterministic generator: the test must be reproducible.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for case in 0..24 {
        let mut bytes = seed.as_bytes().to_vec();
        for _ in 0..=case % 4 {
            let i = next(bytes.len());
            match next(3) {
                0 => {
                    let end = (i + next(30)).min(bytes.len());
                    bytes.drain(i..end);
                }
                1 => bytes
                    .splice(i..i, b"<(]{ :+ ".iter().copied().take(1 + next(8)))
                    .for_each(drop),
                _ => {
                    let j = next(bytes.len());
                    bytes.swap(i, j);
                }
            }
        }
        let path = dir.path().join(format!("m{case}.pho"));
        std::fs::write(&path, &bytes).expect("write");
        let out = phobos(&["check", &path.display().to_string()]);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 1)),
            "case {case}: exit {code:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `check` reports what `ptx` and `build` would refuse: here the backend's
/// shared-memory limit (P0801) and a tile hazard no barrier can separate
/// (P0802), each once although several default targets report it.
#[test]
fn backend_errors_are_reported_by_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = write(dir.path(), "big.pho", common::TILES_128K);
    let racy = write(
        dir.path(),
        "racy.pho",
        "@launch(64)\nkernel racy(A: tensor<f32>[1, 64], y: tensor<f32>[1, 64]) {\n  var t = A[0 :+ 1, 0 :+ 64]\n  let i = ctx.thread\n  for j in range(0, i) {\n    t[0, i] = t[0, i - 1]\n  }\n  y[0, i] = t[0, i]\n}\n",
    );
    let ptx = phobos(&["ptx", &big]);
    assert_eq!(ptx.status.code(), Some(1));
    let out = phobos(&["check", &big, &racy]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("error[P0801]").count(), 1, "{err}");
    assert!(err.contains("131072 bytes"), "{err}");
    // 128 KB fits sm_80, sm_90 and sm_100; each target it does not fit
    // says its limit, in one error.
    assert!(err.contains("sm_75 allows at most 65536 bytes"), "{err}");
    assert!(err.contains("sm_86 allows at most 101376 bytes"), "{err}");
    assert_eq!(err.matches("error[P0802]").count(), 1, "{err}");
    assert!(err.contains("racy.pho:6:5"), "{err}");
    assert!(err.contains("error: 2 errors in 2 files"), "{err}");
    let json = phobos(&["check", "--message-format", "json", &big]);
    let text = String::from_utf8_lossy(&json.stdout);
    assert_eq!(json.status.code(), Some(1));
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("\"P0801\""), "{text}");
}

/// A bf16 `dot`: P0811 on sm_75, clean from sm_80 on.
const BF16_DOT: &str = "@launch(128)
kernel k(H: tensor<bf16>[M, K], C: tensor<f32>[M, N]) {
  let r = ctx.block.x * 64
  let c = ctx.block.y * 64
  var acc = zeros<f32>[64, 64]
  var a = H[r :+ 64, 0 :+ 16]
  var b = H[c :+ 64, 0 :+ 16]
  acc += dot(a, trans(b))
  C[r :+ 64, c :+ 64] = acc
}
";

/// `phobos ARGS` in `dir` with `PHOBOS_ARCHES` set to `arches` (or unset).
fn phobos_with_arches(dir: &Path, args: &[&str], arches: Option<&str>) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_phobos"));
    cmd.args(args).current_dir(dir).env("NO_COLOR", "1");
    match arches {
        Some(v) => cmd.env("PHOBOS_ARCHES", v),
        None => cmd.env_remove("PHOBOS_ARCHES"),
    };
    cmd.output().expect("run phobos")
}

#[test]
fn check_takes_its_targets_from_arch_or_phobos_arches_as_build_does() {
    // Issue 26: `check` always included sm_75, so every bf16 `dot` failed
    // it with P0811 ("build for newer targets only"), with no way to
    // choose the targets.
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "k.pho", BF16_DOT);
    let run = |args: &[&str], arches: Option<&str>| {
        let out = phobos_with_arches(dir.path(), args, arches);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), err)
    };
    let (code, err) = run(&["check", "k.pho"], None);
    assert_eq!(code, Some(1), "{err}");
    assert_says(&err, &["error[P0811]", "compiled for sm_75"]);
    for args in [
        &["check", "k.pho", "--arch", "sm_80,sm_90"][..],
        &["check", "k.pho", "--arch", "sm_86", "--arch", "120"][..],
    ] {
        let (code, err) = run(args, None);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert_says(&err, &["no errors"]);
    }
    let (code, err) = run(&["check", "k.pho"], Some("sm_80,sm_90"));
    assert_eq!(code, Some(0), "{err}");
    // The flag wins over the environment, as an explicit choice.
    let (code, err) = run(&["check", "k.pho", "--arch", "sm_75"], Some("sm_80"));
    assert_eq!(code, Some(1), "{err}");
    let (code, err) = run(&["check", "k.pho"], Some("sm_70"));
    assert_eq!(code, Some(2), "{err}");
    assert_says(&err, &["PHOBOS_ARCHES: unknown target `sm_70`"]);
    let (code, err) = run(&["check", "k.pho", "--arch", "sm_81"], None);
    assert_eq!(code, Some(2), "{err}");
    assert_says(&err, &["--arch: unknown target `sm_81`"]);
    // `build` reads the same variable: only sm_80's outputs are written.
    let (code, err) = run(&["build", "k.pho", "--out", "o"], Some("sm_80"));
    assert_eq!(code, Some(0), "{err}");
    assert!(dir.path().join("o/k.sm_80.ptx").is_file());
    assert!(!dir.path().join("o/k.sm_90.ptx").exists());
}
