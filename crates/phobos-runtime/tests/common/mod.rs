//! Kernels compiled at test time with phobos-core, wrapped the way the
//! generated bindings wrap them, so runtime tests run real compiler output.

#![allow(dead_code)]

pub mod tma;

use phobos_runtime::{
    cdiv, Arg, Device, DeviceError, Grid, Kernel, KernelSource, LaunchError, Tensor,
};

pub const LANES_MATVEC: &str = include_str!("../../../../tests/in/lanes_matvec.pho");

/// Writes past the end of `y` when the grid has more CTAs than `N` needs:
/// the store is a point subscript, which is not masked.
pub const UNGUARDED: &str = "@launch(32)
kernel unguarded(y: tensor<f32>[1, N]) {
  y[0, ctx.block.x * ctx.threads + ctx.thread] = 1.0
}
";

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The first kernel of `src` with its PTX for `arches` (none: no PTX at
/// all) and `cubins` given as `(arch, bytes)`; its metadata is the first
/// target's with the others' differing variants, as phobos-build merges it
/// (`KernelMeta::add_target`).
pub fn compile(src: &str, arches: &[u32], cubins: Vec<(u32, Vec<u8>)>) -> Kernel {
    compile_with_tuning(src, arches, cubins, "")
}

/// [`compile`], with `tuning` embedded as a build embeds a shipped tuning
/// file (`Kernel::with_tuning`).
pub fn compile_with_tuning(
    src: &str,
    arches: &[u32],
    cubins: Vec<(u32, Vec<u8>)>,
    tuning: &'static str,
) -> Kernel {
    let mut ptx = Vec::new();
    let mut meta: Option<phobos_core::meta::KernelMeta> = None;
    let for_meta = [75];
    let compile_for = if arches.is_empty() {
        &for_meta[..]
    } else {
        arches
    };
    for &arch in compile_for {
        let (kernels, diags) = phobos_core::compile(
            src,
            "test.pho",
            &phobos_core::CompileOptions::for_arch(arch),
        );
        assert!(
            !diags.iter().any(|d| d.is_error()),
            "{}",
            phobos_core::render::render(&diags, "test.pho", src, false)
        );
        let k = kernels.into_iter().next().expect("one kernel");
        if !arches.is_empty() {
            ptx.push((arch, leak(k.ptx)));
        }
        match meta.as_mut() {
            Some(m) => m.add_target(arch, &k.meta),
            None => meta = Some(k.meta),
        }
    }
    let meta = meta.expect("compiled once");
    let cubins: Vec<(u32, &'static [u8])> = cubins
        .into_iter()
        .map(|(a, b)| (a, &*Box::leak(b.into_boxed_slice())))
        .collect();
    let source = KernelSource {
        name: leak(meta.name.clone()),
        module: "test.pho",
        meta: leak(ron::to_string(&meta).expect("metadata serializes")),
        ptx: Box::leak(ptx.into_boxed_slice()),
        cubins: Box::leak(cubins.into_boxed_slice()),
    };
    Kernel::with_tuning(source, tuning)
}

/// Deterministic values in [-1, 1), from a seeded `fastrand` generator.
pub fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..len).map(|_| rng.f32() * 2.0 - 1.0).collect()
}

/// A matvec's tensors on one device: `W[n, k]`, `x[1, k]` and `y[1, n]`.
pub struct Matvec {
    pub w: Tensor<f32>,
    pub x: Tensor<f32>,
    pub y: Tensor<f32>,
}

impl Matvec {
    /// `W` and `x` uploaded from `w` and `x`, `y` zero.
    pub fn upload(dev: &Device, w: &[f32], x: &[f32], n: usize) -> Result<Matvec, DeviceError> {
        let k = x.len();
        Ok(Matvec {
            w: dev.upload(w, &[n, k])?,
            x: dev.upload(x, &[1, k])?,
            y: dev.zeros(&[1, n])?,
        })
    }

    /// `W[n, k]` and `x[1, k]` uploaded from [`values`] of seeds `seed`
    /// and `seed + 1`, `y` zero; with the reference `y` ([`matvec`]).
    pub fn random(
        dev: &Device,
        n: usize,
        k: usize,
        seed: u64,
    ) -> Result<(Matvec, Vec<f64>), DeviceError> {
        let (w, x) = (values(n * k, seed), values(k, seed + 1));
        Ok((Matvec::upload(dev, &w, &x, n)?, matvec(&w, &x, n, k)))
    }

    /// Launches `kernel` (a warp a row, 4 rows a CTA) and returns the
    /// largest difference of `y` from `want`; panics if the launch fails.
    pub fn launch_error(&mut self, kernel: &Kernel, dev: &Device, want: &[f64]) -> f64 {
        let rows = want.len();
        self.launch(kernel, dev, Grid::from(cdiv(rows, 4)))
            .unwrap_or_else(|e| panic!("{e}"));
        max_error(&self.y.to_vec().unwrap_or_else(|e| panic!("{e}")), want)
    }

    /// All three zero.
    pub fn zeros(dev: &Device, n: usize, k: usize) -> Result<Matvec, DeviceError> {
        Ok(Matvec {
            w: dev.zeros(&[n, k])?,
            x: dev.zeros(&[1, k])?,
            y: dev.zeros(&[1, n])?,
        })
    }

    /// Launches `kernel` (a matvec's signature) on these tensors.
    pub fn launch(&mut self, kernel: &Kernel, dev: &Device, grid: Grid) -> Result<(), LaunchError> {
        let args = [
            Arg::from(&self.w),
            Arg::from(&self.x),
            Arg::from(&mut self.y),
        ];
        kernel.launch(dev, Some(grid), &args)
    }
}

/// Launches `kernel`, whose parameters are `x` (read) and `y` (written),
/// over `ctas` CTAs.
pub fn launch_xy(
    kernel: &Kernel,
    dev: &Device,
    ctas: u32,
    x: &Tensor<f32>,
    y: &mut Tensor<f32>,
) -> Result<(), LaunchError> {
    kernel.launch(dev, Some(Grid::from(ctas)), &[Arg::from(x), Arg::from(y)])
}

pub fn matvec(w: &[f32], x: &[f32], n: usize, k: usize) -> Vec<f64> {
    (0..n)
        .map(|r| {
            (0..k)
                .map(|c| f64::from(w[r * k + c]) * f64::from(x[c]))
                .sum()
        })
        .collect()
}

pub fn max_error(got: &[f32], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(&g, &w)| (f64::from(g) - w).abs())
        .fold(0.0, f64::max)
}

/// A free tuning constant with `@grid` following it (the corpus kernel
/// `autotune_block`).
pub const AUTOTUNE_BLOCK: &str = include_str!("../../../../tests/in/autotune_block.pho");

/// The seed page's staged matvec: `K` is tuned, only 256 is compiled.
pub const STAGED_MATVEC: &str = include_str!("../../../../tests/in/staged_matvec.pho");

/// Reads `x`, writes `y`: the smallest kernel with a read-only and a
/// written tensor.
pub const SCALE: &str = "@launch(32)
kernel scale(x: tensor<f32>[N], y: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    y[i] = 2.0 * x[i]
  }
}
";

/// Runs a test's body in a child process of the test binary, with `env`
/// added, under the CUDA driver stand-in (`scripts/with-fake-gpu.sh` sets
/// `PHOBOS_FAKE_GPU_LIB`): the stand-in reads its configuration once per
/// process, so each configuration gets its own process. In the child,
/// runs `body`.
pub fn in_fake_gpu_child(test: &str, env: &[(&str, &str)], body: impl FnOnce()) {
    in_fake_gpu_child_phase(test, "main", env, body)
}

/// [`in_fake_gpu_child`] for a test with several child processes: the
/// child runs only the body of its `phase`.
pub fn in_fake_gpu_child_phase(test: &str, phase: &str, env: &[(&str, &str)], body: impl FnOnce()) {
    if let Some(p) = std::env::var_os("PHOBOS_TEST_CHILD") {
        if p == phase {
            body();
        }
        return;
    }
    assert!(
        std::env::var_os("PHOBOS_FAKE_GPU_LIB").is_some(),
        "this test needs the CUDA driver stand-in: run it under scripts/with-fake-gpu.sh"
    );
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([
            test,
            "--exact",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PHOBOS_TEST_CHILD", phase)
        .env("PHOBOS_FAKE_GPU_QUIET", "1")
        .env("PHOBOS_TUNE_CACHE", "off")
        .envs(env.iter().copied())
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} failed in its child process:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// True in the child process of [`in_fake_gpu_child`], where the parent's
/// own checks after the child ran must not run.
pub fn is_child() -> bool {
    std::env::var_os("PHOBOS_TEST_CHILD").is_some()
}

/// The device under the stand-in (the child's `PHOBOS_BACKEND=cuda`).
pub fn fake_gpu() -> phobos_runtime::Device {
    let dev = phobos_runtime::Device::cuda(0).expect("the CUDA driver stand-in opens");
    assert!(
        dev.name().contains("phobos-sim") || std::env::var_os("PHOBOS_FAKE_GPU_NAME").is_some(),
        "not the stand-in: {}",
        dev.name()
    );
    dev
}

/// A fresh scratch directory for one test.
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("phobos-rt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// The lines of the stand-in's call trace that start with `call`.
pub fn trace_lines(path: &std::path::Path, call: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(call))
        .map(str::to_string)
        .collect()
}

/// 128 KB of tiles (two 64x256 f32 tiles): dynamic shared memory, within
/// sm_80's 163 KB per CTA, beyond sm_75's 64 KB and sm_86's 99 KB.
/// `y[0, t] = A[3, t] + B[5, t]`.
pub const TILES_128K: &str = "@launch(256)
kernel big_tiles(A: tensor<f32>[64, 256], B: tensor<f32>[64, 256], y: tensor<f32>[1, 256]) {
  var a = A[0 :+ 64, :]
  var b = B[0 :+ 64, :]
  y[0, ctx.thread] = a[3, ctx.thread] + b[5, ctx.thread]
}
";

/// Runs [`TILES_128K`] (built for `arch`) on `dev` and checks its result.
pub fn run_tiles_128k(dev: &phobos_runtime::Device, arch: u32) -> Result<(), String> {
    let kernel = compile(TILES_128K, &[arch], vec![]);
    let (a, b) = (values(64 * 256, 7), values(64 * 256, 8));
    let at = dev.upload(&a, &[64, 256]).map_err(|e| e.to_string())?;
    let bt = dev.upload(&b, &[64, 256]).map_err(|e| e.to_string())?;
    let mut y = dev.zeros::<f32>(&[1, 256]).map_err(|e| e.to_string())?;
    kernel
        .launch(
            dev,
            Some(phobos_runtime::Grid::from(1)),
            &[
                phobos_runtime::Arg::from(&at),
                phobos_runtime::Arg::from(&bt),
                phobos_runtime::Arg::from(&mut y),
            ],
        )
        .map_err(|e| e.to_string())?;
    let want: Vec<f32> = (0..256).map(|t| a[3 * 256 + t] + b[5 * 256 + t]).collect();
    let got = y.to_vec().map_err(|e| e.to_string())?;
    if got == want {
        Ok(())
    } else {
        Err(format!("wrong result: {got:?}"))
    }
}
