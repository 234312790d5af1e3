//! The front end: source text → `ast::File` + diagnostics, and back to
//! text. The modules live in `front/`: `lexer` (tokens and comments),
//! `parser` (the recovering parser), `parse_error` (its errors and their
//! messages), `ast` (the syntax tree) and `format` (the formatter, which
//! prints a tree with its comments). The checker (`check`) takes the tree
//! from here. Each module is also reachable at its old path
//! (`phobos_core::parser`, `phobos_core::ast`, ...).

pub mod ast;
pub mod format;
pub mod lexer;
pub mod parse_error;
pub mod parser;
