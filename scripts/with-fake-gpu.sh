#!/usr/bin/env bash
# Runs a command against phobos-fakecuda, the CUDA driver stand-in over the
# simulator (docs/fake-gpu.md): builds it, places it as libcuda.so in a
# private folder, and runs the command with that folder first on the
# library path and PHOBOS_BACKEND=cuda, so every CUDA driver call the
# command makes (through cudarc, or any dlopen of libcuda) runs on the CPU.
#
#   scripts/with-fake-gpu.sh cargo run --release -p phobos-example-matvec
#   PHOBOS_FAKE_GPU_CC=7.5 scripts/with-fake-gpu.sh cargo test -p phobos-runtime
#
# The folder (target/fake-gpu) is not one cargo puts on the library path,
# so the stand-in never shadows a real driver outside this script.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
if [ "$(uname -s)" != Linux ]; then
    echo "with-fake-gpu: the stand-in replaces libcuda.so, which exists on Linux only" >&2
    exit 2
fi
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
cargo build --quiet --release -p phobos-fakecuda --manifest-path "$ROOT/Cargo.toml"
LIB="$TARGET_DIR/release/libphobos_fakecuda.so"
DIR="$TARGET_DIR/fake-gpu"
mkdir -p "$DIR"
# Replace atomically: a process of an earlier run may still have it mapped.
cp -f "$LIB" "$DIR/.libcuda.so.1.tmp.$$"
mv -f "$DIR/.libcuda.so.1.tmp.$$" "$DIR/libcuda.so.1"
ln -sfn libcuda.so.1 "$DIR/libcuda.so"
export LD_LIBRARY_PATH="$DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PHOBOS_BACKEND=cuda
# Tests that need the stand-in (fault injection) check for it here.
export PHOBOS_FAKE_GPU_LIB="$DIR/libcuda.so.1"
exec "$@"
