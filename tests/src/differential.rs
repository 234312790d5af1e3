//! The differential check of the simulator against hardware: one case run
//! on the simulator (`phobos-sim`, as [`crate::executor::Executor::Sim`])
//! and through the runtime (the GPU, or the CUDA driver stand-in), from the
//! same inputs, and every output compared.
//!
//! - Integers and bools must agree bit for bit.
//! - Floats are compared in ulps of `max(|sim|, 1)` in the output's type
//!   ("floored ulps": inputs are drawn from [-1, 1), so a result that
//!   cancels to near zero is measured against the scale of its terms). Two
//!   NaNs agree whatever their payloads; a NaN against a number, or
//!   infinities of different signs, never do.
//! - A float difference is allowed only when the kernel's PTX contains an
//!   instruction that explains it ([`Cause`]), and only up to that cause's
//!   tolerance. Tensor-core products (`mma`, [`Cause::Mma`]) are bounded per
//!   output by the size of their dot products ([`DotBound`]), not in ulps.
//!   Anything else is a bug in the simulator or in the backend:
//!   the record fails, and the inputs and both outputs are saved (see
//!   [`save_failures_to`]) so that the case can become a regression test.
//!
//! This module decides agreement and records it; what runs the cases and
//! reports them is the GPU bundle's `phobos-diff` (crates/phobos-gpucheck).

use crate::sim_support::{current_seed, is_float, Case, Outcome, Scalar, Tensor};
use phobos_core::ast::ScalarTy;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A known reason for the GPU and the simulator to differ on floats, read
/// from the kernel's PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// `ex2.approx`, `lg2.approx`, `rsqrt.approx`, `sin.approx`, ...: the
    /// hardware's approximation differs from the simulator's in the last
    /// bits (docs/simulator.md lists the simulator's bounds).
    Approx,
    /// An unrounded `mul` (no `.rn`) that ptxas may contract with a
    /// following `add` into one `fma`, which rounds once instead of twice.
    /// The simulator executes the PTX as written, two roundings.
    FmaContraction,
    /// Float atomics (`atom`/`red` on floats): the hardware adds in
    /// whatever order the threads arrive, the simulator in thread order.
    SummationOrder,
    /// Tensor-core products with a float accumulator (`mma.sync`,
    /// `wgmma.mma_async`): the PTX ISA gives `D = A·B + C` but not how it
    /// is summed (PTX ISA, `mma` and `wgmma.mma_async`, "Precision and
    /// rounding": accumulation "with at least single precision" for an
    /// f32 accumulator, "at least half precision" for f16, and "the
    /// accumulation order, rounding and handling of subnormal inputs are
    /// unspecified").
    /// The simulator adds each instruction's products exactly (in f64) and
    /// rounds once per instruction. The allowance is per output, from its
    /// dot product: [`DotBound`].
    Mma,
}

impl Cause {
    /// The name results and docs use.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Approx => "approx",
            Cause::FmaContraction => "fma",
            Cause::SummationOrder => "order",
            Cause::Mma => "mma",
        }
    }

    /// The largest difference, in floored ulps of the output's type, this
    /// cause explains (docs/benchmarks.md, "How to read the GPU bundle's
    /// results"). f16 and bf16 outputs are rounded from wider arithmetic
    /// or computed in few steps, so they get a much smaller allowance.
    /// [`Cause::Mma`] has no allowance in ulps (0 here): its bound is
    /// [`DotBound`]'s, per output.
    pub fn tolerance(self, elem: ScalarTy) -> f64 {
        let narrow = matches!(elem, ScalarTy::F16 | ScalarTy::BF16);
        match (self, narrow) {
            (Cause::Mma, _) => 0.0,
            (Cause::Approx, false) => 16.0,
            (Cause::FmaContraction, false) => 64.0,
            (Cause::SummationOrder, false) => 256.0,
            (Cause::Approx | Cause::FmaContraction, true) => 2.0,
            (Cause::SummationOrder, true) => 8.0,
        }
    }
}

/// The causes the kernel's PTX makes possible.
pub fn causes(ptx: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    if ptx.contains(".approx") {
        out.push(Cause::Approx);
    }
    let float_types = [".f16", ".f16x2", ".bf16", ".f32", ".f64"];
    let unrounded_mul = ptx.lines().any(|l| {
        let op = instruction(l);
        float_types.iter().any(|t| op == format!("mul{t}"))
    });
    if unrounded_mul {
        out.push(Cause::FmaContraction);
    }
    let float_atomic = ptx.lines().any(|l| {
        let op = instruction(l);
        (op.starts_with("atom.") || op.starts_with("red."))
            && float_types.iter().any(|t| op.ends_with(t))
    });
    if float_atomic {
        out.push(Cause::SummationOrder);
    }
    // `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`: the first type
    // after the layouts is D's. Integer products (`.s32`) are exact.
    let float_mma = ptx.lines().any(|l| {
        let op = instruction(l);
        (op.starts_with("mma.") || op.starts_with("wgmma.mma_async"))
            && op
                .split('.')
                .any(|part| matches!(part, "f16" | "f32" | "f64"))
    });
    if float_mma {
        out.push(Cause::Mma);
    }
    out
}

/// The bound on an output of tensor-core products ([`Cause::Mma`]): a
/// dot product of at most `terms` products, whose magnitudes `Σ|a·b|` the
/// simulator computes by running the case again on the absolute values of
/// its inputs (`magnitude`, one element per output element).
///
/// Any order of summing K terms, each addition rounded with unit roundoff
/// u, is within `(K-1)·u·Σ|a·b|` of the exact sum; truncation, as tensor
/// cores align their products, doubles that. So the device is within
/// `2K·u·Σ|a·b|` of the exact dot product, the simulator (one rounding per
/// instruction) within `K·u·Σ|a·b|`, and each rounds the result once more
/// to the output's type: `|gpu − sim| ≤ 4K·u·Σ|a·b|`, with u the unit
/// roundoff of the output's type (2⁻²⁴ for f32, 2⁻¹¹ for f16). On top of
/// that comes the ulp allowance of the PTX's other causes (the epilogue's
/// `ex2.approx`, its `fma` contraction), or one floored ulp without one.
/// An epilogue that scales by at most 1 (bias, ReLU, a softmax's scale
/// ≤ 1/2) keeps the bound; a wrong fragment, a dropped K step or a
/// mis-rounded operand (tf32's `cvt.rna`) is off by far more.
#[derive(Clone, Debug)]
pub struct DotBound {
    /// The most products any output's dot product sums (the case's
    /// largest extent: every contraction runs along one of them, and the
    /// zero padding of a ragged tile adds exact zeros).
    pub terms: usize,
    /// `Σ|a·b|` per output element.
    pub magnitude: Tensor,
    /// The ulp allowance of the other causes in the PTX (at least 1).
    pub ulps: f64,
}

impl DotBound {
    /// The largest difference allowed at element `i` whose simulated
    /// value is `sim`.
    pub fn allowed(&self, i: usize, sim: f64, elem: ScalarTy) -> f64 {
        let u = match elem {
            ScalarTy::F16 => 2f64.powi(-11),
            ScalarTy::BF16 => 2f64.powi(-8),
            ScalarTy::F32 => 2f64.powi(-24),
            _ => 2f64.powi(-53),
        };
        let m = self.magnitude.f(i).abs();
        let m = if m.is_finite() { m } else { 0.0 };
        4.0 * self.terms as f64 * u * m + self.ulps * floored_ulp(sim, elem)
    }
}

/// The opcode of a PTX instruction line, past any `@%p` guard.
fn instruction(line: &str) -> &str {
    let mut words = line.split_whitespace();
    let first = words.next().unwrap_or("");
    let op = if first.starts_with('@') {
        words.next().unwrap_or("")
    } else {
        first
    };
    op.trim_end_matches(';')
}

/// How one output tensor compared.
#[derive(Clone, Debug)]
pub struct TensorDiff {
    pub tensor: String,
    pub elem: ScalarTy,
    pub elements: usize,
    /// Elements whose bits differ (NaN against NaN counts as equal).
    pub differing: usize,
    /// The largest difference in floored ulps (0 for integers that agree;
    /// infinite for a NaN against a number or an integer mismatch).
    pub max_ulps: f64,
    /// The largest absolute difference.
    pub max_abs: f64,
    /// The first differing element: (flat index, simulator, runtime).
    pub first: Option<(usize, String, String)>,
    /// With a [`DotBound`]: the largest share of its bound a difference
    /// uses (≤ 1 within it; infinite for a NaN against a number).
    pub dot_share: Option<f64>,
}

/// One case's comparison.
#[derive(Clone, Debug)]
pub struct Record {
    pub kernel: String,
    pub entry: String,
    pub seed: u64,
    pub grid: [u32; 3],
    pub dims: Vec<(String, i64)>,
    /// Causes present in the PTX.
    pub causes: Vec<Cause>,
    pub tensors: Vec<TensorDiff>,
    /// A launch that failed on one side (simulator or runtime).
    pub error: Option<String>,
    /// Whether every tensor agreed within the tolerance of the causes.
    pub ok: bool,
    /// Where the inputs were saved (failures only).
    pub saved: Option<PathBuf>,
}

impl Record {
    /// The largest floored-ulp difference over the case's tensors.
    pub fn max_ulps(&self) -> f64 {
        self.tensors.iter().map(|t| t.max_ulps).fold(0.0, f64::max)
    }

    /// What explains the largest difference: `identical`, the causes
    /// within whose tolerance it lies, or `UNEXPLAINED`.
    pub fn explanation(&self) -> String {
        if let Some(e) = &self.error {
            return format!("launch failed: {e}");
        }
        if self.tensors.iter().all(|t| t.differing == 0) {
            return "identical".to_string();
        }
        if !self.ok {
            return "UNEXPLAINED".to_string();
        }
        let names: Vec<&str> = self.causes.iter().map(|c| c.name()).collect();
        names.join("+")
    }
}

static RECORDS: Mutex<Vec<Record>> = Mutex::new(Vec::new());
static SAVE_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Failing cases save their inputs and outputs under `dir`.
pub fn save_failures_to(dir: &Path) {
    *SAVE_DIR.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir.to_path_buf());
}

/// The records made since the last call, in order.
pub fn take_records() -> Vec<Record> {
    std::mem::take(&mut *RECORDS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The unit of the floored-ulp measure: the ulp of `max(|x|, 1)` in
/// `elem`'s precision.
fn floored_ulp(x: f64, elem: ScalarTy) -> f64 {
    let mantissa = match elem {
        ScalarTy::F16 => 10,
        ScalarTy::BF16 => 7,
        ScalarTy::F32 => 23,
        _ => 52,
    };
    let scale = x.abs().max(1.0);
    let exponent = scale.log2().floor() as i32;
    2f64.powi(exponent - mantissa)
}

/// Compares one tensor after the simulator's run (`sim`) and the
/// runtime's (`gpu`).
pub fn compare_tensor(name: &str, sim: &Tensor, gpu: &Tensor) -> TensorDiff {
    compare_within(name, sim, gpu, None)
}

/// [`compare_tensor`], and with `bound` each float difference measured
/// against its [`DotBound`] too.
pub fn compare_within(
    name: &str,
    sim: &Tensor,
    gpu: &Tensor,
    bound: Option<&DotBound>,
) -> TensorDiff {
    let elem = sim.elem;
    let mut d = TensorDiff {
        tensor: name.to_string(),
        elem,
        elements: sim.len(),
        differing: 0,
        max_ulps: 0.0,
        max_abs: 0.0,
        first: None,
        dot_share: bound.map(|_| 0.0),
    };
    let bound = bound.filter(|b| b.magnitude.len() == sim.len() && is_float(elem));
    if sim.bytes.len() != gpu.bytes.len() {
        d.dot_share = d.dot_share.map(|_| f64::INFINITY);
        d.differing = d.elements;
        d.max_ulps = f64::INFINITY;
        d.max_abs = f64::INFINITY;
        return d;
    }
    let width = crate::sim_support::elem_bytes(elem);
    for i in 0..sim.len() {
        let range = i * width..(i + 1) * width;
        if sim.bytes[range.clone()] == gpu.bytes[range] {
            continue;
        }
        let (ulps, abs, shown) = if is_float(elem) {
            let (a, b) = (sim.f(i), gpu.f(i));
            if a.is_nan() && b.is_nan() {
                continue;
            }
            let abs = (a - b).abs();
            let ulps = if abs.is_nan() || abs.is_infinite() {
                f64::INFINITY
            } else {
                abs / floored_ulp(a, elem)
            };
            (ulps, abs, (format!("{a:e}"), format!("{b:e}")))
        } else {
            let (a, b) = (sim.i(i), gpu.i(i));
            let abs = (a as f64 - b as f64).abs();
            (f64::INFINITY, abs, (a.to_string(), b.to_string()))
        };
        if let Some(share) = &mut d.dot_share {
            let allowed = bound.map_or(0.0, |b| b.allowed(i, sim.f(i), elem));
            let s = if ulps.is_finite() && allowed > 0.0 {
                abs / allowed
            } else {
                f64::INFINITY
            };
            *share = share.max(s);
        }
        d.differing += 1;
        d.max_ulps = d.max_ulps.max(ulps);
        d.max_abs = d.max_abs.max(abs);
        if d.first.is_none() {
            d.first = Some((i, shown.0, shown.1));
        }
    }
    d
}

/// Whether every tensor's difference lies within the tolerance of one of
/// the causes present, or (with [`Cause::Mma`]) within its [`DotBound`].
fn explained(tensors: &[TensorDiff], causes: &[Cause]) -> bool {
    tensors.iter().all(|t| {
        t.differing == 0
            || (is_float(t.elem)
                && (causes
                    .iter()
                    .any(|c| *c != Cause::Mma && t.max_ulps <= c.tolerance(t.elem))
                    || (causes.contains(&Cause::Mma) && t.dot_share.is_some_and(|s| s <= 1.0))))
    })
}

/// The largest ulp allowance of the causes other than [`Cause::Mma`], at
/// least 1 (the output's own rounding).
fn other_ulps(causes: &[Cause], elem: ScalarTy) -> f64 {
    causes
        .iter()
        .filter(|c| **c != Cause::Mma)
        .map(|c| c.tolerance(elem))
        .fold(1.0, f64::max)
}

impl Case {
    /// [`Case::run`] on both sides: the inputs prepared once, the
    /// simulator's and the runtime's outputs compared and recorded. Returns
    /// the runtime's outcome, which the case's reference then checks.
    /// Panics (after recording) when either side fails or they disagree.
    pub(crate) fn run_differential(mut self, grid: [u32; 3]) -> Outcome {
        // A run compiled for a target the device cannot load (a corpus
        // case's sm_90a or sm_89 run on an sm_86 GPU or stand-in) has no
        // device side to compare: it runs on the simulator alone, for the
        // case's reference, and leaves no record.
        let device = crate::executor::device().arch();
        if device.is_some_and(|d| !phobos_core::arch::runs_on(self.arch, d, false)) {
            return match self.launch(grid) {
                Ok(o) => o,
                Err(b) => {
                    let (o, e) = *b;
                    panic!("{} ({}) failed in the simulator:\n{e}", o.name, o.entry)
                }
            };
        }
        self.prepare();
        let magnitudes = self.magnitudes(grid, &causes(&self.kernel.ptx));
        let seed = current_seed();
        let causes = causes(&self.kernel.ptx);
        let mut record = Record {
            kernel: self.meta().name.clone(),
            entry: self.variant().entry.clone(),
            seed,
            grid,
            dims: self.dims.iter().map(|(n, v)| (n.clone(), *v)).collect(),
            causes,
            tensors: Vec::new(),
            error: None,
            ok: false,
            saved: None,
        };
        let sim =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.clone().launch(grid)));
        let gpu = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.clone().run_on_runtime(grid)
        }));
        let outcome = match (sim, gpu) {
            (Ok(Ok(sim)), Ok(gpu)) => {
                record.tensors = sim
                    .after
                    .iter()
                    .filter(|(name, t)| sim.before[*name] != **t || gpu.after[*name] != **t)
                    .filter(|(name, _)| !self.order_dependent.contains(name))
                    .map(|(name, t)| {
                        let bound = magnitudes.as_ref().and_then(|(terms, m)| {
                            Some(DotBound {
                                terms: *terms,
                                magnitude: m.get(name)?.clone(),
                                ulps: other_ulps(&record.causes, t.elem),
                            })
                        });
                        compare_within(name, t, &gpu.after[name], bound.as_ref())
                    })
                    .collect();
                record.ok = explained(&record.tensors, &record.causes);
                if !record.ok {
                    record.saved = save(&self, &record, Some((&sim, &gpu)));
                }
                Ok(gpu)
            }
            (Ok(Err(b)), _) => Err(format!("simulator: {}", b.1)),
            (Err(p), _) => Err(format!("simulator: {}", panic_text(&p))),
            (_, Err(p)) => Err(format!("runtime: {}", panic_text(&p))),
        };
        if let Err(e) = &outcome {
            record.error = Some(e.clone());
            record.saved = save(&self, &record, None);
        }
        let summary = format!(
            "{} ({}): {}",
            record.kernel,
            record.entry,
            record.explanation()
        );
        let ok = record.ok;
        RECORDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(record);
        match outcome {
            Ok(gpu) if ok => gpu,
            Ok(_) => panic!("the simulator and the runtime disagree: {summary}"),
            Err(e) => panic!("{e}"),
        }
    }
}

impl Case {
    /// For a kernel with [`Cause::Mma`]: the most terms of a dot product
    /// and each output's `Σ|a·b|`, from a simulator run on the absolute
    /// values of every float input and scalar ([`DotBound`]). `None`
    /// without the cause, or when that run fails (then no difference is
    /// allowed by it).
    fn magnitudes(
        &self,
        grid: [u32; 3],
        causes: &[Cause],
    ) -> Option<(usize, BTreeMap<String, Tensor>)> {
        if !causes.contains(&Cause::Mma) {
            return None;
        }
        let mut abs = self.clone();
        for t in abs.tensors.values_mut().filter(|t| is_float(t.elem)) {
            for i in 0..t.len() {
                if !t.is_poison(i) {
                    let v = t.f(i).abs();
                    t.set_f(i, v);
                }
            }
        }
        for s in abs.scalars.values_mut() {
            *s = abs_scalar(*s);
        }
        let terms = self
            .dims
            .values()
            .map(|v| (*v).max(0) as usize)
            .chain(self.tensors.values().flat_map(|t| t.shape.clone()))
            .max()
            .unwrap_or(1)
            .max(1);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| abs.launch(grid)));
        match run {
            Ok(Ok(o)) => Some((terms, o.after)),
            _ => None,
        }
    }
}

/// A float scalar's absolute value (a GEMM's `alpha`); others unchanged.
fn abs_scalar(s: Scalar) -> Scalar {
    match s {
        Scalar::F16(v) => Scalar::F16(half::f16::from_bits(v.to_bits() & 0x7fff)),
        Scalar::BF16(v) => Scalar::BF16(half::bf16::from_bits(v.to_bits() & 0x7fff)),
        Scalar::F32(v) => Scalar::F32(v.abs()),
        Scalar::F64(v) => Scalar::F64(v.abs()),
        other => other,
    }
}

/// The text of a panic payload.
pub fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".to_string())
}

/// Saves a failing case under the save directory, if one is set:
/// `case.txt` (kernel, variant, seed, grid, dims, scalars, how each tensor
/// compared), `kernel.ptx`, and per tensor `NAME.input.bin` and, when both
/// ran, `NAME.sim.bin` and `NAME.gpu.bin` (little-endian elements, the
/// type and shape in `case.txt`).
fn save(case: &Case, record: &Record, outputs: Option<(&Outcome, &Outcome)>) -> Option<PathBuf> {
    let root = SAVE_DIR.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    let dir = root.join(format!("{}-seed{:x}", record.entry, record.seed));
    std::fs::create_dir_all(&dir).ok()?;
    let mut text = String::new();
    let _ = writeln!(text, "kernel: {}\nvariant: {}", record.kernel, record.entry);
    let _ = writeln!(text, "seed: {:#x}\ngrid: {:?}", record.seed, record.grid);
    let _ = writeln!(text, "dims: {:?}\ntune: {:?}", record.dims, case.tune);
    let _ = writeln!(text, "scalars: {:?}", case.scalars);
    let _ = writeln!(text, "causes in the PTX: {:?}", record.causes);
    if let Some(e) = &record.error {
        let _ = writeln!(text, "error: {e}");
    }
    for (name, t) in &case.tensors {
        let _ = writeln!(text, "tensor {name}: {:?} {:?}", t.elem, t.shape);
        std::fs::write(dir.join(format!("{name}.input.bin")), &t.bytes).ok()?;
    }
    for t in &record.tensors {
        let _ = writeln!(
            text,
            "compare {}: {} of {} differ, max {} floored ulps, max abs {:e}, first {:?}",
            t.tensor, t.differing, t.elements, t.max_ulps, t.max_abs, t.first
        );
    }
    if let Some((sim, gpu)) = outputs {
        for (name, t) in &sim.after {
            std::fs::write(dir.join(format!("{name}.sim.bin")), &t.bytes).ok()?;
            std::fs::write(dir.join(format!("{name}.gpu.bin")), &gpu.after[name].bytes).ok()?;
        }
    }
    std::fs::write(dir.join("kernel.ptx"), &case.kernel.ptx).ok()?;
    std::fs::write(dir.join("case.txt"), text).ok()?;
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Tensor {
        Tensor::from_f32(&[v.len()], v)
    }

    fn ulps_up(x: f32, n: u32) -> f32 {
        f32::from_bits(x.to_bits() + n)
    }

    #[test]
    fn integers_must_agree_bit_for_bit() {
        let a = Tensor::from_i32(&[3], &[1, 2, 3]);
        let b = Tensor::from_i32(&[3], &[1, 2, 4]);
        let d = compare_tensor("C", &a, &b);
        assert_eq!((d.differing, d.max_abs), (1, 1.0));
        assert!(d.max_ulps.is_infinite());
        let all = [Cause::Approx, Cause::FmaContraction, Cause::SummationOrder];
        assert!(!explained(&[d], &all));
        assert_eq!(compare_tensor("C", &a, &a).differing, 0);
    }

    #[test]
    fn floats_are_measured_in_floored_ulps_and_allowed_only_by_a_cause() {
        // 3 ulps at 1.5: explained by approx, not without a cause.
        let d = compare_tensor("y", &f32s(&[1.5, 0.25]), &f32s(&[ulps_up(1.5, 3), 0.25]));
        assert_eq!((d.differing, d.max_ulps), (1, 3.0));
        assert!(explained(std::slice::from_ref(&d), &[Cause::Approx]));
        assert!(!explained(std::slice::from_ref(&d), &[]));
        // Below 1 the unit is the ulp of 1: 8 ulps of 0.25 are 2 floored ulps.
        let d = compare_tensor("y", &f32s(&[0.25]), &f32s(&[ulps_up(0.25, 8)]));
        assert_eq!(d.max_ulps, 2.0);
        // 100 floored ulps: beyond approx (16) and fma (64), within order (256).
        let d = compare_tensor("y", &f32s(&[2.0]), &f32s(&[ulps_up(2.0, 100)]));
        let one = std::slice::from_ref(&d);
        assert!(!explained(one, &[Cause::Approx, Cause::FmaContraction]));
        assert!(explained(one, &[Cause::SummationOrder]));
    }

    #[test]
    fn nans_agree_whatever_their_payload_but_never_with_a_number() {
        let nan_a = f32::from_bits(0x7fc0_0000);
        let nan_b = f32::from_bits(0xffff_ffff);
        assert_eq!(
            compare_tensor("y", &f32s(&[nan_a]), &f32s(&[nan_b])).differing,
            0
        );
        let d = compare_tensor("y", &f32s(&[nan_a]), &f32s(&[1.0]));
        assert!(d.max_ulps.is_infinite());
        assert!(!explained(&[d], &[Cause::SummationOrder]));
    }

    #[test]
    fn causes_are_read_from_the_instructions() {
        assert_eq!(
            causes("\tex2.approx.ftz.f32 %f2, %f1;"),
            vec![Cause::Approx]
        );
        assert_eq!(
            causes("\tmul.f32 %f3, %f1, %f2;"),
            vec![Cause::FmaContraction]
        );
        assert_eq!(
            causes("\t@%p1 mul.f64 %fd3, %fd1, %fd2;"),
            vec![Cause::FmaContraction]
        );
        assert_eq!(
            causes("\tmul.rn.f32 %f3, %f1, %f2;\n\tmul.lo.s32 %r1, %r2, %r3;"),
            vec![]
        );
        assert_eq!(
            causes("\tatom.global.add.f32 %f1, [%rd1], %f2;"),
            vec![Cause::SummationOrder]
        );
        assert_eq!(causes("\tatom.global.add.u32 %r1, [%rd1], 1;"), vec![]);
    }

    /// A 16 × 8 output of a K-term f32-accumulated product, two ways: the
    /// simulator's (exact in f64, rounded once to f32) and a tensor core's
    /// as the ISA allows it (summed backwards in f32, each addition
    /// truncated toward zero), with `Σ|a·b|` per output.
    fn mma_outputs(k: usize) -> (Vec<f32>, Vec<f32>, Tensor) {
        let (mut sim, mut gpu, mut mag) = (Vec::new(), Vec::new(), Vec::new());
        let a = |r: usize, x: usize| ((r * 31 + x * 17) % 97) as f64 / 48.5 - 1.0;
        let b = |x: usize, c: usize| ((x * 13 + c * 7 + 5) % 89) as f64 / 44.5 - 1.0;
        for r in 0..16 {
            for c in 0..8 {
                let terms: Vec<f64> = (0..k).map(|x| a(r, x) * b(x, c)).collect();
                sim.push(terms.iter().sum::<f64>() as f32);
                let mut acc = 0f32;
                for t in terms.iter().rev() {
                    let exact = f64::from(acc) + t;
                    let mut v = exact as f32;
                    if f64::from(v).abs() > exact.abs() {
                        v = f32::from_bits(v.to_bits() - 1);
                    }
                    acc = v;
                }
                gpu.push(acc);
                mag.push(terms.iter().map(|t| t.abs()).sum::<f64>() as f32);
            }
        }
        (sim, gpu, f32s(&mag))
    }

    fn dot_bound(k: usize, magnitude: Tensor) -> DotBound {
        DotBound {
            terms: k,
            magnitude,
            ulps: 1.0,
        }
    }

    #[test]
    fn causes_read_float_tensor_core_products_but_not_integer_ones() {
        assert_eq!(
            causes("\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};"),
            vec![Cause::Mma]
        );
        assert_eq!(
            causes("\tmma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%r1, %r2}, {%r3, %r4}, {%r5}, {%r1, %r2};"),
            vec![Cause::Mma]
        );
        assert_eq!(
            causes("\tmma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r1, %r2, %r3, %r4}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%r1, %r2, %r3, %r4};"),
            vec![]
        );
    }

    #[test]
    fn a_tensor_core_sum_within_the_dot_product_bound_is_explained() {
        // Today's hardware differs from the simulator in the last bits of
        // a K-term product (the ISA leaves order and rounding open): that
        // must not be UNEXPLAINED.
        let k = 64;
        let (sim, gpu, mag) = mma_outputs(k);
        let bound = dot_bound(k, mag);
        let d = compare_within("C", &f32s(&sim), &f32s(&gpu), Some(&bound));
        assert!(d.differing > 0, "the two sums should differ somewhere");
        assert!(d.max_ulps > 1.0);
        let share = d.dot_share.expect("a bound was given");
        assert!(share <= 1.0, "within the bound: share {share}");
        assert!(explained(std::slice::from_ref(&d), &[Cause::Mma]));
        // Without the cause (the PTX has no mma) nothing excuses it.
        assert!(!explained(std::slice::from_ref(&d), &[]));
    }

    #[test]
    fn a_wrong_fragment_or_a_lost_k_step_is_beyond_the_bound() {
        let k = 64;
        let (sim, gpu, mag) = mma_outputs(k);
        let bound = dot_bound(k, mag);
        // Rows 8..16 of the tile stored from rows 0..8 (a broken store of
        // a fragment's lower half).
        let mut wrong = gpu.clone();
        wrong[64..128].copy_from_slice(&gpu[..64]);
        let d = compare_within("C", &f32s(&sim), &f32s(&wrong), Some(&bound));
        assert!(d.dot_share.unwrap() > 1.0);
        assert!(!explained(&[d], &[Cause::Mma]));
        // One mma step of 16 terms dropped from every output.
        let (short, _, _) = mma_outputs(k - 16);
        let d = compare_within("C", &f32s(&sim), &f32s(&short), Some(&bound));
        assert!(d.dot_share.unwrap() > 1.0);
        assert!(!explained(&[d], &[Cause::Mma]));
        // Without the magnitudes the cause excuses nothing.
        let d = compare_within("C", &f32s(&sim), &f32s(&gpu), None);
        assert!(!explained(&[d], &[Cause::Mma]));
    }

    #[test]
    fn the_magnitude_run_gives_each_output_its_sum_of_absolute_products() {
        let (m, n, k) = (70usize, 45usize, 41usize);
        let mut case = Case::corpus_for("mma_gemm_bf16", 80).dims(&[
            ("M", m as i64),
            ("N", n as i64),
            ("K", k as i64),
        ]);
        case.prepare();
        let grid = [
            crate::sim_support::cdiv(m, 64),
            crate::sim_support::cdiv(n, 32),
            1,
        ];
        let (terms, after) = case
            .magnitudes(grid, &causes(&case.kernel.ptx))
            .expect("the kernel has mma.sync and the run succeeds");
        assert_eq!(terms, 70);
        let (a, b, c) = (&case.tensors["A"], &case.tensors["B"], &after["C"]);
        for r in 0..m {
            for col in 0..n {
                let want: f64 = (0..k)
                    .map(|x| (a.f(r * k + x) * b.f(x * n + col)).abs())
                    .sum();
                let got = c.f(r * n + col);
                assert!(
                    (got - want).abs() <= want * 2f64.powi(-20),
                    "C[{r}, {col}]: {got} against {want}"
                );
            }
        }
    }
}
