//! Nested `{ }` scopes in an entry's body. PTX scopes the registers and
//! labels declared inside a block to it, and inline assembly relies on
//! that: Triton's mbarrier wait is a block declaring `.reg .pred complete`
//! and the label `waitLoop`, pasted once per wait. The parser tags every
//! statement and register declaration with its scope; [`resolve`] gives
//! each name a nested scope declares a name of its own (`NAME@SCOPE.`, no
//! PTX identifier contains `@`) and rewrites every use to the declaration
//! seen from the use: the innermost enclosing scope that declares it.

use crate::parse::{RawEntry, RawInst, RawOperand, Stmt};

/// What scope `s` declares: registers (name, ranged `%r<N>`) and labels.
#[derive(Default)]
struct Decls {
    regs: Vec<(String, Option<u32>)>,
    labels: Vec<String>,
}

fn renamed(name: &str, scope: u32) -> String {
    format!("{name}@{scope}.")
}

/// Renames the declarations of nested scopes and their uses.
pub(crate) fn resolve(e: &mut RawEntry) {
    let n = e.scope_parents.len();
    if n <= 1 {
        return;
    }
    let mut decls: Vec<Decls> = (0..n).map(|_| Decls::default()).collect();
    for (r, &s) in e.regs.iter_mut().zip(&e.reg_scopes) {
        if s != 0 {
            decls[s as usize].regs.push((r.name.clone(), r.count));
            r.name = renamed(&r.name, s);
        }
    }
    for (st, &s) in e.body.iter_mut().zip(&e.stmt_scopes) {
        if let (Stmt::Label(l, _), true) = (st, s != 0) {
            decls[s as usize].labels.push(l.clone());
            *l = renamed(l, s);
        }
    }
    let parents = &e.scope_parents;
    let lookup = |name: &str, mut s: u32| -> Option<String> {
        while s != 0 {
            let d = &decls[s as usize];
            for (r, count) in &d.regs {
                match count {
                    None if r == name => return Some(renamed(r, s)),
                    Some(c) => {
                        if let Some(i) = name.strip_prefix(r.as_str()) {
                            if i.parse::<u32>().is_ok_and(|i| i < *c) {
                                return Some(format!("{}{i}", renamed(r, s)));
                            }
                        }
                    }
                    None => {}
                }
            }
            if d.labels.iter().any(|l| l == name) {
                return Some(renamed(name, s));
            }
            s = parents[s as usize];
        }
        None
    };
    for (st, &s) in e.body.iter_mut().zip(&e.stmt_scopes) {
        if let Stmt::Inst(i) = st {
            if s != 0 {
                rename_inst(i, |name| lookup(name, s));
            }
        }
    }
}

fn rename_inst(i: &mut RawInst, look: impl Fn(&str) -> Option<String>) {
    let fix = |w: &mut String| {
        if let Some(r) = look(w) {
            *w = r;
        }
    };
    if let Some((g, _)) = &mut i.guard {
        fix(g);
    }
    for o in &mut i.operands {
        match o {
            RawOperand::Word { text, .. } => fix(text),
            RawOperand::Neg(_) => {}
            RawOperand::Pair(a, b) => {
                fix(a);
                fix(b);
            }
            RawOperand::Address { base, .. } => {
                if let Some(b) = base {
                    fix(b);
                }
            }
            RawOperand::Vector(items) => items.iter_mut().for_each(fix),
            RawOperand::TensorAddr { base, coords } => {
                fix(base);
                coords.iter_mut().for_each(fix);
            }
        }
    }
}
