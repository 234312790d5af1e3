#![allow(dead_code)] // each test binary uses some of the kernels
//! The kernels the explain tests step through: the three from the language
//! page (collectives-and-shuffles), read from the conformance corpus
//! (`tests/in`), and two small ones that show masked tile elements and
//! extra 128-byte lines.

/// The request to run `kernel` of `src` (as file `{kernel}.pho`) on
/// `sm_<arch>` over `grid` (`None`: the kernel's own grid), with random
/// inputs of these shapes.
pub fn request(
    src: &str,
    kernel: &str,
    arch: u32,
    grid: Option<[u32; 3]>,
    shapes: &[(&str, &[u64])],
) -> phobos_explain::Request {
    let mut req = phobos_explain::Request::new(
        src.into(),
        format!("{kernel}.pho"),
        Some(kernel.into()),
        arch,
        grid,
    );
    req.inputs = shapes
        .iter()
        .map(|(n, s)| {
            (
                n.to_string(),
                phobos_explain::Input::Random { shape: s.to_vec() },
            )
        })
        .collect();
    req
}

/// The trace of `kernel` of `src` on sm_75 over `grid` CTAs along x, with
/// random inputs of these shapes; panics when explain refuses.
pub fn trace(
    src: &str,
    kernel: &str,
    grid: u32,
    shapes: &[(&str, &[u64])],
) -> phobos_explain::Trace {
    let req = request(src, kernel, 75, Some([grid, 1, 1]), shapes);
    phobos_explain::trace(&req).unwrap_or_else(|e| panic!("explain {kernel}: {e}"))
}

/// A trace's JSON form (the format other tools read), parsed.
pub fn json(trace: &phobos_explain::Trace) -> serde_json::Value {
    serde_json::from_str(&phobos_explain::to_json(trace)).expect("the JSON parses")
}

/// The source of kernel `name` of the corpus, `tests/in/{name}.pho`.
pub fn corpus_src(name: &str) -> String {
    let path = format!("{}/../../tests/in/{name}.pho", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// Kernel `name` of the corpus (`tests/in/{name}.pho`) traced on
/// `sm_<arch>` with CTA `cta` picked and these inputs; with its source.
pub fn corpus_trace(
    name: &str,
    arch: u32,
    cta: [u32; 3],
    inputs: Vec<(&str, phobos_explain::Input)>,
) -> (phobos_explain::Trace, String) {
    let src = corpus_src(name);
    let mut req = phobos_explain::Request::new(
        src.clone(),
        format!("{name}.pho"),
        Some(name.into()),
        arch,
        None,
    );
    req.cta = phobos_explain::Cta::Xyz(cta);
    req.inputs = inputs
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    let t = phobos_explain::trace(&req).unwrap_or_else(|e| panic!("explain {name}: {e}"));
    (t, src)
}

/// A tensor-core GEMM of the corpus, C = A · Wᵀ (`A: [M, K]`, `W: [N, K]`,
/// `C: [M, N]`, random inputs), traced as [`corpus_trace`] does.
pub fn gemm_trace(
    name: &str,
    arch: u32,
    cta: [u32; 3],
    (m, n, k): (u64, u64, u64),
) -> (phobos_explain::Trace, String) {
    use phobos_explain::Input::Random;
    let inputs = vec![
        ("A", Random { shape: vec![m, k] }),
        ("W", Random { shape: vec![n, k] }),
        ("C", Random { shape: vec![m, n] }),
    ];
    corpus_trace(name, arch, cta, inputs)
}

// The conformance tests' `line_of`: the only line of a kernel's text that
// contains a snippet, so that tests assert lines of the corpus file rather
// than copies of its numbers.
#[path = "../../../../tests/src/source_lines.rs"]
mod source_lines;
#[allow(unused_imports)] // not every test binary asserts lines
pub use source_lines::line_of;

pub const LANES_MATVEC: &str = include_str!("../../../../tests/in/lanes_matvec.pho");

pub const STAGED_MATVEC: &str = include_str!("../../../../tests/in/staged_matvec.pho");

pub const I8_MATVEC: &str = include_str!("../../../../tests/in/i8_matvec.pho");

/// Each CTA stages a 256-element tile of x; with N = 300 the second CTA's
/// tile runs 212 elements past the end.
pub const TAIL_TILE: &str = "@launch(64)
kernel tail_tile(x: tensor<f32>[1, N], y: tensor<f32>[1, N]) {
  var t = x[0 :+ 1, ctx.block.x * 256 :+ 256]
  let i = ctx.block.x * 256 + ctx.thread
  if i < N {
    y[0, i] = t[0, ctx.thread]
  }
}
";

/// Lane l reads row l of a 32-column matrix: 32 lanes × 4 bytes, each in
/// its own 128-byte line.
pub const COLUMN_READ: &str = "@launch(32)
kernel column_read(A: tensor<f32>[N, 32], y: tensor<f32>[1, N]) {
  let v = A[ctx.thread, 0]
  y[0, ctx.thread] = v
}
";
