//! `phobos report` prints each access's line and bytes per instruction from
//! the metadata (`VariantMeta::loads`). Those claims must be what the PTX
//! does: for every corpus kernel, every variant and every target, each
//! access claimed at a line has a load, store or atomic (`atom`/`red`) of
//! exactly the claimed width, in its state space, under that line's `.loc`,
//! and no memory instruction of that kind at that line is wider than every
//! claim there.

use phobos_conformance::{compile, corpus};
use phobos_core::meta::{AccessMeta, KernelMeta};
use std::collections::BTreeMap;

/// What a memory instruction does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Load,
    Store,
    Atomic,
}

/// One memory instruction of the PTX: (kind, state space, bytes).
type Instr = (Kind, &'static str, u32);

/// The global and shared loads and stores of `entry`, by `.loc` line.
fn instructions(ptx: &str, entry: &str) -> BTreeMap<u32, Vec<Instr>> {
    let mut out: BTreeMap<u32, Vec<Instr>> = BTreeMap::new();
    let mut inside = false;
    let mut line = 0;
    for l in ptx.lines().map(str::trim) {
        if l.starts_with(".visible .entry") || l.starts_with(".entry") {
            inside = l.contains(&format!("{entry}("));
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(rest) = l.strip_prefix(".loc") {
            line = rest
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            continue;
        }
        let op = match l.strip_prefix('@') {
            Some(rest) => rest.split_once(' ').map_or("", |(_, op)| op),
            None => l,
        };
        let op = op.split_whitespace().next().unwrap_or("");
        let parts: Vec<&str> = op.split('.').collect();
        let kind = match parts.first() {
            Some(&"ld") => Kind::Load,
            Some(&"st") => Kind::Store,
            Some(&"atom") | Some(&"red") => Kind::Atomic,
            _ => continue,
        };
        let space = match parts.get(1) {
            Some(&"global") => "global",
            Some(&"shared") => "shared",
            Some(&"local") => "local",
            _ => continue,
        };
        let lanes = parts
            .iter()
            .find_map(|p| p.strip_prefix('v').and_then(|n| n.parse::<u32>().ok()))
            .unwrap_or(1);
        let bits = parts
            .last()
            .and_then(|p| p.get(1..))
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or_else(|| panic!("no type on `{l}`"));
        out.entry(line)
            .or_default()
            .push((kind, space, lanes * bits / 8));
    }
    out
}

fn space_of(meta: &KernelMeta, a: &AccessMeta) -> &'static str {
    if meta.params.iter().any(|p| p.name == a.target) {
        "global"
    } else if meta
        .variants
        .iter()
        .any(|v| v.arrays.iter().any(|arr| arr.local && arr.name == a.target))
    {
        "local"
    } else {
        "shared"
    }
}

#[test]
fn report_widths_and_lines_match_the_emitted_ptx_for_the_whole_corpus() {
    let mut checked = 0;
    for file in corpus() {
        for arch in file.arches() {
            for k in compile(&file, arch) {
                for v in &k.meta.variants {
                    let ins = instructions(&k.ptx, &v.entry);
                    let mut widest: BTreeMap<(u32, Kind, &str), u32> = BTreeMap::new();
                    for a in &v.loads {
                        let space = space_of(&k.meta, a);
                        let what = format!(
                            "{}:{}: {} {} of `{}` claimed {} bytes",
                            file.name,
                            a.line,
                            v.entry,
                            if a.atomic {
                                "atomic"
                            } else if a.store {
                                "store"
                            } else {
                                "load"
                            },
                            a.target,
                            a.width_bytes
                        );
                        assert!(a.width_bytes > 0, "{what}: {}", a.reason);
                        let here = ins.get(&a.line).cloned().unwrap_or_default();
                        let kind = match (a.atomic, a.store) {
                            (true, _) => Kind::Atomic,
                            (false, true) => Kind::Store,
                            (false, false) => Kind::Load,
                        };
                        assert!(
                            here.contains(&(kind, space, a.width_bytes)),
                            "{what}, but line {} has {here:?}",
                            a.line
                        );
                        let w = widest.entry((a.line, kind, space)).or_default();
                        *w = (*w).max(a.width_bytes);
                        checked += 1;
                    }
                    for ((line, kind, space), w) in widest {
                        for i in ins.get(&line).into_iter().flatten() {
                            assert!(
                                !(i.0 == kind && i.1 == space && i.2 > w),
                                "{}:{line}: {} has {i:?}, wider than the {w} bytes claimed",
                                file.name,
                                v.entry
                            );
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 500, "only {checked} accesses checked");
}

#[test]
fn a_one_element_store_into_a_run_reports_one_element_per_instruction() {
    let src = "@launch(32)
kernel k(A: tensor<f32>[32, 4], C: tensor<f32>[32, 4]) {
  let r = ctx.thread
  store(C[r, 0 :+ 4], 2, A[r, 1])
}
";
    let k = &phobos_conformance::sim_support::compile_src(src, "k.pho")[0];
    let store = k.meta.variants[0]
        .loads
        .iter()
        .find(|a| a.store)
        .expect("a store");
    assert_eq!(store.width_bytes, 4, "{store:?}");
    assert!(store.reason.contains("one element"), "{store:?}");
    assert!(k.ptx.contains("st.global.f32"), "{}", k.ptx);
    assert!(!k.ptx.contains("st.global.v4"), "{}", k.ptx);
}
