//! Binding a launch that is accepted allocates nothing (issue 31: the
//! checks of a generated launch never touch the heap): `bind`, the
//! candidates' grids and blocks and their `.param` values, counted by this
//! binary's allocator on the test's own thread. Refusals may allocate
//! (their messages own their words).

use phobos_meta::binding::{bind, ArgShape, BindError, LaunchRequest, Limits, PtxValue};
use phobos_meta::meta::{
    DimMeta, DimRefMeta, GridExpr, KernelMeta, ParamKindMeta, ParamMeta, PtxParam, VariantMeta,
};
use phobos_meta::ScalarTy;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the allocations of a thread while it asks to.
struct Counting;

thread_local! {
    /// `Some(n)`: this thread counts, `n` so far.
    static COUNT: Cell<Option<u64>> = const { Cell::new(None) };
}

fn note_allocation() {
    let _ = COUNT.try_with(|c| {
        if let Some(n) = c.get() {
            c.set(Some(n + 1));
        }
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocations `f` makes on this thread, and its result.
fn allocations<R>(f: impl FnOnce() -> R) -> (u64, R) {
    COUNT.with(|c| c.set(Some(0)));
    let r = f();
    (COUNT.with(|c| c.replace(None)).expect("counting"), r)
}

fn s(x: &str) -> String {
    x.to_string()
}

fn tensor(elem: ScalarTy, dims: &[&str], written: bool) -> ParamKindMeta {
    ParamKindMeta::Tensor {
        elem,
        dims: dims
            .iter()
            .map(|d| match d.parse() {
                Ok(c) => DimRefMeta::Const(c),
                Err(_) => DimRefMeta::Named(s(d)),
            })
            .collect(),
        written,
        vector_bytes: 16,
    }
}

fn cdiv(a: GridExpr, b: GridExpr) -> GridExpr {
    GridExpr::Cdiv(Box::new(a), Box::new(b))
}

/// `@autotune(K = [128, 256], BLOCK = [64, 128]) @aligned(M = 4)
/// @grid(cdiv(M, BLOCK)) kernel gemv(W: tensor<f32>[M, K],
/// x: tensor<f32>[K, 1], y: tensor<f32>[M], alpha: f32)`, with `M`
/// passed as a `.param`: every kind of check the binding makes.
fn gemv() -> KernelMeta {
    let mut variants = Vec::new();
    for k in [128, 256] {
        for block in [64, 128] {
            variants.push(VariantMeta {
                entry: format!("gemv__K{k}_BLOCK{block}"),
                values: vec![(s("K"), k), (s("BLOCK"), block)],
                threads: 128,
                grid: Some(vec![cdiv(GridExpr::Dim(s("M")), GridExpr::Const(block))]),
                ptx_params: vec![
                    PtxParam::TensorPtr(s("W")),
                    PtxParam::TensorPtr(s("x")),
                    PtxParam::TensorPtr(s("y")),
                    PtxParam::Scalar(s("alpha"), ScalarTy::F32),
                    PtxParam::Dim(s("M")),
                ],
                shared_bytes: 1024,
                shared_plan: vec![],
                barriers: vec![],
                loads: vec![],
                arrays: vec![],
            });
        }
    }
    KernelMeta {
        name: s("gemv"),
        source_file: s("gemv.pho"),
        params: vec![
            ParamMeta {
                name: s("W"),
                kind: tensor(ScalarTy::F32, &["M", "K"], false),
            },
            ParamMeta {
                name: s("x"),
                kind: tensor(ScalarTy::F32, &["K", "1"], false),
            },
            ParamMeta {
                name: s("y"),
                kind: tensor(ScalarTy::F32, &["M"], true),
            },
            ParamMeta {
                name: s("alpha"),
                kind: ParamKindMeta::Scalar(ScalarTy::F32),
            },
        ],
        dims: vec![
            DimMeta {
                name: s("M"),
                defined_by: vec![(s("W"), 0), (s("y"), 0)],
                autotuned: false,
            },
            DimMeta {
                name: s("K"),
                defined_by: vec![(s("W"), 1), (s("x"), 0)],
                autotuned: true,
            },
        ],
        aligned: vec![(s("M"), 4)],
        threads: 128,
        grid: Some(vec![cdiv(GridExpr::Dim(s("M")), GridExpr::Dim(s("BLOCK")))]),
        autotune: vec![(s("K"), vec![128, 256]), (s("BLOCK"), vec![64, 128])],
        variants,
        arch_variants: vec![],
    }
}

#[test]
fn an_accepted_binding_allocates_nothing() {
    let meta = gemv();
    let (m, k) = ([1000u64, 256], [256u64, 1]);
    let y = [1000u64];
    let args = [
        ArgShape::Tensor {
            elem: ScalarTy::F32,
            shape: &m,
            capacity: Some(256_000),
            address: Some(0x1000),
        },
        ArgShape::Tensor {
            elem: ScalarTy::F32,
            shape: &k,
            capacity: Some(256),
            address: Some(0x10_0000),
        },
        ArgShape::Tensor {
            elem: ScalarTy::F32,
            shape: &y,
            capacity: None,
            address: Some(0x20_0000),
        },
        ArgShape::Scalar(ScalarTy::F32),
    ];
    let picked = [(s("BLOCK"), 128)];
    for (picked, given_grid, candidates) in [
        (&[][..], None, 2),
        (&picked[..], None, 1),
        (&[][..], Some([3, 1, 1]), 2),
    ] {
        let request = LaunchRequest {
            args: &args,
            grid: given_grid,
            picked,
            limits: Limits::SM75,
        };
        let (made, checked) = allocations(|| -> Result<_, BindError> {
            let mut grids = [[0u32; 3]; 4];
            let mut values = [PtxValue::Dim(0); 8];
            let b = bind(&meta, &request)?;
            for (variant, grid) in b.candidates.iter().zip(&mut grids) {
                *grid = b.grid(variant)?;
                b.check_block(variant)?;
                for (slot, value) in values.iter_mut().zip(b.ptx_args(variant)) {
                    *slot = value?;
                }
            }
            let tunable = b.tunable();
            Ok((
                b.candidates.len(),
                b.dim("M"),
                b.dim("K"),
                tunable,
                grids,
                values,
            ))
        });
        let (n, m, k, tunable, grids, values) = checked.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(made, 0, "picked {picked:?}, grid {given_grid:?}");
        assert_eq!((n, m, k), (candidates, Some(1000), Some(256)));
        assert_eq!(tunable, candidates > 1 && given_grid.is_none());
        let want = match (given_grid, picked.is_empty()) {
            (Some(g), _) => [g, g],
            (None, true) => [[16, 1, 1], [8, 1, 1]],
            (None, false) => [[8, 1, 1], [0; 3]],
        };
        assert_eq!(grids[..2], want);
        assert_eq!(
            values[..5],
            [
                PtxValue::Tensor(0),
                PtxValue::Tensor(1),
                PtxValue::Tensor(2),
                PtxValue::Scalar(3),
                PtxValue::Dim(1000)
            ]
        );
    }
    // A refusal still says why, in the binding's words.
    let short = [999u64];
    let mut refused = args;
    refused[2] = ArgShape::Tensor {
        elem: ScalarTy::F32,
        shape: &short,
        capacity: None,
        address: None,
    };
    let request = LaunchRequest {
        args: &refused,
        grid: None,
        picked: &[],
        limits: Limits::SM75,
    };
    let e = bind(&meta, &request).unwrap_err();
    assert_eq!(
        e.to_string(),
        "dim `M` disagrees: it is 1000 from `W` (axis 0) but 999 from `y` (axis 0)"
    );
}
