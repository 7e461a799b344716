//! [`Simd`] on aarch64: a 256-bit vector is two 128-bit NEON registers (`lo` = bytes 0..16,
//! `hi` = bytes 16..32), so AVX2's per-half shuffles map onto `tbl` one register at a time.
//! `Neon<true>` adds the Armv8.2 dot product (`sdot`, through inline assembly because its
//! intrinsics are not stable Rust yet); `Neon<false>` builds the same sums from widening
//! multiplies.

use std::arch::aarch64::*;

use super::ops::Simd;

/// NEON; with `DOT`, also the `dotprod` extension.
#[derive(Clone, Copy)]
pub(crate) struct Neon<const DOT: bool>(());

impl<const DOT: bool> Neon<DOT> {
    /// # Safety
    /// The CPU runs `Isa::Neon` (`Isa::NeonDot` with `DOT`).
    #[inline(always)]
    pub(crate) unsafe fn new_unchecked() -> Self {
        Neon(())
    }
}

#[derive(Clone, Copy)]
pub(crate) struct V2(int8x16_t, int8x16_t);

#[derive(Clone, Copy)]
pub(crate) struct F2(float32x4_t, float32x4_t);

/// Applies a lane-wise binary op to both halves.
macro_rules! both {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $e:expr) => {{
        let (a, b) = ($a, $b);
        V2(
            {
                let ($x, $y) = (a.0, b.0);
                $e
            },
            {
                let ($x, $y) = (a.1, b.1);
                $e
            },
        )
    }};
}

#[inline(always)]
unsafe fn s16(x: int8x16_t) -> int16x8_t {
    vreinterpretq_s16_s8(x)
}
#[inline(always)]
unsafe fn s32(x: int8x16_t) -> int32x4_t {
    vreinterpretq_s32_s8(x)
}
#[inline(always)]
unsafe fn u16v(x: int8x16_t) -> uint16x8_t {
    vreinterpretq_u16_s8(x)
}

/// `maddubs` on one register: u unsigned, s signed, pair sums saturated to i16.
#[inline(always)]
unsafe fn maddubs1(u: int8x16_t, s: int8x16_t) -> int8x16_t {
    let u = vreinterpretq_u8_s8(u);
    let lo = vmulq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(u))), vmovl_s8(vget_low_s8(s)));
    let hi = vmulq_s16(vreinterpretq_s16_u16(vmovl_high_u8(u)), vmovl_high_s8(s));
    let sums = vcombine_s16(vqmovn_s32(vpaddlq_s16(lo)), vqmovn_s32(vpaddlq_s16(hi)));
    vreinterpretq_s8_s16(sums)
}

/// `madd_epi16` on one register.
#[inline(always)]
unsafe fn madd1(a: int8x16_t, b: int8x16_t) -> int8x16_t {
    let (a, b) = (s16(a), s16(b));
    let lo = vmull_s16(vget_low_s16(a), vget_low_s16(b));
    let hi = vmull_high_s16(a, b);
    vreinterpretq_s8_s32(vpaddq_s32(lo, hi))
}

/// Four-byte signed dot products on one register.
#[inline(always)]
unsafe fn dot1<const DOT: bool>(a: int8x16_t, b: int8x16_t) -> int8x16_t {
    if DOT {
        let mut acc = vdupq_n_s32(0);
        // SAFETY: `Neon<true>` tokens exist only where `dotprod` was detected.
        std::arch::asm!(
            "sdot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc,
            a = in(vreg) a,
            b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags)
        );
        vreinterpretq_s8_s32(acc)
    } else {
        let lo = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)));
        let hi = vpaddlq_s16(vmull_high_s8(a, b));
        vreinterpretq_s8_s32(vpaddq_s32(lo, hi))
    }
}

/// `_mm256_sign_epi8` on one register.
#[inline(always)]
unsafe fn sign1(a: int8x16_t, b: int8x16_t) -> int8x16_t {
    let neg = vbslq_s8(vcltzq_s8(b), vnegq_s8(a), a);
    vbicq_s8(neg, vreinterpretq_s8_u8(vceqzq_s8(b)))
}

// SAFETY (all methods): holding the token proves NEON (and `dotprod` for `Neon<true>`);
// loads and stores go through references of the right length.
impl<const DOT: bool> Simd for Neon<DOT> {
    type V = V2;
    type F = F2;

    #[inline(always)]
    fn load(self, p: &[u8; 32]) -> V2 {
        unsafe { V2(vld1q_s8(p.as_ptr() as *const i8), vld1q_s8(p.as_ptr().add(16) as *const i8)) }
    }
    #[inline(always)]
    fn load_dup(self, p: &[u8; 16]) -> V2 {
        let v = unsafe { vld1q_s8(p.as_ptr() as *const i8) };
        V2(v, v)
    }
    #[inline(always)]
    fn nibbles(self, p: &[u8; 16]) -> V2 {
        unsafe {
            let t = vld1q_u8(p.as_ptr());
            V2(vreinterpretq_s8_u8(vandq_u8(t, vdupq_n_u8(0x0f))), vreinterpretq_s8_u8(vshrq_n_u8::<4>(t)))
        }
    }
    #[inline(always)]
    fn store(self, v: V2, out: &mut [u8; 32]) {
        unsafe {
            vst1q_s8(out.as_mut_ptr() as *mut i8, v.0);
            vst1q_s8(out.as_mut_ptr().add(16) as *mut i8, v.1);
        }
    }
    #[inline(always)]
    fn zero(self) -> V2 {
        unsafe { V2(vdupq_n_s8(0), vdupq_n_s8(0)) }
    }
    #[inline(always)]
    fn splat_i8(self, x: i8) -> V2 {
        unsafe { V2(vdupq_n_s8(x), vdupq_n_s8(x)) }
    }
    #[inline(always)]
    fn splat_i16(self, x: i16) -> V2 {
        let v = unsafe { vreinterpretq_s8_s16(vdupq_n_s16(x)) };
        V2(v, v)
    }
    #[inline(always)]
    fn splat_i32(self, x: i32) -> V2 {
        let v = unsafe { vreinterpretq_s8_s32(vdupq_n_s32(x)) };
        V2(v, v)
    }
    #[inline(always)]
    fn splat_i16_halves(self, lo: i16, hi: i16) -> V2 {
        unsafe { V2(vreinterpretq_s8_s16(vdupq_n_s16(lo)), vreinterpretq_s8_s16(vdupq_n_s16(hi))) }
    }
    #[inline(always)]
    fn set_u64(self, x: [u64; 4]) -> V2 {
        unsafe { V2(vreinterpretq_s8_u64(vld1q_u64(x.as_ptr())), vreinterpretq_s8_u64(vld1q_u64(x.as_ptr().add(2)))) }
    }
    #[inline(always)]
    fn set_u32(self, x: [u32; 8]) -> V2 {
        unsafe { V2(vreinterpretq_s8_u32(vld1q_u32(x.as_ptr())), vreinterpretq_s8_u32(vld1q_u32(x.as_ptr().add(4)))) }
    }
    #[inline(always)]
    fn and(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vandq_s8(x, y)) }
    }
    #[inline(always)]
    fn or(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vorrq_s8(x, y)) }
    }
    #[inline(always)]
    fn xor(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| veorq_s8(x, y)) }
    }
    #[inline(always)]
    fn andnot(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vbicq_s8(y, x)) }
    }
    #[inline(always)]
    fn add_i8(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vaddq_s8(x, y)) }
    }
    #[inline(always)]
    fn sub_i8(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vsubq_s8(x, y)) }
    }
    #[inline(always)]
    fn add_i16(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vreinterpretq_s8_s16(vaddq_s16(s16(x), s16(y)))) }
    }
    #[inline(always)]
    fn sub_i16(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vreinterpretq_s8_s16(vsubq_s16(s16(x), s16(y)))) }
    }
    #[inline(always)]
    fn add_i32(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vreinterpretq_s8_s32(vaddq_s32(s32(x), s32(y)))) }
    }
    #[inline(always)]
    fn sub_i32(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vreinterpretq_s8_s32(vsubq_s32(s32(x), s32(y)))) }
    }
    #[inline(always)]
    fn srl_i16(self, a: V2, n: u32) -> V2 {
        unsafe {
            let sh = vdupq_n_s16(-(n as i16));
            V2(vreinterpretq_s8_u16(vshlq_u16(u16v(a.0), sh)), vreinterpretq_s8_u16(vshlq_u16(u16v(a.1), sh)))
        }
    }
    #[inline(always)]
    fn sll_i16(self, a: V2, n: u32) -> V2 {
        unsafe {
            let sh = vdupq_n_s16(n as i16);
            V2(vreinterpretq_s8_u16(vshlq_u16(u16v(a.0), sh)), vreinterpretq_s8_u16(vshlq_u16(u16v(a.1), sh)))
        }
    }
    #[inline(always)]
    fn cmpeq_i8(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| vreinterpretq_s8_u8(vceqq_s8(x, y))) }
    }
    #[inline(always)]
    fn sign_i8(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| sign1(x, y)) }
    }
    #[inline(always)]
    fn shuffle_i8(self, table: V2, idx: V2) -> V2 {
        unsafe { both!(table, idx, |t, i| vqtbl1q_s8(t, vreinterpretq_u8_s8(i))) }
    }
    #[inline(always)]
    fn widen_i8_i16(self, v: V2) -> V2 {
        unsafe { V2(vreinterpretq_s8_s16(vmovl_s8(vget_low_s8(v.0))), vreinterpretq_s8_s16(vmovl_high_s8(v.0))) }
    }
    #[inline(always)]
    fn widen_u8_i16(self, v: V2) -> V2 {
        unsafe {
            let u = vreinterpretq_u8_s8(v.0);
            V2(vreinterpretq_s8_u16(vmovl_u8(vget_low_u8(u))), vreinterpretq_s8_u16(vmovl_high_u8(u)))
        }
    }
    #[inline(always)]
    fn dup_lo(self, v: V2) -> V2 {
        V2(v.0, v.0)
    }
    #[inline(always)]
    fn dup_hi(self, v: V2) -> V2 {
        V2(v.1, v.1)
    }
    #[inline(always)]
    fn maddubs(self, u: V2, s: V2) -> V2 {
        unsafe { both!(u, s, |x, y| maddubs1(x, y)) }
    }
    #[inline(always)]
    fn madd_i16(self, a: V2, b: V2) -> V2 {
        unsafe { both!(a, b, |x, y| madd1(x, y)) }
    }
    #[inline(always)]
    fn madd_i16_x4(self, a: V2, b: V2) -> V2 {
        unsafe {
            let m = self.madd_i16(a, b);
            V2(vreinterpretq_s8_s32(vpaddq_s32(s32(m.0), s32(m.1))), vdupq_n_s8(0))
        }
    }
    #[inline(always)]
    fn dot4(self, u: V2, s: V2) -> V2 {
        unsafe { both!(u, s, |x, y| dot1::<DOT>(x, y)) }
    }
    #[inline(always)]
    fn dot4_signed(self, x: V2, y: V2) -> V2 {
        // Signed by signed directly (exact also for -128, where AVX2's sign trick wraps).
        unsafe { both!(x, y, |a, b| dot1::<DOT>(a, b)) }
    }
    #[inline(always)]
    fn fzero(self) -> F2 {
        unsafe { F2(vdupq_n_f32(0.0), vdupq_n_f32(0.0)) }
    }
    #[inline(always)]
    fn fsplat(self, x: f32) -> F2 {
        unsafe { F2(vdupq_n_f32(x), vdupq_n_f32(x)) }
    }
    #[inline(always)]
    fn cvt_i32(self, v: V2) -> F2 {
        unsafe { F2(vcvtq_f32_s32(s32(v.0)), vcvtq_f32_s32(s32(v.1))) }
    }
    #[inline(always)]
    fn fmadd(self, a: F2, b: F2, c: F2) -> F2 {
        unsafe { F2(vfmaq_f32(c.0, a.0, b.0), vfmaq_f32(c.1, a.1, b.1)) }
    }
    #[inline(always)]
    fn fadd(self, a: F2, b: F2) -> F2 {
        unsafe { F2(vaddq_f32(a.0, b.0), vaddq_f32(a.1, b.1)) }
    }
    #[inline(always)]
    fn fstore(self, v: F2) -> [f32; 8] {
        let mut out = [0f32; 8];
        unsafe {
            vst1q_f32(out.as_mut_ptr(), v.0);
            vst1q_f32(out.as_mut_ptr().add(4), v.1);
        }
        out
    }
    #[inline(always)]
    fn fload(self, p: &[f32; 8]) -> F2 {
        unsafe { F2(vld1q_f32(p.as_ptr()), vld1q_f32(p.as_ptr().add(4))) }
    }
    #[inline(always)]
    fn fload_bytes(self, p: &[u8; 32]) -> F2 {
        unsafe { F2(vreinterpretq_f32_u8(vld1q_u8(p.as_ptr())), vreinterpretq_f32_u8(vld1q_u8(p.as_ptr().add(16)))) }
    }
    #[inline(always)]
    fn fmul(self, a: F2, b: F2) -> F2 {
        unsafe { F2(vmulq_f32(a.0, b.0), vmulq_f32(a.1, b.1)) }
    }
    #[inline(always)]
    fn fsub(self, a: F2, b: F2) -> F2 {
        unsafe { F2(vsubq_f32(a.0, b.0), vsubq_f32(a.1, b.1)) }
    }
    #[inline(always)]
    fn fmax_abs(self, acc: F2, v: F2) -> F2 {
        unsafe { F2(vmaxq_f32(acc.0, vabsq_f32(v.0)), vmaxq_f32(acc.1, vabsq_f32(v.1))) }
    }
    #[inline(always)]
    fn fbits(self, v: F2) -> V2 {
        unsafe { V2(vreinterpretq_s8_f32(v.0), vreinterpretq_s8_f32(v.1)) }
    }
    #[inline(always)]
    fn round_i32(self, v: F2) -> V2 {
        unsafe { V2(vreinterpretq_s8_s32(vcvtnq_s32_f32(v.0)), vreinterpretq_s8_s32(vcvtnq_s32_f32(v.1))) }
    }
    #[inline(always)]
    fn pack_i8(self, v: [V2; 4]) -> V2 {
        unsafe {
            let h = |x: V2| vcombine_s16(vqmovn_s32(s32(x.0)), vqmovn_s32(s32(x.1)));
            V2(
                vcombine_s8(vqmovn_s16(h(v[0])), vqmovn_s16(h(v[1]))),
                vcombine_s8(vqmovn_s16(h(v[2])), vqmovn_s16(h(v[3]))),
            )
        }
    }
    #[inline(always)]
    fn hsum_i32(self, v: V2) -> i32 {
        unsafe { vaddvq_s32(vaddq_s32(s32(v.0), s32(v.1))) }
    }
}
