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
const NOT_RAW: &[&str] = phobos_meta::RUST_NOT_RAW;

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

/// Rust identifiers for a list of Phobos names (a crate's kernels, or one
/// kernel's parameters), distinct from each other and from `reserved` (the
/// generated function's own names, `device`, `grid`). A name that is already
/// a fine identifier keeps it; a mangled one (`self`, or `device` among the
/// parameters) gets trailing underscores until it is unique, so `self` next
/// to a kernel `self_` becomes `self__` rather than a second `self_`.
pub(crate) fn unique_idents(names: &[&str], reserved: &[&str]) -> Vec<String> {
    let keeps = |n: &str| rust_ident(n) == n && !reserved.contains(&n);
    let mut taken: std::collections::HashSet<String> = names
        .iter()
        .filter(|n| keeps(n))
        .map(|n| n.to_string())
        .chain(reserved.iter().map(|r| r.to_string()))
        .collect();
    names
        .iter()
        .map(|&n| {
            if keeps(n) {
                return n.to_string();
            }
            let mut ident = if reserved.contains(&n) {
                format!("{n}_")
            } else {
                rust_ident(n)
            };
            while taken.contains(&ident) {
                ident.push('_');
            }
            taken.insert(ident.clone());
            ident
        })
        .collect()
}

/// Text from the file system or the source, safe inside a `///` comment:
/// control characters (a newline would end the comment) are escaped.
pub(crate) fn doc_text(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
