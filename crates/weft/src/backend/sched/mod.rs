//! The multi-backend scheduler (ggml_backend_sched): runs one graph across several backends.
//! Every node gets a backend (assign.rs: passes 1-4), the graph is cut where the backend
//! changes and each split's inputs get copies in its backend (split.rs: pass 5), the
//! graph allocator places all intermediate tensors and copies in one compute buffer per
//! buffer type (graph_copy.rs), and the splits run in order with their inputs copied in
//! first (compute.rs), optionally calling an eval callback after each node. debug.rs is
//! the GGML_SCHED_DEBUG view of an assignment.
//!
//! Use, as in ggml: `reserve` a worst-case graph once (optional), then per graph
//! `alloc_graph`, set the inputs, `graph_compute`. `graph_compute` on a graph that is not
//! the one allocated last allocates it first. `set_tensor_backend` pins a tensor until
//! `reset`.

mod assign;
mod compute;
pub mod debug;
mod graph_copy;
mod split;

use std::collections::HashMap;
use std::sync::{Arc, Weak};

pub use assign::{Assignment, Cause};
pub use debug::{NodeInfo, SplitInfo, TensorInfo};

use self::assign::Passes;
use self::graph_copy::AllocGraph;
use crate::alloc::GraphAllocator;
use crate::backend::{Backend, Buffer, BufferType, ComputeObserver, DeviceType, Event, Unobserved};
use crate::graph::{hash_size, Graph};
use crate::tensor::Tensor;
use crate::{Error, Result};

/// ggml's GGML_SCHED_MAX_BACKENDS.
pub const MAX_BACKENDS: usize = 16;
/// ggml's GGML_SCHED_MAX_SPLIT_INPUTS: a split with this many inputs takes no more.
pub const MAX_SPLIT_INPUTS: usize = crate::tensor::MAX_SRC;
/// ggml's GGML_SCHED_MAX_COPIES: the copies `parallel` asks for.
pub const MAX_COPIES: usize = 4;

/// ggml_backend_sched_eval_callback: called with `ask = true` for each node to learn
/// whether the caller wants to see it, then (for the wanted ones) with `ask = false` once
/// the node is computed and readable; returning false then stops the compute. An Err
/// stops it too and becomes the compute's error.
pub type EvalCallback = Box<dyn FnMut(&Tensor, bool) -> Result<bool> + Send>;

/// How to build a scheduler (ggml_backend_sched_new's arguments).
pub struct SchedulerParams {
    /// Backends in priority order; the last must be a CPU.
    pub backends: Vec<Arc<dyn Backend>>,
    /// Where each backend's compute memory comes from; its default buffer type if None.
    pub bufts: Option<Vec<Arc<dyn BufferType>>>,
    /// The most nodes plus leafs a graph may have (ggml's graph_size).
    pub graph_size: usize,
    /// Copies of every split input, for pipeline parallelism (1 to MAX_COPIES; ggml's
    /// `parallel` is MAX_COPIES).
    pub n_copies: usize,
}

/// One split as it runs.
struct PlannedSplit {
    backend: usize,
    inputs: Vec<PlannedInput>,
    /// The twins of the split's nodes, reading copies where the split has inputs.
    graph: Graph,
    /// The user's nodes of the split (what the eval callback is shown).
    originals: Vec<Tensor>,
}

struct PlannedInput {
    /// The user's tensor (its flags decide how it is copied).
    original: Tensor,
    /// Its twin: where the bytes are copied from.
    from: Tensor,
    /// Its backend.
    backend: usize,
    /// One slot per copy.
    copies: Vec<Tensor>,
}

/// The last split graph.
struct Plan {
    assignment: Assignment,
    splits: Vec<PlannedSplit>,
    alloc: AllocGraph,
    /// (user's tensor, twin), for binding the user's tensors to their twins' memory.
    shadows: Vec<(Tensor, Tensor)>,
    /// The copy slot its rewritten nodes read.
    copy: usize,
    /// Ids of the graph's nodes and leafs: the graph this plan was made for.
    key: (Vec<u64>, Vec<u64>),
}

pub struct Scheduler {
    backends: Vec<Arc<dyn Backend>>,
    bufts: Vec<Arc<dyn BufferType>>,
    graph_size: usize,
    galloc: GraphAllocator,
    /// Every compute buffer the allocator has made: tensors in one of them were placed by
    /// this scheduler, and are re-placed when a graph using them is allocated again.
    own_buffers: Vec<Weak<dyn Buffer>>,
    n_copies: usize,
    cur_copy: usize,
    /// events[backend][copy] (None where a device has no events, or n_copies is 1).
    events: Vec<Vec<Option<Arc<dyn Event>>>>,
    /// set_tensor_backend, by tensor id.
    pins: HashMap<u64, usize>,
    plan: Option<Plan>,
    /// The plan is allocated and ready to compute (ggml's is_alloc).
    is_alloc: bool,
    /// Backend ids of the allocator graph's nodes and leafs at the last split.
    prev_ids: (Vec<usize>, Vec<usize>),
    n_splits: usize,
    split_info: Vec<SplitInfo>,
    callback: Option<EvalCallback>,
    /// GGML_SCHED_DEBUG: 1 prints the splits at every split, 2 every node too.
    debug: u32,
}

fn same_buffer(a: &Arc<dyn Buffer>, b: &Arc<dyn Buffer>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

impl Scheduler {
    /// ggml_backend_sched_new.
    pub fn new(params: SchedulerParams) -> Result<Scheduler> {
        let SchedulerParams { backends, bufts, graph_size, n_copies } = params;
        let n = backends.len();
        if n == 0 || n > MAX_BACKENDS {
            return Err(Error::invalid(format!("scheduler: {n} backends given; 1 to {MAX_BACKENDS} are allowed")));
        }
        if backends[n - 1].device().device_type() != DeviceType::Cpu {
            return Err(Error::invalid(format!(
                "scheduler: the last backend must be the CPU (it takes graph inputs and what no other backend runs); got {}",
                backends[n - 1].name()
            )));
        }
        for i in 0..n {
            if backends[..i].iter().any(|b| std::ptr::addr_eq(Arc::as_ptr(b), Arc::as_ptr(&backends[i]))) {
                return Err(Error::invalid(format!("scheduler: backend {} is listed twice", backends[i].name())));
            }
        }
        if graph_size == 0 || graph_size > (1 << 28) {
            return Err(Error::invalid(format!("scheduler: graphSize={graph_size} must be in 1..=2^28")));
        }
        if !(1..=MAX_COPIES).contains(&n_copies) {
            return Err(Error::invalid(format!("scheduler: nCopies={n_copies} must be in 1..={MAX_COPIES}")));
        }
        let bufts = match bufts {
            Some(b) if b.len() != n => {
                return Err(Error::invalid(format!("scheduler: {} buffer types given for {n} backends", b.len())))
            }
            Some(b) => b,
            None => backends.iter().map(|b| b.default_buffer_type()).collect(),
        };
        for (b, bt) in backends.iter().zip(&bufts) {
            if !b.supports_buft(bt.as_ref()) {
                return Err(Error::invalid(format!(
                    "scheduler: backend {} cannot use buffer type {}",
                    b.name(),
                    bt.name()
                )));
            }
        }
        let mut events = Vec::with_capacity(n);
        for b in &backends {
            let per_copy = if n_copies > 1 {
                (0..n_copies).map(|_| b.device().event_new()).collect::<Result<Vec<_>>>()?
            } else {
                Vec::new()
            };
            events.push(per_copy);
        }
        let debug = std::env::var("GGML_SCHED_DEBUG").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0);
        Ok(Scheduler {
            galloc: GraphAllocator::new_n(bufts.clone()),
            backends,
            bufts,
            graph_size,
            own_buffers: Vec::new(),
            n_copies,
            cur_copy: 0,
            events,
            pins: HashMap::new(),
            plan: None,
            is_alloc: false,
            prev_ids: (Vec::new(), Vec::new()),
            n_splits: 0,
            split_info: Vec::new(),
            callback: None,
            debug,
        })
    }

    pub fn backends(&self) -> &[Arc<dyn Backend>] {
        &self.backends
    }

    /// The priority index of `backend` (ggml_backend_sched_backend_id).
    pub fn backend_index(&self, backend: &Arc<dyn Backend>) -> Option<usize> {
        self.backends.iter().position(|b| std::ptr::addr_eq(Arc::as_ptr(b), Arc::as_ptr(backend)))
    }

    fn index_or_err(&self, what: &str, backend: &Arc<dyn Backend>) -> Result<usize> {
        self.backend_index(backend).ok_or_else(|| {
            let names: Vec<String> = self.backends.iter().map(|b| b.name()).collect();
            Error::invalid(format!(
                "{what}: backend {} is not one of this scheduler's ({})",
                backend.name(),
                names.join(", ")
            ))
        })
    }

    pub fn n_backends(&self) -> usize {
        self.backends.len()
    }
    pub fn n_copies(&self) -> usize {
        self.n_copies
    }
    /// Splits of the last graph split (by reserve, alloc_graph or compute).
    pub fn n_splits(&self) -> usize {
        self.n_splits
    }
    /// The last split as data: each split's backend, inputs and nodes.
    pub fn splits(&self) -> &[SplitInfo] {
        &self.split_info
    }
    /// ggml_backend_sched_get_buffer_size: bytes of the compute buffer of `backend` (0 where
    /// it shares an earlier backend's buffer type).
    pub fn buffer_size(&self, backend: &Arc<dyn Backend>) -> Result<usize> {
        Ok(self.galloc.buffer_size(self.index_or_err("bufferSize", backend)?))
    }
    /// The scheduler's compute buffers.
    pub fn buffers(&self) -> Vec<Arc<dyn Buffer>> {
        self.galloc.buffers()
    }

    /// ggml_backend_sched_set_tensor_backend: run (or place) `t` on `backend`, whatever the
    /// passes would choose. Holds until `reset`; the next compute splits the graph again.
    pub fn set_tensor_backend(&mut self, t: &Tensor, backend: &Arc<dyn Backend>) -> Result<()> {
        let b = self.index_or_err("setTensorBackend", backend)?;
        self.pins.insert(t.id(), b);
        self.is_alloc = false;
        Ok(())
    }

    /// ggml_backend_sched_get_tensor_backend: the user's choice, else the backend the last
    /// split gave `t`; None for tensors it did not see (and after `reset`).
    pub fn get_tensor_backend(&self, t: &Tensor) -> Option<Arc<dyn Backend>> {
        let b = self.pins.get(&t.id()).copied().or_else(|| self.plan.as_ref().and_then(|p| p.assignment.get(t)))?;
        Some(self.backends[b].clone())
    }

    /// The last split's assignment with set_tensor_backend's pins on top, as a value: for
    /// callers answering questions while a compute holds the scheduler.
    pub fn assignment(&self) -> Assignment {
        let mut a = self.plan.as_ref().map(|p| p.assignment.clone()).unwrap_or_default();
        for (&id, &b) in &self.pins {
            a.set_id(id, b, Cause::User);
        }
        a
    }

    /// Why the last split put `t` where it is.
    pub fn get_tensor_cause(&self, t: &Tensor) -> Option<Cause> {
        if self.pins.contains_key(&t.id()) {
            return Some(Cause::User);
        }
        self.plan.as_ref().and_then(|p| p.assignment.cause(t))
    }

    pub fn set_eval_callback(&mut self, callback: Option<EvalCallback>) {
        self.callback = callback;
    }

    /// ggml_backend_sched_reset: forget the assignments (set_tensor_backend's too) and the
    /// allocation; the next compute splits and allocates its graph afresh.
    pub fn reset(&mut self) {
        self.pins.clear();
        self.plan = None;
        self.is_alloc = false;
    }

    /// ggml_backend_sched_synchronize: wait for every backend.
    pub fn synchronize(&self) -> Result<()> {
        let mut first = Ok(());
        for b in &self.backends {
            // Wait for all even when one fails: callers free memory after this returns.
            let r = b.synchronize();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn check_size(&self, what: &str, graph: &Graph) -> Result<()> {
        let hs = hash_size(self.graph_size);
        let n = graph.n_nodes() + graph.n_leafs();
        if n > hs {
            return Err(Error::invalid(format!(
                "{what}: the graph has {} nodes and {} leafs, more than this scheduler's graphSize={} allows ({hs}); \
                 make the Scheduler with a larger graphSize",
                graph.n_nodes(),
                graph.n_leafs(),
                self.graph_size
            )));
        }
        Ok(())
    }

    /// Tensors of `graph` that an earlier allocation of this scheduler placed in its compute
    /// buffers lose that place: the new plan places them afresh (their memory is reused by
    /// other graphs; ggml rebuilds graphs for the same reason).
    fn release_own_places(&mut self, graph: &Graph) -> Result<()> {
        self.own_buffers.retain(|w| w.strong_count() > 0);
        let own: Vec<Arc<dyn Buffer>> = self.own_buffers.iter().filter_map(Weak::upgrade).collect();
        let mine = |t: &Tensor| -> Option<Arc<dyn Buffer>> {
            if t.is_view() {
                return None;
            }
            let s = t.storage()?;
            own.iter().any(|b| same_buffer(b, &s.buffer)).then_some(s.buffer)
        };
        let tensors: Vec<&Tensor> = graph.leafs().iter().chain(graph.nodes()).collect();
        for t in &tensors {
            if let Some(b) = mine(t) {
                b.state().check_idle("scheduler", &b.name())?;
            }
        }
        for t in tensors {
            if mine(t).is_some() {
                t.unbind();
            }
        }
        Ok(())
    }

    /// ggml_backend_sched_split_graph: passes 1-5 and the allocator's graph.
    fn split_graph(&mut self, graph: &Graph) -> Result<Plan> {
        let mut a = Assignment::default();
        for t in graph.nodes().iter().chain(graph.leafs()) {
            if let Some(&b) = self.pins.get(&t.id()) {
                a.set(t, b, Cause::User);
            }
        }
        let mut passes = Passes { backends: &self.backends, bufts: &self.bufts, a };
        passes.run(graph)?;
        let r = split::split(&mut passes, graph, self.n_copies, self.cur_copy)?;
        let a = passes.a;
        let alloc = graph_copy::build(graph, &r, &a, self.n_copies, self.cur_copy)?;

        self.n_splits = r.splits.len();
        self.split_info = debug::collect(graph, &r, &a, &self.backends);
        if self.debug > 0 {
            eprint!("{}", debug::describe(&self.split_info, self.debug > 1));
        }
        let splits = r
            .splits
            .iter()
            .map(|s| {
                let originals = graph.nodes()[s.i_start..s.i_end].to_vec();
                let twins = originals.iter().map(|n| r.shadows.of(n)).collect();
                let inputs = s
                    .inputs
                    .iter()
                    .map(|t| PlannedInput {
                        original: t.clone(),
                        from: r.shadows.of(t),
                        backend: a.get(t).unwrap_or(self.backends.len() - 1),
                        copies: r.copies.get(t, s.backend).cloned().unwrap_or_default(),
                    })
                    .collect();
                PlannedSplit { backend: s.backend, inputs, graph: Graph::from_parts(twins, Vec::new()), originals }
            })
            .collect();
        let key = (graph.nodes().iter().map(|t| t.id()).collect(), graph.leafs().iter().map(|t| t.id()).collect());
        Ok(Plan { assignment: a, splits, alloc, shadows: r.shadows.pairs, copy: self.cur_copy, key })
    }

    /// ggml_backend_sched_reserve: split `graph` and size the compute buffers for it without
    /// placing any tensor; later graphs of the same shape then allocate nothing new.
    pub fn reserve(&mut self, graph: &Graph) -> Result<()> {
        self.check_size("reserve", graph)?;
        self.release_own_places(graph)?;
        let plan = self.split_graph(graph)?;
        let (g, nid, lid) = (&plan.alloc.graph, &plan.alloc.node_ids, &plan.alloc.leaf_ids);
        self.galloc.reserve_n(g, Some(nid), Some(lid))?;
        self.note_buffers();
        self.prev_ids = (nid.clone(), lid.clone());
        self.reset();
        self.synchronize()
    }

    /// ggml_backend_sched_alloc_graph: split `graph` and place every tensor it needs.
    pub fn alloc_graph(&mut self, graph: &Graph) -> Result<()> {
        self.check_size("allocGraph", graph)?;
        self.is_alloc = false;
        self.release_own_places(graph)?;
        let plan = self.split_graph(graph)?;
        self.alloc_splits(&plan)?;
        self.plan = Some(plan);
        self.is_alloc = true;
        Ok(())
    }

    fn note_buffers(&mut self) {
        for b in self.galloc.buffers() {
            if !self.own_buffers.iter().any(|w| w.upgrade().is_some_and(|o| same_buffer(&o, &b))) {
                self.own_buffers.push(Arc::downgrade(&b));
            }
        }
    }

    /// ggml_backend_sched_alloc_splits: re-plan the buffers only when the graph no longer
    /// fits the last plan or a tensor moved to another buffer type.
    fn alloc_splits(&mut self, plan: &Plan) -> Result<()> {
        let AllocGraph { graph, node_ids, leaf_ids } = &plan.alloc;
        let moved = |now: &[usize], prev: &[usize]| {
            now.len() != prev.len()
                || now.iter().zip(prev).any(|(&a, &b)| a != b && !Arc::ptr_eq(&self.bufts[a], &self.bufts[b]))
        };
        let changed = moved(node_ids, &self.prev_ids.0) || moved(leaf_ids, &self.prev_ids.1);
        if changed || self.galloc.needs_realloc(graph) {
            // New buffers may replace the ones queued work still uses.
            self.synchronize()?;
            self.galloc.reserve_n(graph, Some(node_ids), Some(leaf_ids))?;
            self.note_buffers();
        }
        self.prev_ids = (node_ids.clone(), leaf_ids.clone());
        self.galloc.alloc_graph(graph)?;
        // The user's tensors take their twins' memory.
        for (orig, twin) in &plan.shadows {
            if orig.is_view() || orig.is_allocated() {
                continue;
            }
            if let Some(s) = twin.storage() {
                orig.bind(s.buffer, s.offset)?;
            }
        }
        Ok(())
    }

    fn is_allocated_for(&self, graph: &Graph) -> bool {
        self.is_alloc
            && self.plan.as_ref().is_some_and(|p| {
                p.key.0.len() == graph.n_nodes()
                    && p.key.1.len() == graph.n_leafs()
                    && p.key.0.iter().zip(graph.nodes()).all(|(&id, t)| id == t.id())
                    && p.key.1.iter().zip(graph.leafs()).all(|(&id, t)| id == t.id())
            })
    }

    /// Split and allocate `graph` unless it is the graph allocated last: what a compute
    /// does first. Callers that must hold the buffers before computing call this, then
    /// `busy_tensors`, then `graph_compute`.
    pub fn prepare(&mut self, graph: &Graph) -> Result<()> {
        if !self.is_allocated_for(graph) {
            self.alloc_graph(graph)?;
        }
        Ok(())
    }

    /// Every tensor a compute of the allocated graph touches (the user's, their twins and
    /// the split copies), so callers can hold their buffers while it runs.
    pub fn busy_tensors(&self) -> Vec<Tensor> {
        let Some(p) = &self.plan else { return Vec::new() };
        let g = &p.alloc.graph;
        let mut v: Vec<Tensor> = g.nodes().iter().chain(g.leafs()).cloned().collect();
        for (orig, _) in &p.shadows {
            v.push(orig.clone());
            v.extend(orig.srcs().iter().flatten().cloned());
        }
        for n in g.nodes() {
            v.extend(n.srcs().iter().flatten().cloned());
        }
        v
    }

    /// ggml_backend_sched_graph_compute_async: allocate if needed, then run the splits;
    /// work may still be queued on the backends when it returns (see `synchronize`).
    pub fn graph_compute_async(&mut self, graph: &Graph) -> Result<()> {
        self.prepare(graph)?;
        self.compute_splits(&Unobserved)
    }

    /// ggml_backend_sched_graph_compute: compute `graph` and wait for every backend.
    pub fn graph_compute(&mut self, graph: &Graph) -> Result<()> {
        self.graph_compute_observed(graph, &Unobserved)
    }

    /// graph_compute, telling `observer` how far it got (nodes of the split graphs) and
    /// stopping where it asks (an `Aborted` error), as Backend::graph_compute_observed.
    pub fn graph_compute_observed(&mut self, graph: &Graph, observer: &dyn ComputeObserver) -> Result<()> {
        let r = self.prepare(graph).and_then(|_| self.compute_splits(observer));
        let s = self.synchronize();
        r.and(s)
    }
}
