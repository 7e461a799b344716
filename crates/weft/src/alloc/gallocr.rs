//! The graph allocator (ggml's gallocr): plans an offset for every tensor a graph needs by
//! walking the nodes in order, freeing a tensor's memory once its last consumer has run
//! and letting in-place-capable ops take over their parent's memory. `reserve` measures
//! the worst case and allocates buffers; `alloc_graph` binds tensors to the plan.

use std::collections::HashMap;
use std::sync::Arc;

use super::free_blocks::FreeBlocks;
use crate::backend::{Buffer, BufferType, BufferUsage};
use crate::graph::Graph;
use crate::tensor::{flags, Tensor};
use crate::{Error, Result};

#[derive(Clone, Copy, Default, Debug)]
struct HashNode {
    n_children: i32,
    n_views: i32,
    buffer_id: usize,
    offset: usize,
    allocated: bool,
}

/// Where the plan put one tensor; `size_max` 0 means external or a view.
#[derive(Clone, Copy, Debug)]
struct TensorAlloc {
    buffer_id: Option<usize>,
    offset: usize,
    size_max: usize,
}

const EXTERNAL: TensorAlloc = TensorAlloc { buffer_id: None, offset: 0, size_max: 0 };

struct NodeAlloc {
    dst: TensorAlloc,
    src: Vec<TensorAlloc>,
}

pub struct GraphAllocator {
    bufts: Vec<Arc<dyn BufferType>>,
    /// One planner per distinct buffer type; `talloc_of[i]` indexes it for buffer i.
    tallocs: Vec<FreeBlocks>,
    talloc_of: Vec<usize>,
    buffers: Vec<Option<Arc<dyn Buffer>>>,
    hash: HashMap<u64, HashNode>,
    node_allocs: Vec<NodeAlloc>,
    leaf_allocs: Vec<TensorAlloc>,
}

fn same_layout(a: &Tensor, b: &Tensor) -> bool {
    a.ty() == b.ty() && a.ne() == b.ne() && a.nb() == b.nb()
}

fn same_storage(a: &Tensor, b: &Tensor) -> bool {
    match (a.storage(), b.storage()) {
        (None, None) => true,
        (Some(x), Some(y)) => Arc::ptr_eq(&x.buffer, &y.buffer) && x.offset == y.offset,
        _ => false,
    }
}

impl GraphAllocator {
    /// ggml_gallocr_new: all tensors in buffers of one type.
    pub fn new(buft: Arc<dyn BufferType>) -> GraphAllocator {
        Self::new_n(vec![buft])
    }

    /// ggml_gallocr_new_n: buffer i of type bufts[i]; a type listed twice shares one buffer.
    pub fn new_n(bufts: Vec<Arc<dyn BufferType>>) -> GraphAllocator {
        let mut tallocs: Vec<FreeBlocks> = Vec::new();
        let mut talloc_of = Vec::new();
        for (i, b) in bufts.iter().enumerate() {
            match bufts[..i].iter().position(|p| Arc::ptr_eq(p, b)) {
                Some(j) => talloc_of.push(talloc_of[j]),
                None => {
                    tallocs.push(FreeBlocks::new(b.alignment()));
                    talloc_of.push(tallocs.len() - 1);
                }
            }
        }
        let n = bufts.len();
        GraphAllocator {
            bufts,
            tallocs,
            talloc_of,
            buffers: vec![None; n],
            hash: HashMap::new(),
            node_allocs: Vec::new(),
            leaf_allocs: Vec::new(),
        }
    }

    /// ggml_gallocr_get_buffer_size: bytes of buffer i (0 for a repeat of an earlier one).
    pub fn buffer_size(&self, i: usize) -> usize {
        match self.buffers.get(i).and_then(|b| b.as_ref()) {
            None => 0,
            Some(b) if self.buffers[..i].iter().flatten().any(|p| Arc::ptr_eq(p, b)) => 0,
            Some(b) => b.size(),
        }
    }

    pub fn buffers(&self) -> Vec<Arc<dyn Buffer>> {
        self.buffers.iter().flatten().cloned().collect()
    }

    fn hn(&mut self, t: &Tensor) -> &mut HashNode {
        self.hash.entry(t.id()).or_default()
    }

    fn is_own(&mut self, t: &Tensor) -> bool {
        self.hn(t).allocated
    }

    fn is_allocated(&mut self, t: &Tensor) -> bool {
        t.is_allocated() || self.hn(t).allocated
    }

    fn alloc_size(&self, buffer_id: usize, t: &Tensor) -> usize {
        self.bufts[buffer_id].alloc_size(t)
    }

    fn allocate_node(&mut self, node: &Tensor, buffer_id: usize) -> Result<()> {
        if self.is_allocated(node) || node.is_view() {
            return Ok(());
        }
        self.hn(node).allocated = true;

        // Take over a parent's memory when the op can run in place and the parent has no
        // other consumer.
        if node.kind().can_inplace() {
            for parent in node.srcs().iter().flatten() {
                if !self.is_own(parent) {
                    continue; // external memory is never reused
                }
                let parent_is_output =
                    parent.has_flag(flags::OUTPUT) || parent.view_src().is_some_and(|v| v.has_flag(flags::OUTPUT));
                if parent_is_output || !same_layout(node, parent) {
                    continue;
                }
                let p = *self.hn(parent);
                if p.n_children != 1 || p.n_views != 0 {
                    continue;
                }
                if let Some(view_src) = parent.view_src() {
                    let v = *self.hn(view_src);
                    if v.n_views == 1 && v.n_children == 0 && same_storage(view_src, parent) {
                        let hn = self.hn(node);
                        hn.buffer_id = p.buffer_id;
                        hn.offset = p.offset;
                        self.hn(parent).allocated = false;
                        self.hn(view_src).allocated = false;
                        return Ok(());
                    }
                } else {
                    let hn = self.hn(node);
                    hn.buffer_id = p.buffer_id;
                    hn.offset = p.offset;
                    self.hn(parent).allocated = false;
                    return Ok(());
                }
            }
        }
        let size = self.alloc_size(buffer_id, node);
        let ti = self.talloc_of[buffer_id];
        let offset = self.tallocs[ti].alloc(size, &node.label())?;
        let hn = self.hn(node);
        hn.buffer_id = buffer_id;
        hn.offset = offset;
        Ok(())
    }

    fn free_node(&mut self, node: &Tensor) -> Result<()> {
        if node.has_flag(flags::OUTPUT) {
            return Ok(()); // graph outputs stay
        }
        let hn = *self.hn(node);
        let size = self.alloc_size(hn.buffer_id, node);
        let ti = self.talloc_of[hn.buffer_id];
        self.tallocs[ti].free(hn.offset, size)?;
        self.hn(node).allocated = false;
        Ok(())
    }

    fn check_ids(&self, ids: Option<&[usize]>, n: usize, what: &str) -> Result<()> {
        if let Some(ids) = ids {
            if ids.len() != n {
                return Err(Error::invalid(format!(
                    "graphAllocator: {what} buffer ids: {} given for {n} tensors",
                    ids.len()
                )));
            }
            if let Some(bad) = ids.iter().find(|&&i| i >= self.bufts.len()) {
                return Err(Error::invalid(format!(
                    "graphAllocator: buffer id {bad} out of range 0..{}",
                    self.bufts.len()
                )));
            }
        }
        Ok(())
    }

    fn plan(&mut self, graph: &Graph, node_ids: Option<&[usize]>, leaf_ids: Option<&[usize]>) -> Result<()> {
        let id_of = |ids: Option<&[usize]>, i: usize| ids.map_or(0, |v| v[i]);
        self.hash.clear();

        for (i, leaf) in graph.leafs().iter().enumerate() {
            self.allocate_node(leaf, id_of(leaf_ids, i))?;
        }

        // Count consumers and views; place explicit inputs first so nothing overwrites them.
        for (i, node) in graph.nodes().iter().enumerate() {
            if let Some(view_src) = node.view_src() {
                if node.kind() != crate::op::OpKind::None {
                    self.hn(view_src).n_views += 1;
                }
            }
            if node.has_flag(flags::INPUT) {
                self.allocate_node(node, id_of(node_ids, i))?;
            }
            for src in node.srcs().iter().flatten() {
                self.hn(src).n_children += 1;
                if src.has_flag(flags::INPUT) {
                    self.allocate_node(src, id_of(node_ids, i))?;
                }
            }
        }

        for (i, node) in graph.nodes().iter().enumerate() {
            let buffer_id = id_of(node_ids, i);
            for parent in node.srcs().iter().flatten() {
                self.allocate_node(parent, buffer_id)?;
            }
            self.allocate_node(node, buffer_id)?;

            for parent in node.srcs().iter().flatten() {
                let p = {
                    let p = self.hn(parent);
                    p.n_children -= 1;
                    *p
                };
                if p.n_children != 0 || p.n_views != 0 {
                    continue;
                }
                if let Some(view_src) = parent.view_src() {
                    let v = {
                        let v = self.hn(view_src);
                        v.n_views -= 1;
                        *v
                    };
                    if v.n_views == 0 && v.n_children == 0 && v.allocated {
                        self.free_node(view_src)?;
                    }
                } else if p.allocated {
                    self.free_node(parent)?;
                }
            }
        }
        Ok(())
    }

    fn record(&mut self, t: &Tensor) -> TensorAlloc {
        if t.is_view() || t.is_allocated() {
            return EXTERNAL;
        }
        let hn = *self.hn(t);
        TensorAlloc { buffer_id: Some(hn.buffer_id), offset: hn.offset, size_max: self.alloc_size(hn.buffer_id, t) }
    }

    /// ggml_gallocr_reserve: plan the graph and (re)allocate buffers big enough for it.
    pub fn reserve(&mut self, graph: &Graph) -> Result<()> {
        self.reserve_n(graph, None, None)
    }

    /// ggml_gallocr_reserve_n: with a buffer id per node and per leaf.
    pub fn reserve_n(&mut self, graph: &Graph, node_ids: Option<&[usize]>, leaf_ids: Option<&[usize]>) -> Result<()> {
        self.check_ids(node_ids, graph.n_nodes(), "node")?;
        self.check_ids(leaf_ids, graph.n_leafs(), "leaf")?;
        self.tallocs.iter_mut().for_each(FreeBlocks::reset);
        self.plan(graph, node_ids, leaf_ids)?;

        self.node_allocs = graph
            .nodes()
            .iter()
            .map(|node| {
                let dst = self.record(node);
                let src = node.srcs().iter().map(|s| s.as_ref().map_or(EXTERNAL, |s| self.record(s))).collect();
                NodeAlloc { dst, src }
            })
            .collect();
        self.leaf_allocs = graph.leafs().iter().map(|l| self.record(l)).collect();

        for i in 0..self.bufts.len() {
            // A buffer type listed twice shares the first one's buffer.
            if let Some(j) = (0..i).find(|&j| self.talloc_of[j] == self.talloc_of[i]) {
                self.buffers[i] = self.buffers[j].clone();
                continue;
            }
            let cur = self.buffers[i].as_ref().map_or(0, |b| b.size());
            let need = self.tallocs[self.talloc_of[i]].max_size();
            if need > cur || self.buffers[i].is_none() {
                let b = self.bufts[i].alloc_buffer(need)?;
                b.set_usage(BufferUsage::Compute);
                self.buffers[i] = Some(b);
            }
        }
        Ok(())
    }

    fn fits(&self, t: &Tensor, a: &TensorAlloc) -> bool {
        let need =
            if t.is_allocated() || t.is_view() { 0 } else { a.buffer_id.map_or(usize::MAX, |b| self.alloc_size(b, t)) };
        a.size_max >= need
    }

    /// Whether the last plan cannot place `graph` (another node count, or a tensor larger
    /// than its planned slot): alloc_graph would have to re-plan (ggml_gallocr_needs_realloc).
    pub fn needs_realloc(&self, graph: &Graph) -> bool {
        if self.node_allocs.len() != graph.n_nodes() || self.leaf_allocs.len() != graph.n_leafs() {
            return true;
        }
        for (node, na) in graph.nodes().iter().zip(&self.node_allocs) {
            if !self.fits(node, &na.dst) {
                return true;
            }
            for (j, src) in node.srcs().iter().enumerate() {
                if let Some(s) = src {
                    if na.src.get(j).is_none_or(|a| !self.fits(s, a)) {
                        return true;
                    }
                }
            }
        }
        false
    }

    fn init_tensor(&self, t: &Tensor, a: &TensorAlloc) -> Result<()> {
        if t.is_view() || t.is_allocated() {
            return Ok(()); // views derive their memory; external tensors keep theirs
        }
        let Some(bid) = a.buffer_id else {
            return Err(Error::invalid(format!(
                "graph allocator: no plan for tensor '{}'; call reserve first",
                t.label()
            )));
        };
        let buffer = self.buffers[bid]
            .clone()
            .ok_or_else(|| Error::invalid("graph allocator: buffers not allocated; call reserve first"))?;
        t.bind(buffer, a.offset)
    }

    /// ggml_gallocr_alloc_graph: bind every unallocated tensor of the graph, re-planning
    /// first if the graph changed (single-buffer allocators only, as in ggml).
    pub fn alloc_graph(&mut self, graph: &Graph) -> Result<()> {
        if self.needs_realloc(graph) {
            if self.bufts.len() != 1 {
                return Err(Error::invalid(
                    "allocGraph: the graph changed; call reserve first (multi-buffer allocator)",
                ));
            }
            self.reserve(graph)?;
        }
        for (leaf, a) in graph.leafs().iter().zip(&self.leaf_allocs) {
            self.init_tensor(leaf, a)?;
        }
        for (node, na) in graph.nodes().iter().zip(&self.node_allocs) {
            for (src, a) in node.srcs().iter().zip(&na.src) {
                if let Some(s) = src {
                    self.init_tensor(s, a)?;
                }
            }
            self.init_tensor(node, &na.dst)?;
        }
        Ok(())
    }
}
