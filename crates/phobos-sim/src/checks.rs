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
//! This module only decides; `exec` turns a [`Hazard`] into a report.

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
        let mut uninit = None;
        for o in off..off + len {
            let Some(c) = self.cells.get_mut(o as usize) else {
                continue;
            };
            if c.w_tid == NONE {
                uninit = uninit.or(Some(o));
            } else if let Some((other, other_pc)) = c.after_write(s) {
                return Err(Hazard::ReadAfterWrite {
                    offset: o,
                    other,
                    other_pc,
                });
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
        }
        Ok(uninit)
    }

    /// Records a plain write of `[off, off + len)`.
    pub(crate) fn write(&mut self, off: u32, len: u32, s: &Stamp) -> Result<(), Hazard> {
        for o in off..off + len {
            let Some(c) = self.cells.get_mut(o as usize) else {
                continue;
            };
            if let Some((other, other_pc)) = c.after_write(s) {
                return Err(Hazard::WriteAfterWrite {
                    offset: o,
                    other,
                    other_pc,
                });
            }
            if let Some((other, other_pc)) = c.after_read(s) {
                return Err(Hazard::WriteAfterRead {
                    offset: o,
                    other,
                    other_pc,
                });
            }
            *c = Cell {
                w_tid: s.tid + 1,
                w_epoch: s.epoch,
                w_wep: s.wep,
                w_pc: s.pc,
                ..Cell::default()
            };
        }
        Ok(())
    }

    /// Records an atomic read-modify-write of `[off, off + len)`. Atomics
    /// do not race with each other; an atomic races with another thread's
    /// plain write or read of the same bytes that no barrier (or warp
    /// sync) orders. Returns the first byte not yet written, as
    /// [`Shadow::read`] does.
    pub(crate) fn atomic(&mut self, off: u32, len: u32, s: &Stamp) -> Result<Option<u32>, Hazard> {
        let mut uninit = None;
        for o in off..off + len {
            let Some(c) = self.cells.get_mut(o as usize) else {
                continue;
            };
            if c.w_tid == NONE {
                uninit = uninit.or(Some(o));
            }
            if c.w_kind == WriteKind::Plain {
                if let Some((other, other_pc)) = c.after_write(s) {
                    return Err(Hazard::WriteAfterWrite {
                        offset: o,
                        other,
                        other_pc,
                    });
                }
            }
            if let Some((other, other_pc)) = c.after_read(s) {
                return Err(Hazard::WriteAfterRead {
                    offset: o,
                    other,
                    other_pc,
                });
            }
            let earlier_atomics = c.w_kind != WriteKind::Plain && c.w_epoch == s.epoch;
            let kind =
                if earlier_atomics && (c.w_kind == WriteKind::Atomics || c.w_tid != s.tid + 1) {
                    WriteKind::Atomics
                } else {
                    WriteKind::Atomic
                };
            *c = Cell {
                w_tid: s.tid + 1,
                w_kind: kind,
                w_epoch: s.epoch,
                w_wep: s.wep,
                w_pc: s.pc,
                ..Cell::default()
            };
        }
        Ok(uninit)
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

    #[test]
    fn barrier_epochs_order_accesses() {
        let mut s = Shadow::default();
        s.reset(8);
        assert_eq!(s.read(4, 4, &st(0, 0)), Ok(Some(4)));
        s.write(0, 4, &st(0, 0)).unwrap();
        assert!(matches!(
            s.read(0, 4, &st(40, 0)),
            Err(Hazard::ReadAfterWrite { other: Some(0), .. })
        ));
        assert_eq!(s.read(0, 4, &st(40, 1)), Ok(None));
        s.read(0, 4, &st(41, 1)).unwrap();
        assert!(matches!(
            s.write(0, 4, &st(40, 1)),
            Err(Hazard::WriteAfterRead { other: None, .. })
        ));
        s.write(0, 4, &st(40, 2)).unwrap();
        assert!(matches!(
            s.write(2, 1, &st(7, 2)),
            Err(Hazard::WriteAfterWrite {
                other: Some(40),
                ..
            })
        ));
        // A read of unwritten bytes followed by another thread's write is a race.
        assert!(matches!(
            s.write(4, 4, &st(9, 0)),
            Err(Hazard::WriteAfterRead { other: Some(0), .. })
        ));
    }

    #[test]
    fn warp_sync_orders_lanes_of_one_warp() {
        let mut s = Shadow::default();
        s.reset(4);
        s.write(0, 4, &st(1, 0)).unwrap();
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
        let mut s = Shadow::default();
        s.reset(4);
        s.write(0, 4, &st(0, 0)).unwrap();
        assert_eq!(s.atomic(0, 4, &st(3, 1)), Ok(None));
        assert_eq!(s.atomic(0, 4, &st(40, 1)), Ok(None));
        assert!(matches!(
            s.read(0, 4, &st(5, 1)),
            Err(Hazard::ReadAfterWrite { other: None, .. })
        ));
        // After a barrier the atomics' result may be read.
        assert_eq!(s.read(0, 4, &st(5, 2)), Ok(None));
    }

    #[test]
    fn an_atomic_races_with_an_unordered_plain_read() {
        let mut s = Shadow::default();
        s.reset(4);
        s.write(0, 4, &st(0, 0)).unwrap();
        s.read(0, 4, &st(3, 1)).unwrap();
        assert!(matches!(
            s.atomic(0, 4, &st(40, 1)),
            Err(Hazard::WriteAfterRead { other: Some(3), .. })
        ));
        // A plain write by another thread in the atomic's epoch is a race.
        let mut s = Shadow::default();
        s.reset(4);
        s.atomic(0, 4, &st(7, 0)).unwrap();
        assert!(matches!(
            s.write(0, 4, &st(8, 0)),
            Err(Hazard::WriteAfterWrite { other: Some(7), .. })
        ));
    }

    #[test]
    fn a_thread_reads_its_own_atomic_without_a_barrier() {
        let mut s = Shadow::default();
        s.reset(8);
        s.atomic(0, 4, &st(7, 0)).unwrap();
        assert_eq!(s.read(0, 4, &st(7, 0)), Ok(None));
        // Another thread may not.
        assert!(matches!(
            s.read(0, 4, &st(9, 0)),
            Err(Hazard::ReadAfterWrite { other: Some(7), .. })
        ));
        // Atomics of two threads, then a read by one of them: a race, since
        // the other's atomic is not ordered before it.
        s.atomic(4, 4, &st(1, 0)).unwrap();
        s.atomic(4, 4, &st(2, 0)).unwrap();
        assert!(matches!(
            s.read(4, 4, &st(1, 0)),
            Err(Hazard::ReadAfterWrite { other: None, .. })
        ));
    }
}
