//! iq3_xxs's and iq3_s's dot products in 512-bit registers, a zmm (64 weights, sixteen 4-byte
//! grid rows) at a time:
//!
//! - Rows: the zmm's 16 index bytes widened to u32 lanes (iq3_s: bit 8 or'd in under a mask
//!   register loaded from `qh`), one `vpgatherdd` from the grid.
//! - Signs: iq3_s stores one bit a weight, so a zmm's 64 signs are one mask register loaded
//!   from memory. iq3_xxs stores a 7-bit field an 8-byte row pair (the eighth sign makes the
//!   count even) in the two groups' u32 words, one qword: a `vpmultishiftqb` of it broadcast
//!   puts a field in each byte of its 64-bit lane, and an affine op with those bytes as the
//!   matrix and the bytes `1 << j` (and `0x7f`) as the operand makes byte j 0xff where field
//!   bit j is set, and byte 7 where the field's parity is odd (iq2_xxs's trick); `vpmovb2m`
//!   makes the mask. The activations are negated under it (wrapping at -128 as the table's
//!   kernels do).
//! - Scales: a group's 4-bit `ls` (iq3_xxs: the top nibble of its word; iq3_s: a nibble of
//!   `scales`) by a `vpmultishiftqb` into the even bytes of its 32-byte half, and `2 * ls + 1`
//!   by one zero-masked affine op ([`OddScales::words`]): the i16 scales of `vpdpwssd`.
//!
//! Then `vpmaddubsw` of the levels and the signed activations and `vpdpwssd` by the scales, as
//! ggml's 256-bit kernels do a group at a time: u32 lanes 0-7 and 8-15 of a zmm are the two
//! groups' lanes, summed before the float steps, so the results are the same bits.
//!
//! Measured on an Intel Xeon (Emerald Rapids) against the table's kernels with their rows
//! gathered eight at a time (the form these replace), one process, the two alternating, from
//! L1, ticks a super-block and row: iq3_xxs 40.8-42.3 -> 32.2, iq3_s 40.7-42.1 -> 34.3 (three
//! runs); MUL_MAT 4096 x 14336, n = 1, 2 threads, the two builds alternating, both orders,
//! best us: from the cache iq3_xxs 2432 / 2772 -> 1796 / 2537, iq3_s 3377 / 2540 -> 2631 /
//! 2085; from DRAM (900 MiB of copies cycled) iq3_xxs 2419 -> 1805, iq3_s 2398 -> 2099.

use std::arch::x86_64::*;

use super::super::ops::Simd;
use super::super::x86::Avx512;
use super::gridrows::OddScales;
use super::{field_signs, load64, signed_levels, SIGN_PICK};
use crate::types::quant::grids::{IQ3S_GRID, IQ3XXS_GRID};
use crate::types::quant::{BlockIq3S, BlockIq3Xxs, BlockQ8K};

/// iq3_xxs: `vpmultishiftqb` offsets over the qword of a zmm's two group words: 64-bit lane `l`
/// takes field `l % 4` of group word `l / 4` (bits 0-6: the field).
const XXS_FIELD_SHIFTS: [u8; 64] = table2d!([u8; 64], |b| (32 * (b / 32) + 7 * ((b / 8) % 4)) as u8);

/// iq3_xxs: the `ls` of group `h` (bits 28-31 of its word) into the bytes of 32-byte half `h`.
const XXS_SCALE_SHIFTS: [u8; 64] = table2d!([u8; 64], |b| (32 * (b / 32) + 28) as u8);

/// iq3_s: for zmm `q`, the nibble `ls` of group `2q + h` (nibble `2q + h` of `scales`) into the
/// bytes of 32-byte half `h`.
const S_SCALE_SHIFTS: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |q, b| (8 * q + 4 * (b / 32)) as u8);

/// The grid rows of the 16 index bytes at `idx` (u32 lanes), `high` or'd into the lanes whose
/// bit is set in `ninth` (iq3_s's ninth index bit; 0 for iq3_xxs).
///
/// # Safety
/// AVX-512 F; 16 readable bytes at `idx`; every index (with `high`) below `grid.len()`.
#[inline(always)]
unsafe fn rows(idx: *const u8, ninth: u16, high: __m512i, grid: &[u32]) -> __m512i {
    let lanes = _mm512_cvtepu8_epi32(_mm_loadu_si128(idx as *const __m128i));
    _mm512_i32gather_epi32::<4>(_mm512_mask_or_epi32(lanes, ninth, lanes, high), grid.as_ptr() as *const i32)
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
unsafe fn iq3_xxs(x: &[BlockIq3Xxs], y: &[BlockQ8K]) -> f32 {
    let s = Avx512::new_unchecked();
    let (field_shifts, scale_shifts) = (load64(s, &XXS_FIELD_SHIFTS), load64(s, &XXS_SCALE_SHIFTS));
    let sign_pick = _mm512_set1_epi64(SIGN_PICK as i64);
    let odd = OddScales::new(s, 4);
    let zero = _mm512_setzero_si512();
    0.25 * zmm_blocks!(s, x, y, |bx, by| {
        let mut sumi = zero;
        for q in 0..4 {
            let rows = rows(bx.qs.as_ptr().add(16 * q), 0, zero, &IQ3XXS_GRID);
            let words = _mm512_set1_epi64(i64::from_le_bytes(bx.qs[64 + 8 * q..72 + 8 * q].try_into().unwrap()));
            let signs = field_signs(_mm512_multishift_epi64_epi8(field_shifts, words), sign_pick);
            signed_levels(&mut sumi, rows, by.qs.as_ptr().add(64 * q), signs, odd.words(scale_shifts, words));
        }
        sumi
    })
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
unsafe fn iq3_s(x: &[BlockIq3S], y: &[BlockQ8K]) -> f32 {
    let s = Avx512::new_unchecked();
    let scale_shifts = S_SCALE_SHIFTS.map(|t| load64(s, &t));
    let high = _mm512_set1_epi32(256);
    let odd = OddScales::new(s, 4);
    let zero = _mm512_setzero_si512();
    zmm_blocks!(s, x, y, |bx, by| {
        let scales = _mm512_set1_epi32(i32::from_le_bytes(bx.scales));
        let mut sumi = zero;
        for (q, &scale_shifts) in scale_shifts.iter().enumerate() {
            let ninth = u16::from_le_bytes([bx.qh[2 * q], bx.qh[2 * q + 1]]);
            let rows = rows(bx.qs.as_ptr().add(16 * q), ninth, high, &IQ3S_GRID);
            let signs = u64::from_le_bytes(bx.signs[8 * q..8 * q + 8].try_into().unwrap());
            signed_levels(&mut sumi, rows, by.qs.as_ptr().add(64 * q), signs, odd.words(scale_shifts, scales));
        }
        sumi
    })
}

/// One row of iq3_xxs ([`super::super::table::DotFn`]).
///
/// # Safety
/// [`super::gather_available`]; `x` and `y` whole blocks of iq3_xxs and
/// q8_K, as many of each.
pub(crate) unsafe fn xxs_dot(x: &[u8], y: &[u8]) -> f32 {
    iq3_xxs(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
}

/// One row of iq3_s ([`super::super::table::DotFn`]).
///
/// # Safety
/// As [`xxs_dot`], for iq3_s.
pub(crate) unsafe fn s_dot(x: &[u8], y: &[u8]) -> f32 {
    iq3_s(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
}
