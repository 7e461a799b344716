#![cfg(feature = "webgpu")]
//! The WebGPU kernels of the convolution, pooling and recurrent ops (IM2COL, IM2COL_BACK,
//! CONV_TRANSPOSE_1D/2D, POOL_1D/2D, POOL_2D_BACK, SSM_CONV, SSM_SCAN, RWKV_WKV) against
//! the CPU backend computing the same graphs, node by node, on every WebGPU device found
//! (none: a note, unless lavapipe is installed or WEFT_REQUIRE_WEBGPU is set). The ops the
//! backend-ops suite has no eval case for (CONV_TRANSPOSE_2D, POOL_1D, the backward ops)
//! are covered here.

mod common;

use std::sync::Arc;

use common::rand_vec;
use weft::alloc::{alloc_ctx_tensors, CtxBuffers};
use weft::backend::compare::graph_copy;
use weft::backend::cpu::CpuBackend;
use weft::backend::{tensor_get, tensor_set, Backend, Device};
use weft::op::{Im2colParams, PoolOp};
use weft::types::convert::{from_f32, to_f32};
use weft::{Context, ContextParams, Graph, Tensor, Type};

// ---- harness (as in webgpu.rs) ----

fn lavapipe_installed() -> bool {
    std::fs::read_dir("/usr/share/vulkan/icd.d")
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("lvp_icd")))
        .unwrap_or(false)
}

fn gpu_devices() -> Vec<Arc<dyn Device>> {
    let devs: Vec<_> = weft::backend::devices().into_iter().filter(|d| d.name().starts_with("WebGPU")).collect();
    if devs.is_empty() {
        let required = std::env::var_os("WEFT_REQUIRE_WEBGPU").is_some() || lavapipe_installed();
        assert!(!required, "no WebGPU device found, but lavapipe is installed or WEFT_REQUIRE_WEBGPU is set");
        eprintln!("note: no WebGPU device found; skipping");
    }
    devs
}

fn backends() -> Vec<Arc<dyn Backend>> {
    gpu_devices().iter().map(|d| d.init_backend("").expect("init_backend")).collect()
}

fn no_alloc_ctx() -> Context {
    Context::new(ContextParams { mem_size: 16 << 20, no_alloc: true }).expect("context")
}

fn set(t: &Tensor, v: &[f32]) {
    tensor_set(t, &from_f32(t.ty(), v).expect("from_f32"), 0).expect("tensor_set");
}

/// Elements of `t` in logical order (i0 fastest), following its strides.
fn logical(t: &Tensor) -> Vec<f32> {
    let mut raw = vec![0u8; t.nbytes()];
    tensor_get(t, &mut raw, 0).expect("get");
    let (ne, nb, es) = (t.ne(), t.nb(), t.element_size());
    let mut out = Vec::with_capacity(t.nelements() as usize);
    for i3 in 0..ne[3] as usize {
        for i2 in 0..ne[2] as usize {
            for i1 in 0..ne[1] as usize {
                for i0 in 0..ne[0] as usize {
                    let at = i0 * nb[0] + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
                    out.extend(to_f32(t.ty(), &raw[at..at + es]).expect("to_f32"));
                }
            }
        }
    }
    out
}

struct Case {
    _ctx: Context,
    graph: Graph,
    _buffers: CtxBuffers,
}

type Inputs = Vec<(Tensor, Vec<f32>)>;

fn case(gpu: &dyn Backend, build: impl FnOnce(&Context) -> (Inputs, Tensor)) -> Case {
    let ctx = no_alloc_ctx();
    let (inputs, out) = build(&ctx);
    let mut graph = ctx.new_graph().expect("graph");
    graph.build_forward_expand(&out).expect("expand");
    for n in graph.nodes() {
        assert!(gpu.supports_op(n), "{}: {} not supported", gpu.name(), n.op().name());
    }
    let buffers = alloc_ctx_tensors(&ctx, gpu).expect("alloc on WebGPU");
    for (t, v) in &inputs {
        set(t, v);
    }
    Case { _ctx: ctx, graph, _buffers: buffers }
}

/// Compute the graph on `gpu` and a copy on the CPU; every computed node must agree:
/// |gpu - cpu| <= tol * (1 + |cpu|), NaNs in the same places.
fn check_vs_cpu(name: &str, gpu: &dyn Backend, tol: f32, build: impl FnOnce(&Context) -> (Inputs, Tensor)) {
    let c = case(gpu, build);
    let cpu = CpuBackend::new(2).expect("cpu");
    let copy = graph_copy(&cpu, &c.graph).expect("graph_copy");
    gpu.graph_compute(&c.graph).unwrap_or_else(|e| panic!("{name} on {}: {e}", gpu.name()));
    cpu.graph_compute(&copy.graph).expect("cpu compute");
    let mut worst = 0f32;
    let mut n = 0;
    for (g, w) in c.graph.nodes().iter().zip(copy.graph.nodes()) {
        if g.op().kind().is_view() {
            continue;
        }
        let (gv, wv) = (logical(g), logical(w));
        assert_eq!(gv.len(), wv.len());
        for (i, (x, y)) in gv.iter().zip(&wv).enumerate() {
            let ok = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol * (1.0 + y.abs());
            assert!(ok, "{name} on {}: node {} element {i}: gpu {x}, cpu {y}", gpu.name(), g.op().name());
            if x != y && !x.is_nan() {
                worst = worst.max((x - y).abs());
            }
        }
        n += gv.len();
    }
    println!("{:<8} {name:<56} elems {n:>7}  max abs {worst:.2e}", gpu.name());
}

fn input(ctx: &Context, ty: Type, ne: &[i64], seed: u64) -> (Tensor, Vec<f32>) {
    let t = ctx.new_tensor(ty, ne).expect("tensor");
    let v = rand_vec(t.nelements() as usize, seed);
    (t, v)
}

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
                    // POOL_2D_BACK is refused on WebGPU (ops/pool.rs, POOL_BACK_READY): its kernel fails wgpu's
                    // validation; refused, never wrong.
                    let ctx = no_alloc_ctx();
                    let x = ctx.new_tensor(ty, &[10, 9, 3, 2]).expect("x");
                    let pooled = ctx.pool_2d(&x, op, k.0, k.1, s.0, s.1, p.0, p.1).expect("pool_2d");
                    let g = ctx.new_tensor(Type::F32, &pooled.ne()).expect("g");
                    let out = ctx.pool_2d_back(&g, &x, op, k.0, k.1, s.0, s.1, p.0, p.1).expect("back");
                    assert!(!gpu.supports_op(&out), "POOL_2D_BACK should be refused");
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
