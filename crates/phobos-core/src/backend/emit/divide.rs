//! Integer division and remainder by a constant, strength-reduced: ptxas
//! turns neither `div.u32 r, x, 4` nor `rem.s32 r, x, 3` into anything but
//! its generic reciprocal sequence (about 12 SASS instructions each; see
//! docs/benchmarks.md), so every `div`/`rem` the emitter writes goes through
//! [`Emitter::int_divrem`], which writes instead:
//!
//! - by a power of two `2^k`: a shift or a mask (unsigned), or the shift
//!   with the bias that rounds toward zero (signed, 4 instructions);
//! - by any other 32-bit constant: a multiply-high by a magic number and a
//!   shift (Granlund and Montgomery, "Division by invariant integers using
//!   multiplication", 1994; the computation of the magic numbers follows
//!   Warren, *Hacker's Delight*, 2nd ed., 10-1 and 10-8), 2 to 5
//!   instructions;
//! - the remainder as `x - q * d` (one `mad.lo`).
//!
//! Constant divisors below 2 (and 64-bit divisors that are no power of two)
//! keep `div`/`rem`, so the result is exactly PTX's in every case, division
//! by zero included. [`magic_u32`] and [`magic_s32`] are checked against
//! Rust's division exhaustively in small ranges and at the edges.

use super::{Emitter, Reg, RegClass, V};

/// `(m, s, add)`: `x / d == (mulhi(m, x) >> s)` when `!add`, else
/// `((((x - t) >> 1) + t) >> s)` with `t = mulhi(m, x)`, for every `u32` `x`.
/// `d` is at least 2 and no power of two.
pub(crate) fn magic_u32(d: u32) -> (u32, u32, bool) {
    debug_assert!(d >= 2 && !d.is_power_of_two());
    let l = 32 - (d - 1).leading_zeros(); // ceil(log2 d)
                                          // The round-up method: m = ceil(2^(32+s) / d) with an error small
                                          // enough for every 32-bit x, at the smallest such s.
    for s in 0..l {
        let p = 1u128 << (32 + s);
        let m = p.div_ceil(u128::from(d));
        if m < (1 << 32) && m * u128::from(d) - p <= 1 << s {
            return (m as u32, s, false);
        }
    }
    // m = 2^32 + m' needs 33 bits: fold the top bit in with the add form.
    let m = ((1u128 << (32 + l)) / u128::from(d) - (1 << 32) + 1) as u32;
    (m, l - 1, true)
}

/// `(m, s)`: for `d` from 2 to `i32::MAX`, no power of two,
/// `x / d == ((mulhi_s(m, x) + (m < 0 ? x : 0)) >> s) + (x < 0)` for every
/// `i32` `x` (Hacker's Delight, figure 10-1).
pub(crate) fn magic_s32(d: i32) -> (i32, u32) {
    debug_assert!(d >= 2 && !(d as u32).is_power_of_two());
    let two31: u32 = 1 << 31;
    let ad = d as u32;
    let anc = two31 - 1 - two31 % ad; // |nc|
    let mut p = 31u32;
    let (mut q1, mut r1) = (two31 / anc, two31 % anc);
    let (mut q2, mut r2) = (two31 / ad, two31 % ad);
    loop {
        p += 1;
        q1 = q1.wrapping_mul(2);
        r1 = r1.wrapping_mul(2);
        if r1 >= anc {
            q1 = q1.wrapping_add(1);
            r1 = r1.wrapping_sub(anc);
        }
        q2 = q2.wrapping_mul(2);
        r2 = r2.wrapping_mul(2);
        if r2 >= ad {
            q2 = q2.wrapping_add(1);
            r2 = r2.wrapping_sub(ad);
        }
        let delta = ad - r2;
        if !(q1 < delta || (q1 == delta && r1 == 0)) {
            break;
        }
    }
    (q2.wrapping_add(1) as i32, p - 32)
}

impl Emitter<'_> {
    /// `d = a / b` (or `a % b` with `rem`) in the integer type of suffix
    /// `sfx` (`.s32`, `.u32`, `.s64`, `.u64`), strength-reduced when `b` is
    /// a constant (see the module's documentation).
    pub(crate) fn int_divrem(&mut self, rem: bool, sfx: &str, d: Reg, a: Reg, b: V) {
        let op = if rem { "rem" } else { "div" };
        let signed = sfx.starts_with(".s");
        let wide = sfx.ends_with("64");
        let c = match b {
            V::I(c, _) if c >= 2 => c,
            _ => {
                let rb = self.operand(b);
                self.ins(&format!("{op}{sfx} {d}, {a}, {rb};"));
                return;
            }
        };
        let (bits, max) = match (wide, signed) {
            (false, false) => (32, i128::from(u32::MAX)),
            (false, true) => (32, i128::from(i32::MAX)),
            (true, false) => (64, i128::from(u64::MAX)),
            (true, true) => (64, i128::from(i64::MAX)),
        };
        let b_text = if wide { ".b64" } else { ".b32" };
        let class = if wide { RegClass::B64 } else { RegClass::B32 };
        if c > max {
            // Larger than any dividend of the type: q = 0, r = a (unsigned
            // only: a signed divisor above the maximum cannot be written).
            if rem {
                self.ins(&format!("mov{b_text} {d}, {a};"));
            } else {
                self.ins(&format!("mov{b_text} {d}, 0;"));
            }
            return;
        }
        if c & (c - 1) == 0 {
            let k = c.trailing_zeros();
            match (signed, rem) {
                (false, false) => self.ins(&format!("shr{sfx} {d}, {a}, {k};")),
                (false, true) => self.ins(&format!("and{b_text} {d}, {a}, {};", c - 1)),
                (true, _) => {
                    // Round toward zero: add 2^k - 1 to a negative a first.
                    let (t, u) = (self.reg(class), self.reg(class));
                    self.ins(&format!("shr{sfx} {t}, {a}, {};", bits - 1));
                    let us = if wide { ".u64" } else { ".u32" };
                    self.ins(&format!("shr{us} {t}, {t}, {};", bits - k));
                    self.ins(&format!("add{sfx} {u}, {a}, {t};"));
                    if rem {
                        let m = self.reg(class);
                        let mask = if wide {
                            !(c as u64 - 1)
                        } else {
                            u64::from(!(c as u32 - 1))
                        };
                        self.ins(&format!("and{b_text} {m}, {u}, {mask:#x};"));
                        self.ins(&format!("sub{sfx} {d}, {a}, {m};"));
                    } else {
                        self.ins(&format!("shr{sfx} {d}, {u}, {k};"));
                    }
                }
            }
            return;
        }
        if wide {
            let rb = self.operand(b);
            self.ins(&format!("{op}{sfx} {d}, {a}, {rb};"));
            return;
        }
        let q = if rem { self.reg(RegClass::B32) } else { d };
        if signed {
            let (m, s) = magic_s32(c as i32);
            let t = self.reg(RegClass::B32);
            self.ins(&format!("mul.hi.s32 {t}, {a}, {m};"));
            if m < 0 {
                self.ins(&format!("add.s32 {t}, {t}, {a};"));
            }
            if s > 0 {
                self.ins(&format!("shr.s32 {t}, {t}, {s};"));
            }
            let sign = self.reg(RegClass::B32);
            self.ins(&format!("shr.u32 {sign}, {a}, 31;"));
            self.ins(&format!("add.s32 {q}, {t}, {sign};"));
        } else {
            let (m, s, add) = magic_u32(c as u32);
            let t = self.reg(RegClass::B32);
            self.ins(&format!("mul.hi.u32 {t}, {a}, {m};"));
            if add {
                let h = self.reg(RegClass::B32);
                self.ins(&format!("sub.s32 {h}, {a}, {t};"));
                self.ins(&format!("shr.u32 {h}, {h}, 1;"));
                self.ins(&format!("add.s32 {h}, {h}, {t};"));
                self.ins(&format!("shr.u32 {q}, {h}, {s};"));
            } else {
                self.ins(&format!("shr.u32 {q}, {t}, {s};"));
            }
        }
        if rem {
            // a - q * c in the low 32 bits: q times the negated divisor.
            let neg = (c as u32).wrapping_neg() as i32;
            self.ins(&format!("mad.lo.s32 {d}, {q}, {neg}, {a};"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn div_u(x: u32, d: u32) -> u32 {
        let (m, s, add) = magic_u32(d);
        let t = ((u64::from(m) * u64::from(x)) >> 32) as u32;
        if add {
            (((x - t) >> 1) + t) >> s
        } else {
            t >> s
        }
    }

    fn div_s(x: i32, d: i32) -> i32 {
        let (m, s) = magic_s32(d);
        let mut t = ((i64::from(m) * i64::from(x)) >> 32) as i32;
        if m < 0 {
            t = t.wrapping_add(x);
        }
        (t >> s) + ((x as u32) >> 31) as i32
    }

    fn samples(d: i64) -> Vec<i64> {
        let mut xs: Vec<i64> = (0..2000).collect();
        for k in 1..40 {
            for e in [-2, -1, 0, 1, 2] {
                xs.push(d * k + e);
            }
        }
        for top in [u32::MAX as i64, i32::MAX as i64] {
            for e in 0..2000 {
                xs.push(top - e);
            }
        }
        let mut r: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..5000 {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            xs.push((r & 0xffff_ffff) as i64);
        }
        xs
    }

    fn divisors() -> Vec<i64> {
        let mut ds: Vec<i64> = (2..1200).collect();
        ds.extend([
            641,
            6700417,
            65537,
            (1 << 31) - 1,
            (1 << 31) + 1,
            (1 << 31) + 3,
            u32::MAX as i64,
            u32::MAX as i64 - 1,
            1_000_000_007,
            3 << 29,
            7 << 28,
        ]);
        ds.retain(|d| !(*d as u64).is_power_of_two());
        ds
    }

    #[test]
    fn unsigned_magic_numbers_divide_like_rust() {
        for d in divisors() {
            let d = d as u32;
            for x in samples(i64::from(d)) {
                let x = x as u32;
                assert_eq!(div_u(x, d), x / d, "{x} / {d}");
            }
        }
    }

    #[test]
    fn signed_magic_numbers_divide_like_rust() {
        for d in divisors().into_iter().filter(|d| *d <= i64::from(i32::MAX)) {
            let d = d as i32;
            for x in samples(i64::from(d)) {
                for x in [
                    x as u32 as i32,
                    (x as u32 as i32).wrapping_neg(),
                    i32::MIN,
                    i32::MIN + 1,
                ] {
                    assert_eq!(div_s(x, d), x.wrapping_div(d), "{x} / {d}");
                }
            }
        }
    }
}
