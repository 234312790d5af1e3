//! Build-script helper: compile a directory of .pho kernels into PTX, cubins and typed Rust bindings.
