//! Host time per launch of a tiny kernel (`scale` over 128 elements, one
//! CTA): a generated Phobos launch against a raw cudarc launch of the same
//! kernel's PTX, and a captured graph's replay. Prints a Markdown table
//! (docs/benchmarks.md records it) with the heap allocations each launch
//! makes, counted by this binary's allocator.
//!
//! Run it on the driver stand-in with kernel execution excluded, so that
//! only the host's launch path is timed:
//!
//!     PHOBOS_FAKE_GPU_SKIP_RUN=1 scripts/with-fake-gpu.sh \
//!         cargo run --release -p phobos-example-interop --bin launch_overhead
//!
//! or on a GPU (kernel execution then overlaps the host's launches).

mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

use cudarc::driver::{result, LaunchConfig, PushKernelArg};
use phobos_runtime::Device;
use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counts every allocation the process makes.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const N: usize = 128;
const LAUNCHES: u32 = 20_000;
/// Launches per captured graph.
const GRAPH_LAUNCHES: u32 = 100;

/// Microseconds and allocations per launch of `LAUNCHES` runs of `f`
/// (after a warm-up), each run issuing `per_run` launches.
fn measure(per_run: u32, mut f: impl FnMut() -> Result<(), String>) -> Result<(f64, f64), String> {
    for _ in 0..100 {
        f()?;
    }
    let runs = LAUNCHES / per_run;
    let allocs = ALLOCATIONS.load(Ordering::Relaxed);
    let start = Instant::now();
    for _ in 0..runs {
        f()?;
    }
    let elapsed = start.elapsed();
    let allocs = ALLOCATIONS.load(Ordering::Relaxed) - allocs;
    let launches = f64::from(runs * per_run);
    Ok((
        elapsed.as_secs_f64() * 1e6 / launches,
        allocs as f64 / launches,
    ))
}

fn run() -> Result<Vec<(&'static str, f64, f64)>, String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let device = Device::cuda(0).map_err(|x| e(&x))?;
    let ctx = device.cudarc_context().ok_or("no CUDA context")?;
    let s = device.new_stream().map_err(|x| e(&x))?;
    let cuda = s.cudarc().ok_or("no cudarc stream")?.clone();
    let mut rows = Vec::new();

    // The raw baseline: the same kernel's PTX, loaded and launched with cudarc.
    let ptx = include_str!(concat!(env!("OUT_DIR"), "/phobos/scale.sm_75.ptx"));
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
        .map_err(|x| e(&x))?;
    let function = module.load_function("scale").map_err(|x| e(&x))?;
    let xs = cuda.clone_htod(&[1.0f32; N]).map_err(|x| e(&x))?;
    let mut ys = cuda.alloc_zeros::<f32>(N).map_err(|x| e(&x))?;
    let (alpha, n) = (2.0f32, N as i32);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // cuLaunchKernel with the parameters packed once: the driver call alone.
    let raw_function = function.cu_function();
    let (mut px, mut py) = {
        use cudarc::driver::{DevicePtr, DevicePtrMut};
        let x = xs.device_ptr(&cuda).0;
        let y = ys.device_ptr_mut(&cuda).0;
        (x, y)
    };
    let (mut pa, mut pn) = (alpha, n);
    let mut params: [*mut c_void; 4] = [
        (&mut px as *mut u64).cast(),
        (&mut py as *mut u64).cast(),
        (&mut pa as *mut f32).cast(),
        (&mut pn as *mut i32).cast(),
    ];
    let stream = cuda.cu_stream();
    let (us, allocs) = measure(1, || {
        unsafe {
            result::launch_kernel(raw_function, (1, 1, 1), (128, 1, 1), 0, stream, &mut params)
        }
        .map_err(|x| e(&x))
    })?;
    rows.push(("raw cuLaunchKernel (cudarc::driver::result)", us, allocs));
    let (us, allocs) = measure(1, || {
        let mut b = cuda.launch_builder(&function);
        b.arg(&xs).arg(&mut ys).arg(&alpha).arg(&n);
        unsafe { b.launch(cfg) }.map(|_| ()).map_err(|x| e(&x))
    })?;
    rows.push(("cudarc launch_builder on CudaSlices", us, allocs));
    cuda.synchronize().map_err(|x| e(&x))?;

    // Phobos: the generated launch functions on Phobos tensors.
    let x = s.upload(&[1.0f32; N], &[N]).map_err(|x| e(&x))?;
    let mut y = s.zeros::<f32>(&[N]).map_err(|x| e(&x))?;
    let (us, allocs) = measure(1, || {
        kernels::scale_on(&s, &x, &mut y, alpha).map_err(|x| e(&x))
    })?;
    rows.push(("phobos generated scale_on(stream, ..)", us, allocs));
    let (us, allocs) = measure(1, || {
        kernels::scale(&device, &x, &mut y, alpha).map_err(|x| e(&x))
    })?;
    rows.push(("phobos generated scale(device, ..)", us, allocs));
    device.synchronize().map_err(|x| e(&x))?;

    // A graph of GRAPH_LAUNCHES launches, replayed.
    s.begin_capture().map_err(|x| e(&x))?;
    for _ in 0..GRAPH_LAUNCHES {
        kernels::scale_on(&s, &x, &mut y, alpha).map_err(|x| e(&x))?;
    }
    let graph = s.end_capture().map_err(|x| e(&x))?;
    let (us, allocs) = measure(GRAPH_LAUNCHES, || graph.launch().map_err(|x| e(&x)))?;
    rows.push(("phobos graph replay (per captured launch)", us, allocs));
    s.synchronize().map_err(|x| e(&x))?;
    let got = s.download(&y).map_err(|x| e(&x))?;
    let skipped = std::env::var_os("PHOBOS_FAKE_GPU_SKIP_RUN").is_some();
    if !skipped && got[0] != 2.0 {
        return Err(format!("y[0] = {}, expected 2", got[0]));
    }
    Ok(rows)
}

fn main() -> ExitCode {
    match run() {
        Ok(rows) => {
            let base = rows[0].1;
            println!("| launch path | µs per launch | over raw | allocations per launch |");
            println!("|---|---:|---:|---:|");
            for (what, us, allocs) in rows {
                println!("| {what} | {us:.3} | {:+.3} | {allocs:.1} |", us - base);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
