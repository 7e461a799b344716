//! K-quants with 16-element sub-blocks (Q2_K, Q3_K, Q6_K) and the Q8_K activation format,
//! plus what all K-quants share: the 2-bit plane packing and ggml's lane-wise dot product.
//! Q4_K and Q5_K (32-element sub-blocks with 6-bit scales and mins) live in `k45.rs`.
//!
//! A super-block holds QK_K = 256 elements. Where levels are split into 2-bit planes (Q2_K,
//! Q3_K, the high bits of Q6_K), element `e` sits in chunk `e / 128`, byte `e % 32` of that
//! chunk's 32 bytes, bits `2 * ((e % 128) / 32)`.

use bytemuck::{Pod, Zeroable};

use super::block::{Half, LeF32, LeI16};
use super::scales::{
    imatrix_weights, make_q3_quants, make_qkx_quants, make_qp_quants, make_qx_quants, nearest_int, nearest_int_prod,
    signed_absmax, sum_squares, QkxSearch, QpLoops, GROUP_MAX_EPS,
};
use super::{check_half, Format, LevelSign};
use crate::error::Result;
use crate::types::{Type, QK_K};

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ2K {
    /// Per 16 elements: scale in the low nibble, min in the high nibble.
    pub scales: [u8; QK_K / 16],
    pub qs: [u8; QK_K / 4],
    pub d: Half,
    pub dmin: Half,
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ3K {
    /// Bit 2 of each level: element `e` in `hmask[e % 32]`, bit `e / 32`.
    pub hmask: [u8; QK_K / 8],
    pub qs: [u8; QK_K / 4],
    /// 16 6-bit scales: low nibbles in bytes 0..8, the top 2 bits of scale `j` in byte `8 + j % 4`.
    pub scales: [u8; 12],
    pub d: Half,
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ6K {
    pub ql: [u8; QK_K / 2],
    pub qh: [u8; QK_K / 4],
    pub scales: [i8; QK_K / 16],
    pub d: Half,
}

/// The activation format of the K- and I-quant dot products: f32 scale, 8-bit levels and
/// the level sums of each 16 elements (which the formats with minimums need).
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ8K {
    pub d: LeF32,
    pub qs: [i8; QK_K],
    pub bsums: [LeI16; QK_K / 16],
}

impl BlockQ8K {
    /// `bsums` from `qs`: each run of 16 levels summed (the K-quants' minimum terms read them).
    pub fn set_bsums(&mut self) {
        for (s, qs) in self.bsums.iter_mut().zip(self.qs.chunks_exact(16)) {
            *s = LeI16::new(qs.iter().map(|&q| q as i32).sum::<i32>() as i16);
        }
    }
}

const _: () = assert!(size_of::<BlockQ2K>() == Type::Q2_K.type_size());
const _: () = assert!(size_of::<BlockQ3K>() == Type::Q3_K.type_size());
const _: () = assert!(size_of::<BlockQ6K>() == Type::Q6_K.type_size());
const _: () = assert!(size_of::<BlockQ8K>() == Type::Q8_K.type_size());

/// Packs 256 levels of `bits` (<= 2 are kept) into 2-bit planes: byte `(e/128)*32 + e%32`,
/// bits `2 * ((e % 128) / 32)`. Masking to 2 bits lets Q6_K store its high bits this way.
pub(super) fn pack_2bit(l: &[u8; QK_K], out: &mut [u8]) {
    for (c, chunk) in out.chunks_exact_mut(32).enumerate() {
        for (j, o) in chunk.iter_mut().enumerate() {
            let e = c * 128 + j;
            *o = (l[e] & 3) | (l[e + 32] & 3) << 2 | (l[e + 64] & 3) << 4 | (l[e + 96] & 3) << 6;
        }
    }
}

/// Every element's 2-bit plane value, in element order: `f(e, value)`. Written chunk by
/// chunk (byte j of chunk c holds elements 128 c + 32 p + j, p = 0..4) so the loops run
/// straight and vectorize, unlike one [`unpack_2bit`] per element.
#[inline]
pub(super) fn for_2bit_planes(q: &[u8], mut f: impl FnMut(usize, u8)) {
    for (c, chunk) in q.chunks_exact(32).enumerate().take(QK_K / 128) {
        for p in 0..4 {
            for (j, &byte) in chunk.iter().enumerate() {
                f(128 * c + 32 * p + j, (byte >> (2 * p)) & 3);
            }
        }
    }
}

/// The 2-bit plane value of element `e` (inverse of [`pack_2bit`]).
#[inline]
pub(super) fn unpack_2bit(q: &[u8], e: usize) -> u8 {
    (q[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3
}

/// ggml's scalar K-quant dot products accumulate products into 8 integer lanes (lane
/// `e % 8`), scale each lane by the block's `d` into 8 float partial sums that persist across
/// super-blocks, and add the 8 partial sums at the very end. The float rounding depends on
/// that order, so it is kept.
pub(super) struct LaneSums([f32; 8]);

impl LaneSums {
    pub fn new() -> Self {
        LaneSums([0.0; 8])
    }

    /// Adds one super-block: levels `a`, activations `q8`, a scale per `group` elements.
    pub fn add(&mut self, d: f32, a: &[i8; QK_K], q8: &[i8; QK_K], group: usize, scale: impl Fn(usize) -> i32) {
        let mut aux32 = [0i32; 8];
        for (e, (&ai, &qi)) in a.iter().zip(q8).enumerate() {
            // aux16 = q8 * a fits i16 in ggml; i32 gives the same value.
            aux32[e % 8] += scale(e / group) * (qi as i32 * ai as i32);
        }
        for (s, &v) in self.0.iter_mut().zip(&aux32) {
            *s += d * v as f32;
        }
    }

    /// Adds the 8 partial sums, in lane order, onto `sumf` (the Q4_K / Q5_K dot products
    /// subtract their minimum terms from it first).
    pub fn total(&self, mut sumf: f32) -> f32 {
        for &s in &self.0 {
            sumf += s;
        }
        sumf
    }
}

/// Reads the 16 signed 6-bit Q3_K scales: low nibbles in bytes 0..8 (scales 0..8 low, then
/// 8..16 high), the top two bits of scale `j` in byte `8 + j % 4`, bits `2 * (j / 4)`.
pub(super) fn unpack_q3_scales(s: &[u8; 12]) -> [i8; 16] {
    let mut out = [0i8; 16];
    for (j, o) in out.iter_mut().enumerate() {
        let low = if j < 8 { s[j] & 0xf } else { s[j - 8] >> 4 };
        let high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        *o = (low | high << 4) as i8 - 32;
    }
    out
}

/// Inverse of [`unpack_q3_scales`] for scales already offset to 0..64.
fn pack_q3_scales(ls: &[u8; 16]) -> [u8; 12] {
    let mut s = [0u8; 12];
    for (j, &l) in ls.iter().enumerate() {
        if j < 8 {
            s[j] = l & 0xf;
        } else {
            s[j - 8] |= (l & 0xf) << 4;
        }
        s[j % 4 + 8] |= (l >> 4) << (2 * (j / 4));
    }
    s
}

pub struct Q2K;

/// The sub-block fit of the Q2_K reference quantizer (`make_qkx2_quants` settings).
const Q2K_REF_SEARCH: QkxSearch = QkxSearch { rmin: -0.5, rdelta: 0.1, nstep: 15, use_mad: true };
/// ... and of its importance-matrix quantizer (`make_qkx3_quants` settings).
const Q2K_IMATRIX_SEARCH: QkxSearch = QkxSearch { rmin: -0.9, rdelta: 0.05, nstep: 36, use_mad: false };

impl Q2K {
    /// Requantizes every element against the stored (rounded) scales and mins, then packs:
    /// the final step of both Q2_K quantizers.
    fn finish(x: &[f32], y: &mut BlockQ2K, l: &mut [u8; QK_K]) {
        let (dm, mm) = (y.d.to_f32(), y.dmin.to_f32());
        for (j, xs) in x.chunks_exact(16).enumerate() {
            let d = dm * (y.scales[j] & 0xf) as f32;
            if d == 0.0 {
                continue;
            }
            let m = mm * (y.scales[j] >> 4) as f32;
            for (ii, &v) in xs.iter().enumerate() {
                l[16 * j + ii] = nearest_int((v + m) / d).clamp(0, 3) as u8;
            }
        }
        pack_2bit(l, &mut y.qs);
    }
}

impl Format for Q2K {
    const TYPE: Type = Type::Q2_K;
    type Block = BlockQ2K;
    type DotBlock = BlockQ8K;

    /// `quantize_row_q2_K_ref`: min/scale fit per 16 elements, then 4-bit scales and mins
    /// relative to the largest of each.
    fn quantize_ref(x: &[f32], y: &mut [BlockQ2K]) -> Result<()> {
        const Q4SCALE: f32 = 15.0;
        let mut l = [0u8; QK_K];
        let mut aux = [0u8; 16];
        let mut weights = [0f32; 16];
        for (xb, yb) in x.chunks_exact(QK_K).zip(y) {
            let (mut scales, mut mins) = ([0f32; 16], [0f32; 16]);
            let (mut max_scale, mut max_min) = (0f32, 0f32);
            for (j, xs) in xb.chunks_exact(16).enumerate() {
                for (w, &v) in weights.iter_mut().zip(xs) {
                    *w = v.abs();
                }
                let lj = &mut l[16 * j..16 * j + 16];
                (scales[j], mins[j]) = make_qkx_quants(3, xs, &weights, lj, &mut aux, &Q2K_REF_SEARCH);
                if scales[j] > max_scale {
                    max_scale = scales[j];
                }
                if mins[j] > max_min {
                    max_min = mins[j];
                }
            }
            if max_scale > 0.0 {
                let iscale = Q4SCALE / max_scale;
                for (s, &v) in yb.scales.iter_mut().zip(&scales) {
                    *s = nearest_int_prod(iscale, v) as u8;
                }
                yb.d = Half::from_f32(max_scale / Q4SCALE);
            } else {
                yb.scales = [0; 16];
                yb.d = Half::ZERO;
            }
            if max_min > 0.0 {
                let iscale = Q4SCALE / max_min;
                for (s, &v) in yb.scales.iter_mut().zip(&mins) {
                    *s |= (nearest_int_prod(iscale, v) << 4) as u8;
                }
                yb.dmin = Half::from_f32(max_min / Q4SCALE);
            } else {
                yb.dmin = Half::ZERO;
            }
            Self::finish(xb, yb, &mut l);
        }
        Ok(())
    }

    /// `quantize_row_q2_K_impl`: weighted fits, and scales/mins quantized by
    /// `make_qp_quants` against the per-sub-block weight totals.
    fn quantize_weighted(x: &[f32], y: &mut [BlockQ2K], qw: &[f32]) {
        let mut l = [0u8; QK_K];
        let mut aux = [0u8; 16];
        let mut weight = [0f32; 16];
        for ((xb, qb), yb) in x.chunks_exact(QK_K).zip(qw.chunks_exact(QK_K)).zip(y) {
            let sigma2 = sum_squares(xb) / QK_K as f32;
            let (mut scales, mut mins, mut sw) = ([0f32; 16], [0f32; 16], [0f32; 16]);
            for (j, (xs, qs)) in xb.chunks_exact(16).zip(qb.chunks_exact(16)).enumerate() {
                imatrix_weights(qs, xs, sigma2, &mut weight);
                for &w in &weight {
                    sw[j] += w;
                }
                let lj = &mut l[16 * j..16 * j + 16];
                (scales[j], mins[j]) = make_qkx_quants(3, xs, &weight, lj, &mut aux, &Q2K_IMATRIX_SEARCH);
            }
            let (mut ls, mut lm) = ([0u8; 16], [0u8; 16]);
            let dm = make_qp_quants(15, &scales, &mut ls, &sw, QpLoops::Scalar);
            let mm = make_qp_quants(15, &mins, &mut lm, &sw, QpLoops::Scalar);
            yb.d = Half::from_f32(dm);
            yb.dmin = Half::from_f32(mm);
            for (s, (&a, &b)) in yb.scales.iter_mut().zip(ls.iter().zip(&lm)) {
                *s = a | b << 4;
            }
            Self::finish(xb, yb, &mut l);
        }
    }

    fn dequantize(x: &[BlockQ2K], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
            let (d, min) = (b.d.to_f32(), b.dmin.to_f32());
            for (e, o) in out.iter_mut().enumerate() {
                let sc = b.scales[e / 16];
                let (dl, ml) = (d * (sc & 0xf) as f32, min * (sc >> 4) as f32);
                *o = dl * unpack_2bit(&b.qs, e) as f32 - ml;
            }
        }
    }

    fn vec_dot(x: &[BlockQ2K], y: &[BlockQ8K]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let summs: i32 = by.bsums.iter().zip(&bx.scales).map(|(s, &sc)| s.get() as i32 * (sc >> 4) as i32).sum();
            let dall = by.d.get() * bx.d.to_f32();
            let dmin = by.d.get() * bx.dmin.to_f32();
            let mut isum = 0i32;
            for (g, q8) in by.qs.chunks_exact(16).enumerate() {
                let isuml: i32 =
                    q8.iter().enumerate().map(|(l, &q)| q as i32 * unpack_2bit(&bx.qs, 16 * g + l) as i32).sum();
                isum += (bx.scales[g] & 0xf) as i32 * isuml;
            }
            sumf += dall * isum as f32 - dmin * summs as f32;
        }
        sumf
    }

    fn bad_scale(b: &BlockQ2K) -> Option<(&'static str, f32)> {
        check_half("d", b.d).or_else(|| check_half("dmin", b.dmin))
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Unsigned);
    fn levels(b: &BlockQ2K, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        let (d, min) = (b.d.to_f32(), b.dmin.to_f32());
        for_2bit_planes(&b.qs, |e, v| s[e] = v as i8);
        for (j, &sc) in b.scales.iter().enumerate() {
            sa[j] = d * (sc & 0xf) as f32;
            ma[j] = -(min * (sc >> 4) as f32);
        }
    }
}

pub struct Q3K;

impl Q3K {
    /// Stores the scales, requantizes every element against the stored scales, then splits
    /// the levels into the high-bit mask and 2-bit planes: the end of both Q3_K quantizers.
    fn finish(x: &[f32], y: &mut BlockQ3K, ls: &[u8; 16], d: f32, l: &mut [i8; QK_K]) {
        y.scales = pack_q3_scales(ls);
        y.d = Half::from_f32(d);
        let dall = y.d.to_f32();
        for (j, (xs, &sc)) in x.chunks_exact(16).zip(&unpack_q3_scales(&y.scales)).enumerate() {
            let d = dall * sc as f32;
            if d == 0.0 {
                continue;
            }
            for (ii, &v) in xs.iter().enumerate() {
                l[16 * j + ii] = (nearest_int(v / d).clamp(-4, 3) + 4) as i8;
            }
        }
        y.hmask = [0; QK_K / 8];
        let mut low = [0u8; QK_K];
        for (e, (&le, o)) in l.iter().zip(&mut low).enumerate() {
            let mut le = le as u8;
            if le > 3 {
                y.hmask[e % 32] |= 1 << (e / 32);
                le -= 4;
            }
            *o = le;
        }
        pack_2bit(&low, &mut y.qs);
    }
}

impl Format for Q3K {
    const TYPE: Type = Type::Q3_K;
    type Block = BlockQ3K;
    type DotBlock = BlockQ8K;

    /// `quantize_row_q3_K_ref`: symmetric 3-bit levels per 16 elements, signed 6-bit scales
    /// relative to the scale of largest magnitude.
    fn quantize_ref(x: &[f32], y: &mut [BlockQ3K]) -> Result<()> {
        let mut l = [0i8; QK_K];
        for (xb, yb) in x.chunks_exact(QK_K).zip(y) {
            let mut scales = [0f32; 16];
            for (j, xs) in xb.chunks_exact(16).enumerate() {
                scales[j] = make_q3_quants(4, xs, &mut l[16 * j..16 * j + 16]);
            }
            let (max_scale, _) = signed_absmax(&scales);
            let mut ls = [0u8; 16];
            let mut d = 0.0;
            if max_scale != 0.0 {
                let iscale = -32.0 / max_scale;
                for (o, &s) in ls.iter_mut().zip(&scales) {
                    // ggml: int8_t l = nearest_int(...), then clamped and offset.
                    *o = ((nearest_int_prod(iscale, s) as i8).clamp(-32, 31) + 32) as u8;
                }
                d = 1.0 / iscale;
            }
            Self::finish(xb, yb, &ls, d, &mut l);
        }
        Ok(())
    }

    /// `quantize_row_q3_K_impl`: weighted fits per 16 elements, scales quantized by a
    /// weighted fit of their own.
    fn quantize_weighted(x: &[f32], y: &mut [BlockQ3K], qw: &[f32]) {
        let mut l = [0i8; QK_K];
        let mut weight = [0f32; 16];
        for ((xb, qb), yb) in x.chunks_exact(QK_K).zip(qw.chunks_exact(QK_K)).zip(y) {
            let sigma2 = 2.0 * sum_squares(xb) / QK_K as f32;
            let (mut scales, mut sw) = ([0f32; 16], [0f32; 16]);
            for (j, (xs, qs)) in xb.chunks_exact(16).zip(qb.chunks_exact(16)).enumerate() {
                imatrix_weights(qs, xs, sigma2, &mut weight);
                for &w in &weight {
                    sw[j] += w;
                }
                scales[j] = make_qx_quants(4, xs, &mut l[16 * j..16 * j + 16], Some(&weight));
            }
            let mut ls = [0i8; 16];
            let d_block = make_qx_quants(32, &scales, &mut ls, Some(&sw));
            Self::finish(xb, yb, &ls.map(|v| v as u8), d_block, &mut l);
        }
    }

    fn dequantize(x: &[BlockQ3K], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
            let d_all = b.d.to_f32();
            let scales = unpack_q3_scales(&b.scales);
            for (e, o) in out.iter_mut().enumerate() {
                let dl = d_all * scales[e / 16] as f32;
                *o = dl * q3_level(b, e) as f32;
            }
        }
    }

    fn vec_dot(x: &[BlockQ3K], y: &[BlockQ8K]) -> f32 {
        let mut lanes = LaneSums::new();
        for (bx, by) in x.iter().zip(y) {
            let a: [i8; QK_K] = std::array::from_fn(|e| q3_level(bx, e));
            let scales = unpack_q3_scales(&bx.scales);
            lanes.add(bx.d.to_f32() * by.d.get(), &a, &by.qs, 16, |g| scales[g] as i32);
        }
        lanes.total(0.0)
    }

    fn bad_scale(b: &BlockQ3K) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Unsigned);
    fn levels(b: &BlockQ3K, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        // Levels offset by 4 to 0..8; the offset moves into the map.
        for_2bit_planes(&b.qs, |e, v| s[e] = (v | ((b.hmask[e % 32] >> (e / 32)) & 1) << 2) as i8);
        let d = b.d.to_f32();
        for (j, &sc) in unpack_q3_scales(&b.scales).iter().enumerate() {
            sa[j] = d * sc as f32;
            ma[j] = -4.0 * sa[j];
        }
    }
}

/// The signed level (-4..4) of element `e` of a Q3_K block: 2-bit plane value, minus 4 when
/// the high bit is clear.
fn q3_level(b: &BlockQ3K, e: usize) -> i8 {
    let high = b.hmask[e % 32] & (1 << (e / 32)) != 0;
    unpack_2bit(&b.qs, e) as i8 - if high { 0 } else { 4 }
}

pub struct Q6K;

impl Q6K {
    /// Shared body of both Q6_K quantizers: a symmetric 6-bit fit per 16 elements (weights
    /// `qw` as given, or x^2), 8-bit scales relative to the largest-magnitude scale.
    fn quantize_block(x: &[f32], y: &mut BlockQ6K, qw: Option<&[f32]>) {
        let mut l = [0i8; QK_K];
        let mut scales = [0f32; 16];
        for (ib, xs) in x.chunks_exact(16).enumerate() {
            let w = qw.map(|q| &q[16 * ib..16 * ib + 16]);
            scales[ib] = make_qx_quants(32, xs, &mut l[16 * ib..16 * ib + 16], w);
        }
        let (max_scale, max_abs_scale) = signed_absmax(&scales);
        if max_abs_scale < GROUP_MAX_EPS {
            *y = BlockQ6K::zeroed();
            return;
        }
        let iscale = -128.0 / max_scale;
        y.d = Half::from_f32(1.0 / iscale);
        for (s, &v) in y.scales.iter_mut().zip(&scales) {
            *s = nearest_int_prod(iscale, v).min(127) as i8;
        }
        let dall = y.d.to_f32();
        for (j, xs) in x.chunks_exact(16).enumerate() {
            let d = dall * y.scales[j] as f32;
            if d == 0.0 {
                continue;
            }
            for (ii, &v) in xs.iter().enumerate() {
                l[16 * j + ii] = (nearest_int(v / d).clamp(-32, 31) + 32) as i8;
            }
        }
        let l = l.map(|v| v as u8);
        // Low nibbles: element e of chunk c goes to ql[c*64 + (k&1)*32 + e%32] with
        // k = (e%128)/32, in the high nibble when k >= 2.
        for (c, ql) in y.ql.chunks_exact_mut(64).enumerate() {
            for j in 0..32 {
                let e = c * 128 + j;
                ql[j] = (l[e] & 0xf) | (l[e + 64] & 0xf) << 4;
                ql[j + 32] = (l[e + 32] & 0xf) | (l[e + 96] & 0xf) << 4;
            }
        }
        pack_2bit(&l.map(|v| v >> 4), &mut y.qh);
    }
}

/// The signed level (-32..32) of element `e` of a Q6_K block.
fn q6_level(b: &BlockQ6K, e: usize) -> i8 {
    let (c, k, j) = (e / 128, (e % 128) / 32, e % 32);
    let low = (b.ql[c * 64 + (k & 1) * 32 + j] >> (4 * (k >> 1))) & 0xf;
    (low | unpack_2bit(&b.qh, e) << 4) as i8 - 32
}

impl Format for Q6K {
    const TYPE: Type = Type::Q6_K;
    type Block = BlockQ6K;
    type DotBlock = BlockQ8K;

    fn quantize_ref(x: &[f32], y: &mut [BlockQ6K]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK_K).zip(y) {
            Self::quantize_block(xb, yb, None);
        }
        Ok(())
    }

    /// `quantize_row_q6_K_impl`: ggml passes the raw importance weights (not the
    /// sigma-adjusted ones the other types use) to the fit.
    fn quantize_weighted(x: &[f32], y: &mut [BlockQ6K], qw: &[f32]) {
        for ((xb, qb), yb) in x.chunks_exact(QK_K).zip(qw.chunks_exact(QK_K)).zip(y) {
            Self::quantize_block(xb, yb, Some(qb));
        }
    }

    fn dequantize(x: &[BlockQ6K], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
            let d = b.d.to_f32();
            for (e, o) in out.iter_mut().enumerate() {
                *o = d * b.scales[e / 16] as f32 * q6_level(b, e) as f32;
            }
        }
    }

    fn vec_dot(x: &[BlockQ6K], y: &[BlockQ8K]) -> f32 {
        let mut lanes = LaneSums::new();
        for (bx, by) in x.iter().zip(y) {
            let a: [i8; QK_K] = std::array::from_fn(|e| q6_level(bx, e));
            lanes.add(bx.d.to_f32() * by.d.get(), &a, &by.qs, 16, |g| bx.scales[g] as i32);
        }
        lanes.total(0.0)
    }

    fn bad_scale(b: &BlockQ6K) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Unsigned);
    fn levels(b: &BlockQ6K, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        // Levels offset by 32 to 0..64; the offset moves into the map. Element 128 c +
        // 32 k + j: nibble k / 2 of ql[64 c + 32 (k % 2) + j], 2-bit plane k of qh[32 c + j].
        for c in 0..QK_K / 128 {
            for j in 0..32 {
                let (l0, l1, h) = (b.ql[64 * c + j], b.ql[64 * c + 32 + j], b.qh[32 * c + j]);
                s[128 * c + j] = ((l0 & 0xf) | (h & 3) << 4) as i8;
                s[128 * c + 32 + j] = ((l1 & 0xf) | ((h >> 2) & 3) << 4) as i8;
                s[128 * c + 64 + j] = ((l0 >> 4) | ((h >> 4) & 3) << 4) as i8;
                s[128 * c + 96 + j] = ((l1 >> 4) | ((h >> 6) & 3) << 4) as i8;
            }
        }
        let d = b.d.to_f32();
        for (j, &sc) in b.scales.iter().enumerate() {
            sa[j] = d * sc as f32;
            ma[j] = -32.0 * sa[j];
        }
    }
}

/// Q8_K is an activation format: ggml has no Q8_K x Q8_K dot product (its CPU trait table
/// leaves Q8_K out); weft defines it as the integer dot scaled by both `d`.
pub struct Q8K;

impl Format for Q8K {
    const TYPE: Type = Type::Q8_K;
    type Block = BlockQ8K;
    type DotBlock = BlockQ8K;

    /// `quantize_row_q8_K_ref`: scale -127 / max (ggml's comment: -128 would make the AVX
    /// IQ2_XXS kernel awkward), levels capped at 127, and the 16-element sums.
    fn quantize_ref(x: &[f32], y: &mut [BlockQ8K]) -> Result<()> {
        for (xb, yb) in x.chunks_exact(QK_K).zip(y) {
            let (max, amax) = signed_absmax(xb);
            if amax == 0.0 {
                // ggml leaves `bsums` as they were here; weft zeroes them so the output
                // does not depend on the buffer's previous contents.
                *yb = BlockQ8K::zeroed();
                continue;
            }
            let iscale = -127.0 / max;
            for (q, &v) in yb.qs.iter_mut().zip(xb) {
                *q = nearest_int_prod(iscale, v).min(127) as i8;
            }
            yb.set_bsums();
            yb.d = LeF32::new(1.0 / iscale);
        }
        Ok(())
    }

    fn dequantize(x: &[BlockQ8K], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
            let d = b.d.get();
            for (o, &q) in out.iter_mut().zip(&b.qs) {
                *o = d * q as f32;
            }
        }
    }

    fn vec_dot(x: &[BlockQ8K], y: &[BlockQ8K]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sumi: i32 = bx.qs.iter().zip(&by.qs).map(|(&a, &b)| a as i32 * b as i32).sum();
            sumf += (bx.d.get() * by.d.get()) * sumi as f32;
        }
        sumf
    }

    fn bad_scale(b: &BlockQ8K) -> Option<(&'static str, f32)> {
        let d = b.d.get();
        (!d.is_finite()).then_some(("d", d))
    }
}
