//! `phobos profile` as users run it: the JSON schema's fields, the text
//! table, sampling stated, and errors as exit codes.

use std::process::Command;

mod common;

fn phobos(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_phobos"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("phobos runs")
}

const MATVEC: [&str; 9] = [
    "profile",
    "tests/in/lanes_matvec.pho",
    "--kernel",
    "lanes_matvec",
    "--grid",
    "25",
    "W=shape:100x256",
    "x=shape:1x256",
    "y=shape:1x100",
];

#[test]
fn json_has_the_documented_fields_per_line_and_kernel() {
    let mut args = MATVEC.to_vec();
    args.extend(["--format", "json", "--gpu", "a100"]);
    let out = phobos(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["schema_version"], 1);
    let lines = v["lines"].as_array().expect("lines");
    let inner = lines
        .iter()
        .find(|l| {
            l["source"]
                .as_str()
                .is_some_and(|s| s.contains("acc += sum("))
        })
        .expect("the loop body line");
    assert_eq!(inner["global_requests"], 400);
    assert_eq!(inner["global_sectors"], 6400);
    for field in [
        "line",
        "shared_requests",
        "shared_wavefronts",
        "bank_conflicts",
        "active_lanes_avg",
    ] {
        assert!(inner.get(field).is_some(), "{field}");
    }
    let k = &v["kernel"];
    assert_eq!(k["arch"], "sm_80", "--arch follows --gpu");
    assert_eq!(k["sampling"]["ctas_profiled"], 25);
    assert_eq!(k["totals"]["global_load"]["requests"], 400);
    assert_eq!(k["occupancy"]["threads_per_cta"], 128);
    assert_eq!(k["roofline"]["binding_roof"], "dram");
}

#[test]
fn text_states_the_sampling() {
    let mut args = MATVEC.to_vec();
    args.extend(["--cta-sample", "5"]);
    let out = phobos(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sampled: 5 of 25 CTAs profiled"), "{text}");
    assert!(text.contains("acc += sum("), "{text}");
}

#[test]
fn bad_input_is_a_usage_error() {
    let mut args = MATVEC.to_vec();
    args.extend(["--gpu", "v100"]);
    let out = phobos(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("h100, h200, a100, l4, rtx4090"));
    let out = phobos(&["profile", "tests/in/lanes_matvec.pho", "--kernel", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let mut args = MATVEC.to_vec();
    args.extend(["--cta-sample", "0"]);
    assert_eq!(phobos(&args).status.code(), Some(2));
}

#[test]
fn shared_memory_above_48_kilobytes_is_profiled_up_to_the_targets_limit() {
    // Regression (issue 28): profile (through explain) bound every launch
    // against the 48 KB of static shared memory and passed no dynamic
    // shared memory, so it refused these kernels on every target.
    for (arch, src, inputs) in common::ABOVE_48K {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = common::write(dir.path(), "big.pho", src);
        let mut args = vec!["profile", &file, "--arch", arch, "--format", "json"];
        args.extend(inputs);
        let out = phobos(&args);
        assert!(
            out.status.success(),
            "{arch}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(v["kernel"]["arch"], arch);
        assert!(
            v["kernel"]["totals"]["shared_requests"].as_u64() > Some(0),
            "{arch}: the tiles go through shared memory"
        );
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let file = common::write(dir.path(), "big.pho", common::TILES_128K);
    let mut args = vec!["profile", &file, "--arch", "sm_75"];
    args.extend(common::ABOVE_48K[2].2);
    let out = phobos(&args);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sm_75 allows at most 65536 bytes per CTA"),
        "{err}"
    );
}
