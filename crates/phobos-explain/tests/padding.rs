//! Shared scratch with padding on the byte ruler (issue 14): the trace
//! marks the bytes of a padded tile that no access reaches, the page and
//! the text say how many, and no recorded shared access ever touches them.

#[path = "support/kernels.rs"]
mod kernels;

use phobos_explain::Trace;

const TRANSPOSE: &str = include_str!("../../../tests/in/scratch_transpose.pho");
const FILL: &str = include_str!("../../../tests/in/scratch_fill.pho");

/// The trace of a 45 x 70 transpose by `kernel` of `src` on 3 x 2 CTAs.
fn trace(src: &str, kernel: &str) -> Trace {
    let shapes: &[(&str, &[u64])] = &[("A", &[45, 70]), ("B", &[70, 45])];
    let req = kernels::request(src, kernel, 75, Some([3, 2, 1]), shapes);
    phobos_explain::trace(&req).unwrap_or_else(|e| panic!("explain {kernel}: {e}"))
}

#[test]
fn the_padding_column_of_a_32_by_33_tile_is_in_the_json() {
    for (src, kernel) in [(TRANSPOSE, "scratch_transpose"), (FILL, "scratch_fill")] {
        let t = trace(src, kernel);
        let v = kernels::json(&t);
        let buffers = v["shared"]["buffers"].as_array().expect("buffers");
        assert_eq!(buffers.len(), 1, "{kernel}: {buffers:?}");
        let b = &buffers[0];
        assert_eq!(b["name"], "t");
        assert_eq!(b["bytes"], 32 * 33 * 4);
        // Each 132-byte row ends in the 4 bytes of column 32.
        assert_eq!(
            b["padding"],
            serde_json::json!({"row_bytes": 132, "pad_bytes": 4, "rows": 32, "bytes": 128}),
            "{kernel}"
        );
        let ranges = t.shared.buffers[0].padding_ranges();
        assert_eq!(ranges.len(), 32);
        assert_eq!(ranges[0], [128, 132]);
        assert_eq!(ranges[31], [4220, 4224]);
    }
}

#[test]
fn no_recorded_shared_access_touches_the_padding() {
    for (src, kernel) in [(TRANSPOSE, "scratch_transpose"), (FILL, "scratch_fill")] {
        let t = trace(src, kernel);
        let pads = t.shared.buffers[0].padding_ranges();
        let mut touched = 0u64;
        for cta in &t.ctas {
            for s in &cta.steps {
                for touch in &s.shared {
                    for r in &touch.ranges {
                        touched += u64::from(r[1] - r[0]);
                        for p in &pads {
                            assert!(
                                r[1] <= p[0] || r[0] >= p[1],
                                "{kernel}: step at line {} touches bytes {r:?}, padding {p:?}",
                                s.line
                            );
                        }
                    }
                }
            }
        }
        assert!(touched > 0, "{kernel}: no shared access was recorded");
    }
}

#[test]
fn the_page_the_text_and_the_readout_say_how_many_bytes_are_padding() {
    let t = trace(TRANSPOSE, "scratch_transpose");
    let text = phobos_explain::text::render(&t);
    assert!(
        text.contains(
            "t at offset 0 (4224 bytes, 128 of them padding: the last 4 of each 132-byte row)"
        ),
        "{text}"
    );
    let caption = phobos_explain::html::caption(&t);
    assert!(
        caption.contains(
            "a byte ruler of 4224 bytes (128 of them padding that no access reaches, hatched)"
        ),
        "{caption}"
    );
    let readout: Vec<&String> = t
        .picked_cta()
        .steps
        .iter()
        .flat_map(|s| &s.readout)
        .filter(|l| l.contains("in shared memory"))
        .collect();
    assert!(!readout.is_empty(), "no step touches shared memory");
    assert!(
        readout.iter().all(|l| l.contains(
            "t has 128 bytes of padding, the last 4 of each 132-byte row, which no access reaches"
        )),
        "{readout:?}"
    );
    let page = phobos_explain::html::render(&t);
    assert!(page.contains("id=\"shared-legend\""));
    assert!(
        page.contains("\"padding\":{\"row_bytes\":132"),
        "the page's data has the padding"
    );
}

#[test]
fn a_tile_that_every_access_may_reach_has_no_padding() {
    // A copied 32 x 32 tile is used whole: nothing is drawn as padding.
    let src = include_str!("../../../tests/in/tile_transpose.pho");
    let t = trace(src, "tile_transpose");
    assert!(!t.shared.buffers.is_empty());
    assert!(t.shared.buffers.iter().all(|b| b.padding.is_none()));
    assert!(!phobos_explain::to_json(&t).contains("\"padding\""));
    assert!(!phobos_explain::html::caption(&t).contains("padding"));
}
