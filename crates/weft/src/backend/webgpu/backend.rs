//! The WebGPU backend: a graph becomes one command encoder with one dispatch per node,
//! submitted once (in up to 32 pieces when an observer follows it); graph_compute returns
//! when the device has finished it.

use std::any::Any;
use std::sync::Arc;

use super::device::WebGpuDevice;
use super::{dispatch, encode};
use crate::backend::{between_nodes, unsupported, Backend, ComputeObserver, Device, Unobserved};
use crate::graph::Graph;
use crate::op::OpKind;
use crate::Result;

/// How many submissions a graph is split into when an observer wants to hear between nodes.
const STEPS: usize = 32;

pub struct WebGpuBackend {
    dev: WebGpuDevice,
}

impl WebGpuBackend {
    pub fn new(dev: WebGpuDevice) -> WebGpuBackend {
        WebGpuBackend { dev }
    }
}

impl Backend for WebGpuBackend {
    fn name(&self) -> String {
        self.dev.ctx().name.clone()
    }
    fn device(&self) -> Arc<dyn Device> {
        Arc::new(self.dev.clone())
    }
    fn graph_compute(&self, graph: &Graph) -> Result<()> {
        self.graph_compute_observed(graph, &Unobserved)
    }
    fn graph_compute_observed(&self, graph: &Graph, observer: &dyn ComputeObserver) -> Result<()> {
        let ctx = self.dev.ctx();
        let total = graph.n_nodes();
        // (node index, its dispatch), planned in full first so an unsupported node fails
        // before anything runs
        let mut plan = Vec::with_capacity(total);
        for (i, node) in graph.nodes().iter().enumerate() {
            if node.is_empty() || node.op().kind().is_view() || node.op().kind() == OpKind::None {
                continue;
            }
            if !dispatch::supports(node) {
                return Err(unsupported(&ctx.name, node));
            }
            plan.extend(dispatch::plan(node, ctx)?.map(|d| (i, d)));
        }
        if !observer.wants_steps() {
            let dispatches: Vec<_> = plan.into_iter().map(|(_, d)| d).collect();
            return encode::run(ctx, "graph compute", &dispatches);
        }
        // An observer is asked between submissions: the graph goes in up to STEPS
        // submissions of consecutive nodes instead of one.
        let per_step = total.div_ceil(STEPS).max(1);
        let mut rest = plan.into_iter().peekable();
        for start in (0..total).step_by(per_step) {
            between_nodes(observer, start, total)?;
            let end = start + per_step;
            let mut step = Vec::new();
            while let Some((_, d)) = rest.next_if(|(i, _)| *i < end) {
                step.push(d);
            }
            encode::run(ctx, "graph compute", &step)?;
        }
        observer.progress(total, total);
        Ok(())
    }
    fn synchronize(&self) -> Result<()> {
        self.dev.ctx().wait("synchronize", None)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
