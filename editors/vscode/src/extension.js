// The Phobos extension: starts `phobos lsp` (the binary named by the
// `phobos.server.path` setting) for .pho files. Everything else — the
// diagnostics, hover, definitions, completion, formatting, semantic tokens,
// inlay hints, code actions — is the server's. package.json declares the
// server's uniformity modifiers and styles them (varying underlined,
// warp-uniform in italics).
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("phobos");
  const command = config.get("server.path") || "phobos";
  const server = { command, args: ["lsp"] };
  client = new LanguageClient(
    "phobos",
    "Phobos language server",
    { run: server, debug: server },
    {
      documentSelector: [{ scheme: "file", language: "phobos" }],
      initializationOptions: { uniformityHints: config.get("inlayHints.uniformity") === true },
    }
  );
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
