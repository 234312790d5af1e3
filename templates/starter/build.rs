//! Compiles `kernels/*.pho` into PTX (and cubins when NVIDIA's ptxas is
//! found) and generates `OUT_DIR/kernels.rs`, the typed launch functions.

fn main() {
    phobos_build::compile_dir("kernels");
}
