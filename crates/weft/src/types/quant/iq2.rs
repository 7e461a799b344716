//! The 2-bit I-quants: groups of 8 magnitudes snapped onto an E8-lattice-derived grid
//! (256, 512 or 1024 points), with signs stored separately.
//!
//! - IQ2_XXS (2.06 bpw): per 32 elements a u32 of 4 grid indices and a u32 of 4 x 7 sign
//!   bits plus a 4-bit scale (the 8th sign of each group is implied by even parity).
//! - IQ2_XS (2.31 bpw): per 8 elements a u16 of 9-bit grid index and 7 sign bits; a 4-bit
//!   scale per 16 elements.
//! - IQ2_S (2.56 bpw): 10-bit grid indices (8 low bits in `qs`, 2 high bits in `qh`), full
//!   sign bytes, a 4-bit scale per 16 elements.

use bytemuck::{Pod, Zeroable};

use super::block::{Half, LeU16};
use super::grids::{IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, KSIGNS_IQ2XS};
use super::iq_search::{
    dequantize_grid, fit, grid_levels, off_grid, scale_code, split_group_signs, vec_dot_grid, GridBlock, GridSearch,
};
use super::iq_tables;
use super::k::BlockQ8K;
use super::scales::{
    c_max, c_max_of, fma, imatrix_weights, make_qp_quants, sum_squares, QpLoops, GROUP_MAX_EPS, GROUP_MAX_EPS_IQ2_S,
};
use super::{check_half, for_each_row, Format, LevelSign};
use crate::error::{Error, Result};
use crate::types::{Type, QK_K};

/// ggml declares `uint16_t qs[32]`; the code reads it as 8 pairs of little-endian u32
/// (grid indices, then signs and scale), so it is kept as bytes here.
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockIq2Xxs {
    pub d: Half,
    pub qs: [u8; QK_K / 4],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockIq2Xs {
    pub d: Half,
    pub qs: [LeU16; QK_K / 8],
    pub scales: [u8; QK_K / 32],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockIq2S {
    pub d: Half,
    /// 32 low bytes of grid indices, then 32 sign bytes.
    pub qs: [u8; QK_K / 4],
    pub qh: [u8; QK_K / 32],
    pub scales: [u8; QK_K / 32],
}

const _: () = assert!(size_of::<BlockIq2Xxs>() == Type::IQ2_XXS.type_size());
const _: () = assert!(size_of::<BlockIq2Xs>() == Type::IQ2_XS.type_size());
const _: () = assert!(size_of::<BlockIq2S>() == Type::IQ2_S.type_size());

/// The error of the types ggml only quantizes with an importance matrix.
fn needs_imatrix(ty: Type) -> Error {
    Error::unsupported(format!(
        "quantizeRow: {ty} has no reference quantizer in ggml; it needs an importance matrix \
         (use quantizeChunk with one)"
    ))
}

/// A row quantizer driven by an importance matrix.
type WeightedRow<B> = fn(&[f32], &mut [B], &[f32]) -> Result<()>;

/// `quantize_iq2_xxs` / `iq2_xs`: `row` on every row, with the (required) importance matrix.
fn rows_with_imatrix<F: Format>(
    x: &[f32],
    y: &mut [F::Block],
    n_per_row: usize,
    imatrix: Option<&[f32]>,
    row: WeightedRow<F::Block>,
) -> Result<()> {
    let qw = imatrix.ok_or_else(|| needs_imatrix(F::TYPE))?;
    for_each_row::<F>(x, y, n_per_row, |xr, yr| row(xr, yr, qw))
}

/// The sub-block multiplier of all three IQ2 dequantizers: `d * (0.5 + code) / 4`.
fn iq2_db(d: f32, code: u32) -> f32 {
    d * (0.5 + code as f32) * 0.25
}

/// The two u32 of IQ2_XXS sub-block `ib`: grid indices, and signs + scale.
fn xxs_words(b: &BlockIq2Xxs, ib: usize) -> (u32, u32) {
    let w = |o: usize| u32::from_le_bytes([b.qs[o], b.qs[o + 1], b.qs[o + 2], b.qs[o + 3]]);
    (w(8 * ib), w(8 * ib + 4))
}

impl GridBlock for BlockIq2Xxs {
    fn d(&self) -> Half {
        self.d
    }
    fn group(&self, g: usize) -> (u64, u8) {
        let (grid, aux) = xxs_words(self, g / 4);
        let l = g % 4;
        (IQ2XXS_GRID[(grid >> (8 * l)) as u8 as usize], KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize])
    }
    fn code(&self, h: usize) -> u32 {
        xxs_words(self, h / 2).1 >> 28
    }
}

impl GridBlock for BlockIq2Xs {
    fn d(&self) -> Half {
        self.d
    }
    fn group(&self, g: usize) -> (u64, u8) {
        let q = self.qs[g].get();
        (IQ2XS_GRID[(q & 511) as usize], KSIGNS_IQ2XS[(q >> 9) as usize])
    }
    fn code(&self, h: usize) -> u32 {
        ((self.scales[h / 2] >> (4 * (h % 2))) & 0xf) as u32
    }
}

impl GridBlock for BlockIq2S {
    fn d(&self) -> Half {
        self.d
    }
    /// 10-bit grid index: 8 bits in `qs`, 2 in `qh`; the sign bytes follow the 32 index bytes.
    fn group(&self, g: usize) -> (u64, u8) {
        let (ib, l) = (g / 4, g % 4);
        let index = self.qs[g] as usize | ((self.qh[ib] as usize) << (8 - 2 * l) & 0x300);
        (IQ2S_GRID[index], self.qs[QK_K / 8 + g])
    }
    fn code(&self, h: usize) -> u32 {
        ((self.scales[h / 2] >> (4 * (h % 2))) & 0xf) as u32
    }
}

/// Sub-block weights `qw * sqrt(sigma2 + x^2)` and their square roots (used to rank grid
/// neighbours).
fn weights_with_roots(qw: &[f32], x: &[f32], sigma2: f32, weight: &mut [f32], waux: &mut [f32]) {
    imatrix_weights(qw, x, sigma2, weight);
    for (a, &w) in waux.iter_mut().zip(weight.iter()) {
        *a = w.sqrt();
    }
}

pub struct Iq2Xxs;

impl Iq2Xxs {
    /// `quantize_row_iq2_xxs_impl` for one row.
    fn quantize_row(x: &[f32], y: &mut [BlockIq2Xxs], qw: &[f32]) -> Result<()> {
        const KMAXQ: i32 = 3;
        // Only the snapping and the final lookup are shared with the other grid types: the
        // scale search itself starts from `make_qp_quants` here.
        let grid = GridSearch {
            ty: Type::IQ2_XXS,
            tables: iq_tables::iq2xxs(),
            bits: 2,
            kmax: KMAXQ,
            nsteps: 6,
            step: 0.1,
            resnap_all: true,
        };
        let (mut weight, mut waux, mut xval) = ([0f32; 32], [0f32; 32], [0f32; 32]);
        let mut laux = [0i8; 32];
        for ((xbl, qbl), yb) in x.chunks_exact(QK_K).zip(qw.chunks_exact(QK_K)).zip(y) {
            yb.d = Half::ZERO;
            let mut q2 = [0u32; 16];
            let mut scales = [0f32; 8];
            let mut max_scale = 0.0f32;
            let sigma2 = sum_squares(xbl) / QK_K as f32;
            for (ib, (xb, qb)) in xbl.chunks_exact(32).zip(qbl.chunks_exact(32)).enumerate() {
                weights_with_roots(qb, xb, sigma2, &mut weight, &mut waux);
                let mut signs = [0u8; 4];
                split_group_signs(xb, &weight, &mut xval, &mut signs, true);
                let max = c_max_of(xval.iter().copied());
                if max < GROUP_MAX_EPS {
                    scales[ib] = 0.0;
                    continue;
                }
                // Start from the best unconstrained levels 0..=kmax, then search scales
                // around them with every group snapped to the grid.
                let mut lp = [0u8; 32];
                let mut scale = make_qp_quants(KMAXQ + 1, &xval, &mut lp, &weight, QpLoops::VectorizedMse);
                let mut l = lp.map(|v| v as i8);
                let eff_max = scale * KMAXQ as f32;
                let mut best = 0.0f32;
                for is in -6..=6 {
                    let id = fma(is as f32, 0.1, (2 * KMAXQ - 1) as f32) / eff_max;
                    let this_scale = 1.0 / id;
                    for k in 0..4 {
                        let g = 8 * k..8 * k + 8;
                        grid.snap(&xval[g.clone()], &waux[g.clone()], id, this_scale, &mut laux[g])?;
                    }
                    let (sumqx, sumq2) = fit(&xval, &weight, &laux);
                    if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                        scale = sumqx / sumq2;
                        best = scale * sumqx;
                        l = laux;
                    }
                }
                if scale > 0.0 {
                    let id = 1.0 / scale;
                    for k in 0..4 {
                        let g = 8 * k..8 * k + 8;
                        grid.snap(&xval[g.clone()], &waux[g.clone()], id, scale, &mut l[g])?;
                    }
                    let (sumqx, sumq2) = fit(&xval, &weight, &l);
                    if sumq2 > 0.0 {
                        scale = sumqx / sumq2;
                    }
                }
                if scale < 0.0 {
                    // "Should never happen" per ggml: flip the scale and all signs.
                    scale = -scale;
                    signs = signs.map(|s| !s & 127);
                }
                for k in 0..4 {
                    let index = grid.index_of(&l[8 * k..])?;
                    q2[2 * ib] |= (index as u32) << (8 * k);
                    q2[2 * ib + 1] |= (signs[k] as u32) << (7 * k);
                }
                if scale.is_nan() {
                    return Err(off_grid(Type::IQ2_XXS));
                }
                scales[ib] = scale;
                max_scale = c_max(max_scale, scale);
            }
            if max_scale == 0.0 {
                yb.qs = [0; QK_K / 4];
                continue;
            }
            let d = max_scale / 31.0;
            yb.d = Half::from_f32(d);
            let id = 1.0 / d;
            for (ib, &s) in scales.iter().enumerate() {
                q2[2 * ib + 1] |= (scale_code(id, s) as u32) << 28;
            }
            for (o, w) in yb.qs.chunks_exact_mut(4).zip(&q2) {
                o.copy_from_slice(&w.to_le_bytes());
            }
        }
        Ok(())
    }
}

impl Format for Iq2Xxs {
    const TYPE: Type = Type::IQ2_XXS;
    type Block = BlockIq2Xxs;
    type DotBlock = BlockQ8K;

    fn quantize_ref(_x: &[f32], _y: &mut [BlockIq2Xxs]) -> Result<()> {
        Err(needs_imatrix(Self::TYPE))
    }

    fn quantize_rows(x: &[f32], y: &mut [BlockIq2Xxs], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        rows_with_imatrix::<Self>(x, y, n_per_row, imatrix, Self::quantize_row)
    }

    fn dequantize(x: &[BlockIq2Xxs], y: &mut [f32]) {
        dequantize_grid(x, y, iq2_db);
    }

    fn vec_dot(x: &[BlockIq2Xxs], y: &[BlockQ8K]) -> f32 {
        vec_dot_grid(x, y, 0.125)
    }

    fn bad_scale(b: &BlockIq2Xxs) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockIq2Xxs, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        grid_levels(b, iq2_db, s, sa, ma);
    }
}

pub struct Iq2Xs;

impl Iq2Xs {
    /// `quantize_row_iq2_xs_impl` for one row.
    fn quantize_row(x: &[f32], y: &mut [BlockIq2Xs], qw: &[f32]) -> Result<()> {
        let search = GridSearch {
            ty: Type::IQ2_XS,
            tables: iq_tables::iq2xs(),
            bits: 2,
            kmax: 3,
            nsteps: 9,
            step: 0.1,
            resnap_all: false,
        };
        let (mut weight, mut waux, mut xval) = ([0f32; 16], [0f32; 16], [0f32; 16]);
        // Kept across sub-blocks, like ggml's buffers, for sub-blocks where no scale fits.
        let mut l = [0i8; 16];
        for ((xbl, qbl), yb) in x.chunks_exact(QK_K).zip(qw.chunks_exact(QK_K)).zip(y) {
            yb.d = Half::ZERO;
            yb.scales = [0; QK_K / 32];
            let mut q2 = [0u16; 32];
            let mut scales = [0f32; 16];
            let mut max_scale = 0.0f32;
            let sigma2 = sum_squares(xbl) / QK_K as f32;
            for (ib, (xb, qb)) in xbl.chunks_exact(16).zip(qbl.chunks_exact(16)).enumerate() {
                weights_with_roots(qb, xb, sigma2, &mut weight, &mut waux);
                let mut signs = [0u8; 2];
                split_group_signs(xb, &weight, &mut xval, &mut signs, true);
                let max = c_max_of(xval.iter().copied());
                if max < GROUP_MAX_EPS {
                    scales[ib] = 0.0;
                    l = [0; 16];
                    continue;
                }
                let mut on_grid = [true; 2];
                let mut scale = search.run(&xval, &weight, &waux, max, &mut l, &mut on_grid)?;
                if scale < 0.0 {
                    scale = -scale;
                    signs = signs.map(|s| !s & 127);
                }
                for k in 0..2 {
                    let index = search.index_of(&l[8 * k..])?;
                    q2[2 * ib + k] = index as u16 | (signs[k] as u16) << 9;
                }
                if scale.is_nan() {
                    return Err(off_grid(Type::IQ2_XS));
                }
                scales[ib] = scale;
                max_scale = c_max(max_scale, scale);
            }
            if max_scale == 0.0 {
                yb.qs = [LeU16::default(); 32];
                continue;
            }
            let d = max_scale / 31.0;
            yb.d = Half::from_f32(d);
            let id = 1.0 / d;
            for (ib, &s) in scales.iter().enumerate() {
                yb.scales[ib / 2] |= scale_code(id, s) << (4 * (ib % 2));
            }
            yb.qs = q2.map(LeU16::new);
        }
        Ok(())
    }
}

impl Format for Iq2Xs {
    const TYPE: Type = Type::IQ2_XS;
    type Block = BlockIq2Xs;
    type DotBlock = BlockQ8K;

    fn quantize_ref(_x: &[f32], _y: &mut [BlockIq2Xs]) -> Result<()> {
        Err(needs_imatrix(Self::TYPE))
    }

    fn quantize_rows(x: &[f32], y: &mut [BlockIq2Xs], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        rows_with_imatrix::<Self>(x, y, n_per_row, imatrix, Self::quantize_row)
    }

    fn dequantize(x: &[BlockIq2Xs], y: &mut [f32]) {
        dequantize_grid(x, y, iq2_db);
    }

    fn vec_dot(x: &[BlockIq2Xs], y: &[BlockQ8K]) -> f32 {
        vec_dot_grid(x, y, 0.125)
    }

    fn bad_scale(b: &BlockIq2Xs) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockIq2Xs, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        grid_levels(b, iq2_db, s, sa, ma);
    }
}

pub struct Iq2S;

impl Iq2S {
    /// `quantize_row_iq2_s_impl` for one row (`qw` optional).
    fn quantize_row(x: &[f32], y: &mut [BlockIq2S], qw: Option<&[f32]>) -> Result<()> {
        let search = GridSearch {
            ty: Type::IQ2_S,
            tables: iq_tables::iq2s(),
            bits: 2,
            kmax: 3,
            nsteps: 9,
            step: 0.1,
            resnap_all: false,
        };
        let (mut weight, mut waux, mut xval) = ([0f32; 16], [0f32; 16], [0f32; 16]);
        let mut l = [0i8; 16];
        for (ibl, (xbl, yb)) in x.chunks_exact(QK_K).zip(y).enumerate() {
            *yb = BlockIq2S::zeroed();
            let mut scales = [0f32; 16];
            let mut max_scale = 0.0f32;
            let sigma2 = 2.0 * sum_squares(xbl) / QK_K as f32;
            for (ib, xb) in xbl.chunks_exact(16).enumerate() {
                match qw {
                    Some(qw) => {
                        let o = QK_K * ibl + 16 * ib;
                        imatrix_weights(&qw[o..o + 16], xb, sigma2, &mut weight);
                    }
                    None => {
                        for (w, &v) in weight.iter_mut().zip(xb) {
                            *w = fma(v, v, 0.25 * sigma2);
                        }
                    }
                }
                for (a, &w) in waux.iter_mut().zip(&weight) {
                    *a = w.sqrt();
                }
                let mut signs = [0u8; 2];
                split_group_signs(xb, &weight, &mut xval, &mut signs, false);
                let max = c_max_of(xval.iter().copied());
                if max < GROUP_MAX_EPS_IQ2_S {
                    scales[ib] = 0.0;
                    continue;
                }
                let mut on_grid = [true; 2];
                let mut scale = search.run(&xval, &weight, &waux, max, &mut l, &mut on_grid)?;
                if scale < 0.0 {
                    scale = -scale;
                    signs = signs.map(|s| !s);
                }
                for k in 0..2 {
                    let index = search.index_of(&l[8 * k..])?;
                    let i8 = 2 * ib + k;
                    yb.qs[i8] = index as u8;
                    yb.qh[i8 / 4] |= ((index >> 8) as u8) << (2 * (i8 % 4));
                    yb.qs[QK_K / 8 + i8] = signs[k];
                }
                if scale.is_nan() {
                    return Err(off_grid(Type::IQ2_S));
                }
                scales[ib] = scale;
                max_scale = c_max(max_scale, scale);
            }
            if max_scale == 0.0 {
                continue;
            }
            let d = max_scale / 31.0;
            yb.d = Half::from_f32(d * 0.9875);
            let id = 1.0 / d;
            for (ib, &s) in scales.iter().enumerate() {
                yb.scales[ib / 2] |= scale_code(id, s) << (4 * (ib % 2));
            }
        }
        Ok(())
    }
}

impl Format for Iq2S {
    const TYPE: Type = Type::IQ2_S;
    type Block = BlockIq2S;
    type DotBlock = BlockQ8K;

    /// `quantize_row_iq2_s_ref` (= `quantize_iq2_s` without importance matrix).
    fn quantize_ref(x: &[f32], y: &mut [BlockIq2S]) -> Result<()> {
        Self::quantize_row(x, y, None)
    }

    fn quantize_rows(x: &[f32], y: &mut [BlockIq2S], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        for_each_row::<Self>(x, y, n_per_row, |xr, yr| Self::quantize_row(xr, yr, imatrix))
    }

    fn dequantize(x: &[BlockIq2S], y: &mut [f32]) {
        dequantize_grid(x, y, iq2_db);
    }

    fn vec_dot(x: &[BlockIq2S], y: &[BlockQ8K]) -> f32 {
        vec_dot_grid(x, y, 0.125)
    }

    fn bad_scale(b: &BlockIq2S) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockIq2S, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        grid_levels(b, iq2_db, s, sa, ma);
    }
}
