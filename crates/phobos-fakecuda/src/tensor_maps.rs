//! `cuTensorMapEncodeTiled`'s arguments checked and turned into
//! phobos-sim's tensor map encoding, which the simulator's
//! `cp.async.bulk.tensor` reads when a kernel receives the map as a
//! `__grid_constant__` parameter (the launch passes the 128 bytes through
//! like any other parameter).

use cudarc::driver::sys::CUresult;
use phobos_sim::tensor_map::{Swizzle, TensorMap, TensorMapType, TENSOR_MAP_BYTES};

/// The arguments, as the C caller gave them.
pub(crate) struct Tiled<'a> {
    pub data_type: u32,
    pub rank: u32,
    pub address: u64,
    pub dims: &'a [u64],
    pub strides: &'a [u64],
    pub box_dims: &'a [u32],
    pub element_strides: &'a [u32],
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
}

type Refusal = (CUresult, String);

fn invalid(why: String) -> Refusal {
    (CUresult::CUDA_ERROR_INVALID_VALUE, why)
}

fn unsupported(why: String) -> Refusal {
    (CUresult::CUDA_ERROR_NOT_SUPPORTED, why)
}

/// Rewrites an encoded map in place to start at `address`.
pub(crate) fn replace_address(bytes: &mut [u8], address: u64) -> Result<(), Refusal> {
    let mut m = TensorMap::decode(bytes).map_err(|e| invalid(e.0))?;
    m.address = address;
    let new = m.encode().map_err(|e| invalid(e.0))?;
    bytes.copy_from_slice(&new);
    Ok(())
}

/// The encoded map for a destination at `dest`, or the error code and why.
pub(crate) fn encode_tiled(dest: u64, a: &Tiled) -> Result<[u8; TENSOR_MAP_BYTES], Refusal> {
    if !dest.is_multiple_of(64) {
        return Err(invalid(format!(
            "the tensorMap address {dest:#x} is not aligned to 64 bytes"
        )));
    }
    let data_type = match TensorMapType::from_code(a.data_type) {
        Some(t) => t,
        // 13-15: the packed 4- and 6-bit types of CUDA 12.8.
        None if (13..=15).contains(&a.data_type) => {
            return Err(unsupported(format!(
                "tensorDataType {} (a packed sub-byte type) is not supported by phobos-sim",
                a.data_type
            )))
        }
        None => return Err(invalid(format!("unknown tensorDataType {}", a.data_type))),
    };
    match a.interleave {
        0 => {}
        1 | 2 => {
            return Err(unsupported(format!(
                "interleave {} is not supported by phobos-sim (only CU_TENSOR_MAP_INTERLEAVE_NONE)",
                a.interleave
            )))
        }
        v => return Err(invalid(format!("unknown interleave {v}"))),
    }
    let swizzle = match Swizzle::from_code(a.swizzle) {
        Some(s) => s,
        None if (4..=6).contains(&a.swizzle) => {
            return Err(unsupported(format!(
                "swizzle {} (a 128B-atom mode) is not supported by phobos-sim",
                a.swizzle
            )))
        }
        None => return Err(invalid(format!("unknown swizzle {}", a.swizzle))),
    };
    match a.oob_fill {
        0 => {}
        1 => {
            return Err(unsupported(
                "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA is not supported by phobos-sim (out-of-bounds elements are zeros)".into(),
            ))
        }
        v => return Err(invalid(format!("unknown oobFill {v}"))),
    }
    let r = a.rank as usize;
    let mut m = TensorMap {
        data_type,
        rank: a.rank,
        address: a.address,
        dims: [1; 5],
        strides: [0; 4],
        box_dims: [1; 5],
        element_strides: [1; 5],
        swizzle,
        l2_promotion: a.l2_promotion,
    };
    m.dims[..r].copy_from_slice(&a.dims[..r]);
    m.strides[..r - 1].copy_from_slice(&a.strides[..r - 1]);
    m.box_dims[..r].copy_from_slice(&a.box_dims[..r]);
    m.element_strides[..r].copy_from_slice(&a.element_strides[..r]);
    m.encode().map_err(|e| invalid(e.0))
}
