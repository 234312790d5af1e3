//! GPU tests: the same kernels on an NVIDIA GPU through the CUDA backend.
//! They are ignored by default (this needs a GPU); the GPU bundle
//! (`scripts/gpu-bundle.sh`, docs/gpu-bundle.md) carries this executable and
//! runs every ignored test whose name starts with `gpu_`, across the
//! workspace. Set `PHOBOS_PTXAS` to also test cubin loading.

mod common;

use common::*;
use phobos_runtime::{cdiv, BindError, Device, Grid, LaunchError};
use std::process::Command;

fn gpu() -> Device {
    match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => panic!("this test needs an NVIDIA GPU: {e}"),
    }
}

fn run_matvec(dev: &Device, kernel: &phobos_runtime::Kernel, n: usize, k: usize) -> f64 {
    let (mut m, want) = Matvec::random(dev, n, k, 11).unwrap();
    m.launch_error(kernel, dev, &want)
}

#[test]
#[ignore = "needs an NVIDIA GPU; run by the GPU bundle (scripts/gpu-bundle.sh)"]
fn gpu_ptx_is_jit_compiled_and_runs() {
    let dev = gpu();
    let kernel = compile(LANES_MATVEC, &phobos_core::ARCHES, vec![]);
    let err = run_matvec(&dev, &kernel, 1000, 1024);
    assert!(err < 1e-3, "max error {err}");
}

#[test]
#[ignore = "needs an NVIDIA GPU and PHOBOS_PTXAS; run by the GPU bundle (scripts/gpu-bundle.sh)"]
fn gpu_the_cubin_for_the_device_is_loaded() {
    let dev = gpu();
    let arch = dev.arch().unwrap();
    let ptxas = std::env::var("PHOBOS_PTXAS").expect("PHOBOS_PTXAS names ptxas");
    let (kernels, _) = phobos_core::compile(
        LANES_MATVEC,
        "test.pho",
        &phobos_core::CompileOptions::for_arch(arch.min(90)),
    );
    let dir = tempfile_dir();
    let ptx_path = dir.join("k.ptx");
    let cubin_path = dir.join("k.cubin");
    std::fs::write(&ptx_path, &kernels[0].ptx).unwrap();
    let status = Command::new(ptxas)
        .arg(format!("-arch={}", phobos_meta::arch::name(arch)))
        .arg(&ptx_path)
        .arg("-o")
        .arg(&cubin_path)
        .status()
        .unwrap();
    assert!(status.success());
    let cubin = std::fs::read(&cubin_path).unwrap();
    // Only a cubin, no PTX to fall back on: the launch works only if the
    // cubin loads.
    let kernel = compile(LANES_MATVEC, &[], vec![(arch, cubin)]);
    let err = run_matvec(&dev, &kernel, 512, 512);
    assert!(err < 1e-3, "max error {err}");
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("phobos-gpu-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
#[ignore = "needs an NVIDIA GPU; run by the GPU bundle (scripts/gpu-bundle.sh)"]
fn gpu_a_bad_module_reports_the_jit_log() {
    let dev = gpu();
    let good = compile(LANES_MATVEC, &[75], vec![]);
    let broken = good.source().ptx[0].1.replace("ret;", "ret_broken;");
    let kernel = phobos_runtime::Kernel::new(phobos_runtime::KernelSource {
        name: "lanes_matvec",
        module: "broken.pho",
        meta: good.source().meta,
        ptx: Box::leak(vec![(75, &*Box::leak(broken.into_boxed_str()))].into_boxed_slice()),
        cubins: &[],
    });
    let mut m = Matvec::zeros(&dev, 4, 128).unwrap();
    let e = m.launch(&kernel, &dev, Grid::from(1)).unwrap_err();
    let LaunchError::ModuleLoad { log, artifact, .. } = &e else {
        panic!("{e:?}");
    };
    assert!(artifact.contains("PTX"), "{e}");
    assert!(!log.is_empty(), "{e}");
    assert!(e.to_string().contains("broken.pho"), "{e}");
}

/// The device's limits come from the driver, and the launch checks use
/// them. A real GPU from sm_75 on has the same static launch limits as the
/// simulator's defaults (1024 threads, a 2^31-1 x 65535 x 65535 grid; the
/// shared memory a launch may opt in to is per architecture), so this test compares
/// the runtime's limits with the driver's attributes read here directly,
/// and checks that the error carries them;
/// `fake_gpu.rs::stand_in_launch_checks_use_the_configured_device_limits`
/// configures a device whose limits differ from the defaults and checks
/// that every launch check follows the device.
#[test]
#[ignore = "needs an NVIDIA GPU; run by the GPU bundle (scripts/gpu-bundle.sh)"]
fn gpu_launch_checks_use_the_device_limits() {
    use cudarc::driver::sys::{self, CUdevice_attribute::*};
    let dev = gpu();
    let attr = |a| {
        let mut v = 0i32;
        let mut d = 0;
        unsafe { sys::cuInit(0) }.result().unwrap();
        unsafe { sys::cuDeviceGet(&mut d, 0) }.result().unwrap();
        unsafe { sys::cuDeviceGetAttribute(&mut v, a, d) }
            .result()
            .unwrap();
        v as u32
    };
    let l = dev.limits();
    assert_eq!(
        l.max_threads_per_block,
        attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    );
    // Shared memory: what a launch may use once the function opts in to
    // dynamic shared memory above 48 KiB.
    assert_eq!(
        l.max_shared_bytes_per_block,
        attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    );
    assert_eq!(
        l.max_grid,
        [
            attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
            attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
            attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z),
        ]
    );
    let kernel = compile(LANES_MATVEC, &[75], vec![]);
    let mut m = Matvec::zeros(&dev, 4, 128).unwrap();
    let e = m
        .launch(&kernel, &dev, Grid([1, l.max_grid[1] + 1, 1]))
        .unwrap_err();
    match &e {
        LaunchError::Bind {
            error: BindError::GridTooLarge { limit, .. },
            ..
        } => assert_eq!(*limit, l.max_grid),
        _ => panic!("{e:?}"),
    }
    assert!(
        e.to_string()
            .contains(&phobos_meta::arch::name(dev.arch().unwrap())),
        "{e}"
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU; run by the GPU bundle (scripts/gpu-bundle.sh)"]
fn gpu_and_simulator_agree() {
    let kernel = compile(LANES_MATVEC, &phobos_core::ARCHES, vec![]);
    let (n, k) = (64, 256);
    let (w, x) = (values(n * k, 21), values(k, 22));
    let mut out = Vec::new();
    for dev in [gpu(), Device::sim()] {
        let mut m = Matvec::upload(&dev, &w, &x, n).unwrap();
        m.launch(&kernel, &dev, Grid::from(cdiv(n, 4))).unwrap();
        out.push(m.y.to_vec().unwrap());
    }
    // Same PTX, same order of additions; ptxas may contract a multiply
    // and an add into one fma, so allow rounding differences.
    let diff = out[0]
        .iter()
        .zip(&out[1])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(diff < 1e-5, "GPU and simulator differ by {diff}");
}

#[test]
#[ignore = "needs an NVIDIA GPU; run by the GPU bundle (scripts/gpu-bundle.sh)"]
fn gpu_the_callers_current_context_is_restored() {
    use cudarc::driver::sys;
    let dev = gpu();
    // Another library's context, current on this thread.
    let mut other = std::ptr::null_mut();
    unsafe { sys::cuCtxCreate_v2(&mut other, 0, 0) }
        .result()
        .unwrap();
    let current = || {
        let mut c = std::ptr::null_mut();
        unsafe { sys::cuCtxGetCurrent(&mut c) }.result().unwrap();
        c
    };
    assert_eq!(current(), other);
    let err = run_matvec(&dev, &compile(LANES_MATVEC, &[75], vec![]), 64, 128);
    assert!(err < 1e-3, "max error {err}");
    dev.synchronize().unwrap();
    assert_eq!(
        current(),
        other,
        "a phobos call replaced the current context"
    );
    // The other context still works for its owner.
    let mut bytes = 0;
    unsafe { sys::cuMemGetInfo_v2(&mut bytes, &mut 0) }
        .result()
        .unwrap();
    unsafe { sys::cuCtxDestroy_v2(other) }.result().unwrap();
}

#[test]
#[ignore = "needs an NVIDIA GPU; run by the GPU bundle (scripts/gpu-bundle.sh)"]
fn gpu_overlapping_read_only_and_written_tensors_are_refused() {
    let dev = gpu();
    let kernel = compile(SCALE, &[75], vec![]);
    let buf = dev.upload(&values(128, 3), &[128]).unwrap();
    let x = buf.view(0, &[64]);
    let mut y = buf.view(32, &[64]);
    let e = launch_xy(&kernel, &dev, 2, &x, &mut y).unwrap_err();
    assert!(matches!(e, LaunchError::Aliasing { .. }), "{e:?}");
    assert!(e.to_string().contains(&dev.arch_label()), "{e}");
}

/// TMA kernels on Hopper: the driver's `cuTensorMapEncodeTiled` makes the
/// maps, the hardware's copy engine fills and swizzles the boxes, and every
/// element must come out exactly (`common::tma::all_copies`: f32, f16,
/// bf16; 128B, 64B and no swizzle; ragged edges read as zeros). The
/// kernel is sm_90a, so only a 9.0 device runs it; on any other (the
/// stand-in's default 8.6 included) the test says so and checks nothing —
/// the stand-in runs the same copies at 9.0 in `tests/tensor_maps.rs`.
#[test]
#[ignore = "needs an NVIDIA GPU; run by the GPU bundle (scripts/gpu-bundle.sh)"]
fn gpu_tma_copies_through_driver_made_tensor_maps_are_exact() {
    let dev = gpu();
    if dev.arch() != Some(90) {
        eprintln!(
            "gpu_tma_copies_through_driver_made_tensor_maps_are_exact: {} is not a 9.0 device; \
             sm_90a TMA kernels run on H100/H200 only",
            dev.name()
        );
        return;
    }
    common::tma::all_copies(&dev);
}
