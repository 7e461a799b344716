//! Rules of the model ops: matrix products, softmax, the normalizations, rope, im2col,
//! pooling and the cross-entropy loss. Most map onto the backward ops the CPU has
//! (OUT_PROD, SOFT_MAX_BACK, RMS_NORM_BACK, ROPE_BACK, IM2COL_BACK, POOL_2D_BACK,
//! CROSS_ENTROPY_LOSS_BACK); NORM and GROUP_NORM reuse RMS_NORM_BACK on centered rows.

use super::table::{contiguous, packed, src, unbroadcast_blocks, wants, Grads};
use crate::context::Context;
use crate::op::{Im2colParams, Pool2dParams, RopeParams};
use crate::tensor::Tensor;
use crate::{ensure, Error, Result};

/// A source that has a gradient the op cannot pass on (ggml asserts these away).
fn refuse_src(node: &Tensor, i: usize, what: &str) -> Result<()> {
    if wants(node, i).is_some() {
        return Err(Error::unimplemented(format!(
            "buildBackwardExpand: {} '{}' cannot pass gradients to its {what} (src[{i}])",
            node.op().desc(),
            node.label()
        )));
    }
    Ok(())
}

/// MUL_MAT y[i, j] = sum_k a[k, i] b[k, j] (a [K, M], b [K, N], a broadcast over b's dims
/// 2 and 3): da[k, i] = sum_j b[k, j] dy[i, j] = out_prod(b, dy), summed over the
/// broadcast blocks; db[k, j] = sum_i a[k, i] dy[i, j] = out_prod(a, dy^T).
pub(super) fn mul_mat(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let c = g.ctx;
    if let Some(a) = wants(node, 0) {
        let b = src(node, 1)?;
        let da = c.out_prod(&packed(c, &b)?, dy)?;
        g.add(&a, unbroadcast_blocks(c, da, &a)?)?;
    }
    if let Some(b) = wants(node, 1) {
        let a = src(node, 0)?;
        g.add(&b, c.out_prod(&packed(c, &a)?, &c.transpose(dy)?)?)?;
    }
    Ok(())
}

/// OUT_PROD y[i, j] = sum_r a[i, r] b[j, r] (a [M, R], b [N, R]): da[i, r] = sum_j dy[i, j]
/// b[j, r] = out_prod(dy, b^T); db[j, r] = sum_i a[i, r] dy[i, j], which is out_prod(a^T,
/// dy^T) transposed (a^T first, so that a may broadcast as out_prod allows).
pub(super) fn out_prod(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let c = g.ctx;
    let (a0, b0) = (src(node, 0)?, src(node, 1)?);
    if let Some(a) = wants(node, 0) {
        let da = c.out_prod(&packed(c, dy)?, &c.transpose(&b0)?)?;
        g.add(&a, unbroadcast_blocks(c, da, &a)?)?;
    }
    if let Some(b) = wants(node, 1) {
        let dbt = c.out_prod(&packed(c, &c.transpose(&a0)?)?, &c.transpose(dy)?)?;
        g.add(&b, c.cont(&c.transpose(&dbt)?)?)?;
    }
    Ok(())
}

/// SOFT_MAX y = softmax(scale x + mask): dx = scale * soft_max_back(dy, y). ggml leaves
/// the scale out, which is only right for scale 1.
pub(super) fn soft_max(g: &mut Grads, node: &Tensor, dy: &Tensor, scale: f32) -> Result<()> {
    refuse_src(node, 1, "mask")?;
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let dx = c.soft_max_back(&contiguous(c, dy)?, node, false)?;
    g.add(&a, if scale == 1.0 { dx } else { c.scale(&dx, scale)? })
}

pub(super) fn rms_norm(g: &mut Grads, node: &Tensor, dy: &Tensor, eps: f32) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    g.add(&a, c.rms_norm_back(&packed(c, &a)?, dy, eps)?)
}

/// NORM is RMS_NORM of the centered rows c = x - mean(x) (same eps), and centering is a
/// projection onto zero-mean rows: dx = dc - mean(dc) with dc = rms_norm_back(c, dy).
fn norm_rows(c: &Context, x: &Tensor, dy: &Tensor, eps: f32) -> Result<Tensor> {
    let centered = c.sub(x, &c.mean(x)?)?;
    let dc = c.rms_norm_back(&centered, dy, eps)?;
    c.sub(&dc, &c.mean(&dc)?)
}

pub(super) fn norm(g: &mut Grads, node: &Tensor, dy: &Tensor, eps: f32) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    g.add(&a, norm_rows(g.ctx, &a, dy, eps)?)
}

/// GROUP_NORM normalizes groups of ceil(C / n_groups) channels (the last one shorter when
/// they do not divide) over whole [ne0, ne1] planes: NORM's rule on the groups laid out as
/// rows, the full groups in one go and a shorter last group on its own.
pub(super) fn group_norm(g: &mut Grads, node: &Tensor, dy: &Tensor, n_groups: i32, eps: f32) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    if a.is_empty() {
        return g.add(&a, dy.clone());
    }
    ensure!(n_groups > 0, "buildBackwardExpand: GROUP_NORM '{}' has nGroups={n_groups}", node.label());
    let c = g.ctx;
    let ne = a.ne();
    let (plane, channels) = (ne[0] * ne[1], ne[2]);
    let per_group = (channels + n_groups as i64 - 1) / n_groups as i64;
    let full = channels / per_group;
    let x = c.reshape_3d(&contiguous(c, &a)?, plane, channels, ne[3])?;
    let d = c.reshape_3d(&contiguous(c, dy)?, plane, channels, ne[3])?;
    // Channels [first, first + n) as `groups` rows, through NORM's rule, and back.
    let groups_grad = |first: i64, n: i64, groups: i64| -> Result<Tensor> {
        let rows = |t: &Tensor| -> Result<Tensor> {
            let t = if n == channels {
                t.clone()
            } else {
                let nb = t.nb();
                c.cont(&c.view_3d(t, plane, n, ne[3], nb[1], nb[2], first as usize * nb[1])?)?
            };
            c.reshape_3d(&t, plane * n / groups, groups, ne[3])
        };
        c.reshape_3d(&norm_rows(c, &rows(&x)?, &rows(&d)?, eps)?, plane, n, ne[3])
    };
    let mut dx = groups_grad(0, full * per_group, full)?;
    if full * per_group < channels {
        let last = groups_grad(full * per_group, channels - full * per_group, 1)?;
        dx = c.concat(&dx, &last, 1)?;
    }
    g.add(&a, c.reshape(&dx, &a)?)
}

/// ROPE's gradient is ROPE_BACK (the inverse rotation), and ROPE_BACK's is ROPE.
pub(super) fn rope(g: &mut Grads, node: &Tensor, dy: &Tensor, p: RopeParams, back: bool) -> Result<()> {
    refuse_src(node, 2, "frequency factors")?;
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let (pos, freq) = (src(node, 1)?, node.src(2));
    let dy = packed(c, dy)?;
    let da = if back { c.rope_ext(&dy, &pos, freq, p, false)? } else { c.rope_back(&dy, &pos, freq, p)? };
    g.add(&a, da)
}

/// IM2COL: fold dy back onto the image (src[1]); the kernel (src[0]) only gives shapes.
pub(super) fn im2col(g: &mut Grads, node: &Tensor, dy: &Tensor, p: Im2colParams) -> Result<()> {
    let Some(img) = wants(node, 1) else { return Ok(()) };
    let c = g.ctx;
    let kernel = src(node, 0)?;
    g.add(&img, c.im2col_back(&kernel, &contiguous(c, dy)?, img.ne(), p)?)
}

pub(super) fn pool_2d(g: &mut Grads, node: &Tensor, dy: &Tensor, p: Pool2dParams) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let da = c.pool_2d_back(&contiguous(c, dy)?, &a, p.op, p.k0, p.k1, p.s0, p.s1, p.p0 as f32, p.p1 as f32)?;
    g.add(&a, da)
}

pub(super) fn cross_entropy_loss(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    refuse_src(node, 1, "labels")?;
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let labels = src(node, 1)?;
    let da = c.cross_entropy_loss_back(&contiguous(c, &a)?, &contiguous(c, &labels)?, &contiguous(c, dy)?)?;
    g.add(&a, da)
}
