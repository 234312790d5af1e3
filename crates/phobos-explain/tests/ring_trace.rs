//! The `cp.async` ring of a `stages S` loop: the trace carries each ring
//! (its loop, stage count, and each staged tile's stages on the byte
//! ruler), and what the page draws from it — trip `i` reads stage `i % S`,
//! its copies fill stage `(i + S - 1) % S`, the prologue fills stages
//! `0 .. S-2` — is checked against the shared bytes the simulator saw each
//! step touch, so the drawing cannot drift from the emitted PTX.

use phobos_explain::{AccessKind, Ring, Step, Trace};

#[path = "support/kernels.rs"]
mod kernels;

use kernels::line_of;

/// `mma_gemm_staged` (3 stages, K in steps of 32) with K = 128: the ring's
/// prologue, four trips and two copies issued past the end.
fn staged_trace(arch: u32) -> (Trace, String) {
    kernels::gemm_trace("mma_gemm_staged", arch, [0, 0, 0], (64, 64, 128))
}

/// The stages of the ring's tiles that `step`'s shared accesses of `kind`
/// touch, as `(tile, stage)`.
fn stages_touched(r: &Ring, step: &Step, kind: AccessKind) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    for touch in step.shared.iter().filter(|t| t.kind == kind) {
        for range in &touch.ranges {
            for b in &r.buffers {
                for st in 0..r.stages {
                    let [lo, hi] = r.stage_range(b, st);
                    let hit = (b.name.clone(), st);
                    if range[0] < hi && range[1] > lo && !out.contains(&hit) {
                        out.push(hit);
                    }
                }
            }
        }
    }
    out.sort();
    out
}

fn trip(r: &Ring, step: &Step) -> Option<u32> {
    step.iterations
        .iter()
        .find(|i| i.r#loop == r.r#loop)
        .map(|i| i.iteration)
}

#[test]
fn the_trace_has_the_ring_and_its_stages_on_the_ruler() {
    let (t, src) = staged_trace(80);
    assert_eq!(t.rings.len(), 1, "{:?}", t.rings);
    let r = &t.rings[0];
    assert_eq!(r.stages, 3);
    assert_eq!(r.line, line_of(&src, "stages 3"));
    assert_eq!(t.loops[r.r#loop].line, r.line);
    let copies = vec![line_of(&src, "var a = A"), line_of(&src, "var w = W")];
    assert_eq!(r.copy_lines, copies);
    // 64 rows of 32 f16, each padded by 16 bytes for ldmatrix: 5120 bytes
    // a stage, three stages per tile, inside the planned buffer.
    for (b, name) in r.buffers.iter().zip(["a", "w"]) {
        assert_eq!(b.name, name);
        assert_eq!(b.stage_bytes, 64 * 40 * 2);
        let planned = t.shared.buffers.iter().find(|p| p.name == name).unwrap();
        assert_eq!(
            (planned.offset, planned.bytes),
            (b.offset, 3 * b.stage_bytes)
        );
    }
    // sm_75 has no cp.async: the loop copies plainly, no ring is drawn.
    let (t75, _) = staged_trace(75);
    assert!(t75.rings.is_empty());
}

#[test]
fn each_trip_fills_and_reads_the_stages_the_page_draws() {
    let (t, src) = staged_trace(80);
    let r = &t.rings[0];
    let dot = line_of(&src, "dot(a, trans(w))");
    let cta = t.picked_cta();
    let (mut prologue, mut fills, mut reads) = (Vec::new(), Vec::new(), Vec::new());
    for s in &cta.steps {
        let writes = stages_touched(r, s, AccessKind::Write);
        match (trip(r, s), r.copy_lines.contains(&s.line)) {
            (None, false) if s.line == r.line && !writes.is_empty() => {
                assert!(
                    s.readout.iter().any(|l| l.contains("prologue")),
                    "{:?}",
                    s.readout
                );
                prologue.extend(writes)
            }
            (Some(i), true) if !writes.is_empty() => {
                let want = r.fill_stage(i);
                assert!(writes.iter().all(|w| w.1 == want), "trip {i}: {writes:?}");
                assert!(
                    s.readout
                        .iter()
                        .any(|l| l.contains(&format!("stage {want} of 3"))),
                    "{:?}",
                    s.readout
                );
                fills.push(i);
            }
            (Some(i), _) if s.line == dot => {
                let read = stages_touched(r, s, AccessKind::Read);
                let want = r.read_stage(i);
                assert_eq!(
                    read,
                    vec![("a".to_string(), want), ("w".to_string(), want)],
                    "trip {i}"
                );
                reads.push(i);
            }
            _ => {}
        }
    }
    prologue.sort();
    prologue.dedup();
    let want: Vec<(String, u32)> = [("a", 0), ("a", 1), ("w", 0), ("w", 1)]
        .iter()
        .map(|(n, st)| (n.to_string(), *st))
        .collect();
    assert_eq!(prologue, want, "the prologue fills stages 0 and 1");
    // Four trips read; the first two trips' copies (for trips 2 and 3) are
    // real, the last two's are past the end and not issued.
    assert_eq!(reads, vec![0, 1, 2, 3]);
    fills.dedup();
    assert_eq!(fills, vec![0, 1], "the copies of a and w of trips 0 and 1");
    // The top of a trip (the first copy's line) names the wait and the
    // barrier.
    let head = cta
        .steps
        .iter()
        .find(|s| {
            s.line == r.copy_lines[0]
                && trip(r, s) == Some(1)
                && s.kind == phobos_explain::StepKind::Statement
        })
        .expect("the second trip's top");
    let said = head.readout.join(" ");
    assert!(
        said.contains("cp.async.wait_group 1") && said.contains("one barrier"),
        "{said}"
    );
}

#[test]
fn the_page_carries_the_ring_panel() {
    let (t, _) = staged_trace(80);
    let page = phobos_explain::html::render(&t);
    assert!(page.contains("id=\"rings\"") && page.contains("drawRings"));
    assert!(
        page.contains("\"rings\":[{"),
        "the trace's rings are embedded"
    );
}
