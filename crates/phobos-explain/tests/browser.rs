//! The explain page in a real browser (headless Chromium over the DevTools
//! protocol): it loads with no console errors and no network requests,
//! next/previous and the arrow keys change the step and the drawing, the
//! butterfly's arcs appear, screenshots are saved to
//! `target/explain-artifacts/`, and a 4096 × 4096 tensor gives a page under
//! 3 MB that opens in under 2 s.
//!
//! Without Chromium the test is skipped with a message, except when
//! `CI=true`, where a missing browser fails it.

#[path = "support/cdp.rs"]
mod cdp;
#[path = "support/kernels.rs"]
mod kernels;

use kernels::trace;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("explain-artifacts");
    std::fs::create_dir_all(&dir).expect("create the artifacts directory");
    // The page's URL is compared with `location.href`, which Chromium
    // normalizes: a path with `..` in it would never match.
    std::fs::canonicalize(&dir).expect("resolve the artifacts directory")
}

fn browser() -> Option<cdp::Browser> {
    match cdp::find_chromium() {
        Some(bin) => Some(cdp::Browser::launch(&bin).expect("start headless Chromium")),
        None if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") => {
            panic!("Chromium is not installed, and CI (CI=true or CI=1) requires the browser test to run (apt-get install chromium)")
        }
        None => {
            eprintln!("skipping the browser test: no chromium on PATH (install Debian's `chromium` package, or set PHOBOS_CHROMIUM)");
            None
        }
    }
}

/// Everything the page has drawn, to tell one step's drawing from another's.
const DRAWING: &str = "['tensors','ruler','barrier-list','threads-svg','lanes-svg','readout-list'].map(id => document.getElementById(id).innerHTML).join('|')";

/// Open a page; returns the time until its script finished the first drawing.
fn open(b: &mut cdp::Browser, page: &Path) -> Duration {
    for domain in [
        "Runtime.enable",
        "Log.enable",
        "Network.enable",
        "Page.enable",
    ] {
        b.call(domain, json!({})).expect(domain);
    }
    let url = format!("file://{}", page.display());
    let start = std::time::Instant::now();
    b.call("Page.navigate", json!({"url": url}))
        .expect("navigate");
    b.wait_for(
        &format!("location.href.split('#')[0] === {url:?} && document.readyState === 'complete' && document.body.dataset.ready === 'true'"),
        Duration::from_secs(20),
    )
    .expect("the page finishes drawing");
    start.elapsed()
}

/// Console errors, uncaught exceptions and requests for anything but the
/// page itself, seen so far.
fn problems(b: &mut cdp::Browser, page_url: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in b.events.drain(..) {
        let p = &e["params"];
        match e["method"].as_str().unwrap_or("") {
            "Runtime.exceptionThrown" => out.push(format!("exception: {}", p["exceptionDetails"])),
            "Runtime.consoleAPICalled" if p["type"] == "error" || p["type"] == "warning" => {
                out.push(format!("console {}: {}", p["type"], p["args"]))
            }
            "Log.entryAdded"
                if p["entry"]["level"] == "error" || p["entry"]["level"] == "warning" =>
            {
                out.push(format!("log: {}", p["entry"]["text"]))
            }
            "Network.requestWillBeSent" => {
                let url = p["request"]["url"].as_str().unwrap_or("");
                if url != page_url {
                    out.push(format!("network request: {url}"));
                }
            }
            _ => {}
        }
    }
    out
}

/// Writes page `html` to `file` in the artifacts folder and opens it,
/// asserting that it loaded without problems; returns its URL and the time
/// it took to open.
fn show(b: &mut cdp::Browser, file: &str, html: &str) -> (String, Duration) {
    let page = artifacts().join(file);
    std::fs::write(&page, html).expect("write the page");
    let url = format!("file://{}", page.display());
    let took = open(b, &page);
    assert_eq!(problems(b, &url), Vec::<String>::new());
    (url, took)
}

fn step(b: &mut cdp::Browser) -> i64 {
    let v = b
        .eval("Number(document.body.dataset.step)")
        .expect("read the step");
    v.as_i64().unwrap_or(-1)
}

fn key(b: &mut cdp::Browser, name: &str, code: i64) {
    for kind in ["keyDown", "keyUp"] {
        b.call(
            "Input.dispatchKeyEvent",
            json!({"type": kind, "key": name, "code": name, "windowsVirtualKeyCode": code}),
        )
        .expect("key event");
    }
}

#[test]
fn the_page_steps_through_staged_matvec_in_chromium() {
    let Some(mut b) = browser() else { return };
    let t = trace(
        kernels::STAGED_MATVEC,
        "staged_matvec",
        2,
        &[("W", &[8, 256]), ("x", &[1, 256]), ("y", &[1, 8])],
    );
    let dir = artifacts();
    let (url, _) = show(
        &mut b,
        "staged_matvec.html",
        &phobos_explain::html::render(&t),
    );

    let n = t.picked_cta().steps.len() as i64;
    let label = b
        .eval("document.getElementById('step-label').textContent")
        .expect("label");
    assert_eq!(label, json!(format!("step 1 of {n}")));
    let header = b
        .eval("document.querySelector('header').textContent")
        .expect("header");
    let header = header.as_str().unwrap_or_default();
    assert!(
        header.contains("stepped through as the compiler built it for sm_75"),
        "{header}"
    );
    assert!(header.contains("a byte ruler of 1024 bytes"), "{header}");

    // Next and previous buttons change the step and the drawing.
    let first = b.eval(DRAWING).expect("drawing");
    b.eval("document.getElementById('next').click()")
        .expect("click next");
    assert_eq!(step(&mut b), 1);
    let second = b.eval(DRAWING).expect("drawing");
    assert_ne!(first, second, "next did not change the drawing");
    b.eval("document.getElementById('prev').click()")
        .expect("click prev");
    assert_eq!(step(&mut b), 0);
    assert_eq!(b.eval(DRAWING).expect("drawing"), first);
    // So do the arrow keys.
    key(&mut b, "ArrowRight", 39);
    key(&mut b, "ArrowRight", 39);
    assert_eq!(step(&mut b), 2);
    key(&mut b, "ArrowLeft", 37);
    assert_eq!(step(&mut b), 1);

    // The step where the warps read W: screenshot it.
    let w_step = t
        .picked_cta()
        .steps
        .iter()
        .position(|s| s.boxes.iter().any(|bx| bx.tensor == 0))
        .expect("a step reads W");
    b.eval(&format!("(() => {{ const s = document.getElementById('slider'); s.value = '{w_step}'; s.dispatchEvent(new Event('input')); }})()"))
        .expect("move the slider");
    assert_eq!(step(&mut b), w_step as i64);
    let boxes = b
        .eval("document.querySelectorAll('#tensors .box').length")
        .expect("boxes");
    assert!(
        boxes.as_i64().unwrap_or(0) >= 4,
        "W's boxes are drawn: {boxes}"
    );
    let png = b.screenshot().expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    std::fs::write(dir.join("staged_matvec.png"), &png).expect("save the screenshot");

    // From the first iteration, "iteration ▶" jumps to the start of the
    // next iteration, and the address bar follows the step.
    let it = t.picked_cta().steps[w_step].iterations[0];
    let next_iteration = t
        .picked_cta()
        .steps
        .iter()
        .position(|s| {
            s.iterations
                .iter()
                .any(|i| i.r#loop == it.r#loop && i.iteration == it.iteration + 1)
        })
        .expect("a second iteration");
    b.eval("document.getElementById('iter-next').click()")
        .expect("click iteration");
    assert_eq!(step(&mut b), next_iteration as i64);
    let hash = b.eval("location.hash").expect("hash");
    assert_eq!(hash, json!(format!("#cta=0&step={}", next_iteration + 1)));

    // The first butterfly step draws 16 arcs, each lane to lane ^ 16 and back.
    let shuffle_step = t
        .picked_cta()
        .steps
        .iter()
        .position(|s| matches!(s.kind, phobos_explain::StepKind::Shuffle { n: 1, .. }))
        .expect("a butterfly");
    b.eval(&format!("(() => {{ const s = document.getElementById('slider'); s.value = '{shuffle_step}'; s.dispatchEvent(new Event('input')); }})()"))
        .expect("move the slider");
    let arcs = b
        .eval("document.querySelectorAll('#lanes-svg .arc').length")
        .expect("arcs");
    assert_eq!(arcs, json!(16));
    std::fs::write(
        dir.join("staged_matvec_butterfly.png"),
        b.screenshot().expect("screenshot"),
    )
    .expect("save");

    // The CTA picker switches to the other CTA's steps.
    b.eval("(() => { const p = document.getElementById('cta'); p.value = '1'; p.dispatchEvent(new Event('change')); })()")
        .expect("pick CTA 1");
    assert_eq!(
        b.eval("document.body.dataset.cta").expect("cta"),
        json!("1")
    );
    assert_eq!(problems(&mut b, &url), Vec::<String>::new());
}

#[test]
fn a_4096_square_tensor_makes_a_small_page_that_opens_fast() {
    let Some(mut b) = browser() else { return };
    let t = trace(
        kernels::LANES_MATVEC,
        "lanes_matvec",
        2,
        &[("W", &[4096, 4096]), ("x", &[1, 4096]), ("y", &[1, 4096])],
    );
    let html = phobos_explain::html::render(&t);
    assert!(html.len() < 3_000_000, "the page is {} bytes", html.len());
    let (_, took) = show(&mut b, "lanes_matvec_4096.html", &html);
    assert!(
        took < Duration::from_secs(2),
        "the page took {took:?} to open"
    );
    // Stepping a large page stays quick: walk to the end.
    let last = t.picked_cta().steps.len() as i64 - 1;
    key(&mut b, "End", 35);
    assert_eq!(step(&mut b), last);
    eprintln!("4096 × 4096 page: {} bytes, opened in {took:?}", html.len());
}

#[test]
fn the_heat_column_shows_the_profile_counters_of_each_line() {
    let Some(mut b) = browser() else { return };
    let src = kernels::corpus_src("tile_transpose");
    // One 32 x 32 tile: the line that stores t[j, i] to B makes 32 warp
    // stores of 128 contiguous bytes (4 sectors each) and 32 shared reads
    // down a column of the tile (32 wavefronts each, 31 of them conflicts),
    // every lane active.
    let t = trace(
        &src,
        "tile_transpose",
        1,
        &[("A", &[32, 32]), ("B", &[32, 32])],
    );
    let line = kernels::line_of(&src, "= t[j, i]");
    let h = t
        .heat
        .iter()
        .find(|h| h.line == line)
        .expect("the line has counters");
    assert_eq!((h.global_requests, h.global_sectors), (32, 128));
    assert_eq!(
        (h.shared_requests, h.shared_wavefronts, h.bank_conflicts),
        (32, 1024, 992)
    );
    assert_eq!(h.active_lanes_avg, Some(32.0));

    show(
        &mut b,
        "tile_transpose_heat.html",
        &phobos_explain::html::render(&t),
    );
    let cells = |b: &mut cdp::Browser, n: u32| {
        b.eval(&format!(
            "[...document.querySelectorAll('#source-pre .ln[data-n=\"{n}\"] .heat .hc')].map(c => c.textContent)"
        ))
        .expect("read the heat cells")
    };
    assert_eq!(
        cells(&mut b, line),
        json!(["32", "4.0", "1024 (992)", "32.0"])
    );
    // The column's head names the counters; a line that executed nothing
    // has empty cells.
    let head = b
        .eval("[...document.querySelectorAll('#source-pre .heads .hc')].map(c => c.textContent)")
        .expect("the head");
    assert_eq!(head, json!(["req", "sec/req", "wf (cf)", "lanes"]));
    assert_eq!(cells(&mut b, 1), json!(["", "", "", ""]));
    // The conflicting line is marked, and shaded as the kernel's most
    // memory-heavy line.
    let marked = b
        .eval(&format!(
            "(() => {{ const c = document.querySelector('#source-pre .ln[data-n=\"{line}\"] .heat'); return [c.classList.contains('conflicts'), c.style.getPropertyValue('--heat')]; }})()"
        ))
        .expect("the cell's class");
    assert_eq!(marked, json!([true, "1.000"]));
    std::fs::write(
        artifacts().join("tile_transpose_heat.png"),
        b.screenshot().expect("screenshot"),
    )
    .expect("save");
}

#[test]
fn the_padding_of_a_scratch_tile_is_hatched_on_the_ruler() {
    let Some(mut b) = browser() else { return };
    let src = kernels::corpus_src("scratch_transpose");
    let t = trace(
        &src,
        "scratch_transpose",
        1,
        &[("A", &[45, 70]), ("B", &[70, 45])],
    );
    let dir = artifacts();
    show(
        &mut b,
        "scratch_transpose.html",
        &phobos_explain::html::render(&t),
    );
    // One hatched stripe per row of `shared<f32>[32, 33]`: the 4 bytes of
    // column 32 at the end of each 132-byte row.
    let stripes = b
        .eval("document.querySelectorAll('#ruler rect.pad').length")
        .expect("count the stripes");
    assert_eq!(stripes, json!(32));
    let fill = b
        .eval("document.querySelector('#ruler rect.pad').getAttribute('fill')")
        .expect("fill");
    assert_eq!(fill, json!("url(#pad-hatch)"));
    // The first stripe starts at byte 128 of the 4224-byte ruler, 560 px wide
    // from x = 10.
    let x = b
        .eval("Number(document.querySelector('#ruler rect.pad').getAttribute('x'))")
        .expect("x")
        .as_f64()
        .unwrap_or(0.0);
    assert!(
        (x - (10.0 + 128.0 * 560.0 / 4224.0)).abs() < 1e-6,
        "x = {x}"
    );
    let label = b
        .eval("document.querySelector('#ruler text[data-buffer]').textContent")
        .expect("label");
    assert_eq!(label, json!("t @ 0 (4224 B, 128 B padding)"));
    let legend = b
        .eval("document.getElementById('shared-legend').textContent")
        .expect("legend");
    assert!(
        legend
            .as_str()
            .unwrap_or_default()
            .contains("padding: 128 bytes no access reaches (hatched)"),
        "{legend}"
    );
    // Stepping draws the accesses over the ruler and leaves the stripes.
    key(&mut b, "End", 35);
    let stripes = b
        .eval("document.querySelectorAll('#ruler rect.pad').length")
        .expect("count the stripes");
    assert_eq!(stripes, json!(32));
    let png = b.screenshot().expect("screenshot");
    std::fs::write(dir.join("scratch_transpose.png"), &png).expect("save the screenshot");
}

#[test]
fn the_accumulator_panel_lights_each_warps_part_at_the_dot() {
    let Some(mut b) = browser() else { return };
    let src = kernels::corpus_src("mma_gemm_f16");
    let t = trace(
        &src,
        "mma_gemm_f16",
        1,
        &[("A", &[64, 32]), ("W", &[64, 32]), ("C", &[64, 64])],
    );
    let dot_line = kernels::line_of(&src, "dot(a, trans(w))");
    let steps = &t.picked_cta().steps;
    let dot_step = steps
        .iter()
        .position(|s| s.line == dot_line)
        .expect("a dot step");
    let other = steps
        .iter()
        .position(|s| t.accumulator_at(s.line).is_none())
        .expect("a step that does not touch the accumulator");

    show(
        &mut b,
        "mma_gemm_f16.html",
        &phobos_explain::html::render(&t),
    );
    let shown = b
        .eval("[!document.getElementById('accumulators').hidden, document.querySelectorAll('#acc-views .warp-tile').length, document.querySelector('#acc-views .name').textContent]")
        .expect("the panel");
    assert_eq!(
        shown,
        json!([
            true,
            4,
            "acc: f32[64, 64], 2 × 2 warps, 32 registers per lane"
        ])
    );
    let lit = |b: &mut cdp::Browser, step: usize| {
        b.eval(&format!(
            "(() => {{ const s = document.getElementById('slider'); s.value = '{step}'; s.dispatchEvent(new Event('input')); return document.querySelectorAll('#acc-views rect.lit').length; }})()"
        ))
        .expect("step and count")
    };
    assert_eq!(
        lit(&mut b, dot_step),
        json!(4),
        "every warp multiplies its part"
    );
    assert_eq!(lit(&mut b, other), json!(0));
    lit(&mut b, dot_step);
    std::fs::write(
        artifacts().join("mma_gemm_f16_dot.png"),
        b.screenshot().expect("screenshot"),
    )
    .expect("save");
    // The page says which warp owns which part: warp 1 is right of warp 0.
    let tiles = b
        .eval("[...document.querySelectorAll('#acc-views .warp-tile rect')].map(r => [r.getAttribute('x'), r.getAttribute('y')])")
        .expect("tile positions");
    let xy: Vec<(f64, f64)> = tiles
        .as_array()
        .expect("array")
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().parse().unwrap(),
                p[1].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert!(xy[1].0 > xy[0].0 && xy[1].1 == xy[0].1, "{xy:?}");
    assert!(xy[2].1 > xy[0].1 && xy[2].0 == xy[0].0, "{xy:?}");
}
