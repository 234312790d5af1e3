//! Accumulator tiles and `dot` (docs/language.md, "Tensor cores"): what the
//! checker accepts, each refusal with its code as a snapshot of the
//! rendered diagnostic (P0450-P0460, P0702, P0703, and the backend's
//! P0811; most of them in `kernels/dot_refused.txt`), and the instructions
//! the backend makes of them.

mod common;

use phobos_core::render::render;
use phobos_core::{compile, CompileOptions};

/// A GEMM kernel around `body`, with 128 threads (4 warps).
fn k(body: &str) -> String {
    format!(
        "@launch(128)
kernel k(A: tensor<f16>[M, K], W: tensor<f16>[N, K], B: tensor<f16>[K, N], H: tensor<bf16>[M, K], F: tensor<f32>[M, K], C: tensor<f32>[M, N]) {{
  let r = ctx.block.x * 64
  let c = ctx.block.y * 64
{body}
}}
"
    )
}

/// `src` is refused with exactly one error, `code` with `message`, at
/// `line`; the rendered diagnostic is a snapshot.
fn refused(name: &str, src: &str, code: &str, message: &str, line: u32) {
    insta::assert_snapshot!(name, common::refusal(name, src, code, message, line));
}

fn ptx(src: &str, arch: u32) -> String {
    common::ptx_of(src, arch).concat()
}

/// Each case of `kernels/dot_refused.txt`, its lines in the GEMM kernel,
/// is refused at its marked line; each rendered diagnostic is a snapshot.
#[test]
fn every_refusal_of_the_fixture_is_refused_at_its_marked_line() {
    let cases = common::cases(include_str!("kernels/dot_refused.txt"));
    assert!(!cases.is_empty(), "the fixture has no case");
    for case in cases {
        let src = k(case.text.trim_end_matches('\n'));
        let line = case.line_in(&src);
        refused(&case.name, &src, &case.code, &case.message, line);
    }
}

const GEMM: &str = "  var acc = zeros<f32>[64, 64]
  for k in range(0, K, 32) {
    var a = A[r :+ 64, k :+ 32]
    var w = W[c :+ 64, k :+ 32]
    acc += dot(a, trans(w))
  }
  C[r :+ 64, c :+ 64] = acc";

#[test]
fn a_gemm_compiles_to_ldmatrix_and_mma() {
    let src = k(GEMM);
    let p = ptx(&src, 80);
    // 2 x 2 warps of 32 x 32: per 16-deep step, 2 A blocks (x4) and 4 B
    // blocks, two per x4, 8 fragments; K = 32 is two steps.
    common::assert_count(&p, "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 4 + 4);
    common::assert_count(&p, "ldmatrix.sync.aligned.m8n8.x2.shared.b16", 0);
    common::assert_count(&p, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 16);
    assert!(
        !p.contains(".trans"),
        "trans(w) reads w's rows as B's columns: {p}"
    );
    // The operand rows are padded by 16 bytes: 64 x 40 f16 = 5120 bytes each.
    assert!(p.contains(".shared .align 16 .b8 k$smem[10240]"), "{p}");
    // A barrier after the copies, and one before the next trip's copies.
    assert!(p.matches("bar.sync 0;").count() >= 2, "{p}");
    // Each lane stores its 32 elements, masked.
    common::assert_count(&p, "st.global.f32", 32);
    // sm_75: two m16n8k8 per step and fragment, PTX ISA 6.5.
    let p75 = ptx(&src, 75);
    common::assert_count(&p75, "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", 32);
    assert!(p75.contains(".version 6.5"), "{p75}");
}

#[test]
fn a_row_major_b_is_read_with_ldmatrix_trans() {
    let src = k("  var acc = zeros<f32>[64, 64]
  var a = A[r :+ 64, 0 :+ 16]
  var b = B[0 :+ 16, c :+ 64]
  acc += dot(a, b)
  C[r :+ 64, c :+ 64] = acc");
    let p = ptx(&src, 80);
    // 4 warps of 32 x 32 (per warp 4 B blocks of 8 columns): two per x4.
    common::assert_count(&p, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", 2);
    common::assert_count(&p, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", 0);
}

#[test]
fn bf16_needs_sm_80() {
    let src = k("  var acc = zeros<f32>[64, 64]
  var a = H[r :+ 64, 0 :+ 16]
  var b = H[c :+ 64, 0 :+ 16]
  acc += dot(a, trans(b))
  C[r :+ 64, c :+ 64] = acc");
    assert!(ptx(&src, 80).contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
    let (_, diags) = compile(&src, "k.pho", &CompileOptions::for_arch(75));
    let text = render(&diags, "bf16_on_sm_75.pho", &src, false);
    assert_eq!(diags.len(), 1, "{text}");
    assert_eq!(diags[0].code, "P0811", "{text}");
    insta::assert_snapshot!("bf16_on_sm_75", format!("{src}\n---\n{text}"));
}

#[test]
fn i8_products_accumulate_in_i32_with_m16n8k32() {
    let body = |b: &str| {
        format!(
            "  var acc = zeros<i32>[64, 64]
  var a = Q[r :+ 64, 0 :+ 32]
  var w = Q[c :+ 64, 0 :+ 32]
  acc += dot(a, {b})
  D[r :+ 64, c :+ 64] = acc"
        )
    };
    let with_i8 = |s: String| {
        s.replace(
            "C: tensor<f32>[M, N])",
            "C: tensor<f32>[M, N], Q: tensor<i8>[M, K], D: tensor<i32>[M, N])",
        )
    };
    let src = with_i8(k(&body("trans(w)")));
    let p = ptx(&src, 80);
    common::assert_count(&p, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", 8);
    common::assert_count(&p, "st.global.u32", 32);
    // 16 bytes of padding are 16 i8 elements: 64 x 48 bytes per tile.
    assert!(p.contains(".shared .align 16 .b8 k$smem[6144]"), "{p}");
    let (_, diags) = compile(&src, "k.pho", &CompileOptions::for_arch(75));
    assert_eq!(diags.iter().map(|d| d.code).collect::<Vec<_>>(), ["P0811"]);
    // "an i8", as read aloud (issue 26).
    let text = render(&diags, "k.pho", &src, false);
    assert!(text.contains("an i8 x i8 product"), "{text}");
    // No `ldmatrix .trans` for bytes: a [K, N] i8 operand is refused.
    refused(
        "i8_dot_without_trans",
        &with_i8(k(&body("w"))),
        "P0456",
        "a `dot` of i8 tiles takes its second operand as `trans(w)`",
        8,
    );
}

const GEMM_F16ACC: &str = "  var acc = zeros<f16>[64, 64]
  for k in range(0, K, 32) {
    var a = A[r :+ 64, k :+ 32]
    var w = W[c :+ 64, k :+ 32]
    acc += dot(a, trans(w))
  }
  acc = max(acc, f16(0.0))
  C[r :+ 64, c :+ 64] = f32(acc)";

/// An f16 accumulator: two f16 to a register (16 per lane for 64 x 64
/// over 4 warps), `m16n8k16 .f16.f16.f16.f16` on sm_80 and two
/// `m16n8k8` on sm_75, the epilogue on each half, the store converted.
#[test]
fn an_f16_accumulator_packs_two_elements_per_register() {
    let src = k(GEMM_F16ACC);
    let p80 = ptx(&src, 80);
    common::assert_count(
        &p80,
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
        16,
    );
    let p75 = ptx(&src, 75);
    common::assert_count(&p75, "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", 32);
    // 32 elements per lane: each epilogue result packed back, each store
    // converted to f32.
    assert!(p80.matches("cvt.f32.f16").count() >= 32, "{p80}");
    common::assert_count(&p80, "st.global.f32", 32);
    assert!(!p80.contains(".local"), "{p80}");
}

#[test]
fn an_epilogue_is_elementwise_on_the_registers() {
    // Scalars the same in every thread, a row broadcast, a whole tile, a
    // compound assignment and a `fn`.
    let src = format!(
        "fn relu(x) = max(x, 0.0)\n{}",
        k("  var acc = zeros<f32>[64, 64]
  var a = A[r :+ 64, 0 :+ 16]
  var w = W[c :+ 64, 0 :+ 16]
  acc += dot(a, trans(w))
  let bias = F[0 :+ 1, c :+ 64]
  let whole = F[r :+ 64, c :+ 64]
  acc = relu(acc * 0.5 + bias) - whole
  acc *= 2.0
  C[r :+ 64, c :+ 64] = acc")
    );
    let p = ptx(&src, 80);
    // 32 elements per lane, each with one bias and one tile load, twice
    // multiplied (once in each epilogue).
    common::assert_count(&p, "max.f32", 32);
    common::assert_count(&p, "ld.shared.f32", 64);
    common::assert_count(&p, "mul.f32", 64);
}

#[test]
fn f32_operands_are_tf32_products() {
    // f32 operands are tf32 products (m16n8k8, sm_80), rounded with
    // cvt.rna as they leave ldmatrix.
    let tf32 = k("  var acc = zeros<f32>[64, 64]
  var a = F[r :+ 64, 0 :+ 16]
  var b = F[c :+ 64, 0 :+ 16]
  acc += dot(a, trans(b))
  C[r :+ 64, c :+ 64] = acc");
    let p = ptx(&tf32, 80);
    common::assert_count(&p, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 16);
    // Per step, 2 A blocks of 4 registers and 4 B blocks of 2.
    common::assert_count(&p, "cvt.rna.tf32.f32", 2 * (2 * 4 + 4 * 2));
}

#[test]
fn an_accumulator_is_stored_into_a_box_of_a_shared_tile() {
    // Into the box [8 :+ 64, 0 :+ 64] of a padded scratch tile, and as
    // f16 into an f16 tile: the lanes' stores at constant offsets from one
    // address, between two barriers.
    let src = k("  var acc = zeros<f32>[64, 64]
  var s = shared<f32>[72, 66]
  s[8 :+ 64, 0 :+ 64] = acc
  var h = shared<f16>[64, 64]
  h[0 :+ 64, 0 :+ 64] = f16(acc)
  C[r + ctx.thread, c] = s[ctx.thread, 3] + f32(h[ctx.thread, 5])");
    let p = ptx(&src, 80);
    // 32 elements per lane, twice.
    common::assert_count(&p, "st.shared.f32", 32);
    common::assert_count(&p, "st.shared.b16", 32);
    common::assert_count(&p, "cvt.rn.f16.f32", 32);
    assert!(p.contains("bar.sync 0;"), "{p}");
}

/// An epilogue reads a scratch tile written element by element (one
/// thread per row writes a per-row value): the element's place decides
/// which value it reads, not the lane, so it is not P0459.
#[test]
fn an_epilogue_reads_a_tile_written_by_element_stores() {
    let src = k("  var acc = zeros<f32>[64, 64]
  var row_max = shared<f32>[64, 1]
  if ctx.thread < 64 {
    row_max[ctx.thread, 0] = F[r + ctx.thread, 0]
  }
  acc = acc - row_max
  C[r :+ 64, c :+ 64] = acc");
    let p = ptx(&src, 80);
    assert!(p.contains("bar.sync 0;"), "{p}");
}
