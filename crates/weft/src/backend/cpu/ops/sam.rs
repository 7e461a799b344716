//! The Segment Anything ops: WIN_PART / WIN_UNPART (split an image into w x w windows,
//! zero-padded, and back), GET_REL_POS (relative position table) and ADD_REL_POS (add the
//! decomposed relative position terms to attention scores).

use super::gather::{gather, rows_per_task, same_plain_type};
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
        // ggml's GET_REL_POS also accepts bf16 a but copies its bits into an f16 result;
        // weft keeps to f16 (the result type), where a copy is exact.
        Op::WinPart { .. } | Op::WinUnpart { .. } | Op::GetRelPos => same_plain_type(node, 1),
        Op::AddRelPos { .. } => {
            node.ty() == Type::F32 && (0..3).all(|i| node.src(i).is_some_and(|t| t.ty() == Type::F32))
        }
        _ => false,
    }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let d = TData::of(node)?;
    match node.op() {
        Op::WinPart { npx, w, .. } => {
            // dst [C, w, w, npx*npy]: window i3 = py*npx + px holds a's pixels
            // (px*w + i1, py*w + i2), or 0 past a's edge (reads are bounds-checked, so
            // only a non-positive w, possible through set_op, needs refusing).
            ensure!(w > 0, "winPart: w={w} must be positive");
            let (npx, w) = (npx.max(1) as usize, w as usize);
            let (aw, ah) = (a.n(1), a.n(2));
            gather(cx, &d, &[a], |i| {
                let (x, y) = ((i[3] % npx) * w + i[1], (i[3] / npx) * w + i[2]);
                (x < aw && y < ah).then_some((0, [i[0], x, y, 0]))
            });
        }
        Op::WinUnpart { w } => {
            // dst [C, w0, h0]: pixel (i1, i2) is pixel (i1 % w, i2 % w) of window
            // (i2 / w) * npx + i1 / w, with npx = ceil(w0 / w) as ggml computes it.
            let (w0, h0) = (d.n(1), d.n(2));
            // Re-checked here as params can be replaced after construction (set_op).
            ensure!(
                w > 0 && (w0 == 0 || h0 == 0 || (a.n(1) >= w as usize && a.n(2) >= w as usize)),
                "winUnpart: w={w} does not fit a {}",
                fmt_shape(&a.ne)
            );
            let w = w as usize;
            let npx = (w0 + (w - w0 % w) % w) / w;
            ensure!(
                w0 == 0 || h0 == 0 || ((h0 - 1) / w) * npx + (w0 - 1) / w < a.n(3),
                "winUnpart: a {} has too few windows for a {w0}x{h0} image",
                fmt_shape(&a.ne)
            );
            gather(cx, &d, &[a], |i| Some((0, [i[0], i[1] % w, i[2] % w, (i[2] / w) * npx + i[1] / w])));
        }
        Op::GetRelPos => {
            // dst [C, kh, qh]: row (i1, i2) is a's row (kh - 1 - i1) + i2.
            let kh = d.n(1);
            gather(cx, &d, &[a], |i| Some((0, [i[0], kh - 1 - i[1] + i[2], 0, 0])));
        }
        Op::AddRelPos { .. } => add_rel_pos(cx, &a, &src(node, 1)?, &src(node, 2)?, &d),
        _ => {}
    }
    Ok(())
}

/// a [n*n, ne1*ne2, ne3] with pw, ph [n, ne1, ne2, ne3]: row r of a (one query position),
/// seen as an n x n matrix [m][k], gets ph[m] + pw[k] from row r of ph and pw. ggml adds
/// the two terms in the order its loop reaches them: ph first where m <= k, pw first
/// otherwise; the sums are reproduced in that order. Rows of a past pw's rows (a.ne[3] > 1)
/// are copied unchanged, as in ggml.
fn add_rel_pos(cx: &Cx, a: &TData, pw: &TData, ph: &TData, d: &TData) {
    let n = pw.n(0);
    let n_pos_rows = pw.nrows();
    let n0 = a.n(0);
    cx.par_ranges(a.nrows(), rows_per_task(n0, 8192), |rows| {
        let (mut x, mut vw, mut vh) = (vec![0f32; n0], vec![0f32; n], vec![0f32; n]);
        for r in rows {
            let (i1, i2, i3) = a.row_coords(r);
            // SAFETY: dst has a's shape; pw/ph row r exists when r < their row count. In
            // place, the row of a is loaded before the same row of dst is stored.
            unsafe {
                a.load_row(i1, i2, i3, &mut x);
                if r < n_pos_rows {
                    let (j1, j2, j3) = pw.row_coords(r);
                    pw.load_row(j1, j2, j3, &mut vw);
                    ph.load_row(j1, j2, j3, &mut vh);
                    for m in 0..n {
                        for k in 0..n {
                            let v = &mut x[m * n + k];
                            *v = if m <= k { (*v + vh[m]) + vw[k] } else { (*v + vw[k]) + vh[m] };
                        }
                    }
                }
                d.store_row(i1, i2, i3, &x);
            }
        }
    });
}
