//! The GPU bundle, known to work before a GPU is seen: this test builds it
//! with `scripts/gpu-bundle.sh` (release mode, in the workspace's own
//! target directory, so a release build already there is reused, and the
//! CI's later release builds of the example and the stand-in reuse this
//! one) and runs the bundle's `run.sh --small` under the CUDA driver
//! stand-in (`scripts/with-fake-gpu.sh`): the same script, the same
//! binaries, tiny sizes and one differential seed. `results.json` must say
//! that the example, every GPU test, the differential check and the
//! benchmarks passed, and the report must have been written.
//!
//! Needs ptxas for the bundle's cubins (`PHOBOS_PTXAS`): without it the
//! test fails in CI and is skipped, saying so, elsewhere.

use phobos_conformance::{in_ci, run_checked};
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// Runs `cmd` on the backend it picks itself (no `PHOBOS_BACKEND`).
fn run(cmd: &mut Command) -> String {
    run_checked(cmd.env_remove("PHOBOS_BACKEND"))
}

fn step<'a>(results: &'a serde_json::Value, name: &str) -> &'a str {
    results["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["step"] == name))
        .and_then(|s| s["status"].as_str())
        .unwrap_or_else(|| panic!("no step {name} in results.json"))
}

#[test]
fn the_bundle_builds_and_its_run_passes_on_the_stand_in() {
    if std::env::var_os("PHOBOS_PTXAS").is_none() {
        assert!(
            !in_ci(),
            "CI sets PHOBOS_PTXAS; the bundle needs ptxas for its cubins"
        );
        eprintln!("skipped: PHOBOS_PTXAS is not set (the bundle carries cubins)");
        return;
    }
    let root = workspace();
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpu-bundle-test");
    let _ = std::fs::remove_dir_all(&scratch);
    let (bundle, results) = (scratch.join("bundle"), scratch.join("results"));
    run(Command::new(root.join("scripts/gpu-bundle.sh")).arg(&bundle));
    for file in [
        "run.sh",
        "bin/phobos-diff",
        "bin/phobos-bench",
        "bin/phobos-example-matvec",
        "bin/phobos-example-interop",
        "bin/launch_overhead",
        "MANIFEST.txt",
    ] {
        assert!(bundle.join(file).is_file(), "the bundle lacks {file}");
    }
    let kernels: Vec<String> = std::fs::read_dir(bundle.join("kernels"))
        .expect("kernels/")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    for want in [
        "lanes_matvec.sm_80.cubin",
        "lanes_matvec.sm_90.cubin",
        "row_softmax.sm_90.ptx",
        "bf16_gemm.sm_90a.cubin",
        "bf16_gemm.sm_90a.ptx",
        // Built for sm_89 and newer only, in a folder of its own (build.rs).
        "f8_gemm.sm_90.cubin",
        "f8_gemm.sm_90a.cubin",
    ] {
        assert!(
            kernels.iter().any(|k| k == want),
            "kernels/ lacks {want}: {kernels:?}"
        );
    }
    assert!(
        !kernels.iter().any(|k| k.starts_with("f8_gemm.sm_80")),
        "the FP8 GEMM cannot be built for sm_80: {kernels:?}"
    );

    let log = run(Command::new(root.join("scripts/with-fake-gpu.sh"))
        .arg(bundle.join("run.sh"))
        .arg(&results)
        .arg("--small"));
    let text = std::fs::read_to_string(results.join("results.json")).expect("results.json");
    let r: serde_json::Value = serde_json::from_str(&text).expect("results.json is JSON");
    assert_eq!(r["example"]["ok"], true, "{log}");
    assert_eq!(r["differential"]["ok"], true, "{log}");
    assert_eq!(step(&r, "interop"), "ok", "{log}");
    assert_eq!(step(&r, "launch-overhead"), "ok", "{log}");
    assert_eq!(step(&r, "diff"), "ok", "{log}");
    assert_eq!(step(&r, "bench"), "ok", "{log}");
    assert_eq!(step(&r, "gpu-test-gpu"), "ok", "{log}");
    assert_eq!(step(&r, "torch"), "skipped", "{log}");
    assert_eq!(r["ok"], true, "{log}");
    // Every corpus kernel the stand-in (an sm_86) can run was compared,
    // bit for bit or within its causes' tolerance; those that need a newer
    // target (`// needs: sm_89`, the FP8 ones) have nothing to compare.
    let kernels = r["differential"]["kernels"].as_array().expect("kernels");
    let corpus = std::fs::read_dir(root.join("tests/in"))
        .expect("tests/in")
        .filter(|e| {
            let src = std::fs::read_to_string(e.as_ref().expect("entry").path()).expect("read");
            phobos_conformance::min_arch_of(&src) <= 86
        })
        .count();
    let cases: std::collections::BTreeSet<&str> =
        kernels.iter().filter_map(|k| k["case"].as_str()).collect();
    // The bundle's FP8 GEMM needs sm_89: on the stand-in's default 8.6 its
    // case launches nothing, so it has no record (tests/bench_images.rs runs
    // it at 9.0).
    assert_eq!(
        cases.len(),
        corpus + 5,
        "corpus files plus the example's four and the bundle's bf16 GEMM: {cases:?}"
    );
    assert!(!cases.contains("bundle/f8_gemm"), "{cases:?}");
    // Which image loaded, per benchmark kernel, with its occupancy.
    let images = r["images"]["bench"].as_array().expect("images");
    assert!(images.len() >= 8, "{images:?}");
    assert!(
        images.iter().all(|i| i["image"]
            .as_str()
            .is_some_and(|s| s.starts_with("ptx sm_"))
            && i["ctas_per_sm"].as_i64().is_some_and(|n| n >= 1)),
        "{images:?}"
    );
    let benches = r["benchmarks"].as_array().expect("benchmarks");
    assert_eq!(benches.len(), 12, "{benches:?}");
    // The two FP8 GEMM rows need sm_89 and say so on the stand-in's 8.6;
    // every other row ran and matched its reference.
    for b in benches {
        let fp8 = b["kernel"]
            .as_str()
            .is_some_and(|k| k.starts_with("f8_gemm"));
        let check = b["check"].as_str().unwrap_or("");
        if fp8 {
            assert!(
                check.starts_with("skipped: needs sm_89") && check.ends_with("sm_86"),
                "{b}"
            );
        } else {
            assert_eq!(check, "ok", "{b}");
        }
    }
    // The two GEMMs ran on the stand-in's tensor cores (the simulator's
    // mma.sync) and are reported by their rate.
    let gemms: Vec<_> = benches
        .iter()
        .filter(|b| {
            b["kernel"]
                .as_str()
                .is_some_and(|k| k.starts_with("bf16_gemm"))
        })
        .collect();
    assert_eq!(gemms.len(), 2, "{benches:?}");
    assert!(
        gemms
            .iter()
            .all(|b| b["tflops"].as_f64().is_some_and(|t| t > 0.0)),
        "{gemms:?}"
    );
    assert!(results.join("results.md").is_file() && results.join("log.txt").is_file());
}
