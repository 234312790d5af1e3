//! Runs the matvec kernels of the "Collectives and shuffles" page through
//! Phobos — on the GPU when one works, else on the CPU simulator
//! (`PHOBOS_BACKEND=sim|cuda` forces one) — checks each result against a
//! CPU reference computed in f64, and prints a table. Exits with status 1
//! when a kernel fails to launch or disagrees with its reference.

mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

use phobos_runtime::{cdiv, BackendKind, Device, Tensor};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One row of the table.
struct Row {
    kernel: &'static str,
    shape: String,
    time: Duration,
    max_error: f64,
    tolerance: f64,
}

type Outcome = Result<Row, String>;

/// Deterministic inputs in [-1, 1) (a 64-bit LCG; no dependency needed).
fn inputs(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn matvec_reference(w: &[f32], x: &[f32], n: usize, k: usize) -> Vec<f64> {
    (0..n)
        .map(|r| {
            (0..k)
                .map(|c| f64::from(w[r * k + c]) * f64::from(x[c]))
                .sum()
        })
        .collect()
}

fn max_error(got: &[f32], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(&g, &w)| (f64::from(g) - w).abs())
        .fold(0.0, f64::max)
}

/// Times `launch` from the call to the device being idle again.
fn timed(
    dev: &Device,
    launch: impl FnOnce() -> Result<(), phobos_runtime::LaunchError>,
) -> Result<Duration, String> {
    let start = Instant::now();
    launch().map_err(|e| e.to_string())?;
    dev.synchronize().map_err(|e| e.to_string())?;
    Ok(start.elapsed())
}

/// The signature the generated bindings give both f32 matvecs.
type F32Matvec = fn(
    &Device,
    u32,
    &Tensor<f32>,
    &Tensor<f32>,
    &mut Tensor<f32>,
) -> Result<(), phobos_runtime::LaunchError>;

/// Runs f32 matvec `kernel` (named `name`) on `n` x `k` inputs from
/// `seeds`, over CTAs of 4 warps, one row per warp (128 threads).
fn f32_matvec(
    dev: &Device,
    (name, kernel): (&'static str, F32Matvec),
    (n, k): (usize, usize),
    seeds: (u64, u64),
) -> Outcome {
    let (w, x) = (inputs(n * k, seeds.0), inputs(k, seeds.1));
    let wt = dev.upload(&w, &[n, k]).map_err(|e| e.to_string())?;
    let xt = dev.upload(&x, &[1, k]).map_err(|e| e.to_string())?;
    let mut yt: Tensor<f32> = dev.zeros(&[1, n]).map_err(|e| e.to_string())?;
    let time = timed(dev, || kernel(dev, cdiv(n, 4), &wt, &xt, &mut yt))?;
    let y = yt.to_vec().map_err(|e| e.to_string())?;
    Ok(Row {
        kernel: name,
        shape: format!("N={n} K={k}"),
        time,
        max_error: max_error(&y, &matvec_reference(&w, &x, n, k)),
        tolerance: 1e-5 * k as f64,
    })
}

fn lanes_matvec(dev: &Device, n: usize, k: usize) -> Outcome {
    f32_matvec(dev, ("lanes_matvec", kernels::lanes_matvec), (n, k), (1, 2))
}

fn staged_matvec(dev: &Device, n: usize) -> Outcome {
    let k = 256; // the kernel's only @autotune value
    f32_matvec(
        dev,
        ("staged_matvec", kernels::staged_matvec),
        (n, k),
        (3, 4),
    )
}

fn i8_matvec(dev: &Device, n: usize, k: usize) -> Outcome {
    let to_i8 = |v: Vec<f32>| -> Vec<i8> { v.iter().map(|f| (f * 127.0) as i8).collect() };
    let (a, w) = (to_i8(inputs(k, 5)), to_i8(inputs(n * k, 6)));
    let at = dev.upload(&a, &[1, k]).map_err(|e| e.to_string())?;
    let wt = dev.upload(&w, &[n, k]).map_err(|e| e.to_string())?;
    let mut ct: Tensor<f32> = dev.zeros(&[1, n]).map_err(|e| e.to_string())?;
    // 256 threads = 8 warps per CTA, one column per warp.
    let time = timed(dev, || {
        kernels::i8_matvec(dev, cdiv(n, 8), &at, &wt, &mut ct)
    })?;
    let c = ct.to_vec().map_err(|e| e.to_string())?;
    let reference: Vec<f64> = (0..n)
        .map(|col| {
            (0..k)
                .map(|i| f64::from(a[i]) * f64::from(w[col * k + i]))
                .sum()
        })
        .collect();
    Ok(Row {
        kernel: "i8_matvec",
        shape: format!("N={n} K={k}"),
        time,
        max_error: max_error(&c, &reference),
        // Integer products summed in i32 per lane, then in f32: exact
        // while every partial sum stays below 2^24.
        tolerance: 0.0,
    })
}

fn lane_max(dev: &Device) -> Outcome {
    let a = inputs(128, 7);
    let at = dev.upload(&a, &[1, 128]).map_err(|e| e.to_string())?;
    let mut ot: Tensor<f32> = dev.zeros(&[1, 1]).map_err(|e| e.to_string())?;
    let time = timed(dev, || kernels::lane_max(dev, 1, &at, &mut ot))?;
    let o = ot.to_vec().map_err(|e| e.to_string())?;
    // Thread 0 writes the maximum of warp 0's 32 values.
    let want = a[..32].iter().copied().fold(f32::MIN, f32::max);
    Ok(Row {
        kernel: "lane_max",
        shape: "128".to_string(),
        time,
        max_error: max_error(&o, &[f64::from(want)]),
        tolerance: 0.0,
    })
}

fn main() -> ExitCode {
    let dev = match Device::auto() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The simulator runs every thread on the CPU: smaller problems there.
    let (n, k) = match dev.kind() {
        BackendKind::Cuda => (4096, 4096),
        BackendKind::Sim => (300, 512),
    };
    println!("device: {}", dev.name());
    println!(
        "{:<8} {:<14} {:<14} {:>11} {:>11}  result",
        "backend", "kernel", "shape", "time", "max error"
    );
    let runs: [(&str, Outcome); 4] = [
        ("lanes_matvec", lanes_matvec(&dev, n, k)),
        ("i8_matvec", i8_matvec(&dev, n, k)),
        ("staged_matvec", staged_matvec(&dev, n)),
        ("lane_max", lane_max(&dev)),
    ];
    let mut failed = 0;
    for (name, outcome) in runs {
        match outcome {
            Ok(row) => {
                let ok = row.max_error <= row.tolerance;
                failed += usize::from(!ok);
                println!(
                    "{:<8} {:<14} {:<14} {:>8.3} ms {:>11.3e}  {}",
                    dev.kind(),
                    row.kernel,
                    row.shape,
                    row.time.as_secs_f64() * 1e3,
                    row.max_error,
                    if ok {
                        "ok".to_string()
                    } else {
                        format!("MISMATCH (tolerance {:.1e})", row.tolerance)
                    }
                );
            }
            Err(e) => {
                failed += 1;
                println!("{:<8} {name:<14} failed: {e}", dev.kind());
            }
        }
    }
    if failed > 0 {
        eprintln!("error: {failed} kernel(s) failed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
