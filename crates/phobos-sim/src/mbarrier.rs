//! `mbarrier` objects in shared memory, as the PTX ISA (8.x, "Parallel
//! Synchronization and Communication Instructions: mbarrier") defines them,
//! and the CTA state that the asynchronous proxy (`bulk`) shares with them.
//!
//! **Objects.** An mbarrier is an 8-byte object in shared memory. The
//! simulator keeps its state beside the shared bytes (keyed by offset):
//! the current phase (counted from 0: its parity is the low bit), the
//! expected and pending arrival counts, and the transaction count
//! (tx-count). `mbarrier.init` sets pending = expected = count and
//! tx-count 0; `arrive` (with `count`, default 1) lowers pending;
//! `expect_tx` raises tx-count, `complete_tx` (and a bulk copy's landing)
//! lowers it; when both are zero the phase completes: the phase advances
//! and pending is reset to expected (`arrive_drop` lowers expected too).
//!
//! **Waits.** `test_wait`/`try_wait` with a `state` (what `arrive`
//! returned: the phase it arrived in) succeed once that phase completed;
//! with `.parity p` they succeed unless the current, incomplete phase has
//! parity `p` (so on a fresh barrier, parity 1 succeeds at once: the
//! "preceding phase" convention that producers rely on). A wait that fails
//! writes false and *yields* its lanes: they stop until some mbarrier
//! changes state, so a spin loop does not spin one warp forever while the
//! warp that would complete the phase never runs. When every live thread is
//! blocked (yielded at a wait, at `bar.sync`, at a warp sync), no mbarrier
//! changed since the yielded lanes last ran and each yielded at the same
//! instruction as then, the launch fails with a deadlock report that names each wait, its phase, and the
//! barrier's arrivals and tx-count.
//!
//! **Checks** (synccheck): an mbarrier instruction on bytes where no
//! mbarrier was initialized (or after `mbarrier.inval`), or by another
//! thread before a barrier orders the `mbarrier.init`; a second
//! `mbarrier.init` of a live object; an arrive count above the pending
//! arrivals; a generic load or store of an initialized mbarrier's 8 bytes;
//! and a *stale parity*: a `.parity` wait that succeeds on a phase this
//! thread already saw complete (the parity was not flipped, so the wait
//! returns at once instead of waiting for the next phase).

use crate::checks::{misaligned, shared_out_of_bounds, Fault};
use crate::decode::{has, unsupported, Addr, Decoder, MemSpace, Op, PredId, Slot, Ty};
use crate::error::{CheckKind, SimError};
use crate::exec::address;
use crate::launch::{CtaState, Ctx};
use crate::observer::Space;
use crate::parse::{RawInst, RawOperand};
use crate::warp::{lanes, Warp};
use std::collections::HashMap;

/// The largest arrival count and tx-count magnitude (2^20 - 1).
const MAX_COUNT: u64 = (1 << 20) - 1;

/// Marks a 64-bit `state` value that `mbarrier.arrive` returned.
const STATE_MARK: u64 = 0x5000_0000_0000_0000;

/// What an mbarrier operand names: `[addr]` in `space`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BarAddr {
    pub space: MemSpace,
    pub addr: Addr,
}

/// One decoded mbarrier, bulk-copy or proxy-fence instruction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TmaInst {
    Init {
        bar: BarAddr,
        count: Slot,
    },
    Inval {
        bar: BarAddr,
    },
    /// `arrive{.expect_tx}{.noComplete}` and `arrive_drop{...}`: `d` gets
    /// the state; `tx` is the expect-tx count; `no_complete` arrivals must
    /// not complete the phase.
    Arrive {
        d: Slot,
        bar: BarAddr,
        count: Option<Slot>,
        tx: Option<Slot>,
        drop: bool,
        no_complete: bool,
    },
    /// `expect_tx` (`sign` 1) or `complete_tx` (`sign` -1).
    Tx {
        bar: BarAddr,
        tx: Slot,
        sign: i64,
    },
    /// `test_wait`/`try_wait{.parity}`: `p` is true once the phase completed.
    Wait {
        p: PredId,
        bar: BarAddr,
        arg: Slot,
        parity: bool,
    },
    /// `pending_count.b64 d, state`.
    PendingCount {
        d: Slot,
        state: Slot,
    },
    /// `cp.async.bulk.tensor...` (see `bulk`).
    Bulk(crate::bulk::BulkInst),
    /// `fence.proxy.async{.space}`.
    FenceProxyAsync,
}

impl TmaInst {
    /// Calls `f(slot, written)` for every register the instruction reads
    /// or writes (addresses' base registers included), for the wgmma
    /// checks of registers in flight.
    pub(crate) fn slots(&self, f: &mut dyn FnMut(Slot, bool)) {
        let base = |a: &Addr, f: &mut dyn FnMut(Slot, bool)| {
            if let Some(b) = a.base {
                f(b, false);
            }
        };
        match self {
            TmaInst::Init { bar, count } => {
                base(&bar.addr, f);
                f(*count, false);
            }
            TmaInst::Inval { bar } => base(&bar.addr, f),
            TmaInst::Arrive {
                d, bar, count, tx, ..
            } => {
                base(&bar.addr, f);
                count.iter().chain(tx).for_each(|&s| f(s, false));
                f(*d, true);
            }
            TmaInst::Tx { bar, tx, .. } => {
                base(&bar.addr, f);
                f(*tx, false);
            }
            TmaInst::Wait { bar, arg, .. } => {
                base(&bar.addr, f);
                f(*arg, false);
            }
            TmaInst::PendingCount { d, state } => {
                f(*state, false);
                f(*d, true);
            }
            TmaInst::Bulk(b) => b.slots(&mut |s, w| f(s, w)),
            TmaInst::FenceProxyAsync => {}
        }
    }
}

/// One mbarrier object.
#[derive(Clone, Debug)]
pub(crate) struct Mbar {
    /// Phases completed so far: the current phase's number.
    pub phase: u32,
    pub expected: u32,
    pub pending: u32,
    pub tx: i64,
    /// Where and by whom it was initialized, in which barrier epoch.
    pub init_pc: u32,
    pub init_tid: u32,
    pub init_epoch: u32,
}

/// A thread's failed wait, for the deadlock report.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Waiting {
    pub pc: u32,
    pub bar: u32,
    /// The phase waited for.
    pub phase: i64,
}

/// A CTA's mbarriers and asynchronous-proxy state.
#[derive(Default)]
pub(crate) struct TmaState {
    /// The entry has mbarrier, bulk-copy or proxy-fence instructions: the
    /// shared-access hook in `bulk` looks at this state at all.
    pub on: bool,
    /// Live mbarriers by shared offset.
    pub bars: HashMap<u32, Mbar>,
    /// Per (thread, barrier): the last phase a wait of that thread saw
    /// complete, and the wait's instruction.
    pub seen: HashMap<(u32, u32), (i64, u32)>,
    /// Per thread: its failed wait, while it waits.
    pub waits: HashMap<u32, Waiting>,
    /// Counts mbarrier state changes; `woken` is its value when yielded
    /// lanes were last woken, and `woken_at` where each yielded lane
    /// (thread, PC) stood then.
    pub events: u64,
    pub woken: u64,
    pub woken_at: Vec<(u32, u32)>,
    /// Bulk copies in flight and what has landed (see `bulk`).
    pub copies: Vec<crate::bulk::BulkCopy>,
    /// Copies in flight per shared byte.
    pub inflight: Vec<u16>,
    /// Per shared byte: 1 + index in `landings` of the copy that wrote it,
    /// 0 if none did since a generic write.
    pub landed: Vec<u32>,
    pub landings: Vec<crate::bulk::Landing>,
    /// Per shared byte: the last generic write (thread + 1, the thread's
    /// proxy-fence count then, instruction), for the proxy-fence check.
    pub generic: Vec<(u32, u32, u32)>,
    /// Per thread: `fence.proxy.async` instructions executed.
    pub fences: Vec<u32>,
    /// Per thread: 1 + the CTA barrier epoch of its last
    /// `fence.proxy.async` (0: none yet). A reader's own fence after a
    /// barrier that followed a generic write orders that write before the
    /// reader's async-proxy reads too (the pattern Triton emits: wait,
    /// `bar.sync`, `fence.proxy.async`, `wgmma`).
    pub fence_epochs: Vec<u32>,
    /// Per shared byte: the CTA barrier epoch of its last generic write.
    pub generic_epoch: Vec<u32>,
    /// Bulk stores whose source bytes may still be read, and each thread's
    /// committed bulk groups.
    pub store_reads: Vec<crate::bulk::StoreRead>,
    pub bulk_groups: HashMap<u32, u32>,
    /// Per thread: its arrivals in order, (mbarrier, phase arrived in).
    pub arrive_log: Vec<Vec<(u32, i64)>>,
    /// Per landing (its tag in `landed`): the threads that read its bytes,
    /// each with how many arrivals it had made then, the read's
    /// instruction and barrier epoch (see `bulk::check_release`).
    pub readers: HashMap<u32, HashMap<u32, (usize, u32, u32)>>,
}

impl TmaState {
    pub(crate) fn reset(&mut self, on: bool, shared: usize, threads: u32) {
        self.on = on;
        self.bars.clear();
        self.seen.clear();
        self.waits.clear();
        self.events = 0;
        self.woken = 0;
        self.woken_at.clear();
        self.copies.clear();
        self.landings.clear();
        self.inflight.clear();
        self.landed.clear();
        self.generic.clear();
        self.fences.clear();
        self.fence_epochs.clear();
        self.generic_epoch.clear();
        self.store_reads.clear();
        self.bulk_groups.clear();
        self.arrive_log.iter_mut().for_each(Vec::clear);
        self.readers.clear();
        if on {
            self.inflight.resize(shared, 0);
            self.landed.resize(shared, 0);
            self.generic.resize(shared, (0, 0, 0));
            self.fences.resize(threads as usize, 0);
            self.fence_epochs.resize(threads as usize, 0);
            self.generic_epoch.resize(shared, 0);
            self.arrive_log.resize(threads as usize, Vec::new());
        }
    }
}

/// Encodes the `state` that `arrive` returns: the phase it arrived in.
fn state_of(phase: u32, pending: u32) -> u64 {
    STATE_MARK | (u64::from(pending) << 32) | u64::from(phase)
}

impl Decoder {
    fn bar_addr(
        &mut self,
        o: &RawOperand,
        mods: &[&str],
        line: usize,
    ) -> Result<BarAddr, SimError> {
        let space = if has(mods, "shared") || has(mods, "shared::cluster") {
            MemSpace::Shared
        } else {
            MemSpace::Generic
        };
        Ok(BarAddr {
            space,
            addr: self.addr(o, line)?,
        })
    }

    fn push_tma(&mut self, t: TmaInst) -> Op {
        self.tma.push(t);
        Op::Tma {
            idx: (self.tma.len() - 1) as u32,
            copy: false,
        }
    }

    /// `fence.proxy.async{.shared::cta,.shared::cluster,.global}`.
    pub(crate) fn fence_proxy(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        match mods {
            ["proxy", "async"] | ["proxy", "async", "shared" | "shared::cluster" | "global"] => {
                self.want(&i.operands, 0, i)?;
                Ok(self.push_tma(TmaInst::FenceProxyAsync))
            }
            // Other proxy fences order proxies the simulator does not model
            // apart (the generic proxy's own aliases, tensormap updates).
            ["proxy", "alias"] => Ok(Op::Nop),
            _ => Err(unsupported(&i.opcode, i.line)),
        }
    }

    /// `elect.sync d|p, membermask`.
    pub(crate) fn elect(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        if mods != ["sync"] {
            return Err(unsupported(&i.opcode, i.line));
        }
        self.want(&i.operands, 2, i)?;
        let RawOperand::Pair(d, p) = &i.operands[0] else {
            return Err(SimError::parse(i.line, "elect.sync writes `d|p`"));
        };
        Ok(Op::Elect {
            d: self.dst_name(d, i.line)?,
            p: self.pred(p, i.line)?,
            mask: self.src(&i.operands[1], Ty::B32, i.line)?,
        })
    }

    /// Every `mbarrier` form of the PTX ISA 8.x that a CTA uses on its own
    /// shared memory.
    pub(crate) fn mbarrier(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let bad = || unsupported(&i.opcode, line);
        let Some((&verb, rest)) = mods.split_first() else {
            return Err(bad());
        };
        // Modifiers that only order memory or name the scope: the
        // simulator's orders are already sequentially consistent.
        let mut parity = false;
        let mut expect_tx = false;
        let mut no_complete = false;
        let mut b64 = false;
        for m in rest {
            match *m {
                "b64" => b64 = true,
                "shared" | "shared::cluster" | "release" | "acquire" | "relaxed" | "cta"
                | "cluster" => {}
                "parity" if matches!(verb, "test_wait" | "try_wait") => parity = true,
                "expect_tx" if matches!(verb, "arrive" | "arrive_drop") => expect_tx = true,
                "noComplete" if matches!(verb, "arrive" | "arrive_drop") => no_complete = true,
                _ => return Err(bad()),
            }
        }
        if !b64 {
            return Err(bad());
        }
        // `.shared::cluster` names the CTA's own shared memory in a launch
        // without clusters; the ISA allows it on the arrive and tx forms.
        let cluster_ok = matches!(verb, "arrive" | "arrive_drop" | "expect_tx" | "complete_tx");
        if has(rest, "shared::cluster") && !cluster_ok {
            return Err(bad());
        }
        let t = match verb {
            "init" => {
                self.want(ops, 2, i)?;
                TmaInst::Init {
                    bar: self.bar_addr(&ops[0], rest, line)?,
                    count: self.src(&ops[1], Ty::U32, line)?,
                }
            }
            "inval" => {
                self.want(ops, 1, i)?;
                TmaInst::Inval {
                    bar: self.bar_addr(&ops[0], rest, line)?,
                }
            }
            "arrive" | "arrive_drop" => {
                if !(2..=3).contains(&ops.len()) {
                    return Err(SimError::parse(
                        line,
                        format!("`{}` takes 2 or 3 operands, found {}", i.opcode, ops.len()),
                    ));
                }
                let extra = match ops.get(2) {
                    Some(o) => Some(self.src(o, Ty::U32, line)?),
                    None => None,
                };
                if expect_tx && extra.is_none() {
                    return Err(SimError::parse(line, "arrive.expect_tx needs a txCount"));
                }
                let (count, tx) = if expect_tx {
                    (None, extra)
                } else {
                    (extra, None)
                };
                if no_complete && (expect_tx || count.is_none()) {
                    return Err(SimError::parse(
                        line,
                        "mbarrier.arrive.noComplete takes a count (and no expect_tx)",
                    ));
                }
                TmaInst::Arrive {
                    d: self.dst(&ops[0], line)?,
                    bar: self.bar_addr(&ops[1], rest, line)?,
                    count,
                    tx,
                    drop: verb == "arrive_drop",
                    no_complete,
                }
            }
            "expect_tx" | "complete_tx" => {
                self.want(ops, 2, i)?;
                TmaInst::Tx {
                    bar: self.bar_addr(&ops[0], rest, line)?,
                    tx: self.src(&ops[1], Ty::U32, line)?,
                    sign: if verb == "expect_tx" { 1 } else { -1 },
                }
            }
            "test_wait" | "try_wait" => {
                // try_wait may take a suspendTimeHint; the simulator
                // suspends a failed wait until some mbarrier changes.
                let n = if verb == "try_wait" { 3..=4 } else { 3..=3 };
                if !n.contains(&ops.len()) {
                    return Err(SimError::parse(
                        line,
                        format!("`{}` takes {n:?} operands, found {}", i.opcode, ops.len()),
                    ));
                }
                let RawOperand::Word {
                    text,
                    negated: false,
                } = &ops[0]
                else {
                    return Err(SimError::parse(line, "expected a predicate destination"));
                };
                if let Some(o) = ops.get(3) {
                    self.src(o, Ty::U32, line)?;
                }
                TmaInst::Wait {
                    p: self.pred(text, line)?,
                    bar: self.bar_addr(&ops[1], rest, line)?,
                    arg: self.src(&ops[2], if parity { Ty::U32 } else { Ty::B64 }, line)?,
                    parity,
                }
            }
            "pending_count" => {
                self.want(ops, 2, i)?;
                TmaInst::PendingCount {
                    d: self.dst(&ops[0], line)?,
                    state: self.src(&ops[1], Ty::B64, line)?,
                }
            }
            _ => return Err(bad()),
        };
        Ok(self.push_tma(t))
    }
}

impl Warp {
    /// Lane `l`'s mbarrier: its shared offset, checked for space,
    /// alignment and bounds.
    pub(crate) fn bar_offset(
        &self,
        l: usize,
        bar: BarAddr,
        what: &str,
        cx: &Ctx,
        cta: &CtaState,
    ) -> Result<u32, Fault> {
        let (sp, addr) = Self::resolve(bar.space, address(&self.regs, bar.addr, l));
        if sp != Space::Shared {
            return Err(Fault::new(
                CheckKind::Memcheck,
                format!("{what}: the mbarrier address is not in shared memory"),
            )
            .at(l, addr, sp));
        }
        if !addr.is_multiple_of(8) {
            return Err(cx.memcheck_at(misaligned(what, 8), l, addr, sp));
        }
        let limit = cta.shared.len() as u64;
        if addr + 8 > limit {
            return Err(cx.memcheck_at(shared_out_of_bounds(what, 8, limit), l, addr, sp));
        }
        Ok(addr as u32)
    }

    /// The live mbarrier at `off` for lane `l`, or the synccheck report of
    /// its use before `mbarrier.init` (or before a barrier orders the init).
    fn live_bar<'a>(
        &self,
        l: usize,
        off: u32,
        what: &str,
        cx: &Ctx,
        cta: &'a mut CtaState,
    ) -> Result<&'a mut Mbar, Fault> {
        let tid = self.first_tid + l as u32;
        let epoch = cta.epoch;
        let name = cx.region_name(Space::Shared, u64::from(off));
        match cta.tma.bars.get_mut(&off) {
            None => {
                let mut f = Fault::new(
                    CheckKind::Synccheck,
                    format!("{what} on shared memory that holds no initialized mbarrier"),
                )
                .at(l, u64::from(off), Space::Shared);
                f.tensor = name;
                f.notes.push(
                    "mbarrier.init must initialize the object first (and mbarrier.inval ends it)"
                        .into(),
                );
                Err(f)
            }
            Some(b) if cx.checks && b.init_tid != tid && b.init_epoch == epoch => {
                let [x, y, z] = cx.thread_xyz(b.init_tid);
                let mut f = Fault::new(
                    CheckKind::Synccheck,
                    format!(
                        "{what} on an mbarrier whose initialization no barrier orders before it"
                    ),
                )
                .at(l, u64::from(off), Space::Shared);
                f.tensor = name;
                f.notes.push(format!(
                    "thread ({x}, {y}, {z}) initialized it at {} in this barrier interval; a bar.sync (after fence.mbarrier_init) must lie between",
                    cx.where_is(b.init_pc)
                ));
                Err(f)
            }
            Some(b) => Ok(b),
        }
    }

    /// Executes the mbarrier, bulk-copy or proxy-fence instruction
    /// `Entry::tma[idx]` for the lanes in `active`.
    pub(crate) fn tma(
        &mut self,
        idx: u32,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let Some(inst) = cx.entry.tma.get(idx as usize) else {
            return Ok(());
        };
        match inst {
            TmaInst::Init { bar, count } => {
                for l in lanes(active) {
                    let off = self.bar_offset(l, *bar, "mbarrier.init", cx, cta)?;
                    let n = self.regs[*count as usize * 32 + l] & 0xFFFF_FFFF;
                    if n == 0 || n > MAX_COUNT {
                        return Err(Fault::new(
                            CheckKind::Synccheck,
                            format!(
                                "mbarrier.init with count {n}; the count must be 1 to 2^20 - 1"
                            ),
                        )
                        .at(l, u64::from(off), Space::Shared));
                    }
                    if let Some(b) = cta.tma.bars.get(&off).filter(|_| cx.checks) {
                        let mut f = Fault::new(
                            CheckKind::Synccheck,
                            "mbarrier.init of an mbarrier that is already initialized",
                        )
                        .at(l, u64::from(off), Space::Shared);
                        f.notes.push(format!(
                            "it was initialized at {}; mbarrier.inval must end it before it is initialized again",
                            cx.where_is(b.init_pc)
                        ));
                        return Err(f);
                    }
                    if cx.checks {
                        crate::bulk::generic_guard(self, (l, off, 8, true), pc, cx, cta)?;
                    }
                    forget(cta, off);
                    cta.tma.bars.insert(
                        off,
                        Mbar {
                            phase: 0,
                            expected: n as u32,
                            pending: n as u32,
                            tx: 0,
                            init_pc: pc,
                            init_tid: self.first_tid + l as u32,
                            init_epoch: cta.epoch,
                        },
                    );
                    cta.tma.events += 1;
                }
            }
            TmaInst::Inval { bar } => {
                for l in lanes(active) {
                    let off = self.bar_offset(l, *bar, "mbarrier.inval", cx, cta)?;
                    self.live_bar(l, off, "mbarrier.inval", cx, cta)?;
                    cta.tma.bars.remove(&off);
                    forget(cta, off);
                    cta.tma.events += 1;
                }
            }
            TmaInst::Arrive {
                d,
                bar,
                count,
                tx,
                drop,
                no_complete,
            } => {
                let what = if *drop {
                    "mbarrier.arrive_drop"
                } else {
                    "mbarrier.arrive"
                };
                for l in lanes(active) {
                    let off = self.bar_offset(l, *bar, what, cx, cta)?;
                    let n = count.map_or(1, |s| self.regs[s as usize * 32 + l] & 0xFFFF_FFFF);
                    let t = tx.map(|s| self.regs[s as usize * 32 + l] & 0xFFFF_FFFF);
                    let b = self.live_bar(l, off, what, cx, cta)?;
                    if n == 0 || n > MAX_COUNT {
                        return Err(Fault::new(
                            CheckKind::Synccheck,
                            format!("{what} with count {n}; the count must be 1 to 2^20 - 1"),
                        )
                        .at(l, u64::from(off), Space::Shared));
                    }
                    if n > u64::from(b.pending) {
                        return Err(Fault::new(
                            CheckKind::Synccheck,
                            format!(
                                "{what} counts {n} arrivals, but only {} of the mbarrier's {} are pending in phase {}",
                                b.pending, b.expected, b.phase
                            ),
                        )
                        .at(l, u64::from(off), Space::Shared));
                    }
                    if let Some(t) = t {
                        add_tx(b, t as i64).map_err(|m| {
                            Fault::new(CheckKind::Synccheck, m).at(l, u64::from(off), Space::Shared)
                        })?;
                    }
                    if *no_complete && u64::from(b.pending) == n && b.tx == 0 {
                        return Err(Fault::new(
                            CheckKind::Synccheck,
                            format!(
                                "{what}.noComplete makes the last {n} arrivals of phase {}, completing it (the ISA leaves that undefined)",
                                b.phase
                            ),
                        )
                        .at(l, u64::from(off), Space::Shared));
                    }
                    let state = state_of(b.phase, b.pending - n as u32);
                    let phase = i64::from(b.phase);
                    b.pending -= n as u32;
                    if *drop {
                        b.expected -= n as u32;
                    }
                    self.regs[*d as usize * 32 + l] = state;
                    let tid = (self.first_tid + l as u32) as usize;
                    if let Some(log) = cta.tma.arrive_log.get_mut(tid) {
                        log.push((off, phase));
                    }
                    cta.tma.events += 1;
                    complete_if_done(cta, off);
                }
            }
            TmaInst::Tx { bar, tx, sign } => {
                let what = if *sign > 0 {
                    "mbarrier.expect_tx"
                } else {
                    "mbarrier.complete_tx"
                };
                for l in lanes(active) {
                    let off = self.bar_offset(l, *bar, what, cx, cta)?;
                    let t = (self.regs[*tx as usize * 32 + l] & 0xFFFF_FFFF) as i64;
                    let b = self.live_bar(l, off, what, cx, cta)?;
                    add_tx(b, sign * t).map_err(|m| {
                        Fault::new(CheckKind::Synccheck, m).at(l, u64::from(off), Space::Shared)
                    })?;
                    cta.tma.events += 1;
                    complete_if_done(cta, off);
                }
            }
            TmaInst::Wait {
                p,
                bar,
                arg,
                parity,
            } => {
                let opcode = &cx.entry.info[pc as usize].opcode;
                let what = opcode.split('.').take(2).collect::<Vec<_>>().join(".");
                let mut done = 0u32;
                for l in lanes(active) {
                    let off = self.bar_offset(l, *bar, &what, cx, cta)?;
                    self.live_bar(l, off, &what, cx, cta)?;
                    let v = self.regs[*arg as usize * 32 + l];
                    if !*parity && v & STATE_MARK != STATE_MARK {
                        return Err(Fault::new(
                            CheckKind::Synccheck,
                            format!("{what} with a state operand {v:#x} that no mbarrier.arrive returned"),
                        )
                        .at(l, u64::from(off), Space::Shared));
                    }
                    let mut status = wait_status(&cta.tma.bars[&off], v, *parity);
                    if !status.0 {
                        // Copies in flight land as late as possible: when a
                        // wait would otherwise fail for want of them.
                        crate::bulk::land_for_wait(cx, cta, off);
                        status = wait_status(&cta.tma.bars[&off], v, *parity);
                    }
                    let (complete, phase) = status;
                    let b = &cta.tma.bars[&off];
                    let tid = self.first_tid + l as u32;
                    if !complete {
                        cta.tma.waits.insert(
                            tid,
                            Waiting {
                                pc,
                                bar: off,
                                phase,
                            },
                        );
                        continue;
                    }
                    cta.tma.waits.remove(&tid);
                    done |= 1 << l;
                    let prev = cta.tma.seen.insert((tid, off), (phase, pc));
                    if let (true, true, Some((seen, seen_pc))) = (cx.checks, *parity, prev) {
                        if seen == phase {
                            let mut f = Fault::new(
                                CheckKind::Synccheck,
                                format!(
                                    "{what} on parity {} succeeds on a phase this thread already saw complete: the wait returns at once instead of waiting for the next phase",
                                    v & 1
                                ),
                            )
                            .at(l, u64::from(off), Space::Shared);
                            f.tensor = cx.region_name(Space::Shared, u64::from(off));
                            f.notes.push(format!(
                                "this thread's wait at {} already saw phase {} complete; the mbarrier is now in phase {} (parity {}): flip the parity after each completed phase",
                                cx.where_is(seen_pc),
                                phase.max(0),
                                b.phase,
                                b.phase & 1
                            ));
                            return Err(f);
                        }
                    }
                }
                self.set_wait_pred(*p, active, done);
                let failed = active & !done;
                if failed != 0 {
                    self.yield_lanes(failed, pc + 1);
                }
            }
            TmaInst::PendingCount { d, state } => {
                for l in lanes(active) {
                    let v = self.regs[*state as usize * 32 + l];
                    self.regs[*d as usize * 32 + l] = (v >> 32) & 0xF_FFFF;
                }
            }
            TmaInst::Bulk(b) => return self.bulk_tensor(b, active, pc, cx, cta),
            TmaInst::FenceProxyAsync => {
                if cta.tma.on {
                    for l in lanes(active) {
                        let tid = (self.first_tid + l as u32) as usize;
                        if let Some(f) = cta.tma.fences.get_mut(tid) {
                            *f += 1;
                        }
                        if let Some(e) = cta.tma.fence_epochs.get_mut(tid) {
                            *e = cta.epoch + 1;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// `elect.sync d|p, membermask` once every lane of the mask arrived
    /// (the warp-sync machinery waits for them, and reports lanes that
    /// never come): the ISA leaves the choice to the hardware, only
    /// deterministic; the simulator elects the lowest active lane.
    pub(crate) fn elect(&mut self, d: Slot, p: PredId, _mask: Slot, active: u32) {
        let leader = active.trailing_zeros();
        for l in lanes(active) {
            self.regs[d as usize * 32 + l] = u64::from(leader);
        }
        self.set_wait_pred(p, active, active & active.wrapping_neg());
    }

    fn set_wait_pred(&mut self, p: PredId, active: u32, value: u32) {
        if let Some(m) = self.preds.get_mut(p as usize) {
            *m = (*m & !active) | (value & active);
        }
    }
}

/// Whether a wait with `v` (a parity, or an arrive's state) on `b`
/// succeeds, and the phase it waits for.
fn wait_status(b: &Mbar, v: u64, parity: bool) -> (bool, i64) {
    if parity {
        let p = (v & 1) as u32;
        if b.phase & 1 == p {
            (false, i64::from(b.phase))
        } else {
            (true, i64::from(b.phase) - 1)
        }
    } else {
        let k = v as u32;
        (b.phase.wrapping_sub(k) as i32 > 0, i64::from(k))
    }
}

/// Forgets what threads saw of the mbarrier at `off` and which copies it
/// delivered: a new object starts there (after `inval`, or an `init`).
fn forget(cta: &mut CtaState, off: u32) {
    cta.tma.seen.retain(|&(_, b), _| b != off);
    for l in cta.tma.landings.iter_mut().filter(|l| l.bar == off) {
        l.bar = u32::MAX;
    }
}

/// Adds `t` to a barrier's tx-count within the ISA's range.
fn add_tx(b: &mut Mbar, t: i64) -> Result<(), String> {
    let n = b.tx + t;
    if n.unsigned_abs() > MAX_COUNT {
        return Err(format!(
            "the mbarrier's tx-count would become {n}, outside -(2^20 - 1) to 2^20 - 1"
        ));
    }
    b.tx = n;
    Ok(())
}

/// Completes the current phase of the barrier at `off` if no arrival and
/// no transaction is pending.
pub(crate) fn complete_if_done(cta: &mut CtaState, off: u32) {
    if let Some(b) = cta.tma.bars.get_mut(&off) {
        if b.pending == 0 && b.tx == 0 {
            b.phase = b.phase.wrapping_add(1);
            b.pending = b.expected;
            cta.tma.events += 1;
        }
    }
}

/// Whether the lanes that yielded at failed waits may get further by
/// running again: some mbarrier changed since they were last woken, or
/// some of them now wait somewhere else (a thread that fails two waits in
/// a row and then arrives itself is no deadlock). Records the state for
/// the next time.
pub(crate) fn progressed(t: &mut TmaState, warps: &[Warp]) -> bool {
    let mut at: Vec<(u32, u32)> = Vec::new();
    for w in warps {
        for l in lanes(w.yielded) {
            at.push((w.first_tid + l as u32, w.pc_of(l)));
        }
    }
    let moved = t.events != t.woken || at != t.woken_at;
    t.woken = t.events;
    t.woken_at = at;
    moved
}

/// The report when every live thread is blocked and some wait on an
/// mbarrier that nothing can complete any more.
pub(crate) fn deadlock(cx: &Ctx, cta: &CtaState, warps: &[Warp]) -> SimError {
    let mut waits: Vec<(u32, u32)> = cta.tma.waits.iter().map(|(&t, w)| (t, w.pc)).collect();
    waits.sort();
    let (first_tid, first_pc) = waits.first().copied().unwrap_or((0, 0));
    let mut f = Fault::new(
        CheckKind::Synccheck,
        "deadlock: every live thread is blocked, and the mbarrier waits can never complete",
    );
    // One note per (instruction, barrier, phase).
    let mut groups: Vec<(Waiting, u32, u32)> = Vec::new(); // (wait, threads, first tid)
    for &(tid, _) in &waits {
        let w = cta.tma.waits[&tid];
        match groups
            .iter_mut()
            .find(|g| g.0.pc == w.pc && g.0.bar == w.bar && g.0.phase == w.phase)
        {
            Some(g) => g.1 += 1,
            None => groups.push((w, 1, tid)),
        }
    }
    for (w, n, tid) in groups {
        let [x, y, z] = cx.thread_xyz(tid);
        let name = cx
            .region_name(Space::Shared, u64::from(w.bar))
            .map_or(String::new(), |n| format!(" (`{n}`)"));
        let state = match cta.tma.bars.get(&w.bar) {
            Some(b) => {
                let flying: u64 = cta
                    .tma
                    .copies
                    .iter()
                    .filter(|c| c.bar == w.bar)
                    .map(|c| c.bytes)
                    .sum();
                let mut s = format!(
                    "it is in phase {} with {} of {} arrivals pending and tx-count {}",
                    b.phase, b.pending, b.expected, b.tx
                );
                if flying > 0 {
                    s += &format!(", {flying} bytes of bulk copies in flight");
                }
                let flying = i64::try_from(flying).unwrap_or(i64::MAX);
                if b.tx - flying < 0 {
                    s += " (the copies complete more bytes than expect_tx announced)";
                } else if b.pending == 0 && b.tx > flying {
                    s += &format!(
                        " (expect_tx announced {} bytes more than the copies in flight deliver)",
                        b.tx - flying
                    );
                }
                s
            }
            None => "it was invalidated".to_string(),
        };
        f.notes.push(format!(
            "{n} thread(s) from ({x}, {y}, {z}) wait at {} for phase {} of the mbarrier at shared offset {:#x}{name}: {state}",
            cx.where_is(w.pc),
            w.phase.max(0),
            w.bar
        ));
    }
    let mut at_bar: Vec<(u32, u32)> = Vec::new();
    for w in warps {
        for l in lanes(w.at_bar | w.waiting) {
            let pc = w.pc_of(l);
            match at_bar.iter_mut().find(|p| p.0 == pc) {
                Some(p) => p.1 += 1,
                None => at_bar.push((pc, 1)),
            }
        }
    }
    for (pc, n) in at_bar {
        f.notes
            .push(format!("{n} thread(s) wait at {}", cx.where_is(pc)));
    }
    cx.report(cta, first_pc, first_tid, f)
}
