//! `dot` on tiles written element by element, in the simulator with
//! racecheck on: the compiler must place a barrier between the element
//! stores and the `ldmatrix` reads of the first product, and another
//! between those reads and the stores that rewrite the tile for the
//! second. A missing one is a racecheck error, not a wrong number. And
//! an f32 accumulator stored as f16 or bf16, on sm_75 (where bf16 is
//! rounded by hand) and sm_80.

use phobos_conformance::sim_support::{Case, Gen, Outcome};

/// Runs `kernel` of `src` (`A: [M, 16]`, `W: [N, 16]`) with `M = m` and
/// `N = n`, one CTA per 64 rows.
fn run_mn(src: &str, file: &str, kernel: &str, m: usize, n: usize) -> Outcome {
    Case::source(src, file, kernel)
        .dims(&[("M", m as i64), ("N", n as i64)])
        .run([m.div_ceil(64) as u32, 1, 1])
}

/// The exact dot product of row `i` of `A` and row `j` of `W` (K = 16).
fn dot16(o: &Outcome, i: usize, j: usize) -> f64 {
    let (a, w) = (o.input("A"), o.input("W"));
    (0..16).map(|k| a.f(i * 16 + k) * w.f(j * 16 + k)).sum()
}

const SQUARES: &str = r#"
@launch(64)
kernel squares(X: tensor<f16>[16, 16], C: tensor<f32>[16, 16]) {
  var s = shared<f16>[16, 16]
  let row = ctx.thread / 4
  let col = (ctx.thread % 4) * 4
  for j in range(0, 4) {
    s[row, col + j] = X[row, col + j]
  }
  var acc = zeros<f32>[16, 16]
  acc += dot(s, trans(s))
  for j in range(0, 4) {
    s[row, col + j] = X[row, col + j] * 2.0
  }
  acc += dot(s, trans(s))
  C[0 :+ 16, 0 :+ 16] = acc
}
"#;

#[test]
fn dot_of_a_tile_written_by_element_stores_is_fenced_both_ways() {
    let src = SQUARES;
    let (kernels, diags) = phobos_core::compile(
        src,
        "squares.pho",
        &phobos_core::CompileOptions::for_arch(80),
    );
    assert!(diags.is_empty(), "{diags:?}");
    // The fill, then a barrier, the first product, a barrier, the refill,
    // a barrier, the second product.
    assert!(
        kernels[0].ptx.matches("bar.sync 0;").count() >= 3,
        "{}",
        kernels[0].ptx
    );
    let o = Case::source(src, "squares.pho", "squares").run([1, 1, 1]);
    let x = o.input("X");
    let mut c = o.expect("C");
    for i in 0..16 {
        for j in 0..16 {
            let s: f64 = (0..16).map(|k| x.f(i * 16 + k) * x.f(j * 16 + k)).sum();
            // X X^T + (2X)(2X)^T.
            c.set_f(i * 16 + j, 5.0 * s);
        }
    }
    o.check("C", &c);
}

const TO_HALF: &str = r#"
@launch(128)
kernel to_half(A: tensor<f16>[M, 16], W: tensor<f16>[N, 16], H: tensor<f16>[M, N], B: tensor<bf16>[M, N]) {
  var a = A[ctx.block.x * 64 :+ 64, 0 :+ 16]
  var w = W[0 :+ 32, 0 :+ 16]
  var acc = zeros<f32>[64, 32]
  acc += dot(a, trans(w))
  H[ctx.block.x * 64 :+ 64, 0 :+ 32] = f16(acc)
  B[ctx.block.x * 64 :+ 64, 0 :+ 32] = bf16(acc)
}
"#;

/// `C[...] = f16(acc)` and `bf16(acc)`: each f32 element rounded to
/// nearest even, masked at ragged bounds. With K = 16 the accumulator is
/// the exact sum rounded once to f32 (one mma step), so the reference
/// rounds the same two times.
#[test]
fn an_f32_accumulator_is_stored_as_f16_and_bf16() {
    for arch_src in [TO_HALF.to_string(), format!("// needs: sm_80\n{TO_HALF}")] {
        let (m, n) = (70usize, 27usize);
        let o = run_mn(&arch_src, "to_half.pho", "to_half", m, n);
        let (mut h, mut b) = (o.expect("H"), o.expect("B"));
        for i in 0..m {
            for j in 0..n {
                let s = dot16(&o, i, j) as f32;
                h.set_f(i * n + j, f64::from(half::f16::from_f32(s)));
                b.set_f(i * n + j, f64::from(half::bf16::from_f32(s)));
            }
        }
        o.check("H", &h);
        o.check("B", &b);
    }
}

/// The stores of `f16(acc)` and `bf16(acc)` assemble for every target
/// (sm_75's bf16 rounding is done by hand), and so do f16 accumulators,
/// their epilogues and stores (packed pairs among them) and accumulators
/// stored into shared tiles.
#[test]
fn half_stores_assemble_with_ptxas() {
    let Some(ptxas) = phobos_conformance::ptxas_or_skip() else {
        return;
    };
    let sources = [
        ("to_half", TO_HALF),
        ("f16_acc", F16_ACC),
        ("pairs", PAIRS),
        ("row_sums", ROW_SUMS),
    ];
    for ((name, src), arch) in sources
        .into_iter()
        .flat_map(|s| phobos_core::ARCHES.into_iter().map(move |a| (s, a)))
    {
        let (kernels, diags) = phobos_core::compile(
            src,
            &format!("{name}.pho"),
            &phobos_core::CompileOptions::for_arch(arch),
        );
        assert!(diags.is_empty(), "{diags:?}");
        if let Err(e) = phobos_conformance::assemble(&ptxas, name, arch, &kernels[0].ptx) {
            panic!("{name} {}: {e}", phobos_core::arch::name(arch));
        }
    }
}

const ROW_SUMS: &str = r#"
@launch(64)
kernel row_sums(A: tensor<f16>[16, 16], W: tensor<f16>[16, 16], Y: tensor<f32>[16]) {
  var a = A[0 :+ 16, 0 :+ 16]
  var w = W[0 :+ 16, 0 :+ 16]
  var acc = zeros<f32>[16, 16]
  acc += dot(a, trans(w))
  var s = shared<f32>[16, 17]
  s[0 :+ 16, 0 :+ 16] = acc
  if ctx.thread < 16 {
    var t = 0.0
    for j in range(0, 16) {
      t += s[ctx.thread, j]
    }
    Y[ctx.thread] = t
  }
}
"#;

/// `s[0 :+ 16, 0 :+ 16] = acc` puts the accumulator, whose elements the
/// two warps' lanes hold, into a scratch tile that one thread per row then
/// reads: the compiler keeps a barrier between the lanes' shared stores
/// and the reads. Taken out of the PTX, racecheck reports the read.
#[test]
fn an_accumulator_stored_into_a_scratch_tile_is_fenced_from_its_readers() {
    let case = || Case::source(ROW_SUMS, "row_sums.pho", "row_sums");
    let ptx = case().kernel.ptx.clone();
    let last_store = ptx
        .rfind("st.shared.f32")
        .expect("the accumulator's shared stores");
    let first_read = last_store + ptx[last_store..].find("ld.shared").expect("a read of s");
    assert!(
        ptx[last_store..first_read].contains("bar.sync 0;"),
        "no barrier between the store of the accumulator and the reads:\n{ptx}"
    );
    let o = case().run([1, 1, 1]);
    o.check_f("Y", 16, |i| {
        (0..16).map(|j| f64::from(dot16(&o, i, j) as f32)).sum()
    });
    let mut unfenced = case();
    let cut = unfenced.kernel.ptx[..first_read]
        .rfind("bar.sync 0;")
        .expect("the barrier");
    unfenced
        .kernel
        .ptx
        .replace_range(cut..cut + "bar.sync 0;".len(), "");
    let r = unfenced.report([1, 1, 1]);
    assert_eq!(r.kind, phobos_sim::CheckKind::Racecheck, "{r}");
}

const F16_ACC: &str = r#"// needs: sm_80
@launch(128)
kernel f16_acc(A: tensor<f16>[M, 16], W: tensor<f16>[N, 16], F: tensor<f32>[M, N], H: tensor<f16>[64, 32]) {
  var a = A[ctx.block.x * 64 :+ 64, 0 :+ 16]
  var w = W[0 :+ 32, 0 :+ 16]
  var acc = zeros<f16>[64, 32]
  acc += dot(a, trans(w))
  acc = acc * f16(2.0) - f16(0.25)
  F[ctx.block.x * 64 :+ 64, 0 :+ 32] = f32(acc)
  var s = shared<f16>[64, 32]
  s[0 :+ 64, 0 :+ 32] = acc
  H[0 :+ 64, 0 :+ 32] = s
}
"#;

/// An f16 accumulator on sm_80: one m16n8k16 per fragment (K = 16) rounds
/// the exact sum once to f16; the epilogue computes in f16 (each operation
/// rounded), `f32(acc)` widens exactly, and the accumulator stored into
/// an f16 scratch tile comes back out unchanged through a tile store.
#[test]
fn an_f16_accumulator_runs_its_epilogue_and_stores_in_f16_and_f32() {
    // One CTA, ragged rows and columns.
    let (m, n) = (60usize, 27usize);
    let o = run_mn(F16_ACC, "f16_acc.pho", "f16_acc", m, n);
    let (mut f, mut h) = (o.expect("F"), o.expect("H"));
    let half = |x: f64| f64::from(half::f16::from_f64(x));
    for i in 0..64 {
        for j in 0..32 {
            // Rows and columns past A and W are zero-filled: a sum of 0.
            let s = if i < m && j < n { dot16(&o, i, j) } else { 0.0 };
            let v = half(half(half(s) * 2.0) - 0.25);
            if i < m && j < n {
                f.set_f(i * n + j, v);
            }
            h.set_f(i * 32 + j, v);
        }
    }
    o.check("F", &f);
    o.check("H", &h);
}

const PAIRS: &str = r#"// needs: sm_80
@launch(128)
@aligned(N = 2)
kernel pairs(A: tensor<f16>[M, 16], W: tensor<f16>[N, 16], C: tensor<f32>[M, N], H: tensor<f16>[M, N]) {
  let r = ctx.block.x * 64
  var a = A[r :+ 64, 0 :+ 16]
  var w = W[0 :+ 32, 0 :+ 16]
  var acc = zeros<f32>[64, 32]
  acc += dot(a, trans(w))
  C[r :+ 64, 0 :+ 32] = acc
  var h = zeros<f16>[64, 32]
  h += dot(a, trans(w))
  H[r :+ 64, 0 :+ 32] = h
}
"#;

/// With the row length proven even (`@aligned(N = 2)`), each lane's two
/// adjacent elements go out as one store: `st.global.v2.f32`, and for an
/// f16 accumulator into f16 the packed register as one `st.global.b32`;
/// masked per pair at ragged rows and at N = 26 (the last pair of a row
/// in bounds, the next one out).
#[test]
fn accumulator_pairs_are_stored_together_where_aligned() {
    let ptx = Case::source(PAIRS, "pairs.pho", "pairs").kernel.ptx.clone();
    // 64 x 32 over 4 warps: 16 elements per lane, 8 pairs.
    assert_eq!(ptx.matches("st.global.v2.f32").count(), 8, "{ptx}");
    assert_eq!(ptx.matches("st.global.b32").count(), 8, "{ptx}");
    assert_eq!(ptx.matches("st.global.f32").count(), 0, "{ptx}");
    let (m, n) = (70usize, 26usize);
    let o = run_mn(PAIRS, "pairs.pho", "pairs", m, n);
    let (mut c, mut h) = (o.expect("C"), o.expect("H"));
    for i in 0..m {
        for j in 0..n {
            let s = dot16(&o, i, j);
            c.set_f(i * n + j, f64::from(s as f32));
            h.set_f(i * n + j, f64::from(half::f16::from_f64(s)));
        }
    }
    o.check("C", &c);
    o.check("H", &h);
}

const TO_F8: &str = r#"// needs: sm_89
@launch(128)
kernel to_f8(A: tensor<f16>[M, 16], W: tensor<f16>[N, 16], E: tensor<f8e4m3>[M, N], F: tensor<f8e5m2>[M, N]) {
  var a = A[ctx.block.x * 64 :+ 64, 0 :+ 16]
  var w = W[0 :+ 32, 0 :+ 16]
  var acc = zeros<f32>[64, 32]
  acc += dot(a, trans(w))
  E[ctx.block.x * 64 :+ 64, 0 :+ 32] = f8e4m3(acc)
  F[ctx.block.x * 64 :+ 64, 0 :+ 32] = f8e5m2(acc)
}
"#;

/// `C[...] = f8e4m3(acc)` and `f8e5m2(acc)` (sm_89 and newer): each f32
/// element rounded to nearest even and saturated (the inputs reach past
/// e4m3's 448), masked at ragged bounds; P0812 below sm_89; ptxas
/// assembles it for every target from sm_89.
#[test]
fn an_f32_accumulator_is_stored_as_8_bit_floats() {
    let (m, n) = (70usize, 27usize);
    let o = Case::source(TO_F8, "to_f8.pho", "to_f8")
        .dims(&[("M", m as i64), ("N", n as i64)])
        .gen("A", Gen::Float(-20.0, 20.0))
        .gen("W", Gen::Float(-20.0, 20.0))
        .run([m.div_ceil(64) as u32, 1, 1]);
    let (mut e, mut f) = (o.expect("E"), o.expect("F"));
    let mut saturated = 0;
    for i in 0..m {
        for j in 0..n {
            let s = f64::from(dot16(&o, i, j) as f32);
            saturated += usize::from(s.abs() > 448.0);
            e.set_f(i * n + j, s);
            f.set_f(i * n + j, s);
        }
    }
    assert!(
        saturated > 0,
        "no sum beyond 448: the saturation is untested"
    );
    o.check("E", &e);
    o.check("F", &f);
    // With N = 32 a lane's two adjacent bytes go out as one `v2.u8`.
    let pairs = TO_F8
        .replace("[N, 16]", "[32, 16]")
        .replace("[M, N]", "[M, 32]");
    let (k, _) = phobos_core::compile(
        &pairs,
        "to_f8_pairs.pho",
        &phobos_core::CompileOptions::for_arch(89),
    );
    assert!(k[0].ptx.contains("st.global.v2.u8"), "{}", k[0].ptx);
    let o = Case::source(&pairs, "to_f8_pairs.pho", "to_f8")
        .dims(&[("M", m as i64)])
        .gen("A", Gen::Float(-20.0, 20.0))
        .gen("W", Gen::Float(-20.0, 20.0))
        .run([m.div_ceil(64) as u32, 1, 1]);
    let mut e = o.expect("E");
    for i in 0..m {
        for j in 0..32 {
            e.set_f(i * 32 + j, f64::from(dot16(&o, i, j) as f32));
        }
    }
    o.check("E", &e);
    let Some(ptxas) = phobos_conformance::ptxas_or_skip() else {
        return;
    };
    for (src, arch) in [TO_F8, pairs.as_str()]
        .into_iter()
        .flat_map(|s| phobos_core::ARCHES.into_iter().map(move |a| (s, a)))
    {
        let (kernels, diags) = phobos_core::compile(
            src,
            "to_f8.pho",
            &phobos_core::CompileOptions::for_arch(arch),
        );
        if arch < 89 {
            let codes: Vec<_> = diags.iter().map(|d| d.code.as_str()).collect();
            assert_eq!(codes, ["P0812"], "sm_{arch}");
            continue;
        }
        assert!(diags.is_empty(), "{diags:?}");
        if let Err(e) = phobos_conformance::assemble(&ptxas, "to_f8", arch, &kernels[0].ptx) {
            panic!("to_f8 sm_{arch}: {e}");
        }
    }
}
