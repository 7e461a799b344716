//! q2_K's dot product with GFNI, in 256-bit registers: the shared kernel
//! (`kquants::q2_k_with`) with each vector's table index (the 2-bit level or'd with 4k) made
//! by one `vgf2p8affineqb` (its constant ors in 4k) where a shift, a mask and an or were
//! three ops: per 32 weights an affine op, a table lookup and a `vpdpbusd`. 512-bit
//! registers measured no faster here (the lookups and the affine ops each have one port at
//! that width). MUL_MAT q2_K 4096 x 14336, n = 1, 2 threads, alternating calls in one
//! process on an Intel Xeon, best us, three runs: 655 / 671 / 662 -> 600 / 615 / 602.
//! Four rows a pass (then a pair), each row's super-block in turn (`kquants::q2_k_rows_with`),
//! keep four weight streams in flight: from DRAM (900 MiB of copies cycled), one build's
//! variants alternating, best us, both orders: one row 788 / 782, four 760 / 750 (the pair
//! alone 790 / 794); with the matrix in the cache level (647 / 637 / 649).

use std::arch::x86_64::*;

use super::super::kquants::{q2_k_rows_with, Q2Index};
use super::super::x86::Avx512;
use super::level_bits;
use crate::types::quant::{BlockQ2K, BlockQ8K};

/// [`Q2Index`] by one GF(2) affine op. Made only inside [`rows`], whose target features
/// include GFNI.
#[derive(Clone, Copy)]
struct Affine;

impl Q2Index<Avx512> for Affine {
    #[inline(always)]
    fn index(self, _: Avx512, q2bits: __m256i, k: usize) -> __m256i {
        /// The op with its constant (`4k`, known at compile time).
        macro_rules! affine {
            ($k:literal) => {
                _mm256_gf2p8affine_epi64_epi8::<{ 4 * $k }>(q2bits, _mm256_set1_epi64x(level_bits($k) as i64))
            };
        }
        // SAFETY: `Affine` exists only within `rows`, which runs with GFNI and AVX-512 VL.
        unsafe {
            match k {
                0 => affine!(0),
                1 => affine!(1),
                2 => affine!(2),
                _ => affine!(3),
            }
        }
    }
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,gfni")]
unsafe fn rows<const R: usize>(x: [&[BlockQ2K]; R], y: &[BlockQ8K]) -> [f32; R] {
    q2_k_rows_with(Avx512::new_unchecked(), x, y, Affine)
}

row_entries!(BlockQ2K);
