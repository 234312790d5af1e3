//! The public API: module loading errors, argument checking, launch
//! validation, host copies, statistics and the observer hooks.

mod common;
use common::*;

// The conformance tests' `line_of`: the only line of a text that contains
// a snippet.
#[path = "../../../tests/src/source_lines.rs"]
mod source_lines;
use phobos_sim::{
    AccessKind, Device, KernelArg, Launch, LaunchOptions, LaunchStats, Module, Observer, SimError,
    Space, StepInfo,
};
use source_lines::line_of;

const LANES_MATVEC: &str = include_str!("ptx/lanes_matvec.ptx");

#[test]
fn unsupported_instructions_are_named_with_their_line() {
    let ptx = kernel(
        "",
        "    tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex, {%f5, %f6}];\n",
    );
    let err = Module::parse(&ptx).unwrap_err();
    let line = line_of(&ptx, "tex.2d");
    assert_eq!(
        err.to_string(),
        format!("unsupported instruction tex.2d.v4.f32.f32 at line {line}")
    );
    let err = Module::parse(&kernel("", "    add.cc.u32 %r1, %r1, 1;\n")).unwrap_err();
    assert!(
        matches!(err, SimError::Unsupported { ref instruction, .. } if instruction == "add.cc.u32"),
        "{err}"
    );
    let err = Module::parse(".version 7.5\n.func f() { ret; }").unwrap_err();
    assert_eq!(err.to_string(), "unsupported instruction .func at line 2");
}

#[test]
fn malformed_ptx_reports_the_line() {
    let err = Module::parse(&kernel("", "    add.u32 %r1, %nope, 1;\n")).unwrap_err();
    assert!(matches!(err, SimError::Parse { .. }), "{err}");
    assert!(err.to_string().contains("undeclared name `%nope`"), "{err}");
    let err = Module::parse(&kernel("", "    bra $missing;\n")).unwrap_err();
    assert!(
        err.to_string().contains("undefined label `$missing`"),
        "{err}"
    );
}

#[test]
fn module_introspection() {
    let m = Module::parse(LANES_MATVEC).expect("parses");
    assert_eq!(m.entry_names(), vec!["lanes_matvec"]);
    let p = m.params("lanes_matvec").expect("entry");
    let names: Vec<_> = p
        .iter()
        .map(|p| (p.name.as_str(), p.ty.name(), p.offset))
        .collect();
    assert_eq!(
        names,
        vec![
            ("p_W", "u64", 0),
            ("p_x", "u64", 8),
            ("p_y", "u64", 16),
            ("p_N", "s32", 24),
            ("p_K", "s32", 28)
        ]
    );
    assert_eq!(m.file_name(1), "lanes_matvec.pho");
    let err = m.params("nope").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no entry `nope` in the PTX module (it has: lanes_matvec)"
    );
}

fn matvec_setup(
    n: usize,
    k: usize,
) -> (
    Device,
    [KernelArg; 5],
    phobos_sim::BufferId,
    Vec<f32>,
    Vec<f32>,
) {
    let w: Vec<f32> = (0..n * k).map(|i| ((i % 17) as f32 - 8.0) * 0.25).collect();
    let x: Vec<f32> = (0..k).map(|i| ((i % 5) as f32 - 2.0) * 0.5).collect();
    let mut dev = Device::new();
    let bits = |v: &[f32]| words_to_bytes(&v.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let wb = dev.alloc_from("W", &bits(&w)).expect("alloc");
    let xb = dev.alloc_from("x", &bits(&x)).expect("alloc");
    let yb = dev.alloc("y", n * 4).expect("alloc");
    let [wa, xa, ya] = [wb, xb, yb].map(KernelArg::Buffer);
    let args = [
        wa,
        xa,
        ya,
        KernelArg::I32(n as i32),
        KernelArg::I32(k as i32),
    ];
    (dev, args, yb, w, x)
}

/// Launches lanes_matvec over `grid` CTAs of `[threads, 1, 1]` with the
/// default options.
fn launch_matvec(
    dev: &Device,
    grid: [u32; 3],
    threads: u32,
    args: &[KernelArg],
    observer: Option<&mut dyn Observer>,
) -> Result<LaunchStats, SimError> {
    let m = Module::parse(LANES_MATVEC).expect("parses");
    let (opts, block) = (LaunchOptions::default(), [threads, 1, 1]);
    dev.launch(
        Launch::new(&m, "lanes_matvec", grid, block),
        args,
        &opts,
        observer,
    )
}

#[test]
fn lanes_matvec_with_ragged_rows_matches_a_reference() {
    // 10 rows: the last CTA has two rows past N, which must be skipped.
    let (n, k) = (10, 256);
    let (dev, args, yb, w, x) = matvec_setup(n, k);
    let stats = launch_matvec(&dev, [3, 1, 1], 128, &args, None).expect("runs");
    let y = bytes_to_words(&dev.to_vec(yb).expect("read"));
    for r in 0..n {
        let want: f64 = (0..k)
            .map(|c| f64::from(w[r * k + c]) * f64::from(x[c]))
            .sum();
        let got = f64::from(f32::from_bits(y[r]));
        assert!(
            (got - want).abs() <= 1e-5 * want.abs().max(1.0),
            "row {r}: {got} vs {want}"
        );
    }
    assert_eq!(stats.ctas, 3);
    assert_eq!(stats.written.len(), 1);
    assert!(stats.thread_instructions > stats.warp_instructions);
}

#[test]
fn arguments_are_checked_against_the_params() {
    let (dev, args, ..) = matvec_setup(4, 128);
    let err = launch_matvec(&dev, [1, 1, 1], 128, &args[..4], None).unwrap_err();
    assert!(
        err.to_string().contains("the kernel takes 5 parameters"),
        "{err}"
    );
    let mut bad = args.clone();
    bad[3] = KernelArg::F32(4.0);
    let err = launch_matvec(&dev, [1, 1, 1], 128, &bad, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "bad arguments for kernel `lanes_matvec`: parameter 3 `p_N` is .s32 (4 bytes), but the argument is F32(4.0)"
    );
    bad[3] = KernelArg::Bytes(vec![4, 0, 0, 0]);
    launch_matvec(&dev, [1, 1, 1], 128, &bad, None).expect("raw bytes fit");
}

#[test]
fn launch_configurations_are_validated() {
    let (dev, args, ..) = matvec_setup(4, 128);
    let opts = LaunchOptions::default();
    let err = launch_matvec(&dev, [0, 1, 1], 128, &args, None).unwrap_err();
    assert!(
        err.to_string().contains("must not have a zero dimension"),
        "{err}"
    );
    let err = launch_matvec(&dev, [1, 1, 1], 64, &args, None).unwrap_err();
    assert!(
        err.to_string().contains("requires a block of [128, 1, 1]"),
        "{err}"
    );
    let plain = Module::parse(&kernel("", "")).expect("parses");
    let block = [1025, 1, 1];
    let err = dev.launch(
        Launch::new(&plain, "k", [1, 1, 1], block),
        &args[..2],
        &opts,
        None,
    );
    let err = err.unwrap_err();
    assert!(
        err.to_string().contains("exceeds the limit of 1024"),
        "{err}"
    );
}

#[test]
fn host_copies_are_bounds_checked() {
    let mut dev = Device::new();
    let b = dev.alloc("b", 8).expect("alloc");
    dev.write(b, 4, &[1, 2, 3, 4]).expect("fits");
    let err = dev.write(b, 6, &[1, 2, 3]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "device memory: copy of 3 bytes at offset 6 is outside buffer `b` of 8 bytes"
    );
    let mut out = [0u8; 4];
    dev.read(b, 4, &mut out).expect("fits");
    assert_eq!(out, [1, 2, 3, 4]);
    assert_eq!(dev.len(b).expect("len"), 8);
    assert_eq!(dev.name(b).expect("name"), "b");
    let c = dev.alloc("c", 1).expect("alloc");
    assert_ne!(dev.address(b).expect("addr"), dev.address(c).expect("addr"));
}

#[derive(Default)]
struct Recorder {
    steps: usize,
    barriers: usize,
    shuffles: Vec<(u32, u32)>,
    loads: Vec<(u32, u64, u32, Option<usize>)>,
    stores: usize,
    ctas: Vec<u32>,
    lines: Vec<u32>,
}

impl Observer for Recorder {
    fn step(&mut self, info: &StepInfo<'_>) {
        self.steps += 1;
        if info.kind == phobos_sim::OpKind::Barrier {
            self.barriers += 1;
        }
        if info.opcode.starts_with("shfl") && info.warp == 0 && self.shuffles.is_empty() {
            self.shuffles = info.shuffles.to_vec();
        }
        for a in info.accesses.iter().filter(|a| a.space != Space::Param) {
            assert_eq!(a.space, Space::Global);
            match a.kind {
                AccessKind::Load => self.loads.push((a.thread, a.addr, a.bytes, a.buffer)),
                AccessKind::Store => self.stores += 1,
                AccessKind::Atomic => {}
            }
        }
        if !self.ctas.contains(&info.cta) {
            self.ctas.push(info.cta);
        }
        if let Some((_, line, _)) = info.loc {
            self.lines.push(line);
        }
    }
    fn wants_cta(&mut self, cta: u32) -> bool {
        cta == 1
    }
}

#[test]
fn observer_sees_accesses_shuffles_and_only_the_ctas_it_wants() {
    let (dev, args, ..) = matvec_setup(8, 128);
    let mut rec = Recorder::default();
    launch_matvec(&dev, [2, 1, 1], 128, &args, Some(&mut rec)).expect("runs");
    assert_eq!(rec.ctas, vec![1]);
    assert_eq!(
        rec.shuffles,
        (0..32).map(|l| (l, l ^ 16)).collect::<Vec<_>>()
    );
    // 4 warps x 32 lanes x one k step x 2 v4 loads (W and x).
    assert_eq!(rec.loads.len(), 4 * 32 * 2);
    assert!(rec.loads.iter().all(|&(_, _, bytes, _)| bytes == 16));
    assert!(rec.loads.iter().any(|&(_, _, _, b)| b == Some(0)));
    assert!(rec.loads.iter().any(|&(_, _, _, b)| b == Some(1)));
    assert_eq!(rec.stores, 4, "lane 0 of each warp stores");
    assert_eq!(rec.barriers, 0);
    assert!(rec.lines.contains(&12) && rec.lines.contains(&9));
    assert!(rec.steps > 0);
}

#[test]
fn observer_sees_barriers() {
    struct Bars(usize, u32);
    impl Observer for Bars {
        fn step(&mut self, info: &StepInfo<'_>) {
            if info.kind == phobos_sim::OpKind::Barrier {
                self.0 += 1;
                self.1 |= info.active;
            }
        }
    }
    let ptx = kernel("", "    bar.sync 0;\n    bar.sync 0;\n");
    let m = Module::parse(&ptx).expect("parses");
    let mut dev = Device::new();
    let a = dev.alloc("a", 4).expect("alloc");
    let mut obs = Bars(0, 0);
    dev.launch(
        Launch::new(&m, "k", [1, 1, 1], [64, 1, 1]),
        &[KernelArg::Buffer(a), KernelArg::Buffer(a)],
        &LaunchOptions::default(),
        Some(&mut obs),
    )
    .expect("runs");
    assert_eq!(obs.0, 4, "two barriers, two warps");
    assert_eq!(obs.1, u32::MAX);
}

#[test]
fn instruction_counts() {
    // Prologue of 6, then setp, a guarded add (counted for every lane that
    // reached it), a divergent branch, an add for lanes 16-31, and ret.
    let body = "
    setp.lt.u32 %p1, %r0, 16;
    @%p1 add.u32 %r1, %r1, 1;
    @%p1 bra $x;
    add.u32 %r2, %r2, 1;
$x:
";
    let r = run_with(&kernel("", body), 32, &[0], 1, &LaunchOptions::default()).expect("runs");
    assert_eq!(r.stats.thread_instructions, 32 * 10 + 16);
    assert_eq!(r.stats.warp_instructions, 11);
}
