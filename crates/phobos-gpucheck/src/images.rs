//! The JSON form of [`phobos_runtime::LoadedImage`], shared by
//! phobos-bench and phobos-diff: which image the driver loaded for each
//! kernel (cubin or PTX, its architecture, the JIT log, what was refused
//! first) and each entry's occupancy (docs/gpu-bundle.md).

use phobos_runtime::LoadedImage;
use serde_json::{json, Value};

pub fn image_json(i: &LoadedImage) -> Value {
    json!({
        "kernel": i.kernel,
        "module": i.module,
        "image": format!("{} {}", i.kind, phobos_core::arch::name(i.arch)),
        "kind": i.kind,
        "arch": i.arch,
        "jit_log": i.jit_log,
        "refused": i.refused,
        "entries": i.entries.iter().map(|e| json!({
            "entry": e.entry,
            "threads": e.threads,
            "registers": e.registers,
            "static_shared_bytes": e.static_shared_bytes,
            "dynamic_shared_bytes": e.dynamic_shared_bytes,
            "ctas_per_sm": e.ctas_per_sm,
        })).collect::<Vec<_>>(),
    })
}
