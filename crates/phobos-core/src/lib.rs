#![doc = include_str!("../README.md")]
//!
//! # Inside this crate
//!
//! phobos-core: the Phobos compiler, `.pho` source text → PTX text and
//! kernel metadata. IO-free: no files, processes or environment variables
//! (those belong to phobos-build and the CLI). See `pipeline.rs` for the
//! stages in order and ARCHITECTURE.md for the whole picture.

pub mod backend;
pub mod check;
pub mod compiled;
pub mod diag;
pub mod front;
pub mod hir;
pub mod limits;
pub mod mma;
pub mod pipeline;
pub mod render;
pub mod scalar_value;
pub mod source;

// The contract with the runtime lives in phobos-meta; its modules stay
// reachable at their old paths (`phobos_core::meta::KernelMeta`).
pub use phobos_meta::{arch, binding, consteval, f8, meta};
// The front end's modules, at their old paths too.
pub use front::{ast, format, lexer, parse_error, parser};

pub use diag::{Code, Diagnostic, Severity};
pub use pipeline::{
    add_once_per_target, check_for_targets, check_source, check_source_with_partial, compile,
    file_module, max_shared_bytes, parse_arch, parse_arch_list, select_kernel, CompileOptions,
    CompiledKernel, ARCHES, STATIC_SHARED_LIMIT,
};
