//! The fuzzer's own tests: a fixed seed range agrees (the CI run), and the
//! fuzzer finds a miscompile planted in the backend.

use phobos_fuzz::diff::Verdict;
use phobos_fuzz::{fuzz, Config};

/// The CI run: a fixed seed for a bounded count (about a minute in the
/// test profile on a CI machine).
#[test]
fn fixed_seed_range_has_no_mismatches() {
    let r = fuzz(&Config {
        seed: 200_000,
        count: COUNT,
        ..Config::default()
    });
    let shown: Vec<String> = r
        .findings
        .iter()
        .map(|f| {
            format!(
                "seed {}: {:?}\n{}",
                f.seed, f.minimized_verdict, f.minimized.src
            )
        })
        .collect();
    assert!(shown.is_empty(), "{}", shown.join("\n\n"));
    assert_eq!(r.programs, COUNT);
    // The range reaches past tile edges (`Features::edges`), and the
    // simulator reports every such index.
    assert!(r.caught > 20, "{} out-of-bounds indices", r.caught);
}

const COUNT: u64 = 4000;

/// With the planted bug (`shfl<down c, width w>` loses its segment clamp)
/// the fuzzer reports a mismatch, minimized to a program with a shuffle;
/// with the switch off the same seeds agree.
#[test]
fn planted_shuffle_clamp_bug_is_found() {
    let cfg = Config {
        seed: PLANTED_SEED,
        count: 40,
        ..Config::default()
    };
    phobos_core::backend::set_planted_bug(true);
    let on = fuzz(&cfg);
    phobos_core::backend::set_planted_bug(false);
    let off = fuzz(&cfg);
    assert!(
        on.findings
            .iter()
            .any(|f| matches!(f.minimized_verdict, Verdict::Mismatch(_))
                && f.minimized.src.contains("shfl<down")),
        "the planted bug went unnoticed: {:?}",
        on.findings.iter().map(|f| &f.verdict).collect::<Vec<_>>()
    );
    assert!(off.findings.is_empty(), "{:?}", off.findings);
}

const PLANTED_SEED: u64 = 0;

/// Over a few hundred seeds the generator uses every construct the issue
/// lists: each scalar type, each run built-in, each collective op and
/// width, each shuffle mode, tiles, control flow, fns and autotune.
#[test]
fn generator_covers_the_language() {
    let feat = phobos_fuzz::gen::Features::default();
    let all: String = (0..400)
        .map(|s| phobos_fuzz::gen::generate(s, &feat).render())
        .collect();
    // `bool(x)` is not a conversion; bools come from comparisons and tensors.
    let mut want: Vec<String> = vec!["tensor<bool>".to_string()];
    want.extend(
        [
            "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64",
        ]
        .iter()
        .map(|t| format!("{t}(")),
    );
    want.extend(
        [
            "sum(i32(",
            "sum(A",
            "elem(",
            "word(",
            "dp4a(",
            "store(",
            ":+ 8] = ",
            "sum<over ctx.thread>",
            "max<over ctx.thread>",
            "min<over ctx.thread>",
            "argmax<over ctx.thread>",
            "any<over ctx.thread>",
            "all<over ctx.thread>",
            "reduce<over ctx.thread>",
            "argmax<over ctx.lane",
            "reduce<over ctx.lane",
            "any<over ctx.lane",
            "all<over ctx.lane",
            "shfl<from",
            "shfl<xor",
            "shfl<down",
            "shfl<up",
            "width 1>",
            "width 2>",
            "width 4>",
            "width 8>",
            "width 16>",
            "width 32>",
            "var t",
            "= Q[0 :+ 2,",
            "T[0 :+ 2,",
            "if ctx.lane",
            "if ctx.warp",
            "for i",
            "range(0, ctx.warp + 1",
            "range(0, U",
            "mix(",
            " / 3)",
            " % 7)",
            " / 16)",
            " % 65537)",
            "big)",
            "flip)",
            "@autotune",
            "popcount(",
            "byteperm(",
            "cdiv(",
            "select(",
            "fma(",
            "sqrt(",
            "floor(",
            "exp(",
            "sin(",
            "tanh(",
            "log2(",
            "rsqrt(",
            " % ((",
            " >> (",
            "else",
            // CTA collectives in a tile subscript of a condition (issue 34).
            " + min<over ctx.thread>((ctx.block.x * ctx.threads + ctx.thread)))",
            " + reduce<over ctx.thread>((ctx.block.x * ctx.threads + ctx.thread), big))",
            // Names from the whole identifier space (issue 35).
            "kernel fz(",
            "kernel __(",
            "_smem: tensor<",
            "p_O0: tensor<",
            "local0_",
            "__U1 = ",
            "WARP_SZ_",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "_: ",
            // Scratch tiles across loop trips (issue 26): declared before
            // the loop and in it, written on the first trip only, read at
            // constant edge indices.
            "= shared<f32>[32]",
            "= shared<i32>[32]",
            "= shared<i8>[32]",
            "  for i",
            " == 0 {",
            "[31 - ctx.thread] = ",
            "[31]",
            "[0]",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let missing: Vec<&String> = want.iter().filter(|w| !all.contains(w.as_str())).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
    // Kernel names of every length up to the limit.
    let longest = all
        .lines()
        .filter_map(|l| l.strip_prefix("kernel "))
        .map(|l| l.split('(').next().unwrap_or("").len())
        .max();
    assert_eq!(longest, Some(200));
}

#[test]
fn awkward_names_leave_the_program_the_same() {
    // The names come from a generator of their own: without them a seed
    // gives the same program with the plain names, line for line.
    let on = phobos_fuzz::gen::Features::default();
    let off = phobos_fuzz::gen::Features {
        awkward_names: false,
        ..on.clone()
    };
    let mut renamed = 0;
    for seed in 0..50 {
        let a = phobos_fuzz::gen::generate(seed, &on).render();
        let b = phobos_fuzz::gen::generate(seed, &off).render();
        assert!(b.contains("kernel fz("), "{b}");
        assert_eq!(a.lines().count(), b.lines().count(), "{a}\n{b}");
        renamed += usize::from(a != b);
    }
    assert!(renamed > 40, "only {renamed} of 50 programs renamed");
}

/// `Features::aligned_tiles` (issue 30): some programs promise aligned
/// dims, and their tile copies then move vector chunks, on the unmasked
/// interior path (a `tile_edge` arm beside it) as well as the masked one.
/// Without the feature the same seeds give the same programs but for the
/// `@aligned` line and the tile starts.
#[test]
fn aligned_tiles_reach_vector_chunks_on_the_interior_path() {
    let on = phobos_fuzz::gen::Features::default();
    let off = phobos_fuzz::gen::Features {
        aligned_tiles: false,
        ..on.clone()
    };
    let opts = phobos_core::CompileOptions::for_arch(80);
    let (mut aligned, mut vector_interior) = (0, 0);
    for seed in 0..120 {
        let p = phobos_fuzz::gen::generate(seed, &on);
        let text = p.render();
        let plain = phobos_fuzz::gen::generate(seed, &off).render();
        assert!(!plain.contains("@aligned"), "{plain}");
        if p.aligned.is_empty() {
            assert_eq!(text, plain);
            continue;
        }
        assert_eq!(
            text.lines().count(),
            plain.lines().count() + 1,
            "{text}\n{plain}"
        );
        aligned += 1;
        let (kernels, diags) = phobos_core::compile(&text, "fz.pho", &opts);
        assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}\n{text}");
        let ptx = &kernels[0].ptx;
        // A vector load of a tile chunk before the edge arm: the interior path.
        if let Some(edge) = ptx.find("_tile_edge:") {
            if ptx[..edge].contains("ld.global.nc.v") {
                vector_interior += 1;
            }
        }
    }
    assert!(aligned > 30, "only {aligned} of 120 programs aligned");
    assert!(
        vector_interior > 5,
        "only {vector_interior} aligned programs have vector chunks on the interior path"
    );
}
