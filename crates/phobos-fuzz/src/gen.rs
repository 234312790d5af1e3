//! The generator: a seeded (ChaCha8, so a seed means the same program on
//! every platform and `rand` version) random kernel that is valid,
//! race-free and deterministic by construction.
//!
//! - Every thread writes only its own `SLOTS` elements of each output `O*`
//!   (at `gid * SLOTS + slot`), and reads back only those; tiles are
//!   written at `ctx.thread` (one element per thread) and stored back once,
//!   each CTA to its own range of `T`, masked at the ragged dim `M`. A
//!   statement may read the tile it writes (every thread's reads come
//!   before any thread's write: the language's statement-at-a-time
//!   semantics), except under control that differs between threads inside
//!   a tile write's `if`/`for` guard, where no barrier could separate them.
//! - Indices are masked into range (`& 1023` for points of tensors with
//!   `N >= 1024`, `& 511` for runs); divisors are `(b & 7) + 1`, float
//!   divisors `abs(b) + 1.0`, shift amounts `b & (bits - 1)`; float products
//!   are clamped to [-64, 64], transcendental arguments kept in range.
//! - Uniformity is tracked conservatively (tile loads, shuffles and
//!   width-limited collectives are varying): lane collectives and shuffles
//!   appear only under warp-uniform control, CTA collectives and tiles only
//!   under uniform control, and a variable is assigned only where the value
//!   and the control are no more varying than its declared level.
//! - Float values that may differ in their last bits between two correct
//!   executions (transcendentals, float sums) are marked inexact and never
//!   reach a comparison, a float → integer conversion, `floor`/`ceil`,
//!   `max`/`min`/`argmax` collectives or a mutable variable read by those.

use crate::program::{Program, St, TensorParam, E, SLOTS};
use phobos_core::ast::ScalarTy;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Lvl {
    Uniform,
    Warp,
    Varying,
}

/// A generated expression with what the generator knows about it.
struct X {
    e: E,
    lvl: Lvl,
    /// Bitwise the same in every correct execution.
    exact: bool,
}

struct Var {
    name: String,
    ty: ScalarTy,
    mutable: bool,
    lvl: Lvl,
    exact: bool,
}

struct Tile {
    name: String,
    elem: ScalarTy,
    len: u32,
    /// A `[2, len]` tile of the 2-D input `Q` (the one a tile store writes
    /// back), else a 1-D tile.
    two_d: bool,
}

fn bits(t: ScalarTy) -> u32 {
    crate::value::bits(t)
}

/// The types the generator writes: every scalar type but the 8-bit floats,
/// which have no arithmetic (P0473) and convert only on sm_89 and newer
/// (P0812), in `ScalarTy::ALL`'s order (so a seed makes the program it
/// made before they existed).
const TYPES: [ScalarTy; 13] = {
    let mut out = [ScalarTy::Bool; 13];
    let mut i = 0;
    let mut j = 0;
    while i < ScalarTy::ALL.len() {
        let t = ScalarTy::ALL[i];
        if !matches!(t, ScalarTy::F8E4M3 | ScalarTy::F8E5M2) {
            out[j] = t;
            j += 1;
        }
        i += 1;
    }
    out
};

/// What the generator may use; lets tests switch features off.
#[derive(Clone, Debug)]
pub struct Features {
    pub tiles: bool,
    pub collectives: bool,
    pub shuffles: bool,
    pub runs: bool,
    /// CTA collectives inside `if`/`for` bodies under uniform control
    /// (their barriers may be skipped: the branch not taken, the loop run
    /// zero times; `tests/fuzz-cases/barrier-in-*.pho`).
    pub cta_collectives_in_branches: bool,
    /// Tile copies and tile writes inside uniform `if`/`for` bodies; a tile
    /// write whose value reads the tile it writes (`t[i] = t[i] + t[j]`);
    /// a tile write under an `if` condition or `for` bound that reads the
    /// tile. It found the predicated-if fence bug (seeds 200318, 200857:
    /// the fence after a condition that reads a tile was hung on the
    /// condition's `Set`), fixed since; on by default.
    pub tiles_in_branches: bool,
    /// Loads from the outputs the kernel writes, each thread from its own
    /// slots (race-free).
    pub written_loads: bool,
    /// Names from the whole identifier space for the kernel, its
    /// parameters and its locals, instead of `fz`, `A0`, `t1`: PTX opcodes
    /// and directives, the prefixes and suffixes of the compiler's own
    /// names (`p_`, `d_`, `local0_`, `_smem`, `__U1`), Rust keywords, a
    /// lone `_`, names up to the 200-byte limit of kernel names (issue 35).
    /// Drawn from a generator of their own, so turning them off gives the
    /// same programs with the plain names.
    pub awkward_names: bool,
    /// CTA collectives in the tile subscript of an `if` condition whose
    /// body writes the tile (the `if` is predicated; issue 34: the
    /// collective ran under the predicate, after the fence, and deadlocked)
    /// and in loop bounds read from a tile.
    pub cta_in_conditions: bool,
    /// Scratch tiles (`shared<T>[32]`) in a loop: one written on one trip
    /// only (under a branch) and read on every trip, beside others written
    /// and read on every trip, declared before the loop or in it; and
    /// tile reads at constant indices at the tiles' edges (issue 26: the
    /// shared plan gave two such tiles the same bytes).
    pub scratch: bool,
    /// A last statement that reads or writes a tile at a run-time index at
    /// or past its edges (issue 26 item 3): past the end, before the start,
    /// or for some threads only; the evaluator finds the index out of
    /// bounds, and the simulator must report it (memcheck), not run on with
    /// a neighbouring buffer's bytes. Drawn from a generator of its own, in
    /// about one program in eight that has a tile.
    pub edges: bool,
    /// Division and remainder by constants (powers of two, small and large
    /// odd divisors) besides the run-time `(b & 7) + 1` ones: the shapes
    /// the emitter strength-reduces (issue 30).
    pub const_divisors: bool,
    /// In about half the programs `@aligned(N = 8)` (and `M = 8` with the
    /// 2-D tile), the dims to match, and tile starts rounded down to
    /// multiples of 8: tile copies and stores then move 8- and 16-byte
    /// vector chunks, and boxes wholly inside a tensor take the unmasked
    /// path that steps a thread's chunks by constant offsets (issue 30).
    /// Drawn from a generator of its own, so turning it off gives the same
    /// programs without the alignment.
    pub aligned_tiles: bool,
}

impl Default for Features {
    fn default() -> Self {
        Features {
            tiles: true,
            collectives: true,
            shuffles: true,
            runs: true,
            cta_collectives_in_branches: true,
            tiles_in_branches: true,
            written_loads: true,
            awkward_names: true,
            cta_in_conditions: true,
            scratch: true,
            edges: true,
            const_divisors: true,
            aligned_tiles: true,
        }
    }
}

pub struct Gen {
    rng: ChaCha8Rng,
    /// Draws the awkward names (see `Features::awkward_names`), apart from
    /// `rng` so the program's shape does not depend on them.
    names: Namer,
    feat: Features,
    vars: Vec<Var>,
    tiles: Vec<Tile>,
    ctrl: Lvl,
    next: u32,
    inputs: Vec<(String, ScalarTy)>,
    scalars: Vec<(String, ScalarTy)>,
    outs: Vec<(String, ScalarTy)>,
    autotune: bool,
    budget: u32,
    /// Tiles that the statement being generated writes (it must not read them).
    writing: Option<String>,
    /// How many `if`/`for` bodies the statement being generated is in.
    nest: u32,
    /// How many `for` bodies the statement being generated is in.
    loops: u32,
    /// For each output and slot: whether this thread has surely written it
    /// (unconditionally, at the top level), and whether every value
    /// written to it so far is exact.
    slots: Vec<[(bool, bool); SLOTS as usize]>,
    /// What `@aligned` promises of the dims, and tile starts are multiples
    /// of (0: nothing; see `Features::aligned_tiles`).
    align: i64,
}

/// Generate the program for `seed`.
pub fn generate(seed: u64, feat: &Features) -> Program {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut names = Namer::new(seed, feat.awkward_names);
    let threads = *[32u32, 64, 64, 128].choose(&mut rng).expect("nonempty");
    let grid = rng.gen_range(1..=3u32);
    let mut in_tys = vec![ScalarTy::F32, ScalarTy::I32, ScalarTy::I8];
    for _ in 0..rng.gen_range(0..3) {
        in_tys.push(*TYPES.choose(&mut rng).expect("nonempty"));
    }
    in_tys.dedup();
    let inputs: Vec<(String, ScalarTy)> = in_tys
        .iter()
        .enumerate()
        .map(|(i, t)| (names.name(format!("A{i}")), *t))
        .collect();
    let mut scalars = Vec::new();
    for i in 0..rng.gen_range(0..3) {
        let t = *TYPES.choose(&mut rng).expect("nonempty");
        scalars.push((names.name(format!("s{i}")), t));
    }
    let mut outs = vec![];
    for i in 0..rng.gen_range(1..4) {
        let t = *TYPES.choose(&mut rng).expect("nonempty");
        outs.push((names.name(format!("O{i}")), t));
    }
    let autotune = rng.gen_bool(0.3);
    let align = if feat.aligned_tiles && ChaCha8Rng::seed_from_u64(seed ^ 0xa11_9e0d).gen_bool(0.5)
    {
        8
    } else {
        0
    };
    let mut g = Gen {
        rng,
        names,
        feat: feat.clone(),
        vars: vec![],
        tiles: vec![],
        ctrl: Lvl::Uniform,
        next: 0,
        inputs,
        scalars,
        outs,
        autotune,
        budget: 0,
        writing: None,
        nest: 0,
        loops: 0,
        slots: vec![],
        align,
    };
    g.slots = vec![[(false, true); SLOTS as usize]; g.outs.len()];
    g.budget = g.rng.gen_range(4..24);
    let mut body = vec![];
    while g.budget > 0 {
        g.stmt(&mut body, 0, false);
    }
    // Every output slot is written at least once at the end, from a value
    // that uses what came before.
    for o in 0..g.outs.len() {
        let ty = g.outs[o].1;
        let v = g.expr(ty, 2);
        let slot = g.rng.gen_range(0..SLOTS);
        body.push(g.out_store(o, slot, v));
    }
    let mut n = 1024 + g.rng.gen_range(0..64i64);
    let mut aligned = vec![];
    if g.align > 0 {
        n += (g.align - n % g.align) % g.align;
        aligned.push(("N".to_string(), g.align));
    }
    let mut tensors: Vec<TensorParam> = g
        .inputs
        .iter()
        .map(|(name, elem)| TensorParam {
            name: name.clone(),
            elem: *elem,
            dim: "N".into(),
            written: false,
        })
        .collect();
    let total = grid * threads * SLOTS;
    tensors.extend(g.outs.iter().map(|(name, elem)| TensorParam {
        name: name.clone(),
        elem: *elem,
        dim: total.to_string(),
        written: true,
    }));
    let mut dims = vec![("N".to_string(), n)];
    if let Some(t) = g.tiles.iter().find(|t| t.two_d) {
        let (name, elem, len) = (t.name.clone(), t.elem, t.len);
        let mut m = i64::from(grid * len) - g.rng.gen_range(0..i64::from(len));
        if g.align > 0 {
            m = (m - m % g.align).max(g.align);
            aligned.push(("M".to_string(), g.align));
        }
        tensors.push(TensorParam {
            name: "Q".into(),
            elem,
            dim: "2, N".into(),
            written: false,
        });
        tensors.push(TensorParam {
            name: "T".into(),
            elem,
            dim: "2, M".into(),
            written: true,
        });
        dims.push(("M".into(), m));
        body.push(St::Other(E::leaf(
            ScalarTy::Bool,
            format!("T[0 :+ 2, ctx.block.x * {len} :+ {len}] = {name}"),
        )));
    }
    if g.feat.edges {
        body.extend(g.past_an_edge(seed, threads));
    }
    let fns = vec![
        "fn mix(a, b) = (a * b) + a".to_string(),
        "fn big(a, b) = max(a, b)".to_string(),
        "fn flip(a, b) = a ^ b".to_string(),
    ];
    let autotune = if g.autotune {
        let vals = vec![1, 2, 3];
        let pick = *vals.choose(&mut g.rng).expect("nonempty");
        Some((vals, pick))
    } else {
        None
    };
    Program {
        kernel: g.names.kernel(),
        threads,
        grid,
        fns,
        autotune,
        tensors,
        scalars: g.scalars.clone(),
        dims,
        aligned,
        body,
    }
}

/// The row subscript of a tile element: `1, ` for `[2, len]` tiles.
fn row(two_d: bool) -> &'static str {
    if two_d {
        "1, "
    } else {
        ""
    }
}

impl Gen {
    /// See [`Features::edges`]: `O[..] = t[at]` or `t[at] = v` with `at` a
    /// run-time index at or past an edge of a tile in scope. Its own
    /// generator, so the rest of the program is what it was without it.
    fn past_an_edge(&mut self, seed: u64, threads: u32) -> Option<St> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xed6e_5eed);
        if self.tiles.is_empty() || !rng.gen_bool(0.125) {
            return None;
        }
        let t = &self.tiles[rng.gen_range(0..self.tiles.len())];
        let (name, elem, len, two_d) = (t.name.clone(), t.elem, t.len, t.two_d);
        let len = i64::from(len);
        // A read into an output of the tile's type, else a write.
        let out = self.outs.iter().position(|(_, ty)| *ty == elem);
        let read = out.is_some() && rng.gen_bool(0.6);
        // A 2-D tile is `[2, len]`: past the end in its last row, before
        // the start in its first, so the element is outside the buffer,
        // not only outside a row.
        let (at, row) = match rng.gen_range(0..4) {
            // Past the end for every thread (a write: each its own).
            0 if read => (format!("{len} + (ctx.thread & 3)"), "1, "),
            0 => (format!("{len} + ctx.thread"), "1, "),
            // Before the start.
            1 if read => ("-1 - (ctx.thread & 3)".to_string(), "0, "),
            1 => ("-1 - ctx.thread".to_string(), "0, "),
            // Past the end for the last threads only.
            2 => (
                format!("ctx.thread + {}", len - i64::from(threads) + 1),
                "1, ",
            ),
            // At the edge, in range: a read that must agree.
            _ if read => (format!("{} - (ctx.thread & 1)", len - 1), "1, "),
            _ => (format!("{len} + ctx.thread"), "1, "),
        };
        let row = if two_d { row } else { "" };
        let place = format!("{name}[{row}{at}]");
        match out {
            Some(o) if read => {
                let slot = rng.gen_range(0..SLOTS);
                let v = X {
                    e: E::leaf(elem, place),
                    lvl: Lvl::Varying,
                    exact: true,
                };
                Some(self.out_store(o, slot, v))
            }
            _ => {
                let v = self.expr(elem, 1);
                Some(St::Other(E::node(
                    elem,
                    &[&format!("{place} = "), ""],
                    vec![v.e],
                )))
            }
        }
    }

    fn name(&mut self, p: &str) -> String {
        self.next += 1;
        self.names.name(format!("{p}{}", self.next))
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        *xs.choose(&mut self.rng).expect("nonempty")
    }

    fn gid() -> &'static str {
        "(ctx.block.x * ctx.threads + ctx.thread)"
    }

    fn out_store(&mut self, o: usize, slot: u32, v: X) -> St {
        self.note_store(o, slot..slot + 1, v.exact, true);
        let name = &self.outs[o].0;
        St::Other(E::node(
            v.e.ty,
            &[
                &format!("{name}[{} * {SLOTS} + {slot}] = ", Self::gid()),
                "",
            ],
            vec![v.e],
        ))
    }

    /// Record a store of a value (`exact` or not) into `slots` of output
    /// `o`; `every` when it writes all of them (not one picked at run time).
    fn note_store(&mut self, o: usize, slots: std::ops::Range<u32>, exact: bool, every: bool) {
        let surely = every && self.nest == 0 && self.loops == 0 && self.ctrl == Lvl::Uniform;
        for k in slots {
            let s = &mut self.slots[o][k as usize];
            s.0 |= surely;
            s.1 &= exact;
        }
    }

    fn stmt(&mut self, out: &mut Vec<St>, depth: u32, in_loop: bool) {
        self.budget = self.budget.saturating_sub(1);
        self.nest = depth;
        let r = self.rng.gen_range(0..100);
        let top = depth == 0 && !in_loop && self.ctrl == Lvl::Uniform;
        // Tile statements need uniform control (their barriers do).
        let tiles_here =
            self.feat.tiles && (top || (self.feat.tiles_in_branches && self.ctrl == Lvl::Uniform));
        match r {
            0..=29 => {
                let ty = self.pick(&TYPES);
                let x = self.expr(ty, 3);
                let mutable = self.rng.gen_bool(0.4);
                let mut lvl = x.lvl.max(self.ctrl);
                if mutable && self.rng.gen_bool(0.3) {
                    lvl = Lvl::Varying;
                }
                let name = self.name("v");
                let exact = x.exact && !(mutable && ty.is_float());
                self.vars.push(Var {
                    name: name.clone(),
                    ty,
                    mutable,
                    lvl,
                    exact,
                });
                out.push(St::Let {
                    name,
                    mutable,
                    annotate: true,
                    init: x.e,
                });
            }
            30..=44 => {
                let cands: Vec<usize> = (0..self.vars.len())
                    .filter(|i| self.vars[*i].mutable && self.vars[*i].lvl >= self.ctrl)
                    .collect();
                if let Some(&i) = cands.choose(&mut self.rng) {
                    let ty = self.vars[i].ty;
                    let x = self.expr(ty, 3);
                    if x.lvl <= self.vars[i].lvl {
                        out.push(St::Assign {
                            name: self.vars[i].name.clone(),
                            value: x.e,
                        });
                    }
                }
            }
            45..=59 => {
                let ty = self.outs[self.rng.gen_range(0..self.outs.len())].1;
                let o = self.outs.iter().position(|x| x.1 == ty).unwrap_or(0);
                let kind = self.rng.gen_range(0..4);
                if kind == 0 && self.feat.runs {
                    // A run store of a broadcast scalar, or one element.
                    let len = self.pick(&[1u32, 2, 4, 8]);
                    let v = self.expr(ty, 2);
                    let name = self.outs[o].0.clone();
                    let g = Self::gid();
                    if self.rng.gen_bool(0.5) {
                        self.note_store(o, 0..len, v.exact, true);
                        out.push(St::Other(E::node(
                            ty,
                            &[&format!("{name}[{g} * {SLOTS} :+ {len}] = "), ""],
                            vec![v.e],
                        )));
                    } else {
                        self.note_store(o, 0..len, v.exact, false);
                        let i = self.expr(ScalarTy::I32, 1);
                        out.push(St::Other(E::node(
                            ty,
                            &[
                                &format!("store({name}[{g} * {SLOTS} :+ {len}], ("),
                                &format!(") & {}, ", len - 1),
                                ")",
                            ],
                            vec![i.e, v.e],
                        )));
                    }
                } else {
                    let v = self.expr(ty, 3);
                    let slot = self.rng.gen_range(0..SLOTS);
                    let st = self.out_store(o, slot, v);
                    out.push(st);
                }
            }
            60..=71 if depth < 3 => {
                let c = self.cond();
                let saved = self.ctrl;
                self.ctrl = self.ctrl.max(c.lvl);
                let (nv, nt) = (self.vars.len(), self.tiles.len());
                let mut then = vec![];
                for _ in 0..self.rng.gen_range(1..4) {
                    self.stmt(&mut then, depth + 1, in_loop);
                }
                self.vars.truncate(nv);
                self.tiles.truncate(nt);
                let mut els = vec![];
                if self.rng.gen_bool(0.4) {
                    for _ in 0..self.rng.gen_range(1..3) {
                        self.stmt(&mut els, depth + 1, in_loop);
                    }
                    self.vars.truncate(nv);
                    self.tiles.truncate(nt);
                }
                self.ctrl = saved;
                out.push(St::If {
                    cond: c.e,
                    then,
                    els,
                });
            }
            72..=81 if depth < 3 => {
                let (start, end, step, lvl) = self.bounds();
                let var = self.name("i");
                let saved = self.ctrl;
                self.ctrl = self.ctrl.max(lvl);
                let (nv, nt) = (self.vars.len(), self.tiles.len());
                self.vars.push(Var {
                    name: var.clone(),
                    ty: ScalarTy::I32,
                    mutable: false,
                    lvl,
                    exact: true,
                });
                let mut body = vec![];
                self.loops += 1;
                for _ in 0..self.rng.gen_range(1..4) {
                    self.stmt(&mut body, depth + 1, true);
                }
                self.loops -= 1;
                self.vars.truncate(nv);
                self.tiles.truncate(nt);
                self.ctrl = saved;
                out.push(St::For {
                    var,
                    start,
                    end,
                    step,
                    body,
                });
            }
            82..=91 if tiles_here && top && self.feat.scratch && self.rng.gen_bool(0.4) => {
                self.scratch_loop(out, depth)
            }
            82..=91 if tiles_here => self.tile_copy(out, top),
            92..=99 if tiles_here && !self.tiles.is_empty() => self.tile_write(out),
            _ => {
                let ty = self.outs[0].1;
                let v = self.expr(ty, 2);
                let slot = self.rng.gen_range(0..SLOTS);
                let st = self.out_store(0, slot, v);
                out.push(st);
            }
        }
    }

    /// `if ctx.thread < 32 { s[at] = v }`, `at` the thread or its mirror:
    /// threads 0 to 31 write all 32 elements, each its own.
    fn scratch_write(&mut self, name: &str, elem: ScalarTy) -> St {
        let saved = std::mem::replace(&mut self.ctrl, Lvl::Varying);
        self.writing = Some(name.to_string());
        let v = self.expr(elem, 2);
        self.writing = None;
        self.ctrl = saved;
        let at = self.pick(&["ctx.thread", "31 - ctx.thread"]);
        St::If {
            cond: E::leaf(ScalarTy::Bool, "ctx.thread < 32"),
            then: vec![St::Other(E::node(
                elem,
                &[&format!("{name}[{at}] = "), ""],
                vec![v.e],
            ))],
            els: vec![],
        }
    }

    /// Scratch tiles used across the trips of a loop (issue 26 item 1):
    ///
    /// ```text
    /// var a = shared<T>[32]            (before the loop, or first in it)
    /// for i in range(0, trips) {
    ///   if i == k { a[..] = .. } else { ..maybe.. }   one trip writes `a`
    ///   var b = shared<T>[32]; b[..] = ..             every trip writes `b`
    ///   statements that read `a` and `b`
    /// }
    /// ```
    ///
    /// `a` is read on every trip from the one that wrote it on; `b` only in
    /// the trip that wrote it. Trip `k` is the first (0), so every read of
    /// `a` follows its write.
    fn scratch_loop(&mut self, out: &mut Vec<St>, depth: u32) {
        let elem = self.pick(&[ScalarTy::F32, ScalarTy::I32, ScalarTy::I8]);
        let a = self.name("sh");
        let outside = self.rng.gen_bool(0.5);
        let decl = |n: &str| {
            St::Other(E::leaf(
                elem,
                format!("var {n} = shared<{}>[32]", elem.name()),
            ))
        };
        if outside {
            out.push(decl(&a));
        }
        let var = self.name("i");
        let trips = self.rng.gen_range(2..=4);
        let (nv, nt) = (self.vars.len(), self.tiles.len());
        self.vars.push(Var {
            name: var.clone(),
            ty: ScalarTy::I32,
            mutable: false,
            lvl: Lvl::Uniform,
            exact: true,
        });
        self.loops += 1;
        let mut body = vec![];
        if !outside {
            body.push(decl(&a));
        }
        let write_a = self.scratch_write(&a, elem);
        let mut els = vec![];
        if self.rng.gen_bool(0.5) {
            // The other trips write another scratch tile in the branch.
            let c = self.name("sh");
            els.push(decl(&c));
            els.push(self.scratch_write(&c, elem));
        }
        body.push(St::If {
            cond: E::leaf(ScalarTy::Bool, format!("{var} == 0")),
            then: vec![write_a],
            els,
        });
        self.tiles.push(Tile {
            name: a.clone(),
            elem,
            len: 32,
            two_d: false,
        });
        for _ in 0..self.rng.gen_range(1..3) {
            let b = self.name("sh");
            body.push(decl(&b));
            body.push(self.scratch_write(&b, elem));
            self.tiles.push(Tile {
                name: b,
                elem,
                len: 32,
                two_d: false,
            });
        }
        for _ in 0..self.rng.gen_range(1..4) {
            self.stmt(&mut body, depth + 1, true);
        }
        // A last read of each, so the loop's reads are not all optional.
        let o = self.rng.gen_range(0..self.outs.len());
        let oty = self.outs[o].1;
        if oty == elem {
            let v = self.expr(elem, 2);
            let slot = self.rng.gen_range(0..SLOTS);
            body.push(self.out_store(o, slot, v));
        }
        self.loops -= 1;
        self.vars.truncate(nv);
        // Scratch tiles declared in the loop leave scope with it; `a`
        // declared before it stays readable (every element written).
        self.tiles.truncate(nt);
        if outside {
            self.tiles.push(Tile {
                name: a,
                elem,
                len: 32,
                two_d: false,
            });
        }
        out.push(St::For {
            var,
            start: E::leaf(ScalarTy::I32, "0"),
            end: E::leaf(ScalarTy::I32, trips.to_string()),
            step: 1,
            body,
        });
    }

    /// A tile's start `ctx.block.x * a + b`: `b` sometimes negative or past
    /// the end; both multiples of the alignment the dims promise, if any.
    fn tile_start(&mut self) -> (i64, i64) {
        // i32 draws, as before the alignment: the same seed, the same program.
        let a = i64::from(self.rng.gen_range(0..300i32));
        let b = i64::from(self.rng.gen_range(-40..1100i32));
        if self.align > 0 {
            (a - a.rem_euclid(self.align), b - b.rem_euclid(self.align))
        } else {
            (a, b)
        }
    }

    /// A tile copy; the `[2, len]` tile stored back at the end only at the
    /// top level (`top`), where its name stays in scope.
    fn tile_copy(&mut self, out: &mut Vec<St>, top: bool) {
        let (src, elem) = self.inputs[self.rng.gen_range(0..self.inputs.len())].clone();
        let len = self.pick(&[32u32, 64, 128, 256]);
        let name = self.name("t");
        if top && !self.tiles.iter().any(|t| t.two_d) && self.rng.gen_bool(0.5) {
            let elem = self.pick(&TYPES);
            let (a, b) = self.tile_start();
            out.push(St::Other(E::leaf(
                elem,
                format!("var {name} = Q[0 :+ 2, ctx.block.x * {a} + {b} :+ {len}]"),
            )));
            self.tiles.push(Tile {
                name,
                elem,
                len,
                two_d: true,
            });
            return;
        }
        // A uniform start, sometimes negative or past the end: the copy is
        // masked at both ends.
        let (a, b) = self.tile_start();
        out.push(St::Other(E::leaf(
            elem,
            format!("var {name} = {src}[ctx.block.x * {a} + {b} :+ {len}]"),
        )));
        self.tiles.push(Tile {
            name,
            elem,
            len,
            two_d: false,
        });
    }

    /// `if ctx.thread < len { t[at] = v }`: each thread writes its own
    /// element. Under uniform control `v` may read `t` itself (the compiler
    /// predicates the `if` so a barrier fits between the reads and the
    /// writes); sometimes the write sits under an `if` condition or inside
    /// a `for` whose bounds read `t` (then `v` does not read `t`: the write
    /// is under control that differs between threads, where no barrier can
    /// go).
    fn tile_write(&mut self, out: &mut Vec<St>) {
        let i = self.rng.gen_range(0..self.tiles.len());
        let (name, elem, len, two_d) = (
            self.tiles[i].name.clone(),
            self.tiles[i].elem,
            self.tiles[i].len,
            self.tiles[i].two_d,
        );
        let guard = if self.feat.tiles_in_branches {
            self.rng.gen_range(0..6)
        } else {
            5
        };
        // The write sits under `if ctx.thread < len`, which varies.
        let saved = std::mem::replace(&mut self.ctrl, Lvl::Varying);
        let self_read = self.feat.tiles_in_branches && guard >= 4 && saved == Lvl::Uniform;
        self.writing = (!self_read).then(|| name.clone());
        let v = self.expr(elem, 2);
        self.writing = None;
        self.ctrl = saved;
        let at = if self.rng.gen_bool(0.5) {
            "ctx.thread".to_string()
        } else {
            format!("{} - 1 - ctx.thread", len)
        };
        let write = St::If {
            cond: E::leaf(ScalarTy::Bool, format!("ctx.thread < {len}")),
            then: vec![St::Other(E::node(
                elem,
                &[&format!("{name}[{}{at}] = ", row(two_d)), ""],
                vec![v.e],
            ))],
            els: vec![],
        };
        if guard >= 2 {
            out.push(write);
            return;
        }
        // A condition that reads the tile: `(t[j] < c)`.
        let r = row(two_d);
        let mut idx = self.index();
        let cta_here =
            self.ctrl == Lvl::Uniform && (self.nest == 0 || self.feat.cta_collectives_in_branches);
        if self.feat.cta_in_conditions && cta_here && self.rng.gen_bool(0.5) {
            // `j + min<over ctx.thread>(gid)`: the collective is hoisted
            // out of the condition and must run before its predicate.
            let op = self.pick(&["min", "max", "sum", "reduce"]);
            let f = if op == "reduce" { ", big" } else { "" };
            idx = X {
                e: E::node(
                    ScalarTy::I32,
                    &[
                        "(",
                        &format!(" + {op}<over ctx.thread>({}{f}))", Self::gid()),
                    ],
                    vec![idx.e],
                ),
                lvl: Lvl::Varying,
                exact: idx.exact,
            };
        }
        let lit = self.lit(elem);
        let op = if elem == ScalarTy::Bool {
            self.pick(&["==", "!="])
        } else {
            self.pick(&["<", ">=", "==", "!="])
        };
        let cond = E::node(
            ScalarTy::Bool,
            &[
                &format!("({name}[{r}("),
                &format!(") & {}] {op} ", len - 1),
                ")",
            ],
            vec![idx.e, lit],
        );
        if guard == 0 {
            out.push(St::If {
                cond,
                then: vec![write],
                els: vec![],
            });
        } else {
            // A loop that runs 0 or 2 times, by a bound read from the tile.
            let end = E::node(ScalarTy::I32, &["select(", ", 2, 0)"], vec![cond]);
            out.push(St::For {
                var: self.name("i"),
                start: E::leaf(ScalarTy::I32, "0"),
                end,
                step: 1,
                body: vec![write],
            });
        }
    }

    fn bounds(&mut self) -> (E, E, i32, Lvl) {
        let s = self.rng.gen_range(0..3);
        let n = self.rng.gen_range(0..4);
        let step = self.pick(&[1, 1, 2, -1]);
        let (a, b) = if step > 0 { (s, s + n) } else { (s + n, s - 1) };
        match self.rng.gen_range(0..4) {
            0 => (
                E::leaf(ScalarTy::I32, a.to_string()),
                E::leaf(ScalarTy::I32, "ctx.lane & 3".to_string()),
                1,
                Lvl::Varying,
            ),
            1 => (
                E::leaf(ScalarTy::I32, "0".to_string()),
                E::leaf(ScalarTy::I32, "ctx.warp + 1".to_string()),
                1,
                Lvl::Warp,
            ),
            2 if self.autotune => (
                E::leaf(ScalarTy::I32, "0".to_string()),
                E::leaf(ScalarTy::I32, "U".to_string()),
                1,
                Lvl::Uniform,
            ),
            _ => (
                E::leaf(ScalarTy::I32, a.to_string()),
                E::leaf(ScalarTy::I32, b.to_string()),
                step,
                Lvl::Uniform,
            ),
        }
    }

    fn cond(&mut self) -> X {
        match self.rng.gen_range(0..4) {
            0 => X {
                e: E::leaf(
                    ScalarTy::Bool,
                    format!("ctx.lane < {}", self.rng.gen_range(0..33)),
                ),
                lvl: Lvl::Varying,
                exact: true,
            },
            1 => X {
                e: E::leaf(
                    ScalarTy::Bool,
                    format!("ctx.warp == {}", self.rng.gen_range(0..3)),
                ),
                lvl: Lvl::Warp,
                exact: true,
            },
            _ => self.expr(ScalarTy::Bool, 2),
        }
    }

    fn lit(&mut self, ty: ScalarTy) -> E {
        let text = match ty {
            ScalarTy::Bool => self.pick(&["true", "false"]).to_string(),
            t if t.is_float() => {
                let k: i32 = self.rng.gen_range(-16..=16);
                let v = format!("{:?}", f64::from(k) / 8.0);
                format!("{}({v})", t.name())
            }
            t => {
                let n = bits(t);
                let v: i128 = match self.rng.gen_range(0..4) {
                    0 => self.rng.gen_range(0..8),
                    1 if crate::value::is_signed(t) => -(1i128 << (n - 1)),
                    1 => (1i128 << n) - 1,
                    _ => {
                        let lo = if crate::value::is_signed(t) {
                            -(1i128 << (n - 1))
                        } else {
                            0
                        };
                        let hi = if crate::value::is_signed(t) {
                            (1i128 << (n - 1)) - 1
                        } else {
                            (1i128 << n) - 1
                        };
                        self.rng.gen_range(lo..=hi)
                    }
                };
                let v = if v == -(1i128 << (n - 1)) {
                    // The smallest value's magnitude does not fit its type.
                    format!("({} - 1)", v + 1)
                } else {
                    v.to_string()
                };
                // A conversion gives its literal the target type.
                format!("{}({v})", t.name())
            }
        };
        E::leaf(ty, text)
    }

    /// An `i32` index expression (any level).
    fn index(&mut self) -> X {
        match self.rng.gen_range(0..4) {
            0 => X {
                e: E::leaf(ScalarTy::I32, "ctx.thread".to_string()),
                lvl: Lvl::Varying,
                exact: true,
            },
            1 => X {
                e: E::leaf(ScalarTy::I32, Self::gid().to_string()),
                lvl: Lvl::Varying,
                exact: true,
            },
            _ => self.expr(ScalarTy::I32, 1),
        }
    }

    fn leaf(&mut self, ty: ScalarTy) -> X {
        for _ in 0..4 {
            match self.rng.gen_range(0..10) {
                0..=2 => {
                    let cands: Vec<usize> = (0..self.vars.len())
                        .filter(|i| self.vars[*i].ty == ty)
                        .collect();
                    if let Some(&i) = cands.choose(&mut self.rng) {
                        let v = &self.vars[i];
                        return X {
                            e: E::leaf(ty, v.name.clone()),
                            lvl: v.lvl,
                            exact: v.exact,
                        };
                    }
                }
                3..=5 => {
                    let cands: Vec<usize> = (0..self.inputs.len())
                        .filter(|i| self.inputs[*i].1 == ty)
                        .collect();
                    if let Some(&i) = cands.choose(&mut self.rng) {
                        let name = self.inputs[i].0.clone();
                        let idx = self.index();
                        return X {
                            e: E::node(ty, &[&format!("{name}[("), ") & 1023]"], vec![idx.e]),
                            lvl: idx.lvl,
                            exact: true,
                        };
                    }
                }
                6 => {
                    let cands: Vec<usize> = (0..self.tiles.len())
                        .filter(|i| {
                            self.tiles[*i].elem == ty
                                && self.writing.as_deref() != Some(&self.tiles[*i].name)
                        })
                        .collect();
                    if let Some(&i) = cands.choose(&mut self.rng) {
                        let (name, len) = (self.tiles[i].name.clone(), self.tiles[i].len);
                        let r = row(self.tiles[i].two_d);
                        if self.feat.scratch && self.rng.gen_bool(0.2) {
                            // A constant index at an edge of the tile.
                            let at = self.pick(&[0, len - 1]);
                            // Varying all the same: a tile written by
                            // element stores reads as varying.
                            return X {
                                e: E::leaf(ty, format!("{name}[{r}{at}]")),
                                lvl: Lvl::Varying,
                                exact: true,
                            };
                        }
                        let idx = self.index();
                        return X {
                            e: E::node(
                                ty,
                                &[&format!("{name}[{r}("), &format!(") & {}]", len - 1)],
                                vec![idx.e],
                            ),
                            lvl: Lvl::Varying,
                            exact: true,
                        };
                    }
                }
                7 => {
                    let cands: Vec<usize> = (0..self.scalars.len())
                        .filter(|i| self.scalars[*i].1 == ty)
                        .collect();
                    if let Some(&i) = cands.choose(&mut self.rng) {
                        return X {
                            e: E::leaf(ty, self.scalars[i].0.clone()),
                            lvl: Lvl::Uniform,
                            exact: true,
                        };
                    }
                }
                9 if self.feat.written_loads => {
                    // A slot of an output this thread owns: integers at any
                    // time (the poisoned start is a fixed value); floats and
                    // bools once surely written (the poison is a NaN or not
                    // a bool), outside loops (a later write in the loop
                    // body would reach an earlier read in the next
                    // iteration).
                    let int = ty.is_int();
                    let cands: Vec<(usize, u32)> = (0..self.outs.len())
                        .filter(|&o| self.outs[o].1 == ty)
                        .flat_map(|o| (0..SLOTS).map(move |k| (o, k)))
                        .filter(|&(o, k)| int || (self.loops == 0 && self.slots[o][k as usize].0))
                        .collect();
                    if let Some(&(o, k)) = cands.choose(&mut self.rng) {
                        return X {
                            e: E::leaf(
                                ty,
                                format!("{}[{} * {SLOTS} + {k}]", self.outs[o].0, Self::gid()),
                            ),
                            lvl: Lvl::Varying,
                            exact: int || self.slots[o][k as usize].1,
                        };
                    }
                }
                8 if ty == ScalarTy::I32 => {
                    let (f, lvl) = self.pick(&[
                        ("ctx.thread", Lvl::Varying),
                        ("ctx.lane", Lvl::Varying),
                        ("ctx.warp", Lvl::Warp),
                        ("ctx.block.x", Lvl::Uniform),
                        ("ctx.threads", Lvl::Uniform),
                        ("ctx.warps", Lvl::Uniform),
                        ("ctx.lanes", Lvl::Uniform),
                        ("ctx.grid.x", Lvl::Uniform),
                    ]);
                    {
                        return X {
                            e: E::leaf(ty, f.to_string()),
                            lvl,
                            exact: true,
                        };
                    }
                }
                _ => {}
            }
        }
        X {
            e: self.lit(ty),
            lvl: Lvl::Uniform,
            exact: true,
        }
    }

    fn expr(&mut self, ty: ScalarTy, depth: u32) -> X {
        if depth == 0 || self.rng.gen_bool(0.25) {
            return self.leaf(ty);
        }
        let d = depth - 1;
        for _ in 0..4 {
            let r = self.rng.gen_range(0..100);
            let x = match ty {
                ScalarTy::Bool => self.bool_node(r, d),
                t if t.is_float() => self.float_node(t, r, d),
                t => self.int_node(t, r, d),
            };
            if let Some(x) = x {
                return x;
            }
        }
        self.leaf(ty)
    }

    fn bin(&mut self, ty: ScalarTy, parts: &[&str], a: X, b: X) -> X {
        X {
            lvl: a.lvl.max(b.lvl),
            exact: a.exact && b.exact,
            e: E::node(ty, parts, vec![a.e, b.e]),
        }
    }

    /// `(x op y)` on two new operands of type `t`, `op` picked from `ops`
    /// after them.
    fn infix(&mut self, t: ScalarTy, d: u32, ops: &[&str]) -> X {
        let (x, y) = (self.expr(t, d), self.expr(t, d));
        let op = self.pick(ops);
        self.bin(t, &["(", &format!(" {op} "), ")"], x, y)
    }

    /// `f(x, y)` on two new operands of type `t`, `f` picked from `fs`
    /// after them.
    fn call2(&mut self, t: ScalarTy, d: u32, fs: &[&str]) -> X {
        let (x, y) = (self.expr(t, d), self.expr(t, d));
        let f = self.pick(fs);
        self.bin(t, &[&format!("{f}("), ", ", ")"], x, y)
    }

    /// A node of three operands, exact as the caller says.
    fn node3(ty: ScalarTy, parts: &[&str], [a, b, c]: [X; 3], exact: bool) -> X {
        X {
            lvl: a.lvl.max(b.lvl).max(c.lvl),
            exact,
            e: E::node(ty, parts, vec![a.e, b.e, c.e]),
        }
    }

    fn un(ty: ScalarTy, parts: &[&str], a: X) -> X {
        X {
            lvl: a.lvl,
            exact: a.exact,
            e: E::node(ty, parts, vec![a.e]),
        }
    }

    fn bool_node(&mut self, r: u32, d: u32) -> Option<X> {
        let b = ScalarTy::Bool;
        Some(match r {
            0..=39 => {
                let t = self.pick(&TYPES);
                let (x, y) = (self.expr(t, d), self.expr(t, d));
                if !(x.exact && y.exact) {
                    return None;
                }
                let op = if t == b {
                    self.pick(&["==", "!="])
                } else {
                    self.pick(&["==", "!=", "<", "<=", ">", ">="])
                };
                self.bin(b, &["(", &format!(" {op} "), ")"], x, y)
            }
            40..=59 => {
                let op = self.pick(&["&&", "||", "&", "|", "^"]);
                let x = self.expr(b, d);
                // The right side of `&&`/`||` runs only where the left side
                // does not decide: control as varying as the left side, and
                // at least warp-uniform, since a CTA collective may not
                // stand there (P0704, docs/language.md "Uniformity").
                let saved = self.ctrl;
                if matches!(op, "&&" | "||") {
                    self.ctrl = self.ctrl.max(x.lvl).max(Lvl::Warp);
                }
                let y = self.expr(b, d);
                self.ctrl = saved;
                self.bin(b, &["(", &format!(" {op} "), ")"], x, y)
            }
            60..=69 => {
                let x = self.expr(b, d);
                Self::un(b, &["!(", ")"], x)
            }
            70..=84 if self.feat.collectives => {
                let x = self.expr(b, d);
                let op = self.pick(&["any", "all"]);
                self.collective(op, x, b)?
            }
            85..=99 if self.feat.shuffles => {
                let x = self.expr(b, d);
                self.shuffle(x)?
            }
            _ => return None,
        })
    }

    fn int_node(&mut self, t: ScalarTy, r: u32, d: u32) -> Option<X> {
        Some(match r {
            0..=24 => self.infix(t, d, &["+", "-", "*", "&", "|", "^"]),
            25..=29 if self.feat.const_divisors && self.rng.gen_bool(0.5) => {
                // A constant divisor: the emitter strength-reduces it
                // (shift, mask or multiply-high; `backend/emit/divide.rs`).
                let x = self.expr(t, d);
                let op = self.pick(&["/", "%"]);
                let max = match t {
                    ScalarTy::I8 => 127,
                    ScalarTy::U8 => 255,
                    ScalarTy::I16 => 32767,
                    ScalarTy::U16 => 65535,
                    ScalarTy::I32 => i64::from(i32::MAX),
                    _ => i64::from(u32::MAX),
                };
                let ds: Vec<i64> = [
                    2,
                    3,
                    4,
                    5,
                    7,
                    10,
                    16,
                    25,
                    100,
                    127,
                    641,
                    1024,
                    65537,
                    1_000_000_007,
                    2_147_483_647,
                    4_294_967_295,
                ]
                .into_iter()
                .filter(|c| *c <= max)
                .collect();
                let c = self.pick(&ds);
                Self::un(t, &["(", &format!(" {op} {c})")], x)
            }
            25..=29 => {
                let (x, y) = (self.expr(t, d), self.expr(t, d));
                let op = self.pick(&["/", "%"]);
                self.bin(t, &["(", &format!(" {op} (("), " & 7) + 1))"], x, y)
            }
            30..=33 => {
                let (x, y) = (self.expr(t, d), self.expr(t, d));
                let op = self.pick(&["<<", ">>"]);
                let m = bits(t) - 1;
                self.bin(t, &["(", &format!(" {op} ("), &format!(" & {m}))")], x, y)
            }
            34..=41 => self.call2(t, d, &["min", "max", "mix"]),
            42..=44 => {
                let x = self.expr(t, d);
                let f = self.pick(&["abs(", "-(", "!("]);
                Self::un(t, &[f, ")"], x)
            }
            45..=47 => {
                let (c, x, y) = (
                    self.expr(ScalarTy::Bool, d),
                    self.expr(t, d),
                    self.expr(t, d),
                );
                Self::node3(t, &["select(", ", ", ", ", ")"], [c, x, y], true)
            }
            48..=52 => {
                // A conversion from another type.
                let from = self.pick(&TYPES);
                let x = self.expr(from, d);
                if !x.exact {
                    return None;
                }
                Self::un(t, &[&format!("{}(", t.name()), ")"], x)
            }
            53..=55 => {
                let (x, y) = (self.expr(t, d), self.expr(t, d));
                self.bin(t, &["cdiv((", " & 63), ((", " & 7) + 1))"], x, y)
            }
            56..=58 if t == ScalarTy::I32 => {
                // The integer types in `TYPES`' order, I8 to U64.
                let ints: Vec<ScalarTy> = TYPES.into_iter().filter(|t| t.is_int()).collect();
                let from = self.pick(&ints);
                let x = self.expr(from, d);
                Self::un(t, &["popcount(", ")"], x)
            }
            59..=63 if matches!(t, ScalarTy::I32 | ScalarTy::U32) => {
                let (x, y, s) = (self.expr(t, d), self.expr(t, d), self.expr(t, d));
                Self::node3(t, &["byteperm(", ", ", ", ", ")"], [x, y, s], true)
            }
            64..=67 if matches!(t, ScalarTy::I32 | ScalarTy::U32) => {
                // Signed words give i32; u32 only when both words are u32.
                let (wa, wb) = if t == ScalarTy::U32 {
                    (t, t)
                } else {
                    (self.pick(&[ScalarTy::I32, ScalarTy::U32]), ScalarTy::I32)
                };
                let (x, y, c) = (self.expr(wa, d), self.expr(wb, d), self.expr(t, d));
                Self::node3(t, &["dp4a(", ", ", ", ", ")"], [x, y, c], true)
            }
            68..=77 if self.feat.runs => self.run_expr(t, d)?,
            78..=89 if self.feat.collectives => {
                let op = self.pick(&["sum", "max", "min", "argmax", "reduce"]);
                if op == "argmax" {
                    // argmax of any numeric type gives an i32 index.
                    if t != ScalarTy::I32 {
                        return None;
                    }
                    let from = self.pick(&TYPES);
                    if from == ScalarTy::Bool {
                        return None;
                    }
                    let x = self.expr(from, d);
                    if !x.exact {
                        return None;
                    }
                    return self.collective(op, x, from);
                }
                let x = self.expr(t, d);
                self.collective(op, x, t)?
            }
            90..=99 if self.feat.shuffles => {
                let x = self.expr(t, d);
                self.shuffle(x)?
            }
            _ => return None,
        })
    }

    fn float_node(&mut self, t: ScalarTy, r: u32, d: u32) -> Option<X> {
        Some(match r {
            0..=19 => self.infix(t, d, &["+", "-"]),
            20..=27 => {
                let (x, y) = (self.expr(t, d), self.expr(t, d));
                self.bin(t, &["min(max((", " * ", "), -64.0), 64.0)"], x, y)
            }
            28..=31 => {
                let (x, y) = (self.expr(t, d), self.expr(t, d));
                self.bin(t, &["(", " / (abs(", ") + 1.0))"], x, y)
            }
            32..=39 => self.call2(t, d, &["min", "max"]),
            40..=43 => {
                let (x, y, z) = (self.expr(t, d), self.expr(t, d), self.expr(t, d));
                let exact = x.exact && y.exact && z.exact;
                let fma = ["min(max(fma(", ", ", ", ", "), -64.0), 64.0)"];
                Self::node3(t, &fma, [x, y, z], exact)
            }
            44..=49 => {
                let x = self.expr(t, d);
                let f = self.pick(&["abs(", "-(", "sqrt(abs(", "floor(", "ceil("]);
                if matches!(f, "floor(" | "ceil(") && !x.exact {
                    return None;
                }
                let close = if f == "sqrt(abs(" { "))" } else { ")" };
                Self::un(t, &[f, close], x)
            }
            50..=57 => {
                let x = self.expr(t, d);
                // A transcendental can amplify a last-bit difference of its
                // argument (sin of a large value), so its argument is exact.
                if !x.exact {
                    return None;
                }
                let (open, close) = self.pick(&[
                    ("exp(min(max(", ", -4.0), 4.0))"),
                    ("exp2(min(max(", ", -4.0), 4.0))"),
                    ("sin(min(max(", ", -64.0), 64.0))"),
                    ("cos(min(max(", ", -64.0), 64.0))"),
                    ("tanh(", ")"),
                    ("log(abs(", ") + 1.0)"),
                    ("log2(abs(", ") + 1.0)"),
                    ("rsqrt(abs(", ") + 1.0)"),
                ]);
                let mut x = Self::un(t, &[open, close], x);
                x.exact = false;
                x
            }
            58..=61 => {
                let (c, x, y) = (
                    self.expr(ScalarTy::Bool, d),
                    self.expr(t, d),
                    self.expr(t, d),
                );
                let exact = x.exact && y.exact;
                Self::node3(t, &["select(", ", ", ", ", ")"], [c, x, y], exact)
            }
            62..=69 => {
                let from = self.pick(&TYPES);
                let x = self.expr(from, d);
                // A large integer or value converted to a narrow float
                // type is fine: both sides round the same way.
                Self::un(t, &[&format!("{}(", t.name()), ")"], x)
            }
            70..=77 if self.feat.runs => self.run_expr(t, d)?,
            78..=89 if self.feat.collectives => {
                let x = self.expr(t, d);
                let op = self.pick(&["sum", "max", "min", "reduce"]);
                // An f16/bf16 sum over a CTA rounds at every step, so its
                // order changes the result by more than the tolerance.
                if (op != "sum" && !x.exact) || (op == "sum" && bits(t) == 16) {
                    return None;
                }
                let mut c = self.collective(op, x, t)?;
                c.exact = c.exact && op != "sum";
                c
            }
            90..=99 if self.feat.shuffles => {
                let x = self.expr(t, d);
                self.shuffle(x)?
            }
            _ => return None,
        })
    }

    /// A run expression reduced to a scalar of type `t`: `sum`, `elem`,
    /// `word`, the dp4a form.
    fn run_expr(&mut self, t: ScalarTy, d: u32) -> Option<X> {
        let src: Vec<String> = self
            .inputs
            .iter()
            .filter(|i| i.1 == t)
            .map(|i| i.0.clone())
            .collect();
        let i8s: Vec<String> = self
            .inputs
            .iter()
            .filter(|i| i.1 == ScalarTy::I8)
            .map(|i| i.0.clone())
            .collect();
        let idx = self.index();
        let choice = self.rng.gen_range(0..4);
        if t == ScalarTy::I32 && choice == 0 && !i8s.is_empty() {
            // sum(i32(a) * i32(b)) over i8 runs: the dp4a form.
            let a = i8s.choose(&mut self.rng).cloned().unwrap_or_default();
            let b = i8s.choose(&mut self.rng).cloned().unwrap_or_default();
            let len = self.pick(&[4u32, 8, 16]);
            let idx2 = self.index();
            return Some(X {
                lvl: Lvl::Varying.min(idx.lvl.max(idx2.lvl)),
                exact: true,
                e: E::node(
                    t,
                    &[
                        &format!("sum(i32({a}[("),
                        &format!(") & 511 :+ {len}]) * i32({b}[("),
                        &format!(") & 511 :+ {len}]))"),
                    ],
                    vec![idx.e, idx2.e],
                ),
            });
        }
        if t == ScalarTy::I32 && choice == 1 && !i8s.is_empty() {
            let a = i8s.choose(&mut self.rng).cloned().unwrap_or_default();
            let w = self.rng.gen_range(0..2);
            return Some(X {
                lvl: idx.lvl,
                exact: true,
                e: E::node(
                    t,
                    &[&format!("word({a}[("), &format!(") & 511 :+ 8], {w})")],
                    vec![idx.e],
                ),
            });
        }
        let a = src.choose(&mut self.rng)?.clone();
        let len = self.pick(&[1u32, 2, 3, 4, 8]);
        let s = self.expr(t, d.min(1));
        let op = if t.is_float() {
            self.pick(&["+", "-"])
        } else {
            self.pick(&["+", "*", "^", "-"])
        };
        let x = if self.rng.gen_bool(0.5) {
            let k = self.rng.gen_range(0..len);
            X {
                lvl: idx.lvl.max(s.lvl),
                exact: s.exact,
                e: E::node(
                    t,
                    &[
                        &format!("elem({a}[("),
                        &format!(") & 511 :+ {len}] {op} "),
                        &format!(", {k})"),
                    ],
                    vec![idx.e, s.e],
                ),
            }
        } else {
            X {
                lvl: idx.lvl.max(s.lvl),
                exact: s.exact && !t.is_float(),
                e: E::node(
                    t,
                    &[
                        &format!("sum({a}[("),
                        &format!(") & 511 :+ {len}] {op} "),
                        ")",
                    ],
                    vec![idx.e, s.e],
                ),
            }
        };
        Some(x)
    }

    /// A lane or CTA collective of `x`, or `None` where control forbids it.
    fn collective(&mut self, op: &str, x: X, t: ScalarTy) -> Option<X> {
        let cta = self.ctrl == Lvl::Uniform
            && (self.nest == 0 || self.feat.cta_collectives_in_branches)
            && self.rng.gen_bool(0.3);
        if !cta && self.ctrl > Lvl::Warp {
            return None;
        }
        let rt = if op == "argmax" { ScalarTy::I32 } else { t };
        if op == "reduce" && (t == ScalarTy::Bool || (t.is_float() && !x.exact)) {
            return None;
        }
        let f = if op == "reduce" {
            if t.is_float() {
                ", big"
            } else {
                self.pick(&[", big", ", flip"])
            }
        } else {
            ""
        };
        if cta {
            return Some(X {
                lvl: Lvl::Uniform,
                exact: x.exact,
                e: E::node(
                    rt,
                    &[&format!("{op}<over ctx.thread>("), &format!("{f})")],
                    vec![x.e],
                ),
            });
        }
        let w = self.pick(&[1u32, 2, 4, 8, 16, 32, 32]);
        let cfg = if w == 32 && self.rng.gen_bool(0.5) {
            "over ctx.lane".to_string()
        } else {
            format!("over ctx.lane, width {w}")
        };
        Some(X {
            lvl: if w == 32 { Lvl::Warp } else { Lvl::Varying },
            exact: x.exact,
            e: E::node(rt, &[&format!("{op}<{cfg}>("), &format!("{f})")], vec![x.e]),
        })
    }

    /// A load of type `t` at the thread's own index, if an input has `t`.
    fn lane_value(&mut self, t: ScalarTy) -> Option<X> {
        let cands: Vec<String> = self
            .inputs
            .iter()
            .filter(|i| i.1 == t)
            .map(|i| i.0.clone())
            .collect();
        let a = cands.choose(&mut self.rng)?;
        Some(X {
            e: E::leaf(t, format!("{a}[{} & 1023]", Self::gid())),
            lvl: Lvl::Varying,
            exact: true,
        })
    }

    fn shuffle(&mut self, x: X) -> Option<X> {
        if self.ctrl > Lvl::Warp {
            return None;
        }
        let t = x.e.ty;
        let w = self.pick(&[1u32, 2, 4, 8, 16, 32, 32]);
        let mode = self.pick(&["from", "xor", "down", "up"]);
        let wcfg = if w == 32 && self.rng.gen_bool(0.5) {
            String::new()
        } else {
            format!(", width {w}")
        };
        // Mostly a value that differs between lanes, so that reading the
        // wrong lane shows.
        let x = if self.rng.gen_bool(0.6) {
            self.lane_value(t).unwrap_or(x)
        } else {
            x
        };
        let operand = match self.rng.gen_range(0..4) {
            0 | 1 if mode == "xor" => E::leaf(ScalarTy::I32, self.rng.gen_range(0..w).to_string()),
            0 | 1 => {
                // Constants inside the piece take the native shuffle; some
                // lie outside it (and below zero).
                let c: i32 = if self.rng.gen_bool(0.7) {
                    self.rng.gen_range(0..w as i32)
                } else {
                    self.rng.gen_range(-(w as i32) - 2..=(w as i32) + 2)
                };
                E::leaf(
                    ScalarTy::I32,
                    if c < 0 {
                        format!("({c})")
                    } else {
                        c.to_string()
                    },
                )
            }
            2 if mode != "xor" => {
                let i = self.expr(ScalarTy::I32, 1);
                E::node(ScalarTy::I32, &["((", ") & 63) - 8"], vec![i.e])
            }
            _ => E::leaf(
                ScalarTy::I32,
                format!(
                    "(ctx.lane % {}) - {}",
                    self.rng.gen_range(1..9),
                    self.rng.gen_range(0..4)
                ),
            ),
        };
        Some(X {
            lvl: Lvl::Varying,
            exact: x.exact,
            e: E::node(
                t,
                &["shfl<", &format!("{wcfg}>("), ")"],
                vec![
                    E {
                        ty: ScalarTy::I32,
                        parts: vec![format!("{mode} "), String::new()],
                        kids: vec![operand],
                    },
                    x.e,
                ],
            ),
        })
    }
}

/// Draws the names of `Features::awkward_names`: each plain name (`A0`,
/// `t3`) is kept, or dressed so that it stays unique (the plain names are)
/// while looking like what the compiler writes, or replaced, once each, by
/// a whole word that is a valid Phobos name but a PTX opcode, a Rust
/// keyword or a name bindgen reserves.
struct Namer {
    rng: ChaCha8Rng,
    on: bool,
    used: std::collections::HashSet<String>,
}

/// Whole names, each given at most once: valid for a parameter or local.
const WHOLE: &[&str] = &[
    "_",
    "self",
    "Self",
    "super",
    "crate",
    "type",
    "match",
    "entry",
    "reg",
    "param",
    "mov",
    "add",
    "ret",
    "smem",
    "WARP_SZ",
    "device",
    "grid",
    "KERNEL",
    "phobos_rt",
    "Ok",
    "texref",
    "global",
];

/// Kernel names besides random identifiers: all accepted (docs/language.md,
/// Names; `_`, `WARP_SZ`, `self`, `Self`, `super` and `crate` are refused).
const KERNELS: &[&str] = &[
    "fz", "__", "_x", "_0", "add", "mov", "reg", "param", "entry", "texref", "sreg", "p", "d",
    "p_smem", "local0_a", "k__U1", "WARP_SZ2", "type", "match", "Ok", "Self_", "smem", "KERNEL",
    "device", "main",
];

/// Words a random kernel name must not be: the reserved and contextual
/// words, and the names refused for kernels.
const NOT_KERNELS: &[&str] = &[
    "fn", "kernel", "let", "var", "if", "else", "for", "while", "break", "continue", "return",
    "in", "true", "false", "inf", "nan", "ctx", "_", "WARP_SZ", "self", "Self", "super", "crate",
    "mix", "big", "flip",
];

impl Namer {
    fn new(seed: u64, on: bool) -> Namer {
        Namer {
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6e61_6d65_735f_3335),
            on,
            used: Default::default(),
        }
    }

    fn name(&mut self, plain: String) -> String {
        if !self.on {
            return plain;
        }
        match self.rng.gen_range(0..16) {
            0 => {
                let w = WHOLE[self.rng.gen_range(0..WHOLE.len())];
                if self.used.insert(w.to_string()) {
                    return w.to_string();
                }
                plain.clone()
            }
            1 => format!("_{plain}"),
            2 => format!("{plain}_smem"),
            3 => format!("p_{plain}"),
            4 => format!("d_{plain}"),
            5 => format!("local0_{plain}"),
            6 => format!("{plain}__U1"),
            7 => format!("WARP_SZ_{plain}"),
            8 => format!("{plain}_{}", "x".repeat(self.rng.gen_range(1..=120))),
            9 => plain.to_uppercase(),
            _ => plain,
        }
    }

    fn kernel(&mut self) -> String {
        if !self.on {
            return "fz".to_string();
        }
        if self.rng.gen_bool(0.5) {
            return KERNELS[self.rng.gen_range(0..KERNELS.len())].to_string();
        }
        let len = *[1usize, 2, 3, 8, 40, 199, 200]
            .choose(&mut self.rng)
            .expect("nonempty");
        const FIRST: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";
        const REST: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789";
        let mut s = String::new();
        s.push(FIRST[self.rng.gen_range(0..FIRST.len())] as char);
        while s.len() < len {
            s.push(REST[self.rng.gen_range(0..REST.len())] as char);
        }
        if NOT_KERNELS.contains(&s.as_str()) {
            return "fz".to_string();
        }
        s
    }
}
