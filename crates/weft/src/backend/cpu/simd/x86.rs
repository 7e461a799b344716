//! [`Simd`] on x86-64: `Avx2` (AVX2 + FMA + F16C) and `Avx512` (the same 256-bit
//! operations encoded with AVX-512VL/BW, plus VNNI's `vpdpbusd` for the byte dot products).
//! The GEMM micro-kernels use full 512-bit registers (`gemm_x86.rs`).

use std::arch::x86_64::*;

use super::ops::Simd;

/// AVX2 + FMA + F16C.
#[derive(Clone, Copy)]
pub(crate) struct Avx2(());

/// AVX2 + FMA + F16C + AVX-512 F/BW/VL + AVX-512 VNNI.
#[derive(Clone, Copy)]
pub(crate) struct Avx512(());

impl Avx2 {
    /// # Safety
    /// The CPU runs `Isa::Avx2`.
    #[inline(always)]
    pub(crate) unsafe fn new_unchecked() -> Self {
        Avx2(())
    }
}

impl Avx512 {
    /// # Safety
    /// The CPU runs `Isa::Avx512Vnni`.
    #[inline(always)]
    pub(crate) unsafe fn new_unchecked() -> Self {
        Avx512(())
    }
}

/// The methods both levels share (everything but `dot4`). Holding the token proves the CPU
/// has AVX2, FMA and F16C, which is what every `unsafe` block below relies on.
macro_rules! avx2_ops {
    () => {
        type V = __m256i;
        type F = __m256;

        #[inline(always)]
        fn load(self, p: &[u8; 32]) -> __m256i {
            unsafe { _mm256_loadu_si256(p.as_ptr() as *const __m256i) }
        }
        #[inline(always)]
        fn load_dup(self, p: &[u8; 16]) -> __m256i {
            unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(p.as_ptr() as *const __m128i)) }
        }
        #[inline(always)]
        fn nibbles(self, p: &[u8; 16]) -> __m256i {
            // The 16 bytes loaded into both 128-bit lanes and the upper lane's dwords shifted
            // right by 4 (one variable shift where a shift and an insert were two ops); the
            // mask then keeps each byte's own nibble.
            unsafe {
                let shifted = _mm256_srlv_epi32(self.load_dup(p), _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
                _mm256_and_si256(shifted, _mm256_set1_epi8(0x0f))
            }
        }
        #[inline(always)]
        fn prefetch(self, p: *const u8) {
            // SAFETY: a prefetch reads nothing architecturally and never faults.
            unsafe { _mm_prefetch::<_MM_HINT_T1>(p as *const i8) }
        }
        #[inline(always)]
        fn store(self, v: __m256i, out: &mut [u8; 32]) {
            unsafe { _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, v) }
        }
        #[inline(always)]
        fn zero(self) -> __m256i {
            unsafe { _mm256_setzero_si256() }
        }
        #[inline(always)]
        fn splat_i8(self, x: i8) -> __m256i {
            unsafe { _mm256_set1_epi8(x) }
        }
        #[inline(always)]
        fn splat_i16(self, x: i16) -> __m256i {
            unsafe { _mm256_set1_epi16(x) }
        }
        #[inline(always)]
        fn splat_i32(self, x: i32) -> __m256i {
            unsafe { _mm256_set1_epi32(x) }
        }
        #[inline(always)]
        fn splat_i16_halves(self, lo: i16, hi: i16) -> __m256i {
            unsafe { _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(_mm_set1_epi16(lo)), _mm_set1_epi16(hi)) }
        }
        #[inline(always)]
        fn set_u64(self, x: [u64; 4]) -> __m256i {
            unsafe { _mm256_set_epi64x(x[3] as i64, x[2] as i64, x[1] as i64, x[0] as i64) }
        }
        #[inline(always)]
        fn set_u32(self, x: [u32; 8]) -> __m256i {
            unsafe {
                _mm256_set_epi32(
                    x[7] as i32,
                    x[6] as i32,
                    x[5] as i32,
                    x[4] as i32,
                    x[3] as i32,
                    x[2] as i32,
                    x[1] as i32,
                    x[0] as i32,
                )
            }
        }
        #[inline(always)]
        fn and(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_and_si256(a, b) }
        }
        #[inline(always)]
        fn or(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_or_si256(a, b) }
        }
        #[inline(always)]
        fn xor(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_xor_si256(a, b) }
        }
        #[inline(always)]
        fn andnot(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_andnot_si256(a, b) }
        }
        #[inline(always)]
        fn add_i8(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_add_epi8(a, b) }
        }
        #[inline(always)]
        fn sub_i8(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_sub_epi8(a, b) }
        }
        #[inline(always)]
        fn add_i16(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_add_epi16(a, b) }
        }
        #[inline(always)]
        fn sub_i16(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_sub_epi16(a, b) }
        }
        #[inline(always)]
        fn add_i32(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_add_epi32(a, b) }
        }
        #[inline(always)]
        fn sub_i32(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_sub_epi32(a, b) }
        }
        #[inline(always)]
        fn srl_i16(self, a: __m256i, n: u32) -> __m256i {
            unsafe { _mm256_srl_epi16(a, _mm_cvtsi32_si128(n as i32)) }
        }
        #[inline(always)]
        fn sll_i16(self, a: __m256i, n: u32) -> __m256i {
            unsafe { _mm256_sll_epi16(a, _mm_cvtsi32_si128(n as i32)) }
        }
        #[inline(always)]
        fn cmpeq_i8(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_cmpeq_epi8(a, b) }
        }
        /// In registers instead of four table rows (four loads, three inserts and eleven
        /// scalar instructions to cut out the fields): iq3_xxs 17-19% faster on Zen 4,
        /// iq2_xxs even. Signs made as a mask in scalar code instead (AVX-512's masked
        /// subtraction) made iq2_xxs 9% slower: its scalar side is the busier one.
        #[inline(always)]
        fn apply_even_signs(self, x: __m256i, w: u32) -> __m256i {
            unsafe {
                // 64-bit lane k starts with field k (its eighth bit is the next field's first).
                let fields = _mm256_srlv_epi64(_mm256_set1_epi32(w as i32), _mm256_setr_epi64x(0, 7, 14, 21));
                // That byte in all 8 bytes of the lane; byte j keeps bit j (j < 7), byte 7 none.
                let lane_byte0 = _mm256_setr_epi64x(0, 0x0808_0808_0808_0808, 0, 0x0808_0808_0808_0808);
                let spread = _mm256_shuffle_epi8(fields, lane_byte0);
                let bits = _mm256_and_si256(spread, _mm256_set1_epi64x(0x0040_2010_0804_0201));
                // 0xff where the bit is set; never at byte 7 (0 is not 0xff).
                let set = _mm256_cmpeq_epi8(bits, _mm256_set1_epi64x(0xff40_2010_0804_0201_u64 as i64));
                // The eighth sign is the lane's parity: its bytes sum to 255 * (bits set), odd
                // exactly when the count is; bit 0 of that sum, moved to bit 63, is byte 7's sign.
                let odd = _mm256_slli_epi64::<63>(_mm256_sad_epu8(set, _mm256_setzero_si256()));
                // +1 in every byte without a sign, so that sign_i8 keeps those activations.
                _mm256_sign_epi8(x, _mm256_or_si256(_mm256_or_si256(set, odd), _mm256_set1_epi8(1)))
            }
        }
        #[inline(always)]
        fn sign_i8(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_sign_epi8(a, b) }
        }
        #[inline(always)]
        fn shuffle_i8(self, table: __m256i, idx: __m256i) -> __m256i {
            unsafe { _mm256_shuffle_epi8(table, idx) }
        }
        #[inline(always)]
        fn widen_i8_i16(self, v: __m256i) -> __m256i {
            unsafe { _mm256_cvtepi8_epi16(_mm256_castsi256_si128(v)) }
        }
        #[inline(always)]
        fn widen_u8_i16(self, v: __m256i) -> __m256i {
            unsafe { _mm256_cvtepu8_epi16(_mm256_castsi256_si128(v)) }
        }
        #[inline(always)]
        fn dup_lo(self, v: __m256i) -> __m256i {
            unsafe { _mm256_permute2x128_si256::<0x00>(v, v) }
        }
        #[inline(always)]
        fn dup_hi(self, v: __m256i) -> __m256i {
            unsafe { _mm256_permute2x128_si256::<0x11>(v, v) }
        }
        #[inline(always)]
        fn maddubs(self, u: __m256i, s: __m256i) -> __m256i {
            unsafe { _mm256_maddubs_epi16(u, s) }
        }
        #[inline(always)]
        fn madd_i16(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_madd_epi16(a, b) }
        }
        #[inline(always)]
        fn mullo_i16(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe { _mm256_mullo_epi16(a, b) }
        }
        #[inline(always)]
        fn madd_i16_x4(self, a: __m256i, b: __m256i) -> __m256i {
            unsafe {
                let m = _mm256_madd_epi16(a, b);
                _mm256_zextsi128_si256(_mm_hadd_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256::<1>(m)))
            }
        }
        #[inline(always)]
        fn fzero(self) -> __m256 {
            unsafe { _mm256_setzero_ps() }
        }
        #[inline(always)]
        fn fsplat(self, x: f32) -> __m256 {
            unsafe { _mm256_set1_ps(x) }
        }
        #[inline(always)]
        fn cvt_i32(self, v: __m256i) -> __m256 {
            unsafe { _mm256_cvtepi32_ps(v) }
        }
        #[inline(always)]
        fn fmadd(self, a: __m256, b: __m256, c: __m256) -> __m256 {
            unsafe { _mm256_fmadd_ps(a, b, c) }
        }
        #[inline(always)]
        fn fadd(self, a: __m256, b: __m256) -> __m256 {
            unsafe { _mm256_add_ps(a, b) }
        }
        #[inline(always)]
        fn fstore(self, v: __m256) -> [f32; 8] {
            let mut out = [0f32; 8];
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
            out
        }
        #[inline(always)]
        fn fload(self, p: &[f32; 8]) -> __m256 {
            unsafe { _mm256_loadu_ps(p.as_ptr()) }
        }
        #[inline(always)]
        fn fload_bytes(self, p: &[u8; 32]) -> __m256 {
            unsafe { _mm256_loadu_ps(p.as_ptr() as *const f32) }
        }
        #[inline(always)]
        fn f16x2(self, p: &[u8; 4]) -> __m256 {
            // A 4-byte load (not 16 with the halves first): LLVM then reads the block's
            // other fields from memory rather than out of the converted register.
            unsafe { _mm256_zextps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from_le_bytes(*p)))) }
        }
        #[inline(always)]
        fn fdup0(self, v: __m256) -> __m256 {
            unsafe { _mm256_broadcastss_ps(_mm256_castps256_ps128(v)) }
        }
        #[inline(always)]
        fn fmul(self, a: __m256, b: __m256) -> __m256 {
            unsafe { _mm256_mul_ps(a, b) }
        }
        #[inline(always)]
        fn fsub(self, a: __m256, b: __m256) -> __m256 {
            unsafe { _mm256_sub_ps(a, b) }
        }
        #[inline(always)]
        fn fmax_abs(self, acc: __m256, v: __m256) -> __m256 {
            unsafe { _mm256_max_ps(acc, _mm256_andnot_ps(_mm256_set1_ps(-0.0), v)) }
        }
        #[inline(always)]
        fn fbits(self, v: __m256) -> __m256i {
            unsafe { _mm256_castps_si256(v) }
        }
        #[inline(always)]
        fn round_i32(self, v: __m256) -> __m256i {
            unsafe { _mm256_cvtps_epi32(v) }
        }
        #[inline(always)]
        fn pack_i8(self, v: [__m256i; 4]) -> __m256i {
            unsafe {
                let ab = _mm256_packs_epi32(v[0], v[1]);
                let cd = _mm256_packs_epi32(v[2], v[3]);
                let bytes = _mm256_packs_epi16(ab, cd);
                _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
            }
        }
        #[inline(always)]
        fn hsum_i32(self, v: __m256i) -> i32 {
            unsafe {
                let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
                let s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
                _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s)))
            }
        }
    };
}

impl Simd for Avx2 {
    avx2_ops!();

    #[inline(always)]
    fn dot4(self, u: __m256i, s: __m256i) -> __m256i {
        unsafe { _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)) }
    }
}

impl Simd for Avx512 {
    avx2_ops!();

    const VNNI: bool = true;

    #[inline(always)]
    fn dot4(self, u: __m256i, s: __m256i) -> __m256i {
        // SAFETY: the token proves AVX-512 VL and VNNI.
        unsafe { _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s) }
    }
    #[inline(always)]
    fn dot4_acc(self, acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        unsafe { _mm256_dpbusd_epi32(acc, u, s) }
    }
    /// `v` where the bits are set by one mask move (AVX-512BW/VL), where spreading the bits to
    /// bytes takes four ops. (On q5's nibbles, whose bit 4 is clear, LLVM emits this as an or
    /// and a masked blend, written as a masked add too.)
    #[inline(always)]
    fn add_where(self, x: __m256i, bits: u32, v: __m256i) -> __m256i {
        unsafe { _mm256_add_epi8(x, _mm256_maskz_mov_epi8(bits, v)) }
    }
    #[inline(always)]
    fn interleave_lo16(self, a: __m256i, b: __m256i) -> __m256i {
        // i16 index 2l takes a's element 2l, 2l + 1 takes b's (index 16 + 2l).
        unsafe {
            let idx = _mm256_setr_epi16(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
            _mm256_permutex2var_epi16(a, idx, b)
        }
    }
    /// A byte test into a mask and one masked add (AVX-512BW/VL) where the portable form
    /// takes four ops.
    #[inline(always)]
    fn add_where_bit(self, x: __m256i, m: __m256i, bit: u32, v: __m256i) -> __m256i {
        unsafe {
            let k = _mm256_test_epi8_mask(m, _mm256_set1_epi8((1u8 << bit) as i8));
            _mm256_mask_add_epi8(x, k, x, v)
        }
    }
    /// One masked subtraction (AVX-512BW/VL) instead of spreading the bits to bytes and
    /// two more: iq2_s 11-12% faster on Zen 4, iq3_s 4%.
    #[inline(always)]
    fn neg_where(self, x: __m256i, bits: u32) -> __m256i {
        unsafe { _mm256_mask_sub_epi8(x, bits, _mm256_setzero_si256(), x) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::isa::Isa;

    /// The results, as bytes, of the operations the AVX-512 token overrides: `add_where_bit`
    /// for bits 0..8, then `interleave_lo16`, `add_where` and `neg_where`.
    fn overridden<S: Simd>(s: S, x: &[u8; 32], m: &[u8; 32], v: &[u8; 32], bits: u32) -> Vec<[u8; 32]> {
        let (xv, mv, vv) = (s.load(x), s.load(m), s.load(v));
        let mut out = Vec::new();
        let mut keep = |r: S::V| {
            let mut b = [0u8; 32];
            s.store(r, &mut b);
            out.push(b);
        };
        for bit in 0..8 {
            keep(s.add_where_bit(xv, mv, bit, vv));
        }
        keep(s.interleave_lo16(xv, mv));
        keep(s.add_where(xv, bits, vv));
        keep(s.neg_where(xv, bits));
        out
    }

    /// The AVX-512 token's overrides give the bytes of the portable forms (the AVX2 token's)
    /// and of their definitions, on random bytes.
    #[test]
    fn avx512_overrides_match_the_portable_forms() {
        if !Isa::Avx512Vnni.available() {
            return;
        }
        // SAFETY: both ISAs are available (the AVX-512 level includes AVX2, FMA and F16C).
        let (a2, a5) = unsafe { (Avx2::new_unchecked(), Avx512::new_unchecked()) };
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..200 {
            let mut raw = [[0u8; 32]; 3];
            for b in raw.iter_mut().flatten() {
                *b = next() as u8;
            }
            let (bits, [x, m, v]) = (next() as u32, raw);
            let got = overridden(a5, &x, &m, &v, bits);
            assert_eq!(got, overridden(a2, &x, &m, &v, bits));
            let mut want: Vec<[u8; 32]> = (0..8)
                .map(|bit| std::array::from_fn(|i| x[i].wrapping_add(if m[i] >> bit & 1 == 1 { v[i] } else { 0 })))
                .collect();
            want.push(std::array::from_fn(|i| if i % 4 < 2 { x[i] } else { m[i - 2] }));
            want.push(std::array::from_fn(|i| x[i].wrapping_add(if bits >> i & 1 == 1 { v[i] } else { 0 })));
            want.push(std::array::from_fn(|i| if bits >> i & 1 == 1 { x[i].wrapping_neg() } else { x[i] }));
            assert_eq!(got, want);
        }
    }
}
