//! The backend: a checked kernel → one PTX module (one `.entry` per
//! `@autotune` variant) and its metadata. The stages, in order, for each
//! variant:
//!
//! 1. `lower`: HIR → the arena IR (`ir`), checked by `verify` in debug builds;
//!    `targets` then refuses what the target lacks (P0810);
//! 2. `unroll`: loops that read tensors, and loops marked `unroll N`, run
//!    several bodies per trip (checked by `verify` again); a kernel that
//!    would grow past a million statements and expressions is P0803;
//! 3. `divisibility`: known divisors and each access's width;
//! 4. `shared_plan`: offsets of the shared buffers (P0801: more than the
//!    target's shared memory per CTA);
//! 5. `barriers`: which candidate barriers are kept, and why;
//! 6. `emit`: PTX text with `.loc` line info.
//!
//! `metadata` then describes the whole kernel for bindgen, the runtime,
//! the simulator front end and `explain`. The passes fail with a
//! [`BackendError`]; `error` writes its diagnostic. Nothing here does IO.

pub mod barriers;
pub mod divisibility;
pub mod emit;
pub mod error;
pub mod ir;
pub mod lower;
pub mod metadata;
pub mod padding;
pub mod print;
pub mod shared_plan;
pub mod targets;
pub mod unroll;
pub mod verify;

use crate::compiled::{CompileOptions, CompiledKernel, ModuleParts};
use crate::diag::Diagnostic;
use crate::hir::{self, CheckedKernel};
use crate::source::LineIndex;
pub use error::BackendError;
use std::fmt::Write as _;

/// One variant after every backend stage.
pub struct CompiledVariant {
    pub func: ir::Func,
    pub div: divisibility::Divisibility,
    pub plan: shared_plan::SharedPlan,
    pub barriers: Vec<barriers::BarrierDecision>,
    pub entry: emit::EntryText,
}

/// The PTX `.entry` name of a variant: the kernel's name, then
/// `__NAMEvalue` for each autotune value (`m` for a minus sign).
pub fn entry_name(kernel: &hir::Kernel) -> String {
    let mut s = kernel.name.clone();
    for (n, v) in &kernel.variant {
        let _ = write!(s, "__{n}{}", v.to_string().replace('-', "m"));
    }
    s
}

/// The lowest PTX ISA version (major * 10 + minor) that supports `sm_<arch>`
/// (the PTX ISA's release notes; ptxas 12.9 refuses `.version 8.5` for
/// sm_100 and `.version 8.6` for sm_120). `sm_90a` ([`phobos_meta::arch::SM_90A`],
/// 91) came with PTX ISA 8.0, as did `wgmma` and `cp.async.bulk.tensor`.
pub fn base_version(arch: u32) -> u32 {
    match arch {
        0..=75 => 63,
        76..=80 => 70,
        81..=86 => 71,
        87..=90 => 78,
        phobos_meta::arch::SM_90A => 80,
        92..=100 => 86,
        _ => 87,
    }
}

/// Run every backend stage on one variant.
pub fn compile_variant(
    kernel: &hir::Kernel,
    lines: &LineIndex,
    arch: u32,
) -> Result<CompiledVariant, Diagnostic> {
    let mut func = lower::lower_for(
        kernel,
        &entry_name(kernel),
        arch >= 80,
        phobos_meta::arch::has_wgmma(arch),
    );
    verified(&func, kernel, "lower")?;
    targets::check(&func, arch)?;
    unroll::unroll(&mut func, kernel.span)?;
    verified(&func, kernel, "unroll")?;
    let div = divisibility::analyze(&func, kernel);
    let plan = shared_plan::plan(&func, lines, kernel.span, arch)?;
    let barriers = barriers::place(&func, &plan, lines)?;
    let an = emit::Analyses {
        div: &div,
        plan: &plan,
        barriers: &barriers,
    };
    let entry = emit::emit_entry(&func, kernel, &an, arch, lines);
    Ok(CompiledVariant {
        func,
        div,
        plan,
        barriers,
        entry,
    })
}

/// In debug builds, run the IR verifier after pass `pass`.
fn verified(func: &ir::Func, kernel: &hir::Kernel, pass: &str) -> Result<(), BackendError> {
    if !cfg!(debug_assertions) {
        return Ok(());
    }
    verify::verify(func).map_err(|errors| BackendError::MalformedIr {
        entry: func.entry.clone(),
        pass: pass.to_string(),
        errors,
        kernel: kernel.span,
    })
}

/// Compile one checked kernel for one target.
pub fn compile_kernel(
    kernel: &CheckedKernel,
    src: &str,
    file_name: &str,
    opts: &CompileOptions,
) -> Result<CompiledKernel, Diagnostic> {
    let lines = LineIndex::new(src);
    if kernel.variants.is_empty() {
        return Err(BackendError::NoVariant {
            kernel: kernel.name.clone(),
            span: kernel.span,
        }
        .into());
    }
    let mut variants = Vec::new();
    for v in &kernel.variants {
        variants.push(compile_variant(v, &lines, opts.arch)?);
    }
    let version = variants
        .iter()
        .map(|v| v.entry.min_version)
        .fold(base_version(opts.arch), u32::max);
    let mut entries = String::new();
    for v in &variants {
        entries.push_str(&v.entry.text);
        entries.push('\n');
    }
    let module = ModuleParts {
        version,
        arch: opts.arch,
        file_name: file_name.to_string(),
        entries,
    };
    let ptx = module_text(&kernel.name, &[&module]);
    let meta = metadata::build(kernel, &variants, file_name, &lines);
    Ok(CompiledKernel { meta, ptx, module })
}

/// One PTX module of the given kernels' entries: a header naming `title`
/// (the first kernel) at the highest `.version` any of them needs, then
/// their entries in order. Every part is from one file and one target.
pub(crate) fn module_text(title: &str, parts: &[&ModuleParts]) -> String {
    let Some(first) = parts.first() else {
        return String::new();
    };
    let version = parts
        .iter()
        .map(|p| p.version)
        .max()
        .unwrap_or(first.version);
    let mut ptx = String::new();
    let _ = writeln!(
        ptx,
        "//\n// Generated by Phobos from {}: kernel `{title}`\n//\n",
        first.file_name
    );
    let _ = writeln!(ptx, ".version {}.{}", version / 10, version % 10);
    let _ = writeln!(ptx, ".target {}", phobos_meta::arch::name(first.arch));
    let _ = writeln!(ptx, ".address_size 64\n");
    let _ = writeln!(
        ptx,
        ".file 1 \"{}\"",
        first.file_name.replace('\\', "/").replace('"', "'")
    );
    // Each kernel's entries after a blank line, as in its own module.
    for p in parts {
        ptx.push('\n');
        ptx.push_str(&p.entries);
    }
    ptx
}

thread_local! {
    static PLANTED_BUG: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Test-only: plant a known miscompile (`shfl<down c, width w>` with a
/// constant `c` loses its segment clamp) on this thread, so that
/// phobos-fuzz's own tests can show the fuzzer finds it. Never set outside
/// those tests.
#[doc(hidden)]
pub fn set_planted_bug(on: bool) {
    PLANTED_BUG.with(|b| b.set(on));
}

pub(crate) fn planted_bug() -> bool {
    PLANTED_BUG.with(std::cell::Cell::get)
}
