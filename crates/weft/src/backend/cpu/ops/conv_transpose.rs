//! CONV_TRANSPOSE_1D and CONV_TRANSPOSE_2D (no padding, no dilation), as ggml computes them:
//! the kernel and the input are first repacked so that input channels are contiguous, then
//! each output channel's row (1-D) or plane (2-D) is zeroed and every (input position,
//! kernel tap) pair adds its channel dot product at `pos*stride + tap`, in ggml's order.
//! With an f16 kernel the input is rounded to f16 first, as ggml does.
//!
//! The channel dot products follow ggml's scalar order: for f32, products rounded to f32
//! and summed left to right in f32 (ggml_vec_dot_f32's loop; this reproduces ggml's CPU
//! output for the suite's shapes bit for bit on the 32-channel case and within ~1e-15 NMSE
//! on the 2-channel ones, where the reference build fused multiply and add); for f16,
//! exact products summed in f64 (ggml_vec_dot_f16's loop).

use super::src;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::{fmt_shape, Tensor};
use crate::types::{f16_to_f32, f32_to_f16, Type};
use crate::{ensure, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    // ggml: 1-D takes f32 or f16 kernels, 2-D f16 only; both here, f32 input, f32 dst.
    node.ty() == Type::F32
        && node.src(0).is_some_and(|a| matches!(a.ty(), Type::F32 | Type::F16))
        && node.src(1).is_some_and(|b| b.ty() == Type::F32)
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    // The output size follows the stride given at construction; params can be replaced
    // later (Tensor::set_op), so check the stride still fits the result.
    let fits = |s: i32, ins: usize, k: usize, out: usize| s > 0 && (ins == 0 || (ins - 1) * s as usize + k <= out);
    match node.op() {
        Op::ConvTranspose1d { s0, .. } => {
            ensure!(
                fits(s0, b.n(0), a.n(0), d.n(0)),
                "convTranspose1d: s0={s0} does not fit the result {}",
                fmt_shape(&d.ne)
            );
            conv_1d(cx, &a, &b, &d, s0 as usize)
        }
        Op::ConvTranspose2d { stride } => {
            ensure!(
                fits(stride, b.n(0), a.n(0), d.n(0)) && fits(stride, b.n(1), a.n(1), d.n(1)),
                "convTranspose2d: stride={stride} does not fit the result {}",
                fmt_shape(&d.ne)
            );
            conv_2d(cx, &a, &b, &d, stride as usize)
        }
        _ => {}
    }
    Ok(())
}

/// Dot product of one input position's channels with one kernel tap's channels.
fn dot(kernel_ty: Type, x: &[f32], y: &[f32]) -> f32 {
    if kernel_ty == Type::F16 {
        // f16 x f16 products are exact in f32.
        x.iter().zip(y).map(|(a, b)| (a * b) as f64).sum::<f64>() as f32
    } else {
        x.iter().zip(y).fold(0f32, |s, (a, b)| s + a * b)
    }
}

/// Input values as the kernel sees them: rounded through f16 when the kernel is f16.
fn input_value(kernel_ty: Type, v: f32) -> f32 {
    if kernel_ty == Type::F16 {
        f16_to_f32(f32_to_f16(v))
    } else {
        v
    }
}

/// a [K, Cout, Cin] (kernel), b [L, Cin] -> dst [(L-1)*s0 + K, Cout].
fn conv_1d(cx: &Cx, a: &TData, b: &TData, d: &TData, s0: usize) {
    let (k, cout, cin) = (a.n(0), a.n(1), a.n(2));
    let l = b.n(0);
    // SAFETY (both loops): indices stay inside a's and b's shapes.
    let mut kern = vec![0f32; cout * k * cin];
    for oc in 0..cout {
        for t in 0..k {
            for c in 0..cin {
                kern[(oc * k + t) * cin + c] = unsafe { a.get_f32(t, oc, c, 0) };
            }
        }
    }
    let mut inp = vec![0f32; l * cin];
    for x in 0..l {
        for c in 0..cin {
            inp[x * cin + c] = input_value(a.ty, unsafe { b.get_f32(x, c, 0, 0) });
        }
    }
    let n0 = d.n(0);
    cx.par_ranges(cout, 1, |chans| {
        let mut row = vec![0f32; n0];
        for oc in chans {
            row.iter_mut().for_each(|v| *v = 0.0);
            for x in 0..l {
                let xi = &inp[x * cin..(x + 1) * cin];
                for t in 0..k {
                    row[x * s0 + t] += dot(a.ty, xi, &kern[(oc * k + t) * cin..(oc * k + t + 1) * cin]);
                }
            }
            // SAFETY: row oc of dst; its length is (L-1)*s0 + K (constructor).
            unsafe { d.store_row(oc, 0, 0, &row) };
        }
    });
}

/// a [Kw, Kh, Cout, Cin] (kernel), b [W, H, Cin, N] -> dst [(W-1)*s + Kw, (H-1)*s + Kh, Cout, N].
/// (ggml's CPU kernel computes only sample 0 of N and leaves the others zero; here every
/// sample is computed.)
fn conv_2d(cx: &Cx, a: &TData, b: &TData, d: &TData, s: usize) {
    let (kw, kh, cout, cin) = (a.n(0), a.n(1), a.n(2), a.n(3));
    let (w, h, n) = (b.n(0), b.n(1), b.n(3));
    // SAFETY (both loops): indices stay inside a's and b's shapes.
    let mut kern = vec![0f32; cout * kh * kw * cin];
    for oc in 0..cout {
        for ty in 0..kh {
            for tx in 0..kw {
                for c in 0..cin {
                    kern[((oc * kh + ty) * kw + tx) * cin + c] = unsafe { a.get_f32(tx, ty, oc, c) };
                }
            }
        }
    }
    let mut inp = vec![0f32; n * h * w * cin];
    for s3 in 0..n {
        for y in 0..h {
            for x in 0..w {
                for c in 0..cin {
                    inp[((s3 * h + y) * w + x) * cin + c] = input_value(a.ty, unsafe { b.get_f32(x, y, c, s3) });
                }
            }
        }
    }
    let (ow, oh) = (d.n(0), d.n(1));
    cx.par_ranges(cout * n, 1, |planes| {
        let mut plane = vec![0f32; ow * oh];
        for pi in planes {
            let (oc, s3) = (pi % cout, pi / cout);
            plane.iter_mut().for_each(|v| *v = 0.0);
            for y in 0..h {
                for x in 0..w {
                    let at = ((s3 * h + y) * w + x) * cin;
                    let xi = &inp[at..at + cin];
                    for ty in 0..kh {
                        for tx in 0..kw {
                            let kat = ((oc * kh + ty) * kw + tx) * cin;
                            plane[(y * s + ty) * ow + x * s + tx] += dot(a.ty, xi, &kern[kat..kat + cin]);
                        }
                    }
                }
            }
            for oy in 0..oh {
                // SAFETY: plane (oc, s3) of dst, row oy.
                unsafe { d.store_row(oy, oc, s3, &plane[oy * ow..(oy + 1) * ow]) };
            }
        }
    });
}
