//! Collectives and shuffles: `op<over ..., width w>(x)` and
//! `shfl<from|xor|down|up s, width w>(v)`. Checks every configuration the
//! language page rejects, with the page's words as the message, and types
//! the operands. Where they may appear (uniformity) is `uniformity.rs`'s job.

use super::consts::const_int;
use super::cx::{elem_of, mk, ty_name, Binding, Cx, Ex};
use super::error::CollectiveError;
use crate::ast::{self, ConfigItem, ConfigKey, CtxField, ExprKind, Ident, ScalarTy, Span};
use crate::hir::{self, CollOp, Combine, Group, LocalKind, ShflMode, Ty};

fn coll_op(name: &str) -> Option<CollOp> {
    CollOp::ALL.into_iter().find(|op| op.name() == name)
}

impl Cx<'_> {
    pub fn collective(
        &mut self,
        op: &Ident,
        config: &[ConfigItem],
        config_span: Span,
        args: &[ast::Expr],
        want: Option<ScalarTy>,
        span: Span,
    ) -> Ex {
        let items = self.config_items(config)?;
        if op.name == "shfl" {
            return self.shuffle(&items, config_span, args, want, span);
        }
        let cop = coll_op(&op.name)?;
        let group = self.group(&op.name, &items, config_span);
        let arg = self.collective_args(cop, op, args, want, span);
        let (group, (arg, combine)) = (group?, arg?);
        let ty = match cop {
            CollOp::Any | CollOp::All => Ty::Scalar(ScalarTy::Bool),
            CollOp::Argmax => Ty::Scalar(ScalarTy::I32),
            _ => arg.ty,
        };
        Some(mk(
            hir::ExprKind::Collective {
                op: cop,
                group,
                arg: Box::new(arg),
                combine,
            },
            ty,
            span,
        ))
    }

    /// The configuration by key; a key given twice is an error.
    fn config_items<'c>(&mut self, config: &'c [ConfigItem]) -> Option<Vec<&'c ConfigItem>> {
        let mut out: Vec<&ConfigItem> = Vec::new();
        for item in config {
            if let Some(first) = out.iter().find(|i| i.key == item.key) {
                self.report(CollectiveError::ConfigTwice {
                    key: item.key.name(),
                    span: item.span,
                    first: first.span,
                });
                return None;
            }
            out.push(item);
        }
        Some(out)
    }

    /// `over` and `width` of a collective.
    fn group(&mut self, op: &str, items: &[&ConfigItem], config_span: Span) -> Option<Group> {
        if let Some(bad) = items
            .iter()
            .find(|i| !matches!(i.key, ConfigKey::Over | ConfigKey::Width))
        {
            self.report(CollectiveError::ShuffleConfigOnCollective {
                key: bad.key.name(),
                op: op.to_string(),
                span: bad.key_span,
            });
            return None;
        }
        let width = items.iter().find(|i| i.key == ConfigKey::Width);
        let Some(over) = items.iter().find(|i| i.key == ConfigKey::Over) else {
            self.report(CollectiveError::NoOver {
                op: op.to_string(),
                span: config_span,
            });
            return None;
        };
        match over.value.kind {
            ExprKind::Ctx(CtxField::Lane) => {
                let w = match width {
                    Some(w) => self.width(w)?,
                    None => 32,
                };
                Some(Group::Lane { width: w })
            }
            ExprKind::Ctx(CtxField::Thread) => match width {
                Some(w) => {
                    self.report(CollectiveError::CtaWidth {
                        span: w.span,
                        over: over.value.span,
                    });
                    None
                }
                None => Some(Group::Thread),
            },
            _ => {
                self.report(CollectiveError::BadOver {
                    span: over.value.span,
                });
                None
            }
        }
    }

    /// `width w`: a constant power of two dividing ctx.lanes.
    fn width(&mut self, item: &ConfigItem) -> Option<u32> {
        let x = self.expr(&item.value, Some(ScalarTy::I32))?;
        let Some(w) = const_int(&x) else {
            self.report(CollectiveError::WidthNotConstant {
                span: item.value.span,
            });
            return None;
        };
        if w <= 0 || w & (w - 1) != 0 {
            self.report(CollectiveError::WidthNotPowerOfTwo {
                width: w,
                span: item.value.span,
            });
            return None;
        }
        if w > 32 {
            self.report(CollectiveError::WidthAboveWarp {
                width: w,
                span: item.value.span,
            });
            return None;
        }
        Some(w as u32)
    }

    fn collective_args(
        &mut self,
        op: CollOp,
        callee: &Ident,
        args: &[ast::Expr],
        want: Option<ScalarTy>,
        span: Span,
    ) -> Option<(hir::Expr, Option<Combine>)> {
        let n = if op == CollOp::Reduce { 2 } else { 1 };
        if !self.arity_hinted(callee, args, n, span, op == CollOp::Reduce) {
            return None;
        }
        let want = match op {
            CollOp::Any | CollOp::All => Some(ScalarTy::Bool),
            CollOp::Argmax => None,
            _ => want,
        };
        let arg = self.scalar_collective_arg(&args[0], want)?;
        let t = elem_of(arg.ty)?;
        let is_bool = t == ScalarTy::Bool;
        match op {
            CollOp::Any | CollOp::All if !is_bool => {
                self.report(CollectiveError::AnyAllNotBool {
                    found: t.name(),
                    span: args[0].span,
                });
                None
            }
            CollOp::Sum | CollOp::Max | CollOp::Min | CollOp::Argmax if is_bool => {
                self.report(CollectiveError::FoldOfBool {
                    op: callee.name.clone(),
                    span: args[0].span,
                });
                None
            }
            CollOp::Sum | CollOp::Max | CollOp::Min | CollOp::Argmax if t.is_f8() => {
                self.report(super::error::TypeError::F8Operation {
                    what: format!("`{}`", callee.name),
                    ty: t,
                    span: args[0].span,
                });
                None
            }
            CollOp::Reduce => {
                let combine = self.combine(&args[1], t)?;
                Some((arg, Some(combine)))
            }
            _ => Some((arg, None)),
        }
    }

    fn scalar_collective_arg(&mut self, e: &ast::Expr, want: Option<ScalarTy>) -> Ex {
        let x = self.expr(e, want)?;
        if let Ty::Scalar(_) = x.ty {
            return Some(x);
        }
        self.report(CollectiveError::CollectiveOfRun {
            found: ty_name(x.ty),
            span: e.span,
        });
        None
    }

    /// The combine fn of `reduce`: a `fn f(a, b)` whose body, with a and b
    /// of the value's type, has that type too.
    fn combine(&mut self, f: &ast::Expr, t: ScalarTy) -> Option<Combine> {
        let item = match &f.kind {
            ExprKind::Name(n)
                if !matches!(self.lookup(n), Some(Binding::Local(_) | Binding::Inline(_))) =>
            {
                self.fns.items.get(n.as_str()).copied()
            }
            _ => None,
        };
        let Some(item) = item.filter(|i| i.params.len() == 2) else {
            self.report(CollectiveError::CombineNotFn { span: f.span });
            return None;
        };
        if self.fns.broken.contains(item.name.name.as_str()) {
            return None;
        }
        let a = self.new_local(
            &item.params[0].name,
            item.params[0].span,
            false,
            LocalKind::Scalar(t),
        );
        let b = self.new_local(
            &item.params[1].name,
            item.params[1].span,
            false,
            LocalKind::Scalar(t),
        );
        let args = vec![
            mk(hir::ExprKind::Local(a), Ty::Scalar(t), item.params[0].span),
            mk(hir::ExprKind::Local(b), Ty::Scalar(t), item.params[1].span),
        ];
        let body = self.inline(item, args, Some(t), f.span)?;
        if body.ty != Ty::Scalar(t) {
            self.report(CollectiveError::CombineType {
                name: item.name.name.clone(),
                elem: t.name(),
                found: ty_name(body.ty),
                span: f.span,
                body: item.body.span,
            });
            return None;
        }
        Some(Combine {
            a,
            b,
            body: Box::new(body),
        })
    }

    fn shuffle(
        &mut self,
        items: &[&ConfigItem],
        config_span: Span,
        args: &[ast::Expr],
        want: Option<ScalarTy>,
        span: Span,
    ) -> Ex {
        if let Some(over) = items.iter().find(|i| i.key == ConfigKey::Over) {
            self.report(CollectiveError::ShuffleOver { span: over.span });
            return None;
        }
        let modes: Vec<&&ConfigItem> = items.iter().filter(|i| i.key != ConfigKey::Width).collect();
        let [mode] = modes.as_slice() else {
            let given: Vec<String> = modes
                .iter()
                .map(|m| format!("`{}`", m.key.name()))
                .collect();
            self.report(CollectiveError::ShuffleModes {
                given,
                span: config_span,
            });
            return None;
        };
        let width = match items.iter().find(|i| i.key == ConfigKey::Width) {
            Some(w) => self.width(w),
            None => Some(32),
        };
        let lane = self.expr_of(&mode.value, ScalarTy::I32, "a shuffle's lane operand");
        let value = if args.len() == 1 {
            self.scalar_collective_arg(&args[0], want)
        } else {
            self.report(CollectiveError::ShuffleArgs {
                found: args.len(),
                span,
            });
            None
        };
        let (width, lane, value) = (width?, lane?, value?);
        let mode_kind = match mode.key {
            ConfigKey::From => ShflMode::From,
            ConfigKey::Xor => ShflMode::Xor,
            ConfigKey::Down => ShflMode::Down,
            _ => ShflMode::Up,
        };
        if mode_kind == ShflMode::Xor {
            if let Some(m) = const_int(&lane).filter(|&m| m < 0 || m >= i128::from(width)) {
                self.report(CollectiveError::XorPastWidth {
                    mask: m,
                    width,
                    span: mode.value.span,
                });
                return None;
            }
        }
        let ty = value.ty;
        Some(mk(
            hir::ExprKind::Shuffle {
                mode: mode_kind,
                width,
                lane: Box::new(lane),
                value: Box::new(value),
            },
            ty,
            span,
        ))
    }
}
