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
//!   tolerance. Anything else is a bug in the simulator or in the backend:
//!   the record fails, and the inputs and both outputs are saved (see
//!   [`save_failures_to`]) so that the case can become a regression test.
//!
//! This module decides agreement and records it; what runs the cases and
//! reports them is the GPU bundle's `phobos-diff` (crates/phobos-gpucheck).

use crate::sim_support::{current_seed, is_float, Case, Outcome, Tensor};
use phobos_core::ast::ScalarTy;
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
}

impl Cause {
    /// The name results and docs use.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Approx => "approx",
            Cause::FmaContraction => "fma",
            Cause::SummationOrder => "order",
        }
    }

    /// The largest difference, in floored ulps of the output's type, this
    /// cause explains (docs/benchmarks.md, "How to read the GPU bundle's
    /// results"). f16 and bf16 outputs are rounded from wider arithmetic
    /// or computed in few steps, so they get a much smaller allowance.
    pub fn tolerance(self, elem: ScalarTy) -> f64 {
        let narrow = matches!(elem, ScalarTy::F16 | ScalarTy::BF16);
        match (self, narrow) {
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
    out
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
    let elem = sim.elem;
    let mut d = TensorDiff {
        tensor: name.to_string(),
        elem,
        elements: sim.len(),
        differing: 0,
        max_ulps: 0.0,
        max_abs: 0.0,
        first: None,
    };
    if sim.bytes.len() != gpu.bytes.len() {
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
/// the causes present.
fn explained(tensors: &[TensorDiff], causes: &[Cause]) -> bool {
    tensors.iter().all(|t| {
        t.differing == 0
            || (is_float(t.elem) && causes.iter().any(|c| t.max_ulps <= c.tolerance(t.elem)))
    })
}

impl Case {
    /// [`Case::run`] on both sides: the inputs prepared once, the
    /// simulator's and the runtime's outputs compared and recorded. Returns
    /// the runtime's outcome, which the case's reference then checks.
    /// Panics (after recording) when either side fails or they disagree.
    pub(crate) fn run_differential(mut self, grid: [u32; 3]) -> Outcome {
        self.prepare();
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
                    .map(|(name, t)| compare_tensor(name, t, &gpu.after[name]))
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
}
