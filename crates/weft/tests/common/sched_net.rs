//! The small graph most scheduler tests run, built twice from the same values: in a
//! no_alloc context whose tensors the test places (weights in chosen buffers, the input
//! left to the scheduler), and in a host context computed by the plain CPU backend as the
//! reference.
#![allow(dead_code)]

use std::sync::Arc;

use weft::alloc::alloc_tensors;
use weft::backend::cpu::CpuBackend;
use weft::backend::sched::{Scheduler, SchedulerParams};
use weft::backend::{Backend, BufferType, BufferUsage};
use weft::tensor::flags;
use weft::{Context, ContextParams, Graph, Tensor, Type};

use super::{get, host_ctx, rand_vec, set};

pub struct Net {
    pub ctx: Context,
    pub x: Tensor,
    pub w: Tensor,
    pub b: Tensor,
    pub mm: Tensor,
    pub h: Tensor,
    pub y: Tensor,
    pub out: Tensor,
    pub graph: Graph,
}

/// x: [4, n_tok] input; w: [4, 2] weights; b: [2] bias.
/// mm = w·x, h = mm + b, y = h², out = y / 2.
fn build(ctx: Context, n_tok: i64) -> Net {
    let x = ctx.new_tensor_2d(Type::F32, 4, n_tok).unwrap();
    let w = ctx.new_tensor_2d(Type::F32, 4, 2).unwrap();
    let b = ctx.new_tensor_1d(Type::F32, 2).unwrap();
    let mm = ctx.mul_mat(&w, &x).unwrap();
    let h = ctx.add(&mm, &b).unwrap();
    let y = ctx.sqr(&h).unwrap();
    let out = ctx.scale(&y, 0.5).unwrap();
    for (t, n) in [(&x, "x"), (&w, "w"), (&b, "b"), (&mm, "mm"), (&h, "h"), (&y, "y"), (&out, "out")] {
        t.set_name(n);
    }
    let mut graph = ctx.new_graph().unwrap();
    graph.build_forward_expand(&out).unwrap();
    Net { ctx, x, w, b, mm, h, y, out, graph }
}

impl Net {
    /// w in a `w_buft` buffer, b in a `b_buft` buffer (both marked as weights), x left
    /// unallocated and flagged as a graph input.
    pub fn placed(n_tok: i64, w_buft: &dyn BufferType, b_buft: &dyn BufferType) -> Net {
        let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
        let n = build(ctx, n_tok);
        n.x.set_flags(flags::INPUT);
        n.out.set_flags(flags::OUTPUT);
        for (t, buft) in [(&n.w, w_buft), (&n.b, b_buft)] {
            let bufs = alloc_tensors(std::slice::from_ref(t), buft).unwrap();
            bufs.set_usage(BufferUsage::Weights);
        }
        set(&n.w, &rand_vec(8, 1));
        set(&n.b, &rand_vec(2, 2));
        n
    }

    /// The reference: the same graph on the CPU backend, from the same values.
    pub fn reference(n_tok: i64, x: &[f32]) -> Vec<f32> {
        let n = build(host_ctx(), n_tok);
        set(&n.x, x);
        set(&n.w, &rand_vec(8, 1));
        set(&n.b, &rand_vec(2, 2));
        CpuBackend::new(1).unwrap().graph_compute(&n.graph).unwrap();
        get(&n.out)
    }
}

pub fn sched(backends: Vec<Arc<dyn Backend>>, n_copies: usize) -> Scheduler {
    Scheduler::new(SchedulerParams { backends, bufts: None, graph_size: 64, n_copies }).unwrap()
}

/// (backend name, cause) the scheduler gave `t`.
pub fn placed_on(s: &Scheduler, t: &Tensor) -> (String, String) {
    let b = s.get_tensor_backend(t).map(|b| b.name()).unwrap_or_default();
    let c = s.get_tensor_cause(t).map(|c| c.to_string()).unwrap_or_default();
    (b, c)
}

/// Each split as (backend, input names, names of its nodes that compute).
pub fn split_list(s: &Scheduler) -> Vec<(String, Vec<String>, Vec<String>)> {
    s.splits()
        .iter()
        .map(|sp| {
            let inputs = sp.inputs.iter().map(|t| t.name.clone()).collect();
            let nodes = sp.nodes.iter().map(|n| n.tensor.name.clone()).collect();
            (sp.backend.clone(), inputs, nodes)
        })
        .collect()
}

pub fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}
