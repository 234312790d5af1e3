//! A launch that is accepted allocates nothing on the host (issue 31): its
//! checks (binding, grid and block, aliasing, argument marshalling) and
//! the CUDA backend's launch, on Phobos tensors and on another library's
//! memory, and a tuned kernel's choice of variant once made, counted by this binary's allocator, on the
//! CUDA driver stand-in with kernel execution skipped
//! (`PHOBOS_FAKE_GPU_SKIP_RUN=1`; the stand-in's own allocations are its
//! library's, not counted here). Only the test thread's allocations are
//! counted, so the test harness's other threads do not disturb it.
//!
//! Ignored by default; run it with
//! `scripts/with-fake-gpu.sh cargo test -p phobos-runtime --test launch_allocations -- --include-ignored`.

mod common;

use common::*;
use phobos_runtime::{Arg, Device, Grid, TensorIn};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the allocations of a thread while it asks to.
struct Counting;

thread_local! {
    /// `Some(n)`: this thread counts, `n` so far.
    static COUNT: Cell<Option<u64>> = const { Cell::new(None) };
}

fn note_allocation() {
    // `try_with`: a thread being torn down has no slot, and allocates
    // uncounted.
    let _ = COUNT.try_with(|c| {
        if let Some(n) = c.get() {
            c.set(Some(n + 1));
        }
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    COUNT.with(|c| c.set(Some(0)));
    f();
    COUNT.with(|c| c.replace(None)).expect("counting")
}

/// The launch-overhead benchmark's kernel (examples/interop): two tensors
/// sharing a dim, a scalar, a `@grid`.
const SCALE_ALPHA: &str = "@launch(128)
@grid(cdiv(N, ctx.threads))
kernel scale(x: tensor<f32>[N], y: tensor<f32>[N], alpha: f32) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    y[i] = alpha * x[i]
  }
}
";

/// A kernel without `@grid`, with a constant axis and two dims passed as
/// `.param`s.
const ROWS: &str = "@launch(32)
kernel rows(w: tensor<f32>[M, K], x: tensor<f32>[K], y: tensor<f32>[M, 4]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < M {
    y[i, 0] = w[i, K - 1] + x[0]
  }
}
";

const LAUNCHES: u64 = 1000;

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_accepted_launches_allocate_nothing() {
    in_fake_gpu_child(
        "stand_in_accepted_launches_allocate_nothing",
        &[("PHOBOS_FAKE_GPU_SKIP_RUN", "1")],
        || {
            let dev = fake_gpu();
            let stream = dev.new_stream().unwrap();
            let scale = compile(SCALE_ALPHA, &[75], vec![]);
            let rows = compile(ROWS, &[75], vec![]);
            let n = 1000;
            let x = dev.upload(&values(n, 3), &[n]).unwrap();
            let mut y = dev.zeros::<f32>(&[n]).unwrap();
            let (m, k) = (40, 64);
            let w = dev.zeros::<f32>(&[m, k]).unwrap();
            let xk = dev.zeros::<f32>(&[k]).unwrap();
            let mut ym = dev.zeros::<f32>(&[m, 4]).unwrap();
            // Another library's memory, borrowed once for the stream.
            let cuda = stream.cudarc().expect("a cudarc stream").clone();
            let xs = cuda.clone_htod(&values(n, 4)).unwrap();
            let mut ys = cuda.alloc_zeros::<f32>(n).unwrap();
            let xf = stream.borrow(&xs, &[n]).unwrap();
            let yf = stream.borrow_mut(&mut ys, &[n]).unwrap();
            // The first launches load the modules and fill the caches.
            let mut launch_all = || {
                let args = [Arg::from(&x), Arg::from(&mut y), Arg::scalar(2.0f32)];
                scale.launch(&dev, None, &args).unwrap();
                scale.launch_on(&stream, None, &args).unwrap();
                let args = [Arg::from(&w), Arg::from(&xk), Arg::from(&mut ym)];
                rows.launch(&dev, Some(Grid::from(2)), &args).unwrap();
                rows.launch_on(&stream, Some(Grid::from(2)), &args).unwrap();
                let args = [xf.arg(), yf.arg(), Arg::scalar(3.0f32)];
                scale.launch_on(&stream, None, &args).unwrap();
            };
            launch_all();
            let made = allocations(|| {
                for _ in 0..LAUNCHES {
                    launch_all();
                }
            });
            assert_eq!(
                made,
                0,
                "{LAUNCHES} x 5 accepted launches made {made} allocations ({} a launch)",
                made as f64 / (5 * LAUNCHES) as f64
            );
            // A refused launch still explains itself (errors may allocate).
            let short = dev.zeros::<f32>(&[n - 1]).unwrap();
            let args = [Arg::from(&short), Arg::from(&mut y), Arg::scalar(2.0f32)];
            let e = scale.launch(&dev, None, &args).unwrap_err();
            assert!(e.to_string().contains("dim `N` disagrees"), "{e}");
            drop((xf, yf));
            stream.synchronize().unwrap();
            dev.synchronize().unwrap();
        },
    );
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_tuned_launches_allocate_nothing_once_decided() {
    in_fake_gpu_child(
        "stand_in_tuned_launches_allocate_nothing_once_decided",
        &[("PHOBOS_FAKE_GPU_SKIP_RUN", "1")],
        || {
            let dev = fake_gpu();
            let stream = dev.new_stream().unwrap();
            // Two variants (BLOCK 64 and 128), each with its own @grid:
            // the first launch for these dims times them.
            let kernel = compile(AUTOTUNE_BLOCK, &[75], vec![]);
            let n = 1000;
            let x = dev.upload(&values(n, 5), &[n]).unwrap();
            let mut y = dev.zeros::<f32>(&[n]).unwrap();
            let (x2, mut y2) = (
                dev.zeros::<f32>(&[2 * n]).unwrap(),
                dev.zeros::<f32>(&[2 * n]).unwrap(),
            );
            let mut launch_all = || {
                kernel
                    .launch(&dev, None, &[Arg::from(&x), Arg::from(&mut y)])
                    .unwrap();
                kernel
                    .launch_on(&stream, None, &[Arg::from(&x2), Arg::from(&mut y2)])
                    .unwrap();
            };
            // The first launch for each dims times the variants and
            // decides; the second finds the decision and remembers it.
            launch_all();
            launch_all();
            stream.synchronize().unwrap();
            let made = allocations(|| {
                for _ in 0..LAUNCHES {
                    launch_all();
                }
            });
            assert_eq!(
                made,
                0,
                "{LAUNCHES} x 2 tuned launches made {made} allocations ({} a launch)",
                made as f64 / (2 * LAUNCHES) as f64
            );
            // Another device decides for itself: its first launch times
            // again, in its own process-wide decisions.
            let other = fake_gpu();
            let x = other.upload(&values(n, 5), &[n]).unwrap();
            let mut y = other.zeros::<f32>(&[n]).unwrap();
            kernel
                .launch(&other, None, &[Arg::from(&x), Arg::from(&mut y)])
                .unwrap();
            other.synchronize().unwrap();
            dev.synchronize().unwrap();
            let dir = scratch_dir("tuned-allocations");
            let decisions =
                |d: &phobos_runtime::Device| d.export_tuning(&dir.join("t.ron")).unwrap();
            assert_eq!(decisions(&dev), 2, "one decision for each dims");
            assert_eq!(decisions(&other), 1, "the other device timed for itself");
            let _ = std::fs::remove_dir_all(&dir);
        },
    );
}

/// A launch of a kernel that reads a tensor through a tensor map
/// (`common::tma`) allocates nothing either: the map's spec and layout,
/// the driver's `cuTensorMapEncodeTiled` and the 128 bytes it writes
/// (inline in `KernelArg::TensorMap`) all stay on the stack.
#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_tma_launch_allocates_nothing() {
    in_fake_gpu_child(
        "stand_in_a_tma_launch_allocates_nothing",
        &[
            ("PHOBOS_FAKE_GPU_SKIP_RUN", "1"),
            ("PHOBOS_FAKE_GPU_CC", "9.0"),
        ],
        || {
            let dev = fake_gpu();
            let kernel = common::tma::kernel(phobos_meta::ScalarTy::F32, 32, 128);
            let (m, n) = (40, 64);
            let a = dev.zeros::<f32>(&[m, n]).unwrap();
            let mut b = dev.zeros::<f32>(&[48, 64]).unwrap();
            let mut launch = || {
                kernel
                    .launch(
                        &dev,
                        Some(Grid::from((2, 3))),
                        &[Arg::from(&a), Arg::from(&mut b)],
                    )
                    .unwrap();
            };
            launch();
            let made = allocations(|| {
                for _ in 0..LAUNCHES {
                    launch();
                }
            });
            assert_eq!(
                made, 0,
                "{LAUNCHES} launches with one tensor map each made {made} allocations"
            );
            dev.synchronize().unwrap();
        },
    );
}

/// The entry of the stand-in's last `cuLaunchKernel`.
fn last_entry() -> String {
    let trace = std::env::var_os("PHOBOS_FAKE_GPU_TRACE").expect("the child has a trace");
    let lines = trace_lines(std::path::Path::new(&trace), "cuLaunchKernel #");
    let last = lines.last().expect("a launch");
    last.split_whitespace()
        .nth(2)
        .expect("an entry")
        .to_string()
}

#[test]
#[ignore = "needs the CUDA driver stand-in; run under scripts/with-fake-gpu.sh"]
fn stand_in_a_shipped_choice_is_remembered_until_the_next_preload() {
    let dir = scratch_dir("shipped-allocations");
    let trace = dir.join("trace");
    in_fake_gpu_child(
        "stand_in_a_shipped_choice_is_remembered_until_the_next_preload",
        &[
            ("PHOBOS_FAKE_GPU_SKIP_RUN", "1"),
            ("PHOBOS_FAKE_GPU_TRACE", trace.to_str().unwrap()),
        ],
        || {
            let kernel = compile(AUTOTUNE_BLOCK, &[75], vec![]);
            let n = 1000;
            // One device times and exports its choice.
            let dev = fake_gpu();
            let x = dev.upload(&values(n, 5), &[n]).unwrap();
            let mut y = dev.zeros::<f32>(&[n]).unwrap();
            kernel
                .launch(&dev, None, &[Arg::from(&x), Arg::from(&mut y)])
                .unwrap();
            dev.synchronize().unwrap();
            let chosen = last_entry();
            let path = scratch_dir("shipped-allocations-export").join("t.ron");
            assert_eq!(dev.export_tuning(&path).unwrap(), 1);
            let text = std::fs::read_to_string(&path).unwrap();
            // Another is shipped it: it launches that variant, without
            // allocating once it has looked it up.
            let shipped = Device::cuda(0).unwrap();
            assert_eq!(shipped.preload_tuning(&text).unwrap(), 1);
            let x = shipped.upload(&values(n, 5), &[n]).unwrap();
            let mut y = shipped.zeros::<f32>(&[n]).unwrap();
            let mut launch = || {
                kernel
                    .launch(&shipped, None, &[Arg::from(&x), Arg::from(&mut y)])
                    .unwrap()
            };
            launch();
            assert_eq!(last_entry(), chosen);
            let made = allocations(|| {
                for _ in 0..LAUNCHES {
                    launch();
                }
            });
            assert_eq!(made, 0, "{LAUNCHES} shipped-choice launches");
            // A later preload that says otherwise wins, as before it was
            // remembered.
            let (a, b) = ("autotune_block__BLOCK64", "autotune_block__BLOCK128");
            let other = if chosen == a { b } else { a };
            assert!(text.contains(&format!("\"{chosen}\"")), "{text}");
            let swapped = text.replace(&format!("\"{chosen}\""), &format!("\"{other}\""));
            assert_eq!(shipped.preload_tuning(&swapped).unwrap(), 1);
            launch();
            assert_eq!(last_entry(), other);
            shipped.synchronize().unwrap();
            // A kernel built with the choice embedded (`Kernel::with_tuning`)
            // launches it without timing or allocating, until a preload
            // says otherwise.
            let built = compile_with_tuning(
                AUTOTUNE_BLOCK,
                &[75],
                vec![],
                Box::leak(text.clone().into_boxed_str()),
            );
            let third = Device::cuda(0).unwrap();
            let x = third.upload(&values(n, 5), &[n]).unwrap();
            let mut y = third.zeros::<f32>(&[n]).unwrap();
            let mut launch = || {
                built
                    .launch(&third, None, &[Arg::from(&x), Arg::from(&mut y)])
                    .unwrap()
            };
            launch();
            assert_eq!(last_entry(), chosen);
            let made = allocations(|| {
                for _ in 0..LAUNCHES {
                    launch();
                }
            });
            assert_eq!(made, 0, "{LAUNCHES} embedded-choice launches");
            assert_eq!(third.preload_tuning(&swapped).unwrap(), 1);
            launch();
            assert_eq!(last_entry(), other);
            third.synchronize().unwrap();
            let _ = std::fs::remove_dir_all(path.parent().unwrap());
        },
    );
    let _ = std::fs::remove_dir_all(&dir);
}
