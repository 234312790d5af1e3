//! phobos-bench on the CUDA driver stand-in records, per kernel, which
//! image the driver loaded and each entry's occupancy, and run.sh's report
//! puts them in results.md (issue 27, defects 6 and 8). The stand-in
//! refuses cubins, so the cubin for its sm_86 is refused (and named) and
//! the sm_86 PTX is loaded; occupancy comes from the stand-in's estimate.

use std::path::Path;
use std::process::Command;

#[test]
fn bench_json_and_results_md_name_the_loaded_image_and_occupancy() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-images");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let run = Command::new(root.join("scripts/with-fake-gpu.sh"))
        .arg(env!("CARGO_BIN_EXE_phobos-bench"))
        .args(["--small", "--only", "lanes_matvec,bf16_gemm_4096", "--out"])
        .arg(out.join("bench.json"))
        .env("PHOBOS_FAKE_GPU_CC", "8.6")
        .output()
        .expect("phobos-bench runs under the stand-in");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}");
    let text = std::fs::read_to_string(out.join("bench.json")).unwrap();
    let bench: serde_json::Value = serde_json::from_str(&text).unwrap();
    for row in bench["rows"].as_array().unwrap() {
        let images = row["images"].as_array().unwrap();
        assert_eq!(images.len(), 1, "{row}");
        let image = &images[0];
        assert_eq!(image["image"], "ptx sm_86", "{row}");
        let refused = image["refused"][0].as_str().unwrap_or("");
        assert!(
            refused.contains("sm_86 cubin") && refused.contains("NO_BINARY_FOR_GPU"),
            "{row}"
        );
        let entry = &image["entries"][0];
        assert!(
            entry["ctas_per_sm"].as_i64().is_some_and(|n| n >= 1),
            "{row}"
        );
        assert!(entry["threads"].as_u64().is_some_and(|n| n >= 32), "{row}");
    }
    // The report's table.
    let report = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("python/report.py"))
        .arg(&out)
        .output();
    let Ok(report) = report else {
        assert!(!phobos_conformance::in_ci(), "CI has python3");
        return;
    };
    let md = std::fs::read_to_string(out.join("results.md"))
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&report.stderr)));
    assert!(md.contains("## Loaded images and occupancy"), "{md}");
    let gemm = md
        .lines()
        .find(|l| l.starts_with("| bf16_gemm | "))
        .unwrap_or_else(|| panic!("no bf16_gemm image row:\n{md}"));
    assert!(gemm.contains("ptx sm_86"), "{gemm}");
    // 256 threads and 55.5 KB of dynamic shared memory: CTAs per SM from
    // the stand-in's 8.6 (100 KB per SM): one.
    assert!(gemm.contains("| 256 |"), "{gemm}");
}

/// On a 9.0 device the bf16 GEMM and the FP8 GEMM load their sm_90a images
/// (wgmma + TMA; the stand-in runs the sm_90a PTX, after refusing the
/// sm_90a and sm_90 cubins) and match their references; on an 8.6 device
/// the FP8 GEMM, built for sm_89 and newer only, is skipped and says why.
#[test]
fn the_gemms_run_their_sm_90a_images_on_a_9_0_device() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-sm90a");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let bench = |cc: &str, file: &str| -> serde_json::Value {
        let run = Command::new(root.join("scripts/with-fake-gpu.sh"))
            .arg(env!("CARGO_BIN_EXE_phobos-bench"))
            .args(["--small", "--only", "bf16_gemm_4096,f8_gemm_4096", "--out"])
            .arg(out.join(file))
            .env("PHOBOS_FAKE_GPU_CC", cc)
            .output()
            .expect("phobos-bench runs under the stand-in");
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{stdout}");
        serde_json::from_str(&std::fs::read_to_string(out.join(file)).unwrap()).unwrap()
    };
    let hopper = bench("9.0", "sm90.json");
    let rows = hopper["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{hopper}");
    for row in rows {
        assert_eq!(row["ok"], true, "{row}");
        assert!(row["max_error"].as_f64().unwrap() <= row["tolerance"].as_f64().unwrap());
        assert!(row["tflops"].as_f64().is_some_and(|t| t > 0.0), "{row}");
        let images = row["images"].as_array().unwrap();
        assert_eq!(images.len(), 1, "{row}");
        assert_eq!(images[0]["image"], "ptx sm_90a", "{row}");
    }
    assert!(rows[1]["shape"].as_str().unwrap().ends_with("f8e4m3"));

    let ampere = bench("8.6", "sm86.json");
    let rows = ampere["rows"].as_array().unwrap();
    assert_eq!(rows[0]["images"][0]["image"], "ptx sm_86", "{ampere}");
    assert_eq!(rows[1]["kernel"], "f8_gemm_4096");
    assert_eq!(
        rows[1]["skipped"], "needs sm_89 (FP8 tensor cores); this GPU is sm_86",
        "{ampere}"
    );
}

/// A benchmark that hangs costs its own row only: phobos-bench rewrites
/// bench.json after every row, so when a later kernel hangs (the stand-in's
/// `PHOBOS_FAKE_GPU_HANG_ENTRY`) and the process is killed, as run.sh's
/// timeout does, the rows measured before it are on disk (issue 27,
/// defect 2).
#[test]
fn a_hanging_benchmark_leaves_the_earlier_rows_in_bench_json() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-hang");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let json = out.join("bench.json");
    let mut child = Command::new(root.join("scripts/with-fake-gpu.sh"))
        .arg(env!("CARGO_BIN_EXE_phobos-bench"))
        .args([
            "--small",
            "--only",
            "copy_dtod,lanes_matvec,row_softmax",
            "--out",
        ])
        .arg(&json)
        .env("PHOBOS_FAKE_GPU_HANG_ENTRY", "row_softmax")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("phobos-bench starts under the stand-in");
    // Wait for the two rows before the hang, then kill it.
    let t0 = std::time::Instant::now();
    let rows = loop {
        let rows = std::fs::read_to_string(&json)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["rows"].as_array().map(|r| r.len()))
            .unwrap_or(0);
        if rows >= 2 || t0.elapsed() > std::time::Duration::from_secs(240) {
            break rows;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    std::thread::sleep(std::time::Duration::from_secs(2));
    let still_running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert!(still_running, "phobos-bench should hang in row_softmax");
    assert_eq!(rows, 2, "the rows before the hang");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["complete"], false);
    let names: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["copy_dtod", "lanes_matvec"]);
}
