#![cfg(feature = "webgpu")]
//! The WebGPU backend's row and reduction kernels (SUM, SUM_ROWS, MEAN, ARGMAX,
//! COUNT_EQUAL, NORM, GROUP_NORM, RMS_NORM(_BACK), SOFT_MAX_BACK, ARGSORT,
//! CROSS_ENTROPY_LOSS(_BACK), OPT_STEP_ADAMW) against the CPU backend computing the same
//! graphs, on every WebGPU device found (none: a note, unless lavapipe is installed or
//! WEFT_REQUIRE_WEBGPU is set). The helpers are webgpu.rs's.

mod common;

use common::gpu::{backends, check_vs_cpu, check_vs_cpu_n, input, logical, no_alloc_ctx};
use common::set;
use weft::alloc::alloc_ctx_tensors;
use weft::op::SortOrder;
use weft::Type;

/// Reductions in f32 (a tree) against the CPU's f64 sums.
const TOL: f32 = 1e-5;

#[test]
fn sums_and_means_match_cpu() {
    for gpu in backends() {
        let g = gpu.as_ref();
        for ne in [[10i64, 5, 4, 3], [1, 1, 1, 1], [1000, 3, 1, 1], [70000, 1, 1, 1]] {
            check_vs_cpu(&format!("sum {ne:?}"), g, TOL, |ctx| {
                let a = input(ctx, Type::F32, &ne, 1);
                let out = ctx.sum(&a.0).unwrap();
                (vec![a], out)
            });
            check_vs_cpu(&format!("sum_rows {ne:?}"), g, TOL, |ctx| {
                let a = input(ctx, Type::F32, &ne, 2);
                let out = ctx.sum_rows(&a.0).unwrap();
                (vec![a], out)
            });
            check_vs_cpu(&format!("mean {ne:?}"), g, TOL, |ctx| {
                let a = input(ctx, Type::F32, &ne, 3);
                let out = ctx.mean(&a.0).unwrap();
                (vec![a], out)
            });
        }
        // Permuted sources; 16-bit sums rounded to the type (one f16/bf16 ulp of slack).
        check_vs_cpu("sum_rows of a permuted tensor", g, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[7, 6, 5, 4], 4);
            let p = ctx.permute(&a.0, [2, 0, 3, 1]).unwrap();
            (vec![a], ctx.sum_rows(&p).unwrap())
        });
        for (ty, tol) in [(Type::F32, TOL), (Type::F16, 1e-3), (Type::BF16, 8e-3)] {
            check_vs_cpu(&format!("sum {ty:?} transposed"), g, tol, |ctx| {
                let a = input(ctx, ty, &[33, 17, 3, 1], 5);
                let t = ctx.transpose(&a.0).unwrap();
                (vec![a], ctx.sum(&t).unwrap())
            });
        }
    }
}

#[test]
fn sums_by_hand() {
    for gpu in backends() {
        let ctx = no_alloc_ctx();
        let h = ctx.new_tensor_1d(Type::F16, 6).unwrap();
        let b = ctx.new_tensor_1d(Type::BF16, 3).unwrap();
        let (sh, sb) = (ctx.sum(&h).unwrap(), ctx.sum(&b).unwrap());
        let x = ctx.new_tensor_2d(Type::F32, 3, 2).unwrap();
        let (rows, means) = (ctx.sum_rows(&x).unwrap(), ctx.mean(&x).unwrap());
        let mut g = ctx.new_graph().unwrap();
        for t in [&sh, &sb, &rows, &means] {
            g.build_forward_expand(t).unwrap();
        }
        let _bufs = alloc_ctx_tensors(&ctx, gpu.as_ref()).unwrap();
        set(&h, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.5]);
        set(&b, &[256.0, 1.0, 1.0]);
        set(&x, &[1.0, 2.0, 3.0, -4.0, 0.5, 0.5]);
        gpu.graph_compute(&g).unwrap();
        assert_eq!(logical(&sh), vec![21.5]);
        // 258 rounds to 258 in bf16 (8 significant bits: 256, 258, 260 ...).
        assert_eq!(logical(&sb), vec![258.0]);
        assert_eq!(logical(&rows), vec![6.0, -3.0]);
        assert_eq!(logical(&means), vec![2.0, -1.0]);
    }
}

#[test]
fn argmax_and_count_equal_match_cpu() {
    for gpu in backends() {
        let g = gpu.as_ref();
        for (ty, ne) in [(Type::F32, [10i64, 100]), (Type::F32, [3000, 5]), (Type::F16, [33, 9]), (Type::BF16, [64, 4])]
        {
            check_vs_cpu(&format!("argmax {ty:?} {ne:?}"), g, 0.0, |ctx| {
                let a = input(ctx, ty, &ne, 6);
                (vec![a.clone()], ctx.argmax(&a.0).unwrap())
            });
        }
        // Ties (the last maximum), -inf rows, and NaN (ggml lets it reset the running max).
        let inf = f32::INFINITY;
        let rows: [[f32; 6]; 7] = [
            [1.0, 3.0, 2.0, 3.0, 0.0, -1.0],
            [-inf, -inf, -inf, -inf, -inf, -inf],
            [f32::NAN, 1.0, 0.5, 2.0, 2.0, 0.0],
            [5.0, f32::NAN, 1.0, 0.5, 0.0, 0.0],
            [5.0, 1.0, 0.5, 0.0, 0.0, f32::NAN],
            [f32::NAN; 6],
            [0.0, -0.0, 0.0, -0.0, -1.0, -2.0],
        ];
        check_vs_cpu("argmax ties, -inf, NaN", g, 0.0, |ctx| {
            let a = ctx.new_tensor_2d(Type::F32, 6, 7).unwrap();
            (vec![(a.clone(), rows.concat())], ctx.argmax(&a).unwrap())
        });
        // Long rows: NaN inside a row (the run after it decides), trailing NaN (the run
        // before decides), the maximum before the NaN, and an all-NaN row; ties of the maximum.
        check_vs_cpu("argmax long rows with NaN", g, 0.0, |ctx| {
            let (a, mut v) = input(ctx, Type::F32, &[3000, 5], 13);
            v[1000] = f32::NAN;
            v[3000 + 2999] = f32::NAN;
            v[3000 + 2998] = f32::NAN;
            v[6000 + 10] = 5.0;
            v[6000 + 2000] = f32::NAN;
            v[9000..12000].fill(f32::NAN);
            v[12000 + 7] = 2.0;
            v[12000 + 2500] = 2.0;
            (vec![(a.clone(), v)], ctx.argmax(&a).unwrap())
        });
        check_vs_cpu("count_equal of argmaxes", g, 0.0, |ctx| {
            let a = input(ctx, Type::F32, &[4, 500], 7);
            let b = input(ctx, Type::F32, &[4, 500], 8);
            let out = ctx.count_equal(&ctx.argmax(&a.0).unwrap(), &ctx.argmax(&b.0).unwrap()).unwrap();
            (vec![a, b], out)
        });
        check_vs_cpu("count_equal permuted i32", g, 0.0, |ctx| {
            let a = ctx.new_tensor(Type::I32, &[5, 4, 3, 2]).unwrap();
            let b = ctx.new_tensor(Type::I32, &[4, 5, 3, 2]).unwrap();
            let va: Vec<f32> = (0..120).map(|i| (i % 7) as f32).collect();
            let vb: Vec<f32> = (0..120).map(|i| (i % 5) as f32).collect();
            let bt = ctx.transpose(&b).unwrap();
            let out = ctx.count_equal(&a, &bt).unwrap();
            (vec![(a, va), (b, vb)], out)
        });
    }
}

#[test]
fn argsort_matches_cpu() {
    for gpu in backends() {
        let g = gpu.as_ref();
        for order in [SortOrder::Asc, SortOrder::Desc] {
            // Rows padded to a power of two, up to the longest taken.
            for ne in [[8i64, 1, 1, 1], [1, 3, 1, 1], [60, 10, 10, 2], [256, 3, 1, 1]] {
                check_vs_cpu(&format!("argsort {order:?} {ne:?}"), g, 0.0, |ctx| {
                    let a = input(ctx, Type::F32, &ne, 9);
                    (vec![a.clone()], ctx.argsort(&a.0, order).unwrap())
                });
            }
            // Ties and NaN: ggml's exchange sort's order, replayed.
            for n in [6i64, 200, 256] {
                check_vs_cpu(&format!("argsort {order:?} ties, NaN, n={n}"), g, 0.0, |ctx| {
                    let a = ctx.new_tensor_2d(Type::F32, n, 3).unwrap();
                    let mut v: Vec<f32> = (0..3 * n).map(|i| ((i * 7) % 5) as f32).collect();
                    v[(n + 3) as usize] = f32::NAN;
                    (vec![(a.clone(), v)], ctx.argsort(&a, order).unwrap())
                });
            }
            check_vs_cpu(&format!("argsort {order:?} f16 permuted"), g, 0.0, |ctx| {
                let a = ctx.new_tensor(Type::F16, &[40, 30, 1, 1]).unwrap();
                // Distinct f16 values.
                let v: Vec<f32> = (0..1200).map(|i| ((i * 37) % 1200) as f32 / 8.0 - 70.0).collect();
                let t = ctx.transpose(&a).unwrap();
                (vec![(a, v)], ctx.argsort(&t, order).unwrap())
            });
        }
    }
}

#[test]
fn norms_and_their_gradients_match_cpu() {
    for gpu in backends() {
        let g = gpu.as_ref();
        for eps in [1e-6f32, 1e-5, 1e-3, 1e-1] {
            check_vs_cpu(&format!("norm eps {eps}"), g, TOL, |ctx| {
                let a = input(ctx, Type::F32, &[64, 5, 4, 3], 10);
                (vec![a.clone()], ctx.norm(&a.0, eps, false).unwrap())
            });
            check_vs_cpu(&format!("rms_norm eps {eps}"), g, TOL, |ctx| {
                let a = input(ctx, Type::F32, &[64, 5, 4, 3], 11);
                (vec![a.clone()], ctx.rms_norm(&a.0, eps, false).unwrap())
            });
        }
        check_vs_cpu("norm in place, long rows", g, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[5000, 3, 1, 1], 12);
            (vec![a.clone()], ctx.norm(&a.0, 1e-5, true).unwrap())
        });
        for (ne, groups) in [([64i64, 64, 320, 1], 32), ([6, 5, 7, 2], 3), ([3, 4, 4, 2], 3), ([9, 2, 5, 1], 1)] {
            check_vs_cpu(&format!("group_norm {ne:?} / {groups}"), g, TOL, |ctx| {
                let a = input(ctx, Type::F32, &ne, 13);
                (vec![a.clone()], ctx.group_norm(&a.0, groups, 1e-6, false).unwrap())
            });
        }
        check_vs_cpu("group_norm in place", g, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[10, 7, 9, 2], 14);
            (vec![a.clone()], ctx.group_norm(&a.0, 4, 1e-5, true).unwrap())
        });
        for eps in [1e-6f32, 1e-1] {
            check_vs_cpu(&format!("rms_norm_back eps {eps}"), g, TOL, |ctx| {
                let x = input(ctx, Type::F32, &[64, 5, 4, 3], 15);
                let dz = input(ctx, Type::F32, &[64, 5, 4, 3], 16);
                let out = ctx.rms_norm_back(&x.0, &dz.0, eps).unwrap();
                (vec![x, dz], out)
            });
        }
        for inplace in [false, true] {
            check_vs_cpu(&format!("soft_max_back inplace={inplace}"), g, TOL, |ctx| {
                let dy = input(ctx, Type::F32, &[33, 7, 3, 1], 17);
                let x = input(ctx, Type::F32, &[33, 7, 3, 1], 18);
                let y = ctx.soft_max(&x.0).unwrap();
                let out = ctx.soft_max_back(&dy.0, &y, inplace).unwrap();
                (vec![dy, x], out)
            });
        }
    }
}

#[test]
fn soft_max_with_masks_and_alibi_matches_cpu() {
    for gpu in backends() {
        let g = gpu.as_ref();
        for mask_ty in [None, Some(Type::F32), Some(Type::F16)] {
            for (scale, max_bias) in [(1.0f32, 0.0f32), (0.1, 8.0)] {
                if mask_ty.is_none() && max_bias > 0.0 {
                    continue;
                }
                for ne in [[16i64, 16, 1, 1], [1023, 15, 1, 1], [32, 2, 32, 1], [17, 3, 6, 2]] {
                    check_vs_cpu(&format!("soft_max {mask_ty:?} {scale} {max_bias} {ne:?}"), g, TOL, |ctx| {
                        let a = input(ctx, Type::F32, &ne, 19);
                        let mut ins = vec![a.clone()];
                        // A mask with more rows than a (broadcast by row index).
                        let mask = mask_ty.map(|ty| {
                            let m = input(ctx, ty, &[ne[0], ne[1] + 3], 20);
                            ins.push(m.clone());
                            m.0
                        });
                        let out = ctx.soft_max_ext(&a.0, mask.as_ref(), scale, max_bias).unwrap();
                        (ins, out)
                    });
                }
            }
        }
    }
}

#[test]
fn cross_entropy_loss_and_its_gradient_match_cpu() {
    for gpu in backends() {
        let g = gpu.as_ref();
        for ne in [[10i64, 5, 4, 3], [1000, 7, 1, 1], [1, 1, 1, 1]] {
            check_vs_cpu(&format!("cross_entropy_loss {ne:?}"), g, TOL, |ctx| {
                let (a, va) = input(ctx, Type::F32, &ne, 21);
                let labels = input(ctx, Type::F32, &ne, 22);
                let b = ctx.soft_max(&labels.0).unwrap();
                let va: Vec<f32> = va.iter().map(|x| x * 100.0).collect();
                let out = ctx.cross_entropy_loss(&a, &b).unwrap();
                (vec![(a, va), labels], out)
            });
            check_vs_cpu(&format!("cross_entropy_loss_back {ne:?}"), g, TOL, |ctx| {
                let a = input(ctx, Type::F32, &ne, 23);
                let labels = input(ctx, Type::F32, &ne, 24);
                let b = ctx.soft_max(&labels.0).unwrap();
                let c = ctx.new_tensor_1d(Type::F32, 1).unwrap();
                let out = ctx.cross_entropy_loss_back(&a.0, &b, &c).unwrap();
                (vec![a, labels, (c, vec![0.75])], out)
            });
        }
    }
}

#[test]
fn adamw_steps_match_cpu() {
    for gpu in backends() {
        for wd in [0.0f32, 1e-2] {
            // Three computations: three steps (the iteration moves on with each), the
            // parameter and both moments compared after them.
            check_vs_cpu_n(&format!("opt_step_adamw wd {wd}"), gpu.as_ref(), 1e-6, 3, |ctx| {
                let a = input(ctx, Type::F32, &[10, 5, 4, 3], 25);
                a.0.set_param();
                let grad = input(ctx, Type::F32, &[10, 5, 4, 3], 26);
                let out = ctx.opt_step_adamw(&a.0, &grad.0, 1e-3, 0.9, 0.999, 1e-8, wd).unwrap();
                let m = out.src(2).unwrap().clone();
                let v = out.src(3).unwrap().clone();
                let n = 600;
                (vec![a, grad, (m, vec![0.0; n]), (v, vec![0.0; n])], out)
            });
        }
    }
}

#[test]
fn tensors_over_one_binding_are_refused() {
    for gpu in backends() {
        let ctx = no_alloc_ctx();
        let max: usize = gpu
            .device()
            .properties()
            .into_iter()
            .find(|(k, _)| k == "max_storage_buffer_binding_size")
            .and_then(|(_, v)| v.parse().ok())
            .expect("max_storage_buffer_binding_size");
        // One f32 row more than a binding holds (not allocated: judged by size).
        let n0 = 1024i64;
        let rows = (max / (4 * n0 as usize)) as i64 + 1;
        let big = ctx.new_tensor_2d(Type::F32, n0, rows).unwrap();
        let small = ctx.new_tensor_2d(Type::F32, n0, 2).unwrap();
        let ops = [
            ctx.sum(&big).unwrap(),
            ctx.sum_rows(&big).unwrap(),
            ctx.argmax(&big).unwrap(),
            ctx.argsort(&big, SortOrder::Asc).unwrap(),
            ctx.norm(&big, 1e-5, false).unwrap(),
            ctx.group_norm(&big, 1, 1e-5, false).unwrap(),
        ];
        for t in &ops {
            assert!(!gpu.supports_op(t), "{} over {max} bytes must be refused", t.op().name());
        }
        assert!(gpu.supports_op(&ctx.sum_rows(&small).unwrap()));
        assert!(gpu.supports_op(&ctx.sum(&small).unwrap()));
        // lavapipe ends an invocation's loops after 65535 iterations: SUM (one workgroup of
        // 256) gave a wrong total over 17.5M elements there, so it is refused; 16M runs.
        let prop = |key: &str| gpu.device().properties().into_iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let limited = prop("loop_limit").expect("loop_limit") != "none";
        let sum = |n: i64| ctx.sum(&ctx.new_tensor_1d(Type::F32, n).unwrap()).unwrap();
        assert_eq!(gpu.supports_op(&sum(17_500_000)), !limited);
        assert!(gpu.supports_op(&sum(16_000_000)));
        // ARGSORT's exchange-sort replay (ties, NaN) runs in one invocation: rows up to 256.
        let row = |n: i64| ctx.new_tensor_2d(Type::F32, n, 2).unwrap();
        assert!(gpu.supports_op(&ctx.argsort(&row(256), SortOrder::Desc).unwrap()));
        assert!(!gpu.supports_op(&ctx.argsort(&row(257), SortOrder::Desc).unwrap()));
    }
}
