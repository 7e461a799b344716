#![cfg(feature = "webgpu")]
//! The WebGPU kernels of ROPE / ROPE_BACK, the placing layout ops (CONCAT, PAD, UPSCALE,
//! WIN_PART, WIN_UNPART, GET_REL_POS), ARANGE, TIMESTEP_EMBEDDING and ADD_REL_POS against
//! the CPU backend computing the same graphs (every node compared elementwise), on every
//! WebGPU device found. With none, tests print a note and pass, unless a lavapipe driver is
//! installed or WEFT_REQUIRE_WEBGPU is set. (Harness helpers copied from webgpu.rs.)

mod common;

use common::gpu::{backends, check_vs_cpu, gpu_devices, input, no_alloc_ctx};
use weft::op::RopeParams;
use weft::{Context, Tensor, Type};

// ---- harness ----

/// Integer-valued inputs (for i8/i32/i64 data and positions): 0..m.
fn ints(ctx: &Context, ty: Type, ne: &[i64], m: u64, seed: u64) -> (Tensor, Vec<f32>) {
    let (t, v) = input(ctx, ty, ne, seed);
    let v = v.iter().map(|x| ((x + 1.0) * 0.5 * m as f32).floor().min(m as f32 - 1.0)).collect();
    (t, v)
}

/// A view of shape `ne` into a tensor grown by `grow` per dim (the suite's non-contiguous
/// inputs): returns the base tensor with its values, and the view.
fn grown(ctx: &Context, ty: Type, ne: [i64; 4], grow: [i64; 4], seed: u64) -> ((Tensor, Vec<f32>), Tensor) {
    let big: Vec<i64> = (0..4).map(|i| ne[i] * grow[i]).collect();
    let base = input(ctx, ty, &big, seed);
    let nb = base.0.nb();
    let v = ctx.view_4d(&base.0, ne[0], ne[1], ne[2], ne[3], nb[1], nb[2], nb[3], 0).expect("view");
    (base, v)
}

// ---- ROPE / ROPE_BACK ----

fn rope_params(n_dims: i32, mode: i32, fs: f32, ef: f32, af: f32, n_ctx_orig: i32) -> RopeParams {
    RopeParams {
        n_dims,
        mode,
        n_ctx_orig,
        freq_base: 10000.0,
        freq_scale: fs,
        ext_factor: ef,
        attn_factor: af,
        beta_fast: 32.0,
        beta_slow: 1.0,
    }
}

#[test]
fn rope_matches_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        for ty in [Type::F32, Type::F16] {
            // f16 results may round the other way after a last-bit difference in f32.
            // lavapipe's cos/sin differ from libm's in the last bits: 1e-4 relative (the suite's
            // NMSE bound 1e-7 holds).
            let tol = if ty == Type::F16 { 2e-3 } else { 1e-4 };
            for (ne, n_dims, mode) in
                [([128, 4, 3, 1], 128, 0), ([64, 5, 3, 2], 64, 2), ([80, 3, 4, 1], 20, 2), ([10, 3, 2, 1], 6, 0)]
            {
                for (fs, ef, af, n_ctx_orig) in
                    [(1.0, 0.0, 1.0, 0), (1.4245, 0.7465, 1.4245, 0), (0.25, 1.0, 1.0, 4096)]
                {
                    for ff in [false, true] {
                        let p = rope_params(n_dims, mode, fs, ef, af, n_ctx_orig);
                        let name = format!("rope {ty} {ne:?} n_dims {n_dims} mode {mode} fs {fs} ef {ef} ff {ff}");
                        check_vs_cpu(&name, gpu, tol, |ctx| {
                            let a = input(ctx, ty, &ne, 1);
                            let pos = ints(ctx, Type::I32, &[ne[2]], 512, 2);
                            let f = ff.then(|| {
                                let (t, v) = input(ctx, Type::F32, &[(n_dims / 2) as i64], 3);
                                (t, v.iter().map(|x| 1.0 + 0.1 * x).collect::<Vec<_>>())
                            });
                            let out = ctx.rope_ext(&a.0, &pos.0, f.as_ref().map(|f| &f.0), p, false).expect("rope");
                            let back = ctx.rope_back(&out, &pos.0, f.as_ref().map(|f| &f.0), p).expect("rope_back");
                            let mut ins = vec![a, pos];
                            ins.extend(f);
                            (ins, back)
                        });
                    }
                }
            }
            // A non-contiguous source (the suite's v=1), and in place.
            let p = rope_params(32, 2, 1.0, 0.0, 1.0, 0);
            check_vs_cpu(&format!("rope {ty} view of a grown tensor"), gpu, tol, |ctx| {
                let (base, a) = grown(ctx, ty, [32, 5, 3, 1], [2, 4, 3, 1], 4);
                let pos = ints(ctx, Type::I32, &[3], 512, 5);
                let out = ctx.rope_ext(&a, &pos.0, None, p, false).expect("rope");
                (vec![base, pos], out)
            });
            let p = rope_params(16, 0, 1.0, 0.0, 1.0, 0);
            check_vs_cpu(&format!("rope {ty} in place, odd rows"), gpu, tol, |ctx| {
                let a = input(ctx, ty, &[17, 3, 2], 6);
                let pos = ints(ctx, Type::I32, &[2], 512, 7);
                let out = ctx.rope_ext(&a.0, &pos.0, None, p, true).expect("rope");
                (vec![a, pos], out)
            });
        }
    }
}

// ---- layout ops ----

#[test]
fn placing_ops_match_cpu_bit_for_bit() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        for ty in [Type::F32, Type::I32, Type::F16, Type::BF16, Type::I8, Type::I16, Type::I64] {
            let int = !matches!(ty, Type::F32 | Type::F16 | Type::BF16);
            let make = |ctx: &Context, ne: &[i64], seed: u64| {
                if int {
                    ints(ctx, ty, ne, 100, seed)
                } else {
                    input(ctx, ty, ne, seed)
                }
            };
            for dim in 0..4 {
                check_vs_cpu(&format!("concat {ty} dim {dim}, non-contiguous b"), gpu, 0.0, |ctx| {
                    let a = make(ctx, &[5, 4, 3, 2], 1);
                    let mut nb = [5, 4, 3, 2];
                    nb[dim] = 3;
                    let (b_base, b) = grown(ctx, ty, nb, [3, 2, 4, 1], 2);
                    let v = b_base.1.iter().map(|x| if int { ((x + 1.0) * 50.0).floor() } else { *x }).collect();
                    let b_base = (b_base.0, v);
                    let out = ctx.concat(&a.0, &b, dim as i32).expect("concat");
                    (vec![a, b_base], out)
                });
            }
            check_vs_cpu(&format!("pad {ty}"), gpu, 0.0, |ctx| {
                let a = make(ctx, &[7, 5, 2, 1], 3);
                let out = ctx.pad(&a.0, 1, 2, 1, 0).expect("pad");
                (vec![a], out)
            });
            check_vs_cpu(&format!("upscale {ty} x2, transposed a"), gpu, 0.0, |ctx| {
                let a = make(ctx, &[6, 5, 3, 1], 4);
                let at = ctx.transpose(&a.0).expect("transpose");
                let out = ctx.upscale(&at, 2).expect("upscale");
                (vec![a], out)
            });
            check_vs_cpu(&format!("upscale_ext {ty}"), gpu, 0.0, |ctx| {
                let a = make(ctx, &[2, 5, 7, 11], 5);
                let out = ctx.upscale_ext(&a.0, 5, 7, 11, 13).expect("upscale_ext");
                (vec![a], out)
            });
        }
        // WIN_PART / WIN_UNPART (f32), with padding windows, and back.
        for (c, w0, h0, w) in [(3, 10, 7, 4), (2, 8, 8, 4), (5, 3, 9, 2)] {
            check_vs_cpu(&format!("win_part/unpart [{c},{w0},{h0}] w {w}"), gpu, 0.0, |ctx| {
                let a = input(ctx, Type::F32, &[c, w0, h0, 1], 6);
                let parts = ctx.win_part(&a.0, w).expect("win_part");
                let back = ctx.win_unpart(&parts, w0 as i32, h0 as i32, w).expect("win_unpart");
                (vec![a], back)
            });
        }
        // GET_REL_POS (f16).
        for qh in [1, 4, 7] {
            check_vs_cpu(&format!("get_rel_pos qh {qh}"), gpu, 0.0, |ctx| {
                let a = input(ctx, Type::F16, &[5, 2 * qh - 1], 7);
                let out = ctx.get_rel_pos(&a.0, qh as i32, qh as i32).expect("get_rel_pos");
                (vec![a], out)
            });
        }
    }
}

// ---- generated values ----

#[test]
fn arange_and_timestep_embedding_match_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        for (start, stop, step) in [(0.0, 10.0, 1.0), (-3.5, 100.25, 0.37), (1.0, 2.0, 0.001)] {
            check_vs_cpu(&format!("arange {start}..{stop} step {step}"), gpu, 1e-6, |ctx| {
                (vec![], ctx.arange(start, stop, step).expect("arange"))
            });
        }
        for ty in [Type::F32, Type::F16, Type::BF16] {
            for (n, dim, max_period) in [(2, 320, 10000), (5, 7, 100), (3, 1, 10)] {
                check_vs_cpu(&format!("timestep_embedding {ty} n {n} dim {dim}"), gpu, 2e-5, |ctx| {
                    let t = input(ctx, ty, &[n], 8);
                    let t = (t.0, t.1.iter().map(|x| x * 50.0).collect());
                    let out = ctx.timestep_embedding(&t.0, dim, max_period).expect("timestep");
                    (vec![t], out)
                });
            }
        }
    }
}

// ---- ADD_REL_POS ----

#[test]
fn add_rel_pos_matches_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        for inplace in [false, true] {
            // a [n*n, ne1*ne2, ne3] with pw, ph [n, ne1, ne2, ne3]; and a.ne[3] = 2 (rows past
            // pw's copied).
            for (n, ne1, ne2, ne3, a3) in [(4, 3, 2, 2, 1), (3, 2, 2, 1, 2)] {
                check_vs_cpu(&format!("add_rel_pos n {n} inplace {inplace} a.ne3 {a3}"), gpu, 0.0, |ctx| {
                    let a = input(ctx, Type::F32, &[n * n, ne1 * ne2, ne3, a3], 9);
                    let pw = input(ctx, Type::F32, &[n, ne1, ne2, ne3], 10);
                    let ph = input(ctx, Type::F32, &[n, ne1, ne2, ne3], 11);
                    let out = ctx.add_rel_pos(&a.0, &pw.0, &ph.0, inplace).expect("add_rel_pos");
                    (vec![a, pw, ph], out)
                });
            }
        }
    }
}

// ---- limits ----

/// Tensors over the device's storage binding limit are refused by supports_op (no kernel
/// here splits bindings), not left to fail in wgpu's validation.
#[test]
fn tensors_over_the_binding_limit_are_refused() {
    for d in gpu_devices() {
        let props: std::collections::HashMap<_, _> = d.properties().into_iter().collect();
        let max: i64 = props["max_storage_buffer_binding_size"].parse().expect("number");
        let ctx = no_alloc_ctx();
        // An f32 tensor one row over the limit, and the same op on a small one.
        let rows = max / (4 * 1024) + 1;
        let big = ctx.new_tensor_2d(Type::F32, 1024, rows).expect("t");
        let small = ctx.new_tensor_2d(Type::F32, 1024, 2).expect("t");
        let pos = ctx.new_tensor_1d(Type::I32, 1).expect("t");
        for a in [&big, &small] {
            let ok = !std::ptr::eq(a, &big);
            let pad = ctx.pad(a, 1, 0, 0, 0).expect("pad");
            let cat = ctx.concat(a, a, 1).expect("concat");
            let r3 = ctx.reshape_3d(a, 1024, a.ne()[1], 1).expect("reshape");
            let rope = ctx.rope_ext(&r3, &pos, None, rope_params(64, 0, 1.0, 0.0, 1.0, 0), false).expect("rope");
            for t in [&pad, &cat, &rope] {
                assert_eq!(d.supports_op(t), ok, "{} on {} ({:?})", t.op().name(), d.name(), t.ne());
            }
        }
    }
}
