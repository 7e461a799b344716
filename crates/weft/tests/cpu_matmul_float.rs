//! Float MUL_MAT (f32, f16, bf16 a) on both of its paths, the SIMD row dots (up to 16 b
//! rows) and the packed GEMM (17 or more), against a sum in f64 written out here: odd k
//! (vector tails), k past the GEMM's k block (1024), b past its column block (1024 rows),
//! broadcast over dims 2 and 3, strided b, and the same bits whatever the thread count.

mod common;

use common::*;
use weft::{Tensor, Type};

/// Values as stored in `ty` and read back (what the kernels multiply).
fn rounded(ty: Type, v: &[f32]) -> Vec<f32> {
    weft::types::convert::to_f32(ty, &weft::types::convert::from_f32(ty, v).unwrap()).unwrap()
}

/// |got - want| within f32 summation error of k terms of magnitude <= 1.
fn assert_sums_close(got: &[f32], want: &[f32], k: usize, what: &str) {
    let tol = 4e-7 * k as f32 + 1e-6;
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol, "{what}: element {i}: {g} vs {w} (tol {tol})");
    }
}

fn mul_mat(ty: Type, ne_a: [usize; 4], ne_b: [usize; 4], threads: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let ctx = host_ctx();
    let (va, vb) = (rand_vec(ne_a.iter().product(), seed), rand_vec(ne_b.iter().product(), seed + 1));
    let a = ctx.new_tensor(ty, &ne_a.map(|x| x as i64)).unwrap();
    let b = ctx.new_tensor(Type::F32, &ne_b.map(|x| x as i64)).unwrap();
    set(&a, &va);
    set(&b, &vb);
    let out = ctx.mul_mat(&a, &b).unwrap();
    compute(&ctx, &out, threads);
    // b is rounded to a's type before the products, as in ggml
    (get(&out), naive_mul_mat(&rounded(ty, &va), ne_a, &rounded(ty, &vb), ne_b))
}

#[test]
fn both_paths_match_an_f64_sum_for_every_float_type() {
    let shapes: &[([usize; 4], [usize; 4])] = &[
        ([1, 5, 1, 1], [1, 1, 1, 1]),
        ([17, 9, 1, 1], [17, 3, 1, 1]),
        ([33, 70, 2, 1], [33, 7, 4, 3]),
        ([33, 70, 1, 1], [33, 16, 1, 1]),
        ([33, 70, 1, 1], [33, 17, 1, 1]),
        ([1030, 67, 1, 1], [1030, 18, 1, 1]),
        // more than 1024 b rows: the GEMM's column blocks, each transposing the same a rows
        ([1030, 70, 1, 1], [1030, 1100, 1, 1]),
        ([300, 130, 1, 3], [300, 40, 2, 3]),
        ([64, 600, 1, 1], [64, 1, 1, 1]),
    ];
    for ty in [Type::F32, Type::F16, Type::BF16] {
        for (i, &(ne_a, ne_b)) in shapes.iter().enumerate() {
            let (got, want) = mul_mat(ty, ne_a, ne_b, 2, 10 + i as u64);
            assert_sums_close(&got, &want, ne_a[0], &format!("{ty} a {ne_a:?} b {ne_b:?}"));
        }
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    for ty in [Type::F32, Type::F16, Type::BF16] {
        for (ne_a, ne_b) in [([129, 300, 1, 1], [129, 3, 1, 1]), ([129, 300, 1, 1], [129, 50, 1, 1])] {
            let one = mul_mat(ty, ne_a, ne_b, 1, 7).0;
            for threads in [2, 3] {
                let many = mul_mat(ty, ne_a, ne_b, threads, 7).0;
                let same = one.iter().zip(&many).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{ty} b {ne_b:?}: {threads} threads differ from 1");
            }
        }
    }
}

#[test]
fn strided_b_on_both_paths() {
    let ctx = host_ctx();
    for n in [5usize, 12] {
        let k = 19;
        let a = ctx.new_tensor_2d(Type::F16, k as i64, 6).unwrap();
        let bt = ctx.new_tensor_2d(Type::F32, n as i64, k as i64).unwrap(); // b transposed in memory
        let (va, vbt) = (rand_vec(k * 6, 21), rand_vec(k * n, 22));
        set(&a, &va);
        set(&bt, &vbt);
        let b: Tensor = ctx.transpose(&bt).unwrap(); // [k, n], elements strided
        let out = ctx.mul_mat(&a, &b).unwrap();
        compute(&ctx, &out, 2);
        let mut vb = vec![0f32; k * n];
        for i in 0..n {
            for kk in 0..k {
                vb[i * k + kk] = vbt[kk * n + i];
            }
        }
        let want = naive_mul_mat(&rounded(Type::F16, &va), [k, 6, 1, 1], &rounded(Type::F16, &vb), [k, n, 1, 1]);
        assert_sums_close(&get(&out), &want, k, &format!("n={n}"));
    }
}
