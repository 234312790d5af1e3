#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build the workspace, run the example on
# the GPU, run every GPU test (the ignored tests named `gpu_*`, across the
# workspace), and print one table of what passed.
#
#   scripts/gpu-check.sh            # uses PHOBOS_PTXAS, else ptxas on PATH,
#                                   # else CUDA_PATH/CUDA_HOME, for cubins
#
# Exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu-check: no NVIDIA GPU here (nvidia-smi finds none)" >&2
    exit 2
fi
if [ -z "${PHOBOS_PTXAS:-}" ]; then
    for p in "$(command -v ptxas || true)" "${CUDA_PATH:-}/bin/ptxas" "${CUDA_HOME:-}/bin/ptxas" \
             "$HOME/.cache/phobos/nvcc-12.9.86/nvidia/cuda_nvcc/bin/ptxas"; do
        if [ -n "$p" ] && [ -x "$p" ]; then export PHOBOS_PTXAS="$p"; break; fi
    done
fi
export PHOBOS_BACKEND=cuda
LOG="$(mktemp -d)"
declare -a ROWS=()
FAILED=0

step() {  # step NAME COMMAND...
    local name="$1"; shift
    local start end status
    start=$(date +%s)
    "$@" >"$LOG/$name.log" 2>&1
    status=$?
    end=$(date +%s)
    if [ $status -eq 0 ]; then
        ROWS+=("$(printf '%-28s %-6s %5ss' "$name" ok $((end - start)))")
    else
        FAILED=1
        ROWS+=("$(printf '%-28s %-6s %5ss  (log: %s)' "$name" FAILED $((end - start)) "$LOG/$name.log")")
    fi
    return $status
}

echo "GPU: $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader | head -1)"
echo "ptxas: ${PHOBOS_PTXAS:-none (PTX only, JIT by the driver)}"
echo

step build cargo build --release --workspace --all-targets
step example cargo run --release -p phobos-example-matvec
step gpu-tests cargo test --release --workspace -- --ignored gpu_
step sim-tests env PHOBOS_BACKEND=sim cargo test --release --workspace

echo "== example =="
grep -E '^(device|backend|cuda|sim) ' "$LOG/example.log" || tail -20 "$LOG/example.log"
echo
echo "== GPU tests =="
grep -E '^test .*gpu_.* \.\.\. ' "$LOG/gpu-tests.log" | sed 's/^test //' || true
echo
echo "== summary =="
printf '%-28s %-6s %6s\n' step result time
for r in "${ROWS[@]}"; do echo "$r"; done
exit $FAILED
