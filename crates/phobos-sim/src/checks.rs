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
/// The writer of a byte last updated by an atomic.
const ATOMIC: u32 = u32::MAX;

#[derive(Clone, Copy, Default)]
struct Cell {
    /// Writer thread + 1, `NONE` if never written, `ATOMIC` after an atomic.
    w_tid: u32,
    w_epoch: u32,
    w_wep: u32,
    w_pc: u32,
    /// Reader thread + 1 (or'ed with `MANY`), `NONE` if not read since the write.
    r_tid: u32,
    r_epoch: u32,
    r_wep: u32,
    r_pc: u32,
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
    /// Read after a write by `other` (or after an atomic when `other` is None).
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
    /// Write after a write by `other` (None: an atomic).
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
            } else {
                let atomic = c.w_tid == ATOMIC;
                let writer = c.w_tid.wrapping_sub(1);
                if (atomic && c.w_epoch == s.epoch)
                    || (!atomic && unordered(writer, c.w_epoch, c.w_wep, s))
                {
                    return Err(Hazard::ReadAfterWrite {
                        offset: o,
                        other: (!atomic).then_some(writer),
                        other_pc: c.w_pc,
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
        }
        Ok(uninit)
    }

    /// Records a plain write of `[off, off + len)`.
    pub(crate) fn write(&mut self, off: u32, len: u32, s: &Stamp) -> Result<(), Hazard> {
        for o in off..off + len {
            let Some(c) = self.cells.get_mut(o as usize) else {
                continue;
            };
            if c.w_tid == ATOMIC && c.w_epoch == s.epoch {
                return Err(Hazard::WriteAfterWrite {
                    offset: o,
                    other: None,
                    other_pc: c.w_pc,
                });
            }
            if c.w_tid != NONE && c.w_tid != ATOMIC && unordered(c.w_tid - 1, c.w_epoch, c.w_wep, s)
            {
                return Err(Hazard::WriteAfterWrite {
                    offset: o,
                    other: Some(c.w_tid - 1),
                    other_pc: c.w_pc,
                });
            }
            if c.r_tid != NONE {
                let many = c.r_tid & MANY != 0;
                let reader = (c.r_tid & !MANY) - 1;
                let hazard = if many {
                    c.r_epoch == s.epoch
                } else {
                    unordered(reader, c.r_epoch, c.r_wep, s)
                };
                if hazard {
                    return Err(Hazard::WriteAfterRead {
                        offset: o,
                        other: (!many).then_some(reader),
                        other_pc: c.r_pc,
                    });
                }
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

    /// Records an atomic read-modify-write of `[off, off + len)`. Returns
    /// the first byte not yet written, as [`Shadow::read`] does.
    pub(crate) fn atomic(&mut self, off: u32, len: u32, s: &Stamp) -> Result<Option<u32>, Hazard> {
        let mut uninit = None;
        for o in off..off + len {
            let Some(c) = self.cells.get_mut(o as usize) else {
                continue;
            };
            if c.w_tid == NONE {
                uninit = uninit.or(Some(o));
            } else if c.w_tid != ATOMIC && unordered(c.w_tid - 1, c.w_epoch, c.w_wep, s) {
                return Err(Hazard::WriteAfterWrite {
                    offset: o,
                    other: Some(c.w_tid - 1),
                    other_pc: c.w_pc,
                });
            }
            *c = Cell {
                w_tid: ATOMIC,
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
    }
}
