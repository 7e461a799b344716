//! Rules of the layout ops: copies, reshapes and views move the gradient back to where the
//! elements came from; SET/ACC/CONCAT/PAD/DIAG cut it out of the output with views.

use super::table::{contiguous, src, wants, zeros, Grads};
use crate::context::Context;
use crate::tensor::{contiguous_strides, Tensor};
use crate::types::Type;
use crate::{ensure, Error, Result};

/// CPY, CONT, RESHAPE: the elements keep their logical order, so dy reshaped to the source's
/// shape (and cast back to its type, for CPY between types) is its gradient.
pub(super) fn reshape_like(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let mut da = if dy.same_shape(&a) { dy.clone() } else { c.reshape(&contiguous(c, dy)?, &a)? };
    let float = |t: &Tensor| matches!(t.ty(), Type::F32 | Type::F16 | Type::BF16);
    if da.ty() != a.ty() && float(&a) && float(&da) {
        da = c.cast(&da, a.ty())?;
    }
    g.add(&a, da)
}

/// VIEW: dy lands in the window of the source's gradient the view covers. The view's
/// strides are bytes of the source's layout, which is the gradient's only when the source
/// is contiguous.
pub(super) fn view(g: &mut Grads, node: &Tensor, dy: &Tensor, offset: usize) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    if a.nb() != contiguous_strides(a.ty(), &a.ne()) {
        return Err(Error::unimplemented(format!(
            "buildBackwardExpand: VIEW '{}' of the non-contiguous tensor '{}' has no backward rule (cont it first)",
            node.label(),
            a.label()
        )));
    }
    let nb = node.nb();
    g.add_window(&a, dy.clone(), [nb[1], nb[2], nb[3]], offset)
}

/// PERMUTE: the inverse permutation of dy.
pub(super) fn permute(g: &mut Grads, node: &Tensor, dy: &Tensor, axes: [i32; 4]) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let mut back = [0i32; 4];
    for (i, &ax) in axes.iter().enumerate() {
        back[(ax & 3) as usize] = i as i32;
    }
    g.add(&a, g.ctx.permute(dy, back)?)
}

pub(super) fn transpose(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    g.add(&a, g.ctx.transpose(dy)?)
}

/// dy's window that SET wrote b into or ACC added b to (b's shape, the op's strides).
fn window(c: &Context, dy: &Tensor, b: &Tensor, nb: [usize; 3], offset: usize) -> Result<Tensor> {
    let ne = b.ne();
    c.view_4d(&contiguous(c, dy)?, ne[0], ne[1], ne[2], ne[3], nb[0], nb[1], nb[2], offset)
}

/// SET: a's gradient is dy with the window zeroed (a's values there were overwritten),
/// b's is the window.
pub(super) fn set(g: &mut Grads, node: &Tensor, dy: &Tensor, nb: [usize; 3], offset: usize) -> Result<()> {
    let c = g.ctx;
    let (wa, wb) = (wants(node, 0), wants(node, 1));
    if wa.is_none() && wb.is_none() {
        return Ok(());
    }
    let b = src(node, 1)?;
    let win = window(c, dy, &b, nb, offset)?;
    if let Some(a) = wa {
        let minus = c.neg(&c.cont(&win)?)?;
        g.add(&a, c.acc(&contiguous(c, dy)?, &minus, nb[0], nb[1], nb[2], offset, false)?)?;
    }
    if let Some(b) = wb {
        g.add(&b, win)?;
    }
    Ok(())
}

/// ACC: a's gradient is dy, b's is the window it was added to.
pub(super) fn acc(g: &mut Grads, node: &Tensor, dy: &Tensor, nb: [usize; 3], offset: usize) -> Result<()> {
    if let Some(a) = wants(node, 0) {
        g.add(&a, dy.clone())?;
    }
    if let Some(b) = wants(node, 1) {
        let win = window(g.ctx, dy, &b, nb, offset)?;
        g.add(&b, win)?;
    }
    Ok(())
}

/// GET_ROWS: scatter-add the rows of dy back to the rows they were read from (2-D only,
/// as ggml_get_rows_back is).
pub(super) fn get_rows(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let idx = src(node, 1)?;
    g.add(&a, c.get_rows_back(&contiguous(c, dy)?, &idx, &a)?)
}

/// GET_ROWS_BACK: out[b[i]] += a[i], so a[i]'s gradient is dy's row b[i]: get_rows. Rows of
/// a past b's length are not read and get zeros.
pub(super) fn get_rows_back(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let idx = src(node, 1)?;
    let mut da = c.get_rows(dy, &idx)?;
    let missing = a.ne()[1] - da.ne()[1];
    if missing > 0 {
        da = c.pad(&da, 0, missing as i32, 0, 0)?;
    }
    g.add(&a, da)
}

/// CONCAT: each source's gradient is its part of dy, a view.
pub(super) fn concat(g: &mut Grads, node: &Tensor, dy: &Tensor, dim: i32) -> Result<()> {
    let (wa, wb) = (wants(node, 0), wants(node, 1));
    if wa.is_none() && wb.is_none() {
        return Ok(());
    }
    ensure!((0..4).contains(&dim), "buildBackwardExpand: CONCAT '{}' has dim={dim}", node.label());
    let c = g.ctx;
    let dyc = contiguous(c, dy)?;
    let nb = dyc.nb();
    let part = |t: &Tensor, offset: usize| {
        let ne = t.ne();
        c.view_4d(&dyc, ne[0], ne[1], ne[2], ne[3], nb[1], nb[2], nb[3], offset)
    };
    if let Some(a) = wa {
        g.add(&a, part(&a, 0)?)?;
    }
    if let Some(b) = wb {
        let a = src(node, 0)?;
        let d = dim as usize;
        g.add(&b, part(&b, a.ne()[d] as usize * nb[d])?)?;
    }
    Ok(())
}

/// PAD: dy over the source's extent; where PAD cropped (negative padding) the source's
/// elements never reached the output and get zeros.
pub(super) fn pad(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let dyc = contiguous(c, dy)?;
    let (an, yn, nb) = (a.ne(), dyc.ne(), dyc.nb());
    let m: [i64; 4] = std::array::from_fn(|i| an[i].min(yn[i]));
    let mut da = if m == yn { dyc } else { c.view_4d(&dyc, m[0], m[1], m[2], m[3], nb[1], nb[2], nb[3], 0)? };
    if m != an {
        if m.contains(&0) {
            da = zeros(c, an, &da)?;
        } else {
            let p: [i32; 4] = std::array::from_fn(|i| (an[i] - m[i]) as i32);
            da = c.pad(&c.cont(&da)?, p[0], p[1], p[2], p[3])?;
        }
    }
    g.add(&a, da)
}

/// DIAG: the source's element i went to (i, i); read the diagonal with a row stride of
/// one row plus one element.
pub(super) fn diag(g: &mut Grads, node: &Tensor, dy: &Tensor) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let dyc = contiguous(c, dy)?;
    let (ne, nb) = (dyc.ne(), dyc.nb());
    let d = c.view_4d(&dyc, 1, ne[0], ne[2], ne[3], nb[0] + nb[1], nb[2], nb[3], 0)?;
    g.add(&a, c.reshape(&c.cont(&d)?, &a)?)
}

/// DIAG_MASK_INF / DIAG_MASK_ZERO: masked elements do not depend on the input.
pub(super) fn diag_mask(g: &mut Grads, node: &Tensor, dy: &Tensor, n_past: i32) -> Result<()> {
    let Some(a) = wants(node, 0) else { return Ok(()) };
    g.add(&a, g.ctx.diag_mask_zero(dy, n_past, false)?)
}
