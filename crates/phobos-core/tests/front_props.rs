//! Property tests: random text, random token soup and mutated seed kernels
//! go through the lexer, parser, checker and renderer. None may panic or
//! overflow the stack, and every diagnostic must point inside the source.

use proptest::prelude::*;

const SEEDS: [&str; 5] = [
    include_str!("seed/lanes_matvec.pho"),
    include_str!("seed/lane_max.pho"),
    include_str!("seed/i8_matvec.pho"),
    include_str!("seed/staged_matvec.pho"),
    include_str!("seed/snippets.pho"),
];

/// Tokens of the language, and a few that are not.
const VOCAB: [&str; 64] = [
    "kernel",
    "fn",
    "let",
    "var",
    "if",
    "else",
    "for",
    "in",
    "range",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ":+",
    "=",
    "+=",
    "<<=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "&",
    "|",
    "^",
    "<<",
    ">>",
    "!",
    "==",
    "<",
    ">",
    "&&",
    "||",
    "@launch",
    "@autotune",
    "@grid",
    "@aligned",
    "ctx",
    ".",
    "lane",
    "thread",
    "warp",
    "sum",
    "shfl",
    "reduce",
    "over",
    "width",
    "xor",
    "from",
    "tensor",
    "f32",
    "i8",
    "x",
    "N",
    "0",
    "32",
    "1.5",
    "1e-3",
    "\n",
    "$",
];

/// Parse, check and render `src`; check the invariants that hold for any input.
fn run(src: &str) {
    let (kernels, diags) = phobos_core::check_source(src);
    for d in &diags {
        assert!(
            d.code.as_str().starts_with('P') && d.code.as_str().len() == 5,
            "bad code {}",
            d.code
        );
        for l in &d.labels {
            assert!(
                l.span.start <= l.span.end && l.span.end as usize <= src.len(),
                "{d:?}"
            );
        }
    }
    // A kernel comes back only when no error lies inside it, and `compile`
    // returns no kernel at all once any diagnostic is an error.
    for k in &kernels {
        for d in diags.iter().filter(|d| d.is_error()) {
            let at = d.labels.iter().find(|l| l.primary).map(|l| l.span.start);
            assert!(
                !at.is_some_and(|at| k.span.start <= at && at < k.span.end),
                "kernel `{}` returned with an error inside it: {d:?}",
                k.name
            );
        }
    }
    if diags.iter().any(|d| d.is_error()) {
        let (compiled, _) =
            phobos_core::compile(src, "p.pho", &phobos_core::CompileOptions::default());
        assert!(compiled.is_empty(), "compiled despite errors");
    }
    let text = phobos_core::render::render(&diags, "p.pho", src, false);
    assert_eq!(text.is_empty(), diags.is_empty());
    let _ = phobos_core::render::to_json(&diags, "p.pho", src);
}

fn mutate(seed: &str, ops: &[(u8, usize, usize, usize)]) -> String {
    let mut s: Vec<u8> = seed.as_bytes().to_vec();
    for &(op, a, b, t) in ops {
        if s.is_empty() {
            break;
        }
        let (i, j) = (a % s.len(), b % s.len());
        let (lo, hi) = (i.min(j), i.max(j).min(i.min(j) + 40));
        match op % 4 {
            0 => {
                s.drain(lo..hi);
            }
            1 => {
                let tok = VOCAB[t % VOCAB.len()].as_bytes().to_vec();
                s.splice(i..i, tok.into_iter().chain([b' ']));
            }
            2 => {
                let piece = s[lo..hi].to_vec();
                s.splice(j..j, piece);
            }
            _ => s.swap(i, j),
        }
    }
    String::from_utf8_lossy(&s).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(src in "\\PC{0,300}") {
        run(&src);
    }

    #[test]
    fn token_soup_never_panics(toks in prop::collection::vec(0..VOCAB.len(), 0..200)) {
        let src: Vec<&str> = toks.iter().map(|&t| VOCAB[t]).collect();
        run(&src.join(" "));
    }

    #[test]
    fn mutated_seed_kernels_never_panic(
        seed in 0..SEEDS.len(),
        ops in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>(), any::<usize>()), 1..6),
    ) {
        run(&mutate(SEEDS[seed], &ops));
    }
}

#[test]
fn unmutated_seeds_pass_the_same_checks() {
    for s in SEEDS {
        run(s);
        assert!(phobos_core::check_source(s).1.is_empty());
    }
}
