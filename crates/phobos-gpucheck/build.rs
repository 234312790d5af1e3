//! Compiles the benchmark kernels into PTX, cubins (when ptxas is found)
//! and typed launch functions: this crate's `kernels/*.pho` and the seed
//! page's matvec kernels from the example (`examples/matvec/kernels`),
//! which stay there, their one owner.
//!
//! The targets are sm_80 and newer (sm_90a included: a 9.0 device loads
//! its wgmma + TMA image first): the bundle runs on data-centre GPUs, and
//! its bf16 GEMM needs sm_80's tensor-core shapes (P0811 on sm_75). A
//! kernel whose header says it needs more (`// needs: sm_89`, read by the
//! conformance suite's `min_arch_of`, its one owner: the FP8 GEMM) cannot
//! be compiled for sm_80, and phobos-build compiles every file of a folder
//! for every target; so the kernels are copied into one folder under
//! `OUT_DIR` per minimum target, each built for its targets. The sm_80
//! group writes `OUT_DIR/kernels.rs`; a higher group builds into
//! `OUT_DIR/needs-sm_N/` and its bindings, whose embedded files phobos-build
//! names from `OUT_DIR` (`concat!(env!("OUT_DIR"), "/phobos/…")`), are
//! written to `OUT_DIR/kernels_sm_N.rs` with those paths pointed into its
//! folder. phobos-bench includes each.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The bundle's floor: bf16 `mma.sync` and `cp.async`.
const FLOOR: u32 = 80;

/// The `.pho` files of `from`, with their text.
fn pho_files(from: &Path) -> Vec<(std::ffi::OsString, Vec<u8>)> {
    println!("cargo:rerun-if-changed={}", from.display());
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("cannot read {}: {e}", from.display()));
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "pho") {
            println!("cargo:rerun-if-changed={}", path.display());
            let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push((entry.file_name(), text));
        }
    }
    out
}

fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    // Minimum target → the files that need it.
    let mut groups: BTreeMap<u32, Vec<(std::ffi::OsString, Vec<u8>)>> = BTreeMap::new();
    groups.insert(FLOOR, Vec::new());
    for dir in [
        manifest.join("kernels"),
        manifest.join("../../examples/matvec/kernels"),
    ] {
        for (name, text) in pho_files(&dir) {
            let needs = phobos_conformance::min_arch_of(&String::from_utf8_lossy(&text));
            groups
                .entry(needs.max(FLOOR))
                .or_default()
                .push((name, text));
        }
    }
    for (needs, files) in groups {
        let arches: Vec<u32> = phobos_core::ARCHES
            .iter()
            .copied()
            .filter(|&a| a >= needs)
            .collect();
        let (kernels, out_dir) = if needs == FLOOR {
            (out.join("bench-kernels"), out.clone())
        } else {
            let dir = out.join(format!("needs-{}", phobos_core::arch::name(needs)));
            (dir.join("bench-kernels"), dir)
        };
        std::fs::create_dir_all(&kernels).expect("create the kernels folder");
        for (name, text) in &files {
            write_if_changed(&kernels.join(name), text);
        }
        phobos_build::Builder::new(&kernels)
            .arches(&arches)
            .out_dir(&out_dir)
            .build_or_exit();
        if needs != FLOOR {
            let sub = out_dir
                .file_name()
                .expect("a folder name")
                .to_string_lossy()
                .into_owned();
            let rs = std::fs::read_to_string(out_dir.join("kernels.rs"))
                .expect("phobos-build wrote kernels.rs");
            let rs = rs.replace(
                "env!(\"OUT_DIR\"), \"/phobos/",
                &format!("env!(\"OUT_DIR\"), \"/{sub}/phobos/"),
            );
            let name = format!("kernels_{}.rs", phobos_core::arch::name(needs));
            write_if_changed(&out.join(name), rs.as_bytes());
        }
    }
}
