//! Structural assertions on the seed page's kernels: the instructions the
//! page promises are the instructions emitted.

use phobos_conformance::{compile, corpus_file};

fn ptx_of(name: &str) -> (String, phobos_core::meta::KernelMeta) {
    let mut ks = compile(&corpus_file(name), 75);
    assert_eq!(ks.len(), 1, "{name}: one kernel");
    let k = ks.remove(0);
    (k.ptx, k.meta)
}

/// The bodies of the `for` loops (between each head label and its end
/// label), in order.
fn loop_bodies(ptx: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = ptx[from..].find("_for:") {
        let start = from + at;
        let end = ptx[start..].find("_endfor:").expect("loop end") + start;
        out.push(ptx[start..end].to_string());
        from = end;
    }
    out
}

/// The seed's loops are unrolled (backend `unroll`): a main loop of
/// `factor` steps per trip, then the remainder one step per trip. Returns
/// (main, remainder), checking that `needle` occurs `per_step` times per
/// step in each.
fn unrolled(ptx: &str, factor: usize, needle: &str, per_step: usize) -> (String, String) {
    let bodies = loop_bodies(ptx);
    assert_eq!(bodies.len(), 2, "a main loop and a remainder loop:\n{ptx}");
    let (main, rest) = (bodies[0].clone(), bodies[1].clone());
    assert_eq!(
        count(&main, needle),
        factor * per_step,
        "{needle} in:\n{main}"
    );
    assert_eq!(count(&rest, needle), per_step, "{needle} in:\n{rest}");
    (main, rest)
}

/// Steps per trip of a loop whose trip count is known only at run time.
const AUTO: usize = phobos_core::backend::unroll::AUTO_FACTOR as usize;

/// The first access the metadata reports of `target`.
fn access_of<'a>(
    v: &'a phobos_core::meta::VariantMeta,
    target: &str,
) -> &'a phobos_core::meta::AccessMeta {
    v.loads
        .iter()
        .find(|l| l.target == target)
        .unwrap_or_else(|| panic!("an access of {target}"))
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn lanes_matvec_loads_four_floats_twice_per_step_and_folds_in_five_shuffles() {
    let (ptx, meta) = ptx_of("lanes_matvec");
    // One v4 load of W and one of x per step, and no other loads.
    unrolled(&ptx, AUTO, "ld.global.nc.v4.f32", 2);
    let (main, _) = unrolled(&ptx, AUTO, "ld.global", 2);
    // Steps after the first address W and x as the first step's address
    // plus a constant (128 floats = 512 bytes further per step).
    for step in 1..AUTO {
        let shifted = main
            .lines()
            .filter(|l| l.contains("add.s64") && l.ends_with(&format!(", {};", 512 * step)))
            .count();
        assert_eq!(shifted, 2, "two addresses +{}:\n{main}", 512 * step);
    }
    assert_eq!(count(&ptx, "shfl.sync.bfly.b32"), 5);
    for off in [16, 8, 4, 2, 1] {
        assert!(
            ptx.lines()
                .any(|l| l.contains("shfl.sync.bfly.b32")
                    && l.contains(&format!(", {off}, 31, -1;"))),
            "a butterfly step with offset {off}"
        );
    }
    assert_eq!(count(&ptx, "bar.sync"), 0);
    let v = &meta.variants[0];
    assert_eq!(v.shared_bytes, 0);
    let w = access_of(v, "W");
    assert_eq!((w.width_bytes, w.align_bytes), (16, 16));
    let x = access_of(v, "x");
    assert_eq!((x.width_bytes, x.align_bytes), (16, 16));
}

#[test]
fn i8_matvec_loads_sixteen_bytes_twice_and_runs_four_dp4a_per_step() {
    let (ptx, meta) = ptx_of("i8_matvec");
    // Two 16-byte loads and four dp4a per step.
    unrolled(&ptx, AUTO, "ld.global.nc.v4.u32", 2);
    unrolled(&ptx, AUTO, "ld.global", 2);
    unrolled(&ptx, AUTO, "dp4a.s32.s32", 4);
    assert_eq!(count(&ptx, "shfl.sync.bfly.b32"), 5);
    let v = &meta.variants[0];
    for l in v
        .loads
        .iter()
        .filter(|l| l.target == "A" || l.target == "W")
    {
        assert_eq!((l.width_bytes, l.align_bytes), (16, 16), "{l:?}");
    }
}

#[test]
fn staged_matvec_copies_the_tile_then_one_barrier_and_plans_1024_bytes() {
    let (ptx, meta) = ptx_of("staged_matvec");
    let v = &meta.variants[0];
    assert_eq!(v.entry, "staged_matvec__K256");
    assert_eq!(v.shared_bytes, 1024);
    assert_eq!(v.shared_plan.len(), 1);
    assert_eq!(
        (
            v.shared_plan[0].name.as_str(),
            v.shared_plan[0].offset,
            v.shared_plan[0].bytes
        ),
        ("xs", 0, 1024)
    );
    assert!(ptx.contains(".shared .align 16 .b8 staged_matvec__K256$smem[1024];"));
    // The copy: 16-byte chunks from x into shared memory, then one barrier.
    let copy = ptx
        .find("st.shared.v4.u32")
        .expect("a vectorized tile copy");
    let bar = ptx.find("bar.sync 0;").expect("a barrier");
    assert!(copy < bar, "the barrier comes after the copy");
    assert_eq!(count(&ptx, "bar.sync"), 1, "exactly one barrier");
    let kept: Vec<_> = v.barriers.iter().filter(|b| b.kept).collect();
    assert_eq!(kept.len(), 1);
    assert!(kept[0].reason.contains("xs"), "{}", kept[0].reason);
    // Each step: one v4 load of W from global memory, one of xs from shared.
    // K is the constant 256: two steps in all, so two per trip.
    unrolled(&ptx, 2, "ld.global.nc.v4.f32", 1);
    unrolled(&ptx, 2, "ld.shared.v4.f32", 1);
    let xs = access_of(v, "xs");
    assert_eq!(xs.width_bytes, 16);
}

#[test]
fn lane_max_is_a_five_step_max_butterfly() {
    let (ptx, _) = ptx_of("lane_max");
    assert_eq!(count(&ptx, "shfl.sync.bfly.b32"), 5);
    assert_eq!(count(&ptx, "max.f32"), 5);
}

#[test]
fn cta_sum_shows_its_barriers_and_why_two_are_elided() {
    let (ptx, meta) = ptx_of("row_sum");
    let v = &meta.variants[0];
    assert_eq!(v.barriers.len(), 3, "{:?}", v.barriers);
    let [before, written, read] = [&v.barriers[0], &v.barriers[1], &v.barriers[2]];
    assert!(
        !before.kept && before.reason.contains("nothing before it"),
        "{before:?}"
    );
    assert!(
        written.kept && written.reason.contains("read by other threads"),
        "{written:?}"
    );
    assert!(
        !read.kept && read.reason.contains("nothing after it"),
        "{read:?}"
    );
    assert_eq!(count(&ptx, "bar.sync"), 1);
    assert!(ptx.contains("// barrier elided: nothing before it"));
    // Eight warps: a slot of 4 bytes each.
    assert_eq!(v.shared_bytes, 32);
    assert_eq!(count(&ptx, "shfl.sync.bfly.b32"), 5);
}

#[test]
fn cta_collective_in_a_loop_keeps_the_barrier_that_guards_reuse() {
    let (ptx, meta) = ptx_of("cta_sum_loop");
    let v = &meta.variants[0];
    let kept = v.barriers.iter().filter(|b| b.kept).count();
    assert_eq!(kept, 2, "{:?}", v.barriers);
    assert_eq!(count(&ptx, "bar.sync"), 2);
}
