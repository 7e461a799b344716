//! The NEON table (aarch64's baseline): 4 f32 lanes, two accumulators per row. f16 widens
//! in integer registers (shift, rescale by 2^112, infinities and NaNs patched: the f16 vector
//! types are not stable Rust), bf16 by a 16-bit shift; tails and the f32 to f16 / bf16
//! narrowing (activation rows, once per compute) take the scalar loops.

use std::arch::aarch64::*;

use super::{scalar, Bin, Isa, Kernels};
use crate::types::{bf16_to_f32, f16_to_f32};

isa_table!(Isa::Neon, scalar::narrow_f16, scalar::narrow_bf16);

trait Load {
    const SIZE: usize;
    unsafe fn load(p: *const u8) -> float32x4_t;
    unsafe fn one(p: *const u8) -> f32;
}

struct F32;
struct F16;
struct Bf16;

impl Load for F32 {
    const SIZE: usize = 4;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> float32x4_t {
        vld1q_f32(p as *const f32)
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        (p as *const f32).read_unaligned()
    }
}

impl Load for F16 {
    const SIZE: usize = 2;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> float32x4_t {
        let h = vmovl_u16(vld1_u16(p as *const u16));
        let sign = vshlq_n_u32::<16>(vandq_u32(h, vdupq_n_u32(0x8000)));
        let em = vandq_u32(h, vdupq_n_u32(0x7fff));
        // Finite values (subnormals included): the bits shifted into an f32 and scaled by
        // 2^112, the difference of the two exponent biases.
        let finite = vmulq_f32(vreinterpretq_f32_u32(vshlq_n_u32::<13>(em)), vdupq_n_f32(f32::from_bits(0x7780_0000)));
        // Infinities and NaNs: all-ones exponent, the mantissa kept, NaNs made quiet.
        let man = vandq_u32(em, vdupq_n_u32(0x3ff));
        let quiet = vandq_u32(vtstq_u32(man, man), vdupq_n_u32(0x0040_0000));
        let special = vorrq_u32(vorrq_u32(vdupq_n_u32(0x7f80_0000), vshlq_n_u32::<13>(man)), quiet);
        let is_special = vcgeq_u32(em, vdupq_n_u32(0x7c00));
        let bits = vbslq_u32(is_special, special, vreinterpretq_u32_f32(finite));
        vreinterpretq_f32_u32(vorrq_u32(bits, sign))
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        f16_to_f32((p as *const u16).read_unaligned())
    }
}

impl Load for Bf16 {
    const SIZE: usize = 2;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> float32x4_t {
        vreinterpretq_f32_u32(vshlq_n_u32::<16>(vmovl_u16(vld1_u16(p as *const u16))))
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        bf16_to_f32((p as *const u16).read_unaligned())
    }
}

#[target_feature(enable = "neon")]
unsafe fn dot<L: Load>(k: usize, a: *const u8, lda: usize, rows: usize, b: *const u8, out: *mut f32) {
    let s = L::SIZE;
    let mut r = 0;
    while r < rows {
        let ar = a.add(r * lda);
        let (mut acc0, mut acc1) = (vdupq_n_f32(0.0), vdupq_n_f32(0.0));
        let mut i = 0;
        while i + 8 <= k {
            acc0 = vfmaq_f32(acc0, L::load(ar.add(i * s)), L::load(b.add(i * s)));
            acc1 = vfmaq_f32(acc1, L::load(ar.add((i + 4) * s)), L::load(b.add((i + 4) * s)));
            i += 8;
        }
        if i + 4 <= k {
            acc0 = vfmaq_f32(acc0, L::load(ar.add(i * s)), L::load(b.add(i * s)));
            i += 4;
        }
        let mut sum = vaddvq_f32(vaddq_f32(acc0, acc1));
        for j in i..k {
            sum += L::one(ar.add(j * s)) * L::one(b.add(j * s));
        }
        *out.add(r) = sum;
        r += 1;
    }
}

#[target_feature(enable = "neon")]
unsafe fn widen<L: Load>(src: *const u16, dst: *mut f32, n: usize) {
    let p = src as *const u8;
    let mut i = 0;
    while i + 4 <= n {
        vst1q_f32(dst.add(i), L::load(p.add(i * 2)));
        i += 4;
    }
    for j in i..n {
        *dst.add(j) = L::one(p.add(j * 2));
    }
}

#[target_feature(enable = "neon")]
unsafe fn bin(x: *const f32, y: *const f32, out: *mut f32, n: usize, op: Bin) {
    let f = |a: float32x4_t, b: float32x4_t| match op {
        Bin::Add => vaddq_f32(a, b),
        Bin::Sub => vsubq_f32(a, b),
        Bin::Mul => vmulq_f32(a, b),
        Bin::Div => vdivq_f32(a, b),
    };
    let mut i = 0;
    while i + 4 <= n {
        vst1q_f32(out.add(i), f(vld1q_f32(x.add(i)), vld1q_f32(y.add(i))));
        i += 4;
    }
    scalar::bin(x.add(i), y.add(i), out.add(i), n - i, |a, b| op.scalar(a, b));
}

#[target_feature(enable = "neon")]
unsafe fn sum_sq_f64(x: *const f32, n: usize) -> f64 {
    let (mut lo, mut hi) = (vdupq_n_f64(0.0), vdupq_n_f64(0.0));
    let mut i = 0;
    while i + 4 <= n {
        let v = vld1q_f32(x.add(i));
        let sq = vmulq_f32(v, v);
        lo = vaddq_f64(lo, vcvt_f64_f32(vget_low_f32(sq)));
        hi = vaddq_f64(hi, vcvt_high_f64_f32(sq));
        i += 4;
    }
    vaddvq_f64(vaddq_f64(lo, hi)) + scalar::sum_sq_f64(x.add(i), n - i)
}

#[target_feature(enable = "neon")]
unsafe fn scale(x: *const f32, s: f32, out: *mut f32, n: usize) {
    let sv = vdupq_n_f32(s);
    let mut i = 0;
    while i + 4 <= n {
        vst1q_f32(out.add(i), vmulq_f32(vld1q_f32(x.add(i)), sv));
        i += 4;
    }
    scalar::scale(x.add(i), s, out.add(i), n - i);
}

/// The scalar loop: aarch64 always has FMA, so its mul_add is one fused instruction.
unsafe fn mad(y: *mut f32, x: *const f32, v: f32, n: usize) {
    scalar::mad(y, x, v, n)
}

/// Per element (see `Kernels::exp_sum`).
unsafe fn exp_sum(x: *const f32, max: f32, y: *mut f32, n: usize) -> f64 {
    scalar::exp_sum(x, max, y, n)
}
