//! Generates typed Rust launch functions from Phobos kernel metadata.
