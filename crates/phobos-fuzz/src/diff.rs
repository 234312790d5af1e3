//! One differential run: check the program, run the evaluator on the
//! checked HIR, compile to PTX, run the PTX in phobos-sim with the same
//! inputs (on the one simulated launch road, `phobos_runtime::sim_launch`:
//! the binding takes the dims from the tensors' shapes), compare every
//! written tensor (integers and bools bitwise, floats with
//! [`value::close`]).

use crate::eval::{self, Args, Tensor};
use crate::program::Program;
use crate::value::{self, S};
use phobos_core::ast::ScalarTy;
use phobos_core::binding::{self, ArgShape, LaunchRequest};
use phobos_core::hir::{DimRef, Kernel, ParamKind};
use phobos_core::meta::{KernelMeta, ParamKindMeta};
use phobos_core::CompileOptions;
use phobos_runtime::sim_launch::{self, Plan};
use phobos_sim::{CheckKind, Device, KernelArg, LaunchOptions, Module, SimError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// What a differential run found.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The two executions agree.
    Agree,
    /// The evaluator found an index out of bounds, and the simulator
    /// reported it (memcheck): not a finding.
    Caught(String),
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
        !matches!(
            self,
            Verdict::Agree | Verdict::Caught(_) | Verdict::Undefined(_)
        )
    }

    /// The kind of finding, which minimization keeps.
    pub fn kind(&self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Caught(_) => "caught",
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

/// A program as text with what a run needs besides it: the seed of its
/// inputs, the grid, the named dims' values and the autotune value. This is
/// what a saved case in `tests/fuzz-cases/` holds (as `// key: value`
/// header lines).
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub src: String,
    pub seed: u64,
    pub grid: u32,
    pub dims: Vec<(String, i64)>,
    pub tune: Option<i64>,
}

impl Case {
    pub fn of(p: &Program, seed: u64) -> Case {
        Case {
            src: p.render(),
            seed,
            grid: p.grid,
            dims: p.dims.clone(),
            tune: p.autotune.as_ref().map(|(_, v)| *v),
        }
    }

    /// The text of a saved case.
    pub fn to_file(&self, why: &str) -> String {
        let dims: Vec<String> = self.dims.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let mut s = format!(
            "// phobos-fuzz case: {}\n// seed: {}\n// grid: {}\n// dims: {}\n",
            why.lines().next().unwrap_or(""),
            self.seed,
            self.grid,
            dims.join(" ")
        );
        if let Some(t) = self.tune {
            s.push_str(&format!("// tune: {t}\n"));
        }
        s + &self.src
    }

    /// Parse a saved case (see [`Case::to_file`]).
    pub fn from_file(text: &str) -> Option<Case> {
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("// {k}: ")))
                .map(str::trim)
        };
        let dims = field("dims")?
            .split_whitespace()
            .filter_map(|d| {
                let (n, v) = d.split_once('=')?;
                Some((n.to_string(), v.parse().ok()?))
            })
            .collect();
        Some(Case {
            src: text.to_string(),
            seed: field("seed")?.parse().ok()?,
            grid: field("grid")?.parse().ok()?,
            dims,
            tune: field("tune").and_then(|t| t.parse().ok()),
        })
    }
}

/// Random inputs for the kernel's read-only tensors: floats are `k / 8`
/// for `k` in -16..=16 (short dyadic values, so sums of many of them stay
/// exact), integers random over their whole range, bools 0 or 1. Written
/// tensors start poisoned (all-ones bytes for floats, `0xA5` for the rest).
fn inputs(hir: &Kernel, dims: &[i64], seed: u64) -> BTreeMap<String, Tensor> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_1235);
    let mut out = BTreeMap::new();
    for prm in &hir.params {
        let ParamKind::Tensor {
            elem,
            dims: shape,
            written,
        } = &prm.kind
        else {
            continue;
        };
        let elem = *elem;
        let shape: Vec<usize> = shape
            .iter()
            .map(|d| match d {
                DimRef::Named(id) => dims[id.0 as usize].max(0) as usize,
                DimRef::Const(c) => *c as usize,
            })
            .collect();
        let len = shape.iter().product();
        let bits = (0..len)
            .map(|_| {
                if *written {
                    if value::is_float(elem) {
                        u64::MAX
                    } else {
                        0xA5A5_A5A5_A5A5_A5A5
                    }
                } else if value::is_float(elem) {
                    let k: i32 = rng.gen_range(-16..=16);
                    value::to_bits(elem, S::F(f64::from(k) / 8.0))
                } else if elem == ScalarTy::Bool {
                    rng.gen_range(0..2)
                } else {
                    rng.gen::<u64>()
                }
            })
            .map(|b| {
                let w = value::bits(elem).max(8);
                if w == 64 {
                    b
                } else {
                    b & ((1u64 << w) - 1)
                }
            })
            .collect();
        out.insert(prm.name.clone(), Tensor { elem, shape, bits });
    }
    out
}

/// Values for the scalar parameters.
fn scalars(hir: &Kernel, seed: u64) -> BTreeMap<String, (ScalarTy, u64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5ca1_a55e);
    hir.params
        .iter()
        .filter_map(|prm| match prm.kind {
            ParamKind::Scalar(t) => Some((prm.name.clone(), t)),
            ParamKind::Tensor { .. } => None,
        })
        .map(|(n, t)| {
            let b = if value::is_float(t) {
                let k: i32 = rng.gen_range(-16..=16);
                value::to_bits(t, S::F(f64::from(k) / 8.0))
            } else if t == ScalarTy::Bool {
                rng.gen_range(0..2)
            } else {
                value::to_bits(t, S::I(i128::from(rng.gen::<i64>())))
            };
            (n, (t, b))
        })
        .collect()
}

/// Run `p` both ways with inputs from `seed`.
pub fn run(p: &Program, seed: u64, opts: &RunOptions) -> Verdict {
    run_case(&Case::of(p, seed), opts)
}

/// Run a case both ways.
pub fn run_case(case: &Case, opts: &RunOptions) -> Verdict {
    let (src, seed) = (case.src.as_str(), case.seed);
    let (checked, diags) = phobos_core::check_source(src);
    if diags.iter().any(phobos_core::Diagnostic::is_error) || checked.len() != 1 {
        let msg: Vec<String> = diags
            .iter()
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        return Verdict::Rejected(msg.join("; "));
    }
    let want_variant: Vec<(String, i64)> = match case.tune {
        Some(v) => vec![("U".to_string(), v)],
        None => vec![],
    };
    let Some(hir) = checked[0]
        .variants
        .iter()
        .find(|k| k.variant == want_variant)
    else {
        return Verdict::Rejected("no variant for the autotune value".into());
    };
    let dims: Vec<i64> = hir
        .dims
        .iter()
        .map(|d| {
            d.constant.unwrap_or_else(|| {
                case.dims
                    .iter()
                    .find(|(n, _)| *n == d.name)
                    .map_or(0, |(_, v)| *v)
            })
        })
        .collect();
    let tensors = inputs(hir, &dims, seed);
    let scal = scalars(hir, seed);
    // The evaluator's arguments, by HIR parameter and dim ids.
    let mut args = Args {
        tensors: BTreeMap::new(),
        scalars: BTreeMap::new(),
        dims,
        grid: [case.grid, 1, 1],
        slack: BTreeMap::new(),
    };
    for (i, prm) in hir.params.iter().enumerate() {
        if let Some(t) = tensors.get(&prm.name) {
            args.tensors.insert(i as u32, t.clone());
        }
        if let Some((t, b)) = scal.get(&prm.name) {
            args.scalars.insert(i as u32, value::from_bits(*t, *b));
        }
    }
    // An index out of bounds stops the evaluator; the simulator must then
    // report it (memcheck), whatever buffer the address lands in.
    let out_of_bounds = match eval::run(hir, &mut args) {
        Ok(()) => None,
        Err(u) if u.is_out_of_bounds() => Some(u.0),
        Err(u) => return Verdict::Undefined(u.0),
    };
    let (compiled, diags) = phobos_core::compile(src, "fz.pho", &opts.compile);
    let Some(k) = compiled.first() else {
        let msg: Vec<String> = diags
            .iter()
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        return Verdict::Rejected(msg.join("; "));
    };
    let plan = match plan(
        &k.meta,
        &tensors,
        case.grid,
        &want_variant,
        opts.compile.arch,
    ) {
        Ok(plan) => plan,
        Err(v) => return v,
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
    let kargs = plan.kernel_args(|i| {
        let name = &k.meta.params[i].name;
        match (ids.get(name), scal.get(name)) {
            (Some(&id), _) => Some(KernelArg::Buffer(id)),
            (None, Some(&(ty, b))) => Some(KernelArg::Bytes(
                b.to_le_bytes()[..ty.size() as usize].to_vec(),
            )),
            (None, None) => None,
        }
    });
    let kargs = match kargs {
        Ok(a) => a,
        Err(e) => return Verdict::Failed(format!("the launch binding: {e}")),
    };
    let launch = plan.run(
        &dev,
        &module,
        &kargs,
        &LaunchOptions {
            threads: 1,
            ..LaunchOptions::default()
        },
        None,
    );
    if let Some(why) = out_of_bounds {
        return match launch {
            Err(SimError::Check(r)) if r.kind == CheckKind::Memcheck => Verdict::Caught(why),
            Err(e) => Verdict::Mismatch(format!(
                "the evaluator found an {why}; the simulator did not report it: {e}"
            )),
            Ok(_) => Verdict::Mismatch(format!(
                "the evaluator found an {why}; the simulator passed its checks"
            )),
        };
    }
    if let Err(e) = launch {
        return Verdict::Failed(format!("the simulator: {e}"));
    }
    for (i, prm) in hir.params.iter().enumerate() {
        let Some(want) = args.tensors.get(&(i as u32)) else {
            continue;
        };
        if !matches!(prm.kind, ParamKind::Tensor { written: true, .. }) {
            continue;
        }
        let bytes = match dev.to_vec(ids[&prm.name]) {
            Ok(b) => b,
            Err(e) => return Verdict::Failed(format!("read back: {e}")),
        };
        let got = Tensor::from_bytes(want.elem, want.shape.clone(), &bytes);
        for (j, (g, w)) in got.bits.iter().zip(&want.bits).enumerate() {
            let same = if value::is_float(want.elem) {
                value::close_within(
                    want.elem,
                    value::as_f(value::from_bits(want.elem, *g)),
                    value::as_f(value::from_bits(want.elem, *w)),
                    args.slack.get(&(i as u32, j)).copied().unwrap_or(0.0),
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

/// The launch of the case's variant (`want_variant`: the `@autotune`
/// value the evaluator ran) on `grid` CTAs, planned on the one simulated
/// launch road over the inputs' shapes, against `sm_{arch}`'s limits.
fn plan<'m>(
    meta: &'m KernelMeta,
    tensors: &BTreeMap<String, Tensor>,
    grid: u32,
    want_variant: &[(String, i64)],
    arch: u32,
) -> Result<Plan<'m>, Verdict> {
    let shapes: Vec<Option<(ScalarTy, Vec<u64>)>> = meta
        .params
        .iter()
        .map(|p| match (&p.kind, tensors.get(&p.name)) {
            (ParamKindMeta::Tensor { .. }, Some(t)) => {
                Some((t.elem, t.shape.iter().map(|&d| d as u64).collect()))
            }
            _ => None,
        })
        .collect();
    let args: Vec<ArgShape<'_>> = meta
        .params
        .iter()
        .zip(&shapes)
        .map(|(p, shape)| ArgShape::of_param(&p.kind, shape.as_ref().map(|(e, s)| (*e, &s[..]))))
        .collect();
    // An autotuned dim is matched from the shapes; a free constant is picked.
    let picked: Vec<(String, i64)> = want_variant
        .iter()
        .filter(|(n, _)| !meta.dims.iter().any(|d| &d.name == n))
        .cloned()
        .collect();
    let request = LaunchRequest {
        args: &args,
        grid: Some([grid, 1, 1]),
        picked: &picked,
        limits: sim_launch::limits(arch),
    };
    let refused = |e| Verdict::Failed(format!("the launch binding: {e}"));
    let binding = binding::bind(meta, &request).map_err(refused)?;
    let Some(&variant) = binding.candidates.iter().find(|v| v.values == want_variant) else {
        return Err(Verdict::Failed("no compiled variant".into()));
    };
    Plan::with_variant(binding, variant).map_err(refused)
}
