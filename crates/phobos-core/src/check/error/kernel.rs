//! The errors of `check.rs` (items and whole kernels): their codes, and the
//! one place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::Span;
use crate::check::cx::MAX_TOTAL_EXPR_NODES;
use crate::diag::{Code, Diagnostic};

pass_error! {
    /// An error of `check.rs`: items and whole kernels.
    pub enum KernelError {
        /// A second kernel of one name.
        KernelTwice {
            name: String,
            span: Span,
            first: Span,
        } => P0201,
        /// All variants together have too many expressions.
        TooMuchTuning {
            variants: usize,
            nodes: usize,
            total: usize,
            span: Span,
        } => P0311,
        /// `@grid` computes what the host cannot.
        GridNotHost { span: Span } => P0308,
    }
}

impl KernelError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use KernelError::*;
        let code = self.code();
        match self {
            KernelTwice { name, span, first } => code
                .error(format!("kernel `{name}` is defined twice"))
                .primary(span, "second definition")
                .secondary(first, "first definition"),
            TooMuchTuning {
                variants,
                nodes,
                total,
                span,
            } => code
                .error(format!(
                    "`@autotune` makes {variants} variants of a kernel of {nodes} expressions, \
                     {total} or more in all; the limit is {MAX_TOTAL_EXPR_NODES} for all variants together"
                ))
                .primary(span, format!("{variants} variants"))
                .note("tune fewer names or fewer values at once, or tune a smaller kernel"),
            GridNotHost { span } => code
                .error("`@grid` can only use dims, constants, + - * / %, cdiv, min and max")
                .primary(span, "computed before the launch, on the host"),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<KernelError> {
        use KernelError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            KernelTwice {
                name: name(),
                span,
                first: span,
            },
            TooMuchTuning {
                variants: 2,
                nodes: 600_000,
                total: 1_200_000,
                span,
            },
            GridNotHost { span },
        ]
    }
}
