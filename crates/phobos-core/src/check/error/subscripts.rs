//! The errors of `check/subscripts.rs` (tensors, tiles, runs): their codes,
//! and the one place their messages, labels and notes are written.
//! [`super::CheckError`] wraps them.

use crate::ast::{ScalarTy, Span};
use crate::check::cx::ty_name;
use crate::check::subscripts::MAX_RUN;
use crate::check::types::conversion_note;
use crate::diag::{Code, Diagnostic};
use crate::hir::Ty;

pass_error! {
    /// An error of `check/subscripts.rs`: tensors, tiles, runs.
    pub enum SubscriptError {
        NotSubscriptable { span: Span } => P0510,
        /// `name` has `dims` dims and `found` subscripts.
        SubscriptCount {
            name: String,
            dims: usize,
            found: usize,
            span: Span,
        } => P0500,
        /// A `what` ("run" or "tile") length out of range.
        SpanLenRange {
            what: String,
            value: i128,
            span: Span,
        } => P0501,
        /// A `what` length that is not a constant; `text` is its source.
        SpanLenNotConstant {
            what: String,
            text: String,
            span: Span,
        } => P0501,
        TilePoint { span: Span } => P0504,
        FullDimUnknown {
            axis: usize,
            name: String,
            span: Span,
        } => P0502,
        TileAsValue { span: Span } => P0503,
        /// A tile copied from a tile.
        TileCopyFromTile { span: Span } => P0509,
        /// Two runs of different lengths in one elementwise built-in.
        ArgRunLengths {
            first: u32,
            first_span: Span,
            len: u32,
            span: Span,
        } => P0505,
        /// `select`'s condition neither bool nor a run of bool.
        SelectCondition { found: Ty, span: Span } => P0401,
        /// A run assigned to a scalar variable.
        AssignRun {
            name: String,
            len: u32,
            elem: ScalarTy,
            span: Span,
        } => P0409,
        /// A run stored into one element.
        StoreRunIntoElement {
            len: u32,
            name: String,
            elem: ScalarTy,
            span: Span,
        } => P0409,
        /// A run stored into a run of another length.
        StoreRunLength {
            len: u32,
            want: u32,
            value: Span,
            span: Span,
        } => P0505,
        /// A `value` stored into `name`, which holds `holds`
        /// (elements of `elem`).
        StoreType {
            value: Ty,
            name: String,
            holds: Ty,
            elem: ScalarTy,
            span: Span,
        } => P0401,
        TileStoreNotTile { span: Span } => P0509,
        TileStoreIntoTile { span: Span } => P0509,
        /// The tile (`tile`) and the target (`target`) differ.
        TileStoreMismatch {
            tile: (Vec<u32>, ScalarTy),
            target: (Vec<u32>, ScalarTy),
            span: Span,
        } => P0509,
    }
}

impl SubscriptError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use SubscriptError::*;
        let code = self.code();
        match self {
            NotSubscriptable { span } => code
                .error("only tensors, shared tiles and register arrays can be subscripted")
                .primary(span, "not a tensor, a tile or an array"),
            SubscriptCount {
                name,
                dims,
                found,
                span,
            } => code
                .error(format!("`{name}` has {dims} dims, found {found} subscripts"))
                .primary(span, format!("expected {dims} subscripts")),
            SpanLenRange { what, value, span } => code
                .error(format!(
                    "a {what} length must be from 1 to {MAX_RUN}, found {value}"
                ))
                .primary(span, "out of range"),
            SpanLenNotConstant { what, text, span } => code
                .error(format!("a {what} length must be a compile-time constant"))
                .primary(span, format!("`{text}` is not a constant"))
                .note("use a number, an autotuned name or a constant dim"),
            TilePoint { span } => code
                .error("a tile takes a span or `:` on every axis")
                .primary(span, "an index where a span is needed")
                .note("a run has exactly one span; a tile has spans or `:` everywhere, as in `x[0 :+ 1, :]`"),
            FullDimUnknown { axis, name, span } => code
                .error(format!(
                    "`:` needs a dim known at compile time; axis {axis} of `{name}` is not"
                ))
                .primary(span, "the whole dim")
                .note("give the axis a constant size, autotune its dim (`@autotune(K in [256])`), or use a span `start :+ L`"),
            TileAsValue { span } => code
                .error("a tile subscript cannot be used as a value")
                .primary(span, "a whole tile")
                .note("copy it into shared memory with `var t = x[...]`, or store a tile with `A[...] = t`; inside expressions use point or run subscripts"),
            TileCopyFromTile { span } => code
                .error("a tile is copied from a tensor")
                .primary(span, "a shared tile")
                .note("read a tile's elements with point or run subscripts instead"),
            ArgRunLengths {
                first,
                first_span,
                len,
                span,
            } => code
                .error(format!("runs of different lengths: {first} and {len}"))
                .primary(span, format!("a run of {len}"))
                .secondary(first_span, format!("a run of {first}"))
                .note("an elementwise built-in combines runs of one length, and broadcasts scalars"),
            SelectCondition { found, span } => code
                .error(format!(
                    "the condition of `select` must be bool or a run of bool, found {}",
                    ty_name(found)
                ))
                .primary(span, format!("this is {}", ty_name(found)))
                .note(conversion_note(ScalarTy::Bool)),
            AssignRun {
                name,
                len,
                elem,
                span,
            } => code
                .error(format!(
                    "`{name}` holds a scalar, the value is a run of {len} {}",
                    elem.name()
                ))
                .primary(span, "a run cannot be kept in a variable")
                .note("take one value with `sum(...)` or `elem(run, i)`, or store the run whole with `A[r, k :+ L] = ...`"),
            StoreRunIntoElement {
                len,
                name,
                elem,
                span,
            } => code
                .error(format!("cannot store a run of {len} into one element of `{name}`"))
                .primary(span, format!("a run of {len} {}", elem.name()))
                .note(format!(
                    "store it whole into a run of {len}, as in `{name}[r, k :+ {len}] = ...`, or take one value with `sum(...)` or `elem(run, i)`"
                )),
            StoreRunLength {
                len,
                want,
                value,
                span,
            } => code
                .error(format!(
                    "runs of different lengths: a run of {len} stored into a run of {want}"
                ))
                .primary(value, format!("a run of {len}"))
                .secondary(span, format!("a run of {want}"))
                .note("a run is stored into a run of the same length (a scalar is broadcast)"),
            StoreType {
                value,
                name,
                holds,
                elem,
                span,
            } => code
                .error(format!(
                    "cannot store {} into `{name}`, which holds {}",
                    ty_name(value),
                    ty_name(holds)
                ))
                .primary(span, format!("this is {}", ty_name(value)))
                .note(conversion_note(elem)),
            TileStoreNotTile { span } => code
                .error("a tile subscript is stored to from a whole tile")
                .primary(span, "not a tile")
                .note("write `A[r :+ R, :] = t` with `t` made by `var t = x[...]`"),
            TileStoreIntoTile { span } => code
                .error("a tile is stored to a tensor")
                .primary(span, "cannot copy a tile into a tile"),
            TileStoreMismatch { tile, target, span } => code
                .error("the tile does not match the target's shape and type")
                .primary(
                    span,
                    format!(
                        "the tile holds {:?} {}, the target is {:?} {}",
                        tile.0,
                        tile.1.name(),
                        target.0,
                        target.1.name()
                    ),
                ),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<SubscriptError> {
        use SubscriptError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            NotSubscriptable { span },
            SubscriptCount {
                name: name(),
                dims: 2,
                found: 1,
                span,
            },
            SpanLenRange {
                what: "run".into(),
                value: 2048,
                span,
            },
            SpanLenNotConstant {
                what: "run".into(),
                text: "n".into(),
                span,
            },
            TilePoint { span },
            FullDimUnknown {
                axis: 0,
                name: name(),
                span,
            },
            TileAsValue { span },
            TileCopyFromTile { span },
            ArgRunLengths {
                first: 4,
                first_span: span,
                len: 8,
                span,
            },
            SelectCondition {
                found: Ty::Scalar(ScalarTy::F32),
                span,
            },
            AssignRun {
                name: name(),
                len: 4,
                elem: ScalarTy::F32,
                span,
            },
            StoreRunIntoElement {
                len: 4,
                name: name(),
                elem: ScalarTy::F32,
                span,
            },
            StoreRunLength {
                len: 4,
                want: 8,
                value: span,
                span,
            },
            StoreType {
                value: Ty::Scalar(ScalarTy::F64),
                name: name(),
                holds: Ty::Scalar(ScalarTy::F32),
                elem: ScalarTy::F32,
                span,
            },
            TileStoreNotTile { span },
            TileStoreIntoTile { span },
            TileStoreMismatch {
                tile: (vec![4, 4], ScalarTy::F32),
                target: (vec![4, 8], ScalarTy::F32),
                span,
            },
        ]
    }
}
