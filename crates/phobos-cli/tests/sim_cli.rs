//! `phobos sim` as a user runs it: the seed page's kernels compiled and run
//! on random `.npy` inputs against a float64 (or exact integer) reference,
//! ragged shapes, poisoned outputs, and every usage error with its exit code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::{assert_says, phobos};

// The seed page's kernels, from the conformance corpus.
const LANES_MATVEC: &str = include_str!("../../../tests/in/lanes_matvec.pho");
const I8_MATVEC: &str = include_str!("../../../tests/in/i8_matvec.pho");
const LANE_MAX: &str = include_str!("../../../tests/in/lane_max.pho");
const STAGED_MATVEC: &str = include_str!("../../../tests/in/staged_matvec.pho");

/// Reads every element of a tensor, with no bounds guard: a planted bug
/// when the tensor is shorter than the CTA.
const UNGUARDED: &str = "@launch(128)
kernel copy(A: tensor<f32>[1, M], B: tensor<f32>[1, 128]) {
  B[0, ctx.thread] = A[0, ctx.thread]
}
";

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that `phobos` exited with `code` and said `message` on stderr.
fn assert_fails(out: &Output, code: i32, message: &str) {
    assert_eq!(out.status.code(), Some(code), "{}", stderr(out));
    assert!(stderr(out).contains(message), "{}", stderr(out));
}

/// Values in [-1, 1) from a generator seeded with `seed`, so failures
/// reproduce.
fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..len).map(|_| rng.f32() * 2.0 - 1.0).collect()
}

fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) {
    use npyz::WriterBuilder;
    let file = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(file)
        .begin_nd()
        .expect("npy header");
    w.extend(data.iter().copied()).expect("npy data");
    w.finish().expect("npy finish");
}

fn read_npy<T: npyz::Deserialize>(path: &Path) -> (Vec<u64>, Vec<T>) {
    let f = std::fs::File::open(path).expect("open output");
    let npy = npyz::NpyFile::new(std::io::BufReader::new(f)).expect("npy");
    let shape = npy.shape().to_vec();
    (shape, npy.into_vec().expect("data"))
}

struct Case {
    dir: tempfile::TempDir,
    /// The kernel source's path, as text.
    file: String,
}

impl Case {
    fn new(name: &str, src: &str) -> Case {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join(name);
        std::fs::write(&p, src).expect("write source");
        let file = p.display().to_string();
        Case { dir, file }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn arg(&self, param: &str, file: &str) -> String {
        format!("{param}={}", self.path(file).display())
    }
    fn out(&self) -> String {
        self.path("out").display().to_string()
    }
    /// Runs `phobos sim FILE FLAGS.. T=DIR/T.npy.. --out DIR/out`, one
    /// `T=` argument per tensor named in `tensors`.
    fn sim(&self, flags: &[&str], tensors: &[&str]) -> Output {
        let mut args = vec!["sim".to_string(), self.file.clone()];
        args.extend(flags.iter().map(|f| f.to_string()));
        args.extend(tensors.iter().map(|t| self.arg(t, &format!("{t}.npy"))));
        args.extend(["--out".to_string(), self.out()]);
        phobos(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }
}

fn close(got: f32, want: f64) -> bool {
    (f64::from(got) - want).abs() <= 1e-5 * want.abs().max(1.0)
}

fn matvec_inputs(c: &Case, n: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let w = values(n * k, seed);
    let x = values(k, seed + 1);
    write_npy(&c.path("W.npy"), &[n as u64, k as u64], &w);
    write_npy(&c.path("x.npy"), &[1, k as u64], &x);
    write_npy(&c.path("y.npy"), &[1, n as u64], &vec![f32::NAN; n]);
    (w, x)
}

fn check_matvec(c: &Case, w: &[f32], x: &[f32], n: usize, k: usize) {
    let (shape, y) = read_npy::<f32>(&c.path("out/y.npy"));
    assert_eq!(shape, vec![1, n as u64]);
    for r in 0..n {
        let want: f64 = (0..k)
            .map(|j| f64::from(w[r * k + j]) * f64::from(x[j]))
            .sum();
        assert!(close(y[r], want), "row {r}: {} vs {want}", y[r]);
    }
}

#[test]
fn lanes_matvec_with_ragged_rows() {
    // N = 10 rows over CTAs of 4 warps: the third CTA has two idle warps.
    let (n, k) = (10, 256);
    let c = Case::new("lanes_matvec.pho", LANES_MATVEC);
    let (w, x) = matvec_inputs(&c, n, k, 7);
    let out = c.sim(
        &["--kernel", "lanes_matvec", "--grid", "3"],
        &["W", "x", "y"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("checks passed"), "{stdout}");
    check_matvec(&c, &w, &x, n, k);
    assert!(
        !c.path("out/W.npy").exists(),
        "read-only tensors are not written"
    );
}

#[test]
fn staged_matvec_through_shared_memory() {
    let (n, k) = (9, 256);
    let c = Case::new("staged.pho", STAGED_MATVEC);
    let (w, x) = matvec_inputs(&c, n, k, 11);
    let out = c.sim(&["--grid", "3"], &["W", "x", "y"]);
    assert!(out.status.success(), "{}", stderr(&out));
    check_matvec(&c, &w, &x, n, k);
}

#[test]
fn i8_matvec_matches_exact_integers() {
    let (n, k) = (13, 96);
    let c = Case::new("i8.pho", I8_MATVEC);
    let mut rng = fastrand::Rng::with_seed(3);
    let a: Vec<i8> = (0..k).map(|_| rng.i8(..)).collect();
    let w: Vec<i8> = (0..n * k).map(|_| rng.i8(..)).collect();
    write_npy(&c.path("A.npy"), &[1, k as u64], &a);
    write_npy(&c.path("W.npy"), &[n as u64, k as u64], &w);
    write_npy(&c.path("C.npy"), &[1, n as u64], &vec![f32::NAN; n]);
    let out = c.sim(&["--grid", "2"], &["A", "W", "C"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, got) = read_npy::<f32>(&c.path("out/C.npy"));
    for col in 0..n {
        let want: i64 = (0..k)
            .map(|j| i64::from(a[j]) * i64::from(w[col * k + j]))
            .sum();
        assert_eq!(got[col], want as f32, "column {col}");
    }
}

#[test]
fn lane_max_folds_warp_zero() {
    let c = Case::new("lane_max.pho", LANE_MAX);
    let a = values(128, 5);
    write_npy(&c.path("A.npy"), &[1, 128], &a);
    write_npy(&c.path("O.npy"), &[1, 1], &[f32::NAN]);
    let out = c.sim(&["--grid", "1"], &["A", "O"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, o) = read_npy::<f32>(&c.path("out/O.npy"));
    let want = a[..32].iter().copied().fold(f32::MIN, f32::max);
    assert_eq!(o, vec![want]);
}

#[test]
fn a_missing_bounds_guard_fails_memcheck_with_exit_1() {
    let c = Case::new("copy.pho", UNGUARDED);
    write_npy(&c.path("A.npy"), &[1, 100], &vec![1.0f32; 100]);
    write_npy(&c.path("B.npy"), &[1, 128], &vec![0.0f32; 128]);
    let out = c.sim(&["--grid", "1"], &["A", "B"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("memcheck: out-of-bounds global load of 4 bytes in kernel `copy`"),
        "{err}"
    );
    assert_says(
        &err,
        &[
            "copy.pho:3:",
            "thread (100, 0, 0)",
            "tensor `A`, which has 400 bytes",
        ],
    );
}

/// lanes_matvec with zero inputs of these shapes, `x` of element type `X`
/// (the kernel wants f32).
fn lanes_matvec_zeros<X>(w: &[u64], x: &[u64], y: &[u64]) -> Case
where
    X: npyz::AutoSerialize + Copy + Default,
{
    let c = Case::new("lanes_matvec.pho", LANES_MATVEC);
    let zeros = |shape: &[u64]| vec![0.0f32; shape.iter().product::<u64>() as usize];
    write_npy(&c.path("W.npy"), w, &zeros(w));
    let xs = vec![X::default(); x.iter().product::<u64>() as usize];
    write_npy(&c.path("x.npy"), x, &xs);
    write_npy(&c.path("y.npy"), y, &zeros(y));
    c
}

#[test]
fn dims_that_disagree_name_both_tensors() {
    let c = lanes_matvec_zeros::<f32>(&[4, 256], &[1, 128], &[1, 4]);
    let out = c.sim(&["--grid", "1"], &["W", "x", "y"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim(),
        "error: kernel `lanes_matvec`: dim `K` disagrees: it is 256 from `W` (axis 1) but 128 \
         from `x` (axis 1)\n  note: `W`'s .npy has shape (4, 256), `x`'s .npy has shape (1, 128)"
    );
}

#[test]
fn a_dtype_that_does_not_match_is_refused() {
    let c = lanes_matvec_zeros::<f64>(&[4, 128], &[1, 128], &[1, 4]);
    let out = c.sim(&["--grid", "1"], &["W", "x", "y"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("tensor `x` is f32, so")
            && err.contains("must hold float32 (dtype f4), but it holds float64 (dtype f8)"),
        "{err}"
    );
}

#[test]
fn shapes_and_alignment_are_checked() {
    let c = lanes_matvec_zeros::<f32>(&[4, 100], &[1, 100], &[4]);
    let out = c.sim(&["--grid", "1", &c.arg("y", "y.npy")], &["W", "x"]);
    assert_fails(
        &out,
        2,
        "tensor `y` has 2 dimensions, the argument has 1\n  note: `y`'s .npy has shape (4,)",
    );
    write_npy(&c.path("y2.npy"), &[1, 4], &[0.0f32; 4]);
    let out = c.sim(&["--grid", "1", &c.arg("y", "y2.npy")], &["W", "x"]);
    assert_fails(
        &out,
        2,
        "@aligned(K = 128) does not hold: K = 100 is not a multiple of 128\n  \
         note: `W`'s .npy has shape (4, 100)",
    );
}

#[test]
fn usage_errors_exit_2() {
    let c = Case::new("lanes_matvec.pho", LANES_MATVEC);
    let out = c.sim(&["--kernel", "nope"], &[]);
    assert_fails(&out, 2, "has no kernel `nope` (it has: lanes_matvec)");
    let out = c.sim(&["W=w.npy"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "missing a value for parameters `x` (a tensor<f32>[1, K], given as PATH.npy), `y`"
        ),
        "{}",
        stderr(&out)
    );
    let out = c.sim(&["Q=1"], &[]);
    assert_fails(&out, 2, "has no parameter `Q`");
    let out = c.sim(&[&c.arg("W", "missing.npy"), "x=a.npy", "y=b.npy"], &[]);
    assert_fails(&out, 2, "cannot open");
    let out = phobos(&["sim", "/nonexistent/k.pho", "--out", &c.out()]);
    assert_eq!(out.status.code(), Some(2));
    let out = c.sim(&["--grid", "0"], &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_kernel_without_a_grid_needs_one() {
    let c = Case::new("lane_max.pho", LANE_MAX);
    write_npy(&c.path("A.npy"), &[1, 128], &vec![0.0f32; 128]);
    write_npy(&c.path("O.npy"), &[1, 1], &[0.0f32]);
    let out = c.sim(&[], &["A", "O"]);
    assert_fails(
        &out,
        2,
        "the kernel has no @grid, so the launch needs a grid\n  note: give the grid with --grid",
    );
}

#[test]
fn compile_errors_exit_1_with_the_diagnostic() {
    let c = Case::new(
        "bad.pho",
        "kernel k(A: tensor<f32>[1, 4]) {\n  A[0, 0] = nope\n}\n",
    );
    let out = c.sim(&[], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("bad.pho:2"), "{err}");
    assert!(err.contains("could not compile"), "{err}");
}

const SCALE: &str = "@launch(128)
@grid(cdiv(N, ctx.threads))
kernel scale(A: tensor<f32>[1, N], alpha: f32, B: tensor<f32>[1, N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    B[0, i] = A[0, i] * alpha
  }
}
";

#[test]
fn scalars_and_the_kernels_own_grid() {
    let c = Case::new("scale.pho", SCALE);
    let n = 300;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    write_npy(&c.path("A.npy"), &[1, n as u64], &a);
    write_npy(&c.path("B.npy"), &[1, n as u64], &vec![f32::NAN; n]);
    let out = c.sim(&["alpha=2.5", "--no-check"], &["A", "B"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("grid (3, 1, 1) x 128 threads"), "{stdout}");
    assert!(stdout.contains("checks off"), "{stdout}");
    let (_, b) = read_npy::<f32>(&c.path("out/B.npy"));
    assert_eq!(b, a.iter().map(|v| v * 2.5).collect::<Vec<_>>());

    let out = c.sim(&["alpha=fast"], &["A", "B"]);
    assert_fails(&out, 2, "`alpha=fast`: `fast` is neither a number");
}

#[test]
fn an_autotuned_dim_without_a_variant_is_refused() {
    let (n, k) = (4, 128);
    let c = Case::new("staged.pho", STAGED_MATVEC);
    matvec_inputs(&c, n, k, 1);
    let out = c.sim(&["--grid", "1"], &["W", "x", "y"]);
    assert_fails(
        &out,
        2,
        "no variant is compiled for K = 128 (compiled for K in [256])\n  \
         note: `W`'s .npy has shape (4, 128)",
    );
}

/// A free tuning constant with `@grid` following it (the corpus kernel).
const TUNED: &str = include_str!("../../../tests/in/autotune_block.pho");

#[test]
fn define_runs_the_variant_of_a_free_tuning_constant() {
    let n = 1000;
    let c = Case::new("autotune_block.pho", TUNED);
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    write_npy(&c.path("x.npy"), &[n as u64], &x);
    write_npy(&c.path("y.npy"), &[n as u64], &vec![0.0f32; n]);
    let run = |defines: &[&str]| {
        let mut args = vec!["sim", c.file.as_str(), "x=x.npy", "y=y.npy", "--out", "out"];
        args.extend_from_slice(defines);
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_phobos"));
        cmd.args(&args).current_dir(c.dir.path());
        cmd.output().expect("phobos runs")
    };
    // Without --define the first value runs, with its own @grid.
    let out = run(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        stdout.contains("autotune_block__BLOCK64: grid (16, 1, 1) x 64 threads"),
        "{stdout}"
    );
    let out = run(&["--define", "BLOCK=128"]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout.contains("autotune_block__BLOCK128: grid (8, 1, 1) x 128 threads"),
        "{stdout}"
    );
    let (_, y) = read_npy::<f32>(&c.dir.path().join("out/y.npy"));
    assert!(y.iter().zip(&x).all(|(y, x)| *y == 2.0 * x));
    for (define, message) in [
        ("BLOCK=96", "no variant is compiled for BLOCK = 96"),
        ("N=5", "`N` is not an @autotune constant"),
        ("BLOCK=big", "`big` is not an integer"),
    ] {
        let out = run(&["--define", define]);
        assert_eq!(out.status.code(), Some(2), "{define}");
        assert!(stderr(&out).contains(message), "{define}: {}", stderr(&out));
    }
}

#[test]
fn shared_memory_above_48_kilobytes_runs_up_to_the_targets_limit() {
    // Regression (issue 28): `phobos sim` bound every launch against the
    // 48 KB of static shared memory and passed no dynamic shared memory,
    // so it refused these kernels on every target ("51200 bytes of shared
    // memory per CTA, the device allows 49152").
    for (arch, src, inputs) in common::ABOVE_48K {
        let c = Case::new("big.pho", src);
        let mut tensors = Vec::new();
        let mut flags = vec!["--arch", arch];
        let mut data = BTreeMap::new();
        for (i, input) in inputs.iter().enumerate() {
            let Some((name, shape)) = input.split_once("=shape:") else {
                flags.push(input);
                continue;
            };
            let shape: Vec<u64> = shape.split('x').map(|d| d.parse().unwrap()).collect();
            let len = shape.iter().product::<u64>() as usize;
            let v = if name == "y" {
                vec![f32::NAN; len]
            } else {
                values(len, 40 + i as u64)
            };
            write_npy(&c.path(&format!("{name}.npy")), &shape, &v);
            data.insert(name, v);
            tensors.push(name);
        }
        let out = c.sim(&flags, &tensors);
        assert!(out.status.success(), "{arch}: {}", stderr(&out));
        let (_, y) = read_npy::<f32>(&c.path("out/y.npy"));
        let a = &data["A"];
        for (t, &got) in y.iter().enumerate() {
            // `tiles_128k` adds row 5 of B to row 3 of A; `TILES_50K` rows
            // 3 and 49 of A.
            let second = match data.get("B") {
                Some(b) => b[5 * 256 + t],
                None => a[49 * 256 + t],
            };
            assert_eq!(got, a[3 * 256 + t] + second, "{arch}: y[{t}]");
        }
    }
    // Above the target's limit, the compiler refuses it, naming the limit.
    let c = Case::new("big.pho", common::TILES_128K);
    let out = c.sim(&["--arch", "sm_75", "--grid", "1"], &["A", "B", "y"]);
    assert_fails(&out, 1, "sm_75 allows at most 65536 bytes per CTA");
}

/// 8-bit floats in, through a conversion, and out.
const F8_SCALE: &str = "@launch(32)
kernel f8_scale(P: tensor<f8e4m3>[N], Q: tensor<f8e5m2>[N], X: tensor<f32>[N]) {
  let i = ctx.thread
  if i < N {
    X[i] = f32(P[i])
    Q[i] = f8e5m2(f32(P[i]) * 2.0)
  }
}
";

#[test]
fn f8_tensors_travel_as_uint8_bits_and_are_refused_as_floats() {
    let n = 20usize;
    let c = Case::new("f8.pho", F8_SCALE);
    // e4m3 bits: 0x38 is 1.0, 0x3c 1.5, 0x7e 448 (2 * 448 = 896 rounds to
    // e5m2's 896), 0xb8 -1.0, 0x01 2^-9.
    let p: Vec<u8> = (0..n as u8)
        .map(|i| [0x38, 0x3c, 0x7e, 0xb8, 0x01][usize::from(i) % 5])
        .collect();
    write_npy(&c.path("P.npy"), &[n as u64], &p);
    write_npy(&c.path("Q.npy"), &[n as u64], &vec![0u8; n]);
    write_npy(&c.path("X.npy"), &[n as u64], &vec![f32::NAN; n]);
    let out = c.sim(&["--arch", "sm_89", "--grid", "1"], &["P", "Q", "X"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, x) = read_npy::<f32>(&c.path("out/X.npy"));
    let (shape, q) = read_npy::<u8>(&c.path("out/Q.npy"));
    assert_eq!(shape, [n as u64]);
    let vals = [1.0f32, 1.5, 448.0, -1.0, 2f32.powi(-9)];
    // e5m2 bits of twice each: 2 = 0x40, 3 = 0x42, 896 = 0x63, -2 = 0xc0,
    // 2^-8 = 0x1c.
    let twice = [0x40u8, 0x42, 0x63, 0xc0, 0x1c];
    for i in 0..n {
        assert_eq!(x[i], vals[i % 5], "X[{i}]");
        assert_eq!(q[i], twice[i % 5], "Q[{i}]");
    }
    // A float32 array for an f8 tensor is refused, saying how f8 travels.
    write_npy(&c.path("P.npy"), &[n as u64], &vec![1.0f32; n]);
    let out = c.sim(&["--arch", "sm_89", "--grid", "1"], &["P", "Q", "X"]);
    assert_fails(&out, 2, "(f8e4m3 tensors are given as uint8 bits)");
    // Below sm_89 the conversion has no instruction: P0812.
    write_npy(&c.path("P.npy"), &[n as u64], &p);
    let out = c.sim(&["--grid", "1"], &["P", "Q", "X"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("P0812"), "{}", stderr(&out));
}
