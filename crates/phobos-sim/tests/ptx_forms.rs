//! PTX forms that producers other than Phobos write (Triton's LLVM
//! backend, `nvcc -lineinfo`): DWARF `.section`s, `.loc` with
//! `function_name` and `inlined_at`, every literal form ptxas takes (and a
//! clear refusal of those it does not), and braced one-register vectors.

mod common;
use common::*;
use phobos_sim::{LaunchOptions, Module, SimError};

/// A kernel around `body` with DWARF sections after it, as Triton writes
/// them (labels, `.b8`/`.b32`/`.b64` data, comments, nested `{}`).
fn with_sections(body: &str) -> String {
    kernel("", body)
        + r#"
	.section	.debug_abbrev
	{
.b8 1                                   // Abbreviation Code
.b8 17                                  // DW_TAG_compile_unit
	}
	.section	.debug_info
	{
.b32 226                                // Length of Unit
.b32 .debug_abbrev                      // Offset Into Abbrev. Section
.b64 $L__func_begin0                    // DW_AT_low_pc
	}
	.section	.debug_str
	{
$L__info_string0:
.b8 107                                 // string offset=0 ; k
.b8 0
	}
	.section	.debug_macinfo	{	}
"#
}

#[test]
fn debug_sections_are_skipped() {
    let ptx = with_sections(&store(0, 32, "%r0"));
    let r = run_with(&ptx, 32, &[0], 1, &LaunchOptions::default()).expect("runs");
    assert_eq!(r.out, (0..32).collect::<Vec<u32>>());
}

#[test]
fn an_unterminated_section_is_an_error() {
    let ptx = kernel("", "") + "\n.section .debug_info\n{\n.b32 1\n";
    let e = Module::parse(&ptx).unwrap_err();
    assert!(e.to_string().contains("unterminated `.section`"), "{e}");
    let e = Module::parse(&(kernel("", "") + "\n.section .debug_info .b32 1\n")).unwrap_err();
    assert!(e.to_string().contains("expected `{`"), "{e}");
}

#[test]
fn inlined_code_is_reported_with_its_call_sites() {
    // Triton's `tl.sum` (standard.py) inlined into the kernel at line 60.
    let body = r#"
    .file 2 "standard.py"
    .loc 1 60 31
    mov.u32 %r1, 0;
    .loc 2 216 16, function_name $L__info_string0, inlined_at 1 60 31
    mov.u32 %r2, 0;
    .loc 2 196 12, function_name $L__info_string0+4, inlined_at 2 216 16
    ld.global.u32 %r1, [%rd5];
    .loc 1 61 5
    st.global.u32 [%rd4], %r1;
"#;
    let err = run_with(
        &kernel("", body),
        64,
        &[1; 40],
        1,
        &LaunchOptions::default(),
    )
    .map(|_| ())
    .unwrap_err();
    let r = check_report(&err);
    let src = r.source.clone().expect("a source position");
    assert_eq!(
        (src.file.as_str(), src.line, src.col),
        ("standard.py", 196, 12)
    );
    assert_eq!(
        r.notes.first().map(String::as_str),
        Some("inlined at standard.py:216:16, t.pho:60:31"),
        "{err}"
    );
}

#[test]
fn code_that_was_not_inlined_has_no_call_sites() {
    let body = "    .loc 1 2 3, function_name $L__info_string0\n    ld.global.u32 %r1, [%rd5];\n";
    let err = run_with(
        &kernel("", body),
        64,
        &[1; 40],
        1,
        &LaunchOptions::default(),
    )
    .map(|_| ())
    .unwrap_err();
    let r = check_report(&err);
    assert!(
        r.notes.iter().all(|n| !n.starts_with("inlined at")),
        "{err}"
    );
}

#[test]
fn a_loc_with_an_unknown_attribute_is_an_error() {
    let body = "    .loc 1 2 3, discriminator 4\n    ret;\n";
    let e = Module::parse(&kernel("", body)).unwrap_err();
    assert!(
        e.to_string()
            .contains("unexpected `discriminator` in `.loc`"),
        "{e}"
    );
}

/// The bits `%r1` (and `%r2`) hold after `body`, for one lane.
fn bits(body: &str, regs: &[&str]) -> Vec<u32> {
    run32_regs(body, regs, &[0]).iter().map(|r| r[0]).collect()
}

#[test]
fn float_literals_follow_the_ptx_isa() {
    let one = 1f32.to_bits();
    // `0f` is an exact f32: the bits of a .b32, converted for .f32/.f64.
    assert_eq!(bits("    mov.b32 %r1, 0f3F800000;\n", &["%r1"]), [one]);
    assert_eq!(
        bits("    mov.b32 %r1, 0fFF800000;\n", &["%r1"]),
        [0xFF80_0000]
    );
    assert_eq!(
        bits(
            "    mov.f32 %f1, 0F3F800000;\n    mov.b32 %r1, %f1;\n",
            &["%r1"]
        ),
        [one]
    );
    let lo_hi = |x: f64| [x.to_bits() as u32, (x.to_bits() >> 32) as u32];
    assert_eq!(
        bits(
            "    mov.f64 %fd1, 0f3FC00000;\n    mov.b64 {%r1, %r2}, %fd1;\n",
            &["%r1", "%r2"]
        ),
        lo_hi(1.5)
    );
    // `0d` and decimal floats are f64: rounded for .f32, bits of a .b64,
    // and they may be negated.
    for (lit, want) in [
        ("0d3FF8000000000000", 1.5f32),
        ("-1.5", -1.5),
        (".5", 0.5),
        ("5.", 5.0),
        ("1.0E+3", 1000.0),
        ("25e-1", 2.5),
        ("0d3FB999999999999A", 0.1),
    ] {
        let body = format!("    mov.f32 %f1, {lit};\n    mov.b32 %r1, %f1;\n");
        assert_eq!(bits(&body, &["%r1"]), [want.to_bits()], "{lit}");
    }
    assert_eq!(
        bits(
            "    mov.b64 %rd6, -0d3FF0000000000000;\n    mov.b64 {%r1, %r2}, %rd6;\n",
            &["%r1", "%r2"]
        ),
        lo_hi(-1.0)
    );
    assert_eq!(
        bits(
            "    mov.b64 %rd6, 2.5;\n    mov.b64 {%r1, %r2}, %rd6;\n",
            &["%r1", "%r2"]
        ),
        lo_hi(2.5)
    );
    // Integers: any width of bits, wrapping to the type.
    assert_eq!(bits("    mov.b32 %r1, 4294967297;\n", &["%r1"]), [1]);
    assert_eq!(bits("    mov.u32 %r1, -1;\n", &["%r1"]), [u32::MAX]);
    let body = "    setp.eq.u32 %p0, %r0, %r0;\n    selp.b32 %r1, 0f3F800000, 0, %p0;\n";
    assert_eq!(bits(body, &["%r1"]), [one]);
}

/// The parse error of a kernel whose body is `inst`, which must name the
/// instruction's line.
fn refused(inst: &str) -> String {
    let ptx = kernel("", &format!("    {inst}\n"));
    let line = ptx
        .lines()
        .position(|l| l.contains(inst))
        .expect("the line")
        + 1;
    match Module::parse(&ptx) {
        Err(e @ SimError::Parse { .. }) => {
            let e = e.to_string();
            assert!(e.contains(&format!("line {line}")), "`{inst}`: {e}");
            e
        }
        other => panic!("`{inst}` should be refused, got {other:?}"),
    }
}

#[test]
fn literals_ptxas_refuses_are_refused() {
    // Each of these is "Arguments mismatch" (or a syntax error) in ptxas 12.9.
    for (inst, says) in [
        ("mov.f32 %f1, 1;", "integer literal `1` for a .f32 operand"),
        (
            "add.f32 %f1, %f1, 2;",
            "integer literal `2` for a .f32 operand",
        ),
        ("mov.f64 %fd1, 1;", "integer literal `1` for a .f64 operand"),
        (
            "setp.lt.f32 %p1, %f1, 0;",
            "integer literal `0` for a .f32 operand",
        ),
        (
            "mov.u32 %r1, 0f3F800000;",
            "float literal `0f3F800000` for a .u32 operand",
        ),
        ("add.s32 %r1, %r1, 0f3F800000;", "for a .s32 operand"),
        ("mov.b32 %r1, 1.5;", "f64 literal `1.5` for a .b32 operand"),
        ("mov.b32 %r1, 0d3FF0000000000000;", "for a .b32 operand"),
        (
            "mov.b64 %rd1, 0f3F800000;",
            "`0f` literal `0f3F800000` for a .b64 operand",
        ),
        ("mov.u64 %rd1, 0d3FF0000000000000;", "for a .u64 operand"),
        ("mov.b16 %h1, 0f3F800000;", "for a .b16 operand"),
        (
            "mov.b32 %r1, -0f3F800000;",
            "a `0f` literal cannot be negated",
        ),
    ] {
        let e = refused(inst);
        assert!(e.contains(says), "`{inst}`: {e}");
    }
    // Malformed hex floats are no numbers at all.
    assert!(refused("mov.b32 %r1, 0f3F80000;").contains("bad literal `0f3F80000`"));
}

#[test]
fn braced_single_registers_are_plain_operands() {
    // Triton's inline `ld`/`st`: `{ %r1 }` with no `.v` modifier.
    let body = "    setp.eq.u32 %p0, %r0, %r0;\n    @%p0 ld.global.b32 { %r1 }, [ %rd5 + 0 ];\n    add.u32 %r1, %r1, 1;\n    st.global.b32 [ %rd4 + 0 ], { %r1 };\n    mov.b32 { %r2 }, %r1;\n    mov.b32 %r3, { %r2 };\n    st.global.b32 [ %rd4 + 128 ], %r3;\n";
    let input: Vec<u32> = (0..32).map(|i| i * 3).collect();
    let out = run32(body, &input, 2);
    for l in 0..32 {
        assert_eq!(out[0][l], input[l] + 1);
        assert_eq!(out[1][l], input[l] + 1);
    }
}

#[test]
fn a_vector_of_the_wrong_size_is_refused() {
    let e = Module::parse(&kernel("", "    ld.global.v2.b32 {%r1}, [%rd5];\n")).unwrap_err();
    assert!(e.to_string().contains("needs 2 destinations"), "{e}");
    let e = Module::parse(&kernel("", "    st.global.b32 [%rd4], {%r1, %r2};\n")).unwrap_err();
    assert!(e.to_string().contains("needs 1 sources"), "{e}");
}

#[test]
fn cvt_packs_two_f32_into_a_half_pair() {
    // The first source goes to the upper half (PTX ISA, `cvt`); Triton
    // writes this when it narrows an f32 tile to f16 for `tl.dot`.
    let body = "    cvt.rn.f16x2.f32 %r1, 0f3F800000, 0f40000000;
    cvt.rn.bf16x2.f32 %r2, 0fC0400000, 0f3F800000;
    cvt.rn.f16x2.f32 %r3, 0f3F801000, 0f3F803000;
    cvt.rz.f16x2.f32 %r4, 0f3F801000, 0f3F803000;
";
    let got = bits(body, &["%r1", "%r2", "%r3", "%r4"]);
    let f16 = |x: f32| u32::from(half::f16::from_f32(x).to_bits());
    let bf16 = |x: f32| u32::from(half::bf16::from_f32(x).to_bits());
    assert_eq!(got[0], f16(1.0) << 16 | f16(2.0));
    assert_eq!(got[1], bf16(-3.0) << 16 | bf16(1.0));
    // 1 + 2^-11 is a tie (to even: 1.0); 1 + 3·2^-11 rounds up to 1 + 2^-9
    // with .rn and down to 1 + 2^-10 with .rz.
    assert_eq!(got[2], 0x3C00 << 16 | 0x3C02);
    assert_eq!(got[3], 0x3C00 << 16 | 0x3C01);
    let e = Module::parse(&kernel("", "    cvt.rn.relu.f16x2.f32 %r1, %f1, %f2;\n")).unwrap_err();
    assert!(
        e.to_string()
            .contains("unsupported instruction cvt.rn.relu.f16x2.f32"),
        "{e}"
    );
    let e = Module::parse(&kernel("", "    cvt.rn.f16x2.f32 %r1, %f1;\n")).unwrap_err();
    assert!(e.to_string().contains("takes 3 operands"), "{e}");
}

#[test]
fn unused_global_variables_are_accepted_and_used_ones_refused() {
    // libdevice's strings in Triton's PTX: declared, never used.
    let globals = ".global .align 1 .b8 _$_str[11] = {95, 95, 67, 85, 68, 65, 95, 70, 84, 90};
.global .align 4 .b32 counter;
.global .align 4 .u32 table[2] = {{1}, {2}};
";
    let ptx = kernel("", &store(0, 32, "%r0")).replacen(".file", &format!("{globals}.file"), 1);
    let r = run_with(&ptx, 32, &[0], 1, &LaunchOptions::default()).expect("runs");
    assert_eq!(r.out, (0..32).collect::<Vec<u32>>());
    let used =
        kernel("", "    mov.u64 %rd6, _$_str;\n").replacen(".file", &format!("{globals}.file"), 1);
    let e = Module::parse(&used).unwrap_err();
    assert!(
        e.to_string()
            .contains("unsupported instruction .global variable _$_str"),
        "{e}"
    );
    let used = kernel("", "    ld.global.u32 %r1, [counter];\n").replacen(
        ".file",
        &format!("{globals}.file"),
        1,
    );
    let e = Module::parse(&used).unwrap_err();
    assert!(e.to_string().contains(".global variable counter"), "{e}");
    let bad = kernel("", "").replacen(".file", ".global .b32 x = {1, 2;\n.file", 1);
    assert!(Module::parse(&bad).is_err());
}

#[test]
fn shared_cta_is_the_ctas_shared_memory() {
    // `st.shared::cta` (Triton's scans) and `ld.shared::cta` name the same
    // bytes as `.shared`; `.shared::cluster` is not supported.
    let decls = "    .shared .align 4 .b8 tile[128];";
    let body = own_word("tile")
        + "    st.shared::cta.b32 [%r3], %r0;
    bar.sync 0;
    xor.b32 %r4, %r1, 4;
    add.u32 %r5, %r2, %r4;
    ld.shared.u32 %r6, [%r5];
    ld.shared::cta.u32 %r7, [%r3];
    add.u32 %r6, %r6, %r7;
";
    let out = run_n(decls, &(body + &store(0, 32, "%r6")), 32, &[0], 1);
    for l in 0..32u32 {
        assert_eq!(out[0][l as usize], (l ^ 1) + l);
    }
    let e = Module::parse(&kernel(decls, "    st.shared::cluster.b32 [%r3], %r0;\n")).unwrap_err();
    assert!(
        e.to_string()
            .contains("unsupported instruction st.shared::cluster.b32"),
        "{e}"
    );
}

#[test]
fn atomics_take_memory_orders() {
    // Triton's `tl.atomic_add` is `atom.global.gpu.acq_rel.add`; the
    // simulator's memory is sequentially consistent, which every order
    // allows.
    for sem in ["acq_rel", "acquire", "release", "relaxed"] {
        let body = format!(
            "    atom.global.gpu.{sem}.add.u32 %r1, [%rd2], 1;\n    bar.sync 0;\n    ld.global.u32 %r2, [%rd2];\n"
        );
        let out = run32_regs(&body, &["%r2"], &[0]);
        assert!(out[0].iter().all(|&v| v == 32), "{sem}: {:?}", out[0]);
    }
}
