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

from shapes import GEMMS, bytes_moved, flops, gemm_shape, setup, time_ms




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

    rows = [{
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
