//! Malformed and mutated PTX never panics or hangs: every input either
//! parses and runs to a result or an error, or is refused with an error.

use phobos_sim::{Device, KernelArg, Launch, LaunchOptions, Module};
use rand::{rngs::StdRng, Rng, SeedableRng};

const BASE: &str = include_str!("ptx/lanes_matvec.ptx");

/// Replaces, deletes or duplicates a token-sized piece of the text.
fn mutate(src: &str, r: &mut StdRng) -> String {
    let words: Vec<&str> = src
        .split_inclusive(|c: char| c.is_whitespace() || ",;[]{}".contains(c))
        .collect();
    let mut out: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    let picks = [
        "0",
        "-1",
        "4294967296",
        "%r1",
        "%p1",
        "%rd1",
        "[%rd1+7]",
        ".v4",
        "bra",
        "$L_loop",
        "{",
        "}",
        ";",
        ".f16",
        "shfl.sync.idx.b32",
        "bar.sync",
        "99999999999",
        "%tid.q",
        "ld.shared.u32",
        ".shared .b8 s[4000000000];",
    ];
    for _ in 0..=r.gen_range(0..3) {
        let i = r.gen_range(0..out.len());
        match r.gen_range(0..3) {
            0 => out[i] = picks[r.gen_range(0..picks.len())].to_string() + " ",
            1 => out[i].clear(),
            _ => {
                let w = out[i].clone();
                out.insert(i, w);
            }
        }
    }
    out.concat()
}

#[test]
fn mutated_ptx_gives_errors_not_panics() {
    let mut r = StdRng::seed_from_u64(0x5EED);
    let mut parsed = 0;
    for _ in 0..400 {
        let src = mutate(BASE, &mut r);
        let Ok(m) = Module::parse(&src) else {
            continue;
        };
        parsed += 1;
        let mut dev = Device::new();
        let w = dev.alloc("W", 8 * 128 * 4).expect("alloc");
        let x = dev.alloc("x", 128 * 4).expect("alloc");
        let y = dev.alloc("y", 8 * 4).expect("alloc");
        let args = [
            KernelArg::Buffer(w),
            KernelArg::Buffer(x),
            KernelArg::Buffer(y),
            KernelArg::I32(8),
            KernelArg::I32(128),
        ];
        let opts = LaunchOptions {
            max_steps: 20_000,
            threads: 1,
            ..LaunchOptions::default()
        };
        for entry in m.entry_names() {
            let _ = dev.launch(
                Launch::new(&m, entry, [2, 1, 1], [128, 1, 1]),
                &args,
                &opts,
                None,
            );
        }
    }
    assert!(
        parsed > 20,
        "the mutations should leave some modules parseable ({parsed})"
    );
}

#[test]
fn resource_limits_are_errors() {
    let big_regs = BASE.replace(".reg .b32 %r<16>;", ".reg .b32 %r<100000000>;");
    assert!(Module::parse(&big_regs)
        .unwrap_err()
        .to_string()
        .contains("more than 65536 registers"));
    let big_shared = BASE.replace(
        ".reg .pred %p<4>;",
        ".reg .pred %p<4>;\n    .shared .align 4 .b8 s[1000000];",
    );
    let m = Module::parse(&big_shared).expect("parses");
    let dev = Device::new();
    let err = dev.launch(
        Launch::new(&m, "lanes_matvec", [1, 1, 1], [128, 1, 1]),
        &[],
        &LaunchOptions::default(),
        None,
    );
    assert!(err
        .unwrap_err()
        .to_string()
        .contains("shared memory exceed the limit"));
}
