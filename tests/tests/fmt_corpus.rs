//! `phobos fmt` on every kernel the project ships: the corpus
//! (`tests/in`), the example crate, the starter template and the seed
//! kernels copied from the language page.
//!
//! - The formatter never changes meaning: the PTX of the formatted text
//!   equals the PTX of the original for every target, apart from the line
//!   and column numbers of `.loc` directives and the line numbers that the
//!   backend's `//` comments cite ("written at line 51").
//! - It is idempotent and keeps every comment.
//! - The corpus, the example and the template are kept formatted: this is
//!   the CI check `phobos fmt --check` would make. (The seed kernels are
//!   copies of the page, kept as the page writes them.)

use phobos_core::format::format_source;
use phobos_core::{compile, CompileOptions, ARCHES};
use std::path::{Path, PathBuf};

fn pho_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pho"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .pho files in {}", dir.display());
    files
}

fn workspace() -> PathBuf {
    phobos_conformance::root().join("..")
}

/// Files that must be formatted.
fn kept_formatted() -> Vec<PathBuf> {
    let ws = workspace();
    let mut files = pho_files(&ws.join("tests/in"));
    files.extend(pho_files(&ws.join("examples/matvec/kernels")));
    files.extend(pho_files(&ws.join("examples/interop/kernels")));
    files.extend(pho_files(&ws.join("templates/starter/kernels")));
    files
}

fn everything() -> Vec<PathBuf> {
    let mut files = kept_formatted();
    files.extend(pho_files(
        &workspace().join("crates/phobos-core/tests/seed"),
    ));
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// PTX with `.loc 1 LINE COL` reduced to `.loc 1`, and `line N` in
/// comments to `line _`.
fn without_loc_numbers(ptx: &str) -> String {
    ptx.lines()
        .map(|l| match l.trim_start().strip_prefix(".loc") {
            Some(rest) => {
                let file = rest.split_whitespace().next().unwrap_or("");
                format!(".loc {file}")
            }
            None if l.trim_start().starts_with("//") => without_cited_lines(l),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn without_cited_lines(comment: &str) -> String {
    let mut out = String::new();
    let mut rest = comment;
    while let Some(i) = rest.find("line ") {
        out.push_str(&rest[..i + 5]);
        rest = &rest[i + 5..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push('_');
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

fn ptx_per_arch(src: &str, name: &str) -> Vec<String> {
    let min = phobos_conformance::min_arch_of(src);
    ARCHES
        .iter()
        .map(|&arch| {
            if arch < min {
                // Not a target of this file (`// needs: sm_N`).
                return String::new();
            }
            let (kernels, diags) = compile(src, name, &CompileOptions::for_arch(arch));
            assert!(
                !diags.iter().any(|d| d.is_error()) && !kernels.is_empty(),
                "{name} does not compile for {}",
                phobos_core::arch::name(arch)
            );
            kernels
                .iter()
                .map(|k| without_loc_numbers(&k.ptx))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[test]
fn formatting_keeps_the_ptx_of_every_kernel() {
    for path in everything() {
        let src = read(&path);
        let name = path
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into());
        let formatted = format_source(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
        let before = ptx_per_arch(&src, &name);
        let after = ptx_per_arch(&formatted, &name);
        for (arch, (b, a)) in ARCHES.iter().zip(before.iter().zip(&after)) {
            let sm = phobos_core::arch::name(*arch);
            assert!(b == a, "{name}: formatting changed the PTX for {sm}");
        }
    }
}

#[test]
fn formatting_is_idempotent_and_keeps_comments() {
    for path in everything() {
        let src = read(&path);
        let name = path.display();
        let once = format_source(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
        let twice = format_source(&once).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(once, twice, "{name}: formatting twice differs from once");
        let comments = |s: &str| -> Vec<String> {
            s.lines()
                .filter_map(|l| l.find("//").map(|i| l[i..].trim_end().to_string()))
                .collect()
        };
        assert_eq!(comments(&src), comments(&once), "{name}: comments changed");
    }
}

/// The CI check: `phobos fmt --check` over the corpus, the example and the
/// template. Run `phobos fmt tests/in examples/matvec/kernels
/// templates/starter/kernels` to fix.
#[test]
fn corpus_examples_and_template_are_formatted() {
    let mut unformatted = Vec::new();
    for path in kept_formatted() {
        let src = read(&path);
        let formatted = format_source(&src).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if formatted != src {
            unformatted.push(path.display().to_string());
        }
    }
    assert!(
        unformatted.is_empty(),
        "not formatted (run `phobos fmt` on them): {unformatted:?}"
    );
}
