#![doc = include_str!("../README.md")]
//!
//! # Inside this crate
//!
//! Nsight-Compute-style counters per source line, computed
//! exactly from what the simulator reports about every warp instruction.
//!
//! - [`Profiler`] is a [`phobos_sim::Observer`]: give it to
//!   `Device::launch` and it counts, per `.loc` line, global requests,
//!   32-byte sectors and 128-byte lines (loads, stores and atomics apart),
//!   shared-memory requests, wavefronts and bank conflicts, active lanes,
//!   divergent branches, barriers, floating-point and dp4a operations, and
//!   DRAM bytes as the first touch of each sector.
//! - [`occupancy`] computes theoretical occupancy from per-architecture
//!   limit tables, naming the limiting factor.
//! - [`roofline`] bounds a kernel's time on a GPU model from its DRAM bytes
//!   and operation counts.
//! - [`report`] assembles a [`report::Profile`]: the stable JSON schema and
//!   the per-line text table.
//!
//! The crate does no IO: it neither reads files nor runs ptxas. The
//! `phobos profile` command compiles, launches, finds ptxas and prints.
//! The rules each counter follows, and their sources, are in
//! `docs/profile.md`.

mod counters;
pub mod occupancy;
pub mod report;
pub mod roofline;

pub use counters::{
    shared_wavefronts, CtaSample, GlobalCounters, LineCounters, Profiler, SharedCounters,
    Wavefronts,
};
