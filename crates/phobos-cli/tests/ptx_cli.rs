//! `phobos ptx`, `phobos build` and `phobos report` as a user runs them:
//! output, files written, exit codes (0 ok, 1 compile errors, 2 usage/IO).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::assert_says;

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/in")
        .join(name)
}

fn phobos(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .env_remove("PHOBOS_PTXAS")
        .env_remove("CUDA_PATH")
        .env_remove("CUDA_HOME")
        .output()
        .expect("run phobos")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `phobos ptx` on `src`, written as `name`, which must exit 1 (a compile
/// error); returns what it said on stderr.
fn ptx_fails(name: &str, src: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = phobos(&["ptx", &common::write(dir.path(), name, src)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    text(&out.stderr)
}

#[test]
fn ptx_prints_the_module_for_the_default_and_a_chosen_target() {
    let file = corpus("lanes_matvec.pho");
    let out = phobos(&["ptx", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ptx = text(&out.stdout);
    assert!(
        ptx.contains(".version 6.3\n.target sm_75\n.address_size 64"),
        "{ptx}"
    );
    assert!(ptx.contains(".visible .entry lanes_matvec("));
    assert!(ptx.contains(".loc 1 11 7"), "line info of the run sum");
    let out = phobos(&["ptx", "--arch", "sm_90", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains(".version 7.8\n.target sm_90"));
    // Hopper's arch-specific target, spelled three ways; PTX ISA 8.0.
    for arch in ["sm_90a", "compute_90a", "90a"] {
        let out = phobos(&["ptx", "--arch", arch, file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains(".version 8.0\n.target sm_90a\n"),
            "{}",
            text(&out.stdout)
        );
    }
}

#[test]
fn ptx_picks_one_kernel_and_names_the_others_when_asked_for_a_missing_one() {
    let file = corpus("autotune_block.pho");
    let out = phobos(&["ptx", "--kernel", "autotune_block", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let ptx = text(&out.stdout);
    assert!(
        ptx.contains(".entry autotune_block__BLOCK64(")
            && ptx.contains(".entry autotune_block__BLOCK128(")
    );
    let out = phobos(&["ptx", "--kernel", "nope", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no kernel `nope`")
            && text(&out.stderr).contains("autotune_block")
    );
}

#[test]
fn bad_target_and_missing_file_are_usage_errors() {
    let file = corpus("lanes_matvec.pho");
    for bad in ["sm_70", "sm_91", "91"] {
        let out = phobos(&["ptx", "--arch", bad, file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(err.contains(&format!("unknown target `{bad}`")), "{err}");
        assert!(err.contains("sm_90, sm_90a, sm_100"), "{err}");
    }
    let out = phobos(&["ptx", "/nonexistent/k.pho"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read"));
}

#[test]
fn a_compile_error_is_rendered_with_its_location_and_exits_1() {
    let src = "@launch(32)\nkernel k(A: tensor<f32>[N]) {\n  A[0] = undefined_name\n}\n";
    let err = ptx_fails("bad.pho", src);
    assert!(err.contains("bad.pho:3:"), "{err}");
    assert!(err.contains("undefined_name"), "{err}");
}

#[test]
fn too_much_shared_memory_is_a_compile_error() {
    let err = ptx_fails("big.pho", common::TILES_128K);
    assert_says(&err, &["P0801", "131072 bytes"]);
}

#[test]
fn build_writes_ptx_per_target_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = phobos(&[
        "build",
        corpus("staged_matvec.pho").to_str().unwrap(),
        corpus("lane_max.pho").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--arch",
        "sm_75,sm_90a,sm_90",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for f in [
        "staged_matvec.sm_75.ptx",
        "staged_matvec.sm_90.ptx",
        "staged_matvec.sm_90a.ptx",
        "staged_matvec.ron",
        "lane_max.sm_75.ptx",
        "lane_max.ron",
    ] {
        assert!(out_dir.join(f).is_file(), "{f} was not written");
    }
    assert!(!out_dir.join("lane_max.sm_80.ptx").exists());
    let meta: phobos_core::meta::KernelMeta =
        ron::from_str(&std::fs::read_to_string(out_dir.join("staged_matvec.ron")).unwrap())
            .unwrap();
    assert_eq!(meta.variants[0].shared_bytes, 1024);
}

/// One metadata file per kernel, whatever the number of targets: the first
/// target's variants, and each other target's where they differ (a
/// `stages` ring: sm_75 copies it plainly into one stage). Before, each
/// target's compile overwrote the file, leaving the last target's.
#[test]
fn build_merges_the_targets_metadata_into_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = phobos(&[
        "build",
        corpus("staged_row_sum.pho").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--arch",
        "sm_80,sm_75",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let meta: phobos_core::meta::KernelMeta =
        ron::from_str(&std::fs::read_to_string(out_dir.join("staged_row_sum.ron")).unwrap())
            .unwrap();
    assert_eq!(meta.variants[0].shared_bytes, 8192, "sm_75's first");
    assert_eq!(meta.variants_for(80)[0].shared_bytes, 16384);
    assert_eq!(meta.arch_variants.len(), 1);
}

#[test]
fn build_with_cubin_and_no_ptxas_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(["build", corpus("lane_max.pho").to_str().unwrap(), "--out"])
        .arg(dir.path())
        .arg("--cubin")
        .env("PATH", "")
        .env_remove("PHOBOS_PTXAS")
        .env_remove("CUDA_PATH")
        .env_remove("CUDA_HOME")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--cubin needs NVIDIA's ptxas") && err.contains("PHOBOS_PTXAS"),
        "{err}"
    );
}

/// `phobos build` with `PHOBOS_PTXAS` set to `ptxas` (and `--cubin`).
fn build_with_ptxas(ptxas: &Path, out_dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(["build", corpus("lane_max.pho").to_str().unwrap(), "--out"])
        .arg(out_dir)
        .args(["--arch", "sm_75", "--cubin"])
        .env("PHOBOS_PTXAS", ptxas)
        .output()
        .unwrap()
}

#[test]
fn a_phobos_ptxas_naming_a_missing_file_is_an_error_as_in_cargo_builds() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-ptxas");
    let out = build_with_ptxas(&missing, &dir.path().join("out"));
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_says(&err, &["no-such-ptxas", "cannot run"]);
}

#[test]
fn a_ptxas_that_writes_no_cubin_fails_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let out = build_with_ptxas(Path::new("/bin/true"), &dir.path().join("out"));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("wrote no cubin"), "{err}");
}

#[test]
fn two_files_defining_one_kernel_fail_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(corpus("lane_max.pho")).unwrap();
    std::fs::write(dir.path().join("a.pho"), &src).unwrap();
    std::fs::write(dir.path().join("b.pho"), &src).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .arg("build")
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--arch", "sm_75"])
        .env_remove("PHOBOS_PTXAS")
        .env("PATH", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("is defined in both") && err.contains("a.pho") && err.contains("b.pho"),
        "{err}"
    );
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

#[test]
fn kernels_whose_names_differ_only_in_case_fail_the_build() {
    // Their files would be one file on a file system that ignores case.
    let dir = tempfile::tempdir().unwrap();
    let src = include_str!("../../../tests/fixtures/axpy.pho");
    let upper = src.replacen("kernel axpy", "kernel Axpy", 1);
    assert_ne!(src, upper);
    std::fs::write(dir.path().join("a.pho"), format!("{src}\n{upper}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .arg("build")
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--arch", "sm_75"])
        .env_remove("PHOBOS_PTXAS")
        .env("PATH", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("`axpy`") && err.contains("`Axpy`") && err.contains("differ only in case"),
        "{err}"
    );
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

#[test]
fn build_with_cubin_assembles_when_ptxas_is_present() {
    let ptxas = std::env::var_os("PHOBOS_PTXAS")
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    let Some(ptxas) = ptxas else {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true" || v == "1"),
            "CI needs ptxas"
        );
        eprintln!("skipping: set PHOBOS_PTXAS to test cubin output");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args([
            "build",
            corpus("i8_matvec.pho").to_str().unwrap(),
            "--arch",
            "sm_86",
            "--cubin",
            "--out",
        ])
        .arg(dir.path())
        .env("PHOBOS_PTXAS", ptxas)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let cubin = std::fs::read(dir.path().join("i8_matvec.sm_86.cubin")).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF");
}

#[test]
fn report_shows_widths_alignment_plan_and_barriers() {
    let out = phobos(&["report", corpus("staged_matvec.pho").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = text(&out.stdout);
    assert_says(
        &r,
        &[
            "load W (4 elems): 16 bytes per instruction, proven 16-byte aligned",
            "load xs (4 elems): 16 bytes per instruction",
            "shared memory: 1024 bytes",
            "xs at offset 0, 1024 bytes",
            "elided nothing before it touched the bytes of `xs`",
            "kept   `xs` copied into at line 6 is then read by other threads at line 12",
        ],
    );
    let out = phobos(&["report", corpus("run_unaligned.pho").to_str().unwrap()]);
    assert!(text(&out.stdout).contains("not wider: the address is only proven 4-byte aligned"));
}

#[test]
fn report_shows_the_padding_of_a_scratch_tile_and_whole_run_stores() {
    let out = phobos(&["report", corpus("scratch_transpose.pho").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = text(&out.stdout);
    assert!(
        r.contains("t at offset 0, 4224 bytes (128 of them padding: the last 4 of each 132-byte row, which no access reaches)"),
        "{r}"
    );
    // A tile every access may reach has no padding line.
    let out = phobos(&["report", corpus("tile_transpose.pho").to_str().unwrap()]);
    assert!(!text(&out.stdout).contains("padding"));
    // GELU's computed run is stored whole.
    let out = phobos(&["report", corpus("run_gelu.pho").to_str().unwrap()]);
    let r = text(&out.stdout);
    assert!(
        r.contains("store Y (4 elems): 16 bytes per instruction, proven 16-byte aligned"),
        "{r}"
    );
}

#[test]
fn ptx_of_a_file_with_several_kernels_is_one_module() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.pho");
    std::fs::write(
        &file,
        "@launch(32)\nkernel first(A: tensor<f32>[N]) {\n  if ctx.thread < N {\n    A[ctx.thread] = 1.0\n  }\n}\n\n\
         @launch(64)\nkernel second(B: tensor<i32>[M]) {\n  let t = sum<over ctx.thread>(ctx.thread)\n  if ctx.thread < M {\n    B[ctx.thread] = t\n  }\n}\n",
    )
    .unwrap();
    let out = phobos(&["ptx", "--arch", "sm_80", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ptx = text(&out.stdout);
    assert_eq!(ptx.matches(".version ").count(), 1, "{ptx}");
    assert_eq!(ptx.matches(".target sm_80").count(), 1, "{ptx}");
    assert_eq!(ptx.matches(".file 1 ").count(), 1, "{ptx}");
    assert!(ptx.contains(".entry first(") && ptx.contains(".entry second("));
    let Some(ptxas) = std::env::var_os("PHOBOS_PTXAS").filter(|p| Path::new(p).is_file()) else {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true" || v == "1"),
            "CI needs ptxas"
        );
        eprintln!("skipping the ptxas half: set PHOBOS_PTXAS");
        return;
    };
    let ptx_file = dir.path().join("two.ptx");
    std::fs::write(&ptx_file, &ptx).unwrap();
    let cubin = dir.path().join("two.cubin");
    let run = Command::new(ptxas)
        .args(["-arch=sm_80", "-o"])
        .arg(&cubin)
        .arg(&ptx_file)
        .output()
        .unwrap();
    assert!(run.status.success(), "ptxas: {}", text(&run.stderr));
}

#[test]
fn report_says_why_a_one_row_tile_is_narrow_without_a_vacuous_multiple_of_one() {
    // Issue 26: `report` said a `[1, N]` row was "only proven a multiple
    // of 1 element" (every length is), blaming the row length of a tile
    // that has one row. What stops a wider copy is that N, where the row
    // is masked, is not proven even.
    let dir = tempfile::tempdir().unwrap();
    let src = "@launch(128)\n@grid(1)\nkernel r(x: tensor<f32>[1, N], y: tensor<f32>[1, N]) {\n  var xs = x[0 :+ 1, 0 :+ 256]\n  y[0 :+ 1, 0 :+ 256] = xs\n}\n";
    let out = phobos(&["report", &common::write(dir.path(), "r.pho", src)]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!said.contains("multiple of 1 element"), "{said}");
    assert_says(
        &said,
        &["4:3 load x (256 elems): 4 bytes per instruction, proven 4-byte aligned — not wider: the tensor's row length (where the tile's one row is masked) is not proven a multiple of 2 elements"],
    );
    // Two elements proven (`N = 2k`): only a multiple of 2, not 4.
    let src = src.replace("@grid(1)", "@grid(1)\n@aligned(N = 2)");
    let out = phobos(&["report", &common::write(dir.path(), "r2.pho", &src)]);
    let said = text(&out.stdout);
    assert_says(
        &said,
        &["8 bytes per instruction, proven 8-byte aligned — not wider: the tensor's row length (where the tile's one row is masked) is only proven a multiple of 2 elements, not 4"],
    );
}
