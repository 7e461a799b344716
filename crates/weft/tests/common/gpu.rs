//! The WebGPU tests' harness: the devices to run on, and graphs computed on a GPU backend
//! and on the CPU compared node by node.

use std::sync::Arc;

use weft::alloc::{alloc_ctx_tensors, CtxBuffers};
use weft::backend::compare::graph_copy;
use weft::backend::cpu::CpuBackend;
use weft::backend::{tensor_get, Backend, Device};
use weft::types::convert::to_f32;
use weft::{Context, ContextParams, Graph, Tensor, Type};

use super::{rand_vec, set};

fn lavapipe_installed() -> bool {
    std::fs::read_dir("/usr/share/vulkan/icd.d")
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("lvp_icd")))
        .unwrap_or(false)
}

/// Every WebGPU device found. None is a note and an empty list, unless a lavapipe driver
/// is installed or WEFT_REQUIRE_WEBGPU is set: then finding none fails the test.
pub fn gpu_devices() -> Vec<Arc<dyn Device>> {
    let devs: Vec<_> = weft::backend::devices().into_iter().filter(|d| d.name().starts_with("WebGPU")).collect();
    if devs.is_empty() {
        let required = std::env::var_os("WEFT_REQUIRE_WEBGPU").is_some() || lavapipe_installed();
        assert!(!required, "no WebGPU device found, but lavapipe is installed or WEFT_REQUIRE_WEBGPU is set");
        eprintln!("note: no WebGPU device found; skipping");
    }
    devs
}

/// A backend on each of [`gpu_devices`].
pub fn backends() -> Vec<Arc<dyn Backend>> {
    gpu_devices().iter().map(|d| d.init_backend("").expect("init_backend")).collect()
}

/// A context that only describes tensors; a backend's buffer gets their data.
pub fn no_alloc_ctx() -> Context {
    Context::new(ContextParams { mem_size: 16 << 20, no_alloc: true }).expect("context")
}

/// Elements of `t` in logical order (i0 fastest), following its strides; quantized rows
/// dequantized whole.
pub fn logical(t: &Tensor) -> Vec<f32> {
    let mut raw = vec![0u8; t.nbytes()];
    tensor_get(t, &mut raw, 0).expect("get");
    let (ne, nb, es) = (t.ne(), t.nb(), t.element_size());
    let row = t.ty().row_size(ne[0] as usize);
    let mut out = Vec::with_capacity(t.nelements() as usize);
    for i3 in 0..ne[3] as usize {
        for i2 in 0..ne[2] as usize {
            for i1 in 0..ne[1] as usize {
                let at = i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
                if t.ty().is_quantized() || nb[0] == es {
                    out.extend(to_f32(t.ty(), &raw[at..at + row]).expect("to_f32"));
                } else {
                    for i0 in 0..ne[0] as usize {
                        let e = at + i0 * nb[0];
                        out.extend(to_f32(t.ty(), &raw[e..e + es]).expect("to_f32"));
                    }
                }
            }
        }
    }
    out
}

/// A graph's inputs with the values to give them.
pub type Inputs = Vec<(Tensor, Vec<f32>)>;

/// A graph built on a no-alloc context, its tensors in a buffer of the GPU backend.
pub struct Case {
    _ctx: Context,
    pub graph: Graph,
    _buffers: CtxBuffers,
}

/// Build the graph of `build`'s output, allocate it on `gpu` and set its inputs.
pub fn case(gpu: &dyn Backend, build: impl FnOnce(&Context) -> (Inputs, Tensor)) -> Case {
    let ctx = no_alloc_ctx();
    let (inputs, out) = build(&ctx);
    let mut graph = ctx.new_graph().expect("graph");
    graph.build_forward_expand(&out).expect("expand");
    let buffers = alloc_ctx_tensors(&ctx, gpu).expect("alloc on WebGPU");
    for (t, v) in &inputs {
        set(t, v);
    }
    Case { _ctx: ctx, graph, _buffers: buffers }
}

fn close(x: f32, y: f32, tol: f32) -> bool {
    (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol * (1.0 + y.abs())
}

/// Every computed node of `build`'s graph must be supported on `gpu`; the graph is
/// computed there and a copy on the CPU `times` times (ops that update their inputs take a
/// step each time), then every computed node and every input (in-place nodes must leave
/// the rest of their buffer alone) must agree: |gpu - cpu| <= tol * (1 + |cpu|), integer
/// results equal, NaNs in the same places. Returns the largest finite difference.
pub fn check_vs_cpu_n(
    name: &str,
    gpu: &dyn Backend,
    tol: f32,
    times: usize,
    build: impl FnOnce(&Context) -> (Inputs, Tensor),
) -> f32 {
    let c = case(gpu, build);
    for n in c.graph.nodes().iter().filter(|n| !n.kind().is_view()) {
        assert!(gpu.supports_op(n), "{name}: {} must be supported on {}", n.op().name(), gpu.name());
    }
    let cpu = CpuBackend::new(2).expect("cpu");
    let copy = graph_copy(&cpu, &c.graph).expect("graph_copy");
    for _ in 0..times {
        gpu.graph_compute(&c.graph).unwrap_or_else(|e| panic!("{name} on {}: {e}", gpu.name()));
        cpu.graph_compute(&copy.graph).expect("cpu compute");
    }
    let (mut worst, mut n) = (0f32, 0);
    let nodes = c.graph.nodes().iter().zip(copy.graph.nodes()).filter(|(g, _)| !g.kind().is_view());
    for (g, w) in nodes.chain(c.graph.leafs().iter().zip(copy.graph.leafs())) {
        let (gv, wv) = (logical(g), logical(w));
        assert_eq!(gv.len(), wv.len());
        let tol = if g.ty().is_integer() { 0.0 } else { tol };
        for (i, (&x, &y)) in gv.iter().zip(&wv).enumerate() {
            assert!(
                close(x, y, tol),
                "{name} on {}: {} '{}' element {i}: gpu {x}, cpu {y}",
                gpu.name(),
                g.op().name(),
                g.label()
            );
            if x.is_finite() && y.is_finite() {
                worst = worst.max((x - y).abs());
            }
        }
        n += gv.len();
    }
    println!("{:<8} {name:<56} elems {n:>7}  max abs {worst:.2e}", gpu.name());
    worst
}

/// [`check_vs_cpu_n`] computing once.
pub fn check_vs_cpu(name: &str, gpu: &dyn Backend, tol: f32, build: impl FnOnce(&Context) -> (Inputs, Tensor)) -> f32 {
    check_vs_cpu_n(name, gpu, tol, 1, build)
}

/// A tensor of `ty` and shape `ne` with uniform values in [-1, 1) from `seed`.
pub fn input(ctx: &Context, ty: Type, ne: &[i64], seed: u64) -> (Tensor, Vec<f32>) {
    let t = ctx.new_tensor(ty, ne).expect("tensor");
    let v = rand_vec(t.nelements() as usize, seed);
    (t, v)
}
