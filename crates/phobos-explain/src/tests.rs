//! Tests of step building, readouts and rendering on hand-made events that
//! mimic what the simulator reports for the seed page's staged_matvec, so
//! these pass or fail independently of the backend and the simulator.

use crate::model::*;
use crate::record::{CtaEvents, RawAccess, RawEvent, RawSpace};
use crate::steps::{build_cta, BufferMap, Layout, TileOp};
use std::collections::BTreeMap;

const W_BASE: u64 = 0x1000_0000;
const X_BASE: u64 = 0x2000_0000;
const Y_BASE: u64 = 0x3000_0000;

/// The seed page's staged_matvec, from the conformance corpus.
const SOURCE: &str = include_str!("../../../tests/in/staged_matvec.pho");

#[path = "../../../tests/src/source_lines.rs"]
mod source_lines;

/// The line of `SOURCE` holding `snippet`; the hand-made events carry
/// these lines, as the simulator's would.
fn line(snippet: &str) -> u32 {
    source_lines::line_of(SOURCE, snippet)
}

/// The lines of staged_matvec's statements that the events and the
/// assertions name.
struct Lines {
    copy: u32,
    row: u32,
    acc: u32,
    guard: u32,
    for_k: u32,
    at: u32,
    body: u32,
    total: u32,
    store_guard: u32,
    store: u32,
}

fn lines() -> Lines {
    Lines {
        copy: line("var xs = x[0 :+ 1, :]"),
        row: line("let row ="),
        acc: line("var acc"),
        guard: line("if row < N"),
        for_k: line("for k in range"),
        at: line("let at ="),
        body: line("acc += sum"),
        total: line("let total ="),
        store_guard: line("if ctx.lane == 0"),
        store: line("y[0, row] = total"),
    }
}

struct Events {
    list: Vec<RawEvent>,
}

impl Events {
    fn op(&mut self, warp: u32, active: u32, pc: u32, line: u32) -> &mut RawEvent {
        self.list.push(RawEvent {
            warp,
            active,
            pc,
            line: Some(line),
            accesses: vec![],
            shuffles: vec![],
            barrier: false,
            shuffle: false,
        });
        self.list.last_mut().expect("just pushed")
    }
}

fn access(
    thread: u32,
    space: RawSpace,
    write: bool,
    addr: u64,
    bytes: u32,
    buffer: Option<usize>,
) -> RawAccess {
    RawAccess {
        thread,
        space,
        write,
        atomic: false,
        addr,
        bytes,
        buffer,
    }
}

/// One access of `bytes` by each lane of warp `w`, lane `l` at `addr(l)`.
fn warp_accesses(
    ev: &mut RawEvent,
    w: u32,
    (space, write): (RawSpace, bool),
    bytes: u32,
    buffer: Option<usize>,
    addr: impl Fn(u32) -> u64,
) {
    for l in 0..32 {
        let a = access(w * 32 + l, space, write, addr(l), bytes, buffer);
        ev.accesses.push(a);
    }
}

fn tensors() -> Vec<TensorInfo> {
    let t = |name: &str, shape: Vec<u64>, written| TensorInfo {
        name: name.into(),
        elem: "f32".into(),
        elem_bytes: 4,
        rows: shape[0],
        cols: shape[1],
        shape,
        written,
    };
    vec![
        t("W", vec![8, 256], false),
        t("x", vec![1, 256], false),
        t("y", vec![1, 8], true),
    ]
}

/// CTA 0 of staged_matvec with N = 8, K = 256 as the simulator would
/// report it. `x_stride` spreads the tile copy's lanes apart (1 = dense).
fn staged_events(x_stride: u64) -> CtaEvents {
    let mut e = Events { list: vec![] };
    let full = u32::MAX;
    let line = lines();
    // The tile copy: warps 0 and 1 copy x (64 lanes × 16 bytes), then a
    // barrier.
    for w in 0..2 {
        let thread = |l: u32| u64::from(w * 32 + l);
        let ev = e.op(w, full, 10, line.copy);
        let global_read = (RawSpace::Global, false);
        warp_accesses(ev, w, global_read, 16, Some(1), |l| {
            X_BASE + thread(l) * 16 * x_stride
        });
        let ev = e.op(w, full, 11, line.copy);
        warp_accesses(ev, w, (RawSpace::Shared, true), 16, None, |l| {
            thread(l) * 16
        });
    }
    for w in 0..4 {
        e.op(w, full, 12, line.copy).barrier = true;
    }
    for w in 0..4 {
        e.op(w, full, 13, line.row);
        e.op(w, full, 14, line.acc);
        e.op(w, full, 15, line.guard);
        e.op(w, full, 16, line.for_k);
        for k in 0..2u64 {
            e.op(w, full, 17, line.at);
            let col = |l: u32| k * 128 + u64::from(l) * 4;
            let ev = e.op(w, full, 18, line.body);
            warp_accesses(ev, w, (RawSpace::Global, false), 16, Some(0), |l| {
                W_BASE + (u64::from(w) * 256 + col(l)) * 4
            });
            let ev = e.op(w, full, 19, line.body);
            warp_accesses(ev, w, (RawSpace::Shared, false), 16, None, |l| col(l) * 4);
            e.op(w, full, 20, line.for_k);
        }
        for (i, m) in [16u32, 8, 4, 2, 1].into_iter().enumerate() {
            let ev = e.op(w, full, 21 + 2 * i as u32, line.total);
            ev.shuffle = true;
            ev.shuffles = (0..32).map(|l| (l, l ^ m)).collect();
            e.op(w, full, 22 + 2 * i as u32, line.total);
        }
        e.op(w, full, 31, line.store_guard);
        let ev = e.op(w, 1, 32, line.store);
        ev.accesses.push(access(
            w * 32,
            RawSpace::Global,
            true,
            Y_BASE + u64::from(w) * 4,
            4,
            Some(2),
        ));
    }
    CtaEvents {
        cta: 0,
        cta_id: [0, 0, 0],
        events: e.list,
        truncated: false,
    }
}

fn staged_trace(events: CtaEvents, tiles: Vec<TileOp>) -> Trace {
    staged_trace_limited(events, tiles, 1000)
}

fn staged_trace_limited(events: CtaEvents, tiles: Vec<TileOp>, max_steps: usize) -> Trace {
    let line = lines();
    let tensors = tensors();
    let buffers = vec![
        BufferMap {
            tensor: 0,
            base: W_BASE,
            len_bytes: 8 * 256 * 4,
        },
        BufferMap {
            tensor: 1,
            base: X_BASE,
            len_bytes: 256 * 4,
        },
        BufferMap {
            tensor: 2,
            base: Y_BASE,
            len_bytes: 8 * 4,
        },
    ];
    let shared = SharedPlan {
        bytes: 1024,
        buffers: vec![SharedBuffer {
            name: "xs".into(),
            offset: 0,
            bytes: 1024,
            live_lines: (line.copy, line.body),
            padding: None,
        }],
    };
    let barriers = vec![Barrier {
        line: line.copy,
        kept: true,
        reason: "Each lane then reads elements of xs that other threads copied".into(),
    }];
    let loops = vec![LoopInfo {
        line: line.for_k,
        // The loop's closing brace is the line after its body.
        end_line: line.body + 1,
    }];
    let opcodes: BTreeMap<u32, String> = [
        (10, "ld.global.nc.v4.f32"),
        (11, "st.shared.v4.f32"),
        (18, "ld.global.nc.v4.f32"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_string()))
    .collect();
    let layout = Layout {
        tensors: &tensors,
        buffers: &buffers,
        shared: &shared,
        barriers: &barriers,
        loops: &loops,
        statement_lines: &Default::default(),
        tiles: &tiles,
        threads: 128,
        opcodes: &opcodes,
        accumulators: &[],
        rings: &[],
    };
    let cta = build_cta(&layout, &events, max_steps);
    Trace {
        version: TRACE_VERSION,
        kernel: "staged_matvec".into(),
        entry: "staged_matvec__K256".into(),
        arch: "sm_75".into(),
        source_file: "staged.pho".into(),
        source_lines: SOURCE.lines().map(str::to_string).collect(),
        grid: [2, 1, 1],
        threads: 128,
        warps: 4,
        dims: vec![("K".into(), 256), ("N".into(), 8)],
        tensors,
        shared,
        barriers,
        loops,
        ctas: vec![cta],
        picked: 0,
        heat: vec![],
        accumulators: vec![],
        rings: vec![],
    }
}

fn x_tile(origin: i64) -> Vec<TileOp> {
    vec![TileOp {
        line: lines().copy,
        tensor: 1,
        origin: Some(vec![0, origin]),
        shape: vec![1, 256],
        store: false,
    }]
}

#[test]
fn statements_loops_barriers_and_butterflies_become_steps() {
    let trace = staged_trace(staged_events(1), x_tile(0));
    let steps = &trace.ctas[0].steps;
    let got: Vec<u32> = steps.iter().map(|s| s.line).collect();
    let l = lines();
    // The copy and its barrier, the four statements up to the loop, two
    // iterations of its two statements, five shuffles, the guard, the
    // store.
    let mut want = vec![l.copy, l.copy, l.row, l.acc, l.guard, l.for_k];
    want.extend([l.at, l.body, l.at, l.body]);
    want.extend([l.total; 5]);
    want.extend([l.store_guard, l.store]);
    assert_eq!(got, want);
    assert_eq!(steps[1].kind, StepKind::Barrier);
    assert_eq!(steps[1].barrier, Some(0));
    assert_eq!(steps[1].warps, vec![0, 1, 2, 3]);
    let iters: Vec<u32> = steps[6..10]
        .iter()
        .map(|s| s.iterations[0].iteration)
        .collect();
    assert_eq!(iters, vec![0, 0, 1, 1]);
    let masks: Vec<u32> = steps[10..15]
        .iter()
        .map(|s| match s.shuffle {
            Some(ShufflePattern::Xor(m)) => m,
            other => panic!("not a xor shuffle: {other:?}"),
        })
        .collect();
    assert_eq!(masks, vec![16, 8, 4, 2, 1]);
    assert_eq!(steps[12].kind, StepKind::Shuffle { n: 3, of: 5 });
    assert!(steps[10].shuffles0.contains(&[3, 19]));
    assert_eq!(
        steps[16].threads,
        vec![[0, 1], [32, 33], [64, 65], [96, 97]]
    );
}

#[test]
fn boxes_lines_and_shared_bytes_per_step() {
    let trace = staged_trace(staged_events(1), x_tile(0));
    let steps = &trace.ctas[0].steps;
    let copy = &steps[0];
    assert_eq!(copy.shared.len(), 1);
    assert_eq!(copy.shared[0].ranges, vec![[0, 1024]]);
    assert_eq!(copy.shared[0].buffer, Some(0));
    assert!(copy.masked.is_empty());
    let body = &steps[9]; // The loop body, second iteration.
    let w_boxes: Vec<(u32, Vec<[u64; 2]>)> = body
        .boxes
        .iter()
        .filter(|b| b.tensor == 0)
        .map(|b| (b.warp, b.ranges.clone()))
        .collect();
    assert_eq!(
        w_boxes,
        (0..4u64)
            .map(|w| (w as u32, vec![[w * 256 + 128, w * 256 + 256]]))
            .collect::<Vec<_>>()
    );
    let load = body
        .accesses
        .iter()
        .find(|a| a.space == Space::Global)
        .expect("a global load");
    assert_eq!(load.bytes_per_lane, 16);
    assert!(load
        .warps
        .iter()
        .all(|w| w.lines == 4 && w.extra_lines == 0));
    let sentence = body
        .readout
        .iter()
        .find(|s| s.contains(" of W"))
        .expect("a W sentence");
    assert_eq!(
        sentence,
        "Each of the 4 warps reads one row of W (rows 0–3, one per warp) with 32 lanes × 16 bytes: 4 lines of 128 bytes, none extra."
    );
}

#[test]
fn strided_lanes_show_extra_lines() {
    let trace = staged_trace(staged_events(2), x_tile(0));
    let copy = &trace.ctas[0].steps[0];
    let load = &copy.accesses[0];
    // 32 lanes × 16 bytes 32 bytes apart: 8 lines where 4 would do.
    assert_eq!(load.warps[0].lines, 8);
    assert_eq!(load.warps[0].extra_lines, 4);
    assert!(!copy.extra_lines.is_empty());
    assert!(
        copy.readout
            .iter()
            .any(|s| s.contains("8 lines of 128 bytes where 4 would do, 4 extra")),
        "{:?}",
        copy.readout
    );
}

#[test]
fn a_tile_past_the_end_is_masked() {
    let trace = staged_trace(staged_events(1), x_tile(64));
    let copy = &trace.ctas[0].steps[0];
    assert_eq!(
        copy.masked,
        vec![MaskedBox {
            tensor: 1,
            rows: [0, 1],
            cols: [256, 320],
            elements: 64
        }]
    );
    assert!(copy
        .readout
        .iter()
        .any(|s| s.starts_with("64 elements of the tile lie past the end of x")));
}

#[test]
fn the_page_is_self_contained() {
    let trace = staged_trace(staged_events(1), x_tile(0));
    let page = crate::html::render(&trace);
    assert!(page.contains("stepped through as the compiler built it for sm_75"));
    assert!(page.contains("a byte ruler of 1024 bytes"));
    assert!(page.contains("A grid of 2 CTAs with 128 threads each"));
    for forbidden in ["http://", "https://", "<link rel=\"stylesheet\"", "src=\""] {
        let hits: Vec<&str> = page.matches(forbidden).collect();
        // The SVG namespace URI is an identifier, never fetched.
        let allowed = usize::from(forbidden == "http://");
        assert!(
            hits.len() <= allowed,
            "{forbidden} appears {} times",
            hits.len()
        );
    }
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/explain-artifacts");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join("synthetic_staged_matvec.html"), &page);
    }
}

#[test]
fn the_text_format_lists_every_step() {
    let trace = staged_trace(staged_events(1), x_tile(0));
    let text = crate::text::render(&trace);
    let total = lines().total;
    assert!(
        text.contains(&format!(
            "step 11 of 17 · line {total}, shuffle step 1 of 5: let total = sum<over ctx.lane>(acc)"
        )),
        "{text}"
    );
    assert!(text.contains("Shuffle step 1 of 5: each lane of warp 0 takes the value of lane ^ 16"));
}

#[test]
fn the_json_trace_reads_back() {
    let trace = staged_trace(staged_events(1), x_tile(64));
    let json = crate::to_json(&trace);
    let back: Trace = serde_json::from_str(&json).expect("the JSON trace deserializes");
    assert_eq!(back, trace);
}

#[test]
fn a_long_trace_is_cut_and_marked() {
    let trace = staged_trace_limited(staged_events(1), x_tile(0), 3);
    assert_eq!(trace.ctas[0].steps.len(), 3);
    assert!(trace.ctas[0].truncated);
    assert!(crate::text::render(&trace).contains("the step limit was reached"));
}
