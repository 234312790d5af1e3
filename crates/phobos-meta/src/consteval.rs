//! Integer constant evaluation: the one place that says what an integer
//! operator computes, with the semantics of docs/language.md ("Reference
//! semantics"): integers wrap to their type, `/` and `%` truncate toward
//! zero (`%` has the dividend's sign), and division by zero, the smallest
//! signed value divided by -1, and a shift by a negative amount or by at
//! least the type's width are undefined. `cdiv(a, b)` is `ceil(a / b)` for
//! `a >= 0` and `b > 0` and undefined otherwise.
//!
//! Values are `i128`s holding a value of the operand type (so every `u64`
//! and `i64` is exact). Two ways to apply an operator:
//!
//! - [`wrapping`]: what compiled code computes at run time (the backend
//!   folds with it, and so do explain and the fuzzer's reference evaluator);
//! - [`exact`]: the mathematical result, refused when it does not fit the
//!   type (the checker folds with it, leaving overflow to run time, and
//!   attribute and `@grid` arithmetic use it with `i64`).
//!
//! Both refuse what the language leaves undefined ([`Undefined`]); callers
//! then leave the operation to run time or report it. Nothing here panics,
//! whatever the operands.
//!
//! Comparisons give 0 or 1. On `bool` (values 0 and 1) the bitwise and
//! logical operators and comparisons are defined; every other operator on
//! `bool`, and every operator on a float type, is [`Undefined::NotInteger`].

use crate::scalar::{BinOp, ScalarTy, UnOp};
use std::fmt;

/// Why an integer operation has no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undefined {
    /// `x / 0`, `x % 0`.
    DivisionByZero,
    /// The smallest signed value divided by -1.
    DivisionOverflow,
    /// A shift by a negative amount or by at least the type's width.
    ShiftOutOfRange,
    /// `cdiv(a, b)` with `a < 0` or `b <= 0`.
    CdivDomain,
    /// [`exact`] only: the result (or an operand) does not fit the type.
    Overflow,
    /// The operator is not an integer operator on this type.
    NotInteger,
}

impl fmt::Display for Undefined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Undefined::DivisionByZero => "integer division by zero",
            Undefined::DivisionOverflow => "signed division overflow",
            Undefined::ShiftOutOfRange => {
                "shift by a negative amount or by at least the type's width"
            }
            Undefined::CdivDomain => "cdiv of a negative value or by a value that is not positive",
            Undefined::Overflow => "the result does not fit its type",
            Undefined::NotInteger => "not an integer operation",
        })
    }
}

/// The width of a scalar type in bits (`bool`: 1).
pub fn bits(t: ScalarTy) -> u32 {
    match t {
        ScalarTy::Bool => 1,
        t => t.size() * 8,
    }
}

/// The range of an integer type (`bool`: 0 to 1; floats: empty of meaning,
/// also 0 to 1).
pub fn range(t: ScalarTy) -> (i128, i128) {
    if !t.is_int() {
        return (0, 1);
    }
    let n = bits(t);
    if t.is_signed() {
        (-(1i128 << (n - 1)), (1i128 << (n - 1)) - 1)
    } else {
        (0, (1i128 << n) - 1)
    }
}

/// Whether `v` is a value of `t`.
pub fn fits(v: i128, t: ScalarTy) -> bool {
    let (lo, hi) = range(t);
    (lo..=hi).contains(&v)
}

/// `v` wrapped to integer type `t` (two's complement); `bool` keeps the low
/// bit. Floats are returned unchanged.
pub fn wrap(v: i128, t: ScalarTy) -> i128 {
    if !(t.is_int() || t == ScalarTy::Bool) {
        return v;
    }
    let n = bits(t);
    let m = (v as u128) & ((1u128 << n) - 1);
    if t.is_signed() && m >> (n - 1) == 1 {
        m as i128 - (1i128 << n)
    } else {
        m as i128
    }
}

/// The integer conversion `to(v)`: wraps to the target's width.
pub fn convert(v: i128, to: ScalarTy) -> i128 {
    wrap(v, to)
}

/// `op x` on type `t`, as compiled code computes it: `-` wraps, `!` is
/// bitwise on integers and logical on `bool`.
pub fn unary(op: UnOp, t: ScalarTy, x: i128) -> Result<i128, Undefined> {
    match (op, t) {
        (UnOp::Not, ScalarTy::Bool) => Ok(i128::from(x == 0)),
        (_, t) if !t.is_int() => Err(Undefined::NotInteger),
        (UnOp::Neg, t) => Ok(wrap(wrap(x, t).wrapping_neg(), t)),
        (UnOp::Not, t) => Ok(wrap(!wrap(x, t), t)),
    }
}

/// `op x` on type `t`, refused when the result does not fit (`-i32::MIN`).
pub fn exact_unary(op: UnOp, t: ScalarTy, x: i128) -> Result<i128, Undefined> {
    if !fits(x, t) {
        return Err(Undefined::Overflow);
    }
    let v = match (op, t) {
        (UnOp::Neg, t) if t.is_int() => -x,
        _ => return unary(op, t, x),
    };
    fits(v, t).then_some(v).ok_or(Undefined::Overflow)
}

/// `x op y` on operands of type `t`, as compiled code computes it: the
/// result wraps to `t` (comparisons give 0 or 1). Operands are wrapped to
/// `t` first.
pub fn wrapping(op: BinOp, t: ScalarTy, x: i128, y: i128) -> Result<i128, Undefined> {
    let (x, y) = (wrap(x, t), wrap(y, t));
    let v = apply(op, t, x, y, Arith::Wrapping)?;
    Ok(if is_comparison(op) { v } else { wrap(v, t) })
}

/// `x op y` on operands of type `t`, computed exactly: refused with
/// [`Undefined::Overflow`] when an operand or the result does not fit `t`.
pub fn exact(op: BinOp, t: ScalarTy, x: i128, y: i128) -> Result<i128, Undefined> {
    if !fits(x, t) || !fits(y, t) {
        return Err(Undefined::Overflow);
    }
    let v = apply(op, t, x, y, Arith::Exact)?;
    if is_comparison(op) || fits(v, t) {
        Ok(v)
    } else {
        Err(Undefined::Overflow)
    }
}

/// `cdiv(x, y)` on integer type `t`: `ceil(x / y)` for `x >= 0`, `y > 0`.
/// The result never exceeds `x`, so it always fits.
pub fn cdiv(t: ScalarTy, x: i128, y: i128) -> Result<i128, Undefined> {
    if !t.is_int() {
        return Err(Undefined::NotInteger);
    }
    if !fits(x, t) || !fits(y, t) {
        return Err(Undefined::Overflow);
    }
    if x < 0 || y <= 0 {
        return Err(Undefined::CdivDomain);
    }
    Ok(x / y + i128::from(x % y != 0))
}

/// Whether `op` is a comparison (its result is a `bool`, 0 or 1).
pub fn is_comparison(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
    )
}

#[derive(Clone, Copy, PartialEq)]
enum Arith {
    Wrapping,
    Exact,
}

/// The operator on in-range operands. Wrapping mode may return a value out
/// of range (the caller wraps it); exact mode returns the mathematical
/// value, or `Overflow` where even `i128` cannot hold it.
fn apply(op: BinOp, t: ScalarTy, x: i128, y: i128, arith: Arith) -> Result<i128, Undefined> {
    use BinOp::*;
    if is_comparison(op) {
        return Ok(compare(op, x, y));
    }
    if t == ScalarTy::Bool {
        return match op {
            BitAnd | And => Ok(x & y),
            BitOr | Or => Ok(x | y),
            BitXor => Ok(x ^ y),
            _ => Err(Undefined::NotInteger),
        };
    }
    if !t.is_int() {
        return Err(Undefined::NotInteger);
    }
    let n = i128::from(bits(t));
    Ok(match op {
        // In range, operands are below 2^64 in magnitude, so sums never
        // leave i128; products may, and then only the low bits matter
        // when wrapping.
        Add => x + y,
        Sub => x - y,
        Mul => match arith {
            Arith::Wrapping => x.wrapping_mul(y),
            Arith::Exact => x.checked_mul(y).ok_or(Undefined::Overflow)?,
        },
        Div | Rem if y == 0 => return Err(Undefined::DivisionByZero),
        Div if t.is_signed() && x == range(t).0 && y == -1 => {
            return Err(Undefined::DivisionOverflow)
        }
        Div => x / y,
        Rem => x % y,
        BitAnd => x & y,
        BitOr => x | y,
        BitXor => x ^ y,
        Shl | Shr if !(0..n).contains(&y) => return Err(Undefined::ShiftOutOfRange),
        // x < 2^64 and y < 64: the exact product is below 2^128 in
        // magnitude but may leave i128, which exact mode refuses.
        Shl => match arith {
            Arith::Wrapping => ((x as u128) << y) as i128,
            Arith::Exact => x.checked_mul(1i128 << y).ok_or(Undefined::Overflow)?,
        },
        // Arithmetic on signed values, logical on unsigned (which are
        // non-negative here).
        Shr => x >> y,
        And | Or => return Err(Undefined::NotInteger),
        Eq | Ne | Lt | Le | Gt | Ge => compare(op, x, y),
    })
}

/// A comparison as 0 or 1 (any other operator gives 0).
fn compare(op: BinOp, x: i128, y: i128) -> i128 {
    i128::from(match op {
        BinOp::Eq => x == y,
        BinOp::Ne => x != y,
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use BinOp::*;
    use ScalarTy::*;

    const INTS: [ScalarTy; 8] = [I8, U8, I16, U16, I32, U32, I64, U64];

    /// The reference for each width: Rust's own wrapping arithmetic on the
    /// primitive type, so the table below is not computed by the code
    /// under test.
    fn native(op: BinOp, t: ScalarTy, x: i128, y: i128) -> Option<i128> {
        macro_rules! on {
            ($p:ty) => {{
                let (a, b) = (x as $p, y as $p);
                let s = u32::try_from(y).ok();
                Some(match op {
                    Add => a.wrapping_add(b) as i128,
                    Sub => a.wrapping_sub(b) as i128,
                    Mul => a.wrapping_mul(b) as i128,
                    Div => a.checked_div(b)? as i128,
                    Rem => {
                        if b == 0 {
                            return None;
                        }
                        a.wrapping_rem(b) as i128
                    }
                    BitAnd => (a & b) as i128,
                    BitOr => (a | b) as i128,
                    BitXor => (a ^ b) as i128,
                    Shl => a.checked_shl(s?)? as i128,
                    Shr => a.checked_shr(s?)? as i128,
                    Eq => i128::from(a == b),
                    Ne => i128::from(a != b),
                    Lt => i128::from(a < b),
                    Le => i128::from(a <= b),
                    Gt => i128::from(a > b),
                    Ge => i128::from(a >= b),
                    And | Or => return None,
                })
            }};
        }
        match t {
            I8 => on!(i8),
            U8 => on!(u8),
            I16 => on!(i16),
            U16 => on!(u16),
            I32 => on!(i32),
            U32 => on!(u32),
            I64 => on!(i64),
            U64 => on!(u64),
            _ => None,
        }
    }

    fn samples(t: ScalarTy) -> Vec<i128> {
        let (lo, hi) = range(t);
        let mut v = vec![
            lo,
            lo + 1,
            -3,
            -1,
            0,
            1,
            2,
            3,
            5,
            7,
            31,
            32,
            63,
            64,
            100,
            hi - 1,
            hi,
        ];
        v.retain(|x| fits(*x, t));
        v
    }

    const OPS: [BinOp; 16] = [
        Add, Sub, Mul, Div, Rem, BitAnd, BitOr, BitXor, Shl, Shr, Eq, Ne, Lt, Le, Gt, Ge,
    ];

    #[test]
    fn wrapping_agrees_with_the_native_types_on_every_op_and_width() {
        for t in INTS {
            for x in samples(t) {
                for y in samples(t) {
                    for op in OPS {
                        let got = wrapping(op, t, x, y).ok();
                        let mut want = native(op, t, x, y);
                        // The native types define i32::MIN % -1 as 0 (kept)
                        // and MIN / -1 as an error (undefined here too).
                        if op == Div && t.is_signed() && x == range(t).0 && y == -1 {
                            want = None;
                        }
                        assert_eq!(got, want, "{x} {op:?} {y} on {t:?}");
                        if let Some(v) = got {
                            if !is_comparison(op) {
                                assert!(fits(v, t), "{x} {op:?} {y} on {t:?} gave {v}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn exact_folds_only_results_that_fit() {
        for t in INTS {
            for x in samples(t) {
                for y in samples(t) {
                    for op in OPS {
                        let Ok(w) = wrapping(op, t, x, y) else {
                            assert!(exact(op, t, x, y).is_err(), "{x} {op:?} {y} on {t:?}");
                            continue;
                        };
                        match exact(op, t, x, y) {
                            // Where exact gives a value it is the wrapped one.
                            Ok(v) => assert_eq!(v, w, "{x} {op:?} {y} on {t:?}"),
                            Err(e) => assert_eq!(e, Undefined::Overflow),
                        }
                    }
                }
            }
        }
        assert_eq!(
            exact(Add, I32, i32::MAX.into(), 1),
            Err(Undefined::Overflow)
        );
        assert_eq!(exact(Sub, U32, 0, 1), Err(Undefined::Overflow));
        assert_eq!(exact(Mul, I64, 1 << 32, 1 << 31), Err(Undefined::Overflow));
        assert_eq!(exact(Mul, I64, 1 << 31, 1 << 31), Ok(1 << 62));
        assert_eq!(
            exact(Mul, U64, u64::MAX.into(), u64::MAX.into()),
            Err(Undefined::Overflow)
        );
        assert_eq!(exact(Shl, I64, 3, 62), Err(Undefined::Overflow));
        assert_eq!(exact(Shl, I64, 1, 62), Ok(1 << 62));
        assert_eq!(exact(Shl, I8, 1, 7), Err(Undefined::Overflow));
        assert_eq!(
            exact(Add, I8, 200, 0),
            Err(Undefined::Overflow),
            "operand out of range"
        );
        assert_eq!(exact(Lt, I32, 1, 2), Ok(1));
    }

    #[test]
    fn wrapping_wraps_to_the_width() {
        assert_eq!(wrapping(Add, I32, i32::MAX.into(), 1), Ok(i32::MIN.into()));
        assert_eq!(wrapping(Add, U8, 255, 1), Ok(0));
        assert_eq!(wrapping(Sub, U16, 0, 1), Ok(65535));
        assert_eq!(wrapping(Mul, U64, u64::MAX.into(), u64::MAX.into()), Ok(1));
        assert_eq!(wrapping(Mul, I64, i64::MIN.into(), -1), Ok(i64::MIN.into()));
        assert_eq!(wrapping(Shl, I32, 1, 31), Ok(i32::MIN.into()));
        assert_eq!(wrapping(Shl, U64, u64::MAX.into(), 63), Ok(1 << 63));
        assert_eq!(wrapping(Shr, I32, -8, 1), Ok(-4), "arithmetic on signed");
        assert_eq!(
            wrapping(Shr, U32, u32::MAX.into(), 31),
            Ok(1),
            "logical on unsigned"
        );
        // Operands are wrapped to the type first.
        assert_eq!(wrapping(Add, I8, 200, 0), Ok(-56));
    }

    #[test]
    fn division_truncates_and_its_undefined_cases_are_refused() {
        assert_eq!(wrapping(Div, I32, -7, 2), Ok(-3));
        assert_eq!(wrapping(Rem, I32, -7, 2), Ok(-1));
        assert_eq!(wrapping(Rem, I32, 7, -2), Ok(1));
        for t in INTS {
            for op in [Div, Rem] {
                assert_eq!(wrapping(op, t, 5, 0), Err(Undefined::DivisionByZero));
                assert_eq!(exact(op, t, 5, 0), Err(Undefined::DivisionByZero));
            }
            if t.is_signed() {
                let min = range(t).0;
                assert_eq!(wrapping(Div, t, min, -1), Err(Undefined::DivisionOverflow));
                assert_eq!(exact(Div, t, min, -1), Err(Undefined::DivisionOverflow));
                assert_eq!(wrapping(Rem, t, min, -1), Ok(0));
            }
        }
    }

    #[test]
    fn shifts_at_or_beyond_the_width_are_refused() {
        for t in INTS {
            let n = i128::from(bits(t));
            for op in [Shl, Shr] {
                assert!(wrapping(op, t, 1, n - 1).is_ok(), "{op:?} {t:?}");
                assert_eq!(wrapping(op, t, 1, n), Err(Undefined::ShiftOutOfRange));
                assert_eq!(exact(op, t, 1, n), Err(Undefined::ShiftOutOfRange));
                if t.is_signed() {
                    assert_eq!(wrapping(op, t, 1, -1), Err(Undefined::ShiftOutOfRange));
                }
            }
        }
        // A shift amount that only wrapping brings into range: u8 300 is 44.
        assert_eq!(wrapping(Shl, U8, 1, 300), Err(Undefined::ShiftOutOfRange));
        assert_eq!(wrapping(Shl, U8, 1, 259), Ok(8));
    }

    #[test]
    fn unary_minus_wraps_and_not_is_bitwise_on_integers() {
        assert_eq!(unary(UnOp::Neg, I32, i32::MIN.into()), Ok(i32::MIN.into()));
        assert_eq!(
            exact_unary(UnOp::Neg, I32, i32::MIN.into()),
            Err(Undefined::Overflow)
        );
        assert_eq!(exact_unary(UnOp::Neg, I32, 5), Ok(-5));
        assert_eq!(unary(UnOp::Neg, U8, 1), Ok(255));
        assert_eq!(exact_unary(UnOp::Neg, U8, 1), Err(Undefined::Overflow));
        assert_eq!(unary(UnOp::Not, I32, 0), Ok(-1));
        assert_eq!(unary(UnOp::Not, I32, 5), Ok(-6));
        assert_eq!(unary(UnOp::Not, U8, 0), Ok(255));
        assert_eq!(unary(UnOp::Not, U64, 0), Ok(u64::MAX.into()));
        assert_eq!(unary(UnOp::Not, U16, 0x00ff), Ok(0xff00));
        assert_eq!(unary(UnOp::Not, Bool, 0), Ok(1));
        assert_eq!(unary(UnOp::Not, Bool, 1), Ok(0));
        assert_eq!(unary(UnOp::Neg, F32, 1), Err(Undefined::NotInteger));
    }

    #[test]
    fn conversion_wraps_to_the_target_width() {
        assert_eq!(convert(300, U8), 44);
        assert_eq!(convert(200, I8), -56);
        assert_eq!(convert(-1, U32), u32::MAX.into());
        assert_eq!(convert(-1, U64), u64::MAX.into());
        assert_eq!(convert(u64::MAX.into(), I64), -1);
        assert_eq!(convert(i128::from(i32::MIN) - 1, I32), i32::MAX.into());
        assert_eq!(convert(-5, I64), -5);
        assert_eq!(convert(3, Bool), 1);
        for t in INTS {
            for x in samples(I64).into_iter().chain(samples(U64)) {
                assert!(fits(convert(x, t), t));
            }
        }
    }

    #[test]
    fn cdiv_is_the_ceiling_and_never_overflows() {
        assert_eq!(cdiv(I32, 0, 4), Ok(0));
        assert_eq!(cdiv(I32, 1, 4), Ok(1));
        assert_eq!(cdiv(I32, 8, 4), Ok(2));
        assert_eq!(cdiv(I32, 9, 4), Ok(3));
        assert_eq!(cdiv(I32, i32::MAX.into(), 2), Ok(1 << 30));
        assert_eq!(cdiv(I64, i64::MAX.into(), i64::MAX.into()), Ok(1));
        assert_eq!(cdiv(I64, i64::MAX.into(), 1), Ok(i64::MAX.into()));
        assert_eq!(cdiv(U64, u64::MAX.into(), 2), Ok(1 << 63));
        assert_eq!(cdiv(I32, 5, 0), Err(Undefined::CdivDomain));
        assert_eq!(cdiv(I32, 5, -1), Err(Undefined::CdivDomain));
        assert_eq!(cdiv(I32, -5, 2), Err(Undefined::CdivDomain));
        assert_eq!(cdiv(I32, 1 << 40, 2), Err(Undefined::Overflow));
        assert_eq!(cdiv(F32, 1, 2), Err(Undefined::NotInteger));
    }

    #[test]
    fn bool_has_its_logical_operators_only() {
        for (x, y) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            assert_eq!(wrapping(And, Bool, x, y), Ok(x & y));
            assert_eq!(wrapping(BitAnd, Bool, x, y), Ok(x & y));
            assert_eq!(wrapping(Or, Bool, x, y), Ok(x | y));
            assert_eq!(wrapping(BitXor, Bool, x, y), Ok(x ^ y));
            assert_eq!(wrapping(Eq, Bool, x, y), Ok(i128::from(x == y)));
        }
        assert_eq!(wrapping(Add, Bool, 1, 1), Err(Undefined::NotInteger));
        assert_eq!(wrapping(And, I32, 1, 1), Err(Undefined::NotInteger));
        assert_eq!(wrapping(Add, F32, 1, 1), Err(Undefined::NotInteger));
        assert_eq!(exact(Add, F64, 1, 1), Err(Undefined::NotInteger));
    }

    #[test]
    fn ranges_of_each_width() {
        assert_eq!(range(I8), (-128, 127));
        assert_eq!(range(U8), (0, 255));
        assert_eq!(range(I16), (i16::MIN.into(), i16::MAX.into()));
        assert_eq!(range(U16), (0, u16::MAX.into()));
        assert_eq!(range(I32), (i32::MIN.into(), i32::MAX.into()));
        assert_eq!(range(U32), (0, u32::MAX.into()));
        assert_eq!(range(I64), (i64::MIN.into(), i64::MAX.into()));
        assert_eq!(range(U64), (0, u64::MAX.into()));
        assert!(fits(-1, I8) && !fits(-1, U8) && !fits(128, I8));
    }
}
