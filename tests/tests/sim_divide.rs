//! Integer division and remainder by constants (issue 30): the emitter
//! writes shifts, masks and multiply-highs instead of `div`/`rem`
//! (`backend/emit/divide.rs`), and the PTX it writes must divide exactly as
//! the language does (truncating, the remainder with the dividend's sign)
//! for every value of every integer type, the edges of each type included.
//! The simulator runs the PTX against Rust's division.

use phobos_conformance::sim_support::{Case, Tensor};
use phobos_core::ast::ScalarTy;

const N: usize = 256;

/// The divisors of each type: powers of two, small odd and even ones, and
/// large ones whose magic numbers need the add form.
fn divisors(t: ScalarTy) -> Vec<i64> {
    let mut d = vec![
        2, 3, 4, 5, 6, 7, 10, 16, 25, 32, 100, 127, 641, 1000, 1024, 65537,
    ];
    match t {
        ScalarTy::I32 => d.extend([1 << 30, 2147483647, 1_000_000_007]),
        ScalarTy::U32 => d.extend([1 << 31, 2147483649, 4294967295, 3 << 30]),
        ScalarTy::I64 => d.extend([1 << 40, 1_000_000_007]),
        ScalarTy::U64 => d.extend([1 << 63, 1 << 33]),
        ScalarTy::I8 => d.retain(|d| *d <= 127),
        ScalarTy::U8 => d.retain(|d| *d <= 255),
        _ => {}
    }
    d
}

const TYPES: [(ScalarTy, &str); 6] = [
    (ScalarTy::I32, "i32"),
    (ScalarTy::U32, "u32"),
    (ScalarTy::I64, "i64"),
    (ScalarTy::U64, "u64"),
    (ScalarTy::I8, "i8"),
    (ScalarTy::U8, "u8"),
];

fn source() -> String {
    let mut params = Vec::new();
    let mut body = String::new();
    for (t, name) in TYPES {
        let ds = divisors(t);
        params.push(format!("X{name}: tensor<{name}>[{N}]"));
        params.push(format!("Q{name}: tensor<{name}>[{N}, {}]", 2 * ds.len()));
        body.push_str(&format!("  let x{name} = X{name}[i]\n"));
        for (k, d) in ds.iter().enumerate() {
            // A u64 divisor above i64's range is written in hex.
            let lit = if *d < 0 {
                format!("{:#x}", *d as u64)
            } else {
                d.to_string()
            };
            body.push_str(&format!("  Q{name}[i, {}] = x{name} / {lit}\n", 2 * k));
            body.push_str(&format!("  Q{name}[i, {}] = x{name} % {lit}\n", 2 * k + 1));
        }
    }
    format!(
        "@launch(64)\nkernel divs({}) {{\n  let i = ctx.block.x * 64 + ctx.thread\n{body}}}\n",
        params.join(", ")
    )
}

/// The dividends: every edge of the type and its neighbours, multiples of
/// the divisors and their neighbours, and pseudo-random values.
fn dividends(t: ScalarTy) -> Vec<i64> {
    let (lo, hi): (i64, i64) = match t {
        ScalarTy::I32 => (i32::MIN.into(), i32::MAX.into()),
        ScalarTy::U32 => (0, u32::MAX.into()),
        ScalarTy::I64 => (i64::MIN, i64::MAX),
        ScalarTy::U64 => (0, -1),
        ScalarTy::I8 => (-128, 127),
        _ => (0, 255),
    };
    let mut v = vec![
        0,
        1,
        2,
        3,
        -1,
        -2,
        -3,
        lo,
        lo.wrapping_add(1),
        hi,
        hi.wrapping_sub(1),
    ];
    for d in [3i64, 7, 100, 641, 65537, 1_000_000_007] {
        for e in [-1, 0, 1] {
            v.push(d.wrapping_mul(12345).wrapping_add(e));
            v.push(d.wrapping_mul(-12345).wrapping_add(e));
        }
    }
    let mut r: u64 = 0x2545_f491_4f6c_dd1d;
    while v.len() < N {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        v.push(r as i64);
    }
    v
}

/// Rust's truncating division and remainder of `x` by `d` in type `t`.
fn divide(t: ScalarTy, x: i64, d: i64) -> (i64, i64) {
    match t {
        ScalarTy::I32 => {
            let (x, d) = (x as i32, d as i32);
            (x.wrapping_div(d).into(), x.wrapping_rem(d).into())
        }
        ScalarTy::U32 => {
            let (x, d) = (x as u32, d as u32);
            ((x / d).into(), (x % d).into())
        }
        ScalarTy::I64 => (x.wrapping_div(d), x.wrapping_rem(d)),
        ScalarTy::U64 => {
            let (x, d) = (x as u64, d as u64);
            ((x / d) as i64, (x % d) as i64)
        }
        ScalarTy::I8 => {
            let (x, d) = (x as i8, d as i8);
            (x.wrapping_div(d).into(), x.wrapping_rem(d).into())
        }
        _ => {
            let (x, d) = (x as u8, d as u8);
            ((x / d).into(), (x % d).into())
        }
    }
}

#[test]
fn division_by_constants_is_exact_for_every_type_and_edge() {
    let src = source();
    let mut case = Case::source(&src, "divs.pho", "divs");
    let ptx = case.kernel.ptx.clone();
    // Strength-reduced: no 32-bit `div`/`rem` is left (64-bit divisors that
    // are no power of two keep theirs).
    for op in ["div.s32", "div.u32", "rem.s32", "rem.u32"] {
        assert!(!ptx.contains(op), "{op} left in the PTX:\n{ptx}");
    }
    assert!(
        ptx.contains("mul.hi.u32") && ptx.contains("mul.hi.s32"),
        "{ptx}"
    );
    for (t, name) in TYPES {
        let mut x = Tensor::zeros(t, &[N]);
        for (i, v) in dividends(t).into_iter().take(N).enumerate() {
            x.set_i(i, v);
        }
        case = case.init(&format!("X{name}"), x);
    }
    let o = case.run([(N / 64) as u32, 1, 1]);
    for (t, name) in TYPES {
        let x = o.input(&format!("X{name}"));
        let ds = divisors(t);
        let mut want = o.expect(&format!("Q{name}"));
        for i in 0..N {
            for (k, d) in ds.iter().enumerate() {
                let (q, r) = divide(t, x.i(i), *d);
                want.set_i(i * 2 * ds.len() + 2 * k, q);
                want.set_i(i * 2 * ds.len() + 2 * k + 1, r);
            }
        }
        o.check(&format!("Q{name}"), &want);
    }
}
