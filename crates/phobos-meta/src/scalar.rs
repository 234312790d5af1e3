//! The scalar types and the operators of the language, as kernel metadata
//! (`@grid` expressions, parameter types) and the runtime name them.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarTy {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    BF16,
    F32,
    F64,
    /// 8-bit float, 4 exponent bits (bias 7), 3 mantissa bits, no
    /// infinities, NaN `0x7f`/`0xff`, max finite 448 (OCP FP8 E4M3; PTX `.e4m3`).
    F8E4M3,
    /// 8-bit float, 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like
    /// infinities and NaNs, max finite 57344 (OCP FP8 E5M2; PTX `.e5m2`).
    F8E5M2,
}

impl ScalarTy {
    pub const ALL: [ScalarTy; 15] = [
        ScalarTy::Bool,
        ScalarTy::I8,
        ScalarTy::U8,
        ScalarTy::I16,
        ScalarTy::U16,
        ScalarTy::I32,
        ScalarTy::U32,
        ScalarTy::I64,
        ScalarTy::U64,
        ScalarTy::F16,
        ScalarTy::BF16,
        ScalarTy::F32,
        ScalarTy::F64,
        ScalarTy::F8E4M3,
        ScalarTy::F8E5M2,
    ];
    pub fn name(self) -> &'static str {
        match self {
            ScalarTy::Bool => "bool",
            ScalarTy::I8 => "i8",
            ScalarTy::U8 => "u8",
            ScalarTy::I16 => "i16",
            ScalarTy::U16 => "u16",
            ScalarTy::I32 => "i32",
            ScalarTy::U32 => "u32",
            ScalarTy::I64 => "i64",
            ScalarTy::U64 => "u64",
            ScalarTy::F16 => "f16",
            ScalarTy::BF16 => "bf16",
            ScalarTy::F32 => "f32",
            ScalarTy::F64 => "f64",
            ScalarTy::F8E4M3 => "f8e4m3",
            ScalarTy::F8E5M2 => "f8e5m2",
        }
    }
    pub fn from_name(s: &str) -> Option<ScalarTy> {
        ScalarTy::ALL.iter().copied().find(|t| t.name() == s)
    }
    /// Size in bytes of one element in memory (`bool` is one byte).
    pub fn size(self) -> u32 {
        match self {
            ScalarTy::Bool | ScalarTy::I8 | ScalarTy::U8 | ScalarTy::F8E4M3 | ScalarTy::F8E5M2 => 1,
            ScalarTy::I16 | ScalarTy::U16 | ScalarTy::F16 | ScalarTy::BF16 => 2,
            ScalarTy::I32 | ScalarTy::U32 | ScalarTy::F32 => 4,
            ScalarTy::I64 | ScalarTy::U64 | ScalarTy::F64 => 8,
        }
    }
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarTy::F16
                | ScalarTy::BF16
                | ScalarTy::F32
                | ScalarTy::F64
                | ScalarTy::F8E4M3
                | ScalarTy::F8E5M2
        )
    }
    /// The 8-bit floats: storage and conversion types with no arithmetic
    /// of their own (values are converted to `f16`/`f32` to compute).
    pub fn is_f8(self) -> bool {
        matches!(self, ScalarTy::F8E4M3 | ScalarTy::F8E5M2)
    }
    pub fn is_int(self) -> bool {
        !self.is_float() && self != ScalarTy::Bool
    }
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ScalarTy::I8 | ScalarTy::I16 | ScalarTy::I32 | ScalarTy::I64
        ) || self.is_float()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    /// The operator as the language writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}
