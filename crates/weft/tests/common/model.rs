//! Helpers of the model/training op tests (cpu_ops_model.rs, cpu_ops_backward.rs).

use super::*;
use weft::backend::cpu::CpuDevice;
use weft::backend::Device;
use weft::types::convert::{from_f32, to_f32};
use weft::{Context, Error, Tensor, Type};

// ---------------------------------------------------------------------------------------
// helpers

/// Values as stored in `ty` (what a kernel reads back after `set`).
pub fn round(ty: Type, v: &[f32]) -> Vec<f32> {
    to_f32(ty, &from_f32(ty, v).unwrap()).unwrap()
}

pub fn supported(t: &Tensor) -> bool {
    CpuDevice::get().supports_op(t)
}

pub fn err_msg(r: Result<Tensor, Error>) -> String {
    match r {
        Ok(t) => panic!("expected an error, got a {} node", t.op().name()),
        Err(e) => e.message,
    }
}

pub fn assert_close64(got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!((g as f64 - w).abs() <= tol * (1.0 + w.abs()), "element {i}: got {g}, want {w}");
    }
}

pub fn new_t(ctx: &Context, ty: Type, ne: [usize; 4]) -> Tensor {
    ctx.new_tensor(ty, &ne.map(|n| n as i64)).unwrap()
}

/// Row-major index of (i0, i1, i2, i3) in a packed tensor of shape `ne`.
pub fn idx(ne: [usize; 4], i0: usize, i1: usize, i2: usize, i3: usize) -> usize {
    ((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0
}

pub fn dot64(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
}

/// d/dx_i of sum(out * g), by central differences: x is set to x0 +- h e_i and the graph
/// of `out` recomputed on the CPU each time.
pub fn numeric_grad(ctx: &Context, x: &Tensor, out: &Tensor, x0: &[f32], g: &[f32], h: f32) -> Vec<f64> {
    let mut graph = ctx.new_graph().unwrap();
    graph.build_forward_expand(out).unwrap();
    let backend = CpuBackend::new(2).unwrap();
    let eval = |xv: &[f32]| {
        set(x, xv);
        backend.graph_compute(&graph).unwrap();
        dot64(&get(out), g)
    };
    let grad = (0..x0.len())
        .map(|i| {
            let mut xp = x0.to_vec();
            xp[i] += h;
            let fp = eval(&xp);
            xp[i] -= 2.0 * h;
            let fm = eval(&xp);
            (fp - fm) / (2.0 * h as f64)
        })
        .collect();
    set(x, x0);
    grad
}
