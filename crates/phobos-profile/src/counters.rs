//! The counting observer. It sees each executed warp instruction once, with
//! its active lanes, its `.loc` line and every lane's memory access, and
//! adds to that line's counters. It decides what a request, a sector, a
//! wavefront and a divergent branch are (the rules, with their sources, are
//! in `docs/profile.md`); it leaves occupancy, rooflines and presentation to
//! the other modules.
//!
//! Definitions, as Nsight Compute uses them:
//! - a *request* is one warp-level memory instruction that accessed memory;
//! - a *sector* is an aligned 32-byte segment of global memory; a request's
//!   sectors are the distinct sectors its lanes touch (an access of 16 bytes
//!   at a 16-byte boundary touches one; an unaligned one may touch two);
//! - a *line* is an aligned 128-byte segment, counted the same way;
//! - a shared *wavefront* is one pass through the 32 banks of 4 bytes (see
//!   [`shared_wavefronts`]); bank conflicts are the wavefronts beyond the
//!   ideal for the access width.

use phobos_sim::{AccessKind, Observer, OpKind, Space, StepInfo};
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hash for sector numbers (the default SipHash costs
/// more than the rest of the counting; these keys are not adversarial).
#[derive(Default)]
struct SectorHasher(u64);

impl Hasher for SectorHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

type SectorSet = HashSet<u64, BuildHasherDefault<SectorHasher>>;

/// Global-memory counters of one kind of access (loads, stores or atomics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalCounters {
    /// Warp-level instructions that accessed global memory.
    pub requests: u64,
    /// Distinct 32-byte sectors per request, summed.
    pub sectors: u64,
    /// Distinct 128-byte lines per request, summed.
    pub lines: u64,
    /// Bytes the active lanes asked for (each lane's access size, summed).
    pub bytes_requested: u64,
}

impl GlobalCounters {
    /// Bytes moved between L1 and L2: 32 per sector.
    pub fn bytes_moved(&self) -> u64 {
        self.sectors * 32
    }

    pub fn add(&mut self, o: &GlobalCounters) {
        self.requests += o.requests;
        self.sectors += o.sectors;
        self.lines += o.lines;
        self.bytes_requested += o.bytes_requested;
    }
}

/// Shared-memory counters of one kind of access.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedCounters {
    pub requests: u64,
    pub wavefronts: u64,
    /// The wavefronts the same requests would take without a conflict.
    pub ideal_wavefronts: u64,
}

impl SharedCounters {
    /// Wavefronts beyond the ideal.
    pub fn bank_conflicts(&self) -> u64 {
        self.wavefronts - self.ideal_wavefronts
    }

    pub fn add(&mut self, o: &SharedCounters) {
        self.requests += o.requests;
        self.wavefronts += o.wavefronts;
        self.ideal_wavefronts += o.ideal_wavefronts;
    }
}

/// Everything counted for one source line (or for a whole kernel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCounters {
    pub global_load: GlobalCounters,
    pub global_store: GlobalCounters,
    pub global_atomic: GlobalCounters,
    pub shared_load: SharedCounters,
    pub shared_store: SharedCounters,
    pub shared_atomic: SharedCounters,
    /// Executed warp instructions.
    pub warp_instructions: u64,
    /// The warp's lanes at each executed instruction, summed (Nsight's
    /// thread instructions executed).
    pub thread_instructions: u64,
    /// Lanes whose guard predicate was true, summed.
    pub predicated_on_threads: u64,
    /// Executed `bra` instructions, and those whose lanes went both ways.
    pub branches: u64,
    pub divergent_branches: u64,
    /// `bar.sync` executed, counted per warp.
    pub barriers: u64,
    /// Floating-point operations (fma = 2) of 32- and 64-bit floats, per lane.
    pub fp32_flops: u64,
    pub fp64_flops: u64,
    /// Integer operations of `dp4a` (8 per lane) and `dp2a` (4 per lane).
    pub int8_ops: u64,
    /// Bytes of the sectors first touched here (the optimistic DRAM model:
    /// every sector crosses DRAM once).
    pub dram_bytes: u64,
}

impl LineCounters {
    /// All global requests: loads, stores and atomics.
    pub fn global(&self) -> GlobalCounters {
        let mut g = self.global_load;
        g.add(&self.global_store);
        g.add(&self.global_atomic);
        g
    }

    /// All shared requests: loads, stores and atomics.
    pub fn shared(&self) -> SharedCounters {
        let mut s = self.shared_load;
        s.add(&self.shared_store);
        s.add(&self.shared_atomic);
        s
    }

    /// Average lanes per executed warp instruction, if any executed.
    pub fn active_lanes_avg(&self) -> Option<f64> {
        (self.warp_instructions > 0)
            .then(|| self.thread_instructions as f64 / self.warp_instructions as f64)
    }

    pub fn add(&mut self, o: &LineCounters) {
        self.global_load.add(&o.global_load);
        self.global_store.add(&o.global_store);
        self.global_atomic.add(&o.global_atomic);
        self.shared_load.add(&o.shared_load);
        self.shared_store.add(&o.shared_store);
        self.shared_atomic.add(&o.shared_atomic);
        self.warp_instructions += o.warp_instructions;
        self.thread_instructions += o.thread_instructions;
        self.predicated_on_threads += o.predicated_on_threads;
        self.branches += o.branches;
        self.divergent_branches += o.divergent_branches;
        self.barriers += o.barriers;
        self.fp32_flops += o.fp32_flops;
        self.fp64_flops += o.fp64_flops;
        self.int8_ops += o.int8_ops;
        self.dram_bytes += o.dram_bytes;
    }
}

/// Which CTAs are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtaSample {
    All,
    /// At most this many CTAs, spread evenly over the grid: CTA
    /// `floor(k * total / n)` for `k` in `0..n`.
    Spread(u32),
}

/// The wavefronts of one shared-memory request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wavefronts {
    pub wavefronts: u64,
    pub ideal: u64,
}

/// Lanes served together for an access of `bytes` per lane: a warp of
/// 4-byte (or narrower) accesses in one phase, 8-byte accesses in two
/// half-warps, 16-byte accesses in four quarter-warps (`docs/profile.md`).
fn lanes_per_phase(bytes: u32) -> u32 {
    match bytes {
        0..=4 => 32,
        5..=8 => 16,
        _ => 8,
    }
}

/// Wavefronts of one warp's shared-memory request, given each active
/// lane's `(lane, byte offset, bytes)`. The lanes are split into phases by
/// access width; in each phase a bank serves one distinct 4-byte word per
/// wavefront (lanes reading the same word share it: a broadcast), so the
/// phase takes as many wavefronts as its busiest bank has distinct words.
/// The ideal is one wavefront per phase that has an active lane.
pub fn shared_wavefronts(accesses: &[(u32, u64, u32)]) -> Wavefronts {
    let widest = accesses.iter().map(|a| a.2).max().unwrap_or(4);
    let per_phase = lanes_per_phase(widest);
    let mut out = Wavefronts::default();
    let mut words: Vec<u64> = Vec::with_capacity(128);
    for phase in 0..32 / per_phase {
        let lanes = phase * per_phase..(phase + 1) * per_phase;
        words.clear();
        for &(_, addr, bytes) in accesses.iter().filter(|a| lanes.contains(&a.0)) {
            let first = addr / 4;
            let last = (addr + u64::from(bytes.max(1)) - 1) / 4;
            words.extend(first..=last);
        }
        if words.is_empty() {
            continue;
        }
        words.sort_unstable();
        words.dedup();
        let mut per_bank = [0u32; 32];
        for w in &words {
            per_bank[(w % 32) as usize] += 1;
        }
        out.wavefronts += u64::from(per_bank.iter().copied().max().unwrap_or(0));
        out.ideal += 1;
    }
    out
}

/// Counts distinct `size`-byte segments touched by `(addr, bytes)` accesses;
/// `scratch` is reused between calls.
fn segments(accesses: &[(u64, u32)], size: u64, scratch: &mut Vec<u64>) -> u64 {
    scratch.clear();
    for &(addr, bytes) in accesses {
        let first = addr / size;
        let last = (addr + u64::from(bytes.max(1)) - 1) / size;
        scratch.extend(first..=last);
    }
    scratch.sort_unstable();
    scratch.dedup();
    scratch.len() as u64
}

/// The counting observer.
pub struct Profiler {
    sampled: Vec<u32>,
    sample_all: bool,
    /// Counters per source line; index 0 holds instructions without a line.
    lines: Vec<LineCounters>,
    /// Sectors ever touched, for the DRAM model.
    touched: SectorSet,
    ctas_seen: HashSet<u32>,
    last_cta: Option<u32>,
    global: Vec<(u64, u32)>,
    shared: Vec<(u32, u64, u32)>,
    scratch: Vec<u64>,
}

impl Profiler {
    /// A profiler for a grid of `total_ctas` CTAs.
    pub fn new(total_ctas: u64, sample: CtaSample) -> Profiler {
        let (sample_all, sampled) = match sample {
            CtaSample::Spread(n) if u64::from(n) < total_ctas => {
                let n = u64::from(n.max(1));
                let mut v: Vec<u32> = (0..n)
                    .map(|k| u32::try_from(k * total_ctas / n).unwrap_or(u32::MAX))
                    .collect();
                v.dedup();
                (false, v)
            }
            _ => (true, Vec::new()),
        };
        Profiler {
            sampled,
            sample_all,
            lines: Vec::new(),
            touched: SectorSet::default(),
            ctas_seen: HashSet::new(),
            last_cta: None,
            global: Vec::with_capacity(32),
            shared: Vec::with_capacity(32),
            scratch: Vec::with_capacity(128),
        }
    }

    /// CTAs that executed at least one observed instruction.
    pub fn ctas_profiled(&self) -> u64 {
        self.ctas_seen.len() as u64
    }

    /// Counters of each line that executed something, by line number
    /// (0: instructions without a `.loc`).
    pub fn lines(&self) -> impl Iterator<Item = (u32, &LineCounters)> {
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, c)| c.warp_instructions > 0)
            .map(|(i, c)| (i as u32, c))
    }

    /// The counters of one line (zero if it executed nothing).
    pub fn line(&self, line: u32) -> LineCounters {
        self.lines.get(line as usize).copied().unwrap_or_default()
    }

    /// The whole kernel's counters.
    pub fn totals(&self) -> LineCounters {
        let mut t = LineCounters::default();
        for c in &self.lines {
            t.add(c);
        }
        t
    }

    fn line_mut(&mut self, line: u32) -> &mut LineCounters {
        let i = line as usize;
        if self.lines.len() <= i {
            self.lines.resize(i + 1, LineCounters::default());
        }
        &mut self.lines[i]
    }

    fn count_global(&mut self, line: u32, kind: AccessKind) {
        if self.global.is_empty() {
            return;
        }
        let sectors = segments(&self.global, 32, &mut self.scratch);
        let mut first_touch = 0u64;
        for &s in &self.scratch {
            if self.touched.insert(s) {
                first_touch += 1;
            }
        }
        let lines = segments(&self.global, 128, &mut self.scratch);
        let bytes: u64 = self.global.iter().map(|a| u64::from(a.1)).sum();
        let c = self.line_mut(line);
        let g = match kind {
            AccessKind::Load => &mut c.global_load,
            AccessKind::Store => &mut c.global_store,
            AccessKind::Atomic => &mut c.global_atomic,
        };
        g.requests += 1;
        g.sectors += sectors;
        g.lines += lines;
        g.bytes_requested += bytes;
        c.dram_bytes += first_touch * 32;
    }

    fn count_shared(&mut self, line: u32, kind: AccessKind) {
        if self.shared.is_empty() {
            return;
        }
        let w = shared_wavefronts(&self.shared);
        let c = self.line_mut(line);
        let s = match kind {
            AccessKind::Load => &mut c.shared_load,
            AccessKind::Store => &mut c.shared_store,
            AccessKind::Atomic => &mut c.shared_atomic,
        };
        s.requests += 1;
        s.wavefronts += w.wavefronts;
        s.ideal_wavefronts += w.ideal;
    }
}

impl Observer for Profiler {
    fn wants_cta(&mut self, cta: u32) -> bool {
        self.sample_all || self.sampled.binary_search(&cta).is_ok()
    }

    fn step(&mut self, info: &StepInfo<'_>) {
        if !self.sample_all && self.sampled.binary_search(&info.cta).is_err() {
            return;
        }
        if self.last_cta != Some(info.cta) {
            self.last_cta = Some(info.cta);
            self.ctas_seen.insert(info.cta);
        }
        let line = info.loc.map_or(0, |(_, l, _)| l);
        let active = u64::from(info.active.count_ones());
        let c = self.line_mut(line);
        c.warp_instructions += 1;
        c.thread_instructions += u64::from(info.lanes.count_ones());
        c.predicated_on_threads += active;
        match info.kind {
            OpKind::Branch => {
                c.branches += 1;
                if info.active != info.lanes {
                    c.divergent_branches += 1;
                }
            }
            OpKind::Barrier => c.barriers += 1,
            OpKind::Float32 { flops } => c.fp32_flops += u64::from(flops) * active,
            OpKind::Float64 { flops } => c.fp64_flops += u64::from(flops) * active,
            OpKind::IntDot { ops } => c.int8_ops += u64::from(ops) * active,
            _ => {}
        }
        if info.accesses.is_empty() {
            return;
        }
        // One instruction accesses one space with one kind; group anyway, so
        // a future instruction that mixes them is still counted right.
        for kind in [AccessKind::Load, AccessKind::Store, AccessKind::Atomic] {
            self.global.clear();
            self.shared.clear();
            for a in info.accesses.iter().filter(|a| a.kind == kind) {
                match a.space {
                    Space::Global => self.global.push((a.addr, a.bytes)),
                    Space::Shared => self.shared.push((a.thread % 32, a.addr, a.bytes)),
                    Space::Local | Space::Param => {}
                }
            }
            self.count_global(line, kind);
            self.count_shared(line, kind);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lanes(f: impl Fn(u32) -> (u64, u32)) -> Vec<(u32, u64, u32)> {
        (0..32)
            .map(|l| {
                let (a, b) = f(l);
                (l, a, b)
            })
            .collect()
    }

    #[test]
    fn consecutive_words_take_one_wavefront() {
        let w = shared_wavefronts(&lanes(|l| (u64::from(l) * 4, 4)));
        assert_eq!(
            w,
            Wavefronts {
                wavefronts: 1,
                ideal: 1
            }
        );
    }

    #[test]
    fn a_column_of_a_32_wide_tile_takes_32_wavefronts() {
        let w = shared_wavefronts(&lanes(|l| (u64::from(l) * 128, 4)));
        assert_eq!(
            w,
            Wavefronts {
                wavefronts: 32,
                ideal: 1
            }
        );
    }

    #[test]
    fn a_column_of_a_33_wide_tile_takes_one() {
        let w = shared_wavefronts(&lanes(|l| (u64::from(l) * 132 + 8, 4)));
        assert_eq!(
            w,
            Wavefronts {
                wavefronts: 1,
                ideal: 1
            }
        );
    }

    #[test]
    fn a_broadcast_takes_one_and_two_words_per_bank_take_two() {
        assert_eq!(shared_wavefronts(&lanes(|_| (12, 4))).wavefronts, 1);
        // Lanes 2k and 2k+1 read words 64 apart: the same bank, two words.
        let w = shared_wavefronts(&lanes(|l| {
            (u64::from(l / 2) * 4 + u64::from(l % 2) * 256, 4)
        }));
        assert_eq!(
            w,
            Wavefronts {
                wavefronts: 2,
                ideal: 1
            }
        );
    }

    #[test]
    fn wide_accesses_are_served_in_phases() {
        // 8 bytes per lane, contiguous: two half-warps of 128 bytes each.
        let w = shared_wavefronts(&lanes(|l| (u64::from(l) * 8, 8)));
        assert_eq!(
            w,
            Wavefronts {
                wavefronts: 2,
                ideal: 2
            }
        );
        // 16 bytes per lane, contiguous: four quarter-warps.
        let w = shared_wavefronts(&lanes(|l| (u64::from(l) * 16, 16)));
        assert_eq!(
            w,
            Wavefronts {
                wavefronts: 4,
                ideal: 4
            }
        );
        // 16 bytes per lane at a 256-byte stride: every lane of a quarter
        // warp hits banks 0-3, so each phase takes 8 wavefronts.
        let w = shared_wavefronts(&lanes(|l| (u64::from(l) * 256, 16)));
        assert_eq!(
            w,
            Wavefronts {
                wavefronts: 32,
                ideal: 4
            }
        );
        // Only lanes 0-7 active: one phase.
        let w = shared_wavefronts(&lanes(|l| (u64::from(l) * 16, 16))[..8]);
        assert_eq!(
            w,
            Wavefronts {
                wavefronts: 1,
                ideal: 1
            }
        );
    }

    #[test]
    fn segments_count_distinct_aligned_pieces() {
        let mut s = Vec::new();
        let contiguous: Vec<(u64, u32)> = (0..32).map(|l| (4096 + l * 4, 4)).collect();
        assert_eq!(segments(&contiguous, 32, &mut s), 4);
        assert_eq!(segments(&contiguous, 128, &mut s), 1);
        // A 4-byte access straddling a sector boundary touches two.
        assert_eq!(segments(&[(30, 4)], 32, &mut s), 2);
    }

    #[test]
    fn sampling_spreads_over_the_grid() {
        let mut p = Profiler::new(10, CtaSample::Spread(3));
        let picked: Vec<u32> = (0..10).filter(|&c| p.wants_cta(c)).collect();
        assert_eq!(picked, vec![0, 3, 6]);
        let mut all = Profiler::new(2, CtaSample::Spread(3));
        assert!((0..2).all(|c| all.wants_cta(c)));
    }
}
