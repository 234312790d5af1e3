//! `cuGetErrorName` and `cuGetErrorString`: the names come from cudarc's
//! `CUresult` (its `Debug` is the C enumerator's name), the descriptions
//! are the driver's own wording for the codes the stand-in returns. Both
//! hand out pointers to strings that live for the rest of the process, as
//! the driver's do.

use cudarc::driver::sys::CUresult;
use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Every code the stand-in can return, with the driver's description.
const KNOWN: &[(CUresult, &str)] = &[
    (CUresult::CUDA_SUCCESS, "no error"),
    (CUresult::CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    (CUresult::CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    (CUresult::CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    (CUresult::CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    (
        CUresult::CUDA_ERROR_NO_DEVICE,
        "no CUDA-capable device is detected",
    ),
    (
        CUresult::CUDA_ERROR_INVALID_DEVICE,
        "invalid device ordinal",
    ),
    (
        CUresult::CUDA_ERROR_INVALID_IMAGE,
        "device kernel image is invalid",
    ),
    (
        CUresult::CUDA_ERROR_INVALID_CONTEXT,
        "invalid device context",
    ),
    (
        CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU,
        "no kernel image is available for execution on the device",
    ),
    (
        CUresult::CUDA_ERROR_INVALID_PTX,
        "a PTX JIT compilation failed",
    ),
    (
        CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        "the provided PTX was compiled with an unsupported toolchain.",
    ),
    (
        CUresult::CUDA_ERROR_INVALID_HANDLE,
        "invalid resource handle",
    ),
    (CUresult::CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    (CUresult::CUDA_ERROR_NOT_READY, "device not ready"),
    (
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
        "an illegal memory access was encountered",
    ),
    (
        CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
        "misaligned address",
    ),
    (
        CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        "too many resources requested for launch",
    ),
    (
        CUresult::CUDA_ERROR_LAUNCH_TIMEOUT,
        "the launch timed out and was terminated",
    ),
    (
        CUresult::CUDA_ERROR_LAUNCH_FAILED,
        "unspecified launch failure",
    ),
    (
        CUresult::CUDA_ERROR_NOT_SUPPORTED,
        "operation not supported",
    ),
    (CUresult::CUDA_ERROR_UNKNOWN, "unknown error"),
];

struct Table {
    names: HashMap<u32, CString>,
    strings: HashMap<u32, CString>,
}

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut names = HashMap::new();
        let mut strings = HashMap::new();
        for &(code, text) in KNOWN {
            let key = code as u32;
            names.insert(key, cstring(&format!("{code:?}")));
            strings.insert(key, cstring(text));
        }
        Mutex::new(Table { names, strings })
    })
}

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

/// The error's name, or `None` for a code the stand-in does not know (the
/// driver returns `CUDA_ERROR_INVALID_VALUE` for those).
pub(crate) fn name(code: u32) -> Option<*const c_char> {
    let t = table().lock().unwrap_or_else(PoisonError::into_inner);
    t.names.get(&code).map(|s| s.as_ptr())
}

/// The error's description, or `None` for an unknown code.
pub(crate) fn string(code: u32) -> Option<*const c_char> {
    let t = table().lock().unwrap_or_else(PoisonError::into_inner);
    t.strings.get(&code).map(|s| s.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn names_and_descriptions_are_the_drivers() {
        let code = CUresult::CUDA_ERROR_ILLEGAL_ADDRESS as u32;
        let n = unsafe { CStr::from_ptr(name(code).unwrap()) };
        let s = unsafe { CStr::from_ptr(string(code).unwrap()) };
        assert_eq!(n.to_str().unwrap(), "CUDA_ERROR_ILLEGAL_ADDRESS");
        assert_eq!(
            s.to_str().unwrap(),
            "an illegal memory access was encountered"
        );
        assert!(name(123_456).is_none());
    }
}
