#!/usr/bin/env python3
"""What `phobos profile` costs over plain `phobos sim` on the same launch.

Runs three kernels of the corpus at simulation sizes a user would profile
(a matvec, a shared-tile transpose and a CTA reduction), each several
times, and prints a Markdown table of median wall times:

- `phobos sim --threads 1` (plain simulation on one host thread),
- `phobos sim` (plain simulation on every core, the default),
- `phobos profile --format json` (every CTA counted),

and the ratios. Both commands compile the kernel, bind the same .npy
inputs and run every CTA with the simulator's checks on; `sim` also writes
its outputs. ptxas is hidden from `profile` (PHOBOS_PTXAS, CUDA_PATH and
CUDA_HOME unset, PATH without a ptxas) so its register query does not
count.

Usage: scripts/profile-overhead.py [PHOBOS_BINARY] [--runs N]
(default binary: target/release/phobos; build it with
`cargo build --release -p phobos-cli`). docs/benchmarks.md records the
numbers.
"""

import argparse
import array
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_npy(path, shape, rng):
    """A little-endian f32 .npy of the given shape with values in [-1, 1)."""
    n = 1
    for d in shape:
        n *= d
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % dims
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    data = array.array("f", (rng.uniform(-1.0, 1.0) for _ in range(n)))
    if sys.byteorder != "little":
        data.byteswap()
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00")
        f.write(len(header).to_bytes(2, "little"))
        f.write(header.encode("latin1"))
        f.write(data.tobytes())


# (file, kernel, grid, {tensor: shape}, description)
KERNELS = [
    (
        "tests/in/lanes_matvec.pho",
        "lanes_matvec",
        "1024",
        {"W": [4096, 1024], "x": [1, 1024], "y": [1, 4096]},
        "lanes_matvec, N = 4096, K = 1024: 1024 CTAs x 128 threads",
    ),
    (
        "tests/in/tile_transpose.pho",
        "tile_transpose",
        "32,32",
        {"A": [1024, 1024], "B": [1024, 1024]},
        "tile_transpose, 1024 x 1024: 32 x 32 CTAs x 256 threads",
    ),
    (
        "tests/in/row_sum.pho",
        "row_sum",
        "1024",
        {"A": [1024, 1024], "y": [1, 1024]},
        "row_sum (CTA reduction), 1024 x 1024: 1024 CTAs x 256 threads",
    ),
]


def env_without_ptxas():
    env = dict(os.environ)
    for k in ("PHOBOS_PTXAS", "CUDA_PATH", "CUDA_HOME"):
        env.pop(k, None)
    path = [p for p in env.get("PATH", "").split(os.pathsep)
            if p and not os.path.exists(os.path.join(p, "ptxas"))]
    env["PATH"] = os.pathsep.join(path)
    return env


def timed(cmd, env):
    start = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr.decode(errors="replace")))
    return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("phobos", nargs="?", default=os.path.join(ROOT, "target/release/phobos"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    env = env_without_ptxas()
    rng = random.Random(1)
    scratch = tempfile.mkdtemp(prefix="phobos-overhead-")
    try:
        print("load average before: %.2f %.2f %.2f" % os.getloadavg())
        print()
        print("| kernel | sim, 1 thread | sim, all cores | profile | profile / sim 1 thread | profile / sim all cores |")
        print("|---|---|---|---|---|---|")
        for src, kernel, grid, shapes, what in KERNELS:
            binds = []
            for name, shape in shapes.items():
                path = os.path.join(scratch, "%s_%s.npy" % (kernel, name))
                write_npy(path, shape, rng)
                binds.append("%s=%s" % (name, path))
            out = os.path.join(scratch, "out")
            common = [os.path.join(ROOT, src), "--kernel", kernel, "--grid", grid, "--arch", "sm_80"]
            sim = [args.phobos, "sim"] + common + binds + ["--out", out]
            prof = [args.phobos, "profile"] + common + ["--format", "json", "-o",
                                                        os.path.join(scratch, "p.json")] + binds
            times = {"sim1": [], "simall": [], "prof": []}
            for _ in range(args.runs):
                # Interleaved, so a change in the machine's load hits all three.
                times["sim1"].append(timed(sim + ["--threads", "1"], env))
                times["simall"].append(timed(sim, env))
                times["prof"].append(timed(prof, env))
            m = {k: statistics.median(v) for k, v in times.items()}
            print("| %s | %.2f s | %.2f s | %.2f s | %.2f× | %.2f× |" % (
                what, m["sim1"], m["simall"], m["prof"],
                m["prof"] / m["sim1"], m["prof"] / m["simall"]))
            sys.stdout.flush()
        print()
        print("load average after: %.2f %.2f %.2f; median of %d runs; %d CPUs" % (
            os.getloadavg() + (args.runs, os.cpu_count())))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
