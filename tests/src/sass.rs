//! Reading SASS as `nvdisasm -c` prints it: how many 16-byte global loads
//! (`LDG.E.128`) a thread issues before it first uses one of their results,
//! and whether the code spills to local memory (`STL`/`LDL`).
//!
//! The measure walks each straight-line stretch of instructions (a label or
//! a branch ends it): it counts the `LDG.E.128` issued since the stretch
//! began, or since a result was last used, and stops the count at the first
//! instruction that reads a register one of those loads writes. The largest
//! such count is how many independent 16-byte loads are in flight at once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// What [`analyze`] found in one kernel's SASS.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadReport {
    /// `LDG.E.128` instructions in the code.
    pub ldg128: usize,
    /// The most `LDG.E.128` issued before the first use of any of them.
    pub in_flight: usize,
    /// Each stretch's count, in code order.
    pub groups: Vec<usize>,
    /// `STL`/`LDL` instructions (spills to local memory).
    pub local: usize,
}

/// The registers an operand names (`R12`, and `R13` too for `R12.64`).
fn regs(op: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let b = op.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts =
            b[i] == b'R' && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        if starts {
            let digits: String = op[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            if let Ok(n) = digits.parse::<u32>() {
                out.push(n);
                if op[i + 1 + digits.len()..].starts_with(".64") {
                    out.push(n + 1);
                }
                i += 1 + digits.len();
                continue;
            }
        }
        i += 1;
    }
    out
}

/// Analyze the SASS text of one cubin (`nvdisasm -c` output).
pub fn analyze(sass: &str) -> LoadReport {
    let mut report = LoadReport {
        ldg128: 0,
        in_flight: 0,
        groups: Vec::new(),
        local: 0,
    };
    let mut pending: HashSet<u32> = HashSet::new();
    let mut count = 0;
    let flush = |count: &mut usize, pending: &mut HashSet<u32>, report: &mut LoadReport| {
        if *count > 0 {
            report.groups.push(*count);
            report.in_flight = report.in_flight.max(*count);
        }
        *count = 0;
        pending.clear();
    };
    for raw in sass.lines() {
        // Drop `/*0040*/` addresses and `/* 0x... */` encodings.
        let mut line = String::new();
        let mut rest = raw;
        while let Some(a) = rest.find("/*") {
            line.push_str(&rest[..a]);
            rest = rest[a..].find("*/").map_or("", |b| &rest[a + b + 2..]);
        }
        line.push_str(rest);
        let line = line.trim();
        if line.is_empty() || line.starts_with('.') && !line.ends_with(':') {
            continue;
        }
        if line.ends_with(':') {
            flush(&mut count, &mut pending, &mut report);
            continue;
        }
        let line = line.trim_end_matches(';').trim();
        let mut words = line.splitn(2, char::is_whitespace);
        let mut op = words.next().unwrap_or("");
        let mut args = words.next().unwrap_or("").trim();
        if op.starts_with('@') {
            let mut w = args.splitn(2, char::is_whitespace);
            op = w.next().unwrap_or("");
            args = w.next().unwrap_or("").trim();
        }
        let ops: Vec<&str> = if args.is_empty() {
            vec![]
        } else {
            args.split(',').map(str::trim).collect()
        };
        let writes_nothing = [
            "ST", "RED", "ATOM", "BRA", "EXIT", "RET", "BAR", "WARPSYNC", "CALL",
        ]
        .iter()
        .any(|p| op.starts_with(p));
        let (dst, srcs) = if writes_nothing || ops.is_empty() {
            (None, &ops[..])
        } else {
            (Some(ops[0]), &ops[1..])
        };
        if op == "STL" || op.starts_with("STL.") || op == "LDL" || op.starts_with("LDL.") {
            report.local += 1;
        }
        let reads_pending = srcs
            .iter()
            .flat_map(|s| regs(s))
            .any(|r| pending.contains(&r));
        if reads_pending {
            flush(&mut count, &mut pending, &mut report);
        }
        if op.starts_with("LDG.E.128") {
            report.ldg128 += 1;
            count += 1;
            if let Some(base) = dst.and_then(|d| regs(d).into_iter().min()) {
                pending.extend(base..base + 4);
            }
        }
        if op.starts_with("BRA") || op.starts_with("EXIT") {
            flush(&mut count, &mut pending, &mut report);
        }
    }
    flush(&mut count, &mut pending, &mut report);
    report
}

/// NVIDIA's nvdisasm: `PHOBOS_NVDISASM`, `CUDA_PATH`/`CUDA_HOME` `bin/`, or
/// `PATH` (`.ci/run` installs it from the `nvidia-cuda-nvdisasm` wheel).
pub fn find_nvdisasm() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PHOBOS_NVDISASM").map(PathBuf::from) {
        if p.is_file() {
            return Some(p);
        }
    }
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(root) = std::env::var_os(var) {
            let p = Path::new(&root).join("bin/nvdisasm");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nvdisasm"))
        .find(|p| p.is_file())
}

/// `cubin`'s SASS as `nvdisasm -c` prints it (`what` names it in a failure).
pub fn disassemble(nvdisasm: &Path, cubin: &[u8], what: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("k.cubin");
    std::fs::write(&path, cubin).expect("write cubin");
    let out = std::process::Command::new(nvdisasm)
        .arg("-c")
        .arg(&path)
        .output()
        .expect("run nvdisasm");
    assert!(
        out.status.success(),
        "nvdisasm failed on {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// How many SASS instructions start with `op` (`HMMA`, `LDSM`, ...).
pub fn count_ops(sass: &str, op: &str) -> usize {
    sass.lines()
        .filter(|l| l.split_whitespace().any(|w| w.starts_with(op)))
        .count()
}

/// `ptxas -v`'s registers per thread and spilled bytes (stores plus loads,
/// and the stack frame) of `ptx` for `arch`.
pub fn registers_and_spills(ptxas: &Path, ptx: &str, arch: u32) -> (u32, u32) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("k.ptx");
    std::fs::write(&path, ptx).expect("write ptx");
    let out = std::process::Command::new(ptxas)
        .arg(format!("-arch={}", phobos_core::arch::name(arch)))
        .arg("-v")
        .arg(&path)
        .arg("-o")
        .arg(dir.path().join("k.cubin"))
        .output()
        .expect("run ptxas");
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "ptxas failed:\n{text}");
    let number_before = |word: &str| -> u32 {
        text.split(word)
            .next()
            .and_then(|head| head.split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no `{word}` in ptxas -v's output:\n{text}"))
    };
    let regs = number_before(" registers");
    let spills = number_before(" bytes stack frame")
        + number_before(" bytes spill stores")
        + number_before(" bytes spill loads");
    (regs, spills)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SASS: &str = "
.L_x_2:
        /*0100*/   LDG.E.128.CONSTANT R12, desc[UR4][R12.64] ;  /* 0x000 */
        /*0110*/   LDG.E.128.CONSTANT R16, desc[UR4][R16.64+0x200] ;
        /*0120*/   IADD3 R2, R2, 0x200, RZ ;
        /*0130*/   LDG.E.128 R4, desc[UR4][R6.64] ;
        /*0140*/   FMUL R21, R17, R13 ;
        /*0150*/   LDG.E.128 R8, desc[UR4][R8.64] ;
        /*0160*/   @!P0 BRA `(.L_x_2) ;
        /*0170*/   STL [R1], R3 ;
";

    #[test]
    fn counts_loads_until_a_result_is_read() {
        let r = analyze(SASS);
        assert_eq!(r.ldg128, 4);
        assert_eq!(r.groups, vec![3, 1]);
        assert_eq!(r.in_flight, 3);
        assert_eq!(r.local, 1);
    }

    #[test]
    fn a_pair_operand_names_two_registers() {
        assert_eq!(regs("desc[UR4][R12.64+0x10]"), vec![12, 13]);
        assert_eq!(regs("UR4"), Vec::<u32>::new());
    }
}
