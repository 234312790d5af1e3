//! The simulator harness of the conformance tests: compile a kernel, put
//! host tensors into a simulated device, launch the right variant with the
//! kernel's grid, read the results back and compare them with a Rust
//! reference.
//!
//! - Read-only tensors are filled with random values from a fixed seed
//!   (floats uniform in [-1, 1), integers over their whole range unless a
//!   test says otherwise).
//! - Written tensors are **poisoned** before the run unless the test gives
//!   their initial contents: floats are all-ones bytes (a NaN in every float
//!   type), integers and bools are `0xA5` bytes. A reference leaves the
//!   poison where the kernel must not write, so an element the kernel fails
//!   to write (or writes where it must not) shows up as a mismatch.
//! - The launch takes the one simulated launch road
//!   (`phobos_runtime::sim_launch`): the binding picks the variant, the
//!   grid and block are checked against the target's limits, parameters
//!   are passed in the variant's `ptx_params` order (tensor pointers and
//!   scalars in declaration order, then the runtime dims as `.s32`, then
//!   an sm_90a entry's tensor maps, which the road encodes from the
//!   tensor's buffer and bound shape: `sim_launch::sim_tensor_map`), and a
//!   plan above 48 KB goes as dynamic shared memory.
//! - Comparison ([`Outcome::check`]): integers and bools exactly; `f32` and
//!   `f64` within relative error `1e-5` of the reference (computed in
//!   `f64`), `|got - want| <= 1e-5 * max(|want|, floor)`, where the absolute
//!   floor is `1.0` by default: inputs are drawn from [-1, 1), so a result
//!   below 1 in magnitude (a sum that cancels, a sine near zero) is compared
//!   with absolute error `1e-5` rather than a relative error that rounding
//!   of its terms could never meet. `f16`/`bf16` results are compared
//!   exactly (their reference rounds after every operation, as the language
//!   does). An expected NaN (poison) needs a NaN.

use crate::executor::Executor;
use half::{bf16, f16};
use phobos_core::ast::ScalarTy;
use phobos_core::binding::{bind, ArgShape, Binding, LaunchRequest};
use phobos_core::meta::{DimRefMeta, KernelMeta, ParamKindMeta, VariantMeta};
use phobos_core::{CompileOptions, CompiledKernel};
use phobos_runtime::sim_launch::{self, Plan};
use phobos_sim::{Device, KernelArg, LaunchOptions, LaunchStats, Module, SimError};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// Bytes per element of a scalar type in a tensor.
pub fn elem_bytes(ty: ScalarTy) -> usize {
    match ty {
        ScalarTy::Bool | ScalarTy::I8 | ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => 1,
        ScalarTy::I16 | ScalarTy::U16 | ScalarTy::F16 | ScalarTy::BF16 => 2,
        ScalarTy::I32 | ScalarTy::U32 | ScalarTy::F32 => 4,
        ScalarTy::I64 | ScalarTy::U64 | ScalarTy::F64 => 8,
    }
}

/// Whether the type is a floating-point type.
pub fn is_float(ty: ScalarTy) -> bool {
    ty.is_float()
}

/// A host tensor: element type, shape and little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub elem: ScalarTy,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

impl Tensor {
    /// A zero-filled tensor.
    pub fn zeros(elem: ScalarTy, shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor {
            elem,
            shape: shape.to_vec(),
            bytes: vec![0; n * elem_bytes(elem)],
        }
    }

    /// The poisoned tensor an output starts as (see the module docs).
    pub fn poisoned(elem: ScalarTy, shape: &[usize]) -> Tensor {
        let mut t = Tensor::zeros(elem, shape);
        let b = if is_float(elem) { 0xFF } else { 0xA5 };
        t.bytes.iter_mut().for_each(|x| *x = b);
        t
    }

    /// Random contents from `gen`.
    pub fn random(elem: ScalarTy, shape: &[usize], gen: Gen, rng: &mut StdRng) -> Tensor {
        let mut t = Tensor::zeros(elem, shape);
        for i in 0..t.len() {
            match gen {
                Gen::Float(lo, hi) => t.set_f(i, rng.gen_range(lo..hi)),
                Gen::Int(lo, hi) => t.set_i(i, rng.gen_range(lo..=hi)),
                Gen::Full => {
                    if is_float(elem) {
                        t.set_f(i, rng.gen_range(-1.0..1.0));
                    } else {
                        let mut b = vec![0u8; elem_bytes(elem)];
                        rng.fill(&mut b[..]);
                        if elem == ScalarTy::Bool {
                            b[0] &= 1;
                        }
                        let w = elem_bytes(elem);
                        t.bytes[i * w..(i + 1) * w].copy_from_slice(&b);
                    }
                }
            }
        }
        t
    }

    pub fn from_f32(shape: &[usize], v: &[f32]) -> Tensor {
        let mut t = Tensor::zeros(ScalarTy::F32, shape);
        assert_eq!(v.len(), t.len());
        for (i, x) in v.iter().enumerate() {
            t.set_f(i, f64::from(*x));
        }
        t
    }

    pub fn from_i32(shape: &[usize], v: &[i32]) -> Tensor {
        let mut t = Tensor::zeros(ScalarTy::I32, shape);
        assert_eq!(v.len(), t.len());
        for (i, x) in v.iter().enumerate() {
            t.set_i(i, i64::from(*x));
        }
        t
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn raw(&self, i: usize) -> u64 {
        let w = elem_bytes(self.elem);
        let mut b = [0u8; 8];
        b[..w].copy_from_slice(&self.bytes[i * w..(i + 1) * w]);
        u64::from_le_bytes(b)
    }

    fn set_raw(&mut self, i: usize, v: u64) {
        let w = elem_bytes(self.elem);
        self.bytes[i * w..(i + 1) * w].copy_from_slice(&v.to_le_bytes()[..w]);
    }

    /// Element `i` as `f64` (integers converted exactly, bool as 0/1).
    pub fn f(&self, i: usize) -> f64 {
        let r = self.raw(i);
        match self.elem {
            ScalarTy::F16 => f16::from_bits(r as u16).to_f64(),
            ScalarTy::BF16 => bf16::from_bits(r as u16).to_f64(),
            ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => phobos_core::f8::decode(r as u8, self.elem),
            ScalarTy::F32 => f64::from(f32::from_bits(r as u32)),
            ScalarTy::F64 => f64::from_bits(r),
            ScalarTy::U64 => r as f64,
            _ => self.i(i) as f64,
        }
    }

    /// Element `i` as a sign- or zero-extended integer (u64 as its bits).
    pub fn i(&self, i: usize) -> i64 {
        let r = self.raw(i);
        match self.elem {
            ScalarTy::Bool | ScalarTy::U8 | ScalarTy::U16 | ScalarTy::U32 | ScalarTy::U64 => {
                r as i64
            }
            ScalarTy::I8 => i64::from(r as u8 as i8),
            ScalarTy::I16 => i64::from(r as u16 as i16),
            ScalarTy::I32 => i64::from(r as u32 as i32),
            ScalarTy::I64 => r as i64,
            _ => self.f(i) as i64,
        }
    }

    /// Sets element `i`, rounding to nearest for floats.
    pub fn set_f(&mut self, i: usize, v: f64) {
        let r = match self.elem {
            ScalarTy::F16 => u64::from(f16::from_f64(v).to_bits()),
            ScalarTy::BF16 => u64::from(bf16::from_f64(v).to_bits()),
            ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => u64::from(phobos_core::f8::encode(v, self.elem)),
            ScalarTy::F32 => u64::from((v as f32).to_bits()),
            ScalarTy::F64 => v.to_bits(),
            _ => return self.set_i(i, v as i64),
        };
        self.set_raw(i, r);
    }

    /// Sets element `i`, wrapping to the element type.
    pub fn set_i(&mut self, i: usize, v: i64) {
        if is_float(self.elem) {
            return self.set_f(i, v as f64);
        }
        let v = if self.elem == ScalarTy::Bool {
            u64::from(v != 0)
        } else {
            v as u64
        };
        self.set_raw(i, v);
    }

    /// All elements as `f64`.
    pub fn fs(&self) -> Vec<f64> {
        (0..self.len()).map(|i| self.f(i)).collect()
    }

    /// All elements as integers.
    pub fn is(&self) -> Vec<i64> {
        (0..self.len()).map(|i| self.i(i)).collect()
    }

    /// Row-major flat index.
    pub fn at(&self, idx: &[usize]) -> usize {
        assert_eq!(idx.len(), self.shape.len());
        idx.iter().zip(&self.shape).fold(0, |acc, (i, d)| {
            assert!(i < d, "index {idx:?} outside shape {:?}", self.shape);
            acc * d + i
        })
    }

    /// Whether element `i` still holds the poison pattern.
    pub fn is_poison(&self, i: usize) -> bool {
        let w = elem_bytes(self.elem);
        let b = if is_float(self.elem) { 0xFF } else { 0xA5 };
        self.bytes[i * w..(i + 1) * w].iter().all(|x| *x == b)
    }
}

/// How to fill a random input.
#[derive(Clone, Copy, Debug)]
pub enum Gen {
    /// Floats uniform in [-1, 1), integers over their whole range.
    Full,
    /// Uniform in [lo, hi), rounded to the element type.
    Float(f64, f64),
    /// Integers uniform in [lo, hi].
    Int(i64, i64),
}

/// A scalar kernel argument.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    Bool(bool),
    I8(i8),
    U8(u8),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F16(f16),
    BF16(bf16),
    F32(f32),
    F64(f64),
}

impl Scalar {
    fn bytes(self) -> Vec<u8> {
        match self {
            Scalar::Bool(b) => vec![u8::from(b)],
            Scalar::I8(v) => v.to_le_bytes().to_vec(),
            Scalar::U8(v) => v.to_le_bytes().to_vec(),
            Scalar::I16(v) => v.to_le_bytes().to_vec(),
            Scalar::U16(v) => v.to_le_bytes().to_vec(),
            Scalar::I32(v) => v.to_le_bytes().to_vec(),
            Scalar::U32(v) => v.to_le_bytes().to_vec(),
            Scalar::I64(v) => v.to_le_bytes().to_vec(),
            Scalar::U64(v) => v.to_le_bytes().to_vec(),
            Scalar::F16(v) => v.to_bits().to_le_bytes().to_vec(),
            Scalar::BF16(v) => v.to_bits().to_le_bytes().to_vec(),
            Scalar::F32(v) => v.to_le_bytes().to_vec(),
            Scalar::F64(v) => v.to_le_bytes().to_vec(),
        }
    }
}

/// Compile `src` (named `file_name` in diagnostics and `.loc`), panicking
/// with the rendered diagnostics when it does not compile.
///
/// It compiles for sm_75, or for the target a `// needs: sm_N` header
/// names (see `CorpusFile::min_arch`).
pub fn compile_src(src: &str, file_name: &str) -> Vec<CompiledKernel> {
    let arch = crate::min_arch_of(src);
    let (kernels, diags) = phobos_core::compile(src, file_name, &CompileOptions::for_arch(arch));
    if diags.iter().any(|d| d.is_error()) || kernels.is_empty() {
        panic!(
            "{file_name} did not compile:\n{}",
            phobos_core::render::render(&diags, file_name, src, false)
        );
    }
    kernels
}

thread_local! {
    static SEED: std::cell::Cell<u64> = const { std::cell::Cell::new(0x5eed_0001) };
}

/// The seed [`Case`]s created on this thread now start from.
pub fn current_seed() -> u64 {
    SEED.with(|s| s.get())
}

/// Runs `f` with every [`Case`] it creates seeded from `seed` (on this
/// thread), so a whole table of tests can be rerun on other inputs.
pub fn with_seed<R>(seed: u64, f: impl FnOnce() -> R) -> R {
    let old = SEED.with(|s| s.replace(seed));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    SEED.with(|s| s.set(old));
    match r {
        Ok(r) => r,
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// One launch of one kernel being prepared: dims, tensors, scalars.
#[derive(Clone)]
pub struct Case {
    pub kernel: CompiledKernel,
    /// The target the kernel was compiled for (`75` for sm_75): the launch
    /// is bound against its limits ([`sim_launch::limits`]).
    pub arch: u32,
    pub dims: BTreeMap<String, i64>,
    pub tensors: BTreeMap<String, Tensor>,
    pub scalars: BTreeMap<String, Scalar>,
    /// Autotune values that pick the variant (free constants; dims are
    /// matched from `dims`).
    pub tune: Vec<(String, i64)>,
    pub rng: StdRng,
    /// Per-tensor generators for random inputs.
    pub gens: BTreeMap<String, Gen>,
    /// Absolute floor of the float comparison (see the module docs).
    pub floor: f64,
    /// Relative tolerance for f32/f64 (1e-5).
    pub rel: f64,
    pub opts: LaunchOptions,
    /// Launch even when the dims break an `@aligned` fact (planted-bug
    /// tests: the simulator must then catch the misaligned accesses).
    pub break_aligned: bool,
    /// Where [`Case::run`] runs the kernel (see [`crate::executor`]).
    pub executor: Executor,
    /// Written tensors whose bits depend on the order threads run in (the
    /// old values of atomic exchanges, say): the case's reference checks
    /// them in an order-free way, and the differential check does not
    /// compare them bit for bit.
    pub order_dependent: Vec<String>,
}

impl Case {
    /// The only (or the named) kernel of corpus file `tests/in/NAME.pho`.
    pub fn corpus(name: &str) -> Case {
        let f = crate::corpus_file(name);
        let kernels = compile_src(&f.src, &format!("{name}.pho"));
        Case::of(kernels, name, crate::min_arch_of(&f.src))
    }

    /// Like [`Case::corpus`], compiled for `sm_<arch>` (a kernel whose
    /// code differs per target, such as the tensor-core paths).
    pub fn corpus_for(name: &str, arch: u32) -> Case {
        let f = crate::corpus_file(name);
        let file_name = format!("{name}.pho");
        let (kernels, diags) =
            phobos_core::compile(&f.src, &file_name, &CompileOptions::for_arch(arch));
        if diags.iter().any(|d| d.is_error()) || kernels.is_empty() {
            panic!(
                "{file_name} did not compile for {}:\n{}",
                phobos_core::arch::name(arch),
                phobos_core::render::render(&diags, &file_name, &f.src, false)
            );
        }
        Case::of(kernels, name, arch)
    }

    /// Like [`Case::corpus_for`], with `@aligned(FACT)` added after the
    /// kernel's `@launch` (the Hopper path wants operand rows of 8 bytes
    /// or more: `hopper` in `corpus_cases`).
    pub fn corpus_aligned_for(name: &str, arch: u32, fact: &str) -> Case {
        let f = crate::corpus_file(name);
        let at = f
            .src
            .find("@launch")
            .unwrap_or_else(|| panic!("{name} has no @launch"));
        let end = at + f.src[at..].find('\n').expect("a line after @launch");
        let src = format!("{}\n@aligned({fact}){}", &f.src[..end], &f.src[end..]);
        Case::source_for(&src, &format!("{name}.pho"), name, arch)
    }

    /// The kernel named `kernel` from `src`, compiled for `sm_<arch>`.
    pub fn source_for(src: &str, file_name: &str, kernel: &str, arch: u32) -> Case {
        let (kernels, diags) =
            phobos_core::compile(src, file_name, &CompileOptions::for_arch(arch));
        if diags.iter().any(|d| d.is_error()) || kernels.is_empty() {
            panic!(
                "{file_name} did not compile for {}:\n{}",
                phobos_core::arch::name(arch),
                phobos_core::render::render(&diags, file_name, src, false)
            );
        }
        Case::of(kernels, kernel, arch)
    }

    /// The kernel named `kernel` from `src`.
    pub fn source(src: &str, file_name: &str, kernel: &str) -> Case {
        Case::of(compile_src(src, file_name), kernel, crate::min_arch_of(src))
    }

    fn of(kernels: Vec<CompiledKernel>, kernel: &str, arch: u32) -> Case {
        let k = kernels
            .into_iter()
            .find(|k| k.meta.name == kernel)
            .unwrap_or_else(|| panic!("no kernel `{kernel}`"));
        Case {
            kernel: k,
            arch,
            dims: BTreeMap::new(),
            tensors: BTreeMap::new(),
            scalars: BTreeMap::new(),
            tune: Vec::new(),
            rng: StdRng::seed_from_u64(SEED.with(|s| s.get())),
            gens: BTreeMap::new(),
            floor: 1.0,
            rel: 1e-5,
            opts: LaunchOptions::default(),
            break_aligned: false,
            executor: crate::executor::current(),
            order_dependent: Vec::new(),
        }
    }

    /// Marks written tensors whose bits depend on the order threads run in
    /// (see [`Case::order_dependent`]).
    pub fn order_dependent(mut self, tensors: &[&str]) -> Case {
        self.order_dependent = tensors.iter().map(|t| t.to_string()).collect();
        self
    }

    pub fn meta(&self) -> &KernelMeta {
        &self.kernel.meta
    }

    pub fn seed(mut self, s: u64) -> Case {
        self.rng = StdRng::seed_from_u64(s);
        self
    }

    /// Sets dims by name.
    pub fn dims(mut self, d: &[(&str, i64)]) -> Case {
        for (n, v) in d {
            self.dims.insert(n.to_string(), *v);
        }
        self
    }

    /// Picks the variant with this free autotune value.
    pub fn tune(mut self, name: &str, v: i64) -> Case {
        self.tune.push((name.to_string(), v));
        self
    }

    pub fn gen(mut self, tensor: &str, g: Gen) -> Case {
        self.gens.insert(tensor.to_string(), g);
        self
    }

    /// Gives a tensor's initial contents (inputs, or in-place outputs).
    pub fn init(mut self, tensor: &str, t: Tensor) -> Case {
        self.tensors.insert(tensor.to_string(), t);
        self
    }

    pub fn scalar(mut self, name: &str, s: Scalar) -> Case {
        self.scalars.insert(name.to_string(), s);
        self
    }

    pub fn floor(mut self, f: f64) -> Case {
        self.floor = f;
        self
    }

    /// The shape of a tensor parameter from the dims.
    pub fn shape(&self, param: &str) -> Vec<usize> {
        let (_, dims, _) = self.tensor_param(param);
        dims.iter()
            .map(|d| match d {
                DimRefMeta::Const(c) => *c as usize,
                DimRefMeta::Named(n) => {
                    let v = self
                        .dims
                        .get(n)
                        .copied()
                        .or_else(|| self.tune.iter().find(|(t, _)| t == n).map(|(_, v)| *v))
                        .unwrap_or_else(|| panic!("dim {n} of {param} not given"));
                    usize::try_from(v).expect("dims are non-negative")
                }
            })
            .collect()
    }

    fn tensor_param(&self, param: &str) -> (ScalarTy, &Vec<DimRefMeta>, bool) {
        let p = self
            .meta()
            .params
            .iter()
            .find(|p| p.name == param)
            .unwrap_or_else(|| panic!("kernel has no parameter {param}"));
        match &p.kind {
            ParamKindMeta::Tensor {
                elem,
                dims,
                written,
                ..
            } => (*elem, dims, *written),
            ParamKindMeta::Scalar(_) => panic!("{param} is a scalar"),
        }
    }

    /// The launch bound by the one launch binding (`phobos_core::binding`)
    /// over the shapes the dims give, with the free autotune values picked,
    /// against the target's limits. Panics with the binding's message when
    /// it refuses the launch.
    pub fn binding(&self, grid: Option<[u32; 3]>) -> Binding<'_> {
        self.bind_meta(self.meta(), grid)
    }

    fn bind_meta<'m>(&self, meta: &'m KernelMeta, grid: Option<[u32; 3]>) -> Binding<'m> {
        let shapes: Vec<Option<(ScalarTy, Vec<u64>)>> = meta
            .params
            .iter()
            .map(|p| match &p.kind {
                ParamKindMeta::Tensor { elem, .. } => Some((
                    *elem,
                    self.shape(&p.name).iter().map(|&d| d as u64).collect(),
                )),
                ParamKindMeta::Scalar(_) => None,
            })
            .collect();
        let args: Vec<ArgShape<'_>> = meta
            .params
            .iter()
            .zip(&shapes)
            .map(|(p, shape)| {
                ArgShape::of_param(&p.kind, shape.as_ref().map(|(e, s)| (*e, &s[..])))
            })
            .collect();
        let picked: Vec<(String, i64)> = self
            .tune
            .iter()
            .filter(|(n, _)| !meta.dims.iter().any(|d| &d.name == n))
            .cloned()
            .collect();
        let req = LaunchRequest {
            args: &args,
            grid,
            picked: &picked,
            limits: sim_launch::limits(self.arch),
        };
        bind(meta, &req).unwrap_or_else(|e| panic!("{}: {e}", meta.name))
    }

    /// Lets the launch break the kernel's `@aligned` facts, which the
    /// binding (like the runtime) refuses otherwise.
    pub fn break_aligned(mut self) -> Case {
        self.break_aligned = true;
        self
    }

    /// The variant to launch: matching every free autotune value given and
    /// every autotuned dim (the first that fits).
    pub fn variant(&self) -> &VariantMeta {
        self.binding(None).first()
    }

    /// The launch grid from the variant's `@grid`, evaluated over the dims
    /// (panics when the kernel has none).
    pub fn meta_grid(&self) -> [u32; 3] {
        let b = self.binding(None);
        b.grid(b.first())
            .unwrap_or_else(|e| panic!("{}: {e}", self.meta().name))
    }

    /// Fills every tensor not given: random if read-only, poisoned if written.
    pub fn prepare(&mut self) {
        let params: Vec<(String, ScalarTy, bool)> = self
            .meta()
            .params
            .iter()
            .filter_map(|p| match &p.kind {
                ParamKindMeta::Tensor { elem, written, .. } => {
                    Some((p.name.clone(), *elem, *written))
                }
                ParamKindMeta::Scalar(_) => None,
            })
            .collect();
        for (name, elem, written) in params {
            let shape = self.shape(&name);
            if let Some(t) = self.tensors.get(&name) {
                assert_eq!(t.shape, shape, "tensor {name} has the wrong shape");
                assert_eq!(t.elem, elem, "tensor {name} has the wrong element type");
                continue;
            }
            let t = if written {
                Tensor::poisoned(elem, &shape)
            } else {
                let g = self.gens.get(&name).copied().unwrap_or(Gen::Full);
                Tensor::random(elem, &shape, g, &mut self.rng)
            };
            self.tensors.insert(name, t);
        }
    }

    /// Runs the kernel on `grid` (CTAs; the block is the variant's threads).
    pub fn launch(mut self, grid: [u32; 3]) -> Result<Outcome, Box<(Outcome, SimError)>> {
        self.prepare();
        let mut meta = self.meta().clone();
        if self.break_aligned {
            meta.aligned.clear();
        }
        let binding = self.bind_meta(&meta, Some(grid));
        let variant = binding.first();
        let plan = Plan::with_variant(binding, variant)
            .unwrap_or_else(|e| panic!("{}: {e}", self.meta().name));
        let module = Module::parse(&self.kernel.ptx)
            .unwrap_or_else(|e| panic!("the PTX of {} does not load: {e}", self.meta().name));
        let mut dev = Device::new();
        let mut ids = BTreeMap::new();
        for (name, t) in &self.tensors {
            let id = dev.alloc_from(name, &t.bytes).expect("alloc");
            ids.insert(name.clone(), id);
        }
        let names: Vec<&String> = meta.params.iter().map(|p| &p.name).collect();
        let args = plan
            .kernel_args(|i| {
                let n = names[i];
                Some(match ids.get(n) {
                    Some(&id) => KernelArg::Buffer(id),
                    None => KernelArg::Bytes(
                        self.scalars
                            .get(n)
                            .unwrap_or_else(|| panic!("scalar {n} not given"))
                            .bytes(),
                    ),
                })
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let before = self.tensors.clone();
        let res = plan.run(&dev, &module, &args, &self.opts, None);
        let entry = plan.variant.entry.clone();
        let mut after = before.clone();
        for (name, t) in after.iter_mut() {
            t.bytes = dev.to_vec(ids[name]).expect("read back");
        }
        let out = Outcome {
            name: self.meta().name.clone(),
            entry,
            before,
            after,
            floor: self.floor,
            rel: self.rel,
            stats: None,
        };
        match res {
            Ok(stats) => Ok(Outcome {
                stats: Some(stats),
                ..out
            }),
            Err(e) => Err(Box::new((out, e))),
        }
    }

    /// Runs in the simulator expecting a check to fire; returns its report
    /// (and panics if the case ran clean or failed otherwise).
    pub fn report(self, grid: [u32; 3]) -> phobos_sim::CheckReport {
        match self.launch(grid) {
            Ok(o) => panic!(
                "{} ({}) ran clean; a check should have fired",
                o.name, o.entry
            ),
            Err(b) => match b.1 {
                SimError::Check(r) => *r,
                e => panic!("expected a check report, got: {e}"),
            },
        }
    }

    /// Runs and panics on a simulator error.
    pub fn run(self, grid: [u32; 3]) -> Outcome {
        match self.executor {
            Executor::Runtime => return self.run_on_runtime(grid),
            Executor::Differential => return self.run_differential(grid),
            Executor::Sim => {}
        }
        match self.launch(grid) {
            Ok(o) => o,
            Err(b) => {
                let (o, e) = *b;
                panic!("{} ({}) failed in the simulator:\n{e}", o.name, o.entry)
            }
        }
    }
}

impl Case {
    /// [`Case::run`] through the runtime (`Executor::Runtime`): the same
    /// inputs, the same variant (the metadata the runtime sees lists only
    /// the one this case picks), the same comparison afterwards.
    pub(crate) fn run_on_runtime(mut self, grid: [u32; 3]) -> Outcome {
        self.prepare();
        let variant = self.binding(Some(grid)).first().clone();
        let mut meta = self.meta().clone();
        meta.variants.retain(|v| v.entry == variant.entry);
        for (name, values) in &mut meta.autotune {
            values.retain(|x| variant.values.iter().any(|(n, v)| n == name && v == x));
        }
        if self.break_aligned {
            meta.aligned.clear();
        }
        let after = crate::executor::run_on_runtime(
            &meta,
            &self.kernel.ptx,
            self.arch,
            grid,
            &self.tensors,
            &self.scalars,
        )
        .unwrap_or_else(|e| {
            panic!(
                "{} ({}) failed on the runtime: {e}",
                meta.name, variant.entry
            )
        });
        Outcome {
            name: meta.name.clone(),
            entry: variant.entry.clone(),
            before: self.tensors.clone(),
            after,
            floor: self.floor,
            rel: self.rel,
            stats: None,
        }
    }
}

/// The tensors before and after a launch.
pub struct Outcome {
    pub name: String,
    pub entry: String,
    pub before: BTreeMap<String, Tensor>,
    pub after: BTreeMap<String, Tensor>,
    pub floor: f64,
    pub rel: f64,
    pub stats: Option<LaunchStats>,
}

impl Outcome {
    /// The tensor's contents before the run (inputs; poisoned outputs).
    pub fn input(&self, name: &str) -> &Tensor {
        &self.before[name]
    }

    /// The expected contents start from the initial contents.
    pub fn expect(&self, name: &str) -> Tensor {
        self.before[name].clone()
    }

    /// Compares tensor `name` after the run with `want` (see module docs);
    /// panics listing the first mismatches.
    pub fn check(&self, name: &str, want: &Tensor) {
        if let Err(e) = self.compare(name, want) {
            panic!("{e}");
        }
    }

    /// Checks tensor `name` after the run: element `i` of its first `len`
    /// is `want(i)`, a float ([`Tensor::set_f`]); the rest is as it was
    /// before the run.
    pub fn check_f(&self, name: &str, len: usize, want: impl Fn(usize) -> f64) {
        let mut t = self.expect(name);
        for i in 0..len {
            t.set_f(i, want(i));
        }
        self.check(name, &t);
    }

    /// [`Outcome::check_f`] for integer values ([`Tensor::set_i`]).
    pub fn check_i(&self, name: &str, len: usize, want: impl Fn(usize) -> i64) {
        let mut t = self.expect(name);
        for i in 0..len {
            t.set_i(i, want(i));
        }
        self.check(name, &t);
    }

    /// Like [`Outcome::check`], returning the description of a mismatch.
    pub fn compare(&self, name: &str, want: &Tensor) -> Result<(), String> {
        let got = &self.after[name];
        assert_eq!(got.shape, want.shape, "{name}: shape");
        assert_eq!(got.elem, want.elem, "{name}: element type");
        let mut bad = Vec::new();
        let mut count = 0;
        for i in 0..got.len() {
            let ok = if is_float(got.elem) {
                let (g, w) = (got.f(i), want.f(i));
                if w.is_nan() {
                    g.is_nan()
                } else if matches!(got.elem, ScalarTy::F16 | ScalarTy::BF16) || got.elem.is_f8() {
                    g == w
                } else {
                    (g - w).abs() <= self.rel * w.abs().max(self.floor)
                        || (g == w && g.is_infinite())
                }
            } else {
                got.i(i) == want.i(i)
            };
            if !ok {
                count += 1;
                if bad.len() < 8 {
                    let idx = unflatten(i, &got.shape);
                    let show = |t: &Tensor| {
                        if t.is_poison(i) {
                            "poison (unwritten)".to_string()
                        } else if is_float(t.elem) {
                            format!("{}", t.f(i))
                        } else {
                            format!("{}", t.i(i))
                        }
                    };
                    bad.push(format!(
                        "  {name}{idx:?}: got {}, want {}",
                        show(got),
                        show(want)
                    ));
                }
            }
        }
        if count == 0 {
            return Ok(());
        }
        Err(format!(
            "{} ({}): {count} of {} elements of {name} differ from the reference:\n{}",
            self.name,
            self.entry,
            got.len(),
            bad.join("\n")
        ))
    }

    /// Compares float tensor `name` after the run with `want` within
    /// `tol(i)` of element `i`, for results whose rounding the language
    /// leaves to the hardware (f16 accumulation on tensor cores); panics
    /// listing the first mismatches. Returns the largest error.
    pub fn check_within(&self, name: &str, want: &Tensor, tol: impl Fn(usize) -> f64) -> f64 {
        let got = &self.after[name];
        assert_eq!(got.shape, want.shape, "{name}: shape");
        let mut bad = Vec::new();
        let mut worst = 0f64;
        for i in 0..got.len() {
            let (g, w) = (got.f(i), want.f(i));
            let ok = if w.is_nan() {
                g.is_nan()
            } else {
                worst = worst.max((g - w).abs());
                (g - w).abs() <= tol(i)
            };
            if !ok && bad.len() < 8 {
                let idx = unflatten(i, &got.shape);
                bad.push(format!(
                    "  {name}{idx:?}: got {g}, want {w} within {}",
                    tol(i)
                ));
            }
        }
        assert!(
            bad.is_empty(),
            "{} ({}): elements of {name} differ from the reference:\n{}",
            self.name,
            self.entry,
            bad.join("\n")
        );
        worst
    }

    /// Tensors other than the written ones must be unchanged.
    pub fn check_unchanged(&self, name: &str) {
        assert!(
            self.before[name] == self.after[name],
            "{}: read-only tensor {name} changed",
            self.name
        );
    }
}

/// The multi-index of flat index `i` in `shape`.
pub fn unflatten(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, d) in shape.iter().enumerate().rev() {
        idx[k] = i % d;
        i /= d;
    }
    idx
}

/// `cdiv(a, b)` for grid arithmetic.
pub fn cdiv(a: usize, b: usize) -> u32 {
    u32::try_from(a.div_ceil(b)).expect("grid fits u32")
}

/// The page's lane butterfly over `vals` (one value per lane of a CTA, a
/// multiple of 32): in pieces of `width` lanes, xor steps `width/2, ..., 1`,
/// each lane combining its value with its partner's as `f(own, partner)`.
pub fn butterfly<T: Copy>(vals: &[T], width: usize, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut v = vals.to_vec();
    let mut m = width / 2;
    while m >= 1 {
        let prev = v.clone();
        for (t, x) in v.iter_mut().enumerate() {
            *x = f(prev[t], prev[t ^ m]);
        }
        m /= 2;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(got: Tensor, before: Tensor) -> Outcome {
        Outcome {
            name: "k".into(),
            entry: "k".into(),
            before: [("y".to_string(), before)].into_iter().collect(),
            after: [("y".to_string(), got)].into_iter().collect(),
            floor: 1.0,
            rel: 1e-5,
            stats: None,
        }
    }

    #[test]
    fn floats_compare_within_relative_error_with_an_absolute_floor() {
        let want = Tensor::from_f32(&[4], &[1000.0, 0.001, -5.0, 0.0]);
        let ok = Tensor::from_f32(&[4], &[1000.009, 0.001_009, -5.000_04, 9e-6]);
        let o = outcome(ok, want.clone());
        assert!(o.compare("y", &want).is_ok());
        let bad = Tensor::from_f32(&[4], &[1000.02, 0.001, -5.0, 0.0]);
        let o = outcome(bad, want.clone());
        let e = o.compare("y", &want).unwrap_err();
        assert!(e.contains("1 of 4") && e.contains("y[0]"), "{e}");
        let bad = Tensor::from_f32(&[4], &[1000.0, 0.001 + 2e-5, -5.0, 0.0]);
        assert!(outcome(bad, want.clone()).compare("y", &want).is_err());
    }

    #[test]
    fn poison_must_stay_where_the_reference_leaves_it() {
        let poison = Tensor::poisoned(ScalarTy::I32, &[3]);
        let mut want = poison.clone();
        want.set_i(0, 7);
        let mut got = poison.clone();
        got.set_i(0, 7);
        assert!(outcome(got.clone(), poison.clone())
            .compare("y", &want)
            .is_ok());
        // An extra write where the reference keeps the poison is caught.
        got.set_i(2, 0);
        let e = outcome(got, poison.clone())
            .compare("y", &want)
            .unwrap_err();
        assert!(e.contains("y[2]: got 0, want poison"), "{e}");
        // So is a float output left poisoned (NaN) where a value is due.
        let fp = Tensor::poisoned(ScalarTy::F32, &[2]);
        let mut want = fp.clone();
        want.set_f(1, 1.5);
        let e = outcome(fp.clone(), fp).compare("y", &want).unwrap_err();
        assert!(e.contains("poison (unwritten)"), "{e}");
    }

    #[test]
    fn elements_round_trip_through_every_type() {
        let mut t = Tensor::zeros(ScalarTy::I8, &[2]);
        t.set_i(0, 200);
        assert_eq!(t.i(0), -56);
        let mut t = Tensor::zeros(ScalarTy::U16, &[1]);
        t.set_i(0, -1);
        assert_eq!(t.i(0), 65535);
        let mut t = Tensor::zeros(ScalarTy::F16, &[1]);
        t.set_f(0, 1.0 / 3.0);
        assert_eq!(t.f(0), f16::from_f64(1.0 / 3.0).to_f64());
        let mut t = Tensor::zeros(ScalarTy::U64, &[1]);
        t.set_i(0, -1);
        assert_eq!(t.f(0), u64::MAX as f64);
        assert_eq!(butterfly(&[1, 2, 3, 4], 2, |a, b| a + b), vec![3, 3, 7, 7]);
        assert_eq!(unflatten(7, &[2, 2, 2]), vec![1, 1, 1]);
    }
}
