//! Structural assertions on the seed page's kernels: the instructions the
//! page promises are the instructions emitted.

use phobos_conformance::{compile, corpus_file};

fn ptx_of(name: &str) -> (String, phobos_core::meta::KernelMeta) {
    let mut ks = compile(&corpus_file(name), 75);
    assert_eq!(ks.len(), 1, "{name}: one kernel");
    let k = ks.remove(0);
    (k.ptx, k.meta)
}

/// The body of the first `for` loop (between its head label and its end label).
fn loop_body(ptx: &str) -> String {
    let start = ptx.find("_for:").expect("a loop");
    let end = ptx[start..].find("_endfor:").expect("loop end") + start;
    ptx[start..end].to_string()
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn lanes_matvec_loads_four_floats_twice_per_step_and_folds_in_five_shuffles() {
    let (ptx, meta) = ptx_of("lanes_matvec");
    let body = loop_body(&ptx);
    assert_eq!(
        count(&body, "ld.global.nc.v4.f32"),
        2,
        "one v4 load of W and one of x:\n{body}"
    );
    assert_eq!(
        count(&body, "ld.global"),
        2,
        "no other loads in the loop:\n{body}"
    );
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
    let w = v
        .loads
        .iter()
        .find(|l| l.target == "W")
        .expect("a load of W");
    assert_eq!((w.width_bytes, w.align_bytes), (16, 16));
    let x = v
        .loads
        .iter()
        .find(|l| l.target == "x")
        .expect("a load of x");
    assert_eq!((x.width_bytes, x.align_bytes), (16, 16));
}

#[test]
fn i8_matvec_loads_sixteen_bytes_twice_and_runs_four_dp4a_per_step() {
    let (ptx, meta) = ptx_of("i8_matvec");
    let body = loop_body(&ptx);
    assert_eq!(
        count(&body, "ld.global.nc.v4.u32"),
        2,
        "two 16-byte loads:\n{body}"
    );
    assert_eq!(count(&body, "ld.global"), 2);
    assert_eq!(count(&body, "dp4a.s32.s32"), 4, "four dp4a:\n{body}");
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
    assert!(ptx.contains(".shared .align 16 .b8 staged_matvec__K256_smem[1024];"));
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
    let body = loop_body(&ptx);
    assert_eq!(count(&body, "ld.global.nc.v4.f32"), 1, "{body}");
    assert_eq!(count(&body, "ld.shared.v4.f32"), 1, "{body}");
    let xs = v
        .loads
        .iter()
        .find(|l| l.target == "xs")
        .expect("a read of xs");
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
