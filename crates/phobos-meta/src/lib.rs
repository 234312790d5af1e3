#![doc = include_str!("../README.md")]
//!
//! # Inside this crate
//!
//! phobos-meta: the contract between compiled kernels and everything that
//! launches them. The compiler (phobos-core) writes it, and the runtime,
//! bindgen, the simulator front ends and explain read it, without the
//! compiler:
//!
//! - `arch`: targets as numbers and their names (`sm_90a` is 91);
//! - `meta`: a compiled kernel's metadata (`KernelMeta`), as the build
//!   embeds it (RON);
//! - `binding`: the one launch binding, arguments' shapes → dims, the
//!   variant, grid and block, and the `.param` values, with its refusals
//!   (`BindError`);
//! - `scalar`: the scalar types and operators metadata names;
//! - `f8`: the values of the 8-bit float types (`f8e4m3`, `f8e5m2`),
//!   encoded with PTX's saturating conversion;
//! - `consteval`: exact integer constant evaluation, the one definition of
//!   what an integer operator computes (`@grid` expressions at launch, the
//!   checker's and backend's folding);
//! - `RUST_NOT_RAW`: the names no generated Rust function can have.
//!
//! IO-free, like phobos-core: no files, processes or environment variables.

pub mod arch;
pub mod binding;
pub mod consteval;
pub mod f8;
pub mod meta;
pub mod scalar;

pub use meta::STATIC_SHARED_LIMIT;
pub use scalar::{BinOp, ScalarTy, UnOp};

/// Words Rust reserves that cannot be written as raw identifiers
/// (`r#self` is not allowed), so no generated function can have these
/// names: the checker refuses a kernel named so (P0208), and bindgen
/// renames parameters named so.
pub const RUST_NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];
