//! Gradients of row ops, f32, for the autodiff: SOFT_MAX_BACK, SILU_BACK, RMS_NORM_BACK
//! and GET_ROWS_BACK, each in ggml-cpu's steps and precisions.

use super::{map_rows2, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{Error, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    match node.op() {
        // ggml reads the gradient rows as f32 or f16.
        Op::GetRowsBack => matches!(a.ty(), Type::F32 | Type::F16) && b.ty() == Type::I32,
        _ => a.ty() == Type::F32 && b.ty() == Type::F32 && node.ty() == Type::F32,
    }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    match node.op() {
        // a = dy, b = y (the softmax output): dx = y * (dy - dot(y, dy)).
        Op::SoftMaxBack => map_rows2(node, cx, |dy, y, dx| {
            let dot = y.iter().zip(dy).map(|(&a, &b)| (a * b) as f64).sum::<f64>() as f32;
            dx.iter_mut().zip(dy.iter().zip(y)).for_each(|(o, (&g, &yv))| *o = (g - dot) * yv);
        }),
        // a = x, b = dy: dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x), the inner
        // multiply-add fused as ggml's build fuses it.
        Op::SiluBack => map_rows2(node, cx, |x, dy, dx| {
            for ((o, &xv), &g) in dx.iter_mut().zip(x).zip(dy) {
                let s = 1.0 / (1.0 + (-xv).exp());
                *o = g * s * xv.mul_add(1.0 - s, 1.0);
            }
        }),
        Op::RmsNormBack { eps } => map_rows2(node, cx, |x, dz, dx| rms_norm_back_row(x, dz, eps, dx)),
        Op::GetRowsBack => get_rows_back(node, cx),
        _ => Ok(()),
    }
}

/// The gradient of y = x / sqrt(mean(x^2) + eps) for one row, as ggml-cpu derives and
/// rounds it: dx = (dz + x * (-sum(x*dz) / (sum(x^2) + eps*n))) / sqrt(mean(x^2) + eps),
/// sums in f64.
fn rms_norm_back_row(x: &[f32], dz: &[f32], eps: f32, dx: &mut [f32]) {
    let n = x.len();
    let (mut sum_xx, mut sum_xdz) = (0f64, 0f64);
    for (&xv, &g) in x.iter().zip(dz) {
        sum_xx += (xv * xv) as f64;
        sum_xdz += (xv * g) as f64;
    }
    let mean_eps = sum_xx as f32 / n as f32 + eps;
    let sum_eps = sum_xx as f32 + eps * n as f32;
    let rrms = 1.0 / mean_eps.sqrt();
    let k = (-sum_xdz) as f32 / sum_eps;
    for ((o, &xv), &g) in dx.iter_mut().zip(x).zip(dz) {
        *o = (xv * k + g) * rrms;
    }
}

/// GET_ROWS_BACK: dst (zeroed) row b[i] += a row i, for i in order. Rows are split across
/// workers by destination, each adding its contributions in ggml's order (i ascending).
fn get_rows_back(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let idx = src(node, 1)?;
    let d = TData::of(node)?;
    let (n0, n_out) = (d.n(0), d.n(1));
    // For each destination row, the source rows that add into it (CSR layout).
    let mut targets = Vec::with_capacity(idx.n(0));
    for i in 0..idx.n(0) {
        // SAFETY: i is inside b's shape.
        let r = unsafe { (idx.at(i, 0, 0, 0) as *const i32).read_unaligned() };
        let r = usize::try_from(r).ok().filter(|&r| r < n_out).ok_or_else(|| {
            Error::invalid(format!("getRowsBack: row index {r} at b[{i}] is outside 0..{n_out} (c.ne[1])"))
        })?;
        targets.push(r);
    }
    let mut start = vec![0usize; n_out + 1];
    for &r in &targets {
        start[r + 1] += 1;
    }
    for r in 0..n_out {
        start[r + 1] += start[r];
    }
    let mut sources = vec![0usize; targets.len()];
    let mut fill = start.clone();
    for (i, &r) in targets.iter().enumerate() {
        sources[fill[r]] = i;
        fill[r] += 1;
    }
    cx.par_ranges(n_out, (4096 / n0.max(1)).max(1), |rows| {
        let (mut acc, mut row) = (vec![0f32; n0], vec![0f32; n0]);
        for r in rows {
            acc.fill(0.0);
            for &i in &sources[start[r]..start[r + 1]] {
                // SAFETY: the constructor checked a has a row for every index of b.
                unsafe { a.load_row(i, 0, 0, &mut row) };
                acc.iter_mut().zip(&row).for_each(|(s, &v)| *s += v);
            }
            // SAFETY: destination row r belongs to this worker.
            unsafe { d.store_row(r, 0, 0, &acc) };
        }
    });
    Ok(())
}
