#![doc = include_str!("../README.md")]
//!
//! # Inside this crate
//!
//! phobos-explain: the step-through drawing of a Phobos kernel, "stepped
//! through as the compiler built it". [`trace`] compiles a kernel for one
//! target, runs it on the CPU simulator with an observer on the picked CTA
//! (and, for small grids, every CTA), and groups the executed instructions
//! into steps, one per source statement executed; [`html::render`] draws a
//! [`Trace`] as one self-contained web page, [`text::render`] as readout
//! lines for a terminal, and the trace itself serializes to JSON.
//!
//! This crate owns the trace format ([`model`]) and its presentation. It
//! does no file IO: callers (the `phobos explain` command) read the source
//! and the inputs and write the output.

pub mod html;
mod launch;
pub mod model;
mod readout;
mod record;
mod source_info;
mod steps;
#[cfg(test)]
mod tests;
pub mod text;

pub use launch::{run_observed, run_split, trace, Observed};
pub use model::*;

use phobos_core::ast::ScalarTy;
use phobos_core::Diagnostic;
use std::fmt;

/// A value for one kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// A tensor's elements, little-endian, in the parameter's element type.
    Data {
        shape: Vec<u64>,
        elem: ScalarTy,
        bytes: Vec<u8>,
    },
    /// A tensor of this shape filled with pseudo-random values.
    Random { shape: Vec<u64> },
    /// A scalar parameter's value as written (`300`, `0x10`, `2.5`,
    /// `true`): read against the parameter's type by the one parser,
    /// `phobos_core::scalar_value::ScalarValue::parse`, so a value the
    /// type cannot hold is refused, not wrapped.
    Scalar(String),
}

/// A CTA of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cta {
    /// Linear index `x + y*gx + z*gx*gy`.
    Linear(u32),
    /// Its `ctx.block` coordinates.
    Xyz([u32; 3]),
}

/// What to explain.
#[derive(Clone, Debug)]
pub struct Request {
    /// The source text and the name it is reported under.
    pub source: String,
    pub file_name: String,
    /// The kernel to run; `None` takes the file's only kernel
    /// (`phobos_core::select_kernel`).
    pub kernel: Option<String>,
    /// Target compute capability, e.g. 75.
    pub arch: u32,
    /// CTAs along x, y and z; `None` takes the kernel's `@grid`.
    pub grid: Option<[u32; 3]>,
    /// The picked CTA.
    pub cta: Cta,
    /// A value for every parameter, by name.
    pub inputs: Vec<(String, Input)>,
    /// When the grid has at most this many CTAs, every CTA is traced (the
    /// page then offers a CTA picker); otherwise only the picked one.
    pub max_ctas: u32,
    /// Steps kept per CTA; a longer trace is cut and marked truncated.
    pub max_steps: usize,
    /// Seed of the values for [`Input::Random`].
    pub seed: u64,
    /// The most simulated threads (CTAs times threads per CTA): every CTA
    /// runs, even when one is traced, so a larger grid is refused up front.
    pub max_work: u64,
}

/// The default [`Request::max_work`]: the simulator's,
/// `phobos_sim::DEFAULT_MAX_WORK`.
pub use phobos_sim::DEFAULT_MAX_WORK;

impl Request {
    /// A request with the defaults: every CTA of grids up to 8, at most
    /// 4000 steps per CTA, seed 1.
    pub fn new(
        source: String,
        file_name: String,
        kernel: Option<String>,
        arch: u32,
        grid: Option<[u32; 3]>,
    ) -> Request {
        Request {
            source,
            file_name,
            kernel,
            arch,
            grid,
            cta: Cta::Linear(0),
            inputs: vec![],
            max_ctas: 8,
            max_steps: 4000,
            seed: 1,
            max_work: DEFAULT_MAX_WORK,
        }
    }
}

/// Why a kernel could not be explained.
#[derive(Clone, Debug)]
pub enum ExplainError {
    /// The source does not compile; the diagnostics say why.
    Compile(Vec<Diagnostic>),
    /// The request does not fit the kernel: a missing or unknown parameter,
    /// a shape that contradicts the declared dims, a CTA outside the grid.
    Usage(String),
    /// The kernel compiled but could not run: the simulator refused the
    /// PTX or found a fault (an out-of-bounds access, a race, ...).
    Run(String),
}

impl fmt::Display for ExplainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExplainError::Compile(diags) => {
                let errors = diags.iter().filter(|d| d.is_error()).count();
                write!(f, "the kernel does not compile ({errors} errors)")?;
                for d in diags.iter().filter(|d| d.is_error()) {
                    write!(f, "\n  {}: {}", d.code, d.message)?;
                }
                Ok(())
            }
            ExplainError::Usage(m) => f.write_str(m),
            ExplainError::Run(m) => write!(f, "the simulator stopped the kernel: {m}"),
        }
    }
}

impl std::error::Error for ExplainError {}

/// The trace as pretty JSON (the `json` format).
pub fn to_json(trace: &Trace) -> String {
    serde_json::to_string_pretty(trace).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
