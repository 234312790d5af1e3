//! Request latency on a 2,000-line document, as docs/benchmarks.md
//! records it. Prints the time of each request kind; run with
//! `cargo test -p phobos-lsp --test latency -- --nocapture`. It asserts
//! only that each answer is produced (times depend on the machine).

use phobos_lsp::Analysis;
use std::time::Instant;

/// The seed page's lanes matvec repeated under new names to 2,000 lines.
fn big_file() -> String {
    let kernel = include_str!("../../phobos-core/tests/seed/lanes_matvec.pho");
    let mut out = String::new();
    let mut i = 0;
    while out.lines().count() < 2000 {
        out.push_str(&kernel.replace("lanes_matvec", &format!("lanes_matvec_{i}")));
        out.push('\n');
        i += 1;
    }
    out
}

fn time<T>(what: &str, f: impl Fn() -> T) -> T {
    let runs = 5;
    let start = Instant::now();
    for _ in 1..runs {
        f();
    }
    let out = f();
    let ms = start.elapsed().as_secs_f64() * 1000.0 / f64::from(runs);
    println!("{what:<40} {ms:8.2} ms");
    out
}

#[test]
fn requests_on_a_2000_line_file() {
    let src = big_file();
    assert!(src.lines().count() >= 2000);
    let a = time("analysis (open/change: parse, check, compile)", || {
        Analysis::new(&src)
    });
    assert!(a.diagnostics.is_empty());
    let last = src.rfind("acc += ").expect("a use of acc");
    let row = src.rfind("if row < N").expect("a use of row") + 3;
    let sum = src.rfind("sum<over").expect("a collective");
    let h = time("hover on a local", || a.hover(row));
    assert!(h.is_some_and(|(t, _)| t.contains("warp-uniform")));
    assert!(time("hover on a collective", || a.hover(sum)).is_some());
    assert!(time("definition", || a.definition(last)).is_some());
    assert!(time("references", || a.references(last)).len() > 1);
    assert!(!time("completion", || a.completions(last)).is_empty());
    assert!(time("formatting", || a.format()).is_ok());
    time("parse only", || phobos_core::parser::parse(&src));
    time("lex with comments", || {
        phobos_core::lexer::lex_with_comments(&src)
    });
}
