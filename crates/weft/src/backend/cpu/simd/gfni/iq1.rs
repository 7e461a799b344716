//! iq1_s's and iq1_m's dot products in 512-bit registers, a zmm (64 weights, eight grid rows)
//! at a time, with every per-row and per-group field taken out of the block by byte ops rather
//! than one by one in general registers (ggml's form and the table's kernels build each
//! group's four row indices, and iq1_m's four shift signs and two scales, with twenty to thirty
//! scalar and vector ops).
//!
//! - Rows: the 32 indices of a block by [`GridIndex`] (11 bits: `qs[r]` and three bits of
//!   `qh`), one `vpgatherdq` a zmm from [`ROWS`], IQ1S_GRID re-encoded for these kernels: a -1
//!   byte is `0x8f`, +1 is `0x0f`, 0 is 0. `vpmovb2m` takes the signs (the activations are
//!   negated under that mask, wrapping at -128 as ggml's `vpsignb` does), and an AND with the
//!   per-byte scale gives `|g| * s`, the unsigned operand of `vpdpbusd`.
//! - Scales: a `vpmultishiftqb` of the broadcast scale fields puts each 3-bit `ls` in the bytes
//!   it weights (iq1_m: a 16-byte lane a sub-block; iq1_s: a 32-byte half a group), one
//!   `vgf2p8affineqb` makes `2 * ls + 1`.
//! - Shifts (the +-1/8 added to each row's levels), summed apart as ggml does: iq1_s's from the
//!   activations' block sums, one sign a group (ggml's scalar sum); iq1_m's one sign a row, by
//!   a `vpmultishiftqb` of the broadcast `qh` that puts a row's sign bit at bit 7 of its eight
//!   bytes, `vpmovb2m`, a negation of the activations under that mask and a second `vpdpbusd`
//!   by the scale (ggml's `maddubs(1, sign(y, delta))` weighted by the scale).
//!
//! The i32 lanes are ggml's: u32 lanes 0-7 and 8-15 of a zmm are the two groups' lanes of its
//! 256-bit kernels, summed before the float steps, so the results are the same bits.
//!
//! Measured on an Intel Xeon (Emerald Rapids) against the table's kernels with their rows
//! gathered four at a time (the form these replace), from L1, ticks a super-block and row:
//! iq1_m 66.8 -> 29.9 (two runs, 29.9 both); iq1_s 33.2 with the shift sum in general
//! registers (ggml's scalar loop), 28.4 with it in vector lanes. MUL_MAT 4096 x 14336, n = 1,
//! 2 threads, the two builds alternating in one process, both orders, best us: from the cache
//! iq1_m 3870 / 7179 -> 1938 / 2423, iq1_s 2838 / 3233 -> 2204 / 2122; from DRAM (900 MiB of
//! copies cycled) iq1_m 3923 -> 1971, iq1_s 2555 -> 1651. The loads and masked subtractions of
//! the activations in asm ([`super::neg_where_loaded`]): 3-4% faster (34.4 / 35.5 -> 33.2 /
//! 34.2 ticks). A 4096-row grid with the shift sign in bit 6 (one `vptestmb` for the mask):
//! 3.6% faster with k = 2048, 5% slower with k = 14336 (32 KiB of grid against L1's 48).

use std::arch::x86_64::*;

use super::super::iq1::{iq1m_scale, DELTA};
use super::super::ops::Simd;
use super::super::prefetch;
use super::super::x86::Avx512;
use super::gridrows::{fold, gather, load_block, low_and_qh_perm, odd_matrix, quarter, GridIndex, OddScales};
use super::{load64, neg_where_loaded};
use crate::types::quant::grid_iq1s::IQ1S_GRID;
use crate::types::quant::{BlockIq1M, BlockIq1S, BlockQ8K};

/// IQ1S_GRID with each byte re-encoded: -1 -> `0x8f`, +1 -> `0x0f`, 0 -> 0 (sign at bit 7,
/// the magnitude a mask over any scale up to 15). A grid byte of any other value stops the
/// build.
static ROWS: [u64; 2048] = {
    let mut t = [0u64; 2048];
    let mut i = 0;
    while i < 2048 {
        let mut j = 0;
        while j < 8 {
            let b: u64 = match (IQ1S_GRID[i] >> (8 * j)) as u8 {
                0x00 => 0,
                0x01 => 0x0f,
                0xff => 0x8f,
                _ => panic!("an iq1 grid byte that is not -1, 0 or 1"),
            };
            t[i] |= b << (8 * j);
            j += 1;
        }
        i += 1;
    }
    t
};

/// iq1_s: the block vector is the block (`d`, `qs` at bytes 2-33, `qh` u16 g at 34 + 2g); u32
/// lane r takes `qs[r]` and both bytes of `qh[r / 4]`, whose bits `3 * (r % 4)..` are the
/// row's high bits.
const S_INDEX_PERM: [[u8; 64]; 2] = table2d!([[u8; 64]; 2], |h, b| {
    let row = 16 * h + b / 4;
    let byte = match b % 4 {
        0 => 2 + row,
        1 => 34 + 2 * (row / 4),
        _ => 35 + 2 * (row / 4),
    };
    byte as u8
});

/// iq1_s: the high bits of rows `2w` (byte 1) and `2w + 1` (byte 5): `3 * (r % 4)` above
/// their u16.
const S_HIGH_SHIFTS: [u8; 64] = table2d!([u8; 64], |b| {
    let (w, j) = (b / 8, b % 8);
    let offset = match j {
        1 => 8 + 6 * (w % 2),
        5 => 40 + 3 * (2 * (w % 2) + 1),
        _ => 8 * j,
    };
    offset as u8
});

/// iq1_s: zmm `q`'s two groups' `ls` (bits 12-14 of `qh[2q]`, `qh[2q + 1]`) over their 32-byte
/// halves, from the `qh` qword `q / 2`.
const S_SCALE_SHIFTS: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |q, b| (16 * (2 * (q % 2) + b / 32) + 12) as u8);

/// iq1_s: for the shifts, i16 lane l takes the high byte of `qh[l / 2]` in both its bytes
/// (a group's scale and sign, twice: the group's two block sums).
const S_SHIFT_PERM: [u8; 32] = table2d!([u8; 32], |b| (2 * (b / 4) + 1) as u8);

/// iq1_s: `2 * ls + 1` from `ls` in bits 4-6 (a `qh` high byte's).
const S_SHIFT_ODD: u64 = odd_matrix(3, 4);

/// iq1_m: the block vector is the block (`qs` at bytes 0-31, `qh` at 32-47); u32 lane r takes
/// `qs[r]` and `qh[r / 2]`, whose nibble `r % 2` holds the row's high bits.
const M_INDEX_PERM: [[u8; 64]; 2] = low_and_qh_perm(32, 2);

/// iq1_m: bytes stay in place but for an odd row's `qh` byte (byte 5), read from bit 44 (its
/// high nibble).
const M_HIGH_SHIFTS: [u8; 64] = table2d!([u8; 64], |b| if b % 8 == 5 { 44 } else { (8 * (b % 8)) as u8 });

/// iq1_m: the scale words (a u64) for zmm `q`: 16-byte lane L reads sub-block `4q + L`'s 3-bit
/// `ls` at bit `16q + 3L`.
const M_SCALE_SHIFTS: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |q, b| (16 * q + 3 * (b / 16)) as u8);

/// iq1_m: the `qh` qword of zmm `q` (`qh[8 * (q / 2)..]`): row `b / 8`'s shift sign (bit 3 of
/// its nibble, bit `32 * (q % 2) + 4 * (b / 8) + 3`) to bit 7 of each of its bytes (read from 4
/// bits lower, wrapping within the qword).
const M_SHIFT_SIGNS: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |q, b| ((32 * (q % 2) + 4 * (b / 8) + 60) % 64) as u8);

/// iq1_s's shift sum of a block: `sum_g sign_g * (2 * ls_g + 1) * (bsums[2g] + bsums[2g + 1])`,
/// the i16 weights made from `qh` in vector lanes (one permute, an affine op, a masked
/// negation), one `vpmaddwd` with the block sums, then the eight i32 sums added.
#[inline(always)]
unsafe fn shift_sum(s: Avx512, bx: &BlockIq1S, by: &BlockQ8K, perm: __m256i, odd: __m256i) -> i32 {
    let qh = _mm256_castsi128_si256(_mm_loadu_si128(bx.qh.as_ptr() as *const __m128i));
    let hi = _mm256_permutexvar_epi8(perm, qh);
    let scales = _mm256_maskz_gf2p8affine_epi64_epi8::<1>(0x5555_5555, hi, odd);
    let w = _mm256_mask_sub_epi16(scales, _mm256_movepi16_mask(hi), _mm256_setzero_si256(), scales);
    s.hsum_i32(_mm256_madd_epi16(_mm256_loadu_si256(by.bsums.as_ptr() as *const __m256i), w))
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
unsafe fn iq1_s(x: &[BlockIq1S], y: &[BlockQ8K]) -> f32 {
    let s = Avx512::new_unchecked();
    let x = &x[..y.len()];
    let grid_index = GridIndex::new(s, &S_INDEX_PERM, &S_HIGH_SHIFTS, 11);
    let scale_shifts = S_SCALE_SHIFTS.map(|t| load64(s, &t));
    let odd = OddScales::new(s, 3);
    let shift_perm = _mm256_loadu_si256(S_SHIFT_PERM.as_ptr() as *const __m256i);
    let shift_odd = _mm256_set1_epi64x(S_SHIFT_ODD as i64);
    let zero = _mm512_setzero_si512();
    let (mut accum, mut accum1) = (s.fzero(), 0f32);
    for (i, (bx, by)) in x.iter().zip(y).enumerate() {
        prefetch::row_block::<Avx512, _, 1>(s, x, i);
        let index = grid_index.of(load_block(bx));
        let qh: &[u8; 16] = bytemuck::cast_ref(&bx.qh);
        let qh64 = [0, 8].map(|o| u64::from_le_bytes(qh[o..o + 8].try_into().unwrap()));
        let mut sumi = zero;
        for q in 0..4 {
            let rows = gather(quarter(&index, q), &ROWS);
            let ys = neg_where_loaded(by.qs.as_ptr().add(64 * q), _mm512_movepi8_mask(rows), zero);
            let scale = odd.bytes(scale_shifts[q], _mm512_set1_epi64(qh64[q / 2] as i64));
            sumi = _mm512_dpbusd_epi32(sumi, _mm512_and_si512(rows, scale), ys);
        }
        // The shifts: a group's activations' sum (its two block sums) by its scale and sign.
        let sumi1 = shift_sum(s, bx, by, shift_perm, shift_odd);
        let d = by.d.get() * s.f16(bx.d.bits());
        accum = s.fmadd(s.fsplat(d), s.cvt_i32(fold(sumi)), accum);
        accum1 += d * sumi1 as f32;
    }
    s.hsum(accum) + DELTA * accum1
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
unsafe fn iq1_m(x: &[BlockIq1M], y: &[BlockQ8K]) -> f32 {
    let s = Avx512::new_unchecked();
    let x = &x[..y.len()];
    let grid_index = GridIndex::new(s, &M_INDEX_PERM, &M_HIGH_SHIFTS, 11);
    let scale_shifts = M_SCALE_SHIFTS.map(|t| load64(s, &t));
    let shift_signs = M_SHIFT_SIGNS.map(|t| load64(s, &t));
    let odd = OddScales::new(s, 3);
    let zero = _mm512_setzero_si512();
    let (mut accum1, mut accum2) = (s.fzero(), s.fzero());
    for (i, (bx, by)) in x.iter().zip(y).enumerate() {
        prefetch::row_block::<Avx512, _, 1>(s, x, i);
        let index = grid_index.of(load_block(bx));
        let scales = u64::from_le_bytes(bx.scales);
        let qh = [0, 8].map(|o| u64::from_le_bytes(bx.qh[o..o + 8].try_into().unwrap()));
        let (mut sumi1, mut sumi2) = (zero, zero);
        for q in 0..4 {
            let rows = gather(quarter(&index, q), &ROWS);
            let yq = by.qs.as_ptr().add(64 * q);
            let ys = neg_where_loaded(yq, _mm512_movepi8_mask(rows), zero);
            let scale = odd.bytes(scale_shifts[q], _mm512_set1_epi64(scales as i64));
            sumi1 = _mm512_dpbusd_epi32(sumi1, _mm512_and_si512(rows, scale), ys);
            let signs = _mm512_multishift_epi64_epi8(shift_signs[q], _mm512_set1_epi64(qh[q / 2] as i64));
            let yd = neg_where_loaded(yq, _mm512_movepi8_mask(signs), zero);
            sumi2 = _mm512_dpbusd_epi32(sumi2, scale, yd);
        }
        let sc: [u16; 4] = std::array::from_fn(|k| (scales >> (16 * k)) as u16);
        let d = s.fsplat(by.d.get() * s.f16(iq1m_scale(&sc)));
        accum1 = s.fmadd(d, s.cvt_i32(fold(sumi1)), accum1);
        accum2 = s.fmadd(d, s.cvt_i32(fold(sumi2)), accum2);
    }
    s.hsum(accum1) + DELTA * s.hsum(accum2)
}

/// One row of iq1_s ([`super::super::table::DotFn`]).
///
/// # Safety
/// [`super::gather_available`]; `x` and `y` whole blocks of iq1_s and
/// q8_K, as many of each.
pub(crate) unsafe fn s_dot(x: &[u8], y: &[u8]) -> f32 {
    iq1_s(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
}

/// One row of iq1_m ([`super::super::table::DotFn`]).
///
/// # Safety
/// As [`s_dot`], for iq1_m.
pub(crate) unsafe fn m_dot(x: &[u8], y: &[u8]) -> f32 {
    iq1_m(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
}
