//! `wgmma` (sm_90a) checked against PTX that NVIDIA's nvrtc compiled from
//! CUDA C (`tests/ptx/hopper/wgmma_fixtures.cu`, written by
//! `gen_wgmma_fixtures.py` beside it, compiled by `scripts/nvrtc-fixtures.py
//! wgmma`). The CUDA C stages A and B into shared memory in the layouts a
//! TMA box write makes (swizzled rows), builds the matrix descriptors and
//! places fragments by the PTX ISA, independently of the simulator's
//! descriptor decoding; results are compared with f64 references on random
//! inputs.

use half::{bf16, f16};
use phobos_sim::{Device, KernelArg, Launch, LaunchOptions, Module, SimError};
use rand::{rngs::StdRng, Rng, SeedableRng};

const PTX: &str = include_str!("ptx/hopper/wgmma_fixtures.ptx");

#[derive(Clone, Copy, PartialEq, Debug)]
enum El {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
    S8,
    U8,
}

impl El {
    fn bytes(self) -> usize {
        match self {
            El::F16 | El::Bf16 => 2,
            El::Tf32 => 4,
            El::E4m3 | El::E5m2 | El::S8 | El::U8 => 1,
        }
    }

    /// A random element's bits (no NaN or infinity, within ±2) and value.
    fn random(self, rng: &mut StdRng) -> (u32, f64) {
        let v: f32 = rng.gen_range(-2.0..2.0);
        match self {
            El::F16 => {
                let h = f16::from_f32(v);
                (u32::from(h.to_bits()), h.to_f64())
            }
            El::Bf16 => {
                let h = bf16::from_f32(v);
                (u32::from(h.to_bits()), h.to_f64())
            }
            El::Tf32 => {
                let b = v.to_bits() & 0xFFFF_E000;
                (b, f64::from(f32::from_bits(b)))
            }
            El::S8 => {
                let b: u8 = rng.gen();
                (u32::from(b), f64::from(b as i8))
            }
            El::U8 => {
                let b: u8 = rng.gen();
                (u32::from(b), f64::from(b))
            }
            El::E4m3 | El::E5m2 => loop {
                let b: u8 = rng.gen();
                // Within ±2 like the other types, so f16 sums stay finite.
                if let Some(x) = fp8(self, b).filter(|x| x.abs() <= 2.0) {
                    break (u32::from(b), x);
                }
            },
        }
    }
}

/// FP8 decoding written from the formats' definitions (e4m3: bias 7, no
/// infinities, S.1111.111 is NaN; e5m2: bias 15, IEEE-style specials);
/// `None` for NaN and infinity.
fn fp8(t: El, b: u8) -> Option<f64> {
    let (eb, mb, bias) = if t == El::E4m3 { (4, 3, 7) } else { (5, 2, 15) };
    let e = i32::from(b >> mb) & ((1 << eb) - 1);
    let m = f64::from(b & ((1 << mb) - 1));
    let s = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    match t {
        El::E4m3 if e == 15 && m == 7.0 => return None,
        El::E5m2 if e == 31 => return None,
        _ => {}
    }
    let scale = f64::from(1u32 << mb);
    Some(if e == 0 {
        s * m / scale * 2f64.powi(1 - bias)
    } else {
        s * (1.0 + m / scale) * 2f64.powi(e - bias)
    })
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Acc {
    F32,
    F16,
    S32,
}

struct Case {
    kernel: &'static str,
    a: El,
    b: El,
    d: Acc,
    n: usize,
    k: usize,
    /// imm-scale-a × imm-scale-b.
    sign: f64,
}

const CASES: &[Case] = &[
    Case {
        kernel: "wg_m64n8k16_f16_sw128",
        a: El::F16,
        b: El::F16,
        d: Acc::F32,
        n: 8,
        k: 64,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n64k16_bf16_none",
        a: El::Bf16,
        b: El::Bf16,
        d: Acc::F32,
        n: 64,
        k: 32,
        sign: -1.0,
    },
    Case {
        kernel: "wg_m64n128k16_f16_sw128_bmn",
        a: El::F16,
        b: El::F16,
        d: Acc::F32,
        n: 128,
        k: 64,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n256k16_bf16_sw128",
        a: El::Bf16,
        b: El::Bf16,
        d: Acc::F32,
        n: 256,
        k: 64,
        sign: -1.0,
    },
    Case {
        kernel: "wg_m64n64k16_f16_amn_sw128",
        a: El::F16,
        b: El::F16,
        d: Acc::F32,
        n: 64,
        k: 16,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n32k8_tf32_sw128",
        a: El::Tf32,
        b: El::Tf32,
        d: Acc::F32,
        n: 32,
        k: 32,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n64k16_f16_aregs_sw32",
        a: El::F16,
        b: El::F16,
        d: Acc::F32,
        n: 64,
        k: 16,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n32k16_f16acc_sw64",
        a: El::F16,
        b: El::F16,
        d: Acc::F16,
        n: 32,
        k: 32,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n32k32_e4m3_sw128",
        a: El::E4m3,
        b: El::E4m3,
        d: Acc::F32,
        n: 32,
        k: 128,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n16k32_e5m2_e4m3_none",
        a: El::E5m2,
        b: El::E4m3,
        d: Acc::F32,
        n: 16,
        k: 64,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n24k16_f16_mn_none",
        a: El::F16,
        b: El::F16,
        d: Acc::F32,
        n: 24,
        k: 32,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n40k32_e4m3_f16acc_sw64",
        a: El::E4m3,
        b: El::E4m3,
        d: Acc::F16,
        n: 40,
        k: 64,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n48k32_s8_u8_sw128",
        a: El::S8,
        b: El::U8,
        d: Acc::S32,
        n: 48,
        k: 128,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n16k8_tf32_aregs_sw32",
        a: El::Tf32,
        b: El::Tf32,
        d: Acc::F32,
        n: 16,
        k: 8,
        sign: 1.0,
    },
    Case {
        kernel: "wg_m64n32k32_e4m3_aregs_none",
        a: El::E4m3,
        b: El::E4m3,
        d: Acc::F32,
        n: 32,
        k: 64,
        sign: 1.0,
    },
];

fn pack(bits: &[u32], bytes: usize) -> Vec<u8> {
    bits.iter()
        .flat_map(|&b| b.to_le_bytes()[..bytes].to_vec())
        .collect()
}

/// Runs one case with `accumulate`; returns D, the f64 reference and the
/// sum of the magnitudes of its terms.
#[allow(clippy::type_complexity)]
fn run_case(
    c: &Case,
    accumulate: bool,
    seed: u64,
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>), SimError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let (a_bits, a): (Vec<u32>, Vec<f64>) = (0..64 * c.k).map(|_| c.a.random(&mut rng)).unzip();
    let (b_bits, b): (Vec<u32>, Vec<f64>) = (0..c.k * c.n).map(|_| c.b.random(&mut rng)).unzip();
    let (c_bytes, cv): (Vec<u8>, Vec<f64>) = if c.d == Acc::S32 {
        let v: Vec<i32> = (0..64 * c.n)
            .map(|_| rng.gen_range(-1 << 20..1 << 20))
            .collect();
        (
            v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            v.iter().map(|&x| f64::from(x)).collect(),
        )
    } else if c.d == Acc::F16 {
        let h: Vec<f16> = (0..64 * c.n)
            .map(|_| f16::from_f32(rng.gen_range(-4.0..4.0)))
            .collect();
        (
            h.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
            h.iter().map(|x| x.to_f64()).collect(),
        )
    } else {
        let f: Vec<f32> = (0..64 * c.n).map(|_| rng.gen_range(-4.0..4.0)).collect();
        (
            f.iter().flat_map(|x| x.to_le_bytes()).collect(),
            f.iter().map(|&x| f64::from(x)).collect(),
        )
    };
    let module = Module::parse(PTX)?;
    let mut dev = Device::new();
    let ab = dev.alloc_from("A", &pack(&a_bits, c.a.bytes()))?;
    let bb = dev.alloc_from("B", &pack(&b_bits, c.b.bytes()))?;
    let cb = dev.alloc_from("C", &c_bytes)?;
    let db = dev.alloc_from("D", &vec![0u8; c_bytes.len()])?;
    let args = [
        KernelArg::Buffer(ab),
        KernelArg::Buffer(bb),
        KernelArg::Buffer(cb),
        KernelArg::Buffer(db),
        KernelArg::I32(i32::from(accumulate)),
    ];
    dev.launch(
        Launch::new(&module, c.kernel, [1, 1, 1], [128, 1, 1]),
        &args,
        &LaunchOptions::default(),
        None,
    )?;
    let out = dev.to_vec(db)?;
    let got: Vec<f64> = if c.d == Acc::S32 {
        out.chunks_exact(4)
            .map(|x| f64::from(i32::from_le_bytes([x[0], x[1], x[2], x[3]])))
            .collect()
    } else if c.d == Acc::F16 {
        out.chunks_exact(2)
            .map(|x| f16::from_le_bytes([x[0], x[1]]).to_f64())
            .collect()
    } else {
        out.chunks_exact(4)
            .map(|x| f64::from(f32::from_le_bytes([x[0], x[1], x[2], x[3]])))
            .collect()
    };
    let mut want = vec![0f64; 64 * c.n];
    let mut size = vec![0f64; 64 * c.n];
    for i in 0..64 {
        for j in 0..c.n {
            let mut s = if accumulate { cv[i * c.n + j] } else { 0.0 };
            let mut m = s.abs();
            for kk in 0..c.k {
                let p = c.sign * a[i * c.k + kk] * b[kk * c.n + j];
                s += p;
                m += p.abs();
            }
            want[i * c.n + j] = s;
            size[i * c.n + j] = m;
        }
    }
    Ok((got, want, size))
}

fn check(c: &Case, accumulate: bool, seed: u64) {
    let (got, want, size) =
        run_case(c, accumulate, seed).unwrap_or_else(|e| panic!("{}: {e}", c.kernel));
    // Each K step (32 bytes of K) rounds D once to the accumulator type:
    // at most half an ulp of a partial sum, which is at most the sum of
    // the terms' magnitudes (f32: 2^-24 relative; f16: 2^-11, and 2^-25
    // absolute below the normal range). A layout or fragment error moves
    // results by whole products.
    let steps = (c.k * c.a.bytes() / 32) as f64;
    // Integer sums are exact.
    let (rel, abs) = match c.d {
        Acc::F16 => (2f64.powi(-11), 2f64.powi(-25)),
        Acc::F32 => (2f64.powi(-24), 1e-30),
        Acc::S32 => (0.0, 0.0),
    };
    for (i, ((&g, &w), &m)) in got.iter().zip(&want).zip(&size).enumerate() {
        assert!(
            (g - w).abs() <= steps * (m * rel + abs),
            "{} (accumulate {accumulate}): D[{}][{}] = {g}, want {w}",
            c.kernel,
            i / c.n,
            i % c.n
        );
    }
}

#[test]
fn every_wgmma_fixture_matches_the_f64_reference() {
    for (i, c) in CASES.iter().enumerate() {
        check(c, true, 0x5EED + i as u64);
    }
}

#[test]
fn scale_d_zero_ignores_the_accumulator() {
    for (i, c) in CASES.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        check(c, false, 0xD00D + i as u64);
    }
}

/// `wg_gemm_bf16`: a pipelined GEMM (two warpgroups per CTA, K tiles of 64
/// in `stages` shared stages, each tile's wgmmas one group kept in flight
/// by `wait_group 1` while the next tile is staged) on a 2×2 grid.
/// D, the f64 reference and the sum of its terms' magnitudes.
type GemmRun = (Vec<f32>, Vec<f64>, Vec<f64>);

fn run_gemm(stages: i32) -> Result<GemmRun, SimError> {
    let (m, n, k) = (256usize, 128usize, 256usize);
    let mut rng = StdRng::seed_from_u64(0x6E33);
    let (a_bits, a): (Vec<u32>, Vec<f64>) = (0..m * k).map(|_| El::Bf16.random(&mut rng)).unzip();
    let (b_bits, b): (Vec<u32>, Vec<f64>) = (0..k * n).map(|_| El::Bf16.random(&mut rng)).unzip();
    let module = Module::parse(PTX)?;
    let mut dev = Device::new();
    let ab = dev.alloc_from("A", &pack(&a_bits, 2))?;
    let bb = dev.alloc_from("B", &pack(&b_bits, 2))?;
    let cb = dev.alloc_from("C", &vec![0u8; m * n * 4])?;
    let args = [
        KernelArg::Buffer(ab),
        KernelArg::Buffer(bb),
        KernelArg::Buffer(cb),
        KernelArg::I32(m as i32),
        KernelArg::I32(n as i32),
        KernelArg::I32(k as i32),
        KernelArg::I32(stages),
    ];
    dev.launch(
        Launch::new(
            &module,
            "wg_gemm_bf16",
            [(n / 64) as u32, (m / 128) as u32, 1],
            [256, 1, 1],
        ),
        &args,
        &LaunchOptions::default(),
        None,
    )?;
    let got: Vec<f32> = dev
        .to_vec(cb)?
        .chunks_exact(4)
        .map(|x| f32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        .collect();
    let mut want = vec![0f64; m * n];
    let mut size = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            for kk in 0..k {
                let p = a[i * k + kk] * b[kk * n + j];
                want[i * n + j] += p;
                size[i * n + j] += p.abs();
            }
        }
    }
    Ok((got, want, size))
}

#[test]
fn a_pipelined_wgmma_gemm_matches_the_f64_reference() {
    let (got, want, size) = run_gemm(2).unwrap_or_else(|e| panic!("wg_gemm_bf16: {e}"));
    // One f32 rounding per wgmma (K / 16 of them).
    for (i, ((&g, &w), &m)) in got.iter().zip(&want).zip(&size).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= 16.0 * m * 2f64.powi(-24),
            "C[{}][{}] = {g}, want {w}",
            i / 128,
            i % 128
        );
    }
}

#[test]
fn a_one_stage_wgmma_pipeline_overwrites_operands_in_flight() {
    let e = run_gemm(1).expect_err("one stage must race");
    let r = e.report().unwrap_or_else(|| panic!("{e}"));
    assert_eq!(r.kind, phobos_sim::CheckKind::Racecheck, "{e}");
    assert!(
        r.message
            .contains("write of shared memory that an in-flight wgmma.mma_async reads"),
        "{e}"
    );
}
