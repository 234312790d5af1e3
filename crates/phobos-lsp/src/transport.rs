//! The stdio transport: this module owns the framing of messages on
//! stdin (one parser of headers, with one limit) and the two threads that
//! move them between stdin/stdout and the server's `Connection`.
//! `lsp-server` writes messages (`Message::write`) and gives the types;
//! it does not read them, because its reader allocates a message's
//! declared `Content-Length` before reading the body and reads a header
//! line for as long as no line break comes, and because a second parser
//! in front of it would have to agree with it byte for byte on where each
//! body ends.
//!
//! A message is header lines, each `Name: value` ended by `\r\n`, an empty
//! line, then `Content-Length` bytes of JSON (the Language Server Protocol's
//! base protocol, whose header fields follow HTTP's: no space between a
//! field's name and its colon). [`read_message`] refuses, with an error
//! that says why, a header line over [`MAX_HEADER_LINE_BYTES`], a line that
//! is not such a field, a missing or malformed `Content-Length`, and one over
//! [`MAX_MESSAGE_BYTES`], before it allocates anything for the body.

use lsp_server::{Connection, Message};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::thread;

/// The largest message body the server accepts: 64 MiB, far above any
/// document a person edits (the compiler's own source cap is smaller).
pub const MAX_MESSAGE_BYTES: u64 = 64 << 20;

/// The longest header line the server accepts, line break included.
pub const MAX_HEADER_LINE_BYTES: usize = 4096;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// One header line without its `\r\n`, or `None` at the end of the input
/// before any byte of it.
fn header_line(input: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let limit = MAX_HEADER_LINE_BYTES as u64;
    input.by_ref().take(limit).read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    if !line.ends_with(b"\n") {
        return Err(if line.len() as u64 >= limit {
            invalid(format!(
                "a message header line is longer than {MAX_HEADER_LINE_BYTES} bytes"
            ))
        } else {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the input ended inside a message header",
            )
        });
    }
    let Some(text) = line.strip_suffix(b"\r\n") else {
        return Err(invalid(format!(
            "malformed message header {:?}: a header line ends with \\r\\n",
            String::from_utf8_lossy(&line)
        )));
    };
    String::from_utf8(text.to_vec())
        .map(Some)
        .map_err(|_| invalid("a message header is not UTF-8".into()))
}

/// Reads one message from `input` with bodies of at most `max_body` bytes,
/// or `None` when the input ends between messages.
pub fn read_message(input: &mut impl BufRead, max_body: u64) -> io::Result<Option<Message>> {
    let mut length = None;
    let mut first = true;
    loop {
        let Some(line) = header_line(input)? else {
            if first {
                return Ok(None);
            }
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the input ended inside a message header",
            ));
        };
        first = false;
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(invalid(format!(
                "malformed message header {line:?}: a header is `Name: value`"
            )));
        };
        if name.is_empty() || name.bytes().any(|b| b.is_ascii_whitespace()) {
            return Err(invalid(format!(
                "malformed message header {line:?}: a header's name has no spaces \
                 and comes right before its colon"
            )));
        }
        if name.eq_ignore_ascii_case("Content-Length") {
            let value = value.trim_matches([' ', '\t']);
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid(format!(
                    "malformed Content-Length {value:?}: it is a number of bytes"
                )));
            }
            // Digits that overflow u64 are over any limit.
            match value.parse::<u64>() {
                Ok(n) if n <= max_body => length = Some(n),
                _ => {
                    return Err(invalid(format!(
                        "a message declares Content-Length {value}; \
                         the limit is {max_body} bytes ({} MiB)",
                        max_body >> 20
                    )))
                }
            }
        }
    }
    let Some(length) = length else {
        return Err(invalid("a message has no Content-Length header".into()));
    };
    let mut body = Vec::new();
    input.by_ref().take(length).read_to_end(&mut body)?;
    if (body.len() as u64) < length {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "the input ended {} bytes into a message of {length} bytes",
                body.len()
            ),
        ));
    }
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| invalid(format!("malformed LSP payload: {e}")))
}

/// Reads messages from `input` and sends each until the input ends, the
/// client sends `exit`, or a message is refused.
fn read_messages(
    input: &mut impl BufRead,
    mut send: impl FnMut(Message) -> bool,
) -> io::Result<()> {
    while let Some(msg) = read_message(input, MAX_MESSAGE_BYTES)? {
        let is_exit = matches!(&msg, Message::Notification(n) if n.method == "exit");
        if !send(msg) || is_exit {
            break;
        }
    }
    Ok(())
}

/// Runs `serve` on a connection whose messages come from stdin through
/// [`read_message`] and go to stdout. A refused message ends the server
/// with an error that says why.
pub fn run_stdio(serve: impl FnOnce(&Connection) -> Result<(), String>) -> Result<(), String> {
    let (server, client) = Connection::memory();
    let Connection { sender, receiver } = client;
    let reader = thread::Builder::new()
        .name("phobos-lsp-reader".into())
        .spawn(move || {
            let mut input = BufReader::new(io::stdin().lock());
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

    /// Every message of `input`, read with bodies of at most `limit`
    /// bytes, through a small buffer so headers split across reads.
    fn read_all(input: &[u8], limit: u64) -> io::Result<Vec<Message>> {
        let mut r = BufReader::with_capacity(3, input);
        let mut out = Vec::new();
        while let Some(m) = read_message(&mut r, limit)? {
            out.push(m);
        }
        Ok(out)
    }

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    const EXIT: &str = r#"{"jsonrpc":"2.0","method":"exit"}"#;

    fn is_exit(m: &Message) -> bool {
        matches!(m, Message::Notification(n) if n.method == "exit")
    }

    #[test]
    fn messages_within_the_limit_are_read() {
        let input = format!(
            "{}Content-Type: x\r\ncontent-length:{}\r\n\r\n{EXIT}",
            framed(EXIT),
            EXIT.len()
        );
        let msgs = read_all(input.as_bytes(), EXIT.len() as u64).unwrap();
        assert_eq!(msgs.len(), 2);
        assert!(msgs.iter().all(is_exit));
    }

    #[test]
    fn a_body_may_contain_header_like_text() {
        let body = r#"{"jsonrpc":"2.0","method":"exit","params":"Content-Length: 99999\r\n\r\n"}"#;
        let msgs = read_all(framed(body).as_bytes(), 100).unwrap();
        assert!(is_exit(&msgs[0]));
    }

    #[test]
    fn a_declared_length_over_the_limit_is_refused() {
        for declared in [
            "6",
            "99999999999",
            "4611686018427387904",
            "999999999999999999999999",
        ] {
            let input = format!("Content-Length: {declared}\r\n\r\n");
            let e = read_all(input.as_bytes(), 5).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("Content-Length {declared}")),
                "{e}"
            );
            assert!(e.to_string().contains("limit is 5 bytes"), "{e}");
        }
    }

    /// The probe that aborted the server: a header the old guard read as
    /// `Content-Length` and lsp-server did not, so the two disagreed on
    /// where the body ended, and the next header declared 4 EiB.
    #[test]
    fn a_space_before_the_colon_is_refused() {
        let input = "Content-Length : 5\r\n\r\nhelloContent-Length: 4611686018427387904\r\n\r\n";
        let e = read_all(input.as_bytes(), MAX_MESSAGE_BYTES).unwrap_err();
        assert!(
            e.to_string().contains("comes right before its colon"),
            "{e}"
        );
    }

    #[test]
    fn malformed_headers_are_refused_with_a_reason() {
        for (input, says) in [
            ("Content-Length: 5\n\n", "ends with \\r\\n"),
            ("Content-Length 5\r\n\r\n", "`Name: value`"),
            ("Content-Length: -5\r\n\r\n", "number of bytes"),
            ("Content-Length: 0x10\r\n\r\n", "number of bytes"),
            ("Content-Type: x\r\n\r\n", "no Content-Length"),
            ("Content-Length: 40\r\n\r\n{}", "ended 2 bytes into"),
            ("Content-Length: 2\r\n", "ended inside a message header"),
            ("Content-Length: 2\r\n\r\n{]", "malformed LSP payload"),
        ] {
            let e = read_all(input.as_bytes(), 100).unwrap_err();
            assert!(e.to_string().contains(says), "{input:?}: {e}");
        }
    }

    #[test]
    fn an_endless_header_line_is_refused() {
        let input = vec![b'a'; 10 * MAX_HEADER_LINE_BYTES];
        let e = read_all(&input, 5).unwrap_err();
        assert!(e.to_string().contains("header line is longer"), "{e}");
    }

    #[test]
    fn what_lsp_server_writes_is_read_back() {
        let mut out = Vec::new();
        let msgs = read_all(framed(EXIT).as_bytes(), 100).unwrap();
        msgs[0].clone().write(&mut out).unwrap();
        assert!(is_exit(&read_all(&out, 100).unwrap()[0]));
    }
}
