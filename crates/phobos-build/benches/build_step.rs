//! The build step's cost: `compile_dir` on the example's kernels for the
//! default architectures (all seven), from scratch (every cubin assembled by ptxas) and
//! as a no-op rebuild (nothing changed: PTX compiled again, every cubin
//! from the cache, no file rewritten).
//!
//! `cargo bench -p phobos-build --bench build_step` (set `PHOBOS_PTXAS`, or
//! have ptxas on PATH, to include assembly; without it PTX only is timed).

use phobos_build::Builder;
use std::path::Path;
use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:>9.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/matvec");
    let builder = |out: &Path| {
        Builder::new("kernels")
            .manifest_dir(&kernels)
            .out_dir(out)
            .cargo_directives(false)
            .arches(&phobos_build::DEFAULT_ARCHES)
    };

    let probe = tempfile::tempdir().expect("a temporary directory");
    let first = match builder(probe.path()).build() {
        Ok(out) => out,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let ptxas = first
        .ptxas
        .as_ref()
        .map_or("none (PTX only)".to_string(), |p| {
            format!("{} ({})", p.path.display(), p.version)
        });
    println!(
        "kernels: {} ({}), arches: {:?}",
        first.kernels.len(),
        first.kernels.join(", "),
        first.arches
    );
    println!("ptxas: {ptxas}");

    let mut cold = Vec::new();
    let mut assembled = 0;
    for _ in 0..5 {
        let out = tempfile::tempdir().expect("a temporary directory");
        let start = Instant::now();
        let built = builder(out.path()).build().expect("the build succeeds");
        cold.push(start.elapsed());
        assembled = built.cubins_assembled;
    }

    let warm_dir = tempfile::tempdir().expect("a temporary directory");
    builder(warm_dir.path())
        .build()
        .expect("the build succeeds");
    let mut noop = Vec::new();
    let mut cached = 0;
    for _ in 0..20 {
        let start = Instant::now();
        let built = builder(warm_dir.path())
            .build()
            .expect("the build succeeds");
        noop.push(start.elapsed());
        cached = built.cubins_cached;
    }

    let mut ptx_only = Vec::new();
    for _ in 0..20 {
        let out = tempfile::tempdir().expect("a temporary directory");
        let start = Instant::now();
        builder(out.path())
            .ptx_only(true)
            .build()
            .expect("the build succeeds");
        ptx_only.push(start.elapsed());
    }

    println!();
    println!("{:<44} {:>12}", "step (median)", "time");
    println!(
        "{:<44} {}",
        format!("from scratch ({assembled} cubins assembled)"),
        ms(median(cold))
    );
    println!(
        "{:<44} {}",
        format!("no-op rebuild ({cached} cubins from cache)"),
        ms(median(noop))
    );
    println!(
        "{:<44} {}",
        "PTX only, 7 arches (no ptxas)",
        ms(median(ptx_only))
    );
}
