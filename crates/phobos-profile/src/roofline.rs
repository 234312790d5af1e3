//! A roofline bound: the least time a kernel can take on a GPU model, from
//! the bytes it must move from DRAM and the operations it must execute.
//! The spec table is the vendors' datasheet numbers (`docs/profile.md`
//! names each); INT8 here means `dp4a`, the only 8-bit dot product Phobos
//! emits, modelled at the 32-bit integer multiply-add rate of 64 lanes per
//! SM per clock (CUDA C++ Programming Guide, arithmetic instruction
//! throughput), 8 operations each.

use serde::Serialize;

/// One GPU model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GpuSpec {
    /// The `--gpu` name.
    pub name: &'static str,
    pub full_name: &'static str,
    /// The architecture its occupancy uses.
    pub arch: u32,
    pub sms: u32,
    pub boost_clock_ghz: f64,
    pub dram_bandwidth_gb_s: f64,
    /// Non-tensor FP32 peak, TFLOP/s.
    pub fp32_tflops: f64,
    /// Non-tensor FP64 peak, TFLOP/s.
    pub fp64_tflops: f64,
}

impl GpuSpec {
    /// dp4a peak in TOP/s: SMs x 64 lanes x 8 operations x clock.
    pub fn int8_dp4a_tops(&self) -> f64 {
        f64::from(self.sms) * 64.0 * 8.0 * self.boost_clock_ghz / 1000.0
    }
}

pub const GPUS: [GpuSpec; 5] = [
    GpuSpec {
        name: "h100",
        full_name: "NVIDIA H100 SXM5 80GB",
        arch: 90,
        sms: 132,
        boost_clock_ghz: 1.98,
        dram_bandwidth_gb_s: 3350.0,
        fp32_tflops: 66.9,
        fp64_tflops: 33.5,
    },
    GpuSpec {
        name: "h200",
        full_name: "NVIDIA H200 SXM 141GB",
        arch: 90,
        sms: 132,
        boost_clock_ghz: 1.98,
        dram_bandwidth_gb_s: 4800.0,
        fp32_tflops: 66.9,
        fp64_tflops: 33.5,
    },
    GpuSpec {
        name: "a100",
        full_name: "NVIDIA A100 SXM4 80GB",
        arch: 80,
        sms: 108,
        boost_clock_ghz: 1.41,
        dram_bandwidth_gb_s: 2039.0,
        fp32_tflops: 19.5,
        fp64_tflops: 9.7,
    },
    GpuSpec {
        name: "l4",
        full_name: "NVIDIA L4",
        arch: 89,
        sms: 58,
        boost_clock_ghz: 2.04,
        dram_bandwidth_gb_s: 300.0,
        fp32_tflops: 30.3,
        fp64_tflops: 0.47,
    },
    GpuSpec {
        name: "rtx4090",
        full_name: "NVIDIA GeForce RTX 4090",
        arch: 89,
        sms: 128,
        boost_clock_ghz: 2.52,
        dram_bandwidth_gb_s: 1008.0,
        fp32_tflops: 82.6,
        fp64_tflops: 1.29,
    },
];

/// The GPU model called `name` (case-insensitive).
pub fn gpu(name: &str) -> Option<&'static GpuSpec> {
    GPUS.iter().find(|g| g.name.eq_ignore_ascii_case(name))
}

/// A roof: one resource and the time it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Roof {
    Dram,
    Fp32,
    Fp64,
    Int8,
}

impl Roof {
    pub fn name(self) -> &'static str {
        match self {
            Roof::Dram => "DRAM bandwidth",
            Roof::Fp32 => "FP32 throughput",
            Roof::Fp64 => "FP64 throughput",
            Roof::Int8 => "INT8 (dp4a) throughput",
        }
    }
}

/// What the kernel must do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    pub dram_bytes: u64,
    pub fp32_flops: u64,
    pub fp64_flops: u64,
    pub int8_ops: u64,
}

/// The bound on one GPU model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Roofline {
    pub gpu: GpuSpec,
    pub int8_dp4a_tops: f64,
    pub dram_bytes: u64,
    pub fp32_flops: u64,
    pub fp64_flops: u64,
    pub int8_ops: u64,
    /// Time each roof needs, in microseconds.
    pub dram_us: f64,
    pub fp32_us: f64,
    pub fp64_us: f64,
    pub int8_us: f64,
    /// The largest of them: no run can be faster.
    pub bound_us: f64,
    pub binding_roof: Roof,
    /// FP32 flops per DRAM byte (null when no byte moves).
    pub arithmetic_intensity: Option<f64>,
}

/// The roofline bound of `work` on `gpu`.
pub fn roofline(gpu: &GpuSpec, work: Work) -> Roofline {
    // bytes / (GB/s) = ns / 1000 = us / 1e3; ops / (Tops/s) = ps = us / 1e6.
    let dram_us = work.dram_bytes as f64 / gpu.dram_bandwidth_gb_s / 1e3;
    let fp32_us = work.fp32_flops as f64 / gpu.fp32_tflops / 1e6;
    let fp64_us = work.fp64_flops as f64 / gpu.fp64_tflops / 1e6;
    let int8_us = work.int8_ops as f64 / gpu.int8_dp4a_tops() / 1e6;
    let mut binding = (Roof::Dram, dram_us);
    for (roof, t) in [
        (Roof::Fp32, fp32_us),
        (Roof::Fp64, fp64_us),
        (Roof::Int8, int8_us),
    ] {
        if t > binding.1 {
            binding = (roof, t);
        }
    }
    Roofline {
        gpu: *gpu,
        int8_dp4a_tops: gpu.int8_dp4a_tops(),
        dram_bytes: work.dram_bytes,
        fp32_flops: work.fp32_flops,
        fp64_flops: work.fp64_flops,
        int8_ops: work.int8_ops,
        dram_us,
        fp32_us,
        fp64_us,
        int8_us,
        bound_us: binding.1,
        binding_roof: binding.0,
        arithmetic_intensity: (work.dram_bytes > 0)
            .then(|| work.fp32_flops as f64 / work.dram_bytes as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streaming_kernel_is_bound_by_dram() {
        // 3.35 MB on 3350 GB/s is 1 us; 1 M flops on 66.9 TFLOP/s is 0.015 us.
        let h100 = gpu("H100").expect("in the table");
        let r = roofline(
            h100,
            Work {
                dram_bytes: 3_350_000,
                fp32_flops: 1_000_000,
                ..Work::default()
            },
        );
        assert!((r.dram_us - 1.0).abs() < 1e-9);
        assert_eq!(r.binding_roof, Roof::Dram);
        assert_eq!(r.bound_us, r.dram_us);
    }

    #[test]
    fn a_dense_kernel_is_bound_by_compute() {
        // 19.5 G flops on an A100 is 1000 us; 1 MB is 0.49 us.
        let a100 = gpu("a100").expect("in the table");
        let r = roofline(
            a100,
            Work {
                dram_bytes: 1_000_000,
                fp32_flops: 19_500_000_000,
                ..Work::default()
            },
        );
        assert!((r.fp32_us - 1000.0).abs() < 1e-6);
        assert_eq!(r.binding_roof, Roof::Fp32);
        // dp4a peak: 108 x 64 x 8 x 1.41 GHz = 77.97 TOP/s.
        assert!((r.int8_dp4a_tops - 77.967_36).abs() < 1e-6);
    }

    #[test]
    fn unknown_gpus_are_none() {
        assert!(gpu("v100").is_none());
    }
}
