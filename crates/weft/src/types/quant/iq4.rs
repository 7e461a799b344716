//! The 4-bit non-linear formats: each element is one of 16 fixed levels (`kvalues_iq4nl`,
//! denser near zero) times a scale.
//!
//! - IQ4_NL: 32-element blocks with an f16 scale, Q4_0's nibble layout (element `j` and
//!   `j + 16` share byte `j`).
//! - IQ4_XS: 256-element super-blocks, an f16 scale and a 6-bit signed scale per 32 elements
//!   (4 low bits in `scales_l`, 2 high bits in `scales_h`).

use bytemuck::{Pod, Zeroable};

use super::block::{Half, LeU16};
use super::grids::KVALUES_IQ4NL;
use super::k::BlockQ8K;
use super::legacy::{dot_i8_x86, BlockQ8_0};
use super::scales::{fma, imatrix_weights, nearest_int_prod, signed_absmax, sum_squares, GROUP_MAX_EPS};
use super::{check_half, for_each_row, Format, LevelSign};
use crate::error::Result;
use crate::types::{Type, QK_K};

const QK4_NL: usize = 32;

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockIq4Nl {
    pub d: Half,
    pub qs: [u8; QK4_NL / 2],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockIq4Xs {
    pub d: Half,
    pub scales_h: LeU16,
    pub scales_l: [u8; QK_K / 64],
    pub qs: [u8; QK_K / 2],
}

const _: () = assert!(size_of::<BlockIq4Nl>() == Type::IQ4_NL.type_size());
const _: () = assert!(size_of::<BlockIq4Xs>() == Type::IQ4_XS.type_size());

/// `best_index_int8`: the index of the level nearest to `x` (binary search; ties go up).
fn best_index(x: f32) -> u8 {
    let v = |i: usize| KVALUES_IQ4NL[i] as f32;
    if x <= v(0) {
        return 0;
    }
    if x >= v(15) {
        return 15;
    }
    let (mut ml, mut mu) = (0usize, 15usize);
    while mu - ml > 1 {
        let mav = (ml + mu) / 2;
        if x < v(mav) {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    if x - v(mu - 1) < v(mu) - x {
        (mu - 1) as u8
    } else {
        mu as u8
    }
}

/// `sumqx`, `sumq2` of the levels nearest to `id * x` (scalar loops: the sums fuse); stores
/// the level indices in `l` if given.
fn fit_levels(x: &[f32], weight: &[f32], id: f32, mut l: Option<&mut [u8]>) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for j in 0..x.len() {
        let li = best_index(id * x[j]);
        if let Some(l) = l.as_deref_mut() {
            l[j] = li;
        }
        let q = KVALUES_IQ4NL[li as usize] as f32;
        let wq = weight[j] * q;
        sumqx = fma(x[j], wq, sumqx);
        sumq2 = fma(q, wq, sumq2);
    }
    (sumqx, sumq2)
}

/// Where `quantize_row_iq4_nl_impl` stores a super-block.
struct Iq4Out<'a> {
    d: &'a mut Half,
    qs: &'a mut [u8],
    /// IQ4_XS only: the sub-block scales.
    scales: Option<(&'a mut LeU16, &'a mut [u8; QK_K / 64])>,
}

/// `quantize_row_iq4_nl_impl` for one super-block of `x.len()` elements in sub-blocks of 32.
/// `ntry` > 0 searches `2*ntry + 1` extra scales (and re-fits single-block formats);
/// ggml's IQ4_NL `from_float` passes -1. `l` holds the levels and, like ggml's buffer, keeps
/// its contents where a sub-block is skipped.
fn quantize_super_block(x: &[f32], out: Iq4Out<'_>, qw: Option<&[f32]>, ntry: i32, l: &mut [u8]) {
    const BS: usize = 32;
    let n = x.len();
    let sigma2 = sum_squares(x) * (2.0 / n as f32);
    out.qs.fill(0);
    *out.d = Half::ZERO;
    let mut weight = [0f32; BS];
    let mut scales = [0f32; QK_K / BS];
    let (mut max_scale, mut amax_scale) = (0.0f32, 0.0f32);
    let v0 = KVALUES_IQ4NL[0] as f32;
    for (ib, xb) in x.chunks_exact(BS).enumerate() {
        match qw {
            Some(q) => imatrix_weights(&q[BS * ib..BS * ib + BS], xb, sigma2, &mut weight),
            None => {
                for (w, &v) in weight.iter_mut().zip(xb) {
                    *w = v * v;
                }
            }
        }
        let (max, amax) = signed_absmax(xb);
        if amax < GROUP_MAX_EPS {
            scales[ib] = 0.0;
            continue;
        }
        let d0 = if ntry > 0 { -max / v0 } else { max / v0 };
        let (sumqx, sumq2) = fit_levels(xb, &weight, 1.0 / d0, Some(&mut l[BS * ib..BS * ib + BS]));
        let mut d = sumqx / sumq2;
        let mut best = d * sumqx;
        for itry in -ntry..=ntry {
            let id = (itry + KVALUES_IQ4NL[0] as i32) as f32 / max;
            let (sumqx, sumq2) = fit_levels(xb, &weight, id, None);
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if d.abs() > amax_scale {
            amax_scale = d.abs();
            max_scale = d;
        }
    }
    match out.scales {
        Some((scales_h, scales_l)) => {
            // Sub-block scales as 6-bit signed multiples of d = -max_scale / 32, levels
            // re-picked against the rounded scales.
            let mut h = 0u16;
            let d = -max_scale / 32.0;
            *out.d = Half::from_f32(d);
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            for (ib, xb) in x.chunks_exact(BS).enumerate() {
                let ls = nearest_int_prod(id, scales[ib]).clamp(-32, 31);
                let dl = d * ls as f32;
                let idl = if dl != 0.0 { 1.0 / dl } else { 0.0 };
                for (o, &v) in l[BS * ib..BS * ib + BS].iter_mut().zip(xb) {
                    *o = best_index(idl * v);
                }
                let ls = (ls + 32) as u8;
                if ib % 2 == 0 {
                    scales_l[ib / 2] = ls & 0xf;
                } else {
                    scales_l[ib / 2] |= (ls & 0xf) << 4;
                }
                h |= ((ls >> 4) as u16) << (2 * (ib % 8));
            }
            *scales_h = LeU16::new(h);
        }
        None => {
            *out.d = Half::from_f32(scales[0]);
            if ntry > 0 {
                let id = if scales[0] != 0.0 { 1.0 / scales[0] } else { 0.0 };
                for (o, &v) in l.iter_mut().zip(x) {
                    *o = best_index(id * v);
                }
            }
        }
    }
    for (q, lc) in out.qs.chunks_exact_mut(16).zip(l.chunks_exact(32)) {
        for j in 0..16 {
            q[j] = lc[j] | (lc[j + 16] << 4);
        }
    }
}

/// The level of nibble `hi` of byte `q`.
#[inline]
fn kv(q: u8, hi: bool) -> i32 {
    KVALUES_IQ4NL[if hi { q >> 4 } else { q & 0xf } as usize] as i32
}

pub struct Iq4Nl;

impl Iq4Nl {
    fn quantize(x: &[f32], y: &mut [BlockIq4Nl], qw: Option<&[f32]>, ntry: i32, l: &mut [u8; QK4_NL]) {
        for (ib, (xb, yb)) in x.chunks_exact(QK4_NL).zip(y).enumerate() {
            let qb = qw.map(|q| &q[QK4_NL * ib..QK4_NL * ib + QK4_NL]);
            let out = Iq4Out { d: &mut yb.d, qs: &mut yb.qs, scales: None };
            quantize_super_block(xb, out, qb, ntry, l);
        }
    }
}

impl Format for Iq4Nl {
    const TYPE: Type = Type::IQ4_NL;
    type Block = BlockIq4Nl;
    type DotBlock = BlockQ8_0;

    /// `quantize_row_iq4_nl` (what `quantize_row_iq4_nl_ref` calls): no extra scale search.
    fn quantize_ref(x: &[f32], y: &mut [BlockIq4Nl]) -> Result<()> {
        Self::quantize(x, y, None, -1, &mut [0; QK4_NL]);
        Ok(())
    }

    /// `quantize_iq4_nl`: the full search (`ntry` 7), importance weights per block.
    fn quantize_rows(x: &[f32], y: &mut [BlockIq4Nl], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        let mut l = [0u8; QK4_NL];
        for_each_row::<Self>(x, y, n_per_row, |xr, yr| {
            Self::quantize(xr, yr, imatrix, 7, &mut l);
            Ok(())
        })
    }

    fn dequantize(x: &[BlockIq4Nl], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK4_NL)) {
            let d = b.d.to_f32();
            for j in 0..16 {
                out[j] = d * kv(b.qs[j], false) as f32;
                out[j + 16] = d * kv(b.qs[j], true) as f32;
            }
        }
    }

    fn vec_dot(x: &[BlockIq4Nl], y: &[BlockQ8_0]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let d = by.d.to_f32() * bx.d.to_f32();
            // ggml's x86 pairing (see dot_i8_x86): equal to Σ x·y unless NaN made a -128.
            let levels: [i32; 32] = std::array::from_fn(|j| kv(bx.qs[j % 16], j >= 16));
            sumf += d * dot_i8_x86(&levels, &by.qs) as f32;
        }
        sumf
    }

    fn bad_scale(b: &BlockIq4Nl) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockIq4Nl, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        for j in 0..16 {
            s[j] = kv(b.qs[j], false) as i8;
            s[j + 16] = kv(b.qs[j], true) as i8;
        }
        sa[..2].fill(b.d.to_f32());
        ma[..2].fill(0.0);
    }
}

pub struct Iq4Xs;

impl Iq4Xs {
    /// The signed scale (-32..32) of 32-element sub-block `ib`.
    fn sub_scale(b: &BlockIq4Xs, ib: usize) -> i32 {
        let low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf;
        let high = ((b.scales_h.get() >> (2 * ib)) & 3) as u8;
        (low | high << 4) as i32 - 32
    }
}

impl Format for Iq4Xs {
    const TYPE: Type = Type::IQ4_XS;
    type Block = BlockIq4Xs;
    type DotBlock = BlockQ8K;

    /// `quantize_row_iq4_xs_ref` (= `quantize_iq4_xs` without importance matrix).
    fn quantize_ref(x: &[f32], y: &mut [BlockIq4Xs]) -> Result<()> {
        Self::quantize_rows(x, y, x.len(), None)
    }

    fn quantize_rows(x: &[f32], y: &mut [BlockIq4Xs], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        let mut l = [0u8; QK_K];
        for_each_row::<Self>(x, y, n_per_row, |xr, yr| {
            for (ibl, (xb, yb)) in xr.chunks_exact(QK_K).zip(yr).enumerate() {
                let qb = imatrix.map(|q| &q[QK_K * ibl..QK_K * ibl + QK_K]);
                let out = Iq4Out { d: &mut yb.d, qs: &mut yb.qs, scales: Some((&mut yb.scales_h, &mut yb.scales_l)) };
                quantize_super_block(xb, out, qb, 7, &mut l);
            }
            Ok(())
        })
    }

    fn dequantize(x: &[BlockIq4Xs], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
            let d = b.d.to_f32();
            for (ib, o) in out.chunks_exact_mut(32).enumerate() {
                let dl = d * Self::sub_scale(b, ib) as f32;
                let qs = &b.qs[16 * ib..16 * ib + 16];
                for j in 0..16 {
                    o[j] = dl * kv(qs[j], false) as f32;
                    o[j + 16] = dl * kv(qs[j], true) as f32;
                }
            }
        }
    }

    fn vec_dot(x: &[BlockIq4Xs], y: &[BlockQ8K]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let d4d8 = bx.d.to_f32() * by.d.get();
            for ib in 0..QK_K / 32 {
                let dl = d4d8 * Self::sub_scale(bx, ib) as f32;
                let (qs, q8) = (&bx.qs[16 * ib..16 * ib + 16], &by.qs[32 * ib..32 * ib + 32]);
                let (mut sumi1, mut sumi2) = (0i32, 0i32);
                for j in 0..16 {
                    sumi1 += q8[j] as i32 * kv(qs[j], false);
                    sumi2 += q8[j + 16] as i32 * kv(qs[j], true);
                }
                sumf += dl * (sumi1 + sumi2) as f32;
            }
        }
        sumf
    }

    fn bad_scale(b: &BlockIq4Xs) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockIq4Xs, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        let d = b.d.to_f32();
        for ib in 0..QK_K / 32 {
            let qs = &b.qs[16 * ib..16 * ib + 16];
            for j in 0..16 {
                s[32 * ib + j] = kv(qs[j], false) as i8;
                s[32 * ib + j + 16] = kv(qs[j], true) as i8;
            }
            sa[2 * ib..2 * ib + 2].fill(d * Self::sub_scale(b, ib) as f32);
            ma[2 * ib..2 * ib + 2].fill(0.0);
        }
    }
}
