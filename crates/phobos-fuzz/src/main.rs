//! `cargo run --release -p phobos-fuzz -- --seed S --count N [--save DIR]
//! [--ptxas-every K]`: generate N programs from seed S, run each through
//! the compiler + simulator and the reference evaluator, print each
//! minimized finding, save it under DIR (default `tests/fuzz-cases`), and end
//! with `N programs, M mismatches` (exit status 1 when M > 0). With
//! `PHOBOS_PTXAS` set, every K-th program (default 10) is also assembled for
//! every target. `--no-cta-in-branches`, `--no-tiles-in-branches`,
//! `--no-written-loads`, `--no-awkward-names`, `--no-cta-in-conditions`
//! `--no-scratch`, `--no-edges`, `--no-const-divisors` and `--no-aligned-tiles` switch those generator features off (`gen::Features`;
//! with `--no-awkward-names` and `--no-cta-in-conditions`, a seed gives the
//! program it gave before those two existed). An unknown
//! flag or a malformed number is an error (exit status 2).

use std::path::PathBuf;

const USAGE: &str = "usage: phobos-fuzz [--seed S] [--count N] [--save DIR] [--ptxas-every K]
                   [--no-cta-in-branches] [--no-tiles-in-branches] [--no-written-loads]
                   [--no-awkward-names] [--no-cta-in-conditions] [--no-scratch] [--no-edges]
                   [--no-const-divisors] [--no-aligned-tiles]
                   [--planted-bug]";

/// The command line, strictly: an unknown flag or a value that is not a
/// number is an error, never silently the default.
struct Args {
    seed: u64,
    count: u64,
    save: PathBuf,
    ptxas_every: u64,
    no_cta_in_branches: bool,
    no_tiles_in_branches: bool,
    no_written_loads: bool,
    no_awkward_names: bool,
    no_cta_in_conditions: bool,
    no_scratch: bool,
    no_edges: bool,
    no_const_divisors: bool,
    no_aligned_tiles: bool,
    planted_bug: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        seed: 0,
        count: 100,
        save: PathBuf::from("tests/fuzz-cases"),
        ptxas_every: 10,
        no_cta_in_branches: false,
        no_tiles_in_branches: false,
        no_written_loads: false,
        no_awkward_names: false,
        no_cta_in_conditions: false,
        no_scratch: false,
        no_edges: false,
        no_const_divisors: false,
        no_aligned_tiles: false,
        planted_bug: false,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value"))
                .cloned()
        };
        let number = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} takes a non-negative integer, not `{v}`"))
        };
        match flag.as_str() {
            "--seed" => a.seed = number(value()?)?,
            "--count" => a.count = number(value()?)?,
            "--ptxas-every" => a.ptxas_every = number(value()?)?,
            "--save" => a.save = PathBuf::from(value()?),
            "--no-cta-in-branches" => a.no_cta_in_branches = true,
            "--no-tiles-in-branches" => a.no_tiles_in_branches = true,
            // The default since the predicated-if fence fix; still accepted.
            "--tiles-in-branches" => a.no_tiles_in_branches = false,
            "--no-written-loads" => a.no_written_loads = true,
            "--no-awkward-names" => a.no_awkward_names = true,
            "--no-cta-in-conditions" => a.no_cta_in_conditions = true,
            "--no-scratch" => a.no_scratch = true,
            "--no-edges" => a.no_edges = true,
            "--no-const-divisors" => a.no_const_divisors = true,
            "--no-aligned-tiles" => a.no_aligned_tiles = true,
            "--planted-bug" => a.planted_bug = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(a)
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&raw) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("phobos-fuzz: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let cfg = phobos_fuzz::Config {
        seed: args.seed,
        count: args.count,
        save: Some(args.save),
        ptxas: std::env::var_os("PHOBOS_PTXAS").map(PathBuf::from),
        ptxas_every: args.ptxas_every,
        features: phobos_fuzz::gen::Features {
            cta_collectives_in_branches: !args.no_cta_in_branches,
            tiles_in_branches: !args.no_tiles_in_branches,
            written_loads: !args.no_written_loads,
            awkward_names: !args.no_awkward_names,
            cta_in_conditions: !args.no_cta_in_conditions,
            scratch: !args.no_scratch,
            edges: !args.no_edges,
            const_divisors: !args.no_const_divisors,
            aligned_tiles: !args.no_aligned_tiles,
            ..phobos_fuzz::gen::Features::default()
        },
        ..phobos_fuzz::Config::default()
    };
    // Test-only: plant the known miscompile (see phobos_core::backend::set_planted_bug).
    phobos_core::backend::set_planted_bug(args.planted_bug);
    let start = std::time::Instant::now();
    let r = phobos_fuzz::fuzz(&cfg);
    for f in &r.findings {
        println!(
            "seed {}: {:?}\nminimized: {:?}\n{}",
            f.seed, f.verdict, f.minimized_verdict, f.minimized.src
        );
    }
    eprintln!(
        "{:.1} s; {} undefined (refused by the evaluator), {} out-of-bounds indices reported by the simulator, {} mutants checked, {} programs assembled by ptxas",
        start.elapsed().as_secs_f64(),
        r.undefined,
        r.caught,
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
