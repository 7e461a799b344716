//! The WebGPU backend's one match over the op table: which kernel computes each op. No
//! catch-all arm, so a new op does not compile until it is answered for here (None: no
//! shader yet, so supports_op says false and compute reports it unsupported).

use super::context::GpuContext;
use super::ops::{
    adamw, binary, conv, cpy, fits_binding, flash_attn, generate, get_rows, index, loops, loss, matmul, mul_mat_id,
    norm, out_prod, place, pool, recurrent, reduce, rel_pos, rope, softmax, unary, window, Dispatch, Kernel,
};
#[cfg(test)]
use super::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

fn kernel_for(op: &Op) -> Option<Kernel> {
    match op {
        Op::None | Op::Reshape | Op::View { .. } | Op::Permute { .. } | Op::Transpose => Some(NOOP),

        Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Add1 | Op::SiluBack => Some(binary::KERNEL),
        Op::Scale { .. }
        | Op::Sqr
        | Op::Sqrt
        | Op::Log
        | Op::Sin
        | Op::Cos
        | Op::Clamp { .. }
        | Op::LeakyRelu { .. }
        | Op::Unary { .. }
        | Op::Repeat
        | Op::RepeatBack
        | Op::Diag
        | Op::DiagMaskInf { .. }
        | Op::DiagMaskZero { .. } => Some(unary::KERNEL),
        Op::Set { .. } | Op::Acc { .. } => Some(window::KERNEL),
        Op::Dup | Op::Cpy | Op::Cont => Some(cpy::KERNEL),
        Op::GetRows => Some(get_rows::KERNEL),
        Op::GetRowsBack => Some(get_rows::BACK),

        Op::Sum => Some(reduce::SUM),
        Op::SumRows | Op::Mean => Some(reduce::SUM_ROWS),
        Op::CountEqual => Some(reduce::COUNT_EQUAL),
        Op::Argmax => Some(index::ARGMAX),
        Op::Argsort { .. } => Some(index::ARGSORT),
        Op::RmsNorm { .. } | Op::Norm { .. } => Some(norm::KERNEL),
        Op::GroupNorm { .. } => Some(norm::GROUP_NORM),
        Op::RmsNormBack { .. } => Some(norm::RMS_NORM_BACK),
        Op::SoftMax { .. } => Some(softmax::KERNEL),
        Op::SoftMaxBack => Some(softmax::BACK),
        Op::CrossEntropyLoss => Some(loss::LOSS),
        Op::CrossEntropyLossBack => Some(loss::BACK),
        Op::OptStepAdamw { .. } => Some(adamw::KERNEL),

        Op::Rope { .. } | Op::RopeBack { .. } => Some(rope::KERNEL),
        Op::Concat { .. } | Op::Pad | Op::Upscale | Op::WinPart { .. } | Op::WinUnpart { .. } | Op::GetRelPos => {
            Some(place::KERNEL)
        }
        Op::Arange { .. } | Op::TimestepEmbedding { .. } => Some(generate::KERNEL),
        Op::AddRelPos { .. } => Some(rel_pos::KERNEL),

        Op::Im2col { .. } => Some(conv::IM2COL),
        Op::Im2colBack { .. } => Some(conv::IM2COL_BACK),
        Op::ConvTranspose1d { .. } | Op::ConvTranspose2d { .. } => Some(conv::CONV_TRANSPOSE),
        Op::Pool1d { .. } | Op::Pool2d { .. } => Some(pool::POOL),
        Op::Pool2dBack { .. } => Some(pool::POOL_BACK),
        Op::SsmConv => Some(recurrent::SSM_CONV),
        Op::SsmScan => Some(recurrent::SSM_SCAN),
        Op::RwkvWkv => Some(recurrent::RWKV_WKV),

        Op::MulMat { .. } => Some(matmul::KERNEL),
        Op::MulMatId => Some(mul_mat_id::KERNEL),
        Op::OutProd => Some(out_prod::KERNEL),
        Op::FlashAttnExt { .. } => Some(flash_attn::KERNEL),

        // ggml has no GPU kernel for it either: autodiff of flash attention is unimplemented.
        Op::FlashAttnBack { .. } => None,
    }
}

/// View ops and leaves compute nothing.
const NOOP: Kernel = Kernel { supports: |_| true, plan: |_, _| Ok(None) };

/// Whether this device computes `node`: a kernel takes its types and layout, and every
/// tensor it binds fits one storage binding of the device (no kernel splits bindings yet,
/// so a bigger tensor is refused here rather than failing wgpu's validation).
pub fn supports(node: &Tensor, ctx: &GpuContext) -> bool {
    let Some(k) = kernel_for(&node.op()) else { return false };
    if !(k.supports)(node) {
        return false;
    }
    let computes = !node.kind().computes_nothing();
    let mut tensors = std::iter::once(node).chain(node.srcs().iter().flatten());
    !computes
        || (tensors.all(|t| fits_binding(ctx, t)) && ctx.loop_limit.is_none_or(|limit| loops::bound(node) <= limit))
}

/// The dispatch computing `node`, None for nodes that compute nothing. Callers check
/// `supports` first.
pub fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    match kernel_for(&node.op()) {
        Some(k) => (k.plan)(node, ctx),
        None => Err(crate::backend::unsupported("WebGPU", node)),
    }
}

/// Every pipeline variant any kernel compiles: the shader test validates each.
#[cfg(test)]
pub fn all_variants() -> Vec<PipelineKey> {
    [
        binary::variants(),
        unary::variants(),
        norm::variants(),
        softmax::variants(),
        matmul::variants(),
        get_rows::variants(),
        cpy::variants(),
        flash_attn::variants(),
        mul_mat_id::variants(),
        out_prod::variants(),
        window::variants(),
        reduce::variants(),
        index::variants(),
        loss::variants(),
        adamw::variants(),
        rope::variants(),
        place::variants(),
        generate::variants(),
        rel_pos::variants(),
        conv::variants(),
        pool::variants(),
        recurrent::variants(),
    ]
    .concat()
}
