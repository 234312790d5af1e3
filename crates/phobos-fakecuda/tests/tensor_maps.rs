//! `cuTensorMapEncodeTiled` and a launch that passes the map as a
//! 128-byte `__grid_constant__` parameter, through the stand-in's C entry
//! points, on a device of compute capability 9.0 (its own test binary:
//! the device is configured from the environment once per process).

use cudarc::driver::sys::{CUjit_option, CUresult};
use phobos_fakecuda::*;
use std::ffi::{c_uint, c_void, CString};
use std::ptr::null_mut;

const PTX: &str = include_str!("../../phobos-sim/tests/ptx/hopper/tma_fixtures.ptx");

#[repr(C, align(64))]
struct MapBytes([u8; 128]);

const F32: c_uint = 7;

/// Encodes a 2-D f32 map into `m`; returns the driver's result.
#[allow(clippy::too_many_arguments)]
fn encode(
    m: *mut c_void,
    address: u64,
    dims: [u64; 2],
    stride: u64,
    box_dims: [u32; 2],
    interleave: c_uint,
    swizzle: c_uint,
    oob_fill: c_uint,
) -> CUresult {
    let strides = [stride];
    let estrides = [1u32, 1];
    unsafe {
        cuTensorMapEncodeTiled(
            m,
            F32,
            2,
            address as usize as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            box_dims.as_ptr(),
            estrides.as_ptr(),
            interleave,
            swizzle,
            0,
            oob_fill,
        )
    }
}

#[test]
fn a_tiled_tensor_map_is_encoded_validated_and_passed_to_a_tma_kernel() {
    // SAFETY: set before the driver reads its configuration, in the only
    // test of this binary.
    std::env::set_var("PHOBOS_FAKE_GPU_CC", "9.0");
    assert_eq!(cuInit(0), CUresult::CUDA_SUCCESS);
    let mut ctx = null_mut();
    assert_eq!(
        unsafe { cuCtxCreate_v2(&mut ctx, 0, 0) },
        CUresult::CUDA_SUCCESS
    );

    // A 20 x 30 f32 tensor, rows 128 bytes apart.
    let (rows, cols, stride) = (20u64, 30u64, 128u64);
    let mut host = vec![0f32; (rows * stride / 4) as usize];
    for y in 0..rows {
        for x in 0..cols {
            host[(y * stride / 4 + x) as usize] = (y * 1000 + x + 1) as f32;
        }
    }
    let mut t = 0u64;
    let bytes = host.len() * 4;
    assert_eq!(
        unsafe { cuMemAlloc_v2(&mut t, bytes) },
        CUresult::CUDA_SUCCESS
    );
    assert_eq!(
        unsafe { cuMemcpyHtoD_v2(t, host.as_ptr().cast(), bytes) },
        CUresult::CUDA_SUCCESS
    );

    let mut map = MapBytes([0; 128]);
    let mp = (&mut map as *mut MapBytes).cast::<c_void>();
    // Box 16 x 8 with the 64B swizzle (inner 64 bytes).
    assert_eq!(
        encode(mp, t, [cols, rows], stride, [16, 8], 0, 2, 0),
        CUresult::CUDA_SUCCESS
    );

    // The driver's refusals, with its codes.
    let mut scratch = MapBytes([0; 128]);
    let sp = (&mut scratch as *mut MapBytes).cast::<c_void>();
    let invalid = CUresult::CUDA_ERROR_INVALID_VALUE;
    let unsupported = CUresult::CUDA_ERROR_NOT_SUPPORTED;
    assert_eq!(
        encode(sp, t, [cols, rows], 120, [16, 8], 0, 2, 0),
        invalid,
        "stride"
    );
    assert_eq!(
        encode(sp, t + 4, [cols, rows], stride, [16, 8], 0, 2, 0),
        invalid,
        "address"
    );
    assert_eq!(
        encode(sp, t, [cols, rows], stride, [32, 8], 0, 2, 0),
        invalid,
        "box wider than the swizzle"
    );
    assert_eq!(
        encode(sp, t, [cols, rows], stride, [16, 300], 0, 0, 0),
        invalid,
        "box > 256"
    );
    assert_eq!(
        encode(sp, t, [0, rows], stride, [16, 8], 0, 0, 0),
        invalid,
        "zero dim"
    );
    assert_eq!(
        encode(
            unsafe { sp.cast::<u8>().add(8) }.cast(),
            t,
            [cols, rows],
            stride,
            [16, 8],
            0,
            2,
            0
        ),
        invalid,
        "the map itself misaligned"
    );
    assert_eq!(
        encode(sp, t, [cols, rows], stride, [16, 8], 1, 2, 0),
        unsupported,
        "interleave"
    );
    assert_eq!(
        encode(sp, t, [cols, rows], stride, [16, 8], 0, 4, 0),
        unsupported,
        "128B atom"
    );
    assert_eq!(
        encode(sp, t, [cols, rows], stride, [16, 8], 0, 2, 1),
        unsupported,
        "NaN fill"
    );
    assert_eq!(
        encode(sp, t, [cols, rows], stride, [16, 8], 0, 9, 0),
        invalid,
        "unknown swizzle"
    );
    assert_eq!(cuTensorMapEncodeIm2col(), unsupported);
    // Replacing the address: a misaligned one is refused and leaves the
    // map as it was; garbage is no map.
    assert_eq!(
        encode(sp, t, [cols, rows], stride, [16, 8], 0, 2, 0),
        CUresult::CUDA_SUCCESS
    );
    let before = scratch.0;
    assert_eq!(
        unsafe { cuTensorMapReplaceAddress(sp, (t + 8) as usize as *mut c_void) },
        invalid
    );
    assert_eq!(scratch.0, before);
    assert_eq!(
        unsafe { cuTensorMapReplaceAddress(sp, (t + 256) as usize as *mut c_void) },
        CUresult::CUDA_SUCCESS
    );
    assert_ne!(scratch.0, before);
    let mut garbage = MapBytes([7; 128]);
    let gp = (&mut garbage as *mut MapBytes).cast::<c_void>();
    assert_eq!(
        unsafe { cuTensorMapReplaceAddress(gp, t as usize as *mut c_void) },
        invalid
    );

    // Load the nvrtc fixture and copy the box at (20, 15), over the right
    // and bottom edges.
    let text = CString::new(PTX).unwrap();
    let mut module = null_mut();
    let mut opts: [CUjit_option; 0] = [];
    let mut vals: [*mut c_void; 0] = [];
    assert_eq!(
        unsafe {
            cuModuleLoadDataEx(
                &mut module,
                text.as_ptr().cast(),
                0,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
            )
        },
        CUresult::CUDA_SUCCESS
    );
    let mut f = null_mut();
    let name = CString::new("tma_tile_2d").unwrap();
    assert_eq!(
        unsafe { cuModuleGetFunction(&mut f, module, name.as_ptr()) },
        CUresult::CUDA_SUCCESS
    );
    let mut out = 0u64;
    assert_eq!(
        unsafe { cuMemAlloc_v2(&mut out, 16 * 8 * 4) },
        CUresult::CUDA_SUCCESS
    );
    let (mut x, mut y, mut bx, mut by, mut bits) = (20i32, 15i32, 16i32, 8i32, 2u32);
    let mut params = [
        mp,
        (&mut out as *mut u64).cast::<c_void>(),
        (&mut x as *mut i32).cast(),
        (&mut y as *mut i32).cast(),
        (&mut bx as *mut i32).cast(),
        (&mut by as *mut i32).cast(),
        (&mut bits as *mut u32).cast(),
    ];
    let r = unsafe {
        cuLaunchKernel(
            f,
            1,
            1,
            1,
            64,
            1,
            1,
            0,
            null_mut(),
            params.as_mut_ptr(),
            null_mut(),
        )
    };
    assert_eq!(r, CUresult::CUDA_SUCCESS);
    let mut got = vec![0f32; 16 * 8];
    assert_eq!(
        unsafe { cuMemcpyDtoH_v2(got.as_mut_ptr().cast(), out, 16 * 8 * 4) },
        CUresult::CUDA_SUCCESS
    );
    for j in 0..8u64 {
        for i in 0..16u64 {
            let (gx, gy) = (20 + i, 15 + j);
            let want = if gx < cols && gy < rows {
                (gy * 1000 + gx + 1) as f32
            } else {
                0.0
            };
            assert_eq!(got[(j * 16 + i) as usize], want, "box ({i}, {j})");
        }
    }
}
