#!/usr/bin/env bash
# The GPU bundle's run (docs/gpu-bundle.md): needs only the NVIDIA driver
# and python3 (torch, Triton, matplotlib and ncu are used when present).
#
#   ./run.sh RESULTS_DIR [--small]
#
# Steps, each with its own budget (BUDGET_* below: 465 s in all, inside
# a 480 s whole-run deadline, so the run fits one 600 s command with room
# for the report); a failed or timed-out step does not stop the run, and
# the slow, optional steps come last:
#   1 device    device and driver info (nvidia-smi when present)
#   2 example   the example (seed page kernels against a CPU reference),
#               then examples/interop (cudarc buffers and stream, events,
#               a graph) and its launch-overhead table, when bundled
#   3 gpu-test  every `gpu_*` test of every test executable in tests/
#   4 diff      the differential check: simulator against the device
#   5 bench     phobos-bench, then torch and Triton equivalents when importable
#   6 ncu-*     Nsight Compute counters of two benchmark kernels, when ncu works
# then the report: RESULTS_DIR/results.json, results.md, chart.png
# (matplotlib permitting), log.txt and logs/STEP.log. The report runs from
# an exit trap, so a run killed from outside (SIGTERM, SIGINT) or stopped
# by its deadline still reports every row written so far: phobos-diff and
# phobos-bench rewrite their JSON after every row.
#
# --small runs tiny sizes and one differential seed: for the CUDA driver
# stand-in (scripts/with-fake-gpu.sh) or the simulator backend.
# Exits 0 when every step passed or was skipped, 1 otherwise.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
if [ "$#" -lt 1 ]; then
    echo "usage: $0 RESULTS_DIR [--small]" >&2
    exit 2
fi
OUT="$1"
SMALL=""
[ "${2:-}" = "--small" ] && SMALL=1
mkdir -p "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/log.txt"
STEPS="$OUT/steps.tsv"
: >"$LOG"
: >"$STEPS"
START=$(date +%s)

# Each step's budget in seconds (docs/gpu-bundle.md gives the expected
# time of each). The sum is at most 480: tests/bundle_script.rs checks it.
BUDGET_DEVICE=15
BUDGET_EXAMPLE=20
BUDGET_INTEROP=5
BUDGET_OVERHEAD=5
BUDGET_GPU_TESTS=45
BUDGET_DIFF=90
BUDGET_BENCH=90
BUDGET_TORCH=60
BUDGET_TRITON=75
BUDGET_NCU=60
# The whole run stops starting steps, and cuts the last one short, here.
DEADLINE=$(( START + ${PHOBOS_BUNDLE_DEADLINE_S:-480} ))

say() { echo "$*" | tee -a "$LOG"; }

# record NAME STATUS SECONDS NOTE
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$STEPS"; }

# The report, once, from whatever the steps wrote: on a normal end, on the
# deadline, or when the run is killed.
REPORTED=""
report() {
    local status=$?
    [ -n "$REPORTED" ] && return
    REPORTED=1
    say "run: $(( $(date +%s) - START ))s in all"
    python3 "$HERE/python/report.py" "$OUT" "$(( $(date +%s) - START ))" 2>&1 | tee -a "$LOG"
    local rstatus=${PIPESTATUS[0]}
    [ "$status" -eq 0 ] && status=$rstatus
    exit "$status"
}
trap report EXIT

# A signal stops the running step (its timeout passes it on), records it,
# and exits through the report.
CHILD="" CURRENT="" CURRENT_T0=""
on_signal() {
    if [ -n "$CHILD" ]; then
        kill -TERM "$CHILD" 2>/dev/null
        wait "$CHILD" 2>/dev/null
        record "$CURRENT" KILLED "$(( $(date +%s) - CURRENT_T0 ))" "the run was killed ($1) during this step"
    fi
    exit 1
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT

# step NAME BUDGET_S COMMAND...: runs it with its log in logs/NAME.log, for
# at most its budget and never past the deadline. The command runs in the
# background so that a signal reaches the trap at once.
step() {
    local name="$1" limit="$2"; shift 2
    local t0 status left
    t0=$(date +%s)
    left=$(( DEADLINE - t0 ))
    if [ "$left" -le 0 ]; then
        record "$name" TIMEOUT 0 "not started: the run's deadline had passed"
        say "== $name: not started (deadline)"
        return 0
    fi
    [ "$left" -lt "$limit" ] && limit=$left
    say "== $name (timeout ${limit}s): $*"
    CURRENT="$name" CURRENT_T0="$t0"
    timeout --kill-after=5 "$limit" "$@" >"$OUT/logs/$name.log" 2>&1 &
    CHILD=$!
    wait "$CHILD"
    status=$?
    CHILD=""
    tail -n 40 "$OUT/logs/$name.log" >>"$LOG"
    local secs=$(( $(date +%s) - t0 ))
    case $status in
        0) record "$name" ok "$secs" "" ;;
        124|137) record "$name" TIMEOUT "$secs" "killed after ${limit}s" ;;
        *) record "$name" FAILED "$secs" "exit status $status" ;;
    esac
    say "== $name: exit $status after ${secs}s"
    return 0
}

skip() { record "$1" skipped 0 "$2"; say "== $1: skipped ($2)"; }

py_has() { python3 -c "import $1" >/dev/null 2>&1; }

# The device under test. On the stand-in (scripts/with-fake-gpu.sh)
# PHOBOS_FAKE_GPU_LIB is set and there is no nvidia-smi.
export PHOBOS_BACKEND="${PHOBOS_BACKEND:-cuda}"
export PHOBOS_CORPUS_DIR="$HERE/corpus"
STAND_IN="${PHOBOS_FAKE_GPU_LIB:+yes}"

# 1. Device and driver.
if command -v nvidia-smi >/dev/null 2>&1; then
    step device "$BUDGET_DEVICE" sh -c 'nvidia-smi; echo; nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm,clocks.max.memory --format=csv'
else
    skip device "no nvidia-smi${STAND_IN:+ (running on the CUDA driver stand-in)}"
fi
{
    echo "uname: $(uname -a)"
    echo "glibc: $(ldd --version 2>&1 | head -1)"
    echo "python: $(python3 --version 2>&1)"
    for m in torch triton matplotlib; do
        if py_has "$m"; then echo "$m: $(python3 -c "import $m; print($m.__version__)" 2>&1)"; else echo "$m: not importable"; fi
    done
    echo "ncu: $(command -v ncu || echo none)"
    echo "ptxas: $(command -v ptxas || echo none)"
    echo "stand-in: ${STAND_IN:-no}"
    # The driver library the dynamic loader picks for libcuda.so.1 (as the
    # binaries' cudarc opens it), LD_LIBRARY_PATH included: the path and
    # the file it resolves to. bench.json's `libcuda` is the one
    # phobos-bench actually mapped.
    echo "libcuda: $(python3 -c '
import ctypes, os
try:
    ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print("not loadable:", e)
else:
    for line in open("/proc/self/maps"):
        p = line.split()[-1]
        if os.path.basename(p).startswith("libcuda.so"):
            print(p, "->", os.path.realpath(p))
            break
' 2>&1)"
} >"$OUT/environment.txt" 2>&1
cat "$OUT/environment.txt" >>"$LOG"

# 2. The example.
step example "$BUDGET_EXAMPLE" "$HERE/bin/phobos-example-matvec"
if [ -x "$HERE/bin/phobos-example-interop" ]; then
    step interop "$BUDGET_INTEROP" "$HERE/bin/phobos-example-interop"
else
    skip interop "not in this bundle"
fi
if [ -x "$HERE/bin/launch_overhead" ] && [ -n "$STAND_IN" ]; then
    # On the stand-in the host's launch path alone is timed (and 80,000
    # simulated launches would not fit the budget).
    step launch-overhead "$BUDGET_OVERHEAD" env PHOBOS_FAKE_GPU_SKIP_RUN=1 "$HERE/bin/launch_overhead"
elif [ -x "$HERE/bin/launch_overhead" ]; then
    step launch-overhead "$BUDGET_OVERHEAD" "$HERE/bin/launch_overhead"
else
    skip launch-overhead "not in this bundle"
fi

# 3. Every gpu_* test. The cubin test assembles with ptxas at run time and
# loads a cubin, which the stand-in refuses: skipped where either fails.
SKIP_ARGS=()
if [ -n "$STAND_IN" ]; then
    SKIP_ARGS=(--skip gpu_the_cubin_for_the_device_is_loaded)
    record gpu_the_cubin_for_the_device_is_loaded skipped 0 "the stand-in loads PTX only"
elif [ -z "${PHOBOS_PTXAS:-}" ]; then
    if command -v ptxas >/dev/null 2>&1; then
        export PHOBOS_PTXAS="$(command -v ptxas)"
    else
        SKIP_ARGS=(--skip gpu_the_cubin_for_the_device_is_loaded)
        record gpu_the_cubin_for_the_device_is_loaded skipped 0 "no ptxas on PATH (the bench's embedded cubins still test cubin loading)"
    fi
fi
# The test executables share one budget (today there is one).
TESTS=()
for t in "$HERE"/tests/*; do
    [ -x "$t" ] && TESTS+=("$t")
done
for t in "${TESTS[@]}"; do
    step "gpu-test-$(basename "$t")" "$(( BUDGET_GPU_TESTS / ${#TESTS[@]} ))" "$t" --ignored gpu_ --test-threads=1 "${SKIP_ARGS[@]}"
done

# 4. The differential check.
DIFF_ARGS=(--out "$OUT")
[ -n "$SMALL" ] && DIFF_ARGS+=(--seeds 1)
step diff "$BUDGET_DIFF" "$HERE/bin/phobos-diff" "${DIFF_ARGS[@]}"

# 5. Benchmarks: Phobos, then torch and Triton on the same shapes.
BENCH_ARGS=(--out "$OUT/bench.json")
PY_ARGS=()
[ -n "$SMALL" ] && BENCH_ARGS+=(--small) && PY_ARGS+=(--small)
step bench "$BUDGET_BENCH" "$HERE/bin/phobos-bench" "${BENCH_ARGS[@]}"
if [ -n "$STAND_IN" ]; then
    skip torch "the stand-in is not a GPU torch can use"
    skip triton "the stand-in is not a GPU Triton can use"
elif ! py_has torch; then
    skip torch "torch is not importable"
    skip triton "torch is not importable (Triton needs it)"
else
    step torch "$BUDGET_TORCH" python3 "$HERE/python/torch_bench.py" --out "$OUT/torch.json" "${PY_ARGS[@]}"
    if py_has triton; then
        step triton "$BUDGET_TRITON" python3 "$HERE/python/triton_bench.py" --out "$OUT/triton.json" "${PY_ARGS[@]}"
    else
        skip triton "triton is not importable"
    fi
fi

# 6. Nsight Compute counters of two kernels (lanes_matvec, row_softmax).
if [ -n "$STAND_IN" ]; then
    skip ncu "the stand-in has no performance counters"
elif ! command -v ncu >/dev/null 2>&1; then
    skip ncu "ncu is not on PATH"
else
    # One profiled launch per kernel (its first: the checked one); the
    # other launches of the benchmark run unprofiled.
    for k in lanes_matvec row_softmax; do
        # --log-file: the CSV holds ncu's own output only; the bench's
        # output stays in logs/ncu-K.log.
        step "ncu-$k" "$(( BUDGET_NCU / 2 ))" ncu --csv --log-file "$OUT/ncu-$k.csv" --target-processes all -k "regex:^$k" -c 1 \
            --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum \
            "$HERE/bin/phobos-bench" --only "$k" --runs 20 --out "$OUT/ncu-bench-$k.json"
        # ncu present but not allowed to read the counters: not a failure
        # of Phobos; the step becomes skipped, with the reason.
        if grep -qs 'ERR_NVGPUCTRPERM' "$OUT/logs/ncu-$k.log" "$OUT/ncu-$k.csv"; then
            sed -i '$d' "$STEPS"
            record "ncu-$k" skipped 0 "ncu may not read the GPU's counters here (ERR_NVGPUCTRPERM)"
        fi
    done
fi

# The report (results.json, results.md, chart.png) runs from the exit trap.
exit 0
