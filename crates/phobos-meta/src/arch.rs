//! Targets as numbers, and the one place that knows which number is which
//! name. A target is `major * 10 + minor` (`80` is `sm_80`), so that a
//! feature check is an ordering (`arch >= 80`), with one exception:
//! **`sm_90a`**, Hopper's arch-specific target (wgmma, TMA, `setmaxnreg`:
//! features that run on compute capability 9.0 only and are not forward
//! compatible), is [`SM_90A`] = 91. There is no sm_91, and 91 sorts above
//! sm_90 (every sm_90 feature holds) and below sm_100 (no Blackwell
//! feature holds). Every text that names a target goes through [`name`];
//! every question "does this image run on that device" through
//! [`runs_on`].

/// `sm_90a`, numbered so that it orders between sm_90 and sm_100.
pub const SM_90A: u32 = 91;

/// The target's name as ptxas, `.target` and error messages write it:
/// `sm_80`, `sm_90a`.
pub fn name(arch: u32) -> String {
    if arch == SM_90A {
        "sm_90a".to_string()
    } else {
        format!("sm_{arch}")
    }
}

/// The target a name's number part means: `"80"` is 80 and `"90a"` is
/// [`SM_90A`]; `"91"` (there is no sm_91) and anything else is `None`. The
/// inverse of [`name`] after its `sm_`, for every reader of target names
/// (phobos-core's `parse_arch`, ptxas's list of targets, a PTX `.target`).
/// Whether Phobos supports the target is the caller's question.
pub fn from_name(digits: &str) -> Option<u32> {
    match digits {
        "90a" => Some(SM_90A),
        _ if digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse().ok().filter(|&n| n != SM_90A)
        }
        _ => None,
    }
}

/// The compute capability (`major * 10 + minor`) the target is for:
/// `sm_90a` is a 9.0 target.
pub fn compute_capability(arch: u32) -> u32 {
    if arch == SM_90A {
        90
    } else {
        arch
    }
}

/// Whether the target's code runs only on devices of exactly its compute
/// capability (the `a` targets: their PTX is not JIT-compiled for newer
/// devices and their cubins do not run on them).
pub fn is_arch_specific(arch: u32) -> bool {
    arch == SM_90A
}

/// Whether code built for `arch` can run on a device of compute capability
/// `device` (`major * 10 + minor`): as a cubin (`cubin`), the same major
/// version and a minor not above the device's; as PTX, any target not above
/// the device's. An arch-specific target runs on its own compute capability
/// only.
pub fn runs_on(arch: u32, device: u32, cubin: bool) -> bool {
    let cc = compute_capability(arch);
    if is_arch_specific(arch) {
        return cc == device;
    }
    if cubin {
        cc / 10 == device / 10 && cc <= device
    } else {
        cc <= device
    }
}

/// Whether the target has Hopper's warpgroup MMA, TMA and transaction
/// mbarriers (`wgmma.mma_async`, `cp.async.bulk.tensor`): sm_90a only.
pub fn has_wgmma(arch: u32) -> bool {
    arch == SM_90A
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_devices() {
        assert_eq!(name(80), "sm_80");
        assert_eq!(name(SM_90A), "sm_90a");
        assert_eq!(compute_capability(SM_90A), 90);
        const { assert!(SM_90A > 90 && SM_90A < 100) };
        assert!(runs_on(SM_90A, 90, true) && runs_on(SM_90A, 90, false));
        assert!(!runs_on(SM_90A, 100, false) && !runs_on(SM_90A, 89, true));
        assert!(runs_on(80, 86, true) && !runs_on(80, 90, true) && runs_on(80, 90, false));
        assert!(!runs_on(90, 89, false) && runs_on(90, 90, true));
        assert!(has_wgmma(SM_90A) && !has_wgmma(90) && !has_wgmma(100));
        for arch in [75, 80, 90, SM_90A, 100, 120] {
            assert_eq!(from_name(&name(arch)["sm_".len()..]), Some(arch));
        }
        for bad in ["91", "90A", "100a", "", "+80", "8 0", "99999999999"] {
            assert_eq!(from_name(bad), None, "{bad}");
        }
    }
}
