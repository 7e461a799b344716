//! A scheduled compute off the JS thread, as an async Job (task.rs). The graph is split and
//! allocated, and every buffer it touches held, on the JS thread when the Promise is made;
//! the splits run on libuv's pool; the buffers are released when the Promise settles.
//! Failures found before the run (a busy scheduler, an unsupported node) reject the Promise.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use napi::Env;
use weft::backend::sched::{Assignment, Scheduler, SplitInfo};
use weft::backend::BusyGuard;

use crate::sched_callback::Shared;
use crate::task::Job;
use crate::watch::ComputeWatch;

/// What queries see while a compute holds the scheduler: its state when the compute began.
pub struct Snapshot {
    pub assignment: Assignment,
    pub n_splits: usize,
    pub splits: Vec<SplitInfo>,
    /// Compute buffer bytes per backend.
    pub sizes: Vec<usize>,
}

impl Snapshot {
    pub fn of(s: &Scheduler) -> Snapshot {
        Snapshot {
            assignment: s.assignment(),
            n_splits: s.n_splits(),
            splits: s.splits().to_vec(),
            sizes: s.backends().iter().map(|b| s.buffer_size(b).unwrap_or(0)).collect(),
        }
    }
}

/// A scheduler's state as its JS object and its running compute share it.
#[derive(Default)]
pub struct Running {
    pub flag: AtomicBool,
    pub snapshot: Mutex<Option<Arc<Snapshot>>>,
}

impl Running {
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
    /// Claim the scheduler for one compute; false if one is running.
    pub fn start(&self) -> bool {
        !self.flag.swap(true, Ordering::AcqRel)
    }
    pub fn stop(&self) {
        *self.snapshot.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.flag.store(false, Ordering::Release);
    }
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        self.snapshot.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// One scheduled compute (scheduler.compute(graph, options)): split, allocated and its
/// buffers held on the JS thread when the Promise is made, run on libuv's pool.
pub struct SchedJob {
    pub sched: Arc<Mutex<Scheduler>>,
    pub graph: weft::Graph,
    pub busy: Option<BusyGuard>,
    pub shared: Arc<Shared>,
    pub running: Arc<Running>,
    pub watch: ComputeWatch,
}

impl Job for SchedJob {
    type Output = ();
    type JsValue = ();
    const WHAT: &'static str = "compute";

    fn run(&mut self) -> weft::Result<()> {
        let mut s = self.sched.lock().unwrap_or_else(|e| e.into_inner());
        s.graph_compute_observed(&self.graph, &self.watch)
    }

    /// A throw recorded from the eval callback or onProgress still rejects.
    fn to_js(&mut self, _env: &Env, _output: ()) -> napi::Result<()> {
        match self.shared.take_thrown() {
            Some(e) => Err(e),
            None => self.watch.take_thrown().map_or(Ok(()), Err),
        }
    }

    /// What the eval callback threw wins over the engine error it caused.
    fn rejection(&mut self, env: &Env, e: weft::Error) -> napi::Error {
        match self.shared.take_thrown() {
            Some(thrown) => thrown,
            None => self.watch.rejection(env, e),
        }
    }

    /// Release the buffers and the scheduler.
    fn settle(&mut self, env: &Env) {
        self.busy = None;
        self.running.stop();
        self.watch.settle(env);
    }
}
