"""Merges a GPU bundle run into RESULTS_DIR/results.json, results.md and
chart.png (when matplotlib is importable). Reads steps.tsv (written by
run.sh), environment.txt, diff.json, bench.json, torch.json, triton.json
and the example's log — whichever exist: run.sh calls it from an exit
trap, so after a hang or a kill some are partial (`"complete": false`)
or missing, and every table is built from the rows there are. Exits 1
when any step failed or timed out.

    python3 report.py RESULTS_DIR [SECONDS]
"""
import json
import os
import re
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def steps(out):
    rows = []
    try:
        with open(os.path.join(out, "steps.tsv")) as f:
            for line in f:
                name, status, secs, note = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
                rows.append({"step": name, "status": status, "seconds": int(secs or 0), "note": note})
    except OSError:
        pass
    return rows


def pct(a, b):
    return None if a is None or b is None or b == 0 else 100.0 * a / b


def fmt(x, spec=".1f"):
    return "–" if x is None else format(x, spec)


def spread(r):
    """A row's fastest and slowest sample, as text (empty without them)."""
    if r.get("ms_min") is None or r.get("ms_max") is None:
        return ""
    return f" ({r['ms_min']:.4f}–{r['ms_max']:.4f})"


def is_gemm(r):
    """A matrix-product row (`bf16_gemm_4096`, `f8_gemm_8192`): reported by
    its rate, in the GEMM table, even when skipped or failed."""
    return r.get("tflops") is not None or re.search(r"_gemm_\d+$", r["kernel"]) is not None


def benchmarks(bench, torch, triton):
    """One row per kernel that any system measured: a row of torch or
    Triton stands even when Phobos's step died before reaching it."""
    by = lambda doc: {r["kernel"]: r for r in (doc or {}).get("rows", [])}
    b, t, tr = by(bench), by(torch), by(triton)
    kernels = list(b) + [k for k in list(t) + list(tr) if k not in b]
    kernels = list(dict.fromkeys(kernels))
    rows = []
    for k in kernels:
        r = b.get(k, {"kernel": k, "ok": False, "error": "no Phobos row (the bench step did not reach it)"})
        tg, trg = t.get(k, {}).get("gbs"), tr.get(k, {}).get("gbs")
        # Compute-bound rows (the GEMMs) are compared by their rate.
        tf, ttf = r.get("tflops"), t.get(k, {}).get("tflops")
        rows.append({
            "kernel": k,
            "shape": r.get("shape"),
            "ms": r.get("ms"),
            "ms_min": r.get("ms_min"),
            "ms_max": r.get("ms_max"),
            "gbs": r.get("gbs"),
            "pct_copy": r.get("pct_copy"),
            "check": ("skipped: " + r["skipped"]) if r.get("skipped") else "ok" if r.get("ok") else ("MISMATCH" if "ms" in r else "failed: " + str(r.get("error"))),
            "torch_op": t.get(k, {}).get("op"),
            "torch_ms": t.get(k, {}).get("ms"),
            "torch_spread": spread(t.get(k, {})),
            "torch_gbs": tg,
            "pct_torch": pct(tf, ttf) if tf is not None else pct(r.get("gbs"), tg),
            "tflops": tf,
            "torch_tflops": ttf,
            "torch_note": t.get(k, {}).get("note"),
            "triton_ms": tr.get(k, {}).get("ms"),
            "triton_gbs": trg,
            "triton_ok": tr.get(k, {}).get("ok"),
            "pct_triton": pct(r.get("gbs"), trg),
        })
    return rows


def differential(diff):
    if diff is None:
        return None
    per = {}
    for r in diff.get("records", []):
        key = (r["case"], r["variant"])
        row = per.setdefault(key, {"case": r["case"], "variant": r["variant"], "runs": 0, "max_ulps": 0.0,
                                   "explanation": "identical", "ok": True, "causes": r["causes"]})
        row["runs"] += 1
        u = r.get("max_ulps")
        if not r["ok"]:
            row["ok"] = False
            row["explanation"] = r["explanation"]
            row["max_ulps"] = None if u is None else max(u, row["max_ulps"] or 0.0)
        elif row["ok"] and u is not None and u >= (row["max_ulps"] or 0.0):
            row["max_ulps"] = u
            if r["explanation"] != "identical":
                row["explanation"] = r["explanation"]
    return {
        "pass": diff.get("pass"),
        "complete": diff.get("complete", True),
        "device": diff.get("device"),
        "seeds": diff.get("seeds"),
        "failed": diff.get("failed"),
        "variants_not_run": diff.get("variants_not_run"),
        "failures_saved_in": diff.get("failures_saved_in"),
        "kernels": sorted(per.values(), key=lambda x: (x["case"], x["variant"])),
    }


def short_refusal(text):
    """`the sm_86 cubin of `x.pho`: CUDA_ERROR_..: words` as `sm_86 cubin
    (CUDA_ERROR_..)`; anything else as it is."""
    m = re.match(r"the (sm_\d+ \w+) of `[^`]*`: (\w+)", text)
    return f"{m.group(1)} ({m.group(2)})" if m else text


def image_rows(images):
    """One row per (kernel, entry) of a bench.json/diff.json `images` list."""
    rows = []
    for i in images or []:
        entries = i.get("entries") or [{}]
        for e in entries:
            rows.append({
                "kernel": i.get("kernel"), "module": i.get("module"), "image": i.get("image"),
                "refused": i.get("refused") or [], "jit_log": (i.get("jit_log") or "").strip(),
                "entry": e.get("entry"), "threads": e.get("threads"), "registers": e.get("registers"),
                "static_shared_bytes": e.get("static_shared_bytes"),
                "dynamic_shared_bytes": e.get("dynamic_shared_bytes"), "ctas_per_sm": e.get("ctas_per_sm"),
            })
    return rows


def images_markdown(res):
    out = ["## Loaded images and occupancy", ""]
    bench = res.get("images", {}).get("bench") or []
    if not bench:
        out += ["No image was recorded (no bench.json with images, or the simulator backend).", ""]
    else:
        out += ["What the driver loaded for each benchmark kernel (`cubin sm_X`, or `ptx sm_X`: the PTX, "
                "JIT-compiled) and each entry's resources, from the driver:", "",
                "| kernel | entry | image | threads | registers | static shared B | dynamic shared B | CTAs/SM | refused first |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in bench:
            out.append(f"| {r['kernel']} | {r['entry'] or '–'} | {r['image']} | {fmt(r['threads'], 'd')} | "
                       f"{fmt(r['registers'], 'd')} | {fmt(r['static_shared_bytes'], 'd')} | "
                       f"{fmt(r['dynamic_shared_bytes'], 'd')} | {fmt(r['ctas_per_sm'], 'd')} | "
                       f"{'; '.join(short_refusal(x) for x in r['refused']) or '–'} |")
        logs = [f"- {r['kernel']}: {r['jit_log']}" for r in bench if r["jit_log"]]
        if logs:
            out += ["", "JIT logs:", ""] + logs
        out.append("")
    diff = res.get("images", {}).get("diff") or []
    if diff:
        kinds = {}
        for r in diff:
            kinds[r["image"]] = kinds.get(r["image"], 0) + 1
        out += ["Differential check: " + ", ".join(f"{n} entries from {k}" for k, n in sorted(kinds.items()))
                + " (phobos-diff compiles the corpus at run time and loads its PTX).", ""]
        refused = [r for r in diff if r["refused"]]
        for r in refused:
            out.append(f"- {r['kernel']}: refused first: {'; '.join(r['refused'])}")
    return out


def markdown(res):
    out = ["# Phobos GPU bundle results", ""]
    env = res.get("environment", "")
    out += ["```", env.strip(), "```", ""]
    out += ["## Steps", "", "| step | status | seconds | note |", "|---|---|---|---|"]
    for s in res["steps"]:
        out.append(f"| {s['step']} | {s['status']} | {s['seconds']} | {s['note']} |")
    out.append("")
    b = res.get("benchmarks") or []
    out += ["## Benchmarks", ""]
    if res.get("bench_meta"):
        m = res["bench_meta"]
        out += [f"Device {m.get('device')}, timing: {m.get('timing')}, median of {m.get('runs')}; "
                f"copy ceiling {fmt(m.get('copy_gbs'))} GB/s; driver library {m.get('libcuda') or 'none'}.", ""]
        if m.get("complete") is False:
            out += ["**Partial**: phobos-bench stopped before its last row (see the bench step); "
                    "the rows below are those it measured.", ""]
    out += ["| kernel | shape | Phobos ms | GB/s | % copy | torch GB/s | % torch | Triton GB/s | % Triton | check |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in b:
        if is_gemm(r):
            continue
        out.append(
            f"| {r['kernel']} | {r['shape']} | {fmt(r['ms'], '.4f')}{spread(r)} | {fmt(r['gbs'])} | {fmt(r['pct_copy'])} | "
            f"{fmt(r['torch_gbs'])} | {fmt(r['pct_torch'])} | {fmt(r['triton_gbs'])} | {fmt(r['pct_triton'])} | {r['check']} |")
    gemms = [r for r in b if is_gemm(r)]
    if gemms:
        out += ["", "Matrix products on tensor cores (compute-bound: TFLOP/s = 2·M·N·K / time), all "
                "accumulating in f32. bf16_gemm against torch.matmul (cuBLAS), which writes C as bf16 "
                "(2 bytes per element) where Phobos writes f32 (4), so cuBLAS stores half the bytes of C; "
                "f8_gemm (f8e4m3 operands, A · Wᵀ) against torch._scaled_mm (cuBLASLt's FP8 GEMM, unit "
                "scales, f32 output, no fast accumulation), both writing f32. The FP8 rows need "
                "compute capability 8.9 or newer:", "",
                "| kernel | shape | Phobos ms | TFLOP/s | C (Phobos / torch) | torch ms | torch TFLOP/s | "
                "% torch | check |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in gemms:
            c = "f32 / f32" if r["kernel"].startswith("f8_") else "f32 / bf16"
            out.append(
                f"| {r['kernel']} | {r['shape'] or '–'} | {fmt(r['ms'], '.4f')}{spread(r)} | {fmt(r['tflops'])} | "
                f"{c} | {fmt(r['torch_ms'], '.4f')}{r['torch_spread']} | {fmt(r['torch_tflops'])} | "
                f"{fmt(r['pct_torch'])} | {r['check']} |")
    notes = [f"- {r['kernel']}: torch: {r['torch_note']}" for r in b if r.get("torch_note")]
    notes += [f"- {r['kernel']}: the Triton kernel missed torch's result" for r in b if r.get("triton_ok") is False]
    out += [""] + notes + [""]
    d = res.get("differential")
    out += ["## Differential check (simulator against the device)", ""]
    if d is None:
        out += ["No diff.json: the step did not finish.", ""]
    else:
        verdict = "PASS" if d["pass"] else ("INCOMPLETE" if d.get("complete") is False else "FAIL")
        out += [f"**{verdict}** on {d['device']}, seeds {d['seeds']}. "
                f"Failing cases are saved in `{d['failures_saved_in']}`.", ""]
        if d.get("complete") is False:
            out += ["phobos-diff stopped before its last case (see the diff step); the rows below are "
                    "the cases it finished.", ""]
        out += ["| case | variant | runs | max floored ulps | explanation |", "|---|---|---|---|---|"]
        for k in d["kernels"]:
            out.append(f"| {k['case']} | {k['variant']} | {k['runs']} | {fmt(k['max_ulps'])} | "
                       f"{'' if k['ok'] else 'FAIL: '}{k['explanation']} |")
        for f in d.get("failed") or []:
            out.append(f"\n- FAILED {f['case']} (seed {f['seed']}): {f['why']}")
        for v in d.get("variants_not_run") or []:
            out.append(f"\n- variant {v['variant']} of {v['kernel']} never ran")
    out.append("")
    out += images_markdown(res)
    out.append("")
    out.append(res.get("chart_note", ""))
    return "\n".join(out) + "\n"


def chart(res, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "No chart: matplotlib is not importable."
    rows = [r for r in res.get("benchmarks") or []
            if r["kernel"] != "copy_dtod" and r.get("gbs") and r.get("tflops") is None]
    if not rows:
        return "No chart: no benchmark row has a time."
    names = [r["kernel"] for r in rows]
    series = [("Phobos", "gbs"), ("torch", "torch_gbs"), ("Triton", "triton_gbs")]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.27
    for i, (label, key) in enumerate(series):
        ax.bar([j + (i - 1) * width for j in range(len(rows))], [r.get(key) or 0 for r in rows], width, label=label)
    copy = (res.get("bench_meta") or {}).get("copy_gbs")
    if copy:
        ax.axhline(copy, color="black", linestyle="--", linewidth=1, label=f"device copy {copy:.0f} GB/s")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(names, rotation=20)
    ax.set_ylabel("GB/s (minimum bytes moved / time)")
    m = res.get("bench_meta") or {}
    ax.set_title(f"Phobos GPU bundle: {m.get('device', '?')}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return "Chart: chart.png."


def main():
    out = sys.argv[1]
    bench = load(os.path.join(out, "bench.json"))
    res = {
        "seconds": int(sys.argv[2]) if len(sys.argv) > 2 else None,
        "steps": steps(out),
    }
    try:
        with open(os.path.join(out, "environment.txt")) as f:
            res["environment"] = f.read()
    except OSError:
        res["environment"] = ""
    status = {s["step"]: s["status"] for s in res["steps"]}
    res["example"] = {"ok": status.get("example") == "ok"}
    res["gpu_tests"] = [s for s in res["steps"] if s["step"].startswith("gpu")]
    diff = load(os.path.join(out, "diff.json"))
    res["differential"] = differential(diff)
    res["images"] = {"bench": image_rows((bench or {}).get("images")),
                     "diff": image_rows((diff or {}).get("images"))}
    if res["differential"] is not None:
        res["differential"]["ok"] = status.get("diff") == "ok" and bool(res["differential"]["pass"])
    if bench:
        res["bench_meta"] = {k: v for k, v in bench.items() if k not in ("rows", "images")}
    res["benchmarks"] = benchmarks(bench, load(os.path.join(out, "torch.json")),
                                   load(os.path.join(out, "triton.json")))
    res["chart_note"] = chart(res, os.path.join(out, "chart.png"))
    res["ok"] = all(s["status"] in ("ok", "skipped") for s in res["steps"])
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=2)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(markdown(res))
    print(res["chart_note"])
    print("steps: " + ", ".join(f"{s['step']} {s['status']}" for s in res["steps"]))
    print(f"results: {os.path.join(out, 'results.md')}")
    sys.exit(0 if res["ok"] else 1)


if __name__ == "__main__":
    main()
