//! The sizes of the front end's hot nodes, pinned. Every statement of a
//! block is as large as the largest statement kind and every expression
//! as large as the largest expression kind, so one large variant held
//! inline (three `Expr`s in `for`, a collective's four fields) made every
//! `a = a + 1.0` pay for it. Rare or large parts are boxed instead; these
//! bounds keep a new variant from growing the nodes back unnoticed (box
//! its payload). `front_memory.rs` measures what the sizes add up to.

use phobos_core::{ast, hir, lexer};
use std::mem::size_of;

#[track_caller]
fn at_most<T>(bound: usize) {
    let size = size_of::<T>();
    assert!(
        size <= bound,
        "size_of::<{}>() is {size} bytes, above {bound}: box the new variant's payload",
        std::any::type_name::<T>()
    );
}

#[test]
fn the_hot_nodes_of_the_front_end_stay_small() {
    // Before they were boxed: 96, 208, 200 and 256 bytes.
    at_most::<ast::Expr>(40);
    at_most::<ast::Stmt>(96);
    at_most::<ast::Subscript>(40);
    at_most::<hir::Stmt>(112);
    // `hir::ConstVal::Int` holds an `i128`, which aligns every expression
    // to 16 bytes.
    at_most::<hir::Expr>(64);
    at_most::<lexer::Token>(32);
}
