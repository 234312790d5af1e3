//! The reference evaluator: runs one checked `hir::Kernel` directly,
//! without the backend. It is the executable form of docs/language.md:
//!
//! - CTAs run one after another; inside a CTA all threads step together,
//!   one statement at a time, each statement evaluated for every active
//!   thread before the next begins. That is the language's promise that
//!   barriers are placed by the compiler: a read sees every write of an
//!   earlier statement by any thread of the CTA.
//! - `if` runs its branches with the threads whose condition holds (then the
//!   others); `for` evaluates its bounds once and iterates while any thread
//!   is still inside its range.
//! - Tiles are arrays per CTA, zero-filled outside the source tensor's
//!   bounds when copied and masked at the destination's bounds when stored.
//! - Collectives fold over the lanes of each `width`-lane piece (or the
//!   CTA) in index order; shuffles read the source lane's value or, when the
//!   source lies outside the piece, the lane's own.
//!
//! A program whose result the language leaves undefined (division by zero,
//! an out-of-range shift or index, two threads writing one element in one
//! step, two CTAs writing one element) is refused with [`crate::value::Undefined`].

use crate::value::{self, undefined, R, S};
use phobos_core::ast::{BinOp, CtxField, ScalarTy};
use phobos_core::hir::{
    Builtin, CollOp, Expr, ExprKind, Group, Kernel, LocalKind, Memory, ShflMode, Stmt, StmtKind, Ty,
};
use std::collections::BTreeMap;

/// A tensor as raw little-endian element bits, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub elem: ScalarTy,
    pub shape: Vec<usize>,
    pub bits: Vec<u64>,
}

impl Tensor {
    pub fn bytes(&self) -> Vec<u8> {
        let w = (value::bits(self.elem) / 8).max(1) as usize;
        self.bits
            .iter()
            .flat_map(|b| b.to_le_bytes()[..w].to_vec())
            .collect()
    }

    pub fn from_bytes(elem: ScalarTy, shape: Vec<usize>, bytes: &[u8]) -> Tensor {
        let w = (value::bits(elem) / 8).max(1) as usize;
        let bits = bytes
            .chunks(w)
            .map(|c| {
                let mut b = [0u8; 8];
                b[..w].copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect();
        Tensor { elem, shape, bits }
    }
}

/// A kernel's arguments: tensors and scalars by parameter, dims by `DimId`.
#[derive(Clone, Debug)]
pub struct Args {
    pub tensors: BTreeMap<u32, Tensor>,
    pub scalars: BTreeMap<u32, S>,
    pub dims: Vec<i64>,
    pub grid: [u32; 3],
    /// For each float tensor element written (by parameter and flat
    /// index), the terms of the float sums its value went through:
    /// `Σ (1 + |term|)`, 0 when none. See [`value::close_within`]: the
    /// error a sum may carry scales with its terms, not with its result.
    pub slack: BTreeMap<(u32, usize), f64>,
}

/// One value per thread: a scalar or a run.
#[derive(Clone, Debug, PartialEq)]
enum V {
    S(S),
    Run(Vec<S>),
}

impl V {
    fn s(&self) -> S {
        match self {
            V::S(s) => *s,
            V::Run(r) => r[0],
        }
    }
}

const IDLE: V = V::S(S::I(0));

/// Run `k` over `args.grid`, updating the written tensors in `args`.
pub fn run(k: &Kernel, args: &mut Args) -> R<()> {
    let mut owner: BTreeMap<(u32, usize), u32> = BTreeMap::new();
    let [gx, gy, gz] = args.grid;
    let mut cta_id = 0;
    for z in 0..gz {
        for y in 0..gy {
            for x in 0..gx {
                let mut cta = Cta {
                    k,
                    n: k.threads as usize,
                    block: [x, y, z].map(i128::from),
                    cta_id,
                    locals: vec![vec![S::I(0); k.threads as usize]; k.locals.len()],
                    slack: vec![0.0; k.threads as usize],
                    local_slack: vec![vec![0.0; k.threads as usize]; k.locals.len()],
                    run_locals: BTreeMap::new(),
                    tiles: BTreeMap::new(),
                    scratch_set: BTreeMap::new(),
                    args,
                    owner: &mut owner,
                    steps: 0,
                    gone: vec![false; k.threads as usize],
                    exits: Vec::new(),
                };
                let mask = vec![true; k.threads as usize];
                cta.block(&k.body.stmts, &mask)?;
                cta_id += 1;
            }
        }
    }
    Ok(())
}

struct Cta<'a> {
    k: &'a Kernel,
    n: usize,
    block: [i128; 3],
    cta_id: u32,
    locals: Vec<Vec<S>>,
    /// The sums the statement being evaluated went through, per thread
    /// (see [`Args::slack`]).
    slack: Vec<f64>,
    /// The same for the value each local holds, per thread.
    local_slack: Vec<Vec<f64>>,
    /// Run-valued `fn` arguments bound by a `Let`: one run per thread.
    run_locals: BTreeMap<u32, Vec<V>>,
    tiles: BTreeMap<u32, Vec<u64>>,
    /// For each scratch tile (`shared<T>[n]`, which nothing is copied
    /// into): which elements some store has set. Reading another is
    /// undefined here and the simulator's initcheck error.
    scratch_set: BTreeMap<u32, Vec<bool>>,
    args: &'a mut Args,
    /// Which CTA wrote each tensor element, to refuse cross-CTA races.
    owner: &'a mut BTreeMap<(u32, usize), u32>,
    steps: u64,
    /// Threads that ran `return`.
    gone: Vec<bool>,
    /// For each loop around the statement: the threads that left it with
    /// `break`, and those that ran `continue` in the current trip.
    exits: Vec<(Vec<bool>, Vec<bool>)>,
}

fn scalar_ty(t: Ty) -> ScalarTy {
    match t {
        Ty::Scalar(s) | Ty::Run { elem: s, .. } => s,
        Ty::Unit => ScalarTy::I32,
    }
}

impl Cta<'_> {
    fn block(&mut self, stmts: &[Stmt], mask: &[bool]) -> R<()> {
        for s in stmts {
            let live = self.live(mask);
            self.stmt(s, &live)?;
        }
        Ok(())
    }

    /// The threads of `mask` that have not left by `return`, `break` or
    /// `continue`.
    fn live(&self, mask: &[bool]) -> Vec<bool> {
        (0..self.n)
            .map(|t| {
                mask[t] && !self.gone[t] && self.exits.last().is_none_or(|(b, c)| !b[t] && !c[t])
            })
            .collect()
    }

    /// Start the next trip of the innermost loop: `continue` is over.
    fn next_trip(&mut self) {
        if let Some((_, c)) = self.exits.last_mut() {
            c.iter_mut().for_each(|x| *x = false);
        }
    }

    fn active(mask: &[bool]) -> impl Iterator<Item = usize> + '_ {
        mask.iter().enumerate().filter(|(_, a)| **a).map(|(t, _)| t)
    }

    fn stmt(&mut self, s: &Stmt, mask: &[bool]) -> R<()> {
        self.steps += 1;
        if self.steps > 200_000 {
            return undefined("the program runs too long");
        }
        if !mask.iter().any(|a| *a) {
            return Ok(());
        }
        match &s.kind {
            StmtKind::Let { local, init }
                if matches!(
                    self.k.locals[local.0 as usize].kind,
                    LocalKind::Array { .. }
                ) =>
            {
                // A register array: every element of each thread's copy.
                let v = self.eval(init, mask)?;
                let (elem, shape) = self.tile_shape(local.0);
                let elems: usize = shape.iter().product();
                let n = self.n;
                let arr = self
                    .tiles
                    .entry(local.0)
                    .or_insert_with(|| vec![0; n * elems]);
                for t in Self::active(mask) {
                    for e in 0..elems {
                        arr[t * elems + e] = value::to_bits(elem, v[t].s());
                    }
                }
            }
            StmtKind::Store {
                dst: Memory::Array(l),
                index,
                value,
            } => {
                let idx = self.eval_all(index, mask)?;
                let v = self.eval(value, mask)?;
                for t in Self::active(mask) {
                    let at: Vec<i128> = idx.iter().map(|i| value::as_i(i[t].s())).collect();
                    let slot = self.array_slot(l.0, t, &at)?;
                    let (elem, _) = self.tile_shape(l.0);
                    if let Some(arr) = self.tiles.get_mut(&l.0) {
                        arr[slot] = value::to_bits(elem, v[t].s());
                    }
                }
            }
            StmtKind::Let { local, init } | StmtKind::Assign { local, value: init } => {
                self.slack.iter_mut().for_each(|x| *x = 0.0);
                let v = self.eval(init, mask)?;
                for t in Self::active(mask) {
                    self.locals[local.0 as usize][t] = v[t].s();
                    self.local_slack[local.0 as usize][t] = self.slack[t];
                }
            }
            StmtKind::Store { dst, index, value } => {
                self.slack.iter_mut().for_each(|x| *x = 0.0);
                let idx = self.eval_all(index, mask)?;
                let v = self.eval(value, mask)?;
                let mut writes = Vec::new();
                let mut by = Vec::new();
                for t in Self::active(mask) {
                    let at: Vec<i128> = idx.iter().map(|i| value::as_i(i[t].s())).collect();
                    writes.push((self.flat(*dst, &at)?, v[t].s()));
                    by.push(t);
                }
                self.note_slack(*dst, &writes, &by);
                self.write(*dst, writes)?;
            }
            StmtKind::RunStore {
                dst,
                index,
                axis,
                len,
                value,
                only,
            } => {
                self.slack.iter_mut().for_each(|x| *x = 0.0);
                let idx = self.eval_all(index, mask)?;
                let v = self.eval(value, mask)?;
                let only = match only {
                    Some(e) => Some(self.eval(e, mask)?),
                    None => None,
                };
                let mut writes = Vec::new();
                let mut by = Vec::new();
                for t in Self::active(mask) {
                    let mut at: Vec<i128> = idx.iter().map(|i| value::as_i(i[t].s())).collect();
                    let start = at[*axis];
                    let elems: Vec<u32> = match &only {
                        Some(o) => {
                            let i = value::as_i(o[t].s());
                            if !(0..i128::from(*len)).contains(&i) {
                                return undefined(format!(
                                    "store index {i} outside a run of {len}"
                                ));
                            }
                            vec![i as u32]
                        }
                        None => (0..*len).collect(),
                    };
                    for e in elems {
                        at[*axis] = start + i128::from(e);
                        let x = match &v[t] {
                            V::S(s) => *s,
                            V::Run(r) => r[e as usize],
                        };
                        writes.push((self.flat(*dst, &at)?, x));
                        by.push(t);
                    }
                }
                self.note_slack(*dst, &writes, &by);
                self.write(*dst, writes)?;
            }
            StmtKind::TileCopy { dst, src, starts } => {
                let starts = self.uniform_all(starts, mask)?;
                let (elem, shape) = self.tile_shape(dst.0);
                let t = &self.args.tensors[&src.0];
                let dims: Vec<i128> = t.shape.iter().map(|d| *d as i128).collect();
                let mut data = vec![0u64; shape.iter().product()];
                for (i, slot) in data.iter_mut().enumerate() {
                    let at = unflatten(i, &shape, &starts);
                    if at.iter().zip(&dims).all(|(a, d)| (0..*d).contains(a)) {
                        *slot = t.bits[flatten(&at, &dims)];
                    } else {
                        *slot = value::to_bits(elem, zero(elem));
                    }
                }
                self.tiles.insert(dst.0, data);
            }
            StmtKind::TileFill {
                dst,
                at,
                src,
                starts,
                shape,
            } => {
                let starts = self.uniform_all(starts, mask)?;
                let (elem, tile_shape) = self.tile_shape(dst.0);
                let t = &self.args.tensors[&src.0];
                let dims: Vec<i128> = t.shape.iter().map(|d| *d as i128).collect();
                let tdims: Vec<i128> = tile_shape.iter().map(|d| *d as i128).collect();
                let at: Vec<i128> = at.iter().map(|a| i128::from(*a)).collect();
                let box_shape: Vec<usize> = shape.iter().map(|d| *d as usize).collect();
                let mut data = match self.tiles.get(&dst.0) {
                    Some(d) => d.clone(),
                    None => vec![value::to_bits(elem, zero(elem)); tile_shape.iter().product()],
                };
                for i in 0..box_shape.iter().product::<usize>() {
                    let g = unflatten(i, &box_shape, &starts);
                    let inside = unflatten(i, &box_shape, &at);
                    let bits = if g.iter().zip(&dims).all(|(a, d)| (0..*d).contains(a)) {
                        t.bits[flatten(&g, &dims)]
                    } else {
                        value::to_bits(elem, zero(elem))
                    };
                    data[flatten(&inside, &tdims)] = bits;
                }
                self.tiles.insert(dst.0, data);
            }
            StmtKind::TileStore { dst, starts, src } => {
                let starts = self.uniform_all(starts, mask)?;
                let (_, shape) = self.tile_shape(src.0);
                let data = self.tiles.get(&src.0).cloned().unwrap_or_default();
                let dims: Vec<i128> = self.args.tensors[&dst.0]
                    .shape
                    .iter()
                    .map(|d| *d as i128)
                    .collect();
                for (i, b) in data.iter().enumerate() {
                    let at = unflatten(i, &shape, &starts);
                    if at.iter().zip(&dims).all(|(a, d)| (0..*d).contains(a)) {
                        let f = flatten(&at, &dims);
                        self.claim(dst.0, f)?;
                        self.args.tensors.get_mut(&dst.0).expect("tensor").bits[f] = *b;
                    }
                }
            }
            StmtKind::If { cond, then, els } => {
                let c = self.eval(cond, mask)?;
                let (mut yes, mut no) = (vec![false; self.n], vec![false; self.n]);
                for t in Self::active(mask) {
                    let b = value::as_b(c[t].s());
                    yes[t] = b;
                    no[t] = !b;
                }
                self.block(&then.stmts, &yes)?;
                self.block(&els.stmts, &no)?;
            }
            // Unrolling (`l.unroll`) and staging (`l.stages`) change no result.
            StmtKind::For(l) => {
                let (var, body) = (l.var, &l.body);
                let (s0, e0, st) = (
                    self.eval(&l.start, mask)?,
                    self.eval(&l.end, mask)?,
                    self.eval(&l.step, mask)?,
                );
                let mut i: Vec<i128> = s0.iter().map(|v| value::as_i(v.s())).collect();
                self.exits.push((vec![false; self.n], vec![false; self.n]));
                loop {
                    let mut inside = vec![false; self.n];
                    let mask = self.live(mask);
                    for t in Self::active(&mask) {
                        let (e, s) = (value::as_i(e0[t].s()), value::as_i(st[t].s()));
                        if s == 0 {
                            return undefined("a loop with step 0");
                        }
                        inside[t] = if s > 0 { i[t] < e } else { i[t] > e };
                        if inside[t] {
                            self.locals[var.0 as usize][t] = S::I(i[t]);
                        }
                    }
                    if !inside.iter().any(|a| *a) {
                        break;
                    }
                    self.block(&body.stmts, &inside)?;
                    self.next_trip();
                    for t in Self::active(&inside) {
                        i[t] = value::wrap(ScalarTy::I32, i[t] + value::as_i(st[t].s()));
                    }
                    self.steps += 1;
                    if self.steps > 200_000 {
                        return undefined("the program runs too long");
                    }
                }
                self.exits.pop();
            }
            StmtKind::While { cond, body } => {
                self.exits.push((vec![false; self.n], vec![false; self.n]));
                loop {
                    let mask = self.live(mask);
                    let c = self.eval(cond, &mask)?;
                    let mut inside = vec![false; self.n];
                    for t in Self::active(&mask) {
                        inside[t] = value::as_b(c[t].s());
                    }
                    if !inside.iter().any(|a| *a) {
                        break;
                    }
                    self.block(&body.stmts, &inside)?;
                    self.next_trip();
                    self.steps += 1;
                    if self.steps > 200_000 {
                        return undefined("the program runs too long");
                    }
                }
                self.exits.pop();
            }
            StmtKind::Break | StmtKind::Continue => {
                let brk = matches!(s.kind, StmtKind::Break);
                if let Some((b, c)) = self.exits.last_mut() {
                    let set = if brk { b } else { c };
                    for t in Self::active(mask) {
                        set[t] = true;
                    }
                }
            }
            StmtKind::Return => {
                for t in Self::active(mask) {
                    self.gone[t] = true;
                }
            }
            // The generator never writes atomics or fences (their results
            // depend on the order threads run in, which this evaluator
            // does not model); a saved case holding one is refused, not
            // guessed at.
            StmtKind::Atomic { .. } | StmtKind::Fence => {
                return undefined("atomics and fences are outside the reference evaluator");
            }
            // Nor tensor-core products: the conformance kernels check them
            // against f64 references (tests/src/corpus_cases.rs).
            StmtKind::AccZero { .. }
            | StmtKind::Dot { .. }
            | StmtKind::AccMap { .. }
            | StmtKind::AccStore { .. }
            | StmtKind::AccToTile { .. } => {
                return undefined(
                    "accumulator tiles and `dot` are outside the reference evaluator",
                );
            }
        }
        Ok(())
    }

    fn tile_shape(&self, l: u32) -> (ScalarTy, Vec<usize>) {
        match &self.k.locals[l as usize].kind {
            LocalKind::Tile { elem, shape } => (*elem, shape.iter().map(|d| *d as usize).collect()),
            LocalKind::Array { elem, shape } => {
                (*elem, shape.iter().map(|d| *d as usize).collect())
            }
            LocalKind::Scalar(t) => (*t, vec![1]),
            LocalKind::Acc { elem, rows, cols } => (*elem, vec![*rows as usize, *cols as usize]),
        }
    }

    /// Where thread `t`'s element `at` of register array `l` is kept.
    fn array_slot(&self, l: u32, t: usize, at: &[i128]) -> R<usize> {
        let (_, shape) = self.tile_shape(l);
        let dims: Vec<i128> = shape.iter().map(|d| *d as i128).collect();
        if !at.iter().zip(&dims).all(|(a, d)| (0..*d).contains(a)) {
            return undefined(format!("array index {at:?} outside {shape:?}"));
        }
        let elems: usize = shape.iter().product();
        Ok(t * elems + flatten(at, &dims))
    }

    fn claim(&mut self, p: u32, f: usize) -> R<()> {
        let prev = self.owner.insert((p, f), self.cta_id);
        if prev.is_some_and(|c| c != self.cta_id) {
            return undefined("two CTAs write one element");
        }
        Ok(())
    }

    /// Record the slack of the statement's float writes to a tensor, by
    /// the thread (`by`) that made each.
    fn note_slack(&mut self, dst: Memory, writes: &[((u32, usize), S)], by: &[usize]) {
        let Memory::Tensor(p) = dst else {
            return;
        };
        for (((_, f), _), t) in writes.iter().zip(by) {
            if self.slack[*t] > 0.0 {
                self.args.slack.insert((p.0, *f), self.slack[*t]);
            } else {
                self.args.slack.remove(&(p.0, *f));
            }
        }
    }

    /// Writes of one statement; two threads writing one element is a race.
    fn write(&mut self, dst: Memory, writes: Vec<((u32, usize), S)>) -> R<()> {
        let mut seen = BTreeMap::new();
        for ((_, f), _) in &writes {
            if seen.insert(*f, ()).is_some() {
                return undefined("two threads write one element in one step");
            }
        }
        for ((_, f), v) in writes {
            match dst {
                Memory::Tensor(p) => {
                    self.claim(p.0, f)?;
                    let t = self.args.tensors.get_mut(&p.0).expect("tensor");
                    t.bits[f] = value::to_bits(t.elem, v);
                }
                Memory::Tile(l) | Memory::Array(l) => {
                    let (elem, shape) = self.tile_shape(l.0);
                    let n: usize = shape.iter().product();
                    if let std::collections::btree_map::Entry::Vacant(e) = self.tiles.entry(l.0) {
                        // A scratch tile's first store.
                        e.insert(vec![0; n]);
                        self.scratch_set.insert(l.0, vec![false; n]);
                    }
                    if let Some(set) = self.scratch_set.get_mut(&l.0) {
                        set[f] = true;
                    }
                    self.tiles.get_mut(&l.0).expect("tile")[f] = value::to_bits(elem, v);
                }
            }
        }
        Ok(())
    }

    fn mem_shape(&self, m: Memory) -> (ScalarTy, Vec<usize>) {
        match m {
            Memory::Tensor(p) => {
                let t = &self.args.tensors[&p.0];
                (t.elem, t.shape.clone())
            }
            Memory::Tile(l) | Memory::Array(l) => self.tile_shape(l.0),
        }
    }

    /// The flat element index of `at`, refusing an index out of bounds.
    fn flat(&self, m: Memory, at: &[i128]) -> R<(u32, usize)> {
        let (_, shape) = self.mem_shape(m);
        let dims: Vec<i128> = shape.iter().map(|d| *d as i128).collect();
        if !at.iter().zip(&dims).all(|(a, d)| (0..*d).contains(a)) {
            // Register arrays are bounded in the simulator by guard gaps
            // only: an index far out may land in another array unreported.
            let why = match m {
                Memory::Array(_) => "array index ",
                _ => value::OUT_OF_BOUNDS,
            };
            return undefined(format!("{why}{at:?} outside {shape:?}"));
        }
        let id = match m {
            Memory::Tensor(p) => p.0,
            Memory::Tile(l) | Memory::Array(l) => l.0,
        };
        Ok((id, flatten(at, &dims)))
    }

    fn load(&self, m: Memory, at: &[i128]) -> R<S> {
        let (elem, _) = self.mem_shape(m);
        let (_, f) = self.flat(m, at)?;
        let b = match m {
            Memory::Tensor(p) => self.args.tensors[&p.0].bits[f],
            Memory::Tile(l) | Memory::Array(l) => match self.tiles.get(&l.0) {
                Some(_) if self.scratch_set.get(&l.0).is_some_and(|set| !set[f]) => {
                    return undefined("a scratch element read before any write")
                }
                Some(t) => t[f],
                None => return undefined("a tile read before it is copied"),
            },
        };
        Ok(value::from_bits(elem, b))
    }

    fn eval_all(&mut self, es: &[Expr], mask: &[bool]) -> R<Vec<Vec<V>>> {
        es.iter().map(|e| self.eval(e, mask)).collect()
    }

    /// Values the language requires to be the same in the whole CTA.
    fn uniform_all(&mut self, es: &[Expr], mask: &[bool]) -> R<Vec<i128>> {
        let vals = self.eval_all(es, mask)?;
        let first = Self::active(mask).next().unwrap_or(0);
        Ok(vals.iter().map(|v| value::as_i(v[first].s())).collect())
    }

    fn eval(&mut self, e: &Expr, mask: &[bool]) -> R<Vec<V>> {
        let ty = scalar_ty(e.ty);
        let mut out = vec![IDLE; self.n];
        match &e.kind {
            ExprKind::Const(c) => {
                let s = match c {
                    phobos_core::hir::ConstVal::Int(i) => {
                        if value::is_float(ty) {
                            S::F(value::round(ty, *i as f64))
                        } else {
                            S::I(value::wrap(ty, *i))
                        }
                    }
                    phobos_core::hir::ConstVal::Float(f) => S::F(value::round(ty, *f)),
                    phobos_core::hir::ConstVal::Bool(b) => S::B(*b),
                };
                fill(&mut out, mask, |_| V::S(s));
            }
            ExprKind::Local(l) if self.run_locals.contains_key(&l.0) => {
                let vals = &self.run_locals[&l.0];
                fill(&mut out, mask, |t| vals[t].clone());
            }
            ExprKind::Local(l) => {
                let vals = &self.locals[l.0 as usize];
                fill(&mut out, mask, |t| V::S(vals[t]));
                for t in Self::active(mask) {
                    self.slack[t] += self.local_slack[l.0 as usize][t];
                }
            }
            // A fn argument bound once: evaluate it, bind it, evaluate the
            // body that reads it.
            ExprKind::Let { local, value, body } => {
                let v = self.eval(value, mask)?;
                if matches!(value.ty, Ty::Run { .. }) {
                    let runs = self
                        .run_locals
                        .entry(local.0)
                        .or_insert_with(|| vec![IDLE; v.len()]);
                    for t in Self::active(mask) {
                        runs[t] = v[t].clone();
                    }
                    return self.eval(body, mask);
                }
                for t in Self::active(mask) {
                    self.locals[local.0 as usize][t] = v[t].s();
                }
                return self.eval(body, mask);
            }
            ExprKind::Param(p) => {
                let s = self.args.scalars[&p.0];
                fill(&mut out, mask, |_| V::S(s));
            }
            ExprKind::Dim(d) => {
                let s = S::I(i128::from(self.args.dims[d.0 as usize]));
                fill(&mut out, mask, |_| V::S(s));
            }
            ExprKind::Ctx(f) => {
                let g = self.args.grid.map(i128::from);
                let (b, n) = (self.block, self.n as i128);
                fill(&mut out, mask, |t| {
                    let t = t as i128;
                    V::S(S::I(match f {
                        CtxField::Thread => t,
                        CtxField::Threads => n,
                        CtxField::Warp => t / 32,
                        CtxField::Warps => n / 32,
                        CtxField::Lane => t % 32,
                        CtxField::Lanes => 32,
                        CtxField::BlockX => b[0],
                        CtxField::BlockY => b[1],
                        CtxField::BlockZ => b[2],
                        CtxField::GridX => g[0],
                        CtxField::GridY => g[1],
                        CtxField::GridZ => g[2],
                    }))
                });
            }
            ExprKind::Unary(op, x) => {
                let xt = scalar_ty(x.ty);
                let v = self.eval(x, mask)?;
                fill(&mut out, mask, |t| {
                    map_v(&v[t], |s| value::unary(*op, xt, s))
                });
            }
            ExprKind::Binary(op, a, b) => {
                let at = scalar_ty(a.ty);
                let va = self.eval(a, mask)?;
                // `&&` and `||` short-circuit: the right side is evaluated
                // only where it decides the result.
                if matches!(op, BinOp::And | BinOp::Or) && at == ScalarTy::Bool {
                    let want = *op == BinOp::And;
                    let sub: Vec<bool> = (0..self.n)
                        .map(|t| mask[t] && value::as_b(va[t].s()) == want)
                        .collect();
                    let vb = self.eval(b, &sub)?;
                    for t in Self::active(mask) {
                        out[t] = if sub[t] { vb[t].clone() } else { va[t].clone() };
                    }
                } else {
                    let vb = self.eval(b, mask)?;
                    for t in Self::active(mask) {
                        out[t] = zip_v(&va[t], &vb[t], |x, y| value::binary(*op, at, x, y))?;
                    }
                }
            }
            ExprKind::Convert(x) => {
                let from = scalar_ty(x.ty);
                let v = self.eval(x, mask)?;
                fill(&mut out, mask, |t| {
                    map_v(&v[t], |s| value::convert(from, ty, s))
                });
            }
            ExprKind::Builtin(b, args) => {
                let tys: Vec<ScalarTy> = args.iter().map(|a| scalar_ty(a.ty)).collect();
                let vals = self.eval_all(args, mask)?;
                for t in Self::active(mask) {
                    // Elementwise over runs, a scalar argument broadcast.
                    let len = vals.iter().find_map(|v| match &v[t] {
                        V::Run(r) => Some(r.len()),
                        V::S(_) => None,
                    });
                    let at = |v: &V, i: usize| match v {
                        V::Run(r) => r[i],
                        V::S(s) => *s,
                    };
                    out[t] = match len {
                        None => {
                            let xs: Vec<S> = vals.iter().map(|v| v[t].s()).collect();
                            V::S(value::builtin(*b, &tys, ty, &xs)?)
                        }
                        Some(n) => V::Run(
                            (0..n)
                                .map(|i| {
                                    let xs: Vec<S> = vals.iter().map(|v| at(&v[t], i)).collect();
                                    value::builtin(*b, &tys, ty, &xs)
                                })
                                .collect::<R<_>>()?,
                        ),
                    };
                }
            }
            ExprKind::Load { src, index } => {
                let idx = self.eval_all(index, mask)?;
                for t in Self::active(mask) {
                    let at: Vec<i128> = idx.iter().map(|i| value::as_i(i[t].s())).collect();
                    if let Memory::Array(l) = src {
                        let slot = self.array_slot(l.0, t, &at)?;
                        let (elem, _) = self.tile_shape(l.0);
                        let bits = self.tiles.get(&l.0).map_or(0, |a| a[slot]);
                        out[t] = V::S(value::from_bits(elem, bits));
                        continue;
                    }
                    out[t] = V::S(self.load(*src, &at)?);
                }
            }
            ExprKind::RunLoad {
                src,
                index,
                axis,
                len,
            } => {
                let idx = self.eval_all(index, mask)?;
                for t in Self::active(mask) {
                    let mut at: Vec<i128> = idx.iter().map(|i| value::as_i(i[t].s())).collect();
                    let start = at[*axis];
                    let mut run = Vec::new();
                    for i in 0..*len {
                        at[*axis] = start + i128::from(i);
                        run.push(self.load(*src, &at)?);
                    }
                    out[t] = V::Run(run);
                }
            }
            ExprKind::RunSum(x) => {
                let xt = scalar_ty(x.ty);
                let v = self.eval(x, mask)?;
                for t in Self::active(mask) {
                    if let (V::Run(r), true) = (&v[t], value::is_float(xt)) {
                        self.slack[t] += terms(r.iter());
                    }
                    out[t] = V::S(match &v[t] {
                        V::S(s) => *s,
                        V::Run(r) => {
                            let mut acc = r[0];
                            for s in &r[1..] {
                                acc = value::binary(BinOp::Add, xt, acc, *s)?;
                            }
                            acc
                        }
                    });
                }
            }
            ExprKind::Elem { run, i } => {
                let v = self.eval(run, mask)?;
                fill(&mut out, mask, |t| match &v[t] {
                    V::Run(r) => V::S(r[*i as usize]),
                    s => s.clone(),
                });
            }
            ExprKind::Word { run, i } => {
                let xt = scalar_ty(run.ty);
                let v = self.eval(run, mask)?;
                fill(&mut out, mask, |t| {
                    let r = match &v[t] {
                        V::Run(r) => r.clone(),
                        V::S(s) => vec![*s; 4 * (*i as usize + 1)],
                    };
                    let mut w = 0u64;
                    for b in 0..4 {
                        w |= (value::to_bits(xt, r[4 * *i as usize + b]) & 0xFF) << (8 * b);
                    }
                    V::S(value::from_bits(ty, w))
                });
            }
            ExprKind::Collective {
                op,
                group,
                arg,
                combine,
            } => {
                let at = scalar_ty(arg.ty);
                let v = self.eval(arg, mask)?;
                let pieces: Vec<Vec<usize>> = match group {
                    Group::Thread => vec![(0..self.n).collect()],
                    Group::Lane { width } => (0..self.n)
                        .step_by(*width as usize)
                        .map(|b| (b..b + *width as usize).collect())
                        .collect(),
                };
                for piece in pieces {
                    if !piece.iter().any(|t| mask[*t]) {
                        continue;
                    }
                    if !piece.iter().all(|t| mask[*t]) {
                        return undefined("a collective reached by part of its group");
                    }
                    let r = self.fold(*op, at, combine.as_ref(), &piece, &v, mask)?;
                    // A float sum's order is the compiler's (butterflies).
                    let slack = if *op == CollOp::Sum && value::is_float(at) {
                        terms(piece.iter().map(|t| v[*t].s()).collect::<Vec<_>>().iter())
                    } else {
                        0.0
                    };
                    for t in &piece {
                        out[*t] = V::S(r);
                        self.slack[*t] += slack;
                    }
                }
            }
            ExprKind::Shuffle {
                mode,
                width,
                lane,
                value: x,
            } => {
                let s = self.eval(lane, mask)?;
                let v = self.eval(x, mask)?;
                let w = i128::from(*width);
                for t in Self::active(mask) {
                    let lip = (t % 32) as i128 % w;
                    let base = t as i128 - lip;
                    let s = value::as_i(s[t].s());
                    let pos = match mode {
                        ShflMode::From => s,
                        ShflMode::Xor => lip ^ s,
                        ShflMode::Down => lip + s,
                        ShflMode::Up => lip - s,
                    };
                    out[t] = if (0..w).contains(&pos) {
                        let src = (base + pos) as usize;
                        if !mask[src] {
                            return undefined("a shuffle reads an inactive lane");
                        }
                        v[src].clone()
                    } else {
                        v[t].clone()
                    };
                }
            }
        }
        Ok(out)
    }

    /// The fold of one piece in index order.
    fn fold(
        &mut self,
        op: CollOp,
        t: ScalarTy,
        combine: Option<&phobos_core::hir::Combine>,
        piece: &[usize],
        v: &[V],
        mask: &[bool],
    ) -> R<S> {
        let vals: Vec<S> = piece.iter().map(|i| v[*i].s()).collect();
        let mut acc = vals[0];
        let mut best = 0usize;
        for (i, x) in vals.iter().enumerate().skip(1) {
            acc = match op {
                CollOp::Sum => value::binary(BinOp::Add, t, acc, *x)?,
                CollOp::Max => value::builtin(Builtin::Max, &[t, t], t, &[acc, *x])?,
                CollOp::Min => value::builtin(Builtin::Min, &[t, t], t, &[acc, *x])?,
                CollOp::Any => S::B(value::as_b(acc) || value::as_b(*x)),
                CollOp::All => S::B(value::as_b(acc) && value::as_b(*x)),
                CollOp::Argmax => {
                    if value::binary(BinOp::Gt, t, *x, acc)? == S::B(true) {
                        best = i;
                        *x
                    } else {
                        acc
                    }
                }
                CollOp::Reduce => {
                    let Some(c) = combine else {
                        return undefined("reduce without a combine function");
                    };
                    // Evaluate the combine body for one thread of the piece
                    // with `a` and `b` bound.
                    let me = piece[0];
                    let mut one = vec![false; self.n];
                    one[me] = mask[me];
                    self.locals[c.a.0 as usize][me] = acc;
                    self.locals[c.b.0 as usize][me] = *x;
                    self.eval(&c.body, &one)?[me].s()
                }
            };
        }
        Ok(if op == CollOp::Argmax {
            S::I(best as i128)
        } else {
            acc
        })
    }
}

/// The slack of a float sum of `xs` (see [`Args::slack`]): `Σ (1 + |x|)`,
/// counting infinities and NaNs (whose sums match only bitwise) as 0.
fn terms<'a>(xs: impl Iterator<Item = &'a S>) -> f64 {
    xs.map(|x| {
        let f = value::as_f(*x).abs();
        if f.is_finite() {
            1.0 + f
        } else {
            0.0
        }
    })
    .sum()
}

fn fill(out: &mut [V], mask: &[bool], f: impl Fn(usize) -> V) {
    for (t, o) in out.iter_mut().enumerate() {
        if mask[t] {
            *o = f(t);
        }
    }
}

fn map_v(v: &V, f: impl Fn(S) -> S) -> V {
    match v {
        V::S(s) => V::S(f(*s)),
        V::Run(r) => V::Run(r.iter().map(|s| f(*s)).collect()),
    }
}

/// Elementwise over runs, broadcasting a scalar operand.
fn zip_v(a: &V, b: &V, f: impl Fn(S, S) -> R<S>) -> R<V> {
    Ok(match (a, b) {
        (V::S(x), V::S(y)) => V::S(f(*x, *y)?),
        (V::Run(x), V::S(y)) => V::Run(x.iter().map(|s| f(*s, *y)).collect::<R<_>>()?),
        (V::S(x), V::Run(y)) => V::Run(y.iter().map(|s| f(*x, *s)).collect::<R<_>>()?),
        (V::Run(x), V::Run(y)) => {
            V::Run(x.iter().zip(y).map(|(p, q)| f(*p, *q)).collect::<R<_>>()?)
        }
    })
}

fn zero(t: ScalarTy) -> S {
    if value::is_float(t) {
        S::F(0.0)
    } else if t == ScalarTy::Bool {
        S::B(false)
    } else {
        S::I(0)
    }
}

fn flatten(at: &[i128], dims: &[i128]) -> usize {
    let mut f = 0i128;
    for (a, d) in at.iter().zip(dims) {
        f = f * d + a;
    }
    f as usize
}

fn unflatten(mut i: usize, shape: &[usize], starts: &[i128]) -> Vec<i128> {
    let mut at = vec![0i128; shape.len()];
    for ax in (0..shape.len()).rev() {
        at[ax] = starts[ax] + (i % shape[ax]) as i128;
        i /= shape[ax];
    }
    at
}
