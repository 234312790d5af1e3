//! The uniformity suite: small kernels, accepted and rejected. Control that
//! differs only between warps admits lane collectives and shuffles but not
//! CTA collectives or tile statements; control that differs between lanes
//! admits none of them. The kernels of one check each are the cases of
//! `kernels/uniformity.txt`.

mod common;

/// Wrap `body` in a kernel; its first line is line 3 of the file.
fn kernel(body: &str) -> String {
    format!(
        "@launch(128)
kernel k(A: tensor<f32>[N, 128], x: tensor<f32>[1, 128], O: tensor<f32>[1, N]) {{
{body}
}}
"
    )
}

/// The line (of the whole file) of the one line of `body` holding
/// `snippet`, once `body` is in its kernel.
fn line(body: &str, snippet: &str) -> u32 {
    common::source_lines::line_of(&kernel(body), snippet)
}

fn accepted(body: &str) {
    assert_eq!(common::accepted(&kernel(body)).len(), 1);
}

/// Rejected with `code`, primary label on `line` (of the whole file), and
/// a secondary label pointing at the cause.
fn rejected(body: &str, code: &str, line: u32) {
    let src = kernel(body);
    let (kernels, diags) = phobos_core::check_source(&src);
    let text = phobos_core::render::render(&diags, "k.pho", &src, false);
    assert!(kernels.is_empty(), "accepted:\n{src}");
    assert_eq!(diags.len(), 1, "{text}");
    assert_eq!(diags[0].code, code, "{text}");
    let index = phobos_core::source::LineIndex::new(&src);
    let primary = diags[0]
        .labels
        .iter()
        .find(|l| l.primary)
        .expect("primary label");
    assert_eq!(index.line(primary.span.start as usize), line, "{text}");
    if code != "P0703" {
        assert!(
            diags[0].labels.iter().any(|l| !l.primary),
            "no cause label:\n{text}"
        );
    }
}

const ROW: &str = "  let row = ctx.block.x * ctx.warps + ctx.warp\n  let v = A[0, ctx.thread]\n";

/// Each case of `kernels/uniformity.txt` is accepted, or rejected at its
/// marked line with a label at the cause.
#[test]
fn every_case_of_the_fixture_is_accepted_or_rejected_at_its_line() {
    let cases = common::cases(include_str!("kernels/uniformity.txt"));
    assert!(!cases.is_empty(), "the fixture has no case");
    for case in cases {
        eprintln!("case {}", case.name);
        let body = case.text.trim_end_matches('\n');
        if case.code.is_empty() {
            accepted(body);
        } else {
            rejected(body, &case.code, case.line_in(&kernel(body)));
        }
    }
}

/// `ctx.thread / 32`, `ctx.thread >> 5` and a global thread index over 32
/// are the same in every lane of a warp: `ctx.threads` is a multiple of 32.
#[test]
fn a_thread_index_divided_by_a_multiple_of_32_is_warp_uniform() {
    for cond in [
        "ctx.thread / 32 < 2",
        "ctx.thread >> 5 == 1",
        "ctx.thread / 64 == 0",
        "(ctx.block.x * ctx.threads + ctx.thread) / 32 < N",
        "(ctx.thread + ctx.block.x * 128) >> 6 < N",
    ] {
        accepted(&format!(
            "{ROW}  if {cond} {{\n    O[0, 0] = sum<over ctx.lane>(v)\n  }}"
        ));
    }
    accepted(&format!(
        "{ROW}  let g = ctx.block.x * ctx.threads + ctx.thread\n  let w = g / 32\n  if w < N {{\n    O[0, w] = shfl<xor 1>(v)\n  }}"
    ));
}

/// Divisions that do split a warp stay varying.
#[test]
fn a_thread_index_divided_otherwise_still_varies() {
    for cond in [
        "ctx.thread / 16 < 2",
        "(ctx.thread + 16) / 32 < 2",
        "(ctx.thread + ctx.block.x * 48) / 32 < 2",
        "(ctx.thread - 32) / 32 < 2",
    ] {
        let body = format!("{ROW}  if {cond} {{\n    O[0, 0] = sum<over ctx.lane>(v)\n  }}");
        rejected(&body, "P0700", line(&body, "sum<over ctx.lane>"));
    }
}

// The right side of `&&` / `||` runs only where the left side lets it, so a
// collective there is under the left side's control.
#[test]
fn rejects_cta_collective_right_of_and() {
    // Even under a uniform guard: CTA collectives run before their
    // statement, so they could not honour the guard.
    for guard in ["ctx.thread < N", "ctx.block.x < 4"] {
        let body = format!("{ROW}  if {guard} && sum<over ctx.thread>(A[ctx.block.x, 0]) > 0.0 {{\n    O[0, 0] = 1.0\n  }}");
        rejected(&body, "P0704", line(&body, "sum<over ctx.thread>"));
    }
}

/// The rendered diagnostic of a rejected kernel, with the labels' lines.
fn labels(body: &str) -> (String, Vec<(bool, u32, String)>) {
    let src = kernel(body);
    let (_, diags) = phobos_core::check_source(&src);
    let text = phobos_core::render::render(&diags, "k.pho", &src, false);
    let index = phobos_core::source::LineIndex::new(&src);
    let labels = diags
        .first()
        .map(|d| {
            d.labels
                .iter()
                .map(|l| {
                    (
                        l.primary,
                        index.line(l.span.start as usize),
                        l.message.clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    (text, labels)
}

/// Asserts that the diagnostic of `body` has a secondary label on `line`
/// whose message contains `words`.
fn assert_cause(body: &str, line: u32, words: &str) {
    let (text, labels) = labels(body);
    assert!(
        labels
            .iter()
            .any(|(p, at, m)| !p && *at == line && m.contains(words)),
        "no label with {words:?} on line {line}:\n{text}"
    );
}

#[test]
fn rejects_lane_collective_after_a_lane_varying_return() {
    let body =
        format!("{ROW}  if ctx.lane == 0 {{\n    return\n  }}\n  O[0, 0] = sum<over ctx.lane>(v)");
    rejected(&body, "P0700", line(&body, "sum<over ctx.lane>"));
    assert_cause(&body, line(&body, "return"), "`return`");
    assert_cause(&body, line(&body, "if ctx.lane == 0"), "condition");
}

/// The help text that P0700 adds when control varies only through
/// `ctx.thread` taken whole, where `ctx.warp` picks whole warps.
fn warp_help(body: &str) -> bool {
    let src = kernel(body);
    let (_, diags) = phobos_core::check_source(&src);
    let text = phobos_core::render::render(&diags, "k.pho", &src, false);
    assert!(diags.iter().any(|d| d.code == "P0700"), "{text}");
    text.contains("use `ctx.warp`")
}

#[test]
fn p0700_suggests_ctx_warp_where_control_varies_through_ctx_thread() {
    let sum = "    O[0, 0] = sum<over ctx.lane>(v)\n  }";
    for cond in [
        "ctx.thread < 64",
        "ctx.thread / 16 == 1",
        "ctx.block.x * ctx.threads + ctx.thread >= 256",
    ] {
        assert!(warp_help(&format!("{ROW}  if {cond} {{\n{sum}")), "{cond}");
    }
    // Through a `let`, and in loop bounds.
    assert!(warp_help(&format!(
        "{ROW}  let half = ctx.thread / 16\n  if half == 1 {{\n{sum}"
    )));
    assert!(warp_help(&format!(
        "{ROW}  var acc = v\n  for i in range(0, ctx.thread / 16) {{\n    acc = shfl<xor 1>(acc)\n  }}\n  O[0, 0] = acc"
    )));
    // Lanes, data and `var`s: `ctx.warp` would not say the same.
    for cond in [
        "ctx.lane == 0",
        "ctx.thread % 32 == 0",
        "(ctx.thread & 3) == 0",
        "v > 0.0",
        "A[0, ctx.thread] > 0.0",
    ] {
        assert!(!warp_help(&format!("{ROW}  if {cond} {{\n{sum}")), "{cond}");
    }
}

#[test]
fn a_warp_uniform_return_keeps_lane_collectives_but_not_cta_ones() {
    let ret = format!("{ROW}  if row >= N {{\n    return\n  }}\n");
    accepted(&format!("{ret}  O[0, row] = sum<over ctx.lane>(v)"));
    let cta = format!("{ret}  O[0, 0] = sum<over ctx.thread>(v)");
    rejected(&cta, "P0701", line(&cta, "sum<over ctx.thread>"));
    let tile = format!("{ret}  var t = x[0 :+ 1, :]\n  O[0, 0] = t[0, 0]");
    rejected(&tile, "P0702", line(&tile, "var t = x[0 :+ 1, :]"));
    // A return every thread takes or none does changes nothing.
    accepted(&format!(
        "{ROW}  if N < 2 {{\n    return\n  }}\n  var t = x[0 :+ 1, :]\n  O[0, 0] = sum<over ctx.thread>(t[0, ctx.thread])"
    ));
}

#[test]
fn rejects_collective_after_a_varying_break_in_its_loop() {
    // A lane-varying break: the rest of the body, and every later trip.
    let brk = format!(
        "{ROW}  var acc = 0.0\n  for k in range(0, 4) {{\n    acc += sum<over ctx.lane>(v)\n    if v > 0.5 {{\n      break\n    }}\n  }}\n  O[0, 0] = acc"
    );
    rejected(&brk, "P0700", line(&brk, "sum<over ctx.lane>"));
    assert_cause(&brk, line(&brk, "break"), "`break`");
    // After the loop every lane is back: the collective is fine there.
    accepted(&format!(
        "{ROW}  var acc = 0.0\n  for k in range(0, 4) {{\n    if v > 0.5 {{\n      break\n    }}\n    acc += v\n  }}\n  O[0, 0] = sum<over ctx.lane>(acc)"
    ));
    // continue: the rest of the body only.
    accepted(&format!(
        "{ROW}  var acc = 0.0\n  for k in range(0, 4) {{\n    acc += sum<over ctx.lane>(v)\n    if v > 0.5 {{\n      continue\n    }}\n    acc += 1.0\n  }}\n  O[0, 0] = acc"
    ));
    let cont = format!("{ROW}  var acc = 0.0\n  for k in range(0, 4) {{\n    if v > 0.5 {{\n      continue\n    }}\n    acc += sum<over ctx.lane>(v)\n  }}\n  O[0, 0] = acc");
    rejected(&cont, "P0700", line(&cont, "sum<over ctx.lane>"));
}

#[test]
fn rejects_a_varying_while_condition_around_a_collective() {
    let wh = format!(
        "{ROW}  var n = v\n  while n > 0.0 {{\n    n -= sum<over ctx.lane>(v)\n  }}\n  O[0, 0] = n"
    );
    rejected(&wh, "P0700", line(&wh, "sum<over ctx.lane>"));
    accepted(&format!(
        "{ROW}  var k = 0\n  while k < N {{\n    O[0, k] = sum<over ctx.thread>(v)\n    k += 1\n  }}"
    ));
}

#[test]
fn what_comes_before_a_varying_return_keeps_uniform_control() {
    // Each pass of the checker starts again from the top of the kernel.
    accepted(&format!(
        "{ROW}  var t = x[0 :+ 1, :]\n  let s = sum<over ctx.thread>(t[0, ctx.thread])\n  if ctx.lane == 0 {{\n    return\n  }}\n  O[0, 0] = s"
    ));
}

#[test]
fn a_varying_inner_loop_ends_with_its_body() {
    // The inner loop's control must not outlive it inside the outer loop
    // (found by the fuzzer's generated programs, seed 15).
    accepted(&format!(
        "{ROW}  var acc = 0.0\n  for i in range(0, 3) {{\n    for j in range(4, ctx.lane & 3) {{\n      acc += v\n    }}\n    acc += sum<over ctx.lane>(v)\n  }}\n  O[0, 0] = acc"
    ));
}
