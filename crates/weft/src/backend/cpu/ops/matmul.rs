//! MUL_MAT: dst[i0, i1, i2, i3] = dot(row i0 of a, row i1 of b), a broadcast over b's dims
//! 2 and 3. Like ggml, b is first rounded to a's "vec dot" type (f16 for f16 a, bf16 for
//! bf16 a), then both are multiplied in f32. Float a with packed rows: `matmul_float`
//! (SIMD row dots, a packed GEMM); quantized a: `matmul_quant`; the rest (a's elements
//! strided) here, through f32 copies.

use std::ops::Range;

use super::{is_float, matmul_float, matmul_quant, src, SyncPtr};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, Type};
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    (is_float(a.ty()) && is_float(b.ty()) && node.ty() == Type::F32) || matmul_quant::supports(node)
}

/// All rows of a tensor as one packed f32 matrix, each value rounded through `round_to`
/// (the "vec dot" type ggml converts the other operand to).
pub(super) fn packed_f32(t: &TData, round_to: Type, cx: &Cx) -> Vec<f32> {
    packed_f32_rows(t, 0..t.nrows(), round_to, cx)
}

/// Rows `rows` (flat row indices) of a tensor as a packed f32 matrix, rounded through
/// `round_to`.
pub(super) fn packed_f32_rows(t: &TData, rows: Range<usize>, round_to: Type, cx: &Cx) -> Vec<f32> {
    let n0 = t.n(0);
    let first = rows.start;
    let mut out = vec![0f32; rows.len() * n0];
    let ptr = SyncPtr(out.as_mut_ptr());
    cx.par_ranges(rows.len(), (4096 / n0.max(1)).max(1), |chunk| {
        for r in chunk {
            let (i1, i2, i3) = t.row_coords(first + r);
            // SAFETY: each row index owns its slice of `out`.
            unsafe {
                let row = std::slice::from_raw_parts_mut(ptr.get().add(r * n0), n0);
                t.load_row(i1, i2, i3, row);
                match round_to {
                    Type::F16 => row.iter_mut().for_each(|v| *v = f16_to_f32(f32_to_f16(*v))),
                    Type::BF16 => row.iter_mut().for_each(|v| *v = bf16_to_f32(f32_to_bf16(*v))),
                    _ => {}
                }
            }
        }
    });
    out
}

/// Dot product with eight independent accumulators (vectorizes well).
#[inline]
pub fn dot(x: &[f32], y: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (xc, yc) = (x.chunks_exact(8), y.chunks_exact(8));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (a, b) in xc.zip(yc) {
        for k in 0..8 {
            acc[k] += a[k] * b[k];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (a, b) in xr.iter().zip(yr) {
        s += a * b;
    }
    s
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    if node.src(0).is_some_and(|a| a.ty().is_quantized()) {
        return matmul_quant::run(node, cx);
    }
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    if matmul_float::takes(&a) {
        return matmul_float::run(&a, &b, &d, cx);
    }
    let k = a.n(0);
    let vec_dot_type = a.ty;
    let af = packed_f32(&a, Type::F32, cx);
    let bf = packed_f32(&b, vec_dot_type, cx);
    let (m, n) = (a.n(1), b.n(1));
    let (r2, r3) = (b.n(2) / a.n(2), b.n(3) / a.n(3));
    // One task = one row of dst (one b row against all a rows).
    let n_rows = n * b.n(2) * b.n(3);
    cx.par_ranges(n_rows, (65536 / (m * k).max(1)).max(1), |rows| {
        for r in rows {
            let (i1, i2, i3) = (r % n, (r / n) % b.n(2), r / (n * b.n(2)));
            let brow = &bf[r * k..(r + 1) * k];
            let abase = ((i3 / r3) * a.n(2) + i2 / r2) * m * k;
            for i0 in 0..m {
                let arow = &af[abase + i0 * k..abase + (i0 + 1) * k];
                // SAFETY: (i0, i1, i2, i3) is inside dst's shape [m, n, ne12, ne13].
                unsafe { (d.at(i0, i1, i2, i3) as *mut f32).write_unaligned(dot(arow, brow)) };
            }
        }
    });
    Ok(())
}
