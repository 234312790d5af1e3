"""The benchmark shapes, the same as phobos-bench's (src/bin/bench.rs,
FULL and SMALL): keep the two in step. Also the one way torch and Triton
rows are timed (`time_ms`), the same as phobos-bench times its own."""

FULL = {
    "copy_bytes": 1 << 30,
    "matvec": (16384, 16384),
    "staged_rows": 1 << 20,
    "i8": (32768, 16384),
    "f16": (16384, 16384),
    "rows": (16384, 8192),
    "sum": 1 << 28,
    "gemm": [(4096, 4096, 4096), (8192, 8192, 8192)],
    "f8_gemm": [(4096, 4096, 4096), (8192, 8192, 8192)],
}

SMALL = {
    "copy_bytes": 1 << 20,
    "matvec": (64, 512),
    "staged_rows": 64,
    "i8": (64, 512),
    "f16": (64, 512),
    "rows": (8, 512),
    "sum": 1 << 14,
    "gemm": [(130, 96, 72), (70, 200, 40)],
    # K a multiple of 16 (the FP8 kernel's @aligned), not of 32.
    "f8_gemm": [(130, 96, 80), (70, 200, 48)],
}


def shapes(small):
    return SMALL if small else FULL


def setup(seed):
    """What both comparison scripts start from: their command line
    (`--out FILE [--small]`), the shapes it picks, the CUDA device, and a
    maker of random tensors in [-1, 1) seeded with `seed`."""
    import argparse

    import torch

    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--small", action="store_true")
    args = p.parse_args()
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(seed)

    def rnd(*shape, dtype=torch.float32):
        return (torch.rand(*shape, device=dev, generator=g) * 2 - 1).to(dtype)

    return args, shapes(args.small), dev, rnd


GEMMS = ("bf16_gemm_4096", "bf16_gemm_8192")
# The FP8 GEMM's rows: C = A · Wᵀ, f8e4m3 operands, W stored [N, K].
F8_GEMMS = ("f8_gemm_4096", "f8_gemm_8192")


def gemm_shape(name, s):
    """M, N, K of one of the GEMM rows (bf16 or FP8)."""
    if name in F8_GEMMS:
        return s["f8_gemm"][F8_GEMMS.index(name)]
    return s["gemm"][GEMMS.index(name)]


def flops(name, s):
    """2·M·N·K for the GEMM rows, None for the memory-bound ones."""
    if name not in GEMMS + F8_GEMMS:
        return None
    m, n, k = gemm_shape(name, s)
    return 2 * m * n * k


def bytes_moved(name, s):
    """The bytes each operation must move at least, as phobos-bench counts them."""
    if name == "copy_dtod":
        return 2 * s["copy_bytes"]
    if name == "lanes_matvec":
        n, k = s["matvec"]
        return (n * k + k + n) * 4
    if name == "staged_matvec":
        n, k = s["staged_rows"], 256
        return (n * k + k + n) * 4
    if name == "i8_matvec":
        n, k = s["i8"]
        return n * k + k + n * 4
    if name == "f16_gemv":
        n, k = s["f16"]
        return n * k * 2 + k * 2 + n * 4
    if name == "row_softmax":
        n, m = s["rows"]
        return 2 * n * m * 4
    if name == "layer_norm":
        n, m = s["rows"]
        return 2 * n * m * 4 + 2 * m * 4
    if name == "sum_all":
        return s["sum"] * 4
    if name in GEMMS:
        m, n, k = gemm_shape(name, s)
        return (m * k + k * n) * 2 + m * n * 4
    if name in F8_GEMMS:
        m, n, k = gemm_shape(name, s)
        return m * k + n * k + m * n * 4
    raise KeyError(name)


# How every row is timed, in phobos-bench (src/bin/bench.rs, Clock) and
# here alike: WARMUP calls, then RUNS samples, each a CUDA event pair
# around BATCH back-to-back calls on the current stream (no host sync
# between them), divided by BATCH; the median, and the spread as the
# fastest and slowest sample. No L2 flush: every memory-bound shape is
# several times the L2, and the GEMMs are compute-bound.
WARMUP = 3
RUNS = 30
BATCH = 10


def time_ms(fn, runs=RUNS, batch=BATCH, warmup=WARMUP):
    """{"ms": median, "ms_min", "ms_max", "runs", "batch"} of one call of
    `fn`, timed as above."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(batch):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / batch)
    times.sort()
    return {"ms": times[len(times) // 2], "ms_min": times[0], "ms_max": times[-1],
            "runs": runs, "batch": batch}
