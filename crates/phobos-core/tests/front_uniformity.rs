//! The uniformity suite: small kernels, accepted and rejected. Control that
//! differs only between warps admits lane collectives and shuffles but not
//! CTA collectives or tile statements; control that differs between lanes
//! admits none of them.

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

fn accepted(body: &str) {
    let src = kernel(body);
    let (kernels, diags) = phobos_core::check_source(&src);
    let text = phobos_core::render::render(&diags, "k.pho", &src, false);
    assert!(diags.is_empty(), "rejected:\n{text}");
    assert_eq!(kernels.len(), 1);
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

#[test]
fn lane_collective_at_top_level() {
    accepted(&format!("{ROW}  O[0, 0] = sum<over ctx.lane>(v)"));
}

#[test]
fn lane_collective_under_warp_condition() {
    accepted(&format!(
        "{ROW}  if row < N {{\n    O[0, row] = sum<over ctx.lane>(v)\n  }}"
    ));
}

#[test]
fn shuffle_under_ctx_warp_condition() {
    accepted(&format!(
        "{ROW}  if ctx.warp == 0 {{\n    O[0, 0] = shfl<xor 1>(v)\n  }}"
    ));
}

#[test]
fn lane_collective_in_uniform_loop() {
    accepted(&format!("{ROW}  var acc = 0.0\n  for i in range(0, N) {{\n    acc += sum<over ctx.lane>(A[i, ctx.thread])\n  }}\n  O[0, 0] = acc"));
}

#[test]
fn lane_collective_in_warp_strided_loop() {
    accepted(&format!("{ROW}  for r in range(ctx.warp, N, ctx.warps) {{\n    O[0, r] = sum<over ctx.lane>(A[r, ctx.thread])\n  }}"));
}

#[test]
fn cta_collective_at_top_level_and_in_uniform_loop() {
    accepted(&format!("{ROW}  for i in range(0, 4) {{\n    O[0, i] = sum<over ctx.thread>(A[i, ctx.thread])\n  }}"));
}

#[test]
fn cta_collective_under_uniform_condition() {
    accepted(&format!(
        "{ROW}  if N > 4 && ctx.block.x == 0 {{\n    O[0, 0] = max<over ctx.thread>(v)\n  }}"
    ));
}

#[test]
fn full_warp_result_steers_a_lane_collective() {
    accepted(&format!("{ROW}  let t = sum<over ctx.lane>(v)\n  if t > 0.0 {{\n    O[0, row] = max<over ctx.lane>(v)\n  }}"));
}

#[test]
fn cta_result_steers_a_cta_collective() {
    accepted(&format!("{ROW}  let t = sum<over ctx.thread>(v)\n  if t > 0.0 {{\n    O[0, 0] = min<over ctx.thread>(v)\n  }}"));
}

#[test]
fn broadcast_shuffle_steers_a_lane_collective() {
    accepted(&format!("{ROW}  let first = shfl<from 0>(v)\n  if first > 0.0 {{\n    O[0, row] = sum<over ctx.lane>(v)\n  }}"));
}

#[test]
fn variable_assigned_under_warp_control_is_warp_uniform() {
    accepted(&format!("{ROW}  var go = false\n  if ctx.warp == 1 {{\n    go = true\n  }}\n  if go {{\n    O[0, 0] = sum<over ctx.lane>(v)\n  }}"));
}

#[test]
fn shuffle_with_a_varying_source_lane() {
    accepted(&format!(
        "{ROW}  O[0, 0] = shfl<from ctx.lane ^ 3>(v) + shfl<down ctx.lane % 4>(v)"
    ));
}

#[test]
fn tile_copy_from_the_block_index() {
    accepted("  var xs = A[ctx.block.x :+ 1, :]\n  O[0, 0] = xs[0, ctx.thread]");
}

#[test]
fn rejects_lane_collective_under_lane_condition() {
    rejected(
        &format!("{ROW}  if ctx.lane == 0 {{\n    O[0, 0] = sum<over ctx.lane>(v)\n  }}"),
        "P0700",
        6,
    );
}

#[test]
fn rejects_lane_collective_under_thread_condition() {
    rejected(
        &format!("{ROW}  if ctx.thread < 64 {{\n    O[0, 0] = sum<over ctx.lane>(v)\n  }}"),
        "P0700",
        6,
    );
}

#[test]
fn rejects_lane_collective_in_the_else_of_a_lane_condition() {
    rejected(&format!("{ROW}  if ctx.lane == 0 {{\n    O[0, 0] = v\n  }} else {{\n    O[0, 1] = sum<over ctx.lane>(v)\n  }}"), "P0700", 8);
}

#[test]
fn rejects_shuffle_in_loop_with_lane_bounds() {
    rejected(&format!("{ROW}  var acc = v\n  for i in range(0, ctx.lane) {{\n    acc = shfl<xor 1>(acc)\n  }}\n  O[0, 0] = acc"), "P0700", 7);
}

#[test]
fn rejects_lane_collective_under_condition_on_a_load() {
    rejected(
        &format!("{ROW}  if v > 0.0 {{\n    O[0, 0] = sum<over ctx.lane>(v)\n  }}"),
        "P0700",
        6,
    );
}

#[test]
fn rejects_condition_on_a_width_limited_result() {
    rejected(&format!("{ROW}  let p = sum<over ctx.lane, width 8>(v)\n  if p > 0.0 {{\n    O[0, 0] = sum<over ctx.lane>(v)\n  }}"), "P0700", 7);
}

#[test]
fn rejects_condition_on_a_varying_shuffle() {
    rejected(&format!("{ROW}  let n = shfl<down 1>(v)\n  if n > 0.0 {{\n    O[0, 0] = select(any<over ctx.lane>(v > n), 1.0, 0.0)\n  }}"), "P0700", 7);
}

#[test]
fn rejects_cta_collective_under_warp_condition() {
    rejected(
        &format!("{ROW}  if ctx.warp == 0 {{\n    O[0, 0] = sum<over ctx.thread>(v)\n  }}"),
        "P0701",
        6,
    );
}

#[test]
fn rejects_cta_collective_in_warp_varying_loop() {
    rejected(
        &format!(
            "{ROW}  for i in range(0, ctx.warp) {{\n    O[0, i] = sum<over ctx.thread>(v)\n  }}"
        ),
        "P0701",
        6,
    );
}

#[test]
fn rejects_cta_collective_under_warp_collective_result() {
    rejected(&format!("{ROW}  let t = sum<over ctx.lane>(v)\n  if t > 0.0 {{\n    O[0, 0] = sum<over ctx.thread>(v)\n  }}"), "P0701", 7);
}

#[test]
fn rejects_a_variable_made_varying_later_in_a_loop() {
    rejected(
        &format!("{ROW}  var go = true\n  for i in range(0, 4) {{\n    if go {{\n      O[0, i] = sum<over ctx.lane>(v)\n    }}\n    go = v > 0.0\n  }}"),
        "P0700",
        8,
    );
}

#[test]
fn rejects_tile_copy_in_a_lane_loop() {
    rejected(
        "  for i in range(0, ctx.lane) {\n    var xs = A[i :+ 1, :]\n    O[0, 0] = xs[0, 0]\n  }",
        "P0702",
        4,
    );
}

#[test]
fn rejects_tile_copy_from_a_warp_start() {
    rejected(
        "  var xs = A[ctx.warp :+ 1, :]\n  O[0, 0] = xs[0, ctx.thread]",
        "P0703",
        3,
    );
}

#[test]
fn rejects_tile_store_under_lane_condition() {
    rejected(
        "  var xs = A[0 :+ 1, :]\n  if ctx.lane == 0 {\n    A[1 :+ 1, :] = xs\n  }",
        "P0702",
        5,
    );
}

#[test]
fn a_uniform_load_from_a_tensor_the_kernel_only_reads_is_uniform() {
    accepted(&format!(
        "{ROW}  if x[0, 0] > 0.0 {{\n    O[0, 0] = sum<over ctx.thread>(v)\n  }}"
    ));
}

#[test]
fn a_uniform_load_from_a_tensor_the_kernel_writes_varies() {
    rejected(
        &format!("{ROW}  if O[0, 0] > 0.0 {{\n    O[0, 1] = sum<over ctx.thread>(v)\n  }}"),
        "P0701",
        6,
    );
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
        rejected(
            &format!("{ROW}  if {cond} {{\n    O[0, 0] = sum<over ctx.lane>(v)\n  }}"),
            "P0700",
            6,
        );
    }
}

// The right side of `&&` / `||` runs only where the left side lets it, so a
// collective there is under the left side's control.
#[test]
fn rejects_cta_collective_right_of_and() {
    // Even under a uniform guard: CTA collectives run before their
    // statement, so they could not honour the guard.
    for guard in ["ctx.thread < N", "ctx.block.x < 4"] {
        rejected(
            &format!("{ROW}  if {guard} && sum<over ctx.thread>(A[ctx.block.x, 0]) > 0.0 {{\n    O[0, 0] = 1.0\n  }}"),
            "P0704",
            5,
        );
    }
}

#[test]
fn rejects_lane_collective_right_of_a_varying_or() {
    rejected(
        &format!(
            "{ROW}  let big = ctx.lane > 3 || max<over ctx.lane>(v) > 1.0\n  O[0, 0] = f32(big)"
        ),
        "P0700",
        5,
    );
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

#[test]
fn rejects_lane_collective_after_a_lane_varying_return() {
    // Line 5: the condition; line 6: the return; line 8: the collective.
    let body =
        format!("{ROW}  if ctx.lane == 0 {{\n    return\n  }}\n  O[0, 0] = sum<over ctx.lane>(v)");
    rejected(&body, "P0700", 8);
    let (text, labels) = labels(&body);
    assert!(
        labels
            .iter()
            .any(|(p, line, m)| !p && *line == 6 && m.contains("`return`")),
        "no label at the return:\n{text}"
    );
    assert!(
        labels
            .iter()
            .any(|(p, line, m)| !p && *line == 5 && m.contains("condition")),
        "no label at the condition that made it vary:\n{text}"
    );
}

#[test]
fn lane_collective_right_of_a_warp_uniform_and() {
    accepted(&format!(
        "{ROW}  if row < N && sum<over ctx.lane>(v) > 0.0 {{\n    O[0, row] = 1.0\n  }}"
    ));
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
    rejected(
        &format!("{ret}  O[0, 0] = sum<over ctx.thread>(v)"),
        "P0701",
        8,
    );
    rejected(
        &format!("{ret}  var t = x[0 :+ 1, :]\n  O[0, 0] = t[0, 0]"),
        "P0702",
        8,
    );
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
    rejected(&brk, "P0700", 7);
    let (text, labels) = labels(&brk);
    assert!(
        labels
            .iter()
            .any(|(p, line, m)| !p && *line == 9 && m.contains("`break`")),
        "no label at the break:\n{text}"
    );
    // After the loop every lane is back: the collective is fine there.
    accepted(&format!(
        "{ROW}  var acc = 0.0\n  for k in range(0, 4) {{\n    if v > 0.5 {{\n      break\n    }}\n    acc += v\n  }}\n  O[0, 0] = sum<over ctx.lane>(acc)"
    ));
    // continue: the rest of the body only.
    accepted(&format!(
        "{ROW}  var acc = 0.0\n  for k in range(0, 4) {{\n    acc += sum<over ctx.lane>(v)\n    if v > 0.5 {{\n      continue\n    }}\n    acc += 1.0\n  }}\n  O[0, 0] = acc"
    ));
    rejected(
        &format!("{ROW}  var acc = 0.0\n  for k in range(0, 4) {{\n    if v > 0.5 {{\n      continue\n    }}\n    acc += sum<over ctx.lane>(v)\n  }}\n  O[0, 0] = acc"),
        "P0700",
        10,
    );
}

#[test]
fn rejects_a_varying_while_condition_around_a_collective() {
    rejected(
        &format!("{ROW}  var n = v\n  while n > 0.0 {{\n    n -= sum<over ctx.lane>(v)\n  }}\n  O[0, 0] = n"),
        "P0700",
        7,
    );
    accepted(&format!(
        "{ROW}  var k = 0\n  while k < N {{\n    O[0, k] = sum<over ctx.thread>(v)\n    k += 1\n  }}"
    ));
}

#[test]
fn a_return_in_a_loop_makes_later_trips_varying() {
    rejected(
        &format!("{ROW}  for k in range(0, 4) {{\n    O[0, k] = sum<over ctx.lane>(v)\n    if v > 0.5 {{\n      return\n    }}\n  }}"),
        "P0700",
        6,
    );
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
