//! phobos-fuzz: the random-program differential tester. A seeded generator
//! (`gen`) writes valid, race-free, deterministic kernels (`program`); each
//! is checked by phobos-core, executed by the reference evaluator of the
//! checked HIR (`eval`, over the scalar semantics in `value`), compiled to
//! PTX and run in phobos-sim (`diff`); a disagreement is shrunk
//! (`minimize`) and saved under `tests/fuzz-cases/`. Mutated programs go
//! through `check` and must give diagnostics, never a panic (`mutate`).

pub mod diff;
pub mod eval;
pub mod gen;
pub mod program;
pub mod value;
