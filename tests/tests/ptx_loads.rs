//! Loads are not repeated (issue 14, item 5): in the int4 GEMV of the
//! corpus, each of the eight `nib(Wq[row, g], j)` calls binds its argument
//! once and the eight `elem(x[0, g * 8 :+ 8], j)` read one run, so the
//! PTX has at most twice the ideal number of global loads: per copy of the
//! loop body (the backend unrolls it), one packed word, one scale and the
//! run of eight floats as two 16-byte loads. Before loads were reused
//! within a statement's straight-line code it had 225 where 36 suffice.

use phobos_conformance::{compile, corpus_file};

fn count(ptx: &str, op: &str) -> usize {
    ptx.lines()
        .filter(|l| l.trim_start().starts_with(op))
        .count()
}

#[test]
fn the_int4_gemv_has_at_most_twice_the_ideal_global_loads() {
    for arch in phobos_core::ARCHES {
        let sm = phobos_core::arch::name(arch);
        let ptx: String = compile(&corpus_file("int4_gemv"), arch)
            .iter()
            .map(|k| k.ptx.clone())
            .collect();
        // The scale `S[row, g / 16]` is written once in the body: one load
        // per copy of the body.
        let copies = count(&ptx, "ld.global.nc.f32 ");
        assert!(copies >= 1, "no scale load:\n{ptx}");
        let ideal = copies * 4;
        let loads = count(&ptx, "ld.global");
        eprintln!("{sm}: {loads} global loads, ideal {ideal} ({copies} body copies)");
        assert!(
            loads <= 2 * ideal,
            "{sm}: {loads} global loads, more than twice the ideal {ideal}"
        );
        // The run of x is loaded whole, 16 bytes at a time.
        assert_eq!(count(&ptx, "ld.global.nc.v4.f32"), 2 * copies, "{sm}");
    }
}
