//! The portable table: plain loops, one element at a time. The fallback where no SIMD level
//! is present, and the oracle the SIMD tables are tested against.

use super::{Bin, Isa, Kernels};
use crate::types::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};

pub static KERNELS: Kernels = Kernels {
    isa: Isa::Scalar,
    dot_f32,
    dot_f16,
    dot_bf16,
    f16_to_f32: widen_f16,
    bf16_to_f32: widen_bf16,
    f32_to_f16: narrow_f16,
    f32_to_bf16: narrow_bf16,
    add: |x, y, o, n| unsafe { bin(x, y, o, n, |a, b| Bin::Add.scalar(a, b)) },
    sub: |x, y, o, n| unsafe { bin(x, y, o, n, |a, b| Bin::Sub.scalar(a, b)) },
    mul: |x, y, o, n| unsafe { bin(x, y, o, n, |a, b| Bin::Mul.scalar(a, b)) },
    div: |x, y, o, n| unsafe { bin(x, y, o, n, |a, b| Bin::Div.scalar(a, b)) },
    sum_sq_f64,
    scale,
    mad,
    exp_sum,
};

/// Dot products of `rows` rows of a with b, each element read by `load`.
#[inline(always)]
unsafe fn dot_rows<T: Copy>(
    k: usize,
    a: *const u8,
    lda: usize,
    rows: usize,
    b: *const u8,
    out: *mut f32,
    load: impl Fn(T) -> f32,
) {
    let b = b as *const T;
    for r in 0..rows {
        let ar = a.add(r * lda) as *const T;
        let mut s = 0f32;
        for i in 0..k {
            s += load(ar.add(i).read_unaligned()) * load(b.add(i).read_unaligned());
        }
        *out.add(r) = s;
    }
}

unsafe fn dot_f32(k: usize, a: *const u8, lda: usize, rows: usize, b: *const u8, out: *mut f32) {
    dot_rows::<f32>(k, a, lda, rows, b, out, |v| v)
}
unsafe fn dot_f16(k: usize, a: *const u8, lda: usize, rows: usize, b: *const u8, out: *mut f32) {
    dot_rows::<u16>(k, a, lda, rows, b, out, f16_to_f32)
}
unsafe fn dot_bf16(k: usize, a: *const u8, lda: usize, rows: usize, b: *const u8, out: *mut f32) {
    dot_rows::<u16>(k, a, lda, rows, b, out, bf16_to_f32)
}

pub(super) unsafe fn widen_f16(src: *const u16, dst: *mut f32, n: usize) {
    for i in 0..n {
        *dst.add(i) = f16_to_f32(src.add(i).read_unaligned());
    }
}
pub(super) unsafe fn widen_bf16(src: *const u16, dst: *mut f32, n: usize) {
    for i in 0..n {
        *dst.add(i) = bf16_to_f32(src.add(i).read_unaligned());
    }
}
pub(super) unsafe fn narrow_f16(src: *const f32, dst: *mut u16, n: usize) {
    for i in 0..n {
        dst.add(i).write_unaligned(f32_to_f16(*src.add(i)));
    }
}
pub(super) unsafe fn narrow_bf16(src: *const f32, dst: *mut u16, n: usize) {
    for i in 0..n {
        dst.add(i).write_unaligned(f32_to_bf16(*src.add(i)));
    }
}

#[inline(always)]
pub(super) unsafe fn bin(x: *const f32, y: *const f32, out: *mut f32, n: usize, f: impl Fn(f32, f32) -> f32) {
    for i in 0..n {
        *out.add(i) = f(*x.add(i), *y.add(i));
    }
}

pub(super) unsafe fn sum_sq_f64(x: *const f32, n: usize) -> f64 {
    let mut s = 0f64;
    for i in 0..n {
        let v = *x.add(i);
        s += (v * v) as f64;
    }
    s
}

pub(super) unsafe fn scale(x: *const f32, s: f32, out: *mut f32, n: usize) {
    for i in 0..n {
        *out.add(i) = *x.add(i) * s;
    }
}

pub(super) unsafe fn mad(y: *mut f32, x: *const f32, v: f32, n: usize) {
    for i in 0..n {
        *y.add(i) = (*x.add(i)).mul_add(v, *y.add(i));
    }
}

pub(super) unsafe fn exp_sum(x: *const f32, max: f32, y: *mut f32, n: usize) -> f64 {
    let mut sum = 0f64;
    for i in 0..n {
        let v = (*x.add(i) - max).exp();
        *y.add(i) = v;
        sum += v as f64;
    }
    sum
}
