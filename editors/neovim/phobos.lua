-- Phobos in Neovim 0.11+ with no plugin: the filetype, and `phobos lsp` as
-- the language server for it. Load it from your init.lua
-- (`dofile("/path/to/phobos/editors/neovim/phobos.lua")`) or copy it there.
-- The headless test crates/phobos-cli/tests/nvim_lsp.rs and
-- scripts/editor-screenshot.sh run Neovim with exactly this file.
vim.filetype.add({ extension = { pho = "phobos" } })
vim.lsp.config("phobos", {
  cmd = { "phobos", "lsp" },
  filetypes = { "phobos" },
  root_markers = { "Cargo.toml", ".git" },
  -- `uniformityHints = true` adds each local's uniformity as an inlay hint.
  init_options = { uniformityHints = false },
})
vim.lsp.enable("phobos")
-- Inlay hints (types of `let`s) and semantic tokens are off by default in
-- Neovim; turn the hints on when the server attaches.
vim.api.nvim_create_autocmd("LspAttach", {
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if client and client.name == "phobos" then
      vim.lsp.inlay_hint.enable(true, { bufnr = args.buf })
    end
  end,
})
-- The server marks each value's uniformity with a semantic token modifier:
-- varying values are underlined, warp-uniform ones in italics.
vim.api.nvim_set_hl(0, "@lsp.mod.varying.phobos", { underline = true })
vim.api.nvim_set_hl(0, "@lsp.mod.warpUniform.phobos", { italic = true })
