//! The stand-in's entry points called directly, as a C caller would: the
//! driver behaviours the runtime relies on, each in its own context so the
//! tests may run in parallel.

use cudarc::driver::sys::{CUjit_option, CUresult};
use phobos_fakecuda::*;
use std::ffi::{c_void, CStr, CString};
use std::ptr::null_mut;

const TWICE: &str = r#"
.version 7.5
.target sm_75
.address_size 64
.visible .entry twice(.param .u64 p_x, .param .s32 p_n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p_x];
  ld.param.u32 %r1, [p_n];
  mov.u32 %r2, %tid.x;
  setp.ge.s32 %p1, %r2, %r1;
  @%p1 bra $done;
  mul.wide.s32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f1, [%rd3];
  add.f32 %f1, %f1, %f1;
  st.global.f32 [%rd3], %f1;
$done:
  ret;
}
"#;

/// A fresh context of its own, current on this thread.
fn context() -> *mut c_void {
    assert_eq!(cuInit(0), CUresult::CUDA_SUCCESS);
    let mut ctx = null_mut();
    assert_eq!(
        unsafe { cuCtxCreate_v2(&mut ctx, 0, 0) },
        CUresult::CUDA_SUCCESS
    );
    ctx
}

/// A device allocation of `bytes` in the current context, which must
/// succeed.
fn alloc(bytes: usize) -> u64 {
    let mut p = 0u64;
    assert_eq!(
        unsafe { cuMemAlloc_v2(&mut p, bytes) },
        CUresult::CUDA_SUCCESS
    );
    p
}

fn load(ptx: &str) -> Result<*mut c_void, (CUresult, String)> {
    let text = CString::new(ptx).unwrap();
    let mut log = vec![0u8; 4096];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values = [log.as_mut_ptr().cast::<c_void>(), 4096usize as *mut c_void];
    let mut module = null_mut();
    let status = unsafe {
        cuModuleLoadDataEx(
            &mut module,
            text.as_ptr().cast(),
            2,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if status == CUresult::CUDA_SUCCESS {
        return Ok(module);
    }
    let written = values[1] as usize;
    let text = CStr::from_bytes_until_nul(&log).unwrap().to_str().unwrap();
    assert_eq!(
        written,
        text.len(),
        "the size option holds the log's length"
    );
    Err((status, text.to_string()))
}

fn function(module: *mut c_void) -> *mut c_void {
    let mut f = null_mut();
    let name = CString::new("twice").unwrap();
    assert_eq!(
        unsafe { cuModuleGetFunction(&mut f, module, name.as_ptr()) },
        CUresult::CUDA_SUCCESS
    );
    f
}

/// Launches `twice` over `threads` threads on `n` floats at `x`.
fn launch_twice(f: *mut c_void, x: u64, n: i32, threads: u32) -> CUresult {
    launch_twice_over(f, x, n, 1, threads)
}

/// Launches `twice` over `ctas` CTAs of `threads` threads on `n` floats at
/// `x`.
fn launch_twice_over(f: *mut c_void, x: u64, n: i32, ctas: u32, threads: u32) -> CUresult {
    let (mut px, mut pn) = (x, n);
    let mut params = [
        (&mut px as *mut u64).cast::<c_void>(),
        (&mut pn as *mut i32).cast::<c_void>(),
    ];
    unsafe {
        cuLaunchKernel(
            f,
            ctas,
            1,
            1,
            threads,
            1,
            1,
            0,
            null_mut(),
            params.as_mut_ptr(),
            null_mut(),
        )
    }
}

#[test]
fn a_kernel_runs_on_device_memory() {
    let ctx = context();
    let module = function(load(TWICE).unwrap());
    let x = alloc(16);
    let data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    assert_eq!(
        unsafe { cuMemcpyHtoD_v2(x, data.as_ptr().cast(), 16) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(launch_twice(module, x, 4, 32), CUresult::CUDA_SUCCESS);
    let mut out = [0u8; 16];
    assert_eq!(
        unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), x, 16) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(f32::from_le_bytes(out[12..16].try_into().unwrap()), 8.0);
    // memset, and a copy past the allocation's end is refused.
    assert_eq!(cuMemsetD8_v2(x, 0, 16), CUresult::CUDA_SUCCESS);
    assert_eq!(
        unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), x + 8, 16) },
        CUresult::CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(cuMemFree_v2(x), CUresult::CUDA_SUCCESS);
    assert_eq!(cuCtxDestroy_v2(ctx), CUresult::CUDA_SUCCESS);
}

#[test]
fn a_fault_is_pending_until_a_synchronizing_call_then_sticky() {
    let ctx = context();
    let module = function(load(TWICE).unwrap());
    let x = alloc(16);
    // n = 64 over 4 floats: threads 4.. store past the end.
    assert_eq!(launch_twice(module, x, 64, 64), CUresult::CUDA_SUCCESS);
    // Queued work after the fault is accepted, and never runs.
    assert_eq!(launch_twice(module, x, 4, 32), CUresult::CUDA_SUCCESS);
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_ERROR_ILLEGAL_ADDRESS);
    assert_eq!(
        launch_twice(module, x, 4, 32),
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
    );
    let mut y = 0u64;
    assert_eq!(
        unsafe { cuMemAlloc_v2(&mut y, 16) },
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
    );
    // Destroying the context ends it; a new one works.
    assert_eq!(cuCtxDestroy_v2(ctx), CUresult::CUDA_SUCCESS);
    let ctx = context();
    assert_eq!(unsafe { cuMemAlloc_v2(&mut y, 16) }, CUresult::CUDA_SUCCESS);
    assert_eq!(cuCtxDestroy_v2(ctx), CUresult::CUDA_SUCCESS);
}

#[test]
fn jit_errors_fill_the_log_and_cubins_are_refused() {
    let ctx = context();
    let (status, log) = load(&TWICE.replace("ret;", "ret_broken;")).unwrap_err();
    assert_eq!(status, CUresult::CUDA_ERROR_INVALID_PTX);
    assert!(
        log.starts_with("ptxas application ptx input, line"),
        "{log}"
    );
    let (status, log) = load(&TWICE.replace("sm_75", "sm_90")).unwrap_err();
    assert_eq!(status, CUresult::CUDA_ERROR_INVALID_PTX);
    assert!(log.contains("sm_90") && log.contains("sm_86"), "{log}");
    let elf = b"\x7fELF\x02\x01\x01\0";
    let mut module = null_mut();
    assert_eq!(
        unsafe { cuModuleLoadData(&mut module, elf.as_ptr().cast()) },
        CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
    );
    // sm_90a is arch-specific: its PTX and cubins run on a 9.0 device only,
    // and this one is 8.6 (a 9.0 device loading them is the runtime's
    // `stand_in_a_9_0_device_runs_the_sm_90a_image`).
    let sm_90a = TWICE.replace("7.5", "8.0").replace("sm_75", "sm_90a");
    let (status, log) = load(&sm_90a).unwrap_err();
    assert_eq!(status, CUresult::CUDA_ERROR_INVALID_PTX);
    assert!(
        log.contains(".target sm_90a is arch-specific") && log.contains("8.6"),
        "{log}"
    );
    let cubin = stand_in_cubin(phobos_meta::arch::SM_90A, &sm_90a);
    assert_eq!(
        unsafe { cuModuleLoadData(&mut module, cubin.as_ptr().cast()) },
        CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
    );
    // The stand-in cubin of the device's own target loads.
    let cubin = stand_in_cubin(86, TWICE);
    assert_eq!(
        unsafe { cuModuleLoadData(&mut module, cubin.as_ptr().cast()) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(cuCtxDestroy_v2(ctx), CUresult::CUDA_SUCCESS);
}

#[test]
fn events_measure_simulated_work() {
    let ctx = context();
    let module = function(load(TWICE).unwrap());
    let x = alloc(4096);
    let (mut a, mut b, mut c) = (null_mut(), null_mut(), null_mut());
    for e in [&mut a, &mut b, &mut c] {
        assert_eq!(unsafe { cuEventCreate(e, 0) }, CUresult::CUDA_SUCCESS);
    }
    let mut ms = -1.0f32;
    assert_eq!(
        unsafe { cuEventElapsedTime_v2(&mut ms, a, b) },
        CUresult::CUDA_ERROR_INVALID_HANDLE,
        "events never recorded"
    );
    assert_eq!(cuEventRecord(a, null_mut()), CUresult::CUDA_SUCCESS);
    assert_eq!(launch_twice(module, x, 32, 32), CUresult::CUDA_SUCCESS);
    // No work between b and c.
    assert_eq!(cuEventRecord(b, null_mut()), CUresult::CUDA_SUCCESS);
    assert_eq!(cuEventRecord(c, null_mut()), CUresult::CUDA_SUCCESS);
    assert_eq!(cuEventSynchronize(c), CUresult::CUDA_SUCCESS);
    let (mut work, mut idle) = (0.0f32, -1.0f32);
    assert_eq!(
        unsafe { cuEventElapsedTime(&mut work, a, b) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(
        unsafe { cuEventElapsedTime(&mut idle, b, c) },
        CUresult::CUDA_SUCCESS
    );
    assert!(work > 0.0 && idle == 0.0, "{work} ms, {idle} ms");
    for e in [a, b, c] {
        assert_eq!(cuEventDestroy_v2(e), CUresult::CUDA_SUCCESS);
    }
    assert_eq!(cuCtxDestroy_v2(ctx), CUresult::CUDA_SUCCESS);
}

#[test]
fn contexts_follow_the_drivers_current_context_rules() {
    let ctx = context();
    let current = || {
        let mut c = null_mut();
        assert_eq!(unsafe { cuCtxGetCurrent(&mut c) }, CUresult::CUDA_SUCCESS);
        c
    };
    assert_eq!(current(), ctx);
    let mut primary = null_mut();
    assert_eq!(
        unsafe { cuDevicePrimaryCtxRetain(&mut primary, 0) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(cuCtxPushCurrent_v2(primary), CUresult::CUDA_SUCCESS);
    assert_eq!(current(), primary);
    let mut popped = null_mut();
    assert_eq!(
        unsafe { cuCtxPopCurrent_v2(&mut popped) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!((popped, current()), (primary, ctx));
    assert_eq!(cuDevicePrimaryCtxRelease_v2(0), CUresult::CUDA_SUCCESS);
    assert_eq!(cuCtxDestroy_v2(ctx), CUresult::CUDA_SUCCESS);
    assert_eq!(current(), null_mut());
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_ERROR_INVALID_CONTEXT);
    let mut name = [0i8; 64];
    assert_eq!(
        unsafe { cuDeviceGetName(name.as_mut_ptr(), 64, 0) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(
        unsafe { cuDeviceGetName(name.as_mut_ptr(), 64, 1) },
        CUresult::CUDA_ERROR_INVALID_DEVICE
    );
    let mut s = std::ptr::null();
    assert_eq!(
        unsafe { cuGetErrorName(CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU as u32, &mut s) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(
        unsafe { CStr::from_ptr(s) }.to_str().unwrap(),
        "CUDA_ERROR_NO_BINARY_FOR_GPU"
    );
}

/// Each thread stores its index at byte 90000 + 4 * tid of the dynamic
/// shared array and, after a barrier, writes its neighbour's to `y`: the
/// simulator's own dynamic shared memory kernel.
const NEIGHBOUR: &str = include_str!("../../phobos-sim/tests/ptx/dynamic_neighbour.ptx");

#[test]
fn dynamic_shared_memory_above_48_kilobytes_needs_the_opt_in_attribute() {
    use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute};
    let ctx = context();
    let module = load(NEIGHBOUR).unwrap();
    let mut f = null_mut();
    let name = CString::new("neighbour").unwrap();
    assert_eq!(
        unsafe { cuModuleGetFunction(&mut f, module, name.as_ptr()) },
        CUresult::CUDA_SUCCESS
    );
    // The default device is compute capability 8.6: 99 KB with the opt-in.
    let mut optin = 0;
    let attr = CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as u32;
    assert_eq!(
        unsafe { cuDeviceGetAttribute(&mut optin, attr, 0) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(optin, 99 * 1024);
    let y = alloc(128);
    let bytes = 92 * 1024;
    let launch = |shared: u32| {
        let mut py = y;
        let mut params = [(&mut py as *mut u64).cast::<c_void>()];
        unsafe {
            cuLaunchKernel(
                f,
                1,
                1,
                1,
                32,
                1,
                1,
                shared,
                null_mut(),
                params.as_mut_ptr(),
                null_mut(),
            )
        }
    };
    // Above 48 KB without the opt-in: refused, as the driver does.
    assert_eq!(launch(bytes), CUresult::CUDA_ERROR_INVALID_VALUE);
    let max = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as u32;
    // More than the device allows cannot be opted in to.
    assert_eq!(
        cuFuncSetAttribute(f, max, 200 * 1024),
        CUresult::CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(
        cuFuncSetAttribute(f, max, bytes as i32),
        CUresult::CUDA_SUCCESS
    );
    let mut got = 0;
    assert_eq!(
        unsafe { cuFuncGetAttribute(&mut got, max, f) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(got, bytes as i32);
    assert_eq!(launch(bytes), CUresult::CUDA_SUCCESS);
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_SUCCESS);
    let mut out = [0u8; 128];
    assert_eq!(
        unsafe { cuMemcpyDtoH_v2(out.as_mut_ptr().cast(), y, 128) },
        CUresult::CUDA_SUCCESS
    );
    let values: Vec<u32> = out
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(values, (0..32u32).map(|t| t ^ 1).collect::<Vec<_>>());
    // Above the opted-in size: refused again.
    assert_eq!(launch(bytes + 1024), CUresult::CUDA_ERROR_INVALID_VALUE);
    assert_eq!(cuMemFree_v2(y), CUresult::CUDA_SUCCESS);
    assert_eq!(cuCtxDestroy_v2(ctx), CUresult::CUDA_SUCCESS);
}

#[test]
fn a_launch_over_the_work_budget_is_refused_not_run_for_hours() {
    // Issue 26: a legal launch of 2^31 - 1 CTAs ran for hours. Over
    // PHOBOS_FAKE_GPU_MAX_WORK (2^26 threads by default) a launch is
    // refused before it runs, and the context stays usable.
    let ctx = context();
    let f = function(load(TWICE).unwrap());
    let x = alloc(16);
    for ctas in [1 << 22, i32::MAX as u32] {
        assert_eq!(
            launch_twice_over(f, x, 4, ctas, 32),
            CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
        );
    }
    assert_eq!(launch_twice_over(f, x, 4, 2, 32), CUresult::CUDA_SUCCESS);
    assert_eq!(cuCtxSynchronize(), CUresult::CUDA_SUCCESS);
    assert_eq!(cuCtxDestroy_v2(ctx), CUresult::CUDA_SUCCESS);
}

/// Set in the child process [`host_memory_running_out_is_out_of_memory`]
/// starts.
const CHILD: &str = "PHOBOS_FAKECUDA_TEST_LOW_MEMORY";

#[test]
fn host_memory_running_out_is_out_of_memory() {
    // Issue 26: a 3 GiB cuMemAlloc under a 2 GiB cap on the process's
    // address space aborted the process. The test runs itself again in a
    // child process under the cap, which must end cleanly.
    const CAP: u64 = 2 << 30;
    if std::env::var_os(CHILD).is_some() {
        let limit = libc::rlimit {
            rlim_cur: CAP as libc::rlim_t,
            rlim_max: CAP as libc::rlim_t,
        };
        // SAFETY: setrlimit only reads `limit`.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
        let ctx = context();
        let mut p = 0u64;
        // Within the device's 16 GiB, beyond the host's 2 GiB.
        assert_eq!(
            unsafe { cuMemAlloc_v2(&mut p, 3 << 30) },
            CUresult::CUDA_ERROR_OUT_OF_MEMORY
        );
        // Nothing was kept: a small allocation still succeeds.
        let x = alloc(16);
        assert_eq!(cuMemFree_v2(x), CUresult::CUDA_SUCCESS);
        assert_eq!(cuCtxDestroy_v2(ctx), CUresult::CUDA_SUCCESS);
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", "host_memory_running_out_is_out_of_memory"])
        .env(CHILD, "1")
        .env("MALLOC_ARENA_MAX", "2")
        .output()
        .expect("run the child");
    assert!(
        out.status.success(),
        "the child ended with {:?}:\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
