#![doc = include_str!("../README.md")]
//!
//! # Inside this crate
//!
//! The Phobos language server. `analysis.rs` answers questions about one
//! document by byte offset (no LSP types, testable on strings), from
//! per-kernel analyses cached by text (`unit.rs`); `symbols.rs` resolves
//! names on the syntax tree; `tokens.rs`, `hints.rs` and `actions.rs` give
//! semantic tokens, inlay hints and code actions; `server.rs` speaks LSP
//! through `lsp-server` and `lsp-types`; `transport.rs` moves messages
//! over stdio and bounds their size. The compiler work is
//! phobos-core's: this crate only looks things up in what it returns.

pub mod actions;
pub mod analysis;
pub mod hints;
pub mod server;
pub mod symbols;
pub mod tokens;
pub mod transport;
pub mod unit;

pub use analysis::Analysis;

/// Run the server on stdin/stdout until the client exits. A message over
/// [`transport::MAX_MESSAGE_BYTES`] ends it with an error.
pub fn run_stdio() -> Result<(), String> {
    transport::run_stdio(server::serve)
}
