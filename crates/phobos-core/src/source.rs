//! Byte offsets to 1-based line and column numbers.

/// Line starts of one source text.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(src: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(
            src.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
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
}
