//! MUL_MAT with a quantized `a`, shaped like ggml-cpu's: every row of b is first converted
//! to a's vec_dot type (q8_0, q8_1 or q8_K) by the vector `from_float` (the bytes of
//! ggml's; b rows already of that type are used as they are). Then:
//! - few columns (token generation, n < `GEMM_MIN_COLS`): one `vec_dot` per output, the
//!   vector kernels of `simd` (ggml's x86 arithmetic, bit for bit), chunked over output rows
//!   and columns as ggml chunks them, so both threads stay busy at n = 1;
//! - many columns (prompt processing): the quantized GEMM of `simd::gemm`, which decodes
//!   each weight row once instead of once per column.
//!
//! Every output is one independent dot, so results do not depend on the thread count.
//! [`DotRows`] is shared with MUL_MAT_ID.

use super::{is_float, is_quant_rows, src, SyncPtr};
use crate::backend::cpu::kernel::Cx;
use crate::backend::cpu::simd::gemm::{PackedB, QuantGemm};
use crate::backend::cpu::simd::{self, Isa, RowDot};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::{quant, Type};
use crate::{Error, Result};

/// From this many columns of b per matrix on, MUL_MAT takes the GEMM: decoding a weight row
/// costs about as much as a few `vec_dot`s, and each column after that is far cheaper.
pub(super) const GEMM_MIN_COLS: usize = 8;

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
    is_quant_rows(a) && RowDot::best(a.ty()).is_some() && b_supported(a.ty(), b) && node.ty() == Type::F32
}

/// Every row of b in a's vec_dot type, one after another in flat row order (row r is b's row
/// `b.row_coords(r)`), and a's dot product with them.
pub(super) struct DotRows {
    dot: RowDot,
    dot_ty: Type,
    k: usize,
    a_row_size: usize,
    row_size: usize,
    data: Vec<u8>,
}

impl DotRows {
    /// Converts all rows of `b` (its rows hold k = a.ne[0] elements) for dots with `a_ty`.
    pub(super) fn new(a_ty: Type, b: &TData, cx: &Cx) -> Result<DotRows> {
        let dot = RowDot::best(a_ty)
            .ok_or_else(|| Error::unsupported(format!("mulMat: no dot product for a of type {a_ty}")))?;
        let k = b.n(0);
        let dot_ty = quant::vec_dot_type(a_ty);
        let row_size = dot_ty.row_size(k);
        let mut data = vec![0u8; b.nrows() * row_size];
        let out = SyncPtr(data.as_mut_ptr());
        let isa = Isa::best();
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
                        simd::from_float(dot_ty, isa, &buf, dst)?;
                    }
                }
            }
            Ok(())
        })?;
        Ok(DotRows { dot, dot_ty, k, a_row_size: a_ty.row_size(k), row_size, data })
    }

    /// Converted b row `r`.
    pub(super) fn row(&self, r: usize) -> &[u8] {
        &self.data[r * self.row_size..(r + 1) * self.row_size]
    }

    /// The dot product of the a row at `a_row` (k elements of a's type, packed blocks) with
    /// converted b row `r`.
    ///
    /// # Safety
    /// `a_row` points at a readable row of k elements of a's type; r < b's row count.
    #[inline]
    pub(super) unsafe fn dot(&self, a_row: *const u8, r: usize) -> f32 {
        self.dot.dot(std::slice::from_raw_parts(a_row, self.a_row_size), self.row(r))
    }

    /// The a row at `ptr` as a slice.
    ///
    /// # Safety
    /// As for [`DotRows::dot`].
    pub(super) unsafe fn a_row<'a>(&self, ptr: *const u8) -> &'a [u8] {
        std::slice::from_raw_parts(ptr, self.a_row_size)
    }

    /// The GEMM for `n` columns per matrix, where it pays.
    pub(super) fn gemm(&self, n: usize) -> Option<QuantGemm> {
        (n >= GEMM_MIN_COLS).then(|| QuantGemm::new(self.dot.ty(), Isa::best())).flatten()
    }

    /// Packs converted rows `first..first + n` for the GEMM.
    pub(super) fn pack(&self, gemm: &QuantGemm, first: usize, n: usize, cx: &Cx) -> PackedB {
        PackedB::new(self.dot_ty, self.k, n, gemm.nr(), &|c| self.row(first + c), cx)
    }
}

/// ggml's split of an nr0 x nr1 output into chunks (`ggml_compute_forward_mul_mat`): 16 x 16
/// (64 where one side is a single row or column), re-split by thread along the longer side
/// when that gives fewer than 4 chunks per thread. Returns (chunks along 0, along 1, rows
/// per chunk along 0, along 1).
pub(super) fn chunk_plan(nr0: usize, nr1: usize, nth: usize) -> (usize, usize, usize, usize) {
    let size = if nr0 == 1 || nr1 == 1 { 64 } else { 16 };
    let (mut n0, mut n1) = (nr0.div_ceil(size), nr1.div_ceil(size));
    if n0 * n1 < nth * 4 {
        (n0, n1) = if nr0 > nr1 { (nth, 1) } else { (1, nth) };
    }
    (n0, n1, nr0.div_ceil(n0), nr1.div_ceil(n1))
}

/// dst[i0, i1, i2, i3] = a row (i0, i2 / r2, i3 / r3) . b row (i1, i2, i3), a broadcast over
/// b's dims 2 and 3.
pub(super) fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    let rows = DotRows::new(a.ty, &b, cx)?;
    let (m, n) = (a.n(1), b.n(1));
    let (r2, r3) = (b.n(2) / a.n(2), b.n(3) / a.n(3));
    // SAFETY (both paths): (i0, i2 / r2, i3 / r3) is inside a (the constructor checked the
    // broadcast); (i0, i1, i2, i3) inside dst [m, n, ne12, ne13], each written by one task.
    if let Some(gemm) = rows.gemm(n) {
        for i3 in 0..b.n(3) {
            for i2 in 0..b.n(2) {
                let packed = rows.pack(&gemm, (i3 * b.n(2) + i2) * n, n, cx);
                let a_row = |i0: usize| unsafe { rows.a_row(a.row_ptr(i0, i2 / r2, i3 / r3)) };
                let store =
                    |i0: usize, i1: usize, v: f32| unsafe { (d.at(i0, i1, i2, i3) as *mut f32).write_unaligned(v) };
                gemm.run(m, n, a.n(0), &a_row, &packed, &store, cx)?;
            }
        }
        return Ok(());
    }
    let nr1 = b.nrows();
    let (n0, n1, dr0, dr1) = chunk_plan(m, nr1, cx.n_threads());
    cx.par_ranges(n0 * n1, 1, |chunks| {
        for chunk in chunks {
            let (c0, c1) = (chunk % n0, chunk / n0);
            let (rows0, rows1) = (c0 * dr0..((c0 + 1) * dr0).min(m), c1 * dr1..((c1 + 1) * dr1).min(nr1));
            // 16 x 16 blocks: 16 a rows stay in cache while their columns go by.
            for b1 in rows1.clone().step_by(16) {
                for b0 in rows0.clone().step_by(16) {
                    for r in b1..(b1 + 16).min(rows1.end) {
                        let (i1, i2, i3) = b.row_coords(r);
                        for i0 in b0..(b0 + 16).min(rows0.end) {
                            unsafe {
                                let v = rows.dot(a.row_ptr(i0, i2 / r2, i3 / r3), r);
                                (d.at(i0, i1, i2, i3) as *mut f32).write_unaligned(v);
                            }
                        }
                    }
                }
            }
        }
    });
    Ok(())
}
