//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use weft::backend::cpu::CpuBackend;
use weft::backend::{tensor_get, tensor_set, Backend};
use weft::op::RopeParams;
use weft::types::convert::{from_f32, to_f32};
use weft::{Context, ContextParams, Graph, Tensor};

/// A context whose tensors live in its own host memory (no_alloc = false).
pub fn host_ctx() -> Context {
    Context::new(ContextParams { mem_size: 64 << 20, no_alloc: false }).unwrap()
}

pub fn set(t: &Tensor, v: &[f32]) {
    tensor_set(t, &from_f32(t.ty(), v).unwrap(), 0).unwrap();
}

pub fn get(t: &Tensor) -> Vec<f32> {
    let mut b = vec![0u8; t.nbytes()];
    tensor_get(t, &mut b, 0).unwrap();
    to_f32(t.ty(), &b).unwrap()
}

/// Write int32 values (indices, positions) into a tensor.
pub fn set_i32(t: &Tensor, v: &[i32]) {
    tensor_set(t, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(), 0).unwrap();
}

/// Compute `out` and return the error instead of unwrapping it.
pub fn try_compute(ctx: &Context, out: &Tensor, threads: usize) -> weft::Result<()> {
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(out).unwrap();
    CpuBackend::new(threads).unwrap().graph_compute(&g)
}

/// Compute `out` (and everything it needs) on a CPU backend with `threads` threads.
pub fn compute(ctx: &Context, out: &Tensor, threads: usize) -> Graph {
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(out).unwrap();
    CpuBackend::new(threads).unwrap().graph_compute(&g).unwrap();
    g
}

/// Deterministic values in [-1, 1).
pub fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

pub fn assert_close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: got {g}, want {w}");
    }
}

/// ROPE params with ggml_rope's defaults (no YaRN: ext_factor 0, attn_factor 1).
pub fn rope_params(n_dims: i32, mode: i32) -> RopeParams {
    RopeParams {
        n_dims,
        mode,
        n_ctx_orig: 0,
        freq_base: 10000.0,
        freq_scale: 1.0,
        ext_factor: 0.0,
        attn_factor: 1.0,
        beta_fast: 32.0,
        beta_slow: 1.0,
    }
}

pub mod fake_backends;
pub mod gpu;
pub mod model;
pub mod sched_net;
#[allow(unused_imports)]
pub use model::*;

/// MUL_MAT written out, summed in f64: a [k, m, a2, a3] broadcast over b [k, n, b2, b3]
/// (packed logical values) into [m, n, b2, b3].
pub fn naive_mul_mat(va: &[f32], ne_a: [usize; 4], vb: &[f32], ne_b: [usize; 4]) -> Vec<f32> {
    let (k, m, n) = (ne_a[0], ne_a[1], ne_b[1]);
    let mut out = vec![0f32; m * n * ne_b[2] * ne_b[3]];
    for i3 in 0..ne_b[3] {
        for i2 in 0..ne_b[2] {
            let (a2, a3) = (i2 / (ne_b[2] / ne_a[2]), i3 / (ne_b[3] / ne_a[3]));
            for i1 in 0..n {
                for i0 in 0..m {
                    let ar = &va[((a3 * ne_a[2] + a2) * m + i0) * k..][..k];
                    let br = &vb[((i3 * ne_b[2] + i2) * n + i1) * k..][..k];
                    let s: f64 = ar.iter().zip(br).map(|(&x, &y)| x as f64 * y as f64).sum();
                    out[((i3 * ne_b[2] + i2) * n + i1) * m + i0] = s as f32;
                }
            }
        }
    }
    out
}
