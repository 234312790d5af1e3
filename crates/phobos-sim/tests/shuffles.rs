//! `shfl.sync` in every mode with the PTX segment-mask and clamp semantics,
//! `vote.sync`, and lanes that diverge and meet again at a warp-synchronous
//! instruction.

#![allow(clippy::needless_range_loop)]

mod common;
use common::*;

/// Runs `shfl.sync.MODE.b32 d|p, value, b, c, 0xffffffff` with value = 100 + lane
/// and returns (d, p) per lane.
fn shfl(mode: &str, b: &str, c: u32) -> (Vec<u32>, Vec<u32>) {
    let body = format!(
        "    add.u32 %r1, %r0, 100;
    shfl.sync.{mode}.b32 %r2|%p1, %r1, {b}, {c}, 0xffffffff;
    selp.u32 %r3, 1, 0, %p1;
{}{}",
        store(0, 32, "%r2"),
        store(1, 32, "%r3")
    );
    let out = run32(&body, &[0], 2);
    (out[0].clone(), out[1].clone())
}

fn check(mode: &str, b: &str, c: u32, src: impl Fn(u32) -> Option<u32>) {
    let (d, p) = shfl(mode, b, c);
    for l in 0..32u32 {
        let (want_d, want_p) = match src(l) {
            Some(j) => (100 + j, 1),
            None => (100 + l, 0),
        };
        assert_eq!(
            (d[l as usize], p[l as usize]),
            (want_d, want_p),
            "shfl.{mode} b={b} c={c:#x} lane {l}"
        );
    }
}

/// The `c` operand CUDA uses for a width: segment mask in 12:8, clamp in 4:0.
fn c_for(width: u32, up: bool) -> u32 {
    ((32 - width) << 8) | if up { 0 } else { 0x1F }
}

#[test]
fn full_warp_modes() {
    check("bfly", "5", 0x1F, |l| Some(l ^ 5));
    check("down", "3", 0x1F, |l| (l + 3 < 32).then_some(l + 3));
    check("up", "3", 0, |l| (l >= 3).then(|| l - 3));
    check("idx", "7", 0x1F, |_| Some(7));
    check("idx", "%r0", 0x1F, Some);
}

#[test]
fn segments_of_every_width() {
    for w in [2u32, 4, 8, 16] {
        check("down", "1", c_for(w, false), |l| {
            ((l % w) + 1 < w).then_some(l + 1)
        });
        check("up", "1", c_for(w, true), |l| (l % w >= 1).then(|| l - 1));
        check("bfly", "1", c_for(w, false), |l| Some(l ^ 1));
        check("idx", "3", c_for(w, false), |l| Some((l / w) * w + (3 % w)));
    }
}

#[test]
fn xor_beyond_the_width_reads_only_lower_segments() {
    // Width 8, xor 8: lanes whose partner is in a higher segment keep their
    // own value; those whose partner is lower read it (PTX: j <= maxLane).
    check("bfly", "8", c_for(8, false), |l| {
        let j = l ^ 8;
        (j <= (l & !7) | 7).then_some(j)
    });
}

#[test]
fn clamp_without_segments() {
    // cval 15, no segment mask: sources above lane 15 are out of range.
    check("down", "4", 0x0F, |l| (l + 4 <= 15).then_some(l + 4));
    check("idx", "20", 0x0F, |_| None);
    check("idx", "9", 0x0F, |_| Some(9));
    // up compares against cval as a lower bound.
    check("up", "2", 0x04, |l| (l >= 2 && l - 2 >= 4).then(|| l - 2));
}

#[test]
fn lane_operand_uses_its_low_five_bits() {
    check("down", "33", 0x1F, |l| (l + 1 < 32).then_some(l + 1));
    check("idx", "35", 0x1F, |_| Some(3));
}

#[test]
fn lanes_diverge_and_meet_at_a_shuffle() {
    let body = "
    setp.lt.u32 %p1, %r0, 16;
    @%p1 bra $low;
    mul.lo.u32 %r1, %r0, 100;
    bra.uni $join;
$low:
    add.u32 %r1, %r0, 1000;
$join:
    shfl.sync.bfly.b32 %r2, %r1, 16, 31, 0xffffffff;
";
    let out = run32(&format!("{body}{}", store(0, 32, "%r2")), &[0], 1);
    for l in 0..32u32 {
        let j = l ^ 16;
        let want = if j < 16 { j + 1000 } else { j * 100 };
        assert_eq!(out[0][l as usize], want, "lane {l}");
    }
}

#[test]
fn lanes_that_arrive_first_wait_for_their_mask() {
    // Lanes 16-31 reach the shuffle first (it is laid out before the code
    // that lanes 0-15 run); they must wait until lanes 0-15 jump back to it.
    let body = "
    mov.u32 %r1, %r0;
    setp.lt.u32 %p1, %r0, 16;
    @%p1 bra $second;
$sync:
    shfl.sync.idx.b32 %r2, %r1, 3, 31, 0xffffffff;
    bra.uni $after;
$second:
    add.u32 %r1, %r0, 500;
    bra.uni $sync;
$after:
";
    let out = run32(&format!("{body}{}", store(0, 32, "%r2")), &[0], 1);
    assert!(out[0].iter().all(|&v| v == 503), "{:?}", out[0]);
}

#[test]
fn loops_with_different_trip_counts_meet_at_a_butterfly() {
    let body = "
    mov.u32 %r1, 0;
    mov.u32 %r2, 0;
$loop:
    add.u32 %r1, %r1, %r2;
    add.u32 %r2, %r2, 1;
    setp.le.u32 %p1, %r2, %r0;
    @%p1 bra $loop;
    shfl.sync.bfly.b32 %r3, %r1, 16, 31, 0xffffffff;
    add.u32 %r1, %r1, %r3;
    shfl.sync.bfly.b32 %r3, %r1, 8, 31, 0xffffffff;
    add.u32 %r1, %r1, %r3;
    shfl.sync.bfly.b32 %r3, %r1, 4, 31, 0xffffffff;
    add.u32 %r1, %r1, %r3;
    shfl.sync.bfly.b32 %r3, %r1, 2, 31, 0xffffffff;
    add.u32 %r1, %r1, %r3;
    shfl.sync.bfly.b32 %r3, %r1, 1, 31, 0xffffffff;
    add.u32 %r1, %r1, %r3;
";
    let out = run32(&format!("{body}{}", store(0, 32, "%r1")), &[0], 1);
    let total: u32 = (0..32u32).map(|l| l * (l + 1) / 2).sum();
    assert!(out[0].iter().all(|&v| v == total));
}

#[test]
fn partial_masks_in_divergent_halves() {
    let body = "
    setp.lt.u32 %p1, %r0, 16;
    @%p1 bra $low;
    shfl.sync.down.b32 %r1, %r0, 1, 31, 0xffff0000;
    bra.uni $join;
$low:
    shfl.sync.up.b32 %r1, %r0, 1, 0, 0x0000ffff;
$join:
";
    let out = run32(&format!("{body}{}", store(0, 32, "%r1")), &[0], 1);
    for l in 0..32u32 {
        let want = if l < 16 {
            l.saturating_sub(1)
        } else {
            (l + 1).min(31)
        };
        assert_eq!(out[0][l as usize], want, "lane {l}");
    }
}

#[test]
fn votes() {
    let body = "
    ld.global.u32 %r1, [%rd5];
    setp.ne.u32 %p1, %r1, 0;
    vote.sync.any.pred %p2, %p1, 0xffffffff;
    vote.sync.all.pred %p3, %p1, 0xffffffff;
    vote.sync.uni.pred %p4, %p1, 0xffffffff;
    vote.sync.ballot.b32 %r2, %p1, 0xffffffff;
    vote.sync.ballot.b32 %r3, !%p1, 0xffffffff;
    selp.u32 %r4, 1, 0, %p2;
    selp.u32 %r5, 1, 0, %p3;
    selp.u32 %r6, 1, 0, %p4;
    setp.lt.u32 %p5, %r0, 8;
    @!%p5 bra $skip;
    vote.sync.all.pred %p6, %p1, 0x000000ff;
$skip:
    selp.u32 %r7, 1, 0, %p6;
";
    let regs = ["%r2", "%r3", "%r4", "%r5", "%r6", "%r7"];
    // True in lanes 0-7 and in later lanes not divisible by 3.
    let inp: Vec<u32> = (0..32).map(|l| u32::from(l < 8 || l % 3 != 0)).collect();
    let out = run32_regs(body, &regs, &inp);
    let ballot: u32 = (0..32)
        .filter(|&l| inp[l] != 0)
        .fold(0, |m, l| m | (1 << l));
    for l in 0..32 {
        assert_eq!(out[0][l], ballot);
        assert_eq!(out[1][l], !ballot);
        assert_eq!(out[2][l], 1);
        assert_eq!(out[3][l], 0);
        assert_eq!(out[4][l], 0);
        if l < 8 {
            assert_eq!(out[5][l], 1, "lanes 0-7 all hold true");
        } else {
            assert_eq!(out[5][l], 0);
        }
    }
}
