//! The CUDA backend on the CUDA driver stand-in (`phobos-fakecuda`): what
//! only a driver shows — asynchronous faults and sticky contexts, the
//! current context of other code, concurrency inside the driver, device
//! memset, event timing and the persisted autotune cache, out-of-memory.
//! Each test runs its body in a child process configured through the
//! stand-in's environment variables (fault injection, a call trace).
//!
//! Ignored by default; run them with
//! `scripts/with-fake-gpu.sh cargo test -p phobos-runtime --test fake_gpu -- --include-ignored`.

mod common;

use common::*;
use phobos_runtime::{cdiv, Arg, BindError, Device, DeviceError, Grid, LaunchError};
use std::path::PathBuf;

fn trace_path() -> PathBuf {
    PathBuf::from(std::env::var_os("PHOBOS_FAKE_GPU_TRACE").expect("the child has a trace"))
}

/// Launches `unguarded` over more CTAs than `y` has elements for: the
/// stores past its end are an illegal address on the device.
fn launch_out_of_bounds(dev: &Device) -> Result<(), LaunchError> {
    let kernel = compile(UNGUARDED, &[75], vec![]);
    let mut y = dev.zeros::<f32>(&[1, 32]).unwrap();
    kernel.launch(dev, Some(Grid::from(4)), &[Arg::from(&mut y)])
}

fn launch_matvec(dev: &Device) -> Result<Vec<f32>, String> {
    let kernel = compile(LANES_MATVEC, &[75], vec![]);
    let (n, k) = (8, 128);
    let (mut m, _) = Matvec::random(dev, n, k, 1).map_err(|e| e.to_string())?;
    m.launch(&kernel, dev, Grid::from(cdiv(n, 4)))
        .map_err(|e| e.to_string())?;
    m.y.to_vec().map_err(|e| e.to_string())
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_an_async_fault_names_the_launches_in_flight_and_a_new_device_recovers() {
    in_fake_gpu_child(
        "stand_in_an_async_fault_names_the_launches_in_flight_and_a_new_device_recovers",
        &[],
        || {
            let dev = fake_gpu();
            // A good launch, then the faulting one: both are in flight when
            // the fault is reported.
            launch_matvec(&dev).unwrap();
            let kernel = compile(LANES_MATVEC, &[75], vec![]);
            let mut m = Matvec::zeros(&dev, 4, 128).unwrap();
            m.launch(&kernel, &dev, Grid::from(1)).unwrap();
            // The launch is queued; the fault surfaces at the next
            // synchronizing call.
            launch_out_of_bounds(&dev).unwrap();
            let e = dev.synchronize().unwrap_err();
            let DeviceError::Fault { launches, .. } = &e else {
                panic!("{e:?}");
            };
            assert_eq!(launches.len(), 2, "{e}");
            assert!(launches[0].contains("lanes_matvec"), "{e}");
            assert!(launches[1].contains("kernel `unguarded`"), "{e}");
            assert!(launches[1].contains("grid [4, 1, 1]"), "{e}");
            let text = e.to_string();
            assert!(text.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{text}");
            assert!(text.contains("one of the 2 launches"), "{text}");
            assert!(
                text.contains("sticky") && text.contains("PHOBOS_SYNC=1"),
                "{text}"
            );
            // Sticky: every later call on the context fails, and a second
            // `Device` of the same GPU shares the context.
            assert!(dev.zeros::<f32>(&[4]).is_err());
            let second = Device::cuda(0).unwrap();
            assert!(second.upload(&[1.0f32], &[1]).is_err());
            drop((m, second, dev));
            // Every handle dropped: the context is released, and the GPU
            // opens again with a fresh one.
            let dev = fake_gpu();
            let y = launch_matvec(&dev).unwrap();
            assert!(y.iter().any(|&v| v != 0.0));
        },
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_with_phobos_sync_the_faulting_launch_reports_it() {
    in_fake_gpu_child(
        "stand_in_with_phobos_sync_the_faulting_launch_reports_it",
        &[("PHOBOS_SYNC", "1")],
        || {
            let dev = fake_gpu();
            launch_matvec(&dev).unwrap();
            let e = launch_out_of_bounds(&dev).unwrap_err();
            assert!(matches!(e, LaunchError::Fault { .. }), "{e:?}");
            assert_eq!(e.site().kernel, "unguarded");
            assert!(e.to_string().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{e}");
            assert!(e.to_string().contains("PHOBOS_SYNC=1 waited"), "{e}");
        },
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_an_injected_launch_failure_is_reported_at_the_next_synchronization() {
    in_fake_gpu_child(
        "stand_in_an_injected_launch_failure_is_reported_at_the_next_synchronization",
        &[("PHOBOS_FAKE_GPU_FAIL_LAUNCH", "1")],
        || {
            let dev = fake_gpu();
            let e = launch_matvec(&dev).unwrap_err();
            assert!(e.contains("CUDA_ERROR_LAUNCH_FAILED"), "{e}");
            assert!(e.contains("kernel `lanes_matvec`"), "{e}");
        },
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_out_of_memory_is_an_error_not_a_panic() {
    in_fake_gpu_child(
        "stand_in_out_of_memory_is_an_error_not_a_panic",
        &[
            ("PHOBOS_FAKE_GPU_OOM_AT", "2"),
            ("PHOBOS_FAKE_GPU_MEMORY", "1MiB"),
        ],
        || {
            let dev = fake_gpu();
            let a = dev.upload(&[1.0f32; 16], &[16]).unwrap();
            let e = dev.zeros::<f32>(&[16]).unwrap_err();
            assert!(
                matches!(&e, DeviceError::Driver { call: "cuMemAlloc", message } if message.contains("CUDA_ERROR_OUT_OF_MEMORY")),
                "{e:?}"
            );
            // Only the second allocation was refused; beyond the device's
            // memory size is refused too.
            let b = dev.zeros::<f32>(&[16]).unwrap();
            assert!(dev.zeros::<u8>(&[2 << 20]).is_err());
            assert_eq!(a.to_vec().unwrap(), vec![1.0; 16]);
            assert_eq!(b.to_vec().unwrap(), vec![0.0; 16]);
        },
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_failed_device_query_leaves_no_context_retained() {
    for call in ["cuDeviceGetName", "cuDeviceGetAttribute"] {
        in_fake_gpu_child(
            "stand_in_a_failed_device_query_leaves_no_context_retained",
            &[("PHOBOS_FAKE_GPU_FAIL", call)],
            || {
                let e = Device::cuda(0).unwrap_err();
                assert!(e.to_string().contains("CUDA_ERROR_UNKNOWN"), "{e}");
                let (mut flags, mut active) = (0u32, -1i32);
                let status = unsafe {
                    cudarc::driver::sys::cuDevicePrimaryCtxGetState(0, &mut flags, &mut active)
                };
                assert_eq!(status, cudarc::driver::sys::CUresult::CUDA_SUCCESS);
                assert_eq!(active, 0, "the primary context is still retained");
            },
        );
    }
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_launches_and_module_loads_from_threads_run_concurrently() {
    // Each launch (and each module load) waits inside the driver until two
    // are there at once; a lock held across either would time out.
    in_fake_gpu_child(
        "stand_in_launches_and_module_loads_from_threads_run_concurrently",
        &[
            ("PHOBOS_FAKE_GPU_LAUNCH_RENDEZVOUS", "2"),
            ("PHOBOS_FAKE_GPU_LOAD_RENDEZVOUS", "2"),
        ],
        || {
            let dev = fake_gpu();
            let matvec = compile(LANES_MATVEC, &[75], vec![]);
            let scale = compile(SCALE, &[75], vec![]);
            let run_scale = |dev: &Device| {
                let x = dev.upload(&[1.5f32; 64], &[64]).unwrap();
                let mut y = dev.zeros::<f32>(&[64]).unwrap();
                launch_xy(&scale, dev, 2, &x, &mut y).unwrap();
                assert_eq!(y.to_vec().unwrap(), vec![3.0; 64]);
            };
            let run_matvec = |dev: &Device| {
                let mut m = Matvec::upload(dev, &[1.0f32; 4 * 128], &[1.0f32; 128], 4).unwrap();
                m.launch(&matvec, dev, Grid::from(1)).unwrap();
                assert_eq!(m.y.to_vec().unwrap(), vec![128.0; 4]);
            };
            // Two kernels loaded and launched at once, then one kernel
            // launched from two threads at once.
            std::thread::scope(|s| {
                s.spawn(|| run_scale(&dev));
                s.spawn(|| run_matvec(&dev));
            });
            std::thread::scope(|s| {
                s.spawn(|| run_scale(&dev));
                s.spawn(|| run_scale(&dev));
            });
        },
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_zeros_and_fill_set_memory_on_the_device() {
    let dir = scratch_dir("memset");
    let trace = dir.join("trace");
    in_fake_gpu_child(
        "stand_in_zeros_and_fill_set_memory_on_the_device",
        &[("PHOBOS_FAKE_GPU_TRACE", trace.to_str().unwrap())],
        || {
            let dev = fake_gpu();
            let mut t = dev.zeros::<f32>(&[1 << 18]).unwrap();
            assert!(t.to_vec().unwrap().iter().all(|&v| v == 0.0));
            assert_eq!(trace_lines(&trace_path(), "cuMemsetD8").len(), 1);
            assert!(trace_lines(&trace_path(), "cuMemcpyHtoD").is_empty());
            t.fill(f32::from_bits(u32::MAX)).unwrap();
            assert_eq!(trace_lines(&trace_path(), "cuMemsetD8").len(), 2);
            t.fill(0.5).unwrap();
            assert!(t.to_vec().unwrap().iter().all(|&v| v == 0.5));
            // 2^18 elements uploaded 2^16 at a time.
            assert_eq!(trace_lines(&trace_path(), "cuMemcpyHtoD").len(), 4);
        },
    );
}

/// Runs `autotune_block` (two variants, BLOCK 64 and 128) over `n` elements
/// and checks the result.
fn run_tuned(dev: &Device, n: usize) -> Result<(), LaunchError> {
    let kernel = tuned_kernel();
    let x = dev.upload(&values(n, 5), &[n]).unwrap();
    let mut y = dev.zeros::<f32>(&[n]).unwrap();
    kernel.launch(dev, None, &[Arg::from(&x), Arg::from(&mut y)])?;
    let want: Vec<f32> = values(n, 5).iter().map(|v| 2.0 * v).collect();
    assert_eq!(y.to_vec().unwrap(), want);
    Ok(())
}

fn tuned_kernel() -> &'static phobos_runtime::Kernel {
    static K: std::sync::OnceLock<phobos_runtime::Kernel> = std::sync::OnceLock::new();
    K.get_or_init(|| compile(AUTOTUNE_BLOCK, &[75], vec![]))
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_autotune_times_with_events_and_persists_its_choice() {
    let dir = scratch_dir("autotune");
    let cache = dir.join("cache").join("autotune.ron");
    let first = dir.join("trace1");
    let second = dir.join("trace2");
    in_fake_gpu_child_phase(
        "stand_in_autotune_times_with_events_and_persists_its_choice",
        "first",
        &[
            ("PHOBOS_FAKE_GPU_TRACE", first.to_str().unwrap()),
            ("PHOBOS_TUNE_CACHE", cache.to_str().unwrap()),
        ],
        || {
            let dev = fake_gpu();
            run_tuned(&dev, 1000).unwrap();
            // Two variants, each one warm-up and five timed runs between
            // events, then the real launch.
            assert_eq!(
                trace_lines(&trace_path(), "cuLaunchKernel").len(),
                2 * 6 + 1
            );
            assert_eq!(trace_lines(&trace_path(), "cuEventRecord").len(), 2 * 5 * 2);
            // Decided once per dims.
            run_tuned(&dev, 1000).unwrap();
            assert_eq!(
                trace_lines(&trace_path(), "cuLaunchKernel").len(),
                2 * 6 + 2
            );
        },
    );
    if !is_child() {
        let text = std::fs::read_to_string(&cache).expect("the cache was written");
        assert!(
            text.contains("autotune_block") && text.contains("phobos-sim"),
            "{text}"
        );
        assert!(text.contains("12090") && text.contains("\"N\""), "{text}");
    }
    // A new process finds the decision on disk and times nothing.
    in_fake_gpu_child_phase(
        "stand_in_autotune_times_with_events_and_persists_its_choice",
        "second",
        &[
            ("PHOBOS_FAKE_GPU_TRACE", second.to_str().unwrap()),
            ("PHOBOS_TUNE_CACHE", cache.to_str().unwrap()),
        ],
        || run_tuned(&fake_gpu(), 1000).unwrap(),
    );
    if is_child() {
        return;
    }
    assert_eq!(trace_lines(&second, "cuEventRecord").len(), 0);
    assert_eq!(trace_lines(&second, "cuLaunchKernel").len(), 1);
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_exported_tuning_is_used_without_timing() {
    let dir = scratch_dir("export");
    let exported = dir.join("tuning.ron");
    let trace = dir.join("trace");
    in_fake_gpu_child(
        "stand_in_exported_tuning_is_used_without_timing",
        &[
            ("PHOBOS_FAKE_GPU_TRACE", trace.to_str().unwrap()),
            ("PHOBOS_TEST_EXPORT", exported.to_str().unwrap()),
        ],
        || {
            let path = std::env::var("PHOBOS_TEST_EXPORT").unwrap();
            let dev = fake_gpu();
            run_tuned(&dev, 2000).unwrap();
            assert_eq!(dev.export_tuning(std::path::Path::new(&path)).unwrap(), 1);
            let timed = trace_lines(&trace_path(), "cuEventRecord").len();
            // A device that was shipped the tuning does not time.
            let text = std::fs::read_to_string(&path).unwrap();
            let fresh = Device::cuda(0).unwrap();
            assert_eq!(fresh.preload_tuning(&text).unwrap(), 1);
            run_tuned(&fresh, 2000).unwrap();
            assert_eq!(trace_lines(&trace_path(), "cuEventRecord").len(), timed);
            assert!(fresh.preload_tuning("(version: 1, entries: oops)").is_err());
        },
    );
    if !is_child() {
        assert!(std::fs::read_to_string(&exported)
            .unwrap()
            .contains("autotune_block"));
    }
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_autotune_skips_a_variant_whose_grid_exceeds_the_device() {
    // N = 1000: BLOCK 64 needs 16 CTAs, more than the device's 10;
    // BLOCK 128 needs 8.
    in_fake_gpu_child(
        "stand_in_autotune_skips_a_variant_whose_grid_exceeds_the_device",
        &[("PHOBOS_FAKE_GPU_MAX_GRID", "10,65535,65535")],
        || run_tuned(&fake_gpu(), 1000).unwrap(),
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_cubins_are_refused_so_the_ptx_is_loaded() {
    in_fake_gpu_child(
        "stand_in_cubins_are_refused_so_the_ptx_is_loaded",
        &[],
        || {
            let dev = fake_gpu();
            let arch = dev.arch().unwrap();
            // A "cubin" (an ELF header) for the device's architecture, and PTX.
            let elf = b"\x7fELF not really a cubin".to_vec();
            let with_ptx = compile(SCALE, &[75], vec![(arch, elf.clone())]);
            let x = dev.upload(&[1.0f32; 32], &[32]).unwrap();
            let mut y = dev.zeros::<f32>(&[32]).unwrap();
            launch_xy(&with_ptx, &dev, 1, &x, &mut y).unwrap();
            assert_eq!(y.to_vec().unwrap(), vec![2.0; 32]);
            // The device says what it loaded, and what it refused first.
            let images = dev.loaded_images();
            assert_eq!(images.len(), 1, "{images:?}");
            let image = &images[0];
            assert_eq!((image.kind, image.arch), ("ptx", 75), "{image:?}");
            assert_eq!(image.refused.len(), 1, "{image:?}");
            assert!(
                image.refused[0].contains(&format!("sm_{arch} cubin"))
                    && image.refused[0].contains("CUDA_ERROR_NO_BINARY_FOR_GPU"),
                "{image:?}"
            );
            let entry = &image.entries[0];
            assert_eq!(entry.threads, 32, "{entry:?}");
            // The stand-in has no register allocation to report.
            assert_eq!(entry.registers, None, "{entry:?}");
            assert!(entry.ctas_per_sm.is_some_and(|n| n > 0), "{entry:?}");
            let cubin_only = compile(SCALE, &[], vec![(arch, elf)]);
            let e = launch_xy(&cubin_only, &dev, 1, &x, &mut y).unwrap_err();
            assert!(
                e.to_string().contains("CUDA_ERROR_NO_BINARY_FOR_GPU"),
                "{e}"
            );
        },
    );
}

/// The cubin-first path, end to end: a stand-in cubin for the device's
/// architecture (its PTX inside, `phobos_fakecuda::stand_in_cubin`) is
/// loaded before the PTX, and one for another architecture is not chosen.
#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_cubins_for_the_device_are_loaded_before_the_ptx() {
    in_fake_gpu_child(
        "stand_in_cubins_for_the_device_are_loaded_before_the_ptx",
        &[],
        || {
            let dev = fake_gpu();
            let arch = dev.arch().unwrap();
            let (kernels, _) = phobos_core::compile(
                SCALE,
                "test.pho",
                &phobos_core::CompileOptions::for_arch(arch),
            );
            let ptx = &kernels[0].ptx;
            let cubin = phobos_fakecuda::stand_in_cubin(arch, ptx);
            let k = compile(SCALE, &[75], vec![(arch, cubin)]);
            let x = dev.upload(&[1.0f32; 32], &[32]).unwrap();
            let mut y = dev.zeros::<f32>(&[32]).unwrap();
            launch_xy(&k, &dev, 1, &x, &mut y).unwrap();
            assert_eq!(y.to_vec().unwrap(), vec![2.0; 32]);
            let images = dev.loaded_images();
            assert_eq!(images.len(), 1, "{images:?}");
            assert_eq!(
                (images[0].kind, images[0].arch),
                ("cubin", arch),
                "{images:?}"
            );
            assert!(images[0].refused.is_empty(), "{images:?}");
            // A stand-in cubin of another architecture alone: refused as a
            // driver refuses a cubin for another GPU.
            let other = if arch == 75 { 80 } else { 75 };
            let wrong = phobos_fakecuda::stand_in_cubin(other, ptx);
            let k = compile(SCALE, &[], vec![(arch, wrong)]);
            let e = launch_xy(&k, &dev, 1, &x, &mut y).unwrap_err();
            assert!(
                e.to_string().contains("CUDA_ERROR_NO_BINARY_FOR_GPU"),
                "{e}"
            );
            assert!(
                e.to_string()
                    .contains(&format!("stand-in cubin for sm_{other}")),
                "{e}"
            );
        },
    );
}

/// Hopper's arch-specific target on a 9.0 device: with sm_90 and sm_90a
/// images both embedded (as a default build embeds them), the sm_90a cubin
/// is the one loaded; with PTX only, the sm_90a PTX is JIT-compiled before
/// sm_90's. Neither is ever offered to another device.
#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_9_0_device_runs_the_sm_90a_image() {
    in_fake_gpu_child(
        "stand_in_a_9_0_device_runs_the_sm_90a_image",
        &[("PHOBOS_FAKE_GPU_CC", "9.0")],
        || {
            let dev = fake_gpu();
            let sm_90a = phobos_meta::arch::SM_90A;
            assert_eq!(dev.arch(), Some(90));
            let ptx = |arch| {
                let opts = phobos_core::CompileOptions::for_arch(arch);
                let (kernels, _) = phobos_core::compile(SCALE, "test.pho", &opts);
                kernels[0].ptx.clone()
            };
            assert!(ptx(sm_90a).contains(".target sm_90a\n"));
            let cubins = vec![
                (90, phobos_fakecuda::stand_in_cubin(90, &ptx(90))),
                (
                    sm_90a,
                    phobos_fakecuda::stand_in_cubin(sm_90a, &ptx(sm_90a)),
                ),
            ];
            let x = dev.upload(&[1.0f32; 32], &[32]).unwrap();
            let mut y = dev.zeros::<f32>(&[32]).unwrap();
            let both = compile(SCALE, &[90, sm_90a], cubins);
            launch_xy(&both, &dev, 1, &x, &mut y).unwrap();
            assert_eq!(y.to_vec().unwrap(), vec![2.0; 32]);
            let images = dev.loaded_images();
            assert_eq!(images.len(), 1, "{images:?}");
            assert_eq!((images[0].kind, images[0].arch), ("cubin", sm_90a));
            assert!(images[0].refused.is_empty(), "{images:?}");
            // PTX only (another kernel to the device: its embedded content
            // differs): the sm_90a PTX is JIT-compiled, sm_90's untouched.
            let ptx_only = compile(SCALE, &[90, sm_90a], vec![]);
            launch_xy(&ptx_only, &dev, 1, &x, &mut y).unwrap();
            let images = dev.loaded_images();
            assert_eq!(images.len(), 2, "{images:?}");
            let jit = images
                .iter()
                .find(|i| i.kind == "ptx")
                .expect("a PTX image");
            assert_eq!(jit.arch, sm_90a, "{images:?}");
            assert!(jit.refused.is_empty(), "{images:?}");
        },
    );
}

/// A 2-stage ring of 32 KB tiles: sm_80 copies it with cp.async into 64 KB
/// of dynamic shared memory, sm_75 plainly into one 32 KB static tile, so
/// the two targets' variants differ (`KernelMeta::arch_variants`).
const BIG_RING: &str = "@launch(64)
@aligned(L = 4)
kernel big_ring(X: tensor<f32>[R, L], y: tensor<f32>[1, R]) {
  let r = ctx.block.x * 64
  var acc: f32 = 0.0
  for k in range(0, L, 128) stages 2 {
    var t = X[r :+ 64, k :+ 128]
    for j in range(0, 128) {
      acc += t[ctx.thread, j]
    }
  }
  if r + ctx.thread < R {
    y[0, r + ctx.thread] = acc
  }
}
";

/// Built for sm_75 and sm_80, on an 8.0 device: the driver loads sm_80's
/// image, so the launch binds sm_80's variant and passes its 64 KB of
/// dynamic shared memory; the first target's metadata (sm_75's, 32 KB
/// static) would pass none.
#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_launch_binds_the_variants_of_the_image_it_loaded() {
    in_fake_gpu_child(
        "stand_in_a_launch_binds_the_variants_of_the_image_it_loaded",
        &[("PHOBOS_FAKE_GPU_CC", "8.0")],
        || {
            let dev = fake_gpu();
            let kernel = compile(BIG_RING, &[75, 80], vec![]);
            let meta = kernel.meta().unwrap();
            assert_eq!(meta.variants[0].shared_bytes, 32768);
            assert_eq!(meta.variants_for(80)[0].shared_bytes, 65536);
            let x = dev.upload(&[1.0f32; 64 * 256], &[64, 256]).unwrap();
            let mut y = dev.zeros::<f32>(&[1, 64]).unwrap();
            kernel
                .launch(
                    &dev,
                    Some(Grid::from(1)),
                    &[Arg::from(&x), Arg::from(&mut y)],
                )
                .unwrap();
            assert_eq!(y.to_vec().unwrap(), vec![256.0; 64]);
            let images = dev.loaded_images();
            assert_eq!((images[0].kind, images[0].arch), ("ptx", 80), "{images:?}");
            let entry = &images[0].entries[0];
            assert_eq!(entry.dynamic_shared_bytes, 65536, "{entry:?}");
        },
    );
}

/// An sm_90a image alone cannot run on an 8.0 device: the runtime offers
/// it nothing, and says which targets the build holds.
#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_an_sm_90a_only_build_does_not_run_on_an_8_0_device() {
    in_fake_gpu_child(
        "stand_in_an_sm_90a_only_build_does_not_run_on_an_8_0_device",
        &[("PHOBOS_FAKE_GPU_CC", "8.0")],
        || {
            let dev = fake_gpu();
            let sm_90a = phobos_meta::arch::SM_90A;
            let k = compile(SCALE, &[sm_90a], vec![]);
            let x = dev.upload(&[1.0f32; 32], &[32]).unwrap();
            let mut y = dev.zeros::<f32>(&[32]).unwrap();
            let e = launch_xy(&k, &dev, 1, &x, &mut y).unwrap_err();
            assert!(
                e.to_string()
                    .contains("no cubin or PTX usable on sm_80 (its PTX targets [sm_90a])"),
                "{e}"
            );
        },
    );
}

/// 256 threads and an 8 KiB tile (2048 f32): within the simulator's
/// defaults (`Limits::SM75`: 1024 threads, 48 KiB), beyond the device
/// configured below.
const WIDE_TILE: &str = "@launch(256)
kernel wide_tile(x: tensor<f32>[N], y: tensor<f32>[N]) {
  var t = x[ctx.block.x * 2048 :+ 2048]
  let i = ctx.block.x * 2048 + ctx.thread
  if i < N {
    y[i] = t[ctx.thread] + t[ctx.thread + 256]
  }
}
";

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_launch_checks_use_the_configured_device_limits() {
    // A device whose every launch limit is below the simulator's defaults,
    // so a check that used the defaults (or a query that read the wrong
    // attribute) lets a launch through that this device refuses.
    in_fake_gpu_child(
        "stand_in_launch_checks_use_the_configured_device_limits",
        &[
            ("PHOBOS_FAKE_GPU_MAX_THREADS", "128"),
            ("PHOBOS_FAKE_GPU_SHARED_PER_BLOCK", "4096"),
            ("PHOBOS_FAKE_GPU_SHARED_PER_BLOCK_OPTIN", "4096"),
            ("PHOBOS_FAKE_GPU_MAX_GRID", "3,65535,65535"),
        ],
        || {
            let dev = fake_gpu();
            let l = dev.limits();
            assert_eq!(l.max_threads_per_block, 128);
            assert_eq!(l.max_shared_bytes_per_block, 4096);
            assert_eq!(l.max_grid, [3, 65535, 65535]);
            let sim = Device::sim();
            assert_ne!(sim.limits(), l, "the simulator's defaults must differ");
            let kernel = compile(WIDE_TILE, &[75], vec![]);
            let launch = |d: &Device, ctas: u32| {
                let x = d.upload(&vec![1.0f32; 4096], &[4096]).unwrap();
                let mut y = d.zeros::<f32>(&[4096]).unwrap();
                launch_xy(&kernel, d, ctas, &x, &mut y)
            };
            // The simulator's defaults admit it.
            launch(&sim, 2).unwrap();
            match launch(&dev, 2).unwrap_err() {
                LaunchError::Bind {
                    error: BindError::BlockTooLarge { threads, limit, .. },
                    ..
                } => {
                    assert_eq!((threads, limit), (256, 128));
                }
                e => panic!("{e:?}"),
            }
            // Within the threads limit, the tile is still too big.
            let narrow = compile(
                &WIDE_TILE
                    .replace("@launch(256)", "@launch(128)")
                    .replace("+ 256]", "+ 128]"),
                &[75],
                vec![],
            );
            let x = dev.upload(&vec![1.0f32; 4096], &[4096]).unwrap();
            let mut y = dev.zeros::<f32>(&[4096]).unwrap();
            match launch_xy(&narrow, &dev, 2, &x, &mut y).unwrap_err() {
                LaunchError::Bind {
                    error: BindError::SharedMemoryTooLarge { limit, .. },
                    ..
                } => assert_eq!(limit, 4096),
                e => panic!("{e:?}"),
            }
            // A kernel within both: the grid limit is the device's too.
            let scale = compile(SCALE, &[75], vec![]);
            let x = dev.upload(&vec![1.0f32; 128], &[128]).unwrap();
            let mut y = dev.zeros::<f32>(&[128]).unwrap();
            match launch_xy(&scale, &dev, 4, &x, &mut y).unwrap_err() {
                LaunchError::Bind {
                    error: BindError::GridTooLarge { limit, .. },
                    ..
                } => assert_eq!(limit, [3, 65535, 65535]),
                e => panic!("{e:?}"),
            }
            launch_xy(&scale, &dev, 3, &x, &mut y).unwrap();
        },
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_tiles_above_48_kilobytes_opt_in_to_dynamic_shared_memory() {
    let dir = scratch_dir("dynamic-shared");
    let trace = dir.join("trace");
    in_fake_gpu_child(
        "stand_in_tiles_above_48_kilobytes_opt_in_to_dynamic_shared_memory",
        &[
            ("PHOBOS_FAKE_GPU_CC", "8.0"),
            ("PHOBOS_FAKE_GPU_TRACE", trace.to_str().unwrap()),
        ],
        || {
            let dev = fake_gpu();
            assert_eq!(dev.limits().max_shared_bytes_per_block, 163 * 1024);
            run_tiles_128k(&dev, 80).unwrap();
            // 128 KB of the SM's 164 KB (with 1 KB per CTA reserved): one
            // CTA at a time.
            let entry = &dev.loaded_images()[0].entries[0];
            assert_eq!(entry.dynamic_shared_bytes, 131072, "{entry:?}");
            assert_eq!(entry.ctas_per_sm, Some(1), "{entry:?}");
            // The function opted in once, to exactly its 128 KB.
            let set = trace_lines(&trace_path(), "cuFuncSetAttribute");
            assert_eq!(set.len(), 1, "{set:?}");
            assert!(set[0].contains("131072"), "{set:?}");
        },
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_tuning_embedded_by_the_build_is_used_without_timing() {
    let dir = scratch_dir("embedded");
    let exported = dir.join("tuning.ron");
    let trace = dir.join("trace");
    let env = [
        ("PHOBOS_FAKE_GPU_TRACE", trace.to_str().unwrap()),
        ("PHOBOS_TEST_EXPORT", exported.to_str().unwrap()),
    ];
    // A tuning run exports its decision...
    in_fake_gpu_child_phase(
        "stand_in_tuning_embedded_by_the_build_is_used_without_timing",
        "export",
        &env,
        || {
            let dev = fake_gpu();
            run_tuned(&dev, 3000).unwrap();
            let path = std::env::var("PHOBOS_TEST_EXPORT").unwrap();
            assert_eq!(dev.export_tuning(std::path::Path::new(&path)).unwrap(), 1);
        },
    );
    // ...which names the other variant once edited, so that the launch
    // below shows it followed the file, not a default.
    let mut chosen = String::new();
    if !is_child() {
        let text = std::fs::read_to_string(&exported).unwrap();
        let (from, to) = if text.contains("autotune_block__BLOCK64") {
            ("autotune_block__BLOCK64", "autotune_block__BLOCK128")
        } else {
            ("autotune_block__BLOCK128", "autotune_block__BLOCK64")
        };
        std::fs::write(&exported, text.replace(from, to)).unwrap();
        chosen = to.to_string();
        let _ = std::fs::remove_file(&trace);
    }
    // A release binary embeds it (Kernel::with_tuning, as the bindings of
    // a `Builder::tuning` build do): on a new process, with no cache and
    // another driver version, nothing is timed.
    in_fake_gpu_child_phase(
        "stand_in_tuning_embedded_by_the_build_is_used_without_timing",
        "embedded",
        &[env[0], env[1], ("PHOBOS_FAKE_GPU_DRIVER_VERSION", "12080")],
        || {
            let path = std::env::var("PHOBOS_TEST_EXPORT").unwrap();
            let text: &'static str =
                Box::leak(std::fs::read_to_string(path).unwrap().into_boxed_str());
            let kernel = compile_with_tuning(AUTOTUNE_BLOCK, &[75], vec![], text);
            let dev = fake_gpu();
            let n = 3000;
            let x = dev.upload(&values(n, 5), &[n]).unwrap();
            let mut y = dev.zeros::<f32>(&[n]).unwrap();
            kernel
                .launch(&dev, None, &[Arg::from(&x), Arg::from(&mut y)])
                .unwrap();
            let want: Vec<f32> = values(n, 5).iter().map(|v| 2.0 * v).collect();
            assert_eq!(y.to_vec().unwrap(), want);
        },
    );
    if is_child() {
        return;
    }
    assert_eq!(trace_lines(&trace, "cuEventRecord").len(), 0);
    let launches = trace_lines(&trace, "cuLaunchKernel");
    assert_eq!(launches.len(), 1, "{launches:?}");
    assert!(
        launches[0].contains(&format!("{chosen} ")),
        "{launches:?} should run {chosen}"
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_capture_refuses_autotune_timing_and_phobos_sync() {
    in_fake_gpu_child_phase(
        "stand_in_a_capture_refuses_autotune_timing_and_phobos_sync",
        "autotune",
        &[],
        || {
            let dev = fake_gpu();
            let s = dev.new_stream().unwrap();
            let n = 256;
            let x = s.upload(&values(n, 5), &[n]).unwrap();
            let mut y = s.zeros::<f32>(&[n]).unwrap();
            s.begin_capture().unwrap();
            // The first launch for these dims would time both variants.
            let e = tuned_kernel()
                .launch_on(&s, None, &[Arg::from(&x), Arg::from(&mut y)])
                .unwrap_err();
            assert!(matches!(e, LaunchError::Capture { .. }), "{e:?}");
            assert!(e.to_string().contains("N = 256"), "{e}");
            let graph = s.end_capture().unwrap();
            assert_eq!(graph.tensors_kept(), 0);
            // Tuned outside the capture, the same launch is captured.
            tuned_kernel()
                .launch_on(&s, None, &[Arg::from(&x), Arg::from(&mut y)])
                .unwrap();
            s.begin_capture().unwrap();
            tuned_kernel()
                .launch_on(&s, None, &[Arg::from(&x), Arg::from(&mut y)])
                .unwrap();
            let graph = s.end_capture().unwrap();
            y.fill(0.0).unwrap();
            graph.launch().unwrap();
            let want: Vec<f32> = values(n, 5).iter().map(|v| 2.0 * v).collect();
            assert_eq!(s.download(&y).unwrap(), want);
        },
    );
    in_fake_gpu_child_phase(
        "stand_in_a_capture_refuses_autotune_timing_and_phobos_sync",
        "sync",
        &[("PHOBOS_SYNC", "1")],
        || {
            let dev = fake_gpu();
            let s = dev.new_stream().unwrap();
            let kernel = compile(SCALE, &[75], vec![]);
            let x = s.upload(&values(32, 5), &[32]).unwrap();
            let mut y = s.zeros::<f32>(&[32]).unwrap();
            s.begin_capture().unwrap();
            let e = kernel
                .launch_on(&s, Some(Grid::from(1)), &[Arg::from(&x), Arg::from(&mut y)])
                .unwrap_err();
            assert!(matches!(e, LaunchError::Capture { .. }), "{e:?}");
            assert!(e.to_string().contains("PHOBOS_SYNC"), "{e}");
            s.end_capture().unwrap();
        },
    );
}

/// Issue 32: the GPU bundle's bf16 GEMM on a 9.0 stand-in device runs its
/// sm_90a image: `wgmma` from swizzled tiles that TMA fills, through tensor
/// maps the CUDA backend encodes at launch (`cuTensorMapEncodeTiled`, the
/// stand-in's), with the sm_90a variant's own `.param` list (per-target
/// metadata: the sm_80 variant has no tensor maps). Ragged M and N (tiles
/// past both edges, zero-filled by TMA), against an f64 product.
#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_9_0_device_runs_the_bundle_gemm_on_wgmma_and_tma() {
    in_fake_gpu_child(
        "stand_in_a_9_0_device_runs_the_bundle_gemm_on_wgmma_and_tma",
        &[("PHOBOS_FAKE_GPU_CC", "9.0")],
        || {
            use half::bf16;
            const GEMM: &str = include_str!("../../phobos-gpucheck/kernels/bf16_gemm.pho");
            let dev = fake_gpu();
            let sm_90a = phobos_meta::arch::SM_90A;
            let kernel = compile(GEMM, &[80, sm_90a], vec![]);
            let (m, n, k) = (200usize, 136usize, 96usize);
            let a: Vec<bf16> = values(m * k, 7)
                .iter()
                .map(|&v| bf16::from_f32(v))
                .collect();
            let b: Vec<bf16> = values(k * n, 8)
                .iter()
                .map(|&v| bf16::from_f32(v))
                .collect();
            let ta = dev.upload(&a, &[m, k]).unwrap();
            let tb = dev.upload(&b, &[k, n]).unwrap();
            let mut tc = dev.zeros::<f32>(&[m, n]).unwrap();
            kernel
                .launch(
                    &dev,
                    None,
                    &[Arg::from(&ta), Arg::from(&tb), Arg::from(&mut tc)],
                )
                .unwrap();
            let images = dev.loaded_images();
            assert_eq!(images.len(), 1, "{images:?}");
            assert_eq!(
                (images[0].kind, images[0].arch),
                ("ptx", sm_90a),
                "{images:?}"
            );
            let got = tc.to_vec().unwrap();
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|l| {
                            f64::from(a[i * k + l].to_f32()) * f64::from(b[l * n + j].to_f32())
                        })
                        .sum();
                    let mag: f64 = (0..k)
                        .map(|l| {
                            (f64::from(a[i * k + l].to_f32()) * f64::from(b[l * n + j].to_f32()))
                                .abs()
                        })
                        .sum();
                    let err = (f64::from(got[i * n + j]) - want).abs();
                    assert!(
                        err <= mag * k as f64 * f64::from(f32::EPSILON) + 1e-30,
                        "C[{i}, {j}] = {}, want {want}",
                        got[i * n + j]
                    );
                }
            }
        },
    );
}
