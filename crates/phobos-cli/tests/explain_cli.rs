//! `phobos explain` from the command line: the three formats, .npy inputs,
//! and clear errors with exit code 2 for usage and IO, 1 for kernels that
//! do not compile.

use std::path::Path;
use std::process::{Command, Output};

mod common;

const STAGED: &str = include_str!("../../../tests/in/staged_matvec.pho");

fn phobos(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phobos"))
        .current_dir(dir)
        .arg("explain")
        .args(args)
        .output()
        .expect("run phobos")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A version 1.0 .npy file of little-endian f32 values.
fn write_npy_f32(path: &Path, shape: &[usize], values: &[f32]) {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_text = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    for v in values {
        bytes.extend(v.to_le_bytes());
    }
    std::fs::write(path, bytes).expect("write the .npy");
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("staged.pho"), STAGED).expect("write the kernel");
    dir
}

/// [`setup`] with one more kernel file, `name`.
fn setup_with(name: &str, src: &str) -> tempfile::TempDir {
    let dir = setup();
    std::fs::write(dir.path().join(name), src).expect("write");
    dir
}

const INPUTS: [&str; 3] = ["W=shape:8x256", "x=shape:1x256", "y=shape:1x8"];

/// `staged.pho`'s kernel over a grid of 2, then `rest`.
fn staged<'a>(rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["staged.pho", "--kernel", "staged_matvec", "--grid", "2"];
    args.extend_from_slice(rest);
    args
}

/// The JSON page that a successful `phobos explain --format json` printed.
fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

/// The index of the CTA the page steps through.
fn picked_cta(v: &serde_json::Value) -> &serde_json::Value {
    &v["ctas"][v["picked"].as_u64().unwrap_or(0) as usize]["cta"]
}

/// Asserts that `phobos` exited with `code` and said `message` on stderr.
fn assert_fails(o: &Output, code: i32, message: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", stderr(o));
    assert!(stderr(o).contains(message), "{}", stderr(o));
}

#[test]
fn html_json_and_text() {
    let dir = setup();
    let o = phobos(
        dir.path(),
        &[staged(&["-o", "page.html"]), INPUTS.to_vec()].concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(dir.path().join("page.html")).expect("the page");
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("stepped through as the compiler built it for sm_75"));
    assert!(stderr(&o).contains("wrote page.html"));

    let json_args = staged(&["--format", "json", "--cta", "1"]);
    let v = json(&phobos(dir.path(), &[json_args, INPUTS.to_vec()].concat()));
    assert_eq!(v["kernel"], "staged_matvec");
    assert_eq!(*picked_cta(&v), 1);

    let o = phobos(
        dir.path(),
        &[staged(&["--format", "text"]), INPUTS.to_vec()].concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("shuffle step 5 of 5"), "{text}");
}

#[test]
fn npy_inputs_are_read() {
    let dir = setup();
    let w: Vec<f32> = (0..8 * 256).map(|i| i as f32).collect();
    write_npy_f32(&dir.path().join("w.npy"), &[8, 256], &w);
    write_npy_f32(&dir.path().join("x.npy"), &[1, 256], &[1.0; 256]);
    let args = staged(&["--format", "json", "W=w.npy", "x=x.npy", "y=shape:1x8"]);
    let v = json(&phobos(dir.path(), &args));
    assert_eq!(v["tensors"][0]["shape"], serde_json::json!([8, 256]));

    // A .npy of the wrong shape names the dim it contradicts.
    write_npy_f32(&dir.path().join("x2.npy"), &[1, 128], &[1.0; 128]);
    let o = phobos(dir.path(), &staged(&["W=w.npy", "x=x2.npy", "y=shape:1x8"]));
    assert_fails(
        &o,
        2,
        "dim `K` disagrees: it is 256 from `W` (axis 1) but 128 from `x`",
    );
}

#[test]
fn usage_and_io_errors_exit_2() {
    let dir = setup();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["missing.pho", "--kernel", "k", "--grid", "1"],
            "cannot read `missing.pho`",
        ),
        (
            vec!["staged.pho", "--kernel", "staged_matvec", "--grid", "0"],
            "not a positive grid size",
        ),
        (staged(&["--arch", "sm_61"]), "unknown target `sm_61`"),
        (staged(&["W"]), "not a binding"),
        (staged(&["W=nope.npy"]), "cannot open `nope.npy`"),
        (
            vec!["staged.pho", "--kernel", "nope", "--grid", "2"],
            "no kernel `nope`",
        ),
        (staged(&INPUTS[..2]), "no value for parameter `y`"),
        (
            staged(&[&["--cta", "5"], &INPUTS[..]].concat()),
            "outside the grid",
        ),
        (
            staged(&[&INPUTS[..], &["z=1"]].concat()),
            "no parameter `z`",
        ),
    ];
    for (args, message) in cases {
        let o = phobos(dir.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(message),
            "{args:?}: expected {message:?} in {}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
}

#[test]
fn a_kernel_that_does_not_compile_exits_1_with_the_diagnostic() {
    let dir = setup_with(
        "bad.pho",
        "@launch(128)\nkernel k(A: tensor<f32>[1, 128]) {\n  let x = A[0, nope]\n}\n",
    );
    let o = phobos(
        dir.path(),
        &["bad.pho", "--kernel", "k", "--grid", "1", "A=shape:1x128"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("bad.pho:3"), "{}", stderr(&o));
}

#[test]
fn the_grid_comes_from_at_grid_when_not_given() {
    let dir = setup_with("scale.pho", "@launch(64)\n@grid(cdiv(N, 64))\nkernel scale(x: tensor<f32>[1, N], y: tensor<f32>[1, N]) {\n  let i = ctx.block.x * 64 + ctx.thread\n  if i < N {\n    y[0, i] = 2.0 * x[0, i]\n  }\n}\n");
    let args = [
        "scale.pho",
        "--kernel",
        "scale",
        "--format",
        "json",
        "--cta",
        "3,0",
        "x=shape:1x200",
        "y=shape:1x200",
    ];
    let v = json(&phobos(dir.path(), &args));
    assert_eq!(v["grid"], serde_json::json!([4, 1, 1]));
    assert_eq!(*picked_cta(&v), 3);

    // Without @grid, the grid must be given.
    let mut args = vec!["staged.pho", "--kernel", "staged_matvec"];
    args.extend(INPUTS);
    assert_fails(&phobos(dir.path(), &args), 2, "has no @grid");
}

#[test]
fn an_autotune_constant_picks_the_variant() {
    let dir = setup_with("block.pho", "@autotune(BLOCK in [64, 128])\n@launch(BLOCK)\n@grid(cdiv(N, BLOCK))\nkernel block(x: tensor<f32>[N], y: tensor<f32>[N]) {\n  let i = ctx.block.x * BLOCK + ctx.thread\n  if i < N {\n    y[i] = 2.0 * x[i]\n  }\n}\n");
    let run = |block: &'static str| {
        phobos(
            dir.path(),
            &[
                "block.pho",
                "--kernel",
                "block",
                "--format",
                "json",
                block,
                "x=shape:1000",
                "y=shape:1000",
            ],
        )
    };
    let v = json(&run("BLOCK=128"));
    assert_eq!(v["threads"], 128);
    assert_eq!(v["grid"], serde_json::json!([8, 1, 1]));
    assert_fails(&run("BLOCK=100"), 2, "compiled for BLOCK in [64, 128]");
}

#[test]
fn shared_memory_above_48_kilobytes_is_explained_up_to_the_targets_limit() {
    // Regression (issue 28): explain bound every launch against the 48 KB
    // of static shared memory and passed no dynamic shared memory, so it
    // refused these kernels on every target.
    for (arch, src, inputs) in common::ABOVE_48K {
        let dir = tempfile::tempdir().expect("temp dir");
        common::write(dir.path(), "big.pho", src);
        let mut args = vec!["big.pho", "--arch", arch, "--format", "json"];
        args.extend(inputs);
        let out = phobos(dir.path(), &args);
        assert!(out.status.success(), "{arch}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(v["arch"], arch);
        let bytes = if src == common::TILES_50K {
            51200
        } else {
            131072
        };
        assert_eq!(v["shared"]["bytes"], bytes, "{arch}");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    common::write(dir.path(), "big.pho", common::TILES_128K);
    let mut args = vec!["big.pho", "--arch", "sm_75"];
    args.extend(common::ABOVE_48K[2].2);
    let out = phobos(dir.path(), &args);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sm_75 allows at most 65536 bytes per CTA"),
        "{}",
        stderr(&out)
    );
}
