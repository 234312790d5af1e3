//! `cargo bench -p phobos-core --bench check`: lex, parse and check a
//! generated file of 10,000 lines and print a table of the times. The goal
//! is under 50 ms for the whole check on a 2-core machine. Plain
//! `std::time`, no benchmark framework.

use std::time::{Duration, Instant};

const LINES: usize = 10_000;
const RUNS: usize = 25;

/// One kernel of 27 lines that exercises every pass: a fn, runs, a loop,
/// lane and CTA collectives, shuffles, reduce and uniformity.
fn kernel(i: usize) -> String {
    format!(
        "fn scale{i}(a, b) = a * b + 1.0

@launch(128)
@aligned(K = 4)
kernel k{i}(W: tensor<f32>[N, K], x: tensor<f32>[1, K], y: tensor<f32>[1, N], B: tensor<i8>[N, K], alpha: f32) {{
  let row = ctx.block.x * ctx.warps + ctx.warp
  var acc: f32 = 0.0
  var bytes: i32 = 0
  if row < N {{
    for k in range(0, K, ctx.lanes * 4) {{
      let at = k + ctx.lane * 4
      acc += sum(W[row, at :+ 4] * x[0, at :+ 4])
      bytes += sum(i32(B[row, at :+ 4]))
      if at > 8 {{
        acc = max(acc, scale{i}(alpha, f32(bytes)))
      }}
    }}
  }}
  let total = sum<over ctx.lane>(acc)
  let peak = reduce<over ctx.lane>(acc, mx)
  let far = shfl<xor 16>(total) + shfl<down 1>(peak)
  let cta = sum<over ctx.thread>(far)
  if ctx.lane == 0 && row < N {{
    y[0, row] = total + cta * alpha
  }}
}}
"
    )
}

fn generate() -> String {
    let mut src = String::from("fn mx(a, b) = max(a, b)\n");
    let mut lines = 1;
    let mut i = 0;
    while lines < LINES {
        let k = kernel(i);
        lines += k.lines().count();
        src.push_str(&k);
        i += 1;
    }
    src
}

struct Stats {
    min: Duration,
    median: Duration,
    max: Duration,
    /// Median CPU time of this thread, when Linux reports it: on a busy
    /// machine wall time includes waiting for a core, CPU time does not.
    cpu_median: Option<Duration>,
}

/// This thread's time on a CPU so far, from `/proc/thread-self/schedstat`.
#[allow(clippy::disallowed_methods)] // The bench reads its own clock, not user input.
fn cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

fn measure(mut f: impl FnMut()) -> Stats {
    f();
    let mut times = Vec::with_capacity(RUNS);
    let mut cpu = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (t, c) = (Instant::now(), cpu_time());
        f();
        times.push(t.elapsed());
        cpu.push(cpu_time().zip(c).map(|(b, a)| b.saturating_sub(a)));
    }
    times.sort();
    let mut cpu: Option<Vec<Duration>> = cpu.into_iter().collect();
    if let Some(c) = cpu.as_mut() {
        c.sort();
    }
    Stats {
        min: times[0],
        median: times[RUNS / 2],
        max: times[RUNS - 1],
        cpu_median: cpu.map(|c| c[RUNS / 2]),
    }
}

fn ms(d: Duration) -> String {
    format!("{:9.2}", d.as_secs_f64() * 1e3)
}

fn main() {
    let src = generate();
    let lines = src.lines().count();
    let (kernels, diags) = phobos_core::check_source(&src);
    assert!(
        diags.is_empty(),
        "the generated file must check clean: {:?}",
        diags.first()
    );
    let (file, _) = phobos_core::parser::parse(&src);
    let rows = [
        ("lex", measure(|| drop(phobos_core::lexer::lex(&src)))),
        (
            "lex + parse",
            measure(|| drop(phobos_core::parser::parse(&src))),
        ),
        (
            "check (AST → HIR)",
            measure(|| drop(phobos_core::check::check_file(&file, &src))),
        ),
        (
            "check_source (all)",
            measure(|| drop(phobos_core::check_source(&src))),
        ),
    ];
    println!(
        "phobos-core check benchmark: {lines} lines, {} bytes, {} kernels, {RUNS} runs",
        src.len(),
        kernels.len()
    );
    println!();
    println!("| stage              |   min ms | median ms |   max ms | CPU median ms |");
    println!("|--------------------|----------|-----------|----------|---------------|");
    for (name, s) in &rows {
        let cpu = s.cpu_median.map_or("      n/a".to_string(), ms);
        println!(
            "| {name:<18} |{} | {} |{} |     {cpu} |",
            ms(s.min),
            ms(s.median),
            ms(s.max)
        );
    }
    let total = &rows[3].1;
    let best = total.cpu_median.unwrap_or(total.median).min(total.median);
    let verdict = if best < Duration::from_millis(50) {
        "within"
    } else {
        "OVER"
    };
    println!();
    println!(
        "whole check: median {} ms wall, {} ms CPU; {verdict} the 50 ms goal",
        ms(total.median).trim(),
        total
            .cpu_median
            .map_or("n/a".to_string(), |c| ms(c).trim().to_string())
    );
}
