//! JS class GraphAllocator: ggml_gallocr, memory for a graph's intermediate tensors planned
//! by liveness (tensors share memory once their consumers have run).

use crate::backend::{Backend, BackendBuffer};
use crate::error::{disposed, to_usize, IntoJs, Result};
use crate::graph::Graph;

#[napi]
pub struct GraphAllocator {
    inner: Option<weft::alloc::GraphAllocator>,
}

impl GraphAllocator {
    fn get(&mut self) -> Result<&mut weft::alloc::GraphAllocator> {
        self.inner.as_mut().ok_or_else(|| disposed("GraphAllocator"))
    }
}

#[napi]
impl GraphAllocator {
    /// ggml_gallocr_new with the backend's default buffer type.
    #[napi(catch_unwind, constructor)]
    pub fn new(backend: &Backend) -> Result<GraphAllocator> {
        let buft = backend.get()?.default_buffer_type();
        Ok(GraphAllocator { inner: Some(weft::alloc::GraphAllocator::new(buft)) })
    }

    /// ggml_gallocr_reserve: plan the graph and allocate a buffer for its worst case.
    #[napi(catch_unwind)]
    pub fn reserve(&mut self, graph: &Graph) -> Result<()> {
        let g = graph.snapshot()?;
        self.get()?.reserve(&g).js()
    }

    /// ggml_gallocr_alloc_graph: bind every unallocated tensor of the graph.
    #[napi(catch_unwind)]
    pub fn alloc_graph(&mut self, graph: &Graph) -> Result<()> {
        let g = graph.snapshot()?;
        self.get()?.alloc_graph(&g).js()
    }

    /// ggml_gallocr_get_buffer_size.
    #[napi(catch_unwind)]
    pub fn buffer_size(&mut self, i: Option<i64>) -> Result<i64> {
        let i = to_usize("bufferSize: i", i.unwrap_or(0))?;
        Ok(self.get()?.buffer_size(i) as i64)
    }

    /// The buffers the allocator holds.
    #[napi(catch_unwind)]
    pub fn buffers(&mut self) -> Result<BackendBuffer> {
        Ok(BackendBuffer::from_buffers(self.get()?.buffers()))
    }
}

disposable!(GraphAllocator, "Drop the allocator and its hold on its buffers (tensors placed in them keep theirs).");
