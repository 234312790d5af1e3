//! Every diagnostic code the compiler can emit (front end and backend) is
//! documented in docs/language.md, and every code documented there is
//! emitted somewhere.

const DOCS: &str = include_str!("../../../docs/language.md");

const SOURCES: [&str; 24] = [
    include_str!("../src/check/arrays.rs"),
    include_str!("../src/check/dot.rs"),
    include_str!("../src/backend.rs"),
    include_str!("../src/pipeline.rs"),
    include_str!("../src/backend/shared_plan.rs"),
    include_str!("../src/backend/barriers.rs"),
    include_str!("../src/backend/targets.rs"),
    include_str!("../src/backend/unroll.rs"),
    include_str!("../src/diag.rs"),
    include_str!("../src/lexer.rs"),
    include_str!("../src/parser.rs"),
    include_str!("../src/check.rs"),
    include_str!("../src/check/atomics.rs"),
    include_str!("../src/check/scratch.rs"),
    include_str!("../src/check/calls.rs"),
    include_str!("../src/check/collectives.rs"),
    include_str!("../src/check/consts.rs"),
    include_str!("../src/check/cx.rs"),
    include_str!("../src/check/fns.rs"),
    include_str!("../src/check/header.rs"),
    include_str!("../src/check/stmts.rs"),
    include_str!("../src/check/subscripts.rs"),
    include_str!("../src/check/types.rs"),
    include_str!("../src/check/uniformity.rs"),
];

/// Every `"P0xxx"` string literal in `text` with x a digit.
fn quoted_codes(text: &str) -> std::collections::BTreeSet<String> {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(6))
        .filter(|&i| b[i] == b'"' && b[i + 1] == b'P' && b[i + 2] == b'0' && b[i + 6] == b'"')
        .map(|i| &text[i + 1..i + 6])
        .filter(|c| c[1..].bytes().all(|d| d.is_ascii_digit()))
        .map(str::to_string)
        .collect()
}

/// Codes in the first column of the docs' diagnostics table.
fn documented() -> std::collections::BTreeSet<String> {
    DOCS.lines()
        .filter_map(|l| l.strip_prefix("| P0"))
        .map(|rest| format!("P0{}", &rest[..3]))
        .collect()
}

#[test]
fn every_emitted_code_is_documented() {
    let docs = documented();
    let emitted: std::collections::BTreeSet<String> =
        SOURCES.iter().flat_map(|s| quoted_codes(s)).collect();
    assert!(emitted.len() > 50, "{emitted:?}");
    let missing: Vec<_> = emitted.difference(&docs).collect();
    assert!(
        missing.is_empty(),
        "codes without documentation: {missing:?}"
    );
    let stale: Vec<_> = docs.difference(&emitted).collect();
    assert!(
        stale.is_empty(),
        "documented codes nothing emits: {stale:?}"
    );
}
