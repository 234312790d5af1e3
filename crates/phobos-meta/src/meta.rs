//! Kernel metadata: everything bindgen, the runtime, the simulator front end
//! and `explain` need to know about a compiled kernel, serialized with `ron`.
//! Contract between phobos-core and the other crates: change additively.

use crate::scalar::{BinOp, ScalarTy};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelMeta {
    pub name: String,
    /// The .pho file the kernel came from (as given to the compiler).
    pub source_file: String,
    pub params: Vec<ParamMeta>,
    pub dims: Vec<DimMeta>,
    /// `@aligned` facts: (dim name, multiple).
    pub aligned: Vec<(String, u64)>,
    /// Threads per CTA. For autotuned `@launch` see each variant.
    pub threads: u32,
    /// `@grid(...)` if the kernel has one.
    pub grid: Option<Vec<GridExpr>>,
    /// The kernel's `@autotune` names and their candidate values.
    pub autotune: Vec<(String, Vec<i64>)>,
    /// One compiled variant per autotune combination (one variant when the
    /// kernel has no `@autotune`), as compiled for the build's first target.
    pub variants: Vec<VariantMeta>,
    /// The variants of each other target whose compiled variants differ
    /// from `variants` (another `.param` list, as sm_90a's tensor maps, or
    /// another shared plan), by target number; a target not listed has
    /// `variants`. Read them through [`KernelMeta::variants_for`]. Absent in
    /// metadata of one target, or where every target compiled alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arch_variants: Vec<(u32, Vec<VariantMeta>)>,
}

impl KernelMeta {
    /// The variants of the image built for target `arch`: the ones a launch
    /// of that image binds, passes `.param`s for and plans shared memory by.
    pub fn variants_for(&self, arch: u32) -> &[VariantMeta] {
        self.arch_variants
            .iter()
            .find(|(a, _)| *a == arch)
            .map_or(&self.variants, |(_, v)| v)
    }

    /// Records the variants target `arch` compiled to (`compiled`, that
    /// target's metadata of the same kernel) when they differ from
    /// `variants`: the one merge of per-target compiles into one metadata
    /// (phobos-build, `phobos build`).
    pub fn add_target(&mut self, arch: u32, compiled: &KernelMeta) {
        if compiled.variants != self.variants && !self.arch_variants.iter().any(|(a, _)| *a == arch)
        {
            self.arch_variants.push((arch, compiled.variants.clone()));
        }
    }

    /// This metadata as a launch of target `arch`'s image sees it: that
    /// target's variants as `variants`, and no `arch_variants`. `None`
    /// when the target's variants are `variants` already.
    pub fn for_target(&self, arch: u32) -> Option<KernelMeta> {
        let (_, variants) = self.arch_variants.iter().find(|(a, _)| *a == arch)?;
        Some(KernelMeta {
            variants: variants.clone(),
            arch_variants: Vec::new(),
            ..self.clone()
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamMeta {
    pub name: String,
    pub kind: ParamKindMeta,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ParamKindMeta {
    Tensor {
        elem: ScalarTy,
        /// Each axis: a named dim or a constant.
        dims: Vec<DimRefMeta>,
        /// False when the kernel never stores to it (shared reference, `ld.global.nc`).
        written: bool,
        /// Largest vector access width in bytes the compiled code makes into
        /// this tensor (the base pointer must be aligned to it; 16 is assumed).
        vector_bytes: u32,
    },
    Scalar(ScalarTy),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum DimRefMeta {
    Named(String),
    Const(u64),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DimMeta {
    pub name: String,
    /// (parameter name, axis) pairs that carry this dim.
    pub defined_by: Vec<(String, usize)>,
    /// True when the dim is an `@autotune` name: each variant fixes its value.
    pub autotuned: bool,
}

/// The `@grid` expression, evaluated by the launcher over the actual dims.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum GridExpr {
    Const(i64),
    Dim(String),
    Binary(BinOp, Box<GridExpr>, Box<GridExpr>),
    Cdiv(Box<GridExpr>, Box<GridExpr>),
    Min(Box<GridExpr>, Box<GridExpr>),
    Max(Box<GridExpr>, Box<GridExpr>),
}

impl GridExpr {
    /// Evaluates the expression; `lookup` gives the value of each name
    /// (`None`: nothing carries that name, an error). Arithmetic that
    /// overflows 64 bits or divides by zero is an error, never a panic.
    pub fn eval(&self, lookup: &dyn Fn(&str) -> Option<i64>) -> Result<i64, String> {
        let overflow = || "@grid overflows 64 bits".to_string();
        Ok(match self {
            GridExpr::Const(c) => *c,
            GridExpr::Dim(name) => lookup(name)
                .ok_or_else(|| format!("@grid names `{name}`, which no tensor carries"))?,
            GridExpr::Cdiv(a, b) => {
                let (a, b) = (a.eval(lookup)?, b.eval(lookup)?);
                if b <= 0 {
                    return Err(format!("@grid divides by {b}"));
                }
                a.checked_add(b - 1).ok_or_else(overflow)?.div_euclid(b)
            }
            GridExpr::Min(a, b) => a.eval(lookup)?.min(b.eval(lookup)?),
            GridExpr::Max(a, b) => a.eval(lookup)?.max(b.eval(lookup)?),
            GridExpr::Binary(op, a, b) => {
                let (a, b) = (a.eval(lookup)?, b.eval(lookup)?);
                let v =
                    crate::consteval::exact(*op, crate::scalar::ScalarTy::I64, a.into(), b.into());
                v.ok().and_then(|v| i64::try_from(v).ok()).ok_or_else(|| {
                    format!(
                        "@grid overflows 64 bits or divides by zero ({a} {} {b})",
                        op.symbol()
                    )
                })?
            }
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantMeta {
    /// The PTX `.entry` name of this variant (`name` or `name__K256`).
    pub entry: String,
    /// The autotune values of this variant, in declaration order.
    pub values: Vec<(String, i64)>,
    pub threads: u32,
    /// This variant's `@grid`, with its `@autotune` values folded in (the
    /// kernel-level `grid` is the first variant's). Absent in metadata
    /// written before per-variant grids existed.
    #[serde(default)]
    pub grid: Option<Vec<GridExpr>>,
    /// The `.param` list of the entry, in order.
    pub ptx_params: Vec<PtxParam>,
    pub shared_bytes: u32,
    pub shared_plan: Vec<SharedBuffer>,
    pub barriers: Vec<BarrierMeta>,
    pub loads: Vec<AccessMeta>,
    /// Where each register array lives (`var acc: f32[4, 4] = ...`), in
    /// declaration order. Absent in metadata written before register arrays.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arrays: Vec<ArrayMeta>,
}

impl VariantMeta {
    /// The shared memory a launch of this variant passes as dynamic shared
    /// memory (`sharedMemBytes`, after raising the function's
    /// `MAX_DYNAMIC_SHARED_SIZE_BYTES` to it): all of `shared_bytes` when it
    /// is above the 48 KB a `.shared` declaration may hold (the entry then
    /// declares its buffer `.extern .shared`), else 0 (the buffer is
    /// static). The backend emits by the same rule.
    pub fn dynamic_shared_bytes(&self) -> u32 {
        dynamic_shared_bytes(self.shared_bytes)
    }

    /// The planned shared buffer that holds byte `offset`, preferring the
    /// one live at source `line` where buffers share bytes.
    pub fn shared_buffer_at(&self, offset: u64, line: Option<u32>) -> Option<&SharedBuffer> {
        let holds = |b: &&SharedBuffer| {
            offset >= u64::from(b.offset) && offset < u64::from(b.offset) + u64::from(b.bytes)
        };
        let live = |b: &&SharedBuffer| match line {
            Some(l) => b.live_lines.0 <= l && l <= b.live_lines.1,
            None => true,
        };
        let mut holding = self.shared_plan.iter().filter(holds);
        holding.clone().find(live).or_else(|| holding.next())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum PtxParam {
    /// `.param .u64` base address of the named tensor parameter.
    TensorPtr(String),
    /// A scalar parameter, passed as its PTX type.
    Scalar(String, ScalarTy),
    /// A runtime dim, passed as `.s32`.
    Dim(String),
    /// A tiled tensor map (`CUtensorMap`) of the tensor parameter named
    /// `tensor`, made by the runtime at launch (`cuTensorMapEncodeTiled` on
    /// a GPU) and passed as `.param .align 64 .b8 NAME[128]`, a grid
    /// constant that `cp.async.bulk.tensor` reads. The map describes the
    /// whole tensor, row-major with the dims its shape binds, innermost
    /// axis first (`globalDim[0]` is the last axis), with the byte strides
    /// of the outer axes; element strides all 1, no interleave, L2
    /// promotion 128B, out-of-bounds elements read as zeros.
    TensorMap {
        tensor: String,
        /// The box one copy moves, in elements, innermost axis first; one
        /// entry per axis of the tensor.
        box_dims: Vec<u32>,
        /// The shared-memory swizzle span in bytes: 0 (none), 32, 64, 128.
        swizzle: u32,
    },
}

/// One buffer of the shared-memory plan. `P` describes its padding: the
/// metadata's [`Padding`], or a view's richer form of it (`phobos explain`'s
/// page adds the row count and total), so a view reuses the plan's fields
/// instead of declaring them again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>"))]
pub struct SharedBuffer<P = Padding> {
    /// The tile's name, or e.g. `sum@12:9` for CTA-collective scratch.
    pub name: String,
    pub offset: u32,
    pub bytes: u32,
    /// Source line range over which the buffer is live.
    pub live_lines: (u32, u32),
    /// A tile whose rows end in elements no access of the kernel reaches
    /// (`shared<f32>[32, 33]` used as 32 x 32): the padding. Absent when
    /// every element may be used, and in metadata written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub padding: Option<P>,
}

impl<P: Copy + Into<Padding>> SharedBuffer<P> {
    /// The padding's byte ranges, `[start, end)` from shared byte 0: the
    /// last `pad_bytes` of each row. Empty without padding.
    pub fn padding_ranges(&self) -> Vec<[u32; 2]> {
        let Some(p) = self.padding.map(Into::into) else {
            return Vec::new();
        };
        (1..=p.rows(self.bytes).unwrap_or(0))
            .map(|r| {
                let end = self.offset + r * p.row_bytes;
                [end - p.pad_bytes, end]
            })
            .collect()
    }

    /// The padding's bytes in all (0 without padding).
    pub fn padding_bytes(&self) -> u32 {
        self.padding
            .map(Into::into)
            .and_then(|p: Padding| Some(p.rows(self.bytes)? * p.pad_bytes))
            .unwrap_or(0)
    }
}

/// The padding of a shared tile: each row of `row_bytes` bytes (the last
/// axis) ends in `pad_bytes` bytes that no access reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Padding {
    pub row_bytes: u32,
    pub pad_bytes: u32,
}

impl Padding {
    /// The rows of a buffer of `buffer_bytes` bytes; `None` for a
    /// zero-byte row, which no real plan has.
    pub fn rows(self, buffer_bytes: u32) -> Option<u32> {
        buffer_bytes.checked_div(self.row_bytes)
    }
}

/// A register array and where the compiler put it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArrayMeta {
    pub name: String,
    /// Source line of the declaration.
    pub line: u32,
    pub elems: u32,
    /// Bytes per thread.
    pub bytes: u32,
    /// In local memory (`.local`) rather than one register per element.
    pub local: bool,
    /// Why local memory: the line and column of an index known only at run
    /// time (empty when in registers).
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BarrierMeta {
    /// Source line the barrier belongs to.
    pub line: u32,
    pub kept: bool,
    /// Why it is needed, or why it was elided.
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AccessMeta {
    /// Source line and column of the subscript.
    pub line: u32,
    pub col: u32,
    /// Tensor parameter or tile name.
    pub target: String,
    pub store: bool,
    /// An atomic read-modify-write (`atom`/`red`; `store` is set too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub atomic: bool,
    /// Elements in the run (1 for a point access).
    pub elems: u32,
    /// Bytes moved by each instruction (e.g. 16 for `v4.f32`).
    pub width_bytes: u32,
    /// Proven alignment of the address in bytes.
    pub align_bytes: u32,
    /// Why not wider (empty when the widest possible was used).
    pub reason: String,
}

/// Static shared memory per CTA on every target: what a `.shared`
/// declaration may hold. A kernel above it takes its shared memory
/// dynamically, up to the target's limit (`phobos_core::max_shared_bytes`).
pub const STATIC_SHARED_LIMIT: u32 = 48 * 1024;

/// The dynamic part of a plan of `total` shared bytes: see
/// [`VariantMeta::dynamic_shared_bytes`].
pub fn dynamic_shared_bytes(total: u32) -> u32 {
    if total > STATIC_SHARED_LIMIT {
        total
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(entry: &str, shared_bytes: u32) -> VariantMeta {
        VariantMeta {
            entry: entry.to_string(),
            values: Vec::new(),
            threads: 128,
            grid: None,
            ptx_params: Vec::new(),
            shared_bytes,
            shared_plan: Vec::new(),
            barriers: Vec::new(),
            loads: Vec::new(),
            arrays: Vec::new(),
        }
    }

    fn meta(shared_bytes: u32) -> KernelMeta {
        KernelMeta {
            name: "k".to_string(),
            source_file: "k.pho".to_string(),
            params: Vec::new(),
            dims: Vec::new(),
            aligned: Vec::new(),
            threads: 128,
            grid: None,
            autotune: Vec::new(),
            variants: vec![variant("k", shared_bytes)],
            arch_variants: Vec::new(),
        }
    }

    #[test]
    fn each_target_has_its_own_variants_only_where_they_differ() {
        let sm_90a = crate::arch::SM_90A;
        let mut merged = meta(1024);
        merged.add_target(80, &meta(1024));
        merged.add_target(sm_90a, &meta(4096));
        merged.add_target(sm_90a, &meta(8192));
        assert_eq!(merged.arch_variants.len(), 1, "{merged:?}");
        assert_eq!(merged.variants_for(75)[0].shared_bytes, 1024);
        assert_eq!(merged.variants_for(80)[0].shared_bytes, 1024);
        assert_eq!(merged.variants_for(sm_90a)[0].shared_bytes, 4096);
        assert!(merged.for_target(80).is_none());
        let seen = merged.for_target(sm_90a).expect("sm_90a differs");
        assert_eq!(seen.variants[0].shared_bytes, 4096);
        assert!(seen.arch_variants.is_empty());
        // Written only when present, and read back; metadata from before
        // the field reads as "every target alike".
        let one = ron::to_string(&meta(1024)).unwrap();
        assert!(!one.contains("arch_variants"), "{one}");
        let text = ron::to_string(&merged).unwrap();
        assert!(text.contains("arch_variants:[(91,"), "{text}");
        assert_eq!(ron::from_str::<KernelMeta>(&text).unwrap(), merged);
        assert_eq!(ron::from_str::<KernelMeta>(&one).unwrap(), meta(1024));
    }
}
