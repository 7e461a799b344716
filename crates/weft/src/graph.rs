//! The compute graph: ggml's `ggml_cgraph`. Nodes in execution order (sources before
//! users, visited left to right as ggml does), leafs (constants and inputs), and the set of
//! visited tensors. A graph is plain data; backends compute its nodes in order.

use std::collections::HashSet;

use crate::context::{pad, Context, MEM_ALIGN, OBJECT_SIZE};
use crate::op::Op;
use crate::tensor::{flags, Tensor};
use crate::{Error, Result};

/// ggml's `GGML_DEFAULT_GRAPH_SIZE`.
pub const DEFAULT_GRAPH_SIZE: usize = 2048;

/// ggml_hash_size: the smallest of ggml's primes at or above `min`.
pub fn hash_size(min: usize) -> usize {
    const PRIMES: [usize; 32] = [
        2, 3, 5, 11, 17, 37, 67, 131, 257, 521, 1031, 2053, 4099, 8209, 16411, 32771, 65537, 131101, 262147, 524309,
        1048583, 2097169, 4194319, 8388617, 16777259, 33554467, 67108879, 134217757, 268435459, 536870923, 1073741827,
        2147483659,
    ];
    PRIMES.iter().copied().find(|&p| p >= min).unwrap_or(min | 1)
}

/// ggml_graph_nbytes: the bytes ggml lays out for a graph of this size.
fn graph_nbytes(size: usize, grads: bool) -> usize {
    const CGRAPH_STRUCT: usize = 72; // sizeof(struct ggml_cgraph)
    let hs = hash_size(size * 2);
    let ptrs = size * 2 + hs + if grads { size } else { 0 };
    let words = hs.div_ceil(32); // the visited bitset, in u32 words
    CGRAPH_STRUCT + ptrs * 8 + words * 4
}

/// The largest graph weft makes (2^28 nodes): far beyond any model, small enough that
/// graph_nbytes cannot overflow.
pub const MAX_GRAPH_SIZE: usize = 1 << 28;

/// A graph size must be in 1..=MAX_GRAPH_SIZE.
fn check_graph_size(what: &str, size: usize) -> Result<()> {
    if size == 0 || size > MAX_GRAPH_SIZE {
        return Err(Error::invalid(format!("{what}: size={size} must be in 1..=2^28")));
    }
    Ok(())
}

/// ggml_graph_overhead_custom: context memory a graph of this size takes.
pub fn graph_overhead_custom(size: usize, grads: bool) -> Result<usize> {
    check_graph_size("graphOverhead", size)?;
    Ok(OBJECT_SIZE + pad(graph_nbytes(size, grads), MEM_ALIGN))
}

/// ggml_graph_overhead.
pub fn graph_overhead() -> usize {
    OBJECT_SIZE + pad(graph_nbytes(DEFAULT_GRAPH_SIZE, false), MEM_ALIGN)
}

#[derive(Clone)]
pub struct Graph {
    size: usize,
    grads: bool,
    nodes: Vec<Tensor>,
    leafs: Vec<Tensor>,
    visited: HashSet<u64>,
    hash_capacity: usize,
}

impl Context {
    /// ggml_new_graph: room for 2048 nodes, no gradients.
    pub fn new_graph(&self) -> Result<Graph> {
        self.new_graph_custom(DEFAULT_GRAPH_SIZE, false)
    }

    /// ggml_new_graph_custom.
    pub fn new_graph_custom(&self, size: usize, grads: bool) -> Result<Graph> {
        check_graph_size("newGraphCustom", size)?;
        self.alloc_graph_object(graph_nbytes(size, grads))?;
        Ok(Graph::with_size(size, grads))
    }

    /// ggml_graph_dup: a new graph of `g`'s size and grads setting holding `g`'s nodes and
    /// leafs (a backward graph usually starts as one, so graph_reset finds the loss).
    pub fn graph_dup(&self, g: &Graph) -> Result<Graph> {
        let mut out = self.new_graph_custom(g.size(), g.has_grads())?;
        g.copy_into(&mut out)?;
        Ok(out)
    }
}

impl Graph {
    /// A graph that is not accounted to any context (ggml_graph_view's result, copies).
    pub fn with_size(size: usize, grads: bool) -> Graph {
        Graph {
            size,
            grads,
            nodes: Vec::new(),
            leafs: Vec::new(),
            visited: HashSet::new(),
            hash_capacity: hash_size(size * 2),
        }
    }

    /// A graph of exactly these nodes and leafs in this order, not accounted to any context
    /// (the scheduler's copy of a graph with its split inputs added).
    pub(crate) fn from_parts(nodes: Vec<Tensor>, leafs: Vec<Tensor>) -> Graph {
        let mut g = Graph::with_size(nodes.len().max(leafs.len()).max(1), false);
        g.visited = nodes.iter().chain(&leafs).map(|t| t.id()).collect();
        g.nodes = nodes;
        g.leafs = leafs;
        g
    }

    pub fn size(&self) -> usize {
        self.size
    }
    pub fn has_grads(&self) -> bool {
        self.grads
    }
    pub fn n_nodes(&self) -> usize {
        self.nodes.len()
    }
    pub fn n_leafs(&self) -> usize {
        self.leafs.len()
    }
    pub fn nodes(&self) -> &[Tensor] {
        &self.nodes
    }
    pub fn leafs(&self) -> &[Tensor] {
        &self.leafs
    }
    /// ggml_graph_node: negative indices count from the end.
    pub fn node(&self, i: isize) -> Option<&Tensor> {
        let n = self.nodes.len() as isize;
        let idx = if i < 0 { n + i } else { i };
        if (0..n).contains(&idx) {
            self.nodes.get(idx as usize)
        } else {
            None
        }
    }
    pub fn contains(&self, t: &Tensor) -> bool {
        self.visited.contains(&t.id())
    }

    /// ggml_build_forward_expand: add `t` and every tensor it depends on.
    pub fn build_forward_expand(&mut self, t: &Tensor) -> Result<()> {
        let n0 = self.nodes.len();
        // Iterative DFS with ggml's visiting order: sources left to right, then the node.
        let mut stack: Vec<(Tensor, usize)> = Vec::new();
        if !self.insert_visited(t)? {
            return Ok(());
        }
        stack.push((t.clone(), 0));
        while let Some((node, next_src)) = stack.pop() {
            let mut i = next_src;
            let mut descended = false;
            while i < node.srcs().len() {
                if let Some(s) = node.src(i) {
                    if self.insert_visited(s)? {
                        let s = s.clone();
                        stack.push((node.clone(), i + 1));
                        stack.push((s, 0));
                        descended = true;
                        break;
                    }
                }
                i += 1;
            }
            if !descended {
                self.record(&node)?;
            }
        }
        if self.nodes.len() > n0 {
            debug_assert!(self.nodes.last().is_some_and(|n| n.ptr_eq(t)) || t.op() == Op::None);
        }
        Ok(())
    }

    fn insert_visited(&mut self, t: &Tensor) -> Result<bool> {
        if self.visited.contains(&t.id()) {
            return Ok(false);
        }
        if self.visited.len() >= self.hash_capacity {
            return Err(Error::oom(format!(
                "buildForwardExpand: the graph's hash set is full ({} tensors)",
                self.hash_capacity
            )));
        }
        self.visited.insert(t.id());
        Ok(true)
    }

    fn record(&mut self, t: &Tensor) -> Result<()> {
        let is_leaf = t.op() == Op::None && !t.has_flag(flags::PARAM);
        if is_leaf {
            if self.leafs.len() >= self.size {
                return Err(Error::oom(format!("buildForwardExpand: graph is full ({} leafs)", self.size)));
            }
            if t.name().is_empty() {
                t.set_name(&format!("leaf_{}", self.leafs.len()));
            }
            self.leafs.push(t.clone());
        } else {
            if self.nodes.len() >= self.size {
                return Err(Error::oom(format!("buildForwardExpand: graph is full ({} nodes)", self.size)));
            }
            if t.name().is_empty() {
                t.set_name(&format!("node_{}", self.nodes.len()));
            }
            self.nodes.push(t.clone());
        }
        Ok(())
    }

    /// ggml_graph_add_node: append a node without visiting its sources.
    pub fn add_node(&mut self, t: &Tensor) -> Result<()> {
        if self.nodes.len() >= self.size {
            return Err(Error::oom(format!("graphAddNode: graph is full ({} nodes)", self.size)));
        }
        self.nodes.push(t.clone());
        self.visited.insert(t.id());
        Ok(())
    }

    /// ggml_graph_view: nodes i0..i1 as a graph of their own (no leafs).
    pub fn view(&self, i0: usize, i1: usize) -> Result<Graph> {
        if i0 > i1 || i1 > self.nodes.len() {
            return Err(Error::invalid(format!("graphView: range {i0}..{i1} is outside 0..{}", self.nodes.len())));
        }
        let mut g = Graph::with_size(i1 - i0, self.grads);
        g.nodes = self.nodes[i0..i1].to_vec();
        g.visited = g.nodes.iter().map(|t| t.id()).collect();
        Ok(g)
    }

    /// ggml_graph_cpy: copy nodes, leafs and visited set into `dst`, which must be as big.
    pub fn copy_into(&self, dst: &mut Graph) -> Result<()> {
        if dst.size < self.leafs.len() || dst.size < self.nodes.len() || dst.hash_capacity < self.visited.len() {
            return Err(Error::invalid(format!(
                "graphCpy: destination of size {} cannot hold {} nodes and {} leafs",
                dst.size,
                self.nodes.len(),
                self.leafs.len()
            )));
        }
        if self.grads && !dst.grads {
            return Err(Error::invalid("graphCpy: source has gradients but the destination has none"));
        }
        dst.nodes = self.nodes.clone();
        dst.leafs = self.leafs.clone();
        dst.visited.extend(self.visited.iter().copied());
        Ok(())
    }

    /// ggml_graph_clear.
    pub fn clear(&mut self) {
        self.nodes.clear();
        self.leafs.clear();
        self.visited.clear();
    }

    /// ggml_graph_get_tensor: a node or leaf by name.
    pub fn get_tensor(&self, name: &str) -> Option<&Tensor> {
        self.leafs.iter().chain(self.nodes.iter()).find(|t| t.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ContextParams;
    use crate::types::Type;

    #[test]
    fn overhead_matches_ggml() {
        // Worked from ggml_graph_nbytes: 72 + 2048*16 + 4099*8 + 129*4 = 66148, padded to
        // 66160, plus the 32-byte object header.
        assert_eq!(graph_overhead(), 66192);
        assert_eq!(graph_overhead_custom(2048, false), Ok(66192));
        assert_eq!(hash_size(4096), 4099);
    }

    #[test]
    fn overhead_refuses_sizes_no_graph_can_have() {
        // 2^62 nodes once overflowed the byte count (a wrapped number reached JS).
        for size in [0, MAX_GRAPH_SIZE + 1, 1 << 62, usize::MAX] {
            let e = graph_overhead_custom(size, true).unwrap_err();
            assert!(e.message.contains("must be in 1..=2^28"), "{e}");
        }
        assert!(graph_overhead_custom(MAX_GRAPH_SIZE, true).unwrap() > MAX_GRAPH_SIZE * 24);
    }

    #[test]
    fn order_is_sources_first_left_to_right() {
        let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
        let a = ctx.new_tensor_1d(Type::F32, 4).unwrap();
        let b = ctx.new_tensor_1d(Type::F32, 4).unwrap();
        let ab = ctx.add(&a, &b).unwrap();
        let sq = ctx.sqr(&a).unwrap();
        let out = ctx.mul(&ab, &sq).unwrap();
        let mut g = ctx.new_graph().unwrap();
        g.build_forward_expand(&out).unwrap();
        let ids: Vec<u64> = g.nodes().iter().map(|t| t.id()).collect();
        assert_eq!(ids, vec![ab.id(), sq.id(), out.id()]);
        assert_eq!(g.leafs().len(), 2);
        assert_eq!(g.leafs()[0].name(), "leaf_0");
        assert_eq!(out.name(), "node_2");
        // Expanding again adds nothing.
        g.build_forward_expand(&out).unwrap();
        assert_eq!(g.n_nodes(), 3);
        assert!(g.node(-1).unwrap().ptr_eq(&out));
        let v = g.view(1, 3).unwrap();
        assert_eq!(v.n_nodes(), 2);
    }

    #[test]
    fn graph_full_is_an_error() {
        let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
        let mut g = ctx.new_graph_custom(2, false).unwrap();
        let mut t = ctx.new_tensor_1d(Type::F32, 4).unwrap();
        for _ in 0..3 {
            t = ctx.sqr(&t).unwrap();
        }
        let e = g.build_forward_expand(&t).unwrap_err();
        assert!(e.message.contains("graph is full"), "{}", e.message);
    }
}
