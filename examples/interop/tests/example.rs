//! The example, run as its users run it, on the simulator: the overlapped
//! streams and every graph replay match the CPU (the binary exits non-zero
//! when one does not). `.ci/run` runs it on the CUDA backend under the
//! driver stand-in, where it launches on cudarc's own buffers.

use std::process::Command;

#[test]
fn the_example_runs_on_the_simulator_and_matches_the_cpu() {
    let out = Command::new(env!("CARGO_BIN_EXE_phobos-example-interop"))
        .env("PHOBOS_BACKEND", "sim")
        .output()
        .expect("the example binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for step in [
        "overlap: 2 streams, 1 event",
        "graph: 2 launches, 3 replays",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with("sim") && l.contains(step))
            .unwrap_or_else(|| panic!("no row for {step} in:\n{stdout}"));
        assert!(row.ends_with(" ok"), "{row}");
    }
}
