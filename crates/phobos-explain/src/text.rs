//! The `text` format: the header and each step's readout as plain lines
//! for a terminal, one block per step of the picked CTA.

use crate::model::{SharedBuffer, StepKind, Trace};
use std::fmt::Write;

/// The readout of the picked CTA.
pub fn render(trace: &Trace) -> String {
    let mut out = String::new();
    let cta = trace.picked_cta();
    let _ = writeln!(
        out,
        "The {} kernel, stepped through as the compiler built it for {}.",
        trace.kernel, trace.arch
    );
    let _ = writeln!(out, "{}", crate::html::caption(trace));
    let _ = writeln!(
        out,
        "Shared memory: a byte ruler of {} bytes{}",
        trace.shared.bytes,
        if trace.shared.buffers.is_empty() {
            ".".to_string()
        } else {
            let parts: Vec<String> = trace
                .shared
                .buffers
                .iter()
                .map(|b| format!("{} at offset {} ({})", b.name, b.offset, size_words(b)))
                .collect();
            format!(": {}.", parts.join(", "))
        }
    );
    for b in &trace.barriers {
        let _ = writeln!(
            out,
            "Barrier on line {}: {}{}",
            b.line,
            if b.kept { "kept" } else { "elided" },
            if b.reason.is_empty() {
                String::new()
            } else {
                format!(" ({})", b.reason)
            }
        );
    }
    let n = cta.steps.len();
    for (i, s) in cta.steps.iter().enumerate() {
        let mut place = format!("line {}", s.line);
        for it in &s.iterations {
            let header = trace.loops.get(it.r#loop).map_or(0, |l| l.line);
            let _ = write!(
                place,
                ", iteration {} of the loop on line {header}",
                it.iteration + 1
            );
        }
        match s.kind {
            StepKind::Shuffle { n, of } => {
                let _ = write!(place, ", shuffle step {n} of {of}");
            }
            StepKind::Barrier => place.push_str(", barrier"),
            StepKind::Statement => {}
        }
        let code = trace
            .source_lines
            .get(s.line.saturating_sub(1) as usize)
            .map_or("", |l| l.trim());
        let _ = writeln!(out, "\nstep {} of {n} · {place}: {code}", i + 1);
        for sentence in &s.readout {
            let _ = writeln!(out, "  {sentence}");
        }
    }
    if cta.truncated {
        let _ = writeln!(out, "\n(the trace stops here: the step limit was reached)");
    }
    out
}

/// `4224 bytes`, or `4224 bytes, 128 of them padding: ...`.
fn size_words(buffer: &SharedBuffer) -> String {
    match buffer.padding {
        Some(p) => format!(
            "{} bytes, {} of them padding: the last {} of each {}-byte row",
            buffer.bytes, p.bytes, p.layout.pad_bytes, p.layout.row_bytes
        ),
        None => format!("{} bytes", buffer.bytes),
    }
}
