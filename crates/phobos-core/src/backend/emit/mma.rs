//! Tensor cores: accumulator tiles in registers, `dot` as `ldmatrix` +
//! `mma.sync`, and the masked store of an accumulator.
//!
//! Layout (docs/tensor-cores.md): warp `w` owns rows `(w / wn) * rows/wm`
//! and columns `(w % wn) * cols/wn` of the accumulator, a grid of
//! `frag_m x frag_n` fragments of 16 x 8. A fragment's four f32 registers
//! are the PTX ISA's `m16n8` accumulator: lane `l` holds rows `l / 4` and
//! `l / 4 + 8`, columns `2 (l % 4)` and `2 (l % 4) + 1`.
//!
//! Per 16-deep step of K, a warp loads each 16 x 16 block of `a` it needs
//! with one `ldmatrix.x4` (lane `l` points at row `l % 16`, column
//! `8 (l / 16)`: the four matrices are the fragment's `a0..a3`) and each
//! two 16 x 8 blocks of `b` side by side along N with one `ldmatrix.x4`
//! (lanes 16 to 31 point 8 columns of B further; an odd last block takes an
//! `.x2`): for `trans(w)`, `w` is `[N, K]` row-major and each of its rows is
//! a column of B (lane `l` points at row `l % 8 + 8 (l / 16)`, column
//! `8 ((l / 8) % 2)`); for a `[K, N]` `b`, `.trans` turns its 8 x 8 blocks
//! (lane `l` points at row `l % 16`, column `8 (l / 16)`).
//! Then one `mma.sync.aligned.m16n8k16` per fragment on sm_80+, or two
//! `m16n8k8` (f16 only) on sm_75. 8-bit operands are the same with 16
//! elements per 16-byte row: K steps by 32 (`m16n8k32.s32.s8.s8.s32`), and
//! only the `trans(w)` form exists (`ldmatrix .trans` moves 16-bit
//! elements). The 8-bit floats take the same path
//! (`m16n8k32.f32.e4m3.e4m3.f32`, sm_89 and PTX ISA 8.4).

use super::{reg_list, Emitter, Reg, RegClass, V};
use crate::ast::ScalarTy;
use crate::backend::ir::{AccId, AccessId, BufferId, BufferKind, Mem, Shape};

impl Emitter<'_> {
    /// The registers of every accumulator tile, allocated once.
    pub(super) fn declare_accs(&mut self) {
        for (_, t) in self.f.accs.iter() {
            let n = t.layout.regs(t.elem);
            // f16 elements go two to a register (`.f16x2`), as mma.sync
            // takes them.
            let class = if t.elem == ScalarTy::F16 {
                RegClass::B32
            } else {
                RegClass::of(t.elem)
            };
            let regs: Vec<Reg> = (0..n).map(|_| self.reg(class)).collect();
            self.acc_regs.push(regs);
        }
    }

    pub(super) fn acc_zero(&mut self, acc: AccId) {
        for r in self.acc_regs[acc.0 as usize].clone() {
            if r.class == RegClass::F32 {
                self.ins(&format!("mov.f32 {r}, 0f00000000;"));
            } else {
                self.ins(&format!("mov.b32 {r}, 0;"));
            }
        }
    }

    /// The accumulator's first row and column owned by this thread's warp.
    fn warp_origin(&mut self, acc: AccId) -> (Reg, Reg) {
        let l = self.f.accs[acc].layout;
        let w = self.warp;
        let row = self.reg(RegClass::B32);
        let col = self.reg(RegClass::B32);
        self.int_divrem(false, ".u32", row, w, V::I(l.wn.into(), ScalarTy::U32));
        self.ins(&format!("mul.lo.s32 {row}, {row}, {};", l.warp_rows()));
        self.int_divrem(true, ".u32", col, w, V::I(l.wn.into(), ScalarTy::U32));
        self.ins(&format!("mul.lo.s32 {col}, {col}, {};", l.warp_cols()));
        (row, col)
    }

    /// This lane's first row and column in the accumulator: its warp's
    /// origin plus `lane / 4` and `2 (lane % 4)` (the `m16n8` fragment's
    /// rows `g`, `g + 8` and columns `2t`, `2t + 1`).
    fn lane_origin(&mut self, acc: AccId) -> (Reg, Reg) {
        let (wrow, wcol) = self.warp_origin(acc);
        let lane = self.lane;
        let g = self.reg(RegClass::B32);
        self.ins(&format!("shr.u32 {g}, {lane}, 2;"));
        let c2 = self.reg(RegClass::B32);
        self.ins(&format!("and.b32 {c2}, {lane}, 3;"));
        self.ins(&format!("shl.b32 {c2}, {c2}, 1;"));
        let row0 = self.reg(RegClass::B32);
        self.ins(&format!("add.s32 {row0}, {wrow}, {g};"));
        let col0 = self.reg(RegClass::B32);
        self.ins(&format!("add.s32 {col0}, {wcol}, {c2};"));
        (row0, col0)
    }

    /// Where element `r` (0 to 3: row `g + 8 (r / 2)`, column
    /// `2t + r % 2`) of fragment `(fm, fnn)` lives: its register, and for
    /// an f16 accumulator which half of it (0 low, 1 high).
    fn acc_elem(&self, acc: AccId, fm: u32, fnn: u32, r: u32) -> (Reg, Option<u32>) {
        let t = &self.f.accs[acc];
        let frag = (fm * t.layout.frag_n + fnn) as usize;
        let regs = &self.acc_regs[acc.0 as usize];
        if t.elem == ScalarTy::F16 {
            (regs[frag * 2 + r as usize / 2], Some(r % 2))
        } else {
            (regs[frag * 4 + r as usize], None)
        }
    }

    /// The element in `reg` (its `half` for an f16 accumulator) in a
    /// register of its own type.
    fn acc_read(&mut self, reg: Reg, half: Option<u32>) -> Reg {
        let Some(h) = half else {
            return reg;
        };
        let (lo, hi) = (self.reg(RegClass::B16), self.reg(RegClass::B16));
        self.ins(&format!("mov.b32 {{{lo}, {hi}}}, {reg};"));
        if h == 0 {
            lo
        } else {
            hi
        }
    }

    /// Writes `v` (a value of the accumulator's type `elem`) as the
    /// element in `reg` (its `half` for an f16 accumulator).
    fn acc_write(&mut self, reg: Reg, half: Option<u32>, v: V, elem: ScalarTy) {
        let Some(h) = half else {
            let mv = match reg.class {
                RegClass::F32 => "mov.f32",
                RegClass::B16 => "mov.b16",
                _ => "mov.b32",
            };
            let op = self.operand(v);
            self.ins(&format!("{mv} {reg}, {op};"));
            return;
        };
        let v = self.in_reg(v, elem);
        let (lo, hi) = (self.reg(RegClass::B16), self.reg(RegClass::B16));
        self.ins(&format!("mov.b32 {{{lo}, {hi}}}, {reg};"));
        let (lo, hi) = if h == 0 { (v, hi) } else { (lo, v) };
        self.ins(&format!("mov.b32 {reg}, {{{lo}, {hi}}};"));
    }

    /// The element in `reg`/`half` of an accumulator of `elem`, converted
    /// for a store of `out` elements (`f16(acc)`, `f32(acc)`), with the
    /// store's type suffix.
    fn acc_out(
        &mut self,
        elem: ScalarTy,
        (reg, half): (Reg, Option<u32>),
        out: ScalarTy,
    ) -> (Reg, &'static str) {
        let v = self.acc_read(reg, half);
        match (elem, out) {
            (ScalarTy::F32, ScalarTy::F16 | ScalarTy::BF16) => (self.f32_to_half(v, out), ".b16"),
            // The byte, zero-extended in a 32-bit register.
            (ScalarTy::F32, ScalarTy::F8E4M3 | ScalarTy::F8E5M2) => {
                (self.f32_to_half(v, out), ".u8")
            }
            (ScalarTy::F16, ScalarTy::F32) => {
                let f = self.reg(RegClass::F32);
                self.ins(&format!("cvt.f32.f16 {f}, {v};"));
                (f, ".f32")
            }
            (ScalarTy::F16, _) => (v, ".b16"),
            (ScalarTy::F32, _) => (v, ".f32"),
            _ => (v, ".u32"),
        }
    }

    /// A buffer's shared base address (the symbol plus its plan offset,
    /// plus the stage a ring buffer's trip reads), its row pitch in elements and its element type.
    pub(super) fn tile_base(&mut self, b: BufferId) -> (Reg, u32, ScalarTy) {
        let (pitch, elem) = match &self.f.buffers[b].kind {
            BufferKind::Tile { shape, elem } => (shape.last().copied().unwrap_or(1), *elem),
            BufferKind::Scratch { .. } => (1, ScalarTy::F16),
        };
        let base = self.reg(RegClass::B32);
        let smem = self.smem.clone();
        self.ins(&format!("mov.u32 {base}, {smem};"));
        let off = self.an.plan.offset[b.0 as usize];
        if off != 0 {
            self.ins(&format!("add.s32 {base}, {base}, {off};"));
        }
        self.at_read_stage(b, base);
        (base, pitch, elem)
    }

    /// `base + (row * pitch + col) * size` in a new register.
    fn lane_addr(&mut self, base: Reg, row: Reg, col: Reg, pitch: u32, size: u32) -> Reg {
        let a = self.reg(RegClass::B32);
        self.ins(&format!("mad.lo.s32 {a}, {row}, {pitch}, {col};"));
        self.ins(&format!("mad.lo.s32 {a}, {a}, {size}, {base};"));
        a
    }

    pub(super) fn mma(&mut self, acc: AccId, (a, b): (BufferId, BufferId), b_trans: bool, k: u32) {
        if self.f.swizzle.contains_key(&a) {
            return self.wgmma(acc, (a, b), b_trans, k);
        }
        let t = self.f.accs[acc].clone();
        let l = t.layout;
        let (wrow, wcol) = self.warp_origin(acc);
        let lane = self.lane;
        let (abase, apitch, op) = self.tile_base(a);
        let (bbase, bpitch, _) = self.tile_base(b);
        let size = op.size();
        // One `ldmatrix` row is 16 bytes: `chunk` elements (8 of f16, 16
        // of i8); one mma step takes two along K (32 bytes).
        let chunk = 16 / size;
        let kk = 2 * chunk;
        let shift = chunk.trailing_zeros();
        // A: row (wrow + lane % 16), column chunk * (lane / 16).
        let r16 = self.reg(RegClass::B32);
        self.ins(&format!("and.b32 {r16}, {lane}, 15;"));
        let arow = self.reg(RegClass::B32);
        self.ins(&format!("add.s32 {arow}, {wrow}, {r16};"));
        let acol = self.reg(RegClass::B32);
        self.ins(&format!("shr.u32 {acol}, {lane}, 4;"));
        self.ins(&format!("shl.b32 {acol}, {acol}, {shift};"));
        let a_addr = self.lane_addr(abase, arow, acol, apitch, size);
        // Lanes 16 to 31 point at the next 8 columns of B (the next
        // fragment along N), which an `ldmatrix.x4` loads with this one;
        // an `.x2` reads the addresses of lanes 0 to 15 only.
        let next8 = self.reg(RegClass::B32);
        self.ins(&format!("shr.u32 {next8}, {lane}, 4;"));
        self.ins(&format!("shl.b32 {next8}, {next8}, 3;"));
        let wcol8 = self.reg(RegClass::B32);
        self.ins(&format!("add.s32 {wcol8}, {wcol}, {next8};"));
        let b_addr = if b_trans {
            // w is [N, K]: row (wcol + lane % 8 + 8 (lane / 16)), column
            // chunk * ((lane / 8) % 2).
            let r8 = self.reg(RegClass::B32);
            self.ins(&format!("and.b32 {r8}, {lane}, 7;"));
            let brow = self.reg(RegClass::B32);
            self.ins(&format!("add.s32 {brow}, {wcol8}, {r8};"));
            let bcol = self.reg(RegClass::B32);
            self.ins(&format!("shr.u32 {bcol}, {lane}, 3;"));
            self.ins(&format!("and.b32 {bcol}, {bcol}, 1;"));
            self.ins(&format!("shl.b32 {bcol}, {bcol}, {shift};"));
            self.lane_addr(bbase, brow, bcol, bpitch, size)
        } else {
            // b is [K, N]: row lane % 16, column wcol + 8 (lane / 16).
            self.lane_addr(bbase, r16, wcol8, bpitch, size)
        };
        let frags = self.acc_regs[acc.0 as usize].clone();
        let sm75 = self.arch < 80;
        if sm75 {
            // ldmatrix and mma.m16n8k8 are PTX ISA 6.5.
            self.need_version(65);
        }
        if op.is_f8() {
            // ptxas 12.9: "mma with FP8 floating point type requires PTX
            // ISA .version 8.4".
            self.need_version(84);
        }
        let ty = crate::mma::ptx_name(op);
        // The accumulator's name: `f32` (`ptx_name` gives the operand's
        // `tf32` for f32), `f16` or `s32`.
        let dty = if t.elem == ScalarTy::F32 {
            "f32"
        } else {
            crate::mma::ptx_name(t.elem)
        };
        // Registers per fragment: four elements, two to a register for f16.
        let per = if t.elem == ScalarTy::F16 { 2 } else { 4 };
        // f32 operands are rounded to tf32 as they leave `ldmatrix`.
        let tf32 = op == ScalarTy::F32;
        for ks in 0..k / kk {
            let mut afr = Vec::new();
            for fm in 0..l.frag_m {
                let off = (fm * 16 * apitch + ks * kk) * size;
                afr.push(self.ldmatrix(4, "", a_addr, off, tf32));
            }
            // Two fragments of B per `ldmatrix.x4` (the last one alone
            // with an `.x2` when there is an odd number).
            let mut bfr = Vec::new();
            for fnn in (0..l.frag_n).step_by(2) {
                let (off, trans) = if b_trans {
                    ((fnn * 8 * bpitch + ks * kk) * size, "")
                } else {
                    ((ks * kk * bpitch + fnn * 8) * size, ".trans")
                };
                if fnn + 1 < l.frag_n {
                    let regs = self.ldmatrix(4, trans, b_addr, off, tf32);
                    bfr.push(regs[..2].to_vec());
                    bfr.push(regs[2..].to_vec());
                } else {
                    bfr.push(self.ldmatrix(2, trans, b_addr, off, tf32));
                }
            }
            for (fm, ar) in afr.iter().enumerate() {
                for (fnn, br) in bfr.iter().enumerate() {
                    let i = (fm * l.frag_n as usize + fnn) * per;
                    let d = reg_list(&frags[i..i + per]);
                    if sm75 {
                        for h in 0..2 {
                            self.ins(&format!(
                                "mma.sync.aligned.m16n8k8.row.col.{dty}.{ty}.{ty}.{dty} {{{d}}}, {{{}, {}}}, {{{}}}, {{{d}}};",
                                ar[2 * h], ar[2 * h + 1], br[h]
                            ));
                        }
                    } else {
                        self.ins(&format!(
                            "mma.sync.aligned.m16n8k{kk}.row.col.{dty}.{ty}.{ty}.{dty} {{{d}}}, {{{}}}, {{{}}}, {{{d}}};",
                            reg_list(ar),
                            reg_list(br)
                        ));
                    }
                }
            }
        }
    }

    /// `cvt.rna.tf32.f32` of each register (f32 bits as loaded).
    /// `ldmatrix.x{count}` (`.trans` when `trans` says so) of the 8 x 8
    /// matrices at `addr + off` into new registers, rounded to tf32 when
    /// the operands are f32.
    fn ldmatrix(&mut self, count: u32, trans: &str, addr: Reg, off: u32, tf32: bool) -> Vec<Reg> {
        let regs: Vec<Reg> = (0..count).map(|_| self.reg(RegClass::B32)).collect();
        self.ins(&format!(
            "ldmatrix.sync.aligned.m8n8.x{count}{trans}.shared.b16 {{{}}}, [{addr}+{off}];",
            reg_list(&regs)
        ));
        if tf32 {
            self.round_to_tf32(&regs)
        } else {
            regs
        }
    }

    fn round_to_tf32(&mut self, regs: &[Reg]) -> Vec<Reg> {
        regs.iter()
            .map(|&r| {
                let f = self.reg(RegClass::F32);
                self.ins(&format!("mov.b32 {f}, {r};"));
                let d = self.reg(RegClass::B32);
                self.ins(&format!("cvt.rna.tf32.f32 {d}, {f};"));
                d
            })
            .collect()
    }

    /// An epilogue: for each element this lane holds, its value, row and
    /// column into the vars, then `value` back into its register.
    pub(super) fn acc_map(
        &mut self,
        acc: AccId,
        vars: [crate::backend::ir::VarId; 3],
        value: crate::backend::ir::ExprId,
    ) {
        let t = self.f.accs[acc].clone();
        let l = t.layout;
        let (row0, col0) = self.lane_origin(acc);
        let [elem, row, col] = vars.map(|v| self.var_reg(v));
        for fm in 0..l.frag_m {
            for fnn in 0..l.frag_n {
                for r in 0..4u32 {
                    // Element r: row g + 8 (r / 2), column 2t + r % 2.
                    self.ins(&format!(
                        "add.s32 {row}, {row0}, {};",
                        fm * 16 + (r / 2) * 8
                    ));
                    self.ins(&format!("add.s32 {col}, {col0}, {};", fnn * 8 + r % 2));
                    let (reg, half) = self.acc_elem(acc, fm, fnn, r);
                    let x = self.acc_read(reg, half);
                    self.acc_write(elem, None, V::R(x), t.elem);
                    // The value's loads read other elements each time.
                    self.load_cache.clear();
                    let v = self.expr(value);
                    self.acc_write(reg, half, v, t.elem);
                }
            }
        }
        self.load_cache.clear();
    }

    /// Each lane stores its fragment pairs, masked at the tensor's bounds:
    /// each pair as one `v2` store (one `b32` for f16 into f16) where
    /// alignment is proven, else element by element.
    pub(super) fn acc_store(&mut self, acc: AccId, access: AccessId) {
        let a = self.f.accesses[access].clone();
        let (Mem::Tensor(p), Shape::Tile { .. }) = (a.mem, &a.shape) else {
            return;
        };
        let t = self.f.accs[acc].clone();
        let l = t.layout;
        let (dims, _) = self.tensor_dims(p);
        let starts: Vec<V> = a.index.iter().map(|e| self.scalar_expr(*e)).collect();
        self.loc(a.span);
        self.cur_access = Some(access);
        let s0 = self.in_reg(starts[0], ScalarTy::I32);
        let s1 = self.in_reg(starts[1], ScalarTy::I32);
        let (row0, col0) = self.lane_origin(acc);
        self.ins(&format!("add.s32 {row0}, {row0}, {s0};"));
        self.ins(&format!("add.s32 {col0}, {col0}, {s1};"));
        let base = self.params[p.0 as usize].unwrap_or(Reg::new(RegClass::B64, 0));
        // The tensor's element type: the accumulator's, or converted
        // (`C[...] = f16(acc)`, `f32(acc)`).
        let out = a.elem;
        let size = out.size();
        // A lane's two adjacent elements as one store when the tile
        // decision proves pairs aligned: an even start column and an even
        // row length (the lane's first column is even).
        let pairs = self.an.div.access[access.0 as usize].width >= 2 * size;
        let dm = self.operand(dims[0]);
        let dn = self.operand(dims[1]);
        for fm in 0..l.frag_m {
            for h in 0..2 {
                let row = self.reg(RegClass::B32);
                self.ins(&format!("add.s32 {row}, {row0}, {};", fm * 16 + h * 8));
                let row_in = self.reg(RegClass::Pred);
                self.ins(&format!("setp.lt.u32 {row_in}, {row}, {dm};"));
                for fnn in 0..l.frag_n {
                    let col = self.reg(RegClass::B32);
                    self.ins(&format!("add.s32 {col}, {col0}, {};", fnn * 8));
                    let lin = self.linear64(&[V::R(row), V::R(col)], &[true, true], &dims);
                    let bytes = self.mul64(lin, V::I(i128::from(size), ScalarTy::I64));
                    let addr = match self.add64(V::R(base), bytes) {
                        V::R(r) => r,
                        _ => base,
                    };
                    if pairs {
                        // Both columns are in bounds when the first is:
                        // it is even, and so is the row length.
                        let q = self.reg(RegClass::Pred);
                        self.ins(&format!("setp.lt.u32 {q}, {col}, {dn};"));
                        self.ins(&format!("and.pred {q}, {q}, {row_in};"));
                        let first = self.acc_elem(acc, fm, fnn, h * 2);
                        if t.elem == ScalarTy::F16 && out == ScalarTy::F16 {
                            // The register holds the pair as stored.
                            self.ins(&format!("@{q} st.global.b32 [{addr}], {};", first.0));
                        } else {
                            let (v0, st) = self.acc_out(t.elem, first, out);
                            let second = self.acc_elem(acc, fm, fnn, h * 2 + 1);
                            let (v1, _) = self.acc_out(t.elem, second, out);
                            self.ins(&format!("@{q} st.global.v2{st} [{addr}], {{{v0}, {v1}}};"));
                        }
                        continue;
                    }
                    for e in 0..2u32 {
                        let c = if e == 0 {
                            col
                        } else {
                            let c = self.reg(RegClass::B32);
                            self.ins(&format!("add.s32 {c}, {col}, 1;"));
                            c
                        };
                        let q = self.reg(RegClass::Pred);
                        self.ins(&format!("setp.lt.u32 {q}, {c}, {dn};"));
                        self.ins(&format!("and.pred {q}, {q}, {row_in};"));
                        let off = if e == 0 {
                            format!("[{addr}]")
                        } else {
                            format!("[{addr}+{size}]")
                        };
                        let place = self.acc_elem(acc, fm, fnn, h * 2 + e);
                        let (v, st) = self.acc_out(t.elem, place, out);
                        self.ins(&format!("@{q} st.global{st} {off}, {v};"));
                    }
                }
            }
        }
        self.cur_access = None;
    }
}

impl Emitter<'_> {
    /// `s[at] = acc`: each lane writes the elements it holds into the box
    /// of the tile buffer at `at`, converted to the tile's type. One lane
    /// address; every element is at a constant offset from it.
    pub(super) fn acc_to_tile(&mut self, acc: AccId, buffer: BufferId, at: [u32; 2]) {
        let t = self.f.accs[acc].clone();
        let l = t.layout;
        let (row0, col0) = self.lane_origin(acc);
        let (base, pitch, out) = self.tile_base(buffer);
        let size = out.size();
        if at[0] != 0 {
            self.ins(&format!("add.s32 {row0}, {row0}, {};", at[0]));
        }
        if at[1] != 0 {
            self.ins(&format!("add.s32 {col0}, {col0}, {};", at[1]));
        }
        let addr = self.lane_addr(base, row0, col0, pitch, size);
        for fm in 0..l.frag_m {
            for h in 0..2 {
                for fnn in 0..l.frag_n {
                    for e in 0..2u32 {
                        let off = ((fm * 16 + h * 8) * pitch + fnn * 8 + e) * size;
                        let place = self.acc_elem(acc, fm, fnn, h * 2 + e);
                        let (v, st) = self.acc_out(t.elem, place, out);
                        self.ins(&format!("st.shared{st} [{addr}+{off}], {v};"));
                    }
                }
            }
        }
    }
}
