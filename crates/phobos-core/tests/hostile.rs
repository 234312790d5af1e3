//! Hostile input to the compiler itself: sizes that overflow 32 bits,
//! literals that overflow their type, autotune values that are no values,
//! and `fn` nests that grow exponentially when substituted. Each must end in
//! a clear diagnostic (or a small output), never a wrap, a panic or gigabytes.

#[path = "common/hostile_kernels.rs"]
mod hostile_kernels;

use hostile_kernels::{tile_kernel, tuned_kernel, unroll_nest};
use phobos_core::{compile, CompileOptions, Diagnostic};

fn diags(src: &str) -> Vec<Diagnostic> {
    compile(src, "k.pho", &CompileOptions::default()).1
}

fn the_error(src: &str, code: &str) -> Diagnostic {
    let ds = diags(src);
    let errors: Vec<&Diagnostic> = ds.iter().filter(|d| d.is_error()).collect();
    assert!(
        errors.iter().any(|d| d.code == code),
        "expected {code}, got {:?}",
        errors
            .iter()
            .map(|d| (d.code, d.message.clone()))
            .collect::<Vec<_>>()
    );
    ds.into_iter()
        .find(|d| d.code == code)
        .expect("found above")
}

fn ptx(src: &str) -> String {
    let (kernels, ds) = compile(src, "k.pho", &CompileOptions::default());
    let text = phobos_core::render::render(&ds, "k.pho", src, false);
    assert!(ds.iter().all(|d| !d.is_error()), "rejected:\n{text}");
    kernels.iter().map(|k| k.ptx.as_str()).collect()
}

#[test]
fn a_tile_of_more_than_four_gigabytes_is_p0801_not_a_wrapped_size() {
    // 1431655766 * 3 * 4 bytes = 2^34 + 8: wrapped at 32 bits, 8 bytes.
    let d = the_error(&tile_kernel("1431655766", "3"), "P0801");
    assert!(d.message.contains("17179869200 bytes"), "{}", d.message);
    // 65536 * 65536 * 4 = 2^34: wrapped, 0 bytes and no `.shared` at all.
    let d = the_error(&tile_kernel("65536", "65536"), "P0801");
    assert!(d.message.contains("17179869184 bytes"), "{}", d.message);
}

fn literal_kernel(decl: &str) -> String {
    format!("@launch(32)\nkernel k(y: tensor<f32>[N]) {{\n  {decl}\n  y[ctx.thread] = f32(a)\n}}\n")
}

#[test]
fn a_float_literal_that_rounds_to_infinity_is_p0403() {
    for decl in [
        "let a: f32 = 1e39",
        "let a: f32 = -1e39",
        "let a: f16 = 70000.0",
        "let a: f16 = 65520",
        "let a: bf16 = 3.4e38",
        "let a: f64 = 1e999",
    ] {
        let d = the_error(&literal_kernel(decl), "P0403");
        assert!(d.message.contains("does not fit"), "{decl}: {}", d.message);
        assert!(
            d.notes.iter().any(|n| n.contains("largest finite")),
            "{decl}"
        );
    }
    // The largest finite values themselves (and what rounds down to them) fit.
    for decl in [
        "let a: f32 = 3.4028235e38",
        "let a: f16 = 65504.0",
        "let a: f16 = 65519.0",
        "let a: bf16 = 3.38e38",
        "let a: f64 = 1e300",
    ] {
        ptx(&literal_kernel(decl));
    }
}

fn autotune_kernel(values: &str) -> String {
    format!(
        "@autotune(K in [{values}])\n@launch(32)\nkernel k(W: tensor<f32>[N, K], y: tensor<f32>[N]) {{\n  y[ctx.thread] = W[ctx.thread, 0]\n}}\n"
    )
}

#[test]
fn autotune_values_a_dim_cannot_take_are_p0306() {
    let ds = diags(&autotune_kernel("0, -4, 64"));
    let labels: Vec<&str> = ds
        .iter()
        .filter(|d| d.code == "P0306")
        .flat_map(|d| d.labels.iter().map(|l| l.message.as_str()))
        .collect();
    assert_eq!(labels, ["0 is not a dim size", "-4 is not a dim size"]);
    let d = the_error(&autotune_kernel("64, 64"), "P0306");
    assert!(d.labels[0].message.contains("given twice"));
    // A free constant may be zero or negative.
    ptx("@autotune(B in [0, -4])\n@launch(32)\nkernel k(y: tensor<i32>[N]) {\n  y[ctx.thread] = B\n}\n");
}

#[test]
fn an_autotune_value_outside_i32_says_so() {
    let d = the_error(&autotune_kernel("2147483648"), "P0306");
    assert_eq!(d.labels[0].message, "2147483648 does not fit in i32");
}

/// `fn g0(a) = a*a*...` (8 factors) and `g{i}(a) = g{i-1}(g{i-1}(a))`:
/// substituted, `g{depth}` is 8^depth leaves.
fn fn_nest(depth: usize) -> String {
    let mut s = String::from("fn g0(a) = a*a*a*a*a*a*a*a\n");
    for i in 1..=depth {
        s += &format!("fn g{i}(a) = g{j}(g{j}(a))\n", j = i - 1);
    }
    s + &format!(
        "@launch(32)\nkernel k(x: tensor<f32>[N], y: tensor<f32>[N]) {{\n  y[ctx.thread] = g{depth}(x[ctx.thread])\n}}\n"
    )
}

#[test]
fn nested_fns_grow_linearly_since_arguments_are_evaluated_once() {
    let started = std::time::Instant::now();
    let text = ptx(&fn_nest(6));
    // 2^6 + 1 calls of g0, each 7 multiplications: a few thousand lines,
    // where substitution gave 34 MB.
    assert!(text.len() < 200_000, "{} bytes of PTX", text.len());
    assert!(started.elapsed().as_secs() < 20);
    // The argument, a load, is loaded once.
    assert_eq!(text.matches("ld.global").count(), 1, "{text}");
}

#[test]
fn a_fn_on_the_right_of_and_keeps_its_guard() {
    let src = "fn pos(a) = a * a > 0.0\n@launch(32)\nkernel k(x: tensor<f32>[N], y: tensor<f32>[N]) {\n  let i = ctx.thread\n  if i < N && pos(x[i]) {\n    y[i] = 1.0\n  }\n}\n";
    let text = ptx(src);
    // The load stays behind the branch that skips it.
    let load = text.find("ld.global").expect("a load");
    let branch = text.find("bra").expect("a branch");
    assert!(branch < load, "{text}");
}

#[test]
fn a_long_flat_sum_without_fns_does_not_mention_fns() {
    let terms: Vec<String> = (0..400).map(|_| "x[0]".to_string()).collect();
    let src = format!(
        "@launch(32)\nkernel k(x: tensor<f32>[N], y: tensor<f32>[N]) {{\n  y[ctx.thread] = {}\n}}\n",
        terms.join(" + ")
    );
    let d = the_error(&src, "P0211");
    assert!(!d.message.contains("fn"), "{}", d.message);
    let d = the_error(&fn_nest(40), "P0211");
    assert!(d.message.contains("inlining"), "{}", d.message);
}

#[test]
fn a_float_literal_converted_to_an_integer_is_converted() {
    // Was P0403 with the help "convert with `i32(...)`", inside `i32(...)`.
    let text = ptx("@launch(32)\nkernel k(y: tensor<i32>[N]) {\n  y[ctx.thread] = i32(-1.5)\n}\n");
    assert!(text.contains("cvt.rzi.s32.f32"), "{text}");
}

#[test]
fn a_byte_order_mark_is_accepted_and_invisible_characters_are_named() {
    let src = "@launch(32)\nkernel k(y: tensor<i32>[N]) {\n  y[ctx.thread] = 1\n}\n";
    ptx(&format!("\u{feff}{src}"));
    for (bad, name) in [
        ("\u{0}", "U+0000"),
        ("\u{feff}", "U+FEFF"),
        ("\u{200b}", "U+200B"),
    ] {
        let d = the_error(&format!("{src}{bad}\n"), "P0001");
        assert_eq!(d.message, format!("unexpected character {name}"));
    }
}

#[test]
fn a_flood_of_bad_lines_gives_a_hundred_diagnostics_and_a_count() {
    for src in ["$\n".repeat(200_000), "fn = 1\n".repeat(100_000)] {
        flood(&src);
    }
}

fn flood(src: &str) {
    let (_, ds) = phobos_core::check_source(src);
    assert_eq!(ds.len(), phobos_core::diag::MAX_DIAGNOSTICS + 1);
    let last = ds.last().expect("the count");
    assert_eq!(last.code, "P0006");
    assert!(
        last.message.contains("more diagnostics"),
        "{}",
        last.message
    );
}

#[test]
fn a_source_above_one_mebibyte_is_p0005_before_it_is_lexed() {
    let src = " ".repeat(phobos_core::parser::MAX_SOURCE_BYTES + 1);
    let (_, ds) = phobos_core::check_source(&src);
    assert_eq!(
        ds.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(),
        ["P0005"]
    );
}

#[test]
fn a_grid_that_divides_by_zero_names_the_operator_as_written() {
    use phobos_core::ast::BinOp;
    use phobos_core::meta::GridExpr;
    let e = GridExpr::Binary(
        BinOp::Div,
        Box::new(GridExpr::Const(100)),
        Box::new(GridExpr::Dim("K".into())),
    );
    let err = e.eval(&|_| Some(0)).unwrap_err();
    assert!(err.contains("(100 / 0)"), "{err}");
}

#[test]
fn a_chain_of_operators_or_subscripts_is_bounded_not_a_stack_overflow() {
    // 150,000 `+` (about 900 KB): a tree 150,000 levels deep, which the
    // checker, the formatter and dropping the tree all walked recursively.
    let n = 150_000;
    let chain = format!(
        "@launch(32)\nkernel k(x: tensor<f32>[N]) {{\n  x[0] = {}1.0\n}}\n",
        "1.0 + ".repeat(n)
    );
    let subs = format!(
        "@launch(32)\nkernel k(x: tensor<f32>[N]) {{\n  x[0] = x{}\n}}\n",
        "[0]".repeat(n)
    );
    let parens = format!(
        "@launch(32)\nkernel k(x: tensor<f32>[N]) {{\n  x[0] = ({}1.0)\n  x[1] = 2.0 +\n}}\n",
        "1.0 + ".repeat(n / 2)
    );
    for src in [&chain, &subs, &parens] {
        let d = the_error(src, "P0101");
        assert!(d.message.contains("too long"), "{}", d.message);
        assert!(phobos_core::format::format_source(src).is_err());
    }
    // Recovery goes on after the long line: the next statement's error too.
    assert!(diags(&parens).iter().any(|d| d.code == "P0100"));
    // The longest chain allowed still checks (as P0211: deeper than the
    // checker's 384 levels), without a crash.
    let longest = format!(
        "@launch(32)\nkernel k(x: tensor<f32>[N]) {{\n  x[0] = {}1.0\n}}\n",
        "1.0 + ".repeat(phobos_core::parser::MAX_CHAIN)
    );
    the_error(&longest, "P0211");
}

#[test]
fn nested_unrolls_are_bounded_by_their_unrolled_size() {
    // Six nested `unroll 32` loops never finished compiling: 33^6 copies.
    let d = the_error(&unroll_nest(6, 1), "P0803");
    assert!(
        d.message.contains("5973039361 statements and expressions"),
        "{}",
        d.message
    );
    assert!(d.message.contains("the limit is 1000000"), "{}", d.message);
    assert!(d.labels[0].message.contains("32 copies"), "{:?}", d.labels);
    // Five statements in three nested loops: 33^3 * 20 = 718,740, within it;
    // ten are 1,437,480, above it.
    assert!(ptx(&unroll_nest(3, 5)).contains(".entry k"));
    the_error(&unroll_nest(3, 10), "P0803");
    // The bound sums what every loop adds, across sibling loops too.
    let mut two = unroll_nest(3, 5);
    let inner = unroll_nest(3, 5);
    let start = inner.find("for i0").expect("loop");
    let end = inner.rfind("  y[").expect("store");
    two.insert_str(two.rfind("  y[").expect("store"), &inner[start..end]);
    the_error(&two, "P0803");
}

#[test]
fn autotune_variants_are_bounded_by_their_total_size() {
    // 256 variants of 40,000 statements ran for minutes: every variant is
    // checked and compiled on its own.
    let src = tuned_kernel(256, 40_000);
    let d = the_error(&src, "P0311");
    assert!(
        d.message
            .contains("256 variants of a kernel of 120006 expressions"),
        "{}",
        d.message
    );
    assert!(
        d.message
            .contains("the limit is 1000000 for all variants together"),
        "{}",
        d.message
    );
    // 8 variants of 40,000 (960,048 expressions) are within it; 9 are not.
    assert!(ptx(&tuned_kernel(8, 40_000)).contains(".entry k__J8"));
    the_error(&tuned_kernel(9, 40_000), "P0311");
}

#[test]
fn a_number_the_lexer_refused_is_reported_once() {
    // The lexer read a too-large or malformed number as 0, and the checker
    // then reported the 0: "an unroll factor ... found 0", "`@launch(0)`",
    // "a tensor dim cannot be 0".
    let big = "99999999999999999999";
    for (code, bad) in [("P0003", big), ("P0004", "4x")] {
        let sources = [
            format!("@launch(32)\nkernel k(y: tensor<f32>[N]) {{\n  var a = 0.0\n  for i in range(0, N) unroll {bad} {{\n    a = a + 1.0\n  }}\n  y[ctx.thread] = a\n}}\n"),
            format!("@launch({bad})\nkernel k(y: tensor<f32>[N]) {{\n  y[ctx.thread] = 1.0\n}}\n"),
            format!("@launch(32)\nkernel k(y: tensor<f32>[{bad}]) {{\n  y[ctx.thread] = 1.0\n}}\n"),
            format!("@autotune(K in [{bad}, 64])\n@launch(32)\nkernel k(W: tensor<f32>[N, K], y: tensor<f32>[N]) {{\n  y[ctx.thread] = W[ctx.thread, 0]\n}}\n"),
            format!("@aligned(N = {bad})\n@launch(32)\nkernel k(y: tensor<f32>[N]) {{\n  y[ctx.thread] = 1.0\n}}\n"),
            format!("@launch(32)\nkernel k(y: tensor<f32>[N]) {{\n  y[ctx.thread] = f32({bad} + 1)\n}}\n"),
        ];
        for src in sources {
            let codes: Vec<&str> = diags(&src)
                .iter()
                .filter(|d| d.is_error())
                .map(|d| d.code.as_str())
                .collect();
            assert_eq!(codes, [code], "{src}");
        }
    }
}

#[test]
fn a_constant_dim_above_i32_is_p0203_not_truncated() {
    // `tensor<f32>[18446744073709551615, ...]` checked and compiled: the
    // dim went into the PTX as an `i32`, truncated.
    let kernel = |dim: &str| {
        format!("@launch(32)\nkernel k(y: tensor<f32>[{dim}, 4]) {{\n  y[ctx.thread % 4, 1] = 1.0\n}}\n")
    };
    for dim in ["18446744073709551615", "2147483648"] {
        let d = the_error(&kernel(dim), "P0203");
        assert_eq!(
            d.message,
            format!("the tensor dim {dim} does not fit in i32")
        );
    }
    assert!(ptx(&kernel("2147483647")).contains(".entry k"));
}

#[test]
fn a_constant_operation_without_a_value_is_p0419() {
    // `let a = 1 / 0` compiled silently to a division the language leaves
    // undefined.
    let kernel = |e: &str| {
        format!("@launch(32)\nkernel k(x: tensor<i32>[N], y: tensor<i32>[N]) {{\n  let a = {e}\n  y[ctx.thread] = a\n}}\n")
    };
    for (e, why) in [
        ("1 / 0", "integer division by zero"),
        ("7 % 0", "integer division by zero"),
        ("1 << 32", "shift by a negative amount"),
        ("1 >> -1", "shift by a negative amount"),
        ("-2147483647 - 1 + 0 * x[0]", ""),
    ] {
        let ds = diags(&kernel(e));
        let warned: Vec<&Diagnostic> = ds.iter().filter(|d| d.code == "P0419").collect();
        if why.is_empty() {
            assert!(warned.is_empty(), "{e}: {warned:?}");
            continue;
        }
        assert_eq!(warned.len(), 1, "{e}: {ds:?}");
        assert!(!warned[0].is_error(), "{e}: a warning, the kernel compiles");
        assert!(
            warned[0].message.contains(why),
            "{e}: {}",
            warned[0].message
        );
        assert!(
            warned[0].message.contains(&format!("`{e}`")),
            "{}",
            warned[0].message
        );
    }
    // The smallest i64 divided by -1; an overflow that only wraps is defined.
    let d = the_error_or_warning(&kernel("i32(i64(-9223372036854775807 - 1) / -1)"));
    assert!(
        d.message.contains("signed division overflow"),
        "{}",
        d.message
    );
    assert!(diags(&kernel("2147483647 + 1"))
        .iter()
        .all(|d| d.code != "P0419"));
    // Not constant: left to run time without a word.
    assert!(diags(&kernel("x[0] / 0")).iter().all(|d| d.code != "P0419"));
}

fn the_error_or_warning(src: &str) -> Diagnostic {
    diags(src)
        .into_iter()
        .find(|d| d.code == "P0419")
        .expect("P0419")
}
