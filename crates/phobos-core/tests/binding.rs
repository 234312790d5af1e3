//! The one launch binding (`phobos_core::binding`), tested once and
//! thoroughly: every way a launch is refused, variant selection by dims and
//! by picked constants, `@grid` per variant, device limits, and the
//! `.param` order.

use phobos_core::ast::ScalarTy;
use phobos_core::binding::{
    bind, grid_follows_variants, ArgShape, BindError, Binding, LaunchRequest, Limits, PtxValue,
};
use phobos_core::meta::KernelMeta;
use phobos_core::{compile, CompileOptions};

fn meta(src: &str) -> KernelMeta {
    let (kernels, diags) = compile(src, "k.pho", &CompileOptions::default());
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    kernels.into_iter().next().expect("one kernel").meta
}

/// y = alpha * x + y with its own @grid.
const AXPY: &str = include_str!("../../../tests/fixtures/axpy.pho");

/// A free tuning constant with `@grid` following it (the corpus kernel).
const BLOCK: &str = include_str!("../../../tests/in/autotune_block.pho");

/// An autotuned dim, K in {64, 128} (the corpus kernel).
const DIM: &str = include_str!("../../../tests/in/autotune_dim.pho");

const ALIGNED: &str = "@launch(32)
@aligned(K = 128)
kernel fixed(W: tensor<f32>[N, K], v: tensor<f32>[3]) {
  let i = ctx.lane * 4
  if i < K {
    let s = sum(W[0, i :+ 4])
    if ctx.lane == 0 {
      v[0] = s
    }
  }
}
";

fn tensor(elem: ScalarTy, shape: &[u64]) -> ArgShape<'_> {
    ArgShape::Tensor {
        elem,
        shape,
        capacity: None,
        address: None,
    }
}

fn f32s(shape: &[u64]) -> ArgShape<'_> {
    tensor(ScalarTy::F32, shape)
}

fn req<'a>(args: &'a [ArgShape<'a>], grid: Option<[u32; 3]>) -> LaunchRequest<'a> {
    LaunchRequest {
        args,
        grid,
        picked: &[],
        limits: Limits::SM75,
    }
}

fn bound<'m>(meta: &'m KernelMeta, r: &LaunchRequest<'_>) -> Binding<'m> {
    bind(meta, r).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_plain_launch_binds_dims_grid_and_params_in_entry_order() {
    let m = meta(AXPY);
    let args = [
        ArgShape::Scalar(ScalarTy::F32),
        f32s(&[1000]),
        f32s(&[1000]),
    ];
    let b = bound(&m, &req(&args, None));
    assert_eq!(b.dim("N"), Some(1000));
    assert_eq!((b.dims[0].param, b.dims[0].axis), ("x", 0));
    assert_eq!(b.candidates.len(), 1);
    assert!(!b.tunable());
    assert_eq!(b.grid(b.first()), Ok([4, 1, 1]));
    let mut values: Vec<PtxValue> = b.ptx_args(b.first()).collect::<Result<_, _>>().unwrap();
    assert_eq!(values, order_of(&m, &b));
    values.sort_by_key(|p| format!("{p:?}"));
    assert_eq!(
        values,
        [
            PtxValue::Dim(1000),
            PtxValue::Scalar(0),
            PtxValue::Tensor(1),
            PtxValue::Tensor(2)
        ]
    );
    assert_eq!(b.check_block(b.first()), Ok(()));
    // A caller's grid wins over @grid.
    let b = bound(&m, &req(&args, Some([7, 1, 1])));
    assert_eq!(b.grid(b.first()), Ok([7, 1, 1]));
}

/// The `.param` values the entry lists, computed from `ptx_params` by hand.
fn order_of(m: &KernelMeta, b: &Binding<'_>) -> Vec<PtxValue> {
    use phobos_core::meta::PtxParam;
    let index = |n: &str| m.params.iter().position(|p| p.name == n).unwrap();
    b.first()
        .ptx_params
        .iter()
        .map(|p| match p {
            PtxParam::TensorPtr(n) => PtxValue::Tensor(index(n)),
            PtxParam::Scalar(n, _) => PtxValue::Scalar(index(n)),
            PtxParam::Dim(n) => PtxValue::Dim(b.dim(n).unwrap() as i32),
            PtxParam::TensorMap { .. } => unreachable!("compiled without tensor maps"),
        })
        .collect()
}

/// Arguments, and what the error they get must match.
type RefusalCase<'a> = (Vec<ArgShape<'a>>, fn(&BindError) -> bool);

#[test]
fn each_refusal_has_its_own_error() {
    let m = meta(AXPY);
    let s = ArgShape::Scalar(ScalarTy::F32);
    let cases: Vec<RefusalCase<'_>> = vec![
        (vec![s, f32s(&[4])], |e| {
            matches!(
                e,
                BindError::Arity {
                    given: 2,
                    expected: 3
                }
            )
        }),
        (
            vec![s, tensor(ScalarTy::I32, &[4]), f32s(&[4])],
            |e| matches!(e, BindError::Kind { param, expected, given } if param == "x" && expected == "tensor<f32>" && given == "tensor<i32>"),
        ),
        (
            vec![ArgShape::Scalar(ScalarTy::F64), f32s(&[4]), f32s(&[4])],
            |e| matches!(e, BindError::Kind { param, .. } if param == "alpha"),
        ),
        (
            vec![s, f32s(&[4, 1]), f32s(&[4])],
            |e| matches!(e, BindError::Rank { param, expected: 1, actual: 2 } if param == "x"),
        ),
        (
            vec![s, f32s(&[4]), f32s(&[5])],
            |e| matches!(e, BindError::DimMismatch { dim, first, second } if dim == "N" && first.value == 4 && second.value == 5 && second.param == "y"),
        ),
        (
            vec![s, f32s(&[1 << 31]), f32s(&[1 << 31])],
            |e| matches!(e, BindError::DimTooLarge { value, .. } if *value == 1 << 31),
        ),
    ];
    for (args, expected) in cases {
        let err = bind(&m, &req(&args, None)).unwrap_err();
        assert!(expected(&err), "{err:?}");
        assert!(!err.to_string().is_empty());
    }
    let short = [
        s,
        ArgShape::Tensor {
            elem: ScalarTy::F32,
            shape: &[10],
            capacity: Some(9),
            address: None,
        },
        f32s(&[10]),
    ];
    assert!(matches!(
        bind(&m, &req(&short, None)),
        Err(BindError::BufferTooShort {
            needed: 10,
            available: 9,
            ..
        })
    ));
}

#[test]
fn constant_axes_aligned_facts_and_vector_bases_are_checked() {
    let m = meta(ALIGNED);
    let ok = [f32s(&[2, 256]), f32s(&[3])];
    bound(&m, &req(&ok, Some([1, 1, 1])));
    let const_axis = [f32s(&[2, 256]), f32s(&[4])];
    assert!(matches!(
        bind(&m, &req(&const_axis, Some([1, 1, 1]))),
        Err(BindError::ConstDim {
            axis: 0,
            expected: 3,
            actual: 4,
            ..
        })
    ));
    let unaligned = [f32s(&[2, 200]), f32s(&[3])];
    let err = bind(&m, &req(&unaligned, Some([1, 1, 1]))).unwrap_err();
    assert_eq!(
        err,
        BindError::AlignedViolated {
            dim: "K".into(),
            value: 200,
            multiple: 128
        }
    );
    assert_eq!(
        err.to_string(),
        "@aligned(K = 128) does not hold: K = 200 is not a multiple of 128"
    );
    let base = [
        ArgShape::Tensor {
            elem: ScalarTy::F32,
            shape: &[2, 256],
            capacity: None,
            address: Some(0x1004),
        },
        f32s(&[3]),
    ];
    assert!(matches!(
        bind(&m, &req(&base, Some([1, 1, 1]))),
        Err(BindError::UnalignedBase {
            required: 16,
            address: 0x1004,
            ..
        })
    ));
    // Without @grid a grid must be given.
    let b = bound(&m, &req(&ok, None));
    assert_eq!(b.grid(b.first()), Err(BindError::MissingGrid));
}

#[test]
fn autotuned_dims_pick_their_variant() {
    let m = meta(DIM);
    let args = [f32s(&[9, 64]), f32s(&[9])];
    let b = bound(&m, &req(&args, Some([5, 1, 1])));
    assert_eq!(b.candidates.len(), 1);
    assert_eq!(b.first().values, vec![("K".to_string(), 64)]);
    let args = [f32s(&[9, 96]), f32s(&[9])];
    assert_eq!(
        bind(&m, &req(&args, Some([5, 1, 1]))).unwrap_err(),
        BindError::NoVariant {
            dim: "K".into(),
            value: 96,
            candidates: vec![64, 128]
        }
    );
    // A dim is not a constant one can pick.
    let args = [f32s(&[9, 64]), f32s(&[9])];
    let picked = [("K".to_string(), 64)];
    let r = LaunchRequest {
        picked: &picked,
        ..req(&args, Some([5, 1, 1]))
    };
    assert!(matches!(
        bind(&m, &r),
        Err(BindError::UnknownConstant { name, constants }) if name == "K" && constants.is_empty()
    ));
}

#[test]
fn free_constants_are_tuned_or_picked_and_each_variant_has_its_grid() {
    let m = meta(BLOCK);
    assert!(grid_follows_variants(&m));
    let args = [f32s(&[1000]), f32s(&[1000])];
    let b = bound(&m, &req(&args, None));
    assert_eq!(b.candidates.len(), 2);
    assert!(b.tunable());
    let grids: Vec<_> = b.candidates.iter().map(|v| b.grid(v)).collect();
    assert_eq!(grids, vec![Ok([16, 1, 1]), Ok([8, 1, 1])]);
    // A caller's grid cannot follow the variants: nothing to time.
    assert!(!bound(&m, &req(&args, Some([16, 1, 1]))).tunable());
    for (value, grid) in [(64, 16), (128, 8)] {
        let picked = [("BLOCK".to_string(), value)];
        let r = LaunchRequest {
            picked: &picked,
            ..req(&args, None)
        };
        let b = bound(&m, &r);
        assert_eq!(b.candidates.len(), 1);
        assert_eq!(b.first().threads, value as u32);
        assert_eq!(b.grid(b.first()), Ok([grid, 1, 1]));
    }
    let picked = [("BLOCK".to_string(), 96)];
    let r = LaunchRequest {
        picked: &picked,
        ..req(&args, None)
    };
    let err = bind(&m, &r).unwrap_err();
    assert_eq!(
        err,
        BindError::NoPickedVariant {
            name: "BLOCK".into(),
            value: 96,
            candidates: vec![64, 128]
        }
    );
    let picked = [("TILE".to_string(), 1)];
    let r = LaunchRequest {
        picked: &picked,
        ..req(&args, None)
    };
    assert!(bind(&m, &r)
        .unwrap_err()
        .to_string()
        .contains("it has BLOCK"));
}

#[test]
fn grids_and_blocks_are_checked_against_the_device() {
    let m = meta(BLOCK);
    let args = [f32s(&[1 << 30]), f32s(&[1 << 30])];
    let small = Limits {
        max_threads_per_block: 64,
        max_grid: [1 << 20, 1, 1],
        max_shared_bytes_per_block: 0,
    };
    let r = LaunchRequest {
        limits: small,
        ..req(&args, None)
    };
    let b = bound(&m, &r);
    let (v64, v128) = (b.candidates[0], b.candidates[1]);
    assert_eq!(
        b.grid(v64),
        Err(BindError::GridTooLarge {
            grid: [1 << 24, 1, 1],
            limit: [1 << 20, 1, 1]
        })
    );
    assert_eq!(b.check_block(v64), Ok(()));
    assert_eq!(
        b.check_block(v128),
        Err(BindError::BlockTooLarge {
            threads: 128,
            limit: 64
        })
    );
    // Empty grids are errors, not panics.
    let axpy = meta(AXPY);
    let empty = [ArgShape::Scalar(ScalarTy::F32), f32s(&[0]), f32s(&[0])];
    let b = bound(&axpy, &req(&empty, None));
    assert!(matches!(b.grid(b.first()), Err(BindError::InvalidGrid(m)) if m.contains("empty")));
    let four = [ArgShape::Scalar(ScalarTy::F32), f32s(&[4]), f32s(&[4])];
    let b = bound(&axpy, &req(&four, Some([0, 1, 1])));
    assert!(matches!(b.grid(b.first()), Err(BindError::InvalidGrid(_))));
}

#[test]
fn grid_expressions_see_dims_tuning_values_and_the_cta_shape() {
    let m = meta(
        "@autotune(BLOCK in [64, 128])
@launch(BLOCK)
@grid(cdiv(N, ctx.warps), min(7, ctx.threads), N / BLOCK)
kernel shapes(x: tensor<f32>[N]) {
  let i = ctx.block.x * BLOCK + ctx.thread
  if i < N {
    x[i] = 1.0
  }
}
",
    );
    let args = [f32s(&[1000])];
    let b = bound(&m, &req(&args, None));
    let grids: Vec<_> = b.candidates.iter().map(|v| b.grid(v)).collect();
    assert_eq!(grids, vec![Ok([500, 7, 15]), Ok([250, 7, 7])]);
    let v = b.first();
    use phobos_core::meta::GridExpr;
    assert_eq!(b.eval_grid(&GridExpr::Dim("ctx.lanes".into()), v), Ok(32));
    let missing = b.eval_grid(&GridExpr::Dim("M".into()), v).unwrap_err();
    assert!(missing.contains("`M`"), "{missing}");
    let overflow = GridExpr::Binary(
        phobos_core::ast::BinOp::Mul,
        Box::new(GridExpr::Const(i64::MAX)),
        Box::new(GridExpr::Const(2)),
    );
    assert!(b.eval_grid(&overflow, v).is_err());
}

#[test]
fn a_parameter_gets_the_callers_tensor_or_else_a_scalar_of_its_type() {
    let m = meta(AXPY);
    let kinds: Vec<_> = m.params.iter().map(|p| &p.kind).collect();
    let x = kinds
        .iter()
        .position(|k| matches!(k, phobos_core::meta::ParamKindMeta::Tensor { .. }))
        .expect("a tensor parameter");
    let alpha = kinds
        .iter()
        .position(|k| matches!(k, phobos_core::meta::ParamKindMeta::Scalar(_)))
        .expect("a scalar parameter");
    let shape = [7u64];
    // The tensor's own element type is kept, so that bind can refuse a
    // mismatch; the buffer is taken to be allocated for the shape.
    assert_eq!(
        ArgShape::of_param(kinds[x], Some((ScalarTy::F16, &shape))),
        tensor(ScalarTy::F16, &shape)
    );
    // A tensor parameter without a tensor is a scalar of its element type
    // (which bind reports as the wrong kind of argument).
    assert_eq!(
        ArgShape::of_param(kinds[x], None),
        ArgShape::Scalar(ScalarTy::F32)
    );
    assert_eq!(
        ArgShape::of_param(kinds[alpha], None),
        ArgShape::Scalar(ScalarTy::F32)
    );
    let args: Vec<_> = m
        .params
        .iter()
        .map(|p| ArgShape::of_param(&p.kind, None))
        .collect();
    assert!(matches!(
        bind(&m, &req(&args, None)),
        Err(BindError::Kind { .. })
    ));
}
