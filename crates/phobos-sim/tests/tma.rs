//! mbarriers, bulk tensor copies (TMA) and the async-proxy checks, on
//! hand-written PTX: the copy's box, zero fill and swizzle element by
//! element (the swizzle written out here from the PTX ISA's tables, not
//! taken from the simulator), phases and parity, the yield of failed
//! waits, and one planted bug per check.

mod common;

use common::check_report;
use phobos_sim::tensor_map::{Swizzle, TensorMap, TensorMapType};
use phobos_sim::{
    CheckKind, CheckReport, Device, KernelArg, Launch, LaunchOptions, Module, SimError,
};

/// Global tensor: `H` rows of `W` u16 elements, rows `STRIDE` bytes apart;
/// element (x, y) holds `y * 1000 + x + 1` (never 0, so zero fill shows).
const W: u64 = 100;
const H: u64 = 70;
const STRIDE: u64 = 208;

fn tensor() -> Vec<u8> {
    let mut b = vec![0u8; (STRIDE * H) as usize];
    for y in 0..H {
        for x in 0..W {
            let v = (y * 1000 + x + 1) as u16;
            let o = (y * STRIDE + 2 * x) as usize;
            b[o..o + 2].copy_from_slice(&v.to_le_bytes());
        }
    }
    b
}

fn map(address: u64, box_x: u32, box_y: u32, swizzle: Swizzle) -> Vec<u8> {
    TensorMap {
        data_type: TensorMapType::U16,
        rank: 2,
        address,
        dims: [W, H, 1, 1, 1],
        strides: [STRIDE, 0, 0, 0],
        box_dims: [box_x, box_y, 1, 1, 1],
        element_strides: [1; 5],
        swizzle,
        l2_promotion: 0,
    }
    .encode()
    .expect("a valid map")
    .to_vec()
}

/// A kernel with a tensor map, an output pointer and two coordinates:
/// `pre` runs first (all threads), thread `producer` initializes the
/// barrier (count 1), all sync, the producer arrives with expect_tx and
/// issues the copy, `wait` follows, then every thread copies the tile's
/// raw shared words to `out`.
fn tile_kernel(bytes: u32, producer: u32, pre: &str, wait: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 p_map[128], .param .u64 p_out, .param .s32 p_x, .param .s32 p_y)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<20>;
  .shared .align 1024 .b8 tile[{bytes}];
  .shared .align 8 .b64 bar;
  mov.u32 %r1, %tid.x;
  mov.u32 %r9, %ntid.x;
  ld.param.u64 %rd5, [p_out];
{pre}
  setp.ne.u32 %p1, %r1, {producer};
  @%p1 bra $sync;
  mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
$sync:
  bar.sync 0;
  @%p1 bra $wait;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], {bytes};
  mov.b64 %rd1, p_map;
  cvta.param.u64 %rd2, %rd1;
  ld.param.s32 %r2, [p_x];
  ld.param.s32 %r3, [p_y];
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [tile], [%rd2, {{%r2, %r3}}], [bar];
$wait:
{wait}
  mov.u32 %r4, %r1;
$copy:
  setp.ge.u32 %p3, %r4, {words};
  @%p3 bra $done;
  shl.b32 %r5, %r4, 2;
  mov.u32 %r6, tile;
  add.u32 %r6, %r6, %r5;
  ld.shared.u32 %r7, [%r6];
  cvt.u64.u32 %rd3, %r5;
  add.u64 %rd4, %rd5, %rd3;
  st.global.u32 [%rd4], %r7;
  add.u32 %r4, %r4, %r9;
  bra $copy;
$done:
  ret;
}}
"#,
        words = bytes / 4
    )
}

/// The usual wait: spin on try_wait.parity 0.
const WAIT: &str = "
$spin:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra $spin;";

struct Run {
    module: Module,
    dev: Device,
    args: Vec<KernelArg>,
    t: phobos_sim::BufferId,
    out: phobos_sim::BufferId,
}

fn setup(ptx: &str, box_x: u32, box_y: u32, sw: Swizzle, xy: (i32, i32)) -> Run {
    let module = Module::parse(ptx).expect("parses");
    let mut dev = Device::new();
    let t = dev.alloc_from("t", &tensor()).unwrap();
    let out = dev
        .alloc_from("out", &vec![0xEEu8; (box_x * box_y * 2) as usize])
        .unwrap();
    let base = dev.address(t).unwrap();
    let args = vec![
        KernelArg::Bytes(map(base, box_x, box_y, sw)),
        KernelArg::Buffer(out),
        KernelArg::I32(xy.0),
        KernelArg::I32(xy.1),
    ];
    Run {
        module,
        dev,
        args,
        t,
        out,
    }
}

fn launch(r: &Run, threads: u32) -> Result<Vec<u8>, SimError> {
    r.dev.launch(
        Launch::new(&r.module, "k", [1, 1, 1], [threads, 1, 1]),
        &r.args,
        &LaunchOptions::default(),
        None,
    )?;
    Ok(r.dev.to_vec(r.out).unwrap())
}

/// The byte offset where the PTX ISA's swizzle puts the 16-byte chunk of
/// unswizzled offset `o` (tile at offset 0): chunk bits 4.. XOR row bits 7..
fn swizzled(sw: Swizzle, o: u32) -> u32 {
    let bits = match sw {
        Swizzle::None => 0,
        Swizzle::B32 => 1,
        Swizzle::B64 => 2,
        Swizzle::B128 => 3,
    };
    let row = (o >> 7) & ((1 << bits) - 1);
    o ^ (row << 4)
}

/// Checks every element of the box at `(x0, y0)` in the raw tile bytes.
fn check_tile(raw: &[u8], box_x: u32, box_y: u32, sw: Swizzle, (x0, y0): (i32, i32)) {
    for j in 0..box_y {
        for i in 0..box_x {
            let (x, y) = (x0 + i as i32, y0 + j as i32);
            let want = if (0..W as i32).contains(&x) && (0..H as i32).contains(&y) {
                (y * 1000 + x + 1) as u16
            } else {
                0
            };
            let o = swizzled(sw, 2 * (j * box_x + i)) as usize;
            let got = u16::from_le_bytes([raw[o], raw[o + 1]]);
            assert_eq!(got, want, "{sw:?} element ({i}, {j}) = tensor ({x}, {y})");
        }
    }
}

#[test]
fn a_ragged_box_is_zero_filled_in_every_swizzle_mode() {
    for (sw, bx, by) in [
        (Swizzle::None, 48, 20),
        (Swizzle::B32, 16, 24),
        (Swizzle::B64, 32, 24),
        (Swizzle::B128, 64, 24),
    ] {
        // Over the right and bottom edges, over the left and top edges,
        // and inside.
        for xy in [(80, 60), (-8, -3), (8, 10)] {
            let bytes = bx * by * 2;
            let r = setup(&tile_kernel(bytes, 0, "", WAIT), bx, by, sw, xy);
            let raw = launch(&r, 64).unwrap_or_else(|e| panic!("{sw:?} {xy:?}: {e}"));
            check_tile(&raw, bx, by, sw, xy);
        }
    }
}

#[test]
fn a_box_entirely_outside_is_all_zeros_and_still_completes() {
    let r = setup(
        &tile_kernel(2048, 0, "", WAIT),
        64,
        16,
        Swizzle::B128,
        (200, -40),
    );
    let raw = launch(&r, 32).unwrap();
    assert!(raw.iter().all(|&b| b == 0));
}

#[test]
fn consumers_that_spin_before_the_producer_runs_yield_to_it() {
    // The producer is in warp 1; warp 0 reaches its wait first and must
    // yield instead of spinning to the step limit.
    let r = setup(
        &tile_kernel(2048, 32, "", WAIT),
        64,
        16,
        Swizzle::B128,
        (4, 4),
    );
    let raw = launch(&r, 64).unwrap();
    check_tile(&raw, 64, 16, Swizzle::B128, (4, 4));
}

fn caught(r: &Run, threads: u32) -> CheckReport {
    check_report(&launch(r, threads).expect_err("the planted bug is caught")).clone()
}

#[test]
fn reading_the_stage_before_the_wait_is_a_racecheck_error() {
    // No wait at all: the copy has not landed when the threads read.
    let r = setup(&tile_kernel(2048, 0, "", ""), 64, 16, Swizzle::B128, (0, 0));
    let rep = caught(&r, 32);
    assert_eq!(rep.kind, CheckKind::Racecheck, "{rep}");
    assert!(rep.message.contains("has not yet delivered"), "{rep}");
    assert_eq!(rep.tensor.as_deref(), Some("tile"));
    assert!(
        rep.notes
            .iter()
            .any(|n| n.contains("issued the copy at PTX line")),
        "{rep}"
    );

    // Only thread 0 waits: the copy lands there, and thread 1 reads it
    // without having waited.
    let wait0 = "
  @%p1 bra $skip;
$spin:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra $spin;
$skip:";
    let r = setup(
        &tile_kernel(2048, 0, "", wait0),
        64,
        16,
        Swizzle::B128,
        (0, 0),
    );
    let rep = caught(&r, 32);
    assert_eq!(rep.kind, CheckKind::Racecheck, "{rep}");
    assert!(
        rep.message
            .contains("before this thread waited for the mbarrier phase"),
        "{rep}"
    );
    assert_eq!(rep.thread, Some([1, 0, 0]));
}

#[test]
fn a_wait_that_can_never_complete_is_a_deadlock_report() {
    // Parity 1 on a fresh barrier succeeds at once (the preceding-phase
    // convention), so wait for parity 0 of phase 1, which never comes.
    let wait = "
$spin:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra $spin;
$spin2:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 1;
  @!%p2 bra $spin2;";
    let r = setup(
        &tile_kernel(2048, 0, "", wait),
        64,
        16,
        Swizzle::B128,
        (0, 0),
    );
    let rep = caught(&r, 64);
    assert_eq!(rep.kind, CheckKind::Synccheck, "{rep}");
    assert!(rep.message.contains("deadlock"), "{rep}");
    assert!(rep.instruction.starts_with("mbarrier.try_wait"), "{rep}");
    let text = rep.to_string();
    assert!(
        text.contains("64 thread(s) from (0, 0, 0) wait at PTX line")
            && text.contains("for phase 1 of the mbarrier")
            && text
                .contains("(`bar`): it is in phase 1 with 1 of 1 arrivals pending and tx-count 0"),
        "{text}"
    );
}

#[test]
fn a_copy_of_more_bytes_than_expect_tx_announced_deadlocks_with_the_reason() {
    let ptx = tile_kernel(2048, 0, "", WAIT).replace("_, [bar], 2048;", "_, [bar], 1024;");
    let r = setup(&ptx, 64, 16, Swizzle::B128, (0, 0));
    let rep = caught(&r, 32);
    assert!(rep.message.contains("deadlock"), "{rep}");
    let text = rep.to_string();
    assert!(
        text.contains("tx-count 1024, 2048 bytes of bulk copies in flight (the copies complete more bytes than expect_tx announced)"),
        "{text}"
    );
}

#[test]
fn an_expect_tx_larger_than_the_copy_deadlocks_with_the_reason() {
    let ptx = tile_kernel(2048, 0, "", WAIT).replace("_, [bar], 2048;", "_, [bar], 4096;");
    let r = setup(&ptx, 64, 16, Swizzle::B128, (0, 0));
    let rep = caught(&r, 32);
    assert!(rep.message.contains("deadlock"), "{rep}");
    let text = rep.to_string();
    assert!(
        text.contains("tx-count 4096, 2048 bytes of bulk copies in flight (expect_tx announced 2048 bytes more than the copies in flight deliver)"),
        "{text}"
    );
}

#[test]
fn a_stale_parity_is_a_synccheck_error() {
    // Two waits for parity 0 by the same threads: the second succeeds on
    // the phase the first already saw.
    let wait = "
$spin:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra $spin;
$again:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra $again;";
    let r = setup(
        &tile_kernel(2048, 0, "", wait),
        64,
        16,
        Swizzle::B128,
        (0, 0),
    );
    let rep = caught(&r, 32);
    assert_eq!(rep.kind, CheckKind::Synccheck, "{rep}");
    assert!(rep.message.contains("already saw complete"), "{rep}");
    assert!(
        rep.notes.iter().any(|n| n.contains("flip the parity")),
        "{rep}"
    );
}

#[test]
fn mbarrier_misuse_is_a_synccheck_error() {
    // An arrive on bytes no mbarrier.init initialized.
    let pre = "
  mbarrier.arrive.shared::cta.b64 %rd9, [bar];";
    let r = setup(
        &tile_kernel(2048, 0, pre, WAIT),
        64,
        16,
        Swizzle::B128,
        (0, 0),
    );
    let rep = caught(&r, 32);
    assert_eq!(rep.kind, CheckKind::Synccheck, "{rep}");
    assert!(
        rep.message.contains("holds no initialized mbarrier"),
        "{rep}"
    );
    assert_eq!(rep.tensor.as_deref(), Some("bar"));

    // A generic load of the barrier's bytes after its initialization.
    let wait = format!("{WAIT}\n  ld.shared.u64 %rd9, [bar];");
    let r = setup(
        &tile_kernel(2048, 0, "", &wait),
        64,
        16,
        Swizzle::B128,
        (0, 0),
    );
    let rep = caught(&r, 32);
    assert_eq!(rep.kind, CheckKind::Synccheck, "{rep}");
    assert!(
        rep.message
            .contains("generic load of shared memory that holds an initialized mbarrier"),
        "{rep}"
    );

    // Another thread's wait before a barrier orders the initialization.
    let ptx = tile_kernel(2048, 0, "", WAIT).replace("  bar.sync 0;\n", "");
    let r = setup(&ptx, 64, 16, Swizzle::B128, (0, 0));
    let rep = caught(&r, 32);
    assert!(
        rep.message
            .contains("whose initialization no barrier orders"),
        "{rep}"
    );
}

/// A kernel where every thread writes `tile` with generic stores, all
/// sync, and thread 0 stores the tile to global through the tensor map;
/// `fence` sits between each thread's writes and the barrier.
fn store_kernel(fence: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .align 64 .b8 p_map[128], .param .u64 p_out, .param .s32 p_x, .param .s32 p_y)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<20>;
  .shared .align 1024 .b8 tile[2048];
  mov.u32 %r1, %tid.x;
  mov.u32 %r4, %r1;
$fill:
  setp.ge.u32 %p3, %r4, 1024;
  @%p3 bra $filled;
  shl.b32 %r5, %r4, 1;
  mov.u32 %r6, tile;
  add.u32 %r6, %r6, %r5;
  add.u32 %r7, %r4, 7;
  st.shared.u16 [%r6], %r7;
  add.u32 %r4, %r4, 32;
  bra $fill;
$filled:
{fence}
  bar.sync 0;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $done;
  mov.b64 %rd1, p_map;
  cvta.param.u64 %rd2, %rd1;
  ld.param.s32 %r2, [p_x];
  ld.param.s32 %r3, [p_y];
  cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd2, {{%r2, %r3}}], [tile];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
$done:
  ret;
}}
"#
    )
}

#[test]
fn a_bulk_store_writes_the_in_bounds_elements_unswizzled() {
    let r = setup(
        &store_kernel("  fence.proxy.async.shared::cta;"),
        64,
        16,
        Swizzle::B128,
        (80, 60),
    );
    // The store writes the tensor, not `out`.
    let module = &r.module;
    r.dev
        .launch(
            Launch::new(module, "k", [1, 1, 1], [32, 1, 1]),
            &r.args,
            &LaunchOptions::default(),
            None,
        )
        .unwrap();
    let t = r.dev.to_vec(r.t).unwrap();
    let orig = tensor();
    for y in 0..H as u32 {
        for x in 0..W as u32 {
            let o = (u64::from(y) * STRIDE + 2 * u64::from(x)) as usize;
            let got = u16::from_le_bytes([t[o], t[o + 1]]);
            let inside = (80..144).contains(&x) && (60..76).contains(&y);
            let want = if inside {
                // The element at box (i, j) sat at the swizzled offset of
                // its linear offset; the kernel wrote value k + 7 at
                // halfword k.
                let lin = 2 * ((y - 60) * 64 + (x - 80));
                (swizzled(Swizzle::B128, lin) / 2 + 7) as u16
            } else {
                u16::from_le_bytes([orig[o], orig[o + 1]])
            };
            assert_eq!(got, want, "tensor ({x}, {y})");
        }
    }
}

#[test]
fn a_generic_write_read_by_a_bulk_store_without_the_proxy_fence_is_caught() {
    let r = setup(&store_kernel(""), 64, 16, Swizzle::B128, (0, 0));
    let rep = caught(&r, 32);
    assert_eq!(rep.kind, CheckKind::Racecheck, "{rep}");
    assert!(
        rep.message.contains("generic-proxy write left unfenced"),
        "{rep}"
    );
    assert!(
        rep.instruction
            .starts_with("cp.async.bulk.tensor.2d.global"),
        "{rep}"
    );
    assert!(
        rep.notes
            .iter()
            .any(|n| n.contains("executed no fence.proxy.async")),
        "{rep}"
    );
}

#[test]
fn bad_tensor_map_arguments_are_clear_errors() {
    let mut r = setup(
        &tile_kernel(2048, 0, "", WAIT),
        64,
        16,
        Swizzle::B128,
        (0, 0),
    );
    r.args[0] = KernelArg::Bytes(vec![0x42; 128]);
    let rep = caught(&r, 32);
    assert!(rep.message.contains("bad tensor map operand"), "{rep}");
    assert!(
        rep.message
            .contains("no tensor map made by cuTensorMapEncodeTiled"),
        "{rep}"
    );
}

/// A kernel whose body is `body`, with `out` and the thread index in %r1.
fn plain(body: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p_out)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [p_out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
{body}
  st.global.u32 [%rd3], %r2;
  ret;
}}
"#
    )
}

fn run_plain(body: &str, threads: u32) -> Result<Vec<u32>, SimError> {
    let module = Module::parse(&plain(body))?;
    let mut dev = Device::new();
    let out = dev.alloc("out", threads as usize * 4)?;
    dev.launch(
        Launch::new(&module, "k", [1, 1, 1], [threads, 1, 1]),
        &[KernelArg::Buffer(out)],
        &LaunchOptions::default(),
        None,
    )?;
    Ok(dev
        .to_vec(out)?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[test]
fn nested_scopes_own_their_registers_and_labels() {
    // Two blocks declare the same register and label (as inline assembly
    // pasted twice does); each loop counts with its own, and the outer %r2
    // is not the inner one.
    let block = |k: u32| {
        format!(
            "
  {{
    .reg .b32 n;
    .reg .pred done;
    mov.u32 n, 0;
  again:
    add.u32 n, n, 1;
    setp.ge.u32 done, n, {k};
    @!done bra.uni again;
    add.u32 %r2, %r2, n;
  }}"
        )
    };
    let body = format!("  mov.u32 %r2, 100;{}{}", block(3), block(5));
    let out = run_plain(&body, 32).unwrap();
    assert!(out.iter().all(|&v| v == 108), "{out:?}");
    // A label inside a block is not visible outside it.
    let body = format!("{}\n  bra.uni again;", block(1));
    let err = Module::parse(&plain(&body)).unwrap_err().to_string();
    assert!(err.contains("undefined label `again`"), "{err}");
}

#[test]
fn elect_sync_waits_for_its_mask_and_elects_the_lowest_lane() {
    let body = "
  elect.sync %r3|%p1, -1;
  selp.u32 %r4, 1000, 0, %p1;
  add.u32 %r2, %r3, %r4;";
    let out = run_plain(body, 64).unwrap();
    for (t, &v) in out.iter().enumerate() {
        assert_eq!(v, if t % 32 == 0 { 1000 } else { 0 }, "thread {t}");
    }
    // Divergent lanes meet at it: odd lanes take a detour first, and the
    // leader is still lane 0 of each warp.
    let body = "
  and.b32 %r5, %r1, 1;
  setp.eq.u32 %p2, %r5, 1;
  @!%p2 bra $meet;
  add.u32 %r6, %r1, 1;
$meet:
  elect.sync %r3|%p1, 0xffffffff;
  selp.u32 %r4, 1000, 0, %p1;
  add.u32 %r2, %r3, %r4;";
    let out = run_plain(body, 64).unwrap();
    for (t, &v) in out.iter().enumerate() {
        assert_eq!(v, if t % 32 == 0 { 1000 } else { 0 }, "thread {t}");
    }
    // Lanes 0-15 only, with a full member mask.
    let body = "
  setp.ge.u32 %p2, %r1, 16;
  @%p2 bra $skip;
  elect.sync %r3|%p1, -1;
$skip:
  mov.u32 %r2, 0;";
    let r = check_report(&run_plain(body, 32).unwrap_err()).clone();
    assert_eq!(r.kind, CheckKind::Synccheck, "{r}");
    assert!(r.message.contains("can never complete"), "{r}");
    assert!(r.instruction.starts_with("elect.sync"), "{r}");
}

/// Arrive states, pending counts, test_wait on a state, expect_tx and
/// complete_tx by threads, arrive_drop, and a generic mbarrier address:
/// each thread's %r2 collects what it saw.
const PHASES: &str = "
  .shared .align 8 .b64 b1;
  .shared .align 8 .b64 b2;
  .shared .align 8 .b64 b3;
  setp.ne.u32 %p3, %r1, 0;
  @%p3 bra $inited;
  mbarrier.init.shared::cta.b64 [b1], 64;
  mov.u64 %rd4, b2;
  cvta.shared.u64 %rd5, %rd4;
  mbarrier.init.b64 [%rd5], 4;
  mbarrier.init.shared::cta.b64 [b3], 2;
$inited:
  bar.sync 0;
  // b1: every thread arrives; the pending count after each arrival is
  // one of 0..63, each once; a state wait then succeeds.
  mbarrier.arrive.release.cta.shared::cta.b64 %rd4, [b1];
  mbarrier.pending_count.b64 %r2, %rd4;
$w1:
  mbarrier.test_wait.acquire.cta.shared::cta.b64 %p1, [b1], %rd4;
  @!%p1 bra $w1;
  // b2 (generic address): thread 0 expects 100 bytes, threads 0-3 each
  // complete 25 and arrive; the phase completes only with all of them.
  setp.ge.u32 %p2, %r1, 4;
  @%p2 bra $b3;
  @!%p3 mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [b2], 100;
  bar.warp.sync 15;
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [b2], 0;
  selp.u32 %r5, 1000, 0, %p1;
  add.u32 %r2, %r2, %r5;
  mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [b2], 25;
  mbarrier.arrive.shared::cta.b64 _, [b2];
$w2:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [b2], 0;
  @!%p1 bra $w2;
  add.u32 %r2, %r2, 100;
  // b3: thread 0 drops out of it after phase 0; thread 1 alone
  // completes phase 1.
  setp.gt.u32 %p2, %r1, 1;
  @%p2 bra $b3;
  @!%p3 mbarrier.arrive_drop.shared::cta.b64 _, [b3];
  @%p3 mbarrier.arrive.shared::cta.b64 _, [b3];
  @!%p3 bra $b3;
$w3:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [b3], 0;
  @!%p1 bra $w3;
  mbarrier.arrive.shared::cta.b64 _, [b3];
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [b3], 1;
  selp.u32 %r5, 10000, 0, %p1;
  add.u32 %r2, %r2, %r5;
$b3:";

#[test]
fn arrivals_states_transactions_and_drops_complete_phases_as_the_isa_says() {
    let out = run_plain(PHASES, 64).unwrap();
    let mut pending: Vec<u32> = out.iter().map(|v| v % 100).collect();
    pending.sort();
    assert_eq!(pending, (0..64).collect::<Vec<_>>(), "{out:?}");
    for (t, v) in out.iter().enumerate() {
        // Threads 0-3: the tx wait before completing saw no completion
        // (no 1000s), the b2 wait succeeded (100); thread 1 saw b3's
        // phase 1 complete by its lone arrival (10000).
        let want = match t {
            0 | 2 | 3 => 100,
            1 => 10100,
            _ => 0,
        };
        assert_eq!(v / 100 * 100, want, "thread {t}: {v}");
    }
}

#[test]
fn missing_arrivals_deadlock_with_the_count_in_the_report() {
    let body = PHASES.replace("[b1], 64;", "[b1], 65;");
    let r = check_report(&run_plain(&body, 64).unwrap_err()).clone();
    assert!(r.message.contains("deadlock"), "{r}");
    let text = r.to_string();
    assert!(
        text.contains("64 thread(s) from (0, 0, 0) wait at PTX line")
            && text.contains("for phase 0 of the mbarrier at shared offset 0x0 (`b1`): it is in phase 0 with 1 of 65 arrivals pending"),
        "{text}"
    );
}

/// A plain (tensor-map-free) bulk load of 256 bytes from `in + 16` into
/// `buf`, each of 64 threads doubling its word, `fence` and a barrier,
/// and thread 0's bulk store of `buf` to `out`.
fn linear_kernel(size: u32, fence: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p_in, .param .u64 p_out)
{{
  .reg .pred %p<4>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<10>;
  .shared .align 16 .b8 buf[256];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [p_in];
  ld.param.u64 %rd2, [p_out];
  add.u64 %rd1, %rd1, 16;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $sync;
  mbarrier.init.shared::cta.b64 [bar], 1;
$sync:
  bar.sync 0;
  @%p1 bra $wait;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], {size};
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], {size}, [bar];
$wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra $wait;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, buf;
  add.u32 %r3, %r3, %r2;
  ld.shared.u32 %r4, [%r3];
  add.u32 %r4, %r4, %r4;
  st.shared.u32 [%r3], %r4;
{fence}
  bar.sync 0;
  @%p1 bra $done;
  cp.async.bulk.global.shared::cta.bulk_group [%rd2], [buf], 256;
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
$done:
  ret;
}}
"#
    )
}

fn run_linear(ptx: &str) -> Result<Vec<u32>, SimError> {
    let module = Module::parse(ptx)?;
    let mut dev = Device::new();
    let input: Vec<u8> = (0..80u32).flat_map(|i| (i * 3).to_le_bytes()).collect();
    let inp = dev.alloc_from("in", &input)?;
    let out = dev.alloc("out", 256)?;
    dev.launch(
        Launch::new(&module, "k", [1, 1, 1], [64, 1, 1]),
        &[KernelArg::Buffer(inp), KernelArg::Buffer(out)],
        &LaunchOptions::default(),
        None,
    )?;
    Ok(dev
        .to_vec(out)?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[test]
fn plain_bulk_copies_load_and_store_with_the_same_checks() {
    let fence = "  fence.proxy.async.shared::cta;";
    let out = run_linear(&linear_kernel(256, fence)).unwrap();
    let want: Vec<u32> = (4..68u32).map(|i| 2 * i * 3).collect();
    assert_eq!(out, want);
    // Without the proxy fence, the store reads unfenced generic writes.
    let r = check_report(&run_linear(&linear_kernel(256, "")).unwrap_err()).clone();
    assert!(r.message.contains("left unfenced"), "{r}");
    assert!(r.instruction.starts_with("cp.async.bulk.global"), "{r}");
    // A size that is no multiple of 16.
    let r = check_report(&run_linear(&linear_kernel(200, fence)).unwrap_err()).clone();
    assert_eq!(r.kind, CheckKind::Memcheck, "{r}");
    assert!(r.message.contains("positive multiple of 16"), "{r}");
}

#[test]
fn a_thread_that_fails_two_waits_and_then_arrives_itself_is_no_deadlock() {
    // One thread: two failed test_waits (each yields), then its own
    // arrival completes the phase and its third wait succeeds.
    let body = "
  .shared .align 8 .b64 b;
  mbarrier.init.shared::cta.b64 [b], 1;
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [b], 0;
  mbarrier.test_wait.parity.shared::cta.b64 %p2, [b], 0;
  mbarrier.arrive.shared::cta.b64 _, [b];
  mbarrier.test_wait.parity.shared::cta.b64 %p3, [b], 0;
  selp.u32 %r2, 1, 0, %p1;
  selp.u32 %r3, 10, 0, %p2;
  add.u32 %r2, %r2, %r3;
  selp.u32 %r3, 100, 0, %p3;
  add.u32 %r2, %r2, %r3;";
    assert_eq!(run_plain(body, 1).unwrap(), vec![100]);
}

#[test]
fn an_async_read_of_a_stage_its_thread_never_waited_for_is_caught() {
    // Thread 1 waits (the copy lands); thread 0, which issued it, stores
    // the stage back with a bulk store without waiting itself.
    let ptx = r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p_in, .param .u64 p_out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<10>;
  .shared .align 16 .b8 buf[256];
  .shared .align 8 .b64 bar;
  ld.param.u64 %rd1, [p_in];
  ld.param.u64 %rd2, [p_out];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $sync;
  mbarrier.init.shared::cta.b64 [bar], 1;
$sync:
  bar.sync 0;
  @%p1 bra $w;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], 256, [bar];
  bra.uni $store;
$w:
  setp.ne.u32 %p3, %r1, 1;
  @%p3 bra $end;
$spin:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra $spin;
  bra.uni $end;
$store:
  cp.async.bulk.global.shared::cta.bulk_group [%rd2], [buf], 256;
$end:
  ret;
}
"#;
    let r = check_report(&run_linear(ptx).unwrap_err()).clone();
    assert_eq!(r.kind, CheckKind::Racecheck, "{r}");
    assert!(
        r.message.contains(
            "cp.async.bulk read of shared memory that a bulk copy wrote, before this thread waited"
        ),
        "{r}"
    );
    assert_eq!(r.thread, Some([0, 0, 0]));
}

#[test]
fn a_swizzled_chunk_past_the_end_of_shared_memory_is_memcheck_not_a_panic() {
    // A box of 9 rows of 64 bytes ends mid-row; the 128B swizzle moves the
    // last row's chunks into bytes 576..640 of the tile, past the end of
    // shared memory (the tile is the last array).
    let ptx = tile_kernel(576, 0, "", WAIT).replace(
        "  .shared .align 1024 .b8 tile[576];\n  .shared .align 8 .b64 bar;",
        "  .shared .align 8 .b64 bar;\n  .shared .align 1024 .b8 tile[576];",
    );
    assert!(
        ptx.contains(".b64 bar;\n  .shared .align 1024"),
        "the arrays swapped"
    );
    let r = setup(&ptx, 32, 9, Swizzle::B128, (0, 0));
    let rep = caught(&r, 32);
    assert_eq!(rep.kind, CheckKind::Memcheck, "{rep}");
    assert!(rep.message.contains("a swizzled 16-byte chunk"), "{rep}");
}

#[test]
fn copies_and_waits_run_the_same_with_the_checks_off() {
    let r = setup(
        &tile_kernel(2048, 32, "", WAIT),
        64,
        16,
        Swizzle::B128,
        (70, 60),
    );
    let opts = LaunchOptions {
        checks: false,
        ..LaunchOptions::default()
    };
    r.dev
        .launch(
            Launch::new(&r.module, "k", [1, 1, 1], [64, 1, 1]),
            &r.args,
            &opts,
            None,
        )
        .unwrap();
    check_tile(
        &r.dev.to_vec(r.out).unwrap(),
        64,
        16,
        Swizzle::B128,
        (70, 60),
    );
    // The planted read-before-wait runs without a report, as on a GPU.
    let r = setup(&tile_kernel(2048, 0, "", ""), 64, 16, Swizzle::B128, (0, 0));
    r.dev
        .launch(
            Launch::new(&r.module, "k", [1, 1, 1], [32, 1, 1]),
            &r.args,
            &opts,
            None,
        )
        .unwrap();
}

/// Warp 0's lane 0 copies a 256-byte stage twice (on `full`, phases 0 and 1),
/// waiting on `wait_bar` in between; warp 1 consumes each copy: waits,
/// then `consume` (reads its word, arrives on `empty`, lane 0 also on
/// `other`, in some order).
fn release_kernel(wait_bar: &str, consume: &str) -> String {
    format!(
        r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p_in, .param .u64 p_out)
{{
  .reg .pred %p<8>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<10>;
  .shared .align 128 .b8 buf[256];
  .shared .align 8 .b64 full;
  .shared .align 8 .b64 empty;
  .shared .align 8 .b64 other;
  ld.param.u64 %rd1, [p_in];
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $sync;
  mbarrier.init.shared::cta.b64 [full], 1;
  mbarrier.init.shared::cta.b64 [empty], 32;
  mbarrier.init.shared::cta.b64 [other], 1;
$sync:
  bar.sync 0;
  setp.ge.u32 %p2, %r1, 32;
  @%p2 bra $consumer;
  @%p1 bra $end;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [full], 256;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], 256, [full];
$pw:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [{wait_bar}], 0;
  @!%p3 bra $pw;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [full], 256;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], 256, [full];
  bra.uni $end;
$consumer:
  sub.u32 %r2, %r1, 32;
  setp.ne.u32 %p4, %r2, 0;
  shl.b32 %r3, %r2, 2;
  mov.u32 %r4, buf;
  add.u32 %r4, %r4, %r3;
  mov.u32 %r9, 0;
$iter:
$cw:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [full], %r9;
  @!%p3 bra $cw;
{consume}
  add.u32 %r9, %r9, 1;
  setp.lt.u32 %p5, %r9, 2;
  @%p5 bra $iter;
$end:
  ret;
}}
"#
    )
}

const READ: &str = "  ld.shared.u32 %r5, [%r4];";
const RELEASE: &str = "  mbarrier.arrive.shared::cta.b64 _, [empty];
  @!%p4 mbarrier.arrive.shared::cta.b64 _, [other];";

#[test]
fn a_copy_over_a_stage_its_readers_have_not_released_is_caught() {
    // Correct: read, release on `empty`; the producer waits on `empty`.
    let ok = release_kernel("empty", &format!("{READ}\n{RELEASE}"));
    run_linear(&ok).unwrap();
    // Released before the read: the next copy may land under the read.
    let early = release_kernel("empty", &format!("{RELEASE}\n{READ}"));
    let r = check_report(&run_linear(&early).unwrap_err()).clone();
    assert_eq!(r.kind, CheckKind::Racecheck, "{r}");
    assert!(
        r.message
            .contains("overwrites a stage that another thread read"),
        "{r}"
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("has not released it since")),
        "{r}"
    );
    assert!(r.instruction.starts_with("cp.async.bulk.shared"), "{r}");
    // The producer waits on `other`, which only lane 0 releases through:
    // the other readers' `empty` arrivals order nothing for it.
    let wrong = release_kernel("other", &format!("{READ}\n{RELEASE}"));
    let r = check_report(&run_linear(&wrong).unwrap_err()).clone();
    assert!(r.message.contains("overwrites a stage"), "{r}");
    assert!(
        r.notes.iter().any(|n| n.contains("(33, 0, 0) read it")
            && n.contains("this thread has not waited for that phase")),
        "{r}"
    );
}

#[test]
fn arrive_no_complete_counts_but_must_not_complete_the_phase() {
    // 4 expected: noComplete with 3, then a plain arrive completes.
    let body = "
  .shared .align 8 .b64 b;
  mbarrier.init.shared::cta.b64 [b], 4;
  mbarrier.arrive.noComplete.release.cta.shared::cta.b64 %rd4, [b], 3;
  mbarrier.pending_count.b64 %r2, %rd4;
  mbarrier.arrive.shared::cta.b64 %rd4, [b];
  mbarrier.test_wait.parity.shared::cta.b64 %p1, [b], 0;
  selp.u32 %r3, 100, 0, %p1;
  add.u32 %r2, %r2, %r3;";
    assert_eq!(run_plain(body, 1).unwrap(), vec![101]);
    let r = check_report(&run_plain(&body.replace("[b], 3;", "[b], 4;"), 1).unwrap_err()).clone();
    assert_eq!(r.kind, CheckKind::Synccheck, "{r}");
    assert!(
        r.message
            .contains("noComplete makes the last 4 arrivals of phase 0"),
        "{r}"
    );
}

#[test]
fn prefetches_of_maps_boxes_and_lines_are_accepted_and_change_nothing() {
    let pre = "
  mov.b64 %rd6, p_map;
  cvta.param.u64 %rd7, %rd6;
  prefetch.tensormap [%rd7];
  prefetch.param.tensormap [p_map];
  cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%rd7, {%r1, %r1}];
  prefetch.global.L2 [%rd5];
  cp.async.bulk.prefetch.L2.global [%rd5], 64;";
    let r = setup(
        &tile_kernel(2048, 0, pre, WAIT),
        64,
        16,
        Swizzle::B128,
        (3, 5),
    );
    check_tile(&launch(&r, 32).unwrap(), 64, 16, Swizzle::B128, (3, 5));
    // A malformed one is still an error.
    let bad = tile_kernel(
        2048,
        0,
        "  cp.async.bulk.prefetch.tensor.2d.L2.global [%rd7, {%r1}];",
        WAIT,
    );
    let err = Module::parse(&bad).unwrap_err().to_string();
    assert!(
        err.contains("a 2d tensor prefetch takes 2 coordinates, found 1"),
        "{err}"
    );
}

#[test]
fn malformed_mbarrier_and_bulk_instructions_are_clear_errors() {
    for (line, says) in [
        ("mbarrier.init.shared::cta.b64 [bar];", "takes 2 operands"),
        ("mbarrier.init.shared::cta.b32 [bar], 1;", "unsupported"),
        ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar];", "needs a txCount"),
        ("mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0, 1, 2;", "operands, found 5"),
        ("mbarrier.test_wait.parity.shared::cluster.b64 %p2, [bar], 0;", "unsupported"),
        ("mbarrier.try_wait.parity.shared::cta.b64 %r2, [bar], 0;", "not a predicate"),
        ("mbarrier.frobnicate.shared::cta.b64 [bar];", "unsupported"),
        ("mbarrier.arrive.noComplete.shared::cta.b64 _, [bar];", "takes a count"),
        ("cp.async.bulk.tensor.6d.shared::cluster.global.mbarrier::complete_tx::bytes [tile], [%rd2, {%r1}], [bar];", "unsupported"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [tile], [%rd2, {%r1}], [bar];", "takes 2 coordinates, found 1"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [tile], [%rd2], [bar];", "expected a tensor operand"),
        ("cp.async.bulk.tensor.2d.shared::cluster.global.multicast::cluster.mbarrier::complete_tx::bytes [tile], [%rd2, {%r1, %r1}], [bar], %rs1;", "unsupported"),
        ("cp.async.bulk.wait_group %r1;", "integer constant"),
        ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [tile], [%rd2], 64;", "takes 4 operands"),
        ("fence.proxy.tensormap::generic.release.gpu;", "unsupported"),
        ("elect.sync %r1, -1;", "d|p"),
    ] {
        let ptx = tile_kernel(2048, 0, &format!("  {line}"), WAIT);
        let err = Module::parse(&ptx)
            .map(|_| ())
            .expect_err(line)
            .to_string();
        assert!(err.contains(says), "{line}: {err}");
    }
}
