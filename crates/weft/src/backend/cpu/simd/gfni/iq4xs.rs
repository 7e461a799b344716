//! iq4_xs's dot product in 512-bit registers (AVX-512 F/BW + VNNI + GFNI), for one, two and
//! four rows. One zmm holds two 32-weight groups, and per zmm a row takes seven ops where
//! ggml's 256-bit form (`iq4::iq4_xs`) takes about twenty for the same 64 weights:
//! - the 16 packed bytes of each group, loaded into two lanes each (a broadcast load, no
//!   shuffle), give their low nibbles in lanes 0-1 and their high nibbles in lanes 2-3 by one
//!   GF(2) affine op (a bit matrix per 64-bit lane); the activations are put in that order
//!   instead, once for every row;
//! - the level's magnitude comes from a 16-byte table (`vpshufb`) and its sign, a test of the
//!   nibble's top bit, negates the activations under a mask: ggml's sign trick, the same bytes;
//! - `vpmaddubsw` then `vpdpwssd` by the group's scale (one `vpshufb` spreads a block's eight
//!   scales, unpacked once in general registers).
//!
//! The i32 lanes are ggml's: zmm lane `l` of 128-bit lane 0 (1) is group `2q`'s (`2q + 1`'s)
//! lane `l`, lanes 2-3 its lanes `4 + l`, summed before the float steps, so the results are
//! the 256-bit kernels' bits (y = -128 included: the masked negation wraps as `vpsignb` does).

use std::arch::x86_64::*;

use super::super::legacy::hsums;
use super::super::ops::Simd;
use super::super::prefetch;
use super::super::x86::Avx512;
use super::{load64, NIBBLE_BITS};
use crate::types::quant::grids::KVALUES_IQ4NL;
use crate::types::quant::{BlockIq4Xs, BlockQ8K};

/// The bit of each packed byte that is its nibble's top bit (clear: a negative level):
/// bit 3 in lanes 0-1 (low nibbles), bit 7 in lanes 2-3.
const SIGN_BITS: [u8; 64] = table2d!([u8; 64], |b| if b < 32 { 0x08 } else { 0x80 });

/// The iq4_nl levels' magnitudes, in each 128-bit lane (`vpshufb` looks up within a lane).
const LEVEL_MAGNITUDES: [u8; 64] = table2d!([u8; 64], |b| KVALUES_IQ4NL[b % 16].unsigned_abs());

/// `vpshufb` indices that spread a block's eight i16 scales (in every 128-bit lane) over zmm
/// `q`: lanes 0 and 2 take group `2q`'s, lanes 1 and 3 group `2q + 1`'s (bytes `2g`, `2g + 1`).
/// A byte shuffle, not `vpermw` (measured in the step at about twice its cost).
const SCALE_IDX: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |q, b| (2 * (2 * q + (b / 16) % 2) + b % 2) as u8);

/// A block's eight 6-bit scales less 32 as i16 lanes 0-7 of every 128-bit lane: the low
/// nibbles and the high pairs of bits deposited into bytes (`pdep`), joined, widened.
#[inline(always)]
fn scales(bx: &BlockIq4Xs) -> __m512i {
    let low = u32::from_le_bytes(bx.scales_l) as u64;
    let high = bx.scales_h.get() as u64;
    // SAFETY: only inside `rows`, whose target features include BMI2 and AVX-512 F/BW/VL.
    unsafe {
        let bytes = _pdep_u64(low, 0x0f0f_0f0f_0f0f_0f0f) | _pdep_u64(high, 0x3030_3030_3030_3030);
        let ls = _mm_sub_epi16(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(bytes as i64)), _mm_set1_epi16(32));
        _mm512_broadcast_i32x4(ls)
    }
}

/// One zmm of one row: `sumi + scales * (|level| * (y signed like level))` in i32 lanes by
/// `vpmaddubsw` and `vpdpwssd`, the levels' nibbles picked out of `packed` (the two groups'
/// bytes in lanes 0-1 and again in 2-3) by the affine op. In asm because LLVM rewrites
/// `vpdpwssd` as `vpmaddwd` + `vpaddd` and the masked negation as a blend.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,gfni")]
#[inline]
unsafe fn step(
    sumi: &mut __m512i,
    packed: __m512i,
    nibble_bits: __m512i,
    sign_bits: __m512i,
    magnitudes: __m512i,
    y: __m512i,
    scales: __m512i,
) {
    let zero = _mm512_setzero_si512();
    let _levels: __m512i;
    std::arch::asm!(
        "vgf2p8affineqb {lv}, {packed}, {mat}, 0",
        "vptestnmb {k}, {packed}, {signs}",
        "vpshufb {lv}, {mags}, {lv}",
        "vpsubb {ys} {{{k}}}, {zero}, {ys}",
        "vpmaddubsw {lv}, {lv}, {ys}",
        "vpdpwssd {acc}, {lv}, {sc}",
        lv = out(zmm_reg) _levels,
        k = out(kreg) _,
        ys = inout(zmm_reg) y => _,
        acc = inout(zmm_reg) *sumi,
        packed = in(zmm_reg) packed,
        mat = in(zmm_reg) nibble_bits,
        signs = in(zmm_reg) sign_bits,
        mags = in(zmm_reg) magnitudes,
        zero = in(zmm_reg) zero,
        sc = in(zmm_reg) scales,
        options(pure, nomem, nostack),
    );
}

/// `R` rows of iq4_xs dotted with `y`, each result the 256-bit kernels' bits.
#[target_feature(enable = "avx2,fma,f16c,bmi2,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
unsafe fn rows<const R: usize>(x: [&[BlockIq4Xs]; R], y: &[BlockQ8K]) -> [f32; R] {
    let s = Avx512::new_unchecked();
    let n = y.len();
    let x = x.map(|r| &r[..n]);
    let (nibble_bits, sign_bits) = (load64(s, &NIBBLE_BITS), load64(s, &SIGN_BITS));
    let magnitudes = load64(s, &LEVEL_MAGNITUDES);
    let idx = SCALE_IDX.map(|t| load64(s, &t));
    let mut acc = [s.fzero(); R];
    for (i, by) in y.iter().enumerate() {
        let mut ls = [_mm512_setzero_si512(); R];
        for r in 0..R {
            prefetch::row_block::<Avx512, _, R>(s, x[r], i);
            ls[r] = scales(&x[r][i]);
        }
        let mut sumi = [[_mm512_setzero_si512(); 2]; R];
        for (q, idx) in idx.iter().enumerate() {
            // Activations 64q..64q + 64 with their 16-byte lanes in the order [0, 2, 1, 3]:
            // group 2q's first half, group 2q + 1's, then their second halves.
            let yv = _mm512_loadu_si512(by.qs.as_ptr().add(64 * q) as *const _);
            let yv = _mm512_shuffle_i64x2::<0b11_01_10_00>(yv, yv);
            for r in 0..R {
                let packed = _mm512_broadcast_i64x4(_mm256_loadu_si256(x[r][i].qs.as_ptr().add(32 * q) as *const _));
                let scales = _mm512_shuffle_epi8(ls[r], *idx);
                let chain = if R >= 4 { 0 } else { q % 2 };
                step(&mut sumi[r][chain], packed, nibble_bits, sign_bits, magnitudes, yv, scales);
            }
        }
        for r in 0..R {
            // 128-bit lanes [even groups' 0-3, odd groups' 0-3, even 4-7, odd 4-7] -> ggml's
            // eight lanes [0-3 summed, 4-7 summed].
            let both = _mm512_add_epi32(sumi[r][0], sumi[r][1]);
            let paired = _mm512_shuffle_i64x2::<0b11_01_10_00>(both, both);
            let lanes = _mm256_add_epi32(_mm512_castsi512_si256(paired), _mm512_extracti64x4_epi64::<1>(paired));
            let d = s.f16(x[r][i].d.bits()) * by.d.get();
            acc[r] = s.fmadd(s.fsplat(d), s.cvt_i32(lanes), acc[r]);
        }
    }
    hsums(s, acc)
}

row_entries!(BlockIq4Xs);
