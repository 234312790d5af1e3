//! Shared scratch tiles (`var s = shared<f32>[ctx.warps, 33]`): what the
//! checker accepts, each error path with its code (P0440, P0441), and what
//! the backend makes of them.

mod common;

use common::codes;
use phobos_core::{compile, CompileOptions};

fn k(body: &str) -> String {
    format!(
        "@launch(128)\n@autotune(P in [33])\nkernel k(A: tensor<f32>[N, 32], B: tensor<f32>[N, 32], n: i32) {{\n{body}\n}}\n"
    )
}

fn ptx(src: &str) -> String {
    common::ptx_of(src, 80).remove(0)
}

#[test]
fn a_scratch_tile_of_constant_shape_is_a_tile_nothing_is_copied_into() {
    let src = k("  var s = shared<f32>[ctx.warps, P]\n  let t = shared<i32>[4 * 8]\n  s[ctx.warp, ctx.lane] = A[0, ctx.lane]\n  t[ctx.lane] = ctx.lane\n  B[0, ctx.lane] = s[3 - ctx.warp, 31 - ctx.lane] + f32(t[31 - ctx.lane])");
    assert_eq!(codes(&src), Vec::<&str>::new());
    let p = ptx(&src);
    // 4 x 33 f32 and 32 i32 in the shared plan; no global load feeds them
    // but the one the kernel wrote.
    assert!(p.contains(".shared .align 16 .b8 k__P33$smem["), "{p}");
    assert_eq!(p.matches("ld.global").count(), 1, "{p}");
    // Row stride 33 words: the store's address uses 132 bytes per row.
    assert!(p.contains("132"), "{p}");
}

#[test]
fn a_scratch_shape_must_be_constant_and_positive() {
    common::gives_each(
        k,
        &[
            ("  var s = shared<f32>[n, 4]\n  s[0, 0] = 1.0", "P0440"),
            ("  var s = shared<f32>[0]\n  s[0] = 1.0", "P0440"),
            ("  var s = shared<f32>[4, -2]\n  s[0, 0] = 1.0", "P0440"),
            ("  var s = shared<f32>[N]\n  s[0] = 1.0", "P0440"),
            ("  var s = shared<f32>[]\n  s[0] = 1.0", "P0440"),
            ("  var s = shared<f32>[2.0]\n  s[0] = 1.0", "P0403"),
        ],
    );
    // An unknown type is a syntax error: the declaration is dropped.
    assert_eq!(codes(&k("  var s = shared<float>[4]"))[0], "P0104");
    // The failed declaration does not cascade into its uses.
    assert_eq!(
        codes(&k(
            "  var s = shared<f32>[n]\n  s[0] = 1.0\n  B[0, 0] = s[0]"
        )),
        ["P0440"]
    );
}

#[test]
fn scratch_is_declared_on_its_own() {
    common::gives_each(
        k,
        &[
            ("  let x = shared<f32>[4][0]\n  B[0, 0] = x", "P0441"),
            ("  B[0, 0] = shared<f32>[4]", "P0441"),
            ("  var s: f32 = shared<f32>[4]", "P0401"),
            // Subscripts and rank as for any tile.
            ("  var s = shared<f32>[4, 4]\n  s[0] = 1.0", "P0500"),
            ("  var s = shared<f32>[4]\n  s = 1.0", "P0207"),
        ],
    );
    // `shared` stays an ordinary name where no `<type>` follows.
    assert_eq!(
        codes(&k("  let shared = 3\n  B[0, 0] = f32(shared)")),
        Vec::<&str>::new()
    );
}

#[test]
fn scratch_counts_against_the_shared_limit() {
    let src = "@launch(32)\nkernel k(B: tensor<f32>[4]) {\n  var s = shared<f32>[64, 1024]\n  s[0, ctx.lane] = 1.0\n  B[0] = s[0, 3]\n}\n";
    let (_, diags) = compile(src, "k.pho", &CompileOptions::for_arch(75));
    assert_eq!(
        diags.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(),
        ["P0801"]
    );
}

/// Regression: the automatic unrolling of a loop whose bounds differ
/// between threads copied a body that writes a tile, and the barrier
/// analysis, which takes different trips of such a loop to touch
/// different elements, saw the copies in one trip as two writes by
/// different threads it could not separate (P0802 on a correct kernel).
#[test]
fn a_grid_stride_loop_that_writes_a_tile_is_not_unrolled_into_a_false_hazard() {
    let src = "@launch(256)\nkernel k(A: tensor<f32>[64, 32], B: tensor<f32>[64, 32]) {\n  var t = A[0 :+ 32, :]\n  for r in range(ctx.warp, 32, ctx.warps) {\n    t[r, ctx.lane] = A[r + 32, ctx.lane] * 2.0\n  }\n  B[0 :+ 32, :] = t\n}\n";
    let p = ptx(src);
    assert_eq!(
        p.matches("st.shared.f32").count(),
        1,
        "one body, not unrolled:\n{p}"
    );
}

#[test]
fn a_partial_fill_copies_a_tensor_box_into_a_constant_box_of_a_tile() {
    let ok = k("  var s = shared<f32>[8, 33]\n  s[0 :+ 8, 1 :+ 32] = A[ctx.block.x * 8 :+ 8, :]\n  B[0, ctx.lane] = s[3, ctx.lane + 1]");
    assert_eq!(codes(&ok), Vec::<&str>::new());
    // Starts inside the tile are constants, and the box fits.
    common::gives_each(k, &[
        ("  var s = shared<f32>[8, 33]\n  s[0 :+ 8, n :+ 32] = A[0 :+ 8, :]", "P0442"),
        ("  var s = shared<f32>[8, 33]\n  s[0 :+ 8, 2 :+ 32] = A[0 :+ 8, :]", "P0442"),
        // The source is a tensor box of the same shape and type.
        ("  var s = shared<f32>[8, 33]\n  s[0 :+ 8, 0 :+ 16] = A[0 :+ 8, :]", "P0509"),
        ("  var s = shared<i32>[8, 32]\n  s[0 :+ 8, :] = A[0 :+ 8, :]", "P0509"),
        ("  var s = shared<f32>[8, 32]\n  var u = shared<f32>[8, 32]\n  s[0 :+ 8, :] = u[0 :+ 8, :]", "P0509"),
        ("  var s = shared<f32>[8, 32]\n  s[0 :+ 8, :] = 1.0", "P0509"),
        ("  var s = shared<f32>[8, 32]\n  s[0 :+ 8, :] += A[0 :+ 8, :]", "P0509"),
        // A fill is a CTA-wide statement: uniform control (P0702).
        ("  var s = shared<f32>[8, 32]\n  if ctx.thread < 4 {\n    s[0 :+ 8, :] = A[0 :+ 8, :]\n  }", "P0702"),
    ]);
}

#[test]
fn fills_of_disjoint_boxes_need_no_barrier_between_them_overlapping_ones_do() {
    let fills = |second: &str| {
        let src = format!("@launch(64)\nkernel k(A: tensor<f32>[2, 64], B: tensor<f32>[2, 64]) {{\n  var t = shared<f32>[2, 72]\n  t[0 :+ 2, 4 :+ 64] = A[0 :+ 2, :]\n  {second}\n  B[0, ctx.thread] = t[0, ctx.thread + 4]\n}}\n");
        ptx(&src).matches("bar.sync").count()
    };
    // Before the read only.
    assert_eq!(fills("t[0 :+ 2, 0 :+ 4] = A[0 :+ 2, -4 :+ 4]"), 1);
    // Columns 0 .. 8 overlap 4 .. 68: the second fill waits for the first.
    assert_eq!(fills("t[0 :+ 2, 0 :+ 8] = A[0 :+ 2, -4 :+ 8]"), 2);
}

/// Issue 26 item 3: a constant index outside a shared tile is P0417, as for
/// a register array (the plan packs buffers side by side, so `s1[-1]` was
/// the neighbour's last element). Runs are checked over their whole length;
/// indices known only at run time are the simulator's memcheck's.
#[test]
fn a_constant_index_outside_a_shared_tile_is_p0417() {
    common::gives_each(
        k,
        &[
            ("  var s1 = shared<f32>[32]\n  s1[-1] = 7.0", "P0417"),
            ("  var s1 = shared<f32>[32]\n  s1[32] = 7.0", "P0417"),
            (
                "  var s1 = shared<f32>[32]\n  s1[ctx.lane] = 1.0\n  B[0, ctx.lane] = s1[4 * 8]",
                "P0417",
            ),
            ("  var s = shared<f32>[4, 33]\n  s[4, 0] = 1.0", "P0417"),
            ("  var s = shared<f32>[4, 33]\n  s[0, -1] = 1.0", "P0417"),
            (
                "  var s = shared<f32>[32]\n  s[30 :+ 4] = A[0, 0 :+ 4]",
                "P0417",
            ),
            (
                "  var s = shared<f32>[32]\n  s[-2 :+ 4] = A[0, 0 :+ 4]",
                "P0417",
            ),
            // A copied tile is bounded the same way.
            (
                "  var t = A[0 :+ 4, :]\n  B[0, ctx.lane] = t[4, ctx.lane]",
                "P0417",
            ),
        ],
    );
    // At the edges, and at run-time indices, it checks.
    for body in [
        "  var s = shared<f32>[32]\n  s[0] = 1.0\n  s[31] = 2.0\n  s[28 :+ 4] = A[0, 0 :+ 4]\n  s[ctx.lane] = 3.0",
        "  var s = shared<f32>[4, 33]\n  s[3, 32] = 1.0\n  s[0, 0] = 2.0",
    ] {
        assert_eq!(codes(&k(body)), Vec::<&str>::new(), "{body}");
    }
}
