//! Backends for scheduler tests, so assignments and splits can be worked out by hand
//! whatever ops the real WebGPU backend supports:
//! - `FakeGpu`: CPU kernels over memory of its own buffer type, which the CPU backend
//!   refuses to touch (not host memory) and which it checks every tensor of every node is
//!   in, so a missing split copy is an error, not a silently right answer; refuses the ops
//!   its predicate names; optional offload_op (batch >= 32, as ggml-vulkan).
//! - `FakeAccel`: a BLAS-like backend sharing the CPU buffer type, running MUL_MAT only.
//! - `LogCpu`: the CPU backend, logging what it ran, with optional refusals.
//!
//! Each records the nodes it computed (by name) so tests can check where they ran.
#![allow(dead_code)]

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use weft::backend::cpu::{CpuBackend, CpuBuffer, CpuBufferType, CpuDevice};
use weft::backend::{Backend, Buffer, BufferState, BufferType, Device, DeviceType, Event};
use weft::graph::Graph;
use weft::op::OpKind;
use weft::{Error, Result, Tensor};

pub type Refuse = fn(&Tensor) -> bool;

pub fn refuse_none(_: &Tensor) -> bool {
    false
}

/// Nodes a backend computes: everything but views, leaves and empty tensors.
fn computes(node: &Tensor) -> bool {
    !(node.is_empty() || node.kind().computes_nothing())
}

// ---- FakeGpu ----

pub struct FakeGpuBufferType;

impl BufferType for FakeGpuBufferType {
    fn name(&self) -> String {
        "FakeGPU".into()
    }
    fn alloc_buffer(&self, size: usize) -> Result<Arc<dyn Buffer>> {
        Ok(Arc::new(FakeGpuBuffer { inner: CpuBuffer::new(size)?, buft: fake_buft() }))
    }
    fn alignment(&self) -> usize {
        64
    }
    fn is_host(&self) -> bool {
        false
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn fake_buft() -> Arc<FakeGpuBufferType> {
    static B: std::sync::OnceLock<Arc<FakeGpuBufferType>> = std::sync::OnceLock::new();
    B.get_or_init(|| Arc::new(FakeGpuBufferType)).clone()
}

pub struct FakeGpuBuffer {
    inner: CpuBuffer,
    buft: Arc<FakeGpuBufferType>,
}

impl Buffer for FakeGpuBuffer {
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        self.buft.clone()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    /// Its kernels are the CPU's, so they need the address; `is_host` stays false.
    fn host_ptr(&self) -> Option<*mut u8> {
        self.inner.host_ptr()
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.inner.write(offset, data)
    }
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.inner.read(offset, out)
    }
    fn fill(&self, offset: usize, value: u8, size: usize) -> Result<()> {
        self.inner.fill(offset, value, size)
    }
    fn state(&self) -> &BufferState {
        self.inner.state()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn release(&self) -> Result<()> {
        self.inner.release()
    }
    fn is_released(&self) -> bool {
        self.inner.is_released()
    }
}

/// Counts what the scheduler does with events.
#[derive(Default)]
pub struct EventLog {
    pub records: AtomicUsize,
    pub waits: AtomicUsize,
    pub syncs: AtomicUsize,
}

pub struct FakeEvent(Arc<EventLog>);

impl Event for FakeEvent {
    fn synchronize(&self) -> Result<()> {
        self.0.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct FakeGpuDevice {
    refuse: Refuse,
    offload: bool,
    pub events: Arc<EventLog>,
}

impl Device for FakeGpuDevice {
    fn name(&self) -> String {
        "FakeGPU".into()
    }
    fn description(&self) -> String {
        "CPU kernels behind a buffer type the CPU cannot use".into()
    }
    fn memory(&self) -> (usize, usize) {
        (0, 0)
    }
    fn device_type(&self) -> DeviceType {
        DeviceType::Gpu
    }
    fn init_backend(&self, _params: &str) -> Result<Arc<dyn Backend>> {
        Err(Error::invalid("use FakeGpu::new"))
    }
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        fake_buft()
    }
    fn supports_op(&self, op: &Tensor) -> bool {
        CpuDevice::get().supports_op(op) && !(self.refuse)(op)
    }
    fn supports_buft(&self, buft: &dyn BufferType) -> bool {
        buft.as_any().is::<FakeGpuBufferType>()
    }
    fn offload_op(&self, op: &Tensor) -> bool {
        self.offload && op.ne()[1] >= 32 && op.kind() != OpKind::GetRows
    }
    fn event_new(&self) -> Result<Option<Arc<dyn Event>>> {
        Ok(Some(Arc::new(FakeEvent(self.events.clone()))))
    }
}

pub struct FakeGpu {
    dev: Arc<FakeGpuDevice>,
    cpu: CpuBackend,
    pub log: Mutex<Vec<String>>,
}

impl FakeGpu {
    pub fn new(refuse: Refuse, offload: bool) -> Arc<FakeGpu> {
        let dev = Arc::new(FakeGpuDevice { refuse, offload, events: Arc::default() });
        Arc::new(FakeGpu { dev, cpu: CpuBackend::new(1).unwrap(), log: Mutex::default() })
    }
    pub fn events(&self) -> &EventLog {
        &self.dev.events
    }
}

fn in_fake_memory(t: &Tensor) -> bool {
    t.storage().is_some_and(|s| s.buffer.as_any().is::<FakeGpuBuffer>())
}

impl Backend for FakeGpu {
    fn name(&self) -> String {
        "FakeGPU".into()
    }
    fn device(&self) -> Arc<dyn Device> {
        self.dev.clone()
    }
    fn graph_compute(&self, graph: &Graph) -> Result<()> {
        for node in graph.nodes().iter().filter(|n| computes(n)) {
            if !self.dev.supports_op(node) {
                return Err(Error::unsupported(format!("FakeGPU does not support {}", node.op().name())));
            }
            for t in std::iter::once(node).chain(node.srcs().iter().flatten()) {
                if !in_fake_memory(t) {
                    return Err(Error::invalid(format!(
                        "FakeGPU: '{}' of '{}' is not in FakeGPU memory",
                        t.label(),
                        node.label()
                    )));
                }
            }
            self.cpu.compute_node(node)?;
            self.log.lock().unwrap().push(node.name());
        }
        Ok(())
    }
    fn event_record(&self, event: &dyn Event) -> Result<()> {
        assert!(event.as_any().is::<FakeEvent>());
        self.dev.events.records.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn event_wait(&self, _event: &dyn Event) -> Result<()> {
        self.dev.events.waits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

// ---- FakeAccel ----

pub struct FakeAccelDevice;

impl Device for FakeAccelDevice {
    fn name(&self) -> String {
        "Accel".into()
    }
    fn description(&self) -> String {
        "MUL_MAT only, in host memory (as ggml's BLAS)".into()
    }
    fn memory(&self) -> (usize, usize) {
        (0, 0)
    }
    fn device_type(&self) -> DeviceType {
        DeviceType::Accel
    }
    fn init_backend(&self, _params: &str) -> Result<Arc<dyn Backend>> {
        Err(Error::invalid("use FakeAccel::new"))
    }
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        CpuBufferType::get()
    }
    fn supports_op(&self, op: &Tensor) -> bool {
        let k = op.kind();
        k.computes_nothing() || (k == OpKind::MulMat && CpuDevice::get().supports_op(op))
    }
    fn supports_buft(&self, buft: &dyn BufferType) -> bool {
        buft.is_host()
    }
}

pub struct FakeAccel {
    cpu: CpuBackend,
    pub log: Mutex<Vec<String>>,
}

impl FakeAccel {
    pub fn new() -> Arc<FakeAccel> {
        Arc::new(FakeAccel { cpu: CpuBackend::new(1).unwrap(), log: Mutex::default() })
    }
}

impl Backend for FakeAccel {
    fn name(&self) -> String {
        "Accel".into()
    }
    fn device(&self) -> Arc<dyn Device> {
        Arc::new(FakeAccelDevice)
    }
    fn graph_compute(&self, graph: &Graph) -> Result<()> {
        for node in graph.nodes().iter().filter(|n| computes(n)) {
            if !FakeAccelDevice.supports_op(node) {
                return Err(Error::unsupported(format!("Accel does not support {}", node.op().name())));
            }
            self.cpu.compute_node(node)?;
            self.log.lock().unwrap().push(node.name());
        }
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

// ---- LogCpu ----

pub struct LogCpuDevice(Refuse);

impl Device for LogCpuDevice {
    fn name(&self) -> String {
        "CPU".into()
    }
    fn description(&self) -> String {
        "the CPU backend, logged".into()
    }
    fn memory(&self) -> (usize, usize) {
        (0, 0)
    }
    fn device_type(&self) -> DeviceType {
        DeviceType::Cpu
    }
    fn init_backend(&self, _params: &str) -> Result<Arc<dyn Backend>> {
        Err(Error::invalid("use LogCpu::new"))
    }
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        CpuBufferType::get()
    }
    fn supports_op(&self, op: &Tensor) -> bool {
        CpuDevice::get().supports_op(op) && !(self.0)(op)
    }
    fn supports_buft(&self, buft: &dyn BufferType) -> bool {
        buft.is_host()
    }
    fn event_new(&self) -> Result<Option<Arc<dyn Event>>> {
        CpuDevice::get().event_new()
    }
}

pub struct LogCpu {
    refuse: Refuse,
    cpu: CpuBackend,
    pub log: Mutex<Vec<String>>,
}

impl LogCpu {
    pub fn new(refuse: Refuse) -> Arc<LogCpu> {
        Arc::new(LogCpu { refuse, cpu: CpuBackend::new(1).unwrap(), log: Mutex::default() })
    }
}

impl Backend for LogCpu {
    fn name(&self) -> String {
        "CPU".into()
    }
    fn device(&self) -> Arc<dyn Device> {
        Arc::new(LogCpuDevice(self.refuse))
    }
    /// The real CPU backend (which refuses memory that is not host memory), one node at a
    /// time so the log has each.
    fn graph_compute(&self, graph: &Graph) -> Result<()> {
        for i in 0..graph.n_nodes() {
            let node = &graph.nodes()[i];
            if computes(node) && (self.refuse)(node) {
                return Err(Error::unsupported(format!("CPU refuses {}", node.op().name())));
            }
            self.cpu.graph_compute(&graph.view(i, i + 1)?)?;
            if computes(node) {
                self.log.lock().unwrap().push(node.name());
            }
        }
        Ok(())
    }
    fn event_record(&self, event: &dyn Event) -> Result<()> {
        self.cpu.event_record(event)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub fn take_log(log: &Mutex<Vec<String>>) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}
