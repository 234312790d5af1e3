//! `Device`: one handle over the two backends, an NVIDIA GPU through the CUDA
//! driver (`cuda.rs`) and the CPU simulator (`sim.rs`). Owns backend choice
//! (`Device::auto`, `PHOBOS_BACKEND`), allocation and host transfers, and the
//! per-device caches (loaded modules live in the backends, autotune
//! decisions in `tuning.rs`). Launch checks live in `launch.rs`, not here.

use crate::call::{EntryCall, KernelId};
use crate::elem::Elem;
use crate::error::{DeviceError, LaunchError};
use crate::tuning::{TuneKey, Tuning};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Which backend a device runs kernels on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// An NVIDIA GPU, through the CUDA driver.
    Cuda,
    /// The CPU simulator, which runs the emitted PTX itself.
    Sim,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Sim => "sim",
        })
    }
}

/// Which image the driver loaded for one kernel, and how its entries run
/// ([`Device::loaded_images`]): what the GPU bundle records per kernel, so
/// that a run shows whether the cubin for the GPU's architecture loaded or
/// the driver fell back to the PTX.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedImage {
    pub kernel: String,
    /// The `.pho` file it came from.
    pub module: String,
    /// `cubin`, or `ptx` (JIT-compiled by the driver).
    pub kind: &'static str,
    /// The architecture the image was built for (`90` for sm_90).
    pub arch: u32,
    /// The driver's JIT info log for a PTX image (often empty).
    pub jit_log: String,
    /// The images tried first and refused, each with the driver's reason.
    pub refused: Vec<String>,
    /// Each entry launched so far.
    pub entries: Vec<EntryOccupancy>,
}

/// One entry's resources and occupancy, from the driver
/// (`cuFuncGetAttribute`, `cuOccupancyMaxActiveBlocksPerMultiprocessor`)
/// at its first launch; `None` where the driver does not say.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryOccupancy {
    pub entry: String,
    /// Threads per CTA.
    pub threads: u32,
    /// Registers per thread.
    pub registers: Option<i32>,
    /// Static shared memory per CTA.
    pub static_shared_bytes: Option<i32>,
    /// Dynamic shared memory per CTA, as launched.
    pub dynamic_shared_bytes: u32,
    /// CTAs that fit on one multiprocessor at once.
    pub ctas_per_sm: Option<i32>,
}

pub use crate::call::Limits;

pub(crate) enum Backend {
    Cuda(crate::cuda::CudaBackend),
    Sim(crate::sim::SimBackend),
}

pub(crate) struct DeviceInner {
    id: u64,
    pub(crate) backend: Backend,
    pub(crate) tuning: Tuning,
}

/// A device kernels run on: a GPU or the simulator. Cheap to clone; clones
/// share allocations, loaded modules and autotune decisions.
#[derive(Clone)]
pub struct Device {
    pub(crate) inner: Arc<DeviceInner>,
}

static NEXT_DEVICE_ID: AtomicU64 = AtomicU64::new(1);

impl Device {
    fn new(backend: Backend) -> Device {
        Device {
            inner: Arc::new(DeviceInner {
                id: NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed),
                backend,
                tuning: Tuning::new(crate::tuning::cache_path()),
            }),
        }
    }

    /// The device to run on: `PHOBOS_BACKEND=sim` or `=cuda` forces one
    /// backend (`cuda` fails when no GPU works); otherwise the first GPU
    /// when the CUDA driver finds one, else the simulator.
    pub fn auto() -> Result<Device, DeviceError> {
        match std::env::var("PHOBOS_BACKEND") {
            Ok(v) if v == "sim" => Ok(Device::sim()),
            Ok(v) if v == "cuda" => Device::cuda(0),
            Ok(v) if v.is_empty() || v == "auto" => {
                Ok(Device::cuda(0).unwrap_or_else(|_| Device::sim()))
            }
            Ok(v) => Err(DeviceError::BadBackendVariable(v)),
            Err(std::env::VarError::NotPresent) => {
                Ok(Device::cuda(0).unwrap_or_else(|_| Device::sim()))
            }
            Err(std::env::VarError::NotUnicode(v)) => Err(DeviceError::BadBackendVariable(
                v.to_string_lossy().into_owned(),
            )),
        }
    }

    /// The GPU with the given ordinal. Returns `DeviceError::NoDriver` on a
    /// machine without libcuda (it never panics for lack of a driver).
    pub fn cuda(ordinal: usize) -> Result<Device, DeviceError> {
        Ok(Device::new(Backend::Cuda(crate::cuda::CudaBackend::open(
            ordinal,
        )?)))
    }

    /// A device over a CUDA context the program already has (made with
    /// cudarc, this crate's version), so that Phobos launches, the
    /// program's own cudarc work and other libraries on that context share
    /// memory and streams: [`Device::wrap_stream`], [`Stream::borrow`].
    /// The context stays the program's; the device holds a reference.
    ///
    /// [`Stream::borrow`]: crate::Stream::borrow
    pub fn from_cudarc(ctx: Arc<cudarc::driver::CudaContext>) -> Result<Device, DeviceError> {
        Ok(Device::new(Backend::Cuda(
            crate::cuda::CudaBackend::from_cudarc(ctx)?,
        )))
    }

    /// The device's CUDA context as cudarc holds it (`None` on the
    /// simulator), for allocating or launching with cudarc on it.
    pub fn cudarc_context(&self) -> Option<Arc<cudarc::driver::CudaContext>> {
        match &self.inner.backend {
            Backend::Cuda(c) => Some(Arc::clone(c.context())),
            Backend::Sim(_) => None,
        }
    }

    /// The CUDA backend (`None` on the simulator).
    pub(crate) fn cuda_backend(&self) -> Option<&crate::cuda::CudaBackend> {
        match &self.inner.backend {
            Backend::Cuda(c) => Some(c),
            Backend::Sim(_) => None,
        }
    }

    /// The raw CUDA context handle (`None` on the simulator).
    pub(crate) fn raw_context(&self) -> Option<usize> {
        match &self.inner.backend {
            Backend::Cuda(c) => Some(c.raw_context()),
            Backend::Sim(_) => None,
        }
    }

    /// True when work on both devices can be ordered together: the same
    /// CUDA context (two `Device::cuda(0)` share the primary context), or
    /// the same simulator device.
    pub(crate) fn same_context(&self, other: &Device) -> bool {
        match (self.raw_context(), other.raw_context()) {
            (Some(a), Some(b)) => a == b,
            _ => self.same_as(other),
        }
    }

    /// The CPU simulator.
    pub fn sim() -> Device {
        Device::new(Backend::Sim(crate::sim::SimBackend::new()))
    }

    pub fn kind(&self) -> BackendKind {
        match &self.inner.backend {
            Backend::Cuda(_) => BackendKind::Cuda,
            Backend::Sim(_) => BackendKind::Sim,
        }
    }

    /// A human-readable name: the GPU's name and architecture, or `simulator`.
    pub fn name(&self) -> String {
        match &self.inner.backend {
            Backend::Cuda(c) => format!("{} ({})", c.name(), phobos_meta::arch::name(c.arch())),
            Backend::Sim(_) => "simulator".to_string(),
        }
    }

    /// The compute capability as a number (`86` for sm_86); `None` for the
    /// simulator, which runs any architecture's PTX.
    pub fn arch(&self) -> Option<u32> {
        match &self.inner.backend {
            Backend::Cuda(c) => Some(c.arch()),
            Backend::Sim(_) => None,
        }
    }

    /// `sm_86`, or `sim`: the architecture as error messages name it.
    pub fn arch_label(&self) -> String {
        match self.arch() {
            Some(a) => phobos_meta::arch::name(a),
            None => "sim".to_string(),
        }
    }

    pub fn limits(&self) -> Limits {
        match &self.inner.backend {
            Backend::Cuda(c) => c.limits(),
            Backend::Sim(_) => Limits::SM75,
        }
    }

    /// The limits a launch of `source` is bound against. The simulator
    /// runs the lowest architecture's PTX, so a kernel's shared memory may
    /// reach that target's limit (sm_80's 163 KB for a kernel built for
    /// sm_80 and up: [`crate::sim_launch::limits`]).
    pub(crate) fn launch_limits(&self, source: &crate::KernelSource) -> Limits {
        match &self.inner.backend {
            Backend::Cuda(c) => c.limits(),
            Backend::Sim(_) => match source.ptx.first() {
                Some(&(arch, _)) => crate::sim_launch::limits(arch),
                None => Limits::SM75,
            },
        }
    }

    /// The device's identity: equal for clones of one `Device`
    /// ([`Device::same_as`]), never reused by another.
    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// True when both handles are the same device (clones of one `Device`).
    pub fn same_as(&self, other: &Device) -> bool {
        self.inner.id == other.inner.id
    }

    /// Every kernel module loaded on this device so far: which image the
    /// driver took (the cubin for which architecture, or the PTX it
    /// JIT-compiled, with its log), the images refused before it, and
    /// each launched entry's occupancy. Empty on the simulator backend.
    pub fn loaded_images(&self) -> Vec<LoadedImage> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.loaded_images(),
            Backend::Sim(_) => Vec::new(),
        }
    }

    /// How many of the device's streams capture now (`Stream::begin_capture`).
    pub(crate) fn capturing(&self) -> &std::sync::atomic::AtomicUsize {
        match &self.inner.backend {
            Backend::Cuda(c) => &c.capturing,
            Backend::Sim(s) => &s.capturing,
        }
    }

    /// Waits until every launch made so far, on every stream, has
    /// finished. Refused while a stream captures (`DeviceError::Capture`):
    /// CUDA cannot wait for a device whose stream records a graph.
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        if self.capturing().load(std::sync::atomic::Ordering::Relaxed) > 0 {
            return Err(DeviceError::Capture {
                what: "waiting for the device while a stream captures; end the \
                       capture first"
                    .to_string(),
            });
        }
        match &self.inner.backend {
            Backend::Cuda(c) => c.synchronize(),
            Backend::Sim(_) => Ok(()),
        }
    }

    /// Makes autotune decisions shipped with the program known, so that
    /// the kernels they cover are not timed on this machine. `ron` is the
    /// text [`Device::export_tuning`] wrote (e.g. `include_str!`-ed);
    /// entries match on GPU name, compute capability, kernel content and
    /// dims, whatever the driver version. Returns how many entries it read.
    pub fn preload_tuning(&self, ron: &str) -> Result<usize, DeviceError> {
        self.inner.tuning.preload(ron).map_err(DeviceError::Tuning)
    }

    /// Writes every autotune decision this device knows (made in this
    /// process, or found in the on-disk cache) to `path` as RON, for
    /// [`Device::preload_tuning`]. Returns how many entries it wrote.
    pub fn export_tuning(&self, path: &std::path::Path) -> Result<usize, DeviceError> {
        let (text, n) = self.inner.tuning.export();
        crate::tuning::write_export(path, &text)
            .map_err(|e| DeviceError::Tuning(format!("{}: {e}", path.display())))?;
        Ok(n)
    }

    /// The key of an autotune decision on this device; `None` on the
    /// simulator, which does not tune.
    pub(crate) fn tune_key(&self, id: &KernelId, dims: &[(String, usize)]) -> Option<TuneKey> {
        match &self.inner.backend {
            Backend::Cuda(c) => Some(TuneKey {
                gpu: c.name().to_string(),
                arch: c.arch(),
                driver: c.driver_version(),
                module: id.module.to_string(),
                kernel: id.name.to_string(),
                hash: format!("{:016x}", id.hash),
                dims: dims.to_vec(),
            }),
            Backend::Sim(_) => None,
        }
    }

    /// The median time of one entry call in milliseconds, measured with
    /// CUDA events after `warmups` launches; `None` on the simulator.
    pub(crate) fn time_entry(
        &self,
        call: &EntryCall<'_>,
        warmups: usize,
        runs: usize,
    ) -> Result<Option<f32>, LaunchError> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.time(call, warmups, runs).map(Some),
            Backend::Sim(_) => Ok(None),
        }
    }

    /// Sets `len` bytes at `addr` to `value`, on the device.
    pub(crate) fn memset(&self, addr: u64, value: u8, len: usize) -> Result<(), DeviceError> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.memset(addr, value, len),
            Backend::Sim(s) => s.memset(addr, value, len),
        }
    }

    /// A new allocation; `label` names it in the simulator's reports.
    pub(crate) fn alloc_buffer(
        &self,
        bytes: usize,
        label: &str,
    ) -> Result<Arc<Buffer>, DeviceError> {
        let addr = match &self.inner.backend {
            Backend::Cuda(c) => c.alloc(bytes)?,
            Backend::Sim(s) => s.alloc(bytes, label)?,
        };
        Ok(Arc::new(Buffer {
            device: self.clone(),
            addr,
            bytes,
        }))
    }

    pub(crate) fn free(&self, addr: u64) {
        match &self.inner.backend {
            Backend::Cuda(c) => c.free(addr),
            Backend::Sim(s) => s.free(addr),
        }
    }

    pub(crate) fn upload_bytes(&self, addr: u64, bytes: &[u8]) -> Result<(), DeviceError> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.write(addr, bytes),
            Backend::Sim(s) => s.write(addr, bytes),
        }
    }

    pub(crate) fn download(&self, addr: u64, len: usize) -> Result<Vec<u8>, DeviceError> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.read(addr, len),
            Backend::Sim(s) => s.read(addr, len),
        }
    }

    pub(crate) fn copy_within(&self, dst: u64, src: u64, len: usize) -> Result<(), DeviceError> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.copy(dst, src, len),
            Backend::Sim(s) => {
                let bytes = s.read(src, len)?;
                s.write(dst, &bytes)
            }
        }
    }

    /// The target of the image a launch of the kernel runs: on a GPU the
    /// one the driver loaded (loading it now if no launch has), in the
    /// simulator the first PTX built (the one it runs). `None` when the
    /// build embedded no PTX for the simulator.
    pub(crate) fn image_arch(
        &self,
        site: &crate::error::Site,
        id: &crate::call::KernelId,
        source: &crate::call::KernelSource,
    ) -> Result<Option<u32>, LaunchError> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.image_arch(site, id, source).map(Some),
            Backend::Sim(_) => Ok(crate::sim::image_arch(source)),
        }
    }

    /// Runs one entry of a kernel's module (loaded on first use).
    pub(crate) fn launch_entry(&self, call: &EntryCall<'_>) -> Result<(), LaunchError> {
        match &self.inner.backend {
            Backend::Cuda(c) => c.launch(call),
            Backend::Sim(s) => s.launch(call),
        }
    }
}

/// `f32[300, 512]`: how the simulator's reports name a tensor's buffer.
pub(crate) fn label<T: Elem>(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("{}[{}]", T::TY.name(), dims.join(", "))
}

/// One device allocation, freed when the last view of it is dropped.
pub(crate) struct Buffer {
    pub(crate) device: Device,
    /// Device address of the first byte (a CUDA pointer, or the simulator's
    /// address of the allocation).
    pub(crate) addr: u64,
    pub(crate) bytes: usize,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.device.free(self.addr);
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.name())
    }
}
