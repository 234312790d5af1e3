//! The simulator backend: device memory is host memory at simulated
//! addresses, and a launch hands the kernel's PTX and the buffers to
//! `phobos-sim`, which runs it warp-exactly and reports what
//! compute-sanitizer would (out-of-bounds accesses, races, divergent
//! barriers) as a launch error.

use crate::device::EntryCall;
use crate::error::{DeviceError, LaunchError};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Simulated allocations start here and are 256-byte aligned, like
/// `cudaMalloc`'s, so alignment checks behave as on a GPU.
const BASE: u64 = 0x7f00_0000_0000;
const ALIGN: u64 = 256;

#[derive(Default)]
pub(crate) struct SimMemory {
    next: u64,
    /// Allocations by start address.
    pub(crate) allocs: BTreeMap<u64, Vec<u8>>,
}

impl SimMemory {
    /// The allocation holding `addr..addr + len`, and the offset of `addr` in it.
    fn find(&mut self, addr: u64, len: usize) -> Result<(&mut Vec<u8>, usize), DeviceError> {
        let out_of_bounds = DeviceError::OutOfBounds {
            offset: addr as usize,
            len,
            buffer_len: 0,
        };
        let (&start, buf) = self
            .allocs
            .range_mut(..=addr)
            .next_back()
            .ok_or(out_of_bounds.clone())?;
        let offset = (addr - start) as usize;
        if offset + len > buf.len() {
            return Err(out_of_bounds);
        }
        Ok((buf, offset))
    }
}

pub(crate) struct SimBackend {
    memory: Mutex<SimMemory>,
}

impl SimBackend {
    pub(crate) fn new() -> SimBackend {
        SimBackend {
            memory: Mutex::new(SimMemory {
                next: BASE,
                allocs: BTreeMap::new(),
            }),
        }
    }

    pub(crate) fn memory(&self) -> MutexGuard<'_, SimMemory> {
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn alloc(&self, bytes: usize) -> u64 {
        let mut mem = self.memory();
        let addr = mem.next;
        let span = (bytes as u64).max(1).div_ceil(ALIGN) * ALIGN;
        mem.next += span;
        mem.allocs.insert(addr, vec![0; bytes]);
        addr
    }

    pub(crate) fn free(&self, addr: u64) {
        self.memory().allocs.remove(&addr);
    }

    pub(crate) fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), DeviceError> {
        let mut mem = self.memory();
        let (buf, offset) = mem.find(addr, bytes.len())?;
        buf[offset..offset + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    pub(crate) fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, DeviceError> {
        let mut mem = self.memory();
        let (buf, offset) = mem.find(addr, len)?;
        Ok(buf[offset..offset + len].to_vec())
    }

    pub(crate) fn launch(&self, call: &EntryCall<'_>) -> Result<(), LaunchError> {
        Err(LaunchError::Backend {
            site: Box::new(call.site.clone()),
            message: "the simulator is not available in this build".to_string(),
        })
    }
}
