//! Dot products of the 2-bit I-quants (iq2_xxs, iq2_xs, iq2_s) with a q8_K row, as ggml's
//! AVX2 kernels compute them: grid rows looked up 8 bytes at a time, their signs applied to
//! the activations, `maddubs` then `madd` by the odd scale `2 * ls + 1`, one fused
//! `d * sum + acc` per super-block and `0.125 * hsum` at the end (bit-identical floats).

use super::kquants::SHUF_K4;
use super::ops::{arr, bytes_of, Simd};
use super::prefetch;
use crate::types::quant::block::LeU16;
use crate::types::quant::grids::{IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID};
use crate::types::quant::{BlockIq2S, BlockIq2Xs, BlockIq2Xxs, BlockQ8K};

/// The 32 activation bytes of chunk `c`.
#[inline(always)]
pub(super) fn q8<S: Simd>(s: S, y: &BlockQ8K, c: usize) -> S::V {
    s.load(arr(bytes_of(&y.qs), 32 * c))
}

/// `dot`'s i16 lanes weighted by the odd scale `2 * ls + 1` of a 4-bit `ls` (i32 sums of
/// pairs, `madd`), the scale splat from a general register as ggml does.
#[inline(always)]
pub(super) fn odd_scaled<S: Simd>(s: S, dot: S::V, ls: u32) -> S::V {
    s.madd_i16(dot, s.splat_i16(2 * (ls & 15) as i16 + 1))
}

/// [`odd_scaled`] with the scale loaded from [`ODD_SCALE_SPLATS`]: one vector load instead
/// of moving it from a general register (two instructions). iq3_s: 6% faster on Zen 4
/// (AVX-512). iq2_xxs and iq3_xxs keep the splat: LLVM scheduled iq2_xxs's unrolled loop
/// differently with the load and it ran 18% slower; iq3_xxs did not move.
#[inline(always)]
pub(super) fn odd_scaled_loaded<S: Simd>(s: S, dot: S::V, ls: u32) -> S::V {
    s.madd_i16(dot, s.load(&ODD_SCALE_SPLATS[(ls & 15) as usize]))
}

/// `2 * ls + 1` in every i16 lane, for each 4-bit ls.
pub(super) static ODD_SCALE_SPLATS: [[u8; 32]; 16] = {
    let mut t = [[0u8; 32]; 16];
    let mut ls = 0;
    while ls < 16 {
        let mut i = 0;
        while i < 16 {
            t[ls][2 * i] = (2 * ls + 1) as u8;
            i += 1;
        }
        ls += 1;
    }
    t
};

/// Per-16 scales `2 * nibble + 1` of 8 scale bytes as i16: low nibbles (first halves of
/// the 32-element groups) in the low half, high nibbles in the high half, so that
/// `SHUF_K4[ib32]` spreads group ib32's two scales over its two halves.
#[inline(always)]
pub(super) fn odd_scales_16<S: Simd>(s: S, scales: &[u8; 8]) -> S::V {
    let w = u64::from_le_bytes(*scales);
    let m4 = 0x0f0f_0f0f_0f0f_0f0f;
    let (lo, hi) = (w & m4, (w >> 4) & m4);
    // 2 * n + 1 per byte: no carries, every nibble doubled stays below 0x20.
    let odd = |v: u64| (v << 1) | 0x0101_0101_0101_0101;
    s.widen_u8_i16(s.set_u64([odd(lo), odd(hi), 0, 0]))
}

/// One 32-element group of iq2_xxs: 4 grid indices, the word with 4 sign fields and the
/// scale in its top nibble, and the activations.
#[inline(always)]
fn iq2_xxs_group<S: Simd>(s: S, x: &BlockIq2Xxs, y: &BlockQ8K, ib32: usize) -> S::V {
    // Sub-block pair: 4 grid indices each, then the word of signs and scale.
    let base = 16 * (ib32 / 2) + 8 * (ib32 % 2);
    let grid = &x.qs[base..base + 4];
    let signs = u32::from_le_bytes(*arr(&x.qs, base + 4));
    let q2 = s.set_u64(std::array::from_fn(|k| IQ2XXS_GRID[grid[k] as usize]));
    let dot = s.maddubs(q2, s.apply_even_signs(q8(s, y, ib32), signs));
    odd_scaled(s, dot, signs >> 28)
}

/// ggml's block loop of the 2- and 3-bit I-quants against q8_K: block b's eight 32-element
/// products `$sub` (i32 lanes, `$ib32` the sub-block) summed even ones and odd ones apart,
/// then together (integers: exact in any order), scaled by the block's d (its f16 `d` times
/// the activations' `d`) into eight f32 lanes by a fused multiply-add; the lanes' sum at the end.
///
/// A macro, not a function taking closures: a closure is compiled as a function of its own
/// without the entry point's `#[target_feature]`s, so the intrinsics in it were called out
/// of line (each vector through memory), which made these kernels about ten times slower.
/// `$pre` runs once per block before its sub-blocks.
macro_rules! sum_blocks {
    ($s:expr, $x:expr, $y:expr, |$bx:ident, $by:ident| $pre:stmt; |$ib32:ident| $sub:expr) => {{
        let s = $s;
        let mut accumf = s.fzero();
        for ($bx, $by) in super::prefetch::ahead(s, $x).zip($y) {
            $pre
            let (mut sumi1, mut sumi2) = (s.zero(), s.zero());
            for pair in 0..4 {
                let $ib32 = 2 * pair;
                sumi1 = s.add_i32(sumi1, $sub);
                let $ib32 = 2 * pair + 1;
                sumi2 = s.add_i32(sumi2, $sub);
            }
            let d = s.f16($bx.d.bits()) * $by.d.get();
            accumf = s.fmadd(s.fsplat(d), s.cvt_i32(s.add_i32(sumi1, sumi2)), accumf);
        }
        s.hsum(accumf)
    }};
}
pub(super) use sum_blocks;

#[inline(always)]
pub(crate) fn iq2_xxs<S: Simd>(s: S, x: &[BlockIq2Xxs], y: &[BlockQ8K]) -> f32 {
    0.125 * sum_blocks!(s, x, y, |bx, by| {}; |ib32| iq2_xxs_group(s, bx, by, ib32))
}

/// Sub-block ib32's weighting by its two odd 4-bit scales (`scales`: `odd_scales_16` of
/// the block) of `dot`, its i16 products with the activations.
#[inline(always)]
fn scale16<S: Simd>(s: S, scales: S::V, dot: S::V, ib32: usize) -> S::V {
    s.madd_i16(dot, s.shuffle_i8(scales, s.load(&SHUF_K4[ib32])))
}

/// Byte n = 0x80 where nibble n has an odd number of set bits: the eighth sign bit that
/// gives a 7-bit iq2_xs sign field even parity (ggml's `bit_helper`).
static PARITY_BIT: [u8; 32] = {
    let mut t = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        t[i] = if (i % 16).count_ones() % 2 == 1 { 0x80 } else { 0 };
        i += 1;
    }
    t
};

/// Byte i = 1 << (i % 8): the bit of its group's sign byte that byte i tests.
static BIT_OF_BYTE: [u8; 32] = {
    let mut t = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        t[i] = 1 << (i % 8);
        i += 1;
    }
    t
};

/// For the even (row 0) and odd (row 1) sub-block of a half of 8 sign bytes (at even byte
/// offsets): each byte picks its 8-element group's sign byte.
static SIGN_BYTE_PICK: [[u8; 32]; 2] = {
    let mut t = [[0u8; 32]; 2];
    let mut sub = 0;
    while sub < 2 {
        let mut i = 0;
        while i < 32 {
            t[sub][i] = (2 * (4 * sub + i / 8)) as u8;
            i += 1;
        }
        sub += 1;
    }
    t
};

/// A sub-block's four 8-byte iq2_xs grid rows, of the four u16 fields `q`, each indexed by its
/// low 9 bits.
#[inline(always)]
fn xs_rows<S: Simd>(s: S, q: &[LeU16; 4]) -> S::V {
    s.set_u64(q.map(|v| IQ2XS_GRID[(v.get() & 511) as usize]))
}

/// Four sub-blocks of iq2_xs from `quad * 4`: their i16 products with the activations.
/// The signs are worked out in vectors from the 16 stored 7-bit fields (ggml's way), not
/// looked up one 8-byte row at a time: 16 loads and inserts fewer per four sub-blocks.
#[inline(always)]
fn iq2_xs_quad<S: Simd>(s: S, x: &BlockIq2Xs, y: &BlockQ8K, quad: usize) -> [S::V; 4] {
    let q2_data = s.load(arr(bytemuck::cast_slice(&x.qs), 32 * quad));
    let partial = s.srl_i16(q2_data, 9);
    // Low nibble: the field's low 4 bits xor its top 3, whose parity is the field's.
    let folded = s.and(s.xor(partial, s.srl_i16(q2_data, 13)), s.splat_i8(0x0f));
    let full = s.or(partial, s.shuffle_i8(s.load(&PARITY_BIT), folded));
    let bit = s.load(&BIT_OF_BYTE);
    let one = s.splat_i8(1);
    // A loop, not `array::from_fn` with a closure: see `ops.rs` on closures in kernels.
    let mut dots = [s.zero(); 4];
    for (k, dot) in dots.iter_mut().enumerate() {
        let ib32 = 4 * quad + k;
        let half = if k < 2 { s.dup_lo(full) } else { s.dup_hi(full) };
        let picked = s.and(s.shuffle_i8(half, s.load(&SIGN_BYTE_PICK[k % 2])), bit);
        let signs = s.or(s.cmpeq_i8(picked, bit), one);
        let q2 = xs_rows(s, arr(&x.qs, 4 * ib32));
        *dot = s.maddubs(q2, s.sign_i8(q8(s, y, ib32), signs));
    }
    dots
}

/// `sum_blocks!`'s loop, written out: there the block's eight dots would be made up front
/// (both quads in `$pre`), which measured 3-9% slower than summing each quad as it is made.
#[inline(always)]
pub(crate) fn iq2_xs<S: Simd>(s: S, x: &[BlockIq2Xs], y: &[BlockQ8K]) -> f32 {
    let mut accumf = s.fzero();
    for (bx, by) in prefetch::ahead(s, x).zip(y) {
        let scales = odd_scales_16(s, &bx.scales);
        let (mut sumi1, mut sumi2) = (s.zero(), s.zero());
        for quad in 0..2 {
            let dots = iq2_xs_quad(s, bx, by, quad);
            for (k, dot) in dots.into_iter().enumerate() {
                let p = scale16(s, scales, dot, 4 * quad + k);
                if k % 2 == 0 {
                    sumi1 = s.add_i32(sumi1, p);
                } else {
                    sumi2 = s.add_i32(sumi2, p);
                }
            }
        }
        let d = s.f16(bx.d.bits()) * by.d.get();
        accumf = s.fmadd(s.fsplat(d), s.cvt_i32(s.add_i32(sumi1, sumi2)), accumf);
    }
    0.125 * s.hsum(accumf)
}

#[inline(always)]
fn iq2_s_dot<S: Simd>(s: S, x: &BlockIq2S, y: &BlockQ8K, ib32: usize) -> S::V {
    let qs = &x.qs[4 * ib32..4 * ib32 + 4];
    let qh = x.qh[ib32] as usize;
    let q2 = s.set_u64(std::array::from_fn(|k| IQ2S_GRID[qs[k] as usize | ((qh << (8 - 2 * k)) & 0x300)]));
    let sign_bits = u32::from_le_bytes(*arr(&x.qs, 32 + 4 * ib32));
    s.maddubs(q2, s.neg_where(q8(s, y, ib32), sign_bits))
}

#[inline(always)]
pub(crate) fn iq2_s<S: Simd>(s: S, x: &[BlockIq2S], y: &[BlockQ8K]) -> f32 {
    0.125
        * sum_blocks!(s, x, y, |bx, by| let scales = odd_scales_16(s, &bx.scales);
            |ib32| scale16(s, scales, iq2_s_dot(s, bx, by, ib32), ib32))
}
