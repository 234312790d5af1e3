//! Launch binding: from a kernel's metadata and the shapes of a launch's
//! arguments to everything a backend needs — the dims' values, the
//! `@autotune` variants that fit, each variant's grid and the entry's
//! `.param` values in order (for an sm_90a entry, each tensor map's spec,
//! and [`TensorMapSpec::layout`] for the tensor it describes) — or the
//! reason the launch cannot happen.
//!
//! This is the one owner of that computation. Every launch reaches it
//! through the runtime: `phobos_runtime::Kernel::launch` (either backend)
//! and `phobos_runtime::sim_launch`, the one simulated launch road that
//! `phobos sim`, `phobos explain`, `phobos profile`, the test harness and
//! the fuzzer take; none of them evaluates `@grid`, matches variants or
//! orders `.param`s itself. It is pure: no device, no memory,
//! no IO. Callers describe their arguments as [`ArgShape`]s and map a
//! [`BindError`] onto their own error type.
//!
//! A launch that binds allocates nothing (issue 31: the checks of a
//! generated launch never touch the heap): the bound dims borrow their
//! names from the metadata ([`DimValue`]), dims and candidate variants sit
//! in inline storage ([`SmallVec`], spilling to the heap only past
//! [`INLINE_DIMS`] dims or [`INLINE_CANDIDATES`] variants), and
//! [`Binding::ptx_args`] yields the `.param` values one by one. Only a
//! refusal allocates: its [`BindError`] owns the words of its message.

use crate::meta::{DimRefMeta, GridExpr, KernelMeta, ParamKindMeta, PtxParam, VariantMeta};
use crate::scalar::ScalarTy;
pub use smallvec::SmallVec;
use std::fmt;

/// Dims a binding holds without allocating.
pub const INLINE_DIMS: usize = 8;
/// Candidate variants a binding holds without allocating.
pub const INLINE_CANDIDATES: usize = 16;

/// What a device allows one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_threads_per_block: u32,
    pub max_grid: [u32; 3],
    pub max_shared_bytes_per_block: u32,
}

impl Limits {
    /// The limits every architecture from sm_75 on guarantees (static
    /// shared memory).
    pub const SM75: Limits = Limits {
        max_threads_per_block: 1024,
        max_grid: [i32::MAX as u32, 65535, 65535],
        max_shared_bytes_per_block: 48 * 1024,
    };
}

/// One argument of a launch, as far as binding needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgShape<'a> {
    Tensor {
        elem: ScalarTy,
        shape: &'a [u64],
        /// Elements the buffer holds; `None` when the caller allocates
        /// exactly the shape.
        capacity: Option<u64>,
        /// The buffer's device address; `None` when the caller allocates it
        /// with whatever alignment the kernel needs.
        address: Option<u64>,
    },
    Scalar(ScalarTy),
}

impl<'a> ArgShape<'a> {
    /// The argument a caller gives a parameter of `kind`: a tensor of
    /// `elem` and `shape` where it has one (`elem` is the tensor's own,
    /// which [`bind`] checks against the parameter's), else a scalar of the
    /// parameter's type. Buffers are taken to be allocated for the shape,
    /// with whatever alignment the kernel needs.
    pub fn of_param(kind: &ParamKindMeta, tensor: Option<(ScalarTy, &'a [u64])>) -> ArgShape<'a> {
        match (kind, tensor) {
            (_, Some((elem, shape))) => ArgShape::Tensor {
                elem,
                shape,
                capacity: None,
                address: None,
            },
            (ParamKindMeta::Tensor { elem, .. }, None) => ArgShape::Scalar(*elem),
            (ParamKindMeta::Scalar(ty), None) => ArgShape::Scalar(*ty),
        }
    }
}

/// A launch to bind: arguments in the kernel's parameter order.
#[derive(Clone, Copy, Debug)]
pub struct LaunchRequest<'a> {
    pub args: &'a [ArgShape<'a>],
    /// The caller's grid; required exactly when the kernel has no `@grid`.
    pub grid: Option<[u32; 3]>,
    /// Values asked for free `@autotune` constants (not dims), by name.
    pub picked: &'a [(String, i64)],
    pub limits: Limits,
}

/// The value of one dim and the first tensor axis that carried it, as a
/// refusal ([`BindError::DimMismatch`]) owns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundDim {
    pub name: String,
    pub value: u64,
    pub param: String,
    pub axis: usize,
}

/// The value of one dim and the first tensor axis that carried it, as a
/// [`Binding`] holds it: names borrowed from the metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimValue<'m> {
    pub name: &'m str,
    pub value: u64,
    pub param: &'m str,
    pub axis: usize,
}

impl DimValue<'_> {
    /// The owned form a refusal carries.
    pub fn to_bound(&self) -> BoundDim {
        BoundDim {
            name: self.name.to_string(),
            value: self.value,
            param: self.param.to_string(),
            axis: self.axis,
        }
    }
}

/// One `.param` value of an entry, in `ptx_params` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxValue {
    /// The base address of the tensor argument at this parameter index.
    Tensor(usize),
    /// The scalar argument at this parameter index.
    Scalar(usize),
    /// A runtime dim, passed as `.s32`.
    Dim(i32),
    /// A tiled tensor map of the tensor argument at parameter index
    /// `tensor` ([`PtxParam::TensorMap`]), which the backend encodes at
    /// launch from the argument's address and shape
    /// ([`TensorMapSpec::layout`]).
    TensorMap { tensor: usize, map: TensorMapSpec },
}

impl PtxValue {
    /// The parameter index of a tensor or scalar value (for a tensor map,
    /// the tensor it maps).
    pub fn index(self) -> Option<usize> {
        match self {
            PtxValue::Tensor(i) | PtxValue::Scalar(i) => Some(i),
            PtxValue::TensorMap { tensor, .. } => Some(tensor),
            PtxValue::Dim(_) => None,
        }
    }
}

/// Most axes a tensor map describes (`cuTensorMapEncodeTiled`'s limit).
pub const TENSOR_MAP_MAX_RANK: usize = 5;
/// Most elements of a tensor map's box along one axis.
pub const TENSOR_MAP_MAX_BOX: u32 = 256;
/// Bytes of an encoded tensor map (`CUtensorMap`, 64-byte aligned).
pub const TENSOR_MAP_BYTES: usize = 128;
/// The alignment, in bytes, TMA needs of a tensor's base address and of
/// the byte stride of each of its outer axes (`cuTensorMapEncodeTiled`
/// refuses others).
pub const TENSOR_MAP_ALIGN: u64 = 16;

/// What a launch encodes a tensor map from, besides the tensor's address
/// and shape: the metadata's [`PtxParam::TensorMap`], checked and in fixed
/// arrays (a launch allocates nothing for it). Both backends read the
/// driver's enum values from here: the CUDA backend passes them to
/// `cuTensorMapEncodeTiled`, the simulator's backend to
/// `phobos_sim::tensor_map::TensorMap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMapSpec {
    /// The tensor's element type.
    pub elem: ScalarTy,
    /// Axes of the tensor, 1 to [`TENSOR_MAP_MAX_RANK`].
    pub rank: u8,
    /// The box in elements, innermost axis first (`rank` used, the rest 1).
    pub box_dims: [u32; TENSOR_MAP_MAX_RANK],
    /// The swizzle span in bytes: 0 (none), 32, 64 or 128.
    pub swizzle: u32,
}

/// A tensor map's global part: where the tensor is and how it is laid out,
/// in the driver's order (dimension 0 innermost).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMapLayout {
    /// Device address of element (0, ..., 0).
    pub address: u64,
    /// Elements per dimension, innermost first (`rank` used, the rest 1).
    pub dims: [u64; TENSOR_MAP_MAX_RANK],
    /// Byte stride of dimensions 1..rank (`rank - 1` used, the rest 0).
    pub strides: [u64; TENSOR_MAP_MAX_RANK - 1],
}

impl TensorMapSpec {
    /// `CU_TENSOR_MAP_L2_PROMOTION_L2_128B`: every map asks the L2 to fetch
    /// 128-byte lines, CUTLASS's and Triton's choice for tiled loads (a
    /// cache hint; the simulator keeps and ignores it).
    pub const L2_PROMOTION: u32 = 2;

    /// The spec of `PtxParam::TensorMap` for a tensor parameter of `elem`
    /// with `rank` axes; a box or swizzle `cuTensorMapEncodeTiled` would
    /// refuse whatever the tensor is, or a box that is not one entry per
    /// axis, is inconsistent metadata.
    pub fn new(
        tensor: &str,
        elem: ScalarTy,
        rank: usize,
        box_dims: &[u32],
        swizzle: u32,
    ) -> Result<TensorMapSpec, BindError> {
        let bad = |why: String| {
            Err(BindError::Inconsistent(format!(
                "the tensor map of `{tensor}` {why}"
            )))
        };
        if rank == 0 || rank > TENSOR_MAP_MAX_RANK {
            return bad(format!(
                "maps a tensor of {rank} axes; a tensor map has 1 to {TENSOR_MAP_MAX_RANK}"
            ));
        }
        if box_dims.len() != rank {
            return bad(format!(
                "has a box of {} axes for a tensor of {rank}",
                box_dims.len()
            ));
        }
        if let Some((i, b)) = box_dims
            .iter()
            .enumerate()
            .find(|(_, &b)| b == 0 || b > TENSOR_MAP_MAX_BOX)
        {
            return bad(format!(
                "has box dim {i} = {b}; each must be 1 to {TENSOR_MAP_MAX_BOX}"
            ));
        }
        if !matches!(swizzle, 0 | 32 | 64 | 128) {
            return bad(format!(
                "has a {swizzle}-byte swizzle; it must be 0, 32, 64 or 128"
            ));
        }
        let inner = u64::from(box_dims[0]) * u64::from(elem.size());
        if !inner.is_multiple_of(TENSOR_MAP_ALIGN) {
            return bad(format!(
                "has an inner box of {inner} bytes; it must be a multiple of {TENSOR_MAP_ALIGN}"
            ));
        }
        if swizzle != 0 && inner > u64::from(swizzle) {
            return bad(format!(
                "has an inner box of {inner} bytes, wider than its {swizzle}-byte swizzle"
            ));
        }
        let mut dims = [1; TENSOR_MAP_MAX_RANK];
        dims[..rank].copy_from_slice(box_dims);
        Ok(TensorMapSpec {
            elem,
            rank: rank as u8,
            box_dims: dims,
            swizzle,
        })
    }

    /// `CUtensorMapDataType` of the element type (the driver's enum
    /// value). TMA copies bytes: `bool`, `i8` and the 8-bit floats move as
    /// `UINT8`, `i16` as `UINT16`.
    pub fn data_type(&self) -> u32 {
        match self.elem {
            ScalarTy::Bool | ScalarTy::I8 | ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => 0,
            ScalarTy::I16 | ScalarTy::U16 => 1,
            ScalarTy::U32 => 2,
            ScalarTy::I32 => 3,
            ScalarTy::U64 => 4,
            ScalarTy::I64 => 5,
            ScalarTy::F16 => 6,
            ScalarTy::F32 => 7,
            ScalarTy::F64 => 8,
            ScalarTy::BF16 => 9,
        }
    }

    /// `CUtensorMapSwizzle` of the span (the driver's enum value).
    pub fn swizzle_code(&self) -> u32 {
        match self.swizzle {
            32 => 1,
            64 => 2,
            128 => 3,
            _ => 0,
        }
    }

    /// The map's global part for the tensor `param` at `address` with
    /// `shape` (outermost axis first, as the tensor's): the dims reversed
    /// and the row-major byte strides of the outer axes. TMA refuses a
    /// base address or an outer stride that is not a multiple of
    /// [`TENSOR_MAP_ALIGN`] bytes: each is a refusal of its own, naming the
    /// tensor ([`BindError::TensorMapAddress`], [`BindError::TensorMapStride`]),
    /// as is an empty axis or one past 2^32 elements
    /// ([`BindError::TensorMapShape`]).
    pub fn layout(
        &self,
        param: &str,
        address: u64,
        shape: &[u64],
    ) -> Result<TensorMapLayout, BindError> {
        let rank = usize::from(self.rank);
        if shape.len() != rank {
            return Err(BindError::Inconsistent(format!(
                "the tensor map of `{param}` has {rank} axes, the tensor {}",
                shape.len()
            )));
        }
        if !address.is_multiple_of(TENSOR_MAP_ALIGN) {
            return Err(BindError::TensorMapAddress {
                param: param.to_string(),
                address,
            });
        }
        let mut layout = TensorMapLayout {
            address,
            dims: [1; TENSOR_MAP_MAX_RANK],
            strides: [0; TENSOR_MAP_MAX_RANK - 1],
        };
        if shape.iter().any(|&d| d == 0 || d > 1 << 32) {
            return Err(BindError::TensorMapShape {
                param: param.to_string(),
                shape: shape.to_vec(),
            });
        }
        let mut stride = u64::from(self.elem.size());
        for (i, &d) in shape.iter().rev().enumerate() {
            layout.dims[i] = d;
            if i > 0 {
                layout.strides[i - 1] = stride;
                if !stride.is_multiple_of(TENSOR_MAP_ALIGN) {
                    return Err(BindError::TensorMapStride {
                        param: param.to_string(),
                        axis: rank - 1 - i,
                        shape: shape.to_vec(),
                        stride,
                    });
                }
            }
            stride = stride.saturating_mul(d);
        }
        Ok(layout)
    }
}

/// A bound launch.
#[derive(Clone, Debug)]
pub struct Binding<'m> {
    meta: &'m KernelMeta,
    /// The dims' values, in the order tensors first carried them.
    pub dims: SmallVec<[DimValue<'m>; INLINE_DIMS]>,
    /// The variants that fit the dims and the picked constants, in the
    /// metadata's order; never empty.
    pub candidates: SmallVec<[&'m VariantMeta; INLINE_CANDIDATES]>,
    given_grid: Option<[u32; 3]>,
    limits: Limits,
}

/// Why a launch cannot be bound. Each variant carries what a message needs;
/// `Display` gives the message, the one wording of every launch refusal:
/// the runtime wraps it with the call site (`LaunchError::Bind`), and
/// `phobos sim` and explain add only notes of their own (the `.npy`
/// shape, `--grid`). `tests/refusals.rs` snapshots every message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindError {
    Arity {
        given: usize,
        expected: usize,
    },
    Kind {
        param: String,
        expected: String,
        given: String,
    },
    Rank {
        param: String,
        expected: usize,
        actual: usize,
    },
    ConstDim {
        param: String,
        axis: usize,
        expected: u64,
        actual: u64,
    },
    /// The two bindings are boxed: they would make every `Result` of the
    /// binding as large as this rarest error (clippy's `result_large_err`).
    DimMismatch {
        dim: String,
        first: Box<BoundDim>,
        second: Box<BoundDim>,
    },
    DimTooLarge {
        dim: String,
        value: u64,
    },
    BufferTooShort {
        param: String,
        shape: Vec<u64>,
        needed: u64,
        available: u64,
    },
    AlignedViolated {
        dim: String,
        value: u64,
        multiple: u64,
    },
    UnalignedBase {
        param: String,
        address: u64,
        required: u32,
    },
    /// A tensor a tensor map describes starts at an address TMA cannot
    /// take (not a multiple of [`TENSOR_MAP_ALIGN`]).
    TensorMapAddress {
        param: String,
        address: u64,
    },
    /// A tensor a tensor map describes has an outer axis whose byte stride
    /// TMA cannot take: `axis` (of the tensor's own, outermost first)
    /// steps `stride` bytes.
    TensorMapStride {
        param: String,
        axis: usize,
        shape: Vec<u64>,
        stride: u64,
    },
    /// A tensor a tensor map describes has an empty axis, or one longer
    /// than TMA's 2^32 elements.
    TensorMapShape {
        param: String,
        shape: Vec<u64>,
    },
    NoVariant {
        dim: String,
        value: u64,
        candidates: Vec<i64>,
    },
    UnknownConstant {
        name: String,
        constants: Vec<String>,
    },
    NoPickedVariant {
        name: String,
        value: i64,
        candidates: Vec<i64>,
    },
    Inconsistent(String),
    MissingGrid,
    InvalidGrid(String),
    GridTooLarge {
        grid: [u64; 3],
        limit: [u32; 3],
    },
    BlockTooLarge {
        threads: u32,
        limit: u32,
    },
    SharedMemoryTooLarge {
        bytes: u32,
        limit: u32,
    },
}

impl fmt::Display for BindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindError::Arity { given, expected } => write!(
                f,
                "{given} arguments given, the kernel has {expected} parameters"
            ),
            BindError::Kind {
                param,
                expected,
                given,
            } => write!(f, "parameter `{param}` is {expected}, the argument is {given}"),
            BindError::Rank {
                param,
                expected,
                actual,
            } => write!(
                f,
                "tensor `{param}` has {expected} dimensions, the argument has {actual}"
            ),
            BindError::ConstDim {
                param,
                axis,
                expected,
                actual,
            } => write!(
                f,
                "axis {axis} of tensor `{param}` must be {expected}, the argument's is {actual}"
            ),
            BindError::DimMismatch { dim, first, second } => write!(
                f,
                "dim `{dim}` disagrees: it is {} from `{}` (axis {}) but {} from `{}` (axis {})",
                first.value, first.param, first.axis, second.value, second.param, second.axis
            ),
            BindError::DimTooLarge { dim, value } => write!(
                f,
                "dim `{dim}` = {value} does not fit the kernel's 32-bit index arithmetic (at most {})",
                i32::MAX
            ),
            BindError::BufferTooShort {
                param,
                shape,
                needed,
                available,
            } => write!(
                f,
                "tensor `{param}` of shape {shape:?} needs {needed} elements, its buffer holds {available}"
            ),
            BindError::AlignedViolated {
                dim,
                value,
                multiple,
            } => write!(
                f,
                "@aligned({dim} = {multiple}) does not hold: {dim} = {value} is not a multiple of {multiple}"
            ),
            BindError::UnalignedBase {
                param,
                address,
                required,
            } => write!(
                f,
                "`{param}` starts at {address:#x}, which is not a multiple of the {required} bytes its vector accesses need"
            ),
            BindError::TensorMapAddress { param, address } => write!(
                f,
                "`{param}` starts at {address:#x}, which is not a multiple of the \
                 {TENSOR_MAP_ALIGN} bytes its tensor map (TMA) needs"
            ),
            BindError::TensorMapStride {
                param,
                axis,
                shape,
                stride,
            } => write!(
                f,
                "tensor `{param}` of shape {shape:?} steps {stride} bytes along axis {axis}, \
                 which is not a multiple of the {TENSOR_MAP_ALIGN} bytes its tensor map (TMA) \
                 needs; pad the inner axes so that each row is a multiple of {TENSOR_MAP_ALIGN} bytes"
            ),
            BindError::TensorMapShape { param, shape } => write!(
                f,
                "tensor `{param}` of shape {shape:?} cannot be read through a tensor map (TMA): \
                 each axis must have 1 to 2^32 elements"
            ),
            BindError::NoVariant {
                dim,
                value,
                candidates,
            } => write!(
                f,
                "no variant is compiled for {dim} = {value} (compiled for {dim} in {candidates:?})"
            ),
            BindError::UnknownConstant { name, constants } if constants.is_empty() => {
                write!(f, "`{name}` is not an @autotune constant: the kernel has none")
            }
            BindError::UnknownConstant { name, constants } => write!(
                f,
                "`{name}` is not an @autotune constant of the kernel (it has {})",
                constants.join(", ")
            ),
            BindError::NoPickedVariant {
                name,
                value,
                candidates,
            } => write!(
                f,
                "no variant is compiled for {name} = {value} (compiled for {name} in {candidates:?})"
            ),
            BindError::Inconsistent(message) => {
                write!(f, "the metadata is inconsistent: {message}")
            }
            BindError::MissingGrid => {
                f.write_str("the kernel has no @grid, so the launch needs a grid")
            }
            BindError::InvalidGrid(message) => write!(f, "invalid grid: {message}"),
            BindError::GridTooLarge { grid, limit } => write!(
                f,
                "grid {grid:?} exceeds the device's limit {limit:?}"
            ),
            BindError::BlockTooLarge { threads, limit } => write!(
                f,
                "{threads} threads per CTA, the device allows 1 to {limit}"
            ),
            BindError::SharedMemoryTooLarge { bytes, limit } => write!(
                f,
                "{bytes} bytes of shared memory per CTA, the device allows {limit}"
            ),
        }
    }
}

impl std::error::Error for BindError {}

impl BindError {
    /// One refusal of every kind, for the snapshot of their messages
    /// (`tests/refusals.rs`) and the callers' tests of their own notes.
    pub fn examples() -> Vec<BindError> {
        let bound = |param: &str, axis, value| {
            Box::new(BoundDim {
                name: "K".into(),
                value,
                param: param.into(),
                axis,
            })
        };
        vec![
            BindError::Arity {
                given: 2,
                expected: 3,
            },
            BindError::Kind {
                param: "x".into(),
                expected: "tensor<f32>[N]".into(),
                given: "tensor<i32>".into(),
            },
            BindError::Rank {
                param: "W".into(),
                expected: 2,
                actual: 1,
            },
            BindError::ConstDim {
                param: "x".into(),
                axis: 1,
                expected: 4,
                actual: 3,
            },
            BindError::DimMismatch {
                dim: "K".into(),
                first: bound("W", 1, 128),
                second: bound("x", 0, 96),
            },
            BindError::DimTooLarge {
                dim: "N".into(),
                value: 1 << 31,
            },
            BindError::BufferTooShort {
                param: "y".into(),
                shape: vec![36, 32],
                needed: 1152,
                available: 1024,
            },
            BindError::AlignedViolated {
                dim: "K".into(),
                value: 96,
                multiple: 128,
            },
            BindError::UnalignedBase {
                param: "W".into(),
                address: 0x1004,
                required: 16,
            },
            BindError::TensorMapAddress {
                param: "A".into(),
                address: 0x1008,
            },
            BindError::TensorMapStride {
                param: "A".into(),
                axis: 0,
                shape: vec![100, 7],
                stride: 14,
            },
            BindError::TensorMapShape {
                param: "A".into(),
                shape: vec![0, 64],
            },
            BindError::NoVariant {
                dim: "K".into(),
                value: 512,
                candidates: vec![128, 256],
            },
            BindError::UnknownConstant {
                name: "BLOCK".into(),
                constants: vec![],
            },
            BindError::UnknownConstant {
                name: "BLOCK".into(),
                constants: vec!["K".into(), "T".into()],
            },
            BindError::NoPickedVariant {
                name: "K".into(),
                value: 64,
                candidates: vec![128, 256],
            },
            BindError::Inconsistent(
                "`.param` 3 is dim `M`, which the binding has no value for".into(),
            ),
            BindError::MissingGrid,
            BindError::InvalidGrid("cdiv(N, 0) has no value".into()),
            BindError::GridTooLarge {
                grid: [4_294_967_296, 1, 1],
                limit: [2_147_483_647, 65535, 65535],
            },
            BindError::BlockTooLarge {
                threads: 2048,
                limit: 1024,
            },
            BindError::SharedMemoryTooLarge {
                bytes: 102_400,
                limit: 65536,
            },
        ]
    }

    /// The refusal's kind, as the snapshot names it. Every variant is
    /// listed (no `_` arm), so a new one cannot miss its example.
    pub fn kind(&self) -> &'static str {
        match self {
            BindError::Arity { .. } => "Arity",
            BindError::Kind { .. } => "Kind",
            BindError::Rank { .. } => "Rank",
            BindError::ConstDim { .. } => "ConstDim",
            BindError::DimMismatch { .. } => "DimMismatch",
            BindError::DimTooLarge { .. } => "DimTooLarge",
            BindError::BufferTooShort { .. } => "BufferTooShort",
            BindError::AlignedViolated { .. } => "AlignedViolated",
            BindError::UnalignedBase { .. } => "UnalignedBase",
            BindError::TensorMapAddress { .. } => "TensorMapAddress",
            BindError::TensorMapStride { .. } => "TensorMapStride",
            BindError::TensorMapShape { .. } => "TensorMapShape",
            BindError::NoVariant { .. } => "NoVariant",
            BindError::UnknownConstant { .. } => "UnknownConstant",
            BindError::NoPickedVariant { .. } => "NoPickedVariant",
            BindError::Inconsistent(_) => "Inconsistent",
            BindError::MissingGrid => "MissingGrid",
            BindError::InvalidGrid(_) => "InvalidGrid",
            BindError::GridTooLarge { .. } => "GridTooLarge",
            BindError::BlockTooLarge { .. } => "BlockTooLarge",
            BindError::SharedMemoryTooLarge { .. } => "SharedMemoryTooLarge",
        }
    }
}

/// The type of a parameter as the language writes it, e.g.
/// `tensor<f32>[N, 4]` or `i32`.
pub fn describe_param(kind: &ParamKindMeta) -> String {
    match kind {
        ParamKindMeta::Tensor { elem, dims, .. } => {
            let dims: Vec<String> = dims
                .iter()
                .map(|d| match d {
                    DimRefMeta::Named(n) => n.clone(),
                    DimRefMeta::Const(c) => c.to_string(),
                })
                .collect();
            format!("tensor<{}>[{}]", elem.name(), dims.join(", "))
        }
        ParamKindMeta::Scalar(t) => t.name().to_string(),
    }
}

/// Binds a launch of `meta`.
pub fn bind<'m>(meta: &'m KernelMeta, req: &LaunchRequest<'_>) -> Result<Binding<'m>, BindError> {
    check_kinds(meta, req.args)?;
    let dims = bind_dims(meta, req.args)?;
    check_aligned(meta, req.args, &dims)?;
    let candidates = matching_variants(meta, &dims, req.picked)?;
    Ok(Binding {
        meta,
        dims,
        candidates,
        given_grid: req.grid,
        limits: req.limits,
    })
}

impl<'m> Binding<'m> {
    /// The metadata of the kernel bound.
    pub fn meta(&self) -> &'m KernelMeta {
        self.meta
    }

    /// The value of a dim.
    pub fn dim(&self, name: &str) -> Option<u64> {
        self.dims.iter().find(|d| d.name == name).map(|d| d.value)
    }

    /// The shape of the tensor parameter at index `param`, outermost axis
    /// first, from its constant axes and the bound dims (`None`: not a
    /// tensor, or a dim the binding has no value for). Inline up to
    /// [`INLINE_DIMS`] axes.
    pub fn tensor_shape(&self, param: usize) -> Option<SmallVec<[u64; INLINE_DIMS]>> {
        let ParamKindMeta::Tensor { dims, .. } = &self.meta.params.get(param)?.kind else {
            return None;
        };
        dims.iter()
            .map(|d| match d {
                DimRefMeta::Const(c) => Some(*c),
                DimRefMeta::Named(n) => self.dim(n),
            })
            .collect()
    }

    /// The first candidate: what runs when nothing is timed.
    pub fn first(&self) -> &'m VariantMeta {
        self.candidates[0]
    }

    /// Whether timing could choose among the candidates: more than one fits
    /// and each gets a grid of its own (a grid given by the caller was
    /// computed for one variant and cannot follow another).
    pub fn tunable(&self) -> bool {
        self.candidates.len() > 1 && self.given_grid.is_none() && grid_follows_variants(self.meta)
    }

    /// The grid of `variant`: the caller's, or its `@grid` over the dims;
    /// checked against the device limits. Without either it is
    /// [`BindError::MissingGrid`].
    pub fn grid(&self, variant: &VariantMeta) -> Result<[u32; 3], BindError> {
        let grid: [u64; 3] = match (
            self.given_grid,
            variant.grid.as_ref().or(self.meta.grid.as_ref()),
        ) {
            (Some(g), _) => g.map(u64::from),
            (None, Some(exprs)) => {
                if exprs.is_empty() || exprs.len() > 3 {
                    return Err(BindError::InvalidGrid(format!(
                        "@grid has {} expressions",
                        exprs.len()
                    )));
                }
                let mut g = [1u64; 3];
                for (slot, expr) in g.iter_mut().zip(exprs) {
                    let v = self
                        .eval_grid(expr, variant)
                        .map_err(BindError::InvalidGrid)?;
                    *slot = u64::try_from(v)
                        .map_err(|_| BindError::InvalidGrid(format!("@grid gives {v}")))?;
                }
                g
            }
            (None, None) => return Err(BindError::MissingGrid),
        };
        if let Some(axis) = grid.iter().position(|&g| g == 0) {
            let from = match self.given_grid {
                Some(_) => "",
                None => " (computed by `@grid`: is a tensor empty?)",
            };
            return Err(BindError::InvalidGrid(format!(
                "the grid {} x {} x {} has no CTA along {}{from}; a launch needs at least one along each axis",
                grid[0],
                grid[1],
                grid[2],
                ["x", "y", "z"][axis]
            )));
        }
        let limit = self.limits.max_grid;
        if grid.iter().zip(limit).any(|(&g, l)| g > u64::from(l)) {
            return Err(BindError::GridTooLarge { grid, limit });
        }
        Ok(grid.map(|g| g as u32))
    }

    /// Evaluates one `@grid` expression. Besides dims, the names
    /// `ctx.warps`, `ctx.threads` and `ctx.lanes` stand for the variant's CTA
    /// shape, and a tuning constant for the variant's value.
    pub fn eval_grid(&self, expr: &GridExpr, variant: &VariantMeta) -> Result<i64, String> {
        expr.eval(&|name| match name {
            "ctx.warps" => Some(i64::from(variant.threads / 32)),
            "ctx.threads" => Some(i64::from(variant.threads)),
            "ctx.lanes" => Some(32),
            _ => variant
                .values
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .or_else(|| self.dim(name).and_then(|v| i64::try_from(v).ok())),
        })
    }

    /// The CTA shape and shared memory of `variant` against the device.
    pub fn check_block(&self, variant: &VariantMeta) -> Result<(), BindError> {
        let limits = &self.limits;
        if variant.threads == 0 || variant.threads > limits.max_threads_per_block {
            return Err(BindError::BlockTooLarge {
                threads: variant.threads,
                limit: limits.max_threads_per_block,
            });
        }
        if variant.shared_bytes > limits.max_shared_bytes_per_block {
            return Err(BindError::SharedMemoryTooLarge {
                bytes: variant.shared_bytes,
                limit: limits.max_shared_bytes_per_block,
            });
        }
        Ok(())
    }

    /// The entry's `.param` values in `ptx_params` order, one by one (a
    /// launch collects them where it wants, without a list of its own).
    pub fn ptx_args<'a>(
        &'a self,
        variant: &'a VariantMeta,
    ) -> impl Iterator<Item = Result<PtxValue, BindError>> + use<'a, 'm> {
        let find = move |name: &str| {
            self.meta
                .params
                .iter()
                .position(|p| p.name == name)
                .ok_or_else(|| {
                    BindError::Inconsistent(format!(
                        "the entry names an unknown parameter `{name}`"
                    ))
                })
        };
        variant.ptx_params.iter().map(move |p| match p {
            PtxParam::TensorPtr(name) => {
                let i = find(name)?;
                match self.meta.params[i].kind {
                    ParamKindMeta::Tensor { .. } => Ok(PtxValue::Tensor(i)),
                    ParamKindMeta::Scalar(_) => {
                        Err(BindError::Inconsistent(format!("`{name}` is not a tensor")))
                    }
                }
            }
            PtxParam::Scalar(name, _) => {
                let i = find(name)?;
                match self.meta.params[i].kind {
                    ParamKindMeta::Scalar(_) => Ok(PtxValue::Scalar(i)),
                    ParamKindMeta::Tensor { .. } => {
                        Err(BindError::Inconsistent(format!("`{name}` is not a scalar")))
                    }
                }
            }
            PtxParam::TensorMap {
                tensor,
                box_dims,
                swizzle,
            } => {
                let i = find(tensor)?;
                match &self.meta.params[i].kind {
                    ParamKindMeta::Tensor { elem, dims, .. } => Ok(PtxValue::TensorMap {
                        tensor: i,
                        map: TensorMapSpec::new(tensor, *elem, dims.len(), box_dims, *swizzle)?,
                    }),
                    ParamKindMeta::Scalar(_) => Err(BindError::Inconsistent(format!(
                        "the entry has a tensor map of `{tensor}`, which is not a tensor"
                    ))),
                }
            }
            PtxParam::Dim(name) => self
                .dim(name)
                .and_then(|v| i32::try_from(v).ok())
                .map(PtxValue::Dim)
                .ok_or_else(|| BindError::Inconsistent(format!("no tensor carries dim `{name}`"))),
        })
    }
}

/// True when each variant carries its own `@grid` (metadata from this
/// compiler), or when the kernel's `@grid` refers to a free tuning constant
/// or to the CTA shape, so that it gives each variant its own grid.
pub fn grid_follows_variants(meta: &KernelMeta) -> bool {
    if meta.grid.is_none() {
        return false;
    }
    if meta.variants.iter().all(|v| v.grid.is_some()) {
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
    let mut names: Vec<&str> = free_constants(meta).collect();
    names.extend(["ctx.warps", "ctx.threads"]);
    meta.grid
        .as_ref()
        .is_some_and(|g| g.iter().any(|e| mentions(e, &names)))
}

/// The `@autotune` names that are not dims.
fn free_constants(meta: &KernelMeta) -> impl Iterator<Item = &str> {
    meta.autotune
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !meta.dims.iter().any(|d| d.name == *n))
}

fn type_text(kind: &ParamKindMeta) -> String {
    match kind {
        ParamKindMeta::Tensor { elem, .. } => format!("tensor<{}>", elem.name()),
        ParamKindMeta::Scalar(ty) => ty.name().to_string(),
    }
}

fn check_kinds(meta: &KernelMeta, args: &[ArgShape<'_>]) -> Result<(), BindError> {
    if args.len() != meta.params.len() {
        return Err(BindError::Arity {
            given: args.len(),
            expected: meta.params.len(),
        });
    }
    for (param, arg) in meta.params.iter().zip(args) {
        match (&param.kind, arg) {
            (ParamKindMeta::Tensor { elem, .. }, ArgShape::Tensor { elem: given, .. })
                if elem == given => {}
            (ParamKindMeta::Scalar(ty), ArgShape::Scalar(given)) if ty == given => {}
            (kind, _) => {
                let given = match arg {
                    ArgShape::Tensor { elem, .. } => format!("tensor<{}>", elem.name()),
                    ArgShape::Scalar(ty) => ty.name().to_string(),
                };
                return Err(BindError::Kind {
                    param: param.name.clone(),
                    expected: type_text(kind),
                    given,
                });
            }
        }
    }
    Ok(())
}

/// Rank, constant axes, agreeing dims, dim range and buffer length of every
/// tensor; returns the dims' values in the order they were first carried.
fn bind_dims<'m>(
    meta: &'m KernelMeta,
    args: &[ArgShape<'_>],
) -> Result<SmallVec<[DimValue<'m>; INLINE_DIMS]>, BindError> {
    let mut dims: SmallVec<[DimValue<'m>; INLINE_DIMS]> = SmallVec::new();
    for (param, arg) in meta.params.iter().zip(args) {
        let (
            ParamKindMeta::Tensor { dims: axes, .. },
            ArgShape::Tensor {
                shape, capacity, ..
            },
        ) = (&param.kind, arg)
        else {
            continue;
        };
        if shape.len() != axes.len() {
            return Err(BindError::Rank {
                param: param.name.clone(),
                expected: axes.len(),
                actual: shape.len(),
            });
        }
        for (axis, (dim, &value)) in axes.iter().zip(shape.iter()).enumerate() {
            match dim {
                DimRefMeta::Const(c) if *c != value => {
                    return Err(BindError::ConstDim {
                        param: param.name.clone(),
                        axis,
                        expected: *c,
                        actual: value,
                    })
                }
                DimRefMeta::Const(_) => {}
                DimRefMeta::Named(name) => {
                    let here = DimValue {
                        name,
                        value,
                        param: &param.name,
                        axis,
                    };
                    match dims.iter().find(|d| d.name == name) {
                        Some(first) if first.value != value => {
                            return Err(BindError::DimMismatch {
                                dim: name.clone(),
                                first: Box::new(first.to_bound()),
                                second: Box::new(here.to_bound()),
                            })
                        }
                        Some(_) => {}
                        None if value > i32::MAX as u64 => {
                            return Err(BindError::DimTooLarge {
                                dim: name.clone(),
                                value,
                            })
                        }
                        None => dims.push(here),
                    }
                }
            }
        }
        if let Some(available) = capacity {
            let needed = shape
                .iter()
                .try_fold(1u64, |n, &d| n.checked_mul(d))
                .unwrap_or(u64::MAX);
            if needed > *available {
                return Err(BindError::BufferTooShort {
                    param: param.name.clone(),
                    shape: shape.to_vec(),
                    needed,
                    available: *available,
                });
            }
        }
    }
    Ok(dims)
}

/// `@aligned` facts and the base alignment of vector-accessed tensors.
fn check_aligned(
    meta: &KernelMeta,
    args: &[ArgShape<'_>],
    dims: &[DimValue<'_>],
) -> Result<(), BindError> {
    for (dim, multiple) in &meta.aligned {
        if let Some(d) = dims.iter().find(|d| d.name == dim) {
            if *multiple != 0 && !d.value.is_multiple_of(*multiple) {
                return Err(BindError::AlignedViolated {
                    dim: dim.clone(),
                    value: d.value,
                    multiple: *multiple,
                });
            }
        }
    }
    for (param, arg) in meta.params.iter().zip(args) {
        if let (
            ParamKindMeta::Tensor {
                vector_bytes, elem, ..
            },
            ArgShape::Tensor {
                address: Some(address),
                ..
            },
        ) = (&param.kind, arg)
        {
            let required = (*vector_bytes).max(elem.size());
            if required > 1 && !address.is_multiple_of(u64::from(required)) {
                return Err(BindError::UnalignedBase {
                    param: param.name.clone(),
                    address: *address,
                    required,
                });
            }
        }
    }
    Ok(())
}

/// The variants whose autotuned dims equal the actual dims and whose free
/// constants equal the picked values.
fn matching_variants<'m>(
    meta: &'m KernelMeta,
    dims: &[DimValue<'_>],
    picked: &[(String, i64)],
) -> Result<SmallVec<[&'m VariantMeta; INLINE_CANDIDATES]>, BindError> {
    let dim_value = |name: &str| dims.iter().find(|d| d.name == name).map(|d| d.value);
    for (name, values) in &meta.autotune {
        if let Some(actual) = dim_value(name) {
            if !values.iter().any(|&v| u64::try_from(v) == Ok(actual)) {
                return Err(BindError::NoVariant {
                    dim: name.clone(),
                    value: actual,
                    candidates: values.clone(),
                });
            }
        }
    }
    for (name, value) in picked {
        if !free_constants(meta).any(|n| n == name) {
            return Err(BindError::UnknownConstant {
                name: name.clone(),
                constants: free_constants(meta).map(str::to_string).collect(),
            });
        }
        let values = meta
            .autotune
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&[][..], |(_, v)| v);
        if !values.contains(value) {
            return Err(BindError::NoPickedVariant {
                name: name.clone(),
                value: *value,
                candidates: values.to_vec(),
            });
        }
    }
    let matching: SmallVec<_> = meta
        .variants
        .iter()
        .filter(|v| {
            v.values.iter().all(|(name, value)| {
                let dim_ok = dim_value(name).is_none_or(|d| u64::try_from(*value) == Ok(d));
                let pick_ok = picked
                    .iter()
                    .find(|(n, _)| n == name)
                    .is_none_or(|(_, p)| p == value);
                dim_ok && pick_ok
            })
        })
        .collect();
    if matching.is_empty() {
        return Err(BindError::Inconsistent(
            "no variant is listed for these dims".to_string(),
        ));
    }
    Ok(matching)
}
