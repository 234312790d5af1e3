//! The list of diagnostic codes is the type `Code`: every code in
//! `Code::ALL` is documented in docs/language.md's table, every documented
//! code is in `Code::ALL`, and every code is produced by some stage.

use phobos_core::backend::BackendError;
use phobos_core::check::CheckError;
use phobos_core::diag::{Code, Counts, Diagnostic};
use phobos_core::parse_error::ParseError;
use std::collections::BTreeSet;

const DOCS: &str = include_str!("../../../docs/language.md");

/// Codes in the first column of the docs' diagnostics table.
fn documented() -> BTreeSet<String> {
    DOCS.lines()
        .filter_map(|l| l.strip_prefix("| P0"))
        .map(|rest| format!("P0{}", &rest[..3]))
        .collect()
}

/// The codes some stage produces: each stage enum's examples, and the
/// P0006 count of hidden diagnostics.
fn produced() -> BTreeSet<Code> {
    let mut codes: BTreeSet<Code> = BackendError::examples()
        .iter()
        .map(BackendError::code)
        .collect();
    codes.extend(CheckError::examples().iter().map(CheckError::code));
    codes.insert(Diagnostic::not_shown("x", Counts::default()).code);
    codes.extend(ParseError::examples().iter().map(|e| e.diagnostic().code));
    codes
}

#[test]
fn every_code_is_documented_and_every_documented_code_is_a_code() {
    let docs = documented();
    let all: BTreeSet<String> = Code::ALL.iter().map(|c| c.to_string()).collect();
    assert_eq!(all.len(), Code::ALL.len(), "a code listed twice");
    let missing: Vec<_> = all.difference(&docs).collect();
    assert!(
        missing.is_empty(),
        "codes without documentation: {missing:?}"
    );
    let stale: Vec<_> = docs.difference(&all).collect();
    assert!(
        stale.is_empty(),
        "documented codes that are no Code: {stale:?}"
    );
}

#[test]
fn every_code_is_produced_by_some_stage() {
    let produced = produced();
    let idle: Vec<_> = Code::ALL.iter().filter(|c| !produced.contains(c)).collect();
    assert!(idle.is_empty(), "codes no stage produces: {idle:?}");
}

#[test]
fn codes_serialize_as_their_names() {
    for &c in Code::ALL {
        assert_eq!(Code::parse(c.as_str()), Some(c));
        let d = c.error("m");
        let json = serde_json::to_value(&d).expect("json");
        assert_eq!(json["code"], c.as_str());
    }
    assert_eq!(Code::parse("P0000"), None);
}

/// Each checker and backend example converts to a diagnostic of its own
/// code with a message, so `into_diagnostic` covers every variant; all are
/// errors but P0419, the checker's one warning (no backend code is P0419).
#[test]
fn every_check_and_backend_error_converts() {
    let checks = CheckError::examples()
        .into_iter()
        .map(|e| (format!("{e:?}"), e.code(), e.into_diagnostic()));
    let backend = BackendError::examples()
        .into_iter()
        .map(|e| (format!("{e:?}"), e.code(), e.into_diagnostic()));
    for (example, code, d) in checks.chain(backend) {
        assert_eq!(d.code, code, "{example}");
        assert_eq!(d.is_error(), code != Code::P0419, "{example}");
        assert!(!d.message.is_empty(), "{example}");
    }
}

/// Every message of the parser, the checker and the backend, one example per variant
/// with placeholder data, so a change to any message, label or note shows
/// in review (the rejected-kernel snapshots show them in context).
#[test]
fn every_stage_message() {
    let diags = ParseError::examples()
        .into_iter()
        .map(Diagnostic::from)
        .chain(
            CheckError::examples()
                .into_iter()
                .map(CheckError::into_diagnostic),
        )
        .chain(
            BackendError::examples()
                .into_iter()
                .map(BackendError::into_diagnostic),
        );
    let mut text = String::new();
    for d in diags {
        text += &format!("{} {}\n", d.code, d.message);
        for l in &d.labels {
            let kind = if l.primary { "primary" } else { "secondary" };
            text += &format!("  {kind}: {}\n", l.message);
        }
        for n in &d.notes {
            text += &format!("  note: {n}\n");
        }
    }
    insta::assert_snapshot!("every_stage_message", text);
}
