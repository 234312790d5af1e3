//! Every corpus kernel compiles for sm_75 (or the target its `// needs:
//! sm_N` header names), and its PTX and metadata equal the checked-in
//! snapshots under `tests/snapshots` (`NAME.sm_75.ptx` or `NAME.sm_N.ptx`,
//! `NAME.ron`). Any difference fails; `PHOBOS_BLESS=1 cargo test -p
//! phobos-conformance` rewrites them for review.

use phobos_conformance::{check_snapshot, compile, corpus, grid_comment, root};

#[test]
fn corpus_has_at_least_forty_kernels_with_headers() {
    let files = corpus();
    let kernels: usize = files.iter().map(|f| compile(f, f.min_arch()).len()).sum();
    assert!(kernels >= 40, "the corpus has only {kernels} kernels");
    for f in &files {
        let grid = grid_comment(f);
        assert!(
            grid.as_deref().is_some_and(|g| g.contains("shapes:")),
            "{}.pho needs a header `// grid: ...; shapes: ...`",
            f.name
        );
    }
}

#[test]
fn ptx_and_metadata_match_snapshots() {
    let dir = root().join("snapshots");
    let mut failures = Vec::new();
    for f in corpus() {
        // sm_75, or the oldest target the file needs.
        let arch = f.min_arch();
        let kernels = compile(&f, arch);
        let ptx: String = kernels.iter().map(|k| k.ptx.as_str()).collect();
        if let Some(d) = check_snapshot(
            &dir.join(format!("{}.{}.ptx", f.name, phobos_core::arch::name(arch))),
            &ptx,
        ) {
            failures.push(d);
        }
        let metas: Vec<&phobos_core::meta::KernelMeta> = kernels.iter().map(|k| &k.meta).collect();
        let ron = ron::ser::to_string_pretty(&metas, ron::ser::PrettyConfig::default())
            .expect("metadata serializes");
        if let Some(d) = check_snapshot(&dir.join(format!("{}.ron", f.name)), &ron) {
            failures.push(d);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn metadata_round_trips_through_ron() {
    for f in corpus() {
        for k in compile(&f, f.min_arch()) {
            let text = ron::to_string(&k.meta).expect("serializes");
            let back: phobos_core::meta::KernelMeta = ron::from_str(&text).expect("parses back");
            assert_eq!(back, k.meta, "{}", f.name);
        }
    }
}
