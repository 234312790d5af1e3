//! Headless Neovim (0.11+) as the LSP client of `phobos lsp`, configured by
//! exactly the setup the README documents (editors/neovim/phobos.lua):
//! the server attaches to a `.pho` buffer, hover on a seed kernel shows the
//! type and uniformity, and inlay hints show a `let`'s type.
//!
//! Neovim is found as `$PHOBOS_NVIM` or `nvim` on PATH (.ci/run installs
//! 0.11 from a pinned wheel). Without a Neovim of 0.11 or later the test
//! prints why and passes without running: Debian's package is 0.7, which
//! has no `vim.lsp.config`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn nvim() -> Option<PathBuf> {
    let exe = std::env::var_os("PHOBOS_NVIM").map_or_else(|| PathBuf::from("nvim"), PathBuf::from);
    let out = Command::new(&exe).arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout);
    let first = version.lines().next().unwrap_or("");
    // "NVIM v0.11.4"
    let v: Vec<u32> = first
        .trim_start_matches("NVIM v")
        .split(['.', '-'])
        .take(2)
        .filter_map(|p| p.parse().ok())
        .collect();
    if v.len() == 2 && (v[0] > 0 || v[1] >= 11) {
        Some(exe)
    } else {
        eprintln!(
            "skipped: {} is `{first}`; the test needs Neovim 0.11 or later",
            exe.display()
        );
        None
    }
}

const SCRIPT: &str = r#"
local out = {}
local ok = vim.wait(20000, function()
  return #vim.lsp.get_clients({ bufnr = 0, name = "phobos" }) > 0
end, 50)
table.insert(out, "attached=" .. tostring(ok))
-- `row` in `if row < N`: 1-based line and column of the match.
local at = vim.fn.searchpos("if row < N")
local params = { textDocument = vim.lsp.util.make_text_document_params(0),
                 position = { line = at[1] - 1, character = at[2] - 1 + 3 } }
local res = vim.lsp.buf_request_sync(0, "textDocument/hover", params, 10000) or {}
for _, r in pairs(res) do
  if r.result then table.insert(out, "hover=" .. r.result.contents.value) end
end
local hp = { textDocument = vim.lsp.util.make_text_document_params(0),
             range = { start = { line = 0, character = 0 }, ["end"] = { line = 100, character = 0 } } }
local hints = vim.lsp.buf_request_sync(0, "textDocument/inlayHint", hp, 10000) or {}
for _, r in pairs(hints) do
  for _, h in ipairs(r.result or {}) do
    table.insert(out, "hint=" .. h.position.line .. ":" .. h.position.character .. " " .. tostring(h.label))
  end
end
vim.fn.writefile(vim.split(table.concat(out, "\n"), "\n"), vim.env.PHOBOS_NVIM_OUT)
vim.cmd("qa!")
"#;

#[test]
fn neovim_hover_through_the_documented_setup() {
    let Some(nvim) = nvim() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("phobos-nvim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kernel = dir.join("lanes_matvec.pho");
    std::fs::copy(
        root.join("crates/phobos-core/tests/seed/lanes_matvec.pho"),
        &kernel,
    )
    .expect("copy the seed kernel");
    let script = dir.join("hover.lua");
    std::fs::write(&script, SCRIPT).expect("write the script");
    let out = dir.join("out.txt");
    // `phobos` on PATH, as the documented `cmd = { "phobos", "lsp" }` needs.
    let bin = Path::new(env!("CARGO_BIN_EXE_phobos"))
        .parent()
        .expect("bin dir");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let status = Command::new(&nvim)
        .args(["--headless", "--clean", "-u"])
        .arg(root.join("editors/neovim/phobos.lua"))
        .arg(&kernel)
        .arg("-c")
        .arg(format!("luafile {}", script.display()))
        .env("PATH", path)
        .env("PHOBOS_NVIM_OUT", &out)
        .env("XDG_STATE_HOME", &dir)
        .env("XDG_DATA_HOME", &dir)
        .status()
        .expect("run nvim");
    assert!(status.success(), "{status:?}");
    let text = std::fs::read_to_string(&out).expect("nvim wrote its results");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(text.contains("attached=true"), "{text}");
    assert!(text.contains("let row"), "{text}");
    assert!(
        text.contains("type `i32`") && text.contains("warp-uniform"),
        "{text}"
    );
    // `let row` on line 4 (0-based 3) gets `: i32` after `row` (column 9).
    assert!(text.contains("hint=3:9 : i32"), "{text}");
}
