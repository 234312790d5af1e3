//! Unrolled loops compute what the loops as written compute, on the
//! simulator: the main loop and its remainder both run (trip counts that
//! are and are not multiples of the factor), `unroll N` counts down as well
//! as up, the limit near `i32::MAX` does not wrap, and copies that share
//! their first copy's address read the right elements.

use phobos_conformance::corpus_cases::{i8_matvec_ref, matvec_ref};
use phobos_conformance::sim_support::{cdiv, Case, Gen};

/// lanes_matvec with K = 128 * trips: 8 bodies per main trip, then the rest.
#[test]
fn lanes_matvec_is_right_for_every_remainder() {
    for trips in [1usize, 7, 8, 9, 11, 16, 19] {
        let (n, k) = (13usize, 128 * trips);
        let o = Case::corpus("lanes_matvec")
            .dims(&[("N", n as i64), ("K", k as i64)])
            .run([cdiv(n, 4), 1, 1]);
        o.check("y", &matvec_ref(&o, "y", n, k));
    }
}

/// i8_matvec: the loop starts at a per-lane offset; ragged K (a multiple of
/// 32 but not of 512) ends lanes' loops at different trips.
#[test]
fn i8_matvec_is_right_with_ragged_k() {
    for k in [32usize, 512, 4096, 4096 + 32 * 5, 8192 + 480] {
        let n = 9usize;
        let o = Case::corpus("i8_matvec")
            .dims(&[("N", n as i64), ("K", k as i64)])
            .gen("A", Gen::Int(-128, 127))
            .gen("W", Gen::Int(-128, 127))
            .run([cdiv(n, 8), 1, 1]);
        o.check("C", &i8_matvec_ref(&o, n, k));
    }
}

const COUNTS: &str = r#"
@launch(32)
kernel counts(A: tensor<i32>[1, N], Up: tensor<i32>[1, 32], Down: tensor<i32>[1, 32], Top: tensor<i32>[1, 32], Bottom: tensor<i32>[1, 32]) {
  let t = ctx.lane
  var up: i32 = 0
  for i in range(t, N, 3) unroll 4 {
    up += A[0, i] * (i + 1)
  }
  Up[0, t] = up
  var down: i32 = 0
  for i in range(N - 1 - t, -1, -5) unroll 3 {
    down = down * 3 + A[0, i]
  }
  Down[0, t] = down
  var top: i32 = 0
  for i in range(2147483647 - t % 4, 2147483638, -3) unroll 5 {
    top += 1
  }
  Top[0, t] = top
  var bottom: i32 = 0
  for i in range(-2147483647 - 1 + t % 4, -2147483640, 3) unroll 5 {
    bottom += 1
  }
  Bottom[0, t] = bottom
}
"#;

/// Explicit factors, a negative step, per-lane starts, and ranges whose
/// end sits within `(U-1)*|step|` of `i32::MAX` or `i32::MIN` (where the
/// main loop's limit `end - (U-1)*step` would wrap without its clamp).
#[test]
fn explicit_unroll_counts_up_down_and_near_the_top() {
    for n in [0usize, 1, 5, 31, 64, 100] {
        let o = Case::source(COUNTS, "counts.pho", "counts")
            .dims(&[("N", n as i64)])
            .gen("A", Gen::Int(-50, 50))
            .run([1, 1, 1]);
        let a = o.input("A");
        let (mut up, mut down) = (o.expect("Up"), o.expect("Down"));
        let (mut top, mut bottom) = (o.expect("Top"), o.expect("Bottom"));
        for t in 0..32i64 {
            let mut s = 0i32;
            let mut i = t;
            while i < n as i64 {
                s = s.wrapping_add((a.i(i as usize) as i32).wrapping_mul(i as i32 + 1));
                i += 3;
            }
            up.set_i(t as usize, s as i64);
            let mut d = 0i32;
            let mut i = n as i64 - 1 - t;
            while i > -1 {
                d = d.wrapping_mul(3).wrapping_add(a.i(i as usize) as i32);
                i -= 5;
            }
            down.set_i(t as usize, d as i64);
            let first = 2147483647 - t % 4;
            top.set_i(t as usize, (first - 2147483638 + 2) / 3);
            let first = -2147483648 + t % 4;
            bottom.set_i(t as usize, (-2147483640 - first + 2) / 3);
        }
        o.check("Up", &up);
        o.check("Down", &down);
        o.check("Top", &top);
        o.check("Bottom", &bottom);
    }
}
