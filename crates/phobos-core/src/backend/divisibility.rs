//! Divisibility and alignment: a side table of known divisors for every
//! integer expression and var, and from it the decision for every memory
//! access: how many bytes each instruction moves and why not more.
//!
//! The lattice is "a known divisor" (0 means the value is zero, divisible by
//! everything; 1 means nothing is known). Constants are their own divisor,
//! `@aligned` dims their multiple, sums and differences the gcd, products
//! the product, `range` variables the gcd of start and step; a var is the gcd
//! of everything assigned to it (a greatest fixed point, computed by
//! iterating from "everything" downwards). A tensor's base is 16-byte
//! aligned (launch checks it) and so is every shared buffer.
//!
//! The vector rule is the language page's: a run is read with one vector
//! load when it is along the last dimension, at most 16 bytes, a power of
//! two in size, and its address provably a multiple of that size; longer
//! runs move in 16-byte pieces when each piece is so aligned; otherwise one
//! instruction per element.

use super::ir::{AccessId, BufferKind, ExprId, ExprKind, Func, Mem, Shape, StmtId, StmtKind};
use crate::ast::{BinOp, CtxField};
use crate::hir::{self, Builtin, ConstVal, DimRef, ParamKind};

/// The analysis result, keyed by handle.
#[derive(Clone, Debug, Default)]
pub struct Divisibility {
    /// Known divisor of each integer expression (by `ExprId`).
    pub expr: Vec<u64>,
    /// Known divisor of each var (by `VarId`).
    pub var: Vec<u64>,
    /// The decision for each access (by `AccessId`).
    pub access: Vec<AccessInfo>,
    /// Whether the var equations reached their fixed point. When they did
    /// not, every var's divisor is 1 (the sound bottom value).
    pub converged: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessInfo {
    /// Proven alignment of the first byte, at most 16.
    pub align: u32,
    /// Bytes moved by each instruction.
    pub width: u32,
    /// Why not wider (empty when the widest possible was used).
    pub reason: String,
}

const CAP: u128 = 1 << 40;

/// Analyze one lowered variant.
pub fn analyze(f: &Func, k: &hir::Kernel) -> Divisibility {
    analyze_within(f, k, max_iterations(f))
}

/// How many rounds the var equations may take. The divisors start at 0
/// ("divisible by everything") and, as long as the equations are
/// monotone, only move down in the divisibility order: a divisor other
/// than 0 is at most 2^40 and each step down at least halves it, so each
/// var moves at most about 42 times. That is no proof, because `cap`
/// (which replaces a divisor above 2^40 by its gcd with 2^40) is not
/// monotone, and 42 rounds per var could be slow; so the rounds are
/// bounded instead. A chain of vars assigned from one another settles one
/// var per round, so the bound allows one round per var and 64 more. A
/// kernel that has not settled by then gets the sound bottom value (see
/// `analyze_within`), never the unsettled divisors, which may promise
/// more alignment than is true.
fn max_iterations(f: &Func) -> usize {
    64 + 2 * f.vars.len()
}

/// The analysis with at most `rounds` rounds of the var equations. Without
/// a fixed point by then, every var falls back to the sound bottom value 1
/// (nothing known), so no access is promised more alignment than is true;
/// `converged` records it and each narrowed access's reason says so.
fn analyze_within(f: &Func, k: &hir::Kernel, rounds: usize) -> Divisibility {
    let mut d = Divisibility {
        expr: vec![1; f.exprs.len()],
        var: vec![0; f.vars.len()],
        access: Vec::new(),
        converged: false,
    };
    // Iterate to the greatest fixed point of the var equations, starting
    // from 0 ("divisible by everything") downwards.
    for _ in 0..rounds {
        exprs(f, k, &mut d);
        let mut next = vec![0u64; f.vars.len()];
        let mut assigned = vec![false; f.vars.len()];
        assignments(f, &f.body, &d, &mut next, &mut assigned);
        for (i, a) in assigned.iter().enumerate() {
            if !a {
                next[i] = 1;
            }
        }
        if next == d.var {
            d.converged = true;
            break;
        }
        d.var = next;
    }
    if !d.converged {
        d.var = vec![1; f.vars.len()];
        exprs(f, k, &mut d);
    }
    for i in 0..f.accesses.len() {
        let mut info = decide(f, k, &d, AccessId(i as u32));
        if !d.converged && !info.reason.is_empty() {
            info.reason +=
                " (the divisibility analysis did not settle, so no var is assumed aligned)";
        }
        d.access.push(info);
    }
    d
}

/// Every expression's divisor from the current var divisors.
fn exprs(f: &Func, k: &hir::Kernel, d: &mut Divisibility) {
    for i in 0..f.exprs.len() {
        d.expr[i] = expr_divisor(f, k, d, ExprId(i as u32));
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn cap(x: u128) -> u64 {
    if x > CAP {
        let mut a = x;
        let mut b = CAP;
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a as u64
    } else {
        x as u64
    }
}

fn mul(a: u64, b: u64) -> u64 {
    cap(a as u128 * b as u128)
}

fn assignments(
    f: &Func,
    block: &[StmtId],
    d: &Divisibility,
    next: &mut [u64],
    assigned: &mut [bool],
) {
    fn join(v: super::ir::VarId, x: u64, next: &mut [u64], assigned: &mut [bool]) {
        next[v.0 as usize] = gcd(next[v.0 as usize], x);
        assigned[v.0 as usize] = true;
    }
    for &s in block {
        match &f.stmts[s].kind {
            StmtKind::Set(v, e) => join(*v, d.expr[e.0 as usize], next, assigned),
            StmtKind::If { then, els, .. } => {
                assignments(f, then, d, next, assigned);
                assignments(f, els, d, next, assigned);
            }
            StmtKind::For(l) => {
                let x = gcd(d.expr[l.start.0 as usize], d.expr[l.step.0 as usize]);
                join(l.var, x, next, assigned);
                assignments(f, &l.body, d, next, assigned);
            }
            StmtKind::While { pre, body, .. } => {
                assignments(f, pre, d, next, assigned);
                assignments(f, body, d, next, assigned);
            }
            StmtKind::CtaColl(c) => join(c.dst, 1, next, assigned),
            _ => {}
        }
    }
}

fn expr_divisor(f: &Func, k: &hir::Kernel, d: &Divisibility, e: ExprId) -> u64 {
    let of = |x: &ExprId| d.expr[x.0 as usize];
    match &f.exprs[e].kind {
        ExprKind::Const(ConstVal::Int(v)) => cap(v.unsigned_abs()),
        ExprKind::Const(ConstVal::Bool(_)) => 1,
        ExprKind::Var(v) => d.var[v.0 as usize],
        ExprKind::Dim(dim) => dim_divisor(k, *dim),
        ExprKind::Ctx(CtxField::Lanes) => 32,
        ExprKind::Binary(op, a, b) => match op {
            BinOp::Add | BinOp::Sub => gcd(of(a), of(b)),
            BinOp::Mul => mul(of(a), of(b)),
            BinOp::Shl => match f.const_int(*b) {
                Some(s) if (0..32).contains(&s) => mul(of(a), 1 << s),
                _ => 1,
            },
            BinOp::BitAnd => {
                let tz = |x: u64| if x == 0 { 40 } else { x.trailing_zeros() };
                1u64 << tz(of(a)).max(tz(of(b))).min(40)
            }
            _ => 1,
        },
        ExprKind::Unary(crate::ast::UnOp::Neg, a) => of(a),
        ExprKind::Convert(a)
            if f.scalar_ty(e).is_int()
                && f.scalar_ty(*a).is_int()
                && f.scalar_ty(e).size() >= f.scalar_ty(*a).size() =>
        {
            of(a)
        }
        ExprKind::Builtin(Builtin::Min | Builtin::Max, args) if args.len() == 2 => {
            gcd(of(&args[0]), of(&args[1]))
        }
        ExprKind::Builtin(Builtin::Select, args) if args.len() == 3 => {
            gcd(of(&args[1]), of(&args[2]))
        }
        _ => 1,
    }
}

fn dim_divisor(k: &hir::Kernel, dim: hir::DimId) -> u64 {
    if let Some(c) = k.dims.get(dim.0 as usize).and_then(|d| d.constant) {
        return cap(c.unsigned_abs() as u128);
    }
    k.aligned
        .iter()
        .filter(|(d, _)| *d == dim)
        .map(|(_, m)| *m)
        .fold(1, |acc, m| acc.max(m))
}

fn dimref_divisor(k: &hir::Kernel, r: &DimRef) -> u64 {
    match r {
        DimRef::Const(c) => cap(*c as u128),
        DimRef::Named(d) => dim_divisor(k, *d),
    }
}

/// The divisor of each axis's stride (in elements) for the access target.
fn stride_divisors(f: &Func, k: &hir::Kernel, mem: Mem) -> Vec<u64> {
    let dims: Vec<u64> = match mem {
        Mem::Tensor(p) => match &k.params[p.0 as usize].kind {
            ParamKind::Tensor { dims, .. } => dims.iter().map(|r| dimref_divisor(k, r)).collect(),
            ParamKind::Scalar(_) => vec![],
        },
        Mem::Buffer(b) => match &f.buffers[b].kind {
            BufferKind::Tile { shape, .. } => shape.iter().map(|&s| s as u64).collect(),
            BufferKind::Scratch { .. } => vec![],
        },
        Mem::Local(a) => f.arrays[a].shape.iter().map(|&s| u64::from(s)).collect(),
    };
    let mut strides = vec![1u64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = mul(strides[i + 1], dims[i + 1]);
    }
    strides
}

fn pow2_part(x: u64) -> u64 {
    if x == 0 {
        1 << 40
    } else {
        1 << x.trailing_zeros()
    }
}

fn decide(f: &Func, k: &hir::Kernel, d: &Divisibility, id: AccessId) -> AccessInfo {
    let a = &f.accesses[id];
    let size = a.elem.size();
    let strides = stride_divisors(f, k, a.mem);
    let rank = strides.len();
    let elem_div = a.index.iter().zip(&strides).fold(0u64, |acc, (ix, s)| {
        gcd(acc, mul(d.expr[ix.0 as usize], *s))
    });
    let align = pow2_part(mul(elem_div, size as u64)).min(16) as u32;
    match &a.shape {
        Shape::Point => AccessInfo {
            align,
            width: size,
            reason: String::new(),
        },
        Shape::Run { axis, len } => {
            let bytes = len * size;
            let per_elem = |reason: String| AccessInfo {
                align,
                width: size,
                reason,
            };
            if *len == 1 {
                per_elem(String::new())
            } else if *axis + 1 != rank {
                per_elem(format!(
                    "the run is along axis {axis}, not the last dimension, so its elements are not adjacent"
                ))
            } else if bytes <= 16 && !bytes.is_power_of_two() {
                per_elem(format!("the run's {bytes} bytes are not a power of two"))
            } else {
                let want = bytes.min(16);
                let what = if a.store { "store" } else { "load" };
                if bytes > 16 && !bytes.is_multiple_of(16) {
                    per_elem(format!(
                        "the run's {bytes} bytes do not split into 16-byte pieces"
                    ))
                } else if align < want {
                    let reason = format!(
                        "the address is only proven {align}-byte aligned; {} {want}-byte {what} needs {want}",
                        crate::diag::a_or_an(&want.to_string())
                    );
                    // Narrower vectors where the proven alignment allows
                    // (a run of 4 f32 at 8 bytes: two 8-byte pieces).
                    if align > size {
                        AccessInfo {
                            align,
                            width: align,
                            reason,
                        }
                    } else {
                        per_elem(reason)
                    }
                } else if bytes > 16 {
                    AccessInfo {
                        align,
                        width: 16,
                        reason: format!(
                            "16 bytes is the widest {what}; the run takes {}",
                            bytes / 16
                        ),
                    }
                } else {
                    AccessInfo {
                        align,
                        width: bytes,
                        reason: String::new(),
                    }
                }
            }
        }
        Shape::Tile { shape } => tile_decision(f, d, id, shape, &strides, size),
    }
}

/// Tile copies and stores move `v` elements per instruction, where `v` is
/// the largest power of two with `v * size <= 16` that divides the tile's
/// last extent, the tensor's row stride and the start along the last axis.
fn tile_decision(
    f: &Func,
    d: &Divisibility,
    id: AccessId,
    shape: &[u32],
    strides: &[u64],
    size: u32,
) -> AccessInfo {
    let a = &f.accesses[id];
    let rank = shape.len();
    let last_len = shape.last().copied().unwrap_or(1) as u64;
    let start_div = a.index.last().map(|e| d.expr[e.0 as usize]).unwrap_or(0);
    let row_stride = if rank > 1 { strides[rank - 2] } else { 0 };
    let max_v = (16 / size).max(1) as u64;
    // The row length bounds every row's start and is where each row is
    // masked; a tile of one row (`x[0 :+ 1, :]`) has no second row to
    // start, so the reason names only the mask.
    let one_row = shape[..rank.saturating_sub(1)].iter().all(|&e| e == 1);
    let row_length = if one_row {
        "the tensor's row length (where the tile's one row is masked)"
    } else {
        "the tensor's row length"
    };
    let limits = [
        (pow2_part(last_len), "the tile's last extent"),
        (pow2_part(start_div), "the start along the last axis"),
        (pow2_part(row_stride), row_length),
    ];
    let mut v = max_v;
    let mut why = "";
    for (lim, what) in limits {
        if lim < v {
            v = lim;
            why = what;
        }
    }
    let width = (v as u32) * size;
    let align = width.max(size);
    // Every length is a multiple of 1: what stops a 2-element vector is
    // that it is not proven a multiple of 2.
    let reason = if v == 1 {
        format!("{why} is not proven a multiple of 2 elements")
    } else if v < max_v {
        format!(
            "{why} is only proven a multiple of {v} elements, not {}",
            v * 2
        )
    } else {
        String::new()
    };
    AccessInfo {
        align,
        width,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{compile_variant, CompiledVariant};
    use crate::source::LineIndex;

    /// A kernel whose run start is `ctx.lane * step` passed through a
    /// chain of `n` lets.
    fn chain(n: usize, step: u32) -> String {
        let mut s = format!(
            "@launch(32)\n@aligned(M = 4)\nkernel k(A: tensor<f32>[N, M], y: tensor<f32>[N]) {{\n  let x0 = ctx.lane * {step}\n"
        );
        for i in 1..=n {
            s += &format!("  let x{i} = x{}\n", i - 1);
        }
        s += &format!("  y[ctx.lane] = sum(A[0, x{n} :+ 4])\n}}\n");
        s
    }

    fn compile(src: &str) -> (CompiledVariant, crate::hir::Kernel) {
        let (kernels, diags) = crate::check_source(src);
        assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
        let k = kernels[0].variants[0].clone();
        let v = compile_variant(&k, &LineIndex::new(src), 75).expect("compiles");
        (v, k)
    }

    fn run_width(d: &Divisibility) -> u32 {
        d.access.iter().map(|a| a.width).max().expect("an access")
    }

    #[test]
    fn a_chain_longer_than_the_old_sixty_four_rounds_settles_soundly() {
        // Before the bound grew with the vars, the end of this chain was
        // still 0 ("divisible by everything") after 64 rounds, and the
        // unaligned run `A[0, ctx.lane :+ 4]` was promised 16 bytes.
        let (v, _) = compile(&chain(80, 1));
        assert_eq!(run_width(&v.div), 4);
        assert_eq!(v.div.var.iter().copied().max(), Some(1));
        assert!(v.div.converged);
        // The same chain from an aligned start is proven 16-byte aligned.
        let (v, _) = compile(&chain(80, 4));
        assert!(v.div.converged);
        assert_eq!(run_width(&v.div), 16);
    }

    #[test]
    fn without_a_fixed_point_every_var_falls_back_to_one() {
        let (v, k) = compile(&chain(10, 4));
        assert_eq!(run_width(&v.div), 16, "settled, the run is a vector");
        let d = analyze_within(&v.func, &k, 3);
        assert!(!d.converged);
        assert!(d.var.iter().all(|&x| x == 1), "{:?}", d.var);
        let run = d
            .access
            .iter()
            .find(|a| !a.reason.is_empty())
            .expect("narrowed");
        assert_eq!(run.width, 4);
        assert!(run.reason.contains("did not settle"), "{}", run.reason);
    }
}
