//! Element types: the Rust types a tensor can hold, each tied to the Phobos
//! scalar type it stands for. Owns the byte encoding of elements and scalar
//! arguments; knows nothing about devices.

use phobos_meta::ScalarTy;

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is a Phobos element type (`f32` is `f32`, `half::f16`
/// is `f16`, `bool` is `bool`, stored as one byte).
///
/// Sealed: the set of element types is the language's, not the user's.
pub trait Elem: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The Phobos type this Rust type stands for.
    const TY: ScalarTy;
    /// Appends the little-endian bytes of `self` (as stored on the device).
    fn write_bytes(self, out: &mut Vec<u8>);
    /// Writes the little-endian bytes of `self` to the front of `out`
    /// (every element type fits 8 bytes), without allocating.
    fn write_le(self, out: &mut [u8; 8]);
    /// Reads one element from exactly `TY.size()` little-endian bytes.
    fn read_bytes(bytes: &[u8]) -> Self;
}

macro_rules! numeric_elem {
    ($($t:ty => $ty:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Elem for $t {
            const TY: ScalarTy = ScalarTy::$ty;
            fn write_bytes(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn write_le(self, out: &mut [u8; 8]) {
                let b = self.to_le_bytes();
                out[..b.len()].copy_from_slice(&b);
            }
            fn read_bytes(bytes: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(&bytes[..std::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(raw)
            }
        }
    )*};
}

numeric_elem!(
    i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32,
    i64 => I64, u64 => U64, f32 => F32, f64 => F64,
    half::f16 => F16, half::bf16 => BF16,
);

/// The 8-bit floats are their bits (the `float8` crate's types, which
/// candle uses; their `from_f32` rounds and saturates as the device's
/// `cvt.rn.satfinite` does).
macro_rules! f8_elem {
    ($($t:ty => $ty:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Elem for $t {
            const TY: ScalarTy = ScalarTy::$ty;
            fn write_bytes(self, out: &mut Vec<u8>) {
                out.push(self.to_bits());
            }
            fn write_le(self, out: &mut [u8; 8]) {
                out[0] = self.to_bits();
            }
            fn read_bytes(bytes: &[u8]) -> Self {
                <$t>::from_bits(bytes[0])
            }
        }
    )*};
}

f8_elem!(float8::F8E4M3 => F8E4M3, float8::F8E5M2 => F8E5M2);

impl sealed::Sealed for bool {}
impl Elem for bool {
    const TY: ScalarTy = ScalarTy::Bool;
    fn write_bytes(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn write_le(self, out: &mut [u8; 8]) {
        out[0] = u8::from(self);
    }
    fn read_bytes(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// Encodes a slice of elements as device bytes.
pub(crate) fn to_bytes<T: Elem>(data: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * T::TY.size() as usize);
    for &x in data {
        x.write_bytes(&mut out);
    }
    out
}

/// Decodes device bytes (a whole number of elements) into elements.
pub(crate) fn from_bytes<T: Elem>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(T::TY.size() as usize)
        .map(T::read_bytes)
        .collect()
}

/// A scalar kernel argument, already encoded for the device.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalarArg {
    pub(crate) ty: ScalarTy,
    /// Little-endian bytes, the first `ty.size()` of them (held inline, so
    /// that a launch's scalars allocate nothing).
    pub(crate) bytes: [u8; 8],
}

impl ScalarArg {
    pub fn new<T: Elem>(value: T) -> ScalarArg {
        let mut bytes = [0u8; 8];
        let mut le = [0u8; 8];
        let n = T::TY.size() as usize;
        // Every element type is at most 8 bytes; `write_le` fills `n`.
        value.write_le(&mut le);
        bytes[..n].copy_from_slice(&le[..n]);
        ScalarArg { ty: T::TY, bytes }
    }
    pub fn ty(&self) -> ScalarTy {
        self.ty
    }

    /// The kernel argument the simulator matches against the entry's
    /// `.param` (and the CUDA backend passes as bytes), typed so that it
    /// needs no allocation.
    pub(crate) fn kernel_arg(&self) -> phobos_sim::KernelArg {
        use phobos_sim::KernelArg as K;
        let b = self.bytes;
        let u16_ = u16::from_le_bytes([b[0], b[1]]);
        let u32_ = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let u64_ = u64::from_le_bytes(b);
        match self.ty {
            ScalarTy::Bool | ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => K::U8(b[0]),
            ScalarTy::I8 => K::I8(b[0] as i8),
            ScalarTy::U16 => K::U16(u16_),
            ScalarTy::I16 => K::I16(u16_ as i16),
            ScalarTy::F16 | ScalarTy::BF16 => K::Bits16(u16_),
            ScalarTy::U32 => K::U32(u32_),
            ScalarTy::I32 => K::I32(u32_ as i32),
            ScalarTy::F32 => K::F32(f32::from_bits(u32_)),
            ScalarTy::U64 => K::U64(u64_),
            ScalarTy::I64 => K::I64(u64_ as i64),
            ScalarTy::F64 => K::F64(f64::from_bits(u64_)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_element_type() {
        assert_eq!(
            from_bytes::<f32>(&to_bytes(&[1.5f32, -2.0])),
            vec![1.5, -2.0]
        );
        assert_eq!(from_bytes::<i8>(&to_bytes(&[-3i8, 127])), vec![-3, 127]);
        assert_eq!(
            from_bytes::<bool>(&to_bytes(&[true, false])),
            vec![true, false]
        );
        let e = float8::F8E4M3::from_f32(1.5);
        assert_eq!(to_bytes(&[e]), vec![0x3c]);
        assert_eq!(
            from_bytes::<float8::F8E5M2>(&[0xc0]),
            vec![float8::F8E5M2::from_f32(-2.0)]
        );
        assert_eq!(
            ScalarArg::new(e).kernel_arg(),
            phobos_sim::KernelArg::U8(0x3c)
        );
        let h = half::f16::from_f32(0.5);
        assert_eq!(from_bytes::<half::f16>(&to_bytes(&[h])), vec![h]);
        assert_eq!(to_bytes(&[1u64]).len(), 8);
        assert_eq!(
            ScalarArg::new(2.0f64).kernel_arg(),
            phobos_sim::KernelArg::F64(2.0)
        );
        assert_eq!(
            ScalarArg::new(-3i32).kernel_arg(),
            phobos_sim::KernelArg::I32(-3)
        );
        assert_eq!(
            ScalarArg::new(h).kernel_arg(),
            phobos_sim::KernelArg::Bits16(h.to_bits())
        );
        assert_eq!(
            ScalarArg::new(true).kernel_arg(),
            phobos_sim::KernelArg::U8(1)
        );
        assert_eq!(ScalarArg::new(true).ty(), ScalarTy::Bool);
    }
}
