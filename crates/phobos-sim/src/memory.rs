//! Device memory: named global buffers, each its own allocation at a
//! distinct, far-apart virtual base, so that every global address names at
//! most one buffer and an access past a buffer's end never lands in another.
//!
//! Layout of the simulated 64-bit address space:
//! - buffer `i` occupies `[(i + 1) << 36, (i + 1) << 36 + len)`;
//! - the CTA's shared window is at `SHARED_GENERIC_BASE` in generic
//!   addressing (shared-space instructions use plain offsets from 0);
//! - the thread's local window is at `LOCAL_GENERIC_BASE`.
//!
//! Buffers are stored as relaxed atomic 32-bit words so that CTAs running on
//! different host threads may read and write them concurrently, as a GPU's
//! CTAs do, without undefined behaviour on the host.

use crate::error::SimError;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Mutex;

const BUFFER_SHIFT: u32 = 36;
/// Largest buffer the layout allows (64 GiB).
pub const MAX_BUFFER_BYTES: u64 = 1 << BUFFER_SHIFT;
/// Generic address of shared offset 0.
pub(crate) const SHARED_GENERIC_BASE: u64 = 1 << 62;
/// Generic address of local offset 0.
pub(crate) const LOCAL_GENERIC_BASE: u64 = (1 << 62) + (1 << 40);
/// Generic address of param offset 0 (`cvta.param`: a kernel's
/// `__grid_constant__` parameters, such as a tensor map, have addresses).
pub(crate) const PARAM_GENERIC_BASE: u64 = (1 << 62) + (2 << 40);
const WINDOW: u64 = 1 << 40;

/// A handle to a buffer allocated on a [`Device`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub(crate) u32);

impl BufferId {
    /// The buffer's index in allocation order (as in `Access::buffer`).
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The device address a buffer with this id has (the layout gives each
    /// id its own base; [`Device::address`] also checks the buffer exists).
    pub fn address(self) -> u64 {
        base_of(self.index())
    }
}

pub(crate) struct Buffer {
    pub name: String,
    pub len: u64,
    words: Box<[AtomicU32]>,
}

impl Buffer {
    /// Loads `size` (1, 2, 4 or 8) bytes at a naturally aligned in-bounds offset.
    #[inline(always)]
    pub(crate) fn load(&self, off: u64, size: u32) -> u64 {
        let w = (off >> 2) as usize;
        match size {
            8 => u64::from(self.word(w)) | (u64::from(self.word(w + 1)) << 32),
            4 => u64::from(self.word(w)),
            _ => {
                let sh = (off & 3) * 8;
                (u64::from(self.word(w)) >> sh) & crate::numeric::mask(size * 8)
            }
        }
    }

    #[inline(always)]
    fn word(&self, w: usize) -> u32 {
        self.words.get(w).map_or(0, |a| a.load(Relaxed))
    }

    /// Stores the low `size` bytes of `v` at a naturally aligned in-bounds offset.
    #[inline(always)]
    pub(crate) fn store(&self, off: u64, size: u32, v: u64) {
        let w = (off >> 2) as usize;
        match size {
            8 => {
                self.set(w, v as u32);
                self.set(w + 1, (v >> 32) as u32);
            }
            4 => self.set(w, v as u32),
            _ => {
                let sh = (off & 3) * 8;
                let m = (crate::numeric::mask(size * 8) as u32) << sh;
                let bits = ((v as u32) << sh) & m;
                if let Some(a) = self.words.get(w) {
                    // A read-modify-write of the containing word, atomic so that
                    // another CTA's store to a neighbouring byte is not lost.
                    let _ = a.fetch_update(Relaxed, Relaxed, |old| Some((old & !m) | bits));
                }
            }
        }
    }

    #[inline(always)]
    fn set(&self, w: usize, v: u32) {
        if let Some(a) = self.words.get(w) {
            a.store(v, Relaxed);
        }
    }

    /// The atomic word at a 4-byte aligned offset.
    pub(crate) fn atomic_word(&self, off: u64) -> Option<&AtomicU32> {
        self.words.get((off >> 2) as usize)
    }
}

/// Simulated device memory: the global buffers that launches read and write.
#[derive(Default)]
pub struct Device {
    pub(crate) buffers: Vec<Buffer>,
    /// Serializes 64-bit atomics, which the 32-bit word storage cannot do
    /// natively.
    pub(crate) atomic64: Mutex<()>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.buffers.iter().map(|b| (&b.name, b.len)))
            .finish()
    }
}

/// Why a global access failed.
pub(crate) enum GlobalFault {
    /// Not inside any buffer; the nearest buffer and where the address is
    /// relative to it, if the address is in a buffer's slot.
    OutOfBounds { buffer: Option<usize> },
}

impl Device {
    /// An empty device.
    pub fn new() -> Device {
        Device::default()
    }

    /// Allocates a zero-filled buffer of `bytes` bytes named `name` (the name
    /// appears in check reports).
    pub fn alloc(&mut self, name: &str, bytes: usize) -> Result<BufferId, SimError> {
        let len = bytes as u64;
        if len > MAX_BUFFER_BYTES {
            return Err(SimError::Memory {
                message: format!(
                    "buffer `{name}` of {bytes} bytes exceeds the simulator's 64 GiB limit"
                ),
            });
        }
        // Host memory running out is an error the caller can report (the
        // driver stand-in's CUDA_ERROR_OUT_OF_MEMORY), not an abort.
        let n = bytes.div_ceil(4);
        let mut words: Vec<AtomicU32> = Vec::new();
        words.try_reserve_exact(n).map_err(|_| SimError::Memory {
            message: format!("buffer `{name}` of {bytes} bytes does not fit in the host's memory"),
        })?;
        words.extend((0..n).map(|_| AtomicU32::new(0)));
        let words = words.into_boxed_slice();
        let id = u32::try_from(self.buffers.len()).map_err(|_| SimError::Memory {
            message: "too many buffers".into(),
        })?;
        self.buffers.push(Buffer {
            name: name.to_string(),
            len,
            words,
        });
        Ok(BufferId(id))
    }

    /// Frees a buffer's storage. Its address range stays reserved and now
    /// holds zero bytes, so a later access through a stale pointer is an
    /// out-of-bounds access of the freed buffer (use after free), never a
    /// read of whatever was allocated next.
    pub fn release(&mut self, id: BufferId) -> Result<(), SimError> {
        let b = self
            .buffers
            .get_mut(id.index())
            .ok_or_else(|| SimError::Memory {
                message: format!("no buffer with id {}", id.0),
            })?;
        b.len = 0;
        b.words = Box::new([]);
        if !b.name.ends_with(" (freed)") {
            b.name.push_str(" (freed)");
        }
        Ok(())
    }

    /// Allocates a buffer holding a copy of `data`.
    pub fn alloc_from(&mut self, name: &str, data: &[u8]) -> Result<BufferId, SimError> {
        let id = self.alloc(name, data.len())?;
        self.write(id, 0, data)?;
        Ok(id)
    }

    fn buffer(&self, id: BufferId) -> Result<&Buffer, SimError> {
        self.buffers
            .get(id.index())
            .ok_or_else(|| SimError::Memory {
                message: format!("no buffer with id {}", id.0),
            })
    }

    fn range(&self, id: BufferId, offset: usize, len: usize) -> Result<&Buffer, SimError> {
        let b = self.buffer(id)?;
        let end = (offset as u64).checked_add(len as u64);
        if !matches!(end, Some(end) if end <= b.len) {
            return Err(SimError::Memory {
                message: format!(
                    "copy of {len} bytes at offset {offset} is outside buffer `{}` of {} bytes",
                    b.name, b.len
                ),
            });
        }
        Ok(b)
    }

    /// Copies `data` into the buffer at byte `offset`.
    pub fn write(&mut self, id: BufferId, offset: usize, data: &[u8]) -> Result<(), SimError> {
        let b = self.range(id, offset, data.len())?;
        let mut i = 0;
        while i < data.len() {
            let at = offset + i;
            if at & 3 == 0 && i + 4 <= data.len() {
                let w = [data[i], data[i + 1], data[i + 2], data[i + 3]];
                b.store(at as u64, 4, u64::from(u32::from_le_bytes(w)));
                i += 4;
            } else {
                b.store(at as u64, 1, u64::from(data[i]));
                i += 1;
            }
        }
        Ok(())
    }

    /// Copies bytes from the buffer at `offset` into `out`.
    pub fn read(&self, id: BufferId, offset: usize, out: &mut [u8]) -> Result<(), SimError> {
        let b = self.range(id, offset, out.len())?;
        let mut i = 0;
        while i < out.len() {
            let at = offset + i;
            if at & 3 == 0 && i + 4 <= out.len() {
                let w = (b.load(at as u64, 4) as u32).to_le_bytes();
                out[i..i + 4].copy_from_slice(&w);
                i += 4;
            } else {
                out[i] = b.load(at as u64, 1) as u8;
                i += 1;
            }
        }
        Ok(())
    }

    /// The whole buffer's contents.
    pub fn to_vec(&self, id: BufferId) -> Result<Vec<u8>, SimError> {
        let b = self.buffer(id)?;
        let mut out = vec![0u8; b.len as usize];
        self.read(id, 0, &mut out)?;
        Ok(out)
    }

    /// The buffer's size in bytes.
    pub fn len(&self, id: BufferId) -> Result<usize, SimError> {
        Ok(self.buffer(id)?.len as usize)
    }

    /// True when no buffer has been allocated.
    pub fn is_empty(&self) -> bool {
        self.buffers.is_empty()
    }

    /// The buffer's name.
    pub fn name(&self, id: BufferId) -> Result<&str, SimError> {
        Ok(&self.buffer(id)?.name)
    }

    /// The buffer's device address, as a kernel sees it.
    pub fn address(&self, id: BufferId) -> Result<u64, SimError> {
        self.buffer(id)?;
        Ok(base_of(id.index()))
    }

    /// Finds the buffer holding `[addr, addr + bytes)`.
    #[inline(always)]
    pub(crate) fn locate(&self, addr: u64, bytes: u32) -> Result<(usize, u64), GlobalFault> {
        let slot = (addr >> BUFFER_SHIFT) as usize;
        let off = addr & (MAX_BUFFER_BYTES - 1);
        if slot == 0 || slot > self.buffers.len() {
            return Err(GlobalFault::OutOfBounds { buffer: None });
        }
        let idx = slot - 1;
        if off + u64::from(bytes) > self.buffers[idx].len {
            return Err(GlobalFault::OutOfBounds { buffer: Some(idx) });
        }
        Ok((idx, off))
    }

    /// The buffer an out-of-bounds address is nearest to: the buffer whose
    /// slot it is in, else the closest one below or above.
    pub(crate) fn nearest(&self, addr: u64) -> Option<usize> {
        if self.buffers.is_empty() {
            return None;
        }
        let slot = (addr >> BUFFER_SHIFT) as usize;
        Some(slot.clamp(1, self.buffers.len()) - 1)
    }
}

/// Device address of buffer `i`.
pub(crate) fn base_of(i: usize) -> u64 {
    ((i as u64) + 1) << BUFFER_SHIFT
}

/// Which window a generic address falls in, and its offset there.
pub(crate) enum Generic {
    Global(u64),
    Shared(u64),
    Local(u64),
    Param(u64),
}

#[inline(always)]
pub(crate) fn classify_generic(addr: u64) -> Generic {
    if (SHARED_GENERIC_BASE..SHARED_GENERIC_BASE + WINDOW).contains(&addr) {
        Generic::Shared(addr - SHARED_GENERIC_BASE)
    } else if (LOCAL_GENERIC_BASE..LOCAL_GENERIC_BASE + WINDOW).contains(&addr) {
        Generic::Local(addr - LOCAL_GENERIC_BASE)
    } else if (PARAM_GENERIC_BASE..PARAM_GENERIC_BASE + WINDOW).contains(&addr) {
        Generic::Param(addr - PARAM_GENERIC_BASE)
    } else {
        Generic::Global(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_buffer_keeps_its_address_and_holds_nothing() {
        let mut dev = Device::new();
        let a = dev.alloc("a", 64).unwrap();
        let b = dev.alloc("b", 64).unwrap();
        let base = dev.address(a).unwrap();
        dev.release(a).unwrap();
        assert_eq!(dev.address(a).unwrap(), base);
        assert_eq!(dev.len(a).unwrap(), 0);
        assert!(dev.read(a, 0, &mut [0u8; 4]).is_err());
        assert!(matches!(
            dev.locate(base, 4),
            Err(GlobalFault::OutOfBounds { buffer: Some(0) })
        ));
        assert_eq!(dev.name(a).unwrap(), "a (freed)");
        // Other buffers are untouched, and new ones get new addresses.
        dev.write(b, 0, &[1, 2, 3, 4]).unwrap();
        let c = dev.alloc("c", 64).unwrap();
        assert_ne!(dev.address(c).unwrap(), base);
        assert!(dev.release(BufferId(99)).is_err());
    }
}
