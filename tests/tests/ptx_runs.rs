//! Math on runs (issue 14, item 4): a computed run is stored as a whole.
//! The GELU and softmax kernels of the corpus store each thread's run of
//! four floats with one `st.global.v4.f32` on every target, a computed run
//! argument of a `fn` is computed once however often the body names it,
//! and a run store whose alignment is not proven falls back to narrower
//! stores with the reason in the metadata (what `phobos report` prints).

use phobos_conformance::sim_support::{Case, Gen};
use phobos_conformance::{compile, corpus_file};
use phobos_core::CompileOptions;

/// Instructions of `ptx` whose opcode starts with `op`.
fn count(ptx: &str, op: &str) -> usize {
    ptx.lines()
        .map(str::trim_start)
        .map(|l| {
            l.strip_prefix('@')
                .map_or(l, |p| p.split_once(' ').map_or("", |x| x.1))
        })
        .filter(|l| l.starts_with(op))
        .count()
}

fn corpus_ptx(name: &str, arch: u32) -> String {
    compile(&corpus_file(name), arch)
        .iter()
        .map(|k| k.ptx.clone())
        .collect()
}

#[test]
fn gelu_and_softmax_store_their_runs_with_st_global_v4() {
    for arch in phobos_core::ARCHES {
        let sm = phobos_core::arch::name(arch);
        // One 16-byte load and one 16-byte store per thread: `gelu` takes
        // the run and returns the run.
        let gelu = corpus_ptx("run_gelu", arch);
        assert_eq!(count(&gelu, "st.global.v4.f32"), 1, "{sm}:\n{gelu}");
        assert_eq!(count(&gelu, "st.global"), 1, "{sm}: a scalar store");
        assert_eq!(count(&gelu, "ld.global.nc.v4.f32"), 1, "{sm}");
        assert_eq!(count(&gelu, "ld.global"), 1, "{sm}");
        // Softmax: every store of the normalized rows is a whole run (the
        // backend unrolls the row loop, so there is one per copy), and
        // every load of X is a 16-byte one.
        let softmax = corpus_ptx("run_softmax", arch);
        let v4 = count(&softmax, "st.global.v4.f32");
        assert!(v4 >= 1, "{sm}: no st.global.v4.f32:\n{softmax}");
        assert_eq!(count(&softmax, "st.global"), v4, "{sm}: a scalar store");
        assert_eq!(
            count(&softmax, "ld.global"),
            count(&softmax, "ld.global.nc.v4.f32"),
            "{sm}"
        );
        eprintln!("{sm}: run_softmax has {v4} st.global.v4.f32");
    }
}

fn compile_src(src: &str) -> phobos_core::CompiledKernel {
    let (mut kernels, diags) = phobos_core::compile(src, "k.pho", &CompileOptions::for_arch(80));
    assert!(
        !diags.iter().any(|d| d.is_error()),
        "{}",
        phobos_core::render::render(&diags, "k.pho", src, false)
    );
    kernels.remove(0)
}

const CUBES: &str = "fn cube(x) = x * x * x
@launch(64)
@aligned(K = 4)
kernel k(X: tensor<f32>[N, K], Y: tensor<f32>[N, K]) {
  let t = ctx.block.x * ctx.threads + ctx.thread
  let r = t / (K / 4)
  let j = (t % (K / 4)) * 4
  if r < N {
    Y[r, j :+ 4] = cube(cube(X[r, j :+ 4] + 0.5) * 0.5)
  }
}
";

#[test]
fn a_computed_run_argument_is_computed_once() {
    // Ideal: 4 additions, then 8 products for the inner cube, 4 for the
    // halving and 8 for the outer cube. Substituting the argument instead
    // would compute the inner cube and the halving three times (44
    // products, 12 additions).
    let k = compile_src(CUBES);
    assert_eq!(count(&k.ptx, "mul.f32"), 20, "{}", k.ptx);
    assert_eq!(count(&k.ptx, "add.f32"), 4, "{}", k.ptx);
    assert_eq!(count(&k.ptx, "st.global.v4.f32"), 1, "{}", k.ptx);
    assert_eq!(count(&k.ptx, "ld.global"), 1, "{}", k.ptx);
}

/// What the metadata reports of the store of `Y`.
fn store_of_y(k: &phobos_core::CompiledKernel) -> &phobos_core::meta::AccessMeta {
    k.meta.variants[0]
        .loads
        .iter()
        .find(|a| a.store && a.target == "Y")
        .expect("the store of Y is reported")
}

#[test]
fn an_unaligned_run_store_falls_back_with_its_reason() {
    // Without `@aligned(K = 4)` the row start `r * K` may be any number of
    // floats: the computed run is stored element by element, and the
    // metadata says why.
    let src = CUBES.replace("@aligned(K = 4)\n", "");
    let k = compile_src(&src);
    assert_eq!(count(&k.ptx, "st.global.v4"), 0, "{}", k.ptx);
    assert_eq!(count(&k.ptx, "st.global.f32"), 4, "{}", k.ptx);
    let store = store_of_y(&k);
    assert_eq!((store.elems, store.width_bytes), (4, 4), "{store:?}");
    assert!(!store.reason.is_empty(), "{store:?}");
    eprintln!("reason: {}", store.reason);
    // Half the alignment gives 8-byte stores, with their reason.
    let src = CUBES.replace("@aligned(K = 4)", "@aligned(K = 2)");
    let k = compile_src(&src);
    assert_eq!(count(&k.ptx, "st.global.v2.f32"), 2, "{}", k.ptx);
    let store = store_of_y(&k);
    assert_eq!(store.width_bytes, 8, "{store:?}");
    assert!(!store.reason.is_empty(), "{store:?}");
    eprintln!("reason: {}", store.reason);
}

#[test]
fn runs_at_eight_byte_alignment_move_in_eight_byte_pieces_and_compute_right() {
    // Rows of 6 floats start 24 bytes apart: each run of 4 is 8-byte
    // aligned. It is read and written as two 8-byte pieces; the simulator
    // runs the PTX against an f64 reference. Columns 4 and 5 stay unwritten.
    let src = CUBES.replace("@aligned(K = 4)", "@aligned(K = 2)");
    let (n, k) = (37usize, 6usize);
    let o = Case::source(&src, "k.pho", "k")
        .dims(&[("N", n as i64), ("K", k as i64)])
        .gen("X", Gen::Float(-1.5, 1.5))
        .run([1, 1, 1]);
    let x = o.input("X");
    let mut y = o.expect("Y");
    let cube = |v: f64| v * v * v;
    for r in 0..n {
        for c in 0..4 {
            let i = r * k + c;
            y.set_f(i, cube(cube(x.f(i) + 0.5) * 0.5));
        }
    }
    o.check("Y", &y);
}

#[test]
fn a_computed_run_argument_read_from_a_tile_runs_after_the_tile_is_copied() {
    // The argument `t[0, j :+ 4] * s` reads the tile the CTA copied: its
    // elements are computed before the statement, after the barrier that
    // follows the copy. The simulator's racecheck and initcheck run.
    let src = "fn cube(x) = x * x * x
@launch(64)
kernel k(X: tensor<f32>[1, 256], Y: tensor<f32>[1, 256], s: f32) {
  var t = X[0 :+ 1, 0 :+ 256]
  let j = (63 - ctx.thread) * 4
  Y[0, j :+ 4] = cube(t[0, j :+ 4] * s) + cube(t[0, j :+ 4] - s)
}
";
    let s = 0.75f32;
    let o = Case::source(src, "k.pho", "k")
        .scalar("s", phobos_conformance::sim_support::Scalar::F32(s))
        .run([1, 1, 1]);
    let x = o.input("X");
    let mut y = o.expect("Y");
    let cube = |v: f64| v * v * v;
    for i in 0..256 {
        let v = x.f(i);
        y.set_f(i, cube(v * f64::from(s)) + cube(v - f64::from(s)));
    }
    o.check("Y", &y);
}
