//! The generic launcher that every generated launch function calls. It owns
//! all launch-time checks — shapes against the metadata, dims that must agree,
//! buffer lengths, `@aligned` facts, vector base alignment, autotune variant
//! choice, grid and block against device limits — so that the generated code
//! stays a thin typed wrapper and a bad launch never reaches a backend.

use crate::device::{Device, EntryCall};
use crate::elem::{Elem, ScalarArg};
use crate::error::{AxisValue, LaunchError, Site};
use crate::tensor::Tensor;
use phobos_core::ast::ScalarTy;
use phobos_core::meta::{DimRefMeta, GridExpr, KernelMeta, ParamKindMeta, PtxParam, VariantMeta};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Everything a build embeds for one kernel: its metadata (RON text, as
/// `phobos_core::meta::KernelMeta` serializes it), its PTX per architecture
/// and, when ptxas was found at build time, its cubins per architecture.
#[derive(Debug)]
pub struct KernelSource {
    pub name: &'static str,
    /// The `.pho` file the kernel came from, as error messages name it.
    pub module: &'static str,
    pub meta: &'static str,
    /// `(arch, ptx)`, e.g. `(75, "...")` for sm_75, in ascending arch order.
    pub ptx: &'static [(u32, &'static str)],
    /// `(arch, cubin)`, in ascending arch order.
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

/// A kernel as generated bindings hold it: its embedded source and its
/// metadata, parsed on first use.
#[derive(Debug)]
pub struct Kernel {
    source: KernelSource,
    meta: OnceLock<Result<KernelMeta, String>>,
    id: OnceLock<KernelId>,
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

/// A tensor argument: what the checks need to know about a `Tensor<T>`.
pub struct TensorArg<'a> {
    device: &'a Device,
    elem: ScalarTy,
    shape: &'a [usize],
    address: u64,
    capacity: usize,
}

impl<'a, T: Elem> From<&'a Tensor<T>> for Arg<'a> {
    fn from(t: &'a Tensor<T>) -> Arg<'a> {
        Arg::Tensor(TensorArg {
            device: t.device(),
            elem: T::TY,
            shape: t.shape(),
            address: t.address(),
            capacity: t.capacity(),
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

/// One entry argument, encoded for the backend.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PtxArg {
    /// A tensor's base address (`.u64`).
    Ptr(u64),
    /// A runtime dim (`.s32`).
    Dim(i32),
    Scalar(ScalarArg),
}

impl PtxArg {
    /// The little-endian bytes of the `.param` value.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        match self {
            PtxArg::Ptr(a) => a.to_le_bytes().to_vec(),
            PtxArg::Dim(d) => d.to_le_bytes().to_vec(),
            PtxArg::Scalar(s) => s.bytes.clone(),
        }
    }
}

/// The values of a kernel's dims, each with the axis it was first read from.
type DimValues = HashMap<String, AxisValue>;

impl Kernel {
    pub const fn new(source: KernelSource) -> Kernel {
        Kernel {
            source,
            meta: OnceLock::new(),
            id: OnceLock::new(),
        }
    }

    pub fn source(&self) -> &KernelSource {
        &self.source
    }

    /// The kernel's identity (its content hashed once).
    pub(crate) fn id(&self) -> &KernelId {
        self.id.get_or_init(|| self.source.id())
    }

    fn site(&self, device: &Device) -> Site {
        Site {
            kernel: self.source.name.to_string(),
            module: self.source.module.to_string(),
            arch: device.arch_label(),
        }
    }

    /// The kernel's metadata (parsed from the embedded RON on first use).
    pub fn meta(&self) -> Result<&KernelMeta, String> {
        self.meta
            .get_or_init(|| ron::from_str(self.source.meta).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Checks a launch against the metadata and the device, then runs it.
    /// `grid` is required exactly when the kernel has no `@grid`.
    pub fn launch(
        &self,
        device: &Device,
        grid: Option<Grid>,
        args: &[Arg<'_>],
    ) -> Result<(), LaunchError> {
        let site = self.site(device);
        let meta = self.meta().map_err(|message| LaunchError::Metadata {
            site: Box::new(site.clone()),
            message,
        })?;
        let checker = Checker {
            site: &site,
            meta,
            device,
            args,
        };
        checker.check_kinds()?;
        let dims = checker.check_tensors()?;
        checker.check_aligned(&dims)?;
        checker.check_aliasing()?;
        let candidates = checker.matching_variants(&dims)?;
        let grid_for = |variant: &VariantMeta| checker.grid(grid, &dims, variant);
        // Without `@grid` the caller's grid was computed for one variant and
        // cannot follow another, so only a kernel whose `@grid` names the
        // tuning constants (or the CTA shape) is tuned; the others run their
        // first variant (the generated docs name it).
        let variant = if candidates.len() == 1 || !grid_follows_variants(meta) {
            candidates[0]
        } else {
            self.tuned_variant(&checker, &candidates, &dims, &grid_for)?
        };
        let call_grid = grid_for(variant)?;
        checker.check_block(variant)?;
        let ptx_args = checker.ptx_args(variant, &dims, &HashMap::new())?;
        device.launch_entry(&EntryCall {
            site: &site,
            id: self.id(),
            source: &self.source,
            entry: &variant.entry,
            variant,
            grid: call_grid,
            block: [variant.threads, 1, 1],
            args: &ptx_args,
        })
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
        candidates: &[&'m VariantMeta],
        dims: &DimValues,
        grid_for: &dyn Fn(&VariantMeta) -> Result<[u32; 3], LaunchError>,
    ) -> Result<&'m VariantMeta, LaunchError> {
        let device = checker.device;
        let Some(key) = device.tune_key(self.id(), &self.named_dims(checker.meta, dims)) else {
            return Ok(candidates[0]);
        };
        let by_entry = |entry: &str| candidates.iter().find(|v| v.entry == entry).copied();
        if let Some(v) = device.inner.tuning.lookup(&key).and_then(|e| by_entry(&e)) {
            return Ok(v);
        }
        let backend_err = |message: String| LaunchError::Backend {
            site: Box::new(checker.site.clone()),
            message,
        };
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
            let grid = match checker
                .check_block(variant)
                .and_then(|()| grid_for(variant))
            {
                Ok(g) => g,
                Err(e) => {
                    last_refusal = Some(e);
                    continue;
                }
            };
            let call = EntryCall {
                site: checker.site,
                id: self.id(),
                source: &self.source,
                entry: &variant.entry,
                variant,
                grid,
                block: [variant.threads, 1, 1],
                args: &checker.ptx_args(variant, dims, &scratch)?,
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

    /// The dims' values by name, in the kernel's declaration order.
    fn named_dims(&self, meta: &KernelMeta, dims: &DimValues) -> Vec<(String, usize)> {
        meta.dims
            .iter()
            .map(|d| (d.name.clone(), dims.get(&d.name).map_or(0, |a| a.value)))
            .collect()
    }
}

/// Untimed launches before timing a variant, and timed runs (the median
/// is kept).
const TUNE_WARMUPS: usize = 1;
const TUNE_RUNS: usize = 5;

struct Checker<'a, 'm> {
    site: &'a Site,
    meta: &'m KernelMeta,
    device: &'a Device,
    args: &'a [Arg<'a>],
}

impl<'m> Checker<'_, 'm> {
    fn arguments(&self, message: String) -> LaunchError {
        LaunchError::Arguments {
            site: Box::new(self.site.clone()),
            message,
        }
    }

    /// The arguments have the kernel's parameter kinds and element types.
    fn check_kinds(&self) -> Result<(), LaunchError> {
        if self.args.len() != self.meta.params.len() {
            return Err(self.arguments(format!(
                "{} arguments given, the kernel has {} parameters",
                self.args.len(),
                self.meta.params.len()
            )));
        }
        for (param, arg) in self.meta.params.iter().zip(self.args) {
            match (&param.kind, arg) {
                (ParamKindMeta::Tensor { elem, .. }, Arg::Tensor(t)) if *elem == t.elem => {}
                (ParamKindMeta::Scalar(ty), Arg::Scalar(s)) if *ty == s.ty => {}
                (kind, _) => {
                    let expected = match kind {
                        ParamKindMeta::Tensor { elem, .. } => format!("tensor<{}>", elem.name()),
                        ParamKindMeta::Scalar(ty) => ty.name().to_string(),
                    };
                    let given = match arg {
                        Arg::Tensor(t) => format!("tensor<{}>", t.elem.name()),
                        Arg::Scalar(s) => s.ty.name().to_string(),
                    };
                    return Err(self.arguments(format!(
                        "parameter `{}` is {expected}, the argument is {given}",
                        param.name
                    )));
                }
            }
        }
        Ok(())
    }

    /// Device, rank, constant axes, agreeing dims, dim range and buffer
    /// length of every tensor; returns the dims' values.
    fn check_tensors(&self) -> Result<DimValues, LaunchError> {
        let site = || Box::new(self.site.clone());
        let mut dims = DimValues::new();
        for (param, arg) in self.meta.params.iter().zip(self.args) {
            let (ParamKindMeta::Tensor { dims: axes, .. }, Arg::Tensor(t)) = (&param.kind, arg)
            else {
                continue;
            };
            if !t.device.same_as(self.device) {
                return Err(LaunchError::WrongDevice {
                    site: site(),
                    param: param.name.clone(),
                });
            }
            if t.shape.len() != axes.len() {
                return Err(LaunchError::Rank {
                    site: site(),
                    param: param.name.clone(),
                    expected: axes.len(),
                    actual: t.shape.len(),
                });
            }
            for (axis, (dim, &value)) in axes.iter().zip(t.shape).enumerate() {
                match dim {
                    DimRefMeta::Const(c) if *c as usize != value => {
                        return Err(LaunchError::ConstDim {
                            site: site(),
                            param: param.name.clone(),
                            axis,
                            expected: *c,
                            actual: value,
                        })
                    }
                    DimRefMeta::Const(_) => {}
                    DimRefMeta::Named(name) => {
                        let here = AxisValue {
                            param: param.name.clone(),
                            axis,
                            value,
                        };
                        match dims.get(name) {
                            Some(first) if first.value != value => {
                                return Err(LaunchError::DimMismatch {
                                    site: site(),
                                    dim: name.clone(),
                                    first: first.clone(),
                                    second: here,
                                })
                            }
                            Some(_) => {}
                            None => {
                                if value > i32::MAX as usize {
                                    return Err(LaunchError::DimTooLarge {
                                        site: site(),
                                        dim: name.clone(),
                                        value,
                                    });
                                }
                                dims.insert(name.clone(), here);
                            }
                        }
                    }
                }
            }
            let needed = t
                .shape
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))
                .unwrap_or(usize::MAX);
            if needed > t.capacity {
                return Err(LaunchError::BufferTooShort {
                    site: site(),
                    param: param.name.clone(),
                    shape: t.shape.to_vec(),
                    needed,
                    available: t.capacity,
                });
            }
        }
        Ok(dims)
    }

    /// No read-only tensor overlaps a written one: read-only tensors are
    /// loaded with `ld.global.nc`, whose cache is not kept coherent with
    /// the launch's own stores.
    fn check_aliasing(&self) -> Result<(), LaunchError> {
        let spans: Vec<(&str, bool, u64, u64)> = self
            .meta
            .params
            .iter()
            .zip(self.args)
            .filter_map(|(param, arg)| match (&param.kind, arg) {
                (ParamKindMeta::Tensor { written, elem, .. }, Arg::Tensor(t)) => {
                    let bytes = t.shape.iter().product::<usize>() as u64 * u64::from(elem.size());
                    Some((param.name.as_str(), *written, t.address, t.address + bytes))
                }
                _ => None,
            })
            .collect();
        for &(read, _, r0, r1) in spans.iter().filter(|s| !s.1) {
            for &(written, _, w0, w1) in spans.iter().filter(|s| s.1) {
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

    /// `@aligned` facts and the base alignment of vector-accessed tensors.
    fn check_aligned(&self, dims: &DimValues) -> Result<(), LaunchError> {
        for (dim, multiple) in &self.meta.aligned {
            if let Some(v) = dims.get(dim) {
                if *multiple != 0 && !(v.value as u64).is_multiple_of(*multiple) {
                    return Err(LaunchError::AlignedViolated {
                        site: Box::new(self.site.clone()),
                        dim: dim.clone(),
                        value: v.value,
                        multiple: *multiple,
                    });
                }
            }
        }
        for (param, arg) in self.meta.params.iter().zip(self.args) {
            if let (
                ParamKindMeta::Tensor {
                    vector_bytes, elem, ..
                },
                Arg::Tensor(t),
            ) = (&param.kind, arg)
            {
                let required = (*vector_bytes).max(elem.size());
                if required > 1 && !t.address.is_multiple_of(u64::from(required)) {
                    return Err(LaunchError::UnalignedBase {
                        site: Box::new(self.site.clone()),
                        param: param.name.clone(),
                        address: t.address,
                        required,
                    });
                }
            }
        }
        Ok(())
    }

    /// The variants whose autotuned dims equal the actual dims.
    fn matching_variants(&self, dims: &DimValues) -> Result<Vec<&'m VariantMeta>, LaunchError> {
        for (name, values) in &self.meta.autotune {
            if let Some(actual) = dims.get(name) {
                if !values.iter().any(|&v| v >= 0 && v as usize == actual.value) {
                    return Err(LaunchError::NoVariant {
                        site: Box::new(self.site.clone()),
                        dim: name.clone(),
                        value: actual.value,
                        candidates: values.clone(),
                    });
                }
            }
        }
        let matching: Vec<_> = self
            .meta
            .variants
            .iter()
            .filter(|v| {
                v.values.iter().all(|(name, value)| {
                    dims.get(name)
                        .is_none_or(|a| *value >= 0 && *value as usize == a.value)
                })
            })
            .collect();
        if matching.is_empty() {
            return Err(self.arguments(
                "the metadata lists no variant for these dims (the bindings are inconsistent)"
                    .to_string(),
            ));
        }
        Ok(matching)
    }

    /// The grid: the argument, or `@grid` evaluated over the dims; checked
    /// against the device limits.
    fn grid(
        &self,
        given: Option<Grid>,
        dims: &DimValues,
        variant: &VariantMeta,
    ) -> Result<[u32; 3], LaunchError> {
        let invalid = |message: String| LaunchError::InvalidGrid {
            site: Box::new(self.site.clone()),
            message,
        };
        let exprs = variant.grid.as_ref().or(self.meta.grid.as_ref());
        let grid: [u64; 3] = match (given, exprs) {
            (Some(Grid(g)), _) => g.map(u64::from),
            (None, Some(exprs)) => {
                if exprs.is_empty() || exprs.len() > 3 {
                    return Err(invalid(format!("@grid has {} expressions", exprs.len())));
                }
                let mut g = [1u64; 3];
                for (slot, expr) in g.iter_mut().zip(exprs) {
                    let v = eval_grid(expr, dims, variant).map_err(&invalid)?;
                    *slot = u64::try_from(v).map_err(|_| invalid(format!("@grid gives {v}")))?;
                }
                g
            }
            (None, None) => {
                return Err(self.arguments(
                    "the kernel has no @grid, so the launch needs a grid argument".to_string(),
                ))
            }
        };
        if grid.contains(&0) {
            return Err(invalid(format!("{grid:?} has an empty direction")));
        }
        let limit = self.device.limits().max_grid;
        if grid.iter().zip(limit).any(|(&g, l)| g > u64::from(l)) {
            return Err(LaunchError::GridTooLarge {
                site: Box::new(self.site.clone()),
                grid,
                limit,
            });
        }
        Ok(grid.map(|g| g as u32))
    }

    fn check_block(&self, variant: &VariantMeta) -> Result<(), LaunchError> {
        let limits = self.device.limits();
        if variant.threads == 0 || variant.threads > limits.max_threads_per_block {
            return Err(LaunchError::BlockTooLarge {
                site: Box::new(self.site.clone()),
                threads: variant.threads,
                limit: limits.max_threads_per_block,
            });
        }
        if variant.shared_bytes > limits.max_shared_bytes_per_block {
            return Err(LaunchError::SharedMemoryTooLarge {
                site: Box::new(self.site.clone()),
                bytes: variant.shared_bytes,
                limit: limits.max_shared_bytes_per_block,
            });
        }
        Ok(())
    }

    /// The entry's `.param` values in `ptx_params` order. `redirect` replaces
    /// some tensors' addresses (autotune scratch copies).
    fn ptx_args(
        &self,
        variant: &VariantMeta,
        dims: &DimValues,
        redirect: &HashMap<String, u64>,
    ) -> Result<Vec<PtxArg>, LaunchError> {
        let find = |name: &str| {
            self.meta
                .params
                .iter()
                .position(|p| p.name == name)
                .map(|i| &self.args[i])
                .ok_or_else(|| {
                    self.arguments(format!("the entry names an unknown parameter `{name}`"))
                })
        };
        variant
            .ptx_params
            .iter()
            .map(|p| match p {
                PtxParam::TensorPtr(name) => match find(name)? {
                    Arg::Tensor(t) => Ok(PtxArg::Ptr(
                        redirect.get(name).copied().unwrap_or(t.address),
                    )),
                    Arg::Scalar(_) => Err(self.arguments(format!("`{name}` is not a tensor"))),
                },
                PtxParam::Scalar(name, _) => match find(name)? {
                    Arg::Scalar(s) => Ok(PtxArg::Scalar(s.clone())),
                    Arg::Tensor(_) => Err(self.arguments(format!("`{name}` is not a scalar"))),
                },
                PtxParam::Dim(name) => dims
                    .get(name)
                    .map(|a| PtxArg::Dim(a.value as i32))
                    .ok_or_else(|| self.arguments(format!("no tensor carries dim `{name}`"))),
            })
            .collect()
    }
}

/// True when each variant carries its own `@grid` (metadata from this
/// compiler), or when the kernel's `@grid` refers to a free tuning constant
/// or to the CTA shape, so that it gives each variant its own grid.
fn grid_follows_variants(meta: &KernelMeta) -> bool {
    if meta.grid.is_some() && meta.variants.iter().all(|v| v.grid.is_some()) {
        return true;
    }
    fn mentions(e: &GridExpr, names: &[&str]) -> bool {
        match e {
            GridExpr::Const(_) => false,
            GridExpr::Dim(d) => names.contains(&d.as_str()),
            GridExpr::Binary(_, a, b)
            | GridExpr::Cdiv(a, b)
            | GridExpr::Min(a, b)
            | GridExpr::Max(a, b) => mentions(a, names) || mentions(b, names),
        }
    }
    let mut names: Vec<&str> = meta
        .autotune
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !meta.dims.iter().any(|d| d.name == *n))
        .collect();
    names.extend(["ctx.warps", "ctx.threads"]);
    meta.grid
        .as_ref()
        .is_some_and(|g| g.iter().any(|e| mentions(e, &names)))
}

/// Evaluates one `@grid` expression. Besides dims, the names `ctx.warps`,
/// `ctx.threads` and `ctx.lanes` stand for the variant's CTA shape.
fn eval_grid(expr: &GridExpr, dims: &DimValues, variant: &VariantMeta) -> Result<i64, String> {
    expr.eval(&|name| match name {
        "ctx.warps" => Some(i64::from(variant.threads / 32)),
        "ctx.threads" => Some(i64::from(variant.threads)),
        "ctx.lanes" => Some(32),
        _ => variant
            .values
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .or_else(|| dims.get(name).map(|a| a.value as i64)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use phobos_core::ast::BinOp;

    fn dims(pairs: &[(&str, usize)]) -> DimValues {
        pairs
            .iter()
            .map(|&(n, v)| {
                (
                    n.to_string(),
                    AxisValue {
                        param: "A".into(),
                        axis: 0,
                        value: v,
                    },
                )
            })
            .collect()
    }

    fn variant(threads: u32) -> VariantMeta {
        VariantMeta {
            entry: "k".into(),
            values: vec![("BLOCK".into(), 64)],
            threads,
            grid: None,
            ptx_params: vec![],
            shared_bytes: 0,
            shared_plan: vec![],
            barriers: vec![],
            loads: vec![],
        }
    }

    fn b(e: GridExpr) -> Box<GridExpr> {
        Box::new(e)
    }

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

    #[test]
    fn grid_expressions_evaluate_over_dims_tuning_values_and_the_cta_shape() {
        let d = dims(&[("N", 1000)]);
        let cdiv = GridExpr::Cdiv(
            b(GridExpr::Dim("N".into())),
            b(GridExpr::Dim("ctx.warps".into())),
        );
        assert_eq!(eval_grid(&cdiv, &d, &variant(128)), Ok(250));
        assert_eq!(eval_grid(&cdiv, &d, &variant(96)), Ok(334));
        let tuned = GridExpr::Binary(
            BinOp::Div,
            b(GridExpr::Dim("N".into())),
            b(GridExpr::Dim("BLOCK".into())),
        );
        assert_eq!(eval_grid(&tuned, &d, &variant(32)), Ok(15));
        let min = GridExpr::Min(
            b(GridExpr::Const(7)),
            b(GridExpr::Dim("ctx.threads".into())),
        );
        assert_eq!(eval_grid(&min, &d, &variant(32)), Ok(7));
        let missing = GridExpr::Dim("M".into());
        assert!(eval_grid(&missing, &d, &variant(32))
            .unwrap_err()
            .contains("`M`"));
        let overflow = GridExpr::Binary(
            BinOp::Mul,
            b(GridExpr::Const(i64::MAX)),
            b(GridExpr::Const(2)),
        );
        assert!(eval_grid(&overflow, &d, &variant(32)).is_err());
    }
}
