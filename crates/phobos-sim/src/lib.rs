//! phobos-sim: executes PTX text on the CPU, warp-exactly, and checks what
//! compute-sanitizer would. It knows nothing of the Phobos language: it reads
//! PTX (plus `.file`/`.loc` line info) and runs launches.
//!
//! # Using it
//!
//! ```
//! use phobos_sim::{Device, KernelArg, Launch, LaunchOptions, Module};
//!
//! let ptx = r#"
//! .version 7.5
//! .target sm_75
//! .address_size 64
//! .visible .entry twice(.param .u64 p_x, .param .s32 p_n)
//! {
//!   .reg .pred %p<2>;
//!   .reg .b32 %r<4>;
//!   .reg .f32 %f<2>;
//!   .reg .b64 %rd<4>;
//!   ld.param.u64 %rd1, [p_x];
//!   ld.param.u32 %r1, [p_n];
//!   mov.u32 %r2, %tid.x;
//!   setp.ge.s32 %p1, %r2, %r1;
//!   @%p1 bra $done;
//!   mul.wide.s32 %rd2, %r2, 4;
//!   add.s64 %rd3, %rd1, %rd2;
//!   ld.global.f32 %f1, [%rd3];
//!   add.f32 %f1, %f1, %f1;
//!   st.global.f32 [%rd3], %f1;
//! $done:
//!   ret;
//! }
//! "#;
//! let module = Module::parse(ptx)?;
//! let mut dev = Device::new();
//! let data: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|f| f.to_le_bytes()).collect();
//! let x = dev.alloc_from("x", &data)?;
//! let args = [KernelArg::Buffer(x), KernelArg::I32(3)];
//! let kernel = Launch::new(&module, "twice", [1, 1, 1], [32, 1, 1]);
//! let stats = dev.launch(kernel, &args, &LaunchOptions::default(), None)?;
//! let out = dev.to_vec(x)?;
//! assert_eq!(f32::from_le_bytes(out[8..12].try_into().unwrap()), 6.0);
//! assert!(stats.thread_instructions > 0);
//! # Ok::<(), phobos_sim::SimError>(())
//! ```
//!
//! - [`Module::parse`] reads PTX; anything outside the supported subset
//!   (`docs/simulator.md`) is `unsupported instruction X at line N`.
//! - [`Device`] owns named global buffers ([`Device::alloc`],
//!   [`Device::write`], [`Device::read`]); each is its own allocation with
//!   exact bounds, so memcheck names the tensor an access missed.
//! - [`Device::launch`] runs an entry over a grid with [`KernelArg`]s in
//!   `.param` order and [`LaunchOptions`]; it returns [`LaunchStats`] or a
//!   [`SimError`], whose `Check` variant is a [`CheckReport`] (memcheck,
//!   racecheck, synccheck, initcheck, step limit) naming kernel, source
//!   line, CTA, thread, address and tensor.
//! - An [`Observer`] sees every executed warp instruction (used by
//!   `phobos explain`); observing runs CTAs on the calling thread. A
//!   [`SplitObserver`] (`phobos profile`'s counters) is copied to every
//!   worker thread by [`Device::launch_split`] and joined back.
//!
//! # How it runs
//!
//! PTX is parsed (`parse`) and decoded once (`decode`) into instructions
//! whose operands are slots of a warp's value file. A warp (`warp`) keeps a
//! PC per lane and runs the lanes at the smallest PC together, executing
//! each instruction once for all of them (`exec`); divergent lanes meet
//! again where their paths join, and warp-synchronous instructions wait for
//! their member mask. CTAs (`launch`) run their warps to each barrier and
//! release it when every thread has arrived, or report the deadlock. CTAs
//! run in parallel on host threads. Shared-memory checks live in `checks`,
//! numeric semantics (cvt rounding, prmt, dp4a, ...) in `numeric`;
//! `mma.sync`/`ldmatrix`/`cp.async` in `tensor`; sm_90a warpgroup MMA
//! (descriptors, swizzles, groups in flight) in `wgmma`;
//! mbarriers in `mbarrier` (a failed wait yields its lanes, and a CTA whose
//! threads all wait on what nothing can complete is a deadlock report),
//! TMA copies and the async proxy's checks in `bulk`, tensor maps in
//! [`tensor_map`].

mod bulk;
mod checks;
mod decode;
mod error;
mod exec;
mod launch;
mod mbarrier;
mod memory;
mod module;
mod numeric;
pub mod observer;
mod parse;
mod scope;
mod tensor;
pub mod tensor_map;
mod warp;
mod wgmma;

pub use decode::{ParamInfo, Ty};
pub use error::{CheckKind, CheckReport, SimError, SourceLoc};
pub use launch::{
    check_work, max_shared_bytes, max_work_flag, Approx, KernelArg, Launch, LaunchOptions,
    LaunchStats, DEFAULT_MAX_WORK, STATIC_SHARED_LIMIT,
};
pub use memory::{BufferId, Device, MAX_BUFFER_BYTES};
pub use module::Module;
pub use observer::{Access, AccessKind, Observer, OpKind, Space, SplitObserver, StepInfo};
