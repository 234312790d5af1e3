//! `cargo run --release -p phobos-fuzz -- --seed S --count N [--save DIR]
//! [--ptxas-every K]`: generate N programs from seed S, run each through
//! the compiler + simulator and the reference evaluator, print each
//! minimized finding, save it under DIR (default `tests/fuzz-cases`), and end
//! with `N programs, M mismatches` (exit status 1 when M > 0). With
//! `PHOBOS_PTXAS` set, every K-th program (default 10) is also assembled for
//! every target. `--no-cta-in-branches` and `--no-written-loads` switch
//! those generator features off; `--tiles-in-branches` switches on tile
//! statements in branches (off by default: a known lowering bug, see
//! `gen::Features`).

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |flag: &str| -> Option<&String> {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let num = |flag: &str, default: u64| get(flag).and_then(|v| v.parse().ok()).unwrap_or(default);
    let cfg = phobos_fuzz::Config {
        seed: num("--seed", 0),
        count: num("--count", 100),
        save: Some(PathBuf::from(
            get("--save").map_or("tests/fuzz-cases", String::as_str),
        )),
        ptxas: std::env::var_os("PHOBOS_PTXAS").map(PathBuf::from),
        ptxas_every: num("--ptxas-every", 10),
        features: phobos_fuzz::gen::Features {
            cta_collectives_in_branches: !args.iter().any(|a| a == "--no-cta-in-branches"),
            tiles_in_branches: args.iter().any(|a| a == "--tiles-in-branches"),
            written_loads: !args.iter().any(|a| a == "--no-written-loads"),
            ..phobos_fuzz::gen::Features::default()
        },
        ..phobos_fuzz::Config::default()
    };
    // Test-only: plant the known miscompile (see phobos_core::backend::set_planted_bug).
    phobos_core::backend::set_planted_bug(args.iter().any(|a| a == "--planted-bug"));
    let start = std::time::Instant::now();
    let r = phobos_fuzz::fuzz(&cfg);
    for f in &r.findings {
        println!(
            "seed {}: {:?}\nminimized: {:?}\n{}",
            f.seed, f.verdict, f.minimized_verdict, f.minimized.src
        );
    }
    eprintln!(
        "{:.1} s; {} undefined (refused by the evaluator), {} mutants checked, {} programs assembled by ptxas",
        start.elapsed().as_secs_f64(),
        r.undefined,
        r.mutants,
        r.ptxas_runs
    );
    for (why, n) in &r.undefined_reasons {
        eprintln!("  undefined {n}: {why}");
    }
    println!("{} programs, {} mismatches", r.programs, r.findings.len());
    if !r.findings.is_empty() {
        std::process::exit(1);
    }
}
