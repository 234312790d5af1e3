//! Minimization: shrink a program while its finding keeps the same kind
//! (mismatch, failed or rejected). Candidates: delete a statement, replace
//! an `if`/`for` by its body, replace an expression by one of its operands
//! of the same type. A candidate the compiler rejects (for a mismatch) or
//! the evaluator refuses is dropped, so every step stays a valid program.

use crate::diff::{self, RunOptions, Verdict};
use crate::program::{Program, St, E};

/// Shrink `p` (found with input seed `seed`) while `run` gives a finding
/// of the same kind. Returns the smallest program found and its verdict.
pub fn minimize(p: &Program, seed: u64, opts: &RunOptions) -> (Program, Verdict) {
    let first = diff::run(p, seed, opts);
    let kind = first.kind();
    // A rejection must stay the same rejection: shrinking a program until
    // it is just any error says nothing.
    let same = |v: &Verdict| match (&first, v) {
        (Verdict::Rejected(a), Verdict::Rejected(b)) => a == b,
        _ => v.kind() == kind,
    };
    let mut best = (p.clone(), first.clone());
    let mut progress = true;
    while progress {
        progress = false;
        let mut i = 0;
        while let Some(c) = candidate(&best.0, i) {
            i += 1;
            let v = diff::run(&c, seed, opts);
            if same(&v) {
                best = (c, v);
                progress = true;
                // Candidate numbering changed; start over on the smaller program.
                i = 0;
            }
        }
    }
    best
}

/// The `i`-th one-step reduction of `p`, or `None` past the last.
fn candidate(p: &Program, i: usize) -> Option<Program> {
    let mut n = i;
    let mut q = p.clone();
    if shrink_block(&mut q.body, &mut n) {
        Some(q)
    } else {
        None
    }
}

/// Apply reduction number `n` inside `b`; `n` counts down across the tree.
fn shrink_block(b: &mut Vec<St>, n: &mut usize) -> bool {
    for k in 0..b.len() {
        if *n == 0 {
            b.remove(k);
            return true;
        }
        *n -= 1;
        let inner = match &b[k] {
            St::If { then, els, .. } => Some(then.iter().chain(els).cloned().collect::<Vec<_>>()),
            St::For { body, .. } => Some(body.clone()),
            _ => None,
        };
        if let Some(inner) = inner {
            if *n == 0 {
                b.splice(k..=k, inner);
                return true;
            }
            *n -= 1;
        }
        let done = match &mut b[k] {
            St::Let { init: e, .. } | St::Assign { value: e, .. } | St::Other(e) => {
                shrink_expr(e, n)
            }
            St::If { cond, then, els } => {
                shrink_expr(cond, n) || shrink_block(then, n) || shrink_block(els, n)
            }
            St::For { body, .. } => shrink_block(body, n),
        };
        if done {
            return true;
        }
    }
    false
}

/// Replace some sub-expression by one of its own operands of its type.
fn shrink_expr(e: &mut E, n: &mut usize) -> bool {
    let same: Vec<usize> = (0..e.kids.len())
        .filter(|k| e.kids[*k].ty == e.ty)
        .collect();
    for k in same {
        if *n == 0 {
            *e = e.kids[k].clone();
            return true;
        }
        *n -= 1;
    }
    e.kids.iter_mut().any(|k| shrink_expr(k, n))
}
