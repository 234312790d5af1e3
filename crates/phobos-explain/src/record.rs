//! The recording observer: copies what the simulator reports about the
//! picked CTAs' warp instructions into owned events, with limits so a long
//! kernel cannot exhaust memory. It interprets nothing; `steps.rs` does.

use phobos_sim::{AccessKind as SimKind, Observer, OpKind, Space as SimSpace, StepInfo};
use std::collections::BTreeMap;

/// One memory access by one thread.
#[derive(Clone, Debug, PartialEq)]
pub struct RawAccess {
    pub thread: u32,
    pub space: RawSpace,
    pub write: bool,
    /// An atomic (`write` is set too: it writes what it reads).
    pub atomic: bool,
    pub addr: u64,
    pub bytes: u32,
    /// The simulator's buffer index for global accesses.
    pub buffer: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawSpace {
    Global,
    Shared,
    Local,
}

/// One warp instruction executed by a recorded CTA.
#[derive(Clone, Debug, PartialEq)]
pub struct RawEvent {
    pub warp: u32,
    pub active: u32,
    pub pc: u32,
    /// Source line from the nearest `.loc`, if any.
    pub line: Option<u32>,
    pub accesses: Vec<RawAccess>,
    pub shuffles: Vec<(u32, u32)>,
    pub barrier: bool,
    pub shuffle: bool,
}

/// The events of one CTA, in execution order.
#[derive(Clone, Debug, Default)]
pub struct CtaEvents {
    pub cta: u32,
    pub cta_id: [u32; 3],
    pub events: Vec<RawEvent>,
    /// True when the event limit was reached and later events were dropped.
    pub truncated: bool,
}

/// Records the CTAs it was asked for, up to `max_events` events each.
pub struct Recorder {
    wanted: Vec<u32>,
    max_events: usize,
    /// Events per CTA index.
    pub ctas: BTreeMap<u32, CtaEvents>,
    /// PTX opcode text per pc.
    pub opcodes: BTreeMap<u32, String>,
}

impl Recorder {
    pub fn new(wanted: Vec<u32>, max_events: usize) -> Recorder {
        Recorder {
            wanted,
            max_events,
            ctas: BTreeMap::new(),
            opcodes: BTreeMap::new(),
        }
    }
}

impl Observer for Recorder {
    fn wants_cta(&mut self, cta: u32) -> bool {
        self.wanted.contains(&cta)
    }

    fn step(&mut self, info: &StepInfo<'_>) {
        if !self.wanted.contains(&info.cta) {
            return;
        }
        let entry = self.ctas.entry(info.cta).or_insert_with(|| CtaEvents {
            cta: info.cta,
            cta_id: info.cta_id,
            ..CtaEvents::default()
        });
        if entry.events.len() >= self.max_events {
            entry.truncated = true;
            return;
        }
        let pc = info.pc as u32;
        self.opcodes
            .entry(pc)
            .or_insert_with(|| info.opcode.to_string());
        let accesses = info
            .accesses
            .iter()
            .filter_map(|a| {
                let space = match a.space {
                    SimSpace::Global => RawSpace::Global,
                    SimSpace::Shared => RawSpace::Shared,
                    SimSpace::Local => RawSpace::Local,
                    SimSpace::Param => return None,
                };
                Some(RawAccess {
                    thread: a.thread,
                    space,
                    write: a.kind != SimKind::Load,
                    atomic: a.kind == SimKind::Atomic,
                    addr: a.addr,
                    bytes: a.bytes,
                    buffer: a.buffer,
                })
            })
            .collect();
        entry.events.push(RawEvent {
            warp: info.warp,
            active: info.active,
            pc,
            line: info.loc.map(|(_, line, _)| line),
            accesses,
            shuffles: info.shuffles.to_vec(),
            barrier: info.kind == OpKind::Barrier,
            shuffle: info.kind == OpKind::Shuffle,
        });
    }
}
