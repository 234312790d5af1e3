//! phobos-sim: executes PTX text on the CPU, warp-exactly, and checks what
//! compute-sanitizer would. It knows nothing of the Phobos language: it reads
//! PTX (plus `.file`/`.loc` line info) and runs launches.
//!
//! Public API (contract with the runtime crate, the CLI and phobos-explain):
//! see the items below. Everything here is to be written; signatures may
//! grow but not break.

pub mod observer;
pub use observer::{Access, AccessKind, Observer, Space, StepInfo};
