//! CPU kernels of the model and training ops (rope, flash attention, state-space and RWKV
//! ops, expert matmul, outer product, losses, AdamW, and the backward ops) against values
//! worked out independently: by hand for small cases, by plain f64 reference loops written
//! here from each op's definition for the rest, and by finite differences of the forward
//! op for the gradients.

// The reference loops index tensors the way the math is written.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use weft::op::{Op, Prec, RopeParams, ROPE_TYPE_NEOX};
use weft::tensor::flags;
use weft::Type;

// ---------------------------------------------------------------------------------------
// ROPE / ROPE_BACK

#[test]
fn rope_by_hand_at_position_one() {
    // x = [1, 2, 3, 4], position 1, n_dims 4, base 10000: theta_scale = 10000^(-2/4) = 0.01,
    // so the two pairs turn by 1 and 0.01 radians. cos 1 = 0.5403023, sin 1 = 0.8414710,
    // cos 0.01 = 0.9999500, sin 0.01 = 0.0099998.
    let ctx = host_ctx();
    let a = ctx.new_tensor_3d(Type::F32, 4, 1, 1).unwrap();
    let pos = ctx.new_tensor_1d(Type::I32, 1).unwrap();
    set(&a, &[1., 2., 3., 4.]);
    set_i32(&pos, &[1]);
    // Normal mode rotates (x0, x1) and (x2, x3):
    //   1*cos1 - 2*sin1 = -1.1426397, 1*sin1 + 2*cos1 = 1.9220756,
    //   3*cos.01 - 4*sin.01 = 2.9598507, 3*sin.01 + 4*cos.01 = 4.0297995.
    let r = ctx.rope_ext(&a, &pos, None, rope_params(4, 0), false).unwrap();
    compute(&ctx, &r, 1);
    assert_close(&get(&r), &[-1.1426397, 1.9220756, 2.9598507, 4.0297995], 1e-6);
    // NeoX mode rotates (x0, x2) by 1 and (x1, x3) by 0.01:
    //   1*cos1 - 3*sin1 = -1.9841106, 2*cos.01 - 4*sin.01 = 1.9599007,
    //   1*sin1 + 3*cos1 = 2.4623779, 2*sin.01 + 4*cos.01 = 4.0197997.
    let r = ctx.rope_ext(&a, &pos, None, rope_params(4, ROPE_TYPE_NEOX), false).unwrap();
    compute(&ctx, &r, 1);
    assert_close(&get(&r), &[-1.9841106, 1.9599007, 2.4623779, 4.0197997], 1e-6);
    // ROPE_BACK turns the other way: it undoes the normal-mode rotation.
    let fwd = ctx.rope_ext(&a, &pos, None, rope_params(4, 0), false).unwrap();
    let back = ctx.rope_back(&fwd, &pos, None, rope_params(4, 0)).unwrap();
    compute(&ctx, &back, 1);
    assert_close(&get(&back), &[1., 2., 3., 4.], 1e-6);
}

/// ggml's rope from its definition, in f64: pair k of a row at position p turns by
/// theta_k = p * base^(-2k/n_dims) / ff[k], YaRN-blended between interpolation
/// (freq_scale * theta) and extrapolation (theta) by a ramp over the correction dims.
fn rope_reference(x: &[f32], ne: [usize; 4], pos: &[i32], ff: Option<&[f32]>, p: &RopeParams, fwd: bool) -> Vec<f64> {
    let n_dims = p.n_dims as usize;
    let base = p.freq_base as f64;
    let corr_dim = |beta: f64| {
        n_dims as f64 * (p.n_ctx_orig as f64 / (beta * 2.0 * std::f64::consts::PI)).ln() / (2.0 * base.ln())
    };
    let low = corr_dim(p.beta_fast as f64).floor().max(0.0);
    let high = corr_dim(p.beta_slow as f64).ceil().min(n_dims as f64 - 1.0);
    let mut out: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    for i3 in 0..ne[3] {
        for i2 in 0..ne[2] {
            for i1 in 0..ne[1] {
                let row = idx(ne, 0, i1, i2, i3);
                for k in 0..n_dims / 2 {
                    let extrap =
                        pos[i2] as f64 * base.powf(-2.0 * k as f64 / n_dims as f64) / ff.map_or(1.0, |f| f[k] as f64);
                    let interp = p.freq_scale as f64 * extrap;
                    let (theta, mscale) = if p.ext_factor != 0.0 {
                        let ramp = 1.0 - ((k as f64 - low) / (high - low).max(0.001)).clamp(0.0, 1.0);
                        let mix = ramp * p.ext_factor as f64;
                        let ms = p.attn_factor as f64 * (1.0 + 0.1 * (1.0 / p.freq_scale as f64).ln());
                        (interp * (1.0 - mix) + extrap * mix, ms)
                    } else {
                        (interp, p.attn_factor as f64)
                    };
                    let sign = if fwd { 1.0 } else { -1.0 };
                    let (c, s) = (theta.cos() * mscale, sign * theta.sin() * mscale);
                    let (j0, j1) = if p.mode & ROPE_TYPE_NEOX != 0 { (k, k + n_dims / 2) } else { (2 * k, 2 * k + 1) };
                    let (x0, x1) = (x[row + j0] as f64, x[row + j1] as f64);
                    out[row + j0] = x0 * c - x1 * s;
                    out[row + j1] = x0 * s + x1 * c;
                }
            }
        }
    }
    out
}

#[derive(Clone, Copy)]
struct RopeCase {
    ty: Type,
    ne: [usize; 4],
    n_dims: i32,
    mode: i32,
    n_ctx_orig: i32,
    freq_scale: f32,
    ext_factor: f32,
    attn_factor: f32,
    freq_factors: bool,
    view: bool,
}

fn check_rope(c: &RopeCase, seed: u64) {
    let ctx = host_ctx();
    let ne = c.ne;
    let n: usize = ne.iter().product();
    let xv = round(c.ty, &rand_vec(n, seed));
    // A view reads a window of a bigger tensor (test-backend-ops' v=1: strides of a tensor
    // twice as wide, 4 times as tall, 3 times as deep).
    let a = if c.view {
        let big = new_t(&ctx, c.ty, [ne[0] * 2, ne[1] * 4, ne[2] * 3, ne[3]]);
        let mut bv = vec![0f32; big.nelements() as usize];
        let bne = [ne[0] * 2, ne[1] * 4, ne[2] * 3, ne[3]];
        for i3 in 0..ne[3] {
            for i2 in 0..ne[2] {
                for i1 in 0..ne[1] {
                    for i0 in 0..ne[0] {
                        bv[idx(bne, i0, i1, i2, i3)] = xv[idx(ne, i0, i1, i2, i3)];
                    }
                }
            }
        }
        set(&big, &bv);
        let nb = big.nb();
        let v = ctx.view_4d(&big, ne[0] as i64, ne[1] as i64, ne[2] as i64, ne[3] as i64, nb[1], nb[2], nb[3], 0);
        v.unwrap()
    } else {
        let a = new_t(&ctx, c.ty, ne);
        set(&a, &xv);
        a
    };
    let pos = ctx.new_tensor_1d(Type::I32, ne[2] as i64).unwrap();
    let pv: Vec<i32> = (0..ne[2]).map(|i| [7, 0, 93, -3, 511, 40][i % 6]).collect();
    set_i32(&pos, &pv);
    let ffv: Vec<f32> = rand_vec(c.n_dims as usize / 2, seed + 1).iter().map(|x| 1.0 + 0.1 * x).collect();
    let ff = c.freq_factors.then(|| {
        let f = ctx.new_tensor_1d(Type::F32, c.n_dims as i64 / 2).unwrap();
        set(&f, &ffv);
        f
    });
    let p = RopeParams {
        n_dims: c.n_dims,
        mode: c.mode,
        n_ctx_orig: c.n_ctx_orig,
        freq_base: 10000.0,
        freq_scale: c.freq_scale,
        ext_factor: c.ext_factor,
        attn_factor: c.attn_factor,
        beta_fast: 32.0,
        beta_slow: 1.0,
    };
    let tol = if c.ty == Type::F16 { 2e-3 } else { 1e-4 };
    for fwd in [true, false] {
        let out = if fwd {
            ctx.rope_ext(&a, &pos, ff.as_ref(), p, false).unwrap()
        } else {
            ctx.rope_back(&a, &pos, ff.as_ref(), p).unwrap()
        };
        assert!(supported(&out));
        compute(&ctx, &out, 3);
        let want = rope_reference(&xv, ne, &pv, c.freq_factors.then_some(&ffv[..]), &p, fwd);
        assert_close64(&get(&out), &want, tol);
    }
}

#[test]
fn rope_matches_reference_over_modes_types_yarn_and_views() {
    let base = RopeCase {
        ty: Type::F32,
        ne: [10, 3, 4, 2],
        n_dims: 6,
        mode: 0,
        n_ctx_orig: 0,
        freq_scale: 1.0,
        ext_factor: 0.0,
        attn_factor: 1.0,
        freq_factors: false,
        view: false,
    };
    let cases = [
        // n_dims < ne0: the tail passes through; positions shared across ne3.
        RopeCase { ..base },
        RopeCase { mode: ROPE_TYPE_NEOX, freq_factors: true, ..base },
        // YaRN with a context (ramp over dims 1..5) and without (ramp only at pair 0).
        RopeCase { n_ctx_orig: 64, freq_scale: 1.4245, ext_factor: 0.7465, attn_factor: 1.4245, ..base },
        RopeCase { mode: ROPE_TYPE_NEOX, freq_scale: 0.25, ext_factor: 0.7465, ..base },
        RopeCase { ty: Type::F16, ne: [16, 5, 3, 1], n_dims: 16, freq_factors: true, view: true, ..base },
        RopeCase {
            ty: Type::F16,
            ne: [12, 2, 6, 1],
            n_dims: 8,
            mode: ROPE_TYPE_NEOX,
            view: true,
            ext_factor: 0.5,
            ..base
        },
        RopeCase { ne: [64, 3, 2, 1], n_dims: 64, freq_factors: true, view: true, attn_factor: 0.5, ..base },
    ];
    for (i, c) in cases.iter().enumerate() {
        check_rope(c, 100 + i as u64);
    }
}

#[test]
fn rope_in_place_writes_its_input_and_back_is_the_gradient() {
    let ctx = host_ctx();
    let ne = [8usize, 3, 2, 1];
    let a = new_t(&ctx, Type::F32, ne);
    let xv = rand_vec(48, 1);
    set(&a, &xv);
    let pos = ctx.new_tensor_1d(Type::I32, 2).unwrap();
    set_i32(&pos, &[5, 17]);
    let p = RopeParams { ext_factor: 0.3, n_ctx_orig: 32, ..rope_params(8, ROPE_TYPE_NEOX) };
    let r = ctx.rope_ext(&a, &pos, None, p, true).unwrap();
    assert!(r.view_src().is_some_and(|s| s.ptr_eq(&a)));
    compute(&ctx, &r, 2);
    assert_close64(&get(&a), &rope_reference(&xv, ne, &[5, 17], None, &p, true), 1e-5);

    // ROPE_BACK against finite differences of ROPE: d/dx sum(rope(x) * g).
    let x = new_t(&ctx, Type::F32, ne);
    let fwd = ctx.rope_ext(&x, &pos, None, p, false).unwrap();
    let gv = rand_vec(48, 2);
    let numeric = numeric_grad(&ctx, &x, &fwd, &xv, &gv, 1e-2);
    let gt = new_t(&ctx, Type::F32, ne);
    set(&gt, &gv);
    let back = ctx.rope_back(&gt, &pos, None, p).unwrap();
    compute(&ctx, &back, 2);
    assert_close64(&get(&back), &numeric, 1e-3);
}

#[test]
fn rope_rejects_bad_shapes_and_types() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_3d(Type::F32, 8, 2, 3).unwrap();
    let pos = ctx.new_tensor_1d(Type::I32, 3).unwrap();
    let m = err_msg(ctx.rope_ext(&a, &pos, None, rope_params(10, 0), false));
    assert!(m.starts_with("ropeExt: nDims=10"), "{m}");
    let m = err_msg(ctx.rope_ext(&a, &pos, None, rope_params(4, 1), false));
    assert!(m.starts_with("ropeExt: mode=1"), "{m}");
    let short = ctx.new_tensor_1d(Type::I32, 2).unwrap();
    let m = err_msg(ctx.rope_ext(&a, &short, None, rope_params(4, 0), false));
    assert!(m.contains("a.ne[2]=3 must equal b.ne[0]=2"), "{m}");
    // ggml's kernels read element pairs as neighbours: a transposed a is refused.
    let t = ctx.permute(&a, [1, 0, 2, 3]).unwrap();
    let m = err_msg(ctx.rope_back(&t, &pos, None, rope_params(2, 0)));
    assert!(m.starts_with("ropeBack: a must have packed elements"), "{m}");
    let ff = ctx.new_tensor_1d(Type::F32, 1).unwrap();
    let m = err_msg(ctx.rope_ext(&a, &pos, Some(&ff), rope_params(4, 0), false));
    assert!(m.contains("c.ne[0]=1 must be at least nDims/2=2"), "{m}");
    // bf16 rope has no CPU kernel (ggml has none either).
    let b = ctx.new_tensor_3d(Type::BF16, 8, 2, 3).unwrap();
    assert!(!supported(&ctx.rope_ext(&b, &pos, None, rope_params(4, 0), false).unwrap()));
}

// ---------------------------------------------------------------------------------------
// FLASH_ATTN_EXT

#[test]
fn flash_attn_by_hand_one_query_two_keys() {
    // q = [1, 0]; keys [1, 0] and [0, 1] score 1 and 0 (scale 1); softmax weights
    // e/(e+1) = 0.7310586 and 1/(e+1) = 0.2689414 over values [1, 2] and [3, 4]:
    // out = [0.7310586 + 3*0.2689414, 2*0.7310586 + 4*0.2689414] = [1.5378828, 2.5378828].
    let ctx = host_ctx();
    let q = ctx.new_tensor_4d(Type::F32, 2, 1, 1, 1).unwrap();
    let k = ctx.new_tensor_4d(Type::BF16, 2, 2, 1, 1).unwrap();
    let v = ctx.new_tensor_4d(Type::BF16, 2, 2, 1, 1).unwrap();
    set(&q, &[1., 0.]);
    set(&k, &[1., 0., 0., 1.]);
    set(&v, &[1., 2., 3., 4.]);
    // bf16 values accumulate in f32.
    let out = ctx.flash_attn_ext(&q, &k, &v, None, 1.0, 0.0, 0.0).unwrap();
    compute(&ctx, &out, 1);
    assert_close(&get(&out), &[1.5378828, 2.5378828], 1e-6);
    // f16 values accumulate in an f16 vector: after the first key acc = [1, 2]; the second
    // (no new maximum) adds e^-1 * [3, 4] = [1.1036383, 1.4715178], and the sums round to
    // f16 (steps of 2^-9 between 2 and 4): [2.1035156, 3.4707031]; divided by
    // S = 1 + e^-1 = 1.3678794 that is [1.5377931, 2.5372873].
    let k16 = ctx.new_tensor_4d(Type::F16, 2, 2, 1, 1).unwrap();
    let v16 = ctx.new_tensor_4d(Type::F16, 2, 2, 1, 1).unwrap();
    set(&k16, &[1., 0., 0., 1.]);
    set(&v16, &[1., 2., 3., 4.]);
    let out = ctx.flash_attn_ext(&q, &k16, &v16, None, 1.0, 0.0, 0.0).unwrap();
    compute(&ctx, &out, 1);
    assert_close(&get(&out), &[1.5377931, 2.5372873], 1e-6);
}

#[derive(Clone, Copy)]
struct AttnCase {
    kv_ty: Type,
    d: usize,
    n_q: usize,
    n_kv: usize,
    n_head: usize,
    n_head_kv: usize,
    ne3: usize,
    mask: bool,
    max_bias: f32,
    softcap: f32,
}

/// Attention from its definition in f64, on the values as stored (the query rounded to
/// K's type, as ggml converts it before the dot), in ggml's output layout
/// [d, n_head, n_q, ne3].
#[allow(clippy::too_many_arguments)]
fn attn_reference(c: &AttnCase, qv: &[f32], kv: &[f32], vv: &[f32], mv: Option<&[f32]>, scale: f32) -> Vec<f64> {
    let (d, n_q, n_kv, nh, nhk) = (c.d, c.n_q, c.n_kv, c.n_head, c.n_head_kv);
    let mut out = vec![0f64; d * nh * n_q * c.ne3];
    let n_head_log2 = 1usize << (nh as f64).log2().floor() as u32;
    for i3 in 0..c.ne3 {
        for h in 0..nh {
            let slope = if c.max_bias > 0.0 {
                let m0 = 2f64.powf(-(c.max_bias as f64) / n_head_log2 as f64);
                let m1 = 2f64.powf(-(c.max_bias as f64 / 2.0) / n_head_log2 as f64);
                if h < n_head_log2 {
                    m0.powi(h as i32 + 1)
                } else {
                    m1.powi(2 * (h - n_head_log2) as i32 + 1)
                }
            } else {
                1.0
            };
            let hk = h / (nh / nhk);
            for iq in 0..n_q {
                let q = round(c.kv_ty, &qv[idx([d, n_q, nh, c.ne3], 0, iq, h, i3)..][..d]);
                let mut scores = vec![f64::NEG_INFINITY; n_kv];
                for (j, s) in scores.iter_mut().enumerate() {
                    let m = mv.map_or(0.0, |m| m[iq * n_kv + j] as f64);
                    if m == f64::NEG_INFINITY {
                        continue;
                    }
                    let krow = &kv[idx([d, n_kv, nhk, c.ne3], 0, j, hk, i3)..][..d];
                    let mut x = dot64(&q, krow) * scale as f64;
                    if c.softcap != 0.0 {
                        x = c.softcap as f64 * (x / c.softcap as f64).tanh();
                    }
                    *s = x + slope * m;
                }
                let mx = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let w: Vec<f64> = scores.iter().map(|s| (s - mx).exp()).collect();
                let sum: f64 = w.iter().sum();
                for (j, wj) in w.iter().enumerate() {
                    let vrow = &vv[idx([d, n_kv, nhk, c.ne3], 0, j, hk, i3)..][..d];
                    for (i0, &x) in vrow.iter().enumerate() {
                        out[idx([d, nh, n_q, c.ne3], i0, h, iq, i3)] += wj / sum * x as f64;
                    }
                }
            }
        }
    }
    out
}

fn check_attn(c: &AttnCase, seed: u64) {
    let ctx = host_ctx();
    let q = new_t(&ctx, Type::F32, [c.d, c.n_q, c.n_head, c.ne3]);
    let k = new_t(&ctx, c.kv_ty, [c.d, c.n_kv, c.n_head_kv, c.ne3]);
    let v = new_t(&ctx, c.kv_ty, [c.d, c.n_kv, c.n_head_kv, c.ne3]);
    let qv = rand_vec(q.nelements() as usize, seed);
    let kv = round(c.kv_ty, &rand_vec(k.nelements() as usize, seed + 1));
    let vv = round(c.kv_ty, &rand_vec(v.nelements() as usize, seed + 2));
    set(&q, &qv);
    set(&k, &kv);
    set(&v, &vv);
    // The mask is padded to 32 rows; some keys are masked out with -inf, the rest get
    // small f16 biases.
    let n_pad = c.n_q.div_ceil(32) * 32;
    let mut mv = round(Type::F16, &rand_vec(c.n_kv * n_pad, seed + 3));
    for (i, m) in mv.iter_mut().enumerate() {
        if i % 7 == 3 {
            *m = f32::NEG_INFINITY;
        }
    }
    let mask = c.mask.then(|| {
        let m = ctx.new_tensor_2d(Type::F16, c.n_kv as i64, n_pad as i64).unwrap();
        set(&m, &mv);
        m
    });
    let scale = 1.0 / (c.d as f32).sqrt();
    let out = ctx.flash_attn_ext(&q, &k, &v, mask.as_ref(), scale, c.max_bias, c.softcap).unwrap();
    assert_eq!(out.ne(), [c.d as i64, c.n_head as i64, c.n_q as i64, c.ne3 as i64]);
    assert!(supported(&out));
    compute(&ctx, &out, 3);
    let want = attn_reference(c, &qv, &kv, &vv, c.mask.then_some(&mv[..]), scale);
    // f16 values are summed in an f16 vector (relative steps of 2^-11 per update).
    let tol = if c.kv_ty == Type::F16 { 2e-3 } else { 2e-6 };
    assert_close64(&get(&out), &want, tol);
    // ggml's CPU uses the same kernel for both precisions.
    ctx.flash_attn_ext_set_prec(&out, Prec::F32).unwrap();
    let first = get(&out);
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), first);
}

#[test]
fn flash_attn_matches_reference_with_mask_alibi_softcap_and_gqa() {
    let base = AttnCase {
        kv_ty: Type::F16,
        d: 64,
        n_q: 3,
        n_kv: 40,
        n_head: 4,
        n_head_kv: 4,
        ne3: 1,
        mask: true,
        max_bias: 0.0,
        softcap: 0.0,
    };
    let cases = [
        AttnCase { ..base },
        AttnCase { mask: false, d: 80, n_q: 1, ..base },
        // ALiBi over 6 heads (not a power of two: two slope sequences).
        AttnCase { n_head: 6, n_head_kv: 6, max_bias: 8.0, n_q: 35, ..base },
        // Gemma-2 style softcap; grouped-query heads and a second batch dim.
        AttnCase { d: 128, softcap: 10.0, n_head: 4, n_head_kv: 2, ne3: 2, ..base },
        AttnCase { d: 256, n_q: 2, n_kv: 20, n_head: 2, n_head_kv: 1, ..base },
        // bf16 K/V: query rounded to bf16, values accumulated in f32.
        AttnCase { kv_ty: Type::BF16, n_q: 33, max_bias: 8.0, softcap: 10.0, ..base },
    ];
    for (i, c) in cases.iter().enumerate() {
        check_attn(c, 200 + 10 * i as u64);
    }
}

#[test]
fn flash_attn_rejects_bad_shapes_and_types() {
    let ctx = host_ctx();
    let q = ctx.new_tensor_4d(Type::F32, 64, 3, 4, 1).unwrap();
    let k = ctx.new_tensor_4d(Type::F16, 64, 40, 4, 1).unwrap();
    let v = ctx.new_tensor_4d(Type::F16, 64, 40, 4, 1).unwrap();
    let short = ctx.new_tensor_2d(Type::F16, 40, 3).unwrap();
    let m = err_msg(ctx.flash_attn_ext(&q, &k, &v, Some(&short), 0.125, 0.0, 0.0));
    assert!(m.starts_with("flashAttnExt: mask.ne[1]=3 must be at least q.ne[1]=3 padded to 32"), "{m}");
    let m32 = ctx.new_tensor_2d(Type::F32, 40, 32).unwrap();
    let m = err_msg(ctx.flash_attn_ext(&q, &k, &v, Some(&m32), 0.125, 0.0, 0.0));
    assert!(m.starts_with("flashAttnExt: mask.type=f32 must be f16"), "{m}");
    let m = err_msg(ctx.flash_attn_ext(&q, &k, &v, None, 0.125, 8.0, 0.0));
    assert!(m.contains("maxBias=8 > 0 needs a mask"), "{m}");
    let k3 = ctx.new_tensor_4d(Type::F16, 64, 40, 3, 1).unwrap();
    let m = err_msg(ctx.flash_attn_ext(&q, &k3, &v, None, 0.125, 0.0, 0.0));
    assert!(m.contains("q.ne[2]=4 must be a multiple of k.ne[2]=3"), "{m}");
    // Rows of q, k and v must be packed (ggml's kernel asserts it).
    let qt = ctx.new_tensor_4d(Type::F32, 3, 64, 4, 1).unwrap();
    let qt = ctx.permute(&qt, [1, 0, 2, 3]).unwrap();
    let m = err_msg(ctx.flash_attn_ext(&qt, &k, &v, None, 0.125, 0.0, 0.0));
    assert!(m.starts_with("flashAttnExt: q must have packed elements"), "{m}");
    // f32 K/V have no CPU kernel (ggml-cpu has no f32 from_float for the query).
    let kf = ctx.new_tensor_4d(Type::F32, 64, 40, 4, 1).unwrap();
    assert!(!supported(&ctx.flash_attn_ext(&q, &kf, &kf, None, 0.125, 0.0, 0.0).unwrap()));
}

// ---------------------------------------------------------------------------------------
// SSM_CONV, SSM_SCAN, RWKV_WKV

#[test]
fn ssm_conv_by_hand() {
    // Two channels, kernel 3, two tokens: channel 0 [1, 2, 3, 4] * [1, 0, -1] slides to
    // 1 - 3 = -2 and 2 - 4 = -2; channel 1 [0, 1, 0, -1] * [.5, .5, .5] to 0.5 and 0.
    let ctx = host_ctx();
    let sx = ctx.new_tensor_3d(Type::F32, 4, 2, 1).unwrap();
    let c = ctx.new_tensor_2d(Type::F32, 3, 2).unwrap();
    set(&sx, &[1., 2., 3., 4., 0., 1., 0., -1.]);
    set(&c, &[1., 0., -1., 0.5, 0.5, 0.5]);
    let out = ctx.ssm_conv(&sx, &c).unwrap();
    assert_eq!(out.ne(), [2, 2, 1, 1]);
    compute(&ctx, &out, 2);
    // dst is [d_inner, n_t, n_s]: channel varies fastest.
    assert_eq!(get(&out), vec![-2., 0.5, -2., 0.]);
}

#[test]
fn ssm_conv_matches_reference() {
    let ctx = host_ctx();
    let (d_conv, d_inner, n_t, n_s) = (4usize, 37usize, 5usize, 3usize);
    let sx = new_t(&ctx, Type::F32, [d_conv - 1 + n_t, d_inner, n_s, 1]);
    let c = new_t(&ctx, Type::F32, [d_conv, d_inner, 1, 1]);
    let (sv, cv) = (rand_vec(sx.nelements() as usize, 300), rand_vec(c.nelements() as usize, 301));
    set(&sx, &sv);
    set(&c, &cv);
    let out = ctx.ssm_conv(&sx, &c).unwrap();
    compute(&ctx, &out, 3);
    let mut want = vec![0f64; d_inner * n_t * n_s];
    for s in 0..n_s {
        for t in 0..n_t {
            for i in 0..d_inner {
                want[(s * n_t + t) * d_inner + i] = (0..d_conv)
                    .map(|k| sv[(s * d_inner + i) * (d_conv - 1 + n_t) + t + k] as f64 * cv[i * d_conv + k] as f64)
                    .sum();
            }
        }
    }
    assert_close64(&get(&out), &want, 1e-6);
}

#[test]
fn ssm_scan_matches_reference() {
    let ctx = host_ctx();
    let (d_state, d_inner, n_t, n_s) = (4usize, 3usize, 3usize, 2usize);
    let s = new_t(&ctx, Type::F32, [d_state, d_inner, n_s, 1]);
    let x = new_t(&ctx, Type::F32, [d_inner, n_t, n_s, 1]);
    let dt = new_t(&ctx, Type::F32, [d_inner, n_t, n_s, 1]);
    let a = new_t(&ctx, Type::F32, [d_state, d_inner, 1, 1]);
    let b = new_t(&ctx, Type::F32, [d_state, n_t, n_s, 1]);
    let c = new_t(&ctx, Type::F32, [d_state, n_t, n_s, 1]);
    let sv = rand_vec(24, 310);
    let xv = rand_vec(18, 311);
    // dt spans softplus' both branches (linear above 20).
    let mut dtv: Vec<f32> = rand_vec(18, 312).iter().map(|v| v * 3.0).collect();
    dtv[4] = 25.0;
    // Mamba's A is negative (A = -exp(A_log)).
    let av: Vec<f32> = rand_vec(12, 313).iter().map(|v| -(v * 2.0).exp()).collect();
    let (bv, cv) = (rand_vec(24, 314), rand_vec(24, 315));
    for (t, v) in [(&s, &sv), (&x, &xv), (&dt, &dtv), (&a, &av), (&b, &bv), (&c, &cv)] {
        set(t, v);
    }
    let out = ctx.ssm_scan(&s, &x, &dt, &a, &b, &c).unwrap();
    assert_eq!(out.ne(), [18 + 24, 1, 1, 1]);
    compute(&ctx, &out, 2);
    let mut y = vec![0f64; 18];
    let mut states = vec![0f64; 24];
    for seq in 0..n_s {
        for i in 0..d_inner {
            let mut st: Vec<f64> = (0..d_state).map(|k| sv[(seq * d_inner + i) * d_state + k] as f64).collect();
            for t in 0..n_t {
                let e = (seq * n_t + t) * d_inner + i;
                let d = dtv[e] as f64;
                let sp = if d <= 20.0 { d.exp().ln_1p() } else { d };
                let mut acc = 0.0;
                for k in 0..d_state {
                    let bc = (seq * n_t + t) * d_state + k;
                    st[k] = st[k] * (sp * av[i * d_state + k] as f64).exp() + bv[bc] as f64 * xv[e] as f64 * sp;
                    acc += st[k] * cv[bc] as f64;
                }
                y[e] = acc;
            }
            for k in 0..d_state {
                states[(seq * d_inner + i) * d_state + k] = st[k];
            }
        }
    }
    y.extend(states);
    assert_close64(&get(&out), &y, 2e-5);
}

#[test]
fn rwkv_wkv_matches_reference() {
    let ctx = host_ctx();
    let (s, h, n_seq_tokens, n_seqs) = (4usize, 2usize, 3usize, 2usize);
    let t_all = n_seq_tokens * n_seqs;
    let r = new_t(&ctx, Type::F32, [1, s, h, t_all]);
    let k = new_t(&ctx, Type::F32, [s, 1, h, t_all]);
    let v = new_t(&ctx, Type::F32, [1, s, h, t_all]);
    let tf = new_t(&ctx, Type::F32, [s, h, 1, 1]);
    let td = new_t(&ctx, Type::F32, [1, s, h, t_all]);
    let st = new_t(&ctx, Type::F32, [s * s * h, n_seqs, 1, 1]);
    let n = s * h * t_all;
    let (rv, kv, vv, tfv) = (rand_vec(n, 320), rand_vec(n, 321), rand_vec(n, 322), rand_vec(s * h, 323));
    let tdv: Vec<f32> = rand_vec(n, 324).iter().map(|x| 0.5 + 0.4 * x).collect();
    let sv = rand_vec(s * s * h * n_seqs, 325);
    for (t, x) in [(&r, &rv), (&k, &kv), (&v, &vv), (&tf, &tfv), (&td, &tdv), (&st, &sv)] {
        set(t, x);
    }
    let out = ctx.rwkv_wkv(&k, &v, &r, &tf, &td, &st).unwrap();
    assert_eq!(out.ne(), [(s * h) as i64, (t_all + s * n_seqs) as i64, 1, 1]);
    compute(&ctx, &out, 3);
    let c = s * h;
    let mut want = vec![0f64; c * (t_all + s * n_seqs)];
    for seq in 0..n_seqs {
        for hd in 0..h {
            // state[i][j]: key channel i, value channel j.
            let base = seq * s * c + hd * s * s;
            let mut state: Vec<f64> = sv[base..base + s * s].iter().map(|&x| x as f64).collect();
            for t in seq * n_seq_tokens..(seq + 1) * n_seq_tokens {
                let at = |i: usize| t * c + hd * s + i;
                for j in 0..s {
                    want[at(j)] = (0..s)
                        .map(|i| {
                            let kv_ij = kv[at(i)] as f64 * vv[at(j)] as f64;
                            rv[at(i)] as f64 * (kv_ij * tfv[hd * s + i] as f64 + state[i * s + j])
                        })
                        .sum();
                }
                for i in 0..s {
                    for j in 0..s {
                        state[i * s + j] = state[i * s + j] * tdv[at(i)] as f64 + kv[at(i)] as f64 * vv[at(j)] as f64;
                    }
                }
            }
            want[t_all * c + base..t_all * c + base + s * s].copy_from_slice(&state);
        }
    }
    assert_close64(&get(&out), &want, 1e-5);
}

#[test]
fn state_space_ops_reject_bad_shapes() {
    let ctx = host_ctx();
    let sx = ctx.new_tensor_3d(Type::F32, 6, 8, 2).unwrap();
    let c = ctx.new_tensor_2d(Type::F32, 4, 8).unwrap();
    let wide = ctx.new_tensor_2d(Type::F32, 4, 9).unwrap();
    let m = err_msg(ctx.ssm_conv(&sx, &wide));
    assert!(m.starts_with("ssmConv: sx.ne[1]=8 must equal c.ne[1]=9"), "{m}");
    // A window of rows that do not follow each other is refused (ggml asserts nb[1]).
    let big = ctx.new_tensor_3d(Type::F32, 7, 8, 2).unwrap();
    let nb = big.nb();
    let v = ctx.view_3d(&big, 6, 8, 2, nb[1], nb[2], 0).unwrap();
    let m = err_msg(ctx.ssm_conv(&v, &c));
    assert!(m.starts_with("ssmConv: sx rows must follow each other"), "{m}");
    // ssm_scan: the states follow y at x's dim-3 stride, so x must be 3-D.
    let (s, x4) = (ctx.new_tensor_3d(Type::F32, 4, 3, 2).unwrap(), ctx.new_tensor_4d(Type::F32, 3, 5, 2, 2).unwrap());
    let a = ctx.new_tensor_2d(Type::F32, 4, 3).unwrap();
    let bc = ctx.new_tensor_3d(Type::F32, 4, 5, 2).unwrap();
    let m = err_msg(ctx.ssm_scan(&s, &x4, &x4, &a, &bc, &bc));
    assert!(m.starts_with("ssmScan: x must be 3-D, got [3,5,2,2]"), "{m}");
    let x = ctx.new_tensor_3d(Type::F32, 3, 5, 2).unwrap();
    let bad_b = ctx.new_tensor_3d(Type::F32, 4, 6, 2).unwrap();
    let m = err_msg(ctx.ssm_scan(&s, &x, &x, &a, &bad_b, &bad_b));
    assert!(m.starts_with("ssmScan: B [4,6,2,1] must be [d_state=4, n_seq_tokens=5, n_seqs=2]"), "{m}");
    let k = ctx.new_tensor_4d(Type::F32, 4, 1, 2, 5).unwrap();
    let vv = ctx.new_tensor_4d(Type::F32, 1, 4, 2, 5).unwrap();
    let tf = ctx.new_tensor_2d(Type::F32, 4, 2).unwrap();
    let st = ctx.new_tensor_2d(Type::F32, 32, 2).unwrap();
    let m = err_msg(ctx.rwkv_wkv(&k, &vv, &vv, &tf, &vv, &st));
    assert!(m.starts_with("rwkvWkv: k.ne[3]=5 tokens must split evenly over 2 sequences"), "{m}");
}

// ---------------------------------------------------------------------------------------
// MUL_MAT_ID, OUT_PROD

#[test]
fn mul_mat_id_by_hand() {
    // Two experts of one row each (k = 2): e0 = [1, 2], e1 = [10, 20]. Token 0 uses experts
    // (1, 0), token 1 uses (0, 0); b rows [1, 1] (token 0) and [3, -1] (token 1), broadcast
    // over the slots: [30, 3] and [1, 1].
    let ctx = host_ctx();
    let a = ctx.new_tensor_3d(Type::F32, 2, 1, 2).unwrap();
    let b = ctx.new_tensor_3d(Type::F32, 2, 1, 2).unwrap();
    let ids = ctx.new_tensor_2d(Type::I32, 2, 2).unwrap();
    set(&a, &[1., 2., 10., 20.]);
    set(&b, &[1., 1., 3., -1.]);
    set_i32(&ids, &[1, 0, 0, 0]);
    let out = ctx.mul_mat_id(&a, &b, &ids).unwrap();
    assert_eq!(out.ne(), [1, 2, 2, 1]);
    compute(&ctx, &out, 2);
    assert_eq!(get(&out), vec![30., 3., 1., 1.]);
    // An id outside the experts is an error, not a stray read.
    set_i32(&ids, &[1, 2, 0, 0]);
    let e = try_compute(&ctx, &out, 2).unwrap_err();
    assert!(e.message.contains("mulMatId: expert id 2 at ids[1,0] is outside 0..2"), "{}", e.message);
    set_i32(&ids, &[1, 0, -1, 0]);
    assert!(try_compute(&ctx, &out, 1).unwrap_err().message.contains("expert id -1 at ids[0,1]"));
}

#[test]
fn mul_mat_id_matches_reference_with_id_views_and_broadcast() {
    // test-backend-ops' layout: ids [n_mats, n] viewed to its first n_used columns.
    let (k, m, n_mats, n_used, n) = (48usize, 70usize, 4usize, 2usize, 5usize);
    for (ty, bcast) in [(Type::F32, false), (Type::F16, true), (Type::BF16, false), (Type::F16, false)] {
        let ctx = host_ctx();
        let a = new_t(&ctx, ty, [k, m, n_mats, 1]);
        let ids_full = ctx.new_tensor_2d(Type::I32, n_mats as i64, n as i64).unwrap();
        let ids = ctx.view_2d(&ids_full, n_used as i64, n as i64, ids_full.nb()[1], 0).unwrap();
        let n_b = if bcast { 1 } else { n_used };
        let b = new_t(&ctx, Type::F32, [k, n_b, n, 1]);
        let av = round(ty, &rand_vec(k * m * n_mats, 330));
        let bv = rand_vec(k * n_b * n, 331);
        set(&a, &av);
        set(&b, &bv);
        let idv: Vec<i32> = (0..n * n_mats).map(|i| ((i * 7 + i / n_mats) % n_mats) as i32).collect();
        set_i32(&ids_full, &idv);
        let out = ctx.mul_mat_id(&a, &b, &ids).unwrap();
        assert!(supported(&out));
        compute(&ctx, &out, 3);
        // b is rounded to the experts' type before the dot, as ggml does.
        let br = round(ty, &bv);
        let mut want = vec![0f64; m * n_used * n];
        for t in 0..n {
            for slot in 0..n_used {
                let e = idv[t * n_mats + slot] as usize;
                let brow = &br[(t * n_b + slot % n_b) * k..][..k];
                for i in 0..m {
                    want[(t * n_used + slot) * m + i] = dot64(&av[(e * m + i) * k..][..k], brow);
                }
            }
        }
        assert_close64(&get(&out), &want, 1e-5);
    }
}

#[test]
fn out_prod_by_hand() {
    // a [2, 2] rows [1, 2], [3, 4]; b [3, 2] rows [1, 0, 2], [0, 1, 1]:
    // out[i, j] = a[i, 0] b[j, 0] + a[i, 1] b[j, 1] ->
    // j=0: [1, 2]; j=1: [3, 4]; j=2: [2+3, 4+4] = [5, 8].
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 3, 2).unwrap();
    set(&a, &[1., 2., 3., 4.]);
    set(&b, &[1., 0., 2., 0., 1., 1.]);
    let out = ctx.out_prod(&a, &b).unwrap();
    assert_eq!(out.ne(), [2, 3, 1, 1]);
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1., 2., 3., 4., 5., 8.]);
}

#[test]
fn out_prod_matches_reference_with_transposed_b_and_broadcast() {
    let (m, p, n) = (19usize, 6usize, 11usize);
    for (ty_a, ty_b, trans_b, a_bs) in [
        (Type::F32, Type::F32, false, [3usize, 2usize]),
        (Type::F32, Type::F32, true, [1, 1]),
        (Type::F16, Type::F32, true, [1, 2]),
        (Type::F32, Type::F16, false, [3, 1]),
    ] {
        let ctx = host_ctx();
        let bs = [3usize, 2usize];
        let a = new_t(&ctx, ty_a, [m, n, a_bs[0], a_bs[1]]);
        let av = round(ty_a, &rand_vec(a.nelements() as usize, 340));
        set(&a, &av);
        let bv = round(ty_b, &rand_vec(p * n * bs[0] * bs[1], 341));
        // bv holds b logically [p, n, bs0, bs1]; for trans_b it is stored as [n, p, ...].
        let b = if trans_b {
            let bt = new_t(&ctx, ty_b, [n, p, bs[0], bs[1]]);
            let mut store = vec![0f32; bv.len()];
            for s in 0..bs[0] * bs[1] {
                for j in 0..n {
                    for i in 0..p {
                        store[(s * p + i) * n + j] = bv[(s * n + j) * p + i];
                    }
                }
            }
            set(&bt, &store);
            ctx.transpose(&bt).unwrap()
        } else {
            let b = new_t(&ctx, ty_b, [p, n, bs[0], bs[1]]);
            set(&b, &bv);
            b
        };
        let out = ctx.out_prod(&a, &b).unwrap();
        assert_eq!(out.ne(), [m as i64, p as i64, bs[0] as i64, bs[1] as i64]);
        compute(&ctx, &out, 3);
        let mut want = vec![0f64; m * p * bs[0] * bs[1]];
        for i3 in 0..bs[1] {
            for i2 in 0..bs[0] {
                let (a2, a3) = (i2 / (bs[0] / a_bs[0]), i3 / (bs[1] / a_bs[1]));
                for i1 in 0..p {
                    for i0 in 0..m {
                        want[idx([m, p, bs[0], bs[1]], i0, i1, i2, i3)] = (0..n)
                            .map(|j| {
                                av[idx([m, n, a_bs[0], a_bs[1]], i0, j, a2, a3)] as f64
                                    * bv[idx([p, n, bs[0], bs[1]], i1, j, i2, i3)] as f64
                            })
                            .sum();
                    }
                }
            }
        }
        assert_close64(&get(&out), &want, 1e-5);
    }
}

#[test]
fn products_reject_bad_shapes() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_3d(Type::F32, 8, 4, 3).unwrap();
    let b = ctx.new_tensor_3d(Type::F32, 8, 2, 5).unwrap();
    let ids = ctx.new_tensor_2d(Type::I32, 3, 5).unwrap();
    let m = err_msg(ctx.mul_mat_id(&a, &b, &ids));
    assert!(m.starts_with("mulMatId: ids.ne[0]=3 must be a multiple of b.ne[1]=2"), "{m}");
    let fids = ctx.new_tensor_2d(Type::F32, 2, 5).unwrap();
    assert!(err_msg(ctx.mul_mat_id(&a, &b, &fids)).starts_with("mulMatId: ids.type=f32 must be i32"));
    let bt = ctx.new_tensor_3d(Type::F32, 2, 8, 5).unwrap();
    let bt = ctx.permute(&bt, [1, 0, 2, 3]).unwrap();
    let ids2 = ctx.new_tensor_2d(Type::I32, 2, 5).unwrap();
    let m = err_msg(ctx.mul_mat_id(&a, &bt, &ids2));
    assert!(m.starts_with("mulMatId: b must have packed elements"), "{m}");
    let pa = ctx.new_tensor_2d(Type::F32, 4, 3).unwrap();
    let pb = ctx.new_tensor_2d(Type::F32, 5, 2).unwrap();
    let m = err_msg(ctx.out_prod(&pa, &pb));
    assert!(m.starts_with("outProd: a.ne[1]=3 must equal b.ne[1]=2"), "{m}");
}

// ---------------------------------------------------------------------------------------
// CROSS_ENTROPY_LOSS, CROSS_ENTROPY_LOSS_BACK, OPT_STEP_ADAMW

#[test]
fn cross_entropy_loss_by_hand() {
    // Row 0: logits [0, ln 3] -> softmax [1/4, 3/4]; labels [1/2, 1/2]:
    //   -(ln(1/4) + ln(3/4)) / 2 = 0.8369882.
    // Row 1: logits [2, 0] -> softmax [e^2, 1]/(e^2 + 1); labels [0, 1]:
    //   -ln(1/(1 + e^2)) = 2.1269280.
    // The loss is the mean over rows: 1.4819581.
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    set(&a, &[0., 3f32.ln(), 2., 0.]);
    set(&b, &[0.5, 0.5, 0., 1.]);
    let loss = ctx.cross_entropy_loss(&a, &b).unwrap();
    assert_eq!(loss.ne(), [1, 1, 1, 1]);
    compute(&ctx, &loss, 2);
    assert_close(&get(&loss), &[1.4819581], 1e-6);
}

#[test]
fn cross_entropy_loss_and_its_gradient_match_reference_and_finite_differences() {
    let ctx = host_ctx();
    let ne = [10usize, 5, 4, 3];
    let n: usize = ne.iter().product();
    let a = new_t(&ctx, Type::F32, ne);
    let b = new_t(&ctx, Type::F32, ne);
    let av: Vec<f32> = rand_vec(n, 350).iter().map(|x| x * 4.0).collect();
    // Labels: a probability distribution per row.
    let mut bv: Vec<f32> = rand_vec(n, 351).iter().map(|x| x.abs() + 0.01).collect();
    for row in bv.chunks_mut(10) {
        let s: f32 = row.iter().sum();
        row.iter_mut().for_each(|x| *x /= s);
    }
    set(&a, &av);
    set(&b, &bv);
    let loss = ctx.cross_entropy_loss(&a, &b).unwrap();
    compute(&ctx, &loss, 3);
    let rows = n / 10;
    let mut want = 0f64;
    let mut grad = vec![0f64; n];
    let c = 0.7f64;
    for r in 0..rows {
        let x = &av[r * 10..(r + 1) * 10];
        let mx = x.iter().cloned().fold(f32::MIN, f32::max) as f64;
        let lse = x.iter().map(|&v| (v as f64 - mx).exp()).sum::<f64>().ln() + mx;
        for i in 0..10 {
            want -= bv[r * 10 + i] as f64 * (x[i] as f64 - lse);
            grad[r * 10 + i] = ((x[i] as f64 - lse).exp() - bv[r * 10 + i] as f64) * c / rows as f64;
        }
    }
    assert_close64(&get(&loss), &[want / rows as f64], 1e-6);
    // Same result on one thread (the row sums are added in a fixed order).
    let first = get(&loss);
    compute(&ctx, &loss, 1);
    assert_eq!(get(&loss), first);

    let cg = ctx.new_tensor_1d(Type::F32, 1).unwrap();
    set(&cg, &[c as f32]);
    let back = ctx.cross_entropy_loss_back(&a, &b, &cg).unwrap();
    compute(&ctx, &back, 3);
    assert_close64(&get(&back), &grad, 1e-6);
    // And against finite differences of the loss itself (scaled by c).
    let numeric = numeric_grad(&ctx, &a, &loss, &av, &[c as f32], 1e-2);
    assert_close64(&get(&back), &numeric, 2e-3);
}

#[test]
fn adamw_by_hand_then_counts_iterations() {
    // One weight w = 1 with gradient 0.5, fresh moments, alpha 0.1, betas 0.9 / 0.999:
    // m = 0.05, v = 0.00025; corrected m = 0.05 * 0.1 / (1 - 0.9) = 0.05 and
    // sqrt(v / (1 - 0.999)) = 0.5, so w = 1 - 0.05 / (0.5 + 1e-8) = 0.9 (step = alpha).
    let ctx = host_ctx();
    let w = ctx.new_tensor_1d(Type::F32, 1).unwrap();
    w.set_flags(flags::PARAM);
    let g = ctx.new_tensor_1d(Type::F32, 1).unwrap();
    set(&w, &[1.0]);
    set(&g, &[0.5]);
    let step = ctx.opt_step_adamw(&w, &g, 0.1, 0.9, 0.999, 1e-8, 0.0).unwrap();
    let (m, v) = (step.src(2).unwrap().clone(), step.src(3).unwrap().clone());
    set(&m, &[0.0]);
    set(&v, &[0.0]);
    compute(&ctx, &step, 1);
    assert_close(&get(&w), &[0.9], 1e-6);
    assert_close(&get(&m), &[0.05], 1e-7);
    assert_close(&get(&v), &[0.00025], 1e-7);
    assert!(matches!(step.op(), Op::OptStepAdamw { iter: 2, .. }));
    // Step 2 with the same gradient: m = 0.095, v = 0.00049975; corrections
    // 1 - 0.9^2 = 0.19 and 1 - 0.999^2 = 0.001999: mh = 0.095*0.1/0.19 = 0.05,
    // vh = sqrt(0.00049975/0.001999) = 0.5 -> w = 0.9 - 0.1 = 0.8.
    compute(&ctx, &step, 1);
    assert_close(&get(&w), &[0.8], 1e-6);
    assert!(matches!(step.op(), Op::OptStepAdamw { iter: 3, .. }));
}

#[test]
fn adamw_matches_reference_with_weight_decay() {
    let ctx = host_ctx();
    let ne = [10usize, 5, 4, 3];
    let n: usize = ne.iter().product();
    let w = new_t(&ctx, Type::F32, ne);
    w.set_flags(flags::PARAM);
    let g = new_t(&ctx, Type::F32, ne);
    let (wv, gv) = (rand_vec(n, 360), rand_vec(n, 361));
    let (mv, vv): (Vec<f32>, Vec<f32>) = (rand_vec(n, 362), rand_vec(n, 363).iter().map(|x| x.abs()).collect());
    set(&w, &wv);
    set(&g, &gv);
    let (alpha, b1, b2, eps, wd) = (1e-3f32, 0.9f32, 0.999f32, 1e-8f32, 1e-2f32);
    let step = ctx.opt_step_adamw(&w, &g, alpha, b1, b2, eps, wd).unwrap();
    set(step.src(2).unwrap(), &mv);
    set(step.src(3).unwrap(), &vv);
    compute(&ctx, &step, 3);
    let (b1, b2) = (b1 as f64, b2 as f64);
    let want: Vec<f64> = (0..n)
        .map(|i| {
            let gi = gv[i] as f64;
            let m = mv[i] as f64 * b1 + gi * (1.0 - b1);
            let v = vv[i] as f64 * b2 + gi * gi * (1.0 - b2);
            let mh = m * alpha as f64 / (1.0 - b1);
            let vh = (v / (1.0 - b2)).sqrt() + eps as f64;
            wv[i] as f64 * (1.0 - alpha as f64 * wd as f64) - mh / vh
        })
        .collect();
    assert_close64(&get(&w), &want, 1e-5);
}

#[test]
fn losses_and_adamw_reject_bad_inputs() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 4, 3).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 4, 2).unwrap();
    let m = err_msg(ctx.cross_entropy_loss(&a, &b));
    assert!(m.starts_with("crossEntropyLoss: logits a [4,3,1,1] and labels b [4,2,1,1]"), "{m}");
    let at = ctx.transpose(&ctx.new_tensor_2d(Type::F32, 3, 4).unwrap()).unwrap();
    let m = err_msg(ctx.cross_entropy_loss(&at, &a));
    assert!(m.starts_with("crossEntropyLoss: a must have packed elements"), "{m}");
    let c = ctx.new_tensor_1d(Type::F32, 1).unwrap();
    let m = err_msg(ctx.cross_entropy_loss_back(&at, &a, &c));
    assert!(m.starts_with("crossEntropyLossBack: a must be contiguous"), "{m}");
    let m = err_msg(ctx.opt_step_adamw(&a, &a, 1e-3, 0.9, 0.999, 1e-8, 0.0));
    assert!(m.starts_with("optStepAdamw: a must be a parameter"), "{m}");
    a.set_flags(flags::PARAM);
    let m = err_msg(ctx.opt_step_adamw(&a, &a, 1e-3, 1.5, 0.999, 1e-8, 0.0));
    assert!(m.starts_with("optStepAdamw: beta1=1.5 must be in [0, 1]"), "{m}");
}
