//! Dot products of the 32-element formats (q4_0, q4_1, q5_0, q5_1, q8_0) with a
//! q8_0 / q8_1 activation row, written as ggml's AVX2 kernels compute them: one f32 lane
//! vector accumulated block by block (`acc = d_x * d_y * sum + acc`, fused), summed by
//! `hsum` at the end, so the results are ggml's x86 results bit for bit.

use super::ops::{arr, bytes_of, Simd};
use super::prefetch;
use crate::types::quant::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1};

/// ggml's `mul_sum_i8_pairs_float`: signed bytes times signed bytes, 8 f32 partial sums.
#[inline(always)]
pub(super) fn mul_sum_i8<S: Simd>(s: S, x: S::V, y: S::V) -> S::F {
    s.cvt_i32(s.dot4_signed(x, y))
}

/// ggml's `mul_sum_us8_pairs_float`: unsigned bytes times signed bytes.
#[inline(always)]
fn mul_sum_u8<S: Simd>(s: S, x: S::V, y: S::V) -> S::F {
    s.cvt_i32(s.dot4(x, y))
}

/// Each row's `hsum` (a loop, not `map`: see `ops.rs` on closures in kernels).
#[inline(always)]
pub(super) fn hsums<S: Simd, const R: usize>(s: S, acc: [S::F; R]) -> [f32; R] {
    let mut out = [0f32; R];
    for (o, a) in out.iter_mut().zip(acc) {
        *o = s.hsum(a);
    }
    out
}

#[inline(always)]
pub(crate) fn q4_0<S: Simd>(s: S, x: &[BlockQ4_0], y: &[BlockQ8_0]) -> f32 {
    let mut acc = s.fzero();
    for (bx, by) in prefetch::ahead(s, x).zip(y) {
        let d = s.fsplat(s.f16(bx.d.bits()) * s.f16(by.d.bits()));
        let qx = s.sub_i8(s.nibbles(&bx.qs), s.splat_i8(8));
        let q = mul_sum_i8(s, qx, s.load(bytes_of(&by.qs)));
        acc = s.fmadd(d, q, acc);
    }
    s.hsum(acc)
}

#[inline(always)]
pub(crate) fn q4_1<S: Simd>(s: S, x: &[BlockQ4_1], y: &[BlockQ8_1]) -> f32 {
    let mut acc = s.fzero();
    let mut summs = 0f32;
    for (bx, by) in prefetch::ahead(s, x).zip(y) {
        let (d0, d1) = (s.f16(bx.d.bits()), s.f16(by.d.bits()));
        summs += s.f16(bx.m.bits()) * s.f16(by.s.bits());
        let xy = mul_sum_u8(s, s.nibbles(&bx.qs), s.load(bytes_of(&by.qs)));
        acc = s.fmadd(s.fsplat(d0 * d1), xy, acc);
    }
    s.hsum(acc) + summs
}

#[inline(always)]
pub(crate) fn q5_0<S: Simd>(s: S, x: &[BlockQ5_0], y: &[BlockQ8_0]) -> f32 {
    let mut acc = s.fzero();
    for (bx, by) in prefetch::ahead(s, x).zip(y) {
        let d = s.fsplat(s.f16(bx.d.bits()) * s.f16(by.d.bits()));
        // Where the fifth bit is clear, 0xf0 makes the byte q - 16.
        let hi = s.andnot(s.bits_to_bytes(u32::from_le_bytes(bx.qh)), s.splat_i8(0xf0u8 as i8));
        let qx = s.or(s.nibbles(&bx.qs), hi);
        let q = mul_sum_i8(s, qx, s.load(bytes_of(&by.qs)));
        acc = s.fmadd(d, q, acc);
    }
    s.hsum(acc)
}

#[inline(always)]
pub(crate) fn q5_1<S: Simd>(s: S, x: &[BlockQ5_1], y: &[BlockQ8_1]) -> f32 {
    let mut acc = s.fzero();
    let mut summs = 0f32;
    for (bx, by) in prefetch::ahead(s, x).zip(y) {
        let dx = s.f16(bx.d.bits());
        summs += s.f16(bx.m.bits()) * s.f16(by.s.bits());
        let hi = s.and(s.bits_to_bytes(u32::from_le_bytes(bx.qh)), s.splat_i8(0x10));
        let qx = s.or(s.nibbles(&bx.qs), hi);
        let dy = s.f16(by.d.bits());
        let q = mul_sum_u8(s, qx, s.load(bytes_of(&by.qs)));
        acc = s.fmadd(q, s.fsplat(dx * dy), acc);
    }
    s.hsum(acc) + summs
}

/// A 32-element block of q4_0, q4_1, q5_0 or q5_1 as the several-row kernels read it: its
/// levels as unsigned bytes, and what ggml subtracts from them.
pub(crate) trait LegacyBlock: bytemuck::Pod {
    /// q4_0 8, q5_0 16; q4_1 and q5_1 none (their minimum `m` does that work).
    const OFFSET: i8;
    /// The 32 unsigned levels: the nibbles, plus 16 where the fifth bit is set.
    fn levels<S: Simd>(&self, s: S) -> S::V;
}

/// The trait for each block: its offset, and its levels from the block `$b`.
macro_rules! legacy_blocks {
    ($($block:ty: $offset:literal, |$b:ident, $s:ident| $levels:expr;)*) => {$(
        impl LegacyBlock for $block {
            const OFFSET: i8 = $offset;
            #[inline(always)]
            fn levels<S: Simd>(&self, $s: S) -> S::V {
                let $b = self;
                $levels
            }
        }
    )*};
}

legacy_blocks! {
    BlockQ4_0: 8, |b, s| s.nibbles(&b.qs);
    BlockQ4_1: 0, |b, s| s.nibbles(&b.qs);
    BlockQ5_0: 16, |b, s| s.add_where(s.nibbles(&b.qs), u32::from_le_bytes(b.qh), s.splat_i8(16));
    BlockQ5_1: 0, |b, s| s.add_where(s.nibbles(&b.qs), u32::from_le_bytes(b.qh), s.splat_i8(16));
}

/// The block's first four bytes (its f16 `d`, then `m` where it has one).
#[inline(always)]
fn head<B: bytemuck::Pod>(b: &B) -> &[u8; 4] {
    arr(bytemuck::bytes_of(b), 0)
}

/// q4_0 and q5_0 over `R` rows of a against one q8_0 row, interleaved block by block: each
/// row keeps its own accumulator and adds in ggml's order, while the rows' fused adds, which
/// wait on each other within a row, overlap.
///
/// ggml multiplies the signed levels n - OFFSET by y with the sign trick; here n * y
/// (unsigned times signed) less OFFSET * y, shared by the rows, gives the same exact i32
/// lane sums, so each result is the one-row kernel's bit for bit, provided no activation is
/// -128: there the sign trick wraps (`dot_i8_x86`), and callers use the one-row kernel
/// ([`super::RowDot::pairs_ok`]).
///
/// The scale product `d_x * d_y` is formed in a vector (a broadcast of the table entry times
/// the splat of `d_y`: the same rounded product as ggml's scalar one), and `-OFFSET * y`
/// enters as the dot's starting value instead of a subtraction after it: one vector op fewer
/// per row and block. q4_0's four rows from L1 on Zen 4: 3.7 -> 3.4 cycles a block.
#[inline(always)]
pub(crate) fn offset_rows<S: Simd, B: LegacyBlock, const R: usize>(s: S, x: [&[B]; R], y: &[BlockQ8_0]) -> [f32; R] {
    let n = y.len();
    let x = x.map(|r| &r[..n]);
    let mut acc = [s.fzero(); R];
    let offset = s.splat_i8(B::OFFSET);
    for (i, by) in y.iter().enumerate() {
        let (qy, dy) = (s.load(bytes_of(&by.qs)), s.fsplat(s.f16(by.d.bits())));
        let neg_corr = s.sub_i32(s.zero(), s.dot4(offset, qy));
        for r in 0..R {
            let bx = &x[r][i];
            prefetch::row_block::<S, _, R>(s, x[r], i);
            let dx = u16::from_le_bytes(*arr(bytemuck::bytes_of(bx), 0));
            let d = s.fmul(s.fsplat(s.f16(dx)), dy);
            let sum = s.dot4_acc(neg_corr, bx.levels(s), qy);
            acc[r] = s.fmadd(d, s.cvt_i32(sum), acc[r]);
        }
    }
    hsums(s, acc)
}

/// q4_1 and q5_1 over `R` rows a pass, as [`offset_rows`] does (no sign trick here: the
/// levels are unsigned, so any activation row).
///
/// Each block's `d` and `m` are converted together (`f16x2`, one `vcvtph2ps`) and multiplied
/// by y's `d` and `s` converted likewise: lane 0 is ggml's `d_x * d_y`, lane 1 its
/// `m_x * s_y`, each row's lane 1 summed block by block in ggml's order. With the table
/// lookups of ggml's form, LLVM gathered the four rows' `m` into one vector through a
/// `vpgatherdps` and three inserts, and the four rows ran no faster than one.
#[inline(always)]
pub(crate) fn min_rows<S: Simd, B: LegacyBlock, const R: usize>(s: S, x: [&[B]; R], y: &[BlockQ8_1]) -> [f32; R] {
    let n = y.len();
    let x = x.map(|r| &r[..n]);
    let mut acc = [s.fzero(); R];
    let mut summs = [s.fzero(); R];
    for (i, by) in y.iter().enumerate() {
        let qy = s.load(bytes_of(&by.qs));
        // Lanes 0 and 1: y's d and s, against x's d and m converted together below.
        let dy_sy = s.f16x2(head(by));
        for r in 0..R {
            let bx = &x[r][i];
            prefetch::row_block::<S, _, R>(s, x[r], i);
            // Lane 0 d_x * d_y, lane 1 m_x * s_y: ggml's two scalar products, rounded alike.
            let t = s.fmul(s.f16x2(head(bx)), dy_sy);
            summs[r] = s.fadd(summs[r], t);
            acc[r] = s.fmadd(s.fdup0(t), mul_sum_u8(s, bx.levels(s), qy), acc[r]);
        }
    }
    let mut out = hsums(s, acc);
    for (o, m) in out.iter_mut().zip(summs) {
        *o += s.fstore(m)[1];
    }
    out
}

/// The several-row kernel of each type, by name (the tables' entries).
macro_rules! rows_kernels {
    ($($name:ident: $kernel:ident, $block:ty, $act:ty;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name<S: Simd, const R: usize>(s: S, x: [&[$block]; R], y: &[$act]) -> [f32; R] {
            $kernel(s, x, y)
        }
    )*};
}

rows_kernels! {
    q4_0_rows: offset_rows, BlockQ4_0, BlockQ8_0;
    q5_0_rows: offset_rows, BlockQ5_0, BlockQ8_0;
    q4_1_rows: min_rows, BlockQ4_1, BlockQ8_1;
    q5_1_rows: min_rows, BlockQ5_1, BlockQ8_1;
}

#[inline(always)]
pub(crate) fn q8_0<S: Simd>(s: S, x: &[BlockQ8_0], y: &[BlockQ8_0]) -> f32 {
    q8_0_rows(s, [x], y)[0]
}

/// [`offset_rows`] for q8_0, which keeps ggml's sign trick (its levels are signed): any row.
#[inline(always)]
pub(crate) fn q8_0_rows<S: Simd, const R: usize>(s: S, x: [&[BlockQ8_0]; R], y: &[BlockQ8_0]) -> [f32; R] {
    let n = y.len();
    let x = x.map(|r| &r[..n]);
    let mut acc = [s.fzero(); R];
    for (i, by) in y.iter().enumerate() {
        let (qy, dy) = (s.load(bytes_of(&by.qs)), s.f16(by.d.bits()));
        for r in 0..R {
            let bx = &x[r][i];
            prefetch::row_block::<S, _, R>(s, x[r], i);
            let d = s.fsplat(s.f16(bx.d.bits()) * dy);
            acc[r] = s.fmadd(d, mul_sum_i8(s, s.load(bytes_of(&bx.qs)), qy), acc[r]);
        }
    }
    hsums(s, acc)
}
