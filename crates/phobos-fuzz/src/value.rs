//! Scalar values and the scalar semantics of the language, as the reference
//! evaluator computes them: integers wrap to their type, `f16`/`bf16`
//! arithmetic is done in `f32` and rounded to the type after every
//! operation, `f32`/`f64` arithmetic is IEEE with round-to-nearest-even and
//! no contraction (`fma` only where the source says `fma`). The
//! transcendental built-ins are computed in `f64` and rounded once; the
//! compiled code is within the tolerance documented in docs/language.md
//! ("Reference semantics"), which [`close`] checks.
//!
//! Nothing here knows about the backend: this is the language's definition
//! written as Rust, not a copy of the emitter. Integer operators are
//! `phobos_core::consteval`'s, the language's one integer evaluator (which
//! the compiler folds constants with, and which is tested against Rust's
//! native integer types); what compiled code computes at run time is the
//! emitter's, so the comparison stays independent.

use half::{bf16, f16};
use phobos_core::ast::{BinOp, ScalarTy, UnOp};
use phobos_core::hir::Builtin;
use phobos_core::{consteval, f8};
use std::fmt;

/// One scalar. `Int` holds the value already wrapped to its type's range;
/// `F` holds a value exactly representable in its float type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum S {
    B(bool),
    I(i128),
    F(f64),
}

/// Why the evaluator refuses a program: its result is not defined by the
/// language (the generator never makes such programs, but minimization may).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undefined(pub String);

impl fmt::Display for Undefined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "undefined: {}", self.0)
    }
}

impl Undefined {
    /// An index outside its tile or tensor: the one undefined behaviour
    /// the simulator must report (memcheck) rather than run through, so a
    /// program the evaluator stops with it still has a verdict
    /// (`diff::run_case`).
    pub fn is_out_of_bounds(&self) -> bool {
        self.0.starts_with(OUT_OF_BOUNDS)
    }
}

/// How an out-of-bounds index's [`Undefined`] begins.
pub const OUT_OF_BOUNDS: &str = "out-of-bounds index ";

pub type R<T> = Result<T, Undefined>;

pub fn undefined<T>(why: impl Into<String>) -> R<T> {
    Err(Undefined(why.into()))
}

pub fn bits(t: ScalarTy) -> u32 {
    match t {
        ScalarTy::Bool => 1,
        ScalarTy::I8 | ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => 8,
        ScalarTy::I16 | ScalarTy::U16 | ScalarTy::F16 | ScalarTy::BF16 => 16,
        ScalarTy::I32 | ScalarTy::U32 | ScalarTy::F32 => 32,
        ScalarTy::I64 | ScalarTy::U64 | ScalarTy::F64 => 64,
    }
}

pub fn is_float(t: ScalarTy) -> bool {
    t.is_float()
}

pub fn is_signed(t: ScalarTy) -> bool {
    matches!(
        t,
        ScalarTy::I8 | ScalarTy::I16 | ScalarTy::I32 | ScalarTy::I64
    )
}

/// Wrap an integer to type `t` (two's complement).
pub fn wrap(t: ScalarTy, v: i128) -> i128 {
    consteval::wrap(v, t)
}

/// Round an `f64` to float type `t`. `f16`/`bf16` go through `f32`, as
/// every value of those types is computed in `f32` first.
pub fn round(t: ScalarTy, v: f64) -> f64 {
    match t {
        ScalarTy::F64 => v,
        ScalarTy::F32 => f64::from(v as f32),
        ScalarTy::F16 => f16::from_f32(v as f32).to_f64(),
        ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => f8::decode(f8::encode(f64::from(v as f32), t), t),
        _ => bf16::from_f32(v as f32).to_f64(),
    }
}

/// The width arithmetic on `t` is computed in: `f64` for `f64`, else `f32`.
fn round_compute(t: ScalarTy, v: f64) -> f64 {
    if t == ScalarTy::F64 {
        v
    } else {
        f64::from(v as f32)
    }
}

pub fn as_i(v: S) -> i128 {
    match v {
        S::I(i) => i,
        S::B(b) => i128::from(b),
        S::F(f) => f as i128,
    }
}

pub fn as_f(v: S) -> f64 {
    match v {
        S::F(f) => f,
        S::I(i) => i as f64,
        S::B(b) => f64::from(u8::from(b)),
    }
}

pub fn as_b(v: S) -> bool {
    match v {
        S::B(b) => b,
        S::I(i) => i != 0,
        S::F(f) => f != 0.0,
    }
}

/// Raw little-endian bits of a value of type `t` (for tensors and `word`).
pub fn to_bits(t: ScalarTy, v: S) -> u64 {
    match t {
        ScalarTy::Bool => u64::from(as_b(v)),
        ScalarTy::F16 => u64::from(f16::from_f64(as_f(v)).to_bits()),
        ScalarTy::BF16 => u64::from(bf16::from_f64(as_f(v)).to_bits()),
        ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => u64::from(f8::encode(as_f(v), t)),
        ScalarTy::F32 => u64::from((as_f(v) as f32).to_bits()),
        ScalarTy::F64 => as_f(v).to_bits(),
        _ => (as_i(v) as u64) & mask(t),
    }
}

fn mask(t: ScalarTy) -> u64 {
    if bits(t) == 64 {
        u64::MAX
    } else {
        (1u64 << bits(t)) - 1
    }
}

pub fn from_bits(t: ScalarTy, b: u64) -> S {
    match t {
        ScalarTy::Bool => S::B(b & 1 != 0),
        ScalarTy::F16 => S::F(f16::from_bits(b as u16).to_f64()),
        ScalarTy::BF16 => S::F(bf16::from_bits(b as u16).to_f64()),
        ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => S::F(f8::decode(b as u8, t)),
        ScalarTy::F32 => S::F(f64::from(f32::from_bits(b as u32))),
        ScalarTy::F64 => S::F(f64::from_bits(b)),
        _ => S::I(wrap(t, i128::from(b & mask(t)))),
    }
}

/// An explicit conversion. Float to integer truncates toward zero; a value
/// outside the range saturates at the 32-bit (or, for 64-bit targets,
/// 64-bit) range and then wraps to a narrower type; NaN gives 0. An integer
/// becomes `f16`/`bf16` through `f32`, and so does an `f64`.
pub fn convert(from: ScalarTy, to: ScalarTy, v: S) -> S {
    if to == ScalarTy::Bool {
        return S::B(as_b(v));
    }
    if !is_float(to) {
        if !is_float(from) {
            return S::I(wrap(to, as_i(v)));
        }
        let f = as_f(v).trunc();
        let sat = if bits(to) == 64 {
            if is_signed(to) {
                f.clamp(i64::MIN as f64, i64::MAX as f64) as i64 as i128
            } else {
                f.clamp(0.0, u64::MAX as f64) as u64 as i128
            }
        } else if is_signed(to) {
            f.clamp(i32::MIN as f64, i32::MAX as f64) as i32 as i128
        } else {
            f.clamp(0.0, u32::MAX as f64) as u32 as i128
        };
        let sat = if f.is_nan() { 0 } else { sat };
        return S::I(wrap(to, sat));
    }
    let x = match v {
        S::I(i) => {
            if to == ScalarTy::F64 {
                i as f64
            } else {
                f64::from(i as f32)
            }
        }
        S::B(b) => f64::from(u8::from(b)),
        S::F(f) => f,
    };
    let x = if from == ScalarTy::F64 && to != ScalarTy::F64 {
        f64::from(x as f32)
    } else {
        x
    };
    S::F(round(to, x))
}

pub fn unary(op: UnOp, t: ScalarTy, v: S) -> S {
    match (op, v) {
        (UnOp::Not, S::B(b)) => S::B(!b),
        (op, S::I(i)) => S::I(consteval::unary(op, t, i).unwrap_or(i)),
        (UnOp::Neg, S::F(f)) => S::F(-f),
        (_, v) => v,
    }
}

/// A binary operator on two operands of type `t`.
pub fn binary(op: BinOp, t: ScalarTy, a: S, b: S) -> R<S> {
    use BinOp::*;
    if let Some(c) = compare(op, a, b) {
        return Ok(S::B(c));
    }
    Ok(match (a, b) {
        (S::B(x), S::B(y)) => S::B(match op {
            And | BitAnd => x && y,
            Or | BitOr => x || y,
            BitXor => x != y,
            _ => return undefined(format!("{op:?} on bool")),
        }),
        (S::F(x), S::F(y)) => {
            let r = match op {
                Add => x + y,
                Sub => x - y,
                Mul => x * y,
                Div => x / y,
                Rem => {
                    // a - trunc(a / b) * b, the quotient rounded first and
                    // the product and difference fused.
                    let q = round_compute(t, x / y).trunc();
                    if t == ScalarTy::F64 {
                        (-q).mul_add(y, x)
                    } else {
                        f64::from((-q as f32).mul_add(y as f32, x as f32))
                    }
                }
                _ => return undefined(format!("{op:?} on a float")),
            };
            S::F(round(t, round_compute(t, r)))
        }
        // Integers follow phobos-core's one constant evaluator.
        (S::I(x), S::I(y)) => match consteval::wrapping(op, t, x, y) {
            Ok(v) => S::I(v),
            Err(e) => return undefined(format!("{e}: {x} {op:?} {y} on {t:?}")),
        },
        _ => return undefined("operands of different kinds"),
    })
}

fn compare(op: BinOp, a: S, b: S) -> Option<bool> {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (S::F(x), S::F(y)) => x.partial_cmp(&y),
        (S::I(x), S::I(y)) => Some(x.cmp(&y)),
        (S::B(x), S::B(y)) => Some(x.cmp(&y)),
        _ => None,
    };
    Some(match op {
        BinOp::Eq => ord == Some(Ordering::Equal),
        BinOp::Ne => ord != Some(Ordering::Equal),
        BinOp::Lt => ord == Some(Ordering::Less),
        BinOp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
        BinOp::Gt => ord == Some(Ordering::Greater),
        BinOp::Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
        _ => return None,
    })
}

/// A scalar built-in over arguments of types `tys`; `rt` is the result type.
pub fn builtin(b: Builtin, tys: &[ScalarTy], rt: ScalarTy, args: &[S]) -> R<S> {
    use Builtin::*;
    let t = if b == Select { tys[1] } else { tys[0] };
    let f = |g: fn(f64) -> f64| S::F(round(t, g(as_f(args[0]))));
    Ok(match b {
        Min | Max => match (args[0], args[1]) {
            (S::F(x), S::F(y)) => S::F(if b == Min { x.min(y) } else { x.max(y) }),
            (x, y) => S::I(if b == Min {
                as_i(x).min(as_i(y))
            } else {
                as_i(x).max(as_i(y))
            }),
        },
        Abs => match args[0] {
            S::F(x) => S::F(x.abs()),
            x => S::I(wrap(t, as_i(x).abs())),
        },
        Sqrt => {
            if t == ScalarTy::F64 {
                f(f64::sqrt)
            } else {
                S::F(round(t, f64::from((as_f(args[0]) as f32).sqrt())))
            }
        }
        Rsqrt => f(|x| 1.0 / x.sqrt()),
        Exp => f(f64::exp),
        Exp2 => f(f64::exp2),
        Log => f(f64::ln),
        Log2 => f(f64::log2),
        Sin => f(f64::sin),
        Cos => f(f64::cos),
        Tanh => f(f64::tanh),
        Floor => f(f64::floor),
        Ceil => f(f64::ceil),
        Fma => {
            let (x, y, z) = (as_f(args[0]), as_f(args[1]), as_f(args[2]));
            if t == ScalarTy::F64 {
                S::F(x.mul_add(y, z))
            } else {
                S::F(round(t, f64::from((x as f32).mul_add(y as f32, z as f32))))
            }
        }
        Select => {
            if as_b(args[0]) {
                args[1]
            } else {
                args[2]
            }
        }
        Cdiv => {
            let (x, y) = (as_i(args[0]), as_i(args[1]));
            match consteval::cdiv(t, x, y) {
                Ok(v) => S::I(v),
                Err(e) => return undefined(format!("{e}: cdiv({x}, {y})")),
            }
        }
        Dp4a => {
            let (wa, wb) = (as_i(args[0]) as u32, as_i(args[1]) as u32);
            let (sa, sb) = (is_signed(tys[0]), is_signed(tys[1]));
            let mut acc = as_i(args[2]);
            for i in 0..4 {
                let byte = |w: u32, s: bool| {
                    let x = (w >> (8 * i)) & 0xFF;
                    if s {
                        i128::from(x as u8 as i8)
                    } else {
                        i128::from(x)
                    }
                };
                acc += byte(wa, sa) * byte(wb, sb);
            }
            S::I(wrap(rt, acc))
        }
        Byteperm => {
            let (a, bb, sel) = (
                as_i(args[0]) as u32,
                as_i(args[1]) as u32,
                as_i(args[2]) as u32,
            );
            let bytes = (u64::from(bb) << 32) | u64::from(a);
            let mut r = 0u32;
            for i in 0..4 {
                let s = (sel >> (4 * i)) & 0xF;
                let mut x = ((bytes >> (8 * (s & 7))) & 0xFF) as u32;
                if s & 8 != 0 {
                    x = if x & 0x80 != 0 { 0xFF } else { 0 };
                }
                r |= x << (8 * i);
            }
            S::I(wrap(rt, i128::from(r)))
        }
        Popcount => S::I(i128::from((to_bits(t, args[0]) & mask(t)).count_ones())),
    })
}

/// Whether two floats of type `t` agree within the documented tolerance:
/// `|got - want| <= k * eps * (1 + |want|)` with `k = 256` and `eps` the
/// machine epsilon of `f32` for `f32` and `f64` (the `f64` transcendentals
/// go through `f32`), and `k = 8` with the epsilon of `f16`/`bf16` for those
/// types. NaN matches NaN and an infinity matches only itself.
pub fn close(t: ScalarTy, got: f64, want: f64) -> bool {
    close_within(t, got, want, 0.0)
}

/// [`close`] for a value that went through float sums whose terms give
/// `slack = Σ (1 + |term|)`: `|got - want| <= k * eps * (1 + |want| +
/// slack)`. Each term is only within the tolerance of its own magnitude
/// (a transcendental), and a sum in another order rounds differently by up
/// to `eps` times the terms' magnitudes; when the terms cancel, the result
/// is much smaller than they are, and a tolerance scaled to the result
/// alone refuses a correct sum (fuzz seed 6219801: 64 terms up to 64
/// through `log`, result -0.27, off by 4.6e-5 against 3.9e-5).
pub fn close_within(t: ScalarTy, got: f64, want: f64, slack: f64) -> bool {
    if got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()) {
        return true;
    }
    if !got.is_finite() || !want.is_finite() {
        return got == want;
    }
    let tol = match t {
        ScalarTy::F16 => 8.0 * f64::from(f16::EPSILON.to_f32()),
        ScalarTy::BF16 => 8.0 * f64::from(bf16::EPSILON.to_f32()),
        // Machine epsilon 2^-3 (e4m3) and 2^-2 (e5m2).
        ScalarTy::F8E4M3 => 8.0 * 0.125,
        ScalarTy::F8E5M2 => 8.0 * 0.25,
        _ => 256.0 * f64::from(f32::EPSILON),
    };
    (got - want).abs() <= tol * (1.0 + want.abs() + slack)
}
