//! Dot products of the 1-bit I-quants (iq1_s, iq1_m) with a q8_K row, as ggml's AVX2
//! kernels compute them: grid rows of -1 / 0 / +1 bytes (`maddubs` with the sign trick),
//! odd scales, and the +-1/8 shift of each group taken as a separate sum (iq1_s: from the
//! activations' block sums; iq1_m: a +-1 byte vector), added with its own float scale at the
//! end. Floats in ggml's order (bit-identical).

use super::iq2::q8;
use super::ops::{arr, Simd};
use super::prefetch;
use crate::types::quant::grid_iq1s::IQ1S_GRID;
use crate::types::quant::{BlockIq1M, BlockIq1S, BlockQ8K};

/// ggml's IQ1S_DELTA and IQ1M_DELTA.
pub(super) const DELTA: f32 = 0.125;

/// iq1_s: a group's four 8-byte grid rows (IQ1S_GRID, 2048 rows), row `k`'s index a byte of
/// `qs` with bits `3k .. 3k + 3` of `qh` above it.
#[inline(always)]
fn s_rows<S: Simd>(s: S, qs: &[u8; 4], qh: u16) -> S::V {
    let qh = qh as usize;
    s.set_u64(std::array::from_fn(|k| {
        let high = if k == 3 { (qh >> 1) & 0x700 } else { (qh << (8 - 3 * k)) & 0x700 };
        IQ1S_GRID[qs[k] as usize | high]
    }))
}

/// iq1_m: as [`s_rows`], row `k`'s high bits the low three of nibble `k` of `qh`
/// (little-endian).
#[inline(always)]
fn m_rows<S: Simd>(s: S, qs: &[u8; 4], qh: &[u8; 2]) -> S::V {
    let nib = |k: usize| (qh[k / 2] >> (4 * (k % 2))) as usize;
    s.set_u64(std::array::from_fn(|k| IQ1S_GRID[qs[k] as usize | ((nib(k) << 8) & 0x700)]))
}

#[inline(always)]
pub(crate) fn iq1_s<S: Simd>(s: S, x: &[BlockIq1S], y: &[BlockQ8K]) -> f32 {
    let mut accum = s.fzero();
    let mut accum1 = 0f32;
    for (bx, by) in prefetch::ahead(s, x).zip(y) {
        let mut sumi = s.zero();
        let mut sumi1 = 0i32;
        for ib in 0..8 {
            let qh = bx.qh[ib].get() as usize;
            let q1b = s_rows(s, arr(&bx.qs, 4 * ib), qh as u16);
            let dot = s.maddubs_signed(q1b, q8(s, by, ib));
            let ls = 2 * ((qh >> 12) & 7) as i16 + 1;
            sumi = s.add_i32(sumi, s.madd_i16(dot, s.splat_i16(ls)));
            let sign = if qh & 0x8000 != 0 { -1 } else { 1 };
            sumi1 += (by.bsums[2 * ib].get() as i32 + by.bsums[2 * ib + 1].get() as i32) * sign * ls as i32;
        }
        let d = by.d.get() * s.f16(bx.d.bits());
        accum = s.fmadd(s.fsplat(d), s.cvt_i32(sumi), accum);
        accum1 += d * sumi1 as f32;
    }
    s.hsum(accum) + DELTA * accum1
}

/// The f16 super-block scale of iq1_m, spread over the top nibbles of its four scale words.
#[inline(always)]
pub(super) fn iq1m_scale(sc: &[u16; 4]) -> u16 {
    (sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)
}

/// The +-1 byte vectors of iq1_m's shifts, by the four groups' sign bits (bit k set: group
/// k of 8 is shifted down). One aligned load replaces building the vector from four tests.
#[repr(align(32))]
struct DeltaTable([[u8; 32]; 16]);

static IQ1M_DELTA: DeltaTable = {
    let mut t = [[1u8; 32]; 16];
    let mut idx = 0;
    while idx < 16 {
        let mut b = 0;
        while b < 32 {
            if idx >> (b / 8) & 1 != 0 {
                t[idx][b] = 0xff;
            }
            b += 1;
        }
        idx += 1;
    }
    DeltaTable(t)
};

#[inline(always)]
pub(crate) fn iq1_m<S: Simd>(s: S, x: &[BlockIq1M], y: &[BlockQ8K]) -> f32 {
    let mask = s.splat_i16(7);
    let mone = s.splat_i16(1);
    let ones = s.splat_i8(1);
    let (mut accum1, mut accum2) = (s.fzero(), s.fzero());
    for (bx, by) in prefetch::ahead(s, x).zip(y) {
        let sc: [u16; 4] = std::array::from_fn(|i| u16::from_le_bytes([bx.scales[2 * i], bx.scales[2 * i + 1]]));
        let (mut sumi1, mut sumi2) = (s.zero(), s.zero());
        for ib in 0..8 {
            let qh: &[u8; 2] = arr(&bx.qh, 2 * ib);
            // Groups of 8: grid index high bits and shift sign from qh's nibbles.
            let q1b = m_rows(s, arr(&bx.qs, 4 * ib), qh);
            let (h0, h1) = (qh[0] as usize, qh[1] as usize);
            let signs = (h0 >> 3 & 1) | (h0 >> 6 & 2) | (h1 >> 1 & 4) | (h1 >> 4 & 8);
            let q8b = q8(s, by, ib);
            let dot = s.maddubs_signed(q1b, q8b);
            // maddubs(|delta|, q8 * sign(delta)): the same pair sums as the sign trick's.
            let dot_delta = s.maddubs(ones, s.sign_i8(q8b, s.load(&IQ1M_DELTA.0[signs])));
            // 3-bit scales: sub-blocks 2 * ib and 2 * ib + 1 (16 elements each).
            let word = sc[ib / 2] as i16;
            let shift = 6 * (ib % 2) as u32;
            let halves = s.splat_i16_halves(word >> shift, word >> (shift + 3));
            let scale = s.add_i16(s.sll_i16(s.and(halves, mask), 1), mone);
            sumi1 = s.add_i32(sumi1, s.madd_i16(dot, scale));
            sumi2 = s.add_i32(sumi2, s.madd_i16(dot_delta, scale));
        }
        let d = s.fsplat(by.d.get() * s.f16(iq1m_scale(&sc)));
        accum1 = s.fmadd(d, s.cvt_i32(sumi1), accum1);
        accum2 = s.fmadd(d, s.cvt_i32(sumi2), accum2);
    }
    s.hsum(accum1) + DELTA * s.hsum(accum2)
}
