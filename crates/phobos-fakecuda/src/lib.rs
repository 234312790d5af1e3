//! phobos-fakecuda: a CUDA driver stand-in over `phobos-sim`. Built as a
//! shared library and loaded in place of `libcuda.so` (by
//! `scripts/with-fake-gpu.sh`), it lets any program that drives its PTX
//! kernels through the CUDA driver API run them on the CPU, with the
//! simulator's sanitizer checks, on a machine with no GPU.
//!
//! This file is the C ABI and nothing else: each exported entry point
//! checks its pointers, calls into `driver`, and turns the outcome into a
//! `CUresult`. A panic never crosses the boundary (it becomes
//! `CUDA_ERROR_UNKNOWN`). The exported names are the versioned symbols the
//! CUDA 12 headers map the API to (`cuMemAlloc_v2`, `cuCtxDestroy_v2`,
//! ...), which is what a dynamic loader such as cudarc's resolves.
//! The device's description and the fault injection knobs are in
//! `config`; the semantics (sticky faults, simulated time) in `driver`.
//!
//! It must never be found where a real driver is looked for: the build
//! produces `libphobos_fakecuda.so`, and only the script copies it to a
//! private folder under the name `libcuda.so`.

#![allow(non_snake_case)]
#![allow(clippy::missing_safety_doc)]

mod config;
mod cubin;
mod driver;
mod errors;
mod tensor_maps;

pub use cubin::stand_in_cubin;

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute, CUjit_option, CUresult};
use driver::{Driver, JitLogs};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

type Handle = *mut c_void;

static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();

/// Runs an entry point's body, turning a panic into `CUDA_ERROR_UNKNOWN`.
/// An entry point named in `PHOBOS_FAKE_GPU_FAIL` fails with
/// `CUDA_ERROR_UNKNOWN` without doing anything.
fn guard(name: &str, body: impl FnOnce() -> Result<(), CUresult>) -> CUresult {
    if let Some(Ok(d)) = DRIVER.get() {
        if d.config.fail_calls.iter().any(|c| c == name) {
            d.trace(|| format!("{name}: failed (injected)"));
            return CUresult::CUDA_ERROR_UNKNOWN;
        }
    }
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => CUresult::CUDA_SUCCESS,
        Ok(Err(e)) => e,
        Err(_) => CUresult::CUDA_ERROR_UNKNOWN,
    }
}

/// The driver, once `cuInit` has succeeded.
fn drv() -> Result<&'static Driver, CUresult> {
    match DRIVER.get() {
        Some(Ok(d)) => Ok(d),
        _ => Err(CUresult::CUDA_ERROR_NOT_INITIALIZED),
    }
}

/// Writes through an out-pointer, refusing null.
unsafe fn out<T>(p: *mut T, v: T) -> Result<(), CUresult> {
    if p.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    p.write(v);
    Ok(())
}

fn device_ok(dev: c_int) -> Result<(), CUresult> {
    if dev == 0 {
        Ok(())
    } else {
        Err(CUresult::CUDA_ERROR_INVALID_DEVICE)
    }
}

/// Writes to `*ctx` the context `make` gives on device `dev`; `make` runs
/// only once the device and the out-pointer are known to be good, since it
/// creates or retains a context.
unsafe fn new_context(
    ctx: *mut Handle,
    dev: c_int,
    make: impl FnOnce(&Driver) -> u64,
) -> Result<(), CUresult> {
    let d = drv()?;
    device_ok(dev)?;
    if ctx.is_null() {
        return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
    }
    out(ctx, h(make(d)))
}

fn h(v: u64) -> Handle {
    v as usize as Handle
}

fn id(p: Handle) -> u64 {
    p as usize as u64
}

// ---- initialization and the device ----

#[no_mangle]
pub extern "C" fn cuInit(flags: c_uint) -> CUresult {
    guard("cuInit", || {
        if flags != 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let d = DRIVER.get_or_init(|| {
            config::Config::from_env()
                .and_then(Driver::new)
                .inspect_err(|e| eprintln!("phobos-fakecuda: {e}"))
        });
        d.as_ref()
            .map(|_| ())
            .map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    guard("cuDriverGetVersion", || {
        let v = match DRIVER.get() {
            Some(Ok(d)) => d.config.driver_version,
            _ => config::Config::default().driver_version,
        };
        out(version, v)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    guard("cuDeviceGetCount", || {
        drv()?;
        out(count, 1)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGet(device: *mut c_int, ordinal: c_int) -> CUresult {
    guard("cuDeviceGet", || {
        drv()?;
        device_ok(ordinal)?;
        out(device, 0)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: c_int) -> CUresult {
    guard("cuDeviceGetName", || {
        let d = drv()?;
        device_ok(dev)?;
        if name.is_null() || len <= 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let bytes = d.config.name.as_bytes();
        let n = bytes.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), name.cast::<u8>(), n);
        *name.add(n) = 0;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: c_int) -> CUresult {
    guard("cuDeviceTotalMem_v2", || {
        let d = drv()?;
        device_ok(dev)?;
        out(bytes, d.config.memory_bytes as usize)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attrib: c_uint,
    dev: c_int,
) -> CUresult {
    guard("cuDeviceGetAttribute", || {
        let d = drv()?;
        device_ok(dev)?;
        let c = &d.config;
        let clamp = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        use CUdevice_attribute as A;
        let v = match attrib {
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK as u32 => {
                clamp(c.max_threads_per_block)
            }
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X as u32 => {
                clamp(c.max_threads_per_block)
            }
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y as u32 => {
                clamp(c.max_threads_per_block)
            }
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z as u32 => 64,
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X as u32 => clamp(c.max_grid[0]),
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y as u32 => clamp(c.max_grid[1]),
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z as u32 => clamp(c.max_grid[2]),
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK as u32 => {
                clamp(c.shared_per_block)
            }
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as u32 => {
                clamp(c.shared_per_block_optin)
            }
            a if a == A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY as u32 => 65536,
            a if a == A::CU_DEVICE_ATTRIBUTE_WARP_SIZE as u32 => 32,
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK as u32 => 65536,
            a if a == A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE as u32 => 1_500_000,
            a if a == A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT as u32 => clamp(c.sms),
            a if a == A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR as u32 => 2048,
            a if a == A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as u32 => clamp(c.arch / 10),
            a if a == A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as u32 => clamp(c.arch % 10),
            a if a == A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING as u32 => 1,
            a if a == A::CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS as u32 => 1,
            a if a == A::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED as u32 => 0,
            a if a == A::CU_DEVICE_ATTRIBUTE_INTEGRATED as u32 => 0,
            _ => {
                d.trace(|| format!("cuDeviceGetAttribute {attrib}: not modelled"));
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
        };
        out(value, v)
    })
}

// ---- contexts ----

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(ctx: *mut Handle, dev: c_int) -> CUresult {
    guard("cuDevicePrimaryCtxRetain", || {
        new_context(ctx, dev, Driver::primary_retain)
    })
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: c_int) -> CUresult {
    guard("cuDevicePrimaryCtxRelease_v2", || {
        device_ok(dev)?;
        drv()?.primary_release()
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    dev: c_int,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CUresult {
    guard("cuDevicePrimaryCtxGetState", || {
        device_ok(dev)?;
        let retained = drv()?.primary_active();
        out(flags, 0)?;
        out(active, c_int::from(retained))
    })
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxReset_v2(dev: c_int) -> CUresult {
    guard("cuDevicePrimaryCtxReset_v2", || {
        device_ok(dev)?;
        drv()?.primary_reset();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxCreate_v2(ctx: *mut Handle, _flags: c_uint, dev: c_int) -> CUresult {
    guard("cuCtxCreate_v2", || {
        new_context(ctx, dev, Driver::ctx_create)
    })
}

#[no_mangle]
pub extern "C" fn cuCtxDestroy_v2(ctx: Handle) -> CUresult {
    guard("cuCtxDestroy_v2", || drv()?.ctx_destroy(id(ctx)))
}

#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(ctx: Handle) -> CUresult {
    guard("cuCtxSetCurrent", || drv()?.set_current(id(ctx)))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetCurrent(ctx: *mut Handle) -> CUresult {
    guard("cuCtxGetCurrent", || out(ctx, h(drv()?.get_current())))
}

#[no_mangle]
pub extern "C" fn cuCtxPushCurrent_v2(ctx: Handle) -> CUresult {
    guard("cuCtxPushCurrent_v2", || drv()?.push_current(id(ctx)))
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(ctx: *mut Handle) -> CUresult {
    guard("cuCtxPopCurrent_v2", || {
        let popped = drv()?.pop_current()?;
        if !ctx.is_null() {
            ctx.write(h(popped));
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuCtxGetDevice(device: *mut c_int) -> CUresult {
    guard("cuCtxGetDevice", || {
        if drv()?.get_current() == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_CONTEXT);
        }
        out(device, 0)
    })
}

#[no_mangle]
pub extern "C" fn cuCtxSynchronize() -> CUresult {
    guard("cuCtxSynchronize", || drv()?.synchronize())
}

#[no_mangle]
pub extern "C" fn cuStreamSynchronize(stream: Handle) -> CUresult {
    guard("cuStreamSynchronize", || {
        drv()?.stream_synchronize(id(stream))
    })
}

// ---- streams ----

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut Handle, _flags: c_uint) -> CUresult {
    guard("cuStreamCreate", || {
        if stream.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        out(stream, h(drv()?.stream_create()?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    stream: *mut Handle,
    flags: c_uint,
    _priority: c_int,
) -> CUresult {
    cuStreamCreate(stream, flags)
}

#[no_mangle]
pub extern "C" fn cuStreamDestroy_v2(stream: Handle) -> CUresult {
    guard("cuStreamDestroy_v2", || drv()?.stream_destroy(id(stream)))
}

#[no_mangle]
pub extern "C" fn cuStreamWaitEvent(stream: Handle, event: Handle, _flags: c_uint) -> CUresult {
    guard("cuStreamWaitEvent", || {
        drv()?.stream_wait_event(id(stream), id(event))
    })
}

#[no_mangle]
pub extern "C" fn cuStreamQuery(stream: Handle) -> CUresult {
    // Work runs when it is issued, so a stream is always idle.
    guard("cuStreamQuery", || drv()?.stream_synchronize(id(stream)))
}

#[no_mangle]
pub extern "C" fn cuStreamBeginCapture_v2(stream: Handle, _mode: c_uint) -> CUresult {
    guard("cuStreamBeginCapture_v2", || {
        drv()?.begin_capture(id(stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamEndCapture(stream: Handle, graph: *mut Handle) -> CUresult {
    guard("cuStreamEndCapture", || {
        if graph.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        out(graph, h(drv()?.end_capture(id(stream))?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamIsCapturing(stream: Handle, status: *mut c_uint) -> CUresult {
    guard("cuStreamIsCapturing", || {
        // CU_STREAM_CAPTURE_STATUS_NONE = 0, _ACTIVE = 1.
        out(status, c_uint::from(drv()?.is_capturing(id(stream))))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGraphInstantiateWithFlags(
    exec: *mut Handle,
    graph: Handle,
    _flags: u64,
) -> CUresult {
    guard("cuGraphInstantiateWithFlags", || {
        if exec.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        out(exec, h(drv()?.graph_instantiate(id(graph))?))
    })
}

#[no_mangle]
pub extern "C" fn cuGraphLaunch(exec: Handle, stream: Handle) -> CUresult {
    guard("cuGraphLaunch", || {
        drv()?.graph_launch(id(exec), id(stream))
    })
}

#[no_mangle]
pub extern "C" fn cuGraphExecDestroy(exec: Handle) -> CUresult {
    guard("cuGraphExecDestroy", || drv()?.graph_exec_destroy(id(exec)))
}

#[no_mangle]
pub extern "C" fn cuGraphDestroy(graph: Handle) -> CUresult {
    guard("cuGraphDestroy", || drv()?.graph_destroy(id(graph)))
}

#[no_mangle]
pub unsafe extern "C" fn cuStreamGetCtx(stream: Handle, ctx: *mut Handle) -> CUresult {
    guard("cuStreamGetCtx", || {
        out(ctx, h(drv()?.stream_context(id(stream))?))
    })
}

// ---- memory ----

#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut u64, bytes: usize) -> CUresult {
    guard("cuMemAlloc_v2", || {
        if dptr.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        out(dptr, drv()?.mem_alloc(bytes)?)
    })
}

#[no_mangle]
pub extern "C" fn cuMemFree_v2(dptr: u64) -> CUresult {
    guard("cuMemFree_v2", || drv()?.mem_free(dptr))
}

#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    guard("cuMemGetInfo_v2", || {
        let (f, t) = drv()?.mem_info();
        out(free, f as usize)?;
        out(total, t as usize)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(dst: u64, src: *const c_void, bytes: usize) -> CUresult {
    guard("cuMemcpyHtoD_v2", || {
        let d = drv()?;
        if bytes == 0 {
            return d.write(dst, &[], 0);
        }
        if src.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        d.write(dst, std::slice::from_raw_parts(src.cast::<u8>(), bytes), 0)
    })
}

/// Page-locked host memory: ordinary host memory here (every copy is a
/// CPU copy), 4 KiB aligned, with its size kept in front of it.
#[no_mangle]
pub unsafe extern "C" fn cuMemHostAlloc(
    ptr: *mut *mut c_void,
    bytes: usize,
    _flags: c_uint,
) -> CUresult {
    guard("cuMemHostAlloc", || {
        drv()?;
        if ptr.is_null() || bytes == 0 {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        const ALIGN: usize = 4096;
        let layout = std::alloc::Layout::from_size_align(bytes + ALIGN, ALIGN)
            .map_err(|_| CUresult::CUDA_ERROR_OUT_OF_MEMORY)?;
        let base = std::alloc::alloc_zeroed(layout);
        if base.is_null() {
            return Err(CUresult::CUDA_ERROR_OUT_OF_MEMORY);
        }
        base.cast::<usize>().write(bytes);
        out(ptr, base.add(ALIGN).cast())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemFreeHost(ptr: *mut c_void) -> CUresult {
    guard("cuMemFreeHost", || {
        if ptr.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        const ALIGN: usize = 4096;
        let base = ptr.cast::<u8>().sub(ALIGN);
        let bytes = base.cast::<usize>().read();
        let layout = std::alloc::Layout::from_size_align(bytes + ALIGN, ALIGN)
            .map_err(|_| CUresult::CUDA_ERROR_INVALID_VALUE)?;
        std::alloc::dealloc(base, layout);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: u64,
    src: *const c_void,
    bytes: usize,
    stream: Handle,
) -> CUresult {
    guard("cuMemcpyHtoDAsync_v2", || {
        let d = drv()?;
        if bytes == 0 {
            return d.write(dst, &[], id(stream));
        }
        if src.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        d.write(
            dst,
            std::slice::from_raw_parts(src.cast::<u8>(), bytes),
            id(stream),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: u64,
    bytes: usize,
    stream: Handle,
) -> CUresult {
    guard("cuMemcpyDtoHAsync_v2", || {
        let d = drv()?;
        if bytes == 0 {
            return d.read(src, &mut [], id(stream));
        }
        if dst.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        d.read(
            src,
            std::slice::from_raw_parts_mut(dst.cast::<u8>(), bytes),
            id(stream),
        )
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: u64,
    src: u64,
    bytes: usize,
    stream: Handle,
) -> CUresult {
    guard("cuMemcpyDtoDAsync_v2", || {
        drv()?.copy(dst, src, bytes, id(stream))
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD8Async(dst: u64, value: u8, n: usize, stream: Handle) -> CUresult {
    guard("cuMemsetD8Async", || {
        drv()?.memset(dst, value, n, id(stream))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: u64, bytes: usize) -> CUresult {
    guard("cuMemcpyDtoH_v2", || {
        let d = drv()?;
        if bytes == 0 {
            return d.read(src, &mut [], 0);
        }
        if dst.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        d.read(
            src,
            std::slice::from_raw_parts_mut(dst.cast::<u8>(), bytes),
            0,
        )
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoD_v2(dst: u64, src: u64, bytes: usize) -> CUresult {
    guard("cuMemcpyDtoD_v2", || drv()?.copy(dst, src, bytes, 0))
}

#[no_mangle]
pub extern "C" fn cuMemsetD8_v2(dst: u64, value: u8, n: usize) -> CUresult {
    guard("cuMemsetD8_v2", || drv()?.memset(dst, value, n, 0))
}

// ---- modules and functions ----

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut Handle,
    image: *const c_void,
    n_options: c_uint,
    options: *mut CUjit_option,
    values: *mut *mut c_void,
) -> CUresult {
    guard("cuModuleLoadDataEx", || {
        let d = drv()?;
        if module.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let want = driver::log_options(n_options, options, values);
        let mut logs = JitLogs {
            error: String::new(),
            info: String::new(),
        };
        let result = d.module_load(image, &mut logs);
        if let Some(buf) = want.error {
            driver::fill_log(&logs.error, buf, values);
        }
        if let Some(buf) = want.info {
            driver::fill_log(&logs.info, buf, values);
        }
        out(module, h(result?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut Handle, image: *const c_void) -> CUresult {
    cuModuleLoadDataEx(module, image, 0, std::ptr::null_mut(), std::ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn cuModuleUnload(module: Handle) -> CUresult {
    guard("cuModuleUnload", || drv()?.module_unload(id(module)))
}

#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    f: *mut Handle,
    module: Handle,
    name: *const c_char,
) -> CUresult {
    guard("cuModuleGetFunction", || {
        if f.is_null() || name.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let name = CStr::from_ptr(name)
            .to_str()
            .map_err(|_| CUresult::CUDA_ERROR_NOT_FOUND)?;
        out(f, h(drv()?.get_function(id(module), name)?))
    })
}

#[no_mangle]
pub extern "C" fn cuFuncSetAttribute(f: Handle, attrib: c_uint, value: c_int) -> CUresult {
    guard("cuFuncSetAttribute", || {
        let d = drv()?;
        if attrib == CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as u32 {
            d.func_set_max_dynamic_shared(id(f), value)
        } else {
            Err(CUresult::CUDA_ERROR_NOT_SUPPORTED)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuFuncGetAttribute(
    value: *mut c_int,
    attrib: c_uint,
    f: Handle,
) -> CUresult {
    guard("cuFuncGetAttribute", || {
        let d = drv()?;
        let (shared, dynamic) = d.func_shared_bytes(id(f))?;
        use CUfunction_attribute as F;
        let v = match attrib {
            a if a == F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES as u32 => shared,
            a if a == F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as u32 => dynamic,
            a if a == F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK as u32 => {
                i32::try_from(d.config.max_threads_per_block).unwrap_or(i32::MAX)
            }
            _ => return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED),
        };
        out(value, v)
    })
}

/// CTAs per multiprocessor, as the stand-in estimates it: from threads
/// and shared memory per SM of the configured compute capability (NVIDIA's
/// occupancy tables: 2048 threads on 8.0 and 9.0, 1536 on 8.6 and 8.9,
/// 1024 on 7.5; the shared memory the simulator allows per block, plus the
/// 1 KB the driver reserves per CTA on 8.0 and newer; at most 32 CTAs).
/// Registers are not modelled (the simulator has no register allocation;
/// `CU_FUNC_ATTRIBUTE_NUM_REGS` is not supported), so this is an upper
/// bound; a GPU's answer includes them.
#[no_mangle]
pub unsafe extern "C" fn cuOccupancyMaxActiveBlocksPerMultiprocessor(
    blocks: *mut c_int,
    f: Handle,
    block_size: c_int,
    dynamic_shared: usize,
) -> CUresult {
    guard("cuOccupancyMaxActiveBlocksPerMultiprocessor", || {
        let d = drv()?;
        let (shared, _) = d.func_shared_bytes(id(f))?;
        let threads = u64::try_from(block_size)
            .ok()
            .filter(|t| *t > 0)
            .ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?;
        let arch = d.config.arch;
        let per_sm_threads: u64 = match arch {
            0..=75 => 1024,
            86 | 89 | 120 => 1536,
            _ => 2048,
        };
        let reserved: u64 = if arch >= 80 { 1024 } else { 0 };
        let per_cta_shared = shared.max(0) as u64 + dynamic_shared as u64 + reserved;
        let per_sm_shared = u64::from(phobos_sim::max_shared_bytes(Some(arch))) + reserved;
        let by_threads = per_sm_threads / threads;
        let by_shared = per_sm_shared.checked_div(per_cta_shared).unwrap_or(32);
        let n = by_threads.min(by_shared).min(32);
        out(blocks, i32::try_from(n).unwrap_or(i32::MAX))
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernel(
    f: Handle,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_bytes: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    guard("cuLaunchKernel", || {
        let d = drv()?;
        if !extra.is_null() {
            return Err(CUresult::CUDA_ERROR_NOT_SUPPORTED);
        }
        let sizes = d.param_sizes(id(f))?;
        if !sizes.is_empty() && params.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let mut bytes = Vec::with_capacity(sizes.len());
        for (i, &size) in sizes.iter().enumerate() {
            let p = *params.add(i);
            if p.is_null() {
                return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
            }
            bytes.push(std::slice::from_raw_parts(p.cast::<u8>(), size as usize).to_vec());
        }
        d.launch(
            id(f),
            [grid_x, grid_y, grid_z],
            [block_x, block_y, block_z],
            shared_bytes,
            bytes,
            id(stream),
        )
    })
}

// ---- events ----

#[no_mangle]
pub unsafe extern "C" fn cuEventCreate(event: *mut Handle, _flags: c_uint) -> CUresult {
    guard("cuEventCreate", || {
        if event.is_null() {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        out(event, h(drv()?.event_create()?))
    })
}

#[no_mangle]
pub extern "C" fn cuEventDestroy_v2(event: Handle) -> CUresult {
    guard("cuEventDestroy_v2", || drv()?.event_destroy(id(event)))
}

#[no_mangle]
pub extern "C" fn cuEventRecord(event: Handle, stream: Handle) -> CUresult {
    guard("cuEventRecord", || {
        drv()?.event_record(id(event), id(stream))
    })
}

#[no_mangle]
pub extern "C" fn cuEventSynchronize(event: Handle) -> CUresult {
    guard("cuEventSynchronize", || drv()?.event_synchronize(id(event)))
}

#[no_mangle]
pub extern "C" fn cuEventQuery(event: Handle) -> CUresult {
    // Work runs inside the launch, so a recorded event is always complete.
    guard("cuEventQuery", || drv()?.event_synchronize(id(event)))
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime(ms: *mut f32, start: Handle, end: Handle) -> CUresult {
    guard("cuEventElapsedTime", || {
        out(ms, drv()?.event_elapsed_ms(id(start), id(end))?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuEventElapsedTime_v2(
    ms: *mut f32,
    start: Handle,
    end: Handle,
) -> CUresult {
    cuEventElapsedTime(ms, start, end)
}

// ---- errors ----

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorName(error: c_uint, s: *mut *const c_char) -> CUresult {
    guard("cuGetErrorName", || {
        out(
            s,
            errors::name(error).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuGetErrorString(error: c_uint, s: *mut *const c_char) -> CUresult {
    guard("cuGetErrorString", || {
        out(
            s,
            errors::string(error).ok_or(CUresult::CUDA_ERROR_INVALID_VALUE)?,
        )
    })
}

// ---- tensor maps ----

/// `cuTensorMapEncodeTiled`: writes phobos-sim's 128-byte encoding of the
/// map ([`phobos_sim::tensor_map`]), validated as the driver documents;
/// `CUDA_ERROR_INVALID_VALUE` for a map the driver refuses,
/// `CUDA_ERROR_NOT_SUPPORTED` for what the simulator does not copy
/// (interleaved layouts, the 128B-atom swizzles, the NaN fill, packed
/// sub-byte types). The reason goes to `PHOBOS_FAKE_GPU_TRACE`. The enums
/// are taken as integers so that an unknown value is an error, not
/// undefined behaviour.
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapEncodeTiled(
    tensor_map: *mut c_void,
    data_type: c_uint,
    rank: c_uint,
    global_address: *mut c_void,
    global_dim: *const u64,
    global_strides: *const u64,
    box_dim: *const c_uint,
    element_strides: *const c_uint,
    interleave: c_uint,
    swizzle: c_uint,
    l2_promotion: c_uint,
    oob_fill: c_uint,
) -> CUresult {
    guard("cuTensorMapEncodeTiled", || {
        let r = rank as usize;
        let null = tensor_map.is_null()
            || global_dim.is_null()
            || box_dim.is_null()
            || element_strides.is_null()
            || (r > 1 && global_strides.is_null());
        let refuse = |code: CUresult, why: String| {
            if let Some(Ok(d)) = DRIVER.get() {
                d.trace(|| format!("cuTensorMapEncodeTiled: {why}"));
            }
            Err(code)
        };
        if null {
            return refuse(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                "a required pointer is null".into(),
            );
        }
        if !(1..=5).contains(&r) {
            return refuse(
                CUresult::CUDA_ERROR_INVALID_VALUE,
                format!("tensorRank is {rank}; it must be 1 to 5"),
            );
        }
        let args = tensor_maps::Tiled {
            data_type,
            rank,
            address: global_address as usize as u64,
            dims: std::slice::from_raw_parts(global_dim, r),
            strides: if r > 1 {
                std::slice::from_raw_parts(global_strides, r - 1)
            } else {
                &[]
            },
            box_dims: std::slice::from_raw_parts(box_dim, r),
            element_strides: std::slice::from_raw_parts(element_strides, r),
            interleave,
            swizzle,
            l2_promotion,
            oob_fill,
        };
        match tensor_maps::encode_tiled(tensor_map as usize as u64, &args) {
            Ok(bytes) => {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), tensor_map.cast::<u8>(), bytes.len());
                Ok(())
            }
            Err((code, why)) => refuse(code, why),
        }
    })
}

/// `cuTensorMapReplaceAddress`: the same map over another global address,
/// validated again (the address must be 16-byte aligned).
#[no_mangle]
pub unsafe extern "C" fn cuTensorMapReplaceAddress(
    tensor_map: *mut c_void,
    global_address: *mut c_void,
) -> CUresult {
    guard("cuTensorMapReplaceAddress", || {
        if tensor_map.is_null() || !(tensor_map as usize).is_multiple_of(64) {
            return Err(CUresult::CUDA_ERROR_INVALID_VALUE);
        }
        let bytes = std::slice::from_raw_parts_mut(tensor_map.cast::<u8>(), 128);
        match tensor_maps::replace_address(bytes, global_address as usize as u64) {
            Ok(()) => Ok(()),
            Err((code, why)) => {
                if let Some(Ok(d)) = DRIVER.get() {
                    d.trace(|| format!("cuTensorMapReplaceAddress: {why}"));
                }
                Err(code)
            }
        }
    })
}

/// `cuTensorMapEncodeIm2col`: the simulator has no im2col copies.
#[no_mangle]
pub extern "C" fn cuTensorMapEncodeIm2col() -> CUresult {
    guard("cuTensorMapEncodeIm2col", || {
        if let Some(Ok(d)) = DRIVER.get() {
            d.trace(|| {
                "cuTensorMapEncodeIm2col: the stand-in has no im2col tensor maps (phobos-sim copies tiled boxes only)".into()
            });
        }
        Err(CUresult::CUDA_ERROR_NOT_SUPPORTED)
    })
}
