//! Mutation: delete, duplicate or swap tokens of a valid program and check
//! the result. `check` must answer with diagnostics (or accept), never
//! panic.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Split into tokens: identifier/number runs, single punctuation, spaces.
fn tokens(src: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = src.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
    let mut i = 0;
    while i < bytes.len() {
        let j = if word(bytes[i]) {
            let mut j = i;
            while j < bytes.len() && word(bytes[j]) {
                j += 1;
            }
            j
        } else {
            i + 1
        };
        // Keep multi-byte characters whole.
        let mut j = j;
        while !src.is_char_boundary(j) {
            j += 1;
        }
        out.push(&src[start..j]);
        start = j;
        i = j;
    }
    out
}

/// `src` with a few random token edits.
pub fn mutate(src: &str, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x3a7e);
    let mut t: Vec<&str> = tokens(src);
    for _ in 0..rng.gen_range(1..4) {
        if t.len() < 2 {
            break;
        }
        let i = rng.gen_range(0..t.len());
        match rng.gen_range(0..3) {
            0 => {
                t.remove(i);
            }
            1 => t.insert(i, t[i]),
            _ => {
                let j = rng.gen_range(0..t.len());
                t.swap(i, j);
            }
        }
    }
    t.concat()
}

/// Check a mutant; `Err` with the panic message if `check` panicked.
pub fn check_mutant(src: &str) -> Result<(), String> {
    let src = src.to_string();
    std::panic::catch_unwind(move || {
        let _ = phobos_core::check_source(&src);
    })
    .map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())
    })
}
