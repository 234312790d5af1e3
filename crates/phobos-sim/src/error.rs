//! The simulator's errors: malformed or unsupported PTX, bad launches, and
//! the structured reports of the sanitizer checks.
//!
//! Every error renders with `Display` as a complete, human-readable message;
//! callers (the CLI, the runtime) print it as is.

use crate::observer::Space;
use std::fmt;

/// Which check produced a [`CheckReport`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckKind {
    /// Out-of-bounds or misaligned memory access.
    Memcheck,
    /// Shared-memory hazard between threads with no barrier between them.
    Racecheck,
    /// A barrier or warp collective not reached by every thread it needs.
    Synccheck,
    /// A read of shared memory that no thread wrote.
    Initcheck,
    /// A warp ran more instructions than `LaunchOptions::max_steps`.
    StepLimit,
    /// A loop's `i += step` left i32 (a `phobos.step` note): the language
    /// requires it to stay inside, and on a GPU the loop would wrap and run on.
    LoopStep,
}

impl CheckKind {
    /// The check's name as printed at the start of a report.
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::Memcheck => "memcheck",
            CheckKind::Racecheck => "racecheck",
            CheckKind::Synccheck => "synccheck",
            CheckKind::Initcheck => "initcheck",
            CheckKind::StepLimit => "step limit",
            CheckKind::LoopStep => "loop step",
        }
    }
}

/// A position in the kernel's source, from the PTX `.loc`/`.file` directives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLoc {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A failed check: what went wrong, where in the source and the PTX, in
/// which CTA and thread, at which address of which tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReport {
    pub kind: CheckKind,
    /// The entry being run.
    pub kernel: String,
    /// What went wrong, in one sentence without location.
    pub message: String,
    /// The source position of the faulting instruction, if the PTX has `.loc`.
    pub source: Option<SourceLoc>,
    /// 1-based PTX line of the faulting instruction.
    pub ptx_line: usize,
    /// The faulting instruction's opcode, e.g. `ld.global.nc.v4.f32`.
    pub instruction: String,
    /// CTA index `(x, y, z)`.
    pub cta: [u32; 3],
    /// Thread index `(x, y, z)` within the CTA, when one thread is at fault.
    pub thread: Option<[u32; 3]>,
    /// The accessed address (global: virtual address; shared: offset).
    pub address: Option<u64>,
    pub space: Option<Space>,
    /// The tensor (buffer) or shared variable the address falls in or near.
    pub tensor: Option<String>,
    /// Further lines: the conflicting access, the missing threads, ...
    pub notes: Vec<String>,
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} in kernel `{}`",
            self.kind.name(),
            self.message,
            self.kernel
        )?;
        match &self.source {
            Some(loc) => writeln!(
                f,
                "  at {loc} (PTX line {}: {})",
                self.ptx_line, self.instruction
            )?,
            None => writeln!(f, "  at PTX line {}: {}", self.ptx_line, self.instruction)?,
        }
        let [x, y, z] = self.cta;
        write!(f, "  CTA ({x}, {y}, {z})")?;
        if let Some([tx, ty, tz]) = self.thread {
            write!(f, ", thread ({tx}, {ty}, {tz})")?;
        }
        if let Some(addr) = self.address {
            let space = match self.space {
                Some(Space::Shared) => "shared offset",
                Some(Space::Local) => "local offset",
                Some(Space::Param) => "param offset",
                _ => "address",
            };
            write!(f, ", {space} {addr:#x}")?;
        }
        if let Some(t) = &self.tensor {
            write!(f, " (`{t}`)")?;
        }
        for n in &self.notes {
            write!(f, "\n  note: {n}")?;
        }
        Ok(())
    }
}

/// Everything that can go wrong loading PTX or running a launch.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// The PTX text is malformed.
    Parse { line: usize, message: String },
    /// The PTX uses an instruction, directive or type outside the supported
    /// subset (see `docs/simulator.md`).
    Unsupported { instruction: String, line: usize },
    /// `launch` named an entry the module does not have.
    UnknownEntry {
        name: String,
        available: Vec<String>,
    },
    /// The launch arguments do not match the entry's `.param` list.
    Args { kernel: String, message: String },
    /// An impossible launch configuration (zero-sized grid, too many threads).
    Launch { kernel: String, message: String },
    /// Host-side misuse of device memory (unknown buffer, copy out of range).
    Memory { message: String },
    /// A sanitizer check or the step limit failed.
    Check(Box<CheckReport>),
}

impl SimError {
    pub(crate) fn parse(line: usize, message: impl Into<String>) -> SimError {
        SimError::Parse {
            line,
            message: message.into(),
        }
    }

    /// The check report, if this error is one.
    pub fn report(&self) -> Option<&CheckReport> {
        match self {
            SimError::Check(r) => Some(r),
            _ => None,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Parse { line, message } => {
                write!(f, "PTX parse error at line {line}: {message}")
            }
            SimError::Unsupported { instruction, line } => {
                write!(f, "unsupported instruction {instruction} at line {line}")
            }
            SimError::UnknownEntry { name, available } => {
                write!(f, "no entry `{name}` in the PTX module")?;
                if available.is_empty() {
                    write!(f, " (it has no entries)")
                } else {
                    write!(f, " (it has: {})", available.join(", "))
                }
            }
            SimError::Args { kernel, message } => {
                write!(f, "bad arguments for kernel `{kernel}`: {message}")
            }
            SimError::Launch { kernel, message } => {
                write!(f, "cannot launch kernel `{kernel}`: {message}")
            }
            SimError::Memory { message } => write!(f, "device memory: {message}"),
            SimError::Check(r) => r.fmt(f),
        }
    }
}

impl std::error::Error for SimError {}
