//! q3_K's dot product in 512-bit registers (AVX-512 F/BW + VNNI + GFNI), for one, two and
//! four rows: one zmm holds two of a half's four 32-weight vectors, so each step does for 64
//! weights what the 256-bit kernel (`kquants::q3_k_rows`) does for 32, with fewer ops a
//! weight besides:
//! - a vector's 2-bit levels come out of the level bytes in one GF(2) affine op
//!   (`vgf2p8affineqb`, a bit matrix per 64-bit lane) where a shift and a mask were two;
//! - the scales go in with one `vpdpwssd` a zmm (each i32 lane's dot fits its low i16, the
//!   scale lane's high i16 is 0), where the 256-bit form paired two vectors' dots with
//!   `vpermt2w` (three uops on Intel) for one `madd`;
//! - a block's 16 scales unpack in six vector ops ([`scale_lanes`]).
//!
//! The i32 lanes are ggml's: zmm lanes `l` and `l + 8` are vector `2p` and `2p + 1`'s lane `l`,
//! summed before the float steps, so results match ggml's x86 build bit for bit as the
//! 256-bit kernel's do.
//!
//! Measured on an Intel Xeon (Emerald Rapids), against the 256-bit pair it replaces there:
//! from L1, ticks a super-block and row, both in one process, 18.8 -> 14.3 (four rows) and
//! 15.0 (two); MUL_MAT 4096 x 14336, n = 1, 2 threads, calls alternating in one process, best
//! us, three runs: 1137 / 1237 / 1204 -> 867 / 923 / 902 (its pair without GFNI, a shift
//! and a mask for the levels: 1052 / 1015 / 1035).

use std::arch::x86_64::*;

use super::super::legacy::hsums;
use super::super::ops::Simd;
use super::super::prefetch;
use super::super::x86::Avx512;
use super::{level_bits, load64};
use crate::types::quant::{BlockQ3K, BlockQ8K};

/// Dword indices that spread a block's scales over zmm `q` (half `q / 2`, pair `q % 2`):
/// i32 lane `L` takes scale `4q + L / 4`.
const SCALE_IDX: [[u32; 16]; 4] = table2d!([[u32; 16]; 4], |q, l| (4 * q + l / 4) as u32);

/// Zmm `q`'s high-bit masks: in the 256 bits of vector `k` (`2q` low, `2q + 1` high, `k`
/// counted over both halves: half `j`'s vector `k'` is bit `4j + k'`), that bit of hmask.
const HIGH_BIT: [[u8; 64]; 4] = table2d!([[u8; 64]; 4], |q, b| 1 << (2 * q + b / 32));

/// [`level_bits`] of pair `p`'s vectors: 2p in qwords 0..4, 2p + 1 in qwords 4..8.
const LOW_BITS: [[u64; 8]; 2] = table2d!([[u64; 8]; 2], |p, w| level_bits(2 * p + w / 4));

/// Per i32 lane `i` (scale `i`): byte shuffle indices that put the byte holding its low
/// nibble (`i % 8`) in the low i16 and the byte holding its top two bits (`8 + i % 4`) in the
/// high i16, zero-extended (ggml's layout, `BlockQ3K::scales`).
const SCALE_BYTES: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 16 {
        // pshufb indexes within the lane's own 16 bytes, which hold all 12 scale bytes.
        t[4 * i] = (i % 8) as u8;
        t[4 * i + 1] = 0x80;
        t[4 * i + 2] = (8 + i % 4) as u8;
        t[4 * i + 3] = 0x80;
        i += 1;
    }
    t
};

/// i16 shift counts for [`SCALE_BYTES`]: scale `i`'s nibble is the high one from scale 8
/// on; its top two bits sit at bit `2 * (i / 4)`.
const SCALE_SHIFTS: [u16; 32] = {
    let mut t = [0u16; 32];
    let mut i = 0;
    while i < 16 {
        t[2 * i] = (4 * (i / 8)) as u16;
        t[2 * i + 1] = (2 * (i / 4)) as u16;
        i += 1;
    }
    t
};

/// A block's 16 scales (6 bits less 32), scale `i` in i32 lane `i`'s low i16 and 0 in its
/// high i16: the nibble and the top bits moved to the lane's two i16 by one byte shuffle,
/// shifted into place and masked per i16, joined by `vpmaddwd` (nibble + 16 * top), less 32
/// in the low i16. Six ops where the 256-bit kernel's unpack (scalar code that LLVM
/// vectorises in xmm registers) takes about fifteen.
#[inline(always)]
fn scale_lanes(s: Avx512, scales: &[u8; 12]) -> __m512i {
    let (bytes, shifts) = (load64(s, &SCALE_BYTES), load64(s, &SCALE_SHIFTS));
    // SAFETY: the token proves AVX-512 F/BW/VL; the masked load reads only the 12 bytes (16
    // could run past the end of the row).
    unsafe {
        let scale_bytes = _mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(0x0fff, scales.as_ptr() as *const i8));
        let parts = _mm512_srlv_epi16(_mm512_shuffle_epi8(scale_bytes, bytes), shifts);
        let fields = _mm512_and_si512(parts, _mm512_set1_epi32(0x0003_000f));
        _mm512_sub_epi16(_mm512_madd_epi16(fields, _mm512_set1_epi32(0x0010_0001)), _mm512_set1_epi32(32))
    }
}

/// One zmm of one row: `sumi + scales * (u * y - 4 * sum(y))` in i32 lanes, `u` the unsigned
/// 3-bit levels (the 2-bit level picked out of `q3bits` by `low_bits`, plus 4 where `hbits &
/// bit`), `neg4y` the -4 * sum(y) of each lane. In asm because LLVM rewrites the intrinsics
/// into more uops: the masked byte add as an or and a blend (it knows the bits are
/// disjoint), `vpdpwssd` as `vpmaddwd` + `vpaddd`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,gfni")]
#[inline]
unsafe fn step(
    sumi: &mut __m512i,
    q3bits: __m512i,
    low_bits: __m512i,
    hbits: __m512i,
    bit: __m512i,
    y: __m512i,
    neg4y: __m512i,
    scales: __m512i,
) {
    let four = _mm512_set1_epi8(4);
    let _levels: __m512i;
    std::arch::asm!(
        "vgf2p8affineqb {u}, {q3}, {mat}, 0",
        "vptestmb {k}, {hb}, {bit}",
        "vpaddb {u} {{{k}}}, {u}, {four}",
        "vpdpbusd {d}, {u}, {y}",
        "vpdpwssd {acc}, {d}, {sc}",
        u = out(zmm_reg) _levels,
        k = out(kreg) _,
        d = inout(zmm_reg) neg4y => _,
        acc = inout(zmm_reg) *sumi,
        q3 = in(zmm_reg) q3bits,
        mat = in(zmm_reg) low_bits,
        hb = in(zmm_reg) hbits,
        bit = in(zmm_reg) bit,
        four = in(zmm_reg) four,
        y = in(zmm_reg) y,
        sc = in(zmm_reg) scales,
        options(pure, nomem, nostack),
    );
}

/// `R` rows of q3_K dotted with `y`, each result the 256-bit kernels' bits. Loops run over
/// the rows innermost, so that LLVM unrolls them and keeps every row's state in registers
/// (rows outermost, it kept four rows' sums on the stack: from L1, 0.82x the 256-bit pair's
/// time in the same run where rows innermost take 0.76x).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
unsafe fn rows<const R: usize>(x: [&[BlockQ3K]; R], y: &[BlockQ8K]) -> [f32; R] {
    let s = Avx512::new_unchecked();
    let n = y.len();
    let x = x.map(|r| &r[..n]);
    let four = _mm512_set1_epi8(4);
    let low_bits = [load64(s, &LOW_BITS[0]), load64(s, &LOW_BITS[1])];
    let mut acc = [s.fzero(); R];
    for (i, by) in y.iter().enumerate() {
        let (mut scales32, mut hbits) = ([_mm512_setzero_si512(); R], [_mm512_setzero_si512(); R]);
        for r in 0..R {
            if R == 1 {
                prefetch::row_block::<Avx512, _, R>(s, x[r], i);
            } else {
                prefetch::row_block_far::<Avx512, _, R>(s, x[r], i);
            }
            scales32[r] = scale_lanes(s, &x[r][i].scales);
            hbits[r] = _mm512_broadcast_i64x4(_mm256_loadu_si256(x[r][i].hmask.as_ptr() as *const _));
        }
        // Two sums a row where fewer than four rows would leave each chain of `vpdpwssd`
        // four deep; four rows have work enough in flight, and no registers to spare.
        let mut sumi = [[_mm512_setzero_si512(); 2]; R];
        for q in 0..4 {
            // Zmm q: activations 64q..64q + 64 (half q / 2, vectors 2(q % 2) and 2(q % 2) + 1),
            // and -4 times their sums of four, the start of every row's level dots.
            let (j, p) = (q / 2, q % 2);
            let yv = _mm512_loadu_si512(by.qs.as_ptr().add(64 * q) as *const _);
            let neg4y = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), four, yv));
            let (idx, bit) = (load64(s, &SCALE_IDX[q]), load64(s, &HIGH_BIT[q]));
            for r in 0..R {
                let q3bits = _mm512_broadcast_i64x4(_mm256_loadu_si256(x[r][i].qs.as_ptr().add(32 * j) as *const _));
                let scales = _mm512_permutexvar_epi32(idx, scales32[r]);
                let chain = if R >= 4 { 0 } else { p };
                step(&mut sumi[r][chain], q3bits, low_bits[p], hbits[r], bit, yv, neg4y, scales);
            }
        }
        for r in 0..R {
            let both = _mm512_add_epi32(sumi[r][0], sumi[r][1]);
            let lanes = _mm256_add_epi32(_mm512_castsi512_si256(both), _mm512_extracti64x4_epi64::<1>(both));
            let d = by.d.get() * s.f16(x[r][i].d.bits());
            acc[r] = s.fmadd(s.fsplat(d), s.cvt_i32(lanes), acc[r]);
        }
    }
    hsums(s, acc)
}

row_entries!(BlockQ3K);
