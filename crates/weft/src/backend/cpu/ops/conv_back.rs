//! Gradients of the sliding-window ops, f32: POOL_2D_BACK and IM2COL_BACK. Both scatter
//! each output gradient back over the input positions its window covered, in ggml-cpu's
//! order; planes (channels x batch) never share an input position, so they are split
//! across workers.

use super::src;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::{Im2colParams, Op, Pool2dParams, PoolOp};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{Error, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    node.ty() == Type::F32
        && match node.op() {
            // a = gradient of the pool's output, b = the pool's input (read for the max).
            Op::Pool2dBack { .. } => a.ty() == Type::F32 && matches!(b.ty(), Type::F32 | Type::F16),
            // a = the conv kernel (only its shape matters), b = gradient of im2col's output.
            _ => b.ty() == Type::F32,
        }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    match node.op() {
        Op::Pool2dBack { p } => pool_2d_back(node, p, cx),
        Op::Im2colBack { p } => im2col_back(node, p, cx),
        _ => Ok(()),
    }
}

/// POOL_2D_BACK. For max pooling the window's first largest input (row-major, strictly
/// greater wins, -FLT_MAX start) takes the whole gradient; for average pooling every
/// input in the window gets gradient / (k0 * k1), the padded positions counted too.
fn pool_2d_back(node: &Tensor, p: Pool2dParams, cx: &Cx) -> Result<()> {
    let g = src(node, 0)?;
    let x = src(node, 1)?;
    let d = TData::of(node)?;
    let (iw, ih) = (d.ne[0], d.ne[1]);
    let (ow, oh) = (g.n(0), g.n(1));
    let n_planes = d.n(2) * d.n(3);
    cx.par_ranges(n_planes, 1, |planes| {
        let mut plane = vec![0f32; d.n(0) * d.n(1)];
        for pl in planes {
            let (i2, i3) = (pl % d.n(2), pl / d.n(2));
            plane.fill(0.0);
            for oy in 0..oh {
                for ox in 0..ow {
                    // SAFETY: (ox, oy) inside g; window positions are bounds-checked below.
                    let grad0 = unsafe { g.get_f32(ox, oy, i2, i3) };
                    let ix = ox as i64 * p.s0 as i64 - p.p0 as i64;
                    let iy = oy as i64 * p.s1 as i64 - p.p1 as i64;
                    let inside = |kx: i64, ky: i64| (0..iw).contains(&(ix + kx)) && (0..ih).contains(&(iy + ky));
                    let at = |kx: i64, ky: i64| ((iy + ky) * iw + ix + kx) as usize;
                    match p.op {
                        PoolOp::Max => {
                            let (mut best, mut pos) = (-f32::MAX, None);
                            for ky in 0..p.k1 as i64 {
                                for kx in 0..p.k0 as i64 {
                                    if !inside(kx, ky) {
                                        continue;
                                    }
                                    // SAFETY: inside the pool input's plane (same shape as dst).
                                    let v = unsafe { x.get_f32((ix + kx) as usize, (iy + ky) as usize, i2, i3) };
                                    // ggml skips with `val <= maxval`, so a NaN takes the max.
                                    if v <= best {
                                        continue;
                                    }
                                    best = v;
                                    pos = Some(at(kx, ky));
                                }
                            }
                            if let Some(i) = pos {
                                plane[i] += grad0;
                            }
                        }
                        PoolOp::Avg => {
                            let grad = grad0 / (p.k0 as i64 * p.k1 as i64) as f32;
                            for ky in 0..p.k1 as i64 {
                                for kx in 0..p.k0 as i64 {
                                    if inside(kx, ky) {
                                        plane[at(kx, ky)] += grad;
                                    }
                                }
                            }
                        }
                    }
                }
            }
            for (y, row) in plane.chunks(d.n(0).max(1)).enumerate().take(d.n(1)) {
                // SAFETY: dst plane (i2, i3) belongs to this worker.
                unsafe { d.store_row(y, i2, i3, row) };
            }
        }
    });
    Ok(())
}

/// IM2COL_BACK: each input position sums the gradients of the im2col columns that copied
/// it, kernel row by kernel row (f32, ggml's order); a position a stride skipped gets none.
fn im2col_back(node: &Tensor, p: Im2colParams, cx: &Cx) -> Result<()> {
    // Only the kernel's shape is read (its taps KW, KH); its data may live anywhere.
    let kernel =
        node.src(0).map(|t| t.ne()).ok_or_else(|| Error::invalid("im2colBack: node has no kernel (src[0])"))?;
    let g = src(node, 1)?;
    let d = TData::of(node)?;
    // dst is [IW, IH, IC, N] (2-D) or [IW, IC, N] (1-D); g is [IC*KH*KW, OW, OH, N] or
    // [IC*KW, OW, N].
    let (n, ic, ih) = if p.is_2d { (d.n(3), d.n(2), d.n(1)) } else { (d.n(2), d.n(1), 1) };
    let iw = d.n(0);
    let (kh, kw) = (if p.is_2d { kernel[1] } else { 1 }, kernel[0]);
    let (ow, oh) = (g.n(1) as i64, if p.is_2d { g.n(2) as i64 } else { 1 });
    let (s0, s1, p0, p1, d0, d1) = (p.s0 as i64, p.s1 as i64, p.p0 as i64, p.p1 as i64, p.d0 as i64, p.d1 as i64);
    cx.par_ranges(n * ic, 1, |planes| {
        let mut row = vec![0f32; iw];
        for pl in planes {
            let (c, img) = (pl % ic, pl / ic);
            for y in 0..ih {
                for (x, out) in row.iter_mut().enumerate() {
                    let mut grad = 0f32;
                    for ky in 0..kh {
                        for kx in 0..kw {
                            // The output column whose window put kernel tap (kx, ky) on
                            // (x, y); taps that fall between strides had none.
                            let tw = x as i64 + p0 - kx * d0;
                            if tw % s0 != 0 {
                                continue;
                            }
                            let ox = tw / s0;
                            let oy = if p.is_2d {
                                let th = y as i64 + p1 - ky * d1;
                                if th % s1 != 0 {
                                    continue;
                                }
                                th / s1
                            } else {
                                0
                            };
                            if !(0..ow).contains(&ox) || !(0..oh).contains(&oy) {
                                continue;
                            }
                            let col = (c as i64 * kh + ky) * kw + kx;
                            // SAFETY: col < IC*KH*KW = g.ne[0]; (ox, oy, img) inside g
                            // (checked by the constructor and just above).
                            grad += unsafe {
                                if p.is_2d {
                                    g.get_f32(col as usize, ox as usize, oy as usize, img)
                                } else {
                                    g.get_f32(col as usize, ox as usize, img, 0)
                                }
                            };
                        }
                    }
                    *out = grad;
                }
                // SAFETY: dst row (y, c, img) belongs to this worker.
                unsafe {
                    if p.is_2d {
                        d.store_row(y, c, img, &row)
                    } else {
                        d.store_row(c, img, 0, &row)
                    }
                }
            }
        }
    });
    Ok(())
}
