//! Why a command failed, and so its exit code: the one failure type of
//! every subcommand that runs a kernel or writes files (`ptx`, `build`,
//! `report`, `sim`, `explain`, `profile`).
//!
//! Exit codes: 1 for a kernel that does not compile, fails a check or
//! that the simulator stops; 2 for usage and IO errors.

/// A failed command: the text for standard error and the exit code.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// A usage or IO error: exit 2, printed as `error: MESSAGE`.
    pub fn usage(message: impl std::fmt::Display) -> Failure {
        Failure {
            code: 2,
            message: format!("error: {message}"),
        }
    }

    /// The kernel failed (to compile, or in the simulator): exit 1,
    /// printed as `error: MESSAGE`.
    pub fn kernel(message: impl std::fmt::Display) -> Failure {
        Failure {
            code: 1,
            message: format!("error: {message}"),
        }
    }

    /// Exit 1 with text that is printed as it is: rendered diagnostics, a
    /// check report.
    pub fn report(text: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            message: text.into(),
        }
    }
}

/// A command's exit code: 0, or its failure's after printing the message.
pub fn exit_code(result: Result<(), Failure>) -> u8 {
    match result {
        Ok(()) => 0,
        Err(f) => {
            eprintln!("{}", f.message);
            f.code
        }
    }
}
