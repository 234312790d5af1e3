//! Turning Phobos identifiers into Rust identifiers: keywords become raw
//! identifiers (`r#type`), and the few words that cannot be raw, or that
//! the generated function uses itself, get a trailing underscore.

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "gen", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// Words that are keywords and cannot be written as raw identifiers.
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// A Rust identifier for a Phobos name.
pub fn rust_ident(name: &str) -> String {
    if NOT_RAW.contains(&name) {
        format!("{name}_")
    } else if KEYWORDS.contains(&name) {
        format!("r#{name}")
    } else {
        name.to_string()
    }
}

/// A parameter's identifier, kept clear of the generated function's own
/// names (`device`, `grid`).
pub(crate) fn param_ident(name: &str, reserved: &[&str]) -> String {
    if reserved.contains(&name) {
        format!("{name}_")
    } else {
        rust_ident(name)
    }
}
