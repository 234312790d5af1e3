//! What `compile` hands the build and the CLI: one PTX module per file
//! (`file_module`) and only the pinned variants under `CompileOptions::defines`.

use phobos_core::{compile, file_module, CompileOptions};

const TUNED: &str = include_str!("../../../tests/in/autotune_block.pho");

/// Two kernels in one file (the second with `f16`, whose conversions may
/// need a higher `.version`).
const TWO: &str = "@launch(32)
kernel first(x: tensor<f32>[N]) {
  x[ctx.lane] = 1.0
}

@launch(32)
kernel second(x: tensor<f16>[N]) {
  x[ctx.lane] = f16(2.0)
}
";

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn a_pinned_build_compiles_only_the_pinned_variant() {
    let all = compile(TUNED, "t.pho", &CompileOptions::for_arch(75)).0;
    assert_eq!(count(&all[0].ptx, ".entry"), 2);
    let opts = CompileOptions {
        arch: 75,
        defines: vec![("BLOCK".into(), 64), ("OTHER".into(), 1)],
    };
    let (kernels, diags) = compile(TUNED, "t.pho", &opts);
    assert!(diags.is_empty(), "{diags:?}");
    let k = &kernels[0];
    assert_eq!(count(&k.ptx, ".entry"), 1, "{}", k.ptx);
    assert!(
        k.ptx.contains(".entry autotune_block__BLOCK64("),
        "{}",
        k.ptx
    );
    assert!(!k.ptx.contains("autotune_block__BLOCK128"));
    let entries: Vec<&str> = k.meta.variants.iter().map(|v| v.entry.as_str()).collect();
    assert_eq!(entries, ["autotune_block__BLOCK64"]);
    assert_eq!(k.meta.autotune, [("BLOCK".to_string(), vec![64])]);
}

#[test]
fn a_define_outside_the_candidates_is_p0312() {
    let opts = CompileOptions {
        arch: 75,
        defines: vec![("BLOCK".into(), 96)],
    };
    let (kernels, diags) = compile(TUNED, "t.pho", &opts);
    assert!(kernels.is_empty());
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code, "P0312");
    assert_eq!(
        diags[0].message,
        "BLOCK = 96 is not a candidate of kernel `autotune_block`"
    );
}

#[test]
fn one_file_is_one_module_with_one_header() {
    let (kernels, diags) = compile(TWO, "two.pho", &CompileOptions::for_arch(75));
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    let module = file_module(&kernels);
    for directive in [".version", ".target", ".address_size", ".file"] {
        assert_eq!(count(&module, directive), 1, "{directive} in\n{module}");
    }
    assert_eq!(count(&module, ".entry"), 2);
    let version = |ptx: &str| {
        ptx.lines()
            .find_map(|l| l.strip_prefix(".version "))
            .map(str::to_string)
    };
    let highest = kernels.iter().filter_map(|k| version(&k.ptx)).max();
    assert_eq!(version(&module), highest);
    // The entries follow the header in order, each as in its own module.
    let first_body = kernels[0]
        .ptx
        .split_once(".file 1 \"two.pho\"\n")
        .unwrap()
        .1;
    let second_body = kernels[1]
        .ptx
        .split_once(".file 1 \"two.pho\"\n")
        .unwrap()
        .1;
    assert!(
        module.ends_with(&format!("{first_body}{second_body}")),
        "{module}"
    );
    // One kernel's module is that kernel's own.
    assert_eq!(file_module(&kernels[..1]), kernels[0].ptx);
    assert_eq!(file_module(&[]), "");
}
