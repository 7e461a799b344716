//! The scheduler's assignment passes and splits, on graphs whose outcome is worked out by
//! hand from ggml's five passes (comments give the reasoning, node by node), each computed
//! through the scheduler and compared element by element with the plain CPU backend.
//! Backends are the test doubles of common/fake_backends.rs, so the outcome does not
//! depend on which ops the real WebGPU backend has kernels for.

mod common;

use std::sync::Arc;

use common::fake_backends::{refuse_none, take_log, FakeAccel, FakeGpu, LogCpu};
use common::sched_net::{placed_on, sched, split_list, strs, Net};
use common::{get, rand_vec, set};
use weft::alloc::alloc_tensors;
use weft::backend::cpu::{CpuBackend, CpuBufferType};
use weft::backend::sched::debug::describe;
use weft::backend::{Backend, BufferUsage};
use weft::op::OpKind;
use weft::tensor::flags;
use weft::{Context, ContextParams, ErrorKind, Tensor, Type};

fn p(b: &str, c: &str) -> (String, String) {
    (b.to_string(), c.to_string())
}

fn refuse_sqr(t: &Tensor) -> bool {
    t.kind() == OpKind::Sqr
}

fn gpu_cpu(gpu: &Arc<FakeGpu>, cpu: &Arc<LogCpu>) -> Vec<Arc<dyn Backend>> {
    vec![gpu.clone(), cpu.clone()]
}

/// Weights in host memory feeding a GPU graph: w (CPU weights) and b (GPU weights).
///
/// Pass 1, leafs: w is in a CPU buffer -> CPU (1.dst); x is an unallocated input -> the
/// last backend, CPU (1.inp); b in a GPU buffer -> GPU (1.dst). Nodes: mm reads weights w
/// (src 0), whose backend is the CPU; the GPU does not ask to offload a batch of 3 ->
/// CPU (1.wgt0). h reads weights b (src 1) -> GPU (1.wgt1). y, out: nothing yet.
/// Pass 2, GPU down: mm is CPU (skip), h GPU, so y and out -> GPU (2.sup).
/// Pass 5: split 0 CPU [mm]; h changes backend: split 1 GPU [h y out], whose input mm
/// (GPU cannot use CPU memory) is copied. 2 splits.
#[test]
fn host_weights_feed_a_gpu_graph() {
    let (gpu, cpu) = (FakeGpu::new(refuse_none, true), LogCpu::new(refuse_none));
    let mut s = sched(gpu_cpu(&gpu, &cpu), 1);
    let n = Net::placed(3, CpuBufferType::get().as_ref(), gpu.device().buffer_type().as_ref());
    s.alloc_graph(&n.graph).unwrap();
    assert_eq!(placed_on(&s, &n.w), p("CPU", "1.dst"));
    assert_eq!(placed_on(&s, &n.x), p("CPU", "1.inp"));
    assert_eq!(placed_on(&s, &n.b), p("FakeGPU", "1.dst"));
    assert_eq!(placed_on(&s, &n.mm), p("CPU", "1.wgt0"));
    assert_eq!(placed_on(&s, &n.h), p("FakeGPU", "1.wgt1"));
    assert_eq!(placed_on(&s, &n.y), p("FakeGPU", "2.sup"));
    assert_eq!(placed_on(&s, &n.out), p("FakeGPU", "2.sup"));
    assert_eq!(s.n_splits(), 2);
    assert_eq!(
        split_list(&s),
        vec![("CPU".into(), vec![], strs(&["mm"])), ("FakeGPU".into(), strs(&["mm"]), strs(&["h", "y", "out"]))]
    );
    // The GGML_SCHED_DEBUG text, as ggml prints it (8-byte mm: 0K).
    assert_eq!(
        describe(s.splits(), false),
        "## SPLIT #0: CPU # 0 inputs: \n## SPLIT #1: FakeGPU # 1 inputs: [mm (   0K)] \n"
    );
    // h reads the copy of mm in GPU memory, named as ggml names it.
    let h_srcs: Vec<String> = s.splits()[1].nodes[0].srcs.iter().map(|t| t.name.clone()).collect();
    assert_eq!(h_srcs, strs(&["FakeGPU#mm#0", "b"]));

    let xv = rand_vec(12, 3);
    set(&n.x, &xv);
    s.graph_compute(&n.graph).unwrap();
    assert_eq!(get(&n.out), Net::reference(3, &xv));
    assert_eq!(take_log(&cpu.log), strs(&["mm"]));
    assert_eq!(take_log(&gpu.log), strs(&["h", "y", "out"]));
}

/// The same with a batch of 32: the GPU's offload_op (batch >= 32) takes mm although its
/// weights are in host memory -> GPU (1.off); everything is on the GPU, one split whose
/// inputs are w and x (both in CPU memory, copied in that order: mm's sources).
#[test]
fn a_large_batch_is_offloaded() {
    let (gpu, cpu) = (FakeGpu::new(refuse_none, true), LogCpu::new(refuse_none));
    let mut s = sched(gpu_cpu(&gpu, &cpu), 1);
    let n = Net::placed(32, CpuBufferType::get().as_ref(), gpu.device().buffer_type().as_ref());
    s.alloc_graph(&n.graph).unwrap();
    assert_eq!(placed_on(&s, &n.mm), p("FakeGPU", "1.off"));
    assert_eq!(split_list(&s), vec![("FakeGPU".into(), strs(&["w", "x"]), strs(&["mm", "h", "y", "out"]))]);
    let xv = rand_vec(128, 4);
    set(&n.x, &xv);
    s.graph_compute(&n.graph).unwrap();
    assert_eq!(get(&n.out), Net::reference(32, &xv));
    assert!(take_log(&cpu.log).is_empty());
}

/// set_tensor_backend overrides the passes: h pinned to the CPU.
///
/// Pass 1: h is the user's (usr); mm CPU (1.wgt0) as before. Pass 2, GPU down/up: no
/// GPU node to spread from; any backend down: mm CPU, h CPU, so y, out -> CPU (2.sup).
/// Pass 5: one CPU split [mm h y out]; h's source b is in GPU memory: its only input.
#[test]
fn set_tensor_backend_overrides_the_passes() {
    let (gpu, cpu) = (FakeGpu::new(refuse_none, true), LogCpu::new(refuse_none));
    let backends = gpu_cpu(&gpu, &cpu);
    let mut s = sched(backends.clone(), 1);
    let n = Net::placed(3, CpuBufferType::get().as_ref(), gpu.device().buffer_type().as_ref());
    s.set_tensor_backend(&n.h, &backends[1]).unwrap();
    s.alloc_graph(&n.graph).unwrap();
    assert_eq!(placed_on(&s, &n.h), p("CPU", "usr"));
    assert_eq!(placed_on(&s, &n.y), p("CPU", "2.sup"));
    assert_eq!(placed_on(&s, &n.out), p("CPU", "2.sup"));
    assert_eq!(split_list(&s), vec![("CPU".into(), strs(&["b"]), strs(&["mm", "h", "y", "out"]))]);
    let xv = rand_vec(12, 5);
    set(&n.x, &xv);
    s.graph_compute(&n.graph).unwrap();
    assert_eq!(get(&n.out), Net::reference(3, &xv));
    assert!(take_log(&gpu.log).is_empty());
    // reset forgets the pin: the passes decide again (2 splits, as in the first test).
    s.reset();
    assert!(s.get_tensor_backend(&n.h).is_none());
    let n2 = Net::placed(3, CpuBufferType::get().as_ref(), gpu.device().buffer_type().as_ref());
    s.alloc_graph(&n2.graph).unwrap();
    assert_eq!(s.n_splits(), 2);
    // A backend the scheduler does not have is an error.
    let other: Arc<dyn Backend> = Arc::new(CpuBackend::new(1).unwrap());
    let e = s.set_tensor_backend(&n.h, &other).unwrap_err();
    assert!(e.message.contains("not one of this scheduler's (FakeGPU, CPU)"), "{e}");
}

/// An op the GPU refuses in the middle of a GPU graph. x is in GPU memory (not weights),
/// w in GPU weights. a = x + w, s = a², t = s·w (elementwise), out = t * 2.
///
/// Pass 1: x, w leafs -> GPU (1.dst); a reads weights w (src 1) -> GPU (1.wgt1); s: no
/// weights; t reads w -> GPU (1.wgt1); out: nothing. Pass 2, GPU down: a GPU, s refused
/// (stays), t GPU, out -> GPU (2.sup); up and the rest change nothing (s refused).
/// Pass 3: s unassigned; the GPU does not support it; the CPU does, with 0 usable inputs
/// (a will be in GPU memory) -> CPU (3.best). Pass 5: [GPU a] [CPU s, input a]
/// [GPU t out, input s]: 3 splits.
#[test]
fn an_op_the_gpu_refuses_in_the_middle() {
    let (gpu, cpu) = (FakeGpu::new(refuse_sqr, false), LogCpu::new(refuse_none));
    let mut sch = sched(gpu_cpu(&gpu, &cpu), 1);
    let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
    let x = ctx.new_tensor_2d(Type::F32, 5, 3).unwrap();
    let w = ctx.new_tensor_2d(Type::F32, 5, 3).unwrap();
    let a = ctx.add(&x, &w).unwrap();
    let s = ctx.sqr(&a).unwrap();
    let t = ctx.mul(&s, &w).unwrap();
    let out = ctx.scale(&t, 2.0).unwrap();
    for (v, name) in [(&x, "x"), (&w, "w"), (&a, "a"), (&s, "s"), (&t, "t"), (&out, "out")] {
        v.set_name(name);
    }
    let gbuft = gpu.device().buffer_type();
    alloc_tensors(std::slice::from_ref(&x), gbuft.as_ref()).unwrap();
    alloc_tensors(std::slice::from_ref(&w), gbuft.as_ref()).unwrap().set_usage(BufferUsage::Weights);
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&out).unwrap();
    sch.alloc_graph(&g).unwrap();
    assert_eq!(placed_on(&sch, &a), p("FakeGPU", "1.wgt1"));
    assert_eq!(placed_on(&sch, &s), p("CPU", "3.best"));
    assert_eq!(placed_on(&sch, &t), p("FakeGPU", "1.wgt1"));
    assert_eq!(placed_on(&sch, &out), p("FakeGPU", "2.sup"));
    assert_eq!(
        split_list(&sch),
        vec![
            ("FakeGPU".into(), vec![], strs(&["a"])),
            ("CPU".into(), strs(&["a"]), strs(&["s"])),
            ("FakeGPU".into(), strs(&["s"]), strs(&["t", "out"])),
        ]
    );
    let (xv, wv) = (rand_vec(15, 6), rand_vec(15, 7));
    set(&x, &xv);
    set(&w, &wv);
    sch.graph_compute(&g).unwrap();
    let want: Vec<f32> = xv.iter().zip(&wv).map(|(x, w)| (x + w) * (x + w) * w * 2.0).collect();
    assert_eq!(get(&out), want);
    assert_eq!(take_log(&cpu.log), strs(&["s"]));
    assert_eq!(take_log(&gpu.log), strs(&["a", "t", "out"]));
}

/// Without any weights nothing is assigned before pass 3, which then keeps the tail on
/// the CPU. x in GPU memory; a = x + x, s = a², out = s / 2.
///
/// Pass 1: x -> GPU (1.dst); no node. Pass 2: nothing to spread. Pass 3 in node order:
/// a: GPU supports it with 2 usable inputs (x twice), CPU with 0 -> GPU (3.best). s: only
/// the CPU supports it -> CPU (3.best). out: GPU has 0 usable inputs (s will be in CPU
/// memory), CPU 1 -> CPU (3.best). Pass 5: [GPU a] [CPU s out, input a].
#[test]
fn pass_three_picks_the_backend_with_most_inputs() {
    let (gpu, cpu) = (FakeGpu::new(refuse_sqr, false), LogCpu::new(refuse_none));
    let mut sch = sched(gpu_cpu(&gpu, &cpu), 1);
    let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
    let x = ctx.new_tensor_1d(Type::F32, 6).unwrap();
    let a = ctx.add(&x, &x).unwrap();
    let s = ctx.sqr(&a).unwrap();
    let out = ctx.scale(&s, 0.5).unwrap();
    for (v, name) in [(&x, "x"), (&a, "a"), (&s, "s"), (&out, "out")] {
        v.set_name(name);
    }
    alloc_tensors(std::slice::from_ref(&x), gpu.device().buffer_type().as_ref()).unwrap();
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&out).unwrap();
    sch.alloc_graph(&g).unwrap();
    for (t, want) in [(&x, p("FakeGPU", "1.dst")), (&a, p("FakeGPU", "3.best")), (&s, p("CPU", "3.best"))] {
        assert_eq!(placed_on(&sch, t), want, "{}", t.name());
    }
    assert_eq!(placed_on(&sch, &out), p("CPU", "3.best"));
    assert_eq!(
        split_list(&sch),
        vec![("FakeGPU".into(), vec![], strs(&["a"])), ("CPU".into(), strs(&["a"]), strs(&["s", "out"]))]
    );
    let xv = rand_vec(6, 8);
    set(&x, &xv);
    sch.graph_compute(&g).unwrap();
    let want: Vec<f32> = xv.iter().map(|v| (2.0 * v) * (2.0 * v) * 0.5).collect();
    assert_eq!(get(&out), want);
}

/// Pass 3's upgrade: a BLAS-like backend sharing the CPU buffer type takes a MUL_MAT the
/// passes gave the CPU. w: CPU weights; x: unallocated input; s = w², mm = s·x.
///
/// Pass 1: w -> Accel (1.dst: the first backend that can use host memory and run a
/// leaf); x -> CPU (1.inp); s reads weights w: the first backend that can use w's buffer
/// and run SQR is the CPU, the last; Accel does not offload -> CPU (1.wgt0); mm: nothing.
/// Pass 2, GPU (non-last) down/up: s is the CPU: nothing spreads; any backend down:
/// s CPU, so mm -> CPU (2.sup). Pass 3: mm on the CPU; Accel has the same buffer type,
/// runs MUL_MAT and can read s and x in place -> Accel (3.upg). Pass 5: [CPU s]
/// [Accel mm], and no inputs: Accel reads host memory where it is.
#[test]
fn pass_three_upgrades_to_a_backend_with_the_same_buffer_type() {
    let (accel, cpu) = (FakeAccel::new(), LogCpu::new(refuse_none));
    let mut sch = sched(vec![accel.clone(), cpu.clone()], 1);
    let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
    let w = ctx.new_tensor_2d(Type::F32, 4, 4).unwrap();
    let x = ctx.new_tensor_2d(Type::F32, 4, 2).unwrap();
    let s = ctx.sqr(&w).unwrap();
    let mm = ctx.mul_mat(&s, &x).unwrap();
    for (v, name) in [(&w, "w"), (&x, "x"), (&s, "s"), (&mm, "mm")] {
        v.set_name(name);
    }
    x.set_flags(flags::INPUT);
    alloc_tensors(std::slice::from_ref(&w), CpuBufferType::get().as_ref()).unwrap().set_usage(BufferUsage::Weights);
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&mm).unwrap();
    sch.alloc_graph(&g).unwrap();
    assert_eq!(placed_on(&sch, &w), p("Accel", "1.dst"));
    assert_eq!(placed_on(&sch, &x), p("CPU", "1.inp"));
    assert_eq!(placed_on(&sch, &s), p("CPU", "1.wgt0"));
    assert_eq!(placed_on(&sch, &mm), p("Accel", "3.upg"));
    assert_eq!(split_list(&sch), vec![("CPU".into(), vec![], strs(&["s"])), ("Accel".into(), vec![], strs(&["mm"]))]);
    // One buffer type, one compute buffer: the Accel backend's size is the CPU's.
    assert_eq!(sch.buffer_size(&(cpu.clone() as Arc<dyn Backend>)).unwrap(), 0);
    assert!(sch.buffer_size(&(accel.clone() as Arc<dyn Backend>)).unwrap() > 0);
    let (wv, xv) = (rand_vec(16, 9), rand_vec(8, 10));
    set(&w, &wv);
    set(&x, &xv);
    sch.graph_compute(&g).unwrap();
    // mm[i, j] = sum_k w[i, k]^2 * x[j, k] (rows of s times rows of x).
    let want: Vec<f32> = (0..2)
        .flat_map(|j| {
            let (wv, xv) = (&wv, &xv);
            (0..4).map(move |i| (0..4).map(|k| wv[i * 4 + k] * wv[i * 4 + k] * xv[j * 4 + k]).sum::<f32>())
        })
        .collect();
    common::assert_close(&get(&mm), &want, 1e-6);
    assert_eq!(take_log(&accel.log), strs(&["mm"]));
    assert_eq!(take_log(&cpu.log), strs(&["s"]));
}

/// A node no backend supports is an error naming it and the backends, before anything
/// runs; so is a scheduler whose last backend is not the CPU.
#[test]
fn unsupported_nodes_and_bad_backend_lists_are_errors() {
    let (gpu, cpu) = (FakeGpu::new(refuse_sqr, false), LogCpu::new(refuse_sqr));
    let mut sch = sched(gpu_cpu(&gpu, &cpu), 1);
    let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
    let x = ctx.new_tensor_1d(Type::F32, 4).unwrap();
    let a = ctx.scale(&x, 2.0).unwrap();
    let s = ctx.sqr(&a).unwrap();
    s.set_name("the_square");
    x.set_flags(flags::INPUT);
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&s).unwrap();
    let e = sch.graph_compute(&g).unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotSupported);
    assert!(e.message.contains("no backend supports node 'the_square' (SQR"), "{e}");
    assert!(e.message.contains("backends: FakeGPU, CPU"), "{e}");
    assert!(take_log(&gpu.log).is_empty() && take_log(&cpu.log).is_empty());

    // A tensor already in GPU memory whose op the GPU refuses cannot move (ggml aborts).
    let ctx2 = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
    let y = ctx2.new_tensor_1d(Type::F32, 4).unwrap();
    let sq = ctx2.sqr(&y).unwrap();
    sq.set_name("placed_square");
    alloc_tensors(&[y.clone(), sq.clone()], gpu.device().buffer_type().as_ref()).unwrap();
    let mut g2 = ctx2.new_graph().unwrap();
    g2.build_forward_expand(&sq).unwrap();
    let mut sch2 = sched(vec![gpu.clone(), Arc::new(CpuBackend::new(1).unwrap())], 1);
    let e = sch2.alloc_graph(&g2).unwrap_err();
    assert!(e.message.contains("'placed_square' (SQR) lives in buffer 'FakeGPU'"), "{e}");

    use weft::backend::sched::{Scheduler, SchedulerParams};
    let params =
        |backends: Vec<Arc<dyn Backend>>, n_copies| SchedulerParams { backends, bufts: None, graph_size: 8, n_copies };
    let e = Scheduler::new(params(vec![cpu.clone(), gpu.clone()], 1)).err().unwrap();
    assert!(e.message.contains("the last backend must be the CPU"), "{e}");
    let e = Scheduler::new(params(vec![cpu.clone(), cpu.clone()], 1)).err().unwrap();
    assert!(e.message.contains("listed twice"), "{e}");
    assert!(Scheduler::new(params(vec![cpu.clone()], 5)).is_err());
    assert!(Scheduler::new(params(vec![], 1)).is_err());
    // A graph over the graph size: 8 -> hash size 11; 12 nodes and leafs is too many.
    let mut small = Scheduler::new(params(vec![cpu.clone()], 1)).unwrap();
    let ctx3 = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
    let mut t = ctx3.new_tensor_1d(Type::F32, 4).unwrap();
    for _ in 0..11 {
        t = ctx3.scale(&t, 1.0).unwrap();
    }
    let mut g3 = ctx3.new_graph().unwrap();
    g3.build_forward_expand(&t).unwrap();
    let e = small.alloc_graph(&g3).unwrap_err();
    assert!(e.message.contains("11 nodes and 1 leafs, more than this scheduler's graphSize=8 allows (11)"), "{e}");
}

/// Pass 5 starts a new split on the same backend in two cases.
///
/// Weights: n0 = w0·x and n1 = w1·n0 with w0, w1 host weights and a batch of 32: both are
/// offloaded to the GPU (1.off). At n0 the split gets inputs w0 and x; at n1 the split has
/// inputs and n1 reads a weight the GPU cannot use in place: a new GPU split, input w1
/// (so the memory of w0's copy can be reused).
///
/// Full splits: acc = g·g (g: GPU weights -> GPU, 1.wgt0), then acc += x_i for 11 tensors
/// x_i in host memory (not weights): the adds take the GPU from acc (2.sup) and each
/// copies its x_i in; at the 11th the split already has 10 inputs (ggml's limit, one per
/// source slot): a new GPU split.
#[test]
fn pass_five_starts_new_splits_for_weights_and_full_splits() {
    let (gpu, cpu) = (FakeGpu::new(refuse_none, true), LogCpu::new(refuse_none));
    let mut sch = sched(gpu_cpu(&gpu, &cpu), 1);
    let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
    let x = ctx.new_tensor_2d(Type::F32, 4, 32).unwrap();
    let w0 = ctx.new_tensor_2d(Type::F32, 4, 4).unwrap();
    let w1 = ctx.new_tensor_2d(Type::F32, 4, 4).unwrap();
    let n0 = ctx.mul_mat(&w0, &x).unwrap();
    let n1 = ctx.mul_mat(&w1, &n0).unwrap();
    for (v, name) in [(&x, "x"), (&w0, "w0"), (&w1, "w1"), (&n0, "n0"), (&n1, "n1")] {
        v.set_name(name);
    }
    x.set_flags(flags::INPUT);
    alloc_tensors(&[w0.clone(), w1.clone()], CpuBufferType::get().as_ref()).unwrap().set_usage(BufferUsage::Weights);
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&n1).unwrap();
    sch.alloc_graph(&g).unwrap();
    assert_eq!(placed_on(&sch, &n1), p("FakeGPU", "1.off"));
    assert_eq!(
        split_list(&sch),
        vec![("FakeGPU".into(), strs(&["w0", "x"]), strs(&["n0"])), ("FakeGPU".into(), strs(&["w1"]), strs(&["n1"]))]
    );
    let (xv, w0v, w1v) = (rand_vec(128, 11), rand_vec(16, 12), rand_vec(16, 13));
    set(&x, &xv);
    set(&w0, &w0v);
    set(&w1, &w1v);
    sch.graph_compute(&g).unwrap();
    let r = common::host_ctx();
    let (rx, rw0, rw1) = (
        r.new_tensor_2d(Type::F32, 4, 32).unwrap(),
        r.new_tensor_2d(Type::F32, 4, 4).unwrap(),
        r.new_tensor_2d(Type::F32, 4, 4).unwrap(),
    );
    set(&rx, &xv);
    set(&rw0, &w0v);
    set(&rw1, &w1v);
    let rn1 = r.mul_mat(&rw1, &r.mul_mat(&rw0, &rx).unwrap()).unwrap();
    common::compute(&r, &rn1, 1);
    assert_eq!(get(&n1), get(&rn1));

    let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
    let gw = ctx.new_tensor_1d(Type::F32, 8).unwrap();
    gw.set_name("g");
    alloc_tensors(std::slice::from_ref(&gw), gpu.device().buffer_type().as_ref())
        .unwrap()
        .set_usage(BufferUsage::Weights);
    let xs: Vec<Tensor> =
        (0..11).map(|i| ctx.new_tensor_1d(Type::F32, 8).unwrap().tap_name(&format!("x{i}"))).collect();
    alloc_tensors(&xs, CpuBufferType::get().as_ref()).unwrap();
    let mut acc = ctx.mul(&gw, &gw).unwrap().tap_name("acc");
    for (i, xi) in xs.iter().enumerate() {
        acc = ctx.add(&acc, xi).unwrap().tap_name(&format!("add{i}"));
    }
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&acc).unwrap();
    let mut sch = sched(gpu_cpu(&gpu, &cpu), 1);
    sch.alloc_graph(&g).unwrap();
    let names = |r: std::ops::Range<usize>, p: &str| r.map(|i| format!("{p}{i}")).collect::<Vec<_>>();
    let mut first_nodes = vec!["acc".to_string()];
    first_nodes.extend(names(0..10, "add"));
    assert_eq!(
        split_list(&sch),
        vec![("FakeGPU".into(), names(0..10, "x"), first_nodes), ("FakeGPU".into(), strs(&["x10"]), strs(&["add10"]))]
    );
    let gv = rand_vec(8, 14);
    set(&gw, &gv);
    let xvs: Vec<Vec<f32>> = (0..11).map(|i| rand_vec(8, 15 + i)).collect();
    for (xi, v) in xs.iter().zip(&xvs) {
        set(xi, v);
    }
    sch.graph_compute(&g).unwrap();
    let want: Vec<f32> = (0..8).map(|k| xvs.iter().fold(gv[k] * gv[k], |a, v| a + v[k])).collect();
    assert_eq!(get(&acc), want);
    assert!(take_log(&cpu.log).is_empty());
}

trait TapName {
    fn tap_name(self, name: &str) -> Self;
}

impl TapName for Tensor {
    fn tap_name(self, name: &str) -> Tensor {
        self.set_name(name);
        self
    }
}

/// A view read across backends is copied with its own strides. x: GPU memory, w: GPU
/// weights; a = x + w (GPU, 1.wgt1); p = transpose(a), a view (GPU, 4.vsrc: its base's);
/// s = p² (the GPU refuses SQR; pass 3: CPU); out = s * 2 (pass 2 spreads the GPU from a
/// down past the view and the refused s: GPU, 2.sup). Splits: [GPU a] [CPU s, input p]
/// [GPU out, input s]; the copy of the view p keeps its transposed strides (24 bytes
/// spanned). A pin to a backend that cannot run the node is an error.
#[test]
fn a_transposed_view_is_a_split_input() {
    let (gpu, cpu) = (FakeGpu::new(refuse_sqr, false), LogCpu::new(refuse_none));
    let backends = gpu_cpu(&gpu, &cpu);
    let mut sch = sched(backends.clone(), 1);
    let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
    let x = ctx.new_tensor_2d(Type::F32, 3, 2).unwrap().tap_name("x");
    let w = ctx.new_tensor_2d(Type::F32, 3, 2).unwrap().tap_name("w");
    let a = ctx.add(&x, &w).unwrap().tap_name("a");
    let pt = ctx.transpose(&a).unwrap().tap_name("p");
    let s = ctx.sqr(&pt).unwrap().tap_name("s");
    let out = ctx.scale(&s, 2.0).unwrap().tap_name("out");
    let gbuft = gpu.device().buffer_type();
    alloc_tensors(std::slice::from_ref(&x), gbuft.as_ref()).unwrap();
    alloc_tensors(std::slice::from_ref(&w), gbuft.as_ref()).unwrap().set_usage(BufferUsage::Weights);
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&out).unwrap();
    sch.alloc_graph(&g).unwrap();
    assert_eq!(placed_on(&sch, &pt), p("FakeGPU", "4.vsrc"));
    assert_eq!(placed_on(&sch, &s), p("CPU", "3.best"));
    assert_eq!(placed_on(&sch, &out), p("FakeGPU", "2.sup"));
    assert_eq!(
        split_list(&sch),
        vec![
            ("FakeGPU".into(), vec![], strs(&["a"])),
            ("CPU".into(), strs(&["p"]), strs(&["s"])),
            ("FakeGPU".into(), strs(&["s"]), strs(&["out"])),
        ]
    );
    let copy = &sch.splits()[1].nodes[0].srcs[0];
    assert_eq!((copy.name.as_str(), copy.bytes), ("CPU#p#0", 24));
    let (xv, wv) = (rand_vec(6, 16), rand_vec(6, 17));
    set(&x, &xv);
    set(&w, &wv);
    sch.graph_compute(&g).unwrap();
    // out[i, j] = 2 (x + w)[j, i]²: a is 3 x 2, p and out are 2 x 3.
    let want: Vec<f32> = (0..3)
        .flat_map(|i| {
            let (xv, wv) = (&xv, &wv);
            (0..2).map(move |j| {
                let v = xv[j * 3 + i] + wv[j * 3 + i];
                v * v * 2.0
            })
        })
        .collect();
    assert_eq!(get(&out), want);

    sch.reset();
    sch.set_tensor_backend(&s, &backends[0]).unwrap();
    let e = sch.alloc_graph(&g).unwrap_err();
    assert!(e.message.contains("node 's' (SQR) is set to backend FakeGPU, which does not support it"), "{e}");
}
