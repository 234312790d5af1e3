//! The kernel's declaration written back as Phobos source, from its
//! metadata: the attributes that matter to a caller and the parameter list.
//! It documents each generated function.

use phobos_meta::binding::describe_param;
use phobos_meta::meta::{GridExpr, KernelMeta};

/// `@autotune`, `@launch`, `@aligned` and `@grid` lines, then
/// `kernel name(params)`.
pub fn kernel_signature(meta: &KernelMeta) -> String {
    let mut lines = Vec::new();
    if !meta.autotune.is_empty() {
        let parts: Vec<String> = meta
            .autotune
            .iter()
            .map(|(name, values)| {
                let values: Vec<String> = values.iter().map(i64::to_string).collect();
                format!("{name} in [{}]", values.join(", "))
            })
            .collect();
        lines.push(format!("@autotune({})", parts.join(", ")));
    }
    lines.push(format!("@launch({})", meta.threads));
    if !meta.aligned.is_empty() {
        let parts: Vec<String> = meta
            .aligned
            .iter()
            .map(|(dim, m)| format!("{dim} = {m}"))
            .collect();
        lines.push(format!("@aligned({})", parts.join(", ")));
    }
    if let Some(grid) = &meta.grid {
        let parts: Vec<String> = grid.iter().map(grid_expr).collect();
        lines.push(format!("@grid({})", parts.join(", ")));
    }
    let params: Vec<String> = meta
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, describe_param(&p.kind)))
        .collect();
    lines.push(format!("kernel {}({})", meta.name, params.join(", ")));
    lines.join("\n")
}

/// A grid expression as Phobos source (fully parenthesized binaries).
pub(crate) fn grid_expr(e: &GridExpr) -> String {
    match e {
        GridExpr::Const(c) => c.to_string(),
        GridExpr::Dim(d) => d.clone(),
        GridExpr::Binary(o, a, b) => format!("({} {} {})", grid_expr(a), o.symbol(), grid_expr(b)),
        GridExpr::Cdiv(a, b) => format!("cdiv({}, {})", grid_expr(a), grid_expr(b)),
        GridExpr::Min(a, b) => format!("min({}, {})", grid_expr(a), grid_expr(b)),
        GridExpr::Max(a, b) => format!("max({}, {})", grid_expr(a), grid_expr(b)),
    }
}
