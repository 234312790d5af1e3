//! Bulk tensor copies (TMA) and the asynchronous proxy's checks.
//!
//! **`cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//! [dst], [tensorMap, {c0, ...}], [mbar]`** copies the tensor map's box at
//! the signed element coordinates `c` (dimension 0 innermost) into shared
//! memory at `dst` (128-byte aligned): the box's elements densely in
//! row-major order (dimension 0 fastest), each 16-byte chunk moved by the
//! map's swizzle ([`crate::tensor_map::swizzle`]), elements outside the
//! tensor filled with zeros. Its bytes complete `box bytes` transactions
//! on the mbarrier. The simulator reads global memory when the copy is
//! issued and delivers the bytes as late as the ISA allows: when a thread
//! waits on the mbarrier and the phase can complete with them (every
//! arrival made, the tx-count equal to the bytes in flight). Until then
//! any generic access to the bytes is a racecheck error; after it, a
//! thread may read them once its own wait saw that phase complete (or a
//! `bar.sync` follows some thread's wait), else it is a racecheck error
//! too: "reading a stage before its mbarrier phase completes".
//!
//! **`cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group
//! [tensorMap, {c0, ...}], [src]`** is the store: it reads the box from
//! shared memory (in the map's swizzle) when issued and writes the
//! in-bounds elements to global memory; `cp.async.bulk.commit_group` and
//! `cp.async.bulk.wait_group{.read} N` group the stores per thread, and a
//! generic write to the source bytes before the issuing thread's wait is a
//! racecheck error. The read is an async-proxy read: a generic-proxy write
//! to those bytes with no `fence.proxy.async` by the writer between them is
//! a racecheck error ([`async_proxy_read`], which wgmma's shared operands
//! use too).
//!
//! **Plain bulk copies** (`cp.async.bulk.shared::cluster.global...` and
//! `cp.async.bulk.global.shared::cta.bulk_group`, `size` bytes, 16-byte
//! aligned) move bytes without a map, with the same landing and checks.
//! Prefetches (`cp.async.bulk.prefetch...`, `prefetch...`) are cache hints:
//! no-ops whose operands are still decoded.
//!
//! **Stage reuse.** A copy into bytes that an earlier copy delivered and
//! other threads read in this barrier interval must follow each reader's
//! release: an mbarrier arrive after its read whose phase the issuing
//! thread has waited for (a ring's `empty` barrier), or a `bar.sync`
//! ([`check_release`]).

use crate::checks::{misaligned, shared_out_of_bounds, Fault};
use crate::decode::{has, unsupported, Addr, Decoder, MemSpace, Op, Slot, Ty};
use crate::error::{CheckKind, SimError};
use crate::exec::address;
use crate::launch::{CtaState, Ctx};
use crate::mbarrier::{complete_if_done, BarAddr, TmaInst};
use crate::memory::{classify_generic, Generic, PARAM_GENERIC_BASE};
use crate::observer::{Access, AccessKind, Space};
use crate::parse::{RawInst, RawOperand};
use crate::tensor_map::{swizzle, TensorMap, TENSOR_MAP_BYTES};
use crate::warp::{lanes, Warp};

/// A decoded `cp.async.bulk` instruction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum BulkInst {
    /// Global to shared through a tensor map, completing on an mbarrier.
    Load {
        dst: Addr,
        map: Slot,
        coords: Vec<Slot>,
        bar: BarAddr,
    },
    /// Shared to global through a tensor map, in a bulk group.
    Store {
        map: Slot,
        coords: Vec<Slot>,
        src: Addr,
    },
    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
    /// [dst], [src], size, [mbar]`: `size` bytes, no tensor map.
    LinearLoad {
        dst: Addr,
        src: Addr,
        size: Slot,
        bar: BarAddr,
    },
    /// `cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size`.
    LinearStore {
        dst: Addr,
        src: Addr,
        size: Slot,
    },
    Commit,
    /// `wait_group{.read} keep`.
    Wait {
        keep: u32,
    },
}

impl BulkInst {
    /// Calls `f(slot, written)` for every register the instruction reads
    /// (`TmaInst::slots`).
    pub(crate) fn slots(&self, f: &mut dyn FnMut(Slot, bool)) {
        let base = |a: &Addr, f: &mut dyn FnMut(Slot, bool)| {
            if let Some(b) = a.base {
                f(b, false);
            }
        };
        match self {
            BulkInst::Load {
                dst,
                map,
                coords,
                bar,
            } => {
                base(dst, f);
                base(&bar.addr, f);
                f(*map, false);
                coords.iter().for_each(|&s| f(s, false));
            }
            BulkInst::Store { map, coords, src } => {
                base(src, f);
                f(*map, false);
                coords.iter().for_each(|&s| f(s, false));
            }
            BulkInst::LinearLoad {
                dst,
                src,
                size,
                bar,
            } => {
                base(dst, f);
                base(src, f);
                base(&bar.addr, f);
                f(*size, false);
            }
            BulkInst::LinearStore { dst, src, size } => {
                base(dst, f);
                base(src, f);
                f(*size, false);
            }
            BulkInst::Commit | BulkInst::Wait { .. } => {}
        }
    }
}

/// One bulk copy in flight.
#[derive(Clone, Debug)]
pub(crate) struct BulkCopy {
    pub tid: u32,
    pub pc: u32,
    /// The mbarrier it completes on (shared offset).
    pub bar: u32,
    /// Its transaction count.
    pub bytes: u64,
    /// Destination 16-byte chunks: (shared offset, bytes).
    pub chunks: Vec<(u32, [u8; 16])>,
}

/// A bulk copy that has landed, for the check of reads before the wait.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Landing {
    pub bar: u32,
    /// The mbarrier phase whose completion delivered it.
    pub phase: i64,
    /// The CTA barrier epoch it landed in.
    pub epoch: u32,
    pub tid: u32,
    pub pc: u32,
}

/// A store's source bytes, read until the issuing thread's wait.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StoreRead {
    pub tid: u32,
    pub pc: u32,
    pub off: u32,
    pub len: u32,
    pub group: Option<u32>,
}

impl Decoder {
    /// `prefetch{.space}.{L1,L2}`, `prefetchu.L1` and `prefetch{.space}.tensormap`
    /// `[a]`: cache hints, so no-ops in the simulator (the address operand is
    /// still decoded).
    pub(crate) fn prefetch(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let ok = mods.iter().all(|m| {
            matches!(
                *m,
                "global"
                    | "local"
                    | "const"
                    | "param"
                    | "L1"
                    | "L2"
                    | "tensormap"
                    | "L2::evict_last"
                    | "L2::evict_normal"
            )
        }) && mods.iter().any(|m| {
            matches!(
                *m,
                "L1" | "L2" | "tensormap" | "L2::evict_last" | "L2::evict_normal"
            )
        });
        if !ok {
            return Err(unsupported(&i.opcode, i.line));
        }
        self.want(&i.operands, 1, i)?;
        self.addr(&i.operands[0], i.line)?;
        Ok(Op::Nop)
    }

    /// `cp.async.bulk.tensor` loads and stores, `cp.async.bulk.commit_group`
    /// and `cp.async.bulk.wait_group{.read}`.
    pub(crate) fn bulk(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let bad = || unsupported(&i.opcode, line);
        let t = match mods {
            ["async", "bulk", "commit_group"] => {
                self.want(ops, 0, i)?;
                BulkInst::Commit
            }
            ["async", "bulk", "wait_group"] | ["async", "bulk", "wait_group", "read"] => {
                self.want(ops, 1, i)?;
                let keep = match &ops[0] {
                    RawOperand::Word {
                        text,
                        negated: false,
                    } => crate::parse::parse_uint(text).and_then(|v| u32::try_from(v).ok()),
                    _ => None,
                }
                .ok_or_else(|| {
                    SimError::parse(line, "cp.async.bulk.wait_group needs an integer constant")
                })?;
                BulkInst::Wait { keep }
            }
            // Prefetches into L2: the simulator has no caches; the operands
            // are still decoded, so a malformed one is an error.
            ["async", "bulk", "prefetch", "tensor", dim, "L2", "global", rest @ ..]
                if rest.iter().all(|m| matches!(*m, "tile" | "L2::cache_hint"))
                    && dim
                        .strip_suffix('d')
                        .and_then(|d| d.parse::<usize>().ok())
                        .is_some_and(|d| (1..=5).contains(&d)) =>
            {
                let hint = has(rest, "L2::cache_hint");
                self.want(ops, 1 + usize::from(hint), i)?;
                let RawOperand::TensorAddr { base, coords } = &ops[0] else {
                    return Err(SimError::parse(
                        line,
                        "expected a tensor operand `[tensorMap, {c0, ...}]`",
                    ));
                };
                let rank = dim
                    .strip_suffix('d')
                    .and_then(|d| d.parse::<usize>().ok())
                    .unwrap_or(0);
                if coords.len() != rank {
                    return Err(SimError::parse(
                        line,
                        format!(
                            "a {rank}d tensor prefetch takes {rank} coordinates, found {}",
                            coords.len()
                        ),
                    ));
                }
                if !self.params.contains_key(base) {
                    self.src_name(base, false, Ty::U64, line)?;
                }
                for c in coords {
                    self.src_name(c, false, Ty::S32, line)?;
                }
                return Ok(Op::Nop);
            }
            ["async", "bulk", "prefetch", "L2", "global", rest @ ..]
                if rest.iter().all(|m| *m == "L2::cache_hint") =>
            {
                let hint = !rest.is_empty();
                self.want(ops, 2 + usize::from(hint), i)?;
                self.addr(&ops[0], line)?;
                self.src(&ops[1], Ty::U32, line)?;
                return Ok(Op::Nop);
            }
            ["async", "bulk", "tensor", dim, rest @ ..] => {
                let rank: usize = dim
                    .strip_suffix('d')
                    .and_then(|d| d.parse().ok())
                    .filter(|d| (1..=5).contains(d))
                    .ok_or_else(bad)?;
                let hint = has(rest, "L2::cache_hint");
                let load = rest.first().is_some_and(|m| m.starts_with("shared"));
                for m in rest {
                    let ok = matches!(
                        *m,
                        "shared" | "shared::cluster" | "global" | "tile" | "L2::cache_hint"
                    ) || (load && *m == "mbarrier::complete_tx::bytes")
                        || (!load && *m == "bulk_group");
                    if !ok {
                        return Err(bad());
                    }
                }
                let n = 2 + usize::from(load) + usize::from(hint);
                self.want(ops, n, i)?;
                let tensor = if load { &ops[1] } else { &ops[0] };
                let RawOperand::TensorAddr { base, coords } = tensor else {
                    return Err(SimError::parse(
                        line,
                        "expected a tensor operand `[tensorMap, {c0, ...}]`",
                    ));
                };
                if coords.len() != rank {
                    return Err(SimError::parse(
                        line,
                        format!(
                            "a {rank}d tensor copy takes {rank} coordinates, found {}",
                            coords.len()
                        ),
                    ));
                }
                // A `.param` symbol names the map by its generic address.
                let map = match self.params.get(base) {
                    Some(&off) => self.konst(PARAM_GENERIC_BASE + off),
                    None => self.src_name(base, false, Ty::U64, line)?,
                };
                let coords = coords
                    .iter()
                    .map(|c| self.src_name(c, false, Ty::S32, line))
                    .collect::<Result<Vec<_>, _>>()?;
                if let Some(o) = ops.get(n - 1).filter(|_| hint) {
                    self.src(o, Ty::U64, line)?;
                }
                if load {
                    BulkInst::Load {
                        dst: self.addr(&ops[0], line)?,
                        map,
                        coords,
                        bar: BarAddr {
                            space: MemSpace::Shared,
                            addr: self.addr(&ops[2], line)?,
                        },
                    }
                } else {
                    BulkInst::Store {
                        map,
                        coords,
                        src: self.addr(&ops[1], line)?,
                    }
                }
            }
            ["async", "bulk", first, rest @ ..]
                if first.starts_with("shared") || *first == "global" =>
            {
                let load = *first != "global";
                let hint = has(rest, "L2::cache_hint");
                let want: &[&str] = if load {
                    &["global", "mbarrier::complete_tx::bytes"]
                } else {
                    &["shared", "bulk_group"]
                };
                let ok = rest.len() == want.len() + usize::from(hint)
                    && rest[..want.len()] == *want
                    && (!load || matches!(*first, "shared" | "shared::cluster"));
                if !ok {
                    return Err(bad());
                }
                let n = 3 + usize::from(load) + usize::from(hint);
                self.want(ops, n, i)?;
                if let Some(o) = ops.get(n - 1).filter(|_| hint) {
                    self.src(o, Ty::U64, line)?;
                }
                let (dst, src) = (self.addr(&ops[0], line)?, self.addr(&ops[1], line)?);
                let size = self.src(&ops[2], Ty::U32, line)?;
                if load {
                    BulkInst::LinearLoad {
                        dst,
                        src,
                        size,
                        bar: BarAddr {
                            space: MemSpace::Shared,
                            addr: self.addr(&ops[3], line)?,
                        },
                    }
                } else {
                    BulkInst::LinearStore { dst, src, size }
                }
            }
            _ => return Err(bad()),
        };
        let copy = !matches!(t, BulkInst::Commit | BulkInst::Wait { .. });
        self.tma.push(TmaInst::Bulk(t));
        Ok(Op::Tma {
            idx: (self.tma.len() - 1) as u32,
            copy,
        })
    }
}

/// Lands the copies in flight on the mbarrier at `bar` if the phase can
/// complete with them: every arrival made and the tx-count equal to their
/// bytes. Then the phase completes.
pub(crate) fn land_for_wait(cx: &Ctx, cta: &mut CtaState, bar: u32) {
    let flying: u64 = cta
        .tma
        .copies
        .iter()
        .filter(|c| c.bar == bar)
        .map(|c| c.bytes)
        .sum();
    let Some(b) = cta.tma.bars.get_mut(&bar) else {
        return;
    };
    if flying == 0 || b.pending != 0 || b.tx != flying as i64 {
        return;
    }
    b.tx = 0;
    let phase = i64::from(b.phase);
    let epoch = cta.epoch;
    let mut i = 0;
    while i < cta.tma.copies.len() {
        if cta.tma.copies[i].bar != bar {
            i += 1;
            continue;
        }
        let c = cta.tma.copies.remove(i);
        cta.tma.landings.push(Landing {
            bar,
            phase,
            epoch,
            tid: c.tid,
            pc: c.pc,
        });
        let tag = cta.tma.landings.len() as u32;
        for (off, data) in &c.chunks {
            let o = *off as usize;
            cta.shared[o..o + 16].copy_from_slice(data);
            for b in o..o + 16 {
                cta.tma.inflight[b] = cta.tma.inflight[b].saturating_sub(1);
                cta.tma.landed[b] = tag;
                cta.tma.generic[b] = (0, 0, 0);
            }
            if cx.checks {
                cta.shadow.async_write(*off, 16);
            }
        }
    }
    complete_if_done(cta, bar);
}

fn racecheck(l: usize, off: u32, msg: String, cx: &Ctx) -> Fault {
    let mut f = Fault::new(CheckKind::Racecheck, msg).at(l, u64::from(off), Space::Shared);
    f.tensor = cx.region_name(Space::Shared, u64::from(off));
    f
}

/// The asynchronous proxy's checks of one generic shared access by lane
/// `l` of `w` (`(lane, offset, bytes, store)`): mbarrier objects, bulk
/// copies in flight or landed but not yet waited for, store sources still
/// being read; and a store is remembered for the proxy-fence check.
pub(crate) fn generic_guard(
    w: &Warp,
    (l, off, len, store): (usize, u32, u32, bool),
    pc: u32,
    cx: &Ctx,
    cta: &mut CtaState,
) -> Result<(), Fault> {
    if !cx.checks || !cta.tma.on {
        return Ok(());
    }
    let tid = w.first_tid + l as u32;
    let end = off + len;
    let t = &cta.tma;
    if let Some((&b, bar)) = t.bars.iter().find(|(&b, _)| b < end && off < b + 8) {
        let mut f = Fault::new(
            CheckKind::Synccheck,
            format!(
                "generic {} of shared memory that holds an initialized mbarrier",
                if store { "store" } else { "load" }
            ),
        )
        .at(l, u64::from(b), Space::Shared);
        f.tensor = cx.region_name(Space::Shared, u64::from(b));
        f.notes.push(format!(
            "it was initialized at {}; only mbarrier instructions may access it until mbarrier.inval",
            cx.where_is(bar.init_pc)
        ));
        return Err(f);
    }
    let range = off as usize..(end as usize).min(t.inflight.len());
    if let Some(b) = range.clone().find(|&b| t.inflight[b] != 0) {
        let c = t.copies.iter().find(|c| {
            c.chunks
                .iter()
                .any(|(o, _)| (*o..*o + 16).contains(&(b as u32)))
        });
        let mut f = racecheck(
            l,
            b as u32,
            format!(
                "{} of shared memory that a cp.async.bulk.tensor has not yet delivered",
                if store { "write" } else { "read" }
            ),
            cx,
        );
        if let Some(c) = c {
            let [x, y, z] = cx.thread_xyz(c.tid);
            f.notes.push(format!(
                "thread ({x}, {y}, {z}) issued the copy at {}; its bytes are defined once the mbarrier at shared offset {:#x} completes the phase and this thread's wait sees it",
                cx.where_is(c.pc),
                c.bar
            ));
        }
        return Err(f);
    }
    if let Some(r) = t
        .store_reads
        .iter()
        .find(|r| store && r.off < end && off < r.off + r.len)
    {
        let [x, y, z] = cx.thread_xyz(r.tid);
        let mut f = racecheck(
            l,
            off.max(r.off),
            "write of shared memory that a cp.async.bulk.tensor store may still be reading".into(),
            cx,
        );
        f.notes.push(format!(
            "thread ({x}, {y}, {z}) issued the store at {}; its source may be written again only after that thread's cp.async.bulk.wait_group.read (and a barrier, for other threads)",
            cx.where_is(r.pc)
        ));
        return Err(f);
    }
    let what = if store { "write" } else { "read" };
    unwaited_landing(cx, cta, (l, tid), range.clone(), what)?;
    if !store {
        note_readers(cta, tid, pc, range.clone());
    }
    if store {
        let fences = cta.tma.fences.get(tid as usize).copied().unwrap_or(0);
        for b in range {
            cta.tma.landed[b] = 0;
            cta.tma.generic[b] = (tid + 1, fences, pc);
            cta.tma.generic_epoch[b] = cta.epoch;
        }
    }
    Ok(())
}

/// Remembers that thread `tid` read the delivered stages in `range` (at
/// `pc`), and how far its arrivals had got, for the check of the next copy
/// into them ([`check_release`]).
fn note_readers(cta: &mut CtaState, tid: u32, pc: u32, range: std::ops::Range<usize>) {
    let arrivals = cta.tma.arrive_log.get(tid as usize).map_or(0, Vec::len);
    let mut last = 0;
    for b in range {
        let tag = cta.tma.landed[b];
        if tag != 0 && tag != last {
            last = tag;
            let rs = cta.tma.readers.entry(tag).or_default();
            rs.insert(tid, (arrivals, pc, cta.epoch));
        }
    }
}

/// The racecheck of a bulk copy by lane `l`, thread `issuer`, into bytes
/// (`chunks`) that an earlier copy delivered and other threads read in
/// this barrier interval: each reader must have released the stage since
/// its read, by an mbarrier arrive, and the issuer must have waited for
/// the phase that arrive completes. (A `bar.sync` since the read orders it
/// too; ordering through a chain of other barriers is not followed.)
fn check_release(
    cx: &Ctx,
    cta: &CtaState,
    (l, issuer): (usize, u32),
    chunks: &[(u32, [u8; 16])],
) -> Result<(), Fault> {
    let t = &cta.tma;
    let mut last = 0;
    for &(o, _) in chunks {
        let tag = t.landed[o as usize];
        if tag == 0 || tag == last {
            continue;
        }
        last = tag;
        let Some(rs) = t.readers.get(&tag) else {
            continue;
        };
        let mut rs: Vec<_> = rs.iter().collect();
        rs.sort();
        for (&reader, &(arrivals, pc, epoch)) in rs {
            if reader == issuer || epoch != cta.epoch {
                continue;
            }
            // Any of its arrivals since the read whose phase this thread
            // has waited for orders the read before the copy.
            let after = t.arrive_log[reader as usize].get(arrivals..).unwrap_or(&[]);
            let waited = |&(b, k): &(u32, i64)| t.seen.get(&(issuer, b)).is_some_and(|s| s.0 >= k);
            if after.iter().any(waited) {
                continue;
            }
            let [x, y, z] = cx.thread_xyz(reader);
            let why = match after.first() {
                None => "has not released it since: no mbarrier arrive (and no bar.sync) after the read".to_string(),
                Some((bar, phase)) => format!(
                    "released it by arriving in phase {phase} of the mbarrier at shared offset {bar:#x}, but this thread has not waited for that phase"
                ),
            };
            let mut f = racecheck(
                l,
                o,
                "a bulk copy overwrites a stage that another thread read and may still be reading"
                    .into(),
                cx,
            );
            f.notes.push(format!(
                "thread ({x}, {y}, {z}) read it at {} and {why}",
                cx.where_is(pc)
            ));
            return Err(f);
        }
    }
    Ok(())
}

/// The racecheck of `what` (an access of shared bytes `range` by lane `l`,
/// thread `tid`) on bytes a bulk copy delivered in an mbarrier phase that
/// this thread has not waited for, with no `bar.sync` since.
fn unwaited_landing(
    cx: &Ctx,
    cta: &CtaState,
    (l, tid): (usize, u32),
    range: std::ops::Range<usize>,
    what: &str,
) -> Result<(), Fault> {
    let t = &cta.tma;
    let mut checked = 0u32;
    for b in range {
        let tag = t.landed[b];
        if tag == 0 || tag == checked {
            continue;
        }
        checked = tag;
        let land = t.landings[tag as usize - 1];
        if land.bar == u32::MAX {
            // Its mbarrier has been invalidated since: a later init
            // starts phases anew, and the barrier that ended the old
            // object's use is what orders these bytes.
            continue;
        }
        let seen = t.seen.get(&(tid, land.bar)).map_or(-2, |s| s.0);
        if cta.epoch == land.epoch && seen < land.phase {
            let [x, y, z] = cx.thread_xyz(land.tid);
            let mut f = racecheck(
                l,
                b as u32,
                format!(
                    "{what} of shared memory that a bulk copy wrote, before this thread waited for the mbarrier phase that delivers it"
                ),
                cx,
            );
            f.notes.push(format!(
                "thread ({x}, {y}, {z}) issued the copy at {}; it completes phase {} of the mbarrier at shared offset {:#x}: wait on it (mbarrier.try_wait) before using the bytes",
                cx.where_is(land.pc),
                land.phase,
                land.bar
            ));
            return Err(f);
        }
    }
    Ok(())
}

/// The check of an async-proxy read of shared `[off, off + len)` by lane
/// `lane`, thread `tid` (a bulk store's source; wgmma's shared operands):
/// a generic-proxy write to those bytes must be followed by
/// `fence.proxy.async` before the read, in its writer, or in the reader
/// after a barrier that followed the write; no bulk copy may still be writing
/// them; and bytes a bulk copy delivered need this thread's wait on the
/// phase that delivered them (or a `bar.sync` since). The read counts as a
/// read of the stage for the next copy into it ([`check_release`]).
pub(crate) fn async_proxy_read(
    cx: &Ctx,
    cta: &mut CtaState,
    (lane, tid, pc): (usize, u32, u32),
    (off, len): (u32, u32),
    what: &str,
) -> Result<(), Fault> {
    if !cx.checks || !cta.tma.on {
        return Ok(());
    }
    let range = off as usize..((off + len) as usize).min(cta.tma.generic.len());
    note_readers(cta, tid, pc, range.clone());
    let t = &cta.tma;
    unwaited_landing(cx, cta, (lane, tid), range.clone(), &format!("{what} read"))?;
    for b in range {
        if t.inflight[b] != 0 {
            return Err(racecheck(
                lane,
                b as u32,
                format!(
                    "{what} reads shared memory that a cp.async.bulk.tensor has not yet delivered"
                ),
                cx,
            ));
        }
        let (w, fences, pc) = t.generic[b];
        // The reader's own fence after a barrier that followed the write
        // orders it too (Triton's pattern: wait, bar.sync, fence, wgmma).
        let reader_fenced = t
            .fence_epochs
            .get(tid as usize)
            .is_some_and(|&e| e > t.generic_epoch[b] + 1);
        if w != 0 && t.fences.get(w as usize - 1) == Some(&fences) && !reader_fenced {
            let [x, y, z] = cx.thread_xyz(w - 1);
            let mut f = racecheck(
                lane,
                b as u32,
                format!("{what} reads through the async proxy shared memory that a generic-proxy write left unfenced"),
                cx,
            );
            f.notes.push(format!(
                "thread ({x}, {y}, {z}) wrote it at {} and executed no fence.proxy.async since, nor did the reading thread after a barrier; the async proxy may read the old bytes",
                cx.where_is(pc)
            ));
            return Err(f);
        }
    }
    Ok(())
}

/// Lane `l`'s tensor map: the 128 bytes its generic address names, in the
/// kernel's parameters or in a global buffer.
fn tensor_map(w: &Warp, l: usize, map: Slot, cx: &Ctx) -> Result<TensorMap, Fault> {
    let a = w.regs[map as usize * 32 + l];
    let n = TENSOR_MAP_BYTES as u64;
    let bytes: Vec<u8> = match classify_generic(a) {
        Generic::Param(o) => {
            if o + n > cx.params.len() as u64 || !o.is_multiple_of(64) {
                return Err(Fault::new(
                    CheckKind::Memcheck,
                    format!("the tensor map operand (param offset {o:#x}) is not a 64-byte aligned 128-byte parameter"),
                )
                .at(l, o, Space::Param));
            }
            cx.params[o as usize..(o + n) as usize].to_vec()
        }
        Generic::Global(g) => {
            let (bi, bo) = cx.dev.locate(g, n as u32).map_err(|e| {
                cx.global_fault(e, g, n as u32, false)
                    .at(l, g, Space::Global)
            })?;
            let buf = &cx.dev.buffers[bi];
            (0..n).map(|i| buf.load(bo + i, 1) as u8).collect()
        }
        _ => {
            return Err(Fault::new(
                CheckKind::Memcheck,
                "the tensor map operand is not in param, const or global memory",
            )
            .at(l, a, Space::Shared))
        }
    };
    TensorMap::decode(&bytes).map_err(|e| {
        Fault::new(CheckKind::Memcheck, format!("bad tensor map operand: {e}")).at(
            l,
            a,
            Space::Global,
        )
    })
}

/// The box's elements in shared-memory order: for each, its coordinates
/// (`None` when outside the tensor) — calls `f(linear byte offset,
/// global address or None)`.
fn for_each_elem(m: &TensorMap, start: [i64; 5], mut f: impl FnMut(u32, Option<u64>)) {
    let r = m.rank as usize;
    let es = u64::from(m.data_type.size());
    let mut idx = [0u32; 5];
    let total: u64 = (0..r).map(|i| u64::from(m.box_dims[i])).product();
    for lin in 0..total {
        let mut inside = true;
        let mut addr = m.address;
        for i in 0..r {
            let c = start[i] + i64::from(idx[i]);
            if c < 0 || c as u64 >= m.dims[i] {
                inside = false;
            } else {
                let stride = if i == 0 { es } else { m.strides[i - 1] };
                addr = addr.wrapping_add(c as u64 * stride);
            }
        }
        f((lin * es) as u32, inside.then_some(addr));
        for (i, k) in idx.iter_mut().enumerate().take(r) {
            *k += 1;
            if *k < m.box_dims[i] {
                break;
            }
            *k = 0;
        }
    }
}

impl Warp {
    /// A shared offset for a bulk copy of `len` bytes: `align`-byte
    /// aligned (128 for a tensor copy, 16 for a plain one), in bounds.
    fn bulk_shared(
        &self,
        l: usize,
        a: Addr,
        (len, align): (u64, u64),
        what: &str,
        cx: &Ctx,
        cta: &CtaState,
    ) -> Result<u32, Fault> {
        let (sp, addr) = Self::resolve(MemSpace::Shared, address(&self.regs, a, l));
        if !addr.is_multiple_of(align) {
            return Err(cx.memcheck_at(misaligned(what, align as u32), l, addr, sp));
        }
        let limit = cta.shared.len() as u64;
        if addr + len > limit {
            return Err(cx.memcheck_at(shared_out_of_bounds(what, len as u32, limit), l, addr, sp));
        }
        Ok(addr as u32)
    }

    pub(crate) fn bulk_tensor(
        &mut self,
        b: &BulkInst,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        match b {
            BulkInst::Load {
                dst,
                map,
                coords,
                bar,
            } => {
                for l in lanes(active) {
                    let m = tensor_map(self, l, *map, cx)?;
                    self.check_rank(&m, coords.len(), l)?;
                    let bytes = m.box_bytes();
                    let off = self.bulk_shared(
                        l,
                        *dst,
                        (bytes, 128),
                        "cp.async.bulk.tensor shared write",
                        cx,
                        cta,
                    )?;
                    let boff = self.bar_offset(l, *bar, "cp.async.bulk.tensor", cx, cta)?;
                    let start = self.coords(coords, l);
                    let es = m.data_type.size();
                    let mut lin_bytes = vec![0u8; bytes as usize];
                    let mut fault = None;
                    let mut touched = None;
                    for_each_elem(&m, start, |lin, g| {
                        let (Some(g), None) = (g, &fault) else {
                            return;
                        };
                        match cx.dev.locate(g, es) {
                            Ok((bi, bo)) => {
                                let buf = &cx.dev.buffers[bi];
                                let v = buf.load(bo, es);
                                let o = lin as usize;
                                lin_bytes[o..o + es as usize]
                                    .copy_from_slice(&v.to_le_bytes()[..es as usize]);
                                touched = Some(bi);
                            }
                            Err(e) => {
                                fault =
                                    Some(cx.global_fault(e, g, es, false).at(l, g, Space::Global))
                            }
                        }
                    });
                    if let Some(f) = fault {
                        return Err(f);
                    }
                    let mut chunks = Vec::with_capacity(lin_bytes.len() / 16);
                    for (k, c) in lin_bytes.chunks_exact(16).enumerate() {
                        let o = swizzle(m.swizzle, off + 16 * k as u32);
                        chunks.push((o, c.try_into().unwrap_or([0; 16])));
                    }
                    let global = (m.address, touched);
                    self.start_copy(l, pc, (off, boff, bytes), chunks, global, cx, cta)?;
                }
            }
            BulkInst::Store { map, coords, src } => {
                for l in lanes(active) {
                    let m = tensor_map(self, l, *map, cx)?;
                    self.check_rank(&m, coords.len(), l)?;
                    let bytes = m.box_bytes();
                    let off = self.bulk_shared(
                        l,
                        *src,
                        (bytes, 128),
                        "cp.async.bulk.tensor shared read",
                        cx,
                        cta,
                    )?;
                    let tid = self.first_tid + l as u32;
                    async_proxy_read(
                        cx,
                        cta,
                        (l, tid, pc),
                        (off, bytes as u32),
                        "cp.async.bulk.tensor",
                    )?;
                    let limit = cta.shared.len() as u64;
                    let past = (0..bytes / 16)
                        .map(|k| swizzle(m.swizzle, off + 16 * k as u32))
                        .find(|&o| u64::from(o) + 16 > limit);
                    if let Some(o) = past {
                        return Err(cx.memcheck_at(
                            shared_out_of_bounds(
                                "bulk copy shared read (a swizzled 16-byte chunk)",
                                16,
                                limit,
                            ),
                            l,
                            u64::from(o),
                            Space::Shared,
                        ));
                    }
                    let start = self.coords(coords, l);
                    let es = m.data_type.size();
                    let mut fault = None;
                    let shared = &cta.shared;
                    let written = &mut cta.written;
                    for_each_elem(&m, start, |lin, g| {
                        let (Some(g), None) = (g, &fault) else {
                            return;
                        };
                        // Elements never straddle a 16-byte chunk.
                        let s = swizzle(m.swizzle, off + lin) as usize;
                        let mut v = [0u8; 8];
                        v[..es as usize].copy_from_slice(&shared[s..s + es as usize]);
                        match cx.dev.locate(g, es) {
                            Ok((bi, bo)) => {
                                cx.dev.buffers[bi].store(bo, es, u64::from_le_bytes(v));
                                written[bi] = true;
                            }
                            Err(e) => {
                                fault =
                                    Some(cx.global_fault(e, g, es, true).at(l, g, Space::Global))
                            }
                        }
                    });
                    if let Some(f) = fault {
                        return Err(f);
                    }
                    if cx.checks {
                        cta.tma.store_reads.push(StoreRead {
                            tid: self.first_tid + l as u32,
                            pc,
                            off,
                            len: bytes as u32,
                            group: None,
                        });
                    }
                }
            }
            BulkInst::LinearLoad {
                dst,
                src,
                size,
                bar,
            } => {
                for l in lanes(active) {
                    let n = self.bulk_size(*size, l)?;
                    let off =
                        self.bulk_shared(l, *dst, (n, 16), "cp.async.bulk shared write", cx, cta)?;
                    let boff = self.bar_offset(l, *bar, "cp.async.bulk", cx, cta)?;
                    let (g, bi, bo) = self.bulk_global(l, *src, n, false, cx)?;
                    let buf = &cx.dev.buffers[bi];
                    let chunks = (0..n / 16)
                        .map(|k| {
                            let mut c = [0u8; 16];
                            for (i, b) in c.iter_mut().enumerate() {
                                *b = buf.load(bo + 16 * k + i as u64, 1) as u8;
                            }
                            (off + 16 * k as u32, c)
                        })
                        .collect();
                    self.start_copy(l, pc, (off, boff, n), chunks, (g, Some(bi)), cx, cta)?;
                }
            }
            BulkInst::LinearStore { dst, src, size } => {
                for l in lanes(active) {
                    let n = self.bulk_size(*size, l)?;
                    let off =
                        self.bulk_shared(l, *src, (n, 16), "cp.async.bulk shared read", cx, cta)?;
                    let tid = self.first_tid + l as u32;
                    async_proxy_read(cx, cta, (l, tid, pc), (off, n as u32), "cp.async.bulk")?;
                    let (_, bi, bo) = self.bulk_global(l, *dst, n, true, cx)?;
                    let buf = &cx.dev.buffers[bi];
                    for i in 0..n {
                        buf.store(
                            bo + i,
                            1,
                            u64::from(cta.shared[(u64::from(off) + i) as usize]),
                        );
                    }
                    cta.written[bi] = true;
                    if cx.checks {
                        cta.tma.store_reads.push(StoreRead {
                            tid: self.first_tid + l as u32,
                            pc,
                            off,
                            len: n as u32,
                            group: None,
                        });
                    }
                }
            }
            BulkInst::Commit => {
                for l in lanes(active) {
                    let tid = self.first_tid + l as u32;
                    let g = cta.tma.bulk_groups.entry(tid).or_insert(0);
                    *g += 1;
                    let g = *g;
                    for r in cta
                        .tma
                        .store_reads
                        .iter_mut()
                        .filter(|r| r.tid == tid && r.group.is_none())
                    {
                        r.group = Some(g);
                    }
                }
            }
            BulkInst::Wait { keep } => {
                for l in lanes(active) {
                    let tid = self.first_tid + l as u32;
                    let last = cta.tma.bulk_groups.get(&tid).copied().unwrap_or(0);
                    cta.tma
                        .store_reads
                        .retain(|r| !(r.tid == tid && r.group.is_some_and(|g| g + keep <= last)));
                }
            }
        }
        Ok(())
    }

    /// The global side of a plain bulk copy by lane `l`: the address in
    /// `addr`, 16-byte aligned, and the buffer and offset its `n` bytes
    /// lie in (`store`: written).
    fn bulk_global(
        &self,
        l: usize,
        addr: Addr,
        n: u64,
        store: bool,
        cx: &Ctx,
    ) -> Result<(u64, usize, u64), Fault> {
        let g = address(&self.regs, addr, l);
        if !g.is_multiple_of(16) {
            let what = if store {
                "cp.async.bulk global write"
            } else {
                "cp.async.bulk global read"
            };
            return Err(cx.memcheck_at(misaligned(what, 16), l, g, Space::Global));
        }
        let (bi, bo) = cx.dev.locate(g, n as u32).map_err(|e| {
            cx.global_fault(e, g, n as u32, store)
                .at(l, g, Space::Global)
        })?;
        Ok((g, bi, bo))
    }

    /// Puts a load of `chunks` (16-byte pieces at their shared offsets) in
    /// flight on the mbarrier at `boff`: `(dst, boff, bytes)`, and the global
    /// address and buffer it read, for the observer.
    #[allow(clippy::too_many_arguments)]
    fn start_copy(
        &self,
        l: usize,
        pc: u32,
        (off, boff, bytes): (u32, u32, u64),
        chunks: Vec<(u32, [u8; 16])>,
        (gaddr, buffer): (u64, Option<usize>),
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        if !cta.tma.bars.contains_key(&boff) {
            return Err(Fault::new(
                CheckKind::Synccheck,
                "the bulk copy completes on shared memory that holds no initialized mbarrier",
            )
            .at(l, u64::from(boff), Space::Shared));
        }
        // The swizzle moves a chunk within its 128-byte row, which may
        // reach past a box that ends inside a row.
        let limit = cta.shared.len() as u64;
        if let Some((o, _)) = chunks.iter().find(|(o, _)| u64::from(*o) + 16 > limit) {
            return Err(cx.memcheck_at(
                shared_out_of_bounds(
                    "bulk copy shared write (a swizzled 16-byte chunk)",
                    16,
                    limit,
                ),
                l,
                u64::from(*o),
                Space::Shared,
            ));
        }
        if cx.checks {
            for (o, _) in &chunks {
                // A wgmma still reading these bytes (before its
                // wait_group) must not see them change.
                crate::wgmma::in_flight_write(l, *o, 16, cx, cta)?;
            }
        }
        if cx.checks {
            for (o, _) in &chunks {
                let r = *o as usize..*o as usize + 16;
                if let Some(b) = r.clone().find(|&b| cta.tma.inflight[b] != 0) {
                    return Err(racecheck(
                        l,
                        b as u32,
                        "a bulk copy writes shared memory that another bulk copy in flight also writes".into(),
                        cx,
                    ));
                }
            }
        }
        if cx.checks {
            check_release(cx, cta, (l, self.first_tid + l as u32), &chunks)?;
            // The stage's readers are checked; the next copy into it
            // answers to this copy's readers (keeps the records per CTA
            // to the stages in use).
            for (o, _) in &chunks {
                let tag = cta.tma.landed[*o as usize];
                if tag != 0 {
                    cta.tma.readers.remove(&tag);
                }
            }
        }
        for (o, _) in &chunks {
            for b in *o as usize..*o as usize + 16 {
                cta.tma.inflight[b] += 1;
            }
        }
        cta.tma.copies.push(BulkCopy {
            tid: self.first_tid + l as u32,
            pc,
            bar: boff,
            bytes,
            chunks,
        });
        cta.tma.events += 1;
        if cta.observing {
            let thread = self.first_tid + l as u32;
            cta.accesses.push(Access {
                thread,
                space: Space::Global,
                kind: AccessKind::Load,
                addr: gaddr,
                bytes: bytes as u32,
                buffer,
            });
            cta.accesses.push(Access {
                thread,
                space: Space::Shared,
                kind: AccessKind::Store,
                addr: u64::from(off),
                bytes: bytes as u32,
                buffer: None,
            });
        }
        Ok(())
    }

    /// A plain bulk copy's byte count: a positive multiple of 16.
    fn bulk_size(&self, size: Slot, l: usize) -> Result<u64, Fault> {
        let n = self.regs[size as usize * 32 + l] & 0xFFFF_FFFF;
        if n == 0 || !n.is_multiple_of(16) {
            return Err(Fault::new(
                CheckKind::Memcheck,
                format!("cp.async.bulk of {n} bytes: the size must be a positive multiple of 16"),
            )
            .at(l, 0, Space::Shared));
        }
        Ok(n)
    }

    fn check_rank(&self, m: &TensorMap, n: usize, l: usize) -> Result<(), Fault> {
        if m.rank as usize != n {
            return Err(Fault::new(
                CheckKind::Memcheck,
                format!("a {n}d tensor copy through a tensor map of rank {}", m.rank),
            )
            .at(l, 0, Space::Global));
        }
        if m.element_strides[..n].iter().any(|&e| e != 1) {
            return Err(Fault::new(
                CheckKind::Memcheck,
                "the simulator copies tensor maps with element strides of 1 only",
            )
            .at(l, 0, Space::Global));
        }
        Ok(())
    }

    fn coords(&self, coords: &[Slot], l: usize) -> [i64; 5] {
        let mut c = [0i64; 5];
        for (i, &s) in coords.iter().enumerate() {
            c[i] = i64::from(self.regs[s as usize * 32 + l] as u32 as i32);
        }
        c
    }
}
