#!/usr/bin/env bash
# Packages every publishable crate and uses the packages the way a user of
# crates.io would, without publishing anything or needing credentials:
#
# 1. `cargo package` for each publishable crate, in dependency order; cargo
#    builds each one from its own .crate contents (the verify step), so a
#    file missing from a package fails here. Any warning fails too.
# 2. The .crate files are unpacked into a scratch directory, and a new crate
#    made from templates/starter, outside the workspace, depends on
#    `phobos-runtime = "0.1"` and `phobos-build = "0.1"` exactly as the
#    template says, with `[patch.crates-io]` pointing at the unpacked
#    packages. It builds and runs on the simulator.
# 3. `cargo install phobos-cli` from the unpacked package into a scratch
#    root installs a `phobos` that checks the starter's kernel.
#
# Usage: scripts/package-check.sh [SCRATCH_DIR]
# CARGO_TARGET_DIR, when set, is used for all builds (sharing compiled
# dependencies with other runs).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
SCRATCH="${1:-$(mktemp -d)}"
mkdir -p "$SCRATCH"
CARGO="${CARGO:-cargo}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
# The publishable crates, in dependency order.
CRATES=(phobos-meta phobos-core phobos-sim phobos-bindgen phobos-build phobos-runtime phobos-profile phobos-explain phobos-lsp phobos-cli)
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

# cargo's verify step unpacks each package into its registry cache by name
# and version; a package left there by an earlier run (same version, older
# content) would be used again. None of these names is on crates.io, so
# their cached copies are always ours: remove them, and old packages.
CARGO_HOME_DIR="${CARGO_HOME:-$HOME/.cargo}"
for c in "${CRATES[@]}"; do
    rm -rf "$CARGO_HOME_DIR"/registry/src/*/"$c-$VERSION" "$CARGO_HOME_DIR"/registry/cache/*/"$c-$VERSION.crate"
done
rm -rf "$TARGET/package"
# Compiled registry crates are not rebuilt when their content changes at the
# same version: drop what earlier runs compiled of ours.
rm -rf "$TARGET"/debug/.fingerprint/phobos-* "$TARGET"/debug/build/phobos-* \
    "$TARGET"/debug/deps/libphobos_* "$TARGET"/debug/deps/phobos_*

# Every member packages, the ones marked `publish = false` too: each path
# dependency has a version, and a member's dependencies on other members
# are on members it may publish.
echo "== cargo package --workspace --no-verify"
if ! "$CARGO" package --workspace --no-verify --allow-dirty >"$SCRATCH/workspace-package.log" 2>&1; then
    cat "$SCRATCH/workspace-package.log" >&2
    echo "package-check: cargo package --workspace failed" >&2
    exit 1
fi
rm -rf "$TARGET/package"

echo "== cargo package (${CRATES[*]})"
args=()
for c in "${CRATES[@]}"; do args+=(-p "$c"); done
log="$SCRATCH/package.log"
"$CARGO" package "${args[@]}" --allow-dirty 2>&1 | tee "$log" | grep -v '^ *\(Compiling\|Checking\)' || true
if [ "${PIPESTATUS[0]}" != 0 ]; then
    echo "package-check: cargo package failed" >&2
    exit 1
fi
if grep -q '^warning' "$log"; then
    echo "package-check: cargo package printed warnings:" >&2
    grep -A3 '^warning' "$log" >&2
    exit 1
fi

echo "== unpack the .crate files"
PKGS="$SCRATCH/packages"
rm -rf "$PKGS"
mkdir -p "$PKGS"
for c in "${CRATES[@]}"; do
    tar xzf "$TARGET/package/$c-$VERSION.crate" -C "$PKGS"
done
patch="[patch.crates-io]"
for c in "${CRATES[@]}"; do
    patch+=$'\n'"$c = { path = \"$PKGS/$c-$VERSION\" }"
done

echo "== a crate outside the workspace, from templates/starter"
APP="$SCRATCH/starter"
rm -rf "$APP"
mkdir -p "$APP"
cp -r templates/starter/build.rs templates/starter/kernels templates/starter/src "$APP/"
sed 's/{{project-name}}/package-check-starter/' templates/starter/Cargo.toml > "$APP/Cargo.toml"
printf '\n[workspace]\n\n%s\n' "$patch" >> "$APP/Cargo.toml"
out=$(cd "$APP" && PHOBOS_BACKEND=sim "$CARGO" run --quiet 2>&1) || {
    echo "$out" >&2
    echo "package-check: the starter did not build or run from the packages" >&2
    exit 1
}
echo "$out"
case "$out" in
*"axpy on simulator: 1000 elements, 0 wrong"*) ;;
*)
    echo "package-check: unexpected output from the starter" >&2
    exit 1
    ;;
esac
echo "== cargo install phobos-cli from its package"
INSTALL="$SCRATCH/install"
rm -rf "$INSTALL"
cfg=()
for c in "${CRATES[@]}"; do
    cfg+=(--config "patch.crates-io.$c.path=\"$PKGS/$c-$VERSION\"")
done
(cd "$SCRATCH" && "$CARGO" install "${cfg[@]}" --path "$PKGS/phobos-cli-$VERSION" --root "$INSTALL" --debug --quiet)
"$INSTALL/bin/phobos" --version
"$INSTALL/bin/phobos" check "$APP/kernels"
echo "package-check: ok"
