//! Bit-exact scalar semantics of the PTX operations: integer helpers,
//! `prmt`, `dp4a`/`dp2a`, `bfe`/`bfi`, float flushing and saturation,
//! comparisons, and `cvt` with every rounding mode.
//!
//! Values travel as `u64` bit patterns. A value of `n` bits sits in the low
//! bits; the high bits are ignored by every reader (each operation first
//! zero- or sign-extends its inputs to its own width), so writers need not
//! clean them.

use crate::decode::{Cmp, Round, Ty};

/// The low `bits` bits set.
#[inline(always)]
/// Whether `op` on f32 exists only as an `.approx` instruction.
pub(crate) fn is_approx_f32(op: crate::decode::FloatOp) -> bool {
    use crate::decode::FloatOp::*;
    matches!(op, Sin | Cos | Ex2 | Lg2 | Tanh | Rsqrt)
}

/// The worst-case model of an f32 `.approx` instruction: `exact` (the
/// correctly computed result for input `x`) moved by the instruction's
/// documented maximum error (PTX ISA 9.7.3 "Floating Point Instructions":
/// 9.7.3.16 `rsqrt`, 9.7.3.18 `sin`, 9.7.3.19 `cos`, 9.7.3.20 `lg2`,
/// 9.7.3.21 `ex2`, 9.7.3.22 `tanh`):
///
/// | instruction | maximum error | where |
/// |---|---|---|
/// | `sin`, `cos` | 2^-20.5 absolute | \|x\| <= 2 pi |
/// | `sin`, `cos` | 2^-14.7 absolute | 2 pi < \|x\| <= 100 pi |
/// | `ex2` | 2 ulp from the correctly rounded result | |
/// | `lg2` | 2^-22 absolute | x in (0.5, 2) |
/// | `lg2` | 2^-22 relative | other positive finite x |
/// | `rsqrt` | 2^-22.9 relative | |
/// | `tanh` | 2^-11 relative | |
///
/// `sin` and `cos` have no documented accuracy outside |x| <= 100 pi ("only
/// best effort"), so there the model returns NaN: nothing may depend on
/// it. The direction (up or down) comes from the input's bits, so runs are
/// reproducible and neighbouring inputs err both ways. NaN and infinite
/// results stay as they are.
pub(crate) fn approx_f32(op: crate::decode::FloatOp, x: f32, exact: f32) -> f32 {
    use crate::decode::FloatOp::*;
    if !exact.is_finite() {
        return exact;
    }
    // A 32-bit mix of the input's bits picks the sign.
    let h = x.to_bits().wrapping_mul(0x9E37_79B9);
    let up = h >> 31 == 0;
    let sign = if up { 1.0 } else { -1.0 };
    let e = f64::from(exact);
    let ax = f64::from(x).abs();
    let pi = std::f64::consts::PI;
    let moved = match op {
        Sin | Cos if ax > 100.0 * pi => return f32::NAN,
        Sin | Cos if ax > 2.0 * pi => e + sign * 2f64.powf(-14.7),
        Sin | Cos => e + sign * 2f64.powf(-20.5),
        Lg2 if ax > 0.5 && ax < 2.0 => e + sign * 2f64.powi(-22),
        Lg2 => e * (1.0 + sign * 2f64.powi(-22)),
        // Two representable values away (ex2's result is never negative).
        Ex2 => {
            let b = exact.to_bits();
            return f32::from_bits(if up {
                (b + 2).min(f32::INFINITY.to_bits())
            } else {
                b.saturating_sub(2)
            });
        }
        Rsqrt => e * (1.0 + sign * 2f64.powf(-22.9)),
        Tanh => e * (1.0 + sign * 2f64.powi(-11)),
        _ => e,
    };
    moved as f32
}

pub(crate) fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Zero-extends the low `bits` of `x`.
#[inline(always)]
pub(crate) fn zx(x: u64, bits: u32) -> u64 {
    x & mask(bits)
}

/// Sign-extends the low `bits` of `x`.
#[inline(always)]
pub(crate) fn sx(x: u64, bits: u32) -> i64 {
    let s = 64 - bits.min(64);
    ((x << s) as i64) >> s
}

#[inline(always)]
pub(crate) fn f32_of(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

#[inline(always)]
pub(crate) fn f64_of(x: u64) -> f64 {
    f64::from_bits(x)
}

/// Flushes a subnormal f32 to a zero of the same sign (`.ftz`).
#[inline(always)]
pub(crate) fn ftz32(f: f32) -> f32 {
    if f.is_subnormal() {
        f32::from_bits(f.to_bits() & 0x8000_0000)
    } else {
        f
    }
}

/// Clamps to [0, 1], NaN to +0 (`.sat` on floats).
#[inline(always)]
pub(crate) fn sat_f64(f: f64) -> f64 {
    if f.is_nan() {
        0.0
    } else {
        f.clamp(0.0, 1.0)
    }
}

/// `prmt.b32` in the default mode: each selector nibble picks one of the
/// eight bytes of `{b, a}`; bit 3 of the nibble replicates that byte's sign.
pub(crate) fn prmt(a: u32, b: u32, c: u32) -> u32 {
    let bytes = ((u64::from(b) << 32) | u64::from(a)).to_le_bytes();
    let mut r = 0u32;
    for i in 0..4 {
        let sel = (c >> (4 * i)) & 0xF;
        let byte = bytes[(sel & 7) as usize];
        let v = if sel & 8 != 0 {
            if byte & 0x80 != 0 {
                0xFF
            } else {
                0
            }
        } else {
            byte
        };
        r |= u32::from(v) << (8 * i);
    }
    r
}

fn byte(x: u32, i: u32, signed: bool) -> i64 {
    let b = (x >> (8 * i)) & 0xFF;
    if signed {
        i64::from(b as u8 as i8)
    } else {
        i64::from(b)
    }
}

/// `dp4a`: `c` plus the four byte products, wrapping at 32 bits.
pub(crate) fn dp4a(a: u32, b: u32, c: u32, sa: bool, sb: bool) -> u32 {
    let mut acc = i64::from(c);
    for i in 0..4 {
        acc += byte(a, i, sa) * byte(b, i, sb);
    }
    acc as u32
}

/// `dp2a.lo/hi`: `c` plus the two 16-bit halves of `a` times bytes 0,1 (lo)
/// or 2,3 (hi) of `b`, wrapping at 32 bits.
pub(crate) fn dp2a(a: u32, b: u32, c: u32, hi: bool, sa: bool, sb: bool) -> u32 {
    let half = |i: u32| {
        let h = (a >> (16 * i)) & 0xFFFF;
        if sa {
            i64::from(h as u16 as i16)
        } else {
            i64::from(h)
        }
    };
    let k = if hi { 2 } else { 0 };
    let acc = i64::from(c) + half(0) * byte(b, k, sb) + half(1) * byte(b, k + 1, sb);
    acc as u32
}

/// `bfe`: extract `len` bits at `pos`, sign-filling for signed types.
pub(crate) fn bfe(a: u64, pos: u32, len: u32, bits: u32, signed: bool) -> u64 {
    let msb = bits - 1;
    let pos = pos & 0xFF;
    let len = len & 0xFF;
    let sbit = if !signed || len == 0 {
        0
    } else {
        (a >> (pos + len - 1).min(msb)) & 1
    };
    let mut d = 0u64;
    for i in 0..=msb {
        let bit = if i < len && pos + i <= msb {
            (a >> (pos + i)) & 1
        } else {
            sbit
        };
        d |= bit << i;
    }
    d
}

/// `bfi`: insert the low `len` bits of `a` into `b` at `pos`.
pub(crate) fn bfi(a: u64, b: u64, pos: u32, len: u32, bits: u32) -> u64 {
    let msb = bits - 1;
    let pos = pos & 0xFF;
    let len = len & 0xFF;
    let mut f = b;
    for i in 0..len {
        if pos + i > msb {
            break;
        }
        f = (f & !(1 << (pos + i))) | (((a >> i) & 1) << (pos + i));
    }
    zx(f, bits)
}

/// Integer comparison at `bits`, signed or not.
#[inline(always)]
pub(crate) fn cmp_int(cmp: Cmp, x: u64, y: u64, bits: u32, signed: bool) -> bool {
    use std::cmp::Ordering::*;
    let ord = if signed {
        sx(x, bits).cmp(&sx(y, bits))
    } else {
        zx(x, bits).cmp(&zx(y, bits))
    };
    let uord = zx(x, bits).cmp(&zx(y, bits));
    match cmp {
        Cmp::Eq => ord == Equal,
        Cmp::Ne => ord != Equal,
        Cmp::Lt => ord == Less,
        Cmp::Le => ord != Greater,
        Cmp::Gt => ord == Greater,
        Cmp::Ge => ord != Less,
        Cmp::Lo => uord == Less,
        Cmp::Ls => uord != Greater,
        Cmp::Hi => uord == Greater,
        Cmp::Hs => uord != Less,
        _ => false,
    }
}

/// Float comparison; the `u` forms are true when either input is NaN.
#[inline(always)]
pub(crate) fn cmp_float(cmp: Cmp, x: f64, y: f64) -> bool {
    let unordered = x.is_nan() || y.is_nan();
    match cmp {
        Cmp::Eq => x == y,
        Cmp::Ne => !unordered && x != y,
        Cmp::Lt => x < y,
        Cmp::Le => x <= y,
        Cmp::Gt => x > y,
        Cmp::Ge => x >= y,
        Cmp::Equ => unordered || x == y,
        Cmp::Neu => unordered || x != y,
        Cmp::Ltu => unordered || x < y,
        Cmp::Leu => unordered || x <= y,
        Cmp::Gtu => unordered || x > y,
        Cmp::Geu => unordered || x >= y,
        Cmp::Num => !unordered,
        Cmp::Nan => unordered,
        _ => false,
    }
}

/// A binary float format: explicit mantissa bits, smallest normal
/// exponent, largest finite value.
#[derive(Clone, Copy)]
struct Format {
    man: u32,
    min_exp: i32,
    max: f64,
}

const F16: Format = Format {
    man: 10,
    min_exp: -14,
    max: 65504.0,
};
const BF16: Format = Format {
    man: 7,
    min_exp: -126,
    max: 3.389_531_389_251_535_5e38,
};
const F32: Format = Format {
    man: 23,
    min_exp: -126,
    max: f32::MAX as f64,
};
const F64: Format = Format {
    man: 52,
    min_exp: -1022,
    max: f64::MAX,
};

/// The 8-bit float formats (PTX ISA 5.2.5.1 "Alternate Floating Point
/// Data Formats"): `.e4m3` has bias 7, 3 mantissa bits, no infinities,
/// NaN `0x7f`/`0xff` and largest finite 448; `.e5m2` has bias 15, 2
/// mantissa bits, IEEE infinities and NaNs and largest finite 57344.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum F8 {
    E4m3,
    E5m2,
}

const E4M3: Format = Format {
    man: 3,
    min_exp: -6,
    max: 448.0,
};
const E5M2: Format = Format {
    man: 2,
    min_exp: -14,
    max: 57344.0,
};

impl F8 {
    /// The type of a `cvt` pair modifier (`e4m3x2`) or an `mma` operand
    /// type (`e4m3`).
    pub(crate) fn parse(s: &str) -> Option<F8> {
        match s {
            "e4m3x2" | "e4m3" => Some(F8::E4m3),
            "e5m2x2" | "e5m2" => Some(F8::E5m2),
            _ => None,
        }
    }

    /// The `cvt` pair modifier.
    pub(crate) fn pair_name(self) -> &'static str {
        match self {
            F8::E4m3 => "e4m3x2",
            F8::E5m2 => "e5m2x2",
        }
    }

    fn format(self) -> Format {
        match self {
            F8::E4m3 => E4M3,
            F8::E5m2 => E5M2,
        }
    }

    /// The exact value of the bits `b` (NaN for NaNs, infinities for
    /// `.e5m2`'s).
    pub(crate) fn value(self, b: u8) -> f64 {
        let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
        let (exp, man, bias) = match self {
            F8::E4m3 => ((b >> 3) & 0xF, b & 0x7, 7),
            F8::E5m2 => ((b >> 2) & 0x1F, b & 0x3, 15),
        };
        let fmt = self.format();
        match self {
            F8::E4m3 if b & 0x7F == 0x7F => return f64::NAN,
            F8::E5m2 if exp == 0x1F && man != 0 => return f64::NAN,
            F8::E5m2 if exp == 0x1F => return sign * f64::INFINITY,
            _ => {}
        }
        let frac = f64::from(man) / f64::from(1u32 << fmt.man);
        if exp == 0 {
            sign * frac * 2f64.powi(fmt.min_exp)
        } else {
            sign * (1.0 + frac) * 2f64.powi(i32::from(exp) - bias)
        }
    }

    /// `cvt.rn.satfinite{.relu}` of one value: round to nearest even;
    /// beyond the largest finite value (infinities included) the largest
    /// finite value of the same sign; NaN the canonical NaN `0x7f`
    /// (CUDA's `__nv_cvt_float_to_fp8` gives it for every NaN); `.relu`
    /// makes negative results +0 (NaN stays NaN).
    pub(crate) fn encode_satfinite(self, v: f64, relu: bool) -> u8 {
        if v.is_nan() {
            return 0x7F;
        }
        let fmt = self.format();
        let r = if v.is_infinite() {
            v.signum() * fmt.max
        } else {
            round_float(v, fmt, Round::Rn).clamp(-fmt.max, fmt.max)
        };
        // `.relu` clamps negative results to +0 (-0 included).
        let r = if relu && r.is_sign_negative() { 0.0 } else { r };
        let sign = if r.is_sign_negative() { 0x80u8 } else { 0 };
        let a = r.abs();
        let sub = 2f64.powi(fmt.min_exp);
        let bits = if a < sub {
            (a / 2f64.powi(fmt.min_exp - fmt.man as i32)) as u8
        } else {
            let e = a.log2().floor() as i32;
            let m = (a / 2f64.powi(e - fmt.man as i32)) as u32 - (1 << fmt.man);
            let bias = 1 - fmt.min_exp;
            (((e + bias) as u32) << fmt.man | m) as u8
        };
        sign | bits
    }

    /// `cvt.rn{.relu}.f16x2` of one byte: the value as f16 bits (exact),
    /// NaN the canonical f16 NaN `0x7fff`; `.relu` makes negatives +0.
    pub(crate) fn to_f16_bits(self, b: u8, relu: bool) -> u16 {
        let v = self.value(b);
        if v.is_nan() {
            return 0x7FFF;
        }
        let v = if relu && v.is_sign_negative() { 0.0 } else { v };
        half::f16::from_f64(v).to_bits()
    }
}

fn format_of(ty: Ty) -> Format {
    match ty {
        Ty::F16 => F16,
        Ty::Bf16 => BF16,
        Ty::F32 => F32,
        _ => F64,
    }
}

/// The value at the end of the finite range for a rounding overflow.
fn overflow(negative: bool, fmt: Format, mode: Round) -> f64 {
    let to_inf = match mode {
        Round::Rz => false,
        Round::Rm => negative,
        Round::Rp => !negative,
        _ => true,
    };
    let m = if to_inf { f64::INFINITY } else { fmt.max };
    if negative {
        -m
    } else {
        m
    }
}

fn round_integer(x: f64, mode: Round) -> f64 {
    match mode {
        Round::Rz | Round::Rzi => x.trunc(),
        Round::Rm | Round::Rmi => x.floor(),
        Round::Rp | Round::Rpi => x.ceil(),
        _ => x.round_ties_even(),
    }
}

/// Rounds an f64 to the nearest value of `fmt` in direction `mode`; the
/// result is exactly representable in `fmt`.
fn round_float(v: f64, fmt: Format, mode: Round) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let biased = ((v.to_bits() >> 52) & 0x7FF) as i32;
    let e = if biased == 0 { -1023 } else { biased - 1023 };
    let q = e.max(fmt.min_exp) - fmt.man as i32;
    let scaled = v * 2f64.powi(-q);
    let r = round_integer(scaled, mode) * 2f64.powi(q);
    if r.abs() > fmt.max {
        overflow(v < 0.0, fmt, mode)
    } else {
        r
    }
}

/// Rounds an integer to `fmt` exactly, in direction `mode`.
fn round_int_to_float(v: i128, fmt: Format, mode: Round) -> f64 {
    let neg = v < 0;
    let mag = v.unsigned_abs();
    let digits = 128 - mag.leading_zeros();
    let keep = fmt.man + 1;
    let r = if digits <= keep {
        mag as f64
    } else {
        let shift = digits - keep;
        let mut q = mag >> shift;
        let rem = mag & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        let up = match mode {
            Round::Rz | Round::Rzi => false,
            Round::Rm | Round::Rmi => neg && rem != 0,
            Round::Rp | Round::Rpi => !neg && rem != 0,
            _ => rem > half || (rem == half && q & 1 == 1),
        };
        if up {
            q += 1;
        }
        (q << shift) as f64
    };
    if r > fmt.max {
        return overflow(neg, fmt, mode);
    }
    if neg {
        -r
    } else {
        r
    }
}

/// Reads a float of type `ty` as f64 (exact).
pub(crate) fn read_float(x: u64, ty: Ty, ftz: bool) -> f64 {
    match ty {
        Ty::F16 => half::f16::from_bits(x as u16).to_f64(),
        Ty::Bf16 => half::bf16::from_bits(x as u16).to_f64(),
        Ty::F32 => {
            let f = f32_of(x);
            f64::from(if ftz { ftz32(f) } else { f })
        }
        _ => f64_of(x),
    }
}

/// Encodes an f64 that is exactly representable in `ty`.
fn encode_exact(f: f64, ty: Ty, ftz: bool) -> u64 {
    match ty {
        Ty::F16 => u64::from(half::f16::from_f64(f).to_bits()),
        Ty::Bf16 => u64::from(half::bf16::from_f64(f).to_bits()),
        Ty::F32 => {
            let v = f as f32;
            u64::from(if ftz { ftz32(v) } else { v }.to_bits())
        }
        _ => f.to_bits(),
    }
}

fn int_range(ty: Ty) -> (i128, i128) {
    let bits = ty.bits();
    if ty.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// An integer result of type `dst`, extended to the register as PTX does:
/// sign-extended for signed types, zero-extended for unsigned ones.
fn int_result(v: i128, dst: Ty) -> u64 {
    if dst.is_signed() {
        sx(v as u64, dst.bits()) as u64
    } else {
        zx(v as u64, dst.bits())
    }
}

/// `cvt.rnd.sat.ftz.dst.src` on one value.
pub(crate) fn cvt(x: u64, dst: Ty, src: Ty, rnd: Round, sat: bool, ftz: bool) -> u64 {
    match (src.is_float(), dst.is_float()) {
        (false, false) => {
            let v: i128 = if src.is_signed() {
                i128::from(sx(x, src.bits()))
            } else {
                i128::from(zx(x, src.bits()))
            };
            let v = if sat {
                let (lo, hi) = int_range(dst);
                v.clamp(lo, hi)
            } else {
                v
            };
            int_result(v, dst)
        }
        (false, true) => {
            let v: i128 = if src.is_signed() {
                i128::from(sx(x, src.bits()))
            } else {
                i128::from(zx(x, src.bits()))
            };
            let f = round_int_to_float(v, format_of(dst), rnd);
            let f = if sat { sat_f64(f) } else { f };
            encode_exact(f, dst, ftz)
        }
        (true, false) => {
            let f = read_float(x, src, ftz);
            if f.is_nan() {
                return 0;
            }
            let r = round_integer(
                f,
                match rnd {
                    Round::Default => Round::Rzi,
                    r => r,
                },
            );
            let (lo, hi) = int_range(dst);
            let v = if r <= lo as f64 {
                lo
            } else if r >= hi as f64 {
                hi
            } else {
                r as i128
            };
            int_result(v, dst)
        }
        (true, true) => {
            let f = read_float(x, src, ftz);
            let narrowing = dst.bits() < src.bits()
                || (dst == Ty::Bf16 && src == Ty::F16)
                || (dst == Ty::F16 && src == Ty::Bf16);
            let r = match rnd {
                Round::Rni | Round::Rzi | Round::Rmi | Round::Rpi => {
                    let i = if f.is_finite() {
                        round_integer(f, rnd)
                    } else {
                        f
                    };
                    round_float(i, format_of(dst), Round::Rn)
                }
                _ if narrowing => round_float(f, format_of(dst), rnd),
                _ => f,
            };
            if r.is_nan() {
                return match dst {
                    Ty::F16 => 0x7FFF,
                    Ty::Bf16 => 0x7FFF,
                    Ty::F32 => 0x7FFF_FFFF,
                    _ => f64::NAN.to_bits(),
                };
            }
            let r = if sat { sat_f64(r) } else { r };
            encode_exact(r, dst, ftz)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_bit_floats_decode_round_and_saturate_as_the_ptx_isa_says() {
        for f in [F8::E4m3, F8::E5m2] {
            for b in 0..=255u8 {
                let v = f.value(b);
                let back = f.encode_satfinite(v, false);
                if v.is_nan() {
                    assert_eq!(back, 0x7F);
                } else if v.is_finite() {
                    assert_eq!(back, b, "{f:?} {b:#04x} = {v}");
                    // Every 8-bit float value is an f16 value.
                    let h = f.to_f16_bits(b, false);
                    assert_eq!(half::f16::from_bits(h).to_f64(), v);
                }
            }
        }
        let e4 = F8::E4m3;
        assert_eq!(e4.value(0x7E), 448.0);
        assert_eq!(e4.value(0x01), 2f64.powi(-9));
        assert_eq!(e4.value(0x38), 1.0);
        assert!(e4.value(0xFF).is_nan());
        assert_eq!(e4.encode_satfinite(1.0625, false), 0x38); // tie to even
        assert_eq!(e4.encode_satfinite(1.1875, false), 0x3A); // tie to even (1.25)
        assert_eq!(e4.encode_satfinite(1e6, false), 0x7E);
        assert_eq!(e4.encode_satfinite(f64::NEG_INFINITY, false), 0xFE);
        assert_eq!(e4.encode_satfinite(-3.0, true), 0x00);
        assert_eq!(e4.encode_satfinite(f64::NAN, true), 0x7F);
        let e5 = F8::E5m2;
        assert_eq!(e5.value(0x7B), 57344.0);
        assert_eq!(e5.value(0x7C), f64::INFINITY);
        assert!(e5.value(0x7D).is_nan());
        assert_eq!(e5.value(0x3C), 1.0);
        assert_eq!(e5.encode_satfinite(f64::INFINITY, false), 0x7B);
        assert_eq!(e5.encode_satfinite(2f64.powi(-17), false), 0x00); // half the smallest subnormal: even
        assert_eq!(e5.encode_satfinite(2f64.powi(-17) * 1.5, false), 0x01);
        assert_eq!(e5.to_f16_bits(0x7D, false), 0x7FFF);
        assert_eq!(e5.to_f16_bits(0xBC, true), 0x0000);
    }

    #[test]
    fn prmt_selects_and_replicates_sign() {
        let a = 0x8344_2211;
        let b = 0x7766_55F5;
        assert_eq!(prmt(a, b, 0x3210), a);
        assert_eq!(prmt(a, b, 0x7654), b);
        assert_eq!(prmt(a, b, 0x0123), 0x1122_4483);
        // Selector 0xB picks byte 3 of a (0x83) with sign replicate: 0xFF.
        // Selector 0xC picks byte 4 (0xF5) replicated: 0xFF; 0x9 picks 0x22: 0x00.
        assert_eq!(prmt(a, b, 0x0B9C), 0x11FF_00FF);
    }

    #[test]
    fn dp4a_signed_and_unsigned() {
        let a = u32::from_le_bytes([0xFF, 2, 3, 4]);
        let b = u32::from_le_bytes([1, 1, 1, 0x80]);
        assert_eq!(dp4a(a, b, 10, true, true) as i32, 10 - 1 + 2 + 3 + 4 * -128);
        assert_eq!(dp4a(a, b, 10, false, false), 10 + 255 + 2 + 3 + 4 * 128);
        assert_eq!(dp4a(a, b, 0, true, false) as i32, -1 + 2 + 3 + 4 * 128);
    }

    #[test]
    fn cvt_rounds_in_every_direction() {
        let x = u64::from(2.5f32.to_bits());
        assert_eq!(cvt(x, Ty::S32, Ty::F32, Round::Rni, false, false), 2);
        assert_eq!(cvt(x, Ty::S32, Ty::F32, Round::Rpi, false, false), 3);
        let m = u64::from((-2.5f32).to_bits());
        assert_eq!(
            cvt(m, Ty::S32, Ty::F32, Round::Rmi, false, false) as u32 as i32,
            -3
        );
        assert_eq!(
            cvt(m, Ty::S32, Ty::F32, Round::Rzi, false, false) as u32 as i32,
            -2
        );
        // Float to int saturates; NaN gives 0.
        let big = u64::from(1e20f32.to_bits());
        assert_eq!(
            cvt(big, Ty::S32, Ty::F32, Round::Rzi, false, false),
            0x7FFF_FFFF
        );
        assert_eq!(
            cvt(
                u64::from(f32::NAN.to_bits()),
                Ty::U8,
                Ty::F32,
                Round::Rzi,
                false,
                false
            ),
            0
        );
        // 2^24 + 1 is not an f32: rn ties to even, rp goes up.
        let v = (1u64 << 24) + 1;
        assert_eq!(
            f32_of(cvt(v, Ty::F32, Ty::U32, Round::Rn, false, false)),
            16_777_216.0
        );
        assert_eq!(
            f32_of(cvt(v, Ty::F32, Ty::U32, Round::Rp, false, false)),
            16_777_218.0
        );
        // f32 -> f16: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
        let h = u64::from((1.0f32 + 2f32.powi(-11)).to_bits());
        assert_eq!(cvt(h, Ty::F16, Ty::F32, Round::Rn, false, false), 0x3C00);
        assert_eq!(cvt(h, Ty::F16, Ty::F32, Round::Rp, false, false), 0x3C01);
        assert_eq!(cvt(h, Ty::F16, Ty::F32, Round::Rz, false, false), 0x3C00);
        // Overflow to f16: rn gives inf, rz the largest finite.
        let o = u64::from(70000f32.to_bits());
        assert_eq!(cvt(o, Ty::F16, Ty::F32, Round::Rn, false, false), 0x7C00);
        assert_eq!(cvt(o, Ty::F16, Ty::F32, Round::Rz, false, false), 0x7BFF);
        // Integer saturation.
        assert_eq!(cvt(300, Ty::U8, Ty::S32, Round::Default, true, false), 255);
        assert_eq!(
            cvt(
                (-5i64) as u64,
                Ty::U32,
                Ty::S32,
                Round::Default,
                true,
                false
            ),
            0
        );
        assert_eq!(
            cvt(0xFFFF_FF80, Ty::S64, Ty::S32, Round::Default, false, false),
            (-128i64) as u64
        );
        // Float saturation.
        let s = u64::from(1.5f32.to_bits());
        assert_eq!(
            f32_of(cvt(s, Ty::F32, Ty::F32, Round::Default, true, false)),
            1.0
        );
    }

    #[test]
    fn bfe_sign_fills() {
        assert_eq!(bfe(0xF0, 4, 4, 32, false), 0xF);
        assert_eq!(bfe(0xF0, 4, 4, 32, true), 0xFFFF_FFFF);
        assert_eq!(bfi(0b11, 0, 4, 2, 32), 0b11_0000);
    }
}

#[cfg(test)]
mod approx_tests {
    use super::approx_f32;
    use crate::decode::FloatOp;

    #[test]
    fn the_worst_case_model_moves_each_approx_result_by_its_bound() {
        // ex2: two representable values from the correctly rounded result.
        for x in [1.0f32, 0.3, -5.7, 20.25] {
            let exact = x.exp2();
            let y = approx_f32(FloatOp::Ex2, x, exact);
            assert_eq!(y.to_bits().abs_diff(exact.to_bits()), 2, "{x}");
        }
        // sin within 2 pi: 2^-20.5 absolute, rounded to f32.
        let y = approx_f32(FloatOp::Sin, 0.5, 0.5f32.sin());
        let err = (f64::from(y) - 0.5f64.sin()).abs();
        assert!(err > 2f64.powf(-21.0) && err < 2f64.powf(-20.0), "{err}");
        // Between 2 pi and 100 pi only 2^-14.7.
        let y = approx_f32(FloatOp::Cos, 100.0, 100f32.cos());
        let err = (f64::from(y) - f64::from(100f32.cos())).abs();
        assert!(err > 2f64.powf(-15.0) && err < 2f64.powf(-14.5), "{err}");
        // lg2: absolute in (0.5, 2), relative outside.
        let y = approx_f32(FloatOp::Lg2, 1.5, 1.5f32.log2());
        let err = (f64::from(y) - f64::from(1.5f32.log2())).abs();
        assert!(err > 2f64.powf(-22.5) && err < 2f64.powf(-21.5), "{err}");
        let big = 1.0e30f32;
        let y = approx_f32(FloatOp::Lg2, big, big.log2());
        let rel = ((f64::from(y) - f64::from(big.log2())) / f64::from(big.log2())).abs();
        assert!(rel > 2f64.powf(-22.5) && rel < 2f64.powf(-21.5), "{rel}");
        // Beyond 100 pi sin has no documented bound.
        assert!(approx_f32(FloatOp::Cos, 400.0, 400f32.cos()).is_nan());
        // Both directions occur.
        let signs: Vec<bool> = (1..=16)
            .map(|i| approx_f32(FloatOp::Lg2, i as f32, (i as f32).log2()) > (i as f32).log2())
            .collect();
        assert!(signs.contains(&true) && signs.contains(&false), "{signs:?}");
        // Non-approx ops and non-finite results are untouched.
        assert_eq!(approx_f32(FloatOp::Add, 1.0, 3.0), 3.0);
        assert!(approx_f32(FloatOp::Lg2, -1.0, f32::NAN).is_nan());
        assert_eq!(
            approx_f32(FloatOp::Ex2, 200.0, f32::INFINITY),
            f32::INFINITY
        );
    }
}
