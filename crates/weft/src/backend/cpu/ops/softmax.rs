//! SOFT_MAX: softmax(x*scale + mask*slope) along rows. The mask (f32 or f16) is one
//! matrix broadcast over rows (row i uses mask row i % ne01); ALiBi slopes per head
//! (dim 2) when max_bias > 0. Exponentials are summed in f64, as ggml does (each SIMD
//! vector summed in f32 first, as ggml's vector loop; `float_simd`'s `exp_sum`).

use super::src;
use crate::backend::cpu::float_simd::kernels;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::{alibi_bases, Op};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let a_ok = node.src(0).is_some_and(|s| s.ty() == Type::F32);
    let mask_ok = node.src(1).is_none_or(|m| matches!(m.ty(), Type::F32 | Type::F16));
    a_ok && mask_ok && node.ty() == Type::F32
}

/// ALiBi slope of head h (ggml_compute_forward_soft_max_f32, and flash attention's).
/// The powers are powf, as in ggml: powi multiplies and can differ in the last bit.
pub fn alibi_slope(max_bias: f32, n_head: u32, h: u32) -> f32 {
    if max_bias <= 0.0 {
        return 1.0;
    }
    let (m0, m1, n_head_log2) = alibi_bases(max_bias, n_head);
    if h < n_head_log2 {
        m0.powf((h + 1) as f32)
    } else {
        m1.powf((2 * (h - n_head_log2) + 1) as f32)
    }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let Op::SoftMax { scale, max_bias } = node.op() else {
        return Ok(());
    };
    let s = src(node, 0)?;
    let mask = node.src(1).map(TData::of).transpose()?;
    let d = TData::of(node)?;
    let (n0, n1, n2) = (s.n(0), s.n(1), s.n(2));
    cx.par_ranges(s.nrows(), (2048 / n0.max(1)).max(1), |rows| {
        let (mut w, mut m) = (vec![0f32; n0], vec![0f32; n0]);
        for ir in rows {
            let (i1, i2, i3) = s.row_coords(ir);
            let slope = alibi_slope(max_bias, n2 as u32, ((ir / n1) % n2) as u32);
            // SAFETY: src/dst rows inside their shapes; mask rows are taken modulo the
            // src's ne[1], which the constructor checked the mask has at least.
            unsafe {
                s.load_row(i1, i2, i3, &mut w);
                w.iter_mut().for_each(|v| *v *= scale);
                if let Some(mk) = &mask {
                    mk.load_row(ir % n1, 0, 0, &mut m);
                    w.iter_mut().zip(&m).for_each(|(v, &mv)| *v += slope * mv);
                }
                softmax_row(&mut w);
                d.store_row(i1, i2, i3, &w);
            }
        }
    });
    Ok(())
}

/// exp(x - max) / sum, in place; the sum in f64.
pub fn softmax_row(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let kern = kernels();
    let n = x.len();
    let p = x.as_mut_ptr();
    // SAFETY: n elements, in place (both kernels allow it).
    unsafe {
        let sum = (kern.exp_sum)(p, max, p, n);
        (kern.scale)(p, (1.0 / sum) as f32, p, n);
    }
}
