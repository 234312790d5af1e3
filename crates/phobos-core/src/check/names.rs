//! Kernel names: what a kernel's name must be besides a Phobos identifier.
//!
//! A kernel's name is three names at once, kept equal so a user finds each
//! from the others: the PTX `.entry` (the name itself, then `__NAMEvalue`
//! per `@autotune` value, `backend::entry_name`), the function that
//! bindgen generates, and the stem of the build's files
//! (`<name>.sm_<arch>.ptx`, `.cubin`, `.meta.ron`). Rather than mangle a
//! name that one of them cannot take, and have the three differ, the
//! checker refuses it (P0208):
//!
//! - `_`: the PTX ISA's identifiers are `[a-zA-Z][a-zA-Z0-9_$]*` or
//!   `[_$%][a-zA-Z0-9_$]+`, so a lone `_` is none (ptxas: "syntax
//!   error"); every other Phobos identifier is a PTX identifier;
//! - `WARP_SZ`: PTX's one predefined identifier without a `%` (ptxas
//!   12.9 refuses it as an entry; opcode and directive names such as
//!   `add`, `reg`, `entry` or `texref` assemble);
//! - `self`, `Self`, `super`, `crate`: Rust keywords that cannot be raw
//!   identifiers, so no Rust function has those names (`_` neither);
//! - longer than [`MAX_KERNEL_NAME`] bytes: the build's file names would
//!   pass the 255-byte limit of common file systems. ptxas itself takes
//!   entry names of a million characters.
//!
//! Two kernels of one file whose entries are equal (`k` with
//! `@autotune(N in [1])` and a kernel `k__N1`) are P0201: `phobos ptx`
//! puts a file's kernels in one module (the build and the runtime keep one
//! module per kernel).
//!
//! Parameters, dims and locals need no rule: the PTX names them with a
//! prefix (`p_x`, `d_N`, `local0_a`), always an identifier, and bindgen
//! renames a parameter that is a Rust keyword (its name is not part of the
//! launch). Names that differ only in case are distinct here, as in PTX and
//! Rust; the build refuses two kernels whose files would clash on a file
//! system that ignores case.

use super::error::NameError;
use crate::ast::{self, Span};
use crate::hir::CheckedKernel;
use std::collections::HashMap;

/// The longest kernel name, in bytes: the longest file name the build
/// writes for it, `<name>.sm_120.cubin`, is 13 bytes more, within the
/// 255-byte limit of common file systems with room to spare.
pub const MAX_KERNEL_NAME: usize = 200;

pub use phobos_meta::RUST_NOT_RAW;

/// P0208 for a kernel whose name breaks a rule of the module docs.
pub(super) fn check_kernel_name(name: &ast::Ident) -> Option<NameError> {
    let span = name.span;
    let n = &name.name;
    if n == "_" {
        Some(NameError::NotPtx { span })
    } else if n == "WARP_SZ" {
        Some(NameError::PtxPredefined { span })
    } else if RUST_NOT_RAW.contains(&n.as_str()) {
        Some(NameError::NotRustFn {
            name: n.clone(),
            span,
        })
    } else if n.len() > MAX_KERNEL_NAME {
        Some(NameError::TooLong { len: n.len(), span })
    } else {
        None
    }
}

/// The PTX entries of a file's kernels so far: each entry's kernel and
/// the span of its name.
#[derive(Default)]
pub(super) struct Entries(HashMap<String, (String, Span)>);

impl Entries {
    /// P0201 when one of `k`'s entries is already another kernel's; else
    /// its entries are added.
    pub(super) fn add(&mut self, k: &CheckedKernel, name: &ast::Ident) -> Option<NameError> {
        let entries: Vec<String> = k.variants.iter().map(crate::backend::entry_name).collect();
        for entry in &entries {
            if let Some((first_kernel, first)) = self.0.get(entry) {
                return Some(NameError::EntryTwice {
                    entry: entry.clone(),
                    kernel: name.name.clone(),
                    first_kernel: first_kernel.clone(),
                    span: name.span,
                    first: *first,
                });
            }
        }
        for entry in entries {
            self.0.insert(entry, (name.name.clone(), name.span));
        }
        None
    }
}
