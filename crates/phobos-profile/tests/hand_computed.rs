//! Counters checked against values worked out by hand, on kernels compiled
//! from `.pho` source (bound and run through `phobos_explain::run_observed`,
//! the path `phobos profile` takes) and, where the language cannot express
//! the case, on hand-written PTX run in the simulator directly.

// The explain tests' helpers: corpus sources and random-input requests.
#[path = "../../phobos-explain/tests/support/kernels.rs"]
mod explain_support;

use explain_support::{corpus_src, line_of, request};
use phobos_core::binding::{ArgShape, LaunchRequest};
use phobos_core::meta::{DimRefMeta, KernelMeta, ParamKindMeta};
use phobos_profile::{CtaSample, LineCounters, Profiler};
use phobos_runtime::sim_launch::{self, Plan};
use phobos_sim::{BufferId, Device, KernelArg, Launch, LaunchOptions, Module};

/// Runs `kernel` of `source` with random inputs of the given shapes and
/// returns the profiler and the source.
fn profile(source: &str, kernel: &str, grid: [u32; 3], shapes: &[(&str, &[u64])]) -> Profiler {
    let req = request(source, kernel, 80, Some(grid), shapes);
    let (_, profiler) = phobos_explain::run_observed(&req, |_, grid| {
        Profiler::new(grid.iter().map(|&g| u64::from(g)).product(), CtaSample::All)
    })
    .unwrap_or_else(|e| panic!("{kernel} runs: {e}"));
    profiler
}

fn counters_at(p: &Profiler, source: &str, text: &str) -> LineCounters {
    p.line(line_of(source, text))
}

/// The corpus's `vec_add`: one element of `C = A + B` per thread, under
/// a guard `i < N`.
const VEC_ADD: &str = include_str!("../../../tests/in/vec_add.pho");

#[test]
fn contiguous_f32_accesses_take_four_sectors_per_request() {
    // 1024 elements, 32 warps; each warp reads A and B once (128
    // contiguous bytes: 4 sectors, 1 line) and writes C once.
    let p = profile(
        VEC_ADD,
        "vec_add",
        [8, 1, 1],
        &[("A", &[1024]), ("B", &[1024]), ("C", &[1024])],
    );
    let c = counters_at(&p, VEC_ADD, "C[i] =");
    assert_eq!(c.global_load.requests, 64);
    assert_eq!(c.global_load.sectors, 4 * 64);
    assert_eq!(c.global_load.lines, 64);
    assert_eq!(c.global_load.bytes_requested, 2 * 4096);
    assert_eq!(c.global_store.requests, 32);
    assert_eq!(c.global_store.sectors, 4 * 32);
    // Every sector is touched once: 3 tensors x 4096 bytes cross DRAM.
    assert_eq!(p.totals().dram_bytes, 3 * 4096);
    assert_eq!(c.active_lanes_avg(), Some(32.0));
}

#[test]
fn lanes_matvec_16_byte_runs_take_sixteen_sectors_per_request() {
    let source = corpus_src("lanes_matvec");
    // N = 100 rows, one warp each (25 CTAs of 4 warps); K = 256 is two
    // steps of 32 lanes x 4 floats; each step loads 16 bytes per lane of W
    // and of x: 512 contiguous bytes, 16 sectors, 4 lines per request.
    let p = profile(
        &source,
        "lanes_matvec",
        [25, 1, 1],
        &[("W", &[100, 256]), ("x", &[1, 256]), ("y", &[1, 100])],
    );
    let c = counters_at(&p, &source, "acc += sum(");
    assert_eq!(c.global_load.requests, 100 * 2 * 2);
    assert_eq!(c.global_load.sectors, 16 * 400);
    assert_eq!(c.global_load.lines, 4 * 400);
    assert_eq!(c.global_load.bytes_requested, c.global_load.bytes_moved());
}

const COLUMN: &str = "\
@launch(32)
kernel column(A: tensor<f32>[N, K], y: tensor<f32>[N]) {
  let r = ctx.thread
  y[r] = A[r, 0]
}
";

#[test]
fn a_column_read_with_a_128_byte_stride_takes_32_sectors_per_request() {
    for k in [32u64, 64] {
        let p = profile(
            COLUMN,
            "column",
            [1, 1, 1],
            &[("A", &[32, k]), ("y", &[32])],
        );
        let c = counters_at(&p, COLUMN, "y[r] =");
        assert_eq!(c.global_load.requests, 1, "K = {k}");
        assert_eq!(c.global_load.sectors, 32, "K = {k}");
        assert_eq!(c.global_load.lines, 32, "K = {k}");
        assert_eq!(c.global_load.bytes_moved(), 1024);
        assert_eq!(c.global_load.bytes_requested, 128);
        assert_eq!(c.global_store.sectors, 4);
    }
}

#[test]
fn a_naive_transpose_read_from_a_shared_tile_takes_31_extra_wavefronts() {
    let source = corpus_src("tile_transpose");
    // One 32 x 32 tile, 8 warps x 4 iterations read t[j, i] with j the
    // lane: 32 words 128 bytes apart, all in bank i.
    let p = profile(
        &source,
        "tile_transpose",
        [1, 1, 1],
        &[("A", &[32, 32]), ("B", &[32, 32])],
    );
    let c = counters_at(&p, &source, "= t[j, i]");
    assert_eq!(c.shared_load.requests, 32);
    assert_eq!(c.shared_load.wavefronts, 32 * 32);
    assert_eq!(c.shared_load.bank_conflicts(), 31 * 32);
    // The writes to B go along a row: contiguous, 4 sectors a request.
    assert_eq!(c.global_store.sectors, 4 * c.global_store.requests);
}

const BROADCAST: &str = "\
@launch(32)
kernel bcast(A: tensor<f32>[32, 32], B: tensor<f32>[32]) {
  var t = A[0 :+ 32, 0 :+ 32]
  B[ctx.lane] = t[1, 3]
}
";

#[test]
fn a_broadcast_read_takes_one_wavefront() {
    let p = profile(
        BROADCAST,
        "bcast",
        [1, 1, 1],
        &[("A", &[32, 32]), ("B", &[32])],
    );
    let c = counters_at(&p, BROADCAST, "= t[1, 3]");
    assert_eq!(c.shared_load.requests, 1);
    assert_eq!(c.shared_load.wavefronts, 1);
    assert_eq!(c.shared_load.bank_conflicts(), 0);
}

// A statement follows the `if`, so the join (and the final `ret`) carry
// its line: an instruction without a `.loc` of its own belongs to the
// nearest `.loc` before it.
const FIRST8: &str = "\
@launch(32)
kernel first8(A: tensor<f32>[32], B: tensor<f32>[32], C: tensor<f32>[32]) {
  if ctx.lane < 8 {
    B[ctx.lane] = A[ctx.lane] * 2.0
  }
  C[ctx.lane] = 1.0
}
";

#[test]
fn a_divergent_if_runs_its_body_on_eight_lanes() {
    let p = profile(
        FIRST8,
        "first8",
        [1, 1, 1],
        &[("A", &[32]), ("B", &[32]), ("C", &[32])],
    );
    let body = counters_at(&p, FIRST8, "B[ctx.lane] =");
    assert!(body.warp_instructions > 0);
    assert_eq!(body.active_lanes_avg(), Some(8.0));
    assert_eq!(body.global_load.bytes_requested, 32);
    assert_eq!(body.global_load.sectors, 1);
    let branch = counters_at(&p, FIRST8, "if ctx.lane < 8");
    assert_eq!(branch.divergent_branches, 1);
    assert_eq!(p.totals().divergent_branches, 1);
    let after = counters_at(&p, FIRST8, "C[ctx.lane] =");
    assert_eq!(after.active_lanes_avg(), Some(32.0));
}

// The `if` closes the kernel: the warp reconverges at the final `ret`,
// which carries the closing brace's line, so the body's line counts only
// what its 8 lanes ran.
const FIRST8_LAST: &str = "\
@launch(32)
kernel first8_last(A: tensor<f32>[32], B: tensor<f32>[32]) {
  if ctx.lane < 8 {
    B[ctx.lane] = A[ctx.lane] * 2.0
  }
}
";

#[test]
fn a_closing_if_body_is_not_charged_with_the_final_ret() {
    let p = profile(
        FIRST8_LAST,
        "first8_last",
        [1, 1, 1],
        &[("A", &[32]), ("B", &[32])],
    );
    let body = counters_at(&p, FIRST8_LAST, "B[ctx.lane] =");
    assert!(body.warp_instructions > 0);
    assert_eq!(body.active_lanes_avg(), Some(8.0));
    let close = p.line(line_of(FIRST8_LAST, "if ctx.lane") + 3);
    assert_eq!(close.warp_instructions, 1, "the `ret` on the closing brace");
}

/// A 32 x 32 f32 shared tile read down column 5 by one warp, twice: at a
/// row stride of 32 words (line 10) and of 33 (line 20). The language lays
/// tiles out densely, so the padded tile is written as PTX by hand.
const TRANSPOSE_PTX: &str = r#"
.version 7.5
.target sm_80
.address_size 64
.file 1 "transpose.pho"
.visible .entry columns()
{
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .shared .align 4 .b8 tile[4224];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, tile;
  .loc 1 10 0
  mad.lo.s32 %r3, %r1, 128, 20;
  add.s32 %r4, %r2, %r3;
  ld.shared.f32 %f1, [%r4];
  .loc 1 20 0
  mad.lo.s32 %r5, %r1, 132, 20;
  add.s32 %r6, %r2, %r5;
  ld.shared.f32 %f2, [%r6];
  ret;
}
"#;

#[test]
fn padding_a_shared_tile_to_33_words_removes_the_conflicts() {
    let module = Module::parse(TRANSPOSE_PTX).expect("the PTX parses");
    let dev = Device::new();
    let mut p = Profiler::new(1, CtaSample::All);
    // Checks off: the tile is read without being written first.
    let opts = LaunchOptions {
        checks: false,
        ..LaunchOptions::default()
    };
    dev.launch(
        Launch::new(&module, "columns", [1, 1, 1], [32, 1, 1]),
        &[],
        &opts,
        Some(&mut p),
    )
    .expect("runs");
    let naive = p.line(10).shared_load;
    assert_eq!((naive.requests, naive.wavefronts), (1, 32));
    assert_eq!(naive.bank_conflicts(), 31);
    let padded = p.line(20).shared_load;
    assert_eq!((padded.requests, padded.wavefronts), (1, 1));
    assert_eq!(padded.bank_conflicts(), 0);
}

#[test]
fn sampling_counts_only_the_sampled_ctas() {
    let shapes: &[(&str, &[u64])] = &[("A", &[1024]), ("B", &[1024]), ("C", &[1024])];
    let req = request(VEC_ADD, "vec_add", 80, Some([8, 1, 1]), shapes);
    let (_, p) = phobos_explain::run_observed(&req, |_, _| Profiler::new(8, CtaSample::Spread(2)))
        .expect("runs");
    assert_eq!(p.ctas_profiled(), 2);
    // 2 CTAs of 4 warps, 2 loads each.
    assert_eq!(p.line(line_of(VEC_ADD, "C[i] =")).global_load.requests, 16);
}

/// Compiles `kernel` of a corpus file for sm_80 and launches it with
/// tensors of `bytes` each (values from a fixed pattern) and the given
/// dims, on one thread with a plain observer or on `threads` with a split
/// one.
fn launch_corpus(
    file: &str,
    grid: [u32; 3],
    tensors: &[(&str, usize)],
    dims: &[(&str, i32)],
    threads: Option<usize>,
) -> Profiler {
    let source = corpus_src(file.trim_end_matches(".pho"));
    let (kernels, diags) =
        phobos_core::compile(&source, file, &phobos_core::CompileOptions::for_arch(80));
    assert!(!diags.iter().any(|d| d.is_error()), "{file} compiles");
    let module = Module::parse(&kernels[0].ptx).expect("parses");
    let mut dev = Device::new();
    let ids: Vec<_> = tensors
        .iter()
        .map(|&(name, bytes)| {
            let data: Vec<u8> = (0..bytes).map(|i| (i * 7 % 251) as u8).collect();
            (name, dev.alloc_from(name, &data).expect("alloc"))
        })
        .collect();
    let (plan, args) = planned(&kernels[0].meta, grid, dims, &ids);
    let n_ctas = grid.iter().map(|&g| u64::from(g)).product();
    let mut p = Profiler::new(n_ctas, CtaSample::All);
    match threads {
        None => plan.run(
            &dev,
            &module,
            &args,
            &LaunchOptions::default(),
            Some(&mut p),
        ),
        Some(threads) => plan.run_split(
            &dev,
            &module,
            &args,
            &LaunchOptions {
                threads,
                ..LaunchOptions::default()
            },
            &mut p,
        ),
    }
    .expect("runs");
    p
}

/// The launch of `meta` on `grid`, planned on the one simulated launch
/// road (`phobos_runtime::sim_launch`) over the shapes `dims` give its
/// tensors, and its kernel arguments: each tensor's buffer by name from
/// `buffers`, each runtime dim's value from the binding.
fn planned<'m>(
    meta: &'m KernelMeta,
    grid: [u32; 3],
    dims: &[(&str, i32)],
    buffers: &[(&str, BufferId)],
) -> (Plan<'m>, Vec<KernelArg>) {
    let dim = |d: &DimRefMeta| match d {
        DimRefMeta::Named(n) => dims
            .iter()
            .find(|(x, _)| x == n)
            .map(|&(_, v)| v as u64)
            .unwrap_or_else(|| panic!("give dim {n}")),
        DimRefMeta::Const(c) => *c,
    };
    let shapes: Vec<Vec<u64>> = meta
        .params
        .iter()
        .map(|p| match &p.kind {
            ParamKindMeta::Tensor { dims, .. } => dims.iter().map(dim).collect(),
            ParamKindMeta::Scalar(_) => panic!("no scalars here"),
        })
        .collect();
    let args: Vec<ArgShape<'_>> = meta
        .params
        .iter()
        .zip(&shapes)
        .map(|(p, shape)| {
            let tensor = match &p.kind {
                ParamKindMeta::Tensor { elem, .. } => Some((*elem, &shape[..])),
                ParamKindMeta::Scalar(_) => None,
            };
            ArgShape::of_param(&p.kind, tensor)
        })
        .collect();
    let request = LaunchRequest {
        args: &args,
        grid: Some(grid),
        picked: &[],
        limits: sim_launch::limits(80),
    };
    let plan = Plan::bind(meta, &request).expect("binds");
    let kernel_args = plan
        .kernel_args(|i| {
            let name = &meta.params[i].name;
            let id = buffers.iter().find(|(n, _)| n == name).expect("a tensor").1;
            Some(KernelArg::Buffer(id))
        })
        .expect("the entry's arguments");
    (plan, kernel_args.into_vec())
}

/// A kernel, its grid, its dims and its scalars.
type Case<'a> = (
    &'a str,
    [u32; 3],
    Vec<(&'a str, usize)>,
    Vec<(&'a str, i32)>,
);

#[test]
fn a_launch_split_over_threads_counts_what_one_thread_counts() {
    // A transpose of 96 x 96 (9 CTAs: global and shared traffic, tiles
    // that share DRAM sectors with no other CTA) and a matvec whose x is
    // read by every CTA (the DRAM model must charge x's sectors to the
    // first CTA's line, whichever thread ran it).
    let cases: [Case; 2] = [
        (
            "tile_transpose.pho",
            [3, 3, 1],
            vec![("A", 96 * 96 * 4), ("B", 96 * 96 * 4)],
            vec![("N", 96), ("M", 96)],
        ),
        (
            "lanes_matvec.pho",
            [16, 1, 1],
            vec![("W", 64 * 256 * 4), ("x", 256 * 4), ("y", 64 * 4)],
            vec![("N", 64), ("K", 256)],
        ),
    ];
    for (file, grid, tensors, dims) in cases {
        let one = launch_corpus(file, grid, &tensors, &dims, None);
        let split = launch_corpus(file, grid, &tensors, &dims, Some(3));
        assert!(one.totals().global_load.requests > 0, "{file}");
        assert_eq!(one.lines(), split.lines(), "{file}");
        assert_eq!(one.totals(), split.totals(), "{file}");
        assert_eq!(one.ctas_profiled(), split.ctas_profiled(), "{file}");
    }
}

/// Plain simulation against profiled simulation of the same launch, the
/// launch alone (no compile, no IO), on one thread and on every core. Run
/// with `cargo test -p phobos-profile --release --test hand_computed --
/// --ignored --nocapture profiling_overhead`; `scripts/profile-overhead.py`
/// times the commands end to end, and docs/benchmarks.md records both.
#[test]
#[ignore]
fn profiling_overhead() {
    let source = corpus_src("lanes_matvec");
    let (kernels, _) = phobos_core::compile(
        &source,
        "lanes_matvec.pho",
        &phobos_core::CompileOptions::for_arch(80),
    );
    let k = &kernels[0];
    let module = Module::parse(&k.ptx).expect("parses");
    let (n, kk) = (4096i32, 1024i32);
    let mut dev = Device::new();
    let w = dev
        .alloc_from("W", &vec![0u8; (n * kk * 4) as usize])
        .expect("alloc");
    let x = dev
        .alloc_from("x", &vec![0u8; (kk * 4) as usize])
        .expect("alloc");
    let y = dev
        .alloc_from("y", &vec![0u8; (n * 4) as usize])
        .expect("alloc");
    let grid = [(n as u32).div_ceil(4), 1, 1];
    let (plan, args) = planned(
        &k.meta,
        grid,
        &[("N", n), ("K", kk)],
        &[("W", w), ("x", x), ("y", y)],
    );
    let time = |opts: &LaunchOptions, how: Option<bool>| {
        let mut p = Profiler::new(u64::from(grid[0]), CtaSample::All);
        let start = std::time::Instant::now();
        match how {
            None => plan.run(&dev, &module, &args, opts, None),
            Some(false) => plan.run(&dev, &module, &args, opts, Some(&mut p)),
            Some(true) => plan.run_split(&dev, &module, &args, opts, &mut p),
        }
        .expect("runs");
        let took = start.elapsed().as_secs_f64();
        assert!(how.is_none() || p.totals().global_load.requests > 0);
        took
    };
    let one = LaunchOptions {
        threads: 1,
        ..LaunchOptions::default()
    };
    let all = LaunchOptions::default();
    for round in 0..3 {
        let plain_1 = time(&one, None);
        let profiled_1 = time(&one, Some(false));
        let plain_all = time(&all, None);
        let profiled_all = time(&all, Some(true));
        println!(
            "round {round}: 1 thread: plain {plain_1:.3} s, profiled {profiled_1:.3} s ({:.2}x); all cores: plain {plain_all:.3} s, profiled (split) {profiled_all:.3} s ({:.2}x)",
            profiled_1 / plain_1,
            profiled_all / plain_all
        );
    }
}

#[test]
fn the_scratch_transpose_has_no_bank_conflicts_where_the_dense_tile_has_31_per_request() {
    // 96 x 96: 9 CTAs of 8 warps. `scratch_transpose` writes row k of its
    // [32, 33] scratch tile (32 consecutive words) and reads column k
    // (words 33 apart): every request is one wavefront. `tile_transpose`
    // reads its dense [32, 32] tile down a column: 32 words 32 apart, all
    // in one bank, 32 wavefronts for each request.
    let tensors = [("A", 96 * 96 * 4), ("B", 96 * 96 * 4)];
    let dims = [("N", 96), ("M", 96)];
    let padded = launch_corpus("scratch_transpose.pho", [3, 3, 1], &tensors, &dims, None);
    let t = padded.totals();
    assert_eq!(t.shared_store.requests, 9 * 32, "one store request per row");
    assert_eq!(
        t.shared_load.requests,
        9 * 32,
        "one load request per column"
    );
    assert_eq!(t.shared_store.bank_conflicts(), 0);
    assert_eq!(t.shared_load.bank_conflicts(), 0);
    // The same through a partial fill (`t[0 :+ 32, 0 :+ 32] = A[...]`):
    // chunk c of the box goes to thread c, so a warp stores one row.
    let filled = launch_corpus("scratch_fill.pho", [3, 3, 1], &tensors, &dims, None).totals();
    assert!(filled.shared_store.requests >= 9 * 32);
    assert_eq!(filled.shared_store.bank_conflicts(), 0);
    assert_eq!(filled.shared_load.bank_conflicts(), 0);
    let dense = launch_corpus("tile_transpose.pho", [3, 3, 1], &tensors, &dims, None);
    let d = dense.totals().shared_load;
    assert!(d.requests > 0);
    assert_eq!(
        d.bank_conflicts(),
        31 * d.requests,
        "the dense tile conflicts 32 ways"
    );
}
