//! Graph copy to another backend and node-by-node comparison of two backends
//! (ggml_backend_graph_copy / ggml_backend_compare_graph_backend): test-backend-ops'
//! test mode rests on this.

use std::collections::HashMap;

use super::tensor_io::tensor_copy_internal;
use super::Backend;
use crate::alloc::{alloc_tensors, CtxBuffers};
use crate::graph::Graph;
use crate::tensor::{Tensor, TensorSpec};
use crate::{Error, Result};

/// A graph duplicated onto another backend, with its inputs' data copied over.
pub struct GraphCopy {
    pub graph: Graph,
    pub buffers: CtxBuffers,
}

struct Copier {
    copies: HashMap<u64, Tensor>,
    /// (original, copy) in creation order.
    pairs: Vec<(Tensor, Tensor)>,
}

impl Copier {
    fn dup(&mut self, src: &Tensor) -> Result<Tensor> {
        if let Some(t) = self.copies.get(&src.id()) {
            return Ok(t.clone());
        }
        if !src.is_allocated() {
            return Err(Error::invalid(format!(
                "graphCopy: tensor '{}' is not allocated; the graph must be",
                src.label()
            )));
        }
        let view_src = src.view_src().map(|v| self.dup(v)).transpose()?;
        let srcs =
            src.srcs().iter().map(|s| s.as_ref().map(|s| self.dup(s)).transpose()).collect::<Result<Vec<_>>>()?;
        let t = Tensor::from_spec(TensorSpec {
            ty: src.ty(),
            ne: src.ne(),
            nb: src.nb(),
            op: src.op(),
            src: srcs,
            view_src,
            view_offs: src.view_offs(),
            name: src.name(),
        });
        t.set_flags(src.flags());
        self.copies.insert(src.id(), t.clone());
        self.pairs.push((src.clone(), t.clone()));
        Ok(t)
    }
}

/// ggml_backend_graph_copy: every tensor the graph reaches, duplicated with the same
/// layout into new buffers of `backend`, non-view data copied.
pub fn graph_copy(backend: &dyn Backend, graph: &Graph) -> Result<GraphCopy> {
    let mut c = Copier { copies: HashMap::new(), pairs: Vec::new() };
    let nodes = graph.nodes().iter().map(|n| c.dup(n)).collect::<Result<Vec<_>>>()?;
    let copies: Vec<Tensor> = c.pairs.iter().map(|(_, copy)| copy.clone()).collect();
    let buffers = alloc_tensors(&copies, backend.default_buffer_type().as_ref())?;
    for (original, copy) in &c.pairs {
        if !copy.is_view() {
            tensor_copy_internal(original, copy)?;
        }
    }
    let mut g = Graph::with_size(graph.size().max(nodes.len()), false);
    for n in &nodes {
        g.add_node(n)?;
    }
    Ok(GraphCopy { graph: g, buffers })
}

/// ggml_backend_compare_graph_backend: compute `graph` on backend1 and a copy on backend2
/// one node at a time; after each non-view node call `callback(i, t1, t2)`, which returns
/// false to stop. Callers that share the graph's buffers with JS hold a BusyGuard on it.
pub fn compare_graph_backend(
    backend1: &dyn Backend,
    backend2: &dyn Backend,
    graph: &Graph,
    mut callback: impl FnMut(usize, &Tensor, &Tensor) -> Result<bool>,
) -> Result<()> {
    let copy = graph_copy(backend2, graph)?;
    for i in 0..graph.n_nodes() {
        let (t1, t2) = (&graph.nodes()[i], &copy.graph.nodes()[i]);
        backend1.graph_compute(&graph.view(i, i + 1)?)?;
        backend2.graph_compute(&copy.graph.view(i, i + 1)?)?;
        if t1.kind().is_view() {
            continue;
        }
        if !callback(i, t1, t2)? {
            break;
        }
    }
    Ok(())
}
