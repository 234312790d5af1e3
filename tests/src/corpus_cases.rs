//! One case per corpus kernel (`tests/in/*.pho`, the seed kernels among
//! them): dims with ragged edges (rows not a multiple of the warps per CTA,
//! tiles past the tensor's end, grids that overshoot by a CTA or more),
//! every `@autotune` variant, random inputs from the current seed
//! ([`crate::sim_support::with_seed`]), and a Rust reference written from
//! the kernel's meaning (its header comment and the language page), never
//! from the simulator's output.
//!
//! Each case runs on the current executor ([`crate::executor`]): the
//! simulator, the runtime, or both at once for the differential check
//! against hardware (`phobos-diff`, docs/gpu-bundle.md). The tests in
//! `tests/tests/sim_corpus.rs` and the differential runner both iterate
//! [`CASES`]; [`corpus_cases!`](crate::corpus_cases) hands the same list of
//! names to a macro that makes one `#[test]` per case.

use crate::sim_support::{butterfly, cdiv, Case, Gen, Outcome, Scalar, Tensor};
use half::{bf16, f16};
use phobos_core::arch::SM_90A;
use phobos_core::ast::ScalarTy;

fn g1(x: u32) -> [u32; 3] {
    [x, 1, 1]
}

/// The case of corpus kernel `name` with its dim `N` set to `n`.
fn with_n(name: &str, n: usize) -> Case {
    Case::corpus(name).dims(&[("N", n as i64)])
}

/// Reference for the matvec family: y[0, r] = sum_k W[r, k] * x[0, k].
pub fn matvec_ref(o: &Outcome, out: &str, n: usize, k: usize) -> Tensor {
    let (w, x) = (o.input("W"), o.input("x"));
    let mut y = o.expect(out);
    for r in 0..n {
        let s: f64 = (0..k).map(|c| w.f(r * k + c) * x.f(c)).sum();
        y.set_f(r, s);
    }
    y
}

/// Runs matvec `name` (a warp a row, 4 warps a CTA, K = 256) for each
/// `(rows, extra CTAs past the last row)`, against [`matvec_ref`].
fn warp_per_row_matvec(name: &str, runs: [(usize, u32); 2]) {
    for (n, extra) in runs {
        let o = Case::corpus(name)
            .dims(&[("N", n as i64), ("K", 256)])
            .run(g1(cdiv(n, 4) + extra));
        o.check("y", &matvec_ref(&o, "y", n, 256));
    }
}

pub fn lanes_matvec() {
    // 101 rows: not a multiple of 4 warps per CTA; 2 CTAs past the end.
    warp_per_row_matvec("lanes_matvec", [(101, 2), (3, 0)]);
}

pub fn staged_matvec() {
    warp_per_row_matvec("staged_matvec", [(101, 2), (2, 1)]);
}

pub fn i8_matvec() {
    // 50 columns over 8 warps per CTA: the last CTA is ragged.
    for (n, k, extra) in [(50, 512, 1), (9, 32, 0)] {
        let o = Case::corpus("i8_matvec")
            .dims(&[("N", n as i64), ("K", k as i64)])
            .run(g1(cdiv(n, 8) + extra));
        o.check("C", &i8_matvec_ref(&o, n, k));
    }
}

/// Reference for i8_matvec: C[0, col] = sum_j A[0, j] * W[col, j], exact
/// in integers.
pub fn i8_matvec_ref(o: &Outcome, n: usize, k: usize) -> Tensor {
    let (a, w) = (o.input("A"), o.input("W"));
    let mut c = o.expect("C");
    for col in 0..n {
        let s: i64 = (0..k).map(|j| a.i(j) * w.i(col * k + j)).sum();
        c.set_f(col, s as f64);
    }
    c
}

pub fn lane_max() {
    let o = Case::corpus("lane_max").run(g1(1));
    let a = o.input("A");
    let mut want = o.expect("O");
    want.set_f(0, (0..32).map(|i| a.f(i)).fold(f64::MIN, f64::max));
    o.check("O", &want);
}

pub fn row_sum() {
    for (n, m) in [(7, 1000), (2, 37)] {
        let o = Case::corpus("row_sum")
            .dims(&[("N", n as i64), ("M", m as i64)])
            .run(g1(n as u32));
        let a = o.input("A");
        o.check_f("y", n, |r| (0..m).map(|c| a.f(r * m + c)).sum());
    }
}

pub fn atomic_histogram() {
    // 100,003 bytes over 7 CTAs (a grid that does not divide N), then a
    // short input over more CTAs than it needs: most CTAs count nothing.
    for (n, grid) in [(100_003usize, 7u32), (300, 4)] {
        let mut c = with_n("atomic_histogram", n).init("H", Tensor::zeros(ScalarTy::U32, &[256]));
        c.prepare();
        // Skew the bytes so some bins are hot (many atomics on one
        // element from one warp) and some stay empty.
        let x = c.tensors.get_mut("X").unwrap();
        for i in 0..n {
            if i % 3 == 0 {
                x.set_i(i, 7);
            } else if x.i(i) >= 200 {
                x.set_i(i, x.i(i) - 100);
            }
        }
        let o = c.run(g1(grid));
        let x = o.input("X");
        let mut h = o.expect("H");
        let mut counts = [0i64; 256];
        for i in 0..n {
            counts[x.i(i) as usize] += 1;
        }
        for (b, count) in counts.iter().enumerate() {
            h.set_i(b, *count);
        }
        assert_eq!(counts[250], 0);
        o.check("H", &h);
    }
}

pub fn atomic_sum() {
    // 1,000,003 floats, 61 CTAs: the last CTA to finish adds the partials.
    let (n, g) = (1_000_003usize, 61usize);
    // Each partial adds some 16,000 values in f32, and partials are small
    // (the values are in [-1, 1)), so they are compared with a floor of 10.
    let o = Case::corpus("atomic_sum")
        .dims(&[("N", n as i64), ("G", g as i64)])
        .floor(10.0)
        .init("C", Tensor::zeros(ScalarTy::U32, &[1]))
        .run(g1(g as u32));
    let x = o.input("X");
    let mut s = o.expect("S");
    s.set_f(0, (0..n).map(|i| x.f(i)).sum());
    // Each partial is one CTA's share, and the counter is reset.
    let mut p = o.expect("P");
    for b in 0..g {
        p.set_f(
            b,
            (b * 256..n)
                .step_by(g * 256)
                .flat_map(|i| i..(i + 256).min(n))
                .map(|i| x.f(i))
                .sum(),
        );
    }
    o.check("S", &s);
    o.check("P", &p);
    o.check("C", &Tensor::zeros(ScalarTy::U32, &[1]));
}

pub fn atomic_ops() {
    // Which thread's exchange or compare-and-swap comes first, and which
    // old value each shared add sees, depends on the order threads run in:
    // the checks below accept any order, and the differential check skips
    // those tensors.
    let mut c = Case::corpus("atomic_ops")
        .order_dependent(&["R", "W", "X", "Y", "O"])
        .gen("V", Gen::Int(-1000, 1000))
        .gen("U", Gen::Int(0, 1 << 40))
        .gen("K", Gen::Int(-(1 << 40), 1 << 40))
        .gen("S0", Gen::Int(-50, 50));
    c.prepare();
    // Small integers, so every float sum is exact in any order.
    for (name, lo, span) in [("F", -20i64, 41), ("E", -20, 41), ("H", 0, 8)] {
        let t = c.tensors.get_mut(name).unwrap();
        for i in 0..128 {
            t.set_f(i, (lo + (i as i64 * 7919) % span) as f64);
        }
    }
    let starts: [(&str, &[i64]); 8] = [
        ("I", &[5, i32::MAX as i64, i32::MIN as i64, -1, 0, 0x5a5a]),
        ("L", &[3, 0, 0x0f0f]),
        ("Q", &[i64::MAX]),
        ("D", &[0]),
        ("A", &[0]),
        ("G", &[0]),
        ("X", &[-1]),
        ("Y", &[0]),
    ];
    for (name, vals) in starts {
        let t = c.tensors.get_mut(name).unwrap();
        for (i, v) in vals.iter().enumerate() {
            t.set_i(i, *v);
        }
    }
    let o = c.run(g1(1));
    let (v, u, k) = (o.input("V"), o.input("U"), o.input("K"));
    let vs: Vec<i64> = (0..128).map(|t| v.i(t)).collect();
    let mut i = o.expect("I");
    i.set_i(0, 5 + vs.iter().sum::<i64>());
    i.set_i(1, *vs.iter().min().unwrap());
    i.set_i(2, *vs.iter().max().unwrap());
    i.set_i(3, vs.iter().fold(-1, |a, b| a & b));
    i.set_i(4, vs.iter().fold(0, |a, b| a | b));
    i.set_i(5, vs.iter().fold(0x5a5a, |a, b| a ^ b));
    o.check("I", &i);
    let us: Vec<u64> = (0..128).map(|t| u.i(t) as u64).collect();
    let mut l = o.expect("L");
    l.set_i(0, (3 + us.iter().sum::<u64>()) as i64);
    l.set_i(1, *us.iter().max().unwrap() as i64);
    l.set_i(2, us.iter().fold(0x0f0f, |a, b| a ^ b) as i64);
    o.check("L", &l);
    let mut q = o.expect("Q");
    q.set_i(0, (0..128).map(|t| k.i(t)).min().unwrap());
    o.check("Q", &q);
    for (out, inp) in [("D", "F"), ("A", "E"), ("G", "H")] {
        let x = o.input(inp);
        let mut want = o.expect(out);
        want.set_f(0, (0..128).map(|t| x.f(t)).sum());
        o.check(out, &want);
    }
    // Exchange: the values replaced, with the final one, are the initial
    // value and every t + 1, in some order.
    let (x, r) = (&o.after["X"], &o.after["R"]);
    let mut seen: Vec<i64> = (0..128).map(|t| r.i(t)).chain([x.i(0)]).collect();
    seen.sort_unstable();
    let mut want: Vec<i64> = std::iter::once(-1).chain(1..=128).collect();
    want.sort_unstable();
    assert_eq!(seen, want, "atomic_exch lost or duplicated a value");
    // Compare-and-swap: exactly one thread saw 0 and its t + 1 is in Y.
    let (y, w) = (&o.after["Y"], &o.after["W"]);
    let winners: Vec<usize> = (0..128).filter(|&t| w.i(t) == 0).collect();
    assert_eq!(winners.len(), 1, "one atomic_cas must win");
    assert_eq!(y.i(0), winners[0] as i64 + 1);
    o.check_i("W", 128, |t| if t == winners[0] { 0 } else { y.i(0) });
    // Shared: slot j got 16 adds of 1, whose old values are s0 .. s0 + 15;
    // slot 8 + j was xored with the threads t = j mod 8.
    let (s0, old) = (o.input("S0"), &o.after["O"]);
    let mut s = o.expect("S");
    for j in 0..8 {
        s.set_i(j, s0.i(j) + 16);
        let x = (0..128)
            .filter(|t| t % 8 == j)
            .fold(s0.i(8 + j), |a, t| a ^ t as i64);
        s.set_i(8 + j, x);
        let mut olds: Vec<i64> = (0..128).filter(|t| t % 8 == j).map(|t| old.i(t)).collect();
        olds.sort_unstable();
        let want: Vec<i64> = (0..16).map(|d| s0.i(j) + d).collect();
        assert_eq!(olds, want, "old values of s[{j}]");
    }
    o.check("S", &s);
}

pub fn autotune_block() {
    for block in [64, 128] {
        let n = 1000;
        let o = with_n("autotune_block", n)
            .tune("BLOCK", block)
            .run(g1(cdiv(n, block as usize) + 1));
        assert!(o.entry.contains(&block.to_string()), "variant {}", o.entry);
        let x = o.input("x");
        o.check_f("y", n, |i| 2.0 * x.f(i));
    }
}

pub fn autotune_dim() {
    for k in [64usize, 128] {
        let n = 9;
        let o = Case::corpus("autotune_dim")
            .dims(&[("N", n as i64), ("K", k as i64)])
            .run(g1(cdiv(n, 2) + 1));
        let w = o.input("W");
        o.check_f("y", n, |r| (0..k).map(|c| w.f(r * k + c)).sum());
    }
}

pub fn cta_forms() {
    let g = 3;
    let mut c = Case::corpus("cta_forms").dims(&[("G", g as i64)]);
    c.prepare();
    let a = c.tensors.get_mut("A").unwrap();
    // CTA 0: a tie for the maximum at threads 77 and 5 (argmax picks 5).
    a.set_f(5, 3.0);
    a.set_f(77, 3.0);
    // CTA 1: every value negative (any is false), one below -100 (all is false).
    for t in 0..128 {
        let v = -0.5 - a.f(128 + t).abs();
        a.set_f(128 + t, v);
    }
    a.set_f(128 + 40, -150.0);
    // CTA 2: the maximum in the last warp.
    a.set_f(256 + 127, 2.0);
    let o = c.run(g1(g as u32));
    let (a, b) = (o.input("A"), o.input("B"));
    let mut want = o.expect("O");
    for blk in 0..g {
        let x: Vec<f64> = (0..128).map(|t| a.f(blk * 128 + t)).collect();
        let hi = x.iter().cloned().fold(f64::MIN, f64::max);
        let at = x.iter().position(|v| *v == hi).unwrap();
        let sign: f64 = x
            .iter()
            .map(|v| if *v < 0.0 { -1.0 } else { 1.0 })
            .product();
        let n = (0..128).fold(0i32, |s, t| s.wrapping_add(b.i(blk * 128 + t) as i32));
        let row = [
            x.iter().sum(),
            hi,
            x.iter().cloned().fold(f64::MAX, f64::min),
            f64::from(u8::from(x.iter().any(|v| *v > 0.0))),
            f64::from(u8::from(x.iter().all(|v| *v > -100.0))),
            at as f64,
            sign,
            f64::from(n),
        ];
        for (j, v) in row.iter().enumerate() {
            want.set_f(blk * 8 + j, *v);
        }
    }
    assert_eq!(want.f(5), 5.0);
    assert_eq!(want.f(8 + 3), 0.0);
    assert_eq!(want.f(8 + 4), 0.0);
    o.check("O", &want);
}

pub fn cta_softmax() {
    for (n, m) in [(4, 1000), (2, 100)] {
        let o = Case::corpus("cta_softmax")
            .dims(&[("N", n as i64), ("M", m as i64)])
            .floor(0.0)
            .run(g1(n as u32));
        check_softmax(&o, n, m);
    }
}

/// Checks `Y` as the softmax of each of the `n` rows of `m` values of `X`.
fn check_softmax(o: &Outcome, n: usize, m: usize) {
    let x = o.input("X");
    let mut y = o.expect("Y");
    for r in 0..n {
        let row: Vec<f64> = (0..m).map(|c| x.f(r * m + c)).collect();
        let mx = row.iter().cloned().fold(f64::MIN, f64::max);
        let total: f64 = row.iter().map(|v| (v - mx).exp()).sum();
        for (c, v) in row.iter().enumerate() {
            y.set_f(r * m + c, (v - mx).exp() / total);
        }
    }
    o.check("Y", &y);
}

pub fn cta_sum_loop() {
    let r = 5;
    let o = Case::corpus("cta_sum_loop")
        .dims(&[("R", r as i64)])
        .run(g1(1));
    let a = o.input("A");
    o.check_f("O", r, |i| (0..256).map(|c| a.f(i * 256 + c)).sum());
}

pub fn dp4a_nibble() {
    let n = 40;
    let o = with_n("dp4a_nibble", n).run(g1(cdiv(n, 32) + 1));
    let (q, x, x2) = (o.input("Q"), o.input("X"), o.input("X2"));
    let mut d = o.expect("D");
    for i in 0..n {
        let mut s = 0i64;
        for k in 0..16 {
            let b = q.i(i * 16 + k) as i8;
            s += i64::from(b & 15) * x.i(i * 16 + k);
            s += i64::from((b >> 4) & 15) * x2.i(i * 16 + k);
        }
        d.set_i(i, s);
    }
    o.check("D", &d);
}

pub fn dp4a_u8() {
    let n = 33;
    let o = with_n("dp4a_u8", n).run(g1(cdiv(n, 32)));
    let (a, b) = (o.input("A"), o.input("B"));
    o.check_i("D", n, |i| {
        (0..32).map(|k| a.i(i * 32 + k) * b.i(i * 32 + k)).sum()
    });
    o.check_i("S", n, |i| (0..32).map(|k| a.i(i * 32 + k)).sum());
}

/// Little-endian word `j` of the 16 bytes at `A[i, 0..16]`, as i32.
fn word_of(a: &Tensor, i: usize, j: usize) -> i32 {
    let b: Vec<u8> = (0..4).map(|k| a.i(i * 16 + 4 * j + k) as u8).collect();
    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// PTX-style signed dp4a: four signed byte products added to `c`.
fn dp4a_s(a: i32, b: i32, c: i32) -> i32 {
    let (a, b) = (a.to_le_bytes(), b.to_le_bytes());
    (0..4).fold(c, |s, k| {
        s.wrapping_add(i32::from(a[k] as i8) * i32::from(b[k] as i8))
    })
}

fn dp4a_u(a: u32, b: u32, c: u32) -> u32 {
    let (a, b) = (a.to_le_bytes(), b.to_le_bytes());
    (0..4).fold(c, |s, k| s.wrapping_add(u32::from(a[k]) * u32::from(b[k])))
}

/// `byteperm(a, b, sel)`: byte k of the result is byte `sel`'s nibble k of
/// the eight bytes `b:a` (a the low word).
fn byteperm(a: u32, b: u32, sel: u32) -> u32 {
    let bytes: Vec<u8> = a.to_le_bytes().into_iter().chain(b.to_le_bytes()).collect();
    let out: Vec<u8> = (0..4)
        .map(|k| bytes[((sel >> (4 * k)) & 7) as usize])
        .collect();
    u32::from_le_bytes([out[0], out[1], out[2], out[3]])
}

pub fn elem_word() {
    let n = 20;
    let o = with_n("elem_word", n).run(g1(cdiv(n, 32)));
    let a = o.input("A");
    let (mut out, mut s, mut f) = (o.expect("O"), o.expect("S"), o.expect("F"));
    for i in 0..n {
        let w: Vec<i32> = (0..4).map(|j| word_of(a, i, j)).collect();
        let v = (a.i(i * 16 + 3) as i32)
            .wrapping_add(dp4a_s(w[0], w[1], 0))
            .wrapping_add(byteperm(w[2] as u32, w[3] as u32, 0x3210) as i32);
        out.set_i(i, i64::from(v));
        for k in 0..4 {
            s.set_i(i * 4 + k, i64::from(w[3 - k]));
        }
        // Only F[i, 0] is stored; F[i, 1..4] stay poisoned.
        f.set_f(i * 4, f64::from(w[0].count_ones()));
    }
    o.check("O", &out);
    o.check("S", &s);
    o.check("F", &f);
}

pub fn grid_2d() {
    let (n, m) = (50, 70);
    let o = Case::corpus("grid_2d")
        .dims(&[("N", n as i64), ("M", m as i64)])
        .run([cdiv(m, 32) + 1, cdiv(n, 8) + 1, 1]);
    let (a, b) = (o.input("A"), o.input("B"));
    o.check_f("C", n * m, |i| a.f(i) + 2.0 * b.f(i));
}

pub fn grid_attr() {
    for (n, k) in [(37, 100), (4, 31)] {
        let case = Case::corpus("grid_attr").dims(&[("N", n as i64), ("K", k as i64)]);
        // The grid comes from the kernel's @grid(cdiv(N, ctx.warps)).
        let grid = case.meta_grid();
        assert_eq!(grid, g1(cdiv(n, 4)));
        let o = case.run(grid);
        let a = o.input("A");
        o.check_f("y", n, |r| {
            (0..k).map(|c| a.f(r * k + c)).fold(f64::MIN, f64::max)
        });
    }
}

pub fn int_ops() {
    let n = 64;
    let mut c = with_n("int_ops", n)
        .gen("A", Gen::Int(-(1 << 30), 1 << 30))
        .gen("B", Gen::Int(-1000, 1000));
    c.prepare();
    let b = c.tensors.get_mut("B").unwrap();
    for i in 0..n {
        if b.i(i) == 0 {
            b.set_i(i, 7);
        }
    }
    b.set_i(3, -1);
    let o = c.run(g1(cdiv(n, 32)));
    let (ta, tb) = (o.input("A"), o.input("B"));
    let (mut out, mut u) = (o.expect("O"), o.expect("U"));
    for i in 0..n {
        let (a, b) = (ta.i(i) as i32, tb.i(i) as i32);
        let row = [
            a / b,
            a % b,
            a.wrapping_shl(3),
            a >> 2,
            (a & b) | (a ^ 0x0F0F),
            (a.abs() + 6) / 7,
            a.count_ones() as i32,
            byteperm(a as u32, b as u32, 0x5140) as i32,
            a.min(b) - a.max(b),
            a.abs() + -b,
            a.wrapping_mul(b).wrapping_add(3),
            dp4a_s(a, b, 5),
        ];
        for (j, v) in row.iter().enumerate() {
            out.set_i(i * 12 + j, i64::from(*v));
        }
        u.set_i(i * 2, i64::from((a as u32) >> 28));
        u.set_i(
            i * 2 + 1,
            i64::from((a as u32 / 10).wrapping_add(dp4a_u(a as u32, b as u32, 1))),
        );
    }
    o.check("O", &out);
    o.check("U", &u);
}

pub fn lane_any_all() {
    let mut c = Case::corpus("lane_any_all");
    c.prepare();
    let a = c.tensors.get_mut("A").unwrap();
    // Warp 0 all positive; warp 2 all non-positive but lane 9; warp 1 random
    // except an all-positive 8-lane piece and an all-negative 4-lane piece.
    for t in 0..96 {
        let v = a.f(t).abs() + 0.01;
        let positive = match t / 32 {
            0 => true,
            1 => match t % 32 {
                0..=7 => true,
                8..=11 => false,
                _ => a.f(t) > 0.0,
            },
            _ => t % 32 == 9,
        };
        a.set_f(t, if positive { v } else { -v });
    }
    let o = c.run(g1(1));
    let a = o.input("A");
    let pos: Vec<bool> = (0..96).map(|t| a.f(t) > 0.0).collect();
    let piece = |t: usize, w: usize| t / w * w..t / w * w + w;
    let mut want = o.expect("O");
    for t in 0..96 {
        let any = piece(t, 32).any(|i| pos[i]);
        let all = piece(t, 32).all(|i| pos[i]);
        let any4 = piece(t, 4).any(|i| pos[i]);
        let all8 = piece(t, 8).all(|i| pos[i]);
        want.set_i(
            t,
            i64::from(any) + 2 * i64::from(all) + 4 * i64::from(any4) + 8 * i64::from(all8),
        );
    }
    o.check("O", &want);
}

pub fn lane_argmax() {
    let mut c = Case::corpus("lane_argmax").gen("B", Gen::Int(0, 3));
    c.prepare();
    let a = c.tensors.get_mut("A").unwrap();
    // Ties for the maximum: lanes 17 and 3 in warp 0, lanes 30 and 8 in warp 1.
    for t in [17, 3, 62, 40] {
        a.set_f(t, 5.0);
    }
    let o = c.run(g1(1));
    let (a, b) = (o.input("A"), o.input("B"));
    let (mut w, mut p) = (o.expect("W"), o.expect("P"));
    for t in 0..64 {
        let base = t / 32 * 32;
        let best = (base..base + 32).fold(base, |m, i| if a.f(i) > a.f(m) { i } else { m });
        w.set_i(t, (best - base) as i64);
        let pb = t / 4 * 4;
        let best = (pb..pb + 4).fold(pb, |m, i| if b.i(i) > b.i(m) { i } else { m });
        p.set_i(t, (best - pb) as i64);
    }
    assert_eq!(w.i(0), 3);
    assert_eq!(w.i(33), 8);
    o.check("W", &w);
    o.check("P", &p);
}

pub fn float_specials() {
    let r = 6;
    let mut c = Case::corpus("float_specials")
        .dims(&[("R", r as i64)])
        .gen("L", Gen::Int(1, 32));
    c.prepare();
    let l = c.tensors.get_mut("L").unwrap();
    // Row 0 is empty (every lane holds -inf: argmax is lane 0, min is nan);
    // row 5 keeps every lane.
    l.set_i(0, 0);
    l.set_i(5, 32);
    for row in 1..5 {
        l.set_i(row, 20);
    }
    let a = c.tensors.get_mut("A").unwrap();
    // Row 1: the maximum twice, at lanes 13 and 4 (argmax picks 4).
    a.set_f(32 + 13, 7.0);
    a.set_f(32 + 4, 7.0);
    // Row 2: +0 at lane 9 and -0 at lane 6 tie for the maximum (argmax 6).
    for lane in 0..32 {
        a.set_f(64 + lane, -1.0 - lane as f64);
    }
    a.set_f(64 + 9, 0.0);
    a.set_f(64 + 6, -0.0);
    // Row 3: every kept value is -inf, a tie with the dropped lanes (lane 0).
    for lane in 0..32 {
        a.set_f(96 + lane, f64::NEG_INFINITY);
    }
    // Row 4: the largest value in a dropped lane must not win.
    a.set_f(128 + 25, 100.0);
    let o = c.run(g1(r as u32));
    let (a, l) = (o.input("A"), o.input("L"));
    let (mut m, mut z, mut w, mut d) = (o.expect("M"), o.expect("Z"), o.expect("W"), o.expect("D"));
    for row in 0..r {
        let kept = l.i(row) as usize;
        let x: Vec<f64> = (0..32)
            .map(|lane| {
                if lane < kept {
                    a.f(row * 32 + lane)
                } else {
                    f64::NEG_INFINITY
                }
            })
            .collect();
        let hi = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        // The first lane whose value equals the maximum (-0 == +0).
        let at = x.iter().position(|v| *v == hi).unwrap();
        let lo = (0..kept)
            .map(|lane| a.f(row * 32 + lane))
            .fold(f64::INFINITY, f64::min);
        m.set_f(row, hi);
        z.set_f(row, if kept == 0 { f64::NAN } else { lo });
        w.set_i(row, at as i64);
        d.set_f(row, hi);
    }
    assert_eq!((w.i(0), w.i(1), w.i(2), w.i(3)), (0, 4, 6, 0));
    assert!(m.f(0) == f64::NEG_INFINITY && z.f(0).is_nan());
    o.check("M", &m);
    o.check("Z", &z);
    o.check("W", &w);
    o.check("D", &d);
}

pub fn control_flow() {
    for (n, m) in [(150usize, 37usize), (5, 1)] {
        let o = Case::corpus("control_flow")
            .dims(&[("N", n as i64), ("M", m as i64)])
            .gen("B", Gen::Int(0, 2_000_000_000))
            .run(g1(cdiv(n, 64) + 1));
        let (x, b) = (o.input("X"), o.input("B"));
        let (mut s, mut f, mut c, mut w) =
            (o.expect("S"), o.expect("F"), o.expect("C"), o.expect("W"));
        for i in 0..n {
            let v = b.i(i);
            s.set_i(i, (v as f64).sqrt().floor() as i64);
            let mut first = -1;
            let mut seen = 0;
            for j in 0..m {
                let e = x.f(i * m + j);
                if e < 0.0 {
                    continue;
                }
                seen += 1;
                if e > 0.5 {
                    first = j as i64;
                    break;
                }
            }
            f.set_i(i, first);
            c.set_i(i, seen);
            w.set_i(i, (64 - (v as u64).leading_zeros()) as i64);
        }
        o.check("S", &s);
        o.check("F", &f);
        o.check("C", &c);
        o.check("W", &w);
    }
}

pub fn lane_f16_sum() {
    let o = Case::corpus("lane_f16_sum").run(g1(1));
    let (a, b, cc) = (o.input("A"), o.input("B"), o.input("C"));
    // f16 sums round after every add, in the page's butterfly order.
    let av: Vec<f16> = (0..32).map(|t| f16::from_f64(a.f(t))).collect();
    let hs = butterfly(&av, 8, |x, y| f16::from_f32(x.to_f32() + y.to_f32()));
    let bv: Vec<f64> = (0..32).map(|t| b.f(t)).collect();
    let ds = butterfly(&bv, 32, f64::max);
    let cv: Vec<i64> = (0..32).map(|t| cc.i(t)).collect();
    let ls = butterfly(&cv, 32, i64::wrapping_add);
    o.check_f("H", 32, |t| hs[t].to_f64());
    o.check_f("D", 32, |t| ds[t]);
    o.check_i("L", 32, |t| ls[t]);
}

pub fn lane_min_max_int() {
    let o = Case::corpus("lane_min_max_int").run(g1(1));
    let (a, b) = (o.input("A"), o.input("B"));
    let av: Vec<i32> = (0..64).map(|t| a.i(t) as i32).collect();
    let bv: Vec<u32> = (0..64).map(|t| b.i(t) as u32).collect();
    let m1 = butterfly(&av, 32, i32::max);
    let m2 = butterfly(&av, 16, i32::min);
    let u1 = butterfly(&bv, 4, u32::max);
    let u2 = butterfly(&bv, 32, u32::min);
    o.check_i("MX", 64, |t| i64::from(m1[t]));
    o.check_i("MN", 64, |t| i64::from(m2[t]));
    o.check_i("UB", 64, |t| i64::from(u1[t].wrapping_add(u2[t])));
}

pub fn lane_reduce() {
    let o = Case::corpus("lane_reduce").run(g1(1));
    let (a, b) = (o.input("A"), o.input("B"));
    // The four lanes of `t`'s piece of 4, and the 32 of its warp.
    let piece = |t: usize| t / 4 * 4..t / 4 * 4 + 4;
    let warp = |t: usize| t / 32 * 32..t / 32 * 32 + 32;
    o.check_f("R", 64, |t| piece(t).map(|k| a.f(k)).product());
    o.check_f("Q", 64, |t| {
        warp(t).map(|k| a.f(k).abs()).fold(0.0, f64::max)
    });
    o.check_i("I", 64, |t| warp(t).fold(0, |s, k| s | b.i(k)));
}

pub fn lane_sum_width() {
    let o = Case::corpus("lane_sum_width").run(g1(2));
    let a = o.input("A");
    // The sum over the piece of `w` lanes that holds lane `t`.
    let piece = |t: usize, w: usize| (t / w * w..t / w * w + w).map(|k| a.f(k)).sum::<f64>();
    o.check_f("S8", 128, |t| piece(t, 8));
    o.check_f("S32", 128, |t| piece(t, 32));
    o.check_f("S2", 128, |t| piece(t, 2));
}

pub fn loops() {
    let n = 70;
    let o = with_n("loops", n).run(g1(cdiv(n, 32) + 1));
    let mut want = o.expect("O");
    for i in 0..n as i64 {
        let mut s = 0;
        let mut j = i;
        while j > -1 {
            s += j;
            j -= 3;
        }
        for a in 0..3 {
            for b in 0..i % 4 {
                s += a * b;
            }
        }
        if i % 3 == 0 {
            s += 100;
        } else if i % 3 == 1 {
            s -= 100;
        } else {
            s *= 2;
        }
        want.set_i(i as usize, s);
    }
    o.check("O", &want);
}

pub fn math_f32() {
    let n = 100;
    let o = with_n("math_f32", n)
        .gen("A", Gen::Float(0.05, 4.0))
        .run(g1(cdiv(n, 64) + 1));
    let a = o.input("A");
    let mut out = o.expect("O");
    for i in 0..n {
        let x = a.f(i);
        let row = [
            x.sqrt(),
            1.0 / x.sqrt(),
            x.exp(),
            x.exp2(),
            x.ln(),
            x.log2(),
            x.sin(),
            x.cos(),
            x.tanh(),
            x.floor(),
            x.ceil(),
            x.abs(),
            x * 2.0 + 1.0,
            x.min(1.0) + x.max(2.0),
            x % 0.75,
            -x / 3.0,
        ];
        for (j, v) in row.iter().enumerate() {
            out.set_f(i * 16 + j, *v);
        }
    }
    o.check("O", &out);
}

pub fn rank3() {
    let (b, r, c) = (3, 20, 33);
    let o = Case::corpus("rank3")
        .dims(&[("B", b as i64), ("R", r as i64), ("C", c as i64)])
        .run(g1(cdiv(b * r, 64) + 1));
    let x = o.input("X");
    o.check_f("O", b * r, |i| (0..c).map(|k| x.f(i * c + k)).sum());
}

pub fn run_column() {
    let m = 100;
    let o = Case::corpus("run_column")
        .dims(&[("M", m as i64)])
        .run(g1(cdiv(m, 64)));
    let (a, b) = (o.input("A"), o.input("B"));
    o.check_f("y", m, |c| {
        (0..4).map(|r| a.f(r * m + c) * b.f(r * m + c)).sum()
    });
}

pub fn run_f16() {
    let (n, k) = (10, 512);
    // Multiples of 1/8 below 2 in magnitude: every partial sum of a run of
    // 8 is exact in f16, so the reference does not depend on the order
    // of the additions inside `sum`.
    let mut c = Case::corpus("run_f16").dims(&[("N", n as i64), ("K", k as i64)]);
    c.prepare();
    let w = c.tensors.get_mut("W").unwrap();
    for i in 0..w.len() {
        let v = (w.f(i) * 16.0).round() / 8.0;
        w.set_f(i, v);
    }
    let o = c.run(g1(cdiv(n, 4) + 1));
    let w = o.input("W");
    o.check_f("y", n, |r| (0..k).map(|j| w.f(r * k + j)).sum());
}

pub fn run_long() {
    let n = 50;
    let o = with_n("run_long", n).run(g1(cdiv(n, 32)));
    let a = o.input("A");
    let (mut y, mut z) = (o.expect("y"), o.expect("Z"));
    for i in 0..n {
        y.set_f(i, (0..16).map(|k| a.f(i * 16 + k) * 0.5).sum());
        for k in 0..16 {
            z.set_f(i * 16 + k, a.f(i * 16 + k) * 2.0);
        }
    }
    o.check("y", &y);
    o.check("Z", &z);
}

pub fn run_store() {
    let (n, k) = (8, 64);
    let alpha = 0.75f32;
    let o = Case::corpus("run_store")
        .dims(&[("N", n as i64), ("K", k as i64)])
        .scalar("alpha", Scalar::F32(alpha))
        .run(g1(cdiv(n * k / 4, 64) + 1));
    let x = o.input("X");
    let (mut y, mut y2) = (o.expect("Y"), o.expect("Y2"));
    for i in 0..n * k {
        y.set_f(i, x.f(i) * f64::from(alpha) + 1.0);
        // Only element 2 of each 4-run is stored; the rest stay poisoned.
        if i % 4 == 2 {
            y2.set_f(i, f64::from(alpha));
        }
    }
    o.check("Y", &y);
    o.check("Y2", &y2);
}

/// GELU, the tanh form, in f64.
fn gelu_ref(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.797_884_560_8 * (x + 0.044_715 * x * x * x)).tanh())
}

pub fn run_fn() {
    // 66 runs over 64-thread CTAs: the second CTA is ragged, a third runs
    // past the end.
    let (n, k) = (11, 24);
    let alpha = 1.625f32;
    let o = Case::corpus("run_fn")
        .dims(&[("N", n as i64), ("K", k as i64), ("Q", (k / 4) as i64)])
        .scalar("alpha", Scalar::F32(alpha))
        .run(g1(cdiv(n * k / 4, 64) + 1));
    let (xs, zs) = (o.input("X"), o.input("Z"));
    let a = f64::from(alpha);
    let cube = |x: f64| x * x * x;
    let relu = |x: f64| x.max(0.0);
    let (mut y, mut s) = (o.expect("Y"), o.expect("S"));
    for i in 0..n * k {
        let (x, z) = (xs.f(i), zs.f(i));
        let v = cube(x) + z;
        y.set_f(i, cube(relu(x * a - 0.25)));
        y.set_f(n * k + i, if v > 0.0 { v } else { a * v });
        y.set_f(2 * n * k + i, cube(cube(x + 0.5) * 0.5));
    }
    for i in 0..n * k / 4 {
        let dot: f64 = (0..4)
            .map(|e| relu(xs.f(4 * i + e)) * zs.f(4 * i + e) * a)
            .sum();
        s.set_f(i, dot);
    }
    o.check("Y", &y);
    o.check("S", &s);
}

pub fn run_gelu() {
    // 37 rows over 128-thread CTAs of 17 runs per row: the last CTA is
    // ragged, and one more CTA than needed runs past the end. Inputs in
    // [-4, 4) cover both tails of the curve.
    for (n, k, extra) in [(37, 68, 1), (3, 4, 0)] {
        let o = Case::corpus("run_gelu")
            .dims(&[("N", n as i64), ("K", k as i64)])
            .gen("X", Gen::Float(-4.0, 4.0))
            .run(g1(cdiv(n * k / 4, 128) + extra));
        let x = o.input("X");
        o.check_f("Y", n * k, |i| gelu_ref(x.f(i)));
    }
}

pub fn run_softmax() {
    // 9 rows over 4 warps per CTA (the third CTA has one row), rows of 300
    // (not a multiple of the warp's 128 elements per step), and a row of 4.
    for (n, k, extra) in [(9, 300, 1), (2, 4, 0)] {
        let o = Case::corpus("run_softmax")
            .dims(&[("N", n as i64), ("K", k as i64)])
            .gen("X", Gen::Float(-8.0, 8.0))
            .run(g1(cdiv(n, 4) + extra));
        check_softmax(&o, n, k);
    }
}

pub fn run_math() {
    let (n, k) = (13, 20);
    let alpha = -0.375f32;
    let o = Case::corpus("run_math")
        .dims(&[("N", n as i64), ("K", k as i64)])
        .gen("X", Gen::Float(-3.0, 3.0))
        .scalar("alpha", Scalar::F32(alpha))
        .run(g1(cdiv(n * k / 4, 64) + 1));
    let (xs, zs) = (o.input("X"), o.input("Z"));
    let a = f64::from(alpha);
    let mut y = o.expect("Y");
    for i in 0..n * k {
        let (x, z) = (xs.f(i), zs.f(i));
        // The products that feed floor, ceil and the integer conversions
        // round in f32, as the kernel computes them.
        let x3 = f64::from(x as f32 * 3.0);
        let x8 = (x as f32 * 8.0) as i32;
        let z8 = (z as f32 * 8.0) as i32;
        let row = [
            x.max(0.0),
            x.min(z),
            x.abs(),
            x.abs().sqrt(),
            1.0 / (x.abs() + 1.0).sqrt(),
            x.exp(),
            x.exp2(),
            (x.abs() + 0.5).ln(),
            (x.abs() + 0.5).log2(),
            x.sin(),
            x.cos(),
            x.tanh(),
            x3.floor(),
            x3.ceil(),
            x.mul_add(z, a),
            a.mul_add(x, 1.0),
            if x > z { x } else { a },
            if a > 0.0 { z.max(-0.25) } else { 0.0 },
            f64::from((x8.abs() + 2) / 3 + z8.min(2)),
            f64::from(x8.count_ones()),
        ];
        for (q, v) in row.iter().enumerate() {
            y.set_f(q * n * k + i, *v);
        }
    }
    o.check("Y", &y);
}

pub fn run_unaligned() {
    let (n, k) = (40, 7);
    let o = Case::corpus("run_unaligned")
        .dims(&[("N", n as i64), ("K", k as i64)])
        .run(g1(cdiv(n, 32)));
    let a = o.input("A");
    o.check_f("y", n, |i| (1..5).map(|c| a.f(i * k + c)).sum());
}

pub fn saxpy() {
    let n = 777;
    let mut c = with_n("saxpy", n).scalar("alpha", Scalar::F32(2.5));
    // Y is read and written in place: it starts random, not poisoned.
    let y0 = Tensor::random(ScalarTy::F32, &[n], Gen::Full, &mut c.rng);
    let o = c.init("Y", y0).run(g1(cdiv(n, 256) + 1));
    let (x, y0) = (o.input("X"), o.input("Y"));
    o.check_f("Y", n, |i| 2.5 * x.f(i) + y0.f(i));
}

pub fn scalars() {
    for flag in [true, false] {
        let n = 100;
        let o = with_n("scalars", n)
            .gen("A", Gen::Int(-10_000, 10_000))
            .scalar("k", Scalar::I32(3))
            .scalar("bias_i", Scalar::I32(-7))
            .scalar("scale", Scalar::F32(0.5))
            .scalar("flag", Scalar::Bool(flag))
            .scalar("shift", Scalar::U8(9))
            .scalar("big", Scalar::F64(1.5))
            .run(g1(cdiv(n, 64) + 1));
        let a = o.input("A");
        let mut out = o.expect("O");
        for i in 0..n {
            let v = (a.i(i) * 3 - 7) as f64 * 0.5;
            out.set_f(i, if flag { v } else { -1.0 } + 9.0 + 1.5);
        }
        o.check("O", &out);
    }
}

/// The lane `t` reads from in a shuffle within pieces of `width` lanes,
/// given the source index within the piece; its own lane when the source
/// lies outside the piece.
fn src_in_piece(t: usize, width: usize, src: i64) -> usize {
    if (0..width as i64).contains(&src) {
        t / width * width + src as usize
    } else {
        t
    }
}

/// Runs corpus kernel `name`, which transposes `A` (`n` x `m`) into `B`,
/// over `grid`, and checks `B[c, r] = A[r, c]`.
fn transposes(name: &str, n: usize, m: usize, grid: [u32; 3]) {
    let o = Case::corpus(name)
        .dims(&[("N", n as i64), ("M", m as i64)])
        .run(grid);
    let a = o.input("A");
    o.check_f("B", n * m, |i| a.f((i % n) * m + i / n));
}

pub fn scratch_transpose() {
    for (n, m) in [(45usize, 70usize), (64, 32)] {
        transposes("scratch_transpose", n, m, [cdiv(m, 32), cdiv(n, 32), 1]);
    }
}

pub fn scratch_fill() {
    for (n, m) in [(45usize, 70usize), (32, 32)] {
        transposes("scratch_fill", n, m, [cdiv(m, 32), cdiv(n, 32), 1]);
    }
}

pub fn scratch_halo() {
    let r = 5;
    let o = Case::corpus("scratch_halo")
        .dims(&[("R", r as i64)])
        .run(g1(cdiv(r, 2)));
    let a = o.input("A");
    let mut b = o.expect("B");
    let at = |row: usize, c: i64| {
        if (0..64).contains(&c) {
            a.f(row * 64 + c as usize)
        } else {
            0.0
        }
    };
    for row in 0..r {
        for c in 0..64i64 {
            b.set_f(row * 64 + c as usize, at(row, c - 4) + at(row, c + 4));
        }
    }
    o.check("B", &b);
}

pub fn scratch_scan() {
    let r = 5;
    let o = Case::corpus("scratch_scan")
        .dims(&[("R", r as i64)])
        .run(g1(r as u32));
    let x = o.input("X");
    let mut y = o.expect("Y");
    for row in 0..r {
        let mut acc = 0.0;
        for i in 0..256 {
            acc += x.f(row * 256 + i);
            y.set_f(row * 256 + i, acc);
        }
    }
    o.check("Y", &y);
}

/// Checks the outputs `names` of a shuffle of `A` over 64 threads: thread
/// `t` of output `j` holds `A[sources(t)[j]]`.
fn check_shuffles<const N: usize>(
    o: &Outcome,
    names: [&str; N],
    sources: impl Fn(usize) -> [usize; N],
) {
    let a = o.input("A");
    let mut outs: Vec<Tensor> = names.iter().map(|n| o.expect(n)).collect();
    for t in 0..64 {
        for (out, src) in outs.iter_mut().zip(sources(t)) {
            out.set_f(t, a.f(src));
        }
    }
    for (n, want) in names.iter().zip(&outs) {
        o.check(n, want);
    }
}

pub fn shfl_down_up() {
    let o = Case::corpus("shfl_down_up")
        .gen("S", Gen::Int(-40, 40))
        .run(g1(1));
    let s = o.input("S");
    check_shuffles(&o, ["D3", "U5", "DW", "UV", "DV"], |t| {
        let lane = |w: usize| (t % w) as i64;
        let st = s.i(t);
        [
            src_in_piece(t, 32, lane(32) + 3),
            src_in_piece(t, 32, lane(32) - 5),
            src_in_piece(t, 8, lane(8) + 1),
            src_in_piece(t, 16, lane(16) - st),
            src_in_piece(t, 32, lane(32) + st),
        ]
    });
}

pub fn shfl_from() {
    let o = Case::corpus("shfl_from")
        .gen("S", Gen::Int(-10, 40))
        .run(g1(1));
    let s = o.input("S");
    check_shuffles(&o, ["B0", "P", "V", "W"], |t| {
        [
            src_in_piece(t, 32, 0),
            src_in_piece(t, 4, 3),
            src_in_piece(t, 32, s.i(t)),
            src_in_piece(t, 8, s.i(t)),
        ]
    });
}

pub fn shfl_xor() {
    let o = Case::corpus("shfl_xor")
        .gen("M", Gen::Int(-4, 20))
        .run(g1(1));
    let m = o.input("M");
    check_shuffles(&o, ["X1", "X16", "W", "V"], |t| {
        let lane = |w: usize| (t % w) as i64;
        [
            src_in_piece(t, 32, lane(32) ^ 1),
            src_in_piece(t, 32, lane(32) ^ 16),
            src_in_piece(t, 4, lane(4) ^ 2),
            src_in_piece(t, 8, lane(8) ^ m.i(t)),
        ]
    });
}

pub fn shfl_types() {
    let o = Case::corpus("shfl_types").run(g1(1));
    let names = ["D", "L", "H", "K", "Y"];
    let mut outs: Vec<Tensor> = names.iter().map(|n| o.expect(n)).collect();
    let (a, b, c, e, g) = (
        o.input("A"),
        o.input("B"),
        o.input("C"),
        o.input("E"),
        o.input("G"),
    );
    for t in 0..32 {
        let l = t as i64;
        outs[0].set_f(t, b.f(src_in_piece(t, 32, l ^ 3)));
        outs[1].set_i(t, c.i(src_in_piece(t, 32, l + 1)));
        outs[2].set_f(t, e.f(src_in_piece(t, 32, 5)));
        outs[3].set_i(t, i64::from(a.f(src_in_piece(t, 32, l - 1)) > 0.0));
        outs[4].set_i(t, g.i(src_in_piece(t, 32, l ^ 7)));
    }
    for (n, want) in names.iter().zip(&outs) {
        o.check(n, want);
    }
}

pub fn short_circuit() {
    let n = 100;
    // Three CTAs of 64 over-cover N = 100; elements that are neither > 0
    // nor < -5 stay poisoned.
    let o = with_n("short_circuit", n)
        .gen("A", Gen::Float(-10.0, 10.0))
        .run(g1(cdiv(n, 64) + 1));
    let a = o.input("A");
    let mut want = o.expect("O");
    let mut untouched = 0;
    for i in 0..n {
        if a.f(i) < -5.0 {
            want.set_i(i, 2);
        } else if a.f(i) > 0.0 {
            want.set_i(i, 1);
        } else {
            untouched += 1;
        }
    }
    assert!(
        untouched > 0,
        "the input should leave some elements unwritten"
    );
    o.check("O", &want);
}

/// f16 addition rounding to f16.
fn hadd(a: f64, b: f64) -> f64 {
    f16::from_f64(a + b).to_f64()
}

pub fn tile_f16_halo() {
    let n = 300;
    let o = with_n("tile_f16_halo", n).run(g1(cdiv(n, 128)));
    let x = o.input("x");
    let at = |i: i64| {
        if (0..n as i64).contains(&i) {
            x.f(i as usize)
        } else {
            0.0
        }
    };
    let mut y = o.expect("y");
    for i in 0..n as i64 {
        y.set_f(i as usize, hadd(hadd(at(i - 1), at(i)), at(i + 1)));
    }
    o.check("y", &y);
}

pub fn tile_i8() {
    let n = 70;
    let o = with_n("tile_i8", n).run(g1(cdiv(n, 64) + 1));
    let (q, v) = (o.input("Q"), o.input("V"));
    o.check_i("y", n, |r| (0..64).map(|k| q.i(r * 64 + k) * v.i(k)).sum());
}

pub fn tile_lut() {
    let n = 100;
    let o = with_n("tile_lut", n).run(g1(cdiv(n, 64) + 1));
    let (l, x) = (o.input("L"), o.input("X"));
    o.check_f("y", n, |i| (0..16).map(|k| l.f(k) * x.f(i * 16 + k)).sum());
}

pub fn tile_ragged() {
    let (n, m) = (37, 70);
    // One CTA column and row past the end: their tiles lie wholly outside.
    let o = Case::corpus("tile_ragged")
        .dims(&[("N", n as i64), ("M", m as i64)])
        .run([cdiv(m, 32) + 1, cdiv(n, 16) + 1, 1]);
    let a = o.input("A");
    o.check_f("B", n * m, |i| 2.0 * a.f(i));
}

pub fn tile_reuse() {
    let o = Case::corpus("tile_reuse").run(g1(1));
    let (a, b) = (o.input("A"), o.input("B"));
    o.check_f("y", 256, |t| a.f((t + 255) % 256) + b.f((t + 1) % 256));
}

pub fn tile_transpose() {
    let (n, m) = (45, 70);
    transposes(
        "tile_transpose",
        n,
        m,
        [cdiv(m, 32) + 1, cdiv(n, 32) + 1, 1],
    );
}

pub fn tile_write() {
    let o = Case::corpus("tile_write").run(g1(1));
    let x = o.input("X");
    o.check_f("y", 128, |t| 3.0 * x.f((t + 7) % 128));
}

pub fn types_bf16() {
    let n = 300;
    let o = with_n("types_bf16", n).run(g1(cdiv(n, 128)));
    let (a, b) = (o.input("A"), o.input("B"));
    o.check_f("O", n, |i| {
        bf16::from_f64(a.f(i).max(b.f(i)) * 2.0).to_f64()
    });
    // bf16 + bf16 rounds to bf16 before the conversion to f32.
    o.check_f("F", n, |i| bf16::from_f64(a.f(i) + b.f(i)).to_f64());
}

pub fn types_f8() {
    // A over f32 beyond e4m3's 448 and H beyond e5m2's 57344 (both
    // saturate), P and Q every 8-bit pattern but the NaNs in turn (the
    // generator's range covers subnormals and both signs).
    let n = 300;
    let mut p = Tensor::zeros(ScalarTy::F8E4M3, &[n]);
    let mut q = Tensor::zeros(ScalarTy::F8E5M2, &[n]);
    for i in 0..n {
        p.bytes[i] = i as u8;
        q.bytes[i] = (i as u8).wrapping_mul(7);
    }
    let o = with_n("types_f8", n)
        .gen("A", Gen::Float(-600.0, 600.0))
        .gen("H", Gen::Float(-65000.0, 65000.0))
        .init("P", p)
        .init("Q", q)
        .run(g1(cdiv(n, 128)));
    let (a, h, p, q) = (o.input("A"), o.input("H"), o.input("P"), o.input("Q"));
    // `set_f` encodes with phobos_meta::f8 (round to nearest even,
    // saturating): an implementation apart from the simulator's `cvt`.
    o.check_f("E", n, |i| a.f(i));
    o.check_f("F", n, |i| h.f(i));
    o.check_f("X", n, |i| f64::from(p.f(i) as f32 * 2.0 + q.f(i) as f32));
    o.check_f("Y", n, |i| q.f(i));
    o.check_f("Z", n, |i| p.f(i));
}

pub fn types_bool() {
    let n = 90;
    let o = with_n("types_bool", n).run(g1(cdiv(n, 32)));
    let (a, k) = (o.input("A"), o.input("K"));
    let kk = |i: usize| k.i(i) != 0;
    let mm = |i: usize| a.f(i) > 0.0 && !kk(i);
    o.check_i("M", n, |i| i64::from(mm(i)));
    o.check_i("C", n, |i| {
        (if mm(i) || kk(i) { 1 } else { 2 }) + i64::from(mm(i) != kk(i))
    });
}

pub fn types_f16() {
    let n = 500;
    let o = with_n("types_f16", n)
        .gen("A", Gen::Float(-8.0, 8.0))
        .gen("B", Gen::Float(-8.0, 8.0))
        .run(g1(cdiv(n, 128)));
    let (a, b) = (o.input("A"), o.input("B"));
    o.check_f("O", n, |i| {
        hadd(f16::from_f64(a.f(i) * b.f(i)).to_f64(), 1.5)
    });
    o.check_f("F", n, |i| f64::from((a.f(i) as f32) - (b.f(i) as f32)));
}

pub fn types_f64() {
    let n = 100;
    let o = with_n("types_f64", n)
        .gen("A", Gen::Float(0.0, 100.0))
        .run(g1(cdiv(n, 64) + 1));
    let a = o.input("A");
    o.check_f("O", n, |i| a.f(i).sqrt() * 1e-3 + a.f(i) / 3.0);
    o.check_i("I", n, |i| a.f(i).floor() as i64);
}

pub fn types_i16_u16() {
    let n = 200;
    let o = with_n("types_i16_u16", n).run(g1(cdiv(n, 64) + 1));
    let a = o.input("A");
    let x = |i: usize| a.i(i) as i16;
    o.check_i("S", n, |i| {
        i64::from(x(i).wrapping_mul(300).wrapping_sub(5))
    });
    o.check_i("U", n, |i| i64::from(x(i) as u16 / 3));
    o.check_f("F", n, |i| f64::from(x(i)) * 0.5);
}

pub fn types_i64_u64() {
    let n = 100;
    let o = with_n("types_i64_u64", n).run(g1(cdiv(n, 32) + 1));
    let a = o.input("A");
    o.check_i("S", n, |i| {
        let x = a.i(i);
        x.wrapping_mul(x)
            .wrapping_add((i as i64) << 33)
            .wrapping_sub(x / 7)
            .wrapping_add(x % 5)
    });
    o.check_i("U", n, |i| (((a.i(i) as u64) >> 3) ^ 255) as i64);
    o.check_i("L", n, |i| {
        let x = a.i(i);
        i64::from((x as i32).wrapping_add(i32::from(x > 0)))
    });
}

pub fn types_i8_u8() {
    let n = 300;
    let o = with_n("types_i8_u8", n).run(g1(cdiv(n, 32)));
    let (a, b) = (o.input("A"), o.input("B"));
    let (x, y) = (|i: usize| a.i(i) as i8, |i: usize| b.i(i) as u8);
    o.check_i("S", n, |i| {
        i64::from(x(i).wrapping_mul(3).wrapping_add(100))
    });
    o.check_i("U", n, |i| {
        i64::from(y(i).wrapping_mul(7).wrapping_add(200))
    });
    o.check_i("W", n, |i| {
        let (x, y) = (x(i), y(i));
        i64::from(x) + i64::from(y) + i64::from(x >> 2) + i64::from(y >> 3)
    });
}

pub fn vec_add() {
    let n = 1000;
    let o = with_n("vec_add", n).run(g1(cdiv(n, 128) + 2));
    let (a, b) = (o.input("A"), o.input("B"));
    o.check_f("C", n, |i| a.f(i) + b.f(i));
}
pub fn int4_gemv() {
    // 37 rows over 4 warps per CTA: the last CTA is ragged, one CTA past it.
    let (n, kw) = (37usize, 128usize);
    let k = kw * 8;
    let o = Case::corpus("int4_gemv")
        .dims(&[
            ("N", n as i64),
            ("KW", kw as i64),
            ("KG", (k / 128) as i64),
            ("K", k as i64),
        ])
        .floor(100.0)
        .run(g1(cdiv(n, 4) + 1));
    let (w, s, x) = (o.input("Wq"), o.input("S"), o.input("x"));
    let mut y = o.expect("y");
    for r in 0..n {
        let mut acc = 0.0;
        for c in 0..k {
            let word = w.i(r * kw + c / 8) as u64 as u32;
            let q = ((word >> (4 * (c % 8))) & 15) as f64 - 8.0;
            acc += s.f(r * (k / 128) + c / 128) * q * x.f(c);
        }
        y.set_f(r, acc);
    }
    o.check("y", &y);
}

pub fn reg_gemm() {
    // 45 x 70 out of 32 x 32 blocks per CTA: ragged rows and columns, a
    // K of 37 that no unrolling divides, and a small case inside one block.
    for (m, n, k, extra) in [(45usize, 70usize, 37usize, 1u32), (3, 5, 2, 0)] {
        let o = Case::corpus("reg_gemm")
            .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
            .floor(1.0)
            .run([cdiv(n, 32) + extra, cdiv(m, 32), 1]);
        o.check("C", &gemm_reference(&o, m, n, k, false));
    }
}

/// `C = A * op(B)` in f64 from the operands as stored (f16 or bf16), for
/// the tensor-core GEMMs: `b_rows_are_n` when `B` is `[N, K]` (read as
/// `trans(w)`).
fn gemm_reference(o: &Outcome, m: usize, n: usize, k: usize, b_rows_are_n: bool) -> Tensor {
    let (a, b) = (o.input("A"), o.input(if b_rows_are_n { "W" } else { "B" }));
    let mut c = o.expect("C");
    for r in 0..m {
        for col in 0..n {
            let s: f64 = (0..k)
                .map(|x| {
                    let bv = if b_rows_are_n {
                        b.f(col * k + x)
                    } else {
                        b.f(x * n + col)
                    };
                    a.f(r * k + x) * bv
                })
                .sum();
            c.set_f(r * n + col, s);
        }
    }
    c
}

pub fn mma_gemm_bias_relu() {
    // The epilogue rounds as written: the f32 product of the sum and
    // alpha, then the f32 sum with the bias (the reference rounds the
    // same way from the exact dot product).
    // The last run: on wgmma (sm_90a with K a multiple of 8).
    for (arch, on_wgmma) in [(75, false), (80, false), (SM_90A, false), (SM_90A, true)] {
        let sizes = if on_wgmma {
            [(77usize, 90usize, 56usize), (64, 70, 16)]
        } else {
            [(77usize, 90usize, 53usize), (64, 70, 16)]
        };
        for (m, n, k) in sizes {
            let alpha = 0.75f32;
            let case = if on_wgmma {
                hopper("mma_gemm_bias_relu", "K = 8")
            } else {
                Case::corpus_for("mma_gemm_bias_relu", arch)
            };
            let o = case
                .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
                .scalar("alpha", Scalar::F32(alpha))
                .run([cdiv(m, 64), cdiv(n, 64), 1]);
            let dot = gemm_reference(&o, m, n, k, true);
            let bias = o.input("Bias");
            let mut c = o.expect("C");
            for r in 0..m {
                for col in 0..n {
                    let scaled = (dot.f(r * n + col) as f32) * alpha;
                    let v = (scaled + bias.f(col) as f32).max(0.0);
                    c.set_f(r * n + col, f64::from(v));
                }
            }
            o.check("C", &c);
        }
    }
}

/// `cvt.rna.tf32.f32`: 10 mantissa bits, ties away from zero (finite `x`).
fn tf32(x: f64) -> f64 {
    let b = (x as f32).to_bits();
    f64::from(f32::from_bits(b.wrapping_add(0x1000) & 0xFFFF_E000))
}

/// C = A · Wᵀ of the operands rounded to tf32, in f64.
fn tf32_reference(o: &Outcome, m: usize, n: usize, k: usize) -> Tensor {
    let (a, w) = (o.input("A"), o.input("W"));
    let mut c = o.expect("C");
    for r in 0..m {
        for col in 0..n {
            let s: f64 = (0..k)
                .map(|x| tf32(a.f(r * k + x)) * tf32(w.f(col * k + x)))
                .sum();
            c.set_f(r * n + col, s);
        }
    }
    c
}

/// Corpus kernel `name` for sm_90a with `@aligned(FACT)` added: its
/// `dot`s on `wgmma` (asserted), which wants operand rows of 8 bytes or
/// more; without the fact, the ragged-K kernels keep `mma.sync` there.
fn hopper(name: &str, fact: &str) -> Case {
    let case = Case::corpus_aligned_for(name, SM_90A, fact);
    assert!(
        case.kernel.ptx.contains("wgmma.mma_async"),
        "{name} with @aligned({fact}) is not on wgmma"
    );
    case
}

/// Runs a GEMM of the corpus (64 rows of C per CTA, `cols` columns) at
/// each `(M, N, K)` for each target, and checks C against `reference`.
fn float_gemm(
    name: &str,
    archs: &[u32],
    cols: usize,
    sizes: &[(usize, usize, usize)],
    reference: impl Fn(&Outcome, usize, usize, usize) -> Tensor,
) {
    for &arch in archs {
        for &(m, n, k) in sizes {
            let o = Case::corpus_for(name, arch)
                .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
                .run([cdiv(m, 64), cdiv(n, cols), 1]);
            o.check("C", &reference(&o, m, n, k));
        }
    }
}

pub fn mma_gemm_tf32() {
    let sizes = [(70, 45, 37), (64, 32, 8)];
    float_gemm("mma_gemm_tf32", &[80, SM_90A], 32, &sizes, tf32_reference);
    // On wgmma (`m64nNk8 .tf32`): the copies round the operands to tf32
    // as `mma.sync` rounds its fragments, so the reference is the same.
    for (m, n, k) in [(70usize, 45usize, 36usize), (64, 32, 8), (3, 70, 4)] {
        let o = hopper("mma_gemm_tf32", "K = 4")
            .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
            .run([cdiv(m, 64), cdiv(n, 32), 1]);
        o.check("C", &tf32_reference(&o, m, n, k));
    }
}

pub fn mma_gemm_f16() {
    // 77 x 90 out of 64 x 64 blocks, K = 53 (not a multiple of the 32 of a
    // copy nor of the 16 of an mma): ragged everywhere. Then one block
    // inside a single fragment, and a K below one mma step. sm_75 runs two
    // m16n8k8 per step, sm_80 one m16n8k16.
    let sizes = [(77, 90, 53), (5, 3, 7), (130, 64, 96)];
    float_gemm(
        "mma_gemm_f16",
        &[75, 80, SM_90A],
        64,
        &sizes,
        |o, m, n, k| gemm_reference(o, m, n, k, true),
    );
    // On wgmma: K a multiple of 8, ragged against the copies' 32.
    for (m, n, k) in [(77usize, 90usize, 56usize), (5, 3, 8), (130, 64, 96)] {
        let o = hopper("mma_gemm_f16", "K = 8")
            .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
            .run([cdiv(m, 64), cdiv(n, 64), 1]);
        o.check("C", &gemm_reference(&o, m, n, k, true));
    }
}

pub fn mma_gemm_f16acc() {
    // f16 accumulation: each mma.sync rounds its sum to f16 (the ISA
    // leaves how to the hardware), so element (i, j) may be off the exact
    // sum by at most one f16 rounding (2^-11 relative, 2^-25 absolute for
    // subnormals) per instruction of the sum of |a w| over K: K padded to
    // the copies' 32, over 16 per instruction on sm_80 and 8 on sm_75.
    // The last run: on wgmma (sm_90a with K a multiple of 8), whose
    // m64nNk16 rounds once per 16 of K as m16n8k16 does.
    for (arch, on_wgmma) in [(75, false), (80, false), (SM_90A, false), (SM_90A, true)] {
        let sizes = if on_wgmma {
            [(77usize, 90usize, 56usize), (5, 3, 8), (130, 64, 96)]
        } else {
            [(77usize, 90usize, 53usize), (5, 3, 7), (130, 64, 96)]
        };
        for (m, n, k) in sizes {
            let case = if on_wgmma {
                hopper("mma_gemm_f16acc", "K = 8")
            } else {
                Case::corpus_for("mma_gemm_f16acc", arch)
            };
            let o = case
                .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
                .run([cdiv(m, 64), cdiv(n, 64), 1]);
            let (a, w) = (o.input("A"), o.input("W"));
            // The exact sums, in f64 (not rounded to C's f16).
            let mut want = Tensor::zeros(ScalarTy::F64, &[m, n]);
            for r in 0..m {
                for col in 0..n {
                    let s: f64 = (0..k).map(|x| a.f(r * k + x) * w.f(col * k + x)).sum();
                    want.set_f(r * n + col, s);
                }
            }
            let steps = (k.div_ceil(32) * 32 / if arch < 80 { 8 } else { 16 }) as f64;
            o.check_within("C", &want, |i| {
                let (r, col) = (i / n, i % n);
                let abs: f64 = (0..k)
                    .map(|x| (a.f(r * k + x) * w.f(col * k + x)).abs())
                    .sum();
                steps * (abs * 2f64.powi(-11) + 2f64.powi(-25))
            });
        }
    }
}

pub fn mma_gemm_staged() {
    // The 3-stage ring: K = 88 (2.75 trips of 32, so the last trip's copy
    // is ragged and the ring's prologue and tail issue past the end), a
    // K of one trip (the prologue's second copy is past the end), and 7
    // trips. sm_75 has no cp.async and copies plainly.
    let sizes = [(77, 90, 88), (5, 3, 8), (130, 64, 200)];
    float_gemm(
        "mma_gemm_staged",
        &[75, 80, SM_90A],
        64,
        &sizes,
        |o, m, n, k| gemm_reference(o, m, n, k, true),
    );
}

pub fn mma_gemm_staged_bf16() {
    // 8-byte chunks: N = 44 ends inside a chunk of the second column
    // block's B copies (a src-size prefix), K = 36 inside A's.
    let sizes = [(70, 44, 36), (64, 32, 16), (3, 68, 4)];
    float_gemm(
        "mma_gemm_staged_bf16",
        &[80, SM_90A],
        32,
        &sizes,
        |o, m, n, k| gemm_reference(o, m, n, k, false),
    );
}

pub fn mma_gemm_staged_tf32() {
    // 4-byte chunks; K = 100 is seven trips of 16 through four stages.
    let sizes = [(70, 45, 37), (64, 32, 8), (20, 33, 100)];
    float_gemm(
        "mma_gemm_staged_tf32",
        &[80, SM_90A],
        32,
        &sizes,
        tf32_reference,
    );
}

pub fn staged_row_sum() {
    for arch in [75, 80] {
        for (r, l) in [(100usize, 148usize), (64, 32), (7, 4)] {
            let o = Case::corpus_for("staged_row_sum", arch)
                .dims(&[("R", r as i64), ("L", l as i64)])
                .run(g1(cdiv(r, 64)));
            let x = o.input("X");
            let mut y = o.expect("y");
            for row in 0..r {
                y.set_f(row, (0..l).map(|c| x.f(row * l + c)).sum());
            }
            o.check("y", &y);
        }
    }
}

pub fn mma_gemm_bf16() {
    let sizes = [(70, 45, 41), (64, 32, 16), (3, 70, 1)];
    float_gemm("mma_gemm_bf16", &[80, SM_90A], 32, &sizes, |o, m, n, k| {
        gemm_reference(o, m, n, k, false)
    });
    // On wgmma, B [K, N] MN-major: K and N multiples of 8.
    for (m, n, k) in [(70usize, 48usize, 40usize), (64, 32, 16), (3, 72, 8)] {
        let o = hopper("mma_gemm_bf16", "K = 8, N = 8")
            .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
            .run([cdiv(m, 64), cdiv(n, 32), 1]);
        o.check("C", &gemm_reference(&o, m, n, k, false));
    }
}

pub fn mma_attention_scores() {
    // 77 query rows (two CTAs, the second ragged), 150 keys (three blocks
    // of 64, the last one 22 wide: its other 42 columns are zero scores
    // that must not enter the max or the sum), D = 40 (a ragged second
    // copy of 32). Then one row and key block smaller than a fragment,
    // a single key, and sizes that fill the blocks exactly. sm_75 runs
    // two m16n8k8 per step, sm_80 one m16n8k16.
    // The last run: on wgmma (sm_90a with D a multiple of 8).
    for (arch, on_wgmma) in [(75, false), (80, false), (SM_90A, false), (SM_90A, true)] {
        let sizes = if on_wgmma {
            [
                (77usize, 150usize, 40usize),
                (5, 3, 8),
                (3, 1, 16),
                (64, 128, 64),
            ]
        } else {
            [
                (77usize, 150usize, 40usize),
                (5, 3, 7),
                (3, 1, 16),
                (64, 128, 64),
            ]
        };
        for (m, n, d) in sizes {
            let scale = 0.35f32;
            let case = if on_wgmma {
                hopper("mma_attention_scores", "D = 8")
            } else {
                Case::corpus_for("mma_attention_scores", arch)
            };
            let o = case
                .dims(&[("M", m as i64), ("N", n as i64), ("D", d as i64)])
                .scalar("scale", Scalar::F32(scale))
                // P is below 1; the floor makes the comparison relative
                // down to values of 1e-3 (1e-8 absolute below that).
                .floor(1e-3)
                .run([cdiv(m, 64), 1, 1]);
            let (q, k) = (o.input("Q"), o.input("K"));
            let mut p = o.expect("P");
            for i in 0..m {
                let x: Vec<f64> = (0..n)
                    .map(|j| {
                        let s: f64 = (0..d).map(|c| q.f(i * d + c) * k.f(j * d + c)).sum();
                        s * f64::from(scale)
                    })
                    .collect();
                let mx = x.iter().copied().fold(f64::MIN, f64::max);
                let total: f64 = x.iter().map(|v| (v - mx).exp()).sum();
                for (j, v) in x.iter().enumerate() {
                    p.set_f(i * n + j, (v - mx).exp() / total);
                }
            }
            o.check("P", &p);
        }
    }
}

/// An integer GEMM case: exact, bit for bit, against an i64 reference.
fn integer_gemm(name: &str) {
    for (m, n, k) in [(70usize, 83usize, 75usize), (64, 64, 64), (1, 9, 33)] {
        let o = Case::corpus(name)
            .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
            .run([cdiv(m, 64), cdiv(n, 64), 1]);
        let (a, w) = (o.input("A"), o.input("W"));
        let mut c = o.expect("C");
        for r in 0..m {
            for col in 0..n {
                let s: i64 = (0..k).map(|x| a.i(r * k + x) * w.i(col * k + x)).sum();
                c.set_i(r * n + col, s);
            }
        }
        o.check("C", &c);
    }
}

pub fn mma_gemm_i8() {
    // Over the whole i8 range: sums up to 75 * 128 * 128.
    integer_gemm("mma_gemm_i8");
}

/// An 8-bit float GEMM case against the f64 sum of the (exact) products of
/// the f8 operands; the simulator rounds each mma's sum to f32.
fn f8_gemm(name: &str) {
    // sm_89's mma.sync, sm_90a's (K ragged: mma.sync there too, which
    // ptxas emulates on Hopper), and sm_90a's wgmma (`m64nNk32`) with K a
    // multiple of 16.
    let sizes = [(70, 83, 75), (64, 64, 64), (1, 9, 33), (77, 5, 130)];
    let aligned = [(70, 83, 80), (64, 64, 64), (1, 9, 16), (77, 5, 144)];
    let runs = [
        (89, false, sizes),
        (SM_90A, false, sizes),
        (SM_90A, true, aligned),
    ];
    for (arch, on_wgmma, sizes) in runs {
        for &(m, n, k) in &sizes {
            f8_gemm_at(name, arch, on_wgmma, (m, n, k));
        }
    }
}

fn f8_gemm_at(name: &str, arch: u32, on_wgmma: bool, (m, n, k): (usize, usize, usize)) {
    {
        let case = if on_wgmma {
            hopper(name, "K = 16")
        } else {
            Case::corpus_for(name, arch)
        };
        let o = case
            .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
            .gen("A", Gen::Float(-8.0, 8.0))
            .gen("W", Gen::Float(-8.0, 8.0))
            .run([cdiv(m, 64), cdiv(n, 64), 1]);
        o.check("C", &gemm_reference(&o, m, n, k, true));
    }
}

pub fn mma_gemm_f8e4m3() {
    f8_gemm("mma_gemm_f8e4m3");
}

pub fn mma_gemm_f8e5m2() {
    f8_gemm("mma_gemm_f8e5m2");
}

pub fn mma_gemm_u8() {
    // Over the whole u8 range: sums up to 75 * 255 * 255.
    integer_gemm("mma_gemm_u8");
}

pub fn reg_local() {
    // 100 threads' rows over two CTAs, the last one ragged.
    let (t, l) = (100usize, 13usize);
    let o = Case::corpus("reg_local")
        .dims(&[("T", t as i64), ("L", l as i64)])
        .run(g1(cdiv(t, 64)));
    let x = o.input("X");
    let mut h = o.expect("H");
    for row in 0..t {
        let mut bins = [0i64; 8];
        for i in 0..l {
            bins[(x.i(row * l + i) & 7) as usize] += 1;
        }
        for (b, v) in bins.iter().enumerate() {
            h.set_i(row * 8 + b, *v);
        }
    }
    o.check("H", &h);
}

/// Calls macro `$m` with the name of every case, so a test file can make
/// one `#[test]` per case from the one list.
#[macro_export]
macro_rules! corpus_cases {
    ($m:ident) => {
        $m! {
            atomic_histogram, atomic_ops, atomic_sum, autotune_block, autotune_dim, control_flow, cta_forms, cta_softmax, cta_sum_loop,
            dp4a_nibble, dp4a_u8, elem_word, float_specials, grid_2d, grid_attr, i8_matvec,
            int4_gemv, int_ops,
            lane_any_all, lane_argmax, lane_f16_sum, lane_max, lane_min_max_int,
            lane_reduce, lane_sum_width, lanes_matvec, loops, math_f32, rank3,
            mma_attention_scores, mma_gemm_bf16, mma_gemm_bias_relu, mma_gemm_f16, mma_gemm_f16acc, mma_gemm_f8e4m3, mma_gemm_f8e5m2, mma_gemm_i8, mma_gemm_staged, mma_gemm_staged_bf16, mma_gemm_staged_tf32, mma_gemm_tf32, mma_gemm_u8, reg_gemm, reg_local, row_sum, run_column, run_f16, run_fn, run_gelu, run_long, run_math, run_softmax, run_store, run_unaligned, saxpy,
            scalars, scratch_fill, scratch_halo, scratch_scan, scratch_transpose, shfl_down_up, shfl_from, shfl_types, shfl_xor, short_circuit,
            staged_matvec, staged_row_sum, tile_f16_halo, tile_i8, tile_lut, tile_ragged, tile_reuse,
            tile_transpose, tile_write, types_bf16, types_bool, types_f16, types_f64, types_f8,
            types_i16_u16, types_i64_u64, types_i8_u8, vec_add,
        }
    };
}

macro_rules! cases_table {
    ($($name:ident),* $(,)?) => {
        /// Every case, by corpus file name.
        pub const CASES: &[(&str, fn())] = &[$((stringify!($name), $name)),*];
    };
}

corpus_cases!(cases_table);
