//! A minimal Chrome DevTools Protocol client for the browser tests: starts
//! headless Chromium with a fresh profile and no network features, finds
//! its page target, and talks to it over a WebSocket written here on top of
//! `std::net` (a few dozen lines; no dependency). Only what the tests use:
//! commands with replies, and the events that arrive meanwhile.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Chromium binary: `PHOBOS_CHROMIUM`, else the first of the usual
/// names on `PATH`.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PHOBOS_CHROMIUM") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

pub struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    ws: WebSocket,
    next_id: u64,
    /// Events received while waiting for replies, oldest first.
    pub events: VecDeque<Value>,
}

impl Browser {
    /// Start headless Chromium and connect to its first page.
    pub fn launch(binary: &Path) -> Result<Browser, String> {
        let profile = tempfile::tempdir().map_err(|e| format!("temp profile: {e}"))?;
        let child = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                "--window-size=1280,1400",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let mut browser_guard = KillOnDrop(Some(child));
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        let port: u16 = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                if let Some(p) = text.lines().next().and_then(|l| l.trim().parse().ok()) {
                    break p;
                }
            }
            if Instant::now() > deadline {
                return Err("Chromium did not open its DevTools port within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let ws_url = loop {
            let list = http_get(port, "/json/list")?;
            let targets: Value =
                serde_json::from_str(&list).map_err(|e| format!("/json/list: {e}"))?;
            let page = targets
                .as_array()
                .and_then(|a| a.iter().find(|t| t["type"] == "page"))
                .and_then(|t| t["webSocketDebuggerUrl"].as_str())
                .map(str::to_string);
            if let Some(url) = page {
                break url;
            }
            if Instant::now() > deadline {
                return Err("Chromium has no page target".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let path = ws_url
            .split_once("//")
            .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_string()))
            .ok_or_else(|| format!("odd WebSocket URL {ws_url}"))?;
        let ws = WebSocket::connect(port, &path)?;
        let child = browser_guard.0.take().ok_or("lost the child")?;
        Ok(Browser {
            child,
            _profile: profile,
            ws,
            next_id: 1,
            events: VecDeque::new(),
        })
    }

    /// Send a command and wait for its reply (at most `timeout`).
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let msg = json!({"id": id, "method": method, "params": params});
        self.ws.send(&msg.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if Instant::now() > deadline {
                return Err(format!("no reply to {method} within 30 s"));
            }
            let text = self.ws.recv()?;
            let v: Value = serde_json::from_str(&text).map_err(|e| format!("bad message: {e}"))?;
            if v["id"] == id {
                if let Some(err) = v.get("error") {
                    return Err(format!("{method} failed: {err}"));
                }
                return Ok(v["result"].clone());
            }
            if v.get("method").is_some() {
                self.events.push_back(v);
            }
        }
    }

    /// Poll a JavaScript expression until it is `true`; returns how long
    /// that took.
    pub fn wait_for(&mut self, expr: &str, timeout: Duration) -> Result<Duration, String> {
        let start = Instant::now();
        loop {
            if self.eval(expr)? == Value::Bool(true) {
                return Ok(start.elapsed());
            }
            if start.elapsed() > timeout {
                return Err(format!("`{expr}` did not become true within {timeout:?}"));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Evaluate a JavaScript expression in the page; returns its value.
    pub fn eval(&mut self, expr: &str) -> Result<Value, String> {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(format!("`{expr}` threw: {ex}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// A PNG screenshot of the whole page.
    pub fn screenshot(&mut self) -> Result<Vec<u8>, String> {
        // Fit the viewport to the page, so the image holds all of it and
        // nothing below it.
        let height = self
            .eval("Math.ceil(document.body.getBoundingClientRect().bottom + window.scrollY)")?
            .as_u64()
            .unwrap_or(1400)
            .clamp(200, 4000);
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        )?;
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        )?;
        let data = r["data"].as_str().ok_or("no screenshot data")?;
        base64_decode(data)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Kills the browser if launching fails halfway.
struct KillOnDrop(Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn http_get(port: u16, path: &str) -> Result<String, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| e.to_string())?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n")
        .map_err(|e| e.to_string())?;
    // The DevTools server keeps the connection open: read by Content-Length.
    let mut reader = BufReader::new(s);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .map_err(|e| format!("read: {e}"))?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value
                    .trim()
                    .parse()
                    .map_err(|e| format!("Content-Length: {e}"))?;
            }
        }
    }
    let mut body = vec![0u8; length];
    reader
        .read_exact(&mut body)
        .map_err(|e| format!("read: {e}"))?;
    String::from_utf8(body).map_err(|e| e.to_string())
}

/// A client WebSocket (RFC 6455) over plain TCP: text frames, masked as a
/// client must, with fragmented and long messages handled.
struct WebSocket {
    reader: BufReader<TcpStream>,
    stream: TcpStream,
}

impl WebSocket {
    fn connect(port: u16, path: &str) -> Result<WebSocket, String> {
        let stream =
            TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
        let mut w = stream.try_clone().map_err(|e| e.to_string())?;
        write!(
            w,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: cGhvYm9zLWV4cGxhaW4hIQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .map_err(|e| e.to_string())?;
        // A browser that stops answering fails the test instead of hanging it.
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?;
        let mut reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
        let mut status = String::new();
        reader.read_line(&mut status).map_err(|e| e.to_string())?;
        if !status.contains(" 101 ") {
            return Err(format!("WebSocket handshake refused: {}", status.trim()));
        }
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).map_err(|e| e.to_string())?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        Ok(WebSocket { reader, stream })
    }

    fn send(&mut self, text: &str) -> Result<(), String> {
        let payload = text.as_bytes();
        let mut frame = vec![0x81u8];
        let n = payload.len();
        if n < 126 {
            frame.push(0x80 | n as u8);
        } else if n <= 0xFFFF {
            frame.push(0x80 | 126);
            frame.extend((n as u16).to_be_bytes());
        } else {
            frame.push(0x80 | 127);
            frame.extend((n as u64).to_be_bytes());
        }
        let mask = [0x37u8, 0xA1, 0x5C, 0x02];
        frame.extend(mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream
            .write_all(&frame)
            .map_err(|e| format!("send: {e}"))
    }

    /// The next whole text message.
    fn recv(&mut self) -> Result<String, String> {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.reader
                .read_exact(&mut head)
                .map_err(|e| format!("recv: {e}"))?;
            let fin = head[0] & 0x80 != 0;
            let opcode = head[0] & 0x0F;
            let masked = head[1] & 0x80 != 0;
            let mut len = u64::from(head[1] & 0x7F);
            if len == 126 {
                let mut b = [0u8; 2];
                self.reader.read_exact(&mut b).map_err(|e| e.to_string())?;
                len = u64::from(u16::from_be_bytes(b));
            } else if len == 127 {
                let mut b = [0u8; 8];
                self.reader.read_exact(&mut b).map_err(|e| e.to_string())?;
                len = u64::from_be_bytes(b);
            }
            let mut mask = [0u8; 4];
            if masked {
                self.reader
                    .read_exact(&mut mask)
                    .map_err(|e| e.to_string())?;
            }
            let mut payload = vec![0u8; len as usize];
            self.reader
                .read_exact(&mut payload)
                .map_err(|e| e.to_string())?;
            if masked {
                for (i, b) in payload.iter_mut().enumerate() {
                    *b ^= mask[i % 4];
                }
            }
            match opcode {
                0x8 => return Err("the browser closed the connection".into()),
                0x9 => {
                    // Ping: answer with a masked pong carrying the same data.
                    let mut frame = vec![0x8A, 0x80 | payload.len().min(125) as u8, 0, 0, 0, 0];
                    frame.extend(payload.iter().take(125));
                    self.stream.write_all(&frame).map_err(|e| e.to_string())?;
                    continue;
                }
                0xA => continue,
                _ => message.extend(payload),
            }
            if fin {
                return String::from_utf8(message).map_err(|e| format!("not UTF-8: {e}"));
            }
        }
    }
}

fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' | b'\n' | b'\r' => continue,
            _ => return Err(format!("bad base64 byte {c}")),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Ok(out)
}
