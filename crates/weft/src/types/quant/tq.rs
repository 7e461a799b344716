//! The ternary formats of BitNet b1.58 / TriLMs: every element is -1, 0 or +1 times one f16
//! scale per 256 elements.
//!
//! TQ1_0 packs 5 trits per byte as a base-3 number scaled to fill the byte (`ceil(n * 256 /
//! 243)`), so that a trit is recovered with one multiply and a shift; TQ2_0 stores 2 bits per
//! element in the same plane layout as Q2_K.

use bytemuck::{Pod, Zeroable};

use super::block::Half;
use super::k::{pack_2bit, unpack_2bit, BlockQ8K};
use super::scales::c_max_of;
use super::{check_half, Format};
use crate::error::Result;
use crate::types::{Type, QK_K};

/// Bytes of 5-trit groups: 240 of the 256 elements.
const TQ1_QS: usize = (QK_K - 4 * QK_K / 64) / 5;

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockTq1_0 {
    pub qs: [u8; TQ1_QS],
    pub qh: [u8; QK_K / 64],
    pub d: Half,
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockTq2_0 {
    pub qs: [u8; QK_K / 4],
    pub d: Half,
}

const _: () = assert!(size_of::<BlockTq1_0>() == Type::TQ1_0.type_size());
const _: () = assert!(size_of::<BlockTq2_0>() == Type::TQ2_0.type_size());

/// The absmax scale of a ternary block and its inverse (0 for an all-zero block).
fn ternary_scale(x: &[f32]) -> (f32, f32) {
    let amax = c_max_of(x.iter().map(|v| v.abs()));
    (amax, if amax != 0.0 { 1.0 / amax } else { 0.0 })
}

/// `lroundf(v) + 1`: the trit 0, 1 or 2 for -1, 0, +1. Computed as C does (`long` result
/// truncated to `int`), wrapping instead of trapping on non-finite input.
fn trit(v: f32) -> u8 {
    let r = v.round();
    let l = if r.is_nan() || !(-9.2e18..9.2e18).contains(&r) { i64::MIN } else { r as i64 };
    l.wrapping_add(1) as u8
}

/// Where each trit of a TQ1_0 block lives, in element order: (byte, power of 3). Bytes 0..32
/// hold elements `m + 32 n`, bytes 32..48 elements `160 + m + 16 n`, and the 4 `qh` bytes
/// (indices 48..52 here) elements `240 + j + 4 n` with a spare lowest trit; `n` = 0 is the
/// most significant trit.
fn tq1_position(e: usize) -> (usize, usize) {
    if e < 160 {
        (e % 32, e / 32)
    } else if e < 240 {
        (32 + (e - 160) % 16, (e - 160) / 16)
    } else {
        (TQ1_QS + (e - 240) % 4, (e - 240) / 4)
    }
}

/// The ternary values (-1, 0, 1) of a TQ1_0 block in element order.
fn tq1_values(b: &BlockTq1_0) -> [i32; QK_K] {
    const POW3: [u8; 6] = [1, 3, 9, 27, 81, 243];
    std::array::from_fn(|e| {
        let (byte, n) = tq1_position(e);
        let q = if byte < TQ1_QS { b.qs[byte] } else { b.qh[byte - TQ1_QS] };
        // Multiplying by 3^n (mod 256) moves trit n to the top; * 3 >> 8 reads it.
        let q = q.wrapping_mul(POW3[n]);
        ((q as u16 * 3) >> 8) as i32 - 1
    })
}

pub struct Tq1_0;

impl Format for Tq1_0 {
    const TYPE: Type = Type::TQ1_0;
    type Block = BlockTq1_0;
    type DotBlock = BlockQ8K;

    fn quantize_ref(x: &[f32], y: &mut [BlockTq1_0]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK_K).zip(y) {
            let (d, id) = ternary_scale(xb);
            yb.d = Half::from_f32(d);
            // Accumulate each byte's base-3 number in element order (most significant
            // first); the qh bytes get one more * 3 so their 4 trits sit at the top.
            let mut acc = [0u8; TQ1_QS + QK_K / 64];
            for (e, &v) in xb.iter().enumerate() {
                let (byte, _) = tq1_position(e);
                acc[byte] = acc[byte].wrapping_mul(3).wrapping_add(trit(v * id));
            }
            for (i, q) in acc.iter().enumerate() {
                let q = if i >= TQ1_QS { q.wrapping_mul(3) } else { *q };
                // Ceiling division by 243 after scaling to 256: the trit-extraction trick
                // in `tq1_values` needs the rounding up.
                let q = (q as u16 * 256).div_ceil(243) as u8;
                if i < TQ1_QS {
                    yb.qs[i] = q;
                } else {
                    yb.qh[i - TQ1_QS] = q;
                }
            }
        }
        Ok(())
    }

    fn dequantize(x: &[BlockTq1_0], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
            let d = b.d.to_f32();
            for (o, v) in out.iter_mut().zip(tq1_values(b)) {
                *o = v as f32 * d;
            }
        }
    }

    fn vec_dot(x: &[BlockTq1_0], y: &[BlockQ8K]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sum: i32 = tq1_values(bx).iter().zip(&by.qs).map(|(&v, &q)| v * q as i32).sum();
            sumf += sum as f32 * (bx.d.to_f32() * by.d.get());
        }
        sumf
    }

    fn bad_scale(b: &BlockTq1_0) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }
}

pub struct Tq2_0;

impl Format for Tq2_0 {
    const TYPE: Type = Type::TQ2_0;
    type Block = BlockTq2_0;
    type DotBlock = BlockQ8K;

    fn quantize_ref(x: &[f32], y: &mut [BlockTq2_0]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK_K).zip(y) {
            let (d, id) = ternary_scale(xb);
            yb.d = Half::from_f32(d);
            let l: [u8; QK_K] = std::array::from_fn(|e| trit(xb[e] * id));
            pack_2bit(&l, &mut yb.qs);
        }
        Ok(())
    }

    fn dequantize(x: &[BlockTq2_0], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
            let d = b.d.to_f32();
            for (e, o) in out.iter_mut().enumerate() {
                *o = (unpack_2bit(&b.qs, e) as i32 - 1) as f32 * d;
            }
        }
    }

    fn vec_dot(x: &[BlockTq2_0], y: &[BlockQ8K]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sumi: i32 =
                by.qs.iter().enumerate().map(|(e, &q)| q as i32 * (unpack_2bit(&bx.qs, e) as i32 - 1)).sum();
            let d = by.d.get() * bx.d.to_f32();
            sumf += sumi as f32 * d;
        }
        sumf
    }

    fn bad_scale(b: &BlockTq2_0) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }
}
