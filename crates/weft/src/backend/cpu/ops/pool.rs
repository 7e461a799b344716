//! POOL_1D and POOL_2D: max or average over k (k0 x k1) windows with stride and padding.
//! As in ggml, padded positions are skipped (an average still divides by the whole window
//! size k0*k1, and a max over padding alone is -FLT_MAX), and the sums run in f32 in
//! window order (rows, then columns). ggml's POOL_1D kernel only handles s0 = k0, p0 = 0;
//! here it is the 1-D case of POOL_2D, which gives the same numbers on those.

use super::gather::rows_per_task;
use super::{is_float, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::{Op, PoolOp};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    node.ty() == Type::F32 && node.src(0).is_some_and(|s| is_float(s.ty()))
}

/// Window geometry of one pooled dim: kernel size, stride, padding (ints, as ggml stores them).
#[derive(Clone, Copy)]
struct Win {
    k: i64,
    s: i64,
    p: i64,
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let (op, wx, wy) = match node.op() {
        Op::Pool1d { op, k0, s0, p0 } => (op, Win { k: k0 as i64, s: s0 as i64, p: p0 as i64 }, None),
        Op::Pool2d { p } => (
            p.op,
            Win { k: p.k0 as i64, s: p.s0 as i64, p: p.p0 as i64 },
            Some(Win { k: p.k1 as i64, s: p.s1 as i64, p: p.p1 as i64 }),
        ),
        _ => return Ok(()),
    };
    let s = src(node, 0)?;
    let d = TData::of(node)?;
    let n0 = d.n(0);
    let area = (wx.k * wy.map_or(1, |w| w.k)) as f32;
    let (iw, ih) = (s.n(0) as i64, s.n(1) as i64);
    cx.par_ranges(d.nrows(), rows_per_task(n0, 2048), |rows| {
        let mut out = vec![0f32; n0];
        for ir in rows {
            let (i1, i2, i3) = d.row_coords(ir);
            // 2-D: dst row i1 is output row oy, which reads source rows iy..iy+k1.
            // 1-D: dst row i1 reads source row i1 only.
            let (y0, ky) = match wy {
                Some(w) => (i1 as i64 * w.s - w.p, w.k),
                None => (i1 as i64, 1),
            };
            for (ox, o) in out.iter_mut().enumerate() {
                let x0 = ox as i64 * wx.s - wx.p;
                let mut acc = match op {
                    PoolOp::Avg => 0.0,
                    PoolOp::Max => -f32::MAX,
                };
                for y in y0..y0 + ky {
                    if y < 0 || y >= ih {
                        continue;
                    }
                    for x in x0..x0 + wx.k {
                        if x < 0 || x >= iw {
                            continue;
                        }
                        // SAFETY: x < ne0 and y < ne1 checked; (i2, i3) shared with dst.
                        let v = unsafe { s.get_f32(x as usize, y as usize, i2, i3) };
                        match op {
                            PoolOp::Avg => acc += v,
                            PoolOp::Max => {
                                if v > acc {
                                    acc = v
                                }
                            }
                        }
                    }
                }
                *o = if op == PoolOp::Avg { acc / area } else { acc };
            }
            // SAFETY: dst row inside dst.
            unsafe { d.store_row(i1, i2, i3, &out) };
        }
    });
    Ok(())
}
