//! Tile copies take one of two paths (docs/performance.md): a tile wholly
//! inside its tensor moves without masks, every thread's chunk addressed
//! from the tile's first element and an offset computed once at the
//! kernel's entry; a tile that crosses an edge (or starts before 0) moves
//! chunk by chunk with bounds checks and zero fill. These kernels put
//! interior tiles, tiles past the far edges and tiles before the near
//! edges in one launch, for plain copies, stores and `cp.async` rings, in
//! vectors and element by element, with thread counts that keep a thread
//! on one column (a chunk step of whole rows) and that do not, and check
//! every element against the host.

use phobos_conformance::sim_support::{Case, Outcome};
use phobos_core::ast::ScalarTy;

/// `B[i, j] = A[i, j] + 1` inside, through a shared tile whose origin is
/// shifted by (-3, -4): the first row and column of CTAs start before 0.
fn shifted(threads: u32, elem: &str, aligned: &str) -> String {
    let one = if elem.starts_with('f') { "1.0" } else { "1" };
    format!(
        r#"
@launch({threads})
@grid(cdiv(M + 3, 16), cdiv(N + 4, 32))
{aligned}
kernel shifted(A: tensor<{elem}>[M, N], B: tensor<{elem}>[M, N]) {{
  let r0 = ctx.block.x * 16 - 3
  let c0 = ctx.block.y * 32 - 4
  var t = A[r0 :+ 16, c0 :+ 32]
  var u = A[r0 :+ 16, c0 :+ 32]
  for e in range(ctx.thread, 512, ctx.threads) {{
    u[e / 32, e % 32] = t[e / 32, e % 32] + {one}
  }}
  B[r0 :+ 16, c0 :+ 32] = u
}}
"#
    )
}

fn check_shifted(o: &Outcome, m: usize, n: usize) {
    let a = o.input("A");
    if a.elem == ScalarTy::U8 {
        o.check_i("B", m * n, |i| (a.i(i) + 1) % 256);
    } else {
        o.check_f("B", m * n, |i| a.f(i) + 1.0);
    }
}

fn run_shifted(threads: u32, elem: &str, aligned: &str, m: usize, n: usize) {
    let src = shifted(threads, elem, aligned);
    // The copy has both paths: the interior one without a zero fill.
    let (kernels, diags) = phobos_core::compile(
        &src,
        "shifted.pho",
        &phobos_core::CompileOptions::for_arch(80),
    );
    assert!(diags.is_empty(), "{diags:?}");
    assert!(kernels[0].ptx.contains("_tile_edge:"), "{}", kernels[0].ptx);
    let grid = [(m + 3).div_ceil(16) as u32, (n + 4).div_ceil(32) as u32, 1];
    let o = Case::source(&src, "shifted.pho", "shifted")
        .dims(&[("M", m as i64), ("N", n as i64)])
        .run(grid);
    check_shifted(&o, m, n);
}

#[test]
fn vector_chunks_whole_rows_per_step() {
    // f32, @aligned: 4-element chunks, 8 per row; 128 threads = 16 rows a
    // step, 1 chunk each.
    run_shifted(128, "f32", "@aligned(N = 4)", 70, 100);
    // 64 threads: 2 chunks each, a step of 8 rows.
    run_shifted(64, "f32", "@aligned(N = 4)", 70, 100);
    // 32 threads: 4 chunks each.
    run_shifted(32, "f32", "@aligned(N = 4)", 61, 132);
}

#[test]
fn element_chunks_and_steps_that_are_not_whole_rows() {
    // f16 without @aligned: one element a chunk, 32 per row; 96 threads
    // do not divide a row's chunks evenly into steps (6 chunks each, no
    // common step).
    run_shifted(96, "f16", "", 45, 77);
    // u8, 128 threads: 4 chunks each, a step of 4 rows.
    run_shifted(128, "u8", "", 40, 70);
    // 32 threads: 16 chunks each (a loop over chunks).
    run_shifted(32, "f16", "", 35, 68);
}

/// A 3-D tile: no common chunk step, so each chunk is addressed alone.
const RANK3: &str = r#"
@launch(64)
@grid(cdiv(D0 + 1, 2), cdiv(D1, 4))
@aligned(D2 = 4)
kernel rank3(A: tensor<f32>[D0, D1, D2], B: tensor<f32>[D0, D1, D2]) {
  let p = ctx.block.x * 2 - 1
  let q = ctx.block.y * 4
  for z in range(0, D2, 16) {
    var t = A[p :+ 2, q :+ 4, z :+ 16]
    B[p :+ 2, q :+ 4, z :+ 16] = t
  }
}
"#;

#[test]
fn rank_three_tiles_inside_and_across_every_edge() {
    let (d0, d1, d2) = (5usize, 10usize, 36usize);
    let o = Case::source(RANK3, "rank3.pho", "rank3")
        .dims(&[("D0", d0 as i64), ("D1", d1 as i64), ("D2", d2 as i64)])
        .run([(d0 + 1).div_ceil(2) as u32, d1.div_ceil(4) as u32, 1]);
    let a = o.input("A");
    o.check_f("B", d0 * d1 * d2, |i| a.f(i));
}

/// The GPU bundle's GEMM (a 3-stage `cp.async` ring, 16-byte chunks, two
/// per thread a tile) at a size with interior tiles, tiles past the M and
/// N edges, and a last K trip past K's edge, against an f64 product: on
/// sm_80 (`mma.sync`) and on sm_90a (`wgmma` from swizzled tiles, issue 32).
#[test]
fn the_bundles_gemm_on_interior_and_edge_tiles() {
    bundle_gemm(80);
}

#[test]
fn the_bundles_gemm_on_wgmma_on_interior_and_edge_tiles() {
    bundle_gemm(phobos_core::arch::SM_90A);
}

fn bundle_gemm(arch: u32) {
    let src = include_str!("../../crates/phobos-gpucheck/kernels/bf16_gemm.pho");
    let (m, n, k) = (300usize, 264usize, 200usize);
    let case = Case::source_for(src, "bf16_gemm.pho", "bf16_gemm", arch);
    assert_eq!(
        case.kernel.ptx.contains("wgmma.mma_async"),
        arch == phobos_core::arch::SM_90A
    );
    let o = case
        .dims(&[("M", m as i64), ("N", n as i64), ("K", k as i64)])
        .run([m.div_ceil(128) as u32, n.div_ceil(128) as u32, 1]);
    let (a, b) = (o.input("A"), o.input("B"));
    let c = o.after["C"].clone();
    let mut worst = 0f64;
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k).map(|l| a.f(i * k + l) * b.f(l * n + j)).sum();
            let got = c.f(i * n + j);
            // bf16 products are exact in f32; the f32 sum's rounding is at
            // most K ulps of the sum of magnitudes.
            let mag: f64 = (0..k)
                .map(|l| (a.f(i * k + l) * b.f(l * n + j)).abs())
                .sum();
            let err = (got - want).abs();
            assert!(
                err <= mag * k as f64 * f64::from(f32::EPSILON) + 1e-30,
                "C[{i}, {j}] = {got}, want {want}"
            );
            worst = worst.max(err);
        }
    }
    assert!(worst.is_finite());
}

/// A tile start read from a var written twice is not computed at the entry
/// (only vars assigned once, at the top level, are): the second copy must
/// see the second value.
const TWICE: &str = r#"
@launch(64)
@grid(cdiv(N + 7, 64))
kernel twice(A: tensor<f32>[N], B: tensor<f32>[N]) {
  var s = ctx.block.x * 64 - 7
  var t = A[s :+ 32]
  s = s + 32
  var u = A[s :+ 32]
  for e in range(ctx.thread, 32, ctx.threads) {
    if s - 32 + e >= 0 && s - 32 + e < N {
      B[s - 32 + e] = t[e]
    }
    if s + e >= 0 && s + e < N {
      B[s + e] = u[e]
    }
  }
}
"#;

#[test]
fn a_start_from_a_var_written_twice_is_read_where_it_is_used() {
    for n in [100usize, 64, 250] {
        let o = Case::source(TWICE, "twice.pho", "twice")
            .dims(&[("N", n as i64)])
            .run([(n + 7).div_ceil(64) as u32, 1, 1]);
        let a = o.input("A");
        o.check_f("B", n, |i| a.f(i));
    }
}

/// A tile start at the end of a long chain of `let`s: the entry's
/// computation looks a bounded depth through vars (no deep recursion in
/// the compiler), and the copy is still right.
#[test]
fn a_start_at_the_end_of_a_long_let_chain() {
    let mut body = String::from("  let s0 = ctx.block.x * 32 - 5\n");
    for i in 1..20000 {
        body.push_str(&format!("  let s{i} = s{} + 1\n", i - 1));
    }
    let src = format!(
        "@launch(32)\n@grid(cdiv(N + 5, 32))\nkernel chain(A: tensor<f32>[N], B: tensor<f32>[N]) {{\n{body}  let s = s19999 - 19999\n  var t = A[s :+ 32]\n  if s + ctx.thread >= 0 && s + ctx.thread < N {{\n    B[s + ctx.thread] = t[ctx.thread]\n  }}\n}}\n"
    );
    let n = 90usize;
    let o = Case::source(&src, "chain.pho", "chain")
        .dims(&[("N", n as i64)])
        .run([(n + 5).div_ceil(32) as u32, 1, 1]);
    let a = o.input("A");
    o.check_f("B", n, |i| a.f(i));
}
