//! explain binds launches with the one launch binding
//! (`phobos_core::binding`): the same limits and variant choice as the
//! runtime and `phobos sim`.

use phobos_explain::{trace, ExplainError, Input, Request};

/// A free tuning constant with `@grid` following it (the corpus kernel).
const TUNED: &str = include_str!("../../../tests/in/autotune_block.pho");

fn request(grid: Option<[u32; 3]>, inputs: Vec<(&str, Input)>) -> Request {
    let mut r = Request::new(
        TUNED.to_string(),
        "autotune_block.pho".to_string(),
        Some("autotune_block".to_string()),
        80,
        grid,
    );
    r.inputs = inputs
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    r
}

fn shapes(n: u64) -> Vec<(&'static str, Input)> {
    vec![
        ("x", Input::Random { shape: vec![n] }),
        ("y", Input::Random { shape: vec![n] }),
    ]
}

#[test]
fn a_grid_over_the_device_limits_is_refused_before_anything_runs() {
    // Before the shared binding, explain accepted any grid and simulated it.
    let err = trace(&request(Some([1, 70_000, 1]), shapes(1000))).unwrap_err();
    let ExplainError::Usage(message) = &err else {
        panic!("{err:?}");
    };
    assert!(message.contains("exceeds the device's limit"), "{message}");
}

#[test]
fn a_picked_constant_chooses_the_variant_and_its_grid() {
    let mut inputs = shapes(1000);
    inputs.push(("BLOCK", Input::Scalar("128".into())));
    let t = trace(&request(None, inputs)).expect("a trace");
    assert_eq!(t.threads, 128);
    assert_eq!(t.grid, [8, 1, 1]);
    let t = trace(&request(None, shapes(1000))).expect("a trace");
    assert_eq!((t.threads, t.grid), (64, [16, 1, 1]));
    let mut inputs = shapes(1000);
    inputs.push(("BLOCK", Input::Scalar("96".into())));
    let err = trace(&request(None, inputs)).unwrap_err();
    assert!(
        err.to_string()
            .contains("no variant is compiled for BLOCK = 96"),
        "{err}"
    );
}

#[test]
fn shapes_that_disagree_name_both_tensors() {
    let inputs = vec![
        ("x", Input::Random { shape: vec![10] }),
        ("y", Input::Random { shape: vec![12] }),
    ];
    let err = trace(&request(None, inputs)).unwrap_err();
    assert!(
        err.to_string()
            .contains("dim `N` disagrees: it is 10 from `x` (axis 0) but 12 from `y` (axis 0)"),
        "{err}"
    );
}
