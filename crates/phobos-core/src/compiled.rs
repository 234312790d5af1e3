//! What one compile takes and gives, as a leaf both the pipeline and the
//! backend read: the options (`CompileOptions`), and one compiled kernel
//! (`CompiledKernel`: its PTX module, its metadata, and the parts
//! `pipeline::file_module` joins with other kernels').

use crate::meta::KernelMeta;

#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Target compute capability, e.g. 75 for `sm_75`.
    pub arch: u32,
    /// Pinned `@autotune` constants (`NAME = value`; a later one wins): a
    /// kernel that declares `NAME` compiles only the variants with that
    /// value, and its metadata lists only that candidate. A value that is
    /// not one of the kernel's candidates is error P0312. Names no kernel
    /// declares are ignored here (phobos-build warns about them).
    pub defines: Vec<(String, i64)>,
}

impl CompileOptions {
    /// The options for `sm_{arch}` with nothing pinned.
    pub fn for_arch(arch: u32) -> Self {
        CompileOptions {
            arch,
            defines: Vec::new(),
        }
    }
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions::for_arch(75)
    }
}

/// One kernel compiled for one target: a PTX module holding one `.entry`
/// per autotune variant, and its metadata.
#[derive(Clone, Debug)]
pub struct CompiledKernel {
    pub meta: KernelMeta,
    /// A PTX module of this kernel alone.
    pub ptx: String,
    /// The parts `file_module` puts together with other kernels'.
    pub(crate) module: ModuleParts,
}

/// What a kernel contributes to a PTX module: the entries, and what the
/// header needs (the lowest PTX ISA version they need, the target, the
/// source file for `.file 1`).
#[derive(Clone, Debug)]
pub(crate) struct ModuleParts {
    pub version: u32,
    pub arch: u32,
    pub file_name: String,
    pub entries: String,
}
