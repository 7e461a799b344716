//! CPU kernels against values worked out independently: by hand for small cases, and by
//! plain reference loops written here for the rest.

mod common;
use common::*;
use weft::op::UnaryOp;
use weft::Type;

#[test]
fn add_by_hand_with_row_broadcast() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 4, 2).unwrap();
    let b = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    set(&a, &[1., 2., 3., 4., 5., 6., 7., 8.]);
    set(&b, &[10., 20.]);
    // b repeats along each row: [10, 20, 10, 20].
    let out = ctx.add(&a, &b).unwrap();
    compute(&ctx, &out, 2);
    assert_eq!(get(&out), vec![11., 22., 13., 24., 15., 26., 17., 28.]);
}

#[test]
fn binary_ops_broadcast_over_all_dims() {
    let ctx = host_ctx();
    let (na, nb) = ([6i64, 4, 3, 2], [3i64, 2, 1, 2]);
    let a = ctx.new_tensor(Type::F32, &na).unwrap();
    let b = ctx.new_tensor(Type::F32, &nb).unwrap();
    let (va, vb) = (rand_vec(144, 1), rand_vec(12, 2));
    set(&a, &va);
    set(&b, &vb.iter().map(|x| x + 2.0).collect::<Vec<_>>());
    let vb: Vec<f32> = vb.iter().map(|x| x + 2.0).collect();
    for (name, f) in
        [("sub", (|x: f32, y: f32| x - y) as fn(f32, f32) -> f32), ("mul", |x, y| x * y), ("div", |x, y| x / y)]
    {
        let out = match name {
            "sub" => ctx.sub(&a, &b),
            "mul" => ctx.mul(&a, &b),
            _ => ctx.div(&a, &b),
        }
        .unwrap();
        compute(&ctx, &out, 2);
        let mut want = vec![0f32; 144];
        for i3 in 0..2 {
            for i2 in 0..3 {
                for i1 in 0..4 {
                    for i0 in 0..6 {
                        let ia = ((i3 * 3 + i2) * 4 + i1) * 6 + i0;
                        // b is [3, 2, 1, 2]: dim 2 has one slice, so i2 drops out.
                        let ib = ((i3 % 2) * 2 + i1 % 2) * 3 + i0 % 3;
                        want[ia] = f(va[ia], vb[ib]);
                    }
                }
            }
        }
        assert_close(&get(&out), &want, 1e-6);
    }
}

#[test]
fn mul_mat_by_hand() {
    let ctx = host_ctx();
    // a: 2 rows of k=3; b: 2 rows of k=3. out[i0, i1] = a_row(i0) . b_row(i1)
    let a = ctx.new_tensor_2d(Type::F32, 3, 2).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 3, 2).unwrap();
    set(&a, &[1., 2., 3., 4., 5., 6.]);
    set(&b, &[1., 0., -1., 2., 1., 0.]);
    let out = ctx.mul_mat(&a, &b).unwrap();
    assert_eq!(out.ne(), [2, 2, 1, 1]);
    compute(&ctx, &out, 1);
    // [1,2,3].[1,0,-1] = -2; [4,5,6].[1,0,-1] = -2; [1,2,3].[2,1,0] = 4; [4,5,6].[2,1,0] = 13
    assert_eq!(get(&out), vec![-2., -2., 4., 13.]);
}

#[test]
fn mul_mat_broadcast_and_f16() {
    let ctx = host_ctx();
    let (ne_a, ne_b) = ([37usize, 5, 2, 1], [37usize, 7, 4, 3]);
    let va = rand_vec(37 * 5 * 2, 3);
    let vb = rand_vec(37 * 7 * 12, 4);
    for ty in [Type::F32, Type::F16, Type::BF16] {
        let a = ctx.new_tensor(ty, &ne_a.map(|x| x as i64)).unwrap();
        let b = ctx.new_tensor(Type::F32, &ne_b.map(|x| x as i64)).unwrap();
        set(&a, &va);
        set(&b, &vb);
        let out = ctx.mul_mat(&a, &b).unwrap();
        compute(&ctx, &out, 2);
        // The reference uses a's stored (rounded) values; b rounds to a's type as in ggml.
        let round =
            |v: &[f32]| weft::types::convert::to_f32(ty, &weft::types::convert::from_f32(ty, v).unwrap()).unwrap();
        let want = naive_mul_mat(&round(&va), ne_a, &round(&vb), ne_b);
        assert_close(&get(&out), &want, 1e-5);
    }
}

#[test]
fn mul_mat_permuted_b() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 8, 3).unwrap();
    let bt = ctx.new_tensor_2d(Type::F32, 5, 8).unwrap(); // b transposed in memory
    let (va, vbt) = (rand_vec(24, 5), rand_vec(40, 6));
    set(&a, &va);
    set(&bt, &vbt);
    let b = ctx.transpose(&bt).unwrap(); // [8, 5], non-contiguous
    let out = ctx.mul_mat(&a, &b).unwrap();
    compute(&ctx, &out, 2);
    let mut vb = vec![0f32; 40];
    for i in 0..5 {
        for k in 0..8 {
            vb[i * 8 + k] = vbt[k * 5 + i];
        }
    }
    assert_close(&get(&out), &naive_mul_mat(&va, [8, 3, 1, 1], &vb, [8, 5, 1, 1]), 1e-5);
}

#[test]
fn soft_max_with_mask_scale_and_alibi() {
    let ctx = host_ctx();
    let (n0, n1, n2) = (5usize, 3usize, 4usize);
    let a = ctx.new_tensor_3d(Type::F32, n0 as i64, n1 as i64, n2 as i64).unwrap();
    let m = ctx.new_tensor_2d(Type::F32, n0 as i64, 4).unwrap();
    let (va, vm) = (rand_vec(n0 * n1 * n2, 7), rand_vec(n0 * 4, 8));
    set(&a, &va);
    set(&m, &vm);
    let (scale, max_bias) = (0.7f32, 8.0f32);
    let out = ctx.soft_max_ext(&a, Some(&m), scale, max_bias).unwrap();
    compute(&ctx, &out, 2);
    // ALiBi slopes for 4 heads and max_bias 8: m0 = 2^(-8/4); slope_h = m0^(h+1).
    let mut want = vec![0f32; va.len()];
    for h in 0..n2 {
        let slope = 2f32.powf(-2.0).powi(h as i32 + 1);
        for r in 0..n1 {
            let base = (h * n1 + r) * n0;
            let z: Vec<f64> = (0..n0).map(|i| (va[base + i] * scale + slope * vm[r * n0 + i]) as f64).collect();
            let mx = z.iter().cloned().fold(f64::MIN, f64::max);
            let s: f64 = z.iter().map(|v| (v - mx).exp()).sum();
            for i in 0..n0 {
                want[base + i] = ((z[i] - mx).exp() / s) as f32;
            }
        }
    }
    assert_close(&get(&out), &want, 1e-5);
}

#[test]
fn norms_match_their_definitions() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 10, 3).unwrap();
    let va = rand_vec(30, 9);
    set(&a, &va);
    let eps = 1e-5f32;
    let n = ctx.norm(&a, eps, false).unwrap();
    let r = ctx.rms_norm(&a, eps, false).unwrap();
    let both = ctx.add(&n, &r).unwrap();
    compute(&ctx, &both, 2);
    let (mut wn, mut wr) = (vec![], vec![]);
    for row in va.chunks(10) {
        let mean = row.iter().sum::<f32>() / 10.0;
        let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / 10.0;
        wn.extend(row.iter().map(|x| (x - mean) / (var + eps).sqrt()));
        let ms = row.iter().map(|x| x * x).sum::<f32>() / 10.0;
        wr.extend(row.iter().map(|x| x / (ms + eps).sqrt()));
    }
    assert_close(&get(&n), &wn, 1e-5);
    assert_close(&get(&r), &wr, 1e-5);
}

#[test]
fn sums_and_means() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_3d(Type::F32, 4, 2, 2).unwrap();
    set(&a, &(1..=16).map(|x| x as f32).collect::<Vec<_>>());
    let s = ctx.sum(&a).unwrap();
    let sr = ctx.sum_rows(&a).unwrap();
    let mn = ctx.mean(&a).unwrap();
    for t in [&s, &sr, &mn] {
        compute(&ctx, t, 2);
    }
    assert_eq!(get(&s), vec![136.]);
    assert_eq!(get(&sr), vec![10., 26., 42., 58.]);
    assert_eq!(get(&mn), vec![2.5, 6.5, 10.5, 14.5]);
}

#[test]
fn get_rows_gathers_and_rejects_bad_indices() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F16, 3, 4).unwrap();
    set(&a, &(0..12).map(|x| x as f32).collect::<Vec<_>>());
    let idx = ctx.new_tensor_1d(Type::I32, 3).unwrap();
    weft::backend::tensor_set(&idx, &[3i32, 0, 3].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(), 0).unwrap();
    let out = ctx.get_rows(&a, &idx).unwrap();
    assert_eq!(out.ty(), Type::F32);
    compute(&ctx, &out, 2);
    assert_eq!(get(&out), vec![9., 10., 11., 0., 1., 2., 9., 10., 11.]);

    weft::backend::tensor_set(&idx, &[0i32, 4, 1].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(), 0).unwrap();
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&out).unwrap();
    use weft::backend::Backend;
    let e = weft::backend::cpu::CpuBackend::new(2).unwrap().graph_compute(&g).unwrap_err();
    assert!(e.message.contains("row index 4") && e.message.contains("a.ne[1]=4"), "{}", e.message);
}

#[test]
fn unary_ops_match_formulas() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_1d(Type::F32, 64).unwrap();
    let va: Vec<f32> = rand_vec(64, 10).iter().map(|x| x * 4.0).collect();
    set(&a, &va);
    type Case = (UnaryOp, fn(f32) -> f32, f32);
    let cases: Vec<Case> = vec![
        (UnaryOp::Abs, f32::abs, 0.0),
        (UnaryOp::Neg, |x| -x, 0.0),
        (UnaryOp::Relu, |x| x.max(0.0), 0.0),
        (UnaryOp::Tanh, f32::tanh, 1e-6),
        (UnaryOp::Sigmoid, |x| 1.0 / (1.0 + (-x).exp()), 1e-6),
        (UnaryOp::Silu, |x| x / (1.0 + (-x).exp()), 1e-6),
        (UnaryOp::Elu, |x| if x > 0.0 { x } else { x.exp() - 1.0 }, 1e-6),
        (UnaryOp::Exp, f32::exp, 1e-6),
        (UnaryOp::Hardsigmoid, |x| ((x + 3.0) / 6.0).clamp(0.0, 1.0), 1e-6),
        // ggml computes GELU through an f16 table: within f16 precision of the formula.
        (UnaryOp::Gelu, |x| 0.5 * x * (1.0 + (0.797_884_6 * x * (1.0 + 0.044715 * x * x)).tanh()), 2e-3),
        (UnaryOp::GeluQuick, |x| x / (1.0 + (-1.702 * x).exp()), 2e-3),
    ];
    for (op, f, tol) in cases {
        let out = ctx.unary(&a, op, false).unwrap();
        compute(&ctx, &out, 2);
        let want: Vec<f32> = va.iter().map(|&x| f(x)).collect();
        assert_close(&get(&out), &want, tol.max(1e-7));
    }
    let s = ctx.scale(&a, 0.5).unwrap();
    compute(&ctx, &s, 1);
    assert_close(&get(&s), &va.iter().map(|x| x * 0.5).collect::<Vec<_>>(), 0.0);
}

#[test]
fn copies_convert_types_and_follow_strides() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 3, 2).unwrap();
    set(&a, &[1., 2., 3., 4., 5., 6.]);
    // cont(transpose(a)): rows become columns.
    let t = ctx.cont(&ctx.transpose(&a).unwrap()).unwrap();
    compute(&ctx, &t, 2);
    assert_eq!(get(&t), vec![1., 4., 2., 5., 3., 6.]);
    // f32 -> f16 -> bf16 -> f32 through cpy nodes.
    let h = ctx.cpy(&a, &ctx.new_tensor_2d(Type::F16, 3, 2).unwrap()).unwrap();
    let bf = ctx.cpy(&h, &ctx.new_tensor_2d(Type::BF16, 6, 1).unwrap()).unwrap();
    let back = ctx.cast(&bf, Type::F32).unwrap();
    compute(&ctx, &back, 2);
    assert_eq!(get(&back), vec![1., 2., 3., 4., 5., 6.]);
    // i32 copies are exact beyond f32's 24-bit mantissa.
    let i = ctx.new_tensor_1d(Type::I32, 2).unwrap();
    weft::backend::tensor_set(&i, &[16_777_217i32, -5].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(), 0)
        .unwrap();
    let j = ctx.dup(&i).unwrap();
    compute(&ctx, &j, 1);
    let mut raw = [0u8; 8];
    weft::backend::tensor_get(&j, &mut raw, 0).unwrap();
    assert_eq!(i32::from_le_bytes(raw[..4].try_into().unwrap()), 16_777_217);
}

#[test]
fn views_read_the_right_window() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 4, 3).unwrap();
    set(&a, &(0..12).map(|x| x as f32).collect::<Vec<_>>());
    // 2x2 window starting at row 1, column 1: rows of stride 16 bytes.
    let v = ctx.view_2d(&a, 2, 2, 16, 4 * 5).unwrap();
    let s = ctx.scale(&ctx.cont(&v).unwrap(), 10.0).unwrap();
    compute(&ctx, &s, 2);
    assert_eq!(get(&s), vec![50., 60., 90., 100.]);
    // A view past the end is refused when it is built.
    assert!(ctx.view_2d(&a, 2, 2, 16, 4 * 11).is_err());
}

#[test]
fn in_place_ops_write_their_source() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_1d(Type::F32, 3).unwrap();
    set(&a, &[1., -2., 3.]);
    let r = ctx.relu_inplace(&a).unwrap();
    compute(&ctx, &r, 1);
    assert_eq!(get(&a), vec![1., 0., 3.]);
}
