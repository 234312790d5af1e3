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
//! phobos-diff [--out DIR] [--seeds N] [--only NAME]
//! ```
//!
//! Writes `DIR/diff.json` (one record per case and seed) and, for every
//! failing case, its inputs and both outputs under `DIR/diff-failures/`.
//! `diff.json` is rewritten (through a temporary file and a rename) after
//! every case run, with `"complete": false` until the end: a case that
//! hangs or kills the process costs its own row, and run.sh's report
//! still reads every earlier one.
//! Prints a table, one row per kernel variant with its largest difference
//! and what explains it. Exits 1 when any case failed: a launch failed, the
//! sides disagree beyond what a cause explains, the runtime's outputs miss
//! the case's Rust reference, or a variant of a corpus kernel never ran.
//!
//! The corpus is read at run time (`PHOBOS_CORPUS_DIR`, which the bundle's
//! `run.sh` points at its copy) and compiled in-process by phobos-core,
//! which needs no ptxas: the GPU's driver JIT-compiles the PTX, the same
//! text the simulator runs.

use phobos_conformance::corpus_cases::CASES;
use phobos_conformance::differential::{panic_text, save_failures_to, take_records, Record};
use phobos_conformance::executor::{device, with_executor, Executor};
use phobos_conformance::sim_support::{cdiv, with_seed, Case};
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
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        out: PathBuf::from("."),
        seeds: SEEDS.len(),
        only: None,
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
            "-h" | "--help" => {
                return Err("usage: phobos-diff [--out DIR] [--seeds 1-4] [--only NAME]".into())
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

/// One case run: its records, and the panic (if any) that ended it.
struct Run {
    name: String,
    seed: u64,
    records: Vec<Record>,
    failure: Option<String>,
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
        records,
        failure,
    }
}

/// The variants of every corpus kernel, by entry name.
fn corpus_variants(only: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for file in phobos_conformance::corpus() {
        if only.is_some_and(|o| o != file.name) {
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
    v["records"] = json!(runs
        .iter()
        .flat_map(|r| r.records.iter().map(|x| {
            let mut v = record_json(x);
            v["case"] = json!(r.name);
            v
        }))
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
    let dev = device();
    println!(
        "device: {} ({}, {})",
        dev.name(),
        dev.kind(),
        dev.arch_label()
    );
    let failures_dir = args.out.join("diff-failures");
    save_failures_to(&failures_dir);

    let path = args.out.join("diff.json");
    let head = json!({
        "device": dev.name(),
        "backend": dev.kind().to_string(),
        "arch": dev.arch_label(),
        "seeds": &SEEDS[..args.seeds],
        "failures_saved_in": failures_dir.display().to_string(),
    });
    let journal = |runs: &[Run], missing: &[(String, String)], complete: bool| {
        let text = serde_json::to_string_pretty(&report(&head, runs, missing, complete))
            .unwrap_or_default();
        let tmp = args.out.join("diff.json.tmp");
        std::fs::create_dir_all(&args.out)
            .and_then(|_| std::fs::write(&tmp, text))
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    let mut runs = Vec::new();
    let mut todo: Vec<Box<dyn Fn() -> Run>> = Vec::new();
    for &seed in &SEEDS[..args.seeds] {
        for (name, f) in CASES {
            if args.only.as_deref().is_some_and(|o| o != *name) {
                continue;
            }
            let f = *f;
            todo.push(Box::new(move || run_one(name, seed, f)));
        }
        for (name, src) in EXAMPLE {
            let label = format!("example/{name}");
            if args.only.as_deref().is_some_and(|o| o != label) {
                continue;
            }
            todo.push(Box::new(move || {
                run_one(&label, seed, move || example_case(name, src))
            }));
        }
    }
    if let Err(e) = journal(&runs, &[], false) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    for run in &todo {
        runs.push(run());
        if let Err(e) = journal(&runs, &[], false) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }

    // Every variant of every corpus kernel must have run.
    let ran: BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| r.records.iter().map(|x| x.entry.as_str()))
        .collect();
    let missing: Vec<(String, String)> = corpus_variants(args.only.as_deref())
        .into_iter()
        .filter(|(entry, _)| !ran.contains(entry.as_str()))
        .collect();

    // One row per (case, variant): the largest difference over the seeds.
    let mut rows: BTreeMap<(String, String), (f64, String, bool, usize)> = BTreeMap::new();
    for run in &runs {
        for r in &run.records {
            let key = (run.name.clone(), r.entry.clone());
            let ok = r.ok && r.error.is_none();
            let row = rows
                .entry(key)
                .or_insert((0.0, "identical".into(), true, 0));
            row.3 += 1;
            if !ok
                || r.max_ulps() > row.0
                || (row.1 == "identical" && r.explanation() != "identical")
            {
                row.0 = row.0.max(r.max_ulps());
                if row.2 {
                    row.1 = r.explanation();
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

    if let Err(e) = journal(&runs, &missing, true) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    if pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
