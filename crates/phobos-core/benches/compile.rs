//! `cargo bench -p phobos-core --bench compile`: compile the whole
//! conformance corpus (`tests/in/*.pho`) to PTX for sm_75 and print a table
//! of the times per stage. The goal is under 20 ms for the whole corpus on
//! a 2-core machine (ptxas excluded). Plain `std::time`, no framework.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

const RUNS: usize = 30;

/// The best and the median of `RUNS` timings of `f`.
fn time(mut f: impl FnMut()) -> (Duration, Duration) {
    let mut t: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    t.sort();
    (t[0], t[RUNS / 2])
}

fn main() {
    let files = common::corpus();
    let opts = phobos_core::CompileOptions::for_arch(75);
    let mut kernels = 0;
    let mut ptx_bytes = 0;
    for (name, src) in &files {
        let (ks, diags) = phobos_core::compile(src, name, &opts);
        assert!(
            diags.iter().all(|d| !d.is_error()),
            "{name} does not compile"
        );
        kernels += ks.len();
        ptx_bytes += ks.iter().map(|k| k.ptx.len()).sum::<usize>();
    }
    let (check_best, check_median) = time(|| {
        for (_, src) in &files {
            std::hint::black_box(phobos_core::check_source(src));
        }
    });
    let (all_best, all_median) = time(|| {
        for (name, src) in &files {
            std::hint::black_box(phobos_core::compile(src, name, &opts));
        }
    });
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "compile the corpus: {} files, {kernels} kernels, {ptx_bytes} bytes of PTX, {RUNS} runs",
        files.len()
    );
    println!("{:<34} {:>10} {:>10}", "stage", "best ms", "median ms");
    println!(
        "{:<34} {:>10.2} {:>10.2}",
        "parse + check",
        ms(check_best),
        ms(check_median)
    );
    println!(
        "{:<34} {:>10.2} {:>10.2}",
        "backend (lower .. PTX + metadata)",
        ms(all_best.saturating_sub(check_best)),
        ms(all_median.saturating_sub(check_median))
    );
    println!(
        "{:<34} {:>10.2} {:>10.2}",
        "total, source to PTX",
        ms(all_best),
        ms(all_median)
    );
    println!(
        "goal: under 20 ms in total — {}",
        if ms(all_median) < 20.0 {
            "met"
        } else {
            "NOT met"
        }
    );
}
