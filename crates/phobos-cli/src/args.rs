//! What every subcommand parses the same way: grids, targets, `PARAM=VALUE`
//! bindings, and `.npy` files (targets are `phobos_core::parse_arch`'s).
//! `sim` and `explain` share these so that one spelling means one thing
//! everywhere.

use phobos_core::ast::ScalarTy;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The grid limits of every supported target (CUDA's): x up to 2^31 - 1,
/// y and z up to 65535. The runtime refuses the same grids.
pub const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// The targets `phobos check` and `phobos build` compile for: `--arch`'s
/// when given (comma-separated, repeatable), else `PHOBOS_ARCHES`'s (as in
/// cargo builds through phobos-build), else every supported target. Each
/// is read by `phobos_core::parse_arch_list`.
pub fn target_arches(given: &[String]) -> Result<Vec<u32>, String> {
    let mut arches = if !given.is_empty() {
        phobos_core::parse_arch_list(&given.join(",")).map_err(|m| format!("--arch: {m}"))?
    } else {
        match std::env::var("PHOBOS_ARCHES") {
            Ok(v) if !v.trim().is_empty() => {
                phobos_core::parse_arch_list(&v).map_err(|m| format!("PHOBOS_ARCHES: {m}"))?
            }
            _ => phobos_core::ARCHES.to_vec(),
        }
    };
    arches.sort_unstable();
    Ok(arches)
}

/// `X`, `X,Y` or `X,Y,Z`: each at least 1 and within [`MAX_GRID`].
pub fn parse_grid(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("`{s}` is not a grid: give X, X,Y or X,Y,Z"));
    }
    let mut g = [1u32; 3];
    for (i, p) in parts.iter().enumerate() {
        g[i] = match p.parse::<u64>() {
            Ok(v) if v > 0 => check_grid_dim(i, v)?,
            _ => return Err(format!("`{p}` is not a positive grid size")),
        };
    }
    Ok(g)
}

/// A grid size along axis `i`, checked against the target's limit.
pub fn check_grid_dim(i: usize, v: u64) -> Result<u32, String> {
    let axis = ["x", "y", "z"][i.min(2)];
    u32::try_from(v)
        .ok()
        .filter(|&v| v <= MAX_GRID[i.min(2)])
        .ok_or_else(|| {
            format!(
                "a grid of {v} CTAs along {axis} is more than a GPU launches (at most {})",
                MAX_GRID[i.min(2)]
            )
        })
}

/// Reads a `.pho` file, refusing one larger than the compiler's limit (1 MiB)
/// without reading it whole (phobos-build's reader, the build script's).
pub fn read_source(path: &Path) -> Result<String, String> {
    phobos_build::read::file(path, phobos_build::read::SOURCE)
        .map_err(|e| e.message(&format!("`{}`", path.display())))
}

/// Reads a source from `reader` (stdin for `fmt -`), refusing one larger
/// than the compiler's limit (1 MiB) without reading it whole. `shown` names the
/// source in messages.
pub fn read_capped(reader: impl Read, shown: &str) -> Result<String, String> {
    phobos_build::read::text(reader, phobos_build::read::SOURCE).map_err(|e| e.message(shown))
}

/// The value of one `PARAM=VALUE` argument, by its spelling.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `PATH.npy`: tensor data.
    Npy(PathBuf),
    /// `shape:AxB`: random tensor data of that shape (explain only).
    Shape(Vec<u64>),
    /// A number, `true` or `false`, as written.
    Scalar(String),
}

/// `--define NAME=V` arguments: values of free `@autotune` constants,
/// each name once, each value an integer.
pub fn parse_defines(items: &[String]) -> Result<Vec<(String, i64)>, String> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for d in items {
        let (name, value) = d
            .split_once('=')
            .ok_or_else(|| format!("`--define {d}`: give NAME=VALUE"))?;
        let (name, value) = (name.trim(), value.trim());
        let value: i64 = value
            .parse()
            .map_err(|_| format!("`--define {d}`: `{value}` is not an integer"))?;
        if out.iter().any(|(n, _)| n == name) {
            return Err(format!("`--define {name}` is given twice"));
        }
        out.push((name.to_string(), value));
    }
    Ok(out)
}

/// `NAME=VALUE` arguments: each name once; VALUE a number, `true`,
/// `false`, `shape:AxB` or a path ending in `.npy`.
pub fn parse_bindings(items: &[String]) -> Result<Vec<(String, Value)>, String> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for b in items {
        let (name, value) = b.split_once('=').ok_or_else(|| {
            format!("`{b}` is not a binding: write PARAM=PATH.npy, PARAM=shape:AxB or PARAM=NUMBER")
        })?;
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("`{b}` has no parameter name before `=`"));
        }
        if out.iter().any(|(n, _)| n == name) {
            return Err(format!("parameter `{name}` is given twice"));
        }
        out.push((name.to_string(), parse_value(name, value)?));
    }
    Ok(out)
}

fn parse_value(name: &str, value: &str) -> Result<Value, String> {
    let v = value.trim();
    if let Some(dims) = v.strip_prefix("shape:") {
        let shape: Option<Vec<u64>> = dims
            .split(['x', 'X', ','])
            .map(|d| d.trim().parse::<u64>().ok().filter(|&d| d >= 1))
            .collect();
        let shape = shape.filter(|s| !s.is_empty()).ok_or_else(|| {
            format!("`{name}`: `{value}` is not a shape like shape:8x256 (each size at least 1)")
        })?;
        check_dims(name, &shape)?;
        return Ok(Value::Shape(shape));
    }
    if matches!(v, "true" | "false") || is_number(v) {
        return Ok(Value::Scalar(v.to_string()));
    }
    if Path::new(v)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("npy"))
    {
        return Ok(Value::Npy(PathBuf::from(v)));
    }
    Err(format!(
        "`{name}={value}`: `{value}` is neither a number, `true`/`false`, shape:AxB nor a .npy file"
    ))
}

fn is_number(v: &str) -> bool {
    let t = v.replace('_', "");
    let t = t.strip_prefix('-').unwrap_or(&t);
    t.parse::<f64>().is_ok()
        || t.strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Every dim of a tensor fits the kernels' 32-bit index.
fn check_dims(name: &str, shape: &[u64]) -> Result<(), String> {
    match shape.iter().find(|&&d| d > i32::MAX as u64) {
        Some(d) => Err(format!(
            "tensor `{name}`: a dim of {d} does not fit the kernels' 32-bit index (at most {})",
            i32::MAX
        )),
        None => Ok(()),
    }
}

/// Each element type's numpy dtype code (without byte order) and numpy's
/// name for it. `bf16` has no numpy type: it travels as `uint16` bits.
const NUMPY: [(ScalarTy, &str, &str); 12] = [
    (ScalarTy::Bool, "b1", "bool"),
    (ScalarTy::I8, "i1", "int8"),
    (ScalarTy::U8, "u1", "uint8"),
    (ScalarTy::I16, "i2", "int16"),
    (ScalarTy::U16, "u2", "uint16"),
    (ScalarTy::I32, "i4", "int32"),
    (ScalarTy::U32, "u4", "uint32"),
    (ScalarTy::I64, "i8", "int64"),
    (ScalarTy::U64, "u8", "uint64"),
    (ScalarTy::F16, "f2", "float16"),
    (ScalarTy::F32, "f4", "float32"),
    (ScalarTy::F64, "f8", "float64"),
];

/// The numpy dtype code (without byte order) that holds `elem`.
pub fn npy_code(elem: ScalarTy) -> &'static str {
    // NumPy has no bf16 or 8-bit float dtype: those tensors travel as
    // their bits (uint16, uint8; ml_dtypes' types view as them).
    let elem = match elem {
        ScalarTy::BF16 => ScalarTy::U16,
        ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => ScalarTy::U8,
        e => e,
    };
    NUMPY
        .iter()
        .find(|(t, _, _)| *t == elem)
        .map_or("", |(_, code, _)| code)
}

/// The element type a numpy dtype code (without byte order) holds.
pub fn npy_elem(code: &str) -> Option<ScalarTy> {
    NUMPY
        .iter()
        .find(|(_, c, _)| *c == code)
        .map(|(t, _, _)| *t)
}

/// numpy's name of a dtype code, e.g. `float32`.
pub fn numpy_name(code: &str) -> &'static str {
    NUMPY
        .iter()
        .find(|(_, c, _)| *c == code)
        .map_or("another type", |(_, _, name)| name)
}

/// A `.npy` file's element type (numpy's type string, e.g. `<f4`), shape
/// and data bytes.
pub struct Npy {
    pub descr: npyz::TypeStr,
    pub shape: Vec<u64>,
    pub bytes: Vec<u8>,
}

/// Reads a C-ordered `.npy` of plain numbers. The header's length and the
/// data's size are checked against the file's size before anything is
/// allocated, so a 14-byte file cannot ask for gigabytes.
pub fn read_npy(path: &Path, param: &str) -> Result<Npy, String> {
    let shown = path.display();
    let mut file = std::fs::File::open(path)
        .map_err(|e| format!("cannot open `{shown}` for tensor `{param}`: {e}"))?;
    let file_len = file
        .metadata()
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?
        .len();
    let bad =
        |why: String| format!("`{shown}` (tensor `{param}`) is not a readable .npy file: {why}");
    let mut prefix = [0u8; 12];
    let got = read_up_to(&mut file, &mut prefix).map_err(|e| bad(e.to_string()))?;
    if got < 10 || &prefix[..6] != b"\x93NUMPY" {
        return Err(bad("it does not start with the .npy magic".into()));
    }
    let (header_start, header_len) = match prefix[6] {
        1 => (10u64, u64::from(u16::from_le_bytes([prefix[8], prefix[9]]))),
        2 | 3 if got == 12 => (
            12,
            u64::from(u32::from_le_bytes([
                prefix[8], prefix[9], prefix[10], prefix[11],
            ])),
        ),
        v => return Err(bad(format!("format version {v} is not 1, 2 or 3"))),
    };
    if header_start + header_len > file_len {
        return Err(bad(format!(
            "its header claims {header_len} bytes, but the file has {file_len}"
        )));
    }
    // The header is at most the file's size: read it, then parse it.
    let end = (header_start + header_len) as usize;
    if end < got {
        return Err(bad(format!(
            "its header of {header_len} bytes is too short"
        )));
    }
    let mut head = prefix[..got].to_vec();
    head.resize(end, 0);
    file.read_exact(&mut head[got..])
        .map_err(|e| bad(e.to_string()))?;
    let header =
        npyz::NpyHeader::from_reader(&mut head.as_slice()).map_err(|e| bad(e.to_string()))?;
    if header.order() != npyz::Order::C {
        return Err(format!(
            "`{shown}` (tensor `{param}`) is in Fortran order; save a C-contiguous array (np.ascontiguousarray)"
        ));
    }
    let npyz::DType::Plain(descr) = header.dtype() else {
        return Err(format!(
            "`{shown}` (tensor `{param}`) holds structured records, not plain numbers"
        ));
    };
    let shape = header.shape().to_vec();
    check_dims(param, &shape)?;
    let want = shape
        .iter()
        .try_fold(descr.num_bytes().unwrap_or(1) as u64, |a, &d| {
            a.checked_mul(d)
        })
        .ok_or_else(|| bad("its shape overflows 64 bits".into()))?;
    let have = file_len - (header_start + header_len);
    if have < want {
        return Err(format!(
            "`{shown}` (tensor `{param}`) is cut short: {have} bytes of data for shape {shape:?}, which needs {want}"
        ));
    }
    let mut bytes = vec![0u8; want as usize];
    file.read_exact(&mut bytes)
        .map_err(|e| format!("cannot read the data of `{shown}`: {e}"))?;
    Ok(Npy {
        descr,
        shape,
        bytes,
    })
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_element_type_has_one_numpy_dtype_both_ways() {
        for (t, code, name) in NUMPY {
            assert_eq!(npy_code(t), code);
            assert_eq!(npy_elem(code), Some(t));
            assert_eq!(numpy_name(code), name);
        }
        // bf16 travels as uint16 bits, so uint16 reads back as u16.
        assert_eq!(npy_code(ScalarTy::BF16), "u2");
        assert_eq!(npy_code(ScalarTy::F8E4M3), "u1");
        assert_eq!(npy_code(ScalarTy::F8E5M2), "u1");
        assert_eq!(npy_elem("u2"), Some(ScalarTy::U16));
        assert_eq!(npy_elem("c8"), None);
        assert_eq!(numpy_name("c8"), "another type");
    }

    #[test]
    fn grids_beyond_the_gpu_limits_are_refused() {
        assert_eq!(parse_grid("4,2"), Ok([4, 2, 1]));
        assert!(parse_grid("2147483648")
            .unwrap_err()
            .contains("at most 2147483647"));
        assert!(parse_grid("1,65536").unwrap_err().contains("at most 65535"));
        assert!(parse_grid("0").is_err());
    }

    #[test]
    fn bindings_are_classified_by_their_spelling() {
        let b = |s: &[&str]| parse_bindings(&s.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            b(&["a=1.5", "w=x.npy", "s=shape:2x3", "f=false"]).unwrap(),
            [
                ("a".into(), Value::Scalar("1.5".into())),
                ("w".into(), Value::Npy("x.npy".into())),
                ("s".into(), Value::Shape(vec![2, 3])),
                ("f".into(), Value::Scalar("false".into())),
            ]
        );
        assert!(b(&["alpha=abc"]).unwrap_err().contains("neither a number"));
        assert!(b(&["a=1", "a=2"]).unwrap_err().contains("given twice"));
        assert!(b(&["s=shape:3000000000"]).unwrap_err().contains("32-bit"));
    }
}
