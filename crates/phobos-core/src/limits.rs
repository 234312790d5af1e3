//! The limits the compiler holds a source file and a kernel to, in one
//! leaf module: what the parser reads (bytes, nesting, chains), how large
//! unrolling may make a kernel, and how much shared memory one CTA may
//! use per target. The passes that enforce a limit and the errors that
//! name it both read it here.

/// Largest source file the compiler reads, in bytes: far above any
/// kernel, and low enough that the tokens, tree and tables stay small.
pub const MAX_SOURCE_BYTES: usize = 1 << 20;

/// The deepest nesting of expressions and blocks the parser accepts.
pub const MAX_DEPTH: usize = 128;

/// The most binary operators (or subscripts) one chain may hold: `a + b +
/// c` nests no brackets, yet each operator is a level of the tree that
/// every later pass (checker, formatter, even dropping the tree) walks
/// recursively, so an unbounded chain overflowed the stack.
pub const MAX_CHAIN: usize = 1024;

/// The most statements and expressions a kernel variant may have after
/// unrolling (P0803): twice what the checker lets a variant have before
/// (`MAX_EXPR_NODES`), so unrolling may double the largest kernel.
pub const MAX_UNROLLED_SIZE: u64 = 1_000_000;

pub use phobos_meta::STATIC_SHARED_LIMIT;

/// The most shared memory one CTA may use on `sm_{arch}` when the launch
/// opts in (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`): the CUDA
/// C++ Programming Guide's "maximum amount of shared memory per thread
/// block" per compute capability — 64 KB on 7.5, 163 KB on 8.0, 99 KB on
/// 8.6 and 8.9, 227 KB on 9.0 and 10.0, 99 KB on 12.0. For 10.0 and 12.0
/// these agree with CUDA 12.9's `cuda_occupancy.h`, whose largest shared
/// carveouts are 228 KB and 100 KB per SM, less the 1 KB reserved per CTA.
/// phobos-profile's occupancy table is pinned to this one by a test.
/// `sm_90a` is a 9.0 target: sm_90's limit.
pub fn max_shared_bytes(arch: u32) -> u32 {
    const KB: u32 = 1024;
    match phobos_meta::arch::compute_capability(arch) {
        0..=75 => 64 * KB,
        80 => 163 * KB,
        90 | 100 => 227 * KB,
        _ => 99 * KB,
    }
}
