//! The finite-difference check of test-backend-ops' grad mode: build a graph with
//! parameters, take the backward graph's gradients and compare them with central
//! differences of the forward graph, by ggml's mean absolute asymmetry.
//!
//! Unlike ggml's check the output is reduced with random weights (sum(y * w)), not a
//! plain sum, so every rule is also checked for using its incoming gradient elementwise.

use weft::alloc::{alloc_ctx_tensors, CtxBuffers};
use weft::backend::cpu::CpuBackend;
use weft::backend::{tensor_get, tensor_set, Backend};
use weft::tensor::flags;
use weft::types::convert::from_f32;
use weft::{Context, ContextParams, Graph, Tensor, Type};

/// One gradient check, with test-backend-ops' knobs (defaults are ggml's).
pub struct Case {
    pub name: &'static str,
    /// Finite-difference step (grad_eps).
    pub eps: f32,
    /// The 4-point rule (grad_precise) instead of the 2-point one.
    pub precise: bool,
    /// Largest mean absolute asymmetry accepted (max_maa_err).
    pub max_err: f64,
    /// Inputs are uniform in this range.
    pub range: (f32, f32),
}

impl Case {
    pub fn new(name: &'static str) -> Case {
        Case { name, eps: 1e-1, precise: false, max_err: 1e-4, range: (-1.0, 1.0) }
    }
    pub fn eps(mut self, eps: f32) -> Case {
        self.eps = eps;
        self
    }
    pub fn precise(mut self) -> Case {
        self.precise = true;
        self
    }
    pub fn max_err(mut self, e: f64) -> Case {
        self.max_err = e;
        self
    }
    pub fn range(mut self, lo: f32, hi: f32) -> Case {
        self.range = (lo, hi);
        self
    }
}

/// What a case builds: its output and the tensors that need particular values (indices,
/// positions, labels), written after the random initialization.
pub struct Built {
    pub out: Tensor,
    pub fixed: Vec<(Tensor, Vec<f32>)>,
}

impl From<Tensor> for Built {
    fn from(out: Tensor) -> Built {
        Built { out, fixed: vec![] }
    }
}

/// The outcome over all parameters: ggml's metric and the largest absolute difference.
#[derive(Debug)]
pub struct Report {
    pub maa: f64,
    pub max_abs: f64,
    pub compared: usize,
}

pub fn set(t: &Tensor, v: &[f32]) {
    tensor_set(t, &from_f32(t.ty(), v).unwrap(), 0).unwrap();
}

pub fn get(t: &Tensor) -> Vec<f32> {
    weft::backend::tensor_to_f32(t).unwrap()
}

/// Deterministic uniform values in [lo, hi).
pub fn uniform(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}

/// The weights the output is reduced with: magnitudes in [0.5, 1.5) and random signs, so
/// gradients are uneven but rarely near 0 (where an asymmetry measures noise), also for
/// ops like softmax whose gradient is w minus a weighted mean of w.
pub fn loss_weights(n: usize) -> Vec<f32> {
    let mag = uniform(n, 7, 0.5, 1.5);
    let sign = uniform(n, 8, -1.0, 1.0);
    mag.iter().zip(sign).map(|(m, s)| m.copysign(s)).collect()
}

fn scalar(t: &Tensor) -> f64 {
    let mut b = [0u8; 4];
    tensor_get(t, &mut b, 0).unwrap();
    f32::from_le_bytes(b) as f64
}

pub fn meta_ctx() -> Context {
    Context::new(ContextParams { mem_size: 16 << 20, no_alloc: true }).unwrap()
}

/// Name of the weights the output is reduced with.
pub const WEIGHTS: &str = "loss weights";

/// Forward graph gf (grads on) with `build`'s output reduced to a scalar loss, and the
/// backward graph gb: a copy of gf expanded with the gradients.
pub fn graphs(ctx: &Context, out: &Tensor, accumulate: bool) -> (Graph, Graph, Tensor) {
    let loss = if out.is_scalar() {
        out.clone()
    } else {
        let w = ctx.new_tensor(Type::F32, &out.ne()).unwrap();
        w.set_name(WEIGHTS);
        ctx.sum(&ctx.mul(out, &w).unwrap()).unwrap()
    };
    loss.set_loss().unwrap();
    let mut gf = ctx.new_graph_custom(2048, true).unwrap();
    gf.build_forward_expand(&loss).unwrap();
    let mut gb = ctx.graph_dup(&gf).unwrap();
    ctx.build_backward_expand(&gf, &mut gb, accumulate).unwrap();
    (gf, gb, loss)
}

/// Graphs for `out` ready to compute on the CPU: every tensor of the context allocated and
/// holding random values in `range`.
pub struct Setup {
    pub gf: Graph,
    pub gb: Graph,
    pub loss: Tensor,
    pub cpu: CpuBackend,
    pub buffers: CtxBuffers,
}

pub fn setup(ctx: &Context, out: &Tensor, accumulate: bool, range: (f32, f32)) -> Setup {
    let (gf, gb, loss) = graphs(ctx, out, accumulate);
    let cpu = CpuBackend::new(2).unwrap();
    let buffers = alloc_ctx_tensors(ctx, &cpu).unwrap();
    randomize(ctx, range.0, range.1);
    Setup { gf, gb, loss, cpu, buffers }
}

/// Random values in every f32/f16 tensor of the context, gradients and placeholders
/// included (as test-backend-ops does: reset must clear what matters).
pub fn randomize(ctx: &Context, lo: f32, hi: f32) {
    for (k, t) in ctx.tensors().iter().enumerate() {
        if t.is_view() || !matches!(t.ty(), Type::F32 | Type::F16) || t.is_empty() {
            continue;
        }
        set(t, &uniform(t.nelements() as usize, 1000 + k as u64, lo, hi));
    }
}

/// Build, differentiate, and compare with finite differences. Panics with the figures if
/// the error is above the case's bound; prints them either way.
pub fn check(case: Case, build: impl Fn(&Context) -> Built) -> Report {
    let ctx = meta_ctx();
    let built = build(&ctx);
    let Setup { gf, gb, loss, cpu, buffers: _buffers } = setup(&ctx, &built.out, false, case.range);
    for t in gb.nodes() {
        assert!(cpu.supports_op(t), "{}: CPU cannot compute {} node '{}'", case.name, t.op().desc(), t.name());
    }
    let weights = ctx.get_tensor(WEIGHTS).map(|w| {
        let v = loss_weights(w.nelements() as usize);
        set(&w, &v);
        v
    });
    for (t, v) in &built.fixed {
        set(t, v);
    }
    gb.reset().unwrap();
    cpu.graph_compute(&gf).unwrap();
    cpu.graph_compute(&gb).unwrap();

    let params: Vec<Tensor> = ctx.tensors().into_iter().filter(|t| t.has_flag(flags::PARAM)).collect();
    assert!(!params.is_empty(), "{}: no parameters", case.name);
    // The finite differences read the output and reduce it in f64 here, so the f32 sum in
    // the graph adds no rounding noise to them.
    let forward = |t: &Tensor, x: &[f32]| -> f64 {
        set(t, x);
        cpu.graph_compute(&gf).unwrap();
        match &weights {
            Some(w) => get(&built.out).iter().zip(w).map(|(&y, &w)| y as f64 * w as f64).sum(),
            None => scalar(&loss),
        }
    };
    let (mut sum, mut n, mut max_abs) = (0f64, 0usize, 0f64);
    for p in &params {
        let ga = get(&p.grad().expect("every parameter has a gradient"));
        let x0 = get(p);
        for i in 0..x0.len() {
            let at = |d: f32| {
                let mut x = x0.clone();
                x[i] += d;
                x
            };
            let e = case.eps;
            let (fu, fd) = (forward(p, &at(e)), forward(p, &at(-e)));
            let gn = if case.precise {
                let (fuh, fdh) = (forward(p, &at(0.5 * e)), forward(p, &at(-0.5 * e)));
                (8.0 * fuh + fd - (8.0 * fdh + fu)) / (6.0 * e as f64)
            } else {
                (fu - fd) / (2.0 * e as f64)
            };
            let a = ga[i] as f64;
            assert!(a.is_finite(), "{}: gradient of '{}' at {i} is {a}", case.name, p.name());
            // ggml's asymmetry (a - b) / (a + b), taken as 0 where both are 0.
            let asym = if a == gn { 0.0 } else { ((gn - a) / (gn + a)).abs() };
            sum += asym;
            n += 1;
            max_abs = max_abs.max((gn - a).abs());
        }
        set(p, &x0);
    }
    let report = Report { maa: if n == 0 { 0.0 } else { sum / n as f64 }, max_abs, compared: n };
    println!("{:<40} MAA {:.2e}  max |err| {:.2e}  ({} values)", case.name, report.maa, report.max_abs, n);
    assert!(report.compared > 0, "{}: no value was compared", case.name);
    assert!(report.maa <= case.max_err, "{}: MAA {:.3e} > {:.1e} ({report:?})", case.name, report.maa, case.max_err);
    report
}

/// A parameter of shape `ne` named `name`.
pub fn param(ctx: &Context, name: &str, ne: &[i64]) -> Tensor {
    let t = ctx.new_tensor(Type::F32, ne).unwrap();
    t.set_name(name);
    t.set_param();
    t
}

/// A constant input (no gradient).
pub fn input(ctx: &Context, name: &str, ne: &[i64]) -> Tensor {
    let t = ctx.new_tensor(Type::F32, ne).unwrap();
    t.set_name(name);
    t
}
