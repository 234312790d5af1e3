//! Planted bugs, each caught by the right check with a report that names
//! kernel, source line, CTA, thread, address and tensor; and the same
//! kernels fixed, passing.

#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use phobos_sim::{
    CheckKind, CheckReport, Device, KernelArg, Launch, LaunchOptions, Module, SimError, Space,
};

fn report(e: SimError) -> CheckReport {
    check_report(&e).clone()
}

/// The report of running `body` (after `decls`) on `threads` threads with
/// an input of one zero word, which must fail.
fn caught(decls: &str, body: &str, threads: u32) -> CheckReport {
    report(fail32(decls, body, threads, &[0]))
}

/// Asserts that `r` is a `kind` report whose message says `message`.
fn says(r: &CheckReport, kind: CheckKind, message: &str) {
    assert_eq!(r.kind, kind);
    assert!(r.message.contains(message), "{}", r.message);
}

#[test]
fn unguarded_global_read_is_caught_by_memcheck() {
    // 64 threads read in[tid] but `in` holds 40 words.
    let body = "
    .loc 1 7 3
    ld.global.u32 %r1, [%rd5];
    st.global.u32 [%rd4], %r1;
";
    let ptx = kernel("", body);
    let err = run_with(&ptx, 64, &[1; 40], 1, &LaunchOptions::default())
        .map(|_| ())
        .unwrap_err();
    let r = report(err);
    assert_eq!(r.kind, CheckKind::Memcheck);
    assert_eq!(r.kernel, "k");
    assert_eq!(r.thread, Some([40, 0, 0]), "the first thread past the end");
    assert_eq!(r.cta, [0, 0, 0]);
    assert_eq!(r.tensor.as_deref(), Some("in"));
    assert_eq!(r.space, Some(Space::Global));
    let src = r.source.clone().expect("a source position");
    assert_eq!((src.file.as_str(), src.line, src.col), ("t.pho", 7, 3));
    let text = r.to_string();
    assert!(
        text.starts_with("memcheck: out-of-bounds global load of 4 bytes in kernel `k`"),
        "{text}"
    );
    assert!(text.contains("at t.pho:7:3"), "{text}");
    assert!(text.contains("thread (40, 0, 0)"), "{text}");
    assert!(text.contains("tensor `in`, which has 160 bytes"), "{text}");
}

#[test]
fn guarded_read_passes() {
    let body = "
    setp.ge.u32 %p1, %r0, 40;
    @%p1 bra $out;
    ld.global.u32 %r1, [%rd5];
    st.global.u32 [%rd4], %r1;
$out:
";
    let r = run_with(
        &kernel("", body),
        64,
        &[7; 40],
        1,
        &LaunchOptions::default(),
    )
    .expect("runs");
    assert_eq!(&r.out[..40], &[7; 40]);
    assert_eq!(&r.out[40..], &[POISON; 24]);
}

#[test]
fn misaligned_vector_load_is_caught() {
    let body = "    ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd2+4];\n";
    let r = report(fail32("", body, 32, &[0; 16]));
    says(
        &r,
        CheckKind::Memcheck,
        "misaligned global load of 16 bytes",
    );
    assert_eq!(r.tensor.as_deref(), Some("in"));
}

#[test]
fn shared_out_of_bounds_is_caught() {
    let decls = "    .shared .align 4 .b8 buf[128];";
    let body = own_word("buf") + "    st.shared.u32 [%r3], %r0;\n";
    let r = caught(decls, &body, 64);
    assert_eq!(r.kind, CheckKind::Memcheck);
    assert_eq!(r.thread, Some([32, 0, 0]));
    assert_eq!(r.space, Some(Space::Shared));
    assert_eq!(r.address, Some(128));
    assert!(
        r.message.contains("out-of-bounds shared store"),
        "{}",
        r.message
    );
    // 32 threads fit.
    run_n(decls, &body, 32, &[0], 1);
}

/// Each thread writes its word of `tile` and, after `barrier`, reads the
/// word 32 threads on.
fn exchange(barrier: &str) -> String {
    let own = own_word("tile");
    format!(
        "{own}
    .loc 1 3 5
    st.shared.u32 [%r3], %r0;
    {barrier}
    add.u32 %r4, %r0, 32;
    and.b32 %r4, %r4, 63;
    shl.b32 %r4, %r4, 2;
    add.u32 %r5, %r2, %r4;
    .loc 1 5 5
    ld.shared.u32 %r6, [%r5];
    st.global.u32 [%rd4], %r6;
"
    )
}

const TILE: &str = "    .shared .align 4 .b8 tile[256];";

#[test]
fn shared_write_without_barrier_is_a_race() {
    let body = exchange("");
    // Warp 0 reads warp 1's slots before warp 1 writes them: whichever
    // order the hardware picks, the pair is a race.
    let r = caught(TILE, &body, 64);
    says(&r, CheckKind::Racecheck, "write-after-read");
    assert_eq!(r.tensor.as_deref(), Some("tile"));
    assert_eq!(r.thread, Some([32, 0, 0]));
    let text = r.to_string();
    assert!(text.contains("at t.pho:3:5"), "{text}");
    assert!(
        text.contains("thread (0, 0, 0) read these bytes at t.pho:5:5"),
        "{text}"
    );
}

#[test]
fn the_same_exchange_with_a_barrier_passes() {
    let body = exchange("bar.sync 0;");
    let out = run_n(TILE, &body, 64, &[0], 1);
    for t in 0..64u32 {
        assert_eq!(out[0][t as usize], (t + 32) % 64);
    }
}

#[test]
fn checks_off_runs_the_racy_kernel() {
    let body = exchange("");
    let opts = LaunchOptions {
        checks: false,
        ..LaunchOptions::default()
    };
    run_with(&kernel(TILE, &body), 64, &[0], 1, &opts).expect("no racecheck without checks");
}

#[test]
fn write_after_read_without_barrier_is_a_race() {
    let body = own_word("tile")
        + "
    st.shared.u32 [%r3], %r0;
    bar.sync 0;
    setp.ge.u32 %p1, %r0, 32;
    @%p1 bra $write;
    add.u32 %r5, %r3, 128;
    ld.shared.u32 %r6, [%r5];
    bra.uni $end;
$write:
    st.shared.u32 [%r3], 5;
$end:
";
    let r = caught(TILE, &body, 64);
    says(&r, CheckKind::Racecheck, "write-after-read");
}

#[test]
fn lanes_of_one_warp_race_without_a_warp_sync() {
    let body = own_word("tile")
        + "
    st.shared.u32 [%r3], %r0;
    xor.b32 %r4, %r1, 4;
    add.u32 %r5, %r2, %r4;
    SYNC
    ld.shared.u32 %r6, [%r5];
";
    let r = caught(TILE, &body.replace("SYNC", ""), 32);
    assert_eq!(r.kind, CheckKind::Racecheck);
    run_n(
        TILE,
        &body.replace("SYNC", "bar.warp.sync 0xffffffff;"),
        32,
        &[0],
        1,
    );
}

#[test]
fn barrier_under_divergent_control_is_a_deadlock_report() {
    let body = "
    setp.lt.u32 %p1, %r0, 16;
    @!%p1 bra $skip;
    .loc 1 9 7
    bar.sync 0;
$skip:
";
    let r = caught("", body, 64);
    says(
        &r,
        CheckKind::Synccheck,
        "reached by 16 of the CTA's 64 threads",
    );
    assert_eq!(r.source.as_ref().map(|s| s.line), Some(9));
    let text = r.to_string();
    assert!(text.contains("lanes 16-31 of warp 0 exited"), "{text}");
}

#[test]
fn warps_at_different_barriers_are_reported() {
    let body = "
    setp.lt.u32 %p1, %r0, 32;
    @%p1 bra $a;
    bar.sync 0;
    bra.uni $end;
$a:
    bar.sync 0;
$end:
";
    let r = caught("", body, 64);
    says(&r, CheckKind::Synccheck, "different bar.sync");
    assert_eq!(r.notes.len(), 2);
}

/// A body in which lanes 16-31 branch past `then`, which lanes 0-15 run;
/// all lanes then run `after`.
fn low_half_runs(then: &str, after: &str) -> String {
    format!("    setp.ge.u32 %p1, %r0, 16;\n    @%p1 bra $end;\n    {then}\n$end:\n{after}")
}

#[test]
fn shuffle_under_divergent_control_is_caught() {
    // Lanes 16-31 leave; lanes 0-15 shuffle with a full mask.
    let body = low_half_runs("shfl.sync.bfly.b32 %r1, %r0, 1, 31, 0xffffffff;", "");
    let r = caught("", &body, 32);
    says(
        &r,
        CheckKind::Synccheck,
        "lanes 0-15 of warp 0 arrived, but lanes 16-31",
    );
    assert!(
        r.to_string().contains("lane 16 and others like it exited"),
        "{r}"
    );

    // Lanes 16-31 wait at a barrier instead: a deadlock, reported.
    let shfl = "shfl.sync.bfly.b32 %r1, %r0, 1, 31, 0xffffffff;";
    let body = low_half_runs(shfl, "    bar.sync 0;\n");
    let r = caught("", &body, 32);
    says(&r, CheckKind::Synccheck, "never reach it");
    assert!(r.to_string().contains("wait at bar.sync"), "{r}");
}

#[test]
fn shuffle_reading_a_lane_outside_the_mask_is_caught() {
    let body = low_half_runs("shfl.sync.bfly.b32 %r1, %r0, 16, 31, 0x0000ffff;", "");
    let r = caught("", &body, 32);
    says(&r, CheckKind::Synccheck, "reads lane 16");
}

#[test]
fn lane_outside_its_own_mask_is_caught() {
    let body = "    shfl.sync.bfly.b32 %r1, %r0, 1, 31, 0x0000ffff;\n";
    let r = caught("", body, 32);
    says(&r, CheckKind::Synccheck, "does not include the lane itself");
}

#[test]
fn read_of_unwritten_shared_memory_is_caught_by_initcheck() {
    let body = own_word("tile")
        + "
    setp.lt.u32 %p1, %r0, 32;
    @%p1 st.shared.u32 [%r3], %r0;
    bar.sync 0;
    ld.shared.u32 %r4, [%r3];
";
    let r = caught(TILE, &body, 64);
    assert_eq!(r.kind, CheckKind::Initcheck);
    assert_eq!(r.thread, Some([32, 0, 0]));
    assert_eq!(r.address, Some(128));
    assert_eq!(r.tensor.as_deref(), Some("tile"));
}

#[test]
fn a_loop_that_never_ends_hits_the_step_limit() {
    let body = "
$spin:
    add.u32 %r1, %r1, 1;
    bra.uni $spin;
";
    let opts = LaunchOptions {
        max_steps: 10_000,
        ..LaunchOptions::default()
    };
    let err = run_with(&kernel("", body), 32, &[0], 1, &opts)
        .map(|_| ())
        .unwrap_err();
    let r = report(err);
    says(&r, CheckKind::StepLimit, "more than 10000 instructions");
    // The library names its own limit, never a command-line flag.
    assert!(
        r.message.contains("LaunchOptions::max_steps"),
        "{}",
        r.message
    );
    assert!(!r.message.contains("--"), "{}", r.message);
}

#[test]
fn the_lowest_failing_cta_is_reported_whatever_the_thread_count() {
    // CTAs 5 and up read past the end of `in`.
    let ptx = kernel(
        "",
        "
    mov.u32 %r1, %ctaid.x;
    shl.b32 %r2, %r1, 5;
    add.u32 %r3, %r2, %r0;
    mul.wide.u32 %rd10, %r3, 4;
    add.s64 %rd11, %rd2, %rd10;
    ld.global.u32 %r4, [%rd11];
",
    );
    let module = Module::parse(&ptx).expect("parses");
    for threads in [1, 2, 4] {
        let mut dev = Device::new();
        let out = dev.alloc("out", 4).expect("alloc");
        let inp = dev.alloc("in", 5 * 32 * 4).expect("alloc");
        let opts = LaunchOptions {
            threads,
            ..LaunchOptions::default()
        };
        let err = dev
            .launch(
                Launch::new(&module, "k", [16, 1, 1], [32, 1, 1]),
                &[KernelArg::Buffer(out), KernelArg::Buffer(inp)],
                &opts,
                None,
            )
            .unwrap_err();
        assert_eq!(report(err).cta, [5, 0, 0], "with {threads} threads");
    }
}

/// Every thread stores `value` to word `warp` of `tile` (each warp its own
/// word, as Triton's reductions do after a warp butterfly), then after a
/// barrier thread 0 sums the words.
fn one_word_per_warp(value: &str) -> String {
    format!(
        "    mov.u32 %r2, tile;
    shr.u32 %r4, %r0, 5;
    shl.b32 %r4, %r4, 2;
    add.u32 %r3, %r2, %r4;
    .loc 1 9 5
    st.shared.u32 [%r3], {value};
    bar.sync 0;
    ld.shared.u32 %r5, [%r2];
    ld.shared.u32 %r6, [%r2+4];
    add.u32 %r5, %r5, %r6;
    st.global.u32 [%rd4], %r5;
"
    )
}

#[test]
fn threads_storing_the_same_value_to_one_word_do_not_race() {
    // The value is the same in every thread of the CTA: no hazard, as
    // compute-sanitizer's racecheck reports it only at INFO level
    // ("identical data writes").
    let out = run_n(TILE, &one_word_per_warp("7"), 64, &[0], 1);
    assert!(out[0].iter().all(|&v| v == 14), "{:?}", out[0]);
    // `%ntid.x` is the same in every thread too, and so a register.
    let body = "    mov.u32 %r7, %ntid.x;\n".to_string() + &one_word_per_warp("%r7");
    let out = run_n(TILE, &body, 64, &[0], 1);
    assert!(out[0].iter().all(|&v| v == 128), "{:?}", out[0]);
}

#[test]
fn threads_storing_different_values_to_one_word_race() {
    // Each thread's own index: lane 1 overwrites lane 0's value.
    let r = caught(TILE, &one_word_per_warp("%r0"), 64);
    says(&r, CheckKind::Racecheck, "write-after-write");
    assert_eq!(r.thread, Some([1, 0, 0]));
    assert!(r.to_string().contains("at t.pho:9:5"), "{r}");
}

/// A `phobos.bounds` note (what Phobos writes after every shared access of
/// a buffer) bounds the instruction's accesses to the buffer's bytes inside
/// the `.shared` array: the second half of `buf` is another buffer.
#[test]
fn a_shared_access_outside_its_bounds_note_is_caught() {
    let decls = "    .shared .align 4 .b8 buf[256];";
    let body = own_word("buf") + "    st.shared.u32 [%r3], %r0; // phobos.bounds low buf 0 128\n";
    let r = caught(decls, &body, 64);
    says(
        &r,
        CheckKind::Memcheck,
        "out-of-bounds shared store of 4 bytes: outside `low`, which has 128 bytes",
    );
    assert_eq!(r.thread, Some([32, 0, 0]));
    assert_eq!(r.tensor.as_deref(), Some("low"));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("bytes 128..132 of `low` (4 bytes past its end)")),
        "{r}"
    );
    // Within the note's bytes, and without a note, the store is fine.
    run_n(decls, &body, 32, &[0], 1);
    let plain = own_word("buf") + "    st.shared.u32 [%r3], %r0;\n";
    run_n(decls, &plain, 64, &[0], 1);
}

#[test]
fn a_malformed_bounds_note_is_a_parse_error() {
    let decls = "    .shared .align 4 .b8 buf[256];";
    for (note, says) in [
        (
            "phobos.bounds low buf 0",
            "`phobos.bounds NAME SYMBOL START END`",
        ),
        ("phobos.bounds low buf 9 8", "with START <= END"),
        (
            "phobos.bounds low buf x 8",
            "`phobos.bounds NAME SYMBOL START END`",
        ),
        (
            "phobos.bounds low nowhere 0 8",
            "names `nowhere`, which is no shared array",
        ),
    ] {
        let body = own_word("buf") + &format!("    st.shared.u32 [%r3], %r0; // {note}\n");
        let err = Module::parse(&kernel(decls, &body))
            .map(|_| ())
            .unwrap_err();
        assert!(err.to_string().contains(says), "{note}: {err}");
    }
}
