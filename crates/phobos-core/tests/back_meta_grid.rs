//! Each autotune variant carries its own `@grid`, with its tuning values
//! folded in, so a launcher that picks variant BLOCK = 128 launches half the
//! CTAs of variant BLOCK = 64.

use phobos_core::meta::GridExpr;
use phobos_core::{compile, CompileOptions};

/// The corpus kernel with a free autotune constant BLOCK in [64, 128] and
/// `@grid(cdiv(N, BLOCK))`.
const SRC: &str = include_str!("../../../tests/in/autotune_block.pho");

#[test]
fn every_variant_has_its_own_grid() {
    let (kernels, diags) = compile(SRC, "autotune_block.pho", &CompileOptions::default());
    assert!(diags.is_empty(), "{diags:?}");
    let meta = &kernels[0].meta;
    assert_eq!(meta.variants.len(), 2);
    for v in &meta.variants {
        let block = v.values[0].1;
        assert_eq!(v.threads as i64, block);
        let want = vec![GridExpr::Cdiv(
            Box::new(GridExpr::Dim("N".into())),
            Box::new(GridExpr::Const(block)),
        )];
        assert_eq!(v.grid.as_ref(), Some(&want), "variant {}", v.entry);
    }
}
