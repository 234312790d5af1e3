//! `phobos-bench`: the GPU bundle's benchmarks. The memory-bound kernels
//! Phobos exists for — the seed page's `lanes_matvec`, `i8_matvec` and
//! `staged_matvec` (from `examples/matvec/kernels`), and this crate's row
//! softmax, layer norm, full reduction and f16 GEMV (`kernels/`) — timed
//! through their generated launch functions, as a user's program runs
//! them (cubins for the GPU's architecture when the build had ptxas, else
//! the PTX JIT-compiled by the driver).
//!
//! ```text
//! phobos-bench [--small] [--runs N] [--out FILE]
//! ```
//!
//! - Sizes: several times a 50–60 MB L2 (a 16384×16384 f32 matvec reads
//!   1 GiB); `--small` uses tiny ones, for the CUDA driver stand-in or the
//!   simulator.
//! - Timing: 3 warm-up calls, then `--runs` samples (at least 20, the
//!   default 30), each a pair of CUDA events on the default stream around
//!   10 calls back to back (no host synchronization between them) over
//!   10; the median, and the spread (fastest and slowest sample). torch
//!   and Triton are timed the same way (python/shapes.py `time_ms`). On
//!   the simulator backend (no driver), wall-clock time.
//! - Each result is checked once against a CPU reference in f64 before
//!   it is timed: a wrong kernel's time means nothing.
//! - The ceiling: a device-to-device copy (`cuMemcpyDtoD`) of the largest
//!   working set, timed the same way in the same run. GB/s counts the
//!   bytes a kernel must move at least (each input read once, each output
//!   written once); `% copy` is that bandwidth over the copy's.
//! - The matrix product (`bf16_gemm`, 4096³ and 8192³ on tensor cores) is
//!   compute-bound: its row gives TFLOP/s (2·M·N·K over the time), which
//!   run.sh's report sets against torch.matmul's (cuBLAS). An f64
//!   reference of a whole 8192³ product would take minutes of CPU, so
//!   eight elements of C in every CTA's tile are checked, over the tiles
//!   at every position of an mma fragment and in every fragment block of
//!   a tile, after a whole-product check of the same kernel at a ragged
//!   520 × 776 × 296 (at small sizes, all of C).
//!
//! Writes the rows as JSON to `--out` (default `bench.json`) and prints a
//! table. The file is rewritten (atomically, through a temporary file)
//! after every row, with `"complete": false` until the last: a benchmark
//! that hangs or crashes the process costs its own row, not the earlier
//! ones (run.sh's report reads whatever is there). The JSON also names
//! the driver library the process loaded (`libcuda`, from
//! `/proc/self/maps`). Exits 1 when a kernel failed to run or missed its
//! reference.

#[path = "../images.rs"]
mod images;

// `lane_max` comes with the example's kernels and is not benchmarked.
#[allow(dead_code)]
mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
    /// The kernels that need sm_89 (the FP8 GEMM), built for sm_89 and
    /// newer only (build.rs).
    mod sm_89 {
        include!(concat!(env!("OUT_DIR"), "/kernels_sm_89.rs"));
    }
    pub use sm_89::*;
}

use cudarc::driver::{result, sys};
use half::{bf16, f16};
use phobos_runtime::float8::F8E4M3;
use phobos_runtime::{cdiv, BackendKind, Device, Tensor};
use serde_json::json;
use std::process::ExitCode;
use std::time::Instant;

type Res<T> = Result<T, String>;

/// One benchmark, run on demand (`--only` picks some).
type BenchFn<'a> = Box<dyn Fn() -> Res<Row> + 'a>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Deterministic inputs in [-1, 1), from a seeded `fastrand` generator
/// (fast enough for 2^28).
fn inputs(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..len).map(|_| rng.f32() * 2.0 - 1.0).collect()
}

/// How the benchmark times work on the device.
enum Clock {
    /// CUDA events on the default stream (the runtime launches there).
    Events {
        start: sys::CUevent,
        end: sys::CUevent,
    },
    /// The simulator backend has no driver: host time after a synchronize.
    Wall,
}

impl Clock {
    fn new(dev: &Device) -> Res<Clock> {
        if dev.kind() != BackendKind::Cuda {
            return Ok(Clock::Wall);
        }
        // The runtime holds the primary context of GPU 0; retaining it
        // here gives this thread the same context for the events.
        result::init().map_err(err)?;
        let cu = result::device::get(0).map_err(err)?;
        let ctx = unsafe { result::primary_ctx::retain(cu) }.map_err(err)?;
        unsafe { result::ctx::set_current(ctx) }.map_err(err)?;
        let flags = sys::CUevent_flags::CU_EVENT_DEFAULT;
        Ok(Clock::Events {
            start: result::event::create(flags).map_err(err)?,
            end: result::event::create(flags).map_err(err)?,
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Clock::Events { .. } => "cuda events",
            Clock::Wall => "wall clock",
        }
    }

    /// Milliseconds of one call of `f`: `BATCH` calls back to back (no
    /// host synchronization between them), from the first launch to the
    /// end of the last, over `BATCH`.
    fn time(&self, dev: &Device, f: &mut dyn FnMut() -> Res<()>) -> Res<f64> {
        match self {
            Clock::Events { start, end } => {
                let null = std::ptr::null_mut();
                unsafe { result::event::record(*start, null) }.map_err(err)?;
                for _ in 0..BATCH {
                    f()?;
                }
                unsafe { result::event::record(*end, null) }.map_err(err)?;
                unsafe { result::event::synchronize(*end) }.map_err(err)?;
                let ms = unsafe { result::event::elapsed(*start, *end) }.map_err(err)?;
                Ok(f64::from(ms) / BATCH as f64)
            }
            Clock::Wall => {
                let t = Instant::now();
                for _ in 0..BATCH {
                    f()?;
                }
                dev.synchronize().map_err(err)?;
                Ok(t.elapsed().as_secs_f64() * 1e3 / BATCH as f64)
            }
        }
    }

    /// `runs` timed samples ([`Clock::time`]) after `WARMUP` calls: the
    /// median, and the spread as the fastest and slowest sample. torch
    /// and Triton are timed the same way (python/shapes.py, `time_ms`).
    fn median(&self, dev: &Device, runs: usize, f: &mut dyn FnMut() -> Res<()>) -> Res<Timing> {
        for _ in 0..WARMUP {
            f()?;
        }
        dev.synchronize().map_err(err)?;
        let mut times = (0..runs)
            .map(|_| self.time(dev, f))
            .collect::<Res<Vec<f64>>>()?;
        times.sort_by(f64::total_cmp);
        Ok(Timing {
            ms: times[times.len() / 2],
            min: times[0],
            max: times[times.len() - 1],
        })
    }
}

/// Calls before timing, and calls per timed sample (python/shapes.py has
/// the same).
const WARMUP: usize = 3;
const BATCH: usize = 10;

/// One row's timing: the median per call and the spread of the samples.
#[derive(Clone, Copy)]
struct Timing {
    ms: f64,
    min: f64,
    max: f64,
}

/// One benchmark's outcome.
struct Row {
    name: &'static str,
    shape: String,
    bytes: f64,
    /// Floating-point operations of one launch, for compute-bound rows
    /// (0 for the memory-bound ones).
    flops: f64,
    time: Timing,
    max_error: f64,
    tolerance: f64,
}

struct Bench<'a> {
    dev: &'a Device,
    clock: Clock,
    runs: usize,
}

/// Products of at most this many elements are checked whole.
const GEMM_CHECKED_WHOLE: usize = 1 << 19;

/// The ragged size at which a big product's kernel is first checked whole:
/// no dimension a multiple of the 128 tile or of K's 32 (K and N stay
/// multiples of 8, as the kernel's `@aligned` asks).
const RAGGED_GEMM: (usize, usize, usize) = (520, 776, 296);

/// The FP8 GEMM's ragged size: its `@aligned(K = 16)` (16-byte operand
/// rows for TMA and wgmma) rules out 296, so K is 304 (not a multiple of
/// K's step of 32).
const RAGGED_F8_GEMM: (usize, usize, usize) = (520, 776, 304);

/// The GEMM's tile of C per CTA (kernels/bf16_gemm.pho) and an mma
/// fragment's (m16n8).
const TILE: usize = 128;
const FRAG: (usize, usize) = (16, 8);

/// The elements of an `m` × `n` product to check: all of them when there
/// are at most `at_most`, else `per_cta` in every CTA's 128 × 128 tile.
/// Over the tiles the samples fall in every one of a tile's 8 × 16
/// fragment blocks (16 rows × 8 columns each) and at every position in a
/// fragment (row mod 16, column mod 8: 128 of them), so a broken store of any part of a
/// fragment, or of any CTA, misses its reference (issue 27: 256 samples
/// once fell only on columns 0–255 and rows ≡ 0 mod 16).
fn gemm_samples(m: usize, n: usize, at_most: usize, per_cta: usize) -> Vec<(usize, usize)> {
    if m * n <= at_most {
        return (0..m * n).map(|e| (e / n, e % n)).collect();
    }
    let (tiles_m, tiles_n) = (m.div_ceil(TILE), n.div_ceil(TILE));
    let mut out = Vec::new();
    for t in 0..tiles_m * tiles_n {
        let (tm, tn) = (t / tiles_n, t % tiles_n);
        for j in 0..per_cta {
            let pos = (t * per_cta + j) % (FRAG.0 * FRAG.1);
            let (fr, fc) = (pos / FRAG.1, pos % FRAG.1);
            // Which of the tile's 8 × 16 fragment blocks: 7 and 9 are odd,
            // so over the tiles every block comes up.
            let q = (t * 7 + j * 9) % ((TILE / FRAG.0) * (TILE / FRAG.1));
            let (rb, cb) = (q / (TILE / FRAG.1), q % (TILE / FRAG.1));
            // A ragged edge tile: wrapped into its valid part, so that it
            // is sampled too.
            let (rows, cols) = ((m - tm * TILE).min(TILE), (n - tn * TILE).min(TILE));
            let r = tm * TILE + (rb * FRAG.0 + fr) % rows;
            let c = tn * TILE + (cb * FRAG.1 + fc) % cols;
            out.push((r, c));
        }
    }
    out
}

/// The largest error of an `m` × `n` × `k` product `c` on its
/// [`gemm_samples`] (8 a CTA; all of C when small) against f64 sums of
/// `product(i, p, j)`, the f64 value of A[i, p] · B[p, j].
fn gemm_error(
    c: &[f32],
    (m, n, k): (usize, usize, usize),
    product: impl Fn(usize, usize, usize) -> f64,
) -> f64 {
    let (got, want): (Vec<f32>, Vec<f64>) = gemm_samples(m, n, GEMM_CHECKED_WHOLE, 8)
        .into_iter()
        .map(|(i, j)| (c[i * n + j], (0..k).map(|p| product(i, p, j)).sum::<f64>()))
        .unzip();
    max_error(&got, &want)
}

fn max_error(got: &[f32], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(&g, &w)| (f64::from(g) - w).abs())
        .fold(0.0, f64::max)
}

impl Bench<'_> {
    fn up<T: phobos_runtime::Elem>(&self, v: &[T], shape: &[usize]) -> Res<Tensor<T>> {
        self.dev.upload(v, shape).map_err(err)
    }

    fn zeros(&self, shape: &[usize]) -> Res<Tensor<f32>> {
        self.dev.zeros(shape).map_err(err)
    }

    fn matvec_f32(&self, name: &'static str, n: usize, k: usize) -> Res<Row> {
        let (w, x) = (inputs(n * k, 1), inputs(k, 2));
        let (wt, xt) = (self.up(&w, &[n, k])?, self.up(&x, &[1, k])?);
        let mut yt = self.zeros(&[1, n])?;
        let dev = self.dev;
        let mut launch = || -> Res<()> {
            match name {
                "staged_matvec" => kernels::staged_matvec(dev, cdiv(n, 4), &wt, &xt, &mut yt),
                _ => kernels::lanes_matvec(dev, cdiv(n, 4), &wt, &xt, &mut yt),
            }
            .map_err(err)
        };
        launch()?;
        let y = yt.to_vec().map_err(err)?;
        let want: Vec<f64> = (0..n)
            .map(|r| {
                (0..k)
                    .map(|c| f64::from(w[r * k + c]) * f64::from(x[c]))
                    .sum()
            })
            .collect();
        let max_error = max_error(&y, &want);
        let mut launch = || -> Res<()> {
            match name {
                "staged_matvec" => kernels::staged_matvec(dev, cdiv(n, 4), &wt, &xt, &mut yt),
                _ => kernels::lanes_matvec(dev, cdiv(n, 4), &wt, &xt, &mut yt),
            }
            .map_err(err)
        };
        Ok(Row {
            name,
            shape: format!("{n}x{k} f32"),
            bytes: ((n * k + k + n) * 4) as f64,
            flops: 0.0,
            time: self.clock.median(dev, self.runs, &mut launch)?,
            max_error,
            tolerance: 1e-5 * k as f64,
        })
    }

    fn i8_matvec(&self, n: usize, k: usize) -> Res<Row> {
        let to_i8 = |v: Vec<f32>| -> Vec<i8> { v.iter().map(|f| (f * 127.0) as i8).collect() };
        let (a, w) = (to_i8(inputs(k, 5)), to_i8(inputs(n * k, 6)));
        let (at, wt) = (self.up(&a, &[1, k])?, self.up(&w, &[n, k])?);
        let mut ct = self.zeros(&[1, n])?;
        let dev = self.dev;
        kernels::i8_matvec(dev, cdiv(n, 8), &at, &wt, &mut ct).map_err(err)?;
        let c = ct.to_vec().map_err(err)?;
        let want: Vec<f64> = (0..n)
            .map(|col| {
                (0..k)
                    .map(|i| f64::from(a[i]) * f64::from(w[col * k + i]))
                    .sum()
            })
            .collect();
        let max_error = max_error(&c, &want);
        let mut launch = || kernels::i8_matvec(dev, cdiv(n, 8), &at, &wt, &mut ct).map_err(err);
        Ok(Row {
            name: "i8_matvec",
            shape: format!("{n}x{k} i8"),
            bytes: (n * k + k + n * 4) as f64,
            flops: 0.0,
            time: self.clock.median(dev, self.runs, &mut launch)?,
            max_error,
            // Exact while every f32 partial sum stays below 2^24 (random
            // signs keep them far below); the bound allows an f32 rounding
            // of the largest possible sum at each of a lane's K/512 steps
            // and the 5 shuffle additions.
            tolerance: (k / 512 + 5) as f64 * (k * 127 * 127) as f64 * 2f64.powi(-24),
        })
    }

    fn f16_gemv(&self, n: usize, k: usize) -> Res<Row> {
        let w: Vec<f16> = inputs(n * k, 8).into_iter().map(f16::from_f32).collect();
        let x: Vec<f16> = inputs(k, 9).into_iter().map(f16::from_f32).collect();
        let (wt, xt) = (self.up(&w, &[n, k])?, self.up(&x, &[1, k])?);
        let mut yt = self.zeros(&[1, n])?;
        let dev = self.dev;
        kernels::f16_gemv(dev, &wt, &xt, &mut yt).map_err(err)?;
        let y = yt.to_vec().map_err(err)?;
        let want: Vec<f64> = (0..n)
            .map(|r| {
                (0..k)
                    .map(|c| f64::from(w[r * k + c].to_f32()) * f64::from(x[c].to_f32()))
                    .sum()
            })
            .collect();
        Ok(Row {
            name: "f16_gemv",
            shape: format!("{n}x{k} f16"),
            bytes: (n * k * 2 + k * 2 + n * 4) as f64,
            flops: 0.0,
            time: self.clock.median(dev, self.runs, &mut || {
                kernels::f16_gemv(dev, &wt, &xt, &mut yt).map_err(err)
            })?,
            max_error: max_error(&y, &want),
            tolerance: 1e-5 * k as f64,
        })
    }

    fn row_softmax(&self, n: usize, m: usize) -> Res<Row> {
        let x = inputs(n * m, 10);
        let xt = self.up(&x, &[n, m])?;
        let mut yt = self.zeros(&[n, m])?;
        let dev = self.dev;
        kernels::row_softmax(dev, &xt, &mut yt).map_err(err)?;
        let y = yt.to_vec().map_err(err)?;
        let mut want = vec![0.0; n * m];
        for r in 0..n {
            let row = &x[r * m..(r + 1) * m];
            let mx = row.iter().copied().fold(f32::MIN, f32::max);
            let s: f64 = row.iter().map(|&v| f64::from(v - mx).exp()).sum();
            for c in 0..m {
                want[r * m + c] = f64::from(row[c] - mx).exp() / s;
            }
        }
        Ok(Row {
            name: "row_softmax",
            shape: format!("{n}x{m} f32"),
            bytes: (2 * n * m * 4) as f64,
            flops: 0.0,
            time: self.clock.median(dev, self.runs, &mut || {
                kernels::row_softmax(dev, &xt, &mut yt).map_err(err)
            })?,
            max_error: max_error(&y, &want),
            tolerance: 1e-5,
        })
    }

    fn layer_norm(&self, n: usize, m: usize) -> Res<Row> {
        let (x, g, b) = (inputs(n * m, 11), inputs(m, 12), inputs(m, 13));
        let (xt, gt, bt) = (
            self.up(&x, &[n, m])?,
            self.up(&g, &[1, m])?,
            self.up(&b, &[1, m])?,
        );
        let mut yt = self.zeros(&[n, m])?;
        let dev = self.dev;
        kernels::layer_norm(dev, &xt, &gt, &bt, &mut yt).map_err(err)?;
        let y = yt.to_vec().map_err(err)?;
        let mut want = vec![0.0; n * m];
        for r in 0..n {
            let row = &x[r * m..(r + 1) * m];
            let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / m as f64;
            let var = row
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / m as f64;
            let inv = 1.0 / (var + 1e-5).sqrt();
            for c in 0..m {
                want[r * m + c] =
                    (f64::from(row[c]) - mean) * inv * f64::from(g[c]) + f64::from(b[c]);
            }
        }
        Ok(Row {
            name: "layer_norm",
            shape: format!("{n}x{m} f32"),
            bytes: (2 * n * m * 4 + 2 * m * 4) as f64,
            flops: 0.0,
            time: self.clock.median(dev, self.runs, &mut || {
                kernels::layer_norm(dev, &xt, &gt, &bt, &mut yt).map_err(err)
            })?,
            max_error: max_error(&y, &want),
            // rsqrt.approx and the one-pass variance, on values of size ~2.
            tolerance: 1e-4,
        })
    }

    fn sum_all(&self, n: usize, partials: usize) -> Res<Row> {
        let x = inputs(n, 14);
        let xt = self.up(&x, &[n])?;
        let mut st = self.zeros(&[partials])?;
        let mut ot = self.zeros(&[1])?;
        let dev = self.dev;
        kernels::sum_partials(dev, &xt, &mut st).map_err(err)?;
        kernels::sum_final(dev, &st, &mut ot).map_err(err)?;
        let got = ot.to_vec().map_err(err)?;
        let mut launch = || -> Res<()> {
            kernels::sum_partials(dev, &xt, &mut st).map_err(err)?;
            kernels::sum_final(dev, &st, &mut ot).map_err(err)
        };
        let want: f64 = x.iter().map(|&v| f64::from(v)).sum();
        Ok(Row {
            name: "sum_all",
            shape: format!("{n} f32"),
            bytes: (n * 4) as f64,
            flops: 0.0,
            time: self.clock.median(dev, self.runs, &mut launch)?,
            max_error: max_error(&got, &[want]),
            // f32 partial sums of ~n/threads terms each.
            tolerance: 1e-6 * n as f64,
        })
    }

    /// A big product's kernel is first checked whole at `ragged` (no
    /// dimension a multiple of the tile), since at its own size it is only
    /// sampled; `gemm` runs the kernel at a size and checks it.
    fn ragged_first(
        &self,
        (m, n, _): (usize, usize, usize),
        ragged: (usize, usize, usize),
        gemm: impl Fn((usize, usize, usize)) -> Res<Row>,
    ) -> Res<()> {
        let (rm, rn, rk) = ragged;
        if m * n > GEMM_CHECKED_WHOLE && rm * rn <= GEMM_CHECKED_WHOLE {
            let row = gemm(ragged)?;
            if row.max_error > row.tolerance {
                return Err(format!(
                    "the whole-product check at {rm}x{rn}x{rk} missed: max error {:.2e} > {:.2e}",
                    row.max_error, row.tolerance
                ));
            }
        }
        Ok(())
    }

    /// `C = A · B` in bf16 on tensor cores, `a` × `k` by `k` × `b`; the
    /// reference is f64 over the bf16 values, on `checked` elements of C.
    fn bf16_gemm(&self, name: &'static str, (m, n, k): (usize, usize, usize)) -> Res<Row> {
        self.ragged_first((m, n, k), RAGGED_GEMM, |s| self.bf16_gemm(name, s))?;
        let a: Vec<bf16> = inputs(m * k, 16).into_iter().map(bf16::from_f32).collect();
        let b: Vec<bf16> = inputs(k * n, 17).into_iter().map(bf16::from_f32).collect();
        let (at, bt) = (self.up(&a, &[m, k])?, self.up(&b, &[k, n])?);
        let mut ct = self.zeros(&[m, n])?;
        let dev = self.dev;
        kernels::bf16_gemm(dev, &at, &bt, &mut ct).map_err(err)?;
        let c = ct.to_vec().map_err(err)?;
        let max_error = gemm_error(&c, (m, n, k), |i, p, j| {
            f64::from(a[i * k + p].to_f32()) * f64::from(b[p * n + j].to_f32())
        });
        Ok(Row {
            name,
            shape: format!("{m}x{n}x{k} bf16"),
            bytes: ((m * k + k * n) * 2 + m * n * 4) as f64,
            flops: 2.0 * (m * n * k) as f64,
            time: self.clock.median(dev, self.runs, &mut || {
                kernels::bf16_gemm(dev, &at, &bt, &mut ct).map_err(err)
            })?,
            max_error,
            // Products of bf16 values are exact in f32; the sum of K of
            // them, each at most 1, is rounded at each of K steps.
            tolerance: k as f64 * k as f64 * 2f64.powi(-24),
        })
    }

    /// `C = A · Wᵀ` with f8e4m3 operands (both K-major, `W` is [N, K]) on
    /// tensor cores (kernels/f8_gemm.pho), checked as [`Bench::bf16_gemm`]
    /// is: an f64 reference over the f8 values on the same samples.
    fn f8_gemm(&self, name: &'static str, (m, n, k): (usize, usize, usize)) -> Res<Row> {
        self.ragged_first((m, n, k), RAGGED_F8_GEMM, |s| self.f8_gemm(name, s))?;
        // Values in [-1, 1) rounded to E4M3 (3 mantissa bits; subnormals
        // below 2^-6 included), so the products stay below 1.
        let a: Vec<F8E4M3> = inputs(m * k, 18)
            .into_iter()
            .map(F8E4M3::from_f32)
            .collect();
        let w: Vec<F8E4M3> = inputs(n * k, 19)
            .into_iter()
            .map(F8E4M3::from_f32)
            .collect();
        let (at, wt) = (self.up(&a, &[m, k])?, self.up(&w, &[n, k])?);
        let mut ct = self.zeros(&[m, n])?;
        let dev = self.dev;
        kernels::f8_gemm(dev, &at, &wt, &mut ct).map_err(err)?;
        let c = ct.to_vec().map_err(err)?;
        let max_error = gemm_error(&c, (m, n, k), |i, p, j| {
            a[i * k + p].to_f64() * w[j * k + p].to_f64()
        });
        Ok(Row {
            name,
            shape: format!("{m}x{n}x{k} f8e4m3"),
            bytes: ((m * k + n * k) + m * n * 4) as f64,
            flops: 2.0 * (m * n * k) as f64,
            time: self.clock.median(dev, self.runs, &mut || {
                kernels::f8_gemm(dev, &at, &wt, &mut ct).map_err(err)
            })?,
            max_error,
            // Products of two E4M3 values (4 significant bits each) are
            // exact in f32; the sum of K of them, each at most 1, is
            // rounded at each of K steps: the bf16 GEMM's bound.
            tolerance: k as f64 * k as f64 * 2f64.powi(-24),
        })
    }

    /// The device-to-device copy ceiling: `bytes` copied, read + written.
    fn copy(&self, bytes: usize) -> Res<Row> {
        let n = bytes / 4;
        let src = self.up(&inputs(n, 15), &[n])?;
        let mut dst = self.zeros(&[n])?;
        let (s, d) = (src.address(), dst.address());
        let dev = self.dev;
        let mut copy = || -> Res<()> {
            match self.clock {
                Clock::Events { .. } => {
                    unsafe { result::memcpy_dtod_sync(d, s, n * 4) }.map_err(err)
                }
                // The simulator backend has no driver: a kernel-free copy
                // through the host stands in, and says so in its name.
                Clock::Wall => dst.copy_from(&src.to_vec().map_err(err)?).map_err(err),
            }
        };
        Ok(Row {
            name: "copy_dtod",
            shape: format!("{} MiB", bytes >> 20),
            bytes: (2 * n * 4) as f64,
            flops: 0.0,
            time: self.clock.median(dev, self.runs, &mut copy)?,
            max_error: 0.0,
            tolerance: 0.0,
        })
    }
}

struct Sizes {
    matvec: (usize, usize),
    staged_rows: usize,
    i8: (usize, usize),
    f16: (usize, usize),
    rows: (usize, usize),
    sum: (usize, usize),
    copy_bytes: usize,
    /// The two GEMMs, M × N × K.
    gemm: [(usize, usize, usize); 2],
    /// The FP8 GEMM's two: the bf16 ones at full size; at small size K
    /// a multiple of 16 (its `@aligned`) but not of 32.
    f8_gemm: [(usize, usize, usize); 2],
}

const FULL: Sizes = Sizes {
    matvec: (16384, 16384),
    staged_rows: 1 << 20,
    i8: (32768, 16384),
    f16: (16384, 16384),
    rows: (16384, 8192),
    sum: (1 << 28, 1056),
    copy_bytes: 1 << 30,
    gemm: [(4096, 4096, 4096), (8192, 8192, 8192)],
    f8_gemm: [(4096, 4096, 4096), (8192, 8192, 8192)],
};

const SMALL: Sizes = Sizes {
    matvec: (64, 512),
    staged_rows: 64,
    i8: (64, 512),
    f16: (64, 512),
    rows: (8, 512),
    sum: (1 << 14, 8),
    copy_bytes: 1 << 20,
    // Ragged: neither is a multiple of the 128 × 128 tile or of K's 32.
    gemm: [(130, 96, 72), (70, 200, 40)],
    f8_gemm: [(130, 96, 80), (70, 200, 48)],
};

/// Writes `value` to `path` through a temporary file and a rename, so a
/// reader (or a kill) never sees half a file.
fn write_json(path: &std::path::Path, value: &serde_json::Value) -> Res<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_string_pretty(value).unwrap_or_default(),
    )
    .and_then(|_| std::fs::rename(&tmp, path))
    .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The driver library this process mapped (the GPU's `libcuda.so.1`, or
/// the stand-in's), from `/proc/self/maps`; `None` when nothing named
/// `libcuda` is mapped (the simulator backend) or off Linux.
fn loaded_libcuda() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            std::path::Path::new(p)
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("libcuda.so"))
        })
        .map(|p| {
            let real = std::fs::canonicalize(p).map(|r| r.display().to_string());
            match real {
                Ok(r) if r != p => format!("{p} -> {r}"),
                _ => p.to_string(),
            }
        })
}

fn main() -> ExitCode {
    let mut small = false;
    let mut runs = 30;
    let mut out = std::path::PathBuf::from("bench.json");
    let mut only: Option<Vec<String>> = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--small" => small = true,
            "--runs" => match it.next().and_then(|v| v.parse().ok()).filter(|&r| r >= 20) {
                Some(r) => runs = r,
                None => {
                    eprintln!("--runs needs a number, at least 20");
                    return ExitCode::from(2);
                }
            },
            "--only" => {
                only = it
                    .next()
                    .map(|v| v.split(',').map(str::to_string).collect())
            }
            "--out" => match it.next() {
                Some(p) => out = p.into(),
                None => {
                    eprintln!("--out needs a file");
                    return ExitCode::from(2);
                }
            },
            _ => {
                eprintln!(
                    "usage: phobos-bench [--small] [--runs N>=20] [--only NAME,..] [--out FILE]"
                );
                return ExitCode::from(2);
            }
        }
    }
    let dev = match Device::auto() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let clock = match Clock::new(&dev) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: cannot make CUDA events: {e}");
            return ExitCode::FAILURE;
        }
    };
    let s = if small { SMALL } else { FULL };
    println!(
        "device: {} ({}, {}); timing: {}, median of {runs}",
        dev.name(),
        dev.kind(),
        dev.arch_label(),
        clock.name()
    );
    let b = Bench {
        dev: &dev,
        clock,
        runs,
    };
    let all: Vec<(&str, BenchFn<'_>)> = vec![
        ("copy_dtod", Box::new(|| b.copy(s.copy_bytes))),
        (
            "lanes_matvec",
            Box::new(|| b.matvec_f32("lanes_matvec", s.matvec.0, s.matvec.1)),
        ),
        (
            "staged_matvec",
            Box::new(|| b.matvec_f32("staged_matvec", s.staged_rows, 256)),
        ),
        ("i8_matvec", Box::new(|| b.i8_matvec(s.i8.0, s.i8.1))),
        ("f16_gemv", Box::new(|| b.f16_gemv(s.f16.0, s.f16.1))),
        (
            "row_softmax",
            Box::new(|| b.row_softmax(s.rows.0, s.rows.1)),
        ),
        ("layer_norm", Box::new(|| b.layer_norm(s.rows.0, s.rows.1))),
        ("sum_all", Box::new(|| b.sum_all(s.sum.0, s.sum.1))),
        (
            "bf16_gemm_4096",
            Box::new(|| b.bf16_gemm("bf16_gemm_4096", s.gemm[0])),
        ),
        (
            "bf16_gemm_8192",
            Box::new(|| b.bf16_gemm("bf16_gemm_8192", s.gemm[1])),
        ),
        (
            "f8_gemm_4096",
            Box::new(|| b.f8_gemm("f8_gemm_4096", s.f8_gemm[0])),
        ),
        (
            "f8_gemm_8192",
            Box::new(|| b.f8_gemm("f8_gemm_8192", s.f8_gemm[1])),
        ),
    ];
    if let Some(names) = &only {
        if let Some(bad) = names.iter().find(|n| !all.iter().any(|(a, _)| a == n)) {
            eprintln!("--only {bad}: no such benchmark");
            return ExitCode::from(2);
        }
    }
    println!(
        "{:<14} {:<18} {:>10} {:>9} {:>7} {:>8} {:>10}  check",
        "kernel", "shape", "time ms", "GB/s", "% copy", "TFLOP/s", "max error"
    );
    let libcuda = loaded_libcuda();
    let report = |rows: &[serde_json::Value], copy_gbs: Option<f64>, complete: bool| {
        let loaded: Vec<serde_json::Value> =
            dev.loaded_images().iter().map(images::image_json).collect();
        json!({
            "images": loaded,
            "device": dev.name(), "backend": dev.kind().to_string(), "arch": dev.arch_label(),
            "timing": format!("{}, {BATCH} calls back to back per sample, {WARMUP} warm-up calls", b.clock.name()),
            "runs": runs, "batch": BATCH, "small": small, "libcuda": libcuda,
            "copy_gbs": copy_gbs, "complete": complete, "rows": rows,
        })
    };
    let mut rows = Vec::new();
    let mut failed = false;
    let mut copy_gbs = None;
    if let Err(e) = write_json(&out, &report(&rows, copy_gbs, false)) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    let picked = all
        .iter()
        .filter(|(name, _)| only.as_ref().is_none_or(|o| o.iter().any(|x| x == name)));
    for (name, f) in picked {
        let name = *name;
        // The FP8 GEMM has no image below sm_89 (build.rs builds it for
        // sm_89 and newer): on such a GPU its rows say so and pass.
        if let Some(a) = dev
            .arch()
            .filter(|&a| name.starts_with("f8_gemm") && a < 89)
        {
            let why = format!(
                "needs sm_89 (FP8 tensor cores); this GPU is {}",
                phobos_core::arch::name(a)
            );
            println!("{name:<14} skipped: {why}");
            rows.push(json!({"kernel": name, "ok": true, "skipped": why}));
            continue;
        }
        match f() {
            Ok(r) => {
                let ms = r.time.ms;
                if name == "copy_dtod" {
                    copy_gbs = Some(r.bytes / (ms * 1e6));
                }
                let gbs = r.bytes / (ms * 1e6);
                // A compute-bound row is judged by its rate, not its bytes.
                let tflops = (r.flops > 0.0).then(|| r.flops / (ms * 1e9));
                let pct = copy_gbs
                    .filter(|_| tflops.is_none())
                    .map(|c| 100.0 * gbs / c);
                let ok = r.max_error <= r.tolerance;
                failed |= !ok;
                println!(
                    "{:<14} {:<18} {:>10.4} {:>9.1} {:>7} {:>8} {:>10.2e}  {}",
                    r.name,
                    r.shape,
                    ms,
                    gbs,
                    pct.map_or("-".into(), |p| format!("{p:.1}")),
                    tflops.map_or("-".into(), |t| format!("{t:.1}")),
                    r.max_error,
                    if ok { "ok" } else { "MISMATCH" }
                );
                // The images of the kernels this row ran (`bf16_gemm` for
                // `bf16_gemm_4096`).
                let loaded: Vec<serde_json::Value> = dev
                    .loaded_images()
                    .iter()
                    .filter(|i| r.name == i.kernel || r.name.starts_with(&format!("{}_", i.kernel)))
                    .map(images::image_json)
                    .collect();
                rows.push(json!({
                    "images": loaded,
                    "kernel": r.name, "shape": r.shape, "bytes": r.bytes, "ms": ms,
                    "ms_min": r.time.min, "ms_max": r.time.max,
                    "gbs": gbs, "pct_copy": pct, "tflops": tflops, "max_error": r.max_error,
                    "tolerance": r.tolerance, "ok": ok,
                }));
            }
            Err(e) => {
                failed = true;
                println!("{name:<14} failed: {e}");
                rows.push(json!({"kernel": name, "ok": false, "error": e}));
            }
        }
        if let Err(e) = write_json(&out, &report(&rows, copy_gbs, false)) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = write_json(&out, &report(&rows, copy_gbs, true)) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_gemm_samples_cover_every_cta_and_every_fragment_position() {
        for (m, n) in [(4096, 4096), (8192, 8192), (4000, 4104)] {
            let samples = gemm_samples(m, n, GEMM_CHECKED_WHOLE, 8);
            let ctas: BTreeSet<(usize, usize)> =
                samples.iter().map(|&(r, c)| (r / TILE, c / TILE)).collect();
            assert_eq!(ctas.len(), m.div_ceil(TILE) * n.div_ceil(TILE), "{m}x{n}");
            let frag: BTreeSet<(usize, usize)> = samples
                .iter()
                .map(|&(r, c)| (r % FRAG.0, c % FRAG.1))
                .collect();
            assert_eq!(frag.len(), FRAG.0 * FRAG.1, "{m}x{n}");
            // Every 16-row block and 8-column block of a tile (each warp's
            // share of it) is sampled somewhere.
            let blocks: BTreeSet<(usize, usize)> = samples
                .iter()
                .map(|&(r, c)| ((r % TILE) / FRAG.0, (c % TILE) / FRAG.1))
                .collect();
            assert_eq!(blocks.len(), (TILE / FRAG.0) * (TILE / FRAG.1), "{m}x{n}");
            assert!(samples.iter().all(|&(r, c)| r < m && c < n));
            assert!(samples.len() <= 8 * ctas.len());
        }
        // Small products are checked whole.
        assert_eq!(gemm_samples(130, 96, GEMM_CHECKED_WHOLE, 8).len(), 130 * 96);
        let (m, n, _) = RAGGED_GEMM;
        assert_eq!(gemm_samples(m, n, GEMM_CHECKED_WHOLE, 8).len(), m * n);
    }
}
