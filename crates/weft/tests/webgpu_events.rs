#![cfg(feature = "webgpu")]
//! What the scheduler asks of the WebGPU backend besides kernels: events (submission
//! indices on the queue), graphs submitted without waiting, and device-side tensor copies
//! between buffers of one device. Skips (with a note) where no WebGPU device exists.

mod common;

use common::gpu::gpu_devices;

use common::{get, rand_vec, set};
use weft::alloc::alloc_tensors;
use weft::backend::cpu::CpuBufferType;
use weft::backend::Device;
use weft::{Context, ContextParams, Type};

#[test]
fn events_async_graphs_and_device_copies() {
    for dev in gpu_devices() {
        let be = dev.init_backend("").unwrap();
        let ctx = Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap();
        let a = ctx.new_tensor_1d(Type::F32, 64).unwrap();
        let b = ctx.new_tensor_1d(Type::F32, 64).unwrap();
        let c = ctx.new_tensor_1d(Type::F32, 64).unwrap();
        let s = ctx.scale(&a, 3.0).unwrap();
        alloc_tensors(&[a.clone(), s.clone()], dev.buffer_type().as_ref()).unwrap();
        alloc_tensors(std::slice::from_ref(&b), dev.buffer_type().as_ref()).unwrap();
        alloc_tensors(std::slice::from_ref(&c), CpuBufferType::get().as_ref()).unwrap();
        let v = rand_vec(64, 1);
        set(&a, &v);
        let mut g = ctx.new_graph().unwrap();
        g.build_forward_expand(&s).unwrap();

        // Queued, then an event marks the point; synchronizing it makes the result visible.
        let ev = dev.event_new().unwrap().expect("WebGPU devices have events");
        ev.synchronize().unwrap(); // never recorded: returns at once, as in ggml
        be.graph_compute_async(&g).unwrap();
        be.event_record(ev.as_ref()).unwrap();
        ev.synchronize().unwrap();
        be.event_wait(ev.as_ref()).unwrap(); // same queue: nothing to wait for
        let want: Vec<f32> = v.iter().map(|x| x * 3.0).collect();
        assert_eq!(get(&s), want, "{}", dev.name());

        // A copy between two buffers of the device runs on the queue; from host memory
        // the backend declines and the caller copies.
        assert!(be.cpy_tensor_async(be.as_ref(), &s, &b).unwrap());
        be.synchronize().unwrap();
        assert_eq!(get(&b), want);
        assert!(!be.cpy_tensor_async(be.as_ref(), &c, &b).unwrap());

        // Another device's event cannot be recorded here.
        let cpu_ev = weft::backend::cpu::CpuDevice::get().event_new().unwrap().unwrap();
        assert!(be.event_record(cpu_ev.as_ref()).is_err());
        assert!(dev.offload_op(
            &ctx.mul_mat(&ctx.new_tensor_2d(Type::F32, 4, 4).unwrap(), &ctx.new_tensor_2d(Type::F32, 4, 32).unwrap())
                .unwrap()
        ));
        assert!(!dev.offload_op(&s));
    }
}
