//! The one parser of scalar launch arguments written as text (the CLI's
//! `PARAM=VALUE`): `phobos sim`, `phobos explain` and `phobos profile` all
//! read a scalar parameter's value with [`ScalarValue::parse`], against the
//! parameter's own type, so one spelling means one value everywhere and a
//! value the type cannot hold is refused, never wrapped, clamped or
//! truncated: `300` for a `u8`, `-1` for a `u32`, `2.5` for an `i32`,
//! `true` for an `f32` or `1e39` for an `f32` are errors naming the type.

use crate::ast::ScalarTy;

/// A scalar parameter's value, held as its bits in the parameter's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarValue {
    ty: ScalarTy,
    /// The value's bits, zero-extended (integers are stored two's
    /// complement in `ty`'s width).
    bits: u64,
}

impl ScalarValue {
    /// Parses `text` as a value of `ty` for parameter `name`.
    ///
    /// Integers: decimal or `0x` hex, `_` separators, a leading `-` for
    /// signed types; the value must fit `ty`. Floats: any decimal or
    /// exponent form, `inf` and `nan`; a finite value must stay finite in
    /// `ty` (it is then rounded to nearest). Bools: `true`, `false`, `1`,
    /// `0`.
    pub fn parse(name: &str, ty: ScalarTy, text: &str) -> Result<ScalarValue, String> {
        let bad = || {
            format!(
                "`{text}` is not a value of type {} for scalar `{name}`{}",
                ty.name(),
                match ty {
                    ScalarTy::Bool => " (give true, false, 1 or 0)",
                    t if t.is_float() => " (give a decimal number, inf or nan)",
                    _ => " (give a whole number, decimal or 0x hex)",
                }
            )
        };
        let t = text.trim().replace('_', "");
        let bits = match ty {
            ScalarTy::Bool => match t.as_str() {
                "true" | "1" => 1,
                "false" | "0" => 0,
                _ => return Err(bad()),
            },
            ScalarTy::F16
            | ScalarTy::BF16
            | ScalarTy::F32
            | ScalarTy::F64
            | ScalarTy::F8E4M3
            | ScalarTy::F8E5M2 => {
                let v: f64 = t.parse().map_err(|_| bad())?;
                let spelled = t.to_ascii_lowercase();
                let bits = match ty {
                    ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => {
                        u64::from(phobos_meta::f8::encode(v, ty))
                    }
                    ScalarTy::F16 => u64::from(half::f16::from_f64(v).to_bits()),
                    ScalarTy::BF16 => u64::from(half::bf16::from_f64(v).to_bits()),
                    ScalarTy::F32 => u64::from((v as f32).to_bits()),
                    _ => v.to_bits(),
                };
                let value = ScalarValue { ty, bits };
                let asked_for = spelled.contains("inf") || spelled.contains("nan");
                if !asked_for && !value.to_f64().is_finite() {
                    return Err(format!(
                        "{text} is out of range for scalar `{name}` of type {} (it would become infinity)",
                        ty.name()
                    ));
                }
                // The 8-bit floats saturate rather than overflow (PTX's
                // `satfinite`): a number beyond the largest finite value
                // would silently become it, so it is refused here too.
                if let Some(max) = phobos_meta::f8::max(ty) {
                    if v.is_finite() && v.abs() > max {
                        return Err(format!(
                            "{text} is out of range for scalar `{name}` of type {} (largest finite value {max})",
                            ty.name()
                        ));
                    }
                }
                bits
            }
            _ => {
                let (neg, digits) = match t.strip_prefix('-') {
                    Some(d) => (true, d),
                    None => (false, t.as_str()),
                };
                // `i128::from_str_radix` takes a sign of its own (`+5` is
                // 5): after a `-`, a second one (`--1`, `-+1`) is not a
                // number.
                if neg && digits.starts_with(['+', '-']) {
                    return Err(bad());
                }
                let v = match digits.strip_prefix("0x") {
                    Some(h) => i128::from_str_radix(h, 16),
                    None => digits.parse::<i128>(),
                }
                .map_err(|_| bad())?;
                let v = if neg { -v } else { v };
                let (lo, hi) = int_range(ty);
                if v < lo || v > hi {
                    return Err(format!(
                        "{} is out of range for scalar `{name}` of type {} ({lo} to {hi})",
                        text.trim(),
                        ty.name()
                    ));
                }
                let width = ty.size() * 8;
                (v as u64) & (u64::MAX >> (64 - width))
            }
        };
        Ok(ScalarValue { ty, bits })
    }

    /// The parameter's type.
    pub fn ty(self) -> ScalarTy {
        self.ty
    }

    /// The value's bytes as the kernel's parameter holds them: little-endian,
    /// `ty().size()` of them (a bool is one byte, 0 or 1).
    pub fn to_le_bytes(self) -> Vec<u8> {
        self.bits.to_le_bytes()[..self.ty.size() as usize].to_vec()
    }

    /// The value as an `f64` (exact for every type but 64-bit integers
    /// above 2^53), for showing it and evaluating expressions over it.
    pub fn to_f64(self) -> f64 {
        let b = self.bits;
        match self.ty {
            ScalarTy::Bool | ScalarTy::U8 | ScalarTy::U16 | ScalarTy::U32 | ScalarTy::U64 => {
                b as f64
            }
            ScalarTy::I8 => f64::from(b as u8 as i8),
            ScalarTy::I16 => f64::from(b as u16 as i16),
            ScalarTy::I32 => f64::from(b as u32 as i32),
            ScalarTy::I64 => b as i64 as f64,
            ScalarTy::F16 => half::f16::from_bits(b as u16).to_f64(),
            ScalarTy::BF16 => half::bf16::from_bits(b as u16).to_f64(),
            ScalarTy::F32 => f64::from(f32::from_bits(b as u32)),
            ScalarTy::F64 => f64::from_bits(b),
            ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => phobos_meta::f8::decode(b as u8, self.ty),
        }
    }
}

/// The values an integer type holds.
fn int_range(ty: ScalarTy) -> (i128, i128) {
    let bits = ty.size() * 8;
    if ty.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(ty: ScalarTy, text: &str) -> Result<ScalarValue, String> {
        ScalarValue::parse("p", ty, text)
    }

    #[test]
    fn integers_in_range_parse_and_others_are_refused_naming_the_type() {
        assert_eq!(parse(ScalarTy::U8, "255").unwrap().to_f64(), 255.0);
        assert_eq!(parse(ScalarTy::I8, "-128").unwrap().to_le_bytes(), [0x80]);
        assert_eq!(
            parse(ScalarTy::U32, "0xffff_ffff").unwrap().to_f64(),
            4294967295.0
        );
        assert_eq!(parse(ScalarTy::I64, "-1").unwrap().to_le_bytes(), [0xff; 8]);
        assert_eq!(parse(ScalarTy::U8, "+5").unwrap().to_f64(), 5.0);
        assert_eq!(parse(ScalarTy::I16, "-0x10").unwrap().to_f64(), -16.0);
        let e = parse(ScalarTy::U8, "300").unwrap_err();
        assert!(
            e.contains("300 is out of range") && e.contains("type u8 (0 to 255)"),
            "{e}"
        );
        let e = parse(ScalarTy::U32, "-1").unwrap_err();
        assert!(e.contains("type u32"), "{e}");
        for text in ["2.5", "true", "1e3", "--1", "-+1", ""] {
            let e = parse(ScalarTy::I32, text).unwrap_err();
            assert!(e.contains("of type i32"), "{text}: {e}");
        }
    }

    #[test]
    fn eight_bit_floats_round_to_nearest_even_and_refuse_what_would_saturate() {
        assert_eq!(
            parse(ScalarTy::F8E4M3, "1.5").unwrap().to_le_bytes(),
            [0x3c]
        );
        assert_eq!(parse(ScalarTy::F8E4M3, "1.0625").unwrap().to_f64(), 1.0);
        assert_eq!(parse(ScalarTy::F8E5M2, "-2").unwrap().to_le_bytes(), [0xc0]);
        let e = parse(ScalarTy::F8E4M3, "449").unwrap_err();
        assert!(e.contains("type f8e4m3") && e.contains("448"), "{e}");
        assert!(parse(ScalarTy::F8E5M2, "57344").is_ok());
        assert!(parse(ScalarTy::F8E5M2, "60000").is_err());
    }

    #[test]
    fn floats_stay_finite_in_their_own_type() {
        assert_eq!(
            parse(ScalarTy::F32, "0.5").unwrap().to_le_bytes(),
            0.5f32.to_le_bytes()
        );
        assert!(parse(ScalarTy::F32, "1e999").is_err());
        let e = parse(ScalarTy::F32, "1e39").unwrap_err();
        assert!(e.contains("type f32") && e.contains("infinity"), "{e}");
        assert!(parse(ScalarTy::F16, "70000").is_err());
        assert_eq!(parse(ScalarTy::F64, "1e39").unwrap().to_f64(), 1e39);
        assert!(parse(ScalarTy::F32, "-inf").unwrap().to_f64().is_infinite());
        for text in ["true", "0x10", "1.0.0"] {
            let e = parse(ScalarTy::F32, text).unwrap_err();
            assert!(e.contains("of type f32"), "{text}: {e}");
        }
    }

    #[test]
    fn bools_are_true_false_one_or_zero() {
        assert_eq!(parse(ScalarTy::Bool, "true").unwrap().to_le_bytes(), [1]);
        assert_eq!(parse(ScalarTy::Bool, "0").unwrap().to_le_bytes(), [0]);
        for text in ["2", "yes", "1.0"] {
            assert!(parse(ScalarTy::Bool, text)
                .unwrap_err()
                .contains("type bool"));
        }
    }
}
