//! A hand-written sm_90a kernel that reads its input through a tensor map
//! (`PtxParam::TensorMap`), with the metadata the compiler would write for
//! it: one TMA box per CTA copied into shared memory
//! (`cp.async.bulk.tensor`, completed on an mbarrier) and written back
//! out, swizzle undone, into a tensor padded to whole boxes.

use half::{bf16, f16};
use phobos_meta::ScalarTy;
use phobos_runtime::meta::{
    DimMeta, DimRefMeta, KernelMeta, ParamKindMeta, ParamMeta, PtxParam, VariantMeta,
};
use phobos_runtime::{Arg, Device, Elem, Grid, Kernel, KernelSource};

/// Rows of the box each CTA copies.
pub const BM: usize = 16;

/// The kernel for `elem` (2 or 4 bytes) with a box of `BM` rows and `bn`
/// elements, swizzled by `swizzle` bytes. Parameters in the compiler's
/// order: tensor addresses, runtime dims, then the tensor maps.
pub fn ptx(elem_bytes: usize, bn: usize, swizzle: u32) -> String {
    let tile = BM * bn * elem_bytes;
    // Bits of the 16-byte chunk index the swizzle XORs (PTX ISA, "Tensor
    // swizzling modes"): 1, 2, 3 for 32B, 64B, 128B.
    let mask = match swizzle {
        0 => 0,
        32 => 1,
        64 => 3,
        _ => 7,
    };
    let (ty, reg) = match elem_bytes {
        2 => ("b16", "%h1"),
        _ => ("b32", "%v1"),
    };
    format!(
        r#"
.version 8.0
.target sm_90a
.address_size 64

.visible .entry tma_copy(
	.param .u64 p_A,
	.param .u64 p_B,
	.param .s32 p_PN,
	.param .align 64 .b8 p_map[128]
)
{{
	.reg .pred 	%p<5>;
	.reg .b16 	%h<2>;
	.reg .b32 	%v<2>;
	.reg .b32 	%r<32>;
	.reg .b64 	%rd<16>;
	.shared .align 1024 .b8 tile[{tile}];
	.shared .align 8 .b64 full;

	ld.param.u64 	%rd1, [p_B];
	cvta.to.global.u64 	%rd1, %rd1;
	ld.param.u32 	%r1, [p_PN];
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ctaid.y;
	mul.lo.u32 	%r6, %r3, {bn};
	mul.lo.u32 	%r7, %r4, {BM};
	mov.u64 	%rd2, full;
	cvt.u32.u64 	%r5, %rd2;
	mov.u64 	%rd3, tile;
	cvt.u32.u64 	%r8, %rd3;
	setp.ne.u32 	%p1, %r2, 0;
	@%p1 bra 	INIT_DONE;
	mbarrier.init.shared::cta.b64 	[%r5], 1;
	fence.mbarrier_init.release.cluster;
INIT_DONE:
	bar.sync 	0;
	@%p1 bra 	WAIT;
	mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 	_, [%r5], {tile};
	mov.u64 	%rd4, p_map;
	cvta.param.u64 	%rd5, %rd4;
	cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes 	[%r8], [%rd5, {{%r6, %r7}}], [%r5];
WAIT:
	mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 	%p2, [%r5], 0;
	@!%p2 bra 	WAIT;
	mov.u32 	%r10, %r2;
LOOP:
	setp.ge.u32 	%p3, %r10, {elems};
	@%p3 bra 	DONE;
	div.u32 	%r11, %r10, {bn};
	rem.u32 	%r12, %r10, {bn};
	mul.lo.u32 	%r13, %r10, {elem_bytes};
	shr.u32 	%r14, %r13, 7;
	and.b32 	%r14, %r14, {mask};
	shl.b32 	%r14, %r14, 4;
	xor.b32 	%r15, %r13, %r14;
	add.u32 	%r16, %r8, %r15;
	ld.shared.{ty} 	{reg}, [%r16];
	add.u32 	%r17, %r7, %r11;
	add.u32 	%r18, %r6, %r12;
	mad.lo.u32 	%r19, %r17, %r1, %r18;
	mul.wide.u32 	%rd6, %r19, {elem_bytes};
	add.s64 	%rd7, %rd1, %rd6;
	st.global.{ty} 	[%rd7], {reg};
	add.u32 	%r10, %r10, 128;
	bra 	LOOP;
DONE:
	ret;
}}
"#,
        elems = BM * bn,
    )
}

fn tensor(name: &str, elem: ScalarTy, dims: [&str; 2], written: bool) -> ParamMeta {
    ParamMeta {
        name: name.into(),
        kind: ParamKindMeta::Tensor {
            elem,
            dims: dims
                .iter()
                .map(|d| DimRefMeta::Named(d.to_string()))
                .collect(),
            written,
            vector_bytes: elem.size(),
        },
    }
}

fn dim(name: &str, param: &str, axis: usize) -> DimMeta {
    DimMeta {
        name: name.into(),
        defined_by: vec![(param.into(), axis)],
        autotuned: false,
    }
}

/// The metadata the compiler would write for the kernel: `A[M, N]` read
/// through a map with a `BM` x `bn` box, `B[PM, PN]` written.
pub fn meta(elem: ScalarTy, bn: usize, swizzle: u32) -> KernelMeta {
    let tile = (BM * bn) as u32 * elem.size();
    KernelMeta {
        name: "tma_copy".into(),
        source_file: "tma_copy.pho".into(),
        params: vec![
            tensor("A", elem, ["M", "N"], false),
            tensor("B", elem, ["PM", "PN"], true),
        ],
        dims: vec![
            dim("M", "A", 0),
            dim("N", "A", 1),
            dim("PM", "B", 0),
            dim("PN", "B", 1),
        ],
        aligned: vec![],
        threads: 128,
        grid: None,
        autotune: vec![],
        arch_variants: vec![],
        variants: vec![VariantMeta {
            entry: "tma_copy".into(),
            values: vec![],
            threads: 128,
            grid: None,
            ptx_params: vec![
                PtxParam::TensorPtr("A".into()),
                PtxParam::TensorPtr("B".into()),
                PtxParam::Dim("PN".into()),
                PtxParam::TensorMap {
                    tensor: "A".into(),
                    box_dims: vec![bn as u32, BM as u32],
                    swizzle,
                },
            ],
            shared_bytes: tile + 8,
            shared_plan: vec![],
            barriers: vec![],
            loads: vec![],
            arrays: vec![],
        }],
    }
}

/// The kernel as a build would embed it (the PTX listed for sm_90, where
/// a 9.0 device finds it).
pub fn kernel(elem: ScalarTy, bn: usize, swizzle: u32) -> Kernel {
    let ron = ron::to_string(&meta(elem, bn, swizzle)).unwrap();
    let text: &'static str = Box::leak(ptx(elem.size() as usize, bn, swizzle).into_boxed_str());
    Kernel::new(KernelSource {
        name: "tma_copy",
        module: "tma_copy.pho",
        meta: Box::leak(ron.into_boxed_str()),
        ptx: Box::leak(vec![(90, text)].into_boxed_slice()),
        cubins: &[],
    })
}

/// An element type the test fills exactly: small integers, exact in
/// f16, bf16 and f32.
pub trait Exact: Elem + Copy + PartialEq + std::fmt::Debug {
    fn of(v: i32) -> Self;
}
impl Exact for f32 {
    fn of(v: i32) -> f32 {
        v as f32
    }
}
impl Exact for f16 {
    fn of(v: i32) -> f16 {
        f16::from_f32(v as f32)
    }
}
impl Exact for bf16 {
    fn of(v: i32) -> bf16 {
        bf16::from_f32(v as f32)
    }
}

/// Copies an `m` x `n` tensor box by box (`bn` elements wide) into a
/// tensor padded to whole boxes, and checks every element: the tensor's
/// where it has one, zero past its edges.
pub fn copy_exact<T: Exact>(dev: &Device, m: usize, n: usize, bn: usize, swizzle: u32) {
    let k = kernel(T::TY, bn, swizzle);
    let a_host: Vec<T> = (0..m * n).map(|i| T::of((i % 251) as i32 - 125)).collect();
    let a = dev.upload(&a_host, &[m, n]).unwrap();
    let (gy, gx) = (m.div_ceil(BM), n.div_ceil(bn));
    let (pm, pn) = (gy * BM, gx * bn);
    let mut b = dev.upload(&vec![T::of(7); pm * pn], &[pm, pn]).unwrap();
    k.launch(
        dev,
        Some(Grid::from((gx as u32, gy as u32))),
        &[Arg::from(&a), Arg::from(&mut b)],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let got = b.to_vec().unwrap();
    for r in 0..pm {
        for c in 0..pn {
            let want = if r < m && c < n {
                a_host[r * n + c]
            } else {
                T::of(0)
            };
            assert_eq!(
                got[r * pn + c],
                want,
                "{:?} {m}x{n}, box {BM}x{bn}, {swizzle}B swizzle: element ({r}, {c})",
                T::TY
            );
        }
    }
}

/// The launches each backend must run exactly: 128B and 64B swizzles (and
/// none), f32, f16 and bf16, ragged along both axes (rows stay multiples
/// of 16 bytes, as TMA needs).
pub fn all_copies(dev: &Device) {
    copy_exact::<f32>(dev, 37, 68, 32, 128);
    copy_exact::<f32>(dev, 20, 44, 16, 64);
    copy_exact::<f32>(dev, 17, 36, 8, 0);
    copy_exact::<f16>(dev, 33, 104, 64, 128);
    copy_exact::<bf16>(dev, 19, 72, 32, 64);
    copy_exact::<bf16>(dev, 40, 136, 64, 128);
}
