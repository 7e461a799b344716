//! Quantized GEMM, for MUL_MAT with many columns: ggml takes one `vec_dot` per output
//! there, re-decoding each weight block for every column; here each weight row is decoded
//! once per compute into integer levels and per-16-element scales (`quant::row_levels`),
//! packed with the activations into lane-major groups, and multiplied by a register-tiled
//! micro-kernel (`gemm_kernel.rs`) whose inner loop is nothing but byte dot products.
//!
//! A group is 256 elements of a row: 16 lanes of 16 elements. Packed, its bytes are in
//! lane-major order (`lane_major`): each 64-byte step holds 4 consecutive elements of every
//! lane, so the i32 lanes of a `dot4` always belong to one lane and one scale. Records:
//! - a (weights), `A_REC` bytes: levels (256 u8), `sa` (16 f32), `ca` (16 f32): element
//!   = sa * level + ca, lane by lane;
//! - b (activations), `B_REC` bytes: levels (256 i8), `sb` (16 f32), `mb` (16 f32, the
//!   lane's level sum times sb, or q8_1's stored `s`), `nbs` (16 i32, -128 times the
//!   level sum, for the offset mode).
//!
//! Rows whose length is not a whole number of groups (32-element formats) are padded with
//! zero levels and scales.

use std::cell::RefCell;

use bytemuck::{Pod, Zeroable};

use super::{gemm_kernel, Isa};
use crate::backend::cpu::kernel::Cx;
use crate::backend::cpu::ops::SyncPtr;
use crate::types::quant::{self, BlockQ8K, BlockQ8_0, BlockQ8_1, LevelSign};
use crate::types::Type;
use crate::Result;

pub(crate) const GROUP: usize = 256;
pub(crate) const A_REC: usize = 384;
pub(crate) const B_REC: usize = 448;

/// How a tile's weight levels meet the activations.
pub(crate) struct Mode;

impl Mode {
    /// Levels in 0..128: `dot4` as they are.
    pub(crate) const UNSIGNED: u8 = 0;
    /// Signed levels stored + 128 (VNNI's unsigned operand), corrected by `nbs`.
    pub(crate) const OFFSET: u8 = 1;
    /// Signed levels with the sign trick (`dot4_signed`).
    pub(crate) const SIGNED: u8 = 2;
}

/// Groups per k-slab: an NR-column tile's slab (NR x KC records) stays in L1 while the
/// row tiles' slabs stream past it from L2; the outputs are summed once per slab.
const KC: usize = 12;
/// Rows per task (a multiple of every MR).
const ROW_BLOCK: usize = 64;

/// 256 levels of a group into lane-major order, each byte XORed with `flip` (0x80 turns
/// signed levels into VNNI's unsigned operand, + 128): lane l's 4-byte run of step s moves
/// from element 16 l + 4 s to byte 64 s + 4 l.
#[inline]
fn lane_major(levels: &[i8], flip: u8, rec: &mut [u8]) {
    let flip = u32::from_ne_bytes([flip; 4]);
    for l in 0..16 {
        for s in 0..4 {
            let src = 16 * l + 4 * s;
            let w = u32::from_ne_bytes([
                levels[src] as u8,
                levels[src + 1] as u8,
                levels[src + 2] as u8,
                levels[src + 3] as u8,
            ]);
            rec[64 * s + 4 * l..64 * s + 4 * l + 4].copy_from_slice(&(w ^ flip).to_ne_bytes());
        }
    }
}

/// 64-byte aligned storage, so that no 32-byte load of a record crosses a cache line.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(64))]
struct Line([u8; 64]);

#[derive(Default)]
struct Buf(Vec<Line>);

impl Buf {
    /// At least `bytes` zeroed bytes.
    fn reset(&mut self, bytes: usize) -> &mut [u8] {
        self.0.clear();
        self.0.resize(bytes.div_ceil(64), Line([0; 64]));
        &mut bytemuck::cast_slice_mut(&mut self.0)[..bytes]
    }
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
}

/// The activation rows (b's columns), packed once per compute.
pub(crate) struct PackedB {
    buf: Buf,
    groups: usize,
}

impl PackedB {
    /// Packs `n` rows of `dot_ty` (each `k` elements), padded with zero columns to a
    /// multiple of `nr`. `fill(c, out)` writes row c, converted to `dot_ty`, into `out` (the
    /// row's bytes; a per-thread scratch).
    pub(crate) fn new(
        dot_ty: Type,
        k: usize,
        n: usize,
        nr: usize,
        fill: &(dyn Fn(usize, &mut [u8]) -> Result<()> + Sync),
        cx: &Cx,
    ) -> Result<Self> {
        let groups = k.div_ceil(GROUP);
        let cols = n.div_ceil(nr) * nr;
        let mut buf = Buf::default();
        let data = buf.reset(cols * groups * B_REC);
        let col_bytes = groups * B_REC;
        let ptr = SyncPtr(data.as_mut_ptr());
        cx.try_par_ranges(n, 4, |cols| {
            let mut row = vec![0u8; dot_ty.row_size(k)];
            for c in cols {
                fill(c, &mut row)?;
                // SAFETY: column c's bytes belong to this task alone.
                let out = unsafe { std::slice::from_raw_parts_mut(ptr.get().add(c * col_bytes), col_bytes) };
                for (g, rec) in out.chunks_exact_mut(B_REC).enumerate() {
                    pack_b_group(dot_ty, &row, g, k, rec);
                }
            }
            Ok(())
        })?;
        Ok(PackedB { buf, groups })
    }

    fn column(&self, c: usize, g0: usize, g1: usize) -> &[u8] {
        let base = c * self.groups * B_REC;
        &self.buf.bytes()[base + g0 * B_REC..base + g1 * B_REC]
    }
}

fn put_f32s(rec: &mut [u8], offset: usize, v: &[f32; 16]) {
    for (o, x) in rec[offset..offset + 64].chunks_exact_mut(4).zip(v) {
        o.copy_from_slice(&x.to_le_bytes());
    }
}

/// One group of an activation row into a b record.
fn pack_b_group(dot_ty: Type, row: &[u8], g: usize, k: usize, rec: &mut [u8]) {
    let (mut q, mut sb, mut mb) = ([0i8; GROUP], [0f32; 16], [0f32; 16]);
    let mut stored_s = false;
    match dot_ty {
        Type::Q8_K => {
            let b: &BlockQ8K = bytemuck::from_bytes(&row[g * 292..(g + 1) * 292]);
            q = b.qs;
            sb = [b.d.get(); 16];
        }
        Type::Q8_0 | Type::Q8_1 => {
            let size = dot_ty.type_size();
            for blk in 0..8 {
                let i = 8 * g + blk;
                if 32 * i >= k {
                    break;
                }
                let bytes = &row[i * size..(i + 1) * size];
                let (d, qs) = if dot_ty == Type::Q8_0 {
                    let b: &BlockQ8_0 = bytemuck::from_bytes(bytes);
                    (b.d.to_f32(), b.qs)
                } else {
                    let b: &BlockQ8_1 = bytemuck::from_bytes(bytes);
                    // ggml applies q4_1 / q5_1's minimum with the stored s = d * sum(qs).
                    mb[2 * blk] = b.s.to_f32();
                    stored_s = true;
                    (b.d.to_f32(), b.qs)
                };
                q[32 * blk..32 * blk + 32].copy_from_slice(&qs);
                sb[2 * blk..2 * blk + 2].fill(d);
            }
        }
        _ => unreachable!("activation formats only"),
    }
    let mut nbs = [0i32; 16];
    for l in 0..16 {
        let sum: i32 = q[16 * l..16 * l + 16].iter().map(|&v| v as i32).sum();
        nbs[l] = -128 * sum;
        if !stored_s {
            mb[l] = sb[l] * sum as f32;
        }
    }
    lane_major(&q, 0, rec);
    put_f32s(rec, 256, &sb);
    put_f32s(rec, 320, &mb);
    for (o, x) in rec[384..448].chunks_exact_mut(4).zip(nbs) {
        o.copy_from_slice(&x.to_le_bytes());
    }
}

/// The scratch of one row's levels.
#[derive(Default)]
struct Levels {
    s: Vec<i8>,
    sa: Vec<f32>,
    ma: Vec<f32>,
}

/// Packs rows `rows` of a into MR-row tiles: `[tile][group][row in tile][A_REC]`, rows past
/// `m` zero. Returns whether any row has a nonzero min map (`ca`).
#[allow(clippy::too_many_arguments)]
fn pack_a<'a>(
    ty: Type,
    mode: u8,
    mr: usize,
    k: usize,
    rows: std::ops::Range<usize>,
    m: usize,
    a_row: &(dyn Fn(usize) -> &'a [u8] + Sync),
    lv: &mut Levels,
    out: &mut [u8],
) -> Result<bool> {
    let groups = k.div_ceil(GROUP);
    let padded = groups * GROUP;
    lv.s.resize(padded, 0);
    lv.sa.resize(padded / 16, 0.0);
    lv.ma.resize(padded / 16, 0.0);
    let mut has_min = false;
    for (i, r) in rows.clone().enumerate() {
        if r >= m {
            break;
        }
        quant::row_levels(ty, a_row(r), &mut lv.s[..k], &mut lv.sa[..k / 16], &mut lv.ma[..k / 16])?;
        // Padding (32-element formats): zero levels and maps.
        lv.s[k..].fill(0);
        lv.sa[k / 16..].fill(0.0);
        lv.ma[k / 16..].fill(0.0);
        // (A NaN min counts: it must reach the output.)
        has_min |= lv.ma.iter().any(|&v| v != 0.0);
        let (tile, rin) = (i / mr, i % mr);
        for g in 0..groups {
            let at = ((tile * groups + g) * mr + rin) * A_REC;
            let rec = &mut out[at..at + A_REC];
            lane_major(&lv.s[g * GROUP..(g + 1) * GROUP], if mode == Mode::OFFSET { 0x80 } else { 0 }, rec);
            put_f32s(rec, 256, lv.sa[16 * g..16 * g + 16].try_into().expect("16"));
            put_f32s(rec, 320, lv.ma[16 * g..16 * g + 16].try_into().expect("16"));
        }
    }
    Ok(has_min)
}

type MicroFn = unsafe fn(a: &[u8], b: &[&[u8]], groups: usize, out: &mut [f32]);

/// The micro-kernel entry points of one ISA: one per mode, and the min-free forms of the
/// signed modes.
macro_rules! micro_isa {
    ($name:ident, $feat:literal, $token:ty, $mr:literal, $nr:literal) => {
        mod $name {
            use super::*;
            pub(super) const MR: usize = $mr;
            pub(super) const NR: usize = $nr;
            macro_rules! entry {
                ($f:ident, $mode:expr, $min:literal) => {
                    #[target_feature(enable = $feat)]
                    pub(super) unsafe fn $f(a: &[u8], b: &[&[u8]], groups: usize, out: &mut [f32]) {
                        gemm_kernel::micro::<$token, MR, NR, { $mode }, $min>(
                            <$token>::new_unchecked(),
                            a,
                            b,
                            groups,
                            out,
                        )
                    }
                };
            }
            entry!(unsigned, Mode::UNSIGNED, true);
            entry!(offset, Mode::OFFSET, true);
            entry!(offset_no_min, Mode::OFFSET, false);
            entry!(signed, Mode::SIGNED, true);
            entry!(signed_no_min, Mode::SIGNED, false);
        }
    };
}

#[cfg(target_arch = "x86_64")]
micro_isa!(micro_avx2, "avx2,fma,f16c", crate::backend::cpu::simd::x86::Avx2, 2, 2);
/// AVX-512: the 512-bit kernel (levels go in offset for VNNI, so `signed` is unused; it
/// is the 256-bit kernel, correct all the same).
#[cfg(target_arch = "x86_64")]
mod micro_avx512 {
    use super::super::gemm_avx512;
    use super::*;
    pub(super) const MR: usize = gemm_avx512::MR;
    pub(super) const NR: usize = gemm_avx512::NR;
    pub(super) unsafe fn unsigned(a: &[u8], b: &[&[u8]], groups: usize, out: &mut [f32]) {
        gemm_avx512::micro::<{ Mode::UNSIGNED }>(a, b, groups, out)
    }
    pub(super) unsafe fn offset(a: &[u8], b: &[&[u8]], groups: usize, out: &mut [f32]) {
        gemm_avx512::micro::<{ Mode::OFFSET }>(a, b, groups, out)
    }
    /// The 512-bit kernel has no min-free form: the min term (zero here) is added anyway.
    pub(super) use offset as offset_no_min;
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    pub(super) unsafe fn signed(a: &[u8], b: &[&[u8]], groups: usize, out: &mut [f32]) {
        use crate::backend::cpu::simd::x86::Avx512;
        gemm_kernel::micro::<Avx512, MR, NR, { Mode::SIGNED }, true>(Avx512::new_unchecked(), a, b, groups, out)
    }
    pub(super) use signed as signed_no_min;
}
#[cfg(target_arch = "aarch64")]
micro_isa!(micro_neon, "neon", crate::backend::cpu::simd::neon::Neon<false>, 2, 2);
#[cfg(target_arch = "aarch64")]
micro_isa!(micro_neon_dot, "neon,dotprod", crate::backend::cpu::simd::neon::Neon<true>, 2, 2);

/// The quantized GEMM of one weight type on one ISA.
#[derive(Clone, Copy)]
pub(crate) struct QuantGemm {
    ty: Type,
    mode: u8,
    micro: MicroFn,
    /// `micro` without the min term, for row blocks whose `ca` are all zero.
    micro_no_min: MicroFn,
    mr: usize,
    nr: usize,
}

impl QuantGemm {
    /// `None` where `ty` has no integer levels or `isa` has no micro-kernel (scalar).
    pub(crate) fn new(ty: Type, isa: Isa) -> Option<QuantGemm> {
        let sign = quant::levels_sign(ty)?;
        if !isa.available() {
            return None;
        }
        // VNNI multiplies unsigned by signed bytes: signed levels go in offset by 128.
        let mode = match (sign, isa) {
            (LevelSign::Unsigned, _) => Mode::UNSIGNED,
            (LevelSign::Signed, Isa::Avx512Vnni) => Mode::OFFSET,
            (LevelSign::Signed, _) => Mode::SIGNED,
        };
        macro_rules! pick {
            ($m:ident) => {{
                // Unsigned levels always carry a min (their offset), so only the signed
                // modes have a min-free kernel.
                let (micro, micro_no_min): (MicroFn, MicroFn) = match mode {
                    Mode::UNSIGNED => ($m::unsigned, $m::unsigned),
                    Mode::OFFSET => ($m::offset, $m::offset_no_min),
                    _ => ($m::signed, $m::signed_no_min),
                };
                Some(QuantGemm { ty, mode, micro, micro_no_min, mr: $m::MR, nr: $m::NR })
            }};
        }
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 | Isa::Avx512 => pick!(micro_avx2),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => pick!(micro_avx512),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => pick!(micro_neon),
            #[cfg(target_arch = "aarch64")]
            Isa::NeonDot => pick!(micro_neon_dot),
            _ => None,
        }
    }

    /// Columns of a packed b are padded to a multiple of this.
    pub(crate) fn nr(&self) -> usize {
        self.nr
    }

    /// `store(j, i0, v)` with `v[i] = dot(a row i0 + i, b column j)`, for every row i < m
    /// and column j < n, in runs of consecutive rows: a's rows (k elements of the weight
    /// type) from `a_row`, b packed by [`PackedB::new`] for `n` columns. Work is split over
    /// blocks of rows (and of columns where rows are few), each task decoding its rows once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run<'a>(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a_row: &(dyn Fn(usize) -> &'a [u8] + Sync),
        b: &PackedB,
        store: &(dyn Fn(usize, usize, &[f32]) + Sync),
        cx: &Cx,
    ) -> Result<()> {
        let groups = k.div_ceil(GROUP);
        let row_blocks = m.div_ceil(ROW_BLOCK);
        // Enough tasks for every thread: split the columns where the rows are few.
        let want = 4 * cx.n_threads();
        let col_blocks = if row_blocks >= want { 1 } else { want.div_ceil(row_blocks).min(n.div_ceil(self.nr)) };
        let col_block = n.div_ceil(col_blocks).div_ceil(self.nr) * self.nr;
        let col_blocks = n.div_ceil(col_block);
        cx.try_par_ranges(row_blocks * col_blocks, 1, |tasks| {
            SCRATCH.with(|scratch| {
                let mut scratch = scratch.borrow_mut();
                let Scratch { panel, tile, levels } = &mut *scratch;
                for task in tasks {
                    let (rb, cb) = (task / col_blocks, task % col_blocks);
                    let rows = rb * ROW_BLOCK..((rb + 1) * ROW_BLOCK).min(m);
                    let cols = cb * col_block..((cb + 1) * col_block).min(n);
                    self.block(rows, cols, m, k, groups, a_row, b, store, panel, tile, levels)?;
                }
                Ok(())
            })
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn block<'a>(
        &self,
        rows: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        m: usize,
        k: usize,
        groups: usize,
        a_row: &(dyn Fn(usize) -> &'a [u8] + Sync),
        b: &PackedB,
        store: &(dyn Fn(usize, usize, &[f32]) + Sync),
        panel: &mut Buf,
        tile: &mut Vec<f32>,
        levels: &mut Levels,
    ) -> Result<()> {
        let (mr, nr) = (self.mr, self.nr);
        let tiles = rows.len().div_ceil(mr);
        let panel = panel.reset(tiles * groups * mr * A_REC);
        let has_min = pack_a(self.ty, self.mode, mr, k, rows.clone(), m, a_row, levels, panel)?;
        let micro = if has_min { self.micro } else { self.micro_no_min };
        // The block's outputs, column by column (rows contiguous, as dst stores them).
        let width = cols.len().div_ceil(nr) * nr;
        let height = tiles * mr;
        tile.clear();
        tile.resize(height * width, 0.0);
        let mut out = [0f32; 16];
        let mut bcols: [&[u8]; 8] = [&[]; 8];
        for g0 in (0..groups).step_by(KC) {
            let g1 = (g0 + KC).min(groups);
            for c0 in (0..width).step_by(nr) {
                for (j, col) in bcols.iter_mut().enumerate().take(nr) {
                    *col = b.column(cols.start + c0 + j, g0, g1);
                }
                for t in 0..tiles {
                    let a = &panel[(t * groups + g0) * mr * A_REC..(t * groups + g1) * mr * A_REC];
                    // SAFETY: the ISA was checked in `new`; `a` holds (g1 - g0) groups of
                    // mr records, each column g1 - g0 records, `out` mr * nr floats.
                    unsafe { micro(a, &bcols[..nr], g1 - g0, &mut out[..mr * nr]) };
                    for j in 0..nr {
                        let col = &mut tile[(c0 + j) * height + t * mr..][..mr];
                        for (r, acc) in col.iter_mut().enumerate() {
                            *acc += out[r * nr + j];
                        }
                    }
                }
            }
        }
        for (j, c) in cols.enumerate() {
            store(c, rows.start, &tile[j * height..j * height + rows.len()]);
        }
        Ok(())
    }
}

/// Per-thread buffers of the GEMM tasks (rayon's workers persist, so these are reused).
#[derive(Default)]
struct Scratch {
    panel: Buf,
    tile: Vec<f32>,
    levels: Levels,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}
