//! One bad kernel costs one row of the differential check (issue 27,
//! defect 4): `phobos-diff` under the CUDA driver stand-in, with one
//! corpus kernel (the first case's) that faults on every launch (a sticky fault, as on a
//! GPU: `PHOBOS_FAKE_GPU_FAULT_ENTRY`) and one whose launch never returns
//! (`PHOBOS_FAKE_GPU_HANG_ENTRY`). Exactly those two cases fail, the hang
//! after `--case-timeout`, and every other case runs and passes: the cases
//! after a fault run in a fresh process, so a fresh context.

use std::path::Path;
use std::process::Command;

#[test]
fn a_faulting_and_a_hanging_kernel_cost_one_row_each() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("diff-isolation");
    let _ = std::fs::remove_dir_all(&out);
    let t0 = std::time::Instant::now();
    let run = Command::new(root.join("scripts/with-fake-gpu.sh"))
        .arg(env!("CARGO_BIN_EXE_phobos-diff"))
        .args(["--seeds", "1", "--case-timeout", "10", "--out"])
        .arg(&out)
        .env("PHOBOS_FAKE_GPU_FAULT_ENTRY", "atomic_histogram")
        .env("PHOBOS_FAKE_GPU_HANG_ENTRY", "saxpy")
        .env("PHOBOS_FAKE_GPU_QUIET", "1")
        .env("PHOBOS_CORPUS_DIR", root.join("tests/in"))
        .output()
        .expect("phobos-diff runs under the stand-in");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(!run.status.success(), "two cases fail:\n{stdout}");
    let text = std::fs::read_to_string(out.join("diff.json")).expect("diff.json");
    let diff: serde_json::Value = serde_json::from_str(&text).expect("diff.json parses");
    assert_eq!(diff["complete"], true);
    let failed: Vec<(&str, &str)> = diff["failed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["case"].as_str().unwrap(), f["why"].as_str().unwrap_or("")))
        .collect();
    let names: Vec<&str> = failed.iter().map(|f| f.0).collect();
    assert_eq!(
        names,
        ["atomic_histogram", "saxpy"],
        "{failed:#?}\n{stdout}"
    );
    assert!(failed[0].1.contains("runtime"), "{failed:?}");
    assert!(failed[1].1.starts_with("hung"), "{failed:?}");
    // Every other case ran, and agreed.
    let cases = diff["case_runs"].as_u64().unwrap();
    assert!(cases > 80, "{cases} case runs");
    for r in diff["records"].as_array().unwrap() {
        let case = r["case"].as_str().unwrap();
        if case != "atomic_histogram" && case != "saxpy" {
            assert_eq!(r["ok"], true, "{r}");
        }
    }
    // Only the hung kernel's variant has no record.
    let missing: Vec<&str> = diff["variants_not_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["kernel"].as_str().unwrap())
        .collect();
    assert!(missing.iter().all(|k| *k == "saxpy"), "{missing:?}");
    eprintln!("phobos-diff with a fault and a hang: {:?}", t0.elapsed());
}
