//! The original 32-element formats: Q4_0, Q4_1, Q5_0, Q5_1 (4/5-bit, symmetric or with a
//! minimum) and Q8_0, Q8_1 (8-bit, also the activation formats of their dot products).
//!
//! Layout shared by all of them: element `j` of the first half of a block and element `j` of
//! the second half share byte `qs[j]` (low and high nibble); Q5 keeps the fifth bits in a
//! little-endian u32 `qh`, bit `j` for element `j`.

use bytemuck::{Pod, Zeroable};

use super::block::Half;
use super::scales::{
    c_max_of, fma, imatrix_weights, make_qkx_quants, make_qx_quants, signed_absmax, sum_squares, trunc_i32, QkxSearch,
};
use super::{check_half, Format, LevelSign};
use crate::error::Result;
use crate::types::Type;

const QK: usize = 32;

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ4_0 {
    pub d: Half,
    pub qs: [u8; QK / 2],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ4_1 {
    pub d: Half,
    pub m: Half,
    pub qs: [u8; QK / 2],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ5_0 {
    pub d: Half,
    pub qh: [u8; 4],
    pub qs: [u8; QK / 2],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ5_1 {
    pub d: Half,
    pub m: Half,
    pub qh: [u8; 4],
    pub qs: [u8; QK / 2],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ8_0 {
    pub d: Half,
    pub qs: [i8; QK],
}

/// Q8_1 also stores `s = d * sum(qs)`, which lets the Q4_1 / Q5_1 dot products apply the
/// minimum with one multiply per block.
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ8_1 {
    pub d: Half,
    pub s: Half,
    pub qs: [i8; QK],
}

const _: () = assert!(size_of::<BlockQ4_0>() == Type::Q4_0.type_size());
const _: () = assert!(size_of::<BlockQ4_1>() == Type::Q4_1.type_size());
const _: () = assert!(size_of::<BlockQ5_0>() == Type::Q5_0.type_size());
const _: () = assert!(size_of::<BlockQ5_1>() == Type::Q5_1.type_size());
const _: () = assert!(size_of::<BlockQ8_0>() == Type::Q8_0.type_size());
const _: () = assert!(size_of::<BlockQ8_1>() == Type::Q8_1.type_size());

/// Packs 32 levels (< 16 each, or < 32 for Q5) as ggml does: low nibbles of element `j` and
/// `j + 16` in `qs[j]`, bit 4 of element `j` in bit `j` of the returned `qh`.
fn pack_nibbles(l: &[u8; QK], qs: &mut [u8; QK / 2]) -> u32 {
    let mut qh = 0u32;
    for j in 0..QK / 2 {
        let (l0, l1) = (l[j], l[j + QK / 2]);
        qs[j] = (l0 & 0x0f) | ((l1 & 0x0f) << 4);
        qh |= (((l0 & 0x10) >> 4) as u32) << j;
        qh |= (((l1 & 0x10) >> 4) as u32) << (j + QK / 2);
    }
    qh
}

/// The 32 4-bit (`qh == None`) or 5-bit levels of a block, in element order.
fn unpack_levels(qs: &[u8; QK / 2], qh: Option<[u8; 4]>) -> [i32; QK] {
    let qh = qh.map_or(0, u32::from_le_bytes);
    let mut l = [0i32; QK];
    for j in 0..QK / 2 {
        l[j] = (qs[j] & 0x0f) as i32 | ((((qh >> j) << 4) & 0x10) as i32);
        l[j + QK / 2] = (qs[j] >> 4) as i32 | (((qh >> (j + 12)) & 0x10) as i32);
    }
    l
}

/// [`Format::levels`] of a 32-element block with levels `l` (in 0..32) and elements
/// `d * l + m`.
fn affine_levels(l: [i32; QK], d: f32, m: f32, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
    for (o, v) in s.iter_mut().zip(l) {
        *o = v as i8;
    }
    sa[..2].fill(d);
    ma[..2].fill(m);
}

/// C's `(int8_t)(v)` for a float: truncation, then the low byte.
#[inline]
fn to_i8(v: f32) -> i8 {
    trunc_i32(v) as i8
}

/// The `min`/`max` loop of the asymmetric reference quantizers.
fn min_max(x: &[f32]) -> (f32, f32) {
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for &v in x {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    (min, max)
}

/// The per-row `sigma2` of the legacy importance-matrix quantizers: mean square of the row.
fn row_sigma2(x: &[f32]) -> f32 {
    sum_squares(x) / x.len() as f32
}

/// `quantize_row_q4_0_ref` / `q5_0_ref`: d = max / -2^(bits-1), levels `x/d + 2^(bits-1)`
/// truncated after adding 0.5 (ggml's rounding here, not round-to-nearest-even).
fn quantize_symmetric_ref(x: &[f32], bits: u32) -> ([u8; QK], f32) {
    let half = (1 << (bits - 1)) as f32;
    let top = (1i32 << bits) - 1;
    let (max, _) = signed_absmax(x);
    let d = max / -half;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut l = [0u8; QK];
    for (o, &v) in l.iter_mut().zip(x) {
        *o = top.min(to_i8(fma(v, id, half + 0.5)) as i32) as u8;
    }
    (l, d)
}

/// `quantize_row_q4_1_ref` / `q5_1_ref`: d = (max - min) / (2^bits - 1), levels
/// `(x - min)/d` truncated after adding 0.5.
fn quantize_affine_ref(x: &[f32], bits: u32) -> ([u8; QK], f32, f32) {
    let (min, max) = min_max(x);
    let d = (max - min) / ((1 << bits) - 1) as f32;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut l = [0u8; QK];
    for (o, &v) in l.iter_mut().zip(x) {
        let xi = fma(v - min, id, 0.5);
        *o = if bits == 4 {
            // q4_1: MIN(15, (int8_t)(x0 + 0.5f))
            15.min(to_i8(xi) as i32) as u8
        } else {
            // q5_1: (uint8_t)(x0 + 0.5f), no clamp
            trunc_i32(xi) as u8
        };
    }
    (l, d, min)
}

/// The importance-matrix search of Q4_1 / Q5_1 (`make_qkx3_quants` with these settings).
const AFFINE_SEARCH: QkxSearch = QkxSearch { rmin: -0.9, rdelta: 0.05, nstep: 36, use_mad: false };

pub struct Q4_0;

impl Format for Q4_0 {
    const TYPE: Type = Type::Q4_0;
    type Block = BlockQ4_0;
    type DotBlock = BlockQ8_0;

    fn quantize_ref(x: &[f32], y: &mut [BlockQ4_0]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK).zip(y) {
            let (l, d) = quantize_symmetric_ref(xb, 4);
            yb.d = Half::from_f32(d);
            pack_nibbles(&l, &mut yb.qs);
        }
        Ok(())
    }

    /// `quantize_row_q4_0_impl`: weighted least squares over 18 candidate scales.
    fn quantize_weighted(x: &[f32], y: &mut [BlockQ4_0], qw: &[f32]) {
        let sigma2 = row_sigma2(x);
        let mut weight = [0f32; QK];
        let mut l = [0i8; QK];
        for ((xb, qb), yb) in x.chunks_exact(QK).zip(qw.chunks_exact(QK)).zip(y) {
            imatrix_weights(qb, xb, sigma2, &mut weight);
            let d = make_qx_quants(8, xb, &mut l, Some(&weight));
            yb.d = Half::from_f32(d);
            pack_nibbles(&l.map(|v| v as u8), &mut yb.qs);
        }
    }

    fn dequantize(x: &[BlockQ4_0], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK)) {
            let d = b.d.to_f32();
            for (o, l) in out.iter_mut().zip(unpack_levels(&b.qs, None)) {
                *o = (l - 8) as f32 * d;
            }
        }
    }

    fn vec_dot(x: &[BlockQ4_0], y: &[BlockQ8_0]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sumi = dot_i8_x86(&unpack_levels(&bx.qs, None).map(|l| l - 8), &by.qs);
            sumf += sumi as f32 * bx.d.to_f32() * by.d.to_f32();
        }
        sumf
    }

    fn bad_scale(b: &BlockQ4_0) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Unsigned);
    fn levels(b: &BlockQ4_0, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        let d = b.d.to_f32();
        affine_levels(unpack_levels(&b.qs, None), d, -8.0 * d, s, sa, ma);
    }
}

/// `sumi0 + sumi1` of the legacy dot products: the two half-block sums, then their total
/// (integer arithmetic, so the grouping does not change the value).
fn int_dot(x: &[i32; QK], y: &[i8; QK]) -> i32 {
    x.iter().zip(y).map(|(&a, &b)| a * b as i32).sum()
}

/// The integer dot ggml's x86 code takes of signed 8-bit levels against q8_0 activations
/// (`mul_sum_i8_pairs_float`, `mul_add_epi8`): `maddubs(sign(x, x), sign(y, x))`, adjacent
/// pairs summed with i16 saturation, then the pairs added. It is `Σ x·y` except where y holds
/// -128, which only a NaN quantizes to: `sign` cannot negate -128, so that product keeps
/// -128's sign whatever the sign of x (and |x| = 128 pairs can saturate). Matching it makes
/// NaN activations give ggml's numbers.
pub(super) fn dot_i8_x86(x: &[i32; QK], y: &[i8; QK]) -> i32 {
    let term = |a: i32, b: i8| -> i32 {
        let ax = (a as i8).unsigned_abs() as i32; // sign(x, x) read as u8
        let sy = if a < 0 {
            b.wrapping_neg()
        } else if a == 0 {
            0
        } else {
            b
        };
        ax * sy as i32
    };
    x.chunks_exact(2)
        .zip(y.chunks_exact(2))
        .map(|(p, q)| (term(p[0], q[0]) + term(p[1], q[1])).clamp(i16::MIN as i32, i16::MAX as i32))
        .sum()
}

pub struct Q4_1;

impl Format for Q4_1 {
    const TYPE: Type = Type::Q4_1;
    type Block = BlockQ4_1;
    type DotBlock = BlockQ8_1;

    fn quantize_ref(x: &[f32], y: &mut [BlockQ4_1]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK).zip(y) {
            let (l, d, min) = quantize_affine_ref(xb, 4);
            yb.d = Half::from_f32(d);
            yb.m = Half::from_f32(min);
            pack_nibbles(&l, &mut yb.qs);
        }
        Ok(())
    }

    /// `quantize_row_q4_1_impl`.
    fn quantize_weighted(x: &[f32], y: &mut [BlockQ4_1], qw: &[f32]) {
        let sigma2 = row_sigma2(x);
        let mut weight = [0f32; QK];
        let (mut l, mut aux) = ([0u8; QK], [0u8; QK]);
        for ((xb, qb), yb) in x.chunks_exact(QK).zip(qw.chunks_exact(QK)).zip(y) {
            imatrix_weights(qb, xb, sigma2, &mut weight);
            let (d, min) = make_qkx_quants(15, xb, &weight, &mut l, &mut aux, &AFFINE_SEARCH);
            yb.d = Half::from_f32(d);
            yb.m = Half::from_f32(-min);
            pack_nibbles(&l, &mut yb.qs);
        }
    }

    fn dequantize(x: &[BlockQ4_1], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK)) {
            let (d, m) = (b.d.to_f32(), b.m.to_f32());
            for (o, l) in out.iter_mut().zip(unpack_levels(&b.qs, None)) {
                *o = l as f32 * d + m;
            }
        }
    }

    fn vec_dot(x: &[BlockQ4_1], y: &[BlockQ8_1]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sumi = int_dot(&unpack_levels(&bx.qs, None), &by.qs);
            sumf += (bx.d.to_f32() * by.d.to_f32()) * sumi as f32 + bx.m.to_f32() * by.s.to_f32();
        }
        sumf
    }

    fn bad_scale(b: &BlockQ4_1) -> Option<(&'static str, f32)> {
        check_half("d", b.d).or_else(|| check_half("m", b.m))
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Unsigned);
    fn levels(b: &BlockQ4_1, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        affine_levels(unpack_levels(&b.qs, None), b.d.to_f32(), b.m.to_f32(), s, sa, ma);
    }
}

pub struct Q5_0;

impl Format for Q5_0 {
    const TYPE: Type = Type::Q5_0;
    type Block = BlockQ5_0;
    type DotBlock = BlockQ8_0;

    fn quantize_ref(x: &[f32], y: &mut [BlockQ5_0]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK).zip(y) {
            let (l, d) = quantize_symmetric_ref(xb, 5);
            yb.d = Half::from_f32(d);
            yb.qh = pack_nibbles(&l, &mut yb.qs).to_le_bytes();
        }
        Ok(())
    }

    /// `quantize_row_q5_0_impl`.
    fn quantize_weighted(x: &[f32], y: &mut [BlockQ5_0], qw: &[f32]) {
        let sigma2 = row_sigma2(x);
        let mut weight = [0f32; QK];
        let mut l = [0i8; QK];
        for ((xb, qb), yb) in x.chunks_exact(QK).zip(qw.chunks_exact(QK)).zip(y) {
            imatrix_weights(qb, xb, sigma2, &mut weight);
            let d = make_qx_quants(16, xb, &mut l, Some(&weight));
            yb.d = Half::from_f32(d);
            yb.qh = pack_nibbles(&l.map(|v| v as u8), &mut yb.qs).to_le_bytes();
        }
    }

    fn dequantize(x: &[BlockQ5_0], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK)) {
            let d = b.d.to_f32();
            for (o, l) in out.iter_mut().zip(unpack_levels(&b.qs, Some(b.qh))) {
                *o = (l - 16) as f32 * d;
            }
        }
    }

    fn vec_dot(x: &[BlockQ5_0], y: &[BlockQ8_0]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sumi = dot_i8_x86(&unpack_levels(&bx.qs, Some(bx.qh)).map(|l| l - 16), &by.qs);
            sumf += (bx.d.to_f32() * by.d.to_f32()) * sumi as f32;
        }
        sumf
    }

    fn bad_scale(b: &BlockQ5_0) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Unsigned);
    fn levels(b: &BlockQ5_0, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        let d = b.d.to_f32();
        affine_levels(unpack_levels(&b.qs, Some(b.qh)), d, -16.0 * d, s, sa, ma);
    }
}

pub struct Q5_1;

impl Format for Q5_1 {
    const TYPE: Type = Type::Q5_1;
    type Block = BlockQ5_1;
    type DotBlock = BlockQ8_1;

    fn quantize_ref(x: &[f32], y: &mut [BlockQ5_1]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK).zip(y) {
            let (l, d, min) = quantize_affine_ref(xb, 5);
            yb.d = Half::from_f32(d);
            yb.m = Half::from_f32(min);
            yb.qh = pack_nibbles(&l, &mut yb.qs).to_le_bytes();
        }
        Ok(())
    }

    /// `quantize_row_q5_1_impl`.
    fn quantize_weighted(x: &[f32], y: &mut [BlockQ5_1], qw: &[f32]) {
        let sigma2 = row_sigma2(x);
        let mut weight = [0f32; QK];
        let (mut l, mut aux) = ([0u8; QK], [0u8; QK]);
        for ((xb, qb), yb) in x.chunks_exact(QK).zip(qw.chunks_exact(QK)).zip(y) {
            imatrix_weights(qb, xb, sigma2, &mut weight);
            let (d, min) = make_qkx_quants(31, xb, &weight, &mut l, &mut aux, &AFFINE_SEARCH);
            yb.d = Half::from_f32(d);
            yb.m = Half::from_f32(-min);
            yb.qh = pack_nibbles(&l, &mut yb.qs).to_le_bytes();
        }
    }

    fn dequantize(x: &[BlockQ5_1], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK)) {
            let (d, m) = (b.d.to_f32(), b.m.to_f32());
            for (o, l) in out.iter_mut().zip(unpack_levels(&b.qs, Some(b.qh))) {
                *o = l as f32 * d + m;
            }
        }
    }

    fn vec_dot(x: &[BlockQ5_1], y: &[BlockQ8_1]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sumi = int_dot(&unpack_levels(&bx.qs, Some(bx.qh)), &by.qs);
            sumf += (bx.d.to_f32() * by.d.to_f32()) * sumi as f32 + bx.m.to_f32() * by.s.to_f32();
        }
        sumf
    }

    fn bad_scale(b: &BlockQ5_1) -> Option<(&'static str, f32)> {
        check_half("d", b.d).or_else(|| check_half("m", b.m))
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Unsigned);
    fn levels(b: &BlockQ5_1, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        affine_levels(unpack_levels(&b.qs, Some(b.qh)), b.d.to_f32(), b.m.to_f32(), s, sa, ma);
    }
}

/// `quantize_row_q8_0_ref` / `q8_1_ref` for one block: d = amax / 127 and `roundf(x / d)`
/// (ties away from zero).
fn quantize_q8_block(x: &[f32], qs: &mut [i8; QK]) -> f32 {
    let amax = c_max_of(x.iter().map(|v| v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    for (o, &v) in qs.iter_mut().zip(x) {
        *o = trunc_i32((v * id).round()) as i8;
    }
    d
}

/// max(|x|) of a 32-float block as ggml's AVX code reduces it: eight lanes over the four
/// 8-float vectors, then the upper half against the lower, then pairs. `maxps` returns its
/// second operand when either is NaN, so a NaN survives or drops (taking values that shared
/// its lane with it) by where it sits: the scale ggml computes from a row with NaNs.
fn amax_avx(x: &[f32]) -> f32 {
    let maxps = |a: f32, b: f32| if a > b { a } else { b };
    let lanes: [f32; 8] = std::array::from_fn(|j| (1..4).fold(x[j].abs(), |m, v| maxps(m, x[v * 8 + j].abs())));
    let m4: [f32; 4] = std::array::from_fn(|k| maxps(lanes[4 + k], lanes[k]));
    maxps(maxps(m4[0], m4[2]), maxps(m4[1], m4[3]))
}

/// `quantize_row_q8_0` / `q8_1` for one block as ggml's AVX code runs it (the CPU `from_float`
/// on x86-64): the multiplier is `127 / amax` rather than `1 / d`, levels are rounded half to
/// even (`_mm256_round_ps`), and the int32 -> int8 packing saturates.
fn quantize_q8_block_x86(x: &[f32], qs: &mut [i8; QK]) -> (f32, i32) {
    let amax = amax_avx(x);
    let d = amax / 127.0;
    let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
    let mut sum = 0i32;
    for (o, &v) in qs.iter_mut().zip(x) {
        // cvtps_epi32 gives i32::MIN for NaN / out of range, as trunc_i32 does.
        let q = trunc_i32((v * id).round_ties_even());
        sum = sum.wrapping_add(q);
        *o = q.clamp(-128, 127) as i8;
    }
    (d, sum)
}

fn dequantize_q8(qs: &[i8; QK], d: f32, out: &mut [f32]) {
    for (o, &q) in out.iter_mut().zip(qs) {
        *o = q as f32 * d;
    }
}

fn dot_q8(a: &[i8; QK], b: &[i8; QK]) -> i32 {
    a.iter().zip(b).map(|(&p, &q)| p as i32 * q as i32).sum()
}

pub struct Q8_0;

impl Format for Q8_0 {
    const TYPE: Type = Type::Q8_0;
    type Block = BlockQ8_0;
    type DotBlock = BlockQ8_0;

    fn quantize_ref(x: &[f32], y: &mut [BlockQ8_0]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK).zip(y) {
            yb.d = Half::from_f32(quantize_q8_block(xb, &mut yb.qs));
        }
        Ok(())
    }

    fn quantize_row(x: &[f32], y: &mut [BlockQ8_0]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK).zip(y) {
            yb.d = Half::from_f32(quantize_q8_block_x86(xb, &mut yb.qs).0);
        }
        Ok(())
    }

    fn dequantize(x: &[BlockQ8_0], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK)) {
            dequantize_q8(&b.qs, b.d.to_f32(), out);
        }
    }

    fn vec_dot(x: &[BlockQ8_0], y: &[BlockQ8_0]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            sumf += dot_i8_x86(&bx.qs.map(|q| q as i32), &by.qs) as f32 * (bx.d.to_f32() * by.d.to_f32());
        }
        sumf
    }

    fn bad_scale(b: &BlockQ8_0) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockQ8_0, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        s[..QK].copy_from_slice(&b.qs);
        sa[..2].fill(b.d.to_f32());
        ma[..2].fill(0.0);
    }
}

/// Q8_1 is an activation format: ggml has no dequantizer and no Q8_1 x Q8_1 dot product.
/// weft defines them the obvious way (`qs * d`; the integer dot scaled by both `d`, like
/// Q8_0) so every function accepts every type.
pub struct Q8_1;

impl Format for Q8_1 {
    const TYPE: Type = Type::Q8_1;
    type Block = BlockQ8_1;
    type DotBlock = BlockQ8_1;

    fn quantize_ref(x: &[f32], y: &mut [BlockQ8_1]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK).zip(y) {
            let d = quantize_q8_block(xb, &mut yb.qs);
            let sum: i32 = yb.qs.iter().map(|&q| q as i32).sum();
            yb.d = Half::from_f32(d);
            yb.s = Half::from_f32(sum as f32 * d);
        }
        Ok(())
    }

    fn quantize_row(x: &[f32], y: &mut [BlockQ8_1]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK).zip(y) {
            let (d, sum) = quantize_q8_block_x86(xb, &mut yb.qs);
            yb.d = Half::from_f32(d);
            yb.s = Half::from_f32(d * sum as f32);
        }
        Ok(())
    }

    fn dequantize(x: &[BlockQ8_1], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK)) {
            dequantize_q8(&b.qs, b.d.to_f32(), out);
        }
    }

    fn vec_dot(x: &[BlockQ8_1], y: &[BlockQ8_1]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            sumf += dot_q8(&bx.qs, &by.qs) as f32 * (bx.d.to_f32() * by.d.to_f32());
        }
        sumf
    }

    fn bad_scale(b: &BlockQ8_1) -> Option<(&'static str, f32)> {
        check_half("d", b.d).or_else(|| check_half("s", b.s))
    }
}
