//! Dot products of the 32-element formats (q4_0, q4_1, q5_0, q5_1, q8_0) with a
//! q8_0 / q8_1 activation row, written as ggml's AVX2 kernels compute them: one f32 lane
//! vector accumulated block by block (`acc = d_x * d_y * sum + acc`, fused), summed by
//! `hsum` at the end, so the results are ggml's x86 results bit for bit.

use super::ops::{bytes_of, Simd};
use crate::types::quant::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1};

/// ggml's `mul_sum_i8_pairs_float`: signed bytes times signed bytes, 8 f32 partial sums.
#[inline(always)]
pub(super) fn mul_sum_i8<S: Simd>(s: S, x: S::V, y: S::V) -> S::F {
    s.cvt_i32(s.dot4_signed(x, y))
}

/// ggml's `mul_sum_us8_pairs_float`: unsigned bytes times signed bytes.
#[inline(always)]
fn mul_sum_u8<S: Simd>(s: S, x: S::V, y: S::V) -> S::F {
    s.cvt_i32(s.dot4(x, y))
}

#[inline(always)]
pub(crate) fn q4_0<S: Simd>(s: S, x: &[BlockQ4_0], y: &[BlockQ8_0]) -> f32 {
    let mut acc = s.fzero();
    for (bx, by) in x.iter().zip(y) {
        let d = s.fsplat(s.f16(bx.d.bits()) * s.f16(by.d.bits()));
        let qx = s.sub_i8(s.nibbles(&bx.qs), s.splat_i8(8));
        let q = mul_sum_i8(s, qx, s.load(bytes_of(&by.qs)));
        acc = s.fmadd(d, q, acc);
    }
    s.hsum(acc)
}

#[inline(always)]
pub(crate) fn q4_1<S: Simd>(s: S, x: &[BlockQ4_1], y: &[BlockQ8_1]) -> f32 {
    let mut acc = s.fzero();
    let mut summs = 0f32;
    for (bx, by) in x.iter().zip(y) {
        let (d0, d1) = (s.f16(bx.d.bits()), s.f16(by.d.bits()));
        summs += s.f16(bx.m.bits()) * s.f16(by.s.bits());
        let xy = mul_sum_u8(s, s.nibbles(&bx.qs), s.load(bytes_of(&by.qs)));
        acc = s.fmadd(s.fsplat(d0 * d1), xy, acc);
    }
    s.hsum(acc) + summs
}

#[inline(always)]
pub(crate) fn q5_0<S: Simd>(s: S, x: &[BlockQ5_0], y: &[BlockQ8_0]) -> f32 {
    let mut acc = s.fzero();
    for (bx, by) in x.iter().zip(y) {
        let d = s.fsplat(s.f16(bx.d.bits()) * s.f16(by.d.bits()));
        // Where the fifth bit is clear, 0xf0 makes the byte q - 16.
        let hi = s.andnot(s.bits_to_bytes(u32::from_le_bytes(bx.qh)), s.splat_i8(0xf0u8 as i8));
        let qx = s.or(s.nibbles(&bx.qs), hi);
        let q = mul_sum_i8(s, qx, s.load(bytes_of(&by.qs)));
        acc = s.fmadd(d, q, acc);
    }
    s.hsum(acc)
}

#[inline(always)]
pub(crate) fn q5_1<S: Simd>(s: S, x: &[BlockQ5_1], y: &[BlockQ8_1]) -> f32 {
    let mut acc = s.fzero();
    let mut summs = 0f32;
    for (bx, by) in x.iter().zip(y) {
        let dx = s.f16(bx.d.bits());
        summs += s.f16(bx.m.bits()) * s.f16(by.s.bits());
        let hi = s.and(s.bits_to_bytes(u32::from_le_bytes(bx.qh)), s.splat_i8(0x10));
        let qx = s.or(s.nibbles(&bx.qs), hi);
        let dy = s.f16(by.d.bits());
        let q = mul_sum_u8(s, qx, s.load(bytes_of(&by.qs)));
        acc = s.fmadd(q, s.fsplat(dx * dy), acc);
    }
    s.hsum(acc) + summs
}

#[inline(always)]
pub(crate) fn q8_0<S: Simd>(s: S, x: &[BlockQ8_0], y: &[BlockQ8_0]) -> f32 {
    let mut acc = s.fzero();
    for (bx, by) in x.iter().zip(y) {
        let d = s.fsplat(s.f16(bx.d.bits()) * s.f16(by.d.bits()));
        let q = mul_sum_i8(s, s.load(bytes_of(&bx.qs)), s.load(bytes_of(&by.qs)));
        acc = s.fmadd(d, q, acc);
    }
    s.hsum(acc)
}
