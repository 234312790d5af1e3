//! The errors of `check/scratch.rs` (shared scratch tiles and partial
//! fills): their codes, and the one place their messages, labels and notes
//! are written. [`super::CheckError`] wraps them.

use crate::ast::{ScalarTy, Span};
use crate::check::scratch::MAX_AXIS;
use crate::diag::{Code, Diagnostic};

pass_error! {
    /// An error of `check/scratch.rs`: shared scratch tiles and partial fills.
    pub enum ScratchError {
        ScratchTyped { span: Span } => P0401,
        ScratchExtentRange { value: i128, span: Span } => P0440,
        ScratchExtentNotConstant { span: Span } => P0440,
        ScratchNoExtent { span: Span } => P0440,
        ScratchInExpr { span: Span } => P0441,
        /// A partial fill from something that is not a subscript.
        FillNotBox { span: Span } => P0509,
        /// A partial fill from a box of a tile.
        FillFromTile { span: Span } => P0509,
        /// A partial fill with `op=`.
        FillCompound { op: &'static str, span: Span } => P0509,
        /// The box `start :+ len` outside axis `axis` (of `extent`) of
        /// the tile `name`.
        FillOutside {
            start: i128,
            len: u32,
            axis: usize,
            name: String,
            extent: i64,
            span: Span,
        } => P0442,
        FillStartNotConstant { span: Span } => P0442,
        /// The tensor box (`from`) and the tile box (`into`) differ.
        FillMismatch {
            from: (Vec<u32>, ScalarTy),
            into: (Vec<u32>, ScalarTy),
            span: Span,
        } => P0509,
    }
}

impl ScratchError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use ScratchError::*;
        let code = self.code();
        match self {
            ScratchTyped { span } => code
                .error("a shared scratch tile takes no scalar type")
                .primary(span, "the element type is in `shared<...>`"),
            ScratchExtentRange { value, span } => code
                .error(format!(
                    "a scratch tile's extent must be from 1 to {MAX_AXIS}, found {value}"
                ))
                .primary(span, "this extent"),
            ScratchExtentNotConstant { span } => code
                .error("a scratch tile's extent must be a compile-time constant")
                .primary(span, "known only at run time")
                .note("use constants, autotuned names and `ctx.threads`, `ctx.warps`, `ctx.lanes`: the shared plan lays out every buffer before the launch"),
            ScratchNoExtent { span } => code
                .error("a scratch tile needs at least one extent")
                .primary(span, "write its shape, as in `shared<f32>[32, 33]`"),
            ScratchInExpr { span } => code
                .error("`shared<...>[...]` declares a scratch tile, and is not a value")
                .primary(span, "used inside an expression")
                .note("declare it on its own: `var s = shared<f32>[32, 33]`, then read and write `s[i, j]`"),
            FillNotBox { span } => code
                .error("a box of a tile is filled from a box of a tensor")
                .primary(span, "not a tensor box")
                .note(FILL_NOTE),
            FillFromTile { span } => code
                .error("a box of a tile is filled from a box of a tensor")
                .primary(span, "a tile, not a tensor")
                .note(FILL_NOTE),
            FillCompound { op, span } => code
                .error(format!("a tile box is filled with `=`, not `{op}=`"))
                .primary(span, "a copy, not arithmetic")
                .note(FILL_NOTE),
            FillOutside {
                start,
                len,
                axis,
                name,
                extent,
                span,
            } => code
                .error(format!(
                    "the box {start} :+ {len} does not fit axis {axis} of `{name}`, which has {extent}"
                ))
                .primary(span, "outside the tile"),
            FillStartNotConstant { span } => code
                .error("where a tile box starts must be a compile-time constant")
                .primary(span, "known only at run time")
                .note("the box's place in the tile is fixed; the tensor box may start anywhere"),
            FillMismatch { from, into, span } => code
                .error("the tensor box does not match the tile box")
                .primary(
                    span,
                    format!(
                        "{:?} {} into {:?} {}",
                        from.0,
                        from.1.name(),
                        into.0,
                        into.1.name()
                    ),
                )
                .note(FILL_NOTE),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<ScratchError> {
        use ScratchError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            ScratchTyped { span },
            ScratchExtentRange { value: 0, span },
            ScratchExtentNotConstant { span },
            ScratchNoExtent { span },
            ScratchInExpr { span },
            FillNotBox { span },
            FillFromTile { span },
            FillCompound { op: "+", span },
            FillOutside {
                start: 30,
                len: 4,
                axis: 0,
                name: name(),
                extent: 32,
                span,
            },
            FillStartNotConstant { span },
            FillMismatch {
                from: (vec![4, 4], ScalarTy::F32),
                into: (vec![4, 8], ScalarTy::F32),
                span,
            },
        ]
    }
}

/// The partial fill's help line.
const FILL_NOTE: &str = "fill part of a tile from a tensor box of the same shape: `s[0 :+ 32, 0 :+ 32] = A[r :+ 32, c :+ 32]`";
