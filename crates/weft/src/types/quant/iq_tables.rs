//! The search tables the I-quant quantizers need (ggml's `iq2xs_init_impl` /
//! `iq3xs_init_impl`), built once on first use and shared by all threads.
//!
//! For a grid of `N`-wide points with odd coordinates `2l + 1`, the tables hold the points
//! (`grid`), a map from every packed level vector `u = sum(l_k << bits*k)` to the point's
//! index, and for each vector *not* on the grid the list of grid points at the `nwant`
//! smallest squared distances. ggml sorts candidates by (distance, index) and so does this.

use std::sync::OnceLock;

use super::grid_seeds::{KGRID_1BIT_2048, KGRID_256, KGRID_2BIT_1024, KGRID_2BIT_256, KGRID_2BIT_512, KGRID_512};
use super::scales::fma;

pub struct GridTables<const N: usize> {
    /// The grid points, coordinates `2l + 1`.
    pub grid: Vec<[i8; N]>,
    /// Per packed level vector: the grid index (>= 0), or `-(offset + 1)` of its neighbour
    /// list in `neighbours` (the list's length, then the grid indices).
    map: Vec<i32>,
    neighbours: Vec<u16>,
}

/// Where a level vector lands: on the grid, or off it with these candidate grid indices.
pub enum Lookup<'a> {
    OnGrid(usize),
    Neighbours(&'a [u16]),
}

impl<const N: usize> GridTables<N> {
    /// Looks up the packed level vector `u` (levels already clamped by the caller, so `u` is
    /// within the map; an index outside it yields an empty neighbour list).
    pub fn lookup(&self, u: usize) -> Lookup<'_> {
        match self.map.get(u) {
            Some(&i) if i >= 0 => Lookup::OnGrid(i as usize),
            Some(&i) => {
                let start = (-(i + 1)) as usize;
                let n = self.neighbours[start] as usize;
                Lookup::Neighbours(&self.neighbours[start + 1..start + 1 + n])
            }
            None => Lookup::Neighbours(&[]),
        }
    }

    /// Bits per level in a packed level vector: 2 for the 8-wide grids, 3 for the 4-wide ones.
    pub const BITS: u32 = if N == 8 { 2 } else { 3 };

    /// The tables as 32-bit words for a GPU search (`backend/webgpu/ops/quant.rs`): each
    /// grid point's levels packed `BITS` apiece (element 0 lowest), the map (as `map`: a
    /// grid index, or `-(offset + 1)` into the neighbour words), and the neighbour lists (a
    /// length, then grid indices).
    pub fn search_words(&self) -> [Vec<u32>; 3] {
        let points = (0..self.grid.len()).map(|j| pack_levels(&self.levels(j), Self::BITS) as u32).collect();
        let map = self.map.iter().map(|&i| i as u32).collect();
        let neighbours = self.neighbours.iter().map(|&n| n as u32).collect();
        [points, map, neighbours]
    }

    /// The levels `l` (0..) of grid point `index`.
    pub fn levels(&self, index: usize) -> [i8; N] {
        self.grid[index].map(|p| (p - 1) / 2)
    }
}

fn build<const N: usize>(seeds: &[u16], bits: u32, map_size: usize, nwant: usize) -> GridTables<N> {
    let mask = (1u32 << bits) - 1;
    let point =
        |packed: u32| -> [i8; N] { std::array::from_fn(|k| (2 * ((packed >> (bits * k as u32)) & mask) + 1) as i8) };
    let grid: Vec<[i8; N]> = seeds.iter().map(|&s| point(s as u32)).collect();
    let mut map = vec![-1i32; map_size];
    for (i, p) in grid.iter().enumerate() {
        let u = p.iter().enumerate().fold(0usize, |u, (k, &c)| u | (((c - 1) / 2) as usize) << (bits as usize * k));
        map[u] = i as i32;
    }
    let mut neighbours = Vec::new();
    let mut dist = vec![0i32; grid.len()];
    let mut close: Vec<(i32, u16)> = Vec::new();
    for (u, entry) in map.iter_mut().enumerate() {
        if *entry >= 0 {
            continue;
        }
        let pos = point(u as u32);
        for (d, g) in dist.iter_mut().zip(&grid) {
            *d = g.iter().zip(&pos).map(|(&a, &b)| (a as i32 - b as i32).pow(2)).sum();
        }
        // The `nwant` smallest distinct distances; every point at one of them is a neighbour.
        let mut smallest: Vec<i32> = Vec::with_capacity(nwant + 1);
        for &d in &dist {
            if let Err(at) = smallest.binary_search(&d) {
                if at < nwant {
                    smallest.insert(at, d);
                    smallest.truncate(nwant);
                }
            }
        }
        let limit = *smallest.last().unwrap_or(&i32::MAX);
        close.clear();
        close.extend(dist.iter().enumerate().filter(|(_, &d)| d <= limit).map(|(j, &d)| (d, j as u16)));
        close.sort_unstable();
        *entry = -(neighbours.len() as i32 + 1);
        neighbours.push(close.len() as u16);
        neighbours.extend(close.iter().map(|&(_, j)| j));
    }
    GridTables { grid, map, neighbours }
}

/// IQ2 maps have room for every vector of 8 levels below 3 (`kmap_size` 43692).
const IQ2_MAP_SIZE: usize = 43692;
/// IQ3 maps cover every vector of 4 three-bit levels.
const IQ3_MAP_SIZE: usize = 4096;

pub fn iq2xxs() -> &'static GridTables<8> {
    static T: OnceLock<GridTables<8>> = OnceLock::new();
    T.get_or_init(|| build(&KGRID_2BIT_256, 2, IQ2_MAP_SIZE, 2))
}

pub fn iq2xs() -> &'static GridTables<8> {
    static T: OnceLock<GridTables<8>> = OnceLock::new();
    T.get_or_init(|| build(&KGRID_2BIT_512, 2, IQ2_MAP_SIZE, 2))
}

pub fn iq2s() -> &'static GridTables<8> {
    static T: OnceLock<GridTables<8>> = OnceLock::new();
    T.get_or_init(|| build(&KGRID_2BIT_1024, 2, IQ2_MAP_SIZE, 1))
}

/// Shared by IQ1_S and IQ1_M (levels 0, 1, 2 stand for -1, 0, +1).
pub fn iq1() -> &'static GridTables<8> {
    static T: OnceLock<GridTables<8>> = OnceLock::new();
    T.get_or_init(|| build(&KGRID_1BIT_2048, 2, IQ2_MAP_SIZE, 3))
}

pub fn iq3xxs() -> &'static GridTables<4> {
    static T: OnceLock<GridTables<4>> = OnceLock::new();
    T.get_or_init(|| build(&KGRID_256, 3, IQ3_MAP_SIZE, 2))
}

pub fn iq3s() -> &'static GridTables<4> {
    static T: OnceLock<GridTables<4>> = OnceLock::new();
    T.get_or_init(|| build(&KGRID_512, 3, IQ3_MAP_SIZE, 3))
}

/// `iq2_find_best_neighbour` / `iq3_find_best_neighbour`: among `candidates`, the grid point
/// closest to `xval` at `scale` (weighted squared distance); writes its levels to `l`.
/// `None` when no candidate scores below `f32::MAX` (only possible with non-finite input),
/// where ggml aborts.
pub fn best_neighbour<const N: usize>(
    tables: &GridTables<N>,
    candidates: &[u16],
    xval: &[f32],
    weight: &[f32],
    scale: f32,
    l: &mut [i8],
) -> Option<usize> {
    let mut best_d2 = f32::MAX;
    let mut best = None;
    for &j in candidates {
        let pg = &tables.grid[j as usize];
        let mut d2 = 0.0f32;
        for i in 0..N {
            // Both products fuse in GCC's build.
            let diff = fma(scale, pg[i] as f32, -xval[i]);
            d2 = fma(weight[i] * diff, diff, d2);
        }
        if d2 < best_d2 {
            best_d2 = d2;
            best = Some(j as usize);
        }
    }
    let index = best?;
    l[..N].copy_from_slice(&tables.levels(index));
    Some(index)
}

/// Packs `N` levels of `bits` each into a map index.
pub fn pack_levels(l: &[i8], bits: u32) -> usize {
    l.iter().enumerate().fold(0, |u, (k, &v)| u | ((v as u8 as usize) << (bits as usize * k)))
}
