//! Shared helpers for the conformance tests.
