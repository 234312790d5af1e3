//! Tensor maps in the launch binding: `Binding::ptx_args` yields a
//! `PtxValue::TensorMap` for each `PtxParam::TensorMap` with the map's spec
//! checked (metadata no driver would take is `Inconsistent`), and
//! `TensorMapSpec::layout` gives the driver's dims and strides of a
//! launch's tensor or the refusal that names it.

use phobos_meta::binding::{
    bind, ArgShape, BindError, LaunchRequest, Limits, PtxValue, TensorMapLayout, TensorMapSpec,
};
use phobos_meta::meta::{
    DimMeta, DimRefMeta, KernelMeta, ParamKindMeta, ParamMeta, PtxParam, VariantMeta,
};
use phobos_meta::ScalarTy;

/// `k(A: tensor<elem>[axes...], s: f32)` whose entry lists `map` after
/// `A`'s address.
fn meta(elem: ScalarTy, axes: &[&str], map: PtxParam) -> KernelMeta {
    KernelMeta {
        name: "k".into(),
        source_file: "k.pho".into(),
        params: vec![
            ParamMeta {
                name: "A".into(),
                kind: ParamKindMeta::Tensor {
                    elem,
                    dims: axes
                        .iter()
                        .map(|d| match d.parse() {
                            Ok(c) => DimRefMeta::Const(c),
                            Err(_) => DimRefMeta::Named(d.to_string()),
                        })
                        .collect(),
                    written: false,
                    vector_bytes: 16,
                },
            },
            ParamMeta {
                name: "s".into(),
                kind: ParamKindMeta::Scalar(ScalarTy::F32),
            },
        ],
        dims: axes
            .iter()
            .enumerate()
            .filter(|(_, d)| d.parse::<u64>().is_err())
            .map(|(axis, d)| DimMeta {
                name: d.to_string(),
                defined_by: vec![("A".into(), axis)],
                autotuned: false,
            })
            .collect(),
        aligned: vec![],
        threads: 128,
        grid: None,
        autotune: vec![],
        arch_variants: vec![],
        variants: vec![VariantMeta {
            entry: "k".into(),
            values: vec![],
            threads: 128,
            grid: None,
            ptx_params: vec![PtxParam::TensorPtr("A".into()), map],
            shared_bytes: 0,
            shared_plan: vec![],
            barriers: vec![],
            loads: vec![],
            arrays: vec![],
        }],
    }
}

fn map_param(tensor: &str, box_dims: &[u32], swizzle: u32) -> PtxParam {
    PtxParam::TensorMap {
        tensor: tensor.into(),
        box_dims: box_dims.to_vec(),
        swizzle,
    }
}

/// The `.param` values of a launch of `m` on `A` of `shape`.
fn values(m: &KernelMeta, shape: &[u64]) -> Vec<Result<PtxValue, BindError>> {
    let ParamKindMeta::Tensor { elem, .. } = m.params[0].kind else {
        unreachable!()
    };
    let args = [
        ArgShape::of_param(&m.params[0].kind, Some((elem, shape))),
        ArgShape::Scalar(ScalarTy::F32),
    ];
    let req = LaunchRequest {
        args: &args,
        grid: Some([1, 1, 1]),
        picked: &[],
        limits: Limits::SM75,
    };
    let b = bind(m, &req).unwrap();
    b.ptx_args(b.first()).collect()
}

#[test]
fn a_tensor_map_yields_its_checked_spec() {
    let m = meta(ScalarTy::BF16, &["M", "K"], map_param("A", &[64, 128], 128));
    let v = values(&m, &[300, 200]);
    assert_eq!(v[0], Ok(PtxValue::Tensor(0)));
    let Ok(PtxValue::TensorMap { tensor: 0, map }) = v[1] else {
        panic!("{:?}", v[1]);
    };
    assert_eq!(
        map,
        TensorMapSpec {
            elem: ScalarTy::BF16,
            rank: 2,
            box_dims: [64, 128, 1, 1, 1],
            swizzle: 128,
        }
    );
    assert_eq!((map.data_type(), map.swizzle_code()), (9, 3));
    // The driver's order: innermost first, byte strides of the outer axes.
    assert_eq!(
        map.layout("A", 0x1000, &[300, 200]),
        Ok(TensorMapLayout {
            address: 0x1000,
            dims: [200, 300, 1, 1, 1],
            strides: [400, 0, 0, 0],
        })
    );
    // Three axes: strides of the two outer ones.
    let m3 = meta(
        ScalarTy::F32,
        &["B", "4", "N"],
        map_param("A", &[8, 4, 2], 0),
    );
    let Ok(PtxValue::TensorMap { map, .. }) = values(&m3, &[3, 4, 12])[1] else {
        panic!()
    };
    assert_eq!(
        map.layout("A", 0x2000, &[3, 4, 12]).unwrap(),
        TensorMapLayout {
            address: 0x2000,
            dims: [12, 4, 3, 1, 1],
            strides: [48, 192, 0, 0],
        }
    );
}

#[test]
fn metadata_no_driver_would_take_is_inconsistent() {
    let inconsistent = |m: &KernelMeta, shape: &[u64], says: &str| {
        let v = values(m, shape);
        match &v[1] {
            Err(BindError::Inconsistent(msg)) => assert!(msg.contains(says), "{msg}"),
            other => panic!("{other:?}"),
        }
    };
    let f32_2d = |p| meta(ScalarTy::F32, &["M", "N"], p);
    inconsistent(
        &f32_2d(map_param("s", &[4], 0)),
        &[8, 8],
        "`s`, which is not a tensor",
    );
    inconsistent(
        &f32_2d(map_param("Q", &[4], 0)),
        &[8, 8],
        "unknown parameter `Q`",
    );
    inconsistent(
        &meta(
            ScalarTy::F32,
            &["A1", "A2", "A3", "A4", "A5", "A6"],
            map_param("A", &[4; 6], 0),
        ),
        &[1, 1, 1, 1, 1, 8],
        "maps a tensor of 6 axes; a tensor map has 1 to 5",
    );
    inconsistent(
        &f32_2d(map_param("A", &[4], 0)),
        &[8, 8],
        "a box of 1 axes for a tensor of 2",
    );
    inconsistent(
        &f32_2d(map_param("A", &[4, 0], 0)),
        &[8, 8],
        "box dim 1 = 0",
    );
    inconsistent(
        &f32_2d(map_param("A", &[4, 257], 0)),
        &[8, 8],
        "box dim 1 = 257",
    );
    inconsistent(
        &f32_2d(map_param("A", &[8, 8], 16)),
        &[8, 8],
        "16-byte swizzle",
    );
    inconsistent(
        &f32_2d(map_param("A", &[2, 8], 0)),
        &[8, 8],
        "inner box of 8 bytes",
    );
    inconsistent(
        &f32_2d(map_param("A", &[64, 8], 128)),
        &[8, 8],
        "inner box of 256 bytes, wider than its 128-byte swizzle",
    );
}

#[test]
fn tensors_tma_cannot_describe_are_refused_by_name() {
    let spec = TensorMapSpec::new("A", ScalarTy::F16, 2, &[64, 64], 128).unwrap();
    assert_eq!(
        spec.layout("A", 0x1008, &[64, 64]),
        Err(BindError::TensorMapAddress {
            param: "A".into(),
            address: 0x1008
        })
    );
    // 100 f16s: 200-byte rows.
    assert_eq!(
        spec.layout("A", 0x1000, &[64, 100]),
        Err(BindError::TensorMapStride {
            param: "A".into(),
            axis: 0,
            shape: vec![64, 100],
            stride: 200
        })
    );
    assert_eq!(
        spec.layout("A", 0x1000, &[0, 64]),
        Err(BindError::TensorMapShape {
            param: "A".into(),
            shape: vec![0, 64]
        })
    );
    // A 1-D tensor has no stride to refuse.
    let one = TensorMapSpec::new("x", ScalarTy::F32, 1, &[4], 0).unwrap();
    assert_eq!(one.layout("x", 0x40, &[7]).unwrap().dims, [7, 1, 1, 1, 1]);
}
