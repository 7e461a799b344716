//! What the 512-bit kernels of the grid I-quants too big for registers share (`iq1`, `iq2`:
//! iq2_xs and iq2_s, `iq3`): a super-block's 32 row indices built by byte ops and the rows
//! gathered eight (a zmm, 64 weights) at a time (iq1, iq2_s), the odd scales `2 * ls + 1` made
//! by one affine op, a zmm's i32 sums folded to ggml's eight lanes. Only used inside kernels
//! whose target features include AVX-512 BW, VBMI and GFNI, on CPUs where gathers are fast
//! (`super::gather_available`).

use std::arch::x86_64::*;

use super::super::x86::Avx512;
use super::load64;

/// How a block's 32 grid indices are made: one `vpermb` a 16 rows puts in u32 lane r the index's
/// low byte (byte 0) and the bytes its high bits come from (1, 2), one `vpmultishiftqb` brings
/// those bits down to bit 8 (each byte reads 8 bits at its offset within the qword of lanes
/// `2w`, `2w + 1`), and a mask keeps the index's bits (clearing whatever the permute left in the
/// bytes above).
#[derive(Clone, Copy)]
pub(super) struct GridIndex {
    perm: [__m512i; 2],
    shifts: __m512i,
    mask: __m512i,
}

impl GridIndex {
    /// `perm[h]`: the permute of rows `16h..16h + 16` over the kernel's block vector;
    /// `shifts`: the bit offsets; `bits`: the index's width.
    #[inline(always)]
    pub(super) fn new(s: Avx512, perm: &[[u8; 64]; 2], shifts: &[u8; 64], bits: u32) -> GridIndex {
        // SAFETY: the token proves AVX-512 F.
        let mask = unsafe { _mm512_set1_epi32((1 << bits) - 1) };
        GridIndex { perm: perm.map(|t| load64(s, &t)), shifts: load64(s, shifts), mask }
    }

    /// The 32 indices of a block whose bytes are `block`, rows `16h..16h + 16` in `[h]`.
    #[inline(always)]
    pub(super) fn of(self, block: __m512i) -> [__m512i; 2] {
        // SAFETY: only inside the kernels (AVX-512 BW and VBMI; see the module).
        self.perm.map(|p| unsafe {
            _mm512_and_si512(_mm512_multishift_epi64_epi8(self.shifts, _mm512_permutexvar_epi8(p, block)), self.mask)
        })
    }
}

/// [`GridIndex`]'s permutes for a block vector holding the 32 indices' low bytes at bytes 0-31
/// and their high bits from byte `qh_at` on, `per_byte` rows' to a byte: u32 lane r takes
/// byte r and byte `qh_at + r / per_byte`.
pub(super) const fn low_and_qh_perm(qh_at: usize, per_byte: usize) -> [[u8; 64]; 2] {
    table2d!([[u8; 64]; 2], |h, b| {
        let row = 16 * h + b / 4;
        if b % 4 == 0 {
            row as u8
        } else {
            (qh_at + row / per_byte) as u8
        }
    })
}

/// The indices of rows `8q..8q + 8` of [`GridIndex::of`]'s 32.
///
/// # Safety
/// AVX-512 F.
#[inline(always)]
pub(super) unsafe fn quarter(index: &[__m512i; 2], q: usize) -> __m256i {
    if q.is_multiple_of(2) {
        _mm512_castsi512_si256(index[q / 2])
    } else {
        _mm512_extracti64x4_epi64::<1>(index[q / 2])
    }
}

/// The eight rows of `table` (one qword a row) at `index`.
///
/// # Safety
/// AVX-512 F; every index below `table.len()`.
#[inline(always)]
pub(super) unsafe fn gather(index: __m256i, table: &[u64]) -> __m512i {
    _mm512_i32gather_epi64::<8>(index, table.as_ptr() as *const i64)
}

/// The affine op's matrix (`vgf2p8affineqb`, with the constant 1) for `2 * ls + 1` of a
/// `bits`-bit `ls` at bits `from..from + bits` of a byte (the other bits ignored): output bit
/// i (1..=bits) is input bit `from + i - 1`, and output bit i reads the matrix's byte `7 - i`.
pub(super) const fn odd_matrix(bits: u32, from: u32) -> u64 {
    let mut m = 0u64;
    let mut i = 1;
    while i <= bits {
        m |= (1u64 << (from + i - 1)) << (8 * (7 - i));
        i += 1;
    }
    m
}

/// The odd scales `2 * ls + 1` of a block's `bits`-bit fields: a `vpmultishiftqb` by a zmm's
/// offsets puts each field's `ls` in the bytes it weights (from the fields broadcast), one
/// affine op makes `2 * ls + 1`, in every byte (`vpdpbusd`'s operand) or in the even bytes
/// with the odd zeroed (`vpdpwssd`'s i16 lanes).
#[derive(Clone, Copy)]
pub(super) struct OddScales(__m512i);

impl OddScales {
    #[inline(always)]
    pub(super) fn new(_: Avx512, bits: u32) -> OddScales {
        // SAFETY: the token proves AVX-512 F.
        OddScales(unsafe { _mm512_set1_epi64(odd_matrix(bits, 0) as i64) })
    }

    /// The scales in every byte.
    ///
    /// # Safety
    /// AVX-512 VBMI and GFNI.
    #[inline(always)]
    pub(super) unsafe fn bytes(self, shifts: __m512i, fields: __m512i) -> __m512i {
        _mm512_gf2p8affine_epi64_epi8::<1>(_mm512_multishift_epi64_epi8(shifts, fields), self.0)
    }

    /// The scales in the even bytes, 0 in the odd: i16 lanes.
    ///
    /// # Safety
    /// AVX-512 VBMI and GFNI.
    #[inline(always)]
    pub(super) unsafe fn words(self, shifts: __m512i, fields: __m512i) -> __m512i {
        odd_low_bytes(_mm512_multishift_epi64_epi8(shifts, fields), self.0)
    }
}

even_bytes_op!(
    /// The affine op by `odd` (with the constant 1) of `ls`'s bytes.
    odd_low_bytes(ls, odd),
    "avx512f,avx512bw,gfni",
    "vgf2p8affineqb {out} {{{k}}}{{z}}, {ls}, {odd}, 1"
);

/// The bytes of a `B` a 64-byte masked load reads: the block's own, so a load of the last block
/// of a row never touches memory past it.
pub(super) const fn block_bytes<B>() -> u64 {
    const { assert!(std::mem::size_of::<B>() < 64) };
    (1 << std::mem::size_of::<B>()) - 1
}

/// A block's bytes in a zmm (the rest zero).
///
/// # Safety
/// AVX-512 BW.
#[inline(always)]
pub(super) unsafe fn load_block<B>(b: &B) -> __m512i {
    _mm512_maskz_loadu_epi8(block_bytes::<B>(), b as *const B as *const i8)
}

/// The sum of a zmm's two 256-bit halves as i32 lanes: the i32 lanes of ggml's 256-bit
/// kernels, whose groups the halves hold.
///
/// # Safety
/// AVX-512 F.
#[inline(always)]
pub(super) unsafe fn fold(v: __m512i) -> __m256i {
    _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v))
}
