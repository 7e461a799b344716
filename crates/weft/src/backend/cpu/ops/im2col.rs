//! IM2COL: unfold the patches of image b that a convolution with kernel a (only its shape
//! is used) reads, one dst row per output position. 2-D: b [IW, IH, IC, N] ->
//! dst [IC*KH*KW, OW, OH, N]; 1-D: b [IW, IC, N] -> dst [IC*KW, OW, N]. Positions in the
//! padding read as 0. Values are copied (rounded to f16 for an f16 dst, as ggml does).

use super::gather::rows_per_task;
use super::{is_float, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::{fmt_shape, Tensor};
use crate::types::Type;
use crate::{ensure, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    // The kernel tensor's data is never read, so its type does not matter (ggml's CPU asks
    // for an f16 kernel when dst is f16, a restriction of its code, not of the op).
    matches!(node.ty(), Type::F32 | Type::F16) && node.src(0).is_some() && node.src(1).is_some_and(|b| is_float(b.ty()))
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let Op::Im2col { p } = node.op() else {
        return Ok(());
    };
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    let (kw, kh) = (a.n(0), if p.is_2d { a.n(1) } else { 1 });
    let (iw, ih, ic) = if p.is_2d { (b.n(0), b.n(1), b.n(2)) } else { (b.n(0), 1, b.n(1)) };
    let (s0, s1, p0, p1, d0, d1) = (p.s0 as i64, p.s1 as i64, p.p0 as i64, p.p1 as i64, p.d0 as i64, p.d1 as i64);
    let n0 = d.n(0);
    // Shapes follow the params at construction; re-check what keeps reads and writes in
    // bounds, as params can be replaced later (Tensor::set_op).
    let n_batch = if p.is_2d { (d.n(3), b.n(3)) } else { (d.n(2), b.n(2)) };
    ensure!(
        n0 == ic * kh * kw && n_batch.0 <= n_batch.1,
        "im2col: params (is2D={}) do not match a {}, b {} and the result {}",
        p.is_2d,
        fmt_shape(&a.ne),
        fmt_shape(&b.ne),
        fmt_shape(&d.ne)
    );
    cx.par_ranges(d.nrows(), rows_per_task(n0, 4096), |rows| {
        let mut out = vec![0f32; n0];
        for ir in rows {
            // dst row = output position: (iow, ioh, in) in 2-D, (iow, in) in 1-D.
            let (iow, i2, i3) = d.row_coords(ir);
            let (ioh, inn) = if p.is_2d { (i2, i3) } else { (0, i2) };
            let mut k = 0;
            for iic in 0..ic {
                for ikh in 0..kh {
                    // 1-D: ggml uses the same formula with IH = 1 and ioh = ikh = 0.
                    let iih = ioh as i64 * s1 + ikh as i64 * d1 - p1;
                    for ikw in 0..kw {
                        let iiw = iow as i64 * s0 + ikw as i64 * d0 - p0;
                        out[k] = if iih < 0 || iih >= ih as i64 || iiw < 0 || iiw >= iw as i64 {
                            0.0
                        } else {
                            let (x, y) = (iiw as usize, iih as usize);
                            // SAFETY: x < IW and y < IH were just checked; iic < IC, in < N.
                            unsafe {
                                if p.is_2d {
                                    b.get_f32(x, y, iic, inn)
                                } else {
                                    b.get_f32(x, iic, inn, 0)
                                }
                            }
                        };
                        k += 1;
                    }
                }
            }
            // SAFETY: dst row inside dst; its length n0 = IC*KH*KW (constructor).
            unsafe { d.store_row(iow, i2, i3, &out) };
        }
    });
    Ok(())
}
