//! The generic launcher that every generated launch function calls. It owns
//! all launch-time checks — shapes against the metadata, dims that must agree,
//! buffer lengths, `@aligned` facts, vector base alignment, autotune variant
//! choice, grid and block against device limits — so that the generated code
//! stays a thin typed wrapper and a bad launch never reaches a backend.
//!
//! An accepted launch allocates nothing on the host (issue 31): its checks
//! and arguments live on the stack or in the binding's inline storage, the
//! call site's names are made once per kernel and architecture, a tuned
//! kernel's choice once per device and dims (`Kernel::tuned_variant`), and
//! only a refusal formats a message (`tests/launch_allocations.rs` counts).

use crate::call::{EntryCall, KernelId, KernelSource};
use crate::device::Device;
use crate::elem::{Elem, ScalarArg};
use crate::error::{LaunchError, Site};
use crate::sim_launch::{KernelArgs, Plan};
use crate::stream::Stream;
use crate::tensor::Tensor;
use phobos_meta::binding::{
    self, ArgShape, BindError, Binding, LaunchRequest, SmallVec, INLINE_DIMS,
};
use phobos_meta::meta::{KernelMeta, ParamKindMeta, VariantMeta};
use phobos_meta::ScalarTy;
use phobos_sim::KernelArg;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

/// An embedded image, aligned to 8 bytes: `include_bytes!` gives no
/// alignment, and the driver reads a cubin as an ELF file in place, whose
/// headers and sections it expects 8-byte aligned. Generated bindings embed
/// each cubin as `&Aligned { align: [], bytes: *include_bytes!(..) }.bytes`
/// (the empty `[u64; 0]` first gives the struct, and so `bytes` at offset
/// 0, the alignment of a `u64`).
#[repr(C)]
pub struct Aligned<B: ?Sized> {
    pub align: [u64; 0],
    pub bytes: B,
}

/// A kernel as generated bindings hold it: its embedded source and its
/// metadata, parsed on first use.
#[derive(Debug)]
pub struct Kernel {
    source: KernelSource,
    /// Autotune decisions the build embedded (`Kernel::with_tuning`), as
    /// RON text `Device::export_tuning` wrote; empty when none.
    tuning: &'static str,
    embedded: OnceLock<crate::tuning::Embedded>,
    meta: OnceLock<Result<KernelMeta, String>>,
    /// The metadata as each target whose variants differ sees it
    /// (`KernelMeta::for_target`), made once on the first launch of such
    /// an image.
    per_target: OnceLock<Vec<(u32, KernelMeta)>>,
    id: OnceLock<KernelId>,
    /// [`Kernel::site`]'s, by device architecture (`None`: the simulator).
    sites: Mutex<Vec<(Option<u32>, std::sync::Arc<Site>)>>,
    /// Autotune choices devices have made or been shipped for this
    /// kernel: a tuned launch finds its variant here without building the
    /// device's key (which allocates). `None` until the first (a
    /// `HashMap` cannot be made in a `const fn`).
    settled: Mutex<Option<HashMap<SettledKey, Settled>>>,
}

/// A device (`Device::id`: decisions belong to one device's state, shared
/// by its clones) and the dims' values in the kernel's declaration order:
/// inline, so that looking a choice up allocates nothing.
type SettledKey = (u64, SmallVec<[u64; INLINE_DIMS]>);

/// The variant a device's decisions gave for some dims, valid while its
/// [`crate::tuning::Tuning::generation`] is unchanged.
#[derive(Debug)]
struct Settled {
    /// The index of the variant in the metadata.
    variant: usize,
    /// The device's tuning generation when it was looked up.
    generation: u64,
}

/// The grid of CTAs, `[x, y, z]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid(pub [u32; 3]);

impl From<u32> for Grid {
    fn from(x: u32) -> Grid {
        Grid([x, 1, 1])
    }
}
impl From<(u32, u32)> for Grid {
    fn from((x, y): (u32, u32)) -> Grid {
        Grid([x, y, 1])
    }
}
impl From<(u32, u32, u32)> for Grid {
    fn from((x, y, z): (u32, u32, u32)) -> Grid {
        Grid([x, y, z])
    }
}
impl From<[u32; 3]> for Grid {
    fn from(g: [u32; 3]) -> Grid {
        Grid(g)
    }
}
impl From<[u32; 2]> for Grid {
    fn from([x, y]: [u32; 2]) -> Grid {
        Grid([x, y, 1])
    }
}

/// A shape as the launch binding takes it, without a copy: `usize` is
/// `u64` on the 64-bit targets the CUDA driver exists for.
#[cfg(target_pointer_width = "64")]
fn as_u64(shape: &[usize]) -> &[u64] {
    // SAFETY: same size and alignment (64-bit target), every bit pattern
    // valid for both; the lifetime is the input's.
    unsafe { std::slice::from_raw_parts(shape.as_ptr().cast::<u64>(), shape.len()) }
}

#[cfg(not(target_pointer_width = "64"))]
compile_error!("phobos-runtime needs a 64-bit target, as CUDA's device pointers are");

/// `ceil(a / b)`, the usual grid computation (`cdiv(n, 4)` CTAs of 4 warps
/// for `n` rows). Returns 0 when `b` is 0.
pub fn cdiv(a: usize, b: usize) -> u32 {
    if b == 0 {
        return 0;
    }
    u32::try_from(a.div_ceil(b)).unwrap_or(u32::MAX)
}

/// One argument of a launch, in the kernel's parameter order.
pub enum Arg<'a> {
    Tensor(TensorArg<'a>),
    Scalar(ScalarArg),
}

/// A tensor argument: what the checks need to know about a `Tensor<T>`
/// or another library's memory ([`crate::ForeignTensor`]).
pub struct TensorArg<'a> {
    device: &'a Device,
    elem: ScalarTy,
    shape: &'a [usize],
    address: u64,
    capacity: usize,
    /// Another library's memory: usable by any device of its context.
    foreign: bool,
    /// The stream a foreign borrow was made for (raw handle), whose
    /// ordering with the owner's work cudarc keeps; `None`: any stream.
    stream: Option<usize>,
    /// A Phobos tensor's buffer, which a graph capturing the launch keeps.
    buffer: Option<&'a std::sync::Arc<crate::device::Buffer>>,
}

impl<'a> TensorArg<'a> {
    pub(crate) fn foreign(
        device: &'a Device,
        stream: Option<usize>,
        elem: ScalarTy,
        shape: &'a [usize],
        address: u64,
        capacity: usize,
    ) -> TensorArg<'a> {
        TensorArg {
            device,
            elem,
            shape,
            address,
            capacity,
            foreign: true,
            stream,
            buffer: None,
        }
    }
}

impl<'a, T: Elem> From<&'a Tensor<T>> for Arg<'a> {
    fn from(t: &'a Tensor<T>) -> Arg<'a> {
        Arg::Tensor(TensorArg {
            device: t.device(),
            elem: T::TY,
            shape: t.shape(),
            address: t.address(),
            capacity: t.capacity(),
            foreign: false,
            stream: None,
            buffer: Some(&t.buf),
        })
    }
}

impl<'a, T: Elem> From<&'a mut Tensor<T>> for Arg<'a> {
    fn from(t: &'a mut Tensor<T>) -> Arg<'a> {
        Arg::from(&*t)
    }
}

impl Arg<'static> {
    /// A scalar argument.
    pub fn scalar<T: Elem>(value: T) -> Arg<'static> {
        Arg::Scalar(ScalarArg::new(value))
    }
}

impl Kernel {
    pub const fn new(source: KernelSource) -> Kernel {
        Kernel::with_tuning(source, "")
    }

    /// A kernel shipped with autotune decisions: `tuning` is a file
    /// [`Device::export_tuning`] wrote, embedded by the build
    /// (`phobos_build::Builder::tuning`). A launch whose GPU, compute
    /// capability, kernel content and dims it decides runs that variant
    /// without timing, on any driver version.
    pub const fn with_tuning(source: KernelSource, tuning: &'static str) -> Kernel {
        Kernel {
            source,
            tuning,
            embedded: OnceLock::new(),
            meta: OnceLock::new(),
            per_target: OnceLock::new(),
            id: OnceLock::new(),
            sites: Mutex::new(Vec::new()),
            settled: Mutex::new(None),
        }
    }

    pub fn source(&self) -> &KernelSource {
        &self.source
    }

    /// The kernel's identity (its content hashed once).
    pub(crate) fn id(&self) -> &KernelId {
        self.id.get_or_init(|| self.source.id())
    }

    /// Where errors of a launch on `device` say they happened; made once
    /// per architecture, so that a launch allocates nothing for it.
    fn site(&self, device: &Device) -> std::sync::Arc<Site> {
        let arch = device.arch();
        let mut sites = self.sites.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, site)) = sites.iter().find(|(a, _)| *a == arch) {
            return std::sync::Arc::clone(site);
        }
        let site = std::sync::Arc::new(Site {
            kernel: self.source.name.to_string(),
            module: self.source.module.to_string(),
            arch: device.arch_label(),
        });
        sites.push((arch, std::sync::Arc::clone(&site)));
        site
    }

    /// The kernel's metadata (parsed from the embedded RON on first use).
    pub fn meta(&self) -> Result<&KernelMeta, String> {
        self.meta
            .get_or_init(|| ron::from_str(self.source.meta).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The metadata a launch on `device` binds by: the variants of the
    /// image the device runs (`KernelMeta::variants_for`), which needs that
    /// image loaded when the build's targets compiled differently.
    fn meta_for(&self, device: &Device, site: &Site) -> Result<&KernelMeta, LaunchError> {
        let meta = self.meta().map_err(|message| LaunchError::Metadata {
            site: Box::new(site.clone()),
            message,
        })?;
        if meta.arch_variants.is_empty() {
            return Ok(meta);
        }
        let Some(arch) = device.image_arch(site, self.id(), &self.source)? else {
            return Ok(meta);
        };
        let per_target = self.per_target.get_or_init(|| {
            meta.arch_variants
                .iter()
                .filter_map(|&(a, _)| Some((a, meta.for_target(a)?)))
                .collect()
        });
        Ok(per_target
            .iter()
            .find(|(a, _)| *a == arch)
            .map_or(meta, |(_, m)| m))
    }

    /// Checks a launch against the metadata and the device, then runs it.
    /// `grid` is required exactly when the kernel has no `@grid`.
    pub fn launch(
        &self,
        device: &Device,
        grid: Option<Grid>,
        args: &[Arg<'_>],
    ) -> Result<(), LaunchError> {
        self.launch_with(device, None, grid, args)
    }

    /// [`Kernel::launch`] on `stream`: checked the same way, then issued
    /// on the stream, in order with the stream's other work; it returns
    /// before the kernel runs (on a GPU).
    pub fn launch_on(
        &self,
        stream: &Stream,
        grid: Option<Grid>,
        args: &[Arg<'_>],
    ) -> Result<(), LaunchError> {
        self.launch_with(stream.device(), Some(stream), grid, args)
    }

    fn launch_with(
        &self,
        device: &Device,
        stream: Option<&Stream>,
        grid: Option<Grid>,
        args: &[Arg<'_>],
    ) -> Result<(), LaunchError> {
        let site = self.site(device);
        let site = &*site;
        let meta = self.meta_for(device, site)?;
        let checker = Checker {
            site,
            meta,
            source: &self.source,
            device,
            stream,
            args,
        };
        checker.check_devices()?;
        let binding = checker.bind(grid)?;
        checker.check_aliasing()?;
        // A caller's grid (kernels without `@grid`) was computed for one
        // variant and cannot follow another, so only a kernel whose variants
        // each get their own `@grid` is tuned; the others run their first
        // variant (the generated docs name it).
        let variant = if binding.tunable() {
            self.tuned_variant(&checker, &binding)?
        } else {
            binding.first()
        };
        let plan = Plan::with_variant(binding, variant).map_err(|e| checker.refused(e))?;
        let args = checker.kernel_args(&plan, &HashMap::new())?;
        let call = EntryCall {
            site,
            id: self.id(),
            source: &self.source,
            entry: &variant.entry,
            variant,
            grid: plan.grid,
            block: plan.block(),
            args: &args,
            cu_stream: stream.map_or(0, |s| s.cu_stream() as usize),
            capturing: stream.is_some_and(Stream::is_capturing),
        };
        if let Some(s) = stream {
            let mut capture = s.capture();
            if let Some(c) = capture.as_mut() {
                // The graph keeps the tensors it replays on alive.
                for arg in checker.args {
                    if let Arg::Tensor(t) = arg {
                        match t.buffer {
                            Some(b) => c.keep.push(std::sync::Arc::clone(b)),
                            None => c.foreign = true,
                        }
                    }
                }
                if device.kind() == crate::BackendKind::Sim {
                    // The simulator records the launch; the graph runs it.
                    c.recorded.push(crate::call::Recorded::new(&call));
                    return Ok(());
                }
            }
        }
        device.launch_entry(&call)
    }

    /// Picks among variants that differ only in free tuning constants. On
    /// the simulator: the first variant (simulated time says nothing about
    /// a GPU). On a GPU: a decision already made for this GPU, driver,
    /// kernel content and dims (in this process, shipped with the program
    /// through `Device::preload_tuning`, or in the on-disk cache); else
    /// each variant that can launch is timed with CUDA events after a
    /// warm-up (the median of several runs, on scratch copies of the
    /// written tensors, so the real outputs are written exactly once), and
    /// the fastest is kept in memory and on disk.
    fn tuned_variant<'m>(
        &self,
        checker: &Checker<'_, 'm>,
        binding: &Binding<'m>,
    ) -> Result<&'m VariantMeta, LaunchError> {
        let device = checker.device;
        let candidates = &binding.candidates;
        let meta = checker.meta;
        let settled_key: SettledKey = (
            device.id(),
            meta.dims
                .iter()
                .map(|d| binding.dim(&d.name).unwrap_or(0))
                .collect(),
        );
        // Read before the lookup: a `preload` during it makes what is
        // remembered stale, not wrong.
        let generation = device.inner.tuning.generation();
        {
            let settled = self.settled.lock().unwrap_or_else(PoisonError::into_inner);
            let found = settled
                .as_ref()
                .and_then(|m| m.get(&settled_key))
                .filter(|s| s.generation == generation)
                .and_then(|s| {
                    let v = &meta.variants[s.variant];
                    candidates.iter().find(|c| std::ptr::eq(**c, v)).copied()
                });
            if let Some(v) = found {
                return Ok(v);
            }
        }
        let Some(key) = device.tune_key(self.id(), &named_dims(meta, binding)) else {
            return Ok(candidates[0]);
        };
        let by_entry = |entry: &str| candidates.iter().find(|v| v.entry == entry).copied();
        // What the lookup gives stays the answer until a `preload` changes
        // the generation: a decision of this process is never replaced, a
        // shipped one only by a `preload`. The build's embedded one is kept
        // as well, so for these dims the on-disk cache is read once: a
        // decision another process writes there later is not seen.
        let remember = |v: &'m VariantMeta| {
            if let Some(variant) = meta.variants.iter().position(|m| std::ptr::eq(m, v)) {
                self.settled
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_or_insert_with(HashMap::new)
                    .insert(
                        settled_key.clone(),
                        Settled {
                            variant,
                            generation,
                        },
                    );
            }
            v
        };
        if let Some(v) = device.inner.tuning.lookup(&key).and_then(|e| by_entry(&e)) {
            return Ok(remember(v));
        }
        if !self.tuning.is_empty() {
            let embedded = self
                .embedded
                .get_or_init(|| crate::tuning::Embedded::parse(self.tuning));
            if let Some(v) = embedded.lookup(&key).and_then(by_entry) {
                return Ok(remember(v));
            }
        }
        let backend_err = |message: String| LaunchError::Backend {
            site: Box::new(checker.site.clone()),
            message,
        };
        if checker.stream.is_some_and(Stream::is_capturing) {
            return Err(LaunchError::Capture {
                site: Box::new(checker.site.clone()),
                message: format!(
                    "the kernel's first launch for these dims ({}) times its autotune \
                     variants, which runs kernels and waits for them; launch it once \
                     before `begin_capture` (or ship the decision, \
                     `Device::preload_tuning`)",
                    named_dims(checker.meta, binding)
                        .iter()
                        .map(|(d, v)| format!("{d} = {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        // Timing runs on the default stream, which does not wait for a
        // non-blocking stream: the launch's stream must finish the work
        // that produces the inputs first.
        if let Some(stream) = checker.stream.filter(|s| !s.is_default()) {
            stream
                .synchronize()
                .map_err(|e| backend_err(format!("autotune: waiting for the stream: {e}")))?;
        }
        // Scratch copies of every written tensor, keyed by parameter name.
        let mut scratch = HashMap::new();
        let mut keep_alive = Vec::new();
        for (param, arg) in checker.meta.params.iter().zip(checker.args) {
            if let (
                ParamKindMeta::Tensor {
                    written: true,
                    elem,
                    ..
                },
                Arg::Tensor(t),
            ) = (&param.kind, arg)
            {
                let bytes = t.shape.iter().product::<usize>() * elem.size() as usize;
                let buf = device
                    .alloc_buffer(bytes, &format!("autotune scratch for {}", param.name))
                    .map_err(|e| backend_err(format!("autotune scratch: {e}")))?;
                device
                    .copy_within(buf.addr, t.address, bytes)
                    .map_err(|e| backend_err(format!("autotune scratch: {e}")))?;
                scratch.insert(param.name.clone(), buf.addr);
                keep_alive.push(buf);
            }
        }
        let mut best: Option<(f32, &'m VariantMeta)> = None;
        let mut last_refusal = None;
        for variant in candidates {
            // A variant the device cannot run is skipped, not fatal: another
            // one may fit.
            let plan = match Plan::with_variant(binding.clone(), variant) {
                Ok(plan) => plan,
                Err(e) => {
                    last_refusal = Some(checker.refused(e));
                    continue;
                }
            };
            let call = EntryCall {
                site: checker.site,
                id: self.id(),
                source: &self.source,
                entry: &variant.entry,
                variant,
                grid: plan.grid,
                block: plan.block(),
                args: &checker.kernel_args(&plan, &scratch)?,
                cu_stream: 0,
                capturing: false,
            };
            match device.time_entry(&call, TUNE_WARMUPS, TUNE_RUNS) {
                Ok(Some(ms)) => {
                    if best.is_none_or(|(t, _)| ms < t) {
                        best = Some((ms, variant));
                    }
                }
                Ok(None) => return Ok(candidates[0]),
                // A fault leaves the context unusable: no other variant can
                // run either.
                Err(e @ LaunchError::Fault { .. }) => return Err(e),
                Err(e) => last_refusal = Some(e),
            }
        }
        drop(keep_alive);
        let Some((_, winner)) = best else {
            return Err(last_refusal.unwrap_or_else(|| {
                checker.arguments("no autotune variant can launch on this device".to_string())
            }));
        };
        device.inner.tuning.decide(key, &winner.entry);
        Ok(winner)
    }
}

/// The dims' values by name, in the kernel's declaration order.
fn named_dims(meta: &KernelMeta, binding: &Binding<'_>) -> Vec<(String, usize)> {
    meta.dims
        .iter()
        .map(|d| {
            (
                d.name.clone(),
                binding.dim(&d.name).map_or(0, |v| v as usize),
            )
        })
        .collect()
}

/// Untimed launches before timing a variant, and timed runs (the median
/// is kept).
const TUNE_WARMUPS: usize = 1;
const TUNE_RUNS: usize = 5;

struct Checker<'a, 'm> {
    site: &'a Site,
    meta: &'m KernelMeta,
    source: &'a KernelSource,
    device: &'a Device,
    stream: Option<&'a Stream>,
    args: &'a [Arg<'a>],
}

impl<'m> Checker<'_, 'm> {
    fn arguments(&self, message: String) -> LaunchError {
        LaunchError::Arguments {
            site: Box::new(self.site.clone()),
            message,
        }
    }

    /// Every tensor lives on the device launched on (foreign memory: in
    /// its context), and foreign memory borrowed for a stream is launched
    /// on that stream.
    fn check_devices(&self) -> Result<(), LaunchError> {
        for (param, arg) in self.meta.params.iter().zip(self.args) {
            if let Arg::Tensor(t) = arg {
                let same = if t.foreign {
                    t.device.same_context(self.device)
                } else {
                    t.device.same_as(self.device)
                };
                if !same {
                    return Err(LaunchError::WrongDevice {
                        site: Box::new(self.site.clone()),
                        param: param.name.clone(),
                    });
                }
                let launched_on = self.stream.map_or(0, |s| s.cu_stream() as usize);
                if t.stream.is_some_and(|s| s != launched_on) {
                    return Err(self.arguments(format!(
                        "`{}` was borrowed for another stream than the one launched on; \
                         borrow it with the launch's stream (`stream.borrow`), so that \
                         cudarc orders the launch with the buffer's other uses",
                        param.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// The one launch binding (`phobos_meta::binding`) over the arguments'
    /// shapes, buffer sizes and addresses and the device's limits.
    fn bind(&self, grid: Option<Grid>) -> Result<Binding<'m>, LaunchError> {
        fn shape_of<'s>(a: &'s Arg<'_>) -> ArgShape<'s> {
            match a {
                Arg::Tensor(t) => ArgShape::Tensor {
                    elem: t.elem,
                    shape: as_u64(t.shape),
                    capacity: Some(t.capacity as u64),
                    address: Some(t.address),
                },
                Arg::Scalar(s) => ArgShape::Scalar(s.ty),
            }
        }
        // On the stack for up to `STACK_ARGS` arguments: a launch allocates
        // nothing for them.
        const STACK_ARGS: usize = 16;
        let (mut stack, heap);
        let args: &[ArgShape<'_>] = if self.args.len() <= STACK_ARGS {
            stack = [ArgShape::Scalar(ScalarTy::Bool); STACK_ARGS];
            for (slot, a) in stack.iter_mut().zip(self.args) {
                *slot = shape_of(a);
            }
            &stack[..self.args.len()]
        } else {
            heap = self.args.iter().map(shape_of).collect::<Vec<_>>();
            &heap
        };
        let request = LaunchRequest {
            args,
            grid: grid.map(|g| g.0),
            picked: &[],
            limits: self.device.launch_limits(self.source),
        };
        binding::bind(self.meta, &request).map_err(|e| self.refused(e))
    }

    /// The `LaunchError` for a refusal of the binding: the binding's own
    /// error, with the call site.
    fn refused(&self, error: BindError) -> LaunchError {
        LaunchError::Bind {
            site: Box::new(self.site.clone()),
            error,
        }
    }

    /// No read-only tensor overlaps a written one: read-only tensors are
    /// loaded with `ld.global.nc`, whose cache is not kept coherent with
    /// the launch's own stores.
    fn check_aliasing(&self) -> Result<(), LaunchError> {
        // Every pair, without collecting them: a launch allocates nothing
        // for its checks that it can avoid.
        let spans = || {
            self.meta
                .params
                .iter()
                .zip(self.args)
                .filter_map(|(param, arg)| match (&param.kind, arg) {
                    (ParamKindMeta::Tensor { written, elem, .. }, Arg::Tensor(t)) => {
                        let bytes =
                            t.shape.iter().product::<usize>() as u64 * u64::from(elem.size());
                        Some((param.name.as_str(), *written, t.address, t.address + bytes))
                    }
                    _ => None,
                })
        };
        for (read, _, r0, r1) in spans().filter(|s| !s.1) {
            for (written, _, w0, w1) in spans().filter(|s| s.1) {
                if r0 < w1 && w0 < r1 {
                    return Err(LaunchError::Aliasing {
                        site: Box::new(self.site.clone()),
                        read: read.to_string(),
                        written: written.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The entry's arguments in `.param` order (the one simulated launch
    /// road's, [`Plan::kernel_args`], which the CUDA backend passes too):
    /// a tensor's address, which `redirect` replaces for some tensors
    /// (autotune scratch copies), a scalar's bytes.
    fn kernel_args(
        &self,
        plan: &Plan<'_>,
        redirect: &HashMap<String, u64>,
    ) -> Result<KernelArgs, LaunchError> {
        plan.kernel_args_with(
            |i| match &self.args[i] {
                Arg::Tensor(t) => {
                    let name = &self.meta.params[i].name;
                    Some(KernelArg::U64(
                        redirect.get(name).copied().unwrap_or(t.address),
                    ))
                }
                Arg::Scalar(s) => Some(s.kernel_arg()),
            },
            // Each backend encodes its own tensor maps: the driver's opaque
            // `CUtensorMap`, or the simulator's encoding of the same map.
            |tensor, spec, layout| match self.device.cuda_backend() {
                Some(_) => crate::cuda::CudaBackend::encode_tensor_map(spec, layout)
                    .map(KernelArg::TensorMap)
                    .map_err(|message| LaunchError::Backend {
                        site: Box::new(self.site.clone()),
                        message: format!(
                            "the tensor map of `{}`: {message}",
                            self.meta.params[tensor].name
                        ),
                    }),
                None => {
                    crate::sim_launch::sim_tensor_map(spec, layout).map_err(|e| self.refused(e))
                }
            },
            |e| self.refused(e),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &'static str, cubin: &'static [u8]) -> KernelSource {
        KernelSource {
            name,
            module: "m.pho",
            meta: "",
            ptx: &[],
            cubins: Box::leak(vec![(86, cubin)].into_boxed_slice()),
        }
    }

    #[test]
    fn cubin_only_kernels_have_distinct_identities() {
        // Every cubin-only kernel has an empty PTX table; the caches once
        // keyed by that table's address mixed them up.
        let (a, b) = (source("a", b"cubin a"), source("b", b"cubin b"));
        assert_ne!(a.id(), b.id());
        // Same name, other content (a rebuilt kernel): another identity.
        assert_ne!(source("a", b"cubin a").id(), source("a", b"cubin A").id());
        // The same content embedded twice is one kernel, and the hash is
        // stable across runs (persisted caches rely on it).
        assert_eq!(source("a", b"cubin a").id(), a.id());
        assert_eq!(a.content_hash(), 0x72dd_820e_4c9b_2573);
    }
}

#[cfg(test)]
mod aligned_tests {
    use super::Aligned;

    // Odd lengths, one after another, as a binary's read-only data holds
    // several embedded images.
    static IMAGES: [&[u8]; 4] = [
        &Aligned {
            align: [],
            bytes: *b"a",
        }
        .bytes,
        &Aligned {
            align: [],
            bytes: *b"abc",
        }
        .bytes,
        &Aligned {
            align: [],
            bytes: *b"abcdefghi",
        }
        .bytes,
        &Aligned {
            align: [],
            bytes: *b"ab",
        }
        .bytes,
    ];

    #[test]
    fn embedded_images_are_8_byte_aligned() {
        for (i, image) in IMAGES.iter().enumerate() {
            assert_eq!(image.as_ptr() as usize % 8, 0, "image {i}");
        }
        assert_eq!(IMAGES[2], b"abcdefghi");
    }
}
