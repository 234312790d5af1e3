//! What the CLI's test files share: running the built `phobos` binary,
//! writing a source file, and checking what it said.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// 128 KB of shared tiles in kernel `big`: over sm_75's and sm_86's limit
/// (P0801), within sm_80's.
pub const TILES_128K: &str = include_str!("../../../../tests/fixtures/tiles_128k.pho");

/// 51,200 bytes of one shared tile in kernel `mid` (50 x 256 f32): above
/// the 48 KB a `.shared` declaration may hold, so its PTX takes dynamic
/// shared memory, and within every target's limit (sm_75's 64 KB).
pub const TILES_50K: &str = "@launch(256)
@grid(1)
kernel mid(A: tensor<f32>[50, 256], y: tensor<f32>[1, 256]) {
  var a = A[0 :+ 50, :]
  y[0, ctx.thread] = a[3, ctx.thread] + a[49, ctx.thread]
}
";

/// `phobos sim`, `explain` and `profile` run a kernel above 48 KB of shared
/// memory on each target whose limit it fits: `(arch, source, inputs)`,
/// the inputs as `explain` and `profile` take them. `tiles_128k` needs
/// sm_80 or sm_90; `tiles_50k` fits sm_75 too.
pub const ABOVE_48K: [(&str, &str, &[&str]); 4] = [
    ("sm_75", TILES_50K, &["A=shape:50x256", "y=shape:1x256"]),
    ("sm_80", TILES_50K, &["A=shape:50x256", "y=shape:1x256"]),
    (
        "sm_80",
        TILES_128K,
        &[
            "A=shape:64x256",
            "B=shape:64x256",
            "y=shape:1x256",
            "--grid",
            "1",
        ],
    ),
    (
        "sm_90",
        TILES_128K,
        &[
            "A=shape:64x256",
            "B=shape:64x256",
            "y=shape:1x256",
            "--grid",
            "1",
        ],
    ),
];

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
