//! Byte offsets to 1-based line and column numbers.
//!
//! A line ends at `\n`, `\r\n` or a lone `\r`, as in the Language Server
//! Protocol and in the lexer ([`is_line_break`]): a file saved with any of
//! the three conventions gets the same lines everywhere.

/// Line starts of one source text.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

/// Whether the byte at `i` ends a line: a `\n`, or a `\r` not followed by
/// `\n` (the `\r` of a `\r\n` pair belongs to the line it ends).
pub fn is_line_break(src: &[u8], i: usize) -> bool {
    match src.get(i) {
        Some(b'\n') => true,
        Some(b'\r') => src.get(i + 1) != Some(&b'\n'),
        _ => false,
    }
}

impl LineIndex {
    pub fn new(src: &str) -> LineIndex {
        let bytes = src.as_bytes();
        let mut starts = vec![0];
        starts.extend(
            (0..bytes.len())
                .filter(|&i| is_line_break(bytes, i))
                .map(|i| i + 1),
        );
        LineIndex { starts }
    }
    /// 1-based (line, column) of a byte offset; the column counts bytes.
    pub fn line_col(&self, offset: usize) -> (u32, u32) {
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        ((line + 1) as u32, (offset - self.starts[line] + 1) as u32)
    }
    pub fn line(&self, offset: usize) -> u32 {
        self.line_col(offset).0
    }
    /// Byte offset where 1-based `line` starts, if the text has it.
    pub fn line_start(&self, line: u32) -> Option<usize> {
        self.starts.get((line as usize).checked_sub(1)?).copied()
    }
    /// Number of lines (one more than the number of line breaks).
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }
    /// Byte offset where the text of 1-based `line` ends, before its line
    /// break (`\n`, `\r\n` or `\r`), if the text has the line.
    pub fn line_end(&self, src: &str, line: u32) -> Option<usize> {
        let start = self.line_start(line)?;
        let Some(&next) = self.starts.get(line as usize) else {
            return Some(src.len());
        };
        let text = &src.as_bytes()[start..next];
        let strip = match text {
            [.., b'\r', b'\n'] => 2,
            _ => 1,
        };
        Some(next - strip)
    }
}
