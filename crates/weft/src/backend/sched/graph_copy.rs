//! The graph the allocator plans (ggml's sched->graph): each split's nodes, preceded by a
//! view of every input (so the input's memory lives until it is copied) and by the
//! input's copy (so the copy is placed at the start of the split), with a backend per node
//! and per leaf choosing the buffer.

use super::assign::Assignment;
use super::split::SplitResult;
use crate::graph::Graph;
use crate::op::Op;
use crate::tensor::{Tensor, TensorSpec};
use crate::{Error, Result};

pub(crate) struct AllocGraph {
    pub graph: Graph,
    pub node_ids: Vec<usize>,
    pub leaf_ids: Vec<usize>,
}

/// ggml_view_tensor(input) with `input` as its source: computes nothing, but the allocator
/// keeps `input` alive up to it.
fn input_dep(input: &Tensor) -> Tensor {
    let (view_src, view_offs) = match input.view_src() {
        Some(base) => (base.clone(), input.view_offs()),
        None => (input.clone(), 0),
    };
    Tensor::from_spec(TensorSpec {
        ty: input.ty(),
        ne: input.ne(),
        nb: input.nb(),
        op: Op::None,
        src: vec![Some(input.clone())],
        view_src: Some(view_src),
        view_offs,
        name: format!("{} (view)", input.name()),
    })
}

fn backend_of(a: &Assignment, t: &Tensor) -> Result<usize> {
    a.get(t).ok_or_else(|| Error::backend(format!("scheduler: internal error: tensor '{}' has no backend", t.label())))
}

pub(crate) fn build(
    graph: &Graph,
    r: &SplitResult,
    a: &Assignment,
    n_copies: usize,
    cur_copy: usize,
) -> Result<AllocGraph> {
    let mut nodes = Vec::new();
    let mut node_ids = Vec::new();
    for split in &r.splits {
        for input in &split.inputs {
            let src = r.shadows.of(input);
            nodes.push(input_dep(&src));
            node_ids.push(backend_of(a, input)?);
            let copy = copy_slot(r, input, split.backend, cur_copy)?;
            nodes.push(copy);
            node_ids.push(split.backend);
        }
        for node in &graph.nodes()[split.i_start..split.i_end] {
            nodes.push(r.shadows.of(node));
            node_ids.push(backend_of(a, node)?);
        }
    }

    let mut leafs = Vec::new();
    let mut leaf_ids = Vec::new();
    if n_copies > 1 {
        // Every copy slot is a leaf, so all are placed first and none is overwritten.
        for input in &r.graph_inputs {
            let b = backend_of(a, input)?;
            for c in 0..n_copies {
                leafs.push(copy_slot(r, input, b, c)?);
                leaf_ids.push(b);
            }
        }
        for split in &r.splits {
            for input in &split.inputs {
                for c in 0..n_copies {
                    leafs.push(copy_slot(r, input, split.backend, c)?);
                    leaf_ids.push(split.backend);
                }
            }
        }
    }
    for leaf in graph.leafs() {
        leafs.push(r.shadows.of(leaf));
        leaf_ids.push(backend_of(a, leaf)?);
    }
    Ok(AllocGraph { graph: Graph::from_parts(nodes, leafs), node_ids, leaf_ids })
}

fn copy_slot(r: &SplitResult, input: &Tensor, backend: usize, c: usize) -> Result<Tensor> {
    r.copies.get(input, backend).and_then(|v| v.get(c)).cloned().ok_or_else(|| {
        Error::backend(format!("scheduler: internal error: no copy {c} of '{}' in backend {backend}", input.label()))
    })
}
