//! The AVX-512 table (F, BW, VL with AVX2/FMA/F16C): 16 f32 lanes, masked loads and stores
//! for the tails, f16 widened and narrowed by `vcvtph2ps` / `vcvtps2ph` in registers, bf16
//! widened by a 16-bit shift.

use std::arch::x86_64::*;

use super::{ask_ahead, scalar, Bin, Isa, Kernels};

isa_table!(Isa::Avx512, narrow_f16, narrow_bf16);

/// Mask of the first `n` (<= 16) lanes.
#[inline(always)]
fn tail_mask(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

/// How one element type becomes 16 f32 lanes.
trait Load {
    const SIZE: usize;
    /// 16 elements at `p`.
    unsafe fn load(p: *const u8) -> __m512;
    /// The first lanes of `m` from `p`, zeros elsewhere (nothing read past them).
    unsafe fn load_masked(p: *const u8, m: __mmask16) -> __m512;
}

struct F32;
struct F16;
struct Bf16;

impl Load for F32 {
    const SIZE: usize = 4;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> __m512 {
        _mm512_loadu_ps(p as *const f32)
    }
    #[inline(always)]
    unsafe fn load_masked(p: *const u8, m: __mmask16) -> __m512 {
        _mm512_maskz_loadu_ps(m, p as *const f32)
    }
}

impl Load for F16 {
    const SIZE: usize = 2;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> __m512 {
        _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i))
    }
    #[inline(always)]
    unsafe fn load_masked(p: *const u8, m: __mmask16) -> __m512 {
        _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p as *const i16))
    }
}

impl Load for Bf16 {
    const SIZE: usize = 2;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> __m512 {
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(_mm256_loadu_si256(p as *const __m256i))))
    }
    #[inline(always)]
    unsafe fn load_masked(p: *const u8, m: __mmask16) -> __m512 {
        let h = _mm256_maskz_loadu_epi16(m, p as *const i16);
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn dot<L: Load>(k: usize, a: *const u8, lda: usize, rows: usize, b: *const u8, out: *mut f32) {
    if rows == 4 {
        dot4::<L>(k, a, lda, b, out);
    } else {
        for r in 0..rows {
            *out.add(r) = dot1::<L>(k, a.add(r * lda), b);
        }
    }
}

/// Each of the four rows' 16 elements from `i` times b's, into the row's accumulator (b's
/// vector loaded once for the four).
#[inline(always)]
unsafe fn fma_rows<L: Load>(acc: &mut [__m512; 4], rows: [*const u8; 4], b: *const u8, i: usize) {
    let bv = L::load(b.add(i * L::SIZE));
    for (acc, row) in acc.iter_mut().zip(rows) {
        *acc = _mm512_fmadd_ps(L::load(row.add(i * L::SIZE)), bv, *acc);
    }
}

/// Four rows against one b: each b vector is loaded once for four FMAs.
#[inline(always)]
unsafe fn dot4<L: Load>(k: usize, a: *const u8, lda: usize, b: *const u8, out: *mut f32) {
    let s = L::SIZE;
    let rows = [a, a.add(lda), a.add(2 * lda), a.add(3 * lda)];
    let mut acc = [_mm512_setzero_ps(); 4];
    let mut i = 0;
    // A cache line of each row a step, each row's line ROW_AHEAD bytes on asked for.
    let line = 64 / s;
    while i + line <= k {
        ask_ahead(rows, i * s);
        for j in (i..i + line).step_by(16) {
            fma_rows::<L>(&mut acc, rows, b, j);
        }
        i += line;
    }
    while i + 16 <= k {
        fma_rows::<L>(&mut acc, rows, b, i);
        i += 16;
    }
    if i < k {
        let m = tail_mask(k - i);
        let bv = L::load_masked(b.add(i * s), m);
        for (acc, row) in acc.iter_mut().zip(rows) {
            *acc = _mm512_fmadd_ps(L::load_masked(row.add(i * s), m), bv, *acc);
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        *out.add(r) = _mm512_reduce_add_ps(*acc);
    }
}

/// One row: two accumulators, so consecutive FMAs do not wait on each other.
#[inline(always)]
unsafe fn dot1<L: Load>(k: usize, a: *const u8, b: *const u8) -> f32 {
    let s = L::SIZE;
    let (mut acc0, mut acc1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    let mut i = 0;
    while i + 32 <= k {
        acc0 = _mm512_fmadd_ps(L::load(a.add(i * s)), L::load(b.add(i * s)), acc0);
        acc1 = _mm512_fmadd_ps(L::load(a.add((i + 16) * s)), L::load(b.add((i + 16) * s)), acc1);
        i += 32;
    }
    while i < k {
        let m = tail_mask((k - i).min(16));
        acc0 = _mm512_fmadd_ps(L::load_masked(a.add(i * s), m), L::load_masked(b.add(i * s), m), acc0);
        i += 16;
    }
    _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1))
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn widen<L: Load>(src: *const u16, dst: *mut f32, n: usize) {
    let src = src as *const u8;
    let mut i = 0;
    while i + 16 <= n {
        _mm512_storeu_ps(dst.add(i), L::load(src.add(i * 2)));
        i += 16;
    }
    if i < n {
        let m = tail_mask(n - i);
        _mm512_mask_storeu_ps(dst.add(i), m, L::load_masked(src.add(i * 2), m));
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn narrow_f16(src: *const f32, dst: *mut u16, n: usize) {
    let mut i = 0;
    while i + 16 <= n {
        let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_loadu_ps(src.add(i)));
        _mm256_storeu_si256(dst.add(i) as *mut __m256i, h);
        i += 16;
    }
    if i < n {
        let m = tail_mask(n - i);
        let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_maskz_loadu_ps(m, src.add(i)));
        _mm256_mask_storeu_epi16(dst.add(i) as *mut i16, m, h);
    }
}

/// f32 to bf16 as ggml rounds: nearest, ties to even; NaNs kept and made quiet. Integer
/// arithmetic, because `vcvtneps2bf16` flushes subnormals.
#[inline(always)]
unsafe fn to_bf16_bits(v: __m512) -> __m256i {
    let bits = _mm512_castps_si512(v);
    let abs = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fff_ffff));
    let nan = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7f80_0000));
    let hi = _mm512_srli_epi32::<16>(bits);
    let lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    let rounded = _mm512_srli_epi32::<16>(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb));
    let quiet = _mm512_or_si512(hi, _mm512_set1_epi32(64));
    _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet))
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn narrow_bf16(src: *const f32, dst: *mut u16, n: usize) {
    let mut i = 0;
    while i + 16 <= n {
        _mm256_storeu_si256(dst.add(i) as *mut __m256i, to_bf16_bits(_mm512_loadu_ps(src.add(i))));
        i += 16;
    }
    if i < n {
        let m = tail_mask(n - i);
        _mm256_mask_storeu_epi16(dst.add(i) as *mut i16, m, to_bf16_bits(_mm512_maskz_loadu_ps(m, src.add(i))));
    }
}

#[inline(always)]
unsafe fn apply(op: Bin, x: __m512, y: __m512) -> __m512 {
    match op {
        Bin::Add => _mm512_add_ps(x, y),
        Bin::Sub => _mm512_sub_ps(x, y),
        Bin::Mul => _mm512_mul_ps(x, y),
        Bin::Div => _mm512_div_ps(x, y),
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn bin(x: *const f32, y: *const f32, out: *mut f32, n: usize, op: Bin) {
    let mut i = 0;
    while i + 32 <= n {
        let r0 = apply(op, _mm512_loadu_ps(x.add(i)), _mm512_loadu_ps(y.add(i)));
        let r1 = apply(op, _mm512_loadu_ps(x.add(i + 16)), _mm512_loadu_ps(y.add(i + 16)));
        _mm512_storeu_ps(out.add(i), r0);
        _mm512_storeu_ps(out.add(i + 16), r1);
        i += 32;
    }
    while i < n {
        let m = tail_mask((n - i).min(16));
        let r = apply(op, _mm512_maskz_loadu_ps(m, x.add(i)), _mm512_maskz_loadu_ps(m, y.add(i)));
        _mm512_mask_storeu_ps(out.add(i), m, r);
        i += 16;
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn sum_sq_f64(x: *const f32, n: usize) -> f64 {
    let (mut lo, mut hi) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    let mut i = 0;
    while i < n {
        let m = tail_mask((n - i).min(16));
        let v = _mm512_maskz_loadu_ps(m, x.add(i));
        let sq = _mm512_mul_ps(v, v);
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(sq)));
        let upper = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(sq)));
        hi = _mm512_add_pd(hi, _mm512_cvtps_pd(upper));
        i += 16;
    }
    _mm512_reduce_add_pd(_mm512_add_pd(lo, hi))
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn scale(x: *const f32, s: f32, out: *mut f32, n: usize) {
    let sv = _mm512_set1_ps(s);
    let mut i = 0;
    while i < n {
        let m = tail_mask((n - i).min(16));
        _mm512_mask_storeu_ps(out.add(i), m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x.add(i)), sv));
        i += 16;
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn mad(y: *mut f32, x: *const f32, v: f32, n: usize) {
    let vv = _mm512_set1_ps(v);
    let mut i = 0;
    while i < n {
        let m = tail_mask((n - i).min(16));
        let r = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x.add(i)), vv, _mm512_maskz_loadu_ps(m, y.add(i)));
        _mm512_mask_storeu_ps(y.add(i), m, r);
        i += 16;
    }
}

/// An f32 constant from its bits (Rust has no hex float literals).
#[inline(always)]
unsafe fn c(bits: u32) -> __m512 {
    _mm512_set1_ps(f32::from_bits(bits))
}

/// exp of 16 lanes: n = round(x / ln 2) by the 1.5 * 2^23 shift, b = x - n ln 2 (ln 2 split
/// in two), e^b by a degree-5 polynomial (the published expf coefficients ggml's ggml_v_expf
/// uses), scaled by 2^n with `vscalefps`. |n| > 192 saturates: 0 below, infinity above.
#[inline(always)]
unsafe fn exp16(x: __m512) -> __m512 {
    let shift = c(0x4b40_0000); // 1.5 * 2^23
    let z = _mm512_fmadd_ps(x, c(0x3fb8_aa3b), shift); // x * log2(e) + shift
    let n = _mm512_sub_ps(z, shift);
    let b = _mm512_fnmadd_ps(n, c(0x35bf_be8e), _mm512_fnmadd_ps(n, c(0x3f31_7200), x));
    let u = _mm512_mul_ps(b, b);
    let hi = _mm512_fmadd_ps(
        _mm512_fmadd_ps(c(0x3c07_2010), b, c(0x3d2b_9f17)),
        u,
        _mm512_fmadd_ps(c(0x3e2a_af33), b, c(0x3eff_fedb)),
    );
    let p = _mm512_fmadd_ps(hi, u, _mm512_fmadd_ps(c(0x3f7f_fff6), b, _mm512_set1_ps(1.0)));
    let r = _mm512_scalef_ps(p, n);
    let big = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(_mm512_abs_ps(n), _mm512_set1_ps(192.0));
    if big == 0 {
        return r;
    }
    let neg = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(n, _mm512_setzero_ps());
    let sat = _mm512_mask_blend_ps(neg, _mm512_set1_ps(f32::INFINITY), _mm512_setzero_ps());
    _mm512_mask_blend_ps(big, r, sat)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
unsafe fn exp_sum(x: *const f32, max: f32, y: *mut f32, n: usize) -> f64 {
    let m = _mm512_set1_ps(max);
    let mut sum = 0f64;
    let mut i = 0;
    while i + 16 <= n {
        let v = exp16(_mm512_sub_ps(_mm512_loadu_ps(x.add(i)), m));
        _mm512_storeu_ps(y.add(i), v);
        sum += _mm512_reduce_add_ps(v) as f64;
        i += 16;
    }
    sum + scalar::exp_sum(x.add(i), max, y.add(i), n - i)
}
