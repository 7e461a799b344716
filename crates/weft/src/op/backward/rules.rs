//! The backward rule of each op (ggml_compute_backward): given a node and its gradient dy,
//! add each differentiable source's contribution through `Grads`. This file routes every
//! op, with no catch-all arm, and holds the elementwise arithmetic; the other families
//! live in activation.rs, layout.rs and nn.rs.

use super::table::{contiguous, src, unbroadcast, wants, Grads};
use super::{activation, layout, nn};
use crate::op::{Op, UnaryOp};
use crate::tensor::Tensor;
use crate::{Error, Result};

/// Add the contributions of `node`'s gradient `dy` to its sources' gradients.
pub(super) fn backward(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let op = node.op();
    match op {
        Op::None => Ok(()),
        Op::Dup => pass_through(g, node, dy),
        Op::Add | Op::Sub | Op::Mul | Op::Div => arithmetic(g, node, dy),
        Op::Add1 => add1(g, node, dy),
        Op::Scale { s } => scale(g, node, dy, s),
        Op::Sqr | Op::Sqrt | Op::Log | Op::Sin | Op::Cos => math(g, node, dy),
        Op::Sum | Op::SumRows | Op::Mean | Op::Repeat | Op::RepeatBack => reduce(g, node, dy),
        Op::Unary { op } => activation::unary(g, node, dy, op),
        Op::LeakyRelu { negative_slope } => activation::leaky_relu(g, node, dy, negative_slope),
        Op::Clamp { min, max } => activation::clamp(g, node, dy, min, max),

        Op::Cpy | Op::Cont | Op::Reshape => layout::reshape_like(g, node, dy),
        Op::View { offset } => layout::view(g, node, dy, offset),
        Op::Permute { axes } => layout::permute(g, node, dy, axes),
        Op::Transpose => layout::transpose(g, node, dy),
        Op::Set { nb1, nb2, nb3, offset, .. } => layout::set(g, node, dy, [nb1, nb2, nb3], offset),
        Op::Acc { nb1, nb2, nb3, offset, .. } => layout::acc(g, node, dy, [nb1, nb2, nb3], offset),
        Op::GetRows => layout::get_rows(g, node, dy),
        Op::GetRowsBack => layout::get_rows_back(g, node, dy),
        Op::Concat { dim } => layout::concat(g, node, dy, dim),
        Op::Pad => layout::pad(g, node, dy),
        Op::Diag => layout::diag(g, node, dy),
        Op::DiagMaskInf { n_past } | Op::DiagMaskZero { n_past } => layout::diag_mask(g, node, dy, n_past),

        Op::MulMat { .. } => nn::mul_mat(g, node, dy),
        Op::OutProd => nn::out_prod(g, node, dy),
        Op::SoftMax { scale, .. } => nn::soft_max(g, node, dy, scale),
        Op::Norm { eps } => nn::norm(g, node, dy, eps),
        Op::RmsNorm { eps } => nn::rms_norm(g, node, dy, eps),
        Op::GroupNorm { n_groups, eps } => nn::group_norm(g, node, dy, n_groups, eps),
        Op::Rope { p } => nn::rope(g, node, dy, p, false),
        Op::RopeBack { p } => nn::rope(g, node, dy, p, true),
        Op::Im2col { p } => nn::im2col(g, node, dy, p),
        Op::Pool2d { p } => nn::pool_2d(g, node, dy, p),
        Op::CrossEntropyLoss => nn::cross_entropy_loss(g, node, dy),

        Op::Argmax
        | Op::CountEqual
        | Op::Argsort { .. }
        | Op::SiluBack
        | Op::RmsNormBack { .. }
        | Op::MulMatId
        | Op::SoftMaxBack
        | Op::ConvTranspose1d { .. }
        | Op::Im2colBack { .. }
        | Op::ConvTranspose2d { .. }
        | Op::Pool1d { .. }
        | Op::Pool2dBack { .. }
        | Op::Upscale
        | Op::Arange { .. }
        | Op::TimestepEmbedding { .. }
        | Op::FlashAttnExt { .. }
        | Op::FlashAttnBack { .. }
        | Op::SsmConv
        | Op::SsmScan
        | Op::WinPart { .. }
        | Op::WinUnpart { .. }
        | Op::GetRelPos
        | Op::AddRelPos { .. }
        | Op::RwkvWkv
        | Op::CrossEntropyLossBack
        | Op::OptStepAdamw { .. } => Err(Error::unimplemented(format!(
            "buildBackwardExpand: {} has no backward rule (node '{}')",
            op.desc(),
            node.label()
        ))),
    }
}

/// Ops whose rule reads the node's own output value (see `clamp_overwrites_nothing`).
pub(super) fn reads_own_output(op: Op) -> bool {
    match op {
        Op::Div | Op::Sqrt | Op::SoftMax { .. } | Op::Clamp { .. } => true,
        Op::Unary { op } => matches!(op, UnaryOp::Exp | UnaryOp::Tanh | UnaryOp::Sigmoid | UnaryOp::Hardsigmoid),
        _ => false,
    }
}

/// DUP: the gradient passes through unchanged.
fn pass_through(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    if let Some(a) = wants(node, 0) {
        g.add(&a, dy.clone())?;
    }
    Ok(())
}

/// ADD, SUB, MUL, DIV with b broadcast over a: b's contributions are summed back over
/// the repetitions (ggml does this for ADD only).
fn arithmetic(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let c = g.ctx;
    let op = node.op();
    if let Some(a) = wants(node, 0) {
        let b = src(node, 1)?;
        let da = match op {
            Op::Mul => c.mul(dy, &b)?,
            Op::Div => c.div(dy, &b)?,
            _ => dy.clone(),
        };
        g.add(&a, da)?;
    }
    if let Some(b) = wants(node, 1) {
        let a = src(node, 0)?;
        match op {
            Op::Add => g.add(&b, unbroadcast(c, dy.clone(), &b)?)?,
            Op::Sub => g.sub(&b, unbroadcast(c, dy.clone(), &b)?)?,
            Op::Mul => g.add(&b, unbroadcast(c, c.mul(dy, &a)?, &b)?)?,
            // d(a/b)/db = -(a/b)/b = -y/b
            _ => g.sub(&b, unbroadcast(c, c.mul(dy, &c.div(node, &b)?)?, &b)?)?,
        }
    }
    Ok(())
}

/// ADD1: a + scalar b. b's gradient is the sum of dy (ggml takes the mean, which is not
/// the derivative; its own test leaves b without a gradient).
fn add1(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    pass_through(g, node, dy)?;
    if let Some(b) = wants(node, 1) {
        g.add(&b, g.ctx.sum(dy)?)?;
    }
    Ok(())
}

fn scale(g: &mut Grads, node: &Tensor, dy: &Tensor, s: f32) -> Result<()> {
    if let Some(a) = wants(node, 0) {
        g.add(&a, g.ctx.scale(&contiguous(g.ctx, dy)?, s)?)?;
    }
    Ok(())
}

/// SQR, SQRT, LOG, SIN, COS, as ggml writes them.
fn math(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    match node.op() {
        Op::Sqr => g.add(&a, c.scale(&c.mul(&a, dy)?, 2.0)?),
        Op::Sqrt => g.add(&a, c.scale(&c.div(dy, node)?, 0.5)?),
        Op::Log => g.add(&a, c.div(dy, &a)?),
        Op::Sin => g.add(&a, c.mul(dy, &c.cos(&a)?)?),
        _ => g.sub(&a, c.mul(dy, &c.sin(&a)?)?),
    }
}

/// SUM, SUM_ROWS, MEAN, REPEAT and REPEAT_BACK: spread or sum the gradient.
fn reduce(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    match node.op() {
        Op::Sum => g.add_scalar(&a, dy.clone()),
        Op::SumRows => g.add(&a, c.repeat(dy, &a)?),
        Op::Mean => g.add(&a, c.repeat(&c.scale(&contiguous(c, dy)?, 1.0 / a.ne()[0] as f32)?, &a)?),
        Op::Repeat => g.add(&a, c.repeat_back(dy, &a)?),
        _ => g.add(&a, c.repeat(dy, &a)?),
    }
}
