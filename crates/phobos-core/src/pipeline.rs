//! The whole compiler in one screen: parse → resolve/type/uniformity
//! (`check`) → lower, analyses, shared plan, barriers, PTX (`backend`).

use crate::diag::Diagnostic;
use crate::hir::CheckedKernel;
use crate::meta::KernelMeta;

/// The targets Phobos supports; `sm_75` is the floor.
pub const ARCHES: [u32; 5] = [75, 80, 86, 89, 90];

#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Target compute capability, e.g. 75 for `sm_75`.
    pub arch: u32,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions { arch: 75 }
    }
}

/// One kernel compiled for one target: a PTX module holding one `.entry`
/// per autotune variant, and its metadata.
#[derive(Clone, Debug)]
pub struct CompiledKernel {
    pub meta: KernelMeta,
    pub ptx: String,
}

/// Parse and check a source file. Diagnostics are sorted by position;
/// kernels are returned only for items that checked without errors.
pub fn check_source(src: &str) -> (Vec<CheckedKernel>, Vec<Diagnostic>) {
    let (file, mut diags) = crate::parser::parse(src);
    let (kernels, check_diags) = crate::check::check_file(&file, src);
    diags.extend(check_diags);
    // Stable: diagnostics at one position keep the order they were found in.
    diags.sort_by_key(|d| {
        d.labels
            .iter()
            .find(|l| l.primary)
            .map_or(0, |l| l.span.start)
    });
    crate::diag::cap(&mut diags);
    (kernels, diags)
}

/// Compile a source file for one target. `file_name` is recorded in the
/// metadata and the PTX `.file` directive. When any diagnostic is an error
/// no kernel is returned.
pub fn compile(
    src: &str,
    file_name: &str,
    opts: &CompileOptions,
) -> (Vec<CompiledKernel>, Vec<Diagnostic>) {
    let (checked, mut diags) = check_source(src);
    if diags.iter().any(Diagnostic::is_error) {
        return (vec![], diags);
    }
    let mut out = Vec::new();
    for kernel in &checked {
        match crate::backend::compile_kernel(kernel, src, file_name, opts) {
            Ok(k) => out.push(k),
            Err(d) => diags.push(d),
        }
    }
    if diags.iter().any(Diagnostic::is_error) {
        out.clear();
    }
    crate::diag::cap(&mut diags);
    (out, diags)
}
