//! The bundle's `run.sh` on its own, with stand-in programs in place of
//! the Rust binaries (shell scripts that write what the real ones write),
//! so that what happens around a step — its budget, the run's deadline, a
//! kill from outside, the report from whatever rows exist — is tested in
//! seconds and without a release build (issue 27, defect 2).
//!
//! - The budgets of all steps add up to at most 480 s, and no step has a
//!   limit of its own outside them.
//! - A step that hangs is cut at the run's deadline, and the report still
//!   holds every other step's rows and the hung step's rows so far.
//! - A run killed from outside (SIGTERM, as a 600 s command limit does)
//!   still writes the report.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run_sh() -> String {
    std::fs::read_to_string(crate_dir().join("run.sh")).expect("run.sh")
}

#[test]
fn the_step_budgets_add_up_to_at_most_480_seconds() {
    let text = run_sh();
    let budgets: Vec<(String, u64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("BUDGET_"))
        .filter_map(|l| l.split_once('='))
        .map(|(n, v)| {
            (
                n.to_string(),
                v.trim().parse().expect("a number of seconds"),
            )
        })
        .collect();
    assert!(budgets.len() >= 8, "{budgets:?}");
    let sum: u64 = budgets.iter().map(|b| b.1).sum();
    assert!(sum <= 480, "the budgets add up to {sum} s: {budgets:?}");
    // Every step takes its limit from a budget, not a number of its own.
    for l in text.lines().map(str::trim) {
        if l.starts_with("step ") {
            assert!(l.contains("BUDGET_"), "a step without a budget: {l}");
        }
    }
    assert!(
        text.contains("trap report EXIT"),
        "the report runs from a trap"
    );
}

/// A bundle folder with run.sh, the Python scripts, and shell stand-ins
/// for the binaries: the example passes, phobos-diff writes a complete
/// diff.json, phobos-bench writes one row of bench.json and then hangs.
fn fake_bundle(name: &str) -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&root);
    let bundle = root.join("bundle");
    std::fs::create_dir_all(bundle.join("bin")).unwrap();
    std::fs::create_dir_all(bundle.join("python")).unwrap();
    std::fs::copy(crate_dir().join("run.sh"), bundle.join("run.sh")).unwrap();
    for e in std::fs::read_dir(crate_dir().join("python")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "py") {
            std::fs::copy(&p, bundle.join("python").join(p.file_name().unwrap())).unwrap();
        }
    }
    let scripts = [
        ("phobos-example-matvec", "echo 'example: ok'\n".to_string()),
        (
            "phobos-diff",
            r#"out=.; while [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done
cat >"$out/diff.json" <<'J'
{"device": "fake", "seeds": [1], "pass": true, "complete": true, "failures_saved_in": "x",
 "failed": [], "variants_not_run": [],
 "records": [{"case": "vec_add", "variant": "vec_add", "causes": [], "ok": true,
              "max_ulps": 0.0, "explanation": "identical"}]}
J
echo 'differential: PASS'
"#
            .to_string(),
        ),
        (
            "phobos-bench",
            r#"out=bench.json; while [ $# -gt 0 ]; do [ "$1" = --out ] && out="$2"; shift; done
cat >"$out" <<'J'
{"device": "fake", "timing": "events", "runs": 30, "complete": false, "copy_gbs": 100.0,
 "rows": [{"kernel": "copy_dtod", "shape": "1 GiB", "ms": 1.0, "gbs": 100.0, "pct_copy": 100.0,
           "ok": true}]}
J
echo 'copy_dtod ok'
[ "${FAKE_BENCH_HANG:-1}" = 1 ] && exec sleep 300
exit 0
"#
            .to_string(),
        ),
    ];
    for (bin, body) in scripts {
        let p = bundle.join("bin").join(bin);
        std::fs::write(&p, format!("#!/usr/bin/env bash\n{body}")).unwrap();
        Command::new("chmod").arg("+x").arg(&p).status().unwrap();
    }
    (bundle, root.join("results"))
}

fn start(bundle: &Path, results: &Path, deadline_s: u32) -> std::process::Child {
    Command::new("bash")
        .arg(bundle.join("run.sh"))
        .arg(results)
        .arg("--small")
        // As on the stand-in: torch, Triton and ncu are skipped.
        .env("PHOBOS_FAKE_GPU_LIB", "/nonexistent/libcuda.so.1")
        .env("PHOBOS_BUNDLE_DEADLINE_S", deadline_s.to_string())
        .env_remove("FAKE_BENCH_HANG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bash runs")
}

/// Waits at most `limit` for the child; kills it (and fails) after that.
fn wait(child: &mut std::process::Child, limit: Duration) {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("run.sh did not end within {limit:?}");
}

fn results(results: &Path) -> (serde_json::Value, String) {
    let json = std::fs::read_to_string(results.join("results.json"))
        .expect("the report wrote results.json");
    let md = std::fs::read_to_string(results.join("results.md")).expect("results.md");
    (
        serde_json::from_str(&json).expect("results.json parses"),
        md,
    )
}

fn status<'a>(res: &'a serde_json::Value, step: &str) -> &'a str {
    res["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["step"] == step))
        .and_then(|s| s["status"].as_str())
        .unwrap_or_else(|| panic!("no step {step}: {res}"))
}

fn python3() -> bool {
    Command::new("python3").arg("--version").output().is_ok()
}

#[test]
fn a_hung_step_is_cut_at_the_deadline_and_the_report_keeps_every_row() {
    if !python3() {
        assert!(!phobos_conformance::in_ci(), "CI has python3");
        return;
    }
    let (bundle, out) = fake_bundle("bundle-script-deadline");
    let mut child = start(&bundle, &out, 15);
    wait(&mut child, Duration::from_secs(40));
    let (res, md) = results(&out);
    assert_eq!(status(&res, "example"), "ok");
    assert_eq!(status(&res, "diff"), "ok");
    assert_eq!(status(&res, "bench"), "TIMEOUT");
    assert_eq!(res["differential"]["pass"], true);
    let bench = res["benchmarks"].as_array().expect("benchmark rows");
    assert_eq!(bench[0]["kernel"], "copy_dtod");
    assert!(md.contains("| copy_dtod |"), "{md}");
    assert!(md.contains("**Partial**"), "{md}");
    assert!(md.contains("| vec_add | vec_add |"), "{md}");
}

#[test]
fn a_run_killed_from_outside_still_writes_its_report() {
    if !python3() {
        return;
    }
    let (bundle, out) = fake_bundle("bundle-script-kill");
    let mut child = start(&bundle, &out, 480);
    // Kill the run (as an outer command limit would) once the bench is
    // hanging: its row is on disk.
    let t0 = Instant::now();
    while !out.join("bench.json").exists() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    wait(&mut child, Duration::from_secs(30));
    let (res, md) = results(&out);
    assert_eq!(status(&res, "diff"), "ok");
    assert_eq!(status(&res, "bench"), "KILLED");
    assert_eq!(res["ok"], false);
    assert!(md.contains("| copy_dtod |"), "{md}");
}

#[test]
fn the_ncu_csv_holds_ncu_output_alone_and_the_environment_names_libcuda() {
    if !python3() {
        return;
    }
    let (bundle, out) = fake_bundle("bundle-script-ncu");
    // A GPU machine without torch (a `torch` module that fails to import
    // shadows any real one), without nvidia-smi, with an ncu that writes
    // its CSV where --log-file says and runs the program after its
    // options.
    let fake = bundle.parent().unwrap().join("fakebin");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(
        fake.join("torch.py"),
        "raise ImportError('no torch here')\n",
    )
    .unwrap();
    let ncu = fake.join("ncu");
    std::fs::write(
        &ncu,
        r#"#!/usr/bin/env bash
log=/dev/stdout
while [ $# -gt 0 ]; do
    case "$1" in
        --log-file) log="$2"; shift 2 ;;
        --csv) shift ;;
        --*|-k|-c) shift 2 ;;
        *) break ;;
    esac
done
echo '"ID","Kernel Name","Metric Name","Metric Value"' >"$log"
echo '"0","lanes_matvec","gpu__time_duration.sum","1000"' >>"$log"
exec "$@"
"#,
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&ncu).status().unwrap();
    let path = format!("{}:/usr/bin:/bin", fake.display());
    let mut child = Command::new("bash")
        .arg(bundle.join("run.sh"))
        .arg(&out)
        .arg("--small")
        .env_remove("PHOBOS_FAKE_GPU_LIB")
        .env("PATH", path)
        .env("PYTHONPATH", &fake)
        .env("FAKE_BENCH_HANG", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait(&mut child, Duration::from_secs(60));
    let (res, _) = results(&out);
    assert_eq!(status(&res, "ncu-lanes_matvec"), "ok");
    let csv = std::fs::read_to_string(out.join("ncu-lanes_matvec.csv")).expect("ncu's CSV");
    assert!(csv.starts_with("\"ID\""), "{csv}");
    assert!(
        !csv.contains("copy_dtod ok"),
        "the bench's output is in the CSV:\n{csv}"
    );
    let log = std::fs::read_to_string(out.join("logs/ncu-lanes_matvec.log")).unwrap();
    assert!(log.contains("copy_dtod ok"), "{log}");
    let env = std::fs::read_to_string(out.join("environment.txt")).unwrap();
    assert!(
        env.lines().any(|l| l.starts_with("libcuda: ")),
        "environment.txt does not name libcuda:\n{env}"
    );
}

/// Phobos, torch and Triton rows are timed one way (issue 27, defect 7):
/// the same warm-up and batch in phobos-bench and python/shapes.py, and
/// no comparison script times with anything but `shapes.time_ms`
/// (`do_bench` flushes the L2 and times differently).
#[test]
fn phobos_torch_and_triton_are_timed_the_same_way() {
    let bench = std::fs::read_to_string(crate_dir().join("src/bin/bench.rs")).unwrap();
    let shapes = std::fs::read_to_string(crate_dir().join("python/shapes.py")).unwrap();
    for name in ["WARMUP", "BATCH"] {
        let rust = bench
            .lines()
            .find_map(|l| l.strip_prefix(&format!("const {name}: usize = ")))
            .and_then(|v| v.trim_end_matches(';').parse::<u32>().ok())
            .unwrap_or_else(|| panic!("bench.rs has no const {name}"));
        let py = shapes
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} = ")))
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or_else(|| panic!("shapes.py has no {name}"));
        assert_eq!(rust, py, "{name} differs between bench.rs and shapes.py");
    }
    for script in ["torch_bench.py", "triton_bench.py"] {
        let text = std::fs::read_to_string(crate_dir().join("python").join(script)).unwrap();
        assert!(!text.contains("do_bench"), "{script} times with do_bench");
        assert!(
            text.contains("time_ms(fn)"),
            "{script} does not time with shapes.time_ms"
        );
    }
}
