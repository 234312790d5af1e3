//! The traces of the language page's kernels, checked through their JSON
//! form (the format other tools read): lanes_matvec's empty ruler and
//! five-step butterfly, staged_matvec's 1024-byte ruler, kept barrier and
//! per-warp boxes of W, i8_matvec's two 16-byte loads per lane, a tile past
//! a tensor's end, and a strided access with extra lines.

#[path = "support/kernels.rs"]
mod kernels;

use phobos_explain::Cta;
use serde_json::Value;

fn trace_json(src: &str, kernel: &str, grid: u32, inputs: &[(&str, &[u64])]) -> Value {
    kernels::json(&kernels::trace(src, kernel, grid, inputs))
}

/// The shapes both matvecs of the page run with: 8 rows of 256.
const MATVEC_SHAPES: &[(&str, &[u64])] = &[("W", &[8, 256]), ("x", &[1, 256]), ("y", &[1, 8])];

fn steps(v: &Value) -> &Vec<Value> {
    let picked = v["picked"].as_u64().expect("picked") as usize;
    v["ctas"][picked]["steps"].as_array().expect("steps")
}

fn tensor(v: &Value, name: &str) -> u64 {
    v["tensors"]
        .as_array()
        .and_then(|ts| ts.iter().position(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("no tensor {name}")) as u64
}

fn shuffle_steps(v: &Value) -> Vec<&Value> {
    steps(v)
        .iter()
        .filter(|s| s["kind"].get("shuffle").is_some())
        .collect()
}

/// The xor mask of a butterfly step, checked on every arc of warp 0.
fn xor_mask(step: &Value) -> u64 {
    let pairs = step["shuffles0"].as_array().expect("shuffles0");
    assert_eq!(pairs.len(), 32, "all 32 lanes shuffle");
    let m = pairs[0][0].as_u64().unwrap_or(0) ^ pairs[0][1].as_u64().unwrap_or(0);
    for p in pairs {
        let (lane, src) = (p[0].as_u64().unwrap_or(99), p[1].as_u64().unwrap_or(99));
        assert_eq!(lane ^ src, m, "arc {lane}↔{src} in a ^{m} step");
    }
    assert_eq!(step["shuffle"]["xor"], m);
    m
}

#[test]
fn lanes_matvec_has_no_ruler_and_a_five_step_butterfly() {
    let v = trace_json(kernels::LANES_MATVEC, "lanes_matvec", 2, MATVEC_SHAPES);
    assert_eq!(v["shared"]["bytes"], 0);
    assert_eq!(v["shared"]["buffers"].as_array().map(Vec::len), Some(0));
    assert_eq!(v["arch"], "sm_75");
    let butterfly = shuffle_steps(&v);
    let fold = kernels::line_of(kernels::LANES_MATVEC, "sum<over ctx.lane>");
    assert_eq!(butterfly.len(), 5, "one step per shuffle");
    let masks: Vec<u64> = butterfly.iter().map(|s| xor_mask(s)).collect();
    assert_eq!(masks, vec![16, 8, 4, 2, 1]);
    for (i, s) in butterfly.iter().enumerate() {
        assert_eq!(s["kind"]["shuffle"]["n"], i as u64 + 1);
        assert_eq!(s["kind"]["shuffle"]["of"], 5);
        assert_eq!(
            s["line"], fold,
            "the butterfly is line {fold}'s `sum<over ctx.lane>`"
        );
    }
    // K = 256 with 32 lanes × 4 elements: the loop body runs twice.
    let line = kernels::line_of(kernels::LANES_MATVEC, "acc += sum(");
    let body: Vec<&Value> = steps(&v).iter().filter(|s| s["line"] == line).collect();
    assert_eq!(body.len(), 2, "one step per iteration");
    assert_eq!(body[0]["iterations"][0]["iteration"], 0);
    assert_eq!(body[1]["iterations"][0]["iteration"], 1);
}

#[test]
fn staged_matvec_has_a_1024_byte_ruler_a_kept_barrier_and_a_row_of_w_per_warp() {
    let v = trace_json(kernels::STAGED_MATVEC, "staged_matvec", 2, MATVEC_SHAPES);
    assert_eq!(v["shared"]["bytes"], 1024);
    let xs = &v["shared"]["buffers"][0];
    assert_eq!(xs["name"], "xs");
    assert_eq!(xs["offset"], 0);
    assert_eq!(xs["bytes"], 1024);
    let kept: Vec<&Value> = v["barriers"]
        .as_array()
        .expect("barriers")
        .iter()
        .filter(|b| b["kept"] == true)
        .collect();
    assert_eq!(kept.len(), 1, "one kept barrier: {:?}", v["barriers"]);
    let copy = kernels::line_of(kernels::STAGED_MATVEC, "var xs = x[");
    assert_eq!(kept[0]["line"], copy, "after the tile copy on line {copy}");
    // The barrier step comes right after the copy, and every warp waits.
    let st = steps(&v);
    let bar = st
        .iter()
        .position(|s| s["kind"] == "barrier")
        .expect("a barrier step");
    assert_eq!(st[bar]["warps"].as_array().map(Vec::len), Some(4));
    assert!(st[..bar]
        .iter()
        .any(|s| s["line"] == copy && s["shared"].as_array().is_some_and(|a| !a.is_empty())));
    // Each warp reads its own row of W: warp w, row w (CTA 0), 128 columns a step.
    let w = tensor(&v, "W");
    let reads: Vec<&Value> = st
        .iter()
        .filter(|s| {
            s["boxes"]
                .as_array()
                .is_some_and(|b| b.iter().any(|b| b["tensor"] == w))
        })
        .collect();
    assert_eq!(reads.len(), 2, "two iterations read W");
    for (it, s) in reads.iter().enumerate() {
        let boxes: Vec<&Value> = s["boxes"]
            .as_array()
            .expect("boxes")
            .iter()
            .filter(|b| b["tensor"] == w)
            .collect();
        assert_eq!(boxes.len(), 4, "a box per warp");
        for b in boxes {
            let warp = b["warp"].as_u64().expect("warp");
            let start = warp * 256 + it as u64 * 128;
            assert_eq!(
                b["ranges"],
                serde_json::json!([[start, start + 128]]),
                "warp {warp}"
            );
        }
        let readout = s["readout"].as_array().expect("readout");
        assert!(
            readout.iter().any(|r| r.as_str().is_some_and(
                |r| r.contains("each of the 4 warps") || r.contains("Each of the 4 warps")
            )),
            "{readout:?}"
        );
    }
    // The shared tile is read, not global x, in the loop.
    let x = tensor(&v, "x");
    assert!(reads.iter().all(|s| s["boxes"]
        .as_array()
        .is_some_and(|b| b.iter().all(|b| b["tensor"] != x))));
}

#[test]
fn i8_matvec_makes_two_16_byte_loads_per_lane_per_step() {
    let v = trace_json(
        kernels::I8_MATVEC,
        "i8_matvec",
        1,
        &[("A", &[1, 1024]), ("W", &[8, 1024]), ("C", &[1, 8])],
    );
    let st = steps(&v);
    let line = kernels::line_of(kernels::I8_MATVEC, "acc += f32(sum(");
    let body: Vec<&Value> = st.iter().filter(|s| s["line"] == line).collect();
    // K = 1024 bytes, 32 lanes × 16 bytes a step: two iterations.
    assert_eq!(body.len(), 2);
    for s in body {
        let global: Vec<&Value> = s["accesses"]
            .as_array()
            .expect("accesses")
            .iter()
            .filter(|a| a["space"] == "global" && a["kind"] == "read")
            .collect();
        assert_eq!(global.len(), 2, "one load of A and one of W: {global:?}");
        for a in global {
            assert_eq!(a["bytes_per_lane"], 16);
            for w in a["warps"].as_array().expect("warps") {
                assert_eq!(w["executions"], 1, "one load per lane per step");
                assert_eq!(w["lanes"], 32);
                assert_eq!(w["extra_lines"], 0);
            }
        }
    }
}

#[test]
fn a_tile_past_the_end_shows_masked_elements() {
    let shapes: &[(&str, &[u64])] = &[("x", &[1, 300]), ("y", &[1, 300])];
    let mut req = kernels::request(kernels::TAIL_TILE, "tail_tile", 75, Some([2, 1, 1]), shapes);
    req.cta = Cta::Linear(1);
    let trace = phobos_explain::trace(&req).unwrap_or_else(|e| panic!("{e}"));
    let v = kernels::json(&trace);
    let masked: Vec<&Value> = steps(&v)
        .iter()
        .flat_map(|s| s["masked"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(masked.len(), 1, "{masked:?}");
    assert_eq!(masked[0]["cols"], serde_json::json!([300, 512]));
    assert_eq!(masked[0]["elements"], 212);
    // CTA 0's tile lies inside x.
    let cta0 = &v["ctas"][0];
    assert_eq!(cta0["cta"], 0);
    assert!(cta0["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .all(|s| s["masked"].as_array().is_some_and(Vec::is_empty)));
}

#[test]
fn a_strided_access_shows_extra_lines() {
    let v = trace_json(
        kernels::COLUMN_READ,
        "column_read",
        1,
        &[("A", &[32, 32]), ("y", &[1, 32])],
    );
    let a = tensor(&v, "A");
    let st = steps(&v);
    let read = st
        .iter()
        .find(|s| {
            s["boxes"]
                .as_array()
                .is_some_and(|b| b.iter().any(|b| b["tensor"] == a))
        })
        .expect("a step reads A");
    let load = read["accesses"]
        .as_array()
        .expect("accesses")
        .iter()
        .find(|g| g["target"] == "A")
        .expect("the load of A");
    assert_eq!(load["warps"][0]["lines"], 32);
    assert_eq!(load["warps"][0]["min_lines"], 1);
    assert_eq!(load["warps"][0]["extra_lines"], 31);
    let extra = read["extra_lines"].as_array().expect("extra lines");
    assert_eq!(extra.len(), 1);
    assert_eq!(extra[0]["tensor"], a);
    assert!(read["readout"]
        .as_array()
        .expect("readout")
        .iter()
        .any(|r| r
            .as_str()
            .is_some_and(|r| r.contains("32 lines of 128 bytes where 1 would do, 31 extra"))));
}
