//! Launching a kernel: argument marshalling, the CTA scheduler (warps, the
//! CTA barrier, deadlock detection), parallel execution of CTAs on host
//! threads. The reports of what the checks find are worded in `checks`.

use crate::checks::{Fault, Shadow};
use crate::decode::{Entry, ParamInfo, Ty};
use crate::error::SimError;
use crate::memory::{BufferId, Device};
use crate::module::Module;
use crate::observer::{Access, Observer, SplitObserver};
use crate::warp::{lanes, Warp};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The most shared memory a `.shared` declaration may hold on every
/// target (ptxas refuses more); the rest must be dynamic.
pub const STATIC_SHARED_LIMIT: u32 = 48 * 1024;

/// The most shared memory (static plus dynamic) one CTA may use on
/// `sm_{target}` once a launch opts in, as a GPU enforces it: the CUDA C++
/// Programming Guide's per-CTA maximum — 64 KB on 7.5, 163 KB on 8.0,
/// 99 KB on 8.6 and 8.9, 227 KB on 9.0 and 10.0, 99 KB on 12.0. A module
/// without `.target` gets the largest. The compiler checks by the same
/// table (`phobos_core::max_shared_bytes`; a conformance test pins them
/// equal).
pub fn max_shared_bytes(target: Option<u32>) -> u32 {
    const KB: u32 = 1024;
    match target.map(phobos_meta::arch::compute_capability) {
        Some(0..=75) => 64 * KB,
        Some(80) => 163 * KB,
        None | Some(90) | Some(100) => 227 * KB,
        Some(_) => 99 * KB,
    }
}

/// The shared bytes each CTA of `e` gets with `dynamic` bytes of dynamic
/// shared memory, or why the launch is refused.
fn shared_size(e: &Entry, dynamic: u32) -> Result<usize, String> {
    if e.shared_bytes > STATIC_SHARED_LIMIT {
        return Err(format!(
            "{} bytes of static shared memory exceed the limit of {STATIC_SHARED_LIMIT} \
             (declare the array `.extern .shared` and pass its size as dynamic shared memory)",
            e.shared_bytes
        ));
    }
    let total = if dynamic == 0 {
        u64::from(e.shared_bytes)
    } else {
        u64::from(e.dynamic_shared_offset) + u64::from(dynamic)
    };
    let limit = max_shared_bytes(e.target);
    if total > u64::from(limit) {
        let target = e
            .target
            .map_or("any target".to_string(), phobos_meta::arch::name);
        return Err(format!(
            "{total} bytes of shared memory ({} static, {dynamic} dynamic) exceed the limit \
             of {limit} per CTA on {target}",
            e.shared_bytes
        ));
    }
    Ok(total as usize)
}
/// Largest local memory per thread (CUDA's limit).
const MAX_LOCAL_BYTES: u32 = 512 * 1024;
/// Largest parameter block (CUDA 12.1's limit).
const MAX_PARAM_BYTES: u32 = 32764;

/// One kernel argument, matched against the entry's `.param` list in order.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// A buffer's device address, for a `.u64`/`.s64`/`.b64` parameter.
    Buffer(BufferId),
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    /// An `f16`/`bf16` passed as its bits, for a `.b16`/`.f16`/`.bf16` parameter.
    Bits16(u16),
    F32(f32),
    F64(f64),
    /// Raw bytes for any parameter of exactly that size.
    Bytes(Vec<u8>),
    /// A tensor map (`CUtensorMap`) for a `.param .align 64 .b8 p[128]`,
    /// held inline so that a launch passing one allocates nothing (the
    /// runtime's launches stay allocation-free with TMA kernels).
    TensorMap([u8; crate::tensor_map::TENSOR_MAP_BYTES]),
}

/// The default budget of [`check_work`]: 2^22 simulated threads, about a
/// minute of simulation for a kernel of a few hundred instructions per
/// thread.
pub const DEFAULT_MAX_WORK: u64 = 1 << 22;

/// How the `phobos` commands that simulate (`sim`, `explain`, `profile`)
/// raise the budget to `work`: their `--max-work` flag, for
/// [`check_work`]'s `raise`.
pub fn max_work_flag(work: u64) -> String {
    format!("--max-work {work}")
}

/// The threads a launch of `grid` CTAs of `threads_per_cta` simulates, or,
/// above `max_work`, the refusal: every CTA runs, so a larger launch is
/// refused before it starts instead of running for hours. `raise` is how
/// the caller's user raises the budget to a value (`--max-work` on the
/// command line, an environment variable in the driver stand-in). The one
/// owner of the budget's arithmetic and message for `phobos sim`,
/// `explain`, `profile` and `phobos-fakecuda`.
pub fn check_work(
    grid: [u32; 3],
    threads_per_cta: u32,
    max_work: u64,
    raise: impl Fn(u64) -> String,
) -> Result<u64, String> {
    let ctas = grid.iter().map(|&g| u64::from(g)).product::<u64>();
    let work = ctas.saturating_mul(u64::from(threads_per_cta));
    if work > max_work {
        return Err(format!(
            "this launch simulates {ctas} CTAs x {threads_per_cta} threads = {work} threads, more \
             than the budget of {max_work} (give a smaller grid, or raise the budget with {})",
            raise(work)
        ));
    }
    Ok(work)
}

/// How to run a launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Run racecheck, initcheck and the warp-synchronous source checks
    /// (default on). Out-of-bounds and misaligned accesses, barrier
    /// deadlocks and the step limit are errors either way: the simulator
    /// cannot continue past them.
    pub checks: bool,
    /// The most instructions one warp may issue before the launch fails
    /// with a step-limit report (default 50 million).
    pub max_steps: u64,
    /// Host threads to run CTAs on; 0 means all cores. An observer forces 1.
    pub threads: usize,
    /// How the f32 `.approx` instructions (`sin cos ex2 lg2 tanh rsqrt`)
    /// compute: exactly (the default), or off by their documented maximum
    /// error (the table is in docs/simulator.md), so a result that needs
    /// them to be exact fails in the simulator as it could on a GPU.
    pub approx: Approx,
    /// Dynamic shared memory per CTA in bytes (CUDA's `sharedMemBytes`),
    /// where the module's `.extern .shared` arrays live; default 0.
    pub dynamic_shared_bytes: u32,
}

/// See [`LaunchOptions::approx`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Approx {
    /// The correctly rounded result.
    #[default]
    Exact,
    /// The result moved by the instruction's documented maximum error, in
    /// a direction picked deterministically from the input's bits.
    WorstCase,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            checks: true,
            max_steps: 50_000_000,
            threads: 0,
            approx: Approx::Exact,
            dynamic_shared_bytes: 0,
        }
    }
}

/// What a launch did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchStats {
    /// Instructions executed, counted once per thread that reached them,
    /// predicated-off threads included (like NVIDIA's `thread_inst_executed`).
    pub thread_instructions: u64,
    /// Instructions issued, counted once per warp.
    pub warp_instructions: u64,
    pub ctas: u64,
    /// The buffers the launch stored to (or updated atomically), in id order.
    pub written: Vec<BufferId>,
}

/// Read-only facts of one launch, shared by every worker thread.
pub(crate) struct Ctx<'a> {
    pub module: &'a Module,
    pub entry: &'a Entry,
    /// Shared bytes per CTA: static, plus dynamic from the launch.
    pub shared_size: usize,
    pub dev: &'a Device,
    pub params: Vec<u8>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub threads_per_cta: u32,
    pub n_warps: u32,
    pub checks: bool,
    pub max_steps: u64,
    pub approx: Approx,
    /// The initial value file of a warp: immediates filled in.
    pub template: Vec<u64>,
}

/// Per-CTA mutable state, reused from CTA to CTA by one worker.
pub(crate) struct CtaState {
    pub id: [u32; 3],
    pub linear: u32,
    pub shared: Vec<u8>,
    pub shadow: Shadow,
    /// Number of completed CTA barriers.
    pub epoch: u32,
    pub written: Vec<bool>,
    pub observing: bool,
    pub accesses: Vec<Access>,
    pub shuffles: Vec<(u32, u32)>,
    /// The first read of never-written shared memory in this barrier epoch:
    /// (instruction, thread, report). It becomes an initcheck error at the
    /// next barrier or at the CTA's end, unless another thread's write to
    /// the same bytes turns it into a race report first.
    pub pending_init: Option<(u32, u32, Fault)>,
    /// `cp.async` copies in flight.
    pub asyncs: crate::tensor::AsyncState,
    /// `wgmma` state: in-flight instructions, warpgroup checks.
    pub wgmma: crate::wgmma::WgmmaState,
    /// mbarriers, bulk copies and the async proxy (`mbarrier`, `bulk`).
    pub tma: crate::mbarrier::TmaState,
}

impl CtaState {
    pub(crate) fn note_uninit(&mut self, cx: &Ctx, pc: u32, tid: u32, byte: u32, addr: u64) {
        if self.pending_init.is_some() {
            return;
        }
        self.pending_init = Some((pc, tid, cx.uninit_fault(byte, addr)));
    }

    fn take_pending(&mut self, cx: &Ctx) -> Result<(), SimError> {
        match self.pending_init.take() {
            Some((pc, tid, f)) => Err(cx.report(self, pc, tid, f)),
            None => Ok(()),
        }
    }
}

impl Ctx<'_> {
    pub(crate) fn thread_xyz(&self, tid: u32) -> [u32; 3] {
        let [bx, by, _] = self.block;
        [tid % bx, (tid / bx) % by, tid / (bx * by)]
    }
}

fn arg_fits(arg: &KernelArg, p: &ParamInfo) -> bool {
    let int = |bits: u32| p.size == bits / 8 && p.ty.is_integer_or_bits();
    match arg {
        KernelArg::Buffer(_) | KernelArg::U64(_) | KernelArg::I64(_) => int(64),
        KernelArg::U32(_) | KernelArg::I32(_) => int(32),
        KernelArg::U16(_) | KernelArg::I16(_) => int(16),
        KernelArg::U8(_) | KernelArg::I8(_) => int(8),
        KernelArg::Bits16(_) => p.size == 2,
        KernelArg::F32(_) => matches!(p.ty, Ty::F32 | Ty::B32),
        KernelArg::F64(_) => matches!(p.ty, Ty::F64 | Ty::B64),
        KernelArg::Bytes(b) => b.len() == p.size as usize,
        KernelArg::TensorMap(b) => b.len() == p.size as usize,
    }
}

impl KernelArg {
    /// The argument's little-endian bytes, as the `.param` space holds
    /// them; `None` for a [`KernelArg::Buffer`], whose address only its
    /// device knows. A GPU launch passes the same bytes (the runtime's CUDA
    /// backend reads them here).
    pub fn le_bytes(&self) -> Option<Vec<u8>> {
        Some(match self {
            KernelArg::Buffer(_) => return None,
            KernelArg::U8(v) => vec![*v],
            KernelArg::I8(v) => v.to_le_bytes().to_vec(),
            KernelArg::U16(v) | KernelArg::Bits16(v) => v.to_le_bytes().to_vec(),
            KernelArg::I16(v) => v.to_le_bytes().to_vec(),
            KernelArg::U32(v) => v.to_le_bytes().to_vec(),
            KernelArg::I32(v) => v.to_le_bytes().to_vec(),
            KernelArg::U64(v) => v.to_le_bytes().to_vec(),
            KernelArg::I64(v) => v.to_le_bytes().to_vec(),
            KernelArg::F32(v) => v.to_le_bytes().to_vec(),
            KernelArg::F64(v) => v.to_le_bytes().to_vec(),
            KernelArg::Bytes(b) => b.clone(),
            KernelArg::TensorMap(b) => b.to_vec(),
        })
    }
}

fn arg_bytes(dev: &Device, arg: &KernelArg) -> Result<Vec<u8>, SimError> {
    match arg {
        KernelArg::Buffer(id) => Ok(dev.address(*id)?.to_le_bytes().to_vec()),
        other => Ok(other.le_bytes().unwrap_or_default()),
    }
}

fn marshal(dev: &Device, entry: &Entry, args: &[KernelArg]) -> Result<Vec<u8>, SimError> {
    let err = |message: String| SimError::Args {
        kernel: entry.name.clone(),
        message,
    };
    if args.len() != entry.params.len() {
        return Err(err(format!(
            "the kernel takes {} parameters ({}), {} arguments given",
            entry.params.len(),
            entry
                .params
                .iter()
                .map(|p| format!(".{} {}", p.ty, p.name))
                .collect::<Vec<_>>()
                .join(", "),
            args.len()
        )));
    }
    let mut buf = vec![0u8; entry.param_bytes as usize];
    for (i, (a, p)) in args.iter().zip(&entry.params).enumerate() {
        if !arg_fits(a, p) {
            return Err(err(format!(
                "parameter {i} `{}` is .{} ({} bytes), but the argument is {a:?}",
                p.name, p.ty, p.size
            )));
        }
        let bytes = arg_bytes(dev, a)?;
        let o = p.offset as usize;
        buf[o..o + bytes.len()].copy_from_slice(&bytes);
    }
    Ok(buf)
}

/// What one launch runs: `entry` of `module` over a `grid` of CTAs of
/// `block` threads.
#[derive(Clone, Copy)]
pub struct Launch<'a> {
    pub module: &'a Module,
    pub entry: &'a str,
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl<'a> Launch<'a> {
    pub fn new(module: &'a Module, entry: &'a str, grid: [u32; 3], block: [u32; 3]) -> Self {
        Launch {
            module,
            entry,
            grid,
            block,
        }
    }
}

impl Device {
    /// Runs a [`Launch`] with `args`.
    ///
    /// The launch fails with the first check report (of the lowest CTA
    /// index that failed, so the result does not depend on thread timing).
    /// With an observer, CTAs run on the calling thread in order and the
    /// observer sees every instruction of the CTAs it wants.
    pub fn launch(
        &self,
        kernel: Launch<'_>,
        args: &[KernelArg],
        opts: &LaunchOptions,
        observer: Option<&mut dyn Observer>,
    ) -> Result<LaunchStats, SimError> {
        let observing = match observer {
            Some(o) => Observing::<NoSplit>::One(o),
            None => Observing::None,
        };
        self.launch_observed(kernel, args, opts, observing)
    }

    /// Runs a launch as [`Device::launch`] does, on `opts.threads` host
    /// threads (0: all cores), with a copy of `observer` on each
    /// ([`SplitObserver::split`]); the copies are joined back into it when
    /// every CTA has run. On failure the observer is left as it was.
    pub fn launch_split<O: SplitObserver>(
        &self,
        kernel: Launch<'_>,
        args: &[KernelArg],
        opts: &LaunchOptions,
        observer: &mut O,
    ) -> Result<LaunchStats, SimError> {
        self.launch_observed(kernel, args, opts, Observing::Split(observer))
    }

    fn launch_observed<O: SplitObserver>(
        &self,
        kernel: Launch<'_>,
        args: &[KernelArg],
        opts: &LaunchOptions,
        mut observer: Observing<'_, O>,
    ) -> Result<LaunchStats, SimError> {
        let Launch {
            module,
            entry,
            grid,
            block,
        } = kernel;
        let e = module.entry(entry)?;
        let launch_err = |message: String| SimError::Launch {
            kernel: e.name.clone(),
            message,
        };
        if grid.contains(&0) || block.contains(&0) {
            return Err(launch_err(format!(
                "grid {grid:?} and block {block:?} must not have a zero dimension"
            )));
        }
        let threads = u64::from(block[0]) * u64::from(block[1]) * u64::from(block[2]);
        if threads > 1024 {
            return Err(launch_err(format!(
                "a CTA of {threads} threads exceeds the limit of 1024"
            )));
        }
        if let Some(r) = e.reqntid {
            if r != block {
                return Err(launch_err(format!(
                    "the kernel requires a block of {r:?} (.reqntid), got {block:?}"
                )));
            }
        }
        if let Some(m) = e.maxntid {
            let max = u64::from(m[0]) * u64::from(m[1]) * u64::from(m[2]);
            if threads > max {
                return Err(launch_err(format!(
                    "the kernel allows at most {max} threads per CTA (.maxntid), got {threads}"
                )));
            }
        }
        let shared_size = shared_size(e, opts.dynamic_shared_bytes).map_err(launch_err)?;
        if e.local_bytes > MAX_LOCAL_BYTES {
            return Err(launch_err(format!(
                "{} bytes of local memory per thread exceed the limit of {MAX_LOCAL_BYTES}",
                e.local_bytes
            )));
        }
        if e.param_bytes > MAX_PARAM_BYTES {
            return Err(launch_err(format!(
                "{} bytes of parameters exceed the limit of {MAX_PARAM_BYTES}",
                e.param_bytes
            )));
        }
        let params = marshal(self, e, args)?;
        let mut template = vec![0u64; e.n_slots as usize * 32];
        for &(slot, v) in &e.consts {
            let b = slot as usize * 32;
            template[b..b + 32].fill(v);
        }
        let threads_per_cta = threads as u32;
        let cx = Ctx {
            module,
            entry: e,
            shared_size,
            dev: self,
            params,
            grid,
            block,
            threads_per_cta,
            n_warps: threads_per_cta.div_ceil(32),
            checks: opts.checks,
            max_steps: opts.max_steps,
            approx: opts.approx,
            template,
        };
        let n_ctas = u64::from(grid[0]) * u64::from(grid[1]) * u64::from(grid[2]);
        let workers = if matches!(observer, Observing::One(_)) {
            1
        } else if opts.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            opts.threads
        };
        let workers = (workers as u64).min(n_ctas).max(1) as usize;
        let mut stats = LaunchStats {
            ctas: n_ctas,
            ..LaunchStats::default()
        };
        let mut written = vec![false; self.buffers.len()];
        if workers == 1 {
            let mut w = Worker::new(&cx);
            let mut obs: Option<&mut dyn Observer> = match &mut observer {
                Observing::None => None,
                Observing::One(o) => Some(&mut **o),
                Observing::Split(o) => Some(&mut **o),
            };
            for c in 0..n_ctas {
                w.run_cta(&cx, c, obs.as_deref_mut())?;
            }
            w.finish(&mut stats, &mut written);
        } else {
            let next = AtomicU64::new(0);
            let stop = AtomicU64::new(u64::MAX);
            let failure: Mutex<Option<(u64, SimError)>> = Mutex::new(None);
            let (next, stop, failure, cx) = (&next, &stop, &failure, &cx);
            // One copy of a split observer per worker.
            let parts: Vec<Option<O>> = (0..workers)
                .map(|_| match &observer {
                    Observing::Split(o) => Some(o.split()),
                    _ => None,
                })
                .collect();
            let results: Vec<(Worker, Option<O>)> = std::thread::scope(|s| {
                let handles: Vec<_> = parts
                    .into_iter()
                    .map(|mut part| {
                        s.spawn(move || {
                            let mut w = Worker::new(cx);
                            loop {
                                let c = next.fetch_add(1, Ordering::Relaxed);
                                if c >= n_ctas || c >= stop.load(Ordering::Relaxed) {
                                    break;
                                }
                                let obs = part.as_mut().map(|o| o as &mut dyn Observer);
                                if let Err(err) = w.run_cta(cx, c, obs) {
                                    stop.fetch_min(c, Ordering::Relaxed);
                                    let mut f = failure.lock().unwrap_or_else(|p| p.into_inner());
                                    if !matches!(f.as_ref(), Some((fc, _)) if *fc <= c) {
                                        *f = Some((c, err));
                                    }
                                    break;
                                }
                            }
                            (w, part)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            });
            if let Some((_, err)) = failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
                return Err(err);
            }
            for (w, part) in results {
                w.finish(&mut stats, &mut written);
                if let (Observing::Split(o), Some(part)) = (&mut observer, part) {
                    o.join(part);
                }
            }
        }
        stats.written = written
            .iter()
            .enumerate()
            .filter(|(_, &w)| w)
            .map(|(i, _)| BufferId(i as u32))
            .collect();
        Ok(stats)
    }
}

/// Who watches a launch: nobody, one observer on the calling thread, or a
/// split observer with a copy on each worker thread.
enum Observing<'o, O> {
    None,
    One(&'o mut dyn Observer),
    Split(&'o mut O),
}

/// The split observer type of launches that have none.
struct NoSplit;

impl Observer for NoSplit {}

impl SplitObserver for NoSplit {
    fn split(&self) -> NoSplit {
        NoSplit
    }
    fn join(&mut self, _other: NoSplit) {}
}

/// One host thread's reusable state.
struct Worker {
    cta: CtaState,
    warps: Vec<Warp>,
}

impl Worker {
    fn new(cx: &Ctx) -> Worker {
        Worker {
            cta: CtaState {
                id: [0; 3],
                linear: 0,
                shared: Vec::new(),
                shadow: Shadow::default(),
                epoch: 0,
                written: vec![false; cx.dev.buffers.len()],
                observing: false,
                accesses: Vec::new(),
                shuffles: Vec::new(),
                pending_init: None,
                asyncs: crate::tensor::AsyncState::default(),
                wgmma: crate::wgmma::WgmmaState::default(),
                tma: crate::mbarrier::TmaState::default(),
            },
            warps: (0..cx.n_warps).map(|_| Warp::new()).collect(),
        }
    }

    fn finish(self, stats: &mut LaunchStats, written: &mut [bool]) {
        for w in &self.warps {
            stats.thread_instructions += w.thread_instructions;
            stats.warp_instructions += w.warp_instructions;
        }
        for (a, b) in written.iter_mut().zip(&self.cta.written) {
            *a |= *b;
        }
    }

    fn run_cta<'o>(
        &mut self,
        cx: &Ctx,
        linear: u64,
        mut obs: Option<&mut (dyn Observer + 'o)>,
    ) -> Result<(), SimError> {
        let [gx, gy, _] = cx.grid;
        let (gx, gy) = (u64::from(gx), u64::from(gy));
        let cta = &mut self.cta;
        cta.id = [
            (linear % gx) as u32,
            ((linear / gx) % gy) as u32,
            (linear / (gx * gy)) as u32,
        ];
        cta.linear = u32::try_from(linear).unwrap_or(u32::MAX);
        cta.shared.clear();
        cta.shared.resize(cx.shared_size, 0);
        if cx.checks {
            cta.shadow.reset(cx.shared_size);
        }
        cta.epoch = 0;
        cta.pending_init = None;
        cta.asyncs.reset();
        cta.wgmma.reset(cx);
        cta.tma
            .reset(cx.entry.async_proxy, cx.shared_size, cx.threads_per_cta);
        cta.observing = match obs.as_deref_mut() {
            Some(o) => o.wants_cta(cta.linear),
            None => false,
        };
        for (i, w) in self.warps.iter_mut().enumerate() {
            w.reset(cx, cta, i as u32);
        }
        loop {
            for w in &mut self.warps {
                if w.runnable() {
                    w.run(cx, cta, obs.as_deref_mut())?;
                }
            }
            cta.take_pending(cx)?;
            if self.warps.iter().all(|w| w.live == 0) {
                // Copies still in flight land when the CTA ends.
                cta.asyncs.flush(&mut cta.shared);
                return crate::wgmma::cta_end(cx, cta, &self.warps);
            }
            if self.warps.iter().any(|w| w.yielded != 0) {
                // Lanes that failed an mbarrier wait try again if anything
                // changed since they last tried; else nothing can.
                if !crate::mbarrier::progressed(&mut cta.tma, &self.warps) {
                    return Err(crate::mbarrier::deadlock(cx, cta, &self.warps));
                }
                for w in &mut self.warps {
                    w.yielded = 0;
                }
                continue;
            }
            if let Some(w) = self.warps.iter().find(|w| w.waiting != 0) {
                return Err(cx.warp_sync_deadlock(cta, w));
            }
            release_barrier(cx, cta, &mut self.warps)?;
        }
    }
}

/// Every live thread waits at a `bar.sync`: release it, or report why it
/// can never complete.
fn release_barrier(cx: &Ctx, cta: &mut CtaState, warps: &mut [Warp]) -> Result<(), SimError> {
    let mut arrived = 0u32;
    let mut pcs: Vec<(u32, u32, u32)> = Vec::new(); // (pc, threads, first tid)
    let mut first_exited = None;
    for w in warps.iter() {
        arrived += w.at_bar.count_ones();
        for l in lanes(w.at_bar) {
            let pc = w.pc_of(l);
            match pcs.iter_mut().find(|p| p.0 == pc) {
                Some(p) => p.1 += 1,
                None => pcs.push((pc, 1, w.first_tid + l as u32)),
            }
        }
        let exited = w.exists & !w.live;
        if exited != 0 && first_exited.is_none() {
            first_exited = Some((w.index, exited, w.first_tid + exited.trailing_zeros()));
        }
    }
    let Some(&(pc, _, first)) = pcs.first() else {
        return Ok(());
    };
    if let Some((warp, exited, tid)) = first_exited {
        let exited_total: u32 = warps
            .iter()
            .map(|w| (w.exists & !w.live).count_ones())
            .sum();
        let f = cx.barrier_exited_fault(arrived, exited_total, warp, exited, tid);
        return Err(cx.report(cta, pc, first, f));
    }
    if pcs.len() > 1 {
        let f = cx.barrier_split_fault(&pcs);
        return Err(cx.report(cta, pc, first, f));
    }
    for w in warps.iter_mut() {
        w.release_barrier();
    }
    cta.epoch += 1;
    Ok(())
}
