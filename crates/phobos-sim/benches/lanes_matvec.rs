//! `cargo bench -p phobos-sim`: simulated thread-instructions per second on
//! lanes_matvec (N = K = 1024, 128 threads per CTA, v4 loads, a 5-step shfl
//! butterfly), with and without checks, on one host thread and on all of
//! them: the hand-written PTX and a snapshot of the backend's PTX for the
//! seed kernel. Prints a table. Before each configuration the output is
//! poisoned with NaN, and after its runs it is verified against a float64
//! reference, so every configuration's result is checked.

use phobos_sim::{Device, KernelArg, Launch, LaunchOptions, Module};
use std::time::Instant;

const N: usize = 1024;
const K: usize = 1024;

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (label, ptx) in [
        (
            "hand-written",
            include_str!("../tests/ptx/lanes_matvec.ptx"),
        ),
        (
            "backend",
            include_str!("../tests/ptx/lanes_matvec_backend.ptx"),
        ),
    ] {
        bench(label, ptx)?;
    }
    Ok(())
}

fn bench(label: &str, ptx: &str) -> Result<(), Box<dyn std::error::Error>> {
    let module = Module::parse(ptx)?;
    let w: Vec<f32> = (0..N * K)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0)
        .collect();
    let x: Vec<f32> = (0..K).map(|i| ((i * 5 % 11) as f32 - 5.0) / 4.0).collect();
    let mut dev = Device::new();
    let wb = dev.alloc_from("W", &bytes(&w))?;
    let xb = dev.alloc_from("x", &bytes(&x))?;
    let yb = dev.alloc("y", N * 4)?;
    let args = [
        KernelArg::Buffer(wb),
        KernelArg::Buffer(xb),
        KernelArg::Buffer(yb),
        KernelArg::I32(N as i32),
        KernelArg::I32(K as i32),
    ];
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "lanes_matvec ({label} PTX), N = K = {N}, 128 threads per CTA, {} CTAs",
        N / 4
    );
    println!(
        "{:>8} {:>7} {:>14} {:>10} {:>12} {:>16} {:>18}",
        "checks",
        "threads",
        "thread-instrs",
        "seconds",
        "M instr/s",
        "M instr/s/core",
        "M instr/CPU-second"
    );
    for checks in [true, false] {
        for threads in [1, cores] {
            let opts = LaunchOptions {
                checks,
                threads,
                ..LaunchOptions::default()
            };
            // Poison the output so a configuration that writes nothing (or
            // only part of it) cannot pass on an earlier one's result.
            dev.write(yb, 0, &bytes(&vec![f32::NAN; N]))?;
            // One warm-up run, then the best of ten (the host may be busy).
            let mut best = f64::MAX;
            let mut instrs = 0;
            let cpu_start = cpu_seconds();
            for _ in 0..11 {
                let t = Instant::now();
                let stats = dev.launch(
                    Launch::new(&module, "lanes_matvec", [(N / 4) as u32, 1, 1], [128, 1, 1]),
                    &args,
                    &opts,
                    None,
                )?;
                best = best.min(t.elapsed().as_secs_f64());
                instrs = stats.thread_instructions;
            }
            let rate = instrs as f64 / best / 1e6;
            // CPU time is immune to other processes taking the cores.
            let cpu = match (cpu_start, cpu_seconds()) {
                (Some(a), Some(b)) if b > a => {
                    format!("{:.1}", 11.0 * instrs as f64 / (b - a) / 1e6)
                }
                _ => "n/a".to_string(),
            };
            println!(
                "{:>8} {:>7} {:>14} {:>10.4} {:>12.1} {:>16.1} {:>18}",
                if checks { "on" } else { "off" },
                threads,
                instrs,
                best,
                rate,
                rate / threads as f64,
                cpu
            );
            verify(&dev.to_vec(yb)?, &w, &x)
                .map_err(|e| format!("checks {checks}, {threads} threads: {e}"))?;
        }
    }
    println!("every configuration's result verified against a float64 reference\n");
    Ok(())
}

/// `y` (little-endian f32 bytes) against `W x` computed in float64.
fn verify(y: &[u8], w: &[f32], x: &[f32]) -> Result<(), String> {
    for r in 0..N {
        let want: f64 = (0..K)
            .map(|k| f64::from(w[r * K + k]) * f64::from(x[k]))
            .sum();
        let got = f32::from_le_bytes([y[4 * r], y[4 * r + 1], y[4 * r + 2], y[4 * r + 3]]);
        // A NaN (the poison, never written) is not close to anything.
        let close = (f64::from(got) - want).abs() <= 1e-3 * want.abs().max(1.0);
        if !close {
            return Err(format!("row {r}: got {got}, want {want}"));
        }
    }
    Ok(())
}

/// User plus system CPU time of this process, from `/proc/self/stat`
/// (Linux; clock ticks of 1/100 s). `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesized command name; utime and stime are the
    // 14th and 15th fields of the whole line.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}
