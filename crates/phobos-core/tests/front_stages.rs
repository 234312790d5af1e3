//! `for ... stages S` (docs/language.md, "Tensor cores", "Staged loops"):
//! what the checker accepts, every rule it refuses with its code and the
//! line of its primary label (the rendered diagnostics are one snapshot),
//! the formatter's round trip, and the ring the backend makes of it on
//! sm_80 (and not on sm_75). Whole kernels are the cases of
//! `kernels/stages.txt`.

mod common;

use phobos_core::render::render;

/// A kernel around `body`, with 128 threads (4 warps) and an `@autotune`
/// constant `S`.
fn k(body: &str) -> String {
    format!(
        "@autotune(S in [3], BAD in [5])
@launch(128)
@aligned(K = 8)
kernel k(A: tensor<f16>[M, K], W: tensor<f16>[N, K], I: tensor<i32>[N], C: tensor<f32>[M, N]) {{
  let r = ctx.block.x * 64
  let c = ctx.block.y * 64
  var acc = zeros<f32>[64, 64]
{body}
  C[r :+ 64, c :+ 64] = acc
}}
"
    )
}

/// A staged K loop: `head` after `range(...)`, `pre` and `post` around
/// the copies of the body.
fn gemm(head: &str, pre: &str, post: &str) -> String {
    k(&format!(
        "  for k in range(0, K, 32){head} {{
{pre}    var a = A[r :+ 64, k :+ 32]
    var w = W[c :+ 64, k :+ 32]
{post}    acc += dot(a, trans(w))
  }}"
    ))
}

/// The case `name` of `kernels/stages.txt`.
fn stages_kernel(name: &str) -> common::Case {
    common::cases(include_str!("kernels/stages.txt"))
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name} in kernels/stages.txt"))
}

fn ptx(src: &str, arch: u32) -> String {
    common::ptx_of(src, arch).concat()
}

#[test]
fn stages_from_a_constant_or_an_autotune_constant_are_accepted() {
    for head in [" stages 2", " stages 4", " stages S", " stages (S)"] {
        let src = gemm(head, "", "");
        let (kernels, diags) = phobos_core::check_source(&src);
        assert!(diags.is_empty(), "{head}: {diags:?}");
        assert_eq!(kernels.len(), 1);
    }
}

/// Checks that `src` is refused with exactly one diagnostic, `code`, whose
/// primary label is on `line`; returns the rendered text.
fn refused_once(name: &str, src: &str, code: &str, line: u32) -> String {
    let (kernels, diags) = phobos_core::check_source(src);
    let text = render(&diags, "k.pho", src, false);
    assert!(kernels.is_empty(), "{name}: accepted");
    assert_eq!(diags.len(), 1, "{name}: one diagnostic:\n{text}");
    assert_eq!(diags[0].code, code, "{name}:\n{text}");
    let primary = diags[0].labels.iter().find(|l| l.primary).expect("primary");
    let at = phobos_core::source::LineIndex::new(src).line(primary.span.start as usize);
    assert_eq!(at, line, "{name}: wrong line:\n{text}");
    text
}

#[test]
fn every_rule_of_a_staged_loop_is_refused_with_its_code() {
    let cases: Vec<(&str, String, &str, u32)> = vec![
        ("count 5", gemm(" stages 5", "", ""), "P0470", 8),
        ("count 1", gemm(" stages 1", "", ""), "P0470", 8),
        ("count autotune 5", gemm(" stages BAD", "", ""), "P0470", 8),
        ("count not constant", gemm(" stages M", "", ""), "P0470", 8),
        (
            "step not constant",
            k("  for k in range(0, K, M) stages 2 {
    var a = A[r :+ 64, k :+ 32]
    var w = W[c :+ 64, k :+ 32]
    acc += dot(a, trans(w))
  }"),
            "P0470",
            8,
        ),
        (
            "with unroll",
            gemm(" unroll 2 stages 2", "", ""),
            "P0470",
            8,
        ),
        (
            "no copy",
            k("  for k in range(0, K, 32) stages 2 {
    acc = acc * 2.0
  }"),
            "P0471",
            8,
        ),
        (
            "break",
            gemm(" stages 2", "", "    if k > 64 {\n      break\n    }\n"),
            "P0471",
            12,
        ),
        (
            "return",
            gemm(" stages 2", "", "    if k > 64 {\n      return\n    }\n"),
            "P0471",
            12,
        ),
        (
            "copy under an if",
            k("  for k in range(0, K, 32) stages 2 {
    var a = A[r :+ 64, k :+ 32]
    if k > 0 {
      var w = W[c :+ 64, k :+ 32]
      acc += dot(a, trans(w))
    }
  }"),
            "P0472",
            11,
        ),
        (
            "start computed in the loop",
            k("  for k in range(0, K, 32) stages 2 {
    let kk = k + 0
    var a = A[r :+ 64, kk :+ 32]
    var w = W[c :+ 64, k :+ 32]
    acc += dot(a, trans(w))
  }"),
            "P0472",
            10,
        ),
        (
            "start read from memory",
            k("  for k in range(0, K, 32) stages 2 {
    var a = A[I[k] :+ 64, k :+ 32]
    var w = W[c :+ 64, k :+ 32]
    acc += dot(a, trans(w))
  }"),
            "P0472",
            9,
        ),
        (
            "start from a var the loop assigns",
            k("  var off = 0
  for k in range(0, K, 32) stages 2 {
    var a = A[r + off :+ 64, k :+ 32]
    var w = W[c :+ 64, k :+ 32]
    acc += dot(a, trans(w))
    off = 0
  }"),
            "P0472",
            10,
        ),
        (
            "tile written in the loop",
            gemm(" stages 2", "", "    a[0, 0] = 1.0\n"),
            "P0472",
            11,
        ),
        (
            "a fill into the staged tile",
            gemm(
                " stages 2",
                "",
                "    a[0 :+ 1, 0 :+ 32] = A[r :+ 1, k :+ 32]\n",
            ),
            "P0472",
            11,
        ),
    ];
    let mut rendered = String::new();
    for (name, src, code, line) in cases {
        let text = refused_once(name, &src, code, line);
        rendered.push_str(&format!("== {name}\n{text}\n"));
    }
    insta::assert_snapshot!("stages_refused", rendered);
}

#[test]
fn a_continue_may_end_a_staged_trip_early() {
    let src = gemm(" stages 3", "", "    if k == 32 {\n      continue\n    }\n");
    let (_, diags) = phobos_core::check_source(&src);
    assert!(diags.is_empty(), "{diags:?}");
}

#[test]
fn stages_survive_the_formatter() {
    let src = gemm(" stages S", "", "");
    let out = phobos_core::format::format_source(&src).expect("formats");
    assert!(out.contains("for k in range(0, K, 32) stages S {"), "{out}");
    let src = gemm(" unroll 1", "", "");
    let out = phobos_core::format::format_source(&src).expect("formats");
    assert!(out.contains("range(0, K, 32) unroll 1 {"), "{out}");
}

#[test]
fn a_staged_loop_is_a_cp_async_ring_on_sm_80_and_plain_copies_on_sm_75() {
    let staged = gemm(" stages 3", "", "");
    let plain = gemm("", "", "");
    let p80 = ptx(&staged, 80);
    // The prologue's two groups and the loop's one, each ended by a
    // commit; 16-byte chunks (K is a multiple of 8) with a src-size.
    assert_eq!(p80.matches("cp.async.commit_group;").count(), 3, "{p80}");
    assert_eq!(p80.matches("cp.async.wait_group 1;").count(), 1, "{p80}");
    assert_eq!(p80.matches("cp.async.wait_group 0;").count(), 1, "{p80}");
    assert!(p80.contains("cp.async.cg.shared.global ["), "{p80}");
    // Whole chunks never take the plain vector path (only a chunk that
    // straddles column 0 copies element by element).
    assert!(!p80.contains("st.shared.v4"), "{p80}");
    assert!(!p80.contains("ld.global.nc.v4"), "{p80}");
    // One barrier per trip, in the loop; the unstaged loop has two.
    assert_eq!(p80.matches("bar.sync").count(), 1, "{p80}");
    assert_eq!(ptx(&plain, 80).matches("bar.sync").count(), 2);
    // Three stages of 64 x 40 f16 (padded rows) per operand.
    assert!(p80.contains(".shared .align 16 .b8"), "{p80}");
    assert!(p80.contains(&format!("[{}]", 3 * 2 * 64 * 40 * 2)), "{p80}");
    // sm_75: exactly the unstaged code.
    assert_eq!(ptx(&staged, 75), ptx(&plain, 75));
}

#[test]
fn narrow_rows_copy_in_smaller_chunks_or_plainly() {
    // f32 with nothing known of K: 4-byte `.ca` chunks. f16 with nothing
    // known: 2-byte chunks, which cp.async cannot move, so plain copies in
    // the ring (still one barrier per trip).
    let f32 = &stages_kernel("narrow_rows_f32").text;
    let p = ptx(f32, 80);
    assert!(p.contains("cp.async.ca.shared.global ["), "{p}");
    assert!(p.contains("], 4, %r"), "{p}");
    let f16 = f32.replace("f32>[M, K], W: tensor<f32>", "f16>[M, K], W: tensor<f16>");
    let p = ptx(&f16, 80);
    assert!(
        !p.contains("cp.async.ca") && !p.contains("cp.async.cg"),
        "{p}"
    );
    assert!(p.contains("cp.async.commit_group;"), "{p}");
    assert_eq!(p.matches("bar.sync").count(), 1, "{p}");
}

/// An accumulator stored into a staged tile writes the ring's buffer while
/// later trips' copies may be landing in it: P0472, like any other write
/// of the tile in the loop (the rule missed this statement when both
/// arrived together).
#[test]
fn an_accumulator_stored_into_a_staged_tile_is_p0472() {
    let case = stages_kernel("accumulator_into_the_staged_tile");
    let line = case.line_in(&case.text);
    refused_once(&case.name, &case.text, &case.code, line);
}
