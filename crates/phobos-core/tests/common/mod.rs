//! Helpers shared by the front-end test files: check a kernel and expect it
//! accepted, or refused with one error at a line. Each file keeps its own
//! `insta::assert_snapshot!` so the snapshot names stay the file's.

#![allow(dead_code)] // Each test file uses only some of them.

use phobos_core::hir::CheckedKernel;
use phobos_core::render::render;
use phobos_core::{compile, CompileOptions};

/// The codes of every diagnostic checking `src` gives, in order.
pub fn codes(src: &str) -> Vec<&'static str> {
    phobos_core::check_source(src)
        .1
        .iter()
        .map(|d| d.code.as_str())
        .collect()
}

/// The kernels of `src`, which must check without a diagnostic.
pub fn accepted(src: &str) -> Vec<CheckedKernel> {
    let (kernels, diags) = phobos_core::check_source(src);
    let text = render(&diags, "k.pho", src, false);
    assert!(diags.is_empty(), "rejected:\n{text}");
    kernels
}

/// The PTX of each kernel of `src` compiled for `arch`, which must give no
/// error.
pub fn ptx_of(src: &str, arch: u32) -> Vec<String> {
    let (kernels, diags) = compile(src, "k.pho", &CompileOptions::for_arch(arch));
    let text = render(&diags, "k.pho", src, false);
    assert!(diags.iter().all(|d| !d.is_error()), "{text}");
    kernels.into_iter().map(|k| k.ptx).collect()
}

/// Checks that `src` is refused with exactly one error, `code` with
/// `message`, whose primary label is on `line`; returns the text to
/// snapshot: the source, then the rendered diagnostic.
pub fn refusal(name: &str, src: &str, code: &str, message: &str, line: u32) -> String {
    let (kernels, diags) = phobos_core::check_source(src);
    let text = render(&diags, &format!("{name}.pho"), src, false);
    assert!(kernels.is_empty(), "{name}: a kernel was accepted");
    assert_eq!(diags.len(), 1, "{name}: expected one diagnostic:\n{text}");
    assert_eq!(diags[0].code, code, "{name}:\n{text}");
    assert_eq!(diags[0].message, message, "{name}:\n{text}");
    let primary = diags[0]
        .labels
        .iter()
        .find(|l| l.primary)
        .expect("a primary label");
    let at = phobos_core::source::LineIndex::new(src).line(primary.span.start as usize);
    assert_eq!(at, line, "{name}: wrong line:\n{text}");
    format!("{src}\n---\n{text}")
}
