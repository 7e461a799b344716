//! Pass 5 of ggml_backend_sched_split_graph: cut the assigned graph into splits of
//! consecutive nodes on one backend, and find each split's inputs (sources it cannot read
//! where they are), which get a copy in the split's backend.
//!
//! ggml points the node's `src[j]` at the copy. weft's tensors are immutable, so the
//! scheduler computes a rewritten twin of every node instead ("shadows": same type, shape,
//! op and memory, sources replaced by copies or by the sources' shadows); the user's
//! tensors are bound to their shadows' memory once the graph is allocated.

use std::collections::HashMap;

use super::assign::{buffer_of, Cause, Passes};
use super::MAX_SPLIT_INPUTS;
use crate::backend::BufferUsage;
use crate::graph::Graph;
use crate::tensor::{flags, Tensor, TensorSpec};
use crate::Result;

/// One split: nodes `i_start..i_end` of the user's graph, run on one backend.
pub(crate) struct Split {
    pub backend: usize,
    pub i_start: usize,
    pub i_end: usize,
    /// The user's tensors this split reads from memory its backend cannot use.
    pub inputs: Vec<Tensor>,
}

/// The scheduler's twins of the graph's tensors, by original id, in creation order.
#[derive(Default)]
pub(crate) struct Shadows {
    map: HashMap<u64, Tensor>,
    pub pairs: Vec<(Tensor, Tensor)>,
}

impl Shadows {
    /// The twin of `t`, or `t` itself when it is not part of the graph.
    pub fn of(&self, t: &Tensor) -> Tensor {
        self.map.get(&t.id()).cloned().unwrap_or_else(|| t.clone())
    }
    pub fn has(&self, t: &Tensor) -> bool {
        self.map.contains_key(&t.id())
    }

    /// Make the twin of `orig` reading `srcs`: a view of its base's twin for views, bound to
    /// the original's memory when the original has memory of its own.
    fn make(&mut self, orig: &Tensor, srcs: Vec<Option<Tensor>>) -> Result<Tensor> {
        let view_src = orig.view_src().map(|v| self.of(v));
        let t = Tensor::from_spec(TensorSpec {
            ty: orig.ty(),
            ne: orig.ne(),
            nb: orig.nb(),
            op: orig.op(),
            src: srcs,
            view_src,
            view_offs: orig.view_offs(),
            name: orig.name(),
        });
        t.set_flags(orig.flags());
        if !orig.is_view() {
            if let Some(s) = orig.storage() {
                t.bind(s.buffer, s.offset)?;
            }
        }
        self.map.insert(orig.id(), t.clone());
        self.pairs.push((orig.clone(), t.clone()));
        Ok(t)
    }

    /// The twin with the sources as they are (each source's twin).
    fn make_plain(&mut self, orig: &Tensor) -> Result<Tensor> {
        let srcs = orig.srcs().iter().map(|s| s.as_ref().map(|s| self.of(s))).collect();
        self.make(orig, srcs)
    }
}

/// ggml_dup_tensor_layout: a new tensor with `t`'s type, shape and strides.
fn dup_layout(t: &Tensor, name: String) -> Tensor {
    Tensor::from_spec(TensorSpec {
        ty: t.ty(),
        ne: t.ne(),
        nb: t.nb(),
        op: crate::op::Op::None,
        src: Vec::new(),
        view_src: None,
        view_offs: 0,
        name,
    })
}

/// Copies of tensors in other backends' memory: (tensor id, backend) -> one per copy slot.
#[derive(Default)]
pub(crate) struct Copies {
    map: HashMap<(u64, usize), Vec<Tensor>>,
}

impl Copies {
    pub fn get(&self, t: &Tensor, backend: usize) -> Option<&Vec<Tensor>> {
        self.map.get(&(t.id(), backend))
    }
}

pub(crate) struct SplitResult {
    pub splits: Vec<Split>,
    pub shadows: Shadows,
    pub copies: Copies,
    /// With n_copies > 1: graph inputs (INPUT-flagged sources), each with n_copies slots.
    pub graph_inputs: Vec<Tensor>,
}

/// Pass 5 over an assigned graph. `cur_copy` picks which of the `n_copies` copy slots the
/// rewritten nodes read.
pub(crate) fn split(p: &mut Passes, graph: &Graph, n_copies: usize, cur_copy: usize) -> Result<SplitResult> {
    let mut shadows = Shadows::default();
    let mut copies = Copies::default();
    let mut graph_inputs: Vec<Tensor> = Vec::new();
    for leaf in graph.leafs() {
        let s = shadows.make_plain(leaf)?;
        p.a.alias(&s, leaf);
    }

    let nodes = graph.nodes();
    let mut splits: Vec<Split> = Vec::new();
    // The first split takes the backend of the first node that is not a view.
    let first = nodes.iter().find(|n| !n.kind().is_view()).or(nodes.first());
    let mut cur = first.and_then(|n| p.a.get(n)).unwrap_or(p.backends.len() - 1);
    let mut split = Split { backend: cur, i_start: 0, i_end: 0, inputs: Vec::new() };

    for (i, node) in nodes.iter().enumerate() {
        if node.kind().is_view() {
            let s = shadows.make_plain(node)?;
            p.a.alias(&s, node);
            continue;
        }
        // Every node has a backend after pass 4 (Passes::run checks).
        let nb = p.a.get(node).unwrap_or(cur);

        // Start a new split when the backend changes, when a weight on an incompatible
        // backend would otherwise be copied into a split that already has inputs (a new
        // split lets the memory of earlier copies be reused), or when the split is full.
        let mut need_new = false;
        if nb == cur && !split.inputs.is_empty() {
            for src in node.srcs().iter().flatten() {
                let sb = p.a.get(src);
                let weights = buffer_of(src).is_some_and(|b| b.usage() == BufferUsage::Weights);
                if weights && sb != Some(cur) && !p.buffer_supported(src, cur) {
                    need_new = true;
                    break;
                }
                if split.inputs.len() >= MAX_SPLIT_INPUTS
                    && sb != Some(cur)
                    && copies.get(src, cur).is_none()
                    && !p.buffer_supported(src, cur)
                {
                    need_new = true;
                    break;
                }
            }
        }
        if nb != cur || need_new {
            split.i_end = i;
            splits.push(std::mem::replace(&mut split, Split { backend: nb, i_start: i, i_end: 0, inputs: Vec::new() }));
            cur = nb;
        }

        // Sources the split's backend cannot read in place are copied in.
        let mut srcs: Vec<Option<Tensor>> = Vec::with_capacity(node.srcs().len());
        for src in node.srcs() {
            let Some(src) = src else {
                srcs.push(None);
                continue;
            };
            let sb = p.a.get(src).unwrap_or(cur);
            if src.has_flag(flags::INPUT) && n_copies > 1 && copies.get(src, sb).is_none() {
                // Graph inputs get n_copies slots in their own backend, the current one being
                // the tensor itself, so the next input can be written while this one is read.
                let name = p.backends[sb].name();
                let slots: Vec<Tensor> = (0..n_copies)
                    .map(|c| {
                        if c == cur_copy {
                            shadows.of(src)
                        } else {
                            dup_layout(src, format!("{name}#{}#{c}", src.name()))
                        }
                    })
                    .collect();
                for t in &slots {
                    if t.ptr_eq(&shadows.of(src)) && !shadows.has(src) {
                        continue; // not the scheduler's to flag
                    }
                    t.set_flags(flags::INPUT | flags::OUTPUT);
                    p.a.set(t, sb, Cause::Copy);
                }
                copies.map.insert((src.id(), sb), slots);
                graph_inputs.push(src.clone());
            }
            if sb != cur && !p.buffer_supported(src, cur) {
                if copies.get(src, cur).is_none() {
                    let name = p.backends[cur].name();
                    let slots: Vec<Tensor> =
                        (0..n_copies).map(|c| dup_layout(src, format!("{name}#{}#{c}", src.name()))).collect();
                    for t in &slots {
                        if n_copies > 1 {
                            // Kept for the whole graph: the next compute writes the other slot.
                            t.set_flags(flags::INPUT | flags::OUTPUT);
                        }
                        p.a.set(t, cur, Cause::Copy);
                    }
                    copies.map.insert((src.id(), cur), slots);
                    split.inputs.push(src.clone());
                }
                srcs.push(copies.get(src, cur).map(|v| v[cur_copy].clone()));
            } else {
                srcs.push(Some(shadows.of(src)));
            }
        }
        let s = shadows.make(node, srcs)?;
        p.a.alias(&s, node);
    }
    if !nodes.is_empty() {
        split.i_end = nodes.len();
        splits.push(split);
    }
    Ok(SplitResult { splits, shadows, copies, graph_inputs })
}
