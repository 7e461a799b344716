//! A scheduled compute off the JS thread (AsyncTask on libuv's pool). The graph is split and
//! allocated, and every buffer it touches held, on the JS thread when the Promise is made;
//! the splits run here; the buffers are released when the Promise settles. Failures found
//! before the run (a busy scheduler, an unsupported node) reject the Promise too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use napi::{Env, Task};
use weft::backend::sched::{Assignment, Scheduler, SplitInfo};
use weft::backend::BusyGuard;

use crate::sched_callback::Shared;
use crate::task::{catch, reject};

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

pub enum SchedComputeTask {
    /// Refused before running (the Promise rejects with it).
    Failed(Option<weft::Error>),
    Run(Box<Job>),
}

pub struct Job {
    pub sched: Arc<Mutex<Scheduler>>,
    pub graph: weft::Graph,
    pub busy: Option<BusyGuard>,
    pub shared: Arc<Shared>,
    pub running: Arc<Running>,
}

impl SchedComputeTask {
    /// Release what the run held; a thrown callback error wins over the engine's.
    fn finish(&mut self) -> Option<napi::Error> {
        match self {
            SchedComputeTask::Failed(_) => None,
            SchedComputeTask::Run(job) => {
                job.busy = None;
                job.running.stop();
                job.shared.take_thrown()
            }
        }
    }
}

impl Task for SchedComputeTask {
    type Output = weft::Result<()>;
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match self {
            SchedComputeTask::Failed(e) => Err(e.take().unwrap_or_else(|| weft::Error::backend("compute failed"))),
            SchedComputeTask::Run(job) => catch("compute", || {
                let mut s = job.sched.lock().unwrap_or_else(|e| e.into_inner());
                s.graph_compute(&job.graph)
            }),
        })
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<()> {
        if let Some(thrown) = self.finish() {
            return Err(thrown);
        }
        output.map_err(|e| reject(&env, e))
    }

    fn reject(&mut self, _env: Env, err: napi::Error) -> napi::Result<()> {
        self.finish();
        Err(err)
    }
}
