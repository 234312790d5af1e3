//! The errors of `check/dot.rs` (tensor cores (accumulator tiles and
//! `dot`)): their codes, and the one place their messages, labels and notes
//! are written. [`super::CheckError`] wraps them.

use crate::ast::{ScalarTy, Span};
use crate::check::cx::ty_name;
use crate::check::types::conversion_note;
use crate::diag::{Code, Diagnostic};
use crate::hir::Ty;
use crate::mma::{self, FRAG_M, FRAG_N, MAX_ACC_REGS};

pass_error! {
    /// An error of `check/dot.rs`: tensor cores (accumulator tiles and `dot`).
    pub enum DotError {
        /// The accumulator `name` declared with `let`.
        AccWithLet { name: String, span: Span } => P0450,
        /// `var acc: T = zeros<...>[...]`.
        AccTyped { span: Span } => P0450,
        /// An accumulator of `elem`.
        AccElem { elem: ScalarTy, span: Span } => P0451,
        /// An extent that is not a constant from 1 to 65536.
        AccExtent { span: Span } => P0450,
        /// `found` extents, not two.
        AccRank { found: usize, span: Span } => P0450,
        /// `[rows, cols]` not a whole number of fragments.
        AccNotFragments { rows: u32, cols: u32, span: Span } => P0452,
        /// `[rows, cols]` that no grid of `warps` warps divides.
        AccWarpSplit {
            rows: u32,
            cols: u32,
            warps: u32,
            span: Span,
        } => P0452,
        /// `regs` registers per thread; each warp owns
        /// `[warp_rows, warp_cols]`.
        AccTooManyRegs {
            rows: u32,
            cols: u32,
            regs: u32,
            warps: u32,
            warp_rows: u32,
            warp_cols: u32,
            span: Span,
        } => P0453,
        /// `zeros<...>[...]` inside an expression.
        ZerosInExpr { span: Span } => P0450,
        /// The accumulator `name` (declared at `decl`) assigned a `dot`
        /// other than with `+=`.
        DotNotAdded {
            name: String,
            span: Span,
            decl: Span,
        } => P0454,
        /// `dot` with `found` arguments.
        DotArity { found: usize, span: Span } => P0204,
        /// `a` of `a_elem` times `b` of `b_elem` into `acc`.
        DotTypes {
            a: String,
            a_elem: ScalarTy,
            b: String,
            b_elem: ScalarTy,
            acc: ScalarTy,
            span: Span,
        } => P0456,
        /// A `dot` of `a_elem` tiles whose second operand (of `b_elem`)
        /// is not `trans(w)`.
        DotNotTrans {
            a_elem: ScalarTy,
            b_elem: ScalarTy,
            span: Span,
        } => P0456,
        /// `a` is `[a[0], a[1]]`, `b` as written `[b[0], b[1]]` (under
        /// `trans` when `b_trans`), the accumulator (declared at `decl`)
        /// `[rows, cols]`.
        DotShapes {
            a: [u32; 2],
            b: [u32; 2],
            b_trans: bool,
            rows: u32,
            cols: u32,
            span: Span,
            decl: Span,
        } => P0457,
        /// K = `k` is not a multiple of `step`, for `elem` products.
        DotK {
            elem: ScalarTy,
            k: u32,
            step: u32,
            span: Span,
        } => P0452,
        /// A `dot` (or `trans`, `under_trans`) operand that is not a
        /// rank-2 shared tile.
        DotOperand { under_trans: bool, span: Span } => P0455,
        /// `name` (`dot` or `trans`) inside an expression.
        DotInExpr { name: String, span: Span } => P0455,
        /// The accumulator `name` (declared at `decl`) used as a value.
        AccNotValue {
            name: String,
            span: Span,
            decl: Span,
        } => P0458,
        /// An accumulator of `from` stored as `to`.
        AccStoreConvert {
            from: ScalarTy,
            to: ScalarTy,
            span: Span,
        } => P0509,
        /// An accumulator stored to what is not a tensor.
        AccStoreNotTensor { span: Span } => P0509,
        /// An accumulator of `[rows, cols]` `elem` stored to a target
        /// of `shape` and `target`, with a compound assignment when
        /// `compound`.
        AccStoreMismatch {
            rows: u32,
            cols: u32,
            elem: ScalarTy,
            shape: Vec<u32>,
            target: ScalarTy,
            compound: bool,
            span: Span,
        } => P0509,
        /// An accumulator of `[rows, cols]` `elem` stored into the box
        /// `shape` of the shared tile `tile` (declared at `decl`) of `target`
        /// elements, with a compound assignment when `compound`.
        AccTileMismatch {
            rows: u32,
            cols: u32,
            elem: ScalarTy,
            tile: String,
            shape: Vec<u32>,
            target: ScalarTy,
            compound: bool,
            span: Span,
            decl: Span,
        } => P0460,
        /// The epilogue of `name`, which holds `elem`, has a value of
        /// `found`.
        EpilogueType {
            name: String,
            elem: ScalarTy,
            found: Ty,
            span: Span,
        } => P0401,
        /// A collective or shuffle in the epilogue of `name`.
        EpilogueCollective { name: String, span: Span } => P0459,
        /// The tile `name` of `tile` in an epilogue of an accumulator
        /// of `shape`.
        EpilogueTileShape {
            name: String,
            tile: Vec<u32>,
            shape: [u32; 2],
            span: Span,
        } => P0457,
    }
}

impl DotError {
    /// The diagnostic users see: the one place its message, labels and
    /// notes are written.
    pub fn into_diagnostic(self) -> Diagnostic {
        use DotError::*;
        let code = self.code();
        match self {
            AccWithLet { name, span } => code
                .error("an accumulator tile is declared with `var`")
                .primary(span, "declared with `let`")
                .note(format!("`dot` adds to it: write `var {name} = zeros<...>[M, N]`")),
            AccTyped { span } => code
                .error("an accumulator tile takes no scalar type")
                .primary(span, "the element type is in `zeros<...>`"),
            AccElem { elem, span } => code
                .error(format!("an accumulator tile of {} is not supported", elem.name()))
                .primary(span, "the accumulator's element type")
                .note("an accumulator holds f32 (for f16, bf16 and f32 products), f16 (for f16 products) or i32 (for i8 and u8 products)"),
            AccExtent { span } => code
                .error("an accumulator tile's extents are constants from 1 to 65536")
                .primary(span, "not such a constant")
                .note("use literals, autotuned names and `ctx.warps`-style constants: the compiler lays the tile out over the warps before the launch"),
            AccRank { found, span } => code
                .error(format!(
                    "an accumulator tile has two extents, rows and columns; found {found}"
                ))
                .primary(span, "write `zeros<f32>[M, N]`"),
            AccNotFragments { rows, cols, span } => code
                .error(format!("an accumulator of [{rows}, {cols}] does not tile the tensor-core instruction"))
                .primary(span, format!("{rows} rows, {cols} columns"))
                .note(format!("mma.sync's accumulator fragment is {FRAG_M} x {FRAG_N}: the rows must be a multiple of {FRAG_M} and the columns of {FRAG_N}")),
            AccWarpSplit {
                rows,
                cols,
                warps,
                span,
            } => code
                .error(format!(
                    "an accumulator of [{rows}, {cols}] cannot be split over the CTA's {warps} {}",
                    warp_or_warps(warps)
                ))
                .primary(span, "no grid of warps divides this tile into whole 16 x 8 fragments")
                .note(format!("the warps form a Wm x Wn grid with Wm * Wn = {warps}; each warp owns [{rows} / Wm, {cols} / Wn], which must be a multiple of [16, 8]: change the tile or `@launch`")),
            AccTooManyRegs {
                rows,
                cols,
                regs,
                warps,
                warp_rows,
                warp_cols,
                span,
            } => code
                .error(format!(
                    "an accumulator of [{rows}, {cols}] needs {regs} registers per thread over {warps} {}, above the budget of {MAX_ACC_REGS}",
                    warp_or_warps(warps)
                ))
                .primary(
                    span,
                    if warps == 1 {
                        format!("the warp owns [{warp_rows}, {warp_cols}]")
                    } else {
                        format!("each of the {warps} warps owns [{warp_rows}, {warp_cols}]")
                    },
                )
                .note(format!("a thread may have 255 registers, and the accumulator may take {MAX_ACC_REGS} of them so the operands fit without spilling: use a smaller tile or more threads (`@launch`)")),
            ZerosInExpr { span } => code
                .error("`zeros<...>[...]` declares an accumulator tile, and is not a value")
                .primary(span, "used inside an expression")
                .note("declare it on its own: `var acc = zeros<f32>[64, 64]`"),
            DotNotAdded { name, span, decl } => code
                .error(format!(
                    "`dot` adds to the accumulator tile `{name}`: write `{name} += dot(a, b)`"
                ))
                .primary(span, "assigned here")
                .secondary(decl, "an accumulator tile, declared here")
                .note(DOT_FORM),
            DotArity { found, span } => code
                .error(format!("`dot` takes 2 arguments, found {found}"))
                .primary(span, "write `dot(a, b)`"),
            DotTypes {
                a,
                a_elem,
                b,
                b_elem,
                acc,
                span,
            } => code
                .error(format!(
                    "no tensor-core product of {} x {} into {}",
                    a_elem.name(),
                    b_elem.name(),
                    acc.name()
                ))
                .primary(
                    span,
                    format!(
                        "`{a}` holds {}, `{b}` holds {}",
                        a_elem.name(),
                        b_elem.name()
                    ),
                )
                .note(format!(
                    "the products Phobos compiles are {}",
                    mma::SUPPORTED_PAIRS
                )),
            DotNotTrans {
                a_elem,
                b_elem,
                span,
            } => code
                .error(format!("a `dot` of {} tiles takes its second operand as `trans(w)`", a_elem.name()))
                .primary(span, format!("a [K, N] tile of {}", b_elem.name()))
                .note(format!("8-bit and f32 (tf32) operands are read in the layout the tensor core takes them: store the second operand as [N, K] (rows of K, as LLM weights are) and write `dot(a, trans(w))`; the products Phobos compiles are {}", mma::SUPPORTED_PAIRS)),
            DotShapes {
                a: [m, ka],
                b,
                b_trans,
                rows,
                cols,
                span,
                decl,
            } => {
                let (kb, nb) = if b_trans { (b[1], b[0]) } else { (b[0], b[1]) };
                let bshape = if b_trans {
                    format!("trans of [{}, {}], so [{kb}, {nb}]", b[0], b[1])
                } else {
                    format!("[{kb}, {nb}]")
                };
                code.error("the shapes of `dot` do not match its accumulator")
                    .primary(span, format!("[{m}, {ka}] times {bshape}"))
                    .secondary(decl, format!("the accumulator is [{rows}, {cols}]"))
                    .note("`acc += dot(a, b)` needs `a` of [M, K], `b` of [K, N] (or `trans(b)` with `b` of [N, K]) and `acc` of [M, N]")
            }
            DotK {
                elem,
                k,
                step,
                span,
            } => code
                .error(format!("a `dot` over K = {k} does not tile the tensor-core instruction"))
                .primary(span, format!("K = {k}"))
                .note(format!("{} products step K by {step}: make the tiles' K extent a multiple of {step} (the copy zero-fills past the tensor's end, so a ragged K needs no care)", elem.name())),
            DotOperand { under_trans, span } => code
                .error(format!(
                    "{} takes a shared tile of two dims",
                    if under_trans { "`trans`" } else { "`dot`" }
                ))
                .primary(span, "not a rank-2 shared tile")
                .note(DOT_FORM),
            DotInExpr { name, span } => code
                .error(format!("`{name}` is only used as `acc += dot(a, b)`"))
                .primary(span, "used inside an expression")
                .note(DOT_FORM),
            AccNotValue { name, span, decl } => code
                .error(format!("the accumulator tile `{name}` is not element-addressable"))
                .primary(span, "used here")
                .secondary(decl, "an accumulator tile, declared here")
                .note(format!("the compiler spreads it over the warps' registers: add to it with `{name} += dot(a, b)` and store it whole, as in `C[r :+ M, c :+ N] = {name}`")),
            AccStoreConvert { from, to, span } => code
                .error(format!("an accumulator of {} is not stored as {}", from.name(), to.name()))
                .primary(span, "this conversion")
                .note("an f32 accumulator is stored as f32, or converted with `f16(acc)` or `bf16(acc)`; an f16 one as f16, or as `f32(acc)`; an i32 one as i32"),
            AccStoreNotTensor { span } => code
                .error("an accumulator tile is stored to a tensor")
                .primary(span, "the target is not a tensor"),
            AccStoreMismatch {
                rows,
                cols,
                elem,
                shape,
                target,
                compound,
                span,
            } => code
                .error("the accumulator does not match the target's shape and type")
                .primary(
                    span,
                    format!(
                        "the accumulator holds [{rows}, {cols}] {}, the target is {shape:?} {}{}",
                        elem.name(),
                        target.name(),
                        if compound {
                            ", with a compound assignment"
                        } else {
                            ""
                        }
                    ),
                ),
            AccTileMismatch {
                rows,
                cols,
                elem,
                tile,
                shape,
                target,
                compound,
                span,
                decl,
            } => code
                .error(format!("the accumulator does not fit the box of `{tile}` it is stored into"))
                .primary(
                    span,
                    format!(
                        "the accumulator holds [{rows}, {cols}] {}, the box is {shape:?} of {}{}",
                        elem.name(),
                        target.name(),
                        if compound {
                            ", with a compound assignment"
                        } else {
                            ""
                        }
                    ),
                )
                .secondary(decl, format!("`{tile}` declared here"))
                .note(format!("`{tile}[a :+ M, b :+ N] = acc` stores an [M, N] accumulator, with `=`, into a box of a rank-2 tile of its element type; an f32 accumulator into an f16 or bf16 tile as `f16(acc)` or `bf16(acc)`, an f16 one into an f32 tile as `f32(acc)`")),
            EpilogueType {
                name,
                elem,
                found,
                span,
            } => code
                .error(format!(
                    "the accumulator tile `{name}` holds {}, the value is {}",
                    elem.name(),
                    ty_name(found)
                ))
                .primary(span, "the value of each element")
                .note(conversion_note(elem)),
            EpilogueCollective { name, span } => code
                .error("an epilogue holds no collective or shuffle")
                .primary(span, "evaluated once per element of the accumulator")
                .note(format!(
                    "compute it before, with `let`, and use the value in `{name} = ...`"
                )),
            EpilogueTileShape {
                name,
                tile,
                shape,
                span,
            } => code
                .error(format!("the tile `{name}` does not fit the accumulator's shape"))
                .primary(span, format!("a tile of {tile:?}"))
                .note(format!("an epilogue reads tiles of the accumulator's shape {shape:?}, of one row [1, {}] (the same for every row) or of one column [{}, 1]", shape[1], shape[0])),
        }
    }

    /// One error of each variant, for
    /// [`CheckError::examples`](super::CheckError::examples).
    pub(super) fn examples() -> Vec<DotError> {
        use DotError::*;
        let span = Span::new(0, 1);
        let name = || "x".to_string();
        vec![
            AccWithLet { name: name(), span },
            AccTyped { span },
            AccElem {
                elem: ScalarTy::BF16,
                span,
            },
            AccExtent { span },
            AccRank { found: 3, span },
            AccNotFragments {
                rows: 24,
                cols: 64,
                span,
            },
            AccWarpSplit {
                rows: 16,
                cols: 8,
                warps: 4,
                span,
            },
            AccTooManyRegs {
                rows: 256,
                cols: 256,
                regs: 256,
                warps: 8,
                warp_rows: 128,
                warp_cols: 64,
                span,
            },
            ZerosInExpr { span },
            DotNotAdded {
                name: name(),
                span,
                decl: span,
            },
            DotArity { found: 3, span },
            DotTypes {
                a: "a".to_string(),
                a_elem: ScalarTy::F16,
                b: "b".to_string(),
                b_elem: ScalarTy::BF16,
                acc: ScalarTy::F32,
                span,
            },
            DotNotTrans {
                a_elem: ScalarTy::I8,
                b_elem: ScalarTy::I8,
                span,
            },
            DotShapes {
                a: [64, 32],
                b: [64, 16],
                b_trans: true,
                rows: 64,
                cols: 64,
                span,
                decl: span,
            },
            DotK {
                elem: ScalarTy::F16,
                k: 24,
                step: 16,
                span,
            },
            DotOperand {
                under_trans: false,
                span,
            },
            DotInExpr {
                name: "dot".to_string(),
                span,
            },
            AccNotValue {
                name: name(),
                span,
                decl: span,
            },
            AccStoreConvert {
                from: ScalarTy::I32,
                to: ScalarTy::F16,
                span,
            },
            AccStoreNotTensor { span },
            AccStoreMismatch {
                rows: 64,
                cols: 64,
                elem: ScalarTy::F32,
                shape: vec![64, 32],
                target: ScalarTy::F32,
                compound: false,
                span,
            },
            AccTileMismatch {
                rows: 64,
                cols: 64,
                elem: ScalarTy::F32,
                tile: "s".to_string(),
                shape: vec![64, 32],
                target: ScalarTy::F32,
                compound: false,
                span,
                decl: span,
            },
            EpilogueType {
                name: name(),
                elem: ScalarTy::F32,
                found: Ty::Scalar(ScalarTy::I32),
                span,
            },
            EpilogueCollective { name: name(), span },
            EpilogueTileShape {
                name: "t".to_string(),
                tile: vec![64, 32],
                shape: [64, 64],
                span,
            },
        ]
    }
}

/// How `dot` is written, for P0454's and P0455's notes.
const DOT_FORM: &str = "write `acc += dot(a, b)` or `acc += dot(a, trans(b))`, with `a` and `b` shared tiles copied from tensors (`var a = A[r :+ 64, k :+ 32]`)";

/// "warp" or "warps", after a count of `warps`.
fn warp_or_warps(warps: u32) -> &'static str {
    if warps == 1 {
        "warp"
    } else {
        "warps"
    }
}
