//! The whole compiler in one screen: parse → resolve/type/uniformity
//! (`check`) → lower, analyses, shared plan, barriers, PTX (`backend`).

use crate::backend::BackendError;
use crate::diag::Diagnostic;
use crate::hir::CheckedKernel;
use phobos_meta::arch::{self, SM_90A};
// The contract types and limits, at their old paths too.
pub use crate::compiled::{CompileOptions, CompiledKernel};
pub use crate::limits::{max_shared_bytes, STATIC_SHARED_LIMIT};

/// The targets Phobos supports, in order; `sm_75` is the floor and
/// `sm_90a` is [`SM_90A`] (91: see `phobos_meta::arch`).
pub const ARCHES: [u32; 8] = [75, 80, 86, 89, 90, SM_90A, 100, 120];

/// A target as a user writes it, `sm_86`, `compute_86` or `86` (and
/// `sm_90a`, `compute_90a`, `90a`), checked against [`ARCHES`]; the error
/// names the supported ones. The one parser of the CLI's `--arch` and
/// phobos-build's `arches` and `PHOBOS_ARCHES`. `91`, the number Phobos
/// gives sm_90a inside, is not a name: there is no sm_91.
pub fn parse_arch(text: &str) -> Result<u32, String> {
    let t = text.trim();
    let digits = t
        .strip_prefix("sm_")
        .or_else(|| t.strip_prefix("compute_"))
        .unwrap_or(t);
    match arch::from_name(digits) {
        Some(n) if ARCHES.contains(&n) => Ok(n),
        _ => {
            let list: Vec<String> = ARCHES.iter().map(|&a| arch::name(a)).collect();
            Err(format!(
                "unknown target `{t}`; supported: {} (`75` means `sm_75`)",
                list.join(", ")
            ))
        }
    }
}

/// A list of targets, comma- or space-separated (`sm_80,sm_90`, as
/// `PHOBOS_ARCHES` and the CLI's `--arch` hold it), each read by
/// [`parse_arch`]; duplicates are dropped, an empty list is an error.
pub fn parse_arch_list(text: &str) -> Result<Vec<u32>, String> {
    let mut out: Vec<u32> = Vec::new();
    for item in text.split([',', ' ']).filter(|s| !s.trim().is_empty()) {
        let arch = parse_arch(item)?;
        if !out.contains(&arch) {
            out.push(arch);
        }
    }
    if out.is_empty() {
        return Err("no architecture given".to_string());
    }
    Ok(out)
}

/// One PTX module holding the entries of several kernels compiled from one
/// file for one target (what `phobos ptx` prints for a file): one header,
/// at the highest `.version` any of them needs and naming the first
/// kernel, then each kernel's entries in order. Empty for no kernels; for
/// one kernel it is that kernel's `ptx`.
pub fn file_module(kernels: &[CompiledKernel]) -> String {
    let parts: Vec<&crate::compiled::ModuleParts> = kernels.iter().map(|k| &k.module).collect();
    let title = kernels.first().map_or("", |k| k.meta.name.as_str());
    crate::backend::module_text(title, &parts)
}

/// Parse and check a source file. Diagnostics are sorted by position;
/// kernels are returned only for items that checked without errors.
pub fn check_source(src: &str) -> (Vec<CheckedKernel>, Vec<Diagnostic>) {
    let (kernels, mut diags) = check_source_uncapped(src);
    crate::diag::cap(&mut diags);
    (kernels, diags)
}

/// [`check_source`] with every diagnostic kept, for callers that add more
/// before capping.
fn check_source_uncapped(src: &str) -> (Vec<CheckedKernel>, Vec<Diagnostic>) {
    let (checked, diags) = check_source_with_partial(src);
    (checked.kernels, diags)
}

/// [`check_source`] keeping the kernels with errors, as far as the checker
/// could judge them, in [`crate::check::Checked::partial`] (for editors;
/// diagnostics not capped). A kernel with a syntax error inside it is in
/// neither list.
pub fn check_source_with_partial(src: &str) -> (crate::check::Checked, Vec<Diagnostic>) {
    let (file, mut diags) = crate::parser::parse(src);
    let (checked, check_diags) = crate::check::check_file_with_partial(&file, src);
    let crate::check::Checked {
        mut kernels,
        mut partial,
    } = checked;
    // A kernel with a syntax error inside it is not returned either: the
    // parser dropped or blanked what it could not read.
    let syntax_errors: Vec<u32> = diags
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| d.labels.iter().find(|l| l.primary).map(|l| l.span.start))
        .collect();
    let readable = |k: &CheckedKernel| {
        !syntax_errors
            .iter()
            .any(|&at| k.span.start <= at && at < k.span.end)
    };
    kernels.retain(readable);
    partial.retain(readable);
    diags.extend(check_diags);
    sort_by_position(&mut diags);
    (crate::check::Checked { kernels, partial }, diags)
}

/// Sorts diagnostics by their primary label. Stable: diagnostics at one
/// position keep the order they were found in. A count of diagnostics not
/// shown (P0006) goes last, after what it follows.
fn sort_by_position(diags: &mut [Diagnostic]) {
    diags.sort_by_key(|d| {
        let at = d
            .labels
            .iter()
            .find(|l| l.primary)
            .map_or(0, |l| l.span.start);
        (d.hidden.is_some(), at)
    });
}

/// Check a source file as `compile` would for every target in `arches`:
/// the front end's diagnostics, then every error the backend reports for
/// a kernel that checked (the shared-memory limit P0801, hazards no
/// barrier can separate P0802), each once even when several targets
/// report it. Kernels are returned only when they compile for every target.
pub fn check_for_targets(
    src: &str,
    file_name: &str,
    arches: &[u32],
) -> (Vec<CheckedKernel>, Vec<Diagnostic>) {
    let (checked, mut diags) = check_source_uncapped(src);
    let mut ok = Vec::new();
    for kernel in checked {
        let mut failed = false;
        for &arch in arches {
            if let Err(d) = crate::backend::compile_kernel(
                &kernel,
                src,
                file_name,
                &CompileOptions::for_arch(arch),
            ) {
                failed = true;
                add_once_per_target(&mut diags, d);
            }
        }
        if !failed {
            ok.push(kernel);
        }
    }
    sort_by_position(&mut diags);
    crate::diag::cap(&mut diags);
    (ok, diags)
}

/// Adds a diagnostic one target reported to those of other targets, once:
/// an error at the same place with the same code is the same error (the
/// shared-memory limit differs between targets, so P0801's message does),
/// and a different message becomes a note of the first, so that every
/// target's limit is still said.
pub fn add_once_per_target(diags: &mut Vec<Diagnostic>, d: Diagnostic) {
    match diags
        .iter_mut()
        .find(|x| x.code == d.code && x.labels == d.labels)
    {
        Some(first) => {
            if first.message != d.message && !first.notes.contains(&d.message) {
                first.notes.push(d.message);
            }
        }
        None => diags.push(d),
    }
}

/// Compile a source file for one target. `file_name` is recorded in the
/// metadata and the PTX `.file` directive. When any diagnostic is an error
/// no kernel is returned.
pub fn compile(
    src: &str,
    file_name: &str,
    opts: &CompileOptions,
) -> (Vec<CompiledKernel>, Vec<Diagnostic>) {
    let (mut checked, mut diags) = check_source(src);
    for kernel in &mut checked {
        diags.extend(
            pin_defines(kernel, &opts.defines)
                .err()
                .map(BackendError::into_diagnostic),
        );
    }
    if diags.iter().any(Diagnostic::is_error) {
        return (vec![], diags);
    }
    let mut out = Vec::new();
    for kernel in &checked {
        match crate::backend::compile_kernel(kernel, src, file_name, opts) {
            Ok(k) => out.push(k),
            Err(d) => diags.push(d),
        }
    }
    if diags.iter().any(Diagnostic::is_error) {
        out.clear();
    }
    crate::diag::cap(&mut diags);
    (out, diags)
}

/// The kernel a command runs from a file's compiled kernels: the one
/// named, or the file's only kernel when no name is given. The one owner of
/// this choice for `phobos sim`, `explain` and `profile`; the error says
/// which kernels the file has.
pub fn select_kernel(
    kernels: Vec<CompiledKernel>,
    name: Option<&str>,
    file_name: &str,
) -> Result<CompiledKernel, String> {
    let names: Vec<&str> = kernels.iter().map(|k| k.meta.name.as_str()).collect();
    let at = match name {
        Some(n) => kernels
            .iter()
            .position(|k| k.meta.name == n)
            .ok_or_else(|| {
                if names.is_empty() {
                    format!("`{file_name}` has no kernel `{n}` (it has no kernels)")
                } else {
                    format!(
                        "`{file_name}` has no kernel `{n}` (it has: {})",
                        names.join(", ")
                    )
                }
            })?,
        None if kernels.len() == 1 => 0,
        None if kernels.is_empty() => return Err(format!("`{file_name}` has no kernels")),
        None => {
            return Err(format!(
                "`{file_name}` has {} kernels; choose one with --kernel ({})",
                kernels.len(),
                names.join(", ")
            ))
        }
    };
    let mut kernels = kernels;
    Ok(kernels.swap_remove(at))
}

/// Keep only the variants of `kernel` that have the pinned value of each
/// `@autotune` name it declares.
fn pin_defines(kernel: &mut CheckedKernel, defines: &[(String, i64)]) -> Result<(), BackendError> {
    for (name, candidates) in &mut kernel.autotune {
        let Some(&(_, value)) = defines.iter().rev().find(|(n, _)| n == name) else {
            continue;
        };
        if !candidates.contains(&value) {
            return Err(BackendError::DefineNotCandidate {
                name: name.clone(),
                value,
                kernel: kernel.name.clone(),
                candidates: candidates.clone(),
                span: kernel.span,
            });
        }
        *candidates = vec![value];
        kernel
            .variants
            .retain(|v| v.variant.iter().all(|(n, v)| n != name || *v == value));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_arch;

    #[test]
    fn targets_are_spelled_three_ways_and_checked() {
        assert_eq!(parse_arch("sm_75"), Ok(75));
        assert_eq!(parse_arch("90"), Ok(90));
        assert_eq!(parse_arch(" compute_86 "), Ok(86));
        for good in ["sm_90a", "compute_90a", "90a", " sm_90a "] {
            assert_eq!(parse_arch(good), Ok(phobos_meta::arch::SM_90A), "{good}");
        }
        for bad in [
            "0",
            "999",
            "sm_0",
            "sm_",
            "",
            "sm_7x",
            "sm_70",
            "compute_",
            "91",
            "sm_91",
            "compute_91",
            "sm_90A",
            "sm_89a",
            "sm_100a",
        ] {
            let e = parse_arch(bad).unwrap_err();
            assert!(e.contains("supported: sm_75, sm_80"), "{e}");
            assert!(e.contains("sm_90, sm_90a, sm_100"), "{e}");
            assert!(e.contains(&format!("`{}`", bad.trim())), "{e}");
        }
    }
}
