//! Layout ops that place source elements at new coordinates: CONCAT, PAD, REPEAT, UPSCALE
//! and DIAG (all through `gather`: bytes copied, any plain type, dst's type = the sources'),
//! and REPEAT_BACK, which sums the repetitions back (f32, in ggml's order).

use super::gather::{gather, rows_per_task, same_plain_type, Source};
use super::src;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::{fmt_shape, Tensor};
use crate::types::Type;
use crate::{ensure, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    match node.op() {
        Op::Concat { .. } => same_plain_type(node, 2),
        // ggml sums in f32 only.
        Op::RepeatBack => node.ty() == Type::F32 && node.src(0).is_some_and(|s| s.ty() == Type::F32),
        _ => same_plain_type(node, 1),
    }
}

/// Shape as usize.
fn dims(t: &TData) -> [usize; 4] {
    [t.n(0), t.n(1), t.n(2), t.n(3)]
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let d = TData::of(node)?;
    let an = dims(&a);
    match node.op() {
        Op::Concat { dim } => {
            let b = src(node, 1)?;
            // Params can be replaced after construction (Tensor::set_op): re-check the one
            // that decides where reads land.
            let (bn, dn, dim) = (dims(&b), dims(&d), dim as usize);
            ensure!(
                dim < 4
                    && (0..4).all(|k| if k == dim { an[k] + bn[k] == dn[k] } else { an[k] == dn[k] && bn[k] == dn[k] }),
                "concat: dim={dim} does not match a {}, b {} and the result {}",
                fmt_shape(&a.ne),
                fmt_shape(&b.ne),
                fmt_shape(&d.ne)
            );
            gather(cx, &d, &[a, b], |mut i| {
                if i[dim] < an[dim] {
                    Some((0, i))
                } else {
                    i[dim] -= an[dim];
                    Some((1, i))
                }
            });
        }
        Op::Pad => gather(cx, &d, &[a], |i| (0..4).all(|k| i[k] < an[k]).then_some((0, i))),
        Op::Repeat => gather(cx, &d, &[a], |i| Some((0, [i[0] % an[0], i[1] % an[1], i[2] % an[2], i[3] % an[3]]))),
        Op::Diag => gather(cx, &d, &[a], |i| (i[0] == i[1]).then_some((0, [i[0], 0, i[2], i[3]]))),
        Op::Upscale => {
            // ggml: scale factor sf = (float)ne/ne0 per dim, source index (int64)(i / sf),
            // all in f32. The clamp only guards against a rounding up to ne0 (no effect
            // on any shape seen so far, but it keeps the read in bounds).
            let dn = dims(&d);
            let sf: [f32; 4] = std::array::from_fn(|k| dn[k] as f32 / an[k] as f32);
            let at = |i: usize, k: usize| ((i as f32 / sf[k]) as usize).min(an[k].saturating_sub(1));
            gather(cx, &d, &[a], |i| -> Source { Some((0, [at(i[0], 0), at(i[1], 1), at(i[2], 2), at(i[3], 3)])) });
        }
        Op::RepeatBack => repeat_back(cx, &a, &d),
        _ => {}
    }
    Ok(())
}

/// dst[k] = sum of a over the repetitions of dst's shape, added in f32 in ggml's order
/// (repetition index i3, then i2, i1, i0; starting from zero).
fn repeat_back(cx: &Cx, a: &TData, d: &TData) {
    let dn = dims(d);
    let nr: [usize; 4] = std::array::from_fn(|k| a.n(k) / dn[k].max(1));
    cx.par_ranges(d.nrows(), rows_per_task(dn[0] * nr.iter().product::<usize>(), 8192), |rows| {
        let mut acc = vec![0f32; dn[0]];
        for ir in rows {
            let (k1, k2, k3) = d.row_coords(ir);
            acc.iter_mut().for_each(|v| *v = 0.0);
            for i3 in 0..nr[3] {
                for i2 in 0..nr[2] {
                    for i1 in 0..nr[1] {
                        for i0 in 0..nr[0] {
                            let (j1, j2, j3) = (i1 * dn[1] + k1, i2 * dn[2] + k2, i3 * dn[3] + k3);
                            for (j, s) in acc.iter_mut().enumerate() {
                                // SAFETY: (i0*dn0 + j, j1, j2, j3) < a's shape, since a's
                                // shape is nr times dst's in every dim.
                                *s += unsafe { a.get_f32(i0 * dn[0] + j, j1, j2, j3) };
                            }
                        }
                    }
                }
            }
            // SAFETY: (k1, k2, k3) is a row of dst.
            unsafe { d.store_row(k1, k2, k3, &acc) };
        }
    });
}
