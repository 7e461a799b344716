//! iq2_xxs's dot product in 512-bit registers with GFNI and VBMI (Ice Lake and later, Zen 4):
//! no grid row is fetched from memory. Every iq2_xxs grid byte is one of three levels (8, 25,
//! 43), so a grid row is a 16-bit code of eight 2-bit digits, and a GF(2) affine op maps a
//! digit to its level (`8 ^ 0x11 * b0 ^ 0x23 * b1` is linear in the digit's bits). Per two
//! blocks, four `vpermi2b` look their 64 rows' codes up in registers (a table of the codes'
//! low and one of their high bytes, 256 each) and two byte interleaves join the halves; per
//! zmm of 64 weights (two groups), a `vpermb` spreads its eight codes to their 64-bit lanes, a
//! `vpmultishiftqb` moves digit j to byte j, and the affine op makes the levels. The signs
//! take another affine op: with a lane's 7-bit sign field as the matrix and the bytes `1 << j`
//! (and `0x7f`) as the operand, byte j comes out 0xff where bit j is set and byte 7 where the
//! field's parity is odd (ggml's implied eighth sign), which a mask negates the activations
//! with (ggml's `vpsignb`, the same bytes). Then `vpmaddubsw` and `vpdpwssd` by the group's
//! odd scale `2 * ls + 1`.
//!
//! The i32 lanes are ggml's: zmm lanes 0-7 and 8-15 are the two groups' lanes of its 256-bit
//! kernel, summed before the float steps, so the results are the same bits.
//!
//! Measured on an Intel Xeon (Emerald Rapids), against the table's kernel (ggml's form): from
//! L1, ticks a super-block and row, 38.6-42.1 -> 28.4-30.8 with a block's codes looked up on
//! their own (those four lookups alone about 11 ticks: `vpermi2b` runs one every two cycles; a
//! 512-bit gather of the rows instead measured level, 28.7 against 29.4), two blocks' at once
//! 6-7% faster again (three runs, one process: 20.5-21.3 -> 19.2-19.7, the table's 28.9-30.5);
//! MUL_MAT 4096 x 14336, n = 1, 2 threads, the two builds alternating in one process, both
//! orders, best us: from DRAM 2396 / 2387 -> 1618 / 1578, from the cache 2359 / 2933 -> 1562 /
//! 1909 (the single-block lookups: 1754 against 1619 for the pairs).

use std::arch::x86_64::*;

use super::super::iq2::ODD_SCALE_SPLATS;
use super::super::ops::Simd;
use super::super::prefetch;
use super::super::x86::Avx512;
use super::{load64, SIGN_PICK};
use crate::types::quant::grids::IQ2XXS_GRID;
use crate::types::quant::{BlockIq2Xxs, BlockQ8K};

/// Grid row `i`'s 2-bit digits (8 -> 0, 25 -> 1, 43 -> 2), digit j from byte j: the low byte
/// (`high = false`) or the high byte of the 16-bit code, rows 64k.. in `[k]`. A grid byte of
/// any other value stops the build.
const fn code_bytes(high: bool) -> [[u8; 64]; 4] {
    let mut t = [[0u8; 64]; 4];
    let mut i = 0;
    while i < 256 {
        let mut code = 0u16;
        let mut j = 0;
        while j < 8 {
            let digit = match (IQ2XXS_GRID[i] >> (8 * j)) as u8 {
                0x08 => 0,
                0x19 => 1,
                0x2b => 2,
                _ => panic!("an iq2_xxs grid byte that is not a level"),
            };
            code |= digit << (2 * j);
            j += 1;
        }
        t[i / 64][i % 64] = if high { (code >> 8) as u8 } else { code as u8 };
        i += 1;
    }
    t
}

/// The codes' low and high bytes.
const CODE_LOW: [[u8; 64]; 4] = code_bytes(false);
const CODE_HIGH: [[u8; 64]; 4] = code_bytes(true);

/// `vpmultishiftqb` offsets that move digit j (bits 2j, 2j + 1 of the lane) to byte j's low bits.
const DIGIT_SHIFTS: [u8; 64] = table2d!([u8; 64], |b| (2 * (b % 8)) as u8);

/// `vpmultishiftqb` offsets that put sign field `s % 4` of the lane's group word (the lane's
/// high 32 bits) in every byte of 64-bit lane `s`: bits 0-6 the field (bit 7 the next field's
/// first, which [`SIGN_PICK`] never reads).
const FIELD_SHIFTS: [u8; 64] = table2d!([u8; 64], |b| (32 + 7 * ((b / 8) % 4)) as u8);

/// The bit matrix that maps a digit in bits 0-1 (other bits ignored) to its level with the
/// constant 8: output bit i is the parity of the input and the matrix's byte `7 - i`.
const LEVEL_MATRIX: u64 = {
    let (b0, b1) = (0x08 ^ 0x19, 0x08 ^ 0x2b);
    let mut m = 0u64;
    let mut i = 0;
    while i < 8 {
        let row = ((b0 >> i) & 1) | (((b1 >> i) & 1) << 1);
        m |= (row as u64) << (8 * (7 - i));
        i += 1;
    }
    m
};

/// Byte `p` of the two-block index vector: grid index `p % 32` of block `p / 32` (group
/// `i / 4`, byte `i % 4` of its eight), taken from that block's bytes.
const PAIR_INDEX: [u8; 64] = table2d!([u8; 64], |p| (8 * ((p % 32) / 4) + p % 4) as u8);

/// For block `b` of a pair and zmm half `h` (zmms `2h`, `2h + 1`): 64-bit lane `s` takes
/// code `32b + 16h + 8(q % 2) + s`, which the byte interleave put at 16-byte lane `2b + h`,
/// u16 `s`, of the zmm's vector ([`codes2`]: `q % 2` picks it).
const PAIR_PLACE: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |bh, x| (16 * bh + 2 * (x / 8) + x % 2) as u8);

/// Two blocks' 64 grid rows' codes (the second block may be the first again): the low and
/// the high bytes looked up 64 at a time, then interleaved into u16 codes, 16-byte lane `L`
/// of `[0]` holding codes `16L..16L + 8` and of `[1]` codes `16L + 8..16L + 16`.
#[inline(always)]
fn codes2(
    b0: &BlockIq2Xxs,
    b1: &BlockIq2Xxs,
    pair_index: __m512i,
    low: &[__m512i; 4],
    high: &[__m512i; 4],
) -> [__m512i; 2] {
    // SAFETY: only inside `dot`, whose target features include AVX-512 BW and VBMI.
    unsafe {
        let first = _mm512_permutexvar_epi8(pair_index, _mm512_loadu_si512(b0.qs.as_ptr() as *const _));
        let idx = _mm512_mask_permutexvar_epi8(
            first,
            0xffff_ffff_0000_0000,
            pair_index,
            _mm512_loadu_si512(b1.qs.as_ptr() as *const _),
        );
        let upper = _mm512_movepi8_mask(idx);
        let lo = _mm512_mask_blend_epi8(
            upper,
            _mm512_permutex2var_epi8(low[0], idx, low[1]),
            _mm512_permutex2var_epi8(low[2], idx, low[3]),
        );
        let hi = _mm512_mask_blend_epi8(
            upper,
            _mm512_permutex2var_epi8(high[0], idx, high[1]),
            _mm512_permutex2var_epi8(high[2], idx, high[3]),
        );
        [_mm512_unpacklo_epi8(lo, hi), _mm512_unpackhi_epi8(lo, hi)]
    }
}

/// One zmm (groups `2q`, `2q + 1`): `sumi + scale * levels * (y signed)`, `words` the groups'
/// 16 bytes (each: four grid indices, then the word of four sign fields and the scale) and
/// `y` their 64 activations. In asm because LLVM takes the two words out of the block's
/// register (`vpermq`, port 5) where two broadcast loads cost a merge on either vector port,
/// and the scales' nibbles likewise (`vpextrb`, two uops each).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx512vbmi,gfni")]
#[inline]
unsafe fn step(
    sumi: &mut __m512i,
    levels: __m512i,
    words: *const u8,
    y: *const i8,
    field_shifts: __m512i,
    sign_pick: __m512i,
) {
    let (_pair, _ys, _sc): (__m512i, __m512i, __m512i);
    std::arch::asm!(
        // Group 2q's eight bytes in lanes 0-3, 2q + 1's in lanes 4-7.
        "vpbroadcastq {pair}, qword ptr [{w}]",
        "vpbroadcastq {pair} {{{hi}}}, qword ptr [{w} + 8]",
        "vpmultishiftqb {pair}, {fields}, {pair}",
        "vgf2p8affineqb {pair}, {pick}, {pair}, 0",
        "vpmovb2m {k}, {pair}",
        "vmovdqu64 {ys}, zmmword ptr [{y}]",
        "vpxord {pair}, {pair}, {pair}",
        "vpsubb {ys} {{{k}}}, {pair}, {ys}",
        "vpmaddubsw {ys}, {lv}, {ys}",
        // The groups' odd scales, each over its 256 bits.
        "movzx {a:e}, byte ptr [{w} + 7]",
        "movzx {b:e}, byte ptr [{w} + 15]",
        "shr {a:e}, 4",
        "shr {b:e}, 4",
        "shl {a:e}, 5",
        "shl {b:e}, 5",
        "vbroadcasti64x4 {sc}, ymmword ptr [{tab} + {a}]",
        "vinserti64x4 {sc}, {sc}, ymmword ptr [{tab} + {b}], 1",
        "vpdpwssd {acc}, {ys}, {sc}",
        pair = out(zmm_reg) _pair,
        ys = out(zmm_reg) _ys,
        sc = out(zmm_reg) _sc,
        k = out(kreg) _,
        hi = in(kreg) 0xf0u64,
        a = out(reg) _,
        b = out(reg) _,
        acc = inout(zmm_reg) *sumi,
        lv = in(zmm_reg) levels,
        w = in(reg) words,
        y = in(reg) y,
        fields = in(zmm_reg) field_shifts,
        pick = in(zmm_reg) sign_pick,
        tab = in(reg) ODD_SCALE_SPLATS.as_ptr(),
        options(pure, readonly, nostack),
    );
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,gfni")]
unsafe fn iq2_xxs(x: &[BlockIq2Xxs], y: &[BlockQ8K]) -> f32 {
    let s = Avx512::new_unchecked();
    let x = &x[..y.len()];
    let (low, high) = (CODE_LOW.map(|t| load64(s, &t)), CODE_HIGH.map(|t| load64(s, &t)));
    let (pair_index, pair_place) = (load64(s, &PAIR_INDEX), PAIR_PLACE.map(|t| load64(s, &t)));
    let (digit_shifts, field_shifts) = (load64(s, &DIGIT_SHIFTS), load64(s, &FIELD_SHIFTS));
    let (level_matrix, sign_pick) = (_mm512_set1_epi64(LEVEL_MATRIX as i64), _mm512_set1_epi64(SIGN_PICK as i64));
    let zero = _mm512_setzero_si512();
    let mut acc = s.fzero();
    let mut pair = [zero; 2];
    for (i, (bx, by)) in x.iter().zip(y).enumerate() {
        prefetch::row_block::<Avx512, _, 1>(s, x, i);
        // Codes for this block and the next (an odd last block: itself again).
        if i % 2 == 0 {
            pair = codes2(bx, x.get(i + 1).unwrap_or(bx), pair_index, &low, &high);
        }
        let mut sumi = [zero; 2];
        for q in 0..4 {
            let spread = _mm512_permutexvar_epi8(pair_place[2 * (i % 2) + q / 2], pair[q % 2]);
            let digits = _mm512_multishift_epi64_epi8(digit_shifts, spread);
            let levels = _mm512_gf2p8affine_epi64_epi8::<0x08>(digits, level_matrix);
            let (words, yq) = (bx.qs.as_ptr().add(16 * q), by.qs.as_ptr().add(64 * q));
            step(&mut sumi[q % 2], levels, words, yq, field_shifts, sign_pick);
        }
        let both = _mm512_add_epi32(sumi[0], sumi[1]);
        let lanes = _mm256_add_epi32(_mm512_castsi512_si256(both), _mm512_extracti64x4_epi64::<1>(both));
        let d = s.f16(bx.d.bits()) * by.d.get();
        acc = s.fmadd(s.fsplat(d), s.cvt_i32(lanes), acc);
    }
    0.125 * s.hsum(acc)
}

/// One row ([`super::super::table::DotFn`]).
///
/// # Safety
/// [`super::vbmi_available`]; `x` and `y` whole blocks of iq2_xxs and q8_K, as many of each.
pub(crate) unsafe fn dot(x: &[u8], y: &[u8]) -> f32 {
    iq2_xxs(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
}
