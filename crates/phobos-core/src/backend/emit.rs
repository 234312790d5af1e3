//! PTX emission for one kernel variant: the `.entry` with its parameters,
//! register declarations, `.loc` line info and body. Reads the IR and the
//! analyses' side tables; decides nothing the analyses decided (vector
//! widths come from `divisibility`, offsets from `shared_plan`, barriers
//! from `barriers`).
//!
//! Registers are virtual and never reused (ptxas allocates): `%p` predicates,
//! `%rs` 16-bit (f16/bf16 bits), `%r` 32-bit integers (i8..u32, kept
//! sign- or zero-extended), `%rd` 64-bit integers, `%f` f32, `%fd` f64.
//! f16 and bf16 arithmetic is computed in f32 and rounded back after each
//! operation, which gives the same result as the native instructions.
//!
//! The instruction-level helpers live in the submodules: `values` (scalar
//! arithmetic and conversions), `memory` (addresses, loads, stores, tiles),
//! `collective` (shuffles, lane and CTA collectives), `atomic` (atomics and
//! fences).

mod atomic;
mod collective;
mod divide;
mod memory;
mod mma;
mod tma;
mod values;
mod wgmma;

pub(crate) use values::f8x2_name;

use super::barriers::BarrierDecision;
use super::divisibility::Divisibility;
use super::ir::{ExprId, ExprKind, Func, PtxSlot, StmtId, StmtKind};
use super::shared_plan::SharedPlan;
use crate::ast::BinOp;
use crate::ast::{ScalarTy, Span};
use crate::hir::ConstVal;
use crate::hir::{self, ParamKind, Ty};
use crate::source::LineIndex;
use std::fmt::Write as _;

/// The analyses `emit` reads.
pub struct Analyses<'a> {
    pub div: &'a Divisibility,
    pub plan: &'a SharedPlan,
    pub barriers: &'a [BarrierDecision],
}

/// One emitted entry and the lowest PTX ISA version its instructions need
/// (as major * 10 + minor).
pub struct EntryText {
    pub text: String,
    pub min_version: u32,
    /// What the PTX does for each access (indexed by `AccessId`), read
    /// from the instructions as they were emitted.
    pub accesses: Vec<EmittedAccess>,
}

/// The memory instructions emitted for one access, in the access's own
/// state space (global for a tensor, shared for a tile): the widest and
/// narrowest bytes per instruction, how many, and the `.loc` line of the
/// first. A tile copy also writes shared memory, which is not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmittedAccess {
    pub max_bytes: u32,
    pub min_bytes: u32,
    pub instructions: u32,
    pub line: u32,
}

/// Emit the `.entry` of one variant for target `sm_<arch>`.
pub fn emit_entry(
    f: &Func,
    k: &hir::Kernel,
    an: &Analyses,
    arch: u32,
    lines: &LineIndex,
) -> EntryText {
    let mut e = Emitter {
        f,
        k,
        an,
        arch,
        lines,
        body: String::new(),
        entry_end: 0,
        hoisted: String::new(),
        chunk_geoms: Vec::new(),
        tmaps: Vec::new(),
        entry_regs: Vec::new(),
        hoisting: false,
        tma_phases: std::collections::BTreeMap::new(),
        entry_vars: entry_vars(f),
        entry_values: Vec::new(),
        counts: [0; 6],
        labels: 0,
        line: 0,
        min_version: 0,
        var_regs: Vec::new(),
        params: vec![None; k.params.len()],
        dims: vec![None; k.dims.len()],
        tid: Reg::new(RegClass::B32, 0),
        lane: Reg::new(RegClass::B32, 0),
        warp: Reg::new(RegClass::B32, 0),
        // `$` is legal in PTX names and never in a Phobos one, so the
        // symbol cannot be any name the kernel's own names become: with
        // `_smem`, kernel `p`'s buffer `p_smem` was also its parameter
        // `smem`'s name, and kernel `local0_a`'s was an array `a_smem`'s.
        smem: format!("{}$smem", f.entry),
        cur_access: None,
        load_cache: Vec::new(),
        emitted: vec![EmittedAccess::default(); f.accesses.len()],
        addresses: Default::default(),
        loops: Vec::new(),
        acc_regs: Vec::new(),
    };
    e.prologue();
    e.entry_end = e.body.len();
    e.block(&f.body);
    let hoisted = std::mem::take(&mut e.hoisted);
    e.body.insert_str(e.entry_end, &hoisted);
    // The final `ret` belongs to the kernel's closing brace, as nvcc places
    // it: without its own `.loc` it would take the line of whatever was
    // emitted last, such as the body of a closing `if`, and profilers
    // would count the reconverged warp's `ret` on that line.
    e.loc(Span {
        start: k.span.end.saturating_sub(1),
        end: k.span.end,
    });
    e.ins("ret;");
    e.finish()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RegClass {
    Pred,
    B16,
    B32,
    B64,
    F32,
    F64,
}

impl RegClass {
    fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "%p",
            RegClass::B16 => "%rs",
            RegClass::B32 => "%r",
            RegClass::B64 => "%rd",
            RegClass::F32 => "%f",
            RegClass::F64 => "%fd",
        }
    }
    fn decl(self) -> &'static str {
        match self {
            RegClass::Pred => ".pred",
            RegClass::B16 => ".b16",
            RegClass::B32 => ".b32",
            RegClass::B64 => ".b64",
            RegClass::F32 => ".f32",
            RegClass::F64 => ".f64",
        }
    }
    fn slot(self) -> usize {
        self as usize
    }
    pub(crate) fn of(t: ScalarTy) -> RegClass {
        match t {
            ScalarTy::Bool => RegClass::Pred,
            ScalarTy::F16 | ScalarTy::BF16 => RegClass::B16,
            ScalarTy::I64 | ScalarTy::U64 => RegClass::B64,
            ScalarTy::F32 => RegClass::F32,
            ScalarTy::F64 => RegClass::F64,
            _ => RegClass::B32,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reg {
    pub class: RegClass,
    pub n: u32,
}

impl Reg {
    fn new(class: RegClass, n: u32) -> Reg {
        Reg { class, n }
    }
}

impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.class.prefix(), self.n)
    }
}

/// Registers as a PTX operand list, `%r1, %r2`: the inside of a vector
/// operand's braces or an `mma`'s fragments.
fn reg_list(regs: &[Reg]) -> String {
    regs.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A scalar operand: a register or an immediate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum V {
    R(Reg),
    /// An integer immediate of the given type.
    I(i128, ScalarTy),
    /// A float immediate of the given type.
    F(f64, ScalarTy),
}

pub(crate) struct Emitter<'a> {
    pub f: &'a Func,
    pub k: &'a hir::Kernel,
    pub an: &'a Analyses<'a>,
    pub arch: u32,
    lines: &'a LineIndex,
    body: String,
    /// Where the prologue ends in `body`: what `hoist` emits goes there,
    /// once per kernel, ahead of every statement.
    entry_end: usize,
    /// Instructions computed once at the kernel's entry (see `hoist`).
    hoisted: String,
    /// Per-thread chunk geometry of tile copies already hoisted, by shape
    /// (see `memory::ChunkGeom`).
    pub(crate) chunk_geoms: Vec<(String, memory::ChunkGeom)>,
    /// The generic address of each tensor map parameter
    /// (`Func::tensor_maps`), set by the prologue.
    pub(crate) tmaps: Vec<Reg>,
    /// Registers computed once at the entry by `entry_reg`, by key.
    entry_regs: Vec<(String, Reg)>,
    /// `hoist` is running: a nested one emits where it already is.
    hoisting: bool,
    /// Per TMA ring (its `For`): one parity bit per stage, the phase of
    /// its mbarrier the next wait waits for (see `tma.rs`).
    pub(crate) tma_phases: std::collections::BTreeMap<StmtId, Reg>,
    /// Vars whose one assignment is a top-level statement of the kernel
    /// with an entry-computable value (see `entry_value`), by index.
    entry_vars: Vec<Option<ExprId>>,
    /// Values `entry_value` emitted at the entry, by expression key.
    entry_values: Vec<(String, V)>,
    counts: [u32; 6],
    labels: u32,
    line: u32,
    pub min_version: u32,
    pub var_regs: Vec<Reg>,
    /// Tensor parameters: the global base address; scalars: the value.
    pub params: Vec<Option<Reg>>,
    /// Runtime dims as i32.
    pub dims: Vec<Option<Reg>>,
    pub tid: Reg,
    pub lane: Reg,
    pub warp: Reg,
    /// The name of this entry's `.shared` array.
    pub smem: String,
    /// The access whose instructions are being emitted (see `address`).
    pub cur_access: Option<super::ir::AccessId>,
    emitted: Vec<EmittedAccess>,
    /// Tensor accesses' computed addresses and strides, for the accesses
    /// that `Func::access_shift` places at a constant distance from them.
    pub(crate) addresses: std::collections::HashMap<super::ir::AccessId, (memory::Addr, V)>,
    /// Loads already emitted in the current straight-line stretch of one
    /// statement (see `memory::reuse`): an equal access reads them again
    /// instead of loading twice. Emptied at every statement and label.
    pub(crate) load_cache: Vec<(super::ir::AccessId, memory::Cached)>,
    /// The loops around the statement being emitted: the label `continue`
    /// jumps to and the one `break` jumps to.
    loops: Vec<(String, String)>,
    /// Each accumulator tile's registers (indexed by `AccId`), in fragment
    /// order (see `mma`).
    acc_regs: Vec<Vec<Reg>>,
}

impl<'a> Emitter<'a> {
    pub fn reg(&mut self, class: RegClass) -> Reg {
        let c = &mut self.counts[class.slot()];
        *c += 1;
        Reg::new(class, *c)
    }

    pub fn label(&mut self, what: &str) -> String {
        self.labels += 1;
        format!("$L{}_{what}", self.labels)
    }

    /// Emit one instruction line.
    pub fn ins(&mut self, s: &str) {
        let mut note = None;
        if let Some(acc) = self.cur_access {
            if self.record(acc, s) {
                note = self.bounds_note(acc);
            }
        }
        self.body.push('\t');
        self.body.push_str(s);
        if let Some(note) = note {
            self.body.push_str(" // ");
            self.body.push_str(&note);
        }
        self.body.push('\n');
    }

    /// The bounds note of a load, store or atomic of shared buffer `acc`
    /// touches: `phobos.bounds NAME SYMBOL START END`, the buffer's bytes
    /// from the kernel's shared array. The simulator checks every access of
    /// the instruction against them, so an index past one buffer's edge is
    /// reported even where it lands in a neighbouring one
    /// (docs/simulator.md).
    fn bounds_note(&self, acc: super::ir::AccessId) -> Option<String> {
        let super::ir::Mem::Buffer(b) = self.f.accesses[acc].mem else {
            return None;
        };
        let buf = &self.f.buffers[b];
        let start = u64::from(self.an.plan.offset[b.0 as usize]);
        Some(format!(
            "phobos.bounds {} {} {start} {}",
            buf.name,
            self.smem,
            start + buf.bytes
        ))
    }

    /// `acc` reuses `src`'s load: it reports `src`'s instructions.
    pub(crate) fn emitted_copy(&mut self, src: super::ir::AccessId, acc: super::ir::AccessId) {
        let e = self.emitted[src.0 as usize];
        let d = &mut self.emitted[acc.0 as usize];
        if d.instructions == 0 {
            *d = e;
        }
    }

    /// Count `s` as one of `acc`'s instructions when it is a load, store or
    /// atomic in the access's state space; says whether it was.
    fn record(&mut self, acc: super::ir::AccessId, s: &str) -> bool {
        let op = match s.strip_prefix('@') {
            Some(rest) => rest.split_once(' ').map_or("", |(_, op)| op),
            None => s,
        };
        let op = op.split_whitespace().next().unwrap_or("");
        let space = match self.f.accesses[acc].mem {
            super::ir::Mem::Tensor(_) => ".global",
            super::ir::Mem::Buffer(_) => ".shared",
            super::ir::Mem::Local(_) => ".local",
        };
        let mut parts = op.split('.');
        let kind = parts.next().unwrap_or("");
        let memory_op = matches!(kind, "ld" | "st" | "atom" | "red");
        if !memory_op || !op[kind.len()..].starts_with(space) {
            return false;
        }
        let mut lanes = 1;
        let mut elem = 0;
        for p in parts {
            if let Some(n) = p.strip_prefix('v').and_then(|n| n.parse::<u32>().ok()) {
                lanes = n;
            } else if let Some(bits) = p
                .get(1..)
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|_| matches!(p.as_bytes()[0], b'u' | b's' | b'b' | b'f'))
            {
                elem = bits / 8;
            }
        }
        let bytes = lanes * elem;
        let line = self.line;
        let e = &mut self.emitted[acc.0 as usize];
        if e.instructions == 0 {
            e.line = line;
            e.min_bytes = bytes;
        }
        e.instructions += 1;
        e.max_bytes = e.max_bytes.max(bytes);
        e.min_bytes = e.min_bytes.min(bytes);
        true
    }

    pub fn place_label(&mut self, l: &str) {
        // A join point: what was loaded before it may not have run.
        self.load_cache.clear();
        let _ = writeln!(self.body, "{l}:");
    }

    pub fn comment(&mut self, s: &str) {
        let _ = writeln!(self.body, "\t// {s}");
    }

    /// Note that an instruction needs at least PTX ISA `v` (major*10+minor):
    /// the 8-bit float conversions (8.1 on sm_89) and `mma`s (8.4); the
    /// `.version` line is computed through here.
    pub fn need_version(&mut self, v: u32) {
        self.min_version = self.min_version.max(v);
    }

    /// Point the following instructions at a source position.
    pub fn loc(&mut self, span: Span) {
        let (line, col) = self.lines.line_col(span.start as usize);
        if line != self.line {
            self.line = line;
            let _ = writeln!(self.body, "\t.loc 1 {line} {col}");
        }
    }

    fn prologue(&mut self) {
        self.loc(self.k.span);
        for slot in &self.f.ptx_params {
            match *slot {
                PtxSlot::Param(pid) => {
                    let i = pid.0 as usize;
                    let p = &self.k.params[i];
                    let r = match &p.kind {
                        ParamKind::Tensor { .. } => {
                            let raw = self.reg(RegClass::B64);
                            let g = self.reg(RegClass::B64);
                            self.ins(&format!("ld.param.u64 {raw}, [p_{}];", p.name));
                            self.ins(&format!("cvta.to.global.u64 {g}, {raw};"));
                            g
                        }
                        ParamKind::Scalar(ScalarTy::Bool) => {
                            let raw = self.reg(RegClass::B32);
                            self.ins(&format!("ld.param.u8 {raw}, [p_{}];", p.name));
                            let p2 = self.reg(RegClass::Pred);
                            self.ins(&format!("setp.ne.u32 {p2}, {raw}, 0;"));
                            p2
                        }
                        ParamKind::Scalar(t) => {
                            let r = self.reg(RegClass::of(*t));
                            self.ins(&format!("ld.param{} {r}, [p_{}];", param_ty(*t), p.name));
                            r
                        }
                    };
                    self.params[i] = Some(r);
                }
                PtxSlot::Dim(d) => {
                    let r = self.reg(RegClass::B32);
                    let name = &self.k.dims[d.0 as usize].name;
                    self.ins(&format!("ld.param.u32 {r}, [d_{name}];"));
                    self.dims[d.0 as usize] = Some(r);
                }
                PtxSlot::TensorMap(i) => {
                    // `cp.async.bulk.tensor` takes the map by its generic
                    // address (the `__grid_constant__` parameter's).
                    let raw = self.reg(RegClass::B64);
                    let g = self.reg(RegClass::B64);
                    let name = tensor_map_name(self.k, self.f, i);
                    self.ins(&format!("mov.b64 {raw}, {name};"));
                    self.ins(&format!("cvta.param.u64 {g}, {raw};"));
                    self.tmaps.push(g);
                }
            }
        }
        self.tid = self.reg(RegClass::B32);
        self.lane = self.reg(RegClass::B32);
        self.warp = self.reg(RegClass::B32);
        let (t, l, w) = (self.tid, self.lane, self.warp);
        self.ins(&format!("mov.u32 {t}, %tid.x;"));
        self.ins(&format!("and.b32 {l}, {t}, 31;"));
        self.ins(&format!("shr.u32 {w}, {t}, 5;"));
        for (_, v) in self.f.vars.iter() {
            let r = self.reg(RegClass::of(v.ty));
            self.var_regs.push(r);
        }
        self.declare_accs();
        self.init_tma_rings();
    }

    /// Emit what `emit` writes at the kernel's entry instead of here:
    /// values that depend only on the thread and the launch (the thread
    /// index, dims, parameters), computed once and live from the start,
    /// so a loop around their use does not recompute them every trip.
    /// `emit` must not read a register written after the prologue.
    pub(crate) fn hoist<T>(&mut self, emit: impl FnOnce(&mut Self) -> T) -> T {
        // Already emitting at the entry (a hoisted value needing another).
        if self.hoisting {
            return emit(self);
        }
        self.hoisting = true;
        let access = self.cur_access.take();
        let line = self.line;
        std::mem::swap(&mut self.body, &mut self.hoisted);
        let out = emit(self);
        std::mem::swap(&mut self.body, &mut self.hoisted);
        self.cur_access = access;
        self.line = line;
        self.hoisting = false;
        out
    }

    /// A register computed once at the kernel's entry by `emit` (see
    /// `hoist`), shared by every caller with the same `key`.
    pub(crate) fn entry_reg(&mut self, key: &str, emit: impl FnOnce(&mut Self) -> Reg) -> Reg {
        if let Some((_, r)) = self.entry_regs.iter().find(|(k, _)| k == key) {
            return *r;
        }
        let r = self.hoist(emit);
        self.entry_regs.push((key.to_string(), r));
        r
    }

    /// The shared address of byte `off` of this entry's shared array,
    /// computed once at the entry.
    pub(crate) fn smem_at(&mut self, off: u32) -> Reg {
        self.entry_reg(&format!("smem+{off}"), |e| {
            let r = e.reg(RegClass::B32);
            let smem = e.smem.clone();
            e.ins(&format!("mov.u32 {r}, {smem};"));
            if off != 0 {
                e.ins(&format!("add.s32 {r}, {r}, {off};"));
            }
            r
        })
    }

    /// A key for `e`'s value as `entry_value` computes it: equal keys, equal
    /// values (vars stand for their one assignment).
    pub(crate) fn entry_key(&self, e: ExprId) -> Option<String> {
        self.entry_key_within(e, ENTRY_DEPTH)
    }

    /// `entry_key` over at most `depth` levels of operands and vars: a
    /// deeper value (a chain of thousands of `let`s, say) is left where it
    /// is rather than walked recursively.
    fn entry_key_within(&self, e: ExprId, depth: u32) -> Option<String> {
        let depth = depth.checked_sub(1)?;
        let key = |x: ExprId| self.entry_key_within(x, depth);
        let t = self.ty(e);
        Some(match &self.f.exprs[e].kind {
            ExprKind::Const(ConstVal::Int(v)) => format!("{v}:{}", t.name()),
            ExprKind::Var(v) => {
                let def = self.entry_vars.get(v.0 as usize).copied().flatten()?;
                format!("v{}={}", v.0, key(def)?)
            }
            ExprKind::Param(p) => format!("p{}", p.0),
            ExprKind::Dim(d) => format!("d{}", d.0),
            ExprKind::Ctx(c) => format!("{c:?}"),
            ExprKind::Unary(op, a) if t.is_int() => format!("({op:?} {})", key(*a)?),
            ExprKind::Convert(a) if t.is_int() && self.ty(*a).is_int() => {
                format!("({}:{})", key(*a)?, t.name())
            }
            // No division: at the entry it would run where the kernel's own
            // division is guarded.
            ExprKind::Binary(op, a, b)
                if t.is_int()
                    && !matches!(op, BinOp::Div | BinOp::Rem | BinOp::And | BinOp::Or) =>
            {
                format!("({op:?} {} {})", key(*a)?, key(*b)?)
            }
            _ => return None,
        })
    }

    /// `e`'s value computed at the kernel's entry (see `hoist`), for an
    /// integer expression of constants, parameters, dims, `ctx` fields and
    /// vars assigned once at the top level from such expressions (a CTA's
    /// row origin, say); `None` for any other.
    pub(crate) fn entry_value(&mut self, e: ExprId) -> Option<V> {
        let key = self.entry_key(e)?;
        if let Some((_, v)) = self.entry_values.iter().find(|(k, _)| *k == key) {
            return Some(*v);
        }
        let v = self.hoist(|em| em.emit_entry_value(e));
        self.entry_values.push((key, v));
        Some(v)
    }

    fn emit_entry_value(&mut self, e: ExprId) -> V {
        let t = self.ty(e);
        match &self.f.exprs[e].kind {
            ExprKind::Const(ConstVal::Int(v)) => V::I(*v, t),
            ExprKind::Var(v) => match self.entry_vars[v.0 as usize] {
                Some(def) => self.emit_entry_value(def),
                None => V::I(0, t),
            },
            ExprKind::Param(p) => self.params[p.0 as usize].map_or(V::I(0, t), V::R),
            ExprKind::Dim(d) => self.dims[d.0 as usize].map_or(V::I(0, t), V::R),
            ExprKind::Ctx(c) => self.ctx(*c),
            _ => {
                let args: Vec<V> = self
                    .f
                    .operands(e)
                    .into_iter()
                    .map(|o| self.emit_entry_value(o))
                    .collect();
                self.apply(e, &args)
            }
        }
    }

    pub fn var_reg(&self, v: super::ir::VarId) -> Reg {
        self.var_regs[v.0 as usize]
    }

    fn finish(self) -> EntryText {
        let mut out = String::new();
        let k = self.k;
        let params: Vec<String> = (self.f.ptx_params.iter())
            .map(|slot| match *slot {
                PtxSlot::Param(p) => {
                    let p = &k.params[p.0 as usize];
                    match &p.kind {
                        ParamKind::Tensor { .. } => format!("\t.param .u64 p_{}", p.name),
                        ParamKind::Scalar(t) => format!("\t.param {} p_{}", param_ty(*t), p.name),
                    }
                }
                PtxSlot::Dim(d) => format!("\t.param .s32 d_{}", k.dims[d.0 as usize].name),
                PtxSlot::TensorMap(i) => format!(
                    "\t.param .align 64 .b8 {}[128]",
                    tensor_map_name(k, self.f, i)
                ),
            })
            .collect();
        // `wgmma` operands sit on 1024-byte boundaries of the array
        // (`Func::swizzle`), so the array does too.
        let align = if self.f.swizzle.is_empty() { 16 } else { 1024 };
        if crate::meta::dynamic_shared_bytes(self.an.plan.total) > 0 {
            // Above what a `.shared` declaration may hold: the launch passes
            // the size as dynamic shared memory.
            let _ = writeln!(out, ".extern .shared .align {align} .b8 {}[];\n", self.smem);
        } else if self.an.plan.total > 0 {
            let _ = writeln!(
                out,
                ".shared .align {align} .b8 {}[{}];\n",
                self.smem, self.an.plan.total
            );
        }
        let _ = writeln!(out, ".visible .entry {}(", self.f.entry);
        let _ = writeln!(out, "{}", params.join(",\n"));
        let _ = writeln!(out, ")\n.reqntid {}, 1, 1", self.f.threads);
        if let Some(c) = self.f.min_ctas {
            // `@launch(T, min_ctas = C)`: ptxas bounds the registers so C
            // CTAs fit on an SM (65536 / (T * C) per thread at most).
            let _ = writeln!(out, ".minnctapersm {c}");
        } else if !self.f.accs.is_empty() {
            // With `.reqntid` alone, ptxas may cap registers for full
            // occupancy (32 per thread for 128 threads on sm_80) and spill
            // an accumulator to local memory; one CTA per SM is all a
            // tensor-core kernel asks for (tests/tests/sass_loads.rs).
            let _ = writeln!(out, ".minnctapersm 1");
        }
        let _ = writeln!(out, "{{");
        let classes = [
            RegClass::Pred,
            RegClass::B16,
            RegClass::B32,
            RegClass::B64,
            RegClass::F32,
            RegClass::F64,
        ];
        for c in classes {
            let n = self.counts[c.slot()];
            if n > 0 {
                let _ = writeln!(out, "\t.reg {} {}<{}>;", c.decl(), c.prefix(), n + 1);
            }
        }
        // Register arrays indexed at run time: the thread's local memory.
        for (a, arr) in self.f.arrays.iter() {
            let _ = writeln!(
                out,
                "\t.local .align {} .b8 {}[{}];",
                arr.elem.size().max(4),
                memory::local_name(self.f, a),
                arr.bytes()
            );
        }
        out.push('\n');
        out.push_str(&self.body);
        out.push_str("}\n");
        EntryText {
            text: out,
            min_version: self.min_version,
            accesses: self.emitted,
        }
    }

    fn block(&mut self, b: &[StmtId]) {
        for &s in b {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: StmtId) {
        // Loads stay reusable across `Set`s (a `fn` argument bound once per
        // call, then used: `f(A[i]) + f(A[i])` loads `A[i]` once); any other
        // statement may store, synchronize or branch, before its own loads
        // and after them: a `Set` after a store must load again what the
        // store may have written (`for` copies of `y[i] = f(y[i]) + y[i]`,
        // fuzz seed 200139).
        let set = matches!(self.f.stmts[s].kind, StmtKind::Set(..));
        if !set {
            self.load_cache.clear();
        }
        self.stmt_kind(s);
        if !set {
            self.load_cache.clear();
        }
    }

    fn stmt_kind(&mut self, s: StmtId) {
        let span = self.f.stmt_span(s);
        self.loc(span);
        match &self.f.stmts[s].kind {
            StmtKind::Set(v, e) => {
                let val = self.expr(*e);
                let r = self.var_reg(*v);
                let ty = self.f.vars[*v].ty;
                self.mov_to(r, val, ty);
                // Loads whose address reads `v` now name other elements.
                let v = *v;
                let f = self.f;
                self.load_cache
                    .retain(|(a, _)| !memory::access_reads_var(f, *a, v));
            }
            StmtKind::Store(acc, e) => {
                let val = self.expr(*e);
                self.loc(span);
                self.store_point(*acc, val, self.f.fence(s));
            }
            StmtKind::RunStore {
                access,
                value,
                only,
            } => self.store_run(*access, *value, *only, self.f.fence(s)),
            StmtKind::TileCopy { access, buffer, at } => self.tile_copy(*access, *buffer, at),
            StmtKind::TileStore { access, buffer } => self.tile_store(*access, *buffer),
            StmtKind::AsyncCopy {
                access,
                buffer,
                at,
                stage,
            } => self.async_copy(*access, *buffer, at, *stage),
            // A TMA ring's groups are its mbarriers' phases (`tma.rs`).
            StmtKind::AsyncCommit if self.f.tma_skip.contains(&s) => {}
            StmtKind::AsyncWait(_) if self.f.tma_skip.contains(&s) => {}
            StmtKind::AsyncWait(_) if self.f.tma_waits.contains_key(&s) => self.tma_wait(s),
            StmtKind::AsyncCommit => self.ins("cp.async.commit_group;"),
            StmtKind::AsyncWait(n) => {
                self.ins(&format!("cp.async.wait_group {n};"));
                if !self.f.swizzle.is_empty() {
                    self.proxy_fence();
                }
            }
            StmtKind::If { cond, then, els } => {
                let c = self.expr(*cond);
                let p = self.in_reg(c, ScalarTy::Bool);
                if let Some(b) = self.f.fence(s) {
                    self.barrier(b);
                }
                let l_else = self.label("else");
                let l_end = self.label("endif");
                self.ins(&format!("@!{p} bra {l_else};"));
                self.block(then);
                if !els.is_empty() {
                    self.ins(&format!("bra {l_end};"));
                }
                self.place_label(&l_else);
                self.block(els);
                if !els.is_empty() {
                    self.place_label(&l_end);
                }
            }
            StmtKind::For(l) => self.for_loop(s, l),
            StmtKind::While { pre, cond, body } => self.while_loop(s, pre, *cond, body),
            StmtKind::Break | StmtKind::Continue => {
                // The verifier checks every `Break`/`Continue` is in a loop.
                let target = self.loops.last().map(|(next, done)| {
                    if matches!(self.f.stmts[s].kind, StmtKind::Break) {
                        done.clone()
                    } else {
                        next.clone()
                    }
                });
                if let Some(l) = target {
                    self.ins(&format!("bra {l};"));
                }
            }
            StmtKind::Return => self.ins("ret;"),
            StmtKind::CtaColl(_) => self.cta_collective(s),
            StmtKind::Atomic { .. } => self.atomic(s),
            StmtKind::Fence => self.fence(),
            StmtKind::Barrier(b) => self.barrier(*b),
            StmtKind::AccZero(acc) => self.acc_zero(*acc),
            StmtKind::Mma {
                acc,
                a,
                b,
                b_trans,
                k,
            } => self.mma(*acc, (*a, *b), *b_trans, *k),
            StmtKind::AccStore { acc, access } => self.acc_store(*acc, *access),
            StmtKind::AccToTile { acc, buffer, at } => self.acc_to_tile(*acc, *buffer, *at),
            StmtKind::AccMap {
                acc,
                elem,
                row,
                col,
                value,
            } => self.acc_map(*acc, [*elem, *row, *col], *value),
        }
    }

    /// `while`: the head runs the hoisted statements and the condition
    /// (and the fence after it, when there is one) before every trip.
    fn while_loop(&mut self, stmt: StmtId, pre: &[StmtId], cond: ExprId, body: &[StmtId]) {
        let span = self.f.stmt_span(stmt);
        let head = self.label("while");
        let done = self.label("endwhile");
        self.place_label(&head);
        self.block(pre);
        self.loc(span);
        let c = self.expr(cond);
        let p = self.in_reg(c, ScalarTy::Bool);
        if let Some(b) = self.f.fence(stmt) {
            self.barrier(b);
        }
        self.ins(&format!("@!{p} bra {done};"));
        self.loops.push((head.clone(), done.clone()));
        self.block(body);
        self.loops.pop();
        self.loc(span);
        self.ins(&format!("bra {head};"));
        self.place_label(&done);
    }

    fn for_loop(&mut self, stmt: StmtId, l: &super::ir::ForLoop) {
        let ty = self.f.vars[l.var].ty;
        let i = self.var_reg(l.var);
        let s = self.expr(l.start);
        self.mov_to(i, s, ty);
        let e = self.expr(l.end);
        let e_const = match e {
            V::I(c, _) => Some(c),
            _ => None,
        };
        let e = self.in_reg(e, ty);
        let st = self.expr(l.step);
        let st = match st {
            V::R(r) => {
                // A step known only at run time: evaluate it once.
                let c = self.reg(RegClass::of(ty));
                self.ins(&format!("mov{} {c}, {r};", values::mov_ty(ty)));
                V::R(c)
            }
            other => other,
        };
        if let Some(b) = self.f.fence(stmt) {
            self.barrier(b);
        }
        let span = self.f.stmt_span(stmt);
        let head = self.label("for");
        let done = self.label("endfor");
        let suffix = values::int_suffix(ty);
        self.place_label(&head);
        self.loc(span);
        let p = self.reg(RegClass::Pred);
        match st {
            V::I(v, _) if v < 0 => self.ins(&format!("setp.le{suffix} {p}, {i}, {e};")),
            V::I(..) => self.ins(&format!("setp.ge{suffix} {p}, {i}, {e};")),
            _ => {
                // Sign of the step unknown: stop when (step > 0 ? i >= end : i <= end).
                let up = self.reg(RegClass::Pred);
                let ge = self.reg(RegClass::Pred);
                let le = self.reg(RegClass::Pred);
                let sv = self.operand(st);
                self.ins(&format!("setp.gt{suffix} {up}, {sv}, 0;"));
                self.ins(&format!("setp.ge{suffix} {ge}, {i}, {e};"));
                self.ins(&format!("setp.le{suffix} {le}, {i}, {e};"));
                self.ins(&format!("and.pred {ge}, {ge}, {up};"));
                self.ins(&format!("not.pred {up}, {up};"));
                self.ins(&format!("and.pred {le}, {le}, {up};"));
                self.ins(&format!("or.pred {p}, {ge}, {le};"));
            }
        }
        self.ins(&format!("@{p} bra {done};"));
        // A label for `continue` only when the body has one, so loops
        // without it keep their PTX.
        let next = continues(self.f, &l.body).then(|| self.label("next"));
        self.loops
            .push((next.clone().unwrap_or_default(), done.clone()));
        self.block(&l.body);
        self.loops.pop();
        if let Some(next) = next {
            self.place_label(&next);
        }
        self.loc(span);
        let sv = self.operand(st);
        let add = format!("add{suffix} {i}, {i}, {sv};");
        match self.step_may_wrap(e_const, st, suffix) {
            // The language requires `i += step` after the last trip to stay
            // inside i32 (docs/language.md, `for`); with constant bounds the
            // checker proves it (P0413), else the simulator checks it here
            // at no cost on the GPU (docs/simulator.md).
            true => {
                // The main loop of an unrolled `k` counts in `k_main`
                // (`unroll.rs`): the report names the user's `k`.
                let name = &self.f.vars[l.var].name;
                let name = name
                    .strip_suffix("_main")
                    .filter(|n| self.f.vars.iter().any(|(_, v)| v.name == *n))
                    .unwrap_or(name)
                    .to_string();
                self.ins(&format!("{add} // phobos.step {name}"));
            }
            false => self.ins(&add),
        }
        self.ins(&format!("bra {head};"));
        self.place_label(&done);
    }

    /// Whether a loop's `i += step` after its last trip may leave i32: not
    /// for a step of 1 or -1 (`i < end` bounds `i + 1`), nor for a constant
    /// step and end that leave no room for it (`end - 1 + step` inside
    /// i32 for a step up).
    fn step_may_wrap(&self, end: Option<i128>, step: V, suffix: &str) -> bool {
        if suffix != ".s32" {
            return false;
        }
        let (lo, hi) = (i128::from(i32::MIN), i128::from(i32::MAX));
        match (end, step) {
            (_, V::I(1 | -1, _)) => false,
            (Some(e), V::I(k, _)) if k > 0 => e - 1 + k > hi,
            (Some(e), V::I(k, _)) => e + 1 + k < lo,
            _ => true,
        }
    }

    /// Evaluate a scalar expression.
    pub fn expr(&mut self, e: ExprId) -> V {
        self.scalar_expr(e)
    }

    /// The type of a scalar expression.
    pub fn ty(&self, e: ExprId) -> ScalarTy {
        match self.f.exprs[e].ty {
            Ty::Scalar(t) | Ty::Run { elem: t, .. } => t,
            Ty::Unit => ScalarTy::I32,
        }
    }
}

/// The `.param` / `ld.param` type of a scalar parameter.
fn param_ty(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::Bool | ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => ".u8",
        ScalarTy::I8 => ".s8",
        ScalarTy::I16 => ".s16",
        ScalarTy::U16 => ".u16",
        ScalarTy::I32 => ".s32",
        ScalarTy::U32 => ".u32",
        ScalarTy::I64 => ".s64",
        ScalarTy::U64 => ".u64",
        ScalarTy::F16 | ScalarTy::BF16 => ".b16",
        ScalarTy::F32 => ".f32",
        ScalarTy::F64 => ".f64",
    }
}

/// How deep `Emitter::entry_key` looks through operands and vars.
const ENTRY_DEPTH: u32 = 24;

/// For each var, the value of its one assignment when that is a top-level
/// statement of the kernel (so it runs once, before anything after it);
/// `Emitter::entry_key` decides whether the value can be computed at the
/// entry.
fn entry_vars(f: &Func) -> Vec<Option<ExprId>> {
    let mut writes = vec![0u32; f.vars.len()];
    let mut count = |v: super::ir::VarId| {
        if let Some(w) = writes.get_mut(v.0 as usize) {
            *w += 1;
        }
    };
    for (_, s) in f.stmts.iter() {
        match &s.kind {
            StmtKind::Set(v, _) => count(*v),
            StmtKind::For(l) => count(l.var),
            StmtKind::CtaColl(c) => count(c.dst),
            StmtKind::Atomic { dst: Some(v), .. } => count(*v),
            StmtKind::AccMap { elem, row, col, .. } => {
                count(*elem);
                count(*row);
                count(*col);
            }
            _ => {}
        }
    }
    let mut out = vec![None; f.vars.len()];
    for &s in &f.body {
        if let StmtKind::Set(v, e) = &f.stmts[s].kind {
            if writes.get(v.0 as usize) == Some(&1) {
                out[v.0 as usize] = Some(*e);
            }
        }
    }
    out
}

/// Whether a loop body holds a `continue` of that loop (not of a loop
/// nested in it).
fn continues(f: &Func, body: &[StmtId]) -> bool {
    body.iter().any(|&s| match &f.stmts[s].kind {
        StmtKind::Continue => true,
        StmtKind::If { then, els, .. } => continues(f, then) || continues(f, els),
        _ => false,
    })
}

/// The `.param` name of tensor map `i`: `m_TENSOR_i`.
fn tensor_map_name(k: &hir::Kernel, f: &Func, i: u32) -> String {
    let p = f.tensor_maps[i as usize].param;
    format!("m_{}_{i}", k.params[p.0 as usize].name)
}
