//! `Builder` on temporary kernel directories, without cargo: what it
//! writes, what it refuses, and how it reports errors.

use phobos_build::{BuildError, Builder};
use phobos_core::arch::{name, SM_90A};
use std::fs;
use std::path::Path;

/// y = alpha * x + y with its own @grid.
const AXPY: &str = include_str!("../../../tests/fixtures/axpy.pho");

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
fn kernels_whose_names_differ_only_in_case_are_refused() {
    // `axpy.meta.ron` and `Axpy.meta.ron` are one file on macOS and
    // Windows: one kernel's bindings would load the other's PTX.
    let upper = AXPY.replace("kernel axpy", "kernel Axpy");
    let dir = crate_dir(&[("kernels/a.pho", AXPY), ("kernels/b.pho", &upper)]);
    let out = tempfile::tempdir().unwrap();
    let err = builder(dir.path(), out.path()).build().unwrap_err();
    assert_eq!(
        err,
        BuildError::KernelsDifferInCase {
            first_name: "axpy".into(),
            first: "kernels/a.pho".into(),
            second_name: "Axpy".into(),
            second: "kernels/b.pho".into(),
        }
    );
    assert!(err.to_string().contains("differ only in case"), "{err}");
    assert!(!out.path().join("kernels.rs").exists());
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
    assert!(err.to_string().contains("unknown target `sm_61`"), "{err}");
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

/// A free tuning constant with `@grid` following it (the corpus kernel).
const TUNED: &str = include_str!("../../../tests/in/autotune_block.pho");

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
    let meta = fs::read_to_string(out.path().join("phobos/autotune_block.meta.ron")).unwrap();
    assert!(
        meta.contains("entry: \"autotune_block__BLOCK128\""),
        "{meta}"
    );
    assert!(
        !meta.contains("entry: \"autotune_block__BLOCK64\""),
        "{meta}"
    );
    // The PTX holds only the pinned variant's entry too (before defines
    // reached the compiler, it held every variant's).
    let ptx = fs::read_to_string(out.path().join("phobos/autotune_block.sm_75.ptx")).unwrap();
    assert!(ptx.contains(".entry autotune_block__BLOCK128("), "{ptx}");
    assert!(!ptx.contains("autotune_block__BLOCK64"), "{ptx}");
    let err = builder(dir.path(), out.path())
        .define("BLOCK", 96)
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("error[P0312]: BLOCK = 96 is not a candidate of kernel `autotune_block`")
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
    let meta = fs::read_to_string(out.path().join("phobos/autotune_block.meta.ron")).unwrap();
    assert!(
        meta.contains("entry: \"autotune_block__BLOCK64\""),
        "{meta}"
    );
    assert!(
        !meta.contains("entry: \"autotune_block__BLOCK128\""),
        "{meta}"
    );
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

/// A ptxas as old as CUDA 11.5's: it answers `--version`, lists sm_75,
/// sm_80 and sm_86 as its `-arch` values in `--help`, and writes a
/// placeholder cubin for each assembly (logging its `-arch`).
#[cfg(unix)]
fn old_ptxas(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let help = dir.join("help.txt");
    fs::write(
        &help,
        "--gpu-name <gpu name>   (-arch)\n        Allowed values for this option:  \
         'compute_75','compute_80','compute_86','sm_75','sm_80','sm_86'.\n        \
         Default value:  'sm_52'.\n",
    )
    .unwrap();
    let log = dir.join("log");
    let script = dir.join("ptxas");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$1\" in\n--version) echo 'Cuda compilation tools, release 11.5, V11.5.119'; exit 0;;\n\
             --help) cat '{}'; exit 0;;\nesac\necho \"$1\" >> '{}'\nout=''\nprev=''\n\
             for a in \"$@\"; do\n  if [ \"$prev\" = \"-o\" ]; then out=\"$a\"; fi\n  prev=\"$a\"\ndone\n\
             printf 'cubin' > \"$out\"\n",
            help.display(),
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    (script, log)
}

#[test]
#[cfg(unix)]
fn an_old_ptxas_skips_the_targets_it_lacks_with_one_warning() {
    if std::env::var_os("PHOBOS_ARCHES").is_some() {
        return; // the default targets are what this test is about
    }
    let dir = crate_dir(&[("kernels/axpy.pho", AXPY)]);
    let out = tempfile::tempdir().unwrap();
    let tools = tempfile::tempdir().unwrap();
    let (ptxas, log) = old_ptxas(tools.path());
    // The default targets: every one Phobos has, sm_90a, sm_100 and sm_120
    // too.
    let built = Builder::new("kernels")
        .manifest_dir(dir.path())
        .out_dir(out.path())
        .cargo_directives(false)
        .ptxas(&ptxas)
        .build()
        .unwrap();
    assert_eq!(built.arches, [75, 80, 86, 89, 90, SM_90A, 100, 120]);
    assert_eq!(built.ptx_only_arches, [89, 90, SM_90A, 100, 120]);
    let about: Vec<&String> = built
        .warnings
        .iter()
        .filter(|w| w.contains("cannot assemble"))
        .collect();
    assert_eq!(about.len(), 1, "{:?}", built.warnings);
    assert!(
        about[0].contains("release 11.5")
            && about[0].contains("sm_89, sm_90, sm_90a, sm_100, sm_120"),
        "{}",
        about[0]
    );
    let mut runs: Vec<String> = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    runs.sort();
    assert_eq!(runs, ["-arch=sm_75", "-arch=sm_80", "-arch=sm_86"]);
    for arch in [75, 80, 86, 89, 90, SM_90A, 100, 120] {
        let target = name(arch);
        assert!(out
            .path()
            .join(format!("phobos/axpy.{target}.ptx"))
            .exists());
        let cubin = out.path().join(format!("phobos/axpy.{target}.cubin"));
        assert_eq!(cubin.exists(), arch <= 86, "{target}");
    }
    assert!(out.path().join("phobos/axpy.sm_90a.ptx").exists());
    let bindings = fs::read_to_string(&built.bindings).unwrap();
    assert!(bindings.contains("axpy.sm_86.cubin") && !bindings.contains("axpy.sm_90.cubin"));

    // Asked for sm_90 with that ptxas named: the build cannot give what was
    // asked, and says so.
    let err = Builder::new("kernels")
        .manifest_dir(dir.path())
        .out_dir(out.path())
        .cargo_directives(false)
        .ptxas(&ptxas)
        .arches(&[80, 90])
        .build()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("cannot assemble sm_90, which the build asks for"),
        "{text}"
    );
}

#[test]
fn hopper_a_and_blackwell_targets_assemble_with_a_new_enough_ptxas() {
    let Some(ptxas) = std::env::var_os("PHOBOS_PTXAS") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI sets PHOBOS_PTXAS to ptxas 12.9"
        );
        return;
    };
    let dir = crate_dir(&[("kernels/axpy.pho", AXPY)]);
    let out = tempfile::tempdir().unwrap();
    let built = builder(dir.path(), out.path())
        .ptx_only(false)
        .ptxas(ptxas)
        .arches(&[SM_90A, 100, 120])
        .build()
        .unwrap();
    assert_eq!(built.cubins_assembled + built.cubins_cached, 3);
    assert!(built.ptx_only_arches.is_empty());
    for (arch, version) in [
        (SM_90A, ".version 8.0\n.target sm_90a\n"),
        (100, ".version 8.6\n.target sm_100\n"),
        (120, ".version 8.7\n.target sm_120\n"),
    ] {
        let target = name(arch);
        let ptx = fs::read_to_string(out.path().join(format!("phobos/axpy.{target}.ptx"))).unwrap();
        assert!(ptx.contains(version), "{target}: {ptx}");
        let cubin = fs::read(out.path().join(format!("phobos/axpy.{target}.cubin"))).unwrap();
        assert!(cubin.starts_with(b"\x7fELF"), "{target}");
    }
}

/// A 2-stage ring: sm_80 copies it with cp.async into two stages of shared
/// memory, sm_75 plainly into one, so their variants differ.
const RING: &str = "@launch(64)
@aligned(L = 4)
kernel ring(X: tensor<f32>[R, L], y: tensor<f32>[1, R]) {
  let r = ctx.block.x * 64
  var acc: f32 = 0.0
  for k in range(0, L, 32) stages 2 {
    var t = X[r :+ 64, k :+ 32]
    for j in range(0, 32) {
      acc += t[ctx.thread, j]
    }
  }
  if r + ctx.thread < R {
    y[0, r + ctx.thread] = acc
  }
}
";

#[test]
fn the_metadata_holds_each_targets_variants_where_they_differ() {
    let dir = crate_dir(&[("kernels/ring.pho", RING), ("kernels/axpy.pho", AXPY)]);
    let out = tempfile::tempdir().unwrap();
    builder(dir.path(), out.path())
        .arches(&[75, 80, 90])
        .build()
        .unwrap();
    let read = |kernel: &str| -> phobos_core::meta::KernelMeta {
        let text = fs::read_to_string(out.path().join(format!("phobos/{kernel}.meta.ron")));
        ron::from_str(&text.unwrap()).unwrap()
    };
    let ring = read("ring");
    // sm_75's (the first target's) in `variants`; sm_80's and sm_90's
    // differ from it.
    assert_eq!(ring.variants[0].shared_bytes, 8192);
    let targets: Vec<u32> = ring.arch_variants.iter().map(|(a, _)| *a).collect();
    assert_eq!(targets, [80, 90]);
    assert_eq!(ring.variants_for(75)[0].shared_bytes, 8192);
    assert_eq!(ring.variants_for(80)[0].shared_bytes, 16384);
    // A kernel every target compiles alike has none.
    assert!(read("axpy").arch_variants.is_empty());
}

/// What `Device::export_tuning` writes (one decision).
const TUNING: &str = "(
    version: 1,
    entries: [
        (
            key: (gpu: \"NVIDIA H100\", arch: 90, driver: 12090, module: \"kernels/axpy.pho\", kernel: \"axpy\", hash: \"0123456789abcdef\", dims: [(\"N\", 4096)]),
            entry: \"axpy\",
        ),
    ],
)
";

#[test]
fn a_tuning_file_is_embedded_with_the_bindings() {
    let dir = crate_dir(&[("kernels/axpy.pho", AXPY), ("tuning.ron", TUNING)]);
    let out = tempfile::tempdir().unwrap();
    let built = builder(dir.path(), out.path())
        .tuning("tuning.ron")
        .build()
        .unwrap();
    assert_eq!(
        fs::read_to_string(out.path().join("phobos/tuning.ron")).unwrap(),
        TUNING
    );
    let bindings = fs::read_to_string(&built.bindings).unwrap();
    assert!(
        bindings.contains("phobos_rt::Kernel::with_tuning(")
            && bindings.contains("\"/phobos/tuning.ron\"))"),
        "{bindings}"
    );
    // Without it, no tuning file is left behind.
    let built = builder(dir.path(), out.path()).build().unwrap();
    assert!(!out.path().join("phobos/tuning.ron").exists());
    assert!(!fs::read_to_string(&built.bindings)
        .unwrap()
        .contains("with_tuning"));
    // phobos.toml names it too.
    fs::write(
        dir.path().join("phobos.toml"),
        "[build]\ntuning = \"tuning.ron\"\n",
    )
    .unwrap();
    builder(dir.path(), out.path()).build().unwrap();
    assert!(out.path().join("phobos/tuning.ron").exists());
    // A missing or malformed file is an error naming it: (the file, what
    // it holds if it exists, what the error says).
    fs::remove_file(dir.path().join("phobos.toml")).unwrap();
    let cases = [
        ("missing.ron", None, "missing.ron"),
        ("bad.ron", Some("[1, 2"), "not a tuning file"),
        (
            "other.ron",
            Some("(arches: [80])"),
            "no `version` and `entries`",
        ),
    ];
    for (file, contents, says) in cases {
        if let Some(contents) = contents {
            fs::write(dir.path().join(file), contents).unwrap();
        }
        let err = builder(dir.path(), out.path())
            .tuning(file)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains(says), "{file}: {err}");
    }
}

#[cfg(unix)]
#[test]
fn a_link_loop_and_a_file_reached_twice_are_walked_once() {
    let dir = crate_dir(&[("kernels/axpy.pho", AXPY), ("kernels/sub/.keep", "")]);
    let kernels = dir.path().join("kernels");
    // A loop back to the kernel directory, and a second name for the file:
    // before, the second name compiled the kernel twice (a duplicate).
    std::os::unix::fs::symlink("..", kernels.join("sub/up")).unwrap();
    std::os::unix::fs::symlink("axpy.pho", kernels.join("again.pho")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let built = builder(dir.path(), out.path()).build().unwrap();
    assert_eq!(built.kernels, ["axpy"]);
}

#[cfg(unix)]
#[test]
fn a_ladder_of_links_is_walked_once_per_directory() {
    // d0/{a,b} -> d1, d1/{a,b} -> d2, ...: following every link walks 2^n
    // paths; each real directory is walked once.
    let dir = tempfile::tempdir().unwrap();
    let rungs = 24;
    for i in 0..=rungs {
        fs::create_dir(dir.path().join(format!("d{i}"))).unwrap();
    }
    fs::write(dir.path().join(format!("d{rungs}/k.pho")), AXPY).unwrap();
    for i in 0..rungs {
        for link in ["a", "b"] {
            std::os::unix::fs::symlink(
                format!("../d{}", i + 1),
                dir.path().join(format!("d{i}/{link}")),
            )
            .unwrap();
        }
    }
    let walked = phobos_build::walk::Walker::new()
        .dir(&dir.path().join("d0"))
        .unwrap();
    assert_eq!(walked.files.len(), 1);
    assert_eq!(walked.dirs.len(), rungs + 1);
}

#[cfg(unix)]
#[test]
fn a_path_with_a_line_break_is_refused_not_printed_as_a_directive() {
    // `cargo:rerun-if-changed=kernels/a<LF>cargo:rustc-link-lib=evil.pho`
    // would be two directives.
    let dir = crate_dir(&[("kernels/a\ncargo:rustc-link-lib=evil.pho", AXPY)]);
    let out = tempfile::tempdir().unwrap();
    let err = builder(dir.path(), out.path())
        .cargo_directives(true)
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, BuildError::UntrackablePath { path, .. } if path.ends_with("a\ncargo:rustc-link-lib=evil.pho")),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("line break"), "{text}");
    assert!(text.contains("a\\ncargo:rustc-link-lib=evil.pho"), "{text}");
    assert!(!out.path().join("kernels.rs").exists());
}

/// A kernel source over the compiler's limit is refused after reading the
/// limit and one byte: the build script read a 1.5 GB file whole before
/// the compiler said P0005.
#[test]
fn a_source_over_the_limit_is_refused_without_reading_it_whole() {
    let dir = crate_dir(&[("kernels/k.pho", AXPY)]);
    let huge = dir.path().join("kernels/huge.pho");
    // Sparse: 1.5 GB long, costing no disk.
    fs::File::create(&huge)
        .unwrap()
        .set_len(1_500_000_000)
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = builder(dir.path(), out.path()).build().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("huge.pho"), "{text}");
    assert!(
        text.contains("larger than 1 MiB, the most Phobos reads as one source file"),
        "{text}"
    );
}

/// `tuning = "/dev/zero"` read until memory ran out; a phobos.toml that is
/// a device was ignored, and a huge one read whole.
#[cfg(unix)]
#[test]
fn an_endless_tuning_file_or_config_is_refused() {
    let dir = crate_dir(&[
        ("kernels/k.pho", AXPY),
        ("phobos.toml", "[build]\ntuning = \"/dev/zero\"\n"),
    ]);
    let out = tempfile::tempdir().unwrap();
    let err = builder(dir.path(), out.path()).build().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("/dev/zero"), "{text}");
    assert!(
        text.contains("the most Phobos reads as a tuning file"),
        "{text}"
    );

    let dir = crate_dir(&[("kernels/k.pho", AXPY)]);
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("phobos.toml")).unwrap();
    let err = builder(dir.path(), out.path()).build().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("phobos.toml: not a regular file"), "{text}");
    // A regular phobos.toml is read only up to its limit.
    let dir = crate_dir(&[("kernels/k.pho", AXPY)]);
    fs::File::create(dir.path().join("phobos.toml"))
        .unwrap()
        .set_len(1_500_000_000)
        .unwrap();
    let err = builder(dir.path(), out.path()).build().unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the most Phobos reads as a phobos.toml"),
        "{text}"
    );
}

/// A file name that is not UTF-8 cannot be watched by cargo (its
/// directive named no file, so every build reran the script): refused.
#[cfg(target_os = "linux")]
#[test]
fn a_name_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let dir = crate_dir(&[("kernels/k.pho", AXPY)]);
    let name = std::ffi::OsStr::from_bytes(b"kernels/bad\xff.pho");
    fs::write(dir.path().join(name), AXPY.replace("axpy", "axpy2")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = builder(dir.path(), out.path())
        .cargo_directives(true)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            &err,
            BuildError::UntrackablePath {
                reason: phobos_build::Untrackable::NotUtf8,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("not a UTF-8 name"), "{err}");
}

/// A `\` in a file name is part of the name on Unix: an error in
/// `kernels/back\slash.pho` was reported at `kernels/back/slash.pho`.
#[cfg(unix)]
#[test]
fn a_backslash_in_a_file_name_is_shown_as_written() {
    let dir = crate_dir(&[("kernels/back\\slash.pho", "kernel k( {\n")]);
    let out = tempfile::tempdir().unwrap();
    let err = builder(dir.path(), out.path()).build().unwrap_err();
    let text = err.to_string();
    assert!(text.contains("kernels/back\\slash.pho:"), "{text}");
    assert!(!text.contains("back/slash"), "{text}");
}
