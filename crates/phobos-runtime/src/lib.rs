#![doc = include_str!("../README.md")]
//!
//! # Inside this crate
//!
//! The Phobos runtime: what the generated launch functions call.
//!
//! - [`Device`]: one handle over two backends, an NVIDIA GPU through the
//!   CUDA driver (loaded dynamically with cudarc, so a machine without a GPU
//!   still builds and runs) and the CPU simulator, which executes the
//!   emitted PTX itself. [`Device::auto`] picks the GPU when one works, else
//!   the simulator; `PHOBOS_BACKEND=sim|cuda` forces one.
//! - [`Tensor`]: typed, shaped views of device memory.
//! - [`Stream`], [`Event`], [`Graph`]: the order work runs in, across
//!   streams, and captured sequences replayed with one call (`stream.rs`,
//!   `graph.rs`).
//! - [`ForeignTensor`], [`ForeignTensorMut`]: other libraries' memory as
//!   kernel arguments (`foreign.rs`), taken with Phobos tensors through
//!   [`TensorIn`] and [`TensorOut`].
//! - [`Kernel::launch`]: the checks every launch passes before it reaches a
//!   backend, and the [`LaunchError`] for each way it can be refused.
//! - [`sim_launch`]: the one road from a compiled kernel to a simulated
//!   launch (binding, variant, grid and block, `.param` values, dynamic
//!   shared memory), which the simulator backend, `phobos sim`, explain,
//!   profile, the test harness and the fuzzer all take.
//!
//! It must not panic on a missing driver or a bad launch: both are errors.

mod call;
mod cuda;
mod device;
mod elem;
mod error;
mod foreign;
mod graph;
mod launch;
mod sim;
pub mod sim_launch;
mod stream;
mod tensor;
mod tuning;

pub use call::KernelSource;
pub use device::{BackendKind, Device, EntryOccupancy, Limits, LoadedImage};
pub use elem::{Elem, ScalarArg};
pub use error::{DeviceError, LaunchError, Site};
pub use foreign::{ForeignTensor, ForeignTensorMut, TensorIn, TensorOut};
pub use graph::Graph;
pub use launch::{cdiv, Aligned, Arg, Grid, Kernel, TensorArg};
/// Why the launch binding refused a launch ([`LaunchError::Bind`]).
pub use phobos_meta::binding::BindError;
pub use sim_launch::name_shared_buffer;
pub use stream::{Event, Stream};
pub use tensor::Tensor;

/// The 8-bit float element types (`float8::F8E4M3` is `f8e4m3`,
/// `float8::F8E5M2` is `f8e5m2`), re-exported so generated code and users
/// name the one version the runtime uses.
pub use float8;
/// Half-precision element types (`f16`, `bf16`), as tensors of them are typed.
pub use half;

/// The metadata types the embedded kernel descriptions deserialize into.
pub use phobos_meta::meta;
