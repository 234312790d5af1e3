//! The example, run as its users run it, on the simulator: every kernel
//! launches and matches its CPU reference (the binary exits non-zero when
//! one does not).

use std::process::Command;

#[test]
fn the_example_runs_on_the_simulator_and_matches_the_references() {
    let out = Command::new(env!("CARGO_BIN_EXE_phobos-example-matvec"))
        .env("PHOBOS_BACKEND", "sim")
        .output()
        .expect("the example binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for kernel in ["lanes_matvec", "i8_matvec", "staged_matvec", "lane_max"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with("sim") && l.contains(kernel))
            .unwrap_or_else(|| panic!("no row for {kernel} in:\n{stdout}"));
        assert!(row.ends_with(" ok"), "{row}");
    }
}
