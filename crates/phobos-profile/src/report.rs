//! The profile as users see it: a [`Profile`] (the stable JSON schema of
//! `docs/profile.md`, version [`SCHEMA_VERSION`]) and its text form, a
//! per-line table beside the source in the manner of `ncu --page source`.
//! This module only arranges numbers the counters and models computed.

use crate::counters::{GlobalCounters, LineCounters, Profiler, SharedCounters};
use crate::occupancy::Occupancy;
use crate::roofline::Roofline;
use serde::Serialize;
use std::fmt::Write;

/// Bumped whenever a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// Global counters of one access kind, as reported.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GlobalReport {
    pub requests: u64,
    pub sectors: u64,
    pub sectors_per_request: Option<f64>,
    pub lines: u64,
    pub bytes_requested: u64,
    pub bytes_moved: u64,
    /// `bytes_requested / bytes_moved`; above 1 when lanes share bytes.
    pub efficiency: Option<f64>,
}

impl From<&GlobalCounters> for GlobalReport {
    fn from(g: &GlobalCounters) -> GlobalReport {
        GlobalReport {
            requests: g.requests,
            sectors: g.sectors,
            sectors_per_request: ratio(g.sectors, g.requests),
            lines: g.lines,
            bytes_requested: g.bytes_requested,
            bytes_moved: g.bytes_moved(),
            efficiency: ratio(g.bytes_requested, g.bytes_moved()),
        }
    }
}

/// Shared counters of one access kind, as reported.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SharedReport {
    pub requests: u64,
    pub wavefronts: u64,
    pub ideal_wavefronts: u64,
    pub bank_conflicts: u64,
}

impl From<&SharedCounters> for SharedReport {
    fn from(s: &SharedCounters) -> SharedReport {
        SharedReport {
            requests: s.requests,
            wavefronts: s.wavefronts,
            ideal_wavefronts: s.ideal_wavefronts,
            bank_conflicts: s.bank_conflicts(),
        }
    }
}

/// The counters of one source line, or of the whole kernel.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Counters {
    pub global_requests: u64,
    pub global_sectors: u64,
    pub sectors_per_request: Option<f64>,
    pub global_lines: u64,
    pub shared_requests: u64,
    pub shared_wavefronts: u64,
    pub bank_conflicts: u64,
    pub warp_instructions: u64,
    /// Lanes per executed warp instruction (null when none executed).
    pub active_lanes_avg: Option<f64>,
    /// Lanes whose guard predicate was true, per executed warp instruction.
    pub predicated_on_lanes_avg: Option<f64>,
    pub branches: u64,
    pub divergent_branches: u64,
    pub barriers: u64,
    pub dram_bytes: u64,
    pub fp32_flops: u64,
    pub fp64_flops: u64,
    pub int8_ops: u64,
    pub global_load: GlobalReport,
    pub global_store: GlobalReport,
    pub global_atomic: GlobalReport,
    pub shared_load: SharedReport,
    pub shared_store: SharedReport,
    pub shared_atomic: SharedReport,
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

impl From<&LineCounters> for Counters {
    fn from(c: &LineCounters) -> Counters {
        let g = c.global();
        let s = c.shared();
        Counters {
            global_requests: g.requests,
            global_sectors: g.sectors,
            sectors_per_request: ratio(g.sectors, g.requests),
            global_lines: g.lines,
            shared_requests: s.requests,
            shared_wavefronts: s.wavefronts,
            bank_conflicts: s.bank_conflicts(),
            warp_instructions: c.warp_instructions,
            active_lanes_avg: c.active_lanes_avg(),
            predicated_on_lanes_avg: ratio(c.predicated_on_threads, c.warp_instructions),
            branches: c.branches,
            divergent_branches: c.divergent_branches,
            barriers: c.barriers,
            dram_bytes: c.dram_bytes,
            fp32_flops: c.fp32_flops,
            fp64_flops: c.fp64_flops,
            int8_ops: c.int8_ops,
            global_load: (&c.global_load).into(),
            global_store: (&c.global_store).into(),
            global_atomic: (&c.global_atomic).into(),
            shared_load: (&c.shared_load).into(),
            shared_store: (&c.shared_store).into(),
            shared_atomic: (&c.shared_atomic).into(),
        }
    }
}

/// One source line's counters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LineReport {
    /// 1-based source line; 0 gathers instructions without a `.loc`.
    pub line: u32,
    pub source: String,
    #[serde(flatten)]
    pub counters: Counters,
}

/// Which CTAs were counted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sampling {
    pub ctas_total: u64,
    pub ctas_profiled: u64,
    /// True when `--cta-sample` left CTAs uncounted: every count is then of
    /// the profiled CTAs only, and `dram_bytes` of their first touches.
    pub sampled: bool,
}

/// The kernel-wide part of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KernelReport {
    pub name: String,
    pub entry: String,
    pub arch: String,
    pub grid: [u32; 3],
    pub threads_per_cta: u32,
    pub sampling: Sampling,
    pub totals: Counters,
    /// Null when the CTA cannot be placed (see `occupancy_error`).
    pub occupancy: Option<Occupancy>,
    pub occupancy_error: Option<String>,
    /// Null without `--gpu`.
    pub roofline: Option<Roofline>,
}

/// The whole profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    pub schema_version: u32,
    pub kernel: KernelReport,
    /// Lines that executed at least one instruction, in line order.
    pub lines: Vec<LineReport>,
}

/// What the report says about the launch besides the counters.
pub struct LaunchInfo {
    pub name: String,
    pub entry: String,
    pub arch: u32,
    pub grid: [u32; 3],
    pub threads_per_cta: u32,
}

impl Profile {
    /// Assembles the report of a finished launch.
    pub fn new(
        profiler: &Profiler,
        launch: LaunchInfo,
        source: &str,
        occupancy: Result<Occupancy, String>,
        roofline: Option<Roofline>,
    ) -> Profile {
        let src: Vec<&str> = source.lines().collect();
        let lines = profiler
            .lines()
            .into_iter()
            .map(|(line, c)| LineReport {
                line,
                source: line
                    .checked_sub(1)
                    .and_then(|i| src.get(i as usize))
                    .map_or(String::new(), |s| s.to_string()),
                counters: (&c).into(),
            })
            .collect();
        let ctas_total = launch.grid.iter().map(|&g| u64::from(g)).product::<u64>();
        let ctas_profiled = profiler.ctas_profiled();
        let (occupancy, occupancy_error) = match occupancy {
            Ok(o) => (Some(o), None),
            Err(e) => (None, Some(e)),
        };
        Profile {
            schema_version: SCHEMA_VERSION,
            kernel: KernelReport {
                name: launch.name,
                entry: launch.entry,
                arch: phobos_meta::arch::name(launch.arch),
                grid: launch.grid,
                threads_per_cta: launch.threads_per_cta,
                sampling: Sampling {
                    ctas_total,
                    ctas_profiled,
                    sampled: ctas_profiled < ctas_total,
                },
                totals: (&profiler.totals()).into(),
                occupancy,
                occupancy_error,
                roofline,
            },
            lines,
        }
    }

    /// The JSON form, pretty-printed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The per-line table beside the source, then the totals, occupancy
    /// and roofline.
    pub fn to_text(&self, source: &str) -> String {
        let mut out = String::new();
        let k = &self.kernel;
        let _ = writeln!(
            out,
            "{} ({}) on {}: grid ({}, {}, {}) x {} threads",
            k.name, k.entry, k.arch, k.grid[0], k.grid[1], k.grid[2], k.threads_per_cta
        );
        let _ = writeln!(
            out,
            "{}",
            if k.sampling.sampled {
                format!(
                    "sampled: {} of {} CTAs profiled; counts are of those CTAs only",
                    k.sampling.ctas_profiled, k.sampling.ctas_total
                )
            } else {
                format!("all {} CTAs profiled", k.sampling.ctas_total)
            }
        );
        let _ = writeln!(out);
        let header = format!(
            "{:>5} {:>8} {:>8} {:>7} {:>8} {:>8} {:>8} {:>6} {:>5}  source",
            "line", "g.req", "sectors", "sec/req", "s.req", "wavefr", "conflict", "lanes", "div"
        );
        let _ = writeln!(out, "{header}");
        let by_line: std::collections::BTreeMap<u32, &LineReport> =
            self.lines.iter().map(|l| (l.line, l)).collect();
        if let Some(l) = by_line.get(&0) {
            let _ = writeln!(out, "{}  (no source line)", row(0, &l.counters));
        }
        for (i, text) in source.lines().enumerate() {
            let n = i as u32 + 1;
            match by_line.get(&n) {
                Some(l) => {
                    let _ = writeln!(out, "{}  {text}", row(n, &l.counters));
                }
                None => {
                    let _ = writeln!(out, "{n:>5} {:>65}  {text}", "");
                }
            }
        }
        let t = &k.totals;
        let _ = writeln!(out, "\n{header}");
        let _ = writeln!(out, "{}  total", row(0, t).replacen("    0", "     ", 1));
        let _ = writeln!(out);
        for (what, g) in [
            ("global loads ", &t.global_load),
            ("global stores", &t.global_store),
            ("global atomic", &t.global_atomic),
        ] {
            if g.requests > 0 {
                let _ = writeln!(
                    out,
                    "{what}: {} requests, {} sectors ({} per request), {} lines, {} B requested / {} B moved ({})",
                    g.requests,
                    g.sectors,
                    opt(g.sectors_per_request, 2),
                    g.lines,
                    g.bytes_requested,
                    g.bytes_moved,
                    pct(g.efficiency)
                );
            }
        }
        for (what, s) in [
            ("shared loads ", &t.shared_load),
            ("shared stores", &t.shared_store),
            ("shared atomic", &t.shared_atomic),
        ] {
            if s.requests > 0 {
                let _ = writeln!(
                    out,
                    "{what}: {} requests, {} wavefronts (ideal {}), {} bank conflicts",
                    s.requests, s.wavefronts, s.ideal_wavefronts, s.bank_conflicts
                );
            }
        }
        let _ = writeln!(
            out,
            "control: {} warp instructions, {} active lanes on average ({} predicated on), {} branches ({} divergent), {} barriers",
            t.warp_instructions,
            opt(t.active_lanes_avg, 2),
            opt(t.predicated_on_lanes_avg, 2),
            t.branches,
            t.divergent_branches,
            t.barriers
        );
        match (&k.occupancy, &k.occupancy_error) {
            (Some(o), _) => {
                let regs = o.registers_per_thread.map_or(
                    "unknown (ptxas not found; the register limit is left out)".to_string(),
                    |r| r.to_string(),
                );
                let limiters: Vec<&str> = o.limited_by.iter().map(|l| l.name()).collect();
                let _ = writeln!(
                    out,
                    "occupancy ({}): {} CTAs x {} warps = {} of {} warps per SM ({:.1}%), limited by {}; registers per thread {regs}; shared {} B per CTA ({} B allocated)",
                    o.arch,
                    o.ctas_per_sm,
                    o.warps_per_cta,
                    o.active_warps_per_sm,
                    o.max_warps_per_sm,
                    o.occupancy * 100.0,
                    limiters.join(" and "),
                    o.shared_bytes_per_cta,
                    o.shared_bytes_allocated
                );
            }
            (None, Some(e)) => {
                let _ = writeln!(out, "occupancy: none, {e}");
            }
            (None, None) => {}
        }
        if let Some(r) = &k.roofline {
            let _ = writeln!(
                out,
                "roofline ({}): DRAM {} B (first touch of each sector) {:.3} us, FP32 {} flops {:.3} us, FP64 {} flops {:.3} us, INT8 {} ops {:.3} us; at least {:.3} us, bound by {}",
                r.gpu.full_name,
                r.dram_bytes,
                r.dram_us,
                r.fp32_flops,
                r.fp32_us,
                r.fp64_flops,
                r.fp64_us,
                r.int8_ops,
                r.int8_us,
                r.bound_us,
                r.binding_roof.name()
            );
        }
        out
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{:.0}%", v * 100.0))
}

fn blank_zero(v: u64) -> String {
    if v == 0 {
        String::new()
    } else {
        v.to_string()
    }
}

fn row(line: u32, c: &Counters) -> String {
    let shared = c.shared_requests > 0;
    format!(
        "{:>5} {:>8} {:>8} {:>7} {:>8} {:>8} {:>8} {:>6} {:>5}",
        line,
        blank_zero(c.global_requests),
        blank_zero(c.global_sectors),
        if c.global_requests > 0 {
            opt(c.sectors_per_request, 2)
        } else {
            String::new()
        },
        blank_zero(c.shared_requests),
        blank_zero(c.shared_wavefronts),
        if shared {
            c.bank_conflicts.to_string()
        } else {
            String::new()
        },
        opt(c.active_lanes_avg, 1),
        blank_zero(c.divergent_branches)
    )
}
