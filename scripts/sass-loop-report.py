#!/usr/bin/env python3
"""What a tensor-core kernel's main loop costs in SASS (issue 30), no GPU needed.

Builds the GPU bundle's bf16 GEMM (crates/phobos-gpucheck/kernels/bf16_gemm.pho)
and the `dot` kernels of tests/in (mma_gemm_*.pho, mma_attention_scores.pho)
with this repository's CLI (`phobos build`), assembles each kernel with ptxas
(`-v`: registers, stack, spills, static shared memory) and disassembles the
cubin (nvdisasm -c, or cuobjdump -sass). The hand-written CUDA C reference
GEMM of the same tile (crates/phobos-sim/tests/ptx/gemm/, compiled by nvrtc:
scripts/nvrtc-fixtures.py gemm) is the last row of each table.

The main loop is the innermost loop containing a tensor-core instruction: a
backward branch `BRA` at address b to a target t <= b spans the loop [t, b];
of the spans holding an HMMA/IMMA, the shortest is taken.

Issued instructions per trip are counted along the steady-state path of one
trip: from the loop's first instruction, a predicated forward branch falls
through (Phobos and nvcc put the ragged-edge arm and the "nothing left to
prefetch" skip behind one), an unpredicated `BRA` is followed, and the walk
ends at the backward branch (counted). A loop inside the main loop (a
copy loop) is walked once: the SASS does not say how many trips it makes,
so such a row's issued count is a lower bound, marked ">=", and "inner"
says how many loops the main loop holds (a loop on a path the walk skips,
such as the edge arm's copy loop, leaves the count exact). Predicated-off instructions still
issue, so they count; "filler" says how many of the issued are ptxas's
never-true `@!PT ...` padding (three `@!PT LDS RZ, [RZ]` before each
LDGSTS) and NOPs, for comparing with counts that leave them out. Loop
length is the static number of instructions [t, b].

Tensor-core work is normalised to HMMA.16816 (m16n8k16, 2048 MACs): an MMA
mnemonic's shape digits give m, n, k (HMMA.16816 -> 16x8x16 counts 1,
HMMA.1688 -> 16x8x8 counts 1/2, IMMA.16832 -> 16x8x32 counts 2,
IMMA.8816 -> 8x8x16 counts 1/2). "instr/HMMA" is issued instructions per
HMMA.16816-equivalent; "TC share" is tensor-core instructions (as issued,
unweighted) over issued instructions.

CTAs per SM are computed as phobos_profile::occupancy (the owner of that
formula: cudaOccMaxActiveBlocksPerMultiprocessor of CUDA 12.9's
cuda_occupancy.h) computes them, and tests/tests/sass_report.rs holds the two
to the same answers. The least of (sm_80 and sm_90 alike but for S):
  registers: per warp R = ceil(regs * 32 / 256) * 256 (65536 registers per SM
             in 4 sub-partitions, allocated per warp in units of 256);
             CTAs = floor(4 * floor(16384 / R) / warps per CTA)
  warps:     floor(64 / warps per CTA) (2048 threads per SM), and at most 32 CTAs
  shared:    floor(S / A), A = ceil((smem per CTA + 1024) / 128) * 128 (the
             driver reserves 1 KB per CTA), S = 167936 (164 KB, sm_80) or
             233472 (228 KB, sm_90)
  (smem per CTA is ptxas's static `smem` plus the dynamic bytes Phobos's
   .ron gives an entry whose PTX declares its buffer `.extern .shared`)

Tools: PHOBOS_PTXAS, PHOBOS_NVDISASM, PHOBOS_CUOBJDUMP (each an error when
set to a missing file), else `ptxas` / `nvdisasm` / `cuobjdump` on PATH or
in $CUDA_PATH/bin, $CUDA_HOME/bin. cuobjdump -sass itself runs nvdisasm
(found through NVDISASM_PATH, set from PHOBOS_NVDISASM when given). The
script installs nothing; see docs/benchmarks.md for where the tools come
from. Exits 2 with a message when a tool is missing.

    scripts/sass-loop-report.py                      # both arches, all kernels, table
    scripts/sass-loop-report.py --arch sm_90 --json  # machine-readable
    scripts/sass-loop-report.py --kernel bf16_gemm --breakdown
    scripts/sass-loop-report.py --json > before.json   # then, after a change:
    scripts/sass-loop-report.py --against before.json  # before -> after
"""
import argparse
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUNDLE_GEMM = ROOT / "crates/phobos-gpucheck/kernels/bf16_gemm.pho"
REFERENCE_DIR = ROOT / "crates/phobos-sim/tests/ptx/gemm"
REFERENCE_NAME = "gemm_bf16_128x128x32"
REFERENCE_LABEL = "reference: hand CUDA C (nvrtc)"

REGS_PER_SUBPARTITION = 16384
SUBPARTITIONS = 4
REG_ALLOC_UNIT = 256  # registers per warp, allocation granularity
MAX_THREADS_PER_SM = 2048
MAX_CTAS_PER_SM = 32
SHARED_PER_SM = {"sm_80": 164 * 1024, "sm_90": 228 * 1024, "sm_90a": 228 * 1024}
SHARED_RESERVE_PER_CTA = 1024
SHARED_UNIT = 128

TENSOR_OPS = ("HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA")


class ToolMissing(Exception):
    pass


def default_kernels():
    return [BUNDLE_GEMM] + sorted((ROOT / "tests/in").glob("mma_gemm_*.pho")) + [
        ROOT / "tests/in/mma_attention_scores.pho"
    ]


def find_tool(env_var, name):
    """The tool named by env_var (an error if it names no file), else on
    PATH, else in $CUDA_PATH/bin or $CUDA_HOME/bin; None if nowhere."""
    named = os.environ.get(env_var)
    if named:
        if not pathlib.Path(named).is_file():
            raise ToolMissing(f"{env_var}={named} is not a file")
        return named
    found = shutil.which(name)
    if found:
        return found
    for var in ("CUDA_PATH", "CUDA_HOME"):
        root = os.environ.get(var)
        if root and (pathlib.Path(root) / "bin" / name).is_file():
            return str(pathlib.Path(root) / "bin" / name)
    return None


def run(cmd, env=None, what=None, cwd=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if p.returncode != 0:
        sys.exit(f"{what or cmd[0]} failed ({p.returncode}): {' '.join(map(str, cmd))}\n{p.stderr}{p.stdout}")
    return p


# ---------------------------------------------------------------- PTX side


def ptx_entries(ptx):
    """entry name -> (threads per CTA or None, whether its buffer is .extern .shared)."""
    out = {}
    for m in re.finditer(r"\.entry\s+(\S+?)\s*\((.*?)\)\s*(.*?)\{", ptx, re.S):
        name, directives = m.group(1), m.group(3)
        t = re.search(r"\.(?:reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", directives)
        threads = None
        if t:
            threads = math.prod(int(x) for x in t.groups() if x)
        out[name] = threads
    externs = set(re.findall(r"\.extern\s+\.shared\s+[^;]*?(\S+?)\$smem\[\]", ptx))
    return {n: (t, n in externs) for n, t in out.items()}


def ron_shared(ron_text):
    """entry -> shared_bytes from a Phobos .ron (one per variant)."""
    out = {}
    for m in re.finditer(r'entry:\s*"([^"]+)".*?shared_bytes:\s*(\d+)', ron_text, re.S):
        out[m.group(1)] = int(m.group(2))
    return out


def ptxas_info(text):
    """function -> {registers, stack, spill_stores, spill_loads, smem} from ptxas -v."""
    out = {}
    cur = None
    for line in text.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([^' ]+)'?", line)
        if m:
            cur = out.setdefault(m.group(1), {"registers": 0, "stack": 0, "spill_stores": 0, "spill_loads": 0, "smem": 0})
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            cur["stack"], cur["spill_stores"], cur["spill_loads"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            cur["registers"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            cur["smem"] = int(s.group(1)) if s else 0
    return out


# ---------------------------------------------------------------- SASS side

INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def split_functions(sass):
    """function name -> its lines (nvdisasm -c: `.text.NAME:`; cuobjdump: `Function : NAME`)."""
    funcs, cur = {}, None
    for line in sass.splitlines():
        m = re.match(r"\s*\.text\.(\S+):\s*$", line) or re.match(r"\s*Function\s*:\s*(\S+)", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        if cur is not None:
            cur.append(line)
    return funcs


def parse_insns(lines):
    """[(address, guard, opcode, operands)] and label -> address."""
    insns, labels, pending = [], {}, []
    for line in lines:
        s = line.strip()
        lm = re.match(r"^(\.L_\w+):", s)
        if lm:
            pending.append(lm.group(1))
            continue
        m = INSN.search(line)
        if not m:
            continue
        addr = int(m.group(1), 16)
        for lab in pending:
            labels[lab] = addr
        pending = []
        text = m.group(2).strip()
        guard = None
        if text.startswith("@"):
            guard, text = text.split(None, 1)
        parts = text.split(None, 1)
        insns.append((addr, guard, parts[0], parts[1] if len(parts) > 1 else ""))
    return insns, labels


def branch_target(operands, labels):
    m = re.search(r"`\((\.L_\w+)\)", operands)
    if m:
        return labels.get(m.group(1))
    m = re.search(r"(?:^|[ ,])0x([0-9a-f]+)\s*$", operands)
    return int(m.group(1), 16) if m else None


def is_branch(op):
    return op == "BRA" or op.startswith("BRA.")


def mma_weight(op):
    """HMMA.16816-equivalents of one tensor-core instruction, or None."""
    base = op.split(".")[0]
    if base not in TENSOR_OPS:
        return None
    if base.endswith("GMMA"):
        # A warpgroup MMA (HGMMA.64x128x16): each of the warpgroup's four
        # warps issues it and does a quarter of its m x n x k.
        g = re.match(r"[A-Z]+\.(\d+)x(\d+)x(\d+)", op)
        if not g:
            return None
        mm, n, k = (int(x) for x in g.groups())
        return (mm // 4) * n * k / 2048
    m = re.match(r"[A-Z]+\.(\d+)", op)
    if not m:
        return None
    digits = m.group(1)
    mm, rest = (16, digits[2:]) if digits.startswith("16") else (8, digits[1:])
    if not rest.startswith("8"):
        return None
    n, k = 8, int(rest[1:])
    return mm * n * k / 2048


# Instructions one thread issues for the whole CTA: a TMA copy and its
# mbarrier arrival. A predicated branch around them is the issuing thread's
# test; the steady-state walk takes it (the path of the CTA's other warps)
# and counts the skipped region once per trip, for the issuing warp.
ISSUE_OPS = ("UTMALDG", "UBLKCP", "SYNCS.ARRIVE")


def analyze(lines, threads=None):
    insns, labels = parse_insns(lines)
    index = {a: i for i, (a, *_rest) in enumerate(insns)}
    loops = []
    for i, (addr, guard, op, operands) in enumerate(insns):
        if is_branch(op):
            t = branch_target(operands, labels)
            if t is not None and t <= addr and t in index:
                loops.append((index[t], i))
    tensor_ops = sorted({op for _, _, op, _ in insns if op.split(".")[0] in TENSOR_OPS})
    unknown = [op for op in tensor_ops if mma_weight(op) is None]
    if unknown:
        raise ValueError(f"tensor-core mnemonic(s) {', '.join(unknown)} have no HMMA.16816 weight here")
    with_mma = [(h, b) for h, b in loops if any(insns[j][2].split(".")[0] in TENSOR_OPS for j in range(h, b + 1))]
    res = {
        "tensor_mnemonics": tensor_ops,
        "local_insns": sum(1 for _, _, op, _ in insns if op.split(".")[0] in ("LDL", "STL")),
        "loop": None,
    }
    if not with_mma:
        return res
    head, back = min(with_mma, key=lambda hb: (hb[1] - hb[0], hb[0]))
    path, i, seen, filler = [], head, set(), 0
    regions = []
    while True:
        if i in seen:
            raise ValueError(f"the steady-state walk came back to {insns[i][0]:#x} before the loop's end "
                             "(an inner loop closed by an unpredicated branch is not handled)")
        if not head <= i <= back:
            raise ValueError(f"the steady-state walk left the loop at {insns[min(i, len(insns) - 1)][0]:#x}")
        seen.add(i)
        addr, guard, op, operands = insns[i]
        path.append(op)
        if guard == "@!PT" or op == "NOP":
            filler += 1
        if i == back:
            break
        # Only a plain BRA with no predicate always jumps: BRA.DIV and the
        # like depend on the warp's convergence and fall through when it
        # is converged, the steady state.
        always = guard in (None, "@PT") and not re.match(r"!?U?P\d", operands)
        if op in ("BRA", "BRA.U") and not always and guard not in ("@!PT",):
            t = branch_target(operands, labels)
            j = index.get(t) if t is not None else None
            if j is not None and i < j <= back:
                skipped = [insns[x][2] for x in range(i + 1, j)]
                # The innermost such branch only: the one around the copies
                # of a trip past the loop's end also skips issue regions,
                # but the steady state runs them.
                if any(o.startswith(ISSUE_OPS) for o in skipped) and not any(is_branch(o) for o in skipped):
                    regions.append({"start": insns[i + 1][0], "length": len(skipped),
                                    "filler": sum(1 for o in skipped if o == "NOP")})
                    i = j
                    continue
        if op in ("BRA", "BRA.U") and always:
            t = branch_target(operands, labels)
            if t is None or t not in index:
                raise ValueError(f"branch at {addr:#x} has no target in the function")
            i = index[t]
        else:
            i += 1
    weights = [mma_weight(op) for op in path]
    tc = [w for w in weights if w is not None]
    hmma = sum(tc)
    hist = {}
    for op in path:
        hist[op] = hist.get(op, 0) + 1
    inner = sorted({(h, b) for h, b in loops if head <= h and b <= back and (h, b) != (head, back)})
    res["loop"] = {
        "start": insns[head][0],
        "end": insns[back][0],
        "length": back - head + 1,
        "issued": len(path),
        "filler": filler,
        "tensor_insns": len(tc),
        "hmma16816": hmma,
        "per_hmma": len(path) / hmma if hmma else None,
        "tensor_share": len(tc) / len(path),
        # Loops inside the main loop (a copy loop, say): the walk counts one
        # trip of each, and the SASS does not say how many trips they make,
        # so issued and per_hmma are then lower bounds.
        "inner_loops": [{"start": insns[h][0], "end": insns[b][0], "length": b - h + 1} for h, b in inner],
        # Only a loop the walk went through makes the count a lower bound:
        # one on a path the steady state skips (the ragged-edge arm's copy
        # loop) is not counted at all.
        "lower_bound": any(b in seen for _, b in inner),
        "mnemonics": hist,
        # One thread's TMA issue regions the walk skipped: each runs once a
        # trip, in one warp. With the CTA's warps known, per_hmma is the
        # CTA's average (every warp's walk plus the regions, over every
        # warp's work) and per_hmma_issuer the issuing warps' worst.
        "issue_regions": regions,
    }
    if regions and hmma:
        warps = max(1, (threads or 32) // 32)
        extra = sum(r["length"] for r in regions)
        res["loop"]["walk_per_hmma"] = len(path) / hmma
        res["loop"]["per_hmma"] = (warps * len(path) + extra) / (warps * hmma)
        res["loop"]["per_hmma_issuer"] = (len(path) + max(r["length"] for r in regions)) / hmma
    return res


# ---------------------------------------------------------------- occupancy


def round_up(v, unit):
    return -(-v // unit) * unit


def ctas_per_sm(arch, regs, threads, smem):
    """CTAs per SM and what limits them, as phobos_profile::occupancy says."""
    warps = math.ceil(threads / 32)
    limits = {}
    if regs:
        per_warp = round_up(regs * 32, REG_ALLOC_UNIT)
        if per_warp * round_up(warps, SUBPARTITIONS) > SUBPARTITIONS * REGS_PER_SUBPARTITION:
            limits["registers"] = 0
        else:
            limits["registers"] = SUBPARTITIONS * (REGS_PER_SUBPARTITION // per_warp) // warps
    limits["shared memory"] = SHARED_PER_SM[arch] // round_up(smem + SHARED_RESERVE_PER_CTA, SHARED_UNIT)
    limits["warps per SM"] = MAX_THREADS_PER_SM // 32 // warps
    limits["CTAs per SM"] = MAX_CTAS_PER_SM
    n = min(limits.values())
    return n, [k for k, v in limits.items() if v == n]


# ---------------------------------------------------------------- driver


def phobos_cli(args):
    if args.phobos:
        return args.phobos
    run(["cargo", "build", "-q", "-p", "phobos-cli", "--bin", "phobos"], what="cargo build -p phobos-cli", cwd=ROOT)
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return str(target / "debug" / "phobos")


def measure(ptx_path, cubin, arch, tools, dyn_shared, label, source):
    ptx = ptx_path.read_text()
    entries = ptx_entries(ptx)
    p = run([tools["ptxas"], "-v", f"-arch={arch}", str(ptx_path), "-o", str(cubin)], what="ptxas")
    info = ptxas_info(p.stderr + p.stdout)
    if tools["disasm"] == "nvdisasm":
        d = run([tools["nvdisasm"], "-c", str(cubin)], what="nvdisasm")
    else:
        env = dict(os.environ)
        if tools.get("nvdisasm"):
            env["NVDISASM_PATH"] = str(pathlib.Path(tools["nvdisasm"]).parent)
        d = run([tools["cuobjdump"], "-sass", str(cubin)], env=env, what="cuobjdump -sass")
    funcs = split_functions(d.stdout)
    rows = []
    for entry, (threads, extern) in entries.items():
        if entry not in funcs or entry not in info:
            sys.exit(f"{ptx_path}: entry {entry} missing from the ptxas or disassembler output")
        if threads is None:
            sys.exit(f"{ptx_path}: entry {entry} declares no .reqntid/.maxntid, so its CTA size is unknown")
        pi = info[entry]
        try:
            a = analyze(funcs[entry], threads)
        except ValueError as e:
            sys.exit(f"{ptx_path}: {entry} ({arch}): {e}")
        if extern and entry not in dyn_shared:
            sys.exit(f"{ptx_path}: {entry} declares its shared memory .extern (dynamic) and its size is unknown "
                     "here: pass the .pho file, whose .ron gives it, rather than --ptx")
        smem = pi["smem"] + (dyn_shared[entry] if extern else 0)
        ctas, limiter = ctas_per_sm(arch, pi["registers"], threads, smem)
        rows.append({
            "kernel": label or entry,
            "entry": entry,
            "source": str(source.relative_to(ROOT)) if source.is_relative_to(ROOT) else str(source),
            "arch": arch,
            "threads": threads,
            "registers": pi["registers"],
            "stack_bytes": pi["stack"],
            "spill_store_bytes": pi["spill_stores"],
            "spill_load_bytes": pi["spill_loads"],
            "local_insns": a["local_insns"],
            "smem_bytes": smem,
            "ctas_per_sm": ctas,
            "cta_limit": limiter,
            "tensor_mnemonics": a["tensor_mnemonics"],
            "loop": a["loop"],
        })
    return rows


def table(rows, breakdown):
    head = ["kernel", "arch", "thr", "regs", "local B", "smem B", "CTAs/SM", "loop len", "inner", "issued (filler)",
            "TC insns", "HMMA.16816", "instr/HMMA", "TC share"]
    body = []
    for r in rows:
        lp = r["loop"]
        local = r["stack_bytes"] + r["spill_store_bytes"]
        cells = [r["kernel"], r["arch"], r["threads"], r["registers"],
                 f"{local}" + (f" ({r['local_insns']} LDL/STL)" if r["local_insns"] else ""),
                 r["smem_bytes"], f"{r['ctas_per_sm']} ({'/'.join(r['cta_limit'])})"]
        if lp:
            ge = ">=" if lp["lower_bound"] else ""
            extra = sum(x["length"] for x in lp.get("issue_regions", []))
            issued = f"{ge}{lp['issued']}" + (f" +{extra}/CTA" if extra else "")
            cells += [lp["length"], len(lp["inner_loops"]), f"{issued} ({lp['filler']})", lp["tensor_insns"],
                      f"{lp['hmma16816']:g}", f"{ge}{lp['per_hmma']:.2f}", f"{100 * lp['tensor_share']:.0f}%"]
        else:
            cells += ["no loop with an MMA"] + [""] * 6
        body.append([str(c) for c in cells])
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)] if body else [len(h) for h in head]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(b, widths)) + " |" for b in body]
    if any(r["loop"] and r["loop"].get("issue_regions") for r in rows):
        out.append("")
        out.append("\"+N/CTA\": TMA issue regions (one thread's copies and mbarrier arrivals) the walk skipped, run by one "
                   "warp each trip; instr/HMMA is then the CTA's average over its warps (the issuing warps' worst is in "
                   "--breakdown and --json).")
    if any(r["loop"] and r["loop"]["lower_bound"] for r in rows):
        out.append("")
        out.append("Rows marked >= walked through a loop inside the main loop (\"inner\" counts them all), one trip each: lower bounds.")
    mnems = sorted({m for r in rows for m in r["tensor_mnemonics"]})
    out.append("")
    out.append("tensor-core mnemonics seen: " + (", ".join(f"{m} (x{mma_weight(m):g})" for m in mnems) or "none"))
    if breakdown:
        for r in rows:
            if r["loop"]:
                hist = sorted(r["loop"]["mnemonics"].items(), key=lambda kv: (-kv[1], kv[0]))
                out.append(f"\n{r['kernel']} {r['arch']} loop {r['loop']['start']:#x}..{r['loop']['end']:#x}: "
                           + ", ".join(f"{op} {n}" for op, n in hist))
                for x in r["loop"].get("issue_regions", []):
                    out.append(f"  TMA issue region at {x['start']:#x}: {x['length']} instructions, one warp a trip")
                if "per_hmma_issuer" in r["loop"]:
                    out.append(f"  instr/HMMA: CTA average {r['loop']['per_hmma']:.2f}, warps that issue no copy "
                               f"{r['loop']['walk_per_hmma']:.2f}, the issuing warps' worst {r['loop']['per_hmma_issuer']:.2f}")
    return "\n".join(out)


def compare(old_rows, rows):
    """A before/after table: rows matched by kernel and arch."""
    old = {(r["kernel"], r["arch"]): r for r in old_rows}

    def loop(r, key, fmt):
        lp = r["loop"] if r else None
        if not lp:
            return "-"
        ge = ">=" if lp["lower_bound"] and key in ("issued", "per_hmma") else ""
        return ge + fmt.format(lp[key])

    head = ["kernel", "arch", "regs", "CTAs/SM", "local B", "issued", "instr/HMMA", "TC share"]
    body = []
    for r in rows:
        o = old.get((r["kernel"], r["arch"]))

        def pair(f):
            return f"{f(o) if o else '-'} -> {f(r)}"

        body.append([
            r["kernel"], r["arch"],
            pair(lambda x: str(x["registers"])),
            pair(lambda x: str(x["ctas_per_sm"])),
            pair(lambda x: str(x["stack_bytes"] + x["spill_store_bytes"])),
            pair(lambda x: loop(x, "issued", "{}")),
            pair(lambda x: loop(x, "per_hmma", "{:.2f}")),
            pair(lambda x: loop(x, "tensor_share", "{:.0%}")),
        ])
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(b, widths)) + " |" for b in body]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=pathlib.Path, help=".pho files (default: the bundle's GEMM and tests/in's dot kernels)")
    ap.add_argument("--ptx", action="append", default=[], type=pathlib.Path,
                    help="also measure this PTX file (its .target gives the arch; static shared memory only)")
    ap.add_argument("--arch", default="sm_80,sm_90", help="comma-separated, of sm_80 and sm_90 (default both)")
    ap.add_argument("--kernel", help="only entries whose name contains this (and the reference rows)")
    ap.add_argument("--json", action="store_true", help="print JSON rows instead of the table")
    ap.add_argument("--against", type=pathlib.Path,
                    help="a --json report from before: print before -> after for each kernel and arch")
    ap.add_argument("--breakdown", action="store_true", help="also print each loop's mnemonic counts (one trip)")
    ap.add_argument("--no-reference", action="store_true", help="leave out the hand CUDA C reference row")
    ap.add_argument("--disasm", choices=("nvdisasm", "cuobjdump"), help="default: nvdisasm if found, else cuobjdump")
    ap.add_argument("--phobos", help="the phobos binary (default: cargo build -p phobos-cli, then target/debug/phobos)")
    args = ap.parse_args()
    arches = [a.strip() for a in args.arch.split(",") if a.strip()]
    bad = [a for a in arches if a not in SHARED_PER_SM]
    if bad:
        sys.exit(f"unsupported --arch {', '.join(bad)}: the occupancy limits here are for {', '.join(SHARED_PER_SM)}")
    try:
        tools = {"ptxas": find_tool("PHOBOS_PTXAS", "ptxas"),
                 "nvdisasm": find_tool("PHOBOS_NVDISASM", "nvdisasm"),
                 "cuobjdump": find_tool("PHOBOS_CUOBJDUMP", "cuobjdump")}
    except ToolMissing as e:
        print(f"sass-loop-report: {e}", file=sys.stderr)
        sys.exit(2)
    missing = []
    if not tools["ptxas"]:
        missing.append("ptxas (set PHOBOS_PTXAS)")
    tools["disasm"] = args.disasm or ("nvdisasm" if tools["nvdisasm"] else "cuobjdump")
    if not tools["nvdisasm"]:
        # cuobjdump -sass runs nvdisasm too, so neither works without it.
        missing.append("nvdisasm (set PHOBOS_NVDISASM)")
    if tools["disasm"] == "cuobjdump" and not tools["cuobjdump"]:
        missing.append("cuobjdump (set PHOBOS_CUOBJDUMP)")
    if missing:
        print("sass-loop-report: not found: " + ", ".join(missing) + "; see docs/benchmarks.md", file=sys.stderr)
        sys.exit(2)

    files = [f.resolve() for f in args.files] or ([] if args.ptx else default_kernels())
    for f in files + args.ptx:
        if not f.is_file():
            sys.exit(f"no such file: {f}")
    phobos = phobos_cli(args) if files else None
    rows = []
    with tempfile.TemporaryDirectory(prefix="sass-loop-report-") as tmp:
        tmp = pathlib.Path(tmp)
        for f in files:
            out = tmp / f.stem
            # (phobos build also writes cubins when it finds ptxas; this
            # script assembles the PTX again with -v, for the counts.)
            p = subprocess.run([phobos, "build", "--arch", ",".join(arches), "--out", str(out), str(f)],
                               capture_output=True, text=True)
            if p.returncode != 0 or not list(out.glob("*.ptx")):
                sys.exit(f"phobos build {f} failed ({p.returncode}):\n{p.stderr}{p.stdout}")
            dyn = {}
            for ron in out.glob("*.ron"):
                dyn.update(ron_shared(ron.read_text()))
            for arch in arches:
                for ptx in sorted(out.glob(f"*.{arch}.ptx")):
                    rows += measure(ptx, ptx.with_suffix(".cubin"), arch, tools, dyn, None, f)
        for i, ptx in enumerate(args.ptx):
            t = re.search(r"^\s*\.target\s+(sm_\d+a?)", ptx.read_text(), re.M)
            if not t or t.group(1) not in SHARED_PER_SM:
                sys.exit(f"{ptx}: its .target is not one of {', '.join(SHARED_PER_SM)}")
            rows += measure(ptx.resolve(), tmp / f"ptx{i}.cubin", t.group(1), tools, {}, None, ptx.resolve())
        if not args.no_reference:
            for arch in arches:
                ptx = REFERENCE_DIR / f"{REFERENCE_NAME}.{arch}.ptx"
                if not ptx.is_file():
                    sys.exit(f"reference PTX {ptx} missing: scripts/nvrtc-fixtures.py gemm writes it")
                rows += measure(ptx, tmp / f"reference.{arch}.cubin", arch, tools, {}, REFERENCE_LABEL, ptx)
    if args.kernel:
        rows = [r for r in rows if args.kernel in r["entry"] or r["kernel"] == REFERENCE_LABEL]
    rows.sort(key=lambda r: (r["kernel"].startswith("reference"), r["kernel"], r["arch"]))
    if args.json:
        print(json.dumps({"arches": arches, "rows": rows}, indent=1))
    elif args.against:
        try:
            old_rows = json.loads(args.against.read_text())["rows"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"--against {args.against}: not a --json report of this script ({e})")
        print(compare(old_rows, rows))
    else:
        print(table(rows, args.breakdown))


if __name__ == "__main__":
    main()
