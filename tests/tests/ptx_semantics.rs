//! The emitted PTX computes what the language says: the seed kernels and the
//! riskiest corpus kernels (tiles with ragged edges and negative starts,
//! shared-byte reuse, shuffles with out-of-piece sources, argmax ties,
//! any/all pieces, dp4a forms, sub-word and half types, short-circuit
//! loads) run in the simulator, with its memory, race and sync checks on,
//! against references computed here.

// The references index inputs and outputs by the same position.
#![allow(clippy::needless_range_loop)]

use phobos_conformance::{compile, corpus_file};
use phobos_core::binding::{ArgShape, LaunchRequest};
use phobos_core::meta::{DimRefMeta, ParamKindMeta};
use phobos_runtime::sim_launch::{self, Plan};
use phobos_sim::{Device, KernelArg, LaunchOptions, Module};

/// The little-endian bytes of `v`, each value by `bytes`.
fn le<T: Copy, const N: usize>(v: &[T], bytes: fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|x| bytes(*x)).collect()
}
/// The values in `b`, each read from its little-endian bytes by `value`.
fn from_le<T, const N: usize>(b: &[u8], value: fn([u8; N]) -> T) -> Vec<T> {
    b.chunks(N).map(|c| value(c.try_into().unwrap())).collect()
}
fn f32s(v: &[f32]) -> Vec<u8> {
    le(v, f32::to_le_bytes)
}
fn to_f32(b: &[u8]) -> Vec<f32> {
    from_le(b, f32::from_le_bytes)
}
fn to_i32(b: &[u8]) -> Vec<i32> {
    from_le(b, i32::from_le_bytes)
}
fn to_u16(b: &[u8]) -> Vec<u16> {
    from_le(b, u16::from_le_bytes)
}

/// One kernel parameter's value: an input tensor's bytes, an output
/// tensor of that many zero bytes, or a scalar.
enum Param {
    In(Vec<u8>),
    Out(usize),
    Value(KernelArg),
}
use Param::{In, Out, Value};

/// A launch of corpus kernel variant `entry` (the kernel's file is the name
/// before any `__`) over `grid` CTAs of `threads` threads.
struct Launch {
    entry: &'static str,
    grid: [u32; 3],
    threads: u32,
}

fn launch(entry: &'static str, grid: [u32; 3], threads: u32) -> Launch {
    Launch {
        entry,
        grid,
        threads,
    }
}

impl Launch {
    /// Runs the kernel with `params` in its declaration order (a value per
    /// tensor and per scalar, each buffer named after its parameter) and
    /// the runtime dims by name, and returns every parameter's bytes after
    /// the launch (none for a scalar). The PTX arguments, their order, the
    /// variant (`entry`, checked) and the block size (`threads`, checked)
    /// come from the one simulated launch road (`phobos_runtime::sim_launch`),
    /// as every executor gets them.
    fn run(&self, dims: &[(&str, usize)], params: Vec<Param>) -> Vec<Vec<u8>> {
        let name = self.entry.split("__").next().unwrap();
        let k = compile(&corpus_file(name), 75);
        let meta = &k[0].meta;
        assert_eq!(
            params.len(),
            meta.params.len(),
            "{name}: one value per parameter"
        );
        let dim = |d: &DimRefMeta| match d {
            DimRefMeta::Named(n) => {
                dims.iter()
                    .find(|(x, _)| x == n)
                    .unwrap_or_else(|| panic!("{name}: give dim {n}"))
                    .1 as u64
            }
            DimRefMeta::Const(c) => *c,
        };
        let shapes: Vec<Vec<u64>> = meta
            .params
            .iter()
            .map(|p| match &p.kind {
                ParamKindMeta::Tensor { dims, .. } => dims.iter().map(dim).collect(),
                ParamKindMeta::Scalar(_) => Vec::new(),
            })
            .collect();
        let shapes: Vec<ArgShape<'_>> = meta
            .params
            .iter()
            .zip(&shapes)
            .map(|(p, shape)| {
                let tensor = match &p.kind {
                    ParamKindMeta::Tensor { elem, .. } => Some((*elem, &shape[..])),
                    ParamKindMeta::Scalar(_) => None,
                };
                ArgShape::of_param(&p.kind, tensor)
            })
            .collect();
        let request = LaunchRequest {
            args: &shapes,
            grid: Some(self.grid),
            picked: &[],
            limits: sim_launch::limits(75),
        };
        let plan = Plan::bind(meta, &request).unwrap_or_else(|e| panic!("{name}: {e}"));
        let variant = plan.variant;
        assert_eq!(
            variant.entry, self.entry,
            "{name}: the variant the dims pick"
        );
        assert_eq!(variant.threads, self.threads, "{name}: the block size");
        let mut dev = Device::new();
        let values: Vec<KernelArg> = params
            .iter()
            .zip(&meta.params)
            .map(|(p, m)| match p {
                In(bytes) => KernelArg::Buffer(dev.alloc_from(&m.name, bytes).unwrap()),
                Out(n) => KernelArg::Buffer(dev.alloc(&m.name, *n).unwrap()),
                Value(v) => v.clone(),
            })
            .collect();
        let args = plan
            .kernel_args(|i| values.get(i).cloned())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let m = Module::parse(&k[0].ptx).unwrap_or_else(|e| panic!("{e}"));
        plan.run(&dev, &m, &args, &LaunchOptions::default(), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        params
            .iter()
            .zip(&values)
            .map(|(p, v)| match (p, v) {
                (In(_) | Out(_), KernelArg::Buffer(b)) => dev.to_vec(*b).unwrap(),
                _ => Vec::new(),
            })
            .collect()
    }
}

#[test]
fn seeds() {
    let (n, k) = (100usize, 256usize);
    let w: Vec<f32> = (0..n * k).map(|i| ((i * 7 % 13) as f32) - 6.0).collect();
    let x: Vec<f32> = (0..k).map(|i| (i % 5) as f32 * 0.5).collect();
    let want: Vec<f32> = (0..n)
        .map(|r| (0..k).map(|c| w[r * k + c] * x[c]).sum())
        .collect();
    // lanes_matvec takes K at run time; staged_matvec's K = 256 picks
    // its variant (the binding leaves it out of the PTX arguments).
    for entry in ["lanes_matvec", "staged_matvec__K256"] {
        let out = launch(entry, [n.div_ceil(4) as u32, 1, 1], 128).run(
            &[("N", n), ("K", k)],
            vec![In(f32s(&w)), In(f32s(&x)), Out(n * 4)],
        );
        let y = to_f32(&out[2]);
        for r in 0..n {
            assert!(
                (y[r] - want[r]).abs() < 1e-2,
                "{entry} row {r}: {} vs {}",
                y[r],
                want[r]
            );
        }
    }
    // i8
    let (n, k) = (50usize, 512usize);
    let a: Vec<i8> = (0..k)
        .map(|i| ((i * 31 % 255) as i32 - 127) as i8)
        .collect();
    let wq: Vec<i8> = (0..n * k)
        .map(|i| ((i * 17 % 251) as i32 - 125) as i8)
        .collect();
    let want: Vec<f32> = (0..n)
        .map(|r| {
            (0..k)
                .map(|c| a[c] as i32 * wq[r * k + c] as i32)
                .sum::<i32>() as f32
        })
        .collect();
    let params = vec![
        In(le(&a, i8::to_le_bytes)),
        In(le(&wq, i8::to_le_bytes)),
        Out(n * 4),
    ];
    let out =
        launch("i8_matvec", [n.div_ceil(8) as u32, 1, 1], 256).run(&[("K", k), ("N", n)], params);
    assert_eq!(to_f32(&out[2]), want);
    // lane_max
    let av: Vec<f32> = (0..128).map(|i| (i * 37 % 101) as f32).collect();
    let out = launch("lane_max", [1, 1, 1], 128).run(&[], vec![In(f32s(&av)), Out(4)]);
    let o = to_f32(&out[1]);
    assert_eq!(o[0], av[..32].iter().cloned().fold(f32::MIN, f32::max));
    // row_sum
    let (n, m) = (7usize, 1000usize);
    let av: Vec<f32> = (0..n * m).map(|i| (i % 3) as f32).collect();
    let out = launch("row_sum", [n as u32, 1, 1], 256)
        .run(&[("N", n), ("M", m)], vec![In(f32s(&av)), Out(n * 4)]);
    let y = to_f32(&out[1]);
    for r in 0..n {
        assert_eq!(y[r], av[r * m..(r + 1) * m].iter().sum::<f32>(), "row {r}");
    }
    // cta_forms
    let g = 3usize;
    let av: Vec<f32> = (0..g * 128)
        .map(|i| ((i * 37 % 101) as f32) - 50.0)
        .collect();
    let bv: Vec<i32> = (0..g * 128).map(|i| (i % 7) as i32).collect();
    let inputs = vec![In(f32s(&av)), In(le(&bv, i32::to_le_bytes)), Out(g * 8 * 4)];
    let out = launch("cta_forms", [g as u32, 1, 1], 128).run(&[("G", g)], inputs);
    let o = to_f32(&out[2]);
    for gi in 0..g {
        let row = &av[gi * 128..(gi + 1) * 128];
        let mx = row.iter().cloned().fold(f32::MIN, f32::max);
        let at = row.iter().position(|v| *v == mx).unwrap();
        assert_eq!(o[gi * 8 + 1], mx);
        assert_eq!(o[gi * 8 + 2], row.iter().cloned().fold(f32::MAX, f32::min));
        assert_eq!(o[gi * 8 + 5], at as f32, "argmax");
        assert_eq!(
            o[gi * 8 + 7],
            bv[gi * 128..(gi + 1) * 128].iter().sum::<i32>() as f32
        );
        assert!((o[gi * 8] - row.iter().sum::<f32>()).abs() < 1e-3);
    }
    // shuffles
    let av: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let sv: Vec<i32> = (0..64).map(|i| (i * 7 % 45) - 6).collect();
    let out = launch("shfl_down_up", [1, 1, 1], 64).run(&[], shuffle_params(&av, &sv, 5));
    let get = |i: usize| to_f32(&out[2 + i]);
    let (d3, u5, dw, uv, dv) = (get(0), get(1), get(2), get(3), get(4));
    for t in 0..64usize {
        let lane = (t % 32) as i64;
        let base = (t - t % 32) as i64;
        let s = sv[t] as i64;
        let src = |p: i64, w: i64| {
            let start = lane - lane % w;
            let rel = p - start;
            if (0..w).contains(&rel) {
                (base + p) as f32
            } else {
                t as f32
            }
        };
        assert_eq!(d3[t], src(lane + 3, 32), "d3 {t}");
        assert_eq!(u5[t], src(lane - 5, 32), "u5 {t}");
        assert_eq!(dw[t], src(lane + 1, 8), "dw {t}");
        assert_eq!(uv[t], src(lane - s, 16), "uv {t}");
        assert_eq!(dv[t], src(lane + s, 32), "dv {t}");
    }
}

/// The parameters of the shuffle kernels: the f32 values `A`, the i32
/// sources or masks, and `outs` outputs of 64 f32 each.
fn shuffle_params(a: &[f32], s: &[i32], outs: usize) -> Vec<Param> {
    let mut params = vec![In(f32s(a)), In(le(s, i32::to_le_bytes))];
    params.extend((0..outs).map(|_| Out(256)));
    params
}

#[test]
fn tiles() {
    let (n, m) = (37usize, 70usize);
    let a: Vec<f32> = (0..n * m).map(|i| i as f32).collect();
    let grid = [m.div_ceil(32) as u32, n.div_ceil(16) as u32, 1];
    let out = launch("tile_ragged", grid, 128).run(
        &[("N", n), ("M", m)],
        vec![In(f32s(&a)), In(f32s(&vec![-1.0; n * m]))],
    );
    let b = to_f32(&out[1]);
    for i in 0..n * m {
        assert_eq!(b[i], 2.0 * a[i], "ragged {i}");
    }
    let (n, m) = (45usize, 70usize);
    let a: Vec<f32> = (0..n * m).map(|i| i as f32).collect();
    let grid = [m.div_ceil(32) as u32, n.div_ceil(32) as u32, 1];
    let out = launch("tile_transpose", grid, 256)
        .run(&[("N", n), ("M", m)], vec![In(f32s(&a)), Out(n * m * 4)]);
    let b = to_f32(&out[1]);
    for r in 0..n {
        for c in 0..m {
            assert_eq!(b[c * n + r], a[r * m + c]);
        }
    }
    let av: Vec<f32> = (0..256).map(|i| i as f32).collect();
    let bv: Vec<f32> = (0..256).map(|i| 1000.0 * i as f32).collect();
    let out = launch("tile_reuse", [1, 1, 1], 256)
        .run(&[], vec![In(f32s(&av)), In(f32s(&bv)), Out(1024)]);
    let y = to_f32(&out[2]);
    for i in 0..256 {
        assert_eq!(y[i], av[(i + 255) % 256] + bv[(i + 1) % 256]);
    }
    let xv: Vec<f32> = (0..128).map(|i| i as f32).collect();
    let out = launch("tile_write", [1, 1, 1], 128).run(&[], vec![In(f32s(&xv)), Out(512)]);
    let y = to_f32(&out[1]);
    for i in 0..128 {
        assert_eq!(y[i], 3.0 * xv[(i + 7) % 128]);
    }
    // halo f16
    let n = 300usize;
    let xs: Vec<u16> = (0..n).map(|i| half_bits((i % 10) as f32)).collect();
    let out = launch("tile_f16_halo", [n.div_ceil(128) as u32, 1, 1], 128)
        .run(&[("N", n)], vec![In(le(&xs, u16::to_le_bytes)), Out(n * 2)]);
    let y = to_u16(&out[1]);
    for (i, got) in y.iter().enumerate() {
        let v = |j: i64| {
            if (0..n as i64).contains(&j) {
                (j % 10) as f32
            } else {
                0.0
            }
        };
        let w = v(i as i64 - 1) + v(i as i64) + v(i as i64 + 1);
        assert_eq!(*got, half_bits(w), "halo {i}");
    }
}

fn half_bits(x: f32) -> u16 {
    // exact small integers only
    if x == 0.0 {
        return 0;
    }
    let e = x.log2().floor() as i32;
    let m = x / 2f32.powi(e) - 1.0;
    (((e + 15) as u16) << 10) | ((m * 1024.0) as u16)
}

#[test]
fn lanes_more() {
    // lane_argmax
    let av: Vec<f32> = (0..64).map(|i| (i * 37 % 11) as f32).collect();
    let bv: Vec<i32> = (0..64).map(|i| i * 13 % 5).collect();
    let inputs = vec![
        In(f32s(&av)),
        In(le(&bv, i32::to_le_bytes)),
        Out(256),
        Out(256),
    ];
    let out = launch("lane_argmax", [1, 1, 1], 64).run(&[], inputs);
    let (w, p) = (to_i32(&out[2]), to_i32(&out[3]));
    for t in 0..64 {
        let ws = t - t % 32;
        let mx = av[ws..ws + 32].iter().cloned().fold(f32::MIN, f32::max);
        assert_eq!(
            w[t] as usize,
            av[ws..ws + 32].iter().position(|v| *v == mx).unwrap(),
            "W {t}"
        );
        let ps = t - t % 4;
        let mx = *bv[ps..ps + 4].iter().max().unwrap();
        assert_eq!(
            p[t] as usize,
            bv[ps..ps + 4].iter().position(|v| *v == mx).unwrap(),
            "P {t}"
        );
    }
    // lane_any_all
    let av: Vec<f32> = (0..96)
        .map(|i| if i % 7 == 0 || i >= 64 { 1.0 } else { -1.0 })
        .collect();
    let out = launch("lane_any_all", [1, 1, 1], 96).run(&[], vec![In(f32s(&av)), Out(96 * 4)]);
    let o = to_i32(&out[1]);
    for t in 0..96 {
        let c = |i: usize| av[i] > 0.0;
        let piece = |w: usize| (t - t % w)..(t - t % w + w);
        let a = piece(32).any(c) as i32;
        let b = piece(32).all(c) as i32;
        let d = piece(4).any(c) as i32;
        let e = piece(8).all(c) as i32;
        assert_eq!(o[t], a + 2 * b + 4 * d + 8 * e, "any/all {t}");
    }
    // shfl_from / xor
    let av: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let sv: Vec<i32> = (0..64).map(|i| (i * 7 % 45) - 6).collect();
    let out = launch("shfl_from", [1, 1, 1], 64).run(&[], shuffle_params(&av, &sv, 4));
    let o: Vec<Vec<f32>> = out[2..].iter().map(|b| to_f32(b)).collect();
    for t in 0..64usize {
        let from = |s: i64, w: usize| {
            let start = (t - t % w) as i64;
            if (0..w as i64).contains(&s) {
                (start + s) as f32
            } else {
                t as f32
            }
        };
        assert_eq!(o[0][t], from(0, 32));
        assert_eq!(o[1][t], from(3, 4));
        assert_eq!(o[2][t], from(sv[t] as i64, 32), "V {t}");
        assert_eq!(o[3][t], from(sv[t] as i64, 8), "W {t}");
    }
    let out = launch("shfl_xor", [1, 1, 1], 64).run(&[], shuffle_params(&av, &sv, 4));
    let o: Vec<Vec<f32>> = out[2..].iter().map(|b| to_f32(b)).collect();
    for t in 0..64usize {
        let lane = (t % 32) as i64;
        let xr = |m: i64, w: i64| {
            let lip = lane % w;
            let p = lip ^ m;
            if (0..w).contains(&p) {
                (t as i64 - lip + p) as f32
            } else {
                t as f32
            }
        };
        assert_eq!(o[0][t], xr(1, 32));
        assert_eq!(o[1][t], xr(16, 32));
        assert_eq!(o[2][t], xr(2, 4));
        assert_eq!(o[3][t], xr(sv[t] as i64, 8), "xor V {t}");
    }
    // lane_reduce
    let av: Vec<f32> = (0..64).map(|i| ((i % 5) as f32) - 2.0 + 0.5).collect();
    let bv: Vec<i32> = (0..64).map(|i| 1 << (i % 31)).collect();
    let out = launch("lane_reduce", [1, 1, 1], 64).run(&[], shuffle_params(&av, &bv, 3));
    let (r, q, ii) = (to_f32(&out[2]), to_f32(&out[3]), to_i32(&out[4]));
    for t in 0..64 {
        let p4 = t - t % 4;
        let w = t - t % 32;
        assert_eq!(r[t], av[p4..p4 + 4].iter().product::<f32>(), "R {t}");
        assert_eq!(
            q[t],
            av[w..w + 32].iter().map(|v| v.abs()).fold(0.0, f32::max)
        );
        assert_eq!(ii[t], bv[w..w + 32].iter().fold(0, |a, b| a | b));
    }
}

#[test]
fn bytes_and_runs() {
    // dp4a_u8
    let n = 33usize;
    let a: Vec<u8> = (0..n * 32).map(|i| (i * 37 % 256) as u8).collect();
    let b: Vec<u8> = (0..n * 32).map(|i| (i * 91 % 256) as u8).collect();
    let params = vec![In(a.clone()), In(b.clone()), Out(n * 4), Out(n * 4)];
    let out = launch("dp4a_u8", [2, 1, 1], 32).run(&[("N", n)], params);
    let (d, s) = (to_i32(&out[2]), to_i32(&out[3]));
    for i in 0..n {
        let r = i * 32..(i + 1) * 32;
        assert_eq!(
            d[i],
            r.clone().map(|k| a[k] as i32 * b[k] as i32).sum::<i32>()
        );
        assert_eq!(s[i], r.map(|k| a[k] as i32).sum::<i32>());
    }
    // dp4a_nibble
    let n = 40usize;
    let q: Vec<i8> = (0..n * 16).map(|i| (i * 53 % 256) as u8 as i8).collect();
    let x: Vec<i8> = (0..n * 16).map(|i| (i * 29 % 256) as u8 as i8).collect();
    let x2: Vec<i8> = (0..n * 16).map(|i| (i * 71 % 256) as u8 as i8).collect();
    let mut params: Vec<Param> = [&q, &x, &x2].map(|v| In(le(v, i8::to_le_bytes))).into();
    params.push(Out(n * 4));
    let out = launch("dp4a_nibble", [2, 1, 1], 32).run(&[("N", n)], params);
    let d = to_i32(&out[3]);
    for i in 0..n {
        let want: i32 = (i * 16..(i + 1) * 16)
            .map(|k| (q[k] as i32 & 15) * x[k] as i32 + ((q[k] as i32 >> 4) & 15) * x2[k] as i32)
            .sum();
        assert_eq!(d[i], want, "nibble {i}");
    }
    // run_store
    let (n, k) = (8usize, 64usize);
    let xv: Vec<f32> = (0..n * k).map(|i| i as f32).collect();
    let params = vec![
        In(f32s(&xv)),
        Out(n * k * 4),
        Out(n * k * 4),
        Value(KernelArg::F32(0.5)),
    ];
    let out =
        launch("run_store", [(n * k / 4 / 64) as u32, 1, 1], 64).run(&[("N", n), ("K", k)], params);
    let (y, y2) = (to_f32(&out[1]), to_f32(&out[2]));
    for i in 0..n * k {
        assert_eq!(y[i], xv[i] * 0.5 + 1.0);
        assert_eq!(y2[i], if i % 4 == 2 { 0.5 } else { 0.0 });
    }
    // run_long
    let n = 50usize;
    let av: Vec<f32> = (0..n * 16).map(|i| i as f32).collect();
    let out = launch("run_long", [2, 1, 1], 32)
        .run(&[("N", n)], vec![In(f32s(&av)), Out(n * 4), Out(n * 64)]);
    let (y, z) = (to_f32(&out[1]), to_f32(&out[2]));
    for i in 0..n {
        assert_eq!(
            y[i],
            av[i * 16..(i + 1) * 16]
                .iter()
                .map(|v| v * 0.5)
                .fold(0.0, |a, b| a + b)
        );
    }
    for i in 0..n * 16 {
        assert_eq!(z[i], av[i] * 2.0);
    }
    // loops
    let n = 70usize;
    let out = launch("loops", [3, 1, 1], 32).run(&[("N", n)], vec![Out(n * 4)]);
    let o = to_i32(&out[0]);
    for i in 0..n as i32 {
        let mut s: i32 = (0..=i).rev().step_by(3).sum();
        for a in 0..3 {
            for b in 0..i % 4 {
                s += a * b;
            }
        }
        if i % 3 == 0 {
            s += 100
        } else if i % 3 == 1 {
            s -= 100
        } else {
            s *= 2
        }
        assert_eq!(o[i as usize], s, "loops {i}");
    }
    // short circuit: 128 threads over N=100
    let n = 100usize;
    let av: Vec<f32> = (0..n).map(|i| (i as f32) - 50.0).collect();
    let out =
        launch("short_circuit", [2, 1, 1], 64).run(&[("N", n)], vec![In(f32s(&av)), Out(n * 4)]);
    let o = to_i32(&out[1]);
    for i in 0..n {
        let mut w = 0;
        if av[i] > 0.0 {
            w = 1
        }
        if av[i] < -5.0 {
            w = 2
        }
        assert_eq!(o[i], w, "sc {i}");
    }
}

fn f16b(x: f32) -> u16 {
    // round-to-nearest-even via f64 search of nearest half (small range)
    let mut best = 0u16;
    let mut bd = f64::MAX;
    for b in 0..=0xffffu16 {
        let v = h2f(b);
        if v.is_finite() {
            let d = (v as f64 - x as f64).abs();
            if d < bd || (d == bd && b & 1 == 0) {
                bd = d;
                best = b;
            }
        }
    }
    best
}
fn h2f(b: u16) -> f32 {
    let s = if b & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((b >> 10) & 31) as i32;
    let m = (b & 1023) as f32;
    if e == 0 {
        s * m * 2f32.powi(-24)
    } else if e == 31 {
        if m == 0.0 {
            s * f32::INFINITY
        } else {
            f32::NAN
        }
    } else {
        s * (1.0 + m / 1024.0) * 2f32.powi(e - 15)
    }
}
fn bf(x: f32) -> u16 {
    let b = x.to_bits();
    ((b.wrapping_add(0x7fff + ((b >> 16) & 1))) >> 16) as u16
}
fn bf2f(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

#[test]
fn types() {
    let n = 300usize;
    let a: Vec<i8> = (0..n).map(|i| (i * 37 % 256) as u8 as i8).collect();
    let b: Vec<u8> = (0..n).map(|i| (i * 91 % 256) as u8).collect();
    let params = vec![
        In(le(&a, i8::to_le_bytes)),
        In(b.clone()),
        Out(n),
        Out(n),
        Out(n * 4),
    ];
    let out = launch("types_i8_u8", [10, 1, 1], 32).run(&[("N", n)], params);
    let (s, u, w) = (&out[2], &out[3], to_i32(&out[4]));
    for i in 0..n {
        assert_eq!(s[i] as i8, a[i].wrapping_mul(3).wrapping_add(100), "S {i}");
        assert_eq!(u[i], b[i].wrapping_mul(7).wrapping_add(200), "U {i}");
        assert_eq!(
            w[i],
            a[i] as i32 + b[i] as i32 + (a[i] >> 2) as i32 + (b[i] >> 3) as i32,
            "W {i}"
        );
    }
    // f16
    let n = 500usize;
    let av: Vec<u16> = (0..n).map(|i| f16b((i as f32 - 250.0) * 0.37)).collect();
    let bv: Vec<u16> = (0..n).map(|i| f16b((i % 17) as f32 * 0.13)).collect();
    let out = launch("types_f16", [4, 1, 1], 128).run(&[("N", n)], halves_params(&av, &bv, n));
    let o = to_u16(&out[2]);
    for i in 0..n {
        let p = f16b(h2f(av[i]) * h2f(bv[i]));
        let want = f16b(h2f(p) + 1.5);
        assert_eq!(o[i], want, "f16 {i}");
    }
    // bf16
    let n = 300usize;
    let av: Vec<u16> = (0..n).map(|i| bf((i as f32 - 150.0) * 1.37)).collect();
    let bv: Vec<u16> = (0..n).map(|i| bf((i % 23) as f32 * 3.1)).collect();
    let out = launch("types_bf16", [3, 1, 1], 128).run(&[("N", n)], halves_params(&av, &bv, n));
    let (o, f) = (to_u16(&out[2]), to_f32(&out[3]));
    for i in 0..n {
        assert_eq!(o[i], bf(bf2f(av[i]).max(bf2f(bv[i])) * 2.0), "bf16 {i}");
        assert_eq!(f[i], bf2f(bf(bf2f(av[i]) + bf2f(bv[i]))), "bf16 F {i}");
    }
    // i64
    let n = 100usize;
    let av: Vec<i64> = (0..n).map(|i| (i as i64 - 50) * 123_456_789).collect();
    let a = le(&av, i64::to_le_bytes);
    let params = vec![In(a), Out(n * 8), Out(n * 8), Out(n * 4)];
    let out = launch("types_i64_u64", [4, 1, 1], 32).run(&[("N", n)], params);
    let s = from_le(&out[1], i64::from_le_bytes);
    let u = from_le(&out[2], u64::from_le_bytes);
    let l = to_i32(&out[3]);
    for i in 0..n {
        let a = av[i];
        assert_eq!(
            s[i],
            a.wrapping_mul(a)
                .wrapping_add((i as i64) << 33)
                .wrapping_sub(a / 7)
                .wrapping_add(a % 5),
            "S {i}"
        );
        assert_eq!(u[i], ((a as u64) >> 3) ^ 255);
        assert_eq!(l[i], (a as i32).wrapping_add((a > 0) as i32));
    }
    // elem_word
    let n = 20usize;
    let av: Vec<i8> = (0..n * 16).map(|i| (i * 53 % 256) as u8 as i8).collect();
    let a = le(&av, i8::to_le_bytes);
    let params = vec![In(a), Out(n * 4), Out(n * 16), Out(n * 16)];
    let out = launch("elem_word", [1, 1, 1], 32).run(&[("N", n)], params);
    let (o, s, f) = (to_i32(&out[1]), to_i32(&out[2]), to_f32(&out[3]));
    for i in 0..n {
        let word = |j: usize| {
            i32::from_le_bytes([
                av[i * 16 + 4 * j] as u8,
                av[i * 16 + 4 * j + 1] as u8,
                av[i * 16 + 4 * j + 2] as u8,
                av[i * 16 + 4 * j + 3] as u8,
            ])
        };
        let dp: i32 = (0..4)
            .map(|b| ((word(0) >> (8 * b)) as i8) as i32 * ((word(1) >> (8 * b)) as i8) as i32)
            .sum();
        assert_eq!(
            o[i],
            av[i * 16 + 3] as i32 + dp + word(3).wrapping_mul(0).wrapping_add(word(2)),
            "O {i}"
        );
        assert_eq!(&s[i * 4..i * 4 + 4], &[word(3), word(2), word(1), word(0)]);
        assert_eq!(f[i * 4], word(0).count_ones() as f32);
    }
}

/// The parameters of the half-type kernels: halves `A` and `B` in, `n`
/// halves `O` and `n` f32 `F` out.
fn halves_params(a: &[u16], b: &[u16], n: usize) -> Vec<Param> {
    let (a, b) = (le(a, u16::to_le_bytes), le(b, u16::to_le_bytes));
    vec![In(a), In(b), Out(n * 2), Out(n * 4)]
}

#[test]
fn more_kernels() {
    // run_f16: 8 halves per lane per step, summed in f16.
    let (n, k) = (10usize, 512usize);
    let w: Vec<u16> = (0..n * k).map(|i| f16b(((i % 7) as f32) * 0.25)).collect();
    let params = vec![In(le(&w, u16::to_le_bytes)), Out(n * 4)];
    let out =
        launch("run_f16", [n.div_ceil(4) as u32, 1, 1], 128).run(&[("N", n), ("K", k)], params);
    let y = to_f32(&out[1]);
    for r in 0..n {
        let want: f32 = (0..k).map(|c| h2f(w[r * k + c])).sum();
        assert!(
            (y[r] - want).abs() < 0.5,
            "run_f16 row {r}: {} vs {want}",
            y[r]
        );
    }
    // cta_softmax
    let (n, m) = (4usize, 1000usize);
    let x: Vec<f32> = (0..n * m).map(|i| ((i * 13 % 29) as f32) * 0.1).collect();
    let out = launch("cta_softmax", [n as u32, 1, 1], 256)
        .run(&[("N", n), ("M", m)], vec![In(f32s(&x)), Out(n * m * 4)]);
    let y = to_f32(&out[1]);
    for r in 0..n {
        let row = &x[r * m..(r + 1) * m];
        let mx = row.iter().cloned().fold(f32::MIN, f32::max);
        let s: f32 = row.iter().map(|v| (v - mx).exp()).sum();
        for c in 0..m {
            let want = (row[c] - mx).exp() / s;
            assert!((y[r * m + c] - want).abs() < 1e-5, "softmax {r} {c}");
        }
    }
    // grid_2d
    let (n, m) = (50usize, 70usize);
    let a: Vec<f32> = (0..n * m).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n * m).map(|i| (i % 9) as f32).collect();
    let grid = [m.div_ceil(32) as u32, n.div_ceil(8) as u32, 1];
    let params = vec![In(f32s(&a)), In(f32s(&b)), Out(n * m * 4)];
    let out = launch("grid_2d", grid, 256).run(&[("N", n), ("M", m)], params);
    let c = to_f32(&out[2]);
    for i in 0..n * m {
        assert_eq!(c[i], a[i] + 2.0 * b[i]);
    }
    // tile_i8: a byte tile read as 16-byte runs into dp4a.
    let n = 70usize;
    let q: Vec<u8> = (0..n * 64).map(|i| (i * 37 % 256) as u8).collect();
    let v: Vec<u8> = (0..64).map(|i| (i * 11 % 256) as u8).collect();
    let params = vec![In(q.clone()), In(v.clone()), Out(n * 4)];
    let out = launch("tile_i8", [n.div_ceil(64) as u32, 1, 1], 64).run(&[("N", n)], params);
    let y = to_i32(&out[2]);
    for r in 0..n {
        let want: i32 = (0..64)
            .map(|k| q[r * 64 + k] as i8 as i32 * v[k] as i8 as i32)
            .sum();
        assert_eq!(y[r], want, "tile_i8 {r}");
    }
    // autotune_dim: the K = 128 variant.
    let (n, k) = (9usize, 128usize);
    let w: Vec<f32> = (0..n * k).map(|i| (i % 5) as f32).collect();
    let out = launch("autotune_dim__K128", [n.div_ceil(2) as u32, 1, 1], 64)
        .run(&[("N", n), ("K", k)], vec![In(f32s(&w)), Out(n * 4)]);
    let y = to_f32(&out[1]);
    for r in 0..n {
        assert_eq!(
            y[r],
            w[r * k..(r + 1) * k].iter().sum::<f32>(),
            "autotune {r}"
        );
    }
}
