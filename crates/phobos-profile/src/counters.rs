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

use phobos_sim::{Access, AccessKind, Observer, OpKind, Space, SplitObserver, StepInfo};
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiplicative hash for page numbers (the default SipHash costs more
/// than the rest of the lookup; these keys are not adversarial).
#[derive(Default)]
struct PageHasher(u64);

impl Hasher for PageHasher {
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

/// Sectors per page of [`FirstTouches`]: 4096 sectors, 128 KiB of
/// addresses.
const PAGE_SECTORS_LOG2: u32 = 12;
const PAGE_SECTORS: usize = 1 << PAGE_SECTORS_LOG2;

/// The first touch of every 32-byte sector, for the DRAM model: per
/// sector, the CTA and the line that touched it first, as
/// `(cta << 32 | line) + 1` (0: never touched). Sectors are kept in pages
/// found through a map from page number, with the last page used at hand:
/// a warp's sectors almost always fall in one page, so a request costs one
/// map lookup at most. Ordering by CTA makes the first touch the same
/// whichever host thread saw which CTA.
#[derive(Default)]
struct FirstTouches {
    index: HashMap<u64, usize, BuildHasherDefault<PageHasher>>,
    pages: Vec<Box<[u64; PAGE_SECTORS]>>,
    last: Option<(u64, usize)>,
}

impl FirstTouches {
    fn page_mut(&mut self, page: u64) -> &mut [u64; PAGE_SECTORS] {
        let i = match self.last {
            Some((p, i)) if p == page => i,
            _ => {
                let next = self.pages.len();
                let i = *self.index.entry(page).or_insert(next);
                if i == next {
                    self.pages.push(Box::new([0; PAGE_SECTORS]));
                }
                self.last = Some((page, i));
                i
            }
        };
        &mut self.pages[i]
    }

    /// Records a touch of `sector` by `cta` on `line`, unless one is
    /// recorded already: one observer sees its CTAs in increasing order,
    /// so the first recorded is the earliest.
    fn touch(&mut self, sector: u64, cta: u32, line: u32) {
        let entry =
            &mut self.page_mut(sector >> PAGE_SECTORS_LOG2)[sector as usize & (PAGE_SECTORS - 1)];
        if *entry == 0 {
            *entry = (u64::from(cta) << 32 | u64::from(line)).saturating_add(1);
        }
    }

    /// Keeps, of this and `other`'s first touch of each sector, the one
    /// by the lower CTA.
    fn join(&mut self, other: FirstTouches) {
        for (page, i) in other.index {
            let theirs = &other.pages[i];
            let mine = self.page_mut(page);
            for (m, &t) in mine.iter_mut().zip(theirs.iter()) {
                if t != 0 && (*m == 0 || t < *m) {
                    *m = t;
                }
            }
        }
    }

    /// Bytes first touched by each line (indexed by line).
    fn bytes_per_line(&self) -> Vec<u64> {
        let mut out: Vec<u64> = Vec::new();
        for page in &self.pages {
            for &e in page.iter().filter(|&&e| e != 0) {
                let line = ((e - 1) & 0xffff_ffff) as usize;
                if out.len() <= line {
                    out.resize(line + 1, 0);
                }
                out[line] += 32;
            }
        }
        out
    }
}

/// Counts that add up field by field (a struct of them, or one count).
trait Accumulate {
    fn accumulate(&mut self, o: &Self);
}

impl Accumulate for u64 {
    fn accumulate(&mut self, o: &u64) {
        *self += o;
    }
}

/// `add` for a struct of counts: each of `fields` (every field of it)
/// adds up on its own.
macro_rules! counts {
    ($ty:ident: $($field:ident),+) => {
        impl Accumulate for $ty {
            fn accumulate(&mut self, o: &$ty) {
                $(self.$field.accumulate(&o.$field);)+
            }
        }

        impl $ty {
            /// Adds `o`'s counts to these.
            pub fn add(&mut self, o: &$ty) {
                self.accumulate(o);
            }
        }
    };
}

/// The sum of three sets of counts.
fn sum<T: Accumulate + Copy>(parts: [&T; 3]) -> T {
    let mut total = *parts[0];
    for p in &parts[1..] {
        total.accumulate(p);
    }
    total
}

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
}

counts!(GlobalCounters: requests, sectors, lines, bytes_requested);

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
}

counts!(SharedCounters: requests, wavefronts, ideal_wavefronts);

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
        sum([&self.global_load, &self.global_store, &self.global_atomic])
    }

    /// All shared requests: loads, stores and atomics.
    pub fn shared(&self) -> SharedCounters {
        sum([&self.shared_load, &self.shared_store, &self.shared_atomic])
    }

    /// Average lanes per executed warp instruction, if any executed.
    pub fn active_lanes_avg(&self) -> Option<f64> {
        (self.warp_instructions > 0)
            .then(|| self.thread_instructions as f64 / self.warp_instructions as f64)
    }
}

counts!(
    LineCounters: global_load,
    global_store,
    global_atomic,
    shared_load,
    shared_store,
    shared_atomic,
    warp_instructions,
    thread_instructions,
    predicated_on_threads,
    branches,
    divergent_branches,
    barriers,
    fp32_flops,
    fp64_flops,
    int8_ops,
    dram_bytes
);

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

/// The distinct `size`-byte segments touched by `(addr, bytes)` accesses,
/// sorted, left in `out`. A warp's addresses usually rise with the lane,
/// so the list is sorted only when they do not.
fn segments(accesses: impl Iterator<Item = (u64, u32)>, size: u64, out: &mut Vec<u64>) {
    out.clear();
    let mut rising = true;
    for (addr, bytes) in accesses {
        let first = addr / size;
        let last = (addr + u64::from(bytes.max(1)) - 1) / size;
        if out.last().is_some_and(|&prev| first < prev) {
            rising = false;
        }
        out.extend(first..=last);
    }
    if !rising {
        out.sort_unstable();
    }
    out.dedup();
}

/// Distinct values of `v / ratio` in a sorted list.
fn distinct_coarse(sorted: &[u64], ratio: u64) -> u64 {
    let mut n = 0;
    let mut prev = None;
    for &s in sorted {
        let c = s / ratio;
        if prev != Some(c) {
            n += 1;
            prev = Some(c);
        }
    }
    n
}

/// The counting observer.
pub struct Profiler {
    sampled: Vec<u32>,
    sample_all: bool,
    /// Counters per source line; index 0 holds instructions without a line.
    lines: Vec<LineCounters>,
    /// The first touch of each sector, for the DRAM model.
    touched: FirstTouches,
    ctas_seen: HashSet<u32>,
    last_cta: Option<u32>,
    /// Reused buffers: the accesses of one space and kind when an
    /// instruction mixes them, and sector numbers.
    group: Vec<Access>,
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
        Profiler::empty(sampled, sample_all)
    }

    /// A profiler of the CTAs `sampled` (all when `sample_all`) that has
    /// counted nothing yet.
    fn empty(sampled: Vec<u32>, sample_all: bool) -> Profiler {
        Profiler {
            sampled,
            sample_all,
            lines: Vec::new(),
            touched: FirstTouches::default(),
            ctas_seen: HashSet::new(),
            last_cta: None,
            group: Vec::with_capacity(32),
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
    pub fn lines(&self) -> Vec<(u32, LineCounters)> {
        let dram = self.touched.bytes_per_line();
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, c)| c.warp_instructions > 0)
            .map(|(i, c)| {
                let mut c = *c;
                c.dram_bytes = dram.get(i).copied().unwrap_or(0);
                (i as u32, c)
            })
            .collect()
    }

    /// The counters of one line (zero if it executed nothing).
    pub fn line(&self, line: u32) -> LineCounters {
        let mut c = self.lines.get(line as usize).copied().unwrap_or_default();
        c.dram_bytes = self
            .touched
            .bytes_per_line()
            .get(line as usize)
            .copied()
            .unwrap_or(0);
        c
    }

    /// The whole kernel's counters.
    pub fn totals(&self) -> LineCounters {
        let mut t = LineCounters::default();
        for c in &self.lines {
            t.add(c);
        }
        t.dram_bytes = self.touched.bytes_per_line().iter().sum();
        t
    }

    fn line_mut(&mut self, line: u32) -> &mut LineCounters {
        let i = line as usize;
        if self.lines.len() <= i {
            self.lines.resize(i + 1, LineCounters::default());
        }
        &mut self.lines[i]
    }

    /// Counts one request of global accesses of one kind.
    fn count_global(&mut self, cta: u32, line: u32, kind: AccessKind, accesses: &[Access]) {
        segments(
            accesses.iter().map(|a| (a.addr, a.bytes)),
            32,
            &mut self.scratch,
        );
        let sectors = self.scratch.len() as u64;
        let lines = distinct_coarse(&self.scratch, 4);
        for &s in &self.scratch {
            self.touched.touch(s, cta, line);
        }
        let bytes: u64 = accesses.iter().map(|a| u64::from(a.bytes)).sum();
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
    }

    /// Counts one request of shared accesses of one kind.
    fn count_shared(&mut self, line: u32, kind: AccessKind, accesses: &[Access]) {
        self.shared.clear();
        self.shared
            .extend(accesses.iter().map(|a| (a.thread % 32, a.addr, a.bytes)));
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

    /// Counts accesses that all have one space and kind as one request.
    fn count(&mut self, cta: u32, line: u32, space: Space, kind: AccessKind, accesses: &[Access]) {
        match space {
            Space::Global => self.count_global(cta, line, kind, accesses),
            Space::Shared => self.count_shared(line, kind, accesses),
            Space::Local | Space::Param => {}
        }
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
        let Some(first) = info.accesses.first() else {
            return;
        };
        // An instruction accesses one space with one kind: count its
        // accesses in place. Should one ever mix them, each space and kind
        // is counted as a request of its own.
        if info
            .accesses
            .iter()
            .all(|a| a.space == first.space && a.kind == first.kind)
        {
            self.count(info.cta, line, first.space, first.kind, info.accesses);
            return;
        }
        let mut group = std::mem::take(&mut self.group);
        for space in [Space::Global, Space::Shared] {
            for kind in [AccessKind::Load, AccessKind::Store, AccessKind::Atomic] {
                group.clear();
                group.extend(
                    info.accesses
                        .iter()
                        .filter(|a| a.space == space && a.kind == kind)
                        .cloned(),
                );
                if !group.is_empty() {
                    self.count(info.cta, line, space, kind, &group);
                }
            }
        }
        self.group = group;
    }
}

impl SplitObserver for Profiler {
    fn split(&self) -> Profiler {
        Profiler::empty(self.sampled.clone(), self.sample_all)
    }

    fn join(&mut self, other: Profiler) {
        if self.lines.len() < other.lines.len() {
            self.lines
                .resize(other.lines.len(), LineCounters::default());
        }
        for (mine, theirs) in self.lines.iter_mut().zip(&other.lines) {
            mine.add(theirs);
        }
        self.ctas_seen.extend(other.ctas_seen);
        self.touched.join(other.touched);
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
        segments(contiguous.iter().copied(), 32, &mut s);
        assert_eq!(s, vec![128, 129, 130, 131]);
        assert_eq!(distinct_coarse(&s, 4), 1);
        // A 4-byte access straddling a sector boundary touches two.
        segments([(30, 4)].into_iter(), 32, &mut s);
        assert_eq!(s.len(), 2);
        // Lanes in falling order, and two lanes on one sector.
        let falling: Vec<(u64, u32)> = (0..32).rev().map(|l| (l * 128, 4)).collect();
        segments(falling.iter().copied().chain([(0, 4)]), 32, &mut s);
        assert_eq!(s, (0..32).map(|l| l * 4).collect::<Vec<u64>>());
        assert_eq!(distinct_coarse(&s, 4), 32);
    }

    #[test]
    fn the_first_touch_of_a_sector_is_the_lowest_ctas() {
        let mut a = FirstTouches::default();
        a.touch(5, 0, 10);
        a.touch(5, 0, 11);
        a.touch(5 + PAGE_SECTORS as u64, 3, 12);
        a.touch(u64::MAX, 3, 12);
        assert_eq!(a.bytes_per_line(), [vec![0; 10], vec![32, 0, 64]].concat());
        // Another copy saw CTA 2 and 4: CTA 2's touch of the second sector
        // comes first, CTA 4's of the first does not.
        let mut b = FirstTouches::default();
        b.touch(5 + PAGE_SECTORS as u64, 2, 13);
        b.touch(5, 4, 14);
        b.touch(7, 4, 14);
        a.join(b);
        assert_eq!(
            a.bytes_per_line(),
            [vec![0; 10], vec![32, 0, 32, 32, 32]].concat()
        );
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
