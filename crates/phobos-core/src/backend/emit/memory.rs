//! Memory: 64-bit global addresses (index math in i32, widened with
//! `mul.wide`), 32-bit shared addresses, point and run loads and stores at
//! the widths `divisibility` decided, packed bytes for dp4a, and the
//! CTA-wide tile copies and stores (all threads together, vectorized where
//! aligned, masked at the tensor's bounds).

use super::{reg_list, Emitter, Reg, RegClass, V};
use crate::ast::ScalarTy;
use crate::backend::ir::{
    AccessId, BarrierId, BufferId, BufferKind, ExprId, ExprKind, Mem, Shape, Within,
};
use crate::hir::{DimRef, ParamKind};

/// A run as loaded: elements, or packed words of sub-word elements.
#[derive(Clone)]
pub(crate) enum RunData {
    Elems(Vec<V>),
    /// `bytes` bytes of the run per register (4, or 2 for a 2-byte run).
    Words {
        words: Vec<Reg>,
        bytes: u32,
    },
}

/// The `ld`/`st` type of an element.
fn mem_ty(t: ScalarTy) -> &'static str {
    match t {
        // An 8-bit float is its bits, kept zero-extended like a u8.
        ScalarTy::Bool | ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => ".u8",
        ScalarTy::I8 => ".s8",
        ScalarTy::I16 => ".s16",
        ScalarTy::U16 => ".u16",
        ScalarTy::I32 | ScalarTy::U32 => ".u32",
        ScalarTy::I64 | ScalarTy::U64 => ".u64",
        ScalarTy::F16 | ScalarTy::BF16 => ".b16",
        ScalarTy::F32 => ".f32",
        ScalarTy::F64 => ".f64",
    }
}

/// The store type of an element (no sign for stores).
fn st_ty(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::Bool | ScalarTy::U8 | ScalarTy::I8 => ".u8",
        ScalarTy::I16 | ScalarTy::U16 => ".u16",
        _ => mem_ty(t),
    }
}

/// Where an address points.
#[derive(Clone)]
pub(crate) struct Addr {
    /// `ld.global.nc`, `ld.global`, `ld.shared` ... (without the `ld`/`st`).
    space: &'static str,
    store_space: &'static str,
    reg: Reg,
}

impl Addr {
    fn at(&self, off: i64) -> String {
        if off == 0 {
            format!("[{}]", self.reg)
        } else {
            format!("[{}+{off}]", self.reg)
        }
    }
}

impl Emitter<'_> {
    fn const_or_reg64(&mut self, v: V, signed: bool) -> V {
        match v {
            V::I(i, _) => V::I(i, ScalarTy::I64),
            V::R(r) if r.class == RegClass::B64 => v,
            V::R(r) => {
                let d = self.reg(RegClass::B64);
                let s = if signed { "s" } else { "u" };
                self.ins(&format!("cvt.{s}64.{s}32 {d}, {r};"));
                V::R(d)
            }
            V::F(..) => V::I(0, ScalarTy::I64),
        }
    }

    pub(super) fn add64(&mut self, a: V, b: V) -> V {
        match (a, b) {
            (V::I(x, _), V::I(y, _)) => V::I(x + y, ScalarTy::I64),
            (V::I(0, _), o) | (o, V::I(0, _)) => o,
            (V::I(..), V::R(r)) | (V::R(r), V::I(..)) => {
                let c = if let V::I(x, _) = a {
                    x
                } else if let V::I(y, _) = b {
                    y
                } else {
                    0
                };
                let d = self.reg(RegClass::B64);
                self.ins(&format!("add.s64 {d}, {r}, {c};"));
                V::R(d)
            }
            (V::R(x), V::R(y)) => {
                let d = self.reg(RegClass::B64);
                self.ins(&format!("add.s64 {d}, {x}, {y};"));
                V::R(d)
            }
            _ => a,
        }
    }

    pub(super) fn mul64(&mut self, a: V, b: V) -> V {
        match (a, b) {
            (V::I(x, _), V::I(y, _)) => V::I(x * y, ScalarTy::I64),
            (V::I(0, _), _) | (_, V::I(0, _)) => V::I(0, ScalarTy::I64),
            (V::I(1, _), o) | (o, V::I(1, _)) => o,
            (V::R(r), o) | (o, V::R(r)) => {
                let d = self.reg(RegClass::B64);
                let ob = self.operand(o);
                self.ins(&format!("mul.lo.s64 {d}, {r}, {ob};"));
                V::R(d)
            }
            _ => a,
        }
    }

    /// `a * b` of two 32-bit signed values as a 64-bit product.
    fn mul_wide(&mut self, a: V, b: V) -> V {
        match (a, b) {
            (V::I(x, _), V::I(y, _)) => V::I(x * y, ScalarTy::I64),
            (V::I(0, _), _) | (_, V::I(0, _)) => V::I(0, ScalarTy::I64),
            (V::R(r), o) | (o, V::R(r)) if r.class == RegClass::B32 => {
                if let V::I(1, _) = o {
                    return self.const_or_reg64(V::R(r), true);
                }
                let d = self.reg(RegClass::B64);
                let ob = match o {
                    V::R(x) if x.class != RegClass::B32 => {
                        let c = self.reg(RegClass::B32);
                        self.ins(&format!("cvt.u32.u64 {c}, {x};"));
                        c.to_string()
                    }
                    _ => self.operand(o),
                };
                self.ins(&format!("mul.wide.s32 {d}, {r}, {ob};"));
                V::R(d)
            }
            _ => {
                let a64 = self.const_or_reg64(a, true);
                let b64 = self.const_or_reg64(b, true);
                self.mul64(a64, b64)
            }
        }
    }

    /// A tensor dim as a value (constant or the `.param` register).
    fn dim_value(&self, r: &DimRef) -> V {
        match r {
            DimRef::Const(c) => V::I(*c as i128, ScalarTy::I32),
            DimRef::Named(d) => match (self.dims[d.0 as usize], self.k.dims[d.0 as usize].constant)
            {
                (Some(reg), _) => V::R(reg),
                (None, c) => V::I(c.unwrap_or(0) as i128, ScalarTy::I32),
            },
        }
    }

    pub(super) fn tensor_dims(&self, p: crate::hir::ParamId) -> (Vec<V>, bool) {
        match &self.k.params[p.0 as usize].kind {
            ParamKind::Tensor { dims, written, .. } => {
                (dims.iter().map(|d| self.dim_value(d)).collect(), *written)
            }
            ParamKind::Scalar(_) => (vec![], true),
        }
    }

    /// Linear element offset (64-bit) of `idx` in a row-major array with
    /// the given dims.
    pub(super) fn linear64(&mut self, idx: &[V], idx_signed: &[bool], dims: &[V]) -> V {
        let r = idx.len();
        if r == 0 {
            return V::I(0, ScalarTy::I64);
        }
        let mut lin = self.const_or_reg64(idx[r - 1], idx_signed[r - 1]);
        // The stride of the axis below, in 64 bits (None: the last dim, 32-bit).
        let mut stride: Option<V> = None;
        for axis in (0..r - 1).rev() {
            let term = match stride {
                None => {
                    let t = self.mul_wide(idx[axis], dims[axis + 1]);
                    stride = Some(dims[axis + 1]);
                    t
                }
                Some(s) => {
                    let s64 = self.const_or_reg64(s, true);
                    let d64 = self.const_or_reg64(dims[axis + 1], true);
                    let s2 = self.mul64(s64, d64);
                    stride = Some(s2);
                    let i64v = self.const_or_reg64(idx[axis], idx_signed[axis]);
                    self.mul64(i64v, s2)
                }
            };
            lin = self.add64(lin, term);
        }
        lin
    }

    fn index_values(&mut self, acc: AccessId) -> (Vec<V>, Vec<bool>) {
        let index = self.f.accesses[acc].index.clone();
        let signed = index.iter().map(|e| self.ty(*e).is_signed()).collect();
        let vals = index.iter().map(|e| self.scalar_expr(*e)).collect();
        (vals, signed)
    }

    /// The address of the first element of an access, and the byte stride
    /// between consecutive elements of a run.
    /// The address of an access. Its subscripts are evaluated first (their
    /// own loads recorded as theirs); from here until the access is done,
    /// the memory instructions emitted are recorded as the access's own.
    pub(crate) fn address(&mut self, acc: AccessId) -> (Addr, V) {
        let r = match self.shifted_address(acc) {
            Some(shifted) => shifted,
            None => {
                let computed = self.address_of(acc);
                if matches!(self.f.accesses[acc].mem, Mem::Tensor(_)) {
                    self.addresses.insert(acc, computed.clone());
                }
                computed
            }
        };
        self.cur_access = Some(acc);
        r
    }

    /// The address of an access that `Func::access_shift` places `d`
    /// elements after an access already emitted: that address plus a
    /// constant. (It assumes the index does not wrap around in 32 bits
    /// between the two, which holds whenever both accesses are in bounds.)
    fn shifted_address(&mut self, acc: AccessId) -> Option<(Addr, V)> {
        let (base, d) = *self.f.access_shift.get(&acc)?;
        let (addr, stride) = self.addresses.get(&base)?.clone();
        let a = &self.f.accesses[acc];
        let bytes = d.checked_mul(a.elem.size() as i64)?;
        self.loc(a.span);
        let reg = self.reg(RegClass::B64);
        self.ins(&format!("add.s64 {reg}, {}, {bytes};", addr.reg));
        Some((Addr { reg, ..addr }, stride))
    }

    fn address_of(&mut self, acc: AccessId) -> (Addr, V) {
        let a = self.f.accesses[acc].clone();
        let size = a.elem.size() as i128;
        let (idx, signed) = self.index_values(acc);
        self.loc(a.span);
        match a.mem {
            Mem::Tensor(p) => {
                let (dims, written) = self.tensor_dims(p);
                let bytes = match (idx.as_slice(), signed.as_slice()) {
                    // One 32-bit signed index: the byte offset is one mul.wide.
                    ([V::R(r)], [true]) if r.class == RegClass::B32 && size > 1 => {
                        self.mul_wide(idx[0], V::I(size, ScalarTy::I32))
                    }
                    _ => {
                        let lin = self.linear64(&idx, &signed, &dims);
                        self.mul64(lin, V::I(size, ScalarTy::I64))
                    }
                };
                let base = self.params[p.0 as usize].unwrap_or(Reg::new(RegClass::B64, 0));
                let addr = match self.add64(V::R(base), bytes) {
                    V::R(r) => r,
                    _ => base,
                };
                let stride = match a.shape {
                    Shape::Run { axis, .. } if axis + 1 < dims.len() => {
                        let mut s = V::I(size, ScalarTy::I64);
                        for d in &dims[axis + 1..] {
                            let d64 = self.const_or_reg64(*d, true);
                            s = self.mul64(s, d64);
                        }
                        s
                    }
                    _ => V::I(size, ScalarTy::I64),
                };
                let space = if written { ".global" } else { ".global.nc" };
                (
                    Addr {
                        space,
                        store_space: ".global",
                        reg: addr,
                    },
                    stride,
                )
            }
            Mem::Buffer(b) => {
                let shape: Vec<i128> = match &self.f.buffers[b].kind {
                    BufferKind::Tile { shape, .. } => shape.iter().map(|&s| s as i128).collect(),
                    BufferKind::Scratch { .. } => vec![],
                };
                let off = self.an.plan.offset[b.0 as usize] as i128;
                let base = self.reg(RegClass::B32);
                self.ins(&format!("mov.u32 {base}, {};", self.smem));
                let base = if off == 0 {
                    base
                } else {
                    let d = self.reg(RegClass::B32);
                    self.ins(&format!("add.s32 {d}, {base}, {off};"));
                    d
                };
                self.at_read_stage(b, base);
                self.address_32(base, &shape, &idx, size, &a.shape, ".shared")
            }
            Mem::Local(arr) => {
                let shape: Vec<i128> = self.f.arrays[arr]
                    .shape
                    .iter()
                    .map(|&s| i128::from(s))
                    .collect();
                let base = self.reg(RegClass::B32);
                self.ins(&format!("mov.u32 {base}, {};", local_name(self.f, arr)));
                self.address_32(base, &shape, &idx, size, &a.shape, ".local")
            }
        }
    }

    /// For a ring buffer (`Func::rings`), `base += read * stage_bytes`:
    /// the stage the loop's trip reads. Nothing for other buffers.
    pub(super) fn at_read_stage(&mut self, b: BufferId, base: Reg) {
        if let Some(ring) = self.f.rings.get(&b) {
            let read = self.var_reg(ring.read);
            self.ins(&format!(
                "mad.lo.s32 {base}, {read}, {}, {base};",
                ring.stage_bytes
            ));
        }
    }

    /// The byte offset of stage `stage` of ring buffer `b` (0 for a buffer
    /// that is no ring).
    pub(super) fn stage_offset(&mut self, b: BufferId, stage: Option<ExprId>) -> V {
        let Some(ring) = self.f.rings.get(&b).copied() else {
            return V::I(0, ScalarTy::I32);
        };
        let bytes = i128::from(ring.stage_bytes);
        let v = match stage {
            Some(e) => self.scalar_expr(e),
            None => V::R(self.var_reg(ring.read)),
        };
        match v {
            V::I(c, _) => V::I(c * bytes, ScalarTy::I32),
            _ => {
                let r = self.in_reg(v, ScalarTy::I32);
                let d = self.reg(RegClass::B32);
                self.ins(&format!("mul.lo.s32 {d}, {r}, {bytes};"));
                V::R(d)
            }
        }
    }

    /// A 32-bit address in shared or local memory: `base` plus each index
    /// times its row-major stride in bytes.
    fn address_32(
        &mut self,
        base: Reg,
        shape: &[i128],
        idx: &[V],
        size: i128,
        access: &Shape,
        space: &'static str,
    ) -> (Addr, V) {
        let strides = row_major_strides(shape);
        let mut cur = base;
        for (i, v) in idx.iter().enumerate() {
            let scale = strides.get(i).copied().unwrap_or(1) * size;
            match v {
                V::I(c, _) => {
                    if c * scale != 0 {
                        let d = self.reg(RegClass::B32);
                        self.ins(&format!("add.s32 {d}, {cur}, {};", c * scale));
                        cur = d;
                    }
                }
                _ => {
                    let r = self.in_reg(*v, ScalarTy::I32);
                    let r = if r.class == RegClass::B64 {
                        let c = self.reg(RegClass::B32);
                        self.ins(&format!("cvt.u32.u64 {c}, {r};"));
                        c
                    } else {
                        r
                    };
                    let d = self.reg(RegClass::B32);
                    self.ins(&format!("mad.lo.s32 {d}, {r}, {scale}, {cur};"));
                    cur = d;
                }
            }
        }
        let stride = match access {
            Shape::Run { axis, .. } => V::I(
                strides.get(*axis).copied().unwrap_or(1) * size,
                ScalarTy::I64,
            ),
            _ => V::I(size, ScalarTy::I64),
        };
        (
            Addr {
                space,
                store_space: space,
                reg: cur,
            },
            stride,
        )
    }

    /// The address of element `i` of a run with a runtime stride.
    fn elem_addr(&mut self, base: &Addr, stride: V, i: u32) -> (Addr, i64) {
        match stride {
            V::I(s, _) => (base.clone(), (s * i as i128) as i64),
            _ => {
                let off = self.mul64(stride, V::I(i as i128, ScalarTy::I64));
                let r = match self.add64(V::R(base.reg), off) {
                    V::R(r) => r,
                    _ => base.reg,
                };
                (
                    Addr {
                        reg: r,
                        ..base.clone()
                    },
                    0,
                )
            }
        }
    }

    fn load_elem(&mut self, addr: &Addr, off: i64, t: ScalarTy) -> V {
        if t == ScalarTy::Bool {
            let r = self.reg(RegClass::B32);
            self.ins(&format!("ld{}.u8 {r}, {};", addr.space, addr.at(off)));
            let p = self.reg(RegClass::Pred);
            self.ins(&format!("setp.ne.u32 {p}, {r}, 0;"));
            return V::R(p);
        }
        let r = self.reg(RegClass::of(t));
        self.ins(&format!(
            "ld{}{} {r}, {};",
            addr.space,
            mem_ty(t),
            addr.at(off)
        ));
        V::R(r)
    }

    fn store_elem(&mut self, addr: &Addr, off: i64, t: ScalarTy, v: V) {
        let r = if t == ScalarTy::Bool {
            let p = self.in_reg(v, t);
            let r = self.reg(RegClass::B32);
            self.ins(&format!("selp.u32 {r}, 1, 0, {p};"));
            r
        } else {
            self.in_reg(v, t)
        };
        self.ins(&format!(
            "st{}{} {}, {r};",
            addr.store_space,
            st_ty(t),
            addr.at(off)
        ));
    }

    /// The state space (`.global` or `.shared`) and address register of an
    /// atomic's element; its instructions count as the access's own until
    /// the caller clears `cur_access`.
    pub(crate) fn atomic_address(&mut self, acc: AccessId) -> (&'static str, super::Reg) {
        let (addr, _) = self.address(acc);
        (addr.store_space, addr.reg)
    }

    pub(crate) fn load_point(&mut self, acc: AccessId) -> V {
        if let Some(Cached::Point(v)) = self.reuse(acc) {
            return v;
        }
        let t = self.f.accesses[acc].elem;
        let (addr, _) = self.address(acc);
        let v = self.load_elem(&addr, 0, t);
        self.cur_access = None;
        self.load_cache.push((acc, Cached::Point(v)));
        v
    }

    /// The value of an earlier load of the same elements in this
    /// straight-line stretch, if any: `elem(X[r, k :+ 8], i)` written eight
    /// times, or a `fn` body naming `A[i]` twice, loads once. Nothing is
    /// stored between (a statement stores only after evaluating its
    /// operands, and the cache is emptied at every statement and label),
    /// and equal index expressions give equal addresses (they read no var
    /// set in between: a combine body empties the cache too).
    fn reuse(&mut self, acc: AccessId) -> Option<Cached> {
        let (src, c) = self
            .load_cache
            .iter()
            .find(|(a, _)| same_access(self.f, *a, acc))
            .map(|(a, c)| (*a, c.clone()))?;
        // The report counts the instructions of the load it reuses.
        self.emitted_copy(src, acc);
        Some(c)
    }

    /// Store one element; `fence` (a candidate barrier) goes after every
    /// operand is evaluated, before the write.
    pub(crate) fn store_point(&mut self, acc: AccessId, v: V, fence: Option<BarrierId>) {
        let t = self.f.accesses[acc].elem;
        let (addr, _) = self.address(acc);
        if let Some(b) = fence {
            self.barrier(b);
        }
        self.store_elem(&addr, 0, t, v);
        self.cur_access = None;
    }

    /// Load a run at the decided width.
    fn load_run(&mut self, acc: AccessId) -> RunData {
        if let Some(Cached::Run(r)) = self.reuse(acc) {
            return r;
        }
        let r = self.load_run_at(acc);
        self.cur_access = None;
        self.load_cache.push((acc, Cached::Run(r.clone())));
        r
    }

    fn load_run_at(&mut self, acc: AccessId) -> RunData {
        let a = self.f.accesses[acc].clone();
        let t = a.elem;
        let size = t.size();
        let len = a.shape.elems();
        let width = self.an.div.access[acc.0 as usize].width;
        let (addr, stride) = self.address(acc);
        if width <= size {
            let mut elems = Vec::new();
            for i in 0..len {
                let (ea, off) = self.elem_addr(&addr, stride, i);
                elems.push(self.load_elem(&ea, off, t));
            }
            return RunData::Elems(elems);
        }
        let chunks = (len * size) / width;
        if size >= 4 {
            let per = width / size;
            let mut elems = Vec::new();
            for c in 0..chunks {
                let regs: Vec<Reg> = (0..per).map(|_| self.reg(RegClass::of(t))).collect();
                let list = reg_list(&regs);
                let at = addr.at((c * width) as i64);
                self.ins(&format!(
                    "ld{}.v{per}{} {{{list}}}, {at};",
                    addr.space,
                    mem_ty(t)
                ));
                elems.extend(regs.into_iter().map(V::R));
            }
            return RunData::Elems(elems);
        }
        let mut words = Vec::new();
        if width < 4 {
            for c in 0..chunks {
                let r = self.reg(RegClass::B32);
                let at = addr.at((c * width) as i64);
                self.ins(&format!("ld{}.u16 {r}, {at};", addr.space));
                words.push(r);
            }
            return RunData::Words { words, bytes: 2 };
        }
        let per = width / 4;
        for c in 0..chunks {
            let regs: Vec<Reg> = (0..per).map(|_| self.reg(RegClass::B32)).collect();
            let at = addr.at((c * width) as i64);
            if per == 1 {
                self.ins(&format!("ld{}.u32 {}, {at};", addr.space, regs[0]));
            } else {
                let list = reg_list(&regs);
                self.ins(&format!("ld{}.v{per}.u32 {{{list}}}, {at};", addr.space));
            }
            words.extend(regs);
        }
        RunData::Words { words, bytes: 4 }
    }

    /// Unpack words of sub-word elements.
    fn unpack(&mut self, words: &[Reg], bytes: u32, t: ScalarTy) -> Vec<V> {
        let size = t.size();
        let per = bytes / size;
        let mut out = Vec::new();
        for w in words {
            if matches!(t, ScalarTy::F16 | ScalarTy::BF16) {
                let hs: Vec<Reg> = (0..per).map(|_| self.reg(RegClass::B16)).collect();
                if per == 2 {
                    self.ins(&format!("mov.b32 {{{}, {}}}, {w};", hs[0], hs[1]));
                } else {
                    self.ins(&format!("cvt.u16.u32 {}, {w};", hs[0]));
                }
                out.extend(hs.into_iter().map(V::R));
                continue;
            }
            for j in 0..per {
                let d = self.reg(RegClass::B32);
                let s = if t.is_signed() { "s32" } else { "u32" };
                self.ins(&format!(
                    "bfe.{s} {d}, {w}, {}, {};",
                    j * size * 8,
                    size * 8
                ));
                if t == ScalarTy::Bool {
                    let p = self.reg(RegClass::Pred);
                    self.ins(&format!("setp.ne.u32 {p}, {d}, 0;"));
                    out.push(V::R(p));
                } else {
                    out.push(V::R(d));
                }
            }
        }
        out
    }

    /// Pack sub-word elements (4 bytes or 2 halves per word).
    fn pack(&mut self, elems: &[V], t: ScalarTy) -> Vec<Reg> {
        let size = t.size() as usize;
        let per = (4 / size).max(1);
        let mut words = Vec::new();
        for chunk in elems.chunks(per) {
            let regs: Vec<Reg> = chunk
                .iter()
                .map(|v| {
                    if t == ScalarTy::Bool {
                        let p = self.in_reg(*v, t);
                        let r = self.reg(RegClass::B32);
                        self.ins(&format!("selp.u32 {r}, 1, 0, {p};"));
                        r
                    } else {
                        self.in_reg(*v, t)
                    }
                })
                .collect();
            let w = self.reg(RegClass::B32);
            if matches!(t, ScalarTy::F16 | ScalarTy::BF16) {
                let hi = regs.get(1).copied().unwrap_or(regs[0]);
                self.ins(&format!("mov.b32 {w}, {{{}, {hi}}};", regs[0]));
            } else if size == 2 {
                let hi = regs.get(1).copied().unwrap_or(regs[0]);
                self.ins(&format!("prmt.b32 {w}, {}, {hi}, 0x5410;", regs[0]));
            } else {
                let g = |i: usize| regs.get(i).copied().unwrap_or(regs[0]);
                let (lo, hi) = (self.reg(RegClass::B32), self.reg(RegClass::B32));
                self.ins(&format!("prmt.b32 {lo}, {}, {}, 0x0040;", g(0), g(1)));
                self.ins(&format!("prmt.b32 {hi}, {}, {}, 0x0040;", g(2), g(3)));
                self.ins(&format!("prmt.b32 {w}, {lo}, {hi}, 0x5410;"));
            }
            words.push(w);
        }
        words
    }

    pub(crate) fn load_run_elems(&mut self, acc: AccessId) -> Vec<V> {
        let t = self.f.accesses[acc].elem;
        match self.load_run(acc) {
            RunData::Elems(e) => e,
            RunData::Words { words, bytes } => self.unpack(&words, bytes, t),
        }
    }

    /// The packed words of a byte run expression (`word(run, i)`).
    pub(crate) fn run_words(&mut self, e: ExprId) -> Vec<Reg> {
        if let ExprKind::RunLoad(acc) = self.f.exprs[e].kind {
            let t = self.f.accesses[acc].elem;
            return match self.load_run(acc) {
                RunData::Words { words, bytes: 4 } => words,
                RunData::Words { words, bytes } => {
                    let elems = self.unpack(&words, bytes, t);
                    self.pack(&elems, t)
                }
                RunData::Elems(elems) => self.pack(&elems, t),
            };
        }
        let t = self.ty(e);
        let elems = self.run_elems(e);
        self.pack(&elems, t)
    }

    /// `sum(i32(a) * i32(b))` / `sum(i32(a))` over byte runs: one dp4a per word.
    pub(crate) fn dp4a_sum(&mut self, a: ExprId, b: Option<ExprId>) -> V {
        let (wa, sa) = self.packed_words(a);
        let (wb, sb) = match b {
            Some(b) => {
                let (w, s) = self.packed_words(b);
                (w.into_iter().map(V::R).collect::<Vec<_>>(), s)
            }
            None => (vec![V::I(0x0101_0101, ScalarTy::U32); wa.len()], false),
        };
        let (sa, sb) = (
            if sa { "s32" } else { "u32" },
            if sb { "s32" } else { "u32" },
        );
        let mut acc = V::I(0, ScalarTy::I32);
        for (x, y) in wa.iter().zip(wb) {
            let d = self.reg(RegClass::B32);
            let yo = self.operand(y);
            let c = self.operand(acc);
            self.ins(&format!("dp4a.{sa}.{sb} {d}, {x}, {yo}, {c};"));
            acc = V::R(d);
        }
        acc
    }

    /// Words of a packed-byte operand and whether its bytes are signed.
    fn packed_words(&mut self, e: ExprId) -> (Vec<Reg>, bool) {
        let Some((acc, shr, mask)) = crate::backend::ir::packed_parts(self.f, e) else {
            return (vec![], true);
        };
        let signed = self.f.accesses[acc].elem == ScalarTy::I8;
        let t = self.f.accesses[acc].elem;
        let mut words = match self.load_run(acc) {
            RunData::Words { words, bytes: 4 } => words,
            RunData::Words { words, bytes } => {
                let elems = self.unpack(&words, bytes, t);
                self.pack(&elems, t)
            }
            RunData::Elems(elems) => self.pack(&elems, t),
        };
        if let Some(s) = shr {
            words = words
                .into_iter()
                .map(|w| {
                    let d = self.reg(RegClass::B32);
                    self.ins(&format!("shr.b32 {d}, {w}, {s};"));
                    d
                })
                .collect();
        }
        if let Some(m) = mask {
            let rep = (m as u64) * 0x0101_0101;
            words = words
                .into_iter()
                .map(|w| {
                    let d = self.reg(RegClass::B32);
                    self.ins(&format!("and.b32 {d}, {w}, {rep};"));
                    d
                })
                .collect();
        }
        // Masked bytes are below 128: signed and unsigned agree.
        (words, signed || mask.is_some())
    }

    pub(crate) fn store_run(
        &mut self,
        acc: AccessId,
        value: ExprId,
        only: Option<ExprId>,
        fence: Option<BarrierId>,
    ) {
        self.store_run_at(acc, value, only, fence);
        self.cur_access = None;
    }

    fn store_run_at(
        &mut self,
        acc: AccessId,
        value: ExprId,
        only: Option<ExprId>,
        fence: Option<BarrierId>,
    ) {
        let a = self.f.accesses[acc].clone();
        let t = a.elem;
        let size = t.size();
        if let Some(i) = only {
            let v = self.scalar_expr(value);
            let iv = self.scalar_expr(i);
            let (addr, stride) = self.address(acc);
            if let Some(b) = fence {
                self.barrier(b);
            }
            match iv {
                V::I(c, _) => {
                    let (ea, off) = self.elem_addr(&addr, stride, c as u32);
                    self.store_elem(&ea, off, t, v);
                }
                _ => {
                    let i64v = self.const_or_reg64(iv, true);
                    let off = self.mul64(i64v, stride);
                    let r = match self.add64(V::R(addr.reg), off) {
                        V::R(r) => r,
                        _ => addr.reg,
                    };
                    let ea = Addr { reg: r, ..addr };
                    self.store_elem(&ea, 0, t, v);
                }
            }
            return;
        }
        let elems = if matches!(self.f.exprs[value].ty, crate::hir::Ty::Run { .. }) {
            self.run_elems(value)
        } else {
            let v = self.scalar_expr(value);
            vec![v; a.shape.elems() as usize]
        };
        let width = self.an.div.access[acc.0 as usize].width;
        let (addr, stride) = self.address(acc);
        if let Some(b) = fence {
            self.barrier(b);
        }
        if width <= size {
            for (i, v) in elems.iter().enumerate() {
                let (ea, off) = self.elem_addr(&addr, stride, i as u32);
                self.store_elem(&ea, off, t, *v);
            }
            return;
        }
        let per_bytes = width as usize;
        if size >= 4 {
            let per = per_bytes / size as usize;
            for (c, chunk) in elems.chunks(per).enumerate() {
                let regs: Vec<Reg> = chunk.iter().map(|v| self.in_reg(*v, t)).collect();
                let list = reg_list(&regs);
                let at = addr.at((c * per_bytes) as i64);
                self.ins(&format!(
                    "st{}.v{per}{} {at}, {{{list}}};",
                    addr.store_space,
                    mem_ty(t)
                ));
            }
            return;
        }
        let words = self.pack(&elems, t);
        if width < 4 {
            for (c, w) in words.iter().enumerate() {
                let at = addr.at((c * per_bytes) as i64);
                self.ins(&format!("st{}.u16 {at}, {w};", addr.store_space));
            }
            return;
        }
        let per = per_bytes / 4;
        for (c, chunk) in words.chunks(per).enumerate() {
            let at = addr.at((c * per_bytes) as i64);
            if per == 1 {
                self.ins(&format!("st{}.u32 {at}, {};", addr.store_space, chunk[0]));
            } else {
                let list = reg_list(chunk);
                self.ins(&format!(
                    "st{}.v{per}.u32 {at}, {{{list}}};",
                    addr.store_space
                ));
            }
        }
    }

    pub(crate) fn tile_copy(&mut self, acc: AccessId, buffer: BufferId, at: &[u32]) {
        self.tile_transfer(acc, buffer, Transfer::Copy, at);
        self.cur_access = None;
        if self.f.swizzle.contains_key(&buffer) {
            self.proxy_fence();
        }
    }

    /// `fence.proxy.async.shared::cta`: this thread's generic-proxy
    /// writes to shared memory become visible to the async proxy, which
    /// `wgmma` reads operands through (PTX ISA, "Async proxy"). Emitted
    /// after the thread's writes of `wgmma` operands land (a plain tile
    /// copy, a `cp.async.wait_group`) and before the barrier that hands
    /// them to the other warps.
    pub(crate) fn proxy_fence(&mut self) {
        self.need_version(80);
        self.ins("fence.proxy.async.shared::cta;");
    }

    /// A tile copy into stage `stage` of a ring buffer, with `cp.async`
    /// (see `tile_chunk`).
    pub(crate) fn async_copy(
        &mut self,
        acc: AccessId,
        buffer: BufferId,
        at: &[u32],
        stage: ExprId,
    ) {
        let tma =
            (self.f.rings.get(&buffer)).is_some_and(|r| self.f.tma_rings.contains_key(&r.looped));
        if tma {
            self.tma_copy(acc, buffer, stage);
        } else {
            self.tile_transfer(acc, buffer, Transfer::Async(stage), at);
        }
        self.cur_access = None;
    }

    pub(crate) fn tile_store(&mut self, acc: AccessId, buffer: BufferId) {
        // A tile in a buffer with padded rows (a `dot` operand) is the box
        // at the buffer's start.
        let padded = match (&self.f.buffers[buffer].kind, &self.f.accesses[acc].shape) {
            (BufferKind::Tile { shape: whole, .. }, Shape::Tile { shape }) => whole != shape,
            _ => false,
        };
        let at = if padded {
            vec![0; self.f.accesses[acc].index.len()]
        } else {
            vec![]
        };
        self.tile_transfer(acc, buffer, Transfer::Store, &at);
        self.cur_access = None;
    }

    /// Move a tile between global memory and shared memory, all threads
    /// together: chunk `c` (of `v` elements along the last axis) goes to
    /// thread `c % threads`. Chunks wholly inside the tensor move with one
    /// vector instruction; the others element by element, masked (zero
    /// fill on copies, no store on stores).
    /// `at` (copies only) places the box in a larger buffer: each element
    /// then goes to its own place in the buffer's row-major layout, with
    /// vectors only where every chunk stays aligned there.
    fn tile_transfer(&mut self, acc: AccessId, buffer: BufferId, how: Transfer, at: &[u32]) {
        let to_global = matches!(how, Transfer::Store);
        let a = self.f.accesses[acc].clone();
        let Mem::Tensor(p) = a.mem else { return };
        let Shape::Tile { shape } = a.shape.clone() else {
            return;
        };
        if shape.is_empty() || shape.contains(&0) {
            return;
        }
        let t = a.elem;
        let size = t.size();
        let width = self.an.div.access[acc.0 as usize].width.max(size);
        let rank = shape.len();
        let placed = placement(&self.f.buffers[buffer].kind, at, rank);
        let v = match &placed {
            // A row of the buffer, and the box's first column, must keep
            // every chunk of `v` elements aligned to `v` elements.
            Some((at, strides)) => {
                let mut v = width / size;
                while v > 1
                    && !(at[rank - 1] % v == 0
                        && strides
                            .iter()
                            .take(rank - 1)
                            .all(|s| *s % i128::from(v) == 0))
                {
                    v /= 2;
                }
                v
            }
            None => width / size,
        };
        let last = shape[rank - 1];
        let chunks_per_row = last / v;
        let rows: u32 = shape[..rank - 1].iter().product();
        let total = rows * chunks_per_row;
        let (dims, written) = self.tensor_dims(p);
        let starts: Vec<V> = a.index.iter().map(|e| self.scalar_expr(*e)).collect();
        let stage = match how {
            Transfer::Async(e) => Some(e),
            _ => None,
        };
        let stage_off = self.stage_offset(buffer, stage);
        self.loc(a.span);
        self.cur_access = Some(acc);
        let threads = self.f.threads;
        let iters = total.div_ceil(threads);
        let smem_base = self.an.plan.offset[buffer.0 as usize];
        let base = self.params[p.0 as usize].unwrap_or(Reg::new(RegClass::B64, 0));
        let gspace = if to_global || written {
            ".global"
        } else {
            ".global.nc"
        };
        let ctx = TileCtx {
            shape: shape.clone(),
            v,
            t,
            chunks_per_row,
            dims,
            starts,
            start_exprs: a.index.clone(),
            smem_base,
            base,
            gspace,
            to_global,
            placed,
            stage_off,
            async_copy: stage.is_some() && matches!(v * size, 4 | 8 | 16),
            swizzle: self.f.swizzle.get(&buffer).copied(),
            tf32: t == ScalarTy::F32 && self.f.swizzle.contains_key(&buffer),
        };
        // Interior tiles (every element inside the tensor) take a path with
        // no masks: one vector instruction (or `cp.async` without a
        // zero-fill size) per chunk, addressed from the tile's first
        // element. Only tiles that cross an edge pay for the checks below.
        let slow = self.label("tile_edge");
        let all_done = self.label("tile_done");
        match self.tile_inside(&ctx) {
            // Known at compile time: one path only.
            Inside::Always => {
                let tile_ptr = self.tile_pointer(&ctx);
                self.tile_chunks(&ctx, total, iters, Some(tile_ptr));
            }
            Inside::Never => self.tile_chunks(&ctx, total, iters, None),
            Inside::When(inside) => {
                self.ins(&format!("@!{inside} bra {slow};"));
                let tile_ptr = self.tile_pointer(&ctx);
                self.tile_chunks(&ctx, total, iters, Some(tile_ptr));
                self.ins(&format!("bra {all_done};"));
                self.place_label(&slow);
                self.tile_chunks(&ctx, total, iters, None);
                self.place_label(&all_done);
            }
        }
    }

    /// Every chunk of a tile transfer, `iters` per thread: unmasked from
    /// `tile_ptr` (the address of the tile's first element, for a tile
    /// wholly inside the tensor) or masked.
    fn tile_chunks(&mut self, ctx: &TileCtx, total: u32, iters: u32, tile_ptr: Option<Reg>) {
        let threads = self.f.threads;
        if let Some(p) = tile_ptr {
            if let Some(step) = self.chunk_step(ctx, iters) {
                self.interior_chunks(ctx, total, iters, step, p);
                return;
            }
        }
        let chunk = |this: &mut Self, c: Reg| match tile_ptr {
            Some(p) => this.interior_chunk(ctx, c, p),
            None => this.tile_chunk(ctx, c),
        };
        if iters <= 4 {
            for it in 0..iters {
                let c = self.reg(RegClass::B32);
                let tid = self.tid;
                self.ins(&format!("add.s32 {c}, {tid}, {};", it * threads));
                let skip = self.label("tile_skip");
                if (it + 1) * threads > total {
                    let p2 = self.reg(RegClass::Pred);
                    self.ins(&format!("setp.ge.u32 {p2}, {c}, {total};"));
                    self.ins(&format!("@{p2} bra {skip};"));
                }
                chunk(self, c);
                self.place_label(&skip);
            }
        } else {
            let c = self.reg(RegClass::B32);
            let tid = self.tid;
            self.ins(&format!("mov.u32 {c}, {tid};"));
            let head = self.label("tile_loop");
            let done = self.label("tile_done");
            self.place_label(&head);
            let p2 = self.reg(RegClass::Pred);
            self.ins(&format!("setp.ge.u32 {p2}, {c}, {total};"));
            self.ins(&format!("@{p2} bra {done};"));
            chunk(self, c);
            self.ins(&format!("add.s32 {c}, {c}, {threads};"));
            self.ins(&format!("bra {head};"));
            self.place_label(&done);
        }
    }

    /// Whether the whole tile lies inside the tensor, `0 <= start` and
    /// `start <= dim - extent` on every axis (no sum that can wrap): known
    /// at compile time where starts and dims are constants, else a
    /// predicate over the axes that are not.
    fn tile_inside(&mut self, x: &TileCtx) -> Inside {
        let mut pred: Option<Reg> = None;
        for (((start, dim), extent), start_expr) in x
            .starts
            .iter()
            .zip(&x.dims)
            .zip(&x.shape)
            .zip(&x.start_exprs)
        {
            let extent = i128::from(*extent);
            if let (V::I(s, _), V::I(d, _)) = (start, dim) {
                if *s < 0 || *s > d - extent {
                    return Inside::Never;
                }
                continue;
            }
            let inside = match pred {
                Some(p) => p,
                None => {
                    let p = self.reg(RegClass::Pred);
                    let zero = self.reg(RegClass::B32);
                    self.ins(&format!("mov.u32 {zero}, 0;"));
                    self.ins(&format!("setp.eq.u32 {p}, {zero}, 0;"));
                    pred = Some(p);
                    p
                }
            };
            // A start computable at the entry (a CTA's row origin): its test
            // is computed there, once.
            if let Some(q) = self.entry_axis_inside(*start_expr, *dim, extent) {
                self.ins(&format!("and.pred {inside}, {inside}, {q};"));
                continue;
            }
            let s = self.in_reg(*start, ScalarTy::I32);
            let q = self.reg(RegClass::Pred);
            self.ins(&format!("setp.ge.s32 {q}, {s}, 0;"));
            self.ins(&format!("and.pred {inside}, {inside}, {q};"));
            let last = match dim {
                V::I(d, _) => (d - extent).to_string(),
                _ => {
                    let r = self.reg(RegClass::B32);
                    let d = self.operand(*dim);
                    self.ins(&format!("sub.s32 {r}, {d}, {extent};"));
                    r.to_string()
                }
            };
            let q = self.reg(RegClass::Pred);
            self.ins(&format!("setp.le.s32 {q}, {s}, {last};"));
            self.ins(&format!("and.pred {inside}, {inside}, {q};"));
        }
        pred.map_or(Inside::Always, Inside::When)
    }

    /// The global address of a tile's first element (its start on every
    /// axis): each chunk adds only its own offset in the tile, which does
    /// not change from one trip of a loop to the next.
    fn tile_pointer(&mut self, x: &TileCtx) -> Reg {
        let signed = vec![true; x.starts.len()];
        let size = V::I(i128::from(x.t.size()), ScalarTy::I64);
        // The axes whose start is computable at the entry contribute, with
        // the base, an address computed there once; the others are added
        // here.
        let keys: Vec<Option<String>> = x.start_exprs.iter().map(|e| self.entry_key(*e)).collect();
        let mut base = x.base;
        let mut rest = x.starts.clone();
        if keys.iter().any(Option::is_some) {
            let dims: Vec<String> = x.dims.iter().map(|d| self.operand(*d)).collect();
            let key = format!("ptr {} {keys:?} {dims:?} {}", x.base, x.t.size());
            let entry: Vec<V> = x
                .start_exprs
                .iter()
                .map(|e| self.entry_value(*e).unwrap_or(V::I(0, ScalarTy::I32)))
                .collect();
            let known = self
                .entry_values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v);
            let ptr = match known {
                Some(v) => v,
                None => {
                    let v = self.hoist(|e| {
                        let lin = e.linear64(&entry, &signed, &x.dims);
                        let bytes = e.mul64(lin, size);
                        match e.add64(V::R(x.base), bytes) {
                            V::R(r) => V::R(r),
                            other => {
                                let r = e.reg(RegClass::B64);
                                let o = e.operand(other);
                                e.ins(&format!("mov.b64 {r}, {o};"));
                                V::R(r)
                            }
                        }
                    });
                    self.entry_values.push((key, v));
                    v
                }
            };
            if let V::R(r) = ptr {
                base = r;
            }
            for (r, k) in rest.iter_mut().zip(&keys) {
                if k.is_some() {
                    *r = V::I(0, ScalarTy::I32);
                }
            }
        }
        // Only the last axis left (a K loop over a row-major operand):
        // one `mad.wide` of the 32-bit start.
        let last = rest.len() - 1;
        if let V::R(start) = rest[last] {
            if start.class == RegClass::B32 && rest[..last].iter().all(|v| matches!(v, V::I(0, _)))
            {
                let d = self.reg(RegClass::B64);
                self.ins(&format!(
                    "mad.wide.s32 {d}, {start}, {}, {base};",
                    x.t.size()
                ));
                return d;
            }
        }
        let lin = self.linear64(&rest, &signed, &x.dims);
        let bytes = self.mul64(lin, size);
        match self.add64(V::R(base), bytes) {
            V::R(r) => r,
            _ => base,
        }
    }

    /// `0 <= start <= dim - extent` for a start computable at the entry,
    /// computed there (once per start, dim and extent); `None` for a start
    /// that is not.
    fn entry_axis_inside(&mut self, start: ExprId, dim: V, extent: i128) -> Option<Reg> {
        let key = format!(
            "inside {} {} {extent}",
            self.entry_key(start)?,
            self.operand(dim)
        );
        if let Some((_, V::R(r))) = self.entry_values.iter().find(|(k, _)| *k == key) {
            return Some(*r);
        }
        let s = self.entry_value(start)?;
        let q = self.hoist(|e| {
            let s = e.in_reg(s, ScalarTy::I32);
            let (lo, hi, both) = (
                e.reg(RegClass::Pred),
                e.reg(RegClass::Pred),
                e.reg(RegClass::Pred),
            );
            e.ins(&format!("setp.ge.s32 {lo}, {s}, 0;"));
            let last = match dim {
                V::I(d, _) => (d - extent).to_string(),
                _ => {
                    let r = e.reg(RegClass::B32);
                    let d = e.operand(dim);
                    e.ins(&format!("sub.s32 {r}, {d}, {extent};"));
                    r.to_string()
                }
            };
            e.ins(&format!("setp.le.s32 {hi}, {s}, {last};"));
            e.ins(&format!("and.pred {both}, {lo}, {hi};"));
            both
        });
        self.entry_values.push((key, V::R(q)));
        Some(q)
    }

    /// How far a thread's chunk `it` lies from its chunk 0, when that is
    /// the same for every thread: one chunk per thread (no step), a 1-D
    /// tile, or a 2-D tile whose row holds a whole number of chunks per
    /// `threads` (the thread keeps its column and moves down rows).
    fn chunk_step(&self, x: &TileCtx, iters: u32) -> Option<ChunkStep> {
        // Unrolled: at most 16 chunks a thread (a few instructions each).
        if iters > 16 {
            return None;
        }
        let threads = self.f.threads;
        let size = i128::from(x.t.size());
        let rank = x.shape.len();
        if iters == 1 {
            return Some(ChunkStep::default());
        }
        match rank {
            1 => {
                let elems = i128::from(threads * x.v);
                let stride = x.placed.as_ref().map_or(1, |(_, s)| s[0]);
                Some(ChunkStep {
                    rows: 0,
                    elems,
                    shared: elems * stride * size,
                    dim: None,
                })
            }
            2 if threads.is_multiple_of(x.chunks_per_row) => {
                let rows = i128::from(threads / x.chunks_per_row);
                let shared = match (&x.placed, x.swizzle) {
                    // Same column, same panel; the swizzle's XOR repeats
                    // every 8 rows.
                    (_, Some(span)) if rows % 8 == 0 => rows * i128::from(span),
                    (_, Some(_)) => return None,
                    (None, None) => i128::from(threads * x.v) * size,
                    (Some((_, strides)), None) => rows * strides[0] * size,
                };
                Some(ChunkStep {
                    rows,
                    elems: 0,
                    shared,
                    dim: Some(x.dims[1]),
                })
            }
            _ => None,
        }
    }

    /// A thread's chunk 0 of tiles shaped as `x` (its tile coordinates
    /// depend only on the thread index): the byte offsets from the tile's
    /// first element in the tensor and in the shared buffer, computed once
    /// at the kernel's entry and shared by every copy of that shape.
    fn chunk_geometry(&mut self, x: &TileCtx) -> ChunkGeom {
        let dims: Vec<String> = x.dims.iter().map(|d| self.operand(*d)).collect();
        let key = format!(
            "{dims:?} {:?} {} {} {:?} {:?}",
            x.shape,
            x.v,
            x.t.size(),
            x.placed,
            x.swizzle
        );
        if let Some((_, g)) = self.chunk_geoms.iter().find(|(k, _)| *k == key) {
            return *g;
        }
        let g = self.hoist(|e| {
            let tid = e.tid;
            let coords = e.chunk_coords(x, tid);
            let shared = e.shared_offset(x, tid, &coords);
            let unsigned = vec![false; coords.len()];
            let lin = e.linear64(&coords, &unsigned, &x.dims);
            let bytes = e.mul64(lin, V::I(i128::from(x.t.size()), ScalarTy::I64));
            let global = e.reg(RegClass::B64);
            let b = e.operand(bytes);
            e.ins(&format!("mov.b64 {global}, {b};"));
            ChunkGeom { global, shared }
        });
        self.chunk_geoms.push((key, g));
        g
    }

    /// A thread's chunks of an interior tile, `step` apart: the first
    /// addressed from the tile's first element and the hoisted chunk
    /// geometry, each next one a constant offset further in shared memory
    /// and a constant (or one hoisted row stride) further in the tensor.
    fn interior_chunks(
        &mut self,
        x: &TileCtx,
        total: u32,
        iters: u32,
        step: ChunkStep,
        tile_ptr: Reg,
    ) {
        let threads = self.f.threads;
        let g = self.chunk_geometry(x);
        let size = i128::from(x.t.size());
        let mut ptr = self.reg(RegClass::B64);
        self.ins(&format!("add.s64 {ptr}, {tile_ptr}, {};", g.global));
        let s = self.reg(RegClass::B32);
        self.ins(&format!("mov.u32 {s}, {};", self.smem));
        let saddr = self.reg(RegClass::B32);
        self.ins(&format!("add.s32 {saddr}, {s}, {};", g.shared));
        if x.smem_base != 0 {
            self.ins(&format!("add.s32 {saddr}, {saddr}, {};", x.smem_base));
        }
        if !matches!(x.stage_off, V::I(0, _)) {
            let off = self.operand(x.stage_off);
            self.ins(&format!("add.s32 {saddr}, {saddr}, {off};"));
        }
        // The tensor bytes between a thread's chunks: a constant, or rows
        // of a run-time dim (a 64-bit product hoisted to the entry).
        let row_bytes = match (step.rows, step.dim) {
            (0, _) | (_, None) => None,
            (rows, Some(V::I(d, _))) => Some(V::I(rows * d * size, ScalarTy::I64)),
            (rows, Some(d)) => {
                let b = self.hoist(|e| {
                    let t = e.mul_wide(d, V::I(rows * size, ScalarTy::I32));
                    e.const_or_reg64(t, true)
                });
                Some(b)
            }
        };
        let elem_bytes = step.elems * size;
        for it in 0..iters {
            let skip = self.label("tile_skip");
            let partial = (it + 1) * threads > total;
            if partial {
                let (c, p2) = (self.reg(RegClass::B32), self.reg(RegClass::Pred));
                let tid = self.tid;
                self.ins(&format!("add.s32 {c}, {tid}, {};", it * threads));
                self.ins(&format!("setp.ge.u32 {p2}, {c}, {total};"));
                self.ins(&format!("@{p2} bra {skip};"));
            }
            if it > 0 {
                if let Some(b) = row_bytes {
                    ptr = match self.add64(V::R(ptr), b) {
                        V::R(r) => r,
                        _ => ptr,
                    };
                }
            }
            let off = |k: i128| i64::try_from(k * i128::from(it)).unwrap_or(i64::MAX);
            let gl = Addr {
                space: x.gspace,
                store_space: ".global",
                reg: ptr,
            };
            let sh = Addr {
                space: ".shared",
                store_space: ".shared",
                reg: saddr,
            };
            self.chunk_move(x, (&gl, off(elem_bytes)), (&sh, off(step.shared)));
            if partial {
                self.place_label(&skip);
            }
        }
    }

    /// One chunk `c` of a tile wholly inside the tensor: no masks.
    fn interior_chunk(&mut self, x: &TileCtx, c: Reg, tile_ptr: Reg) {
        let coords = self.chunk_coords(x, c);
        let sh = self.chunk_shared(x, c, &coords);
        let unsigned = vec![false; coords.len()];
        let lin = self.linear64(&coords, &unsigned, &x.dims);
        let size = x.t.size();
        let bytes = self.mul64(lin, V::I(i128::from(size), ScalarTy::I64));
        let reg = match self.add64(V::R(tile_ptr), bytes) {
            V::R(r) => r,
            _ => tile_ptr,
        };
        let gl = Addr {
            space: x.gspace,
            store_space: ".global",
            reg,
        };
        self.chunk_move(x, (&gl, 0), (&sh, 0));
    }

    /// Move one whole chunk between global address `reg` and `sh`.
    fn chunk_move(&mut self, x: &TileCtx, (gl, goff): (&Addr, i64), (sh, soff): (&Addr, i64)) {
        let size = x.t.size();
        if x.async_copy {
            let bytes = x.v * size;
            let cache = if bytes == 16 { "cg" } else { "ca" };
            self.ins(&format!(
                "cp.async.{cache}.shared.global {}, {}, {bytes};",
                sh.at(soff),
                gl.at(goff)
            ));
        } else if x.v > 1 {
            self.vector_move(x, (gl, goff), (sh, soff));
        } else {
            self.element_move(x, (gl, goff), (sh, soff), None);
        }
    }

    /// Move one element between `gl + goff` and `sh + soff`; under `pred`
    /// (masked) only where it holds: a copy's element is zero outside, a
    /// store's is not written.
    fn element_move(
        &mut self,
        x: &TileCtx,
        (gl, goff): (&Addr, i64),
        (sh, soff): (&Addr, i64),
        pred: Option<Reg>,
    ) {
        let size = x.t.size();
        let raw = raw_ty(size);
        let r = self.reg(if size == 8 {
            RegClass::B64
        } else {
            RegClass::B32
        });
        let guard = pred.map_or(String::new(), |q| format!("@{q} "));
        if x.to_global {
            self.ins(&format!("ld.shared{raw} {r}, {};", sh.at(soff)));
            self.ins(&format!("{guard}st.global{raw} {}, {r};", gl.at(goff)));
        } else {
            if pred.is_some() {
                let b = if size == 8 { ".b64" } else { ".b32" };
                self.ins(&format!("mov{b} {r}, 0;"));
            }
            self.ins(&format!("{guard}ld{}{raw} {r}, {};", gl.space, gl.at(goff)));
            let r = if x.tf32 { self.round_tf32(r) } else { r };
            self.ins(&format!("st.shared{raw} {}, {r};", sh.at(soff)));
        }
    }

    /// The tile coordinates of chunk `c`: row-major over the tile, `v`
    /// elements per chunk along the last axis.
    fn chunk_coords(&mut self, x: &TileCtx, c: Reg) -> Vec<V> {
        let rank = x.shape.len();
        // Tile coordinates of the chunk.
        let mut coords = vec![V::I(0, ScalarTy::I32); rank];
        let col = self.reg(RegClass::B32);
        if x.chunks_per_row == 1 {
            self.ins(&format!("mov.u32 {col}, 0;"));
        } else {
            self.int_divrem(
                true,
                ".u32",
                col,
                c,
                V::I(x.chunks_per_row.into(), ScalarTy::U32),
            );
            if x.v > 1 {
                self.ins(&format!("mul.lo.s32 {col}, {col}, {};", x.v));
            }
        }
        coords[rank - 1] = V::R(col);
        let mut rest = self.reg(RegClass::B32);
        self.int_divrem(
            false,
            ".u32",
            rest,
            c,
            V::I(x.chunks_per_row.into(), ScalarTy::U32),
        );
        for axis in (0..rank - 1).rev() {
            let ix = self.reg(RegClass::B32);
            if axis == 0 {
                self.ins(&format!("mov.u32 {ix}, {rest};"));
            } else {
                self.int_divrem(
                    true,
                    ".u32",
                    ix,
                    rest,
                    V::I(x.shape[axis].into(), ScalarTy::U32),
                );
                let r2 = self.reg(RegClass::B32);
                self.int_divrem(
                    false,
                    ".u32",
                    r2,
                    rest,
                    V::I(x.shape[axis].into(), ScalarTy::U32),
                );
                rest = r2;
            }
            coords[axis] = V::R(ix);
        }
        coords
    }

    /// The shared address of chunk `c` (at `coords` in the tile): base +
    /// c * v * size, or, for a box placed in a larger buffer, base + (at +
    /// coords) . strides * size; plus the buffer's offset and the stage.
    fn chunk_shared(&mut self, x: &TileCtx, c: Reg, coords: &[V]) -> Addr {
        let rel = self.shared_offset(x, c, coords);
        let s = self.reg(RegClass::B32);
        self.ins(&format!("mov.u32 {s}, {};", self.smem));
        let saddr = self.reg(RegClass::B32);
        self.ins(&format!("add.s32 {saddr}, {s}, {rel};"));
        if x.smem_base != 0 {
            self.ins(&format!("add.s32 {saddr}, {saddr}, {};", x.smem_base));
        }
        match x.stage_off {
            V::I(0, _) => {}
            off => {
                let off = self.operand(off);
                self.ins(&format!("add.s32 {saddr}, {saddr}, {off};"));
            }
        }
        Addr {
            space: ".shared",
            store_space: ".shared",
            reg: saddr,
        }
    }

    /// Chunk `c`'s byte offset in the buffer: c * v * size, or, for a box
    /// placed in a larger buffer, (at + coords) . strides * size.
    fn shared_offset(&mut self, x: &TileCtx, c: Reg, coords: &[V]) -> Reg {
        if let Some(span) = x.swizzle {
            return self.swizzled_offset(x, span, coords);
        }
        let size = x.t.size();
        let saddr = self.reg(RegClass::B32);
        match &x.placed {
            None => {
                self.ins(&format!("mul.lo.s32 {saddr}, {c}, {};", x.v * size));
            }
            Some((at, strides)) => {
                let size = i128::from(size);
                let mut fixed = 0i128;
                self.ins(&format!("mov.u32 {saddr}, 0;"));
                for ((coord, a), stride) in coords.iter().zip(at).zip(strides) {
                    fixed += i128::from(*a) * stride * size;
                    match coord {
                        V::I(k, _) => fixed += k * stride * size,
                        _ => {
                            let r = self.in_reg(*coord, ScalarTy::I32);
                            self.ins(&format!(
                                "mad.lo.s32 {saddr}, {r}, {}, {saddr};",
                                stride * size
                            ));
                        }
                    }
                }
                if fixed != 0 {
                    self.ins(&format!("add.s32 {saddr}, {saddr}, {fixed};"));
                }
            }
        }
        saddr
    }

    /// The byte offset of the chunk at `coords` (row, column) in a `wgmma`
    /// operand's swizzled buffer (`Func::swizzle`): panel `cb / span` of
    /// `rows x span` bytes, row `r` at `r * span` in it, and the 16-byte
    /// unit of `cb % span` XORed with the row's bits as the PTX ISA's
    /// `span`-byte swizzle XORs address bits [4, 7) with bits [7, 10).
    /// A chunk never crosses a 16-byte unit, so its elements keep their
    /// offsets from its first.
    fn swizzled_offset(&mut self, x: &TileCtx, span: u32, coords: &[V]) -> Reg {
        let size = x.t.size();
        let lg = span.trailing_zeros();
        let rows = x.shape[0];
        let r = self.in_reg(coords[0], ScalarTy::I32);
        let c = self.in_reg(coords[1], ScalarTy::I32);
        let cb = self.reg(RegClass::B32);
        self.ins(&format!("mul.lo.s32 {cb}, {c}, {size};"));
        let off = self.reg(RegClass::B32);
        self.ins(&format!("shr.u32 {off}, {cb}, {lg};"));
        self.ins(&format!("mul.lo.s32 {off}, {off}, {};", rows * span));
        self.ins(&format!("mad.lo.s32 {off}, {r}, {span}, {off};"));
        let inner = self.reg(RegClass::B32);
        self.ins(&format!("and.b32 {inner}, {cb}, {};", span - 1));
        let xor = self.reg(RegClass::B32);
        self.ins(&format!("shr.u32 {xor}, {r}, {};", 7 - lg));
        self.ins(&format!("and.b32 {xor}, {xor}, {};", span / 16 - 1));
        self.ins(&format!("shl.b32 {xor}, {xor}, 4;"));
        self.ins(&format!("xor.b32 {inner}, {inner}, {xor};"));
        self.ins(&format!("add.s32 {off}, {off}, {inner};"));
        off
    }

    /// One chunk `c` of a tile transfer, masked: elements outside the
    /// tensor are zero-filled (copies) or not stored (stores).
    fn tile_chunk(&mut self, x: &TileCtx, c: Reg) {
        let rank = x.shape.len();
        let size = x.t.size();
        let coords = self.chunk_coords(x, c);
        // Global coordinates and the in-bounds test of the non-last axes.
        let mut g = Vec::new();
        for (coord, start) in coords.iter().zip(&x.starts) {
            let sum = self.binary(
                crate::ast::BinOp::Add,
                ScalarTy::I32,
                ScalarTy::I32,
                *coord,
                *start,
            );
            g.push(sum);
        }
        let inb = self.reg(RegClass::Pred);
        let zero = self.reg(RegClass::B32);
        self.ins(&format!("mov.u32 {zero}, 0;"));
        self.ins(&format!("setp.eq.u32 {inb}, {zero}, 0;"));
        for (gv, dim) in g.iter().zip(&x.dims).take(rank - 1) {
            let gr = self.in_reg(*gv, ScalarTy::I32);
            let d = self.operand(*dim);
            let q = self.reg(RegClass::Pred);
            self.ins(&format!("setp.lt.u32 {q}, {gr}, {d};"));
            self.ins(&format!("and.pred {inb}, {inb}, {q};"));
        }
        let sh = self.chunk_shared(x, c, &coords);
        // Global address of the chunk's first element.
        let signed = vec![true; rank];
        let lin = self.linear64(&g, &signed, &x.dims);
        let bytes = self.mul64(lin, V::I(size as i128, ScalarTy::I64));
        let gaddr = match self.add64(V::R(x.base), bytes) {
            V::R(r) => r,
            _ => x.base,
        };
        let gl = Addr {
            space: x.gspace,
            store_space: ".global",
            reg: gaddr,
        };
        let gcol = self.in_reg(g[rank - 1], ScalarTy::I32);
        let dlast = self.operand(x.dims[rank - 1]);
        let done = self.label("chunk_done");
        if x.async_copy {
            self.async_chunk(x, (gl.reg, &sh), (gcol, &dlast), inb, &done);
        } else if x.v > 1 {
            // Whole chunk inside: 0 <= gcol && gcol + v <= D.
            let full = self.reg(RegClass::Pred);
            let end = self.reg(RegClass::B32);
            let q = self.reg(RegClass::Pred);
            self.ins(&format!("add.s32 {end}, {gcol}, {};", x.v));
            self.ins(&format!("setp.le.s32 {full}, {end}, {dlast};"));
            self.ins(&format!("setp.ge.s32 {q}, {gcol}, 0;"));
            self.ins(&format!("and.pred {full}, {full}, {q};"));
            self.ins(&format!("and.pred {full}, {full}, {inb};"));
            let slow = self.label("chunk_masked");
            self.ins(&format!("@!{full} bra {slow};"));
            self.vector_move(x, (&gl, 0), (&sh, 0));
            self.ins(&format!("bra {done};"));
            self.place_label(&slow);
        }
        for e in 0..x.v {
            let q = self.reg(RegClass::Pred);
            let ge = self.reg(RegClass::B32);
            self.ins(&format!("add.s32 {ge}, {gcol}, {e};"));
            self.ins(&format!("setp.lt.u32 {q}, {ge}, {dlast};"));
            self.ins(&format!("and.pred {q}, {q}, {inb};"));
            let off = (e * size) as i64;
            self.element_move(x, (&gl, off), (&sh, off), Some(q));
        }
        if x.v > 1 || x.async_copy {
            self.place_label(&done);
        }
    }

    /// One chunk of a copy into a ring buffer: one `cp.async` of the
    /// chunk's `v * size` bytes (`.cg` for 16, `.ca` for 4 or 8), whose
    /// `src-size` operand is the bytes inside the tensor: all of them, a
    /// prefix where the row ends inside the chunk, none (zero fill) for a
    /// chunk outside. A chunk that starts before column 0 and ends after
    /// it has no such prefix: it branches to the element-by-element plain
    /// copy that follows (the ring's barrier orders plain stores as it
    /// orders the copies' landing).
    fn async_chunk(
        &mut self,
        x: &TileCtx,
        (gaddr, sh): (Reg, &Addr),
        (gcol, dlast): (Reg, &str),
        inb: Reg,
        done: &str,
    ) {
        let size = x.t.size();
        let bytes = x.v * size;
        let elementwise = self.label("chunk_masked");
        let neg = self.reg(RegClass::Pred);
        self.ins(&format!("setp.lt.s32 {neg}, {gcol}, 0;"));
        let end = self.reg(RegClass::B32);
        self.ins(&format!("add.s32 {end}, {gcol}, {};", x.v));
        let straddle = self.reg(RegClass::Pred);
        self.ins(&format!("setp.gt.s32 {straddle}, {end}, 0;"));
        self.ins(&format!("and.pred {straddle}, {straddle}, {neg};"));
        self.ins(&format!("@{straddle} bra {elementwise};"));
        // Elements inside: min(max(D - gcol, 0), v), none when the chunk's
        // row is outside or it starts before column 0.
        let n = self.reg(RegClass::B32);
        self.ins(&format!("sub.s32 {n}, {dlast}, {gcol};"));
        self.ins(&format!("max.s32 {n}, {n}, 0;"));
        self.ins(&format!("min.s32 {n}, {n}, {};", x.v));
        let out = self.reg(RegClass::Pred);
        self.ins(&format!("not.pred {out}, {inb};"));
        self.ins(&format!("or.pred {out}, {out}, {neg};"));
        self.ins(&format!("selp.b32 {n}, 0, {n}, {out};"));
        // No bytes read: the tensor's base (always a valid, aligned
        // address) stands in for one that may be outside it.
        let none = self.reg(RegClass::Pred);
        self.ins(&format!("setp.eq.s32 {none}, {n}, 0;"));
        let src = self.reg(RegClass::B64);
        self.ins(&format!("selp.b64 {src}, {}, {gaddr}, {none};", x.base));
        if size > 1 {
            self.ins(&format!("mul.lo.s32 {n}, {n}, {size};"));
        }
        let cache = if bytes == 16 { "cg" } else { "ca" };
        self.ins(&format!(
            "cp.async.{cache}.shared.global [{}], [{src}], {bytes}, {n};",
            sh.reg
        ));
        self.ins(&format!("bra {done};"));
        self.place_label(&elementwise);
    }

    /// One vector instruction each way for a whole chunk.
    fn vector_move(&mut self, x: &TileCtx, (gl, goff): (&Addr, i64), (sh, soff): (&Addr, i64)) {
        let size = x.t.size();
        let bytes = x.v * size;
        let (n, ty, class) = if size == 8 {
            (bytes / 8, ".u64", RegClass::B64)
        } else if bytes >= 4 {
            (bytes / 4, ".u32", RegClass::B32)
        } else {
            (1, ".u16", RegClass::B32)
        };
        let regs: Vec<Reg> = (0..n).map(|_| self.reg(class)).collect();
        let list = reg_list(&regs);
        let vec = if n == 1 {
            String::new()
        } else {
            format!(".v{n}")
        };
        let regs_text = if n == 1 {
            list.clone()
        } else {
            format!("{{{list}}}")
        };
        let ((src, soff), (dst, doff)) = if x.to_global {
            ((sh, soff), (gl, goff))
        } else {
            ((gl, goff), (sh, soff))
        };
        self.ins(&format!(
            "ld{}{vec}{ty} {regs_text}, {};",
            src.space,
            src.at(soff)
        ));
        let regs_text = if x.tf32 && !x.to_global {
            let rounded: Vec<Reg> = regs.iter().map(|&r| self.round_tf32(r)).collect();
            let list = reg_list(&rounded);
            if n == 1 {
                list
            } else {
                format!("{{{list}}}")
            }
        } else {
            regs_text
        };
        self.ins(&format!(
            "st{}{vec}{ty} {}, {regs_text};",
            dst.store_space,
            dst.at(doff)
        ));
    }

    /// The f32 bits in `r` rounded to tf32 (`cvt.rna.tf32.f32`), as the
    /// `mma.sync` path rounds its operands: for a `wgmma` tf32 operand,
    /// whose instruction reads the f32 bits as they are in shared memory.
    fn round_tf32(&mut self, r: Reg) -> Reg {
        let f = self.reg(RegClass::F32);
        self.ins(&format!("mov.b32 {f}, {r};"));
        let d = self.reg(RegClass::B32);
        self.ins(&format!("cvt.rna.tf32.f32 {d}, {f};"));
        d
    }
}

/// Everything one tile transfer's chunks share.
struct TileCtx {
    shape: Vec<u32>,
    v: u32,
    t: ScalarTy,
    chunks_per_row: u32,
    dims: Vec<V>,
    starts: Vec<V>,
    /// The starts' expressions (see `Emitter::entry_value`).
    start_exprs: Vec<ExprId>,
    smem_base: u32,
    base: Reg,
    gspace: &'static str,
    to_global: bool,
    /// A box placed in a larger buffer: where it starts, and the buffer's
    /// row-major strides in elements.
    placed: Option<(Vec<u32>, Vec<i128>)>,
    /// Added to every shared address: the stage of a ring buffer.
    stage_off: V,
    /// Chunks move with `cp.async` (a copy into a ring buffer whose chunks
    /// are 4, 8 or 16 bytes; others copy as plain loads and stores).
    async_copy: bool,
    /// The buffer's swizzle span, for a `wgmma` operand (`Func::swizzle`).
    swizzle: Option<u32>,
    /// f32 elements copied into a `wgmma` operand: rounded to tf32 on the
    /// way (the plain copies only; `wgmma_plan` keeps staged f32 operands
    /// on `mma.sync`).
    tf32: bool,
}

/// A thread's chunk 0 of a tile shape, hoisted to the kernel's entry
/// (`Emitter::chunk_geometry`): byte offsets from the tile's first element,
/// in the tensor (64-bit) and in the shared buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkGeom {
    global: Reg,
    shared: Reg,
}

/// How far a thread's chunk `it` is from its chunk 0 (`Emitter::chunk_step`):
/// `rows` rows of the tensor (of `dim` elements) plus `elems` elements, and
/// `shared` bytes in the buffer.
#[derive(Clone, Copy, Debug, Default)]
struct ChunkStep {
    rows: i128,
    elems: i128,
    shared: i128,
    dim: Option<V>,
}

/// Whether a tile lies wholly inside its tensor (`Emitter::tile_inside`).
enum Inside {
    Always,
    Never,
    When(Reg),
}

/// Which way a tile moves, and how.
#[derive(Clone, Copy)]
enum Transfer {
    /// Global to shared, plain loads and stores.
    Copy,
    /// Global to shared into a ring buffer's stage (an `i32` expression),
    /// with `cp.async` where the chunks allow.
    Async(ExprId),
    /// Shared to global.
    Store,
}

/// Where a tile copy's box goes in its buffer, when it is not the whole
/// buffer: the box's start and the buffer's strides.
fn placement(kind: &BufferKind, at: &[u32], rank: usize) -> Option<(Vec<u32>, Vec<i128>)> {
    let BufferKind::Tile { shape, .. } = kind else {
        return None;
    };
    if at.len() != rank || shape.len() != rank {
        return None;
    }
    let dims: Vec<i128> = shape.iter().map(|&d| i128::from(d)).collect();
    Some((at.to_vec(), row_major_strides(&dims)))
}

fn raw_ty(size: u32) -> &'static str {
    match size {
        1 => ".u8",
        2 => ".u16",
        4 => ".u32",
        _ => ".u64",
    }
}

fn row_major_strides(shape: &[i128]) -> Vec<i128> {
    let mut s = vec![1i128; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The PTX name of a register array placed in local memory.
pub(crate) fn local_name(f: &crate::backend::ir::Func, a: crate::backend::ir::ArrayId) -> String {
    format!("local{}_{}", a.0, f.arrays[a].name)
}

/// A load already emitted, for [`Emitter::reuse`].
#[derive(Clone)]
pub(crate) enum Cached {
    Point(V),
    Run(RunData),
}

/// Whether two loads read the same elements: same type, and the same
/// elements within the straight-line stretch the load cache spans.
fn same_access(f: &crate::backend::ir::Func, a: AccessId, b: AccessId) -> bool {
    let (x, y) = (&f.accesses[a], &f.accesses[b]);
    x.elem == y.elem && !x.store && !y.store && f.same_elements(a, b, Within::Stretch)
}

/// Whether the address of access `a` depends on var `v`.
pub(crate) fn access_reads_var(
    f: &crate::backend::ir::Func,
    a: AccessId,
    v: crate::backend::ir::VarId,
) -> bool {
    fn reads(f: &crate::backend::ir::Func, e: ExprId, v: crate::backend::ir::VarId) -> bool {
        matches!(f.exprs[e].kind, ExprKind::Var(x) if x == v)
            || f.operands(e).into_iter().any(|o| reads(f, o, v))
    }
    f.accesses[a].index.iter().any(|&e| reads(f, e, v))
}
