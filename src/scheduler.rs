//! JS class Scheduler: ggml_backend_sched, one graph run across several backends (the
//! engine's backend::sched does the work). While a compute runs the scheduler refuses
//! calls that change it (WEFT_BUSY); queries answer from the state the compute began with.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use napi::bindgen_prelude::{Array, AsyncTask, ClassInstance, Object, Unknown};
use napi::{Env, JsValue, ValueType};
use weft::backend::sched::{self as engine, NodeInfo, SchedulerParams, SplitInfo, TensorInfo};
use weft::backend::BusyGuard;

use crate::args::uint;
use crate::backend::Backend;
use crate::error::{disposed, invalid, js_err, IntoJs, Result};
use crate::graph::Graph;
use crate::sched_callback::{engine_callback, JsEvalFn, Shared};
use crate::sched_task::{Running, SchedJob, Snapshot};
use crate::task::{class_arg, promise, Promised};
use crate::tensor::Tensor;
use crate::watch::ComputeWatch;

/// A tensor in the debug view of a split.
#[napi(object)]
pub struct SchedTensor {
    pub name: String,
    pub bytes: i64,
    /// The backend the passes gave it ('' if none).
    pub backend: String,
    /// The pass that decided, as ggml labels causes: '1.dst' (its buffer), '1.inp' (graph
    /// input), '1.wgt0' (the weights of source 0), '1.off' (offloaded), '2.sup'
    /// (expanded from a neighbour), '3.best', '3.upg', '4.cur', '4.vsrc', '4.cpy' (a
    /// split input's copy), 'usr' (setTensorBackend).
    pub cause: String,
}

#[napi(object)]
pub struct SchedNode {
    /// Index in the graph.
    pub index: u32,
    pub op: String,
    pub tensor: SchedTensor,
    /// Its sources as the split reads them: copies are named 'BACKEND#name#slot'.
    pub srcs: Vec<SchedTensor>,
}

/// One split: consecutive nodes run on one backend, after its inputs are copied in.
#[napi(object)]
pub struct SchedSplit {
    pub backend: String,
    /// Graph node range [iStart, iEnd).
    pub i_start: u32,
    pub i_end: u32,
    /// Tensors copied into this split's backend first (with their own backend).
    pub inputs: Vec<SchedTensor>,
    /// The nodes that compute something (views left out, as in ggml's print).
    pub nodes: Vec<SchedNode>,
}

fn tensor_info(t: &TensorInfo) -> SchedTensor {
    SchedTensor { name: t.name.clone(), bytes: t.bytes as i64, backend: t.backend.clone(), cause: t.cause.clone() }
}

fn node_info(n: &NodeInfo) -> SchedNode {
    SchedNode {
        index: n.index as u32,
        op: n.op.clone(),
        tensor: tensor_info(&n.tensor),
        srcs: n.srcs.iter().map(tensor_info).collect(),
    }
}

fn split_info(s: &SplitInfo) -> SchedSplit {
    SchedSplit {
        backend: s.backend.clone(),
        i_start: s.i_start as u32,
        i_end: s.i_end as u32,
        inputs: s.inputs.iter().map(tensor_info).collect(),
        nodes: s.nodes.iter().map(node_info).collect(),
    }
}

#[napi]
pub struct Scheduler {
    inner: Arc<Mutex<engine::Scheduler>>,
    /// Set by dispose(). Methods take `&self` (napi keeps `this` borrowed while a compute
    /// Promise is pending, so a `&mut self` method would fail without a WEFT_ code).
    disposed: AtomicBool,
    backends: Vec<Arc<dyn weft::backend::Backend>>,
    n_copies: usize,
    shared: Arc<Shared>,
    running: Arc<Running>,
}

/// An optional field of the options object: None when absent or undefined.
fn field<'a>(options: &Object<'a>, name: &str) -> Result<Option<Unknown<'a>>> {
    let v: Option<Unknown> = options.get(name).js()?;
    Ok(v.filter(|v| !matches!(v.get_type(), Ok(ValueType::Undefined))))
}

fn number(options: &Object, name: &str) -> Result<Option<f64>> {
    let Some(v) = field(options, name)? else { return Ok(None) };
    if v.get_type().js()? != ValueType::Number {
        return Err(invalid(format!("Scheduler: options.{name} must be a number")));
    }
    // SAFETY: the type was just checked.
    let x: f64 = unsafe { v.cast() }.js()?;
    if !(x.is_finite() && x.fract() == 0.0 && x >= 1.0) {
        return Err(invalid(format!("Scheduler: options.{name}={x} must be a positive integer")));
    }
    Ok(Some(x))
}

fn backends_of(options: &Object) -> Result<Vec<Arc<dyn weft::backend::Backend>>> {
    let bad = || invalid("Scheduler: options.backends must be an array of Backend objects (the CPU last)");
    let Some(v) = field(options, "backends")? else { return Err(bad()) };
    // SAFETY: cast to Array only after napi says it is one.
    if v.get_type().js()? != ValueType::Object || !v.is_array().js()? {
        return Err(bad());
    }
    let arr: Array = unsafe { v.cast() }.js()?;
    (0..arr.len())
        .map(|i| {
            let b: ClassInstance<Backend> = arr.get(i).map_err(|_| bad())?.ok_or_else(bad)?;
            Ok(b.get()?.clone())
        })
        .collect()
}

impl Scheduler {
    fn engine(&self) -> Result<&Arc<Mutex<engine::Scheduler>>> {
        if self.disposed.load(Ordering::Acquire) {
            return Err(disposed("Scheduler"));
        }
        Ok(&self.inner)
    }

    /// The engine scheduler for a call that changes it: refused while a compute runs.
    fn idle(&self, what: &str) -> Result<MutexGuard<'_, engine::Scheduler>> {
        let busy = || js_err(weft::Error::busy(format!("{what}: the scheduler is computing; await it first")));
        let e = self.engine()?;
        if self.running.is_set() {
            return Err(busy());
        }
        match e.try_lock() {
            Ok(g) => Ok(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => Err(busy()),
        }
    }

    /// The state queries answer from: the engine's now, or the running compute's start.
    fn view(&self) -> Result<Arc<Snapshot>> {
        self.engine()?;
        if let Some(s) = self.running.snapshot() {
            return Ok(s);
        }
        let s = self.idle("scheduler")?;
        Ok(Arc::new(Snapshot::of(&s)))
    }

    fn index_of(&self, what: &str, b: &Backend) -> Result<usize> {
        let b = b.get()?;
        self.backends.iter().position(|x| std::ptr::addr_eq(Arc::as_ptr(x), Arc::as_ptr(b))).ok_or_else(|| {
            let names: Vec<String> = self.backends.iter().map(|b| b.name()).collect();
            invalid(format!("{what}: backend {} is not one of this scheduler's ({})", b.name(), names.join(", ")))
        })
    }

    /// Split and allocate `graph` if needed, and hold every buffer it touches.
    fn prepare(&self, env: &Env, graph: &Unknown, options: Option<Unknown>) -> Result<SchedJob> {
        let sched = self.engine()?.clone();
        let graph = class_arg::<Graph>(env, graph, "compute: graph")?.snapshot()?;
        let mut s = self.idle("compute")?;
        s.prepare(&graph).js()?;
        let busy = BusyGuard::for_tensors(&s.busy_tensors()).js()?;
        let snapshot = Arc::new(Snapshot::of(&s));
        drop(s);
        // last before claiming the scheduler: it adds a listener to the signal, which
        // settling the Promise removes
        let watch = ComputeWatch::new(env, options)?;
        if !self.running.start() {
            return Err(js_err(weft::Error::busy("compute: the scheduler is computing; await it first")));
        }
        *self.running.snapshot.lock().unwrap_or_else(|e| e.into_inner()) = Some(snapshot);
        self.shared.take_thrown();
        Ok(SchedJob {
            sched,
            graph,
            busy: Some(busy),
            shared: self.shared.clone(),
            running: self.running.clone(),
            watch,
        })
    }
}

#[napi]
impl Scheduler {
    /// ggml_backend_sched_new: `backends` in priority order, the CPU last (it takes graph
    /// inputs and whatever no other backend runs); `graphSize` (default 2048) bounds the
    /// nodes plus leafs of a graph; `parallel` keeps 4 copies of every split input
    /// (pipeline parallelism, as ggml), `nCopies` sets the number (1 to 4).
    #[napi(
        catch_unwind,
        constructor,
        ts_args_type = "options: { backends: Backend[]; graphSize?: number; parallel?: boolean; nCopies?: number }"
    )]
    pub fn new(options: Unknown) -> Result<Scheduler> {
        if options.get_type().js()? != ValueType::Object {
            return Err(invalid("Scheduler: expected an options object { backends: [...] }"));
        }
        // SAFETY: the type was just checked.
        let options: Object = unsafe { options.cast() }.js()?;
        let backends = backends_of(&options)?;
        let graph_size = match number(&options, "graphSize")? {
            None => weft::graph::DEFAULT_GRAPH_SIZE,
            Some(x) if x <= (1u64 << 28) as f64 => x as usize,
            Some(x) => return Err(invalid(format!("Scheduler: options.graphSize={x} must be at most 2^28"))),
        };
        let parallel = match field(&options, "parallel")? {
            None => false,
            Some(v) if v.get_type().js()? == ValueType::Boolean => unsafe { v.cast::<bool>() }.js()?,
            Some(_) => return Err(invalid("Scheduler: options.parallel must be a boolean")),
        };
        let n_copies = match number(&options, "nCopies")? {
            Some(n) => n.min(1e6) as usize,
            None if parallel => engine::MAX_COPIES,
            None => 1,
        };
        let s =
            engine::Scheduler::new(SchedulerParams { backends: backends.clone(), bufts: None, graph_size, n_copies })
                .js()?;
        Ok(Scheduler {
            inner: Arc::new(Mutex::new(s)),
            disposed: AtomicBool::new(false),
            backends,
            n_copies,
            shared: Arc::default(),
            running: Arc::default(),
        })
    }

    #[napi(catch_unwind, getter)]
    pub fn n_backends(&self) -> Result<u32> {
        self.engine()?;
        Ok(self.backends.len() as u32)
    }

    /// ggml_backend_sched_get_backend: the backend of priority `i`.
    #[napi(catch_unwind)]
    pub fn get_backend(&self, i: f64) -> Result<Backend> {
        self.engine()?;
        let i = uint("getBackend: i", i)?;
        let b = self
            .backends
            .get(i)
            .ok_or_else(|| invalid(format!("getBackend: index {i} is outside 0..{}", self.backends.len())))?;
        Ok(Backend::wrap(b.clone()))
    }

    /// ggml_backend_sched_get_n_copies.
    #[napi(catch_unwind, getter)]
    pub fn n_copies(&self) -> Result<u32> {
        self.engine()?;
        Ok(self.n_copies as u32)
    }

    /// ggml_backend_sched_get_n_splits: splits of the last graph split (reserve,
    /// allocGraph or compute).
    #[napi(catch_unwind, getter)]
    pub fn n_splits(&self) -> Result<u32> {
        Ok(self.view()?.n_splits as u32)
    }

    /// ggml_backend_sched_reserve: size the compute buffers for `graph` (a worst case)
    /// without placing its tensors; graphs of the same shape then allocate nothing new.
    #[napi(catch_unwind)]
    pub fn reserve(&self, graph: &Graph) -> Result<()> {
        let g = graph.snapshot()?;
        self.idle("reserve")?.reserve(&g).js()
    }

    /// ggml_backend_sched_alloc_graph: assign and split `graph` and place its tensors; set
    /// the graph's inputs after this, then compute it.
    #[napi(catch_unwind)]
    pub fn alloc_graph(&self, graph: &Graph) -> Result<()> {
        let g = graph.snapshot()?;
        self.idle("allocGraph")?.alloc_graph(&g).js()
    }

    /// ggml_backend_sched_graph_compute, off the event loop: allocates `graph` first unless it
    /// is the graph allocated last. Every buffer it uses refuses reads, writes and dispose
    /// until the Promise settles (except reads inside the eval callback, of the node shown
    /// and its sources). `options` as Backend.compute's: `signal` stops the compute between
    /// nodes, `onProgress(nodesDone, nodesTotal)` counts the nodes of the split graphs. Any
    /// failure rejects the Promise.
    #[napi(
        catch_unwind,
        ts_args_type = "graph: Graph, options?: ComputeOptions | undefined | null",
        ts_return_type = "Promise<void>"
    )]
    pub fn compute(&self, env: Env, graph: Unknown, options: Option<Unknown>) -> AsyncTask<Promised<SchedJob>> {
        promise(|| self.prepare(&env, &graph, options))
    }

    /// ggml_backend_sched_set_tensor_backend: run (or place) `t` on `backend` whatever the
    /// passes would choose; holds until reset().
    #[napi(catch_unwind)]
    pub fn set_tensor_backend(&self, t: &Tensor, backend: &Backend) -> Result<()> {
        self.index_of("setTensorBackend", backend)?;
        self.idle("setTensorBackend")?.set_tensor_backend(t.get()?, backend.get()?).js()
    }

    /// ggml_backend_sched_get_tensor_backend: where `t` runs (or lives) in the last split,
    /// or null.
    #[napi(catch_unwind)]
    pub fn get_tensor_backend(&self, t: &Tensor) -> Result<Option<Backend>> {
        let b = self.view()?.assignment.get(t.get()?);
        Ok(b.map(|b| Backend::wrap(self.backends[b].clone())))
    }

    /// ggml_backend_sched_set_eval_callback: `callback(t, ask)` is called for every node in
    /// order with ask = true ("do you want to see it?"), then, for the nodes it wanted, with
    /// ask = false once the node is computed: `t` is readable inside that call. Returning
    /// `false` means no (ask) or stop the compute (after); anything else, yes / go on. A
    /// throw rejects the compute's Promise with what was thrown. null removes it.
    #[napi(catch_unwind, ts_args_type = "callback: ((t: Tensor, ask: boolean) => boolean | void) | null | undefined")]
    pub fn set_eval_callback(&self, callback: Unknown) -> Result<()> {
        let cb = match callback.get_type().js()? {
            ValueType::Null | ValueType::Undefined => None,
            ValueType::Function => {
                // SAFETY: the type was just checked.
                let f: JsEvalFn = unsafe { callback.cast() }.js()?;
                Some(engine_callback(&f, self.shared.clone())?)
            }
            _ => return Err(invalid("setEvalCallback: callback must be a function or null")),
        };
        self.idle("setEvalCallback")?.set_eval_callback(cb);
        Ok(())
    }

    /// ggml_backend_sched_get_buffer_size: bytes of `backend`'s compute buffer (0 where it
    /// shares the buffer type of a backend before it).
    #[napi(catch_unwind)]
    pub fn buffer_size(&self, backend: &Backend) -> Result<i64> {
        let i = self.index_of("bufferSize", backend)?;
        Ok(self.view()?.sizes[i] as i64)
    }

    /// ggml_backend_sched_reset: forget assignments (setTensorBackend's too) and the
    /// allocation.
    #[napi(catch_unwind)]
    pub fn reset(&self) -> Result<()> {
        self.idle("reset")?.reset();
        Ok(())
    }

    /// ggml_backend_sched_synchronize: wait for every backend.
    #[napi(catch_unwind)]
    pub fn synchronize(&self) -> Result<()> {
        self.idle("synchronize")?.synchronize().js()
    }

    /// The last split: each split's backend, inputs and nodes with their sources (the
    /// debug view of the assignment).
    #[napi(catch_unwind)]
    pub fn splits(&self) -> Result<Vec<SchedSplit>> {
        Ok(self.view()?.splits.iter().map(split_info).collect())
    }

    /// The last split as ggml prints it with GGML_SCHED_DEBUG=1 (`verbose`: =2, a line per
    /// node with its sources' sizes, backends and causes). Setting GGML_SCHED_DEBUG prints
    /// it to stderr at every split.
    #[napi(catch_unwind)]
    pub fn describe(&self, verbose: Option<bool>) -> Result<String> {
        Ok(engine::debug::describe(&self.view()?.splits, verbose.unwrap_or(false)))
    }

    /// ggml_backend_sched_free: the compute buffers are freed now (tensors placed in them
    /// become unusable). Refused while a compute uses them.
    #[napi(catch_unwind)]
    pub fn dispose(&self) -> Result<()> {
        if self.disposed.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut s = self.idle("dispose")?;
        let buffers = s.buffers();
        for b in &buffers {
            b.state().check_idle("dispose", &b.name()).js()?;
        }
        for b in &buffers {
            b.release().js()?;
        }
        s.set_eval_callback(None);
        s.reset();
        self.disposed.store(true, Ordering::Release);
        Ok(())
    }

    #[napi(catch_unwind, well_known_symbol = "dispose")]
    pub fn symbol_dispose(&self) -> Result<()> {
        self.dispose()
    }
}
