//! The pieces `k45` and `q6k` share: kernels that keep each row's per-block values in lanes
//! of registers shared by the rows, pair two zmms' lanes as i16 for one `vpdpwssd` by their
//! scales, and fold and scale two rows' sums in one zmm.

use std::arch::x86_64::*;

use super::dpwssd;

/// Each row cut to `n` blocks, here and not by a closure: closures do not take the kernel's
/// target features, so LLVM would not see the lengths and would keep a bounds check a block.
#[inline(always)]
pub(super) fn cut<B, const R: usize>(x: [&[B]; R], n: usize) -> [&[B]; R] {
    let mut rows = x;
    for r in 0..R {
        rows[r] = &x[r][..n];
    }
    rows
}

/// Declares `unsafe fn $name(v, r, x)`: `v` with lane `r` (0-3) set to `x` by `$insert`, lane 0
/// by `$first`, which zeroes the rest: row r's per-block values in its lane, for `r` known at
/// compile time once the row loop is written out.
macro_rules! lane_setter {
    ($(#[$doc:meta])* $name:ident($v:ty, $x:ty), $first:ident, $insert:ident) => {
        $(#[$doc])*
        #[inline(always)]
        pub(super) unsafe fn $name(v: $v, r: usize, x: $x) -> $v {
            match r {
                0 => $first(x),
                1 => $insert::<1>(v, x),
                2 => $insert::<2>(v, x),
                _ => $insert::<3>(v, x),
            }
        }
    };
}

lane_setter!(
    /// 128-bit lanes of a zmm (row r's bytes).
    ///
    /// # Safety
    /// AVX-512 F.
    with_lane(__m512i, __m128i),
    _mm512_zextsi128_si512,
    _mm512_inserti32x4
);

lane_setter!(
    /// u32 lanes of an xmm (row r's two f16 factors).
    ///
    /// # Safety
    /// SSE4.1.
    with_u32(__m128i, i32),
    _mm_cvtsi32_si128,
    _mm_insert_epi32
);

lane_setter!(
    /// u16 lanes of an xmm (row r's f16 `d`, in the low 16 bits of `x`).
    ///
    /// # Safety
    /// SSE2.
    with_u16(__m128i, i32),
    _mm_cvtsi32_si128,
    _mm_insert_epi16
);

/// `vpermt2w` indices that pair two zmms' i32 lanes (each fits an i16) as the i16 halves of
/// one lane: lane `l` takes lane `l` of the first, then lane `l` of the second.
pub(super) const PAIR_WORDS: [u16; 32] = table2d!([u16; 32], |w| (if w % 2 == 0 { w } else { 32 + w - 1 }) as u16);

/// `sumi += a * sa + b * sb` lane by lane: `a` and `b` i32 lanes that fit an i16, `scales` the
/// pairs (sa, sb) as i16, `pair_words` [`PAIR_WORDS`].
///
/// # Safety
/// AVX-512 F/BW and VNNI.
#[inline(always)]
pub(super) unsafe fn scaled_pair(sumi: &mut __m512i, a: __m512i, b: __m512i, pair_words: __m512i, scales: __m512i) {
    dpwssd(sumi, _mm512_permutex2var_epi16(a, pair_words, b), scales);
}

/// The `R` rows' float sums (ggml's eight-lane `acc` each): rows `2p` and `2p + 1` in lanes
/// 0-7 and 8-15 of `acc[p]`.
pub(super) struct RowSums<const R: usize> {
    acc: [__m512; 2],
}

impl<const R: usize> RowSums<R> {
    /// # Safety
    /// AVX-512 F.
    #[inline(always)]
    pub(super) unsafe fn new() -> Self {
        RowSums { acc: [_mm512_setzero_ps(); 2] }
    }

    /// A block: each row's zmm of i32 sums folded to its eight lanes (the halves added), times
    /// its `d` (lanes 0-7 and 8-15 of `_mm512_permutexvar_ps(d_lanes[p], factors)` for rows
    /// `2p`, `2p + 1`), added in.
    ///
    /// # Safety
    /// AVX-512 F and FMA.
    #[inline(always)]
    pub(super) unsafe fn add(&mut self, sumi: &[__m512i; R], factors: __m512, d_lanes: &[__m512i; 2]) {
        for p in 0..R.div_ceil(2) {
            let lanes = if R == 1 {
                // Lanes 0-7 only (8-15 unread).
                _mm512_add_epi32(sumi[0], _mm512_shuffle_i64x2::<0b11_10_11_10>(sumi[0], sumi[0]))
            } else {
                let (a, b) = (sumi[2 * p], sumi[2 * p + 1]);
                _mm512_add_epi32(
                    _mm512_shuffle_i64x2::<0b01_00_01_00>(a, b),
                    _mm512_shuffle_i64x2::<0b11_10_11_10>(a, b),
                )
            };
            let d = _mm512_permutexvar_ps(d_lanes[p], factors);
            self.acc[p] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(lanes), self.acc[p]);
        }
    }

    /// Row r's eight lanes.
    ///
    /// # Safety
    /// AVX-512 F.
    #[inline(always)]
    pub(super) unsafe fn row(&self, r: usize) -> __m256 {
        if r.is_multiple_of(2) {
            _mm512_castps512_ps256(self.acc[r / 2])
        } else {
            _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(self.acc[r / 2])))
        }
    }
}
