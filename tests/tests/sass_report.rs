//! `scripts/sass-loop-report.py` (issue 30's measure of tensor-core main
//! loops) works end to end: given the PTX of `mma_gemm_staged` (a `dot`
//! kernel of this corpus with a 3-stage ring, compiled here for sm_90) it
//! assembles it with ptxas, reads the SASS back with nvdisasm, finds the
//! loop holding the HMMAs and reports it, and the hand CUDA C reference row
//! comes out beside it. Structure and sanity only, never performance
//! figures: those are recorded in docs/benchmarks.md.
//!
//! The script's CTAs per SM restate `phobos_profile::occupancy` (the owner
//! of that formula) in Python; every row is checked against it here.
//!
//! Needs python3, ptxas and nvdisasm; without one the test is skipped with
//! a message, except under `CI=true`, where a missing tool fails it.

use phobos_conformance::sass::find_nvdisasm;
use phobos_conformance::{compile, corpus_file, find_ptxas, in_ci};
use phobos_profile::occupancy::{occupancy, CtaResources};
use std::path::{Path, PathBuf};
use std::process::Command;

fn python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("python3"))
        .find(|p| p.is_file())
}

#[test]
fn the_report_finds_the_mma_loop_and_the_reference_row() {
    let (Some(python), Some(ptxas), Some(nvdisasm)) = (python3(), find_ptxas(), find_nvdisasm())
    else {
        assert!(
            !in_ci(),
            "python3, ptxas or nvdisasm not found (set PHOBOS_PTXAS and PHOBOS_NVDISASM); CI=true requires them"
        );
        eprintln!("skipping: python3, ptxas or nvdisasm not found");
        return;
    };
    let kernels = compile(&corpus_file("mma_gemm_staged"), 90);
    let dir = tempfile::tempdir().expect("temp dir");
    let ptx = dir.path().join("mma_gemm_staged.sm_90.ptx");
    std::fs::write(&ptx, &kernels[0].ptx).expect("write PTX");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root");
    let out = Command::new(python)
        .arg(root.join("scripts/sass-loop-report.py"))
        .args(["--arch", "sm_90", "--json", "--ptx"])
        .arg(&ptx)
        .env("PHOBOS_PTXAS", &ptxas)
        .env("PHOBOS_NVDISASM", &nvdisasm)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "sass-loop-report.py failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let rows = report["rows"].as_array().expect("rows");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["kernel"].as_str()).collect();
    assert_eq!(rows.len(), 2, "{names:?}");
    assert_eq!(names[0], "mma_gemm_staged");
    assert!(names[1].starts_with("reference"), "{names:?}");
    for r in rows {
        let name = &r["kernel"];
        assert_eq!(r["arch"], "sm_90", "{name}");
        assert!(r["registers"].as_u64().unwrap() > 0, "{name}");
        assert!(r["ctas_per_sm"].as_u64().unwrap() >= 1, "{name}");
        let num = |key: &str| u32::try_from(r[key].as_u64().unwrap()).unwrap();
        let owner = occupancy(
            90,
            CtaResources {
                threads: num("threads"),
                registers: Some(num("registers")),
                shared_bytes: num("smem_bytes"),
            },
        )
        .expect("occupancy");
        assert_eq!(num("ctas_per_sm"), owner.ctas_per_sm, "{name}: {owner:?}");
        let names: Vec<&str> = owner.limited_by.iter().map(|l| l.name()).collect();
        assert_eq!(r["cta_limit"], serde_json::json!(names), "{name}");
        assert!(
            r["smem_bytes"].as_u64().unwrap() > 0,
            "{name}: both stage tiles in shared memory"
        );
        let lp = &r["loop"];
        assert!(lp.is_object(), "{name}: no loop with an MMA found");
        let tc = lp["tensor_insns"].as_u64().unwrap();
        let issued = lp["issued"].as_u64().unwrap();
        let length = lp["length"].as_u64().unwrap();
        assert!(tc > 0, "{name}");
        assert!(lp["hmma16816"].as_f64().unwrap() > 0.0, "{name}");
        assert!(lp["per_hmma"].as_f64().unwrap() > 0.0, "{name}");
        assert!(tc <= issued && issued <= length, "{name}: {lp}");
        let share = lp["tensor_share"].as_f64().unwrap();
        assert!(share > 0.0 && share <= 1.0, "{name}: {share}");
        let inner = lp["inner_loops"].as_array().expect("inner_loops");
        assert_eq!(
            lp["lower_bound"].as_bool(),
            Some(!inner.is_empty()),
            "{name}"
        );
    }
    // The reference's loop holds no inner loop: its count is exact.
    assert_eq!(rows[1]["loop"]["lower_bound"].as_bool(), Some(false));
    // mma.sync m16n8k16 f16 / bf16 are the HMMA.16816 forms.
    assert!(rows[0]["tensor_mnemonics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m.as_str().unwrap().starts_with("HMMA.16816")));
}
