//! Real `cargo build`s of small crates that use Phobos, pointed at this
//! workspace's crates by path: the starter template builds and runs, a
//! kernel error fails the build with the `.pho` position and no panic,
//! editing a kernel rebuilds it, and nothing unrelated re-runs ptxas.
//!
//! The crates share one target directory under `CARGO_TARGET_TMPDIR`, so
//! the runtime's dependencies are compiled once for all of them.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// The nested builds share a target directory; cargo would serialize them
/// anyway, this keeps their output from interleaving.
static CARGO: Mutex<()> = Mutex::new(());

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

fn path_dep(name: &str) -> String {
    format!(
        "{name} = {{ path = {:?} }}",
        workspace().join("crates").join(name).display().to_string()
    )
}

/// A crate in a temporary directory: the given files, a manifest using the
/// workspace's crates by path, and the workspace's lock file (so the build
/// resolves exactly the versions the workspace was tested with, offline).
fn new_crate(name: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("phobos-crate")
        .tempdir()
        .expect("a temporary directory");
    let manifest = format!(
        "[package]\nname = {name:?}\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\n{}\n\n[build-dependencies]\n{}\n\n[workspace]\n",
        path_dep("phobos-runtime"),
        path_dep("phobos-build")
    );
    write(dir.path(), "Cargo.toml", &manifest);
    write(
        dir.path(),
        "build.rs",
        "fn main() {\n    phobos_build::compile_dir(\"kernels\");\n}\n",
    );
    for (path, text) in files {
        write(dir.path(), path, text);
    }
    copy_lock(dir.path());
    dir
}

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
    fs::write(p, text).expect("write");
}

fn copy_lock(root: &Path) {
    let lock = workspace().join("Cargo.lock");
    if lock.exists() {
        fs::copy(lock, root.join("Cargo.lock")).expect("copy Cargo.lock");
    }
}

/// `cargo <args>` in `dir` with a clean Phobos environment plus `env`.
fn cargo(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let _serial = CARGO.lock().unwrap_or_else(|e| e.into_inner());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.args(args)
        .current_dir(dir)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("crates"),
        )
        .env("PHOBOS_BACKEND", "sim");
    for var in [
        "PHOBOS_PTXAS",
        "PHOBOS_ARCHES",
        "CUDA_PATH",
        "CUDA_HOME",
        "RUSTFLAGS",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("cargo runs")
}

fn text(out: &Output) -> String {
    format!(
        "status: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_starter_template_builds_and_runs() {
    let template = workspace().join("templates/starter");
    let dir = tempfile::Builder::new()
        .prefix("phobos-starter")
        .tempdir()
        .expect("a temporary directory");
    for rel in [
        "build.rs",
        "src/main.rs",
        "kernels/axpy.pho",
        "Cargo.toml",
        "phobos.toml",
    ] {
        let text = fs::read_to_string(template.join(rel)).expect("a template file");
        // What cargo-generate does with the placeholders, and the
        // dependencies pointed at this workspace.
        let text = text
            .replace("{{project-name}}", "starter-test")
            .replace("phobos-runtime = \"0.1\"", &path_dep("phobos-runtime"))
            .replace("phobos-build = \"0.1\"", &path_dep("phobos-build"));
        write(dir.path(), rel, &text);
    }
    let mut manifest = fs::read_to_string(dir.path().join("Cargo.toml")).expect("manifest");
    manifest.push_str("\n[workspace]\n");
    write(dir.path(), "Cargo.toml", &manifest);
    copy_lock(dir.path());
    // Without ptxas anywhere, the build says so exactly once and embeds PTX.
    let path = path_without_ptxas();
    let env = [("PATH", path.as_str())];
    let out = cargo(dir.path(), &["build"], &env);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert_eq!(all.matches("ptxas not found").count(), 1, "{all}");
    let out = cargo(dir.path(), &["run", "--quiet"], &env);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("axpy on simulator: 1000 elements, 0 wrong"),
        "{all}"
    );
}

/// `PATH` without the directories that hold a `ptxas`.
fn path_without_ptxas() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| !d.join("ptxas").exists())
        .collect();
    std::env::join_paths(kept)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn a_kernel_error_fails_the_build_with_its_position_and_no_panic() {
    let dir = new_crate(
        "kernel-error",
        &[
            ("src/main.rs", "fn main() {}\n"),
            (
                "kernels/bad.pho",
                "@launch(128)\nkernel k(A: tensor<f32>[1, 128], O: tensor<f32>[1, 1]) {\n  let x = A[0, ctx.thread]\n  O[0, 0] = sum<over ctx.warp>(x)\n}\n",
            ),
        ],
    );
    let out = cargo(dir.path(), &["build"], &[]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("kernels/bad.pho:4:"), "{all}");
    assert!(
        all.contains("error: could not compile the Phobos kernels: 1 error in 1 file"),
        "{all}"
    );
    assert!(!all.contains("panicked"), "{all}");
    assert!(!all.contains("RUST_BACKTRACE"), "{all}");
}

#[test]
fn a_crate_that_renames_the_runtime_dependency_builds_and_runs() {
    let dir = new_crate(
        "renamed-runtime",
        &[
            (
                "build.rs",
                "fn main() {\n    phobos_build::Builder::new(\"kernels\").runtime_crate(\"gpu\").build_or_exit();\n}\n",
            ),
            ("kernels/scale.pho", SCALE),
            (
                "src/main.rs",
                "mod kernels {\n    include!(concat!(env!(\"OUT_DIR\"), \"/kernels.rs\"));\n}\n\n\
                 fn main() -> Result<(), Box<dyn std::error::Error>> {\n    \
                 let dev = gpu::Device::auto()?;\n    \
                 let mut x = dev.upload(&[1.0f32, 2.0, 3.0], &[3])?;\n    \
                 kernels::scale(&dev, 2.0, &mut x)?;\n    \
                 println!(\"{:?}\", x.to_vec()?);\n    Ok(())\n}\n",
            ),
        ],
    );
    let manifest_path = dir.path().join("Cargo.toml");
    let manifest = fs::read_to_string(&manifest_path).expect("manifest");
    let renamed = manifest.replacen(
        "phobos-runtime = {",
        "gpu = { package = \"phobos-runtime\",",
        1,
    );
    assert_ne!(manifest, renamed);
    fs::write(&manifest_path, renamed).expect("write manifest");
    let out = cargo(dir.path(), &["run", "--quiet"], &[]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("[2.0, 4.0, 6.0]"), "{all}");
}

const SCALE: &str = "@launch(128)
@grid(cdiv(N, ctx.threads))
kernel scale(alpha: f32, x: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    x[i] = alpha * x[i]
  }
}
";

const SHIFT: &str = "@launch(128)
@grid(cdiv(N, ctx.threads))
kernel shift(beta: f32, x: tensor<f32>[N]) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    x[i] = x[i] + beta
  }
}
";

const MAIN: &str = "mod kernels {
    include!(concat!(env!(\"OUT_DIR\"), \"/kernels.rs\"));
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = phobos_runtime::Device::auto()?;
    let mut x = dev.upload(&[1.0f32, 2.0, 3.0], &[3])?;
    kernels::scale(&dev, 2.0, &mut x)?;
    kernels::shift(&dev, 1.0, &mut x)?;
    println!(\"{:?}\", x.to_vec()?);
    Ok(())
}
";

/// A stand-in for ptxas that logs each assembly (not `--version`) and
/// writes a placeholder cubin. Its version is new for every test run: the
/// nested crate's `OUT_DIR` (and so its cubin cache, keyed by the version)
/// is the same from one run to the next.
fn fake_ptxas(dir: &Path) -> (PathBuf, PathBuf) {
    let log = dir.join("ptxas.log");
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let script = dir.join("fake-ptxas");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then echo 'fake ptxas {nonce}'; exit 0; fi\n\
             echo \"$@\" >> {log:?}\nout=''\nprev=''\nfor a in \"$@\"; do\n  \
             if [ \"$prev\" = \"-o\" ]; then out=\"$a\"; fi\n  prev=\"$a\"\ndone\n\
             printf 'cubin' > \"$out\"\n",
            log = log.display().to_string(),
        ),
    )
    .expect("write the fake ptxas");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    (script, log)
}

/// The assemblies the fake ptxas logged (its `--help`/`--version`
/// queries, which find the targets it supports, are not assemblies).
fn assemblies(log: &Path) -> Vec<String> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("-arch="))
        .map(|l| {
            let arch = l.split_whitespace().next().unwrap_or("").to_string();
            let kernel = l
                .split_whitespace()
                .find(|w| w.ends_with(".ptx"))
                .and_then(|p| Path::new(p).file_stem())
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!("{kernel} {arch}")
        })
        .collect()
}

#[test]
#[cfg(unix)]
fn editing_a_kernel_rebuilds_it_and_nothing_else_reruns_ptxas() {
    let dir = new_crate(
        "rebuilds",
        &[
            ("src/main.rs", MAIN),
            ("kernels/scale.pho", SCALE),
            ("kernels/more/shift.pho", SHIFT),
        ],
    );
    let tools = tempfile::tempdir().expect("a temporary directory");
    let (ptxas, log) = fake_ptxas(tools.path());
    let ptxas = ptxas.display().to_string();
    let env = [
        ("PHOBOS_PTXAS", ptxas.as_str()),
        ("PHOBOS_ARCHES", "sm_75,sm_90"),
    ];
    let build = |what: &str| {
        let out = cargo(dir.path(), &["build"], &env);
        assert!(out.status.success(), "{what}: {}", text(&out));
        let mut runs = assemblies(&log);
        runs.sort();
        let _ = fs::remove_file(&log);
        runs
    };

    assert_eq!(
        build("first build"),
        [
            "scale -arch=sm_75",
            "scale -arch=sm_90",
            "shift -arch=sm_75",
            "shift -arch=sm_90"
        ]
    );
    // An unrelated change: nothing is assembled again. (The crate has no
    // phobos.toml yet, and cargo reruns a script whose watched file is
    // missing, so the script runs; its cache answers.)
    write(dir.path(), "src/main.rs", &format!("{MAIN}\n// edited\n"));
    assert_eq!(build("after editing main.rs"), Vec::<String>::new());
    // Touching a kernel reruns the build script; its PTX is unchanged, so
    // the cubins come from the cache.
    let shift = dir.path().join("kernels/more/shift.pho");
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(2);
    fs::File::options()
        .write(true)
        .open(&shift)
        .and_then(|f| f.set_modified(later))
        .expect("touch");
    assert_eq!(build("after touching shift.pho"), Vec::<String>::new());
    // Editing a kernel rebuilds that kernel only, and the binary uses it.
    write(
        dir.path(),
        "kernels/more/shift.pho",
        &SHIFT.replace("x[i] + beta", "x[i] - beta"),
    );
    assert_eq!(
        build("after editing shift.pho"),
        ["shift -arch=sm_75", "shift -arch=sm_90"]
    );
    let out = cargo(dir.path(), &["run", "--quiet"], &env);
    assert!(text(&out).contains("[1.0, 3.0, 5.0]"), "{}", text(&out));
    // A new kernel file is picked up (the directory is watched).
    write(
        dir.path(),
        "kernels/more/neg.pho",
        &SCALE
            .replace("scale", "neg")
            .replace("alpha * x[i]", "-x[i] * alpha"),
    );
    assert_eq!(
        build("after adding neg.pho"),
        ["neg -arch=sm_75", "neg -arch=sm_90"]
    );
    // A phobos.toml created after the first build takes effect: its define
    // names no @autotune constant, which the build script warns about.
    write(dir.path(), "phobos.toml", "[build.defines]\nUNUSED = 1\n");
    let out = cargo(dir.path(), &["build"], &env);
    assert!(
        text(&out).contains("define UNUSED is not an @autotune name"),
        "{}",
        text(&out)
    );
}

/// Eight parameters, one a Rust keyword, scalars of several types, a kernel
/// with and one without `@grid`: the generated code must still be clean.
const MANY: &str = "@launch(64)
@grid(cdiv(N, ctx.threads))
kernel many(a: f32, b: i32, c: u32, A: tensor<f32>[N], B: tensor<i8>[N], match: tensor<f32>[N], d: f32, e: i32) {
  let i = ctx.block.x * ctx.threads + ctx.thread
  if i < N {
    match[i] = a * A[i] + f32(B[i]) + d + f32(b + e) + f32(c)
  }
}
";

const CLIPPY_MAIN: &str = "mod kernels {
    include!(concat!(env!(\"OUT_DIR\"), \"/kernels.rs\"));
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = phobos_runtime::Device::sim();
    let a = dev.upload(&[1.0f32; 8], &[8])?;
    let b = dev.upload(&[2i8; 8], &[8])?;
    let mut out = dev.zeros::<f32>(&[8])?;
    kernels::many(&dev, 2.0, 1, 1, &a, &b, &mut out, 0.5, 1)?;
    let x = dev.upload(&[1.0f32], &[1])?;
    let mut y = dev.zeros::<f32>(&[1])?;
    kernels::plain(&dev, 1, &x, &mut y)?;
    let mut z = dev.zeros::<f32>(&[1])?;
    kernels::prelude(&dev, 1, &x, &mut z, 2.0, 1)?;
    println!(\"{:?} {:?} {:?}\", out.to_vec()?, y.to_vec()?, z.to_vec()?);
    Ok(())
}
";

const PLAIN: &str = "@launch(32)
kernel plain(x: tensor<f32>[N], y: tensor<f32>[N]) {
  if ctx.thread < N {
    y[ctx.thread] = x[ctx.thread]
  }
}
";

/// Parameters named like the prelude's variants: a parameter is a
/// pattern, so the bindings must rename them (they broke `cargo build`).
const PRELUDE: &str = "@launch(32)
kernel prelude(Some: tensor<f32>[N], None: tensor<f32>[N], Ok: f32, Err: i32) {
  if ctx.thread < N {
    None[ctx.thread] = Some[ctx.thread] * Ok + f32(Err)
  }
}
";

#[test]
fn the_generated_bindings_are_clippy_clean() {
    let dir = new_crate(
        "clippy-clean",
        &[
            ("src/main.rs", CLIPPY_MAIN),
            ("kernels/many.pho", MANY),
            ("kernels/plain.pho", PLAIN),
            ("kernels/prelude.pho", PRELUDE),
        ],
    );
    let out = cargo(
        dir.path(),
        &["clippy", "--quiet", "--", "-D", "warnings"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = cargo(dir.path(), &["run", "--quiet"], &[]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("[7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5] [1.0] [3.0]"),
        "{all}"
    );
}

/// Kernels named like Rust keywords, prelude items, the bindings' own
/// names and PTX words, with parameters named likewise (issue 35): the
/// bindings compile, and each launch finds its `.entry` by the kernel's
/// name.
#[test]
fn awkward_kernel_and_parameter_names_build_and_run() {
    let names = [
        ("r#type", "type", "self", "_"),
        ("r#match", "match", "device", "grid"),
        ("Ok", "Ok", "KERNEL", "type"),
        ("Result", "Result", "Self", "crate"),
        ("__", "__", "super", "phobos_rt"),
        ("_x", "_x", "WARP_SZ", "smem"),
        ("device", "device", "alpha", "x"),
        ("KERNEL", "KERNEL", "p_smem", "d_N"),
        ("phobos_rt", "phobos_rt", "core", "std"),
        ("p", "p", "a", "smem"),
        ("add", "add", "entry", "reg"),
        ("r#async", "async", "fn_", "r"),
    ];
    let mut src = String::new();
    let mut calls = String::new();
    for (rust, kernel, a, x) in names {
        src.push_str(&format!(
            "@launch(128)\n@grid(cdiv(N, ctx.threads))\nkernel {kernel}({a}: f32, {x}: tensor<f32>[N]) {{\n  \
             let i = ctx.block.x * ctx.threads + ctx.thread\n  if i < N {{\n    {x}[i] = {a} * {x}[i] + 1.0\n  }}\n}}\n\n"
        ));
        calls.push_str(&format!("    kernels::{rust}(&dev, 1.0, &mut x)?;\n"));
    }
    let main = format!(
        "mod kernels {{\n    include!(concat!(env!(\"OUT_DIR\"), \"/kernels.rs\"));\n}}\n\n\
         fn main() -> Result<(), Box<dyn std::error::Error>> {{\n    \
         let dev = phobos_runtime::Device::auto()?;\n    \
         let mut x = dev.upload(&[1.0f32, 2.0, 3.0], &[3])?;\n{calls}    \
         println!(\"{{:?}}\", x.to_vec()?);\n    Ok(())\n}}\n"
    );
    let dir = new_crate(
        "awkward-names",
        &[("src/main.rs", &main), ("kernels/awkward.pho", &src)],
    );
    let out = cargo(dir.path(), &["run", "--quiet"], &[]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("[13.0, 14.0, 15.0]"), "{all}");
}
