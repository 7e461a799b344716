//! SUM, SUM_ROWS, MEAN. Row sums accumulate in f64 and round to f32, as ggml's
//! ggml_vec_sum_f32 does; SUM adds the f64 row sums in f64.

use super::src;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let Some(s) = node.src(0) else { return false };
    match node.op() {
        Op::Sum | Op::SumRows => matches!(s.ty(), Type::F32 | Type::F16 | Type::BF16) && node.ty() == s.ty(),
        _ => s.ty() == Type::F32 && node.ty() == Type::F32,
    }
}

unsafe fn row_sum(s: &TData, ir: usize, buf: &mut [f32]) -> f64 {
    let (i1, i2, i3) = s.row_coords(ir);
    s.load_row(i1, i2, i3, buf);
    buf.iter().map(|&x| x as f64).sum()
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let s = src(node, 0)?;
    let d = TData::of(node)?;
    let n0 = s.n(0);
    match node.op() {
        Op::Sum => {
            // One thread, rows in order: the same rounding sequence as ggml.
            let mut buf = vec![0f32; n0];
            let mut total = 0f64;
            for ir in 0..s.nrows() {
                // SAFETY: ir < nrows.
                total += unsafe { row_sum(&s, ir, &mut buf) };
            }
            // SAFETY: dst has one element.
            unsafe { d.set_f32(0, 0, 0, 0, total as f32) };
        }
        op => {
            let mean = matches!(op, Op::Mean);
            cx.par_ranges(s.nrows(), (8192 / n0.max(1)).max(1), |rows| {
                let mut buf = vec![0f32; n0];
                for ir in rows {
                    // SAFETY: ir < nrows of src; dst has the same rows.
                    unsafe {
                        let v = row_sum(&s, ir, &mut buf) as f32;
                        let v = if mean { v / n0 as f32 } else { v };
                        let (i1, i2, i3) = s.row_coords(ir);
                        d.set_f32(0, i1, i2, i3, v);
                    }
                }
            });
        }
    }
    Ok(())
}
