//! Stand-in cubins: how a test hands the stand-in a binary image it can
//! run, so the runtime's cubin-first path (pick the cubin for the device's
//! architecture, load it, fall back to PTX only when it is refused) runs
//! in CI. A ptxas cubin holds machine code and no PTX, which the stand-in
//! cannot run; a stand-in cubin is an ELF magic, a header line naming its
//! target and its length, and the PTX:
//!
//! ```text
//! \x7fELF PHOBOS-STAND-IN-CUBIN sm_86 1234\n<1234 bytes of PTX>
//! ```
//!
//! (`sm_90a` for Hopper's arch-specific target.) The stand-in loads one
//! whose target is for its own compute capability and
//! refuses it, as a driver refuses a cubin of another architecture, with
//! `CUDA_ERROR_NO_BINARY_FOR_GPU` otherwise. Any other ELF or fatbin is
//! refused as before. Never given to a real driver (which would refuse it:
//! it is no ELF object).

/// The bytes after the ELF magic that mark a stand-in cubin.
const TAG: &[u8] = b" PHOBOS-STAND-IN-CUBIN sm_";

/// A stand-in cubin for `arch` (86 for sm_86, `phobos_meta::arch::SM_90A`
/// for sm_90a) holding `ptx`.
pub fn stand_in_cubin(arch: u32, ptx: &str) -> Vec<u8> {
    let mut out = b"\x7fELF".to_vec();
    out.extend_from_slice(TAG);
    let name = phobos_meta::arch::name(arch);
    out.extend_from_slice(format!("{} {}\n", &name["sm_".len()..], ptx.len()).as_bytes());
    out.extend_from_slice(ptx.as_bytes());
    out
}

/// The target and PTX of the stand-in cubin at `image`, or `None` when the
/// image is not one (a real cubin, or anything else).
///
/// # Safety
/// `image` points to an image that starts with the ELF magic. Bytes are
/// read one at a time and only while they match a stand-in cubin's
/// header, so an image of any other kind is read no further than its
/// first byte that differs (a real ELF header differs at byte 4).
pub(crate) unsafe fn parse(image: *const u8) -> Option<(u32, String)> {
    let at = |i: usize| *image.add(i);
    for (i, &b) in TAG.iter().enumerate() {
        if at(4 + i) != b {
            return None;
        }
    }
    // `ARCH LEN\n`: the target's digits (and `a` for sm_90a), one space,
    // digits, a newline, at most 24 bytes.
    let mut i = 4 + TAG.len();
    let mut fields = [String::new(), String::new()];
    for field in &mut fields {
        loop {
            let b = at(i);
            i += 1;
            match b {
                b'0'..=b'9' | b'a' if field.len() < 10 => field.push(b as char),
                b' ' | b'\n' if !field.is_empty() => break,
                _ => return None,
            }
        }
    }
    if at(i - 1) != b'\n' {
        return None;
    }
    let arch = phobos_meta::arch::from_name(&fields[0])?;
    let len: usize = fields[1].parse().ok()?;
    let ptx = std::slice::from_raw_parts(image.add(i), len);
    Some((arch, String::from_utf8(ptx.to_vec()).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stand_in_cubin_reads_back_and_nothing_else_does() {
        let image = stand_in_cubin(86, ".version 7.0\n");
        assert_eq!(
            unsafe { parse(image.as_ptr()) },
            Some((86, ".version 7.0\n".to_string()))
        );
        let sm_90a = phobos_meta::arch::SM_90A;
        let image = stand_in_cubin(sm_90a, ".version 8.0\n");
        assert!(image.starts_with(b"\x7fELF PHOBOS-STAND-IN-CUBIN sm_90a 13\n"));
        assert_eq!(
            unsafe { parse(image.as_ptr()) },
            Some((sm_90a, ".version 8.0\n".to_string()))
        );
        for other in [
            &b"\x7fELF\x02\x01\x01\x33\0\0\0\0\0\0\0\0"[..],
            &b"\x7fELF not really a cubin"[..],
            &b"\x7fELF PHOBOS-STAND-IN-CUBIN sm_x"[..],
            &b"\x7fELF PHOBOS-STAND-IN-CUBIN sm_86 x"[..],
        ] {
            assert_eq!(unsafe { parse(other.as_ptr()) }, None, "{other:?}");
        }
    }
}
