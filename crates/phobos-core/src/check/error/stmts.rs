//! The errors of `check/stmts.rs` (statements): their codes, and the one
//! place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::{ScalarTy, Span};
use crate::check::cx::{elem_of, ty_name};
use crate::check::stmts::MAX_UNROLL;
use crate::check::types::conversion_note;
use crate::diag::{Code, Diagnostic};
use crate::hir::Ty;

pass_error! {
    /// An error of `check/stmts.rs`: statements.
    pub enum StmtError {
        /// `word` (`break` or `continue`) outside a loop.
        ExitOutsideLoop { word: &'static str, span: Span } => P0415,
        TileCopyTyped { span: Span } => P0401,
        /// `name` declared `declared` with a value of type `found`.
        DeclaredType {
            name: String,
            declared: ScalarTy,
            found: Ty,
            span: Span,
            decl: Span,
        } => P0401,
        /// A run kept in a variable.
        RunInVariable { found: Ty, span: Span } => P0409,
        /// The target is not a variable or a subscript.
        AssignToExpr { span: Span } => P0207,
        /// `name` is a parameter, dim or constant.
        AssignToNonLocal { name: String, span: Span } => P0207,
        AssignToLoopVar {
            name: String,
            span: Span,
            decl: Span,
        } => P0207,
        AssignToArray {
            name: String,
            span: Span,
            decl: Span,
        } => P0207,
        AssignToTile {
            name: String,
            span: Span,
            decl: Span,
        } => P0207,
        /// A second assignment to a `let`.
        AssignTwice {
            name: String,
            span: Span,
            decl: Span,
        } => P0207,
        /// `name` holds `holds`, the value is `value`.
        AssignType {
            name: String,
            holds: Ty,
            value: Ty,
            span: Span,
        } => P0401,
        /// `name op= float` where `name` is `var name = literal`, an
        /// integer.
        FloatIntoIntLiteralVar {
            name: String,
            op: &'static str,
            holds: ScalarTy,
            value: ScalarTy,
            literal: u64,
            span: Span,
            literal_span: Span,
        } => P0400,
        ZeroStep { span: Span } => P0413,
        /// A loop of constant bounds whose last trip plus `step` (or, in a
        /// `stages S` ring, plus `(S - 1) * step`) leaves `i32`: the loop
        /// variable would wrap and the loop not end where it should.
        StepPastI32 {
            last: i128,
            next: i128,
            stages: Option<u32>,
            span: Span,
        } => P0413,
        /// `unroll` on a loop that `break` or `continue` (at `span`)
        /// leaves.
        UnrollLeft { span: Span } => P0414,
        UnrollRange { factor: u64, span: Span } => P0414,
        UnrollStep { span: Span, step: Span } => P0414,
        /// `stages S` whose count is not a constant from 2 to 4
        /// (`found` is `None` when it is not a constant).
        StagesCount { found: Option<i128>, span: Span } => P0470,
        /// `stages` on a loop whose step is not a constant.
        StagesStep { span: Span, step: Span } => P0470,
        /// `stages` together with `unroll` (at `unroll`).
        StagesUnroll { span: Span, unroll: Span } => P0470,
        /// `stages` on a loop whose body copies no tile from a tensor.
        StagesNoCopy { span: Span } => P0471,
        /// `stages` on a loop that a `break` or `return` (at `exit`)
        /// leaves.
        StagesLeft {
            span: Span,
            exit: Span,
            word: &'static str,
        } => P0471,
        /// A tile copy of a staged loop that is not a statement of the
        /// loop's own body (it is under an `if` or an inner loop).
        StagedCopyNested { span: Span, stages: Span } => P0472,
        /// A staged copy whose start uses the local `name`, which the
        /// loop computes, or (`None`) reads memory or other threads' values,
        /// at `cause`: the ring must compute it trips ahead.
        StagedCopyStart {
            name: Option<String>,
            span: Span,
            cause: Span,
            stages: Span,
        } => P0472,
        /// A staged tile (`name`) written by another statement (at
        /// `span`) of the loop.
        StagedTileWritten {
            name: String,
            span: Span,
            copy: Span,
        } => P0472,
        UselessExpr { span: Span } => P0411,
        /// `store` into something that is not a subscript.
        StoreNotSubscript { span: Span } => P0409,
        /// `store` into a subscript that is not a run.
        StoreNotRun { span: Span } => P0409,
        /// `store`'s element index `index` outside a run of `len`.
        StoreIndexRange { index: i128, len: u32, span: Span } => P0507,
    }
}

impl StmtError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use StmtError::*;
        let code = self.code();
        match self {
            ExitOutsideLoop { word, span } => code
                .error(format!("`{word}` outside a loop"))
                .primary(span, format!("there is no `for` or `while` for this `{word}`"))
                .note("to leave the kernel early, write `return`"),
            TileCopyTyped { span } => code
                .error("a tile copy takes no scalar type")
                .primary(span, "the tile's type is the tensor's"),
            DeclaredType {
                name,
                declared,
                found,
                span,
                decl,
            } => code
                .error(format!(
                    "`{name}` is declared {}, but its value is {}",
                    declared.name(),
                    ty_name(found)
                ))
                .primary(span, format!("this is {}", ty_name(found)))
                .secondary(decl, "declared here")
                .note(conversion_note(declared)),
            RunInVariable { found, span } => code
                .error(format!("a variable holds a scalar, found {}", ty_name(found)))
                .primary(span, "a run cannot be kept in a variable")
                .note("use a run inside `sum(...)`, `elem(run, i)` or `word(run, i)`"),
            AssignToExpr { span } => code
                .error("cannot assign to this expression")
                .primary(span, "not a variable or a subscript"),
            AssignToNonLocal { name, span } => code
                .error(format!("cannot assign to `{name}`"))
                .primary(span, "a parameter, dim or constant")
                .note("declare a variable with `var` to change it"),
            AssignToLoopVar { name, span, decl } => code
                .error(format!("cannot assign to the loop variable `{name}`"))
                .primary(span, "assigned here")
                .secondary(decl, format!("the loop sets `{name}` on every iteration"))
                .note(format!("a loop variable cannot change inside its loop: choose the loop's `range(start, end, step)`, or copy it into a variable, as in `var j = {name}`")),
            AssignToArray { name, span, decl } => code
                .error(format!("cannot assign to the register array `{name}` as a whole"))
                .primary(span, "assigned here")
                .secondary(decl, "a register array, declared here")
                .note(format!(
                    "change an array's elements with subscripts, as in `{name}[i, j] = v`"
                )),
            AssignToTile { name, span, decl } => code
                .error(format!("cannot assign to the tile `{name}`"))
                .primary(span, "assigned here")
                .secondary(decl, "a tile, copied here")
                .note(format!(
                    "change a tile's elements with subscripts, as in `{name}[i, j] = v`"
                )),
            AssignTwice { name, span, decl } => code
                .error(format!("cannot assign twice to `{name}`"))
                .primary(span, "assigned here")
                .secondary(decl, "declared with `let`")
                .note(format!("declare it with `var {name}` to change it")),
            AssignType {
                name,
                holds,
                value,
                span,
            } => code
                .error(format!(
                    "`{name}` holds {}, the value is {}",
                    ty_name(holds),
                    ty_name(value)
                ))
                .primary(span, format!("this is {}", ty_name(value)))
                .note(elem_of(holds).map_or_else(String::new, conversion_note)),
            FloatIntoIntLiteralVar {
                name,
                op,
                holds,
                value,
                literal,
                span,
                literal_span,
            } => code
                .error(format!(
                    "`{name}` is {}, so `{name} {op}= ...` cannot take {}",
                    holds.name(),
                    value.name()
                ))
                .primary(span, format!("this is {}", value.name()))
                .secondary(
                    literal_span,
                    format!(
                        "`{name}` is {} because `{literal}` is an integer literal",
                        holds.name()
                    ),
                )
                .note(format!(
                    "declare it as a float: `var {name}: {} = {literal}.0`",
                    value.name()
                )),
            ZeroStep { span } => code
                .error("a loop's step cannot be 0")
                .primary(span, "the loop would never end"),
            StepPastI32 {
                last,
                next,
                stages,
                span,
            } => code
                .error(format!(
                    "this loop steps past the end of i32: its last trip is {last}, and {next} does not fit"
                ))
                .primary(span, match stages {
                    Some(s) => format!("a `stages {s}` ring copies {} trips ahead", s - 1),
                    None => "the step after the last trip wraps".to_string(),
                })
                .note(format!(
                    "i32 holds {} to {}: end the range further from the limit, or count trips from 0 and compute the value in the body",
                    i32::MIN,
                    i32::MAX
                )),
            UnrollLeft { span } => code
                .error("`unroll` on a loop left by `break` or `continue`")
                .primary(span, "this leaves the loop")
                .note("unrolling copies the body; remove `unroll`, or the `break`/`continue`"),
            UnrollRange { factor, span } => code
                .error(format!(
                    "an unroll factor must be from 1 to {MAX_UNROLL}, found {factor}"
                ))
                .primary(span, "this factor")
                .note("`unroll 1` keeps the loop as written; `unroll 4` runs four bodies per trip"),
            UnrollStep { span, step } => code
                .error("`unroll` needs a loop whose step is a constant")
                .primary(span, "unrolling asked for here")
                .secondary(step, "this step is known only at run time")
                .note("write the step as a constant expression, or remove `unroll`"),
            StagesCount { found, span } => code
                .error(match found {
                    Some(n) => format!("a loop's stage count must be from 2 to 4, found {n}"),
                    None => "a loop's stage count must be a constant".to_string(),
                })
                .primary(span, "this count")
                .note("`stages 3` keeps three trips' tile copies in flight; the count may be an `@autotune` constant"),
            StagesStep { span, step } => code
                .error("`stages` needs a loop whose step is a constant")
                .primary(span, "a copy ring asked for here")
                .secondary(step, "this step is known only at run time")
                .note("the ring issues the copies of later trips early, at `k + step`, `k + 2 * step`, ...; write the step as a constant expression"),
            StagesUnroll { span, unroll } => code
                .error("a loop cannot have both `unroll` and `stages`")
                .primary(span, "a copy ring asked for here")
                .secondary(unroll, "unrolling asked for here")
                .note("remove one of them"),
            StagesNoCopy { span } => code
                .error("`stages` on a loop whose body copies no tile from a tensor")
                .primary(span, "nothing to stage")
                .note("`stages S` puts the loop's tile copies (`var a = A[r :+ 64, k :+ 32]`) in an S-deep `cp.async` ring; remove it"),
            StagesLeft { span, exit, word } => code
                .error(format!("a loop with `stages` cannot be left by `{word}`"))
                .primary(exit, "this leaves the loop")
                .secondary(span, "a copy ring asked for here")
                .note("the ring has later trips' copies in flight when a trip ends; remove `stages`, or the exit"),
            StagedCopyNested { span, stages } => code
                .error("a staged loop's tile copies must be statements of its own body")
                .primary(span, "this copy is under an `if` or an inner loop")
                .secondary(stages, "a copy ring asked for here")
                .note("the ring issues every trip's copies at the top of an earlier trip; move the copy out of the `if` or inner loop, or remove `stages`"),
            StagedCopyStart {
                name,
                span,
                cause,
                stages,
            } => code
                .error("a staged tile copy's start must be known trips ahead")
                .primary(cause, match name {
                    Some(name) => format!("`{name}` is computed in the loop"),
                    None => "this reads memory or other threads' values".to_string(),
                })
                .secondary(span, "this copy is issued early, for a later trip")
                .secondary(stages, "a copy ring asked for here")
                .note("a staged copy's starts may use the loop variable and values from before the loop"),
            StagedTileWritten { name, span, copy } => code
                .error(format!(
                    "the staged tile `{name}` must be written only by its copy"
                ))
                .primary(span, format!("this writes into `{name}`"))
                .secondary(copy, "its copy, staged: each trip's copy goes to its own buffer of a ring")
                .note("write into a tile the loop does not stage, or remove `stages`"),
            UselessExpr { span } => code
                .error("this expression does nothing")
                .primary(span, "its value is dropped")
                .note("assign it, as in `let v = ...` or `A[i] = ...`"),
            StoreNotSubscript { span } => code
                .error("`store` writes into a run of a tensor or tile")
                .primary(span, "not a run subscript")
                .note("write `store(Y[0, k :+ 4], i, v)`"),
            StoreNotRun { span } => code
                .error("`store` writes into a run")
                .primary(span, "not a run: use one span `k :+ L`"),
            StoreIndexRange { index, len, span } => code
                .error(format!("the element index {index} is out of range"))
                .primary(span, format!("must be from 0 to {}", len - 1)),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<StmtError> {
        use StmtError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            ExitOutsideLoop {
                word: "break",
                span,
            },
            TileCopyTyped { span },
            DeclaredType {
                name: name(),
                declared: ScalarTy::F32,
                found: Ty::Scalar(ScalarTy::I32),
                span,
                decl: span,
            },
            RunInVariable {
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            AssignToExpr { span },
            AssignToNonLocal { name: name(), span },
            AssignToLoopVar {
                name: name(),
                span,
                decl: span,
            },
            AssignToArray {
                name: name(),
                span,
                decl: span,
            },
            AssignToTile {
                name: name(),
                span,
                decl: span,
            },
            AssignTwice {
                name: name(),
                span,
                decl: span,
            },
            AssignType {
                name: name(),
                holds: Ty::Scalar(ScalarTy::F32),
                value: Ty::Scalar(ScalarTy::I32),
                span,
            },
            FloatIntoIntLiteralVar {
                name: name(),
                op: "+",
                holds: ScalarTy::I32,
                value: ScalarTy::F32,
                literal: 0,
                span,
                literal_span: span,
            },
            ZeroStep { span },
            StepPastI32 {
                last: 2147483644,
                next: 2147483648,
                stages: None,
                span,
            },
            UnrollLeft { span },
            UnrollRange { factor: 64, span },
            UnrollStep { span, step: span },
            StagesCount {
                found: Some(5),
                span,
            },
            StagesCount { found: None, span },
            StagesStep { span, step: span },
            StagesUnroll { span, unroll: span },
            StagesNoCopy { span },
            StagesLeft {
                span,
                exit: span,
                word: "break",
            },
            StagedCopyNested { span, stages: span },
            StagedCopyStart {
                name: Some(name()),
                span,
                cause: span,
                stages: span,
            },
            StagedCopyStart {
                name: None,
                span,
                cause: span,
                stages: span,
            },
            StagedTileWritten {
                name: name(),
                span,
                copy: span,
            },
            UselessExpr { span },
            StoreNotSubscript { span },
            StoreNotRun { span },
            StoreIndexRange {
                index: 4,
                len: 4,
                span,
            },
        ]
    }
}
