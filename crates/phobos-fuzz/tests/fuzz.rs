//! The fuzzer's own tests: a fixed seed range agrees (the CI run), and the
//! fuzzer finds a miscompile planted in the backend.

use phobos_fuzz::diff::Verdict;
use phobos_fuzz::{fuzz, Config};

/// The CI run: a fixed seed for a bounded count (about a minute in the
/// test profile on a CI machine).
#[test]
fn fixed_seed_range_has_no_mismatches() {
    let r = fuzz(&Config {
        seed: 200_000,
        count: COUNT,
        ..Config::default()
    });
    let shown: Vec<String> = r
        .findings
        .iter()
        .map(|f| format!("seed {}: {:?}\n{}", f.seed, f.minimized_verdict, f.minimized.src))
        .collect();
    assert!(shown.is_empty(), "{}", shown.join("\n\n"));
    assert_eq!(r.programs, COUNT);
}

const COUNT: u64 = 4000;

/// With the planted bug (`shfl<down c, width w>` loses its segment clamp)
/// the fuzzer reports a mismatch, minimized to a program with a shuffle;
/// with the switch off the same seeds agree.
#[test]
fn planted_shuffle_clamp_bug_is_found() {
    let cfg = Config {
        seed: PLANTED_SEED,
        count: 40,
        ..Config::default()
    };
    phobos_core::backend::set_planted_bug(true);
    let on = fuzz(&cfg);
    phobos_core::backend::set_planted_bug(false);
    let off = fuzz(&cfg);
    assert!(
        on.findings
            .iter()
            .any(|f| matches!(f.minimized_verdict, Verdict::Mismatch(_))
                && f.minimized.src.contains("shfl<down")),
        "the planted bug went unnoticed: {:?}",
        on.findings.iter().map(|f| &f.verdict).collect::<Vec<_>>()
    );
    assert!(off.findings.is_empty(), "{:?}", off.findings);
}

const PLANTED_SEED: u64 = 0;
