//! The GEMM micro-kernel in 512-bit registers (AVX-512 F + VNNI): one 64-byte step of a
//! packed group is exactly one zmm, its 16 i32 lanes the group's 16 lanes, so a group is
//! 4 `vpdpbusd` into one accumulator and one scaling per output, half the instructions of
//! the 256-bit kernel (`gemm_kernel.rs`, which the other ISAs use).

use std::arch::x86_64::*;

use super::gemm::{Mode, A_REC, B_REC};

/// MR x NR = 4 x 4: 16 f32 accumulators, a row's 4 level vectors and 2 scale vectors, and
/// temporaries fit in the 32 zmm registers.
pub(crate) const MR: usize = 4;
pub(crate) const NR: usize = 4;

/// See `gemm_kernel::micro`; same layouts and results up to the order of the final lane sum.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL and VNNI; `a` holds `groups * MR` records, each `b[c]`
/// `groups` records, `out` MR * NR floats.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(crate) unsafe fn micro<const MODE: u8>(a: &[u8], b: &[&[u8]], groups: usize, out: &mut [f32]) {
    debug_assert!(a.len() >= groups * MR * A_REC && b.len() >= NR && out.len() >= MR * NR);
    debug_assert!(b.iter().all(|c| c.len() >= groups * B_REC));
    let mut f = [[_mm512_setzero_ps(); NR]; MR];
    let bp: [*const u8; NR] = std::array::from_fn(|c| b[c].as_ptr());
    let ap = a.as_ptr();
    for g in 0..groups {
        for (r, fr) in f.iter_mut().enumerate() {
            let ar = ap.add((g * MR + r) * A_REC);
            let av: [__m512i; 4] = std::array::from_fn(|s| _mm512_loadu_si512(ar.add(64 * s) as *const _));
            let sa = _mm512_loadu_ps(ar.add(256) as *const f32);
            let ca = _mm512_loadu_ps(ar.add(320) as *const f32);
            for (c, frc) in fr.iter_mut().enumerate() {
                let bc = bp[c].add(g * B_REC);
                let mut acc = _mm512_setzero_si512();
                for (s, &avs) in av.iter().enumerate() {
                    acc = _mm512_dpbusd_epi32(acc, avs, _mm512_loadu_si512(bc.add(64 * s) as *const _));
                }
                if MODE == Mode::OFFSET {
                    acc = _mm512_add_epi32(acc, _mm512_loadu_si512(bc.add(384) as *const _));
                }
                let sb = _mm512_loadu_ps(bc.add(256) as *const f32);
                let mb = _mm512_loadu_ps(bc.add(320) as *const f32);
                *frc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), _mm512_mul_ps(sa, sb), *frc);
                *frc = _mm512_fmadd_ps(ca, mb, *frc);
            }
        }
    }
    for (r, fr) in f.iter().enumerate() {
        for (c, &frc) in fr.iter().enumerate() {
            out[r * NR + c] = _mm512_reduce_add_ps(frc);
        }
    }
}
