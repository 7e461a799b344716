//! Q4_K and Q5_K: 8 sub-blocks of 32 elements, each with a 6-bit scale and a 6-bit minimum
//! (`x = d * sc * q - dmin * m`), 4-bit levels (plus a fifth bit for Q5_K).
//!
//! Element `e` sits in sub-block `e / 32`; its low nibble in byte `(e/64)*32 + e%32` of `qs`
//! (high nibble for the odd sub-block of each pair); Q5_K's fifth bit in `qh[e % 32]`, bit
//! `e / 32`.

use bytemuck::{Pod, Zeroable};

use super::block::Half;
use super::k::{BlockQ8K, LaneSums};
use super::scales::{
    imatrix_weights, make_qkx_quants, make_qp_quants, nearest_int, nearest_int_prod, sum_squares, QkxSearch, QpLoops,
};
use super::{check_half, Format, LevelSign};
use crate::error::Result;
use crate::types::{Type, QK_K};

/// Bytes holding the 8 six-bit scales and 8 six-bit mins (`K_SCALE_SIZE`).
const K_SCALE_SIZE: usize = 12;

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ4K {
    pub d: Half,
    pub dmin: Half,
    pub scales: [u8; K_SCALE_SIZE],
    pub qs: [u8; QK_K / 2],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockQ5K {
    pub d: Half,
    pub dmin: Half,
    pub scales: [u8; K_SCALE_SIZE],
    pub qh: [u8; QK_K / 8],
    pub qs: [u8; QK_K / 2],
}

const _: () = assert!(size_of::<BlockQ4K>() == Type::Q4_K.type_size());
const _: () = assert!(size_of::<BlockQ5K>() == Type::Q5_K.type_size());

/// `get_scale_min_k4`: scale and min of sub-block `j`. Sub-blocks 0..4 use the low 6 bits of
/// bytes `j` and `j + 4`; sub-blocks 4..8 keep 4 bits in byte `j + 4` and their top 2 bits in
/// the spare top bits of bytes `j - 4` (scale) and `j` (min).
pub(super) fn scale_min(j: usize, q: &[u8; K_SCALE_SIZE]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

/// Inverse of [`scale_min`], with ggml's exact byte operations (values above 63 leak into
/// neighbouring fields as they do in C).
fn pack_scale_min(ls: &[u8; 8], lm: &[u8; 8]) -> [u8; K_SCALE_SIZE] {
    let mut q = [0u8; K_SCALE_SIZE];
    for j in 0..8 {
        let (s, m) = (ls[j], lm[j]);
        if j < 4 {
            q[j] = s;
            q[j + 4] = m;
        } else {
            q[j + 4] = (s & 0xf) | ((m & 0xf) << 4);
            q[j - 4] |= (s >> 4) << 6;
            q[j] |= (m >> 4) << 6;
        }
    }
    q
}

/// One of the two formats, described by its level range and storage.
trait ScaleMinFormat {
    const NMAX: i32;
    /// `make_qkx2_quants` settings of the reference quantizer.
    const REF_SEARCH: QkxSearch;
    /// Whether the importance-matrix quantizer caps scales at 63 (Q5_K does, Q4_K does not).
    const CAP_WEIGHTED: bool;
    type Block;
    fn header(b: &mut Self::Block) -> (&mut Half, &mut Half, &mut [u8; K_SCALE_SIZE]);
    fn store_levels(b: &mut Self::Block, l: &[u8; QK_K]);
}

/// `make_qkx3_quants` settings of both importance-matrix quantizers.
const WEIGHTED_SEARCH: QkxSearch = QkxSearch { rmin: -0.9, rdelta: 0.05, nstep: 36, use_mad: false };

/// Stores d/dmin and the packed scales, then requantizes every element against the rounded
/// values (the end of all four quantizers).
fn finish<F: ScaleMinFormat>(
    x: &[f32],
    y: &mut F::Block,
    d: f32,
    dmin: f32,
    ls: &[u8; 8],
    lm: &[u8; 8],
    l: &mut [u8; QK_K],
) {
    let (hd, hm, scales) = F::header(y);
    *scales = pack_scale_min(ls, lm);
    *hd = Half::from_f32(d);
    *hm = Half::from_f32(dmin);
    let (dall, mall) = (hd.to_f32(), hm.to_f32());
    for (j, xs) in x.chunks_exact(32).enumerate() {
        let (sc, m) = scale_min(j, scales);
        let d = dall * sc as f32;
        if d == 0.0 {
            continue;
        }
        let dm = mall * m as f32;
        for (ii, &v) in xs.iter().enumerate() {
            l[32 * j + ii] = nearest_int((v + dm) / d).clamp(0, F::NMAX) as u8;
        }
    }
    F::store_levels(y, l);
}

/// `quantize_row_q4_K_ref` / `q5_K_ref`: per-sub-block fit weighted by `rms + |x|`, then
/// scales and mins in 6 bits relative to the largest of each.
fn quantize_ref<F: ScaleMinFormat>(x: &[f32], y: &mut [F::Block]) {
    let mut l = [0u8; QK_K];
    let mut aux = [0u8; 32];
    let mut weights = [0f32; 32];
    for (xb, yb) in x.chunks_exact(QK_K).zip(y) {
        let (mut scales, mut mins) = ([0f32; 8], [0f32; 8]);
        let (mut max_scale, mut max_min) = (0f32, 0f32);
        for (j, xs) in xb.chunks_exact(32).enumerate() {
            let av_x = (sum_squares(xs) / 32.0).sqrt();
            for (w, &v) in weights.iter_mut().zip(xs) {
                *w = av_x + v.abs();
            }
            let lj = &mut l[32 * j..32 * j + 32];
            (scales[j], mins[j]) = make_qkx_quants(F::NMAX, xs, &weights, lj, &mut aux, &F::REF_SEARCH);
            if scales[j] > max_scale {
                max_scale = scales[j];
            }
            if mins[j] > max_min {
                max_min = mins[j];
            }
        }
        let inv_scale = if max_scale > 0.0 { 63.0 / max_scale } else { 0.0 };
        let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
        let ls = scales.map(|s| (nearest_int_prod(inv_scale, s) as u8).min(63));
        let lm = mins.map(|m| (nearest_int_prod(inv_min, m) as u8).min(63));
        finish::<F>(xb, yb, max_scale / 63.0, max_min / 63.0, &ls, &lm, &mut l);
    }
}

/// `quantize_row_q4_K_impl` / `q5_K_impl` with importance weights: weighted fits, scales and
/// mins quantized by `make_qp_quants` against the per-sub-block weight totals.
fn quantize_weighted<F: ScaleMinFormat>(x: &[f32], y: &mut [F::Block], qw: &[f32]) {
    let mut l = [0u8; QK_K];
    let mut aux = [0u8; 32];
    let mut weights = [0f32; 32];
    for ((xb, qb), yb) in x.chunks_exact(QK_K).zip(qw.chunks_exact(QK_K)).zip(y) {
        let sigma2 = 2.0 * sum_squares(xb) / QK_K as f32;
        let (mut scales, mut mins, mut sw) = ([0f32; 8], [0f32; 8], [0f32; 8]);
        for (j, (xs, qs)) in xb.chunks_exact(32).zip(qb.chunks_exact(32)).enumerate() {
            imatrix_weights(qs, xs, sigma2, &mut weights);
            for &w in &weights {
                sw[j] += w;
            }
            let lj = &mut l[32 * j..32 * j + 32];
            (scales[j], mins[j]) = make_qkx_quants(F::NMAX, xs, &weights, lj, &mut aux, &WEIGHTED_SEARCH);
        }
        let (mut ls, mut lm) = ([0u8; 8], [0u8; 8]);
        let d_block = make_qp_quants(63, &scales, &mut ls, &sw, QpLoops::Scalar);
        let m_block = make_qp_quants(63, &mins, &mut lm, &sw, QpLoops::Scalar);
        if F::CAP_WEIGHTED {
            ls = ls.map(|v| v.min(63));
            lm = lm.map(|v| v.min(63));
        }
        finish::<F>(xb, yb, d_block, m_block, &ls, &lm, &mut l);
    }
}

/// Dequantizes with `level(block, e)` giving the unsigned level of element `e`.
fn dequantize<B>(
    x: &[B],
    y: &mut [f32],
    header: impl Fn(&B) -> (Half, Half, [u8; K_SCALE_SIZE]),
    level: impl Fn(&B, usize) -> u8,
) {
    for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
        let (d, min, scales) = header(b);
        let (d, min) = (d.to_f32(), min.to_f32());
        for (j, chunk) in out.chunks_exact_mut(32).enumerate() {
            let (sc, m) = scale_min(j, &scales);
            let (dl, ml) = (d * sc as f32, min * m as f32);
            for (i, o) in chunk.iter_mut().enumerate() {
                *o = dl * level(b, 32 * j + i) as f32 - ml;
            }
        }
    }
}

/// `ggml_vec_dot_q4_K_q8_K` / `q5_K_q8_K`: lane sums of `d * sc * q8 * level`, minus
/// `dmin * m * bsum` per block, which ggml subtracts before adding the lanes.
fn vec_dot<B>(
    x: &[B],
    y: &[BlockQ8K],
    header: impl Fn(&B) -> (Half, Half, [u8; K_SCALE_SIZE]),
    level: impl Fn(&B, usize) -> u8,
) -> f32 {
    let mut lanes = LaneSums::new();
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let (d, dmin, scales) = header(bx);
        let sm: [(u8, u8); 8] = std::array::from_fn(|j| scale_min(j, &scales));
        let sumi: i32 = by.bsums.iter().enumerate().map(|(j, s)| s.get() as i32 * sm[j / 2].1 as i32).sum();
        let a: [i8; QK_K] = std::array::from_fn(|e| level(bx, e) as i8);
        lanes.add(d.to_f32() * by.d.get(), &a, &by.qs, 32, |g| sm[g].0 as i32);
        sumf -= dmin.to_f32() * by.d.get() * sumi as f32;
    }
    lanes.total(sumf)
}

/// Low nibble of element `e`.
#[inline]
fn nibble(qs: &[u8; QK_K / 2], e: usize) -> u8 {
    (qs[(e / 64) * 32 + e % 32] >> (4 * ((e % 64) / 32))) & 0xf
}

fn pack_nibbles(l: &[u8; QK_K], qs: &mut [u8; QK_K / 2]) {
    for (c, q) in qs.chunks_exact_mut(32).enumerate() {
        for (j, o) in q.iter_mut().enumerate() {
            *o = (l[64 * c + j] & 0xf) | (l[64 * c + j + 32] & 0xf) << 4;
        }
    }
}

pub struct Q4K;

impl ScaleMinFormat for Q4K {
    const NMAX: i32 = 15;
    const REF_SEARCH: QkxSearch = QkxSearch { rmin: -1.0, rdelta: 0.1, nstep: 20, use_mad: false };
    const CAP_WEIGHTED: bool = false;
    type Block = BlockQ4K;
    fn header(b: &mut BlockQ4K) -> (&mut Half, &mut Half, &mut [u8; K_SCALE_SIZE]) {
        (&mut b.d, &mut b.dmin, &mut b.scales)
    }
    fn store_levels(b: &mut BlockQ4K, l: &[u8; QK_K]) {
        pack_nibbles(l, &mut b.qs);
    }
}

fn q4k_header(b: &BlockQ4K) -> (Half, Half, [u8; K_SCALE_SIZE]) {
    (b.d, b.dmin, b.scales)
}

/// [`Format::levels`] of Q4_K / Q5_K: 6-bit scales and mins per 32 elements.
fn scale_min_levels<B>(
    b: &B,
    header: impl Fn(&B) -> (Half, Half, [u8; K_SCALE_SIZE]),
    levels: impl Fn(&B, &mut [i8]),
    s: &mut [i8],
    sa: &mut [f32],
    ma: &mut [f32],
) {
    let (d, min, scales) = header(b);
    let (d, min) = (d.to_f32(), min.to_f32());
    levels(b, s);
    for j in 0..QK_K / 32 {
        let (sc, m) = scale_min(j, &scales);
        sa[2 * j..2 * j + 2].fill(d * sc as f32);
        ma[2 * j..2 * j + 2].fill(-(min * m as f32));
    }
}

/// All 256 nibbles of a Q4_K / Q5_K block (chunk c of 64 elements: low nibbles of
/// qs[32 c..], then high nibbles), plus 16 where `qh` has the element's bit (Q5_K).
fn nibble_levels(qs: &[u8; QK_K / 2], qh: Option<&[u8; QK_K / 8]>, s: &mut [i8]) {
    for c in 0..QK_K / 64 {
        for j in 0..32 {
            let (q, h) = (qs[32 * c + j], qh.map_or(0, |h| h[j]));
            s[64 * c + j] = ((q & 0xf) | ((h >> (2 * c)) & 1) << 4) as i8;
            s[64 * c + 32 + j] = ((q >> 4) | ((h >> (2 * c + 1)) & 1) << 4) as i8;
        }
    }
}

fn q4k_level(b: &BlockQ4K, e: usize) -> u8 {
    nibble(&b.qs, e)
}

impl Format for Q4K {
    const TYPE: Type = Type::Q4_K;
    type Block = BlockQ4K;
    type DotBlock = BlockQ8K;

    fn quantize_ref(x: &[f32], y: &mut [BlockQ4K]) -> Result<()> {
        quantize_ref::<Self>(x, y);
        Ok(())
    }
    fn quantize_weighted(x: &[f32], y: &mut [BlockQ4K], qw: &[f32]) {
        quantize_weighted::<Self>(x, y, qw);
    }
    fn dequantize(x: &[BlockQ4K], y: &mut [f32]) {
        dequantize(x, y, q4k_header, q4k_level);
    }
    fn vec_dot(x: &[BlockQ4K], y: &[BlockQ8K]) -> f32 {
        vec_dot(x, y, q4k_header, q4k_level)
    }
    fn bad_scale(b: &BlockQ4K) -> Option<(&'static str, f32)> {
        check_half("d", b.d).or_else(|| check_half("dmin", b.dmin))
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Unsigned);
    fn levels(b: &BlockQ4K, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        scale_min_levels(b, q4k_header, |b, s| nibble_levels(&b.qs, None, s), s, sa, ma);
    }
}

pub struct Q5K;

impl ScaleMinFormat for Q5K {
    const NMAX: i32 = 31;
    const REF_SEARCH: QkxSearch = QkxSearch { rmin: -0.5, rdelta: 0.1, nstep: 15, use_mad: false };
    const CAP_WEIGHTED: bool = true;
    type Block = BlockQ5K;
    fn header(b: &mut BlockQ5K) -> (&mut Half, &mut Half, &mut [u8; K_SCALE_SIZE]) {
        (&mut b.d, &mut b.dmin, &mut b.scales)
    }
    fn store_levels(b: &mut BlockQ5K, l: &[u8; QK_K]) {
        b.qh = [0; QK_K / 8];
        for (e, &v) in l.iter().enumerate() {
            if v > 15 {
                b.qh[e % 32] |= 1 << (e / 32);
            }
        }
        pack_nibbles(l, &mut b.qs);
    }
}

fn q5k_header(b: &BlockQ5K) -> (Half, Half, [u8; K_SCALE_SIZE]) {
    (b.d, b.dmin, b.scales)
}

fn q5k_level(b: &BlockQ5K, e: usize) -> u8 {
    nibble(&b.qs, e) + if b.qh[e % 32] & (1 << (e / 32)) != 0 { 16 } else { 0 }
}

impl Format for Q5K {
    const TYPE: Type = Type::Q5_K;
    type Block = BlockQ5K;
    type DotBlock = BlockQ8K;

    fn quantize_ref(x: &[f32], y: &mut [BlockQ5K]) -> Result<()> {
        quantize_ref::<Self>(x, y);
        Ok(())
    }
    fn quantize_weighted(x: &[f32], y: &mut [BlockQ5K], qw: &[f32]) {
        quantize_weighted::<Self>(x, y, qw);
    }
    fn dequantize(x: &[BlockQ5K], y: &mut [f32]) {
        dequantize(x, y, q5k_header, q5k_level);
    }
    fn vec_dot(x: &[BlockQ5K], y: &[BlockQ8K]) -> f32 {
        vec_dot(x, y, q5k_header, q5k_level)
    }
    fn bad_scale(b: &BlockQ5K) -> Option<(&'static str, f32)> {
        check_half("d", b.d).or_else(|| check_half("dmin", b.dmin))
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Unsigned);
    fn levels(b: &BlockQ5K, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        scale_min_levels(b, q5k_header, |b, s| nibble_levels(&b.qs, Some(&b.qh), s), s, sa, ma);
    }
}
