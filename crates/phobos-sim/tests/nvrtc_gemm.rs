//! The hand-written CUDA C reference GEMM of issue 30
//! (`tests/ptx/gemm/gemm_bf16_128x128x32.cu`: a 128 x 128 tile per CTA of
//! 8 warps, a 3-stage cp.async ring into XOR-swizzled shared memory,
//! `ldmatrix` / `ldmatrix.trans` and `mma.sync.m16n8k16` bf16 with f32
//! accumulators), compiled by NVIDIA's nvrtc for sm_80
//! (`scripts/nvrtc-fixtures.py gemm`), run whole in the simulator on random
//! bf16 inputs and compared with an f64 product. It is the reference row of
//! `scripts/sass-loop-report.py`; running it here checks that what that
//! row measures computes a GEMM (and that its barriers and async-copy waits
//! pass the simulator's race checks).

use half::bf16;
use phobos_sim::{Device, KernelArg, Launch, LaunchOptions, Module};
use rand::{rngs::StdRng, Rng, SeedableRng};

const PTX: &str = include_str!("ptx/gemm/gemm_bf16_128x128x32.sm_80.ptx");
const KERNEL: &str = "gemm_bf16_128x128x32";

fn to_bytes16(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Runs the kernel on `m x k` A and `k x n` B (bf16 bits, row-major);
/// returns C (f32, row-major).
fn gemm(a: &[u16], b: &[u16], m: usize, k: usize, n: usize) -> Vec<f32> {
    let module = Module::parse(PTX).expect("nvrtc's PTX parses");
    let mut dev = Device::new();
    let ia = dev.alloc_from("A", &to_bytes16(a)).expect("alloc A");
    let ib = dev.alloc_from("B", &to_bytes16(b)).expect("alloc B");
    let ic = dev.alloc_from("C", &vec![0u8; m * n * 4]).expect("alloc C");
    let dim = |x: usize| KernelArg::I32(i32::try_from(x).expect("dimension fits i32"));
    let args = [
        KernelArg::Buffer(ia),
        KernelArg::Buffer(ib),
        KernelArg::Buffer(ic),
        dim(m),
        dim(k),
        dim(n),
    ];
    let grid = [(n / 128) as u32, (m / 128) as u32, 1];
    dev.launch(
        Launch::new(&module, KERNEL, grid, [256, 1, 1]),
        &args,
        &LaunchOptions::default(),
        None,
    )
    .unwrap_or_else(|e| panic!("{KERNEL}: {e}"));
    dev.to_vec(ic)
        .expect("read C")
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn random_bf16(rng: &mut StdRng, len: usize) -> Vec<u16> {
    (0..len)
        .map(|_| bf16::from_f32(rng.gen_range(-2.0f32..2.0)).to_bits())
        .collect()
}

/// Checks C against the f64 product. bf16 products are exact in f32, so
/// the only error is f32 accumulation over K terms in whatever order the
/// tensor cores add: at most K * 2^-24 * sum |a b| for any order (the
/// recursive-summation bound, first order); the test allows twice that.
fn check(a: &[u16], b: &[u16], c: &[f32], m: usize, k: usize, n: usize) {
    let f = |x: u16| bf16::from_bits(x).to_f64();
    let mut worst = 0f64;
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut mag) = (0f64, 0f64);
            for kk in 0..k {
                let p = f(a[i * k + kk]) * f(b[kk * n + j]);
                exact += p;
                mag += p.abs();
            }
            let bound = 2.0 * k as f64 * 2f64.powi(-24) * mag;
            let err = (f64::from(c[i * n + j]) - exact).abs();
            assert!(
                err <= bound,
                "C[{i}][{j}] = {}, want {exact} (error {err:e} > bound {bound:e})",
                c[i * n + j]
            );
            worst = worst.max(err / bound.max(f64::MIN_POSITIVE));
        }
    }
    eprintln!("{m}x{k}x{n}: worst error {:.3} of the bound", worst);
}

/// One CTA, four K steps: the prologue fills two stages, the loop's first
/// prefetch fills the third and the ring wraps to stage 0 on the fourth.
#[test]
fn reference_gemm_matches_f64_on_one_tile() {
    let (m, k, n) = (128, 128, 128);
    let mut rng = StdRng::seed_from_u64(30);
    let a = random_bf16(&mut rng, m * k);
    let b = random_bf16(&mut rng, k * n);
    let c = gemm(&a, &b, m, k, n);
    check(&a, &b, &c, m, k, n);
}

/// Two CTAs side by side in N and K shorter than the ring: each CTA finds
/// its columns through blockIdx.x, and the loop's prefetch never runs.
#[test]
fn reference_gemm_places_ctas_by_block_index() {
    let (m, k, n) = (128, 32, 256);
    let mut rng = StdRng::seed_from_u64(31);
    let a = random_bf16(&mut rng, m * k);
    let b = random_bf16(&mut rng, k * n);
    let c = gemm(&a, &b, m, k, n);
    check(&a, &b, &c, m, k, n);
}
