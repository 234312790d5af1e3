"""Straightforward Triton kernels for phobos-bench's operations, on the
same shapes, checked against torch and timed as phobos-bench times its
own (shapes.time_ms: CUDA events around back-to-back calls after warm-up,
median and spread). Written to be plain, the way a user would first write them: one
program per row block (GEMV) or per row (softmax, layer norm), atomics for
the full sum. Writes {"rows": [{"kernel", "ms", "gbs", "ok", "note"}]}.

    python3 triton_bench.py --out triton.json [--small]
"""
import json
import sys

import torch
import triton
import triton.language as tl
from shapes import bytes_moved, setup, time_ms


@triton.jit
def gemv_kernel(W, X, Y, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, INT: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    if INT:
        acc = tl.zeros((BLOCK_N,), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        mask = (rows[:, None] < N) & (cols[None, :] < K)
        w = tl.load(W + rows[:, None] * K + cols[None, :], mask=mask, other=0)
        x = tl.load(X + cols, mask=cols < K, other=0)
        if INT:
            acc += tl.sum(w.to(tl.int32) * x.to(tl.int32)[None, :], axis=1)
        else:
            acc += tl.sum(w.to(tl.float32) * x.to(tl.float32)[None, :], axis=1)
    tl.store(Y + rows, acc.to(tl.float32), mask=rows < N)


@triton.jit
def softmax_kernel(X, Y, M, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + r * M + cols, mask=cols < M, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(Y + r * M + cols, e / tl.sum(e, axis=0), mask=cols < M)


@triton.jit
def layer_norm_kernel(X, G, B, Y, M, eps, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < M
    x = tl.load(X + r * M + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / M
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / M
    g = tl.load(G + cols, mask=mask, other=0.0)
    b = tl.load(B + cols, mask=mask, other=0.0)
    tl.store(Y + r * M + cols, d * tl.rsqrt(var + eps) * g + b, mask=mask)


@triton.jit
def sum_kernel(X, O, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0.0)
    tl.atomic_add(O, tl.sum(x, axis=0))


@triton.jit
def copy_kernel(S, D, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(D + offs, tl.load(S + offs, mask=offs < N), mask=offs < N)


def main():
    args, s, dev, rnd = setup(1)

    def gemv(w, x, integer=False):
        n, k = w.shape
        y = torch.empty(n, device=dev)
        block_n = 16
        grid = (triton.cdiv(n, block_n),)
        return lambda: gemv_kernel[grid](w, x, y, n, k, BLOCK_N=block_n, BLOCK_K=256, INT=integer), y

    cases = []
    n = s["copy_bytes"] // 4
    src, dst = rnd(n), torch.empty(n, device=dev)
    # `n=n`: bound now; the lines below set `n` again (check_closures.py).
    cases.append(("copy_dtod", lambda n=n: copy_kernel[(triton.cdiv(n, 4096),)](src, dst, n, BLOCK=4096),
                  lambda: torch.equal(src, dst)))
    n, k = s["matvec"]
    w, x = rnd(n, k), rnd(k)
    f, y = gemv(w, x)
    cases.append(("lanes_matvec", f, lambda w=w, x=x, y=y: torch.allclose(y, torch.mv(w, x), atol=1e-3)))
    n2 = s["staged_rows"]
    w2, x2 = rnd(n2, 256), rnd(256)
    f2, y2 = gemv(w2, x2)
    cases.append(("staged_matvec", f2, lambda: torch.allclose(y2, torch.mv(w2, x2), atol=1e-3)))
    n, k = s["i8"]
    wi = (rnd(n, k) * 127).to(torch.int8)
    xi = (rnd(k) * 127).to(torch.int8)
    f3, y3 = gemv(wi, xi, integer=True)
    cases.append(("i8_matvec", f3, lambda: torch.equal(y3, torch.mv(wi.double(), xi.double()).float())))
    n, k = s["f16"]
    wh, xh = rnd(n, k, dtype=torch.float16), rnd(k, dtype=torch.float16)
    f4, y4 = gemv(wh, xh)
    cases.append(("f16_gemv", f4, lambda: torch.allclose(y4, torch.mv(wh.float(), xh.float()), atol=1e-2)))
    n, m = s["rows"]
    xs = rnd(n, m)
    ys = torch.empty_like(xs)
    block = triton.next_power_of_2(m)
    cases.append(("row_softmax", lambda: softmax_kernel[(n,)](xs, ys, m, BLOCK=block),
                  lambda: torch.allclose(ys, torch.softmax(xs, dim=1), atol=1e-6)))
    gamma, beta = rnd(m), rnd(m)
    yl = torch.empty_like(xs)
    cases.append(("layer_norm", lambda: layer_norm_kernel[(n,)](xs, gamma, beta, yl, m, 1e-5, BLOCK=block),
                  lambda: torch.allclose(yl, torch.nn.functional.layer_norm(xs, (m,), gamma, beta, eps=1e-5), atol=1e-4)))
    xr = rnd(s["sum"])
    out = torch.zeros(1, device=dev)
    nr = xr.numel()

    def run_sum():
        out.zero_()
        sum_kernel[(triton.cdiv(nr, 4096),)](xr, out, nr, BLOCK=4096)

    cases.append(("sum_all", run_sum,
                  lambda: torch.allclose(out, xr.double().sum().float(), rtol=1e-4, atol=1e-2)))

    rows = []
    for name, fn, check in cases:
        try:
            fn()
            torch.cuda.synchronize()
            ok = bool(check())
            t = time_ms(fn)
            ms = t["ms"]
            gbs = bytes_moved(name, s) / (ms * 1e6)
            note = "" if name != "sum_all" else "includes zeroing the output"
            rows.append({"kernel": name, "ms": ms, "ms_min": t["ms_min"], "ms_max": t["ms_max"],
                         "gbs": gbs, "ok": ok, "note": note})
            print(f"{name:<14} {ms:10.4f} ms {gbs:9.1f} GB/s {'ok' if ok else 'MISMATCH'}")
        except Exception as e:
            rows.append({"kernel": name, "ms": None, "gbs": None, "ok": False, "note": f"failed: {e}"})
            print(f"{name:<14} failed: {e}", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump({"triton": triton.__version__, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
