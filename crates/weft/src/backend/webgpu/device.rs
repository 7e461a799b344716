//! Adapters as weft devices: discovery over every backend wgpu offers, and the `Device`
//! each usable adapter becomes.

use std::sync::Arc;

use super::backend::WebGpuBackend;
use super::buffer::WebGpuBufferType;
use super::context::GpuContext;
use super::dispatch;
use super::event::WebGpuEvent;
use crate::backend::{Backend, BufferType, Device, DeviceType, Event};
use crate::op::OpKind;
use crate::tensor::Tensor;
use crate::{Error, Result};

#[derive(Clone)]
pub struct WebGpuDevice {
    ctx: Arc<GpuContext>,
    /// One buffer type object per device, as ggml has: the scheduler and the graph
    /// allocator tell buffer types apart by identity.
    buft: Arc<WebGpuBufferType>,
}

/// Native APIs first, so WebGPU0 is the best adapter when one GPU shows up through several.
fn backend_rank(b: wgpu::Backend) -> u8 {
    match b {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        wgpu::Backend::Gl => 1,
        _ => 2,
    }
}

fn backend_name(b: wgpu::Backend) -> &'static str {
    match b {
        wgpu::Backend::Vulkan => "Vulkan",
        wgpu::Backend::Metal => "Metal",
        wgpu::Backend::Dx12 => "Dx12",
        wgpu::Backend::Gl => "Gl",
        wgpu::Backend::BrowserWebGpu => "BrowserWebGpu",
        wgpu::Backend::Noop => "Noop",
    }
}

fn device_type_name(t: wgpu::DeviceType) -> &'static str {
    match t {
        wgpu::DeviceType::DiscreteGpu => "discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "integrated GPU",
        wgpu::DeviceType::VirtualGpu => "virtual GPU",
        wgpu::DeviceType::Cpu => "CPU (software)",
        wgpu::DeviceType::Other => "other",
    }
}

/// Every adapter that can run compute shaders, opened as a device and named WebGPU0,
/// WebGPU1, ... Adapters that fail to open are skipped; none at all is an empty list. A GL
/// adapter of a GPU already listed through a native API (same name, or the name GL gives
/// it with a suffix) is left out, as ggml lists one device per GPU: it would be the same
/// chip twice, and wgpu's GL context lock panics when it waits over a second (seen with
/// tests on several threads). `WGPU_BACKEND=gl` still gives the GL adapter alone.
pub fn discover() -> Vec<WebGpuDevice> {
    let desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    let backends = desc.backends;
    let instance = wgpu::Instance::new(desc);
    let mut adapters = pollster::block_on(instance.enumerate_adapters(backends));
    adapters.sort_by_key(|a| backend_rank(a.get_info().backend));
    let mut devices = Vec::new();
    // Names of the adapters listed through a native API.
    let mut native: Vec<String> = Vec::new();
    for adapter in adapters {
        let caps = adapter.get_downlevel_capabilities();
        let info = adapter.get_info();
        if !caps.flags.contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
            || (info.backend == wgpu::Backend::Gl && native.iter().any(|n: &String| info.name.starts_with(n.as_str())))
        {
            continue;
        }
        if backend_rank(info.backend) == 0 {
            native.push(info.name.clone());
        }
        if let Ok(ctx) = GpuContext::open(&adapter, format!("WebGPU{}", devices.len())) {
            let ctx = Arc::new(ctx);
            devices.push(WebGpuDevice { buft: Arc::new(WebGpuBufferType::new(ctx.clone())), ctx });
        }
    }
    devices
}

impl WebGpuDevice {
    pub fn ctx(&self) -> &Arc<GpuContext> {
        &self.ctx
    }
}

impl Device for WebGpuDevice {
    fn name(&self) -> String {
        self.ctx.name.clone()
    }
    fn description(&self) -> String {
        let i = &self.ctx.info;
        format!("{} ({}, {})", i.name, backend_name(i.backend), device_type_name(i.device_type))
    }
    /// wgpu cannot query free memory; like ggml-webgpu, report the largest buffer.
    fn memory(&self) -> (usize, usize) {
        let max = usize::try_from(self.ctx.limits.max_buffer_size).unwrap_or(usize::MAX);
        (max, max)
    }
    /// A GPU API device even when the adapter is a software one (lavapipe): its memory is
    /// not host memory weft can address.
    fn device_type(&self) -> DeviceType {
        DeviceType::Gpu
    }
    fn init_backend(&self, params: &str) -> Result<Arc<dyn Backend>> {
        if !params.trim().is_empty() {
            return Err(Error::invalid(format!("{}: takes no parameters, got '{params}'", self.ctx.name)));
        }
        self.ctx.check()?;
        Ok(Arc::new(WebGpuBackend::new(self.clone())))
    }
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        self.buft.clone()
    }
    fn supports_op(&self, op: &Tensor) -> bool {
        dispatch::supports(op, &self.ctx)
    }
    /// ggml-vulkan's rule: host weights are worth copying over for a batch of 32 or more.
    fn offload_op(&self, op: &Tensor) -> bool {
        const MIN_BATCH: i64 = 32;
        let kind = op.kind();
        (op.ne()[1] >= MIN_BATCH && kind != OpKind::GetRows) || (op.ne()[2] >= MIN_BATCH && kind == OpKind::MulMatId)
    }
    fn event_new(&self) -> Result<Option<Arc<dyn Event>>> {
        Ok(Some(Arc::new(WebGpuEvent::new(self.ctx.clone()))))
    }
    fn supports_buft(&self, buft: &dyn BufferType) -> bool {
        buft.as_any().downcast_ref::<WebGpuBufferType>().is_some_and(|b| GpuContext::same(b.ctx(), &self.ctx))
    }
    fn properties(&self) -> Vec<(String, String)> {
        let (i, l) = (&self.ctx.info, &self.ctx.limits);
        let driver = format!("{} {}", i.driver, i.driver_info).trim().to_string();
        let f16 = self.ctx.features.contains(wgpu::Features::SHADER_F16);
        [
            ("backend", backend_name(i.backend).to_string()),
            ("device_type", device_type_name(i.device_type).to_string()),
            ("adapter", i.name.clone()),
            ("driver", driver),
            ("vendor_id", format!("{:#06x}", i.vendor)),
            ("device_id", format!("{:#06x}", i.device)),
            ("shader_f16", f16.to_string()),
            ("subgroup", self.ctx.features.contains(wgpu::Features::SUBGROUP).to_string()),
            ("timestamp_query", self.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY).to_string()),
            ("max_buffer_size", l.max_buffer_size.to_string()),
            ("max_storage_buffer_binding_size", l.max_storage_buffer_binding_size.to_string()),
            ("min_storage_buffer_offset_alignment", l.min_storage_buffer_offset_alignment.to_string()),
            ("max_compute_workgroups_per_dimension", l.max_compute_workgroups_per_dimension.to_string()),
            ("max_compute_invocations_per_workgroup", l.max_compute_invocations_per_workgroup.to_string()),
            ("max_compute_workgroup_storage_size", l.max_compute_workgroup_storage_size.to_string()),
            ("max_storage_buffers_per_shader_stage", l.max_storage_buffers_per_shader_stage.to_string()),
            // lavapipe's loop budget per invocation (ops/loops.rs): nodes past it are refused.
            ("loop_limit", self.ctx.loop_limit.map_or_else(|| "none".to_string(), |n| n.to_string())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// The first adapter's context, for unit tests that need a device (None without one).
#[cfg(test)]
pub fn test_context() -> Option<Arc<GpuContext>> {
    static CTX: std::sync::OnceLock<Option<Arc<GpuContext>>> = std::sync::OnceLock::new();
    CTX.get_or_init(|| discover().into_iter().next().map(|d| d.ctx)).clone()
}
