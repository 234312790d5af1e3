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
}

impl ScalarTy {
    pub const ALL: [ScalarTy; 13] = [
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
        }
    }
    pub fn from_name(s: &str) -> Option<ScalarTy> {
        ScalarTy::ALL.iter().copied().find(|t| t.name() == s)
    }
    /// Size in bytes of one element in memory (`bool` is one byte).
    pub fn size(self) -> u32 {
        match self {
            ScalarTy::Bool | ScalarTy::I8 | ScalarTy::U8 => 1,
            ScalarTy::I16 | ScalarTy::U16 | ScalarTy::F16 | ScalarTy::BF16 => 2,
            ScalarTy::I32 | ScalarTy::U32 | ScalarTy::F32 => 4,
            ScalarTy::I64 | ScalarTy::U64 | ScalarTy::F64 => 8,
        }
    }
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarTy::F16 | ScalarTy::BF16 | ScalarTy::F32 | ScalarTy::F64
        )
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
