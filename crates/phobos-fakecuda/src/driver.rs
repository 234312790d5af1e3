//! The simulated driver: one device whose memory is a `phobos_sim::Device`,
//! contexts with the driver's current-context rules (a per-thread stack,
//! the primary context reference-counted), PTX modules parsed by the
//! simulator, launches run by it, events on a simulated clock.
//!
//! What it decides, and how it mirrors the hardware:
//! - A launch runs to completion inside `cuLaunchKernel`, but its outcome
//!   is reported as a GPU reports it: a sanitizer finding (or an injected
//!   failure) is *pending* until the next synchronizing call
//!   (`cuCtxSynchronize`, `cuMemcpyHtoD`/`DtoH`, `cuEventSynchronize`,
//!   `cuStreamSynchronize`, `cuMemFree`), which returns it; from then on
//!   the error is *sticky*: every call on that context returns it, until
//!   the context is destroyed (the last `cuDevicePrimaryCtxRelease`, or
//!   `cuDevicePrimaryCtxReset`). Launches made after a fault and before
//!   the synchronizing call return success and never run, as queued work
//!   after a fault never does.
//! - Events read a clock that launches and copies advance by a simulated
//!   duration derived from the work done (warp instructions spread over the
//!   multiprocessors the launch can fill; bytes over a bandwidth), never
//!   from the host's clock, so timing is deterministic.
//! - Cubins and fatbins are refused with `CUDA_ERROR_NO_BINARY_FOR_GPU`, so
//!   callers take their PTX path; JIT failures fill the caller's error log
//!   buffer in ptxas's words.
//!
//! It never holds its bookkeeping lock while a kernel runs, so launches
//! from several threads run concurrently, as on a GPU.

use crate::config::Config;
use cudarc::driver::sys::{CUjit_option, CUresult};
use phobos_meta::arch;
use phobos_sim::{BufferId, CheckKind, KernelArg, Launch, LaunchOptions, Module, SimError};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_void, CStr};
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

pub(crate) type Res<T> = Result<T, CUresult>;

/// Host/device copies and memsets are charged at these rates (bytes per
/// simulated nanosecond) plus a fixed latency.
const HOST_BYTES_PER_NS: f64 = 25.0;
const DEVICE_BYTES_PER_NS: f64 = 800.0;
const COPY_LATENCY_NS: f64 = 1_000.0;
const LAUNCH_LATENCY_NS: f64 = 2_000.0;
const CLOCK_GHZ: f64 = 1.5;
/// Warp schedulers per multiprocessor.
const SCHEDULERS: f64 = 4.0;
/// How long a rendezvous waits for its other callers.
const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(20);

/// A context's error state; a new or reset context starts without faults.
#[derive(Default)]
struct Context {
    /// A fault no synchronizing call has returned yet.
    pending: Option<CUresult>,
    /// A fault already returned; every later call on the context fails.
    sticky: Option<CUresult>,
}

struct Allocation {
    id: BufferId,
    bytes: u64,
    ctx: u64,
}

struct LoadedModule {
    ctx: u64,
    module: Arc<Module>,
}

struct Function {
    module: u64,
    sim: Arc<Module>,
    entry: String,
    max_dynamic_shared: i32,
}

struct Event {
    /// Simulated time of the last record, in nanoseconds.
    recorded: Option<f64>,
}

/// A stream made with `cuStreamCreate`: an in-order queue. Its work runs
/// when it is issued (one valid schedule), but it keeps its own simulated
/// clock, so that work on two streams overlaps in simulated time and only
/// an event wait (`cuStreamWaitEvent`) orders one after the other.
struct FakeStream {
    ctx: u64,
    clock_ns: f64,
}

/// One launch recorded by a stream capture, replayed by `cuGraphLaunch`.
#[derive(Clone)]
pub(crate) struct CapturedLaunch {
    f: u64,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_shared: u32,
    params: Vec<Vec<u8>>,
}

/// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`: the default stream's
/// special handles, which behave as the null stream here.
const LEGACY_STREAMS: [u64; 3] = [0, 1, 2];

#[derive(Default)]
struct State {
    next_handle: u64,
    contexts: HashMap<u64, Context>,
    primary: Option<u64>,
    primary_refs: u32,
    allocations: BTreeMap<u64, Allocation>,
    used_bytes: u64,
    allocs_made: u64,
    launches_made: u64,
    modules: HashMap<u64, LoadedModule>,
    functions: HashMap<u64, Function>,
    events: HashMap<u64, Event>,
    streams: HashMap<u64, FakeStream>,
    /// Streams capturing (`cuStreamBeginCapture`), with what they recorded.
    captures: HashMap<u64, Vec<CapturedLaunch>>,
    /// Captured graphs and their instantiations, by handle.
    graphs: HashMap<u64, Vec<CapturedLaunch>>,
    execs: HashMap<u64, Vec<CapturedLaunch>>,
    /// The default stream's simulated clock.
    clock_ns: f64,
}

impl State {
    fn handle(&mut self) -> u64 {
        // Distinct, non-null, and unlike small integers a caller might
        // confuse them with.
        self.next_handle += 1;
        0x7a00_0000 + self.next_handle * 16
    }

    /// Destroys a context's resources and forgets its errors.
    fn destroy_context(&mut self, sim: &mut phobos_sim::Device, ctx: u64) {
        self.contexts.remove(&ctx);
        let owned: Vec<u64> = self
            .allocations
            .iter()
            .filter(|(_, a)| a.ctx == ctx)
            .map(|(&base, _)| base)
            .collect();
        for base in owned {
            if let Some(a) = self.allocations.remove(&base) {
                self.used_bytes -= a.bytes;
                let _ = sim.release(a.id);
            }
        }
        let modules: Vec<u64> = self
            .modules
            .iter()
            .filter(|(_, m)| m.ctx == ctx)
            .map(|(&h, _)| h)
            .collect();
        for m in modules {
            self.modules.remove(&m);
            self.functions.retain(|_, f| f.module != m);
        }
        self.streams.retain(|_, st| st.ctx != ctx);
    }

    /// The simulated clock of `stream` (the default stream's for the null
    /// handle), which must belong to context `ctx`.
    fn clock(&mut self, stream: u64, ctx: u64) -> Res<&mut f64> {
        if LEGACY_STREAMS.contains(&stream) {
            return Ok(&mut self.clock_ns);
        }
        match self.streams.get_mut(&stream) {
            Some(st) if st.ctx == ctx => Ok(&mut st.clock_ns),
            _ => Err(CUresult::CUDA_ERROR_INVALID_HANDLE),
        }
    }

    /// Copies, memsets and waits on a capturing stream are not modelled
    /// as graph nodes: refused, as CUDA refuses what a capture cannot hold.
    fn not_capturing(&self, stream: u64) -> Res<()> {
        if self.captures.contains_key(&stream) {
            return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        }
        Ok(())
    }

    fn context(&mut self, ctx: u64) -> Res<&mut Context> {
        self.contexts
            .get_mut(&ctx)
            .ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)
    }

    /// The allocation holding `addr..addr + len`, and the offset in it.
    fn find(&self, addr: u64, len: u64) -> Res<(BufferId, usize)> {
        let (&base, a) = self
            .allocations
            .range(..=addr)
            .next_back()
            .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let offset = addr - base;
        match offset.checked_add(len) {
            Some(end) if end <= a.bytes => Ok((a.id, offset as usize)),
            _ => Err(CUresult::CUDA_ERROR_INVALID_VALUE),
        }
    }
}

thread_local! {
    /// The thread's context stack; the last entry is the current context.
    static CURRENT: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn current() -> Option<u64> {
    CURRENT.with(|c| c.borrow().last().copied())
}

/// A meeting point: `wait` returns once `n` callers are waiting at once, or
/// fails after `RENDEZVOUS_TIMEOUT` (the callers were serialized).
struct Rendezvous {
    n: usize,
    state: Mutex<(usize, u64)>,
    cv: Condvar,
}

impl Rendezvous {
    fn new(n: usize) -> Rendezvous {
        Rendezvous {
            n,
            state: Mutex::new((0, 0)),
            cv: Condvar::new(),
        }
    }

    fn wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = s.1;
        s.0 += 1;
        if s.0 >= self.n {
            s.0 = 0;
            s.1 += 1;
            self.cv.notify_all();
            return true;
        }
        let (mut s, timeout) = self
            .cv
            .wait_timeout_while(s, RENDEZVOUS_TIMEOUT, |s| s.1 == generation)
            .unwrap_or_else(PoisonError::into_inner);
        if timeout.timed_out() && s.1 == generation {
            s.0 -= 1;
            return false;
        }
        true
    }
}

pub(crate) struct Driver {
    pub(crate) config: Config,
    memory: RwLock<phobos_sim::Device>,
    state: Mutex<State>,
    launch_rendezvous: Option<Rendezvous>,
    load_rendezvous: Option<Rendezvous>,
    trace: Mutex<Option<std::fs::File>>,
}

/// A PTX JIT log, as the caller's option buffers receive it.
pub(crate) struct JitLogs {
    pub error: String,
    pub info: String,
}

impl Driver {
    pub(crate) fn new(config: Config) -> Result<Driver, String> {
        let trace = match &config.trace {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("PHOBOS_FAKE_GPU_TRACE={path:?}: {e}"))?,
            ),
            None => None,
        };
        Ok(Driver {
            launch_rendezvous: config.launch_rendezvous.map(Rendezvous::new),
            load_rendezvous: config.load_rendezvous.map(Rendezvous::new),
            config,
            memory: RwLock::new(phobos_sim::Device::new()),
            state: Mutex::new(State::default()),
            trace: Mutex::new(trace),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn memory_mut(&self) -> std::sync::RwLockWriteGuard<'_, phobos_sim::Device> {
        self.memory.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn trace(&self, line: impl FnOnce() -> String) {
        let mut t = self.trace.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = t.as_mut() {
            let _ = writeln!(f, "{}", line());
        }
    }

    /// The current context, checked for faults. A synchronizing call turns
    /// a pending fault into the sticky error it returns.
    fn enter(&self, state: &mut State, synchronizing: bool) -> Res<u64> {
        let ctx = current().ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)?;
        let c = state.context(ctx)?;
        if let Some(e) = c.sticky {
            return Err(e);
        }
        if synchronizing {
            if let Some(e) = c.pending.take() {
                c.sticky = Some(e);
                return Err(e);
            }
        }
        Ok(ctx)
    }

    // ---- contexts ----

    pub(crate) fn primary_retain(&self) -> u64 {
        let mut s = self.state();
        let ctx = match s.primary {
            Some(c) => c,
            None => {
                let c = s.handle();
                s.contexts.insert(c, Context::default());
                s.primary = Some(c);
                c
            }
        };
        s.primary_refs += 1;
        ctx
    }

    pub(crate) fn primary_release(&self) -> Res<()> {
        let mut s = self.state();
        let ctx = s.primary.ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)?;
        s.primary_refs = s.primary_refs.saturating_sub(1);
        if s.primary_refs == 0 {
            s.primary = None;
            let mut sim = self.memory_mut();
            s.destroy_context(&mut sim, ctx);
            self.trace(|| "cuDevicePrimaryCtxRelease: primary context destroyed".into());
        }
        Ok(())
    }

    /// Whether the primary context is retained (by anyone).
    pub(crate) fn primary_active(&self) -> bool {
        self.state().primary_refs > 0
    }

    /// Destroys the primary context's resources and errors; it stays
    /// retained and is usable again at once.
    pub(crate) fn primary_reset(&self) {
        let mut s = self.state();
        if let Some(ctx) = s.primary {
            let mut sim = self.memory_mut();
            s.destroy_context(&mut sim, ctx);
            s.contexts.insert(ctx, Context::default());
            self.trace(|| "cuDevicePrimaryCtxReset".into());
        }
    }

    pub(crate) fn ctx_create(&self) -> u64 {
        let mut s = self.state();
        let c = s.handle();
        s.contexts.insert(c, Context::default());
        drop(s);
        CURRENT.with(|cur| cur.borrow_mut().push(c));
        c
    }

    pub(crate) fn ctx_destroy(&self, ctx: u64) -> Res<()> {
        let mut s = self.state();
        if Some(ctx) == s.primary || !s.contexts.contains_key(&ctx) {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        let mut sim = self.memory_mut();
        s.destroy_context(&mut sim, ctx);
        CURRENT.with(|cur| cur.borrow_mut().retain(|&c| c != ctx));
        Ok(())
    }

    pub(crate) fn set_current(&self, ctx: u64) -> Res<()> {
        if ctx != 0 && !self.state().contexts.contains_key(&ctx) {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        CURRENT.with(|cur| {
            let mut cur = cur.borrow_mut();
            cur.pop();
            if ctx != 0 {
                cur.push(ctx);
            }
        });
        Ok(())
    }

    pub(crate) fn get_current(&self) -> u64 {
        current().unwrap_or(0)
    }

    pub(crate) fn push_current(&self, ctx: u64) -> Res<()> {
        if !self.state().contexts.contains_key(&ctx) {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        CURRENT.with(|cur| cur.borrow_mut().push(ctx));
        Ok(())
    }

    pub(crate) fn pop_current(&self) -> Res<u64> {
        CURRENT
            .with(|cur| cur.borrow_mut().pop())
            .ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT)
    }

    pub(crate) fn synchronize(&self) -> Res<()> {
        let mut s = self.state();
        self.enter(&mut s, true).map(|_| ())
    }

    // ---- memory ----

    pub(crate) fn mem_alloc(&self, bytes: usize) -> Res<u64> {
        let mut s = self.state();
        let ctx = self.enter(&mut s, false)?;
        if bytes == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        s.allocs_made += 1;
        let n = s.allocs_made;
        let bytes64 = bytes as u64;
        let injected = self.config.oom_at == Some(n);
        if injected || s.used_bytes.saturating_add(bytes64) > self.config.memory_bytes {
            self.trace(|| {
                format!(
                    "cuMemAlloc #{n} of {bytes} bytes: out of memory{}",
                    if injected { " (injected)" } else { "" }
                )
            });
            return Err(CUresult::CUDA_ERROR_OUT_OF_MEMORY);
        }
        let mut sim = self.memory_mut();
        let id = sim
            .alloc(&format!("allocation #{n} ({bytes} bytes)"), bytes)
            .map_err(|_| CUresult::CUDA_ERROR_OUT_OF_MEMORY)?;
        let addr = sim.address(id).map_err(|_| CUresult::CUDA_ERROR_UNKNOWN)?;
        s.allocations.insert(
            addr,
            Allocation {
                id,
                bytes: bytes64,
                ctx,
            },
        );
        s.used_bytes += bytes64;
        self.trace(|| format!("cuMemAlloc #{n} {bytes} -> {addr:#x}"));
        Ok(addr)
    }

    pub(crate) fn mem_free(&self, addr: u64) -> Res<()> {
        let mut s = self.state();
        self.enter(&mut s, true)?;
        let a = s
            .allocations
            .remove(&addr)
            .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        s.used_bytes -= a.bytes;
        let _ = self.memory_mut().release(a.id);
        self.trace(|| format!("cuMemFree {addr:#x}"));
        Ok(())
    }

    pub(crate) fn mem_info(&self) -> (u64, u64) {
        let s = self.state();
        let total = self.config.memory_bytes;
        (total.saturating_sub(s.used_bytes), total)
    }

    pub(crate) fn write(&self, addr: u64, data: &[u8], stream: u64) -> Res<()> {
        let mut s = self.state();
        s.not_capturing(stream)?;
        let ctx = self.enter(&mut s, true)?;
        s.clock(stream, ctx)?;
        let (id, offset) = s.find(addr, data.len() as u64)?;
        self.memory_mut()
            .write(id, offset, data)
            .map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
        *s.clock(stream, ctx)? += COPY_LATENCY_NS + data.len() as f64 / HOST_BYTES_PER_NS;
        self.trace(|| format!("cuMemcpyHtoD {addr:#x} {}", data.len()));
        Ok(())
    }

    pub(crate) fn read(&self, addr: u64, out: &mut [u8], stream: u64) -> Res<()> {
        let mut s = self.state();
        s.not_capturing(stream)?;
        let ctx = self.enter(&mut s, true)?;
        s.clock(stream, ctx)?;
        let (id, offset) = s.find(addr, out.len() as u64)?;
        self.memory
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .read(id, offset, out)
            .map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
        *s.clock(stream, ctx)? += COPY_LATENCY_NS + out.len() as f64 / HOST_BYTES_PER_NS;
        self.trace(|| format!("cuMemcpyDtoH {addr:#x} {}", out.len()));
        Ok(())
    }

    pub(crate) fn copy(&self, dst: u64, src: u64, len: usize, stream: u64) -> Res<()> {
        let mut s = self.state();
        s.not_capturing(stream)?;
        let ctx = self.enter(&mut s, false)?;
        s.clock(stream, ctx)?;
        let (src_id, src_off) = s.find(src, len as u64)?;
        let (dst_id, dst_off) = s.find(dst, len as u64)?;
        let mut sim = self.memory_mut();
        const CHUNK: usize = 1 << 20;
        let mut buf = vec![0u8; len.min(CHUNK)];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK);
            sim.read(src_id, src_off + done, &mut buf[..n])
                .and_then(|_| sim.write(dst_id, dst_off + done, &buf[..n]))
                .map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
            done += n;
        }
        *s.clock(stream, ctx)? += COPY_LATENCY_NS + len as f64 / DEVICE_BYTES_PER_NS;
        self.trace(|| format!("cuMemcpyDtoD {dst:#x} {src:#x} {len}"));
        Ok(())
    }

    pub(crate) fn memset(&self, dst: u64, value: u8, len: usize, stream: u64) -> Res<()> {
        let mut s = self.state();
        s.not_capturing(stream)?;
        let ctx = self.enter(&mut s, false)?;
        s.clock(stream, ctx)?;
        let (id, offset) = s.find(dst, len as u64)?;
        let mut sim = self.memory_mut();
        const CHUNK: usize = 1 << 20;
        let chunk = vec![value; len.min(CHUNK)];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK);
            sim.write(id, offset + done, &chunk[..n])
                .map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
            done += n;
        }
        *s.clock(stream, ctx)? += COPY_LATENCY_NS + len as f64 / DEVICE_BYTES_PER_NS;
        self.trace(|| format!("cuMemsetD8 {dst:#x} {value} {len}"));
        Ok(())
    }

    // ---- modules ----

    /// Loads an image: PTX text is parsed by the simulator; a stand-in
    /// cubin (`cubin.rs`) for the device's architecture runs its PTX; other
    /// cubins and fatbins are refused.
    ///
    /// # Safety
    /// `image` points to an ELF/fatbin image or to NUL-terminated text.
    pub(crate) unsafe fn module_load(&self, image: *const c_void, logs: &mut JitLogs) -> Res<u64> {
        {
            let mut s = self.state();
            self.enter(&mut s, false)?;
        }
        if image.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let head = std::slice::from_raw_parts(image.cast::<u8>(), 4);
        let stand_in = if head == b"\x7fELF" {
            crate::cubin::parse(image.cast())
        } else {
            None
        };
        if let Some((arch, _)) = &stand_in {
            // Only a cubin for the device's own compute capability loads
            // (an sm_90a one on a 9.0 device; never elsewhere).
            if arch::compute_capability(*arch) != self.config.arch {
                logs.error = format!(
                    "phobos-fakecuda: a stand-in cubin for {}; this device is {}",
                    arch::name(*arch),
                    arch::name(self.config.arch)
                );
                self.trace(|| "cuModuleLoadData: stand-in cubin of another arch refused".into());
                return Err(CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU);
            }
        } else if head == b"\x7fELF" || head == 0xBA55_ED50u32.to_le_bytes() {
            logs.error = "phobos-fakecuda: this stand-in runs PTX only; cubins and fatbins \
                          are refused so that the caller loads its PTX"
                .to_string();
            self.trace(|| "cuModuleLoadData: binary image refused".into());
            return Err(CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU);
        }
        let text = match &stand_in {
            Some((_, ptx)) => ptx.as_str(),
            None => CStr::from_ptr(image.cast()).to_str().map_err(|_| {
                logs.error = "ptxas fatal   : the PTX text is not UTF-8".to_string();
                CUresult::CUDA_ERROR_INVALID_PTX
            })?,
        };
        if let Some(g) = &self.load_rendezvous {
            if !g.wait() {
                logs.error = "phobos-fakecuda: PHOBOS_FAKE_GPU_LOAD_RENDEZVOUS: the other \
                              module loads never came (they were serialized)"
                    .to_string();
                return Err(CUresult::CUDA_ERROR_LAUNCH_TIMEOUT);
            }
        }
        let module = self.jit(text, logs)?;
        let mut s = self.state();
        let ctx = self.enter(&mut s, false)?;
        let h = s.handle();
        s.modules.insert(
            h,
            LoadedModule {
                ctx,
                module: Arc::new(module),
            },
        );
        self.trace(|| format!("cuModuleLoadData ptx -> {h:#x}"));
        Ok(h)
    }

    /// What the driver's PTX JIT checks, with ptxas's messages.
    fn jit(&self, text: &str, logs: &mut JitLogs) -> Res<Module> {
        let arch = self.config.arch;
        if let Some((line, target)) = ptx_target(text) {
            // An arch-specific target's PTX (sm_90a) is not forward
            // compatible: the JIT compiles it for its own compute
            // capability only, and fails (CUDA_ERROR_INVALID_PTX, "a PTX
            // JIT compilation failed") on any other device.
            if arch::is_arch_specific(target) && !arch::runs_on(target, arch, false) {
                logs.error = format!(
                    "ptxas application ptx input, line {line}; fatal   : .target {} is \
                     arch-specific and runs on compute capability {}.{} only; the device's \
                     is {}.{}",
                    arch::name(target),
                    arch::compute_capability(target) / 10,
                    arch::compute_capability(target) % 10,
                    arch / 10,
                    arch % 10
                );
                return Err(CUresult::CUDA_ERROR_INVALID_PTX);
            }
            if !arch::runs_on(target, arch, false) {
                logs.error = format!(
                    "ptxas application ptx input, line {line}; fatal   : SM version specified \
                     by .target ({}) is higher than the device's ({})",
                    arch::name(target),
                    arch::name(arch)
                );
                return Err(CUresult::CUDA_ERROR_INVALID_PTX);
            }
        }
        let module = match Module::parse(text) {
            Ok(m) => m,
            Err(SimError::Parse { line, message }) => {
                logs.error =
                    format!("ptxas application ptx input, line {line}; error   : {message}");
                return Err(CUresult::CUDA_ERROR_INVALID_PTX);
            }
            Err(SimError::Unsupported { instruction, line }) => {
                logs.error = format!(
                    "ptxas application ptx input, line {line}; error   : phobos-fakecuda: \
                     the simulator does not run `{instruction}` (see docs/simulator.md)"
                );
                return Err(CUresult::CUDA_ERROR_INVALID_PTX);
            }
            Err(e) => {
                logs.error = format!("ptxas fatal   : {e}");
                return Err(CUresult::CUDA_ERROR_INVALID_PTX);
            }
        };
        let limit = self.config.shared_per_block;
        for entry in module.entry_names() {
            let shared = module.shared_bytes(entry).unwrap_or(0);
            if shared > limit {
                logs.error = format!(
                    "ptxas error   : Entry function '{entry}' uses too much shared data \
                     ({shared:#x} bytes, {limit:#x} max)"
                );
                return Err(CUresult::CUDA_ERROR_INVALID_PTX);
            }
        }
        logs.info = format!(
            "ptxas info    : phobos-fakecuda: {} loaded into the simulator for {}",
            module.entry_names().join(", "),
            arch::name(arch)
        );
        Ok(module)
    }

    pub(crate) fn module_unload(&self, module: u64) -> Res<()> {
        let mut s = self.state();
        s.modules
            .remove(&module)
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        s.functions.retain(|_, f| f.module != module);
        Ok(())
    }

    pub(crate) fn get_function(&self, module: u64, name: &str) -> Res<u64> {
        let mut s = self.state();
        self.enter(&mut s, false)?;
        let m = s
            .modules
            .get(&module)
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        if !m.module.entry_names().contains(&name) {
            return Err(CUresult::CUDA_ERROR_NOT_FOUND);
        }
        let sim = Arc::clone(&m.module);
        let h = s.handle();
        s.functions.insert(
            h,
            Function {
                module,
                sim,
                entry: name.to_string(),
                max_dynamic_shared: 0,
            },
        );
        Ok(h)
    }

    pub(crate) fn func_set_max_dynamic_shared(&self, f: u64, value: i32) -> Res<()> {
        let mut s = self.state();
        let f = s
            .functions
            .get_mut(&f)
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        // As the driver: static plus dynamic may not pass the opt-in limit.
        let shared = f.sim.shared_bytes(&f.entry).unwrap_or(0);
        let room = self.config.shared_per_block_optin.saturating_sub(shared);
        if value < 0 || value.unsigned_abs() > room {
            self.trace(|| {
                format!(
                    "cuFuncSetAttribute {}: MAX_DYNAMIC_SHARED_SIZE_BYTES {value} > {room}",
                    f.entry
                )
            });
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        self.trace(|| {
            format!(
                "cuFuncSetAttribute {}: MAX_DYNAMIC_SHARED_SIZE_BYTES {value}",
                f.entry
            )
        });
        f.max_dynamic_shared = value;
        Ok(())
    }

    pub(crate) fn func_shared_bytes(&self, f: u64) -> Res<(i32, i32)> {
        let s = self.state();
        let f = s
            .functions
            .get(&f)
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        let shared = f.sim.shared_bytes(&f.entry).unwrap_or(0);
        Ok((
            i32::try_from(shared).unwrap_or(i32::MAX),
            f.max_dynamic_shared,
        ))
    }

    // ---- launches ----

    /// Runs a launch. `params` gives each `.param` its bytes (read by the
    /// caller from `kernelParams` with the sizes this returns first).
    pub(crate) fn param_sizes(&self, f: u64) -> Res<Vec<u32>> {
        let s = self.state();
        let f = s
            .functions
            .get(&f)
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        let params = f
            .sim
            .params(&f.entry)
            .map_err(|_| CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        Ok(params.iter().map(|p| p.size).collect())
    }

    pub(crate) fn launch(
        &self,
        f: u64,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        params: Vec<Vec<u8>>,
        stream: u64,
    ) -> Res<()> {
        let mut hang = false;
        let (ctx, sim_module, entry, n) = {
            let mut s = self.state();
            let ctx = self.enter(&mut s, false)?;
            s.clock(stream, ctx)?;
            let func = s
                .functions
                .get(&f)
                .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
            let (sim_module, entry) = (Arc::clone(&func.sim), func.entry.clone());
            let c = &self.config;
            let threads = u64::from(block[0]) * u64::from(block[1]) * u64::from(block[2]);
            if grid.contains(&0)
                || block.contains(&0)
                || threads > u64::from(c.max_threads_per_block)
                || grid.iter().zip(c.max_grid).any(|(&g, l)| g > l)
            {
                self.trace(|| {
                    format!("cuLaunchKernel {entry}: bad grid {grid:?} or block {block:?}")
                });
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            // Every CTA is simulated on the CPU: a launch over the budget
            // would run for hours, so it is refused up front (and the
            // context stays usable, as for any launch refused for its
            // resources).
            let raise = |w: u64| format!("PHOBOS_FAKE_GPU_MAX_WORK={w}");
            if let Err(why) = phobos_sim::check_work(grid, threads as u32, c.max_work, raise) {
                let code = CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
                if !c.quiet {
                    eprintln!("phobos-fakecuda: launch of `{entry}` refused ({code:?}): {why}");
                }
                self.trace(|| format!("cuLaunchKernel {entry}: refused: {why}"));
                return Err(code);
            }
            // As the driver: dynamic shared memory up to what is left of
            // 48 KB, or up to the function's raised maximum.
            let shared = sim_module.shared_bytes(&entry).unwrap_or(0);
            let allowed = c
                .shared_per_block
                .saturating_sub(shared)
                .max(func.max_dynamic_shared.unsigned_abs());
            if dynamic_shared > allowed {
                self.trace(|| {
                    format!(
                        "cuLaunchKernel {entry}: {dynamic_shared} bytes of dynamic shared \
                         memory, above the {allowed} allowed (cuFuncSetAttribute raises it)"
                    )
                });
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            if let Some(captured) = s.captures.get_mut(&stream) {
                // Recorded, not run: the graph runs it (`cuGraphLaunch`).
                captured.push(CapturedLaunch {
                    f,
                    grid,
                    block,
                    dynamic_shared,
                    params: params.clone(),
                });
                self.trace(|| format!("cuLaunchKernel {entry}: captured on {stream:#x}"));
                return Ok(());
            }
            s.launches_made += 1;
            let n = s.launches_made;
            let context = s.context(ctx)?;
            if context.pending.is_some() {
                self.trace(|| {
                    format!("cuLaunchKernel #{n} {entry}: not run (the context faulted)")
                });
                return Ok(());
            }
            if self.config.fail_launch == Some(n) {
                context.pending = Some(CUresult::CUDA_ERROR_LAUNCH_FAILED);
                self.trace(|| format!("cuLaunchKernel #{n} {entry}: failed (injected)"));
                return Ok(());
            }
            if self.config.fault_entries.contains(&entry) {
                context.pending = Some(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
                self.trace(|| format!("cuLaunchKernel #{n} {entry}: faulted (injected)"));
                return Ok(());
            }
            if self.config.hang_entries.contains(&entry) {
                self.trace(|| format!("cuLaunchKernel #{n} {entry}: hangs (injected)"));
                hang = true;
            }
            (ctx, sim_module, entry, n)
        };
        // PHOBOS_FAKE_GPU_HANG_ENTRY: as a kernel that never finishes,
        // with no lock held (other threads' calls go on).
        if hang {
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        if let Some(g) = &self.launch_rendezvous {
            if !g.wait() {
                self.trace(|| format!("cuLaunchKernel #{n} {entry}: rendezvous timed out"));
                return Err(CUresult::CUDA_ERROR_LAUNCH_TIMEOUT);
            }
        }
        self.trace(|| format!("cuLaunchKernel #{n} {entry} grid={grid:?} block={block:?}"));
        if self.config.skip_run {
            // PHOBOS_FAKE_GPU_SKIP_RUN: the host side of a launch only.
            let mut s = self.state();
            if let Ok(clock) = s.clock(stream, ctx) {
                *clock += LAUNCH_LATENCY_NS;
            }
            return Ok(());
        }
        let args: Vec<KernelArg> = params.into_iter().map(KernelArg::Bytes).collect();
        let result = self
            .memory
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .launch(
                Launch::new(&sim_module, &entry, grid, block),
                &args,
                &LaunchOptions {
                    dynamic_shared_bytes: dynamic_shared,
                    ..LaunchOptions::default()
                },
                None,
            );
        let mut s = self.state();
        match result {
            Ok(stats) => {
                let warps = u64::from(block[0] * block[1] * block[2]).div_ceil(32) * stats.ctas;
                let lanes = (f64::from(self.config.sms) * SCHEDULERS).min(warps.max(1) as f64);
                let cycles = stats.warp_instructions as f64 / lanes;
                if let Ok(clock) = s.clock(stream, ctx) {
                    *clock += LAUNCH_LATENCY_NS + cycles / CLOCK_GHZ;
                }
                Ok(())
            }
            Err(SimError::Check(report)) => {
                let code = match report.kind {
                    // A loop that steps past i32 wraps and runs on a GPU.
                    CheckKind::StepLimit | CheckKind::LoopStep => {
                        CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
                    }
                    CheckKind::Memcheck if report.message.contains("misaligned") => {
                        CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
                    }
                    _ => CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
                };
                if !self.config.quiet {
                    let text = format!(
                        "phobos-fakecuda: launch #{n} of `{entry}` faulted ({code:?}):\n{report}"
                    );
                    for line in text.lines() {
                        eprintln!("========= {line}");
                    }
                }
                self.trace(|| {
                    format!(
                        "cuLaunchKernel #{n} {entry}: fault {code:?}: {}",
                        report.message
                    )
                });
                if let Ok(c) = s.context(ctx) {
                    c.pending.get_or_insert(code);
                }
                Ok(())
            }
            Err(e) => {
                self.trace(|| format!("cuLaunchKernel #{n} {entry}: refused: {e}"));
                Err(CUresult::CUDA_ERROR_INVALID_VALUE)
            }
        }
    }

    // ---- events ----

    pub(crate) fn event_create(&self) -> Res<u64> {
        let mut s = self.state();
        self.enter(&mut s, false)?;
        let h = s.handle();
        s.events.insert(h, Event { recorded: None });
        Ok(h)
    }

    pub(crate) fn event_destroy(&self, e: u64) -> Res<()> {
        self.state()
            .events
            .remove(&e)
            .map(|_| ())
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
    }

    pub(crate) fn event_record(&self, e: u64, stream: u64) -> Res<()> {
        let mut s = self.state();
        let ctx = self.enter(&mut s, false)?;
        let now = *s.clock(stream, ctx)?;
        let ev = s
            .events
            .get_mut(&e)
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        ev.recorded = Some(now);
        self.trace(|| format!("cuEventRecord {e:#x} at {now:.0} ns"));
        Ok(())
    }

    // ---- streams ----

    pub(crate) fn stream_create(&self) -> Res<u64> {
        let mut s = self.state();
        let ctx = self.enter(&mut s, false)?;
        let h = s.handle();
        // A new stream's work starts no earlier than the device's now.
        let now = s.clock_ns;
        s.streams.insert(h, FakeStream { ctx, clock_ns: now });
        self.trace(|| format!("cuStreamCreate {h:#x}"));
        Ok(h)
    }

    pub(crate) fn stream_destroy(&self, stream: u64) -> Res<()> {
        let mut s = self.state();
        let st = s
            .streams
            .remove(&stream)
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        // Its work is done: the device's clock has reached its end.
        s.clock_ns = s.clock_ns.max(st.clock_ns);
        Ok(())
    }

    /// `cuStreamWaitEvent`: the stream's later work starts after the
    /// event's recorded time.
    pub(crate) fn stream_wait_event(&self, stream: u64, e: u64) -> Res<()> {
        let mut s = self.state();
        let ctx = self.enter(&mut s, false)?;
        let at = s
            .events
            .get(&e)
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?
            .recorded
            .unwrap_or(0.0);
        let clock = s.clock(stream, ctx)?;
        *clock = clock.max(at);
        self.trace(|| format!("cuStreamWaitEvent {stream:#x} until {at:.0} ns"));
        Ok(())
    }

    pub(crate) fn stream_synchronize(&self, stream: u64) -> Res<()> {
        let mut s = self.state();
        s.not_capturing(stream)?;
        let ctx = self.enter(&mut s, true)?;
        s.clock(stream, ctx).map(|_| ())
    }

    // ---- stream capture and graphs ----

    pub(crate) fn begin_capture(&self, stream: u64) -> Res<()> {
        let mut s = self.state();
        let ctx = self.enter(&mut s, false)?;
        if LEGACY_STREAMS.contains(&stream) {
            return Err(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        }
        s.clock(stream, ctx)?;
        if s.captures.contains_key(&stream) {
            return Err(CUresult::CUDA_ERROR_ILLEGAL_STATE);
        }
        s.captures.insert(stream, Vec::new());
        self.trace(|| format!("cuStreamBeginCapture {stream:#x}"));
        Ok(())
    }

    pub(crate) fn end_capture(&self, stream: u64) -> Res<u64> {
        let mut s = self.state();
        let launches = s
            .captures
            .remove(&stream)
            .ok_or(CUresult::CUDA_ERROR_ILLEGAL_STATE)?;
        let h = s.handle();
        let n = launches.len();
        s.graphs.insert(h, launches);
        self.trace(|| format!("cuStreamEndCapture {stream:#x}: {n} launches"));
        Ok(h)
    }

    pub(crate) fn is_capturing(&self, stream: u64) -> bool {
        self.state().captures.contains_key(&stream)
    }

    pub(crate) fn graph_instantiate(&self, graph: u64) -> Res<u64> {
        let mut s = self.state();
        let launches = s
            .graphs
            .get(&graph)
            .cloned()
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?;
        let h = s.handle();
        s.execs.insert(h, launches);
        Ok(h)
    }

    pub(crate) fn graph_destroy(&self, graph: u64) -> Res<()> {
        self.state()
            .graphs
            .remove(&graph)
            .map(|_| ())
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
    }

    pub(crate) fn graph_exec_destroy(&self, exec: u64) -> Res<()> {
        self.state()
            .execs
            .remove(&exec)
            .map(|_| ())
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
    }

    /// `cuGraphLaunch`: the captured launches, in order, on `stream`.
    pub(crate) fn graph_launch(&self, exec: u64, stream: u64) -> Res<()> {
        let launches = {
            let s = self.state();
            s.not_capturing(stream)?;
            s.execs
                .get(&exec)
                .cloned()
                .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)?
        };
        self.trace(|| format!("cuGraphLaunch {exec:#x}: {} launches", launches.len()));
        for l in launches {
            self.launch(l.f, l.grid, l.block, l.dynamic_shared, l.params, stream)?;
        }
        Ok(())
    }

    /// The context a stream belongs to (the current one for the default
    /// stream's handles).
    pub(crate) fn stream_context(&self, stream: u64) -> Res<u64> {
        let s = self.state();
        if LEGACY_STREAMS.contains(&stream) {
            return current().ok_or(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        s.streams
            .get(&stream)
            .map(|st| st.ctx)
            .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
    }

    pub(crate) fn event_synchronize(&self, e: u64) -> Res<()> {
        let mut s = self.state();
        if !s.events.contains_key(&e) {
            return Err(CUresult::CUDA_ERROR_INVALID_HANDLE);
        }
        self.enter(&mut s, true).map(|_| ())
    }

    pub(crate) fn event_elapsed_ms(&self, start: u64, end: u64) -> Res<f32> {
        let s = self.state();
        let at = |e: u64| {
            s.events
                .get(&e)
                .and_then(|ev| ev.recorded)
                .ok_or(CUresult::CUDA_ERROR_INVALID_HANDLE)
        };
        let (a, b) = (at(start)?, at(end)?);
        Ok(((b - a) / 1e6) as f32)
    }
}

/// The `.target sm_NN` (or `sm_90a`) of a PTX module, with its line.
fn ptx_target(text: &str) -> Option<(usize, u32)> {
    text.lines().enumerate().find_map(|(i, line)| {
        let rest = line.trim().strip_prefix(".target")?;
        let sm = rest
            .split(|c: char| c == ',' || c.is_whitespace())
            .find_map(|t| t.strip_prefix("sm_"))?;
        // A target Phobos has no number for (`sm_100a`) is checked by its
        // compute capability.
        let digits: String = sm.chars().take_while(char::is_ascii_digit).collect();
        Some((i + 1, arch::from_name(sm).or_else(|| digits.parse().ok())?))
    })
}

/// Reads the JIT options the driver honours: the error and info log
/// buffers and their sizes.
pub(crate) struct LogOptions {
    pub error: Option<(*mut u8, usize, usize)>,
    pub info: Option<(*mut u8, usize, usize)>,
}

/// # Safety
/// `options` and `values` hold `n` entries each (or are null when `n` is 0).
pub(crate) unsafe fn log_options(
    n: u32,
    options: *const CUjit_option,
    values: *const *mut c_void,
) -> LogOptions {
    let mut out = LogOptions {
        error: None,
        info: None,
    };
    if n == 0 || options.is_null() || values.is_null() {
        return out;
    }
    let opts = std::slice::from_raw_parts(options.cast::<u32>(), n as usize);
    let vals = std::slice::from_raw_parts(values, n as usize);
    let find = |o: CUjit_option| opts.iter().position(|&x| x == o as u32);
    if let (Some(b), Some(sz)) = (
        find(CUjit_option::CU_JIT_ERROR_LOG_BUFFER),
        find(CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES),
    ) {
        out.error = Some((vals[b].cast(), vals[sz] as usize, sz));
    }
    if let (Some(b), Some(sz)) = (
        find(CUjit_option::CU_JIT_INFO_LOG_BUFFER),
        find(CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES),
    ) {
        out.info = Some((vals[b].cast(), vals[sz] as usize, sz));
    }
    out
}

/// Copies a log into a caller's buffer as the driver does: truncated to
/// fit, NUL-terminated, and the size option's value replaced by the number
/// of bytes written.
///
/// # Safety
/// `buf` holds `size` writable bytes; `values` is the option value array.
pub(crate) unsafe fn fill_log(
    text: &str,
    (buf, size, size_slot): (*mut u8, usize, usize),
    values: *mut *mut c_void,
) {
    if buf.is_null() || size == 0 {
        return;
    }
    let n = text.len().min(size - 1);
    std::ptr::copy_nonoverlapping(text.as_ptr(), buf, n);
    *buf.add(n) = 0;
    *values.add(size_slot) = n as *mut c_void;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_read_from_the_header() {
        let ptx = ".version 7.8\n.target sm_86\n.address_size 64\n";
        assert_eq!(ptx_target(ptx), Some((2, 86)));
        assert_eq!(
            ptx_target(".target sm_90a, debug\n"),
            Some((1, arch::SM_90A))
        );
        assert_eq!(ptx_target(".target sm_100a\n"), Some((1, 100)));
        assert_eq!(ptx_target(".version 7.8\n"), None);
    }

    #[test]
    fn a_rendezvous_releases_its_callers_together_or_times_out() {
        let r = Arc::new(Rendezvous::new(2));
        let other = {
            let r = Arc::clone(&r);
            std::thread::spawn(move || r.wait())
        };
        assert!(r.wait());
        assert!(other.join().unwrap());
    }
}
