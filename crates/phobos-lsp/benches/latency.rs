//! `cargo bench -p phobos-lsp --bench latency`: how long the language
//! server takes to answer each request it serves, on a 2,000-line
//! document, as docs/benchmarks.md records it. Plain `std::time`, no
//! benchmark framework; a table of the median and slowest of the runs.
//!
//! The server runs in this process on an in-memory `lsp-server` connection
//! (the JSON messages and their dispatch are timed, the pipes are not),
//! with `debounceMs: 0`, so the time from a `didChange` to its
//! `publishDiagnostics` is the work alone, without the debounce delay.
//! Every edit sends the whole text (full sync), as editors do with this
//! server.
//!
//! `-- --runs N` sets the runs per row (default 20). The load average is
//! printed before and after: other builds on the machine slow every row.

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

const URI: &str = "file:///big.pho";

struct Client {
    conn: Connection,
    next: i32,
    version: i32,
    /// `publishDiagnostics` notifications received so far (one follows
    /// each edit, also when a request for the new text came first).
    published: usize,
}

const PUBLISH: &str = "textDocument/publishDiagnostics";

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
                Message::Notification(n) if n.method == PUBLISH => self.published += 1,
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
                if n.method == PUBLISH {
                    self.published += 1;
                    return n.params["diagnostics"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                }
            }
        }
    }

    /// Send the whole new text without waiting for anything.
    fn send_change(&mut self, text: &str) {
        self.version += 1;
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": self.version},
                   "contentChanges": [{"text": text}]}),
        );
    }

    /// Send the whole new text and wait for its diagnostics: the time it
    /// took and how many there are.
    fn change(&mut self, text: &str) -> (Duration, usize) {
        let start = Instant::now();
        self.send_change(text);
        let d = self.diagnostics();
        (start.elapsed(), d.len())
    }

    /// Time `runs` requests, print their row, return the last result.
    fn time(&mut self, runs: usize, what: &str, method: &str, params: Value) -> Value {
        let mut times = Vec::new();
        let mut result = Value::Null;
        for _ in 0..runs {
            let start = Instant::now();
            result = self.request(method, params.clone());
            times.push(start.elapsed());
        }
        row(what, &mut times);
        result
    }
}

fn position(src: &str, at: usize) -> Value {
    let line = src[..at].matches('\n').count();
    let col = at - src[..at].rfind('\n').map_or(0, |i| i + 1);
    json!({"line": line, "character": col})
}

fn at(src: &str, at: usize) -> Value {
    json!({"textDocument": {"uri": URI}, "position": position(src, at)})
}

fn lines(start: usize, end: usize) -> Value {
    json!({"textDocument": {"uri": URI},
           "range": {"start": {"line": start, "character": 0},
                     "end": {"line": end, "character": 0}}})
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

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn runs_from_args() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(20)
}

fn main() {
    let runs = runs_from_args();
    let src = big_file();
    let (server, client) = Connection::memory();
    let thread = std::thread::spawn(move || phobos_lsp::server::serve(&server));
    let mut c = Client {
        conn: client,
        next: 0,
        version: 1,
        published: 0,
    };
    c.request(
        "initialize",
        json!({"capabilities": {}, "initializationOptions": {"debounceMs": 0, "uniformityHints": true}}),
    );
    c.notify("initialized", json!({}));
    println!(
        "{} lines, {} kernels, {} build; load average before: {}",
        src.lines().count(),
        src.matches("kernel ").count(),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "optimized"
        },
        load_average()
    );
    println!();
    println!("| request | runs | median ms | max ms |");
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

    let text = edits(&mut c, runs, &src);
    queries(&mut c, runs, &text);
    tokens(&mut c, runs, &text);
    actions(&mut c, runs, &text);
    let mut fmt = json!({"textDocument": {"uri": URI}});
    fmt["options"] = json!({"tabSize": 2, "insertSpaces": true});
    c.time(
        runs,
        "formatting (whole document)",
        "textDocument/formatting",
        fmt,
    );

    c.request("shutdown", Value::Null);
    c.notify("exit", Value::Null);
    thread.join().expect("server thread").expect("server");
    println!();
    println!("load average after: {}", load_average());
}

/// Edits, each timed to its diagnostics. Returns the text left open.
fn edits(c: &mut Client, runs: usize, src: &str) -> String {
    // Typing in the middle kernel: each edit changes one kernel's text.
    let middle = src.find("lanes_matvec_60(").expect("kernel 60");
    let acc = middle + src[middle..].find("var acc: f32 = 0.0").expect("acc") + 15;
    let mut times = Vec::new();
    let mut text = src.to_string();
    for i in 0..runs {
        text.insert(acc + i, '0');
        let (t, n) = c.change(&text);
        assert_eq!(n, 0);
        times.push(t);
    }
    row("didChange → diagnostics, typing in one kernel", &mut times);
    // An error typed in, and removed.
    let mut times = Vec::new();
    for i in 0..runs.div_ceil(2) {
        let bad = text.replacen("acc += sum(", &format!("acc += ctx.lane * {i} + sum("), 1);
        let (t, n) = c.change(&bad);
        assert!(n > 0);
        times.push(t);
        let (t, n) = c.change(&text);
        assert_eq!(n, 0);
        times.push(t);
    }
    row(
        "didChange → diagnostics, an error typed and undone",
        &mut times,
    );
    // A line added at the top moves every kernel; none is checked again.
    let mut times = Vec::new();
    for i in 0..runs {
        let moved = format!("{}{text}", "// moved\n".repeat(i + 1));
        times.push(c.change(&moved).0);
    }
    row(
        "didChange → diagnostics, lines added above every kernel (nothing re-checked)",
        &mut times,
    );
    // Editing the fn: the kernels that call it (one in ten) are checked again.
    let mut times = Vec::new();
    for i in 0..runs {
        let f = text.replace("v * 1.0", &format!("v * {i}.5"));
        times.push(c.change(&f).0);
    }
    row(
        "didChange → diagnostics, editing a fn called by 1 in 10 kernels",
        &mut times,
    );
    c.change(&text);
    text
}

/// Hover, definition, references and completion near the end of the file.
fn queries(c: &mut Client, runs: usize, text: &str) {
    let last_row = text.rfind("if row < N").expect("row") + 3;
    let last_sum = text.rfind("sum<over").expect("sum");
    let last_load = text.rfind("W[row, at :+ 4]").expect("load");
    let last_acc = text.rfind("acc += ").expect("acc");
    let hover = c.time(
        runs,
        "hover on a local",
        "textDocument/hover",
        at(text, last_row),
    );
    assert!(hover["contents"]["value"]
        .as_str()
        .is_some_and(|h| h.contains("warp-uniform")));
    let hover = c.time(
        runs,
        "hover on a subscript (load width and why)",
        "textDocument/hover",
        at(text, last_load),
    );
    assert!(!hover.is_null());
    c.time(
        runs,
        "hover on a collective",
        "textDocument/hover",
        at(text, last_sum),
    );
    let def = c.time(
        runs,
        "definition",
        "textDocument/definition",
        at(text, last_acc),
    );
    assert!(!def.is_null());
    let mut refs = at(text, last_acc);
    refs["context"] = json!({"includeDeclaration": true});
    c.time(runs, "references", "textDocument/references", refs);
    c.time(
        runs,
        "completion (names in scope)",
        "textDocument/completion",
        at(text, last_acc),
    );
    let dot = text.rfind("ctx.lane == 0").expect("ctx.") + 4;
    c.time(
        runs,
        "completion after `ctx.`",
        "textDocument/completion",
        at(text, dot),
    );
}

/// Semantic tokens (whole, one screen, delta after an edit) and inlay hints.
fn tokens(c: &mut Client, runs: usize, text: &str) {
    let doc = json!({"textDocument": {"uri": URI}});
    let full = c.time(
        runs,
        "semantic tokens, whole document",
        "textDocument/semanticTokens/full",
        doc,
    );
    let screen_start = text[..text.len() / 2].matches('\n').count();
    let screen = lines(screen_start, screen_start + 60);
    let part = c.time(
        runs,
        "semantic tokens, range of 60 lines",
        "textDocument/semanticTokens/range",
        screen.clone(),
    );
    assert!(part["data"].as_array().is_some_and(|d| !d.is_empty()));
    // Typing in one kernel, then the tokens again: the editor's usual
    // request after an edit, answered with one edit of the array. First
    // as editors send it, before the debounced diagnostics (the request
    // analyses the new text), then once the diagnostics are out.
    let mut previous = full["resultId"].as_str().expect("result id").to_string();
    let acc = text.find("var acc: f32 = 0.0").expect("acc") + 15;
    let mut edited = text.to_string();
    for (what, analysed_first) in [
        (
            "didChange → semantic tokens delta (the analysis included)",
            false,
        ),
        (
            "semantic tokens delta after an edit, analysed already",
            true,
        ),
    ] {
        let mut times = Vec::new();
        for _ in 0..runs {
            edited.insert(acc, '0');
            let published = c.published;
            c.send_change(&edited);
            if analysed_first {
                c.diagnostics();
            }
            let params = json!({"textDocument": {"uri": URI}, "previousResultId": previous});
            let start = Instant::now();
            let delta = c.request("textDocument/semanticTokens/full/delta", params);
            times.push(start.elapsed());
            assert_eq!(delta["edits"].as_array().map(Vec::len), Some(1), "{delta}");
            previous = delta["resultId"].as_str().expect("id").to_string();
            // The edit's diagnostics, so that no stale ones are left queued.
            while c.published == published {
                c.diagnostics();
            }
        }
        row(what, &mut times);
    }
    c.change(text);
    c.time(
        runs,
        "inlay hints, whole document, with uniformity",
        "textDocument/inlayHint",
        lines(0, 3000),
    );
    c.time(
        runs,
        "inlay hints, range of 60 lines, with uniformity",
        "textDocument/inlayHint",
        screen,
    );
}

/// Code actions on the whole (clean) document, and on a diagnostic whose
/// fix is applied to its kernel and checked again before it is offered.
fn actions(c: &mut Client, runs: usize, text: &str) {
    let mut whole = lines(0, 3000);
    whole["context"] = json!({"diagnostics": []});
    c.time(
        runs,
        "code actions, whole document (no diagnostics)",
        "textDocument/codeAction",
        whole,
    );
    // P0400 in kernel 60: `var acc = 0` then `acc += sum(...)`.
    let middle = text.find("lanes_matvec_60(").expect("kernel 60");
    let decl = middle + text[middle..].find("var acc: f32 = 0.0").expect("acc");
    let mut bad = text.to_string();
    bad.replace_range(decl..decl + "var acc: f32 = 0.0".len(), "var acc = 0");
    let (_, n) = c.change(&bad);
    assert!(n > 0);
    let add = decl + bad[decl..].find("acc += ").expect("acc +=");
    let end = add + bad[add..].find('\n').expect("end of line");
    let params = json!({"textDocument": {"uri": URI},
                        "range": {"start": position(&bad, add), "end": position(&bad, end)},
                        "context": {"diagnostics": []}});
    let acts = c.time(
        runs,
        "code actions on a P0400 (the fix re-checked)",
        "textDocument/codeAction",
        params,
    );
    assert!(acts.as_array().is_some_and(|a| !a.is_empty()), "{acts}");
    c.change(text);
}
