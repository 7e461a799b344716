#![cfg(feature = "webgpu")]
//! The WebGPU kernels of the convolution, pooling and recurrent ops (IM2COL, IM2COL_BACK,
//! CONV_TRANSPOSE_1D/2D, POOL_1D/2D, POOL_2D_BACK, SSM_CONV, SSM_SCAN, RWKV_WKV) against
//! the CPU backend computing the same graphs, node by node, on every WebGPU device found
//! (none: a note, unless lavapipe is installed or WEFT_REQUIRE_WEBGPU is set). The ops the
//! backend-ops suite has no eval case for (CONV_TRANSPOSE_2D, POOL_1D, the backward ops)
//! are covered here.

mod common;

use common::gpu::{backends, check_vs_cpu, gpu_devices, input, no_alloc_ctx};
use weft::op::{Im2colParams, PoolOp};
use weft::{Context, Tensor, Type};

// ---- harness (as in webgpu.rs) ----

/// Values on a coarse grid, so windows hold ties (max pooling's first-largest rule).
fn coarse(ctx: &Context, ty: Type, ne: &[i64], seed: u64) -> (Tensor, Vec<f32>) {
    let (t, v) = input(ctx, ty, ne, seed);
    (t, v.iter().map(|x| (x * 3.0).round() / 4.0).collect())
}

/// Sums and dot products against the CPU's order (and its f64 sums for f16 kernels).
const TOL: f32 = 1e-5;

fn p2(s: (i32, i32), p: (i32, i32), d: (i32, i32)) -> Im2colParams {
    Im2colParams { s0: s.0, s1: s.1, p0: p.0, p1: p.1, d0: d.0, d1: d.1, is_2d: true }
}

fn p1(s0: i32, p0: i32, d0: i32) -> Im2colParams {
    Im2colParams { s0, s1: 0, p0, p1: 0, d0, d1: 0, is_2d: false }
}

// ---- IM2COL, IM2COL_BACK ----

#[test]
fn im2col_matches_cpu() {
    for gpu in backends() {
        for src in [Type::F32, Type::F16] {
            for dst in [Type::F32, Type::F16] {
                for (s, p, d) in [((1, 1), (1, 1), (1, 1)), ((2, 3), (0, 2), (2, 1))] {
                    let name = format!("im2col 2d {src}->{dst} s{s:?} p{p:?} d{d:?}");
                    check_vs_cpu(&name, gpu.as_ref(), 0.0, |ctx| {
                        let k = ctx.new_tensor(Type::F16, &[3, 2, 3, 4]).expect("kernel");
                        let (b, bv) = input(ctx, src, &[9, 7, 3, 2], 1);
                        let out = ctx.im2col(&k, &b, p2(s, p, d), dst).expect("im2col");
                        (vec![(b, bv)], out)
                    });
                }
                // 1-D, with an odd number of f16 results.
                for (s0, p0, d0) in [(1, 0, 1), (2, 1, 2), (3, 3, 1)] {
                    let name = format!("im2col 1d {src}->{dst} s{s0} p{p0} d{d0}");
                    check_vs_cpu(&name, gpu.as_ref(), 0.0, |ctx| {
                        let k = ctx.new_tensor(Type::F32, &[3, 3, 2]).expect("kernel");
                        let (b, bv) = input(ctx, src, &[11, 3, 3], 2);
                        let out = ctx.im2col(&k, &b, p1(s0, p0, d0), dst).expect("im2col");
                        (vec![(b, bv)], out)
                    });
                }
            }
        }
    }
}

#[test]
fn im2col_of_a_transposed_image() {
    for gpu in backends() {
        check_vs_cpu("im2col 2d of a permuted view", gpu.as_ref(), 0.0, |ctx| {
            let k = ctx.new_tensor(Type::F32, &[2, 2, 3, 1]).expect("kernel");
            let (b, bv) = input(ctx, Type::F32, &[3, 8, 6, 2], 3);
            let bt = ctx.permute(&b, [2, 0, 1, 3]).expect("permute"); // [8, 6, 3, 2]
            let out = ctx.im2col(&k, &bt, p2((1, 2), (1, 0), (1, 1)), Type::F16).expect("im2col");
            (vec![(b, bv)], out)
        });
    }
}

#[test]
fn im2col_back_matches_cpu() {
    for gpu in backends() {
        for (s, p, d) in [((1, 1), (1, 1), (1, 1)), ((2, 3), (0, 2), (2, 1)), ((3, 2), (3, 0), (1, 3))] {
            check_vs_cpu(&format!("im2col_back 2d s{s:?} p{p:?} d{d:?}"), gpu.as_ref(), TOL, |ctx| {
                let k = ctx.new_tensor(Type::F32, &[3, 2, 3, 4]).expect("kernel");
                let x = ctx.new_tensor(Type::F32, &[9, 7, 3, 2]).expect("x");
                let cols = ctx.im2col(&k, &x, p2(s, p, d), Type::F32).expect("im2col");
                let (g, gv) = input(ctx, Type::F32, &cols.ne(), 4);
                let out = ctx.im2col_back(&k, &g, x.ne(), p2(s, p, d)).expect("im2col_back");
                (vec![(g, gv)], out)
            });
        }
        for (s0, p0, d0) in [(1, 0, 1), (2, 1, 2), (3, 3, 1)] {
            check_vs_cpu(&format!("im2col_back 1d s{s0} p{p0} d{d0}"), gpu.as_ref(), TOL, |ctx| {
                let k = ctx.new_tensor(Type::F32, &[3, 3, 2]).expect("kernel");
                let x = ctx.new_tensor(Type::F32, &[11, 3, 3]).expect("x");
                let cols = ctx.im2col(&k, &x, p1(s0, p0, d0), Type::F32).expect("im2col");
                let (g, gv) = input(ctx, Type::F32, &cols.ne(), 5);
                let out = ctx.im2col_back(&k, &g, x.ne(), p1(s0, p0, d0)).expect("im2col_back");
                (vec![(g, gv)], out)
            });
        }
    }
}

// ---- CONV_TRANSPOSE_1D / 2D ----

#[test]
fn conv_transpose_matches_cpu() {
    for gpu in backends() {
        for kty in [Type::F32, Type::F16] {
            for s0 in [1, 2, 3] {
                check_vs_cpu(&format!("conv_transpose_1d {kty} kernel s{s0}"), gpu.as_ref(), TOL, |ctx| {
                    let (a, av) = input(ctx, kty, &[4, 3, 5], 6); // [K, Cout, Cin]
                    let (b, bv) = input(ctx, Type::F32, &[7, 5], 7); // [L, Cin]
                    let out = ctx.conv_transpose_1d(&a, &b, s0, 0, 1).expect("conv_transpose_1d");
                    (vec![(a, av), (b, bv)], out)
                });
            }
            for stride in [1, 2, 3] {
                check_vs_cpu(&format!("conv_transpose_2d {kty} kernel s{stride}"), gpu.as_ref(), TOL, |ctx| {
                    let (a, av) = input(ctx, kty, &[3, 2, 4, 5], 8); // [Kw, Kh, Cout, Cin]
                    let (b, bv) = input(ctx, Type::F32, &[6, 5, 5, 2], 9); // [W, H, Cin, N]
                    let out = ctx.conv_transpose_2d_p0(&a, &b, stride).expect("conv_transpose_2d");
                    (vec![(a, av), (b, bv)], out)
                });
            }
        }
    }
}

// ---- POOL_1D, POOL_2D, POOL_2D_BACK ----

#[test]
fn pools_match_cpu() {
    for gpu in backends() {
        for op in [PoolOp::Avg, PoolOp::Max] {
            for ty in [Type::F32, Type::F16] {
                for (k0, s0, p0) in [(2, 2, 0), (3, 2, 1), (3, 1, 1)] {
                    check_vs_cpu(&format!("pool_1d {op:?} {ty} k{k0} s{s0} p{p0}"), gpu.as_ref(), 1e-6, |ctx| {
                        let (a, av) = coarse(ctx, ty, &[10, 3, 2, 2], 10);
                        let out = ctx.pool_1d(&a, op, k0, s0, p0).expect("pool_1d");
                        (vec![(a, av)], out)
                    });
                }
                for (k, s, p) in
                    [((3, 3), (1, 1), (1.0, 1.0)), ((2, 3), (2, 1), (0.0, 1.0)), ((3, 1), (2, 2), (1.0, 0.0))]
                {
                    let name = format!("pool_2d {op:?} {ty} k{k:?} s{s:?} p{p:?}");
                    check_vs_cpu(&name, gpu.as_ref(), 1e-6, |ctx| {
                        let (a, av) = coarse(ctx, ty, &[10, 9, 3, 2], 11);
                        let out = ctx.pool_2d(&a, op, k.0, k.1, s.0, s.1, p.0, p.1).expect("pool_2d");
                        (vec![(a, av)], out)
                    });
                    // The gradient of that pool: g spread back over x's windows.
                    check_vs_cpu(
                        &format!("pool_2d_back {op:?} {ty} k{k:?} s{s:?} p{p:?}"),
                        gpu.as_ref(),
                        1e-6,
                        |ctx| {
                            let (x, xv) = coarse(ctx, ty, &[10, 9, 3, 2], 12);
                            let pooled = ctx.pool_2d(&x, op, k.0, k.1, s.0, s.1, p.0, p.1).expect("pool_2d");
                            let (g, gv) = coarse(ctx, Type::F32, &pooled.ne(), 13);
                            let out = ctx.pool_2d_back(&g, &x, op, k.0, k.1, s.0, s.1, p.0, p.1).expect("back");
                            (vec![(x, xv), (g, gv)], out)
                        },
                    );
                }
            }
        }
    }
}

// ---- SSM_CONV, SSM_SCAN, RWKV_WKV ----

#[test]
fn recurrent_ops_match_cpu() {
    for gpu in backends() {
        for (d_conv, n_t, n_s) in [(4, 1, 1), (4, 5, 3)] {
            check_vs_cpu(&format!("ssm_conv d_conv {d_conv} n_t {n_t} n_s {n_s}"), gpu.as_ref(), TOL, |ctx| {
                let (sx, sv) = input(ctx, Type::F32, &[d_conv - 1 + n_t, 24, n_s], 14);
                let (c, cv) = input(ctx, Type::F32, &[d_conv, 24], 15);
                let out = ctx.ssm_conv(&sx, &c).expect("ssm_conv");
                (vec![(sx, sv), (c, cv)], out)
            });
        }
        for (d_state, d_inner, n_t, n_s) in [(16, 24, 5, 3), (4, 8, 1, 1), (8, 300, 7, 2)] {
            let name = format!("ssm_scan d_state {d_state} d_inner {d_inner} n_t {n_t} n_s {n_s}");
            check_vs_cpu(&name, gpu.as_ref(), TOL, |ctx| {
                let mut ins = vec![
                    input(ctx, Type::F32, &[d_state, d_inner, n_s], 16),
                    input(ctx, Type::F32, &[d_inner, n_t, n_s], 17),
                    input(ctx, Type::F32, &[d_inner, n_t, n_s], 18),
                    input(ctx, Type::F32, &[d_state, d_inner], 19),
                    input(ctx, Type::F32, &[d_state, n_t, n_s], 20),
                    input(ctx, Type::F32, &[d_state, n_t, n_s], 21),
                ];
                // dt above 20 takes softplus's linear branch.
                ins[2].1[0] = 25.0;
                let t: Vec<Tensor> = ins.iter().map(|(t, _)| t.clone()).collect();
                let out = ctx.ssm_scan(&t[0], &t[1], &t[2], &t[3], &t[4], &t[5]).expect("ssm_scan");
                (ins, out)
            });
        }
        for (h, s, seq_tokens, n_seqs) in [(2, 8, 1, 1), (3, 16, 4, 2), (2, 64, 3, 3)] {
            let name = format!("rwkv_wkv H {h} S {s} tokens {seq_tokens} seqs {n_seqs}");
            check_vs_cpu(&name, gpu.as_ref(), TOL, |ctx| {
                let n = seq_tokens * n_seqs;
                let ins = vec![
                    input(ctx, Type::F32, &[s, 1, h, n], 22),
                    input(ctx, Type::F32, &[1, s, h, n], 23),
                    input(ctx, Type::F32, &[1, s, h, n], 24),
                    input(ctx, Type::F32, &[s, h], 25),
                    input(ctx, Type::F32, &[1, s, h, n], 26),
                    input(ctx, Type::F32, &[s * s * h, n_seqs], 27),
                ];
                let t: Vec<Tensor> = ins.iter().map(|(t, _)| t.clone()).collect();
                let out = ctx.rwkv_wkv(&t[0], &t[1], &t[2], &t[3], &t[4], &t[5]).expect("rwkv_wkv");
                (ins, out)
            });
        }
    }
}

// ---- limits ----

/// A result over one storage binding is refused by supports_op (no kernel here splits
/// bindings), never a wgpu validation error; the same op at a size that fits is taken.
#[test]
fn results_over_one_binding_are_refused() {
    for dev in gpu_devices() {
        let props: std::collections::HashMap<_, _> = dev.properties().into_iter().collect();
        let limit: u64 = props["max_storage_buffer_binding_size"].parse().expect("number");
        let ctx = no_alloc_ctx();
        let k = ctx.new_tensor(Type::F32, &[1, 1, 1, 1]).expect("kernel");
        // A 1x1 im2col copies its input: an input (and result) just over the limit, in f16.
        let halves = (limit / 2 + 1024) as i64;
        let w: i64 = 4096;
        let big = ctx.new_tensor(Type::F16, &[w, (halves + w - 1) / w, 1, 1]).expect("big");
        let small = ctx.new_tensor(Type::F16, &[w, 4, 1, 1]).expect("small");
        let p = p2((1, 1), (0, 0), (1, 1));
        let over = ctx.im2col(&k, &big, p, Type::F16).expect("im2col");
        let under = ctx.im2col(&k, &small, p, Type::F16).expect("im2col");
        assert!(over.nbytes() as u64 > limit);
        assert!(!dev.supports_op(&over), "{}: a result over the binding limit must be refused", dev.name());
        assert!(dev.supports_op(&under));
    }
}
