//! The scheduler's assignment as data (each split's backend, nodes and inputs) and as the
//! text ggml prints with GGML_SCHED_DEBUG set (ggml_backend_sched_print_assignments).

use std::fmt::Write;
use std::sync::Arc;

use super::assign::Assignment;
use super::split::SplitResult;
use crate::backend::Backend;
use crate::graph::Graph;
use crate::tensor::Tensor;

/// A tensor as the debug view shows it.
#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub name: String,
    pub bytes: usize,
    /// The backend it was assigned to ("" if none).
    pub backend: String,
    /// The pass that decided ("1.wgt0", "2.sup", ...; see assign::Cause).
    pub cause: String,
}

#[derive(Clone, Debug)]
pub struct NodeInfo {
    /// Index in the user's graph.
    pub index: usize,
    pub op: String,
    pub tensor: TensorInfo,
    /// Its sources as the split reads them: copies are named BACKEND#name#slot.
    pub srcs: Vec<TensorInfo>,
}

#[derive(Clone, Debug)]
pub struct SplitInfo {
    pub backend: String,
    pub i_start: usize,
    pub i_end: usize,
    /// The tensors copied into this split's backend before it runs (their own backend in
    /// `backend`).
    pub inputs: Vec<TensorInfo>,
    /// The split's nodes that compute something (views left out, as ggml prints).
    pub nodes: Vec<NodeInfo>,
}

fn info(t: &Tensor, a: &Assignment, backends: &[Arc<dyn Backend>]) -> TensorInfo {
    TensorInfo {
        name: t.name(),
        bytes: t.nbytes(),
        backend: a.get(t).map(|b| backends[b].name()).unwrap_or_default(),
        cause: a.cause(t).map(|c| c.to_string()).unwrap_or_default(),
    }
}

pub(crate) fn collect(graph: &Graph, r: &SplitResult, a: &Assignment, backends: &[Arc<dyn Backend>]) -> Vec<SplitInfo> {
    r.splits
        .iter()
        .map(|s| SplitInfo {
            backend: backends[s.backend].name(),
            i_start: s.i_start,
            i_end: s.i_end,
            inputs: s.inputs.iter().map(|t| info(t, a, backends)).collect(),
            nodes: (s.i_start..s.i_end)
                .filter(|&i| !graph.nodes()[i].kind().is_view())
                .map(|i| {
                    let twin = r.shadows.of(&graph.nodes()[i]);
                    NodeInfo {
                        index: i,
                        op: twin.op().name().to_string(),
                        tensor: info(&twin, a, backends),
                        srcs: twin.srcs().iter().flatten().map(|t| info(t, a, backends)).collect(),
                    }
                })
                .collect(),
        })
        .collect()
}

/// ggml's fmt_size: whole MiB from 1 MiB up, whole KiB below.
fn fmt_size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{}M", bytes >> 20)
    } else {
        format!("{}K", bytes >> 10)
    }
}

/// printf's "%W.Ws": right-aligned in W columns, cut to W characters.
fn fixed(s: &str, w: usize) -> String {
    let cut: String = s.chars().take(w).collect();
    format!("{cut:>w$}")
}

fn tensor_line(t: &TensorInfo) -> String {
    // ggml cuts backend names to 5 characters; 8 keep "WebGPU0" and "WebGPU1" apart.
    format!(
        "{} ({}) [{} {}]",
        fixed(&t.name, 20),
        fixed(&fmt_size(t.bytes), 5),
        fixed(&t.backend, 8),
        fixed(&t.cause, 8)
    )
}

/// The split list as ggml prints it; `verbose` adds a line per node with its sources
/// (GGML_SCHED_DEBUG=2).
pub fn describe(splits: &[SplitInfo], verbose: bool) -> String {
    let mut out = String::new();
    for (i, s) in splits.iter().enumerate() {
        let _ = write!(out, "## SPLIT #{i}: {} # {} inputs: ", s.backend, s.inputs.len());
        for input in &s.inputs {
            let _ = write!(out, "[{} ({})] ", input.name, fixed(&fmt_size(input.bytes), 5));
        }
        out.push('\n');
        if verbose {
            for n in &s.nodes {
                let _ = write!(out, "node #{:>3} ({}): {}:", n.index, fixed(&n.op, 10), tensor_line(&n.tensor));
                for src in &n.srcs {
                    let _ = write!(out, " {}", tensor_line(src));
                }
                out.push('\n');
            }
        }
    }
    out
}
