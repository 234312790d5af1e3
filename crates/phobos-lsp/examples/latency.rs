//! Request latency of the language server on a 2,000-line document, as
//! docs/benchmarks.md records it. The server runs in this process on an
//! in-memory `lsp-server` connection (no pipes), with `debounceMs: 0`, so
//! the time from `didChange` to `publishDiagnostics` is the analysis and
//! the message handling alone, without the debounce delay.
//!
//! `cargo run --release -p phobos-lsp --example latency`

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The seed page's lanes matvec repeated under new names to 2,000 lines,
/// with one `fn` that every tenth kernel calls.
fn big_file() -> String {
    let kernel = include_str!("../../phobos-core/tests/seed/lanes_matvec.pho");
    let mut out = String::from("fn scaled(v) = v * 1.0\n\n");
    let mut i = 0;
    while out.lines().count() < 2000 {
        let mut k = kernel.replace("lanes_matvec", &format!("lanes_matvec_{i}"));
        if i % 10 == 0 {
            k = k.replace("y[0, row] = total", "y[0, row] = scaled(total)");
        }
        out.push_str(&k);
        out.push('\n');
        i += 1;
    }
    out
}

struct Client {
    conn: Connection,
    next: i32,
}

impl Client {
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = RequestId::from(self.next);
        let req = Request::new(id.clone(), method.into(), params);
        self.conn.sender.send(Message::Request(req)).expect("send");
        loop {
            match self.conn.receiver.recv().expect("receive") {
                Message::Response(r) if r.id == id => {
                    assert!(r.error.is_none(), "{method}: {:?}", r.error);
                    return r.result.unwrap_or(Value::Null);
                }
                _ => {}
            }
        }
    }
    fn notify(&mut self, method: &str, params: Value) {
        let n = Notification::new(method.into(), params);
        self.conn
            .sender
            .send(Message::Notification(n))
            .expect("send");
    }
    fn diagnostics(&mut self) -> Vec<Value> {
        loop {
            if let Message::Notification(n) = self.conn.receiver.recv().expect("receive") {
                if n.method == "textDocument/publishDiagnostics" {
                    return n.params["diagnostics"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                }
            }
        }
    }
}

const URI: &str = "file:///big.pho";

fn pos(src: &str, at: usize) -> Value {
    let line = src[..at].matches('\n').count();
    let col = at - src[..at].rfind('\n').map_or(0, |i| i + 1);
    json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": col}})
}

fn row(what: &str, times: &mut [Duration]) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {what} | {} | {:.2} | {:.2} |",
        times.len(),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
}

fn main() {
    let src = big_file();
    let (server, client) = Connection::memory();
    let thread = std::thread::spawn(move || phobos_lsp::server::serve(&server));
    let mut c = Client {
        conn: client,
        next: 0,
    };
    c.request(
        "initialize",
        json!({"capabilities": {}, "initializationOptions": {"debounceMs": 0, "uniformityHints": true}}),
    );
    c.notify("initialized", json!({}));
    println!(
        "{} lines, {} kernels; median and slowest of the runs, in ms",
        src.lines().count(),
        src.matches("kernel ").count()
    );
    println!();
    println!("| request | runs | median | max |");
    println!("|---|---|---|---|");

    let start = Instant::now();
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "phobos", "version": 1, "text": src}}),
    );
    assert!(c.diagnostics().is_empty());
    row(
        "open: didOpen → diagnostics (every kernel checked and compiled)",
        &mut [start.elapsed()],
    );

    let mut version = 1;
    let mut change = |c: &mut Client, text: &str| {
        version += 1;
        let start = Instant::now();
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": version}, "contentChanges": [{"text": text}]}),
        );
        let d = c.diagnostics();
        (start.elapsed(), d.len())
    };
    // Typing in the middle kernel: each edit changes one kernel's text.
    let middle = src.find("lanes_matvec_60(").expect("kernel 60");
    let acc = middle + src[middle..].find("var acc: f32 = 0.0").expect("acc") + 15;
    let mut times = Vec::new();
    let mut text = src.clone();
    for i in 0..20 {
        text.insert(acc + i, '0');
        let (t, n) = change(&mut c, &text);
        assert_eq!(n, 0);
        times.push(t);
    }
    row("didChange → diagnostics, typing in one kernel", &mut times);
    // An error typed in, and removed.
    let mut times = Vec::new();
    for i in 0..10 {
        let bad = text.replacen("acc += sum(", &format!("acc += ctx.lane * {i} + sum("), 1);
        let (t, n) = change(&mut c, &bad);
        assert!(n > 0);
        times.push(t);
        let (t, n) = change(&mut c, &text);
        assert_eq!(n, 0);
        times.push(t);
    }
    row(
        "didChange → diagnostics, an error typed and undone",
        &mut times,
    );
    // A line added at the top moves every kernel; none is checked again.
    let mut times = Vec::new();
    for i in 0..10 {
        let moved = format!("{}{text}", "// moved\n".repeat(i + 1));
        let (t, _) = change(&mut c, &moved);
        times.push(t);
    }
    row(
        "didChange → diagnostics, lines added above every kernel",
        &mut times,
    );
    // Editing the fn: the kernels that call it (one in ten) are checked again.
    let mut times = Vec::new();
    for i in 0..10 {
        let f = text.replace("v * 1.0", &format!("v * {i}.5"));
        let (t, _) = change(&mut c, &f);
        times.push(t);
    }
    row(
        "didChange → diagnostics, editing a fn called by 1 in 10 kernels",
        &mut times,
    );
    change(&mut c, &text);

    let time = |c: &mut Client, what: &str, method: &str, params: Value| {
        let mut times = Vec::new();
        let mut result = Value::Null;
        for _ in 0..20 {
            let start = Instant::now();
            result = c.request(method, params.clone());
            times.push(start.elapsed());
        }
        row(what, &mut times);
        result
    };
    let last_row = text.rfind("if row < N").expect("row") + 3;
    let last_sum = text.rfind("sum<over").expect("sum");
    let last_acc = text.rfind("acc += ").expect("acc");
    assert!(!time(
        &mut c,
        "hover on a local",
        "textDocument/hover",
        pos(&text, last_row)
    )
    .is_null());
    time(
        &mut c,
        "hover on a collective",
        "textDocument/hover",
        pos(&text, last_sum),
    );
    time(
        &mut c,
        "definition",
        "textDocument/definition",
        pos(&text, last_acc),
    );
    let mut refs = pos(&text, last_acc);
    refs["context"] = json!({"includeDeclaration": true});
    time(&mut c, "references", "textDocument/references", refs);
    time(
        &mut c,
        "completion",
        "textDocument/completion",
        pos(&text, last_acc),
    );
    let doc = json!({"textDocument": {"uri": URI}});
    time(
        &mut c,
        "semantic tokens (whole document)",
        "textDocument/semanticTokens/full",
        doc.clone(),
    );
    let whole = json!({"textDocument": {"uri": URI}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 3000, "character": 0}}});
    time(
        &mut c,
        "inlay hints (whole document, with uniformity)",
        "textDocument/inlayHint",
        whole.clone(),
    );
    let mut ctx = whole.clone();
    ctx["context"] = json!({"diagnostics": []});
    time(
        &mut c,
        "code actions (whole document)",
        "textDocument/codeAction",
        ctx,
    );
    let mut fmt = doc.clone();
    fmt["options"] = json!({"tabSize": 2, "insertSpaces": true});
    time(
        &mut c,
        "formatting (whole document)",
        "textDocument/formatting",
        fmt,
    );

    c.request("shutdown", Value::Null);
    c.notify("exit", Value::Null);
    thread.join().expect("server thread").expect("server");
}
