//! Streams, events and other libraries' memory, on every backend this
//! machine has: the simulator always, and the CUDA backend when a driver
//! opens (a GPU, or the driver stand-in under `scripts/with-fake-gpu.sh`).
//! The tests that need cudarc memory run on the CUDA backend only; the
//! simulator's refusals of it are tested here too.

mod common;

use common::*;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use phobos_runtime::{
    Arg, BackendKind, Device, DeviceError, ForeignTensor, ForeignTensorMut, Grid, LaunchError,
    Stream, Tensor,
};
use std::sync::Arc;

/// The simulator, and the GPU (or the stand-in) when one opens.
fn devices() -> Vec<Device> {
    let mut out = vec![Device::sim()];
    if let Ok(d) = Device::cuda(0) {
        out.push(d);
    }
    out
}

/// The CUDA device, when this machine (or the stand-in) has one.
fn cuda() -> Option<Device> {
    Device::cuda(0).ok()
}

/// `y = 2 x` on `stream`.
fn scale_on(
    stream: &Stream,
    x: &impl phobos_runtime::TensorIn<f32>,
    y: &mut impl phobos_runtime::TensorOut<f32>,
    n: usize,
) -> Result<(), LaunchError> {
    let kernel = scale_kernel();
    kernel.launch_on(
        stream,
        Some(Grid::from(phobos_runtime::cdiv(n, 32))),
        &[x.arg(), y.arg()],
    )
}

fn scale_kernel() -> &'static phobos_runtime::Kernel {
    static K: std::sync::OnceLock<phobos_runtime::Kernel> = std::sync::OnceLock::new();
    K.get_or_init(|| compile(SCALE, &[75], vec![]))
}

#[test]
fn launches_on_a_stream_run_in_order_and_downloads_wait_for_them() {
    for dev in devices() {
        let s = dev.new_stream().unwrap();
        let n = 100;
        let x0 = values(n, 7);
        let x = s.upload(&x0, &[n]).unwrap();
        let mut y = s.zeros::<f32>(&[n]).unwrap();
        let mut z = s.zeros::<f32>(&[n]).unwrap();
        // z depends on y: in order on one stream, no synchronization between.
        scale_on(&s, &x, &mut y, n).unwrap();
        scale_on(&s, &y, &mut z, n).unwrap();
        let got = s.download(&z).unwrap();
        let want: Vec<f32> = x0.iter().map(|v| 4.0 * v).collect();
        assert_eq!(got, want, "{dev:?}");
        // The default stream is a stream like the others.
        let d = dev.default_stream();
        let mut w: Tensor<f32> = d.upload(&x0, &[n]).unwrap();
        d.copy_to(&x0, &mut w).unwrap();
        scale_on(&d, &z, &mut w, n).unwrap();
        s.synchronize().unwrap();
        dev.synchronize().unwrap();
        assert_eq!(w.to_vec().unwrap()[1], 8.0 * x0[1], "{dev:?}");
    }
}

#[test]
fn an_event_orders_work_across_streams_and_times_it() {
    for dev in devices() {
        let (a, b) = (dev.new_stream().unwrap(), dev.new_stream().unwrap());
        let n = 64;
        let x0 = values(n, 3);
        let x = a.upload(&x0, &[n]).unwrap();
        let mut y = a.zeros::<f32>(&[n]).unwrap();
        let mut z = b.zeros::<f32>(&[n]).unwrap();
        let start = a.record().unwrap();
        scale_on(&a, &x, &mut y, n).unwrap();
        let produced = a.record().unwrap();
        // b reads y only after a wrote it.
        b.wait(&produced).unwrap();
        scale_on(&b, &y, &mut z, n).unwrap();
        let done = b.record().unwrap();
        done.synchronize().unwrap();
        let got = b.download(&z).unwrap();
        assert_eq!(got[5], 4.0 * x0[5], "{dev:?}");
        let ms = start.elapsed_ms(&produced).unwrap();
        assert!(ms >= 0.0 && ms.is_finite(), "{dev:?}: {ms}");
        let total = start.elapsed_ms(&done).unwrap();
        assert!(total >= ms, "{dev:?}: {total} < {ms}");
        if dev.kind() == BackendKind::Cuda && dev.name().contains("phobos-sim") {
            // The stand-in's clock: a launch takes simulated time.
            assert!(ms > 0.0, "{ms}");
        }
    }
}

#[test]
fn events_streams_and_tensors_of_another_device_are_refused() {
    for dev in devices() {
        let other = Device::sim();
        let s = dev.new_stream().unwrap();
        let foreign_event = other.new_stream().unwrap().record().unwrap();
        let e = s.wait(&foreign_event).unwrap_err();
        assert!(matches!(e, DeviceError::OtherContext { .. }), "{e:?}");
        let t = other.upload(&[1.0f32; 4], &[4]).unwrap();
        let e = s.download(&t).unwrap_err();
        assert!(matches!(e, DeviceError::OtherContext { .. }), "{e:?}");
        let e = s.record().unwrap().elapsed_ms(&foreign_event).unwrap_err();
        assert!(matches!(e, DeviceError::OtherContext { .. }), "{e:?}");
        // A launch on a stream of one device with a tensor of another.
        let mut y = dev.zeros::<f32>(&[4]).unwrap();
        let e = scale_on(&s, &t, &mut y, 4).unwrap_err();
        assert!(matches!(e, LaunchError::WrongDevice { .. }), "{e:?}");
    }
}

#[test]
fn the_simulator_refuses_foreign_cuda_memory_with_a_typed_error() {
    let dev = Device::sim();
    let e =
        unsafe { ForeignTensor::<f32>::from_raw(&dev, 0x1000, 16, &[16], std::ptr::null_mut()) }
            .unwrap_err();
    assert!(matches!(e, DeviceError::NotCuda { .. }), "{e:?}");
    assert!(e.to_string().contains("simulator"), "{e}");
}

#[test]
fn cudarc_buffers_are_launched_on_without_copies() {
    let Some(dev) = cuda() else { return };
    let ctx = dev.cudarc_context().unwrap();
    let theirs: Arc<CudaStream> = ctx.new_stream().unwrap();
    let s = dev.wrap_stream(Arc::clone(&theirs)).unwrap();
    let n = 96;
    let x0 = values(n, 11);
    let x: CudaSlice<f32> = theirs.clone_htod(&x0).unwrap();
    let mut y: CudaSlice<f32> = theirs.alloc_zeros(n).unwrap();
    {
        let xb = s.borrow(&x, &[n]).unwrap();
        let mut yb = s.borrow_mut(&mut y, &[n]).unwrap();
        // The launch writes the program's own buffer in place.
        scale_on(&s, &xb, &mut yb, n).unwrap();
        assert_eq!(yb.shape(), &[n]);
    }
    let got = theirs.clone_dtoh(&y).unwrap();
    assert_eq!(got[n - 1], 2.0 * x0[n - 1]);
    // A view of part of the buffer, as a 2-D tensor.
    let half = x.slice(0..n / 2);
    let mut out: CudaSlice<f32> = theirs.alloc_zeros(n / 2).unwrap();
    {
        let xb = s.borrow(&half, &[n / 2]).unwrap();
        let mut ob = s.borrow_mut(&mut out, &[n / 2]).unwrap();
        scale_on(&s, &xb, &mut ob, n / 2).unwrap();
    }
    assert_eq!(theirs.clone_dtoh(&out).unwrap()[3], 2.0 * x0[3]);
}

#[test]
fn a_foreign_buffer_too_small_for_its_shape_is_refused() {
    let Some(dev) = cuda() else { return };
    let s = dev.new_stream().unwrap();
    let ctx = dev.cudarc_context().unwrap();
    let x: CudaSlice<f32> = ctx.default_stream().alloc_zeros(10).unwrap();
    let e = s.borrow(&x, &[3, 4]).unwrap_err();
    assert_eq!(
        e,
        DeviceError::ForeignTooSmall {
            shape: vec![3, 4],
            needed: 12,
            len: 10
        }
    );
    // The raw constructor checks the same.
    use cudarc::driver::DevicePtr;
    let ptr = x.device_ptr(&ctx.default_stream()).0;
    let raw = ctx.cu_ctx().cast();
    let e = unsafe { ForeignTensorMut::<f32>::from_raw(&dev, ptr, 10, &[11], raw) }.unwrap_err();
    assert!(
        matches!(e, DeviceError::ForeignTooSmall { needed: 11, .. }),
        "{e:?}"
    );
    // And a raw pointer of the right size launches.
    let y0 = unsafe { ForeignTensor::<f32>::from_raw(&dev, ptr, 10, &[10], raw) }.unwrap();
    let mut y = dev.zeros::<f32>(&[10]).unwrap();
    scale_on(&dev.default_stream(), &y0, &mut y, 10).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![0.0; 10]);
}

#[test]
fn a_stream_or_buffer_of_another_context_is_refused() {
    let Some(dev) = cuda() else { return };
    use cudarc::driver::sys;
    // Another context on the same GPU, as another library may make.
    let mut raw = std::ptr::null_mut();
    unsafe { sys::cuCtxCreate_v2(&mut raw, 0, 0) }
        .result()
        .unwrap();
    let other = unsafe { CudaContext::from_raw_context(0, 0, raw) }.unwrap();
    let theirs = other.new_stream().unwrap();
    let e = dev.wrap_stream(Arc::clone(&theirs)).unwrap_err();
    assert!(matches!(e, DeviceError::OtherContext { .. }), "{e:?}");
    assert!(e.to_string().contains("another CUDA context"), "{e}");
    let x: CudaSlice<f32> = theirs.alloc_zeros(8).unwrap();
    let s = dev.new_stream().unwrap();
    let e = s.borrow(&x, &[8]).unwrap_err();
    assert!(matches!(e, DeviceError::OtherContext { .. }), "{e:?}");
    let e =
        unsafe { ForeignTensor::<f32>::from_raw(&dev, 0x1000, 8, &[8], raw.cast()) }.unwrap_err();
    assert!(matches!(e, DeviceError::OtherContext { .. }), "{e:?}");
    drop(x);
    drop(theirs);
}

#[test]
fn a_foreign_borrow_is_launched_on_its_stream_and_aliasing_is_checked() {
    let Some(dev) = cuda() else { return };
    let (s, t) = (dev.new_stream().unwrap(), dev.new_stream().unwrap());
    let ctx = dev.cudarc_context().unwrap();
    let mut buf: CudaSlice<f32> = ctx.default_stream().alloc_zeros(64).unwrap();
    let mut y = dev.zeros::<f32>(&[64]).unwrap();
    {
        let xb = s.borrow(&buf, &[64]).unwrap();
        let e = scale_on(&t, &xb, &mut y, 64).unwrap_err();
        assert!(
            matches!(&e, LaunchError::Arguments { message, .. } if message.contains("another stream")),
            "{e:?}"
        );
    }
    // Read-only and written views of one foreign buffer that overlap.
    let base = {
        use cudarc::driver::DevicePtr;
        buf.device_ptr(&ctx.default_stream()).0
    };
    let raw = ctx.cu_ctx().cast();
    let x = unsafe { ForeignTensor::<f32>::from_raw(&dev, base, 64, &[32], raw) }.unwrap();
    let mut w = s.borrow_mut(&mut buf, &[32]).unwrap();
    let e = scale_kernel()
        .launch_on(&s, Some(Grid::from(1)), &[Arg::from(&x), Arg::from(&mut w)])
        .unwrap_err();
    assert!(matches!(e, LaunchError::Aliasing { .. }), "{e:?}");
}

#[test]
fn a_device_over_the_programs_cudarc_context_shares_its_memory() {
    let Some(gpu) = cuda() else { return };
    let ctx = gpu.cudarc_context().unwrap();
    drop(gpu);
    let dev = Device::from_cudarc(Arc::clone(&ctx)).unwrap();
    assert_eq!(dev.kind(), BackendKind::Cuda);
    let s = dev.wrap_stream(ctx.default_stream()).unwrap();
    let x: CudaSlice<f32> = ctx.default_stream().clone_htod(&[1.0f32, 2.0]).unwrap();
    let mut y = dev.zeros::<f32>(&[2]).unwrap();
    scale_on(&s, &s.borrow(&x, &[2]).unwrap(), &mut y, 2).unwrap();
    assert_eq!(s.download(&y).unwrap(), vec![2.0, 4.0]);
}

/// The Phobos side of a candle `CustomOp1::cuda_fwd`, as docs/interop.md
/// shows it: candle hands over its input as a cudarc `CudaSlice<f32>` on
/// its device's stream (`storage.as_cuda_slice::<f32>()`,
/// `device.cuda_stream()`); the op launches on that stream into a slice
/// it allocates there, which candle wraps as the output
/// (`CudaStorage::wrap_cuda_slice`). The Phobos device is made once per op.
struct Doubled {
    device: std::sync::OnceLock<Device>,
}

impl Doubled {
    fn phobos_fwd(
        &self,
        input: &CudaSlice<f32>,
        candle_stream: &Arc<CudaStream>,
        shape: &[usize],
    ) -> Result<CudaSlice<f32>, Box<dyn std::error::Error>> {
        let device = match self.device.get() {
            Some(d) => d,
            None => {
                let d = Device::from_cudarc(Arc::clone(candle_stream.context()))?;
                self.device.get_or_init(|| d)
            }
        };
        let stream = device.wrap_stream(Arc::clone(candle_stream))?;
        let n: usize = shape.iter().product();
        let mut out = candle_stream.alloc_zeros::<f32>(n)?;
        {
            let x = stream.borrow(input, &[n])?;
            let mut y = stream.borrow_mut(&mut out, &[n])?;
            // A generated binding's stream form, `scale_on(&stream, &x, &mut y)`.
            scale_on(&stream, &x, &mut y, n)?;
        }
        Ok(out)
    }
}

#[test]
fn a_candle_style_custom_op_launches_on_candles_stream_and_memory() {
    let Some(gpu) = cuda() else { return };
    let ctx = gpu.cudarc_context().unwrap();
    let candle_stream = ctx.new_stream().unwrap();
    let op = Doubled {
        device: std::sync::OnceLock::new(),
    };
    let input = candle_stream.clone_htod(&[1.0f32, -2.0, 3.5]).unwrap();
    let out = op.phobos_fwd(&input, &candle_stream, &[3]).unwrap();
    let again = op.phobos_fwd(&out, &candle_stream, &[3]).unwrap();
    assert_eq!(
        candle_stream.clone_dtoh(&again).unwrap(),
        vec![4.0, -8.0, 14.0]
    );
}

#[test]
fn a_captured_sequence_runs_only_when_the_graph_is_replayed() {
    for dev in devices() {
        let s = dev.new_stream().unwrap();
        let n = 80;
        let x0 = values(n, 21);
        let mut x = s.upload(&x0, &[n]).unwrap();
        let mut y = s.zeros::<f32>(&[n]).unwrap();
        let mut z = s.zeros::<f32>(&[n]).unwrap();
        s.begin_capture().unwrap();
        assert!(s.is_capturing());
        scale_on(&s, &x, &mut y, n).unwrap();
        scale_on(&s, &y, &mut z, n).unwrap();
        let graph = s.end_capture().unwrap();
        assert!(!s.is_capturing());
        assert_eq!(graph.tensors_kept(), 4, "{dev:?}");
        // Captured, not run.
        assert_eq!(s.download(&z).unwrap(), vec![0.0; n], "{dev:?}");
        graph.launch().unwrap();
        let got = s.download(&z).unwrap();
        assert_eq!(got[7], 4.0 * x0[7], "{dev:?}");
        // A replay reads the tensors' current contents; the graph keeps
        // them alive after the program drops its handles.
        let x1 = values(n, 22);
        s.copy_to(&x1, &mut x).unwrap();
        let z_view = z.view(0, &[n]);
        drop(y);
        drop(z);
        graph.launch().unwrap();
        graph.launch().unwrap();
        assert_eq!(s.download(&z_view).unwrap()[7], 4.0 * x1[7], "{dev:?}");
        // On another stream of the device, ordered by an event.
        let t = dev.new_stream().unwrap();
        let x2 = values(n, 23);
        s.copy_to(&x2, &mut x).unwrap();
        t.wait(&s.record().unwrap()).unwrap();
        graph.launch_on(&t).unwrap();
        assert_eq!(t.download(&z_view).unwrap()[7], 4.0 * x2[7], "{dev:?}");
        // Not on a stream of another device.
        let other = Device::sim().new_stream().unwrap();
        let e = graph.launch_on(&other).unwrap_err();
        assert!(
            matches!(e, DeviceError::OtherContext { .. }),
            "{dev:?}: {e:?}"
        );
    }
}

#[test]
fn a_capture_refuses_copies_waits_and_the_default_stream() {
    for dev in devices() {
        let e = dev.default_stream().begin_capture().unwrap_err();
        assert!(matches!(e, DeviceError::Capture { .. }), "{dev:?}: {e:?}");
        let s = dev.new_stream().unwrap();
        let mut t = s.zeros::<f32>(&[4]).unwrap();
        let e = s.end_capture().unwrap_err();
        assert!(matches!(e, DeviceError::Capture { .. }), "{e:?}");
        s.begin_capture().unwrap();
        for e in [
            s.begin_capture().unwrap_err(),
            s.copy_to(&[1.0; 4], &mut t).unwrap_err(),
            s.download(&t).unwrap_err(),
            s.synchronize().unwrap_err(),
            s.record().unwrap_err(),
            s.upload(&[1.0f32], &[1]).unwrap_err(),
            dev.synchronize().unwrap_err(),
        ] {
            assert!(matches!(e, DeviceError::Capture { .. }), "{dev:?}: {e:?}");
        }
        let graph = s.end_capture().unwrap();
        dev.synchronize().unwrap();
        // An empty graph replays as nothing.
        graph.launch().unwrap();
        assert_eq!(s.download(&t).unwrap(), vec![0.0; 4]);
    }
}

#[test]
fn a_graph_over_foreign_memory_replays_only_unchecked() {
    let Some(dev) = cuda() else { return };
    let ctx = dev.cudarc_context().unwrap();
    let s = dev.new_stream().unwrap();
    let x: CudaSlice<f32> = ctx.default_stream().clone_htod(&[1.0f32, 2.0]).unwrap();
    let mut y = dev.zeros::<f32>(&[2]).unwrap();
    // Borrowed before the capture, so that cudarc's event wait and record
    // happen outside it.
    let graph = {
        let xb = s.borrow(&x, &[2]).unwrap();
        s.begin_capture().unwrap();
        scale_on(&s, &xb, &mut y, 2).unwrap();
        s.end_capture().unwrap()
    };
    let e = graph.launch().unwrap_err();
    assert!(matches!(e, DeviceError::Capture { .. }), "{e:?}");
    // `x` is alive and unchanged: the replay is sound.
    unsafe { graph.launch_unchecked() }.unwrap();
    assert_eq!(s.download(&y).unwrap(), vec![2.0, 4.0]);
}

/// The tests above on a real GPU, for the GPU bundle (which runs the
/// `gpu_*` tests of every test executable): streams, events, cudarc
/// memory, graph capture with cudarc's event tracking, on the driver.
#[test]
#[ignore = "needs an NVIDIA GPU; run by the GPU bundle (scripts/gpu-bundle.sh)"]
fn gpu_streams_events_foreign_memory_and_graphs() {
    assert!(cuda().is_some(), "no CUDA device");
    launches_on_a_stream_run_in_order_and_downloads_wait_for_them();
    an_event_orders_work_across_streams_and_times_it();
    events_streams_and_tensors_of_another_device_are_refused();
    cudarc_buffers_are_launched_on_without_copies();
    a_foreign_buffer_too_small_for_its_shape_is_refused();
    a_stream_or_buffer_of_another_context_is_refused();
    a_foreign_borrow_is_launched_on_its_stream_and_aliasing_is_checked();
    a_device_over_the_programs_cudarc_context_shares_its_memory();
    a_candle_style_custom_op_launches_on_candles_stream_and_memory();
    a_captured_sequence_runs_only_when_the_graph_is_replayed();
    a_capture_refuses_copies_waits_and_the_default_stream();
    a_graph_over_foreign_memory_replays_only_unchecked();
    streams_events_and_graphs_leave_the_callers_current_context_alone();
    pinned_host_memory_is_copied_asynchronously_on_a_stream();
    a_stream_dropped_while_capturing_ends_its_capture();
}

#[test]
fn streams_events_and_graphs_leave_the_callers_current_context_alone() {
    let Some(dev) = cuda() else { return };
    use cudarc::driver::sys;
    let current = || {
        let mut c = std::ptr::null_mut();
        unsafe { sys::cuCtxGetCurrent(&mut c) }.result().unwrap();
        c
    };
    // Another library's context, current on this thread (cuCtxCreate
    // makes it current).
    let mut other = std::ptr::null_mut();
    unsafe { sys::cuCtxCreate_v2(&mut other, 0, 0) }
        .result()
        .unwrap();
    assert_eq!(current(), other);
    {
        let s = dev.new_stream().unwrap();
        let x = s.upload(&[1.0f32; 32], &[32]).unwrap();
        let mut y = s.zeros::<f32>(&[32]).unwrap();
        let e = s.record().unwrap();
        s.wait(&e).unwrap();
        s.begin_capture().unwrap();
        scale_on(&s, &x, &mut y, 32).unwrap();
        let g = s.end_capture().unwrap();
        g.launch().unwrap();
        assert_eq!(s.download(&y).unwrap()[0], 2.0);
        assert_eq!(current(), other, "a call replaced the current context");
        drop(g);
        drop(e);
        drop(s);
        assert_eq!(current(), other, "a drop replaced the current context");
    }
    unsafe { sys::cuCtxDestroy_v2(other) }.result().unwrap();
}

#[test]
fn pinned_host_memory_is_copied_asynchronously_on_a_stream() {
    let Some(dev) = cuda() else {
        return;
    };
    let ctx = dev.cudarc_context().unwrap();
    let s = dev.new_stream().unwrap();
    let mut host = unsafe { ctx.alloc_pinned::<f32>(64) }.unwrap();
    host.as_mut_slice()
        .unwrap()
        .iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v = i as f32);
    let mut x = s.zeros::<f32>(&[64]).unwrap();
    let mut y = s.zeros::<f32>(&[64]).unwrap();
    s.upload_pinned(&host, &mut x).unwrap();
    scale_on(&s, &x, &mut y, 64).unwrap();
    let mut out = unsafe { ctx.alloc_pinned::<f32>(64) }.unwrap();
    s.download_pinned(&y, &mut out).unwrap();
    // Reading the pinned buffer waits for the copy.
    assert_eq!(out.as_slice().unwrap()[10], 20.0);
    // A pinned buffer of another length is refused.
    let mut short = unsafe { ctx.alloc_pinned::<f32>(8) }.unwrap();
    let e = s.download_pinned(&y, &mut short).unwrap_err();
    assert!(matches!(e, DeviceError::Shape { len: 8, .. }), "{e:?}");
}

#[test]
fn on_the_stand_in_two_streams_overlap_in_simulated_time_and_a_wait_orders_them() {
    let Some(dev) = cuda() else { return };
    if !dev.name().contains("phobos-sim") {
        return; // a GPU's timing is its own
    }
    let (a, b) = (dev.new_stream().unwrap(), dev.new_stream().unwrap());
    let n = 4096;
    let x = a.upload(&values(n, 1), &[n]).unwrap();
    let (mut y, mut z) = (a.zeros::<f32>(&[n]).unwrap(), a.zeros::<f32>(&[n]).unwrap());
    let start = a.record().unwrap();
    b.wait(&start).unwrap();
    // The same work on both streams from the same point.
    scale_on(&a, &x, &mut y, n).unwrap();
    scale_on(&b, &x, &mut z, n).unwrap();
    let (end_a, end_b) = (a.record().unwrap(), b.record().unwrap());
    let (ta, tb) = (
        start.elapsed_ms(&end_a).unwrap(),
        start.elapsed_ms(&end_b).unwrap(),
    );
    assert!(
        ta > 0.0 && (ta - tb).abs() < 1e-6,
        "{ta} {tb}: not overlapped"
    );
    // b waits for a's second launch: its next launch ends after it.
    scale_on(&a, &x, &mut y, n).unwrap();
    let a_done = a.record().unwrap();
    b.wait(&a_done).unwrap();
    scale_on(&b, &x, &mut z, n).unwrap();
    let b_done = b.record().unwrap();
    let (ta2, tb2) = (
        start.elapsed_ms(&a_done).unwrap(),
        start.elapsed_ms(&b_done).unwrap(),
    );
    assert!((ta2 - 2.0 * ta).abs() < 1e-6, "{ta2} vs 2 x {ta}");
    assert!(
        (tb2 - 3.0 * ta).abs() < 1e-6,
        "{tb2} vs 3 x {ta}: not ordered after a"
    );
}

#[test]
fn a_stream_dropped_while_capturing_ends_its_capture() {
    for dev in devices() {
        let s = dev.new_stream().unwrap();
        s.begin_capture().unwrap();
        let clone = s.clone();
        drop(s);
        // A clone keeps the capture going.
        assert!(clone.is_capturing());
        assert!(dev.synchronize().is_err(), "{dev:?}");
        drop(clone);
        // The last one ends it: the device can be waited for again.
        dev.synchronize().unwrap();
        let t = dev.new_stream().unwrap();
        let x = t.upload(&[1.0f32; 4], &[4]).unwrap();
        assert_eq!(t.download(&x).unwrap(), vec![1.0; 4], "{dev:?}");
    }
}
