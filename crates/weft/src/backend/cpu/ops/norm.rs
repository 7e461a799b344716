//! NORM and RMS_NORM along rows (f32), with ggml's f64 accumulation. RMS_NORM of packed
//! rows runs `float_simd`'s sum of squares (f32 squares summed in f64 lanes: the same f32
//! result as ggml's sequential sum but in the rarest last-bit cases) and scaling (exact).

use super::src;
use crate::backend::cpu::float_simd::kernels;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    node.ty() == Type::F32 && node.src(0).is_some_and(|s| s.ty() == Type::F32)
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let s = src(node, 0)?;
    let d = TData::of(node)?;
    let op = node.op();
    let n0 = s.n(0);
    let kern = kernels();
    let packed = s.rows_packed() && d.rows_packed();
    cx.par_ranges(s.nrows(), (4096 / n0.max(1)).max(1), |rows| {
        let mut x = vec![0f32; n0];
        for ir in rows {
            let (i1, i2, i3) = s.row_coords(ir);
            // SAFETY: same shape for src and dst; the row is loaded before dst is written.
            unsafe {
                if let (Op::RmsNorm { eps }, true) = (op, packed) {
                    let (from, to) = (s.row_ptr(i1, i2, i3) as *const f32, d.row_ptr(i1, i2, i3) as *mut f32);
                    let mean = ((kern.sum_sq_f64)(from, n0) / n0 as f64) as f32;
                    (kern.scale)(from, 1.0 / (mean + eps).sqrt(), to, n0);
                    continue;
                }
                s.load_row(i1, i2, i3, &mut x);
                match op {
                    Op::Norm { eps } => norm_row(&mut x, eps),
                    Op::RmsNorm { eps } => rms_norm_row(&mut x, eps),
                    _ => {}
                }
                d.store_row(i1, i2, i3, &x);
            }
        }
    });
    Ok(())
}

/// (x - mean) / sqrt(var + eps), in place.
pub fn norm_row(x: &mut [f32], eps: f32) {
    let n = x.len() as f64;
    let mean = (x.iter().map(|&v| v as f64).sum::<f64>() / n) as f32;
    let mut sum2 = 0f64;
    for v in x.iter_mut() {
        *v -= mean;
        sum2 += (*v * *v) as f64;
    }
    let variance = (sum2 / n) as f32;
    let scale = 1.0 / (variance + eps).sqrt();
    x.iter_mut().for_each(|v| *v *= scale);
}

/// x / sqrt(mean(x^2) + eps), in place.
pub fn rms_norm_row(x: &mut [f32], eps: f32) {
    let n = x.len() as f64;
    let mean = (x.iter().map(|&v| (v * v) as f64).sum::<f64>() / n) as f32;
    let scale = 1.0 / (mean + eps).sqrt();
    x.iter_mut().for_each(|v| *v *= scale);
}
