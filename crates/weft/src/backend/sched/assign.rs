//! Passes 1 to 4 of ggml_backend_sched_split_graph: give every node, leaf and source of a
//! graph a backend, by where its memory already is, by the weights it reads, by spreading
//! GPU assignments to their neighbours, and by where its inputs are.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::backend::{Backend, Buffer, BufferType, BufferUsage};
use crate::graph::Graph;
use crate::op::OpKind;
use crate::tensor::{flags, Tensor};
use crate::{Error, Result};

/// Why a tensor went to its backend: ggml's SET_CAUSE labels (compiled out in ggml, kept
/// here for the debug view and for tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// set_tensor_backend.
    User,
    /// Pass 1: allocated already, on the best backend that can use its buffer and run it.
    Buffer,
    /// Pass 1: a view whose base is allocated.
    ViewBuffer,
    /// Pass 1: an unallocated graph input goes to the last backend (the CPU).
    Input,
    /// Pass 1: reads host weights, but a higher-priority backend asks to run it (offload_op).
    Offload,
    /// Pass 1: on the backend of the weights its source `i` reads.
    Weight(usize),
    /// Pass 2: took a neighbour's backend while expanding assignments.
    Expand,
    /// Pass 3: unassigned so far; the backend that supports it with most of its inputs.
    Best,
    /// Pass 3: moved up to a higher-priority backend with the same buffer type.
    Upgrade,
    /// Pass 4: a view, on the backend of its base.
    ViewSrc,
    /// Pass 4: a source, on the backend of the node that reads it.
    Consumer,
    /// Pass 5: a copy of a split input in the split's backend.
    Copy,
    /// weft: a tensor no pass reached (a view nothing reads, a leaf only such views use):
    /// its base's backend, else the last one. ggml would leave it unassigned.
    Rest,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::User => f.write_str("usr"),
            Cause::Buffer => f.write_str("1.dst"),
            Cause::ViewBuffer => f.write_str("1.vsrc"),
            Cause::Input => f.write_str("1.inp"),
            Cause::Offload => f.write_str("1.off"),
            Cause::Weight(i) => write!(f, "1.wgt{i}"),
            Cause::Expand => f.write_str("2.sup"),
            Cause::Best => f.write_str("3.best"),
            Cause::Upgrade => f.write_str("3.upg"),
            Cause::ViewSrc => f.write_str("4.vsrc"),
            Cause::Consumer => f.write_str("4.cur"),
            Cause::Copy => f.write_str("4.cpy"),
            Cause::Rest => f.write_str("5.rest"),
        }
    }
}

/// Backend index and cause of every tensor the passes reached, by tensor id (ggml's
/// hv_tensor_backend_ids).
#[derive(Clone, Default)]
pub struct Assignment {
    map: HashMap<u64, (usize, Cause)>,
}

impl Assignment {
    pub fn get(&self, t: &Tensor) -> Option<usize> {
        self.map.get(&t.id()).map(|e| e.0)
    }
    pub fn cause(&self, t: &Tensor) -> Option<Cause> {
        self.map.get(&t.id()).map(|e| e.1)
    }
    pub fn set(&mut self, t: &Tensor, backend: usize, cause: Cause) {
        self.set_id(t.id(), backend, cause);
    }
    pub fn set_id(&mut self, id: u64, backend: usize, cause: Cause) {
        self.map.insert(id, (backend, cause));
    }
    /// `alias` (a rewritten copy of `t`) answers as `t` does.
    pub(crate) fn alias(&mut self, alias: &Tensor, t: &Tensor) {
        if let Some(&e) = self.map.get(&t.id()) {
            self.map.insert(alias.id(), e);
        }
    }
}

/// The buffer a tensor's bytes are in (its base's for views), if allocated.
pub(crate) fn buffer_of(t: &Tensor) -> Option<Arc<dyn Buffer>> {
    t.storage().map(|s| s.buffer)
}

/// The backends of a scheduler, in priority order (the last is the CPU), with the buffer
/// type each allocates compute memory from, and the assignment being built.
pub(crate) struct Passes<'a> {
    pub backends: &'a [Arc<dyn Backend>],
    pub bufts: &'a [Arc<dyn BufferType>],
    pub a: Assignment,
}

impl Passes<'_> {
    fn last(&self) -> usize {
        self.backends.len() - 1
    }

    pub fn names(&self) -> String {
        self.backends.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ")
    }

    /// ggml_backend_sched_backend_from_buffer: the highest-priority backend that can use the
    /// buffer `t` lives in and run `op`.
    fn backend_from_buffer(&self, t: &Tensor, op: &Tensor) -> Option<usize> {
        let buft = buffer_of(t)?.buffer_type();
        (0..self.backends.len())
            .find(|&i| self.backends[i].supports_buft(buft.as_ref()) && self.backends[i].supports_op(op))
    }

    /// ggml_backend_sched_backend_id_from_cur: pass 1 for one tensor.
    fn backend_id_from_cur(&self, t: &Tensor) -> Result<Option<(usize, Cause)>> {
        if let Some(b) = self.backend_from_buffer(t, t) {
            return Ok(Some((b, Cause::Buffer)));
        }
        if let Some(vs) = t.view_src() {
            if let Some(b) = self.backend_from_buffer(vs, t) {
                return Ok(Some((b, Cause::ViewBuffer)));
            }
        }
        if let Some(buf) = buffer_of(t) {
            // Allocated memory cannot move: ggml aborts here.
            return Err(Error::unsupported(format!(
                "scheduler: tensor '{}' ({}) lives in buffer '{}', and no backend that can use that buffer \
                 supports the op (backends: {})",
                t.label(),
                t.op().desc(),
                buf.name(),
                self.names()
            )));
        }
        if t.has_flag(flags::INPUT) {
            return Ok(Some((self.last(), Cause::Input)));
        }
        // Ops reading weights run where the weights are (not ROPE: its frequency factors
        // are too small to decide by).
        for (i, src) in t.srcs().iter().enumerate() {
            let Some(src) = src else { continue };
            let weights = buffer_of(src).is_some_and(|b| b.usage() == BufferUsage::Weights);
            if t.kind() == OpKind::Rope || !weights {
                continue;
            }
            let b = self.backend_from_buffer(src, t);
            if b == Some(self.last()) {
                // A higher-priority backend may ask to run it anyway.
                for (k, be) in self.backends[..self.last()].iter().enumerate() {
                    if be.supports_op(t) && be.offload_op(t) {
                        return Ok(Some((k, Cause::Offload)));
                    }
                }
            }
            return Ok(b.map(|b| (b, Cause::Weight(i))));
        }
        Ok(None)
    }

    /// ggml_backend_sched_buffer_supported: can backend `b` use the memory `t` is (or will
    /// be) in?
    pub fn buffer_supported(&self, t: &Tensor, b: usize) -> bool {
        let buft: Option<Arc<dyn BufferType>> = match buffer_of(t) {
            Some(buf) => Some(buf.buffer_type()),
            None => {
                let id = self.a.get(t).or_else(|| t.view_src().and_then(|v| self.a.get(v)));
                id.map(|i| self.bufts[i].clone())
            }
        };
        buft.is_some_and(|bt| self.backends[b].supports_buft(bt.as_ref()))
    }

    fn set_if_supported(&mut self, node: &Tensor, b: usize) {
        if self.backends[b].supports_op(node) {
            self.a.set(node, b, Cause::Expand);
        }
    }

    /// Passes 1 to 4; then every tensor of the graph has a backend, and every node a
    /// backend that supports it (an Error otherwise, before anything runs).
    pub fn run(&mut self, graph: &Graph) -> Result<()> {
        self.pass1(graph)?;
        self.pass2(graph);
        self.pass3(graph);
        self.pass4(graph);
        self.assign_rest(graph);
        self.check(graph)
    }

    /// Pass 1: tensors with memory go to the backend of their buffer; inputs to the CPU;
    /// ops reading weights to the weights' backend. User assignments stay.
    fn pass1(&mut self, graph: &Graph) -> Result<()> {
        for t in graph.leafs().iter().chain(graph.nodes()) {
            if self.a.get(t).is_none() {
                if let Some((b, cause)) = self.backend_id_from_cur(t)? {
                    self.a.set(t, b, cause);
                }
            }
        }
        Ok(())
    }

    /// Pass 2: spread assignments to unassigned neighbours that the backend supports. GPU
    /// backends (all but the last) first, down then up, so the CPU only gets what it must;
    /// then any backend, down then up.
    fn pass2(&mut self, graph: &Graph) {
        let n = graph.n_nodes();
        self.expand(graph, 0..n, true);
        self.expand(graph, (0..n).rev(), true);
        self.expand(graph, 0..n, false);
        self.expand(graph, (0..n).rev(), false);
    }

    fn expand(&mut self, graph: &Graph, order: impl Iterator<Item = usize>, skip_last: bool) {
        let mut cur: Option<usize> = None;
        for i in order {
            let node = &graph.nodes()[i];
            if node.kind().is_view() {
                continue;
            }
            match self.a.get(node) {
                Some(b) if skip_last && b == self.last() => cur = None,
                Some(b) => cur = Some(b),
                None => {
                    if let Some(b) = cur {
                        self.set_if_supported(node, b);
                    }
                }
            }
        }
    }

    /// Pass 3: an unassigned node goes to the backend that supports it with the most of its
    /// inputs usable in place; an assigned one moves up to a higher-priority backend with
    /// the same buffer type that supports it and can use all its sources.
    fn pass3(&mut self, graph: &Graph) {
        for node in graph.nodes() {
            if node.kind().is_view() {
                continue;
            }
            match self.a.get(node) {
                None => {
                    let mut best: Option<(usize, usize)> = None;
                    for b in 0..self.backends.len() {
                        if !self.backends[b].supports_op(node) {
                            continue;
                        }
                        let n_supported = node
                            .srcs()
                            .iter()
                            .flatten()
                            .filter(|s| {
                                let known =
                                    self.a.get(s).is_some() || s.view_src().is_some_and(|v| self.a.get(v).is_some());
                                known && self.buffer_supported(s, b)
                            })
                            .count();
                        if best.is_none_or(|(_, n)| n_supported > n) {
                            best = Some((b, n_supported));
                        }
                    }
                    if let Some((b, _)) = best {
                        self.a.set(node, b, Cause::Best);
                    }
                }
                Some(cur) => {
                    for b in 0..cur {
                        let same_buft = Arc::ptr_eq(&self.bufts[b], &self.bufts[cur]);
                        if same_buft
                            && self.backends[b].supports_op(node)
                            && node.srcs().iter().flatten().all(|s| self.buffer_supported(s, b))
                        {
                            self.a.set(node, b, Cause::Upgrade);
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Pass 4: views go with their base, unassigned sources with the node reading them.
    /// Where both a view and its base are unknown, both go with the reader (ggml would
    /// leave them unassigned and fail later).
    fn pass4(&mut self, graph: &Graph) {
        for node in graph.nodes() {
            if let Some(vs) = node.view_src() {
                if self.a.get(node).is_none() {
                    if let Some(b) = self.a.get(vs) {
                        self.a.set(node, b, Cause::ViewSrc);
                    }
                }
            }
            let cur = self.a.get(node);
            for src in node.srcs().iter().flatten() {
                if self.a.get(src).is_some() {
                    continue;
                }
                match src.view_src() {
                    Some(vs) => {
                        if self.a.get(vs).is_none() {
                            if let Some(c) = cur {
                                self.a.set(vs, c, Cause::Consumer);
                            }
                        }
                        if let Some(b) = self.a.get(vs) {
                            self.a.set(src, b, Cause::ViewSrc);
                        }
                    }
                    None => {
                        if let Some(c) = cur {
                            self.a.set(src, c, Cause::Consumer);
                        }
                    }
                }
            }
        }
    }

    /// Leaves and views no pass reached (views nobody reads and what only they use): the
    /// base's backend, else the last one, so the allocator has a buffer for everything.
    fn assign_rest(&mut self, graph: &Graph) {
        let all =
            graph.leafs().iter().chain(graph.nodes()).flat_map(|t| std::iter::once(t).chain(t.srcs().iter().flatten()));
        // Nodes that compute are left to `check`: unassigned, nothing supports them.
        let rest = |t: &&Tensor| t.kind().computes_nothing();
        let todo: Vec<Tensor> = all.filter(rest).filter(|t| self.a.get(t).is_none()).cloned().collect();
        for t in todo {
            if let Some(vs) = t.view_src() {
                if self.a.get(vs).is_none() {
                    self.a.set(vs, self.last(), Cause::Rest);
                }
            }
            let b = t.view_src().and_then(|vs| self.a.get(vs)).unwrap_or(self.last());
            if self.a.get(&t).is_none() {
                self.a.set(&t, b, Cause::Rest);
            }
        }
    }

    /// Every node that computes something runs on a backend that supports it and can use
    /// the memory it already has.
    fn check(&self, graph: &Graph) -> Result<()> {
        for node in graph.nodes() {
            if node.kind().computes_nothing() {
                continue;
            }
            let b = self.a.get(node).ok_or_else(|| {
                let srcs: Vec<String> = node.srcs().iter().flatten().map(|s| s.ty().name().to_string()).collect();
                Error::unsupported(format!(
                    "scheduler: no backend supports node '{}' ({}, {} from [{}]); backends: {}",
                    node.label(),
                    node.op().desc(),
                    node.ty(),
                    srcs.join(", "),
                    self.names()
                ))
            })?;
            let be = &self.backends[b];
            if !be.supports_op(node) {
                return Err(Error::unsupported(format!(
                    "scheduler: node '{}' ({}) is set to backend {}, which does not support it",
                    node.label(),
                    node.op().desc(),
                    be.name()
                )));
            }
            if let Some(buf) = buffer_of(node) {
                if !be.supports_buft(buf.buffer_type().as_ref()) {
                    return Err(Error::invalid(format!(
                        "scheduler: node '{}' is set to backend {}, but it lives in buffer '{}', which {} cannot use",
                        node.label(),
                        be.name(),
                        buf.name(),
                        be.name()
                    )));
                }
            }
        }
        Ok(())
    }
}
