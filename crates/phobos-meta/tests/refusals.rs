//! The one wording of launch refusals: every `BindError` kind has an
//! example, and the snapshot holds each one's message.

use phobos_meta::binding::BindError;
use std::collections::BTreeSet;

#[test]
fn every_refusal_has_an_example() {
    let kinds: BTreeSet<&str> = BindError::examples().iter().map(BindError::kind).collect();
    // `kind` lists every variant without a `_` arm; these are its names.
    let all = [
        "Arity",
        "Kind",
        "Rank",
        "ConstDim",
        "DimMismatch",
        "DimTooLarge",
        "BufferTooShort",
        "AlignedViolated",
        "UnalignedBase",
        "TensorMapAddress",
        "TensorMapStride",
        "TensorMapShape",
        "NoVariant",
        "UnknownConstant",
        "NoPickedVariant",
        "Inconsistent",
        "MissingGrid",
        "InvalidGrid",
        "GridTooLarge",
        "BlockTooLarge",
        "SharedMemoryTooLarge",
    ];
    assert_eq!(kinds, all.into_iter().collect::<BTreeSet<_>>());
}

#[test]
fn refusal_messages() {
    let text: Vec<String> = BindError::examples()
        .iter()
        .map(|e| format!("{}: {e}", e.kind()))
        .collect();
    insta::assert_snapshot!("refusal_messages", text.join("\n"));
}
