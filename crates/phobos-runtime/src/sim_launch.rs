//! The one road from a compiled kernel to a simulated launch: bind the
//! arguments' shapes ([`phobos_meta::binding`]), choose the variant, check
//! its grid and block against the target's limits ([`Plan`]), turn the
//! entry's `.param` values into kernel arguments ([`Plan::kernel_args`]),
//! and run the variant's entry with its dynamic shared memory ([`run`],
//! [`run_split`]), watched by any observer, under the caller's check
//! options.
//!
//! Every simulated launch goes this way: the runtime's simulator backend
//! (its `Kernel::launch` plans the launch for both backends, and the CUDA
//! backend passes the same arguments), `phobos sim`, `phobos explain` and
//! `phobos profile` (through `phobos_explain`), the conformance harness and
//! the fuzzer. What stays with each caller is where its data comes from
//! (`.npy` files, random inputs, host tensors), its own memory, and the
//! words of its own refusals (the binding's [`BindError`] with their notes).
//!
//! It lives in the runtime because the runtime is the crate that depends on
//! both the binding (phobos-core) and the simulator (phobos-sim), which must
//! not know about each other.

use phobos_meta::binding::{
    self, BindError, Binding, LaunchRequest, Limits, PtxValue, SmallVec, TensorMapLayout,
    TensorMapSpec,
};
use phobos_meta::meta::{KernelMeta, VariantMeta};
use phobos_sim::{
    CheckReport, Device, KernelArg, Launch, LaunchOptions, LaunchStats, Module, Observer, SimError,
    Space, SplitObserver,
};

/// What a simulated launch of PTX built for `sm_{arch}` is bound against:
/// the grid and block limits every GPU from sm_75 on has, and the shared
/// memory one CTA of that target may use once the launch opts in
/// (`phobos_sim::max_shared_bytes`: 64 KB on sm_75, 163 KB on sm_80, 227 KB
/// on sm_90). A plan above 48 KB is passed as dynamic shared memory
/// ([`VariantMeta::dynamic_shared_bytes`]), as on a GPU.
pub fn limits(arch: u32) -> Limits {
    Limits {
        max_shared_bytes_per_block: phobos_sim::max_shared_bytes(Some(arch)),
        ..Limits::SM75
    }
}

/// Kernel arguments a launch holds without allocating.
pub const INLINE_KERNEL_ARGS: usize = 16;

/// An entry's kernel arguments in `.param` order ([`Plan::kernel_args`]):
/// inline up to [`INLINE_KERNEL_ARGS`], so that an accepted launch
/// allocates nothing for them; a slice by `Deref`.
pub type KernelArgs = SmallVec<[KernelArg; INLINE_KERNEL_ARGS]>;

/// A bound launch and the variant it runs, with the variant's grid
/// (checked against the limits) and its block and shared memory (checked
/// against the device).
#[derive(Clone, Debug)]
pub struct Plan<'m> {
    pub binding: Binding<'m>,
    pub variant: &'m VariantMeta,
    pub grid: [u32; 3],
}

impl<'m> Plan<'m> {
    /// Binds a launch of `meta` and plans its first candidate variant: what
    /// runs when nothing is timed.
    pub fn bind(meta: &'m KernelMeta, request: &LaunchRequest<'_>) -> Result<Plan<'m>, BindError> {
        let binding = binding::bind(meta, request)?;
        let variant = binding.first();
        Plan::with_variant(binding, variant)
    }

    /// Plans `variant`, one of the binding's candidates (the runtime's
    /// timed choice).
    pub fn with_variant(
        binding: Binding<'m>,
        variant: &'m VariantMeta,
    ) -> Result<Plan<'m>, BindError> {
        let grid = check_variant(&binding, variant)?;
        Ok(Plan {
            binding,
            variant,
            grid,
        })
    }

    /// The CTA shape: the variant's threads along x.
    pub fn block(&self) -> [u32; 3] {
        [self.variant.threads, 1, 1]
    }

    /// The entry's kernel arguments in `.param` order: each tensor's and
    /// scalar's from `arg`, given the parameter's index in the kernel's
    /// declaration order (a buffer, or a device address as
    /// [`KernelArg::U64`]; a scalar's bytes), each runtime dim's value
    /// from the binding, as `.s32`, and each tensor map encoded for the
    /// simulator ([`sim_tensor_map`]) from its tensor's argument and bound
    /// shape. A parameter `arg` has nothing for means the metadata and the
    /// arguments disagree ([`BindError::Inconsistent`]).
    pub fn kernel_args(
        &self,
        arg: impl FnMut(usize) -> Option<KernelArg>,
    ) -> Result<KernelArgs, BindError> {
        self.kernel_args_with(arg, |_, map, layout| sim_tensor_map(map, layout), |e| e)
    }

    /// [`Plan::kernel_args`] with the tensor maps encoded by `encode`
    /// (the CUDA backend's `cuTensorMapEncodeTiled`), given the tensor's
    /// parameter index, the map's spec and its layout (checked against
    /// TMA's rules: [`TensorMapSpec::layout`]); `refused` turns the
    /// binding's refusals into the caller's error.
    pub fn kernel_args_with<E>(
        &self,
        mut arg: impl FnMut(usize) -> Option<KernelArg>,
        mut encode: impl FnMut(usize, &TensorMapSpec, &TensorMapLayout) -> Result<KernelArg, E>,
        refused: impl Fn(BindError) -> E,
    ) -> Result<KernelArgs, E> {
        let params = &self.binding.meta().params;
        let missing = |i: usize| {
            BindError::Inconsistent(format!(
                "the entry's parameter `{}` has no argument",
                params[i].name
            ))
        };
        self.binding
            .ptx_args(self.variant)
            .map(|value| match value.map_err(&refused)? {
                PtxValue::Tensor(i) | PtxValue::Scalar(i) => {
                    arg(i).ok_or_else(|| refused(missing(i)))
                }
                PtxValue::Dim(v) => Ok(KernelArg::I32(v)),
                PtxValue::TensorMap { tensor, map } => {
                    let address = match arg(tensor) {
                        Some(KernelArg::U64(a)) => a,
                        Some(KernelArg::Buffer(id)) => id.address(),
                        _ => return Err(refused(missing(tensor))),
                    };
                    let shape = self
                        .binding
                        .tensor_shape(tensor)
                        .ok_or_else(|| refused(missing(tensor)))?;
                    let layout = map
                        .layout(&params[tensor].name, address, &shape)
                        .map_err(&refused)?;
                    encode(tensor, &map, &layout)
                }
            })
            .collect()
    }

    /// Runs the planned entry of `module` on `device` ([`run`]).
    pub fn run(
        &self,
        device: &Device,
        module: &Module,
        args: &[KernelArg],
        opts: &LaunchOptions,
        observer: Option<&mut dyn Observer>,
    ) -> Result<LaunchStats, SimError> {
        run(
            device,
            module,
            self.variant,
            self.grid,
            args,
            opts,
            observer,
        )
    }

    /// Runs the planned entry of `module` on `device` on every core,
    /// watched by a split observer ([`run_split`]).
    pub fn run_split<O: SplitObserver>(
        &self,
        device: &Device,
        module: &Module,
        args: &[KernelArg],
        opts: &LaunchOptions,
        observer: &mut O,
    ) -> Result<LaunchStats, SimError> {
        run_split(
            device,
            module,
            self.variant,
            self.grid,
            args,
            opts,
            observer,
        )
    }
}

/// A tensor map as the simulator reads it: `spec` and `layout` as a
/// [`phobos_sim::tensor_map::TensorMap`] (element strides 1, the spec's
/// swizzle and L2 promotion), encoded into the 128 bytes of its `.param`
/// (inline: [`KernelArg::TensorMap`]).
/// The spec and the layout were checked against the driver's rules; a map
/// the simulator still refuses is inconsistent metadata.
pub fn sim_tensor_map(
    spec: &TensorMapSpec,
    layout: &TensorMapLayout,
) -> Result<KernelArg, BindError> {
    use phobos_sim::tensor_map::{Swizzle, TensorMap, TensorMapType};
    let inconsistent = |what: &str| BindError::Inconsistent(format!("a tensor map {what}"));
    let map = TensorMap {
        data_type: TensorMapType::from_code(spec.data_type())
            .ok_or_else(|| inconsistent("has an element type the simulator lacks"))?,
        rank: u32::from(spec.rank),
        address: layout.address,
        dims: layout.dims,
        strides: layout.strides,
        box_dims: spec.box_dims,
        element_strides: [1; 5],
        swizzle: Swizzle::from_code(spec.swizzle_code())
            .ok_or_else(|| inconsistent("has a swizzle the simulator lacks"))?,
        l2_promotion: TensorMapSpec::L2_PROMOTION,
    };
    let bytes = map
        .encode()
        .map_err(|e| inconsistent(&format!("is refused: {e}")))?;
    Ok(KernelArg::TensorMap(bytes))
}

/// The grid of `variant` (the caller's, or its `@grid` over the dims)
/// checked against the limits, then its block and shared memory: what
/// [`Plan::with_variant`] checks, for a caller that weighs candidates
/// before it picks one.
pub fn check_variant(binding: &Binding<'_>, variant: &VariantMeta) -> Result<[u32; 3], BindError> {
    let grid = binding.grid(variant)?;
    binding.check_block(variant)?;
    Ok(grid)
}

/// `opts` for a launch of `variant`: its dynamic shared memory (all of
/// its plan above 48 KB, where the entry declares its buffer
/// `.extern .shared`; else none), whatever `opts` said.
pub fn options(variant: &VariantMeta, opts: &LaunchOptions) -> LaunchOptions {
    LaunchOptions {
        dynamic_shared_bytes: variant.dynamic_shared_bytes(),
        ..opts.clone()
    }
}

/// Runs `variant`'s entry of `module` on `device`: `grid` CTAs of the
/// variant's threads, with `args` in `.param` order and the variant's
/// dynamic shared memory ([`options`]). With an observer, CTAs run on the
/// calling thread in order.
pub fn run(
    device: &Device,
    module: &Module,
    variant: &VariantMeta,
    grid: [u32; 3],
    args: &[KernelArg],
    opts: &LaunchOptions,
    observer: Option<&mut dyn Observer>,
) -> Result<LaunchStats, SimError> {
    device.launch(
        Launch::new(module, &variant.entry, grid, [variant.threads, 1, 1]),
        args,
        &options(variant, opts),
        observer,
    )
}

/// [`run`] on every core, with a copy of `observer` per worker thread,
/// joined back.
pub fn run_split<O: SplitObserver>(
    device: &Device,
    module: &Module,
    variant: &VariantMeta,
    grid: [u32; 3],
    args: &[KernelArg],
    opts: &LaunchOptions,
    observer: &mut O,
) -> Result<LaunchStats, SimError> {
    device.launch_split(
        Launch::new(module, &variant.entry, grid, [variant.threads, 1, 1]),
        args,
        &options(variant, opts),
        observer,
    )
}

/// Names the shared tile (or CTA-collective scratch) a check report's shared
/// address falls in, from the variant's shared-memory plan: the simulator
/// knows only the PTX's one shared array.
pub fn name_shared_buffer(report: &mut CheckReport, variant: &VariantMeta) {
    if report.space != Some(Space::Shared) {
        return;
    }
    let Some(offset) = report.address else { return };
    let line = report.source.as_ref().map(|s| s.line);
    if let Some(b) = variant.shared_buffer_at(offset, line) {
        report.tensor = Some(format!(
            "shared `{}` (bytes {}..{} of the plan)",
            b.name,
            b.offset,
            b.offset + b.bytes
        ));
    }
}
