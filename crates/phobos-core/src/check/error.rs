//! Every error the checker reports, and where each becomes a
//! [`Diagnostic`]. Each pass has its own error enum in `error/`, named
//! after the pass it serves (`HeaderError` for `check/header.rs`,
//! `DotError` for `check/dot.rs`, ...), and that module is the one place
//! its codes, messages, labels and notes are written. [`CheckError`] is
//! the enum of those enums: it only delegates.
//!
//! The passes build an error with the spans and the data its message
//! needs and hand it to `Cx::report` (or push it converted); they never
//! write a message themselves. `Cx::report` adds one thing every error
//! shares: a label at each `fn` call being inlined.
//!
//! A code has several variants when its messages differ, and a code can
//! belong to several passes (P0401, a value of the wrong type, is one).

/// Declares one pass's error enum with each variant's stable code written
/// beside it (`Variant { fields } => P0201,`), and its `code()`: the list
/// of a pass's codes is its type, with no second table to keep in step.
macro_rules! pass_error {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident { $($(#[$fmeta:meta])* $field:ident : $fty:ty),* $(,)? } => $code:ident,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[doc = concat!("\n\nCode ", stringify!($code), ".")]
                $variant { $($(#[$fmeta])* $field: $fty),* },
            )*
        }

        impl $name {
            /// The stable code of this error.
            pub fn code(&self) -> Code {
                match self {
                    $($name::$variant { .. } => Code::$code,)*
                }
            }
        }
    };
}

mod arrays;
mod atomics;
mod calls;
mod collectives;
mod dot;
mod fns;
mod header;
mod kernel;
mod names;
mod scratch;
mod stmts;
mod subscripts;
mod types;
mod uniformity;

pub use arrays::ArrayError;
pub use atomics::AtomicError;
pub use calls::CallError;
pub use collectives::CollectiveError;
pub use dot::DotError;
pub use fns::FnError;
pub use header::{BadTuneValue, HeaderError};
pub use kernel::KernelError;
pub use names::NameError;
pub use scratch::ScratchError;
pub use stmts::StmtError;
pub use subscripts::SubscriptError;
pub use types::TypeError;
pub use uniformity::{Control, Origin, UniformityError, VaryingCause};

use crate::diag::{Code, Diagnostic};

/// Declares [`CheckError`] with one variant per pass's error enum, the
/// `From` conversions into it and into [`Diagnostic`], and the methods
/// that hand each call on to the pass's own enum.
macro_rules! check_errors {
    ($($(#[$doc:meta])* $variant:ident($pass:ident),)*) => {
        /// An error of any checker pass.
        #[derive(Clone, Debug, PartialEq)]
        pub enum CheckError {
            $($(#[$doc])* $variant($pass),)*
        }

        $(
            impl From<$pass> for CheckError {
                fn from(e: $pass) -> CheckError {
                    CheckError::$variant(e)
                }
            }

            impl From<$pass> for Diagnostic {
                fn from(e: $pass) -> Diagnostic {
                    e.into_diagnostic()
                }
            }
        )*

        impl CheckError {
            /// The stable code of this error.
            pub fn code(&self) -> Code {
                match self {
                    $(CheckError::$variant(e) => e.code(),)*
                }
            }

            /// The diagnostic users see, written by the pass's own enum.
            pub fn into_diagnostic(self) -> Diagnostic {
                match self {
                    $(CheckError::$variant(e) => e.into_diagnostic(),)*
                }
            }

            /// One error of each variant of every pass, in the order of
            /// the passes here, so a test can see every checker code
            /// produced and rendered.
            pub fn examples() -> Vec<CheckError> {
                let mut all = Vec::new();
                $(all.extend($pass::examples().into_iter().map(CheckError::from));)*
                all
            }
        }
    };
}

check_errors! {
    /// `check.rs`: items and whole kernels.
    Kernel(KernelError),
    /// `check/names.rs`: names a kernel cannot have.
    Name(NameError),
    /// `check/header.rs`: parameters, dims and attributes.
    Header(HeaderError),
    /// `check/collectives.rs`: collective and shuffle configuration.
    Collective(CollectiveError),
    /// `check/uniformity.rs`: where collectives and tiles may run.
    Uniformity(UniformityError),
    /// `check/atomics.rs`: atomics and `fence()`.
    Atomic(AtomicError),
    /// `check/scratch.rs`: shared scratch tiles and partial fills.
    Scratch(ScratchError),
    /// `check/subscripts.rs`: tensors, tiles, runs.
    Subscript(SubscriptError),
    /// `check/arrays.rs`: register arrays.
    Array(ArrayError),
    /// `check/stmts.rs`: statements.
    Stmt(StmtError),
    /// `check/fns.rs`: the fn items.
    Fn(FnError),
    /// `check/calls.rs`: built-ins and fn calls.
    Call(CallError),
    /// `check/types.rs`: expressions.
    Type(TypeError),
    /// `check/dot.rs`: tensor cores (accumulator tiles and `dot`).
    Dot(DotError),
}

impl From<CheckError> for Diagnostic {
    fn from(e: CheckError) -> Diagnostic {
        e.into_diagnostic()
    }
}
