//! Kernel-at-a-time analysis gives what checking the whole file gives, and
//! an edit re-checks only the kernel it touches.

use phobos_lsp::unit::UnitCache;
use phobos_lsp::Analysis;
use std::path::Path;

/// Diagnostics as comparable text: code, message and every label's span.
fn keyed(diags: &[phobos_core::Diagnostic]) -> Vec<String> {
    let mut out: Vec<String> = diags
        .iter()
        .map(|d| {
            let labels: Vec<String> = d
                .labels
                .iter()
                .map(|l| {
                    format!(
                        "{}..{}{}",
                        l.span.start,
                        l.span.end,
                        if l.primary { "*" } else { "" }
                    )
                })
                .collect();
            format!(
                "{} {} [{}] {:?}",
                d.code,
                d.message,
                labels.join(" "),
                d.notes
            )
        })
        .collect();
    out.sort();
    out
}

/// What `phobos check` reports for the whole file for sm_75: the front
/// end's diagnostics, then the backend's for every kernel that checked.
fn whole_file(src: &str) -> Vec<String> {
    let (_, all) = phobos_core::check_for_targets(src, "<editor>", &[75]);
    keyed(&all)
}

fn corpus() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in ["tests/in", "crates/phobos-core/tests/seed"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("corpus dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "pho"))
            .collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).expect("read");
            out.push((p.display().to_string(), text));
        }
    }
    out
}

/// Kernels with errors of each stage, and fns: the parser's, the
/// checker's (in a fn body inlined twice, in one kernel only), and the
/// backend's.
const MIXED: &str = "fn twice(a) = a + a
fn bad(a) = a + undefined_name

@launch(32)
kernel ok(A: tensor<f32>[N]) {
  A[ctx.lane] = twice(A[ctx.lane])
}

@launch(32)
kernel uses_bad(A: tensor<f32>[N]) {
  A[ctx.lane] = bad(1.0)
}

@launch(32)
kernel also_bad(A: tensor<f32>[N]) {
  A[ctx.lane] = bad(2.0)
}

@launch(32)
kernel divergent(A: tensor<f32>[N]) {
  let x = A[ctx.lane]
  if x > 0.0 {
    A[0] = sum<over ctx.lane>(x)
  }
}

@launch(32)
kernel too_big(A: tensor<f32>[128, 128]) {
  var t = A[0 :+ 128, 0 :+ 128]
  A[0, ctx.lane] = t[0, ctx.lane]
}
";

#[test]
fn per_kernel_diagnostics_equal_the_whole_file_check() {
    let mut files = corpus();
    files.push(("mixed".into(), MIXED.into()));
    // Two kernels of one name: only the whole file shows it.
    files.push((
        "twice".into(),
        "@launch(32)\nkernel k(A: tensor<f32>[N]) {\n  A[0] = 1.0\n}\n@launch(32)\nkernel k(A: tensor<f32>[N]) {\n  A[0] = 2.0\n}\n".into(),
    ));
    // A syntax error between kernels.
    files.push((
        "syntax".into(),
        "@launch(32)\nkernel a(A: tensor<f32>[N]) {\n  A[0] = 1.0\n}\nlet oops\n@launch(32)\nkernel b(A: tensor<f32>[N]) {\n  A[0] = (\n}\n".into(),
    ));
    assert!(files.len() > 40);
    for (name, src) in &files {
        let a = Analysis::new(src);
        assert_eq!(keyed(&a.diagnostics), whole_file(src), "{name}");
    }
    // The mixed file reports each stage once, in the right kernel.
    let a = Analysis::new(MIXED);
    let codes: Vec<&str> = a.diagnostics.iter().map(|d| d.code.as_str()).collect();
    assert!(
        codes.contains(&"P0700") && codes.contains(&"P0200"),
        "{codes:?}"
    );
}

#[test]
fn an_edit_rechecks_only_its_kernel_and_moves_the_others() {
    let mut cache = UnitCache::default();
    let a = Analysis::with_cache(MIXED, &mut cache);
    let kernels = 5;
    assert_eq!(
        cache.checked,
        kernels + 1,
        "one unit per kernel and one of the fns"
    );

    // A line added to the first kernel: only it is checked again, and the
    // diagnostics of the kernels below move down a line.
    let edited = MIXED.replace(
        "  A[ctx.lane] = twice(A[ctx.lane])\n",
        "  A[ctx.lane] = twice(A[ctx.lane])\n  A[0] = 3.0\n",
    );
    let b = Analysis::with_cache(&edited, &mut cache);
    assert_eq!(cache.checked, kernels + 2);
    assert_eq!(keyed(&b.diagnostics), whole_file(&edited));
    assert_eq!(a.diagnostics.len(), b.diagnostics.len());
    let line = |an: &Analysis, code: &str| {
        let d = an
            .diagnostics
            .iter()
            .find(|d| d.code == code)
            .expect("diagnostic");
        let l = d.labels.iter().find(|l| l.primary).expect("primary");
        an.lines.line(l.span.start as usize)
    };
    assert_eq!(line(&b, "P0700"), line(&a, "P0700") + 1);
    // Hover in a moved kernel reads its cached analysis at the new place
    // (`too_big` checks; only its shared memory is over the limit).
    let at = edited.find("var t").expect("var t") + 4;
    let (text, span) = b.hover(at).expect("hover");
    assert!(text.contains("shared tile `f32[128, 128]`"), "{text}");
    assert_eq!(&edited[span.range()], "t");

    // Editing a fn re-checks the kernels that call it, and the fns' unit.
    let fn_edit = edited.replace("fn bad(a) = a + undefined_name", "fn bad(a) = a + 1.0");
    let c = Analysis::with_cache(&fn_edit, &mut cache);
    assert_eq!(cache.checked, kernels + 2 + 3);
    assert_eq!(keyed(&c.diagnostics), whole_file(&fn_edit));
}
