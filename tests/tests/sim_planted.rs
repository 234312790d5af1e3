//! Planted bugs, each caught by the right simulator check, on kernels
//! compiled from `.pho`:
//!
//! - memcheck: a missing bounds guard (an out-of-bounds global read, and an
//!   out-of-bounds global store);
//! - synccheck: a barrier under lane-divergent control, and a warp shuffle
//!   that only some lanes of its member mask reach (the front end rejects
//!   both in source, so the emitted PTX is edited to branch around them on
//!   odd lanes);
//! - initcheck: a read of a tile that was never written (the language
//!   always fills a tile, so the tile copy's shared stores are deleted
//!   from the PTX);
//! - racecheck: `staged_matvec` with the barrier after its tile copy
//!   deleted from the PTX, so lanes read `xs` elements other warps are
//!   still to write.
//!
//! Each report must name the check, the kernel, the `.pho` line, the CTA
//! and thread and, for memory, the tensor or shared buffer. The expected
//! line is found in the kernel's source text by a snippet of its
//! statement, so that editing a corpus file cannot leave a stale number
//! here. Each planted kernel also has its unplanted twin run clean, so a
//! check that fires on everything would fail here too.

use phobos_conformance::sim_support::{cdiv, Case, Outcome};
use phobos_conformance::{corpus_file, line_of};
use phobos_sim::{CheckKind, CheckReport, SimError, Space};

/// Runs `case`, expecting a check report.
fn report(case: Case, grid: [u32; 3]) -> CheckReport {
    case.report(grid)
}

fn clean(case: Case, grid: [u32; 3]) -> Outcome {
    case.run(grid)
}

/// Replaces the PTX of a case's kernel.
fn with_ptx(mut case: Case, edit: impl Fn(&str) -> String) -> Case {
    let new = edit(&case.kernel.ptx);
    assert_ne!(new, case.kernel.ptx, "the PTX edit changed nothing");
    case.kernel.ptx = new;
    case
}

/// `case` with the line `instr` deleted from its PTX, which must hold
/// `what` exactly once: the deleted line is the only one of its kind.
fn without_the_one(case: Case, what: &str, instr: &str) -> Case {
    with_ptx(case, |p| {
        assert_eq!(p.matches(what).count(), 1, "one {what}:\n{p}");
        p.replace(&format!("\t{instr}\n"), "")
    })
}

/// `case` run on one host thread.
fn one_thread(mut case: Case) -> Case {
    case.opts.threads = 1;
    case
}

/// The seed page's staged matvec, 8 rows of 256.
fn staged_matvec() -> Case {
    Case::corpus("staged_matvec").dims(&[("N", 8), ("K", 256)])
}

/// Asserts that `r` is about shared memory and names the buffer.
fn assert_names_shared(r: &CheckReport) {
    assert_eq!(r.space, Some(Space::Shared), "{r}");
    assert!(
        r.tensor.is_some(),
        "the report names the shared buffer:\n{r}"
    );
}

/// A line of a kernel's source file, as a check report names it.
#[derive(Debug, PartialEq)]
struct At {
    file: String,
    line: u32,
}

/// The only line of `src`, compiled as file `file`, that contains `marker`.
fn source_at(file: &str, src: &str, marker: &str) -> At {
    At {
        file: file.to_string(),
        line: line_of(src, marker),
    }
}

/// The only line of corpus file `tests/in/{stem}.pho` that contains
/// `marker`.
fn corpus_at(stem: &str, marker: &str) -> At {
    source_at(&format!("{stem}.pho"), &corpus_file(stem).src, marker)
}

/// The source line a report names.
fn at(r: &CheckReport) -> At {
    let s = r
        .source
        .as_ref()
        .unwrap_or_else(|| panic!("the report has no source line:\n{r}"));
    At {
        file: s.file.clone(),
        line: s.line,
    }
}

/// Asserts that `r` is a `kind` report of kernel `kernel`, at `want`.
fn assert_caught_at(r: &CheckReport, kind: CheckKind, kernel: &str, want: &At) {
    assert_eq!(r.kind, kind, "{r}");
    assert_eq!(r.kernel, kernel, "{r}");
    assert_eq!(&at(r), want, "{r}");
}

const NO_GUARD: &str = "@launch(128)
kernel no_guard(A: tensor<f32>[N], B: tensor<f32>[N], C: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  C[i] = A[i] + B[i]
}
";

#[test]
fn a_missing_bounds_guard_is_an_out_of_bounds_read() {
    let n = 1000;
    let case = || Case::source(NO_GUARD, "no_guard.pho", "no_guard").dims(&[("N", n)]);
    // The grid overshoots N: thread 104 of CTA 7 is the first at i = N.
    let r = report(case(), [cdiv(n as usize, 128), 1, 1]);
    let read = source_at("no_guard.pho", NO_GUARD, "C[i] = A[i] + B[i]");
    assert_caught_at(&r, CheckKind::Memcheck, "no_guard", &read);
    assert_eq!(r.cta, [7, 0, 0], "{r}");
    assert_eq!(r.thread, Some([104, 0, 0]), "{r}");
    assert!(r.instruction.starts_with("ld.global"), "{r}");
    assert_eq!(r.space, Some(Space::Global), "{r}");
    // The first load of the line is A[i]; the address is A's end.
    assert_eq!(r.tensor.as_deref(), Some("A"), "{r}");
    let text = r.to_string();
    assert!(
        text.starts_with("memcheck: out-of-bounds global load"),
        "{text}"
    );
    // Exactly covering N, the same kernel runs clean.
    clean(case().dims(&[("N", 1024)]), [8, 1, 1]);
}

const NO_GUARD_STORE: &str = "@launch(128)
kernel short_out(A: tensor<f32>[N], C: tensor<f32>[M]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    C[i] = 2.0 * A[i]
  }
}
";

#[test]
fn a_guard_on_the_wrong_tensor_is_an_out_of_bounds_store() {
    let case = |m| {
        Case::source(NO_GUARD_STORE, "short_out.pho", "short_out").dims(&[("N", 256), ("M", m)])
    };
    // C has 200 elements; thread 72 of CTA 1 stores C[200].
    let r = report(case(200), [2, 1, 1]);
    let store = source_at("short_out.pho", NO_GUARD_STORE, "C[i] = 2.0 * A[i]");
    assert_caught_at(&r, CheckKind::Memcheck, "short_out", &store);
    assert_eq!(r.cta, [1, 0, 0], "{r}");
    assert_eq!(r.thread, Some([72, 0, 0]), "{r}");
    assert!(r.instruction.starts_with("st.global"), "{r}");
    assert_eq!(r.tensor.as_deref(), Some("C"), "{r}");
    assert!(r.to_string().contains("out-of-bounds global store"), "{r}");
    clean(case(256), [2, 1, 1]);
}

/// Puts the first `instr` line of the PTX under a branch that odd threads
/// take around it.
fn skip_on_odd_threads(ptx: &str, instr: &str) -> String {
    let mut out = String::new();
    let mut declared = false;
    let mut done = false;
    for line in ptx.lines() {
        let t = line.trim_start();
        if !done && t.starts_with(instr) {
            out.push_str("\tmov.u32 %planted_r, %tid.x;\n");
            out.push_str("\tand.b32 %planted_r, %planted_r, 1;\n");
            out.push_str("\tsetp.ne.u32 %planted_p, %planted_r, 0;\n");
            out.push_str("\t@%planted_p bra $planted_skip;\n");
            out.push_str(line);
            out.push_str("\n$planted_skip:\n");
            done = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if !declared && t.starts_with(".reg") {
            out.push_str("\t.reg .pred %planted_p;\n\t.reg .b32 %planted_r;\n");
            declared = true;
        }
    }
    assert!(done, "no `{instr}` in the PTX");
    out
}

const PLAIN: &str = "@launch(128)
kernel plain(A: tensor<f32>[N], C: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    C[i] = A[i] + 1.0
  }
}
";

#[test]
fn a_barrier_under_lane_divergent_control_is_a_synccheck_error() {
    // A barrier planted before the store `C[i] = A[i] + 1.0`, which odd
    // threads branch around: the even threads wait for them forever.
    let case = || Case::source(PLAIN, "plain.pho", "plain").dims(&[("N", 256)]);
    clean(case(), [2, 1, 1]);
    let planted = with_ptx(case(), |p| {
        let p = p.replacen("\tst.global", "\tbar.sync 0;\n\tst.global", 1);
        skip_on_odd_threads(&p, "bar.sync")
    });
    let r = report(planted, [2, 1, 1]);
    let store = source_at("plain.pho", PLAIN, "C[i] = A[i] + 1.0");
    assert_caught_at(&r, CheckKind::Synccheck, "plain", &store);
    assert!(r.thread.is_some(), "{r}");
    assert!(r.instruction.starts_with("bar"), "{r}");
    assert!(
        r.notes.iter().any(|n| n.contains("thread (1, 0, 0)")),
        "the report names a thread that never arrived:\n{r}"
    );
}

#[test]
fn a_cta_collective_barrier_skipped_by_odd_threads_is_caught() {
    // row_sum's CTA collective (`sum<over ctx.thread>`) exchanges warp
    // totals through shared scratch behind a barrier; odd threads now
    // branch around it. They then read the scratch that even threads wrote
    // with no barrier between: racecheck fires first. With racecheck off,
    // the barrier the odd threads never reach is still reported, by
    // synccheck.
    let case = || one_thread(Case::corpus("row_sum").dims(&[("N", 2), ("M", 300)]));
    clean(case(), [2, 1, 1]);
    let planted = || with_ptx(case(), |p| skip_on_odd_threads(p, "bar.sync"));
    let collective = corpus_at("row_sum", "sum<over ctx.thread>(acc)");
    let r = report(planted(), [2, 1, 1]);
    assert_caught_at(&r, CheckKind::Racecheck, "row_sum", &collective);
    assert_eq!(r.cta, [0, 0, 0], "{r}");
    assert_eq!(r.tensor.as_deref(), Some("row_sum$smem"), "{r}");
    let mut unchecked = planted();
    unchecked.opts.checks = false;
    let r = report(unchecked, [2, 1, 1]);
    assert_caught_at(&r, CheckKind::Synccheck, "row_sum", &collective);
    assert_eq!(r.cta, [0, 0, 0], "{r}");
    assert!(
        r.notes.iter().any(|n| n.contains("thread (1, 0, 0)")),
        "{r}"
    );
}

#[test]
fn a_shuffle_that_odd_lanes_skip_is_a_synccheck_error() {
    // lanes_matvec's butterfly (`sum<over ctx.lane>`) with its first
    // shfl.sync skipped by odd lanes: the full member mask never arrives.
    let case = || Case::corpus("lanes_matvec").dims(&[("N", 8), ("K", 256)]);
    clean(case(), [2, 1, 1]);
    let r = report(
        with_ptx(case(), |p| skip_on_odd_threads(p, "shfl.sync")),
        [2, 1, 1],
    );
    let butterfly = corpus_at("lanes_matvec", "sum<over ctx.lane>(acc)");
    assert_caught_at(&r, CheckKind::Synccheck, "lanes_matvec", &butterfly);
    assert!(r.instruction.starts_with("shfl.sync"), "{r}");
    assert!(r.thread.is_some(), "{r}");
}

#[test]
fn a_read_of_a_tile_never_written_is_an_initcheck_error() {
    // staged_matvec with the tile copy's shared stores deleted: the loop
    // body reads `xs`, which no thread wrote.
    let case = || one_thread(staged_matvec());
    clean(case(), [2, 1, 1]);
    let planted = with_ptx(case(), |p| {
        p.lines()
            .filter(|l| !l.trim_start().starts_with("st.shared"))
            .map(|l| format!("{l}\n"))
            .collect()
    });
    let r = report(planted, [2, 1, 1]);
    assert_caught_at(
        &r,
        CheckKind::Initcheck,
        "staged_matvec__K256",
        &staged_read(),
    );
    assert_eq!(r.cta, [0, 0, 0], "{r}");
    assert!(r.thread.is_some(), "{r}");
    assert!(r.instruction.starts_with("ld.shared"), "{r}");
    assert_names_shared(&r);
    assert_in_tile(&planted_plan(), &r, "xs");
}

#[test]
fn a_tile_copy_without_its_barrier_is_a_race() {
    // staged_matvec with the barrier after its tile copy
    // `var xs = x[0 :+ 1, :]` deleted: the loop body reads elements of `xs`
    // that other threads write.
    let case = || one_thread(staged_matvec());
    clean(case(), [2, 1, 1]);
    let planted = without_the_one(case(), "bar.sync", "bar.sync 0;");
    let r = report(planted, [2, 1, 1]);
    assert_eq!(r.kind, CheckKind::Racecheck, "{r}");
    assert_eq!(r.kernel, "staged_matvec__K256");
    let (copy, read) = (staged_copy(), staged_read());
    let here = at(&r);
    assert!(here == copy || here == read, "{r}");
    assert_eq!(r.cta, [0, 0, 0], "{r}");
    assert!(r.thread.is_some(), "{r}");
    assert_names_shared(&r);
    // One side of the race is the copy, the other the read, named in a
    // note.
    let other = if here == copy { read } else { copy };
    let other = format!("{}:{}:", other.file, other.line);
    assert!(r.notes.iter().any(|n| n.contains(&other)), "{r}");
    assert_in_tile(&planted_plan(), &r, "xs");
}

/// staged_matvec's tile copy `var xs = x[0 :+ 1, :]`.
fn staged_copy() -> At {
    corpus_at("staged_matvec", "var xs = x[")
}

/// staged_matvec's read of the tile, in its loop body.
fn staged_read() -> At {
    corpus_at("staged_matvec", "acc += sum(W[row, at :+ 4] * xs[")
}

/// staged_matvec's shared plan.
fn planted_plan() -> Vec<phobos_core::meta::SharedBuffer> {
    staged_matvec().variant().shared_plan.clone()
}

/// The report's shared address falls inside the planned buffer `tile`.
fn assert_in_tile(plan: &[phobos_core::meta::SharedBuffer], r: &CheckReport, tile: &str) {
    let b = plan
        .iter()
        .find(|b| b.name == tile)
        .unwrap_or_else(|| panic!("no buffer {tile} in {plan:?}"));
    let addr = r.address.expect("a shared address");
    assert!(
        (u64::from(b.offset)..u64::from(b.offset + b.bytes)).contains(&addr),
        "shared offset {addr:#x} is outside `{tile}` ({b:?}):\n{r}"
    );
}

#[test]
fn a_launch_that_breaks_aligned_is_a_misaligned_vector_access() {
    // run_store promises @aligned(K = 4) and moves each 4-run with one
    // 16-byte access. With K = 66 the rows start 8 bytes off: thread 16 of
    // CTA 0 (row 1, k = 0) makes the first misaligned access, in the run
    // store `Y[r, k :+ 4] = X[r, k :+ 4] * alpha + 1.0`.
    let case = |k| {
        Case::corpus("run_store")
            .dims(&[("N", 4), ("K", k)])
            .scalar("alpha", phobos_conformance::sim_support::Scalar::F32(0.5))
    };
    clean(case(64), [1, 1, 1]);
    let r = report(case(66).break_aligned(), [1, 1, 1]);
    let run = corpus_at("run_store", "Y[r, k :+ 4] = X[r, k :+ 4]");
    assert_caught_at(&r, CheckKind::Memcheck, "run_store", &run);
    assert_eq!(r.cta, [0, 0, 0], "{r}");
    assert_eq!(r.thread, Some([16, 0, 0]), "{r}");
    assert!(r.message.contains("misaligned"), "{r}");
    assert!(r.instruction.contains("v4"), "{r}");
    assert_eq!(r.tensor.as_deref(), Some("X"), "{r}");
}

// The kernel is checked for values in `sim_behaviour.rs`; here its kept
// barriers include write-after-read ones before reuse.
use phobos_conformance::kernels::REUSE;

/// The PTX with only the `n`th `bar.sync` (0-based) deleted.
fn without_barrier(ptx: &str, n: usize) -> String {
    let mut seen = 0;
    ptx.lines()
        .filter(|l| {
            if l.trim_start().starts_with("bar.sync") {
                seen += 1;
                seen - 1 != n
            } else {
                true
            }
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn every_barrier_the_backend_keeps_is_needed() {
    // Deleting any one barrier the compiler kept must let racecheck (or
    // initcheck, for a read that now runs before any write) see the hazard
    // the barrier's recorded reason names.
    //
    // Not listed: tile_ragged. Its copies go element by element (M is not
    // provably aligned), thread k taking elements k, k + 128, ..., exactly
    // the elements its thread-strided loop then reads and writes, so its two
    // barriers are conservative: correct, but no hazard crosses them.
    let cases: Vec<(Case, [u32; 3])> = vec![
        (staged_matvec(), [2, 1, 1]),
        (
            Case::corpus("row_sum").dims(&[("N", 2), ("M", 300)]),
            [2, 1, 1],
        ),
        (Case::corpus("cta_forms").dims(&[("G", 1)]), [1, 1, 1]),
        (Case::corpus("cta_sum_loop").dims(&[("R", 3)]), [1, 1, 1]),
        (
            Case::corpus("cta_softmax").dims(&[("N", 1), ("M", 300)]),
            [1, 1, 1],
        ),
        (Case::corpus("tile_reuse"), [1, 1, 1]),
        (Case::corpus("tile_write"), [1, 1, 1]),
        (
            Case::corpus("tile_transpose").dims(&[("N", 40), ("M", 40)]),
            [2, 2, 1],
        ),
        (Case::corpus("tile_f16_halo").dims(&[("N", 200)]), [2, 1, 1]),
        (
            Case::source(REUSE, "reuse.pho", "reuse").dims(&[("R", 3)]),
            [1, 1, 1],
        ),
    ];
    let mut failures = Vec::new();
    for (case, grid) in cases {
        let ptx = case.kernel.ptx.clone();
        let count = ptx.matches("bar.sync").count();
        let kept: Vec<_> = case
            .variant()
            .barriers
            .iter()
            .filter(|b| b.kept)
            .cloned()
            .collect();
        assert_eq!(
            count,
            kept.len(),
            "{}: bar.sync count vs kept barriers",
            case.meta().name
        );
        for (n, barrier) in kept.iter().enumerate() {
            let mut c = one_thread(case.clone());
            c.kernel.ptx = without_barrier(&ptx, n);
            let name = format!(
                "{} without barrier {n} (line {}: {})",
                case.meta().name,
                barrier.line,
                barrier.reason
            );
            match c.launch(grid) {
                Ok(_) => failures.push(format!("{name}: ran clean")),
                Err(b) => match &b.1 {
                    SimError::Check(r)
                        if matches!(r.kind, CheckKind::Racecheck | CheckKind::Initcheck) => {}
                    e => failures.push(format!("{name}: {e}")),
                },
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `mma_gemm_staged` (a 3-stage `cp.async` ring) for sm_80, one CTA, four
/// trips of its K loop.
fn staged_gemm() -> Case {
    one_thread(Case::corpus_for("mma_gemm_staged", 80).dims(&[("M", 64), ("N", 64), ("K", 128)]))
}

#[test]
fn a_staged_loop_without_its_wait_group_reads_copies_in_flight() {
    // Each trip waits for its own stage (`cp.async.wait_group 1`) before
    // the barrier; without the wait, the ldmatrix of `dot(a, trans(w))` reads
    // bytes whose cp.async has not landed.
    clean(staged_gemm(), [1, 1, 1]);
    let planted = without_the_one(
        staged_gemm(),
        "cp.async.wait_group 1;",
        "cp.async.wait_group 1;",
    );
    let r = report(planted, [1, 1, 1]);
    let dot = corpus_at("mma_gemm_staged", "dot(a, trans(w))");
    assert_caught_at(&r, CheckKind::Racecheck, "mma_gemm_staged", &dot);
    assert_eq!(r.space, Some(Space::Shared), "{r}");
    assert!(r.message.contains("cp.async"), "{r}");
}

#[test]
fn a_staged_loop_without_its_barrier_is_a_race() {
    // The ring's one barrier per trip orders the other warps' copies
    // (landed at their waits) before this warp's ldmatrix, and this
    // trip's reads before the next trip's copies into the same stage.
    clean(staged_gemm(), [1, 1, 1]);
    // One kept barrier, the ring's.
    let planted = without_the_one(staged_gemm(), "bar.sync", "bar.sync 0;");
    let r = report(planted, [1, 1, 1]);
    assert_eq!(r.kind, CheckKind::Racecheck, "{r}");
    assert_eq!(r.kernel, "mma_gemm_staged");
    assert_names_shared(&r);
}

#[test]
fn every_barrier_a_staged_kernel_keeps_is_needed() {
    // As `every_barrier_the_backend_keeps_is_needed`, for the rings on
    // sm_80: the ring's barrier (and any other kept one) must guard a
    // hazard the simulator sees.
    let row_sum = one_thread(Case::corpus_for("staged_row_sum", 80).dims(&[("R", 64), ("L", 100)]));
    let cases = [(staged_gemm(), [1, 1, 1]), (row_sum, [1, 1, 1])];
    let mut failures = Vec::new();
    for (case, grid) in cases {
        let ptx = case.kernel.ptx.clone();
        let kept = case.variant().barriers.iter().filter(|b| b.kept).count();
        assert_eq!(ptx.matches("bar.sync").count(), kept, "{ptx}");
        assert!(kept >= 1);
        for n in 0..kept {
            let mut c = case.clone();
            c.kernel.ptx = without_barrier(&ptx, n);
            match c.launch(grid) {
                Err(b) if matches!(&b.1, SimError::Check(r) if r.kind == CheckKind::Racecheck) => {}
                Ok(_) => failures.push(format!(
                    "{} without barrier {n}: ran clean",
                    case.meta().name
                )),
                Err(b) => {
                    failures.push(format!("{} without barrier {n}: {}", case.meta().name, b.1))
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_ring_inside_an_outer_loop_keeps_the_barrier_before_each_prologue() {
    // The outer loop runs the ring twice: the second prologue rewrites
    // stages the first ring's last trips read, so the barrier before the
    // prologue is kept, and deleting it is a race.
    const NESTED: &str = "// needs: sm_80
@launch(64)
@aligned(L = 4)
kernel nested(X: tensor<f32>[R, L], y: tensor<f32>[1, R]) {
  var acc: f32 = 0.0
  for o in range(0, 2) {
    for k in range(0, L, 32) stages 2 {
      var t = X[0 :+ 64, k :+ 32]
      for j in range(0, 32) {
        acc += t[63 - ctx.thread, j]
      }
    }
  }
  y[0, ctx.thread] = acc
}
";
    let case =
        || one_thread(Case::source(NESTED, "nested.pho", "nested").dims(&[("R", 64), ("L", 96)]));
    clean(case(), [1, 1, 1]);
    let kept = case().variant().barriers.iter().filter(|b| b.kept).count();
    assert_eq!(kept, 2, "the prologue's and the ring's");
    let ptx = case().kernel.ptx.clone();
    let mut planted = case();
    planted.kernel.ptx = without_barrier(&ptx, 0);
    let r = report(planted, [1, 1, 1]);
    assert_eq!(r.kind, CheckKind::Racecheck, "{r}");
}

/// `mma_gemm_f16` with `@aligned(K = 8)` for sm_90a: `wgmma` reads tiles
/// the threads copied with vector loads and stores (no `stages`), so each
/// thread fences its writes (`fence.proxy.async`) before the barrier that
/// hands them to the other warps.
fn wgmma_plain_gemm() -> Case {
    one_thread(
        Case::corpus_aligned_for("mma_gemm_f16", phobos_core::arch::SM_90A, "K = 8").dims(&[
            ("M", 64),
            ("N", 64),
            ("K", 64),
        ]),
    )
}

/// `mma_gemm_staged` for sm_90a: its ring on TMA (`cp.async.bulk.tensor`
/// into each stage, an mbarrier per stage), read by `wgmma`.
fn tma_gemm() -> Case {
    one_thread(
        Case::corpus_for("mma_gemm_staged", phobos_core::arch::SM_90A).dims(&[
            ("M", 64),
            ("N", 64),
            ("K", 128),
        ]),
    )
}

#[test]
fn wgmma_operands_written_without_the_proxy_fence_are_a_race() {
    assert!(wgmma_plain_gemm().kernel.ptx.contains("wgmma.mma_async"));
    clean(wgmma_plain_gemm(), [1, 1, 1]);
    let planted = with_ptx(wgmma_plain_gemm(), |p| {
        p.replace("\tfence.proxy.async.shared::cta;\n", "")
    });
    let r = report(planted, [1, 1, 1]);
    assert_eq!(r.kind, CheckKind::Racecheck, "{r}");
    assert_eq!(r.kernel, "mma_gemm_f16");
    assert!(r.message.contains("unfenced"), "{r}");
}

#[test]
fn tma_stages_overwritten_before_wait_group_are_a_race() {
    // Each trip retires its products (`wgmma.wait_group 0`) before the
    // next trip's barrier; without it, the next trip's TMA copy into the
    // stage refills bytes a product in flight still reads.
    assert!(tma_gemm().kernel.ptx.contains("cp.async.bulk.tensor"));
    clean(tma_gemm(), [1, 1, 1]);
    let planted = with_ptx(tma_gemm(), |p| {
        p.replace("\twgmma.wait_group.sync.aligned 0;\n", "")
    });
    let r = report(planted, [1, 1, 1]);
    assert_eq!(r.kind, CheckKind::Racecheck, "{r}");
    assert_eq!(r.kernel, "mma_gemm_staged");
    assert!(r.message.contains("in-flight wgmma.mma_async"), "{r}");
}

#[test]
fn a_stage_read_before_its_mbarrier_phase_completes_is_a_race() {
    // Without the trip's `mbarrier.try_wait.parity`, wgmma reads a stage
    // whose TMA copy has not landed.
    let planted = with_ptx(tma_gemm(), |p| {
        let mut out = String::new();
        for line in p.lines() {
            if line.contains("mbarrier.try_wait.parity") {
                out.push_str("\tsetp.eq.u32 %p11, 1, 1;\n");
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    });
    let r = report(planted, [1, 1, 1]);
    assert_eq!(r.kind, CheckKind::Racecheck, "{r}");
    assert_eq!(r.kernel, "mma_gemm_staged");
    assert!(r.message.contains("not yet delivered"), "{r}");
}

#[test]
fn a_tma_ring_waiting_on_the_wrong_parity_is_caught() {
    // The phase register starts at 1 so the first trip (stage 0) flips it
    // to 0; starting it at 0 waits on every stage's previous phase.
    let planted = with_ptx(tma_gemm(), |p| {
        let at = p
            .find("\tbar.sync 0;\n\tmov.u32 ")
            .expect("the phase register after the init");
        let (head, tail) = p.split_at(at);
        format!("{head}{}", tail.replacen(", 1;\n", ", 0;\n", 1))
    });
    // A fresh mbarrier's wait on parity 1 succeeds at once (the phase
    // before the first), so trip 0 reads its stage before TMA delivers it.
    let r = report(planted, [1, 1, 1]);
    assert_eq!(r.kind, CheckKind::Racecheck, "{r}");
    assert_eq!(r.kernel, "mma_gemm_staged");
    assert!(r.message.contains("not yet delivered"), "{r}");
}
