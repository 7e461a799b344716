//! The per-type table: for each quantized type, its scalar `vec_dot` (the reference in
//! `types::quant`, the oracle of the tests) beside its vector kernel, compiled once per ISA
//! behind a `#[target_feature]` entry point; likewise the activation formats' `from_float`.

use super::{iq1, iq2, iq3, iq4, kquants, legacy, q8, Isa};
use crate::types::quant::{self, Format};
use crate::types::Type;

/// A dot product of two rows of whole blocks (a's type, its vec_dot type; equal block
/// counts). Unsafe to call unless the entry's ISA is available.
pub(crate) type DotFn = unsafe fn(x: &[u8], y: &[u8]) -> f32;

/// `R` rows of a (whole blocks, equal lengths) dotted with one activation row: each result
/// is bit for bit the [`DotFn`] result, the rows computed interleaved.
pub(crate) type DotRowsFn<const R: usize> = unsafe fn(x: [&[u8]; R], y: &[u8]) -> [f32; R];

/// A `from_float` into whole blocks of a vec_dot type (`x.len()` = the blocks' elements).
pub(crate) type FromFloatFn = unsafe fn(x: &[f32], y: &mut [u8]);

/// Declares a module of entry points, one per ISA, each running `$body` with `$s` the
/// ISA's token and `$x`, `$y` the arguments, and `pick` to choose one by ISA.
macro_rules! entries {
    ($name:ident, $sig:ty, |$s:ident, $x:ident, $y:ident| $body:expr, ($($arg:ident: $t:ty),*) -> $ret:ty) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma,f16c")]
            pub(super) unsafe fn avx2($($arg: $t),*) -> $ret {
                let $s = crate::backend::cpu::simd::x86::Avx2::new_unchecked();
                let ($x, $y) = ($($arg),*);
                $body
            }

            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
            pub(super) unsafe fn avx512($($arg: $t),*) -> $ret {
                let $s = crate::backend::cpu::simd::x86::Avx512::new_unchecked();
                let ($x, $y) = ($($arg),*);
                $body
            }

            #[cfg(target_arch = "aarch64")]
            #[target_feature(enable = "neon")]
            pub(super) unsafe fn neon($($arg: $t),*) -> $ret {
                let $s = crate::backend::cpu::simd::neon::Neon::<false>::new_unchecked();
                let ($x, $y) = ($($arg),*);
                $body
            }

            #[cfg(target_arch = "aarch64")]
            #[target_feature(enable = "neon,dotprod")]
            pub(super) unsafe fn neon_dot($($arg: $t),*) -> $ret {
                let $s = crate::backend::cpu::simd::neon::Neon::<true>::new_unchecked();
                let ($x, $y) = ($($arg),*);
                $body
            }

            pub(super) fn pick(isa: super::Isa) -> Option<$sig> {
                match isa {
                    super::Isa::Scalar => None,
                    #[cfg(target_arch = "x86_64")]
                    super::Isa::Avx2 | super::Isa::Avx512 => Some(avx2 as $sig),
                    #[cfg(target_arch = "x86_64")]
                    super::Isa::Avx512Vnni => Some(avx512 as $sig),
                    #[cfg(target_arch = "aarch64")]
                    super::Isa::Neon => Some(neon as $sig),
                    #[cfg(target_arch = "aarch64")]
                    super::Isa::NeonDot => Some(neon_dot as $sig),
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
        }
    };
}

/// Scalar forms, by type (the same signature as the vector entries).
fn scalar_dot<F: Format>(x: &[u8], y: &[u8]) -> f32 {
    F::vec_dot(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
}

/// One row of the table: a type, its scalar dot product and its vector entries.
pub(crate) struct DotEntry {
    pub scalar: fn(&[u8], &[u8]) -> f32,
    pub simd: fn(Isa) -> Option<DotFn>,
}

/// Declares, for each `Type => module: kernel` row, the kernel's entry points (`$body` with
/// `$k` the row's kernel) and `$lookup(ty, isa)` to pick one; the tables below that need no
/// scalar form (two-row dots, from_float) are each one invocation.
macro_rules! kernel_table {
    (
        $(#[$doc:meta])* $lookup:ident: $sig:ty,
        |$s:ident, $k:ident, $x:ident, $y:ident| $body:expr,
        $params:tt -> $ret:ty;
        $($ty:ident => $name:ident: $kernel:path;)*
    ) => {
        $(
            entries!($name, $sig, |$s, $x, $y| {
                let $k = $kernel;
                $body
            }, $params -> $ret);
        )*

        $(#[$doc])*
        pub(crate) fn $lookup(ty: Type, isa: Isa) -> Option<$sig> {
            match ty {
                $(Type::$ty => $name::pick(isa),)*
                _ => None,
            }
        }
    };
}

/// Declares `$lookup(ty, isa)`, the `$r`-row vector kernels ([`DotRowsFn`]) of the listed
/// types: one body for every row count.
macro_rules! rows_table {
    ($(#[$doc:meta])* $lookup:ident: $r:literal; $($ty:ident => $name:ident: $kernel:path;)*) => {
        kernel_table! {
            $(#[$doc])* $lookup: DotRowsFn<$r>,
            |s, k, x, y| k(s, x.map(bytemuck::cast_slice), bytemuck::cast_slice(y)),
            (x: [&[u8]; $r], y: &[u8]) -> [f32; $r];
            $($ty => $name: $kernel;)*
        }
    };
}

// Types whose one-row kernel waits on its accumulator's chain of fused adds: measured
// (4096 x 14336 mat-vec, 2 threads) q4_0 1663 -> 1473 us, q8_0 1875-2073 -> 1607-1704 us.
// q4_1, q5_0 and q5_1 have pairs for the rows left over by the four-row loop. q3_K's pair
// (VNNI only, `rows_pay`) shares each 32 activations' -4 * y: from L1, 21.6-22.5 -> 18.7 ticks
// a super-block and row; its four rows spill registers (21.4).
rows_table! {
    /// The two-row vector kernel of `ty` on `isa`, for types that have one.
    dot2: 2;
    Q4_0 => q4_0_x2: legacy::q4_0_rows;
    Q8_0 => q8_0_x2: legacy::q8_0_rows;
    Q4_1 => q4_1_x2: legacy::q4_1_rows;
    Q5_0 => q5_0_x2: legacy::q5_0_rows;
    Q5_1 => q5_1_x2: legacy::q5_1_rows;
    IQ4_NL => iq4_nl_x2: iq4::iq4_nl_rows;
    Q3_K => q3_k_x2: kquants::q3_k_rows;
    Q4_K => q4_k_x2: kquants::q4_k_rows;
    Q5_K => q5_k_x2: kquants::q5_k_rows;
    Q6_K => q6_k_x2: kquants::q6_k_rows;
}

// Four rows keep four weight streams in flight where two left the core waiting on memory:
// q4_0 4096 x 14336 mat-vec, 2 threads, alternating calls, best us: 1526 / 1552 -> 1282 /
// 1294 on AVX-512 VNNI, 1582 / 1562 -> 1395 / 1385 on AVX2 (Zen 4). q8_0's four-row form
// measured no faster (1718 / 1781 vs 1796 / 1909; again with `prefetch::row_block`, four
// alternating runs, best us: four rows 1376 / 1164 / 1390 / 1437 against one row 1441 / 1206
// / 1475 / 1390): it keeps its one-row loop (its pair on AVX2). q4_1, q5_0 and q5_1
// gained once their rows' per-block scalar work went (see their kernels): one row against
// four, AVX-512 VNNI, best us, both orders: q4_1 1361 / 1391 -> 1162 / 1113, q5_0 1467 /
// 1459 -> 1218 / 1237, q5_1 1548 / 1541 -> 1388 / 1414; from L1, cycles a block: 4.5 ->
// 3.1, 5.3 -> 3.4, 5.3 -> 4.1. iq4_nl's rows (4.0 -> 3.4 cycles from L1) gained only with
// `prefetch::row_block`: 1103 / 1092 -> 1050 / 1027. q4_K, q5_K and q6_K too, each row's
// operations one row's (the same bits): from DRAM (900 MiB of copies cycled), 2 threads, old
// and new build alternating, both orders, best us: q4_K 1291 / 1257 -> 1133 / 1103, q5_K
// 1569 / 1553 -> 1437 / 1397, q6_K 1848 / 1839 -> 1677 / 1641; one matrix call after call:
// q4_K 796 / 759 -> 772 / 725, q5_K 911 / 902 -> 908 / 918, q6_K 913 / 972 -> 914 / 979
// (level). Not for q2_K (GFNI: level from the cache, 4% from DRAM; AVX2 none) nor iq4_xs
// (its pair 15% slower from the cache, level from DRAM). Which ISAs run them: `rows_pay`.
rows_table! {
    /// The four-row vector kernel of `ty` on `isa`, for types that have one.
    dot4: 4;
    Q4_0 => q4_0_x4: legacy::q4_0_rows;
    Q4_1 => q4_1_x4: legacy::q4_1_rows;
    Q5_0 => q5_0_x4: legacy::q5_0_rows;
    Q5_1 => q5_1_x4: legacy::q5_1_rows;
    IQ4_NL => iq4_nl_x4: iq4::iq4_nl_rows;
    Q4_K => q4_k_x4: kquants::q4_k_rows;
    Q5_K => q5_k_x4: kquants::q5_k_rows;
    Q6_K => q6_k_x4: kquants::q6_k_rows;
}

macro_rules! dot_table {
    ($($ty:ident => $name:ident: $format:ty, $kernel:path;)*) => {
        $(
            entries!(
                $name,
                DotFn,
                |s, x, y| $kernel(s, bytemuck::cast_slice(x), bytemuck::cast_slice(y)),
                (x: &[u8], y: &[u8]) -> f32
            );
        )*

        /// The table row of `ty`, or `None` for types without a dot product here.
        pub(crate) fn dot_entry(ty: Type) -> Option<DotEntry> {
            match ty {
                $(Type::$ty => Some(DotEntry { scalar: scalar_dot::<$format>, simd: $name::pick }),)*
                _ => None,
            }
        }
    };
}

dot_table! {
    Q4_0 => q4_0: quant::legacy::Q4_0, legacy::q4_0;
    Q4_1 => q4_1: quant::legacy::Q4_1, legacy::q4_1;
    Q5_0 => q5_0: quant::legacy::Q5_0, legacy::q5_0;
    Q5_1 => q5_1: quant::legacy::Q5_1, legacy::q5_1;
    Q8_0 => q8_0: quant::legacy::Q8_0, legacy::q8_0;
    IQ4_NL => iq4_nl: quant::iq4::Iq4Nl, iq4::iq4_nl;
    Q2_K => q2_k: quant::k::Q2K, kquants::q2_k;
    Q3_K => q3_k: quant::k::Q3K, kquants::q3_k;
    Q4_K => q4_k: quant::k45::Q4K, kquants::q4_k;
    Q5_K => q5_k: quant::k45::Q5K, kquants::q5_k;
    Q6_K => q6_k: quant::k::Q6K, kquants::q6_k;
    IQ2_XXS => iq2_xxs: quant::iq2::Iq2Xxs, iq2::iq2_xxs;
    IQ2_XS => iq2_xs: quant::iq2::Iq2Xs, iq2::iq2_xs;
    IQ2_S => iq2_s: quant::iq2::Iq2S, iq2::iq2_s;
    IQ3_XXS => iq3_xxs: quant::iq3::Iq3Xxs, iq3::iq3_xxs;
    IQ3_S => iq3_s: quant::iq3::Iq3S, iq3::iq3_s;
    IQ1_S => iq1_s: quant::iq1::Iq1S, iq1::iq1_s;
    IQ1_M => iq1_m: quant::iq1::Iq1M, iq1::iq1_m;
    IQ4_XS => iq4_xs: quant::iq4::Iq4Xs, iq4::iq4_xs;
}

kernel_table! {
    /// The vector `from_float` of an activation format on `isa`.
    from_float: FromFloatFn,
    |s, k, x, y| k(s, x, bytemuck::cast_slice_mut(y)),
    (x: &[f32], y: &mut [u8]) -> ();
    Q8_0 => from_q8_0: q8::q8_0;
    Q8_1 => from_q8_1: q8::q8_1;
    Q8_K => from_q8_k: q8::q8_k;
}

/// A type's kernels written with one CPU's own instructions rather than once against
/// [`super::ops::Simd`], which replace the table's entries where the CPU runs them; `None`
/// for a row count the type has no kernel of (then that many rows are one-row passes).
#[derive(Clone, Copy)]
pub(crate) struct NativeDots {
    pub one: DotFn,
    pub two: Option<DotRowsFn<2>>,
    pub four: Option<DotRowsFn<4>>,
}

#[cfg(target_arch = "x86_64")]
impl NativeDots {
    /// A type with a native one-row kernel only.
    fn one_row(one: DotFn) -> NativeDots {
        NativeDots { one, two: None, four: None }
    }
}

/// The [`NativeDots`] of a kernel module with one-, two- and four-row entries (`dot`, `dot2`,
/// `dot4`).
#[cfg(target_arch = "x86_64")]
macro_rules! native_rows {
    ($m:ident) => {
        NativeDots { one: $m::dot, two: Some($m::dot2), four: Some($m::dot4) }
    };
}

/// [`NativeDots`] of `ty` on `isa`, where there are some and this CPU runs them (`gfni/`): q2_K,
/// q3_K and iq4_xs on AVX-512 with VNNI and GFNI, q4_K, q5_K, q6_K and iq2_xxs where VBMI too, and
/// the other grid I-quants where gathers are fast as well (`gfni::gather_available`).
pub(crate) fn native(ty: Type, isa: Isa) -> Option<NativeDots> {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512Vnni && super::gfni::available() {
        use super::gfni::k45::{q4k, q5k};
        use super::gfni::{iq1, iq2, iq2xxs, iq3, iq4xs, q2k, q3k, q6k};
        match ty {
            Type::IQ4_XS => return Some(native_rows!(iq4xs)),
            Type::Q2_K => return Some(native_rows!(q2k)),
            Type::Q3_K => return Some(native_rows!(q3k)),
            Type::Q4_K if super::gfni::vbmi_available() => return Some(native_rows!(q4k)),
            Type::Q5_K if super::gfni::vbmi_available() => return Some(native_rows!(q5k)),
            Type::Q6_K if super::gfni::vbmi_available() => return Some(native_rows!(q6k)),
            Type::IQ2_XXS if super::gfni::vbmi_available() => return Some(NativeDots::one_row(iq2xxs::dot)),
            _ if !super::gfni::gather_available() => {}
            Type::IQ1_S => return Some(NativeDots::one_row(iq1::s_dot)),
            Type::IQ1_M => return Some(NativeDots::one_row(iq1::m_dot)),
            Type::IQ2_XS => return Some(NativeDots::one_row(iq2::xs_dot)),
            Type::IQ2_S => return Some(NativeDots::one_row(iq2::s_dot)),
            Type::IQ3_XXS => return Some(NativeDots::one_row(iq3::xxs_dot)),
            Type::IQ3_S => return Some(NativeDots::one_row(iq3::s_dot)),
            _ => {}
        }
    }
    let _ = (ty, isa);
    None
}
