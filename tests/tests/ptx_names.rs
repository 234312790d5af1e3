//! Names (issue 35): every name the language accepts for a kernel, a
//! parameter, a dim, a tile, a register array or a `fn` gives PTX that
//! declares each name once and that ptxas assembles for every target
//! (skipped without ptxas, except under CI); the kernel names that no PTX
//! entry, Rust function or file can have are refused with P0208.

use phobos_conformance::{assemble, diagnostic_codes, ptxas_or_skip};
use phobos_core::{CompileOptions, ARCHES};

/// Kernel names chosen to collide with what the compiler writes: PTX
/// opcodes, directives and state spaces, the prefixes of its own names
/// (`p_` parameters, `d_` dims, `localID_` arrays, the shared array's
/// suffix), an autotuned entry's `__NAMEvalue`, Rust keywords that become
/// raw identifiers, names that start with `_`, and the longest name.
fn kernel_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "__",
        "_x",
        "_0",
        "add",
        "mov",
        "reg",
        "param",
        "global",
        "shared",
        "local",
        "entry",
        "func",
        "texref",
        "sreg",
        "ret",
        "bar",
        "version",
        "target",
        "b32",
        "f32",
        "sm_90",
        "WARP_SZ2",
        "warp_sz",
        "p",
        "d",
        "p_smem",
        "local0_a",
        "k__N1",
        "smem",
        "k_smem",
        "type",
        "match",
        "self_",
        "Self_",
        "device",
        "grid",
        "KERNEL",
        "phobos_rt",
        "core",
        "Ok",
        "Result",
        "main",
        "vprintf",
        "malloc",
        "__assertfail",
        "K",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    names.push("n".repeat(phobos_core::check::names::MAX_KERNEL_NAME));
    names
}

/// A kernel named `kernel` whose parameters, dim, tile, register array
/// (in local memory: its index is known only at run time) and fn are
/// named to collide with the PTX names of the others; `tuned`, it has two
/// `@autotune` variants, two entries `kernel__U1` and `kernel__U2`.
fn awkward_kernel(kernel: &str, tuned: bool) -> String {
    let (tune, u) = if tuned {
        ("@autotune(U in [1, 2])\n", "U")
    } else {
        ("", "1")
    };
    format!(
        r#"fn p_smem(a, b) = a + b
@launch(64)
{tune}kernel {kernel}(smem: tensor<f32>[N], _: tensor<f32>[N], WARP_SZ: f32, self: i32, type: tensor<f32>[64], a_smem: i32) {{
  var t = smem[0 :+ 64]
  var local0_a: f32[4] = 0.0
  local0_a[self & 3] = WARP_SZ
  let entry = p_smem(t[(ctx.thread + {u}) & 63], local0_a[a_smem & 3])
  t[ctx.thread] = entry + t[63 - ctx.thread]
  type[ctx.thread] = t[ctx.thread] + _[ctx.thread]
}}
"#
    )
}

fn compile(src: &str, arch: u32) -> Vec<phobos_core::CompiledKernel> {
    let (kernels, diags) = phobos_core::compile(src, "names.pho", &CompileOptions::for_arch(arch));
    assert!(
        kernels.len() == 1 && !diags.iter().any(|d| d.is_error()),
        "{}:\n{}\n{src}",
        phobos_core::arch::name(arch),
        phobos_core::render::render(&diags, "names.pho", src, false)
    );
    kernels
}

/// The PTX module's entries, and for each entry the names its
/// instructions may use as operands: the module's arrays (`.shared`,
/// `.global`, `.extern`) and its own parameters and `.local` arrays. (An
/// entry's own name is never an operand, so a parameter may share it.)
fn declared_names(ptx: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut module = Vec::new();
    let mut entries = Vec::new();
    let mut own: Vec<Vec<String>> = Vec::new();
    for line in ptx.lines() {
        let line = line.trim().trim_end_matches(',');
        let words: Vec<&str> = line.split_whitespace().collect();
        let (Some(first), Some(last)) = (words.first(), words.last()) else {
            continue;
        };
        let name = last.split(['[', '(', ';']).next().unwrap_or("").to_string();
        if line.starts_with(".visible .entry") {
            entries.push(name);
            own.push(Vec::new());
        } else if [".param", ".local"].contains(first) {
            own.last_mut().expect("inside an entry").push(name);
        } else if [".shared", ".global", ".extern"].contains(first) {
            module.push(name);
        }
    }
    let scopes = own
        .into_iter()
        .map(|own| module.iter().cloned().chain(own).collect())
        .collect();
    (entries, scopes)
}

fn assert_distinct(kernel: &str, names: &[String]) {
    let mut sorted = names.to_vec();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        names.len(),
        "kernel `{kernel}` declares a name twice: {names:?}"
    );
}

#[test]
fn every_name_is_declared_once_in_the_ptx() {
    // The shared array was `ENTRY_smem`: kernel `p`'s was `p_smem`, also
    // the name of its parameter `smem`, and `mov.u32 %r1, p_smem` took the
    // parameter. Each entry must see each name declared once.
    for (kernel, tuned) in kernel_names()
        .into_iter()
        .flat_map(|k| [(k.clone(), false), (k, true)])
    {
        let src = awkward_kernel(&kernel, tuned);
        for k in compile(&src, 80) {
            let (entries, scopes) = declared_names(&k.ptx);
            let n = if tuned { 2 } else { 1 };
            assert_eq!(entries.len(), n, "{kernel}: one entry per U\n{}", k.ptx);
            assert_distinct(&kernel, &entries);
            for names in scopes {
                // The shared arrays, 6 parameters and the dim N, 1 local
                // array.
                assert_eq!(names.len(), n + 8, "{kernel}: {names:?}\n{}", k.ptx);
                assert_distinct(&kernel, &names);
            }
        }
    }
}

#[test]
fn ptxas_assembles_every_awkward_name_for_every_target() {
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    let mut failures = Vec::new();
    for (kernel, tuned) in kernel_names()
        .into_iter()
        .flat_map(|k| [(k.clone(), false), (k, true)])
    {
        let src = awkward_kernel(&kernel, tuned);
        for arch in ARCHES {
            for k in compile(&src, arch) {
                if let Err(e) = assemble(&ptxas, &k.meta.name, arch, &k.ptx) {
                    let sm = phobos_core::arch::name(arch);
                    failures.push(format!("`{kernel}` {sm}: {e}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn names_no_entry_function_or_file_can_have_are_refused() {
    let long = "n".repeat(phobos_core::check::names::MAX_KERNEL_NAME + 1);
    for (name, words) in [
        ("_", "not a PTX identifier"),
        ("WARP_SZ", "a name PTX predefines"),
        ("self", "a Rust keyword"),
        ("Self", "a Rust keyword"),
        ("super", "a Rust keyword"),
        ("crate", "a Rust keyword"),
        (long.as_str(), "201 bytes long; the limit is 200"),
    ] {
        let src = awkward_kernel(name, false);
        let (codes, text) = diagnostic_codes(&src, "names.pho");
        assert_eq!(codes, ["P0208"], "`{name}`: {text}");
        assert!(text.contains(words), "`{name}`: {text}");
        assert!(text.contains("also its PTX `.entry`"), "{text}");
    }
    // The body is still checked: its own errors are reported with P0208.
    let src = "@launch(32)\nkernel _(X: tensor<f32>[N]) {\n  X[0] = y\n}\n";
    let (codes, text) = diagnostic_codes(src, "names.pho");
    assert_eq!(codes, ["P0208", "P0200"], "{text}");
}

#[test]
fn two_kernels_of_a_file_with_one_entry_name_are_refused() {
    // `phobos ptx` prints a file's kernels as one module: `k`'s variant
    // `N = 1` is the entry `k__N1`, as is the kernel `k__N1`.
    let one = |name: &str, tune: &str| {
        format!(
            "{tune}@launch(32)\nkernel {name}(X: tensor<f32>[N]) {{\n  X[ctx.thread] = 1.0\n}}\n"
        )
    };
    let src = one("k", "@autotune(N in [1, 2])\n") + &one("k__N1", "");
    let (codes, text) = diagnostic_codes(&src, "names.pho");
    assert_eq!(codes, ["P0201"], "{text}");
    assert!(
        text.contains("kernels `k` and `k__N1` both have the PTX entry `k__N1`"),
        "{text}"
    );
    // Not equal: `k__N3` is no entry of `k`, and the file's module
    // declares each entry once.
    let src = one("k", "@autotune(N in [1, 2])\n") + &one("k__N3", "");
    let (codes, text) = diagnostic_codes(&src, "names.pho");
    assert!(codes.is_empty(), "{text}");
    let module = phobos_core::file_module(&compile_all(&src, 80));
    let (entries, _) = declared_names(&module);
    assert_eq!(entries, ["k__N1", "k__N2", "k__N3"], "{module}");
}

fn compile_all(src: &str, arch: u32) -> Vec<phobos_core::CompiledKernel> {
    let (kernels, diags) = phobos_core::compile(src, "names.pho", &CompileOptions::for_arch(arch));
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    kernels
}
