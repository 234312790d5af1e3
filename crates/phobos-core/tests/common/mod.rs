//! Helpers shared by phobos-core's test files (and its `compile` bench):
//! read the corpus, check a kernel and expect it accepted, or refused with
//! one error at a line, and read the cases of a fixture file. Each file
//! keeps its own `insta::assert_snapshot!` so the snapshot names stay the
//! file's.

#![allow(dead_code)] // Each test file uses only some of them.

/// Finding the one line of a kernel holding a snippet (shared with the
/// simulator's and explain's tests).
#[path = "../../../../tests/src/source_lines.rs"]
pub mod source_lines;

use phobos_core::hir::CheckedKernel;
use phobos_core::render::render;
use phobos_core::{compile, CompileOptions};

/// Each `.pho` file of the conformance corpus (`tests/in`), as its file
/// name and its text, sorted by name.
#[allow(clippy::disallowed_methods)] // Reading the corpus is the harness's.
pub fn corpus() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/in");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("the corpus under tests/in")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pho"))
        .map(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let src = std::fs::read_to_string(&p).expect("read a corpus file");
            (name, src)
        })
        .collect();
    files.sort();
    files
}

/// The codes of every diagnostic checking `src` gives, in order.
pub fn codes(src: &str) -> Vec<&'static str> {
    phobos_core::check_source(src)
        .1
        .iter()
        .map(|d| d.code.as_str())
        .collect()
}

/// Asserts that `needle` stands `n` times in `text` (a PTX module, say);
/// a failure shows the text.
pub fn assert_count(text: &str, needle: &str, n: usize) {
    assert_eq!(text.matches(needle).count(), n, "{needle:?} in:\n{text}");
}

/// Checks that each of `bodies`, put in its kernel by `wrap`, gives
/// exactly the diagnostics `want`, in order; a failure names the body.
pub fn each_gives(wrap: impl Fn(&str) -> String, want: &[&str], bodies: &[&str]) {
    for body in bodies {
        assert_eq!(codes(&wrap(body)), want, "{body}");
    }
}

/// Checks that each body of `cases`, put in its kernel by `wrap`, gives
/// exactly one diagnostic, the code beside it.
pub fn gives_each(wrap: impl Fn(&str) -> String, cases: &[(&str, &str)]) {
    for (body, code) in cases {
        assert_eq!(codes(&wrap(body)), [*code], "{body}");
    }
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

/// One case of a fixture file under `tests/kernels/`: a header line
/// `== NAME [CODE [MESSAGE]]`, then the case's source lines. A line
/// written with a leading `>` is where the primary label must be; the `>`
/// is not part of the source.
pub struct Case {
    pub name: String,
    pub code: String,
    pub message: String,
    /// The source lines, each ending in a newline.
    pub text: String,
    /// Which line of `text` (from 0) was marked with `>`, if one was.
    marked: Option<usize>,
}

impl Case {
    /// The line (from 1) of `src` marked in the fixture; `src` holds the
    /// case's text once, placed inside a wrapping kernel or alone.
    pub fn line_in(&self, src: &str) -> u32 {
        let at = src
            .find(&self.text)
            .unwrap_or_else(|| panic!("{}: the case's text is not in the source", self.name));
        let before = src[..at].matches('\n').count();
        let marked = self
            .marked
            .unwrap_or_else(|| panic!("{}: no line is marked with `>`", self.name));
        (before + marked + 1) as u32
    }
}

/// The cases of a fixture file, in order; lines before the first header
/// and lines starting with `#` are comments, and blank lines at the end
/// of a case are not part of it.
pub fn cases(fixture: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    for line in fixture.lines() {
        if let Some(header) = line.strip_prefix("== ") {
            let mut words = header.splitn(3, ' ');
            let mut word = || words.next().unwrap_or_default().to_string();
            let (name, code, message) = (word(), word(), word());
            cases.push(Case {
                name,
                code,
                message,
                text: String::new(),
                marked: None,
            });
        } else if let Some(case) = cases.last_mut().filter(|_| !line.starts_with('#')) {
            let source_line = match line.strip_prefix('>') {
                Some(rest) => {
                    assert!(case.marked.is_none(), "{}: two marked lines", case.name);
                    case.marked = Some(case.text.lines().count());
                    rest
                }
                None => line,
            };
            case.text.push_str(source_line);
            case.text.push('\n');
        }
    }
    // Blank lines after a case separate it from the next one.
    for case in &mut cases {
        while case.text.ends_with("\n\n") || case.text == "\n" {
            case.text.pop();
        }
    }
    cases
}
