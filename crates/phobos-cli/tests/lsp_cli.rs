//! `phobos lsp` driven over stdio by a client built on `lsp-server`'s
//! message framing and `lsp-types`: diagnostics with codes and related
//! information, hover with type and uniformity on the seed kernels,
//! go-to-definition, completion, formatting edits, semantic tokens with
//! uniformity modifiers, inlay hints, and code actions whose edits are
//! applied and checked again.

#[path = "../../phobos-core/tests/common/mod.rs"]
mod core_common;

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
    /// The server's capabilities from `initialize`.
    caps: Value,
}

impl Client {
    fn start() -> Client {
        Client::start_with(json!({}))
    }

    fn start_with(init_options: Value) -> Client {
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
            caps: Value::Null,
        };
        let init = c.request(
            "initialize",
            json!({"capabilities": {}, "processId": null, "rootUri": null,
                   "initializationOptions": init_options}),
        );
        c.caps = init["capabilities"].clone();
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

    /// A server with `text` open as `uri`, and the diagnostics it first
    /// published for it.
    fn opened(uri: &str, text: &str) -> (Client, Vec<Diagnostic>) {
        let mut c = Client::start();
        c.open(uri, text);
        let d = c.diagnostics(uri);
        (c, d)
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

/// The source of case `name` of phobos-core's fixture of refused kernels
/// (`tests/kernels/rejected.txt`), which front_rejected.rs checks.
fn rejected(name: &str) -> String {
    core_common::cases(include_str!("../../phobos-core/tests/kernels/rejected.txt"))
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case `{name}` in rejected.txt"))
        .text
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
    let (mut c, d) = Client::opened(uri, &src);
    assert!(d.is_empty(), "the seed kernel has diagnostics");

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
    let (mut c, d) = Client::opened(uri, bad);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        d[0].code,
        Some(NumberOrString::String("P0700".into())),
        "{d:?}"
    );
    let related = d[0].related_information.clone().unwrap_or_default();
    // The related information points at the varying condition.
    let cond = find(bad, "if x > 0.0").0;
    assert!(
        related.iter().any(|r| r.location.range.start.line == cond),
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
    let (mut c, _) = Client::opened(uri, text);
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

/// Byte offset of an LSP position (UTF-16 characters within the line).
fn offset_of(src: &str, p: Position) -> usize {
    let line_start: usize = src
        .split_inclusive('\n')
        .take(p.line as usize)
        .map(str::len)
        .sum();
    let mut units = 0;
    for (i, ch) in src[line_start..].char_indices() {
        if units >= p.character || ch == '\n' {
            return line_start + i;
        }
        units += ch.len_utf16() as u32;
    }
    src.len()
}

/// `src` with `edits` applied.
fn apply(src: &str, edits: &[TextEdit]) -> String {
    let mut edits: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            (
                offset_of(src, e.range.start),
                offset_of(src, e.range.end),
                e.new_text.as_str(),
            )
        })
        .collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = src.to_string();
    for (start, end, text) in edits {
        out.replace_range(start..end, text);
    }
    out
}

/// One decoded semantic token: its text, type and modifiers by name.
#[derive(Debug, PartialEq)]
struct Tok {
    line: u32,
    text: String,
    ty: String,
    modifiers: Vec<String>,
}

fn semantic_tokens(c: &mut Client, uri: &str, src: &str) -> Vec<Tok> {
    let r: SemanticTokens = serde_json::from_value(c.request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
    ))
    .expect("semantic tokens");
    decode_tokens(c, src, &r.data)
}

/// Semantic tokens in LSP's relative encoding, decoded against `src`.
fn decode_tokens(c: &Client, src: &str, data: &[SemanticToken]) -> Vec<Tok> {
    let legend = c.caps["semanticTokensProvider"]["legend"].clone();
    let names = |key: &str| -> Vec<String> {
        legend[key]
            .as_array()
            .expect("legend")
            .iter()
            .map(|v| v.as_str().expect("name").to_string())
            .collect()
    };
    let (types, mods) = (names("tokenTypes"), names("tokenModifiers"));
    let (mut line, mut ch) = (0, 0);
    let mut out = Vec::new();
    for t in data {
        if t.delta_line > 0 {
            line += t.delta_line;
            ch = t.delta_start;
        } else {
            ch += t.delta_start;
        }
        let start = offset_of(src, Position::new(line, ch));
        let end = offset_of(src, Position::new(line, ch + t.length));
        out.push(Tok {
            line,
            text: src[start..end].to_string(),
            ty: types[t.token_type as usize].clone(),
            modifiers: (0..mods.len())
                .filter(|i| t.token_modifiers_bitset & (1 << i) != 0)
                .map(|i| mods[i].clone())
                .collect(),
        });
    }
    out
}

#[test]
fn semantic_tokens_style_varying_and_uniform_values_apart() {
    let src = seed("lanes_matvec.pho");
    let uri = "file:///seed/lanes_matvec.pho";
    let mut c = Client::start();
    let mods = c.caps["semanticTokensProvider"]["legend"]["tokenModifiers"].clone();
    for m in ["uniform", "warpUniform", "varying"] {
        assert!(
            mods.as_array().expect("modifiers").contains(&json!(m)),
            "{mods}"
        );
    }
    c.open(uri, &src);
    let _ = c.diagnostics(uri);
    let toks = semantic_tokens(&mut c, uri, &src);
    let find_tok = |text: &str, line: u32| {
        toks.iter()
            .find(|t| t.text == text && t.line == line)
            .unwrap_or_else(|| panic!("no token `{text}` on line {line}: {toks:?}"))
    };
    // `at` (from ctx.lane) is varying, at its declaration and its uses.
    let at_decl = find_tok("at", find(&src, "let at").0);
    assert_eq!(at_decl.ty, "variable");
    assert!(
        at_decl.modifiers.contains(&"declaration".into()),
        "{at_decl:?}"
    );
    assert!(at_decl.modifiers.contains(&"varying".into()), "{at_decl:?}");
    // `row` (from ctx.warp) is warp-uniform where it is used.
    let row_use = find_tok("row", find(&src, "if row < N").0);
    assert!(
        row_use.modifiers.contains(&"warpUniform".into()),
        "{row_use:?}"
    );
    assert!(
        !row_use.modifiers.contains(&"varying".into()),
        "{row_use:?}"
    );
    // The dim `N` is uniform; `total`, a fold over the warp, is warp-uniform.
    let n_use = find_tok("N", find(&src, "if row < N").0);
    assert!(n_use.modifiers.contains(&"uniform".into()), "{n_use:?}");
    let total = find_tok("total", find(&src, "let total").0);
    assert!(total.modifiers.contains(&"warpUniform".into()), "{total:?}");
    // ctx fields carry their own level.
    let lane = find_tok("lane", find(&src, "let at").0);
    assert_eq!(lane.ty, "property");
    assert!(lane.modifiers.contains(&"varying".into()), "{lane:?}");
    let warp = find_tok("warp", find(&src, "let row").0);
    assert!(warp.modifiers.contains(&"warpUniform".into()), "{warp:?}");
    // Keywords, types, collectives and attributes are classified.
    assert_eq!(
        find_tok("kernel", find(&src, "kernel lanes_matvec").0).ty,
        "keyword"
    );
    assert_eq!(find_tok("f32", find(&src, "var acc").0).ty, "type");
    assert_eq!(find_tok("launch", find(&src, "@launch").0).ty, "decorator");
    let sum = toks
        .iter()
        .find(|t| t.text == "sum" && t.line == find(&src, "let total").0)
        .expect("sum");
    assert_eq!(sum.ty, "function");
    c.stop();
}

#[test]
fn a_loops_unroll_and_stages_are_keywords_and_a_variable_named_stages_is_not() {
    let src = "@launch(128)
kernel k(A: tensor<f32>[N, K], y: tensor<f32>[1, N]) {
  let stages = 2
  var acc: f32 = 0.0
  for k in range(0, K, 32) unroll 1 stages 2 {
    var t = A[0 :+ 4, k :+ 32]
    acc += t[0, stages]
  }
  y[0, 0] = acc
}
";
    let uri = "file:///k.pho";
    let (mut c, _) = Client::opened(uri, src);
    let toks = semantic_tokens(&mut c, uri, src);
    let on = |text: &str, line: u32| {
        toks.iter()
            .find(|t| t.text == text && t.line == line)
            .map(|t| t.ty.clone())
    };
    let head = find(src, "unroll 1 stages 2").0;
    let read = find(src, "acc += t[0, stages]").0;
    assert_eq!(on("unroll", head).as_deref(), Some("keyword"), "{toks:?}");
    assert_eq!(on("stages", head).as_deref(), Some("keyword"), "{toks:?}");
    assert_ne!(on("stages", read).as_deref(), Some("keyword"), "{toks:?}");
    c.stop();
}

/// `semanticTokens/range` gives the tokens of the lines asked for, the same
/// as the whole-document request gives for them, encoded from the
/// document's start.
#[test]
fn semantic_tokens_of_a_range_are_those_of_its_lines() {
    let src = format!(
        "{}\n{}",
        seed("lanes_matvec.pho"),
        seed("lanes_matvec.pho").replace("lanes_matvec", "second")
    );
    let uri = "file:///seed/two.pho";
    let mut c = Client::start();
    let provider = c.caps["semanticTokensProvider"].clone();
    assert_eq!(provider["range"], json!(true), "{provider}");
    c.open(uri, &src);
    let _ = c.diagnostics(uri);
    let whole = semantic_tokens(&mut c, uri, &src);
    // The five lines after the second kernel's header, `let row` to `let at`.
    let first = find(&src, "kernel second").0 + 1;
    let range = |start: u32, end: u32| {
        json!({"textDocument": {"uri": uri},
               "range": {"start": {"line": start, "character": 0},
                         "end": {"line": end, "character": 0}}})
    };
    let r: SemanticTokens = serde_json::from_value(
        c.request("textDocument/semanticTokens/range", range(first, first + 5)),
    )
    .expect("range tokens");
    let part = decode_tokens(&c, &src, &r.data);
    let expected: Vec<&Tok> = whole
        .iter()
        .filter(|t| (first..first + 5).contains(&t.line))
        .collect();
    assert!(expected.len() > 20, "{expected:?}");
    assert_eq!(part.iter().collect::<Vec<_>>(), expected);
    // The levels are there: `at` is varying in the second kernel too.
    let at = part
        .iter()
        .find(|t| t.text == "at")
        .unwrap_or_else(|| panic!("{part:?}"));
    assert!(at.modifiers.contains(&"varying".into()), "{at:?}");
    // A range of empty lines past the end has no tokens.
    let r: SemanticTokens = serde_json::from_value(c.request(
        "textDocument/semanticTokens/range",
        range(first + 100, first + 200),
    ))
    .expect("range tokens");
    assert!(r.data.is_empty(), "{:?}", r.data);
    c.stop();
}

/// `semanticTokens/full/delta` after an edit gives edits that turn the
/// tokens sent before into the tokens of the new text; an unknown result
/// id gets the whole document.
#[test]
fn semantic_tokens_delta_follows_an_edit() {
    let src = seed("lanes_matvec.pho");
    let uri = "file:///seed/delta.pho";
    let mut c = Client::start();
    assert_eq!(
        c.caps["semanticTokensProvider"]["full"],
        json!({"delta": true})
    );
    c.open(uri, &src);
    let _ = c.diagnostics(uri);
    let first: SemanticTokens = serde_json::from_value(c.request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
    ))
    .expect("tokens");
    let id = first.result_id.clone().expect("a result id");
    // A new local in the middle of the kernel.
    let edited = src.replace(
        "  var acc: f32 = 0.0\n",
        "  var acc: f32 = 0.0\n  let lane = ctx.lane\n",
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": edited}]}),
    );
    let _ = c.diagnostics(uri);
    let delta = c.request(
        "textDocument/semanticTokens/full/delta",
        json!({"textDocument": {"uri": uri}, "previousResultId": id}),
    );
    let delta: SemanticTokensDelta = serde_json::from_value(delta).expect("a delta");
    assert_ne!(delta.result_id.as_deref(), Some(id.as_str()));
    assert_eq!(delta.edits.len(), 1, "{:?}", delta.edits);
    let edit = &delta.edits[0];
    assert!(
        edit.start > 0 && edit.start.is_multiple_of(5),
        "the tokens before `let lane` are kept: {edit:?}"
    );
    // Apply the edit to the flat integer array, as a client does.
    let flat = |ts: &[SemanticToken]| -> Vec<u32> {
        ts.iter()
            .flat_map(|t| {
                [
                    t.delta_line,
                    t.delta_start,
                    t.length,
                    t.token_type,
                    t.token_modifiers_bitset,
                ]
            })
            .collect()
    };
    let mut ints = flat(&first.data);
    let inserted = flat(edit.data.as_deref().unwrap_or_default());
    let at = edit.start as usize;
    ints.splice(at..at + edit.delete_count as usize, inserted);
    let fresh: SemanticTokens = serde_json::from_value(c.request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": uri}}),
    ))
    .expect("tokens");
    assert_eq!(ints, flat(&fresh.data));
    let lane = decode_tokens(&c, &edited, &fresh.data);
    assert!(
        lane.iter().any(|t| t.text == "lane"
            && t.modifiers.contains(&"declaration".into())
            && t.modifiers.contains(&"varying".into())),
        "{lane:?}"
    );
    // An id the server does not have: the whole document comes back.
    let whole: SemanticTokens = serde_json::from_value(c.request(
        "textDocument/semanticTokens/full/delta",
        json!({"textDocument": {"uri": uri}, "previousResultId": "no such id"}),
    ))
    .expect("whole tokens");
    assert_eq!(flat(&whole.data), flat(&fresh.data));
    c.stop();
}

/// Asserts that the inlay hints `h` hold `label` at `at`.
fn assert_hint(h: &[(Position, String)], at: Position, label: &str) {
    assert!(h.iter().any(|(p, l)| *p == at && l == label), "{h:?}");
}

#[test]
fn inlay_hints_show_types_and_optionally_uniformity() {
    let src = seed("lanes_matvec.pho");
    let uri = "file:///seed/lanes_matvec.pho";
    let whole =
        json!({"start": {"line": 0, "character": 0}, "end": {"line": 1000, "character": 0}});
    let hints = |c: &mut Client| -> Vec<(Position, String)> {
        let v: Vec<InlayHint> = serde_json::from_value(c.request(
            "textDocument/inlayHint",
            json!({"textDocument": {"uri": uri}, "range": whole}),
        ))
        .expect("inlay hints");
        v.into_iter()
            .map(|h| match h.label {
                InlayHintLabel::String(s) => (h.position, s),
                InlayHintLabel::LabelParts(p) => {
                    (h.position, p.into_iter().map(|p| p.value).collect())
                }
            })
            .collect()
    };
    let after = |needle: &str, name: &str| {
        let (l, ch) = find(&src, needle);
        Position::new(
            l,
            ch + needle.find(name).expect("name") as u32 + name.len() as u32,
        )
    };

    let (mut c, _) = Client::opened(uri, &src);
    let h = hints(&mut c);
    assert_hint(&h, after("let row", "row"), ": i32");
    assert_hint(&h, after("let total", "total"), ": f32");
    // `var acc: f32` is typed as written: no hint.
    assert!(
        !h.iter().any(|(p, _)| p.line == find(&src, "var acc").0),
        "{h:?}"
    );
    assert!(
        !h.iter()
            .any(|(_, l)| l.contains("uniform") || l.contains("varying")),
        "{h:?}"
    );
    c.stop();

    let mut c = Client::start_with(json!({"uniformityHints": true}));
    c.open(uri, &src);
    let _ = c.diagnostics(uri);
    let h = hints(&mut c);
    assert_hint(&h, after("let row", "row"), "warp-uniform");
    assert_hint(&h, after("let at", "at"), "varying");
    // After the written type for a typed `var`.
    assert_hint(&h, after("var acc: f32", "acc: f32"), "varying");
    c.stop();
}

/// The code actions offered on the whole of `src` (open as `uri`), by title.
fn actions(c: &mut Client, uri: &str, src: &str, at: &str) -> Vec<CodeAction> {
    let (l, ch) = find(src, at);
    let range = json!({"start": {"line": l, "character": ch},
                       "end": {"line": l, "character": ch + at.len() as u32}});
    let v: Vec<CodeActionOrCommand> = serde_json::from_value(c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": []}}),
    ))
    .expect("code actions");
    v.into_iter()
        .filter_map(|a| match a {
            CodeActionOrCommand::CodeAction(a) => Some(a),
            CodeActionOrCommand::Command(_) => None,
        })
        .collect()
}

/// The code action at `at` whose title `title` picks (a failure lists the
/// ones offered), and `src` after it, which must check clean.
fn fix(
    c: &mut Client,
    uri: &str,
    src: &str,
    at: &str,
    title: impl Fn(&str) -> bool,
) -> (CodeAction, String) {
    let acts = actions(c, uri, src, at);
    let a = acts
        .iter()
        .find(|a| title(&a.title))
        .cloned()
        .unwrap_or_else(|| panic!("{acts:?}"));
    let fixed = apply_and_recheck(c, uri, src, &a);
    (a, fixed)
}

/// Apply `a` to `src` and check the result with a fresh document: it must
/// have no diagnostics.
fn apply_and_recheck(c: &mut Client, uri: &str, src: &str, a: &CodeAction) -> String {
    let changes = a
        .edit
        .as_ref()
        .and_then(|e| e.changes.clone())
        .expect("changes");
    let edits = &changes[&Url::parse(uri).expect("uri")];
    let fixed = apply(src, edits);
    let uri2 = format!("{uri}.fixed.pho");
    c.open(&uri2, &fixed);
    let d = c.diagnostics(&uri2);
    assert!(d.is_empty(), "after `{}`:\n{fixed}\n{d:?}", a.title);
    fixed
}

#[test]
fn code_action_declares_the_float_type() {
    let src = &rejected("float_added_to_an_integer_literal_var");
    let uri = "file:///acc.pho";
    let (mut c, d) = Client::opened(uri, src);
    assert_eq!(d[0].code, Some(NumberOrString::String("P0400".into())));
    let (a, fixed) = fix(&mut c, uri, src, "A[i, ctx.thread]", |t| {
        t.contains("as `f32`")
    });
    assert_eq!(a.kind, Some(CodeActionKind::QUICKFIX));
    assert_eq!(a.diagnostics.as_ref().map(Vec::len), Some(1));
    assert!(fixed.contains("  var acc: f32 = 0.0\n"), "{fixed}");
    c.stop();
}

#[test]
fn code_action_moves_a_collective_out_of_a_varying_if_only_where_valid() {
    // The page's lane-divergent kernel.
    let src = &rejected("lane_divergent_sum");
    let uri = "file:///hoist.pho";
    let (mut c, d) = Client::opened(uri, src);
    assert_eq!(d[0].code, Some(NumberOrString::String("P0700".into())));
    let (_, fixed) = fix(&mut c, uri, src, "sum<over ctx.lane>(x)", |t| {
        t.starts_with("Move `sum<over ctx.lane>(x)` before the `if`")
    });
    assert!(
        fixed.contains("  var r = 0.0\n  let sum_all = sum<over ctx.lane>(x)\n  if ctx.lane == 0 {\n    r = sum_all\n  }"),
        "{fixed}"
    );

    // Not offered: the value loads under the guard (moved out, it could
    // read out of bounds), or reads a name assigned inside the `if`.
    for body in [
        "    r = sum<over ctx.lane>(A[0, ctx.thread + 1])",
        "    r = 2.0\n    r = sum<over ctx.lane>(r)",
    ] {
        let bad = src.replace("    r = sum<over ctx.lane>(x)", body);
        let uri = "file:///nohoist.pho";
        c.open(uri, &bad);
        assert_eq!(
            c.diagnostics(uri)[0].code,
            Some(NumberOrString::String("P0700".into()))
        );
        let acts = actions(&mut c, uri, &bad, "sum<over ctx.lane>");
        assert!(
            !acts.iter().any(|a| a.title.starts_with("Move")),
            "{bad}\n{acts:?}"
        );
    }
    c.stop();
}

#[test]
fn code_action_uses_ctx_warp() {
    let src = "@launch(128)\nkernel k(A: tensor<f32>[4, 32], O: tensor<f32>[1, 4]) {\n  let w = ctx.thread / 32\n  let s = sum<over ctx.lane>(A[w, ctx.thread % 32])\n  if ctx.lane == 0 {\n    O[0, w] = s\n  }\n}\n";
    let uri = "file:///warp.pho";
    let (mut c, d) = Client::opened(uri, src);
    assert!(d.is_empty());
    let (a, fixed) = fix(&mut c, uri, src, "ctx.thread / 32", |t| {
        t.starts_with("Use `ctx.warp`")
    });
    assert_eq!(a.kind, Some(CodeActionKind::REFACTOR_REWRITE));
    assert!(fixed.contains("  let w = ctx.warp\n"), "{fixed}");
    let (_, fixed) = fix(&mut c, uri, src, "ctx.thread % 32", |t| {
        t.starts_with("Use `ctx.lane`")
    });
    assert!(fixed.contains("A[w, ctx.lane]"), "{fixed}");
    // Nothing to rewrite on a plain name.
    assert!(actions(&mut c, uri, src, "O[0, w]").is_empty());
    c.stop();
}

#[test]
fn a_project_s_phobos_toml_chooses_the_targets_checked() {
    // Issue 26: the server checked for sm_75 alone, so a bf16 `dot` in a
    // project built for sm_80 and sm_90 showed P0811 in the editor.
    let bf16 = "@launch(128)\nkernel k(H: tensor<bf16>[M, K], C: tensor<f32>[M, N]) {\n  let r = ctx.block.x * 64\n  let c = ctx.block.y * 64\n  var acc = zeros<f32>[64, 64]\n  var a = H[r :+ 64, 0 :+ 16]\n  var b = H[c :+ 64, 0 :+ 16]\n  acc += dot(a, trans(b))\n  C[r :+ 64, c :+ 64] = acc\n}\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join("kernels")).expect("mkdir");
    std::fs::write(project.join("Cargo.toml"), "").expect("write");
    std::fs::write(
        project.join("phobos.toml"),
        "[build]\narches = [\"sm_80\", 90]\n",
    )
    .expect("write");
    let lone = dir.path().join("lone");
    std::fs::create_dir_all(&lone).expect("mkdir");
    let uri = |p: &std::path::Path| Url::from_file_path(p).expect("a file URL").to_string();
    let in_project = uri(&project.join("kernels/k.pho"));
    let alone = uri(&lone.join("k.pho"));
    let mut c = Client::start();
    c.open(&in_project, bf16);
    let d = c.diagnostics(&in_project);
    assert!(d.is_empty(), "{d:?}");
    c.open(&alone, bf16);
    let d = c.diagnostics(&alone);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].code, Some(NumberOrString::String("P0811".into())));
    // A project for sm_75 and sm_80 reports sm_75's error once.
    std::fs::write(
        project.join("phobos.toml"),
        "[build]\narches = [\"sm_75\", \"sm_80\"]\n",
    )
    .expect("write");
    let again = uri(&project.join("kernels/again.pho"));
    c.open(&again, bf16);
    let d = c.diagnostics(&again);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].code, Some(NumberOrString::String("P0811".into())));
    c.stop();
}
