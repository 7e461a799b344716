//! CPU kernels, one file per op family.

pub mod binary;
pub mod copy;
pub mod get_rows;
pub mod matmul;
pub mod norm;
pub mod reduce;
pub mod softmax;
pub mod unary;

use super::tdata::TData;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{Error, Result};

/// Types whose elements CPU kernels read and write one by one.
pub fn is_plain(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16 | Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::F64)
}

/// Float types the f32-computing kernels accept.
pub fn is_float(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16)
}

/// Source `i` of a node, as kernel data. Constructors guarantee presence for the ops
/// that use it; a missing one is still an error, not a panic.
pub fn src(node: &Tensor, i: usize) -> Result<TData> {
    let s = node
        .src(i)
        .ok_or_else(|| Error::invalid(format!("{} node '{}' has no src[{i}]", node.op().name(), node.label())))?;
    TData::of(s)
}
