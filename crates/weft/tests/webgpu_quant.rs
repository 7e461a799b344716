#![cfg(feature = "webgpu")]
//! The WebGPU backend's reading and writing of quantized data against the CPU backend:
//! GET_ROWS (dequant.wgsl's dq4 for every type it decodes), CPY out of and into quantized
//! types, and the refusal of tensors larger than one storage binding. Every test runs on
//! every WebGPU device found; with none it prints a note and passes, unless a lavapipe
//! driver is installed or WEFT_REQUIRE_WEBGPU is set.

mod common;

use common::gpu::{gpu_devices, logical, no_alloc_ctx};

use common::rand_vec;
use weft::alloc::alloc_ctx_tensors;
use weft::backend::compare::graph_copy;
use weft::backend::cpu::CpuBackend;
use weft::backend::{tensor_set, Backend};
use weft::types::convert::from_f32;
use weft::{Context, Tensor, Type};

/// Every type GET_ROWS reads on the GPU: the float types, i32 and every quantized format
/// dequant.wgsl decodes (all of ggml's storage formats).
const TYPES: &[Type] = &[
    Type::F32,
    Type::F16,
    Type::BF16,
    Type::I32,
    Type::Q4_0,
    Type::Q4_1,
    Type::Q5_0,
    Type::Q5_1,
    Type::Q8_0,
    Type::Q2_K,
    Type::Q3_K,
    Type::Q4_K,
    Type::Q5_K,
    Type::Q6_K,
    Type::IQ2_XXS,
    Type::IQ2_XS,
    Type::IQ2_S,
    Type::IQ3_XXS,
    Type::IQ3_S,
    Type::IQ1_S,
    Type::IQ1_M,
    Type::IQ4_NL,
    Type::IQ4_XS,
    Type::TQ1_0,
    Type::TQ2_0,
];

/// Build a graph with `build` (it returns the inputs to fill, as f32 values quantized into
/// their type, and the output), run it on `gpu` and on the CPU, and require every element of
/// the output to agree within `tol` relative (NaNs in the same places).
fn check(name: &str, gpu: &dyn Backend, tol: f32, build: impl FnOnce(&Context) -> (Vec<(Tensor, Vec<f32>)>, Tensor)) {
    let ctx = no_alloc_ctx();
    let (inputs, out) = build(&ctx);
    let mut graph = ctx.new_graph().expect("graph");
    graph.build_forward_expand(&out).expect("expand");
    assert!(gpu.supports_op(&out), "{name}: {} refuses {}", gpu.name(), out.op().name());
    let _buffers = alloc_ctx_tensors(&ctx, gpu).expect("alloc on WebGPU");
    for (t, v) in &inputs {
        tensor_set(t, &from_f32(t.ty(), v).expect("from_f32"), 0).expect("tensor_set");
    }
    let cpu = CpuBackend::new(2).expect("cpu");
    let copy = graph_copy(&cpu, &graph).expect("graph_copy");
    gpu.graph_compute(&graph).unwrap_or_else(|e| panic!("{name} on {}: {e}", gpu.name()));
    cpu.graph_compute(&copy.graph).expect("cpu compute");
    let (g, w) = (logical(&out), logical(copy.graph.nodes().last().expect("output node")));
    assert_eq!(g.len(), w.len(), "{name}");
    let mut worst = 0f32;
    for (i, (x, y)) in g.iter().zip(&w).enumerate() {
        let ok = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol * (1e-6 + y.abs());
        assert!(ok, "{name} on {}: element {i}: gpu {x}, cpu {y}", gpu.name());
        worst = worst.max((x - y).abs());
    }
    println!("{:<8} {name:<44} {:>6} elements, max abs diff {worst:.2e}", gpu.name(), g.len());
}

/// Row indices in 0..n, pseudo-random.
fn indices(k: usize, n: usize, seed: u64) -> Vec<f32> {
    rand_vec(k, seed).iter().map(|v| (((v + 1.0) * 0.5 * n as f32) as usize).min(n - 1) as f32).collect()
}

#[test]
fn get_rows_matches_cpu_for_every_type() {
    for dev in gpu_devices() {
        let gpu = dev.init_backend("").expect("backend");
        for &ty in TYPES {
            let blck = ty.blck_size() as i64;
            // Rows of three blocks (two super-blocks), or an odd length for plain types.
            let ne0s: &[i64] = if blck == 1 {
                &[12, 7, 1]
            } else if blck == 32 {
                &[96]
            } else {
                &[512]
            };
            for &ne0 in ne0s {
                let (nrows, ne2) = (9i64, 2i64);
                // The rows live in a view one block into a bigger tensor: quantized rows
                // start at byte offsets that are no multiple of 4 (18-byte blocks ...).
                let name = format!("get_rows {ty} ne0 {ne0}, rows at offset 1 block");
                check(&name, gpu.as_ref(), 1e-6, |ctx| {
                    let base_len = ne0 * nrows * ne2 + blck;
                    let base = ctx.new_tensor_1d(ty, base_len).expect("base");
                    let row = ty.row_size(ne0 as usize);
                    let a =
                        ctx.view_3d(&base, ne0, nrows, ne2, row, row * nrows as usize, ty.type_size()).expect("view");
                    let idx = ctx.new_tensor_2d(Type::I32, 5, ne2).expect("idx");
                    let out = ctx.get_rows(&a, &idx).expect("get_rows");
                    let mut vals = rand_vec(base_len as usize, 7 + ne0 as u64);
                    if ty == Type::I32 {
                        vals.iter_mut().for_each(|v| *v = (*v * 1000.0).round());
                    }
                    (vec![(base, vals), (idx, indices(10, nrows as usize, 3))], out)
                });
            }
        }
    }
}

#[test]
fn get_rows_of_a_permuted_source_and_a_strided_index() {
    for dev in gpu_devices() {
        let gpu = dev.init_backend("").expect("backend");
        for ty in [Type::F32, Type::F16, Type::BF16] {
            check(&format!("get_rows {ty} transposed source"), gpu.as_ref(), 1e-6, |ctx| {
                let a = ctx.new_tensor_2d(ty, 6, 8).expect("a");
                let at = ctx.transpose(&a).expect("transpose");
                let idx = ctx.new_tensor_1d(Type::I32, 12).expect("idx");
                let iv = ctx.view_1d(&idx, 4, 4).expect("view");
                let out = ctx.get_rows(&at, &iv).expect("get_rows");
                (vec![(a, rand_vec(48, 11)), (idx, indices(12, 6, 5))], out)
            });
        }
    }
}

#[test]
fn get_rows_back_matches_cpu() {
    for dev in gpu_devices() {
        let gpu = dev.init_backend("").expect("backend");
        for ty in [Type::F32, Type::F16] {
            check(&format!("get_rows_back {ty}, repeated indices"), gpu.as_ref(), 1e-6, |ctx| {
                let a = ctx.new_tensor_2d(ty, 6, 10).expect("a");
                let idx = ctx.new_tensor_1d(Type::I32, 10).expect("idx");
                let c = ctx.new_tensor_2d(Type::F32, 6, 4).expect("c");
                let out = ctx.get_rows_back(&a, &idx, &c).expect("get_rows_back");
                (vec![(a, rand_vec(60, 13)), (idx, indices(10, 4, 17))], out)
            });
        }
    }
}

#[test]
fn cpy_out_of_and_into_quantized_types_matches_cpu() {
    for dev in gpu_devices() {
        let gpu = dev.init_backend("").expect("backend");
        for &ty in TYPES.iter().filter(|t| t.is_quantized()) {
            for dst in [Type::F32, Type::F16] {
                for transposed in [false, true] {
                    let name = format!("cpy {ty} -> {dst}{}", if transposed { " (transposed dst)" } else { "" });
                    check(&name, gpu.as_ref(), 1e-6, |ctx| {
                        let n = 2 * ty.blck_size() as i64;
                        let a = ctx.new_tensor_2d(ty, n, 3).expect("a");
                        let b = if transposed {
                            ctx.transpose(&ctx.new_tensor_2d(dst, 3, n).expect("b")).expect("transpose")
                        } else {
                            ctx.new_tensor_2d(dst, n, 3).expect("b")
                        };
                        let out = ctx.cpy(&a, &b).expect("cpy");
                        (vec![(a, rand_vec(3 * n as usize, 21))], out)
                    });
                }
            }
        }
        // Every quantized destination (quantize.wgsl, quantize_k.wgsl, quantize_iq.wgsl), bit
        // for bit as the CPU's from_float (its dequantized values compared exactly).
        let into = TYPES.iter().copied().filter(|t| t.is_quantized());
        assert_eq!(into.clone().count(), 21);
        for ty in into {
            let blck = ty.blck_size();
            for src in [Type::F32, Type::F16] {
                check(&format!("cpy permuted {src} -> {ty}"), gpu.as_ref(), 0.0, |ctx| {
                    let n0 = 2 * blck as i64;
                    let a = ctx.new_tensor_3d(src, n0, 3, 5).expect("a");
                    let ap = ctx.permute(&a, [0, 2, 1, 3]).expect("permute");
                    let d = ctx.new_tensor_3d(ty, n0, 5, 3).expect("d");
                    let out = ctx.cpy(&ap, &d).expect("cpy");
                    let mut v = rand_vec(2 * blck * 15, 31);
                    // A block of zeros and one with a single value: the scale edge cases; in
                    // the next row a run of zeros inside a block (a zero sub-block scale),
                    // and in the one after that a row scaled up 1000x.
                    v[..2 * blck].fill(0.0);
                    v[blck + 8] = -0.75;
                    v[2 * blck + 16..2 * blck + 48].fill(0.0);
                    v[4 * blck..6 * blck].iter_mut().for_each(|x| *x *= 1000.0);
                    // A zero run in a row's second block: iq1_s/iq1_m's zero sub-blocks take
                    // the shift the same sub-block had in the block before.
                    v[7 * blck + 64..7 * blck + 96].fill(0.0);
                    (vec![(a, v)], out)
                });
            }
        }
    }
}

/// The grid I-quants' searches (quantize_iq.wgsl) have many branches a few blocks do not
/// reach: 96 blocks per type, rows of 4 blocks scaled 1e-3..1e3, every value's sign and size
/// random, and zero runs of 16 and 32 at random places (which in the iq1 types take an earlier
/// block's shift), quantized bit for bit as the CPU.
#[test]
fn cpy_into_grid_iquants_matches_cpu_on_many_blocks() {
    let grid = [Type::IQ2_XXS, Type::IQ2_XS, Type::IQ2_S, Type::IQ3_XXS, Type::IQ3_S, Type::IQ1_S, Type::IQ1_M];
    let (n0, rows) = (1024usize, 24usize);
    let mut v = rand_vec(n0 * rows, 77);
    let picks = rand_vec(rows * 8, 78);
    for r in 0..rows {
        let row = &mut v[r * n0..(r + 1) * n0];
        let scale = 10f32.powi(r as i32 % 7 - 3);
        row.iter_mut().for_each(|x| *x *= scale);
        for k in 0..4 {
            let p = picks[8 * r + 2 * k].abs();
            let len = if picks[8 * r + 2 * k + 1] > 0.0 { 32 } else { 16 };
            if p < 0.6 {
                let at = (p * 1000.0) as usize % (n0 / len) * len;
                row[at..at + len].fill(0.0);
            }
        }
    }
    for dev in gpu_devices() {
        let gpu = dev.init_backend("").expect("backend");
        for ty in grid {
            check(&format!("cpy f32 -> {ty}, {} blocks", n0 * rows / 256), gpu.as_ref(), 0.0, |ctx| {
                let a = ctx.new_tensor_2d(Type::F32, n0 as i64, rows as i64).expect("a");
                let d = ctx.new_tensor_2d(ty, n0 as i64, rows as i64).expect("d");
                let out = ctx.cpy(&a, &d).expect("cpy");
                (vec![(a, v.clone())], out)
            });
        }
    }
}

#[test]
fn tensors_over_the_binding_limit_are_refused() {
    for dev in gpu_devices() {
        let props: std::collections::HashMap<_, _> = dev.properties().into_iter().collect();
        let limit: u64 = props["max_storage_buffer_binding_size"].parse().expect("number");
        let gpu = dev.init_backend("").expect("backend");
        let ctx = no_alloc_ctx();
        // q4_0 rows of 4096 elements take 2304 bytes: one row more than the limit holds.
        let rows = (limit / 2304 + 1) as i64;
        let big = ctx.new_tensor_2d(Type::Q4_0, 4096, rows).expect("big");
        assert!(big.nbytes() as u64 > limit);
        let idx = ctx.new_tensor_1d(Type::I32, 4).expect("idx");
        let out = ctx.get_rows(&big, &idx).expect("get_rows");
        assert!(!gpu.supports_op(&out), "GET_ROWS over {} bytes must be refused", big.nbytes());
        let small = ctx.new_tensor_2d(Type::Q4_0, 4096, 4).expect("small");
        assert!(gpu.supports_op(&ctx.get_rows(&small, &idx).expect("get_rows")));
        let f = ctx.new_tensor_2d(Type::F32, 4096, rows).expect("f32");
        let cast = ctx.cast(&big, Type::F16).expect("cast");
        let cpy = ctx.cpy(&f, &ctx.new_tensor_2d(Type::Q8_0, 4096, rows).expect("q8")).expect("cpy");
        assert!(!gpu.supports_op(&cast) && !gpu.supports_op(&cpy));
        // Computing over it is an error (unsupported, or not allocatable), never a panic.
        let mut g = ctx.new_graph().expect("graph");
        g.build_forward_expand(&out).expect("expand");
        let err = gpu.graph_compute(&g).expect_err("compute over a tensor past the binding limit");
        println!("{}: {err}", gpu.name());
        if let Ok(_bufs) = alloc_ctx_tensors(&ctx, gpu.as_ref()) {
            assert!(gpu.graph_compute(&g).is_err());
        }
    }
}
