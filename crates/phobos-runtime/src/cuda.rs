//! The CUDA backend: the driver API through cudarc's dynamically loaded
//! bindings, so building needs no CUDA toolkit and a machine without libcuda
//! gets `DeviceError::NoDriver` instead of a panic. Owns the context, device
//! memory, module loading (the cubin for the device's architecture, else the
//! PTX JIT-compiled by the driver with its log kept for errors) and launches.

use crate::device::{EntryCall, Limits};
use crate::error::{DeviceError, LaunchError};
use crate::launch::KernelSource;
use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys;
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
            Image::Cubin { arch, .. } => format!("the sm_{arch} cubin of `{module}`"),
            Image::Ptx { arch, .. } => format!("the sm_{arch} PTX of `{module}` (JIT)"),
        }
    }
}

/// The images to try for a device of compute capability `arch`, best first:
/// the cubin built for exactly that architecture; a cubin of the same major
/// version and a lower minor (binary compatible); then the PTX of the newest
/// architecture not above the device's, for the driver to JIT.
pub(crate) fn images_for(source: &KernelSource, arch: u32) -> Vec<Image> {
    let mut out = Vec::new();
    if let Some(&(a, bytes)) = source.cubins.iter().find(|(a, _)| *a == arch) {
        out.push(Image::Cubin { arch: a, bytes });
    }
    if let Some(&(a, bytes)) = source
        .cubins
        .iter()
        .filter(|(a, _)| *a / 10 == arch / 10 && *a < arch)
        .max_by_key(|(a, _)| *a)
    {
        out.push(Image::Cubin { arch: a, bytes });
    }
    if let Some(&(a, text)) = source
        .ptx
        .iter()
        .filter(|(a, _)| *a <= arch)
        .max_by_key(|(a, _)| *a)
    {
        out.push(Image::Ptx { arch: a, text });
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

struct LoadedModule {
    module: sys::CUmodule,
    functions: HashMap<String, sys::CUfunction>,
}

pub(crate) struct CudaBackend {
    device: sys::CUdevice,
    ctx: sys::CUcontext,
    name: String,
    arch: u32,
    limits: Limits,
    /// Loaded modules by the address of the kernel's embedded PTX table,
    /// which is unique per kernel and stable for the program's life.
    modules: Mutex<HashMap<usize, Arc<Mutex<LoadedModule>>>>,
}

// The driver API is thread-safe; the raw handles are only used with the
// context made current on the calling thread first.
unsafe impl Send for CudaBackend {}
unsafe impl Sync for CudaBackend {}
unsafe impl Send for LoadedModule {}

impl CudaBackend {
    pub(crate) fn open(ordinal: usize) -> Result<CudaBackend, DeviceError> {
        // Without libcuda every cudarc call would panic; ask first.
        if !unsafe { sys::is_culib_present() } {
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
        let ctx = unsafe { result::primary_ctx::retain(device) }
            .map_err(driver("cuDevicePrimaryCtxRetain"))?;
        unsafe { result::ctx::set_current(ctx) }.map_err(driver("cuCtxSetCurrent"))?;
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
            max_shared_bytes_per_block: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        };
        let name = result::device::get_name(device).map_err(driver("cuDeviceGetName"))?;
        if arch < 75 {
            unsafe {
                let _ = result::primary_ctx::release(device);
            }
            return Err(DeviceError::UnsupportedArch { name, arch });
        }
        Ok(CudaBackend {
            device,
            ctx,
            name,
            arch,
            limits,
            modules: Mutex::new(HashMap::new()),
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

    fn bind(&self) -> Result<(), DeviceError> {
        unsafe { result::ctx::set_current(self.ctx) }.map_err(driver("cuCtxSetCurrent"))
    }

    pub(crate) fn alloc(&self, bytes: usize) -> Result<u64, DeviceError> {
        self.bind()?;
        // The driver refuses empty allocations; an empty tensor still gets a
        // distinct, aligned address.
        unsafe { result::malloc_sync(bytes.max(256)) }.map_err(driver("cuMemAlloc"))
    }

    pub(crate) fn free(&self, addr: u64) {
        if self.bind().is_ok() {
            unsafe {
                let _ = result::free_sync(addr);
            }
        }
    }

    pub(crate) fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), DeviceError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.bind()?;
        unsafe { result::memcpy_htod_sync(addr, bytes) }.map_err(driver("cuMemcpyHtoD"))
    }

    pub(crate) fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, DeviceError> {
        let mut out = vec![0u8; len];
        if len == 0 {
            return Ok(out);
        }
        self.bind()?;
        unsafe { result::memcpy_dtoh_sync(&mut out, addr) }.map_err(driver("cuMemcpyDtoH"))?;
        Ok(out)
    }

    pub(crate) fn copy(&self, dst: u64, src: u64, len: usize) -> Result<(), DeviceError> {
        if len == 0 {
            return Ok(());
        }
        self.bind()?;
        unsafe { result::memcpy_dtod_sync(dst, src, len) }.map_err(driver("cuMemcpyDtoD"))
    }

    pub(crate) fn synchronize(&self) -> Result<(), DeviceError> {
        self.bind()?;
        result::ctx::synchronize().map_err(driver("cuCtxSynchronize"))
    }

    /// The kernel's module, loaded on first use in this context.
    fn module(&self, call: &EntryCall<'_>) -> Result<Arc<Mutex<LoadedModule>>, LaunchError> {
        let key = call.source.ptx.as_ptr() as usize;
        let mut modules = self.modules.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(m) = modules.get(&key) {
            return Ok(Arc::clone(m));
        }
        let images = images_for(call.source, self.arch);
        let mut failure = LaunchError::ModuleLoad {
            site: Box::new(call.site.clone()),
            artifact: format!("`{}`", call.source.module),
            message: format!(
                "the build holds no cubin or PTX usable on sm_{} (its PTX targets {:?}); \
                 add the architecture to PHOBOS_ARCHES and rebuild",
                self.arch,
                call.source.ptx.iter().map(|(a, _)| *a).collect::<Vec<_>>()
            ),
            log: String::new(),
        };
        for image in images {
            match self.load_image(&image) {
                Ok(module) => {
                    let loaded = Arc::new(Mutex::new(LoadedModule {
                        module,
                        functions: HashMap::new(),
                    }));
                    modules.insert(key, Arc::clone(&loaded));
                    return Ok(loaded);
                }
                Err((message, log)) => {
                    failure = LaunchError::ModuleLoad {
                        site: Box::new(call.site.clone()),
                        artifact: image.label(call.source.module),
                        message,
                        log,
                    };
                }
            }
        }
        Err(failure)
    }

    /// `cuModuleLoadDataEx` with the JIT's error and info logs captured.
    fn load_image(&self, image: &Image) -> Result<sys::CUmodule, (String, String)> {
        self.bind().map_err(|e| (e.to_string(), String::new()))?;
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
        match status.result() {
            Ok(()) => Ok(unsafe { module.assume_init() }),
            Err(e) => {
                let text = |buf: &[u8]| {
                    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                    String::from_utf8_lossy(&buf[..end]).into_owned()
                };
                let log = [text(&error_log), text(&info_log)]
                    .into_iter()
                    .filter(|s| !s.trim().is_empty())
                    .collect::<Vec<_>>()
                    .join("\n");
                Err((describe(e), log))
            }
        }
    }

    pub(crate) fn launch(&self, call: &EntryCall<'_>) -> Result<(), LaunchError> {
        let backend = |message: String| LaunchError::Backend {
            site: Box::new(call.site.clone()),
            message,
        };
        let module = self.module(call)?;
        let mut module = module.lock().unwrap_or_else(PoisonError::into_inner);
        let function = match module.functions.get(call.entry) {
            Some(f) => *f,
            None => {
                let name = CString::new(call.entry)
                    .map_err(|_| backend(format!("bad entry name {:?}", call.entry)))?;
                let f = unsafe { result::module::get_function(module.module, name) }
                    .map_err(|e| backend(format!("entry `{}`: {}", call.entry, describe(e))))?;
                module.functions.insert(call.entry.to_string(), f);
                f
            }
        };
        self.bind().map_err(|e| backend(e.to_string()))?;
        // Each parameter in its own 8-byte aligned slot; the driver copies
        // as many bytes as the entry declares.
        let mut slots: Vec<u64> = call
            .args
            .iter()
            .map(|a| {
                let mut raw = [0u8; 8];
                let bytes = a.bytes();
                raw[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
                u64::from_le_bytes(raw)
            })
            .collect();
        let mut params: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|s| (s as *mut u64).cast::<c_void>())
            .collect();
        let [gx, gy, gz] = call.grid;
        let [bx, by, bz] = call.block;
        unsafe {
            result::launch_kernel(
                function,
                (gx, gy, gz),
                (bx, by, bz),
                0,
                std::ptr::null_mut(),
                &mut params,
            )
        }
        .map_err(|e| backend(describe(e)))
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        if self.bind().is_ok() {
            let modules = self
                .modules
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner);
            for m in modules.values() {
                let m = m.lock().unwrap_or_else(PoisonError::into_inner);
                unsafe {
                    let _ = result::module::unload(m.module);
                }
            }
        }
        unsafe {
            let _ = result::primary_ctx::release(self.device);
        }
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
                Image::Cubin { arch, .. } => format!("cubin{arch}"),
                Image::Ptx { arch, .. } => format!("ptx{arch}"),
            })
            .collect()
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
