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
//! [`DotRows`] and [`gemm_for`] are shared with MUL_MAT_ID.

use super::{is_float, is_quant_rows, src, SyncPtr};
use crate::backend::cpu::kernel::Cx;
use crate::backend::cpu::simd::gemm::{PackedB, QuantGemm};
use crate::backend::cpu::simd::{self, Isa, RowDot};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::{quant, Type};
use crate::{Error, Result};

/// From this many columns of b per matrix on, MUL_MAT takes the GEMM: decoding and packing a
/// weight row costs about 10 to 20 `vec_dot`s, and each column after that a third of one
/// (measured crossover: 16 to 32 columns, depending on the type).
pub(super) const GEMM_MIN_COLS: usize = 32;

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
    a_row_size: usize,
    row_size: usize,
    data: Vec<u8>,
    /// Every b row passes `RowDot::pairs_ok`, so a rows may go through `dot2` / `dot4` (a
    /// row that fails, which only a NaN in b makes, sends the whole product one row at a
    /// time: the same bits, a little slower).
    pairs: bool,
}

/// Row `r` of b (flat row index) in `dot_ty` into `out` (its row size), as ggml's mul_mat
/// converts it: rows already of that type are copied as stored (packed, see b_supported).
/// `buf` holds a row of f32.
fn convert_b_row(b: &TData, dot_ty: Type, isa: Isa, r: usize, out: &mut [u8], buf: &mut [f32]) -> Result<()> {
    let (i1, i2, i3) = b.row_coords(r);
    // SAFETY: (i1, i2, i3) is inside b; rows copied as stored are packed (b_supported), so
    // the row is out.len() readable bytes.
    unsafe {
        if b.ty == dot_ty {
            std::ptr::copy_nonoverlapping(b.row_ptr(i1, i2, i3), out.as_mut_ptr(), out.len());
            Ok(())
        } else {
            b.load_row(i1, i2, i3, buf);
            simd::from_float(dot_ty, isa, buf, out)
        }
    }
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
                // SAFETY: row r of `data` belongs to this task.
                let dst = unsafe { std::slice::from_raw_parts_mut(out.get().add(r * row_size), row_size) };
                convert_b_row(b, dot_ty, isa, r, dst, &mut buf)?;
            }
            Ok(())
        })?;
        let pairs = data.chunks(row_size.max(1)).all(|y| dot.pairs_ok(y));
        Ok(DotRows { dot, a_row_size: a_ty.row_size(k), row_size, data, pairs })
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

    /// [`DotRows::dot`] of two a rows with converted b row `r`, in one pass.
    ///
    /// # Safety
    /// As for [`DotRows::dot`], for both rows.
    #[inline]
    pub(super) unsafe fn dot2(&self, a0: *const u8, a1: *const u8, r: usize) -> [f32; 2] {
        let n = self.a_row_size;
        self.dot.dot2(std::slice::from_raw_parts(a0, n), std::slice::from_raw_parts(a1, n), self.row(r))
    }

    /// [`DotRows::dot`] of four a rows with converted b row `r`, in one pass.
    ///
    /// # Safety
    /// As for [`DotRows::dot`], for every row.
    #[inline]
    pub(super) unsafe fn dot4(&self, a: [*const u8; 4], r: usize) -> [f32; 4] {
        let n = self.a_row_size;
        self.dot.dot4(a.map(|p| std::slice::from_raw_parts(p, n)), self.row(r))
    }
}

/// The GEMM for `n` columns of b per matrix of a, where it pays.
pub(super) fn gemm_for(a_ty: Type, n: usize) -> Option<QuantGemm> {
    (n >= GEMM_MIN_COLS).then(|| QuantGemm::new(a_ty, Isa::best())).flatten()
}

/// MUL_MAT by the GEMM, one matrix of b (dims 2 and 3) at a time: b's columns converted and
/// packed straight from b, a's rows decoded by the GEMM's tasks.
fn run_gemm(gemm: &QuantGemm, a: &TData, b: &TData, d: &TData, cx: &Cx) -> Result<()> {
    let (k, m, n) = (a.n(0), a.n(1), b.n(1));
    let (r2, r3) = (b.n(2) / a.n(2), b.n(3) / a.n(3));
    let dot_ty = quant::vec_dot_type(a.ty);
    let (isa, a_row_size) = (Isa::best(), a.ty.row_size(k));
    for i3 in 0..b.n(3) {
        for i2 in 0..b.n(2) {
            let first = (i3 * b.n(2) + i2) * n;
            let fill = |c: usize, out: &mut [u8]| convert_b_row(b, dot_ty, isa, first + c, out, &mut vec![0f32; k]);
            let packed = PackedB::new(dot_ty, k, n, gemm.nr(), &fill, cx)?;
            // SAFETY: (i0, i2 / r2, i3 / r3) is inside a (the constructor checked the
            // broadcast), a row of packed blocks (supports); dst [m, n, ne12, ne13] is f32
            // with rows contiguous, and the GEMM hands each output run to one task.
            let a_row = |i0: usize| unsafe { std::slice::from_raw_parts(a.row_ptr(i0, i2 / r2, i3 / r3), a_row_size) };
            let store = |i1: usize, i0: usize, v: &[f32]| unsafe {
                std::ptr::copy_nonoverlapping(v.as_ptr() as *const u8, d.at(i0, i1, i2, i3), 4 * v.len())
            };
            gemm.run(m, n, k, &a_row, &packed, &store, cx)?;
        }
    }
    Ok(())
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
    if let Some(gemm) = gemm_for(a.ty, b.n(1)) {
        return run_gemm(&gemm, &a, &b, &d, cx);
    }
    let rows = DotRows::new(a.ty, &b, cx)?;
    let m = a.n(1);
    let (r2, r3) = (b.n(2) / a.n(2), b.n(3) / a.n(3));
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
                        let end0 = (b0 + 16).min(rows0.end);
                        // SAFETY (both loops): (i0, i2 / r2, i3 / r3) is inside a (the
                        // constructor checked the broadcast); (i0, i1, i2, i3) inside dst,
                        // written by this chunk only.
                        let at = |i0: usize| unsafe { a.row_ptr(i0, i2 / r2, i3 / r3) } as *const u8;
                        let put = |i0: usize, v: f32| unsafe { (d.at(i0, i1, i2, i3) as *mut f32).write_unaligned(v) };
                        // Rows four, then two at a time: one pass over b's row for several a
                        // rows where the type has such a kernel, and more weight streams in
                        // flight (see `simd::table`); `dot4` / `dot2` fall back to passes of
                        // fewer rows, with the same bits, where it has none.
                        let mut i0 = b0;
                        if rows.pairs {
                            while i0 + 4 <= end0 {
                                let v = unsafe { rows.dot4([at(i0), at(i0 + 1), at(i0 + 2), at(i0 + 3)], r) };
                                v.into_iter().enumerate().for_each(|(j, v)| put(i0 + j, v));
                                i0 += 4;
                            }
                            while i0 + 2 <= end0 {
                                let [v0, v1] = unsafe { rows.dot2(at(i0), at(i0 + 1), r) };
                                put(i0, v0);
                                put(i0 + 1, v1);
                                i0 += 2;
                            }
                        }
                        for i0 in i0..end0 {
                            put(i0, unsafe { rows.dot(at(i0), r) });
                        }
                    }
                }
            }
        }
    });
    Ok(())
}
