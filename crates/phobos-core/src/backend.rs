//! The backend (to be written): `hir` → IR → analyses → PTX + metadata.
use crate::diag::Diagnostic;
use crate::hir::CheckedKernel;
use crate::pipeline::{CompileOptions, CompiledKernel};

pub fn compile_kernel(
    kernel: &CheckedKernel,
    _src: &str,
    _file_name: &str,
    _opts: &CompileOptions,
) -> Result<CompiledKernel, Diagnostic> {
    Err(Diagnostic::error(
        "P0900",
        format!("the backend is not written yet (kernel `{}`)", kernel.name),
    ))
}
