//! Warpgroup matrix multiply-accumulate (sm_90a): `wgmma.fence`,
//! `wgmma.commit_group`, `wgmma.wait_group` and `wgmma.mma_async`, as the
//! PTX ISA's "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"
//! chapter defines them.
//!
//! **Warpgroups.** A warpgroup is 4 consecutive warps (warp index / 4); it
//! computes D (64×N) = A (64×K) · B (K×N) + D. Warp `w % 4` of the group
//! owns rows `16 (w % 4) .. + 15` of A and D, so every warp's share of the
//! product needs only its own registers, its own 16 rows of A and all of
//! B: the simulator runs each warp's share when that warp executes the
//! instruction, and checks separately that all 4 warps execute the same
//! sequence of `.sync.aligned` wgmma instructions (`GroupSeq`).
//!
//! **Register fragments** (per warp, `g = lane / 4`, `t = lane % 4`):
//! - D with f32 or s32 elements, N/2 registers: register `i` holds row
//!   `g + 8 ((i / 2) % 2)`, column `8 (i / 4) + 2t + i % 2` — the
//!   m16n8 accumulator layout repeated along N;
//! - D with f16 elements, N/4 `.f16x2` registers: register `r` element `j`
//!   holds row `g + 8 (r % 2)`, column `8 (r / 2) + 2t + j`;
//! - A from registers (4 registers of 16 rows × K): the `mma.m16n8kK` A
//!   layout of `tensor::a_coord` (2 elements per register for f16/bf16,
//!   1 for tf32, 4 for e4m3/e5m2/s8/u8).
//!
//! **Matrix descriptors** (64 bits): start address bits 0–13, leading
//! dimension byte offset (LBO) bits 16–29, stride dimension byte offset
//! (SBO) bits 32–45 (each in 16-byte units), base offset bits 49–51,
//! swizzle bits 62–63 (0 none, 1 128B, 2 64B, 3 32B). The operand is made
//! of 16-byte chunks (T = 16 / element bytes elements along the contiguous
//! dimension); with W = swizzle bytes / 16 (1 without swizzle), element
//! (mn, k) of a K-major operand (A not transposed, B not transposed) is at
//! - no swizzle: `start + (mn % 8)·16 + (mn / 8)·SBO + (k / T)·LBO`,
//! - swizzled: `start + (mn % 8)·16W + (mn / 8)·SBO + (k / T)·16`,
//!
//! and of an MN-major one (`imm-trans` 1, f16/bf16 only) at
//! - no swizzle: `start + (mn / T)·SBO + (k % 8)·16 + (k / 8)·LBO`,
//! - swizzled: `start + ((mn % TW) / T)·16 + (mn / TW)·LBO + (k % 8)·16W
//!   + (k / 8)·SBO`,
//!
//! plus `(index along the contiguous dimension % T)·bytes` (CUTLASS's
//! `make_gmma_desc` comments give the same canonical layouts). The swizzle
//! then XORs address bits [4, 4 + b) with bits [7, 7 + b) (b = 3, 2, 1 for
//! 128B, 64B, 32B), counting the rows from the pattern's start: bits 7.. of
//! the address minus the base offset. With base offset 0 the start address
//! must lie in the first 128 bytes of a pattern (a 1024-, 512- or 256-byte
//! boundary), as CUTLASS's `make_gmma_desc` asserts.
//!
//! **Asynchrony.** `wgmma.mma_async` reads its descriptors, `scale-d` and
//! A registers when issued and validates every address; the shared operands
//! are read, the product computed (exact products summed in f64 with D,
//! rounded once) and D written when a `wgmma.wait_group` retires the
//! instruction's group, the latest moment the ISA allows. Meanwhile:
//! - a write to a shared byte an in-flight wgmma reads is a racecheck error
//!   (the async-proxy fence check is [`async_proxy_read`], over
//!   `bulk::async_proxy_read`);
//! - an ordinary instruction that reads or writes a register an in-flight
//!   wgmma uses (accumulator or A fragment) is a racecheck error;
//! - a wgmma whose accumulator or A registers an ordinary instruction read
//!   or wrote since the warp's last `wgmma.fence`, or a wgmma before the
//!   warp's first `wgmma.fence`, is a racecheck error (the ISA requires the
//!   fence; accumulator accesses by other wgmmas need none);
//! - warps of a warpgroup that do not execute the same wgmma instructions
//!   (or a warpgroup with fewer than 4 warps) are a synccheck error.

use crate::checks::Fault;
use crate::decode::{unsupported, Decoder, Op, PredSrc, Slot, Ty};
use crate::error::{CheckKind, SimError};
use crate::launch::{CtaState, Ctx};
use crate::observer::{Access, AccessKind, Space};
use crate::parse::{parse_uint, RawInst, RawOperand};
use crate::tensor::a_coord;
use crate::warp::Warp;
use std::collections::VecDeque;

/// An operand element type of `wgmma.mma_async`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WgElem {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
    S8,
    U8,
}

impl WgElem {
    fn parse(s: &str) -> Option<WgElem> {
        Some(match s {
            "f16" => WgElem::F16,
            "bf16" => WgElem::Bf16,
            "tf32" => WgElem::Tf32,
            "e4m3" => WgElem::E4m3,
            "e5m2" => WgElem::E5m2,
            "s8" => WgElem::S8,
            "u8" => WgElem::U8,
            _ => return None,
        })
    }

    pub(crate) fn bytes(self) -> u32 {
        match self {
            WgElem::F16 | WgElem::Bf16 => 2,
            WgElem::Tf32 => 4,
            WgElem::E4m3 | WgElem::E5m2 | WgElem::S8 | WgElem::U8 => 1,
        }
    }

    /// The K of the instruction shape: 32 bytes of each row.
    fn k(self) -> u32 {
        32 / self.bytes()
    }

    fn is_fp8(self) -> bool {
        matches!(self, WgElem::E4m3 | WgElem::E5m2)
    }

    fn is_int(self) -> bool {
        matches!(self, WgElem::S8 | WgElem::U8)
    }

    /// The element of `bytes` bits (little-endian), as f64.
    fn value(self, bits: u32) -> f64 {
        match self {
            WgElem::F16 => half::f16::from_bits(bits as u16).to_f64(),
            WgElem::Bf16 => half::bf16::from_bits(bits as u16).to_f64(),
            // The tensor cores ignore a tf32 operand's low 13 bits.
            WgElem::Tf32 => f64::from(f32::from_bits(bits & 0xFFFF_E000)),
            WgElem::E4m3 => crate::numeric::F8::E4m3.value(bits as u8),
            WgElem::E5m2 => crate::numeric::F8::E5m2.value(bits as u8),
            WgElem::S8 => f64::from(bits as u8 as i8),
            WgElem::U8 => f64::from(bits as u8),
        }
    }
}

/// The accumulator type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WgAcc {
    F32,
    F16,
    S32,
}

/// Where A comes from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum WgA {
    Desc(Slot),
    Regs(Vec<Slot>),
}

/// `scale-d`: a predicate or an immediate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ScaleD {
    Pred(PredSrc),
    Imm(bool),
}

/// A decoded `wgmma.mma_async.sync.aligned.m64nNkK.dtype.atype.btype`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WgmmaInst {
    pub n: u32,
    pub a_ty: WgElem,
    pub b_ty: WgElem,
    pub d_ty: WgAcc,
    pub d: Vec<Slot>,
    /// The accumulator registers' names, for reports.
    pub d_names: Vec<String>,
    pub a: WgA,
    pub b: Slot,
    pub scale_d: ScaleD,
    pub neg_a: bool,
    pub neg_b: bool,
    pub trans_a: bool,
    pub trans_b: bool,
    /// Integer sums clamp to s32 instead of wrapping.
    pub satfinite: bool,
}

impl WgmmaInst {
    fn k(&self) -> u32 {
        self.a_ty.k()
    }

    /// Whether `s` is one of the registers the instruction accesses
    /// asynchronously (accumulators and A fragment).
    fn uses(&self, s: Slot) -> bool {
        self.d.contains(&s) || matches!(&self.a, WgA::Regs(r) if r.contains(&s))
    }
}

fn int_operand(o: &RawOperand) -> Option<i64> {
    match o {
        RawOperand::Word {
            text,
            negated: false,
        } => parse_uint(text).map(|v| v as i64),
        RawOperand::Neg(text) => parse_uint(text).map(|v| -(v as i64)),
        _ => None,
    }
}

impl Decoder {
    /// `wgmma.fence`, `wgmma.commit_group`, `wgmma.wait_group N` and
    /// `wgmma.mma_async`.
    pub(crate) fn wgmma(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let count = |n: usize| {
            if ops.len() == n {
                Ok(())
            } else {
                Err(SimError::parse(
                    line,
                    format!("`{}` takes {n} operands, found {}", i.opcode, ops.len()),
                ))
            }
        };
        let mask = self.konst(0xFFFF_FFFF);
        match mods {
            ["fence", "sync", "aligned"] => {
                count(0)?;
                return Ok(Op::WgmmaFence { mask });
            }
            ["commit_group", "sync", "aligned"] => {
                count(0)?;
                return Ok(Op::WgmmaCommit { mask });
            }
            ["wait_group", "sync", "aligned"] => {
                count(1)?;
                let keep = ops
                    .first()
                    .and_then(int_operand)
                    .and_then(|v| u32::try_from(v).ok())
                    .ok_or_else(|| {
                        SimError::parse(line, "wgmma.wait_group needs an integer constant")
                    })?;
                return Ok(Op::WgmmaWait { keep, mask });
            }
            _ => {}
        }
        let bad = || unsupported(&i.opcode, line);
        let (shape, satfinite, d, a, b) = match mods {
            ["mma_async", "sync", "aligned", shape, d, a, b] => (shape, false, d, a, b),
            ["mma_async", "sync", "aligned", shape, "satfinite", d, a, b] => (shape, true, d, a, b),
            _ => return Err(bad()),
        };
        let a_ty = WgElem::parse(a).ok_or_else(bad)?;
        let b_ty = WgElem::parse(b).ok_or_else(bad)?;
        let d_ty = match *d {
            "f32" => WgAcc::F32,
            "f16" => WgAcc::F16,
            "s32" => WgAcc::S32,
            _ => return Err(bad()),
        };
        let (n, k) = shape
            .strip_prefix("m64n")
            .and_then(|s| s.split_once('k'))
            .and_then(|(n, k)| Some((n.parse::<u32>().ok()?, k.parse::<u32>().ok()?)))
            .ok_or_else(bad)?;
        let why = |m: String| SimError::parse(line, format!("`{}`: {m}", i.opcode));
        let types_ok = match a_ty {
            WgElem::F16 => b_ty == WgElem::F16,
            WgElem::Bf16 | WgElem::Tf32 => b_ty == a_ty && d_ty == WgAcc::F32,
            WgElem::E4m3 | WgElem::E5m2 => b_ty.is_fp8() && d_ty != WgAcc::S32,
            WgElem::S8 | WgElem::U8 => b_ty.is_int() && d_ty == WgAcc::S32,
        } && (a_ty.is_int() || d_ty != WgAcc::S32);
        if !types_ok {
            return Err(why(format!(
                "types {a}×{b} → {d} are not a wgmma.mma_async form (f16×f16 → f16/f32, bf16×bf16 → f32, tf32×tf32 → f32, e4m3/e5m2×e4m3/e5m2 → f16/f32, s8/u8×s8/u8 → s32)"
            )));
        }
        if satfinite && !a_ty.is_int() {
            return Err(why(
                ".satfinite is an integer wgmma.mma_async modifier".into()
            ));
        }
        // Integer shapes skip N = 40 and 56 and, above 32, go in steps of 16.
        let n_ok = n > 0 && n <= 256 && n % 8 == 0 && (!a_ty.is_int() || n <= 32 || n % 16 == 0);
        if k != a_ty.k() || !n_ok {
            return Err(why(format!(
                "shape {shape} is not a wgmma.mma_async shape for .{a}: m64nNk{} with N {}",
                a_ty.k(),
                if a_ty.is_int() {
                    "8, 16, 24, 32, or a multiple of 16 up to 256"
                } else {
                    "a multiple of 8 from 8 to 256"
                }
            )));
        }
        // d, a, b-desc, scale-d[, imm-scale-a, imm-scale-b[, imm-trans-a], imm-trans-b]
        let a_regs = matches!(ops.get(1), Some(RawOperand::Vector(_)));
        let transposable = matches!(a_ty, WgElem::F16 | WgElem::Bf16);
        let want = if a_ty.is_int() {
            4
        } else {
            6 + usize::from(transposable) * (2 - usize::from(a_regs))
        };
        count(want)?;
        let d_regs = match d_ty {
            WgAcc::F32 | WgAcc::S32 => n / 2,
            WgAcc::F16 => n / 4,
        } as usize;
        let d_names = match &ops[0] {
            RawOperand::Vector(items) => items.clone(),
            _ => Vec::new(),
        };
        let d = self.reg_list(&ops[0], d_regs, true, line)?;
        let a = if a_regs {
            WgA::Regs(self.reg_list(&ops[1], 4, false, line)?)
        } else {
            WgA::Desc(self.src(&ops[1], Ty::B64, line)?)
        };
        let b = self.src(&ops[2], Ty::B64, line)?;
        let scale_d = match &ops[3] {
            RawOperand::Word { text, negated } => match parse_uint(text) {
                Some(v) if !negated && v <= 1 => ScaleD::Imm(v == 1),
                Some(_) => return Err(why("scale-d is a predicate or 0 or 1".into())),
                None => ScaleD::Pred(PredSrc {
                    id: self.pred(text, line)?,
                    neg: *negated,
                }),
            },
            _ => return Err(why("scale-d is a predicate or 0 or 1".into())),
        };
        let scale = |o: &RawOperand, what: &str| match int_operand(o) {
            Some(1) => Ok(false),
            Some(-1) => Ok(true),
            _ => Err(why(format!("{what} is the immediate 1 or -1"))),
        };
        let (neg_a, neg_b) = if a_ty.is_int() {
            (false, false)
        } else {
            (
                scale(&ops[4], "imm-scale-a")?,
                scale(&ops[5], "imm-scale-b")?,
            )
        };
        let trans = |o: &RawOperand, what: &str| match int_operand(o) {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => Err(why(format!("{what} is the immediate 0 or 1"))),
        };
        let (trans_a, trans_b) = match (transposable, a_regs) {
            (false, _) => (false, false),
            (true, true) => (false, trans(&ops[6], "imm-trans-b")?),
            (true, false) => (
                trans(&ops[6], "imm-trans-a")?,
                trans(&ops[7], "imm-trans-b")?,
            ),
        };
        self.wgmmas.push(WgmmaInst {
            n,
            a_ty,
            b_ty,
            d_ty,
            d,
            d_names,
            a,
            b,
            scale_d,
            neg_a,
            neg_b,
            trans_a,
            trans_b,
            satfinite,
        });
        Ok(Op::Wgmma {
            idx: (self.wgmmas.len() - 1) as u32,
            mask,
        })
    }
}

/// A decoded matrix descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Desc {
    pub start: u32,
    pub lbo: u32,
    pub sbo: u32,
    pub base: u32,
    /// Swizzle width in bytes: 0 (none), 32, 64 or 128.
    pub swizzle: u32,
}

impl Desc {
    pub(crate) fn decode(v: u64) -> Desc {
        let field = |lo: u32| (((v >> lo) & 0x3FFF) as u32) << 4;
        Desc {
            start: field(0),
            lbo: field(16),
            sbo: field(32),
            base: ((v >> 49) & 7) as u32,
            swizzle: match v >> 62 {
                1 => 128,
                2 => 64,
                3 => 32,
                _ => 0,
            },
        }
    }

    /// `b` of the swizzle (bits XORed): 3, 2, 1, or 0 without swizzle.
    fn bits(&self) -> u32 {
        match self.swizzle {
            128 => 3,
            64 => 2,
            32 => 1,
            _ => 0,
        }
    }

    /// The swizzled address of a 16-byte chunk at linear address `addr`.
    pub(crate) fn swizzle(&self, addr: u32) -> u32 {
        let bits = self.bits();
        if bits == 0 {
            return addr;
        }
        let phase = ((addr >> 7).wrapping_sub(self.base)) & ((1 << bits) - 1);
        addr ^ (phase << 4)
    }

    /// The byte address of element (`mn`, `k`) of an operand with
    /// `bytes`-byte elements, K-major unless `mn_major`.
    pub(crate) fn element(&self, mn: u32, k: u32, bytes: u32, mn_major: bool) -> u32 {
        let t = 16 / bytes;
        let w = (self.swizzle / 16).max(1);
        let (chunk, inner) = match (mn_major, self.swizzle) {
            (false, 0) => (
                (mn % 8) * 16 + (mn / 8) * self.sbo + (k / t) * self.lbo,
                k % t,
            ),
            (false, _) => (
                (mn % 8) * 16 * w + (mn / 8) * self.sbo + (k / t) * 16,
                k % t,
            ),
            (true, 0) => (
                (mn / t) * self.sbo + (k % 8) * 16 + (k / 8) * self.lbo,
                mn % t,
            ),
            (true, _) => (
                ((mn % (t * w)) / t) * 16
                    + (mn / (t * w)) * self.lbo
                    + (k % 8) * 16 * w
                    + (k / 8) * self.sbo,
                mn % t,
            ),
        };
        self.swizzle(self.start.wrapping_add(chunk)) + inner * bytes
    }

    fn describe(&self, raw: u64) -> String {
        format!(
            "descriptor {raw:#018x}: start {:#x}, leading byte offset {}, stride byte offset {}, base offset {}, {}",
            self.start,
            self.lbo,
            self.sbo,
            self.base,
            match self.swizzle {
                0 => "no swizzle".to_string(),
                s => format!("{s}-byte swizzle"),
            }
        )
    }
}

/// The async-proxy check (`fence.proxy.async`) of every shared chunk
/// `[off, off + 16)` a `wgmma.mma_async` reads, when it is issued, by the
/// warp that issues it (reported for its lane 0): a generic-proxy write
/// read by the async proxy needs a `fence.proxy.async` in its writer
/// between them, and no bulk copy may still be writing the bytes
/// (`bulk::async_proxy_read`, the one owner of that state).
pub(crate) fn async_proxy_read(
    warp: &Warp,
    (off, pc): (u32, u32),
    cx: &Ctx,
    cta: &mut CtaState,
) -> Result<(), Fault> {
    crate::bulk::async_proxy_read(
        cx,
        cta,
        (0, warp.first_tid, pc),
        (off, 16),
        "wgmma.mma_async",
    )
}

/// One `wgmma.mma_async` issued by a warp and not yet retired.
#[derive(Clone, Debug)]
struct Pending {
    pc: u32,
    idx: u32,
    /// The warp's group number once committed.
    group: Option<u32>,
    scale_d: bool,
    /// A (16 rows × K, row-major) from registers, or the byte addresses
    /// of its elements in shared memory.
    a_vals: Option<Vec<f64>>,
    a_addrs: Vec<u32>,
    /// Byte addresses of B's elements (K × N, row-major).
    b_addrs: Vec<u32>,
    /// The 16-byte chunks it reads, sorted, without repeats.
    chunks: Vec<u32>,
}

/// A warp's wgmma state.
#[derive(Default)]
struct WarpWg {
    pending: Vec<Pending>,
    committed: u32,
    /// Per slot: in-flight wgmmas that use it.
    inflight: Vec<u16>,
    /// Per slot: the instruction that last read or wrote it since the
    /// last `wgmma.fence` (`u32::MAX`: none).
    dirty: Vec<u32>,
    /// The warp has executed a `wgmma.fence`.
    fenced: bool,
    /// `.sync.aligned` wgmma instructions executed.
    seq: u64,
}

/// The sequence of `.sync.aligned` wgmma instructions of a warpgroup that
/// not all of its warps have executed yet: (pc, A and B descriptors).
#[derive(Default)]
struct GroupSeq {
    base: u64,
    insts: VecDeque<(u32, u64, u64)>,
}

/// A CTA's wgmma state.
#[derive(Default)]
pub(crate) struct WgmmaState {
    /// The entry has wgmma instructions: track registers.
    pub on: bool,
    warps: Vec<WarpWg>,
    groups: Vec<GroupSeq>,
    /// Per shared byte: in-flight wgmmas reading it.
    reading: Vec<u16>,
    /// Per slot: used asynchronously by some wgmma of the entry.
    watched: Vec<bool>,
    /// Whether the launch's entry has wgmma instructions, once known.
    has_wgmma: Option<bool>,
}

impl WgmmaState {
    /// Prepares the state for a CTA of `cx`'s launch.
    pub(crate) fn reset(&mut self, cx: &Ctx) {
        let e = cx.entry;
        // A worker's state lives for one launch: scan the entry once.
        self.on = *self.has_wgmma.get_or_insert_with(|| {
            !e.wgmmas.is_empty()
                || e.insts.iter().any(|i| {
                    matches!(
                        i.op,
                        Op::WgmmaFence { .. } | Op::WgmmaCommit { .. } | Op::WgmmaWait { .. }
                    )
                })
        });
        self.warps.clear();
        self.groups.clear();
        self.reading.clear();
        if !self.on {
            return;
        }
        let n = e.n_slots as usize;
        self.watched.clear();
        self.watched.resize(n, false);
        for m in &e.wgmmas {
            for &s in m.d.iter().chain(match &m.a {
                WgA::Regs(r) => r.iter(),
                WgA::Desc(_) => [].iter(),
            }) {
                if let Some(w) = self.watched.get_mut(s as usize) {
                    *w = true;
                }
            }
        }
        for _ in 0..cx.n_warps {
            self.warps.push(WarpWg {
                inflight: vec![0; n],
                dirty: vec![u32::MAX; n],
                ..WarpWg::default()
            });
        }
        self.groups
            .resize_with(cx.n_warps.div_ceil(4) as usize, GroupSeq::default);
        self.reading.resize(cx.shared_size, 0);
    }

    /// The in-flight wgmma of any warp that reads a byte of `[off, off + len)`.
    fn reader(&self, off: u32, len: u32) -> Option<(usize, &Pending)> {
        let end = (off as usize + len as usize).min(self.reading.len());
        if !self.reading[(off as usize).min(end)..end]
            .iter()
            .any(|&c| c != 0)
        {
            return None;
        }
        for (w, ww) in self.warps.iter().enumerate() {
            for p in &ww.pending {
                let hit = p
                    .chunks
                    .iter()
                    .any(|&c| c < off + len && off < c.saturating_add(16));
                if hit {
                    return Some((w, p));
                }
            }
        }
        None
    }
}

/// Calls `f(slot, written)` for every register an ordinary instruction
/// reads or writes.
fn op_slots(op: &Op, cx: &Ctx, f: &mut impl FnMut(Slot, bool)) {
    use crate::decode::IntOp as I;
    let base = |a: &crate::decode::Addr, f: &mut dyn FnMut(Slot, bool)| {
        if let Some(b) = a.base {
            f(b, false);
        }
    };
    match *op {
        Op::Mov { d, a, .. }
        | Op::AddImm { d, a, .. }
        | Op::Cvt { d, a, .. }
        | Op::CvtTf32 { d, a } => {
            f(a, false);
            f(d, true);
        }
        Op::CvtF8Pack { d, a, b, .. } => {
            f(a, false);
            f(b, false);
            f(d, true);
        }
        Op::CvtF8Unpack { d, a, .. } => {
            f(a, false);
            f(d, true);
        }
        Op::Pack { d, srcs, n, .. } => {
            srcs.iter().take(n as usize).for_each(|&s| f(s, false));
            f(d, true);
        }
        Op::Unpack { ds, n, a, .. } => {
            f(a, false);
            ds.iter().take(n as usize).for_each(|&s| f(s, true));
        }
        Op::LoopStep { d, a, b } | Op::CvtPack { d, a, b, .. } | Op::Selp { d, a, b, .. } => {
            f(a, false);
            f(b, false);
            f(d, true);
        }
        Op::Int { op, d, s, .. } => {
            let n = match op {
                I::Neg | I::Abs | I::Not | I::Cnot | I::Popc | I::Clz | I::Brev => 1,
                I::MadLo | I::MadHi | I::MadWide | I::Bfe | I::Prmt => 3,
                I::Dp4a { .. } | I::Dp2a { .. } => 3,
                I::Bfi => 4,
                _ => 2,
            };
            s.iter().take(n).for_each(|&x| f(x, false));
            f(d, true);
        }
        Op::Float { op, d, s, .. } => {
            use crate::decode::FloatOp as F;
            let n = match op {
                F::Fma => 3,
                F::Add | F::Sub | F::Mul | F::Div | F::Min | F::Max => 2,
                _ => 1,
            };
            s.iter().take(n).for_each(|&x| f(x, false));
            f(d, true);
        }
        Op::Setp { a, b, .. } => {
            f(a, false);
            f(b, false);
        }
        Op::Ld { n, ds, addr, .. } => {
            base(&addr, f);
            ds.iter().take(n as usize).for_each(|&s| f(s, true));
        }
        Op::St { n, srcs, addr, .. } => {
            base(&addr, f);
            srcs.iter().take(n as usize).for_each(|&s| f(s, false));
        }
        Op::Atom {
            op, d, addr, b, c, ..
        } => {
            base(&addr, f);
            f(b, false);
            if op == crate::decode::AtomOp::Cas {
                f(c, false);
            }
            f(d, true);
        }
        Op::Shfl {
            d, a, b, c, mask, ..
        } => {
            for s in [a, b, c, mask] {
                f(s, false);
            }
            f(d, true);
        }
        Op::Vote { mode, d, mask, .. } => {
            f(mask, false);
            if mode == crate::decode::VoteMode::Ballot {
                f(d, true);
            }
        }
        Op::WarpSync { mask } => f(mask, false),
        Op::Ldmatrix { num, ds, addr, .. } => {
            base(&addr, f);
            ds.iter().take(num as usize).for_each(|&s| f(s, true));
        }
        Op::Elect { d, mask, .. } => {
            f(mask, false);
            f(d, true);
        }
        Op::Tma { idx, .. } => {
            if let Some(t) = cx.entry.tma.get(idx as usize) {
                t.slots(&mut |s, w| f(s, w));
            }
        }
        Op::Mma { idx, .. } => {
            if let Some(m) = cx.entry.mmas.get(idx as usize) {
                m.a.iter()
                    .chain(&m.b)
                    .chain(&m.c)
                    .for_each(|&s| f(s, false));
                m.d.iter().for_each(|&s| f(s, true));
            }
        }
        Op::CpAsync {
            src_size, dst, src, ..
        } => {
            base(&dst, f);
            base(&src, f);
            if let Some(s) = src_size {
                f(s, false);
            }
        }
        Op::PredBool { .. }
        | Op::PredConst { .. }
        | Op::Bra { .. }
        | Op::Exit
        | Op::Bar
        | Op::CpAsyncCommit
        | Op::CpAsyncWait { .. }
        | Op::WgmmaFence { .. }
        | Op::WgmmaCommit { .. }
        | Op::WgmmaWait { .. }
        | Op::Wgmma { .. }
        | Op::Nop => {}
    }
}

/// The name of accumulator or A register `s` of wgmma `idx`, for reports.
fn reg_name(cx: &Ctx, idx: u32, s: Slot) -> String {
    cx.entry
        .wgmmas
        .get(idx as usize)
        .and_then(|m| {
            m.d.iter()
                .position(|&x| x == s)
                .and_then(|i| m.d_names.get(i).cloned())
        })
        .unwrap_or_else(|| "an A-fragment register".to_string())
}

impl Warp {
    fn group_warps(&self, cx: &Ctx) -> (u32, u32) {
        let g = self.index / 4;
        (g, (cx.n_warps - 4 * g).min(4))
    }

    /// Register hazards of an ordinary instruction `op` against the warp's
    /// in-flight wgmmas, and the fence bookkeeping for its writes.
    pub(crate) fn wgmma_registers(
        &self,
        op: &Op,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        if !cx.checks {
            return Ok(());
        }
        let st = &mut cta.wgmma;
        let Some(ww) = st.warps.get_mut(self.index as usize) else {
            return Ok(());
        };
        let watched = &st.watched;
        let mut hit: Option<(Slot, bool)> = None;
        op_slots(op, cx, &mut |s, write| {
            if !watched.get(s as usize).copied().unwrap_or(false) {
                return;
            }
            if hit.is_none() && ww.inflight[s as usize] != 0 {
                hit = Some((s, write));
            }
            ww.dirty[s as usize] = pc;
        });
        let Some((s, write)) = hit else {
            return Ok(());
        };
        let p = ww
            .pending
            .iter()
            .find(|p| cx.entry.wgmmas[p.idx as usize].uses(s));
        let (wpc, idx) = p.map_or((0, 0), |p| (p.pc, p.idx));
        let mut f = Fault::new(
            CheckKind::Racecheck,
            format!(
                "{} register {} while the wgmma.mma_async that uses it is in flight",
                if write { "write of" } else { "read of" },
                reg_name(cx, idx, s)
            ),
        );
        f.lane = Some(active.trailing_zeros());
        f.notes.push(format!(
            "the wgmma.mma_async at {} accesses it asynchronously until a wgmma.wait_group retires its group; wait first",
            cx.where_is(wpc)
        ));
        Err(f)
    }

    /// The warpgroup convergence check: the warp's next `.sync.aligned`
    /// wgmma instruction must be the one its group's other warps executed
    /// at the same position.
    fn wgmma_converge(
        &mut self,
        pc: u32,
        descs: (u64, u64),
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let (g, warps) = self.group_warps(cx);
        if warps < 4 {
            return Err(Fault::new(
                CheckKind::Synccheck,
                format!(
                    "{} executed by warpgroup {g}, which has only {warps} warp{} (the CTA has {} threads): a warpgroup is 4 warps, 128 threads",
                    cx.entry.info[pc as usize].opcode,
                    if warps == 1 { "" } else { "s" },
                    cx.threads_per_cta
                ),
            ));
        }
        if !cx.checks {
            return Ok(());
        }
        let st = &mut cta.wgmma;
        let seq = st.warps[self.index as usize].seq;
        st.warps[self.index as usize].seq += 1;
        let gs = &mut st.groups[g as usize];
        let i = (seq - gs.base) as usize;
        if let Some(&(opc, da, db)) = gs.insts.get(i) {
            if opc != pc {
                let mut f = Fault::new(
                    CheckKind::Synccheck,
                    format!(
                        "warp {} of warpgroup {g} executes {} where another warp of its warpgroup executed {} at {}: every warp of a warpgroup must execute the same .sync.aligned wgmma instructions",
                        self.index % 4,
                        cx.entry.info[pc as usize].opcode,
                        cx.entry.info[opc as usize].opcode,
                        cx.where_is(opc)
                    ),
                );
                f.notes.push(format!(
                    "it is the warp's wgmma instruction number {}",
                    seq + 1
                ));
                return Err(f);
            }
            if (da, db) != descs {
                return Err(Fault::new(
                    CheckKind::Synccheck,
                    format!(
                        "warp {} of warpgroup {g} passes descriptors ({:#x}, {:#x}) where another warp of its warpgroup passed ({da:#x}, {db:#x}): the PTX ISA requires a matrix descriptor to be the same across all the warps of the warpgroup",
                        self.index % 4,
                        descs.0,
                        descs.1
                    ),
                ));
            }
        } else {
            gs.insts.push_back((pc, descs.0, descs.1));
        }
        let first = (4 * g) as usize;
        let low = st.warps[first..first + 4]
            .iter()
            .map(|w| w.seq)
            .min()
            .unwrap_or(0);
        let gs = &mut st.groups[g as usize];
        while gs.base < low && !gs.insts.is_empty() {
            gs.insts.pop_front();
            gs.base += 1;
        }
        Ok(())
    }

    /// `wgmma.fence.sync.aligned`: orders the warp's earlier register
    /// accesses before the wgmmas that follow.
    pub(crate) fn wgmma_fence(
        &mut self,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        self.whole_warp(active, "wgmma.fence.sync.aligned")?;
        self.wgmma_converge(pc, (0, 0), cx, cta)?;
        if let Some(ww) = cta.wgmma.warps.get_mut(self.index as usize) {
            ww.dirty.fill(u32::MAX);
            ww.fenced = true;
        }
        Ok(())
    }

    /// `wgmma.commit_group.sync.aligned`: the warp's uncommitted wgmmas
    /// become its newest group (possibly empty).
    pub(crate) fn wgmma_commit(
        &mut self,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        self.whole_warp(active, "wgmma.commit_group.sync.aligned")?;
        self.wgmma_converge(pc, (0, 0), cx, cta)?;
        let ww = &mut cta.wgmma.warps[self.index as usize];
        ww.committed += 1;
        let g = ww.committed;
        for p in ww.pending.iter_mut().filter(|p| p.group.is_none()) {
            p.group = Some(g);
        }
        Ok(())
    }

    /// `wgmma.wait_group.sync.aligned keep`: retires every committed group
    /// but the newest `keep`, in issue order.
    pub(crate) fn wgmma_wait(
        &mut self,
        keep: u32,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        self.whole_warp(active, "wgmma.wait_group.sync.aligned")?;
        self.wgmma_converge(pc, (0, 0), cx, cta)?;
        let ww = &mut cta.wgmma.warps[self.index as usize];
        let last = ww.committed;
        let (done, rest): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut ww.pending)
            .into_iter()
            .partition(|p| p.group.is_some_and(|g| g + keep <= last));
        ww.pending = rest;
        for p in done {
            self.wgmma_retire(&p, cx, cta);
        }
        Ok(())
    }

    /// Runs a retired wgmma: reads its shared operands, computes the
    /// warp's 16 rows of D and writes them.
    fn wgmma_retire(&mut self, p: &Pending, cx: &Ctx, cta: &mut CtaState) {
        let m = &cx.entry.wgmmas[p.idx as usize];
        let (n, k) = (m.n as usize, m.k() as usize);
        let load = |shared: &[u8], addr: u32, ty: WgElem| {
            let o = addr as usize;
            let mut bits = 0u32;
            for i in 0..ty.bytes() as usize {
                bits |= u32::from(shared[o + i]) << (8 * i);
            }
            ty.value(bits)
        };
        let a: Vec<f64> = match &p.a_vals {
            Some(v) => v.clone(),
            None => p
                .a_addrs
                .iter()
                .map(|&x| load(&cta.shared, x, m.a_ty))
                .collect(),
        };
        let b: Vec<f64> = p
            .b_addrs
            .iter()
            .map(|&x| load(&cta.shared, x, m.b_ty))
            .collect();
        let sign = if m.neg_a != m.neg_b { -1.0 } else { 1.0 };
        let mut dv = vec![0f64; 16 * n];
        if p.scale_d {
            for l in 0..32u32 {
                for (r, &s) in m.d.iter().enumerate() {
                    let w = self.regs[s as usize * 32 + l as usize];
                    for j in 0..d_per_reg(m.d_ty) {
                        let (row, col) = d_coord(l, r as u32, j, m.d_ty);
                        dv[row as usize * n + col as usize] = match m.d_ty {
                            WgAcc::F32 => f64::from(f32::from_bits(w as u32)),
                            WgAcc::F16 => half::f16::from_bits((w >> (16 * j)) as u16).to_f64(),
                            WgAcc::S32 => f64::from(w as u32 as i32),
                        };
                    }
                }
            }
        }
        for row in 0..16 {
            for col in 0..n {
                let mut s = dv[row * n + col];
                for kk in 0..k {
                    s += sign * a[row * k + kk] * b[kk * n + col];
                }
                dv[row * n + col] = s;
            }
        }
        for l in 0..32u32 {
            for (r, &s) in m.d.iter().enumerate() {
                let mut w = 0u64;
                for j in 0..d_per_reg(m.d_ty) {
                    let (row, col) = d_coord(l, r as u32, j, m.d_ty);
                    let v = dv[row as usize * n + col as usize];
                    w |= match m.d_ty {
                        WgAcc::F32 => u64::from((v as f32).to_bits()),
                        WgAcc::F16 => u64::from(half::f16::from_f64(v).to_bits()) << (16 * j),
                        // Integer sums are exact in f64 (|D| < 2^31, 32
                        // products < 2^16 each); they wrap or clamp.
                        WgAcc::S32 if m.satfinite => {
                            u64::from((v as i64).clamp(i64::from(i32::MIN), i64::from(i32::MAX))
                                as i32 as u32)
                        }
                        WgAcc::S32 => u64::from(v as i64 as i32 as u32),
                    };
                }
                self.regs[s as usize * 32 + l as usize] = w;
            }
        }
        let st = &mut cta.wgmma;
        for &c in &p.chunks {
            let end = (c as usize + 16).min(st.reading.len());
            for b in &mut st.reading[(c as usize).min(end)..end] {
                *b = b.saturating_sub(1);
            }
        }
        let ww = &mut st.warps[self.index as usize];
        for &s in m.d.iter().chain(match &m.a {
            WgA::Regs(r) => r.iter(),
            WgA::Desc(_) => [].iter(),
        }) {
            ww.inflight[s as usize] = ww.inflight[s as usize].saturating_sub(1);
        }
    }

    /// A descriptor operand: the value every lane of the warp holds.
    fn wgmma_desc(&self, s: Slot, what: &str) -> Result<u64, Fault> {
        let row = &self.regs[s as usize * 32..s as usize * 32 + 32];
        if let Some(l) = row.iter().position(|&v| v != row[0]) {
            let mut f = Fault::new(
                CheckKind::Synccheck,
                format!(
                    "the {what} descriptor differs between lanes ({:#x} in lane 0, {:#x} in lane {l}): a matrix descriptor must be the same across the warpgroup (the PTX ISA requires it of its warps; the simulator of every thread)",
                    row[0], row[l]
                ),
            );
            f.lane = Some(l as u32);
            return Err(f);
        }
        Ok(row[0])
    }

    /// The byte addresses of a shared operand's elements, checked.
    #[allow(clippy::too_many_arguments)]
    fn wgmma_operand(
        &self,
        raw: u64,
        what: &str,
        (rows, cols): (std::ops::Range<u32>, u32),
        ty: WgElem,
        mn_major: bool,
        k_rows: bool,
        cx: &Ctx,
        cta: &CtaState,
    ) -> Result<Vec<u32>, Fault> {
        let d = Desc::decode(raw);
        let limit = cta.shared.len() as u64;
        if d.swizzle != 0 {
            let bits = d.bits();
            let phase = (d.start >> 7) & ((1 << bits) - 1);
            if d.base == 0 && phase != 0 {
                let mut f = Fault::new(
                    CheckKind::Memcheck,
                    format!(
                        "{what} {}: with base offset 0 a {}-byte swizzle pattern must start at a multiple of {} bytes, but the start address lies in its row {phase}",
                        d.describe(raw),
                        d.swizzle,
                        128u32 << bits
                    ),
                );
                f.lane = Some(0);
                f.notes.push(
                    "align the operand's shared buffer to the swizzle pattern, or give the pattern's start in the descriptor's base offset".into(),
                );
                return Err(f);
            }
        }
        let mut out = Vec::with_capacity(rows.len() * cols as usize);
        for r in rows {
            for c in 0..cols {
                // (mn, k) of the element at row r, column c of A (M × K)
                // or B (K × N).
                let (mn, k) = if k_rows { (c, r) } else { (r, c) };
                let addr = d.element(mn, k, ty.bytes(), mn_major);
                if u64::from(addr) + u64::from(ty.bytes()) > limit {
                    let mut f = cx.memcheck_at(
                        format!(
                            "{what} element ({}, {}) is at shared address {addr:#x}, outside the CTA's {limit} bytes of shared memory",
                            if k_rows { k } else { mn },
                            if k_rows { mn } else { k },
                        ),
                        0,
                        u64::from(addr),
                        Space::Shared,
                    );
                    f.notes.push(d.describe(raw));
                    return Err(f);
                }
                out.push(addr);
            }
        }
        Ok(out)
    }

    /// `wgmma.mma_async`: validates and records the warp's share; the
    /// product is computed when a `wgmma.wait_group` retires it.
    pub(crate) fn wgmma_issue(
        &mut self,
        idx: u32,
        active: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        self.whole_warp(active, "wgmma.mma_async.sync.aligned")?;
        let Some(m) = cx.entry.wgmmas.get(idx as usize) else {
            return Ok(());
        };
        let k = m.k();
        let b_raw = self.wgmma_desc(m.b, "B")?;
        let a_raw = match &m.a {
            WgA::Desc(s) => self.wgmma_desc(*s, "A")?,
            WgA::Regs(_) => 0,
        };
        self.wgmma_converge(pc, (a_raw, b_raw), cx, cta)?;
        let row0 = 16 * (self.index % 4);
        let (a_vals, a_addrs) = match &m.a {
            WgA::Desc(_) => (
                None,
                self.wgmma_operand(
                    a_raw,
                    "matrix A",
                    (row0..row0 + 16, k),
                    m.a_ty,
                    m.trans_a,
                    false,
                    cx,
                    cta,
                )?,
            ),
            WgA::Regs(regs) => {
                let e = 4 / m.a_ty.bytes();
                let mut v = vec![0f64; 16 * k as usize];
                for l in 0..32u32 {
                    for (r, &s) in regs.iter().enumerate() {
                        let w = self.regs[s as usize * 32 + l as usize] as u32;
                        for j in 0..e {
                            let (row, col) = a_coord(l, r as u32, j, e);
                            let bits = if e == 1 {
                                w
                            } else {
                                (w >> (j * 32 / e)) & ((1u32 << (32 / e)) - 1)
                            };
                            v[(row * k + col) as usize] = m.a_ty.value(bits);
                        }
                    }
                }
                (Some(v), Vec::new())
            }
        };
        let b_addrs = self.wgmma_operand(
            b_raw,
            "matrix B",
            (0..k, m.n),
            m.b_ty,
            m.trans_b,
            true,
            cx,
            cta,
        )?;
        let mut chunks: Vec<u32> = a_addrs.iter().chain(&b_addrs).map(|&x| x & !15).collect();
        chunks.sort_unstable();
        chunks.dedup();
        let scale_d = match m.scale_d {
            ScaleD::Imm(v) => v,
            ScaleD::Pred(p) => {
                let mask = self.pred_mask(p);
                let v = mask & 1 != 0;
                if mask != 0 && mask != u32::MAX {
                    let mut f = Fault::new(
                        CheckKind::Synccheck,
                        "scale-d differs between the lanes of the warp: it must be uniform",
                    );
                    f.lane = Some((mask ^ if v { u32::MAX } else { 0 }).trailing_zeros());
                    return Err(f);
                }
                v
            }
        };
        if cx.checks {
            let ww = &cta.wgmma.warps[self.index as usize];
            if !ww.fenced {
                let mut f = Fault::new(
                    CheckKind::Racecheck,
                    "wgmma.mma_async before the warp's first wgmma.fence",
                );
                f.lane = Some(0);
                f.notes.push("the PTX ISA requires every warp of the warpgroup to execute wgmma.fence before the warpgroup's first wgmma.mma_async".into());
                return Err(f);
            }
            let uses = m.d.iter().chain(match &m.a {
                WgA::Regs(r) => r.iter(),
                WgA::Desc(_) => [].iter(),
            });
            for &s in uses {
                let w = ww.dirty[s as usize];
                if w != u32::MAX {
                    let mut f = Fault::new(
                        CheckKind::Racecheck,
                        format!(
                            "wgmma.mma_async uses {} asynchronously, but {} accessed it after the warp's last wgmma.fence",
                            reg_name(cx, idx, s),
                            cx.where_is(w)
                        ),
                    );
                    f.lane = Some(0);
                    f.notes.push("the PTX ISA requires a wgmma.fence between any other access of a wgmma's accumulator or A registers and the wgmma.mma_async".into());
                    return Err(f);
                }
            }
            for &c in &chunks {
                async_proxy_read(self, (c, pc), cx, cta)?;
            }
            // The operands are read from here on: racecheck and initcheck
            // as a read by lane 0 of the warp.
            for &c in &chunks {
                self.wgmma_shadow_read(c, pc, cx, cta)?;
            }
        }
        if cta.observing {
            // The observer sees the operand reads at issue, as loads by
            // lane 0 of the warp.
            for &c in &chunks {
                cta.accesses.push(Access {
                    thread: self.first_tid,
                    space: Space::Shared,
                    kind: AccessKind::Load,
                    addr: u64::from(c),
                    bytes: 16,
                    buffer: None,
                });
            }
        }
        let st = &mut cta.wgmma;
        for &c in &chunks {
            let end = (c as usize + 16).min(st.reading.len());
            for b in &mut st.reading[(c as usize).min(end)..end] {
                *b = b.saturating_add(1);
            }
        }
        let ww = &mut st.warps[self.index as usize];
        for &s in m.d.iter().chain(match &m.a {
            WgA::Regs(r) => r.iter(),
            WgA::Desc(_) => [].iter(),
        }) {
            ww.inflight[s as usize] = ww.inflight[s as usize].saturating_add(1);
        }
        ww.pending.push(Pending {
            pc,
            idx,
            group: None,
            scale_d,
            a_vals,
            a_addrs,
            b_addrs,
            chunks,
        });
        Ok(())
    }

    fn wgmma_shadow_read(
        &self,
        off: u32,
        pc: u32,
        cx: &Ctx,
        cta: &mut CtaState,
    ) -> Result<(), Fault> {
        let st = self.stamp(0, cta.epoch, pc);
        let outcome = cta.shadow.read(off, 16, &st);
        cx.shadow_outcome(outcome, 0, u64::from(off), st.tid, pc, cta)
    }

    /// Racecheck for a write of shared `[off, off + len)` by lane `lane`
    /// of this warp: see [`in_flight_write`].
    pub(crate) fn wgmma_guard(
        &self,
        lane: usize,
        off: u32,
        len: u32,
        cx: &Ctx,
        cta: &CtaState,
    ) -> Result<(), Fault> {
        in_flight_write(lane, off, len, cx, cta)
    }
}

/// Racecheck for a write of shared `[off, off + len)` (by `lane` of the
/// faulting warp): bytes an in-flight wgmma reads must not change before
/// its `wgmma.wait_group`. Every writer of shared memory calls it (stores
/// and atomics through `Warp::async_guard`, `cp.async` landings, and a
/// TMA load when `bulk` issues it).
pub(crate) fn in_flight_write(
    lane: usize,
    off: u32,
    len: u32,
    cx: &Ctx,
    cta: &CtaState,
) -> Result<(), Fault> {
    if !cx.checks || !cta.wgmma.on {
        return Ok(());
    }
    let Some((w, p)) = cta.wgmma.reader(off, len) else {
        return Ok(());
    };
    let mut f = Fault::new(
        CheckKind::Racecheck,
        "write of shared memory that an in-flight wgmma.mma_async reads",
    )
    .at(lane, u64::from(off), Space::Shared);
    f.tensor = cx.region_name(Space::Shared, u64::from(off));
    f.notes.push(format!(
        "warp {w} issued the wgmma.mma_async at {}; its operands must not change until that warp's wgmma.wait_group retires it (and a barrier orders the wait before this write)",
        cx.where_is(p.pc)
    ));
    Err(f)
}

fn d_per_reg(t: WgAcc) -> u32 {
    match t {
        WgAcc::F32 | WgAcc::S32 => 1,
        WgAcc::F16 => 2,
    }
}

/// Row (within the warp's 16) and column of element `j` of accumulator
/// register `r` held by `lane`.
pub(crate) fn d_coord(lane: u32, r: u32, j: u32, t: WgAcc) -> (u32, u32) {
    let (g, tq) = (lane / 4, lane % 4);
    match t {
        WgAcc::F32 | WgAcc::S32 => (g + 8 * ((r / 2) % 2), 8 * (r / 4) + 2 * tq + r % 2),
        WgAcc::F16 => (g + 8 * (r % 2), 8 * (r / 2) + 2 * tq + j),
    }
}

/// At the CTA's end: every warp of each warpgroup executed as many
/// `.sync.aligned` wgmma instructions as the others.
pub(crate) fn cta_end(cx: &Ctx, cta: &mut CtaState, warps: &[Warp]) -> Result<(), SimError> {
    if !cta.wgmma.on || !cx.checks {
        return Ok(());
    }
    let st = &cta.wgmma;
    for (g, gs) in st.groups.iter().enumerate() {
        let ws = &st.warps[4 * g..(4 * g + 4).min(st.warps.len())];
        let max = ws.iter().map(|w| w.seq).max().unwrap_or(0);
        if let Some(lag) = ws.iter().position(|w| w.seq < max) {
            let seq = ws[lag].seq;
            let pc = gs.insts.get((seq - gs.base) as usize).map_or(0, |i| i.0);
            let f = Fault::new(
                CheckKind::Synccheck,
                format!(
                    "warp {lag} of warpgroup {g} ended after {seq} .sync.aligned wgmma instructions, where another warp of its warpgroup executed {max}: it never executed this {}",
                    cx.entry.info.get(pc as usize).map_or("", |i| i.opcode.as_str())
                ),
            );
            let tid = warps[4 * g + lag].first_tid;
            return Err(cx.report(cta, pc, tid, f));
        }
    }
    Ok(())
}
