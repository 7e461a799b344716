//! CPU kernels of the layout, indexing, pooling and convolution ops, against values worked
//! out independently: by hand for small cases (the expected numbers are written out), and
//! by plain reference loops written here for bigger and odd shapes, views and broadcasts.
//! Constructors are checked to refuse what ggml asserts on, with messages naming the op.

mod common;
use common::*;
use weft::backend::cpu::CpuDevice;
use weft::backend::{tensor_get, tensor_set, Device};
use weft::op::{Im2colParams, Op, PoolOp, SortOrder};
use weft::{Context, Tensor, Type};

// ---------------------------------------------------------------------------------------
// helpers

fn get_i32(t: &Tensor) -> Vec<i32> {
    let mut b = vec![0u8; t.nbytes()];
    tensor_get(t, &mut b, 0).unwrap();
    b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn err<T>(r: weft::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.message,
    }
}

fn supported(t: &Tensor) -> bool {
    CpuDevice::get().supports_op(t)
}

/// Values rounded through a type, as a tensor of that type stores them.
fn rounded(ty: Type, v: &[f32]) -> Vec<f32> {
    weft::types::convert::to_f32(ty, &weft::types::convert::from_f32(ty, v).unwrap()).unwrap()
}

/// Flat index of (i0, i1, i2, i3) in a contiguous tensor of shape ne.
fn flat(ne: [usize; 4], i: [usize; 4]) -> usize {
    ((i[3] * ne[2] + i[2]) * ne[1] + i[1]) * ne[0] + i[0]
}

/// Every coordinate of a shape, in memory order (i0 fastest).
fn coords(ne: [usize; 4]) -> impl Iterator<Item = [usize; 4]> {
    let n = ne.iter().product::<usize>();
    (0..n).map(move |k| [k % ne[0], (k / ne[0]) % ne[1], (k / (ne[0] * ne[1])) % ne[2], k / (ne[0] * ne[1] * ne[2])])
}

fn ne64(ne: [usize; 4]) -> [i64; 4] {
    ne.map(|x| x as i64)
}

/// A tensor of `ty` and shape `ne` holding `v` (rounded to `ty`); returns the stored values.
fn filled(ctx: &Context, ty: Type, ne: [usize; 4], seed: u64) -> (Tensor, Vec<f32>) {
    let t = ctx.new_tensor(ty, &ne64(ne)).unwrap();
    let n = ne.iter().product();
    let v: Vec<f32> = if ty.is_integer() {
        rand_vec(n, seed).iter().map(|x| (x * 1000.0).round()).collect()
    } else {
        rand_vec(n, seed)
    };
    set(&t, &v);
    (t, rounded(ty, &v))
}

/// A view of shape `ne` into the start of a bigger tensor (ggml's test_concat view: the
/// base is `grow` times larger per dim, so the view's rows and slices have gaps). Returns
/// the view, the base's values and the base's shape.
fn gapped_view(ctx: &Context, ty: Type, ne: [usize; 4], grow: [usize; 4], seed: u64) -> (Tensor, Vec<f32>, [usize; 4]) {
    let bne: [usize; 4] = std::array::from_fn(|k| ne[k] * grow[k]);
    let (base, vals) = filled(ctx, ty, bne, seed);
    let nb = base.nb();
    let v = ctx.view_4d(&base, ne[0] as i64, ne[1] as i64, ne[2] as i64, ne[3] as i64, nb[1], nb[2], nb[3], 0).unwrap();
    (v, vals, bne)
}

// ---------------------------------------------------------------------------------------
// ADD1

#[test]
fn add1_by_hand_and_in_every_float_type() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    let b = ctx.new_tensor_1d(Type::F32, 1).unwrap();
    set(&a, &[1., 2., 3., 4.]);
    set(&b, &[0.5]);
    let out = ctx.add1(&a, &b).unwrap();
    compute(&ctx, &out, 2);
    assert_eq!(get(&out), vec![1.5, 2.5, 3.5, 4.5]);

    // f16 a + f32 b: each element widened, added in f32 and rounded back to f16.
    // 1 + 0.1 = 1.1 -> f16 1.099609375; 1000 + 0.1 -> 1000 (f16 spacing 0.5 there).
    let h = ctx.new_tensor_1d(Type::F16, 4).unwrap();
    set(&h, &[1.0, 2.5, -3.0, 1000.0]);
    set(&b, &[0.1]);
    let out = ctx.add1(&h, &b).unwrap();
    assert_eq!(out.ty(), Type::F16);
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1.099_609_4, 2.599_609_4, -2.900_390_6, 1000.0]);

    // bf16 + bf16 and f16 + f16.
    for ty in [Type::BF16, Type::F16] {
        let (x, vx) = filled(&ctx, ty, [7, 3, 2, 1], 11);
        let s = ctx.new_tensor_1d(ty, 1).unwrap();
        set(&s, &[0.75]);
        let out = ctx.add1(&x, &s).unwrap();
        compute(&ctx, &out, 3);
        assert_eq!(get(&out), rounded(ty, &vx.iter().map(|v| v + 0.75).collect::<Vec<_>>()));
    }
}

#[test]
fn add1_in_place_writes_a() {
    let ctx = host_ctx();
    let (a, va) = filled(&ctx, Type::F32, [10, 5, 4, 3], 1);
    let b = ctx.new_tensor_1d(Type::F32, 1).unwrap();
    set(&b, &[-2.0]);
    let out = ctx.add1_inplace(&a, &b).unwrap();
    compute(&ctx, &out, 3);
    assert_eq!(get(&a), va.iter().map(|v| v - 2.0).collect::<Vec<_>>());
    assert!(err(ctx.add1(&a, &ctx.new_tensor_1d(Type::F32, 2).unwrap())).starts_with("add1: b must be a scalar"));
    // f32 a with an f16 scalar: ggml reads the scalar as f32; weft reports it unsupported.
    let h = ctx.new_tensor_1d(Type::F16, 1).unwrap();
    assert!(!supported(&ctx.add1(&a, &h).unwrap()));
}

// ---------------------------------------------------------------------------------------
// ACC and SET

#[test]
fn acc_by_hand() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 3, 3).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    set(&a, &(0..9).map(|x| x as f32).collect::<Vec<_>>());
    set(&b, &[10., 20., 30., 40.]);
    // Window rows of a's stride (12 bytes), starting at element 1: elements 1, 2 and 4, 5.
    let nb = a.nb();
    let out = ctx.acc(&a, &b, nb[1], nb[2], nb[3], 4, false).unwrap();
    compute(&ctx, &out, 2);
    assert_eq!(get(&out), vec![0., 11., 22., 3., 34., 45., 6., 7., 8.]);
    assert_eq!(get(&a), (0..9).map(|x| x as f32).collect::<Vec<_>>(), "a is untouched");

    let e = err(ctx.acc(&a, &b, nb[1], nb[2], nb[3], 32, false));
    assert!(e.starts_with("acc: b [2,2,1,1] written at offset 32") && e.contains("reaches past the end of a"), "{e}");
    let t = ctx.transpose(&a).unwrap();
    assert_eq!(err(ctx.acc(&t, &b, nb[1], nb[2], nb[3], 0, false)), "acc: a must be contiguous");
}

#[test]
fn acc_like_the_suite_and_in_place() {
    // test_acc: a [256, 17], b [256, 16] added from row 1 on (offset = b.nb[1]).
    let ctx = host_ctx();
    let (a, va) = filled(&ctx, Type::F32, [256, 17, 1, 1], 2);
    let (b, vb) = filled(&ctx, Type::F32, [256, 16, 1, 1], 3);
    let nb = a.nb();
    let out = ctx.acc(&a, &b, nb[1], nb[2], nb[3], b.nb()[1], false).unwrap();
    compute(&ctx, &out, 3);
    let mut want = va.clone();
    for (k, v) in vb.iter().enumerate() {
        want[256 + k] += v;
    }
    assert_eq!(get(&out), want);

    // In place, on a 3-D window with strides of a's dims 1 and 2.
    let (a, va) = filled(&ctx, Type::F32, [6, 5, 4, 1], 4);
    let (b, vb) = filled(&ctx, Type::F32, [2, 3, 2, 1], 5);
    let nb = a.nb();
    let off = (1 + 6 + 30) * 4; // element (1, 1, 1)
    let out = ctx.acc(&a, &b, nb[1], nb[2], nb[3], off, true).unwrap();
    compute(&ctx, &out, 2);
    let mut want = va.clone();
    for i in coords([2, 3, 2, 1]) {
        want[flat([6, 5, 4, 1], [i[0] + 1, i[1] + 1, i[2] + 1, 0])] += vb[flat([2, 3, 2, 1], i)];
    }
    assert_eq!(get(&a), want);
}

#[test]
fn set_1d_and_2d_by_hand() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 4, 2).unwrap();
    set(&a, &[1., 2., 3., 4., 5., 6., 7., 8.]);
    let b = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    set(&b, &[-1., -2.]);
    let s1 = ctx.set_1d(&a, &b, 8, false).unwrap();
    compute(&ctx, &s1, 1);
    assert_eq!(get(&s1), vec![1., 2., -1., -2., 5., 6., 7., 8.]);
    // A column: b [1, 2] with rows of a's stride, starting at element 3.
    let c = ctx.new_tensor_2d(Type::F32, 1, 2).unwrap();
    set(&c, &[-1., -2.]);
    let s2 = ctx.set_2d(&a, &c, a.nb()[1], 12, false).unwrap();
    compute(&ctx, &s2, 2);
    assert_eq!(get(&s2), vec![1., 2., 3., -1., 5., 6., 7., -2.]);
    assert_eq!(get(&a), vec![1., 2., 3., 4., 5., 6., 7., 8.]);
}

#[test]
fn set_windows_in_all_four_dims() {
    let ctx = host_ctx();
    // test_set: src [6,5,4,3] into dst with dims < `dim` doubled, at the centre of those
    // dims, with the *source's* strides (so the window is one contiguous run of dst).
    let ne = [6usize, 5, 4, 3];
    for dim in 1..=4 {
        let mut dne = ne;
        for d in dne.iter_mut().take(dim) {
            *d *= 2;
        }
        let (src, vs) = filled(&ctx, Type::F32, ne, 10 + dim as u64);
        let (dst, vd) = filled(&ctx, Type::F32, dne, 20 + dim as u64);
        let dnb = dst.nb();
        let offset: usize = (0..dim).map(|i| (dne[i] - ne[i]) / 2 * dnb[i]).sum();
        let snb = src.nb();
        let out = ctx.set(&dst, &src, snb[1], snb[2], snb[3], offset, false).unwrap();
        compute(&ctx, &out, 3);
        let mut want = vd.clone();
        want[offset / 4..offset / 4 + vs.len()].copy_from_slice(&vs);
        assert_eq!(get(&out), want, "dim {dim}");
    }

    // A true 4-D sub-block (strides of a), in place, in i32 (set copies bytes).
    let (ane, bne) = ([8usize, 7, 6, 5], [3usize, 2, 2, 2]);
    let (a, va) = filled(&ctx, Type::I32, ane, 30);
    let (b, vb) = filled(&ctx, Type::I32, bne, 31);
    let nb = a.nb();
    let at = [1usize, 2, 3, 1];
    let offset = at[0] * 4 + at[1] * nb[1] + at[2] * nb[2] + at[3] * nb[3];
    let out = ctx.set(&a, &b, nb[1], nb[2], nb[3], offset, true).unwrap();
    compute(&ctx, &out, 3);
    let mut want = va.clone();
    for i in coords(bne) {
        want[flat(ane, [i[0] + at[0], i[1] + at[1], i[2] + at[2], i[3] + at[3]])] = vb[flat(bne, i)];
    }
    assert_eq!(get(&a), want);

    // Rows of the window overlapping (nb1 smaller than a row): one thread, rows in order,
    // so the later row wins, as in ggml.
    let a = ctx.new_tensor_1d(Type::F32, 6).unwrap();
    set(&a, &[0.; 6]);
    let b = ctx.new_tensor_2d(Type::F32, 3, 2).unwrap();
    set(&b, &[1., 2., 3., 4., 5., 6.]);
    let out = ctx.set(&a, &b, 8, 24, 24, 0, false).unwrap();
    compute(&ctx, &out, 3);
    assert_eq!(get(&out), vec![1., 2., 4., 5., 6., 0.]);
}

#[test]
fn set_refuses_bad_windows() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 4, 4).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    let nb = a.nb();
    assert_eq!(
        err(ctx.set(&ctx.transpose(&a).unwrap(), &b, nb[1], nb[2], nb[3], 0, false)),
        "set: a must be contiguous"
    );
    let e = err(ctx.set(&a, &b, nb[1], nb[2], nb[3], 4 * 14, true));
    assert!(e.starts_with("setInplace: b [2,2,1,1] written at offset 56"), "{e}");
    let e = err(ctx.set(&a, &b, 1 << 31, nb[2], nb[3], 0, false));
    assert!(e.starts_with("set: nb1=2147483648 must fit in an int32 op param"), "{e}");
    let big = ctx.new_tensor_1d(Type::F32, 17).unwrap();
    assert!(err(ctx.set_1d(&a, &big, 0, false)).starts_with("set: b has 17 elements, more than a's 16"));
}

// ---------------------------------------------------------------------------------------
// CONCAT, PAD, REPEAT, REPEAT_BACK, UPSCALE, DIAG

#[test]
fn concat_by_hand() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 1, 2).unwrap();
    set(&a, &[1., 2., 3., 4.]);
    set(&b, &[5., 6.]);
    let out = ctx.concat(&a, &b, 0).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(out.ne(), [3, 2, 1, 1]);
    assert_eq!(get(&out), vec![1., 2., 5., 3., 4., 6.]);
    let c = ctx.new_tensor_2d(Type::F32, 2, 1).unwrap();
    set(&c, &[7., 8.]);
    let out = ctx.concat(&a, &c, 1).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1., 2., 3., 4., 7., 8.]);

    let d = ctx.new_tensor_2d(Type::F32, 2, 3).unwrap();
    let e = ctx.new_tensor_2d(Type::F32, 2, 4).unwrap();
    assert_eq!(err(ctx.concat(&d, &e, 0)), "concat: a.ne[1]=3 must equal b.ne[1]=4");
    assert_eq!(err(ctx.concat(&d, &e, 4)), "concat: dim=4 must be in 0..3");
}

#[test]
fn concat_every_dim_with_views_and_types() {
    let ctx = host_ctx();
    let check = |ty: Type, ne_a: [usize; 4], nbd: usize, dim: usize, v: u32| {
        let mut ne_b = ne_a;
        ne_b[dim] = nbd;
        // v & 1: a is a view with gaps; v & 2: b is (test_concat's layouts).
        let (a, va, abne) = gapped_view(&ctx, ty, ne_a, if v & 1 != 0 { [2, 4, 3, 1] } else { [1; 4] }, 40);
        let (b, vb, bbne) = gapped_view(&ctx, ty, ne_b, if v & 2 != 0 { [3, 2, 4, 1] } else { [1; 4] }, 41);
        let out = ctx.concat(&a, &b, dim as i32).unwrap();
        compute(&ctx, &out, 3);
        let mut one = ne_a;
        one[dim] += nbd;
        let want: Vec<f32> = coords(one)
            .map(|mut i| {
                if i[dim] < ne_a[dim] {
                    va[flat(abne, i)]
                } else {
                    i[dim] -= ne_a[dim];
                    vb[flat(bbne, i)]
                }
            })
            .collect();
        assert_eq!(get(&out), want, "{ty} dim {dim} v {v}");
    };
    for ty in [Type::F32, Type::I32, Type::F16, Type::I16] {
        for dim in 0..4 {
            for v in 0..4 {
                check(ty, [5, 4, 3, 2], 3, dim, v);
            }
        }
    }
    // The suite's own shape.
    for dim in 0..4 {
        check(Type::F32, [11, 12, 13, 14], 7, dim, 3);
    }
}

#[test]
fn pad_by_hand_crops_and_views() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    set(&a, &[1., 2., 3., 4.]);
    let out = ctx.pad(&a, 1, 1, 0, 0).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1., 2., 0., 3., 4., 0., 0., 0., 0.]);
    // A negative padding crops, as in ggml.
    let out = ctx.pad(&a, -1, 0, 0, 0).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1., 3.]);
    assert_eq!(err(ctx.pad(&a, -3, 0, 0, 0)), "pad: a.ne[0]=2 padded by p0=-3 must not be negative");

    // Padding in all four dims of a transposed (non-contiguous) i16 source.
    let (base, vb) = filled(&ctx, Type::I16, [4, 3, 2, 2], 50);
    let t = ctx.transpose(&base).unwrap(); // [3, 4, 2, 2]
    let out = ctx.pad(&t, 2, 1, 1, 1).unwrap();
    compute(&ctx, &out, 3);
    let want: Vec<f32> = coords([5, 5, 3, 3])
        .map(|i| {
            if i[0] < 3 && i[1] < 4 && i[2] < 2 && i[3] < 2 {
                vb[flat([4, 3, 2, 2], [i[1], i[0], i[2], i[3]])]
            } else {
                0.0
            }
        })
        .collect();
    assert_eq!(get(&out), want);
}

#[test]
fn repeat_by_hand_and_in_every_direction() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    set(&a, &[1., 2.]);
    let shape = ctx.new_tensor_2d(Type::F32, 4, 2).unwrap();
    let out = ctx.repeat(&a, &shape).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1., 2., 1., 2., 1., 2., 1., 2.]);

    // test_repeat's repeat counts, for f32, i32 and i16 (and f16), ne3 = 1 and 3.
    let nrs = [[1, 1, 1, 1], [2, 1, 1, 1], [1, 2, 1, 1], [1, 1, 2, 1], [1, 1, 1, 2], [2, 2, 2, 2]];
    for ty in [Type::F32, Type::I32, Type::I16, Type::F16] {
        for ne3 in [1, 3] {
            for nr in nrs {
                let ne = [5usize, 3, 2, ne3];
                let (src, vs) = filled(&ctx, ty, ne, 60);
                let tne: [usize; 4] = std::array::from_fn(|k| ne[k] * nr[k]);
                let target = ctx.new_tensor(ty, &ne64(tne)).unwrap();
                let out = ctx.repeat(&src, &target).unwrap();
                compute(&ctx, &out, 3);
                let want: Vec<f32> = coords(tne)
                    .map(|i| vs[flat(ne, [i[0] % ne[0], i[1] % ne[1], i[2] % ne[2], i[3] % ne[3]])])
                    .collect();
                assert_eq!(get(&out), want, "{ty} {nr:?}");
            }
        }
    }
    // A permuted source.
    let (base, vb) = filled(&ctx, Type::F32, [3, 4, 2, 1], 61);
    let p = ctx.permute(&base, [2, 0, 1, 3]).unwrap(); // [4, 2, 3, 1]
    let target = ctx.new_tensor_4d(Type::F32, 8, 2, 6, 2).unwrap();
    let out = ctx.repeat(&p, &target).unwrap();
    compute(&ctx, &out, 2);
    let want: Vec<f32> =
        coords([8, 2, 6, 2]).map(|i| vb[flat([3, 4, 2, 1], [i[2] % 3, i[0] % 4, i[1] % 2, 0])]).collect();
    assert_eq!(get(&out), want);

    let b3 = ctx.new_tensor_1d(Type::F32, 3).unwrap();
    let b4 = ctx.new_tensor_1d(Type::F32, 4).unwrap();
    assert_eq!(err(ctx.repeat(&b3, &b4)), "repeat: a [3,1,1,1] must repeat to b [4,1,1,1]");
}

#[test]
fn repeat_back_sums_the_repetitions() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 4, 2).unwrap();
    set(&a, &(1..=8).map(|x| x as f32).collect::<Vec<_>>());
    let shape = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    let out = ctx.repeat_back(&a, &shape).unwrap();
    compute(&ctx, &out, 1);
    // [1+3+5+7, 2+4+6+8]
    assert_eq!(get(&out), vec![16., 20.]);

    let (ane, dne) = ([6usize, 4, 6, 2], [3usize, 2, 3, 1]);
    let (a, va) = filled(&ctx, Type::F32, ane, 62);
    let shape = ctx.new_tensor(Type::F32, &ne64(dne)).unwrap();
    let out = ctx.repeat_back(&a, &shape).unwrap();
    compute(&ctx, &out, 3);
    let mut want = vec![0f64; dne.iter().product()];
    for i in coords(ane) {
        want[flat(dne, [i[0] % 3, i[1] % 2, i[2] % 3, 0])] += va[flat(ane, i)] as f64;
    }
    assert_close(&get(&out), &want.iter().map(|&x| x as f32).collect::<Vec<_>>(), 1e-6);

    // ggml sums in f32, repetition by repetition: 1 + 2^-24 rounds back to 1 (ties to
    // even) twice, where an f64 sum would give 1 + 2^-23.
    let e = 2f32.powi(-24);
    let t = ctx.new_tensor_1d(Type::F32, 3).unwrap();
    set(&t, &[1.0, e, e]);
    let out = ctx.repeat_back(&t, &ctx.new_tensor_1d(Type::F32, 1).unwrap()).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1.0]);
    assert_eq!(
        err(ctx.repeat_back(&a, &ctx.new_tensor_1d(Type::F32, 4).unwrap())),
        "repeatBack: b [4,1,1,1] must repeat to a [6,4,6,2]"
    );
}

#[test]
fn upscale_nearest_neighbour() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 2, 1).unwrap();
    set(&a, &[1., 2.]);
    let out = ctx.upscale(&a, 2).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(out.ne(), [4, 2, 1, 1]);
    assert_eq!(get(&out), vec![1., 1., 2., 2., 1., 1., 2., 2.]);

    // Integer factor on a transposed source (test_upscale's transpose case, smaller).
    let (base, vb) = filled(&ctx, Type::F32, [5, 3, 2, 1], 70);
    let t = ctx.transpose(&base).unwrap(); // [3, 5, 2, 1]
    let out = ctx.upscale(&t, 3).unwrap();
    compute(&ctx, &out, 3);
    let want: Vec<f32> = coords([9, 15, 2, 1]).map(|i| vb[flat([5, 3, 2, 1], [i[1] / 3, i[0] / 3, i[2], 0])]).collect();
    assert_eq!(get(&out), want);

    // upscale_ext to non-multiples (test_upscale_ext): index = trunc(i / (ne / ne_a)) in f32.
    let (ane, dne) = ([2usize, 5, 7, 11], [5usize, 7, 11, 13]);
    let (a, va) = filled(&ctx, Type::F32, ane, 71);
    let out = ctx.upscale_ext(&a, 5, 7, 11, 13).unwrap();
    compute(&ctx, &out, 3);
    let src = |i: usize, k: usize| (i as f32 / (dne[k] as f32 / ane[k] as f32)) as usize;
    let want: Vec<f32> =
        coords(dne).map(|i| va[flat(ane, [src(i[0], 0), src(i[1], 1), src(i[2], 2), src(i[3], 3)])]).collect();
    assert_eq!(get(&out), want);
    // Spot check by hand: 2 -> 5 along dim 0 maps i0 = 0,1,2,3,4 to 0,0,0,1,1.
    assert_eq!((0..5).map(|i| src(i, 0)).collect::<Vec<_>>(), vec![0, 0, 0, 1, 1]);

    assert_eq!(err(ctx.upscale_ext(&a, 1, 7, 11, 13)), "upscaleExt: a.ne[0]=2 must not exceed ne0=1");
    let empty = ctx.new_tensor_2d(Type::F32, 0, 2).unwrap();
    assert!(err(ctx.upscale_ext(&empty, 2, 2, 1, 1)).starts_with("upscaleExt: a [0,2,1,1] is empty"));
}

#[test]
fn diag_spreads_a_row() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_3d(Type::F32, 3, 1, 2).unwrap();
    set(&a, &[1., 2., 3., 4., 5., 6.]);
    let out = ctx.diag(&a).unwrap();
    compute(&ctx, &out, 2);
    #[rustfmt::skip]
    let want = vec![
        1., 0., 0.,  0., 2., 0.,  0., 0., 3.,
        4., 0., 0.,  0., 5., 0.,  0., 0., 6.,
    ];
    assert_eq!(get(&out), want);
    assert_eq!(err(ctx.diag(&ctx.new_tensor_2d(Type::F32, 3, 2).unwrap())), "diag: a.ne[1]=2 must be 1");
}

// ---------------------------------------------------------------------------------------
// ARGMAX, COUNT_EQUAL, ARGSORT

#[test]
fn argmax_by_hand_and_reference() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 4, 3).unwrap();
    // Ties give the last index (ggml updates the index whenever x equals the running max).
    set(&a, &[1., 3., 2., 3., -1., -2., -3., -4., 0., 0., 0., 0.]);
    let out = ctx.argmax(&a).unwrap();
    compute(&ctx, &out, 2);
    assert_eq!(out.ty(), Type::I32);
    assert_eq!(get_i32(&out), vec![3, 0, 3]);

    for ty in [Type::F32, Type::F16] {
        let (a, va) = filled(&ctx, ty, [37, 50, 1, 1], 80);
        let out = ctx.argmax(&a).unwrap();
        compute(&ctx, &out, 3);
        let want: Vec<i32> = va
            .chunks(37)
            .map(|r| {
                let m = r.iter().cloned().fold(f32::MIN, f32::max);
                r.iter().rposition(|&x| x == m).unwrap() as i32
            })
            .collect();
        assert_eq!(get_i32(&out), want);
    }
    let a3 = ctx.new_tensor_3d(Type::F32, 2, 2, 2).unwrap();
    assert_eq!(err(ctx.argmax(&a3)), "argmax: a must be a matrix, got [2,2,2,1]");
}

#[test]
fn count_equal_by_hand_and_like_the_suite() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_1d(Type::I32, 4).unwrap();
    let b = ctx.new_tensor_1d(Type::I32, 4).unwrap();
    set_i32(&a, &[1, 2, 3, 4]);
    set_i32(&b, &[1, 0, 3, 0]);
    let out = ctx.count_equal(&a, &b).unwrap();
    compute(&ctx, &out, 2);
    assert_eq!(out.ty(), Type::I64);
    let mut raw = [0u8; 8];
    tensor_get(&out, &mut raw, 0).unwrap();
    assert_eq!(i64::from_le_bytes(raw), 2);

    // 4-D inputs, one of them a transposed view.
    let ne = [7usize, 6, 5, 3];
    let (x, vx) = filled(&ctx, Type::I32, ne, 81);
    // y = transpose(base) equals x at every third element of base (12345 never matches).
    let bne = [6usize, 7, 5, 3];
    let base = ctx.new_tensor(Type::I32, &ne64(bne)).unwrap();
    let vy: Vec<f32> = coords(bne)
        .enumerate()
        .map(|(k, j)| if k % 3 == 0 { vx[flat(ne, [j[1], j[0], j[2], j[3]])] } else { 12345.0 })
        .collect();
    set(&base, &vy);
    let y = ctx.transpose(&base).unwrap();
    let out = ctx.count_equal(&x, &y).unwrap();
    compute(&ctx, &out, 3);
    let want = coords(ne).filter(|&i| vx[flat(ne, i)] == vy[flat(bne, [i[1], i[0], i[2], i[3]])]).count();
    tensor_get(&out, &mut raw, 0).unwrap();
    assert_eq!(i64::from_le_bytes(raw) as usize, want);
    assert!(want > 100, "the test data should have matches ({want})");

    // test_count_equal: argmax of the same a twice, so every row matches.
    let (a, _) = filled(&ctx, Type::F32, [4, 500, 1, 1], 82);
    let out = ctx.count_equal(&ctx.argmax(&a).unwrap(), &ctx.argmax(&a).unwrap()).unwrap();
    compute(&ctx, &out, 3);
    tensor_get(&out, &mut raw, 0).unwrap();
    assert_eq!(i64::from_le_bytes(raw), 500);
    assert_eq!(err(ctx.count_equal(&a, &x)), "countEqual: a [4,500,1,1] and b [7,6,5,3] must have the same shape");
}

/// ggml's exchange sort written out plainly: for each j, swap with any later k that is
/// strictly out of order.
fn exchange_sort(x: &[f32], desc: bool) -> Vec<i32> {
    let mut p: Vec<usize> = (0..x.len()).collect();
    for j in 0..x.len() {
        for k in j + 1..x.len() {
            let (u, v) = (x[p[j]], x[p[k]]);
            if if desc { u < v } else { u > v } {
                p.swap(j, k);
            }
        }
    }
    p.into_iter().map(|i| i as i32).collect()
}

#[test]
fn argsort_by_hand_with_ties() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_1d(Type::F32, 3).unwrap();
    set(&a, &[3., 1., 2.]);
    let asc = ctx.argsort(&a, SortOrder::Asc).unwrap();
    let desc = ctx.argsort(&a, SortOrder::Desc).unwrap();
    compute(&ctx, &asc, 1);
    compute(&ctx, &desc, 1);
    assert_eq!(get_i32(&asc), vec![1, 2, 0]);
    assert_eq!(get_i32(&desc), vec![0, 2, 1]);

    // Ties come out in the order ggml's unstable exchange sort leaves them (worked by hand:
    // ascending, pass 0 swaps in the 0 at index 3; pass 1 the 1 at index 2; pass 2 the 1 at
    // index 0; pass 3 the 1 at index 5).
    let t = ctx.new_tensor_1d(Type::F32, 6).unwrap();
    set(&t, &[1., 2., 1., 0., 2., 1.]);
    let asc = ctx.argsort(&t, SortOrder::Asc).unwrap();
    let desc = ctx.argsort(&t, SortOrder::Desc).unwrap();
    compute(&ctx, &asc, 1);
    compute(&ctx, &desc, 1);
    assert_eq!(get_i32(&asc), vec![3, 2, 0, 5, 4, 1]);
    assert_eq!(get_i32(&desc), vec![1, 4, 2, 0, 5, 3]);
}

#[test]
fn argsort_rows_like_the_suite_and_with_many_ties() {
    let ctx = host_ctx();
    for order in [SortOrder::Asc, SortOrder::Desc] {
        // test_argsort: each row a shuffle of 0..ne0 (unique values).
        for ne in [[8usize, 1, 1, 1], [16, 10, 10, 10], [60, 10, 10, 3]] {
            let a = ctx.new_tensor(Type::F32, &ne64(ne)).unwrap();
            let mut v = Vec::new();
            for r in 0..ne[1] * ne[2] * ne[3] {
                let key = rand_vec(ne[0], 90 + r as u64);
                let mut row: Vec<usize> = (0..ne[0]).collect();
                row.sort_by(|&i, &j| key[i].partial_cmp(&key[j]).unwrap());
                v.extend(row.iter().map(|&x| x as f32));
            }
            set(&a, &v);
            let out = ctx.argsort(&a, order).unwrap();
            compute(&ctx, &out, 3);
            let desc = order == SortOrder::Desc;
            let want: Vec<i32> = v
                .chunks(ne[0])
                .flat_map(|r| {
                    let mut idx: Vec<usize> = (0..r.len()).collect();
                    idx.sort_by(|&i, &j| if desc { r[j].total_cmp(&r[i]) } else { r[i].total_cmp(&r[j]) });
                    idx.into_iter().map(|i| i as i32)
                })
                .collect();
            assert_eq!(get_i32(&out), want, "{ne:?} {order:?}");
        }
        // Rows full of ties (values in {0,1,2}) and a NaN: ggml's order, step for step.
        let a = ctx.new_tensor_2d(Type::F32, 40, 5).unwrap();
        let mut v: Vec<f32> = rand_vec(200, 99).iter().map(|x| ((x + 1.0) * 1.5).floor()).collect();
        v[77] = f32::NAN;
        set(&a, &v);
        let out = ctx.argsort(&a, order).unwrap();
        compute(&ctx, &out, 2);
        let want: Vec<i32> = v.chunks(40).flat_map(|r| exchange_sort(r, order == SortOrder::Desc)).collect();
        assert_eq!(get_i32(&out), want);
    }
    // top_k: the first k of a descending argsort.
    let a = ctx.new_tensor_2d(Type::F32, 5, 2).unwrap();
    set(&a, &[0.1, 0.5, 0.3, 0.9, 0.2, 5., 4., 3., 2., 1.]);
    let top = ctx.cont(&ctx.top_k(&a, 2).unwrap()).unwrap();
    compute(&ctx, &top, 2);
    assert_eq!(get_i32(&top), vec![3, 1, 0, 1]);
    assert_eq!(err(ctx.top_k(&a, 6)), "topK: a.ne[0]=5 must be at least k=6");
}

// ---------------------------------------------------------------------------------------
// SUM, SUM_ROWS, MEAN types

#[test]
fn sum_types_follow_ggml() {
    let ctx = host_ctx();
    for ty in [Type::F16, Type::BF16] {
        let a = ctx.new_tensor_2d(ty, 4, 4).unwrap();
        set(&a, &(1..=16).map(|x| x as f32).collect::<Vec<_>>());
        let s = ctx.sum(&a).unwrap();
        assert_eq!(s.ty(), ty);
        compute(&ctx, &s, 2);
        assert_eq!(get(&s), vec![136.]);
        // ggml's SUM_ROWS and MEAN kernels are f32 only.
        assert!(!supported(&ctx.sum_rows(&a).unwrap()));
        assert!(!supported(&ctx.mean(&a).unwrap()));
    }
    // test_sum / test_sum_rows: f32 [10,5,4,3], against f64 sums.
    let (a, va) = filled(&ctx, Type::F32, [10, 5, 4, 3], 100);
    let (s, sr) = (ctx.sum(&a).unwrap(), ctx.sum_rows(&a).unwrap());
    compute(&ctx, &s, 3);
    compute(&ctx, &sr, 3);
    assert_close(&get(&s), &[va.iter().map(|&x| x as f64).sum::<f64>() as f32], 1e-6);
    let rows: Vec<f32> = va.chunks(10).map(|r| r.iter().map(|&x| x as f64).sum::<f64>() as f32).collect();
    assert_eq!(get(&sr), rows);
}

// ---------------------------------------------------------------------------------------
// GROUP_NORM

#[test]
fn group_norm_by_hand() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_3d(Type::F32, 2, 1, 2).unwrap();
    set(&a, &[1., 3., 5., 7.]);
    // Two groups of one channel: each (x - mean) / sqrt(var) with var 1 -> [-1, 1].
    let g2 = ctx.group_norm(&a, 2, 0.0, false).unwrap();
    // One group: mean 4, var (9 + 1 + 1 + 9) / 4 = 5.
    let g1 = ctx.group_norm(&a, 1, 0.0, false).unwrap();
    compute(&ctx, &g2, 1);
    compute(&ctx, &g1, 1);
    assert_eq!(get(&g2), vec![-1., 1., -1., 1.]);
    let r5 = 5f32.sqrt();
    assert_close(&get(&g1), &[-3. / r5, -1. / r5, 1. / r5, 3. / r5], 1e-6);
    assert_eq!(err(ctx.group_norm(&a, 0, 1e-6, false)), "groupNorm: nGroups=0 must be positive");
}

#[test]
fn group_norm_uneven_groups_and_in_place() {
    let ctx = host_ctx();
    // 10 channels in 4 groups: ceil(10/4) = 3 per group -> groups of 3, 3, 3, 1.
    let ne = [8usize, 6, 10, 2];
    let eps = 1e-3f32;
    let (a, va) = filled(&ctx, Type::F32, ne, 110);
    let out = ctx.group_norm(&a, 4, eps, false).unwrap();
    compute(&ctx, &out, 3);
    let mut want = vec![0f32; va.len()];
    for i3 in 0..2 {
        for (c0, c1) in [(0, 3), (3, 6), (6, 9), (9, 10)] {
            let idx: Vec<usize> =
                coords(ne).filter(|i| i[3] == i3 && (c0..c1).contains(&i[2])).map(|i| flat(ne, i)).collect();
            let n = idx.len() as f64;
            let mean = idx.iter().map(|&k| va[k] as f64).sum::<f64>() / n;
            let var = idx.iter().map(|&k| (va[k] as f64 - mean).powi(2)).sum::<f64>() / n;
            for &k in &idx {
                want[k] = ((va[k] as f64 - mean) / (var + eps as f64).sqrt()) as f32;
            }
        }
    }
    assert_close(&get(&out), &want, 2e-6);
    let inp = ctx.group_norm(&a, 4, eps, true).unwrap();
    compute(&ctx, &inp, 2);
    assert_close(&get(&a), &want, 2e-6);
}

// ---------------------------------------------------------------------------------------
// DIAG_MASK_INF, DIAG_MASK_ZERO

#[test]
fn diag_masks_by_hand() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 3, 3).unwrap();
    set(&a, &[1.; 9]);
    let inf = ctx.diag_mask_inf(&a, 0, false).unwrap();
    let zero = ctx.diag_mask_zero(&a, 1, false).unwrap();
    compute(&ctx, &inf, 1);
    compute(&ctx, &zero, 1);
    let ni = f32::NEG_INFINITY;
    assert_eq!(get(&inf), vec![1., ni, ni, 1., 1., ni, 1., 1., 1.]);
    assert_eq!(get(&zero), vec![1., 1., 0., 1., 1., 1., 1., 1., 1.]);
    assert_eq!(err(ctx.diag_mask_inf(&a, -1, false)), "diagMaskInf: nPast=-1 must not be negative");
    assert_eq!(err(ctx.diag_mask_zero(&a, -2, true)), "diagMaskZeroInplace: nPast=-2 must not be negative");
}

#[test]
fn diag_masks_on_batches_and_in_place() {
    let ctx = host_ctx();
    for ne in [[10usize, 10, 1, 1], [10, 10, 3, 1], [10, 10, 3, 2], [7, 4, 2, 3]] {
        let (a, va) = filled(&ctx, Type::F32, ne, 120);
        let out = ctx.diag_mask_inf(&a, 5, false).unwrap();
        compute(&ctx, &out, 3);
        let want: Vec<f32> =
            coords(ne).map(|i| if i[0] > 5 + i[1] { f32::NEG_INFINITY } else { va[flat(ne, i)] }).collect();
        assert_eq!(get(&out), want);
        let z = ctx.diag_mask_zero(&a, 2, true).unwrap();
        compute(&ctx, &z, 3);
        let want: Vec<f32> = coords(ne).map(|i| if i[0] > 2 + i[1] { 0.0 } else { va[flat(ne, i)] }).collect();
        assert_eq!(get(&a), want);
    }
}

// ---------------------------------------------------------------------------------------
// IM2COL

/// The patches of image `vb` (contiguous, shape `bne`) for a kw x kh kernel, written out
/// from the definition: dst [IC*KH*KW, OW, OH, N] (2-D) or [IC*KW, OW, N, 1] (1-D).
fn im2col_ref(vb: &[f32], bne: [usize; 4], kw: usize, kh: usize, p: Im2colParams) -> (Vec<f32>, [usize; 4]) {
    let (iw, ih, ic, n) = if p.is_2d { (bne[0], bne[1], bne[2], bne[3]) } else { (bne[0], 1, bne[1], bne[2]) };
    let out = |ins: usize, k: usize, s: i32, pad: i32, d: i32| {
        ((ins as i64 + 2 * pad as i64 - d as i64 * (k as i64 - 1) - 1) / s as i64 + 1) as usize
    };
    let ow = out(iw, kw, p.s0, p.p0, p.d0);
    let oh = if p.is_2d { out(ih, kh, p.s1, p.p1, p.d1) } else { 1 };
    let dne = if p.is_2d { [ic * kh * kw, ow, oh, n] } else { [ic * kw, ow, n, 1] };
    let mut v = vec![0f32; dne.iter().product()];
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for c in 0..ic {
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let x = ox as i64 * p.s0 as i64 + kx as i64 * p.d0 as i64 - p.p0 as i64;
                            let y = if p.is_2d {
                                oy as i64 * p.s1 as i64 + ky as i64 * p.d1 as i64 - p.p1 as i64
                            } else {
                                0
                            };
                            let val = if x >= 0 && (x as usize) < iw && y >= 0 && (y as usize) < ih {
                                let i = if p.is_2d { [x as usize, y as usize, c, b] } else { [x as usize, c, b, 0] };
                                vb[flat(bne, i)]
                            } else {
                                0.0
                            };
                            let row = if p.is_2d { [0, ox, oy, b] } else { [0, ox, b, 0] };
                            v[flat(dne, row) + (c * kh + ky) * kw + kx] = val;
                        }
                    }
                }
            }
        }
    }
    (v, dne)
}

#[test]
fn im2col_1d_by_hand() {
    let ctx = host_ctx();
    let b = ctx.new_tensor_2d(Type::F32, 5, 1).unwrap(); // IW = 5, IC = 1
    let a = ctx.new_tensor_2d(Type::F32, 3, 1).unwrap(); // KW = 3, IC = 1
    set(&b, &[1., 2., 3., 4., 5.]);
    let p = Im2colParams { s0: 1, s1: 0, p0: 1, p1: 0, d0: 1, d1: 0, is_2d: false };
    let out = ctx.im2col(&a, &b, p, Type::F32).unwrap();
    compute(&ctx, &out, 2);
    assert_eq!(out.ne(), [3, 5, 1, 1]);
    assert_eq!(get(&out), vec![0., 1., 2., 1., 2., 3., 2., 3., 4., 3., 4., 5., 4., 5., 0.]);
    // Stride 2, dilation 2, no padding: OW = (5 - 4 - 1) / 2 + 1 = 1, taps 0, 2, 4.
    let p = Im2colParams { s0: 2, s1: 0, p0: 0, p1: 0, d0: 2, d1: 0, is_2d: false };
    let out = ctx.im2col(&a, &b, p, Type::F16).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1., 3., 5.]);
}

#[test]
fn im2col_every_suite_combination() {
    let ctx = host_ctx();
    // 1-D: b [20, 2, 2], kernel [3, 2]; s0 {1,3} x p0 {0,3} x d0 {1,3}.
    let (b1, vb1) = filled(&ctx, Type::F32, [20, 2, 2, 1], 130);
    let k1 = ctx.new_tensor_3d(Type::F32, 3, 2, 2).unwrap();
    // 2-D: b [7, 6, 2, 2], kernel [3, 3, 2, 2]; the 64 combinations of the suite.
    let (b2, vb2) = filled(&ctx, Type::F32, [7, 6, 2, 2], 131);
    let k2 = ctx.new_tensor_4d(Type::F16, 3, 3, 2, 2).unwrap();
    for s0 in [1, 3] {
        for p0 in [0, 3] {
            for d0 in [1, 3] {
                let p = Im2colParams { s0, s1: 0, p0, p1: 0, d0, d1: 0, is_2d: false };
                let out = ctx.im2col(&k1, &b1, p, Type::F32).unwrap();
                compute(&ctx, &out, 3);
                let (want, dne) = im2col_ref(&vb1, [20, 2, 2, 1], 3, 1, p);
                assert_eq!(out.ne(), ne64(dne));
                assert_eq!(get(&out), want, "1-D {p:?}");
                for s1 in [1, 3] {
                    for p1 in [0, 3] {
                        for d1 in [1, 3] {
                            let p = Im2colParams { s0, s1, p0, p1, d0, d1, is_2d: true };
                            match ctx.im2col(&k2, &b2, p, Type::F32) {
                                Ok(out) => {
                                    compute(&ctx, &out, 3);
                                    let (want, dne) = im2col_ref(&vb2, [7, 6, 2, 2], 3, 3, p);
                                    assert_eq!(out.ne(), ne64(dne));
                                    assert_eq!(get(&out), want, "2-D {p:?}");
                                }
                                // A 6-high image is too small for a dilation-3 kernel without padding.
                                Err(e) => assert!(p1 == 0 && d1 == 3, "{p:?}: {}", e.message),
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn im2col_f16_output_and_strided_input() {
    let ctx = host_ctx();
    // The input as a permuted view: base [2, 9, 8, 1] seen as [9, 8, 2, 1] (channels last
    // in memory), so every read is strided.
    let (base, vbase) = filled(&ctx, Type::F32, [2, 9, 8, 1], 140);
    let b = ctx.permute(&base, [2, 0, 1, 3]).unwrap();
    assert_eq!(b.ne(), [9, 8, 2, 1]);
    let vb: Vec<f32> = coords([9, 8, 2, 1]).map(|i| vbase[flat([2, 9, 8, 1], [i[2], i[0], i[1], 0])]).collect();
    let k = ctx.new_tensor_4d(Type::F16, 3, 3, 2, 4).unwrap();
    let p = Im2colParams { s0: 2, s1: 1, p0: 1, p1: 2, d0: 1, d1: 2, is_2d: true };
    for ty in [Type::F32, Type::F16] {
        let out = ctx.im2col(&k, &b, p, ty).unwrap();
        compute(&ctx, &out, 3);
        let (want, _) = im2col_ref(&vb, [9, 8, 2, 1], 3, 3, p);
        assert_eq!(get(&out), rounded(ty, &want), "{ty}");
    }
    let e = err(ctx.im2col(&k, &ctx.new_tensor_4d(Type::F32, 9, 8, 3, 1).unwrap(), p, Type::F32));
    assert_eq!(e, "im2col: a.ne[2]=2 must equal b.ne[2]=3 (channels)");
    let small = ctx.new_tensor_4d(Type::F32, 1, 8, 2, 1).unwrap();
    let p0 = Im2colParams { p0: 0, ..p };
    assert!(err(ctx.im2col(&k, &small, p0, Type::F32)).starts_with("im2col: b too small compared to a"));
}

// ---------------------------------------------------------------------------------------
// POOL_1D, POOL_2D

#[test]
fn pools_by_hand() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 4, 4).unwrap();
    set(&a, &(0..16).map(|x| x as f32).collect::<Vec<_>>());
    let avg = ctx.pool_2d(&a, PoolOp::Avg, 2, 2, 2, 2, 0.0, 0.0).unwrap();
    let max = ctx.pool_2d(&a, PoolOp::Max, 2, 2, 2, 2, 0.0, 0.0).unwrap();
    compute(&ctx, &avg, 1);
    compute(&ctx, &max, 1);
    assert_eq!(get(&avg), vec![2.5, 4.5, 10.5, 12.5]);
    assert_eq!(get(&max), vec![5., 7., 13., 15.]);

    // Padding: a 3x3 window around a 2x2 image covers all of it; the average still
    // divides by 9, as ggml's does.
    let b = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    set(&b, &[1., 2., 3., 4.]);
    let avg = ctx.pool_2d(&b, PoolOp::Avg, 3, 3, 1, 1, 1.0, 1.0).unwrap();
    let max = ctx.pool_2d(&b, PoolOp::Max, 3, 3, 1, 1, 1.0, 1.0).unwrap();
    compute(&ctx, &avg, 1);
    compute(&ctx, &max, 1);
    assert_eq!(get(&avg), vec![10. / 9.; 4]);
    assert_eq!(get(&max), vec![4.; 4]);

    // 1-D: windows of 2 with stride 2; and k 3, s 2, p 1 (windows -1..1, 1..3, 3..5).
    let c = ctx.new_tensor_1d(Type::F32, 6).unwrap();
    set(&c, &[1., 2., 3., 4., 5., 6.]);
    for (op, k, s, p, want) in [
        (PoolOp::Avg, 2, 2, 0, vec![1.5, 3.5, 5.5]),
        (PoolOp::Max, 2, 2, 0, vec![2., 4., 6.]),
        (PoolOp::Avg, 3, 2, 1, vec![1., 3., 5.]),
        (PoolOp::Max, 3, 2, 1, vec![2., 4., 6.]),
    ] {
        let out = ctx.pool_1d(&c, op, k, s, p).unwrap();
        compute(&ctx, &out, 1);
        assert_eq!(get(&out), want, "{op:?} k{k} s{s} p{p}");
    }
    assert_eq!(err(ctx.pool_1d(&c, PoolOp::Max, 0, 1, 0)), "pool1d: k0=0 and s0=1 must be positive");
}

/// Pooling from the definition: gather each window's values inside the image, then take
/// the max (or -FLT_MAX if none) or their f32 sum over the full window size.
#[allow(clippy::too_many_arguments)]
fn pool_ref(
    v: &[f32],
    ne: [usize; 4],
    op: PoolOp,
    k: [usize; 2],
    s: [usize; 2],
    p: [i64; 2],
    one: [usize; 2],
) -> Vec<f32> {
    let mut out = Vec::new();
    for c in 0..ne[2] * ne[3] {
        for oy in 0..one[1] {
            for ox in 0..one[0] {
                let mut win = Vec::new();
                for ky in 0..k[1] {
                    for kx in 0..k[0] {
                        let (x, y) = ((ox * s[0] + kx) as i64 - p[0], (oy * s[1] + ky) as i64 - p[1]);
                        if x >= 0 && y >= 0 && (x as usize) < ne[0] && (y as usize) < ne[1] {
                            win.push(v[(c * ne[1] + y as usize) * ne[0] + x as usize]);
                        }
                    }
                }
                out.push(match op {
                    PoolOp::Max => win.iter().cloned().fold(-f32::MAX, f32::max),
                    PoolOp::Avg => win.iter().fold(0f32, |a, &b| a + b) / (k[0] * k[1]) as f32,
                });
            }
        }
    }
    out
}

#[test]
fn pool_2d_every_suite_combination() {
    let ctx = host_ctx();
    let ne = [10usize, 10, 3, 1];
    let (a, va) = filled(&ctx, Type::F32, ne, 150);
    for op in [PoolOp::Avg, PoolOp::Max] {
        for (k0, k1, s0, s1) in
            (0..16).map(|m| ([1, 3][m & 1], [1, 3][(m >> 1) & 1], [1, 2][(m >> 2) & 1], [1, 2][m >> 3]))
        {
            for (p0, p1) in [(0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0), (1.7, 0.5)] {
                let out = ctx.pool_2d(&a, op, k0, k1, s0, s1, p0, p1).unwrap();
                compute(&ctx, &out, 3);
                // Output size from the float padding, windows from the truncated one.
                let size =
                    |n: usize, k: i32, s: i32, p: f32| ((n as f32 + 2.0 * p - k as f32) / s as f32 + 1.0) as usize;
                let one = [size(10, k0, s0, p0), size(10, k1, s1, p1)];
                assert_eq!(out.ne(), [one[0] as i64, one[1] as i64, 3, 1]);
                let k = [k0 as usize, k1 as usize];
                let want = pool_ref(&va, ne, op, k, [s0 as usize, s1 as usize], [p0 as i64, p1 as i64], one);
                assert_eq!(get(&out), want, "{op:?} k{k0}x{k1} s{s0}x{s1} p{p0}x{p1}");
            }
        }
    }
    // f16 input, 1-D pooling over each row of a 3-D tensor.
    let (h, vh) = filled(&ctx, Type::F16, [9, 4, 2, 1], 151);
    let out = ctx.pool_1d(&h, PoolOp::Avg, 3, 2, 1).unwrap();
    compute(&ctx, &out, 2);
    let want: Vec<f32> =
        vh.chunks(9).flat_map(|row| pool_ref(row, [9, 1, 1, 1], PoolOp::Avg, [3, 1], [2, 1], [1, 0], [5, 1])).collect();
    assert_eq!(get(&out), want);
}

// ---------------------------------------------------------------------------------------
// CONV_TRANSPOSE_1D, CONV_TRANSPOSE_2D

#[test]
fn conv_transpose_1d_by_hand() {
    let ctx = host_ctx();
    let b = ctx.new_tensor_2d(Type::F32, 2, 1).unwrap(); // L = 2, Cin = 1
    let a = ctx.new_tensor_3d(Type::F32, 3, 1, 1).unwrap(); // K = 3, Cout = 1, Cin = 1
    set(&b, &[1., 2.]);
    set(&a, &[1., 10., 100.]);
    // out[x*s + t] += in[x] * k[t]
    let s1 = ctx.conv_transpose_1d(&a, &b, 1, 0, 1).unwrap();
    let s2 = ctx.conv_transpose_1d(&a, &b, 2, 0, 1).unwrap();
    compute(&ctx, &s1, 1);
    compute(&ctx, &s2, 1);
    assert_eq!(get(&s1), vec![1., 12., 120., 200.]);
    assert_eq!(get(&s2), vec![1., 10., 102., 20., 200.]);
    assert_eq!(err(ctx.conv_transpose_1d(&a, &b, 1, 1, 1)), "convTranspose1d: p0=1 must be 0");
    let b2 = ctx.new_tensor_2d(Type::F32, 2, 2).unwrap();
    assert_eq!(err(ctx.conv_transpose_1d(&a, &b2, 1, 0, 1)), "convTranspose1d: a.ne[2]=1 must equal b.ne[1]=2");
}

/// out[x*s + t, oc] = sum over x, t, c of in[x, c] * k[t, oc, c], in f64.
fn conv_t1d_ref(vk: &[f32], kne: [usize; 4], vi: &[f32], l: usize, s: usize) -> Vec<f32> {
    let (k, cout, cin) = (kne[0], kne[1], kne[2]);
    let len = (l - 1) * s + k;
    let mut out = vec![0f64; len * cout];
    for oc in 0..cout {
        for x in 0..l {
            for t in 0..k {
                for c in 0..cin {
                    out[oc * len + x * s + t] += vi[c * l + x] as f64 * vk[(c * cout + oc) * k + t] as f64;
                }
            }
        }
    }
    out.into_iter().map(|x| x as f32).collect()
}

#[test]
fn conv_transpose_1d_suite_shapes() {
    let ctx = host_ctx();
    let cases: [([usize; 2], [usize; 3], i32); 8] = [
        ([197, 32], [16, 32, 32], 1),
        ([3, 2], [2, 3, 2], 3),
        ([3, 2], [2, 3, 2], 2),
        ([3, 2], [2, 3, 2], 1),
        ([3, 2], [3, 2, 2], 2),
        ([3, 2], [3, 2, 2], 1),
        ([3, 2], [3, 1, 2], 1),
        ([2, 1], [3, 1, 1], 1),
    ];
    for (ine, kne, s) in cases {
        for kty in [Type::F32, Type::F16] {
            let (input, vi) = filled(&ctx, Type::F32, [ine[0], ine[1], 1, 1], 160);
            let (kernel, vk) = filled(&ctx, kty, [kne[0], kne[1], kne[2], 1], 161);
            let out = ctx.conv_transpose_1d(&kernel, &input, s, 0, 1).unwrap();
            compute(&ctx, &out, 3);
            // With an f16 kernel ggml rounds the input to f16 too.
            let vi = rounded(kty, &vi);
            let want = conv_t1d_ref(&vk, [kne[0], kne[1], kne[2], 1], &vi, ine[0], s as usize);
            assert_close(&get(&out), &want, 2e-6);
        }
    }
}

#[test]
fn conv_transpose_2d_by_hand_and_reference() {
    let ctx = host_ctx();
    let b = ctx.new_tensor_4d(Type::F32, 2, 1, 1, 1).unwrap();
    let a = ctx.new_tensor_4d(Type::F16, 2, 1, 1, 1).unwrap();
    set(&b, &[1., 2.]);
    set(&a, &[1., 10.]);
    let out = ctx.conv_transpose_2d_p0(&a, &b, 1).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![1., 12., 20.]);

    // Kernel [Kw 3, Kh 2, Cout 2, Cin 3], input [W 4, H 3, Cin 3, N 2], stride 2.
    let (kne, ine, s) = ([3usize, 2, 2, 3], [4usize, 3, 3, 2], 2usize);
    for kty in [Type::F16, Type::F32] {
        let (kernel, vk) = filled(&ctx, kty, kne, 170);
        let (input, vi) = filled(&ctx, Type::F32, ine, 171);
        let vi = rounded(kty, &vi);
        let out = ctx.conv_transpose_2d_p0(&kernel, &input, s as i32).unwrap();
        let one = [(ine[0] - 1) * s + kne[0], (ine[1] - 1) * s + kne[1], kne[2], ine[3]];
        assert_eq!(out.ne(), ne64(one));
        compute(&ctx, &out, 3);
        let mut want = vec![0f64; one.iter().product()];
        for n in 0..ine[3] {
            for oc in 0..kne[2] {
                for y in 0..ine[1] {
                    for x in 0..ine[0] {
                        for ky in 0..kne[1] {
                            for kx in 0..kne[0] {
                                for c in 0..kne[3] {
                                    let o = flat(one, [x * s + kx, y * s + ky, oc, n]);
                                    want[o] +=
                                        vi[flat(ine, [x, y, c, n])] as f64 * vk[flat(kne, [kx, ky, oc, c])] as f64;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_close(&get(&out), &want.iter().map(|&x| x as f32).collect::<Vec<_>>(), 2e-6);
    }
    let bad = ctx.new_tensor_4d(Type::F32, 4, 3, 2, 1).unwrap();
    let k = ctx.new_tensor_4d(Type::F16, 3, 2, 2, 3).unwrap();
    assert_eq!(err(ctx.conv_transpose_2d_p0(&k, &bad, 1)), "convTranspose2dP0: a.ne[3]=3 must equal b.ne[2]=2");
}

// ---------------------------------------------------------------------------------------
// ARANGE, TIMESTEP_EMBEDDING

#[test]
fn arange_by_hand() {
    let ctx = host_ctx();
    let a = ctx.arange(0.0, 10.0, 1.0).unwrap();
    compute(&ctx, &a, 2);
    assert_eq!(get(&a), (0..10).map(|x| x as f32).collect::<Vec<_>>());
    // ceil(1.5 / 0.4) = 4 values: 0.5, 0.9, 1.3, 1.7.
    let b = ctx.arange(0.5, 2.0, 0.4).unwrap();
    compute(&ctx, &b, 1);
    assert_close(&get(&b), &[0.5, 0.9, 1.3, 1.7], 1e-7);
    assert_eq!(err(ctx.arange(1.0, 1.0, 1.0)), "arange: stop=1 must be greater than start=1");
}

#[test]
fn timestep_embedding_by_hand_and_reference() {
    let ctx = host_ctx();
    let t = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    set(&t, &[0., 1.]);
    // dim 4: freqs 1 and exp(-ln(10000) / 2) = 0.01; [cos(t f0), cos(t f1), sin(t f0), sin(t f1)].
    let e = ctx.timestep_embedding(&t, 4, 10000).unwrap();
    compute(&ctx, &e, 1);
    assert_close(&get(&e), &[1., 1., 0., 0., 1f32.cos(), 0.01f32.cos(), 1f32.sin(), 0.01f32.sin()], 1e-6);
    // Odd dim 5: the result has 6 columns; the two past the sinusoids are zero.
    let e = ctx.timestep_embedding(&t, 5, 10000).unwrap();
    compute(&ctx, &e, 1);
    let g = get(&e);
    assert_eq!(e.ne(), [6, 2, 1, 1]);
    assert_eq!((g[4], g[5], g[10], g[11]), (0., 0., 0., 0.));

    // test_timestep_embedding: dim 320, max_period 10000, against f64.
    let t = ctx.new_tensor_1d(Type::F32, 3).unwrap();
    let ts = [0.5f32, 37.0, 999.0];
    set(&t, &ts);
    let e = ctx.timestep_embedding(&t, 320, 10000).unwrap();
    compute(&ctx, &e, 3);
    let mut want = Vec::new();
    for &x in &ts {
        let args: Vec<f64> = (0..160).map(|j| x as f64 * (-(10000f64).ln() * j as f64 / 160.0).exp()).collect();
        want.extend(args.iter().map(|a| a.cos() as f32));
        want.extend(args.iter().map(|a| a.sin() as f32));
    }
    // f32 arguments near 999 carry ~1e-4 absolute error.
    assert_close(&get(&e), &want, 2e-4);
}

// ---------------------------------------------------------------------------------------
// WIN_PART, WIN_UNPART, GET_REL_POS, ADD_REL_POS

#[test]
fn win_part_and_unpart_by_hand() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_3d(Type::F32, 1, 3, 3).unwrap(); // C = 1, a 3x3 image
    set(&a, &(0..9).map(|x| x as f32).collect::<Vec<_>>());
    let p = ctx.win_part(&a, 2).unwrap();
    compute(&ctx, &p, 2);
    assert_eq!(p.ne(), [1, 2, 2, 4]);
    // Windows (x, y): (0,0) (1,0) (0,1) (1,1), zero past the image's edge.
    assert_eq!(get(&p), vec![0., 1., 3., 4., 2., 0., 5., 0., 6., 7., 0., 0., 8., 0., 0., 0.]);
    let u = ctx.win_unpart(&p, 3, 3, 2).unwrap();
    compute(&ctx, &u, 2);
    assert_eq!(get(&u), (0..9).map(|x| x as f32).collect::<Vec<_>>());

    let e = err(ctx.win_unpart(&ctx.new_tensor_4d(Type::F32, 1, 2, 2, 3).unwrap(), 3, 3, 2));
    assert_eq!(e, "winUnpart: a.ne[3]=3 must hold the 4 windows of a 3x3 image");
    let e = err(ctx.win_unpart(&ctx.new_tensor_4d(Type::F32, 1, 1, 2, 4).unwrap(), 3, 3, 2));
    assert_eq!(e, "winUnpart: a.ne[1]=1 and a.ne[2]=2 must be at least w=2");
    assert_eq!(
        err(ctx.win_part(&ctx.new_tensor_4d(Type::F32, 1, 2, 2, 2).unwrap(), 2)),
        "winPart: a.ne[3]=2 must be 1"
    );
}

#[test]
fn win_part_round_trip_on_an_odd_image() {
    let ctx = host_ctx();
    let ne = [4usize, 7, 5, 1];
    let (a, va) = filled(&ctx, Type::F32, ne, 180);
    let p = ctx.win_part(&a, 3).unwrap();
    // 7 wide -> 3 windows across, 5 high -> 2 down.
    assert_eq!(p.ne(), [4, 3, 3, 6]);
    let u = ctx.win_unpart(&p, 7, 5, 3).unwrap();
    compute(&ctx, &u, 3);
    let vp = get(&p);
    let want: Vec<f32> = coords([4, 3, 3, 6])
        .map(|i| {
            let (x, y) = ((i[3] % 3) * 3 + i[1], (i[3] / 3) * 3 + i[2]);
            if x < 7 && y < 5 {
                va[flat(ne, [i[0], x, y, 0])]
            } else {
                0.0
            }
        })
        .collect();
    assert_eq!(vp, want);
    assert_eq!(get(&u), va);
}

#[test]
fn get_rel_pos_by_hand_and_reference() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F16, 1, 3).unwrap(); // 2*qh - 1 = 3 rows
    set(&a, &[10., 20., 30.]);
    let out = ctx.get_rel_pos(&a, 2, 2).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(out.ty(), Type::F16);
    // (i1, i2) takes row (kh - 1 - i1) + i2: (0,0)->1, (1,0)->0, (0,1)->2, (1,1)->1.
    assert_eq!(get(&out), vec![20., 10., 30., 20.]);

    let (a, va) = filled(&ctx, Type::F16, [4, 9, 1, 1], 190);
    let out = ctx.get_rel_pos(&a, 5, 5).unwrap();
    compute(&ctx, &out, 3);
    let want: Vec<f32> = coords([4, 5, 5, 1]).map(|i| va[(4 - i[1] + i[2]) * 4 + i[0]]).collect();
    assert_eq!(get(&out), want);
    assert_eq!(err(ctx.get_rel_pos(&a, 4, 4)), "getRelPos: a.ne[1]=9 must be 2*qh-1=7");
    // ggml copies bf16 bits into its f16 result; weft does not offer that.
    let bf = ctx.new_tensor_2d(Type::BF16, 4, 9).unwrap();
    assert!(!supported(&ctx.get_rel_pos(&bf, 5, 5).unwrap()));
}

#[test]
fn add_rel_pos_by_hand_and_reference() {
    let ctx = host_ctx();
    let a = ctx.new_tensor_3d(Type::F32, 4, 1, 1).unwrap();
    let pw = ctx.new_tensor_4d(Type::F32, 2, 1, 1, 1).unwrap();
    let ph = ctx.new_tensor_4d(Type::F32, 2, 1, 1, 1).unwrap();
    set(&a, &[0.; 4]);
    set(&pw, &[1., 2.]);
    set(&ph, &[10., 20.]);
    // Row seen as [m][k]: ph[m] + pw[k].
    let out = ctx.add_rel_pos(&a, &pw, &ph, false).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get(&out), vec![11., 12., 21., 22.]);

    // The order of the two additions matters in f32, and ggml's loop adds ph first where
    // m <= k, pw first where m > k. With a = 1, ph = 2^-24, pw = 2^-23:
    // (1 + 2^-24) + 2^-23 = 1 + 2^-23, but (1 + 2^-23) + 2^-24 = 1 + 2^-22 (ties to even).
    set(&a, &[1.; 4]);
    set(&pw, &[2f32.powi(-23); 2]);
    set(&ph, &[2f32.powi(-24); 2]);
    let out = ctx.add_rel_pos(&a, &pw, &ph, false).unwrap();
    compute(&ctx, &out, 1);
    let (lo, hi) = (1.0 + 2f32.powi(-23), 1.0 + 2f32.powi(-22));
    assert_eq!(get(&out), vec![lo, lo, hi, lo]);

    // pw, ph [3, 2, 2, 2]; a [9, 4, 2]; in place too.
    let pne = [3usize, 2, 2, 2];
    let (a, va) = filled(&ctx, Type::F32, [9, 4, 2, 1], 200);
    let (pw, vw) = filled(&ctx, Type::F32, pne, 201);
    let (ph, vh) = filled(&ctx, Type::F32, pne, 202);
    let mut want = va.clone();
    for r in 0..8 {
        for m in 0..3 {
            for k in 0..3 {
                let v = va[r * 9 + m * 3 + k] as f64 + vh[r * 3 + m] as f64 + vw[r * 3 + k] as f64;
                want[r * 9 + m * 3 + k] = v as f32;
            }
        }
    }
    let out = ctx.add_rel_pos(&a, &pw, &ph, false).unwrap();
    compute(&ctx, &out, 3);
    assert_close(&get(&out), &want, 1e-6);
    let inp = ctx.add_rel_pos(&a, &pw, &ph, true).unwrap();
    compute(&ctx, &inp, 2);
    assert_eq!(get(&a), get(&out));
    let e = err(ctx.add_rel_pos(&ctx.new_tensor_3d(Type::F32, 8, 4, 2).unwrap(), &pw, &ph, false));
    assert_eq!(e, "addRelPos: pw.ne[0]^2 must equal a.ne[0]=8");
}

// ---------------------------------------------------------------------------------------
// GET_ROWS, DUP / CPY / CONT

#[test]
fn get_rows_from_every_plain_source_with_3d_and_view_indices() {
    let ctx = host_ctx();
    // test_get_rows: in [n, m, b], rows [r, b] in 0..m, optionally a view of half the rows.
    for ty in [Type::F32, Type::F16, Type::BF16, Type::I32] {
        for b in [1usize, 7] {
            for v in [false, true] {
                let (n, m, r) = (256usize, 5usize, 4usize);
                let (inp, vin) = filled(&ctx, ty, [n, m, b, 1], 210);
                let rows = ctx.new_tensor_2d(Type::I32, r as i64, b as i64).unwrap();
                let idx: Vec<i32> = (0..r * b).map(|k| ((k * 7 + 3) % m) as i32).collect();
                set_i32(&rows, &idx);
                let (rows, rr) =
                    if v { (ctx.view_2d(&rows, 2, b as i64, rows.nb()[1], 0).unwrap(), 2) } else { (rows, r) };
                let out = ctx.get_rows(&inp, &rows).unwrap();
                assert_eq!(out.ty(), if ty == Type::I32 { Type::I32 } else { Type::F32 });
                compute(&ctx, &out, 3);
                let want: Vec<f32> = coords([n, rr, b, 1])
                    .map(|i| vin[flat([n, m, b, 1], [i[0], idx[i[2] * r + i[1]] as usize, i[2], 0])])
                    .collect();
                assert_eq!(get(&out), want, "{ty} b{b} v{v}");
            }
        }
    }
    // i32 rows are copied exactly, even past f32's 24-bit mantissa.
    let a = ctx.new_tensor_2d(Type::I32, 2, 2).unwrap();
    set_i32(&a, &[16_777_217, -16_777_219, 5, 6]);
    let rows = ctx.new_tensor_1d(Type::I32, 2).unwrap();
    set_i32(&rows, &[0, 0]);
    let out = ctx.get_rows(&a, &rows).unwrap();
    compute(&ctx, &out, 1);
    assert_eq!(get_i32(&out), vec![16_777_217, -16_777_219, 16_777_217, -16_777_219]);

    let a = ctx.new_tensor_4d(Type::F32, 4, 5, 2, 1).unwrap();
    let rows3 = ctx.new_tensor_3d(Type::I32, 3, 2, 2).unwrap();
    assert_eq!(err(ctx.get_rows(&a, &rows3)), "getRows: b.ne[2]=2 must not exceed a.ne[3]=1");

    // Indices outside a's rows are errors at compute time, never reads out of bounds.
    let rows2 = ctx.new_tensor_2d(Type::I32, 3, 2).unwrap();
    let out = ctx.get_rows(&a, &rows2).unwrap();
    for (bad, at) in [(5, "b[1,1,0]"), (-1, "b[1,1,0]")] {
        set_i32(&rows2, &[0, 1, 2, 3, bad, 4]);
        let e = try_compute(&ctx, &out, 3).unwrap_err();
        assert_eq!(e.message, format!("getRows: row index {bad} at {at} is outside a.ne[1]=5"));
    }
}

#[test]
fn copies_in_the_suite_types_and_layouts() {
    let ctx = host_ctx();
    // test_dup(i16, [10, 8, 3], permute [1, 2, 0, 3]): dst[j0, j1, j2] = src[j1, j2, j0].
    let (s, vs) = filled(&ctx, Type::I16, [10, 8, 3, 1], 220);
    let p = ctx.permute(&s, [1, 2, 0, 3]).unwrap();
    assert_eq!(p.ne(), [3, 10, 8, 1]);
    let out = ctx.dup(&p).unwrap();
    compute(&ctx, &out, 3);
    let want: Vec<f32> = coords([3, 10, 8, 1]).map(|i| vs[flat([10, 8, 3, 1], [i[1], i[2], i[0], 0])]).collect();
    assert_eq!(get(&out), want);

    // test_cont(bf16, [2, 3, 5, 7]): cont of the transpose.
    let (s, vs) = filled(&ctx, Type::BF16, [2, 3, 5, 7], 221);
    let out = ctx.cont(&ctx.transpose(&s).unwrap()).unwrap();
    compute(&ctx, &out, 3);
    let want: Vec<f32> = coords([3, 2, 5, 7]).map(|i| vs[flat([2, 3, 5, 7], [i[1], i[0], i[2], i[3]])]).collect();
    assert_eq!(get(&out), want);

    // test_cpy(f32 -> bf16 / f16, [256, 2, 3, 4], permute [0, 2, 1, 3]) and f16 -> f32 transposed.
    let (s, vs) = filled(&ctx, Type::F32, [256, 2, 3, 4], 222);
    let p = ctx.permute(&s, [0, 2, 1, 3]).unwrap();
    for ty in [Type::BF16, Type::F16] {
        let dst = ctx.new_tensor(ty, &p.ne()).unwrap();
        let out = ctx.cpy(&p, &dst).unwrap();
        compute(&ctx, &out, 3);
        let want: Vec<f32> =
            coords([256, 3, 2, 4]).map(|i| vs[flat([256, 2, 3, 4], [i[0], i[2], i[1], i[3]])]).collect();
        assert_eq!(get(&dst), rounded(ty, &want), "{ty}");
    }
    let (h, vh) = filled(&ctx, Type::F16, [256, 2, 3, 4], 223);
    let t = ctx.permute(&h, [1, 0, 2, 3]).unwrap();
    let dst = ctx.new_tensor(Type::F32, &t.ne()).unwrap();
    compute(&ctx, &ctx.cpy(&t, &dst).unwrap(), 3);
    let want: Vec<f32> = coords([2, 256, 3, 4]).map(|i| vh[flat([256, 2, 3, 4], [i[1], i[0], i[2], i[3]])]).collect();
    assert_eq!(get(&dst), want);

    // i64 -> i32 goes through integers, not f32.
    let w = ctx.new_tensor_1d(Type::I64, 2).unwrap();
    tensor_set(&w, &[16_777_217i64, -3].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(), 0).unwrap();
    let n = ctx.cast(&w, Type::I32).unwrap();
    compute(&ctx, &n, 1);
    assert_eq!(get_i32(&n), vec![16_777_217, -3]);
}

// ---------------------------------------------------------------------------------------
// Params replaced after construction

#[test]
fn params_replaced_after_construction_are_errors_not_bad_reads() {
    // Tensor::set_op may change an op's params once its shape is fixed; kernels whose
    // reads or writes depend on them check again and refuse.
    let ctx = host_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 2, 3).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 2, 1).unwrap();
    let cat = ctx.concat(&a, &b, 1).unwrap();
    cat.set_op(Op::Concat { dim: 0 }).unwrap();
    assert!(try_compute(&ctx, &cat, 2).unwrap_err().message.starts_with("concat: dim=0 does not match"));

    let big = ctx.new_tensor_1d(Type::F32, 8).unwrap();
    let s = ctx.set_1d(&big, &b, 0, false).unwrap();
    s.set_op(Op::Set { nb1: 8, nb2: 8, nb3: 8, offset: 28, inplace: false }).unwrap();
    let e = try_compute(&ctx, &s, 2).unwrap_err().message;
    assert!(e.starts_with("set: the window") && e.ends_with("reaches past the end of a"), "{e}");

    let p = ctx.win_part(&ctx.new_tensor_3d(Type::F32, 1, 3, 3).unwrap(), 2).unwrap();
    let u = ctx.win_unpart(&p, 3, 3, 2).unwrap();
    u.set_op(Op::WinUnpart { w: 0 }).unwrap();
    assert!(try_compute(&ctx, &u, 2).unwrap_err().message.starts_with("winUnpart: w=0 does not fit"));
    u.set_op(Op::WinUnpart { w: 1 }).unwrap();
    assert!(try_compute(&ctx, &u, 2).unwrap_err().message.starts_with("winUnpart: a [1,2,2,4] has too few windows"));

    let k = ctx.new_tensor_3d(Type::F32, 3, 1, 1).unwrap();
    let ct = ctx.conv_transpose_1d(&k, &b, 1, 0, 1).unwrap();
    ct.set_op(Op::ConvTranspose1d { s0: 2, p0: 0, d0: 1 }).unwrap();
    assert!(try_compute(&ctx, &ct, 2).unwrap_err().message.starts_with("convTranspose1d: s0=2 does not fit"));

    let t = ctx.timestep_embedding(&b, 4, 100).unwrap();
    t.set_op(Op::TimestepEmbedding { dim: 6, max_period: 100 }).unwrap();
    assert!(try_compute(&ctx, &t, 2).unwrap_err().message.starts_with("timestepEmbedding: dim=6 does not fit"));
}
