//! JS class Graph: ggml_cgraph, the ordered nodes a backend computes.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::args::{int, uint};
use crate::error::{disposed, not_constructible, IntoJs, Result};
use crate::tensor::Tensor;

#[napi]
pub struct Graph {
    inner: Option<Arc<Mutex<weft::Graph>>>,
}

impl Graph {
    pub fn wrap(g: weft::Graph) -> Graph {
        Graph { inner: Some(Arc::new(Mutex::new(g))) }
    }

    pub fn lock(&self) -> Result<MutexGuard<'_, weft::Graph>> {
        let g = self.inner.as_ref().ok_or_else(|| disposed("Graph"))?;
        Ok(g.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A copy of the graph (node handles, not data) for work off the JS thread.
    pub fn snapshot(&self) -> Result<weft::Graph> {
        Ok(self.lock()?.clone())
    }
}

#[napi]
impl Graph {
    /// Not callable: graphs are made by ctx.newGraph().
    #[napi(catch_unwind, constructor, skip_typescript)]
    pub fn new() -> Result<Graph> {
        Err(not_constructible("Graph", "ctx.newGraph() and ctx.newGraphCustom()"))
    }

    /// ggml_build_forward_expand: add `t` and all it depends on, sources first.
    #[napi(catch_unwind)]
    pub fn build_forward_expand(&self, t: &Tensor) -> Result<()> {
        self.lock()?.build_forward_expand(t.get()?).js()
    }

    /// ggml_graph_n_nodes.
    #[napi(catch_unwind, getter)]
    pub fn n_nodes(&self) -> Result<u32> {
        Ok(self.lock()?.n_nodes() as u32)
    }

    #[napi(catch_unwind, getter)]
    pub fn n_leafs(&self) -> Result<u32> {
        Ok(self.lock()?.n_leafs() as u32)
    }

    /// ggml_graph_size: the node capacity.
    #[napi(catch_unwind, getter)]
    pub fn size(&self) -> Result<u32> {
        Ok(self.lock()?.size() as u32)
    }

    /// ggml_graph_node: negative indices count from the end.
    #[napi(catch_unwind)]
    pub fn node(&self, i: f64) -> Result<Option<Tensor>> {
        let i: i32 = int("node: i", i)?;
        Ok(self.lock()?.node(i as isize).cloned().map(Tensor::wrap))
    }

    #[napi(catch_unwind)]
    pub fn nodes(&self) -> Result<Vec<Tensor>> {
        Ok(self.lock()?.nodes().iter().cloned().map(Tensor::wrap).collect())
    }

    #[napi(catch_unwind)]
    pub fn leafs(&self) -> Result<Vec<Tensor>> {
        Ok(self.lock()?.leafs().iter().cloned().map(Tensor::wrap).collect())
    }

    /// ggml_graph_add_node: append a node without visiting its sources.
    #[napi(catch_unwind)]
    pub fn add_node(&self, t: &Tensor) -> Result<()> {
        self.lock()?.add_node(t.get()?).js()
    }

    /// ggml_graph_view: nodes i0..i1 as their own graph.
    #[napi(catch_unwind)]
    pub fn view(&self, i0: f64, i1: f64) -> Result<Graph> {
        let (i0, i1) = (uint("graphView: i0", i0)?, uint("graphView: i1", i1)?);
        self.lock()?.view(i0, i1).js().map(Graph::wrap)
    }

    /// ggml_graph_cpy: copy this graph's nodes and leafs into `dst`.
    #[napi(catch_unwind)]
    pub fn cpy(&self, dst: &Graph) -> Result<()> {
        let src = self.snapshot()?;
        src.copy_into(&mut *dst.lock()?).js()
    }

    /// ggml_graph_get_tensor: a node or leaf by name.
    #[napi(catch_unwind)]
    pub fn get_tensor(&self, name: String) -> Result<Option<Tensor>> {
        Ok(self.lock()?.get_tensor(&name).cloned().map(Tensor::wrap))
    }

    /// ggml_graph_reset: the loss's gradient becomes 1, every other node's gradient 0, and
    /// AdamW steps start over. The gradients must be allocated (allocCtxTensors).
    #[napi(catch_unwind)]
    pub fn reset(&self) -> Result<()> {
        self.lock()?.reset().js()
    }

    /// Whether the graph was made with grads (newGraphCustom(size, true)).
    #[napi(catch_unwind, getter)]
    pub fn has_grads(&self) -> Result<bool> {
        Ok(self.lock()?.has_grads())
    }

    /// ggml_graph_clear.
    #[napi(catch_unwind)]
    pub fn clear(&self) -> Result<()> {
        self.lock()?.clear();
        Ok(())
    }
}

disposable!(Graph, "Drop this handle now (its nodes live on while other graphs or tensors use them).");
