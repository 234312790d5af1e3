//! The two 8-bit float formats' values, as the compiler and the runtime's
//! host side see them: `encode` is PTX's `cvt.rn.satfinite.{e4m3x2,e5m2x2}`
//! on one value (round to nearest even; beyond the largest finite value,
//! infinities included, the largest finite value of the same sign; NaN the
//! canonical NaN `0x7f`, as CUDA's `__nv_cvt_float_to_fp8` gives it), and
//! `decode` is the exact value of a bit pattern (`cvt.rn.f16x2.{e4m3x2,
//! e5m2x2}` is exact: every f8 value is an f16 value).
//!
//! | format | bias | mantissa bits | largest finite | infinities | NaN |
//! |---|---|---|---|---|---|
//! | `f8e4m3` | 7 | 3 | 448 (`0x7e`) | none | `0x7f`, `0xff` |
//! | `f8e5m2` | 15 | 2 | 57344 (`0x7b`) | `0x7c`, `0xfc` | exponent 31, mantissa ≠ 0 |
//!
//! The simulator has its own implementation (it executes the instructions
//! and is checked against NVIDIA's compiler); this one is for constants,
//! scalar parameters and test references.

use crate::scalar::ScalarTy;

/// The format's exponent bias, explicit mantissa bits and largest finite
/// value; `None` for a type that is not an 8-bit float.
fn format(t: ScalarTy) -> Option<(i32, u32, f64)> {
    match t {
        ScalarTy::F8E4M3 => Some((7, 3, 448.0)),
        ScalarTy::F8E5M2 => Some((15, 2, 57344.0)),
        _ => None,
    }
}

/// The largest finite value of `t`; `None` if `t` is not an 8-bit float.
pub fn max(t: ScalarTy) -> Option<f64> {
    format(t).map(|(_, _, max)| max)
}

/// The canonical NaN both conversions write.
pub const NAN: u8 = 0x7f;

/// `x` rounded to nearest even into the 8-bit float `t`, saturating to the
/// largest finite value (`cvt.rn.satfinite`). Panics if `t` is not an
/// 8-bit float (a caller's bug).
pub fn encode(x: f64, t: ScalarTy) -> u8 {
    let (bias, man, max) = format(t).expect("f8::encode on an 8-bit float type");
    if x.is_nan() {
        return NAN;
    }
    let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
    // Anything at twice the largest finite value saturates: cap it there
    // (infinities included) so the exponent arithmetic stays small.
    let a = x.abs().min(max * 2.0);
    // The quantum at a's exponent (never below the subnormals' quantum).
    let min_exp = 1 - bias;
    let e = if a == 0.0 {
        min_exp
    } else {
        (a.log2().floor() as i32).max(min_exp)
    };
    // log2 can be off by one near powers of two: settle it exactly.
    let e = if e > min_exp && a < 2f64.powi(e) {
        e - 1
    } else if a >= 2f64.powi(e + 1) {
        e + 1
    } else {
        e
    };
    let q = 2f64.powi(e - man as i32);
    let r = ((a / q).round_ties_even() * q).min(max);
    if r == 0.0 {
        return sign;
    }
    // Exact now: r is a value of the format.
    let re = (r.log2().floor() as i32).max(min_exp);
    let re = if r < 2f64.powi(re) && re > min_exp {
        re - 1
    } else {
        re
    };
    let bits = if r < 2f64.powi(min_exp) {
        (r / 2f64.powi(min_exp - man as i32)) as u8
    } else {
        let m = (r / 2f64.powi(re - man as i32)) as u32 - (1 << man);
        (((re + bias) as u32) << man | m) as u8
    };
    sign | bits
}

/// The exact value of the 8-bit float bits `b` of type `t`. Panics if `t`
/// is not an 8-bit float.
pub fn decode(b: u8, t: ScalarTy) -> f64 {
    let (bias, man, _) = format(t).expect("f8::decode on an 8-bit float type");
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((b & 0x7f) >> man);
    let m = f64::from(b & ((1 << man) - 1));
    let top = (1 << (7 - man)) - 1;
    if t == ScalarTy::F8E4M3 && b & 0x7f == 0x7f {
        return f64::NAN;
    }
    if t == ScalarTy::F8E5M2 && exp == top {
        return if m == 0.0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    let scale = 2f64.powi(-(man as i32));
    if exp == 0 {
        sign * m * scale * 2f64.powi(1 - bias)
    } else {
        sign * (1.0 + m * scale) * 2f64.powi(exp - bias)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_round_trips_and_the_limits_are_the_ptx_isas() {
        for t in [ScalarTy::F8E4M3, ScalarTy::F8E5M2] {
            for b in 0..=255u8 {
                let v = decode(b, t);
                if v.is_nan() {
                    assert_eq!(encode(v, t), NAN);
                } else if v.is_infinite() {
                    // satfinite: infinities become the largest finite value.
                    assert_eq!(decode(encode(v, t), t), v.signum() * format(t).unwrap().2);
                } else {
                    assert_eq!(encode(v, t), b, "{t:?} {b:#04x} = {v}");
                }
            }
        }
        assert_eq!(decode(0x7e, ScalarTy::F8E4M3), 448.0);
        assert_eq!(decode(0x7b, ScalarTy::F8E5M2), 57344.0);
        assert_eq!(decode(0x01, ScalarTy::F8E4M3), 2f64.powi(-9));
        assert_eq!(decode(0x01, ScalarTy::F8E5M2), 2f64.powi(-16));
        assert_eq!(decode(0x7c, ScalarTy::F8E5M2), f64::INFINITY);
        assert!(decode(0xff, ScalarTy::F8E4M3).is_nan());
    }

    #[test]
    fn rounding_is_to_nearest_even_and_overflow_saturates() {
        let e4 = ScalarTy::F8E4M3;
        // 1.0625 is halfway between 1.0 and 1.125: even is 1.0.
        assert_eq!(decode(encode(1.0625, e4), e4), 1.0);
        // 1.1875 is halfway between 1.125 and 1.25: even is 1.25.
        assert_eq!(decode(encode(1.1875, e4), e4), 1.25);
        assert_eq!(decode(encode(1.07, e4), e4), 1.125);
        assert_eq!(encode(1e9, e4), 0x7e);
        assert_eq!(encode(-1e9, e4), 0xfe);
        assert_eq!(encode(f64::INFINITY, e4), 0x7e);
        assert_eq!(encode(464.0, e4), 0x7e);
        assert_eq!(encode(f64::NAN, e4), 0x7f);
        assert_eq!(encode(-0.0, e4), 0x80);
        // Half the smallest subnormal rounds to even (zero), a bit more up.
        assert_eq!(encode(2f64.powi(-10), e4), 0x00);
        assert_eq!(encode(2f64.powi(-10) * 1.01, e4), 0x01);
        let e5 = ScalarTy::F8E5M2;
        assert_eq!(encode(f64::NEG_INFINITY, e5), 0xfb);
        assert_eq!(encode(60000.0, e5), 0x7b);
        assert_eq!(decode(encode(3.0e-5, e5), e5), 2f64.powi(-15));
    }
}
