//! `Builder` on temporary kernel directories, without cargo: what it
//! writes, what it refuses, and how it reports errors.

use phobos_build::{BuildError, Builder};
use std::fs;
use std::path::Path;

const AXPY: &str = "@launch(256)
@grid(cdiv(N, ctx.threads))
kernel axpy(alpha: f32, x: tensor<f32>[N], y: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    y[i] = alpha * x[i] + y[i]
  }
}
";

fn crate_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    dir
}

fn builder(dir: &Path, out: &Path) -> Builder {
    Builder::new("kernels")
        .manifest_dir(dir)
        .out_dir(out)
        .cargo_directives(false)
        .ptx_only(true)
        .arches(&[75, 90])
}

fn read_all(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = walk(dir);
    files.sort();
    files
}

fn walk(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push((e.path().display().to_string(), fs::read(e.path()).unwrap()));
        }
    }
    out
}

#[test]
fn writes_ptx_per_arch_metadata_and_bindings_byte_identically() {
    let dir = crate_dir(&[("kernels/axpy.pho", AXPY)]);
    let out = tempfile::tempdir().unwrap();
    let built = builder(dir.path(), out.path()).build().unwrap();
    assert_eq!(built.kernels, ["axpy"]);
    assert_eq!(built.arches, [75, 90]);
    assert_eq!(built.ptxas, None);
    let phobos = out.path().join("phobos");
    assert!(fs::read_to_string(phobos.join("axpy.sm_75.ptx"))
        .unwrap()
        .contains(".target sm_75"));
    assert!(fs::read_to_string(phobos.join("axpy.sm_90.ptx"))
        .unwrap()
        .contains(".entry axpy"));
    let meta = fs::read_to_string(phobos.join("axpy.meta.ron")).unwrap();
    assert!(meta.contains("name: \"axpy\""), "{meta}");
    let bindings = fs::read_to_string(out.path().join("kernels.rs")).unwrap();
    assert!(bindings.contains("pub fn axpy(\n    device: &phobos_rt::Device,\n    alpha: f32,\n    x: &phobos_rt::Tensor<f32>,\n    y: &mut phobos_rt::Tensor<f32>,\n)"), "{bindings}");
    // The runtime crate is named in exactly one place.
    assert_eq!(bindings.matches("phobos_runtime").count(), 1, "{bindings}");
    assert!(
        bindings.contains("\nuse ::phobos_runtime as phobos_rt;\n"),
        "{bindings}"
    );
    // Building again, or elsewhere, gives the same bytes.
    let first = read_all(out.path());
    builder(dir.path(), out.path()).build().unwrap();
    assert_eq!(first, read_all(out.path()));
    let out2 = tempfile::tempdir().unwrap();
    builder(dir.path(), out2.path()).build().unwrap();
    let strip = |v: Vec<(String, Vec<u8>)>, p: &Path| -> Vec<(String, Vec<u8>)> {
        v.into_iter()
            .map(|(n, b)| (n.replace(&p.display().to_string(), ""), b))
            .collect()
    };
    assert_eq!(
        strip(first, out.path()),
        strip(read_all(out2.path()), out2.path())
    );
}

#[test]
fn a_renamed_runtime_dependency_is_named_once() {
    let dir = crate_dir(&[("kernels/axpy.pho", AXPY)]);
    let out = tempfile::tempdir().unwrap();
    builder(dir.path(), out.path())
        .runtime_crate("my-gpu")
        .build()
        .unwrap();
    let bindings = fs::read_to_string(out.path().join("kernels.rs")).unwrap();
    assert!(
        bindings.contains("\nuse ::my_gpu as phobos_rt;\n"),
        "{bindings}"
    );
    assert!(!bindings.contains("phobos_runtime"), "{bindings}");
    for bad in ["", "9lives", "a b", "crate", "_"] {
        let err = builder(dir.path(), out.path())
            .runtime_crate(bad)
            .build()
            .unwrap_err();
        assert!(
            matches!(&err, BuildError::RuntimeCrate { name } if name == bad),
            "{bad:?}: {err:?}"
        );
        assert!(err.to_string().contains("not a Rust identifier"), "{err}");
    }
}

#[test]
fn errors_are_rendered_with_file_line_and_column() {
    let dir = crate_dir(&[
        ("kernels/axpy.pho", AXPY),
        (
            "kernels/nested/bad.pho",
            "@launch(128)\nkernel bad(A: tensor<f32>[1, 128]) {\n  let x = A[0, ctx.thread]\n  let y = sum<over ctx.warp>(x)\n}\n",
        ),
    ]);
    let out = tempfile::tempdir().unwrap();
    let err = builder(dir.path(), out.path()).build().unwrap_err();
    let BuildError::Diagnostics { rendered, summary } = &err else {
        panic!("{err:?}");
    };
    assert!(rendered.contains("kernels/nested/bad.pho:4:"), "{rendered}");
    assert!(rendered.contains("sum<over ctx.warp>(x)"), "{rendered}");
    assert_eq!(
        summary,
        "error: could not compile the Phobos kernels: 1 error in 1 file"
    );
    assert!(!out.path().join("kernels.rs").exists());
}

#[test]
fn two_kernels_with_one_name_are_refused() {
    let dir = crate_dir(&[("kernels/a.pho", AXPY), ("kernels/b.pho", AXPY)]);
    let out = tempfile::tempdir().unwrap();
    let err = builder(dir.path(), out.path()).build().unwrap_err();
    assert_eq!(
        err,
        BuildError::DuplicateKernel {
            name: "axpy".into(),
            first: "kernels/a.pho".into(),
            second: "kernels/b.pho".into(),
        }
    );
    assert!(err
        .to_string()
        .contains("kernel `axpy` is defined in both kernels/a.pho and kernels/b.pho"));
}

#[test]
fn phobos_toml_sets_arches_and_bad_values_are_errors() {
    let dir = crate_dir(&[
        ("kernels/axpy.pho", AXPY),
        (
            "phobos.toml",
            "[build]\narches = [\"sm_86\"]\nptx-only = true\n",
        ),
    ]);
    let out = tempfile::tempdir().unwrap();
    let built = Builder::new("kernels")
        .manifest_dir(dir.path())
        .out_dir(out.path())
        .cargo_directives(false)
        .build()
        .unwrap();
    assert_eq!(built.arches, [86]);
    assert!(out.path().join("phobos/axpy.sm_86.ptx").exists());
    fs::write(
        dir.path().join("phobos.toml"),
        "[build]\narches = [\"sm_61\"]\n",
    )
    .unwrap();
    let err = Builder::new("kernels")
        .manifest_dir(dir.path())
        .out_dir(out.path())
        .cargo_directives(false)
        .build()
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown architecture `sm_61`"),
        "{err}"
    );
}

#[test]
fn a_missing_kernel_directory_is_an_error() {
    let dir = crate_dir(&[]);
    let out = tempfile::tempdir().unwrap();
    let err = builder(dir.path(), out.path()).build().unwrap_err();
    assert!(
        err.to_string().contains("no such directory of kernels"),
        "{err}"
    );
}

#[test]
fn removed_kernels_leave_no_stale_files() {
    let dir = crate_dir(&[("kernels/axpy.pho", AXPY)]);
    let out = tempfile::tempdir().unwrap();
    builder(dir.path(), out.path()).build().unwrap();
    fs::write(
        dir.path().join("kernels/axpy.pho"),
        AXPY.replace("axpy", "axpy2"),
    )
    .unwrap();
    builder(dir.path(), out.path()).build().unwrap();
    assert!(!out.path().join("phobos/axpy.sm_75.ptx").exists());
    assert!(out.path().join("phobos/axpy2.sm_75.ptx").exists());
}

const TUNED: &str = "@autotune(BLOCK in [64, 128])
@launch(BLOCK)
@grid(cdiv(N, BLOCK))
kernel tuned(x: tensor<f32>[N], y: tensor<f32>[N]) {
  let i = ctx.block.x * BLOCK + ctx.thread
  if i < N {
    y[i] = 2.0 * x[i]
  }
}
";

#[test]
fn defines_pin_autotune_constants() {
    let dir = crate_dir(&[("kernels/tuned.pho", TUNED)]);
    let out = tempfile::tempdir().unwrap();
    let built = builder(dir.path(), out.path())
        .define("BLOCK", 128)
        .define("UNUSED", 1)
        .build()
        .unwrap();
    assert_eq!(
        built.warnings,
        ["phobos: define UNUSED is not an @autotune name of any kernel"]
    );
    let meta = fs::read_to_string(out.path().join("phobos/tuned.meta.ron")).unwrap();
    assert!(meta.contains("entry: \"tuned__BLOCK128\""), "{meta}");
    assert!(!meta.contains("entry: \"tuned__BLOCK64\""), "{meta}");
    // The PTX holds only the pinned variant's entry too (before defines
    // reached the compiler, it held every variant's).
    let ptx = fs::read_to_string(out.path().join("phobos/tuned.sm_75.ptx")).unwrap();
    assert!(ptx.contains(".entry tuned__BLOCK128("), "{ptx}");
    assert!(!ptx.contains("tuned__BLOCK64"), "{ptx}");
    let err = builder(dir.path(), out.path())
        .define("BLOCK", 96)
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("error[P0312]: BLOCK = 96 is not a candidate of kernel `tuned`")
            && err.contains("kernels/tuned.pho")
            && err.contains("[64, 128]"),
        "{err}"
    );
    fs::write(
        dir.path().join("phobos.toml"),
        "[build.defines]\nBLOCK = 64\n",
    )
    .unwrap();
    builder(dir.path(), out.path()).build().unwrap();
    let meta = fs::read_to_string(out.path().join("phobos/tuned.meta.ron")).unwrap();
    assert!(meta.contains("entry: \"tuned__BLOCK64\""), "{meta}");
    assert!(!meta.contains("entry: \"tuned__BLOCK128\""), "{meta}");
}

#[test]
fn a_ptxas_that_writes_no_cubin_is_named_in_the_error() {
    let dir = crate_dir(&[("kernels/axpy.pho", AXPY)]);
    let out = tempfile::tempdir().unwrap();
    // `/bin/true` answers `--version` and exits 0 without writing anything.
    let err = builder(dir.path(), out.path())
        .ptx_only(false)
        .ptxas("/bin/true")
        .build()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("/bin/true exited successfully but wrote no cubin for kernel `axpy`"),
        "{text}"
    );
    assert!(!text.contains("No such file"), "{text}");
}
