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

/// One scheduled compute, in the shape of an async job: `run` on libuv's pool, then on the
/// JS thread `resolved` or `rejection`, then `settle`.
pub struct SchedJob {
    pub sched: Arc<Mutex<Scheduler>>,
    pub graph: weft::Graph,
    pub busy: Option<BusyGuard>,
    pub shared: Arc<Shared>,
    pub running: Arc<Running>,
}

impl SchedJob {
    fn run(&mut self) -> weft::Result<()> {
        let mut s = self.sched.lock().unwrap_or_else(|e| e.into_inner());
        s.graph_compute(&self.graph)
    }
    /// The settled value; a throw recorded from the eval callback still rejects.
    fn resolved(&mut self) -> napi::Result<()> {
        self.shared.take_thrown().map_or(Ok(()), Err)
    }
    /// What the eval callback threw wins over the engine error it caused.
    fn rejection(&mut self, env: &Env, e: weft::Error) -> napi::Error {
        self.shared.take_thrown().unwrap_or_else(|| reject(env, e))
    }
    /// Release the buffers and the scheduler.
    fn settle(&mut self) {
        self.busy = None;
        self.running.stop();
    }
}

/// The Promise of a SchedJob, or of the error that kept it from being made (a busy
/// scheduler, an unsupported node): every failure rejects.
pub struct SchedComputeTask(pub Option<std::result::Result<SchedJob, weft::Error>>);

impl Task for SchedComputeTask {
    type Output = Option<weft::Result<()>>;
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match &mut self.0 {
            Some(Ok(job)) => Some(catch("compute", || job.run())),
            _ => None,
        })
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<()> {
        let result = match (&mut self.0, output) {
            (Some(Ok(job)), Some(Ok(()))) => job.resolved(),
            (Some(Ok(job)), Some(Err(e))) => Err(job.rejection(&env, e)),
            (Some(Err(e)), _) => Err(reject(&env, e.clone())),
            _ => Err(reject(&env, weft::Error::backend("compute: internal error: no job"))),
        };
        if let Some(Ok(job)) = &mut self.0 {
            job.settle();
        }
        result
    }

    fn reject(&mut self, _env: Env, err: napi::Error) -> napi::Result<()> {
        if let Some(Ok(job)) = &mut self.0 {
            job.settle();
        }
        Err(err)
    }
}
