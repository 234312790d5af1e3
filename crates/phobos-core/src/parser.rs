//! Lexer and parser (to be written): source → `ast::File` + diagnostics.
use crate::ast::File;
use crate::diag::Diagnostic;

pub fn parse(_src: &str) -> (File, Vec<Diagnostic>) {
    (
        File::default(),
        vec![Diagnostic::error("P0000", "the parser is not written yet")],
    )
}
