#![cfg(feature = "webgpu")]
//! The WebGPU backend's elementwise kernels (elementwise.wgsl, set.wgsl) against the CPU
//! backend: every map, broadcasting binaries in f16/bf16, 16-bit results written a word at
//! a time at odd element offsets, REPEAT/DIAG bit copies, REPEAT_BACK, and SET/ACC windows
//! (strides in any order; overlapping ones refused). Runs on every WebGPU device found.

mod common;

use common::gpu::{backends, check_vs_cpu, no_alloc_ctx};
use weft::op::UnaryOp;
use weft::{Context, Tensor, Type};

fn input(ctx: &Context, ty: Type, ne: &[i64], seed: u64, scale: f32) -> (Tensor, Vec<f32>) {
    let (t, v) = common::gpu::input(ctx, ty, ne, seed);
    (t, v.into_iter().map(|x| x * scale).collect())
}

/// One IEEE operation, or a transcendental function (WGSL allows a few ulps).
const TOL: f32 = 1e-5;

#[test]
fn maps_match_cpu() {
    type Map = Box<dyn Fn(&Context, &Tensor) -> weft::Result<Tensor>>;
    let mut maps: Vec<(String, Map, f32, f32)> = Vec::new();
    let mut add = |name: &str, f: Map, range: f32, tol: f32| maps.push((name.to_string(), f, range, tol));
    for &op in UnaryOp::ALL {
        // GELU and GELU_QUICK come out of f16 tables: one f16 step apart at most.
        let tol = if matches!(op, UnaryOp::Gelu | UnaryOp::GeluQuick) { 1e-3 } else { TOL };
        add(op.name(), Box::new(move |c: &Context, a: &Tensor| c.unary(a, op, false)), 12.0, tol);
    }
    add("sqr", Box::new(|c: &Context, a: &Tensor| c.sqr(a)), 3.0, TOL);
    add("sqrt", Box::new(|c: &Context, a: &Tensor| c.sqrt(&c.abs(a)?)), 3.0, TOL);
    add("log", Box::new(|c: &Context, a: &Tensor| c.log(&c.abs(a)?)), 3.0, TOL);
    add("sin", Box::new(|c: &Context, a: &Tensor| c.sin(a)), 6.5, TOL);
    add("cos", Box::new(|c: &Context, a: &Tensor| c.cos(a)), 6.5, TOL);
    add("clamp", Box::new(|c: &Context, a: &Tensor| c.clamp(a, -0.5, 0.25)), 1.0, 0.0);
    add("leaky_relu", Box::new(|c: &Context, a: &Tensor| c.leaky_relu(a, 0.1, false)), 1.0, TOL);
    add("scale", Box::new(|c: &Context, a: &Tensor| c.scale(a, -2.5)), 1.0, 0.0);
    for gpu in backends() {
        for (name, f, range, tol) in &maps {
            check_vs_cpu(&format!("{name} of a view with row gaps"), gpu.as_ref(), *tol, |ctx| {
                let base = input(ctx, Type::F32, &[7 * 7 * 3 + 4], 1, *range);
                // Rows of 5 at a stride of 7, from element 2: non-contiguous, odd offset.
                let a = ctx.view_3d(&base.0, 5, 7, 3, 4 * 7, 4 * 7 * 7, 4 * 2).expect("view");
                let out = f(ctx, &a).expect("op");
                (vec![base], out)
            });
        }
    }
}

#[test]
fn binaries_in_every_float_type_match_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        for ta in [Type::F32, Type::F16, Type::BF16] {
            for tb in [Type::F32, Type::F16, Type::BF16] {
                for (op, f) in [
                    ("add", Context::add as fn(&Context, &Tensor, &Tensor) -> weft::Result<Tensor>),
                    ("sub", Context::sub),
                    ("mul", Context::mul),
                    ("div", Context::div),
                ] {
                    check_vs_cpu(&format!("{op} {ta} x {tb} broadcast"), gpu, TOL, |ctx| {
                        let a = input(ctx, ta, &[6, 4, 3, 2], 2, 2.0);
                        let (b, vb) = input(ctx, tb, &[3, 2, 1, 2], 3, 1.0);
                        let vb = vb.iter().map(|x| x + 2.0).collect();
                        let out = f(ctx, &a.0, &b).expect("op");
                        (vec![a, (b, vb)], out)
                    });
                }
            }
        }
        // An f16 result at an odd element offset, in place: the halves around it stay.
        check_vs_cpu("mul f16 in place at an odd offset", gpu, TOL, |ctx| {
            let base = input(ctx, Type::F16, &[21], 4, 3.0);
            let a = ctx.view_1d(&base.0, 9, 2 * 3).expect("view");
            let b = input(ctx, Type::F32, &[1], 5, 1.0);
            let out = ctx.mul_inplace(&a, &b.0).expect("mul");
            (vec![base, b], out)
        });
        check_vs_cpu("add1 f32", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[10, 5, 4, 3], 6, 1.0);
            let b = input(ctx, Type::F32, &[1], 7, 1.0);
            let out = ctx.add1(&a.0, &b.0).expect("add1");
            (vec![a, b], out)
        });
        check_vs_cpu("add1 bf16 + f32", gpu, TOL, |ctx| {
            let a = input(ctx, Type::BF16, &[9, 3], 8, 1.0);
            let b = input(ctx, Type::F32, &[1], 9, 1.0);
            let out = ctx.add1(&a.0, &b.0).expect("add1");
            (vec![a, b], out)
        });
        check_vs_cpu("silu_back", gpu, TOL, |ctx| {
            let x = input(ctx, Type::F32, &[10, 5, 3], 10, 8.0);
            let dy = input(ctx, Type::F32, &[10, 5, 3], 11, 1.0);
            let out = ctx.silu_back(&x.0, &dy.0).expect("silu_back");
            (vec![x, dy], out)
        });
    }
}

#[test]
fn layouts_match_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        for ty in [Type::F32, Type::I32, Type::F16, Type::BF16, Type::I16] {
            check_vs_cpu(&format!("repeat {ty}"), gpu, 0.0, |ctx| {
                let a = input(ctx, ty, &[5, 1, 3, 1], 12, 100.0);
                let like = ctx.new_tensor(ty, &[15, 2, 3, 3]).expect("t");
                let out = ctx.repeat(&a.0, &like).expect("repeat");
                (vec![a], out)
            });
            check_vs_cpu(&format!("diag {ty}"), gpu, 0.0, |ctx| {
                let a = input(ctx, ty, &[7, 1, 2, 1], 13, 100.0);
                let out = ctx.diag(&a.0).expect("diag");
                (vec![a], out)
            });
        }
        for ty in [Type::F32, Type::F16, Type::BF16] {
            check_vs_cpu(&format!("diag_mask_inf {ty}"), gpu, 0.0, |ctx| {
                let a = input(ctx, ty, &[9, 7, 3], 14, 1.0);
                let out = ctx.diag_mask_inf(&a.0, 2, false).expect("mask");
                (vec![a], out)
            });
            check_vs_cpu(&format!("diag_mask_zero {ty} in place"), gpu, 0.0, |ctx| {
                let a = input(ctx, ty, &[9, 7, 3], 15, 1.0);
                let out = ctx.diag_mask_zero(&a.0, 0, true).expect("mask");
                (vec![a], out)
            });
        }
        check_vs_cpu("repeat_back", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[6, 4, 6, 2], 16, 1.0);
            let like = ctx.new_tensor(Type::F32, &[3, 2, 3, 1]).expect("t");
            let out = ctx.repeat_back(&a.0, &like).expect("repeat_back");
            (vec![a], out)
        });
    }
}

#[test]
fn set_and_acc_windows_match_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        // The suite's ACC: b's rows one row into a.
        check_vs_cpu("acc [256,16] into [256,17]", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[256, 17], 17, 1.0);
            let b = input(ctx, Type::F32, &[256, 16], 18, 1.0);
            let nb = a.0.nb();
            let out = ctx.acc(&a.0, &b.0, nb[1], nb[2], nb[3], b.0.nb()[1], false).expect("acc");
            (vec![a, b], out)
        });
        // A window whose dims step in another order than b's (b's dim 1 steps a's planes,
        // its dim 2 a's rows), at an element offset, in place, from a permuted b.
        for (what, ty) in [("set", Type::F32), ("set", Type::I32), ("acc", Type::F32)] {
            check_vs_cpu(&format!("{what} {ty} window with permuted strides, in place"), gpu, TOL, |ctx| {
                let a = input(ctx, ty, &[8, 6, 4], 19, 50.0);
                let bsrc = input(ctx, ty, &[3, 5, 2], 20, 50.0);
                // b: [3, 2, 5], its dims 1 and 2 swapped.
                let b = ctx.permute(&bsrc.0, [0, 2, 1, 3]).expect("permute");
                let es = ty.type_size();
                let (nb1, nb2, nb3, off) = (8 * 6 * es, 8 * es, 8 * 6 * 4 * es, (8 + 1) * es);
                let out = if what == "set" {
                    ctx.set(&a.0, &b, nb1, nb2, nb3, off, true)
                } else {
                    ctx.acc(&a.0, &b, nb1, nb2, nb3, off, true)
                }
                .expect("window");
                (vec![a, bsrc], out)
            });
        }
        // Rows of the window that overlap: ggml's result depends on its write order.
        let ctx = no_alloc_ctx();
        let a = ctx.new_tensor(Type::F32, &[16, 4]).expect("t");
        let b = ctx.new_tensor(Type::F32, &[4, 3]).expect("t");
        let overlapping = ctx.acc(&a, &b, 4 * 2, a.nb()[2], a.nb()[3], 0, false).expect("acc");
        assert!(!gpu.supports_op(&overlapping));
    }
}
