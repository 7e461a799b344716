//! q2_K's dot product with GFNI, in 256-bit registers: the shared VNNI kernel
//! (`kquants::q2_k_scaled_levels`) with each vector's table index (the 2-bit level or'd with
//! 4k) made by one `vgf2p8affineqb` (its constant ors in 4k) where a shift, a mask and an or
//! were three ops: per 32 weights an affine op, a table lookup and a `vpdpbusd`. 512-bit registers
//! measured no faster here (the lookups and the affine ops each have one port at that width).
//! MUL_MAT q2_K 4096 x 14336, n = 1, 2 threads, alternating calls in one process on an Intel
//! Xeon, best us, three runs: 655 / 671 / 662 -> 600 / 615 / 602.

use std::arch::x86_64::*;

use super::super::kquants::{q2_k_add, q2_k_mins, q2_k_table};
use super::super::ops::Simd;
use super::super::prefetch;
use super::super::x86::Avx512;
use super::level_bits;
use crate::types::quant::{BlockQ2K, BlockQ8K};

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
unsafe fn q2_k(x: &[BlockQ2K], y: &[BlockQ8K]) -> f32 {
    let s = Avx512::new_unchecked();
    let n = y.len();
    let mats = [0, 1, 2, 3].map(|k| _mm256_set1_epi64x(level_bits(k) as i64));
    let mut acc = s.fzero();
    for (bx, by) in prefetch::ahead(s, &x[..n]).zip(y) {
        let (with_mins, scales) = q2_k_mins(s, bx, by, acc);
        // Four sums, as one `vpdpbusd` waits on the last.
        let mut sums = [s.zero(); 4];
        for j in 0..2 {
            let table = q2_k_table(s, scales, j);
            let q2bits = _mm256_loadu_si256(bx.qs.as_ptr().add(32 * j) as *const _);
            // (A macro, as the op's constant must be known at compile time.)
            macro_rules! vector {
                ($k:literal) => {{
                    let index = _mm256_gf2p8affine_epi64_epi8::<{ 4 * $k }>(q2bits, mats[$k]);
                    let qy = _mm256_loadu_si256(by.qs.as_ptr().add(32 * (4 * j + $k)) as *const _);
                    sums[$k] = s.dot4_acc(sums[$k], s.shuffle_i8(table, index), qy);
                }};
            }
            vector!(0);
            vector!(1);
            vector!(2);
            vector!(3);
        }
        let sumi = s.add_i32(s.add_i32(sums[0], sums[1]), s.add_i32(sums[2], sums[3]));
        acc = q2_k_add(s, bx, by, sumi, with_mins);
    }
    s.hsum(acc)
}

/// One row ([`super::super::table::DotFn`]).
///
/// # Safety
/// [`super::available`]; `x` and `y` whole blocks of q2_K and q8_K, as many of each.
pub(crate) unsafe fn dot(x: &[u8], y: &[u8]) -> f32 {
    q2_k(bytemuck::cast_slice(x), bytemuck::cast_slice(y))
}
