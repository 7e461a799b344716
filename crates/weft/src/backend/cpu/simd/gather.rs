//! iq3_xxs, iq3_s, iq2_xs, iq1_s and iq1_m with their grid rows gathered where ggml's form
//! looks each row up on its own: per 32 weights eight 4-byte rows by one `vpgatherdd` (iq3)
//! where there were eight loads and seven inserts, four 8-byte rows by one `vpgatherqq`
//! (iq2_xs, iq1), the indices (iq2_xs: 9 bits of u16 fields) and their high bits (iq3_s, iq1:
//! from `qh`) made in vector lanes rather than one by one. The rest is the shared kernels'
//! (`iq3::iq3_*_with`, `iq2::iq2_xs_with`, `iq1::iq1_*_with`), so the results are the same
//! bits (tested against the table's kernels).
//!
//! Only where gathers are known to be fast ([`available`]): on the Intel CPUs with AVX-512
//! that Gather Data Sampling's microcode fix covers (Skylake-SP to Ice Lake, Tiger Lake), the
//! fix makes every gather several times slower, so those keep the lookups. AMD's Zen 4 and 5
//! report not affected and take these kernels: not measured there.
//!
//! Measured on an Intel Xeon (Emerald Rapids, not affected): from L1, ticks a super-block and
//! row, lookups against gather, two runs: iq3_s 61.8 / 63.6 -> 35.1 / 36.0, iq3_xxs 38.7 /
//! 39.7 -> 35.4 / 37.5, iq1_s 41.4-43.9 -> 36.8-38.0 and iq1_m 59.3-62.7 -> 50.6-57.8 (four
//! runs each), iq2_xs 32.2 -> 28.3 (four runs). iq2_s (a byte and a shift: level within noise)
//! keeps its lookups; iq2_xxs (indices bytes: 31.9 -> 32.6 here) has a kernel of its own with
//! VBMI (`gfni/iq2xxs.rs`, where a 512-bit gather of its rows measured level with its
//! register lookups).

use std::arch::x86_64::*;
use std::sync::OnceLock;

use super::iq1::{iq1_m_with, iq1_s_with, Iq1Grid};
use super::iq2::{iq2_xs_with, Iq2XsGrid};
use super::iq3::{iq3_s_with, iq3_xxs_with, Iq3Grid};
use super::x86::Avx512;
use super::Isa;
use crate::types::quant::block::LeU16;
use crate::types::quant::grid_iq1s::IQ1S_GRID;
use crate::types::quant::grids::{IQ2XS_GRID, IQ3S_GRID, IQ3XXS_GRID};
use crate::types::quant::{BlockIq1M, BlockIq1S, BlockIq2Xs, BlockIq3S, BlockIq3Xxs, BlockQ8K};

/// Whether these kernels run here: `Isa::Avx512Vnni`, and the kernel reports the CPU not
/// affected by Gather Data Sampling (Linux's
/// `/sys/devices/system/cpu/vulnerabilities/gather_data_sampling`: "Not affected"). Where
/// that cannot be read (another OS), the lookups stay: the affected CPUs cannot be told
/// apart otherwise.
pub(crate) fn available() -> bool {
    static FAST: OnceLock<bool> = OnceLock::new();
    Isa::Avx512Vnni.available()
        && *FAST.get_or_init(|| {
            std::fs::read_to_string("/sys/devices/system/cpu/vulnerabilities/gather_data_sampling")
                .is_ok_and(|s| s.trim() == "Not affected")
        })
}

/// [`Iq3Grid`] and [`Iq1Grid`] by gathers. Made only inside this module's kernels, whose
/// target features include AVX2.
#[derive(Clone, Copy)]
struct Gather;

/// Eight bytes as eight u32 lanes.
#[inline(always)]
unsafe fn widen8(b: &[u8; 8]) -> __m256i {
    _mm256_cvtepu8_epi32(_mm_loadl_epi64(b.as_ptr() as *const __m128i))
}

impl Iq3Grid<Avx512> for Gather {
    #[inline(always)]
    fn xxs(self, _: Avx512, q3: &[u8; 8]) -> __m256i {
        // SAFETY: AVX2 (see `Gather`); every index is a byte, IQ3XXS_GRID has 256 rows.
        unsafe { _mm256_i32gather_epi32::<4>(IQ3XXS_GRID.as_ptr() as *const i32, widen8(q3)) }
    }
    #[inline(always)]
    fn s(self, _: Avx512, qs: &[u8; 8], qh: u32) -> __m256i {
        // SAFETY: AVX2 (see `Gather`); every index is a byte or'd with 256 at most, and
        // IQ3S_GRID has 512 rows.
        unsafe {
            // Lane l: bit l of qh moved to bit 8.
            let ninth = _mm256_sllv_epi32(_mm256_set1_epi32(qh as i32), _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1));
            let idx = _mm256_or_si256(widen8(qs), _mm256_and_si256(ninth, _mm256_set1_epi32(256)));
            _mm256_i32gather_epi32::<4>(IQ3S_GRID.as_ptr() as *const i32, idx)
        }
    }
}

/// Four bytes as four u32 lanes.
#[inline(always)]
unsafe fn widen4(b: &[u8; 4]) -> __m128i {
    _mm_cvtepu8_epi32(_mm_cvtsi32_si128(i32::from_le_bytes(*b)))
}

/// The four IQ1S_GRID rows of the indices `lo | high`, `high` in bits 8..11 of each lane.
#[inline(always)]
unsafe fn iq1_rows(qs: &[u8; 4], high: __m128i) -> __m256i {
    let idx = _mm_or_si128(widen4(qs), _mm_and_si128(high, _mm_set1_epi32(0x700)));
    _mm256_i32gather_epi64::<8>(IQ1S_GRID.as_ptr() as *const i64, idx)
}

impl Iq1Grid<Avx512> for Gather {
    #[inline(always)]
    fn s(self, _: Avx512, qs: &[u8; 4], qh: u16) -> __m256i {
        // SAFETY: AVX2 (see `Gather`); every index is below 2048, IQ1S_GRID's row count.
        // Lane k: bits 3k .. 3k + 3 of qh to bits 8..11 (shifted left 9 - 3k, then right 1).
        unsafe {
            let high = _mm_srli_epi32::<1>(_mm_sllv_epi32(_mm_set1_epi32(qh as i32), _mm_setr_epi32(9, 6, 3, 0)));
            iq1_rows(qs, high)
        }
    }
    #[inline(always)]
    fn m(self, _: Avx512, qs: &[u8; 4], qh: &[u8; 2]) -> __m256i {
        // SAFETY: as in `s`. Lane k: nibble k of qh to bits 8..11.
        unsafe {
            let nibbles = _mm_set1_epi32(u16::from_le_bytes(*qh) as i32);
            iq1_rows(qs, _mm_slli_epi32::<8>(_mm_srlv_epi32(nibbles, _mm_setr_epi32(0, 4, 8, 12))))
        }
    }
}

impl Iq2XsGrid<Avx512> for Gather {
    #[inline(always)]
    fn xs(self, _: Avx512, q: &[LeU16; 4]) -> __m256i {
        // SAFETY: AVX2 (see `Gather`); every index is masked to 9 bits, IQ2XS_GRID has 512
        // rows.
        unsafe {
            let fields = _mm_cvtepu16_epi32(_mm_loadl_epi64(q.as_ptr() as *const __m128i));
            let idx = _mm_and_si128(fields, _mm_set1_epi32(511));
            _mm256_i32gather_epi64::<8>(IQ2XS_GRID.as_ptr() as *const i64, idx)
        }
    }
}

/// Row dots ([`super::table::DotFn`]) of the shared kernels `$with` with [`Gather`]: for each
/// type, `pub(crate) unsafe fn $dot(x, y)`, to be called only where [`available`] and with
/// `x` and `y` whole blocks of `$block` and q8_K, as many of each.
macro_rules! gathered {
    ($($dot:ident: $block:ty, $with:path;)*) => {
        $(
            /// One row of the type, grid rows gathered ([`super::table::DotFn`]).
            ///
            /// # Safety
            /// [`available`]; `x` and `y` whole blocks of the type and q8_K, as many of each.
            pub(crate) unsafe fn $dot(x: &[u8], y: &[u8]) -> f32 {
                #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
                unsafe fn kernel(x: &[$block], y: &[BlockQ8K]) -> f32 {
                    $with(Avx512::new_unchecked(), x, y, Gather)
                }
                kernel(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
            }
        )*
    };
}

gathered! {
    iq3_xxs_dot: BlockIq3Xxs, iq3_xxs_with;
    iq3_s_dot: BlockIq3S, iq3_s_with;
    iq2_xs_dot: BlockIq2Xs, iq2_xs_with;
    iq1_s_dot: BlockIq1S, iq1_s_with;
    iq1_m_dot: BlockIq1M, iq1_m_with;
}
