//! The CUDA backend: the driver API through cudarc's dynamically loaded
//! bindings, so building needs no CUDA toolkit and a machine without libcuda
//! gets `DeviceError::NoDriver` instead of a panic. Owns the context, device
//! memory, module loading (the cubin for the device's architecture, else the
//! PTX JIT-compiled by the driver with its log kept for errors) and launches.

use crate::call::{EntryCall, KernelId, KernelSource, Limits};
use crate::error::{DeviceError, LaunchError, Site};
use cudarc::driver::result::{self, DriverError};
use cudarc::driver::{sys, CudaContext};
use phobos_meta::arch;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex, PoisonError};

/// One image the driver may load for a kernel, in order of preference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Image {
    Cubin { arch: u32, bytes: &'static [u8] },
    Ptx { arch: u32, text: &'static str },
}

impl Image {
    pub(crate) fn label(&self, module: &str) -> String {
        match self {
            Image::Cubin { arch, .. } => format!("the {} cubin of `{module}`", arch::name(*arch)),
            Image::Ptx { arch, .. } => format!("the {} PTX of `{module}` (JIT)", arch::name(*arch)),
        }
    }

    /// The target the image was built for.
    pub(crate) fn arch(&self) -> u32 {
        match self {
            Image::Cubin { arch, .. } | Image::Ptx { arch, .. } => *arch,
        }
    }
}

/// The images to try for a device of compute capability `device`, best
/// first, each one that [`arch::runs_on`] the device: the cubins built for
/// exactly its compute capability (the arch-specific one first: on a 9.0
/// device sm_90a's, whose wgmma and TMA code is the fast one, then sm_90's),
/// else the newest cubin of the same major version below it (binary
/// compatible); then the PTX for the driver to JIT, the arch-specific one
/// first and then the newest plain one not above the device. An sm_90a
/// image is never offered to any device but a 9.0 one.
pub(crate) fn images_for(source: &KernelSource, device: u32) -> Vec<Image> {
    // Arch-specific before plain, then newest first.
    fn best_first(a: u32) -> (bool, u32) {
        (
            !arch::is_arch_specific(a),
            u32::MAX - arch::compute_capability(a),
        )
    }
    let mut cubins: Vec<(u32, &'static [u8])> = source
        .cubins
        .iter()
        .copied()
        .filter(|&(a, _)| arch::runs_on(a, device, true))
        .collect();
    cubins.sort_by_key(|&(a, _)| best_first(a));
    let (exact, lower): (Vec<_>, Vec<_>) = cubins
        .into_iter()
        .partition(|&(a, _)| arch::compute_capability(a) == device);
    let mut out: Vec<Image> = exact
        .into_iter()
        .chain(lower.into_iter().take(1))
        .map(|(arch, bytes)| Image::Cubin { arch, bytes })
        .collect();
    let mut ptx: Vec<(u32, &'static str)> = source
        .ptx
        .iter()
        .copied()
        .filter(|&(a, _)| arch::runs_on(a, device, false))
        .collect();
    ptx.sort_by_key(|&(a, _)| best_first(a));
    if let Some(&(arch, text)) = ptx.iter().find(|(a, _)| arch::is_arch_specific(*a)) {
        out.push(Image::Ptx { arch, text });
    }
    if let Some(&(arch, text)) = ptx.iter().find(|(a, _)| !arch::is_arch_specific(*a)) {
        out.push(Image::Ptx { arch, text });
    }
    out
}

fn describe(e: DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name}: {}", s.to_string_lossy()),
        Err(_) => name,
    }
}

fn driver(call: &'static str) -> impl Fn(DriverError) -> DeviceError {
    move |e| DeviceError::Driver {
        call,
        message: describe(e),
    }
}

/// Errors a kernel raises on the device, which the driver reports at a
/// later call and which leave the context unusable (sticky).
fn is_device_fault(e: &DriverError) -> bool {
    use sys::CUresult::*;
    matches!(
        e.0,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_LAUNCH_FAILED
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ASSERT
    )
}

/// How many launches since the last synchronization an error lists.
const IN_FLIGHT_KEPT: usize = 16;

/// The launches queued since the device last finished all its work: the
/// candidates for an asynchronous fault.
struct InFlight {
    /// Room for `IN_FLIGHT_KEPT` from the start and kept when cleared, so
    /// that a launch never grows it.
    launches: std::collections::VecDeque<InFlightLaunch>,
    /// Launches beyond `IN_FLIGHT_KEPT` (the oldest are forgotten).
    dropped: usize,
}

impl Default for InFlight {
    fn default() -> InFlight {
        InFlight {
            launches: std::collections::VecDeque::with_capacity(IN_FLIGHT_KEPT),
            dropped: 0,
        }
    }
}

/// One launch in flight, kept without formatting it (a launch allocates
/// nothing for this list); a fault's message formats it.
struct InFlightLaunch {
    kernel: &'static str,
    module: &'static str,
    entry: Arc<str>,
    grid: [u32; 3],
    block: [u32; 3],
}

/// The context made current on this thread for the life of the guard, and
/// the thread's previous current context restored when it drops
/// (`cuCtxPushCurrent`/`cuCtxPopCurrent`), so that code sharing the thread
/// — another library, or cudarc used directly — keeps its own context.
struct Bound {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for Bound {
    fn drop(&mut self) {
        let mut previous = std::ptr::null_mut();
        unsafe {
            let _ = sys::cuCtxPopCurrent_v2(&mut previous);
        }
    }
}

/// A kernel's module in this context: loaded once, under a lock that only
/// launches of the same kernel wait on; its functions resolved on demand.
#[derive(Default)]
struct ModuleSlot {
    module: Mutex<Option<sys::CUmodule>>,
    /// Each entry's function, and its name shared with the in-flight list.
    functions: Mutex<HashMap<String, (sys::CUfunction, Arc<str>)>>,
    /// What loaded ([`crate::LoadedImage`]), once it has.
    loaded: Mutex<Option<crate::LoadedImage>>,
}

/// What the device reports about itself, read before any context exists.
struct DeviceInfo {
    name: String,
    arch: u32,
    limits: Limits,
    driver_version: i32,
}

pub(crate) struct CudaBackend {
    /// The context as cudarc holds it: the device's primary context
    /// (`Device::cuda`) or the program's own (`Device::from_cudarc`).
    /// Streams, events and foreign memory are cudarc's types over it.
    /// `None` only while dropping.
    cudarc: Option<Arc<CudaContext>>,
    ctx: sys::CUcontext,
    name: String,
    arch: u32,
    limits: Limits,
    driver_version: i32,
    /// `PHOBOS_SYNC=1`: wait for every launch, so that a fault is reported
    /// by the launch that caused it.
    sync_each_launch: bool,
    /// Loaded modules by kernel identity (module, name, content hash).
    modules: Mutex<HashMap<KernelId, Arc<ModuleSlot>>>,
    in_flight: Mutex<InFlight>,
    /// A stream other than the default one exists (`Device::new_stream`,
    /// `wrap_stream`): the synchronous copies, which run on the default
    /// stream and so do not wait for non-blocking streams, wait for the
    /// whole device first, as `Tensor::to_vec` promises.
    pub(crate) other_streams: std::sync::atomic::AtomicBool,
    /// Streams capturing now: the device cannot be synchronized meanwhile.
    pub(crate) capturing: std::sync::atomic::AtomicUsize,
}

// The driver API is thread-safe; the raw handles are only used with the
// context made current on the calling thread first.
unsafe impl Send for CudaBackend {}
unsafe impl Sync for CudaBackend {}
unsafe impl Send for ModuleSlot {}
unsafe impl Sync for ModuleSlot {}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `PHOBOS_SYNC=1` (any value but empty and `0`).
fn sync_requested() -> bool {
    std::env::var_os("PHOBOS_SYNC").is_some_and(|v| !v.is_empty() && v != "0")
}

impl CudaBackend {
    pub(crate) fn open(ordinal: usize) -> Result<CudaBackend, DeviceError> {
        if !driver_present() {
            return Err(DeviceError::NoDriver);
        }
        result::init().map_err(driver("cuInit"))?;
        let count = result::device::get_count().map_err(driver("cuDeviceGetCount"))?;
        let ordinal_i32 = i32::try_from(ordinal).unwrap_or(i32::MAX);
        if ordinal_i32 >= count {
            return Err(DeviceError::Driver {
                call: "cuDeviceGet",
                message: format!("GPU {ordinal} requested, {count} present"),
            });
        }
        let device = result::device::get(ordinal_i32).map_err(driver("cuDeviceGet"))?;
        // Every query needs only the device, so it happens before the
        // primary context is retained: a failure leaves nothing to release.
        let info = Self::query(device)?;
        if info.arch < 75 {
            return Err(DeviceError::UnsupportedArch {
                name: info.name,
                arch: info.arch,
            });
        }
        // cudarc's context retains the primary context and makes it
        // current on this thread; the caller's current context is put back.
        let previous = current_context();
        let cudarc = CudaContext::new(ordinal).map_err(driver("cuDevicePrimaryCtxRetain"));
        restore_context(previous);
        Ok(Self::with_context(cudarc?, info))
    }

    /// The backend over a context the program made with cudarc.
    pub(crate) fn from_cudarc(cudarc: Arc<CudaContext>) -> Result<CudaBackend, DeviceError> {
        let info = Self::query(cudarc.cu_device())?;
        if info.arch < 75 {
            return Err(DeviceError::UnsupportedArch {
                name: info.name,
                arch: info.arch,
            });
        }
        Ok(Self::with_context(cudarc, info))
    }

    fn with_context(cudarc: Arc<CudaContext>, info: DeviceInfo) -> CudaBackend {
        CudaBackend {
            ctx: cudarc.cu_ctx(),
            cudarc: Some(cudarc),
            name: info.name,
            arch: info.arch,
            limits: info.limits,
            driver_version: info.driver_version,
            sync_each_launch: sync_requested(),
            modules: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(InFlight::default()),
            other_streams: std::sync::atomic::AtomicBool::new(false),
            capturing: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Before a synchronous copy on the default stream: once other
    /// streams exist, wait for the whole device (unless a stream is
    /// capturing, which a context synchronization would break), so that a
    /// copy never races a launch on another stream.
    fn settle_other_streams(&self) -> Result<(), DeviceError> {
        use std::sync::atomic::Ordering;
        if self.other_streams.load(Ordering::Relaxed) && self.capturing.load(Ordering::Relaxed) == 0
        {
            result::ctx::synchronize().map_err(self.failed("cuCtxSynchronize"))?;
        }
        Ok(())
    }

    /// The context as cudarc holds it.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        self.cudarc
            .as_ref()
            .expect("the context is only taken while dropping")
    }

    /// The raw context handle, which identifies the context.
    pub(crate) fn raw_context(&self) -> usize {
        self.ctx as usize
    }

    /// Runs `f` (a cudarc call, which makes the context current with
    /// `cuCtxSetCurrent`) with the caller's current context put back after.
    pub(crate) fn bound<R>(&self, f: impl FnOnce() -> R) -> Result<R, DeviceError> {
        let _bound = self.bind()?;
        Ok(f())
    }

    fn query(device: sys::CUdevice) -> Result<DeviceInfo, DeviceError> {
        let attr = |a: sys::CUdevice_attribute| -> Result<u32, DeviceError> {
            let v = unsafe { result::device::get_attribute(device, a) }
                .map_err(driver("cuDeviceGetAttribute"))?;
            Ok(u32::try_from(v).unwrap_or(0))
        };
        use sys::CUdevice_attribute::*;
        let arch = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? * 10
            + attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let limits = Limits {
            max_threads_per_block: attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_grid: [
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            // With the opt-in a launch makes for a variant above 48 KB
            // (`cuFuncSetAttribute` in `function`).
            max_shared_bytes_per_block: attr(
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
        };
        let name = result::device::get_name(device).map_err(driver("cuDeviceGetName"))?;
        let mut driver_version = 0;
        unsafe { sys::cuDriverGetVersion(&mut driver_version) }
            .result()
            .map_err(driver("cuDriverGetVersion"))?;
        Ok(DeviceInfo {
            name,
            arch,
            limits,
            driver_version,
        })
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }
    pub(crate) fn arch(&self) -> u32 {
        self.arch
    }
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }
    pub(crate) fn driver_version(&self) -> i32 {
        self.driver_version
    }

    /// Makes the device's context current until the guard drops.
    fn bind(&self) -> Result<Bound, DeviceError> {
        unsafe { sys::cuCtxPushCurrent_v2(self.ctx) }
            .result()
            .map_err(driver("cuCtxPushCurrent"))?;
        Ok(Bound {
            _not_send: std::marker::PhantomData,
        })
    }

    /// The error for a failed driver call: a device fault names the
    /// launches that may have caused it.
    fn failed(&self, call: &'static str) -> impl Fn(DriverError) -> DeviceError + '_ {
        move |e| {
            if is_device_fault(&e) {
                DeviceError::Fault {
                    call,
                    message: describe(e),
                    launches: self.fault_candidates(),
                }
            } else {
                driver(call)(e)
            }
        }
    }

    fn fault_candidates(&self) -> Vec<String> {
        let f = lock(&self.in_flight);
        let mut out: Vec<String> = f
            .launches
            .iter()
            .map(|l| {
                format!(
                    "kernel `{}` (module `{}`, {}), entry `{}`, grid {:?}, block {:?}",
                    l.kernel,
                    l.module,
                    arch::name(self.arch),
                    l.entry,
                    l.grid,
                    l.block
                )
            })
            .collect();
        if f.dropped > 0 {
            out.insert(0, format!("... {} earlier launches", f.dropped));
        }
        out
    }

    /// The device finished all work without a fault: nothing is in flight.
    fn settled(&self) {
        let mut f = lock(&self.in_flight);
        f.launches.clear();
        f.dropped = 0;
    }

    pub(crate) fn alloc(&self, bytes: usize) -> Result<u64, DeviceError> {
        let _bound = self.bind()?;
        // The driver refuses empty allocations; an empty tensor still gets a
        // distinct, aligned address.
        unsafe { result::malloc_sync(bytes.max(256)) }.map_err(self.failed("cuMemAlloc"))
    }

    pub(crate) fn free(&self, addr: u64) {
        if let Ok(_bound) = self.bind() {
            unsafe {
                let _ = result::free_sync(addr);
            }
        }
    }

    pub(crate) fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), DeviceError> {
        if bytes.is_empty() {
            return Ok(());
        }
        let _bound = self.bind()?;
        self.settle_other_streams()?;
        unsafe { result::memcpy_htod_sync(addr, bytes) }.map_err(self.failed("cuMemcpyHtoD"))
    }

    /// Sets `len` bytes at `addr` to `value` on the device (no host buffer).
    pub(crate) fn memset(&self, addr: u64, value: u8, len: usize) -> Result<(), DeviceError> {
        if len == 0 {
            return Ok(());
        }
        let _bound = self.bind()?;
        self.settle_other_streams()?;
        unsafe { result::memset_d8_sync(addr, value, len) }.map_err(self.failed("cuMemsetD8"))
    }

    pub(crate) fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, DeviceError> {
        let mut out = vec![0u8; len];
        if len == 0 {
            return Ok(out);
        }
        let _bound = self.bind()?;
        self.settle_other_streams()?;
        unsafe { result::memcpy_dtoh_sync(&mut out, addr) }.map_err(self.failed("cuMemcpyDtoH"))?;
        // A device-to-host copy on the default stream waits for every
        // earlier launch.
        self.settled();
        Ok(out)
    }

    pub(crate) fn copy(&self, dst: u64, src: u64, len: usize) -> Result<(), DeviceError> {
        if len == 0 {
            return Ok(());
        }
        let _bound = self.bind()?;
        self.settle_other_streams()?;
        unsafe { result::memcpy_dtod_sync(dst, src, len) }.map_err(self.failed("cuMemcpyDtoD"))
    }

    pub(crate) fn synchronize(&self) -> Result<(), DeviceError> {
        let _bound = self.bind()?;
        result::ctx::synchronize().map_err(self.failed("cuCtxSynchronize"))?;
        self.settled();
        Ok(())
    }

    /// The kernel's slot, created on first use; the map is locked only for
    /// the lookup, so other kernels load and launch meanwhile.
    fn slot(&self, id: &KernelId) -> Arc<ModuleSlot> {
        let mut modules = lock(&self.modules);
        Arc::clone(modules.entry(id.clone()).or_default())
    }

    /// The target of the image the driver loaded for the kernel, loading
    /// it first if no launch has: the image whose variants a launch binds
    /// (`KernelMeta::variants_for`).
    pub(crate) fn image_arch(
        &self,
        site: &Site,
        id: &KernelId,
        source: &KernelSource,
    ) -> Result<u32, LaunchError> {
        let slot = self.slot(id);
        self.module(site, source, &slot)?;
        let loaded = lock(&slot.loaded);
        Ok(loaded.as_ref().map_or(self.arch, |l| l.arch))
    }

    /// The kernel's module, loaded on first use in this context.
    fn module(
        &self,
        site: &Site,
        source: &KernelSource,
        slot: &ModuleSlot,
    ) -> Result<sys::CUmodule, LaunchError> {
        let mut module = lock(&slot.module);
        if let Some(m) = *module {
            return Ok(m);
        }
        let images = images_for(source, self.arch);
        let mut failure = LaunchError::ModuleLoad {
            site: Box::new(site.clone()),
            artifact: format!("`{}`", source.module),
            message: format!(
                "the build holds no cubin or PTX usable on {} (its PTX targets [{}]); \
                 add the architecture to PHOBOS_ARCHES and rebuild",
                arch::name(self.arch),
                source
                    .ptx
                    .iter()
                    .map(|(a, _)| arch::name(*a))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            log: String::new(),
        };
        let mut refused = Vec::new();
        for image in images {
            match self.load_image(&image) {
                Ok((m, jit_log)) => {
                    *module = Some(m);
                    let (kind, arch) = match image {
                        Image::Cubin { .. } => ("cubin", image.arch()),
                        Image::Ptx { .. } => ("ptx", image.arch()),
                    };
                    *lock(&slot.loaded) = Some(crate::LoadedImage {
                        kernel: source.name.to_string(),
                        module: source.module.to_string(),
                        kind,
                        arch,
                        jit_log: if kind == "ptx" {
                            jit_log
                        } else {
                            String::new()
                        },
                        refused,
                        entries: Vec::new(),
                    });
                    return Ok(m);
                }
                Err((message, log)) => {
                    refused.push(format!("{}: {message}", image.label(source.module)));
                    failure = LaunchError::ModuleLoad {
                        site: Box::new(site.clone()),
                        artifact: image.label(source.module),
                        message,
                        log,
                    };
                }
            }
        }
        Err(failure)
    }

    /// `cuModuleLoadDataEx` with the JIT's error and info logs captured:
    /// the module and the info log, or the error and both logs.
    fn load_image(&self, image: &Image) -> Result<(sys::CUmodule, String), (String, String)> {
        let _bound = self.bind().map_err(|e| (e.to_string(), String::new()))?;
        let ptx_text;
        let data: *const c_void = match image {
            Image::Cubin { bytes, .. } => bytes.as_ptr().cast(),
            Image::Ptx { text, .. } => {
                ptx_text = CString::new(*text)
                    .map_err(|_| ("the PTX holds a NUL byte".to_string(), String::new()))?;
                ptx_text.as_ptr().cast()
            }
        };
        const LOG: usize = 16 * 1024;
        let mut error_log = vec![0u8; LOG];
        let mut info_log = vec![0u8; LOG];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut c_void; 4] = [
            error_log.as_mut_ptr().cast(),
            LOG as *mut c_void,
            info_log.as_mut_ptr().cast(),
            LOG as *mut c_void,
        ];
        let mut module = std::mem::MaybeUninit::uninit();
        let status = unsafe {
            sys::cuModuleLoadDataEx(
                module.as_mut_ptr(),
                data,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        let text = |buf: &[u8]| {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).into_owned()
        };
        match status.result() {
            Ok(()) => Ok((unsafe { module.assume_init() }, text(&info_log))),
            Err(e) => {
                let log = [text(&error_log), text(&info_log)]
                    .into_iter()
                    .filter(|s| !s.trim().is_empty())
                    .collect::<Vec<_>>()
                    .join("\n");
                Err((describe(e), log))
            }
        }
    }

    fn function(&self, call: &EntryCall<'_>) -> Result<(sys::CUfunction, Arc<str>), LaunchError> {
        let backend = |message: String| LaunchError::Backend {
            site: Box::new(call.site.clone()),
            message,
        };
        let slot = self.slot(call.id);
        let module = self.module(call.site, call.source, &slot)?;
        let mut functions = lock(&slot.functions);
        if let Some((f, name)) = functions.get(call.entry) {
            return Ok((*f, Arc::clone(name)));
        }
        let name = CString::new(call.entry)
            .map_err(|_| backend(format!("bad entry name {:?}", call.entry)))?;
        let _bound = self.bind().map_err(|e| backend(e.to_string()))?;
        let f = unsafe { result::module::get_function(module, name) }
            .map_err(|e| backend(format!("entry `{}`: {}", call.entry, describe(e))))?;
        // A variant above 48 KB of shared memory declares it `.extern` and
        // must opt in to the size it passes at launch.
        let dynamic = call.variant.dynamic_shared_bytes();
        if dynamic > 0 {
            let attribute =
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
            let value = i32::try_from(dynamic).unwrap_or(i32::MAX);
            unsafe { result::function::set_function_attribute(f, attribute, value) }.map_err(
                |e| {
                    backend(format!(
                        "entry `{}`: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, {dynamic}): {}",
                        call.entry,
                        describe(e)
                    ))
                },
            )?;
        }
        let entry_name: Arc<str> = Arc::from(call.entry);
        functions.insert(call.entry.to_string(), (f, Arc::clone(&entry_name)));
        // Occupancy, once per entry: the driver's own numbers (a driver
        // that lacks one leaves it `None`).
        let attribute = |a| unsafe { result::function::get_function_attribute(f, a) }.ok();
        let threads = call.block.iter().product::<u32>();
        let occupancy = crate::EntryOccupancy {
            entry: call.entry.to_string(),
            threads,
            registers: attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS),
            static_shared_bytes: attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            ),
            dynamic_shared_bytes: dynamic,
            ctas_per_sm: unsafe {
                result::occupancy::max_active_block_per_multiprocessor(
                    f,
                    i32::try_from(threads).unwrap_or(i32::MAX),
                    dynamic as usize,
                )
            }
            .ok(),
        };
        if let Some(loaded) = lock(&slot.loaded).as_mut() {
            loaded.entries.push(occupancy);
        }
        Ok((f, entry_name))
    }

    /// [`crate::Device::loaded_images`].
    pub(crate) fn loaded_images(&self) -> Vec<crate::LoadedImage> {
        let slots: Vec<Arc<ModuleSlot>> = lock(&self.modules).values().cloned().collect();
        let mut out: Vec<crate::LoadedImage> = slots
            .iter()
            .filter_map(|s| lock(&s.loaded).clone())
            .collect();
        out.sort_by(|a, b| (&a.module, &a.kernel).cmp(&(&b.module, &b.kernel)));
        out
    }

    /// The error for a launch the device faulted on (or refused because an
    /// earlier one faulted).
    fn launch_fault(&self, call: &EntryCall<'_>, e: DriverError, waited: bool) -> LaunchError {
        let candidates = self.fault_candidates();
        let cause = if waited {
            "the kernel faulted (PHOBOS_SYNC=1 waited for it)".to_string()
        } else {
            format!(
                "the device faulted in an earlier launch: {}",
                crate::error::candidates_text(&candidates)
            )
        };
        LaunchError::Fault {
            site: Box::new(call.site.clone()),
            message: format!("{}; {cause}", describe(e)),
        }
    }

    /// A tensor map as the driver encodes it (`cuTensorMapEncodeTiled`):
    /// `spec`'s element type, box and swizzle over `layout` (checked
    /// against TMA's rules by `TensorMapSpec::layout`), element strides 1,
    /// no interleave, L2 promotion 128B, out-of-bounds elements zeros.
    /// Host-only: the driver touches neither the device nor the memory.
    /// A refusal is the driver's message (the rules it checks beyond the
    /// layout's are the metadata's, checked at binding).
    pub(crate) fn encode_tensor_map(
        spec: &phobos_meta::binding::TensorMapSpec,
        layout: &phobos_meta::binding::TensorMapLayout,
    ) -> Result<[u8; phobos_meta::binding::TENSOR_MAP_BYTES], String> {
        use sys::{
            CUtensorMapDataType as T, CUtensorMapFloatOOBfill as Oob, CUtensorMapInterleave as Il,
            CUtensorMapL2promotion as L2, CUtensorMapSwizzle as Sw,
        };
        let data_type = match spec.data_type() {
            0 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            1 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            2 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            3 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
            4 => T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
            5 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
            6 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            7 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            8 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
            _ => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        };
        let swizzle = match spec.swizzle_code() {
            1 => Sw::CU_TENSOR_MAP_SWIZZLE_32B,
            2 => Sw::CU_TENSOR_MAP_SWIZZLE_64B,
            3 => Sw::CU_TENSOR_MAP_SWIZZLE_128B,
            _ => Sw::CU_TENSOR_MAP_SWIZZLE_NONE,
        };
        const _: () = assert!(
            phobos_meta::binding::TensorMapSpec::L2_PROMOTION
                == L2::CU_TENSOR_MAP_L2_PROMOTION_L2_128B as u32
        );
        let element_strides = [1u32; phobos_meta::binding::TENSOR_MAP_MAX_RANK];
        // 64-byte aligned, as the driver requires of the map it writes.
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        let r = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data_type,
                u32::from(spec.rank),
                layout.address as *mut c_void,
                layout.dims.as_ptr(),
                layout.strides.as_ptr(),
                spec.box_dims.as_ptr(),
                element_strides.as_ptr(),
                Il::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                L2::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                Oob::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        r.result()
            .map_err(|e| format!("cuTensorMapEncodeTiled failed: {}", describe(e)))?;
        let mut bytes = [0u8; phobos_meta::binding::TENSOR_MAP_BYTES];
        for (chunk, word) in bytes.chunks_exact_mut(8).zip(map.opaque) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Ok(bytes)
    }

    pub(crate) fn launch(&self, call: &EntryCall<'_>) -> Result<(), LaunchError> {
        if self.sync_each_launch && call.capturing {
            return Err(LaunchError::Capture {
                site: Box::new(call.site.clone()),
                message: "PHOBOS_SYNC=1 waits for each launch, and a captured launch does \
                          not run until the graph does; unset it to capture"
                    .to_string(),
            });
        }
        let function = self.function(call)?;
        self.launch_function(call, &function)
    }

    fn launch_function(
        &self,
        call: &EntryCall<'_>,
        (function, entry): &(sys::CUfunction, Arc<str>),
    ) -> Result<(), LaunchError> {
        let function = *function;
        let backend = |message: String| LaunchError::Backend {
            site: Box::new(call.site.clone()),
            message,
        };
        let _bound = self.bind().map_err(|e| backend(e.to_string()))?;
        // Each parameter in its own 8-byte aligned slot; the driver copies
        // as many bytes as the entry declares. The launcher passes tensors
        // as addresses, never as a simulator buffer (which has no bytes).
        // On the stack up to `STACK_PARAMS` parameters: a launch allocates
        // nothing for them.
        const STACK_PARAMS: usize = 32;
        let slot = |a: &phobos_sim::KernelArg| {
            use phobos_sim::KernelArg as K;
            // Zero-extended little-endian bits: the driver copies the
            // parameter's own size from the front of the slot.
            match a {
                K::U8(v) => u64::from(*v),
                K::I8(v) => u64::from(*v as u8),
                K::U16(v) | K::Bits16(v) => u64::from(*v),
                K::I16(v) => u64::from(*v as u16),
                K::U32(v) => u64::from(*v),
                K::I32(v) => u64::from(*v as u32),
                K::F32(v) => u64::from(v.to_bits()),
                K::U64(v) => *v,
                K::I64(v) => *v as u64,
                K::F64(v) => v.to_bits(),
                // Passed from its own bytes (`pointer` below).
                K::TensorMap(_) => 0,
                // Up to 8 bytes in the slot, without `le_bytes`'s copy (a
                // longer one, a tensor map, is passed from its own bytes).
                K::Bytes(b) => {
                    let mut raw = [0u8; 8];
                    let n = b.len().min(8);
                    raw[..n].copy_from_slice(&b[..n]);
                    u64::from_le_bytes(raw)
                }
                other => {
                    let mut raw = [0u8; 8];
                    let bytes = other.le_bytes().unwrap_or_default();
                    raw[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
                    u64::from_le_bytes(raw)
                }
            }
        };
        let n = call.args.len();
        let (mut stack_slots, mut heap_slots);
        let slots: &mut [u64] = if n <= STACK_PARAMS {
            stack_slots = [0u64; STACK_PARAMS];
            for (s, a) in stack_slots.iter_mut().zip(call.args) {
                *s = slot(a);
            }
            &mut stack_slots[..n]
        } else {
            heap_slots = call.args.iter().map(slot).collect::<Vec<u64>>();
            &mut heap_slots[..]
        };
        // A parameter wider than a slot (a 128-byte tensor map, inline in
        // its `KernelArg`) is passed from its own bytes, which `call.args`
        // holds for the launch; the driver copies them into the entry's
        // 64-byte aligned `.param`.
        let pointer = |(s, a): (&mut u64, &phobos_sim::KernelArg)| match a {
            phobos_sim::KernelArg::Bytes(b) if b.len() > 8 => {
                b.as_ptr().cast_mut().cast::<c_void>()
            }
            phobos_sim::KernelArg::TensorMap(b) => b.as_ptr().cast_mut().cast::<c_void>(),
            _ => (s as *mut u64).cast::<c_void>(),
        };
        let (mut stack_params, mut heap_params);
        let params: &mut [*mut c_void] = if n <= STACK_PARAMS {
            stack_params = [std::ptr::null_mut::<c_void>(); STACK_PARAMS];
            for (p, s) in stack_params
                .iter_mut()
                .zip(slots.iter_mut().zip(call.args).map(pointer))
            {
                *p = s;
            }
            &mut stack_params[..n]
        } else {
            heap_params = slots
                .iter_mut()
                .zip(call.args)
                .map(pointer)
                .collect::<Vec<_>>();
            &mut heap_params[..]
        };
        let [gx, gy, gz] = call.grid;
        let [bx, by, bz] = call.block;
        let launched = unsafe {
            result::launch_kernel(
                function,
                (gx, gy, gz),
                (bx, by, bz),
                call.variant.dynamic_shared_bytes(),
                call.cu_stream as sys::CUstream,
                params,
            )
        };
        match launched {
            Err(e) if is_device_fault(&e) => return Err(self.launch_fault(call, e, false)),
            Err(e) => return Err(backend(describe(e))),
            Ok(()) => {}
        }
        {
            let mut f = lock(&self.in_flight);
            if f.launches.len() == IN_FLIGHT_KEPT {
                f.launches.pop_front();
                f.dropped += 1;
            }
            f.launches.push_back(InFlightLaunch {
                kernel: call.source.name,
                module: call.source.module,
                entry: Arc::clone(entry),
                grid: call.grid,
                block: call.block,
            });
        }
        if self.sync_each_launch {
            match result::ctx::synchronize() {
                Ok(()) => self.settled(),
                Err(e) if is_device_fault(&e) => {
                    let err = self.launch_fault(call, e, true);
                    return Err(err);
                }
                Err(e) => return Err(backend(describe(e))),
            }
        }
        Ok(())
    }

    /// Times one launch configuration with events on the launch's stream
    /// (the default stream): `warmups` untimed launches, then `runs` timed
    /// ones; returns the median in milliseconds.
    pub(crate) fn time(
        &self,
        call: &EntryCall<'_>,
        warmups: usize,
        runs: usize,
    ) -> Result<f32, LaunchError> {
        let backend = |message: String| LaunchError::Backend {
            site: Box::new(call.site.clone()),
            message,
        };
        let function = self.function(call)?;
        for _ in 0..warmups {
            self.launch_function(call, &function)?;
        }
        let _bound = self.bind().map_err(|e| backend(e.to_string()))?;
        let flags = sys::CUevent_flags::CU_EVENT_DEFAULT;
        let start = result::event::create(flags).map_err(|e| backend(describe(e)))?;
        let end = match result::event::create(flags) {
            Ok(e) => e,
            Err(e) => {
                unsafe {
                    let _ = result::event::destroy(start);
                }
                return Err(backend(describe(e)));
            }
        };
        let timed = (|| {
            let mut times = Vec::with_capacity(runs);
            for _ in 0..runs.max(1) {
                let null = std::ptr::null_mut();
                unsafe { result::event::record(start, null) }.map_err(|e| backend(describe(e)))?;
                self.launch_function(call, &function)?;
                unsafe { result::event::record(end, null) }.map_err(|e| backend(describe(e)))?;
                unsafe { result::event::synchronize(end) }
                    .map_err(|e| self.launch_fault(call, e, false))?;
                self.settled();
                times.push(
                    unsafe { result::event::elapsed(start, end) }
                        .map_err(|e| backend(describe(e)))?,
                );
            }
            times.sort_by(f32::total_cmp);
            Ok(times[times.len() / 2])
        })();
        unsafe {
            let _ = result::event::destroy(start);
            let _ = result::event::destroy(end);
        }
        timed
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        if let Ok(_bound) = self.bind() {
            let modules = self
                .modules
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            for slot in modules.values() {
                if let Some(m) = *lock(&slot.module) {
                    unsafe {
                        let _ = result::module::unload(m);
                    }
                }
            }
        }
        // cudarc's drop makes the context current before releasing it.
        let previous = current_context();
        drop(self.cudarc.take());
        restore_context(previous);
    }
}

/// Whether libcuda can be used. Loaded at run time (the `dynamic-loading`
/// feature), every cudarc call would panic without it, so it is asked
/// first; linked (candle's `dynamic-linking`), the program would not have
/// started without it.
fn driver_present() -> bool {
    #[cfg(feature = "dynamic-loading")]
    {
        unsafe { sys::is_culib_present() }
    }
    #[cfg(not(feature = "dynamic-loading"))]
    {
        true
    }
}

/// The calling thread's current context (null when none).
fn current_context() -> sys::CUcontext {
    let mut c = std::ptr::null_mut();
    unsafe {
        let _ = sys::cuCtxGetCurrent(&mut c);
    }
    c
}

/// Makes `previous` ([`current_context`]) current again.
fn restore_context(previous: sys::CUcontext) {
    unsafe {
        let _ = sys::cuCtxSetCurrent(previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SOURCE: KernelSource = KernelSource {
        name: "k",
        module: "k.pho",
        meta: "",
        ptx: &[(75, "ptx75"), (80, "ptx80"), (90, "ptx90")],
        cubins: &[(75, b"c75"), (80, b"c80"), (86, b"c86"), (90, b"c90")],
    };

    fn archs(images: &[Image]) -> Vec<String> {
        images
            .iter()
            .map(|i| match i {
                Image::Cubin { arch, .. } => format!("cubin{}", &arch::name(*arch)[3..]),
                Image::Ptx { arch, .. } => format!("ptx{}", &arch::name(*arch)[3..]),
            })
            .collect()
    }

    /// Every target's cubin and PTX, as a default build embeds them.
    static EVERY_TARGET: KernelSource = KernelSource {
        name: "k",
        module: "k.pho",
        meta: "",
        ptx: &[
            (75, "ptx75"),
            (80, "ptx80"),
            (86, "ptx86"),
            (89, "ptx89"),
            (90, "ptx90"),
            (arch::SM_90A, "ptx90a"),
            (100, "ptx100"),
            (120, "ptx120"),
        ],
        cubins: &[
            (75, b"c75"),
            (80, b"c80"),
            (86, b"c86"),
            (89, b"c89"),
            (90, b"c90"),
            (arch::SM_90A, b"c90a"),
            (100, b"c100"),
            (120, b"c120"),
        ],
    };

    #[test]
    fn a_9_0_device_takes_sm_90a_first_and_no_other_device_takes_it() {
        assert_eq!(
            archs(&images_for(&EVERY_TARGET, 90)),
            ["cubin90a", "cubin90", "ptx90a", "ptx90"]
        );
        assert_eq!(archs(&images_for(&EVERY_TARGET, 80)), ["cubin80", "ptx80"]);
        assert_eq!(
            archs(&images_for(&EVERY_TARGET, 89)),
            ["cubin89", "cubin86", "ptx89"]
        );
        assert_eq!(
            archs(&images_for(&EVERY_TARGET, 100)),
            ["cubin100", "ptx100"]
        );
        // A device newer than every target JITs the newest plain PTX, never
        // sm_90a's (not forward compatible).
        assert_eq!(
            archs(&images_for(&EVERY_TARGET, 103)),
            ["cubin100", "ptx100"]
        );
        // sm_90a alone: a 9.0 device runs it; no other device can.
        static ONLY_90A: KernelSource = KernelSource {
            name: "k",
            module: "k.pho",
            meta: "",
            ptx: &[(arch::SM_90A, "ptx90a")],
            cubins: &[(arch::SM_90A, b"c90a")],
        };
        assert_eq!(archs(&images_for(&ONLY_90A, 90)), ["cubin90a", "ptx90a"]);
        for device in [80, 89, 100, 120] {
            assert!(images_for(&ONLY_90A, device).is_empty(), "{device}");
        }
        assert_eq!(
            Image::Cubin {
                arch: arch::SM_90A,
                bytes: b""
            }
            .label("k.pho"),
            "the sm_90a cubin of `k.pho`"
        );
    }

    #[test]
    fn the_matching_cubin_comes_first_then_compatible_ones_then_ptx() {
        assert_eq!(
            archs(&images_for(&SOURCE, 86)),
            ["cubin86", "cubin80", "ptx80"]
        );
        assert_eq!(archs(&images_for(&SOURCE, 89)), ["cubin86", "ptx80"]);
        assert_eq!(archs(&images_for(&SOURCE, 90)), ["cubin90", "ptx90"]);
        // A newer GPU than any build target: the newest PTX, JIT-compiled.
        assert_eq!(archs(&images_for(&SOURCE, 120)), ["ptx90"]);
        assert_eq!(archs(&images_for(&SOURCE, 70)), Vec::<String>::new());
        assert_eq!(
            Image::Ptx { arch: 80, text: "" }.label("k.pho"),
            "the sm_80 PTX of `k.pho` (JIT)"
        );
    }
}
