//! One differential run: check the program, run the evaluator on the
//! checked HIR, compile to PTX, run the PTX in phobos-sim with the same
//! inputs, compare every written tensor (integers and bools bitwise,
//! floats with [`value::close`]).

use crate::eval::{self, Args, Tensor};
use crate::program::Program;
use crate::value::{self, S};
use phobos_core::ast::ScalarTy;
use phobos_core::meta::PtxParam;
use phobos_core::CompileOptions;
use phobos_sim::{Device, KernelArg, LaunchOptions, Module};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// What a differential run found.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The two executions agree.
    Agree,
    /// The evaluator refuses the program (its result is undefined): not a
    /// finding; the minimizer uses it to reject a shrunk candidate.
    Undefined(String),
    /// The compiler rejected a generated program.
    Rejected(String),
    /// The compiler accepted it, but the backend or the simulator failed.
    Failed(String),
    /// Both ran, and an output differs.
    Mismatch(String),
}

impl Verdict {
    /// A finding: something the compiler or simulator must fix.
    pub fn is_finding(&self) -> bool {
        !matches!(self, Verdict::Agree | Verdict::Undefined(_))
    }

    /// The kind of finding, which minimization keeps.
    pub fn kind(&self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Undefined(_) => "undefined",
            Verdict::Rejected(_) => "rejected",
            Verdict::Failed(_) => "failed",
            Verdict::Mismatch(_) => "mismatch",
        }
    }
}

/// How a run is done.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    pub compile: CompileOptions,
}

/// Random inputs for the program's read-only tensors: floats are `k / 8`
/// for `k` in -16..=16 (short dyadic values, so sums of many of them stay
/// exact), integers random over their whole range, bools 0 or 1. Outputs are
/// poisoned (all-ones bytes for floats, `0xA5` for the rest).
pub fn inputs(p: &Program, seed: u64) -> BTreeMap<String, Tensor> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_1235);
    let dims: BTreeMap<&str, i64> = p.dims.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let mut out = BTreeMap::new();
    for t in &p.tensors {
        let shape: Vec<usize> = t
            .dim
            .split(", ")
            .map(|d| match dims.get(d) {
                Some(v) => *v as usize,
                None => d.parse().unwrap_or(1),
            })
            .collect();
        let len = shape.iter().product();
        let bits = (0..len)
            .map(|_| {
                if t.written {
                    if value::is_float(t.elem) {
                        u64::MAX
                    } else {
                        0xA5A5_A5A5_A5A5_A5A5
                    }
                } else if value::is_float(t.elem) {
                    let k: i32 = rng.gen_range(-16..=16);
                    value::to_bits(t.elem, S::F(f64::from(k) / 8.0))
                } else if t.elem == ScalarTy::Bool {
                    rng.gen_range(0..2)
                } else {
                    rng.gen::<u64>()
                }
            })
            .map(|b| {
                let w = value::bits(t.elem).max(8);
                if w == 64 {
                    b
                } else {
                    b & ((1u64 << w) - 1)
                }
            })
            .collect();
        out.insert(
            t.name.clone(),
            Tensor {
                elem: t.elem,
                shape,
                bits,
            },
        );
    }
    out
}

/// Values for the scalar parameters.
pub fn scalars(p: &Program, seed: u64) -> BTreeMap<String, (ScalarTy, u64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5ca1_a55e);
    p.scalars
        .iter()
        .map(|(n, t)| {
            let b = if value::is_float(*t) {
                let k: i32 = rng.gen_range(-16..=16);
                value::to_bits(*t, S::F(f64::from(k) / 8.0))
            } else if *t == ScalarTy::Bool {
                rng.gen_range(0..2)
            } else {
                value::to_bits(*t, S::I(i128::from(rng.gen::<i64>())))
            };
            (n.clone(), (*t, b))
        })
        .collect()
}

/// Run `p` both ways with inputs from `seed`.
pub fn run(p: &Program, seed: u64, opts: &RunOptions) -> Verdict {
    let src = p.render();
    run_source(&src, p, seed, opts)
}

fn run_source(src: &str, p: &Program, seed: u64, opts: &RunOptions) -> Verdict {
    let (checked, diags) = phobos_core::check_source(src);
    if diags.iter().any(phobos_core::Diagnostic::is_error) || checked.len() != 1 {
        let msg: Vec<String> = diags
            .iter()
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        return Verdict::Rejected(msg.join("; "));
    }
    let want_variant: Vec<(String, i64)> = match &p.autotune {
        Some((_, v)) => vec![("U".to_string(), *v)],
        None => vec![],
    };
    let Some(hir) = checked[0]
        .variants
        .iter()
        .find(|k| k.variant == want_variant)
    else {
        return Verdict::Rejected("no variant for the autotune value".into());
    };
    let tensors = inputs(p, seed);
    let scal = scalars(p, seed);
    // The evaluator's arguments, by HIR parameter and dim ids.
    let mut args = Args {
        tensors: BTreeMap::new(),
        scalars: BTreeMap::new(),
        dims: hir
            .dims
            .iter()
            .map(|d| {
                d.constant.unwrap_or_else(|| {
                    p.dims
                        .iter()
                        .find(|(n, _)| *n == d.name)
                        .map_or(0, |(_, v)| *v)
                })
            })
            .collect(),
        grid: [p.grid, 1, 1],
    };
    for (i, prm) in hir.params.iter().enumerate() {
        if let Some(t) = tensors.get(&prm.name) {
            args.tensors.insert(i as u32, t.clone());
        }
        if let Some((t, b)) = scal.get(&prm.name) {
            args.scalars.insert(i as u32, value::from_bits(*t, *b));
        }
    }
    if let Err(u) = eval::run(hir, &mut args) {
        return Verdict::Undefined(u.0);
    }
    let (compiled, diags) = phobos_core::compile(src, "fz.pho", &opts.compile);
    let Some(k) = compiled.first() else {
        let msg: Vec<String> = diags
            .iter()
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        return Verdict::Rejected(msg.join("; "));
    };
    let Some(variant) = k.meta.variants.iter().find(|v| v.values == want_variant) else {
        return Verdict::Failed("no compiled variant".into());
    };
    let module = match Module::parse(&k.ptx) {
        Ok(m) => m,
        Err(e) => return Verdict::Failed(format!("the PTX does not load: {e}")),
    };
    let mut dev = Device::new();
    let mut ids = BTreeMap::new();
    for (name, t) in &tensors {
        match dev.alloc_from(name, &t.bytes()) {
            Ok(id) => {
                ids.insert(name.clone(), id);
            }
            Err(e) => return Verdict::Failed(format!("alloc: {e}")),
        }
    }
    let sizes: Vec<usize> = match module.params(&variant.entry) {
        Ok(ps) => ps.iter().map(|q| q.size as usize).collect(),
        Err(e) => return Verdict::Failed(format!("entry: {e}")),
    };
    let mut kargs = Vec::new();
    for (prm, size) in variant.ptx_params.iter().zip(sizes) {
        kargs.push(match prm {
            PtxParam::TensorPtr(n) => KernelArg::Buffer(ids[n]),
            PtxParam::Scalar(n, t) => {
                let (_, b) = scal[n];
                let _ = t;
                KernelArg::Bytes(b.to_le_bytes()[..size.min(8)].to_vec())
            }
            PtxParam::Dim(n) => {
                let v = p.dims.iter().find(|(d, _)| d == n).map_or(0, |(_, v)| *v);
                KernelArg::I32(v as i32)
            }
        });
    }
    let launch = dev.launch(
        &module,
        &variant.entry,
        [p.grid, 1, 1],
        [variant.threads, 1, 1],
        &kargs,
        &LaunchOptions {
            threads: 1,
            ..LaunchOptions::default()
        },
        None,
    );
    if let Err(e) = launch {
        return Verdict::Failed(format!("the simulator: {e}"));
    }
    for (i, prm) in hir.params.iter().enumerate() {
        let Some(want) = args.tensors.get(&(i as u32)) else {
            continue;
        };
        if !p.tensors.iter().any(|t| t.name == prm.name && t.written) {
            continue;
        }
        let bytes = match dev.to_vec(ids[&prm.name]) {
            Ok(b) => b,
            Err(e) => return Verdict::Failed(format!("read back: {e}")),
        };
        let got = Tensor::from_bytes(want.elem, want.shape.clone(), &bytes);
        for (j, (g, w)) in got.bits.iter().zip(&want.bits).enumerate() {
            let same = if value::is_float(want.elem) {
                value::close(
                    want.elem,
                    value::as_f(value::from_bits(want.elem, *g)),
                    value::as_f(value::from_bits(want.elem, *w)),
                )
            } else {
                g == w
            };
            if !same {
                return Verdict::Mismatch(format!(
                    "{}[{j}]: simulator {:?}, evaluator {:?}",
                    prm.name,
                    value::from_bits(want.elem, *g),
                    value::from_bits(want.elem, *w)
                ));
            }
        }
    }
    Verdict::Agree
}
