//! The language page's stated behaviours of collectives and shuffles,
//! checked by running small dedicated kernels in the simulator:
//!
//! - a shuffle whose source lies outside the lane's piece reads the lane's
//!   own value (`from`, `down`, `up`, `xor`, with and without `width`);
//! - `argmax` ties go to the smallest lane (and the smallest thread over
//!   the CTA);
//! - `width w` folds each w-lane piece independently;
//! - a CTA collective gives every thread the same total.
//!
//! The kernels live here, not in `tests/in`, so the PTX snapshot tests do
//! not pick them up.

use phobos_conformance::sim_support::{Case, Gen, Tensor};

/// The lane (within the warp) a lane reads from, or None when outside.
type SourceLane<'a> = dyn Fn(usize) -> Option<usize> + 'a;

const OUTSIDE: &str = r#"
@launch(64)
kernel outside(A: tensor<f32>[64], M: tensor<i32>[64], F: tensor<f32>[64], D: tensor<f32>[64], U: tensor<f32>[64], X: tensor<f32>[64], FW: tensor<f32>[64], DW: tensor<f32>[64], UW: tensor<f32>[64], XW: tensor<f32>[64]) {
  let t = ctx.thread
  let x = A[t]
  let m = M[t]
  F[t] = shfl<from m>(x)
  D[t] = shfl<down 20>(x)
  U[t] = shfl<up 7>(x)
  X[t] = shfl<xor m>(x)
  FW[t] = shfl<from 5, width 4>(x)
  DW[t] = shfl<down 2, width 8>(x)
  UW[t] = shfl<up 3, width 16>(x)
  XW[t] = shfl<xor m, width 8>(x)
}
"#;

#[test]
fn a_shuffle_from_outside_the_piece_reads_the_lanes_own_value() {
    // M: lane 0..15 of each warp get an index inside 0..8, the others one
    // outside every piece (32..40, or negative).
    let mut c = Case::source(OUTSIDE, "outside.pho", "outside");
    c.prepare();
    let m = c.tensors.get_mut("M").unwrap();
    for t in 0..64 {
        let lane = t % 32;
        let v = match lane {
            0..=15 => (lane as i64 * 5) % 8,
            16..=23 => 32 + lane as i64 % 8,
            _ => -1 - (lane as i64 % 3),
        };
        m.set_i(t, v);
    }
    let o = c.run([1, 1, 1]);
    let (a, m) = (o.input("A"), o.input("M"));
    // For each output: the lane read from, or None when outside the piece.
    let cases: [(&str, &SourceLane); 8] = [
        ("F", &|l| usize::try_from(m.i(l)).ok().filter(|s| *s < 32)),
        ("D", &|l| Some(l + 20).filter(|s| *s < 32)),
        ("U", &|l| l.checked_sub(7)),
        ("X", &|l| {
            usize::try_from(m.i(l))
                .ok()
                .map(|s| l ^ s)
                .filter(|s| *s < 32)
        }),
        ("FW", &|_| None),
        ("DW", &|l| Some(l + 2).filter(|s| s / 8 == l / 8)),
        ("UW", &|l| l.checked_sub(3).filter(|s| s / 16 == l / 16)),
        ("XW", &|l| {
            usize::try_from(m.i(l))
                .ok()
                .filter(|s| *s < 8)
                .map(|s| l ^ s)
        }),
    ];
    for (name, src) in cases {
        let mut want = o.expect(name);
        let mut own = 0;
        for t in 0..64 {
            let base = t / 32 * 32;
            let from = match src(t % 32) {
                Some(s) => base + s,
                None => {
                    own += 1;
                    t
                }
            };
            want.set_f(t, a.f(from));
        }
        assert!(own > 0 && own < 64 || name == "FW", "{name}: {own}");
        o.check(name, &want);
    }
}

const ARGMAX: &str = r#"
@launch(128)
kernel ties(A: tensor<f32>[128], B: tensor<i32>[128], W: tensor<i32>[128], P: tensor<i32>[128], T: tensor<i32>[128]) {
  let t = ctx.thread
  W[t] = argmax<over ctx.lane>(A[t])
  P[t] = argmax<over ctx.lane, width 8>(B[t])
  T[t] = argmax<over ctx.thread>(A[t])
}
"#;

#[test]
fn argmax_ties_go_to_the_smallest_lane() {
    let mut c = Case::source(ARGMAX, "ties.pho", "ties").gen("A", Gen::Float(-1.0, 1.0));
    c.prepare();
    let a = c.tensors.get_mut("A").unwrap();
    // Warp 0: the maximum 2.0 at lanes 29, 7 and 12. Warp 1: every lane
    // equal. Warp 2: 4.0 at lanes 31, 30 and 6. Warp 3: 4.0 at lanes 5 and
    // 4. Over the CTA the maximum 4.0 sits at threads 70, 94, 95, 100, 101.
    for t in [29, 7, 12] {
        a.set_f(t, 2.0);
    }
    for t in 32..64 {
        a.set_f(t, 0.5);
    }
    for t in [64 + 31, 64 + 30, 64 + 6, 101, 100] {
        a.set_f(t, 4.0);
    }
    // B: every 8-lane piece holds its maximum twice or more (or is constant).
    let b = c.tensors.get_mut("B").unwrap();
    for t in 0..128 {
        let piece = t / 8;
        let l = t % 8;
        let v = match piece % 4 {
            0 => 9,                           // constant: lane 0
            1 => i64::from(l == 3 || l == 6), // tie at 3 and 6
            2 => i64::from(l >= 5) * 4,       // tie at 5, 6, 7
            _ => -(l as i64),                 // descending: lane 0
        };
        b.set_i(t, v);
    }
    let o = c.run([1, 1, 1]);
    let mut w = o.expect("W");
    let mut p = o.expect("P");
    let mut th = o.expect("T");
    let lane_want = [7, 0, 6, 4];
    let piece_want = [0, 3, 5, 0];
    for t in 0..128 {
        w.set_i(t, lane_want[t / 32]);
        p.set_i(t, piece_want[(t / 8) % 4]);
        th.set_i(t, 70);
    }
    o.check("W", &w);
    o.check("P", &p);
    o.check("T", &th);
}

const WIDTHS: &str = r#"
@launch(64)
kernel widths(A: tensor<i32>[64], S: tensor<i32>[64, 6], X: tensor<i32>[64, 6], N: tensor<i32>[64, 6]) {
  let t = ctx.thread
  let x = A[t]
  S[t, 0] = sum<over ctx.lane, width 1>(x)
  S[t, 1] = sum<over ctx.lane, width 2>(x)
  S[t, 2] = sum<over ctx.lane, width 4>(x)
  S[t, 3] = sum<over ctx.lane, width 8>(x)
  S[t, 4] = sum<over ctx.lane, width 16>(x)
  S[t, 5] = sum<over ctx.lane, width 32>(x)
  X[t, 0] = max<over ctx.lane, width 1>(x)
  X[t, 1] = max<over ctx.lane, width 2>(x)
  X[t, 2] = max<over ctx.lane, width 4>(x)
  X[t, 3] = max<over ctx.lane, width 8>(x)
  X[t, 4] = max<over ctx.lane, width 16>(x)
  X[t, 5] = max<over ctx.lane, width 32>(x)
  N[t, 0] = min<over ctx.lane, width 1>(x)
  N[t, 1] = min<over ctx.lane, width 2>(x)
  N[t, 2] = min<over ctx.lane, width 4>(x)
  N[t, 3] = min<over ctx.lane, width 8>(x)
  N[t, 4] = min<over ctx.lane, width 16>(x)
  N[t, 5] = min<over ctx.lane, width 32>(x)
}
"#;

#[test]
fn width_folds_each_piece_independently() {
    let o = Case::source(WIDTHS, "widths.pho", "widths")
        .gen("A", Gen::Int(-1_000_000, 1_000_000))
        .run([1, 1, 1]);
    let a = o.input("A");
    let (mut s, mut x, mut n) = (o.expect("S"), o.expect("X"), o.expect("N"));
    for t in 0..64 {
        for (j, w) in [1usize, 2, 4, 8, 16, 32].into_iter().enumerate() {
            let piece: Vec<i64> = (t / w * w..t / w * w + w).map(|k| a.i(k)).collect();
            s.set_i(t * 6 + j, piece.iter().sum());
            x.set_i(t * 6 + j, *piece.iter().max().unwrap());
            n.set_i(t * 6 + j, *piece.iter().min().unwrap());
        }
    }
    // The pieces really differ: a fold leaking across pieces would show.
    assert_ne!(s.i(3), s.i(9 * 6 + 3));
    o.check("S", &s);
    o.check("X", &x);
    o.check("N", &n);
}

const CTA: &str = r#"
@launch(256)
kernel cta_total(A: tensor<f32>[G, 256], B: tensor<i32>[G, 256], S: tensor<f32>[G, 256], I: tensor<i32>[G, 256], M: tensor<f32>[G, 256], T: tensor<i32>[G, 256]) {
  let g = ctx.block.x
  let t = ctx.thread
  S[g, t] = sum<over ctx.thread>(A[g, t])
  I[g, t] = sum<over ctx.thread>(B[g, t])
  M[g, t] = max<over ctx.thread>(A[g, t])
  T[g, t] = argmax<over ctx.thread>(B[g, t])
}
"#;

#[test]
fn a_cta_collective_gives_every_thread_the_same_total() {
    let g = 3;
    let o = Case::source(CTA, "cta_total.pho", "cta_total")
        .dims(&[("G", g)])
        .gen("B", Gen::Int(-1000, 1000))
        .run([g as u32, 1, 1]);
    let (a, b) = (o.input("A"), o.input("B"));
    let (mut s, mut i, mut m, mut t) = (o.expect("S"), o.expect("I"), o.expect("M"), o.expect("T"));
    for blk in 0..g as usize {
        let r = blk * 256..blk * 256 + 256;
        let total: f64 = r.clone().map(|k| a.f(k)).sum();
        let itotal: i64 = r.clone().map(|k| b.i(k)).sum();
        let hi = r.clone().map(|k| a.f(k)).fold(f64::MIN, f64::max);
        let bmax = r.clone().map(|k| b.i(k)).max().unwrap();
        let at = r.clone().position(|k| b.i(k) == bmax).unwrap();
        for k in r {
            s.set_f(k, total);
            i.set_i(k, itotal);
            m.set_f(k, hi);
            t.set_i(k, at as i64);
        }
    }
    o.check("S", &s);
    o.check("I", &i);
    o.check("M", &m);
    o.check("T", &t);
    // The same total in every thread: bit for bit, not only within tolerance.
    let got: &Tensor = &o.after["S"];
    for blk in 0..g as usize {
        let first = got.f(blk * 256).to_bits();
        for k in 0..256 {
            assert_eq!(
                got.f(blk * 256 + k).to_bits(),
                first,
                "CTA {blk}: thread {k} holds a different sum"
            );
        }
    }
}

const CONSTANT_OUTSIDE: &str = r#"
@launch(64)
kernel constant_outside(A: tensor<f32>[64], D: tensor<f32>[64], U: tensor<f32>[64], F: tensor<f32>[64], DW: tensor<f32>[64], FW: tensor<f32>[64], UW: tensor<f32>[64]) {
  let t = ctx.thread
  let x = A[t]
  D[t] = shfl<down 40>(x)
  U[t] = shfl<up 33>(x)
  F[t] = shfl<from 40>(x)
  DW[t] = shfl<down 9, width 8>(x)
  FW[t] = shfl<from 9, width 8>(x)
  UW[t] = shfl<up 16, width 16>(x)
}
"#;

#[test]
fn a_constant_source_beyond_the_piece_reads_the_lanes_own_value() {
    // PTX's shfl takes the source lane modulo 32 (b[4:0]); the page's rule
    // wants the lane's own value for every source outside the piece.
    let o =
        Case::source(CONSTANT_OUTSIDE, "constant_outside.pho", "constant_outside").run([1, 1, 1]);
    let a = o.input("A").clone();
    for name in ["D", "U", "F", "DW", "FW", "UW"] {
        o.check(name, &a);
    }
}

/// A CTA collective over `threads` threads (any number of warps, not only
/// a power of two).
fn cta_source(threads: usize) -> String {
    format!(
        "@launch({threads})
kernel cta_n(A: tensor<f32>[G, {threads}], B: tensor<i32>[G, {threads}], S: tensor<f32>[G, {threads}], I: tensor<i32>[G, {threads}], T: tensor<i32>[G, {threads}], L: tensor<i32>[G, {threads}]) {{
  let g = ctx.block.x
  let t = ctx.thread
  S[g, t] = sum<over ctx.thread>(A[g, t])
  I[g, t] = min<over ctx.thread>(B[g, t])
  T[g, t] = argmax<over ctx.thread>(B[g, t])
  L[g, t] = i32(all<over ctx.thread>(B[g, t] > -1000)) + 2 * i32(any<over ctx.thread>(B[g, t] == 7))
}}
"
    )
}

#[test]
fn cta_collectives_over_any_number_of_warps() {
    for threads in [32usize, 96, 160, 224, 1024] {
        let g = 3;
        let src = cta_source(threads);
        let mut c = Case::source(&src, "cta_n.pho", "cta_n")
            .dims(&[("G", g as i64)])
            .gen("B", Gen::Int(-999, 999));
        c.prepare();
        let b = c.tensors.get_mut("B").unwrap();
        // CTA 0: the maximum 5000 tied in the last warp and the first;
        // CTA 1: one -5000 (all false), a 7 (any true); CTA 2: the maximum
        // only in the last thread.
        b.set_i(threads - 1, 5000);
        b.set_i(3, 5000);
        b.set_i(threads + threads / 2, -5000);
        b.set_i(threads + 1, 7);
        b.set_i(2 * threads + threads - 1, 6000);
        for k in 0..3 * threads {
            if b.i(k) == 7 && k != threads + 1 {
                b.set_i(k, 8);
            }
        }
        let o = c.run([g as u32, 1, 1]);
        let (a, b) = (o.input("A"), o.input("B"));
        let (mut s, mut i, mut t, mut l) =
            (o.expect("S"), o.expect("I"), o.expect("T"), o.expect("L"));
        for blk in 0..g {
            let r = blk * threads..(blk + 1) * threads;
            let total: f64 = r.clone().map(|k| a.f(k)).sum();
            let lo = r.clone().map(|k| b.i(k)).min().unwrap();
            let hi = r.clone().map(|k| b.i(k)).max().unwrap();
            let at = r.clone().position(|k| b.i(k) == hi).unwrap();
            let all = r.clone().all(|k| b.i(k) > -1000);
            let any = r.clone().any(|k| b.i(k) == 7);
            for k in r {
                s.set_f(k, total);
                i.set_i(k, lo);
                t.set_i(k, at as i64);
                l.set_i(k, i64::from(all) + 2 * i64::from(any));
            }
        }
        assert_eq!(t.i(0), 3);
        assert_eq!(l.i(threads), 2);
        for (name, want) in [("S", &s), ("I", &i), ("T", &t), ("L", &l)] {
            if let Err(e) = o.compare(name, want) {
                panic!("@launch({threads}): {e}");
            }
        }
    }
}

/// A 2-D tile with a halo that starts before the tensor (row -1, column
/// -H) and ends past it, of element type `ty`: O[r, c] = A[r-1, c-H] +
/// A[r+1, c+H], elements outside the tensor reading as zero.
fn halo_source(ty: &str, h: usize) -> String {
    let (br, bc) = (6, 40);
    format!(
        "@launch(128)
kernel tile_box(A: tensor<{ty}>[N, M], O: tensor<{ty}>[N, M]) {{
  let r0 = ctx.block.y * {br}
  let c0 = ctx.block.x * {bc}
  var t = A[r0 - 1 :+ {}, c0 - {h} :+ {}]
  for e in range(ctx.thread, {}, ctx.threads) {{
    let i = e / {bc}
    let j = e % {bc}
    if r0 + i < N && c0 + j < M {{
      O[r0 + i, c0 + j] = t[i, j] + t[i + 2, j + {}]
    }}
  }}
}}
",
        br + 2,
        bc + 2 * h,
        br * bc,
        2 * h
    )
}

#[test]
fn tiles_with_halos_are_zero_filled_outside_the_tensor() {
    use phobos_conformance::sim_support::cdiv;
    use phobos_core::ast::ScalarTy;
    let (n, m) = (13usize, 70usize);
    for (ty, elem) in [
        ("i8", ScalarTy::I8),
        ("u8", ScalarTy::U8),
        ("i16", ScalarTy::I16),
        ("f16", ScalarTy::F16),
        ("f32", ScalarTy::F32),
        ("i64", ScalarTy::I64),
        ("f64", ScalarTy::F64),
    ] {
        for h in [0usize, 1, 3, 4] {
            let src = halo_source(ty, h);
            let o = Case::source(&src, "tile_box.pho", "tile_box")
                .dims(&[("N", n as i64), ("M", m as i64)])
                .run([cdiv(m, 40) + 1, cdiv(n, 6), 1]);
            let a = o.input("A");
            let get = |r: i64, c: i64| -> (f64, i64) {
                if (0..n as i64).contains(&r) && (0..m as i64).contains(&c) {
                    let k = r as usize * m + c as usize;
                    (a.f(k), a.i(k))
                } else {
                    (0.0, 0)
                }
            };
            let mut want = o.expect("O");
            let hh = h as i64;
            for r in 0..n as i64 {
                for c in 0..m as i64 {
                    let (x, xi) = get(r - 1, c - hh);
                    let (y, yi) = get(r + 1, c + hh);
                    let k = r as usize * m + c as usize;
                    match elem {
                        ScalarTy::F16 => want.set_f(k, half::f16::from_f64(x + y).to_f64()),
                        ScalarTy::F32 | ScalarTy::F64 => want.set_f(k, x + y),
                        _ => want.set_i(k, xi.wrapping_add(yi)),
                    }
                }
            }
            if let Err(e) = o.compare("O", &want) {
                panic!("{ty} tile, halo {h}: {e}");
            }
        }
    }
}

const RECONVERGE: &str = r#"
@launch(128)
kernel reconverge(A: tensor<f32>[128], O: tensor<f32>[128], P: tensor<f32>[128]) {
  let t = ctx.thread
  var v = A[t]
  if ctx.lane % 3 == 0 {
    v = v * 2.0
  } else if ctx.lane % 3 == 1 {
    v = v + 1.0
  }
  for k in range(0, ctx.lane % 5) {
    v += 0.25
  }
  let s = sum<over ctx.lane>(v)
  var acc = 0.0
  for k in range(0, ctx.warp + 1) {
    acc += max<over ctx.lane, width 4>(v) * f32(k + 1)
  }
  O[t] = s
  if ctx.warp != 2 {
    P[t] = acc
  } else {
    P[t] = shfl<from 31>(acc)
  }
}
"#;

#[test]
fn lanes_that_diverge_meet_again_at_a_later_collective() {
    // Lanes split three ways and loop a lane-dependent number of times, then
    // meet at a warp sum; warps loop a warp-dependent number of times over
    // a width-4 max; warp 2 alone runs a shuffle.
    let o = Case::source(RECONVERGE, "reconverge.pho", "reconverge").run([1, 1, 1]);
    let a = o.input("A");
    let v: Vec<f64> = (0..128)
        .map(|t| {
            let lane = t % 32;
            let x = a.f(t);
            let x = match lane % 3 {
                0 => x * 2.0,
                1 => x + 1.0,
                _ => x,
            };
            x + 0.25 * (lane % 5) as f64
        })
        .collect();
    let (mut out, mut p) = (o.expect("O"), o.expect("P"));
    let acc = |t: usize| {
        let m4 = (t / 4 * 4..t / 4 * 4 + 4)
            .map(|k| v[k])
            .fold(f64::MIN, f64::max);
        (0..=t / 32).map(|k| m4 * (k + 1) as f64).sum::<f64>()
    };
    for t in 0..128 {
        let w = t / 32 * 32;
        out.set_f(t, (w..w + 32).map(|k| v[k]).sum());
        p.set_f(t, if t / 32 == 2 { acc(w + 31) } else { acc(t) });
    }
    o.check("O", &out);
    o.check("P", &p);
}

const SCALARS: &str = "@launch(32)
kernel scalars_all(O: tensor<f64>[13], a: bool, b: i8, c: u8, d: i16, e: u16, f: i32, g: u32, h: i64, i: u64, j: f16, k: bf16, l: f32, m: f64) {
  if ctx.thread == 0 {
    O[0] = select(a, 1.0, 0.0)
    O[1] = f64(b)
    O[2] = f64(c)
    O[3] = f64(d)
    O[4] = f64(e)
    O[5] = f64(f)
    O[6] = f64(g)
    O[7] = f64(h)
    O[8] = f64(i)
    O[9] = f64(j)
    O[10] = f64(k)
    O[11] = f64(l)
    O[12] = m
  }
}
";

#[test]
fn scalar_parameters_of_every_type_arrive_whole() {
    use half::{bf16, f16};
    use phobos_conformance::sim_support::Scalar;
    let l = f32::from_bits(0x0001_2345); // a subnormal survives the trip
    let o = Case::source(SCALARS, "scalars_all.pho", "scalars_all")
        .scalar("a", Scalar::Bool(true))
        .scalar("b", Scalar::I8(-128))
        .scalar("c", Scalar::U8(255))
        .scalar("d", Scalar::I16(-32768))
        .scalar("e", Scalar::U16(65535))
        .scalar("f", Scalar::I32(i32::MIN))
        .scalar("g", Scalar::U32(u32::MAX))
        .scalar("h", Scalar::I64(-(1 << 53)))
        .scalar("i", Scalar::U64(1 << 63))
        .scalar("j", Scalar::F16(f16::MAX))
        .scalar("k", Scalar::BF16(bf16::from_f32(-3.0e38)))
        .scalar("l", Scalar::F32(l))
        .scalar("m", Scalar::F64(1e300))
        .run([1, 1, 1]);
    let want = [
        1.0,
        -128.0,
        255.0,
        -32768.0,
        65535.0,
        f64::from(i32::MIN),
        f64::from(u32::MAX),
        -(2f64.powi(53)),
        2f64.powi(63),
        f16::MAX.to_f64(),
        bf16::from_f32(-3.0e38).to_f64(),
        f64::from(l),
        1e300,
    ];
    let got = &o.after["O"];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(
            got.f(i).to_bits(),
            w.to_bits(),
            "O[{i}]: got {}, want {w}",
            got.f(i)
        );
    }
}

use phobos_conformance::kernels::REUSE;

#[test]
fn shared_bytes_reused_between_tiles_and_collectives() {
    let r = 4;
    // Several CTAs run the same work: each must see only its own shared
    // memory.
    let o = Case::source(REUSE, "reuse.pho", "reuse")
        .dims(&[("R", r as i64)])
        .run([3, 1, 1]);
    let (a, b) = (o.input("A"), o.input("B"));
    let (mut y, mut z) = (o.expect("y"), o.expect("z"));
    for i in 0..r {
        let s: f64 = (0..128).map(|k| a.f(i * 128 + k)).sum();
        for t in 0..128 {
            y.set_f(i * 128 + t, a.f(i * 128 + 127 - t) + s);
        }
    }
    let m = (0..128)
        .map(|t| b.f((t * 2 + 1) % 256))
        .fold(f64::MIN, f64::max);
    let s2: f64 = (0..128).map(|k| a.f(k)).sum();
    for t in 0..128 {
        z.set_f(t, a.f(127 - t) + m + s2);
    }
    o.check("y", &y);
    o.check("z", &z);
}

/// Narrow integer arithmetic wraps to the type after every operation.
fn narrow_source(ty: &str) -> String {
    format!(
        "@launch(32)
kernel narrow(A: tensor<{ty}>[N], B: tensor<{ty}>[N], O: tensor<{ty}>[N, 8]) {{
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {{
    let a = A[i]
    let b = B[i]
    O[i, 0] = (a * b) >> {ty}(2)
    O[i, 1] = (a + b) / {ty}(3)
    O[i, 2] = (a * b) % {ty}(7)
    O[i, 3] = max(a * b, a + b)
    O[i, 4] = select(a * b < a - b, {ty}(1), {ty}(0))
    O[i, 5] = (a << {ty}(3)) >> {ty}(3)
    O[i, 6] = (a - b) / (b | {ty}(1))
    O[i, 7] = (a ^ b) * {ty}(3) - {ty}(5)
  }}
}}
"
    )
}

macro_rules! narrow_ref {
    ($t:ty, $a:expr, $b:expr) => {{
        let (a, b) = ($a as $t, $b as $t);
        [
            a.wrapping_mul(b) >> 2,
            a.wrapping_add(b).wrapping_div(3),
            a.wrapping_mul(b).wrapping_rem(7),
            a.wrapping_mul(b).max(a.wrapping_add(b)),
            <$t>::from(a.wrapping_mul(b) < a.wrapping_sub(b)),
            a.wrapping_shl(3) >> 3,
            a.wrapping_sub(b).wrapping_div(b | 1),
            (a ^ b).wrapping_mul(3).wrapping_sub(5),
        ]
        .map(|v| v as i64)
    }};
}

#[test]
fn narrow_integers_wrap_after_every_operation() {
    let n = 200;
    for ty in ["i8", "u8", "i16", "u16"] {
        let o = Case::source(&narrow_source(ty), "narrow.pho", "narrow")
            .dims(&[("N", n as i64)])
            .run([7, 1, 1]);
        let (a, b) = (o.input("A"), o.input("B"));
        let mut want = o.expect("O");
        for i in 0..n {
            let (x, y) = (a.i(i), b.i(i));
            let row = match ty {
                "i8" => narrow_ref!(i8, x, y),
                "u8" => narrow_ref!(u8, x, y),
                "i16" => narrow_ref!(i16, x, y),
                _ => narrow_ref!(u16, x, y),
            };
            for (j, v) in row.iter().enumerate() {
                want.set_i(i * 8 + j, *v);
            }
        }
        if let Err(e) = o.compare("O", &want) {
            panic!("{ty}: {e}");
        }
    }
}

/// Lane and CTA folds of every element type: unsigned values with the high
/// bit set, 64-bit values (two words per shuffle), 8- and 16-bit values.
fn typed_folds_source(ty: &str) -> String {
    format!(
        "@launch(64)
kernel typed(A: tensor<{ty}>[64], X: tensor<{ty}>[64], N: tensor<{ty}>[64], W: tensor<i32>[64], P: tensor<i32>[64], T: tensor<i32>[64], C: tensor<{ty}>[64]) {{
  let t = ctx.thread
  let a = A[t]
  X[t] = max<over ctx.lane>(a)
  N[t] = min<over ctx.lane, width 8>(a)
  W[t] = argmax<over ctx.lane>(a)
  P[t] = argmax<over ctx.lane, width 4>(a)
  T[t] = argmax<over ctx.thread>(a)
  C[t] = max<over ctx.thread>(a)
}}
"
    )
}

#[test]
fn folds_of_every_element_type() {
    for (ty, float) in [
        ("i8", false),
        ("u8", false),
        ("i16", false),
        ("u16", false),
        ("i32", false),
        ("u32", false),
        ("i64", false),
        ("u64", false),
        ("f16", true),
        ("bf16", true),
        ("f32", true),
        ("f64", true),
    ] {
        let mut c = Case::source(&typed_folds_source(ty), "typed.pho", "typed");
        c.prepare();
        // Ties: a few repeated values in every warp.
        let a = c.tensors.get_mut("A").unwrap();
        for t in (0..64).step_by(5) {
            let v = a.bytes[(t + 2) * a.bytes.len() / 64..(t + 3) * a.bytes.len() / 64].to_vec();
            let w = a.bytes.len() / 64;
            a.bytes[t * w..(t + 1) * w].copy_from_slice(&v);
        }
        let o = c.run([1, 1, 1]);
        let a = o.input("A");
        let ikey = |k: usize| -> i128 {
            if ty == "u64" {
                i128::from(a.i(k) as u64)
            } else {
                i128::from(a.i(k))
            }
        };
        let better = |x: usize, y: usize| {
            if float {
                a.f(x) > a.f(y)
            } else {
                ikey(x) > ikey(y)
            }
        };
        let arg = |r: std::ops::Range<usize>| {
            let s = r.start;
            r.fold(s, |m, k| if better(k, m) { k } else { m })
        };
        let (mut x, mut n, mut w, mut p, mut th, mut cm) = (
            o.expect("X"),
            o.expect("N"),
            o.expect("W"),
            o.expect("P"),
            o.expect("T"),
            o.expect("C"),
        );
        let copy = |dst: &mut phobos_conformance::sim_support::Tensor, t: usize, k: usize| {
            let wd = dst.bytes.len() / 64;
            dst.bytes[t * wd..(t + 1) * wd].copy_from_slice(&a.bytes[k * wd..(k + 1) * wd]);
        };
        let all = arg(0..64);
        for t in 0..64 {
            let wb = t / 32 * 32;
            let best = arg(wb..wb + 32);
            copy(&mut x, t, best);
            let nb = t / 8 * 8;
            let lo = (nb..nb + 8).fold(nb, |m, k| if better(m, k) { k } else { m });
            copy(&mut n, t, lo);
            w.set_i(t, (best - wb) as i64);
            let pb = t / 4 * 4;
            p.set_i(t, (arg(pb..pb + 4) - pb) as i64);
            th.set_i(t, all as i64);
            copy(&mut cm, t, all);
        }
        for (name, want) in [
            ("X", &x),
            ("N", &n),
            ("W", &w),
            ("P", &p),
            ("T", &th),
            ("C", &cm),
        ] {
            if let Err(e) = o.compare(name, want) {
                panic!("{ty}: {e}");
            }
        }
    }
}

const GUARDED: &str = r#"
@launch(128)
kernel guarded(A: tensor<f32>[N, 32], O: tensor<i32>[4]) {
  let row = ctx.warp
  let pos = row < N && sum<over ctx.lane>(A[row, ctx.lane]) > 0.0
  if ctx.lane == 0 {
    O[row] = i32(pos)
  }
}
"#;

#[test]
fn the_right_side_of_and_with_a_lane_collective_runs_only_where_the_left_holds() {
    // Row 3 is past N = 3: evaluating the collective there would read A
    // out of bounds (memcheck), as the backend did before it branched.
    let c = Case::source(GUARDED, "guarded.pho", "guarded").dims(&[("N", 3)]);
    let o = c.run([1, 1, 1]);
    let a = o.input("A");
    let mut want = o.expect("O");
    for row in 0..4 {
        let pos = row < 3 && (0..32).map(|l| a.f(row * 32 + l)).sum::<f64>() > 0.0;
        want.set_i(row, i64::from(pos));
    }
    o.check("O", &want);
}

/// `cdiv(a, b)` is the true ceiling for every non-negative `a` and positive
/// `b` of its type, as `phobos_core::consteval::cdiv` (the `@grid`
/// evaluator) computes it. The compiled form was `(a + b - 1) / b` in the
/// type's width, which wrapped near the top: `cdiv(i32::MAX, 2)` gave
/// -1073741824.
#[test]
fn cdiv_is_the_ceiling_up_to_the_top_of_every_width() {
    use phobos_core::ast::ScalarTy;
    use phobos_core::consteval;
    for (ty, elem, top) in [
        ("i32", ScalarTy::I32, i32::MAX as i128),
        ("u32", ScalarTy::U32, u32::MAX as i128),
        ("i64", ScalarTy::I64, i64::MAX as i128),
        ("u64", ScalarTy::U64, u64::MAX as i128),
    ] {
        let src = format!(
            "@launch(32)
kernel cd(A: tensor<{ty}>[32], B: tensor<{ty}>[32], O: tensor<{ty}>[32]) {{
  let t = ctx.thread
  O[t] = cdiv(A[t], B[t])
}}
"
        );
        let pairs: Vec<(i128, i128)> = [top, top - 1, top / 2, 7, 0]
            .iter()
            .flat_map(|&a| [(a, 1), (a, 2), (a, 3), (a, top), (a, 16)])
            .chain([(1, 2), (9, 4), (top, top - 1)])
            .take(32)
            .collect();
        let t = |v: Vec<i128>| {
            let mut x = Tensor::zeros(elem, &[32]);
            for (k, v) in v.into_iter().enumerate() {
                x.set_i(k, v as i64);
            }
            x
        };
        let mut a = pairs.iter().map(|p| p.0).collect::<Vec<_>>();
        let mut b = pairs.iter().map(|p| p.1).collect::<Vec<_>>();
        a.resize(32, 5);
        b.resize(32, 2);
        let o = Case::source(&src, "cdiv.pho", "cd")
            .init("A", t(a.clone()))
            .init("B", t(b.clone()))
            .run([1, 1, 1]);
        let mut want = o.expect("O");
        for k in 0..32 {
            let v = consteval::cdiv(elem, a[k], b[k]).expect("in the domain");
            want.set_i(k, v as i64);
        }
        if let Err(e) = o.compare("O", &want) {
            panic!("{ty}: {e}");
        }
    }
}
