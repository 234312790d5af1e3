//! The wgmma checks, each with a planted bug in a small hand-written
//! kernel: a warpgroup computes D (64×8) = A (64×16) · B (16×8) with every
//! element 1.0 (so D = 16), from unswizzled shared operands (stored by
//! the generic proxy, then `fence.proxy.async` before the barrier, as the
//! async-proxy check requires).

mod common;

use common::{check_report, kernel, run_with};
use phobos_sim::{CheckKind, LaunchOptions, SimError};

const DECLS: &str = "    .shared .align 1024 .b8 sa[2048];\n    .shared .align 1024 .b8 sb[256];\n";

/// A: 8-row groups 256 bytes apart (SBO), K chunks 128 apart (LBO), at 0.
const DESC_A: &str = "0x0000001000080000";
/// B: the same, at 2048.
const DESC_B: &str = "0x0000001000080080";

/// The kernel with `edit` applied to its clean text.
fn body(edit: impl Fn(String) -> String) -> String {
    let clean = format!(
        r#"    shl.b32 %r1, %r0, 4;
    mov.u32 %r2, sa;
    add.u32 %r3, %r2, %r1;
    mov.b32 %r4, 0x3C003C00;
    st.shared.v4.b32 [%r3], {{%r4, %r4, %r4, %r4}};
    setp.lt.u32 %p1, %r0, 16;
    mov.u32 %r5, sb;
    add.u32 %r6, %r5, %r1;
    @%p1 st.shared.v4.b32 [%r6], {{%r4, %r4, %r4, %r4}};
    fence.proxy.async.shared::cta;
    bar.sync 0;
    mov.f32 %f1, 0f00000000;
    mov.f32 %f2, 0f00000000;
    mov.f32 %f3, 0f00000000;
    mov.f32 %f4, 0f00000000;
    mov.b64 %rd10, {DESC_A};
    mov.b64 %rd11, {DESC_B};
    wgmma.fence.sync.aligned;
    // ISSUE
    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f1, %f2, %f3, %f4}}, %rd10, %rd11, 1, 1, 1, 0, 0;
    wgmma.commit_group.sync.aligned;
    // IN FLIGHT
    wgmma.wait_group.sync.aligned 0;
    st.global.f32 [%rd4], %f1;
    st.global.f32 [%rd4+512], %f2;
    st.global.f32 [%rd4+1024], %f3;
    st.global.f32 [%rd4+1536], %f4;
"#
    );
    edit(clean)
}

fn run(edit: impl Fn(String) -> String, threads: u32) -> Result<Vec<u32>, SimError> {
    let ptx = kernel(DECLS, &body(edit));
    run_with(&ptx, threads, &[0], 4, &LaunchOptions::default()).map(|r| r.out)
}

fn fails(edit: impl Fn(String) -> String, threads: u32, kind: CheckKind, text: &str) {
    let e = match run(edit, threads) {
        Ok(_) => panic!("the planted bug ({text}) was not reported"),
        Err(e) => e,
    };
    let r = check_report(&e);
    assert_eq!(r.kind, kind, "{e}");
    assert!(r.message.contains(text), "{e}");
}

fn at_in_flight(line: &'static str) -> impl Fn(String) -> String {
    move |s| s.replace("    // IN FLIGHT\n", &format!("    {line}\n"))
}

#[test]
fn the_clean_kernel_computes_d() {
    let out = run(|s| s, 128).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.iter().all(|&w| f32::from_bits(w) == 16.0), "{out:?}");
}

#[test]
fn a_shared_operand_overwritten_before_wait_group_is_a_race() {
    fails(
        at_in_flight("st.shared.v4.b32 [%r6], {%r4, %r4, %r4, %r4};"),
        128,
        CheckKind::Racecheck,
        "write of shared memory that an in-flight wgmma.mma_async reads",
    );
}

#[test]
fn reading_the_accumulator_before_wait_group_is_a_race() {
    fails(
        at_in_flight("add.f32 %f9, %f1, %f1;"),
        128,
        CheckKind::Racecheck,
        "read of register %f1 while the wgmma.mma_async that uses it is in flight",
    );
}

#[test]
fn writing_the_accumulator_before_wait_group_is_a_race() {
    fails(
        at_in_flight("mov.f32 %f3, 0f3F800000;"),
        128,
        CheckKind::Racecheck,
        "write of register %f3 while",
    );
}

#[test]
fn a_wgmma_without_a_fence_after_register_writes_is_reported() {
    fails(
        |s| s.replace("    wgmma.fence.sync.aligned;\n", ""),
        128,
        CheckKind::Racecheck,
        "wgmma.mma_async before the warp's first wgmma.fence",
    );
    // A fence before the register writes does not order them.
    fails(
        |s| {
            s.replace("    wgmma.fence.sync.aligned;\n", "").replace(
                "    bar.sync 0;\n",
                "    bar.sync 0;\n    wgmma.fence.sync.aligned;\n",
            )
        },
        128,
        CheckKind::Racecheck,
        "accessed it after the warp's last wgmma.fence",
    );
    // Reading an accumulator is an access too.
    fails(
        |s| s.replace("    // ISSUE\n", "    add.f32 %f9, %f4, %f4;\n"),
        128,
        CheckKind::Racecheck,
        "uses %f4 asynchronously",
    );
    // A write between the fence and the wgmma needs another fence.
    fails(
        |s| s.replace("    // ISSUE\n", "    mov.f32 %f2, 0f00000000;\n"),
        128,
        CheckKind::Racecheck,
        "uses %f2 asynchronously",
    );
}

#[test]
fn a_warp_that_skips_the_wgmma_breaks_the_warpgroup() {
    fails(
        |s| {
            s.replace(
                "    // ISSUE\n",
                "    shr.u32 %r7, %r0, 5;\n    setp.eq.u32 %p2, %r7, 1;\n    @%p2 bra $skip;\n",
            )
            .replace(
                "    wgmma.commit_group.sync.aligned;\n",
                "$skip:\n    wgmma.commit_group.sync.aligned;\n",
            )
        },
        128,
        CheckKind::Synccheck,
        "every warp of a warpgroup must execute the same .sync.aligned wgmma instructions",
    );
}

#[test]
fn a_warp_that_exits_before_the_wait_breaks_the_warpgroup() {
    fails(
        at_in_flight("shr.u32 %r7, %r0, 5;\n    setp.eq.u32 %p2, %r7, 3;\n    @%p2 ret;"),
        128,
        CheckKind::Synccheck,
        "warp 3 of warpgroup 0 ended after 3",
    );
}

#[test]
fn a_warpgroup_of_three_warps_is_reported() {
    fails(
        |s| s,
        96,
        CheckKind::Synccheck,
        "warpgroup 0, which has only 3 warps",
    );
}

#[test]
fn a_descriptor_outside_shared_memory_is_a_memcheck_error() {
    fails(
        |s| s.replace(DESC_B, "0x0000001000083000"),
        128,
        CheckKind::Memcheck,
        "outside the CTA's 2304 bytes of shared memory",
    );
}

#[test]
fn a_swizzled_descriptor_off_its_pattern_is_a_memcheck_error() {
    // 128-byte swizzle, start 128: row 1 of a 1024-byte pattern, base offset 0.
    fails(
        |s| s.replace(DESC_A, "0x4000004000010008"),
        128,
        CheckKind::Memcheck,
        "must start at a multiple of 1024 bytes",
    );
}

#[test]
fn a_partial_warp_at_wgmma_is_reported() {
    fails(
        |s| {
            s.replace(
                "    wgmma.mma_async",
                "    setp.ne.u32 %p3, %r0, 5;\n    @%p3 wgmma.mma_async",
            )
        },
        128,
        CheckKind::Synccheck,
        "needs all 32 lanes of the warp",
    );
}

/// Two wgmmas in two groups (accumulators %f1-%f4, then %f5-%f8):
/// `wait_group 1` retires only the first.
fn two_groups(after_wait1: &str) -> String {
    body(|s| {
        s.replace(
            "    wgmma.commit_group.sync.aligned;\n    // IN FLIGHT\n    wgmma.wait_group.sync.aligned 0;\n",
            &format!(
                "    wgmma.commit_group.sync.aligned;\n    mov.f32 %f5, 0f3F800000;\n    mov.f32 %f6, 0f3F800000;\n    mov.f32 %f7, 0f3F800000;\n    mov.f32 %f8, 0f3F800000;\n    wgmma.fence.sync.aligned;\n    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f5, %f6, %f7, %f8}}, %rd10, %rd11, 1, 1, 1, 0, 0;\n    wgmma.commit_group.sync.aligned;\n    wgmma.wait_group.sync.aligned 1;\n{after_wait1}    wgmma.wait_group.sync.aligned 0;\n    add.f32 %f1, %f1, %f5;\n    add.f32 %f2, %f2, %f6;\n    add.f32 %f3, %f3, %f7;\n    add.f32 %f4, %f4, %f8;\n"
            ),
        )
    })
}

#[test]
fn wait_group_one_retires_all_but_the_newest_group() {
    // D1 = 16 and D2 = 1 + 16, summed after both waits.
    let ptx = kernel(DECLS, &two_groups("    add.f32 %f9, %f1, %f2;\n"));
    let out = run_with(&ptx, 128, &[0], 4, &LaunchOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .out;
    assert!(out.iter().all(|&w| f32::from_bits(w) == 33.0), "{out:?}");
    // The newest group is still in flight after wait_group 1.
    let ptx = kernel(DECLS, &two_groups("    add.f32 %f9, %f5, %f1;\n"));
    let e = run_with(&ptx, 128, &[0], 4, &LaunchOptions::default())
        .err()
        .expect("reading the second group's accumulator after wait_group 1");
    let r = check_report(&e);
    assert_eq!(r.kind, CheckKind::Racecheck, "{e}");
    assert!(r.message.contains("read of register %f5"), "{e}");
}

#[test]
fn a_descriptor_that_differs_between_lanes_is_reported() {
    fails(
        |s| {
            s.replace(
                "    wgmma.fence.sync.aligned;\n",
                "    setp.eq.u32 %p4, %r0, 7;\n    @%p4 mov.b64 %rd11, 0x0000001000080090;\n    wgmma.fence.sync.aligned;\n",
            )
        },
        128,
        CheckKind::Synccheck,
        "the B descriptor differs between lanes",
    );
}

#[test]
fn malformed_wgmma_instructions_are_parse_errors() {
    let cases = [
        (
            "wgmma.mma_async.sync.aligned.m64n12k16.f32.f16.f16 {%f1, %f2, %f3, %f4, %f5, %f6}, %rd10, %rd11, 1, 1, 1, 0, 0;",
            "m64nNk16 with N a multiple of 8 from 8 to 256",
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n8k16.f16.bf16.bf16 {%r1, %r2}, %rd10, %rd11, 1, 1, 1, 0, 0;",
            "not a wgmma.mma_async form",
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%f1, %f2, %f3, %f4}, %rd10, %rd11, 1, 1, 1, 0, 0;",
            "takes 6 operands, found 8",
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3}, %rd10, %rd11, 1, 1, 1, 0, 0;",
            "expected a vector of 4 registers, found 3",
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd10, %rd11, 1, 2, 1, 0, 0;",
            "imm-scale-a is the immediate 1 or -1",
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd10, %rd11, 2, 1, 1, 0, 0;",
            "scale-d is a predicate or 0 or 1",
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd10, %rd11, 1, 1, 1, 0, 2;",
            "imm-trans-b is the immediate 0 or 1",
        ),
        ("wgmma.wait_group.sync.aligned %r1;", "needs an integer constant"),
        (
            "wgmma.mma_async.sync.aligned.m64n40k32.s32.s8.s8 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16, %r17, %r18, %r19, %r20}, %rd10, %rd11, 1;",
            "8, 16, 24, 32, or a multiple of 16 up to 256",
        ),
        (
            "wgmma.mma_async.sync.aligned.m64n8k16.satfinite.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd10, %rd11, 1, 1, 1, 0, 0;",
            ".satfinite is an integer wgmma.mma_async modifier",
        ),
    ];
    for (inst, want) in cases {
        let ptx = kernel("", &format!("    {inst}\n"));
        let e = phobos_sim::Module::parse(&ptx).expect_err(inst);
        let text = e.to_string();
        assert!(text.contains(want), "{inst}: {text}");
        assert!(text.contains("line 21"), "{inst}: {text}");
    }
    for inst in [
        "wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd10, %rd11, %r1, 0, 1, 1, 1, 0, 0;",
        "wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.and.popc {%r1, %r2, %r3, %r4}, %rd10, %rd11, 1;",
        "wgmma.fence.aligned;",
    ] {
        let ptx = kernel("", &format!("    {inst}\n"));
        let e = phobos_sim::Module::parse(&ptx).expect_err(inst);
        assert!(
            matches!(e, SimError::Unsupported { .. }),
            "{inst}: {e}"
        );
    }
}

/// The clean kernel as an s8 wgmma (every element 127, K = 32) onto
/// accumulators starting at 2^31 - 16: the sum leaves i32.
fn int_kernel(satfinite: &str) -> String {
    body(|s| {
        let mut s = s
            .replace("0x3C003C00", "0x7F7F7F7F")
            .replace(
                "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd10, %rd11, 1, 1, 1, 0, 0;",
                &format!("wgmma.mma_async.sync.aligned.m64n8k32{satfinite}.s32.s8.s8 {{%r10, %r11, %r12, %r13}}, %rd10, %rd11, 1;"),
            );
        for i in 1..=4 {
            s = s
                .replace(
                    &format!("mov.f32 %f{i}, 0f00000000;"),
                    &format!("mov.b32 %r{}, 2147483632;", 9 + i),
                )
                .replace(
                    &format!(
                        "st.global.f32 [%rd4{}], %f{i};",
                        ["", "+512", "+1024", "+1536"][i - 1]
                    ),
                    &format!(
                        "st.global.b32 [%rd4{}], %r{};",
                        ["", "+512", "+1024", "+1536"][i - 1],
                        9 + i
                    ),
                );
        }
        s
    })
}

#[test]
fn integer_wgmma_wraps_or_saturates() {
    let sum = 32 * 127 * 127;
    for (sat, want) in [("", (2147483632i64 + sum) as i32), (".satfinite", i32::MAX)] {
        let ptx = kernel(DECLS, &int_kernel(sat));
        let out = run_with(&ptx, 128, &[0], 4, &LaunchOptions::default())
            .unwrap_or_else(|e| panic!("{e}\n{ptx}"))
            .out;
        assert!(
            out.iter().all(|&w| w as i32 == want),
            "{sat}: {:?}",
            &out[..4]
        );
    }
}

#[test]
fn a_descriptor_that_differs_between_warps_is_reported() {
    fails(
        |s| {
            s.replace(
                "    wgmma.fence.sync.aligned;\n",
                "    shr.u32 %r7, %r0, 5;\n    setp.eq.u32 %p5, %r7, 2;\n    @%p5 mov.b64 %rd11, 0x0000002000080080;\n    wgmma.fence.sync.aligned;\n",
            )
        },
        128,
        CheckKind::Synccheck,
        "the PTX ISA requires a matrix descriptor to be the same across all the warps",
    );
}

#[test]
fn wait_group_does_not_wait_for_an_uncommitted_wgmma() {
    // Without the commit the wgmma belongs to no group: wait_group 0 does
    // not retire it, and the store of %f1 after the wait reads it in flight.
    fails(
        |s| s.replace("    wgmma.commit_group.sync.aligned;\n", ""),
        128,
        CheckKind::Racecheck,
        "read of register %f1 while the wgmma.mma_async that uses it is in flight",
    );
}
