//! The errors of `check/fns.rs` (the fn items): their codes, and the one
//! place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::Span;
use crate::diag::{Code, Diagnostic};

pass_error! {
    /// An error of `check/fns.rs`: the fn items.
    pub enum FnError {
        FnNamedLikeBuiltin { name: String, span: Span } => P0201,
        FnTwice {
            name: String,
            span: Span,
            first: Span,
        } => P0201,
        FnParamTwice { name: String, span: Span } => P0202,
        FnAsValue { name: String, span: Span } => P0206,
        /// A name in a fn body that is not a parameter.
        FnBodyUnknownName { name: String, span: Span } => P0200,
        /// An unknown callee.
        UnknownFn { name: String, span: Span } => P0205,
        /// The fn `path[0]` calls itself through `path[1..]`.
        Recursion { path: Vec<String>, span: Span } => P0210,
    }
}

impl FnError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use FnError::*;
        let code = self.code();
        match self {
            FnNamedLikeBuiltin { name, span } => code
                .error(format!("`{name}` is a built-in and cannot be redefined"))
                .primary(span, "choose another name"),
            FnTwice { name, span, first } => code
                .error(format!("fn `{name}` is defined twice"))
                .primary(span, "second definition")
                .secondary(first, "first definition"),
            FnParamTwice { name, span } => code
                .error(format!("`{name}` is declared twice"))
                .primary(span, "a second parameter of this name"),
            FnAsValue { name, span } => code
                .error(format!("`{name}` is a fn, not a value"))
                .primary(span, "call it with arguments"),
            FnBodyUnknownName { name, span } => code
                .error(format!("cannot find `{name}` in this scope"))
                .primary(span, "not a parameter of this fn")
                .note("a fn body sees only its own parameters"),
            UnknownFn { name, span } => code
                .error(format!("cannot find fn `{name}`"))
                .primary(span, "not a fn, built-in or conversion"),
            Recursion { path, span } => {
                let first = path.first().map_or("", String::as_str);
                let msg = if path.len() <= 1 {
                    format!("fn `{first}` calls itself")
                } else {
                    format!(
                        "fn `{first}` calls itself through {}",
                        path[1..]
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                code.error(msg)
                    .primary(span, "this call closes the cycle")
                    .note("fn items are inlined at each call, so they cannot recurse")
            }
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<FnError> {
        use FnError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            FnNamedLikeBuiltin { name: name(), span },
            FnTwice {
                name: name(),
                span,
                first: span,
            },
            FnParamTwice { name: name(), span },
            FnAsValue { name: name(), span },
            FnBodyUnknownName { name: name(), span },
            UnknownFn { name: name(), span },
            Recursion {
                path: vec![name(), "y".into()],
                span,
            },
        ]
    }
}
