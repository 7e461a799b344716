//! Allocators: alloc_ctx_tensors packs a context; the graph allocator reuses memory by
//! liveness and in place; compare_graph_backend walks two backends node by node.

mod common;
use common::*;
use weft::alloc::{alloc_ctx_tensors, GraphAllocator};
use weft::backend::compare::compare_graph_backend;
use weft::backend::cpu::{CpuBackend, CpuBufferType};
use weft::backend::{tensor_get_in_compute, Backend};
use weft::tensor::flags;
use weft::{Context, ContextParams, Type};

fn meta_ctx() -> Context {
    Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap()
}

#[test]
fn alloc_ctx_tensors_packs_with_alignment() {
    let ctx = meta_ctx();
    let a = ctx.new_tensor_1d(Type::F32, 3).unwrap(); // 12 bytes -> 32 aligned
    let b = ctx.new_tensor_1d(Type::F32, 9).unwrap(); // 36 bytes -> 64
    let v = ctx.view_1d(&b, 2, 8).unwrap();
    let backend = CpuBackend::new(1).unwrap();
    let bufs = alloc_ctx_tensors(&ctx, &backend).unwrap();
    assert_eq!(bufs.size(), 96);
    assert_eq!(a.storage().unwrap().offset, 0);
    assert_eq!(b.storage().unwrap().offset, 32);
    assert_eq!(v.storage().unwrap().offset, 40); // a view sits inside its base
                                                 // Everything is allocated now: a second call allocates nothing.
    assert!(alloc_ctx_tensors(&ctx, &backend).unwrap().is_empty());
}

#[test]
fn chain_of_ten_elementwise_ops_reuses_memory() {
    let ctx = meta_ctx();
    let n = 1 << 16; // 256 KiB per tensor
    let x = ctx.new_tensor_1d(Type::F32, n).unwrap();
    x.set_flags(flags::INPUT);
    let mut t = x.clone();
    for i in 0..10 {
        // Alternate ops that can run in place with ones that cannot.
        t = if i % 2 == 0 { ctx.sqr(&t).unwrap() } else { ctx.cont(&t).unwrap() };
    }
    t.set_flags(flags::OUTPUT);
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&t).unwrap();
    let mut ga = GraphAllocator::new(CpuBufferType::get());
    ga.reserve(&g).unwrap();
    ga.alloc_graph(&g).unwrap();
    let one = (n * 4) as usize;
    let peak = ga.buffer_size(0);
    assert!(peak <= 3 * one, "peak {peak} bytes is more than 3 tensors of {one}");
    assert!(peak >= 2 * one, "a copy needs its source and destination live at once");

    // And the numbers come out right: ((x^2)^2)^2... five squarings = x^32.
    set(&x, &vec![1.01f32; n as usize]);
    CpuBackend::new(2).unwrap().graph_compute(&g).unwrap();
    let want = 1.01f32.powi(32);
    assert!(get(&t).iter().all(|&v| (v - want).abs() < 1e-4), "{:?}", &get(&t)[..2]);
}

#[test]
fn compare_two_cpu_backends_node_by_node() {
    let ctx = meta_ctx();
    let a = ctx.new_tensor_2d(Type::F32, 16, 4).unwrap();
    let b = ctx.new_tensor_2d(Type::F32, 16, 3).unwrap();
    let mm = ctx.mul_mat(&a, &b).unwrap();
    let p = ctx.permute(&mm, [1, 0, 2, 3]).unwrap();
    let out = ctx.soft_max(&ctx.cont(&p).unwrap()).unwrap();
    let mut g = ctx.new_graph().unwrap();
    g.build_forward_expand(&out).unwrap();
    let b1 = CpuBackend::new(1).unwrap();
    let b2 = CpuBackend::new(2).unwrap();
    let _bufs = alloc_ctx_tensors(&ctx, &b1).unwrap();
    set(&a, &rand_vec(64, 1));
    set(&b, &rand_vec(48, 2));
    let mut seen = vec![];
    compare_graph_backend(&b1, &b2, &g, |i, t1, t2| {
        let mut x = vec![0u8; t1.nbytes()];
        let mut y = vec![0u8; t2.nbytes()];
        tensor_get_in_compute(t1, &mut x, 0)?;
        tensor_get_in_compute(t2, &mut y, 0)?;
        assert_eq!(x, y, "node {i} differs");
        seen.push(t1.op().name());
        Ok(true)
    })
    .unwrap();
    // The permute is a view and is skipped.
    assert_eq!(seen, vec!["MUL_MAT", "CONT", "SOFT_MAX"]);
}
