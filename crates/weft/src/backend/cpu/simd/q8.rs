//! ggml's `from_float` for the activation formats (q8_0, q8_1, q8_K), vectorized, with the
//! same bytes as the scalar versions in `types::quant` (which match ggml's x86 build):
//! q8_0 / q8_1 multiply by `127 / amax` and round half to even (ggml's AVX code); q8_K rounds
//! the fused product `iscale * x` with ggml's magic-number `nearest_int`. A block holding a
//! NaN or an infinity goes through the scalar code, whose treatment of them is ggml's.

use super::ops::Simd;
use crate::types::quant::block::{Half, LeF32, LeI16};
use crate::types::quant::{self, BlockQ8K, BlockQ8_0, BlockQ8_1};
use crate::types::Type;

/// The rounding constant of ggml's `nearest_int` (1.5 * 2^23).
const MAGIC: f32 = 12_582_912.0;

#[inline(always)]
fn chunk8(x: &[f32], i: usize) -> &[f32; 8] {
    x[8 * i..8 * i + 8].try_into().expect("in bounds")
}

/// max |x| over the vectors, or `None` if any value is not finite.
#[inline(always)]
fn finite_absmax<S: Simd>(s: S, v: &[S::F]) -> Option<f32> {
    let (mut acc, mut inf_nan) = (s.fzero(), s.fzero());
    for &vi in v {
        acc = s.fmax_abs(acc, vi);
        // x - x is 0 for finite x and NaN otherwise; NaN sticks through the adds.
        inf_nan = s.fadd(inf_nan, s.fsub(vi, vi));
    }
    if s.hsum(inf_nan) != 0.0 {
        return None;
    }
    Some(s.fstore(acc).into_iter().fold(0.0, f32::max))
}

/// One 32-element block the AVX way: levels `round(x * 127 / amax)`; returns d and the sum
/// of the levels (before saturation), or `None` for a block needing the scalar code.
#[inline(always)]
fn q8_block<S: Simd>(s: S, x: &[f32], qs: &mut [i8; 32]) -> Option<(f32, i32)> {
    let mut v = [s.fzero(); 4];
    for (i, vi) in v.iter_mut().enumerate() {
        *vi = s.fload(chunk8(x, i));
    }
    let amax = finite_absmax(s, &v)?;
    let d = amax / 127.0;
    let id = s.fsplat(if amax != 0.0 { 127.0 / amax } else { 0.0 });
    let mut q = [s.zero(); 4];
    for (qi, &vi) in q.iter_mut().zip(&v) {
        *qi = s.round_i32(s.fmul(vi, id));
    }
    s.store(s.pack_i8(q), bytemuck::cast_mut(qs));
    let sum = s.hsum_i32(s.add_i32(s.add_i32(q[0], q[1]), s.add_i32(q[2], q[3])));
    Some((d, sum))
}

#[inline(always)]
pub(crate) fn q8_0<S: Simd>(s: S, x: &[f32], y: &mut [BlockQ8_0]) {
    for (xb, yb) in x.chunks_exact(32).zip(y) {
        match q8_block(s, xb, &mut yb.qs) {
            Some((d, _)) => yb.d = Half::from_f32(d),
            None => scalar(Type::Q8_0, xb, yb),
        }
    }
}

#[inline(always)]
pub(crate) fn q8_1<S: Simd>(s: S, x: &[f32], y: &mut [BlockQ8_1]) {
    for (xb, yb) in x.chunks_exact(32).zip(y) {
        match q8_block(s, xb, &mut yb.qs) {
            Some((d, sum)) => {
                yb.d = Half::from_f32(d);
                yb.s = Half::from_f32(d * sum as f32);
            }
            None => scalar(Type::Q8_1, xb, yb),
        }
    }
}

#[inline(always)]
pub(crate) fn q8_k<S: Simd>(s: S, x: &[f32], y: &mut [BlockQ8K]) {
    for (xb, yb) in x.chunks_exact(256).zip(y) {
        let mut v = [s.fzero(); 32];
        for (i, vi) in v.iter_mut().enumerate() {
            *vi = s.fload(chunk8(xb, i));
        }
        let Some(amax) = finite_absmax(s, &v) else {
            scalar(Type::Q8_K, xb, yb);
            continue;
        };
        if amax == 0.0 {
            *yb = bytemuck::Zeroable::zeroed();
            continue;
        }
        // The first element of largest magnitude, with its sign (ggml's loop keeps the first).
        let max = *xb.iter().find(|v| v.abs() == amax).expect("amax is one of the values");
        let iscale = -127.0 / max;
        let (vscale, magic) = (s.fsplat(iscale), s.fsplat(MAGIC));
        let (mant, bias) = (s.splat_i32(0x007f_ffff), s.splat_i32(-0x0040_0000));
        for c in 0..8 {
            let mut q = [s.zero(); 4];
            for (i, qi) in q.iter_mut().enumerate() {
                let bits = s.fbits(s.fmadd(vscale, v[4 * c + i], magic));
                *qi = s.add_i32(s.and(bits, mant), bias);
            }
            let out: &mut [[u8; 32]; 8] = bytemuck::cast_mut(&mut yb.qs);
            s.store(s.pack_i8(q), &mut out[c]);
            for g in 0..2 {
                let sum = s.hsum_i32(s.add_i32(q[2 * g], q[2 * g + 1]));
                yb.bsums[2 * c + g] = LeI16::new(sum as i16);
            }
        }
        yb.d = LeF32::new(1.0 / iscale);
    }
}

/// The scalar `from_float` for one block (non-finite input).
fn scalar<B: bytemuck::Pod>(ty: Type, x: &[f32], y: &mut B) {
    quant::quantize_row(ty, x, bytemuck::bytes_of_mut(y)).expect("one whole block");
}
