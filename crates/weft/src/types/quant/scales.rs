//! The scale searches and rounding helpers ggml's quantizers share (the "Helper functions"
//! of ggml-quants.c).
//!
//! Bit-exactness with ggml rests on doing the same float operations in the same order: every
//! expression below keeps the operand order and the int -> float conversion points of ggml's
//! C (`w*x[i]*l` is `(w * x) * l as f32`, never `w * (x * l)`), accumulates sequentially, and
//! uses C's `MAX`/`MIN` semantics for floats (which differ from `f32::max` once a NaN shows up).
//!
//! # Fused multiply-adds
//!
//! ggml's reference outputs come from its x86-64 build (GCC, `-O3 -march=native` on an AVX2 +
//! FMA machine; an AVX-512 build vectorizes some loops differently and differs in rare
//! blocks). GCC contracts `a*b + c` into one fused multiply-add (rounded once) wherever every
//! use of the product is an addition in the same basic block (`-ffp-contract=fast`, its
//! default for C), and the scale searches are sensitive enough that this changes which scale
//! wins. weft reproduces those contractions with [`fma`] at exactly the places GCC makes them,
//! read off GCC's optimized GIMPLE for ggml-quants.c at llama.cpp 5c333e01 (GCC 12,
//! `-march=haswell`) and checked by quantizing random data with both. Two patterns recur:
//!
//! - `nearest_int(a*b)` adds the rounding constant to the unrounded product
//!   ([`nearest_int_prod`]); `nearest_int(a/b)` does not fuse.
//! - `sum += a*b` fuses in loops GCC leaves scalar, but not in loops it vectorizes: there it
//!   multiplies in vector registers and adds the lanes in order (an "in-order reduction"), so
//!   each product is rounded before the add. Each loop below says which kind it is.

/// Below this a group counts as all zeros (ggml's `GROUP_MAX_EPS*`).
pub const GROUP_MAX_EPS: f32 = 1e-15;
pub const GROUP_MAX_EPS_IQ3_XXS: f32 = 1e-8;
pub const GROUP_MAX_EPS_IQ2_S: f32 = 1e-8;
pub const GROUP_MAX_EPS_IQ1_M: f32 = 1e-7;
pub const GROUP_MAX_EPS_IQ1_S: f32 = 1e-12;

/// ggml's `nearest_int`: adding 1.5 * 2^23 makes the FPU round to an integer (ties to even)
/// and leaves it in the low mantissa bits. Exact for |x| <= 2^22; for anything else (NaN,
/// infinities) it still returns *some* value in [-2^22, 2^22), which callers clamp, so bad
/// input cannot index out of bounds.
#[inline]
pub fn nearest_int(x: f32) -> i32 {
    let v = x + MAGIC;
    (v.to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// The rounding constant of [`nearest_int`]: 1.5 * 2^23.
const MAGIC: f32 = 12_582_912.0;

/// `a*b + c` rounded once, as GCC's contracted code computes it.
///
/// This crate is built for baseline x86-64, so `f32::mul_add` is a call into the software
/// `fmaf`, which (every xmm register being caller-saved) also spills the caller's floats:
/// the quantizers spent 40-80% of their time there, 2-8x slower than ggml's. On a CPU with
/// FMA the instruction is emitted inline instead, behind the cached feature test; the result
/// is the same single rounding either way.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("fma") {
        let mut r = a;
        // SAFETY: FMA is present; the instruction reads and writes only these registers.
        // Intel syntax: vfmadd213ss r, b, c computes r = b * r + c.
        unsafe {
            core::arch::asm!(
                "vfmadd213ss {r}, {b}, {c}",
                r = inout(xmm_reg) r,
                b = in(xmm_reg) b,
                c = in(xmm_reg) c,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        return r;
    }
    a.mul_add(b, c)
}

/// `nearest_int(a*b)` as GCC compiles it: the product fused into the rounding addition, so
/// this rounds the exact product.
#[inline]
pub fn nearest_int_prod(a: f32, b: f32) -> i32 {
    (fma(a, b, MAGIC).to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// C's float -> integer conversion (truncation) as x86 `cvttss2si` performs it: NaN and
/// out-of-range values give `i32::MIN`. ggml writes `(int8_t)(x + 8.5f)`, which compilers
/// lower to this followed by keeping the low byte; Rust's saturating `as` would differ for
/// non-finite input.
#[inline]
pub fn trunc_i32(x: f32) -> i32 {
    if x.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&x) {
        i32::MIN
    } else {
        x as i32
    }
}

/// C's `MAX(a, b)` macro on floats: `a > b ? a : b` (the NaN behaviour matters for exactness).
#[inline]
pub fn c_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// The largest value, with C's `MAX` (the first element seeds the fold).
#[inline]
pub fn c_max_of(x: impl IntoIterator<Item = f32>) -> f32 {
    let mut it = x.into_iter();
    let first = it.next().unwrap_or(0.0);
    it.fold(first, c_max)
}

/// Sequential sum of squares, as ggml's `for (...) sumx2 += x[i]*x[i];`. GCC vectorizes
/// every such loop (as an in-order reduction), so the squares are rounded before the adds.
#[inline]
pub fn sum_squares(x: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for &v in x {
        s += v * v;
    }
    s
}

/// The importance-matrix weights most quantizers use: `qw[i] * sqrtf(sigma2 + x[i]*x[i])`
/// (the square fused into the addition).
#[inline]
pub fn imatrix_weights(qw: &[f32], x: &[f32], sigma2: f32, out: &mut [f32]) {
    for ((o, &q), &v) in out.iter_mut().zip(qw).zip(x) {
        *o = q * fma(v, v, sigma2).sqrt();
    }
}

/// The element with the largest magnitude, keeping its sign (first one wins ties), and that
/// magnitude: the `amax`/`max` loop ggml opens most symmetric quantizers with.
#[inline]
pub fn signed_absmax(x: &[f32]) -> (f32, f32) {
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    (max, amax)
}

/// `make_qx_quants(n, nmax, x, L, 1, qw)`: a symmetric scale for `x` with integer levels in
/// [-nmax, nmax), stored offset by `nmax` in `out`. Weights are `qw`, or `x^2` without one
/// (ggml's `rmse_type == 1`, the only type any quantizer asks for). Tries 18 scales around
/// `nmax / max` and keeps the one with the smallest weighted squared error.
pub fn make_qx_quants(nmax: i32, x: &[f32], out: &mut [i8], qw: Option<&[f32]>) -> f32 {
    let (max, amax) = signed_absmax(x);
    if amax < GROUP_MAX_EPS {
        out.fill(0);
        return 0.0;
    }
    let weight = |i: usize| qw.map_or(x[i] * x[i], |w| w[i]);
    let level = |iscale: f32, v: f32| nearest_int_prod(iscale, v).clamp(-nmax, nmax - 1);

    let mut iscale = -(nmax as f32) / max;
    // A scalar loop: the sums fuse.
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for (i, o) in out.iter_mut().enumerate().take(x.len()) {
        let l = level(iscale, x[i]);
        *o = (l + nmax) as i8;
        let (w, lf) = (weight(i), l as f32);
        sumlx = fma(w * x[i], lf, sumlx);
        suml2 = fma(lf, w * lf, suml2);
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in (-9..=9).filter(|&is| is != 0) {
        // -(nmax + 0.1*is), the product fused.
        iscale = fma(-(is as f32), 0.1, -(nmax as f32)) / max;
        // Vectorized: products rounded, then added in order.
        sumlx = 0.0;
        suml2 = 0.0;
        for (i, &v) in x.iter().enumerate() {
            let lf = level(iscale, v) as f32;
            let w = weight(i);
            sumlx += w * v * lf;
            suml2 += lf * (w * lf);
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = (nmax + level(iscale, v)) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// `make_q3_quants(n, nmax, x, L, true)`: like [`make_qx_quants`] with `x^2` weights, but
/// refines the levels one at a time (up to 5 passes) instead of trying other scales.
pub fn make_q3_quants(nmax: i32, x: &[f32], out: &mut [i8]) -> f32 {
    let (max, amax) = signed_absmax(x);
    if amax < GROUP_MAX_EPS {
        out.fill(0);
        return 0.0;
    }
    let iscale = -(nmax as f32) / max;
    // Scalar loops throughout: every sum fuses.
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for (o, &v) in out.iter_mut().zip(x) {
        let l = nearest_int_prod(iscale, v).clamp(-nmax, nmax - 1);
        *o = l as i8;
        let (w, lf) = (v * v, l as f32);
        sumlx = fma(w * v, lf, sumlx);
        suml2 = fma(lf, w * lf, suml2);
    }
    for _ in 0..5 {
        let mut changed = false;
        for (o, &v) in out.iter_mut().zip(x) {
            let w = v * v;
            let li = *o as f32;
            let mut slx = fma(-(w * v), li, sumlx);
            if slx > 0.0 {
                let mut sl2 = fma(-li, w * li, suml2);
                let new_l = nearest_int(v * sl2 / slx).clamp(-nmax, nmax - 1);
                if new_l != *o as i32 {
                    let nl = new_l as f32;
                    slx = fma(w * v, nl, slx);
                    sl2 = fma(nl, w * nl, sl2);
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        *o = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for o in out.iter_mut().take(x.len()) {
        *o += nmax as i8;
    }
    sumlx / suml2
}

/// Settings of [`make_qkx_quants`]'s scale search: `nstep + 1` inverse scales
/// `(rmin + rdelta*is + nmax) / (max - min)`, scored by absolute (`use_mad`) or squared error.
pub struct QkxSearch {
    pub rmin: f32,
    pub rdelta: f32,
    pub nstep: i32,
    pub use_mad: bool,
}

/// `make_qkx2_quants` / `make_qkx3_quants` (identical once weights are given, and every
/// caller gives them): an asymmetric scale and minimum for `x` with levels in [0, nmax],
/// fitted by weighted least squares over a range of candidate scales. Returns
/// `(scale, -min)`; `min` is never positive. All of its loops stay scalar in GCC's build, so
/// every accumulation fuses.
pub fn make_qkx_quants(
    nmax: i32,
    x: &[f32],
    weights: &[f32],
    out: &mut [u8],
    aux: &mut [u8],
    search: &QkxSearch,
) -> (f32, f32) {
    let n = x.len();
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = weights[i];
        sum_w += w;
        sum_x = fma(x[i], w, sum_x);
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        out[..n].fill(0);
        return (0.0, -min);
    }
    let err = |d: f32| if search.use_mad { d.abs() } else { d * d };
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_mad = 0.0f32;
    for i in 0..n {
        let l = nearest_int_prod(iscale, x[i] - min).clamp(0, nmax);
        out[i] = l as u8;
        let diff = fma(scale, l as f32, min) - x[i];
        best_mad = fma(err(diff), weights[i], best_mad);
    }
    if search.nstep < 1 {
        return (scale, -min);
    }
    for is in 0..=search.nstep {
        iscale = (fma(is as f32, search.rdelta, search.rmin) + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0.0f32, 0.0f32, 0.0f32);
        for i in 0..n {
            let l = nearest_int_prod(iscale, x[i] - min).clamp(0, nmax);
            aux[i] = l as u8;
            let lf = l as f32;
            // `w*l` is shared by three sums, so its own add does not fuse.
            let wl = weights[i] * lf;
            sum_l += wl;
            sum_l2 = fma(lf, wl, sum_l2);
            sum_xl = fma(x[i], wl, sum_xl);
        }
        // `a*b - c*d`: GCC fuses one of the two products, a different one in each.
        let det = fma(sum_l2, sum_w, -(sum_l * sum_l));
        if det > 0.0 {
            let mut this_min = fma(sum_l2, sum_x, -(sum_l * sum_xl)) / det;
            let mut this_scale = fma(-sum_l, sum_x, sum_xl * sum_w) / det;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut mad = 0.0f32;
            for i in 0..n {
                let diff = fma(this_scale, aux[i] as f32, this_min) - x[i];
                mad = fma(err(diff), weights[i], mad);
            }
            if mad < best_mad {
                out[..n].copy_from_slice(&aux[..n]);
                best_mad = mad;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// How GCC compiled a copy of `make_qp_quants` (see the module notes on fused sums).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum QpLoops {
    /// The out-of-line copies the K-quants call (8 and 16 values): every loop scalar.
    Scalar,
    /// The copy inlined into IQ2_XXS (32 values), whose candidate-error loop is vectorized.
    VectorizedMse,
}

/// `make_qp_quants`: a scale for non-negative `x` (sub-block scales or mins) with levels in
/// [0, nmax]: 8 candidate scales, then up to 5 passes of per-level refinement. Levels are
/// stored as ggml stores them, in `uint8_t` (so a negative level would wrap, as in C).
pub fn make_qp_quants(nmax: i32, x: &[f32], out: &mut [u8], quant_weights: &[f32], loops: QpLoops) -> f32 {
    let n = x.len();
    let mut max = 0.0f32;
    for &v in x {
        max = c_max(max, v);
    }
    if max == 0.0 {
        out[..n].fill(0);
        return 0.0;
    }
    let mut iscale = nmax as f32 / max;
    for (o, &v) in out.iter_mut().zip(x) {
        *o = nearest_int_prod(iscale, v) as u8;
    }
    let scale = 1.0 / iscale;
    let mut best_mse = 0.0f32;
    for i in 0..n {
        let diff = fma(-scale, out[i] as f32, x[i]);
        best_mse = fma(quant_weights[i] * diff, diff, best_mse);
    }
    for is in (-4..=4).filter(|&is| is != 0) {
        let iscale_is = fma(is as f32, 0.1, nmax as f32) / max;
        let scale_is = 1.0 / iscale_is;
        let mut mse = 0.0f32;
        for i in 0..n {
            let l = nearest_int_prod(iscale_is, x[i]).min(nmax);
            let diff = fma(-scale_is, l as f32, x[i]);
            mse = match loops {
                QpLoops::Scalar => fma(quant_weights[i] * diff, diff, mse),
                QpLoops::VectorizedMse => mse + quant_weights[i] * diff * diff,
            };
        }
        if mse < best_mse {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for i in 0..n {
        let l = nearest_int_prod(iscale, x[i]).min(nmax);
        out[i] = l as u8;
        let (w, lf) = (quant_weights[i], l as f32);
        sumlx = fma(w * x[i], lf, sumlx);
        suml2 = fma(lf, w * lf, suml2);
    }
    for _ in 0..5 {
        let mut changed = false;
        for i in 0..n {
            let w = quant_weights[i];
            let li = out[i] as f32;
            let wx = w * x[i];
            let mut slx = fma(-wx, li, sumlx);
            if slx <= 0.0 {
                continue;
            }
            let mut sl2 = fma(-li, w * li, suml2);
            if sl2 > 0.0 {
                let new_l = nearest_int(x[i] * sl2 / slx).min(nmax);
                if new_l != out[i] as i32 {
                    let nl = new_l as f32;
                    slx = fma(wx, nl, slx);
                    sl2 = fma(nl, w * nl, sl2);
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        out[i] = new_l as u8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    sumlx / suml2
}

/// Sorts `(value, index)` pairs by value, keeping equal values in their original order.
/// ggml uses `qsort`, which glibc implements as a (stable) merge sort for arrays this small;
/// any stable sort gives the same order. An insertion sort also cannot panic when a NaN makes
/// the comparison inconsistent, unlike `slice::sort_by`.
pub fn stable_sort_by_value(pairs: &mut [(f32, usize)]) {
    for i in 1..pairs.len() {
        let mut j = i;
        while j > 0 && pairs[j].0 < pairs[j - 1].0 {
            pairs.swap(j, j - 1);
            j -= 1;
        }
    }
}
