//! Calls: conversions (`f32(x)`), the math and run built-ins, run sums
//! `sum(e)`, and `fn` items, which are inlined at each call with their
//! parameters bound to the checked arguments (so a fn is generic: its
//! type follows its arguments).

use super::consts::const_int;
use super::cx::{elem_of, mk, Binding, Cx, Ex, MAX_INLINE_DEPTH};
use super::error::{CallError, FnError, SubscriptError, TypeError};
use super::types::{has_float_literal, is_untyped};
use crate::ast::{self, FnItem, Ident, ScalarTy, Span};
use crate::hir::{self, Builtin, LocalKind, Ty};

/// How a built-in's arguments are typed.
#[derive(Clone, Copy)]
enum Sig {
    /// All arguments share one numeric type; the result has it.
    Numeric(usize),
    /// All arguments share one float type.
    Float(usize),
    /// All arguments share one integer type.
    Int(usize),
}

fn builtin(name: &str) -> Option<(Builtin, Sig)> {
    use Builtin::*;
    Some(match name {
        "min" => (Min, Sig::Numeric(2)),
        "max" => (Max, Sig::Numeric(2)),
        "abs" => (Abs, Sig::Numeric(1)),
        "sqrt" => (Sqrt, Sig::Float(1)),
        "rsqrt" => (Rsqrt, Sig::Float(1)),
        "exp" => (Exp, Sig::Float(1)),
        "exp2" => (Exp2, Sig::Float(1)),
        "log" => (Log, Sig::Float(1)),
        "log2" => (Log2, Sig::Float(1)),
        "sin" => (Sin, Sig::Float(1)),
        "cos" => (Cos, Sig::Float(1)),
        "tanh" => (Tanh, Sig::Float(1)),
        "fma" => (Fma, Sig::Float(3)),
        "floor" => (Floor, Sig::Float(1)),
        "ceil" => (Ceil, Sig::Float(1)),
        "cdiv" => (Cdiv, Sig::Int(2)),
        _ => return None,
    })
}

/// Names a `fn` item may not take.
pub(crate) fn is_builtin_name(name: &str) -> bool {
    builtin(name).is_some()
        || super::atomics::is_atomic_name(name)
        || ScalarTy::from_name(name).is_some()
        || matches!(
            name,
            "select"
                | "dot"
                | "trans"
                | "dp4a"
                | "byteperm"
                | "popcount"
                | "elem"
                | "word"
                | "store"
                | "sum"
                | "any"
                | "all"
                | "argmax"
                | "reduce"
                | "shfl"
                | "range"
                | "ctx"
        )
}

/// A call as written, with the type its context wants: what the checks of
/// a built-in or `fn` call take.
#[derive(Clone, Copy)]
struct Call<'a> {
    callee: &'a Ident,
    args: &'a [ast::Expr],
    want: Option<ScalarTy>,
    span: Span,
}

impl Cx<'_> {
    pub fn call(
        &mut self,
        callee: &Ident,
        args: &[ast::Expr],
        want: Option<ScalarTy>,
        span: Span,
    ) -> Ex {
        let c = Call {
            callee,
            args,
            want,
            span,
        };
        let name = callee.name.as_str();
        if let Some(t) = ScalarTy::from_name(name) {
            return self.convert(t, args, span);
        }
        if let Some((b, sig)) = builtin(name) {
            return self.math(b, sig, c);
        }
        match name {
            "dot" | "trans" => self.dot_in_expr(name, span),
            "select" => self.select(c),
            "dp4a" => self.dp4a(callee, args, span),
            "byteperm" => self.byteperm(c),
            "popcount" => self.popcount(callee, args, span),
            "sum" => self.run_sum(callee, args, span),
            _ if super::atomics::is_atomic_name(name) => {
                self.atomic_in_expr(callee, span);
                None
            }
            "elem" | "word" => self.elem_or_word(callee, args, span),
            "store" => {
                self.report(CallError::StoreAsValue { span });
                None
            }
            "any" | "all" | "argmax" | "reduce" | "shfl" => {
                self.report(CallError::NoConfig {
                    name: name.to_string(),
                    span: callee.span,
                });
                None
            }
            _ => self.call_fn(c),
        }
    }

    pub fn arity(&mut self, callee: &Ident, args: &[ast::Expr], n: usize, span: Span) -> bool {
        self.arity_hinted(callee, args, n, span, false)
    }

    /// [`Cx::arity`]; `reduce_hint` adds how `reduce` is written.
    pub fn arity_hinted(
        &mut self,
        callee: &Ident,
        args: &[ast::Expr],
        n: usize,
        span: Span,
        reduce_hint: bool,
    ) -> bool {
        if args.len() == n {
            return true;
        }
        self.report(CallError::Arity {
            callee: callee.name.clone(),
            want: n,
            found: args.len(),
            span,
            reduce_hint,
        });
        false
    }

    fn convert(&mut self, t: ScalarTy, args: &[ast::Expr], span: Span) -> Ex {
        if args.len() != 1 {
            self.report(CallError::ConvertArity {
                to: t,
                found: args.len(),
                span,
            });
            return None;
        }
        // An untyped literal takes the target type, except a float literal
        // converted to an integer (`i32(-1.5)`): that one is a float,
        // converted like any other.
        let float_to_int = t.is_int() && has_float_literal(&args[0]);
        let want = if is_untyped(&args[0]) && !float_to_int {
            Some(t)
        } else {
            None
        };
        let x = self.expr(&args[0], want)?;
        let from = elem_of(x.ty)?;
        if t == ScalarTy::Bool && from != ScalarTy::Bool {
            self.report(CallError::ConvertToBool { from, span });
            return None;
        }
        if t.is_f8() && from == ScalarTy::F64 {
            self.report(TypeError::F8FromF64 { to: t, span });
            return None;
        }
        let ty = match x.ty {
            Ty::Run { len, .. } => Ty::Run { elem: t, len },
            _ => Ty::Scalar(t),
        };
        if x.ty == ty {
            return Some(hir::Expr { span, ..x });
        }
        Some(mk(hir::ExprKind::Convert(Box::new(x)), ty, span))
    }

    /// Check arguments that share one scalar type: typed ones first, so
    /// untyped literals among them take that type. With `runs`, each may
    /// also be a run of that type (the elementwise built-ins): the runs
    /// have one length (P0505) and a scalar among them is broadcast.
    fn same_type_args(
        &mut self,
        args: &[ast::Expr],
        want: Option<ScalarTy>,
        runs: bool,
    ) -> Option<Vec<hir::Expr>> {
        let mut out: Vec<Option<hir::Expr>> = vec![None; args.len()];
        let mut common = None;
        for (i, a) in args.iter().enumerate().filter(|(_, a)| !is_untyped(a)) {
            out[i] = self.arg_expr(a, common.or(want), runs);
            common = common.or_else(|| out[i].as_ref().and_then(|x| elem_of(x.ty)));
        }
        let lit_want = common
            .or(want)
            .or_else(|| args.first().map(super::types::literal_default));
        for (i, a) in args.iter().enumerate().filter(|(_, a)| is_untyped(a)) {
            out[i] = self.arg_expr(a, lit_want, runs);
        }
        let out: Option<Vec<_>> = out.into_iter().collect();
        let out = out?;
        let first = out.first().and_then(|x| elem_of(x.ty));
        if let Some(bad) = out.iter().find(|x| elem_of(x.ty) != first) {
            self.report(CallError::ArgTypes {
                first,
                found: bad.ty,
                span: bad.span,
            });
            return None;
        }
        self.run_len(&out)?;
        Some(out)
    }

    /// One argument: a scalar, or with `runs` a scalar or a run.
    fn arg_expr(&mut self, e: &ast::Expr, want: Option<ScalarTy>, runs: bool) -> Ex {
        if runs {
            self.expr(e, want)
        } else {
            self.scalar_expr(e, want)
        }
    }

    /// The length of the runs among the arguments of an elementwise
    /// built-in (`Some(None)` when all are scalars), or P0505 when two
    /// runs differ in length.
    pub(crate) fn run_len(&mut self, xs: &[hir::Expr]) -> Option<Option<u32>> {
        let mut first: Option<(u32, Span)> = None;
        for x in xs {
            let Ty::Run { len, .. } = x.ty else { continue };
            match first {
                None => first = Some((len, x.span)),
                Some((l0, s0)) if l0 != len => {
                    self.report(SubscriptError::ArgRunLengths {
                        first: l0,
                        first_span: s0,
                        len,
                        span: x.span,
                    });
                    return None;
                }
                Some(_) => {}
            }
        }
        Some(first.map(|(l, _)| l))
    }

    fn math(&mut self, b: Builtin, sig: Sig, c: Call) -> Ex {
        let (callee, args, want, span) = (c.callee, c.args, c.want, c.span);
        let n = match sig {
            Sig::Numeric(n) | Sig::Float(n) | Sig::Int(n) => n,
        };
        if !self.arity(callee, args, n, span) {
            return None;
        }
        let want = match sig {
            Sig::Float(_) => want.filter(|t| t.is_float()).or(Some(ScalarTy::F32)),
            _ => want,
        };
        let xs = self.same_type_args(args, want, true)?;
        let t = elem_of(xs[0].ty)?;
        if t.is_f8() {
            self.report(TypeError::F8Operation {
                what: format!("`{}`", callee.name),
                ty: t,
                span,
            });
            return None;
        }
        let ok = match sig {
            Sig::Numeric(_) => t.is_int() || t.is_float(),
            Sig::Float(_) => t.is_float(),
            Sig::Int(_) => t.is_int(),
        };
        if !ok {
            let kind = match sig {
                Sig::Numeric(_) => "numbers",
                Sig::Float(_) => "floats",
                Sig::Int(_) => "integers",
            };
            self.report(CallError::MathArg {
                callee: callee.name.clone(),
                kind,
                found: t,
                span,
            });
            return None;
        }
        let ty = run_or_scalar(t, self.run_len(&xs)?);
        Some(mk(hir::ExprKind::Builtin(b, xs), ty, span))
    }

    fn select(&mut self, c: Call) -> Ex {
        let (callee, args, want, span) = (c.callee, c.args, c.want, c.span);
        if !self.arity(callee, args, 3, span) {
            return None;
        }
        let c = self.select_cond(&args[0]);
        let ab = self.same_type_args(&args[1..], want, true);
        let (c, ab) = (c?, ab?);
        let t = elem_of(ab[0].ty)?;
        let mut xs = vec![c];
        xs.extend(ab);
        // The condition's run, if any, has the arms' length too.
        let ty = run_or_scalar(t, self.run_len(&xs)?);
        Some(mk(hir::ExprKind::Builtin(Builtin::Select, xs), ty, span))
    }

    /// The condition of `select`: a `bool`, or a run of `bool` (one
    /// condition per element).
    fn select_cond(&mut self, e: &ast::Expr) -> Ex {
        let c = self.expr(e, Some(ScalarTy::Bool))?;
        if elem_of(c.ty) == Some(ScalarTy::Bool) {
            return Some(c);
        }
        self.report(SubscriptError::SelectCondition {
            found: c.ty,
            span: e.span,
        });
        None
    }

    /// A packed 32-bit word argument: i32 or u32.
    fn word_arg(&mut self, e: &ast::Expr, want: ScalarTy, what: &str) -> Ex {
        let x = self.scalar_expr(e, Some(want))?;
        if matches!(x.ty, Ty::Scalar(ScalarTy::I32 | ScalarTy::U32)) {
            return Some(x);
        }
        self.report(CallError::WordArg {
            what: what.to_string(),
            found: x.ty,
            span: e.span,
        });
        None
    }

    fn dp4a(&mut self, callee: &Ident, args: &[ast::Expr], span: Span) -> Ex {
        if !self.arity(callee, args, 3, span) {
            return None;
        }
        let a = self.word_arg(&args[0], ScalarTy::I32, "the first argument of `dp4a`");
        let b = self.word_arg(&args[1], ScalarTy::I32, "the second argument of `dp4a`");
        let (a, b) = (a?, b?);
        let both_unsigned = a.ty == Ty::Scalar(ScalarTy::U32) && b.ty == Ty::Scalar(ScalarTy::U32);
        let acc = if both_unsigned {
            ScalarTy::U32
        } else {
            ScalarTy::I32
        };
        let c = self.expr_of(&args[2], acc, "the accumulator of `dp4a`")?;
        Some(mk(
            hir::ExprKind::Builtin(Builtin::Dp4a, vec![a, b, c]),
            Ty::Scalar(acc),
            span,
        ))
    }

    fn byteperm(&mut self, c: Call) -> Ex {
        let (callee, args, want, span) = (c.callee, c.args, c.want, c.span);
        if !self.arity(callee, args, 3, span) {
            return None;
        }
        let want = want.filter(|t| matches!(t, ScalarTy::I32 | ScalarTy::U32));
        let ab = self.same_type_args(&args[..2], want.or(Some(ScalarTy::U32)), false);
        let sel = self.word_arg(&args[2], ScalarTy::U32, "the selector of `byteperm`");
        let (ab, sel) = (ab?, sel?);
        if !matches!(ab[0].ty, Ty::Scalar(ScalarTy::I32 | ScalarTy::U32)) {
            return self.word_arg(&args[0], ScalarTy::U32, "the first argument of `byteperm`");
        }
        let ty = ab[0].ty;
        let mut xs = ab;
        xs.push(sel);
        Some(mk(hir::ExprKind::Builtin(Builtin::Byteperm, xs), ty, span))
    }

    fn popcount(&mut self, callee: &Ident, args: &[ast::Expr], span: Span) -> Ex {
        if !self.arity(callee, args, 1, span) {
            return None;
        }
        // Elementwise on a run of integers, like the math built-ins.
        let x = self.expr(&args[0], None)?;
        if !elem_of(x.ty).is_some_and(ScalarTy::is_int) {
            self.report(CallError::PopcountArg {
                found: x.ty,
                span: args[0].span,
            });
            return None;
        }
        let len = match x.ty {
            Ty::Run { len, .. } => Some(len),
            _ => None,
        };
        Some(mk(
            hir::ExprKind::Builtin(Builtin::Popcount, vec![x]),
            run_or_scalar(ScalarTy::I32, len),
            span,
        ))
    }

    /// `sum(e)` within a thread: `e` is a run expression.
    fn run_sum(&mut self, callee: &Ident, args: &[ast::Expr], span: Span) -> Ex {
        if !self.arity(callee, args, 1, span) {
            return None;
        }
        let run = self.expr(&args[0], None)?;
        match run.ty {
            Ty::Run { elem, .. } if elem.is_f8() => {
                self.report(TypeError::F8Operation {
                    what: "`sum`".to_string(),
                    ty: elem,
                    span,
                });
                None
            }
            Ty::Run { elem, .. } if elem != ScalarTy::Bool => Some(mk(
                hir::ExprKind::RunSum(Box::new(run)),
                Ty::Scalar(elem),
                span,
            )),
            t => {
                self.report(CallError::SumOfNonRun {
                    found: t,
                    span: args[0].span,
                });
                None
            }
        }
    }

    /// A constant index into a run, checked against `limit`.
    pub fn const_index(&mut self, e: &ast::Expr, limit: u32, what: &str) -> Option<u32> {
        let x = self.expr(e, Some(ScalarTy::I32))?;
        match const_int(&x) {
            Some(v) if (0..i128::from(limit)).contains(&v) => Some(v as u32),
            Some(v) => {
                self.report(CallError::RunIndexRange {
                    what: what.to_string(),
                    index: v,
                    limit,
                    span: e.span,
                });
                None
            }
            None => {
                self.report(CallError::RunIndexNotConstant {
                    what: what.to_string(),
                    span: e.span,
                });
                None
            }
        }
    }

    fn elem_or_word(&mut self, callee: &Ident, args: &[ast::Expr], span: Span) -> Ex {
        if !self.arity(callee, args, 2, span) {
            return None;
        }
        let run = self.expr(&args[0], None)?;
        let Ty::Run { elem, len } = run.ty else {
            self.report(CallError::ElemOfNonRun {
                callee: callee.name.clone(),
                found: run.ty,
                span: args[0].span,
            });
            return None;
        };
        if callee.name == "elem" {
            let i = self.const_index(&args[1], len, "the element index")?;
            return Some(mk(
                hir::ExprKind::Elem {
                    run: Box::new(run),
                    i,
                },
                Ty::Scalar(elem),
                span,
            ));
        }
        let word_ty = match elem {
            ScalarTy::I8 => ScalarTy::I32,
            ScalarTy::U8 => ScalarTy::U32,
            _ => {
                self.report(CallError::WordOfNonBytes {
                    elem,
                    span: args[0].span,
                });
                return None;
            }
        };
        if len % 4 != 0 {
            self.report(CallError::WordOfRagged {
                len,
                span: args[0].span,
            });
            return None;
        }
        let i = self.const_index(&args[1], len / 4, "the word index")?;
        Some(mk(
            hir::ExprKind::Word {
                run: Box::new(run),
                i,
            },
            Ty::Scalar(word_ty),
            span,
        ))
    }

    fn call_fn(&mut self, c: Call) -> Ex {
        let (callee, args, want, span) = (c.callee, c.args, c.want, c.span);
        let Some(f) = self.fns.items.get(callee.name.as_str()).copied() else {
            let name = callee.name.as_str();
            if matches!(
                name,
                "__syncthreads" | "__syncwarp" | "syncthreads" | "barrier"
            ) {
                self.report(CallError::BarrierCall {
                    name: name.to_string(),
                    span: callee.span,
                });
            } else {
                self.report(FnError::UnknownFn {
                    name: name.to_string(),
                    span: callee.span,
                });
            }
            return None;
        };
        if self.fns.broken.contains(callee.name.as_str()) {
            return None;
        }
        if !self.arity(callee, args, f.params.len(), span) {
            return None;
        }
        let xs = self.fn_args(args)?;
        self.inline(f, xs, want, span)
    }

    /// Typed arguments first; untyped literals then take the first typed
    /// argument's type (the element type of a run). An argument may be a
    /// run: the body then computes on runs, elementwise.
    fn fn_args(&mut self, args: &[ast::Expr]) -> Option<Vec<hir::Expr>> {
        let mut out: Vec<Option<hir::Expr>> = vec![None; args.len()];
        let mut common = None;
        for (i, a) in args.iter().enumerate().filter(|(_, a)| !is_untyped(a)) {
            out[i] = self.expr(a, None);
            common = common.or_else(|| out[i].as_ref().and_then(|x| elem_of(x.ty)));
        }
        for (i, a) in args.iter().enumerate().filter(|(_, a)| is_untyped(a)) {
            out[i] = self.expr(a, common);
        }
        out.into_iter().collect()
    }

    /// Check `f`'s body with its parameters bound to `args`.
    pub fn inline(
        &mut self,
        f: &FnItem,
        args: Vec<hir::Expr>,
        want: Option<ScalarTy>,
        span: Span,
    ) -> Ex {
        if self.inline_stack.len() >= MAX_INLINE_DEPTH || self.inline_budget == 0 {
            // Reported once per kernel variant: every later call would fail too.
            if !self.inline_exhausted {
                self.inline_exhausted = true;
                self.report(CallError::InlineExhausted {
                    name: f.name.name.clone(),
                    span,
                });
            }
            return None;
        }
        self.inline_budget -= 1;
        let mut scope = super::cx::Scope::default();
        // Each argument is evaluated once, into a local the body reads, so
        // a fn that uses its parameter n times does not copy the argument
        // n times (nested calls would otherwise grow exponentially).
        let mut bound = Vec::new();
        for (p, a) in f.params.iter().zip(args) {
            match (is_leaf(&a), a.ty) {
                (false, Ty::Scalar(t)) => {
                    let local = self.new_local(&p.name, a.span, false, LocalKind::Scalar(t));
                    scope.insert(p.name.clone(), Binding::Local(local));
                    bound.push((local, a));
                }
                // A computed run (`gelu(X[r, j :+ 4] * s)`) is bound once
                // too: the local stands for the whole run (its kind is the
                // element type), and lowering gives it a var per element.
                // A run load is substituted: loads are reused, and `word`
                // and `dp4a` need to see the load itself.
                (false, Ty::Run { elem, .. }) if !is_run_load(&a) => {
                    let local = self.new_local(&p.name, a.span, false, LocalKind::Scalar(elem));
                    let read = mk(hir::ExprKind::Local(local), a.ty, a.span);
                    scope.insert(p.name.clone(), Binding::Inline(read));
                    bound.push((local, a));
                }
                _ => {
                    scope.insert(p.name.clone(), Binding::Inline(a));
                }
            }
        }
        // A fn body sees only its parameters (and other fns): not the
        // caller's locals.
        let saved = std::mem::replace(&mut self.scopes, vec![scope]);
        self.inline_stack.push((f.name.name.clone(), span));
        let body = self.expr(&f.body, want);
        self.inline_stack.pop();
        self.scopes = saved;
        let body = body.map(|b| hir::Expr { span, ..b })?;
        Some(bound.into_iter().rev().fold(body, |body, (local, value)| {
            let ty = body.ty;
            mk(
                hir::ExprKind::Let {
                    local,
                    value: Box::new(value),
                    body: Box::new(body),
                },
                ty,
                span,
            )
        }))
    }
}

/// `t`, or a run of `len` elements of `t`.
fn run_or_scalar(t: ScalarTy, len: Option<u32>) -> Ty {
    match len {
        Some(len) => Ty::Run { elem: t, len },
        None => Ty::Scalar(t),
    }
}

/// A run read straight from a tensor or tile.
fn is_run_load(e: &hir::Expr) -> bool {
    matches!(e.kind, hir::ExprKind::RunLoad { .. })
}

/// An argument cheap to repeat: substituting it costs nothing, and keeps a
/// constant a constant (run lengths and `elem` indices need one).
fn is_leaf(e: &hir::Expr) -> bool {
    matches!(
        e.kind,
        hir::ExprKind::Const(_)
            | hir::ExprKind::Local(_)
            | hir::ExprKind::Param(_)
            | hir::ExprKind::Dim(_)
            | hir::ExprKind::Ctx(_)
    )
}
