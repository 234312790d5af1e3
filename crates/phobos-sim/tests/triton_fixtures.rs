//! The simulator against PTX that Triton wrote: a second PTX producer,
//! independent of Phobos's backend and of nvrtc. The kernels are in
//! `tests/ptx/triton/kernels.py`; `scripts/triton-fixtures.py` compiled them
//! for sm_80 and wrote the PTX (checked in unedited) and `MANIFEST` (Triton
//! version, threads per CTA, dynamic shared bytes, arguments); `--sm90`
//! compiled the GEMMs and the attention kernel for sm_90a into `sm90/`,
//! where Triton uses wgmma (fixtures `sm90/NAME`). Each fixture
//! runs with every check on, on random inputs with ragged shapes (no size a
//! multiple of the block), against an f64 reference, with a tolerance that
//! bounds the f32 rounding of the kernel's own sums (none for the integer
//! GEMM, which must be exact); the mutation tests show
//! that the comparison and the fixtures fail when a fragment rule, a
//! swizzle or the reference is wrong.

use half::{bf16, f16};
use phobos_sim::{Approx, Device, KernelArg, Launch, LaunchOptions, Module, SimError};
use rand::{rngs::StdRng, Rng, SeedableRng};

const MANIFEST: &str = include_str!("ptx/triton/MANIFEST");
const MANIFEST_SM90: &str = include_str!("ptx/triton/sm90/MANIFEST");

/// Both manifests' lines.
fn manifest_lines() -> impl Iterator<Item = &'static str> {
    MANIFEST.lines().chain(MANIFEST_SM90.lines())
}

/// Every fixture's PTX, by the name MANIFEST gives it.
const PTX: &[(&str, &str)] = &[
    (
        "matmul_64x64x32",
        include_str!("ptx/triton/matmul_64x64x32.ptx"),
    ),
    (
        "matmul_128x64x64",
        include_str!("ptx/triton/matmul_128x64x64.ptx"),
    ),
    (
        "matmul_32x32x32",
        include_str!("ptx/triton/matmul_32x32x32.ptx"),
    ),
    (
        "matmul_tf32_64x64x32",
        include_str!("ptx/triton/matmul_tf32_64x64x32.ptx"),
    ),
    (
        "matmul_i8_64x64x64",
        include_str!("ptx/triton/matmul_i8_64x64x64.ptx"),
    ),
    ("softmax", include_str!("ptx/triton/softmax.ptx")),
    (
        "softmax_3pass",
        include_str!("ptx/triton/softmax_3pass.ptx"),
    ),
    ("row_sum", include_str!("ptx/triton/row_sum.ptx")),
    ("gemv", include_str!("ptx/triton/gemv.ptx")),
    ("gemv_split", include_str!("ptx/triton/gemv_split.ptx")),
    ("layer_norm", include_str!("ptx/triton/layer_norm.ptx")),
    ("attention", include_str!("ptx/triton/attention.ptx")),
    ("cumsum", include_str!("ptx/triton/cumsum.ptx")),
    ("atomic_sum", include_str!("ptx/triton/atomic_sum.ptx")),
    (
        "sm90/matmul_64x64x32",
        include_str!("ptx/triton/sm90/matmul_64x64x32.ptx"),
    ),
    (
        "sm90/matmul_128x64x64",
        include_str!("ptx/triton/sm90/matmul_128x64x64.ptx"),
    ),
    (
        "sm90/matmul_tf32_64x64x32",
        include_str!("ptx/triton/sm90/matmul_tf32_64x64x32.ptx"),
    ),
    (
        "sm90/matmul_i8_64x64x64",
        include_str!("ptx/triton/sm90/matmul_i8_64x64x64.ptx"),
    ),
    (
        "sm90/attention",
        include_str!("ptx/triton/sm90/attention.ptx"),
    ),
];

/// One MANIFEST line: how Triton compiled the kernel and launches it.
struct Fixture {
    name: String,
    entry: String,
    threads: u32,
    shared: u32,
    /// The kernel's own arguments (`name:type`), in order; Triton appends
    /// its scratch pointers after them.
    args: Vec<(String, String)>,
    ptx: &'static str,
}

fn manifest_value<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("MANIFEST line without `{key}=`: {line}"))
}

fn fixtures() -> Vec<Fixture> {
    manifest_lines()
        .filter_map(|l| l.strip_prefix("fixture "))
        .map(|l| {
            let name = l.split_whitespace().next().expect("a name").to_string();
            let ptx = PTX
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("MANIFEST names `{name}`, which PTX does not list"))
                .1;
            Fixture {
                entry: manifest_value(l, "entry").to_string(),
                threads: manifest_value(l, "threads").parse().expect("threads"),
                shared: manifest_value(l, "shared").parse().expect("shared"),
                args: manifest_value(l, "args")
                    .split(',')
                    .map(|a| {
                        let (n, t) = a.split_once(':').expect("name:type");
                        (n.to_string(), t.to_string())
                    })
                    .collect(),
                ptx,
                name,
            }
        })
        .collect()
}

fn fixture(name: &str) -> Fixture {
    fixtures()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no fixture `{name}` in MANIFEST"))
}

/// An argument of a launch, by the kernel's parameter name.
enum Arg {
    Buf(Vec<u8>),
    I32(i32),
    F32(f32),
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Runs `fx` (its PTX text `ptx`, normally `fx.ptx`) on `grid` CTAs with
/// `args` by name; returns every buffer's contents after the launch, by name.
fn run_ptx(
    fx: &Fixture,
    ptx: &str,
    grid: u32,
    args: &[(&str, Arg)],
    opts: &LaunchOptions,
) -> Result<Vec<(String, Vec<u8>)>, SimError> {
    let module = Module::parse(ptx)?;
    let params = module.params(&fx.entry)?.len();
    assert!(params >= fx.args.len(), "{}: {params} parameters", fx.name);
    let mut dev = Device::new();
    let mut kargs = Vec::new();
    let mut bufs = Vec::new();
    for (name, ty) in &fx.args {
        let (_, a) = args
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{}: no argument `{name}`", fx.name));
        match (a, ty.starts_with('*')) {
            (Arg::Buf(b), true) => {
                let id = dev.alloc_from(name, b)?;
                bufs.push((name.clone(), id));
                kargs.push(KernelArg::Buffer(id));
            }
            (Arg::I32(v), false) => kargs.push(KernelArg::I32(*v)),
            (Arg::F32(v), false) => kargs.push(KernelArg::F32(*v)),
            _ => panic!("{}: argument `{name}` is not a {ty}", fx.name),
        }
    }
    // Triton's global and profile scratch pointers: these kernels use
    // neither.
    kargs.resize(params, KernelArg::U64(0));
    let opts = LaunchOptions {
        dynamic_shared_bytes: fx.shared,
        ..opts.clone()
    };
    dev.launch(
        Launch::new(&module, &fx.entry, [grid, 1, 1], [fx.threads, 1, 1]),
        &kargs,
        &opts,
        None,
    )?;
    bufs.into_iter()
        .map(|(n, id)| Ok((n, dev.to_vec(id)?)))
        .collect()
}

fn output(outs: &[(String, Vec<u8>)], name: &str) -> Vec<f32> {
    f32s(&outs.iter().find(|(n, _)| n == name).expect("output").1)
}

/// Compares `got[i]` with `want[i]` for every `(i, want, tol)`; the first
/// element off by more than its tolerance is the error.
fn compare(got: &[f32], want: &[(usize, f64, f64)], what: &str) -> Result<(), String> {
    let got: Vec<f64> = got.iter().map(|&g| f64::from(g)).collect();
    compare64(&got, want, what)
}

/// [`compare`] of values already in f64.
fn compare64(got: &[f64], want: &[(usize, f64, f64)], what: &str) -> Result<(), String> {
    for &(i, w, tol) in want {
        let g = got[i];
        // False for NaN, the poison of an element never written.
        let within = (g - w).abs() <= tol;
        if !within {
            return Err(format!(
                "{what}: element {i} is {g}, want {w} (tolerance {tol:e})"
            ));
        }
    }
    Ok(())
}

/// The bound on the error of an f32 sum of `n` terms whose magnitudes sum
/// to `abs`, in any order: one rounding (2^-24 relative) per addition, each
/// at most `abs`; plus the rounding of each product.
fn sum_tolerance(n: usize, abs: f64) -> f64 {
    (n as f64 + 1.0) * 2f64.powi(-24) * abs + 1e-30
}

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

fn uniform(r: &mut StdRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|_| r.gen_range(lo..hi)).collect()
}

fn pad16(n: usize) -> usize {
    n.div_ceil(16) * 16
}

// ---------------------------------------------------------------------------
// GEMM: the tutorial's tl.dot kernel (mma.sync m16n8k16 bf16, ldmatrix, a
// cp.async ring over swizzled shared tiles).

/// The element type of a GEMM fixture's A and B, by its MANIFEST type.
#[derive(Clone, Copy, PartialEq)]
enum Elem {
    /// `*bf16` into f32: one f32 rounding per k16 mma.
    Bf16,
    /// `*fp32` with `tl.dot`'s default tf32 precision: the mma reads the
    /// registers' top 19 bits (no `cvt.rna`), one f32 rounding per k8 mma.
    Tf32,
    /// `*i8` into `*i32`: exact.
    I8,
}

impl Elem {
    fn of(fx: &Fixture) -> Elem {
        let (_, ty) = fx.args.iter().find(|(n, _)| n == "a_ptr").expect("a_ptr");
        match ty.as_str() {
            "*bf16" => Elem::Bf16,
            "*fp32" => Elem::Tf32,
            "*i8" => Elem::I8,
            t => panic!("{}: no GEMM of {t}", fx.name),
        }
    }

    /// A random element as raw bits.
    fn random(self, r: &mut StdRng) -> u32 {
        match self {
            Elem::Bf16 => u32::from(bf16::from_f32(r.gen_range(-2.0..2.0)).to_bits()),
            Elem::Tf32 => r.gen_range(-2.0f32..2.0).to_bits(),
            Elem::I8 => u32::from(r.gen::<i8>() as u8),
        }
    }

    /// The value the tensor core multiplies.
    fn value(self, bits: u32) -> f64 {
        match self {
            Elem::Bf16 => bf16::from_bits(bits as u16).to_f64(),
            Elem::Tf32 => f64::from(f32::from_bits(bits & !0x1FFF)),
            Elem::I8 => f64::from(bits as u8 as i8),
        }
    }

    fn bytes(self, v: &[u32]) -> Vec<u8> {
        let size = match self {
            Elem::Bf16 => 2,
            Elem::Tf32 => 4,
            Elem::I8 => 1,
        };
        v.iter()
            .flat_map(|x| x.to_le_bytes()[..size].to_vec())
            .collect()
    }

    /// The bound on the kernel's rounding of a k-term dot product whose
    /// products' magnitudes sum to `abs`.
    fn tolerance(self, k: usize, abs: f64) -> f64 {
        match self {
            Elem::Bf16 => sum_tolerance(k / 16, abs),
            Elem::Tf32 => sum_tolerance(k / 8, abs),
            Elem::I8 => 0.0,
        }
    }
}

/// The poison C starts as, so an element the kernel failed to write (or
/// wrote though it should not) shows.
const POISON: u32 = 0x7FC0_0000;

struct Gemm {
    elem: Elem,
    m: usize,
    n: usize,
    k: usize,
    /// A and B as raw element bits.
    a: Vec<u32>,
    b: Vec<u32>,
    /// Leading dimensions (padded to 16 elements, as the kernel was
    /// specialized for strides divisible by 16).
    lda: usize,
    ldb: usize,
    ldc: usize,
}

impl Gemm {
    fn random(elem: Elem, m: usize, n: usize, k: usize, seed: u64) -> Gemm {
        assert!(
            k.is_multiple_of(16),
            "the fixtures were specialized for K % 16 == 0"
        );
        let (lda, ldb, ldc) = (pad16(k), pad16(n), pad16(n));
        let mut r = rng(seed);
        Gemm {
            elem,
            a: (0..m * lda).map(|_| elem.random(&mut r)).collect(),
            b: (0..k * ldb).map(|_| elem.random(&mut r)).collect(),
            m,
            n,
            k,
            lda,
            ldb,
            ldc,
        }
    }

    /// `(index in C, A·B in f64, tolerance)` for every element of C.
    fn reference(&self) -> Vec<(usize, f64, f64)> {
        let a = |i: usize, k: usize| self.elem.value(self.a[i * self.lda + k]);
        let b = |k: usize, j: usize| self.elem.value(self.b[k * self.ldb + j]);
        let mut out = Vec::with_capacity(self.m * self.n);
        for i in 0..self.m {
            for j in 0..self.n {
                let (mut s, mut abs) = (0.0, 0.0);
                for k in 0..self.k {
                    let p = a(i, k) * b(k, j);
                    s += p;
                    abs += p.abs();
                }
                out.push((i * self.ldc + j, s, self.elem.tolerance(self.k, abs)));
            }
        }
        out
    }

    /// C's words after the launch.
    fn run(&self, fx: &Fixture, ptx: &str) -> Result<Vec<u32>, SimError> {
        let bm = constexpr(fx, "BLOCK_SIZE_M");
        let bn = constexpr(fx, "BLOCK_SIZE_N");
        let grid = self.m.div_ceil(bm) * self.n.div_ceil(bn);
        let c: Vec<u8> = vec![POISON; self.m * self.ldc]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let i = |v: usize| Arg::I32(v as i32);
        let outs = run_ptx(
            fx,
            ptx,
            grid as u32,
            &[
                ("a_ptr", Arg::Buf(self.elem.bytes(&self.a))),
                ("b_ptr", Arg::Buf(self.elem.bytes(&self.b))),
                ("c_ptr", Arg::Buf(c)),
                ("M", i(self.m)),
                ("N", i(self.n)),
                ("K", i(self.k)),
                ("stride_am", i(self.lda)),
                ("stride_bk", i(self.ldb)),
                ("stride_cm", i(self.ldc)),
            ],
            &LaunchOptions::default(),
        )?;
        Ok(output(&outs, "c_ptr").iter().map(|x| x.to_bits()).collect())
    }

    /// C matches the reference, and the padding columns of C (masked off
    /// by the kernel) still hold the poison they started with.
    fn check(&self, name: &str, c: &[u32]) -> Result<(), String> {
        let got: Vec<f64> = c
            .iter()
            .map(|&w| match self.elem {
                Elem::I8 if w == POISON => f64::NAN,
                Elem::I8 => f64::from(w as i32),
                _ => f64::from(f32::from_bits(w)),
            })
            .collect();
        compare64(&got, &self.reference(), name)?;
        for i in 0..self.m {
            for j in self.n..self.ldc {
                if c[i * self.ldc + j] != POISON {
                    return Err(format!("{name}: padding C[{i}][{j}] was written"));
                }
            }
        }
        Ok(())
    }
}

/// A constexpr the fixture was compiled with, from MANIFEST.
fn constexpr(fx: &Fixture, key: &str) -> usize {
    let line = manifest_lines()
        .find(|l| l.starts_with(&format!("fixture {} ", fx.name)))
        .expect("manifest line");
    manifest_value(line, "constexprs")
        .split(',')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("{}: no constexpr {key}", fx.name))
        .parse()
        .expect("a number")
}

fn gemm_matches(name: &str, shapes: &[(usize, usize, usize)]) {
    let fx = fixture(name);
    for (s, &(m, n, k)) in shapes.iter().enumerate() {
        let g = Gemm::random(Elem::of(&fx), m, n, k, 100 + s as u64);
        let c = g
            .run(&fx, fx.ptx)
            .unwrap_or_else(|e| panic!("{name} {m}x{n}x{k}: {e}"));
        g.check(name, &c)
            .unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
    }
}

#[test]
fn matmul_64x64x32_matches_the_reference() {
    // M and N not multiples of the tile; K a multiple of 16, not of 32.
    gemm_matches(
        "matmul_64x64x32",
        &[(200, 136, 176), (64, 72, 32), (250, 262, 256)],
    );
}

#[test]
fn matmul_128x64x64_matches_the_reference() {
    gemm_matches("matmul_128x64x64", &[(136, 100, 208), (257, 255, 240)]);
}

#[test]
fn sm90_wgmma_matmuls_match_the_reference() {
    gemm_matches(
        "sm90/matmul_64x64x32",
        &[(200, 136, 176), (64, 72, 32), (250, 262, 256)],
    );
    gemm_matches("sm90/matmul_128x64x64", &[(136, 100, 208), (257, 255, 240)]);
    gemm_matches(
        "sm90/matmul_tf32_64x64x32",
        &[(100, 136, 176), (250, 262, 96)],
    );
    gemm_matches(
        "sm90/matmul_i8_64x64x64",
        &[(100, 136, 176), (250, 262, 96)],
    );
}

#[test]
fn tf32_matmul_matches_the_reference() {
    gemm_matches("matmul_tf32_64x64x32", &[(100, 136, 176), (250, 262, 96)]);
}

#[test]
fn i8_matmul_is_exact() {
    gemm_matches("matmul_i8_64x64x64", &[(100, 136, 176), (250, 262, 96)]);
}

#[test]
fn matmul_32x32x32_matches_the_reference() {
    gemm_matches("matmul_32x32x32", &[(77, 45, 144), (255, 257, 96)]);
}

// ---------------------------------------------------------------------------
// Reductions: softmax (the tutorial's, and a three-pass one for rows longer
// than a block), a row sum and two GEMVs.

/// Softmax of each row of `x` (`rows` × `cols`, leading dimension `ld`):
/// `(index, value, tolerance)`. The kernel's exp is `ex2.approx` of
/// `x·log2(e)`, its sum an f32 sum and its division `div.full`: a relative
/// error of a few hundred ulps at most for these row lengths.
fn softmax_reference(x: &[f32], rows: usize, cols: usize, ld: usize) -> Vec<(usize, f64, f64)> {
    let mut out = Vec::new();
    for r in 0..rows {
        let row = &x[r * ld..r * ld + cols];
        let max = row
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let e: Vec<f64> = row.iter().map(|&v| (f64::from(v) - max).exp()).collect();
        let sum: f64 = e.iter().sum();
        for (c, v) in e.iter().enumerate() {
            let want = v / sum;
            out.push((
                r * ld + c,
                want,
                want * (cols as f64 + 16.0) * 2f64.powi(-23),
            ));
        }
    }
    out
}

fn softmax_run(
    fx: &Fixture,
    ptx: &str,
    seed: u64,
    opts: &LaunchOptions,
) -> Result<Result<(), String>, SimError> {
    let (rows, cols, ld) = (37, 200, 208);
    let programs = 16;
    let x = uniform(&mut rng(seed), rows * ld, -4.0, 4.0);
    let outs = run_ptx(
        fx,
        ptx,
        programs,
        &[
            (
                "output_ptr",
                Arg::Buf(f32_bytes(&vec![f32::NAN; rows * ld])),
            ),
            ("input_ptr", Arg::Buf(f32_bytes(&x))),
            ("input_row_stride", Arg::I32(ld as i32)),
            ("output_row_stride", Arg::I32(ld as i32)),
            ("n_rows", Arg::I32(rows as i32)),
            ("n_cols", Arg::I32(cols as i32)),
        ],
        opts,
    )?;
    let y = output(&outs, "output_ptr");
    Ok(compare(
        &y,
        &softmax_reference(&x, rows, cols, ld),
        &fx.name,
    ))
}

#[test]
fn softmax_matches_the_reference() {
    let fx = fixture("softmax");
    // `ex2.approx` correctly rounded, and off by its documented 2 ulp.
    let worst = LaunchOptions {
        approx: Approx::WorstCase,
        ..LaunchOptions::default()
    };
    for (seed, opts) in [(0, LaunchOptions::default()), (1, worst)] {
        softmax_run(&fx, fx.ptx, seed, &opts)
            .unwrap_or_else(|e| panic!("softmax: {e}"))
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn three_pass_softmax_matches_the_reference() {
    let fx = fixture("softmax_3pass");
    let (rows, cols, ld) = (9, 333, 336);
    let x = uniform(&mut rng(7), rows * ld, -6.0, 6.0);
    let outs = run_ptx(
        &fx,
        fx.ptx,
        rows as u32,
        &[
            (
                "output_ptr",
                Arg::Buf(f32_bytes(&vec![f32::NAN; rows * ld])),
            ),
            ("input_ptr", Arg::Buf(f32_bytes(&x))),
            ("row_stride", Arg::I32(ld as i32)),
            ("n_cols", Arg::I32(cols as i32)),
        ],
        &LaunchOptions::default(),
    )
    .unwrap_or_else(|e| panic!("softmax_3pass: {e}"));
    let y = output(&outs, "output_ptr");
    compare(&y, &softmax_reference(&x, rows, cols, ld), "softmax_3pass")
        .unwrap_or_else(|e| panic!("{e}"));
}

/// `y[r] = Σ_c w[r][c]·x[c]` (or the plain row sum when `x` is `None`):
/// `(r, value, tolerance)`.
fn row_dot_reference(
    w: &[f32],
    x: Option<&[f32]>,
    rows: usize,
    cols: usize,
    ld: usize,
) -> Vec<(usize, f64, f64)> {
    (0..rows)
        .map(|r| {
            let terms =
                (0..cols).map(|c| f64::from(w[r * ld + c]) * x.map_or(1.0, |x| f64::from(x[c])));
            let (s, abs) = terms.fold((0.0, 0.0), |(s, a), t| (s + t, a + t.abs()));
            (r, s, sum_tolerance(cols, abs))
        })
        .collect()
}

#[test]
fn row_sum_matches_the_reference() {
    let fx = fixture("row_sum");
    let (rows, cols, ld) = (45, 150, 160);
    let x = uniform(&mut rng(11), rows * ld, -1.0, 1.0);
    let grid = rows.div_ceil(constexpr(&fx, "BLOCK_R"));
    let outs = run_ptx(
        &fx,
        fx.ptx,
        grid as u32,
        &[
            ("x_ptr", Arg::Buf(f32_bytes(&x))),
            ("y_ptr", Arg::Buf(f32_bytes(&vec![f32::NAN; rows]))),
            ("n_rows", Arg::I32(rows as i32)),
            ("n_cols", Arg::I32(cols as i32)),
            ("stride", Arg::I32(ld as i32)),
        ],
        &LaunchOptions::default(),
    )
    .unwrap_or_else(|e| panic!("row_sum: {e}"));
    let y = output(&outs, "y_ptr");
    compare(&y, &row_dot_reference(&x, None, rows, cols, ld), "row_sum")
        .unwrap_or_else(|e| panic!("{e}"));
}

fn gemv_run(name: &str, rows: usize, cols: usize, seed: u64) {
    let fx = fixture(name);
    let ld = pad16(cols);
    let mut r = rng(seed);
    let w = uniform(&mut r, rows * ld, -1.0, 1.0);
    let x = uniform(&mut r, cols, -1.0, 1.0);
    let grid = if name == "gemv" {
        rows.div_ceil(constexpr(&fx, "BLOCK_R"))
    } else {
        rows
    };
    let outs = run_ptx(
        &fx,
        fx.ptx,
        grid as u32,
        &[
            ("w_ptr", Arg::Buf(f32_bytes(&w))),
            ("x_ptr", Arg::Buf(f32_bytes(&x))),
            ("y_ptr", Arg::Buf(f32_bytes(&vec![f32::NAN; rows]))),
            ("n_rows", Arg::I32(rows as i32)),
            ("n_cols", Arg::I32(cols as i32)),
            ("stride", Arg::I32(ld as i32)),
        ],
        &LaunchOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    let y = output(&outs, "y_ptr");
    compare(&y, &row_dot_reference(&w, Some(&x), rows, cols, ld), name)
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn gemv_matches_the_reference() {
    gemv_run("gemv", 37, 300, 21);
}

#[test]
fn gemv_with_a_cta_wide_reduction_matches_the_reference() {
    gemv_run("gemv_split", 19, 600, 22);
}

#[test]
fn layer_norm_matches_the_reference() {
    let fx = fixture("layer_norm");
    let (rows, cols, ld) = (7, 1000, 1008);
    let eps = 1e-5f32;
    let mut r = rng(31);
    let x: Vec<f32> = uniform(&mut r, rows * ld, -2.0, 2.0)
        .iter()
        .map(|v| v + 0.5)
        .collect();
    let w = uniform(&mut r, cols, 0.5, 1.5);
    let b = uniform(&mut r, cols, -1.0, 1.0);
    let outs = run_ptx(
        &fx,
        fx.ptx,
        rows as u32,
        &[
            ("x_ptr", Arg::Buf(f32_bytes(&x))),
            ("y_ptr", Arg::Buf(f32_bytes(&vec![f32::NAN; rows * ld]))),
            ("w_ptr", Arg::Buf(f32_bytes(&w))),
            ("b_ptr", Arg::Buf(f32_bytes(&b))),
            ("stride", Arg::I32(ld as i32)),
            ("n_cols", Arg::I32(cols as i32)),
            ("eps", Arg::F32(eps)),
        ],
        &LaunchOptions::default(),
    )
    .unwrap_or_else(|e| panic!("layer_norm: {e}"));
    let y = output(&outs, "y_ptr");
    let n = cols as f64;
    let mut want = Vec::new();
    for row in 0..rows {
        let xs: Vec<f64> = x[row * ld..row * ld + cols]
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        let rstd = 1.0 / (var + f64::from(eps)).sqrt();
        // The f32 mean is off by at most (n+1)·2^-24·Σ|x|/n; the variance,
        // the square root and the division by a few hundred ulps.
        let e_mean = (n + 1.0) * 2f64.powi(-24) * xs.iter().map(|v| v.abs()).sum::<f64>() / n;
        for c in 0..cols {
            let (wc, bc) = (f64::from(w[c]), f64::from(b[c]));
            let v = (xs[c] - mean) * rstd * wc + bc;
            let tol = wc * rstd * (e_mean + (xs[c] - mean).abs() * (n + 16.0) * 2f64.powi(-22))
                + v.abs() * 2f64.powi(-22)
                + 1e-6;
            want.push((row * ld + c, v, tol));
        }
    }
    compare(&y, &want, "layer_norm").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn attention_matches_the_reference() {
    attention_matches("attention");
}

#[test]
fn sm90_wgmma_attention_matches_the_reference() {
    attention_matches("sm90/attention");
}

fn attention_matches(name: &str) {
    let fx = fixture(name);
    let d = constexpr(&fx, "HEAD_DIM");
    let (n_ctx, ld, scale) = (100, 64, 0.125f32);
    assert_eq!(d, ld);
    let mut r = rng(41);
    let mut half = |len: usize| -> Vec<u16> {
        (0..len)
            .map(|_| f16::from_f32(r.gen_range(-1.0..1.0)).to_bits())
            .collect()
    };
    let (q, k, v) = (half(n_ctx * ld), half(n_ctx * ld), half(n_ctx * ld));
    let bits = |x: &[u16]| -> Vec<u8> { x.iter().flat_map(|b| b.to_le_bytes()).collect() };
    let grid = n_ctx.div_ceil(constexpr(&fx, "BLOCK_M"));
    let outs = run_ptx(
        &fx,
        fx.ptx,
        grid as u32,
        &[
            ("q_ptr", Arg::Buf(bits(&q))),
            ("k_ptr", Arg::Buf(bits(&k))),
            ("v_ptr", Arg::Buf(bits(&v))),
            // Exactly n_ctx rows: memcheck sees any unmasked access past them.
            ("o_ptr", Arg::Buf(f32_bytes(&vec![f32::NAN; n_ctx * ld]))),
            ("n_ctx", Arg::I32(n_ctx as i32)),
            ("stride", Arg::I32(ld as i32)),
            ("sm_scale", Arg::F32(scale)),
        ],
        &LaunchOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    let o = output(&outs, "o_ptr");
    let h = |x: &[u16], i: usize, j: usize| f16::from_bits(x[i * ld + j]).to_f64();
    let vmax = (0..n_ctx * ld)
        .map(|i| f16::from_bits(v[i]).to_f64().abs())
        .fold(0.0, f64::max);
    let mut want = Vec::new();
    for i in 0..n_ctx {
        let s: Vec<f64> = (0..n_ctx)
            .map(|j| (0..d).map(|c| h(&q, i, c) * h(&k, j, c)).sum::<f64>() * f64::from(scale))
            .collect();
        let max = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let p: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
        let l: f64 = p.iter().sum();
        for c in 0..d {
            let val = (0..n_ctx).map(|j| p[j] * h(&v, j, c)).sum::<f64>() / l;
            // P is rounded to f16 (2^-11 relative) before P·V.
            want.push((i * ld + c, val, vmax * 2f64.powi(-10) + 1e-6));
        }
    }
    compare(&o, &want, name).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn cumsum_matches_the_reference() {
    let fx = fixture("cumsum");
    let (rows, cols, ld) = (5, 300, 304);
    let x = uniform(&mut rng(51), rows * ld, -1.0, 1.0);
    let outs = run_ptx(
        &fx,
        fx.ptx,
        rows as u32,
        &[
            ("x_ptr", Arg::Buf(f32_bytes(&x))),
            ("y_ptr", Arg::Buf(f32_bytes(&vec![f32::NAN; rows * ld]))),
            ("n_cols", Arg::I32(cols as i32)),
            ("stride", Arg::I32(ld as i32)),
        ],
        &LaunchOptions::default(),
    )
    .unwrap_or_else(|e| panic!("cumsum: {e}"));
    let y = output(&outs, "y_ptr");
    let mut want = Vec::new();
    for r in 0..rows {
        let (mut s, mut abs) = (0.0, 0.0);
        for c in 0..cols {
            let v = f64::from(x[r * ld + c]);
            s += v;
            abs += v.abs();
            want.push((r * ld + c, s, sum_tolerance(c + 1, abs)));
        }
        // Past n_cols nothing is written.
        for c in cols..ld {
            assert!(y[r * ld + c].is_nan(), "cumsum wrote y[{r}][{c}]");
        }
    }
    compare(&y, &want, "cumsum").unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn atomic_sum_matches_the_reference() {
    let fx = fixture("atomic_sum");
    let n = 10_000;
    let x = uniform(&mut rng(61), n, -1.0, 1.0);
    let grid = n.div_ceil(constexpr(&fx, "BLOCK"));
    let outs = run_ptx(
        &fx,
        fx.ptx,
        grid as u32,
        &[
            ("x_ptr", Arg::Buf(f32_bytes(&x))),
            ("y_ptr", Arg::Buf(f32_bytes(&[0.0]))),
            ("n", Arg::I32(n as i32)),
        ],
        &LaunchOptions::default(),
    )
    .unwrap_or_else(|e| panic!("atomic_sum: {e}"));
    let y = output(&outs, "y_ptr");
    let xs = x.iter().map(|&v| f64::from(v));
    let (s, abs) = xs.fold((0.0, 0.0), |(s, a), v| (s + v, a + v.abs()));
    // One program per block adds in whatever order the CTAs run.
    compare(&y, &[(0, s, sum_tolerance(n, abs))], "atomic_sum").unwrap_or_else(|e| panic!("{e}"));
}

// ---------------------------------------------------------------------------
// The fixtures can fail.

#[test]
fn manifest_and_fixtures_agree() {
    let fxs = fixtures();
    assert_eq!(
        fxs.len(),
        PTX.len(),
        "MANIFEST and PTX list the same fixtures"
    );
    let version = MANIFEST
        .lines()
        .find_map(|l| l.strip_prefix("triton "))
        .expect("the Triton version");
    for fx in &fxs {
        assert!(
            fx.ptx
                .lines()
                .next()
                .is_some_and(|l| l.contains(&format!("Triton {version} "))),
            "{}: the PTX header names Triton {version}",
            fx.name
        );
        let target = if fx.name.starts_with("sm90/") {
            ".target sm_90a"
        } else {
            ".target sm_80"
        };
        assert!(fx.ptx.contains(target), "{}", fx.name);
        Module::parse(fx.ptx).unwrap_or_else(|e| panic!("{}: {e}", fx.name));
    }
}

#[test]
fn a_wrong_reference_fails_the_comparison() {
    // The tolerances are tight enough that one GEMM element off by a
    // bf16 ulp of one product, or a softmax value off by 1e-4, fails.
    let fx = fixture("matmul_32x32x32");
    let g = Gemm::random(Elem::Bf16, 40, 24, 32, 5);
    let c = g.run(&fx, fx.ptx).expect("runs");
    g.check("matmul", &c).expect("the real reference matches");
    let mut wrong = g.reference();
    wrong[17].1 += 2f64.powi(-8);
    let got: Vec<f64> = c.iter().map(|&w| f64::from(f32::from_bits(w))).collect();
    assert!(compare64(&got, &wrong, "matmul").is_err());
    // A transposed B is a different product.
    let mut t = Gemm::random(Elem::Bf16, 24, 24, 32, 6);
    let c = t.run(&fx, fx.ptx).expect("runs");
    for k in 0..24 {
        for j in 0..k {
            t.b.swap(k * t.ldb + j, j * t.ldb + k);
        }
    }
    assert!(t.check("matmul", &c).is_err());
}

/// The PTX with the first two registers of operand `which` (1: A, 2: B)
/// of every `mma.sync` swapped. On a correct simulator this computes what
/// the original PTX computes on a simulator with a wrong fragment rule: for
/// A, rows `g` and `g + 8` exchanged; for B, rows `2t..` and `2t + 8..`.
fn swap_mma_fragment(ptx: &str, which: usize) -> String {
    let mut n = 0;
    let out = ptx
        .lines()
        .map(|l| {
            if !l.trim_start().starts_with("mma.sync") {
                return l.to_string();
            }
            // `mma... { d0, .. }, { a0, .. }, { b0, b1 }, { c0, .. };`
            let open = l.match_indices('{').nth(which).expect("the operand").0;
            let close = open + l[open..].find('}').expect("its end");
            let mut regs: Vec<&str> = l[open + 1..close].split(',').map(str::trim).collect();
            regs.swap(0, 1);
            n += 1;
            format!("{}{{ {} }}{}", &l[..open], regs.join(", "), &l[close + 1..])
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(n > 0, "no mma.sync to mutate");
    out
}

#[test]
fn a_wrong_fragment_rule_fails_the_gemm() {
    let fx = fixture("matmul_64x64x32");
    let g = Gemm::random(Elem::Bf16, 64, 64, 64, 9);
    for (which, operand) in [(1, "A"), (2, "B")] {
        let c = g
            .run(&fx, &swap_mma_fragment(fx.ptx, which))
            .expect("the mutant runs");
        assert!(
            g.check("mutant", &c).is_err(),
            "the mutant with {operand}'s fragment rows swapped matched"
        );
    }
}

/// The PTX with the first `xor.b32` (the swizzle of the first cp.async's
/// shared address: the row's phase XORed into the 16-byte chunk index)
/// turned into a `mov` of its unswizzled operand.
fn drop_cp_async_swizzle(ptx: &str) -> String {
    let lines: Vec<&str> = ptx.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.trim_start().starts_with("xor.b32"))
        .expect("a swizzle");
    assert!(
        lines[i..i + 8].iter().any(|l| l.contains("cp.async")),
        "the first xor.b32 no longer feeds a cp.async: {}",
        lines[i]
    );
    let ops: Vec<&str> = lines[i]
        .trim()
        .trim_start_matches("xor.b32")
        .trim_end_matches(';')
        .split(',')
        .map(str::trim)
        .collect();
    let mov = format!("\tmov.b32 \t{}, {};", ops[0], ops[1]);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out[i] = mov;
    out.join("\n")
}

#[test]
fn a_wrong_swizzle_fails_the_gemm() {
    // The shared tiles are XOR-swizzled: the cp.async and ldmatrix
    // addresses XOR a row-dependent phase into the 16-byte chunk index.
    // Dropping the phase on the cp.async side only (the reads no longer
    // match the writes) must be caught, by a mismatch or by a check.
    let fx = fixture("matmul_64x64x32");
    let mutant = drop_cp_async_swizzle(fx.ptx);
    let g = Gemm::random(Elem::Bf16, 64, 64, 64, 10);
    match g.run(&fx, &mutant) {
        Ok(c) => assert!(g.check("mutant", &c).is_err(), "the mutant matched"),
        Err(e) => assert!(e.report().is_some(), "{e}"),
    }
}

#[test]
fn a_race_in_inlined_triton_code_names_the_kernels_line() {
    // Each lane stores its lane id instead of the warp's maximum to the
    // warp's shared word: a real write-after-write race, in code Triton
    // inlined from `tl.max` (standard.py) into the kernel.
    let fx = fixture("softmax");
    let lines: Vec<&str> = fx.ptx.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.trim_start().starts_with("st.shared.b32"))
        .expect("the store of the warp's maximum");
    let value = lines[i]
        .rsplit(',')
        .next()
        .expect("its value")
        .trim()
        .trim_end_matches(';');
    let mut mutant: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    mutant.insert(i, format!("\tmov.u32 \t{value}, %laneid;"));
    let err = softmax_run(&fx, &mutant.join("\n"), 0, &LaunchOptions::default())
        .expect_err("the race is reported");
    let r = err.report().unwrap_or_else(|| panic!("{err}"));
    assert!(r.message.contains("write-after-write"), "{err}");
    let src = r.source.clone().expect("a source position");
    assert!(src.file.ends_with("triton/language/standard.py"), "{err}");
    // The call site in kernels.py, found by its text.
    const KERNELS: &str = include_str!("ptx/triton/kernels.py");
    let call = "row - tl.max(row, axis=0)";
    let (n, text) = KERNELS
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(call))
        .expect("the call");
    let col = text.find("tl.max").expect("tl.max") + 1;
    let note = r.notes.first().expect("the inlining note");
    assert!(note.starts_with("inlined at "), "{err}");
    assert!(
        note.ends_with(&format!("kernels.py:{}:{col}", n + 1)),
        "{err}"
    );
}
