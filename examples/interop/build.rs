//! Compiles `kernels/*.pho` into PTX, cubins (when ptxas is found) and the
//! typed launch functions `src/main.rs` includes.

fn main() {
    phobos_build::compile_dir("kernels");
}
