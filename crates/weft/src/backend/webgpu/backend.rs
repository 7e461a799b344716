//! The WebGPU backend: a graph becomes one command encoder with one dispatch per node,
//! submitted once; graph_compute returns when the device has finished it.

use std::any::Any;
use std::sync::Arc;

use super::device::WebGpuDevice;
use super::{dispatch, encode};
use crate::backend::{unsupported, Backend, Device};
use crate::graph::Graph;
use crate::op::OpKind;
use crate::Result;

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
        let ctx = self.dev.ctx();
        let mut plan = Vec::with_capacity(graph.n_nodes());
        for node in graph.nodes() {
            if node.is_empty() || node.op().kind().is_view() || node.op().kind() == OpKind::None {
                continue;
            }
            if !dispatch::supports(node) {
                return Err(unsupported(&ctx.name, node));
            }
            plan.extend(dispatch::plan(node, ctx)?);
        }
        encode::run(ctx, "graph compute", &plan)
    }
    fn synchronize(&self) -> Result<()> {
        self.dev.ctx().wait("synchronize", None)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
