//! The `dot` step: the trace carries each accumulator tile with the warp
//! layout the compiler chose (`phobos_core::mma::WarpLayout`), the dot
//! step's shared reads (the `ldmatrix` reads on the byte ruler) fall on
//! both operand tiles, and the store step shows every warp writing exactly
//! the part of the accumulator the layout gives it — which checks the
//! layout the page draws against what the emitted PTX does in the
//! simulator.

use phobos_explain::{AccessKind, Trace};

#[path = "support/kernels.rs"]
mod kernels;

use kernels::line_of;

/// `mma_gemm_f16` (C = A · Wᵀ, 64 × 64 of C per CTA of 4 warps) at a
/// ragged size: 2 × 2 CTAs, the last row and column of CTAs partly masked.
fn gemm_trace(cta: [u32; 3]) -> (Trace, String) {
    kernels::gemm_trace("mma_gemm_f16", 80, cta, (77, 90, 53))
}

#[test]
fn the_trace_has_the_accumulator_and_its_warp_layout() {
    let (t, src) = gemm_trace([0, 0, 0]);
    assert_eq!(t.accumulators.len(), 1);
    let acc = &t.accumulators[0];
    assert_eq!((acc.name.as_str(), acc.rows, acc.cols), ("acc", 64, 64));
    assert_eq!(acc.warp_grid, [2, 2]);
    assert_eq!(acc.fragment, [16, 8]);
    // 2 x 4 fragments of four f32 registers each.
    assert_eq!(acc.registers_per_lane, 32);
    // The warps' parts cover the tile exactly once.
    let mut owner = vec![None; 64 * 64];
    for w in &acc.warp_tiles {
        for r in w.row..w.row + w.rows {
            for c in w.col..w.col + w.cols {
                let slot = &mut owner[(r * 64 + c) as usize];
                assert_eq!(*slot, None, "element ({r}, {c}) owned twice");
                *slot = Some(w.warp);
            }
        }
    }
    assert!(owner.iter().all(Option::is_some));
    let lines: Vec<u32> = ["zeros<f32>", "dot(a, trans(w))", "C[r :+ 64"]
        .iter()
        .map(|n| line_of(&src, n))
        .collect();
    assert_eq!(acc.lines, lines);
    assert_eq!(acc.dots.len(), 1);
    let d = &acc.dots[0];
    assert_eq!(
        (
            d.a.as_str(),
            d.b.as_str(),
            d.b_trans,
            d.operand.as_str(),
            d.k_step
        ),
        ("a", "w", true, "f16", 16)
    );
}

#[test]
fn the_dot_step_reads_both_operand_tiles_from_shared_memory() {
    let (t, src) = gemm_trace([0, 0, 0]);
    let line = line_of(&src, "dot(a, trans(w))");
    let buffer = |name: &str| {
        let b = t
            .shared
            .buffers
            .iter()
            .find(|b| b.name == name)
            .expect(name);
        (b.offset, b.offset + b.bytes)
    };
    let cta = t.picked_cta();
    let dots: Vec<_> = cta.steps.iter().filter(|s| s.line == line).collect();
    // K = 53 in steps of 32: two trips, one dot step each.
    assert_eq!(
        dots.len(),
        2,
        "{:?}",
        cta.steps.iter().map(|s| s.line).collect::<Vec<_>>()
    );
    for s in dots {
        for (name, (lo, hi)) in [("a", buffer("a")), ("w", buffer("w"))] {
            let read = s
                .shared
                .iter()
                .filter(|touch| touch.kind == AccessKind::Read)
                .flat_map(|touch| &touch.ranges)
                .any(|r| r[0] < hi && r[1] > lo);
            assert!(
                read,
                "the dot step reads tile {name} ({lo}..{hi}): {:?}",
                s.shared
            );
        }
        assert!(
            !s.shared.iter().any(|touch| touch.kind != AccessKind::Read),
            "a dot only reads shared memory"
        );
        let said = s.readout.join(" ");
        assert!(
            said.contains("mma.sync") && said.contains("ldmatrix") && said.contains("2 × 2 grid"),
            "{said}"
        );
    }
}

/// Every element a warp stores at the accumulator's store lies in the
/// part the layout gives that warp (relative to the CTA's origin), in
/// each traced CTA, the masked ones at the ragged edges included.
#[test]
fn each_warp_stores_the_part_the_layout_gives_it() {
    for cta in [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]] {
        let (t, src) = gemm_trace(cta);
        let acc = &t.accumulators[0];
        let line = line_of(&src, "C[r :+ 64");
        let c = t.tensor("C").expect("C");
        let cols = t.tensors[c].cols;
        let (r0, c0) = (u64::from(cta[0]) * 64, u64::from(cta[1]) * 64);
        let store = t
            .picked_cta()
            .steps
            .iter()
            .find(|s| s.line == line)
            .expect("the store step");
        let mut stored = 0;
        for b in store.boxes.iter().filter(|b| b.tensor == c) {
            assert_eq!(b.kind, AccessKind::Write);
            assert!(!b.approximate);
            let part = &acc.warp_tiles[b.warp as usize];
            for r in &b.ranges {
                for e in r[0]..r[1] {
                    let (row, col) = (e / cols - r0, e % cols - c0);
                    let inside = (u64::from(part.row)..u64::from(part.row + part.rows))
                        .contains(&row)
                        && (u64::from(part.col)..u64::from(part.col + part.cols)).contains(&col);
                    assert!(
                        inside,
                        "CTA {cta:?}: warp {} stored ({row}, {col}) outside {part:?}",
                        b.warp
                    );
                    stored += 1;
                }
            }
        }
        // C is 77 x 90: the CTA's box, cut at the tensor's edges.
        let want = (77u64.min(r0 + 64) - r0) * (90u64.min(c0 + 64) - c0);
        assert_eq!(stored, want, "CTA {cta:?}");
    }
}

/// The attention scores' first accumulator lights at its zeroing, its
/// `dot` and its store into the scratch tile `s`; an f16 accumulator
/// holds two elements to a register (16 per lane for 64 x 64 over 4
/// warps, not 32).
#[test]
fn the_panel_lights_an_accumulator_stored_into_a_shared_tile() {
    use phobos_explain::Input::{Random, Scalar};
    let inputs = vec![
        (
            "Q",
            Random {
                shape: vec![70, 40],
            },
        ),
        (
            "K",
            Random {
                shape: vec![90, 40],
            },
        ),
        ("scale", Scalar("0.3".into())),
        (
            "P",
            Random {
                shape: vec![70, 90],
            },
        ),
    ];
    let (t, src) = kernels::corpus_trace("mma_attention_scores", 80, [0, 0, 0], inputs);
    let first = &t.accumulators[0];
    // The first pass is the source up to its store into `s`; the second
    // pass repeats its `zeros` and `dot` lines.
    let store = "s[0 :+ 64, 0 :+ 64] = acc";
    let first_pass: Vec<&str> = src.lines().take(line_of(&src, store) as usize).collect();
    let first_pass = first_pass.join("\n");
    let lines: Vec<u32> = ["zeros<f32>", "dot(q, trans(kt))", store]
        .iter()
        .map(|n| line_of(&first_pass, n))
        .collect();
    assert_eq!(first.lines, lines);
    let (t, _) = kernels::gemm_trace("mma_gemm_f16acc", 80, [0, 0, 0], (70, 90, 40));
    assert_eq!(t.accumulators[0].registers_per_lane, 16);
}
