//! Loading a model's weights from a GGUF file (gguf::load_weights): mapped in place on the
//! CPU (no copy, the file never written), uploaded where mapping is off, progress in bytes,
//! and the refusals (missing tensor, shape mismatch).

mod common;

use std::path::PathBuf;

use common::{get, rand_vec, set};
use weft::backend::cpu::CpuBackend;
use weft::backend::{tensor_set, BufferUsage};
use weft::gguf::{create_tensors, load_weights, GgufFile, GgufWriter, LoadOptions};
use weft::types::convert::from_f32;
use weft::{Context, ContextParams, Type};

/// A GGUF file with a 64x3 f32 matrix `w`, a q8_0 64x2 matrix `q` and a 64-vector `b`.
fn write_model(name: &str) -> (PathBuf, Vec<f32>, Vec<f32>) {
    let w = rand_vec(64 * 3, 1);
    let b = rand_vec(64, 2);
    let mut wr = GgufWriter::new();
    wr.set("general.architecture", "test").unwrap();
    wr.add_tensor("w", Type::F32, &[64, 3], from_f32(Type::F32, &w).unwrap()).unwrap();
    wr.add_tensor("q", Type::Q8_0, &[64, 2], from_f32(Type::Q8_0, &rand_vec(128, 3)).unwrap()).unwrap();
    wr.add_tensor("b", Type::F32, &[64], from_f32(Type::F32, &b).unwrap()).unwrap();
    let path = std::env::temp_dir().join(format!("weft-weights-{name}-{}.gguf", std::process::id()));
    wr.write_to_file(&path).unwrap();
    (path, w, b)
}

fn no_alloc_ctx() -> Context {
    Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap()
}

#[test]
fn weights_map_in_place_on_the_cpu_and_compute() {
    let (path, w, b) = write_model("map");
    let file = GgufFile::open(&path).unwrap();
    let ctx = no_alloc_ctx();
    let tensors = create_tensors(&file, &ctx).unwrap();
    let cpu = CpuBackend::new(2).unwrap();
    let mut calls = Vec::new();
    let loaded = load_weights(&file, &tensors, &cpu, LoadOptions::default(), &mut |d, t| calls.push((d, t))).unwrap();
    assert!(loaded.mapped);
    assert_eq!(loaded.buffers.len(), 1);
    let buf = &loaded.buffers[0];
    assert_eq!(buf.name(), "CPU_Mapped");
    assert_eq!(buf.usage(), BufferUsage::Weights);
    let total: usize = file.tensors().iter().map(|i| i.size).sum();
    assert_eq!(calls.last(), Some(&(total, total)));
    assert!(calls.windows(2).all(|p| p[0].0 <= p[1].0), "progress never goes back: {calls:?}");
    assert_eq!(get(&tensors[0]), w);
    assert_eq!(get(&tensors[2]), b);

    // The weights feed a compute straight from the map: w's rows plus b.
    let hctx = common::host_ctx();
    let rows = hctx.view_2d(&tensors[0], 64, 3, 64 * 4, 0).unwrap();
    let sum = hctx.add(&rows, &tensors[2]).unwrap();
    common::compute(&hctx, &sum, 2);
    let want: Vec<f32> = w.iter().enumerate().map(|(i, x)| x + b[i % 64]).collect();
    assert_eq!(get(&sum), want);

    // Writing a mapped weight changes this process's copy only, never the file.
    let before = std::fs::read(&path).unwrap();
    set(&tensors[2], &vec![7.0; 64]);
    assert_eq!(get(&tensors[2]), vec![7.0; 64]);
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // Tensors already allocated are left alone: a second load has nothing to do.
    let again = load_weights(&file, &tensors, &cpu, LoadOptions::default(), &mut |_, _| {}).unwrap();
    assert!(again.buffers.is_empty() || again.buffers.iter().all(|b| b.size() == 0));
    drop(file);
    assert_eq!(get(&tensors[0]), w, "the buffer keeps its own mapping after the file is closed");
    std::fs::remove_file(path).unwrap();
}

#[test]
fn weights_upload_when_mapping_is_off() {
    let (path, w, _) = write_model("copy");
    let file = GgufFile::open(&path).unwrap();
    let ctx = no_alloc_ctx();
    let tensors = create_tensors(&file, &ctx).unwrap();
    let cpu = CpuBackend::new(1).unwrap();
    let mut last = (0, 0);
    let opts = LoadOptions { mmap: false, prefetch: false };
    let loaded = load_weights(&file, &tensors, &cpu, opts, &mut |d, t| last = (d, t)).unwrap();
    assert!(!loaded.mapped);
    assert_eq!(loaded.buffers[0].name(), "CPU");
    assert_eq!(last.0, last.1);
    assert_eq!(get(&tensors[0]), w);
    // From memory there is no file to map: the loader copies.
    let mem = GgufFile::from_bytes(std::fs::read(&path).unwrap()).unwrap();
    let ctx2 = no_alloc_ctx();
    let t2 = create_tensors(&mem, &ctx2).unwrap();
    assert!(!load_weights(&mem, &t2, &cpu, LoadOptions::default(), &mut |_, _| {}).unwrap().mapped);
    assert_eq!(get(&t2[0]), w);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn weights_refuse_missing_and_mismatched_tensors() {
    let (path, _, _) = write_model("refuse");
    let file = GgufFile::open(&path).unwrap();
    let cpu = CpuBackend::new(1).unwrap();
    let ctx = no_alloc_ctx();
    let t = ctx.new_tensor_1d(Type::F32, 64).unwrap();
    t.set_name("missing");
    let e = load_weights(&file, &[t], &cpu, LoadOptions::default(), &mut |_, _| {}).err().unwrap();
    assert!(e.message.contains("no tensor named 'missing'"), "{}", e.message);
    let t = ctx.new_tensor_1d(Type::F16, 64).unwrap();
    t.set_name("b");
    let e = load_weights(&file, std::slice::from_ref(&t), &cpu, LoadOptions::default(), &mut |_, _| {}).err().unwrap();
    assert!(e.message.contains("'b'"), "{}", e.message);
    assert!(!t.is_allocated());
    // A tensor bound elsewhere keeps its buffer.
    let hctx = common::host_ctx();
    let own = hctx.new_tensor_1d(Type::F32, 64).unwrap();
    own.set_name("b");
    tensor_set(&own, &[0u8; 256], 0).unwrap();
    let r = load_weights(&file, std::slice::from_ref(&own), &cpu, LoadOptions::default(), &mut |_, _| {}).unwrap();
    assert!(r.buffers.is_empty());
    std::fs::remove_file(path).unwrap();
}
