//! Register arrays (`var acc: f32[4, 4] = 0.0`): the forms the checker
//! accepts, each diagnostic of a bad declaration or subscript (P0416,
//! P0417, P0418, and the P0207/P0401/P0408/P0500 cases), the uniformity
//! rule (an array is as varying as what is written to any element, where
//! and under which control), and where lowering puts an array: registers
//! when every index folds (loops with constant bounds unrolled), local
//! memory when one does not.

use phobos_core::render::render;

fn diags(src: &str) -> (Vec<&'static str>, String) {
    let (_, d) = phobos_core::check_source(src);
    let text = render(&d, "k.pho", src, false);
    (d.iter().map(|d| d.code.as_str()).collect(), text)
}

fn k(body: &str) -> String {
    format!(
        "@launch(64)
kernel k(A: tensor<f32>[M, N], O: tensor<f32>[1, 64], I: tensor<i32>[1, 64]) {{
  let t = ctx.thread
{body}
}}
"
    )
}

fn accepted(src: &str) {
    let (codes, text) = diags(src);
    assert!(codes.is_empty(), "rejected:\n{text}");
}

fn rejected(src: &str, code: &str, line: u32, words: &str) {
    let (_, d) = phobos_core::check_source(src);
    let text = render(&d, "k.pho", src, false);
    assert_eq!(d.len(), 1, "expected one diagnostic:\n{text}");
    assert_eq!(d[0].code, code, "{text}");
    assert!(d[0].message.contains(words), "{text}");
    let primary = d[0].labels.iter().find(|l| l.primary).expect("primary");
    let at = phobos_core::source::LineIndex::new(src).line(primary.span.start as usize);
    assert_eq!(at, line, "{text}");
}

#[test]
fn arrays_are_declared_read_and_written() {
    accepted(&k("  var acc: f32[2, 3] = 0.0
  acc[1, 2] = A[0, t]
  acc[0, 0] += 1.0
  var n: i32[4] = 0
  n[I[0, t]] = 1
  O[0, t] = acc[1, 2] + f32(n[3])"));
    // A shape from constants, autotuned names and ctx.
    accepted(&k(
        "  var w: f32[ctx.warps, 2 * 2] = -inf\n  O[0, t] = w[1, 3]",
    ));
}

#[test]
fn bad_shapes_are_p0416() {
    rejected(
        &k("  var a: f32[M] = 0.0\n  O[0, t] = a[0]"),
        "P0416",
        4,
        "compile-time constants",
    );
    rejected(
        &k("  var a: f32[0] = 0.0\n  O[0, t] = a[0]"),
        "P0416",
        4,
        "from 1 to 256",
    );
    rejected(
        &k("  var a: f32[16, 17] = 0.0\n  O[0, t] = a[0, 0]"),
        "P0416",
        4,
        "272 elements, more than the 256",
    );
    rejected(
        &k("  var a: f32[] = 0.0\n  O[0, t] = 1.0"),
        "P0416",
        4,
        "at least one dim",
    );
}

#[test]
fn constant_indices_out_of_range_are_p0417() {
    rejected(
        &k("  var a: f32[4, 4] = 0.0\n  O[0, t] = a[1, 4]"),
        "P0417",
        5,
        "index 4 is out of range for axis 1",
    );
    rejected(
        &k("  var a: f32[4] = 0.0\n  a[-1] = 2.0\n  O[0, t] = a[0]"),
        "P0417",
        5,
        "index -1",
    );
    // After folding: 2 * 2 is 4.
    rejected(
        &k("  var a: f32[4] = 0.0\n  a[2 * 2] = 1.0\n  O[0, t] = a[0]"),
        "P0417",
        5,
        "index 4",
    );
}

#[test]
fn spans_and_let_are_p0418() {
    rejected(
        &k("  var a: f32[8] = 0.0\n  O[0, t] = sum(a[0 :+ 4])"),
        "P0418",
        5,
        "one index per dim",
    );
    rejected(
        &k("  let a: f32[8] = 0.0\n  O[0, t] = a[0]"),
        "P0418",
        4,
        "must be declared with `var`",
    );
}

#[test]
fn other_misuses_have_their_usual_codes() {
    rejected(
        &k("  var a: f32[4] = 0.0\n  a = 1.0\n  O[0, t] = a[0]"),
        "P0207",
        5,
        "register array `a` as a whole",
    );
    rejected(
        &k("  var a: f32[4] = 0.0\n  O[0, t] = a"),
        "P0408",
        5,
        "register array `a` is not a value",
    );
    rejected(
        &k("  var a: f32[4] = 0.0\n  O[0, t] = a[0, 1]"),
        "P0500",
        5,
        "has 1 dims",
    );
    rejected(
        &k("  var a: f32[4] = 1\n  a[0] = t\n  O[0, t] = a[0]"),
        "P0401",
        5,
        "cannot store i32",
    );
    rejected(&k("  var a: i32[4] = 1.5\n  O[0, t] = 1.0"), "P0403", 4, "");
    rejected(
        &k("  var a: f32[4] = 0.0\n  O[0, t] = a[A[0, t]]"),
        "P0401",
        5,
        "",
    );
}

const UNI: &str = "@launch(64)
kernel k(A: tensor<f32>[1, 64], O: tensor<f32>[1, 64]) {
  var a: f32[2] = 0.0
  a[1] = A[0, 0]
  a[0] = WRITE
  if a[1] > 0.0 {
    O[0, ctx.thread] = sum<over ctx.lane>(A[0, ctx.thread])
  }
}
";

#[test]
fn an_array_is_as_varying_as_what_is_written_to_it() {
    // Uniform writes only: a read of the array is a uniform condition.
    accepted(&UNI.replace("WRITE", "2.0"));
    // One element written with a per-lane value makes every element
    // varying (the array is one variable), and the label says where.
    let src = UNI.replace("WRITE", "A[0, ctx.lane]");
    let (_, d) = phobos_core::check_source(&src);
    let text = render(&d, "k.pho", &src, false);
    assert_eq!(d.len(), 1, "{text}");
    assert_eq!(d[0].code, "P0700", "{text}");
    assert!(
        text.contains("`a` gets a value here that differs between lanes"),
        "{text}"
    );
    // A uniform value written at a per-lane index differs between lanes too.
    let src = UNI.replace("a[0] = WRITE", "a[ctx.lane % 2] = 2.0");
    assert_eq!(diags(&src).0, ["P0700"], "{}", diags(&src).1);
    // And so does a uniform value written under per-lane control.
    let src = UNI.replace("a[0] = WRITE", "if ctx.lane == 0 {\n    a[0] = 2.0\n  }");
    assert_eq!(diags(&src).0, ["P0700"], "{}", diags(&src).1);
}

fn homes(src: &str) -> Vec<(String, bool, String)> {
    let out = phobos_core::compile(src, "k.pho", &phobos_core::CompileOptions::for_arch(80));
    let (kernels, d) = out;
    assert!(d.is_empty(), "{}", render(&d, "k.pho", src, false));
    kernels[0].meta.variants[0]
        .arrays
        .iter()
        .map(|a| (a.name.clone(), a.local, a.reason.clone()))
        .collect()
}

#[test]
fn loops_with_constant_bounds_keep_an_array_in_registers() {
    let src = k("  var acc: f32[4, 4] = 0.0
  for i in range(0, 4) {
    let ii = 3 - i
    for j in range(4, 0, -1) {
      acc[ii, j - 1] += A[i, j]
    }
  }
  O[0, t] = acc[0, 0] + acc[3, 3]");
    assert_eq!(homes(&src), [("acc".to_string(), false, String::new())]);
    let ptx =
        &phobos_core::compile(&src, "k.pho", &phobos_core::CompileOptions::for_arch(80)).0[0].ptx;
    assert!(!ptx.contains(".local"), "{ptx}");
}

#[test]
fn an_index_known_only_at_run_time_puts_the_array_in_local_memory() {
    // A loop too long to unroll (100 trips), a bound known at run time,
    // and an index loaded from memory.
    for (body, at) in [
        ("  var h: f32[128] = 0.0\n  for i in range(0, 100) {\n    h[i] = 1.0\n  }\n  O[0, t] = h[5]", "6:7"),
        ("  var h: f32[8] = 0.0\n  for i in range(0, M) {\n    h[i] = 1.0\n  }\n  O[0, t] = h[5]", "6:7"),
        ("  var h: f32[8] = 0.0\n  h[I[0, t]] = 1.0\n  O[0, t] = h[5]", "5:5"),
    ] {
        let src = k(body);
        let got = homes(&src);
        assert_eq!(got.len(), 1);
        assert!(got[0].1, "{body}: not in local memory");
        assert_eq!(got[0].2, format!("the index at {at} is known only at run time"), "{body}");
        let ptx = &phobos_core::compile(&src, "k.pho", &phobos_core::CompileOptions::for_arch(80)).0[0].ptx;
        assert!(ptx.contains(".local .align 4 .b8 local0_h["), "{ptx}");
    }
}
