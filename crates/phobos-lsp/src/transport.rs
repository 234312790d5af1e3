//! The stdio transport: `lsp-server` reads and writes each message
//! (`Message::read`, `Message::write`); this module owns the two threads
//! that move them between stdin/stdout and the server's `Connection`, and
//! a guard in front of stdin that bounds what one message may make
//! `lsp-server` allocate.
//!
//! `lsp-server` allocates a message's declared `Content-Length` before it
//! reads the body, and reads a header line for as long as no line break
//! comes. A client that declares 100 GB (or sends an endless header)
//! would abort the server on a failed allocation. [`FrameGuard`] watches
//! the bytes go by and fails the read, with an error that says why, when
//! a header line exceeds [`MAX_HEADER_LINE_BYTES`] or a `Content-Length`
//! exceeds [`MAX_MESSAGE_BYTES`], before `lsp-server` sees that header.
//! It only checks: the framing itself stays `lsp-server`'s.

use lsp_server::{Connection, Message};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::thread;

/// The largest message body the server accepts: 64 MiB, far above any
/// document a person edits (the compiler's own source cap is smaller).
pub const MAX_MESSAGE_BYTES: u64 = 64 << 20;

/// The longest header line the server accepts, line break included.
pub const MAX_HEADER_LINE_BYTES: usize = 4096;

/// Where the guard is in the stream of messages.
#[derive(Debug)]
enum State {
    /// Reading header lines; `length` is the `Content-Length` seen so far.
    Header { length: Option<u64> },
    /// Passing over a body with this many bytes left.
    Body { left: u64 },
}

/// A `Read` adapter that checks each message's headers against the
/// limits above as the bytes pass through it, unchanged.
pub struct FrameGuard<R> {
    inner: R,
    state: State,
    /// The header line read so far (at most [`MAX_HEADER_LINE_BYTES`]).
    line: Vec<u8>,
    max_message: u64,
    /// An error found after some bytes of the same read were returned.
    pending: Option<io::Error>,
}

impl<R: Read> FrameGuard<R> {
    pub fn new(inner: R) -> FrameGuard<R> {
        FrameGuard::with_limit(inner, MAX_MESSAGE_BYTES)
    }

    /// A guard with another body limit (tests use small ones).
    pub fn with_limit(inner: R, max_message: u64) -> FrameGuard<R> {
        FrameGuard {
            inner,
            state: State::Header { length: None },
            line: Vec::new(),
            max_message,
            pending: None,
        }
    }

    /// Advances the state over `bytes`; on a violation returns how many
    /// bytes before it are fine, with the error.
    fn scan(&mut self, bytes: &[u8]) -> Result<(), (usize, io::Error)> {
        let mut i = 0;
        while i < bytes.len() {
            match &mut self.state {
                State::Body { left } => {
                    let take = (*left).min((bytes.len() - i) as u64);
                    *left -= take;
                    i += take as usize;
                    if *left == 0 {
                        self.state = State::Header { length: None };
                    }
                }
                State::Header { length } => {
                    let b = bytes[i];
                    if self.line.len() >= MAX_HEADER_LINE_BYTES {
                        return Err((
                            i,
                            invalid(format!(
                                "a message header line is longer than {MAX_HEADER_LINE_BYTES} bytes"
                            )),
                        ));
                    }
                    self.line.push(b);
                    if b == b'\n' {
                        let line = String::from_utf8_lossy(&self.line);
                        let line = line.trim_end_matches(['\r', '\n']);
                        if line.is_empty() {
                            // The body follows; without a valid length
                            // lsp-server reports the missing header.
                            self.state = match *length {
                                Some(0) | None => State::Header { length: None },
                                Some(left) => State::Body { left },
                            };
                        } else if let Some((name, value)) = line.split_once(':') {
                            if name.trim().eq_ignore_ascii_case("Content-Length") {
                                let value = value.trim();
                                // Digits that overflow u64 are over any limit.
                                let fits = value.parse::<u64>().ok();
                                let digits =
                                    !value.is_empty() && value.bytes().all(|c| c.is_ascii_digit());
                                match fits {
                                    Some(n) if n <= self.max_message => *length = Some(n),
                                    // Not a number: lsp-server refuses it.
                                    None if !digits => {}
                                    _ => {
                                        let limit = self.max_message;
                                        return Err((
                                            i,
                                            invalid(format!(
                                                "a message declares Content-Length {value}; \
                                                 the limit is {limit} bytes ({} MiB)",
                                                limit >> 20
                                            )),
                                        ));
                                    }
                                }
                            }
                        }
                        self.line.clear();
                    }
                    i += 1;
                }
            }
        }
        Ok(())
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl<R: Read> Read for FrameGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let n = self.inner.read(buf)?;
        match self.scan(&buf[..n]) {
            Ok(()) => Ok(n),
            // The bytes before the bad one go through (they end no header
            // line), and the error comes with the next read.
            Err((0, e)) => Err(e),
            Err((good, e)) => {
                self.pending = Some(e);
                Ok(good)
            }
        }
    }
}

/// Reads messages from `input` and sends each until the input ends, the
/// client sends `exit`, or a message is refused.
fn read_messages(
    input: &mut impl BufRead,
    mut send: impl FnMut(Message) -> bool,
) -> io::Result<()> {
    while let Some(msg) = Message::read(input)? {
        let is_exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
        if !send(msg) || is_exit {
            break;
        }
    }
    Ok(())
}

/// Runs `serve` on a connection whose messages come from stdin through a
/// [`FrameGuard`] and go to stdout. A refused message ends the server
/// with an error that says why.
pub fn run_stdio(serve: impl FnOnce(&Connection) -> Result<(), String>) -> Result<(), String> {
    let (server, client) = Connection::memory();
    let Connection { sender, receiver } = client;
    let reader = thread::Builder::new()
        .name("phobos-lsp-reader".into())
        .spawn(move || {
            let mut input = BufReader::new(FrameGuard::new(io::stdin().lock()));
            read_messages(&mut input, |msg| sender.send(msg).is_ok())
        })
        .map_err(|e| e.to_string())?;
    let writer = thread::Builder::new()
        .name("phobos-lsp-writer".into())
        .spawn(move || -> io::Result<()> {
            let mut out = io::stdout().lock();
            for msg in receiver {
                msg.write(&mut out)?;
                out.flush()?;
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
    let served = serve(&server);
    drop(server);
    let read = reader.join().map_err(|_| "the reader thread panicked")?;
    let written = writer.join().map_err(|_| "the writer thread panicked")?;
    // A refused message is the cause of whatever the server then saw.
    read.map_err(|e| e.to_string())?;
    served?;
    written.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &[u8], limit: u64) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        // A small buffer makes the guard see headers split across reads.
        let mut g = BufReader::with_capacity(3, FrameGuard::with_limit(input, limit));
        g.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn messages_within_the_limit_pass_unchanged() {
        let input = b"Content-Length: 5\r\n\r\nhelloContent-Type: x\r\ncontent-length:3\r\n\r\nabc";
        assert_eq!(read_all(input, 5).unwrap(), input);
    }

    #[test]
    fn a_body_may_contain_header_like_text() {
        let input = b"Content-Length: 22\r\n\r\nContent-Length: 99999\nContent-Length: 1\r\n\r\nx";
        assert_eq!(read_all(input, 30).unwrap(), input);
    }

    #[test]
    fn a_declared_length_over_the_limit_is_refused() {
        for declared in ["6", "99999999999", "999999999999999999999999"] {
            let input = format!("Content-Length: 1\r\n\r\nxContent-Length: {declared}\r\n\r\n");
            let e = read_all(input.as_bytes(), 5).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("Content-Length {declared}")),
                "{e}"
            );
            assert!(e.to_string().contains("limit is 5 bytes"), "{e}");
        }
    }

    #[test]
    fn an_endless_header_line_is_refused() {
        let input = vec![b'a'; 10 * MAX_HEADER_LINE_BYTES];
        let e = read_all(&input, 5).unwrap_err();
        assert!(e.to_string().contains("header line is longer"), "{e}");
    }

    #[test]
    fn lsp_server_reads_through_the_guard() {
        let body = r#"{"jsonrpc":"2.0","method":"exit"}"#;
        let input = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let mut r = BufReader::new(FrameGuard::new(input.as_bytes()));
        let msg = Message::read(&mut r).unwrap().unwrap();
        assert!(matches!(msg, Message::Notification(n) if n.method == "exit"));
        assert!(Message::read(&mut r).unwrap().is_none());
    }
}
