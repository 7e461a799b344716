//! The backend registry: every backend kind lists its devices; backends start from a
//! device name with optional parameters ("CPU", "CPU:n_threads=2", "WebGPU0").

use std::sync::{Arc, OnceLock};

use super::cpu::{CpuDevice, CpuRegistry};
use super::{Backend, Device};
use crate::{Error, Result};

/// ggml_backend_reg: one kind of backend and the devices it found.
pub trait Registry: Send + Sync {
    fn name(&self) -> String;
    fn devices(&self) -> Vec<Arc<dyn Device>>;
}

/// Every registry weft was built with, CPU first. Device discovery runs once.
pub fn registries() -> &'static [Arc<dyn Registry>] {
    static REGS: OnceLock<Vec<Arc<dyn Registry>>> = OnceLock::new();
    REGS.get_or_init(|| {
        #[allow(unused_mut)]
        let mut regs: Vec<Arc<dyn Registry>> = vec![Arc::new(CpuRegistry)];
        #[cfg(feature = "webgpu")]
        regs.push(Arc::new(super::webgpu::WebGpuRegistry::discover()));
        regs
    })
}

/// All devices of all registries (ggml_backend_dev_count / ggml_backend_dev_get).
pub fn devices() -> Vec<Arc<dyn Device>> {
    registries().iter().flat_map(|r| r.devices()).collect()
}

/// ggml_backend_dev_by_name (case-insensitive, as ggml compares).
pub fn device_by_name(name: &str) -> Option<Arc<dyn Device>> {
    devices().into_iter().find(|d| d.name().eq_ignore_ascii_case(name))
}

/// ggml_backend_init_by_name: "NAME" or "NAME:params".
pub fn init_backend(spec: &str) -> Result<Arc<dyn Backend>> {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    // The CPU needs no discovery: starting it does not load the GPU drivers (Vulkan's
    // driver alone adds ~90 MB of resident memory to a process that never uses it).
    if name.trim().eq_ignore_ascii_case("CPU") {
        return CpuDevice::get().init_backend(params);
    }
    let dev = device_by_name(name.trim()).ok_or_else(|| {
        let names: Vec<String> = devices().iter().map(|d| d.name()).collect();
        Error::invalid(format!("no backend device named '{}' (devices: {})", name.trim(), names.join(", ")))
    })?;
    dev.init_backend(params)
}
