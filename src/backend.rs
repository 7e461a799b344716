//! JS classes Backend and BackendBuffer: devices, backends started by name, buffers, and
//! compute that runs off the event loop.

use std::collections::HashMap;
use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Unknown};
use napi::Env;

use crate::args::{int, string, uint};
use crate::context::Context;
use crate::enums::{BufferUsage, DeviceType};
use crate::error::{disposed, invalid, not_constructible, IntoJs, Result};
use crate::graph::Graph;
use crate::memory::External;
use crate::task::{class_arg, promise, CompareJob, ComputeJob, Promised};
use crate::tensor::Tensor;
use crate::watch::ComputeWatch;

#[napi(object)]
pub struct DeviceInfo {
    /// Name to pass to Backend.init ('CPU', 'WebGPU0', ...).
    pub name: String,
    pub description: String,
    /// 'cpu', 'gpu' or 'accel' (ggml_backend_dev_type).
    #[napi(js_name = "type")]
    pub ty: DeviceType,
    pub memory_free: i64,
    pub memory_total: i64,
    /// Backend-specific facts (API, limits, threads).
    pub properties: HashMap<String, String>,
}

fn device_info(d: &dyn weft::backend::Device) -> Result<DeviceInfo> {
    let (free, total) = d.memory();
    Ok(DeviceInfo {
        name: d.name(),
        description: d.description(),
        ty: DeviceType::from_engine(d.device_type())?,
        memory_free: free as i64,
        memory_total: total as i64,
        properties: d.properties().into_iter().collect(),
    })
}

#[napi]
pub struct Backend {
    inner: Option<Arc<dyn weft::backend::Backend>>,
}

impl Backend {
    pub fn wrap(b: Arc<dyn weft::backend::Backend>) -> Backend {
        Backend { inner: Some(b) }
    }

    pub fn get(&self) -> Result<&Arc<dyn weft::backend::Backend>> {
        self.inner.as_ref().ok_or_else(|| disposed("Backend"))
    }
}

#[napi]
impl Backend {
    /// Not callable: backends are started by Backend.init(name).
    #[napi(catch_unwind, constructor, skip_typescript)]
    pub fn new() -> Result<Backend> {
        Err(not_constructible("Backend", "Backend.init(name)"))
    }

    /// Every device of every backend weft was built with (ggml_backend_dev_get), CPU first.
    /// A backend without a usable device (no GPU adapter) is simply absent.
    #[napi(catch_unwind)]
    pub fn devices() -> Result<Vec<DeviceInfo>> {
        weft::backend::devices().iter().map(|d| device_info(d.as_ref())).collect()
    }

    /// ggml_backend_init_by_name: 'CPU', 'CPU:n_threads=4', 'WebGPU0' ...
    #[napi(catch_unwind, factory)]
    pub fn init(name: String) -> Result<Backend> {
        Ok(Backend { inner: Some(weft::backend::init_backend(&name).js()?) })
    }

    #[napi(catch_unwind, getter)]
    pub fn name(&self) -> Result<String> {
        Ok(self.get()?.name())
    }

    #[napi(catch_unwind, getter)]
    pub fn device(&self) -> Result<DeviceInfo> {
        device_info(self.get()?.device().as_ref())
    }

    /// Seconds the device spent on the last graph this backend computed, as the device
    /// measures it (WebGPU: GPU timestamps where the adapter has them, else the wall time
    /// from submission to completion); null where the backend does not measure (CPU).
    #[napi(catch_unwind, getter)]
    pub fn last_compute_seconds(&self) -> Result<Option<f64>> {
        Ok(self.get()?.last_compute_seconds())
    }

    /// ggml_backend_supports_op: can this backend compute `t`'s op with its types and layout?
    #[napi(catch_unwind)]
    pub fn supports_op(&self, t: &Tensor) -> Result<bool> {
        Ok(self.get()?.supports_op(t.get()?))
    }

    /// ggml_backend_cpu_set_n_threads (CPU only).
    #[napi(catch_unwind)]
    pub fn set_n_threads(&self, n: f64) -> Result<()> {
        let n: u32 = int("setNThreads: n", n)?;
        self.get()?.set_option("n_threads", &n.to_string()).js()
    }

    /// A backend-specific option by name: CPU `n_threads`, `strict_cpu` (`auto`, the
    /// default: threads pinned one per CPU when there are as many as the process may use;
    /// `1` always pinned; `0` never); WebGPU `matmul` (`naive`, `matvec`, `tiled` or `auto`:
    /// the MUL_MAT kernel forced on the device).
    #[napi(catch_unwind)]
    pub fn set_option(&self, key: String, value: String) -> Result<()> {
        self.get()?.set_option(&key, &value).js()
    }

    /// ggml_backend_alloc_ctx_tensors: every unallocated tensor of a noAlloc context in one
    /// buffer of this backend; null when there is nothing to allocate.
    #[napi(catch_unwind)]
    pub fn alloc_ctx_tensors(&self, env: &Env, ctx: &Context) -> Result<Option<BackendBuffer>> {
        let bufs = weft::alloc::alloc_ctx_tensors(ctx.ctx()?, self.get()?.as_ref()).js()?;
        Ok((!bufs.is_empty()).then(|| BackendBuffer::owning(env, bufs.buffers)))
    }

    /// ggml_backend_alloc_buffer: a raw buffer of `size` bytes.
    #[napi(catch_unwind)]
    pub fn alloc_buffer(&self, env: &Env, size: f64) -> Result<BackendBuffer> {
        let b = self.get()?.default_buffer_type().alloc_buffer(uint("allocBuffer: size", size)?).js()?;
        Ok(BackendBuffer::owning(env, vec![b]))
    }

    /// ggml_backend_graph_compute, off the event loop. The graph's tensors must be allocated;
    /// their buffers cannot be written or read until the Promise settles. `options.signal`
    /// stops the compute between nodes (the Promise rejects with an AbortError) and
    /// `options.onProgress(nodesDone, nodesTotal)` follows it. Every failure, a busy buffer
    /// or a bad argument included, rejects the Promise.
    #[napi(
        catch_unwind,
        ts_args_type = "graph: Graph, options?: ComputeOptions | undefined | null",
        ts_return_type = "Promise<void>"
    )]
    pub fn compute(&self, env: Env, graph: Unknown, options: Option<Unknown>) -> AsyncTask<Promised<ComputeJob>> {
        promise(|| {
            let backend = self.get()?.clone();
            let graph = class_arg::<Graph>(&env, &graph, "compute: graph")?.snapshot()?;
            let busy = weft::backend::BusyGuard::for_graph(&graph).js()?;
            // last: it adds a listener to the signal, which settling the Promise removes
            let watch = ComputeWatch::new(&env, options)?;
            Ok(ComputeJob { backend, graph, busy, watch })
        })
    }

    /// ggml_backend_compare_graph_backend: compute `graph` here and a copy on `other`, one
    /// node at a time, returning both results of every non-view node as f32.
    #[napi(
        catch_unwind,
        ts_args_type = "other: Backend, graph: Graph",
        ts_return_type = "Promise<Array<NodeComparison>>"
    )]
    pub fn compare_graph(&self, env: Env, other: Unknown, graph: Unknown) -> AsyncTask<Promised<CompareJob>> {
        promise(|| {
            let backend1 = self.get()?.clone();
            let backend2 = class_arg::<Backend>(&env, &other, "compareGraph: other")?.get()?.clone();
            let graph = class_arg::<Graph>(&env, &graph, "compareGraph: graph")?.snapshot()?;
            let busy = weft::backend::BusyGuard::for_graph(&graph).js()?;
            Ok(CompareJob { backend1, backend2, graph, busy })
        })
    }

    /// ggml_backend_synchronize.
    #[napi(catch_unwind)]
    pub fn synchronize(&self) -> Result<()> {
        self.get()?.synchronize().js()
    }
}

disposable!(Backend, "Drop this backend now.");

/// Memory of one backend (ggml_backend_buffer); allocCtxTensors may return several pieces
/// as one object, as ggml's multi-buffer does.
#[napi(custom_finalize)]
pub struct BackendBuffer {
    inner: Option<Vec<Arc<dyn weft::backend::Buffer>>>,
    /// The memory reported to V8 while this object owns it.
    external: External,
}

crate::memory::release_external_on_finalize!(BackendBuffer);

impl BackendBuffer {
    /// A JS object owning these buffers (their memory is reported to V8).
    pub fn owning(env: &Env, b: Vec<Arc<dyn weft::backend::Buffer>>) -> BackendBuffer {
        let external = External::report(env, b.iter().map(|b| b.size()).sum());
        BackendBuffer { inner: Some(b), external }
    }

    /// A JS view of buffers something else owns (a graph allocator's).
    pub fn borrowing(b: Vec<Arc<dyn weft::backend::Buffer>>) -> BackendBuffer {
        BackendBuffer { inner: Some(b), external: External::default() }
    }

    fn get(&self) -> Result<&Vec<Arc<dyn weft::backend::Buffer>>> {
        self.inner.as_ref().ok_or_else(|| disposed("BackendBuffer"))
    }
}

#[napi]
impl BackendBuffer {
    /// Not callable: buffers come from backend.allocBuffer / allocCtxTensors.
    #[napi(catch_unwind, constructor, skip_typescript)]
    pub fn new() -> Result<BackendBuffer> {
        Err(not_constructible(
            "BackendBuffer",
            "backend.allocBuffer(), backend.allocCtxTensors() and allocator.buffers()",
        ))
    }

    #[napi(catch_unwind, getter)]
    pub fn size(&self) -> Result<i64> {
        Ok(self.get()?.iter().map(|b| b.size() as i64).sum())
    }

    #[napi(catch_unwind, getter)]
    pub fn name(&self) -> Result<String> {
        Ok(self.get()?.first().map(|b| b.name()).unwrap_or_default())
    }

    #[napi(catch_unwind, getter)]
    pub fn is_host(&self) -> Result<bool> {
        Ok(self.get()?.iter().all(|b| b.is_host()))
    }

    /// ggml_backend_buffer_usage: 'any', 'weights' or 'compute'.
    #[napi(catch_unwind, getter)]
    pub fn usage(&self) -> Result<BufferUsage> {
        let u = self.get()?.first().map(|b| b.usage()).unwrap_or(weft::backend::BufferUsage::Any);
        BufferUsage::from_engine(u)
    }

    #[napi(catch_unwind, setter, js_name = "usage")]
    pub fn set_usage(&self, #[napi(ts_arg_type = "BufferUsage")] usage: Unknown) -> Result<()> {
        let usage = string("usage", &usage)?;
        let u = weft::backend::BufferUsage::from_name(&usage)
            .ok_or_else(|| invalid(format!("usage: '{usage}' is not one of any, weights, compute")))?;
        self.get()?.iter().for_each(|b| b.set_usage(u));
        Ok(())
    }

    /// ggml_backend_buffer_clear: every byte set to `value`.
    #[napi(catch_unwind)]
    pub fn clear(&self, value: f64) -> Result<()> {
        let value: u8 = int("clear: value", value)?;
        for b in self.get()? {
            b.state().check_idle("clear", &b.name()).js()?;
            b.clear(value).js()?;
        }
        Ok(())
    }
}

impl BackendBuffer {
    fn free(&mut self, env: &Env) -> Result<()> {
        if let Some(bufs) = &self.inner {
            // All or none: check every piece before freeing any.
            for b in bufs {
                b.state().check_idle("dispose", &b.name()).js()?;
            }
            for b in bufs {
                b.release().js()?;
            }
        }
        self.inner = None;
        self.external.release(env);
        Ok(())
    }
}

disposable!(BackendBuffer, "Free the memory now. Tensors in this buffer become unusable (their reads and writes throw). Throws while a compute uses the buffer.", custom);
