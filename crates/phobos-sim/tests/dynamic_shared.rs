//! Dynamic shared memory: `.extern .shared` arrays live in the bytes a
//! launch passes (`LaunchOptions::dynamic_shared_bytes`, CUDA's
//! `sharedMemBytes`), checked against the module target's limit per CTA as
//! a GPU checks it.

use phobos_sim::{max_shared_bytes, Device, KernelArg, Launch, LaunchOptions, Module};

/// The kernel `neighbour` of `ptx/dynamic_neighbour.ptx` (each thread
/// stores its index at byte 90000 + 4 * tid of the dynamic array, and after
/// a barrier writes its neighbour's value to `y`), for `target`.
fn ptx(target: &str) -> String {
    include_str!("ptx/dynamic_neighbour.ptx").replace(".target sm_86", &format!(".target {target}"))
}

fn run(target: &str, dynamic: u32) -> Result<Vec<u32>, String> {
    let m = Module::parse(&ptx(target)).map_err(|e| e.to_string())?;
    let mut dev = Device::new();
    let y = dev.alloc("y", 32 * 4).map_err(|e| e.to_string())?;
    let opts = LaunchOptions {
        dynamic_shared_bytes: dynamic,
        ..LaunchOptions::default()
    };
    dev.launch(
        Launch::new(&m, "neighbour", [1, 1, 1], [32, 1, 1]),
        &[KernelArg::Buffer(y)],
        &opts,
        None,
    )
    .map_err(|e| e.to_string())?;
    let mut out = vec![0u8; 32 * 4];
    dev.read(y, 0, &mut out).map_err(|e| e.to_string())?;
    Ok(out
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[test]
fn an_extern_shared_array_holds_the_dynamic_bytes_of_the_launch() {
    let want: Vec<u32> = (0..32u32).map(|t| t ^ 1).collect();
    assert_eq!(run("sm_80", 100 * 1024), Ok(want));
}

#[test]
fn dynamic_shared_memory_is_checked_against_the_targets_limit() {
    // 100 KB fits sm_80 (163 KB) and sm_90 (227 KB), not sm_75 (64 KB) or
    // sm_86 (99 KB).
    assert!(run("sm_90", 100 * 1024).is_ok());
    for (target, limit) in [("sm_75", 65536), ("sm_86", 101376)] {
        let err = run(target, 100 * 1024).unwrap_err();
        assert!(
            err.contains(&format!("exceed the limit of {limit} per CTA on {target}")),
            "{err}"
        );
    }
    assert_eq!(max_shared_bytes(Some(80)), 163 * 1024);
    assert_eq!(max_shared_bytes(Some(90)), 227 * 1024);
}

#[test]
fn an_access_past_the_dynamic_bytes_given_is_out_of_bounds() {
    // 64 KB given, byte 90000 used: the simulator's memcheck finds it.
    let err = run("sm_80", 64 * 1024).unwrap_err();
    assert!(err.contains("shared"), "{err}");
}

#[test]
fn static_shared_memory_above_48_kilobytes_is_refused() {
    let src = ptx("sm_90").replace(
        ".extern .shared .align 16 .b8 dyn[];",
        ".shared .align 16 .b8 dyn[65536];",
    );
    let m = Module::parse(&src).unwrap();
    let err = Device::new()
        .launch(
            Launch::new(&m, "neighbour", [1, 1, 1], [32, 1, 1]),
            &[KernelArg::U64(0)],
            &LaunchOptions::default(),
            None,
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("65536 bytes of static shared memory exceed the limit of 49152"),
        "{err}"
    );
}

#[test]
fn a_sized_extern_shared_array_is_refused() {
    let src = ptx("sm_80").replace("dyn[];", "dyn[16];");
    let err = Module::parse(&src).unwrap_err().to_string();
    assert!(err.contains("must have no size"), "{err}");
}
