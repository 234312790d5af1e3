//! The readout: a few plain sentences per step, written from the step's
//! summary ("each of the 4 warps reads one row of W with 32 lanes × 16
//! bytes: 4 lines of 128 bytes, none extra"). Pure formatting: it computes
//! nothing that is not already in the step.

use crate::model::*;
use crate::steps::{self, Layout};

/// The sentences describing one step.
pub fn describe(layout: &Layout<'_>, step: &Step) -> Vec<String> {
    let mut out = vec![participation(layout, step)];
    match step.kind {
        StepKind::Barrier => out.push(barrier_sentence(layout, step)),
        StepKind::Shuffle { n, of } => out.push(shuffle_sentence(step, n, of)),
        StepKind::Statement => {
            if step.shuffle.is_some() {
                out.push(shuffle_sentence(step, 1, 1));
            }
        }
    }
    if let Some(sentence) = accumulator_sentence(layout, step) {
        out.push(sentence);
    }
    out.extend(layout.rings.iter().filter_map(|r| ring_sentence(r, step)));
    for group in merged_groups(&step.accesses) {
        if group.space != Space::Local {
            out.push(access_sentence(layout, step, &group));
        }
    }
    for m in &step.masked {
        let t = &layout.tensors[m.tensor];
        let verb = if step
            .boxes
            .iter()
            .any(|b| b.kind != AccessKind::Read && b.tensor == m.tensor)
        {
            "are not stored"
        } else {
            "read as 0"
        };
        out.push(format!(
            "{} of the tile lie past the end of {} ({} {}): they are masked and {verb}.",
            count(m.elements, "element", "elements"),
            t.name,
            span_text("rows", m.rows),
            span_text("columns", m.cols),
        ));
    }
    let quiet =
        step.accesses.is_empty() && step.kind == StepKind::Statement && step.shuffle.is_none();
    if quiet && layout.loops.iter().any(|l| l.line == step.line) {
        out.push(
            "The loop starts; each iteration's statements follow as their own steps.".to_string(),
        );
    } else if quiet {
        out.push("It computes in registers and touches no memory.".to_string());
    }
    out
}

/// What an accumulator statement does with the warp layout: which warp
/// owns which part, and for a `dot`, how the product is made.
fn accumulator_sentence(layout: &Layout<'_>, step: &Step) -> Option<String> {
    if step.kind != StepKind::Statement {
        return None;
    }
    let acc = layout
        .accumulators
        .iter()
        .find(|a| a.lines.contains(&step.line))?;
    let [wm, wn] = acc.warp_grid;
    let tile = acc.warp_tiles.first()?;
    let parts = format!(
        "{} is {} × {} {} in registers: {} warps in a {wm} × {wn} grid each own {} × {} of it \
         ({} × {} fragments of {} × {}, {} registers per lane)",
        acc.name,
        acc.rows,
        acc.cols,
        acc.elem,
        acc.warp_tiles.len(),
        tile.rows,
        tile.cols,
        tile.rows / acc.fragment[0].max(1),
        tile.cols / acc.fragment[1].max(1),
        acc.fragment[0],
        acc.fragment[1],
        acc.registers_per_lane,
    );
    Some(match acc.dots.iter().find(|d| d.line == step.line) {
        Some(d) => format!(
            "{parts}. Each warp adds its part of {} · {} on tensor cores (mma.sync on {} \
             operands, k in steps of {}), reading the operand rows it needs from shared \
             memory with ldmatrix: the shared reads below.",
            d.a,
            if d.b_trans {
                format!("trans({})", d.b)
            } else {
                d.b.clone()
            },
            d.operand,
            d.k_step,
        ),
        None if step.boxes.iter().any(|b| b.kind == AccessKind::Write) => {
            format!("{parts}. Each warp stores its own part, masked at the tensor's bounds.")
        }
        None => format!("{parts}. Each warp sets its registers to 0."),
    })
}

/// What a step of a `stages S` loop does with its `cp.async` ring: before
/// the loop (its line), the prologue's copies; at the top of a trip (the
/// first copy's line), the wait, the barrier and the copies for a later
/// trip; on the other copies' lines, which stage they fill; in the rest of
/// the body, which stage the trip reads.
fn ring_sentence(r: &Ring, step: &Step) -> Option<String> {
    if step.kind != StepKind::Statement {
        return None;
    }
    let s = r.stages;
    let trip = step
        .iterations
        .iter()
        .find(|i| i.r#loop == r.r#loop)
        .map(|i| i.iteration);
    let writes = step.shared.iter().any(|t| t.kind == AccessKind::Write);
    let tiles = r
        .buffers
        .iter()
        .map(|b| b.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    Some(match trip {
        None if step.line == r.line && writes => format!(
            "The ring's prologue: cp.async copies of {tiles} for trips 0 to {} go into stages \
             0 to {} of {s}, one cp.async.commit_group per trip; nothing waits for them yet.",
            s - 2,
            s - 2,
        ),
        None => return None,
        Some(i) if r.copy_lines.first() == Some(&step.line) => format!(
            "Trip {i} of the ring: cp.async.wait_group {} (this thread's copies for trip {i} \
             have landed in stage {}), then the loop's one barrier (every thread's copies \
             are visible, and every warp is done reading stage {}); then the cp.async copies \
             of trip {} go into stage {} of {s}, zero-filled past the tensor's bounds, and \
             cp.async.commit_group.",
            s - 2,
            r.read_stage(i),
            r.fill_stage(i),
            i + s - 1,
            r.fill_stage(i),
        ),
        Some(i) if r.copy_lines.contains(&step.line) => format!(
            "cp.async: the copy of trip {} goes into stage {} of {s}, the one trip {} read.",
            i + s - 1,
            r.fill_stage(i),
            i.saturating_sub(1),
        ),
        Some(_) if step.shared.is_empty() => return None,
        Some(i) => format!(
            "Trip {i} reads stage {} of {s} of the ring's tiles ({tiles}).",
            r.read_stage(i)
        ),
    })
}

fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn span_text(what: &str, r: [u64; 2]) -> String {
    if r[1] == r[0] + 1 {
        format!("{} {}", what.trim_end_matches('s'), r[0])
    } else {
        format!("{what} {}–{}", r[0], r[1] - 1)
    }
}

/// The step's memory instructions merged by (space, kind, target): a tile
/// copy unrolled into several instructions reads as one sentence.
fn merged_groups(groups: &[AccessGroup]) -> Vec<AccessGroup> {
    let mut out: Vec<AccessGroup> = Vec::new();
    for g in groups {
        let same =
            |o: &&mut AccessGroup| o.space == g.space && o.kind == g.kind && o.target == g.target;
        match out.iter_mut().find(|o| same(o)) {
            None => out.push(g.clone()),
            Some(o) => {
                o.bytes_per_lane = o.bytes_per_lane.max(g.bytes_per_lane);
                for w in &g.warps {
                    match o.warps.iter_mut().find(|x| x.warp == w.warp) {
                        Some(x) => {
                            x.executions += w.executions;
                            x.lanes += w.lanes;
                            x.bytes += w.bytes;
                            x.lines += w.lines;
                            x.min_lines += w.min_lines;
                            x.extra_lines += w.extra_lines;
                        }
                        None => o.warps.push(w.clone()),
                    }
                }
                o.warps.sort_by_key(|w| w.warp);
            }
        }
    }
    out
}

/// "All 128 threads (4 warps) take part." and the like.
fn participation(layout: &Layout<'_>, step: &Step) -> String {
    let total: u32 = step.threads.iter().map(|r| r[1] - r[0]).sum();
    let all_warps = layout.warp_count();
    if total == layout.threads {
        return format!(
            "All {} threads ({}) take part.",
            layout.threads,
            count(u64::from(all_warps), "warp", "warps")
        );
    }
    if total == 0 {
        return "No thread takes part.".to_string();
    }
    let per_warp: Vec<Vec<u32>> = step
        .warps
        .iter()
        .map(|&w| {
            (w * 32..w * 32 + 32)
                .filter(|t| step.threads.iter().any(|r| *t >= r[0] && *t < r[1]))
                .map(|t| t - w * 32)
                .collect()
        })
        .collect();
    let same_lanes = per_warp.windows(2).all(|w| w[0] == w[1]);
    let warps = warp_list(&step.warps);
    if same_lanes && per_warp.first().is_some_and(|l| l.len() == 1) {
        let lane = per_warp[0][0];
        return if step.warps.len() == 1 {
            format!("Only lane {lane} of {warps} takes part (1 thread).")
        } else {
            format!(
                "Lane {lane} of each of {} takes part ({}).",
                warps,
                count(u64::from(total), "thread", "threads")
            )
        };
    }
    if per_warp.iter().all(|l| l.len() == 32) {
        return format!(
            "{} of the {} threads take part: all lanes of {}.",
            total, layout.threads, warps
        );
    }
    format!(
        "{} of the {} threads take part, in {}.",
        total, layout.threads, warps
    )
}

/// "warp 0", "warps 0 and 1", "warps 0–3", "warps 0, 2 and 5".
fn warp_list(warps: &[u32]) -> String {
    match warps {
        [] => "no warp".to_string(),
        [w] => format!("warp {w}"),
        [a, b] => format!("warps {a} and {b}"),
        _ => {
            let contiguous = warps.windows(2).all(|w| w[1] == w[0] + 1);
            if contiguous {
                format!("warps {}–{}", warps[0], warps[warps.len() - 1])
            } else {
                let (last, rest) = warps.split_last().map_or((0, &[][..]), |(l, r)| (*l, r));
                let rest: Vec<String> = rest.iter().map(u32::to_string).collect();
                format!("warps {} and {last}", rest.join(", "))
            }
        }
    }
}

fn barrier_sentence(layout: &Layout<'_>, step: &Step) -> String {
    let who = if step.warps.len() as u32 == layout.warp_count() {
        "Every warp of the CTA"
    } else {
        "The warps that reach it"
    };
    match step.barrier.and_then(|b| layout.barriers.get(b)) {
        Some(b) if b.reason.is_empty() => {
            format!("{who} waits at the barrier of line {}.", b.line)
        }
        Some(b) => format!(
            "{who} waits at the barrier of line {}, kept because {}.",
            b.line,
            lowercase_first(b.reason.trim_end_matches('.'))
        ),
        None => format!("{who} waits at a barrier."),
    }
}

fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn shuffle_sentence(step: &Step, n: u32, of: u32) -> String {
    let what = match step.shuffle {
        Some(ShufflePattern::Xor(m)) => {
            format!("each lane of warp 0 takes the value of lane ^ {m}, the lane {m} away")
        }
        Some(ShufflePattern::Down(d)) => format!(
            "each lane of warp 0 takes the value of lane + {d}; lanes whose source is past their piece keep their own"
        ),
        Some(ShufflePattern::Up(d)) => format!(
            "each lane of warp 0 takes the value of lane - {d}; lanes whose source is before their piece keep their own"
        ),
        Some(ShufflePattern::From(s)) => {
            format!("every lane of warp 0 takes the value of lane {s}")
        }
        Some(ShufflePattern::Mixed) => {
            "the lanes of warp 0 exchange values (the arcs show which lane reads which)".to_string()
        }
        None => "warp 0 does not shuffle in this step; other warps do".to_string(),
    };
    if of > 1 {
        format!("Shuffle step {n} of {of}: {what}.")
    } else {
        format!("A shuffle: {what}.")
    }
}

/// Where one warp's box lies, in words: "row 5, columns 0–127".
fn box_words(t: &TensorInfo, ranges: &[[u64; 2]]) -> Option<(String, Option<(u64, u64)>)> {
    let first = ranges.first()?[0];
    let last = ranges.last()?[1] - 1;
    let cols = t.cols.max(1);
    let (r0, r1) = (first / cols, last / cols);
    let elems: u64 = ranges.iter().map(|r| r[1] - r[0]).sum();
    if first == last {
        let place = if t.rows == 1 {
            format!("element {first}")
        } else {
            format!("row {r0}, column {}", first % cols)
        };
        return Some((format!("{place} of {}", t.name), Some((r0, r1))));
    }
    if t.rows == 1 {
        return Some((
            format!("elements {}–{} of {}", first, last, t.name),
            Some((r0, r1)),
        ));
    }
    if r0 == r1 {
        let (c0, c1) = (first % cols, last % cols);
        if c0 == 0 && c1 == cols - 1 && elems == cols {
            return Some((format!("row {r0} of {}", t.name), Some((r0, r1))));
        }
        return Some((
            format!("row {r0}, columns {c0}–{c1} of {}", t.name),
            Some((r0, r1)),
        ));
    }
    Some((
        format!(
            "{} in rows {r0}–{r1} of {}",
            count(elems, "element", "elements"),
            t.name
        ),
        Some((r0, r1)),
    ))
}

fn lines_words(lines: u32, min_lines: u32) -> String {
    let extra = lines.saturating_sub(min_lines);
    let base = count(u64::from(lines), "line", "lines");
    if extra == 0 {
        format!("{base} of 128 bytes, none extra")
    } else {
        format!("{base} of 128 bytes where {min_lines} would do, {extra} extra")
    }
}

fn access_sentence(layout: &Layout<'_>, step: &Step, g: &AccessGroup) -> String {
    let verb = match g.kind {
        AccessKind::Read => "reads",
        AccessKind::Write => "writes",
        AccessKind::Atomic => "updates atomically",
    };
    let n = g.warps.len();
    let w0 = &g.warps[0];
    let uniform = g.warps.iter().all(|w| {
        w.lanes == w0.lanes
            && w.lines == w0.lines
            && w.executions == w0.executions
            && w.bytes == w0.bytes
    });
    let subject = if n == 1 {
        format!("warp {}", w0.warp)
    } else if uniform && n as u32 == layout.warp_count() {
        format!("each of the {n} warps")
    } else if uniform {
        format!(
            "each of {}",
            warp_list(&g.warps.iter().map(|w| w.warp).collect::<Vec<_>>())
        )
    } else {
        format!("{n} warps")
    };
    let lanes_per = w0.lanes.div_ceil(w0.executions.max(1));
    let shape = if w0.executions > 1 {
        format!(
            "{} instructions of about {} × {}",
            w0.executions,
            count(u64::from(lanes_per), "lane", "lanes"),
            count(u64::from(g.bytes_per_lane), "byte", "bytes")
        )
    } else {
        format!(
            "{} × {}",
            count(u64::from(lanes_per), "lane", "lanes"),
            count(u64::from(g.bytes_per_lane), "byte", "bytes")
        )
    };
    let sentence = match g.space {
        Space::Global => {
            let what = global_what(layout, step, g);
            if uniform {
                format!(
                    "{subject} {verb} {what} with {shape}: {}.",
                    lines_words(w0.lines, w0.min_lines)
                )
            } else {
                let lines: u32 = g.warps.iter().map(|w| w.lines).sum();
                let min: u32 = g.warps.iter().map(|w| w.min_lines).sum();
                let executions: u32 = g.warps.iter().map(|w| w.executions).sum();
                let most = g
                    .warps
                    .iter()
                    .map(|w| w.lanes.div_ceil(w.executions.max(1)))
                    .max()
                    .unwrap_or(0);
                let plural = match g.kind {
                    AccessKind::Read => "read",
                    AccessKind::Write => "write",
                    AccessKind::Atomic => "update atomically",
                };
                format!(
                    "{subject} {plural} {what} in {} of up to {} × {}: {} in all.",
                    count(u64::from(executions), "instruction", "instructions"),
                    count(u64::from(most), "lane", "lanes"),
                    count(u64::from(g.bytes_per_lane), "byte", "bytes"),
                    lines_words(lines, min)
                )
            }
        }
        Space::Shared => {
            let target = g
                .target
                .clone()
                .unwrap_or_else(|| "shared memory".to_string());
            let bytes = if uniform {
                format!("{} of {target}", count(w0.bytes, "byte", "bytes"))
            } else {
                format!("bytes of {target}")
            };
            let padding = layout
                .shared
                .buffers
                .iter()
                .find(|b| Some(&b.name) == g.target.as_ref())
                .and_then(|b| b.padding)
                .map(|p| {
                    format!(
                        " {target} has {} of padding, the last {} of each {}-byte row, which no access reaches",
                        count(u64::from(p.bytes), "byte", "bytes"),
                        p.layout.pad_bytes,
                        p.layout.row_bytes
                    )
                })
                .unwrap_or_default();
            let sep = if padding.is_empty() { "" } else { ";" };
            format!("{subject} {verb} {bytes} in shared memory with {shape}{sep}{padding}.")
        }
        Space::Local => format!("{subject} {verb} local memory."),
    };
    capitalize(&sentence)
}

/// The object of a global access sentence, from the warps' boxes.
fn global_what(layout: &Layout<'_>, step: &Step, g: &AccessGroup) -> String {
    let Some(name) = &g.target else {
        return "global memory".to_string();
    };
    let Some(ti) = layout.tensors.iter().position(|t| &t.name == name) else {
        return name.clone();
    };
    let t = &layout.tensors[ti];
    let boxes: Vec<&TensorBox> = step
        .boxes
        .iter()
        .filter(|b| b.tensor == ti && b.kind == g.kind && g.warps.iter().any(|w| w.warp == b.warp))
        .collect();
    let words: Vec<(String, Option<(u64, u64)>)> = boxes
        .iter()
        .filter_map(|b| box_words(t, &b.ranges))
        .collect();
    match words.as_slice() {
        [] => t.name.clone(),
        [(w, _)] => w.clone(),
        many => {
            let all_same = many.windows(2).all(|w| w[0].0 == w[1].0);
            if all_same {
                return format!("the same {}", many[0].0.trim_start_matches("the "));
            }
            if t.rows == 1 {
                let [lo, hi] = steps::touched_extent(&boxes).unwrap_or([0, 1]);
                let sizes: Vec<u64> = boxes
                    .iter()
                    .map(|b| b.ranges.iter().map(|r| r[1] - r[0]).sum())
                    .collect();
                let each = match sizes.as_slice() {
                    [first, rest @ ..] if rest.iter().all(|n| n == first) => {
                        if *first == 1 {
                            "one per warp".to_string()
                        } else {
                            format!("{first} per warp")
                        }
                    }
                    _ => "a part per warp".to_string(),
                };
                return format!(
                    "elements {lo}–{} of {} ({each})",
                    hi.saturating_sub(1),
                    t.name
                );
            }
            let single_rows: Option<Vec<u64>> = many
                .iter()
                .map(|(_, r)| r.filter(|(a, b)| a == b).map(|(a, _)| a))
                .collect();
            match single_rows {
                Some(rows) if t.rows > 1 => {
                    let distinct = rows.windows(2).all(|w| w[0] != w[1]);
                    let lo = rows.iter().min().copied().unwrap_or(0);
                    let hi = rows.iter().max().copied().unwrap_or(0);
                    if distinct {
                        format!("one row of {} (rows {lo}–{hi}, one per warp)", t.name)
                    } else if lo == hi {
                        let c0 = boxes
                            .iter()
                            .filter_map(|b| b.ranges.first())
                            .map(|r| r[0] % t.cols)
                            .min()
                            .unwrap_or(0);
                        let c1 = boxes
                            .iter()
                            .filter_map(|b| b.ranges.last())
                            .map(|r| (r[1] - 1) % t.cols)
                            .max()
                            .unwrap_or(0);
                        format!(
                            "row {lo}, columns {c0}–{c1} of {} (a part per warp)",
                            t.name
                        )
                    } else {
                        format!("parts of rows {lo}–{hi} of {}", t.name)
                    }
                }
                _ => format!("parts of {}", t.name),
            }
        }
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
