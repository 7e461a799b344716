//! The CPU backend: host buffers, one device, and a backend that computes graph nodes in
//! order, each node's work split across a rayon pool (rows first, like ggml).

mod affinity;
mod buffer;
mod dispatch;
pub(crate) mod float_simd;
pub mod isa;
mod kernel;
mod ops;
pub mod simd;
mod tdata;

use std::any::Any;
use std::sync::{Arc, Mutex, OnceLock};

pub use buffer::{CpuBuffer, CpuBufferType, CpuMappedBufferType, CPU_TENSOR_ALIGNMENT};
pub use kernel::Cx;
pub use tdata::TData;

use super::{Backend, BufferType, Device, DeviceType, Event, Registry};
use crate::graph::Graph;
use crate::tensor::Tensor;
use crate::{Error, Result};

pub struct CpuDevice;

impl CpuDevice {
    pub fn get() -> Arc<CpuDevice> {
        static DEV: OnceLock<Arc<CpuDevice>> = OnceLock::new();
        DEV.get_or_init(|| Arc::new(CpuDevice)).clone()
    }
}

fn cpu_description() -> String {
    // /proc/cpuinfo's model name where there is one; the architecture otherwise.
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn host_memory() -> (usize, usize) {
    // MemAvailable / MemTotal from /proc/meminfo; zeros where the platform has none.
    let read = |key: &str| -> Option<usize> {
        let s = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = s.lines().find(|l| l.starts_with(key))?;
        let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    (read("MemAvailable:").unwrap_or(0), read("MemTotal:").unwrap_or(0))
}

impl Device for CpuDevice {
    fn name(&self) -> String {
        "CPU".into()
    }
    fn description(&self) -> String {
        cpu_description()
    }
    fn memory(&self) -> (usize, usize) {
        host_memory()
    }
    fn device_type(&self) -> DeviceType {
        DeviceType::Cpu
    }
    fn init_backend(&self, params: &str) -> Result<Arc<dyn Backend>> {
        let backend = CpuBackend::new(default_threads())?;
        // "n_threads=4" (ggml-style key=value pairs separated by ',' or ';').
        for kv in params.split([',', ';']).map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| Error::invalid(format!("CPU: bad parameter '{kv}', expected key=value")))?;
            backend.set_option(k.trim(), v.trim())?;
        }
        Ok(Arc::new(backend))
    }
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        CpuBufferType::get()
    }
    fn supports_op(&self, op: &Tensor) -> bool {
        dispatch::supports(op)
    }
    fn supports_buft(&self, buft: &dyn BufferType) -> bool {
        buft.is_host()
    }
    fn event_new(&self) -> Result<Option<Arc<dyn Event>>> {
        Ok(Some(Arc::new(CpuEvent)))
    }
    fn properties(&self) -> Vec<(String, String)> {
        // "isa": the kernels' instruction-set level (`Isa::best`, WEFT_CPU_ISA's names), e.g.
        // "avx512-vnni".
        let isa = isa::Isa::best().name().to_string();
        vec![("threads".into(), default_threads().to_string()), ("isa".into(), isa)]
    }
}

/// The CPU's event: its work runs to completion inside each call, so any recorded point
/// has always been reached.
pub struct CpuEvent;

impl Event for CpuEvent {
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The pool and what it was built from.
struct Pool {
    n_threads: usize,
    strict: affinity::Strict,
    threads: Arc<rayon::ThreadPool>,
}

pub struct CpuBackend {
    pool: Mutex<Pool>,
}

impl CpuBackend {
    pub fn new(n_threads: usize) -> Result<CpuBackend> {
        let strict = affinity::Strict::Auto;
        Ok(CpuBackend { pool: Mutex::new(Pool { n_threads, strict, threads: make_pool(n_threads, strict)? }) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn n_threads(&self) -> usize {
        self.lock().n_threads
    }

    /// ggml_backend_cpu_set_n_threads.
    pub fn set_n_threads(&self, n: usize) -> Result<()> {
        if n == 0 || n > 512 {
            return Err(Error::invalid(format!("CPU: nThreads={n} must be in 1..=512")));
        }
        // (The guard must be gone before rebuild locks again.)
        let strict = self.lock().strict;
        self.rebuild(n, strict)
    }

    /// ggml_threadpool_params.strict_cpu: `auto` (the default), `1` / `true`, `0` / `false`.
    pub fn set_strict_cpu(&self, value: &str) -> Result<()> {
        let strict = affinity::Strict::parse(value)
            .ok_or_else(|| Error::invalid(format!("CPU: strict_cpu='{value}' must be auto, 1, true, 0 or false")))?;
        self.rebuild(self.n_threads(), strict)
    }

    /// A new pool; computes running on the old one finish there (they hold their own Arc).
    fn rebuild(&self, n_threads: usize, strict: affinity::Strict) -> Result<()> {
        let threads = make_pool(n_threads, strict)?;
        *self.lock() = Pool { n_threads, strict, threads };
        Ok(())
    }

    fn pool(&self) -> Arc<rayon::ThreadPool> {
        self.lock().threads.clone()
    }

    /// Compute one node wherever its memory is, as long as the CPU can address it (test
    /// backends run the CPU's kernels on buffers of their own, which graph_compute refuses).
    pub fn compute_node(&self, node: &Tensor) -> Result<()> {
        let pool = self.pool();
        compute_checked(node, &Cx::new(&pool), false)
    }
}

fn make_pool(n: usize, strict: affinity::Strict) -> Result<Arc<rayon::ThreadPool>> {
    let cpus = strict.plan(n);
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("weft-cpu-{i}"))
        .start_handler(move |i| {
            if let Some(cpu) = cpus.as_ref().and_then(|c| c.get(i)) {
                affinity::pin_current(*cpu);
            }
        })
        .build()
        .map(Arc::new)
        .map_err(|e| Error::backend(format!("CPU: cannot start {n} threads: {e}")))
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "CPU".into()
    }
    fn device(&self) -> Arc<dyn Device> {
        CpuDevice::get()
    }
    fn graph_compute(&self, graph: &Graph) -> Result<()> {
        self.graph_compute_observed(graph, &super::Unobserved)
    }
    fn graph_compute_observed(&self, graph: &Graph, observer: &dyn super::ComputeObserver) -> Result<()> {
        let pool = self.pool();
        let cx = Cx::new(&pool);
        let total = graph.n_nodes();
        // The whole graph runs on a pool thread, so each node's parallel split is a push to
        // that thread's own queue, not an injection from outside that has to wake the pool
        // (about 10 us a node: 6% of a broadcast ADD of 4096 x 512).
        pool.install(|| {
            for (i, node) in graph.nodes().iter().enumerate() {
                // ggml-cpu asks its abort callback before every node too
                super::between_nodes(observer, i, total)?;
                compute_checked(node, &cx, true)?;
            }
            observer.progress(total, total);
            Ok(())
        })
    }
    fn event_record(&self, event: &dyn Event) -> Result<()> {
        match event.as_any().downcast_ref::<CpuEvent>() {
            Some(_) => Ok(()),
            None => Err(Error::invalid("CPU: cannot record into an event of another device")),
        }
    }
    fn event_wait(&self, event: &dyn Event) -> Result<()> {
        // The CPU runs nothing ahead: waiting is blocking until the event is reached.
        event.synchronize()
    }
    fn set_option(&self, key: &str, value: &str) -> Result<()> {
        match key {
            "n_threads" | "nThreads" | "threads" => {
                let n: usize =
                    value.parse().map_err(|_| Error::invalid(format!("CPU: n_threads='{value}' is not a number")))?;
                self.set_n_threads(n)
            }
            "strict_cpu" | "strictCpu" => self.set_strict_cpu(value),
            _ => Err(Error::invalid(format!("CPU: unknown option '{key}' (known: n_threads, strict_cpu)"))),
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One node of a graph: nothing for empty tensors, views and leaves; else, where `host`
/// asks, every tensor of it checked to be in host memory, and its kernel run, or the
/// error that the CPU cannot compute it.
fn compute_checked(node: &Tensor, cx: &Cx, host: bool) -> Result<()> {
    if node.is_empty() || node.kind().computes_nothing() {
        return Ok(());
    }
    if host {
        check_host(node)?;
    }
    let kernel = dispatch::kernel(node).ok_or_else(|| super::unsupported("CPU", node))?;
    (kernel.run)(node, cx)
}

/// Every tensor a CPU kernel touches must live in host memory.
fn check_host(node: &Tensor) -> Result<()> {
    for t in std::iter::once(node).chain(node.srcs().iter().flatten()) {
        // (The buffer's name only where it is not host memory: this runs for every node.)
        match t.with_storage(|buffer, _| (!buffer.is_host()).then(|| buffer.name())) {
            Some(None) => {}
            Some(Some(name)) => {
                return Err(Error::invalid(format!(
                    "CPU: tensor '{}' of node '{}' lives in buffer '{}', which is not host memory",
                    t.label(),
                    node.label(),
                    name
                )))
            }
            None => {
                return Err(Error::invalid(format!(
                    "CPU: tensor '{}' of node '{}' is not allocated",
                    t.label(),
                    node.label()
                )))
            }
        }
    }
    Ok(())
}

/// The CPU backend's registry: one device.
pub struct CpuRegistry;

impl Registry for CpuRegistry {
    fn name(&self) -> String {
        "CPU".into()
    }
    fn devices(&self) -> Vec<Arc<dyn Device>> {
        vec![CpuDevice::get()]
    }
}
