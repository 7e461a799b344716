//! q6_K's dot product in 512-bit registers (AVX-512 F/BW/VL, VNNI, GFNI and VBMI), for one,
//! two and four rows, in `k45`'s form. A zmm holds 64 weights, four groups of 16:
//! - zmm `2j` (weights `128j..128j + 64`): the 64 bytes of `ql` at `64j` as they are (their
//!   low nibbles), or'd with bits 0-1 (low half) and 2-3 (high half) of the 32 `qh` bytes at
//!   `32j`, moved to bits 4-5 by one affine op (`qh` loaded into both halves): an affine op
//!   and a `vpternlogd`; zmm `2j + 1` (`128j + 64..128j + 128`): the same `ql` bytes' high
//!   nibbles (an affine op) or'd with `qh` bits 4-5 and 6-7 (another): three ops;
//! - `vpdpbusd` from `-32 * y` (four activations' sums, once a block for every row) sums four
//!   `(level - 32) * y` into each i32 lane (at most 32 * 128 * 4: an i16), two zmms' lanes
//!   are paired as i16 (`vpermt2w`) and one `vpdpwssd` multiplies both by their groups'
//!   signed scales (two rows' 16 scales sign-extended to i16 by one op, spread by `vpermw`);
//! - `d` of every row by one `vcvtph2ps`, two rows' halves folded and their float steps in
//!   one zmm.
//!
//! The i32 lanes are ggml's: zmm `m`'s lane `l` is its lane `l % 8` of the 32 weights
//! `64m + 32 * (l / 8)`.., the halves summed before the float step, every float step ggml's,
//! so the results are the same bits as the 256-bit kernels'.
//!
//! Measured on an Intel Xeon (Emerald Rapids), against the table's kernel (ggml's form: about
//! 96 ops a row and super-block on three ports, here about 25 on two), one process,
//! alternating: from L1, ticks a super-block and row, four rows 25.3 / 20.1 -> 17.7 / 13.7,
//! two rows 1.3x, one row 1.15x; MUL_MAT 4096 x 14336, n = 1, 2 threads, best us, both
//! orders: from the cache 1872 / 1884 -> 1466 / 1501, from DRAM (900 MiB of copies cycled)
//! 2078 / 1773 -> 2013 / 1687.

use std::arch::x86_64::*;

use super::super::ops::Simd;
use super::super::prefetch;
use super::super::x86::Avx512;
use super::rowpairs::{cut, scaled_pair, with_lane, with_u16, RowSums, PAIR_WORDS};
use super::{load64, NIBBLE_BITS};
use crate::types::quant::{BlockQ6K, BlockQ8K};

/// The bit matrix (output bit `i` is the parity of the input byte and byte `7 - i`) that
/// moves input bits `a`, `a + 1` to bits 4, 5 and clears the rest.
const fn to_bits_4_5(a: usize) -> u64 {
    (1u64 << a) << 24 | (1u64 << (a + 1)) << 16
}

/// The `qh` matrices of zmm `2j + h`: bits `4h`, `4h + 1` (low half, qwords 0-3) and `4h + 2`,
/// `4h + 3` (high half) to bits 4-5.
const HIGH_BITS: [[u64; 8]; 2] = table2d!([[u64; 8]; 2], |h, w| to_bits_4_5(4 * h + 2 * (w / 4)));

/// `vpermw` indices of the scale pairs of zmms `2p`, `2p + 1` for the row whose 16 scales are
/// words `16 * (r % 2)..` of its pair's register, at `[2 * (r % 2) + p]`: lane `l` takes
/// scales `8p + l / 4` and `8p + 4 + l / 4`.
const SCALE_PAIRS: [[u16; 32]; 4] =
    table2d!([[u16; 32]; 4], |rp, w| (16 * (rp / 2) + 8 * (rp % 2) + 4 * (w % 2) + w / 8) as u16);

/// `vpermps` indices for rows `2p` and `2p + 1`: their `d` in lanes 0-7 and 8-15.
const D_LANES: [[u32; 16]; 2] = table2d!([[u32; 16]; 2], |p, j| (2 * p + j / 8) as u32);

/// `R` rows of q6_K dotted with `y`, each result the 256-bit kernels' bits.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
unsafe fn rows<const R: usize>(x: [&[BlockQ6K]; R], y: &[BlockQ8K]) -> [f32; R] {
    const { assert!(R == 1 || R == 2 || R == 4) };
    let s = Avx512::new_unchecked();
    let x = cut(x, y.len());
    let nibble_bits = load64(s, &NIBBLE_BITS);
    let high_nibbles = _mm512_permutexvar_epi64(_mm512_set1_epi64(4), nibble_bits);
    let high_bits = [load64(s, &HIGH_BITS[0]), load64(s, &HIGH_BITS[1])];
    let pair_words = load64(s, &PAIR_WORDS);
    let d_lanes = [load64(s, &D_LANES[0]), load64(s, &D_LANES[1])];
    let (low_nibble, thirty_two) = (_mm512_set1_epi8(0x0f), _mm512_set1_epi8(32));
    let zero = _mm512_setzero_si512();
    let mut sums = RowSums::<R>::new();
    for (i, by) in y.iter().enumerate() {
        // Two rows' 16 scales as i16 a register; every row's `d` in lane r.
        let mut scales = [zero; 2];
        let mut halves = _mm_setzero_si128();
        for (r, row) in x.iter().enumerate() {
            prefetch::row_block::<Avx512, _, R>(s, row, i);
            let sc = _mm_loadu_si128(row[i].scales.as_ptr() as *const _);
            scales[r / 2] = with_lane(scales[r / 2], r % 2, sc);
            halves = with_u16(halves, r, row[i].d.bits() as i32);
        }
        for sc in scales.iter_mut().take(R.div_ceil(2)) {
            *sc = _mm512_cvtepi8_epi16(_mm512_castsi512_si256(*sc));
        }
        // y.d * d for each row: ggml's product, exactly.
        let factors = _mm512_castps128_ps512(_mm_mul_ps(_mm_set1_ps(by.d.get()), _mm_cvtph_ps(halves)));
        // The activations, and -32 times their sums of four: every row's dots start there.
        let mut ys = [zero; 4];
        let mut neg32y = [zero; 4];
        for m in 0..4 {
            ys[m] = _mm512_loadu_si512(by.qs.as_ptr().add(64 * m) as *const _);
            neg32y[m] = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, thirty_two, ys[m]));
        }
        let mut sumi = [zero; R];
        for j in 0..2 {
            for r in 0..R {
                let bx = &x[r][i];
                let ql = _mm512_loadu_si512(bx.ql.as_ptr().add(64 * j) as *const _);
                let qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(bx.qh.as_ptr().add(32 * j) as *const _));
                // (ql & 0x0f) | high bits
                let low = _mm512_ternarylogic_epi64::<0xf8>(
                    _mm512_gf2p8affine_epi64_epi8::<0>(qh, high_bits[0]),
                    ql,
                    low_nibble,
                );
                let high = _mm512_or_si512(
                    _mm512_gf2p8affine_epi64_epi8::<0>(ql, high_nibbles),
                    _mm512_gf2p8affine_epi64_epi8::<0>(qh, high_bits[1]),
                );
                let dot_low = _mm512_dpbusd_epi32(neg32y[2 * j], low, ys[2 * j]);
                let dot_high = _mm512_dpbusd_epi32(neg32y[2 * j + 1], high, ys[2 * j + 1]);
                let sc = _mm512_permutexvar_epi16(load64(s, &SCALE_PAIRS[2 * (r % 2) + j]), scales[r / 2]);
                scaled_pair(&mut sumi[r], dot_low, dot_high, pair_words, sc);
            }
        }
        sums.add(&sumi, factors, &d_lanes);
    }
    let mut out = [0f32; R];
    for (r, o) in out.iter_mut().enumerate() {
        *o = s.hsum(sums.row(r));
    }
    out
}

row_entries!(BlockQ6K);
