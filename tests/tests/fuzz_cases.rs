//! Every minimized case the fuzzer saved under `tests/fuzz-cases/` runs
//! through the compiler and simulator and through phobos-fuzz's reference
//! evaluator, and the two must agree (every finding saved there is fixed;
//! the two `barrier-in-*` cases were the last known ones). In an `oob-*`
//! case the evaluator finds an index out of bounds, and the simulator must
//! report it (`Verdict::Caught`), not run on. Generated
//! programs are also assembled by ptxas for every target (skipped without
//! ptxas, except under CI).

use phobos_fuzz::diff::{run_case, Case, RunOptions, Verdict};
use std::path::PathBuf;

fn cases() -> Vec<(PathBuf, Case)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz-cases");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).expect("tests/fuzz-cases") {
        let path = e.expect("entry").path();
        if path.extension().is_some_and(|x| x == "pho") {
            let text = std::fs::read_to_string(&path).expect("read case");
            let case = Case::from_file(&text)
                .unwrap_or_else(|| panic!("{} has no case header", path.display()));
            out.push((path, case));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn saved_fuzz_cases_agree() {
    let cs = cases();
    assert!(cs.len() >= 3, "the saved fuzz cases are missing");
    for (path, case) in cs {
        let v = run_case(&case, &RunOptions::default());
        let oob = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("oob-"));
        if oob {
            assert!(matches!(v, Verdict::Caught(_)), "{}: {v:?}", path.display());
        } else {
            assert_eq!(v, Verdict::Agree, "{}", path.display());
        }
    }
}

#[test]
fn generated_programs_assemble_for_every_target() {
    let Some(ptxas) = phobos_conformance::find_ptxas() else {
        assert!(
            !phobos_conformance::in_ci(),
            "ptxas not found (set PHOBOS_PTXAS); CI requires it"
        );
        eprintln!("skipping: ptxas not found (set PHOBOS_PTXAS to run this test)");
        return;
    };
    let feat = phobos_fuzz::gen::Features::default();
    for seed in 0..24 {
        let src = phobos_fuzz::gen::generate(seed, &feat).render();
        if let Err(e) = phobos_fuzz::assemble_all(&ptxas, &src) {
            panic!("seed {seed}: {e}\n{src}");
        }
    }
}
