//! Atomics in the trace: the boxes of a tensor an atomic updates, and the
//! shared bytes of a tile it updates, carry the kind `atomic` (the page
//! outlines them in dashed purple), and the readout says "updates
//! atomically".

#[path = "support/kernels.rs"]
mod kernels;

const HISTOGRAM: &str = "@launch(64)
kernel hist(X: tensor<u8>[N], H: tensor<u32>[64]) {
  var bins = shared<u32>[64]
  bins[ctx.thread] = 0
  for i in range(ctx.thread, N, ctx.threads) {
    atomic_add(bins[i32(X[i]) % 64], 1)
  }
  atomic_add(H[ctx.thread], bins[ctx.thread])
}
";

#[test]
fn atomics_are_marked_on_the_boxes_and_bytes_they_touch() {
    let req = kernels::request(
        HISTOGRAM,
        "hist",
        75,
        Some([1, 1, 1]),
        &[("X", &[300]), ("H", &[64])],
    );
    let trace = phobos_explain::trace(&req).expect("explain runs");
    let v = kernels::json(&trace);
    let picked = v["picked"].as_u64().expect("picked") as usize;
    let steps = v["ctas"][picked]["steps"].as_array().expect("steps");
    let kinds = |field: &str| -> Vec<String> {
        steps
            .iter()
            .flat_map(|s| s[field].as_array().cloned().unwrap_or_default())
            .map(|b| b["kind"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let boxes = kinds("boxes");
    assert!(boxes.iter().any(|k| k == "atomic"), "H's boxes: {boxes:?}");
    assert!(boxes.iter().any(|k| k == "read"), "X's boxes: {boxes:?}");
    let shared = kinds("shared");
    assert!(shared.iter().any(|k| k == "atomic"), "bins: {shared:?}");
    assert!(
        shared.iter().any(|k| k == "write"),
        "the zeroing: {shared:?}"
    );
    let readout: Vec<String> = steps
        .iter()
        .flat_map(|s| s["readout"].as_array().cloned().unwrap_or_default())
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect();
    assert!(
        readout
            .iter()
            .any(|l| l.contains("updates atomically") || l.contains("update atomically")),
        "{readout:#?}"
    );
}
