//! The backend interface, as ggml-backend splits it: where memory lives (buffer type,
//! buffer) kept apart from who computes (backend, device), and a registry that lists
//! devices and starts backends by name.

pub mod compare;
pub mod cpu;
mod observe;
mod registry;
pub mod sched;
mod tensor_io;
#[cfg(feature = "webgpu")]
pub mod webgpu;

use std::any::Any;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::graph::Graph;
use crate::tensor::Tensor;
use crate::{Error, Result};

pub use observe::{between_nodes, ComputeObserver, Unobserved};
pub use registry::{device_by_name, devices, init_backend, registries, Registry};
pub use tensor_io::{
    tensor_copy, tensor_from_f32, tensor_get, tensor_get_in_compute, tensor_memset, tensor_read,
    tensor_read_in_compute, tensor_set, tensor_to_f32, tensor_to_f32_in_compute, tensor_to_i64, try_vec, BusyGuard,
    ReadPermit,
};

/// What a buffer holds (ggml_backend_buffer_usage); schedulers treat weights specially.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferUsage {
    Any = 0,
    Weights = 1,
    Compute = 2,
}

impl BufferUsage {
    pub const ALL: [BufferUsage; 3] = [BufferUsage::Any, BufferUsage::Weights, BufferUsage::Compute];
    pub fn name(self) -> &'static str {
        match self {
            BufferUsage::Any => "any",
            BufferUsage::Weights => "weights",
            BufferUsage::Compute => "compute",
        }
    }
    pub fn from_name(name: &str) -> Option<BufferUsage> {
        Self::ALL.into_iter().find(|u| u.name() == name)
    }
}

/// State every buffer implementation carries: its usage, who holds it off the JS thread, and
/// which tensors in it JS may read although a compute holds it (a compute paused in the
/// scheduler's eval callback, see `ReadPermit`).
#[derive(Default)]
pub struct BufferState {
    usage: AtomicU8,
    /// `HELD_BY_COMPUTE` while a compute holds the buffer (exclusively), otherwise the
    /// number of reads off the JS thread (getAsync, toFloat32Async) in flight, which share
    /// it with each other and with reads on the JS thread. One word, so that taking it for
    /// a compute and for a read cannot both succeed.
    holders: AtomicUsize,
    readable: Mutex<Vec<u64>>,
}

const HELD_BY_COMPUTE: usize = usize::MAX;

/// Who holds a buffer, for errors that must say why it is busy.
fn holder_text(holders: usize) -> String {
    match holders {
        HELD_BY_COMPUTE => "in use by a running compute".to_string(),
        1 => "being read by a pending getAsync/toFloat32Async".to_string(),
        n => format!("being read by {n} pending getAsync/toFloat32Async calls"),
    }
}

impl BufferState {
    pub fn usage(&self) -> BufferUsage {
        match self.usage.load(Ordering::Relaxed) {
            1 => BufferUsage::Weights,
            2 => BufferUsage::Compute,
            _ => BufferUsage::Any,
        }
    }
    pub fn set_usage(&self, u: BufferUsage) {
        self.usage.store(u as u8, Ordering::Relaxed);
    }
    /// A compute holds the buffer: nothing else may touch it.
    pub fn in_use(&self) -> bool {
        self.holders.load(Ordering::Acquire) == HELD_BY_COMPUTE
    }
    /// Nothing holds the buffer: it may be written, cleared or freed.
    pub fn is_idle(&self) -> bool {
        self.holders.load(Ordering::Acquire) == 0
    }
    /// Error unless nothing holds the buffer (for writes, release and dispose).
    pub fn check_idle(&self, what: &str, name: &str) -> Result<()> {
        match self.holders.load(Ordering::Acquire) {
            0 => Ok(()),
            h => Err(Error::busy(format!("{what}: buffer '{name}' is {}; await it first", holder_text(h)))),
        }
    }
    /// Error while a compute holds the buffer (for reads, which pending reads allow), unless
    /// it has given a read permit for tensor `id`.
    pub fn check_readable(&self, what: &str, name: &str, id: u64) -> Result<()> {
        if !self.allows_read(id) {
            return Err(Error::busy(format!(
                "{what}: buffer '{name}' is {}; await it first",
                holder_text(HELD_BY_COMPUTE)
            )));
        }
        Ok(())
    }
    /// Take the buffer for one compute; Err(what holds it) if anything does.
    pub(crate) fn try_acquire(&self) -> std::result::Result<(), String> {
        self.holders
            .compare_exchange(0, HELD_BY_COMPUTE, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(holder_text)
    }
    /// Join the reads of the buffer; Err(what holds it) while a compute does.
    pub(crate) fn try_acquire_read(&self) -> std::result::Result<(), String> {
        let mut h = self.holders.load(Ordering::Acquire);
        loop {
            if h == HELD_BY_COMPUTE || h == HELD_BY_COMPUTE - 1 {
                return Err(holder_text(h));
            }
            match self.holders.compare_exchange_weak(h, h + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Ok(()),
                Err(now) => h = now,
            }
        }
    }
    pub(crate) fn release(&self) {
        self.holders.store(0, Ordering::Release);
    }
    pub(crate) fn release_read(&self) {
        self.holders.fetch_sub(1, Ordering::AcqRel);
    }
    fn readable(&self) -> std::sync::MutexGuard<'_, Vec<u64>> {
        // A list of ids: a panic elsewhere cannot leave it torn.
        self.readable.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Whether JS may read tensor `id` from this buffer now: it is idle, or the compute
    /// holding it is paused with a read permit for that tensor.
    pub fn allows_read(&self, id: u64) -> bool {
        !self.in_use() || self.readable().contains(&id)
    }
    pub(crate) fn permit_read(&self, id: u64) {
        self.readable().push(id);
    }
    pub(crate) fn revoke_read(&self, id: u64) {
        let mut r = self.readable();
        if let Some(i) = r.iter().position(|&x| x == id) {
            r.swap_remove(i);
        }
    }
}

/// ggml_backend_buffer_type: an allocator of buffers of one kind of memory.
pub trait BufferType: Send + Sync {
    fn name(&self) -> String;
    fn alloc_buffer(&self, size: usize) -> Result<Arc<dyn Buffer>>;
    /// Alignment of tensor offsets inside buffers of this type.
    fn alignment(&self) -> usize;
    /// Largest single buffer.
    fn max_size(&self) -> usize {
        usize::MAX
    }
    /// Bytes a tensor needs in a buffer of this type (ggml_backend_buft_get_alloc_size).
    fn alloc_size(&self, t: &Tensor) -> usize {
        t.nbytes()
    }
    /// Host memory: tensors in it can be read and written through a pointer.
    fn is_host(&self) -> bool;
    fn as_any(&self) -> &dyn Any;
}

/// ggml_backend_buffer: one allocation. Offsets are bytes from the buffer's start;
/// implementations check bounds on every access.
pub trait Buffer: Send + Sync {
    fn buffer_type(&self) -> Arc<dyn BufferType>;
    fn name(&self) -> String {
        self.buffer_type().name()
    }
    fn size(&self) -> usize;
    /// Base pointer for host buffers (ggml_backend_buffer_get_base), None otherwise.
    fn host_ptr(&self) -> Option<*mut u8>;
    fn clear(&self, value: u8) -> Result<()> {
        self.fill(0, value, self.size())
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<()>;
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<()>;
    fn fill(&self, offset: usize, value: u8, size: usize) -> Result<()>;
    /// Device-side copy from another buffer when this backend can do it directly
    /// (ggml's cpy_tensor); Ok(false) asks the caller to go through host memory.
    fn copy_from(&self, _src: &dyn Buffer, _src_offset: usize, _dst_offset: usize, _size: usize) -> Result<bool> {
        Ok(false)
    }
    fn state(&self) -> &BufferState;
    fn as_any(&self) -> &dyn Any;

    /// Free the memory now (JS dispose()); later accesses are errors. Refused while a
    /// compute uses the buffer.
    fn release(&self) -> Result<()>;
    fn is_released(&self) -> bool;

    fn usage(&self) -> BufferUsage {
        self.state().usage()
    }
    fn set_usage(&self, usage: BufferUsage) {
        self.state().set_usage(usage)
    }
    fn is_host(&self) -> bool {
        self.buffer_type().is_host()
    }
}

/// Check `offset..offset+len` lies inside a buffer of `size` bytes.
pub fn check_range(what: &str, buffer: &str, size: usize, offset: usize, len: usize) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(Error::invalid(format!(
            "{what}: bytes {offset}..{} are outside buffer '{buffer}' of {size} bytes",
            offset.saturating_add(len)
        ))),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceType {
    Cpu,
    Gpu,
    Accel,
}

impl DeviceType {
    pub const ALL: [DeviceType; 3] = [DeviceType::Cpu, DeviceType::Gpu, DeviceType::Accel];
    pub fn from_name(name: &str) -> Option<DeviceType> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }
    pub fn name(self) -> &'static str {
        match self {
            DeviceType::Cpu => "cpu",
            DeviceType::Gpu => "gpu",
            DeviceType::Accel => "accel",
        }
    }
}

/// ggml_backend_dev: one device a registry found.
pub trait Device: Send + Sync {
    fn name(&self) -> String;
    fn description(&self) -> String;
    /// (free, total) bytes.
    fn memory(&self) -> (usize, usize);
    fn device_type(&self) -> DeviceType;
    /// Start a backend on this device; `params` is what followed "NAME:" in init_backend.
    fn init_backend(&self, params: &str) -> Result<Arc<dyn Backend>>;
    fn buffer_type(&self) -> Arc<dyn BufferType>;
    fn supports_op(&self, op: &Tensor) -> bool;
    fn supports_buft(&self, buft: &dyn BufferType) -> bool;
    /// ggml_backend_dev_offload_op: whether this device wants to run `op` although its
    /// weights live in host memory (worth the copy: large batches). The scheduler asks.
    fn offload_op(&self, _op: &Tensor) -> bool {
        false
    }
    /// ggml_backend_event_new: a marker in this device's stream of work, or None where the
    /// device has no events (the scheduler then synchronizes whole backends instead).
    fn event_new(&self) -> Result<Option<Arc<dyn Event>>> {
        Ok(None)
    }
    /// Extra facts for users (backend API, limits), as key/value text.
    fn properties(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// ggml_backend_event: a point in one device's stream of work (made by Device::event_new,
/// placed by Backend::event_record).
pub trait Event: Send + Sync {
    /// ggml_backend_event_synchronize: block until the work before the recorded point ran.
    fn synchronize(&self) -> Result<()>;
    fn as_any(&self) -> &dyn Any;
}

/// ggml_backend: a stream of work on one device.
pub trait Backend: Send + Sync {
    fn name(&self) -> String;
    fn device(&self) -> Arc<dyn Device>;
    fn default_buffer_type(&self) -> Arc<dyn BufferType> {
        self.device().buffer_type()
    }
    fn supports_op(&self, op: &Tensor) -> bool {
        self.device().supports_op(op)
    }
    fn supports_buft(&self, buft: &dyn BufferType) -> bool {
        self.device().supports_buft(buft)
    }
    fn offload_op(&self, op: &Tensor) -> bool {
        self.device().offload_op(op)
    }
    /// Compute every node of the graph in order and return when done. All tensors must be
    /// allocated in buffers this backend can use.
    fn graph_compute(&self, graph: &Graph) -> Result<()>;
    /// graph_compute, telling `observer` how far it got and stopping where it asks (an
    /// `Aborted` error). Backends override this to report and check between nodes; this
    /// default only checks before the graph and reports at the end.
    fn graph_compute_observed(&self, graph: &Graph, observer: &dyn ComputeObserver) -> Result<()> {
        let total = graph.n_nodes();
        between_nodes(observer, 0, total)?;
        self.graph_compute(graph)?;
        observer.progress(total, total);
        Ok(())
    }
    /// ggml_backend_graph_compute_async: start the graph; `synchronize` waits for it. Reads
    /// and copies through this backend's buffers are ordered after it. Backends without a
    /// queue of their own compute it right away.
    fn graph_compute_async(&self, graph: &Graph) -> Result<()> {
        self.graph_compute(graph)
    }
    /// Wait until all work queued on this backend has finished.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    /// ggml's cpy_tensor_async: queue a copy of `src` (in memory of `src_backend`) into
    /// `dst` (memory of this backend), ordered after the work queued on this backend.
    /// Ok(false): this backend cannot, the caller synchronizes and copies.
    fn cpy_tensor_async(&self, _src_backend: &dyn Backend, _src: &Tensor, _dst: &Tensor) -> Result<bool> {
        Ok(false)
    }
    /// ggml_backend_event_record: mark the point reached by the work queued so far.
    fn event_record(&self, _event: &dyn Event) -> Result<()> {
        Err(Error::unsupported(format!("backend {} has no events", self.name())))
    }
    /// ggml_backend_event_wait: make work queued on this backend after this call wait for
    /// the event (a host wait where the event belongs to another device).
    fn event_wait(&self, event: &dyn Event) -> Result<()> {
        event.synchronize()
    }
    fn set_tensor_async(&self, t: &Tensor, data: &[u8], offset: usize) -> Result<()> {
        tensor_set(t, data, offset)
    }
    fn get_tensor_async(&self, t: &Tensor, out: &mut [u8], offset: usize) -> Result<()> {
        tensor_get(t, out, offset)
    }
    /// Backend-specific settings ("n_threads" for CPU). Unknown keys are an error.
    fn set_option(&self, key: &str, _value: &str) -> Result<()> {
        Err(Error::invalid(format!("backend {} has no option '{key}'", self.name())))
    }
    /// Seconds the device spent on the last graph this backend computed to completion, as
    /// the device measures it (GPU timestamps), for perf measurements; None where the
    /// backend does not measure (the host's clock around compute is the measure then).
    fn last_compute_seconds(&self) -> Option<f64> {
        None
    }
    fn as_any(&self) -> &dyn Any;
}

/// Why a backend refuses a node, for error messages: "CPU does not support MUL_MAT(...)".
pub fn unsupported(backend: &str, node: &Tensor) -> Error {
    let srcs: Vec<String> = node.srcs().iter().flatten().map(|s| s.ty().name().to_string()).collect();
    Error::unsupported(format!(
        "{backend} does not support {} ({} from [{}]) in node '{}'",
        node.op().desc(),
        node.ty(),
        srcs.join(", "),
        node.name()
    ))
}
