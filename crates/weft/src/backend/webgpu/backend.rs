//! The WebGPU backend: a graph becomes one command encoder with one dispatch per node,
//! submitted once; graph_compute returns when the device has finished it.

use std::any::Any;
use std::sync::Arc;

use super::buffer::WebGpuBuffer;
use super::context::GpuContext;
use super::device::WebGpuDevice;
use super::event::WebGpuEvent;
use super::{dispatch, encode};
use crate::backend::tensor_io::tensor_copy_internal;
use crate::backend::{unsupported, Backend, Device, Event};
use crate::graph::Graph;
use crate::op::OpKind;
use crate::tensor::Tensor;
use crate::{Error, Result};

pub struct WebGpuBackend {
    dev: WebGpuDevice,
}

impl WebGpuBackend {
    pub fn new(dev: WebGpuDevice) -> WebGpuBackend {
        WebGpuBackend { dev }
    }

    /// Plan every node and submit the graph as one command buffer.
    fn submit_graph(&self, graph: &Graph, wait: bool) -> Result<()> {
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
        encode::run(ctx, "graph compute", &plan, wait)
    }

    /// Whether `t` lives in memory of this backend's device.
    fn is_local(&self, t: &Tensor) -> bool {
        t.storage().is_some_and(|s| {
            s.buffer.as_any().downcast_ref::<WebGpuBuffer>().is_some_and(|b| std::ptr::eq(b.ctx(), &**self.dev.ctx()))
        })
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
        self.submit_graph(graph, true)
    }
    /// Submitted, not waited for: the queue orders later copies, reads and graphs after it.
    fn graph_compute_async(&self, graph: &Graph) -> Result<()> {
        self.submit_graph(graph, false)
    }
    fn synchronize(&self) -> Result<()> {
        self.dev.ctx().wait("synchronize", None)
    }
    /// Between two buffers of this device: a copy command on the queue (buffer.copy_from).
    fn cpy_tensor_async(&self, _src_backend: &dyn Backend, src: &Tensor, dst: &Tensor) -> Result<bool> {
        if !(self.is_local(src) && self.is_local(dst)) {
            return Ok(false);
        }
        tensor_copy_internal(src, dst)?;
        Ok(true)
    }
    fn event_record(&self, event: &dyn Event) -> Result<()> {
        let ev = self.own_event(event)?;
        ev.record()
    }
    /// One queue per device runs its work in order: work queued after this call already
    /// waits for everything before the event. Another device's event is waited for here.
    fn event_wait(&self, event: &dyn Event) -> Result<()> {
        match self.own_event(event) {
            Ok(_) => Ok(()),
            Err(_) => event.synchronize(),
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl WebGpuBackend {
    fn own_event<'a>(&self, event: &'a dyn Event) -> Result<&'a WebGpuEvent> {
        event
            .as_any()
            .downcast_ref::<WebGpuEvent>()
            .filter(|e| GpuContext::same(e.ctx(), self.dev.ctx()))
            .ok_or_else(|| Error::invalid(format!("{}: the event belongs to another device", self.dev.ctx().name)))
    }
}
