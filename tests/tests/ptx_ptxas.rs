//! Every corpus kernel, compiled for each supported target, is accepted by
//! NVIDIA's ptxas for that target. Without ptxas the test is skipped with a
//! message, except under `CI=true`, where a missing ptxas fails it.

use phobos_conformance::{assemble, compile, corpus, ptxas_or_skip};

#[test]
fn ptxas_accepts_every_corpus_kernel_for_every_target() {
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    let mut jobs = Vec::new();
    for f in corpus() {
        for arch in f.arches() {
            let ptx: String = compile(&f, arch).iter().map(|k| k.ptx.as_str()).collect();
            jobs.push((f.name.clone(), arch, ptx));
        }
    }
    let failures: Vec<String> = std::thread::scope(|s| {
        let chunks: Vec<_> = jobs.chunks(jobs.len().div_ceil(4).max(1)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let ptxas = &ptxas;
                s.spawn(move || {
                    let mut bad = Vec::new();
                    for (name, arch, ptx) in chunk {
                        if let Err(e) = assemble(ptxas, name, *arch, ptx) {
                            let target = phobos_core::arch::name(*arch);
                            bad.push(format!("{name} {target}:\n{e}"));
                        }
                    }
                    bad
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "ptxas rejected:\n{}",
        failures.join("\n")
    );
}
