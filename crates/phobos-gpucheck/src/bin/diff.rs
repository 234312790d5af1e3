//! `phobos-diff`: the GPU bundle's differential check. Every case of the
//! conformance corpus (`phobos_conformance::corpus_cases`: every
//! `tests/in` kernel, the seed page's kernels among them, with ragged sizes
//! and every `@autotune` variant), plus the example's kernels, runs on the
//! simulator and through the runtime (the GPU; the CUDA driver stand-in
//! under `scripts/with-fake-gpu.sh`) from the same seeded inputs, and the
//! outputs are compared by `phobos_conformance::differential`: integers
//! bitwise, floats in ulps within the tolerance of a cause the PTX shows.
//!
//! ```text
//! phobos-diff [--out DIR] [--seeds N] [--only NAME] [--case-timeout S]
//! ```
//!
//! Writes `DIR/diff.json` (one record per case and seed) and, for every
//! failing case, its inputs and both outputs under `DIR/diff-failures/`.
//! `diff.json` is rewritten (through a temporary file and a rename) after
//! every case run, with `"complete": false` until the end: a case that
//! hangs or kills the process costs its own row, and run.sh's report
//! still reads every earlier one.
//!
//! **One bad kernel costs one row.** A CUDA fault is sticky: every later
//! call on the context fails. So the cases run in a child process
//! (`--child FROM`: this program, running the cases from index FROM on and
//! printing each result as a `RUN {json}` line), which the parent
//! watches: after a case whose runtime side failed the child exits (3),
//! and the parent starts a fresh one — a fresh context — at the next
//! case; a case that gives no result within `--case-timeout` seconds
//! (default 20) is killed and recorded as hung, and one whose process dies
//! as crashed, and the run goes on likewise.
//! Prints a table, one row per kernel variant with its largest difference
//! and what explains it. Exits 1 when any case failed: a launch failed, the
//! sides disagree beyond what a cause explains, the runtime's outputs miss
//! the case's Rust reference, or a variant of a corpus kernel never ran.
//!
//! The corpus is read at run time (`PHOBOS_CORPUS_DIR`, which the bundle's
//! `run.sh` points at its copy) and compiled in-process by phobos-core,
//! which needs no ptxas: the GPU's driver JIT-compiles the PTX, the same
//! text the simulator runs.

#[path = "../images.rs"]
mod images;

use phobos_conformance::corpus_cases::CASES;
use phobos_conformance::differential::{panic_text, save_failures_to, take_records, Record};
use phobos_conformance::executor::{device, with_executor, Executor};
use phobos_conformance::sim_support::{cdiv, with_seed, Case, Tensor};
use phobos_core::ast::ScalarTy;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;

/// The seeds every case runs with: the suite's default, then more.
const SEEDS: [u64; 4] = [0x5eed_0001, 11, 12, 13];

/// The example's kernels (examples/matvec/kernels), which differ from the
/// corpus's copies in their comments and may drift further: each runs on
/// the dims the example itself uses at small scale, ragged.
const EXAMPLE: &[(&str, &str)] = &[
    (
        "lanes_matvec",
        include_str!("../../../../examples/matvec/kernels/lanes_matvec.pho"),
    ),
    (
        "i8_matvec",
        include_str!("../../../../examples/matvec/kernels/i8_matvec.pho"),
    ),
    (
        "staged_matvec",
        include_str!("../../../../examples/matvec/kernels/staged_matvec.pho"),
    ),
    (
        "lane_max",
        include_str!("../../../../examples/matvec/kernels/lane_max.pho"),
    ),
];

/// The bundle's own GEMM (`kernels/bf16_gemm.pho`: the 128 × 128 tile of
/// 8 warps, the 3-stage ring of 16-byte `cp.async` copies), which no
/// corpus kernel has: on devices of sm_80 and newer (bf16 `mma.sync`), at
/// phobos-bench's two ragged small sizes, checked against an f64 product
/// within K²·2⁻²⁴ as the benchmark checks it.
const BUNDLE_GEMM: &str = include_str!("../../kernels/bf16_gemm.pho");

fn bundle_gemm_case() {
    // bf16 mma.sync needs sm_80: nothing to compare on an older device.
    if device().arch().is_some_and(|a| a < 80) {
        return;
    }
    for (m, n, k) in [(130usize, 96usize, 72usize), (70, 200, 40)] {
        let o = Case::source(BUNDLE_GEMM, "kernels/bf16_gemm.pho", "bf16_gemm")
            .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
            .run([cdiv(m, 128), cdiv(n, 128), 1]);
        let (a, b) = (o.input("A"), o.input("B"));
        let mut want = Tensor::zeros(ScalarTy::F64, &[m, n]);
        for r in 0..m {
            for c in 0..n {
                let s: f64 = (0..k).map(|x| a.f(r * k + x) * b.f(x * n + c)).sum();
                want.set_f(r * n + c, s);
            }
        }
        o.check_within("C", &want, |_| (k * k) as f64 * 2f64.powi(-24));
    }
}

/// The bundle's FP8 GEMM (`kernels/f8_gemm.pho`: A · Wᵀ, f8e4m3 operands
/// K-major): on devices of sm_89 and newer (FP8 `mma`; wgmma + TMA on
/// sm_90a), at phobos-bench's two ragged small sizes, checked against an
/// f64 product of the f8 values within K²·2⁻²⁴ as the benchmark checks it.
const BUNDLE_F8_GEMM: &str = include_str!("../../kernels/f8_gemm.pho");

fn bundle_f8_gemm_case() {
    if device().arch().is_some_and(|a| a < 89) {
        return;
    }
    for (m, n, k) in [(130usize, 96usize, 80usize), (70, 200, 48)] {
        let o = Case::source(BUNDLE_F8_GEMM, "kernels/f8_gemm.pho", "f8_gemm")
            .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
            .run([cdiv(m, 128), cdiv(n, 128), 1]);
        let (a, w) = (o.input("A"), o.input("W"));
        let mut want = Tensor::zeros(ScalarTy::F64, &[m, n]);
        for r in 0..m {
            for c in 0..n {
                let s: f64 = (0..k).map(|x| a.f(r * k + x) * w.f(c * k + x)).sum();
                want.set_f(r * n + c, s);
            }
        }
        o.check_within("C", &want, |_| (k * k) as f64 * 2f64.powi(-24));
    }
}

fn example_case(name: &str, src: &str) {
    let file = format!("examples/matvec/kernels/{name}.pho");
    let case = Case::source(src, &file, name);
    match name {
        "lanes_matvec" => case
            .dims(&[("N", 301), ("K", 512)])
            .run([cdiv(301, 4) + 1, 1, 1]),
        "staged_matvec" => case
            .dims(&[("N", 301), ("K", 256)])
            .run([cdiv(301, 4), 1, 1]),
        "i8_matvec" => case
            .dims(&[("N", 77), ("K", 512)])
            .run([cdiv(77, 8) + 1, 1, 1]),
        _ => case.run([1, 1, 1]),
    };
}

struct Args {
    out: PathBuf,
    seeds: usize,
    only: Option<String>,
    /// Seconds a case may take before it is recorded as hung.
    case_timeout: u64,
    /// In a child: the index of the first case to run.
    child: Option<usize>,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        out: PathBuf::from("."),
        seeds: SEEDS.len(),
        only: None,
        case_timeout: 20,
        child: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--out" => a.out = PathBuf::from(value()?),
            "--seeds" => {
                let v = value()?;
                a.seeds = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=SEEDS.len()).contains(n))
                    .ok_or(format!("--seeds {v}: give 1 to {}", SEEDS.len()))?;
            }
            "--only" => a.only = Some(value()?),
            "--case-timeout" => {
                let v = value()?;
                a.case_timeout = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(format!("--case-timeout {v}: give a number of seconds"))?;
            }
            "--child" => {
                let v = value()?;
                a.child = Some(v.parse().map_err(|_| format!("--child {v}: an index"))?);
            }
            "-h" | "--help" => {
                return Err(
                    "usage: phobos-diff [--out DIR] [--seeds 1-4] [--only NAME] [--case-timeout S]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

/// One case run: its records (as in `diff.json`), and the panic (if any)
/// that ended it, or the hang or crash of the process that ran it.
struct Run {
    name: String,
    seed: u64,
    records: Vec<serde_json::Value>,
    failure: Option<String>,
}

impl Run {
    /// The record of job `job`, whose process ended without its result,
    /// with `failure` saying how.
    fn lost(job: &Job, failure: String) -> Run {
        let (name, seed, _) = job;
        Run {
            name: name.clone(),
            seed: *seed,
            records: Vec::new(),
            failure: Some(failure),
        }
    }

    fn to_json(&self, index: usize) -> serde_json::Value {
        json!({"index": index, "name": self.name, "seed": self.seed,
               "failure": self.failure, "records": self.records})
    }

    fn from_json(v: &serde_json::Value) -> Option<(usize, Run)> {
        Some((
            v["index"].as_u64()? as usize,
            Run {
                name: v["name"].as_str()?.to_string(),
                seed: v["seed"].as_u64()?,
                records: v["records"].as_array()?.clone(),
                failure: v["failure"].as_str().map(str::to_string),
            },
        ))
    }

    /// Whether the runtime side of a launch failed: the context may hold a
    /// sticky fault, so the next case gets a fresh process.
    fn runtime_failed(&self) -> bool {
        self.records.iter().any(|r| {
            r["error"]
                .as_str()
                .is_some_and(|e| e.starts_with("runtime:"))
        })
    }
}

/// A record's verdict, largest difference (`null`: infinite), explanation
/// and variant, as `diff.json` has them.
fn rec_ok(r: &serde_json::Value) -> bool {
    r["ok"].as_bool().unwrap_or(false)
}

fn rec_ulps(r: &serde_json::Value) -> f64 {
    r["max_ulps"].as_f64().unwrap_or(f64::INFINITY)
}

fn rec_text<'a>(r: &'a serde_json::Value, key: &str) -> &'a str {
    r[key].as_str().unwrap_or("")
}

/// A case to run: its name, seed, and the run.
type Job = (String, u64, Box<dyn Fn() -> Run>);

/// The child's side: runs `jobs[from..]`, printing each result as one
/// `RUN` line; stops (exit 3) after a case whose runtime side failed.
fn child(jobs: &[Job], from: usize) -> ExitCode {
    use std::io::Write as _;
    for (i, (_, _, job)) in jobs.iter().enumerate().skip(from) {
        let run = job();
        let mut v = run.to_json(i);
        // What the driver loaded for every kernel so far (the parent keeps
        // the latest of each).
        v["images"] = device()
            .loaded_images()
            .iter()
            .map(images::image_json)
            .collect();
        let line = serde_json::to_string(&v).unwrap_or_default();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "RUN {line}");
        let _ = out.flush();
        if run.runtime_failed() {
            return ExitCode::from(3);
        }
    }
    ExitCode::SUCCESS
}

/// The parent's side: runs every job in child processes, a fresh one after
/// a runtime failure, a hang (killed after `timeout`) or a crash, calling
/// `journal` after every run.
fn supervise(
    jobs: &[Job],
    timeout: std::time::Duration,
    mut on_device: impl FnMut(&serde_json::Value),
    mut journal: impl FnMut(&[Run], &[serde_json::Value]),
) -> Result<(Vec<Run>, Vec<serde_json::Value>), String> {
    use std::io::BufRead as _;
    use std::sync::mpsc;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let passed: Vec<String> = std::env::args().skip(1).collect();
    let mut runs = Vec::new();
    // The loaded images by (module, kernel), the latest report of each.
    let mut loaded: BTreeMap<(String, String), serde_json::Value> = BTreeMap::new();
    let mut next = 0;
    while next < jobs.len() {
        let mut child = std::process::Command::new(&exe)
            .args(&passed)
            .arg("--child")
            .arg(next.to_string())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdout = child.stdout.take().ok_or("no pipe from the child")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        loop {
            match rx.recv_timeout(timeout) {
                Ok(line) => match line.strip_prefix("RUN ") {
                    Some(text) => {
                        let v: serde_json::Value = serde_json::from_str(text)
                            .map_err(|e| format!("a bad line from the child: {e}"))?;
                        let (i, run) = Run::from_json(&v).ok_or("a bad run from the child")?;
                        runs.push(run);
                        next = i + 1;
                        for image in v["images"].as_array().into_iter().flatten() {
                            let key = (
                                image["module"].as_str().unwrap_or("").to_string(),
                                image["kernel"].as_str().unwrap_or("").to_string(),
                            );
                            loaded.insert(key, image.clone());
                        }
                        journal(&runs, &loaded.values().cloned().collect::<Vec<_>>());
                    }
                    None => match line
                        .strip_prefix("DEVICE ")
                        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                    {
                        Some(info) => {
                            println!(
                                "device: {} ({}, {})",
                                info["device"].as_str().unwrap_or("?"),
                                info["backend"].as_str().unwrap_or("?"),
                                info["arch"].as_str().unwrap_or("?")
                            );
                            on_device(&info);
                        }
                        None => println!("{line}"),
                    },
                },
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let why = format!(
                        "hung: no result within {} s; killed, and the later cases ran in a \
                         fresh process",
                        timeout.as_secs()
                    );
                    runs.push(Run::lost(&jobs[next], why));
                    next += 1;
                    journal(&runs, &loaded.values().cloned().collect::<Vec<_>>());
                    break;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child.wait().map_err(|e| e.to_string())?;
                    // Exit 0 after the last case, or 3 after a runtime
                    // failure it reported: go on from `next`. Anything
                    // else died during the case at `next`.
                    if next < jobs.len() && !matches!(status.code(), Some(0) | Some(3)) {
                        let why = format!(
                            "the process running it died ({status}); the later cases ran in \
                             a fresh process"
                        );
                        runs.push(Run::lost(&jobs[next], why));
                        next += 1;
                        journal(&runs, &loaded.values().cloned().collect::<Vec<_>>());
                    }
                    break;
                }
            }
        }
    }
    Ok((runs, loaded.into_values().collect()))
}

fn run_one(name: &str, seed: u64, f: impl FnOnce() + std::panic::UnwindSafe) -> Run {
    let result =
        std::panic::catch_unwind(|| with_seed(seed, || with_executor(Executor::Differential, f)));
    let records = take_records();
    let failure = result.err().map(|p| {
        let text = panic_text(&p);
        if records.iter().all(|r| r.ok && r.error.is_none()) {
            // Both sides agreed; the runtime's outputs then missed the
            // case's own reference (or the case panicked before a launch).
            format!("the runtime's outputs miss the Rust reference: {text}")
        } else {
            text
        }
    });
    Run {
        name: name.to_string(),
        seed,
        records: records
            .iter()
            .map(|x| {
                let mut v = record_json(x);
                v["case"] = json!(name);
                v
            })
            .collect(),
        failure,
    }
}

/// The variants of every corpus kernel the device can run (a file whose
/// `// needs: sm_N` is newer than `device_arch` is not run there), by
/// entry name.
fn corpus_variants(only: Option<&str>, device_arch: Option<u32>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for file in phobos_conformance::corpus() {
        if only.is_some_and(|o| o != file.name) {
            continue;
        }
        if device_arch.is_some_and(|a| a < file.min_arch()) {
            continue;
        }
        for k in phobos_conformance::compile(&file, file.min_arch()) {
            for v in &k.meta.variants {
                out.insert(v.entry.clone(), k.meta.name.clone());
            }
        }
    }
    out
}

fn record_json(r: &Record) -> serde_json::Value {
    json!({
        "kernel": r.kernel,
        "variant": r.entry,
        "seed": r.seed,
        "grid": r.grid,
        "dims": r.dims.iter().map(|(n, v)| json!([n, v])).collect::<Vec<_>>(),
        "causes": r.causes.iter().map(|c| c.name()).collect::<Vec<_>>(),
        "ok": r.ok && r.error.is_none(),
        "error": r.error,
        "max_ulps": finite(r.max_ulps()),
        "explanation": r.explanation(),
        "saved": r.saved.as_ref().map(|p| p.display().to_string()),
        "tensors": r.tensors.iter().map(|t| json!({
            "tensor": t.tensor,
            "elem": format!("{:?}", t.elem).to_lowercase(),
            "elements": t.elements,
            "differing": t.differing,
            "max_ulps": finite(t.max_ulps),
            "max_abs": finite(t.max_abs),
            "dot_share": t.dot_share.map(finite),
            "first": t.first.as_ref().map(|(i, s, g)| json!({"index": i, "sim": s, "gpu": g})),
        })).collect::<Vec<_>>(),
    })
}

/// JSON has no infinity: a difference no cause can explain is `null`.
fn finite(x: f64) -> serde_json::Value {
    if x.is_finite() {
        json!(x)
    } else {
        serde_json::Value::Null
    }
}

/// `diff.json`: `head` (device, seeds, where failures are saved), the
/// verdict so far, and every record of `runs`. `complete` is false while
/// cases remain (and `variants_not_run` is then not yet known).
fn report(
    head: &serde_json::Value,
    runs: &[Run],
    loaded: &[serde_json::Value],
    missing: &[(String, String)],
    complete: bool,
) -> serde_json::Value {
    let failed: Vec<&Run> = runs.iter().filter(|r| r.failure.is_some()).collect();
    let mut v = head.clone();
    v["complete"] = json!(complete);
    v["pass"] = json!(complete && failed.is_empty() && missing.is_empty());
    v["case_runs"] = json!(runs.len());
    v["failed"] = json!(failed
        .iter()
        .map(|r| json!({"case": r.name, "seed": r.seed, "why": r.failure}))
        .collect::<Vec<_>>());
    v["variants_not_run"] = json!(missing
        .iter()
        .map(|(e, k)| json!({"variant": e, "kernel": k}))
        .collect::<Vec<_>>());
    v["images"] = json!(loaded);
    v["records"] = json!(runs
        .iter()
        .flat_map(|r| r.records.iter().cloned())
        .collect::<Vec<_>>());
    v
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    // Case panics are caught and reported in the table; the default hook
    // would print each one's backtrace banner in between.
    std::panic::set_hook(Box::new(|_| {}));
    let failures_dir = args.out.join("diff-failures");
    save_failures_to(&failures_dir);

    let path = args.out.join("diff.json");
    // Only the child opens the device (a GPU in exclusive-process mode
    // takes one context); it reports it on a `DEVICE` line.
    let head = std::cell::RefCell::new(json!({
        "device": null,
        "backend": null,
        "arch": null,
        "seeds": &SEEDS[..args.seeds],
        "failures_saved_in": failures_dir.display().to_string(),
    }));
    let journal = |runs: &[Run],
                   loaded: &[serde_json::Value],
                   missing: &[(String, String)],
                   complete: bool| {
        let head = head.borrow().clone();
        let text = serde_json::to_string_pretty(&report(&head, runs, loaded, missing, complete))
            .unwrap_or_default();
        let tmp = args.out.join("diff.json.tmp");
        std::fs::create_dir_all(&args.out)
            .and_then(|_| std::fs::write(&tmp, text))
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    let mut jobs: Vec<Job> = Vec::new();
    for &seed in &SEEDS[..args.seeds] {
        for (name, f) in CASES {
            if args.only.as_deref().is_some_and(|o| o != *name) {
                continue;
            }
            let f = *f;
            // A kernel that needs a newer target than the device (the FP8
            // ones need sm_89) has nothing to compare there, as the bundle
            // GEMM below on a device older than sm_80.
            let needs = phobos_conformance::corpus_file(name).min_arch();
            jobs.push((
                name.to_string(),
                seed,
                Box::new(move || {
                    run_one(name, seed, move || {
                        if device().arch().is_some_and(|a| a < needs) {
                            return;
                        }
                        f()
                    })
                }),
            ));
        }
        for (name, src) in EXAMPLE {
            let label = format!("example/{name}");
            if args.only.as_deref().is_some_and(|o| o != label) {
                continue;
            }
            let l = label.clone();
            jobs.push((
                label,
                seed,
                Box::new(move || run_one(&l, seed, move || example_case(name, src))),
            ));
        }
    }
    let label = "bundle/bf16_gemm";
    if args.only.as_deref().is_none_or(|o| o == label) {
        jobs.push((
            label.to_string(),
            SEEDS[0],
            Box::new(move || run_one(label, SEEDS[0], bundle_gemm_case)),
        ));
    }
    let label = "bundle/f8_gemm";
    if args.only.as_deref().is_none_or(|o| o == label) {
        jobs.push((
            label.to_string(),
            SEEDS[0],
            Box::new(move || run_one(label, SEEDS[0], bundle_f8_gemm_case)),
        ));
    }
    if let Some(from) = args.child {
        let dev = device();
        let info = json!({"device": dev.name(), "backend": dev.kind().to_string(),
                          "arch": dev.arch_label()});
        println!("DEVICE {info}");
        return child(&jobs, from);
    }
    if let Err(e) = journal(&[], &[], &[], false) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    let mut journal_error = None;
    let timeout = std::time::Duration::from_secs(args.case_timeout);
    let on_device = |info: &serde_json::Value| {
        let mut h = head.borrow_mut();
        for key in ["device", "backend", "arch"] {
            h[key] = info[key].clone();
        }
    };
    let (runs, loaded) = match supervise(&jobs, timeout, on_device, |runs, loaded| {
        if let Err(e) = journal(runs, loaded, &[], false) {
            journal_error.get_or_insert(e);
        }
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(e) = journal_error {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }

    // Every variant of every corpus kernel must have run.
    let ran: BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| r.records.iter().map(|x| rec_text(x, "variant")))
        .collect();
    let device_arch = head.borrow()["arch"]
        .as_str()
        .and_then(|a| a.strip_prefix("sm_")?.parse::<u32>().ok());
    let missing: Vec<(String, String)> = corpus_variants(args.only.as_deref(), device_arch)
        .into_iter()
        .filter(|(entry, _)| !ran.contains(entry.as_str()))
        .collect();

    // One row per (case, variant): the largest difference over the seeds.
    let mut rows: BTreeMap<(String, String), (f64, String, bool, usize)> = BTreeMap::new();
    for run in &runs {
        for r in &run.records {
            let key = (run.name.clone(), rec_text(r, "variant").to_string());
            let ok = rec_ok(r);
            let (ulps, why) = (rec_ulps(r), rec_text(r, "explanation"));
            let row = rows
                .entry(key)
                .or_insert((0.0, "identical".into(), true, 0));
            row.3 += 1;
            if !ok || ulps > row.0 || (row.1 == "identical" && why != "identical") {
                row.0 = row.0.max(ulps);
                if row.2 {
                    row.1 = why.to_string();
                }
            }
            row.2 &= ok;
        }
    }
    println!(
        "{:<34} {:<30} {:>5} {:>12}  explanation",
        "case", "variant", "runs", "max ulps"
    );
    for ((case, entry), (ulps, why, ok, n)) in &rows {
        let ulps = if ulps.is_finite() {
            format!("{ulps:.1}")
        } else {
            "inf".into()
        };
        println!(
            "{case:<34} {entry:<30} {n:>5} {ulps:>12}  {}{why}",
            if *ok { "" } else { "FAIL: " }
        );
    }
    let failed: Vec<&Run> = runs.iter().filter(|r| r.failure.is_some()).collect();
    for r in &failed {
        println!(
            "FAILED {} (seed {:#x}): {}",
            r.name,
            r.seed,
            r.failure.as_deref().unwrap_or("")
        );
    }
    for (entry, kernel) in &missing {
        println!("FAILED variant {entry} of {kernel} never ran: add a case that picks it");
    }
    let pass = failed.is_empty() && missing.is_empty();
    println!(
        "differential: {} case runs, {} launches compared, {} failed, {} variants not run: {}",
        runs.len(),
        runs.iter().map(|r| r.records.len()).sum::<usize>(),
        failed.len(),
        missing.len(),
        if pass { "PASS" } else { "FAIL" }
    );

    if let Err(e) = journal(&runs, &loaded, &missing, true) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    if pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
