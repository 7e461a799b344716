#![cfg(feature = "webgpu")]
//! WebGPU MUL_MAT against the CPU backend: every a type the kernels decode, f32 and f16 b,
//! shapes that exercise the tails of the mat-vec and tiled kernels, broadcasting, permuted
//! and transposed operands, with each kernel shape forced through the backend's `matmul` option.
//! Errors are measured as ggml's suite does (normalized mean squared error), because the
//! CPU rounds b to a's vec_dot type (f16, bf16, q8) and the GPU multiplies in f32.

mod common;

use common::gpu::{backends, logical};

use common::rand_vec;
use weft::alloc::alloc_ctx_tensors;
use weft::backend::compare::graph_copy;
use weft::backend::cpu::CpuBackend;
use weft::backend::{tensor_set, Backend};
use weft::types::convert::from_f32;
use weft::types::quant;
use weft::{Context, ContextParams, Tensor, Type};

struct Spec {
    a: Type,
    b: Type,
    /// a is [k, m, a2, a3] (stored with dims 1 and 2 swapped when `permuted`), b [k, n, b2, b3].
    k: i64,
    m: i64,
    n: i64,
    a23: [i64; 2],
    b23: [i64; 2],
    permuted: bool,
    /// b stored as [n, k] and transposed (non-contiguous along k).
    b_transposed: bool,
}

fn spec(a: Type, b: Type, k: i64, m: i64, n: i64) -> Spec {
    Spec { a, b, k, m, n, a23: [1, 1], b23: [1, 1], permuted: false, b_transposed: false }
}

/// `v` in t's type: quantized with ggml_quantize_chunk (unit importance where required).
fn bytes_of(t: &Tensor, v: &[f32]) -> Vec<u8> {
    if !t.ty().is_quantized() {
        return from_f32(t.ty(), v).expect("from_f32");
    }
    let k = t.ne()[0] as usize;
    let rows = v.len() / k;
    let mut out = vec![0u8; t.ty().row_size(k) * rows];
    let imatrix = vec![1f32; k];
    let im = quant::requires_imatrix(t.ty()).then_some(&imatrix[..]);
    quant::quantize_chunk(t.ty(), v, &mut out, rows, k, im).expect("quantize");
    out
}

/// NMSE of the WebGPU result against the CPU's for one product.
fn nmse(gpu: &dyn Backend, s: &Spec) -> f64 {
    let ctx = Context::new(ContextParams { mem_size: 16 << 20, no_alloc: true }).expect("context");
    let [a2, a3] = s.a23;
    let [b2, b3] = s.b23;
    let a_store = if s.permuted { vec![s.k, a2, s.m, a3] } else { vec![s.k, s.m, a2, a3] };
    let a_t = ctx.new_tensor(s.a, &a_store).expect("a");
    let b_store = if s.b_transposed { vec![s.n, s.k, b2, b3] } else { vec![s.k, s.n, b2, b3] };
    let b_t = ctx.new_tensor(s.b, &b_store).expect("b");
    let a = if s.permuted { ctx.permute(&a_t, [0, 2, 1, 3]).expect("permute") } else { a_t.clone() };
    let b = if s.b_transposed { ctx.transpose(&b_t).expect("transpose") } else { b_t.clone() };
    let out = ctx.mul_mat(&a, &b).expect("mul_mat");
    let mut graph = ctx.new_graph().expect("graph");
    graph.build_forward_expand(&out).expect("expand");
    assert!(gpu.supports_op(&out), "{:?} x {:?} not supported", s.a, s.b);
    let _bufs = alloc_ctx_tensors(&ctx, gpu).expect("alloc");
    for (i, t) in [&a_t, &b_t].into_iter().enumerate() {
        let v = rand_vec(t.nelements() as usize, 40 + i as u64);
        tensor_set(t, &bytes_of(t, &v), 0).expect("set");
    }
    let cpu = CpuBackend::new(2).expect("cpu");
    let copy = graph_copy(&cpu, &graph).expect("graph_copy");
    gpu.graph_compute(&graph).unwrap_or_else(|e| panic!("{:?} x {:?} on {}: {e}", s.a, s.b, gpu.name()));
    cpu.graph_compute(&copy.graph).expect("cpu compute");
    let got = logical(graph.nodes().last().expect("node"));
    let want = logical(copy.graph.nodes().last().expect("node"));
    assert_eq!(got.len(), want.len());
    let (mut err, mut norm) = (0f64, 0f64);
    for (g, w) in got.iter().zip(&want) {
        err += ((g - w) as f64).powi(2);
        norm += (*w as f64).powi(2);
    }
    err / norm.max(f64::MIN_POSITIVE)
}

/// The types the kernels decode (quantized ones where dequant.wgsl has them).
fn a_types(gpu: &dyn Backend) -> Vec<Type> {
    let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).expect("context");
    Type::ALL
        .iter()
        .copied()
        .filter(|&t| {
            let k = t.blck_size() as i64;
            let a = ctx.new_tensor(t, &[k, 2]).expect("a");
            let b = ctx.new_tensor(Type::F32, &[k, 1]).expect("b");
            ctx.mul_mat(&a, &b).is_ok_and(|o| gpu.supports_op(&o))
        })
        .collect()
}

/// Every a type, f32 and f16 b, and the shapes of `cases` through the kernel shape `shape`
/// (the backend's `matmul` option; `auto` picks one per node).
fn kernel_shape_matches_cpu(shape: &str) {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        let types = a_types(gpu);
        assert!(types.contains(&Type::F32) && types.contains(&Type::F16) && types.contains(&Type::BF16));
        println!("{}: a types {types:?}", gpu.name());
        gpu.set_option("matmul", shape).expect("matmul option");
        // Float a: k = 67 reads elements one by one, k = 20 as vec4s (with a partial
        // last 16-wide step in the tiled kernel).
        let ks = |a: Type| if a.is_quantized() { vec![2 * a.blck_size() as i64] } else { vec![67, 20] };
        for (a, k) in types.iter().flat_map(|&a| ks(a).into_iter().map(move |k| (a, k))) {
            for b in [Type::F32, Type::F16] {
                let mut cases = vec![spec(a, b, k, 70, 3), spec(a, b, k, 9, 67), spec(a, b, k, 65, 1)];
                cases.push(Spec { a23: [2, 3], b23: [4, 3], ..spec(a, b, k, 5, 9) });
                cases.push(Spec { permuted: true, a23: [3, 1], b23: [3, 2], ..spec(a, b, k, 6, 7) });
                cases.push(Spec { b_transposed: true, ..spec(a, b, k, 7, 12) });
                for s in &cases {
                    let e = nmse(gpu, s);
                    let what = format!(
                        "[{shape}] {a:?} x {b:?} k={} m={} n={} a23={:?} b23={:?} perm={} bT={}",
                        s.k, s.m, s.n, s.a23, s.b23, s.permuted, s.b_transposed
                    );
                    assert!(e <= 5e-4, "{what}: nmse {e:.3e}");
                    // Float operands: f32 products and sums, only the CPU's rounding of b.
                    if !a.is_quantized() && a != Type::BF16 {
                        assert!(e <= 1e-5, "{what}: nmse {e:.3e}");
                    }
                }
            }
        }
    }
}

// One test per kernel shape, each on a backend of its own. On lavapipe (CI) compiling the
// pipelines is most of the time, and one backend compiling every shape's took longer than
// four compiling a shape's each (shaders compiled afresh, MESA_SHADER_CACHE_DISABLE=true,
// release build: one test 391 s, four 211 and 231 s, one core busy either way).
#[test]
fn auto_shape_matches_cpu() {
    kernel_shape_matches_cpu("auto");
}

#[test]
fn matvec_kernel_matches_cpu() {
    kernel_shape_matches_cpu("matvec");
}

#[test]
fn tiled_kernel_matches_cpu() {
    kernel_shape_matches_cpu("tiled");
}

#[test]
fn naive_kernel_matches_cpu() {
    kernel_shape_matches_cpu("naive");
}

#[test]
fn other_types_are_refused() {
    for gpu in backends() {
        let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).expect("context");
        let a = ctx.new_tensor(Type::F32, &[8, 4]).expect("a");
        let b = ctx.new_tensor(Type::I32, &[8, 4]).expect("b");
        if let Ok(o) = ctx.mul_mat(&a, &b) {
            assert!(!gpu.supports_op(&o), "i32 b");
        }
        let a = ctx.new_tensor(Type::I32, &[8, 4]).expect("a");
        let b = ctx.new_tensor(Type::F32, &[8, 4]).expect("b");
        if let Ok(o) = ctx.mul_mat(&a, &b) {
            assert!(!gpu.supports_op(&o), "i32 a");
        }
    }
}
