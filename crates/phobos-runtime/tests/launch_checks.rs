//! Every way a launch is refused, each produced on the simulator backend
//! with a hand-made kernel description, and checked to name the kernel,
//! module and architecture. (A refused launch never reaches the backend, so
//! these need no PTX that runs.)

use phobos_core::ast::ScalarTy;
use phobos_runtime::meta::{
    DimMeta, DimRefMeta, GridExpr, KernelMeta, ParamKindMeta, ParamMeta, PtxParam, VariantMeta,
};
use phobos_runtime::{
    Arg, BindError, Device, DeviceError, Grid, Kernel, KernelSource, LaunchError, Tensor,
};

fn tensor(
    name: &str,
    elem: ScalarTy,
    dims: &[&str],
    written: bool,
    vector_bytes: u32,
) -> ParamMeta {
    ParamMeta {
        name: name.to_string(),
        kind: ParamKindMeta::Tensor {
            elem,
            dims: dims
                .iter()
                .map(|d| match d.parse() {
                    Ok(c) => DimRefMeta::Const(c),
                    Err(_) => DimRefMeta::Named(d.to_string()),
                })
                .collect(),
            written,
            vector_bytes,
        },
    }
}

fn variant(entry: &str, values: Vec<(String, i64)>, threads: u32) -> VariantMeta {
    VariantMeta {
        entry: entry.to_string(),
        values,
        threads,
        grid: None,
        ptx_params: vec![
            PtxParam::TensorPtr("W".into()),
            PtxParam::TensorPtr("x".into()),
            PtxParam::TensorPtr("y".into()),
            PtxParam::Dim("N".into()),
        ],
        shared_bytes: 0,
        shared_plan: vec![],
        barriers: vec![],
        loads: vec![],
        arrays: vec![],
    }
}

/// `lanes_matvec` as the backend would describe it.
fn matvec_meta() -> KernelMeta {
    KernelMeta {
        name: "lanes_matvec".into(),
        source_file: "kernels/lanes_matvec.pho".into(),
        params: vec![
            tensor("W", ScalarTy::F32, &["N", "K"], false, 16),
            tensor("x", ScalarTy::F32, &["1", "K"], false, 16),
            tensor("y", ScalarTy::F32, &["1", "N"], true, 4),
        ],
        dims: vec![
            DimMeta {
                name: "N".into(),
                defined_by: vec![("W".into(), 0), ("y".into(), 1)],
                autotuned: false,
            },
            DimMeta {
                name: "K".into(),
                defined_by: vec![("W".into(), 1), ("x".into(), 1)],
                autotuned: false,
            },
        ],
        aligned: vec![("K".into(), 128)],
        threads: 128,
        grid: None,
        autotune: vec![],
        variants: vec![variant("lanes_matvec", vec![], 128)],
        arch_variants: vec![],
    }
}

fn kernel(meta: &KernelMeta) -> Kernel {
    let ron = ron::to_string(meta).expect("metadata serializes");
    Kernel::new(KernelSource {
        name: Box::leak(meta.name.clone().into_boxed_str()),
        module: Box::leak(meta.source_file.clone().into_boxed_str()),
        meta: Box::leak(ron.into_boxed_str()),
        ptx: &[],
        cubins: &[],
    })
}

struct Args {
    w: Tensor<f32>,
    x: Tensor<f32>,
    y: Tensor<f32>,
}

fn args(dev: &Device, n: usize, k: usize) -> Args {
    Args {
        w: dev.zeros(&[n, k]).unwrap(),
        x: dev.zeros(&[1, k]).unwrap(),
        y: dev.zeros(&[1, n]).unwrap(),
    }
}

fn launch(k: &Kernel, dev: &Device, grid: Option<Grid>, a: &mut Args) -> Result<(), LaunchError> {
    k.launch(
        dev,
        grid,
        &[Arg::from(&a.w), Arg::from(&a.x), Arg::from(&mut a.y)],
    )
}

fn refused(meta: &KernelMeta, grid: Option<Grid>, n: usize, k: usize) -> LaunchError {
    let dev = Device::sim();
    let mut a = args(&dev, n, k);
    launch(&kernel(meta), &dev, grid, &mut a).expect_err("the launch is refused")
}

fn assert_names_the_site(e: &LaunchError) {
    let text = e.to_string();
    assert!(
        text.starts_with("kernel `lanes_matvec` (module `kernels/lanes_matvec.pho`, sim): "),
        "{text}"
    );
}

#[test]
fn dims_with_the_same_name_must_agree() {
    let dev = Device::sim();
    let mut a = args(&dev, 8, 128);
    a.x = dev.zeros(&[1, 256]).unwrap();
    let e = launch(&kernel(&matvec_meta()), &dev, Some(Grid::from(2)), &mut a).unwrap_err();
    assert!(
        matches!(&e, LaunchError::Bind { error: BindError::DimMismatch { dim, .. }, .. } if dim == "K"),
        "{e:?}"
    );
    assert_names_the_site(&e);
    assert!(
        e.to_string()
            .contains("it is 128 from `W` (axis 1) but 256 from `x` (axis 1)"),
        "{e}"
    );
}

#[test]
fn a_buffer_shorter_than_its_shape_is_refused() {
    let dev = Device::sim();
    let mut a = args(&dev, 8, 128);
    a.w = a.w.reshape(&[9, 128]);
    a.y = dev.zeros(&[1, 9]).unwrap();
    let e = launch(&kernel(&matvec_meta()), &dev, Some(Grid::from(3)), &mut a).unwrap_err();
    assert!(
        matches!(&e, LaunchError::Bind { error: BindError::BufferTooShort { param, needed: 1152, available: 1024, .. }, .. } if param == "W"),
        "{e:?}"
    );
    assert_names_the_site(&e);
}

#[test]
fn an_aligned_fact_that_fails_is_refused() {
    let e = refused(&matvec_meta(), Some(Grid::from(2)), 8, 96);
    assert!(
        matches!(&e, LaunchError::Bind { error: BindError::AlignedViolated { dim, value: 96, multiple: 128, .. }, .. } if dim == "K"),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("@aligned(K = 128) does not hold"),
        "{e}"
    );
}

#[test]
fn a_vector_loaded_tensor_must_start_aligned() {
    let dev = Device::sim();
    let mut a = args(&dev, 8, 128);
    let big: Tensor<f32> = dev.zeros(&[8 * 128 + 1]).unwrap();
    a.w = big.view(1, &[8, 128]);
    let e = launch(&kernel(&matvec_meta()), &dev, Some(Grid::from(2)), &mut a).unwrap_err();
    assert!(
        matches!(&e, LaunchError::Bind { error: BindError::UnalignedBase { param, required: 16, .. }, .. } if param == "W"),
        "{e:?}"
    );
    assert_names_the_site(&e);
}

#[test]
fn grid_and_block_beyond_the_device_limits_are_refused() {
    let e = refused(&matvec_meta(), Some(Grid([1, 70_000, 1])), 8, 128);
    assert!(
        matches!(
            &e,
            LaunchError::Bind {
                error: BindError::GridTooLarge {
                    grid: [1, 70_000, 1],
                    ..
                },
                ..
            }
        ),
        "{e:?}"
    );
    let mut meta = matvec_meta();
    meta.variants[0].threads = 2048;
    let e = refused(&meta, Some(Grid::from(1)), 8, 128);
    assert!(
        matches!(
            &e,
            LaunchError::Bind {
                error: BindError::BlockTooLarge {
                    threads: 2048,
                    limit: 1024,
                    ..
                },
                ..
            }
        ),
        "{e:?}"
    );
    let mut meta = matvec_meta();
    meta.variants[0].shared_bytes = 100_000;
    let e = refused(&meta, Some(Grid::from(1)), 8, 128);
    assert!(
        matches!(
            &e,
            LaunchError::Bind {
                error: BindError::SharedMemoryTooLarge { .. },
                ..
            }
        ),
        "{e:?}"
    );
    let e = refused(&matvec_meta(), Some(Grid([0, 1, 1])), 8, 128);
    assert!(
        matches!(
            &e,
            LaunchError::Bind {
                error: BindError::InvalidGrid { .. },
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn a_tuned_dim_no_variant_covers_is_refused() {
    let mut meta = matvec_meta();
    meta.name = "lanes_matvec".into();
    meta.autotune = vec![("K".into(), vec![256])];
    meta.dims[1].autotuned = true;
    meta.variants = vec![variant("lanes_matvec__K256", vec![("K".into(), 256)], 128)];
    let e = refused(&meta, Some(Grid::from(2)), 8, 512);
    assert!(
        matches!(&e, LaunchError::Bind { error: BindError::NoVariant { dim, value: 512, candidates, .. }, .. } if dim == "K" && candidates == &[256]),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("no variant is compiled for K = 512"),
        "{e}"
    );
}

#[test]
fn shapes_must_match_the_declaration() {
    let dev = Device::sim();
    let mut a = args(&dev, 8, 128);
    a.x = dev.zeros(&[2, 128]).unwrap();
    let e = launch(&kernel(&matvec_meta()), &dev, Some(Grid::from(2)), &mut a).unwrap_err();
    assert!(
        matches!(
            &e,
            LaunchError::Bind {
                error: BindError::ConstDim {
                    axis: 0,
                    expected: 1,
                    actual: 2,
                    ..
                },
                ..
            }
        ),
        "{e:?}"
    );
    a.x = dev.zeros(&[128]).unwrap();
    let e = launch(&kernel(&matvec_meta()), &dev, Some(Grid::from(2)), &mut a).unwrap_err();
    assert!(
        matches!(
            &e,
            LaunchError::Bind {
                error: BindError::Rank {
                    expected: 2,
                    actual: 1,
                    ..
                },
                ..
            }
        ),
        "{e:?}"
    );
    let huge: Tensor<f32> = dev.zeros(&[1]).unwrap();
    a.w = huge.view(0, &[1 << 31, 128]);
    a.x = dev.zeros(&[1, 128]).unwrap();
    let e = launch(&kernel(&matvec_meta()), &dev, Some(Grid::from(2)), &mut a).unwrap_err();
    assert!(
        matches!(
            &e,
            LaunchError::Bind {
                error: BindError::DimTooLarge { .. },
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn tensors_of_another_device_are_refused() {
    let (dev, other) = (Device::sim(), Device::sim());
    let mut a = args(&dev, 8, 128);
    a.x = other.zeros(&[1, 128]).unwrap();
    let e = launch(&kernel(&matvec_meta()), &dev, Some(Grid::from(2)), &mut a).unwrap_err();
    assert!(
        matches!(&e, LaunchError::WrongDevice { param, .. } if param == "x"),
        "{e:?}"
    );
}

#[test]
fn grid_comes_from_the_argument_or_from_at_grid() {
    // No @grid and no grid argument: the bindings would not compile, but a
    // hand-written call gets a clear error.
    let e = refused(&matvec_meta(), None, 8, 128);
    assert!(e.to_string().contains("needs a grid"), "{e}");
    // @grid(cdiv(N, ctx.warps)) divided by zero warps is refused.
    let mut meta = matvec_meta();
    meta.grid = Some(vec![GridExpr::Cdiv(
        Box::new(GridExpr::Dim("N".into())),
        Box::new(GridExpr::Const(0)),
    )]);
    let e = refused(&meta, None, 8, 128);
    assert!(
        matches!(
            &e,
            LaunchError::Bind {
                error: BindError::InvalidGrid { .. },
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn arguments_that_do_not_match_the_parameters_are_refused() {
    let dev = Device::sim();
    let a = args(&dev, 8, 128);
    let k = kernel(&matvec_meta());
    let e = k
        .launch(
            &dev,
            Some(Grid::from(1)),
            &[Arg::from(&a.w), Arg::from(&a.x), Arg::scalar(1.0f32)],
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("parameter `y` is tensor<f32>, the argument is f32"),
        "{e}"
    );
    let i: Tensor<i32> = dev.zeros(&[1, 8]).unwrap();
    let e = k
        .launch(
            &dev,
            Some(Grid::from(1)),
            &[Arg::from(&a.w), Arg::from(&a.x), Arg::from(&i)],
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            LaunchError::Bind {
                error: BindError::Kind { .. },
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn unreadable_metadata_is_an_error_not_a_panic() {
    let k = Kernel::new(KernelSource {
        name: "k",
        module: "k.pho",
        meta: "not ron",
        ptx: &[],
        cubins: &[],
    });
    let e = k
        .launch(&Device::sim(), Some(Grid::from(1)), &[])
        .unwrap_err();
    assert!(matches!(e, LaunchError::Metadata { .. }), "{e:?}");
}

#[test]
fn host_transfers_round_trip_and_check_shapes() {
    let dev = Device::sim();
    let mut t = dev.upload(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(t.to_vec().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    t.copy_from(&[5.0, 6.0, 7.0, 8.0]).unwrap();
    assert_eq!(t.view(2, &[2]).to_vec().unwrap(), vec![7.0, 8.0]);
    assert!(matches!(
        dev.upload(&[1i8, 2], &[3]),
        Err(DeviceError::Shape { .. })
    ));
    assert!(matches!(
        t.reshape(&[3, 2]).to_vec(),
        Err(DeviceError::OutOfBounds { .. })
    ));
}

#[test]
fn without_libcuda_the_cuda_backend_is_an_error() {
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    match Device::cuda(0) {
        Err(DeviceError::NoDriver) => assert!(!present),
        Err(e) => assert!(present, "{e}"),
        Ok(dev) => assert!(present && dev.arch().is_some()),
    }
    if !present {
        assert_eq!(
            DeviceError::NoDriver.to_string(),
            "no CUDA driver (libcuda) found on this machine; use the simulator (Device::sim() or PHOBOS_BACKEND=sim)"
        );
    }
}

/// One wording of launch refusals: a refusal is the binding's own error
/// (`LaunchError::Bind`, its `source`), and its message is the binding's
/// message after the call site — for every kind of refusal
/// (`BindError::examples`, whose messages phobos-meta snapshots).
#[test]
fn every_refusal_is_the_bindings_message_after_the_call_site() {
    let site = phobos_runtime::Site {
        kernel: "lanes_matvec".into(),
        module: "kernels/matvec.pho".into(),
        arch: "sim".into(),
    };
    for error in BindError::examples() {
        let want = format!("{site}: {error}");
        let e = LaunchError::Bind {
            site: Box::new(site.clone()),
            error: error.clone(),
        };
        assert_eq!(e.to_string(), want);
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source, Some(error.to_string()));
    }
    // And a real refusal arrives so.
    let e = refused(&matvec_meta(), Some(Grid([1, 70_000, 1])), 8, 128);
    assert_names_the_site(&e);
    assert!(
        e.to_string()
            .ends_with("grid [1, 70000, 1] exceeds the device's limit [2147483647, 65535, 65535]"),
        "{e}"
    );
}
