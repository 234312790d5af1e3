//! Launches of real compiler output on the simulator backend: a good launch
//! computes the right thing, a second launch reuses the loaded module, and a
//! kernel that writes out of bounds is stopped by the simulator's memcheck.

mod common;

use common::*;
use phobos_runtime::{cdiv, Arg, BindError, Device, Grid, LaunchError};

#[test]
fn a_good_launch_succeeds_and_matches_the_reference() {
    let dev = Device::sim();
    let kernel = compile(LANES_MATVEC, &[75], vec![]);
    let n = 10;
    let (mut m, want) = Matvec::random(&dev, n, 256, 1).unwrap();
    for _ in 0..2 {
        m.y = dev.zeros::<f32>(&[1, n]).unwrap();
        let err = m.launch_error(&kernel, &dev, &want);
        assert!(err < 1e-4, "max error {err}");
    }
}

#[test]
fn an_out_of_bounds_store_is_reported_by_the_simulator() {
    let dev = Device::sim();
    let kernel = compile(UNGUARDED, &[75], vec![]);
    let mut y = dev.zeros::<f32>(&[1, 40]).unwrap();
    let e = kernel
        .launch(&dev, Some(Grid::from(2)), &[Arg::from(&mut y)])
        .unwrap_err();
    let LaunchError::Check { report, .. } = &e else {
        panic!("{e:?}");
    };
    assert!(report.contains("memcheck"), "{report}");
    assert!(report.contains("y = `f32[1, 40]`"), "{report}");
    assert!(
        e.to_string()
            .starts_with("kernel `unguarded` (module `test.pho`, sim): "),
        "{e}"
    );
}

#[test]
fn the_compiled_metadata_drives_the_checks() {
    let dev = Device::sim();
    let kernel = compile(LANES_MATVEC, &[75], vec![]);
    let mut m = Matvec::zeros(&dev, 4, 100).unwrap();
    let e = m.launch(&kernel, &dev, Grid::from(1)).unwrap_err();
    assert!(
        matches!(
            e,
            LaunchError::Bind {
                error: BindError::AlignedViolated {
                    value: 100,
                    multiple: 128,
                    ..
                },
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn a_free_tuning_constant_with_grid_runs_a_variant_with_its_own_grid() {
    let dev = Device::sim();
    let kernel = compile(AUTOTUNE_BLOCK, &[75], vec![]);
    let n = 1000;
    let x = values(n, 5);
    let xt = dev.upload(&x, &[n]).unwrap();
    let mut yt = dev.zeros::<f32>(&[n]).unwrap();
    kernel
        .launch(&dev, None, &[Arg::from(&xt), Arg::from(&mut yt)])
        .unwrap();
    let want: Vec<f64> = x.iter().map(|&v| 2.0 * f64::from(v)).collect();
    assert_eq!(max_error(&yt.to_vec().unwrap(), &want), 0.0);
}

#[test]
fn a_tuned_dim_picks_its_variant_or_is_refused() {
    let dev = Device::sim();
    let kernel = compile(STAGED_MATVEC, &[75], vec![]);
    let n = 6;
    let (mut m, want) = Matvec::random(&dev, n, 256, 8).unwrap();
    assert!(m.launch_error(&kernel, &dev, &want) < 1e-4);
    m.w = dev.zeros::<f32>(&[n, 512]).unwrap();
    m.x = dev.zeros::<f32>(&[1, 512]).unwrap();
    let e = m.launch(&kernel, &dev, Grid::from(2)).unwrap_err();
    assert!(
        matches!(
            e,
            LaunchError::Bind {
                error: BindError::NoVariant { value: 512, .. },
                ..
            }
        ),
        "{e:?}"
    );
}

/// Runs `scale` with `x` and `y` as views of one buffer at the given
/// element offsets.
fn scale_views(dev: &Device, x_at: usize, y_at: usize, n: usize) -> Result<Vec<f32>, LaunchError> {
    let kernel = compile(SCALE, &[75], vec![]);
    let buf = dev.upload(&values(3 * n, 9), &[3 * n]).unwrap();
    let x = buf.view(x_at, &[n]);
    let mut y = buf.view(y_at, &[n]);
    launch_xy(&kernel, dev, cdiv(n, 32), &x, &mut y)?;
    Ok(y.to_vec().unwrap())
}

#[test]
fn a_read_only_tensor_overlapping_a_written_one_is_refused() {
    let dev = Device::sim();
    // y starts 8 elements into x: they share 56 elements.
    let e = scale_views(&dev, 0, 8, 64).unwrap_err();
    let LaunchError::Aliasing { read, written, .. } = &e else {
        panic!("{e:?}");
    };
    assert_eq!((read.as_str(), written.as_str()), ("x", "y"));
    assert!(
        e.to_string()
            .contains("`x` (read-only) overlaps tensor `y`"),
        "{e}"
    );
    assert!(e.to_string().contains("kernel `scale`"), "{e}");
    // The same tensor as both arguments.
    assert!(matches!(
        scale_views(&dev, 64, 64, 64),
        Err(LaunchError::Aliasing { .. })
    ));
    // Adjacent views of one buffer do not overlap.
    let y = scale_views(&dev, 0, 64, 64).unwrap();
    let want: Vec<f32> = values(3 * 64, 9)[..64].iter().map(|v| 2.0 * v).collect();
    assert_eq!(y, want);
}

#[test]
fn fill_sets_every_element_of_a_view() {
    let dev = Device::sim();
    let buf = dev.upload(&[7i32; 100], &[100]).unwrap();
    let mut mid = buf.view(10, &[80]);
    mid.fill(-1).unwrap();
    mid.view(0, &[10]).fill(3).unwrap();
    let all = buf.to_vec().unwrap();
    assert_eq!(&all[..10], &[7; 10]);
    assert_eq!(&all[10..20], &[3; 10]);
    assert_eq!(&all[20..90], &[-1; 70]);
    assert_eq!(&all[90..], &[7; 10]);
    assert!(buf.view(90, &[20]).fill(0).is_err());
    let z = dev.zeros::<f32>(&[0]).unwrap();
    assert!(z.to_vec().unwrap().is_empty());
}

#[test]
fn tiles_above_48_kilobytes_run_as_dynamic_shared_memory() {
    // Built for sm_80, the simulator runs its PTX with 128 KB of dynamic
    // shared memory (sm_80 allows 163 KB per CTA).
    run_tiles_128k(&Device::sim(), 80).unwrap();
}

#[test]
fn the_sim_launch_road_binds_against_the_targets_shared_memory_and_passes_it_dynamically() {
    use phobos_core::binding::{ArgShape, BindError, LaunchRequest};
    use phobos_core::meta::ParamKindMeta;
    use phobos_runtime::sim_launch::{self, Plan};
    use phobos_sim::{KernelArg, LaunchOptions, Module};

    let (kernels, diags) = phobos_core::compile(
        TILES_128K,
        "big.pho",
        &phobos_core::CompileOptions::for_arch(80),
    );
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    let k = &kernels[0];
    let shapes: Vec<Vec<u64>> = vec![vec![64, 256], vec![64, 256], vec![1, 256]];
    let args: Vec<ArgShape<'_>> = k
        .meta
        .params
        .iter()
        .zip(&shapes)
        .map(|(p, s)| match &p.kind {
            ParamKindMeta::Tensor { elem, .. } => ArgShape::of_param(&p.kind, Some((*elem, s))),
            ParamKindMeta::Scalar(_) => unreachable!("three tensors"),
        })
        .collect();
    let request = |arch| LaunchRequest {
        args: &args,
        grid: Some([1, 1, 1]),
        picked: &[],
        limits: sim_launch::limits(arch),
    };
    // sm_75 allows 64 KB per CTA: the refusal names that limit, not 48 KB.
    assert_eq!(
        Plan::bind(&k.meta, &request(75)).unwrap_err(),
        BindError::SharedMemoryTooLarge {
            bytes: 131072,
            limit: 65536
        }
    );
    // On sm_80 the plan runs, its 128 KB passed as dynamic shared memory.
    let plan = Plan::bind(&k.meta, &request(80)).expect("fits sm_80's 163 KB");
    assert_eq!(
        sim_launch::options(plan.variant, &LaunchOptions::default()).dynamic_shared_bytes,
        131072
    );
    let mut dev = phobos_sim::Device::new();
    let (a, b) = (values(64 * 256, 7), values(64 * 256, 8));
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let ids = [
        dev.alloc_from("A", &bytes(&a)).unwrap(),
        dev.alloc_from("B", &bytes(&b)).unwrap(),
        dev.alloc_from("y", &[0; 1024]).unwrap(),
    ];
    let kernel_args = plan
        .kernel_args(|i| Some(KernelArg::Buffer(ids[i])))
        .unwrap();
    let module = Module::parse(&k.ptx).unwrap();
    plan.run(&dev, &module, &kernel_args, &LaunchOptions::default(), None)
        .expect("runs");
    let y = dev.to_vec(ids[2]).unwrap();
    let want: Vec<f32> = (0..256).map(|t| a[3 * 256 + t] + b[5 * 256 + t]).collect();
    assert_eq!(y, bytes(&want));
}

/// The one simulated launch road with a tensor map: the callers of
/// `Plan::kernel_args` (`phobos sim`, explain, profile, the conformance
/// harness, the fuzzer) pass simulator buffers, and the road encodes the
/// map from the buffer's address and the bound shape; a box past the
/// tensor's edge reads zeros.
#[test]
fn the_simulated_launch_road_encodes_tensor_maps_from_buffers() {
    use phobos_runtime::sim_launch::{self, Plan};
    use phobos_sim::{KernelArg, LaunchOptions, Module};
    let meta = common::tma::meta(phobos_meta::ScalarTy::F32, 32, 128);
    let ptx = common::tma::ptx(4, 32, 128);
    let bm = common::tma::BM;
    let (m, n, pm, pn) = (20u64, 36u64, 2 * bm as u64, 64u64);
    let (a_shape, b_shape) = ([m, n], [pm, pn]);
    let args = [
        phobos_meta::binding::ArgShape::of_param(
            &meta.params[0].kind,
            Some((phobos_meta::ScalarTy::F32, &a_shape[..])),
        ),
        phobos_meta::binding::ArgShape::of_param(
            &meta.params[1].kind,
            Some((phobos_meta::ScalarTy::F32, &b_shape[..])),
        ),
    ];
    let request = phobos_meta::binding::LaunchRequest {
        args: &args,
        grid: Some([2, 2, 1]),
        picked: &[],
        limits: sim_launch::limits(90),
    };
    let plan = Plan::bind(&meta, &request).unwrap();
    let mut dev = phobos_sim::Device::new();
    let a: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let ids = [
        dev.alloc_from("A", &bytes(&a)).unwrap(),
        dev.alloc_from("B", &vec![0xff; (pm * pn * 4) as usize])
            .unwrap(),
    ];
    let kernel_args = plan
        .kernel_args(|i| Some(KernelArg::Buffer(ids[i])))
        .unwrap();
    assert!(matches!(&kernel_args[3], KernelArg::TensorMap(_)));
    let module = Module::parse(&ptx).unwrap();
    plan.run(&dev, &module, &kernel_args, &LaunchOptions::default(), None)
        .expect("runs");
    let got = dev.to_vec(ids[1]).unwrap();
    let want: Vec<f32> = (0..pm * pn)
        .map(|i| {
            let (r, c) = (i / pn, i % pn);
            if r < m && c < n {
                a[(r * n + c) as usize]
            } else {
                0.0
            }
        })
        .collect();
    assert_eq!(got, bytes(&want));
}
