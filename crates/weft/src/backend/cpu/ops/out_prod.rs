//! OUT_PROD: dst[i0, i1, i2, i3] = sum_j a[i0, j, i2', i3'] * b[i1, j, i2, i3], the sum of
//! outer products of a's and b's rows j (a [m, n], b [p, n] -> [m, p]). b may be a
//! transposed view; a broadcasts over b's dims 2 and 3 (i2' = i2 / (ne2 / a.ne2)), as
//! ggml's constructor allows (its CPU kernel at the reference commit asserted equal dims,
//! later ggml broadcasts exactly like this).
//!
//! Each dst row accumulates in f32 over j ascending with fused multiply-adds, as ggml's
//! ggml_vec_mad_f32 loop does.
//! f16/bf16 operands are widened to f32 (exactly), which ggml's CPU leaves unimplemented; a
//! quantized a is dequantized row by row first (ggml's out_prod_q_f32, which dequantizes each
//! row j before the same multiply-add).

use super::matmul::packed_f32;
use super::{fused, is_float, is_float_or_quant, mad_f32, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    is_float_or_quant(a) && is_float(b.ty()) && node.ty() == Type::F32
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    let (m, n) = (a.n(0), a.n(1));
    let af = packed_f32(&a, Type::F32, cx);
    let (r2, r3) = (d.n(2) / a.n(2), d.n(3) / a.n(3));
    cx.par_ranges(d.nrows(), (16384 / (m * n).max(1)).max(1), |rows| {
        fused(|| {
            let mut out = vec![0f32; m];
            for ir in rows {
                let (i1, i2, i3) = d.row_coords(ir);
                let a_mat = ((i3 / r3) * a.n(2) + i2 / r2) * n * m;
                out.fill(0.0);
                for j in 0..n {
                    // SAFETY: (i1, j, i2, i3) is inside b [p, n, ne2, ne3].
                    let w = unsafe { b.get_f32(i1, j, i2, i3) };
                    let arow = &af[a_mat + j * m..a_mat + (j + 1) * m];
                    mad_f32(&mut out, arow, w);
                }
                // SAFETY: dst row (i1, i2, i3) belongs to this worker.
                unsafe { d.store_row(i1, i2, i3, &out) };
            }
        })
    });
    Ok(())
}
