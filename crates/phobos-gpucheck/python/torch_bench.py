"""torch equivalents of phobos-bench's kernels (cuBLAS/cuDNN-backed where
torch uses them), on the same shapes, timed as phobos-bench times its
own (shapes.time_ms: CUDA events around back-to-back calls after warm-up,
median and spread). Writes {"rows": [{"kernel", "ms", "ms_min", "ms_max",
"gbs", "op", "note"}]}.

    python3 torch_bench.py --out torch.json [--small]
"""
import json
import sys

import torch

from shapes import F8_GEMMS, GEMMS, bytes_moved, flops, gemm_shape, setup, time_ms


def scaled_mm_unavailable():
    """Why torch cannot run its FP8 GEMM here (None when it can):
    `torch._scaled_mm` needs float8_e4m3fn (torch 2.1+) and a GPU of
    compute capability 8.9 or newer."""
    if not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm"):
        return f"torch {torch.__version__} has no torch.float8_e4m3fn / torch._scaled_mm (2.1 or newer has)"
    cc = torch.cuda.get_device_capability(0)
    if cc < (8, 9):
        return f"torch._scaled_mm needs compute capability 8.9 or newer; this GPU is {cc[0]}.{cc[1]}"
    return None


def scaled_mm(a, w_t, one):
    """torch's FP8 GEMM, A · Wᵀ in f32: `_scaled_mm(a, b, scale_a, scale_b,
    bias=None, scale_result=None, out_dtype=None, use_fast_accum=False)`
    (torch 2.4+; 2.1–2.3 return a pair (out, amax)), with unit scales and
    `b` = Wᵀ, the column-major [K, N] view of the row-major W [N, K] that
    cuBLASLt asks for. No fast accumulation: f32 sums, as Phobos's."""
    out = torch._scaled_mm(a, w_t, scale_a=one, scale_b=one, out_dtype=torch.float32)
    return out[0] if isinstance(out, tuple) else out


def main():
    args, s, dev, rnd = setup(0)

    cases = []
    n = s["copy_bytes"] // 4
    src, dst = rnd(n), torch.empty(n, device=dev)
    cases.append(("copy_dtod", "dst.copy_(src)", lambda: dst.copy_(src), ""))
    n, k = s["matvec"]
    w, x = rnd(n, k), rnd(k)
    cases.append(("lanes_matvec", "torch.mv", lambda: torch.mv(w, x), ""))
    n2 = s["staged_rows"]
    w2, x2 = rnd(n2, 256), rnd(256)
    cases.append(("staged_matvec", "torch.mv", lambda: torch.mv(w2, x2), ""))
    n, k = s["f16"]
    wh, xh = rnd(n, k, dtype=torch.float16), rnd(k, dtype=torch.float16)
    cases.append(("f16_gemv", "torch.mv (f16)", lambda: torch.mv(wh, xh), "f16 output, Phobos writes f32"))
    n, m = s["rows"]
    xs = rnd(n, m)
    gamma, beta = rnd(m), rnd(m)
    cases.append(("row_softmax", "torch.softmax", lambda: torch.softmax(xs, dim=1), ""))
    cases.append((
        "layer_norm",
        "F.layer_norm",
        # `m=m`: the GEMM loop below sets `m` again (check_closures.py).
        lambda m=m: torch.nn.functional.layer_norm(xs, (m,), gamma, beta, eps=1e-5),
        "",
    ))
    xr = rnd(s["sum"])
    cases.append(("sum_all", "torch.sum", lambda: torch.sum(xr), ""))
    for name in GEMMS:
        m, n, k = gemm_shape(name, s)
        ga, gb = rnd(m, k, dtype=torch.bfloat16), rnd(k, n, dtype=torch.bfloat16)
        cases.append((
            name,
            "torch.matmul (bf16, cuBLAS)",
            lambda ga=ga, gb=gb: torch.matmul(ga, gb),
            "bf16 output (f32 accumulation), Phobos writes f32",
        ))

    note_f8 = scaled_mm_unavailable()
    skipped = []
    for name in F8_GEMMS:
        if note_f8 is not None:
            skipped.append({"kernel": name, "op": "torch._scaled_mm (FP8)", "ms": None, "gbs": None,
                            "note": "unavailable: " + note_f8})
            continue
        m, n, k = gemm_shape(name, s)
        fa = rnd(m, k).to(torch.float8_e4m3fn)
        # W is [N, K] row-major as Phobos's is; its transpose is the
        # column-major B that _scaled_mm takes.
        fw = rnd(n, k).to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device=dev)
        cases.append((
            name,
            "torch._scaled_mm (FP8 e4m3, cuBLASLt)",
            lambda fa=fa, fw=fw, one=one: scaled_mm(fa, fw.t(), one),
            "f32 output, unit scales, no fast accumulation",
        ))

    rows = skipped + [{
        "kernel": "i8_matvec",
        "op": None,
        "ms": None,
        "gbs": None,
        "note": "torch has no int8 matrix-vector product on CUDA (torch._int_mm needs M > 16)",
    }]
    for name, op, fn, note in cases:
        try:
            t = time_ms(fn)
            ms = t["ms"]
            gbs = bytes_moved(name, s) / (ms * 1e6)
            f = flops(name, s)
            tflops = None if f is None else f / (ms * 1e9)
            rows.append({"kernel": name, "op": op, "ms": ms, "ms_min": t["ms_min"], "ms_max": t["ms_max"],
                         "gbs": gbs, "tflops": tflops, "note": note})
            rate = f"{gbs:9.1f} GB/s" if tflops is None else f"{tflops:9.1f} TFLOP/s"
            print(f"{name:<14} {op:<16} {ms:10.4f} ms {rate}")
        except Exception as e:  # one failing op must not lose the others
            rows.append({"kernel": name, "op": op, "ms": None, "gbs": None, "note": f"failed: {e}"})
            print(f"{name:<14} failed: {e}", file=sys.stderr)
    info = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "rows": rows}
    with open(args.out, "w") as f:
        json.dump(info, f, indent=2)


if __name__ == "__main__":
    main()
