//! A graph compute watched from between its nodes (ComputeObserver): progress reports in
//! order, and an abort that leaves every node after it uncomputed, on the CPU backend and,
//! where a device exists, the WebGPU backend (which checks between its submissions).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use common::{get, set};
use weft::backend::cpu::CpuBackend;
use weft::backend::{Backend, ComputeObserver};
use weft::{Context, ContextParams, ErrorKind, Graph, Tensor, Type};

/// Logs every report; asks to stop once `stop_at` nodes are done.
struct Log {
    seen: Mutex<Vec<(usize, usize)>>,
    stop_at: usize,
    done: AtomicUsize,
}

impl Log {
    fn new(stop_at: usize) -> Log {
        Log { seen: Mutex::new(Vec::new()), stop_at, done: AtomicUsize::new(0) }
    }
    fn seen(&self) -> Vec<(usize, usize)> {
        self.seen.lock().unwrap().clone()
    }
}

impl ComputeObserver for Log {
    fn progress(&self, done: usize, total: usize) {
        self.seen.lock().unwrap().push((done, total));
        self.done.store(done, Ordering::Relaxed);
    }
    fn should_abort(&self) -> bool {
        self.done.load(Ordering::Relaxed) >= self.stop_at
    }
}

/// x, then n nodes each doubling the previous one: node i holds x * 2^(i+1).
fn doubling_chain(ctx: &Context, n: usize) -> (Tensor, Vec<Tensor>, Graph) {
    let x = ctx.new_tensor_1d(Type::F32, 4).unwrap();
    let mut nodes = Vec::new();
    let mut cur = x.clone();
    for _ in 0..n {
        cur = ctx.scale(&cur, 2.0).unwrap();
        nodes.push(cur.clone());
    }
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&cur).unwrap();
    assert_eq!(g.n_nodes(), n);
    (x, nodes, g)
}

const X: [f32; 4] = [1.0, -2.0, 0.5, 3.0];
const SENTINEL: [f32; 4] = [-7.0; 4];

/// Node i's value, worked by hand: x * 2^(i+1).
fn doubled(i: usize) -> Vec<f32> {
    X.iter().map(|v| v * (1u32 << (i + 1)) as f32).collect()
}

fn fill(x: &Tensor, nodes: &[Tensor]) {
    set(x, &X);
    nodes.iter().for_each(|t| set(t, &SENTINEL));
}

#[test]
fn cpu_reports_every_node_then_the_total() {
    let ctx = common::host_ctx();
    let (x, nodes, g) = doubling_chain(&ctx, 6);
    fill(&x, &nodes);
    let log = Log::new(usize::MAX);
    CpuBackend::new(2).unwrap().graph_compute_observed(&g, &log).unwrap();
    assert_eq!(log.seen(), (0..=6).map(|i| (i, 6)).collect::<Vec<_>>());
    assert_eq!(get(&nodes[5]), doubled(5));
}

#[test]
fn cpu_abort_stops_before_the_next_node() {
    let ctx = common::host_ctx();
    let (x, nodes, g) = doubling_chain(&ctx, 6);
    fill(&x, &nodes);
    let log = Log::new(3);
    let e = CpuBackend::new(2).unwrap().graph_compute_observed(&g, &log).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Aborted);
    assert_eq!(e.message, "compute aborted after 3 of 6 nodes");
    assert_eq!(log.seen(), vec![(0, 6), (1, 6), (2, 6), (3, 6)]);
    for (i, t) in nodes.iter().enumerate() {
        let want = if i < 3 { doubled(i) } else { SENTINEL.to_vec() };
        assert_eq!(get(t), want, "node {i}");
    }
}

#[test]
fn plain_graph_compute_is_unobserved() {
    let ctx = common::host_ctx();
    let (x, nodes, g) = doubling_chain(&ctx, 3);
    fill(&x, &nodes);
    CpuBackend::new(1).unwrap().graph_compute(&g).unwrap();
    assert_eq!(get(&nodes[2]), doubled(2));
}

#[cfg(feature = "webgpu")]
#[test]
fn webgpu_reports_between_submissions_and_aborts_there() {
    let backends: Vec<_> = weft::backend::devices()
        .into_iter()
        .filter(|d| d.name().starts_with("WebGPU"))
        .map(|d| d.init_backend("").unwrap())
        .collect();
    if backends.is_empty() {
        eprintln!("note: no WebGPU device; skipping");
    }
    for gpu in backends {
        let ctx = Context::new(ContextParams { mem_size: 16 << 20, no_alloc: true }).unwrap();
        let (x, nodes, g) = doubling_chain(&ctx, 40);
        let _bufs = weft::alloc::alloc_ctx_tensors(&ctx, gpu.as_ref()).unwrap();

        // 40 nodes in 32 steps: 2 nodes a submission, a report before each and at the end
        fill(&x, &nodes);
        let log = Log::new(usize::MAX);
        gpu.graph_compute_observed(&g, &log).unwrap();
        let want: Vec<_> = (0..40).step_by(2).chain([40]).map(|i| (i, 40)).collect();
        assert_eq!(log.seen(), want, "{}", gpu.name());
        assert_eq!(get(&nodes[39])[0], X[0] * 2f32.powi(40));

        fill(&x, &nodes);
        let log = Log::new(4);
        let e = gpu.graph_compute_observed(&g, &log).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Aborted, "{}", gpu.name());
        assert_eq!(log.seen(), vec![(0, 40), (2, 40), (4, 40)]);
        for (i, t) in nodes.iter().enumerate() {
            let want = if i < 4 { doubled(i) } else { SENTINEL.to_vec() };
            assert_eq!(get(t), want, "{} node {i}", gpu.name());
        }

        // without an observer: one submission, same result
        fill(&x, &nodes);
        gpu.graph_compute(&g).unwrap();
        assert_eq!(get(&nodes[5]), doubled(5));
    }
}
