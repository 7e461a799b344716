//! ADD1: a + b for a scalar b, in a's type (ggml: f32 + f32, f16 + f16|f32, bf16 + bf16|f32).
//! ggml converts each element to f32, adds, and rounds back to a's type; so does this.

use super::gather::map_f32;
use super::src;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    let ty = a.ty();
    matches!(ty, Type::F32 | Type::F16 | Type::BF16) && node.ty() == ty && (b.ty() == Type::F32 || b.ty() == ty)
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    // SAFETY: b is a scalar (checked by the constructor).
    let v = unsafe { b.get_f32(0, 0, 0, 0) };
    // In place (add1Inplace) dst is a's memory: map_f32 reads each element before writing it.
    map_f32(cx, &a, &d, |_, x| x + v);
    Ok(())
}
