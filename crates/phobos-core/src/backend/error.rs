//! Every error the backend reports, and the one place that turns each into
//! a [`Diagnostic`]: its code, message, labels and notes. The passes build
//! a [`BackendError`] with the spans and the data the message needs; they
//! never format a diagnostic themselves. `pipeline.rs`'s check of pinned
//! `@autotune` values is here too: it runs on checked kernels, before the
//! passes.

use crate::ast::Span;
use crate::diag::{Code, Diagnostic};
use phobos_meta::arch;

/// One access of a tile in a hazard: the buffer's name, whether it writes,
/// whether the write is a tile copy, and where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct HazardAccess {
    pub buffer: String,
    pub write: bool,
    pub copy: bool,
    pub span: Span,
}

/// One shared buffer of a kernel that does not fit: name, bytes, span.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedBuffer {
    pub name: String,
    pub bytes: u64,
    pub span: Span,
}

/// Why no barrier can go between two accesses (P0802's note).
#[derive(Clone, Debug, PartialEq)]
pub enum NoBarrierCause {
    /// Inside this loop, whose bounds or condition differ between threads.
    VaryingLoop(Span),
    /// Inside this loop, which holds this `break`, `continue` or `return`.
    LoopLeftEarly { loop_span: Span, exit: Span },
    /// After this `return`, which only some threads may take.
    AfterReturn(Span),
}

#[derive(Clone, Debug, PartialEq)]
pub enum BackendError {
    /// P0312: a build define pins an `@autotune` name to a value that is
    /// not one of its candidates.
    DefineNotCandidate {
        name: String,
        value: i64,
        kernel: String,
        candidates: Vec<i64>,
        span: Span,
    },
    /// P0801: the shared buffers of kernel `entry` need `total` bytes and
    /// `sm_{arch}` allows `limit`.
    SharedMemoryExceeded {
        entry: String,
        total: u64,
        arch: u32,
        limit: u32,
        kernel: Span,
        buffers: Vec<SharedBuffer>,
    },
    /// P0802: `later` follows `earlier` in other threads with no place for
    /// a barrier between them.
    UnfencedHazard {
        earlier: HazardAccess,
        later: HazardAccess,
        /// What keeps barriers out, when the pass found it.
        cause: Option<NoBarrierCause>,
    },
    /// P0803: unrolling would make `size` statements and expressions
    /// (`u64::MAX`: more than 2^64). `largest` is the loop that grows the
    /// most and its copies per trip, when there is one.
    UnrolledTooLarge {
        size: u64,
        largest: Option<(Span, u32)>,
        kernel: Span,
    },
    /// P0810: an atomic `op` on `elem` in `space` memory needs `sm_{need}`.
    AtomicNeedsNewerTarget {
        op: &'static str,
        elem: &'static str,
        space: &'static str,
        need: u32,
        arch: u32,
        span: Span,
    },
    /// P0811: a `dot` of `elem` tiles needs `sm_{need}` (the tensor-core
    /// shape `m16n8k{k}` of `mma::dot_kind`).
    DotNeedsNewerTarget {
        elem: crate::ast::ScalarTy,
        need: u32,
        k: u32,
        arch: u32,
        span: Span,
    },
    /// P0812: a conversion to or from the 8-bit float `elem` (PTX's
    /// `cvt` with `.e4m3x2`/`.e5m2x2`, sm_89 and newer).
    F8NeedsNewerTarget {
        elem: crate::ast::ScalarTy,
        arch: u32,
        span: Span,
    },
    /// P0901: the barrier pass found a hazard between events that are not
    /// both accesses.
    HazardWithoutAccesses,
    /// P0901: the IR verifier failed after pass `pass`.
    MalformedIr {
        entry: String,
        pass: String,
        errors: Vec<String>,
        kernel: Span,
    },
    /// P0901: a checked kernel without variants.
    NoVariant { kernel: String, span: Span },
}

impl BackendError {
    /// The stable code of this error.
    pub fn code(&self) -> Code {
        match self {
            BackendError::DefineNotCandidate { .. } => Code::P0312,
            BackendError::SharedMemoryExceeded { .. } => Code::P0801,
            BackendError::UnfencedHazard { .. } => Code::P0802,
            BackendError::UnrolledTooLarge { .. } => Code::P0803,
            BackendError::AtomicNeedsNewerTarget { .. } => Code::P0810,
            BackendError::DotNeedsNewerTarget { .. } => Code::P0811,
            BackendError::F8NeedsNewerTarget { .. } => Code::P0812,
            BackendError::HazardWithoutAccesses
            | BackendError::MalformedIr { .. }
            | BackendError::NoVariant { .. } => Code::P0901,
        }
    }

    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        let code = self.code();
        match self {
            BackendError::DefineNotCandidate {
                name,
                value,
                kernel,
                candidates,
                span,
            } => code
                .error(format!("{name} = {value} is not a candidate of kernel `{kernel}`"))
                .primary(span, format!("@autotune({name} in {candidates:?})"))
                .note(format!("define {name} as one of {candidates:?}")),
            BackendError::SharedMemoryExceeded {
                entry,
                total,
                arch,
                limit,
                kernel,
                buffers,
            } => {
                let mut d = code
                    .error(format!(
                        "kernel `{entry}` needs {total} bytes of shared memory; {} allows at most {limit} bytes per CTA",
                        arch::name(arch)
                    ))
                    .primary(kernel, "this kernel's shared buffers do not fit");
                for b in buffers {
                    d = d.secondary(b.span, format!("`{}` takes {} bytes", b.name, b.bytes));
                }
                d.note("make the tiles smaller (fewer rows or columns per CTA), or split the kernel")
            }
            BackendError::UnfencedHazard {
                earlier,
                later,
                cause,
            } => {
                let (pn, xn) = (&earlier.buffer, &later.buffer);
                let mut d = code
                    .error(format!(
                        "`{xn}` is {} by other threads here, after it was {}, and no barrier can go between",
                        verb(later.write, later.copy),
                        verb(earlier.write, earlier.copy)
                    ))
                    .primary(later.span, format!("`{xn}` {} here", verb(later.write, later.copy)));
                if earlier.span != later.span {
                    d = d.secondary(
                        earlier.span,
                        format!("`{pn}` {} here", verb(earlier.write, earlier.copy)),
                    );
                }
                let (why, fix) = match cause {
                    Some(NoBarrierCause::VaryingLoop(l)) => {
                        d = d.secondary(l, "this loop's bounds differ between threads");
                        (
                            "both accesses are inside a loop whose bounds differ between threads, where no barrier can go",
                            "read what the loop needs into a `let` before it, or give the loop bounds that are the same \
                             in every thread and test the thread's own condition with an `if` inside it",
                        )
                    }
                    Some(NoBarrierCause::LoopLeftEarly { loop_span, exit }) => {
                        d = d
                            .secondary(loop_span, "some threads may leave this loop early")
                            .secondary(exit, "here");
                        (
                            "both accesses are inside a loop that some threads may leave early, where no barrier can go",
                            "write the tile before the loop, or make the exit's condition the same in every thread",
                        )
                    }
                    Some(NoBarrierCause::AfterReturn(r)) => {
                        d = d.secondary(r, "some threads may leave the kernel here");
                        (
                            "the accesses come after a `return` that only some threads may take, where no barrier can go",
                            "write the tile before the `return`, or make its condition the same in every thread",
                        )
                    }
                    None => (
                        "these accesses are under control that differs between threads",
                        "move the accesses to where every thread arrives",
                    ),
                };
                d.note(format!(
                    "a barrier needs every thread of the CTA, so Phobos places one only where control is the same for all threads; {why}: {fix}"
                ))
            }
            BackendError::UnrolledTooLarge {
                size,
                largest,
                kernel,
            } => {
                let d = code.error(format!(
                    "the kernel would have {} statements and expressions after unrolling; \
                     the limit is {}",
                    if size == u64::MAX {
                        "more than 2^64".to_string()
                    } else {
                        size.to_string()
                    },
                    crate::limits::MAX_UNROLLED_SIZE
                ));
                let d = match largest {
                    Some((span, copies)) => d.primary(
                        span,
                        format!("this loop runs {copies} copies of its body per trip"),
                    ),
                    None => d.primary(kernel, "in this kernel"),
                };
                d.note(
                    "lower the `unroll` factors of nested loops (their product multiplies the body), \
                     or `unroll 1` to keep a loop as written",
                )
            }
            BackendError::DotNeedsNewerTarget {
                elem,
                need,
                k,
                arch,
                span,
            } => code
                .error(format!(
                    "a `dot` of {} tiles needs {} or newer, and this kernel is compiled for {}",
                    elem.name(),
                    arch::name(need),
                    arch::name(arch)
                ))
                .primary(
                    span,
                    format!(
                        "{} {} x {} product",
                        crate::diag::a_or_an(elem.name()),
                        elem.name(),
                        elem.name()
                    ),
                )
                .note(if elem.is_f8() {
                    format!(
                        "8-bit float tensor cores (mma.sync m16n8k{k} .e4m3/.e5m2) are {}'s (Ada) and newer: build for {} or newer only, or convert the operands to f16 (`f16(x)`) for an f16 `dot`",
                        arch::name(need),
                        arch::name(need)
                    )
                } else {
                    format!(
                        "the m16n8 shape Phobos uses for {} products, mma.sync m16n8k{k}, is {}'s; sm_75 has m16n8k8 for f16 only: build for newer targets only{}",
                        elem.name(),
                        arch::name(need),
                        if elem == crate::ast::ScalarTy::BF16 { ", or copy the operands as f16" } else { "" }
                    )
                }),
            BackendError::F8NeedsNewerTarget { elem, arch, span } => code
                .error(format!(
                    "{} needs sm_89 or newer, and this kernel is compiled for {}",
                    elem.name(),
                    arch::name(arch)
                ))
                .primary(span, format!("a conversion to or from {}", elem.name()))
                .note(format!(
                    "PTX converts 8-bit floats (`cvt` with `.{}`) from sm_89 (Ada) on; build for sm_89 or newer only (`--arch sm_89`, or `PHOBOS_ARCHES`)",
                    crate::backend::emit::f8x2_name(elem)
                )),
            BackendError::AtomicNeedsNewerTarget {
                op,
                elem,
                space,
                need,
                arch,
                span,
            } => code
                .error(format!(
                    "`{op}` on {elem} needs {} or newer, and this kernel is compiled for {}",
                    arch::name(need),
                    arch::name(arch)
                ))
                .primary(span, format!("{} {space} {elem} atomic", crate::diag::a_or_an(space)))
                .note(format!(
                    "PTX has `atom.add.noftz.{elem}` from {}; build for newer targets only, or accumulate in f32 (`atomic_add` on an f32 tensor) and convert afterwards",
                    arch::name(need)
                )),
            BackendError::HazardWithoutAccesses => {
                code.error("internal compiler error: a hazard without accesses")
            }
            BackendError::MalformedIr {
                entry,
                pass,
                errors,
                kernel,
            } => code
                .error(format!(
                    "internal compiler error: the IR of `{entry}` is malformed after `{pass}`: {}",
                    errors.join("; ")
                ))
                .primary(kernel, "while compiling this kernel"),
            BackendError::NoVariant { kernel, span } => code
                .error(format!(
                    "internal compiler error: kernel `{kernel}` has no variant to compile"
                ))
                .primary(span, "while compiling this kernel"),
        }
    }

    /// One error of each variant, so a test can see every backend code
    /// produced and rendered.
    pub fn examples() -> Vec<BackendError> {
        let span = Span::new(0, 1);
        let access = |write| HazardAccess {
            buffer: "t".into(),
            write,
            copy: false,
            span,
        };
        vec![
            BackendError::DefineNotCandidate {
                name: "B".into(),
                value: 3,
                kernel: "k".into(),
                candidates: vec![1, 2],
                span,
            },
            BackendError::SharedMemoryExceeded {
                entry: "k".into(),
                total: 1 << 20,
                arch: 75,
                limit: 65536,
                kernel: span,
                buffers: vec![SharedBuffer {
                    name: "t".into(),
                    bytes: 1 << 20,
                    span,
                }],
            },
            BackendError::UnfencedHazard {
                earlier: access(true),
                later: access(false),
                cause: Some(NoBarrierCause::VaryingLoop(span)),
            },
            BackendError::UnrolledTooLarge {
                size: u64::MAX,
                largest: None,
                kernel: span,
            },
            BackendError::DotNeedsNewerTarget {
                elem: crate::ast::ScalarTy::BF16,
                need: 80,
                k: 16,
                arch: 75,
                span,
            },
            BackendError::AtomicNeedsNewerTarget {
                op: "atomic_add",
                elem: "bf16",
                space: "global",
                need: 90,
                arch: 75,
                span,
            },
            BackendError::F8NeedsNewerTarget {
                elem: crate::ast::ScalarTy::F8E4M3,
                arch: 80,
                span,
            },
            BackendError::HazardWithoutAccesses,
            BackendError::MalformedIr {
                entry: "k".into(),
                pass: "lower".into(),
                errors: vec!["x".into()],
                kernel: span,
            },
            BackendError::NoVariant {
                kernel: "k".into(),
                span,
            },
        ]
    }
}

impl From<BackendError> for Diagnostic {
    fn from(e: BackendError) -> Diagnostic {
        e.into_diagnostic()
    }
}

/// How an access is named in messages (also in the barrier pass's reasons).
pub(crate) fn verb(write: bool, copy: bool) -> &'static str {
    match (write, copy) {
        (true, true) => "copied into",
        (true, false) => "written",
        (false, _) => "read",
    }
}
