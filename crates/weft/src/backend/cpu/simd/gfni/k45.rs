//! q4_K's and q5_K's dot products in 512-bit registers (AVX-512 F/BW/VL, VNNI, GFNI and
//! VBMI), for one, two and four rows. A zmm holds a chunk of 64 weights, two sub-blocks:
//! - the chunk's 32 packed bytes, loaded into both halves (a broadcast load), give the low
//!   nibbles (sub-block `2q`) in the low half and the high nibbles (`2q + 1`) in the high
//!   half by one GF(2) affine op, in the activations' own order; q5_K's fifth bits are a
//!   `vptestmb` of its `qh` bytes and a masked add of 16;
//! - `vpdpbusd` sums four level-times-activation products into each i32 lane (at most 31 *
//!   128 * 4 in magnitude: an i16), two chunks' lanes are paired as i16 (`vpermt2w`) and one
//!   `vpdpwssd` multiplies both by their sub-blocks' scales (spread by one `vpermb`).
//!
//! That is 14 ops a row and super-block for q4_K (22 for q5_K), where the rest of a block,
//! done row by row as ggml does it (the scales and mins unpacked in general registers, the
//! mins' term, the float steps), took as many again; with 512-bit ops only two ports do
//! vector work (three with 256-bit ones), so a zmm form pays only where the whole block's op
//! count falls by more than a third. So the rows' per-block values sit in the 128-bit lanes
//! of shared registers, row r in lane r, and one op serves all four rows: the 12 scale bytes
//! unpacked by a byte shuffle, two `vpmultishiftqb` and two masks; `d` and `dmin` of every
//! row by one `vcvtph2ps` and one multiply; the mins times the activations' 16-sums (added
//! in pairs once a block) by one `vpmaddwd`, q5_K's sums across lanes by two shuffles and
//! adds; two rows' halves folded and their float steps in one zmm.
//!
//! The i32 lanes are ggml's: zmm lane `l` is its lane `l % 8` of sub-block `2q + l / 8`, the
//! halves summed before the float steps, and every float step is ggml's, lane for lane (q5_K's
//! minimum term per row in a lane of its own), so the results are the same bits as the
//! 256-bit kernels'.
//!
//! Measured on an Intel Xeon (Emerald Rapids), against the table's VNNI kernels, one process,
//! alternating: from L1, ticks a super-block and row, four rows q4_K 17.2-18.0 -> 11.6-12.6,
//! q5_K 22.4-25.3 -> 15.4-15.9, two rows 1.2-1.3x, one row level (with each row's values in
//! registers of its own instead, four rows were only 1.1-1.2x faster); MUL_MAT 4096 x 14336,
//! n = 1, 2 threads, best us, both orders: from the cache q4_K 1583 / 1265 -> 1027 / 910,
//! q5_K 1639 / 1307 -> 1170 / 953; from DRAM (900 MiB of copies cycled) level, 1305 / 1282
//! against 1264 / 1235 and 1588 / 1624 against 1636 / 1555 (the memory's pace).

use std::arch::x86_64::*;

use super::super::ops::Simd;
use super::super::prefetch;
use super::super::x86::Avx512;
use super::rowpairs::{cut, scaled_pair, with_lane, with_u32, RowSums, PAIR_WORDS};
use super::{load64, NIBBLE_BITS};
use crate::types::quant::{BlockQ4K, BlockQ5K, BlockQ8K};

/// A q4_K or q5_K block: `d`, `dmin` and the 12 scale bytes first, then (q5_K) the 32 bytes
/// of fifth bits, then the 128 bytes of nibbles.
trait Block: bytemuck::Pod {
    /// Whether the block has fifth bits (q5_K).
    const FIFTH: bool;
    fn qs(&self) -> &[u8; 128];
    /// The fifth bits (q5_K).
    fn qh(&self) -> Option<&[u8; 32]>;
}

impl Block for BlockQ4K {
    const FIFTH: bool = false;
    fn qs(&self) -> &[u8; 128] {
        &self.qs
    }
    fn qh(&self) -> Option<&[u8; 32]> {
        None
    }
}

impl Block for BlockQ5K {
    const FIFTH: bool = true;
    fn qs(&self) -> &[u8; 128] {
        &self.qs
    }
    fn qh(&self) -> Option<&[u8; 32]> {
        Some(&self.qh)
    }
}

/// The `qh` bit of chunk `q`'s weights: bit `2q` in the low half, `2q + 1` in the high half.
const FIFTH_BITS: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |q, b| 1u8 << (2 * q + b / 32));

/// The tables that unpack the scales and mins, each a 16-byte table in every 128-bit lane
/// (row r's 12 scale bytes `sc` are in lane r):
/// - `[0]`: a byte shuffle that puts in each qword every field its output bytes take: qword 0
///   `sc[0..4], sc[8..12]` (the scales), qword 1 `sc[4..12]` (the mins);
/// - `[1]`, `[2]`: the `vpmultishiftqb` offsets of the fields' low bits and their masks:
///   output byte `j` of qword 0 is scale `j`, of qword 1 min `j`; scales and mins 0-3 the low
///   six bits of their bytes, scales 4-7 the low nibble of `sc[j + 4]`, mins 4-7 its high one;
/// - `[3]`, `[4]`: offsets that put the top two bits of `sc[j - 4]` (scales 4-7) or `sc[j]`
///   (mins 4-7) at bits 4-5 of output byte `j`, and their mask (bytes 0-3 take none).
const UNPACK: [[u8; 64]; 5] = {
    const T: [[u8; 16]; 5] = [
        [0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11],
        [0, 8, 16, 24, 32, 40, 48, 56, 0, 8, 16, 24, 36, 44, 52, 60],
        [0x3f, 0x3f, 0x3f, 0x3f, 0x0f, 0x0f, 0x0f, 0x0f, 0x3f, 0x3f, 0x3f, 0x3f, 0x0f, 0x0f, 0x0f, 0x0f],
        [0, 0, 0, 0, 2, 10, 18, 26, 0, 0, 0, 0, 2, 10, 18, 26],
        [0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30, 0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30],
    ];
    table2d!([[u8; 64]; 5], |t, b| T[t][b % 16])
};

/// `vpermb` indices that spread the scales of chunks `2p`, `2p + 1` of the row whose scales
/// are in 128-bit lane `r` (bytes `16r..16r + 8`) to the pairs made by [`PAIR_WORDS`], at
/// `[2r + p]`: lane `l < 8` takes scales `4p` and `4p + 2` as i16, lane `l >= 8` scales
/// `4p + 1` and `4p + 3` (odd bytes zeroed by the mask).
const SCALE_PAIRS: [[u8; 64]; 8] =
    table2d!([[u8; 64]; 8], |rp, b| (16 * (rp / 2) + 4 * (rp % 2) + b / 32 + 2 * ((b % 4) / 2)) as u8);

even_bytes_op!(
    /// The bytes of `src` that `idx` picks.
    permute_words(idx, src),
    "avx512f,avx512bw,avx512vbmi",
    "vpermb {out} {{{k}}}{{z}}, {idx}, {src}"
);

/// `vpermps` indices: each 128-bit lane `r` takes row r's `dmin` (lane `2r + 1` of the
/// rows' factors `[d0, dmin0, d1, dmin1, ..]`).
const DMIN_LANES: [u32; 16] = table2d!([u32; 16], |j| (2 * (j / 4) + 1) as u32);

/// `vpermps` indices for rows `2p` and `2p + 1`: their `d` in lanes 0-7 and 8-15.
const D_LANES: [[u32; 16]; 2] = table2d!([[u32; 16]; 2], |p, j| (2 * (2 * p + j / 8)) as u32);

/// Every row's scales (bytes 0-7) and mins (bytes 8-15) in its 128-bit lane, from the 12
/// scale bytes in `heads` (row r's at bytes 16r..16r + 12): a byte shuffle, two
/// `vpmultishiftqb` and two masks for all rows.
#[inline(always)]
unsafe fn scales_mins(heads: __m512i, t: &[__m512i; 5]) -> __m512i {
    let sc = _mm512_shuffle_epi8(heads, t[0]);
    let low = _mm512_and_si512(_mm512_multishift_epi64_epi8(t[1], sc), t[2]);
    // low | (high & high_mask)
    _mm512_ternarylogic_epi64::<0xf8>(low, _mm512_multishift_epi64_epi8(t[3], sc), t[4])
}

/// `R` rows of q4_K or q5_K dotted with `y`, each result the 256-bit kernels' bits. Row r's
/// per-block values (scales, mins, factors) sit in 128-bit lane r of shared registers, so
/// that their unpacking, the mins' term and the float steps take one op for every row.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
unsafe fn rows<B: Block, const R: usize>(x: [&[B]; R], y: &[BlockQ8K]) -> [f32; R] {
    const { assert!(R == 1 || R == 2 || R == 4) };
    let s = Avx512::new_unchecked();
    let x = cut(x, y.len());
    let unpack = [
        load64(s, &UNPACK[0]),
        load64(s, &UNPACK[1]),
        load64(s, &UNPACK[2]),
        load64(s, &UNPACK[3]),
        load64(s, &UNPACK[4]),
    ];
    let nibble_bits = load64(s, &NIBBLE_BITS);
    let fifth_bits =
        [load64(s, &FIFTH_BITS[0]), load64(s, &FIFTH_BITS[1]), load64(s, &FIFTH_BITS[2]), load64(s, &FIFTH_BITS[3])];
    let pair_words = load64(s, &PAIR_WORDS);
    let (dmin_lanes, d_lanes) = (load64(s, &DMIN_LANES), [load64(s, &D_LANES[0]), load64(s, &D_LANES[1])]);
    let sixteen = _mm512_set1_epi8(16);
    // -0.0 in the odd lanes: y.d's sign flipped there, for the dmin products.
    let negate_odd = _mm256_castsi256_ps(_mm256_set1_epi64x(i64::MIN));
    let zero = _mm512_setzero_si512();
    let mut sums = RowSums::<R>::new();
    // q4_K: row r's minimum term in the four lanes of 128-bit lane r (ggml's `acc_m`);
    // q5_K: row r's running sum in lane 4r (ggml's scalar `summs`).
    let mut acc_m = _mm512_setzero_ps();
    for (i, by) in y.iter().enumerate() {
        let mut heads = zero;
        let mut halves = _mm_setzero_si128();
        for (r, row) in x.iter().enumerate() {
            prefetch::row_block::<Avx512, _, R>(s, row, i);
            let head = &row[i] as *const B as *const u8;
            let scale_bytes = _mm_loadu_si128(head.add(4) as *const _);
            heads = with_lane(heads, r, scale_bytes);
            halves = with_u32(halves, r, (head as *const i32).read_unaligned());
        }
        let sm = scales_mins(heads, &unpack);
        // [y.d * d, -y.d * dmin] for each row in turn: ggml's products, exactly.
        let yd = _mm256_xor_ps(_mm256_set1_ps(by.d.get()), negate_odd);
        let factors = _mm512_castps256_ps512(_mm256_mul_ps(yd, _mm256_cvtph_ps(halves)));
        // The activations' 16-sums added in pairs (bsums[2j] + bsums[2j + 1] in i16 lane j),
        // then mins[2l] * pair[2l] + mins[2l + 1] * pair[2l + 1] in lane l of each row's lane.
        let bsums = by.bsums.as_ptr() as *const __m128i;
        let pair_sums = _mm512_broadcast_i32x4(_mm_hadd_epi16(_mm_loadu_si128(bsums), _mm_loadu_si128(bsums.add(1))));
        let prods = _mm512_madd_epi16(_mm512_unpackhi_epi8(sm, zero), pair_sums);
        let dmin = _mm512_permutexvar_ps(dmin_lanes, factors);
        if B::FIFTH {
            // Each row's four lanes summed (in every lane of its 128), times its dmin.
            let h = _mm512_add_epi32(prods, _mm512_shuffle_epi32::<0b01_00_11_10>(prods));
            let h = _mm512_add_epi32(h, _mm512_shuffle_epi32::<0b10_11_00_01>(h));
            acc_m = _mm512_add_ps(acc_m, _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(h)));
        } else {
            acc_m = _mm512_fmadd_ps(dmin, _mm512_cvtepi32_ps(prods), acc_m);
        }
        let mut hbits = [zero; R];
        for r in 0..R {
            if let Some(qh) = x[r][i].qh() {
                hbits[r] = _mm512_broadcast_i64x4(_mm256_loadu_si256(qh.as_ptr() as *const _));
            }
        }
        let mut sumi = [zero; R];
        for p in 0..2 {
            let y0 = _mm512_loadu_si512(by.qs.as_ptr().add(128 * p) as *const _);
            let y1 = _mm512_loadu_si512(by.qs.as_ptr().add(128 * p + 64) as *const _);
            for r in 0..R {
                let mut dots = [y0, y1];
                for (h, dot) in dots.iter_mut().enumerate() {
                    let q = 2 * p + h;
                    let packed =
                        _mm512_broadcast_i64x4(_mm256_loadu_si256(x[r][i].qs().as_ptr().add(32 * q) as *const _));
                    let mut levels = _mm512_gf2p8affine_epi64_epi8::<0>(packed, nibble_bits);
                    if B::FIFTH {
                        let k = _mm512_test_epi8_mask(hbits[r], fifth_bits[q]);
                        levels = _mm512_mask_add_epi8(levels, k, levels, sixteen);
                    }
                    *dot = _mm512_dpbusd_epi32(zero, levels, *dot);
                }
                let scales = permute_words(load64(s, &SCALE_PAIRS[2 * r + p]), sm);
                scaled_pair(&mut sumi[r], dots[0], dots[1], pair_words, scales);
            }
        }
        sums.add(&sumi, factors, &d_lanes);
    }
    let m: [[f32; 4]; 4] = std::mem::transmute(acc_m);
    let mut out = [0f32; R];
    for r in 0..R {
        let [m0, m1, m2, m3] = m[r];
        out[r] = s.hsum(sums.row(r)) + if B::FIFTH { m0 } else { (m0 + m2) + (m1 + m3) };
    }
    out
}

/// The table entries of one of the two types.
macro_rules! k45_entries {
    ($m:ident, $block:ty) => {
        pub(crate) mod $m {
            use super::*;

            unsafe fn rows<const R: usize>(x: [&[$block]; R], y: &[BlockQ8K]) -> [f32; R] {
                super::rows::<$block, R>(x, y)
            }

            row_entries!($block);
        }
    };
}

k45_entries!(q4k, BlockQ4K);
k45_entries!(q5k, BlockQ5K);
