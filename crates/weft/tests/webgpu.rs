#![cfg(feature = "webgpu")]
//! The WebGPU backend against independent truth: values worked by hand, and the CPU
//! backend computing the same graphs (every node compared elementwise). Every test runs on
//! every WebGPU device found (lavapipe's Vulkan and GL adapters on machines without a
//! GPU); with none, tests print a note and pass, unless a lavapipe driver is installed or
//! WEFT_REQUIRE_WEBGPU is set, in which case finding no device fails.

mod common;

use common::gpu::{backends, case, gpu_devices, no_alloc_ctx};
use common::{get, set};

use std::sync::Arc;

use common::{assert_close, rand_vec};
use weft::alloc::alloc_ctx_tensors;
use weft::backend::compare::{compare_graph_backend, graph_copy};
use weft::backend::cpu::CpuBackend;
use weft::backend::{tensor_copy, tensor_get, tensor_get_in_compute, tensor_set, Backend, Buffer};
use weft::types::convert::to_f32;
use weft::{Context, ErrorKind, Tensor, Type};

// ---- harness ----

/// Elements of `t` in logical order (i0 fastest), following its strides.
fn logical(t: &Tensor, read: impl Fn(&Tensor, &mut [u8])) -> Vec<f32> {
    let mut raw = vec![0u8; t.nbytes()];
    read(t, &mut raw);
    let (ne, nb, es) = (t.ne(), t.nb(), t.element_size());
    let mut out = Vec::with_capacity(t.nelements() as usize);
    for i3 in 0..ne[3] as usize {
        for i2 in 0..ne[2] as usize {
            for i1 in 0..ne[1] as usize {
                for i0 in 0..ne[0] as usize {
                    let at = i0 * nb[0] + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
                    out.extend(to_f32(t.ty(), &raw[at..at + es]).expect("to_f32"));
                }
            }
        }
    }
    out
}

/// Largest absolute and relative differences, NaNs required in the same places.
#[derive(Default, Debug, Clone, Copy)]
struct Diff {
    n: usize,
    abs: f32,
    rel: f32,
}

fn diff(got: &[f32], want: &[f32]) -> Diff {
    assert_eq!(got.len(), want.len(), "length");
    let mut d = Diff { n: got.len(), ..Diff::default() };
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if w.is_nan() || g.is_nan() {
            assert!(w.is_nan() && g.is_nan(), "element {i}: got {g}, want {w}");
            continue;
        }
        if w.is_infinite() || g.is_infinite() {
            assert_eq!(g, w, "element {i}");
            continue;
        }
        let a = (g - w).abs();
        d.abs = d.abs.max(a);
        d.rel = d.rel.max(a / w.abs().max(f32::MIN_POSITIVE));
    }
    d
}

/// Compute the whole graph on `gpu` (one submission) and a copy on the CPU, compare every
/// computed node: |gpu - cpu| <= tol * (1 + |cpu|). Returns the worst differences.
fn check_vs_cpu(
    name: &str,
    gpu: &dyn Backend,
    tol: f32,
    build: impl FnOnce(&Context) -> (Vec<(Tensor, Vec<f32>)>, Tensor),
) -> Diff {
    let c = case(gpu, build);
    let cpu = CpuBackend::new(2).expect("cpu");
    let copy = graph_copy(&cpu, &c.graph).expect("graph_copy");
    gpu.graph_compute(&c.graph).unwrap_or_else(|e| panic!("{name} on {}: {e}", gpu.name()));
    cpu.graph_compute(&copy.graph).expect("cpu compute");
    let mut worst = Diff::default();
    for (g, w) in c.graph.nodes().iter().zip(copy.graph.nodes()) {
        if g.kind().is_view() {
            continue;
        }
        let (gv, wv) = (
            logical(g, |t, b| tensor_get(t, b, 0).expect("get")),
            logical(w, |t, b| tensor_get(t, b, 0).expect("get")),
        );
        let d = diff(&gv, &wv);
        for (i, (x, y)) in gv.iter().zip(&wv).enumerate() {
            let ok = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol * (1.0 + y.abs());
            assert!(ok, "{name} on {}: node {} element {i}: gpu {x}, cpu {y}", gpu.name(), g.op().name());
        }
        worst = Diff { n: worst.n + d.n, abs: worst.abs.max(d.abs), rel: worst.rel.max(d.rel) };
    }
    println!("{:<8} {name:<48} elems {:>7}  max abs {:.2e}  max rel {:.2e}", gpu.name(), worst.n, worst.abs, worst.rel);
    worst
}

fn input(ctx: &Context, ty: Type, ne: &[i64], seed: u64) -> (Tensor, Vec<f32>) {
    let t = ctx.new_tensor(ty, ne).expect("tensor");
    let v = rand_vec(t.nelements() as usize, seed);
    (t, v)
}

/// Tolerance for reductions (sums, dot products, exp) against the CPU's f32/f64 results.
const TOL: f32 = 1e-5;
/// Elementwise ops: one IEEE operation each (WGSL division may be 2.5 ulps off).
const TOL_ELEMENTWISE: f32 = 1e-6;

// ---- devices and buffers ----

#[test]
fn devices_are_named_and_described() {
    for (i, d) in gpu_devices().iter().enumerate() {
        assert_eq!(d.name(), format!("WebGPU{i}"));
        let props: std::collections::HashMap<_, _> = d.properties().into_iter().collect();
        let backend = &props["backend"];
        assert!(["Vulkan", "Metal", "Dx12", "Gl"].contains(&backend.as_str()), "backend {backend}");
        assert!(d.description().contains(backend.as_str()), "{}", d.description());
        for key in ["device_type", "driver", "max_buffer_size", "min_storage_buffer_offset_alignment", "shader_f16"] {
            assert!(props.contains_key(key), "missing property {key}");
        }
        let buft = d.buffer_type();
        assert!(!buft.is_host());
        assert!(buft.alignment() >= 4 && buft.alignment().is_power_of_two());
        let max_binding: usize = props["max_storage_buffer_binding_size"].parse().expect("number");
        assert!(buft.max_size() <= max_binding && buft.max_size() > 0);
        assert!(d.supports_buft(buft.as_ref()));
        assert!(!d.supports_buft(weft::backend::cpu::CpuBufferType::get().as_ref()));
        assert!(d.init_backend("n_threads=2").is_err(), "unknown parameters are refused");
        let via_registry = weft::backend::init_backend(&d.name()).expect("init by name");
        assert_eq!(via_registry.name(), d.name());
    }
}

#[test]
fn buffer_round_trips_at_unaligned_offsets() {
    for d in gpu_devices() {
        let buft = d.buffer_type();
        let size = 37;
        let buf = buft.alloc_buffer(size).expect("alloc");
        assert_eq!(buf.size(), size);
        assert!(buf.host_ptr().is_none() && !buf.is_host());
        // A host mirror of what the buffer must hold; fresh buffers are zeroed.
        let mut mirror = vec![0u8; size];
        let check = |buf: &Arc<dyn Buffer>, mirror: &[u8]| {
            let mut all = vec![0xAAu8; size];
            buf.read(0, &mut all).expect("read");
            assert_eq!(all, mirror);
            for (off, len) in [(0, 1), (1, 2), (3, 5), (5, 0), (6, 31), (33, 4), (36, 1)] {
                let mut part = vec![0u8; len];
                buf.read(off, &mut part).expect("read part");
                assert_eq!(part, &mirror[off..off + len], "read({off}, {len})");
            }
        };
        check(&buf, &mirror);
        let mut seed = 1u8;
        for (off, len) in [(0, 4), (1, 1), (2, 3), (5, 9), (13, 20), (35, 2), (7, 0), (0, 37)] {
            let data: Vec<u8> = (0..len).map(|i| seed.wrapping_mul(31).wrapping_add(i as u8)).collect();
            seed = seed.wrapping_add(1);
            buf.write(off, &data).expect("write");
            mirror[off..off + len].copy_from_slice(&data);
            check(&buf, &mirror);
        }
        for (off, len, v) in [(3, 10, 0x5Au8), (1, 2, 0), (8, 16, 0), (30, 7, 7), (0, 0, 1)] {
            buf.fill(off, v, len).expect("fill");
            mirror[off..off + len].fill(v);
            check(&buf, &mirror);
        }
        buf.clear(0x11).expect("clear");
        mirror.fill(0x11);
        check(&buf, &mirror);

        // Out of range: errors, never panics.
        let mut out = vec![0u8; 4];
        assert_eq!(buf.read(34, &mut out).unwrap_err().kind, ErrorKind::InvalidArgument);
        assert_eq!(buf.write(36, &[1, 2]).unwrap_err().kind, ErrorKind::InvalidArgument);
        assert!(buf.fill(30, 0, 8).is_err());
        assert!(buf.write(usize::MAX, &[1]).is_err());
        assert!(buft.alloc_buffer(buft.max_size() + 1).is_err());
        check(&buf, &mirror);
    }
}

#[test]
fn device_copies_and_tensor_copies() {
    for d in gpu_devices() {
        let buft = d.buffer_type();
        let (a, b) = (buft.alloc_buffer(64).expect("alloc"), buft.alloc_buffer(64).expect("alloc"));
        let data: Vec<u8> = (0..64).collect();
        a.write(0, &data).expect("write");
        // Aligned: copied on the device.
        assert!(b.copy_from(a.as_ref(), 8, 16, 32).expect("copy"));
        let mut out = vec![0u8; 64];
        b.read(0, &mut out).expect("read");
        assert_eq!(&out[16..48], &data[8..40]);
        assert!(out[..16].iter().chain(&out[48..]).all(|&x| x == 0));
        // Unaligned, same buffer, or host source: the caller must go through the host.
        assert!(!b.copy_from(a.as_ref(), 1, 0, 8).expect("copy"));
        assert!(!b.copy_from(a.as_ref(), 0, 0, 6).expect("copy"));
        assert!(!a.copy_from(a.as_ref(), 0, 32, 16).expect("copy"));
        let host = weft::backend::cpu::CpuBufferType::get().alloc_buffer(64).expect("host");
        assert!(!b.copy_from(host.as_ref(), 0, 0, 16).expect("copy"));
        assert!(b.copy_from(a.as_ref(), 60, 0, 8).is_err(), "source out of range");

        // tensor_copy: device to device (f32) and through the host (odd-sized f16).
        let gpu = d.init_backend("").expect("backend");
        let ctx = no_alloc_ctx();
        let x = ctx.new_tensor_1d(Type::F32, 10).expect("t");
        let y = ctx.new_tensor_1d(Type::F32, 10).expect("t");
        let h = ctx.new_tensor_1d(Type::F16, 3).expect("t");
        let h2 = ctx.new_tensor_1d(Type::F16, 3).expect("t");
        let _bufs = alloc_ctx_tensors(&ctx, gpu.as_ref()).expect("alloc");
        let v: Vec<f32> = (0..10).map(|i| i as f32 * 0.5 - 1.0).collect();
        set(&x, &v);
        tensor_copy(&x, &y).expect("copy");
        assert_eq!(get(&y), v);
        set(&h, &[1.5, -2.0, 0.25]);
        tensor_copy(&h, &h2).expect("copy");
        assert_eq!(get(&h2), vec![1.5, -2.0, 0.25]);
        // Partial tensor reads and writes at odd byte offsets inside a tensor.
        tensor_set(&x, &2.5f32.to_le_bytes()[1..3], 5).expect("set part");
        let mut raw = vec![0u8; 40];
        tensor_get(&x, &mut raw, 0).expect("get");
        let mut want: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
        want[5..7].copy_from_slice(&2.5f32.to_le_bytes()[1..3]);
        assert_eq!(raw, want);
        assert!(tensor_get(&x, &mut raw, 4).is_err(), "past the tensor's end");
    }
}

// ---- ops by hand ----

#[test]
fn ops_by_hand() {
    for gpu in backends() {
        let ctx = no_alloc_ctx();
        let a = ctx.new_tensor_2d(Type::F32, 4, 2).expect("t");
        let b = ctx.new_tensor_1d(Type::F32, 2).expect("t");
        let add = ctx.add(&a, &b).expect("add");
        let mul = ctx.mul(&a, &b).expect("mul");
        let scale = ctx.scale(&a, 0.5).expect("scale");
        let n = ctx.new_tensor_1d(Type::F32, 2).expect("t");
        let rms = ctx.rms_norm(&n, 0.0, false).expect("rms");
        let s = ctx.new_tensor_2d(Type::F32, 2, 2).expect("t");
        let sm = ctx.soft_max(&s).expect("softmax");
        let m = ctx.new_tensor_2d(Type::F16, 2, 2).expect("t");
        let smm = ctx.soft_max_ext(&s, Some(&m), 2.0, 0.0).expect("softmax ext");
        let ma = ctx.new_tensor_2d(Type::F32, 3, 2).expect("t");
        let mb = ctx.new_tensor_2d(Type::F32, 3, 2).expect("t");
        let mm = ctx.mul_mat(&ma, &mb).expect("mul_mat");
        // ALiBi: 2 heads, max_bias 8: n_head_log2 = 2, slopes 2^-4 and 2^-8.
        let h = ctx.new_tensor_3d(Type::F32, 2, 1, 2).expect("t");
        let hm = ctx.new_tensor_2d(Type::F32, 2, 1).expect("t");
        let alibi = ctx.soft_max_ext(&h, Some(&hm), 1.0, 8.0).expect("alibi");
        let mut g = ctx.new_graph().expect("graph");
        for t in [&add, &mul, &scale, &rms, &sm, &smm, &mm, &alibi] {
            g.build_forward_expand(t).expect("expand");
        }
        let _bufs = alloc_ctx_tensors(&ctx, gpu.as_ref()).expect("alloc");
        set(&a, &[1., 2., 3., 4., 5., 6., 7., 8.]);
        set(&b, &[10., 20.]);
        set(&n, &[3., 4.]);
        set(&s, &[0., 3f32.ln(), 1., 1.]);
        set(&m, &[0., f32::NEG_INFINITY, -1., 0.]);
        set(&ma, &[1., 2., 3., 4., 5., 6.]);
        set(&mb, &[1., 0., -1., 2., 1., 0.]);
        set(&h, &[0., 0., 0., 0.]);
        set(&hm, &[0., 16.]);
        gpu.graph_compute(&g).expect("compute");

        assert_eq!(get(&add), vec![11., 22., 13., 24., 15., 26., 17., 28.]);
        assert_eq!(get(&mul), vec![10., 40., 30., 80., 50., 120., 70., 160.]);
        assert_eq!(get(&scale), vec![0.5, 1., 1.5, 2., 2.5, 3., 3.5, 4.]);
        // mean(x^2) = 12.5: x / sqrt(12.5).
        assert_close(&get(&rms), &[3. / 12.5f32.sqrt(), 4. / 12.5f32.sqrt()], 1e-6);
        // [0, ln 3] -> [1/4, 3/4]; equal logits -> halves.
        assert_close(&get(&sm), &[0.25, 0.75, 0.5, 0.5], 1e-6);
        // Row 0: [0, 2 ln 3 - inf] -> [1, 0]. Row 1: [2 - 1, 2 + 0] -> [1/(1+e), e/(1+e)].
        let e = 1f32.exp();
        assert_close(&get(&smm), &[1., 0., 1. / (1. + e), e / (1. + e)], 1e-6);
        // [1,2,3].[1,0,-1] = -2, [4,5,6].[1,0,-1] = -2, [1,2,3].[2,1,0] = 4, [4,5,6].[2,1,0] = 13.
        assert_eq!(get(&mm), vec![-2., -2., 4., 13.]);
        // Head 0: logits [0, 16/16 = 1]; head 1: [0, 16/256].
        let (s0, s1) = (1. / (1. + e), 1. / (1. + (1f32 / 16.).exp()));
        assert_close(&get(&alibi), &[s0, 1. - s0, s1, 1. - s1], 1e-6);
    }
}

// ---- ops against the CPU ----

#[test]
fn binary_ops_match_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        for (op, f) in [
            ("add", Context::add as fn(&Context, &Tensor, &Tensor) -> weft::Result<Tensor>),
            ("sub", Context::sub),
            ("mul", Context::mul),
            ("div", Context::div),
        ] {
            // Broadcast in every dim: b [3, 2, 1, 2] over a [6, 4, 3, 2].
            check_vs_cpu(&format!("{op} broadcast [6,4,3,2] x [3,2,1,2]"), gpu, TOL_ELEMENTWISE, |ctx| {
                let a = input(ctx, Type::F32, &[6, 4, 3, 2], 1);
                let (b, vb) = input(ctx, Type::F32, &[3, 2, 1, 2], 2);
                let vb = vb.iter().map(|x| x + 2.0).collect();
                let out = f(ctx, &a.0, &b).expect("op");
                (vec![a, (b, vb)], out)
            });
        }
        // Views at offsets that are not multiples of the binding alignment, with row gaps,
        // and a permuted (non-contiguous) a.
        // Views at offsets that are not multiples of the binding alignment, with row gaps,
        // and a transposed (non-contiguous) a.
        check_vs_cpu("add views at odd offsets, transposed a", gpu, TOL_ELEMENTWISE, |ctx| {
            let base = input(ctx, Type::F32, &[300], 3);
            let a = ctx.view_2d(&base.0, 5, 7, 4 * 9, 4 * 3).expect("view");
            let a = ctx.transpose(&a).expect("transpose");
            let b = ctx.view_2d(&base.0, 7, 1, 4 * 7, 4 * 101).expect("view");
            let out = ctx.add(&a, &b).expect("add");
            (vec![base], out)
        });
        check_vs_cpu("mul in place", gpu, TOL_ELEMENTWISE, |ctx| {
            let a = input(ctx, Type::F32, &[33, 5], 4);
            let b = input(ctx, Type::F32, &[33, 1], 5);
            let out = ctx.mul_inplace(&a.0, &b.0).expect("mul");
            (vec![a, b], out)
        });
    }
}

#[test]
fn scale_and_rms_norm_match_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        check_vs_cpu("scale [7,5,3]", gpu, TOL_ELEMENTWISE, |ctx| {
            let a = input(ctx, Type::F32, &[7, 5, 3], 6);
            let out = ctx.scale(&a.0, -1.75).expect("scale");
            (vec![a], out)
        });
        check_vs_cpu("scale in place, view at odd offset", gpu, TOL_ELEMENTWISE, |ctx| {
            let base = input(ctx, Type::F32, &[100], 7);
            let v = ctx.view_2d(&base.0, 9, 3, 4 * 9, 4 * 5).expect("view");
            let out = ctx.scale_inplace(&v, 3.0).expect("scale");
            (vec![base], out)
        });
        for (ne0, rows) in [(1, 3), (5, 4), (64, 3), (65, 2), (1000, 3)] {
            check_vs_cpu(&format!("rms_norm [{ne0},{rows}]"), gpu, TOL, |ctx| {
                let a = input(ctx, Type::F32, &[ne0, rows, 1, 1], 8);
                let out = ctx.rms_norm(&a.0, 1e-6, false).expect("rms");
                (vec![a], out)
            });
        }
        check_vs_cpu("rms_norm in place [6,3,4,2]", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[6, 3, 4, 2], 9);
            let out = ctx.rms_norm(&a.0, 1e-5, true).expect("rms");
            (vec![a], out)
        });
        check_vs_cpu("rms_norm of a permuted view", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[6, 3, 4, 2], 9);
            let out = ctx.rms_norm(&ctx.permute(&a.0, [0, 2, 1, 3]).expect("permute"), 1e-5, false).expect("rms");
            (vec![a], out)
        });
        check_vs_cpu("rms_norm of a transposed view", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[9, 12], 10);
            let out = ctx.rms_norm(&ctx.transpose(&a.0).expect("t"), 1e-6, false).expect("rms");
            (vec![a], out)
        });
    }
}

#[test]
fn soft_max_matches_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        for ne0 in [1, 7, 64, 200] {
            check_vs_cpu(&format!("soft_max [{ne0},5,2]"), gpu, TOL, |ctx| {
                let a = input(ctx, Type::F32, &[ne0, 5, 2], 11);
                let out = ctx.soft_max(&a.0).expect("softmax");
                (vec![a], out)
            });
        }
        for (mask_ty, max_bias, heads) in
            [(Type::F32, 0.0, 3), (Type::F16, 0.0, 3), (Type::F32, 8.0, 6), (Type::F16, 4.0, 8), (Type::F32, 2.5, 5)]
        {
            let name = format!("soft_max_ext mask {mask_ty} max_bias {max_bias} heads {heads}");
            check_vs_cpu(&name, gpu, TOL, |ctx| {
                let a = input(ctx, Type::F32, &[13, 4, heads, 2], 12);
                // Mask rows >= a's rows (6 >= 4), with -inf entries (causal style).
                let (m, mut vm) = input(ctx, mask_ty, &[13, 6], 13);
                for r in 0..6 {
                    for c in 0..13 {
                        if c > r + 8 {
                            vm[r * 13 + c] = f32::NEG_INFINITY;
                        }
                    }
                }
                let out = ctx.soft_max_ext(&a.0, Some(&m), 0.7, max_bias).expect("softmax");
                (vec![a, (m, vm)], out)
            });
        }
        // The f16 mask is a view starting at an odd f16 element (byte 6): not 4-byte aligned.
        check_vs_cpu("soft_max_ext f16 mask view at byte offset 6", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[10, 3, 4], 14);
            let base = input(ctx, Type::F16, &[3 + 10 * 3], 15);
            let m = ctx.view_2d(&base.0, 10, 3, 2 * 10, 2 * 3).expect("view");
            let out = ctx.soft_max_ext(&a.0, Some(&m), 1.3, 3.0).expect("softmax");
            (vec![a, base], out)
        });
        check_vs_cpu("soft_max in place", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[70, 9], 16);
            let out = ctx.soft_max_inplace(&a.0).expect("softmax");
            (vec![a], out)
        });
    }
}

#[test]
fn mul_mat_matches_cpu() {
    for gpu in backends() {
        let gpu = gpu.as_ref();
        for (k, m, n) in [(1, 1, 1), (3, 2, 5), (16, 9, 7), (67, 13, 11), (256, 33, 17)] {
            check_vs_cpu(&format!("mul_mat k={k} m={m} n={n}"), gpu, TOL, |ctx| {
                let a = input(ctx, Type::F32, &[k, m], 17);
                let b = input(ctx, Type::F32, &[k, n], 18);
                let out = ctx.mul_mat(&a.0, &b.0).expect("mul_mat");
                (vec![a, b], out)
            });
        }
        check_vs_cpu("mul_mat broadcast a [10,6,2,1] b [10,4,6,3]", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[10, 6, 2, 1], 19);
            let b = input(ctx, Type::F32, &[10, 4, 6, 3], 20);
            let out = ctx.mul_mat(&a.0, &b.0).expect("mul_mat");
            (vec![a, b], out)
        });
        check_vs_cpu("mul_mat transposed b", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[12, 5], 21);
            let bt = input(ctx, Type::F32, &[7, 12], 22);
            let b = ctx.transpose(&bt.0).expect("transpose");
            let out = ctx.mul_mat(&a.0, &b).expect("mul_mat");
            (vec![a, bt], out)
        });
        check_vs_cpu("mul_mat permuted b, broadcast a", gpu, TOL, |ctx| {
            let a = input(ctx, Type::F32, &[8, 3, 1, 2], 23);
            // [8, 4, 5, 2] stored as [8, 5, 4, 2], then dims 1 and 2 swapped.
            let bs = input(ctx, Type::F32, &[8, 5, 4, 2], 24);
            let b = ctx.permute(&bs.0, [0, 2, 1, 3]).expect("permute");
            let out = ctx.mul_mat(&a.0, &b).expect("mul_mat");
            (vec![a, bs], out)
        });
        check_vs_cpu("mul_mat a and b views at odd offsets", gpu, TOL, |ctx| {
            let base = input(ctx, Type::F32, &[400], 25);
            let a = ctx.view_2d(&base.0, 9, 4, 4 * 11, 4 * 3).expect("view");
            let b = ctx.view_2d(&base.0, 9, 6, 4 * 10, 4 * 101).expect("view");
            let out = ctx.mul_mat(&a, &b).expect("mul_mat");
            (vec![base], out)
        });
    }
}

/// More than 65535 rows: one workgroup per row needs a 2-D grid.
#[test]
fn many_rows_use_a_2d_grid() {
    for gpu in backends() {
        check_vs_cpu("soft_max 70000 rows", gpu.as_ref(), TOL, |ctx| {
            let a = input(ctx, Type::F32, &[2, 70000], 26);
            let out = ctx.soft_max(&a.0).expect("softmax");
            (vec![a], out)
        });
        check_vs_cpu("rms_norm 70000 rows", gpu.as_ref(), TOL, |ctx| {
            let a = input(ctx, Type::F32, &[3, 70000], 27);
            let out = ctx.rms_norm(&a.0, 1e-6, false).expect("rms");
            (vec![a], out)
        });
    }
}

/// A small attention block, compared node by node the way the test suite does it.
#[test]
fn attention_block_node_by_node() {
    for gpu in backends() {
        let c = case(gpu.as_ref(), |ctx| {
            let x = input(ctx, Type::F32, &[16, 6], 30);
            let wq = input(ctx, Type::F32, &[16, 16], 31);
            let wk = input(ctx, Type::F32, &[16, 16], 32);
            let wv = input(ctx, Type::F32, &[16, 16], 33);
            let g = input(ctx, Type::F32, &[16], 34);
            let (mask, mut vm) = input(ctx, Type::F16, &[6, 6], 35);
            for r in 0..6 {
                for col in 0..6 {
                    vm[r * 6 + col] = if col > r { f32::NEG_INFINITY } else { 0.0 };
                }
            }
            let xn = ctx.mul(&ctx.rms_norm(&x.0, 1e-6, false).unwrap(), &g.0).unwrap();
            let q = ctx.reshape_3d(&ctx.mul_mat(&wq.0, &xn).unwrap(), 4, 4, 6).unwrap();
            let k = ctx.reshape_3d(&ctx.mul_mat(&wk.0, &xn).unwrap(), 4, 4, 6).unwrap();
            // v transposed: [tokens, head_dim, heads].
            let vt = ctx.reshape_3d(&ctx.mul_mat(&xn, &wv.0).unwrap(), 6, 4, 4).unwrap();
            // [head_dim, tokens, heads]
            let q = ctx.permute(&q, [0, 2, 1, 3]).unwrap();
            let k = ctx.permute(&k, [0, 2, 1, 3]).unwrap();
            let kq = ctx.mul_mat(&k, &q).unwrap();
            let kq = ctx.soft_max_ext(&kq, Some(&mask), 0.5, 0.0).unwrap();
            let kqv = ctx.mul_mat(&vt, &kq).unwrap();
            let out = ctx.add(&ctx.scale(&kqv, 1.5).unwrap(), &ctx.reshape_3d(&x.0, 4, 6, 4).unwrap()).unwrap();
            (vec![x, wq, wk, wv, g, (mask, vm)], out)
        });
        assert!(c.graph.nodes().iter().all(|n| gpu.supports_op(n)));
        let cpu = CpuBackend::new(2).expect("cpu");
        let mut compared = 0;
        compare_graph_backend(gpu.as_ref(), &cpu, &c.graph, |i, t1, t2| {
            let g = logical(t1, |t, b| tensor_get_in_compute(t, b, 0).expect("get"));
            let w = logical(t2, |t, b| tensor_get_in_compute(t, b, 0).expect("get"));
            let d = diff(&g, &w);
            assert!(d.abs <= TOL * (1.0 + w.iter().fold(0f32, |m, x| m.max(x.abs()))), "node {i} {d:?}");
            println!(
                "{:<8} attention node {i:<2} {:<10} elems {:>4}  max abs {:.2e}",
                gpu.name(),
                t1.op().name(),
                d.n,
                d.abs
            );
            compared += 1;
            Ok(true)
        })
        .expect("compare");
        assert!(compared >= 10);
    }
}

// ---- errors ----

#[test]
fn unsupported_ops_and_layouts_are_errors() {
    for gpu in backends() {
        let ctx = no_alloc_ctx();
        let a = ctx.new_tensor_1d(Type::F32, 8).expect("t");
        // The elementwise maps are f32 only (as ggml-cpu), the binaries float only.
        let h = ctx.new_tensor_1d(Type::F16, 8).expect("t");
        let sq = ctx.sqr(&h).expect("sqr f16");
        let i = ctx.new_tensor_1d(Type::I32, 8).expect("t");
        let hh = ctx.add(&i, &i).expect("add i32");
        // An f32 view 2 bytes into a: not addressable as whole f32 elements.
        let odd = ctx.view_1d(&a, 3, 2).expect("view");
        let odd_scaled = ctx.scale(&odd, 2.0).expect("scale");
        let _bufs = alloc_ctx_tensors(&ctx, gpu.as_ref()).expect("alloc");
        assert!(!gpu.supports_op(&sq));
        assert!(!gpu.supports_op(&hh));
        for t in [&sq, &hh, &odd_scaled] {
            let mut g = ctx.new_graph().expect("graph");
            g.build_forward_expand(t).expect("expand");
            let e = gpu.graph_compute(&g).expect_err("must fail");
            assert_eq!(e.kind, ErrorKind::NotSupported, "{e}");
        }
        // A CPU tensor in a WebGPU graph.
        let host = common::host_ctx();
        let x = host.new_tensor_1d(Type::F32, 4).expect("t");
        let y = host.scale(&x, 2.0).expect("scale");
        let mut g = host.new_graph().expect("graph");
        g.build_forward_expand(&y).expect("expand");
        assert_eq!(gpu.graph_compute(&g).expect_err("must fail").kind, ErrorKind::InvalidArgument);
    }
}
