//! The backend's analyses on small kernels: divisibility and the vector
//! decision for each access, the shared-memory plan and its per-target
//! limit (dynamic shared memory above 48 KB),
//! and barrier placement with its reasons.

use phobos_core::backend::divisibility::AccessInfo;
use phobos_core::backend::{compile_variant, CompiledVariant};
use phobos_core::source::LineIndex;

fn compile(src: &str) -> Result<CompiledVariant, phobos_core::Diagnostic> {
    let (kernels, diags) = phobos_core::check_source(src);
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    compile_variant(&kernels[0].variants[0], &LineIndex::new(src), 75)
}

fn var_divisor(v: &CompiledVariant, name: &str) -> u64 {
    let (id, _) = v
        .func
        .vars
        .iter()
        .find(|(_, x)| x.name == name)
        .expect("var");
    v.div.var[id.0 as usize]
}

/// The first access of `v` that `is` picks; `what` names it in a failure.
fn access<'a>(
    v: &'a CompiledVariant,
    what: &str,
    is: impl Fn(&AccessInfo) -> bool,
) -> &'a AccessInfo {
    v.div
        .access
        .iter()
        .find(|a| is(a))
        .unwrap_or_else(|| panic!("no {what}"))
}

#[test]
fn lanes_matvec_divisors_prove_sixteen_byte_runs() {
    let v = compile(include_str!("seed/lanes_matvec.pho")).expect("compiles");
    assert_eq!(var_divisor(&v, "k"), 128, "range(0, K, 128) steps by 128");
    assert_eq!(var_divisor(&v, "at"), 4, "k + ctx.lane * 4");
    assert_eq!(var_divisor(&v, "row"), 1);
    // The loop is unrolled: AUTO_FACTOR bodies in the main loop, one in the
    // remainder, each with its loads of W and x.
    let bodies = phobos_core::backend::unroll::AUTO_FACTOR as usize + 1;
    assert_eq!(var_divisor(&v, "k_main"), 128 * (bodies as u64 - 1));
    let runs: Vec<_> = v.div.access.iter().filter(|a| a.width == 16).collect();
    assert_eq!(runs.len(), 2 * bodies);
    assert!(runs.iter().all(|a| a.align == 16 && a.reason.is_empty()));
}

#[test]
fn without_aligned_the_row_start_is_unproven() {
    let src = "@launch(32)\nkernel k(W: tensor<f32>[N, K], y: tensor<f32>[N]) {\n  let r = ctx.block.x\n  y[r] = sum(W[r, ctx.lane * 4 :+ 4])\n}\n";
    let v = compile(src).expect("compiles");
    let run = access(&v, "a narrowed access", |a| !a.reason.is_empty());
    assert_eq!((run.width, run.align), (4, 4));
    assert!(
        run.reason.contains("only proven 4-byte aligned"),
        "{}",
        run.reason
    );
    let with = src.replace("@launch(32)", "@launch(32)\n@aligned(K = 4)");
    let v = compile(&with).expect("compiles");
    assert!(v.div.access.iter().any(|a| a.width == 16 && a.align == 16));
}

#[test]
fn divisors_of_sums_products_shifts_and_var_assignments() {
    let src = "@launch(32)\nkernel k(A: tensor<f32>[N], y: tensor<f32>[N]) {\n  var a = 12\n  a = a + 8\n  let b = (ctx.lane << 3) * 6\n  let c = b + a\n  y[c] = A[b]\n}\n";
    let v = compile(src).expect("compiles");
    assert_eq!(var_divisor(&v, "a"), 4, "gcd(12, gcd(a, 8))");
    assert_eq!(var_divisor(&v, "b"), 48);
    assert_eq!(var_divisor(&v, "c"), 4);
}

#[test]
fn a_run_along_the_first_axis_is_per_element() {
    let src = "@launch(32)\nkernel k(A: tensor<f32>[4, M], y: tensor<f32>[M]) {\n  y[ctx.lane] = sum(A[0 :+ 4, ctx.lane])\n}\n";
    let v = compile(src).expect("compiles");
    let run = access(&v, "a column run", |a| a.reason.contains("axis 0"));
    assert_eq!(run.width, 4);
}

#[test]
fn more_than_the_targets_shared_memory_is_p0801_at_the_kernel() {
    let src = TILES_128K;
    let d = compile(src).err().expect("too much shared memory");
    assert_eq!(d.code, "P0801");
    assert!(d.message.contains("131072 bytes"), "{}", d.message);
    assert!(
        d.message
            .contains("sm_75 allows at most 65536 bytes per CTA"),
        "{}",
        d.message
    );
    let primary = d
        .labels
        .iter()
        .find(|l| l.primary)
        .expect("a primary label");
    assert!(src[primary.span.range()].starts_with("@launch"));
    assert_eq!(
        d.labels.iter().filter(|l| !l.primary).count(),
        2,
        "one label per tile"
    );
}

#[test]
fn tiles_with_disjoint_live_ranges_share_bytes_and_the_reuse_keeps_a_barrier() {
    let src = "@launch(256)\nkernel k(A: tensor<f32>[1, 256], B: tensor<f32>[1, 256], y: tensor<f32>[1, 256]) {\n  var a = A[0 :+ 1, :]\n  let x = a[0, 255 - ctx.thread]\n  var b = B[0 :+ 1, :]\n  y[0, ctx.thread] = x + b[0, 255 - ctx.thread]\n}\n";
    let v = compile(src).expect("compiles");
    assert_eq!(v.plan.offset, vec![0, 0]);
    assert_eq!(v.plan.total, 1024);
    let kept: Vec<_> = v.barriers.iter().filter(|b| b.kept).collect();
    assert_eq!(kept.len(), 3, "{:?}", v.barriers);
    assert!(
        kept.iter()
            .any(|b| b.reason.contains("reuses bytes of `a`")),
        "{:?}",
        kept
    );
}

#[test]
fn a_tile_used_across_a_loop_stays_live_for_the_whole_loop() {
    let src = "@launch(64)\nkernel k(A: tensor<f32>[1, 64], B: tensor<f32>[1, 64], y: tensor<f32>[1, 64]) {\n  var a = A[0 :+ 1, :]\n  var s = 0.0\n  for i in range(0, 4) {\n    var b = B[0 :+ 1, :]\n    s += b[0, i] + a[0, i]\n  }\n  y[0, ctx.thread] = s\n}\n";
    let v = compile(src).expect("compiles");
    assert_ne!(v.plan.offset[0], v.plan.offset[1], "a is live while b is");
    // The copy of b inside the loop waits for the previous iteration's
    // readers, and the barrier after it also separates the copy of `a` from
    // its readers, so the barrier right after that copy is elided.
    let kept: Vec<bool> = v.barriers.iter().map(|b| b.kept).collect();
    assert_eq!(kept, vec![false, false, true, true], "{:?}", v.barriers);
    assert!(
        v.barriers[1]
            .reason
            .contains("the barrier kept at line 6 comes first"),
        "{:?}",
        v.barriers[1]
    );
}

#[test]
fn a_cta_collective_alone_keeps_only_the_barrier_between_write_and_read() {
    let src = "@launch(128)\nkernel k(A: tensor<f32>[1, 128], y: tensor<f32>[1, 1]) {\n  let s = sum<over ctx.thread>(A[0, ctx.thread])\n  if ctx.thread == 0 {\n    y[0, 0] = s\n  }\n}\n";
    let v = compile(src).expect("compiles");
    let kept: Vec<bool> = v.barriers.iter().map(|b| b.kept).collect();
    assert_eq!(kept, vec![false, true, false]);
    assert_eq!(v.plan.total, 16);
}

#[test]
fn two_cta_collectives_in_a_row_fence_the_shared_scratch() {
    let src = "@launch(128)\nkernel k(A: tensor<f32>[1, 128], y: tensor<f32>[1, 1]) {\n  let s = sum<over ctx.thread>(A[0, ctx.thread])\n  let m = max<over ctx.thread>(A[0, ctx.thread] - s)\n  if ctx.thread == 0 {\n    y[0, 0] = m\n  }\n}\n";
    let v = compile(src).expect("compiles");
    // The scratches do not overlap in time, so they share bytes, and the
    // second write must wait for the first fold's readers.
    assert_eq!(v.plan.offset, vec![0, 0]);
    let kept = v.barriers.iter().filter(|b| b.kept).count();
    assert_eq!(kept, 3, "{:?}", v.barriers);
}

/// 128 KB of tiles: more than a `.shared` declaration may hold (48 KB) and
/// than sm_75 (64 KB) or sm_86/sm_89/sm_120 (99 KB) allow one CTA, within
/// sm_80's 163 KB and sm_90's and sm_100's 227 KB.
const TILES_128K: &str = include_str!("../../../tests/fixtures/tiles_128k.pho");

#[test]
fn tiles_above_48_kilobytes_are_dynamic_shared_memory_within_each_targets_limit() {
    for arch in phobos_core::ARCHES {
        let sm = phobos_core::arch::name(arch);
        let (kernels, diags) = phobos_core::compile(
            TILES_128K,
            "big.pho",
            &phobos_core::CompileOptions::for_arch(arch),
        );
        let fits = phobos_core::max_shared_bytes(arch) >= 131072;
        let sm_90a = phobos_core::arch::SM_90A;
        assert_eq!(fits, [80, 90, sm_90a, 100].contains(&arch), "{sm}");
        if !fits {
            let d = diags.iter().find(|d| d.code == "P0801").expect("P0801");
            let limit = phobos_core::max_shared_bytes(arch);
            assert!(
                d.message.contains(&format!(
                    "{} allows at most {limit} bytes",
                    phobos_core::arch::name(arch)
                )),
                "{}",
                d.message
            );
            continue;
        }
        assert!(diags.iter().all(|d| !d.is_error()), "{sm}: {diags:?}");
        let k = &kernels[0];
        let v = &k.meta.variants[0];
        assert_eq!(v.shared_bytes, 131072);
        assert_eq!(v.dynamic_shared_bytes(), 131072);
        assert!(
            k.ptx.contains(".extern .shared .align 16 .b8 big$smem[];"),
            "{}",
            k.ptx
        );
        assert!(!k.ptx.contains("big$smem[131072]"));
    }
    // At or under 48 KB the buffer stays static.
    let small = TILES_128K
        .replace("64, 256]", "16, 256]")
        .replace(":+ 64", ":+ 16");
    let (kernels, diags) = phobos_core::compile(
        &small,
        "small.pho",
        &phobos_core::CompileOptions::for_arch(75),
    );
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    let v = &kernels[0].meta.variants[0];
    assert_eq!((v.shared_bytes, v.dynamic_shared_bytes()), (32768, 0));
    assert!(kernels[0]
        .ptx
        .contains(".shared .align 16 .b8 big$smem[32768];"));
}
