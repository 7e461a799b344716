//! The CPU backend's one match over the op table: which kernel computes each op. No
//! catch-all arm, so a new op does not compile until it is answered for here (None means
//! the CPU has no kernel for it yet and reports it unsupported).

use super::kernel::Kernel;
use super::ops::{
    adamw, add1, backward, binary, conv_back, conv_transpose, copy, diag_mask, flash_attn, generate, get_rows,
    group_norm, im2col, index, loss, matmul, mul_mat_id, norm, out_prod, pool, reduce, rope, rwkv, sam, softmax, ssm,
    tile, unary, window,
};
use crate::op::OpKind;
use crate::tensor::Tensor;

fn kernel_for(kind: OpKind) -> Option<Kernel> {
    match kind {
        OpKind::None | OpKind::Reshape | OpKind::View | OpKind::Permute | OpKind::Transpose => Some(NOOP),

        OpKind::Dup | OpKind::Cpy | OpKind::Cont => Some(copy::KERNEL),
        OpKind::Add | OpKind::Sub | OpKind::Mul | OpKind::Div => Some(binary::KERNEL),
        OpKind::Scale
        | OpKind::Sqr
        | OpKind::Sqrt
        | OpKind::Log
        | OpKind::Sin
        | OpKind::Cos
        | OpKind::Clamp
        | OpKind::LeakyRelu
        | OpKind::Unary => Some(unary::KERNEL),
        OpKind::Sum | OpKind::SumRows | OpKind::Mean => Some(reduce::KERNEL),
        OpKind::Norm | OpKind::RmsNorm => Some(norm::KERNEL),
        OpKind::SoftMax => Some(softmax::KERNEL),
        OpKind::GetRows => Some(get_rows::KERNEL),
        OpKind::MulMat => Some(matmul::KERNEL),
        OpKind::MulMatId => Some(mul_mat_id::KERNEL),
        OpKind::OutProd => Some(out_prod::KERNEL),
        OpKind::Rope | OpKind::RopeBack => Some(rope::KERNEL),
        OpKind::FlashAttnExt => Some(flash_attn::KERNEL),
        OpKind::SsmConv | OpKind::SsmScan => Some(ssm::KERNEL),
        OpKind::RwkvWkv => Some(rwkv::KERNEL),
        OpKind::CrossEntropyLoss | OpKind::CrossEntropyLossBack => Some(loss::KERNEL),
        OpKind::OptStepAdamw => Some(adamw::KERNEL),
        OpKind::SoftMaxBack | OpKind::SiluBack | OpKind::RmsNormBack | OpKind::GetRowsBack => Some(backward::KERNEL),
        OpKind::Pool2dBack | OpKind::Im2colBack => Some(conv_back::KERNEL),

        OpKind::Add1 => Some(add1::KERNEL),
        OpKind::Acc | OpKind::Set => Some(window::KERNEL),
        OpKind::Concat | OpKind::Pad | OpKind::Repeat | OpKind::RepeatBack | OpKind::Upscale | OpKind::Diag => {
            Some(tile::KERNEL)
        }
        OpKind::Argmax | OpKind::CountEqual | OpKind::Argsort => Some(index::KERNEL),
        OpKind::GroupNorm => Some(group_norm::KERNEL),
        OpKind::DiagMaskInf | OpKind::DiagMaskZero => Some(diag_mask::KERNEL),
        OpKind::Im2col => Some(im2col::KERNEL),
        OpKind::Pool1d | OpKind::Pool2d => Some(pool::KERNEL),
        OpKind::ConvTranspose1d | OpKind::ConvTranspose2d => Some(conv_transpose::KERNEL),
        OpKind::Arange | OpKind::TimestepEmbedding => Some(generate::KERNEL),
        OpKind::WinPart | OpKind::WinUnpart | OpKind::GetRelPos | OpKind::AddRelPos => Some(sam::KERNEL),

        OpKind::FlashAttnBack => None,
    }
}

/// View ops and leaves compute nothing.
const NOOP: Kernel = Kernel { supports: |_| true, run: |_, _| Ok(()) };

/// The node's kernel where the CPU has one that computes it (its op, types and layouts).
/// The kind, not the op: a compute asks this for every node, and the kind needs no lock.
pub fn kernel(node: &Tensor) -> Option<Kernel> {
    kernel_for(node.kind()).filter(|k| (k.supports)(node))
}

pub fn supports(node: &Tensor) -> bool {
    kernel(node).is_some()
}
