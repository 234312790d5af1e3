//! Finding a line of a kernel's text (`.pho` source or PTX) by a snippet
//! of it, so that tests assert the lines of the file they run (a corpus
//! kernel under `tests/in`, a fixture) rather than copies of its line
//! numbers.
//!
//! The simulator, explain and profile tests include this file by path
//! (they do not depend on the conformance crate), so it needs nothing but
//! `std`.

/// The 1-based number of the only line of `src` containing `needle`.
/// Panics unless exactly one line does: a snippet that matches several
/// lines, or none, would let an edit of the file move the line silently.
pub fn line_of(src: &str, needle: &str) -> u32 {
    let hits: Vec<usize> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    match hits[..] {
        [line] => u32::try_from(line).expect("a source line number fits in u32"),
        _ => panic!(
            "`{needle}` is on {} lines of the kernel, not exactly one: {hits:?}",
            hits.len()
        ),
    }
}
