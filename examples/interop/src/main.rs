//! Phobos kernels inside a program that does its own GPU work with cudarc
//! (docs/interop.md). The program owns a stream and three buffers; Phobos
//! launches on that stream and on those buffers, with no copies, overlaps
//! a second stream with it (an event orders the two), then captures two
//! launches into a CUDA graph and replays it for new inputs, checking every
//! result against the CPU. On the simulator (`PHOBOS_BACKEND=sim`, or no
//! GPU) the same steps run on Phobos tensors, since cudarc memory needs a
//! GPU; `scripts/with-fake-gpu.sh` runs the cudarc path on the CPU.
//! Exits with status 1 when a result disagrees.

mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

use cudarc::driver::CudaSlice;
use phobos_runtime::{BackendKind, Device};
use std::process::ExitCode;

const N: usize = 5000;
/// Inputs the graph is replayed for.
const REPLAYS: u64 = 3;

/// Deterministic inputs in [-1, 1], exact in f32.
fn host(seed: u64) -> Vec<f32> {
    (0..N as u64)
        .map(|i| ((i * 37 + seed * 11) % 101) as f32 / 50.0 - 1.0)
        .collect()
}

/// What the overlapped streams compute: `z = 2 x + 3 v`.
fn overlap_reference(x: &[f32], v: &[f32]) -> Vec<f32> {
    x.iter().zip(v).map(|(x, v)| 2.0 * x + 3.0 * v).collect()
}

/// What the graph computes: `z = x / 2 + w`.
fn graph_reference(x: &[f32], w: &[f32]) -> Vec<f32> {
    x.iter().zip(w).map(|(x, w)| 0.5 * x + w).collect()
}

fn check(what: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None if got.len() == want.len() => Ok(()),
        None => Err(format!(
            "{what}: {} values, {} expected",
            got.len(),
            want.len()
        )),
        Some(i) => Err(format!("{what}: z[{i}] = {}, expected {}", got[i], want[i])),
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The cudarc program: its stream, its buffers, Phobos launching on both.
fn run_cuda(device: &Device) -> Res<(f32, u64)> {
    let ctx = device.cudarc_context().ok_or("no CUDA context")?;
    // What the program already has: its stream and its allocations.
    let theirs = ctx.new_stream()?;
    let mut x: CudaSlice<f32> = theirs.clone_htod(&host(1))?;
    let mut y: CudaSlice<f32> = theirs.alloc_zeros(N)?;
    let mut z: CudaSlice<f32> = theirs.alloc_zeros(N)?;
    let s1 = device.wrap_stream(theirs.clone())?;
    let s2 = device.new_stream()?;
    let v = s2.upload(&host(2), &[N])?;
    let mut w = s2.zeros::<f32>(&[N])?;

    // Two streams overlapped: y = 2x on the program's stream while w = 3v
    // runs on another; the event makes `add` wait for y only.
    let start = s1.record()?;
    {
        let xb = s1.borrow(&x, &[N])?;
        let mut yb = s1.borrow_mut(&mut y, &[N])?;
        kernels::scale_on(&s1, &xb, &mut yb, 2.0)?;
    }
    let y_ready = s1.record()?;
    kernels::scale_on(&s2, &v, &mut w, 3.0)?;
    s2.wait(&y_ready)?;
    {
        let yb = s2.borrow(&y, &[N])?;
        let mut zb = s2.borrow_mut(&mut z, &[N])?;
        kernels::add_on(&s2, &yb, &w, &mut zb)?;
    }
    let done = s2.record()?;
    done.synchronize()?;
    let ms = start.elapsed_ms(&done)?;
    // The program reads its own buffer: no copy out of Phobos.
    let want_w: Vec<f32> = host(2).iter().map(|v| 3.0 * v).collect();
    check(
        "overlap",
        &theirs.clone_dtoh(&z)?,
        &overlap_reference(&host(1), &host(2)),
    )?;

    // A graph of two launches on the program's stream. The buffers are
    // borrowed before the capture begins and released after it ends, so
    // cudarc's ordering of them happens outside the capture.
    let graph = {
        let xb = s1.borrow(&x, &[N])?;
        let mut yb = s1.borrow_mut(&mut y, &[N])?;
        let mut zb = s1.borrow_mut(&mut z, &[N])?;
        s1.begin_capture()?;
        kernels::scale_on(&s1, &xb, &mut yb, 0.5)?;
        kernels::add_on(&s1, &yb, &w, &mut zb)?;
        s1.end_capture()?
    };
    for k in 0..REPLAYS {
        let input = host(10 + k);
        // New input, written by the program on its stream.
        theirs.memcpy_htod(&input, &mut x)?;
        // SAFETY: x, y and z live until the end of this function, past
        // every replay, and all their uses are on `theirs`, in order.
        unsafe { graph.launch_unchecked()? };
        check(
            &format!("graph replay {k}"),
            &theirs.clone_dtoh(&z)?,
            &graph_reference(&input, &want_w),
        )?;
    }
    Ok((ms, REPLAYS))
}

/// The same steps on Phobos tensors (the simulator has no cudarc memory).
fn run_phobos(device: &Device) -> Res<(f32, u64)> {
    let (s1, s2) = (device.new_stream()?, device.new_stream()?);
    let mut x = s1.upload(&host(1), &[N])?;
    let mut y = s1.zeros::<f32>(&[N])?;
    let mut z = s1.zeros::<f32>(&[N])?;
    let v = s2.upload(&host(2), &[N])?;
    let mut w = s2.zeros::<f32>(&[N])?;

    let start = s1.record()?;
    kernels::scale_on(&s1, &x, &mut y, 2.0)?;
    let y_ready = s1.record()?;
    kernels::scale_on(&s2, &v, &mut w, 3.0)?;
    s2.wait(&y_ready)?;
    kernels::add_on(&s2, &y, &w, &mut z)?;
    let done = s2.record()?;
    done.synchronize()?;
    let ms = start.elapsed_ms(&done)?;
    let want_w: Vec<f32> = host(2).iter().map(|v| 3.0 * v).collect();
    check(
        "overlap",
        &s2.download(&z)?,
        &overlap_reference(&host(1), &host(2)),
    )?;

    s1.begin_capture()?;
    kernels::scale_on(&s1, &x, &mut y, 0.5)?;
    kernels::add_on(&s1, &y, &w, &mut z)?;
    let graph = s1.end_capture()?;
    for k in 0..REPLAYS {
        let input = host(10 + k);
        s1.copy_to(&input, &mut x)?;
        graph.launch()?;
        check(
            &format!("graph replay {k}"),
            &s1.download(&z)?,
            &graph_reference(&input, &want_w),
        )?;
    }
    Ok((ms, REPLAYS))
}

fn main() -> ExitCode {
    let device = match Device::auto() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (path, result) = match device.kind() {
        BackendKind::Cuda => ("cudarc buffers", run_cuda(&device)),
        BackendKind::Sim => ("phobos tensors", run_phobos(&device)),
    };
    println!("interop on {} ({path}, N = {N})", device.name());
    match result {
        Ok((ms, replays)) => {
            println!(
                "{:<8} {:<36} {:>10.3} ms  ok",
                device.kind(),
                "overlap: 2 streams, 1 event",
                ms
            );
            println!(
                "{:<8} {:<36} {:>13}  ok",
                device.kind(),
                format!("graph: 2 launches, {replays} replays"),
                ""
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("{:<8} failed: {e}", device.kind());
            ExitCode::FAILURE
        }
    }
}
