//! Events: a point in the device's one queue, kept as the submission index reached when the
//! event was recorded (an empty submission marks it); waiting for it polls the device up to
//! that index.

use std::any::Any;
use std::sync::{Arc, Mutex};

use super::context::GpuContext;
use crate::backend::Event;
use crate::Result;

pub struct WebGpuEvent {
    ctx: Arc<GpuContext>,
    /// None until recorded: synchronizing a fresh event returns at once, as in ggml.
    index: Mutex<Option<wgpu::SubmissionIndex>>,
}

impl WebGpuEvent {
    pub fn new(ctx: Arc<GpuContext>) -> WebGpuEvent {
        WebGpuEvent { ctx, index: Mutex::new(None) }
    }
    pub fn ctx(&self) -> &Arc<GpuContext> {
        &self.ctx
    }
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<wgpu::SubmissionIndex>> {
        self.index.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Mark the point after everything submitted so far.
    pub fn record(&self) -> Result<()> {
        let index = self.ctx.scoped("event record", || self.ctx.queue.submit(std::iter::empty()))?;
        *self.slot() = Some(index);
        Ok(())
    }
}

impl Event for WebGpuEvent {
    fn synchronize(&self) -> Result<()> {
        let index = self.slot().clone();
        match index {
            Some(i) => self.ctx.wait("event synchronize", Some(i)),
            None => Ok(()),
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
