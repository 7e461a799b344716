//! Kernels for x86 CPUs with AVX-512 (F/BW/VL), VNNI and GFNI (Ice Lake and later, Zen 4),
//! written with those instructions directly rather than once against [`super::ops::Simd`]:
//! GFNI's `vgf2p8affineqb` multiplies each byte by a bit matrix, which takes a 2-bit level out
//! of a packed byte (or a nibble: iq4_xs) in one op where a shift and a mask were two, and
//! q3_K and iq4_xs gain further from 512-bit registers; with VBMI's byte permutes, iq2_xxs's
//! grid rows come out of registers instead of memory. `table::native` puts them in place of the
//! table's kernels where [`available`]. Every i32 lane and float step is the shared kernels'
//! (ggml's), so the results are the same bits (tested against the table's kernels).

use std::arch::x86_64::*;

/// A `[[T; N]; M]` constant whose element `[i][j]` is `$f` (an expression of `i` and `j`), or
/// a `[T; N]` one whose element `[j]` is `$f` of `j`: the loops a const table takes, written
/// once.
macro_rules! table2d {
    ([$t:ty; $n:expr], |$j:ident| $f:expr) => {
        table2d!([[$t; $n]; 1], |_row, $j| $f)[0]
    };
    ([[$t:ty; $n:expr]; $m:expr], |$i:ident, $j:ident| $f:expr) => {{
        let mut t = [[0 as $t; $n]; $m];
        let mut $i = 0;
        while $i < $m {
            let mut $j = 0;
            while $j < $n {
                t[$i][$j] = $f;
                $j += 1;
            }
            $i += 1;
        }
        t
    }};
}

/// A kernel module's table entries over its `rows::<R>(x: [&[$block]; R], y: &[BlockQ8K])`:
/// `dot` ([`super::table::DotFn`]), `dot2` and `dot4` ([`super::table::DotRowsFn`]).
macro_rules! row_entries {
    ($block:ty) => {
        /// One row ([`super::super::table::DotFn`]).
        ///
        /// # Safety
        /// [`super::available`]; `x` and `y` whole blocks of the type and q8_K, as many of each.
        pub(crate) unsafe fn dot(x: &[u8], y: &[u8]) -> f32 {
            rows::<1>([bytemuck::cast_slice::<u8, $block>(x)], bytemuck::cast_slice(y))[0]
        }

        /// Two rows ([`super::super::table::DotRowsFn`]).
        ///
        /// # Safety
        /// As [`dot`], for each row.
        pub(crate) unsafe fn dot2(x: [&[u8]; 2], y: &[u8]) -> [f32; 2] {
            rows::<2>(x.map(bytemuck::cast_slice::<u8, $block>), bytemuck::cast_slice(y))
        }

        /// Four rows ([`super::super::table::DotRowsFn`]).
        ///
        /// # Safety
        /// As [`dot`], for each row.
        pub(crate) unsafe fn dot4(x: [&[u8]; 4], y: &[u8]) -> [f32; 4] {
            rows::<4>(x.map(bytemuck::cast_slice::<u8, $block>), bytemuck::cast_slice(y))
        }
    };
}

pub(super) mod iq2xxs;
pub(super) mod iq4xs;
pub(super) mod q2k;
pub(super) mod q3k;

/// Whether this CPU runs these kernels: AVX-512 with VNNI (`Isa::Avx512Vnni`), GFNI and
/// BMI2 (every CPU with the first two has it).
pub(crate) fn available() -> bool {
    super::Isa::Avx512Vnni.available() && is_x86_feature_detected!("gfni") && is_x86_feature_detected!("bmi2")
}

/// [`available`] and AVX-512 VBMI's byte permutes (`vpermb`, `vpermi2b`, `vpmultishiftqb`),
/// which `iq2xxs` looks its grid codes up with.
pub(crate) fn vbmi_available() -> bool {
    available() && is_x86_feature_detected!("avx512vbmi")
}

/// The bit matrix (a qword of `vgf2p8affineqb`) that takes bits `2k` and `2k + 1` of a byte
/// to bits 0 and 1 and clears the rest: output bit `i` is the parity of the input byte and
/// the matrix's byte `7 - i`.
const fn level_bits(k: usize) -> u64 {
    (1u64 << (2 * k)) << 56 | (1u64 << (2 * k + 1)) << 48
}

/// 64 bytes of a constant table as a zmm (the token proves AVX-512).
#[inline(always)]
fn load64<T>(_: super::x86::Avx512, t: &T) -> __m512i {
    const { assert!(std::mem::size_of::<T>() == 64) };
    // SAFETY: 64 readable bytes; the token proves the CPU runs AVX-512 F.
    unsafe { _mm512_loadu_si512(t as *const T as *const _) }
}
