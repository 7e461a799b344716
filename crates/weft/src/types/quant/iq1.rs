//! The 1-bit I-quants: groups of 8 ternary values (-1, 0, +1) from a 2048-point grid,
//! shifted by +-IQ1_DELTA, times a 3-bit sub-block scale.
//!
//! - IQ1_S (1.56 bpw): per 32 elements a u16 `qh` with the high 3 bits of the 4 grid
//!   indices, a 3-bit scale and the sign of the shift.
//! - IQ1_M (1.75 bpw): per 16 elements a 3-bit scale; per 8 elements a shift sign; the
//!   block's f16 scale is spread over the top nibbles of the four u16 scale words.
//!
//! Both quantizers solve the weighted least-squares problem exactly: with 3 levels, sorting
//! the values and trying every pair of split points covers all assignments.

use bytemuck::{Pod, Zeroable};

use super::block::{Half, LeU16};
use super::grid_iq1s::IQ1S_GRID;
use super::iq_search::{level_code, off_grid};
use super::iq_tables::{self, pack_levels, GridTables, Lookup};
use super::k::BlockQ8K;
use super::scales::{
    c_max, c_max_of, fma, imatrix_weights, stable_sort_by_value, sum_squares, GROUP_MAX_EPS_IQ1_M, GROUP_MAX_EPS_IQ1_S,
};
use super::{check_half, Format, LevelSign};
use crate::error::{Error, Result};
use crate::types::{Type, QK_K};

/// ggml's `IQ1S_DELTA` (= `IQ1M_DELTA`): the grid values are shifted by this.
const IQ1_DELTA: f32 = 0.125;

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockIq1S {
    pub d: Half,
    pub qs: [u8; QK_K / 8],
    pub qh: [LeU16; QK_K / 32],
}

#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub struct BlockIq1M {
    pub qs: [u8; QK_K / 8],
    pub qh: [u8; QK_K / 16],
    /// Four little-endian u16: 3-bit scales in the low 12 bits, the f16 block scale in the
    /// top nibbles (see `iq1m_scale`).
    pub scales: [u8; QK_K / 32],
}

const _: () = assert!(size_of::<BlockIq1S>() == Type::IQ1_S.type_size());
const _: () = assert!(size_of::<BlockIq1M>() == Type::IQ1_M.type_size());

/// Shifted levels for a positive (`X_P`) and negative (`X_M`) shift: -1, 0, 1 plus or minus
/// the delta.
const X_P: [f32; 3] = [-1.0 + IQ1_DELTA, IQ1_DELTA, 1.0 + IQ1_DELTA];
const X_M: [f32; 3] = [-1.0 - IQ1_DELTA, -IQ1_DELTA, 1.0 - IQ1_DELTA];

/// Value `j` (-1, 0 or 1) of grid entry `index`.
#[inline]
fn grid_value(index: usize, j: usize) -> i8 {
    (IQ1S_GRID[index] >> (8 * j)) as u8 as i8
}

/// `iq1_find_best_neighbour2`: among `candidates`, the grid point closest to `x` at `scale`
/// with shifted levels `xg`; writes its levels (0..3) to `l`. ggml falls back to scanning the
/// whole grid when no candidate scores below `f32::MAX`, which only non-finite input can
/// cause (and where its fallback reads out of bounds); weft reports an error instead.
fn best_neighbour(
    t: &GridTables<8>,
    candidates: &[u16],
    x: &[f32],
    weight: &[f32],
    scale: f32,
    xg: &[f32; 3],
    l: &mut [i8],
) -> Option<usize> {
    let mut best = f32::MAX;
    let mut index = None;
    for &j in candidates {
        let pg = &t.grid[j as usize];
        let mut d2 = 0.0f32;
        for i in 0..8 {
            let q = xg[((pg[i] - 1) / 2) as usize];
            let diff = fma(scale, q, -x[i]);
            d2 = fma(weight[i] * diff, diff, d2);
        }
        if d2 < best {
            best = d2;
            index = Some(j as usize);
        }
    }
    let index = index?;
    l[..8].copy_from_slice(&t.levels(index));
    Some(index)
}

/// Weights of a sub-block: importance-weighted, or `x^2` without an importance matrix.
fn iq1_weights(qw: Option<&[f32]>, x: &[f32], sigma2: f32, weight: &mut [f32]) {
    match qw {
        Some(q) => imatrix_weights(q, x, sigma2, weight),
        None => {
            for (w, &v) in weight.iter_mut().zip(x) {
                *w = v * v;
            }
        }
    }
}

/// The elements of a sub-block sorted by value (stable), as indices.
fn sorted_indices(x: &[f32]) -> Vec<usize> {
    let mut pairs: Vec<(f32, usize)> = x.iter().copied().zip(0..).collect();
    stable_sort_by_value(&mut pairs);
    pairs.into_iter().map(|(_, i)| i).collect()
}

/// Levels from the best split: sorted positions below `i1` get 0, below `i2` 1, the rest 2.
fn split_levels(order: &[usize], i1: usize, i2: usize, l: &mut [i8]) {
    for (j, &i) in order.iter().enumerate() {
        l[i] = if j < i1 {
            0
        } else if j < i2 {
            1
        } else {
            2
        };
    }
}

/// Snaps each group of 8 levels to the grid (`xg(k)` gives group `k`'s shifted levels).
/// Returns the grid indices and whether all were on the grid already.
fn snap_groups<const G: usize>(
    ty: Type,
    t: &GridTables<8>,
    x: &[f32],
    weight: &[f32],
    scale: f32,
    l: &mut [i8],
    xg: impl Fn(usize) -> &'static [f32; 3],
) -> Result<([usize; G], bool)> {
    let mut index = [0usize; G];
    let mut all_on_grid = true;
    for (k, ix) in index.iter_mut().enumerate() {
        let g = 8 * k..8 * k + 8;
        *ix = match t.lookup(pack_levels(&l[g.clone()], 2)) {
            Lookup::OnGrid(i) => i,
            Lookup::Neighbours(nb) => {
                all_on_grid = false;
                best_neighbour(t, nb, &x[g.clone()], &weight[g.clone()], scale, xg(k), &mut l[g])
                    .ok_or_else(|| off_grid(ty))?
            }
        };
    }
    Ok((index, all_on_grid))
}

/// The refit of the scale after snapping: `sumqx / sumq2` of the grid values, if positive
/// (a scalar loop in GCC's build: the sums fuse).
fn refit<const G: usize>(
    index: &[usize; G],
    x: &[f32],
    weight: &[f32],
    xg: impl Fn(usize) -> &'static [f32; 3],
) -> Option<f32> {
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for (k, &ix) in index.iter().enumerate() {
        for j in 0..8 {
            let q = xg(k)[(grid_value(ix, j) + 1) as usize];
            let wq = weight[8 * k + j] * q;
            sumqx = fma(wq, x[8 * k + j], sumqx);
            sumq2 = fma(wq, q, sumq2);
        }
    }
    (sumqx > 0.0 && sumq2 > 0.0).then(|| sumqx / sumq2)
}

fn no_split(ty: Type) -> Error {
    Error::invalid(format!("{ty}: quantization found no usable scale (non-finite input?)"))
}

pub struct Iq1S;

impl Iq1S {
    /// `quantize_iq1_s`: `shifts` persists across blocks and rows as ggml's buffer does (it is
    /// read back for all-zero sub-blocks, which do not set it).
    fn quantize(x: &[f32], y: &mut [BlockIq1S], n_per_row: usize, qw: &[f32]) -> Result<()> {
        const BS: usize = 32;
        let t = iq_tables::iq1();
        let mut shifts = [0i8; QK_K / BS];
        let mut weight = [0f32; BS];
        let mut l = [0i8; BS];
        let blocks_per_row = n_per_row / QK_K;
        for (n, (xbl, yb)) in x.chunks_exact(QK_K).zip(y).enumerate() {
            let ibl = n % blocks_per_row;
            *yb = BlockIq1S::zeroed();
            let mut scales = [0f32; QK_K / BS];
            let mut max_scale = 0.0f32;
            let sigma2 = 2.0 * sum_squares(xbl) / QK_K as f32;
            for (ib, xb) in xbl.chunks_exact(BS).enumerate() {
                let o = QK_K * ibl + BS * ib;
                imatrix_weights(&qw[o..o + BS], xb, sigma2, &mut weight);
                let max = c_max_of(xb.iter().map(|v| v.abs()));
                if max < GROUP_MAX_EPS_IQ1_S {
                    // (ggml also sets the levels to 1 here; nothing reads them.)
                    scales[ib] = 0.0;
                    continue;
                }
                let order = sorted_indices(xb);
                let (mut sumx, mut sumw) = ([0f32; BS + 1], [0f32; BS + 1]);
                for (j, &i) in order.iter().enumerate() {
                    sumx[j + 1] = fma(weight[i], xb[i], sumx[j]);
                    sumw[j + 1] = sumw[j] + weight[i];
                }
                // Every split (i1, i2) of the sorted values into levels 0/1/2, with either
                // shift; keep the one with the largest sumqx^2 / sumq2.
                let mut best_score = -f32::MIN_POSITIVE;
                let mut scale = max;
                let mut best: Option<(usize, usize, i8)> = None;
                for i1 in 0..=BS {
                    for i2 in i1..=BS {
                        for (xx, shift) in [(&X_P, 1i8), (&X_M, -1)] {
                            // GCC shares the middle products between the two shifts (so
                            // they do not fuse) and fuses the last term of each sum.
                            let (a, b, c) = (sumx[i1] - sumx[0], sumx[i2] - sumx[i1], sumx[BS] - sumx[i2]);
                            let (aw, bw, cw) = (sumw[i1] - sumw[0], sumw[i2] - sumw[i1], sumw[BS] - sumw[i2]);
                            let sumqx = fma(c, xx[2], a * xx[0] + b * xx[1]);
                            let sumq2 = fma(cw * xx[2], xx[2], aw * xx[0] * xx[0] + bw * xx[1] * xx[1]);
                            if sumq2 > 0.0 && sumqx * sumqx > best_score * sumq2 {
                                scale = sumqx / sumq2;
                                best_score = scale * sumqx;
                                best = Some((i1, i2, shift));
                            }
                        }
                    }
                }
                let (i1, i2, mut shift) = best.ok_or_else(|| no_split(Type::IQ1_S))?;
                split_levels(&order, i1, i2, &mut l);
                if scale < 0.0 {
                    for v in l.iter_mut() {
                        *v = 2 - *v;
                    }
                    scale = -scale;
                    shift = -shift;
                }
                let xx: &'static [f32; 3] = if shift == 1 { &X_P } else { &X_M };
                let (index, all_on_grid) = snap_groups::<4>(Type::IQ1_S, t, xb, &weight, scale, &mut l, |_| xx)?;
                if !all_on_grid {
                    if let Some(s) = refit(&index, xb, &weight, |_| xx) {
                        scale = s;
                    }
                }
                let mut h = 0u16;
                for (k, &ix) in index.iter().enumerate() {
                    yb.qs[4 * ib + k] = ix as u8;
                    h |= ((ix >> 8) as u16) << (3 * k);
                }
                yb.qh[ib] = LeU16::new(h);
                if scale.is_nan() {
                    return Err(off_grid(Type::IQ1_S));
                }
                scales[ib] = scale;
                shifts[ib] = shift;
                max_scale = c_max(max_scale, scale);
            }
            if max_scale == 0.0 {
                continue;
            }
            let d = max_scale / 15.0;
            // ggml: "1.125f is another fudge factor. Don't ask me why it is needed."
            yb.d = Half::from_f32(d * 1.125);
            let id = 1.0 / d;
            for ib in 0..QK_K / BS {
                let mut code = level_code(id, scales[ib]).clamp(0, 7) as u16;
                if shifts[ib] == -1 {
                    code |= 8;
                }
                yb.qh[ib] = LeU16::new(yb.qh[ib].get() | code << 12);
            }
        }
        Ok(())
    }
}

impl Format for Iq1S {
    const TYPE: Type = Type::IQ1_S;
    type Block = BlockIq1S;
    type DotBlock = BlockQ8K;

    fn quantize_ref(_x: &[f32], _y: &mut [BlockIq1S]) -> Result<()> {
        Err(Error::unsupported(
            "quantizeRow: iq1_s has no reference quantizer in ggml; it needs an importance \
             matrix (use quantizeChunk with one)",
        ))
    }

    fn quantize_rows(x: &[f32], y: &mut [BlockIq1S], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        let qw = imatrix.ok_or_else(|| Error::invalid("iq1_s requires an importance matrix"))?;
        Self::quantize(x, y, n_per_row, qw)
    }

    fn dequantize(x: &[BlockIq1S], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
            let d = b.d.to_f32();
            for (ib, o32) in out.chunks_exact_mut(32).enumerate() {
                let qh = b.qh[ib].get();
                let dl = d * (2 * ((qh >> 12) & 7) + 1) as f32;
                let delta = if qh & 0x8000 != 0 { -IQ1_DELTA } else { IQ1_DELTA };
                for (l, o8) in o32.chunks_exact_mut(8).enumerate() {
                    let index = b.qs[4 * ib + l] as usize | (((qh >> (3 * l)) & 7) as usize) << 8;
                    for (j, o) in o8.iter_mut().enumerate() {
                        *o = dl * (grid_value(index, j) as f32 + delta);
                    }
                }
            }
        }
    }

    fn vec_dot(x: &[BlockIq1S], y: &[BlockQ8K]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let (mut sumi, mut sumi1) = (0i32, 0i32);
            for (ib, q32) in by.qs.chunks_exact(32).enumerate() {
                let qh = bx.qh[ib].get();
                let ls = 2 * ((qh >> 12) & 7) as i32 + 1;
                let delta = if qh & 0x8000 != 0 { -1 } else { 1 };
                let mut lsum = 0i32;
                for (l, q8) in q32.chunks_exact(8).enumerate() {
                    let index = bx.qs[4 * ib + l] as usize | (((qh >> (3 * l)) & 7) as usize) << 8;
                    for (j, &q) in q8.iter().enumerate() {
                        lsum += q as i32 * grid_value(index, j) as i32;
                    }
                }
                sumi += ls * lsum;
                sumi1 += ls * delta * (by.bsums[2 * ib].get() as i32 + by.bsums[2 * ib + 1].get() as i32);
            }
            sumf += bx.d.to_f32() * by.d.get() * (sumi as f32 + IQ1_DELTA * sumi1 as f32);
        }
        sumf
    }

    fn bad_scale(b: &BlockIq1S) -> Option<(&'static str, f32)> {
        check_half("d", b.d)
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockIq1S, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        let d = b.d.to_f32();
        for ib in 0..QK_K / 32 {
            let qh = b.qh[ib].get();
            let dl = d * (2 * ((qh >> 12) & 7) + 1) as f32;
            let delta = if qh & 0x8000 != 0 { -IQ1_DELTA } else { IQ1_DELTA };
            for l in 0..4 {
                let index = b.qs[4 * ib + l] as usize | (((qh >> (3 * l)) & 7) as usize) << 8;
                for j in 0..8 {
                    s[32 * ib + 8 * l + j] = grid_value(index, j);
                }
            }
            sa[2 * ib..2 * ib + 2].fill(dl);
            ma[2 * ib..2 * ib + 2].fill(dl * delta);
        }
    }
}

/// The f16 scale of an IQ1_M block, assembled from the top nibbles of the scale words.
fn iq1m_scale(b: &BlockIq1M) -> Half {
    let sc = iq1m_words(b);
    Half::from_bits((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000))
}

fn iq1m_words(b: &BlockIq1M) -> [u16; 4] {
    std::array::from_fn(|i| u16::from_le_bytes([b.scales[2 * i], b.scales[2 * i + 1]]))
}

/// The two 3-bit scales of 32-element sub-block `ib` (for its 16-element halves).
fn iq1m_sub_scales(sc: &[u16; 4], ib: usize) -> [i32; 2] {
    let w = sc[ib / 2] >> (6 * (ib % 2));
    [2 * (w & 7) as i32 + 1, 2 * ((w >> 3) & 7) as i32 + 1]
}

/// Grid index and shift sign (true = negative) of 8-element group `g` (0..32).
fn iq1m_group(b: &BlockIq1M, g: usize) -> (usize, bool) {
    let qh = b.qh[g / 2] as usize;
    let shift = 8 - 4 * (g % 2);
    let index = b.qs[g] as usize | ((qh << shift) & 0x700);
    (index, qh & (0x08 << (4 * (g % 2))) != 0)
}

/// The shifted levels of 8-element group `k` (0 or 1) of a 16-element IQ1_M sub-block with
/// shift pattern `best_k`: bit 1 of the pattern is the first group's sign, bit 0 the second's.
fn iq1m_levels(best_k: i8, k: usize) -> &'static [f32; 3] {
    let negative = if k == 0 { best_k >= 2 } else { best_k % 2 == 1 };
    if negative {
        &X_M
    } else {
        &X_P
    }
}

pub struct Iq1M;

impl Iq1M {
    /// `quantize_iq1_m` (`qw` optional). `shifts` persists like ggml's buffer, see
    /// [`Iq1S::quantize`].
    fn quantize(x: &[f32], y: &mut [BlockIq1M], n_per_row: usize, qw: Option<&[f32]>) -> Result<()> {
        const BS: usize = 16;
        const MASKS: [u8; 4] = [0x00, 0x80, 0x08, 0x88];
        let t = iq_tables::iq1();
        let mut shifts = [0i8; QK_K / BS];
        let mut weight = [0f32; BS];
        let mut l = [0i8; BS];
        let blocks_per_row = n_per_row / QK_K;
        for (n, (xbl, yb)) in x.chunks_exact(QK_K).zip(y).enumerate() {
            let ibl = n % blocks_per_row;
            *yb = BlockIq1M::zeroed();
            let mut scales = [0f32; QK_K / BS];
            let mut max_scale = 0.0f32;
            let sigma2 = 2.0 * sum_squares(xbl) / QK_K as f32;
            let sub_qw = |ib: usize| qw.map(|q| &q[QK_K * ibl + BS * ib..QK_K * ibl + BS * ib + BS]);
            for (ib, xb) in xbl.chunks_exact(BS).enumerate() {
                iq1_weights(sub_qw(ib), xb, sigma2, &mut weight);
                let max = c_max_of(xb.iter().map(|v| v.abs()));
                if max < GROUP_MAX_EPS_IQ1_M {
                    // (ggml also sets the levels to 1 here; nothing reads them.)
                    scales[ib] = 0.0;
                    continue;
                }
                let order = sorted_indices(xb);
                // Every split into levels 0/1/2 and each of the 4 shift patterns (the two
                // 8-element halves each shift either way).
                let mut best_score = -f32::MIN_POSITIVE;
                let mut scale = max;
                let mut best: Option<(usize, usize, i8)> = None;
                for i1 in 0..=BS {
                    for i2 in i1..=BS {
                        let (mut sumqx, mut sumq2) = ([0f32; 4], [0f32; 4]);
                        for (j, &i) in order.iter().enumerate() {
                            let level = if j < i1 {
                                0
                            } else if j < i2 {
                                1
                            } else {
                                2
                            };
                            for k in 0..4i8 {
                                let xx = iq1m_levels(k, i / (BS / 2))[level];
                                let wx = weight[i] * xx;
                                sumqx[k as usize] += wx * xb[i];
                                // Only the middle level's products fuse: GCC shares the
                                // others between sums updated in different branches.
                                sumq2[k as usize] = if level == 1 {
                                    fma(wx, xx, sumq2[k as usize])
                                } else {
                                    sumq2[k as usize] + wx * xx
                                };
                            }
                        }
                        for k in 0..4 {
                            if sumq2[k] > 0.0 && sumqx[k] * sumqx[k] > best_score * sumq2[k] {
                                scale = sumqx[k] / sumq2[k];
                                best_score = scale * sumqx[k];
                                best = Some((i1, i2, k as i8));
                            }
                        }
                    }
                }
                let (i1, i2, mut best_k) = best.ok_or_else(|| no_split(Type::IQ1_M))?;
                split_levels(&order, i1, i2, &mut l);
                if scale < 0.0 {
                    for v in l.iter_mut() {
                        *v = 2 - *v;
                    }
                    scale = -scale;
                    best_k = 3 - best_k;
                }
                let xg = |k: usize| iq1m_levels(best_k, k);
                let (index, all_on_grid) = snap_groups::<2>(Type::IQ1_M, t, xb, &weight, scale, &mut l, xg)?;
                if !all_on_grid {
                    if let Some(s) = refit(&index, xb, &weight, xg) {
                        scale = s;
                    }
                }
                yb.qs[2 * ib] = index[0] as u8;
                yb.qs[2 * ib + 1] = index[1] as u8;
                yb.qh[ib] = ((index[0] >> 8) | ((index[1] >> 8) << 4)) as u8;
                if scale.is_nan() {
                    return Err(off_grid(Type::IQ1_M));
                }
                scales[ib] = scale;
                shifts[ib] = best_k;
                max_scale = c_max(max_scale, scale);
            }
            if max_scale == 0.0 {
                continue;
            }
            // Quantize the sub-block scales, then refit the block scale to the final levels.
            let mut sc = [0u16; 4];
            let mut d = max_scale / 15.0;
            let id = 1.0 / d;
            let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
            for (ib, xb) in xbl.chunks_exact(BS).enumerate() {
                let code = level_code(id, scales[ib]).clamp(0, 7);
                sc[ib / 4] |= (code as u16) << (3 * (ib % 4));
                // An out-of-range shift can only come from a corrupted state; mask it.
                yb.qh[ib] |= MASKS[(shifts[ib] & 3) as usize];
                iq1_weights(sub_qw(ib), xb, sigma2, &mut weight);
                for k in 0..2 {
                    let xx = iq1m_levels(shifts[ib], k);
                    let (index, _) = iq1m_group(yb, 2 * ib + k);
                    for j in 0..8 {
                        let q = xx[(grid_value(index, j) + 1) as usize] * (2 * code + 1) as f32;
                        let wq = weight[8 * k + j] * q;
                        sumqx = fma(wq, xb[8 * k + j], sumqx);
                        sumq2 = fma(wq, q, sumq2);
                    }
                }
            }
            if sumq2 > 0.0 {
                d = sumqx / sumq2;
            }
            // ggml: "1.1125f is another fudge factor. Don't ask me why it is needed."
            let s = Half::from_f32(d * 1.1125).bits();
            sc[0] |= (s & 0x000f) << 12;
            sc[1] |= (s & 0x00f0) << 8;
            sc[2] |= (s & 0x0f00) << 4;
            sc[3] |= s & 0xf000;
            for (o, w) in yb.scales.chunks_exact_mut(2).zip(&sc) {
                o.copy_from_slice(&w.to_le_bytes());
            }
        }
        Ok(())
    }
}

impl Format for Iq1M {
    const TYPE: Type = Type::IQ1_M;
    type Block = BlockIq1M;
    type DotBlock = BlockQ8K;

    /// ggml has no `quantize_row_iq1_m_ref`; this is `quantize_iq1_m` without an importance
    /// matrix (which ggml supports, unlike for IQ1_S).
    fn quantize_ref(x: &[f32], y: &mut [BlockIq1M]) -> Result<()> {
        Self::quantize(x, y, x.len(), None)
    }

    fn quantize_rows(x: &[f32], y: &mut [BlockIq1M], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        Self::quantize(x, y, n_per_row, imatrix)
    }

    fn dequantize(x: &[BlockIq1M], y: &mut [f32]) {
        for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
            let d = iq1m_scale(b).to_f32();
            let sc = iq1m_words(b);
            for (ib, o32) in out.chunks_exact_mut(32).enumerate() {
                let ls = iq1m_sub_scales(&sc, ib);
                for (l, o8) in o32.chunks_exact_mut(8).enumerate() {
                    let dl = d * ls[l / 2] as f32;
                    let (index, neg) = iq1m_group(b, 4 * ib + l);
                    let delta = if neg { -IQ1_DELTA } else { IQ1_DELTA };
                    for (j, o) in o8.iter_mut().enumerate() {
                        *o = dl * (grid_value(index, j) as f32 + delta);
                    }
                }
            }
        }
    }

    fn vec_dot(x: &[BlockIq1M], y: &[BlockQ8K]) -> f32 {
        let mut sumf = 0.0f32;
        for (bx, by) in x.iter().zip(y) {
            let sc = iq1m_words(bx);
            let (mut sumi1, mut sumi2) = (0i32, 0i32);
            for (ib, q32) in by.qs.chunks_exact(32).enumerate() {
                let (mut sum1, mut sum2) = ([0i32; 2], [0i32; 2]);
                for (l, q8) in q32.chunks_exact(8).enumerate() {
                    let (index, neg) = iq1m_group(bx, 4 * ib + l);
                    let delta = if neg { -1 } else { 1 };
                    let (mut lsum1, mut lsum2) = (0i32, 0i32);
                    for (j, &q) in q8.iter().enumerate() {
                        lsum1 += q as i32 * grid_value(index, j) as i32;
                        lsum2 += q as i32;
                    }
                    sum1[l / 2] += lsum1;
                    sum2[l / 2] += lsum2 * delta;
                }
                let ls = iq1m_sub_scales(&sc, ib);
                sumi1 += sum1[0] * ls[0] + sum1[1] * ls[1];
                sumi2 += sum2[0] * ls[0] + sum2[1] * ls[1];
            }
            sumf += iq1m_scale(bx).to_f32() * by.d.get() * (sumi1 as f32 + IQ1_DELTA * sumi2 as f32);
        }
        sumf
    }

    fn bad_scale(b: &BlockIq1M) -> Option<(&'static str, f32)> {
        check_half("d", iq1m_scale(b))
    }

    const LEVELS: Option<LevelSign> = Some(LevelSign::Signed);
    fn levels(b: &BlockIq1M, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
        // The shift is per 8 elements, finer than the maps: levels are 8 * (grid +- 1/8),
        // exact integers, and the maps carry d * scale / 8.
        let d = iq1m_scale(b).to_f32();
        let sc = iq1m_words(b);
        for ib in 0..QK_K / 32 {
            let ls = iq1m_sub_scales(&sc, ib);
            for l in 0..4 {
                let (index, neg) = iq1m_group(b, 4 * ib + l);
                for j in 0..8 {
                    s[32 * ib + 8 * l + j] = 8 * grid_value(index, j) + if neg { -1 } else { 1 };
                }
            }
            for h in 0..2 {
                sa[2 * ib + h] = d * ls[h] as f32 * IQ1_DELTA;
                ma[2 * ib + h] = 0.0;
            }
        }
    }
}
