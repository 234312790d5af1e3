//! Lowering takes uniformity from the checker's side table
//! (`hir::Kernel::uniformity`) instead of running the fixpoint again: the
//! table decides whether a tile statement under an `if` on a `var` gets a
//! barrier.

use phobos_core::check::uniformity::Level;
use phobos_core::CompileOptions;

/// A tile read and written by other threads under a varying `if`, inside an
/// `if` on a `var` the checker proves uniform (tests/fuzz-cases/
/// uniform-var-condition.pho, where lowering's own test once refused it).
const SRC: &str = "@launch(128)
kernel k(A: tensor<i32>[N], O: tensor<i32>[N]) {
  var t = A[0 :+ 32]
  var v: bool = true
  if v {
    if ctx.thread < 32 {
      t[31 - ctx.thread] = t[ctx.thread]
    }
  }
  O[ctx.thread] = t[ctx.thread & 31]
}
";

fn checked() -> phobos_core::hir::CheckedKernel {
    let (mut kernels, diags) = phobos_core::check_source(SRC);
    assert!(diags.is_empty(), "{diags:?}");
    kernels.remove(0)
}

fn compile(k: &phobos_core::hir::CheckedKernel) -> Result<String, String> {
    phobos_core::backend::compile_kernel(k, SRC, "k.pho", &CompileOptions::default())
        .map(|c| c.ptx)
        .map_err(|d| format!("{}: {}", d.code, d.message))
}

#[test]
fn the_checker_keeps_each_locals_level_in_the_hir() {
    let k = checked();
    let v = &k.variants[0];
    assert_eq!(v.uniformity.levels.len(), v.locals.len());
    let level_of = |name: &str| {
        let i = v.locals.iter().position(|l| l.name == name).unwrap();
        v.uniformity.levels[i]
    };
    assert_eq!(level_of("v"), Level::Uniform);
}

/// Whether some `bar.sync` lies inside a branch: between a `bra L` and
/// the label `L:` after it.
fn barrier_inside_a_branch(ptx: &str) -> bool {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    lines.iter().enumerate().any(|(i, l)| {
        let Some(label) = l.split("bra ").nth(1).map(|t| t.trim_end_matches(';')) else {
            return false;
        };
        let end = lines[i..]
            .iter()
            .position(|m| m.strip_suffix(':') == Some(label))
            .map_or(i, |p| i + p);
        lines[i..end].iter().any(|m| m.starts_with("bar.sync"))
    })
}

#[test]
fn lowering_reads_the_checkers_levels_from_the_hir() {
    let k = checked();
    let ptx = compile(&k).expect("compiles");
    // `v` is uniform: `if v` is a branch, and the inner `if`'s barriers
    // sit inside it.
    assert!(barrier_inside_a_branch(&ptx), "{ptx}");

    // The same kernel with the side table saying `v` varies: lowering
    // believes it, so `if v` cannot be a branch around barriers; it is
    // predicated, and every barrier is outside every branch.
    let mut told_varying = k.clone();
    let v = &mut told_varying.variants[0];
    let i = v.locals.iter().position(|l| l.name == "v").unwrap();
    v.uniformity.levels[i] = Level::Varying;
    let ptx = compile(&told_varying).expect("compiles, predicated");
    assert!(ptx.contains("bar.sync"), "{ptx}");
    assert!(!barrier_inside_a_branch(&ptx), "{ptx}");
}
