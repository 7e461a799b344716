//! Dot products of the K-quants (q2_K, q3_K, q4_K, q5_K, q6_K) with a q8_K row, in the
//! shape of ggml's AVX2 kernels: per super-block, levels times activations in 16-bit pairs
//! (`maddubs`), times the sub-block scales into 8 i32 lanes (`madd`), one fused
//! `d * sum + acc` per super-block, `hsum` at the end. Integer sums are exact and every
//! float operation is ggml's, in ggml's order, so results match ggml's x86 build bit for bit.
//! (q2_K, q3_K, q4_K and q5_K with VNNI form the same i32 lanes in fewer instructions:
//! `q2_k_scaled_levels`, `q3_k_rows`, `k4_chunk`.)

use super::legacy::hsums;
use super::ops::{arr, bytes_of, Simd};
use super::prefetch;
use crate::types::quant::block::Half;
use crate::types::quant::{BlockQ2K, BlockQ3K, BlockQ4K, BlockQ5K, BlockQ6K, BlockQ8K};

/// Byte shuffles that spread i16 scale `i` of a half over a whole half (ggml's
/// `get_scale_shuffle_q3k`): table `k` gives scale 2k in the low half, 2k + 1 in the high.
pub(super) static SHUF_Q3K: [[u8; 32]; 4] = {
    let mut t = [[0u8; 32]; 4];
    let mut k = 0;
    while k < 4 {
        let mut b = 0;
        while b < 32 {
            let scale = 2 * k + b / 16;
            t[k][b] = (2 * (scale % 8) + b % 2) as u8;
            b += 1;
        }
        k += 1;
    }
    t
};

/// Byte shuffles, table `i` copying lane `i` (`W` bytes wide) of each half over the half.
const fn lane_splats<const N: usize, const W: usize>() -> [[u8; 32]; N] {
    let mut t = [[0u8; 32]; N];
    let mut i = 0;
    while i < N {
        let mut b = 0;
        while b < 32 {
            t[i][b] = (W * i + b % W) as u8;
            b += 1;
        }
        i += 1;
    }
    t
}

/// ggml's `get_scale_shuffle_k4`: table `i` spreads i16 scale `i` over all 16 lanes.
pub(super) static SHUF_K4: [[u8; 32]; 8] = lane_splats::<8, 2>();

/// ggml's `get_scale_shuffle` (in the low half): bytes 0..8 pick byte 2i, bytes 8..16 byte
/// 2i + 1; widened to i16 this gives scale 2i in the low half, 2i + 1 in the high half.
pub(super) static SHUF_SCALE: [[u8; 32]; 8] = {
    let mut t = [[0u8; 32]; 8];
    let mut i = 0;
    while i < 8 {
        let mut b = 0;
        while b < 32 {
            t[i][b] = (2 * i + (b % 16) / 8) as u8;
            b += 1;
        }
        i += 1;
    }
    t
};

/// `table` with its contents hidden from LLVM, which otherwise rewrites a byte shuffle by a
/// constant table as two word shuffles (`vpshuflw` + `vpshufd`): two ops on the shuffle
/// ports where `vpshufb` reading its table from memory is one. q4_K from L1 on Zen 4, one
/// row: 26.4 -> 25.0 cycles a super-block.
#[inline(always)]
fn opaque<T>(table: &T) -> &T {
    std::hint::black_box(table)
}

/// A q2_K / q4_K / q5_K block's two factors with the activations' scale, as ggml forms them:
/// `y.d * d` for the levels and `-y.d * dmin` for the minimums.
#[inline(always)]
fn d_dmin<S: Simd>(s: S, d: Half, dmin: Half, y: &BlockQ8K) -> (f32, f32) {
    (y.d.get() * s.f16(d.bits()), -y.d.get() * s.f16(dmin.bits()))
}

/// The 32 activation bytes of chunk `c` (elements 32c..32c + 32).
#[inline(always)]
fn q8<S: Simd>(s: S, y: &BlockQ8K, c: usize) -> S::V {
    s.load(arr(bytes_of(&y.qs), 32 * c))
}

#[inline(always)]
pub(crate) fn q2_k<S: Simd>(s: S, x: &[BlockQ2K], y: &[BlockQ8K]) -> f32 {
    q2_k_with(s, x, y, ShiftMask)
}

/// How a q2_K kernel makes vector `k`'s index into its half's table of scaled levels
/// ([`q2_k_scaled_levels`]): the 2-bit level (bits `2k`, `2k + 1` of each byte of
/// `q2bits`) or'd with `4k`. The one step a CPU's own instructions do differently
/// (`gfni/q2k.rs`).
pub(super) trait Q2Index<S: Simd>: Copy {
    fn index(self, s: S, q2bits: S::V, k: usize) -> S::V;
}

/// [`Q2Index`] by a shift, a mask and an or.
#[derive(Clone, Copy)]
struct ShiftMask;

impl<S: Simd> Q2Index<S> for ShiftMask {
    #[inline(always)]
    fn index(self, s: S, q2bits: S::V, k: usize) -> S::V {
        s.or(s.and(s.srl_i16(q2bits, 2 * k as u32), s.splat_i8(3)), s.splat_i8(4 * k as i8))
    }
}

/// q2_K with the table index made by `index` (where VNNI runs the table form).
#[inline(always)]
pub(super) fn q2_k_with<S: Simd, I: Q2Index<S>>(s: S, x: &[BlockQ2K], y: &[BlockQ8K], index: I) -> f32 {
    q2_k_rows_with::<S, I, 1>(s, [x], y, index)[0]
}

/// [`q2_k_with`] over `R` rows a pass, each row's super-block in turn (written out), each
/// row's operations exactly one row's.
#[inline(always)]
pub(super) fn q2_k_rows_with<S: Simd, I: Q2Index<S>, const R: usize>(
    s: S,
    x: [&[BlockQ2K]; R],
    y: &[BlockQ8K],
    index: I,
) -> [f32; R] {
    let m4 = s.splat_i8(0xf);
    let mut acc = [s.fzero(); R];
    let x = x.map(|r| &r[..y.len()]);
    for (i, by) in y.iter().enumerate() {
        unrolled!(R, |r| {
            prefetch::row_block::<S, _, R>(s, x[r], i);
            let bx = &x[r][i];
            let (d, dmin) = d_dmin(s, bx.d, bx.dmin, by);

            let mins_and_scales = s.load_dup(&bx.scales);
            let mins = s.widen_i8_i16(s.and(s.srl_i16(mins_and_scales, 4), m4));
            let prod = s.madd_i16(mins, s.load(bytemuck::cast_ref(&by.bsums)));
            acc[r] = s.fmadd(s.fsplat(dmin), s.cvt_i32(prod), acc[r]);

            let scales = s.and(mins_and_scales, m4);
            let sumi = if S::VNNI {
                q2_k_scaled_levels(s, bx, by, scales, index)
            } else {
                q2_k_scale_products(s, bx, by, scales)
            };
            acc[r] = s.fmadd(s.fsplat(d), s.cvt_i32(sumi), acc[r]);
        });
    }
    hsums(s, acc)
}

/// q2_K's scaled level sums as ggml's AVX2 kernel forms them: levels times activations in
/// i16 pairs (`maddubs`), times the sub-block scales (`madd`). `scales` holds the 16 scale
/// bytes in both halves.
#[inline(always)]
fn q2_k_scale_products<S: Simd>(s: S, bx: &BlockQ2K, by: &BlockQ8K, scales: S::V) -> S::V {
    let m3 = s.splat_i8(3);
    let all_scales = s.widen_i8_i16(scales);
    let mut sumi = s.zero();
    for (j, scale) in [s.dup_lo(all_scales), s.dup_hi(all_scales)].into_iter().enumerate() {
        let q2bits = s.load(arr(&bx.qs, 32 * j));
        let mut p = [s.zero(); 4];
        for (k, pk) in p.iter_mut().enumerate() {
            let q2 = s.and(s.srl_i16(q2bits, 2 * k as u32), m3);
            let dot = s.maddubs(q2, q8(s, by, 4 * j + k));
            *pk = s.madd_i16(s.shuffle_i8(scale, s.load(&SHUF_Q3K[k])), dot);
        }
        sumi = s.add_i32(sumi, s.add_i32(s.add_i32(p[0], p[1]), s.add_i32(p[2], p[3])));
    }
    sumi
}

/// Byte b of table `j`: in each half, byte 4k + q (q even) picks scale byte 8j + 2k (+ 1 in
/// the high half), and odd bytes are zeroed: i16 lanes holding one 4-bit scale each.
static Q2K_SCALE_PICK: [[u8; 32]; 2] = {
    let mut t = [[0u8; 32]; 2];
    let mut j = 0;
    while j < 2 {
        let mut b = 0;
        while b < 32 {
            let (half, k, q) = (b / 16, (b % 16) / 4, b % 4);
            t[j][b] = if q % 2 == 1 { 0x80 } else { (8 * j + 2 * k + half) as u8 };
            b += 1;
        }
        j += 1;
    }
    t
};

/// q2_K's scaled level sums with VNNI, lane for lane ggml's: each 2-bit level times its
/// sub-block's 4-bit scale (at most 45) is looked up in a per-block table of q * scale
/// (`vpshufb`, index q + 4k), then one `vpdpbusd` adds four such bytes times the activations
/// into an i32 lane. ggml's lane is the scale times the same four products (`maddubs`, then
/// `madd` by the scale), so every lane holds the same integer, and the float steps after
/// are unchanged. Per 32 weights a shift, a mask, a lookup and a `vpdpbusd` where ggml's form
/// takes a shift, a mask, a `maddubs`, a scale shuffle, a `madd` and an add; four
/// accumulators, as one `vpdpbusd` waits on the last. `scales` holds the 16 scale bytes in
/// both halves. The table of half `j`: byte `4k + q` of each 128-bit half is `q * scale` of
/// vector `k`'s sub-block, the scales spread to one an i16 (`Q2K_SCALE_PICK`) times the i16
/// lanes 0x0100 and 0x0302 (the bytes 0, s, 2s, 3s for s below 64).
#[inline(always)]
fn q2_k_scaled_levels<S: Simd, I: Q2Index<S>>(s: S, bx: &BlockQ2K, by: &BlockQ8K, scales: S::V, index: I) -> S::V {
    let levels = s.splat_i32(0x0302_0100);
    let mut sums = [s.zero(); 4];
    for (j, pick) in Q2K_SCALE_PICK.iter().enumerate() {
        let table = s.mullo_i16(s.shuffle_i8(scales, s.load(pick)), levels);
        let q2bits = s.load(arr(&bx.qs, 32 * j));
        for (k, sum) in sums.iter_mut().enumerate() {
            let scaled = s.shuffle_i8(table, index.index(s, q2bits, k));
            *sum = s.dot4_acc(*sum, scaled, q8(s, by, 4 * j + k));
        }
    }
    s.add_i32(s.add_i32(sums[0], sums[1]), s.add_i32(sums[2], sums[3]))
}

/// q3_K's 16 scales as ggml unpacks them (6 bits less 32), one a byte, in both halves.
#[inline(always)]
fn q3_k_scales<S: Simd>(s: S, scales: &[u8; 12]) -> S::V {
    const KMASK1: u32 = 0x0303_0303;
    const KMASK2: u32 = 0x0f0f_0f0f;
    let aux: [u32; 3] = std::array::from_fn(|i| u32::from_le_bytes(*arr(scales, 4 * i)));
    let w = [
        (aux[0] & KMASK2) | ((aux[2] & KMASK1) << 4),
        (aux[1] & KMASK2) | (((aux[2] >> 2) & KMASK1) << 4),
        ((aux[0] >> 4) & KMASK2) | (((aux[2] >> 4) & KMASK1) << 4),
        ((aux[1] >> 4) & KMASK2) | (((aux[2] >> 6) & KMASK1) << 4),
    ];
    s.sub_i8(s.set_u32([w[0], w[1], w[2], w[3], w[0], w[1], w[2], w[3]]), s.splat_i8(32))
}

/// The 2-bit levels of vector `k` of a q3_K half (`q3bits`: the half's 32 bytes of `qs`).
#[inline(always)]
fn q3_k_low<S: Simd>(s: S, q3bits: S::V, k: usize) -> S::V {
    s.and(s.srl_i16(q3bits, 2 * k as u32), s.splat_i8(3))
}

/// ggml's i32 lanes for 32 weights of q3_K (vector `k` of half `j`): the 2-bit levels less 4
/// where the high bit is clear, times the activations in i16 pairs (`maddubs` twice), times
/// the scales (`scales`: the half's i16 scales in both halves) by `madd`.
#[inline(always)]
fn q3_k_products<S: Simd>(s: S, q3bits: S::V, hbits: S::V, scales: S::V, j: usize, k: usize, q8k: S::V) -> S::V {
    let bit = (4 * j + k) as u32;
    let q3l = q3_k_low(s, q3bits, k);
    // 4 where the high bit is clear: subtracting it gives the signed level.
    let q3h = s.sll_i16(s.srl_i16(s.andnot(hbits, s.sll_i16(s.splat_i8(1), bit)), bit), 2);
    let p16 = s.sub_i16(s.maddubs(q3l, q8k), s.maddubs(q3h, q8k));
    s.madd_i16(s.shuffle_i8(scales, s.load(&SHUF_Q3K[k])), p16)
}

/// Byte shuffles of a half's i16 scales (as [`q3_k_products`] takes them) for vectors
/// `2p` and `2p + 1` of the half: each i32 lane of the low half holds the scales of their low
/// halves (scales 4p and 4p + 2), of the high half those of their high halves.
static Q3K_PAIR_SHUF: [[u8; 32]; 2] = {
    let mut t = [[0u8; 32]; 2];
    let mut p = 0;
    while p < 2 {
        let mut b = 0;
        while b < 32 {
            let (half, slot) = (b / 16, b % 4);
            let scale = 4 * p + half + 2 * (slot / 2);
            t[p][b] = (2 * scale + slot % 2) as u8;
            b += 1;
        }
        p += 1;
    }
    t
};

/// With VNNI, the unsigned level of 32 weights of q3_K (vector `k` of half `j`: the 2-bit
/// level plus 4 where the high bit is set) times four activations by one `vpdpbusd` from
/// `neg4y`, -4 times the same activations' sums: i32 lanes of sum(level * y), exact, whose
/// magnitude (at most 2048) fits an i16.
#[inline(always)]
fn q3_k_level_dots<S: Simd>(s: S, q3bits: S::V, hbits: S::V, j: usize, k: usize, q8k: S::V, neg4y: S::V) -> S::V {
    let q3l = q3_k_low(s, q3bits, k);
    let u = s.add_where_bit(q3l, hbits, (4 * j + k) as u32, s.splat_i8(4));
    s.dot4_acc(neg4y, u, q8k)
}

/// q3_K over `R` rows a pass (one row is the one-row kernel), each row's i32 lanes ggml's.
/// With VNNI the level dots come from `vpdpbusd` ([`q3_k_level_dots`], the rows sharing each
/// -4 * y), and two vectors' dots, paired as i16 (`vpermt2w`), take their scales in one
/// `madd`: lane l gets s * dot + s' * dot', the integer ggml's two `madd`s add there. About
/// eight ops a row per 32 weights (the shared ones halved) where ggml's form takes ten.
/// Pairing by shift and blend instead of `vpermt2w` measured slower in the pair (19.4 against
/// 18.7 ticks a super-block and row from L1), a `vpmulld` by i32 scales a vector slower still
/// (19.1, one more op).
#[inline(always)]
pub(crate) fn q3_k_rows<S: Simd, const R: usize>(s: S, x: [&[BlockQ3K]; R], y: &[BlockQ8K]) -> [f32; R] {
    let n = y.len();
    let x = x.map(|r| &r[..n]);
    let mut acc = [s.fzero(); R];
    for (i, by) in y.iter().enumerate() {
        let (mut scales, mut hbits, mut sumi) = ([s.zero(); R], [s.zero(); R], [[s.zero(); R]; 2]);
        for r in 0..R {
            if R == 1 {
                prefetch::row_block::<S, _, R>(s, x[r], i);
            } else {
                prefetch::row_block_far::<S, _, R>(s, x[r], i);
            }
            scales[r] = s.widen_i8_i16(q3_k_scales(s, &x[r][i].scales));
            hbits[r] = s.load(&x[r][i].hmask);
        }
        for (j, sumi) in sumi.iter_mut().enumerate() {
            let (mut q3bits, mut half) = ([s.zero(); R], [s.zero(); R]);
            for r in 0..R {
                q3bits[r] = s.load(arr(&x[r][i].qs, 32 * j));
                half[r] = if j == 0 { s.dup_lo(scales[r]) } else { s.dup_hi(scales[r]) };
            }
            for (p, pair_shuf) in Q3K_PAIR_SHUF.iter().enumerate() {
                let (k0, k1) = (2 * p, 2 * p + 1);
                let (y0, y1) = (q8(s, by, 4 * j + k0), q8(s, by, 4 * j + k1));
                if S::VNNI {
                    let four = s.splat_i8(4);
                    let neg0 = s.sub_i32(s.zero(), s.dot4(four, y0));
                    let neg1 = s.sub_i32(s.zero(), s.dot4(four, y1));
                    for r in 0..R {
                        let d0 = q3_k_level_dots(s, q3bits[r], hbits[r], j, k0, y0, neg0);
                        let d1 = q3_k_level_dots(s, q3bits[r], hbits[r], j, k1, y1, neg1);
                        let sc = s.shuffle_i8(half[r], s.load(pair_shuf));
                        sumi[r] = s.add_i32(sumi[r], scaled_pair(s, d0, d1, sc));
                    }
                } else {
                    for r in 0..R {
                        let p0 = q3_k_products(s, q3bits[r], hbits[r], half[r], j, k0, y0);
                        let p1 = q3_k_products(s, q3bits[r], hbits[r], half[r], j, k1, y1);
                        sumi[r] = s.add_i32(sumi[r], s.add_i32(p0, p1));
                    }
                }
            }
        }
        for r in 0..R {
            let d = by.d.get() * s.f16(x[r][i].d.bits());
            acc[r] = s.fmadd(s.fsplat(d), s.cvt_i32(s.add_i32(sumi[0][r], sumi[1][r])), acc[r]);
        }
    }
    hsums(s, acc)
}

#[inline(always)]
pub(crate) fn q3_k<S: Simd>(s: S, x: &[BlockQ3K], y: &[BlockQ8K]) -> f32 {
    q3_k_rows::<S, 1>(s, [x], y)[0]
}

/// The 6-bit scales and mins of q4_K / q5_K as ggml's kernels unpack them: four words,
/// bytes 0..8 the scales, bytes 8..16 the mins.
#[inline(always)]
fn k4_scales_mins(scales: &[u8; 12]) -> [u32; 4] {
    const KMASK1: u32 = 0x3f3f_3f3f;
    const KMASK2: u32 = 0x0f0f_0f0f;
    const KMASK3: u32 = 0x0303_0303;
    let mut u: [u32; 4] = [0; 4];
    for (i, w) in u.iter_mut().take(3).enumerate() {
        *w = u32::from_le_bytes(*arr(scales, 4 * i));
    }
    u[3] = ((u[2] >> 4) & KMASK2) | (((u[1] >> 6) & KMASK3) << 4);
    let uaux = u[1] & KMASK1;
    u[1] = (u[2] & KMASK2) | (((u[0] >> 6) & KMASK3) << 4);
    u[2] = uaux;
    u[0] &= KMASK1;
    u
}

/// The 8 scales of [`k4_scales_mins`]' words as i16, in both halves.
#[inline(always)]
fn k4_scales<S: Simd>(s: S, words: &[u32; 4]) -> S::V {
    s.dup_lo(s.widen_u8_i16(s.set_u32([words[0], words[1], 0, 0, 0, 0, 0, 0])))
}

/// Byte i picks byte i / 2: the 8 mins, each twice.
static DUP_PAIRS: [u8; 32] = {
    let mut t = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        t[i] = (i % 16 / 2) as u8;
        i += 1;
    }
    t
};

/// `mins[2l] * (bsums[4l] + bsums[4l+1]) + mins[2l+1] * (bsums[4l+2] + bsums[4l+3])` in i32
/// lanes 0..4: ggml's `_mm_madd_epi16(mins, _mm_hadd_epi16(bsums))` (exact integers).
#[inline(always)]
fn k4_min_products<S: Simd>(s: S, words: &[u32; 4], y: &BlockQ8K) -> S::V {
    let mins = s.set_u32([words[2], words[3], 0, 0, 0, 0, 0, 0]);
    let pairs = s.widen_u8_i16(s.shuffle_i8(mins, s.load(&DUP_PAIRS)));
    s.madd_i16_x4(pairs, s.load(bytemuck::cast_ref(&y.bsums)))
}

#[inline(always)]
pub(crate) fn q4_k<S: Simd>(s: S, x: &[BlockQ4K], y: &[BlockQ8K]) -> f32 {
    q4_k_rows::<S, 1>(s, [x], y)[0]
}

/// `R` q4_K rows dotted with one q8_K row, each row's operations those of one row alone (the
/// same bits): the rows' super-blocks in turn, so their weight streams are in flight together.
#[inline(always)]
pub(crate) fn q4_k_rows<S: Simd, const R: usize>(s: S, x: [&[BlockQ4K]; R], y: &[BlockQ8K]) -> [f32; R] {
    let m4 = s.splat_i8(0xf);
    let mut acc = [s.fzero(); R];
    // Lanes 0..4 only (4..8 stay zero).
    let mut acc_m = [s.fzero(); R];
    let shuf = opaque(&SHUF_K4);
    let x = x.map(|r| &r[..y.len()]);
    for (i, by) in y.iter().enumerate() {
        // Each row's super-block whole, one row after another (rows innermost, four rows'
        // scales and sums spilled: from L1 15.1 against 13.2 ticks a row and super-block).
        unrolled!(R, |r| {
            prefetch::row_block::<S, _, R>(s, x[r], i);
            let bx = &x[r][i];
            let (d, dmin) = d_dmin(s, bx.d, bx.dmin, by);
            let words = k4_scales_mins(&bx.scales);
            acc_m[r] = s.fmadd(s.fsplat(dmin), s.cvt_i32(k4_min_products(s, &words, by)), acc_m[r]);
            let scales = k4_scales(s, &words);
            // Two i32 sums, not one: into one, LLVM fuses each `add(sumi, madd(..))` into a
            // `vpdpwssd` (AVX-512 VNNI), eight of them chained a super-block at several cycles
            // each; two keep `vpmaddwd` and one-cycle adds (from L1: 25.0 -> 23.9 cycles; q5_K
            // and q6_K likewise). Exact integers, so the same sums.
            let (mut sumi, mut sumi2) = (s.zero(), s.zero());
            for j in 0..4 {
                let q4bits = s.load(arr(&bx.qs, 32 * j));
                let q4l = s.and(q4bits, m4);
                let q4h = s.and(s.srl_i16(q4bits, 4), m4);
                k4_chunk(s, scales, shuf, j, [q4l, q4h], by, [&mut sumi, &mut sumi2]);
            }
            acc[r] = s.fmadd(s.fsplat(d), s.cvt_i32(s.add_i32(sumi, sumi2)), acc[r]);
        });
    }
    let mut out = [0f32; R];
    for r in 0..R {
        let m = s.fstore(acc_m[r]);
        out[r] = s.hsum(acc[r]) + ((m[0] + m[2]) + (m[1] + m[3]));
    }
    out
}

/// Chunk `j` (64 weights) of a q4_K / q5_K super-block: `levels` (unsigned, sub-blocks 2j
/// and 2j + 1) times the activations, times their scales (`scales`: the 8 i16 scales in
/// both halves), added into `sums` (ggml's two accumulators; exact integers, so any split of
/// the adds gives its lanes). ggml's form: `maddubs`, then `madd` by the scale, a vector.
/// With VNNI: `vpdpbusd`, then both vectors' scales in one `madd` ([`scaled_pair`]), into
/// the sums in turn (one sum fused each `madd` into a chained `vpdpwssd`): from L1, ticks a
/// super-block, q4_K 16.9 -> 15.8, q5_K 21.5 -> 20.4. (The same pairing in q6_K, whose
/// levels need a -32 * y start a vector, measured 20.0 -> 19.8 and was left out.)
#[inline(always)]
fn k4_chunk<S: Simd>(
    s: S,
    scales: S::V,
    shuf: &[[u8; 32]; 8],
    j: usize,
    levels: [S::V; 2],
    y: &BlockQ8K,
    sums: [&mut S::V; 2],
) {
    let (y0, y1) = (q8(s, y, 2 * j), q8(s, y, 2 * j + 1));
    let [sum0, sum1] = sums;
    if S::VNNI {
        let pair = s.shuffle_i8(scales, s.load(&PAIR_K4[j]));
        let sum = if j.is_multiple_of(2) { sum0 } else { sum1 };
        *sum = s.add_i32(*sum, scaled_pair(s, s.dot4(levels[0], y0), s.dot4(levels[1], y1), pair));
    } else {
        *sum0 = s.add_i32(*sum0, s.madd_i16(s.shuffle_i8(scales, s.load(&shuf[2 * j])), s.maddubs(levels[0], y0)));
        *sum1 = s.add_i32(*sum1, s.madd_i16(s.shuffle_i8(scales, s.load(&shuf[2 * j + 1])), s.maddubs(levels[1], y1)));
    }
}

/// Byte shuffles that put i16 scales 2j and 2j + 1 of a half into every i32 lane of it.
static PAIR_K4: [[u8; 32]; 4] = lane_splats::<4, 4>();

/// `s * a + s' * b` lane by lane, `a` and `b` i32 lanes that fit an i16 (sums of four level
/// times activation products from `vpdpbusd`), `scales` the i16 pair (s, s') in each lane:
/// the two vectors paired as i16 (`vpermt2w`) for one `madd`. Each lane is the integer that
/// ggml's form adds there with a `maddubs` and a `madd` a vector, in fewer ops.
#[inline(always)]
fn scaled_pair<S: Simd>(s: S, a: S::V, b: S::V, scales: S::V) -> S::V {
    s.madd_i16(s.interleave_lo16(a, b), scales)
}

#[inline(always)]
pub(crate) fn q5_k<S: Simd>(s: S, x: &[BlockQ5K], y: &[BlockQ8K]) -> f32 {
    q5_k_rows::<S, 1>(s, [x], y)[0]
}

/// [`q4_k_rows`] for q5_K.
#[inline(always)]
pub(crate) fn q5_k_rows<S: Simd, const R: usize>(s: S, x: [&[BlockQ5K]; R], y: &[BlockQ8K]) -> [f32; R] {
    let (m4, bit4) = (s.splat_i8(0xf), s.splat_i8(0x10));
    let mut acc = [s.fzero(); R];
    let mut summs = [0f32; R];
    let shuf = opaque(&SHUF_K4);
    let x = x.map(|r| &r[..y.len()]);
    for (i, by) in y.iter().enumerate() {
        let (mut scales, mut hbits) = ([s.zero(); R], [s.zero(); R]);
        for r in 0..R {
            prefetch::row_block::<S, _, R>(s, x[r], i);
            let bx = &x[r][i];
            let dmin = d_dmin(s, bx.d, bx.dmin, by).1;
            let words = k4_scales_mins(&bx.scales);
            summs[r] += dmin * s.hsum_i32(k4_min_products(s, &words, by)) as f32;
            scales[r] = k4_scales(s, &words);
            hbits[r] = s.load(&bx.qh);
        }
        let mut sums = [[s.zero(); 2]; R];
        unrolled!(4, |j| {
            for r in 0..R {
                // Each row's fifth bits (bits 2j and 2j + 1 of its `qh` bytes) moved to bit 4.
                let q5bits = s.load(arr(&x[r][i].qs, 32 * j));
                let high_0 = s.and(s.sll_i16(s.srl_i16(hbits[r], 2 * j as u32), 4), bit4);
                let high_1 = s.and(s.sll_i16(s.srl_i16(hbits[r], 2 * j as u32 + 1), 4), bit4);
                let q5_0 = s.add_i8(s.and(q5bits, m4), high_0);
                let q5_1 = s.add_i8(s.and(s.srl_i16(q5bits, 4), m4), high_1);
                let [sum0, sum1] = &mut sums[r];
                k4_chunk(s, scales[r], shuf, j, [q5_0, q5_1], by, [sum0, sum1]);
            }
        });
        for r in 0..R {
            let d = by.d.get() * s.f16(x[r][i].d.bits());
            acc[r] = s.fmadd(s.fsplat(d), s.cvt_i32(s.add_i32(sums[r][0], sums[r][1])), acc[r]);
        }
    }
    let mut out = [0f32; R];
    for r in 0..R {
        out[r] = s.hsum(acc[r]) + summs[r];
    }
    out
}

/// The high two bits of q6_K's levels in quarter `k` of 32 bytes of `qh`, at bits 4 and 5.
#[inline(always)]
fn q6_high<S: Simd>(s: S, qh: S::V, k: u32) -> S::V {
    s.sll_i16(s.and(s.srl_i16(qh, 2 * k), s.splat_i8(3)), 4)
}

#[inline(always)]
pub(crate) fn q6_k<S: Simd>(s: S, x: &[BlockQ6K], y: &[BlockQ8K]) -> f32 {
    q6_k_rows::<S, 1>(s, [x], y)[0]
}

/// [`q4_k_rows`] for q6_K.
#[inline(always)]
pub(crate) fn q6_k_rows<S: Simd, const R: usize>(s: S, x: [&[BlockQ6K]; R], y: &[BlockQ8K]) -> [f32; R] {
    let m4 = s.splat_i8(0xf);
    let m32s = s.splat_i8(32);
    let mut acc = [s.fzero(); R];
    let shuf = opaque(&SHUF_SCALE);
    let x = x.map(|r| &r[..y.len()]);
    for (i, by) in y.iter().enumerate() {
        let mut scales = [s.zero(); R];
        for r in 0..R {
            prefetch::row_block::<S, _, R>(s, x[r], i);
            scales[r] = s.load_dup(bytes_of(&x[r][i].scales));
        }
        let mut sums = [[s.zero(); 2]; R];
        for j in 0..2 {
            for r in 0..R {
                let bx = &x[r][i];
                let q4bits1 = s.load(arr(&bx.ql, 64 * j));
                let q4bits2 = s.load(arr(&bx.ql, 64 * j + 32));
                let q4bits_h = s.load(arr(&bx.qh, 32 * j));
                let levels = [
                    s.or(s.and(q4bits1, m4), q6_high(s, q4bits_h, 0)),
                    s.or(s.and(q4bits2, m4), q6_high(s, q4bits_h, 1)),
                    s.or(s.and(s.srl_i16(q4bits1, 4), m4), q6_high(s, q4bits_h, 2)),
                    s.or(s.and(s.srl_i16(q4bits2, 4), m4), q6_high(s, q4bits_h, 3)),
                ];
                let mut p = [s.zero(); 4];
                for (k, pk) in p.iter_mut().enumerate() {
                    let q8k = q8(s, by, 4 * j + k);
                    let p16 = s.sub_i16(s.maddubs(levels[k], q8k), s.maddubs(m32s, q8k));
                    let scale = s.widen_i8_i16(s.shuffle_i8(scales[r], s.load(&shuf[4 * j + k])));
                    *pk = s.madd_i16(scale, p16);
                }
                let [sumi, sumi2] = &mut sums[r];
                *sumi = s.add_i32(*sumi, s.add_i32(p[0], p[1]));
                *sumi2 = s.add_i32(*sumi2, s.add_i32(p[2], p[3]));
            }
        }
        for r in 0..R {
            let d = by.d.get() * s.f16(x[r][i].d.bits());
            acc[r] = s.fmadd(s.fsplat(d), s.cvt_i32(s.add_i32(sums[r][0], sums[r][1])), acc[r]);
        }
    }
    hsums(s, acc)
}
