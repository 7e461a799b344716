//! Watching a graph compute from between its nodes: ggml's abort callback
//! (`ggml_backend_cpu_set_abort_callback`, asked by the CPU backend before each node), given
//! to every backend and joined by progress reports. The binding drives a JS AbortSignal and
//! an `onProgress` callback through it.

use crate::{Error, Result};

/// What a caller learns and decides while a graph computes.
pub trait ComputeObserver: Sync {
    /// `done` of the graph's `total` nodes are computed: 0 before the first, `total` at the
    /// end. Nodes without work (views, leaves, empty tensors) count as done.
    fn progress(&self, _done: usize, _total: usize) {}
    /// Asked before each node (or batch of nodes): true stops the compute there, and
    /// `graph_compute_observed` fails with `ErrorKind::Aborted`.
    fn should_abort(&self) -> bool {
        false
    }
    /// False when the observer neither reports nor aborts: a backend that batches nodes
    /// (WebGPU submits a whole graph at once) then keeps its batch whole.
    fn wants_steps(&self) -> bool {
        true
    }
}

/// The observer of a plain `graph_compute`: nothing to report, never stops.
pub struct Unobserved;

impl ComputeObserver for Unobserved {
    fn wants_steps(&self) -> bool {
        false
    }
}

/// Between nodes: report `done` of `total` and stop if the observer asks.
pub fn between_nodes(observer: &dyn ComputeObserver, done: usize, total: usize) -> Result<()> {
    observer.progress(done, total);
    if observer.should_abort() {
        return Err(Error::aborted(format!("compute aborted after {done} of {total} nodes")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    struct Log {
        seen: Mutex<Vec<(usize, usize)>>,
        stop: AtomicBool,
    }

    impl ComputeObserver for Log {
        fn progress(&self, done: usize, total: usize) {
            self.seen.lock().unwrap().push((done, total));
        }
        fn should_abort(&self) -> bool {
            self.stop.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn between_nodes_reports_then_stops_when_asked() {
        let log = Log { seen: Mutex::new(Vec::new()), stop: AtomicBool::new(false) };
        between_nodes(&log, 0, 3).unwrap();
        log.stop.store(true, Ordering::Relaxed);
        let e = between_nodes(&log, 1, 3).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Aborted);
        assert_eq!(e.message, "compute aborted after 1 of 3 nodes");
        assert_eq!(*log.seen.lock().unwrap(), vec![(0, 3), (1, 3)]);
        assert!(!Unobserved.wants_steps() && !Unobserved.should_abort());
    }
}
