//! Issue 32: the GPU bundle's FP8 GEMM (`crates/phobos-gpucheck/kernels/
//! f8_gemm.pho`, C = A · Wᵀ with f8e4m3 operands) takes Hopper's
//! warpgroup MMA on sm_90a — one `wgmma.mma_async ... m64n128k32
//! .f32.e4m3.e4m3` per warpgroup and K step, fed by TMA — which ptxas
//! turns into `QGMMA` and `UTMALDG` with no `cp.async` (`LDGSTS`), no
//! local memory and no spills; on sm_89 it keeps `mma.sync` m16n8k32
//! (`QMMA.16832`). Its `// needs: sm_89` header is what makes the bundle
//! build it for sm_89 and newer only (crates/phobos-gpucheck/build.rs):
//! sm_80 has no FP8 `mma` (P0811).
//!
//! Without ptxas or nvdisasm the SASS half is skipped with a message,
//! except under `CI=true`, where a missing tool fails it.

use phobos_conformance::sass::{count_ops, disassemble};
use phobos_conformance::{assemble, find_ptxas, in_ci, min_arch_of};
use phobos_core::arch::SM_90A;

fn f8_gemm() -> String {
    let path = phobos_conformance::root().join("../crates/phobos-gpucheck/kernels/f8_gemm.pho");
    std::fs::read_to_string(&path).expect("read f8_gemm.pho")
}

fn compile(src: &str, arch: u32) -> (String, Vec<phobos_core::Diagnostic>) {
    let (ks, diags) = phobos_core::compile(
        src,
        "f8_gemm.pho",
        &phobos_core::CompileOptions::for_arch(arch),
    );
    (ks.iter().map(|k| k.ptx.as_str()).collect(), diags)
}

#[test]
fn the_bundle_f8_gemm_takes_wgmma_and_tma_on_sm_90a_and_mma_sync_on_sm_89() {
    let src = f8_gemm();
    assert_eq!(
        min_arch_of(&src),
        89,
        "the header must say `// needs: sm_89`"
    );
    let (ptx, diags) = compile(&src, SM_90A);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    assert_eq!(
        ptx.matches("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3")
            .count(),
        1,
        "{ptx}"
    );
    assert!(!ptx.contains("mma.sync.aligned.m16n8"), "mma.sync left");
    assert_eq!(ptx.matches("mbarrier.init.shared::cta.b64").count(), 3);
    assert!(ptx.contains("cp.async.bulk.tensor.2d"), "no TMA:\n{ptx}");
    assert!(!ptx.contains("cp.async.cg"), "{ptx}");
    let (sm89, diags) = compile(&src, 89);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    assert!(
        sm89.contains("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")
            && !sm89.contains("wgmma"),
        "{sm89}"
    );
    // sm_80 has no FP8 tensor cores: the reason the bundle builds it from
    // sm_89 up.
    let (_, diags) = compile(&src, 80);
    assert!(
        diags
            .iter()
            .any(|d| d.is_error() && d.code == phobos_core::Code::P0811),
        "{diags:?}"
    );
}

#[test]
fn the_bundle_f8_gemm_on_sm_90a_has_qgmma_no_ldgsts_and_no_local_memory() {
    let (Some(ptxas), Some(nvdisasm)) = (find_ptxas(), phobos_conformance::sass::find_nvdisasm())
    else {
        assert!(
            !in_ci(),
            "ptxas or nvdisasm not found (set PHOBOS_PTXAS and PHOBOS_NVDISASM); CI=true requires both"
        );
        eprintln!("skipping: ptxas or nvdisasm not found");
        return;
    };
    for (arch, mma, copies) in [
        (SM_90A, "QGMMA.64x128x32.F32.E4M3.E4M3", "UTMALDG.2D"),
        (89, "QMMA.16832.F32.E4M3.E4M3", "LDGSTS"),
    ] {
        let (ptx, _) = compile(&f8_gemm(), arch);
        let cubin = assemble(&ptxas, "f8_gemm", arch, &ptx).expect("ptxas assembles");
        let sass = disassemble(
            &nvdisasm,
            &cubin,
            &format!("f8_gemm {}", phobos_core::arch::name(arch)),
        );
        let count = |op: &str| count_ops(&sass, op);
        assert!(count(mma) >= 1, "no {mma}:\n{sass}");
        assert!(count(copies) >= 3, "no {copies}:\n{sass}");
        assert_eq!(count("LDL") + count("STL"), 0, "local memory");
        if arch == SM_90A {
            assert_eq!(count("LDGSTS"), 0, "cp.async left on sm_90a");
            assert_eq!(count("HMMA") + count("QMMA"), 0, "mma.sync on sm_90a");
        }
    }
}
