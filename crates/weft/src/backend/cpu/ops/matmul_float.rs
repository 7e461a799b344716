//! MUL_MAT of f32, f16 and bf16 `a` (rows packed, as ggml asserts), read where it lies: no
//! copy of the whole weight matrix. b is first rounded to a's type (ggml's vec_dot type: f16
//! for f16 a, bf16 for bf16 a), once per compute.
//!
//! - Few columns (b rows < [`GEMM_MIN_N`]): SIMD dot products, four a rows against one b row
//!   at a time (`float_simd`: f16 and bf16 widened in registers). Tasks are blocks of a rows
//!   (64 for one column, 16 otherwise, as ggml's chunks) times blocks of b rows, so both
//!   threads work even at n = 1; within a task each group of four a rows meets every b row
//!   of the block while it is in cache.
//! - More columns: the `gemm` crate's packed, register-tiled f32 kernels (AVX-512 / AVX2 /
//!   NEON chosen at run time), each task one single-threaded call on a block of the output:
//!   `gemm`'s own threading did not scale to two threads at 512^3 here, splitting the output
//!   ourselves did. Blocks depend on the shapes only, so results do not depend on the
//!   thread count. a is widened and transposed block by block (at most 512 rows times 1024
//!   k, 2 MiB) into a per-task buffer in the column-major order `gemm` reads, and the calls
//!   accumulate over k blocks ([`widen_transposed`] says why `gemm` is not left to gather it).
//!
//! Sums run in f32 in another order than ggml's (lanes, then a tree; gemm's k blocking), so
//! results agree with ggml's to rounding, not bit for bit.

use super::SyncPtr;
use crate::backend::cpu::float_simd::{kernels, Elem, Kernels};
use crate::backend::cpu::kernel::Cx;
use crate::backend::cpu::tdata::TData;
use crate::Result;

/// From this many b rows (per a matrix) on, the packed GEMM beats the row dots. Measured
/// (f32, 2 threads, best us, row dots / GEMM): 512^2 a by 16 b rows 65 / 88, by 24 140 / 107;
/// 4096^2 by 16 7363 / 8701, by 32 13844 / 11300; 4096 x 14336 by 16 24825 / 28507, by 24
/// 48729 / 33007. The row dots take b in blocks of 16, so 17 rows cost them a second block.
pub const GEMM_MIN_N: usize = 17;
/// k elements of a widened per GEMM step.
const K_BLOCK: usize = 1024;

/// b's rows in a given element type, either b itself (already that type, rows packed) or a
/// converted copy in flat row order.
pub(super) struct BRows {
    b: TData,
    owned: Option<Vec<u8>>,
    row_size: usize,
}

impl BRows {
    /// b's rows as `store` elements, each value first rounded through `round` (a's type).
    pub(super) fn new(b: &TData, round: Elem, store: Elem, cx: &Cx) -> BRows {
        let k = b.n(0);
        let row_size = k * store.size();
        let aligned = b.nb[1].is_multiple_of(store.size());
        if Elem::of(b.ty) == Some(store) && b.rows_packed() && aligned && (round == store || round == Elem::F32) {
            return BRows { b: *b, owned: None, row_size };
        }
        // Not zeroed first: the tasks below write every byte, and zeroing a few MB ran on the
        // graph's thread alone while the other threads waited (3% of an f16 512^3 MUL_MAT).
        let len = b.nrows() * row_size;
        let mut data: Vec<u8> = Vec::with_capacity(len);
        let out = SyncPtr(data.as_mut_ptr());
        let kern = kernels();
        cx.par_ranges(b.nrows(), (4096 / k.max(1)).max(1), |rows| {
            let (mut buf, mut tmp) = (vec![0f32; k], vec![0u8; k * 2]);
            for r in rows {
                let (i1, i2, i3) = b.row_coords(r);
                // SAFETY: row r of `data` is this task's; (i1, i2, i3) is inside b.
                unsafe {
                    b.load_row(i1, i2, i3, &mut buf);
                    let dst = out.get().add(r * row_size);
                    if round != Elem::F32 && store == Elem::F32 {
                        // Rounded through a's type, stored widened (for the f32 GEMM).
                        kern.f32_to(round, buf.as_ptr(), tmp.as_mut_ptr(), k);
                        kern.to_f32(round, tmp.as_ptr(), dst as *mut f32, k);
                    } else {
                        kern.f32_to(store, buf.as_ptr(), dst, k);
                    }
                }
            }
        });
        // SAFETY: every row r < b.nrows() was written whole (row_size bytes) above.
        unsafe { data.set_len(len) };
        BRows { b: *b, owned: Some(data), row_size }
    }

    /// The first row of b's matrix (i2, i3) and the bytes between its rows.
    #[inline]
    pub(super) fn matrix(&self, i2: usize, i3: usize) -> (*const u8, usize) {
        match &self.owned {
            // SAFETY: (0, i2, i3) is inside b.
            None => (unsafe { self.b.row_ptr(0, i2, i3) } as *const u8, self.b.nb[1]),
            Some(data) => {
                let first = (i3 * self.b.n(2) + i2) * self.b.n(1);
                (data[first * self.row_size..].as_ptr(), self.row_size)
            }
        }
    }

    /// Row `r` in b's flat row order.
    #[inline]
    pub(super) fn flat_row(&self, r: usize) -> *const u8 {
        let (i1, i2, i3) = self.b.row_coords(r);
        self.row(i1, i2, i3)
    }

    /// Row (i1, i2, i3).
    #[inline]
    pub(super) fn row(&self, i1: usize, i2: usize, i3: usize) -> *const u8 {
        let (p, stride) = self.matrix(i2, i3);
        // SAFETY: i1 < b.ne[1], so the row is inside the matrix.
        unsafe { p.add(i1 * stride) }
    }
}

/// The matrices of one MUL_MAT: a [k, m, ne02, ne03] broadcast over b [k, n, ne12, ne13]
/// into dst [m, n, ne12, ne13].
struct Problem<'a> {
    a: &'a TData,
    d: &'a TData,
    elem: Elem,
    k: usize,
    m: usize,
    n: usize,
    r2: usize,
    r3: usize,
}

impl Problem<'_> {
    /// a's matrix for b's matrix (i2, i3).
    #[inline]
    fn a_matrix(&self, i2: usize, i3: usize) -> *const u8 {
        // SAFETY: (0, i2 / r2, i3 / r3) is inside a (the constructor checked the broadcast).
        unsafe { self.a.row_ptr(0, i2 / self.r2, i3 / self.r3) as *const u8 }
    }
    /// dst's (i0, i1, i2, i3) element.
    #[inline]
    fn dst(&self, i0: usize, i1: usize, i2: usize, i3: usize) -> *mut f32 {
        // SAFETY: callers pass indices inside dst [m, n, ne12, ne13].
        unsafe { self.d.at(i0, i1, i2, i3) as *mut f32 }
    }
}

/// Whether this kernel takes the node: a float a with packed rows (b of any float type).
pub(super) fn takes(a: &TData) -> bool {
    Elem::of(a.ty).is_some() && a.rows_packed()
}

pub(super) fn run(a: &TData, b: &TData, d: &TData, cx: &Cx) -> Result<()> {
    let Some(elem) = Elem::of(a.ty) else {
        return Ok(());
    };
    let p =
        Problem { a, d, elem, k: a.n(0), m: a.n(1), n: b.n(1), r2: b.n(2) / a.n(2).max(1), r3: b.n(3) / a.n(3).max(1) };
    if p.k == 0 {
        // Empty sums: every output is 0.
        for r in 0..d.nrows() {
            let (i1, i2, i3) = d.row_coords(r);
            (0..p.m).for_each(|i0| unsafe { p.dst(i0, i1, i2, i3).write_unaligned(0.0) });
        }
        return Ok(());
    }
    if p.n < GEMM_MIN_N {
        let brows = BRows::new(b, elem, elem, cx);
        row_dots(&p, &brows, b, cx);
    } else {
        let brows = BRows::new(b, elem, Elem::F32, cx);
        gemm_blocks(&p, &brows, b, cx);
    }
    Ok(())
}

/// Few columns: four a rows at a time against each b row of the task's block.
fn row_dots(p: &Problem, brows: &BRows, b: &TData, cx: &Cx) {
    let kern = kernels();
    let dot = kern.dot(p.elem);
    let a_block = if p.n == 1 { 64 } else { 16 };
    let b_block = 16;
    let (m_blocks, n_blocks) = (p.m.div_ceil(a_block), p.n.div_ceil(b_block));
    let mats = b.n(2) * b.n(3);
    let lda = p.a.nb[1];
    cx.par_ranges(mats * n_blocks * m_blocks, 1, |tasks| {
        for t in tasks {
            let (ib, rest) = (t % m_blocks, t / m_blocks);
            let (jb, mat) = (rest % n_blocks, rest / n_blocks);
            let (i2, i3) = (mat % b.n(2), mat / b.n(2));
            let a0 = p.a_matrix(i2, i3);
            let (i0_end, i1_end) = (((ib + 1) * a_block).min(p.m), ((jb + 1) * b_block).min(p.n));
            let mut i0 = ib * a_block;
            let mut out = [0f32; 4];
            while i0 < i0_end {
                let rows = (i0_end - i0).min(4);
                for i1 in jb * b_block..i1_end {
                    // SAFETY: rows i0..i0 + rows of a's matrix exist (lda bytes apart, k
                    // elements each); b's row has k elements of a's type; the dst elements are
                    // this task's.
                    unsafe {
                        dot(p.k, a0.add(i0 * lda), lda, rows, brows.row(i1, i2, i3), out.as_mut_ptr());
                        std::ptr::copy_nonoverlapping(out.as_ptr(), p.dst(i0, i1, i2, i3), rows);
                    }
                }
                i0 += rows;
            }
        }
    });
}

/// Many columns: blocks of the output, each one single-threaded `gemm` call (per k block for
/// f16 / bf16 a, widened into a per-task buffer).
fn gemm_blocks(p: &Problem, brows: &BRows, b: &TData, cx: &Cx) {
    let mats = b.n(2) * b.n(3);
    // Blocks of the output sized by the problem alone (so every element is summed by the
    // same call whatever the thread count): a quarter of a's rows, 64 to 512 of them, so
    // two threads get at least two blocks each and a busy core's share can move; b's rows
    // whole up to 1024. Big blocks keep `gemm`'s packing of b cheap.
    let m_block = p.m.div_ceil(4).next_multiple_of(64).clamp(64, 512);
    let n_block = if p.n <= 1024 { p.n } else { 512 };
    let (m_blocks, n_blocks) = (p.m.div_ceil(m_block), p.n.div_ceil(n_block));
    let kern = kernels();
    let ldd = p.d.nb[1] / 4;
    cx.par_ranges(mats * m_blocks * n_blocks, 1, |tasks| {
        let mut wide: Vec<f32> = Vec::new();
        for t in tasks {
            let (ib, rest) = (t % m_blocks, t / m_blocks);
            let (jb, mat) = (rest % n_blocks, rest / n_blocks);
            let (i2, i3) = (mat % b.n(2), mat / b.n(2));
            let (i0, i1) = (ib * m_block, jb * n_block);
            let (mb, nb) = ((p.m - i0).min(m_block), (p.n - i1).min(n_block));
            let (b0, ldb) = brows.matrix(i2, i3);
            // SAFETY: every pointer below is inside its tensor (a's rows i0..i0+mb, b's rows
            // i1..i1+nb, dst's block), and the dst block is this task's alone.
            unsafe {
                let bt = b0.add(i1 * ldb) as *const f32;
                let dst = p.dst(i0, i1, i2, i3);
                let a_rows = p.a_matrix(i2, i3).add(i0 * p.a.nb[1]);
                let kb_len = K_BLOCK.min(p.k);
                wide.resize(mb * kb_len, 0.0);
                let mut kb = 0;
                while kb < p.k {
                    let kl = (p.k - kb).min(kb_len);
                    widen_transposed(
                        kern,
                        p.elem,
                        a_rows.add(kb * p.elem.size()),
                        p.a.nb[1],
                        mb,
                        kl,
                        wide.as_mut_ptr(),
                    );
                    gemm_f32(mb, nb, kl, dst, ldd, kb > 0, wide.as_ptr(), bt.add(kb), ldb / 4);
                    kb += kl;
                }
            }
        }
    });
}

/// Rows of a (`rows` rows, `lda` bytes apart, `k` elements of `elem` from `src`) as f32 in
/// column-major order, `dst[kk * rows + r]`: the layout `gemm` reads its left operand in.
/// Given a's rows as they lie, `gemm` gathers that layout itself one element at a time,
/// walking down 64 rows per k step; with a power-of-two k those rows (2 KiB apart at k = 512)
/// fall into two L1 sets, so nearly every gathered element missed L1 (17% of a 512^3 MUL_MAT
/// in `perf`). Here each row's elements are read a tile at a time, whole cache lines, and
/// the tile is written out column by column.
///
/// # Safety
/// `src` holds the rows as described, `dst` is writable for `rows * k` f32.
unsafe fn widen_transposed(
    kern: &Kernels,
    elem: Elem,
    src: *const u8,
    lda: usize,
    rows: usize,
    k: usize,
    dst: *mut f32,
) {
    const TR: usize = 16;
    const TK: usize = 64;
    let mut tile = [[0f32; TK]; TR];
    for r0 in (0..rows).step_by(TR) {
        let rn = (rows - r0).min(TR);
        for c0 in (0..k).step_by(TK) {
            let cn = (k - c0).min(TK);
            for (i, t) in tile[..rn].iter_mut().enumerate() {
                kern.to_f32(elem, src.add((r0 + i) * lda + c0 * elem.size()), t.as_mut_ptr(), cn);
            }
            for c in 0..cn {
                let out = dst.add((c0 + c) * rows + r0);
                for (i, t) in tile[..rn].iter().enumerate() {
                    *out.add(i) = t[c];
                }
            }
        }
    }
}

/// dst[i + j * ldd] (+)= sum_kk a[kk * m + i] * b[j * ldb + kk] for i < m, j < n: one
/// single-threaded `gemm` call (strides in elements), a column-major as
/// [`widen_transposed`] writes it.
///
/// # Safety
/// Every index above is inside its buffer; dst's block is not shared with another thread.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_f32(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut f32,
    ldd: usize,
    accumulate: bool,
    a: *const f32,
    b: *const f32,
    ldb: usize,
) {
    gemm::gemm(
        m,
        n,
        k,
        dst,
        ldd as isize,
        1,
        accumulate,
        a,
        m as isize,
        1,
        b,
        ldb as isize,
        1,
        1.0,
        1.0,
        false,
        false,
        false,
        gemm::Parallelism::None,
    );
}
