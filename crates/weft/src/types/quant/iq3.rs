//! The 3-bit I-quants: groups of 4 magnitudes snapped onto a D4-lattice-derived grid.
//!
//! - IQ3_XXS (3.06 bpw): 8-bit grid indices (256 points); per 32 elements a u32 of 4 x 7
//!   sign bits (even parity) and a 4-bit scale.
//! - IQ3_S (3.44 bpw): 9-bit grid indices (512 points, the 9th bit in `qh`), full sign bytes,
//!   a 4-bit scale per 32 elements.

use bytemuck::{Pod, Zeroable};

use super::block::Half;
use super::grids::{IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS};
use super::iq_search::{
    dequantize_grid, grid_levels, off_grid, scale_code, split_group_signs, vec_dot_grid, GridBlock, GridSearch,
};
use super::iq_tables;
use super::k::BlockQ8K;
use super::scales::{c_max, c_max_of, imatrix_weights, sum_squares, GROUP_MAX_EPS_IQ3_XXS};
use super::{check_half, for_each_row, Format, LevelSign};
use crate::error::Result;
use crate::types::{Type, QK_K};

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockIq3Xxs {
    pub d: Half,
    /// 64 grid indices, then 8 little-endian u32 of signs and scale.
    pub qs: [u8; 3 * QK_K / 8],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockIq3S {
    pub d: Half,
    pub qs: [u8; QK_K / 4],
    pub qh: [u8; QK_K / 32],
    pub signs: [u8; QK_K / 8],
    pub scales: [u8; QK_K / 64],
}

const _: () = assert!(size_of::<BlockIq3Xxs>() == Type::IQ3_XXS.type_size());
const _: () = assert!(size_of::<BlockIq3S>() == Type::IQ3_S.type_size());

/// The IQ3 sub-block weights: importance-weighted `qw * sqrt(sigma2 + x^2)`, or `x^2`; and
/// their square roots.
fn iq3_weights(qw: Option<&[f32]>, x: &[f32], sigma2: f32, weight: &mut [f32; 32], waux: &mut [f32; 32]) {
    match qw {
        Some(q) => imatrix_weights(q, x, sigma2, weight),
        None => {
            for (w, &v) in weight.iter_mut().zip(x) {
                *w = v * v;
            }
        }
    }
    for (a, &w) in waux.iter_mut().zip(weight.iter()) {
        *a = w.sqrt();
    }
}

/// Two 4-wide grid entries as one 8-byte group.
fn pair(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

impl BlockIq3Xxs {
    /// The signs-and-scale word of sub-block `ib`.
    fn aux(&self, ib: usize) -> u32 {
        let o = QK_K / 4 + 4 * ib;
        u32::from_le_bytes([self.qs[o], self.qs[o + 1], self.qs[o + 2], self.qs[o + 3]])
    }
}

impl GridBlock for BlockIq3Xxs {
    fn d(&self) -> Half {
        self.d
    }
    fn group(&self, g: usize) -> (u64, u8) {
        let (ib, l) = (g / 4, g % 4);
        let q = &self.qs[8 * ib + 2 * l..];
        let entry = pair(IQ3XXS_GRID[q[0] as usize], IQ3XXS_GRID[q[1] as usize]);
        (entry, KSIGNS_IQ2XS[((self.aux(ib) >> (7 * l)) & 127) as usize])
    }
    fn code(&self, h: usize) -> u32 {
        self.aux(h / 2) >> 28
    }
}

impl GridBlock for BlockIq3S {
    fn d(&self) -> Half {
        self.d
    }
    /// 9-bit grid indices: 8 bits in `qs`, the 9th in bit `k` of `qh[ib]` for 4-wide entry `k`.
    fn group(&self, g: usize) -> (u64, u8) {
        let (ib, l) = (g / 4, g % 4);
        let qh = self.qh[ib] as usize;
        let i1 = self.qs[8 * ib + 2 * l] as usize | ((qh << (8 - 2 * l)) & 256);
        let i2 = self.qs[8 * ib + 2 * l + 1] as usize | ((qh << (7 - 2 * l)) & 256);
        (pair(IQ3S_GRID[i1], IQ3S_GRID[i2]), self.signs[4 * ib + l])
    }
    /// One 4-bit code per 32 elements, two per byte.
    fn code(&self, h: usize) -> u32 {
        let ib = h / 2;
        ((self.scales[ib / 2] >> (4 * (ib % 2))) & 0xf) as u32
    }
}

pub struct Iq3Xxs;

impl Iq3Xxs {
    /// `quantize_row_iq3_xxs_impl(256, ...)` for one row (`qw` optional).
    fn quantize_row(x: &[f32], y: &mut [BlockIq3Xxs], qw: Option<&[f32]>) -> Result<()> {
        let search = GridSearch {
            ty: Type::IQ3_XXS,
            tables: iq_tables::iq3xxs(),
            bits: 3,
            kmax: 8,
            nsteps: 15,
            step: 0.2,
            resnap_all: false,
        };
        let (mut weight, mut waux, mut xval) = ([0f32; 32], [0f32; 32], [0f32; 32]);
        // Kept across sub-blocks like ggml's buffers (ggml never initializes `is_on_grid`;
        // it only matters when no candidate scale fits, e.g. all-zero weights).
        let mut l = [0i8; 32];
        let mut on_grid = [true; 8];
        for (ibl, (xbl, yb)) in x.chunks_exact(QK_K).zip(y).enumerate() {
            yb.d = Half::ZERO;
            let mut q3 = [0u8; QK_K / 4];
            let mut scales_and_signs = [0u32; 8];
            let mut scales = [0f32; 8];
            let mut max_scale = 0.0f32;
            let sigma2 = 2.0 * sum_squares(xbl) / QK_K as f32;
            for (ib, xb) in xbl.chunks_exact(32).enumerate() {
                let o = QK_K * ibl + 32 * ib;
                iq3_weights(qw.map(|q| &q[o..o + 32]), xb, sigma2, &mut weight, &mut waux);
                let mut signs = [0u8; 4];
                split_group_signs(xb, &weight, &mut xval, &mut signs, true);
                let max = c_max_of(xval.iter().copied());
                if max < GROUP_MAX_EPS_IQ3_XXS {
                    scales[ib] = 0.0;
                    l = [0; 32];
                    continue;
                }
                let mut scale = search.run(&xval, &weight, &waux, max, &mut l, &mut on_grid)?;
                if scale < 0.0 {
                    scale = -scale;
                    signs = signs.map(|s| !s & 127);
                }
                for k in 0..8 {
                    q3[8 * ib + k] = search.index_of(&l[4 * k..])? as u8;
                }
                scales_and_signs[ib] =
                    signs[0] as u32 | (signs[1] as u32) << 7 | (signs[2] as u32) << 14 | (signs[3] as u32) << 21;
                if scale.is_nan() {
                    return Err(off_grid(Type::IQ3_XXS));
                }
                scales[ib] = scale;
                max_scale = c_max(max_scale, scale);
            }
            if max_scale == 0.0 {
                yb.qs = [0; 3 * QK_K / 8];
                continue;
            }
            let d = max_scale / 31.0;
            // ggml: "small improvement via this fudge factor".
            yb.d = Half::from_f32(d * 1.0125);
            let id = 1.0 / d;
            for (ss, &s) in scales_and_signs.iter_mut().zip(&scales) {
                *ss |= (scale_code(id, s) as u32) << 28;
            }
            yb.qs[..QK_K / 4].copy_from_slice(&q3);
            for (o, w) in yb.qs[QK_K / 4..].chunks_exact_mut(4).zip(&scales_and_signs) {
                o.copy_from_slice(&w.to_le_bytes());
            }
        }
        Ok(())
    }
}

impl Format for Iq3Xxs {
    const TYPE: Type = Type::IQ3_XXS;
    type Block = BlockIq3Xxs;
    type DotBlock = BlockQ8K;

    fn quantize_ref(x: &[f32], y: &mut [BlockIq3Xxs]) -> Result<()> {
        Self::quantize_row(x, y, None)
    }

    fn quantize_rows(x: &[f32], y: &mut [BlockIq3Xxs], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        for_each_row::<Self>(x, y, n_per_row, |xr, yr| Self::quantize_row(xr, yr, imatrix))
    }

    fn dequantize(x: &[BlockIq3Xxs], y: &mut [f32]) {
        dequantize_grid(x, y, |d, code| d * (0.5 + code as f32) * 0.5);
    }

    fn vec_dot(x: &[BlockIq3Xxs], y: &[BlockQ8K]) -> f32 {
        vec_dot_grid(x, y, 0.25)
    }

    fn bad_scale(b: &BlockIq3Xxs) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockIq3Xxs, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        grid_levels(b, |d, code| d * (0.5 + code as f32) * 0.5, s, sa, ma);
    }
}

pub struct Iq3S;

/// Elements per IQ3_S sub-block (ggml's `IQ3S_BLOCK_SIZE`).
const IQ3S_BS: usize = 32;

impl Iq3S {
    /// `quantize_iq3_s` / `quantize_row_iq3_s_impl` over whole rows (`qw` optional).
    fn quantize_row(x: &[f32], y: &mut [BlockIq3S], qw: Option<&[f32]>) -> Result<()> {
        let search = GridSearch {
            ty: Type::IQ3_S,
            tables: iq_tables::iq3s(),
            bits: 3,
            kmax: 8,
            nsteps: 9,
            step: 0.2,
            resnap_all: true,
        };
        let (mut weight, mut waux, mut xval) = ([0f32; 32], [0f32; 32], [0f32; 32]);
        let mut l = [0i8; 32];
        for (ibl, (xbl, yb)) in x.chunks_exact(QK_K).zip(y).enumerate() {
            *yb = BlockIq3S::zeroed();
            let mut scales = [0f32; QK_K / IQ3S_BS];
            let mut max_scale = 0.0f32;
            // Write cursors into qs and signs. ggml advances them only after a sub-block is
            // stored, so an all-zero sub-block shifts the following ones (qh and the scales
            // are indexed by sub-block and do not shift); kept for bit-exactness.
            let (mut qs_at, mut signs_at) = (0usize, 0usize);
            let sigma2 = 2.0 * sum_squares(xbl) / QK_K as f32;
            for (ib, xb) in xbl.chunks_exact(IQ3S_BS).enumerate() {
                let o = QK_K * ibl + IQ3S_BS * ib;
                iq3_weights(qw.map(|q| &q[o..o + IQ3S_BS]), xb, sigma2, &mut weight, &mut waux);
                let mut signs = [0u8; IQ3S_BS / 8];
                split_group_signs(xb, &weight, &mut xval, &mut signs, false);
                let max = c_max_of(xval.iter().copied());
                if max == 0.0 {
                    scales[ib] = 0.0;
                    continue;
                }
                let mut on_grid = [false; IQ3S_BS / 4];
                let mut scale = search.run(&xval, &weight, &waux, max, &mut l, &mut on_grid)?;
                if scale < 0.0 {
                    scale = -scale;
                    signs = signs.map(|s| !s);
                }
                for k in 0..IQ3S_BS / 4 {
                    let index = search.index_of(&l[4 * k..])?;
                    yb.qs[qs_at + k] = index as u8;
                    let bit = ib * (IQ3S_BS / 4) + k;
                    yb.qh[bit / 8] |= ((index >> 8) as u8) << (bit % 8);
                }
                qs_at += IQ3S_BS / 4;
                yb.signs[signs_at..signs_at + IQ3S_BS / 8].copy_from_slice(&signs);
                signs_at += IQ3S_BS / 8;
                if scale.is_nan() {
                    return Err(off_grid(Type::IQ3_S));
                }
                scales[ib] = scale;
                max_scale = c_max(max_scale, scale);
            }
            if max_scale == 0.0 {
                continue;
            }
            let d = max_scale / 31.0;
            yb.d = Half::from_f32(d * 1.033);
            let id = 1.0 / d;
            for (s, pair) in yb.scales.iter_mut().zip(scales.chunks_exact(2)) {
                *s = scale_code(id, pair[0]) | scale_code(id, pair[1]) << 4;
            }
        }
        Ok(())
    }
}

impl Format for Iq3S {
    const TYPE: Type = Type::IQ3_S;
    type Block = BlockIq3S;
    type DotBlock = BlockQ8K;

    /// `quantize_row_iq3_s_ref` (= `quantize_iq3_s` of one row without importance matrix).
    fn quantize_ref(x: &[f32], y: &mut [BlockIq3S]) -> Result<()> {
        Self::quantize_row(x, y, None)
    }

    fn quantize_rows(x: &[f32], y: &mut [BlockIq3S], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        for_each_row::<Self>(x, y, n_per_row, |xr, yr| Self::quantize_row(xr, yr, imatrix))
    }

    fn dequantize(x: &[BlockIq3S], y: &mut [f32]) {
        dequantize_grid(x, y, |d, code| d * (1 + 2 * code) as f32);
    }

    fn vec_dot(x: &[BlockIq3S], y: &[BlockQ8K]) -> f32 {
        vec_dot_grid(x, y, 1.0)
    }

    fn bad_scale(b: &BlockIq3S) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockIq3S, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        grid_levels(b, |d, code| d * (1 + 2 * code) as f32, s, sa, ma);
    }
}
