//! One wgpu device and its queue, shared by everything made from one adapter (buffers,
//! pipelines, backends), with the error handling wgpu leaves to us: its default handler
//! panics on a validation error, so every piece of device work runs inside error scopes
//! and comes back as a `weft::Error`; errors that escape a scope and a lost device are
//! recorded and reported by the next operation.

use std::sync::{Arc, Mutex};

use wgpu::util::DeviceExt;

use super::pipeline::PipelineCache;
use crate::{Error, Result};

pub struct GpuContext {
    /// The weft device name ("WebGPU0").
    pub name: String,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub features: wgpu::Features,
    pub pipelines: PipelineCache,
    /// The MUL_MAT kernel shape forced on this device (ops/matmul.rs's `Shape` as a u8, 0:
    /// picked per node): `WEFT_WEBGPU_MATMUL` when the device opens, then a backend's
    /// `set_option("matmul", ...)`.
    pub matmul_shape: std::sync::atomic::AtomicU8,
    /// The most loop iterations one invocation may run: lavapipe's budget (`ops::loops`), None
    /// on devices without one.
    pub loop_limit: Option<u64>,
    /// The grid I-quants' tables (`ops::quant::iq_grid_words`), bound at
    /// `IQ_GRIDS_BINDING` for the pipelines that decode those types.
    pub iq_grids: wgpu::Buffer,
    /// The grid quantizers' search tables (`ops::quant::iq_search_words`, about 11 MiB),
    /// made on the first CPY into a grid I-quant and bound at `IQ_SEARCH_BINDING` for it.
    iq_search: std::sync::OnceLock<wgpu::Buffer>,
    /// Why the device was lost, once it has been.
    lost: Arc<Mutex<Option<String>>>,
    /// An error no scope caught (work on a thread without a scope), kept for the next call.
    uncaptured: Arc<Mutex<Option<String>>>,
}

/// `WEFT_WEBGPU_DISABLE=f16,subgroup`: optional features not to request.
fn disabled_features() -> wgpu::Features {
    let list = std::env::var("WEFT_WEBGPU_DISABLE").unwrap_or_default();
    list.split(',').fold(wgpu::Features::empty(), |f, name| match name.trim() {
        "f16" => f | wgpu::Features::SHADER_F16,
        "subgroup" => f | wgpu::Features::SUBGROUP,
        _ => f,
    })
}

/// Mesa's lavapipe, whose adapter and driver are named llvmpipe.
fn is_llvmpipe(info: &wgpu::AdapterInfo) -> bool {
    [&info.name, &info.driver].iter().any(|s| s.to_ascii_lowercase().contains("llvmpipe"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The guarded values are plain strings: a panic elsewhere cannot leave them torn.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl GpuContext {
    /// The grid quantizers' search tables, uploaded on first use.
    pub fn iq_search(&self) -> &wgpu::Buffer {
        self.iq_search.get_or_init(|| {
            let words = super::ops::quant::iq_search_words();
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("weft iq search tables"),
                contents: bytemuck::cast_slice(&words),
                usage: wgpu::BufferUsages::STORAGE,
            })
        })
    }

    /// Open a device on `adapter` with the adapter's own limits (wgpu's defaults cap
    /// buffers at 256 MiB) and SHADER_F16 and SUBGROUP where the adapter has them, less
    /// those `WEFT_WEBGPU_DISABLE` masks (so the fallback kernels can be tested anywhere).
    pub fn open(adapter: &wgpu::Adapter, name: String) -> Result<GpuContext> {
        let info = adapter.get_info();
        // TIMESTAMP_QUERY: GPU time of a graph (the backend's last_compute_seconds).
        let wanted = wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY;
        let features = adapter.features() & wanted & !disabled_features();
        let limits = adapter.limits();
        let desc = wgpu::DeviceDescriptor {
            label: Some("weft"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc))
            .map_err(|e| Error::backend(format!("WebGPU: cannot open a device on '{}': {e}", info.name)))?;
        let lost = Arc::new(Mutex::new(None));
        let uncaptured = Arc::new(Mutex::new(None));
        let l = lost.clone();
        device.set_device_lost_callback(move |reason, msg| {
            *lock(&l) = Some(format!("{reason:?}: {msg}"));
        });
        let u = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            lock(&u).get_or_insert_with(|| e.to_string());
        }));
        let loop_limit = is_llvmpipe(&info).then_some(super::ops::loops::LLVMPIPE_LOOP_LIMIT);
        let words = super::ops::quant::iq_grid_words();
        let iq_grids = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("weft iq grids"),
            contents: &words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>(),
            usage: wgpu::BufferUsages::STORAGE,
        });
        Ok(GpuContext {
            name,
            device,
            queue,
            info,
            limits,
            features,
            pipelines: PipelineCache::default(),
            loop_limit,
            iq_grids,
            iq_search: std::sync::OnceLock::new(),
            matmul_shape: std::sync::atomic::AtomicU8::new(
                std::env::var("WEFT_WEBGPU_MATMUL")
                    .ok()
                    .and_then(|v| super::ops::matmul::Shape::parse(&v))
                    .map_or(0, |s| s as u8),
            ),
            lost,
            uncaptured,
        })
    }

    /// Err once the device is lost, or when an error escaped every scope since the last call.
    pub fn check(&self) -> Result<()> {
        if let Some(why) = lock(&self.lost).as_ref() {
            return Err(Error::backend(format!("{}: device '{}' was lost ({why})", self.name, self.info.name)));
        }
        if let Some(msg) = lock(&self.uncaptured).take() {
            return Err(Error::backend(format!("{}: {msg}", self.name)));
        }
        Ok(())
    }

    /// Run device work with validation, out-of-memory and internal errors captured: the
    /// first one becomes an Error naming `what`. Scopes are per thread in wgpu, so work on
    /// other threads cannot leak into this one's.
    pub fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        self.check()?;
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        // Pop innermost first; block_on returns at once (the result is already known).
        let errors =
            [pollster::block_on(validation.pop()), pollster::block_on(oom.pop()), pollster::block_on(internal.pop())];
        match errors.into_iter().flatten().next() {
            Some(wgpu::Error::OutOfMemory { .. }) => {
                Err(Error::oom(format!("{}: {what}: out of device memory", self.name)))
            }
            Some(e) => Err(Error::backend(format!("{}: {what}: {e}", self.name))),
            None => self.check().map(|()| out),
        }
    }

    /// Record commands into a fresh encoder and submit them, all inside error scopes.
    /// With `wait`, block until the device has run them, so results are visible and
    /// failures (a lost device) surface here; otherwise later submissions and reads are
    /// ordered after them by the queue anyway.
    pub fn submit(&self, what: &str, wait: bool, record: impl FnOnce(&mut wgpu::CommandEncoder)) -> Result<()> {
        let commands = self.scoped(what, || {
            let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
            record(&mut encoder);
            encoder.finish()
        })?;
        let index = self.scoped(what, || self.queue.submit([commands]))?;
        if wait {
            self.wait(what, Some(index))?;
        }
        Ok(())
    }

    /// Block until `index` (or everything submitted so far) has completed.
    pub fn wait(&self, what: &str, index: Option<wgpu::SubmissionIndex>) -> Result<()> {
        self.device
            .poll(wgpu::PollType::Wait { submission_index: index, timeout: None })
            .map_err(|e| Error::backend(format!("{}: {what}: waiting for the device failed: {e}", self.name)))?;
        self.check()
    }

    /// Two contexts are the same device when they are the same allocation.
    pub fn same(a: &Arc<GpuContext>, b: &Arc<GpuContext>) -> bool {
        Arc::ptr_eq(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::super::buffer::WebGpuBuffer;
    use super::super::device::test_context;
    use super::super::pipeline::PipelineKey;
    use crate::ErrorKind;

    #[test]
    fn validation_errors_become_errors_not_panics() {
        let Some(ctx) = test_context() else {
            eprintln!("note: no WebGPU device; skipping");
            return;
        };
        // A shader compiled for an entry point it does not have.
        let key = PipelineKey::new("mul_mat", "no_such_entry").define("WG_SIZE", 64);
        for _ in 0..2 {
            let e = ctx.pipeline(&key).expect_err("bad entry point");
            assert_eq!(e.kind, ErrorKind::Backend, "{e}");
            assert!(e.message.contains("mul_mat:no_such_entry"), "{e}");
        }
        // A write at an offset wgpu refuses (not a multiple of 4), straight to the queue.
        let buf = WebGpuBuffer::new(ctx.clone(), 16).expect("buffer");
        let e = ctx.scoped("raw write", || ctx.queue.write_buffer(buf.raw(), 1, &[0; 4])).expect_err("unaligned");
        assert_eq!(e.kind, ErrorKind::Backend, "{e}");
        // The device is still usable afterwards.
        ctx.check().expect("clean after captured errors");
        ctx.pipeline(&PipelineKey::new("mul_mat", "main").define("WG_SIZE", 64)).expect("good pipeline");
    }
}
