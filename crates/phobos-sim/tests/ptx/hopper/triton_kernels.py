"""Triton kernels with TMA (tensor descriptors) whose sm_90 PTX phobos-sim
runs as fixtures.

`scripts/triton-fixtures.py hopper` compiles each entry of FIXTURES for
`GPUTarget("cuda", 90, 32)` (no GPU needed) and writes triton_NAME.ptx and
TRITON_MANIFEST beside this file; crates/phobos-sim/tests/nvrtc_tma.rs
runs the PTX with tensor maps made as Triton's launcher makes them (the
swizzle and box from the manifest's `tensordesc_meta`). Triton's PTX waits
on its mbarrier in an inline-assembly block with its own `.reg` and label,
pasted once per load, elects the issuing thread with `elect.sync`, and
reads the swizzled tile back with `ldmatrix`, so the simulator's scopes,
TMA forms and swizzle are checked against another compiler's layout.
"""
import triton
import triton.language as tl


@triton.jit
def tma_scale_kernel(in_desc, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """out = 2 * in over a BM x BN tile per program, loaded through TMA."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x = in_desc.load([pid_m * BM, pid_n * BN])
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    tl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], x * 2.0,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def tma_sum_kernel(a_desc, b_desc, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """out = a[:, n] + a[:, n + 1] + a[:, n + 2] + b: four TMA loads (one in a
    loop), each with its own mbarrier wait block."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, 3):
        acc += a_desc.load([pid_m * BM, pid_n * BN + k])
    acc += b_desc.load([pid_m * BM, pid_n * BN])
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    tl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


_DESC = "tensordesc<fp32[32, 32]>"

# name -> (kernel, signature, constexprs, options)
FIXTURES = {
    "tma_scale": (tma_scale_kernel,
                  {"in_desc": _DESC, "out_ptr": "*fp32", "M": "i32", "N": "i32",
                   "BM": "constexpr", "BN": "constexpr"},
                  {"BM": 32, "BN": 32}, {"num_warps": 4}),
    # Narrower tiles: Triton picks the 64B and 32B swizzles for them, so its
    # reads check those modes too.
    "tma_scale_n16": (tma_scale_kernel,
                      {"in_desc": "tensordesc<fp32[32, 16]>", "out_ptr": "*fp32", "M": "i32",
                       "N": "i32", "BM": "constexpr", "BN": "constexpr"},
                      {"BM": 32, "BN": 16}, {"num_warps": 4}),
    "tma_scale_n8": (tma_scale_kernel,
                     {"in_desc": "tensordesc<fp32[32, 8]>", "out_ptr": "*fp32", "M": "i32",
                      "N": "i32", "BM": "constexpr", "BN": "constexpr"},
                     {"BM": 32, "BN": 8}, {"num_warps": 4}),
    "tma_sum": (tma_sum_kernel,
                {"a_desc": _DESC, "b_desc": _DESC, "out_ptr": "*fp32", "M": "i32", "N": "i32",
                 "BM": "constexpr", "BN": "constexpr"},
                {"BM": 32, "BN": 32}, {"num_warps": 4}),
}
