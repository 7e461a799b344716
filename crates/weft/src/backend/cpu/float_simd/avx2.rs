//! The AVX2 table (AVX2 + FMA + F16C): 8 f32 lanes, f16 widened and narrowed by
//! `vcvtph2ps` / `vcvtps2ph` in registers, bf16 widened by a 16-bit shift. Tails shorter
//! than a vector take the scalar loops; f32 to bf16 is the scalar loop (it only converts
//! activation rows, once per compute).

use std::arch::x86_64::*;

use super::{ask_ahead, scalar, Bin, Isa, Kernels};
use crate::types::{bf16_to_f32, f16_to_f32};

isa_table!(Isa::Avx2, narrow_f16, scalar::narrow_bf16);

/// How one element type becomes 8 f32 lanes.
trait Load {
    const SIZE: usize;
    unsafe fn load(p: *const u8) -> __m256;
    /// One element, for the tails.
    unsafe fn one(p: *const u8) -> f32;
}

struct F32;
struct F16;
struct Bf16;

impl Load for F32 {
    const SIZE: usize = 4;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> __m256 {
        _mm256_loadu_ps(p as *const f32)
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        (p as *const f32).read_unaligned()
    }
}

impl Load for F16 {
    const SIZE: usize = 2;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> __m256 {
        _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        f16_to_f32((p as *const u16).read_unaligned())
    }
}

impl Load for Bf16 {
    const SIZE: usize = 2;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> __m256 {
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(_mm_loadu_si128(p as *const __m128i))))
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        bf16_to_f32((p as *const u16).read_unaligned())
    }
}

/// The sum of a vector's 8 lanes.
#[inline(always)]
unsafe fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn dot<L: Load>(k: usize, a: *const u8, lda: usize, rows: usize, b: *const u8, out: *mut f32) {
    if rows == 4 {
        dot4::<L>(k, a, lda, b, out);
    } else {
        for r in 0..rows {
            *out.add(r) = dot1::<L>(k, a.add(r * lda), b);
        }
    }
}

/// Each of the four rows' 8 elements from `i` times b's, into the row's accumulator (b's
/// vector loaded once for the four).
#[inline(always)]
unsafe fn fma_rows<L: Load>(acc: &mut [__m256; 4], rows: [*const u8; 4], b: *const u8, i: usize) {
    let bv = L::load(b.add(i * L::SIZE));
    for (acc, row) in acc.iter_mut().zip(rows) {
        *acc = _mm256_fmadd_ps(L::load(row.add(i * L::SIZE)), bv, *acc);
    }
}

#[inline(always)]
unsafe fn dot4<L: Load>(k: usize, a: *const u8, lda: usize, b: *const u8, out: *mut f32) {
    let s = L::SIZE;
    let rows = [a, a.add(lda), a.add(2 * lda), a.add(3 * lda)];
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    // A cache line of each row a step, each row's line ROW_AHEAD bytes on asked for.
    let line = 64 / s;
    while i + line <= k {
        ask_ahead(rows, i * s);
        for j in (i..i + line).step_by(8) {
            fma_rows::<L>(&mut acc, rows, b, j);
        }
        i += line;
    }
    while i + 8 <= k {
        fma_rows::<L>(&mut acc, rows, b, i);
        i += 8;
    }
    for (r, (acc, row)) in acc.iter().zip(rows).enumerate() {
        let mut sum = hsum(*acc);
        for j in i..k {
            sum += L::one(row.add(j * s)) * L::one(b.add(j * s));
        }
        *out.add(r) = sum;
    }
}

#[inline(always)]
unsafe fn dot1<L: Load>(k: usize, a: *const u8, b: *const u8) -> f32 {
    let s = L::SIZE;
    let (mut acc0, mut acc1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    let mut i = 0;
    while i + 16 <= k {
        acc0 = _mm256_fmadd_ps(L::load(a.add(i * s)), L::load(b.add(i * s)), acc0);
        acc1 = _mm256_fmadd_ps(L::load(a.add((i + 8) * s)), L::load(b.add((i + 8) * s)), acc1);
        i += 16;
    }
    if i + 8 <= k {
        acc0 = _mm256_fmadd_ps(L::load(a.add(i * s)), L::load(b.add(i * s)), acc0);
        i += 8;
    }
    let mut sum = hsum(_mm256_add_ps(acc0, acc1));
    for j in i..k {
        sum += L::one(a.add(j * s)) * L::one(b.add(j * s));
    }
    sum
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn widen<L: Load>(src: *const u16, dst: *mut f32, n: usize) {
    let p = src as *const u8;
    let mut i = 0;
    while i + 8 <= n {
        _mm256_storeu_ps(dst.add(i), L::load(p.add(i * 2)));
        i += 8;
    }
    for j in i..n {
        *dst.add(j) = L::one(p.add(j * 2));
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn narrow_f16(src: *const f32, dst: *mut u16, n: usize) {
    let mut i = 0;
    while i + 8 <= n {
        let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(src.add(i)));
        _mm_storeu_si128(dst.add(i) as *mut __m128i, h);
        i += 8;
    }
    scalar::narrow_f16(src.add(i), dst.add(i), n - i);
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn bin(x: *const f32, y: *const f32, out: *mut f32, n: usize, op: Bin) {
    let f = |a: __m256, b: __m256| match op {
        Bin::Add => _mm256_add_ps(a, b),
        Bin::Sub => _mm256_sub_ps(a, b),
        Bin::Mul => _mm256_mul_ps(a, b),
        Bin::Div => _mm256_div_ps(a, b),
    };
    let mut i = 0;
    while i + 8 <= n {
        _mm256_storeu_ps(out.add(i), f(_mm256_loadu_ps(x.add(i)), _mm256_loadu_ps(y.add(i))));
        i += 8;
    }
    scalar::bin(x.add(i), y.add(i), out.add(i), n - i, |a, b| op.scalar(a, b));
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn sum_sq_f64(x: *const f32, n: usize) -> f64 {
    let (mut lo, mut hi) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let mut i = 0;
    while i + 8 <= n {
        let v = _mm256_loadu_ps(x.add(i));
        let sq = _mm256_mul_ps(v, v);
        lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
        hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(sq)));
        i += 8;
    }
    let s = _mm256_add_pd(lo, hi);
    let s2 = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd::<1>(s));
    let mut sum = _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
    sum += scalar::sum_sq_f64(x.add(i), n - i);
    sum
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn scale(x: *const f32, s: f32, out: *mut f32, n: usize) {
    let sv = _mm256_set1_ps(s);
    let mut i = 0;
    while i + 8 <= n {
        _mm256_storeu_ps(out.add(i), _mm256_mul_ps(_mm256_loadu_ps(x.add(i)), sv));
        i += 8;
    }
    scalar::scale(x.add(i), s, out.add(i), n - i);
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn mad(y: *mut f32, x: *const f32, v: f32, n: usize) {
    let vv = _mm256_set1_ps(v);
    let mut i = 0;
    while i + 8 <= n {
        _mm256_storeu_ps(y.add(i), _mm256_fmadd_ps(_mm256_loadu_ps(x.add(i)), vv, _mm256_loadu_ps(y.add(i))));
        i += 8;
    }
    // The tail here, not in `scalar::mad`: compiled with FMA, mul_add is one instruction.
    for j in i..n {
        *y.add(j) = (*x.add(j)).mul_add(v, *y.add(j));
    }
}

/// Per element (see `Kernels::exp_sum`).
unsafe fn exp_sum(x: *const f32, max: f32, y: *mut f32, n: usize) -> f64 {
    scalar::exp_sum(x, max, y, n)
}
