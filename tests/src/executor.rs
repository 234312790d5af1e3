//! Where the conformance suite runs its kernels: the executor is a
//! parameter of the suite, as in CubeCL's `testgen_all!`.
//!
//! - [`Executor::Sim`]: `phobos-sim` directly, with every sanitizer check
//!   and the full fault report (what planted-bug tests inspect).
//! - [`Executor::Runtime`]: through `phobos_runtime::Device::auto()` and
//!   `Kernel::launch`, exactly the path a user's generated bindings take:
//!   the runtime's launch checks, then its CUDA backend (a real GPU, or the
//!   CUDA driver stand-in under `scripts/with-fake-gpu.sh`) or its
//!   simulator backend.
//! - [`Executor::Differential`]: both, on the same inputs, the outputs
//!   compared bitwise or in ulps and recorded by [`crate::differential`]
//!   (the GPU bundle's differential check); the case's own reference then
//!   checks the runtime's outputs.
//!
//! The default comes from `PHOBOS_SUITE_EXECUTOR` (`sim`, `runtime` or
//! `differential`; `sim` when unset); [`with_executor`] overrides it for
//! one thread.

use crate::sim_support::{Scalar, Tensor};
use half::{bf16, f16};
use phobos_core::ast::ScalarTy;
use phobos_core::meta::KernelMeta;
use phobos_runtime::{Arg, Device, Elem, Grid, Kernel, KernelSource};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The executors the suite can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Executor {
    Sim,
    Runtime,
    Differential,
}

impl Executor {
    /// `PHOBOS_SUITE_EXECUTOR`, or `Sim`. An unknown value panics: a
    /// misspelt executor must not silently test the simulator instead.
    pub fn from_env() -> Executor {
        match std::env::var("PHOBOS_SUITE_EXECUTOR").as_deref() {
            Err(_) | Ok("") | Ok("sim") => Executor::Sim,
            Ok("runtime") => Executor::Runtime,
            Ok("differential") => Executor::Differential,
            Ok(other) => {
                panic!("PHOBOS_SUITE_EXECUTOR={other}: use `sim`, `runtime` or `differential`")
            }
        }
    }
}

thread_local! {
    static EXECUTOR: std::cell::Cell<Option<Executor>> = const { std::cell::Cell::new(None) };
}

/// The executor [`crate::sim_support::Case`]s created on this thread use.
pub fn current() -> Executor {
    EXECUTOR
        .with(|e| e.get())
        .unwrap_or_else(Executor::from_env)
}

/// Runs `f` with every case it creates on this thread run on `executor`.
pub fn with_executor<R>(executor: Executor, f: impl FnOnce() -> R) -> R {
    let old = EXECUTOR.with(|e| e.replace(Some(executor)));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    EXECUTOR.with(|e| e.set(old));
    match r {
        Ok(r) => r,
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// The runtime device the suite shares: `Device::auto()`, so
/// `PHOBOS_BACKEND` chooses between the GPU (or stand-in) and the
/// simulator.
pub fn device() -> &'static Device {
    static DEVICE: OnceLock<Device> = OnceLock::new();
    DEVICE.get_or_init(|| {
        Device::auto().unwrap_or_else(|e| panic!("the runtime executor has no device: {e}"))
    })
}

/// A device tensor of any element type.
trait DeviceTensor {
    fn arg(&self) -> Arg<'_>;
    fn bytes(&self) -> Vec<u8>;
}

impl<T: Elem> DeviceTensor for phobos_runtime::Tensor<T> {
    fn arg(&self) -> Arg<'_> {
        Arg::from(self)
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for v in self.to_vec().unwrap_or_else(|e| panic!("read back: {e}")) {
            v.write_bytes(&mut out);
        }
        out
    }
}

fn upload_as<T: Elem>(dev: &Device, t: &Tensor) -> Box<dyn DeviceTensor> {
    let values: Vec<T> = t
        .bytes
        .chunks_exact(T::TY.size() as usize)
        .map(T::read_bytes)
        .collect();
    Box::new(
        dev.upload(&values, &t.shape)
            .unwrap_or_else(|e| panic!("upload: {e}")),
    )
}

fn upload(dev: &Device, t: &Tensor) -> Box<dyn DeviceTensor> {
    match t.elem {
        ScalarTy::Bool => upload_as::<bool>(dev, t),
        ScalarTy::I8 => upload_as::<i8>(dev, t),
        ScalarTy::U8 => upload_as::<u8>(dev, t),
        ScalarTy::I16 => upload_as::<i16>(dev, t),
        ScalarTy::U16 => upload_as::<u16>(dev, t),
        ScalarTy::I32 => upload_as::<i32>(dev, t),
        ScalarTy::U32 => upload_as::<u32>(dev, t),
        ScalarTy::I64 => upload_as::<i64>(dev, t),
        ScalarTy::U64 => upload_as::<u64>(dev, t),
        ScalarTy::F16 => upload_as::<f16>(dev, t),
        ScalarTy::BF16 => upload_as::<bf16>(dev, t),
        ScalarTy::F8E4M3 => upload_as::<phobos_runtime::float8::F8E4M3>(dev, t),
        ScalarTy::F8E5M2 => upload_as::<phobos_runtime::float8::F8E5M2>(dev, t),
        ScalarTy::F32 => upload_as::<f32>(dev, t),
        ScalarTy::F64 => upload_as::<f64>(dev, t),
    }
}

fn scalar_arg(s: Scalar) -> Arg<'static> {
    match s {
        Scalar::Bool(v) => Arg::scalar(v),
        Scalar::I8(v) => Arg::scalar(v),
        Scalar::U8(v) => Arg::scalar(v),
        Scalar::I16(v) => Arg::scalar(v),
        Scalar::U16(v) => Arg::scalar(v),
        Scalar::I32(v) => Arg::scalar(v),
        Scalar::U32(v) => Arg::scalar(v),
        Scalar::I64(v) => Arg::scalar(v),
        Scalar::U64(v) => Arg::scalar(v),
        Scalar::F16(v) => Arg::scalar(v),
        Scalar::BF16(v) => Arg::scalar(v),
        Scalar::F32(v) => Arg::scalar(v),
        Scalar::F64(v) => Arg::scalar(v),
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Runs a compiled kernel through the runtime on `grid`: the tensors are
/// uploaded, the kernel launched with `Kernel::launch`, and every tensor
/// read back. `meta` has only the variants the case picked, so the runtime
/// launches the same variant the simulator executor would.
pub(crate) fn run_on_runtime(
    meta: &KernelMeta,
    ptx: &str,
    arch: u32,
    grid: [u32; 3],
    tensors: &BTreeMap<String, Tensor>,
    scalars: &BTreeMap<String, Scalar>,
) -> Result<BTreeMap<String, Tensor>, String> {
    let dev = device();
    let meta_text = ron::to_string(meta).map_err(|e| format!("metadata: {e}"))?;
    let ptx: &'static [(u32, &'static str)] =
        Box::leak(vec![(arch, leak(ptx.to_string()))].into_boxed_slice());
    let kernel = Kernel::new(KernelSource {
        name: leak(meta.name.clone()),
        module: leak(meta.source_file.clone()),
        meta: leak(meta_text),
        ptx,
        cubins: &[],
    });
    let uploaded: BTreeMap<&str, Box<dyn DeviceTensor>> = tensors
        .iter()
        .map(|(name, t)| (name.as_str(), upload(dev, t)))
        .collect();
    let mut args = Vec::new();
    for p in &meta.params {
        args.push(
            match (uploaded.get(p.name.as_str()), scalars.get(&p.name)) {
                (Some(t), _) => t.arg(),
                (None, Some(s)) => scalar_arg(*s),
                (None, None) => return Err(format!("no value for parameter `{}`", p.name)),
            },
        );
    }
    kernel
        .launch(dev, Some(Grid(grid)), &args)
        .map_err(|e| e.to_string())?;
    Ok(tensors
        .iter()
        .map(|(name, t)| {
            let after = Tensor {
                bytes: uploaded[name.as_str()].bytes(),
                ..t.clone()
            };
            (name.clone(), after)
        })
        .collect())
}
