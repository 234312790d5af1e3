//! Fuzz the front end: any bytes through the lexer, parser, checker and
//! renderer must not panic or overflow the stack. Run with
//! `cargo fuzz run check` from crates/phobos-core (nightly toolchain).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let (_, diags) = phobos_core::check_source(src);
    let _ = phobos_core::render::render(&diags, "fuzz.pho", src, false);
    let _ = phobos_core::render::to_json(&diags, "fuzz.pho", src);
});
