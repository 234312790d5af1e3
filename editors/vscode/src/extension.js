// The Phobos extension: starts `phobos lsp` (the binary named by the
// `phobos.server.path` setting) for .pho files. Everything else — the
// diagnostics, hover, definitions, completion, formatting — is the server's.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("phobos").get("server.path") || "phobos";
  const server = { command, args: ["lsp"] };
  client = new LanguageClient(
    "phobos",
    "Phobos language server",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "phobos" }] }
  );
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
