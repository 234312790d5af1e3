//! Reading the text files a build and the `phobos` CLI read (kernel
//! sources, `phobos.toml`, tuning files) with a size limit: a file larger
//! than its kind allows, or one that never ends (`/dev/zero`), costs at
//! most the limit and one byte before it is refused. The one owner of
//! those limits and of their messages.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// What kind of file is read, and the most bytes it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    /// The end of "the most Phobos reads ...".
    pub what: &'static str,
}

/// A `.pho` source: the compiler's own limit (P0005).
pub const SOURCE: Limit = Limit {
    bytes: phobos_core::parser::MAX_SOURCE_BYTES as u64,
    what: "as one source file",
};

/// `phobos.toml`.
pub const CONFIG: Limit = Limit {
    bytes: 1 << 20,
    what: "as a phobos.toml",
};

/// A tuning file to embed (`Device::export_tuning` writes a few bytes per
/// measured launch shape).
pub const TUNING: Limit = Limit {
    bytes: 16 << 20,
    what: "as a tuning file",
};

/// Why a text could not be read.
#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    TooLarge(Limit),
    /// Not UTF-8: the offset of the first byte that is not.
    NotUtf8(usize),
}

impl ReadError {
    /// The message, with `shown` naming the file (`` `k.pho` ``, `stdin`).
    pub fn message(&self, shown: &str) -> String {
        match self {
            ReadError::Io(e) => format!("cannot read {shown}: {e}"),
            ReadError::TooLarge(limit) => format!(
                "{shown} is larger than {}, the most Phobos reads {}",
                size(limit.bytes),
                limit.what
            ),
            ReadError::NotUtf8(at) => {
                format!("{shown} is not UTF-8 text (invalid byte at offset {at})")
            }
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message("the file"))
    }
}

fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The UTF-8 text `reader` gives, refused past `limit` without reading on.
pub fn text(reader: impl Read, limit: Limit) -> Result<String, ReadError> {
    let mut bytes = Vec::new();
    reader
        .take(limit.bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit.bytes {
        return Err(ReadError::TooLarge(limit));
    }
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8(e.utf8_error().valid_up_to()))
}

/// The UTF-8 text of the file at `path`, refused past `limit`.
pub fn file(path: &Path, limit: Limit) -> Result<String, ReadError> {
    let f = std::fs::File::open(path).map_err(ReadError::Io)?;
    text(f, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_over_its_limit_is_refused_after_limit_plus_one_bytes() {
        let limit = Limit {
            bytes: 4,
            what: "as a test",
        };
        assert_eq!(text(&b"abcd"[..], limit).unwrap(), "abcd");
        // An endless reader is read no further than the limit.
        let e = text(std::io::repeat(0), limit).unwrap_err();
        assert_eq!(
            e.message("`z`"),
            "`z` is larger than 4 bytes, the most Phobos reads as a test"
        );
        let e = text(&b"a\xffb"[..], limit).unwrap_err();
        assert_eq!(
            e.message("`z`"),
            "`z` is not UTF-8 text (invalid byte at offset 1)"
        );
        assert_eq!(
            ReadError::TooLarge(SOURCE).message("`k.pho`"),
            "`k.pho` is larger than 1 MiB, the most Phobos reads as one source file"
        );
    }
}
