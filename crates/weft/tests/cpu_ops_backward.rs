//! CPU kernels of the backward ops (SOFT_MAX_BACK, SILU_BACK, RMS_NORM_BACK, GET_ROWS_BACK,
//! POOL_2D_BACK, IM2COL_BACK) against values worked out by hand and finite differences of
//! the forward op.

// The reference loops index tensors the way the math is written.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use weft::op::{Im2colParams, PoolOp, RopeParams, ROPE_TYPE_NEOX};
use weft::tensor::flags;
use weft::Type;

// ---------------------------------------------------------------------------------------
// SOFT_MAX_BACK, SILU_BACK, RMS_NORM_BACK, GET_ROWS_BACK

#[test]
fn row_gradients_by_hand() {
    let ctx = host_ctx();
    // softmax_back: y = [0.25, 0.75], dy = [1, 0]: dot(y, dy) = 0.25, so
    // dx = y * (dy - 0.25) = [0.1875, -0.1875].
    let dy = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    let y = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    set(&dy, &[1., 0.]);
    set(&y, &[0.25, 0.75]);
    let dx = ctx.soft_max_back(&dy, &y, false).unwrap();
    compute(&ctx, &dx, 1);
    assert_eq!(get(&dx), vec![0.1875, -0.1875]);
    // silu_back at x = 0: sigmoid = 1/2, so dx = dy * 1/2 * (1 + 0) = dy / 2; at x = ln 3:
    // s = 3/4, dx = dy * 3/4 * (1 + ln3/4) = 2 * 0.75 * 1.2746531 = 1.9119796.
    let x = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    set(&x, &[0., 3f32.ln()]);
    let g = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    set(&g, &[3., 2.]);
    let sb = ctx.silu_back(&x, &g).unwrap();
    compute(&ctx, &sb, 1);
    assert_close(&get(&sb), &[1.5, 1.9119796], 1e-6);
    // rms_norm_back: x = [3, 4], eps 0: mean(x^2) = 12.5, rms = 3.5355339; dz = [1, 0]:
    // dx = (dz - x * sum(x*dz) / sum(x^2)) / rms = ([1, 0] - [3, 4] * 3/25) / rms
    //    = [0.64, -0.48] / 3.5355339 = [0.1810193, -0.1357645].
    let xr = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    set(&xr, &[3., 4.]);
    let rb = ctx.rms_norm_back(&xr, &dy, 0.0).unwrap();
    compute(&ctx, &rb, 1);
    assert_close(&get(&rb), &[0.1810193, -0.1357645], 1e-6);
}

#[test]
fn row_gradients_match_finite_differences() {
    let ctx = host_ctx();
    let ne = [7usize, 3, 2, 2];
    let n: usize = ne.iter().product();
    let x = new_t(&ctx, Type::F32, ne);
    let xv: Vec<f32> = rand_vec(n, 370).iter().map(|v| v * 2.0).collect();
    let gv = rand_vec(n, 371);
    set(&x, &xv);
    let gt = new_t(&ctx, Type::F32, ne);
    set(&gt, &gv);

    // softmax: soft_max_back(dy, y) with y = softmax(x).
    let y = ctx.soft_max(&x).unwrap();
    let dx = ctx.soft_max_back(&gt, &y, false).unwrap();
    compute(&ctx, &dx, 3);
    assert_close64(&get(&dx), &numeric_grad(&ctx, &x, &y, &xv, &gv, 1e-2), 2e-3);

    // silu
    let s = ctx.silu(&x).unwrap();
    let sb = ctx.silu_back(&x, &gt).unwrap();
    compute(&ctx, &sb, 3);
    assert_close64(&get(&sb), &numeric_grad(&ctx, &x, &s, &xv, &gv, 1e-2), 2e-3);

    // rms_norm
    let eps = 1e-3;
    let r = ctx.rms_norm(&x, eps, false).unwrap();
    let rb = ctx.rms_norm_back(&x, &gt, eps).unwrap();
    compute(&ctx, &rb, 3);
    assert_close64(&get(&rb), &numeric_grad(&ctx, &x, &r, &xv, &gv, 1e-2), 2e-3);

    // In place, soft_max_back overwrites dy with dx.
    let gt2 = new_t(&ctx, Type::F32, ne);
    set(&gt2, &gv);
    let ip = ctx.soft_max_back(&gt2, &y, true).unwrap();
    compute(&ctx, &ip, 2);
    assert_eq!(get(&gt2), get(&dx));
}

#[test]
fn get_rows_back_scatters_adds_and_checks_indices() {
    let ctx = host_ctx();
    // Rows of a go to rows [2, 0, 2] of a 4-row result: row 2 gets the sum of a's rows 0
    // and 2, row 0 gets row 1, rows 1 and 3 stay zero.
    let a = ctx.new_tensor_2d(Type::F16, 2, 3).unwrap();
    set(&a, &[1., 2., 3., 4., 5., 6.]);
    let b = ctx.new_tensor_1d(Type::I32, 3).unwrap();
    set_i32(&b, &[2, 0, 2]);
    let like = ctx.new_tensor_2d(Type::F32, 2, 4).unwrap();
    let out = ctx.get_rows_back(&a, &b, &like).unwrap();
    assert_eq!(out.ne(), [2, 4, 1, 1]);
    compute(&ctx, &out, 2);
    assert_eq!(get(&out), vec![3., 4., 0., 0., 6., 8., 0., 0.]);
    set_i32(&b, &[2, 4, 0]);
    let e = try_compute(&ctx, &out, 2).unwrap_err();
    assert!(e.message.contains("getRowsBack: row index 4 at b[1] is outside 0..4"), "{}", e.message);

    // Against finite differences of get_rows on a bigger f32 case.
    let src = ctx.new_tensor_2d(Type::F32, 5, 9).unwrap();
    let sv = rand_vec(45, 380);
    set(&src, &sv);
    let rows = ctx.new_tensor_1d(Type::I32, 6).unwrap();
    set_i32(&rows, &[8, 1, 1, 4, 8, 8]);
    let fwd = ctx.get_rows(&src, &rows).unwrap();
    let gv = rand_vec(30, 381);
    let gt = ctx.new_tensor_2d(Type::F32, 5, 6).unwrap();
    set(&gt, &gv);
    let back = ctx.get_rows_back(&gt, &rows, &src).unwrap();
    compute(&ctx, &back, 3);
    assert_close64(&get(&back), &numeric_grad(&ctx, &src, &fwd, &sv, &gv, 0.5), 1e-5);
}

#[test]
fn row_gradients_reject_bad_shapes() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 4, 3).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 4, 2).unwrap();
    assert!(err_msg(ctx.soft_max_back(&a, &b, false)).starts_with("softMaxBack: a [4,3,1,1] and b [4,2,1,1]"));
    assert!(err_msg(ctx.silu_back(&a, &b)).starts_with("siluBack: a [4,3,1,1] and b [4,2,1,1]"));
    assert!(err_msg(ctx.rms_norm_back(&a, &b, 1e-5)).starts_with("rmsNormBack: a [4,3,1,1] and b [4,2,1,1]"));
    let at = ctx.transpose(&ctx.new_tensor_2d(Type::F32, 3, 4).unwrap()).unwrap();
    let m = err_msg(ctx.soft_max_back(&at, &a, false));
    assert!(m.starts_with("softMaxBack: a must be contiguous"), "{m}");
    let m = err_msg(ctx.rms_norm_back(&at, &a, 1e-5));
    assert!(m.starts_with("rmsNormBack: a must have packed elements"), "{m}");
    let idx3 = ctx.new_tensor_1d(Type::I32, 4).unwrap();
    let m = err_msg(ctx.get_rows_back(&a, &idx3, &b));
    assert!(m.starts_with("getRowsBack: a.ne[1]=3 must be at least b.ne[0]=4"), "{m}");
}

// ---------------------------------------------------------------------------------------
// POOL_2D_BACK, IM2COL_BACK

#[test]
fn pool_2d_back_by_hand() {
    let ctx = host_ctx();
    // 4x4 input, 2x2 windows, stride 2. Window maxima: 5 at (1,0), 8 at (2,1), 9 at (0,3);
    // the last window is all ones, so its first element (2,2) takes the gradient.
    let x = ctx.new_tensor_2d(Type::F32, 4, 4).unwrap();
    set(&x, &[1., 5., 2., 0., 3., 4., 8., 1., 0., 0., 1., 1., 9., 2., 1., 1.]);
    let g = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    set(&g, &[10., 20., 30., 40.]);
    let mx = ctx.pool_2d_back(&g, &x, PoolOp::Max, 2, 2, 2, 2, 0.0, 0.0).unwrap();
    compute(&ctx, &mx, 1);
    let mut want = vec![0f32; 16];
    (want[1], want[6], want[12], want[10]) = (10., 20., 30., 40.);
    assert_eq!(get(&mx), want);
    // Average pooling spreads each gradient over its window: / 4.
    let av = ctx.pool_2d_back(&g, &x, PoolOp::Avg, 2, 2, 2, 2, 0.0, 0.0).unwrap();
    compute(&ctx, &av, 1);
    let want: Vec<f32> = (0..16).map(|i| [2.5, 5., 7.5, 10.][(i / 8) * 2 + (i % 4) / 2]).collect();
    assert_eq!(get(&av), want);
}

/// pool_2d from its definition (average counts padded positions, as ggml divides by k0*k1).
#[allow(clippy::too_many_arguments)]
fn pool_reference(
    x: &[f32],
    ne: [usize; 4],
    op: PoolOp,
    k: [i64; 2],
    s: [i64; 2],
    p: [i64; 2],
    out_wh: [usize; 2],
) -> Vec<f64> {
    let (ow, oh) = (out_wh[0], out_wh[1]);
    let mut out = vec![0f64; ow * oh * ne[2] * ne[3]];
    for pl in 0..ne[2] * ne[3] {
        for oy in 0..oh {
            for ox in 0..ow {
                let mut acc = if op == PoolOp::Max { f64::MIN } else { 0.0 };
                for ky in 0..k[1] {
                    for kx in 0..k[0] {
                        let (ix, iy) = (ox as i64 * s[0] - p[0] + kx, oy as i64 * s[1] - p[1] + ky);
                        if ix < 0 || iy < 0 || ix >= ne[0] as i64 || iy >= ne[1] as i64 {
                            continue;
                        }
                        let v = x[(pl * ne[1] + iy as usize) * ne[0] + ix as usize] as f64;
                        acc = if op == PoolOp::Max { acc.max(v) } else { acc + v };
                    }
                }
                out[(pl * oh + oy) * ow + ox] = if op == PoolOp::Max { acc } else { acc / (k[0] * k[1]) as f64 };
            }
        }
    }
    out
}

#[test]
fn pool_2d_back_matches_finite_differences() {
    let ne = [9usize, 7, 3, 2];
    let n: usize = ne.iter().product();
    // Distinct inputs 2/n apart (a scrambled ramp), so a step of +-h never changes which
    // element is a window's maximum.
    let xv: Vec<f32> = (0..n).map(|i| ((i * 211) % n) as f32 / n as f32 * 2.0 - 1.0).collect();
    for (op, k, s, p) in [
        (PoolOp::Max, [3, 3], [2, 2], [1, 1]),
        (PoolOp::Avg, [3, 2], [1, 2], [1, 0]),
        (PoolOp::Max, [2, 3], [1, 1], [0, 1]),
    ] {
        let ctx = host_ctx();
        let x = new_t(&ctx, Type::F32, ne);
        set(&x, &xv);
        // pool_2d's output size: (in + 2p - k) / s + 1.
        let ow = (ne[0] as i64 + 2 * p[0] - k[0]) / s[0] + 1;
        let oh = (ne[1] as i64 + 2 * p[1] - k[1]) / s[1] + 1;
        let g = new_t(&ctx, Type::F32, [ow as usize, oh as usize, ne[2], ne[3]]);
        let gv = rand_vec(g.nelements() as usize, 391);
        set(&g, &gv);
        let (k32, s32) = (k.map(|v| v as i32), s.map(|v| v as i32));
        let back = ctx.pool_2d_back(&g, &x, op, k32[0], k32[1], s32[0], s32[1], p[0] as f32, p[1] as f32).unwrap();
        assert!(supported(&back));
        compute(&ctx, &back, 3);
        // d/dx_i sum(pool(x) * g) by central differences of the reference forward.
        let f = |xs: &[f32]| -> f64 {
            let y = pool_reference(xs, ne, op, k, s, p, [ow as usize, oh as usize]);
            y.iter().zip(&gv).map(|(a, &b)| a * b as f64).sum()
        };
        let h = 1e-3;
        let numeric: Vec<f64> = (0..n)
            .map(|i| {
                let mut xp = xv.clone();
                xp[i] += h;
                let fp = f(&xp);
                xp[i] -= 2.0 * h;
                (fp - f(&xp)) / (2.0 * h as f64)
            })
            .collect();
        assert_close64(&get(&back), &numeric, 1e-3);
        // And against finite differences of the CPU's own POOL_2D kernel.
        let fwd = ctx.pool_2d(&x, op, k32[0], k32[1], s32[0], s32[1], p[0] as f32, p[1] as f32).unwrap();
        assert_eq!(fwd.ne(), g.ne());
        assert_close64(&get(&back), &numeric_grad(&ctx, &x, &fwd, &xv, &gv, 1e-3), 2e-3);
    }
}

#[test]
fn im2col_back_by_hand_1d() {
    // Input of 4, kernel 2, stride 1: columns (ox, kx) read x[ox + kx]. Gradients
    // g(kx, ox) = [[1, 2], [3, 4], [5, 6]] fold back to
    // [g(0,0), g(1,0)+g(0,1), g(1,1)+g(0,2), g(1,2)] = [1, 5, 9, 6].
    let ctx = host_ctx();
    let kernel = ctx.new_tensor_2d(Type::F16, 2, 1).unwrap();
    let g = ctx.new_tensor_3d(Type::F32, 2, 3, 1).unwrap();
    set(&g, &[1., 2., 3., 4., 5., 6.]);
    let p = Im2colParams { s0: 1, s1: 0, p0: 0, p1: 0, d0: 1, d1: 0, is_2d: false };
    let out = ctx.im2col_back(&kernel, &g, [4, 1, 1, 1], p).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1., 5., 9., 6.]);
}

/// im2col from its definition: column (ic, ky, kx) of output (ox, oy, n) reads
/// x[ox*s0 + kx*d0 - p0, oy*s1 + ky*d1 - p1, ic, n], zero outside.
fn im2col_reference(
    x: &[f32],
    ne: [usize; 4],
    kw: usize,
    kh: usize,
    p: &Im2colParams,
    ow: usize,
    oh: usize,
) -> Vec<f64> {
    let (iw, ih, ic, n) = if p.is_2d { (ne[0], ne[1], ne[2], ne[3]) } else { (ne[0], 1, ne[1], ne[2]) };
    let cols = ic * kh * kw;
    let mut out = vec![0f64; cols * ow * oh * n];
    for img in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for c in 0..ic {
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let ix = (ox * p.s0 as usize + kx * p.d0 as usize) as i64 - p.p0 as i64;
                            let iy = if p.is_2d {
                                (oy * p.s1 as usize + ky * p.d1 as usize) as i64 - p.p1 as i64
                            } else {
                                0
                            };
                            if ix < 0 || iy < 0 || ix >= iw as i64 || iy >= ih as i64 {
                                continue;
                            }
                            let xi = ((img * ic + c) * ih + iy as usize) * iw + ix as usize;
                            out[((img * oh + oy) * ow + ox) * cols + (c * kh + ky) * kw + kx] = x[xi] as f64;
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn im2col_back_is_the_adjoint_of_im2col() {
    // im2col is linear, so its gradient is its transpose: sum(im2col(x) * g) must equal
    // sum(x * im2col_back(g)) for every x, i.e. im2col_back(g)_i = sum of g over the
    // columns that copied x_i (which is what finite differences measure).
    for (p, ne, kw, kh) in [
        (Im2colParams { s0: 2, s1: 3, p0: 1, p1: 2, d0: 2, d1: 1, is_2d: true }, [9usize, 8, 3, 2], 3usize, 2usize),
        (Im2colParams { s0: 1, s1: 1, p0: 0, p1: 0, d0: 1, d1: 1, is_2d: true }, [5, 4, 2, 1], 3, 3),
        (Im2colParams { s0: 3, s1: 0, p0: 3, p1: 0, d0: 3, d1: 0, is_2d: false }, [20, 2, 2, 1], 3, 1),
    ] {
        let ctx = host_ctx();
        let out_size = |ins: usize, k: usize, s: i32, pd: i32, d: i32| {
            (ins as i64 + 2 * pd as i64 - d as i64 * (k as i64 - 1) - 1) / s as i64 + 1
        };
        let ow = out_size(ne[0], kw, p.s0, p.p0, p.d0) as usize;
        let oh = if p.is_2d { out_size(ne[1], kh, p.s1, p.p1, p.d1) as usize } else { 1 };
        let (ic, n) = if p.is_2d { (ne[2], ne[3]) } else { (ne[1], ne[2]) };
        let kernel =
            if p.is_2d { new_t(&ctx, Type::F32, [kw, kh, ic, 4]) } else { new_t(&ctx, Type::F32, [kw, ic, 4, 1]) };
        let g_ne = if p.is_2d { [ic * kh * kw, ow, oh, n] } else { [ic * kw, ow, n, 1] };
        let g = new_t(&ctx, Type::F32, g_ne);
        let gv = rand_vec(g.nelements() as usize, 400);
        set(&g, &gv);
        let back = ctx.im2col_back(&kernel, &g, ne.map(|v| v as i64), p).unwrap();
        assert!(supported(&back));
        compute(&ctx, &back, 3);
        let got = get(&back);
        let nx: usize = ne.iter().product();
        // Each unit vector e_i: sum(im2col(e_i) * g) is the gradient at i.
        let want: Vec<f64> = (0..nx)
            .map(|i| {
                let mut e = vec![0f32; nx];
                e[i] = 1.0;
                let cols = im2col_reference(&e, ne, kw, kh, &p, ow, oh);
                cols.iter().zip(&gv).map(|(c, &gg)| c * gg as f64).sum()
            })
            .collect();
        assert_close64(&got, &want, 1e-6);
        // The same identity with the CPU's own IM2COL kernel: sum(im2col(x) * g) equals
        // sum(x * im2col_back(g)) for a random x.
        let x = new_t(&ctx, Type::F32, ne);
        let xv = rand_vec(nx, 401);
        set(&x, &xv);
        let cols = ctx.im2col(&kernel, &x, p, Type::F32).unwrap();
        assert_eq!(cols.ne(), g.ne());
        compute(&ctx, &cols, 2);
        assert_close64(&[dot64(&get(&cols), &gv) as f32], &[dot64(&xv, &got)], 1e-5);
    }
}

#[test]
fn window_gradients_reject_bad_shapes() {
    let ctx = host_ctx();
    let x = ctx.new_tensor_4d(Type::F32, 6, 6, 3, 1).unwrap();
    let g = ctx.new_tensor_4d(Type::F32, 3, 3, 2, 1).unwrap();
    let m = err_msg(ctx.pool_2d_back(&g, &x, PoolOp::Max, 2, 2, 2, 2, 0.0, 0.0));
    assert!(m.starts_with("pool2dBack: a [3,3,2,1] and af [6,6,3,1] must have the same channels"), "{m}");
    let kernel = ctx.new_tensor_4d(Type::F32, 3, 3, 2, 4).unwrap();
    let p = Im2colParams { s0: 1, s1: 1, p0: 0, p1: 0, d0: 1, d1: 1, is_2d: true };
    let cols = ctx.new_tensor_4d(Type::F32, 17, 4, 4, 1).unwrap();
    let m = err_msg(ctx.im2col_back(&kernel, &cols, [6, 6, 2, 1], p));
    assert!(m.starts_with("im2colBack: b.ne[0]=17 must be channels*kernel = 2*3*3"), "{m}");
    let cols = ctx.new_tensor_4d(Type::F32, 18, 4, 4, 2).unwrap();
    let m = err_msg(ctx.im2col_back(&kernel, &cols, [6, 6, 2, 1], p));
    assert!(m.starts_with("im2colBack: b [18,4,4,2] must hold 1 images"), "{m}");
    let cols = ctx.new_tensor_4d(Type::F32, 18, 4, 4, 1).unwrap();
    let m = err_msg(ctx.im2col_back(&kernel, &cols, [6, 6, 2, 1], Im2colParams { s0: 0, ..p }));
    assert!(m.starts_with("im2colBack: strides s0=0 s1=1 must be positive"), "{m}");
    let p1 = Im2colParams { s0: 1, s1: 0, p0: 0, p1: 0, d0: 1, d1: 0, is_2d: false };
    let k1 = ctx.new_tensor_3d(Type::F32, 3, 2, 4).unwrap();
    let cols1 = ctx.new_tensor_3d(Type::F32, 6, 4, 2).unwrap();
    let m = err_msg(ctx.im2col_back(&k1, &cols1, [6, 2, 2, 3], p1));
    assert!(m.starts_with("im2colBack: ne[3]=3 must be 1 for 1-D"), "{m}");
    assert!(ctx.im2col_back(&k1, &cols1, [6, 2, 2, 1], p1).is_ok());
}

// ---------------------------------------------------------------------------------------
// Slices of ggml's own CPU outputs (shared/ggml-reference/eval, test-backend-ops' eval
// cases), which these kernels reproduce bit for bit: the same f32 steps, with the fused
// multiply-adds ggml's build makes of its `a*b + c` expressions. Rows, channels and
// elements of these ops are computed independently of each other, so a slice of a case is
// itself a complete case.

fn f32s(bits: &[u32]) -> Vec<f32> {
    bits.iter().map(|&b| f32::from_bits(b)).collect()
}

fn f16s(bits: &[u16]) -> Vec<f32> {
    bits.iter().map(|&b| weft::types::f16_to_f32(b)).collect()
}

fn assert_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{what}: element {i}: got {g}, ggml {w}");
    }
}

#[test]
fn rope_reproduces_ggml_bit_for_bit_with_yarn() {
    let yarn = |n_dims, mode| RopeParams {
        n_dims,
        mode,
        n_ctx_orig: 0,
        freq_base: 10000.0,
        freq_scale: 1.4245,
        ext_factor: 0.7465,
        attn_factor: 1.4245,
        beta_fast: 1.0,
        beta_slow: 1.0,
    };
    let ctx = host_ctx();
    for (ty, x, ff, pos, want, n_dims, mode) in [
        (Type::F32, f32s(&ROPE_F32_X), f32s(&ROPE_F32_FF), ROPE_F32_POS, f32s(&ROPE_F32_OUT), 128, 0),
        (Type::F16, f16s(&ROPE_F16_X), f32s(&ROPE_F16_FF), ROPE_F16_POS, f16s(&ROPE_F16_OUT), 64, ROPE_TYPE_NEOX),
    ] {
        let a = ctx.new_tensor_3d(ty, n_dims as i64, 1, 2).unwrap();
        set(&a, &x);
        let p = ctx.new_tensor_1d(Type::I32, 2).unwrap();
        set_i32(&p, &pos);
        let f = ctx.new_tensor_1d(Type::F32, ff.len() as i64).unwrap();
        set(&f, &ff);
        let out = ctx.rope_ext(&a, &p, Some(&f), yarn(n_dims, mode), false).unwrap();
        compute(&ctx, &out, 2);
        assert_bits(&get(&out), &want, &format!("rope {ty}"));
    }
}

#[test]
fn adamw_out_prod_and_ssm_conv_reproduce_ggml_bit_for_bit() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_1d(Type::F32, 16).unwrap();
    a.set_flags(flags::PARAM);
    let g = ctx.new_tensor_1d(Type::F32, 16).unwrap();
    set(&a, &f32s(&ADAMW_A));
    set(&g, &f32s(&ADAMW_G));
    // test-backend-ops passes (alpha, beta1, beta2, eps) = (1, 1e-3, 0.9, 0.999).
    let step = ctx.opt_step_adamw(&a, &g, 1.0, 1e-3, 0.9, 0.999, 1e-2).unwrap();
    set(step.src(2).unwrap(), &f32s(&ADAMW_M));
    set(step.src(3).unwrap(), &f32s(&ADAMW_V));
    compute(&ctx, &step, 2);
    assert_bits(&get(&a), &f32s(&ADAMW_OUT), "adamw");

    let pa = ctx.new_tensor_2d(Type::F32, 8, 16).unwrap();
    set(&pa, &f32s(&OUT_PROD_A));
    let bt = ctx.new_tensor_2d(Type::F32, 16, 2).unwrap();
    set(&bt, &f32s(&OUT_PROD_BT));
    let op = ctx.out_prod(&pa, &ctx.transpose(&bt).unwrap()).unwrap();
    compute(&ctx, &op, 2);
    assert_bits(&get(&op), &f32s(&OUT_PROD_OUT), "outProd");

    let sx = ctx.new_tensor_3d(Type::F32, 4, 4, 4).unwrap();
    set(&sx, &f32s(&SSM_CONV_SX));
    let c = ctx.new_tensor_2d(Type::F32, 4, 4).unwrap();
    set(&c, &f32s(&SSM_CONV_C));
    let conv = ctx.ssm_conv(&sx, &c).unwrap();
    compute(&ctx, &conv, 2);
    assert_bits(&get(&conv), &f32s(&SSM_CONV_OUT), "ssmConv");
}

// ROPE(type=f32,ne_a=[128,32,2,1],n_dims=128,mode=0,n_ctx=512,fs=1.424500,ef=0.746500,af=1.424500,ff=1,v=0): rows i1=0; positions [318, 239]
const ROPE_F32_POS: [i32; 2] = [318, 239];
const ROPE_F32_X: [u32; 256] = [
    0x3eee8580, 0xbe81cc86, 0xbf4d51f8, 0x3e7e03d8, 0xbf548cca, 0xbecdfb90, 0x3ec12264, 0xbe0f1fc4, 0x3f645f2c,
    0xbf5b8e24, 0xbea17d46, 0x3f6c3ef8, 0x3dcfb1a0, 0x3ee525e0, 0x3d4ce620, 0x3f417d4a, 0xbf77947f, 0xbe58c548,
    0x3dff83d0, 0x3f64a1be, 0x3e5b30b0, 0xbed2ef2e, 0xbe2968d0, 0xbf07fe28, 0xbe7c52b8, 0x3f1957f4, 0xbf2278be,
    0xbf250e12, 0xbe7a51e8, 0xbf05c5d0, 0xbefb87c0, 0xbf46a0b6, 0xbec1ddba, 0x3df0ba70, 0xbee7dc50, 0x3f6773fa,
    0xbf109e5d, 0xbf0cdf22, 0xbf0d55e1, 0x3f7ee0a2, 0xbf324f32, 0xbeda7960, 0x3ea98360, 0x3ef02774, 0xbf28d680,
    0xbf1a4344, 0x3e938ca8, 0xbf044b92, 0x3f02c4e2, 0xbf34238a, 0xbf091a19, 0x3f6fad3e, 0xbf296cc0, 0x3f5d5c42,
    0x3f540688, 0xbcee9f00, 0x3edf484c, 0xbefc80be, 0xbf341cb6, 0xbf490e53, 0x3e529580, 0x3eaafd88, 0x3f7586f4,
    0xbf10c75a, 0x3f701876, 0x3f55dfaa, 0xbf31269b, 0xbebb2452, 0x3f5921dc, 0xbf423ecd, 0xbf2910ea, 0x3ed4c6f0,
    0x3f284156, 0x3eb2edf4, 0xbedbb5c6, 0xbe759670, 0xbf59d604, 0x3f0e7608, 0x3f67479e, 0x3d6e0480, 0x3f267088,
    0xbf5a1dd2, 0x3e106d40, 0x3ef9d2b4, 0x3f3c27f6, 0x3f63c5ea, 0xbe258728, 0xbf530b1c, 0x3f01881a, 0x3d662b60,
    0x3ee4c3a4, 0xbf0bb95c, 0x3f498b0e, 0xbe5eb674, 0x3f18c750, 0x3e8a9da8, 0x3e6863c8, 0x3e6defe8, 0xbf37ddb4,
    0x3f43bf36, 0xbf4167f0, 0x3ee255f0, 0xbe87f4b4, 0xbf6910b0, 0x3f3957b0, 0x3e308d18, 0xbe80ab04, 0x3ea44004,
    0xbe98c318, 0xbf1823b6, 0xbea0e650, 0x3e8f57d8, 0xbf17e536, 0xbe924cf4, 0xbefa0dd2, 0xbea14928, 0xbec9f6f6,
    0x3e8b8eec, 0xbf5602f7, 0xbeb941d4, 0x3f3781fc, 0xbe92c7ae, 0xbe66a61c, 0x3eae5d48, 0xbe91d88e, 0x3edfcce0,
    0x3f01c5da, 0xbddcd160, 0x3ed37fdc, 0x3f378436, 0x3e9189bc, 0xbf0b293c, 0xbe809c08, 0x3e781540, 0xbe458d08,
    0xbed742e2, 0xbe4ff128, 0xbf7854a2, 0x3f03b08a, 0xbe892dc4, 0x3f722bd2, 0xbf65548f, 0xbd93da78, 0x3f2276ae,
    0x3dee4c40, 0xbecba940, 0x3f15b738, 0xbf50510b, 0xbef15850, 0xbedd1ce2, 0xbe935592, 0xbed6db4e, 0xbf6bf1b9,
    0xbe95200c, 0x3f4a804c, 0x3f2cd67e, 0xbf4a3cf4, 0x3f18553e, 0xbf7b6c4a, 0xbf028afc, 0xbee5aaa8, 0x3f6c9700,
    0x3f2da7f2, 0x3f6ccc62, 0x3ebcc60c, 0x3f375e30, 0x3f08dba4, 0xbf74361b, 0x3f73cb0c, 0xbed0bab0, 0x3e5ee690,
    0x3ef95224, 0x3e7e83f0, 0xbf1e2e28, 0xbf684a0e, 0xbeab7678, 0xbeee9cb8, 0xbf398e42, 0xbe2a502c, 0x3f22a762,
    0x3f1af2f2, 0x3f43bb66, 0x3e8873e0, 0xbf487400, 0xbe5f09d4, 0xbf3f89cc, 0xbf6f7eb6, 0x3f1835d2, 0x3f7598de,
    0x3ce5cc80, 0xbf092c21, 0x3e9fc40c, 0x3eff8eb0, 0x3f78a5da, 0x3ea151e4, 0xbef8bd48, 0x3f56b9f4, 0xbf35e7f8,
    0xbf1054e4, 0x3e956aac, 0x3f47081e, 0x3f66031a, 0x3f55a0f0, 0xbf4742b6, 0x3d9aa630, 0xbf5d5ce6, 0xbf7de860,
    0x3eb9f608, 0x3ec7ce60, 0x3f5eed88, 0xbe86897e, 0xbeacc710, 0x3ebf54d8, 0x3f2d90f4, 0xbf789dd2, 0xbe826f3c,
    0x3eab5da8, 0xbf371cf8, 0x3e450490, 0xbea8e6f2, 0xbed204aa, 0xbdc0a828, 0x3f742500, 0x3f295a5e, 0x3ed80f08,
    0x3ec2c328, 0xbf329bbd, 0xbd6941d0, 0x3f62180e, 0xbecd4c84, 0x3f52ea14, 0xbf7a2ec9, 0x3f6a6fd6, 0xbf2b832d,
    0xbe443218, 0xbe345950, 0xbda72b30, 0x3dfac1b0, 0xbe1f7800, 0x3f204e3c, 0x3ee06914, 0x3f09195e, 0x3f606702,
    0x3f0a7ee6, 0x3f1134fc, 0xbf5273d5, 0xbf329993, 0x3eff04bc, 0xbf384f5c, 0xbec3f5d6, 0xbf204578, 0xbe42e6d0,
    0xbf6fc89e, 0xbeb841e2, 0xbeed5dd4, 0x3e2a6168,
];
const ROPE_F32_FF: [u32; 64] = [
    0x3f7224b2, 0x3f8a0552, 0x3f7998ad, 0x3f7d0f60, 0x3f7c8793, 0x3f7581dd, 0x3f6db59e, 0x3f7b64ae, 0x3f7543b1,
    0x3f7c0de4, 0x3f73fd51, 0x3f8ac17e, 0x3f8b9b70, 0x3f89cda6, 0x3f82b31e, 0x3f8a5f75, 0x3f8101f6, 0x3f692e26,
    0x3f841235, 0x3f7503aa, 0x3f76cf7d, 0x3f8b466d, 0x3f895f84, 0x3f6ee07b, 0x3f8385d9, 0x3f7720a8, 0x3f674ab0,
    0x3f85eaf0, 0x3f830c08, 0x3f8abf9b, 0x3f6c0f80, 0x3f6da0b7, 0x3f760fc0, 0x3f6a7846, 0x3f8be7f8, 0x3f6e36f4,
    0x3f738889, 0x3f6f5ec0, 0x3f8138db, 0x3f888db8, 0x3f6d3fab, 0x3f6f25ee, 0x3f84de1c, 0x3f70f289, 0x3f764cb9,
    0x3f73f5e8, 0x3f7bb756, 0x3f748ec0, 0x3f7b25c3, 0x3f82f067, 0x3f69dae7, 0x3f6f4bc8, 0x3f71e324, 0x3f8877ed,
    0x3f72d811, 0x3f8a09be, 0x3f856e79, 0x3f7c2645, 0x3f809cc9, 0x3f821f69, 0x3f6b788f, 0x3f825e7f, 0x3f89e2a6,
    0x3f7dd282,
];
const ROPE_F32_OUT: [u32; 256] = [
    0x3e91ab8b, 0x3f2bc3ca, 0xbf304c2c, 0x3f6ceb71, 0x3fa09227, 0x3e3b8373, 0xbe4010cc, 0x3f051d02, 0x3fd7860b,
    0xbe72f419, 0x3f9184bc, 0xbf35a10a, 0x3f1b67d9, 0xbe2eb652, 0x3f7db3c2, 0x3ea2e49e, 0xbf2986ab, 0x3f981a74,
    0xbe6c5b41, 0x3f9bd4a3, 0x3d6d042a, 0xbf22a48e, 0xbef8508a, 0x3f174c67, 0x3f500c82, 0x3eb9c431, 0x3f9373f2,
    0xbeef41ed, 0x3f2731c5, 0x3ee60927, 0xbf50551f, 0x3f76e413, 0xbedc02af, 0xbeab758c, 0x3f1b3b86, 0x3fa005a1,
    0x3f3467bd, 0xbf52bec8, 0x3e8adc39, 0x3fc533d5, 0x3e9841bc, 0xbf8a88dc, 0xbf122a2f, 0x3f0b5ea5, 0xbf95a1a2,
    0x3ebfcfcf, 0xbeef8105, 0xbf2a3e09, 0x3f8ae47c, 0x3f000a22, 0xbf888919, 0x3f83b53e, 0x3d0f9390, 0x3fbf7783,
    0xbf75a36d, 0x3f1cff38, 0x3f2b4a4e, 0x3f1bd96c, 0xbf4ac1ca, 0xbf9b4bbe, 0x3e1ab450, 0x3f046ef4, 0x3f1506a5,
    0xbfb51a47, 0x3f9305cd, 0xbfa4e2a4, 0xbd78cb78, 0x3f896d41, 0xbf9098b9, 0x3f8a68d3, 0x3f6b2516, 0xbf0d96c2,
    0xbf82e27f, 0xbcd05b70, 0x3f2688aa, 0xbe3a5977, 0xbeb65bf6, 0xbfaceb3c, 0xbd60414d, 0x3f9f131a, 0x3f98adbc,
    0x3f5d1cd0, 0xbf1aab30, 0x3eb2e1c4, 0xbf0912f3, 0x3fbf0f21, 0x3f52e66e, 0xbf4f0168, 0x3ed0f533, 0x3f1172a1,
    0x3f753b6a, 0xbe17103b, 0x3f873367, 0x3ec23d1f, 0x3f01a7d2, 0x3f3e9b6d, 0x3e0c39f4, 0x3ed97c8b, 0xbfa777b2,
    0x3f1ae9f0, 0xbf980c75, 0x3e413ecb, 0x3d24ea9e, 0xbfa6b83d, 0x3f65535b, 0x3efc9510, 0xbedb657a, 0x3eb88fb7,
    0xbe741480, 0xbf61d2a4, 0xbef8973f, 0x3ea0dfc2, 0xbf40fb7d, 0xbf0028dc, 0xbf1c850a, 0xbf038366, 0xbf1432e3,
    0x3ea10f13, 0xbf8c9b21, 0xbf199eb8, 0x3f820182, 0xbe9cce8f, 0xbeae7e12, 0x3ee42fea, 0xbed953d4, 0x3f13e76b,
    0x3f34129a, 0xbde3c5f6, 0xbe93f299, 0xbf8cbdca, 0xbeecafea, 0x3f3470a9, 0x3ee7c750, 0x3e21ffd8, 0xbddd360d,
    0x3f205af3, 0xbf88bde6, 0xbf583659, 0xbf3c9c1f, 0x3e9b9c2f, 0xbfe468a6, 0x3e132aee, 0xbf4344ad, 0x3ede46e4,
    0xbe77ba89, 0xbf03faf0, 0x3f9a4279, 0xbf2a842f, 0x3f360719, 0x3f040e9f, 0x3f1c3c17, 0xbeaeadd4, 0xbf7c8978,
    0x3f63ac32, 0x3f6e682c, 0xbf8abd00, 0xbfab966e, 0x3e64c95a, 0xbf802264, 0x3f928248, 0xbee776cd, 0xbfab2ad5,
    0xbefcecd3, 0x3fbf9630, 0x3f579887, 0x3f37eb5a, 0xbfc01ba6, 0xbd95d1f0, 0x3f95f5f2, 0x3f4ef746, 0xbf11f841,
    0xbeebc832, 0x3f59cb26, 0xbeacab5d, 0xbf170040, 0xbf9871d4, 0xbf0c67dc, 0x3f865325, 0x3ed91581, 0xbf4bf2ce,
    0xbf9d23b4, 0xbf0978b5, 0x3f4170f7, 0xbf5957c5, 0xbf268b03, 0xbf59b998, 0x3f26c273, 0x3fb03c45, 0x3ea0c165,
    0xbfa3f4a9, 0x3f380a6e, 0x3eea2463, 0xbde3e498, 0xbfbf8ab4, 0xbef76b4e, 0x3f21d1f7, 0xbdc02963, 0x3fc0f9dd,
    0x3e8faacd, 0xbf537366, 0xbfc951e8, 0x3ee03d55, 0x3f513de1, 0x3fab494d, 0x3f98606c, 0xbd9650d8, 0xbf7f0305,
    0xbf871c64, 0xbf62716c, 0x3f77cbfd, 0x3e46a734, 0xbf0e0454, 0xbe9362ff, 0x3f831513, 0xbf3f047b, 0xbf9488c7,
    0x3f73464d, 0xbf06203a, 0x3eecba22, 0xbe7e25cf, 0xbee4e1a6, 0xbebbd10c, 0x3f5660a7, 0x3fadbd30, 0x3ebc2a83,
    0x3f305237, 0xbf659bf1, 0xbeb1ed82, 0x3fa8c3e7, 0xbe47802e, 0x3fb526a3, 0xbf8525c1, 0x3fb57ced, 0xbf2606c8,
    0xbe63f53e, 0xbe8f4a4d, 0xbe0b83e1, 0x3e18ff10, 0xbe9f8316, 0x3f548311, 0x3f05f000, 0x3f4b4777, 0x3f907df4,
    0x3f5a9920, 0x3f5e1888, 0xbf881e01, 0xbf806fdc, 0x3f1dee77, 0xbf73db34, 0xbf170026, 0xbf587df2, 0xbe9c6462,
    0xbfa1ee11, 0xbf0c5d1e, 0xbf254646, 0x3e501361,
];
// ROPE(type=f16,ne_a=[64,128,2,1],n_dims=64,mode=2,n_ctx=512,fs=1.424500,ef=0.746500,af=1.424500,ff=1,v=0): rows i1=5; positions [123, 470]
const ROPE_F16_POS: [i32; 2] = [123, 470];
const ROPE_F16_X: [u16; 128] = [
    0x3b52, 0xb811, 0xb759, 0xbbba, 0xbb95, 0xb932, 0xba9f, 0xb887, 0xab2e, 0xbb90, 0x37df, 0xbbca, 0x39ef, 0x3679,
    0x36bf, 0x39bf, 0xb1da, 0xb6b0, 0x3acf, 0xbbc9, 0xb927, 0x3bf7, 0xbac3, 0xba02, 0x3741, 0x329e, 0x37be, 0xa122,
    0xb832, 0xa1d3, 0x3a97, 0x398e, 0xb91b, 0xb862, 0xb9c7, 0x3a0b, 0x3377, 0xb96f, 0xb918, 0xb8b7, 0x3aac, 0x3976,
    0xbabf, 0x3a17, 0xb91e, 0xb63b, 0x361f, 0x3a40, 0x96ee, 0xb709, 0x2256, 0x29e8, 0xb9d5, 0xb8a1, 0xb19f, 0xb6ea,
    0x32af, 0x3840, 0x3b7a, 0xb8d0, 0x3bf8, 0x3949, 0x358a, 0x34f0, 0x355a, 0xb3c3, 0xb4f7, 0xb8a7, 0xb82b, 0x2ebc,
    0x3968, 0x32f6, 0x33b2, 0xb5bb, 0x36e3, 0x3115, 0x3108, 0xb816, 0xb695, 0x380b, 0xb8d7, 0x35b4, 0x3541, 0x3bee,
    0x3b64, 0x3284, 0xb604, 0xad0f, 0xaffa, 0xb9d3, 0x3665, 0xbb74, 0xbae6, 0xb9ec, 0xbb13, 0xb1a5, 0xb35d, 0xba61,
    0xb501, 0x384c, 0xb13c, 0xbbc4, 0x3684, 0xb7da, 0x39b7, 0xb06f, 0x321e, 0x393f, 0xb2c3, 0x3531, 0xb801, 0x3b67,
    0xb611, 0xbae2, 0x3392, 0xb35c, 0xb0b0, 0x38a1, 0x3ad8, 0xb08a, 0xbbfd, 0x2bac, 0xba0a, 0x3a9f, 0xaf2a, 0xbab3,
    0x3bb0, 0xbb65,
];
const ROPE_F16_FF: [u32; 32] = [
    0x3f8443ee, 0x3f87bb86, 0x3f6a280a, 0x3f6addc5, 0x3f6c2e1a, 0x3f7a0bab, 0x3f89fd48, 0x3f86b31d, 0x3f8c49e5,
    0x3f7536b7, 0x3f872ea0, 0x3f86097e, 0x3f8c5bde, 0x3f79e013, 0x3f8c9178, 0x3f88cc67, 0x3f8b95d6, 0x3f80618f,
    0x3f84f785, 0x3f78ff4e, 0x3f8719c6, 0x3f738161, 0x3f8cc586, 0x3f776ec3, 0x3f6f391b, 0x3f747d50, 0x3f68a3af,
    0x3f6c02f4, 0x3f691182, 0x3f8b1d0b, 0x3f861f5e, 0x3f6a932c,
];
const ROPE_F16_OUT: [u16; 128] = [
    0x3ca3, 0xb8e2, 0x364a, 0x3661, 0x3d53, 0xbc28, 0x3680, 0x38b8, 0x363a, 0xbd8b, 0xb880, 0xbec1, 0xb7cf, 0xb9cd,
    0xb9af, 0xbdc9, 0x21cf, 0x36f9, 0x3958, 0xbc0e, 0xb438, 0x3e4e, 0xbc31, 0xbae1, 0x3878, 0x31ce, 0x382d, 0x2ab7,
    0xba6c, 0xaa71, 0x3c78, 0x3b8b, 0xbc03, 0x3a9c, 0xbc6f, 0x3e8c, 0x315f, 0x3a21, 0x3d81, 0x3ba4, 0xbc53, 0xba6e,
    0x3cdf, 0xb1eb, 0xbd04, 0xb438, 0xb53f, 0x31f5, 0xb404, 0xb9af, 0x3bae, 0xbb00, 0xbd3e, 0xb088, 0xb874, 0xba97,
    0x365f, 0x3a19, 0x3d65, 0xba9a, 0x3d4a, 0x3b41, 0x3813, 0x372c, 0x37b1, 0x3c4a, 0x3655, 0xb983, 0x3965, 0xbaf9,
    0xb87e, 0xb4f9, 0x3b47, 0x36db, 0xa90e, 0xbb6a, 0x3528, 0x3aa7, 0xb8be, 0xbdcb, 0xbb2e, 0xbbec, 0xb3f6, 0xbcff,
    0xb5a4, 0xba8d, 0xbd1f, 0x2dc3, 0x3a2d, 0xbb41, 0x3b5d, 0xbe41, 0xbc78, 0xbab6, 0xbd6e, 0xaf88, 0x3487, 0x366e,
    0x3755, 0x3abc, 0x3545, 0xbc15, 0xbb6b, 0x395a, 0xb7ee, 0xb4ed, 0xb92b, 0xa4d9, 0xb147, 0x9ede, 0x3950, 0x8144,
    0xb658, 0xba7c, 0xb7f5, 0x3909, 0x3cf2, 0x3269, 0x2e16, 0xb288, 0xbc97, 0xb6e4, 0xb9d4, 0x3996, 0xb6c4, 0xbd25,
    0x3cb2, 0xbd27,
];
// OPT_STEP_ADAMW(type=f32,ne=[10,5,4,3],alpha=1.000000,beta1=0.001000,beta2=0.900000,eps=0.999000,wd=0.010000): elements 0..16 of a, grad, m, v and the new a
const ADAMW_A: [u32; 16] = [
    0x3ee7d16f, 0x3f336042, 0x3ee8f0c5, 0x3f0b8b81, 0x3ee74857, 0x3df9521c, 0x3d7b38b4, 0x3f547c25, 0x3e09f0ef,
    0x3d23bed0, 0x3f64439a, 0x3d90de7e, 0x3f5fe4d3, 0x3e1f394a, 0x3eb50c97, 0x3e1b1594,
];
const ADAMW_G: [u32; 16] = [
    0x3e6cadb9, 0x3f20565e, 0x3f063083, 0x3f5af509, 0x3d52b078, 0x3f03f865, 0x3e225e3b, 0x3f7617d3, 0x3f161f2a,
    0x3f57f36a, 0x3f2dc78f, 0x3d07faf6, 0x3f76d142, 0x3e11229c, 0x3dee7087, 0x3f43b2de,
];
const ADAMW_M: [u32; 16] = [
    0x3eff2617, 0x3f0ecb6f, 0x3f4df936, 0x3f246456, 0x3f375096, 0x3d3a62ad, 0x3f4a4440, 0x3e8dba79, 0x3ecd5810,
    0x3f284273, 0x3f229dcc, 0x3e169758, 0x3f2a84ad, 0x3f6c8e33, 0x3ed79999, 0x3ea50302,
];
const ADAMW_V: [u32; 16] = [
    0x3f0d483c, 0x3f014fa0, 0x3f12af62, 0x3e612ad8, 0x3f30ee39, 0x3f67e8bf, 0x3ec275dc, 0x3ec7c0f5, 0x3e1a244b,
    0x3f713229, 0x3da1fbb9, 0x3ea54599, 0x3e786dd1, 0x3ef8cc0f, 0x3d66bdee, 0x3f4bf759,
];
const ADAMW_OUT: [u32; 16] = [
    0x3ec0e46e, 0x3eff8698, 0x3e95e211, 0x3e5d451a, 0x3edd5384, 0xbc3ef325, 0x3ba07a1d, 0x3f0314c9, 0xbdf8dec4,
    0xbe2df266, 0x3f0e6e60, 0x3d6c533c, 0x3f044690, 0x3ddcddb3, 0x3e907761, 0xbd55bd58,
];
// OUT_PROD(type_a=f32,type_b=f32,m=256,n=16,k=16,bs=[1,1],trans_b=1): a[0..8, :], b (stored [k, n]) columns 0..2, out[0..8, 0..2]
const OUT_PROD_A: [u32; 128] = [
    0xbe8328f0, 0x3f059268, 0xbf3149b2, 0x3f22eb40, 0x3c3e4f80, 0xbf46b345, 0x3f5c9fac, 0x3eed8f98, 0xbf67224f,
    0xbefaafbc, 0x3f6c6910, 0x3f6581ce, 0xbea6118c, 0x3f1aff22, 0xbde07ec8, 0xbea9073c, 0x3f298e7c, 0xbe5b1664,
    0x3dc92730, 0x3f456830, 0x3e6d13c8, 0xbf54ad26, 0xbf337aee, 0x3f3481b8, 0x3eba6cdc, 0xbebeb04c, 0x3ed7b51c,
    0x3f59e304, 0x3f4702ea, 0xbedf7580, 0x3f327124, 0xbf5df0f3, 0x3f0416f4, 0xbb9f9800, 0x3e129e58, 0x3eecb834,
    0x3f18bafe, 0xbf635753, 0x3f05fa04, 0xbdf6d338, 0x3dbc9ad0, 0xbe533958, 0xbf565c34, 0x3f4098d4, 0x3ee2c27c,
    0xbeb1e12e, 0x3f64c21e, 0x3f041782, 0xbf778cec, 0xbe89951a, 0xbe9b9faa, 0xbf07951a, 0x3f32203a, 0x3ec3c72c,
    0x3f246488, 0x3f43e41e, 0xbed5fa38, 0xbd738f80, 0x3f1afa66, 0x3f2d3b42, 0xbf727e84, 0xbea0519c, 0xbf26f544,
    0x3f4feafc, 0xbf477bc5, 0xbf0ed3d6, 0xbf759eff, 0x3ecd48bc, 0x3f314a4e, 0xbef58b2c, 0xbe83cc24, 0xbecf0b04,
    0xbddbc470, 0x3ef074ac, 0xbf4233c4, 0x3e2e3758, 0xbf135e4c, 0x3f6c4422, 0xbf131a06, 0x3edd3c1c, 0xbe0ddc38,
    0xbeba3e24, 0x3eba304c, 0xbe0f3b84, 0xbf6325c0, 0xbf4353e2, 0x3e8fd9c0, 0x3d81ee00, 0xbe9ae2ec, 0xbea7d892,
    0x3e84e918, 0x3f71c536, 0x3f4a8642, 0x3e5109b8, 0x3f755cfe, 0x3f2c57e4, 0x3eb8f0c8, 0x3f6414ea, 0x3dc83b50,
    0xbf4a6645, 0xba73b800, 0x3ebf9618, 0xbf746afa, 0xbf1b420a, 0x3ccaccc0, 0x3d9389d0, 0x3f479556, 0xbf62dcc3,
    0xbd36c810, 0xbafac200, 0xbe1d8620, 0x3f0bb9f0, 0x3ea89390, 0xbe8fbadc, 0xbdd2ea80, 0xbf641d4a, 0xbe7b6ff0,
    0xbf5c8b5e, 0x3f3e5aa0, 0xbf500642, 0x3ed859ac, 0xbd499e20, 0x3f35454a, 0x3f5812aa, 0xbe9d14d0, 0xbec17da6,
    0x3edfefa8, 0x3f779594,
];
const OUT_PROD_BT: [u32; 32] = [
    0xbebd2076, 0xbe9e1c2c, 0xbe177a78, 0xbe6939b4, 0x3d519e00, 0x3def5dc0, 0x3ebd7e84, 0x3ebcde54, 0xbe2f646c,
    0xbf3a846c, 0x3f34473a, 0xbe9f6530, 0xbeac14e2, 0xbf478374, 0xbf071dfe, 0xbf41f5d6, 0x3d5748e0, 0xbf20dc84,
    0xbf6d7db8, 0x3e1cfb68, 0x3f0f4f84, 0x3f2d9318, 0xbed7783a, 0x3f74d3c2, 0xbf057ec6, 0xbe8b9376, 0x3e81c650,
    0x3b8b8e00, 0xbed787d2, 0x3f751596, 0x3eb832c8, 0x3f06f6fc,
];
const OUT_PROD_OUT: [u32; 16] = [
    0xbf356e32, 0xbf2442ef, 0xbeb31f0b, 0xbee7bccd, 0xbe98b28b, 0xbe9ff145, 0xbe073ccc, 0xbe8ce887, 0x3f774294,
    0x3cd8340e, 0x3fb57fdf, 0xbe1d9206, 0xbf963e8d, 0xbfe2f468, 0x3fff63e2, 0x3fa50720,
];
// SSM_CONV(type=f32,ne_a=[4,1536,4,1],ne_b=[4,1536,1,1]): channels 0..4
const SSM_CONV_SX: [u32; 64] = [
    0x3efdca04, 0x3f6ce712, 0xbf4997a6, 0x3f7cc7e4, 0xbeb170a6, 0xbf2d489a, 0xbef317ac, 0x3e516430, 0x3f4238fc,
    0xbf549928, 0x3ed99a48, 0xbf6fff8d, 0xbee5393e, 0xbf0872d8, 0xbe2f85c4, 0xbf5dbf3d, 0x3e1fd480, 0xbf3205e5,
    0x3ebe286c, 0x3e1eeb60, 0x3eb7b48c, 0x3eae4e90, 0xbe2fc58c, 0xbf74b7e8, 0xbeabb456, 0xbecc3ffa, 0xbf3e0532,
    0x3f3919b4, 0x3e8ce024, 0x3ecfbf44, 0xbee99cfa, 0xbf207ea0, 0xbf600424, 0x3f501202, 0x3e9d05b8, 0x3ee2a9b8,
    0x3ef4228c, 0x3c839b80, 0x3c305e80, 0x3f6c21b8, 0x3f199b4c, 0x3f227050, 0x3ef769a8, 0xbec6ab8a, 0x3ed83070,
    0x3f29c9c4, 0x3f7d3bb4, 0xbf25308d, 0xbf53616e, 0x3ebcebfc, 0xbed6940e, 0x3e5ba668, 0xbf5d738e, 0xbf4d6f90,
    0x3f2896b2, 0x3e76fe28, 0xbdae2650, 0x3f5537ec, 0x3e94bb44, 0x3e92b88c, 0x3e919e94, 0x3e049f58, 0x3f3e5122,
    0x3f40538c,
];
const SSM_CONV_C: [u32; 16] = [
    0x3ea4bf00, 0xbc80d6c0, 0xbea94d46, 0x3ef011a0, 0x3f0a810e, 0xbf61538b, 0x3f4c4e02, 0xbf6ac4dc, 0x3f5dd95a,
    0x3f68bd4a, 0xbde669e8, 0xbf66592f, 0xbf69104c, 0x3f52ef98, 0x3edf4afc, 0xbe187e3c,
];
const SSM_CONV_OUT: [u32; 16] = [
    0x3f5e4a40, 0xbe21f363, 0x3f32bda4, 0x3cb99144, 0x3c362720, 0x3f22568a, 0xbf9c35b4, 0xbcb28900, 0xbe40b3fb,
    0xbf17ed3f, 0x3fb2210b, 0x3f3087a8, 0xbd046dd6, 0x3f0aed0f, 0x3ec9354d, 0x3d76481a,
];
