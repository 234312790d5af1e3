//! Accumulator tiles and `dot` (docs/language.md, "Tensor cores"): what the
//! checker accepts, each refusal with its code as a snapshot of the
//! rendered diagnostic (P0450-P0458, P0702, P0703, and the backend's
//! P0811), and the instructions the backend makes of them.

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
    // blocks (x2), 8 fragments; K = 32 is two steps.
    assert_eq!(
        p.matches("ldmatrix.sync.aligned.m8n8.x4.shared.b16")
            .count(),
        4,
        "{p}"
    );
    assert_eq!(
        p.matches("ldmatrix.sync.aligned.m8n8.x2.shared.b16")
            .count(),
        8,
        "{p}"
    );
    assert_eq!(
        p.matches("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
            .count(),
        16,
        "{p}"
    );
    assert!(
        !p.contains(".trans"),
        "trans(w) reads w's rows as B's columns: {p}"
    );
    // The operand rows are padded by 16 bytes: 64 x 40 f16 = 5120 bytes each.
    assert!(p.contains(".shared .align 16 .b8 k_smem[10240]"), "{p}");
    // A barrier after the copies, and one before the next trip's copies.
    assert!(p.matches("bar.sync 0;").count() >= 2, "{p}");
    // Each lane stores its 32 elements, masked.
    assert_eq!(p.matches("st.global.f32").count(), 32, "{p}");
    // sm_75: two m16n8k8 per step and fragment, PTX ISA 6.5.
    let p75 = ptx(&src, 75);
    assert_eq!(
        p75.matches("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32")
            .count(),
        32
    );
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
    assert_eq!(
        p.matches("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16")
            .count(),
        4,
        "{p}"
    );
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
    assert_eq!(
        p.matches("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32")
            .count(),
        8,
        "{p}"
    );
    assert_eq!(p.matches("st.global.u32").count(), 32, "{p}");
    // 16 bytes of padding are 16 i8 elements: 64 x 48 bytes per tile.
    assert!(p.contains(".shared .align 16 .b8 k_smem[6144]"), "{p}");
    let (_, diags) = compile(&src, "k.pho", &CompileOptions::for_arch(75));
    assert_eq!(diags.iter().map(|d| d.code).collect::<Vec<_>>(), ["P0811"]);
    // No `ldmatrix .trans` for bytes: a [K, N] i8 operand is refused.
    refused(
        "i8_dot_without_trans",
        &with_i8(k(&body("w"))),
        "P0456",
        "a `dot` of i8 tiles takes its second operand as `trans(w)`",
        8,
    );
}

#[test]
fn an_accumulator_is_declared_with_var() {
    refused(
        "acc_with_let",
        &k("  let acc = zeros<f32>[64, 64]"),
        "P0450",
        "an accumulator tile is declared with `var`",
        5,
    );
}

#[test]
fn an_accumulator_has_two_constant_extents() {
    refused(
        "acc_runtime_extent",
        &k("  var acc = zeros<f32>[M, 64]"),
        "P0450",
        "an accumulator tile's extents are constants from 1 to 65536",
        5,
    );
    refused(
        "acc_rank_three",
        &k("  var acc = zeros<f32>[16, 16, 16]"),
        "P0450",
        "an accumulator tile has two extents, rows and columns; found 3",
        5,
    );
    refused(
        "zeros_in_an_expression",
        &k("  let x = zeros<f32>[16, 8] + 1.0"),
        "P0450",
        "`zeros<...>[...]` declares an accumulator tile, and is not a value",
        5,
    );
}

#[test]
fn an_accumulator_holds_f32_f16_or_i32() {
    refused(
        "acc_of_bf16",
        &k("  var acc = zeros<bf16>[64, 64]"),
        "P0451",
        "an accumulator tile of bf16 is not supported",
        5,
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
    assert_eq!(
        p80.matches("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16")
            .count(),
        16,
        "{p80}"
    );
    let p75 = ptx(&src, 75);
    assert_eq!(
        p75.matches("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16")
            .count(),
        32,
        "{p75}"
    );
    // 32 elements per lane: each epilogue result packed back, each store
    // converted to f32.
    assert!(p80.matches("cvt.f32.f16").count() >= 32, "{p80}");
    assert_eq!(p80.matches("st.global.f32").count(), 32, "{p80}");
    assert!(!p80.contains(".local"), "{p80}");
    refused(
        "f16_acc_of_bf16",
        &k("  var acc = zeros<f16>[64, 64]
  var a = H[r :+ 64, 0 :+ 16]
  acc += dot(a, trans(a))"),
        "P0456",
        "no tensor-core product of bf16 x bf16 into f16",
        7,
    );
}

#[test]
fn shapes_must_tile_the_instruction() {
    refused(
        "acc_rows_not_16",
        &k("  var acc = zeros<f32>[24, 64]"),
        "P0452",
        "an accumulator of [24, 64] does not tile the tensor-core instruction",
        5,
    );
    // 16 x 8 cannot go to four warps.
    refused(
        "acc_too_small_for_the_warps",
        &k("  var acc = zeros<f32>[16, 8]"),
        "P0452",
        "an accumulator of [16, 8] cannot be split over the CTA's 4 warps",
        5,
    );
    refused(
        "dot_k_not_16",
        &k("  var acc = zeros<f32>[64, 64]
  var a = A[r :+ 64, 0 :+ 24]
  var w = W[c :+ 64, 0 :+ 24]
  acc += dot(a, trans(w))"),
        "P0452",
        "a `dot` over K = 24 does not tile the tensor-core instruction",
        8,
    );
}

#[test]
fn an_accumulator_over_the_register_budget_is_refused() {
    // 256 x 128 over 4 warps: 128 x 64 per warp, 256 registers per lane.
    refused(
        "acc_over_budget",
        &k("  var acc = zeros<f32>[256, 128]"),
        "P0453",
        "an accumulator of [256, 128] needs 256 registers per thread over 4 warps, above the budget of 128",
        5,
    );
}

#[test]
fn dot_only_adds_to_an_accumulator() {
    refused(
        "dot_assigned",
        &k("  var acc = zeros<f32>[64, 64]
  var a = A[r :+ 64, 0 :+ 16]
  var w = W[c :+ 64, 0 :+ 16]
  acc = dot(a, trans(w))"),
        "P0454",
        "`dot` adds to the accumulator tile `acc`: write `acc += dot(a, b)`",
        8,
    );
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
    assert_eq!(p.matches("max.f32").count(), 32, "{p}");
    assert_eq!(p.matches("ld.shared.f32").count(), 64, "{p}");
    assert_eq!(p.matches("mul.f32").count(), 64, "{p}");
}

#[test]
fn an_epilogue_combines_values_the_same_in_every_thread() {
    refused(
        "epilogue_of_a_varying_value",
        &k("  var acc = zeros<f32>[64, 64]
  acc = acc + f32(ctx.thread)"),
        "P0459",
        "the values an epilogue combines must be the same in the whole CTA",
        6,
    );
    refused(
        "epilogue_with_a_collective",
        &k("  var acc = zeros<f32>[64, 64]
  acc = acc + sum<over ctx.thread>(1.0)"),
        "P0459",
        "an epilogue holds no collective or shuffle",
        6,
    );
    refused(
        "epilogue_tile_of_another_shape",
        &k("  var acc = zeros<f32>[64, 64]
  let t = F[0 :+ 2, c :+ 64]
  acc = acc + t"),
        "P0457",
        "the tile `t` does not fit the accumulator's shape",
        7,
    );
    refused(
        "epilogue_of_another_type",
        &k("  var acc = zeros<f32>[64, 64]
  acc = acc > 0.0"),
        "P0401",
        "the accumulator tile `acc` holds f32, the value is bool",
        6,
    );
}

#[test]
fn dot_takes_shared_tiles() {
    refused(
        "dot_of_a_tensor",
        &k("  var acc = zeros<f32>[64, 64]
  var w = W[c :+ 64, 0 :+ 16]
  acc += dot(A, trans(w))"),
        "P0455",
        "`dot` takes a shared tile of two dims",
        7,
    );
    refused(
        "dot_in_an_expression",
        &k("  let x = dot(1.0, 2.0)"),
        "P0455",
        "`dot` is only used as `acc += dot(a, b)`",
        5,
    );
}

#[test]
fn operand_types_need_an_instruction() {
    refused(
        "dot_of_mixed_types",
        &k("  var acc = zeros<f32>[64, 64]
  var a = A[r :+ 64, 0 :+ 16]
  var h = H[c :+ 64, 0 :+ 16]
  acc += dot(a, trans(h))"),
        "P0456",
        "no tensor-core product of f16 x bf16 into f32",
        8,
    );
    refused(
        "dot_of_f32_without_trans",
        &k("  var acc = zeros<f32>[64, 64]
  var a = F[r :+ 64, 0 :+ 16]
  var b = F[0 :+ 16, c :+ 64]
  acc += dot(a, b)"),
        "P0456",
        "a `dot` of f32 tiles takes its second operand as `trans(w)`",
        8,
    );
    // f32 operands are tf32 products (m16n8k8, sm_80), rounded with
    // cvt.rna as they leave ldmatrix.
    let tf32 = k("  var acc = zeros<f32>[64, 64]
  var a = F[r :+ 64, 0 :+ 16]
  var b = F[c :+ 64, 0 :+ 16]
  acc += dot(a, trans(b))
  C[r :+ 64, c :+ 64] = acc");
    let p = ptx(&tf32, 80);
    assert_eq!(
        p.matches("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
            .count(),
        16,
        "{p}"
    );
    // Per step, 2 A blocks of 4 registers and 4 B blocks of 2.
    assert_eq!(
        p.matches("cvt.rna.tf32.f32").count(),
        2 * (2 * 4 + 4 * 2),
        "{p}"
    );
}

#[test]
fn dot_shapes_must_match_the_accumulator() {
    refused(
        "dot_shape_mismatch",
        &k("  var acc = zeros<f32>[64, 64]
  var a = A[r :+ 64, 0 :+ 16]
  var w = W[c :+ 32, 0 :+ 16]
  acc += dot(a, trans(w))"),
        "P0457",
        "the shapes of `dot` do not match its accumulator",
        8,
    );
}

#[test]
fn an_accumulator_is_not_element_addressable() {
    refused(
        "acc_subscripted",
        &k("  var acc = zeros<f32>[64, 64]
  C[0, 0] = acc[0, 0]"),
        "P0458",
        "the accumulator tile `acc` is not element-addressable",
        6,
    );
    refused(
        "acc_as_a_value",
        &k("  var acc = zeros<f32>[64, 64]
  let x = acc + 1.0"),
        "P0458",
        "the accumulator tile `acc` is not element-addressable",
        6,
    );
}

#[test]
fn dot_is_cta_wide() {
    refused(
        "dot_under_a_warp_condition",
        &k("  var acc = zeros<f32>[64, 64]
  var a = A[r :+ 64, 0 :+ 16]
  var w = W[c :+ 64, 0 :+ 16]
  if ctx.warp == 0 {
    acc += dot(a, trans(w))
  }"),
        "P0702",
        "a `dot` needs uniform control",
        9,
    );
    refused(
        "acc_store_at_a_varying_start",
        &k("  var acc = zeros<f32>[64, 64]
  C[ctx.thread :+ 64, c :+ 64] = acc"),
        "P0703",
        "the start of an accumulator store must be the same in the whole CTA",
        6,
    );
}

#[test]
fn an_accumulator_is_stored_as_its_type_or_as_f16_or_bf16() {
    refused(
        "acc_stored_as_i32",
        &k("  var acc = zeros<f32>[64, 64]
  C[r :+ 64, c :+ 64] = i32(acc)"),
        "P0509",
        "an accumulator of f32 is not stored as i32",
        6,
    );
}

#[test]
fn an_accumulator_store_matches_its_target() {
    refused(
        "acc_store_shape",
        &k("  var acc = zeros<f32>[64, 64]
  C[r :+ 32, c :+ 64] = acc"),
        "P0509",
        "the accumulator does not match the target's shape and type",
        6,
    );
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
    assert_eq!(p.matches("st.shared.f32").count(), 32, "{p}");
    assert_eq!(p.matches("st.shared.b16").count(), 32, "{p}");
    assert_eq!(p.matches("cvt.rn.f16.f32").count(), 32, "{p}");
    assert!(p.contains("bar.sync 0;"), "{p}");
}

#[test]
fn an_accumulator_stored_into_a_tile_fits_its_box() {
    const MISFIT: &str = "the accumulator does not fit the box of `s` it is stored into";
    // (snapshot, the tile's declaration, the store, code, message)
    let cases = [
        (
            "acc_into_tile_shape",
            "f32>[64, 64]",
            "s[0 :+ 64, 0 :+ 32] = acc",
            "P0460",
            MISFIT,
        ),
        (
            "acc_into_tile_type",
            "f16>[64, 64]",
            "s[0 :+ 64, 0 :+ 64] = acc",
            "P0460",
            MISFIT,
        ),
        (
            "acc_into_tile_compound",
            "f32>[64, 64]",
            "s[0 :+ 64, 0 :+ 64] += acc",
            "P0460",
            MISFIT,
        ),
        (
            "acc_into_tile_rank",
            "f32>[2, 64, 64]",
            "s[0 :+ 1, 0 :+ 64, 0 :+ 64] = acc",
            "P0460",
            MISFIT,
        ),
        (
            "acc_into_tile_outside",
            "f32>[64, 64]",
            "s[8 :+ 64, 0 :+ 64] = acc",
            "P0442",
            "the box 8 :+ 64 does not fit axis 0 of `s`, which has 64",
        ),
        (
            "acc_into_tile_start",
            "f32>[64, 64]",
            "s[r :+ 64, 0 :+ 64] = acc",
            "P0442",
            "where a tile box starts must be a compile-time constant",
        ),
    ];
    for (name, tile, store, code, message) in cases {
        let body = format!("  var acc = zeros<f32>[64, 64]\n  var s = shared<{tile}\n  {store}");
        refused(name, &k(&body), code, message, 7);
    }
}

#[test]
fn an_accumulator_store_into_a_tile_is_cta_wide() {
    refused(
        "acc_into_tile_varying",
        &k("  var acc = zeros<f32>[64, 64]
  var s = shared<f32>[64, 64]
  if ctx.thread < 64 {
    s[0 :+ 64, 0 :+ 64] = acc
  }"),
        "P0702",
        "an accumulator store needs uniform control",
        8,
    );
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
