//! Autodiff: build_backward_expand, graph_reset, accumulation and the AdamW step, plus the
//! finite-difference check of every backward rule (backward/*.rs).
//!
//! `cargo test -p weft --test backward -- --nocapture` prints each rule's error figures.

mod common;
#[path = "backward/elementwise.rs"]
mod elementwise;
#[path = "backward/fd.rs"]
mod fd;
#[path = "backward/foreign_buffer.rs"]
mod foreign_buffer;
#[path = "backward/layout.rs"]
mod layout;
#[path = "backward/nn.rs"]
mod nn;

use fd::{get, graphs, meta_ctx, param, set};
use weft::alloc::alloc_ctx_tensors;
use weft::backend::cpu::CpuBackend;
use weft::backend::Backend;
use weft::op::AdamwParams;
use weft::tensor::flags;
use weft::{ErrorKind, Type};

/// loss = sum(w * x^2) for a parameter x and constant weights w: dloss/dx = 2 w x.
fn quadratic(ctx: &weft::Context) -> (weft::Tensor, weft::Tensor, weft::Tensor) {
    let x = param(ctx, "x", &[3]);
    let w = ctx.new_tensor_1d(Type::F32, 3).unwrap();
    let loss = ctx.sum(&ctx.mul(&ctx.sqr(&x).unwrap(), &w).unwrap()).unwrap();
    (x, w, loss)
}

/// quadratic() allocated, garbage in every tensor, then x = [1, -2, 0.5], w = [1, 2, 3] and
/// gb reset: dloss/dx = [2, -8, 3].
fn quadratic_ready(accumulate: bool) -> (weft::Context, weft::Tensor, weft::Tensor, fd::Setup) {
    let ctx = meta_ctx();
    let (x, w, loss) = quadratic(&ctx);
    let s = fd::setup(&ctx, &loss, accumulate, (-5.0, 5.0));
    set(&x, &[1.0, -2.0, 0.5]);
    set(&w, &[1.0, 2.0, 3.0]);
    s.gb.reset().unwrap();
    (ctx, x, loss, s)
}

#[test]
fn gradients_worked_by_hand_and_reset() {
    // Garbage everywhere first: reset must make the gradients start from 1 and 0.
    let (_ctx, x, loss, fd::Setup { gf, gb, cpu, .. }) = quadratic_ready(false);
    assert_eq!(get(&loss.grad().unwrap()), vec![1.0]);
    for n in gb.nodes().iter().filter(|n| !n.has_flag(flags::LOSS)) {
        if let Some(g) = n.grad() {
            assert!(get(&g).iter().all(|&v| v == 0.0), "gradient of {} is not zeroed", n.name());
        }
    }
    cpu.graph_compute(&gf).unwrap();
    cpu.graph_compute(&gb).unwrap();
    assert_eq!(get(&loss), vec![1.0 + 8.0 + 0.75]);
    assert_eq!(get(&x.grad().unwrap()), vec![2.0, -8.0, 3.0]);
    // The suite's structural check: a parameter's gradient is computed, not a leaf.
    assert_ne!(x.grad().unwrap().op(), weft::Op::None);
    assert!(gb.n_nodes() > gf.n_nodes());
}

#[test]
fn accumulate_adds_across_computes_until_reset() {
    let (_ctx, x, _, fd::Setup { gb, cpu, .. }) = quadratic_ready(true);
    let grad = x.grad().unwrap();
    // The accumulated gradient is written into the placeholder's memory.
    assert!(grad.view_src().is_some(), "accumulating gradient is an in-place view");
    cpu.graph_compute(&gb).unwrap();
    assert_eq!(get(&grad), vec![2.0, -8.0, 3.0]);
    // A second batch (x changed) adds its gradient on top.
    set(&x, &[0.5, 0.5, 0.5]);
    cpu.graph_compute(&gb).unwrap();
    assert_eq!(get(&grad), vec![3.0, -6.0, 6.0]);
    gb.reset().unwrap();
    assert_eq!(get(&grad), vec![0.0; 3]);
    cpu.graph_compute(&gb).unwrap();
    assert_eq!(get(&grad), vec![1.0, 2.0, 3.0]);
}

#[test]
fn accumulate_through_every_kind_of_contribution() {
    // A parameter reached through a plain add, a subtraction, a sum (add1) and a view (acc):
    // each must add in place when accumulating. loss = sum(p) - sum(2 p) + sum(view(p)).
    let ctx = meta_ctx();
    let p = param(&ctx, "p", &[4]);
    let s1 = ctx.sum(&p).unwrap();
    let s2 = ctx.sum(&ctx.scale(&p, 2.0).unwrap()).unwrap();
    let s3 = ctx.sum(&ctx.view_1d(&p, 2, 4).unwrap()).unwrap();
    let neg = ctx.neg(&p).unwrap();
    let loss = ctx.add(&ctx.sub(&ctx.add(&s1, &s3).unwrap(), &s2).unwrap(), &ctx.sum(&neg).unwrap()).unwrap();
    let fd::Setup { gf, gb, cpu, buffers: _buffers, .. } = fd::setup(&ctx, &loss, true, (-1.0, 1.0));
    gb.reset().unwrap();
    cpu.graph_compute(&gf).unwrap();
    // d/dp: 1 - 2 - 1 + [0, 1, 1, 0] (the view covers elements 1 and 2)
    let once = vec![-2.0, -1.0, -1.0, -2.0];
    cpu.graph_compute(&gb).unwrap();
    assert_eq!(get(&p.grad().unwrap()), once);
    cpu.graph_compute(&gb).unwrap();
    assert_eq!(get(&p.grad().unwrap()), once.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
}

#[test]
fn two_backward_passes_sum_two_batches() {
    // Gradient accumulation as training uses it: batch 1 and batch 2 through an MLP-like
    // graph with accumulate, against the sum of the two separately computed gradients.
    let run = |accumulate: bool, batches: &[&[f32]]| -> Vec<f32> {
        let ctx = meta_ctx();
        let w = param(&ctx, "w", &[3, 2]);
        let xin = ctx.new_tensor_2d(Type::F32, 3, 4).unwrap();
        let h = ctx.mul_mat(&w, &xin).unwrap();
        let loss = ctx.sum(&ctx.sqr(&ctx.relu(&h).unwrap()).unwrap()).unwrap();
        let fd::Setup { gb, cpu, buffers: _buffers, .. } = fd::setup(&ctx, &loss, accumulate, (-1.0, 1.0));
        set(&w, &[0.5, -0.25, 1.0, 0.75, 0.2, -0.6]);
        gb.reset().unwrap();
        for b in batches {
            set(&xin, b);
            cpu.graph_compute(&gb).unwrap();
        }
        get(&w.grad().unwrap())
    };
    let b1: Vec<f32> = fd::uniform(12, 1, -1.0, 1.0);
    let b2: Vec<f32> = fd::uniform(12, 2, -1.0, 1.0);
    let both = run(true, &[&b1, &b2]);
    let g1 = run(false, &[&b1]);
    let g2 = run(false, &[&b2]);
    for i in 0..6 {
        assert!((both[i] - (g1[i] + g2[i])).abs() < 1e-5, "{i}: {} vs {} + {}", both[i], g1[i], g2[i]);
    }
    // Without accumulate, a second compute overwrites.
    assert_eq!(run(false, &[&b1, &b2]), g2);
}

#[test]
fn unused_parameter_keeps_a_zero_placeholder() {
    let ctx = meta_ctx();
    let (x, w, loss) = quadratic(&ctx);
    let unused = param(&ctx, "unused", &[2]);
    let keep = ctx.add(&loss, &ctx.sum(&ctx.step(&unused).unwrap()).unwrap()).unwrap();
    let fd::Setup { gf, gb, loss: loss2, cpu, buffers: _buffers, .. } = fd::setup(&ctx, &keep, false, (1.0, 2.0));
    set(&w, &[1.0, 1.0, 1.0]);
    gb.reset().unwrap();
    cpu.graph_compute(&gf).unwrap();
    cpu.graph_compute(&gb).unwrap();
    let g = unused.grad().unwrap();
    assert_eq!(g.op(), weft::Op::None, "STEP passes nothing back: the placeholder stays");
    assert_eq!(get(&g), vec![0.0, 0.0]);
    assert_eq!(get(&x.grad().unwrap()), get(&x).iter().map(|v| 2.0 * v).collect::<Vec<_>>());
    assert!(loss2.ptr_eq(&keep));
}

/// build_backward_expand's error for a graph (with grads) computing `out`; gb must be left
/// as it was.
fn backward_error(ctx: &weft::Context, out: &weft::Tensor) -> weft::Error {
    let mut gf = ctx.new_graph_custom(64, true).unwrap();
    gf.build_forward_expand(out).unwrap();
    let mut gb = ctx.graph_dup(&gf).unwrap();
    let n0 = gb.n_nodes();
    let e = ctx.build_backward_expand(&gf, &mut gb, false).unwrap_err();
    assert_eq!(gb.n_nodes(), n0, "gb is left as it was");
    e
}

#[test]
fn errors_for_wrong_use() {
    let ctx = meta_ctx();
    let a = ctx.new_tensor_1d(Type::F32, 4).unwrap();
    let out = ctx.sum(&ctx.sqr(&a).unwrap()).unwrap();
    assert!(backward_error(&ctx, &out).message.contains("no parameter"));
    // Marked too late: a is already a leaf of this graph.
    let mut gf = ctx.new_graph_custom(64, true).unwrap();
    gf.build_forward_expand(&out).unwrap();
    a.set_param();
    let e = ctx.build_backward_expand(&gf, &mut ctx.graph_dup(&gf).unwrap(), false).unwrap_err();
    assert!(e.message.contains("after buildForwardExpand made it a leaf"), "{}", e.message);

    // A forward graph without grads.
    let mut plain = ctx.new_graph_custom(64, false).unwrap();
    plain.build_forward_expand(&out).unwrap();
    let e = ctx.build_backward_expand(&plain, &mut ctx.graph_dup(&gf).unwrap(), false).unwrap_err();
    assert!(e.message.contains("without grads"), "{}", e.message);
    assert!(plain.reset().unwrap_err().message.contains("without grads"));
    let mut no_grads = ctx.new_graph().unwrap();
    assert!(gf.copy_into(&mut no_grads).unwrap_err().message.contains("gradients"));

    // setLoss needs a scalar f32.
    assert!(a.set_loss().unwrap_err().message.contains("must be a scalar f32"));

    // In place on the gradient path; CLAMP (always in place) of a parameter.
    let ctx = meta_ctx();
    let p = param(&ctx, "p", &[4]);
    let y = ctx.sqr_inplace(&ctx.scale(&p, 2.0).unwrap()).unwrap();
    assert!(backward_error(&ctx, &ctx.sum(&y).unwrap()).message.contains("in place"));
    let clamped = ctx.clamp(&p, 0.0, 1.0).unwrap();
    assert!(backward_error(&ctx, &ctx.sum(&clamped).unwrap()).message.contains("in place"));

    // An op without a rule: an error, and the gradients are as before.
    let ctx = meta_ctx();
    let p = param(&ctx, "p", &[4, 4]);
    let sorted = ctx.argsort(&p, weft::op::SortOrder::Asc).unwrap();
    let f = ctx.get_rows(&ctx.reshape_2d(&p, 4, 4).unwrap(), &ctx.view_1d(&sorted, 4, 0).unwrap()).unwrap();
    let e = backward_error(&ctx, &ctx.sum(&ctx.upscale(&f, 2).unwrap()).unwrap());
    assert_eq!(e.kind, ErrorKind::NotImplemented);
    assert!(e.message.contains("UPSCALE has no backward rule"), "{}", e.message);
    assert!(p.grad().is_none(), "gradients are rolled back");

    // Reset before the gradients have memory.
    let ctx = meta_ctx();
    let (_, _, loss) = quadratic(&ctx);
    let (_, gb, _) = graphs(&ctx, &loss, false);
    assert!(gb.reset().unwrap_err().message.contains("not allocated"));
}

#[test]
fn adamw_step_on_every_parameter() {
    let ctx = meta_ctx();
    let (x, w, loss) = quadratic(&ctx);
    let b = param(&ctx, "b", &[1]);
    let total = ctx.add(&loss, &ctx.sum(&ctx.sqr(&b).unwrap()).unwrap()).unwrap();
    let (gf, mut gb, _) = graphs(&ctx, &total, false);
    let n_grad = gb.n_nodes();
    let p = AdamwParams { alpha: 0.1, ..AdamwParams::default() };
    ctx.build_opt_adamw(&gf, &mut gb, p).unwrap();
    let steps: Vec<_> = gb.nodes()[n_grad..].to_vec();
    assert_eq!(steps.len(), 2, "one OPT_STEP_ADAMW per parameter");
    assert!(steps.iter().all(|s| s.kind() == weft::OpKind::OptStepAdamw));
    let cpu = CpuBackend::new(1).unwrap();
    let _buf = alloc_ctx_tensors(&ctx, &cpu).unwrap();
    fd::randomize(&ctx, -1.0, 1.0);
    set(&x, &[1.0, -2.0, 0.5]);
    set(&w, &[1.0, 1.0, 1.0]);
    set(&b, &[3.0]);
    gb.reset().unwrap();
    // First AdamW step: m = (1-b1) g, v = (1-b2) g^2, both bias-corrected back to g and g^2,
    // so every parameter moves by alpha * g / (|g| + eps): -0.1 * sign(g).
    cpu.graph_compute(&gb).unwrap();
    let xs = get(&x);
    for (got, want) in xs.iter().zip([0.9, -1.9, 0.4]) {
        assert!((got - want).abs() < 1e-6, "{xs:?}");
    }
    assert!((get(&b)[0] - 2.9).abs() < 1e-6);
    // Many steps minimize the quadratic.
    for _ in 0..200 {
        cpu.graph_compute(&gb).unwrap();
    }
    cpu.graph_compute(&gf).unwrap();
    assert!(get(&total)[0] < 1e-2, "loss {}", get(&total)[0]);
    // Reset restarts the optimizer: iteration 1, moments zero.
    gb.reset().unwrap();
    for s in &steps {
        assert!(matches!(s.op(), weft::Op::OptStepAdamw { iter: 1, .. }));
        assert!(get(s.src(2).unwrap()).iter().all(|&v| v == 0.0));
    }
    // Without gradients there is nothing to step.
    let ctx2 = meta_ctx();
    let (_, _, l2) = quadratic(&ctx2);
    let mut gf2 = ctx2.new_graph_custom(64, true).unwrap();
    gf2.build_forward_expand(&l2).unwrap();
    let mut gb2 = ctx2.graph_dup(&gf2).unwrap();
    let e = ctx2.build_opt_adamw(&gf2, &mut gb2, AdamwParams::default()).unwrap_err();
    assert!(e.message.contains("buildBackwardExpand first"), "{}", e.message);
}

#[test]
fn graph_dup_keeps_grads_and_nodes() {
    let ctx = meta_ctx();
    let (_, _, loss) = quadratic(&ctx);
    let mut gf = ctx.new_graph_custom(100, true).unwrap();
    gf.build_forward_expand(&loss).unwrap();
    let used = ctx.used_mem();
    let d = ctx.graph_dup(&gf).unwrap();
    assert!(ctx.used_mem() > used, "the copy is accounted to the context");
    assert!(d.has_grads() && d.size() == 100);
    assert_eq!(d.n_nodes(), gf.n_nodes());
    assert_eq!(d.n_leafs(), gf.n_leafs());
    assert!(d.nodes().iter().zip(gf.nodes()).all(|(a, b)| a.ptr_eq(b)));
}

#[test]
fn fits_test_backend_ops_context_budget() {
    // test-backend-ops' grad mode gives a context 128 tensor objects and two graphs; a
    // typical case (MUL_MAT with both operands as parameters, the output summed) must fit.
    let mem = weft::context::tensor_overhead() * 128 + 2 * weft::graph::graph_overhead_custom(2048, true).unwrap();
    let ctx = weft::Context::new(weft::ContextParams { mem_size: mem, no_alloc: true }).unwrap();
    let a = param(&ctx, "a", &[16, 16, 1, 1]);
    let b = param(&ctx, "b", &[16, 16, 1, 1]);
    let out = ctx.sum(&ctx.mul_mat(&a, &b).unwrap()).unwrap();
    out.set_loss().unwrap();
    let mut gf = ctx.new_graph_custom(2048, true).unwrap();
    let mut gb = ctx.new_graph_custom(2048, true).unwrap();
    gf.build_forward_expand(&out).unwrap();
    gf.copy_into(&mut gb).unwrap();
    ctx.build_backward_expand(&gf, &mut gb, false).unwrap();
    assert!(a.grad().is_some() && b.grad().is_some());
}
