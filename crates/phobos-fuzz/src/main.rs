//! `cargo run --release -p phobos-fuzz -- --seed S --count N`
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |flag: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (seed, count) = (get("--seed", 0), get("--count", 100));
    let feat = phobos_fuzz::gen::Features::default();
    let opts = phobos_fuzz::diff::RunOptions::default();
    let mut bad = 0;
    let mut undefined = 0;
    for i in 0..count {
        let s = seed.wrapping_add(i);
        let p = phobos_fuzz::gen::generate(s, &feat);
        let v = phobos_fuzz::diff::run(&p, s, &opts);
        if matches!(v, phobos_fuzz::diff::Verdict::Undefined(_)) { undefined += 1; }
        if v.is_finding() {
            bad += 1;
            println!("seed {s}: {v:?}\n{}", p.render());
        }
    }
    eprintln!("{undefined} undefined");
    println!("{count} programs, {bad} mismatches");
    if bad > 0 { std::process::exit(1); }
}
