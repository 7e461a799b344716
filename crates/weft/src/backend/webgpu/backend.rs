//! The WebGPU backend: a graph becomes one command encoder with one dispatch per node,
//! submitted once (in up to 32 pieces when an observer follows it); graph_compute returns
//! when the device has finished it, graph_compute_async (the scheduler's) once submitted.

use std::any::Any;
use std::sync::Arc;

use super::buffer::WebGpuBuffer;
use super::context::GpuContext;
use super::device::WebGpuDevice;
use super::event::WebGpuEvent;
use super::{dispatch, encode};
use crate::backend::tensor_io::tensor_copy_internal;
use crate::backend::{between_nodes, unsupported, Backend, ComputeObserver, Device, Event, Unobserved};
use crate::graph::Graph;
use crate::tensor::Tensor;
use crate::{Error, Result};

/// How many submissions a graph is split into when an observer wants to hear between nodes.
const STEPS: usize = 32;

pub struct WebGpuBackend {
    dev: WebGpuDevice,
    /// Device seconds of the last graph computed to completion (encode::run).
    last_seconds: std::sync::Mutex<Option<f64>>,
}

impl WebGpuBackend {
    pub fn new(dev: WebGpuDevice) -> WebGpuBackend {
        WebGpuBackend { dev, last_seconds: std::sync::Mutex::new(None) }
    }

    /// Plan every node and submit the graph as one command buffer, or in up to STEPS
    /// submissions when `observer` wants to hear between nodes (each waited for, so that
    /// progress means finished work). `wait`: return only once the device has finished.
    fn submit_graph(&self, graph: &Graph, observer: &dyn ComputeObserver, wait: bool) -> Result<()> {
        let ctx = self.dev.ctx();
        let total = graph.n_nodes();
        // (node index, its dispatch), planned in full first so an unsupported node fails
        // before anything runs
        let mut plan = Vec::with_capacity(total);
        for (i, node) in graph.nodes().iter().enumerate() {
            if node.is_empty() || node.kind().computes_nothing() {
                continue;
            }
            if !dispatch::supports(node, ctx) {
                return Err(unsupported(&ctx.name, node));
            }
            plan.extend(dispatch::plan(node, ctx)?.map(|d| (i, d)));
        }
        self.set_last_seconds(None);
        if !observer.wants_steps() {
            let dispatches: Vec<_> = plan.into_iter().map(|(_, d)| d).collect();
            let seconds = encode::run(ctx, "graph compute", &dispatches, wait)?;
            self.set_last_seconds(seconds);
            return Ok(());
        }
        // An observer is asked between submissions: the graph goes in up to STEPS
        // submissions of consecutive nodes instead of one.
        let per_step = total.div_ceil(STEPS).max(1);
        let mut rest = plan.into_iter().peekable();
        let mut seconds = 0.0;
        for start in (0..total).step_by(per_step) {
            between_nodes(observer, start, total)?;
            let end = start + per_step;
            let mut step = Vec::new();
            while let Some((_, d)) = rest.next_if(|(i, _)| *i < end) {
                step.push(d);
            }
            seconds += encode::run(ctx, "graph compute", &step, true)?.unwrap_or(0.0);
        }
        self.set_last_seconds(Some(seconds));
        observer.progress(total, total);
        Ok(())
    }

    fn set_last_seconds(&self, s: Option<f64>) {
        *self.last_seconds.lock().unwrap_or_else(|e| e.into_inner()) = s;
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
        self.submit_graph(graph, &Unobserved, true)
    }
    fn graph_compute_observed(&self, graph: &Graph, observer: &dyn ComputeObserver) -> Result<()> {
        self.submit_graph(graph, observer, true)
    }
    /// Submitted, not waited for: the queue orders later copies, reads and graphs after it.
    fn graph_compute_async(&self, graph: &Graph) -> Result<()> {
        self.submit_graph(graph, &Unobserved, false)
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
    /// `matmul`: `naive`, `matvec` or `tiled` forces that MUL_MAT kernel on this backend's
    /// device (every backend of it), `auto` picks per node again.
    fn set_option(&self, key: &str, value: &str) -> Result<()> {
        let name = &self.dev.ctx().name;
        match key {
            "matmul" => {
                let shape = match value.trim() {
                    "auto" => 0,
                    v => super::ops::matmul::Shape::parse(v).ok_or_else(|| {
                        Error::invalid(format!("{name}: matmul='{value}' is not one of naive, matvec, tiled, auto"))
                    })? as u8,
                };
                self.dev.ctx().matmul_shape.store(shape, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            _ => Err(Error::invalid(format!("{name}: unknown option '{key}' (known: matmul)"))),
        }
    }
    /// The device time of the last graph computed to completion: GPU timestamps where the
    /// adapter has TIMESTAMP_QUERY, else wall time from submission to completion.
    fn last_compute_seconds(&self) -> Option<f64> {
        *self.last_seconds.lock().unwrap_or_else(|e| e.into_inner())
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
