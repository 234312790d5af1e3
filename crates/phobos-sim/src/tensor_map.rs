//! The simulator's tiled tensor map: the 128-byte object that
//! `cp.async.bulk.tensor` reads through its `[tensorMap, {coords}]`
//! operand, made on the host by `cuTensorMapEncodeTiled` (the driver
//! stand-in `phobos-fakecuda` calls [`TensorMap::encode`]).
//!
//! On a GPU the object is opaque; this module owns the one encoding the
//! simulator and its stand-in agree on. It starts with a magic, so 128
//! bytes that no encoder wrote (a wrong kernel argument, a pointer instead
//! of the map) are a clear error, not a copy from a garbage address.
//!
//! [`TensorMap::validate`] applies `cuTensorMapEncodeTiled`'s documented
//! requirements (CUDA driver API, "Tensor Map Object Management"): rank
//! 1-5, global address aligned to 16 bytes, every global dimension in
//! `1..=2^32`, every global stride a multiple of 16 and below 2^40, every
//! box dimension in `1..=256` with the inner one a multiple of 16 bytes,
//! element strides in `1..=8`, and with a swizzle the inner box dimension
//! no wider than the swizzle span. Interleaved layouts, the packed sub-byte
//! types and the NaN out-of-bounds fill are refused as unsupported.
//!
//! Dimensions are ordered as the driver orders them: dimension 0 is the
//! innermost (contiguous) one, and `strides[i]` is the byte stride of
//! dimension `i + 1`.

use std::fmt;

/// The first 8 bytes of every encoded map.
const MAGIC: &[u8; 8] = b"PHOTMAP1";

/// Bytes of an encoded map (`CUtensorMap`, 64-byte aligned).
pub const TENSOR_MAP_BYTES: usize = 128;

/// `CUtensorMapDataType`, the element type of a map (the values are the
/// driver's enum values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorMapType {
    U8 = 0,
    U16 = 1,
    U32 = 2,
    I32 = 3,
    U64 = 4,
    I64 = 5,
    F16 = 6,
    F32 = 7,
    F64 = 8,
    Bf16 = 9,
    F32Ftz = 10,
    Tf32 = 11,
    Tf32Ftz = 12,
}

impl TensorMapType {
    /// The type of the driver's enum value `v`, if the simulator knows it.
    pub fn from_code(v: u32) -> Option<TensorMapType> {
        use TensorMapType::*;
        Some(match v {
            0 => U8,
            1 => U16,
            2 => U32,
            3 => I32,
            4 => U64,
            5 => I64,
            6 => F16,
            7 => F32,
            8 => F64,
            9 => Bf16,
            10 => F32Ftz,
            11 => Tf32,
            12 => Tf32Ftz,
            _ => return None,
        })
    }

    /// Bytes of one element.
    pub fn size(self) -> u32 {
        use TensorMapType::*;
        match self {
            U8 => 1,
            U16 | F16 | Bf16 => 2,
            U32 | I32 | F32 | F32Ftz | Tf32 | Tf32Ftz => 4,
            U64 | I64 | F64 => 8,
        }
    }
}

/// `CUtensorMapSwizzle`: how the copy permutes 16-byte chunks in shared
/// memory (see [`swizzle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    None = 0,
    B32 = 1,
    B64 = 2,
    B128 = 3,
}

impl Swizzle {
    pub fn from_code(v: u32) -> Option<Swizzle> {
        Some(match v {
            0 => Swizzle::None,
            1 => Swizzle::B32,
            2 => Swizzle::B64,
            3 => Swizzle::B128,
            _ => return None,
        })
    }

    /// The span in bytes whose 16-byte chunks are permuted (0: none).
    pub fn span(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }
}

/// The shared-memory byte address where a copy in `mode` puts the byte
/// whose unswizzled address is `addr`: the 16-byte chunk index within the
/// span (address bits 4 and up, one bit for 32B, two for 64B, three for
/// 128B) is XORed with the same number of bits from bit 7 up, the row of
/// 128 bytes within the pattern's repeat (256, 512 or 1024 bytes). This is
/// CUTLASS's `Swizzle<B, 4, 3>` with B = 1, 2, 3, which the PTX ISA's
/// "Tensor swizzling modes" tables draw; the hardware applies it to the
/// absolute shared address, so a tile should start at a multiple of the
/// repeat.
pub fn swizzle(mode: Swizzle, addr: u32) -> u32 {
    let bits = match mode {
        Swizzle::None => return addr,
        Swizzle::B32 => 1,
        Swizzle::B64 => 2,
        Swizzle::B128 => 3,
    };
    let mask = (1u32 << bits) - 1;
    addr ^ (((addr >> 7) & mask) << 4)
}

/// A tiled tensor map, as `cuTensorMapEncodeTiled` describes one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMap {
    pub data_type: TensorMapType,
    /// 1 to 5.
    pub rank: u32,
    /// Device address of element (0, ..., 0).
    pub address: u64,
    /// Elements per dimension, innermost first (`rank` used).
    pub dims: [u64; 5],
    /// Byte stride of dimensions 1..rank (`rank - 1` used).
    pub strides: [u64; 4],
    /// The box a copy moves, in elements per dimension (`rank` used).
    pub box_dims: [u32; 5],
    /// Traversal stride per dimension (1 = every element).
    pub element_strides: [u32; 5],
    pub swizzle: Swizzle,
    /// `CUtensorMapL2promotion` (0-4): a cache hint, kept but ignored.
    pub l2_promotion: u32,
}

/// Why a tensor map is refused: the parameter and the rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMapError(pub String);

impl fmt::Display for TensorMapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TensorMapError {}

fn err<T>(msg: impl Into<String>) -> Result<T, TensorMapError> {
    Err(TensorMapError(msg.into()))
}

impl TensorMap {
    /// Checks the map against `cuTensorMapEncodeTiled`'s requirements.
    pub fn validate(&self) -> Result<(), TensorMapError> {
        let r = self.rank as usize;
        if !(1..=5).contains(&r) {
            return err(format!("tensorRank is {}; it must be 1 to 5", self.rank));
        }
        if !self.address.is_multiple_of(16) {
            return err(format!(
                "globalAddress {:#x} is not aligned to 16 bytes",
                self.address
            ));
        }
        let esize = u64::from(self.data_type.size());
        for (i, &d) in self.dims[..r].iter().enumerate() {
            if d == 0 || d > 1 << 32 {
                return err(format!("globalDim[{i}] is {d}; it must be 1 to 2^32"));
            }
        }
        for (i, &s) in self.strides[..r - 1].iter().enumerate() {
            if !s.is_multiple_of(16) || s >= 1 << 40 {
                return err(format!(
                    "globalStrides[{i}] is {s} bytes; it must be a multiple of 16 below 2^40"
                ));
            }
        }
        for (i, &b) in self.box_dims[..r].iter().enumerate() {
            if b == 0 || b > 256 {
                return err(format!("boxDim[{i}] is {b}; it must be 1 to 256"));
            }
        }
        let inner = u64::from(self.box_dims[0]) * esize;
        if !inner.is_multiple_of(16) {
            return err(format!(
                "boxDim[0] * element size is {inner} bytes; without interleave it must be a multiple of 16"
            ));
        }
        for (i, &e) in self.element_strides[..r].iter().enumerate() {
            if e == 0 || e > 8 {
                return err(format!("elementStrides[{i}] is {e}; it must be 1 to 8"));
            }
        }
        let span = u64::from(self.swizzle.span());
        if span != 0 && inner > span {
            return err(format!(
                "boxDim[0] * element size is {inner} bytes, wider than the {span}-byte swizzle span"
            ));
        }
        if self.l2_promotion > 4 {
            return err(format!(
                "l2Promotion is {}; it must be 0 to 4",
                self.l2_promotion
            ));
        }
        Ok(())
    }

    /// Elements a copy moves along dimension `i`.
    pub fn box_elems(&self, i: usize) -> u32 {
        self.box_dims[i].div_ceil(self.element_strides[i])
    }

    /// Bytes one copy of the box writes to shared memory (the transaction
    /// count it completes on its mbarrier).
    pub fn box_bytes(&self) -> u64 {
        (0..self.rank as usize)
            .map(|i| u64::from(self.box_elems(i)))
            .product::<u64>()
            * u64::from(self.data_type.size())
    }

    /// The 128-byte encoding, after [`TensorMap::validate`].
    pub fn encode(&self) -> Result<[u8; TENSOR_MAP_BYTES], TensorMapError> {
        self.validate()?;
        let mut b = [0u8; TENSOR_MAP_BYTES];
        b[..8].copy_from_slice(MAGIC);
        b[8] = 1; // tiled
        b[9] = self.data_type as u8;
        b[10] = self.rank as u8;
        b[12] = self.swizzle as u8;
        b[13] = self.l2_promotion as u8;
        b[16..24].copy_from_slice(&self.address.to_le_bytes());
        for i in 0..5 {
            // Dimensions are 1..=2^32: stored minus one.
            let d = self.dims[i].saturating_sub(1) as u32;
            b[24 + 4 * i..28 + 4 * i].copy_from_slice(&d.to_le_bytes());
        }
        for i in 0..4 {
            b[48 + 8 * i..56 + 8 * i].copy_from_slice(&self.strides[i].to_le_bytes());
        }
        for i in 0..5 {
            b[80 + i] = self.box_dims[i].saturating_sub(1) as u8;
            b[85 + i] = self.element_strides[i].saturating_sub(1) as u8;
        }
        Ok(b)
    }

    /// Reads an encoding back, refusing bytes no encoder wrote.
    pub fn decode(b: &[u8]) -> Result<TensorMap, TensorMapError> {
        if b.len() != TENSOR_MAP_BYTES || &b[..8] != MAGIC || b[8] != 1 {
            return err(
                "these 128 bytes are no tensor map made by cuTensorMapEncodeTiled (the magic is missing)",
            );
        }
        let data_type = TensorMapType::from_code(u32::from(b[9]))
            .ok_or_else(|| TensorMapError(format!("unknown tensor map data type {}", b[9])))?;
        let swizzle = Swizzle::from_code(u32::from(b[12]))
            .ok_or_else(|| TensorMapError(format!("unknown swizzle mode {}", b[12])))?;
        let rank = u32::from(b[10]);
        let mut m = TensorMap {
            data_type,
            rank,
            address: u64::from_le_bytes(b[16..24].try_into().unwrap_or_default()),
            dims: [1; 5],
            strides: [0; 4],
            box_dims: [1; 5],
            element_strides: [1; 5],
            swizzle,
            l2_promotion: u32::from(b[13]),
        };
        for i in 0..5 {
            let d = u32::from_le_bytes(b[24 + 4 * i..28 + 4 * i].try_into().unwrap_or_default());
            m.dims[i] = u64::from(d) + 1;
            m.box_dims[i] = u32::from(b[80 + i]) + 1;
            m.element_strides[i] = u32::from(b[85 + i]) + 1;
        }
        for i in 0..4 {
            m.strides[i] =
                u64::from_le_bytes(b[48 + 8 * i..56 + 8 * i].try_into().unwrap_or_default());
        }
        m.validate()?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> TensorMap {
        TensorMap {
            data_type: TensorMapType::F16,
            rank: 2,
            address: 0x1000,
            dims: [100, 70, 1, 1, 1],
            strides: [208, 0, 0, 0],
            box_dims: [64, 32, 1, 1, 1],
            element_strides: [1; 5],
            swizzle: Swizzle::B128,
            l2_promotion: 2,
        }
    }

    #[test]
    fn encode_decode_round_trips() {
        let m = map();
        let b = m.encode().unwrap();
        assert_eq!(TensorMap::decode(&b).unwrap(), m);
        assert_eq!(m.box_bytes(), 64 * 32 * 2);
    }

    #[test]
    fn garbage_is_refused() {
        let e = TensorMap::decode(&[7u8; 128]).unwrap_err();
        assert!(e.0.contains("no tensor map"), "{e}");
    }

    #[test]
    fn driver_rules_are_enforced() {
        let bad = |f: &dyn Fn(&mut TensorMap), says: &str| {
            let mut m = map();
            f(&mut m);
            let e = m.encode().unwrap_err();
            assert!(e.0.contains(says), "{e}");
        };
        bad(&|m| m.address = 0x1008, "aligned to 16");
        bad(&|m| m.strides[0] = 200, "multiple of 16");
        bad(&|m| m.box_dims[1] = 257, "boxDim[1]");
        bad(&|m| m.rank = 6, "tensorRank");
        bad(&|m| m.dims[1] = 0, "globalDim[1]");
        bad(&|m| m.element_strides[0] = 9, "elementStrides[0]");
        bad(
            &|m| m.box_dims[0] = 72,
            "wider than the 128-byte swizzle span",
        );
        bad(&|m| m.box_dims[0] = 12, "multiple of 16");
    }

    #[test]
    fn swizzle_patterns_match_cutlass_swizzle_b_4_3() {
        // 128B: chunk bits 4-6 XOR row bits 7-9.
        assert_eq!(swizzle(Swizzle::B128, 0x080), 0x090);
        assert_eq!(swizzle(Swizzle::B128, 0x3F0), 0x380);
        assert_eq!(swizzle(Swizzle::B128, 0x400), 0x400);
        // 64B: bits 4-5 XOR bits 7-8; bit 9 is not used.
        assert_eq!(swizzle(Swizzle::B64, 0x180), 0x1B0);
        assert_eq!(swizzle(Swizzle::B64, 0x200), 0x200);
        // 32B: bit 4 XOR bit 7.
        assert_eq!(swizzle(Swizzle::B32, 0x080), 0x090);
        assert_eq!(swizzle(Swizzle::B32, 0x100), 0x100);
        assert_eq!(swizzle(Swizzle::None, 0x0F0), 0x0F0);
    }
}
