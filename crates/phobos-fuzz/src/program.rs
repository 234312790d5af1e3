//! The generated program as a small tree that renders to `.pho` text and
//! that the minimizer can shrink: statements can be deleted and unwrapped,
//! expressions replaced by one of their operands of the same type or by a
//! literal. Types are kept on every expression so each replacement is
//! type-correct; whether a shrunk program still checks is decided by the
//! compiler itself.

use phobos_core::ast::ScalarTy;
use std::fmt::Write;

/// An expression: text pieces around typed sub-expressions,
/// `parts[0] kids[0] parts[1] ... kids[n-1] parts[n]`.
#[derive(Clone, Debug, PartialEq)]
pub struct E {
    pub ty: ScalarTy,
    pub parts: Vec<String>,
    pub kids: Vec<E>,
}

impl E {
    pub fn leaf(ty: ScalarTy, text: impl Into<String>) -> E {
        E {
            ty,
            parts: vec![text.into()],
            kids: vec![],
        }
    }

    /// `parts` must have one more element than `kids`.
    pub fn node(ty: ScalarTy, parts: &[&str], kids: Vec<E>) -> E {
        debug_assert_eq!(parts.len(), kids.len() + 1);
        E {
            ty,
            parts: parts.iter().map(|s| s.to_string()).collect(),
            kids,
        }
    }

    pub fn render(&self, out: &mut String) {
        for (i, p) in self.parts.iter().enumerate() {
            out.push_str(p);
            if let Some(k) = self.kids.get(i) {
                k.render(out);
            }
        }
    }

    pub fn text(&self) -> String {
        let mut s = String::new();
        self.render(&mut s);
        s
    }

    pub fn size(&self) -> usize {
        1 + self.kids.iter().map(E::size).sum::<usize>()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum St {
    /// `let`/`var name[: ty] = init`.
    Let {
        name: String,
        mutable: bool,
        annotate: bool,
        init: E,
    },
    Assign {
        name: String,
        value: E,
    },
    If {
        cond: E,
        then: Vec<St>,
        els: Vec<St>,
    },
    For {
        var: String,
        start: E,
        end: E,
        step: i32,
        body: Vec<St>,
    },
    /// Any other statement, written around typed holes (stores, tile
    /// copies, tile writes).
    Other(E),
}

/// A tensor parameter: `name: tensor<elem>[dim]`.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorParam {
    pub name: String,
    pub elem: ScalarTy,
    pub dim: String,
    pub written: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The kernel's name (`fz`, or one drawn by `gen::Features::awkward_names`).
    pub kernel: String,
    pub threads: u32,
    pub grid: u32,
    pub fns: Vec<String>,
    /// `@autotune(U in [...])`, and the value the run uses.
    pub autotune: Option<(Vec<i64>, i64)>,
    pub tensors: Vec<TensorParam>,
    pub scalars: Vec<(String, ScalarTy)>,
    /// Values of the named dims at launch, e.g. `("N", 1037)`.
    pub dims: Vec<(String, i64)>,
    /// `@aligned(N = 8, ...)`: the dims' promised multiples.
    pub aligned: Vec<(String, i64)>,
    pub body: Vec<St>,
}

/// Slots each thread owns in every `O` output.
pub const SLOTS: u32 = 8;

impl Program {
    pub fn render(&self) -> String {
        let mut s = String::new();
        for f in &self.fns {
            let _ = writeln!(s, "{f}");
        }
        let _ = writeln!(s, "@launch({})", self.threads);
        let _ = writeln!(s, "@grid({})", self.grid);
        if !self.aligned.is_empty() {
            let a: Vec<String> = self
                .aligned
                .iter()
                .map(|(d, m)| format!("{d} = {m}"))
                .collect();
            let _ = writeln!(s, "@aligned({})", a.join(", "));
        }
        if let Some((vals, _)) = &self.autotune {
            let v: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
            let _ = writeln!(s, "@autotune(U in [{}])", v.join(", "));
        }
        let mut params: Vec<String> = self
            .tensors
            .iter()
            .map(|t| format!("{}: tensor<{}>[{}]", t.name, t.elem.name(), t.dim))
            .collect();
        params.extend(
            self.scalars
                .iter()
                .map(|(n, t)| format!("{n}: {}", t.name())),
        );
        let _ = writeln!(s, "kernel {}({}) {{", self.kernel, params.join(", "));
        render_block(&self.body, 1, &mut s);
        s.push_str("}\n");
        s
    }

    /// Statements in the whole body, nested ones included.
    pub fn size(&self) -> usize {
        fn count(b: &[St]) -> usize {
            b.iter()
                .map(|s| match s {
                    St::If { then, els, .. } => 1 + count(then) + count(els),
                    St::For { body, .. } => 1 + count(body),
                    _ => 1,
                })
                .sum()
        }
        count(&self.body)
    }
}

fn render_block(b: &[St], depth: usize, s: &mut String) {
    let pad = "  ".repeat(depth);
    for st in b {
        match st {
            St::Let {
                name,
                mutable,
                annotate,
                init,
            } => {
                let kw = if *mutable { "var" } else { "let" };
                let ann = if *annotate {
                    format!(": {}", init.ty.name())
                } else {
                    String::new()
                };
                let _ = writeln!(s, "{pad}{kw} {name}{ann} = {}", init.text());
            }
            St::Assign { name, value } => {
                let _ = writeln!(s, "{pad}{name} = {}", value.text());
            }
            St::If { cond, then, els } => {
                let _ = writeln!(s, "{pad}if {} {{", cond.text());
                render_block(then, depth + 1, s);
                if els.is_empty() {
                    let _ = writeln!(s, "{pad}}}");
                } else {
                    let _ = writeln!(s, "{pad}}} else {{");
                    render_block(els, depth + 1, s);
                    let _ = writeln!(s, "{pad}}}");
                }
            }
            St::For {
                var,
                start,
                end,
                step,
                body,
            } => {
                let _ = writeln!(
                    s,
                    "{pad}for {var} in range({}, {}, {step}) {{",
                    start.text(),
                    end.text()
                );
                render_block(body, depth + 1, s);
                let _ = writeln!(s, "{pad}}}");
            }
            St::Other(e) => {
                let _ = writeln!(s, "{pad}{}", e.text());
            }
        }
    }
}
