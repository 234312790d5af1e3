//! The errors of `check/names.rs` (kernel names): their codes, and the one
//! place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::Span;
use crate::check::names::MAX_KERNEL_NAME;
use crate::diag::{Code, Diagnostic};

pass_error! {
    /// An error of `check/names.rs`: a name a kernel cannot have.
    pub enum NameError {
        /// `_`: not a PTX identifier.
        NotPtx { span: Span } => P0208,
        /// `WARP_SZ`: predefined in PTX.
        PtxPredefined { span: Span } => P0208,
        /// `self`, `Self`, `super`, `crate`: no Rust function has the name.
        NotRustFn { name: String, span: Span } => P0208,
        /// Longer than [`MAX_KERNEL_NAME`] bytes.
        TooLong { len: usize, span: Span } => P0208,
        /// Two kernels of one file with a PTX entry of one name (`k` with
        /// `@autotune(N in [1])` and a kernel `k__N1`): `phobos ptx` puts a
        /// file's kernels in one module.
        EntryTwice {
            entry: String,
            kernel: String,
            first_kernel: String,
            span: Span,
            first: Span,
        } => P0201,
    }
}

impl NameError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use NameError::*;
        let code = self.code();
        let same = "a kernel's name is also its PTX `.entry`, the Rust function of the bindings \
                    and the name of its build files";
        match self {
            NotPtx { span } => code
                .error("a kernel cannot be named `_`")
                .primary(span, "not a PTX identifier")
                .note("in PTX a name that starts with `_` needs a second character")
                .note(same),
            PtxPredefined { span } => code
                .error("a kernel cannot be named `WARP_SZ`")
                .primary(span, "a name PTX predefines")
                .note(same),
            NotRustFn { name, span } => code
                .error(format!("a kernel cannot be named `{name}`"))
                .primary(span, "a Rust keyword that no function can be named")
                .note(same),
            TooLong { len, span } => code
                .error(format!(
                    "a kernel's name is {len} bytes long; the limit is {MAX_KERNEL_NAME}"
                ))
                .primary(span, "too long a name")
                .note("the build writes files named after the kernel, and file names are limited to 255 bytes")
                .note(same),
            EntryTwice {
                entry,
                kernel,
                first_kernel,
                span,
                first,
            } => code
                .error(format!(
                    "kernels `{first_kernel}` and `{kernel}` both have the PTX entry `{entry}`"
                ))
                .primary(span, format!("`{kernel}` has an entry `{entry}`"))
                .secondary(first, format!("`{first_kernel}` has an entry `{entry}`"))
                .note("an `@autotune` variant's entry is the kernel's name, then `__NAMEvalue` for each tuned value; rename one kernel"),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<NameError> {
        use NameError::*;
        let span = Span::new(0, 1);
        vec![
            NotPtx { span },
            PtxPredefined { span },
            NotRustFn {
                name: "self".to_string(),
                span,
            },
            TooLong { len: 300, span },
            EntryTwice {
                entry: "k__N1".to_string(),
                kernel: "k__N1".to_string(),
                first_kernel: "k".to_string(),
                span,
                first: span,
            },
        ]
    }
}
