//! The WebGPU backend's one match over the op table: which kernel computes each op. No
//! catch-all arm, so a new op does not compile until it is answered for here (None: no
//! shader yet, so supports_op says false and compute reports it unsupported).

use super::context::GpuContext;
use super::ops::{binary, fits_binding, matmul, norm, softmax, unary, Dispatch, Kernel};
use super::ops::{generate, place, rel_pos, rope};
#[cfg(test)]
use super::pipeline::PipelineKey;
use crate::op::{Op, OpKind};
use crate::tensor::Tensor;
use crate::Result;

fn kernel_for(op: &Op) -> Option<Kernel> {
    match op {
        Op::None | Op::Reshape | Op::View { .. } | Op::Permute { .. } | Op::Transpose => Some(NOOP),

        Op::Add | Op::Sub | Op::Mul | Op::Div => Some(binary::KERNEL),
        Op::Scale { .. } => Some(unary::KERNEL),
        Op::RmsNorm { .. } => Some(norm::KERNEL),
        Op::SoftMax { .. } => Some(softmax::KERNEL),
        Op::MulMat { .. } => Some(matmul::KERNEL),
        Op::Rope { .. } | Op::RopeBack { .. } => Some(rope::KERNEL),
        Op::Concat { .. } | Op::Pad | Op::Upscale | Op::WinPart { .. } | Op::WinUnpart { .. } | Op::GetRelPos => {
            Some(place::KERNEL)
        }
        Op::Arange { .. } | Op::TimestepEmbedding { .. } => Some(generate::KERNEL),
        Op::AddRelPos { .. } => Some(rel_pos::KERNEL),

        Op::Dup
        | Op::Cpy
        | Op::Cont
        | Op::Sqr
        | Op::Sqrt
        | Op::Log
        | Op::Sin
        | Op::Cos
        | Op::Clamp { .. }
        | Op::LeakyRelu { .. }
        | Op::Unary { .. }
        | Op::Sum
        | Op::SumRows
        | Op::Mean
        | Op::Norm { .. }
        | Op::GetRows
        | Op::Add1
        | Op::Acc { .. }
        | Op::Argmax
        | Op::CountEqual
        | Op::Repeat
        | Op::RepeatBack
        | Op::SiluBack
        | Op::RmsNormBack { .. }
        | Op::GroupNorm { .. }
        | Op::MulMatId
        | Op::OutProd
        | Op::Set { .. }
        | Op::GetRowsBack
        | Op::Diag
        | Op::DiagMaskInf { .. }
        | Op::DiagMaskZero { .. }
        | Op::SoftMaxBack
        | Op::ConvTranspose1d { .. }
        | Op::Im2col { .. }
        | Op::Im2colBack { .. }
        | Op::ConvTranspose2d { .. }
        | Op::Pool1d { .. }
        | Op::Pool2d { .. }
        | Op::Pool2dBack { .. }
        | Op::Argsort { .. }
        | Op::FlashAttnExt { .. }
        | Op::FlashAttnBack { .. }
        | Op::SsmConv
        | Op::SsmScan
        | Op::RwkvWkv
        | Op::CrossEntropyLoss
        | Op::CrossEntropyLossBack
        | Op::OptStepAdamw { .. } => None,
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
    let computes = !(node.op().kind().is_view() || node.op().kind() == OpKind::None);
    !computes || (std::iter::once(node).chain(node.srcs().iter().flatten()).all(|t| fits_binding(ctx, t)))
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
        rope::variants(),
        place::variants(),
        generate::variants(),
        rel_pos::variants(),
    ]
    .concat()
}
