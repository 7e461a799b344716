//! JS class GraphAllocator: ggml_gallocr, memory for a graph's intermediate tensors planned
//! by liveness (tensors share memory once their consumers have run).

use napi::Env;

use crate::args::uint;
use crate::backend::{Backend, BackendBuffer};
use crate::error::{disposed, IntoJs, Result};
use crate::graph::Graph;
use crate::memory::External;

#[napi(custom_finalize)]
pub struct GraphAllocator {
    inner: Option<weft::alloc::GraphAllocator>,
    /// Its buffers' bytes, reported to V8 (they grow on reserve / allocGraph).
    external: External,
}

crate::memory::release_external_on_finalize!(GraphAllocator);

impl GraphAllocator {
    fn get(&mut self) -> Result<&mut weft::alloc::GraphAllocator> {
        self.inner.as_mut().ok_or_else(|| disposed("GraphAllocator"))
    }

    /// Report the buffers' size after a call that may have grown them.
    fn report(&mut self, env: &Env) -> Result<()> {
        let bytes = self.get()?.buffers().iter().map(|b| b.size()).sum();
        self.external.update(env, bytes);
        Ok(())
    }
}

#[napi]
impl GraphAllocator {
    /// ggml_gallocr_new with the backend's default buffer type.
    #[napi(catch_unwind, constructor)]
    pub fn new(backend: &Backend) -> Result<GraphAllocator> {
        let buft = backend.get()?.default_buffer_type();
        Ok(GraphAllocator { inner: Some(weft::alloc::GraphAllocator::new(buft)), external: External::default() })
    }

    /// ggml_gallocr_reserve: plan the graph and allocate a buffer for its worst case.
    #[napi(catch_unwind)]
    pub fn reserve(&mut self, env: &Env, graph: &Graph) -> Result<()> {
        let g = graph.snapshot()?;
        let r = self.get()?.reserve(&g).js();
        self.report(env)?;
        r
    }

    /// ggml_gallocr_alloc_graph: bind every unallocated tensor of the graph.
    #[napi(catch_unwind)]
    pub fn alloc_graph(&mut self, env: &Env, graph: &Graph) -> Result<()> {
        let g = graph.snapshot()?;
        let r = self.get()?.alloc_graph(&g).js();
        self.report(env)?;
        r
    }

    /// ggml_gallocr_get_buffer_size.
    #[napi(catch_unwind)]
    pub fn buffer_size(&mut self, i: Option<f64>) -> Result<i64> {
        let i = uint("bufferSize: i", i.unwrap_or(0.0))?;
        Ok(self.get()?.buffer_size(i) as i64)
    }

    /// The buffers the allocator holds (disposing them frees the allocator's memory).
    #[napi(catch_unwind)]
    pub fn buffers(&mut self) -> Result<BackendBuffer> {
        Ok(BackendBuffer::borrowing(self.get()?.buffers()))
    }
}

disposable!(
    GraphAllocator,
    "Drop the allocator and its hold on its buffers (tensors placed in them keep theirs).",
    external
);
