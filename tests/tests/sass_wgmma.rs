//! Issue 32: `dot` on sm_90a runs on Hopper's warpgroup MMA. The GPU
//! bundle's bf16 GEMM compiled for sm_90a issues `wgmma.mma_async` from
//! swizzled shared tiles that TMA fills (`cp.async.bulk.tensor` through
//! tensor-map parameters, an mbarrier per stage), which ptxas turns into
//! `HGMMA` and `UTMALDG` with no `HMMA`, no `LDGSTS`, no local memory and
//! at most 128 registers (two CTAs of 256 per SM); the same kernel for
//! plain sm_90 keeps `mma.sync`. A kernel whose `dot` cannot take a
//! warpgroup layout, whose operand tile is read element by element, or
//! whose operand rows are not known to be a multiple of 8 bytes keeps
//! `mma.sync` on sm_90a.
//!
//! Without ptxas or nvdisasm the SASS half is skipped with a message,
//! except under `CI=true`, where a missing tool fails it.

use phobos_conformance::sass::{count_ops, disassemble, find_nvdisasm, registers_and_spills};
use phobos_conformance::{assemble, find_ptxas, in_ci};
use phobos_core::arch::SM_90A;

fn bundle_gemm() -> String {
    let path = phobos_conformance::root().join("../crates/phobos-gpucheck/kernels/bf16_gemm.pho");
    std::fs::read_to_string(&path).expect("read bf16_gemm.pho")
}

fn ptx_of(src: &str, arch: u32) -> String {
    let (ks, diags) =
        phobos_core::compile(src, "k.pho", &phobos_core::CompileOptions::for_arch(arch));
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    ks.iter().map(|k| k.ptx.as_str()).collect()
}

#[test]
fn the_bundle_gemm_issues_wgmma_on_sm_90a_and_mma_sync_on_sm_90() {
    let src = bundle_gemm();
    let ptx = ptx_of(&src, SM_90A);
    assert!(ptx.contains(".target sm_90a"), "{ptx}");
    assert!(
        ptx.contains("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"),
        "no m64n128k16 wgmma:\n{ptx}"
    );
    assert!(!ptx.contains("mma.sync"), "mma.sync left on sm_90a");
    assert!(!ptx.contains("ldmatrix"), "ldmatrix left on sm_90a");
    // Its staged copies go through TMA: a tensor map per operand, one
    // mbarrier per stage, no `cp.async` left.
    assert!(ptx.contains(".param .align 64 .b8 m_A_0[128]"), "{ptx}");
    assert!(ptx.contains(".param .align 64 .b8 m_B_1[128]"), "{ptx}");
    assert_eq!(ptx.matches("mbarrier.init.shared::cta.b64").count(), 3);
    assert!(ptx.contains(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
    ));
    assert!(ptx.contains("mbarrier.try_wait.parity.shared::cta.b64"));
    assert!(
        !ptx.contains("cp.async.cg") && !ptx.contains("cp.async.wait_group"),
        "{ptx}"
    );
    assert!(
        ptx.contains(".extern .shared .align 1024"),
        "operands need 1024-byte alignment"
    );
    let plain = ptx_of(&src, 90);
    assert!(plain.contains("mma.sync.aligned.m16n8k16") && !plain.contains("wgmma"));
}

/// Rows per warpgroup other than 64 (a 128-row accumulator over 4 warps),
/// an operand tile read element by element, or operand rows not known to
/// be a multiple of 8 bytes, keep `mma.sync`.
#[test]
fn dots_wgmma_cannot_take_keep_mma_sync_on_sm_90a() {
    let tall = "@launch(128)\n@grid(cdiv(M, 128), cdiv(N, 64))\n\
kernel g(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N]) {\n\
  var acc = zeros<f32>[128, 64]\n\
  for k in range(0, K, 16) {\n\
    var a = A[ctx.block.x * 128 :+ 128, k :+ 16]\n\
    var b = B[k :+ 16, ctx.block.y * 64 :+ 64]\n\
    acc += dot(a, b)\n\
  }\n\
  C[ctx.block.x * 128 :+ 128, ctx.block.y * 64 :+ 64] = acc\n\
}\n";
    let ptx = ptx_of(tall, SM_90A);
    assert!(ptx.contains("mma.sync") && !ptx.contains("wgmma"), "{ptx}");
    let gemm = |extra: &str| {
        format!(
            "@launch(128)\n@grid(cdiv(M, 64), cdiv(N, 64))\n@aligned(K = 8, N = 8)\n\
kernel g(A: tensor<f16>[M, K], B: tensor<f16>[K, N], C: tensor<f32>[M, N], D: tensor<f16>[M]) {{\n\
  var acc = zeros<f32>[64, 64]\n\
  for k in range(0, K, 16) {{\n\
    var a = A[ctx.block.x * 64 :+ 64, k :+ 16]\n\
    var b = B[k :+ 16, ctx.block.y * 64 :+ 64]\n\
    acc += dot(a, b)\n\
    {extra}\n\
  }}\n\
  C[ctx.block.x * 64 :+ 64, ctx.block.y * 64 :+ 64] = acc\n\
}}\n"
        )
    };
    let read = gemm(
        "if ctx.block.y == 0 && ctx.thread < 64 && k == 0 { D[ctx.block.x * 64 + ctx.thread] = a[ctx.thread, 0] }",
    );
    let ptx = ptx_of(&read, SM_90A);
    assert!(ptx.contains("mma.sync") && !ptx.contains("wgmma"), "{ptx}");
    let plain = gemm("");
    assert!(ptx_of(&plain, SM_90A).contains("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"));
    // Without `@aligned`, rows of any length copy element by element,
    // which costs more into the swizzle than `mma.sync` saves.
    let ragged = plain.replace("@aligned(K = 8, N = 8)\n", "");
    let ptx = ptx_of(&ragged, SM_90A);
    assert!(ptx.contains("mma.sync") && !ptx.contains("wgmma"), "{ptx}");
}

#[test]
fn the_bundle_gemm_on_sm_90a_has_hgmma_no_hmma_and_no_local_memory() {
    let (Some(ptxas), Some(nvdisasm)) = (find_ptxas(), find_nvdisasm()) else {
        assert!(
            !in_ci(),
            "ptxas or nvdisasm not found (set PHOBOS_PTXAS and PHOBOS_NVDISASM); CI=true requires both"
        );
        eprintln!("skipping: ptxas or nvdisasm not found");
        return;
    };
    let ptx = ptx_of(&bundle_gemm(), SM_90A);
    let cubin = assemble(&ptxas, "bf16_gemm", SM_90A, &ptx).expect("ptxas assembles sm_90a");
    let sass = disassemble(&nvdisasm, &cubin, "bf16_gemm sm_90a");
    let count = |op: &str| count_ops(&sass, op);
    assert!(count("HGMMA.64x128x16.F32.BF16") >= 2, "no HGMMA:\n{sass}");
    assert!(count("UTMALDG.2D") >= 3, "no UTMALDG:\n{sass}");
    assert_eq!(count("LDGSTS"), 0, "cp.async left on sm_90a");
    assert_eq!(count("HMMA"), 0, "HMMA on sm_90a");
    assert_eq!(count("LDL") + count("STL"), 0, "local memory");
    let (regs, spills) = registers_and_spills(&ptxas, &ptx, SM_90A);
    assert!(
        regs <= 128,
        "{regs} registers: fewer than two CTAs of 256 per SM"
    );
    assert_eq!(spills, 0, "{spills} bytes of stack or spills");
}
