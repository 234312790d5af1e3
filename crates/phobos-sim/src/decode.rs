//! Raw PTX statements → pre-decoded instructions ready to execute.
//!
//! Decoding happens once per module: registers, immediates, special
//! registers and symbol addresses all become *slots* of a warp's value file
//! (immediates and specials are slots filled before the warp starts), labels
//! become instruction indices, and each opcode string becomes an [`Op`]. The
//! executor then never touches a string. Anything outside the supported
//! subset is reported here as `unsupported instruction X at line N`.

use crate::error::SimError;
use crate::memory::{LOCAL_GENERIC_BASE, PARAM_GENERIC_BASE, SHARED_GENERIC_BASE};
use crate::parse::{
    parse_int, parse_uint, type_size, Note, RawEntry, RawInst, RawModule, RawOperand, Stmt, VarDecl,
};
use crate::tensor::{MmaAcc, MmaElem, MmaInst};
use crate::wgmma::WgmmaInst;
use std::collections::HashMap;

/// Index of a 64-bit value slot in a warp's value file (32 lanes each).
pub(crate) type Slot = u32;
/// Index of a predicate register (one 32-bit lane mask each).
pub(crate) type PredId = u32;

/// A PTX fundamental type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    B8,
    B16,
    B32,
    B64,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    Bf16,
    F32,
    F64,
    Pred,
}

impl Ty {
    pub(crate) fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f16" => Ty::F16,
            "bf16" => Ty::Bf16,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "pred" => Ty::Pred,
            _ => return None,
        })
    }

    /// The type as PTX writes it, without the dot (`u64`, `f32`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Ty::B8 => "b8",
            Ty::B16 => "b16",
            Ty::B32 => "b32",
            Ty::B64 => "b64",
            Ty::U8 => "u8",
            Ty::U16 => "u16",
            Ty::U32 => "u32",
            Ty::U64 => "u64",
            Ty::S8 => "s8",
            Ty::S16 => "s16",
            Ty::S32 => "s32",
            Ty::S64 => "s64",
            Ty::F16 => "f16",
            Ty::Bf16 => "bf16",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::Pred => "pred",
        }
    }

    /// An untyped-bits, unsigned or signed integer type.
    pub fn is_integer_or_bits(self) -> bool {
        !matches!(self, Ty::F16 | Ty::Bf16 | Ty::F32 | Ty::F64 | Ty::Pred)
    }

    pub(crate) fn bits(self) -> u32 {
        match self {
            Ty::B8 | Ty::U8 | Ty::S8 | Ty::Pred => 8,
            Ty::B16 | Ty::U16 | Ty::S16 | Ty::F16 | Ty::Bf16 => 16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 => 32,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 64,
        }
    }

    pub(crate) fn bytes(self) -> u32 {
        self.bits() / 8
    }

    pub(crate) fn is_signed(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    pub(crate) fn is_float(self) -> bool {
        matches!(self, Ty::F16 | Ty::Bf16 | Ty::F32 | Ty::F64)
    }

    pub(crate) fn int(self) -> IntTy {
        IntTy {
            bits: self.bits(),
            signed: self.is_signed(),
        }
    }
}

/// An integer operation's width and signedness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IntTy {
    pub bits: u32,
    pub signed: bool,
}

/// A special register, filled per lane when a warp starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    LaneId,
    WarpId,
    NWarpId,
    /// `%lanemask_lt` etc.: (kind) 0 eq, 1 lt, 2 le, 3 gt, 4 ge.
    LaneMask(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntOp {
    Add,
    Sub,
    MulLo,
    MulHi,
    MulWide,
    MadLo,
    MadHi,
    MadWide,
    Div,
    Rem,
    Neg,
    Abs,
    Min,
    Max,
    And,
    Or,
    Xor,
    Not,
    Cnot,
    Shl,
    Shr,
    Popc,
    Clz,
    Brev,
    Bfe,
    Bfi,
    Prmt,
    Dp4a { sa: bool, sb: bool },
    Dp2a { hi: bool, sa: bool, sb: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FloatOp {
    Add,
    Sub,
    Mul,
    Fma,
    Div,
    Rcp,
    Sqrt,
    Rsqrt,
    Ex2,
    Lg2,
    Sin,
    Cos,
    Tanh,
    Abs,
    Neg,
    Min,
    Max,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BoolOp {
    And,
    Or,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PredLogic {
    And,
    Or,
    Xor,
    Not,
    Mov,
}

/// Rounding modifier of `cvt` (and of integer-rounding float ops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Round {
    /// No modifier given.
    Default,
    Rn,
    Rz,
    Rm,
    Rp,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemSpace {
    Global,
    Shared,
    Local,
    Param,
    Generic,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VoteMode {
    Any,
    All,
    Uni,
    Ballot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtomOp {
    Add,
    Min,
    Max,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Inc,
    Dec,
}

/// A memory operand `[base+offset]`; symbols are folded into `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Addr {
    pub base: Option<Slot>,
    pub offset: i64,
}

/// A predicate operand, possibly negated (`!%p`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PredSrc {
    pub id: PredId,
    pub neg: bool,
}

/// A decoded instruction body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Op {
    /// Copy the low `bits` of `a`.
    Mov {
        d: Slot,
        a: Slot,
        bits: u32,
    },
    /// `mov.b64 d, {a, b}`: concatenate `n` parts of `part_bits`, lowest first.
    Pack {
        d: Slot,
        srcs: [Slot; 4],
        n: u8,
        part_bits: u32,
    },
    /// `mov.b64 {a, b}, d`: split.
    Unpack {
        ds: [Slot; 4],
        n: u8,
        a: Slot,
        part_bits: u32,
    },
    /// `d = a + b` in `s32` for a loop's step (a `phobos.step` note): a
    /// sum outside i32 is an error, not a wrap.
    LoopStep {
        d: Slot,
        a: Slot,
        b: Slot,
    },
    /// `d = a + k` at `bits` (address-space conversions).
    AddImm {
        d: Slot,
        a: Slot,
        k: u64,
        bits: u32,
    },
    Int {
        op: IntOp,
        ty: IntTy,
        d: Slot,
        s: [Slot; 4],
    },
    Float {
        op: FloatOp,
        f64: bool,
        ftz: bool,
        sat: bool,
        d: Slot,
        s: [Slot; 3],
    },
    Cvt {
        d: Slot,
        a: Slot,
        dst: Ty,
        src: Ty,
        rnd: Round,
        sat: bool,
        ftz: bool,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        ftz: bool,
        p: PredId,
        q: Option<PredId>,
        a: Slot,
        b: Slot,
        comb: Option<(BoolOp, PredSrc)>,
    },
    Selp {
        d: Slot,
        a: Slot,
        b: Slot,
        c: PredSrc,
        bits: u32,
    },
    PredBool {
        op: PredLogic,
        d: PredId,
        a: PredSrc,
        b: PredSrc,
    },
    /// `selp`-free conversion of an integer to a predicate (`mov.pred p, 1`).
    PredConst {
        d: PredId,
        value: bool,
    },
    Ld {
        space: MemSpace,
        ty: Ty,
        n: u8,
        ds: [Slot; 4],
        addr: Addr,
    },
    St {
        space: MemSpace,
        ty: Ty,
        n: u8,
        srcs: [Slot; 4],
        addr: Addr,
    },
    Atom {
        space: MemSpace,
        op: AtomOp,
        ty: Ty,
        d: Slot,
        addr: Addr,
        b: Slot,
        c: Slot,
    },
    Bra {
        target: u32,
    },
    Exit,
    Bar,
    WarpSync {
        mask: Slot,
    },
    Shfl {
        mode: ShflMode,
        d: Slot,
        p: Option<PredId>,
        a: Slot,
        b: Slot,
        c: Slot,
        mask: Slot,
    },
    /// `any`/`all`/`uni` write predicate `d`; `ballot` writes slot `d`.
    Vote {
        mode: VoteMode,
        d: u32,
        a: PredSrc,
        mask: Slot,
    },
    /// `ldmatrix.sync.aligned.m8n8.x{num}{.trans}.b16`: warp-synchronous
    /// over the whole warp (`mask` is a constant full mask).
    Ldmatrix {
        num: u8,
        trans: bool,
        ds: [Slot; 4],
        space: MemSpace,
        addr: Addr,
        mask: Slot,
    },
    /// `mma.sync.aligned...`: operands in `Entry::mmas[idx]`.
    Mma {
        idx: u32,
        mask: Slot,
    },
    /// `cp.async.{ca,cg}.shared.global [dst], [src], size{, src_size}`.
    CpAsync {
        size: u8,
        src_size: Option<Slot>,
        dst: Addr,
        src: Addr,
    },
    CpAsyncCommit,
    /// `cvt.rna.tf32.f32`: round to tf32 (10 mantissa bits), ties away.
    CvtTf32 {
        d: Slot,
        a: Slot,
    },
    /// `cvt.{rn,rz}.{f16x2,bf16x2}.f32 d, a, b`: `a` converted into the
    /// upper half of `d`, `b` into the lower half (`dst` is `F16` or
    /// `Bf16`).
    CvtPack {
        d: Slot,
        a: Slot,
        b: Slot,
        dst: Ty,
        rnd: Round,
    },
    /// `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b` (`a` into
    /// the upper byte of `d`, `b` into the lower one) and, with `f16x2`,
    /// `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2 d, a` (`b` unused).
    CvtF8Pack {
        d: Slot,
        a: Slot,
        b: Slot,
        f8: crate::numeric::F8,
        f16x2: bool,
        relu: bool,
    },
    /// `cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a`: the two bytes of `a`
    /// widened (exactly) to the two halves of `d`, low byte to low half.
    CvtF8Unpack {
        d: Slot,
        a: Slot,
        f8: crate::numeric::F8,
        relu: bool,
    },
    /// `wait_group keep` (`Some`) or `wait_all` (`None`).
    CpAsyncWait {
        keep: Option<u32>,
    },
    /// `wgmma.fence.sync.aligned` (warp-synchronous; see `wgmma`).
    WgmmaFence {
        mask: Slot,
    },
    /// `wgmma.commit_group.sync.aligned`.
    WgmmaCommit {
        mask: Slot,
    },
    /// `wgmma.wait_group.sync.aligned keep`.
    WgmmaWait {
        keep: u32,
        mask: Slot,
    },
    /// `wgmma.mma_async.sync.aligned...`: operands in `Entry::wgmmas[idx]`.
    Wgmma {
        idx: u32,
        mask: Slot,
    },
    /// `mbarrier.*`, `cp.async.bulk.tensor` and `fence.proxy.async`:
    /// operands in `Entry::tma[idx]` (see `mbarrier` and `bulk`).
    Tma {
        idx: u32,
        /// A bulk copy (the observer's `OpKind::AsyncCopy`).
        copy: bool,
    },
    /// `elect.sync d|p, membermask`: warp-synchronous; the leader is the
    /// lowest active lane of the mask (see `mbarrier`).
    Elect {
        d: Slot,
        p: PredId,
        mask: Slot,
    },
    Nop,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Inst {
    pub op: Op,
    pub guard: Option<PredSrc>,
}

/// Text-level facts about an instruction, for reports and observers.
#[derive(Clone, Debug)]
pub(crate) struct InstInfo {
    pub opcode: String,
    pub line: usize,
    pub loc: Option<(u32, u32, u32)>,
    /// The `inlined_at` chain of `loc` (an index in the module's chains).
    pub inlined: u32,
    /// The bytes of shared memory every access of this instruction must
    /// stay in, from its `phobos.bounds` note.
    pub bounds: Option<Bounds>,
    /// The loop variable a `phobos.step` note names (`Op::LoopStep`).
    pub loop_var: Option<String>,
}

/// A buffer's bytes in the CTA's shared memory, absolute.
#[derive(Clone, Debug)]
pub(crate) struct Bounds {
    pub name: String,
    pub start: u64,
    pub end: u64,
}

/// A kernel parameter as declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    pub name: String,
    /// The PTX type, e.g. `u64`, `s32`, `f32`, `b8` (of each element for
    /// an array parameter).
    pub ty: Ty,
    /// Bytes (element size times array length).
    pub size: u32,
    /// Byte offset in the parameter buffer.
    pub offset: u32,
}

/// A named region of shared or local memory.
#[derive(Clone, Debug)]
pub(crate) struct Region {
    pub name: String,
    pub offset: u32,
    pub bytes: u32,
}

/// A decoded entry.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub name: String,
    pub params: Vec<ParamInfo>,
    pub param_bytes: u32,
    pub insts: Vec<Inst>,
    pub info: Vec<InstInfo>,
    pub n_slots: u32,
    /// Slots `0..n_declared` are the declared registers; the rest hold
    /// immediates, special registers and the `_` sink.
    pub n_declared: u32,
    pub sink: Option<Slot>,
    pub n_preds: u32,
    pub consts: Vec<(Slot, u64)>,
    pub specials: Vec<(Slot, Special)>,
    pub shared: Vec<Region>,
    /// Static shared memory: the `.shared` declarations.
    pub shared_bytes: u32,
    /// Where dynamic shared memory starts (the `.extern .shared` arrays'
    /// address): `shared_bytes` aligned up to the arrays' alignment.
    pub dynamic_shared_offset: u32,
    /// The module's `.target sm_N`, for its shared-memory limit.
    pub target: Option<u32>,
    pub local_bytes: u32,
    /// The local arrays, in address order, with gaps between them
    /// ([`layout_guarded`]).
    pub local: Vec<Region>,
    pub reqntid: Option<[u32; 3]>,
    pub maxntid: Option<[u32; 3]>,
    /// Operands of the entry's `mma` instructions (see [`Op::Mma`]).
    pub mmas: Vec<MmaInst>,
    /// Operands of the entry's `wgmma.mma_async` instructions ([`Op::Wgmma`]).
    pub wgmmas: Vec<WgmmaInst>,
    /// Operands of its mbarrier, bulk-copy and proxy-fence instructions
    /// (see [`Op::Tma`]).
    pub tma: Vec<crate::mbarrier::TmaInst>,
    /// The entry uses mbarriers, bulk copies, proxy fences or wgmma: the
    /// CTA keeps the async proxy's state (`mbarrier::TmaState`).
    pub async_proxy: bool,
}

pub(crate) fn unsupported(what: impl Into<String>, line: usize) -> SimError {
    SimError::Unsupported {
        instruction: what.into(),
        line,
    }
}

fn align_up(x: u64, a: u64) -> u64 {
    let a = a.max(1);
    x.div_ceil(a) * a
}

fn layout(vars: &[VarDecl], start: u64, out: &mut Vec<Region>) -> Result<u64, SimError> {
    let mut off = start;
    for v in vars {
        let size = type_size(&v.ty)
            .ok_or_else(|| SimError::parse(v.line, format!("unknown type `{}`", v.ty)))?;
        off = align_up(off, u64::from(v.align));
        let bytes = u64::from(size) * v.elems;
        let end = off + bytes;
        let (o, b) = match (u32::try_from(off), u32::try_from(bytes)) {
            (Ok(o), Ok(b)) if end <= u64::from(u32::MAX) => (o, b),
            _ => {
                return Err(SimError::parse(
                    v.line,
                    format!("`{}` is too large", v.name),
                ))
            }
        };
        out.push(Region {
            name: v.name.clone(),
            offset: o,
            bytes: b,
        });
        off = end;
    }
    Ok(off)
}

/// The thread's local arrays, each followed by a gap as long as the larger
/// of it and the next (16 bytes at least) that belongs to no array: an
/// index a little past one array's end, or before the next one's start,
/// lands in the gap, which memcheck reports (`exec::local_access`), rather
/// than in the neighbouring array. (PTX fixes no layout for `.local`
/// variables; only addresses taken from one array's symbol reach it.)
fn layout_guarded(vars: &[VarDecl], out: &mut Vec<Region>) -> Result<u64, SimError> {
    let mut off = 0u64;
    for (i, v) in vars.iter().enumerate() {
        let mut one = Vec::new();
        let end = layout(std::slice::from_ref(v), off, &mut one)?;
        out.extend(one);
        off = end;
        if let Some(next) = vars.get(i + 1) {
            let bytes =
                |v: &VarDecl| u64::from(type_size(&v.ty).unwrap_or(0)).saturating_mul(v.elems);
            off = off.saturating_add(bytes(v).max(bytes(next)).max(16));
        }
    }
    Ok(off)
}

/// Decodes every entry of a parsed module.
pub(crate) fn decode_module(m: &RawModule) -> Result<Vec<Entry>, SimError> {
    m.entries.iter().map(|e| decode_entry(e, m)).collect()
}

enum Name {
    Reg(Slot),
    Pred(PredId),
    /// A symbol whose value is an address (shared, local or param offset).
    Sym(u64),
    /// A module-level `.global` variable, which the simulator does not
    /// place in memory: declaring one is fine, using one is unsupported.
    Global,
}

pub(crate) struct Decoder {
    names: HashMap<String, Name>,
    n_slots: u32,
    n_preds: u32,
    consts: HashMap<u64, Slot>,
    const_list: Vec<(Slot, u64)>,
    specials: HashMap<Special, Slot>,
    sink: Option<Slot>,
    labels: HashMap<String, u32>,
    pub(crate) params: HashMap<String, u64>,
    mmas: Vec<MmaInst>,
    pub(crate) wgmmas: Vec<WgmmaInst>,
    /// Operands of the mbarrier, bulk-copy and proxy-fence instructions.
    pub(crate) tma: Vec<crate::mbarrier::TmaInst>,
}

/// Most registers one `.reg` line may declare (ptxas allows far fewer).
const MAX_REGISTERS: u32 = 1 << 16;

fn decode_entry(e: &RawEntry, m: &RawModule) -> Result<Entry, SimError> {
    let module_shared = &m.shared;
    let mut d = Decoder {
        names: HashMap::new(),
        n_slots: 0,
        n_preds: 0,
        consts: HashMap::new(),
        const_list: Vec::new(),
        specials: HashMap::new(),
        sink: None,
        labels: HashMap::new(),
        params: HashMap::new(),
        mmas: Vec::new(),
        wgmmas: Vec::new(),
        tma: Vec::new(),
    };
    for g in &m.globals {
        d.names.insert(g.name.clone(), Name::Global);
    }
    for r in &e.regs {
        let is_pred = r.ty == ".pred";
        if !is_pred && type_size(&r.ty).is_none() {
            return Err(unsupported(format!(".reg {}", r.ty), r.line));
        }
        let names: Vec<String> = match r.count {
            Some(n) if n > MAX_REGISTERS => {
                return Err(SimError::parse(
                    r.line,
                    format!(
                        "`{}<{n}>` declares more than {MAX_REGISTERS} registers",
                        r.name
                    ),
                ))
            }
            Some(n) => (0..n).map(|i| format!("{}{i}", r.name)).collect(),
            None => vec![r.name.clone()],
        };
        for n in names {
            let v = if is_pred {
                d.n_preds += 1;
                Name::Pred(d.n_preds - 1)
            } else {
                d.n_slots += 1;
                Name::Reg(d.n_slots - 1)
            };
            d.names.insert(n, v);
        }
    }
    let mut params = Vec::new();
    let mut off = 0u64;
    for p in &e.params {
        let size =
            type_size(&p.ty).ok_or_else(|| unsupported(format!(".param {}", p.ty), p.line))?;
        off = align_up(off, u64::from(p.align.max(size)));
        let bytes = u64::from(size) * p.elems.max(1);
        params.push(ParamInfo {
            name: p.name.clone(),
            ty: Ty::parse(p.ty.trim_start_matches('.'))
                .ok_or_else(|| unsupported(format!(".param {}", p.ty), p.line))?,
            size: bytes as u32,
            offset: off as u32,
        });
        d.params.insert(p.name.clone(), off);
        d.names.insert(p.name.clone(), Name::Sym(off));
        off += bytes;
    }
    let param_bytes = off as u32;
    let mut shared = Vec::new();
    let shared_end = layout(module_shared, 0, &mut shared)?;
    let shared_end = layout(&e.shared, shared_end, &mut shared)?;
    let shared_bytes = u32::try_from(shared_end)
        .map_err(|_| SimError::parse(e.line, "shared memory too large"))?;
    // Every `.extern .shared` array starts where dynamic shared memory
    // does, after the static arrays.
    let dynamic_align = m.extern_shared.iter().map(|v| v.align).max().unwrap_or(1);
    let dynamic_shared_offset = u32::try_from(align_up(shared_end, u64::from(dynamic_align)))
        .map_err(|_| SimError::parse(e.line, "shared memory too large"))?;
    for v in &m.extern_shared {
        shared.push(Region {
            name: v.name.clone(),
            offset: dynamic_shared_offset,
            // To the end of whatever size the launch gives.
            bytes: u32::MAX - dynamic_shared_offset,
        });
    }
    for r in &shared {
        d.names
            .insert(r.name.clone(), Name::Sym(u64::from(r.offset)));
    }
    let mut local = Vec::new();
    let local_end = layout_guarded(&e.local, &mut local)?;
    for r in &local {
        d.names
            .insert(r.name.clone(), Name::Sym(u64::from(r.offset)));
    }
    // Labels name the index of the next instruction.
    let mut n = 0u32;
    for s in &e.body {
        match s {
            Stmt::Label(l, line) => {
                if d.labels.insert(l.clone(), n).is_some() {
                    return Err(SimError::parse(*line, format!("label `{l}` defined twice")));
                }
            }
            Stmt::Inst(_) => n += 1,
        }
    }
    let n_declared = d.n_slots;
    let mut insts = Vec::new();
    let mut info = Vec::new();
    for s in &e.body {
        if let Stmt::Inst(i) = s {
            let guard = match &i.guard {
                Some((p, neg)) => Some(PredSrc {
                    id: d.pred(p, i.line)?,
                    neg: *neg,
                }),
                None => None,
            };
            let op = d.inst(i)?;
            let bounds = match &i.note {
                Some(Note::Bounds(b)) => {
                    let region = shared.iter().find(|r| r.name == b.symbol).ok_or_else(|| {
                        SimError::parse(
                            i.line,
                            format!(
                                "the bounds note names `{}`, which is no shared array",
                                b.symbol
                            ),
                        )
                    })?;
                    let base = u64::from(region.offset);
                    Some(Bounds {
                        name: b.name.clone(),
                        start: base + b.start,
                        end: base + b.end,
                    })
                }
                _ => None,
            };
            let op = match (&i.note, op) {
                (
                    Some(Note::Step(_)),
                    Op::Int {
                        op: IntOp::Add,
                        ty:
                            IntTy {
                                bits: 32,
                                signed: true,
                            },
                        d,
                        s: [a, b, ..],
                    },
                ) => Op::LoopStep { d, a, b },
                (Some(Note::Step(_)), _) => {
                    return Err(SimError::parse(
                        i.line,
                        "a `phobos.step` note belongs on an `add.s32` of two operands",
                    ))
                }
                (_, op) => op,
            };
            insts.push(Inst { op, guard });
            let loop_var = match &i.note {
                Some(Note::Step(name)) => Some(name.clone()),
                _ => None,
            };
            info.push(InstInfo {
                opcode: i.opcode.clone(),
                line: i.line,
                loc: i.loc,
                inlined: i.inlined,
                bounds,
                loop_var,
            });
        }
    }
    let async_proxy = !d.tma.is_empty() || info.iter().any(|i| i.opcode.starts_with("wgmma."));
    Ok(Entry {
        name: e.name.clone(),
        params,
        param_bytes,
        insts,
        info,
        n_slots: d.n_slots,
        n_declared,
        sink: d.sink,
        n_preds: d.n_preds,
        consts: d.const_list,
        specials: d.specials.into_iter().map(|(s, slot)| (slot, s)).collect(),
        shared,
        shared_bytes,
        dynamic_shared_offset,
        target: m.target,
        local_bytes: u32::try_from(local_end)
            .map_err(|_| SimError::parse(e.line, "local memory too large"))?,
        local,
        reqntid: e.reqntid,
        maxntid: e.maxntid,
        mmas: d.mmas,
        wgmmas: d.wgmmas,
        async_proxy,
        tma: d.tma,
    })
}

/// The opcodes the decoder handles (each still checks its modifiers).
const KNOWN_OPCODES: &[&str] = &[
    "mov", "cvta", "add", "sub", "mul", "mad", "div", "rem", "min", "max", "abs", "neg", "fma",
    "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "and", "or", "xor", "not", "cnot",
    "shl", "shr", "popc", "clz", "brev", "bfe", "bfi", "prmt", "dp4a", "dp2a", "setp", "selp",
    "cvt", "ld", "st", "atom", "red", "bra", "ret", "exit", "bar", "barrier", "shfl", "vote",
    "membar", "fence", "ldmatrix", "mma", "cp", "wgmma", "mbarrier", "elect", "prefetch",
];

/// Special registers that exist in PTX but that the simulator does not model.
const UNMODELED_SPECIALS: &[&str] = &[
    "%clock",
    "%clock64",
    "%smid",
    "%nsmid",
    "%gridid",
    "%globaltimer",
    "%pm",
    "%envreg",
    "%dynamic_smem_size",
    "%total_smem_size",
    "%aggr_smem_size",
    "%reserved_smem",
    "%cluster",
    "%is_explicit_cluster",
    "%current_graph_exec",
];

fn special(name: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, comp)) = name.split_once('.') {
        let c = dim(comp)?;
        return Some(match base {
            "%tid" => Special::Tid(c),
            "%ntid" => Special::Ntid(c),
            "%ctaid" => Special::Ctaid(c),
            "%nctaid" => Special::Nctaid(c),
            _ => return None,
        });
    }
    Some(match name {
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%nwarpid" => Special::NWarpId,
        "%lanemask_eq" => Special::LaneMask(0),
        "%lanemask_lt" => Special::LaneMask(1),
        "%lanemask_le" => Special::LaneMask(2),
        "%lanemask_gt" => Special::LaneMask(3),
        "%lanemask_ge" => Special::LaneMask(4),
        _ => return None,
    })
}

/// Encodes a numeric literal as the bits of a value of type `ty`, by the
/// PTX ISA's rules for constants (section 4.5, "Constants") as ptxas applies them:
///
/// - `0fXXXXXXXX` is an exact f32; `0dXXXXXXXXXXXXXXXX` and decimal floats
///   (`1.5`, `1e3`, `.5`) are f64. A float literal may be the operand of an
///   `.f32` or `.f64` instruction (converted to it, round to nearest even),
///   or supply the bits of a same-width bit type: `0f` for `.b32`, `0d` or a
///   decimal float for `.b64`. Nothing else takes one, and there is no
///   `.f16`/`.bf16` literal. `-` may precede a decimal or `0d` literal but
///   not a `0f` one.
/// - An integer literal (decimal, `0x`, `0b`, octal, optional `U`) may be
///   the operand of a bit, unsigned or signed type, not of a float type.
///
/// `Ok(None)` means the text is no number; `Err` says why ptxas refuses it.
fn literal(text: &str, negative: bool, ty: Ty) -> Result<Option<u64>, String> {
    enum Float {
        /// `0f`: an f32 given by its bits.
        Single(f32),
        /// `0d` or decimal.
        Double(f64),
    }
    let hex = |h: &str, digits: usize| {
        (h.len() == digits && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u64::from_str_radix(h, 16).ok())
            .flatten()
    };
    let float = if let Some(h) = text.strip_prefix("0f").or_else(|| text.strip_prefix("0F")) {
        let Some(bits) = hex(h, 8) else {
            return Ok(None);
        };
        if negative {
            return Err(format!(
                "a `0f` literal cannot be negated (`-{text}`); write the negative value's bits"
            ));
        }
        Float::Single(f32::from_bits(bits as u32))
    } else if let Some(h) = text.strip_prefix("0d").or_else(|| text.strip_prefix("0D")) {
        let Some(bits) = hex(h, 16) else {
            return Ok(None);
        };
        Float::Double(f64::from_bits(bits))
    } else if text.contains(['.', 'e', 'E']) && !text.starts_with("0x") && !text.starts_with("0X") {
        match text.parse::<f64>() {
            Ok(f) => Float::Double(f),
            Err(_) => return Ok(None),
        }
    } else {
        let Some(v) = parse_uint(text) else {
            return Ok(None);
        };
        if ty.is_float() {
            return Err(format!(
                "integer literal `{text}` for a .{} operand: ptxas takes only float literals there (`{text}.0`, or `0f`/`0d` bits)",
                ty.name()
            ));
        }
        return Ok(Some(if negative { v.wrapping_neg() } else { v }));
    };
    let sign = |x: f64| if negative { -x } else { x };
    match (float, ty) {
        (Float::Single(f), Ty::F32 | Ty::F64) => Ok(Some(encode_float(f64::from(f), ty))),
        (Float::Double(f), Ty::F32 | Ty::F64) => Ok(Some(encode_float(sign(f), ty))),
        (Float::Single(f), Ty::B32) => Ok(Some(u64::from(f.to_bits()))),
        (Float::Double(f), Ty::B64) => Ok(Some(sign(f).to_bits())),
        (Float::Single(_), Ty::B64) => Err(format!(
            "`0f` literal `{text}` for a .b64 operand: a .b64 takes `0d` bits or a decimal float"
        )),
        (Float::Double(_), Ty::B32) => Err(format!(
            "f64 literal `{text}` for a .b32 operand: a .b32 takes only `0f` bits"
        )),
        _ => Err(format!(
            "float literal `{text}` for a .{} operand: ptxas takes float literals only for .f32, .f64, .b32 (`0f`) and .b64 (`0d`)",
            ty.name()
        )),
    }
}

fn encode_float(f: f64, ty: Ty) -> u64 {
    match ty {
        Ty::F64 => f.to_bits(),
        Ty::F32 => u64::from((f as f32).to_bits()),
        Ty::F16 => u64::from(half::f16::from_f64(f).to_bits()),
        _ => u64::from(half::bf16::from_f64(f).to_bits()),
    }
}

fn ty_of(mods: &[&str], line: usize, opcode: &str) -> Result<Ty, SimError> {
    mods.iter()
        .rev()
        .find_map(|m| Ty::parse(m))
        .ok_or_else(|| SimError::parse(line, format!("`{opcode}` needs a type")))
}

pub(crate) fn has(mods: &[&str], m: &str) -> bool {
    mods.contains(&m)
}

fn rounding(mods: &[&str]) -> Round {
    for m in mods {
        let r = match *m {
            "rn" => Round::Rn,
            "rz" => Round::Rz,
            "rm" => Round::Rm,
            "rp" => Round::Rp,
            "rni" => Round::Rni,
            "rzi" => Round::Rzi,
            "rmi" => Round::Rmi,
            "rpi" => Round::Rpi,
            _ => continue,
        };
        return r;
    }
    Round::Default
}

impl Decoder {
    pub(crate) fn konst(&mut self, v: u64) -> Slot {
        if let Some(&s) = self.consts.get(&v) {
            return s;
        }
        let s = self.n_slots;
        self.n_slots += 1;
        self.consts.insert(v, s);
        self.const_list.push((s, v));
        s
    }

    pub(crate) fn sink(&mut self) -> Slot {
        if let Some(s) = self.sink {
            return s;
        }
        let s = self.n_slots;
        self.n_slots += 1;
        self.sink = Some(s);
        s
    }

    pub(crate) fn pred(&self, name: &str, line: usize) -> Result<PredId, SimError> {
        match self.names.get(name) {
            Some(Name::Pred(p)) => Ok(*p),
            Some(_) => Err(SimError::parse(
                line,
                format!("`{name}` is not a predicate register"),
            )),
            None => Err(SimError::parse(
                line,
                format!("undeclared predicate `{name}`"),
            )),
        }
    }

    pub(crate) fn pred_src(&self, o: &RawOperand, line: usize) -> Result<PredSrc, SimError> {
        match o {
            RawOperand::Word { text, negated } => Ok(PredSrc {
                id: self.pred(text, line)?,
                neg: *negated,
            }),
            _ => Err(SimError::parse(line, "expected a predicate operand")),
        }
    }

    pub(crate) fn dst_name(&mut self, name: &str, line: usize) -> Result<Slot, SimError> {
        if name == "_" {
            return Ok(self.sink());
        }
        match self.names.get(name) {
            Some(Name::Reg(s)) => Ok(*s),
            Some(_) => Err(SimError::parse(line, format!("`{name}` cannot be written"))),
            None => Err(SimError::parse(
                line,
                format!("undeclared register `{name}`"),
            )),
        }
    }

    pub(crate) fn dst(&mut self, o: &RawOperand, line: usize) -> Result<Slot, SimError> {
        match o {
            RawOperand::Word {
                text,
                negated: false,
            } => self.dst_name(text, line),
            _ => Err(SimError::parse(line, "expected a destination register")),
        }
    }

    pub(crate) fn src_name(
        &mut self,
        name: &str,
        negative: bool,
        ty: Ty,
        line: usize,
    ) -> Result<Slot, SimError> {
        if !negative {
            match self.names.get(name) {
                Some(Name::Reg(s)) => return Ok(*s),
                Some(Name::Sym(v)) => {
                    let v = *v;
                    return Ok(self.konst(v));
                }
                Some(Name::Pred(_)) => {
                    return Err(SimError::parse(
                        line,
                        format!("predicate `{name}` used as a value"),
                    ))
                }
                Some(Name::Global) => {
                    return Err(unsupported(format!(".global variable {name}"), line))
                }
                None => {}
            }
            if let Some(sp) = special(name) {
                if let Some(&s) = self.specials.get(&sp) {
                    return Ok(s);
                }
                let s = self.n_slots;
                self.n_slots += 1;
                self.specials.insert(sp, s);
                return Ok(s);
            }
            if UNMODELED_SPECIALS.iter().any(|s| name.starts_with(s))
                || ["%tid", "%ntid", "%ctaid", "%nctaid"]
                    .iter()
                    .any(|s| name.starts_with(s))
            {
                return Err(unsupported(format!("special register {name}"), line));
            }
        }
        match literal(name, negative, ty).map_err(|why| SimError::parse(line, why))? {
            Some(v) => Ok(self.konst(v)),
            None if name.starts_with('%')
                || name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '$') =>
            {
                Err(SimError::parse(line, format!("undeclared name `{name}`")))
            }
            None => Err(SimError::parse(
                line,
                format!("bad literal `{name}` for type .{ty:?}"),
            )),
        }
    }

    pub(crate) fn src(&mut self, o: &RawOperand, ty: Ty, line: usize) -> Result<Slot, SimError> {
        match o {
            RawOperand::Word {
                text,
                negated: false,
            } => self.src_name(text, false, ty, line),
            RawOperand::Neg(text) => self.src_name(text, true, ty, line),
            _ => Err(SimError::parse(line, "expected a register or a literal")),
        }
    }

    pub(crate) fn addr(&mut self, o: &RawOperand, line: usize) -> Result<Addr, SimError> {
        let RawOperand::Address { base, offset } = o else {
            return Err(SimError::parse(line, "expected an address `[...]`"));
        };
        match base {
            None => Ok(Addr {
                base: None,
                offset: *offset,
            }),
            Some(b) => match self.names.get(b.as_str()) {
                Some(Name::Reg(s)) => Ok(Addr {
                    base: Some(*s),
                    offset: *offset,
                }),
                Some(Name::Sym(v)) => Ok(Addr {
                    base: None,
                    offset: (*v as i64).wrapping_add(*offset),
                }),
                Some(Name::Pred(_)) => Err(SimError::parse(
                    line,
                    format!("predicate `{b}` used as an address"),
                )),
                Some(Name::Global) => Err(unsupported(format!(".global variable {b}"), line)),
                None => Err(SimError::parse(
                    line,
                    format!("undeclared name `{b}` in an address"),
                )),
            },
        }
    }

    fn vec_regs(
        &mut self,
        o: &RawOperand,
        ty: Ty,
        dst: bool,
        line: usize,
    ) -> Result<([Slot; 4], u8), SimError> {
        let mut out = [0; 4];
        match o {
            RawOperand::Vector(items) => {
                // `{%r1}` is a one-element vector, as plain as `%r1`
                // (Triton's inline `ld`/`st` write it; ptxas accepts it).
                if !matches!(items.len(), 1 | 2 | 4) {
                    return Err(unsupported(
                        format!("vector of {} elements", items.len()),
                        line,
                    ));
                }
                for (i, it) in items.iter().enumerate() {
                    out[i] = if dst {
                        self.dst_name(it, line)?
                    } else {
                        self.src_name(it, false, ty, line)?
                    };
                }
                Ok((out, items.len() as u8))
            }
            other => {
                out[0] = if dst {
                    self.dst(other, line)?
                } else {
                    self.src(other, ty, line)?
                };
                Ok((out, 1))
            }
        }
    }

    pub(crate) fn want(&self, ops: &[RawOperand], n: usize, i: &RawInst) -> Result<(), SimError> {
        if ops.len() == n {
            Ok(())
        } else {
            Err(SimError::parse(
                i.line,
                format!("`{}` takes {n} operands, found {}", i.opcode, ops.len()),
            ))
        }
    }

    fn inst(&mut self, i: &RawInst) -> Result<Op, SimError> {
        // `.shared::cta` is the CTA's shared memory, what `.shared` names
        // outside a cluster (`.shared::cluster` stays unsupported).
        let parts: Vec<&str> = i
            .opcode
            .split('.')
            .map(|p| if p == "shared::cta" { "shared" } else { p })
            .collect();
        let base = parts[0];
        let mods = &parts[1..];
        if !KNOWN_OPCODES.contains(&base) {
            return Err(unsupported(&i.opcode, i.line));
        }
        if let Some(e) = &i.bad_operands {
            return Err(e.clone());
        }
        let ops = &i.operands;
        let line = i.line;
        match base {
            "mov" => self.mov(i, mods),
            "cvta" => self.cvta(i, mods),
            "add" | "sub" | "mul" | "mad" | "div" | "rem" | "min" | "max" | "abs" | "neg"
            | "fma" | "rcp" | "sqrt" | "rsqrt" | "ex2" | "lg2" | "sin" | "cos" | "tanh" => {
                self.arith(i, base, mods)
            }
            "and" | "or" | "xor" | "not" | "cnot" => self.logic(i, base, mods),
            "shl" | "shr" | "popc" | "clz" | "brev" | "bfe" | "bfi" | "prmt" | "dp4a" | "dp2a" => {
                self.bits_op(i, base, mods)
            }
            "setp" => self.setp(i, mods),
            "selp" => {
                self.want(ops, 4, i)?;
                let ty = ty_of(mods, line, &i.opcode)?;
                Ok(Op::Selp {
                    d: self.dst(&ops[0], line)?,
                    a: self.src(&ops[1], ty, line)?,
                    b: self.src(&ops[2], ty, line)?,
                    c: self.pred_src(&ops[3], line)?,
                    bits: ty.bits(),
                })
            }
            "cvt" => self.cvt(i, mods),
            "ld" | "st" => self.ldst(i, base, mods),
            "atom" | "red" => self.atom(i, base, mods),
            "bra" => {
                self.want(ops, 1, i)?;
                if mods.iter().any(|m| *m != "uni") {
                    return Err(unsupported(&i.opcode, line));
                }
                let RawOperand::Word { text, .. } = &ops[0] else {
                    return Err(SimError::parse(line, "`bra` needs a label"));
                };
                let target = *self
                    .labels
                    .get(text)
                    .ok_or_else(|| SimError::parse(line, format!("undefined label `{text}`")))?;
                Ok(Op::Bra { target })
            }
            "ret" | "exit" => {
                self.want(ops, 0, i)?;
                Ok(Op::Exit)
            }
            "bar" | "barrier" => self.barrier(i, mods),
            "shfl" => self.shfl(i, mods),
            "vote" => self.vote(i, mods),
            "fence" if mods.first() == Some(&"proxy") => self.fence_proxy(i, mods),
            "membar" | "fence" => Ok(Op::Nop),
            "mbarrier" => self.mbarrier(i, mods),
            "elect" => self.elect(i, mods),
            "cp" if mods.get(1) == Some(&"bulk") => self.bulk(i, mods),
            "prefetch" => self.prefetch(i, mods),
            "ldmatrix" => self.ldmatrix(i, mods),
            "mma" => self.mma(i, mods),
            "cp" => self.cp_async(i, mods),
            "wgmma" => self.wgmma(i, mods),
            _ => Err(unsupported(&i.opcode, line)),
        }
    }

    fn mov(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        self.want(ops, 2, i)?;
        let ty = ty_of(mods, line, &i.opcode)?;
        if ty == Ty::Pred {
            let d = self.pred(
                match &ops[0] {
                    RawOperand::Word { text, .. } => text,
                    _ => return Err(SimError::parse(line, "expected a predicate")),
                },
                line,
            )?;
            // `mov.pred p, 1` / `0`, and `-1` (Triton writes it for true).
            if let RawOperand::Word { text, .. } | RawOperand::Neg(text) = &ops[1] {
                if let Some(v) = parse_uint(text) {
                    return Ok(Op::PredConst { d, value: v != 0 });
                }
            }
            let a = self.pred_src(&ops[1], line)?;
            return Ok(Op::PredBool {
                op: PredLogic::Mov,
                d,
                a,
                b: a,
            });
        }
        match (&ops[0], &ops[1]) {
            (RawOperand::Vector(_), _) => {
                let (ds, n) = self.vec_regs(&ops[0], ty, true, line)?;
                let a = self.src(&ops[1], ty, line)?;
                Ok(Op::Unpack {
                    ds,
                    n,
                    a,
                    part_bits: ty.bits() / u32::from(n),
                })
            }
            (_, RawOperand::Vector(_)) => {
                let d = self.dst(&ops[0], line)?;
                let (srcs, n) = self.vec_regs(&ops[1], ty, false, line)?;
                Ok(Op::Pack {
                    d,
                    srcs,
                    n,
                    part_bits: ty.bits() / u32::from(n),
                })
            }
            _ => Ok(Op::Mov {
                d: self.dst(&ops[0], line)?,
                a: self.src(&ops[1], ty, line)?,
                bits: ty.bits(),
            }),
        }
    }

    fn cvta(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        self.want(&i.operands, 2, i)?;
        let ty = ty_of(mods, line, &i.opcode)?;
        let to = has(mods, "to");
        let base = if has(mods, "global") {
            0
        } else if has(mods, "shared") {
            SHARED_GENERIC_BASE
        } else if has(mods, "local") {
            LOCAL_GENERIC_BASE
        } else if has(mods, "param") {
            PARAM_GENERIC_BASE
        } else {
            return Err(unsupported(&i.opcode, line));
        };
        let k = if to { base.wrapping_neg() } else { base };
        Ok(Op::AddImm {
            d: self.dst(&i.operands[0], line)?,
            a: self.src(&i.operands[1], Ty::U64, line)?,
            k,
            bits: ty.bits(),
        })
    }

    fn arith(&mut self, i: &RawInst, base: &str, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let ty = ty_of(mods, line, &i.opcode)?;
        let n_src = match base {
            "mad" | "fma" => 3,
            "abs" | "neg" | "rcp" | "sqrt" | "rsqrt" | "ex2" | "lg2" | "sin" | "cos" | "tanh" => 1,
            _ => 2,
        };
        self.want(ops, n_src + 1, i)?;
        if ty.is_float() {
            if !matches!(ty, Ty::F32 | Ty::F64) {
                return Err(unsupported(&i.opcode, line));
            }
            for m in mods {
                let ok = matches!(*m, "rn" | "ftz" | "sat" | "approx" | "full" | "f32" | "f64");
                if !ok {
                    return Err(unsupported(&i.opcode, line));
                }
            }
            let op = match base {
                "add" => FloatOp::Add,
                "sub" => FloatOp::Sub,
                "mul" => FloatOp::Mul,
                "mad" | "fma" => FloatOp::Fma,
                "div" => FloatOp::Div,
                "rcp" => FloatOp::Rcp,
                "sqrt" => FloatOp::Sqrt,
                "rsqrt" => FloatOp::Rsqrt,
                "ex2" => FloatOp::Ex2,
                "lg2" => FloatOp::Lg2,
                "sin" => FloatOp::Sin,
                "cos" => FloatOp::Cos,
                "tanh" => FloatOp::Tanh,
                "abs" => FloatOp::Abs,
                "neg" => FloatOp::Neg,
                "min" => FloatOp::Min,
                "max" => FloatOp::Max,
                _ => return Err(unsupported(&i.opcode, line)),
            };
            let mut s = [0; 3];
            for k in 0..n_src {
                s[k] = self.src(&ops[k + 1], ty, line)?;
            }
            return Ok(Op::Float {
                op,
                f64: ty == Ty::F64,
                ftz: has(mods, "ftz"),
                sat: has(mods, "sat"),
                d: self.dst(&ops[0], line)?,
                s,
            });
        }
        if ty == Ty::Pred {
            return Err(unsupported(&i.opcode, line));
        }
        let wide = has(mods, "wide");
        let hi = has(mods, "hi");
        for m in mods {
            if !matches!(*m, "lo" | "hi" | "wide") && Ty::parse(m).is_none() {
                return Err(unsupported(&i.opcode, line));
            }
        }
        let op = match base {
            "add" => IntOp::Add,
            "sub" => IntOp::Sub,
            "mul" if wide => IntOp::MulWide,
            "mul" if hi => IntOp::MulHi,
            "mul" => IntOp::MulLo,
            "mad" if wide => IntOp::MadWide,
            "mad" if hi => IntOp::MadHi,
            "mad" => IntOp::MadLo,
            "div" => IntOp::Div,
            "rem" => IntOp::Rem,
            "min" => IntOp::Min,
            "max" => IntOp::Max,
            "abs" => IntOp::Abs,
            "neg" => IntOp::Neg,
            _ => return Err(unsupported(&i.opcode, line)),
        };
        if wide && ty.bits() == 64 {
            return Err(unsupported(&i.opcode, line));
        }
        let wide_ty = |t: Ty| match t.bits() {
            8 => Ty::U16,
            16 => Ty::U32,
            _ => Ty::U64,
        };
        let mut s = [0; 4];
        for k in 0..n_src {
            // The addend of `mad.wide` has the doubled width.
            let t = if k == 2 && wide { wide_ty(ty) } else { ty };
            s[k] = self.src(&ops[k + 1], t, line)?;
        }
        Ok(Op::Int {
            op,
            ty: ty.int(),
            d: self.dst(&ops[0], line)?,
            s,
        })
    }

    fn logic(&mut self, i: &RawInst, base: &str, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let ty = ty_of(mods, line, &i.opcode)?;
        let unary = matches!(base, "not" | "cnot");
        self.want(ops, if unary { 2 } else { 3 }, i)?;
        if ty == Ty::Pred {
            let op = match base {
                "and" => PredLogic::And,
                "or" => PredLogic::Or,
                "xor" => PredLogic::Xor,
                "not" => PredLogic::Not,
                _ => return Err(unsupported(&i.opcode, line)),
            };
            let d = match &ops[0] {
                RawOperand::Word {
                    text,
                    negated: false,
                } => self.pred(text, line)?,
                _ => return Err(SimError::parse(line, "expected a predicate destination")),
            };
            let a = self.pred_src(&ops[1], line)?;
            let b = if unary {
                a
            } else {
                self.pred_src(&ops[2], line)?
            };
            return Ok(Op::PredBool { op, d, a, b });
        }
        let op = match base {
            "and" => IntOp::And,
            "or" => IntOp::Or,
            "xor" => IntOp::Xor,
            "not" => IntOp::Not,
            _ => IntOp::Cnot,
        };
        let mut s = [0; 4];
        s[0] = self.src(&ops[1], ty, line)?;
        if !unary {
            s[1] = self.src(&ops[2], ty, line)?;
        }
        Ok(Op::Int {
            op,
            ty: ty.int(),
            d: self.dst(&ops[0], line)?,
            s,
        })
    }

    fn bits_op(&mut self, i: &RawInst, base: &str, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let ty = ty_of(mods, line, &i.opcode)?;
        let signed = |m: &str| match m {
            "s32" => Ok(true),
            "u32" => Ok(false),
            _ => Err(unsupported(&i.opcode, line)),
        };
        let (op, n_src, src_tys): (IntOp, usize, [Ty; 4]) = match base {
            "shl" => (IntOp::Shl, 2, [ty, Ty::U32, ty, ty]),
            "shr" => (IntOp::Shr, 2, [ty, Ty::U32, ty, ty]),
            "popc" => (IntOp::Popc, 1, [ty; 4]),
            "clz" => (IntOp::Clz, 1, [ty; 4]),
            "brev" => (IntOp::Brev, 1, [ty; 4]),
            "bfe" => (IntOp::Bfe, 3, [ty, Ty::U32, Ty::U32, ty]),
            "bfi" => (IntOp::Bfi, 4, [ty, ty, Ty::U32, Ty::U32]),
            "prmt" => {
                if mods.len() != 1 {
                    return Err(unsupported(&i.opcode, line));
                }
                (IntOp::Prmt, 3, [Ty::B32; 4])
            }
            "dp4a" => {
                if mods.len() != 2 {
                    return Err(unsupported(&i.opcode, line));
                }
                let (sa, sb) = (signed(mods[0])?, signed(mods[1])?);
                (IntOp::Dp4a { sa, sb }, 3, [Ty::B32; 4])
            }
            _ => {
                if mods.len() != 3 || !matches!(mods[0], "lo" | "hi") {
                    return Err(unsupported(&i.opcode, line));
                }
                let (sa, sb) = (signed(mods[1])?, signed(mods[2])?);
                (
                    IntOp::Dp2a {
                        hi: mods[0] == "hi",
                        sa,
                        sb,
                    },
                    3,
                    [Ty::B32; 4],
                )
            }
        };
        self.want(ops, n_src + 1, i)?;
        let mut s = [0; 4];
        for k in 0..n_src {
            s[k] = self.src(&ops[k + 1], src_tys[k], line)?;
        }
        let ity = match op {
            IntOp::Dp4a { sa, sb } | IntOp::Dp2a { sa, sb, .. } => IntTy {
                bits: 32,
                signed: sa || sb,
            },
            _ => ty.int(),
        };
        Ok(Op::Int {
            op,
            ty: ity,
            d: self.dst(&ops[0], line)?,
            s,
        })
    }

    fn setp(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let ty = ty_of(mods, line, &i.opcode)?;
        let mut cmp = None;
        let mut comb = None;
        for m in mods {
            match *m {
                "eq" => cmp = Some(Cmp::Eq),
                "ne" => cmp = Some(Cmp::Ne),
                "lt" => cmp = Some(Cmp::Lt),
                "le" => cmp = Some(Cmp::Le),
                "gt" => cmp = Some(Cmp::Gt),
                "ge" => cmp = Some(Cmp::Ge),
                "lo" => cmp = Some(Cmp::Lo),
                "ls" => cmp = Some(Cmp::Ls),
                "hi" => cmp = Some(Cmp::Hi),
                "hs" => cmp = Some(Cmp::Hs),
                "equ" => cmp = Some(Cmp::Equ),
                "neu" => cmp = Some(Cmp::Neu),
                "ltu" => cmp = Some(Cmp::Ltu),
                "leu" => cmp = Some(Cmp::Leu),
                "gtu" => cmp = Some(Cmp::Gtu),
                "geu" => cmp = Some(Cmp::Geu),
                "num" => cmp = Some(Cmp::Num),
                "nan" => cmp = Some(Cmp::Nan),
                "and" => comb = Some(BoolOp::And),
                "or" => comb = Some(BoolOp::Or),
                "xor" => comb = Some(BoolOp::Xor),
                "ftz" => {}
                m if Ty::parse(m).is_some() => {}
                _ => return Err(unsupported(&i.opcode, line)),
            }
        }
        let cmp = cmp.ok_or_else(|| SimError::parse(line, "`setp` needs a comparison"))?;
        if matches!(ty, Ty::F16 | Ty::Bf16 | Ty::Pred) {
            return Err(unsupported(&i.opcode, line));
        }
        let float_only = matches!(
            cmp,
            Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu | Cmp::Num | Cmp::Nan
        );
        let int_only = matches!(cmp, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
        if (float_only && !ty.is_float()) || (int_only && ty.is_float()) {
            return Err(unsupported(&i.opcode, line));
        }
        self.want(ops, if comb.is_some() { 4 } else { 3 }, i)?;
        let (p, q) = match &ops[0] {
            RawOperand::Word {
                text,
                negated: false,
            } => (self.pred(text, line)?, None),
            RawOperand::Pair(a, b) => (self.pred(a, line)?, Some(self.pred(b, line)?)),
            _ => return Err(SimError::parse(line, "expected a predicate destination")),
        };
        let comb = match comb {
            Some(c) => Some((c, self.pred_src(&ops[3], line)?)),
            None => None,
        };
        Ok(Op::Setp {
            cmp,
            ty,
            ftz: has(mods, "ftz"),
            p,
            q,
            a: self.src(&ops[1], ty, line)?,
            b: self.src(&ops[2], ty, line)?,
            comb,
        })
    }

    fn cvt(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        if let Some(f8) = mods.iter().find_map(|m| crate::numeric::F8::parse(m)) {
            return self.cvt_f8(i, mods, f8);
        }
        if let Some(&pair) = mods.iter().find(|m| matches!(**m, "f16x2" | "bf16x2")) {
            // `cvt.frnd2{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b` with
            // frnd2 `.rn` or `.rz`; the simulator runs the plain form.
            let rnd = match mods {
                ["rn", _, "f32"] => Round::Rn,
                ["rz", _, "f32"] => Round::Rz,
                _ => return Err(unsupported(&i.opcode, line)),
            };
            self.want(&i.operands, 3, i)?;
            return Ok(Op::CvtPack {
                d: self.dst(&i.operands[0], line)?,
                a: self.src(&i.operands[1], Ty::F32, line)?,
                b: self.src(&i.operands[2], Ty::F32, line)?,
                dst: if pair == "f16x2" { Ty::F16 } else { Ty::Bf16 },
                rnd,
            });
        }
        self.want(&i.operands, 2, i)?;
        if mods.contains(&"tf32") {
            // Only `cvt.rna{.satfinite}.tf32.f32` exists (sm_80+).
            return match mods {
                ["rna", "tf32", "f32"] | ["rna", "satfinite", "tf32", "f32"] => Ok(Op::CvtTf32 {
                    d: self.dst(&i.operands[0], line)?,
                    a: self.src(&i.operands[1], Ty::F32, line)?,
                }),
                _ => Err(unsupported(&i.opcode, line)),
            };
        }
        let tys: Vec<Ty> = mods.iter().filter_map(|m| Ty::parse(m)).collect();
        if tys.len() != 2 || tys.contains(&Ty::Pred) {
            return Err(unsupported(&i.opcode, line));
        }
        for m in mods {
            let ok = Ty::parse(m).is_some()
                || matches!(
                    *m,
                    "rn" | "rz" | "rm" | "rp" | "rni" | "rzi" | "rmi" | "rpi" | "sat" | "ftz"
                );
            if !ok {
                return Err(unsupported(&i.opcode, line));
            }
        }
        let (dst, src) = (tys[0], tys[1]);
        Ok(Op::Cvt {
            d: self.dst(&i.operands[0], line)?,
            a: self.src(&i.operands[1], src, line)?,
            dst,
            src,
            rnd: rounding(mods),
            sat: has(mods, "sat"),
            ftz: has(mods, "ftz"),
        })
    }

    /// The 8-bit float conversions (PTX ISA 9.7.9.21 `cvt`, sm_89 and
    /// newer): to them only `.rn.satfinite`, from them only `.rn`, each
    /// with an optional `.relu`.
    fn cvt_f8(
        &mut self,
        i: &RawInst,
        mods: &[&str],
        f8: crate::numeric::F8,
    ) -> Result<Op, SimError> {
        let line = i.line;
        let relu = mods.contains(&"relu");
        let plain: Vec<&str> = mods.iter().copied().filter(|m| *m != "relu").collect();
        let x2 = f8.pair_name();
        match plain.as_slice() {
            ["rn", "satfinite", t, "f32"] if *t == x2 => {
                self.want(&i.operands, 3, i)?;
                Ok(Op::CvtF8Pack {
                    d: self.dst(&i.operands[0], line)?,
                    a: self.src(&i.operands[1], Ty::F32, line)?,
                    b: self.src(&i.operands[2], Ty::F32, line)?,
                    f8,
                    f16x2: false,
                    relu,
                })
            }
            ["rn", "satfinite", t, "f16x2"] if *t == x2 => {
                self.want(&i.operands, 2, i)?;
                let a = self.src(&i.operands[1], Ty::B32, line)?;
                Ok(Op::CvtF8Pack {
                    d: self.dst(&i.operands[0], line)?,
                    a,
                    b: a,
                    f8,
                    f16x2: true,
                    relu,
                })
            }
            ["rn", "f16x2", t] if *t == x2 => {
                self.want(&i.operands, 2, i)?;
                Ok(Op::CvtF8Unpack {
                    d: self.dst(&i.operands[0], line)?,
                    a: self.src(&i.operands[1], Ty::B16, line)?,
                    f8,
                    relu,
                })
            }
            _ => Err(unsupported(&i.opcode, line)),
        }
    }

    pub(crate) fn space(mods: &[&str]) -> MemSpace {
        for m in mods {
            match *m {
                "global" => return MemSpace::Global,
                "shared" => return MemSpace::Shared,
                "local" => return MemSpace::Local,
                "param" => return MemSpace::Param,
                _ => {}
            }
        }
        MemSpace::Generic
    }

    fn ldst(&mut self, i: &RawInst, base: &str, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        self.want(ops, 2, i)?;
        let ty = ty_of(mods, line, &i.opcode)?;
        if ty == Ty::Pred {
            return Err(unsupported(&i.opcode, line));
        }
        let mut vec = 1u8;
        for m in mods {
            match *m {
                "global" | "shared" | "local" | "param" | "nc" | "ca" | "cg" | "cs" | "lu"
                | "cv" | "wb" | "wt" | "volatile" | "weak" => {}
                "v2" => vec = 2,
                "v4" => vec = 4,
                m if Ty::parse(m).is_some() => {}
                _ => return Err(unsupported(&i.opcode, line)),
            }
        }
        if has(mods, "nc") && (base == "st" || Self::space(mods) != MemSpace::Global) {
            return Err(unsupported(&i.opcode, line));
        }
        let space = Self::space(mods);
        if base == "ld" {
            let (ds, n) = self.vec_regs(&ops[0], ty, true, line)?;
            if n != vec {
                return Err(SimError::parse(
                    line,
                    format!("`{}` needs {vec} destinations", i.opcode),
                ));
            }
            let addr = self.addr(&ops[1], line)?;
            Ok(Op::Ld {
                space,
                ty,
                n,
                ds,
                addr,
            })
        } else {
            if space == MemSpace::Param {
                return Err(unsupported(&i.opcode, line));
            }
            let addr = self.addr(&ops[0], line)?;
            let (srcs, n) = self.vec_regs(&ops[1], ty, false, line)?;
            if n != vec {
                return Err(SimError::parse(
                    line,
                    format!("`{}` needs {vec} sources", i.opcode),
                ));
            }
            Ok(Op::St {
                space,
                ty,
                n,
                srcs,
                addr,
            })
        }
    }

    fn atom(&mut self, i: &RawInst, base: &str, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let ty = ty_of(mods, line, &i.opcode)?;
        let mut op = None;
        for m in mods {
            let o = match *m {
                "add" => AtomOp::Add,
                "min" => AtomOp::Min,
                "max" => AtomOp::Max,
                "exch" => AtomOp::Exch,
                "cas" => AtomOp::Cas,
                "and" => AtomOp::And,
                "or" => AtomOp::Or,
                "xor" => AtomOp::Xor,
                "inc" => AtomOp::Inc,
                "dec" => AtomOp::Dec,
                // Memory orders: the simulator's memory is sequentially
                // consistent, stronger than any of them asks.
                "global" | "shared" | "relaxed" | "acquire" | "release" | "acq_rel" | "gpu"
                | "cta" | "sys" | "noftz" => continue,
                m if Ty::parse(m).is_some() => continue,
                _ => return Err(unsupported(&i.opcode, line)),
            };
            op = Some(o);
        }
        let op =
            op.ok_or_else(|| SimError::parse(line, format!("`{}` needs an operation", i.opcode)))?;
        // 16-bit floats only add, and only with `.noftz`, which the PTX ISA
        // requires of them.
        let half = matches!(ty, Ty::F16 | Ty::Bf16);
        if matches!(
            ty,
            Ty::Pred | Ty::B8 | Ty::U8 | Ty::S8 | Ty::B16 | Ty::U16 | Ty::S16
        ) || (half && (op != AtomOp::Add || !mods.contains(&"noftz")))
            || (ty.is_float() && op != AtomOp::Add && op != AtomOp::Exch)
        {
            return Err(unsupported(&i.opcode, line));
        }
        let is_red = base == "red";
        let n_src = if op == AtomOp::Cas { 2 } else { 1 };
        let first = usize::from(!is_red);
        self.want(ops, first + 1 + n_src, i)?;
        if is_red && op == AtomOp::Exch {
            return Err(unsupported(&i.opcode, line));
        }
        let d = if is_red {
            self.sink()
        } else {
            self.dst(&ops[0], line)?
        };
        let addr = self.addr(&ops[first], line)?;
        let b = self.src(&ops[first + 1], ty, line)?;
        let c = if op == AtomOp::Cas {
            self.src(&ops[first + 2], ty, line)?
        } else {
            b
        };
        Ok(Op::Atom {
            space: Self::space(mods),
            op,
            ty,
            d,
            addr,
            b,
            c,
        })
    }

    fn barrier(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        if mods.first() == Some(&"warp") {
            if mods != ["warp", "sync"] {
                return Err(unsupported(&i.opcode, line));
            }
            self.want(ops, 1, i)?;
            return Ok(Op::WarpSync {
                mask: self.src(&ops[0], Ty::B32, line)?,
            });
        }
        let sync = match mods {
            ["sync"] | ["sync", "aligned"] => true,
            [] if i.opcode == "bar" => true,
            _ => false,
        };
        if !sync {
            return Err(unsupported(&i.opcode, line));
        }
        match ops.as_slice() {
            [RawOperand::Word {
                text,
                negated: false,
            }] if parse_int(text) == Some(0) => Ok(Op::Bar),
            _ => Err(unsupported(
                format!("{} with operands other than barrier 0", i.opcode),
                line,
            )),
        }
    }

    fn shfl(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let mode = match mods {
            ["sync", m, "b32"] => match *m {
                "up" => ShflMode::Up,
                "down" => ShflMode::Down,
                "bfly" => ShflMode::Bfly,
                "idx" => ShflMode::Idx,
                _ => return Err(unsupported(&i.opcode, line)),
            },
            _ => return Err(unsupported(&i.opcode, line)),
        };
        self.want(ops, 5, i)?;
        let (d, p) = match &ops[0] {
            RawOperand::Pair(d, p) => (self.dst_name(d, line)?, Some(self.pred(p, line)?)),
            other => (self.dst(other, line)?, None),
        };
        Ok(Op::Shfl {
            mode,
            d,
            p,
            a: self.src(&ops[1], Ty::B32, line)?,
            b: self.src(&ops[2], Ty::B32, line)?,
            c: self.src(&ops[3], Ty::B32, line)?,
            mask: self.src(&ops[4], Ty::B32, line)?,
        })
    }

    /// Registers of a `{...}` operand with exactly `n` elements.
    pub(crate) fn reg_list(
        &mut self,
        o: &RawOperand,
        n: usize,
        dst: bool,
        line: usize,
    ) -> Result<Vec<Slot>, SimError> {
        let items: Vec<String> = match o {
            RawOperand::Vector(items) => items.clone(),
            RawOperand::Word {
                text,
                negated: false,
            } => vec![text.clone()],
            _ => return Err(SimError::parse(line, "expected a register vector `{...}`")),
        };
        if items.len() != n {
            return Err(SimError::parse(
                line,
                format!("expected a vector of {n} registers, found {}", items.len()),
            ));
        }
        items
            .iter()
            .map(|it| {
                if dst {
                    self.dst_name(it, line)
                } else {
                    self.src_name(it, false, Ty::B32, line)
                }
            })
            .collect()
    }

    fn ldmatrix(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        self.want(ops, 2, i)?;
        let mut num = 0u8;
        let mut trans = false;
        let mut shape = false;
        for m in mods {
            match *m {
                "sync" | "aligned" | "b16" | "shared" | "shared::cta" => {}
                "m8n8" => shape = true,
                "x1" => num = 1,
                "x2" => num = 2,
                "x4" => num = 4,
                "trans" => trans = true,
                _ => return Err(unsupported(&i.opcode, line)),
            }
        }
        if !shape || num == 0 || !has(mods, "sync") || !has(mods, "aligned") || !has(mods, "b16") {
            return Err(unsupported(&i.opcode, line));
        }
        let regs = self.reg_list(&ops[0], num as usize, true, line)?;
        let mut ds = [0; 4];
        ds[..regs.len()].copy_from_slice(&regs);
        let addr = self.addr(&ops[1], line)?;
        Ok(Op::Ldmatrix {
            num,
            trans,
            ds,
            space: Self::space(mods),
            addr,
            mask: self.konst(0xFFFF_FFFF),
        })
    }

    fn mma(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        self.want(ops, 4, i)?;
        // mma.sync.aligned.m16n8kK.row.col{.satfinite}.dtype.atype.btype.ctype
        let bad = || unsupported(&i.opcode, line);
        let rest: Vec<&str> = match mods {
            ["sync", "aligned", shape, "row", "col", rest @ ..] if shape.starts_with("m16n8k") => {
                rest.to_vec()
            }
            _ => return Err(bad()),
        };
        let k: u32 = mods[2]["m16n8k".len()..].parse().map_err(|_| bad())?;
        let (satfinite, types) = match rest.as_slice() {
            ["satfinite", t @ ..] => (true, t.to_vec()),
            t => (false, t.to_vec()),
        };
        let [d, a, b, c] = types.as_slice() else {
            return Err(bad());
        };
        let mut m = MmaInst {
            k,
            a_ty: MmaElem::parse(a).ok_or_else(bad)?,
            b_ty: MmaElem::parse(b).ok_or_else(bad)?,
            c_ty: MmaAcc::parse(c).ok_or_else(bad)?,
            d_ty: MmaAcc::parse(d).ok_or_else(bad)?,
            satfinite,
            d: Vec::new(),
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
        };
        m.validate()
            .map_err(|why| SimError::parse(line, format!("`{}`: {why}", i.opcode)))?;
        m.d = self.reg_list(&ops[0], m.d_ty.regs(), true, line)?;
        m.a = self.reg_list(&ops[1], MmaInst::a_regs(k, m.a_ty), false, line)?;
        m.b = self.reg_list(&ops[2], MmaInst::b_regs(k, m.b_ty), false, line)?;
        m.c = self.reg_list(&ops[3], m.c_ty.regs(), false, line)?;
        self.mmas.push(m);
        Ok(Op::Mma {
            idx: (self.mmas.len() - 1) as u32,
            mask: self.konst(0xFFFF_FFFF),
        })
    }

    fn cp_async(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        match mods {
            ["async", "commit_group"] => {
                self.want(ops, 0, i)?;
                return Ok(Op::CpAsyncCommit);
            }
            ["async", "wait_all"] => {
                self.want(ops, 0, i)?;
                return Ok(Op::CpAsyncWait { keep: None });
            }
            ["async", "wait_group"] => {
                self.want(ops, 1, i)?;
                let keep = match &ops[0] {
                    RawOperand::Word {
                        text,
                        negated: false,
                    } => parse_uint(text)
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(|| {
                            SimError::parse(line, "cp.async.wait_group needs an integer constant")
                        })?,
                    _ => {
                        return Err(SimError::parse(
                            line,
                            "cp.async.wait_group needs an integer constant",
                        ))
                    }
                };
                return Ok(Op::CpAsyncWait { keep: Some(keep) });
            }
            _ => {}
        }
        // cp.async.{ca,cg}.shared{::cta}.global{.L2::...} [dst], [src], size{, src_size}
        let ok = mods.first() == Some(&"async")
            && mods.iter().skip(1).all(|m| {
                matches!(*m, "ca" | "cg" | "shared" | "shared::cta" | "global")
                    || m.starts_with("L2::")
            })
            && (has(mods, "shared") || has(mods, "shared::cta"))
            && has(mods, "global");
        if !ok || !(3..=4).contains(&ops.len()) {
            return Err(unsupported(&i.opcode, line));
        }
        let dst = self.addr(&ops[0], line)?;
        let src = self.addr(&ops[1], line)?;
        let size = match &ops[2] {
            RawOperand::Word {
                text,
                negated: false,
            } => parse_uint(text),
            _ => None,
        };
        let size = match size {
            Some(4) | Some(8) | Some(16) => size.unwrap_or(0) as u8,
            _ => {
                return Err(SimError::parse(
                    line,
                    "cp.async copies 4, 8 or 16 bytes (an integer constant)",
                ))
            }
        };
        if has(mods, "cg") && size != 16 {
            return Err(SimError::parse(line, "cp.async.cg copies 16 bytes only"));
        }
        let src_size = match ops.get(3) {
            Some(o) => Some(self.src(o, Ty::U32, line)?),
            None => None,
        };
        Ok(Op::CpAsync {
            size,
            src_size,
            dst,
            src,
        })
    }

    fn vote(&mut self, i: &RawInst, mods: &[&str]) -> Result<Op, SimError> {
        let line = i.line;
        let ops = &i.operands;
        let mode = match mods {
            ["sync", "any", "pred"] => VoteMode::Any,
            ["sync", "all", "pred"] => VoteMode::All,
            ["sync", "uni", "pred"] => VoteMode::Uni,
            ["sync", "ballot", "b32"] => VoteMode::Ballot,
            _ => return Err(unsupported(&i.opcode, line)),
        };
        self.want(ops, 3, i)?;
        let d = match (mode, &ops[0]) {
            (VoteMode::Ballot, o) => self.dst(o, line)?,
            (
                _,
                RawOperand::Word {
                    text,
                    negated: false,
                },
            ) => self.pred(text, line)?,
            _ => return Err(SimError::parse(line, "expected a predicate destination")),
        };
        Ok(Op::Vote {
            mode,
            d,
            a: self.pred_src(&ops[1], line)?,
            mask: self.src(&ops[2], Ty::B32, line)?,
        })
    }
}

impl std::fmt::Display for Ty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
