//! MUL_MAT with a quantized `a`, as ggml-cpu computes it: every row of b is first converted
//! to a's vec_dot type (q8_0, q8_1 or q8_K, by `quant::quantize_row_for_dot`, ggml's
//! from_float; b rows already of that type are used as they are), then each dst element is
//! the block dot product of an a row with a converted b row (`quant::vec_dot`, ggml's scalar
//! reference: its SIMD kernels sum in other orders and agree to rounding).
//!
//! Work is split over (b row, block of a rows) pairs, so a single column (n = 1) still
//! spreads over threads; every element is one independent dot, so results do not depend on
//! the thread count. [`DotRows`] is shared with MUL_MAT_ID.

use super::{is_float, is_quant_rows, src, SyncPtr};
use crate::backend::cpu::kernel::Cx;
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::{quant, Type};
use crate::Result;

/// a rows per task: enough work per task, and many tasks even for one column of b.
const A_ROWS_PER_TASK: usize = 16;

/// Whether b's type can be multiplied with quantized rows of `a_ty`: a float type (converted
/// per row), or a's vec_dot type itself with packed rows (used as stored, as ggml does).
pub(super) fn b_supported(a_ty: Type, b: &Tensor) -> bool {
    is_float(b.ty()) || (b.ty() == quant::vec_dot_type(a_ty) && b.nb()[0] == b.ty().type_size())
}

/// MUL_MAT of quantized a (packed blocks) with a float b (or b in a's vec_dot type) into f32.
pub(super) fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    is_quant_rows(a) && b_supported(a.ty(), b) && node.ty() == Type::F32
}

/// Every row of b in a's vec_dot type, one after another in flat row order (row r is b's row
/// `b.row_coords(r)`).
pub(super) struct DotRows {
    a_ty: Type,
    k: usize,
    row_size: usize,
    data: Vec<u8>,
}

impl DotRows {
    /// Converts all rows of `b` (its rows hold k = a.ne[0] elements) for dots with `a_ty`.
    pub(super) fn new(a_ty: Type, b: &TData, cx: &Cx) -> Result<DotRows> {
        let k = b.n(0);
        let dot_ty = quant::vec_dot_type(a_ty);
        let row_size = dot_ty.row_size(k);
        let mut data = vec![0u8; b.nrows() * row_size];
        let out = SyncPtr(data.as_mut_ptr());
        cx.try_par_ranges(b.nrows(), (4096 / k.max(1)).max(1), |rows| {
            let mut buf = vec![0f32; k];
            for r in rows {
                let (i1, i2, i3) = b.row_coords(r);
                // SAFETY: row r of `data` belongs to this task; (i1, i2, i3) is inside b, whose
                // rows are packed when they are copied as stored (b_supported).
                unsafe {
                    let dst = std::slice::from_raw_parts_mut(out.get().add(r * row_size), row_size);
                    if b.ty == dot_ty {
                        std::ptr::copy_nonoverlapping(b.row_ptr(i1, i2, i3), dst.as_mut_ptr(), row_size);
                    } else {
                        b.load_row(i1, i2, i3, &mut buf);
                        quant::quantize_row_for_dot(dot_ty, &buf, dst)?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(DotRows { a_ty, k, row_size, data })
    }

    /// The dot product of the a row at `a_row` (k elements of a's type, packed blocks) with
    /// converted b row `r`.
    ///
    /// # Safety
    /// `a_row` points at a readable row of k elements of a's type; r < b's row count.
    #[inline]
    pub(super) unsafe fn dot(&self, a_row: *const u8, r: usize) -> Result<f32> {
        let x = std::slice::from_raw_parts(a_row, self.a_ty.row_size(self.k));
        quant::vec_dot(self.a_ty, self.k, x, &self.data[r * self.row_size..(r + 1) * self.row_size])
    }
}

/// dst[i0, i1, i2, i3] = a row (i0, i2 / r2, i3 / r3) . b row (i1, i2, i3), a broadcast over
/// b's dims 2 and 3.
pub(super) fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    let rows = DotRows::new(a.ty, &b, cx)?;
    let m = a.n(1);
    let (r2, r3) = (b.n(2) / a.n(2), b.n(3) / a.n(3));
    let (blocks, n_b) = (m.div_ceil(A_ROWS_PER_TASK), b.nrows());
    // Consecutive tasks share a block of a rows (which stays in cache) and walk b's rows.
    cx.try_par_ranges(blocks * n_b, 1, |tasks| {
        for task in tasks {
            let r = task % n_b;
            let (i1, i2, i3) = b.row_coords(r);
            let first = (task / n_b) * A_ROWS_PER_TASK;
            for i0 in first..(first + A_ROWS_PER_TASK).min(m) {
                // SAFETY: (i0, i2 / r2, i3 / r3) is inside a (the constructor checked the
                // broadcast); (i0, i1, i2, i3) inside dst [m, n, ne12, ne13], written by this
                // task only.
                unsafe {
                    let v = rows.dot(a.row_ptr(i0, i2 / r2, i3 / r3), r)?;
                    (d.at(i0, i1, i2, i3) as *mut f32).write_unaligned(v);
                }
            }
        }
        Ok(())
    })
}
