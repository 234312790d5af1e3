#!/usr/bin/env bash
# Capture Neovim showing `phobos lsp`'s hover on a seed kernel, as the PNG
# the README's "Editor support" section shows (docs/img/hover-neovim.png).
# A real capture: Neovim 0.11 runs in tmux with editors/neovim/phobos.lua,
# the cursor is put on `row` in `if row < N`, `K` asks for hover, and the
# pane (with its colours) is converted to HTML by `aha` and rendered to PNG
# by headless Chromium.
#
# Needs: tmux, aha, chromium (Debian packages), Neovim 0.11+ as $PHOBOS_NVIM
# or `nvim` on PATH, and a built `phobos` (target/debug or PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
NVIM="${PHOBOS_NVIM:-nvim}"
OUT="${1:-docs/img/hover-neovim.png}"
PATH="$PWD/target/debug:$PATH"
command -v phobos >/dev/null || { echo "build phobos first: cargo build -p phobos-cli" >&2; exit 1; }
work="$(mktemp -d)"
trap 'tmux kill-session -t phobos-shot 2>/dev/null || true; rm -rf "$work"' EXIT
cp crates/phobos-core/tests/seed/lanes_matvec.pho "$work/"
cols=104 rows=26
tmux kill-session -t phobos-shot 2>/dev/null || true
tmux new-session -d -s phobos-shot -x "$cols" -y "$rows" \
    "env TERM=tmux-256color XDG_STATE_HOME=$work XDG_DATA_HOME=$work PATH='$PATH' \
     $NVIM --clean -u editors/neovim/phobos.lua \
     -c 'set termguicolors number winborder=rounded' $work/lanes_matvec.pho"
sleep 3
# Put the cursor on `row` in `if row < N` and ask for hover.
tmux send-keys -t phobos-shot '/if row < N' Enter 'w' ':nohlsearch' Enter
sleep 2
tmux send-keys -t phobos-shot 'K'
sleep 3
tmux capture-pane -t phobos-shot -e -p > "$work/pane.ansi"
aha --black --title "phobos lsp hover in Neovim" < "$work/pane.ansi" > "$work/pane.html"
# A monospace font at a size that fits the pane.
sed -i 's|<pre>|<pre style="font-family: DejaVu Sans Mono, monospace; font-size: 14px; line-height: 1.35; margin: 8px">|' "$work/pane.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=$((cols * 17 / 2 + 20)),$((rows * 19 + 20)) \
    --screenshot="$work/shot.png" "file://$work/pane.html" 2>/dev/null
cp "$work/shot.png" "$OUT"
ls -l "$OUT"
