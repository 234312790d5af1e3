//! The simulator backend: device memory is `phobos-sim`'s (each tensor
//! buffer its own allocation with exact bounds, so memcheck names the tensor
//! an access missed), and a launch hands the kernel's PTX to the simulator,
//! which runs it warp-exactly and reports what compute-sanitizer would
//! (out-of-bounds accesses, races, divergent barriers) as
//! `LaunchError::Check`.

use crate::call::{EntryCall, KernelId};
use crate::error::{DeviceError, LaunchError};
use crate::sim_launch::{self, name_shared_buffer};
use phobos_sim::{BufferId, KernelArg, LaunchOptions, Module, SimError};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

struct Allocation {
    id: BufferId,
    bytes: usize,
    label: String,
}

#[derive(Default)]
struct SimState {
    device: phobos_sim::Device,
    /// Live allocations by base address.
    live: BTreeMap<u64, Allocation>,
    /// Freed allocations, reused for requests of exactly their size (the
    /// simulator never shrinks, and exact sizes keep memcheck exact).
    free: Vec<Allocation>,
    /// Parsed modules by kernel identity (module, name, content hash).
    modules: HashMap<KernelId, Arc<Module>>,
}

impl SimState {
    /// The live allocation holding `addr..addr + len`, and the offset in it.
    fn find(&self, addr: u64, len: usize) -> Result<(&Allocation, usize), DeviceError> {
        let out_of_bounds = |buffer_len| DeviceError::OutOfBounds {
            offset: addr as usize,
            len,
            buffer_len,
        };
        let (&base, alloc) = self
            .live
            .range(..=addr)
            .next_back()
            .ok_or(out_of_bounds(0))?;
        let offset = (addr - base) as usize;
        if offset + len > alloc.bytes {
            return Err(out_of_bounds(alloc.bytes));
        }
        Ok((alloc, offset))
    }
}

fn memory_error(e: SimError) -> DeviceError {
    DeviceError::Simulator(e.to_string())
}

pub(crate) struct SimBackend {
    state: Mutex<SimState>,
    /// Streams capturing now ([`crate::Device::capturing`]).
    pub(crate) capturing: std::sync::atomic::AtomicUsize,
}

impl SimBackend {
    pub(crate) fn new() -> SimBackend {
        SimBackend {
            state: Mutex::new(SimState::default()),
            capturing: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn state(&self) -> MutexGuard<'_, SimState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn alloc(&self, bytes: usize, label: &str) -> Result<u64, DeviceError> {
        let mut state = self.state();
        let alloc = match state.free.iter().position(|a| a.bytes == bytes) {
            Some(i) => {
                let mut a = state.free.swap_remove(i);
                state
                    .device
                    .write(a.id, 0, &vec![0; bytes])
                    .map_err(memory_error)?;
                a.label = label.to_string();
                a
            }
            None => Allocation {
                id: state.device.alloc(label, bytes).map_err(memory_error)?,
                bytes,
                label: label.to_string(),
            },
        };
        let addr = state.device.address(alloc.id).map_err(memory_error)?;
        state.live.insert(addr, alloc);
        Ok(addr)
    }

    pub(crate) fn free(&self, addr: u64) {
        let mut state = self.state();
        if let Some(a) = state.live.remove(&addr) {
            state.free.push(a);
        }
    }

    pub(crate) fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), DeviceError> {
        let mut state = self.state();
        let (alloc, offset) = state.find(addr, bytes.len())?;
        let id = alloc.id;
        state.device.write(id, offset, bytes).map_err(memory_error)
    }

    /// Sets `len` bytes at `addr` to `value`, a bounded chunk at a time.
    pub(crate) fn memset(&self, addr: u64, value: u8, len: usize) -> Result<(), DeviceError> {
        const CHUNK: usize = 1 << 20;
        let mut state = self.state();
        let (alloc, offset) = state.find(addr, len)?;
        let id = alloc.id;
        let chunk = vec![value; len.min(CHUNK)];
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHUNK);
            state
                .device
                .write(id, offset + done, &chunk[..n])
                .map_err(memory_error)?;
            done += n;
        }
        Ok(())
    }

    pub(crate) fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, DeviceError> {
        let state = self.state();
        let (alloc, offset) = state.find(addr, len)?;
        let mut out = vec![0u8; len];
        state
            .device
            .read(alloc.id, offset, &mut out)
            .map_err(memory_error)?;
        Ok(out)
    }

    pub(crate) fn launch(&self, call: &EntryCall<'_>) -> Result<(), LaunchError> {
        let variant = call.variant;
        let mut state = self.state();
        let module = Self::module(&mut state, call)?;
        let result = sim_launch::run(
            &state.device,
            &module,
            variant,
            call.grid,
            call.args,
            &LaunchOptions::default(),
            None,
        );
        match result {
            Ok(_) => Ok(()),
            Err(SimError::Check(mut report)) => Err(LaunchError::Check {
                report: {
                    name_shared_buffer(&mut report, variant);
                    format!("{report}{}", argument_note(&state, call))
                },
                site: Box::new(call.site.clone()),
            }),
            Err(e) => Err(LaunchError::Backend {
                site: Box::new(call.site.clone()),
                message: e.to_string(),
            }),
        }
    }

    /// The kernel's module, parsed on first use. The simulator runs any
    /// architecture's PTX; it takes the first one built ([`image_arch`]).
    fn module(state: &mut SimState, call: &EntryCall<'_>) -> Result<Arc<Module>, LaunchError> {
        if let Some(m) = state.modules.get(call.id) {
            return Ok(Arc::clone(m));
        }
        let Some(&(arch, ptx)) = call.source.ptx.first() else {
            return Err(LaunchError::ModuleLoad {
                site: Box::new(call.site.clone()),
                artifact: format!("`{}`", call.source.module),
                message: "the build embedded no PTX".to_string(),
                log: String::new(),
            });
        };
        let module = Module::parse(ptx).map_err(|e| LaunchError::ModuleLoad {
            site: Box::new(call.site.clone()),
            artifact: format!(
                "the {} PTX of `{}`",
                phobos_meta::arch::name(arch),
                call.source.module
            ),
            message: e.to_string(),
            log: String::new(),
        })?;
        let module = Arc::new(module);
        state.modules.insert(call.id.clone(), Arc::clone(&module));
        Ok(module)
    }
}

/// The target of the PTX the simulator runs for a kernel: the first one
/// built, the lowest (sm_75 by default, the architecture the language's
/// drawings are made for); a launch binds by its variants.
pub(crate) fn image_arch(source: &crate::call::KernelSource) -> Option<u32> {
    source.ptx.first().map(|&(arch, _)| arch)
}

/// Which buffer each tensor argument was, so a report that names a buffer
/// can be read in terms of the kernel's parameters.
fn argument_note(state: &SimState, call: &EntryCall<'_>) -> String {
    let Ok(meta) = ron::from_str::<phobos_meta::meta::KernelMeta>(call.source.meta) else {
        return String::new();
    };
    let variants = image_arch(call.source).map_or(&meta.variants[..], |a| meta.variants_for(a));
    let Some(variant) = variants.iter().find(|v| v.entry == call.entry) else {
        return String::new();
    };
    let parts: Vec<String> = variant
        .ptx_params
        .iter()
        .zip(call.args)
        .filter_map(|(p, a)| match (p, a) {
            (phobos_meta::meta::PtxParam::TensorPtr(name), KernelArg::U64(addr)) => {
                let label = state
                    .find(*addr, 0)
                    .map(|(alloc, _)| alloc.label.clone())
                    .unwrap_or_else(|_| "?".to_string());
                Some(format!("{name} = `{label}`"))
            }
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("\n  note: the tensor arguments were {}", parts.join(", "))
    }
}
