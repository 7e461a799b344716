#![cfg(feature = "webgpu")]
//! The WebGPU backend's FLASH_ATTN_EXT, MUL_MAT_ID and OUT_PROD against the CPU backend on
//! the shapes the backend-ops suite does not reach: masked-out keys (-inf) and whole masked
//! chunks, grouped-query heads, key counts that are not a multiple of the chunk, head sizes
//! past one vec4 per invocation, odd k and m, expert ids repeated and broadcast b, transposed
//! f16 b, broadcast a; and the device time the backend reports for a graph. Runs on every
//! WebGPU device found; with none, prints a note and passes (as tests/webgpu.rs).

mod common;

use common::gpu::backends;

use common::{rand_vec, set_i32};
use weft::alloc::{alloc_ctx_tensors, CtxBuffers};
use weft::backend::compare::graph_copy;
use weft::backend::cpu::CpuBackend;
use weft::backend::{tensor_get, tensor_set, Backend};
use weft::types::convert::{from_f32, to_f32};
use weft::{Context, ContextParams, Graph, Tensor, Type};

/// Inputs of a case: float values (converted to the tensor's type) or i32 ids.
enum Data {
    F(Vec<f32>),
    I(Vec<i32>),
}

struct Case {
    _ctx: Context,
    graph: Graph,
    out: Tensor,
    _buffers: CtxBuffers,
}

/// A test graph: its inputs with their data, and the node to compare.
type Build<'a> = dyn Fn(&Context) -> (Vec<(Tensor, Data)>, Tensor) + 'a;

fn case(gpu: &dyn Backend, build: &Build<'_>) -> Case {
    let ctx = Context::new(ContextParams { mem_size: 16 << 20, no_alloc: true }).expect("context");
    let (inputs, out) = build(&ctx);
    let mut graph = ctx.new_graph().expect("graph");
    graph.build_forward_expand(&out).expect("expand");
    let buffers = alloc_ctx_tensors(&ctx, gpu).expect("alloc on WebGPU");
    for (t, d) in &inputs {
        match d {
            Data::F(v) => tensor_set(t, &from_f32(t.ty(), v).expect("from_f32"), 0).expect("set"),
            Data::I(v) => set_i32(t, v),
        }
    }
    Case { _ctx: ctx, graph, out, _buffers: buffers }
}

fn read(t: &Tensor) -> Vec<f32> {
    assert!(t.is_contiguous());
    let mut b = vec![0u8; t.nbytes()];
    tensor_get(t, &mut b, 0).expect("get");
    to_f32(t.ty(), &b).expect("to_f32")
}

/// The output of `build`'s graph computed on `gpu` (which must support it) and on a CPU copy.
fn computed(name: &str, gpu: &dyn Backend, build: &Build<'_>) -> (Vec<f32>, Vec<f32>) {
    let c = case(gpu, build);
    assert!(gpu.supports_op(&c.out), "{name}: {} does not support it", gpu.name());
    let cpu = CpuBackend::new(2).expect("cpu");
    let copy = graph_copy(&cpu, &c.graph).expect("graph_copy");
    gpu.graph_compute(&c.graph).unwrap_or_else(|e| panic!("{name} on {}: {e}", gpu.name()));
    cpu.graph_compute(&copy.graph).expect("cpu compute");
    let last = copy.graph.nodes().last().expect("a node").clone();
    let (g, w) = (read(&c.out), read(&last));
    assert_eq!(g.len(), w.len());
    (g, w)
}

/// The output computed on `gpu` and on the CPU: |gpu - cpu| <= tol * (1 + |cpu|), NaNs alike.
fn check(name: &str, gpu: &dyn Backend, tol: f32, build: &Build<'_>) {
    let (g, w) = computed(name, gpu, build);
    let mut worst = 0f32;
    for (i, (x, y)) in g.iter().zip(&w).enumerate() {
        let ok = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol * (1.0 + y.abs());
        assert!(ok, "{name} on {}: element {i}: gpu {x}, cpu {y}", gpu.name());
        worst = worst.max((x - y).abs());
    }
    println!("{:<8} {name:<56} {:>7} elems, max abs diff {worst:.2e}", gpu.name(), g.len());
}

/// `check` by normalized mean squared error, test-backend-ops' measure.
fn check_nmse(name: &str, gpu: &dyn Backend, max_nmse: f64, build: &Build<'_>) {
    let (g, w) = computed(name, gpu, build);
    let err: f64 = g.iter().zip(&w).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum();
    let norm: f64 = w.iter().map(|&y| (y as f64).powi(2)).sum();
    let nmse = err / norm.max(f64::MIN_POSITIVE);
    assert!(nmse <= max_nmse, "{name} on {}: NMSE {nmse:.3e} > {max_nmse:.0e}", gpu.name());
    println!("{:<8} {name:<56} {:>7} elems, NMSE {nmse:.2e}", gpu.name(), g.len());
}

fn rand(n: i64, seed: u64) -> Data {
    Data::F(rand_vec(n as usize, seed))
}

struct Fa {
    d: i64,
    n_kv: i64,
    nq1: i64,
    heads: i64,
    kv_heads: i64,
    mask: bool,
    max_bias: f32,
    softcap: f32,
    q_ty: Type,
    kv_ty: Type,
}

/// FLASH_ATTN_EXT with a mask that leaves out every third key and the whole second chunk
/// of 64 keys for odd query rows.
fn flash(f: &Fa) -> impl Fn(&Context) -> (Vec<(Tensor, Data)>, Tensor) + '_ {
    move |ctx| {
        let q = ctx.new_tensor(f.q_ty, &[f.d, f.nq1, f.heads, 1]).expect("q");
        let k = ctx.new_tensor(f.kv_ty, &[f.d, f.n_kv, f.kv_heads, 1]).expect("k");
        let v = ctx.new_tensor(f.kv_ty, &[f.d, f.n_kv, f.kv_heads, 1]).expect("v");
        let mut inputs = vec![
            (q.clone(), rand(q.nelements(), 1)),
            (k.clone(), rand(k.nelements(), 2)),
            (v.clone(), rand(v.nelements(), 3)),
        ];
        let m = f.mask.then(|| {
            let rows = (f.nq1 + 31) / 32 * 32;
            let m = ctx.new_tensor(Type::F16, &[f.n_kv, rows]).expect("mask");
            let mut vals = rand_vec((f.n_kv * rows) as usize, 4);
            for r in 0..rows as usize {
                for c in 0..f.n_kv as usize {
                    if c % 3 == 1 || (r % 2 == 1 && (64..128).contains(&c)) {
                        vals[r * f.n_kv as usize + c] = f32::NEG_INFINITY;
                    }
                }
            }
            inputs.push((m.clone(), Data::F(vals)));
            m
        });
        let scale = 1.0 / (f.d as f32).sqrt();
        let out = ctx.flash_attn_ext(&q, &k, &v, m.as_ref(), scale, f.max_bias, f.softcap).expect("flash_attn_ext");
        (inputs, out)
    }
}

fn fa(d: i64, n_kv: i64) -> Fa {
    Fa {
        d,
        n_kv,
        nq1: 3,
        heads: 4,
        kv_heads: 4,
        mask: true,
        max_bias: 0.0,
        softcap: 0.0,
        q_ty: Type::F32,
        kv_ty: Type::F16,
    }
}

// The CPU accumulates f16 values in an f16 vector (rounded after every key): a few 1e-4.
const TOL_FA: f32 = 2e-3;

#[test]
fn flash_attn_matches_cpu_on_edge_shapes() {
    for gpu in backends() {
        let g = gpu.as_ref();
        check("fa d=64 n_kv=200 masked keys and chunks", g, TOL_FA, &flash(&fa(64, 200)));
        check("fa d=40 n_kv=70 no mask", g, TOL_FA, &flash(&Fa { mask: false, ..fa(40, 70) }));
        check("fa d=320 (two vec4 per invocation)", g, TOL_FA, &flash(&fa(320, 130)));
        // Query rows per workgroup: eight, then three (d <= 256); four, four, then one (d > 256);
        // one row alone (decoding).
        check("fa 11 query rows (8 + 3 a workgroup)", g, TOL_FA, &flash(&Fa { nq1: 11, ..fa(64, 100) }));
        check("fa d=320, 9 query rows (4 + 4 + 1)", g, TOL_FA, &flash(&Fa { nq1: 9, ..fa(320, 70) }));
        check("fa one query row", g, TOL_FA, &flash(&Fa { nq1: 1, ..fa(128, 90) }));
        check("fa grouped heads 8 q on 2 kv", g, TOL_FA, &flash(&Fa { heads: 8, kv_heads: 2, ..fa(64, 100) }));
        check(
            "fa alibi max_bias=8, 6 heads",
            g,
            TOL_FA,
            &flash(&Fa { heads: 6, kv_heads: 6, max_bias: 8.0, ..fa(32, 90) }),
        );
        check("fa softcap 10", g, TOL_FA, &flash(&Fa { softcap: 10.0, ..fa(128, 96) }));
        check("fa one key", g, TOL_FA, &flash(&Fa { mask: false, ..fa(16, 1) }));
        // f16 K and V rows that start mid-word (views one element into their tensors): the
        // kernel's three-word reads.
        check("fa f16 K/V views at an odd element offset", g, TOL_FA, &|ctx: &Context| {
            let (d, n_kv, h) = (64i64, 50i64, 2i64);
            let q = ctx.new_tensor(Type::F32, &[d, 3, h, 1]).expect("q");
            let kb = ctx.new_tensor_1d(Type::F16, d * n_kv * h + 1).expect("k");
            let vb = ctx.new_tensor_1d(Type::F16, d * n_kv * h + 1).expect("v");
            let view =
                |t: &Tensor| ctx.view_3d(t, d, n_kv, h, 2 * d as usize, (2 * d * n_kv) as usize, 2).expect("view");
            let (k, v) = (view(&kb), view(&vb));
            let inputs = vec![
                (q.clone(), rand(q.nelements(), 5)),
                (kb.clone(), rand(kb.nelements(), 6)),
                (vb.clone(), rand(vb.nelements(), 7)),
            ];
            let out = ctx.flash_attn_ext(&q, &k, &v, None, 0.125, 0.0, 0.0).expect("flash_attn_ext");
            (inputs, out)
        });
        for kv_ty in [Type::Q8_0, Type::Q4_0, Type::Q5_1, Type::IQ4_NL] {
            let name = format!("fa {kv_ty} K/V d=96 grouped heads");
            check(&name, g, TOL_FA, &flash(&Fa { kv_ty, heads: 4, kv_heads: 2, ..fa(96, 150) }));
        }
    }
}

#[test]
fn flash_attn_f16_query_is_the_f32_query_rounded() {
    // f16 keys see the query rounded to f16 either way: identical results.
    for gpu in backends() {
        let run = |q_ty: Type| {
            let f = Fa { q_ty, ..fa(64, 100) };
            let c = case(gpu.as_ref(), &flash(&f));
            assert!(gpu.supports_op(&c.out));
            gpu.graph_compute(&c.graph).expect("compute");
            read(&c.out)
        };
        let (a, b) = (run(Type::F32), run(Type::F16));
        assert!(a.iter().all(|x| x.is_finite()));
        assert_eq!(a, b, "{}", gpu.name());
    }
}

/// MUL_MAT_ID with `as` [k, m, n_expert] of `ty`, b [k, n_b, n_tokens], ids [n_used, n_tokens].
fn mmid(
    ty: Type,
    k: i64,
    m: i64,
    n_expert: i64,
    n_used: i64,
    n_b: i64,
    n_tokens: i64,
) -> impl Fn(&Context) -> (Vec<(Tensor, Data)>, Tensor) {
    move |ctx| {
        let a = ctx.new_tensor(ty, &[k, m, n_expert]).expect("as");
        let b = ctx.new_tensor(Type::F32, &[k, n_b, n_tokens]).expect("b");
        let ids = ctx.new_tensor(Type::I32, &[n_used, n_tokens]).expect("ids");
        // Repeats allowed: token t, slot s uses expert (3t + 5s) % n_expert.
        let idv = (0..n_tokens).flat_map(|t| (0..n_used).map(move |s| ((3 * t + 5 * s) % n_expert) as i32)).collect();
        let out = ctx.mul_mat_id(&a, &b, &ids).expect("mul_mat_id");
        (vec![(a.clone(), rand(a.nelements(), 5)), (b.clone(), rand(b.nelements(), 6)), (ids, Data::I(idv))], out)
    }
}

#[test]
fn mul_mat_id_matches_cpu() {
    for gpu in backends() {
        let g = gpu.as_ref();
        check("mmid f32 k=13 m=70", g, 1e-5, &mmid(Type::F32, 13, 70, 3, 2, 2, 5));
        check("mmid f32 broadcast b", g, 1e-5, &mmid(Type::F32, 64, 33, 4, 3, 1, 4));
        check("mmid f16 k=30", g, 1e-4, &mmid(Type::F16, 30, 65, 4, 2, 2, 3));
        check("mmid bf16", g, 1e-3, &mmid(Type::BF16, 32, 20, 2, 2, 1, 3));
        // The CPU dots quantized experts with b quantized to q8 (the GPU keeps b in f32), so
        // single elements where the terms cancel differ by the q8 rounding: compare as the
        // suite does, by NMSE against ggml's bound for MUL_MAT_ID (5e-4).
        for ty in [Type::Q4_0, Type::Q8_0, Type::Q4_K, Type::Q6_K] {
            check_nmse(&format!("mmid {ty}"), g, 5e-4, &mmid(ty, 256, 70, 3, 2, 2, 3));
        }
    }
}

/// OUT_PROD: a [m, n, a2, a3] of `a_ty`, b [p, n, a2 * r2, a3 * r3] of `b_ty` (transposed view
/// of [n, p] when `trans_b`).
#[allow(clippy::too_many_arguments)]
fn outp(
    a_ty: Type,
    b_ty: Type,
    m: i64,
    n: i64,
    p: i64,
    a23: [i64; 2],
    r: [i64; 2],
    trans_b: bool,
) -> impl Fn(&Context) -> (Vec<(Tensor, Data)>, Tensor) {
    move |ctx| {
        let a = ctx.new_tensor(a_ty, &[m, n, a23[0], a23[1]]).expect("a");
        let (b2, b3) = (a23[0] * r[0], a23[1] * r[1]);
        let b = if trans_b {
            ctx.new_tensor(b_ty, &[n, p, b2, b3]).expect("b")
        } else {
            ctx.new_tensor(b_ty, &[p, n, b2, b3]).expect("b")
        };
        let bv = if trans_b { ctx.transpose(&b).expect("transpose") } else { b.clone() };
        let out = ctx.out_prod(&a, &bv).expect("out_prod");
        (vec![(a.clone(), rand(a.nelements(), 7)), (b.clone(), rand(b.nelements(), 8))], out)
    }
}

#[test]
fn out_prod_matches_cpu() {
    for gpu in backends() {
        let g = gpu.as_ref();
        check("out_prod f32 m=13", g, 1e-5, &outp(Type::F32, Type::F32, 13, 7, 5, [1, 1], [1, 1], false));
        check("out_prod f32 broadcast a", g, 1e-5, &outp(Type::F32, Type::F32, 300, 9, 4, [2, 1], [2, 3], false));
        check(
            "out_prod f16 a, f16 b transposed",
            g,
            1e-5,
            &outp(Type::F16, Type::F16, 18, 16, 6, [1, 2], [1, 1], true),
        );
        check("out_prod bf16 a", g, 1e-5, &outp(Type::BF16, Type::F32, 8, 3, 3, [1, 1], [1, 1], false));
        for ty in [Type::Q4_0, Type::Q5_0, Type::Q4_K] {
            check(
                &format!("out_prod {ty} a, broadcast"),
                g,
                1e-5,
                &outp(ty, Type::F32, 256, 5, 3, [2, 1], [2, 1], false),
            );
        }
    }
}

#[test]
fn the_backend_reports_device_time() {
    for gpu in backends() {
        let c = case(gpu.as_ref(), &mmid(Type::F32, 256, 256, 4, 2, 2, 16));
        gpu.graph_compute(&c.graph).expect("compute");
        let s = gpu.last_compute_seconds().expect("a device time after a graph");
        assert!(s > 0.0 && s < 60.0, "{}: {s} s", gpu.name());
        let cpu = CpuBackend::new(1).expect("cpu");
        assert_eq!(cpu.last_compute_seconds(), None);
    }
}
