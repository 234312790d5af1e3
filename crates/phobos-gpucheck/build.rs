//! Compiles the benchmark kernels into PTX, cubins (when ptxas is found)
//! and typed launch functions: this crate's `kernels/*.pho` and the seed
//! page's matvec kernels from the example (`examples/matvec/kernels`),
//! which stay there, their one owner; both are copied into one folder under
//! `OUT_DIR` so that one `kernels.rs` holds them all.
//!
//! The targets are sm_80 and newer: the bundle runs on data-centre GPUs,
//! and its bf16 GEMM needs sm_80's tensor-core shapes (P0811 on sm_75).

use std::path::{Path, PathBuf};

fn copy_pho(from: &Path, to: &Path) {
    println!("cargo:rerun-if-changed={}", from.display());
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("cannot read {}: {e}", from.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "pho") {
            println!("cargo:rerun-if-changed={}", path.display());
            let target = to.join(entry.file_name());
            let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if std::fs::read(&target).ok().as_deref() != Some(text.as_slice()) {
                std::fs::write(&target, text)
                    .unwrap_or_else(|e| panic!("{}: {e}", target.display()));
            }
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let kernels = out.join("bench-kernels");
    std::fs::create_dir_all(&kernels).expect("create the kernels folder");
    copy_pho(&manifest.join("kernels"), &kernels);
    copy_pho(&manifest.join("../../examples/matvec/kernels"), &kernels);
    let arches: Vec<u32> = phobos_core::ARCHES
        .iter()
        .copied()
        .filter(|&a| a >= 80)
        .collect();
    phobos_build::Builder::new(&kernels)
        .arches(&arches)
        .build_or_exit();
}
