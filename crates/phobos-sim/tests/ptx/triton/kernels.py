"""Triton kernels whose PTX phobos-sim runs as fixtures.

scripts/triton-fixtures.py compiles each entry of FIXTURES for an sm_80
target (no GPU needed) and writes NAME.ptx and MANIFEST beside this file;
crates/phobos-sim/tests/triton_fixtures.rs runs the PTX against f64
references. The kernels are Triton's tutorial GEMM (03-matrix-multiplication)
and fused softmax (02-fused-softmax), a three-pass softmax, a row sum, two
GEMVs, the tutorial's layer norm forward (05-layer-norm), a
flash-attention forward for one head, a row scan (tl.cumsum) and a
grid-wide sum through a float atomic, with masks so that ragged shapes are
exercised.
"""
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    """C = A @ B (A M×K, B K×N; bf16 or f32 (tf32 dot) into f32, or i8 into
    i32: the accumulator has C's type), the tutorial's grouped order."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=c_ptr.dtype.element_ty)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, accumulator, mask=c_mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride,
                   n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    """The tutorial's fused softmax: one row per program, rows strided."""
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@triton.jit
def softmax_3pass_kernel(output_ptr, input_ptr, row_stride, n_cols,
                         BLOCK_SIZE: tl.constexpr):
    """Softmax of rows longer than a block: max, sum of exp, then write."""
    row = tl.program_id(0)
    base = input_ptr + row * row_stride
    cols = tl.arange(0, BLOCK_SIZE)
    m = tl.full((BLOCK_SIZE,), -float('inf'), tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        x = tl.load(base + start + cols, mask=start + cols < n_cols, other=-float('inf'))
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    s = tl.zeros((BLOCK_SIZE,), tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        x = tl.load(base + start + cols, mask=start + cols < n_cols, other=-float('inf'))
        s += tl.exp(x - row_max)
    denom = tl.sum(s, axis=0)
    out = output_ptr + row * row_stride
    for start in range(0, n_cols, BLOCK_SIZE):
        x = tl.load(base + start + cols, mask=start + cols < n_cols, other=-float('inf'))
        tl.store(out + start + cols, tl.exp(x - row_max) / denom, mask=start + cols < n_cols)


@triton.jit
def row_sum_kernel(x_ptr, y_ptr, n_rows, n_cols, stride,
                   BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """y[r] = sum of row r, BLOCK_R rows per program."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_R, BLOCK_C), tl.float32)
    for start in range(0, n_cols, BLOCK_C):
        c = start + cols
        mask = (rows[:, None] < n_rows) & (c[None, :] < n_cols)
        acc += tl.load(x_ptr + rows[:, None] * stride + c[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + rows, tl.sum(acc, axis=1), mask=rows < n_rows)


@triton.jit
def gemv_kernel(w_ptr, x_ptr, y_ptr, n_rows, n_cols, stride,
                BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """y = W x in f32, a block of rows per program."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_R, BLOCK_C), tl.float32)
    for start in range(0, n_cols, BLOCK_C):
        c = start + cols
        w = tl.load(w_ptr + rows[:, None] * stride + c[None, :],
                    mask=(rows[:, None] < n_rows) & (c[None, :] < n_cols), other=0.0)
        x = tl.load(x_ptr + c, mask=c < n_cols, other=0.0)
        acc += w * x[None, :]
    tl.store(y_ptr + rows, tl.sum(acc, axis=1), mask=rows < n_rows)


@triton.jit
def gemv_split_kernel(w_ptr, x_ptr, y_ptr, n_rows, n_cols, stride,
                      BLOCK_C: tl.constexpr):
    """y = W x with one row per program and the row reduced across the CTA."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_C,), tl.float32)
    for start in range(0, n_cols, BLOCK_C):
        c = start + cols
        w = tl.load(w_ptr + row * stride + c, mask=c < n_cols, other=0.0)
        x = tl.load(x_ptr + c, mask=c < n_cols, other=0.0)
        acc += w * x
    tl.store(y_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, n_cols, eps,
                      BLOCK_SIZE: tl.constexpr):
    """The tutorial's layer norm forward (05-layer-norm): one row per program,
    mean and variance in two passes over blocks, then normalize and scale."""
    row = tl.program_id(0)
    x_ptr += row * stride
    y_ptr += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        _mean += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.)
    mean = tl.sum(_mean, axis=0) / n_cols
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.)
        x = tl.where(cols < n_cols, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_ptr + cols, mask=mask, other=0.)
        tl.store(y_ptr + cols, (x - mean) * rstd * w + b, mask=mask)


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, stride, sm_scale,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Flash-attention forward for one head (as the tutorial's inner loop):
    S = Q K^T on tensor cores, an online softmax in exp2, O += P V with P in
    f16; keys past n_ctx masked to -inf."""
    start_m = tl.program_id(0)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride + offs_d[None, :], mask=offs_m[:, None] < n_ctx, other=0.)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, n_ctx, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_ptr + cols[None, :] * stride + offs_d[:, None], mask=cols[None, :] < n_ctx, other=0.)
        qk = tl.dot(q, k)
        qk = tl.where(cols[None, :] < n_ctx, qk * qk_scale, -float("inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + cols[:, None] * stride + offs_d[None, :], mask=cols[:, None] < n_ctx, other=0.)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride + offs_d[None, :], acc, mask=offs_m[:, None] < n_ctx)


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr):
    """Inclusive prefix sum of each row (tl.cumsum: a warp scan of
    shuffles, then the warps' totals exchanged through shared memory)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.)
    tl.store(y_ptr + row * stride + cols, tl.cumsum(x, 0), mask=cols < n_cols)


@triton.jit
def atomic_sum_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """The sum of x over the whole grid: each program reduces its block and
    adds it to y[0] with a float atomic (Triton's default acq_rel order)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.)
    tl.atomic_add(y_ptr, tl.sum(x, axis=0))


# name: (kernel, signature, constexprs, aligned, options)
#
# As Triton's launcher would specialize them for the tests' arguments: an
# integer argument equal to 1 becomes a constexpr, and pointers and integers
# divisible by 16 (every buffer, K, and the padded row strides the tests use)
# carry `tt.divisibility = 16` (the `aligned` list).
def _mm(bm, bn, bk, group, warps, stages, ab="*bf16", c="*fp32"):
    sig = {"a_ptr": ab, "b_ptr": ab, "c_ptr": c, "M": "i32", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32",
           "stride_bn": "constexpr", "stride_cm": "i32", "stride_cn": "constexpr"}
    return (matmul_kernel, sig,
            {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_SIZE_M": bm,
             "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group},
            ["a_ptr", "b_ptr", "c_ptr", "K", "stride_am", "stride_bk", "stride_cm"],
            {"num_warps": warps, "num_stages": stages})


FIXTURES = {
    "matmul_64x64x32": _mm(64, 64, 32, 8, 4, 3),
    "matmul_128x64x64": _mm(128, 64, 64, 8, 4, 4),
    "matmul_32x32x32": _mm(32, 32, 32, 4, 2, 2),
    "matmul_tf32_64x64x32": _mm(64, 64, 32, 8, 4, 3, ab="*fp32"),
    "matmul_i8_64x64x64": _mm(64, 64, 64, 8, 4, 3, ab="*i8", c="*i32"),
    "softmax": (softmax_kernel,
                {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                 "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                {"BLOCK_SIZE": 256},
                ["output_ptr", "input_ptr", "input_row_stride", "output_row_stride"],
                {"num_warps": 4, "num_stages": 1}),
    "softmax_3pass": (softmax_3pass_kernel,
                      {"output_ptr": "*fp32", "input_ptr": "*fp32", "row_stride": "i32",
                       "n_cols": "i32"},
                      {"BLOCK_SIZE": 128},
                      ["output_ptr", "input_ptr", "row_stride"], {"num_warps": 4, "num_stages": 1}),
    "row_sum": (row_sum_kernel,
                {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_rows": "i32", "n_cols": "i32",
                 "stride": "i32"},
                {"BLOCK_R": 16, "BLOCK_C": 64},
                ["x_ptr", "y_ptr", "stride"], {"num_warps": 4, "num_stages": 1}),
    "gemv": (gemv_kernel,
             {"w_ptr": "*fp32", "x_ptr": "*fp32", "y_ptr": "*fp32", "n_rows": "i32",
              "n_cols": "i32", "stride": "i32"},
             {"BLOCK_R": 8, "BLOCK_C": 128},
             ["w_ptr", "x_ptr", "y_ptr", "stride"], {"num_warps": 4, "num_stages": 1}),
    "layer_norm": (layer_norm_kernel,
                   {"x_ptr": "*fp32", "y_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32",
                    "stride": "i32", "n_cols": "i32", "eps": "fp32"},
                   {"BLOCK_SIZE": 256},
                   ["x_ptr", "y_ptr", "w_ptr", "b_ptr", "stride"], {"num_warps": 4, "num_stages": 1}),
    "attention": (attention_kernel,
                  {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32",
                   "n_ctx": "i32", "stride": "i32", "sm_scale": "fp32"},
                  {"BLOCK_M": 64, "BLOCK_N": 32, "HEAD_DIM": 64},
                  ["q_ptr", "k_ptr", "v_ptr", "o_ptr", "stride"], {"num_warps": 4, "num_stages": 2}),
    "cumsum": (cumsum_kernel,
               {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_cols": "i32", "stride": "i32"},
               {"BLOCK": 512}, ["x_ptr", "y_ptr", "stride"], {"num_warps": 4, "num_stages": 1}),
    "atomic_sum": (atomic_sum_kernel,
                   {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
                   {"BLOCK": 256}, ["x_ptr", "y_ptr"], {"num_warps": 4, "num_stages": 1}),
    "gemv_split": (gemv_split_kernel,
                   {"w_ptr": "*fp32", "x_ptr": "*fp32", "y_ptr": "*fp32", "n_rows": "i32",
                    "n_cols": "i32", "stride": "i32"},
                   {"BLOCK_C": 256},
                   ["w_ptr", "x_ptr", "y_ptr", "stride"], {"num_warps": 4, "num_stages": 1}),
}
