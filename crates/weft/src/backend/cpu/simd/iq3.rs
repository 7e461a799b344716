//! Dot products of the 3-bit I-quants (iq3_xxs, iq3_s) with a q8_K row, as ggml's AVX2
//! kernels compute them (4-byte grid rows, signs applied to the activations, odd scales per
//! 32 elements; bit-identical floats).

use super::iq2::{odd_scaled, odd_scaled_loaded, q8, sum_blocks};
use super::ops::{arr, Simd};
use crate::types::quant::grids::{IQ3S_GRID, IQ3XXS_GRID};
use crate::types::quant::{BlockIq3S, BlockIq3Xxs, BlockQ8K};

#[inline(always)]
fn iq3_xxs_sub<S: Simd>(s: S, x: &BlockIq3Xxs, y: &BlockQ8K, ib32: usize) -> S::V {
    let q3: &[u8; 8] = arr(&x.qs, 8 * ib32);
    let q2 = s.set_u32(std::array::from_fn(|k| IQ3XXS_GRID[q3[k] as usize]));
    // Signs and scale of this sub-block: a u32 after the 64 grid indices.
    let aux = u32::from_le_bytes(*arr(&x.qs, 64 + 4 * ib32));
    let dot = s.maddubs(q2, s.apply_even_signs(q8(s, y, ib32), aux));
    odd_scaled(s, dot, aux >> 28)
}

#[inline(always)]
pub(crate) fn iq3_xxs<S: Simd>(s: S, x: &[BlockIq3Xxs], y: &[BlockQ8K]) -> f32 {
    0.25 * sum_blocks!(s, x, y, |bx, by| {}; |ib32| iq3_xxs_sub(s, bx, by, ib32))
}

#[inline(always)]
fn iq3_s_sub<S: Simd>(s: S, x: &BlockIq3S, y: &BlockQ8K, ib32: usize) -> S::V {
    // Index l's ninth bit is bit l of the sub-block's qh byte.
    let (qs, qh): (&[u8; 8], u32) = (arr(&x.qs, 8 * ib32), x.qh[ib32] as u32);
    let q2 = s.set_u32(std::array::from_fn(|l| IQ3S_GRID[qs[l] as usize | ((qh << (8 - l)) & 256) as usize]));
    let sign_bits = u32::from_le_bytes(*arr(&x.signs, 4 * ib32));
    let dot = s.maddubs(q2, s.neg_where(q8(s, y, ib32), sign_bits));
    let sc = x.scales[ib32 / 2];
    odd_scaled_loaded(s, dot, if ib32.is_multiple_of(2) { sc & 0xf } else { sc >> 4 } as u32)
}

#[inline(always)]
pub(crate) fn iq3_s<S: Simd>(s: S, x: &[BlockIq3S], y: &[BlockQ8K]) -> f32 {
    sum_blocks!(s, x, y, |bx, by| {}; |ib32| iq3_s_sub(s, bx, by, ib32))
}
