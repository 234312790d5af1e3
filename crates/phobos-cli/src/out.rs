//! Standard output and error that may be closed or full: `phobos ptx k.pho
//! | head` ends quietly when `head` stops reading, `> /dev/full` is an error
//! with a message, and `2> /dev/full` loses the messages but changes
//! nothing else; never a panic.

use std::io::Write;

/// Writes `text` to standard output. A closed pipe ends the process
/// quietly (exit 0: the reader has what it wanted); any other failure is
/// returned as a message.
pub fn print(text: &str) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(format!("cannot write to standard output: {e}")),
    }
}

/// Writes to standard error, ignoring failure: when standard error is
/// full or closed there is nowhere left to say so. Every message of the
/// CLI goes through here (the crate's `eprint!`/`eprintln!`).
pub fn to_stderr(args: std::fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}
