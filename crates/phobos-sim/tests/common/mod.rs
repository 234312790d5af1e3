//! Helpers for the simulator's tests: wrap an instruction snippet in a
//! kernel, run it, and read back what each thread stored.
#![allow(dead_code)]

use phobos_sim::{
    CheckReport, Device, KernelArg, Launch, LaunchOptions, LaunchStats, Module, SimError,
};

/// Value stored in output buffers before a run, so unwritten slots show.
pub const POISON: u32 = 0xDEAD_BEEF;

/// A kernel `k(out, in)` whose body runs `body` with these registers set:
/// `%r0` = linear thread index, `%rd4` = `&out[%r0]`, `%rd5` = `&in[%r0]`
/// (both u32 arrays), `%rd1`/`%rd2` = `out`/`in`. Result `i` of a thread goes
/// to `[%rd4 + 4 * threads * i]`; use [`out_stride`] to format offsets.
pub fn kernel(decls: &str, body: &str) -> String {
    format!(
        r#".version 7.5
.target sm_75
.address_size 64
.file 1 "t.pho"
.visible .entry k(.param .u64 p_out, .param .u64 p_in)
{{
    .reg .pred %p<16>;
    .reg .b16 %h<16>;
    .reg .b32 %r<64>;
    .reg .f32 %f<32>;
    .reg .b64 %rd<32>;
    .reg .f64 %fd<16>;
{decls}
    .loc 1 1 1
    ld.param.u64 %rd1, [p_out];
    ld.param.u64 %rd2, [p_in];
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd3, %r0, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
{body}
    ret;
}}
"#
    )
}

/// PTX that sets `%r1` to 4 * `%r0` (the thread's byte offset), `%r2` to the
/// address of the shared array `array`, and `%r3` to the thread's own word
/// of it, `&array[%r0]`.
pub fn own_word(array: &str) -> String {
    format!("    shl.b32 %r1, %r0, 2;\n    mov.u32 %r2, {array};\n    add.u32 %r3, %r2, %r1;\n")
}

pub struct Run {
    pub out: Vec<u32>,
    pub stats: LaunchStats,
}

/// Runs `ptx` entry `k` on one CTA of `threads` threads with `input` and an
/// output of `threads * n_out` words.
pub fn run_with(
    ptx: &str,
    threads: u32,
    input: &[u32],
    n_out: usize,
    opts: &LaunchOptions,
) -> Result<Run, SimError> {
    run_grid(
        ptx,
        [1, 1, 1],
        [threads, 1, 1],
        input,
        threads as usize * n_out,
        opts,
    )
}

pub fn run_grid(
    ptx: &str,
    grid: [u32; 3],
    block: [u32; 3],
    input: &[u32],
    out_words: usize,
    opts: &LaunchOptions,
) -> Result<Run, SimError> {
    let module = Module::parse(ptx)?;
    let mut dev = Device::new();
    let out = dev.alloc_from("out", &words_to_bytes(&vec![POISON; out_words]))?;
    let inp = dev.alloc_from("in", &words_to_bytes(input))?;
    let stats = dev.launch(
        Launch::new(&module, "k", grid, block),
        &[KernelArg::Buffer(out), KernelArg::Buffer(inp)],
        opts,
        None,
    )?;
    Ok(Run {
        out: bytes_to_words(&dev.to_vec(out)?),
        stats,
    })
}

/// Runs a snippet on 32 threads and returns, per result index, 32 words.
pub fn run32(body: &str, input: &[u32], n_out: usize) -> Vec<Vec<u32>> {
    run_n("", body, 32, input, n_out)
}

pub fn run_n(decls: &str, body: &str, threads: u32, input: &[u32], n_out: usize) -> Vec<Vec<u32>> {
    let ptx = kernel(decls, body);
    let r = match run_with(&ptx, threads, input, n_out, &LaunchOptions::default()) {
        Ok(r) => r,
        Err(e) => panic!("launch failed: {e}\n{ptx}"),
    };
    r.out.chunks(threads as usize).map(|c| c.to_vec()).collect()
}

/// Runs `body` on 32 threads with `input`, then stores `regs`: result `i`
/// of each lane is its value of `regs[i]`.
pub fn run32_regs(body: &str, regs: &[&str], input: &[u32]) -> Vec<Vec<u32>> {
    let mut b = body.to_string();
    for (i, r) in regs.iter().enumerate() {
        b += &store(i, 32, r);
    }
    run32(&b, input, regs.len())
}

/// Asserts that result `i` of lane `lane` is `want[i]`, naming the result
/// `names[i]` in the message.
pub fn assert_lane(out: &[Vec<u32>], lane: usize, want: &[u32], names: &[&str]) {
    for (i, w) in want.iter().enumerate() {
        assert_eq!(out[i][lane], *w, "{} lane {lane}", names[i]);
    }
}

/// Runs a snippet expecting a check failure; returns the error.
pub fn fail32(decls: &str, body: &str, threads: u32, input: &[u32]) -> SimError {
    let ptx = kernel(decls, body);
    match run_with(&ptx, threads, input, 1, &LaunchOptions::default()) {
        Ok(_) => panic!("the launch should have failed\n{ptx}"),
        Err(e) => e,
    }
}

/// The check report `e` carries ([`SimError::report`]); panics on any
/// other error.
pub fn check_report(e: &SimError) -> &CheckReport {
    e.report()
        .unwrap_or_else(|| panic!("expected a check report, got: {e}"))
}

/// `st.global.u32 [%rd4+OFF], REG;` for result `i` with `threads` threads.
pub fn store(i: usize, threads: usize, reg: &str) -> String {
    format!("    st.global.u32 [%rd4+{}], {reg};\n", i * threads * 4)
}

pub fn words_to_bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn bytes_to_words(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn f(x: f32) -> u32 {
    x.to_bits()
}
