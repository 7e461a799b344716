//! iq2_xs's and iq2_s's dot products in 512-bit registers, a zmm (64 weights, eight grid rows)
//! at a time. Their grids (512 and 1024 rows) are too big to be held in registers as
//! iq2_xxs's codes are, so the rows are gathered, and the rest is taken out of the block by
//! byte ops:
//!
//! - Indices: iq2_xs: the low 9 bits of its u16 fields, widened; iq2_s: `qs[r]` and two bits of
//!   `qh` by [`GridIndex`]. One `vpgatherdq` a zmm fetches its eight rows.
//! - Signs: iq2_s stores a sign byte a row, so a zmm's 64 signs are one mask register loaded
//!   from memory. iq2_xs stores a 7-bit field a row (the eighth sign makes the count even):
//!   one `vpermb` puts a row's field byte in each of its eight bytes, and an affine op with
//!   those bytes as the matrix and the bytes `2 << j` (and `0xfe`) as the operand makes byte j
//!   0xff where field bit j is set, and byte 7 where the field's parity is odd (iq2_xxs's
//!   trick); `vpmovb2m` makes the mask. The activations are negated under it (wrapping at -128
//!   as the table's kernels do).
//! - Scales: [`OddScales`] of the sub-blocks' nibbles, in i16 lanes.
//!
//! Then `vpmaddubsw` of the levels and the signed activations and `vpdpwssd` by the scales, as
//! ggml's 256-bit kernels do a group at a time: u32 lanes 0-7 and 8-15 of a zmm are the two
//! groups' lanes, summed before the float steps, so the results are the same bits.
//!
//! Measured on an Intel Xeon (Emerald Rapids), from L1, ticks a super-block and row: iq2_s
//! 35.5 (the table's kernel) -> 25.7, and 23.2-24.3 with `vpdpwssd` and the zero-masked affine
//! op in asm (LLVM splits each into two uops); iq2_xs 36.7 (the table's kernel with its rows
//! gathered four at a time) -> 25.5. MUL_MAT 4096 x 14336, n = 1, 2 threads, the two builds
//! alternating in one process, both orders, best us: from the cache iq2_s 2208 / 2885 -> 1263
//! / 1623, iq2_xs 2196 / 2102 -> 1504 / 1487; from DRAM (900 MiB of copies cycled) iq2_s 2240
//! -> 1316, iq2_xs 2126 -> 1487.

use std::arch::x86_64::*;

use super::super::ops::Simd;
use super::super::x86::Avx512;
use super::gridrows::{gather, low_and_qh_perm, quarter, GridIndex, OddScales};
use super::{field_signs, load64, signed_levels, SIGN_PICK};
use crate::types::quant::grids::{IQ2S_GRID, IQ2XS_GRID};
use crate::types::quant::{BlockIq2S, BlockIq2Xs, BlockQ8K};

/// iq2_xs: for zmm `q`, 64-bit lane r takes the high byte of `qs[8q + r]` (its sign field in
/// bits 1-7) in each of its bytes.
const XS_SIGN_PERM: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |q, b| (16 * q + 2 * (b / 8) + 1) as u8);

/// iq2_s: the index vector holds `qs[0..32]` at bytes 0-31 and `qh` at 32-39; u32 lane r takes
/// `qs[r]` and `qh[r / 4]`.
const S_INDEX_PERM: [[u8; 64]; 2] = low_and_qh_perm(32, 4);

/// iq2_s: the high bits of rows `2w` (byte 1) and `2w + 1` (byte 5), `2 * (r % 4)` above their
/// `qh` byte.
const S_HIGH_SHIFTS: [u8; 64] = table2d!([u8; 64], |b| {
    let (w, j) = (b / 8, b % 8);
    let offset = match j {
        1 => 8 + 4 * (w % 2),
        5 => 40 + 4 * (w % 2) + 2,
        _ => 8 * j,
    };
    offset as u8
});

/// [`OddScales`] offsets over the scale bytes (a u64) for zmm `q`: 16-byte lane L reads
/// sub-block `4q + L`'s 4-bit `ls` (nibble `4q + L`) into bits 0-3 of its bytes.
const SCALE_SHIFTS: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |q, b| (4 * (4 * q + b / 16)) as u8);

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
unsafe fn iq2_xs(x: &[BlockIq2Xs], y: &[BlockQ8K]) -> f32 {
    let s = Avx512::new_unchecked();
    let sign_perm = XS_SIGN_PERM.map(|t| load64(s, &t));
    // The fields sit in bits 1-7 of their bytes.
    let sign_pick = _mm512_set1_epi64((SIGN_PICK << 1) as i64);
    let (odd, scale_shifts) = (OddScales::new(s, 4), SCALE_SHIFTS.map(|t| load64(s, &t)));
    let index_mask = _mm256_set1_epi32(511);
    let zero = _mm512_setzero_si512();
    0.125
        * zmm_blocks!(s, x, y, |bx, by| {
            let qs = _mm512_loadu_si512(bx.qs.as_ptr() as *const _);
            let scales = _mm512_set1_epi64(i64::from_le_bytes(bx.scales));
            let mut sumi = zero;
            for (q, &sign_perm) in sign_perm.iter().enumerate() {
                let fields = _mm256_cvtepu16_epi32(_mm_loadu_si128(bx.qs.as_ptr().add(8 * q) as *const __m128i));
                let rows = gather(_mm256_and_si256(fields, index_mask), &IQ2XS_GRID);
                let signs = field_signs(_mm512_permutexvar_epi8(sign_perm, qs), sign_pick);
                signed_levels(&mut sumi, rows, by.qs.as_ptr().add(64 * q), signs, odd.words(scale_shifts[q], scales));
            }
            sumi
        })
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
unsafe fn iq2_s(x: &[BlockIq2S], y: &[BlockQ8K]) -> f32 {
    let s = Avx512::new_unchecked();
    let grid_index = GridIndex::new(s, &S_INDEX_PERM, &S_HIGH_SHIFTS, 10);
    let (odd, scale_shifts) = (OddScales::new(s, 4), SCALE_SHIFTS.map(|t| load64(s, &t)));
    let zero = _mm512_setzero_si512();
    0.125
        * zmm_blocks!(s, x, y, |bx, by| {
            // qs's index bytes in qwords 0-3, qh in qword 4.
            let low = _mm512_castsi256_si512(_mm256_loadu_si256(bx.qs.as_ptr() as *const __m256i));
            let index = grid_index.of(_mm512_mask_set1_epi64(low, 0x10, i64::from_le_bytes(bx.qh)));
            let scales = _mm512_set1_epi64(i64::from_le_bytes(bx.scales));
            let mut sumi = zero;
            for (q, &shifts) in scale_shifts.iter().enumerate() {
                let rows = gather(quarter(&index, q), &IQ2S_GRID);
                let signs = u64::from_le_bytes(bx.qs[32 + 8 * q..40 + 8 * q].try_into().unwrap());
                signed_levels(&mut sumi, rows, by.qs.as_ptr().add(64 * q), signs, odd.words(shifts, scales));
            }
            sumi
        })
}

/// One row of iq2_xs ([`super::super::table::DotFn`]).
///
/// # Safety
/// [`super::gather_available`]; `x` and `y` whole blocks of iq2_xs and
/// q8_K, as many of each.
pub(crate) unsafe fn xs_dot(x: &[u8], y: &[u8]) -> f32 {
    iq2_xs(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
}

/// One row of iq2_s ([`super::super::table::DotFn`]).
///
/// # Safety
/// As [`xs_dot`], for iq2_s.
pub(crate) unsafe fn s_dot(x: &[u8], y: &[u8]) -> f32 {
    iq2_s(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
}
