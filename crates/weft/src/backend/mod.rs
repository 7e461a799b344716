//! The backend interface, as ggml-backend splits it: where memory lives (buffer type,
//! buffer) kept apart from who computes (backend, device), and a registry that lists
//! devices and starts backends by name.

pub mod compare;
pub mod cpu;
mod observe;
mod registry;
mod tensor_io;
#[cfg(feature = "webgpu")]
pub mod webgpu;

use std::any::Any;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::graph::Graph;
use crate::tensor::Tensor;
use crate::{Error, Result};

pub use observe::{between_nodes, ComputeObserver, Unobserved};
pub use registry::{device_by_name, devices, init_backend, registries, Registry};
pub use tensor_io::{
    tensor_copy, tensor_from_f32, tensor_get, tensor_get_in_compute, tensor_memset, tensor_set, tensor_to_f32,
    tensor_to_f32_in_compute, tensor_to_i64, BusyGuard,
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

/// State every buffer implementation carries: its usage and how many computes use it.
#[derive(Default)]
pub struct BufferState {
    usage: AtomicU8,
    in_use: AtomicUsize,
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
    pub fn in_use(&self) -> bool {
        self.in_use.load(Ordering::Acquire) > 0
    }
    /// Error unless no compute uses the buffer (for release and JS access).
    pub fn check_idle(&self, what: &str, name: &str) -> Result<()> {
        if self.in_use() {
            return Err(Error::busy(format!("{what}: buffer '{name}' is in use by a running compute; await it first")));
        }
        Ok(())
    }
    /// Take the buffer for one compute; false if another compute has it.
    pub(crate) fn try_acquire(&self) -> bool {
        self.in_use.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }
    pub(crate) fn release(&self) {
        self.in_use.fetch_sub(1, Ordering::AcqRel);
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
    /// Extra facts for users (backend API, limits), as key/value text.
    fn properties(&self) -> Vec<(String, String)> {
        Vec::new()
    }
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
    /// Compute every node of the graph in order. All tensors must be allocated in buffers
    /// this backend can use.
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
    fn synchronize(&self) -> Result<()> {
        Ok(())
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
