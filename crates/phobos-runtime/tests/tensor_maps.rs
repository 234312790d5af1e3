//! Tensor maps made by the runtime at launch (`PtxParam::TensorMap`): a
//! hand-written sm_90a kernel copies one TMA box per CTA of a tensor into
//! shared memory (`cp.async.bulk.tensor`, completed on an mbarrier) and
//! writes the whole box back out, swizzle undone, into a tensor padded to
//! whole boxes. At the ragged edges the box reaches past the tensor, where
//! TMA fills zeros: the output is exact, zeros included.
//!
//! The simulator backend runs it here; the CUDA backend runs the same
//! launches on the driver stand-in (ignored by default; run them with
//! `scripts/with-fake-gpu.sh cargo test -p phobos-runtime --test tensor_maps -- --include-ignored`),
//! where `cuTensorMapEncodeTiled` makes the maps. The refusals of a tensor
//! TMA cannot describe (a base address or a row stride that is not a
//! multiple of 16 bytes) are checked on both backends, before anything
//! reaches the driver.

mod common;

use common::tma::{all_copies, kernel, BM};
use common::{fake_gpu, in_fake_gpu_child};
use phobos_meta::ScalarTy;
use phobos_runtime::{Arg, BindError, Device, Grid, LaunchError, Tensor};

#[test]
fn the_simulator_backend_launches_tma_copies_exactly() {
    all_copies(&Device::sim());
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_the_cuda_backend_encodes_tensor_maps_with_the_driver() {
    in_fake_gpu_child(
        "stand_in_the_cuda_backend_encodes_tensor_maps_with_the_driver",
        &[("PHOBOS_FAKE_GPU_CC", "9.0")],
        || all_copies(&fake_gpu()),
    );
}

/// The refusal of launching the f32 kernel (32-element box) on `a`.
fn refusal(dev: &Device, a: &Tensor<f32>) -> LaunchError {
    let k = kernel(ScalarTy::F32, 32, 128);
    let (m, n) = (a.shape()[0], a.shape()[1]);
    let mut b = dev
        .zeros::<f32>(&[m.div_ceil(BM) * BM, n.div_ceil(32) * 32])
        .unwrap();
    k.launch(
        dev,
        Some(Grid::from((1, 1))),
        &[Arg::from(a), Arg::from(&mut b)],
    )
    .unwrap_err()
}

/// A base address TMA cannot take (a view 4 bytes into a buffer) and a
/// row stride it cannot (7 f32s, 28 bytes) are refused before the launch,
/// naming the kernel, the tensor and the rule.
fn refusals(dev: &Device) {
    let whole = dev.zeros::<f32>(&[1 + 20 * 64]).unwrap();
    let view = whole.view(1, &[20, 64]);
    let e = refusal(dev, &view);
    assert!(
        matches!(&e, LaunchError::Bind { error: BindError::TensorMapAddress { param, .. }, .. } if param == "A"),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.contains("kernel `tma_copy`"), "{text}");
    assert!(text.contains("`A` starts at"), "{text}");
    assert!(
        text.contains("multiple of the 16 bytes its tensor map (TMA) needs"),
        "{text}"
    );

    let narrow = dev.zeros::<f32>(&[20, 7]).unwrap();
    let e = refusal(dev, &narrow);
    assert!(
        matches!(&e, LaunchError::Bind { error: BindError::TensorMapStride { param, axis: 0, stride: 28, .. }, .. } if param == "A"),
        "{e:?}"
    );
    let text = e.to_string();
    assert!(text.contains("kernel `tma_copy`"), "{text}");
    assert!(
        text.contains("tensor `A` of shape [20, 7] steps 28 bytes along axis 0"),
        "{text}"
    );
}

#[test]
fn the_simulator_backend_refuses_tensors_tma_cannot_describe() {
    refusals(&Device::sim());
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_the_cuda_backend_refuses_tensors_tma_cannot_describe() {
    in_fake_gpu_child(
        "stand_in_the_cuda_backend_refuses_tensors_tma_cannot_describe",
        &[("PHOBOS_FAKE_GPU_CC", "9.0")],
        || refusals(&fake_gpu()),
    );
}

/// Memory another library allocated, borrowed 4 bytes into its buffer and
/// launched on a stream: refused the same way (the `_on` form, foreign
/// memory).
#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_misaligned_foreign_tensor_is_refused_and_an_aligned_one_runs() {
    in_fake_gpu_child(
        "stand_in_a_misaligned_foreign_tensor_is_refused_and_an_aligned_one_runs",
        &[("PHOBOS_FAKE_GPU_CC", "9.0")],
        || {
            use cudarc::driver::CudaSlice;
            let dev = fake_gpu();
            let ctx = dev.cudarc_context().unwrap();
            let theirs = ctx.new_stream().unwrap();
            let s = dev.wrap_stream(std::sync::Arc::clone(&theirs)).unwrap();
            let (m, n) = (20, 64);
            let host: Vec<f32> = (0..m * n + 4).map(|i| i as f32).collect();
            let x: CudaSlice<f32> = theirs.clone_htod(&host).unwrap();
            let mut y: CudaSlice<f32> = theirs.alloc_zeros(2 * BM * 64).unwrap();
            let k = kernel(ScalarTy::F32, 32, 128);
            let grid = Some(Grid::from((2, 2)));
            let misaligned = x.slice(1..);
            let a = s.borrow(&misaligned, &[m, n]).unwrap();
            let mut b = s.borrow_mut(&mut y, &[2 * BM, 64]).unwrap();
            let e = k
                .launch_on(&s, grid, &[Arg::from(&a), Arg::from(&mut b)])
                .unwrap_err();
            assert!(
                matches!(
                    &e,
                    LaunchError::Bind {
                        error: BindError::TensorMapAddress { .. },
                        ..
                    }
                ),
                "{e:?}"
            );
            assert!(e.to_string().contains("kernel `tma_copy`"), "{e}");
            drop(a);
            let aligned = x.slice(4..);
            let a = s.borrow(&aligned, &[m, n]).unwrap();
            k.launch_on(&s, grid, &[Arg::from(&a), Arg::from(&mut b)])
                .unwrap_or_else(|e| panic!("{e}"));
            drop((a, b));
            let got = theirs.clone_dtoh(&y).unwrap();
            for r in 0..2 * BM {
                for c in 0..64 {
                    let want = if r < m { host[4 + r * n + c] } else { 0.0 };
                    assert_eq!(got[r * 64 + c], want, "({r}, {c})");
                }
            }
        },
    );
}

/// A driver that refuses `cuTensorMapEncodeTiled` (injected): the launch
/// fails with the driver's error, naming the kernel and the tensor, and
/// nothing is launched. (This is also what shows the CUDA backend asks the
/// driver for its maps: the simulator's encoding would not fail here.)
#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_driver_refusing_the_map_fails_the_launch_naming_the_tensor() {
    in_fake_gpu_child(
        "stand_in_a_driver_refusing_the_map_fails_the_launch_naming_the_tensor",
        &[
            ("PHOBOS_FAKE_GPU_CC", "9.0"),
            ("PHOBOS_FAKE_GPU_FAIL", "cuTensorMapEncodeTiled"),
        ],
        || {
            let dev = fake_gpu();
            let a = dev.zeros::<f32>(&[16, 32]).unwrap();
            let e = refusal(&dev, &a);
            assert!(matches!(e, LaunchError::Backend { .. }), "{e:?}");
            let text = e.to_string();
            assert!(text.contains("kernel `tma_copy`"), "{text}");
            assert!(
                text.contains("the tensor map of `A`: cuTensorMapEncodeTiled failed"),
                "{text}"
            );
        },
    );
}

/// A TMA launch captured into a graph keeps its tensor map (made at
/// capture, from the tensor's address) and replays exactly.
fn captured(dev: &Device) {
    let (m, n, bn) = (21, 40, 16);
    let k = kernel(ScalarTy::F32, bn, 64);
    let a_host: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
    let a = dev.upload(&a_host, &[m, n]).unwrap();
    let (pm, pn) = (2 * BM, 3 * bn);
    let mut b = dev.upload(&vec![7.0f32; pm * pn], &[pm, pn]).unwrap();
    let s = dev.new_stream().unwrap();
    s.begin_capture().unwrap();
    k.launch_on(
        &s,
        Some(Grid::from((3, 2))),
        &[Arg::from(&a), Arg::from(&mut b)],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let graph = s.end_capture().unwrap();
    assert_eq!(
        s.download(&b).unwrap(),
        vec![7.0; pm * pn],
        "captured, not run"
    );
    graph.launch_on(&s).unwrap();
    let got = s.download(&b).unwrap();
    for r in 0..pm {
        for c in 0..pn {
            let want = if r < m && c < n {
                a_host[r * n + c]
            } else {
                0.0
            };
            assert_eq!(got[r * pn + c], want, "({r}, {c})");
        }
    }
}

#[test]
fn the_simulator_backend_replays_a_captured_tma_launch() {
    captured(&Device::sim());
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_captured_tma_launch_replays() {
    in_fake_gpu_child(
        "stand_in_a_captured_tma_launch_replays",
        &[("PHOBOS_FAKE_GPU_CC", "9.0")],
        || captured(&fake_gpu()),
    );
}
