//! Every instruction family of the PTX subset, run on the simulator and
//! compared with values computed here in Rust.

#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use phobos_sim::Launch;

fn inputs() -> Vec<u32> {
    // Mixed signs and magnitudes, one per lane.
    (0..32u32)
        .map(|i| (i.wrapping_mul(0x9E37_79B9) ^ (i << 3)).wrapping_sub(0x4000_0000))
        .collect()
}

#[test]
fn integer_arithmetic() {
    let inp = inputs();
    let mut body = String::from("    ld.global.u32 %r1, [%rd5];\n    add.u32 %r2, %r0, 7;\n");
    let ops = [
        "add.s32 %r3, %r1, %r2;",
        "sub.s32 %r3, %r1, %r2;",
        "mul.lo.s32 %r3, %r1, %r2;",
        "mul.hi.s32 %r3, %r1, %r2;",
        "mul.hi.u32 %r3, %r1, %r2;",
        "div.s32 %r3, %r1, %r2;",
        "rem.s32 %r3, %r1, %r2;",
        "div.u32 %r3, %r1, %r2;",
        "rem.u32 %r3, %r1, %r2;",
        "neg.s32 %r3, %r1;",
        "abs.s32 %r3, %r1;",
        "min.s32 %r3, %r1, %r2;",
        "min.u32 %r3, %r1, %r2;",
        "max.s32 %r3, %r1, -5;",
        "mad.lo.s32 %r3, %r1, %r2, 1000;",
        "and.b32 %r3, %r1, 0xF0F0F0F0;",
        "or.b32 %r3, %r1, %r2;",
        "xor.b32 %r3, %r1, %r2;",
        "not.b32 %r3, %r1;",
        "cnot.b32 %r3, %r0;",
    ];
    for (i, op) in ops.iter().enumerate() {
        body += &format!("    {op}\n");
        body += &store(i, 32, "%r3");
    }
    let out = run32(&body, &inp, ops.len());
    for l in 0..32usize {
        let a = inp[l];
        let b = l as u32 + 7;
        let (sa, sb) = (a as i32, b as i32);
        let want = [
            a.wrapping_add(b),
            a.wrapping_sub(b),
            a.wrapping_mul(b),
            ((i64::from(sa) * i64::from(sb)) >> 32) as u32,
            ((u64::from(a) * u64::from(b)) >> 32) as u32,
            sa.wrapping_div(sb) as u32,
            sa.wrapping_rem(sb) as u32,
            a / b,
            a % b,
            sa.wrapping_neg() as u32,
            sa.wrapping_abs() as u32,
            sa.min(sb) as u32,
            a.min(b),
            sa.max(-5) as u32,
            a.wrapping_mul(b).wrapping_add(1000),
            a & 0xF0F0_F0F0,
            a | b,
            a ^ b,
            !a,
            u32::from(l == 0),
        ];
        assert_lane(&out, l, &want, &ops);
    }
}

#[test]
fn wide_and_64_bit_arithmetic() {
    let body = "
    ld.global.u32 %r1, [%rd5];
    mul.wide.s32 %rd10, %r1, -3;
    mul.wide.u32 %rd11, %r1, 3;
    mad.wide.s32 %rd12, %r1, %r1, %rd10;
    mul.lo.s64 %rd13, %rd10, %rd11;
    mul.hi.u64 %rd14, %rd11, %rd11;
    shr.s64 %rd15, %rd10, 40;
    mov.b64 {%r2, %r3}, %rd10;
    mov.b64 %rd16, {%r3, %r2};
    cvt.u32.u64 %r4, %rd13;
    cvt.u32.u64 %r5, %rd14;
    cvt.u32.u64 %r6, %rd15;
    cvt.u32.u64 %r7, %rd12;
    cvt.u32.u64 %r8, %rd16;
    mov.b64 {%r9, %r10}, %rd11;
";
    let regs = ["%r2", "%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r10"];
    let inp = inputs();
    let out = run32_regs(body, &regs, &inp);
    for l in 0..32 {
        let a = inp[l];
        let w10 = i64::from(a as i32) * -3;
        let w11 = u64::from(a) * 3;
        let w12 = i64::from(a as i32) * i64::from(a as i32) + w10;
        let w13 = (w10 as u64).wrapping_mul(w11);
        let w14 = ((u128::from(w11) * u128::from(w11)) >> 64) as u64;
        let w15 = w10 >> 40;
        let want = [
            w10 as u32,
            (w10 >> 32) as u32,
            w13 as u32,
            w14 as u32,
            w15 as u32,
            w12 as u32,
            (w10 >> 32) as u32,
            (w11 >> 32) as u32,
        ];
        assert_lane(&out, l, &want, &regs);
    }
}

#[test]
fn shifts_and_bit_operations() {
    let body = "
    ld.global.u32 %r1, [%rd5];
    shl.b32 %r2, %r1, %r0;
    shr.u32 %r3, %r1, %r0;
    shr.s32 %r4, %r1, %r0;
    add.u32 %r9, %r0, 20;
    shl.b32 %r5, %r1, %r9;
    shr.s32 %r6, %r1, %r9;
    popc.b32 %r7, %r1;
    clz.b32 %r8, %r0;
    brev.b32 %r10, %r1;
    bfe.u32 %r11, %r1, %r0, 5;
    bfe.s32 %r12, %r1, 4, %r0;
    bfi.b32 %r13, %r0, %r1, 3, 5;
";
    let regs = [
        "%r2", "%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r10", "%r11", "%r12", "%r13",
    ];
    let inp = inputs();
    let out = run32_regs(body, &regs, &inp);
    let bfe_ref = |a: u32, pos: u32, len: u32, signed: bool| -> u32 {
        let mut d = 0u32;
        let sbit = if signed && len > 0 {
            (a >> (pos + len - 1).min(31)) & 1
        } else {
            0
        };
        for i in 0..32 {
            let bit = if i < len && pos + i <= 31 {
                (a >> (pos + i)) & 1
            } else {
                sbit
            };
            d |= bit << i;
        }
        d
    };
    for l in 0..32u32 {
        let a = inp[l as usize];
        let s = l + 20;
        let want = [
            a << l,
            a >> l,
            ((a as i32) >> l) as u32,
            if s >= 32 { 0 } else { a << s },
            ((a as i32) >> s.min(31)) as u32,
            a.count_ones(),
            l.leading_zeros(),
            a.reverse_bits(),
            bfe_ref(a, l, 5, false),
            bfe_ref(a, 4, l, true),
            (a & !(0x1F << 3)) | ((l & 0x1F) << 3),
        ];
        assert_lane(&out, l as usize, &want, &regs);
    }
}

#[test]
fn prmt_dp4a_dp2a() {
    let body = "
    ld.global.u32 %r1, [%rd5];
    mul.lo.u32 %r2, %r1, 0x01000193;
    prmt.b32 %r3, %r1, %r2, 0x3210;
    prmt.b32 %r4, %r1, %r2, 0x4567;
    prmt.b32 %r5, %r1, %r2, 0xBA98;
    prmt.b32 %r6, %r1, %r2, 0xF1C3;
    dp4a.s32.s32 %r7, %r1, %r2, 5;
    dp4a.u32.u32 %r8, %r1, %r2, 5;
    dp4a.s32.u32 %r9, %r1, %r2, -5;
    dp4a.u32.s32 %r10, %r1, %r2, %r0;
    dp2a.lo.s32.s32 %r11, %r1, %r2, 1;
    dp2a.hi.u32.u32 %r12, %r1, %r2, 1;
";
    let regs = [
        "%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r9", "%r10", "%r11", "%r12",
    ];
    let inp = inputs();
    let out = run32_regs(body, &regs, &inp);
    let prmt = |a: u32, b: u32, c: u32| -> u32 {
        let bytes = ((u64::from(b) << 32) | u64::from(a)).to_le_bytes();
        let mut r = 0;
        for i in 0..4 {
            let sel = (c >> (4 * i)) & 15;
            let byte = bytes[(sel & 7) as usize];
            let v = if sel & 8 != 0 {
                if byte >= 0x80 {
                    0xFF
                } else {
                    0
                }
            } else {
                byte
            };
            r |= u32::from(v) << (8 * i);
        }
        r
    };
    // Field `i` of `bits` bits of `x`, sign-extended when `signed`.
    let field = |x: u32, i: u32, bits: u32, signed: bool| -> i64 {
        let v = i64::from((x >> (bits * i)) & ((1 << bits) - 1));
        if signed && v >= 1 << (bits - 1) {
            v - (1 << bits)
        } else {
            v
        }
    };
    let dp4 = |a: u32, b: u32, c: i64, sa: bool, sb: bool| -> u32 {
        (c + (0..4)
            .map(|i| field(a, i, 8, sa) * field(b, i, 8, sb))
            .sum::<i64>()) as u32
    };
    let dp2 = |a: u32, b: u32, c: i64, hi: bool, s: bool| -> u32 {
        let k = if hi { 2 } else { 0 };
        (c + field(a, 0, 16, s) * field(b, k, 8, s) + field(a, 1, 16, s) * field(b, k + 1, 8, s))
            as u32
    };
    for l in 0..32usize {
        let a = inp[l];
        let b2 = a.wrapping_mul(0x0100_0193);
        let want = [
            a,
            prmt(a, b2, 0x4567),
            prmt(a, b2, 0xBA98),
            prmt(a, b2, 0xF1C3),
            dp4(a, b2, 5, true, true),
            dp4(a, b2, 5, false, false),
            dp4(a, b2, -5, true, false),
            dp4(a, b2, l as i64, false, true),
            dp2(a, b2, 1, false, true),
            dp2(a, b2, 1, true, false),
        ];
        assert_lane(&out, l, &want, &regs);
    }
}

#[test]
fn float_arithmetic() {
    let body = "
    ld.global.f32 %f1, [%rd5];
    cvt.rn.f32.u32 %f2, %r0;
    add.f32 %f2, %f2, 0f3F000000;
    add.f32 %f3, %f1, %f2;
    sub.f32 %f4, %f1, %f2;
    mul.f32 %f5, %f1, %f2;
    fma.rn.f32 %f6, %f1, %f2, %f3;
    div.rn.f32 %f7, %f1, %f2;
    sqrt.rn.f32 %f8, %f2;
    rcp.rn.f32 %f9, %f2;
    min.f32 %f10, %f1, %f2;
    max.f32 %f11, %f1, %f2;
    abs.f32 %f12, %f1;
    neg.f32 %f13, %f1;
    mul.sat.f32 %f14, %f1, %f2;
    ex2.approx.f32 %f15, %f2;
    cvt.f64.f32 %fd1, %f1;
    cvt.f64.f32 %fd2, %f2;
    fma.rn.f64 %fd3, %fd1, %fd2, %fd1;
    div.rn.f64 %fd4, %fd3, %fd2;
    cvt.rn.f32.f64 %f16, %fd4;
";
    let regs = [
        "%f3", "%f4", "%f5", "%f6", "%f7", "%f8", "%f9", "%f10", "%f11", "%f12", "%f13", "%f14",
        "%f15", "%f16",
    ];
    let mut b = body.to_string();
    for (i, r) in regs.iter().enumerate() {
        b += &format!("    mov.b32 %r20, {r};\n");
        b += &store(i, 32, "%r20");
    }
    let inp: Vec<u32> = (0..32).map(|i| f((i as f32 - 15.3) * 1.37)).collect();
    let out = run32(&b, &inp, regs.len());
    for l in 0..32usize {
        let a = f32::from_bits(inp[l]);
        let c = l as f32 + 0.5;
        let d1 = f64::from(a);
        let d2 = f64::from(c);
        let want = [
            a + c,
            a - c,
            a * c,
            a.mul_add(c, a + c),
            a / c,
            c.sqrt(),
            1.0 / c,
            a.min(c),
            a.max(c),
            a.abs(),
            -a,
            (a * c).clamp(0.0, 1.0),
            c.exp2(),
            (d1.mul_add(d2, d1) / d2) as f32,
        ];
        assert_lane(&out, l, &want.map(f32::to_bits), &regs);
    }
}

#[test]
fn fma_rounds_once() {
    // a*b = 1 - 2^-46 exactly; a*b rounded to f32 is 1.0, so a*b - 1 gives 0
    // with two roundings and -2^-46 with one.
    let a = 1.0f32 + 2f32.powi(-23);
    let b = 1.0f32 - 2f32.powi(-23);
    let body = "
    ld.global.f32 %f1, [%rd2];
    ld.global.f32 %f2, [%rd2+4];
    fma.rn.f32 %f3, %f1, %f2, 0fBF800000;
    mul.f32 %f4, %f1, %f2;
    add.f32 %f4, %f4, 0fBF800000;
    mov.b32 %r1, %f3;
    mov.b32 %r2, %f4;
";
    let b2 = format!("{body}{}{}", store(0, 32, "%r1"), store(1, 32, "%r2"));
    let out = run32(&b2, &[f(a), f(b)], 2);
    assert_eq!(f32::from_bits(out[0][0]), -(2f32.powi(-46)));
    assert_eq!(f32::from_bits(out[1][0]), 0.0);
}

#[test]
fn float_special_values_and_ftz() {
    let body = "
    ld.global.f32 %f1, [%rd2];
    ld.global.f32 %f2, [%rd2+4];
    ld.global.f32 %f3, [%rd2+8];
    min.f32 %f4, %f1, %f2;
    max.f32 %f5, %f2, %f1;
    add.ftz.f32 %f6, %f3, 0f00000000;
    add.f32 %f7, %f3, 0f00000000;
    mul.sat.f32 %f8, %f1, %f2;
    setp.nan.f32 %p1, %f1, %f2;
    setp.num.f32 %p2, %f1, %f2;
    setp.ltu.f32 %p3, %f1, %f2;
    setp.lt.f32 %p4, %f1, %f2;
    selp.u32 %r5, 1, 0, %p1;
    selp.u32 %r6, 1, 0, %p2;
    selp.u32 %r7, 1, 0, %p3;
    selp.u32 %r8, 1, 0, %p4;
    mov.b32 %r1, %f4;
    mov.b32 %r2, %f5;
    mov.b32 %r3, %f6;
    mov.b32 %r4, %f7;
    mov.b32 %r9, %f8;
";
    let regs = [
        "%r1", "%r2", "%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r9",
    ];
    let sub = f32::from_bits(0x0000_0100);
    let out = run32_regs(body, &regs, &[f(f32::NAN), f(2.0), f(sub)]);
    assert_eq!(out[0][0], f(2.0), "min with NaN returns the other");
    assert_eq!(out[1][0], f(2.0), "max with NaN returns the other");
    assert_eq!(out[2][0], 0, "ftz flushes a subnormal");
    assert_eq!(out[3][0], f(sub), "without ftz a subnormal stays");
    assert_eq!(&[out[4][0], out[5][0], out[6][0], out[7][0]], &[1, 0, 1, 0]);
    assert_eq!(out[8][0], 0, "sat turns NaN into 0");
}

#[test]
fn conversions_with_rounding_modes() {
    let body = "
    ld.global.f32 %f1, [%rd5];
    cvt.rni.s32.f32 %r1, %f1;
    cvt.rzi.s32.f32 %r2, %f1;
    cvt.rmi.s32.f32 %r3, %f1;
    cvt.rpi.s32.f32 %r4, %f1;
    cvt.rzi.sat.u8.f32 %r5, %f1;
    cvt.rn.f16.f32 %h1, %f1;
    cvt.f32.f16 %f2, %h1;
    mov.b32 %r6, %f2;
    cvt.rn.bf16.f32 %h2, %f1;
    cvt.u32.u16 %r7, %h2;
    cvt.rz.f16.f32 %h3, %f1;
    cvt.u32.u16 %r8, %h3;
    cvt.rni.f32.f32 %f3, %f1;
    mov.b32 %r9, %f3;
    cvt.rzi.s64.f32 %rd10, %f1;
    cvt.u32.u64 %r10, %rd10;
    cvt.rn.f32.s32 %f4, %r4;
    mov.b32 %r11, %f4;
    cvt.s8.s32 %r12, %r4;
    cvt.s32.s8 %r13, %r12;
    cvt.sat.s8.s32 %r14, %r4;
";
    let regs = [
        "%r1", "%r2", "%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r9", "%r10", "%r11", "%r13",
        "%r14",
    ];
    let vals: Vec<f32> = vec![
        2.5, -2.5, 3.5, -0.5, 0.49999997, 255.7, 300.0, -7.25, 1e10, -1e10, 65519.0, 65520.0,
        1.0009766, 1.0004883, 3.25159, 200.5, -200.5, 0.0, -0.0, 1e-8, 127.5, -128.6, 1.5, 7.5,
        8.5, -1.5, 1234.567, 0.1, 0.2, 0.3, 100000.0, -3.0,
    ];
    let inp: Vec<u32> = vals.iter().map(|v| f(*v)).collect();
    let out = run32_regs(body, &regs, &inp);
    let sat = |x: f32, lo: f32, hi: f32| x.clamp(lo, hi);
    for (l, &v) in vals.iter().enumerate() {
        let rpi = sat(v.ceil(), i32::MIN as f32, i32::MAX as f32) as i32;
        let h = half::f16::from_f32(v);
        let hz = {
            // Round toward zero: the f16 nearest, stepped back if it is farther out.
            let n = half::f16::from_f32(v);
            if n.to_f32().abs() > v.abs() {
                half::f16::from_bits(n.to_bits() - 1)
            } else {
                n
            }
        };
        let want = [
            v.round_ties_even() as i32 as u32,
            v.trunc() as i32 as u32,
            v.floor() as i32 as u32,
            rpi as u32,
            sat(v.trunc(), 0.0, 255.0) as u32,
            h.to_f32().to_bits(),
            u32::from(half::bf16::from_f32(v).to_bits()),
            u32::from(hz.to_bits()),
            v.round_ties_even().to_bits(),
            (v.trunc() as i64) as u32,
            (rpi as f32).to_bits(),
            rpi as i8 as i32 as u32,
            rpi.clamp(-128, 127) as u32,
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(out[i][l], *w, "{} of {v}", regs[i]);
        }
    }
}

#[test]
fn compare_select_and_predicate_logic() {
    let body = "
    ld.global.u32 %r1, [%rd5];
    setp.lt.s32 %p1, %r1, 0;
    setp.lo.u32 %p2, %r0, 16;
    setp.ge.and.s32 %p3|%p4, %r0, 8, %p2;
    setp.eq.or.u32 %p5, %r0, 31, !%p2;
    and.pred %p6, %p1, %p2;
    or.pred %p7, %p1, %p2;
    xor.pred %p8, %p1, %p2;
    not.pred %p9, %p1;
    selp.u32 %r2, 1, 0, %p1;
    selp.u32 %r3, 1, 0, %p3;
    selp.u32 %r4, 1, 0, %p4;
    selp.u32 %r5, 1, 0, %p5;
    selp.u32 %r6, 1, 0, %p6;
    selp.u32 %r7, 1, 0, %p7;
    selp.u32 %r8, 1, 0, %p8;
    selp.u32 %r9, 1, 0, %p9;
    mov.u32 %r10, 100;
    @%p2 mov.u32 %r10, 200;
    @!%p1 add.u32 %r10, %r10, 1;
";
    let regs = [
        "%r2", "%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r9", "%r10",
    ];
    let inp = inputs();
    let out = run32_regs(body, &regs, &inp);
    for l in 0..32usize {
        let p1 = (inp[l] as i32) < 0;
        let p2 = l < 16;
        let ge = l >= 8;
        let want = [
            u32::from(p1),
            u32::from(ge && p2),
            u32::from(!ge && p2),
            u32::from(l == 31 || !p2),
            u32::from(p1 && p2),
            u32::from(p1 || p2),
            u32::from(p1 ^ p2),
            u32::from(!p1),
            if p2 { 200 } else { 100 } + u32::from(!p1),
        ];
        assert_lane(&out, l, &want, &regs);
    }
}

#[test]
fn loads_and_stores_of_every_width() {
    let body = "
    ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd2];
    ld.global.v2.u32 {%r5, %r6}, [%rd2+8];
    ld.global.u8 %r7, [%rd2+3];
    ld.global.s8 %r8, [%rd2+3];
    ld.global.s16 %r9, [%rd2+2];
    ld.global.u64 %rd10, [%rd2+8];
    cvt.u32.u64 %r10, %rd10;
    shr.u64 %rd11, %rd10, 32;
    cvt.u32.u64 %r11, %rd11;
    ld.global.nc.f32 %f1, [%rd2+4];
    mov.b32 %r12, %f1;
    add.s64 %rd12, %rd1, 4096;
    st.global.v4.u32 [%rd12], {%r4, %r3, %r2, %r1};
    st.global.u8 [%rd12+17], %r7;
    st.global.u16 [%rd12+22], %r9;
    st.global.v2.f32 [%rd12+24], {%f1, %f1};
";
    let regs = [
        "%r1", "%r2", "%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r9", "%r10", "%r11", "%r12",
    ];
    let mut b = format!("    setp.ne.u32 %p1, %r0, 0;\n    @%p1 bra $skip;\n{body}");
    for (i, r) in regs.iter().enumerate() {
        b += &store(i, 32, r);
    }
    b += "$skip:\n";
    let inp = [0x8081_8283u32, 0x4049_0FDB, 0x1111_2222, 0x3333_4444];
    let ptx = kernel("", &b);
    let r = run_with(&ptx, 32, &inp, 40, &Default::default()).expect("runs");
    let col = |i: usize| r.out[i * 32];
    assert_eq!(col(0), inp[0]);
    assert_eq!(col(3), inp[3]);
    assert_eq!((col(4), col(5)), (inp[2], inp[3]));
    assert_eq!(col(6), 0x80, "u8 zero-extends");
    assert_eq!(col(7), 0xFFFF_FF80, "s8 sign-extends");
    assert_eq!(col(8), 0xFFFF_8081, "s16 sign-extends");
    assert_eq!((col(9), col(10)), (inp[2], inp[3]));
    assert_eq!(col(11), inp[1]);
    // Stores at out + 4096 bytes = word 1024.
    assert_eq!(&r.out[1024..1028], &[inp[3], inp[2], inp[1], inp[0]]);
    assert_eq!(r.out[1028], (POISON & 0xFFFF_00FF) | (0x80 << 8));
    assert_eq!(r.out[1029], (POISON & 0x0000_FFFF) | (0x8081 << 16));
    assert_eq!(&r.out[1030..1032], &[inp[1], inp[1]]);
}

#[test]
fn shared_local_param_and_generic_memory() {
    let decls = "    .shared .align 16 .b8 tile[512];\n    .local .align 8 .b8 scratch[16];";
    let body = own_word("tile")
        + "
    mul.lo.u32 %r4, %r0, 3;
    st.shared.u32 [%r3], %r4;
    bar.sync 0;
    xor.b32 %r5, %r0, 1;
    shl.b32 %r5, %r5, 2;
    add.u32 %r6, %r2, %r5;
    ld.shared.u32 %r7, [%r6];
    mov.u64 %rd10, tile;
    cvta.shared.u64 %rd11, %rd10;
    cvt.u64.u32 %rd12, %r1;
    add.s64 %rd13, %rd11, %rd12;
    ld.u32 %r8, [%rd13];
    mov.u64 %rd14, scratch;
    st.local.u32 [%rd14+4], %r0;
    st.local.u32 [scratch], 99;
    ld.local.u32 %r9, [%rd14+4];
    ld.local.u32 %r10, [scratch];
    cvta.local.u64 %rd15, %rd14;
    ld.u32 %r11, [%rd15+4];
    ld.param.u32 %r12, [p_in];
";
    let mut b = body;
    for (i, r) in ["%r7", "%r8", "%r9", "%r10", "%r11", "%r12"]
        .iter()
        .enumerate()
    {
        b += &store(i, 64, r);
    }
    let out = run_n(decls, &b, 64, &[0], 6);
    for l in 0..64u32 {
        let li = l as usize;
        assert_eq!(out[0][li], (l ^ 1) * 3);
        assert_eq!(out[1][li], l * 3);
        assert_eq!(out[2][li], l);
        assert_eq!(out[3][li], 99);
        assert_eq!(out[4][li], l);
    }
    // The low word of the `in` buffer's device address.
    assert!(out[5].iter().all(|&v| v == out[5][0]));
}

#[test]
fn special_registers_in_3d() {
    let body = "
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    mov.u32 %r3, %tid.z;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %ctaid.x;
    mov.u32 %r6, %ctaid.y;
    mov.u32 %r7, %nctaid.y;
    mov.u32 %r8, %laneid;
    mov.u32 %r9, %warpid;
    mov.u32 %r10, %ntid.y;
    // linear thread = x + y*4 + z*4*8 ; linear cta = cx + cy*2
    mad.lo.u32 %r11, %r2, 4, %r1;
    mad.lo.u32 %r11, %r3, 32, %r11;
    mad.lo.u32 %r12, %r6, 2, %r5;
    mad.lo.u32 %r13, %r12, 64, %r11;
    mul.wide.u32 %rd10, %r13, 48;
    add.s64 %rd11, %rd1, %rd10;
    st.global.v4.u32 [%rd11], {%r1, %r2, %r3, %r4};
    st.global.v4.u32 [%rd11+16], {%r5, %r6, %r7, %r8};
    st.global.v2.u32 [%rd11+32], {%r9, %r10};
";
    let ptx = kernel("", body);
    let r = run_grid(
        &ptx,
        [2, 3, 1],
        [4, 8, 2],
        &[0],
        6 * 64 * 12,
        &Default::default(),
    )
    .expect("runs");
    for cy in 0..3u32 {
        for cx in 0..2u32 {
            for z in 0..2u32 {
                for y in 0..8u32 {
                    for x in 0..4u32 {
                        let t = x + y * 4 + z * 32;
                        let i = ((cx + cy * 2) * 64 + t) as usize * 12;
                        assert_eq!(
                            &r.out[i..i + 10],
                            &[x, y, z, 4, cx, cy, 3, t % 32, t / 32, 8]
                        );
                    }
                }
            }
        }
    }
    assert_eq!(r.stats.ctas, 6);
}

#[test]
fn atomics_across_ctas_and_in_shared() {
    let decls = "    .shared .align 4 .b8 counter[4];";
    let body = "
    setp.eq.u32 %p1, %r0, 0;
    @%p1 st.shared.u32 [counter], 0;
    bar.sync 0;
    atom.shared.add.u32 %r1, [counter], 1;
    atom.global.add.u32 %r2, [%rd2], 1;
    atom.global.max.s32 %r3, [%rd2+4], %r0;
    atom.global.add.f32 %f1, [%rd2+8], 0f3F800000;
    red.global.add.u64 [%rd2+16], 2;
    bar.sync 0;
    ld.shared.u32 %r4, [counter];
    mov.u32 %r5, %ctaid.x;
    setp.eq.u32 %p2, %r5, 0;
    and.pred %p3, %p1, %p2;
    @%p3 atom.global.cas.b32 %r6, [%rd2+12], 0, 77;
    st.global.u32 [%rd4], %r4;
";
    let ptx = kernel(decls, body);
    let module = phobos_sim::Module::parse(&ptx).expect("parses");
    let mut dev = phobos_sim::Device::new();
    let out = dev.alloc("out", 64 * 4).expect("alloc");
    let inp = dev.alloc("in", 24).expect("alloc");
    let opts = phobos_sim::LaunchOptions {
        threads: 2,
        ..Default::default()
    };
    let args = [
        phobos_sim::KernelArg::Buffer(out),
        phobos_sim::KernelArg::Buffer(inp),
    ];
    let stats = dev
        .launch(
            Launch::new(&module, "k", [8, 1, 1], [64, 1, 1]),
            &args,
            &opts,
            None,
        )
        .expect("runs");
    let w = bytes_to_words(&dev.to_vec(inp).expect("read"));
    assert_eq!(w[0], 8 * 64, "every thread of every CTA added 1");
    assert_eq!(w[1], 63);
    assert_eq!(f32::from_bits(w[2]), 512.0);
    assert_eq!(w[3], 77);
    assert_eq!(u64::from(w[4]) | (u64::from(w[5]) << 32), 2 * 512);
    let o = bytes_to_words(&dev.to_vec(out).expect("read"));
    assert!(o.iter().all(|&c| c == 64), "shared counter per CTA: {o:?}");
    assert_eq!(stats.written, vec![out, inp]);
}

#[test]
fn half_float_atomics_and_the_flush_of_global_f32_adds() {
    // Each of 64 threads of 4 CTAs adds 1.0 (f16 0x3C00, bf16 0x3F80) to a
    // global f16 in the low half of word 0 and a bf16 in the high half of
    // word 1, and to a shared f16; word 2 gets a subnormal f32 added: the
    // global add flushes it, the shared one keeps it.
    let decls = "    .shared .align 4 .b8 acc[8];";
    let body = "
    setp.eq.u32 %p1, %r0, 0;
    @%p1 st.shared.u32 [acc], 0;
    @%p1 st.shared.u32 [acc+4], 0;
    bar.sync 0;
    mov.b16 %h1, 0x3C00;
    mov.b16 %h2, 0x3F80;
    atom.global.add.noftz.f16 %h3, [%rd2], %h1;
    red.global.add.noftz.bf16 [%rd2+6], %h2;
    atom.shared.add.noftz.f16 %h4, [acc+2], %h1;
    mov.f32 %f1, 0f00000001;
    @%p1 red.global.add.f32 [%rd2+8], %f1;
    @%p1 red.shared.add.f32 [acc+4], %f1;
    bar.sync 0;
    ld.shared.u32 %r4, [acc];
    ld.shared.u32 %r5, [acc+4];
    st.global.u32 [%rd4], %r4;
    st.global.u32 [%rd4+256], %r5;
";
    let ptx = kernel(decls, body);
    let module = phobos_sim::Module::parse(&ptx).expect("parses");
    let mut dev = phobos_sim::Device::new();
    let out = dev.alloc("out", 2 * 64 * 4).expect("alloc");
    let inp = dev.alloc("in", 12).expect("alloc");
    let args = [
        phobos_sim::KernelArg::Buffer(out),
        phobos_sim::KernelArg::Buffer(inp),
    ];
    dev.launch(
        Launch::new(&module, "k", [4, 1, 1], [64, 1, 1]),
        &args,
        &Default::default(),
        None,
    )
    .expect("runs");
    let w = bytes_to_words(&dev.to_vec(inp).expect("read"));
    // 256 in f16 is 0x5C00; in bf16 0x4380. The other halves stay 0.
    assert_eq!(w[0], 0x5C00, "f16 sum in the low half of word 0");
    assert_eq!(w[1], 0x4380 << 16, "bf16 sum in the high half of word 1");
    assert_eq!(w[2], 0, "a global f32 add flushes a subnormal to zero");
    let o = bytes_to_words(&dev.to_vec(out).expect("read"));
    assert_eq!(
        o[0],
        0x5400 << 16,
        "64 adds of 1.0 in a shared f16 (high half)"
    );
    assert_eq!(o[64], 1, "a shared f32 add keeps the subnormal");
    // An f16 atom without `.noftz`, or an f16 min, is not PTX.
    for bad in [
        "atom.global.add.f16 %h3, [%rd2], %h1;",
        "atom.global.min.noftz.f16 %h3, [%rd2], %h1;",
    ] {
        let err = phobos_sim::Module::parse(&kernel("", bad)).expect_err(bad);
        assert!(err.to_string().contains("unsupported"), "{err}");
    }
}

#[test]
fn divergent_loops_and_nested_branches() {
    // Each lane loops lane+1 times; odd lanes take an inner branch.
    let body = "
    mov.u32 %r1, 0;
    mov.u32 %r2, 0;
$loop:
    and.b32 %r3, %r0, 1;
    setp.eq.u32 %p1, %r3, 0;
    @%p1 bra $even;
    add.u32 %r2, %r2, 10;
    bra.uni $join;
$even:
    add.u32 %r2, %r2, 1;
$join:
    add.u32 %r1, %r1, 1;
    setp.le.u32 %p2, %r1, %r0;
    @%p2 bra $loop;
";
    let b = format!("{body}{}", store(0, 32, "%r2"));
    let out = run32(&b, &[0], 1);
    for l in 0..32u32 {
        let per = if l % 2 == 1 { 10 } else { 1 };
        assert_eq!(out[0][l as usize], (l + 1) * per);
    }
}

#[test]
fn partial_warps_and_multiple_ctas() {
    let body = "
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mad.lo.u32 %r3, %r1, %r2, %r0;
    mul.wide.u32 %rd10, %r3, 4;
    add.s64 %rd11, %rd1, %rd10;
    st.global.u32 [%rd11], %r3;
";
    let ptx = kernel("", body);
    let r = run_grid(
        &ptx,
        [5, 1, 1],
        [48, 1, 1],
        &[0],
        5 * 48,
        &Default::default(),
    )
    .expect("runs");
    assert_eq!(r.out, (0..240).collect::<Vec<u32>>());
    assert_eq!(r.stats.ctas, 5);
}
