//! Shadow state of a CTA's shared memory for racecheck and initcheck.
//!
//! For every shared byte the shadow keeps the last writer and the last
//! reader (or the fact that several threads read it), each stamped with the
//! CTA barrier epoch and the accessing warp's warp-sync epoch. Two accesses
//! by different threads are ordered when a CTA barrier lies between them
//! (different barrier epochs), or when both threads are in the same warp and
//! a warp-level sync (`shfl.sync`, `vote.sync`, `bar.warp.sync`) lies between
//! them. Unordered write/read, read/write and write/write pairs are hazards.
//! Atomics do not race with each other, but do with plain accesses.
//!
//! The shadow only decides; the second half of this module words what the
//! checks found (memcheck, racecheck, initcheck, synccheck) as located
//! reports.

use crate::error::{CheckKind, CheckReport, SimError, SourceLoc};
use crate::launch::{CtaState, Ctx};
use crate::memory::{base_of, GlobalFault};
use crate::observer::Space;
use crate::warp::{lane_list, lanes, Warp};

/// No thread.
const NONE: u32 = 0;
/// Marks "several threads read this byte in the current epoch".
const MANY: u32 = 1 << 31;

/// How the last write of a byte was made.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum WriteKind {
    #[default]
    Plain,
    /// Atomics, all by the writer thread since the epoch began.
    Atomic,
    /// Atomics by several threads in the writer's epoch.
    Atomics,
}

#[derive(Clone, Copy, Default)]
struct Cell {
    /// Writer thread + 1, `NONE` if never written.
    w_tid: u32,
    w_kind: WriteKind,
    w_epoch: u32,
    w_wep: u32,
    w_pc: u32,
    /// Reader thread + 1 (or'ed with `MANY`), `NONE` if not read since the write.
    r_tid: u32,
    r_epoch: u32,
    r_wep: u32,
    r_pc: u32,
}

impl Cell {
    /// The hazard of a plain access by `s` after this byte's last write:
    /// an unordered plain write or single-thread atomic by another
    /// thread, or atomics by several threads in this epoch (`other` is
    /// then `None`).
    fn after_write(&self, s: &Stamp) -> Option<(Option<u32>, u32)> {
        if self.w_tid == NONE {
            return None;
        }
        let writer = self.w_tid - 1;
        match self.w_kind {
            WriteKind::Atomics if self.w_epoch == s.epoch => Some((None, self.w_pc)),
            WriteKind::Atomics => None,
            _ => {
                unordered(writer, self.w_epoch, self.w_wep, s).then_some((Some(writer), self.w_pc))
            }
        }
    }

    /// The hazard of a write by `s` after this byte's reads: an unordered
    /// read by another thread (`other` is `None` for several readers).
    fn after_read(&self, s: &Stamp) -> Option<(Option<u32>, u32)> {
        if self.r_tid == NONE {
            return None;
        }
        let many = self.r_tid & MANY != 0;
        let reader = (self.r_tid & !MANY) - 1;
        let hazard = if many {
            self.r_epoch == s.epoch
        } else {
            unordered(reader, self.r_epoch, self.r_wep, s)
        };
        hazard.then_some(((!many).then_some(reader), self.r_pc))
    }

    /// The hazard of a write (plain or atomic) of byte `o` by `s`: after
    /// its last write when `after_writer`, and after its reads.
    #[inline]
    fn write_hazard(&self, s: &Stamp, o: u32, after_writer: bool) -> Result<(), Hazard> {
        if let Some((other, other_pc)) = self.after_write(s).filter(|_| after_writer) {
            return Err(Hazard::WriteAfterWrite {
                offset: o,
                other,
                other_pc,
            });
        }
        if let Some((other, other_pc)) = self.after_read(s) {
            return Err(Hazard::WriteAfterRead {
                offset: o,
                other,
                other_pc,
            });
        }
        Ok(())
    }

    /// A byte just written by `s`, read by nobody since.
    #[inline]
    fn written(s: &Stamp, kind: WriteKind) -> Cell {
        Cell {
            w_tid: s.tid + 1,
            w_kind: kind,
            w_epoch: s.epoch,
            w_wep: s.wep,
            w_pc: s.pc,
            ..Cell::default()
        }
    }
}

/// Who is accessing: thread (linear in the CTA), barrier epoch, its warp's
/// sync epoch, and the instruction index.
#[derive(Clone, Copy)]
pub(crate) struct Stamp {
    pub tid: u32,
    pub epoch: u32,
    pub wep: u32,
    pub pc: u32,
}

/// What went wrong with one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hazard {
    /// Read after a write by `other` (or after atomics of several threads
    /// when `other` is None).
    ReadAfterWrite {
        offset: u32,
        other: Option<u32>,
        other_pc: u32,
    },
    /// Write after a read by `other` (None: several readers).
    WriteAfterRead {
        offset: u32,
        other: Option<u32>,
        other_pc: u32,
    },
    /// Write after a write by `other` (None: atomics of several threads).
    WriteAfterWrite {
        offset: u32,
        other: Option<u32>,
        other_pc: u32,
    },
}

/// The shadow of one CTA's shared memory.
#[derive(Default)]
pub(crate) struct Shadow {
    cells: Vec<Cell>,
}

fn unordered(prev_tid: u32, prev_epoch: u32, prev_wep: u32, cur: &Stamp) -> bool {
    prev_tid != cur.tid
        && prev_epoch == cur.epoch
        && (prev_tid / 32 != cur.tid / 32 || prev_wep == cur.wep)
}

impl Shadow {
    /// Clears the shadow for a new CTA with `bytes` of shared memory.
    pub(crate) fn reset(&mut self, bytes: usize) {
        self.cells.clear();
        self.cells.resize(bytes, Cell::default());
    }

    /// Records a plain read of `[off, off + len)`; `off + len` is in bounds.
    /// Returns the first byte that no thread has written yet, if any: the
    /// caller decides later whether that is an initcheck error or the first
    /// half of a race (another thread writing it in the same epoch).
    pub(crate) fn read(&mut self, off: u32, len: u32, s: &Stamp) -> Result<Option<u32>, Hazard> {
        self.visit(off, len, |o, c| {
            if c.w_tid != NONE {
                if let Some((other, other_pc)) = c.after_write(s) {
                    return Err(Hazard::ReadAfterWrite {
                        offset: o,
                        other,
                        other_pc,
                    });
                }
            }
            let same_epoch = c.r_tid != NONE && c.r_epoch == s.epoch;
            if !same_epoch {
                c.r_tid = s.tid + 1;
                c.r_pc = s.pc;
            } else if (c.r_tid & !MANY) != s.tid + 1 {
                c.r_tid |= MANY;
            }
            c.r_epoch = s.epoch;
            c.r_wep = s.wep;
            Ok(())
        })
    }

    /// Records a plain write of `[off, off + len)`. Bit `i` of `unchanged`
    /// says the write leaves byte `off + i` holding the value it had: an
    /// unordered plain write of it by another thread is then no hazard.
    /// Both writes store the same value, so whichever lands last the byte
    /// is the same; compute-sanitizer's racecheck reports such a pair only
    /// at its INFO level ("identical data writes"), below the WARNING and
    /// ERROR hazards it counts, and Triton's reductions rely on it (every
    /// lane of a warp stores the warp's reduced value to one word).
    pub(crate) fn write(
        &mut self,
        off: u32,
        len: u32,
        s: &Stamp,
        unchanged: u32,
    ) -> Result<(), Hazard> {
        self.visit(off, len, |o, c| {
            let same = c.w_kind == WriteKind::Plain
                && unchanged.checked_shr(o - off).is_some_and(|u| u & 1 != 0);
            c.write_hazard(s, o, !same)?;
            *c = Cell::written(s, WriteKind::Plain);
            Ok(())
        })
        .map(|_| ())
    }

    /// Records an atomic read-modify-write of `[off, off + len)`. Atomics
    /// do not race with each other; an atomic races with another thread's
    /// plain write or read of the same bytes that no barrier (or warp
    /// sync) orders. Returns the first byte not yet written, as
    /// [`Shadow::read`] does.
    pub(crate) fn atomic(&mut self, off: u32, len: u32, s: &Stamp) -> Result<Option<u32>, Hazard> {
        self.visit(off, len, |o, c| {
            // Atomics do not race with earlier atomics.
            c.write_hazard(s, o, c.w_kind == WriteKind::Plain)?;
            let earlier_atomics = c.w_kind != WriteKind::Plain && c.w_epoch == s.epoch;
            let kind =
                if earlier_atomics && (c.w_kind == WriteKind::Atomics || c.w_tid != s.tid + 1) {
                    WriteKind::Atomics
                } else {
                    WriteKind::Atomic
                };
            *c = Cell::written(s, kind);
            Ok(())
        })
    }

    /// Marks `[off, off + len)` written by the asynchronous proxy (a bulk
    /// copy's landing): defined, and ordered with every thread's later
    /// access (the mbarrier wait orders them; `bulk` checks the wait).
    pub(crate) fn async_write(&mut self, off: u32, len: u32) {
        for c in self.cells.iter_mut().skip(off as usize).take(len as usize) {
            *c = Cell {
                w_tid: MANY - 1,
                w_epoch: u32::MAX,
                ..Cell::default()
            };
        }
    }

    /// Runs `visit` on each byte of `[off, off + len)` in order (bytes past
    /// the shadow are skipped), stopping at its first hazard. Returns the
    /// first byte that no thread had written before its visit.
    #[inline]
    fn visit(
        &mut self,
        off: u32,
        len: u32,
        mut visit: impl FnMut(u32, &mut Cell) -> Result<(), Hazard>,
    ) -> Result<Option<u32>, Hazard> {
        let mut uninit = None;
        for o in off..off + len {
            let Some(c) = self.cells.get_mut(o as usize) else {
                continue;
            };
            if c.w_tid == NONE {
                uninit = uninit.or(Some(o));
            }
            visit(o, c)?;
        }
        Ok(uninit)
    }
}

// ---------------------------------------------------------------------------
// Reports: a failed check as the text the user reads.
//
// The checks above (and memcheck in `exec`, synccheck in `launch` and
// `warp`) only decide; everything below words what they found, attaching
// kernel, source location, CTA and thread to a [`Fault`].

/// A failed check inside one instruction, before location is attached.
#[derive(Debug)]
pub(crate) struct Fault {
    pub kind: CheckKind,
    pub message: String,
    pub lane: Option<u32>,
    pub address: Option<u64>,
    pub space: Option<Space>,
    pub tensor: Option<String>,
    pub notes: Vec<String>,
}

impl Fault {
    pub(crate) fn new(kind: CheckKind, message: impl Into<String>) -> Fault {
        Fault {
            kind,
            message: message.into(),
            lane: None,
            address: None,
            space: None,
            tensor: None,
            notes: Vec::new(),
        }
    }

    pub(crate) fn at(mut self, lane: usize, addr: u64, space: Space) -> Fault {
        self.lane = Some(lane as u32);
        self.address = Some(addr);
        self.space = Some(space);
        self
    }
}

/// `misaligned WHAT of LEN bytes (the address must be a multiple of LEN)`.
pub(crate) fn misaligned(what: &str, len: u32) -> String {
    format!("misaligned {what} of {len} bytes (the address must be a multiple of {len})")
}

/// `out-of-bounds WHAT of LEN bytes: the CTA has LIMIT bytes of shared memory`.
pub(crate) fn shared_out_of_bounds(what: &str, len: u32, limit: u64) -> String {
    format!("out-of-bounds {what} of {len} bytes: the CTA has {limit} bytes of shared memory")
}

/// `load` or `store`.
pub(crate) fn access_word(store: bool) -> &'static str {
    if store {
        "store"
    } else {
        "load"
    }
}

/// The name of a space in messages.
pub(crate) fn space_word(s: Space) -> &'static str {
    match s {
        Space::Global => "global",
        Space::Shared => "shared",
        Space::Local => "local",
        Space::Param => "param",
    }
}

impl Ctx<'_> {
    fn source(&self, pc: u32) -> Option<SourceLoc> {
        let (f, line, col) = self.entry.info.get(pc as usize)?.loc?;
        Some(SourceLoc {
            file: self.module.file_name(f),
            line,
            col,
        })
    }

    /// `k.pho:12:5 (PTX line 40)` or `PTX line 40`.
    pub(crate) fn where_is(&self, pc: u32) -> String {
        let line = self.entry.info.get(pc as usize).map_or(0, |i| i.line);
        match self.source(pc) {
            Some(s) => format!("{s} (PTX line {line})"),
            None => format!("PTX line {line}"),
        }
    }

    fn opcode(&self, pc: u32) -> String {
        self.entry
            .info
            .get(pc as usize)
            .map_or_else(String::new, |i| i.opcode.clone())
    }

    /// `inlined at FILE:L:C, FILE:L:C` for code that the producer inlined
    /// (Triton's `tl.sum` and friends), naming the call sites innermost
    /// first down to the kernel's own line.
    fn inlined_note(&self, pc: u32) -> Option<String> {
        let info = self.entry.info.get(pc as usize)?;
        let chain = self.module.inline_chain(info.inlined);
        if chain.is_empty() {
            return None;
        }
        let sites: Vec<String> = chain
            .iter()
            .map(|&(f, line, col)| {
                SourceLoc {
                    file: self.module.file_name(f),
                    line,
                    col,
                }
                .to_string()
            })
            .collect();
        Some(format!("inlined at {}", sites.join(", ")))
    }

    /// Attaches kernel, location, CTA and thread to a fault.
    pub(crate) fn report(&self, cta: &CtaState, pc: u32, tid: u32, mut f: Fault) -> SimError {
        if let Some(n) = self.inlined_note(pc) {
            f.notes.insert(0, n);
        }
        SimError::Check(Box::new(CheckReport {
            kind: f.kind,
            kernel: self.entry.name.clone(),
            message: f.message,
            source: self.source(pc),
            ptx_line: self.entry.info.get(pc as usize).map_or(0, |i| i.line),
            instruction: self.opcode(pc),
            cta: cta.id,
            thread: Some(self.thread_xyz(tid)),
            address: f.address,
            space: f.space,
            tensor: f.tensor,
            notes: f.notes,
        }))
    }

    /// An access of `bytes` at shared address `addr` by the instruction at
    /// `pc` outside the buffer its bounds note names (`InstInfo::bounds`):
    /// bounds are per buffer, though the buffers share one `.shared` array
    /// and an index past one's edge lands in another.
    pub(crate) fn buffer_bounds(
        &self,
        pc: u32,
        what: &str,
        (lane, addr): (usize, u64),
        bytes: u32,
    ) -> Result<(), Fault> {
        let Some(b) = self
            .entry
            .info
            .get(pc as usize)
            .and_then(|i| i.bounds.as_ref())
        else {
            return Ok(());
        };
        let end = addr + u64::from(bytes);
        if addr >= b.start && end <= b.end {
            return Ok(());
        }
        let len = b.end - b.start;
        let mut f = Fault::new(
            CheckKind::Memcheck,
            format!(
                "out-of-bounds {what} of {bytes} bytes: outside `{}`, which has {len} bytes",
                b.name
            ),
        )
        .at(lane, addr, Space::Shared);
        f.tensor = Some(b.name.clone());
        // Shared addresses are 32 bits: a negative index wraps.
        let rel = i64::from(addr.wrapping_sub(b.start) as u32 as i32);
        f.notes.push(if rel < 0 {
            format!(
                "the access starts {} bytes before the start of `{}` (a negative index?)",
                -rel, b.name
            )
        } else {
            format!(
                "the access covers bytes {rel}..{} of `{}` ({} bytes past its end)",
                rel + i64::from(bytes),
                b.name,
                rel + i64::from(bytes) - len as i64
            )
        });
        let other = self
            .entry
            .info
            .iter()
            .filter_map(|i| i.bounds.as_ref())
            .find(|o| o.name != b.name && o.start <= addr && addr < o.end);
        if let Some(o) = other {
            f.notes.push(format!(
                "those bytes belong to `{}`, which it would have overwritten or read",
                o.name
            ));
        }
        Err(f)
    }

    /// A memcheck fault of lane `lane` at `addr`, naming the variable or
    /// tensor that holds the address.
    pub(crate) fn memcheck_at(
        &self,
        message: impl Into<String>,
        lane: usize,
        addr: u64,
        space: Space,
    ) -> Fault {
        let mut f = Fault::new(CheckKind::Memcheck, message).at(lane, addr, space);
        f.tensor = self.region_name(space, addr);
        f
    }

    /// The shared or local variable holding `addr`, or the global buffer.
    pub(crate) fn region_name(&self, space: Space, addr: u64) -> Option<String> {
        match space {
            Space::Shared => self
                .entry
                .shared
                .iter()
                .find(|r| {
                    u64::from(r.offset) <= addr
                        && addr < u64::from(r.offset) + u64::from(r.bytes).max(1)
                })
                .map(|r| r.name.clone()),
            Space::Global => self
                .dev
                .nearest(addr)
                .map(|i| self.dev.buffers[i].name.clone()),
            _ => None,
        }
    }

    pub(crate) fn global_fault(&self, e: GlobalFault, addr: u64, bytes: u32, store: bool) -> Fault {
        let GlobalFault::OutOfBounds { buffer } = e;
        let mut f = Fault::new(
            CheckKind::Memcheck,
            format!(
                "out-of-bounds global {} of {bytes} bytes",
                access_word(store)
            ),
        );
        // An address past the end of buffer `i` but nearer the start of the
        // next one is most likely a negative index into the next one
        // (`y[-1]`): report it against that tensor, not as gigabytes past
        // the end of this one.
        let before_next = buffer.and_then(|i| {
            let off = addr - base_of(i);
            let next = i + 1;
            let after_end = off.checked_sub(self.dev.buffers[i].len)?;
            let before = base_of(next).checked_sub(addr)?;
            (next < self.dev.buffers.len() && before < after_end).then_some((next, before))
        });
        if let Some((next, before)) = before_next {
            let b = &self.dev.buffers[next];
            f.tensor = Some(b.name.clone());
            f.notes.push(format!(
                "the access starts {before} bytes before the start of tensor `{}` (a negative index?), which has {} bytes",
                b.name, b.len
            ));
            return f;
        }
        match buffer {
            Some(i) => {
                let b = &self.dev.buffers[i];
                let off = addr - base_of(i);
                f.tensor = Some(b.name.clone());
                f.notes.push(format!(
                    "the access covers bytes {off}..{} of tensor `{}`, which has {} bytes ({} bytes past its end)",
                    off + u64::from(bytes),
                    b.name,
                    b.len,
                    off + u64::from(bytes) - b.len
                ));
            }
            None => match self.dev.nearest(addr) {
                Some(i) => {
                    let b = &self.dev.buffers[i];
                    let base = base_of(i);
                    f.tensor = Some(b.name.clone());
                    let rel = if addr < base {
                        format!("{} bytes before the start of", base - addr)
                    } else {
                        format!("{} bytes after the end of", addr - base - b.len)
                    };
                    f.notes.push(format!(
                        "the address is in no tensor; it is {rel} `{}` (at {base:#x}, {} bytes)",
                        b.name, b.len
                    ));
                }
                None => f.notes.push("no tensor is allocated".into()),
            },
        }
        f
    }

    pub(crate) fn hazard_fault(&self, h: Hazard) -> Fault {
        let (kind, msg, other, verb) = match h {
            Hazard::ReadAfterWrite {
                other, other_pc, ..
            } => (
                CheckKind::Racecheck,
                "read-after-write hazard on shared memory",
                (other, other_pc),
                "wrote",
            ),
            Hazard::WriteAfterRead {
                other, other_pc, ..
            } => (
                CheckKind::Racecheck,
                "write-after-read hazard on shared memory",
                (other, other_pc),
                "read",
            ),
            Hazard::WriteAfterWrite {
                other, other_pc, ..
            } => (
                CheckKind::Racecheck,
                "write-after-write hazard on shared memory",
                (other, other_pc),
                "wrote",
            ),
        };
        let mut f = Fault::new(kind, msg);
        let who = match other.0 {
            Some(t) => {
                let [x, y, z] = self.thread_xyz(t);
                format!("thread ({x}, {y}, {z})")
            }
            None if verb == "read" => "several other threads".to_string(),
            None => "an atomic of another thread".to_string(),
        };
        f.notes.push(format!(
            "{who} {verb} these bytes at {} with no barrier between the two accesses",
            self.where_is(other.1)
        ));
        f
    }

    /// The initcheck fault of a read of never-written shared `byte`.
    pub(crate) fn uninit_fault(&self, byte: u32, addr: u64) -> Fault {
        let mut f = Fault::new(CheckKind::Initcheck, "read of uninitialized shared memory");
        f.address = Some(addr);
        f.space = Some(Space::Shared);
        f.tensor = self.region_name(Space::Shared, u64::from(byte));
        f.notes.push(format!(
            "no thread of this CTA wrote shared byte {byte} before this read (nor later in the same barrier interval)"
        ));
        f
    }

    /// The racecheck or initcheck outcome of lane `l`'s shadowed shared
    /// access at `addr` as a fault: a hazard fails the instruction; a read
    /// of unwritten bytes is held back (see [`CtaState::note_uninit`]).
    pub(crate) fn shadow_outcome(
        &self,
        outcome: Result<Option<u32>, Hazard>,
        l: usize,
        addr: u64,
        tid: u32,
        pc: u32,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        match outcome {
            Ok(None) => Ok(()),
            Ok(Some(byte)) => {
                cta.note_uninit(self, pc, tid, byte, addr);
                Ok(())
            }
            Err(h) => {
                let mut f = self.hazard_fault(h).at(l, addr, Space::Shared);
                f.tensor = self.region_name(Space::Shared, addr);
                Err(f)
            }
        }
    }

    /// A `bar.sync` that `arrived` threads reached while `exited_total`
    /// exited (lanes `exited` of warp `warp` among them, `tid` one of them).
    pub(crate) fn barrier_exited_fault(
        &self,
        arrived: u32,
        exited_total: u32,
        warp: u32,
        exited: u32,
        tid: u32,
    ) -> Fault {
        let mut f = Fault::new(
            CheckKind::Synccheck,
            format!(
                "bar.sync is reached by {arrived} of the CTA's {} threads; the other {exited_total} exited without reaching it, so the barrier can never complete",
                self.threads_per_cta
            ),
        );
        f.notes.push(format!(
            "for example lanes {} of warp {warp} exited; a barrier must not sit under control that differs between threads",
            lane_list(exited)
        ));
        let [x, y, z] = self.thread_xyz(tid);
        f.notes
            .push(format!("thread ({x}, {y}, {z}) is one that never arrived"));
        f
    }

    /// Threads waiting at different `bar.sync`s: `(pc, threads, first tid)`.
    pub(crate) fn barrier_split_fault(&self, pcs: &[(u32, u32, u32)]) -> Fault {
        let mut f = Fault::new(
            CheckKind::Synccheck,
            "the CTA's threads wait at different bar.sync instructions, so no barrier can complete",
        );
        for &(p, n, _) in pcs {
            f.notes
                .push(format!("{n} threads wait at {}", self.where_is(p)));
        }
        f
    }

    /// The synccheck report of a warp-synchronous instruction that some
    /// lanes of its member mask can never reach.
    pub(crate) fn warp_sync_deadlock(&self, cta: &CtaState, w: &Warp) -> SimError {
        let l = w.waiting.trailing_zeros() as usize;
        let pc = w.pc_of(l);
        let here: u32 = lanes(w.waiting)
            .filter(|&k| w.pc_of(k) == pc)
            .fold(0, |m, k| m | (1 << k));
        let mask = match self.entry.insts.get(pc as usize).map(|i| i.op) {
            Some(crate::decode::Op::Shfl { mask, .. })
            | Some(crate::decode::Op::Vote { mask, .. })
            | Some(crate::decode::Op::WarpSync { mask })
            | Some(crate::decode::Op::Ldmatrix { mask, .. })
            | Some(crate::decode::Op::Mma { mask, .. })
            | Some(crate::decode::Op::Elect { mask, .. }) => w.regs[mask as usize * 32 + l] as u32,
            _ => u32::MAX,
        };
        let missing = mask & !here;
        let mut f = Fault::new(
            CheckKind::Synccheck,
            format!(
                "{} can never complete: lanes {} of warp {} arrived, but lanes {} named in the member mask {mask:#010x} never reach it",
                self.opcode(pc),
                lane_list(here),
                w.index,
                lane_list(missing)
            ),
        );
        let mut seen = Vec::new();
        for k in lanes(missing) {
            let what = if w.live & (1 << k) == 0 {
                "exited".to_string()
            } else if w.at_bar & (1 << k) != 0 {
                format!("wait at bar.sync at {}", self.where_is(w.pc_of(k)))
            } else {
                format!("wait at {}", self.where_is(w.pc_of(k)))
            };
            if !seen.contains(&what) {
                f.notes.push(format!("lane {k} and others like it {what}"));
                seen.push(what);
            }
        }
        f.notes.push("a warp-synchronous instruction must not sit under control that differs between the lanes of its mask".into());
        self.report(cta, pc, w.first_tid + l as u32, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(tid: u32, epoch: u32) -> Stamp {
        Stamp {
            tid,
            epoch,
            wep: 0,
            pc: 0,
        }
    }

    /// The hazard `r` reports: its kind (read after write, write after
    /// read, write after write) and the other thread.
    fn hazard<T: std::fmt::Debug>(r: Result<T, Hazard>) -> (&'static str, Option<u32>) {
        match r {
            Err(Hazard::ReadAfterWrite { other, .. }) => ("RAW", other),
            Err(Hazard::WriteAfterRead { other, .. }) => ("WAR", other),
            Err(Hazard::WriteAfterWrite { other, .. }) => ("WAW", other),
            Ok(v) => panic!("no hazard reported: Ok({v:?})"),
        }
    }

    /// A shadow of `bytes` bytes that nothing has touched.
    fn shadow(bytes: usize) -> Shadow {
        let mut s = Shadow::default();
        s.reset(bytes);
        s
    }

    #[test]
    fn barrier_epochs_order_accesses() {
        let mut s = shadow(8);
        assert_eq!(s.read(4, 4, &st(0, 0)), Ok(Some(4)));
        s.write(0, 4, &st(0, 0), 0).unwrap();
        assert_eq!(hazard(s.read(0, 4, &st(40, 0))), ("RAW", Some(0)));
        assert_eq!(s.read(0, 4, &st(40, 1)), Ok(None));
        s.read(0, 4, &st(41, 1)).unwrap();
        assert_eq!(hazard(s.write(0, 4, &st(40, 1), 0)), ("WAR", None));
        s.write(0, 4, &st(40, 2), 0).unwrap();
        assert_eq!(hazard(s.write(2, 1, &st(7, 2), 0)), ("WAW", Some(40)));
        // A read of unwritten bytes followed by another thread's write is a race.
        assert_eq!(hazard(s.write(4, 4, &st(9, 0), 0)), ("WAR", Some(0)));
    }

    #[test]
    fn identical_writes_are_no_hazard() {
        let mut s = shadow(8);
        s.write(0, 4, &st(0, 0), 0).unwrap();
        // Another thread, no barrier, the same value in every byte.
        s.write(0, 4, &st(1, 0), 0b1111).unwrap();
        s.write(0, 4, &st(40, 0), 0b1111).unwrap();
        // One byte differs: a hazard with the last writer.
        assert_eq!(hazard(s.write(0, 4, &st(2, 0), 0b1101)), ("WAW", Some(40)));
        // The exemption covers writes only: an unordered read still races.
        assert_eq!(hazard(s.read(0, 4, &st(3, 0))), ("RAW", Some(2)));
        // And not a write after another thread's atomic.
        s.atomic(4, 4, &st(5, 0)).unwrap();
        assert_eq!(hazard(s.write(4, 4, &st(6, 0), 0b1111)), ("WAW", Some(5)));
    }

    #[test]
    fn warp_sync_orders_lanes_of_one_warp() {
        let mut s = shadow(4);
        s.write(0, 4, &st(1, 0), 0).unwrap();
        let later = Stamp {
            tid: 2,
            epoch: 0,
            wep: 1,
            pc: 0,
        };
        s.read(0, 4, &later).unwrap();
    }

    #[test]
    fn atomics_do_not_race_each_other() {
        let mut s = shadow(4);
        s.write(0, 4, &st(0, 0), 0).unwrap();
        assert_eq!(s.atomic(0, 4, &st(3, 1)), Ok(None));
        assert_eq!(s.atomic(0, 4, &st(40, 1)), Ok(None));
        assert_eq!(hazard(s.read(0, 4, &st(5, 1))), ("RAW", None));
        // After a barrier the atomics' result may be read.
        assert_eq!(s.read(0, 4, &st(5, 2)), Ok(None));
    }

    #[test]
    fn an_atomic_races_with_an_unordered_plain_read() {
        let mut s = shadow(4);
        s.write(0, 4, &st(0, 0), 0).unwrap();
        s.read(0, 4, &st(3, 1)).unwrap();
        assert_eq!(hazard(s.atomic(0, 4, &st(40, 1))), ("WAR", Some(3)));
        // A plain write by another thread in the atomic's epoch is a race.
        let mut s = shadow(4);
        s.atomic(0, 4, &st(7, 0)).unwrap();
        assert_eq!(hazard(s.write(0, 4, &st(8, 0), 0)), ("WAW", Some(7)));
    }

    #[test]
    fn a_thread_reads_its_own_atomic_without_a_barrier() {
        let mut s = shadow(8);
        s.atomic(0, 4, &st(7, 0)).unwrap();
        assert_eq!(s.read(0, 4, &st(7, 0)), Ok(None));
        // Another thread may not.
        assert_eq!(hazard(s.read(0, 4, &st(9, 0))), ("RAW", Some(7)));
        // Atomics of two threads, then a read by one of them: a race, since
        // the other's atomic is not ordered before it.
        s.atomic(4, 4, &st(1, 0)).unwrap();
        s.atomic(4, 4, &st(2, 0)).unwrap();
        assert_eq!(hazard(s.read(4, 4, &st(1, 0))), ("RAW", None));
    }
}
