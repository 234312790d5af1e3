//! Theoretical occupancy: how many CTAs of a kernel fit on one SM at once,
//! and so how many of the SM's warp slots they fill. The computation is
//! `cudaOccMaxActiveBlocksPerMultiprocessor` of NVIDIA's `cuda_occupancy.h`
//! (CUDA 12.9, `__CUDA_OCC_MAJOR__ 12`) for a kernel whose shared memory
//! above 48 KB is opted in (as the runtime launches it), the default
//! carveout and one block barrier: the warp,
//! block, register and shared-memory limits, each rounded as that header
//! rounds them. The per-architecture numbers are the CUDA C++ Programming
//! Guide's "Technical Specifications per Compute Capability" (the device
//! properties the header reads) and the header's own per-architecture
//! switches. `docs/profile.md` lists both. Nothing here knows the kernel
//! beyond three numbers.

use serde::Serialize;

/// One architecture's per-SM limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ArchLimits {
    /// Compute capability, e.g. 80 for sm_80.
    pub arch: u32,
    /// `maxThreadsPerMultiprocessor / warpSize`.
    pub max_warps_per_sm: u32,
    /// `cudaOccMaxBlocksPerMultiprocessor`.
    pub max_ctas_per_sm: u32,
    pub max_threads_per_cta: u32,
    /// `regsPerMultiprocessor` and `regsPerBlock`.
    pub registers_per_sm: u32,
    pub registers_per_cta: u32,
    /// What ptxas can assign (`cudaOccRegAllocationMaxPerThread` allows
    /// 256 from sm_70, but ptxas never reports more than 255).
    pub max_registers_per_thread: u32,
    /// Registers are allocated per warp in units of this many
    /// (`cudaOccRegAllocationGranularity`).
    pub register_unit: u32,
    /// Register file partitions; a warp's registers come from one
    /// (`cudaOccSubPartitionsPerMultiprocessor`).
    pub sub_partitions: u32,
    /// `sharedMemPerMultiprocessor`: shared memory per SM with the default
    /// carveout, which the header takes to be the largest.
    pub shared_per_sm: u32,
    /// `sharedMemPerBlock`: what a CTA may use without opting in (a
    /// kernel whose plan fits it is declared with static `.shared` arrays).
    pub max_shared_per_cta: u32,
    /// `sharedMemPerBlockOptin`: the limit once a function opts in
    /// (`cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)`), which the
    /// runtime does for a kernel whose plan exceeds `max_shared_per_cta`;
    /// the compiler's per-target limit (`phobos_core::max_shared_bytes`).
    pub max_shared_per_cta_optin: u32,
    /// `cudaOccSMemAllocationGranularity`.
    pub shared_unit: u32,
    /// `reservedSharedMemPerBlock`: shared memory the driver reserves for
    /// each CTA (1 KB from sm_80).
    pub shared_reserved_per_cta: u32,
}

const KB: u32 = 1024;

const fn arch(
    arch: u32,
    max_warps_per_sm: u32,
    max_ctas_per_sm: u32,
    shared_per_sm_kb: u32,
    max_shared_per_cta_optin_kb: u32,
    shared_unit: u32,
    shared_reserved_per_cta: u32,
) -> ArchLimits {
    ArchLimits {
        arch,
        max_warps_per_sm,
        max_ctas_per_sm,
        max_threads_per_cta: 1024,
        registers_per_sm: 65536,
        registers_per_cta: 65536,
        max_registers_per_thread: 255,
        register_unit: 256,
        sub_partitions: 4,
        shared_per_sm: shared_per_sm_kb * KB,
        max_shared_per_cta: 48 * KB,
        max_shared_per_cta_optin: max_shared_per_cta_optin_kb * KB,
        shared_unit,
        shared_reserved_per_cta,
    }
}

/// Every target Phobos builds for (`phobos_core::ARCHES`); `sm_90a` runs
/// on the same 9.0 SMs as sm_90, so it has sm_90's limits.
pub const ARCH_LIMITS: [ArchLimits; 8] = [
    arch(75, 32, 16, 64, 64, 256, 0),
    arch(80, 64, 32, 164, 163, 128, KB),
    arch(86, 48, 16, 100, 99, 128, KB),
    arch(89, 48, 24, 100, 99, 128, KB),
    arch(90, 64, 32, 228, 227, 128, KB),
    arch(phobos_meta::arch::SM_90A, 64, 32, 228, 227, 128, KB),
    arch(100, 64, 32, 228, 227, 128, KB),
    arch(120, 48, 24, 100, 99, 128, KB),
];

use phobos_meta::arch::name as arch_name;

/// The limits of target `arch`, if it is in the table.
pub fn limits(arch: u32) -> Option<&'static ArchLimits> {
    ARCH_LIMITS.iter().find(|l| l.arch == arch)
}

/// What a kernel's CTA needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtaResources {
    pub threads: u32,
    /// Registers per thread, as ptxas reports them; `None` when unknown.
    pub registers: Option<u32>,
    /// Shared memory per CTA in bytes (static, from the shared plan).
    pub shared_bytes: u32,
}

/// A resource that bounds CTAs per SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    Warps,
    Ctas,
    Registers,
    SharedMemory,
}

impl Limiter {
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Warps => "warps per SM",
            Limiter::Ctas => "CTAs per SM",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
        }
    }
}

/// CTAs per SM each resource allows; `None` where it does not bind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PerLimit {
    pub warps: u32,
    pub ctas: u32,
    /// `None` when the register count is unknown, or 0 (the header's
    /// `INT_MAX`: a kernel without registers is not limited by them).
    pub registers: Option<u32>,
    /// `None` when the kernel uses no shared memory and none is reserved.
    pub shared_memory: Option<u32>,
}

/// The theoretical occupancy of a kernel on one architecture.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Occupancy {
    pub arch: String,
    pub threads_per_cta: u32,
    pub warps_per_cta: u32,
    /// `None`: unknown (ptxas was not found), and then the register limit is
    /// left out, so the occupancy is an upper bound.
    pub registers_per_thread: Option<u32>,
    pub shared_bytes_per_cta: u32,
    /// Shared memory the CTA takes on the SM: rounded up, plus the reserve.
    pub shared_bytes_allocated: u32,
    pub ctas_per_sm: u32,
    pub active_warps_per_sm: u32,
    pub max_warps_per_sm: u32,
    /// `active_warps_per_sm / max_warps_per_sm`, from 0 to 1.
    pub occupancy: f64,
    pub ctas_allowed_by: PerLimit,
    /// Every resource that allows exactly `ctas_per_sm`.
    pub limited_by: Vec<Limiter>,
}

/// Why a CTA cannot run at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OccupancyError {
    UnknownArch(u32),
    TooManyThreads { threads: u32, max: u32 },
    TooManyRegisters { registers: u32, max: u32 },
    TooMuchShared { bytes: u32, max: u32 },
}

impl std::fmt::Display for OccupancyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OccupancyError::UnknownArch(a) => {
                let known: Vec<String> = ARCH_LIMITS.iter().map(|l| arch_name(l.arch)).collect();
                write!(
                    f,
                    "no occupancy limits for {} (known: {})",
                    arch_name(*a),
                    known.join(", ")
                )
            }
            OccupancyError::TooManyThreads { threads, max } => {
                write!(f, "a CTA of {threads} threads exceeds the limit of {max}")
            }
            OccupancyError::TooManyRegisters { registers, max } => write!(
                f,
                "{registers} registers per thread exceed the limit of {max}"
            ),
            OccupancyError::TooMuchShared { bytes, max } => write!(
                f,
                "{bytes} bytes of shared memory per CTA exceed the limit of {max}"
            ),
        }
    }
}

impl std::error::Error for OccupancyError {}

fn round_up(v: u32, unit: u32) -> u32 {
    v.div_ceil(unit) * unit
}

/// cudaOccMaxBlocksPerSMRegsLimit (partitioned global caching is off from
/// sm_70): each warp's registers are rounded up to the unit and come from
/// one sub-partition's share of the register file. The hardware refuses a
/// CTA whose registers, counted as if its warps were rounded up to a
/// multiple of the sub-partitions, exceed the per-CTA register limit.
fn registers_limit(l: &ArchLimits, regs: u32, warps_per_cta: u32) -> u32 {
    let per_warp = round_up(regs * 32, l.register_unit);
    let assumed_per_cta = per_warp * round_up(warps_per_cta, l.sub_partitions);
    if assumed_per_cta > l.registers_per_cta || per_warp * warps_per_cta > l.registers_per_cta {
        return 0;
    }
    let warps_per_partition = (l.registers_per_sm / l.sub_partitions) / per_warp;
    warps_per_partition * l.sub_partitions / warps_per_cta
}

/// The occupancy of CTAs needing `r` on target `arch`.
pub fn occupancy(arch: u32, r: CtaResources) -> Result<Occupancy, OccupancyError> {
    let l = limits(arch).ok_or(OccupancyError::UnknownArch(arch))?;
    if r.threads == 0 || r.threads > l.max_threads_per_cta {
        return Err(OccupancyError::TooManyThreads {
            threads: r.threads,
            max: l.max_threads_per_cta,
        });
    }
    if let Some(regs) = r.registers.filter(|&n| n > l.max_registers_per_thread) {
        return Err(OccupancyError::TooManyRegisters {
            registers: regs,
            max: l.max_registers_per_thread,
        });
    }
    // cudaOccMaxBlocksPerSMSmemLimit: shared memory plus the reserve,
    // rounded up to the unit, against the CTA limit (plus the reserve from
    // sm_80, as cudaOccSMemPerBlock adds it). A plan above the default
    // limit is launched opted in (FUNC_SHMEM_LIMIT_OPTIN with the maximum
    // dynamic size set to the plan's), so its limit is the opt-in one.
    let shared_allocated = round_up(
        r.shared_bytes.saturating_add(l.shared_reserved_per_cta),
        l.shared_unit,
    );
    let max_shared = if r.shared_bytes > l.max_shared_per_cta {
        l.max_shared_per_cta_optin
    } else {
        l.max_shared_per_cta
    };
    if shared_allocated > max_shared + l.shared_reserved_per_cta {
        return Err(OccupancyError::TooMuchShared {
            bytes: r.shared_bytes,
            max: max_shared,
        });
    }
    let warps_per_cta = r.threads.div_ceil(32);
    // cudaOccMaxBlocksPerSMWarpsLimit.
    let by_warps = l.max_warps_per_sm / warps_per_cta;
    let by_ctas = l.max_ctas_per_sm;
    let by_registers = r
        .registers
        .filter(|&regs| regs > 0)
        .map(|regs| registers_limit(l, regs, warps_per_cta));
    // The carveout is the largest, `shared_per_sm`, which is at least the
    // opt-in limit plus the reserve, so it never falls below one CTA's
    // allocation and the header's align-up step does not apply.
    let by_shared = (shared_allocated > 0).then(|| l.shared_per_sm / shared_allocated);
    let ctas_per_sm = [Some(by_warps), Some(by_ctas), by_registers, by_shared]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(0);
    let mut limited_by = Vec::new();
    for (lim, v) in [
        (Limiter::Registers, by_registers),
        (Limiter::SharedMemory, by_shared),
        (Limiter::Warps, Some(by_warps)),
        (Limiter::Ctas, Some(by_ctas)),
    ] {
        if v == Some(ctas_per_sm) {
            limited_by.push(lim);
        }
    }
    let active = ctas_per_sm * warps_per_cta;
    Ok(Occupancy {
        arch: arch_name(arch),
        threads_per_cta: r.threads,
        warps_per_cta,
        registers_per_thread: r.registers,
        shared_bytes_per_cta: r.shared_bytes,
        shared_bytes_allocated: shared_allocated,
        ctas_per_sm,
        active_warps_per_sm: active,
        max_warps_per_sm: l.max_warps_per_sm,
        occupancy: f64::from(active) / f64::from(l.max_warps_per_sm),
        ctas_allowed_by: PerLimit {
            warps: by_warps,
            ctas: by_ctas,
            registers: by_registers,
            shared_memory: by_shared,
        },
        limited_by,
    })
}

/// The register count ptxas `-v` reports for `entry`: its output has a
/// `Compiling entry function 'NAME'` line, then `Used N registers`.
pub fn registers_from_ptxas(verbose: &str, entry: &str) -> Option<u32> {
    let mut in_entry = false;
    for line in verbose.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            in_entry = rest.split('\'').next() == Some(entry);
            continue;
        }
        if !in_entry {
            continue;
        }
        if let Some(rest) = line.split("Used ").nth(1) {
            let n = rest.split_whitespace().next()?;
            if rest.contains("registers") {
                return n.parse().ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use Limiter::*;

    fn occ(arch: u32, threads: u32, registers: Option<u32>, shared_bytes: u32) -> Occupancy {
        occupancy(
            arch,
            CtaResources {
                threads,
                registers,
                shared_bytes,
            },
        )
        .expect("fits")
    }

    /// Checks a CTA worked by hand: its CTAs and active warps per SM, its
    /// occupancy, and every limit that binds.
    fn expect(o: &Occupancy, (ctas, warps): (u32, u32), occupancy: f64, limited_by: &[Limiter]) {
        assert_eq!(
            (o.ctas_per_sm, o.active_warps_per_sm),
            (ctas, warps),
            "{o:?}"
        );
        assert_eq!(o.occupancy, occupancy, "{o:?}");
        assert_eq!(o.limited_by, limited_by, "{o:?}");
    }

    // Each case below is worked by hand from the tables and rules in
    // docs/profile.md, the way NVIDIA's occupancy calculator does it.

    #[test]
    fn sm80_256_threads_32_registers_fill_the_sm() {
        // 8 warps per CTA: 64 / 8 = 8 CTAs by warps; 32 x 32 = 1024
        // registers per warp, 16384 / 1024 = 16 warps per sub-partition,
        // 64 warps, 8 CTAs by registers.
        let o = occ(80, 256, Some(32), 0);
        expect(&o, (8, 64), 1.0, &[Registers, Warps]);
        // 1 KB reserved per CTA: 167936 / 1024 = 164 CTAs by shared memory.
        assert_eq!(o.ctas_allowed_by.shared_memory, Some(164));
    }

    #[test]
    fn sm80_64_registers_halve_occupancy() {
        // 64 x 32 = 2048 per warp: 8 warps per sub-partition, 32 per SM,
        // 8 CTAs of 4 warps: 32 of 64 warps.
        expect(&occ(80, 128, Some(64), 0), (8, 32), 0.5, &[Registers]);
    }

    #[test]
    fn sm80_one_warp_ctas_hit_the_cta_limit() {
        expect(&occ(80, 32, Some(32), 0), (32, 32), 0.5, &[Ctas]);
    }

    #[test]
    fn sm90_48_kb_of_shared_allows_four_ctas() {
        // 49152 + 1024 reserved = 50176 (a multiple of 128); 228 KB =
        // 233472; 233472 / 50176 = 4.65, so 4 CTAs of 8 warps: 50 %.
        let o = occ(90, 256, Some(32), 48 * 1024);
        assert_eq!(o.shared_bytes_allocated, 50176);
        expect(&o, (4, 32), 0.5, &[SharedMemory]);
    }

    #[test]
    fn sm90_three_warp_ctas_leave_a_warp_slot_empty() {
        // 64 / 3 = 21 CTAs by warps, 63 warps: 98.4 %.
        expect(&occ(90, 96, Some(16), 0), (21, 63), 63.0 / 64.0, &[Warps]);
    }

    #[test]
    fn sm90_1024_threads_of_72_registers_do_not_fit() {
        // 72 x 32 = 2304 per warp; 16384 / 2304 = 7 warps per
        // sub-partition, 28 per SM: not one CTA of 32 warps.
        expect(&occ(90, 1024, Some(72), 0), (0, 0), 0.0, &[Registers]);
    }

    #[test]
    fn sm86_and_odd_register_counts_round_per_warp() {
        // 40 x 32 = 1280 per warp; 16384 / 1280 = 12 per sub-partition,
        // 48 warps = 12 CTAs of 4 warps; 48 / 4 = 12 by warps too.
        let o = occ(86, 128, Some(40), 0);
        expect(&o, (12, 48), 1.0, &[Registers, Warps]);
        // 33 registers round up to 1280 per warp as well (33 x 32 = 1056).
        assert_eq!(
            occ(86, 128, Some(33), 0).ctas_allowed_by.registers,
            Some(12)
        );
    }

    // The cases below follow cudaOccMaxActiveBlocksPerMultiprocessor of
    // cuda_occupancy.h (CUDA 12.2) step by step, as NVIDIA's occupancy
    // calculator computes them.

    #[test]
    fn sm80_256_threads_of_64_registers_take_half_the_sm() {
        // 64 x 32 = 2048 registers per warp; 16384 / 2048 = 8 warps per
        // sub-partition, 32 per SM: 4 CTAs of 8 warps, 50 %.
        expect(&occ(80, 256, Some(64), 0), (4, 32), 0.5, &[Registers]);
    }

    #[test]
    fn sm80_40_kb_of_shared_fills_the_carveout_exactly() {
        // 40960 + 1024 reserved = 41984 (a multiple of 128); 164 KB =
        // 167936 = 4 x 41984: 4 CTAs of 8 warps, 32 of 64 warps.
        let o = occ(80, 256, Some(32), 40 * 1024);
        assert_eq!(o.shared_bytes_allocated, 41984);
        expect(&o, (4, 32), 0.5, &[SharedMemory]);
        // 100 bytes round up to 1152 with the reserve: 167936 / 1152 = 145
        // CTAs by shared memory, so the 32-CTA and 64-warp limits bind
        // instead (16 registers allow 64 CTAs of 2 warps).
        let o = occ(80, 64, Some(16), 100);
        assert_eq!(o.shared_bytes_allocated, 1152);
        assert_eq!(o.ctas_allowed_by.shared_memory, Some(145));
        expect(&o, (32, 64), 1.0, &[Warps, Ctas]);
    }

    #[test]
    fn sm80_1024_threads_of_64_registers_fit_once() {
        // 2048 per warp x 32 warps = 65536, exactly the per-CTA limit: one
        // CTA, 32 of 64 warps.
        expect(&occ(80, 1024, Some(64), 0), (1, 32), 0.5, &[Registers]);
    }

    #[test]
    fn sm90_255_registers_leave_two_warps_per_sub_partition() {
        // 255 x 32 = 8160, rounded to 8192 per warp; 16384 / 8192 = 2
        // warps per sub-partition, 8 per SM: 2 CTAs of 4 warps, 12.5 %.
        expect(&occ(90, 128, Some(255), 0), (2, 8), 0.125, &[Registers]);
    }

    #[test]
    fn sm90_65_registers_at_1024_threads_exceed_the_cta_register_limit() {
        // 65 x 32 = 2080, rounded to 2304 per warp; 32 warps need 73728
        // registers, more than the 65536 a CTA may have.
        let o = occ(90, 1024, Some(65), 0);
        assert_eq!(o.ctas_allowed_by.registers, Some(0));
        expect(&o, (0, 0), 0.0, &[Registers]);
    }

    #[test]
    fn a_kernel_without_registers_is_not_limited_by_them() {
        let o = occ(90, 256, Some(0), 0);
        assert_eq!(o.ctas_allowed_by.registers, None);
        expect(&o, (8, 64), 1.0, &[Warps]);
    }

    #[test]
    fn shared_memory_above_48_kb_is_opted_in_up_to_the_targets_limit() {
        // Up to 48 KB a CTA is launched without opting in; above it the
        // runtime opts in, so the limit is the target's opt-in one (227 KB
        // on sm_90), and one byte more is refused.
        let r = |shared_bytes| CtaResources {
            threads: 128,
            registers: Some(32),
            shared_bytes,
        };
        for l in &ARCH_LIMITS {
            let arch = l.arch;
            let sm = arch_name(arch);
            let o = occupancy(arch, r(48 * 1024)).expect("48 KB fits");
            assert!(o.ctas_per_sm >= 1, "{sm}");
            let optin = l.max_shared_per_cta_optin;
            let o = occupancy(arch, r(optin)).expect("the opt-in limit fits");
            assert_eq!(o.ctas_per_sm, 1, "{sm}");
            assert_eq!(
                occupancy(arch, r(optin + 1)),
                Err(OccupancyError::TooMuchShared {
                    bytes: optin + 1,
                    max: optin
                }),
                "{sm}"
            );
        }
        // 100 KB on sm_90: 101 KB allocated with the reserve, two per SM.
        let o = occupancy(90, r(100 * 1024)).expect("fits");
        assert_eq!((o.shared_bytes_allocated, o.ctas_per_sm), (101 * 1024, 2));
        // On sm_75 nothing is reserved and the unit is 256 bytes: 48 KB
        // takes 49152, and 64 KB holds one such CTA.
        let o = occupancy(75, r(48 * 1024)).expect("fits");
        assert_eq!((o.shared_bytes_allocated, o.ctas_per_sm), (49152, 1));
    }

    #[test]
    fn the_table_covers_every_target_with_the_compilers_shared_limit() {
        // One table of per-target shared limits: the compiler's P0801
        // check and this one must agree, and every build target needs a row.
        for arch in phobos_core::ARCHES {
            let sm = arch_name(arch);
            let l = limits(arch).unwrap_or_else(|| panic!("no row for {sm}"));
            assert_eq!(
                l.max_shared_per_cta_optin,
                phobos_core::max_shared_bytes(arch),
                "{sm}"
            );
            assert_eq!(
                l.shared_per_sm,
                l.max_shared_per_cta_optin + l.shared_reserved_per_cta
            );
        }
        assert_eq!(ARCH_LIMITS.len(), phobos_core::ARCHES.len());
    }

    #[test]
    fn unknown_registers_leave_the_limit_out() {
        let o = occ(75, 64, None, 0);
        assert_eq!(o.ctas_allowed_by.registers, None);
        assert_eq!(o.ctas_allowed_by.shared_memory, None);
        expect(&o, (16, 32), 1.0, &[Warps, Ctas]);
    }

    #[test]
    fn impossible_ctas_are_errors() {
        let r = |threads, registers, shared_bytes| CtaResources {
            threads,
            registers,
            shared_bytes,
        };
        assert!(matches!(
            occupancy(80, r(2048, None, 0)),
            Err(OccupancyError::TooManyThreads { .. })
        ));
        assert!(matches!(
            occupancy(80, r(128, Some(300), 0)),
            Err(OccupancyError::TooManyRegisters { .. })
        ));
        assert!(matches!(
            occupancy(86, r(128, None, 100 * 1024)),
            Err(OccupancyError::TooMuchShared { .. })
        ));
        assert!(matches!(
            occupancy(70, r(128, None, 0)),
            Err(OccupancyError::UnknownArch(70))
        ));
    }

    #[test]
    fn ptxas_verbose_output_gives_the_entry_registers() {
        let text = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'other' for 'sm_80'\n\
ptxas info    : Used 12 registers, 368 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'k_v0' for 'sm_80'\n\
ptxas info    : Function properties for k_v0\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 30 registers, used 0 barriers, 380 bytes cmem[0]\n";
        assert_eq!(registers_from_ptxas(text, "k_v0"), Some(30));
        assert_eq!(registers_from_ptxas(text, "other"), Some(12));
        assert_eq!(registers_from_ptxas(text, "missing"), None);
    }
}
