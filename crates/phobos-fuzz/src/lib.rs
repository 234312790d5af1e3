//! phobos-fuzz: the random-program differential tester. A seeded generator
//! (`gen`) writes valid, race-free, deterministic kernels (`program`); each
//! is checked by phobos-core, executed by the reference evaluator of the
//! checked HIR (`eval`, over the scalar semantics in `value`), compiled to
//! PTX and run in phobos-sim (`diff`); a disagreement is shrunk
//! (`minimize`) and saved under `tests/fuzz-cases/`. Mutated programs go
//! through `check` and must give diagnostics, never a panic (`mutate`).

pub mod diff;
pub mod eval;
pub mod gen;
pub mod minimize;
pub mod mutate;
pub mod program;
pub mod value;

use std::path::{Path, PathBuf};

/// A finding, minimized.
#[derive(Clone, Debug)]
pub struct Finding {
    pub seed: u64,
    pub verdict: diff::Verdict,
    pub minimized: diff::Case,
    pub minimized_verdict: diff::Verdict,
}

/// What a fuzzing run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub programs: u64,
    /// Programs the evaluator refused (undefined results): not findings.
    pub undefined: u64,
    /// How often each reason for refusing came up (first words of it).
    pub undefined_reasons: std::collections::BTreeMap<String, u64>,
    /// Programs with an index out of bounds that the simulator reported.
    pub caught: u64,
    pub mutants: u64,
    pub ptxas_runs: u64,
    pub findings: Vec<Finding>,
}

/// Where and how to fuzz.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub seed: u64,
    pub count: u64,
    pub features: gen::Features,
    pub run: diff::RunOptions,
    /// Save each minimized finding here as `seed-<S>.pho`.
    pub save: Option<PathBuf>,
    /// Assemble every `ptxas_every`-th program with this ptxas for every
    /// target in `phobos_core::ARCHES`.
    pub ptxas: Option<PathBuf>,
    pub ptxas_every: u64,
}

/// Generate and run `count` programs from `seed` on.
pub fn fuzz(cfg: &Config) -> Report {
    let mut r = Report::default();
    for i in 0..cfg.count {
        let s = cfg.seed.wrapping_add(i);
        let p = gen::generate(s, &cfg.features);
        r.programs += 1;
        let mut v = diff::run(&p, s, &cfg.run);
        if let diff::Verdict::Undefined(why) = &v {
            r.undefined += 1;
            let key: String = why.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
            *r.undefined_reasons.entry(key).or_default() += 1;
        }
        if let diff::Verdict::Caught(_) = &v {
            r.caught += 1;
        }
        let src = p.render();
        let mutant = mutate::mutate(&src, s);
        r.mutants += 1;
        if let Err(msg) = mutate::check_mutant(&mutant) {
            v = diff::Verdict::Failed(format!("check panicked on a mutant: {msg}\n{mutant}"));
        }
        if let Some(ptxas) = &cfg.ptxas {
            if cfg.ptxas_every > 0 && i % cfg.ptxas_every == 0 && !v.is_finding() {
                r.ptxas_runs += 1;
                if let Err(e) = assemble_all(ptxas, &src) {
                    v = diff::Verdict::Failed(e);
                }
            }
        }
        if v.is_finding() {
            let (m, mv) = minimize::minimize(&p, s, &cfg.run);
            let case = diff::Case::of(&m, s);
            if let Some(dir) = &cfg.save {
                let _ = std::fs::create_dir_all(dir);
                let _ = std::fs::write(
                    dir.join(format!("seed-{s}.pho")),
                    case.to_file(&format!("{mv:?}")),
                );
            }
            r.findings.push(Finding {
                seed: s,
                verdict: v,
                minimized: case,
                minimized_verdict: mv,
            });
        }
    }
    r
}

/// Compile `src` for every target and assemble each PTX with ptxas.
pub fn assemble_all(ptxas: &Path, src: &str) -> Result<(), String> {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("phobos-fuzz-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = assemble_in(ptxas, src, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn assemble_in(ptxas: &Path, src: &str, dir: &Path) -> Result<(), String> {
    for arch in phobos_core::ARCHES {
        let (k, _) =
            phobos_core::compile(src, "fz.pho", &phobos_core::CompileOptions::for_arch(arch));
        let Some(k) = k.first() else {
            return Err(format!(
                "{}: does not compile",
                phobos_core::arch::name(arch)
            ));
        };
        let path = dir.join(format!("fz_{arch}.ptx"));
        std::fs::write(&path, &k.ptx).map_err(|e| e.to_string())?;
        let out = std::process::Command::new(ptxas)
            .arg(format!("-arch={}", phobos_core::arch::name(arch)))
            .arg(&path)
            .arg("-o")
            .arg(dir.join(format!("fz_{arch}.cubin")))
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "ptxas {}: {}",
                phobos_core::arch::name(arch),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}
