//! The CPU backend's one match over the op table: which kernel computes each op. No
//! catch-all arm, so a new op does not compile until it is answered for here (None means
//! the CPU has no kernel for it yet and reports it unsupported).

use super::kernel::{Cx, Kernel};
use super::ops::{
    adamw, add1, backward, binary, conv_back, conv_transpose, copy, diag_mask, flash_attn, generate, get_rows,
    group_norm, im2col, index, loss, matmul, mul_mat_id, norm, out_prod, pool, reduce, rope, rwkv, sam, softmax, ssm,
    tile, unary, window,
};
use crate::op::Op;
use crate::tensor::Tensor;
use crate::{Error, Result};

fn kernel_for(op: &Op) -> Option<Kernel> {
    match op {
        Op::None | Op::Reshape | Op::View { .. } | Op::Permute { .. } | Op::Transpose => Some(NOOP),

        Op::Dup | Op::Cpy | Op::Cont => Some(copy::KERNEL),
        Op::Add | Op::Sub | Op::Mul | Op::Div => Some(binary::KERNEL),
        Op::Scale { .. }
        | Op::Sqr
        | Op::Sqrt
        | Op::Log
        | Op::Sin
        | Op::Cos
        | Op::Clamp { .. }
        | Op::LeakyRelu { .. }
        | Op::Unary { .. } => Some(unary::KERNEL),
        Op::Sum | Op::SumRows | Op::Mean => Some(reduce::KERNEL),
        Op::Norm { .. } | Op::RmsNorm { .. } => Some(norm::KERNEL),
        Op::SoftMax { .. } => Some(softmax::KERNEL),
        Op::GetRows => Some(get_rows::KERNEL),
        Op::MulMat { .. } => Some(matmul::KERNEL),
        Op::MulMatId => Some(mul_mat_id::KERNEL),
        Op::OutProd => Some(out_prod::KERNEL),
        Op::Rope { .. } | Op::RopeBack { .. } => Some(rope::KERNEL),
        Op::FlashAttnExt { .. } => Some(flash_attn::KERNEL),
        Op::SsmConv | Op::SsmScan => Some(ssm::KERNEL),
        Op::RwkvWkv => Some(rwkv::KERNEL),
        Op::CrossEntropyLoss | Op::CrossEntropyLossBack => Some(loss::KERNEL),
        Op::OptStepAdamw { .. } => Some(adamw::KERNEL),
        Op::SoftMaxBack | Op::SiluBack | Op::RmsNormBack { .. } | Op::GetRowsBack => Some(backward::KERNEL),
        Op::Pool2dBack { .. } | Op::Im2colBack { .. } => Some(conv_back::KERNEL),

        Op::Add1 => Some(add1::KERNEL),
        Op::Acc { .. } | Op::Set { .. } => Some(window::KERNEL),
        Op::Concat { .. } | Op::Pad | Op::Repeat | Op::RepeatBack | Op::Upscale | Op::Diag => Some(tile::KERNEL),
        Op::Argmax | Op::CountEqual | Op::Argsort { .. } => Some(index::KERNEL),
        Op::GroupNorm { .. } => Some(group_norm::KERNEL),
        Op::DiagMaskInf { .. } | Op::DiagMaskZero { .. } => Some(diag_mask::KERNEL),
        Op::Im2col { .. } => Some(im2col::KERNEL),
        Op::Pool1d { .. } | Op::Pool2d { .. } => Some(pool::KERNEL),
        Op::ConvTranspose1d { .. } | Op::ConvTranspose2d { .. } => Some(conv_transpose::KERNEL),
        Op::Arange { .. } | Op::TimestepEmbedding { .. } => Some(generate::KERNEL),
        Op::WinPart { .. } | Op::WinUnpart { .. } | Op::GetRelPos | Op::AddRelPos { .. } => Some(sam::KERNEL),

        Op::FlashAttnBack { .. } => None,
    }
}

/// View ops and leaves compute nothing.
const NOOP: Kernel = Kernel { supports: |_| true, run: |_, _| Ok(()) };

pub fn supports(node: &Tensor) -> bool {
    kernel_for(&node.op()).is_some_and(|k| (k.supports)(node))
}

pub fn compute(node: &Tensor, cx: &Cx) -> Result<()> {
    match kernel_for(&node.op()) {
        Some(k) => (k.run)(node, cx),
        None => Err(Error::unsupported(format!("CPU has no kernel for {}", node.op().desc()))),
    }
}
