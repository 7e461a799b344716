//! The CPU backend's one match over the op table: which kernel computes each op. No
//! catch-all arm, so a new op does not compile until it is answered for here (None means
//! the CPU has no kernel for it yet and reports it unsupported).

use super::kernel::{Cx, Kernel};
use super::ops::{binary, copy, get_rows, matmul, norm, reduce, softmax, unary};
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

        Op::Add1
        | Op::Acc { .. }
        | Op::Argmax
        | Op::CountEqual
        | Op::Repeat
        | Op::RepeatBack
        | Op::Concat { .. }
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
        | Op::Rope { .. }
        | Op::RopeBack { .. }
        | Op::ConvTranspose1d { .. }
        | Op::Im2col { .. }
        | Op::Im2colBack { .. }
        | Op::ConvTranspose2d { .. }
        | Op::Pool1d { .. }
        | Op::Pool2d { .. }
        | Op::Pool2dBack { .. }
        | Op::Upscale
        | Op::Pad
        | Op::Arange { .. }
        | Op::TimestepEmbedding { .. }
        | Op::Argsort { .. }
        | Op::FlashAttnExt { .. }
        | Op::FlashAttnBack { .. }
        | Op::SsmConv
        | Op::SsmScan
        | Op::WinPart { .. }
        | Op::WinUnpart { .. }
        | Op::GetRelPos
        | Op::AddRelPos { .. }
        | Op::RwkvWkv
        | Op::CrossEntropyLoss
        | Op::CrossEntropyLossBack
        | Op::OptStepAdamw { .. } => None,
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
