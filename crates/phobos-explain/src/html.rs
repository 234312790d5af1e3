//! The HTML page: one self-contained file with the trace embedded as JSON,
//! the stylesheet and the drawing script inline, and a content security
//! policy that forbids every network fetch. The header and captions are
//! written here, so they read right without script; the panels are drawn by
//! `assets/page.js` from the embedded trace.

use crate::model::Trace;

const CSS: &str = include_str!("../assets/page.css");
const JS: &str = include_str!("../assets/page.js");

/// The whole page for a trace.
pub fn render(trace: &Trace) -> String {
    let json = serde_json::to_string(trace).unwrap_or_else(|_| "null".to_string());
    let mut out = String::with_capacity(json.len() + CSS.len() + JS.len() + 8192);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n",
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str("<link rel=\"icon\" href=\"data:,\">\n");
    out.push_str(&format!(
        "<title>{} stepped through for {}</title>\n",
        escape(&trace.kernel),
        escape(&trace.arch)
    ));
    out.push_str("<style>\n");
    out.push_str(CSS);
    out.push_str("</style>\n</head>\n<body>\n<header>\n");
    out.push_str(&format!("<h1>{}</h1>\n", title(trace)));
    out.push_str(&format!(
        "<p class=\"caption\">{}</p>\n",
        escape(&caption(trace))
    ));
    out.push_str("</header>\n");
    out.push_str(CONTROLS);
    out.push_str(PANELS);
    out.push_str("<script type=\"application/json\" id=\"trace\">");
    out.push_str(&escape_script(&json));
    out.push_str("</script>\n<script>\n");
    out.push_str(JS);
    out.push_str("</script>\n</body>\n</html>\n");
    out
}

/// "The <code>staged_matvec</code> kernel, stepped through as the compiler
/// built it for sm_75".
fn title(trace: &Trace) -> String {
    format!(
        "The <code>{}</code> kernel, stepped through as the compiler built it for {}",
        escape(&trace.kernel),
        escape(&trace.arch)
    )
}

/// The caption under the title, in the words of the language page.
pub fn caption(trace: &Trace) -> String {
    let names: Vec<&str> = trace.tensors.iter().map(|t| t.name.as_str()).collect();
    let tensors = match names.len() {
        0 => "no tensors".to_string(),
        1 => format!("the tensor {}", names[0]),
        _ => format!("the tensors {}", names.join(", ")),
    };
    let cta = trace.picked_cta();
    let padding: u32 = trace
        .shared
        .buffers
        .iter()
        .filter_map(|b| b.padding.map(|p| p.bytes))
        .sum();
    let padding = if padding > 0 {
        format!(" ({padding} of them padding that no access reaches, hatched)")
    } else {
        String::new()
    };
    format!(
        "{} with {} threads each, showing CTA {}. The drawing shows {tensors} in global memory \
         with the picked CTA's current boxes, shared memory as a byte ruler of {} bytes{padding} with \
         each buffer at its planned offset, the barriers kept and elided, and how the CTA's \
         threads and warp 0's lanes take part. The readout below describes each step.",
        grid_words(trace.grid),
        trace.threads,
        cta_words(cta.cta, cta.cta_id, trace.grid),
        trace.shared.bytes,
    )
}

/// "A grid of 8 CTAs", "A grid of 4 × 2 CTAs (8 in all)".
pub fn grid_words(grid: [u32; 3]) -> String {
    let total = u64::from(grid[0]) * u64::from(grid[1]) * u64::from(grid[2]);
    let plural = if total == 1 { "CTA" } else { "CTAs" };
    if grid[1] == 1 && grid[2] == 1 {
        format!("A grid of {total} {plural}")
    } else if grid[2] == 1 {
        format!(
            "A grid of {} × {} {plural} ({total} in all)",
            grid[0], grid[1]
        )
    } else {
        format!(
            "A grid of {} × {} × {} {plural} ({total} in all)",
            grid[0], grid[1], grid[2]
        )
    }
}

fn cta_words(cta: u32, id: [u32; 3], grid: [u32; 3]) -> String {
    if grid[1] == 1 && grid[2] == 1 {
        cta.to_string()
    } else {
        format!("{cta} ({}, {}, {})", id[0], id[1], id[2])
    }
}

const CONTROLS: &str = r#"<nav id="controls" aria-label="steps">
<span id="cta-label" class="mono">CTA 0</span>
<select id="cta" aria-label="CTA"></select>
<button id="prev" type="button" title="previous step (←)">◀ prev</button>
<button id="next" type="button" title="next step (→)">next ▶</button>
<input id="slider" type="range" min="0" max="0" value="0" aria-label="step">
<span id="step-label">step 1</span>
<button id="iter-prev" type="button" title="previous iteration (Page Up)">◀ iteration</button>
<button id="iter-next" type="button" title="next iteration (Page Down)">iteration ▶</button>
<button id="loop-exit" type="button" title="jump past the loop">skip loop ⤼</button>
<span class="hint">← → steps · PgUp PgDn iterations · Home End</span>
</nav>
"#;

const PANELS: &str = r#"<main>
<section id="readout"><h2>readout</h2><p id="where" class="where"></p><ul id="readout-list"></ul></section>
<section id="source"><h2>source</h2><pre id="source-pre"></pre></section>
<section id="global"><h2>global memory</h2><div id="tensors"></div>
<div class="legend"><span style="--sw:#4e79a7">read (one colour per warp)</span><span style="--sw:#4e79a7;--bd:#1d232b">written (outlined)</span><span style="--sw:#4e79a7;--bd:#9467bd">updated by atomics (dashed purple)</span><span style="--sw:#fff;--bd:#d62728">extra 128-byte lines</span><span style="--sw:#c5c9ce;--bd:#8a8f96">masked elements</span></div></section>
<section id="shared"><h2>shared memory</h2><svg id="ruler" role="img" aria-label="shared memory byte ruler"></svg>
<div class="legend" id="shared-legend"><span style="--sw:#e07b24">written</span><span style="--sw:#9467bd">atomics</span><span style="--sw:#4e79a7">read</span></div></section>
<section id="accumulators" hidden><h2>accumulators (registers)</h2><div id="acc-views"></div>
<div class="legend"><span style="--sw:#4e79a7">a warp's part (one colour per warp), lit while the step works on it</span><span style="--sw:#fff;--bd:#aab2bc">16 × 8 fragments</span></div></section>
<section id="rings" hidden><h2>cp.async ring</h2><div id="ring-views"></div>
<div class="legend"><span style="--sw:#4e79a7">the stage this trip reads</span><span style="--sw:#e07b24">the stage this trip's copies fill (for a later trip)</span><span style="--sw:#e3e7ec">in flight or waiting</span></div></section>
<section id="barriers"><h2>barriers</h2><ul id="barrier-list"></ul></section>
<section id="threads"><h2>threads and lanes</h2><svg id="threads-svg" role="img" aria-label="the CTA's threads"></svg>
<svg id="lanes-svg" role="img" aria-label="warp 0's lanes and shuffles"></svg></section>
</main>
"#;

/// Escape text for HTML content and attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// JSON inside `<script>`: no `</` may appear, or the source text of a
/// kernel could end the script early. `<\/` is the same string in JSON.
fn escape_script(json: &str) -> String {
    json.replace("</", "<\\/").replace("<!--", "<\\u0021--")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_words_read_like_the_page() {
        assert_eq!(grid_words([8, 1, 1]), "A grid of 8 CTAs");
        assert_eq!(grid_words([1, 1, 1]), "A grid of 1 CTA");
        assert_eq!(grid_words([4, 2, 1]), "A grid of 4 × 2 CTAs (8 in all)");
    }

    #[test]
    fn script_text_cannot_close_the_script() {
        let s = escape_script(r#"{"a":"</script><!--"}"#);
        assert!(!s.contains("</"));
        assert!(!s.contains("<!--"));
    }
}
