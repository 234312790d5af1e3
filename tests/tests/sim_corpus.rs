//! Every corpus kernel (`tests/in/*.pho`, the seed kernels among them) run
//! in the simulator on random inputs and compared with a Rust reference
//! written from the kernel's meaning (its header comment and the language
//! page), never from the simulator's output. See
//! `phobos_conformance::sim_support` for the harness: outputs poisoned
//! before the run, integers compared exactly, floats within relative error
//! 1e-5 of an f64 reference with an absolute floor.
//!
//! Shapes have ragged edges where the kernel allows them: rows not a
//! multiple of the warps per CTA, tiles past the tensor's end, grids that
//! overshoot by a CTA or more.
//!
//! The table at the bottom (`corpus_table!`) lists every corpus file with
//! its reference; `every_corpus_file_has_a_reference` fails when a file is
//! added to `tests/in` without one (or a reference names a missing file).
//! The cases themselves live in `phobos_conformance::corpus_cases`, which
//! the GPU bundle's differential runner (`phobos-diff`) shares.

use phobos_conformance::corpus;
use phobos_conformance::corpus_cases::*;
use phobos_conformance::sim_support::{cdiv, with_seed, Case};

fn g1(x: u32) -> [u32; 3] {
    [x, 1, 1]
}

/// One `#[test]` per corpus file on the default executor
/// (`PHOBOS_SUITE_EXECUTOR`), one through the runtime's `Device` (its
/// simulator backend here; the GPU or the CUDA driver stand-in when
/// `PHOBOS_BACKEND=cuda`), and the table of them.
macro_rules! corpus_table {
    ($($name:ident),* $(,)?) => {
        const TABLE: &[(&str, fn())] = &[$((stringify!($name), $name)),*];
        mod each {
            $(#[test] fn $name() { super::$name() })*
        }
        mod through_the_runtime {
            use phobos_conformance::executor::{with_executor, Executor};
            $(#[test] fn $name() { with_executor(Executor::Runtime, super::$name) })*
        }
    };
}

phobos_conformance::corpus_cases!(corpus_table);

#[test]
fn every_corpus_kernel_on_more_seeds() {
    // The same references on three more sets of random inputs.
    for seed in [11, 12, 13] {
        for (name, f) in TABLE {
            let r = std::panic::catch_unwind(|| with_seed(seed, f));
            assert!(r.is_ok(), "{name} failed with seed {seed}");
        }
    }
}

#[test]
fn every_corpus_file_has_a_reference() {
    let files: Vec<String> = corpus().into_iter().map(|f| f.name).collect();
    let table: Vec<&str> = TABLE.iter().map(|(n, _)| *n).collect();
    let missing: Vec<&String> = files
        .iter()
        .filter(|f| !table.contains(&f.as_str()))
        .collect();
    let stale: Vec<&&str> = table
        .iter()
        .filter(|t| !files.iter().any(|f| f == *t))
        .collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "corpus files without a simulator reference in tests/tests/sim_corpus.rs: {missing:?}; \
         references without a corpus file: {stale:?}"
    );
}

#[test]
fn the_runtime_executor_really_runs_through_the_runtime() {
    // PTX that does not assemble: the runtime's module load refuses it
    // with a LaunchError, which only the runtime path reports this way.
    use phobos_conformance::executor::{with_executor, Executor};
    let r = std::panic::catch_unwind(|| {
        with_executor(Executor::Runtime, || {
            let mut case = Case::corpus("vec_add").dims(&[("N", 1000)]);
            case.kernel.ptx = case.kernel.ptx.replace(".entry", ".entri");
            case.run(g1(8))
        })
    });
    let message = r
        .err()
        .and_then(|p| p.downcast_ref::<String>().cloned())
        .expect("broken PTX fails the launch");
    assert!(message.contains("failed on the runtime"), "{message}");
}

#[test]
fn the_harness_catches_an_unwritten_output() {
    // vec_add over a grid one CTA short leaves the last 128 outputs
    // poisoned: the comparison must fail and say so.
    let n = 1000;
    let o = Case::corpus("vec_add")
        .dims(&[("N", n as i64)])
        .run(g1(cdiv(n, 128) - 1));
    let (a, b) = (o.input("A"), o.input("B"));
    let mut c = o.expect("C");
    for i in 0..n {
        c.set_f(i, a.f(i) + b.f(i));
    }
    let err = o
        .compare("C", &c)
        .expect_err("the poisoned tail must be caught");
    assert!(
        err.contains("104 of 1000") && err.contains("poison"),
        "{err}"
    );
}

#[test]
fn the_differential_executor_compares_both_sides_and_names_the_cause() {
    // The simulator side runs the worst-case `.approx` model, the runtime
    // side (here its simulator backend, exact) does not: a planted
    // last-bit difference in `ex2.approx`, which only `approx` explains.
    use phobos_conformance::differential::{take_records, Cause};
    use phobos_conformance::executor::{with_executor, Executor};
    with_executor(Executor::Differential, || {
        let mut case = Case::corpus("cta_softmax").dims(&[("N", 3), ("M", 300)]);
        case.opts.approx = phobos_sim::Approx::WorstCase;
        case.run(g1(3))
    });
    let records: Vec<_> = take_records()
        .into_iter()
        .filter(|r| r.kernel == "cta_softmax" && r.dims.contains(&("M".to_string(), 300)))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert!(r.ok && r.error.is_none(), "{r:?}");
    assert!(r.causes.contains(&Cause::Approx), "{r:?}");
    let y = r
        .tensors
        .iter()
        .find(|t| t.tensor == "Y")
        .expect("Y compared");
    assert!(
        y.differing > 0 && y.max_ulps > 0.0,
        "the planted difference is seen: {y:?}"
    );
    assert!(y.max_ulps <= Cause::Approx.tolerance(y.elem), "{y:?}");
    assert!(r.explanation().contains("approx"), "{}", r.explanation());
}

#[test]
fn a_failing_differential_case_is_recorded_and_its_inputs_saved() {
    use phobos_conformance::differential::{save_failures_to, take_records};
    use phobos_conformance::executor::{with_executor, Executor};
    let dir = std::env::temp_dir().join(format!("phobos-diff-test-{}", std::process::id()));
    save_failures_to(&dir);
    let r = std::panic::catch_unwind(|| {
        with_executor(Executor::Differential, || {
            let mut case = Case::corpus("vec_add").dims(&[("N", 77)]);
            case.kernel.ptx = case.kernel.ptx.replace(".entry", ".entri");
            case.run(g1(2))
        })
    });
    assert!(r.is_err(), "a case that cannot launch fails");
    let records: Vec<_> = take_records()
        .into_iter()
        .filter(|r| r.kernel == "vec_add" && r.dims.contains(&("N".to_string(), 77)))
        .collect();
    assert_eq!(records.len(), 1);
    let saved = records[0].saved.clone().expect("the inputs were saved");
    let text = std::fs::read_to_string(saved.join("case.txt")).expect("case.txt");
    assert!(
        text.contains("kernel: vec_add") && text.contains("error: simulator"),
        "{text}"
    );
    assert!(saved.join("A.input.bin").is_file() && saved.join("kernel.ptx").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}
