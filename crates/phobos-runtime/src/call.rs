//! What a backend receives, as a leaf the launcher, the device, streams,
//! graphs and both backends read: the kernel a build embedded
//! (`KernelSource`), its identity for module caches (`KernelId`), one
//! checked launch (`EntryCall`, with its stream as the driver's handle),
//! one launch the simulator captured into a graph (`Recorded`) and what a
//! device allows one (`Limits`). Keeping them here, below `device.rs`,
//! `launch.rs` and `stream.rs`, is what keeps the backends from importing
//! the device or the stream that holds them.

use crate::error::Site;
use phobos_meta::meta::VariantMeta;
use phobos_sim::KernelArg;

/// What a device allows one launch (the launch binding's limits).
pub use phobos_meta::binding::Limits;

/// Everything a build embeds for one kernel: its metadata (RON text, as
/// `phobos_meta::meta::KernelMeta` serializes it), its PTX per architecture
/// and, when ptxas was found at build time, its cubins per architecture.
#[derive(Debug)]
pub struct KernelSource {
    pub name: &'static str,
    /// The `.pho` file the kernel came from, as error messages name it.
    pub module: &'static str,
    pub meta: &'static str,
    /// `(arch, ptx)`, e.g. `(75, "...")` for sm_75, in ascending arch order.
    pub ptx: &'static [(u32, &'static str)],
    /// `(arch, cubin)`, in ascending arch order; each 8-byte aligned
    /// ([`crate::Aligned`]).
    pub cubins: &'static [(u32, &'static [u8])],
}

impl KernelSource {
    /// A hash of everything the build embedded for the kernel (metadata,
    /// PTX and cubins, with their architectures): stable across runs and
    /// builds (64-bit FNV-1a), so caches on disk can be keyed by it.
    pub fn content_hash(&self) -> u64 {
        use std::hash::Hasher;
        let mut h = fnv::FnvHasher::default();
        let mut part = |bytes: &[u8]| {
            h.write(&(bytes.len() as u64).to_le_bytes());
            h.write(bytes);
        };
        part(self.name.as_bytes());
        part(self.module.as_bytes());
        part(self.meta.as_bytes());
        for (arch, ptx) in self.ptx {
            part(&arch.to_le_bytes());
            part(ptx.as_bytes());
        }
        for (arch, cubin) in self.cubins {
            part(&arch.to_le_bytes());
            part(cubin);
        }
        h.finish()
    }

    /// The kernel's identity for the backends' module caches.
    pub(crate) fn id(&self) -> KernelId {
        KernelId {
            module: self.module,
            name: self.name,
            hash: self.content_hash(),
        }
    }
}

/// Who a kernel is, for caches: its module path, its name and the hash of
/// its embedded content. Two kernels share an id only when the build
/// embedded the same thing for both.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct KernelId {
    pub module: &'static str,
    pub name: &'static str,
    pub hash: u64,
}

/// One checked launch, as the backends receive it.
pub(crate) struct EntryCall<'a> {
    pub site: &'a Site,
    /// The kernel's identity, which keys the backends' module caches.
    pub id: &'a KernelId,
    pub source: &'a KernelSource,
    pub entry: &'a str,
    /// The variant's metadata (the shared plan names tiles in reports).
    pub variant: &'a VariantMeta,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// The entry's arguments in `.param` order ([`crate::sim_launch::Plan::kernel_args`]).
    pub args: &'a [KernelArg],
    /// The stream the launch is issued on, as the driver takes it
    /// (`CUstream` as an integer; 0 for the default stream, and for every
    /// stream on the simulator): a handle, not the `Stream`, so that this
    /// leaf imports no stream.
    pub cu_stream: usize,
    /// The stream is capturing a graph (`Stream::begin_capture`).
    pub capturing: bool,
}

/// One launch the simulator captured, owned so that it can run again.
pub(crate) struct Recorded {
    pub site: Site,
    pub id: KernelId,
    pub source: KernelSource,
    pub entry: String,
    pub variant: VariantMeta,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<KernelArg>,
}

impl Recorded {
    pub(crate) fn new(call: &EntryCall<'_>) -> Recorded {
        let s = call.source;
        Recorded {
            site: call.site.clone(),
            id: call.id.clone(),
            source: KernelSource {
                name: s.name,
                module: s.module,
                meta: s.meta,
                ptx: s.ptx,
                cubins: s.cubins,
            },
            entry: call.entry.to_string(),
            variant: call.variant.clone(),
            grid: call.grid,
            block: call.block,
            args: call.args.to_vec(),
        }
    }
}
