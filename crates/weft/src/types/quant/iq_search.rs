//! Pieces the grid-based I-quant quantizers (IQ2_XXS/XS/S, IQ3_XXS/S) share: sign
//! extraction, the scale search that snaps groups of levels onto the grid, the 4-bit
//! sub-block scale code, and the signed grid lookups of their dequantizers and dot products.

use super::block::Half;
use super::iq_tables::{best_neighbour, pack_levels, GridTables, Lookup};
use super::k::BlockQ8K;
use super::scales::{fma, nearest_int_prod};
use crate::error::{Error, Result};
use crate::types::{Type, QK_K};

/// The error for ggml's `GGML_ABORT`s in the grid quantizers, which only non-finite input
/// (or an all-zero importance matrix) can reach.
pub fn off_grid(ty: Type) -> Error {
    Error::invalid(format!(
        "{ty}: quantization found no grid point (the input or the importance matrix has \
         non-finite values, or weights that are all zero)"
    ))
}

/// Splits 8 values into magnitudes (`xval`) and sign bits. With `even_parity` (the formats
/// that store only 7 sign bits and infer the 8th), an odd number of negatives is fixed by
/// flipping the element that costs least (smallest `weight * x^2`); the returned byte then
/// holds the 7 stored bits.
pub fn split_signs(x: &[f32], weight: &[f32], xval: &mut [f32], even_parity: bool) -> u8 {
    let mut s = 0u8;
    let mut nflip = 0;
    for i in 0..8 {
        if x[i] >= 0.0 {
            xval[i] = x[i];
        } else {
            xval[i] = -x[i];
            nflip += 1;
            s |= 1 << i;
        }
    }
    if !even_parity {
        return s;
    }
    if nflip % 2 == 1 {
        let mut imin = 0;
        let mut min = weight[0] * x[0] * x[0];
        for i in 1..8 {
            let ax = weight[i] * x[i] * x[i];
            if ax < min {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= 1 << imin;
    }
    s & 127
}

/// [`split_signs`] for each group of 8 of a sub-block: magnitudes into `xval`, one sign byte
/// per group into `signs`.
pub fn split_group_signs(x: &[f32], weight: &[f32], xval: &mut [f32], signs: &mut [u8], even_parity: bool) {
    for (k, s) in signs.iter_mut().enumerate() {
        let g = 8 * k..8 * k + 8;
        *s = split_signs(&x[g.clone()], &weight[g.clone()], &mut xval[g], even_parity);
    }
}

/// The shape of one grid quantizer's scale search.
pub struct GridSearch<'a, const N: usize> {
    pub ty: Type,
    pub tables: &'a GridTables<N>,
    /// Bits per level in the map index (2 for the 8-wide grids, 3 for the 4-wide ones).
    pub bits: u32,
    /// Levels run 0..kmax (odd values 1, 3, .., 2*kmax - 1).
    pub kmax: i32,
    /// Candidate inverse scales `(2*kmax - 1 + is*step) / max` for `is` in -nsteps..=nsteps.
    pub nsteps: i32,
    pub step: f32,
    /// Whether the final snap revisits every group (IQ3_S) or only those the best candidate
    /// left off the grid.
    pub resnap_all: bool,
}

impl<const N: usize> GridSearch<'_, N> {
    /// Snaps the levels of group `k` (at inverse scale `id`) to the grid: levels in `l`,
    /// returns whether they were on it already. Off-grid groups take the best neighbour at
    /// `scale`.
    pub fn snap(&self, xval: &[f32], waux: &[f32], id: f32, scale: f32, l: &mut [i8]) -> Result<bool> {
        for (li, &v) in l.iter_mut().zip(xval).take(N) {
            *li = level_code(id, v).clamp(0, self.kmax - 1) as i8;
        }
        match self.tables.lookup(pack_levels(&l[..N], self.bits)) {
            Lookup::OnGrid(_) => Ok(true),
            Lookup::Neighbours(nb) => {
                best_neighbour(self.tables, nb, xval, waux, scale, l).map(|_| false).ok_or_else(|| off_grid(self.ty))
            }
        }
    }

    /// The scale search of `quantize_row_iq2_xs_impl` and its relatives for one sub-block:
    /// tries `2*nsteps + 1` scales, keeps the levels with the best weighted fit in `l` (and
    /// which groups were on the grid in `on_grid`), then re-snaps off-grid groups at the
    /// chosen scale and refits it. `l` and `on_grid` are the caller's and keep their old
    /// contents when no candidate improves the fit, as ggml's buffers do. Returns the scale.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        xval: &[f32],
        weight: &[f32],
        waux: &[f32],
        max: f32,
        l: &mut [i8],
        on_grid: &mut [bool],
    ) -> Result<f32> {
        let n = xval.len();
        let groups = n / N;
        // Sub-blocks are at most 32 values (8 groups).
        let mut laux = [0i8; 32];
        let mut on_grid_aux = [false; 8];
        let mut best = 0.0f32;
        let mut scale = max / (2 * self.kmax - 1) as f32;
        for is in -self.nsteps..=self.nsteps {
            let id = fma(is as f32, self.step, (2 * self.kmax - 1) as f32) / max;
            let this_scale = 1.0 / id;
            for (k, on) in on_grid_aux.iter_mut().enumerate().take(groups) {
                let g = N * k..N * k + N;
                *on = self.snap(&xval[g.clone()], &waux[g.clone()], id, this_scale, &mut laux[g])?;
            }
            let (sumqx, sumq2) = fit(xval, weight, &laux[..n]);
            if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                l[..n].copy_from_slice(&laux[..n]);
                on_grid[..groups].copy_from_slice(&on_grid_aux[..groups]);
            }
        }
        if on_grid[..groups].iter().any(|&g| !g) && scale > 0.0 {
            let id = 1.0 / scale;
            for (k, &on) in on_grid.iter().enumerate().take(groups) {
                if on && !self.resnap_all {
                    continue;
                }
                let g = N * k..N * k + N;
                self.snap(&xval[g.clone()], &waux[g.clone()], id, scale, &mut l[g])?;
            }
            let (sumqx, sumq2) = fit(xval, weight, &l[..n]);
            if sumq2 > 0.0 {
                scale = sumqx / sumq2;
            }
        }
        Ok(scale)
    }

    /// The grid index of group `k` of the final levels; off the grid is ggml's "Oops" abort.
    pub fn index_of(&self, l: &[i8]) -> Result<usize> {
        match self.tables.lookup(pack_levels(&l[..N], self.bits)) {
            Lookup::OnGrid(i) => Ok(i),
            Lookup::Neighbours(_) => Err(off_grid(self.ty)),
        }
    }
}

/// `sumqx`, `sumq2` of levels `l` (values `2l + 1`) against `xval` (scalar loops: fused).
pub fn fit(xval: &[f32], weight: &[f32], l: &[i8]) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for i in 0..xval.len() {
        let w = weight[i];
        let q = (2 * l[i] as i32 + 1) as f32;
        sumqx = fma(w * xval[i], q, sumqx);
        sumq2 = fma(w * q, q, sumq2);
    }
    (sumqx, sumq2)
}

/// `nearest_int(0.5f*(id*x - 1))`, the level (or scale code) whose odd value `2l + 1` is
/// nearest to `id * x`; both products fuse in GCC's build.
#[inline]
pub fn level_code(id: f32, x: f32) -> i32 {
    nearest_int_prod(fma(id, x, -1.0), 0.5)
}

/// The 4-bit code of a sub-block scale: `nearest_int(0.5 * (scale/d - 1))` in 0..16, so the
/// dequantizer's `d * (0.5 + code)` (or `d * (1 + 2 code)`) comes back near `scale`.
pub fn scale_code(id: f32, scale: f32) -> u8 {
    level_code(id, scale).clamp(0, 15) as u8
}

/// Byte `j` of a grid entry.
#[inline]
pub fn grid_byte(entry: u64, j: usize) -> u8 {
    (entry >> (8 * j)) as u8
}

/// Whether bit `j` of a sign byte marks element `j` negative (ggml's `kmask_iq2xs`).
#[inline]
pub fn negative(signs: u8, j: usize) -> bool {
    signs & (1 << j) != 0
}

/// `db * grid[j] * (sign ? -1 : 1)` for the 8 bytes of a grid entry (a 4-wide entry in the low
/// bytes followed by a second one works the same way).
#[inline]
pub fn dequant_group(out: &mut [f32], db: f32, entry: u64, signs: u8) {
    for (j, o) in out.iter_mut().enumerate().take(8) {
        let s = if negative(signs, j) { -1.0 } else { 1.0 };
        *o = db * grid_byte(entry, j) as f32 * s;
    }
}

/// `sum grid[j] * q8[j] * (sign ? -1 : 1)` over 8 elements.
#[inline]
pub fn dot_group(q8: &[i8], entry: u64, signs: u8) -> i32 {
    let mut sumi = 0i32;
    for (j, &q) in q8.iter().enumerate().take(8) {
        let s = if negative(signs, j) { -1 } else { 1 };
        sumi += grid_byte(entry, j) as i32 * q as i32 * s;
    }
    sumi
}

/// What the grid I-quants' dequantizers and dot products read from a block.
pub trait GridBlock {
    /// The f16 super-block scale.
    fn d(&self) -> Half;
    /// Grid entry (8 magnitudes, element 0 in the low byte) and sign byte of 8-element group
    /// `g` (0..32).
    fn group(&self, g: usize) -> (u64, u8);
    /// The 4-bit scale code of 16-element half sub-block `h` (0..16).
    fn code(&self, h: usize) -> u32;
}

/// `dequantize_row_iq2_*` / `iq3_*`: `db(d, code)` is the type's sub-block multiplier,
/// written out per type because its float operations differ.
pub fn dequantize_grid<B: GridBlock>(x: &[B], y: &mut [f32], db: impl Fn(f32, u32) -> f32) {
    for (b, out) in x.iter().zip(y.chunks_exact_mut(QK_K)) {
        let d = b.d().to_f32();
        for (g, o8) in out.chunks_exact_mut(8).enumerate() {
            let (entry, signs) = b.group(g);
            dequant_group(o8, db(d, b.code(g / 2)), entry, signs);
        }
    }
}

/// [`super::Format::levels`] of the grid I-quants: signed grid magnitudes, and per 16
/// elements the multiplier `db(d, code)` of the dequantizer.
pub fn grid_levels<B: GridBlock>(b: &B, db: impl Fn(f32, u32) -> f32, s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) {
    let d = b.d().to_f32();
    for (g, s8) in s.chunks_exact_mut(8).enumerate().take(QK_K / 8) {
        let (entry, signs) = b.group(g);
        for (j, o) in s8.iter_mut().enumerate() {
            let v = grid_byte(entry, j) as i8;
            *o = if negative(signs, j) { -v } else { v };
        }
    }
    for (h, (a, m)) in sa.iter_mut().zip(ma.iter_mut()).enumerate().take(QK_K / 16) {
        *a = db(d, b.code(h));
        *m = 0.0;
    }
}

/// `ggml_vec_dot_iq2_*_q8_K` / `iq3_*`: integer sums per 16 elements weighted by the odd
/// scale `2 code + 1` (integer arithmetic, so ggml's grouping of them does not matter), times
/// `d_x * d_y` per block, times `factor` at the end.
pub fn vec_dot_grid<B: GridBlock>(x: &[B], y: &[BlockQ8K], factor: f32) -> f32 {
    let mut sumf = 0.0f32;
    for (bx, by) in x.iter().zip(y) {
        let d = bx.d().to_f32() * by.d.get();
        let mut bsum = 0i32;
        for (h, q16) in by.qs.chunks_exact(16).enumerate() {
            let mut sumi = 0i32;
            for (l, q8) in q16.chunks_exact(8).enumerate() {
                let (entry, signs) = bx.group(2 * h + l);
                sumi += dot_group(q8, entry, signs);
            }
            bsum += (2 * bx.code(h) as i32 + 1) * sumi;
        }
        sumf += d * bsum as f32;
    }
    factor * sumf
}
