//! A simulator report about shared memory names the planned tile or scratch
//! buffer the address falls in (the simulator itself knows only the PTX's
//! one shared array); where buffers reuse bytes, the one live at the
//! reported line wins.

use phobos_runtime::meta::{SharedBuffer, VariantMeta};
use phobos_sim::{CheckKind, CheckReport, SourceLoc, Space};

fn variant() -> VariantMeta {
    let buf = |name: &str, offset, bytes, live_lines| SharedBuffer {
        name: name.into(),
        offset,
        bytes,
        live_lines,
        padding: None,
    };
    VariantMeta {
        entry: "k".into(),
        values: vec![],
        threads: 128,
        grid: None,
        ptx_params: vec![],
        shared_bytes: 1024,
        shared_plan: vec![
            buf("xs", 0, 1024, (4, 10)),
            buf("sum@12:15", 0, 16, (12, 12)),
        ],
        barriers: vec![],
        loads: vec![],
        arrays: vec![],
    }
}

fn report(space: Space, addr: u64, line: u32) -> CheckReport {
    CheckReport {
        kind: CheckKind::Initcheck,
        kernel: "k".into(),
        message: "read of shared memory no thread wrote".into(),
        source: Some(SourceLoc {
            file: "k.pho".into(),
            line,
            col: 3,
        }),
        ptx_line: 40,
        instruction: "ld.shared.f32".into(),
        cta: [0, 0, 0],
        thread: Some([5, 0, 0]),
        address: Some(addr),
        space: Some(space),
        tensor: Some("k$smem".into()),
        notes: vec![],
    }
}

#[test]
fn a_shared_report_names_the_buffer_live_at_its_line() {
    let v = variant();
    let mut r = report(Space::Shared, 8, 12);
    phobos_runtime::name_shared_buffer(&mut r, &v);
    assert_eq!(
        r.tensor.as_deref(),
        Some("shared `sum@12:15` (bytes 0..16 of the plan)")
    );

    let mut r = report(Space::Shared, 8, 10);
    phobos_runtime::name_shared_buffer(&mut r, &v);
    assert_eq!(
        r.tensor.as_deref(),
        Some("shared `xs` (bytes 0..1024 of the plan)")
    );
    assert!(r.to_string().contains("shared `xs`"), "{r}");
}

#[test]
fn global_reports_and_addresses_outside_the_plan_keep_their_names() {
    let v = variant();
    let mut r = report(Space::Global, 8, 12);
    phobos_runtime::name_shared_buffer(&mut r, &v);
    assert_eq!(r.tensor.as_deref(), Some("k$smem"));

    let mut r = report(Space::Shared, 4096, 12);
    phobos_runtime::name_shared_buffer(&mut r, &v);
    assert_eq!(r.tensor.as_deref(), Some("k$smem"));
}
