//! Unit tests of the generated code, on the compiler's metadata for the
//! corpus kernel lanes_matvec, edited by each test.

use super::*;
use phobos_meta::meta::{GridExpr, KernelMeta, ParamKindMeta, ParamMeta};

/// The corpus kernel lanes_matvec's metadata, as the compiler writes it.
fn lanes_matvec() -> KernelMeta {
    let src = include_str!("../../../tests/in/lanes_matvec.pho");
    let opts = phobos_core::CompileOptions::for_arch(75);
    let (kernels, diags) = phobos_core::compile(src, "kernels/matvec.pho", &opts);
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    kernels.into_iter().next().expect("one kernel").meta
}

fn assets(meta: KernelMeta) -> KernelAssets {
    let n = meta.name.clone();
    KernelAssets {
        meta,
        meta_file: format!("{n}.meta.ron"),
        ptx_files: vec![
            (75, format!("{n}.sm_75.ptx")),
            (90, format!("{n}.sm_90.ptx")),
        ],
        cubin_files: vec![(90, format!("{n}.sm_90.cubin"))],
        tuning_file: None,
    }
}

#[test]
fn read_tensors_are_shared_written_are_mut_and_grid_is_an_argument() {
    let code = generate_kernel(&assets(lanes_matvec()), &AssetRoot::OutDir("phobos".into()));
    assert!(code.contains("pub fn lanes_matvec(\n    device: &phobos_rt::Device,\n    grid: impl ::core::convert::Into<phobos_rt::Grid>,\n"));
    assert!(code.contains("    W: &phobos_rt::Tensor<f32>,\n    x: &phobos_rt::Tensor<f32>,\n    y: &mut phobos_rt::Tensor<f32>,\n"));
    assert!(code.contains("::core::result::Result<(), phobos_rt::LaunchError>"));
    assert!(code.contains(
        "meta: include_str!(concat!(env!(\"OUT_DIR\"), \"/phobos/lanes_matvec.meta.ron\"))"
    ));
    assert!(code.contains(
        "static CUBIN_90: &phobos_rt::Aligned<[u8]> = &phobos_rt::Aligned { align: [], bytes: *include_bytes!(concat!(env!(\"OUT_DIR\"), \"/phobos/lanes_matvec.sm_90.cubin\")) };"
    ));
    assert!(code.contains("static CUBINS: [(u32, &[u8]); 1] = [(90, &CUBIN_90.bytes)];"));
    // The shorthand forwards to the stream form on the default stream,
    // which embeds the kernel and takes any tensor-like argument.
    assert!(
        code.contains("    lanes_matvec_on(&device.default_stream(), grid, W, x, y)\n"),
        "{code}"
    );
    assert!(code.contains("pub fn lanes_matvec_on(\n    stream: &phobos_rt::Stream,\n    grid: impl ::core::convert::Into<phobos_rt::Grid>,\n    W: &impl phobos_rt::TensorIn<f32>,\n    x: &impl phobos_rt::TensorIn<f32>,\n    y: &mut impl phobos_rt::TensorOut<f32>,\n"), "{code}");
    assert!(code.contains("KERNEL.launch_on(stream, ::core::option::Option::Some(grid.into()), &[phobos_rt::TensorIn::<f32>::arg(W), phobos_rt::TensorIn::<f32>::arg(x), phobos_rt::TensorIn::<f32>::arg(&*y)])"), "{code}");
}

#[test]
fn docs_carry_the_kernel_signature() {
    let code = generate_kernel(&assets(lanes_matvec()), &AssetRoot::OutDir(String::new()));
    assert!(code.contains("/// @launch(128)\n/// @aligned(K = 128)\n/// kernel lanes_matvec(W: tensor<f32>[N, K], x: tensor<f32>[1, K], y: tensor<f32>[1, N])\n"));
    assert!(code.contains("/// Reads `W`, `x`.\n/// Writes `y`.\n"));
    assert!(code.contains("concat!(env!(\"OUT_DIR\"), \"/lanes_matvec.meta.ron\")"));
}

#[test]
fn eight_bit_float_tensors_and_scalars_are_the_float8_crates_types() {
    let src = include_str!("../../../tests/in/mma_gemm_f8e4m3.pho");
    let (kernels, diags) =
        phobos_core::compile(src, "f8.pho", &phobos_core::CompileOptions::for_arch(89));
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    let mut meta = kernels.into_iter().next().expect("one kernel").meta;
    meta.params.push(ParamMeta {
        name: "s".into(),
        kind: ParamKindMeta::Scalar(ScalarTy::F8E5M2),
    });
    let code = generate_kernel(&assets(meta), &AssetRoot::Path("/tmp/x/".into()));
    assert!(
        code.contains("    A: &phobos_rt::Tensor<phobos_rt::float8::F8E4M3>,\n    W: &phobos_rt::Tensor<phobos_rt::float8::F8E4M3>,\n"),
        "{code}"
    );
    assert!(
        code.contains("    s: phobos_rt::float8::F8E5M2,\n"),
        "{code}"
    );
}

#[test]
fn a_kernel_with_grid_takes_no_grid_and_scalars_go_by_value() {
    let mut meta = lanes_matvec();
    meta.name = "type".into();
    meta.grid = Some(vec![GridExpr::Cdiv(
        Box::new(GridExpr::Dim("N".into())),
        Box::new(GridExpr::Const(4)),
    )]);
    meta.params.push(ParamMeta {
        name: "alpha".into(),
        kind: ParamKindMeta::Scalar(ScalarTy::F16),
    });
    meta.params.push(ParamMeta {
        name: "grid".into(),
        kind: ParamKindMeta::Scalar(ScalarTy::I32),
    });
    let code = generate_kernel(&assets(meta), &AssetRoot::Path("/tmp/x/".into()));
    assert!(code.contains("pub fn r#type(\n    device: &phobos_rt::Device,\n    W:"));
    assert!(code.contains("    alpha: phobos_rt::half::f16,\n    grid_: i32,\n"));
    assert!(code.contains("::core::option::Option::None, &["));
    assert!(code.contains("phobos_rt::Arg::scalar(alpha), phobos_rt::Arg::scalar(grid_)]"));
    assert!(code.contains("/// @grid(cdiv(N, 4))"));
    assert!(code.contains("include_str!(\"/tmp/x/type.meta.ron\")"));
}

/// Parameters named like the prelude's variants broke the generated code
/// (a parameter is a pattern; `Some` in one is the variant).
#[test]
fn parameters_named_like_prelude_variants_are_renamed() {
    let mut meta = lanes_matvec();
    for name in ["Some", "None", "Ok", "Err"] {
        meta.params.push(ParamMeta {
            name: name.into(),
            kind: ParamKindMeta::Scalar(ScalarTy::I32),
        });
    }
    let code = generate_kernel(&assets(meta), &AssetRoot::OutDir(String::new()));
    assert!(
        code.contains("    Some_: i32,\n    None_: i32,\n    Ok_: i32,\n    Err_: i32,\n"),
        "{code}"
    );
    assert!(code.contains("phobos_rt::Arg::scalar(Err_)"), "{code}");
}

#[test]
fn identifiers_that_rust_reserves_are_renamed() {
    assert_eq!(rust_ident("match"), "r#match");
    assert_eq!(rust_ident("self"), "self_");
    assert_eq!(rust_ident("row"), "row");
}

#[test]
fn autotune_is_documented() {
    let mut meta = lanes_matvec();
    meta.autotune = vec![("K".into(), vec![256, 512])];
    assert!(kernel_signature(&meta).starts_with("@autotune(K in [256, 512])\n@launch(128)"));
}

#[test]
fn free_tuning_constants_are_documented() {
    let mut meta = lanes_matvec();
    meta.autotune = vec![("BLOCK".into(), vec![64, 128])];
    let code = generate_kernel(&assets(meta.clone()), &AssetRoot::OutDir(String::new()));
    assert!(
        code.contains("so the launch runs the first one: BLOCK = 64."),
        "{code}"
    );
    meta.grid = Some(vec![GridExpr::Dim("N".into())]);
    let code = generate_kernel(&assets(meta.clone()), &AssetRoot::OutDir(String::new()));
    assert!(
        code.contains("so the launch runs the first one: BLOCK = 64."),
        "{code}"
    );
    meta.grid = Some(vec![GridExpr::Cdiv(
        Box::new(GridExpr::Dim("N".into())),
        Box::new(GridExpr::Dim("BLOCK".into())),
    )]);
    let code = generate_kernel(&assets(meta.clone()), &AssetRoot::OutDir(String::new()));
    assert!(
        code.contains("times every value of BLOCK and keeps the fastest"),
        "{code}"
    );
    // Metadata where every variant carries its own @grid: the runtime times
    // the variants even when the kernel-level @grid does not name BLOCK, and
    // the docs say so (they used to claim the first variant runs).
    meta.grid = Some(vec![GridExpr::Dim("N".into())]);
    for v in &mut meta.variants {
        v.grid = Some(vec![GridExpr::Dim("N".into())]);
    }
    assert!(phobos_meta::binding::grid_follows_variants(&meta));
    let code = generate_kernel(&assets(meta), &AssetRoot::OutDir(String::new()));
    assert!(
        code.contains("times every value of BLOCK and keeps the fastest"),
        "{code}"
    );
}

#[test]
fn mangled_names_stay_distinct_from_names_that_look_mangled() {
    // Kernels `self` and `self_`: both became `self_` (rustc E0428).
    let mut a = lanes_matvec();
    a.name = "self".into();
    let mut b = lanes_matvec();
    b.name = "self_".into();
    let code = generate(
        &[assets(a), assets(b)],
        &AssetRoot::OutDir(String::new()),
        DEFAULT_RUNTIME_CRATE,
    );
    assert!(code.contains("pub fn self__(\n"), "{code}");
    assert!(code.contains("pub fn self_(\n"), "{code}");
    // Parameters `device` and `device_`: both became `device_` (E0415).
    let mut meta = lanes_matvec();
    meta.params[0].name = "device".into();
    meta.params[1].name = "device_".into();
    let code = generate_kernel(&assets(meta), &AssetRoot::OutDir(String::new()));
    assert!(
        code.contains("    device__: &phobos_rt::Tensor<f32>,\n"),
        "{code}"
    );
    assert!(
        code.contains("    device_: &phobos_rt::Tensor<f32>,\n"),
        "{code}"
    );
    // Once in the shorthand, once in the stream form.
    assert_eq!(code.matches("    device_: &phobos_rt").count(), 1, "{code}");
    assert_eq!(code.matches("    device_: &impl").count(), 1, "{code}");
}

#[test]
fn a_newline_in_the_file_name_does_not_end_the_doc_comment() {
    let mut meta = lanes_matvec();
    meta.source_file = "kernels/evil\npub fn injected() {}\n.pho".into();
    let code = generate_kernel(&assets(meta), &AssetRoot::OutDir(String::new()));
    assert!(!code.contains("\npub fn injected"), "{code}");
    assert!(
        code.contains("evil\\npub fn injected() {}\\n.pho"),
        "{code}"
    );
}

#[test]
fn a_shipped_tuning_file_is_embedded_with_the_kernel() {
    let plain = generate_kernel(&assets(lanes_matvec()), &AssetRoot::OutDir("phobos".into()));
    assert!(plain.contains("phobos_rt::Kernel::new(phobos_rt::KernelSource {"));
    assert!(plain.contains("\n    });\n"), "{plain}");
    let mut tuned = assets(lanes_matvec());
    tuned.tuning_file = Some("tuning.ron".to_string());
    let code = generate_kernel(&tuned, &AssetRoot::OutDir("phobos".into()));
    assert!(
        code.contains("phobos_rt::Kernel::with_tuning(phobos_rt::KernelSource {"),
        "{code}"
    );
    assert!(
        code.contains(
            "\n    }, include_str!(concat!(env!(\"OUT_DIR\"), \"/phobos/tuning.ron\")));\n"
        ),
        "{code}"
    );
}

#[test]
fn the_stream_form_is_named_apart_from_every_launch_function() {
    let mut a = lanes_matvec();
    a.name = "k".into();
    let mut b = lanes_matvec();
    b.name = "k_on".into();
    let mut c = lanes_matvec();
    c.name = "type".into();
    let code = generate(
        &[assets(a), assets(b), assets(c)],
        &AssetRoot::OutDir(String::new()),
        DEFAULT_RUNTIME_CRATE,
    );
    for f in ["k", "k_on", "k_on_", "k_on_on", "r#type", "type_on"] {
        assert_eq!(
            code.matches(&format!("pub fn {f}(\n")).count(),
            1,
            "{f}:\n{code}"
        );
    }
    assert!(
        code.contains("    k_on_(&device.default_stream(), grid, W, x, y)\n"),
        "{code}"
    );
}
