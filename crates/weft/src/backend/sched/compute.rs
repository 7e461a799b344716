//! ggml_backend_sched_compute_splits: run the splits in order, each after copying its
//! inputs into its backend; with an eval callback, node range by node range.
//!
//! With n_copies > 1 the copies rotate between computes, and events keep a copy slot from
//! being overwritten while the split that reads it may still be running.

use std::sync::Arc;

use super::{PlannedInput, PlannedSplit, Scheduler};
use crate::backend::tensor_io::tensor_copy_internal;
use crate::backend::{between_nodes, Backend, ComputeObserver, Event, ReadPermit};
use crate::tensor::flags;
use crate::Result;

/// Wait for `event`, or for the whole backend where there is none.
fn wait_host(event: Option<&Arc<dyn Event>>, backend: &dyn Backend) -> Result<()> {
    match event {
        Some(e) => e.synchronize(),
        None => backend.synchronize(),
    }
}

impl Scheduler {
    pub(crate) fn compute_splits(&mut self, observer: &dyn ComputeObserver) -> Result<()> {
        let Some(plan) = self.plan.take() else {
            return Err(crate::Error::invalid("compute: the scheduler has no allocated graph"));
        };
        // The callback runs outside the borrow of the plan; both are put back whatever happens.
        let mut callback = self.callback.take();
        let r = self.run_splits(&plan.splits, plan.copy, &mut callback, observer);
        self.callback = callback;
        self.plan = Some(plan);
        self.cur_copy = (self.cur_copy + 1) % self.n_copies;
        r
    }

    fn event(&self, backend: usize, copy: usize) -> Option<&Arc<dyn Event>> {
        self.events[backend].get(copy).and_then(|e| e.as_ref())
    }

    fn run_splits(
        &self,
        splits: &[PlannedSplit],
        copy: usize,
        callback: &mut Option<super::EvalCallback>,
        observer: &dyn ComputeObserver,
    ) -> Result<()> {
        let total: usize = splits.iter().map(|s| s.graph.n_nodes()).sum();
        let mut done = 0;
        for split in splits {
            let backend = self.backends[split.backend].as_ref();
            if observer.wants_steps() {
                between_nodes(observer, done, total)?;
            }
            for input in &split.inputs {
                self.copy_input(split, input, copy)?;
            }
            let go_on = match callback.as_mut() {
                None if observer.wants_steps() => {
                    // Node by node inside the split, as the backend reports them.
                    let within = WithinSplit { outer: observer, base: done, total };
                    backend.graph_compute_observed(&split.graph, &within)?;
                    true
                }
                None => {
                    backend.graph_compute_async(&split.graph)?;
                    true
                }
                Some(cb) => self.run_observed(split, cb)?,
            };
            if !split.inputs.is_empty() {
                if let Some(e) = self.event(split.backend, copy) {
                    backend.event_record(e.as_ref())?;
                }
            }
            done += split.graph.n_nodes();
            if !go_on {
                // ggml only leaves the current split; stopping means stopping.
                break;
            }
        }
        observer.progress(done, total);
        Ok(())
    }

    fn copy_input(&self, split: &PlannedSplit, input: &PlannedInput, copy: usize) -> Result<()> {
        let split_backend = self.backends[split.backend].as_ref();
        let input_backend = self.backends[input.backend].as_ref();
        let Some(dst) = input.copies.get(copy) else {
            return Err(crate::Error::backend(format!(
                "scheduler: internal error: input '{}' has no copy slot {copy}",
                input.original.label()
            )));
        };
        let event = self.event(split.backend, copy);
        if input.original.has_flag(flags::INPUT) {
            // The user may write the input again as soon as this returns: copy it now.
            wait_host(event, split_backend)?;
            return tensor_copy_internal(&input.from, dst);
        }
        // The slot may still be read by this copy's previous use.
        match event {
            Some(e) => split_backend.event_wait(e.as_ref())?,
            None => split_backend.synchronize()?,
        }
        if !split_backend.cpy_tensor_async(input_backend, &input.from, dst)? {
            input_backend.synchronize()?;
            wait_host(event, split_backend)?;
            tensor_copy_internal(&input.from, dst)?;
        }
        Ok(())
    }

    /// The split in node ranges, each ending at a node the callback asked to see; returns
    /// false when the callback said stop.
    fn run_observed(&self, split: &PlannedSplit, cb: &mut super::EvalCallback) -> Result<bool> {
        let backend = self.backends[split.backend].as_ref();
        let n = split.originals.len();
        let mut j0 = 0;
        while j0 < n {
            let mut j1 = j0;
            let mut need = cb(&split.originals[j1], true)?;
            while !need && j1 + 1 < n {
                j1 += 1;
                need = cb(&split.originals[j1], true)?;
            }
            backend.graph_compute_async(&split.graph.view(j0, j1 + 1)?)?;
            // Every backend, not only this one (as ggml does): nothing may run while the
            // caller reads.
            self.synchronize()?;
            if need {
                let t = &split.originals[j1];
                let _permit = ReadPermit::open(std::iter::once(t).chain(t.srcs().iter().flatten()));
                if !cb(t, false)? {
                    return Ok(false);
                }
            }
            j0 = j1 + 1;
        }
        Ok(true)
    }
}

/// A split's observer: its nodes counted after the splits before it, its aborts the
/// caller's.
struct WithinSplit<'a> {
    outer: &'a dyn ComputeObserver,
    base: usize,
    total: usize,
}

impl ComputeObserver for WithinSplit<'_> {
    fn progress(&self, done: usize, _split_total: usize) {
        self.outer.progress(self.base + done, self.total);
    }
    fn should_abort(&self) -> bool {
        self.outer.should_abort()
    }
}
