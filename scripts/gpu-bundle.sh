#!/usr/bin/env bash
# Builds the GPU bundle: one folder with everything a first run on a GPU
# machine needs, for a machine that has the NVIDIA driver and python3 but
# no Rust toolchain and no network (docs/gpu-bundle.md).
#
#   scripts/gpu-bundle.sh [OUTDIR]        # default target/gpu-bundle
#
# Then, on the GPU machine:  OUTDIR/run.sh RESULTS_DIR
#
# Needs ptxas (PHOBOS_PTXAS, else ptxas on PATH or in CUDA_PATH/CUDA_HOME)
# for the cubins; fails without it. Builds in release mode:
#   bin/phobos-example-matvec   the example
#   bin/phobos-example-interop  Phobos in a cudarc program (examples/interop)
#   bin/launch_overhead         host time per launch (examples/interop)
#   bin/phobos-diff             the differential check (crates/phobos-gpucheck)
#   bin/phobos-bench            the benchmarks (crates/phobos-gpucheck)
#   tests/NAME                  every test executable with a `gpu_*` test
#   kernels/                    cubins for sm_80, sm_90 and sm_90a, their PTX and metadata
#                               (a copy to read: the binaries embed their own)
#   corpus/                     tests/in/*.pho, which phobos-diff compiles at run time
#   python/                     the report and the torch/Triton comparisons
#   run.sh, MANIFEST.txt
# and checks that the folder stays under 60 MiB and that its binaries need
# no shared library beyond glibc's (libcuda is opened at run time).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:-$ROOT/target/gpu-bundle}"
LIMIT_MIB=60
cd "$ROOT"

die() { echo "gpu-bundle: $*" >&2; exit 1; }

if [ -z "${PHOBOS_PTXAS:-}" ]; then
    for p in "$(command -v ptxas || true)" "${CUDA_PATH:-}/bin/ptxas" "${CUDA_HOME:-}/bin/ptxas"; do
        if [ -n "$p" ] && [ -x "$p" ]; then export PHOBOS_PTXAS="$p"; break; fi
    done
fi
[ -n "${PHOBOS_PTXAS:-}" ] && [ -x "$PHOBOS_PTXAS" ] \
    || die "no ptxas: set PHOBOS_PTXAS (the bundle carries cubins for sm_80 and sm_90)"
# Every architecture, whatever the caller's environment says.
unset PHOBOS_ARCHES PHOBOS_PTX_ONLY

# Replace only an earlier bundle (or an empty folder), never anything else.
if [ -e "$OUT" ]; then
    if [ -f "$OUT/MANIFEST.txt" ] || [ -f "$OUT/build.log" ] || [ -z "$(ls -A "$OUT")" ]; then
        rm -rf "$OUT"
    else
        die "$OUT exists and is not a GPU bundle; give an empty or new folder"
    fi
fi
mkdir -p "$OUT"/{bin,tests,kernels,corpus,python}
LOG="$OUT/build.log"
: >"$LOG"

# Runs cargo with JSON messages; prints the messages (stdout).
cargo_json() {
    cargo "$@" --release --message-format=json-render-diagnostics 2>>"$LOG" \
        || die "cargo $* failed (see $LOG)"
}

echo "gpu-bundle: building the example, phobos-diff and phobos-bench (release)" >&2
MSGS="$(cargo_json build -p phobos-example-matvec -p phobos-example-interop -p phobos-gpucheck --bins)"

# Every test target with a `gpu_*` test: PACKAGE TARGET pairs, from the
# sources (crates/NAME/tests/TARGET.rs or examples/NAME/tests/TARGET.rs).
GPU_TESTS="$(grep -rl --include='*.rs' -E '^\s*fn gpu_[a-z0-9_]*\(' crates examples tests 2>/dev/null \
    | grep -E '/tests/[^/]+\.rs$' | sort -u || true)"
[ -n "$GPU_TESTS" ] || die "no test file has a gpu_* test"
for file in $GPU_TESTS; do
    pkg_dir="${file%%/tests/*}"
    target="$(basename "$file" .rs)"
    pkg="$(sed -n 's/^name = "\(.*\)"/\1/p' "$pkg_dir/Cargo.toml" | head -1)"
    echo "gpu-bundle: building the test executable $pkg --test $target" >&2
    MSGS+=$'\n'"$(cargo_json test --no-run -p "$pkg" --test "$target")"
done

printf '%s\n' "$MSGS" >"$OUT/.cargo-messages.json"
python3 - "$OUT" "$OUT/.cargo-messages.json" <<'PY'
import glob, json, os, shutil, sys
out = sys.argv[1]
wanted_bins = {"phobos-example-matvec", "phobos-example-interop", "launch_overhead",
               "phobos-diff", "phobos-bench"}
kernel_dirs = set()
for line in open(sys.argv[2]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        kind = m["target"]["kind"]
        name = m["target"]["name"]
        if "bin" in kind and name in wanted_bins:
            shutil.copy2(m["executable"], os.path.join(out, "bin", name))
        elif m.get("profile", {}).get("test") and "test" in kind:
            shutil.copy2(m["executable"], os.path.join(out, "tests", name))
    if m.get("reason") == "build-script-executed" and (
        "phobos-example-matvec" in m["package_id"] or "phobos-gpucheck" in m["package_id"]
    ):
        kernel_dirs.add(os.path.join(m["out_dir"], "phobos"))
        # Kernels that need a newer target than the bundle's sm_80 floor
        # (the FP8 GEMM: sm_89) are built in a folder of their own
        # (crates/phobos-gpucheck/build.rs).
        for sub in glob.glob(os.path.join(m["out_dir"], "needs-sm_*", "phobos")):
            kernel_dirs.add(sub)
missing = wanted_bins - set(os.listdir(os.path.join(out, "bin")))
if missing:
    sys.exit(f"gpu-bundle: cargo built no {sorted(missing)}")
for d in sorted(kernel_dirs):
    for f in sorted(os.listdir(d)):
        if (".sm_80." in f or ".sm_90." in f or ".sm_90a." in f or f.endswith(".meta.ron")) and not f.startswith("."):
            shutil.copy2(os.path.join(d, f), os.path.join(out, "kernels", f))
PY
rm -f "$OUT/.cargo-messages.json"

ls "$OUT"/kernels/*.sm_90.cubin >/dev/null 2>&1 || die "no sm_90 cubins were built (is ptxas working?)"
ls "$OUT"/kernels/*.sm_80.cubin >/dev/null 2>&1 || die "no sm_80 cubins were built"
cp tests/in/*.pho "$OUT/corpus/"
cp crates/phobos-gpucheck/python/*.py "$OUT/python/"
cp crates/phobos-gpucheck/run.sh "$OUT/run.sh"
chmod +x "$OUT/run.sh"
# Symbols are not needed to run; they are most of a release binary.
if command -v strip >/dev/null; then
    strip "$OUT"/bin/* "$OUT"/tests/* 2>>"$LOG" || true
fi

# Shared libraries: only glibc's (and libgcc_s, part of every glibc system).
ALLOWED='^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2)$'
{
    echo "Phobos GPU bundle"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(ldd --version 2>&1 | head -1)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "ptxas: $("$PHOBOS_PTXAS" --version | tail -1)"
    echo
    echo "binaries (NEEDED shared libraries; newest glibc symbol version):"
} >"$OUT/MANIFEST.txt"
for f in "$OUT"/bin/* "$OUT"/tests/*; do
    needed="$(readelf -d "$f" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')"
    for lib in $needed; do
        echo "$lib" | grep -Eq "$ALLOWED" || die "$(basename "$f") needs $lib, which the GPU machine may lack"
    done
    glibc="$(objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1)"
    echo "  ${f#$OUT/}: $(echo $needed | tr ' ' ',') ($glibc)" >>"$OUT/MANIFEST.txt"
done
{
    echo
    echo "kernels:"
    (cd "$OUT/kernels" && ls | sed 's/^/  /')
} >>"$OUT/MANIFEST.txt"

size_kib="$(du -sk "$OUT" | cut -f1)"
echo "size: $((size_kib / 1024)) MiB ($size_kib KiB)" >>"$OUT/MANIFEST.txt"
[ "$size_kib" -le $((LIMIT_MIB * 1024)) ] || die "the bundle is $((size_kib / 1024)) MiB, over $LIMIT_MIB MiB"
echo "gpu-bundle: $OUT ($((size_kib / 1024)) MiB); run it with $OUT/run.sh RESULTS_DIR" >&2
