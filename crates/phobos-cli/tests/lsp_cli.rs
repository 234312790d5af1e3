//! `phobos lsp` driven over stdio by a client built on `lsp-server`'s
//! message framing and `lsp-types`: diagnostics with codes and related
//! information, hover with type and uniformity on the seed kernels,
//! go-to-definition, completion and formatting edits.

use lsp_server::{Message, Notification, Request, RequestId};
use lsp_types::*;
use serde_json::{json, Value};
use std::io::BufReader;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i32,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_phobos"))
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn phobos lsp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut c = Client {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        let init = c.request(
            "initialize",
            json!({"capabilities": {}, "processId": null, "rootUri": null}),
        );
        assert!(
            init["capabilities"]["hoverProvider"].as_bool() == Some(true),
            "{init}"
        );
        c.notify("initialized", json!({}));
        c
    }

    fn send(&mut self, m: Message) {
        m.write(&mut self.stdin).expect("write to the server");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(Message::Notification(Notification::new(
            method.into(),
            params,
        )));
    }

    fn recv(&mut self) -> Message {
        Message::read(&mut self.stdout)
            .expect("read from the server")
            .expect("the server closed its output")
    }

    /// Send a request and return its result, skipping notifications.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        self.send(Message::Request(Request::new(
            id.clone(),
            method.into(),
            params,
        )));
        loop {
            if let Message::Response(r) = self.recv() {
                assert_eq!(r.id, id);
                assert!(r.error.is_none(), "{method} failed: {:?}", r.error);
                return r.result.unwrap_or(Value::Null);
            }
        }
    }

    /// The next `publishDiagnostics` for `uri`.
    fn diagnostics(&mut self, uri: &str) -> Vec<Diagnostic> {
        loop {
            if let Message::Notification(n) = self.recv() {
                if n.method == "textDocument/publishDiagnostics" && n.params["uri"] == uri {
                    let p: PublishDiagnosticsParams =
                        serde_json::from_value(n.params).expect("diagnostics params");
                    return p.diagnostics;
                }
            }
        }
    }

    fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "phobos", "version": 1, "text": text}}),
        );
    }

    fn at(&mut self, method: &str, uri: &str, line: u32, character: u32) -> Value {
        let mut params = json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}});
        if method == "textDocument/references" {
            params["context"] = json!({"includeDeclaration": true});
        }
        self.request(method, params)
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let status = self.child.wait().expect("wait for the server");
        assert!(status.success(), "{status:?}");
    }
}

fn seed(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../phobos-core/tests/seed")
        .join(name);
    std::fs::read_to_string(p).expect("read a seed kernel")
}

fn hover_text(v: &Value) -> String {
    v["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// (line, character) of the first `needle` in `src`, 0-based.
fn find(src: &str, needle: &str) -> (u32, u32) {
    let at = src.find(needle).unwrap_or_else(|| panic!("no `{needle}`"));
    let line = src[..at].matches('\n').count() as u32;
    let col = at - src[..at].rfind('\n').map_or(0, |i| i + 1);
    (line, col as u32)
}

#[test]
fn seed_kernel_hover_definition_and_clean_diagnostics() {
    let src = seed("lanes_matvec.pho");
    let uri = "file:///seed/lanes_matvec.pho";
    let mut c = Client::start();
    c.open(uri, &src);
    assert!(
        c.diagnostics(uri).is_empty(),
        "the seed kernel has diagnostics"
    );

    // `row` at its use in `if row < N`: i32, warp-uniform (from ctx.warp).
    let (l, ch) = find(&src, "if row < N");
    let h = hover_text(&c.at("textDocument/hover", uri, l, ch + 3));
    assert!(h.contains("let row"), "{h}");
    assert!(
        h.contains("type `i32`") && h.contains("warp-uniform"),
        "{h}"
    );
    assert!(h.contains("`ctx.warp` differs between warps"), "{h}");

    // `at` is varying, because of ctx.lane.
    let (l, ch) = find(&src, "let at");
    let h = hover_text(&c.at("textDocument/hover", uri, l, ch + 4));
    assert!(h.contains("type `i32`") && h.contains("**varying**"), "{h}");
    assert!(h.contains("`ctx.lane` differs between lanes"), "{h}");

    // The collective: its type, level and shuffle cost.
    let (l, ch) = find(&src, "sum<over ctx.lane>(acc)");
    let h = hover_text(&c.at("textDocument/hover", uri, l, ch + 1));
    assert!(
        h.contains("type `f32`") && h.contains("warp-uniform"),
        "{h}"
    );
    assert!(
        h.contains("5 butterfly steps") && h.contains("= 5 shuffles"),
        "{h}"
    );

    // A run subscript: 16-byte loads thanks to @aligned(K = 128).
    let (l, ch) = find(&src, "W[row, at :+ 4]");
    let h = hover_text(&c.at("textDocument/hover", uri, l, ch + 1));
    assert!(
        h.contains("run of 4 elements") && h.contains("16 bytes per instruction"),
        "{h}"
    );

    // Go to definition of `acc` in `acc += ...` lands on `var acc`.
    let (l, ch) = find(&src, "acc += ");
    let def: GotoDefinitionResponse =
        serde_json::from_value(c.at("textDocument/definition", uri, l, ch)).expect("definition");
    let GotoDefinitionResponse::Scalar(loc) = def else {
        panic!("{def:?}")
    };
    let (dl, dc) = find(&src, "acc: f32");
    assert_eq!(loc.range.start, Position::new(dl, dc));

    // References of the dim `K`: its definition and every use.
    let (l, ch) = find(&src, "K]");
    let refs: Vec<Location> =
        serde_json::from_value(c.at("textDocument/references", uri, l, ch)).expect("references");
    assert_eq!(refs.len(), src.matches('K').count(), "{refs:?}");
    c.stop();
}

#[test]
fn diagnostics_have_codes_and_related_information_and_follow_edits() {
    let uri = "file:///k.pho";
    let bad = "@launch(32)\nkernel k(A: tensor<f32>[N], O: tensor<f32>[N]) {\n  let x = A[ctx.lane]\n  if x > 0.0 {\n    O[0] = sum<over ctx.lane>(x)\n  }\n}\n";
    let mut c = Client::start();
    c.open(uri, bad);
    let d = c.diagnostics(uri);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        d[0].code,
        Some(NumberOrString::String("P0700".into())),
        "{d:?}"
    );
    let related = d[0].related_information.clone().unwrap_or_default();
    assert!(
        related.iter().any(|r| r.location.range.start.line == 3),
        "{related:?}"
    );
    // Fixing the kernel clears the diagnostics.
    let fixed = bad.replace("if x > 0.0", "if ctx.warp > 0");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    assert!(c.diagnostics(uri).is_empty());
    c.stop();
}

#[test]
fn completion_and_formatting() {
    let uri = "file:///c.pho";
    let text = "@launch(32)\nkernel k(A: tensor<f32>[N]) {\n  let v = A[0]\n  let w = ctx.\n  let s = sum<>(v)\n}\n";
    let mut c = Client::start();
    c.open(uri, text);
    let _ = c.diagnostics(uri);
    let labels = |v: Value| -> Vec<String> {
        let r: CompletionResponse = serde_json::from_value(v).expect("completion");
        match r {
            CompletionResponse::Array(items) => items.into_iter().map(|i| i.label).collect(),
            CompletionResponse::List(l) => l.items.into_iter().map(|i| i.label).collect(),
        }
    };
    let (l, ch) = find(text, "ctx.\n");
    let fields = labels(c.at("textDocument/completion", uri, l, ch + 4));
    assert!(
        fields.contains(&"lane".to_string()) && fields.contains(&"block".to_string()),
        "{fields:?}"
    );
    let (l, ch) = find(text, "sum<>");
    let words = labels(c.at("textDocument/completion", uri, l, ch + 4));
    assert!(
        words.contains(&"over".to_string()) && words.contains(&"width".to_string()),
        "{words:?}"
    );
    let (l, _) = find(text, "  let s");
    let names = labels(c.at("textDocument/completion", uri, l, 2));
    for want in ["v", "A", "N", "sqrt", "argmax", "let"] {
        assert!(
            names.contains(&want.to_string()),
            "{want} missing: {names:?}"
        );
    }

    // Formatting a document that parses gives one edit with the formatted text.
    let messy = "@launch(32)\nkernel k(A: tensor<f32>[N]) {\nA[ctx.thread]=1.0\n}\n";
    let uri2 = "file:///f.pho";
    c.open(uri2, messy);
    let edits: Vec<TextEdit> = serde_json::from_value(c.request(
        "textDocument/formatting",
        json!({"textDocument": {"uri": uri2}, "options": {"tabSize": 2, "insertSpaces": true}}),
    ))
    .expect("edits");
    assert_eq!(edits.len(), 1);
    assert_eq!(
        edits[0].new_text,
        "@launch(32)\nkernel k(A: tensor<f32>[N]) {\n  A[ctx.thread] = 1.0\n}\n"
    );
    assert_eq!(edits[0].range.start, Position::new(0, 0));
    c.stop();
}
